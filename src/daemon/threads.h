/* SPDX-License-Identifier: MIT */
/* Worker threads of the supervisor (threads.c). */
#ifndef AJ_THREADS_H
#define AJ_THREADS_H
/* Run fn(arg) on a detached thread: an idle one of an earlier task when one
 * waits, else a new one. Returns 0 or a negative errno. */
int aj_thread_start(void *(*fn)(void *), void *arg);
/* Worker threads (exec, background processes, files, teardowns) are
 * counted... */
void aj_worker_enter(void);
void aj_worker_leave(void);
/* ...so that shutdown waits (bounded) for them to end (their sandboxes are gone). */
void aj_exec_shutdown(void);
#endif
