/* SPDX-License-Identifier: MIT */
#include "sysfilter.h"

#include <errno.h>
#include <fcntl.h>
#include <linux/audit.h>
#include <linux/sched.h>
#include <linux/seccomp.h>
#include <sched.h>
#include <seccomp.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <stdbool.h>
#include <sys/syscall.h>
#include <linux/netlink.h>
#include <unistd.h>

#include "util.h"

/* Denied with EPERM whatever their arguments. */
const char *const aj_seccomp_denied[] = {
    /* mounts and root changes */
    "mount",
    "umount",
    "umount2",
    "pivot_root",
    "chroot",
    "open_tree",
    "move_mount",
    "fsopen",
    "fsconfig",
    "fsmount",
    "fspick",
    "mount_setattr",
    /* namespaces */
    "unshare",
    "setns",
    /* other processes' memory */
    "ptrace",
    "process_vm_readv",
    "process_vm_writev",
    "kcmp",
    "pidfd_getfd",
    /* kernel attack surface */
    "bpf",
    "perf_event_open",
    "userfaultfd",
    "keyctl",
    "add_key",
    "request_key",
    "kexec_load",
    "kexec_file_load",
    "init_module",
    "finit_module",
    "delete_module",
    "create_module",
    "open_by_handle_at",
    "name_to_handle_at",
    "io_uring_setup",
    "io_uring_enter",
    "io_uring_register",
    "lookup_dcookie",
    "nfsservctl",
    "uselib",
    "_sysctl",
    "iopl",
    "ioperm",
    "vhangup",
    "get_kernel_syms",
    "query_module",
    "fanotify_init",
    "quotactl",
    "quotactl_fd",
    "syslog",
    "acct",
    "reboot",
    "swapon",
    "swapoff",
    /* time */
    "settimeofday",
    "clock_settime",
    "clock_adjtime",
    "adjtimex",
    "stime",
    /* other processes' page placement */
    "migrate_pages",
    "move_pages",
    NULL,
};

static int deny(scmp_filter_ctx ctx, const char *name)
{
	int nr = seccomp_syscall_resolve_name(name);
	if (nr == __NR_SCMP_ERROR)
		return 0; /* unknown on this architecture: nothing to deny */
	int r = seccomp_rule_add(ctx, SCMP_ACT_ERRNO(EPERM), nr, 0);
	return r == -EEXIST ? 0 : r;
}

static int add_setid_rules(scmp_filter_ctx ctx);

static int add_arg_rules(scmp_filter_ctx ctx)
{
	int r = 0;
	/* clone with any namespace flag; clone3 hides its flags: ENOSYS makes
	 * libc fall back to clone, which we can inspect. */
	static const unsigned long ns_flags[] = {CLONE_NEWUSER,	  CLONE_NEWNS,	CLONE_NEWPID,
						 CLONE_NEWNET,	  CLONE_NEWIPC, CLONE_NEWUTS,
						 CLONE_NEWCGROUP, CLONE_NEWTIME};
	for (size_t i = 0; r == 0 && i < AJ_ARRAY_SIZE(ns_flags); i++)
		r = seccomp_rule_add(ctx, SCMP_ACT_ERRNO(EPERM), SCMP_SYS(clone), 1,
				     SCMP_A0(SCMP_CMP_MASKED_EQ, ns_flags[i], ns_flags[i]));
	if (r == 0)
		r = seccomp_rule_add(ctx, SCMP_ACT_ERRNO(ENOSYS), SCMP_SYS(clone3), 0);
	/* terminal injection: compare the low 32 bits only, so high bits set
	 * in the argument cannot dodge the rule (the kernel ignores them) */
	if (r == 0)
		r = seccomp_rule_add(ctx, SCMP_ACT_ERRNO(EPERM), SCMP_SYS(ioctl), 1,
				     SCMP_A1(SCMP_CMP_MASKED_EQ, 0xffffffffUL, TIOCSTI));
	if (r == 0)
		r = seccomp_rule_add(ctx, SCMP_ACT_ERRNO(EPERM), SCMP_SYS(ioctl), 1,
				     SCMP_A1(SCMP_CMP_MASKED_EQ, 0xffffffffUL, TIOCLINUX));
	/* socket families: no vsock, no packet sockets, netlink only ROUTE */
	static const int families[] = {AF_VSOCK, AF_PACKET};
	for (size_t i = 0; r == 0 && i < AJ_ARRAY_SIZE(families); i++)
		r = seccomp_rule_add(
		    ctx, SCMP_ACT_ERRNO(EPERM), SCMP_SYS(socket), 1,
		    SCMP_A0(SCMP_CMP_MASKED_EQ, 0xffffffffUL, (unsigned)families[i]));
	if (r == 0)
		r = seccomp_rule_add(ctx, SCMP_ACT_ERRNO(EPERM), SCMP_SYS(socket), 2,
				     SCMP_A0(SCMP_CMP_MASKED_EQ, 0xffffffffUL, AF_NETLINK),
				     SCMP_A2(SCMP_CMP_NE, NETLINK_ROUTE));
	if (r == 0)
		r = add_setid_rules(ctx);
	return r;
}

