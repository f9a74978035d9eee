/* SPDX-License-Identifier: MIT */
/* A microVM's console (console.c): qemu's serial and the virtiofsd's
 * stderr on a pipe, kept in a file of at most AJ_MV_CONSOLE_CAP bytes. */
#ifndef AJ_MV_CONSOLE_H
#define AJ_MV_CONSOLE_H

#include <stdbool.h>
#include <stddef.h>
#include <sys/types.h>

#include "error.h"

/* the file's bound: past it only its last half's lines are kept */
#define AJ_MV_CONSOLE_CAP (256u * 1024u)

typedef struct aj_mv_console aj_mv_console;

/* The file at path (made, root's: only the pipe is the VM's uid:gid) and
 * the thread that fills it;
 * *wfd: the pipe's end for the VM's processes (their stdout, stderr). */
int aj_mv_console_open(aj_mv_console **c, const char *path, uid_t uid, gid_t gid, int *wfd,
		       aj_error *err);
/* What was written to the pipe so far is in the file. */
void aj_mv_console_sync(aj_mv_console *c);
/* All that was said so far (*out, NUL-ended, to free), read through our
 * fd of the file, never its path (the VM's directory is the VMM's). */
int aj_mv_console_read(aj_mv_console *c, char **out, size_t *n);
/* The thread stopped (what was written kept), the pipe closed; NULL ok. */
void aj_mv_console_close(aj_mv_console **c);
/* The guest init's fatal line ("agentjail-guest: fatal: ...", its reason
 * before it powers off) in text c; false if none. */
bool aj_mv_console_fatal(const char *c, char *out, size_t len);

#endif
