/* SPDX-License-Identifier: MIT */
#include "util.h"

#include <ctype.h>
#include <dirent.h>
#include <stddef.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <sys/random.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <sys/syscall.h>

int aj_write_all(int fd, const void *buf, size_t len)
{
	const char *p = buf;
	while (len > 0) {
		ssize_t n = write(fd, p, len);
		if (n < 0) {
			if (errno == EINTR)
				continue;
			return -errno;
		}
		p += n;
		len -= (size_t)n;
	}
	return 0;
}

int aj_read_all(int fd, void *buf, size_t len)
{
	char *p = buf;
	while (len > 0) {
		ssize_t n = read(fd, p, len);
		if (n < 0) {
			if (errno == EINTR)
				continue;
			return -errno;
		}
		if (n == 0)
			return -EPIPE;
		p += n;
		len -= (size_t)n;
	}
	return 0;
}

static int write_fd_string(int fd, const char *content)
{
	int r = aj_write_all(fd, content, strlen(content));
	if (close(fd) < 0 && r == 0)
		r = -errno;
	return r;
}

int aj_write_file(const char *path, const char *content, mode_t create_mode)
{
	int flags = O_WRONLY | O_TRUNC | O_CLOEXEC | O_NOFOLLOW;
	if (create_mode)
		flags |= O_CREAT;
	int fd = open(path, flags, create_mode);
	if (fd < 0)
		return -errno;
	return write_fd_string(fd, content);
}

int aj_write_file_at(int dirfd, const char *path, const char *content)
{
	int fd = openat(dirfd, path, O_WRONLY | O_CLOEXEC | O_NOFOLLOW);
	if (fd < 0)
		return -errno;
	return write_fd_string(fd, content);
}

int aj_read_file(const char *path, char **out, size_t *len_out)
{
	_cleanup_close_ int fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	return aj_read_fd(fd, out, len_out);
}

int aj_read_fd(int fd, char **out, size_t *len_out)
{
	const size_t max = 1 << 20;
	size_t cap = 4096, len = 0;
	_cleanup_free_ char *buf = malloc(cap);
	if (!buf)
		return -ENOMEM;
	for (;;) {
		if (len + 1 >= cap) {
			if (cap >= max)
				return -EFBIG;
			cap *= 2;
			char *nb = realloc(buf, cap);
			if (!nb)
				return -ENOMEM;
			buf = nb;
		}
		ssize_t n = read(fd, buf + len, cap - len - 1);
		if (n < 0) {
			if (errno == EINTR)
				continue;
			return -errno;
		}
		if (n == 0)
			break;
		len += (size_t)n;
	}
	buf[len] = '\0';
	if (len_out)
		*len_out = len;
	*out = steal_pointer(&buf);
	return 0;
}

int aj_mkdir_p(const char *path, mode_t mode)
{
	char buf[PATH_MAX];
	size_t len = strlen(path);
	if (len == 0 || len >= sizeof(buf))
		return -ENAMETOOLONG;
	memcpy(buf, path, len + 1);
	/* Usually only the last component is missing: try the whole path,
	 * and only when a parent is missing walk up to the deepest one that
	 * exists (cutting the string there), then create downwards. */
	while (mkdir(buf, mode) < 0 && errno != EEXIST) {
		if (errno != ENOENT)
			return -errno;
		char *slash = strrchr(buf, '/');
		if (!slash || slash == buf)
			return -ENOENT;
		*slash = '\0';
	}
	for (size_t cut = strlen(buf); cut < len; cut = strlen(buf)) {
		buf[cut] = '/';
		if (mkdir(buf, mode) < 0 && errno != EEXIST)
			return -errno;
	}
	return 0;
}

int aj_parse_uint(const char *s, unsigned long long max, unsigned long long *out)
{
	if (!s || !*s || !isdigit((unsigned char)*s))
		return -EINVAL;
	errno = 0;
	char *end;
	unsigned long long v = strtoull(s, &end, 10);
	if (*end)
		return -EINVAL;
	if (errno == ERANGE || v > max)
		return -ERANGE;
	*out = v;
	return 0;
}