/* No setuid/setgid file may be made: the workspace is idmapped to its
 * owner, so such a file would be setuid to that owner (root, often) on the
 * host. Every call that sets a file mode is checked on the mode argument;
 * openat2 hides its mode in memory and fails with ENOSYS (libc never uses
 * it for open()); so does fchmodat2 (libc falls back to fchmodat). */
static int add_setid_rules(scmp_filter_ctx ctx)
{
	static const struct {
		const char *name;
		unsigned arg;
		bool creat_only; /* the mode counts only with O_CREAT/O_TMPFILE */
	} calls[] = {{"chmod", 1, false}, {"fchmod", 1, false}, {"fchmodat", 2, false},
		     {"creat", 1, false}, {"mknod", 1, false},	{"mknodat", 2, false},
		     {"open", 2, true},	  {"openat", 3, true}};
	static const unsigned long bits[] = {S_ISUID, S_ISGID};
	int r = 0;
	for (size_t i = 0; r == 0 && i < AJ_ARRAY_SIZE(calls); i++) {
		int nr = seccomp_syscall_resolve_name(calls[i].name);
		if (nr == __NR_SCMP_ERROR)
			continue;
		for (size_t b = 0; r == 0 && b < AJ_ARRAY_SIZE(bits); b++) {
			struct scmp_arg_cmp mode = {.arg = calls[i].arg,
						    .op = SCMP_CMP_MASKED_EQ,
						    .datum_a = bits[b],
						    .datum_b = bits[b]};
			if (!calls[i].creat_only) {
				r = seccomp_rule_add_array(ctx, SCMP_ACT_ERRNO(EPERM), nr, 1,
							   &mode);
				continue;
			}
			/* open/openat: only when creating (O_CREAT, or O_TMPFILE
			 * whose bits include O_DIRECTORY) */
			static const unsigned long creat_flags[] = {O_CREAT, __O_TMPFILE};
			unsigned flags_arg = calls[i].arg - 1;
			for (size_t f = 0; r == 0 && f < AJ_ARRAY_SIZE(creat_flags); f++) {
				struct scmp_arg_cmp cmp[2] = {{.arg = flags_arg,
							       .op = SCMP_CMP_MASKED_EQ,
							       .datum_a = creat_flags[f],
							       .datum_b = creat_flags[f]},
							      mode};
				r = seccomp_rule_add_array(ctx, SCMP_ACT_ERRNO(EPERM), nr, 2, cmp);
			}
		}
	}
	if (r == 0)
		r = seccomp_rule_add(ctx, SCMP_ACT_ERRNO(ENOSYS), SCMP_SYS(openat2), 0);
	if (r == 0 && seccomp_syscall_resolve_name("fchmodat2") != __NR_SCMP_ERROR)
		r = seccomp_rule_add(ctx, SCMP_ACT_ERRNO(ENOSYS),
				     seccomp_syscall_resolve_name("fchmodat2"), 0);
	if (r == 0 && seccomp_syscall_resolve_name("fchmodat2") == __NR_SCMP_ERROR)
		/* libseccomp older than the syscall: x86_64 number 452 */
		r = seccomp_rule_add(ctx, SCMP_ACT_ERRNO(ENOSYS), 452, 0);
	return r;
}

