/* SPDX-License-Identifier: MIT */
/* agentjail doctor: real probes of the kernel features a sandbox needs.
 *
 * Probes with side effects run in a forked child inside its own user, mount
 * and network namespaces, so whatever it mounts or creates vanishes when it
 * exits. The parent writes the child's uid/gid maps (as the runtime does)
 * and, as root, tries an idmapped detached mount with the child's user
 * namespace. The only thing done in the host's namespaces is mkdir+rmdir of
 * a uniquely named cgroup below our own cgroup. Nothing is printed. */
#include "doctor.h"

#include <errno.h>
#include <fcntl.h>
#include <grp.h>
#include <linux/filter.h>
#include <linux/if_link.h>
#include <linux/landlock.h>
#include <linux/netlink.h>
#include <linux/rtnetlink.h>
#include <linux/veth.h>
#include <poll.h>
#include <sched.h>
#include <seccomp.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/utsname.h>
#include <sys/wait.h>
#include <unistd.h>

#include "cgroup.h"
#include "userns.h"
#include "util.h"

/* <linux/mount.h> clashes with glibc >= 2.36 <sys/mount.h>: own copies. */
#ifndef SYS_open_tree
#define SYS_open_tree 428
#endif
#ifndef SYS_mount_setattr
#define SYS_mount_setattr 442
#endif
#ifndef SYS_landlock_create_ruleset
#define SYS_landlock_create_ruleset 444
#endif
#define AJ_OPEN_TREE_CLONE 1
#define AJ_MOUNT_ATTR_IDMAP 0x00100000ULL
struct aj_mount_attr {
	uint64_t attr_set, attr_clr, propagation, userns_fd;
};

/* As root, map every uid slot the runtime may hand out (see userns.h). */
#define HIGH_UID AJ_UID_BASE
#define HIGH_COUNT (AJ_UID_SLOTS * AJ_UID_RANGE)
#define PROBE_TIMEOUT_MS 10000
#define NOT_RUN (-1)
#define OVL_OPTS "lowerdir=/tmp/l,upperdir=/tmp/u,workdir=/tmp/w"
#define OVL_UX OVL_OPTS ",userxattr"

enum { NS_MOUNT, NS_PID, NS_IPC, NS_UTS, NS_NET, NS_CGROUP, NS_COUNT };
static const struct {
	const char *name;
	int flag;
} ns_table[NS_COUNT] = {
    {"mount", CLONE_NEWNS}, {"pid", CLONE_NEWPID}, {"ipc", CLONE_NEWIPC},
    {"uts", CLONE_NEWUTS},  {"net", CLONE_NEWNET}, {"cgroup", CLONE_NEWCGROUP},
};

/* What the probes saw. Each int: 0 ok, a positive errno, or NOT_RUN. */
struct probe {
	/* filled by the child */
	int userns, setid, ns[NS_COUNT];
	int tmpfs, overlay, overlay_ux, pivot, veth, nnp, seccomp;
	/* filled by the parent */
	int map, idmap;
	const char *userns_step, *map_step, *idmap_step;
};

static const char *errname(int e)
{
	const char *n = strerrorname_np(e);

	return n ? n : "unknown error";
}

static void __attribute__((format(printf, 3, 4)))
append(char *buf, size_t size, const char *fmt, ...)
{
	size_t len = strnlen(buf, size);
	va_list ap;

	if (len + 1 >= size)
		return;
	va_start(ap, fmt);
	vsnprintf(buf + len, size - len, fmt, ap);
	va_end(ap);
}

#define detail(c, ...) append((c)->detail, sizeof((c)->detail), __VA_ARGS__)

/* Raise c's status to at least st and add a fix sentence. */
#define verdict(c, st, ...)                                                                        \
	do {                                                                                       \
		if ((st) > (c)->status)                                                            \
			(c)->status = (st);                                                        \
		if ((c)->fix[0])                                                                   \
			append((c)->fix, sizeof((c)->fix), " ");                                   \
		append((c)->fix, sizeof((c)->fix), __VA_ARGS__);                                   \
	} while (0)

static void detail_result(aj_check *c, const char *what, int err)
{
	if (err == NOT_RUN)
		detail(c, "; %s: not tested", what);
	else
		detail(c, "; %s: %s", what, err ? errname(err) : "ok");
}

/* Whether tok occurs in list as a whole word (separated by , space tab \n). */
static bool has_token(const char *list, const char *tok)
{
	size_t n = strlen(tok);

	if (!n)
		return false;
	for (const char *p = list; (p = strstr(p, tok)); p += n)
		if ((p == list || strchr(", \t\n", p[-1])) && strchr(", \t\n", p[n]))
			return true;
	return false;
}

