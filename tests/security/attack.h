/* SPDX-License-Identifier: MIT */
/* Shared declarations of ajattack (see attack.c for what it is). */
#ifndef AJATTACK_H
#define AJATTACK_H

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <grp.h>
#include <inttypes.h>
#include <limits.h>
#include <linux/bpf.h>
#include <linux/io_uring.h>
#include <linux/keyctl.h>
#include <linux/netlink.h>
#include <linux/perf_event.h>
#include <linux/reboot.h>
#include <linux/securebits.h>
#include <linux/vm_sockets.h>
#include <netinet/in.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/fanotify.h>
#include <sys/fsuid.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/mount.h>
#include <sys/personality.h>
#include <sys/prctl.h>
#include <sys/quota.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <sys/swap.h>
#include <sys/syscall.h>
#include <sys/sysmacros.h>
#include <sys/time.h>
#include <sys/types.h>
#include <sys/uio.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#define ARRAY_SIZE(a) (sizeof(a) / sizeof((a)[0]))

#ifndef TIOCLINUX
#define TIOCLINUX 0x541C
#endif
#ifndef CLONE_NEWTIME
#define CLONE_NEWTIME 0x00000080
#endif
#define X32_SYSCALL_BIT 0x40000000UL

extern int n_attempts;
extern int n_escaped;
extern int last_errno;

const char *ename(int e);
void out(const char *fmt, ...);
void blocked(const char *name, int e);
void held(const char *name);
void escaped(const char *name, const char *fmt, ...);
void expect_fail(const char *name, long ret);
void expect_open_fail(const char *name, int fd);
void info(const char *fmt, ...);
int finish(void);
bool same_file(const struct stat *a, const struct stat *b);
long read_small(const char *path, char *buf, size_t size);
bool is_num(const char *s);
int a_fds(void);
int a_fd_write(int fd, const char *text);
int a_init_fds(void);
int a_cwd(void);
int a_exe_write(void);
int a_proc_write(void);
int a_sys(void);
int a_remount(void);
int a_newmount(void);
int a_chroot(void);
int a_pivot_root(void);
int a_symlink_write(const char *name, const char *target);
int a_read_planted(const char *path, const char *secret_marker);
int a_handle(void);
int a_proc1root(void);
int a_mknod(void);
void scan_dev(const char *dir, int depth);
int a_devscan(void);
int a_privstate(void);
int a_setuid(void);
int a_caps_raise(void);
int a_ids(void);
int a_suid_exec(int argc, char **argv);
int a_suid_copy(const char *dst);
int a_ptrace1(void);
bool init_alive(void);
int a_kill1(void);
int a_tty_ioctl(bool linux_req);
int connect_unix(const char *name, bool abstract);
int a_hostsock(int argc, char **argv);
int a_listen_abstract(const char *name, int secs);
int a_userns(void);
int a_cgroup(void);
void *thread_fn(void *arg);
int a_clone3(void);
int a_int80(void);
int a_x32(void);
int a_io_uring(void);
int a_keyring(void);
int a_bpf(void);
int a_perf(void);
int a_userfaultfd(void);
int a_privsweep(void);
int sock3(const char *name, unsigned long fam, int type, unsigned long proto);
int a_rawsock(void);
int a_vsock(void);
int a_netlink(void);
int a_forkbomb(int max);
_Noreturn void a_forkbomb_wild(void);
int a_membomb(long max_mb, int hold);
int a_tcpbuf(int pairs, long max_mb, long limit_mb, int hold);
int a_fill(const char *dir, long max_mb);
int a_inodefill(const char *dir, long max);
_Noreturn void a_spin(int n, bool ignore_term);
_Noreturn void a_flood(const char *tag);
int a_killall(void);
void raise_limit(const char *name, int res);
int a_rlimit(void);
int a_fsize(const char *path, long mb);
int a_orphan(const char *tag, bool keepfds);
int a_spawn(const char *tag, int n);
void scan_file(const char *path, const char *needle, int *unreadable);
void scan_tree(const char *dir, const char *needle, int depth, int *files);
int a_scan_secret(const char *reversed, bool pid1_only);
void b64(const unsigned char *in, size_t n, char *outb);
void pause_ms(int ms);
void wr(int fd, const char *p, size_t n);
int a_leak(const char *file);
int a_creds(int argc, char **argv);
int a_landlock(void);
int a_kinfo(void);
int a_console_say(const char *text, long count, long pad);
void usage(void);

#endif