/* personality(): only PER_LINUX (0) and the query (0xffffffff). libseccomp
 * cannot test one argument against two values in one rule, so this small
 * hand-written check comes first in the same program: its denial returns,
 * anything else falls through to libseccomp's program, whose first
 * instruction takes the place of the RET ALLOW the jumps below lead to
 * (one filter: each filter loaded costs ~0.15 ms here, docs/performance.md
 * round 9; a foreign architecture falls through to the main program's
 * kill). */
static const struct sock_filter personality_check[] = {
    BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, arch)),
    BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, AUDIT_ARCH_X86_64, 0, 6),
    BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, nr)),
    BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, __NR_personality, 0, 4),
    BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, args[0])),
    BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, 0, 2, 0),
    BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, 0xffffffffU, 1, 0),
    BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ERRNO | (EPERM & SECCOMP_RET_DATA)),
    /* the main program follows: the jumps above lead to its start */
};

/* out = the personality check (when with_check) and insns[0..n) after it */
static int copy_bpf(const struct sock_filter *insns, size_t n, bool with_check, aj_bpf *out,
		    aj_error *err)
{
	size_t pre = with_check ? AJ_ARRAY_SIZE(personality_check) : 0;
	if (n + pre > BPF_MAXINSNS)
		return aj_err(err, E2BIG, "the seccomp filter has %zu instructions (at most %d)",
			      n + pre, BPF_MAXINSNS);
	out->insns = calloc(n + pre, sizeof(struct sock_filter));
	if (!out->insns)
		return aj_err(err, ENOMEM, "seccomp filter");
	memcpy(out->insns, personality_check, pre * sizeof(struct sock_filter));
	memcpy(out->insns + pre, insns, n * sizeof(struct sock_filter));
	out->len = n + pre;
	return 0;
}

static int export_bpf(scmp_filter_ctx ctx, aj_bpf *out, aj_error *err)
{
	_cleanup_close_ int fd = memfd_create("agentjail-seccomp", MFD_CLOEXEC);
	if (fd < 0)
		return aj_err(err, errno, "memfd_create");
	int r = seccomp_export_bpf(ctx, fd);
	if (r < 0)
		return aj_err(err, -r, "cannot export the seccomp filter");
	struct stat st;
	if (fstat(fd, &st) < 0 || st.st_size <= 0 || st.st_size % sizeof(struct sock_filter))
		return aj_err(err, EINVAL, "seccomp filter of unexpected size");
	size_t n = (size_t)st.st_size / sizeof(struct sock_filter);
	_cleanup_free_ struct sock_filter *insns = calloc(n, sizeof(struct sock_filter));
	if (!insns)
		return aj_err(err, ENOMEM, "seccomp filter");
	if (pread(fd, insns, (size_t)st.st_size, 0) != st.st_size)
		return aj_err(err, EIO, "cannot read back the seccomp filter");
	return copy_bpf(insns, n, false, out, err);
}

/* A filter that allows all but what rules(ctx) adds; non-native ABIs
 * (i386 int $0x80, x32) kill the process. */
static int compile_rules(aj_bpf *out, int (*rules)(scmp_filter_ctx), const char *what,
			 aj_error *err)
{
	memset(out, 0, sizeof(*out));
	scmp_filter_ctx ctx = seccomp_init(SCMP_ACT_ALLOW);
	if (!ctx)
		return aj_err(err, ENOMEM, "seccomp_init");
	int r = seccomp_attr_set(ctx, SCMP_FLTATR_ACT_BADARCH, SCMP_ACT_KILL_PROCESS);
	if (r == 0)
		r = seccomp_attr_set(ctx, SCMP_FLTATR_CTL_NNP, 0);
	if (r == 0)
		r = rules(ctx);
	if (r < 0) {
		seccomp_release(ctx);
		return aj_err(err, -r, "cannot build the %s", what);
	}
	r = export_bpf(ctx, out, err);
	seccomp_release(ctx);
	return r;
}