/* First line of a small file into buf ("" if unreadable). */
static int read_line(const char *path, char *buf, size_t size)
{
	_cleanup_free_ char *s = NULL;
	int r = aj_read_file(path, &s, NULL);

	snprintf(buf, size, "%.*s", r < 0 ? 0 : (int)strcspn(s, "\n"), r < 0 ? "" : s);
	return r;
}

static long read_long(const char *path)
{
	char buf[32];

	if (read_line(path, buf, sizeof(buf)) < 0 || !buf[0])
		return -1;
	return strtol(buf, NULL, 10);
}

/* The probe socket is SOCK_SEQPACKET: one message per call. */
static int send_msg(int fd, const void *buf, size_t len)
{
	ssize_t n = send(fd, buf, len, MSG_NOSIGNAL);

	return n == (ssize_t)len ? 0 : n < 0 ? -errno : -EPIPE;
}

static int recv_msg(int fd, void *buf, size_t len)
{
	struct pollfd pfd = {.fd = fd, .events = POLLIN};
	ssize_t n;
	int r;

	while ((r = poll(&pfd, 1, PROBE_TIMEOUT_MS)) < 0 && errno == EINTR)
		;
	if (r <= 0)
		return r ? -errno : -ETIMEDOUT;
	n = recv(fd, buf, len, 0);
	return n == (ssize_t)len ? 0 : n < 0 ? -errno : -EPIPE;
}

/* ---- probe child: runs in fresh namespaces, only syscalls ---- */

static struct rtattr *nl_attr(struct nlmsghdr *nh, size_t cap, unsigned short type,
			      const void *data, size_t len)
{
	size_t off = NLMSG_ALIGN(nh->nlmsg_len);
	struct rtattr *rta = (struct rtattr *)((char *)nh + off);

	if (off + RTA_SPACE(len) > cap)
		return NULL;
	rta->rta_type = type;
	rta->rta_len = (unsigned short)RTA_LENGTH(len);
	if (len)
		memcpy(RTA_DATA(rta), data, len);
	nh->nlmsg_len = (uint32_t)(off + RTA_SPACE(len));
	return rta;
}

static void nl_end(struct nlmsghdr *nh, struct rtattr *nest)
{
	nest->rta_len = (unsigned short)((char *)nh + nh->nlmsg_len - (char *)nest);
}

/* Create a veth pair over rtnetlink in the (private) current netns. */
static int probe_veth(void)
{
	union {
		struct nlmsghdr nh;
		char buf[512];
	} req, ack;
	struct ifinfomsg ifi = {.ifi_family = AF_UNSPEC};
	struct sockaddr_nl kernel = {.nl_family = AF_NETLINK};
	struct rtattr *info, *data, *peer;
	const size_t cap = sizeof(req);
	_cleanup_close_ int fd = -1;
	ssize_t n;

	memset(&req, 0, sizeof(req));
	req.nh.nlmsg_len = NLMSG_LENGTH(sizeof(ifi));
	req.nh.nlmsg_type = RTM_NEWLINK;
	req.nh.nlmsg_flags = NLM_F_REQUEST | NLM_F_ACK | NLM_F_CREATE | NLM_F_EXCL;
	req.nh.nlmsg_seq = 1;
	memcpy(NLMSG_DATA(&req.nh), &ifi, sizeof(ifi));
	if (!nl_attr(&req.nh, cap, IFLA_IFNAME, "ajdoc0", 7) ||
	    !(info = nl_attr(&req.nh, cap, IFLA_LINKINFO, NULL, 0)) ||
	    !nl_attr(&req.nh, cap, IFLA_INFO_KIND, "veth", 5) ||
	    !(data = nl_attr(&req.nh, cap, IFLA_INFO_DATA, NULL, 0)) ||
	    !(peer = nl_attr(&req.nh, cap, VETH_INFO_PEER, &ifi, sizeof(ifi))) ||
	    !nl_attr(&req.nh, cap, IFLA_IFNAME, "ajdoc1", 7))
		return ENOBUFS;
	nl_end(&req.nh, peer);
	nl_end(&req.nh, data);
	nl_end(&req.nh, info);

	fd = socket(AF_NETLINK, SOCK_RAW | SOCK_CLOEXEC, NETLINK_ROUTE);
	if (fd < 0)
		return errno;
	if (sendto(fd, &req, req.nh.nlmsg_len, 0, (struct sockaddr *)&kernel, sizeof(kernel)) < 0)
		return errno;
	n = recv(fd, &ack, sizeof(ack), 0);
	if (n < 0)
		return errno;
	if (n < (ssize_t)NLMSG_LENGTH(sizeof(struct nlmsgerr)) || ack.nh.nlmsg_type != NLMSG_ERROR)
		return EPROTO;
	return -((struct nlmsgerr *)NLMSG_DATA(&ack.nh))->error;
}

