/* SPDX-License-Identifier: MIT */
/* Detached worker threads that wait for the next task when theirs is done.
 * A thread per exec (two, with the reader) cost a measurable part of a
 * short command's round trip: an 8 MiB stack mapped, its pages faulted in
 * again (glibc gives a cached stack back with MADV_DONTNEED), a clone.
 * Up to THREADS_IDLE_MAX threads wait at once, each for THREADS_IDLE_S
 * seconds; past that a task gets a new thread as before. */
#include "threads.h"

#include <errno.h>
#include <pthread.h>
#include <stdlib.h>
#include <time.h>

#define THREADS_IDLE_MAX 16
#define THREADS_IDLE_S 30

typedef struct task {
	void *(*fn)(void *);
	void *arg;
} task;

static pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t cv = PTHREAD_COND_INITIALIZER;
static task queue[THREADS_IDLE_MAX]; /* handed to idle threads, not taken yet */
static int queued, idle;

static void *loop(void *arg)
{
	task t = *(task *)arg;
	free(arg);
	for (;;) {
		t.fn(t.arg);
		pthread_mutex_lock(&mu);
		if (idle >= THREADS_IDLE_MAX) {
			pthread_mutex_unlock(&mu);
			return NULL;
		}
		idle++;
		struct timespec until;
		clock_gettime(CLOCK_REALTIME, &until);
		until.tv_sec += THREADS_IDLE_S;
		int e = 0;
		while (!queued && e != ETIMEDOUT)
			e = pthread_cond_timedwait(&cv, &mu, &until);
		idle--;
		if (!queued) { /* waited long enough */
			pthread_mutex_unlock(&mu);
			return NULL;
		}
		t = queue[--queued];
		pthread_mutex_unlock(&mu);
	}
}

int aj_thread_start(void *(*fn)(void *), void *arg)
{
	pthread_mutex_lock(&mu);
	if (idle > queued) { /* one of them takes it */
		queue[queued++] = (task){fn, arg};
		pthread_mutex_unlock(&mu);
		/* signalled after the unlock: a thread woken while mu is held
		 * goes back to sleep on it at once, and is woken again by the
		 * unlock (two wake-ups and four switches for one) */
		pthread_cond_signal(&cv);
		return 0;
	}
	pthread_mutex_unlock(&mu);
	task *t = malloc(sizeof(*t));
	if (!t)
		return -ENOMEM;
	*t = (task){fn, arg};
	pthread_attr_t attr;
	pthread_attr_init(&attr);
	pthread_attr_setdetachstate(&attr, PTHREAD_CREATE_DETACHED);
	pthread_t th;
	int e = pthread_create(&th, &attr, loop, t);
	pthread_attr_destroy(&attr);
	if (e)
		free(t);
	return -e;
}

/* ---- the count of worker threads, for the shutdown ---- */

static pthread_mutex_t jobs_mu = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t jobs_cv = PTHREAD_COND_INITIALIZER;
static int n_workers; /* running */

void aj_worker_enter(void)
{
	pthread_mutex_lock(&jobs_mu);
	n_workers++;
	pthread_mutex_unlock(&jobs_mu);
}

void aj_worker_leave(void)
{
	pthread_mutex_lock(&jobs_mu);
	n_workers--;
	pthread_cond_broadcast(&jobs_cv);
	pthread_mutex_unlock(&jobs_mu);
}

void aj_exec_shutdown(void)
{
	struct timespec until;
	clock_gettime(CLOCK_REALTIME, &until);
	until.tv_sec += 10;
	pthread_mutex_lock(&jobs_mu);
	while (n_workers > 0 && pthread_cond_timedwait(&jobs_cv, &jobs_mu, &until) == 0)
		;
	pthread_mutex_unlock(&jobs_mu);
}
