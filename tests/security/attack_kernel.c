/* SPDX-License-Identifier: MIT */
/* ajattack: kernel attack surface: io_uring, keyrings, bpf, perf, sockets. */
#include "attack.h"

/* ------------------------------------------------------------ kernel surface */

int a_io_uring(void)
{
	struct io_uring_params p;
	memset(&p, 0, sizeof(p));
	long fd = syscall(SYS_io_uring_setup, 8, &p);
	if (fd >= 0)
		close((int)fd);
	expect_fail("io_uring_setup", fd);
	expect_fail("io_uring_enter", syscall(SYS_io_uring_enter, 0, 1, 0, 0, NULL, 0));
	expect_fail("io_uring_register", syscall(SYS_io_uring_register, 0, 0, NULL, 0));
	return finish();
}

int a_keyring(void)
{
	expect_fail("add_key",
		    syscall(SYS_add_key, "user", "ajkey", "x", 1, KEY_SPEC_SESSION_KEYRING));
	expect_fail("keyctl_get_id",
		    syscall(SYS_keyctl, KEYCTL_GET_KEYRING_ID, KEY_SPEC_USER_KEYRING, 0));
	expect_fail("keyctl_join", syscall(SYS_keyctl, KEYCTL_JOIN_SESSION_KEYRING, "ajring"));
	expect_fail("request_key",
		    syscall(SYS_request_key, "user", "ajkey", NULL, KEY_SPEC_SESSION_KEYRING));
	return finish();
}

int a_bpf(void)
{
	union bpf_attr a;
	memset(&a, 0, sizeof(a));
	a.map_type = BPF_MAP_TYPE_ARRAY;
	a.key_size = 4;
	a.value_size = 4;
	a.max_entries = 1;
	long fd = syscall(SYS_bpf, BPF_MAP_CREATE, &a, sizeof(a));
	if (fd >= 0)
		close((int)fd);
	expect_fail("bpf_map_create", fd);
	struct bpf_insn prog[] = {
	    {.code = BPF_ALU64 | BPF_MOV | BPF_K, .dst_reg = 0, .imm = 0},
	    {.code = BPF_JMP | BPF_EXIT},
	};
	memset(&a, 0, sizeof(a));
	a.prog_type = BPF_PROG_TYPE_SOCKET_FILTER;
	a.insn_cnt = 2;
	a.insns = (uint64_t)(uintptr_t)prog;
	a.license = (uint64_t)(uintptr_t) "GPL";
	fd = syscall(SYS_bpf, BPF_PROG_LOAD, &a, sizeof(a));
	if (fd >= 0)
		close((int)fd);
	expect_fail("bpf_prog_load", fd);
	return finish();
}

int a_perf(void)
{
	struct perf_event_attr a;
	memset(&a, 0, sizeof(a));
	a.size = sizeof(a);
	a.type = PERF_TYPE_SOFTWARE;
	a.config = PERF_COUNT_SW_CPU_CLOCK;
	a.disabled = 1;
	a.exclude_kernel = 1;
	long fd = syscall(SYS_perf_event_open, &a, 0, -1, -1, 0);
	if (fd >= 0)
		close((int)fd);
	expect_fail("perf_self", fd);
	a.exclude_kernel = 0;
	fd = syscall(SYS_perf_event_open, &a, -1, 0, -1, 0); /* system-wide, cpu 0 */
	if (fd >= 0)
		close((int)fd);
	expect_fail("perf_cpu0", fd);
	return finish();
}

int a_userfaultfd(void)
{
	long fd = syscall(SYS_userfaultfd, O_CLOEXEC | 1 /* UFFD_USER_MODE_ONLY */);
	if (fd >= 0)
		close((int)fd);
	expect_fail("userfaultfd_user", fd);
	fd = syscall(SYS_userfaultfd, O_CLOEXEC);
	if (fd >= 0)
		close((int)fd);
	expect_fail("userfaultfd", fd);
	expect_open_fail("dev_userfaultfd", open("/dev/userfaultfd", O_RDWR | O_CLOEXEC));
	return finish();
}

/* Calls that need host privilege: every one must fail. Arguments are chosen
 * so that even a call that got through would do no harm. */
int a_privsweep(void)
{
	expect_fail("reboot", syscall(SYS_reboot, LINUX_REBOOT_MAGIC1, LINUX_REBOOT_MAGIC2,
				      0x0badc0deU, NULL));
	expect_fail("swapon", swapon("/nonexistent-ajswap", 0));
	expect_fail("swapoff", swapoff("/nonexistent-ajswap"));
	expect_fail("kexec_load", syscall(SYS_kexec_load, 0, 0, NULL, 0xdead0000UL));
	expect_fail("kexec_file_load", syscall(SYS_kexec_file_load, -1, -1, 0, "", 0));
	expect_fail("init_module", syscall(SYS_init_module, NULL, 0, ""));
	expect_fail("finit_module", syscall(SYS_finit_module, -1, "", 0));
	expect_fail("delete_module", syscall(SYS_delete_module, "ajnonexistent", O_NONBLOCK));
	struct timeval tv;
	gettimeofday(&tv, NULL);
	expect_fail("settimeofday", settimeofday(&tv, NULL));
	struct timespec ts;
	clock_gettime(CLOCK_REALTIME, &ts);
	expect_fail("clock_settime", clock_settime(CLOCK_REALTIME, &ts));
	expect_fail("acct", acct("/nonexistent-ajacct"));
	expect_fail("syslog_size", syscall(SYS_syslog, 10 /* SIZE_BUFFER */, NULL, 0));
	expect_fail("syslog_read_all", syscall(SYS_syslog, 3 /* READ_ALL */, (char[64]){0}, 64));
	expect_fail("quotactl_sync", quotactl(QCMD(Q_SYNC, USRQUOTA), NULL, 0, NULL));
	expect_fail("iopl", syscall(SYS_iopl, 3));
	expect_fail("ioperm", syscall(SYS_ioperm, 0x80, 1, 1));
	expect_fail("personality_rie", syscall(SYS_personality, READ_IMPLIES_EXEC));
	expect_fail("personality_addr_no_randomize", syscall(SYS_personality, ADDR_NO_RANDOMIZE));
	long per = syscall(SYS_personality, 0xffffffffUL);
	info("personality now 0x%lx", per);
	if (per != 0)
		escaped("personality_state", "personality is 0x%lx", per);
	expect_fail("sethostname", sethostname("ajescape", 8));
	expect_fail("vhangup", vhangup());
	expect_fail("fanotify_init", syscall(SYS_fanotify_init, FAN_CLASS_NOTIF, O_RDONLY));
	unsigned long mask = 1;
	expect_fail("migrate_pages_1", syscall(SYS_migrate_pages, 1, 64, &mask, &mask));
	struct sched_param sp = {.sched_priority = 50};
	expect_fail("sched_fifo", sched_setscheduler(0, SCHED_FIFO, &sp));
	expect_fail("nice_minus_20", setpriority(PRIO_PROCESS, 0, -20));
	return finish();
}