/* tmpfs, overlay and pivot_root inside the child's private mount ns. */
static void probe_mounts(struct probe *r)
{
	static const char *const dirs[] = {"/tmp/l", "/tmp/u", "/tmp/w", "/tmp/m"};

	if (mount(NULL, "/", NULL, MS_REC | MS_PRIVATE, NULL) ||
	    mount("tmpfs", "/tmp", "tmpfs", MS_NOSUID | MS_NODEV, "size=1m,mode=0700")) {
		r->tmpfs = errno;
		return;
	}
	r->tmpfs = 0;
	r->overlay = 0;
	for (size_t i = 0; i < AJ_ARRAY_SIZE(dirs) && !r->overlay; i++)
		r->overlay = mkdir(dirs[i], 0755) ? errno : 0;
	if (!r->overlay) {
		r->overlay = mount("overlay", "/tmp/m", "overlay", 0, OVL_OPTS) ? errno : 0;
		if (r->overlay) /* some setups need user.* xattrs in a userns */
			r->overlay_ux =
			    mount("overlay", "/tmp/m", "overlay", 0, OVL_UX) ? errno : 0;
	}
	if (chdir("/tmp") || syscall(SYS_pivot_root, ".", ".") || umount2(".", MNT_DETACH))
		r->pivot = errno;
	else
		r->pivot = 0;
}

static void probe_nnp_seccomp(struct probe *r)
{
	struct sock_filter allow = BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW);
	struct sock_fprog prog = {.len = 1, .filter = &allow};

	r->nnp = prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) ? errno : 0;
	r->seccomp = syscall(SYS_seccomp, SECCOMP_SET_MODE_FILTER, 0, &prog) ? errno : 0;
}

static void probe_init(struct probe *p)
{
	memset(p, 0xff, offsetof(struct probe, userns_step)); /* ints: NOT_RUN */
	p->userns_step = "unshare(CLONE_NEWUSER)";
	p->map_step = p->idmap_step = NULL;
}

static __attribute__((noreturn)) void probe_child(int sock)
{
	struct probe r;
	char mapped = 0;

	probe_init(&r);
	prctl(PR_SET_PDEATHSIG, SIGKILL, 0, 0, 0);
	r.userns = unshare(CLONE_NEWUSER) ? errno : 0;
	if (send_msg(sock, &r.userns, sizeof(r.userns)))
		_exit(1);
	/* the parent writes our uid/gid maps, then says whether it could (always
	 * read the reply: unread data would turn our exit into ECONNRESET) */
	if (recv_msg(sock, &mapped, 1) == 0 && r.userns == 0) {
		if (mapped) {
			r.setid = setresgid(0, 0, 0) ? errno : 0;
			(void)setgroups(0, NULL); /* EPERM with setgroups=deny */
			if (!r.setid)
				r.setid = setresuid(0, 0, 0) ? errno : 0;
		}
		for (int i = 0; i < NS_COUNT; i++)
			r.ns[i] = unshare(ns_table[i].flag) ? errno : 0;
		if (r.ns[NS_NET] == 0)
			r.veth = probe_veth();
		if (r.ns[NS_MOUNT] == 0)
			probe_mounts(&r);
	}
	probe_nnp_seccomp(&r);
	_exit(send_msg(sock, &r, sizeof(r)) ? 1 : 0);
}

/* ---- parent side of the probe ---- */

static int put_file(const char *path, const char *s)
{
	_cleanup_close_ int fd = open(path, O_WRONLY | O_CLOEXEC);
	ssize_t len = (ssize_t)strlen(s);

	if (fd < 0)
		return errno;
	errno = 0;
	if (write(fd, s, (size_t)len) != len)
		return errno ? errno : EIO;
	return 0;
}

