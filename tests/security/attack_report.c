/* SPDX-License-Identifier: MIT */
/* ajattack: reporting helpers shared by every attack. */
#include "attack.h"

/* ------------------------------------------------------------ reporting */

int n_attempts;
int n_escaped;
int last_errno;

const char *ename(int e)
{
	const char *n = strerrorname_np(e);
	static char buf[32];
	if (n)
		return n;
	snprintf(buf, sizeof(buf), "E%d", e);
	return buf;
}

void out(const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	vprintf(fmt, ap);
	va_end(ap);
	fflush(stdout);
}

/* An attempt that failed with errno e. */
void blocked(const char *name, int e)
{
	n_attempts++;
	last_errno = e;
	out("%s=blocked errno=%s\n", name, ename(e));
}

/* A check (not a system call) that found the wall in place. */
void held(const char *name)
{
	n_attempts++;
	last_errno = 0;
	out("%s=blocked\n", name);
}

/* An attempt that worked. */
void escaped(const char *name, const char *fmt, ...)
{
	char buf[512];
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(buf, sizeof(buf), fmt, ap);
	va_end(ap);
	n_attempts++;
	n_escaped++;
	out("%s=ESCAPED %s\n", name, buf);
}

/* Judge a syscall-like return: < 0 (errno set) is blocked. */
void expect_fail(const char *name, long ret)
{
	int e = errno;
	if (ret < 0)
		blocked(name, e);
	else
		escaped(name, "returned %ld", ret);
}

/* Judge a path-returning open: closes the fd if it worked. */
void expect_open_fail(const char *name, int fd)
{
	int e = errno;
	if (fd < 0) {
		blocked(name, e);
	} else {
		close(fd);
		escaped(name, "opened");
	}
}

void info(const char *fmt, ...)
{
	va_list ap;
	printf("info ");
	va_start(ap, fmt);
	vprintf(fmt, ap);
	va_end(ap);
	printf("\n");
	fflush(stdout);
}

int finish(void)
{
	if (n_escaped) {
		out("result=ESCAPED n=%d\n", n_escaped);
		return 1;
	}
	if (n_attempts == 1 && last_errno)
		out("result=blocked errno=%s\n", ename(last_errno));
	else
		out("result=blocked\n");
	return 0;
}

bool same_file(const struct stat *a, const struct stat *b)
{
	return a->st_dev == b->st_dev && a->st_ino == b->st_ino;
}

long read_small(const char *path, char *buf, size_t size)
{
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return -1;
	size_t n = 0;
	while (n + 1 < size) {
		ssize_t r = read(fd, buf + n, size - 1 - n);
		if (r < 0 && errno == EINTR)
			continue;
		if (r <= 0)
			break;
		n += (size_t)r;
	}
	buf[n] = 0;
	close(fd);
	return (long)n;
}

bool is_num(const char *s)
{
	if (!*s)
		return false;
	for (; *s; s++)
		if (*s < '0' || *s > '9')
			return false;
	return true;
}