/* One id of a cpu list: decimal digits, below AJ_CPULIST_MAX. */
static int cpulist_id(const char **s, unsigned *out)
{
	unsigned long v = 0;
	const char *p = *s;
	if (!isdigit((unsigned char)*p))
		return -EINVAL;
	for (; isdigit((unsigned char)*p); p++)
		if ((v = v * 10 + (unsigned long)(*p - '0')) >= AJ_CPULIST_MAX)
			v = AJ_CPULIST_MAX; /* stays too big, no overflow */
	*s = p;
	*out = (unsigned)v;
	return v >= AJ_CPULIST_MAX ? -ERANGE : 0;
}

int aj_cpulist_parse(const char *s, bool file_text, aj_cpulist *out)
{
	memset(out, 0, sizeof(*out));
	if (file_text && (!*s || !strcmp(s, "\n")))
		return 0;
	int range = 0; /* the first -ERANGE, once the whole text is checked */
	for (const char *p = s;;) {
		unsigned a, b;
		int r = cpulist_id(&p, &a);
		b = a;
		if (r != -EINVAL && *p == '-') {
			p++;
			int r2 = cpulist_id(&p, &b);
			if (r2 == -EINVAL || (r == 0 && r2 == 0 && b < a))
				return -EINVAL;
			r = r ? r : r2;
		}
		if (r == -EINVAL || (*p && *p != ',' && !(file_text && !strcmp(p, "\n"))))
			return -EINVAL;
		range = range ? range : r;
		for (unsigned i = a; r == 0 && i <= b; i++)
			out->bits[i / 64] |= 1ULL << (i % 64);
		if (*p != ',')
			return range;
		p++;
	}
}

int aj_cpulist_first_missing(const aj_cpulist *a, const aj_cpulist *b)
{
	for (size_t w = 0; w < AJ_ARRAY_SIZE(a->bits); w++) {
		unsigned long long m = a->bits[w] & ~b->bits[w];
		if (m)
			return (int)(w * 64 + (size_t)__builtin_ctzll(m));
	}
	return -1;
}

int aj_parse_size(const char *s, unsigned long long *out)
{
	if (!s || !*s || !(isdigit((unsigned char)*s) || *s == '.'))
		return -EINVAL;
	errno = 0;
	char *end;
	double v = strtod(s, &end);
	if (errno || end == s || !isfinite(v) || v < 0)
		return -EINVAL;
	double mult = 1;
	switch (toupper((unsigned char)*end)) {
	case '\0': break;
	case 'K': mult = 1024.0; break;
	case 'M': mult = 1024.0 * 1024; break;
	case 'G': mult = 1024.0 * 1024 * 1024; break;
	case 'T': mult = 1024.0 * 1024 * 1024 * 1024; break;
	default: return -EINVAL;
	}
	if (*end) {
		end++;
		/* accept K, KB, KiB, k, kib ... */
		if (*end == 'i' || *end == 'I')
			end++;
		if (*end == 'B' || *end == 'b')
			end++;
		if (*end)
			return -EINVAL;
	}
	double bytes = v * mult;
	if (bytes > 9.0e18)
		return -ERANGE;
	*out = (unsigned long long)bytes;
	return 0;
}

char *aj_strjoin(const char *a, const char *b)
{
	size_t la = strlen(a), lb = strlen(b);
	char *r = malloc(la + lb + 1);
	if (!r)
		return NULL;
	memcpy(r, a, la);
	memcpy(r + la, b, lb + 1);
	return r;
}

char *aj_asprintf(const char *fmt, ...)
{
	va_list ap;
	char *r = NULL;
	va_start(ap, fmt);
	if (vasprintf(&r, fmt, ap) < 0)
		r = NULL;
	va_end(ap);
	return r;
}

bool aj_startswith(const char *s, const char *prefix)
{
	return strncmp(s, prefix, strlen(prefix)) == 0;
}

static char *title_start;
static size_t title_len;

void aj_proctitle_init(int argc, char **argv)
{
	extern char **environ;
	if (argc < 1 || !argv[0])
		return;
	char *end = argv[argc - 1] + strlen(argv[argc - 1]) + 1;
	for (char **e = environ; e && *e; e++)
		if (*e == end)
			end = *e + strlen(*e) + 1;
	title_start = argv[0];
	title_len = (size_t)(end - argv[0]);
}