/* Root maps 0.. to every uid slot; a user maps 0 to itself only. */
static void write_maps(pid_t pid, struct probe *p)
{
	bool root = geteuid() == 0;
	char path[64], map[64];

	snprintf(path, sizeof(path), "/proc/%d/setgroups", (int)pid);
	p->map_step = "setgroups";
	if (!root && (p->map = put_file(path, "deny")))
		return;
	if (root)
		snprintf(map, sizeof(map), "0 %u %u\n", HIGH_UID, HIGH_COUNT);
	else
		snprintf(map, sizeof(map), "0 %u 1\n", (unsigned)geteuid());
	snprintf(path, sizeof(path), "/proc/%d/uid_map", (int)pid);
	p->map_step = "uid_map";
	if ((p->map = put_file(path, map)))
		return;
	if (!root)
		snprintf(map, sizeof(map), "0 %u 1\n", (unsigned)getegid());
	snprintf(path, sizeof(path), "/proc/%d/gid_map", (int)pid);
	p->map_step = "gid_map";
	p->map = put_file(path, map);
}

/* Clone /tmp as a detached mount and idmap it with the child's userns.
 * Closing the fd dissolves the detached mount. */
static void probe_idmap(pid_t pid, struct probe *p)
{
	struct aj_mount_attr attr = {.attr_set = AJ_MOUNT_ATTR_IDMAP};
	_cleanup_close_ int ns = -1, tree = -1;
	char path[64];

	snprintf(path, sizeof(path), "/proc/%d/ns/user", (int)pid);
	p->idmap_step = "open user namespace";
	ns = open(path, O_RDONLY | O_CLOEXEC);
	if (ns < 0) {
		p->idmap = errno;
		return;
	}
	p->idmap_step = "open_tree(/tmp, OPEN_TREE_CLONE)";
	tree = (int)syscall(SYS_open_tree, AT_FDCWD, "/tmp", AJ_OPEN_TREE_CLONE | O_CLOEXEC);
	if (tree < 0) {
		p->idmap = errno;
		return;
	}
	attr.userns_fd = (uint64_t)ns;
	p->idmap_step = "mount_setattr(MOUNT_ATTR_IDMAP) on /tmp";
	p->idmap =
	    syscall(SYS_mount_setattr, tree, "", AT_EMPTY_PATH, &attr, sizeof(attr)) ? errno : 0;
}

/* Parent side of the conversation with probe_child(). */
static int probe_talk(pid_t pid, int fd, struct probe *p)
{
	struct probe got;
	char mapped;
	int r = recv_msg(fd, &p->userns, sizeof(p->userns));

	if (r < 0)
		return r;
	if (p->userns == 0) {
		write_maps(pid, p);
		if (p->map == 0 && geteuid() == 0)
			probe_idmap(pid, p);
	}
	mapped = p->map == 0;
	if ((r = send_msg(fd, &mapped, 1)) < 0 || (r = recv_msg(fd, &got, sizeof(got))) < 0)
		return r;
	memcpy(p, &got, offsetof(struct probe, map)); /* the child's fields */
	return 0;
}

static void run_probe(struct probe *p)
{
	_cleanup_close_ int fd = -1;
	int sv[2], r;
	pid_t pid;

	probe_init(p);
	if (socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, sv)) {
		p->userns = errno;
		p->userns_step = "socketpair";
		return;
	}
	pid = fork();
	if (pid == 0) {
		close(sv[0]);
		probe_child(sv[1]);
	}
	r = pid < 0 ? -errno : 0;
	fd = sv[0];
	close(sv[1]);
	if (pid > 0 && (r = probe_talk(pid, fd, p)) < 0)
		kill(pid, SIGKILL);
	if (r < 0) {
		p->userns = -r;
		p->userns_step = pid < 0 ? "fork" : "probe child";
	}
	while (pid > 0 && waitpid(pid, NULL, 0) < 0 && errno == EINTR)
		;
}

/* ---- checks ---- */

static void check_kernel(aj_check *c, const struct probe *p)
{
	unsigned major = 0, minor = 0;
	struct utsname u;

	c->essential = true;
	if (uname(&u) == 0) {
		sscanf(u.release, "%u.%u", &major, &minor);
		detail(c, "Linux %s %s", u.release, u.machine);
	}
	if (major < 3 || (major == 3 && minor < 5))
		verdict(c, AJ_CHECK_FAIL, "agentjail needs Linux >= 3.5 (>= 5.13 for Landlock).");
	detail_result(c, "no_new_privs", p->nnp);
	detail_result(c, "pivot_root in a user+mount namespace", p->pivot);
	if (p->nnp > 0)
		verdict(c, AJ_CHECK_FAIL, "prctl(PR_SET_NO_NEW_PRIVS) must work.");
	if (p->pivot > 0)
		verdict(c, AJ_CHECK_FAIL,
			"pivot_root fails when / is an initramfs; boot with a real root fs.");
}

