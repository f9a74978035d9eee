/* SPDX-License-Identifier: MIT */
/* A pseudo-terminal for a command of a box, allocated in the sandbox's own
 * devpts instance (so `tty` inside names it and the host's devpts is not
 * involved). */
#include <errno.h>
#include <fcntl.h>
#include <linux/magic.h>
#include <linux/openat2.h>
#include <sys/fsuid.h>
#include <sys/ioctl.h>
#include <sys/stat.h>
#include <sys/statfs.h>
#include <sys/syscall.h>
#include <sys/sysmacros.h>
#include <termios.h>
#include <unistd.h>

#include "box.h"

/* The sandbox's ptmx, opened as the sandbox's root user (so the new slave
 * belongs to it), without following any link the sandbox may have planted,
 * and checked to be the ptmx of a devpts instance: /dev is writable inside,
 * so what sits at dev/pts/ptmx is not trusted. */
static int open_ptmx(const aj_box *b)
{
	bool as_box = geteuid() == 0;
	int ou = -1, og = -1;
	if (as_box) {
		og = setfsgid(b->info.gid);
		ou = setfsuid(b->info.uid);
	}
	struct open_how how = {.flags = O_RDWR | O_NOCTTY | O_CLOEXEC | O_NONBLOCK,
			       .resolve = RESOLVE_IN_ROOT | RESOLVE_NO_SYMLINKS};
	long fd = syscall(SYS_openat2, b->root, "dev/pts/ptmx", &how, sizeof(how));
	int e = errno;
	if (as_box) {
		setfsuid((uid_t)ou);
		setfsgid((gid_t)og);
	}
	if (fd < 0)
		return -e;
	struct statfs sf;
	struct stat st;
	if (fstatfs((int)fd, &sf) < 0 || sf.f_type != DEVPTS_SUPER_MAGIC ||
	    fstat((int)fd, &st) < 0 || !S_ISCHR(st.st_mode) || st.st_rdev != makedev(5, 2)) {
		close((int)fd);
		return -EPERM;
	}
	int fl = fcntl((int)fd, F_GETFL);
	if (fl < 0 || fcntl((int)fd, F_SETFL, fl & ~O_NONBLOCK) < 0) {
		e = errno;
		close((int)fd);
		return -e;
	}
	return (int)fd;
}

int aj_box_open_pty(const aj_box *b, int pty[2], aj_error *err)
{
	pty[0] = pty[1] = -1;
	int m = open_ptmx(b);
	if (m == -EPERM)
		return aj_err(
		    err, EPERM,
		    "cannot allocate a pty: the sandbox's /dev/pts/ptmx is not its devpts");
	if (m < 0)
		return aj_err(err, -m, "cannot allocate a pty in the sandbox's /dev/pts");
	int unlock = 0;
	int s = ioctl(m, TIOCSPTLCK, &unlock) < 0
		    ? -1
		    : ioctl(m, TIOCGPTPEER, O_RDWR | O_NOCTTY | O_CLOEXEC);
	if (s < 0) {
		int e = errno;
		close(m);
		return aj_err(err, e, "cannot open the new pty's terminal");
	}
	struct winsize ws = {.ws_row = 24, .ws_col = 80};
	(void)ioctl(m, TIOCSWINSZ, &ws);
	pty[0] = m;
	pty[1] = s;
	return 0;
}