void aj_proctitle_set(const char *title)
{
	extern char **environ;
	if (!title_start || title_len == 0)
		return;
	/* environ's strings live in the area we wipe; nothing may read it later */
	environ = NULL;
	memset(title_start, 0, title_len);
	snprintf(title_start, title_len, "%s", title);
}

static int cmp_int(const void *a, const void *b)
{
	return *(const int *)a - *(const int *)b;
}

void aj_close_all_except(const int *keep, size_t n)
{
	int k[16];
	size_t m = 0;
	for (size_t i = 0; i < n && m < AJ_ARRAY_SIZE(k); i++)
		if (keep[i] >= 3)
			k[m++] = keep[i];
	qsort(k, m, sizeof(int), cmp_int);
	unsigned lo = 3;
	for (size_t i = 0; i < m; i++) {
		if ((unsigned)k[i] > lo)
			syscall(SYS_close_range, lo, (unsigned)k[i] - 1, 0);
		lo = (unsigned)k[i] + 1;
	}
	syscall(SYS_close_range, lo, ~0U, 0);
}

int aj_reserve_name(const char *kind, unsigned slot)
{
	int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (fd < 0)
		return -errno;
	struct sockaddr_un sa = {.sun_family = AF_UNIX};
	int n = snprintf(sa.sun_path + 1, sizeof(sa.sun_path) - 1, "agentjail/%s/%u", kind, slot);
	socklen_t len = (socklen_t)(offsetof(struct sockaddr_un, sun_path) + 1 + (size_t)n);
	if (bind(fd, (struct sockaddr *)&sa, len) < 0) {
		int e = errno;
		close(fd);
		return -e;
	}
	return fd;
}

int aj_reserve_random(const char *kind, unsigned nslots, unsigned *slot)
{
	for (unsigned attempt = 0; attempt < 128; attempt++) {
		unsigned r;
		if (getrandom(&r, sizeof(r), 0) != sizeof(r))
			r = (unsigned)getpid() * 2654435761u + attempt;
		int fd = aj_reserve_name(kind, r % nslots);
		if (fd == -EADDRINUSE)
			continue;
		if (fd >= 0)
			*slot = r % nslots;
		return fd;
	}
	return -EBUSY;
}

int aj_program_path(const char *name, char *out, size_t len)
{
	char self[PATH_MAX];
	ssize_t n = readlink("/proc/self/exe", self, sizeof(self) - 1);
	if (n > 0) {
		self[n] = '\0';
		char *slash = strrchr(self, '/');
		if (slash) {
			*slash = '\0';
			if (snprintf(out, len, "%s/%s", self, name) < (int)len &&
			    access(out, X_OK) == 0)
				return 0;
		}
	}
	if (snprintf(out, len, "%s/%s", AJ_LIBEXECDIR, name) >= (int)len)
		return -ENAMETOOLONG;
	return 0;
}

static int rm_tree_at(int dfd, const char *name, int depth, int max_depth)
{
	if (unlinkat(dfd, name, 0) == 0)
		return 0;
	if (errno != EISDIR && errno != EPERM)
		return -errno;
	if (depth >= max_depth)
		return -ELOOP;
	int fd = openat(dfd, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	DIR *d = fdopendir(fd);
	if (!d) {
		close(fd);
		return -errno;
	}
	struct dirent *de;
	int r = 0;
	while (r == 0 && (de = readdir(d)))
		if (strcmp(de->d_name, ".") && strcmp(de->d_name, ".."))
			r = rm_tree_at(dirfd(d), de->d_name, depth + 1, max_depth);
	closedir(d);
	if (r == 0 && unlinkat(dfd, name, AT_REMOVEDIR) < 0)
		r = -errno;
	return r;
}

int aj_rm_tree_at(int dirfd, const char *name, int max_depth)
{
	return rm_tree_at(dirfd, name, 0, max_depth);
}

/* Bytes [off, end) of in to the same offsets of out: copy_file_range (its
 * offsets given, so neither file's position moves), else pread/pwrite. */
static int copy_range(int in, int out, off_t off, off_t end)
{
	bool cfr = true;
	char buf[65536];
	while (off < end) {
		size_t want = (size_t)(end - off < (1 << 20) ? end - off : (1 << 20));
		ssize_t n;
		if (cfr) {
			off_t io = off, oo = off;
			n = copy_file_range(in, &io, out, &oo, want, 0);
			if (n < 0 && errno != EINTR &&
			    (errno == EXDEV || errno == EINVAL || errno == ENOSYS ||
			     errno == EOPNOTSUPP || errno == EBADF)) {
				cfr = false;
				continue;
			}
		} else {
			n = pread(in, buf, want < sizeof(buf) ? want : sizeof(buf), off);
			if (n > 0) {
				for (ssize_t w = 0; w < n;) {
					ssize_t k = pwrite(out, buf + w, (size_t)(n - w), off + w);
					if (k < 0 && errno != EINTR)
						return -errno;
					w += k > 0 ? k : 0;
				}
			}
		}
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0)
			return -errno;
		if (n == 0)
			return 0; /* shorter than it was: the copy is, too */
		off += n;
	}
	return 0;
}