static void check_userns(aj_check *c, const struct probe *p)
{
	long max = read_long("/proc/sys/user/max_user_namespaces");
	long userns_clone = read_long("/proc/sys/kernel/unprivileged_userns_clone");
	long aa = read_long("/proc/sys/kernel/apparmor_restrict_unprivileged_userns");

	c->essential = true;
	detail(c, "max_user_namespaces=%ld", max);
	if (userns_clone >= 0)
		detail(c, ", unprivileged_userns_clone=%ld", userns_clone);
	if (aa >= 0)
		detail(c, ", apparmor_restrict_unprivileged_userns=%ld", aa);
	if (p->userns) {
		detail(c, "; %s: %s", p->userns_step, errname(p->userns));
		if (max == 0)
			verdict(c, AJ_CHECK_FAIL, "Run: sysctl -w user.max_user_namespaces=15000.");
		if (userns_clone == 0 && geteuid() != 0)
			verdict(c, AJ_CHECK_FAIL,
				"Run: sysctl -w kernel.unprivileged_userns_clone=1.");
		if (aa > 0 && geteuid() != 0)
			verdict(c, AJ_CHECK_FAIL,
				"Run: sysctl -w kernel.apparmor_restrict_unprivileged_userns=0 (or "
				"give agentjail an AppArmor profile that allows userns).");
		if (!c->fix[0])
			verdict(c, AJ_CHECK_FAIL,
				"The kernel needs CONFIG_USER_NS; in a container, its seccomp/LSM "
				"profile must allow unshare(CLONE_NEWUSER).");
		return;
	}
	detail(c, "; unshare(CLONE_NEWUSER): ok");
	if (p->map) {
		detail(c, "; writing %s: %s", p->map_step, errname(p->map));
		if (geteuid() == 0)
			verdict(c, AJ_CHECK_FAIL,
				"As root, sandboxes map to host uids %u-%u: the caller's user "
				"namespace must contain that range (see /proc/self/uid_map).",
				HIGH_UID, HIGH_UID + HIGH_COUNT - 1);
		else
			verdict(c, AJ_CHECK_FAIL,
				"An unprivileged user must be able to map its own uid; check LSM "
				"policy.");
		return;
	}
	if (geteuid() == 0)
		detail(c, "; mapped 0-%u to host %u-%u", HIGH_COUNT - 1, HIGH_UID,
		       HIGH_UID + HIGH_COUNT - 1);
	else
		detail(c, "; mapped 0 to host uid %u (single uid)", (unsigned)geteuid());
	detail_result(c, "setresuid(0) inside", p->setid);
	if (p->setid > 0)
		verdict(c, AJ_CHECK_FAIL, "Becoming root inside the new user namespace must work.");
}

static void check_namespaces(aj_check *c, const struct probe *p)
{
	int bad = 0;

	c->essential = true;
	for (int i = 0; i < NS_COUNT; i++) {
		const char *res = p->ns[i] == NOT_RUN ? "not tested"
				  : p->ns[i]	      ? errname(p->ns[i])
						      : "ok";

		detail(c, "%s%s %s", i ? ", " : "", ns_table[i].name, res);
		bad += p->ns[i] != 0;
	}
	if (p->userns) {
		verdict(c, AJ_CHECK_FAIL, "Needs a working user namespace (see above).");
		return;
	}
	if (bad)
		verdict(c, AJ_CHECK_FAIL,
			"Every namespace type must be creatable inside a user namespace: enable "
			"CONFIG_{USER,PID,NET,IPC,UTS,CGROUP}_NS and check LSM/seccomp policy.");
	detail_result(c, "tmpfs mount inside", p->tmpfs);
	if (p->tmpfs > 0)
		verdict(
		    c, AJ_CHECK_FAIL,
		    "Mounting tmpfs inside a user+mount namespace must work (check LSM policy).");
}

/* Where cgroup.c would put a sandbox's cgroup for one controller. */
struct cg_ctrl {
	const char *name;
	int version;  /* 1 or 2; 0 when the controller is unavailable */
	bool at_root; /* our own cgroup is the hierarchy's root */
	char dir[2 * PATH_MAX];
	char avail[256]; /* v2: our cgroup.controllers */
	char sub[256];	 /* v2: our cgroup.subtree_control */
};

