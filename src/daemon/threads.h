/* SPDX-License-Identifier: MIT */
/* Run fn(arg) on a detached thread: an idle one of an earlier task when one
 * waits, else a new one. Returns 0 or a negative errno. */
#ifndef AJ_THREADS_H
#define AJ_THREADS_H
int aj_thread_start(void *(*fn)(void *), void *arg);
#endif
