/* SPDX-License-Identifier: MIT */
/*
 * ajattack: the attacks of agentjail's public security suite.
 *
 * One static program (libc only), bound into the sandbox read-only at
 * /attack.  Each subcommand tries to climb one wall.  Every single attempt
 * prints one line
 *
 *     NAME=blocked errno=EPERM          the attempt failed (with that errno)
 *     NAME=ESCAPED <what happened>      the attempt worked: a hole
 *
 * and the subcommand ends with a summary line
 *
 *     result=blocked [errno=E]          (exit 0) every attempt failed; errno=
 *                                       is given when there was one attempt
 *     result=ESCAPED n=N                (exit 1) N attempts worked
 *
 * Lines starting with "info " are facts for the test to check or print.
 * Subcommands that expect the kernel to kill them (int80, x32, membomb) print
 * "attempt=..." first and ESCAPED only if they survive.  A few helpers run on
 * the host side of a test (listen_abstract) or set things up (spawn, orphan).
 *
 * Build: gcc -std=c17 -D_GNU_SOURCE -static -O2 -Wall -Wextra -Werror \
 *            -o ajattack tests/security/attack*.c
 */
#include "attack.h"

/* ------------------------------------------------------------ main */

void usage(void)
{
	fputs("usage: ajattack ATTACK [ARGS...]   (see tests/security/README.md)\n", stderr);
	exit(2);
}

#define ARG(i) (argc > (i) ? argv[i] : (usage(), ""))

int main(int argc, char **argv)
{
	if (argc < 2)
		usage();
	setvbuf(stdout, NULL, _IOLBF, 0);
	const char *c = argv[1];
	argc -= 1;
	argv += 1;
	if (!strcmp(c, "fds"))
		return a_fds();
	if (!strcmp(c, "fd_write"))
		return a_fd_write(atoi(ARG(1)), ARG(2));
	if (!strcmp(c, "init_fds"))
		return a_init_fds();
	if (!strcmp(c, "cwd"))
		return a_cwd();
	if (!strcmp(c, "exe_write"))
		return a_exe_write();
	if (!strcmp(c, "proc_write"))
		return a_proc_write();
	if (!strcmp(c, "sys"))
		return a_sys();
	if (!strcmp(c, "remount"))
		return a_remount();
	if (!strcmp(c, "newmount"))
		return a_newmount();
	if (!strcmp(c, "chroot"))
		return a_chroot();
	if (!strcmp(c, "pivot_root"))
		return a_pivot_root();
	if (!strcmp(c, "symlink_write"))
		return a_symlink_write(ARG(1), ARG(2));
	if (!strcmp(c, "read_planted"))
		return a_read_planted(ARG(1), argc > 2 ? argv[2] : NULL);
	if (!strcmp(c, "handle"))
		return a_handle();
	if (!strcmp(c, "proc1root"))
		return a_proc1root();
	if (!strcmp(c, "mknod"))
		return a_mknod();
	if (!strcmp(c, "devscan"))
		return a_devscan();
	if (!strcmp(c, "privstate"))
		return a_privstate();
	if (!strcmp(c, "setuid"))
		return a_setuid();
	if (!strcmp(c, "caps_raise"))
		return a_caps_raise();
	if (!strcmp(c, "ids"))
		return a_ids();
	if (!strcmp(c, "suid_exec"))
		return a_suid_exec(argc - 1, argv + 1);
	if (!strcmp(c, "suid_copy"))
		return a_suid_copy(ARG(1));
	if (!strcmp(c, "ptrace1"))
		return a_ptrace1();
	if (!strcmp(c, "kill1"))
		return a_kill1();
	if (!strcmp(c, "tiocsti"))
		return a_tty_ioctl(false);
	if (!strcmp(c, "tioclinux"))
		return a_tty_ioctl(true);
	if (!strcmp(c, "hostsock"))
		return a_hostsock(argc - 1, argv + 1);
	if (!strcmp(c, "listen_abstract"))
		return a_listen_abstract(ARG(1), argc > 2 ? atoi(argv[2]) : 30);
	if (!strcmp(c, "userns"))
		return a_userns();
	if (!strcmp(c, "cgroup"))
		return a_cgroup();
	if (!strcmp(c, "clone3"))
		return a_clone3();
	if (!strcmp(c, "int80"))
		return a_int80();
	if (!strcmp(c, "x32"))
		return a_x32();
	if (!strcmp(c, "io_uring"))
		return a_io_uring();
	if (!strcmp(c, "keyring"))
		return a_keyring();
	if (!strcmp(c, "bpf"))
		return a_bpf();
	if (!strcmp(c, "perf"))
		return a_perf();
	if (!strcmp(c, "userfaultfd"))
		return a_userfaultfd();
	if (!strcmp(c, "privsweep"))
		return a_privsweep();
	if (!strcmp(c, "rawsock"))
		return a_rawsock();
	if (!strcmp(c, "vsock"))
		return a_vsock();
	if (!strcmp(c, "netlink"))
		return a_netlink();
	if (!strcmp(c, "forkbomb"))
		return a_forkbomb(argc > 1 ? atoi(argv[1]) : 100000);
	if (!strcmp(c, "forkbomb_wild"))
		a_forkbomb_wild();
	if (!strcmp(c, "membomb"))
		return a_membomb(argc > 1 ? atol(argv[1]) : 1024, argc > 2 ? atoi(argv[2]) : 0);
	if (!strcmp(c, "tcpbuf"))
		return a_tcpbuf(argc > 1 ? atoi(argv[1]) : 16, argc > 2 ? atol(argv[2]) : 256,
				argc > 3 ? atol(argv[3]) : 64, argc > 4 ? atoi(argv[4]) : 0);
	if (!strcmp(c, "fill"))
		return a_fill(ARG(1), argc > 2 ? atol(argv[2]) : 2048);
	if (!strcmp(c, "inodefill"))
		return a_inodefill(ARG(1), argc > 2 ? atol(argv[2]) : 1000000);
	if (!strcmp(c, "spin"))
		a_spin(argc > 1 ? atoi(argv[1]) : 1, argc > 2 && !strcmp(argv[2], "ignore_term"));
	if (!strcmp(c, "killall"))
		return a_killall();
	if (!strcmp(c, "flood"))
		a_flood(ARG(1));
	if (!strcmp(c, "rlimit"))
		return a_rlimit();
	if (!strcmp(c, "fsize"))
		return a_fsize(ARG(1), argc > 2 ? atol(argv[2]) : 64);
	if (!strcmp(c, "orphan"))
		return a_orphan(ARG(1), argc > 2 && !strcmp(argv[2], "keepfds"));
	if (!strcmp(c, "spawn"))
		return a_spawn(ARG(1), argc > 2 ? atoi(argv[2]) : 4);
	if (!strcmp(c, "scan_secret"))
		return a_scan_secret(ARG(1), argc > 2 && !strcmp(argv[2], "pid1"));
	if (!strcmp(c, "creds"))
		return a_creds(argc - 1, argv + 1);
	if (!strcmp(c, "leak"))
		return a_leak(ARG(1));
	if (!strcmp(c, "landlock"))
		return a_landlock();
	if (!strcmp(c, "kinfo"))
		return a_kinfo();
	if (!strcmp(c, "console_say"))
		return a_console_say(ARG(1), argc > 2 ? atol(argv[2]) : 1,
				     argc > 3 ? atol(argv[3]) : 0);
	usage();
	return 2;
}