/* ctrl's v1 hierarchy, else v2 if our cgroup there offers it; "" = v2. */
static void cg_resolve(struct cg_ctrl *c, const char *mi, const char *pc)
{
	char path[sizeof(c->dir) + 32];
	aj_cgroup_hier h;
	bool v1 = c->name[0] && aj_cgroup_find(mi, pc, c->name, &h) == 0;

	if (!v1 && aj_cgroup_find(mi, pc, "", &h) < 0)
		return;
	c->at_root = !strcmp(h.own, "/");
	snprintf(c->dir, sizeof(c->dir), "%s%s", h.mount, c->at_root ? "" : h.own);
	if (!v1) {
		snprintf(path, sizeof(path), "%s/cgroup.controllers", c->dir);
		read_line(path, c->avail, sizeof(c->avail));
		snprintf(path, sizeof(path), "%s/cgroup.subtree_control", c->dir);
		read_line(path, c->sub, sizeof(c->sub));
		if (c->name[0] && !has_token(c->avail, c->name))
			return;
	}
	c->version = v1 ? 1 : 2;
}

/* mkdir + rmdir a uniquely named child of our own cgroup. */
static int cg_try_mkdir(const char *dir)
{
	char path[2 * PATH_MAX + 32];

	snprintf(path, sizeof(path), "%s/agentjail-doctor-%d", dir, (int)getpid());
	if (mkdir(path, 0755))
		return errno;
	return rmdir(path) ? errno : 0; /* an empty new cgroup always goes */
}

static void check_cgroups(aj_check *c, const struct probe *p)
{
	struct cg_ctrl ctl[3] = {{.name = "memory"}, {.name = "pids"}, {.name = "cpu"}};
	struct cg_ctrl v2 = {.name = ""};
	_cleanup_free_ char *mi = NULL, *pc = NULL;
	char missing[32] = "";
	int err[3], n_v1 = 0, denied = 0;

	aj_read_file("/proc/self/mountinfo", &mi, NULL);
	aj_read_file("/proc/self/cgroup", &pc, NULL);
	for (size_t i = 0; i < 3; i++) {
		cg_resolve(&ctl[i], mi, pc);
		n_v1 += ctl[i].version == 1;
	}
	cg_resolve(&v2, mi, pc); /* the v2 hierarchy, used or not */
	detail(c, "%s",
	       n_v1	   ? (v2.dir[0] ? "hybrid" : "legacy v1")
	       : v2.dir[0] ? "unified"
			   : "none");
	if (v2.dir[0])
		detail(c, " (v2 at %s, controllers: %s)", v2.dir, v2.avail[0] ? v2.avail : "none");
	for (size_t i = 0; i < 3; i++) {
		struct cg_ctrl *x = &ctl[i];

		err[i] = -1; /* a directory shared with an earlier controller? */
		for (size_t j = 0; j < i; j++)
			if (ctl[j].version && !strcmp(ctl[j].dir, x->dir))
				err[i] = err[j];
		if (x->version && err[i] < 0)
			err[i] = cg_try_mkdir(x->dir);
		if (!x->version) {
			detail(c, "; %s: missing", x->name);
			append(missing, sizeof(missing), "%s%s", missing[0] ? ", " : "", x->name);
			continue;
		}
		detail(c, "; %s: v%d %s%s %s", x->name, x->version, x->dir,
		       x->at_root ? " (root)" : "", err[i] ? errname(err[i]) : "writable");
		denied += err[i] != 0;
	}
	if (missing[0] && geteuid() == 0)
		verdict(c, AJ_CHECK_WARN,
			"The %s controller(s) are not mounted here: agentjail run mounts them in a "
			"mount namespace of its own; if the kernel has none, runs that ask for "
			"those limits fail (exit 125) unless --limits best-effort.",
			missing);
	else if (missing[0])
		verdict(c, AJ_CHECK_WARN,
			"Without the %s controller(s) runs that ask for those limits fail (exit "
			"125) unless --limits best-effort.",
			missing);
	/* memory is a domain controller: no-internal-processes rule */
	if (ctl[0].version == 2 && !ctl[0].at_root && !has_token(ctl[0].sub, "memory"))
		verdict(c, AJ_CHECK_WARN,
			"v2 refuses to enable memory in %s/cgroup.subtree_control while that "
			"cgroup holds processes (agentjail itself).",
			ctl[0].dir);
	if (denied) {
		char how[768];
		aj_cgroup_delegation_howto(how, sizeof(how));
		verdict(c, AJ_CHECK_WARN,
			"Limits need a writable cgroup below our own, else runs fail closed (exit "
			"125) unless --limits best-effort. Run as root, or get a delegated cgroup: "
			"%s.",
			how);
	}
}