static int default_rules(scmp_filter_ctx ctx)
{
	int r = 0;
	for (size_t i = 0; r == 0 && aj_seccomp_denied[i]; i++)
		r = deny(ctx, aj_seccomp_denied[i]);
	return r == 0 ? add_arg_rules(ctx) : r;
}

int aj_seccomp_compile_default(aj_bpf *out, aj_error *err)
{
	return compile_rules(out, default_rules, "seccomp filter", err);
}

int aj_seccomp_compile_setid(aj_bpf *out, aj_error *err)
{
	return compile_rules(out, add_setid_rules, "setid filter", err);
}

static int compile_main(const aj_policy *p, aj_bpf *out, aj_error *err);

int aj_seccomp_compile(const aj_policy *p, aj_bpf *out, aj_error *err)
{
	int r = compile_main(p, out, err);
	if (r < 0 || !p->seccomp_stack)
		return r;
	void *pctx = NULL;
	aj_bpf st;
	memset(&st, 0, sizeof(st));
	r = aj_seccomp_profile_parse(p->seccomp_stack, strlen(p->seccomp_stack),
				     "(the bundle's linux.seccomp)", &pctx, err);
	if (r == 0) {
		r = export_bpf((scmp_filter_ctx)pctx, &st, err);
		seccomp_release((scmp_filter_ctx)pctx);
	}
	if (r < 0) {
		aj_bpf_free(out);
		return r;
	}
	out->stack = st.insns;
	out->stack_len = st.len;
	return 0;
}

static int compile_main(const aj_policy *p, aj_bpf *out, aj_error *err)
{
	memset(out, 0, sizeof(*out));
	if (aj_policy_has_profile(p)) {
		void *pctx = NULL;
		/* the API's inline one is text already: no file is read */
		int pr =
		    p->seccomp_inline
			? aj_seccomp_profile_parse(p->seccomp_inline, strlen(p->seccomp_inline),
						   "(the policy's)", &pctx, err)
			: aj_seccomp_profile_load(p->seccomp_profile, &pctx, err);
		if (pr < 0)
			return pr;
		pr = export_bpf((scmp_filter_ctx)pctx, out, err);
		seccomp_release((scmp_filter_ctx)pctx);
		out->replaced = true;
		return pr;
	}
	/* The default profile was compiled by this very code at build time
	 * (src/tools/seccomp_gen.c; tests/unit/test_seccomp.c checks that
	 * both agree): compiling it again would cost every run ~0.7 ms. */
	if (aj_seccomp_prebuilt_len)
		return copy_bpf(aj_seccomp_prebuilt, aj_seccomp_prebuilt_len, true, out, err);
	aj_bpf main_prog;
	int r = aj_seccomp_compile_default(&main_prog, err);
	if (r == 0)
		r = copy_bpf(main_prog.insns, main_prog.len, true, out, err);
	aj_bpf_free(&main_prog);
	return r;
}

int aj_seccomp_load(const aj_bpf *bpf, aj_error *err)
{
	struct sock_fprog prog = {.len = (unsigned short)bpf->len, .filter = bpf->insns};
	if (prctl(PR_SET_SECCOMP, SECCOMP_MODE_FILTER, &prog, 0, 0) < 0)
		return aj_err(err, errno, "cannot load the seccomp filter");
	return 0;
}

int aj_seccomp_load_stack(const aj_bpf *bpf, aj_error *err)
{
	struct sock_fprog prog = {.len = (unsigned short)bpf->stack_len, .filter = bpf->stack};
	if (bpf->stack_len && prctl(PR_SET_SECCOMP, SECCOMP_MODE_FILTER, &prog, 0, 0) < 0)
		return aj_err(err, errno, "cannot load the bundle's seccomp filter");
	return 0;
}

void aj_bpf_free(aj_bpf *bpf)
{
	free(bpf->insns);
	bpf->insns = NULL;
	bpf->len = 0;
	free(bpf->stack);
	bpf->stack = NULL;
	bpf->stack_len = 0;
}
