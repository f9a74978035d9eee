/* SPDX-License-Identifier: MIT */
#include "pty.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <unistd.h>

int aj_pty_open(char *slave, size_t len, aj_error *err)
{
	int fd = posix_openpt(O_RDWR | O_NOCTTY | O_CLOEXEC);
	if (fd < 0)
		return aj_err(err, errno, "cannot open a pseudo-terminal in the sandbox");
	if (unlockpt(fd) < 0 || ptsname_r(fd, slave, len) != 0) {
		int e = errno;
		close(fd);
		return aj_err(err, e, "cannot set up the pseudo-terminal");
	}
	return fd;
}

void aj_term_make_raw(aj_term *t, int fd)
{
	t->raw = false;
	t->fd = fd;
	if (tcgetattr(fd, &t->saved) < 0)
		return;
	struct termios raw = t->saved;
	cfmakeraw(&raw);
	if (tcsetattr(fd, TCSAFLUSH, &raw) == 0)
		t->raw = true;
}

void aj_term_restore(aj_term *t)
{
	if (t->raw)
		tcsetattr(t->fd, TCSAFLUSH, &t->saved);
	t->raw = false;
}

void aj_pty_copy_winsize(int from, int master)
{
	struct winsize ws;
	if (ioctl(from, TIOCGWINSZ, &ws) == 0)
		ioctl(master, TIOCSWINSZ, &ws);
}