static void check_seccomp(aj_check *c, const struct probe *p)
{
	static const struct {
		const char *name;
		uint32_t action;
	} acts[] = {
	    {"kill_process", SECCOMP_RET_KILL_PROCESS},
	    {"errno", SECCOMP_RET_ERRNO},
	    {"user_notif", SECCOMP_RET_USER_NOTIF},
	    {"log", SECCOMP_RET_LOG},
	};
	const struct scmp_version *v = seccomp_version();
	int mode = prctl(PR_GET_SECCOMP, 0, 0, 0, 0);

	c->essential = true;
	if (mode < 0) {
		detail(c, "prctl(PR_GET_SECCOMP): %s", errname(errno));
		verdict(c, AJ_CHECK_FAIL, "The kernel needs CONFIG_SECCOMP_FILTER.");
	} else {
		detail(c, "%s", mode == 2 ? "already filtered (filters stack)" : "not filtered");
	}
	detail(c, "; actions:");
	for (size_t i = 0; i < AJ_ARRAY_SIZE(acts); i++) {
		uint32_t a = acts[i].action;
		bool ok = !syscall(SYS_seccomp, SECCOMP_GET_ACTION_AVAIL, 0, &a);

		detail(c, " %s%s", acts[i].name, ok ? "" : "(missing)");
		if (!ok && i == 0)
			verdict(c, AJ_CHECK_WARN, "SECCOMP_RET_KILL_PROCESS needs Linux >= 4.14.");
	}
	detail_result(c, "filter install", p->seccomp);
	if (p->seccomp > 0)
		verdict(c, AJ_CHECK_FAIL,
			"Installing a seccomp filter after no_new_privs must work.");
	if (v)
		detail(c, "; libseccomp %u.%u.%u (API level %u)", v->major, v->minor, v->micro,
		       seccomp_api_get());
}

static void check_landlock(aj_check *c, const struct probe *p)
{
	static const char *const feat[] = {NULL,
					   "filesystem",
					   "refer",
					   "truncate",
					   "TCP bind/connect",
					   "device ioctl",
					   "scoping (abstract unix sockets, signals)",
					   "audit"};
	long abi = syscall(SYS_landlock_create_ruleset, NULL, 0, LANDLOCK_CREATE_RULESET_VERSION);

	if (abi < 0) {
		int e = errno;

		detail(c, "landlock_create_ruleset: %s", errname(e));
		if (e == EOPNOTSUPP)
			verdict(c, AJ_CHECK_WARN,
				"Landlock is built in but disabled: add landlock to the lsm= "
				"kernel parameter (see /sys/kernel/security/lsm).");
		else
			verdict(c, AJ_CHECK_WARN,
				"Landlock needs Linux >= 5.13 with CONFIG_SECURITY_LANDLOCK; "
				"filesystem rules then rely on mounts alone.");
		return;
	}
	detail(c, "ABI %ld:", abi);
	for (long i = 1; i <= abi && i < (long)AJ_ARRAY_SIZE(feat); i++)
		detail(c, "%s %s", i > 1 ? "," : "", feat[i]);
	if (abi < 1)
		verdict(c, AJ_CHECK_WARN, "Landlock ABI >= 1 is required for filesystem rules.");
	else if (abi < 4)
		detail(c, " (network rules need ABI 4, Linux 6.7)");
}

static void check_overlay(aj_check *c, const struct probe *p)
{
	_cleanup_free_ char *fs = NULL;

	aj_read_file("/proc/filesystems", &fs, NULL);
	detail(c, "/proc/filesystems: %s",
	       fs && has_token(fs, "overlay") ? "overlay"
					      : "no overlay (a module may load on first use)");
	if (p->tmpfs || p->map) {
		detail(c, "; mount in user namespace: not tested");
		verdict(c, AJ_CHECK_WARN, "Needs working user and mount namespaces (see above).");
	} else if (p->overlay == 0) {
		detail(c, "; overlay mount in user namespace: ok");
	} else if (p->overlay_ux == 0) {
		detail(c, "; overlay mount in user namespace: ok with userxattr (plain: %s)",
		       errname(p->overlay));
	} else {
		detail(c, "; overlay mount in user namespace: %s", errname(p->overlay));
		detail_result(c, "with userxattr", p->overlay_ux);
		verdict(c, AJ_CHECK_WARN,
			"A writable overlay over a read-only root needs overlayfs mountable in a "
			"user namespace (Linux >= 5.11, CONFIG_OVERLAY_FS).");
	}
}