/* A regular file's data extents (SEEK_DATA/SEEK_HOLE) from its current
 * offset, each at the same offset of out; the holes are left as holes and
 * out's size set at the end (a hole there is no block either). */
static int copy_sparse(int in, int out)
{
	off_t start = lseek(in, 0, SEEK_CUR), base = lseek(out, 0, SEEK_CUR);
	struct stat st;
	if (start < 0 || base < 0 || fstat(in, &st) < 0)
		return -errno;
	if (base != start) /* offsets differ: not worth it, the plain copy does it */
		return 1;
	off_t end = st.st_size, off = start;
	while (off < end) {
		off_t data = lseek(in, off, SEEK_DATA);
		if (data < 0 && errno == ENXIO)
			break; /* only a hole is left */
		if (data < 0)
			return off == start && (errno == EINVAL || errno == EOPNOTSUPP) ? 1
											: -errno;
		off_t hole = lseek(in, data, SEEK_HOLE);
		if (hole < 0)
			return -errno;
		if (hole > end)
			hole = end;
		int r = copy_range(in, out, data, hole);
		if (r < 0)
			return r;
		off = hole;
	}
	if (ftruncate(out, end) < 0 || lseek(in, end, SEEK_SET) < 0 ||
	    lseek(out, end, SEEK_SET) < 0)
		return -errno;
	return 0;
}

int aj_copy_fd(int in, int out)
{
	struct stat si, so;
	if (fstat(in, &si) == 0 && fstat(out, &so) == 0 && S_ISREG(si.st_mode) &&
	    S_ISREG(so.st_mode)) {
		int r = copy_sparse(in, out);
		if (r <= 0)
			return r;
	}
	char buf[65536];
	for (;;) {
		ssize_t n = read(in, buf, sizeof(buf));
		if (n == 0)
			return 0;
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0)
			return -errno;
		int r = aj_write_all(out, buf, (size_t)n);
		if (r < 0)
			return r;
	}
}

unsigned long long aj_pid_start_time(pid_t pid)
{
	char path[64];
	snprintf(path, sizeof(path), "/proc/%d/stat", (int)pid);
	_cleanup_free_ char *txt = NULL;
	if (pid <= 0 || aj_read_file(path, &txt, NULL) < 0)
		return 0;
	const char *f = strrchr(txt, ')'); /* after the command name, which may hold anything */
	for (int field = 2; f && field < 22; field++)
		f = strchr(f + 1, ' ');
	unsigned long long t = 0;
	return f && sscanf(f + 1, "%llu", &t) == 1 ? t : 0;
}

bool aj_pid_alive(pid_t pid)
{
	char path[64], *st = NULL;
	snprintf(path, sizeof(path), "/proc/%d/stat", (int)pid);
	int r = aj_read_file(path, &st, NULL);
	if (r < 0)
		return r != -ENOENT && r != -ESRCH;
	const char *e = strrchr(st, ')'); /* the name may hold ')' and spaces */
	bool dead = e && e[1] == ' ' && (e[2] == 'Z' || e[2] == 'X');
	free(st);
	return !dead;
}
