/* SPDX-License-Identifier: MIT */
/* A new pseudo-terminal for an interactive command, allocated inside the
 * sandbox's own devpts, relayed by agentjail to the caller's terminal. */
#ifndef AJ_PTY_H
#define AJ_PTY_H

#include <stdbool.h>
#include <stddef.h>
#include <termios.h>

#include "error.h"

/* Child, after pivot: open /dev/ptmx, return master fd, fill slave path. */
int aj_pty_open(char *slave, size_t len, aj_error *err);

typedef struct aj_term {
	bool raw;
	int fd;
	struct termios saved;
} aj_term;

/* Put fd (the caller's terminal) in raw mode; aj_term_restore undoes it. */
void aj_term_make_raw(aj_term *t, int fd);
void aj_term_restore(aj_term *t);
/* Copy the window size of the terminal on from to the pty master. */
void aj_pty_copy_winsize(int from, int master);

#endif