static void check_idmap(aj_check *c, const struct probe *p)
{
	if (geteuid() != 0) {
		detail(c, "not tested (not root)");
		verdict(c, AJ_CHECK_WARN,
			"idmapped mounts need root; workspace files are owned by the caller's uid "
			"instead.");
	} else if (p->idmap == NOT_RUN) {
		detail(c, "not tested (no user namespace with a uid map)");
		verdict(c, AJ_CHECK_WARN, "Needs working user namespaces (see above).");
	} else if (p->idmap) {
		detail(c, "%s: %s", p->idmap_step, errname(p->idmap));
		verdict(
		    c, AJ_CHECK_WARN,
		    "As root, --workspace and binds use idmapped mounts: they need Linux >= 5.12 "
		    "and a filesystem that supports them (ext4, xfs, btrfs, tmpfs >= 6.3).");
	} else {
		detail(c, "open_tree + mount_setattr(MOUNT_ATTR_IDMAP) on /tmp: ok");
	}
}

static const char *first_existing(const char *const *paths)
{
	for (; *paths; paths++)
		if (access(*paths, F_OK) == 0)
			return *paths;
	return NULL;
}

static void check_nftables(aj_check *c, const struct probe *p)
{
	static const char *const bins[] = {"/usr/sbin/nft", "/sbin/nft", "/usr/bin/nft",
					   "/usr/local/sbin/nft", NULL};
	static const char *const libs[] = {"/usr/lib/x86_64-linux-gnu/libnftables.so.1",
					   "/usr/lib/aarch64-linux-gnu/libnftables.so.1",
					   "/usr/lib64/libnftables.so.1",
					   "/usr/lib/libnftables.so.1", NULL};
	const char *bin = first_existing(bins), *lib = first_existing(libs);

	detail(c, "nft: %s; libnftables: %s", bin ? bin : "not found", lib ? lib : "not found");
	if (!bin && !lib)
		verdict(c, AJ_CHECK_WARN,
			"Network policies (--net) need nftables: apt-get install nftables "
			"libnftables1.");
}

static void check_veth(aj_check *c, const struct probe *p)
{
	if (p->veth == NOT_RUN) {
		detail(c, "not tested (no network namespace)");
		verdict(c, AJ_CHECK_WARN, "Needs working user and network namespaces (see above).");
	} else if (p->veth) {
		detail(c, "creating a veth pair in a private network namespace: %s",
		       errname(p->veth));
		verdict(
		    c, AJ_CHECK_WARN,
		    "Networked sandboxes need veth: modprobe veth (or build with CONFIG_VETH).");
	} else {
		detail(c, "created a veth pair in a private network namespace (%s)",
		       access("/sys/module/veth", F_OK) ? "built in" : "module loaded");
	}
}

static const struct {
	const char *name;
	void (*run)(aj_check *c, const struct probe *p);
} checks[] = {
    {"kernel", check_kernel},	      {"user namespaces", check_userns},
    {"namespaces", check_namespaces}, {"cgroups", check_cgroups},
    {"seccomp", check_seccomp},	      {"landlock", check_landlock},
    {"overlayfs", check_overlay},     {"idmapped mounts", check_idmap},
    {"nftables", check_nftables},     {"veth", check_veth},
};
_Static_assert(AJ_ARRAY_SIZE(checks) <= AJ_DOCTOR_MAX_CHECKS, "raise AJ_DOCTOR_MAX_CHECKS");

size_t aj_doctor_run(aj_check *out, size_t max)
{
	struct probe p;
	size_t n;

	run_probe(&p);
	for (n = 0; n < max && n < AJ_ARRAY_SIZE(checks); n++) {
		memset(&out[n], 0, sizeof(out[n]));
		out[n].name = checks[n].name;
		checks[n].run(&out[n], &p);
	}
	return n;
}

bool aj_doctor_can_run(const aj_check *c, size_t n)
{
	for (size_t i = 0; i < n; i++)
		if (c[i].essential && c[i].status == AJ_CHECK_FAIL)
			return false;
	return true;
}

const char *aj_doctor_status_name(aj_check_status s)
{
	switch (s) {
	case AJ_CHECK_OK: return "ok";
	case AJ_CHECK_WARN: return "warn";
	default: return "fail";
	}
}
