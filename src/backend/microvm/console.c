/* SPDX-License-Identifier: MIT */
/* The VM's console: qemu writes the guest's serial to a pipe (its stdout),
 * as the virtiofsd their stderr, and a thread of ours appends what comes
 * to dir/vm/console, bounded: a guest that floods its console (kernel
 * messages it provokes) never grows the host's file past
 * AJ_MV_CONSOLE_CAP, only its latest lines kept. A reader drains the
 * pipe first and reads through our fd (aj_mv_console_read): the file is
 * root's, in the VMM's directory, never opened again by its path. */
#include "console.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <unistd.h>

struct aj_mv_console {
	pthread_t th;
	pthread_mutex_t mu;
	int rfd, stop, file;
	size_t size;
	bool running;
};

/* Past the cap: the file's last half, from its first whole line, moved
 * to its start (n, what comes next, fits the rest). */
static void shrink(aj_mv_console *c, size_t n)
{
	size_t keep = AJ_MV_CONSOLE_CAP / 2 > n ? AJ_MV_CONSOLE_CAP / 2 - n : 0;
	if (keep > c->size)
		keep = c->size;
	char *tail = keep ? malloc(keep) : NULL;
	ssize_t got = tail ? pread(c->file, tail, keep, (off_t)(c->size - keep)) : 0;
	size_t from = 0;
	if (got > 0) {
		char *nl = memchr(tail, '\n', (size_t)got);
		from = nl ? (size_t)(nl + 1 - tail) : 0;
	}
	size_t left = got > 0 ? (size_t)got - from : 0;
	if (left && pwrite(c->file, tail + from, left, 0) != (ssize_t)left)
		left = 0;
	free(tail);
	(void)!ftruncate(c->file, (off_t)left);
	c->size = left;
}

static void append(aj_mv_console *c, const char *buf, size_t n)
{
	if (n > AJ_MV_CONSOLE_CAP / 2) { /* more than the half kept: its end */
		buf += n - AJ_MV_CONSOLE_CAP / 2;
		n = AJ_MV_CONSOLE_CAP / 2;
	}
	if (c->size + n > AJ_MV_CONSOLE_CAP)
		shrink(c, n);
	ssize_t w = pwrite(c->file, buf, n, (off_t)c->size);
	if (w > 0)
		c->size += (size_t)w;
}

/* Everything the pipe holds now, into the file (c->mu held); false at
 * its end (no writer left). */
static bool drain(aj_mv_console *c)
{
	char buf[16384];
	for (;;) {
		ssize_t n = read(c->rfd, buf, sizeof(buf));
		if (n > 0) {
			append(c, buf, (size_t)n);
			continue;
		}
		if (n < 0 && errno == EINTR)
			continue;
		return n < 0 && errno == EAGAIN;
	}
}

static void *keeper(void *arg)
{
	aj_mv_console *c = arg;
	for (;;) {
		struct pollfd pf[2] = {{c->rfd, POLLIN, 0}, {c->stop, POLLIN, 0}};
		if (poll(pf, 2, -1) < 0 && errno != EINTR)
			break;
		pthread_mutex_lock(&c->mu);
		bool more = drain(c);
		pthread_mutex_unlock(&c->mu);
		if (!more || pf[1].revents)
			break;
	}
	return NULL;
}

int aj_mv_console_open(aj_mv_console **out, const char *path, uid_t uid, gid_t gid, int *wfd,
		       aj_error *err)
{
	*out = NULL;
	*wfd = -1;
	aj_mv_console *c = calloc(1, sizeof(*c));
	int p[2] = {-1, -1};
	if (!c)
		return aj_err(err, ENOMEM, "microvm: the console");
	c->rfd = c->stop = -1;
	pthread_mutex_init(&c->mu, NULL);
	c->file = open(path, O_RDWR | O_CREAT | O_TRUNC | O_CLOEXEC | O_NOFOLLOW, 0600);
	int e = 0;
	/* the pipe the VMM's own: qemu reopens it (/proc/self/fd/1) */
	if (c->file < 0 || pipe2(p, O_CLOEXEC) < 0 || fchown(p[1], uid, gid) < 0 ||
	    fcntl(p[0], F_SETFL, O_NONBLOCK) < 0 ||
	    (c->stop = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK)) < 0)
		e = errno;
	c->rfd = p[0];
	if (!e) {
		/* the thread takes no signal of the process's (signalfd's) */
		sigset_t all, old;
		sigfillset(&all);
		pthread_sigmask(SIG_BLOCK, &all, &old);
		e = pthread_create(&c->th, NULL, keeper, c);
		pthread_sigmask(SIG_SETMASK, &old, NULL);
		c->running = e == 0;
	}
	if (e) {
		if (p[1] >= 0)
			close(p[1]);
		aj_mv_console_close(&c);
		return aj_err(err, e, "microvm: the console %s", path);
	}
	*wfd = p[1];
	*out = c;
	return 0;
}

void aj_mv_console_sync(aj_mv_console *c)
{
	if (!c)
		return;
	pthread_mutex_lock(&c->mu);
	(void)drain(c);
	pthread_mutex_unlock(&c->mu);
}

int aj_mv_console_read(aj_mv_console *c, char **out, size_t *n)
{
	*out = NULL;
	*n = 0;
	if (!c)
		return -ENOENT;
	pthread_mutex_lock(&c->mu);
	(void)drain(c);
	char *b = malloc(c->size + 1);
	ssize_t got = b ? pread(c->file, b, c->size, 0) : -1;
	int r = !b ? -ENOMEM : got < 0 ? -errno : 0;
	pthread_mutex_unlock(&c->mu);
	if (r < 0) {
		free(b);
		return r;
	}
	b[got] = '\0';
	*out = b;
	*n = (size_t)got;
	return 0;
}

void aj_mv_console_close(aj_mv_console **cp)
{
	aj_mv_console *c = *cp;
	if (!c)
		return;
	if (c->running) {
		uint64_t one = 1;
		(void)!write(c->stop, &one, sizeof(one));
		pthread_join(c->th, NULL);
	}
	if (c->rfd >= 0)
		close(c->rfd);
	if (c->stop >= 0)
		close(c->stop);
	if (c->file >= 0)
		close(c->file);
	pthread_mutex_destroy(&c->mu);
	free(c);
	*cp = NULL;
}

bool aj_mv_console_fatal(const char *c, char *out, size_t len)
{
	static const char mark[] = "agentjail-guest: fatal: ";
	const char *last = NULL;
	for (const char *q = c; (q = strstr(q, mark)); q++)
		if (q == c || q[-1] == '\n')
			last = q;
	if (!last)
		return false;
	snprintf(out, len, "%.*s", (int)strcspn(last, "\r\n"), last);
	return true;
}
