/* SPDX-License-Identifier: MIT */
/* Small shared helpers: cleanup attributes, string and file utilities. */
#ifndef AJ_UTIL_H
#define AJ_UTIL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdlib.h>
#include <sys/types.h>
#include <unistd.h>

static inline void aj_freep(void *p)
{
	free(*(void **)p);
}
static inline void aj_closep(int *fd)
{
	if (*fd >= 0)
		close(*fd);
}

#define _cleanup_free_ __attribute__((cleanup(aj_freep)))
#define _cleanup_close_ __attribute__((cleanup(aj_closep)))

/* Return *pp and set it to NULL, so a cleanup attribute won't free it. */
#define steal_pointer(pp)                                                                          \
	({                                                                                         \
		__typeof__(*(pp)) _p = *(pp);                                                      \
		*(pp) = NULL;                                                                      \
		_p;                                                                                \
	})

#define steal_fd(fdp)                                                                              \
	({                                                                                         \
		int _fd = *(fdp);                                                                  \
		*(fdp) = -1;                                                                       \
		_fd;                                                                               \
	})

#define AJ_ARRAY_SIZE(a) (sizeof(a) / sizeof((a)[0]))

/* Write a whole buffer, retrying on EINTR and short writes. Returns 0 or -errno. */
int aj_write_all(int fd, const void *buf, size_t len);
/* Read exactly len bytes. Returns 0, -EPIPE on early EOF, or -errno. */
int aj_read_all(int fd, void *buf, size_t len);
/* Write a string to a file at path (O_WRONLY|O_TRUNC, or create with mode). */
int aj_write_file(const char *path, const char *content, mode_t create_mode);
/* Write a string to a file at dirfd/path (must exist). */
int aj_write_file_at(int dirfd, const char *path, const char *content);
/* Read a small file (max 1 MiB) into a NUL-terminated malloc'ed buffer. */
int aj_read_file(const char *path, char **out, size_t *len_out);
/* Whether pid is a live process: a zombie (or one being reaped) is not;
 * unknown (unreadable /proc) counts as alive, so nothing of it is swept. */
bool aj_pid_alive(pid_t pid);
/* A process's start time (/proc/PID/stat field 22), 0 when there is no
 * such process: with the pid it names one process for good (a pid is
 * reused, never with the same start time). */
unsigned long long aj_pid_start_time(pid_t pid);
/* The same from an open fd (read to its end). */
int aj_read_fd(int fd, char **out, size_t *len_out);
/* mkdir -p with mode; existing directories are fine. */
int aj_mkdir_p(const char *path, mode_t mode);
/* Copy what is left of in to out. Between regular files at the same
 * offset only the data extents are copied (SEEK_DATA/SEEK_HOLE, each with
 * copy_file_range, else pread/pwrite) and out gets in's size: a hole stays
 * a hole, a sparse file never becomes real blocks. Otherwise read/write.
 * Returns 0 or a negative errno. */
int aj_copy_fd(int in, int out);
/* Remove name in dirfd and everything below it, never following a symlink
 * (each level opened O_NOFOLLOW below the one before), at most max_depth
 * levels deep. Returns 0 or a negative errno (-ENOENT when name is not
 * there, -ELOOP when too deep). */
int aj_rm_tree_at(int dirfd, const char *name, int max_depth);
/* Parse a size like "512M", "1G", "1.5GiB", "4096". Returns 0 or -EINVAL/-ERANGE. */
int aj_parse_size(const char *s, unsigned long long *out);
/* Parse a non-negative decimal integer <= max. */
int aj_parse_uint(const char *s, unsigned long long max, unsigned long long *out);
/* A kernel cpu or memory-node list ("0-3,6", cpuset.cpus' syntax) as a
 * bitmap of ids 0-8191 (the kernel's largest NR_CPUS). */
#define AJ_CPULIST_MAX 8192
typedef struct aj_cpulist {
	unsigned long long bits[AJ_CPULIST_MAX / 64];
} aj_cpulist;
/* Parse strictly: ids and ranges A-B (A <= B) joined by single commas,
 * decimal digits only, nothing else; file_text: a cgroup file's text (one
 * trailing newline, and an empty list, taken). 0, -EINVAL (bad syntax) or
 * -ERANGE (an id of AJ_CPULIST_MAX or more). */
int aj_cpulist_parse(const char *s, bool file_text, aj_cpulist *out);
/* The smallest id in a that is not in b, or -1 (a is within b). */
int aj_cpulist_first_missing(const aj_cpulist *a, const aj_cpulist *b);
/* Join strings a + b into malloc'ed buffer (NULL on ENOMEM). */
char *aj_strjoin(const char *a, const char *b);
/* snprintf into a malloc'ed buffer. */
char *aj_asprintf(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
/* True when s starts with prefix. */
bool aj_startswith(const char *s, const char *prefix);

#endif

/* Remember the process's argv/environ memory (call first thing in main), so
 * a sandbox's init can overwrite it: the caller's command line (which may
 * hold --env values) and environment must not be readable inside. */
void aj_proctitle_init(int argc, char **argv);
/* Wipe the remembered area and write title there. */
void aj_proctitle_set(const char *title);

/* Close every fd >= 3 except those in keep (n entries, any order). */
void aj_close_all_except(const int *keep, size_t n);
/* Where agentjail's program name (agentjail, agentjail-net, ...) is: next
 * to the running program (the kernel's /proc/self/exe: a build directory)
 * if it is there, else in the libexec directory fixed at build time; never
 * through $PATH or the environment. 0, or -ENAMETOOLONG. */
int aj_program_path(const char *name, char *out, size_t len);

/* Hold the abstract unix socket name "agentjail/<kind>/<slot>" for as long
 * as the returned fd is open: the kernel frees the name when the process
 * dies, so such a reservation can never be left behind. Returns the fd,
 * -EADDRINUSE when another process holds it, or -errno. */
int aj_reserve_name(const char *kind, unsigned slot);
/* Reserve a free slot of "agentjail/<kind>/" among nslots, picked at
 * random. Returns the fd holding it (slot in *slot), -EBUSY when none was
 * free after many tries, or -errno. */
int aj_reserve_random(const char *kind, unsigned nslots, unsigned *slot);