int sock3(const char *name, unsigned long fam, int type, unsigned long proto)
{
	long s = syscall(SYS_socket, fam, type | SOCK_CLOEXEC, proto);
	int e = errno;
	if (s >= 0)
		close((int)s);
	errno = e;
	expect_fail(name, s);
	return 0;
}

int a_rawsock(void)
{
	sock3("packet_raw", AF_PACKET, SOCK_RAW, 0x0300 /* htons(ETH_P_ALL) */);
	sock3("packet_dgram", AF_PACKET, SOCK_DGRAM, 0x0300);
	sock3("packet_raw_hi32", 0x100000000UL | AF_PACKET, SOCK_RAW, 0x0300);
	sock3("inet_sock_packet", AF_INET, SOCK_PACKET, 0x0300);
	sock3("inet_raw_icmp", AF_INET, SOCK_RAW, IPPROTO_ICMP);
	sock3("inet_raw_raw", AF_INET, SOCK_RAW, IPPROTO_RAW);
	sock3("inet6_raw_icmpv6", AF_INET6, SOCK_RAW, IPPROTO_ICMPV6);
	return finish();
}

int a_vsock(void)
{
	sock3("vsock_stream", AF_VSOCK, SOCK_STREAM, 0);
	sock3("vsock_dgram", AF_VSOCK, SOCK_DGRAM, 0);
	sock3("vsock_seqpacket", AF_VSOCK, SOCK_SEQPACKET, 0);
	sock3("vsock_stream_hi32", 0x100000000UL | AF_VSOCK, SOCK_STREAM, 0);
	return finish();
}

int a_netlink(void)
{
	static const struct {
		const char *name;
		unsigned long proto;
	} p[] = {{"netlink_sock_diag", NETLINK_SOCK_DIAG},
		 {"netlink_audit", NETLINK_AUDIT},
		 {"netlink_kobject_uevent", NETLINK_KOBJECT_UEVENT},
		 {"netlink_netfilter", NETLINK_NETFILTER},
		 {"netlink_generic", NETLINK_GENERIC},
		 {"netlink_xfrm", NETLINK_XFRM},
		 {"netlink_connector", NETLINK_CONNECTOR},
		 {"netlink_selinux", NETLINK_SELINUX},
		 {"netlink_crypto", NETLINK_CRYPTO},
		 {"netlink_rdma", NETLINK_RDMA},
		 {"netlink_audit_hi32", 0x100000000UL | NETLINK_AUDIT}};
	for (size_t i = 0; i < ARRAY_SIZE(p); i++)
		sock3(p[i].name, AF_NETLINK, SOCK_RAW, p[i].proto);
	sock3("netlink_audit_fam_hi32", 0x100000000UL | AF_NETLINK, SOCK_RAW, NETLINK_AUDIT);
	sock3("netlink_audit_dgram", AF_NETLINK, SOCK_DGRAM, NETLINK_AUDIT);
	int s = socket(AF_NETLINK, SOCK_RAW | SOCK_CLOEXEC, NETLINK_ROUTE);
	info("netlink_route %s", s >= 0 ? "allowed" : ename(errno));
	if (s >= 0)
		close(s);
	return finish();
}

/* Lines of the caller's text on the kernel's console without a capability
 * outside: in a user and mount namespace of our own, a tmpfs mount whose
 * unknown option (text, padded to pad bytes with '.') the kernel prints at
 * error level, count times (a level-3 guest's console on the host: its
 * size cap, and a forged "Out of memory" line). */
int a_console_say(const char *text, long count, long pad)
{
	char opt[4000];
	if (pad >= (long)sizeof(opt))
		pad = sizeof(opt) - 1;
	int n = snprintf(opt, sizeof(opt), "%s ", text);
	while (n < pad)
		opt[n++] = '.';
	opt[n] = '\0';
	if (unshare(CLONE_NEWUSER | CLONE_NEWNS) < 0) {
		printf("console_say=unshare %s\n", ename(errno));
		return 1;
	}
	long said = 0;
	int e = 0;
	for (long i = 0; i < count; i++)
		if (mount("none", "/", "tmpfs", 0, opt) < 0 && (e = errno) == EINVAL)
			said++;
	printf("console_say=%ld of %ld (%s)\n", said, count, said ? "EINVAL" : ename(e));
	fflush(stdout);
	return said == count ? 0 : 1;
}
