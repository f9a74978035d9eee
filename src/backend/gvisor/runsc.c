/* SPDX-License-Identifier: MIT */
/* The runsc driver of level 2: probe, one-shot run, cleanup.
 *
 * A run: a private directory (bundle, runsc's --root state), a cgroup below
 * agentjail's own that `runsc run` is put in before it execs (the gofer and
 * the Sentry inherit it: --ignore-cgroups keeps runsc off the cgroups), the
 * command's stdio passed through (through agentjail's redactor when there
 * are secrets), --timeout through `runsc kill`, and everything removed
 * afterwards: `runsc delete --force`, the cgroup (which kills what is left),
 * the directory. */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <linux/openat2.h>
#include <poll.h>
#include <stdarg.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sched.h>
#include <sys/mount.h>
#include <sys/prctl.h>
#include <sys/random.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "cgroup.h"
#include "etc.h"
#include "etc_cache.h"
#include "mount.h"
#include "net.h"
#include "gvisor.h"
#include "gvports.h"
#include "gvrun.h"
#include "protect.h"
#include "redact.h"
#include "relay.h"
#include "userns.h"
#include "util.h"

static const char *const runsc_paths[] = {"/usr/bin/runsc", "/usr/sbin/runsc",
					  "/usr/local/bin/runsc", "/usr/local/sbin/runsc"};

int aj_gvisor_probe(char *path, size_t len, aj_error *err)
{
	/* AGENTJAIL_RUNSC: another runsc (the caller's choice, as root) */
	const char *env = getenv("AGENTJAIL_RUNSC");
	bool found = false;
	if (env && *env) {
		snprintf(path, len, "%s", env);
		found = access(path, X_OK) == 0;
	}
	for (size_t i = 0; !env && !found && i < AJ_ARRAY_SIZE(runsc_paths); i++) {
		snprintf(path, len, "%s", runsc_paths[i]);
		found = access(path, X_OK) == 0;
	}
	if (!found) {
		aj_err(err, ENOENT,
		       "isolation level gvisor is not usable here: runsc (gVisor) %s%s",
		       env && *env ? "is not executable at AGENTJAIL_RUNSC=" : "is not installed",
		       env && *env ? env : "");
		aj_err_hint(err, "install it (apt-get install runsc), or use --isolation process");
		return -ENOENT;
	}
	if (geteuid() != 0) {
		aj_err(err, EPERM,
		       "isolation level gvisor is not usable here: it needs root (runsc's "
		       "rootless mode is not wired in yet)");
		aj_err_hint(err, "run agentjail as root, or use --isolation process");
		return -EPERM;
	}
	return 0;
}

/* The host's agentjail-agent: AGENTJAIL_GVISOR_AGENT, else next to this
 * program or in libexecdir (aj_program_path). */
int aj_gv_find_agent(char *out, size_t len, aj_error *err)
{
	const char *env = getenv("AGENTJAIL_GVISOR_AGENT");
	if (env && *env)
		snprintf(out, len, "%s", env);
	else if (aj_program_path("agentjail-agent", out, len) < 0)
		return aj_err(err, ENAMETOOLONG, "agentjail-agent: path too long");
	if (access(out, X_OK) < 0) {
		aj_err(err, ENOENT, "isolation level gvisor: the sandbox agent %s is missing", out);
		aj_err_hint(err, "agentjail's programs are installed next to each other "
				 "(AGENTJAIL_GVISOR_AGENT=PATH names another)");
		return -ENOENT;
	}
	return 0;
}

/* Run runsc with args, its output to /dev/null (or out, when not NULL,
 * up to len bytes); its exit status, or -errno. */
int aj_gv_runsc_cmd(const char *runsc, char *const *args, char *out, size_t len)
{
	return aj_gv_runsc_cmd_in(-1, runsc, args, out, len);
}

int aj_gv_runsc_cmd_in(int netns, const char *runsc, char *const *args, char *out, size_t len)
{
	return aj_gv_runsc_cmd_fd(netns, runsc, args, out, len, 1);
}

int aj_gv_runsc_cmd_fd(int netns, const char *runsc, char *const *args, char *out, size_t len,
		       int which)
{
	int pfd[2] = {-1, -1};
	if (out && pipe2(pfd, O_CLOEXEC) < 0)
		return -errno;
	pid_t pid = fork();
	if (pid < 0) {
		int e = -errno;
		if (out)
			close(pfd[0]), close(pfd[1]);
		return e;
	}
	if (pid == 0) {
		int null = open("/dev/null", O_RDWR);
		dup2(null, 0);
		dup2(out && which == 1 ? pfd[1] : null, 1);
		dup2(out && which == 2 ? pfd[1] : null, 2);
		prctl(PR_SET_PDEATHSIG, SIGKILL);
		if (netns >= 0 && setns(netns, CLONE_NEWNET) < 0)
			_exit(125);
		execv(runsc, args);
		_exit(127);
	}
	if (out) {
		close(pfd[1]);
		size_t n = 0;
		ssize_t k;
		while (n + 1 < len && (k = read(pfd[0], out + n, len - n - 1)) > 0)
			n += (size_t)k;
		out[n] = '\0';
		close(pfd[0]);
	}
	int st;
	while (waitpid(pid, &st, 0) < 0)
		if (errno != EINTR)
			return -errno;
	return WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
}

void aj_gvisor_doctor(aj_check *c)
{
	memset(c, 0, sizeof(*c));
	c->name = "level 2: gvisor";
	char path[PATH_MAX], ver[256] = "";
	aj_error err;
	aj_err_clear(&err);
	if (aj_gvisor_probe(path, sizeof(path), &err) < 0) {
		c->status = AJ_CHECK_WARN;
		snprintf(c->detail, sizeof(c->detail), "not usable: %s", err.msg);
		snprintf(c->fix, sizeof(c->fix), "%s", err.hint);
		return;
	}
	char *args[] = {path, "--version", NULL};
	int r = aj_gv_runsc_cmd(path, args, ver, sizeof(ver));
	ver[strcspn(ver, "\n")] = '\0';
	if (r != 0) {
		c->status = AJ_CHECK_WARN;
		snprintf(c->detail, sizeof(c->detail), "not usable: %s --version failed (%d)", path,
			 r);
		snprintf(c->fix, sizeof(c->fix),
			 "reinstall it (apt-get install --reinstall runsc)");
		return;
	}
	snprintf(c->detail, sizeof(c->detail),
		 "usable: %s (%s), ptrace platform; one-shot runs (agentjail run)", path, ver);
}

/* inside is path or below it: the rest ("" or "/..."), else NULL */
static const char *below(const char *inside, const char *path)
{
	size_t n = strlen(path);
	return !strncmp(inside, path, n) && (inside[n] == '/' || !inside[n]) ? inside + n : NULL;
}

/* Is the command there? 127 when it is certainly not found, 126 when it
 * is not executable, 0 otherwise (also when we cannot tell: runsc says). */
static int find_in(const aj_policy *p, const char *inside)
{
	static const char *const unknown[] = {"/tmp", AJ_SANDBOX_HOME, "/proc", "/dev", "/etc"};
	static const char *const sys[] = {"/usr",   "/bin",   "/sbin",	"/lib",
					  "/lib32", "/lib64", "/libx32"};
	char host[PATH_MAX] = "";
	const char *rest;
	int root = AT_FDCWD;
	for (size_t i = p->n_binds; i-- > 0 && !*host;)
		if ((rest = below(inside, p->binds[i].dest)))
			snprintf(host, sizeof(host), "%s%s", p->binds[i].src, rest);
	if (!*host && p->workspace && (rest = below(inside, AJ_WORKSPACE_DIR)))
		snprintf(host, sizeof(host), "%s%s", p->workspace, rest);
	for (size_t i = 0; !*host && i < AJ_ARRAY_SIZE(unknown); i++)
		if (below(inside, unknown[i]))
			return 0;
	if (!*host && p->rootfs) {
		root = open(p->rootfs, O_PATH | O_DIRECTORY | O_CLOEXEC);
		if (root < 0)
			return 0;
		snprintf(host, sizeof(host), "%s", inside);
	}
	for (size_t i = 0; !*host && i < AJ_ARRAY_SIZE(sys); i++)
		if (below(inside, sys[i]))
			snprintf(host, sizeof(host), "%s", inside);
	if (!*host)
		return 127; /* nothing else is in the skeleton root */
	struct open_how how = {.flags = O_PATH | O_CLOEXEC,
			       .resolve = root == AT_FDCWD ? 0 : RESOLVE_IN_ROOT};
	int fd = (int)syscall(SYS_openat2, root, host, &how, sizeof(how));
	if (root != AT_FDCWD)
		close(root);
	if (fd < 0)
		return 127;
	struct stat st;
	int r = fstat(fd, &st) == 0 && S_ISREG(st.st_mode) && (st.st_mode & 0111) ? 0 : 126;
	close(fd);
	return r;
}

static int check_command(const aj_policy *p, aj_error *err)
{
	const char *cmd = p->argv[0];
	int r = 127;
	if (strchr(cmd, '/')) {
		r = cmd[0] == '/' ? find_in(p, cmd) : 0;
	} else {
		/* the default PATH (an --env PATH=... is left to runsc) */
		for (size_t i = 0; i < p->n_env; i++)
			if (aj_startswith(p->env[i], "PATH="))
				return 0;
		_cleanup_free_ char *path = strdup(AJ_DEFAULT_PATH);
		char *save = NULL;
		for (char *d = strtok_r(path, ":", &save); d && r != 0;
		     d = strtok_r(NULL, ":", &save)) {
			char full[PATH_MAX];
			snprintf(full, sizeof(full), "%s/%s", d, cmd);
			int k = find_in(p, full);
			r = k == 126 && r == 127 ? 127 : k;
		}
	}
	if (r == 127) {
		aj_err(err, ENOENT, "%s: command not found in the sandbox", cmd);
		err->exit = AJ_EXIT_NOTFOUND;
	} else if (r == 126) {
		aj_err(err, EACCES, "%s: not executable in the sandbox", cmd);
		err->exit = AJ_EXIT_NOEXEC;
	}
	return r ? -1 : 0;
}

int aj_gv_refuse_unsupported(const aj_policy *p, aj_error *err)
{
	const char *what = p->tty == AJ_TTY_ALWAYS    ? "--tty"
			   : aj_policy_has_profile(p) ? "--seccomp-profile (gVisor implements the "
							"system calls itself)"
						      : NULL;
	if (what) {
		aj_err(err, ENOTSUP, "%s: not available with --isolation gvisor yet", what);
		aj_err_hint(err, "use --isolation process for it (docs/levels.md)");
		return -ENOTSUP;
	}
	if (!p->argv || !p->argv[0])
		return aj_err(err, EINVAL, "no command given (agentjail run -- COMMAND)");
	if (p->uid >= AJ_UID_RANGE || p->gid >= AJ_UID_RANGE)
		return aj_err(err, EINVAL, "--user: ids below %u only with --isolation gvisor",
			      AJ_UID_RANGE);
	return 0;
}

void aj_gv_warn(gv_run *g, const char *fmt, ...)
{
	if (g->p->quiet || !g->hooks || !g->hooks->warn)
		return;
	char msg[1024];
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	g->hooks->warn(g->hooks->ctx, msg);
}

static unsigned long long now_ms(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (unsigned long long)ts.tv_sec * 1000ULL + (unsigned long long)ts.tv_nsec / 1000000;
}

void aj_gv_runsc_signal(gv_run *g, const char *sig)
{
	char root[128];
	snprintf(root, sizeof(root), "--root=%s", g->state);
	char *args[] = {g->runsc, root, "kill", "--all", g->id, (char *)sig, NULL};
	(void)aj_gv_runsc_cmd_in(g->netns_fd, g->runsc, args, NULL, 0);
}

/* SIGKILL every task left in the sandbox's cgroup. */
void aj_gv_kill_cgroup(gv_run *g)
{
	if (!g->have_cg)
		return;
	for (int i = 0; i < g->cg.n; i++) {
		char path[PATH_MAX + 16];
		snprintf(path, sizeof(path), "%s/cgroup.procs", g->cg.dirs[i].path);
		_cleanup_free_ char *procs = NULL;
		if (aj_read_file(path, &procs, NULL) < 0)
			continue;
		char *save = NULL;
		for (char *t = strtok_r(procs, "\n", &save); t; t = strtok_r(NULL, "\n", &save))
			kill((pid_t)atoi(t), SIGKILL);
	}
}

/* The private directories of runs whose agentjail died without removing
 * them (SIGKILL): runsc run and the sandbox died with it (their parent-death
 * signals); their directories go now. */
static void sweep(void)
{
	DIR *d = opendir("/tmp");
	struct dirent *de;
	const char *base = &GV_DIR_PREFIX[5]; /* the name below /tmp */
	while (d && (de = readdir(d))) {
		int pid = 0;
		if (strncmp(de->d_name, base, strlen(base)) ||
		    sscanf(de->d_name + strlen(base), "%d-", &pid) != 1 || pid <= 0 ||
		    pid == getpid() || aj_pid_alive(pid))
			continue;
		_cleanup_close_ int tmp = open("/tmp", O_PATH | O_DIRECTORY | O_CLOEXEC);
		struct stat st;
		if (tmp >= 0 && fstatat(tmp, de->d_name, &st, AT_SYMLINK_NOFOLLOW) == 0 &&
		    S_ISDIR(st.st_mode) && st.st_uid == geteuid())
			(void)aj_rm_tree_at(tmp, de->d_name, 64);
	}
	if (d)
		closedir(d);
}

void aj_gv_new_id(gv_run *g)
{
	unsigned r32 = 0;
	if (getrandom(&r32, sizeof(r32), 0) != sizeof(r32))
		r32 = (unsigned)now_ms();
	snprintf(g->id, sizeof(g->id), "agentjail-%d-%08x", (int)getpid(), r32);
}

int aj_gv_setup(gv_run *g, aj_error *err)
{
	sweep();
	const aj_policy *p = g->p;
	aj_gv_new_id(g);
	snprintf(g->dir, sizeof(g->dir), "%s%d-XXXXXX",
		 g->persistent ? GV_BOX_PREFIX : GV_DIR_PREFIX, (int)getpid());
	if (!mkdtemp(g->dir)) {
		g->dir[0] = '\0';
		return aj_err(err, errno, "cannot create a directory in /tmp for the bundle");
	}
	/* the gofer, in the sandbox's user namespace, walks into the bundle */
	chmod(g->dir, 0711);
	snprintf(g->bundle, sizeof(g->bundle), "%s/bundle", g->dir);
	snprintf(g->state, sizeof(g->state), "%s/state", g->dir);
	if (mkdir(g->bundle, 0755) < 0 || mkdir(g->state, 0700) < 0)
		return aj_err(err, errno, "cannot create %s", g->bundle);
	int r = aj_userns_plan(&g->idm, p->uid, p->gid, err);
	if (r < 0)
		return r;
	/* the placeholders on the host now; the read-only binds in runsc's
	 * mount namespace (stage_binds) */
	if ((r = aj_protect_prepare(p, &g->prot, err)) < 0)
		return r;
	if ((r = aj_net_prepare(&g->net, p, err)) < 0)
		return r;
	g->net_ready = true;
	_cleanup_free_ char *host_resolv = NULL, *resolv = NULL;
	char **net_env = NULL;
	if (p->net != AJ_NET_NONE) {
		if (p->net == AJ_NET_OPEN)
			(void)aj_read_file("/etc/resolv.conf", &host_resolv, NULL);
		resolv = aj_net_resolv_conf(&g->net, p, host_resolv);
		net_env = aj_net_env(&g->net, p);
		if (!resolv || !net_env) {
			aj_strv_free(net_env);
			return aj_err(err, ENOMEM, "network");
		}
	}
	aj_gv_ids ids = {.resolv_conf = resolv,
			 .agent = g->agent,
			 .extra_env = net_env,
			 .runsc_netns = p->net != AJ_NET_NONE,
			 .base = g->idm.host_base,
			 .ws_uid = g->idm.host_base + p->uid,
			 .ws_gid = g->idm.host_base + p->gid};
	struct stat st;
	if (p->workspace && stat(p->workspace, &st) == 0 && st.st_uid != 0) {
		/* never host root: a root-owned workspace gets the unused ids */
		ids.owner_mapped = true;
		ids.ws_uid = st.st_uid;
		ids.ws_gid = st.st_gid != 0 ? st.st_gid : ids.ws_gid;
	}
	if (!p->rootfs) {
		aj_mount_plan *plan = calloc(1, sizeof(*plan));
		if (plan && aj_etc_cache_use(plan, &g->etc_lock))
			g->staged.etc_tree = plan->etc_tree;
		free(plan);
	}
	r = aj_gvisor_bundle_write(p, &ids, g->bundle, &g->staged, err);
	aj_strv_free(net_env);
	if (r < 0)
		return r;
	aj_policy q = *p; /* a shallow copy: only the pids limit differs */
	q.pids = aj_gv_host_pids(p->pids);
	/* fails closed as level 1 does (409 limits_unenforceable, exit 125);
	 * with --limits best-effort it succeeds and notes what is missing */
	r = aj_cgroup_create(&g->cg, g->id, &q, err);
	if (r < 0)
		return r;
	g->have_cg = g->cg.n > 0;
	if (g->cg.missing) {
		char names[64];
		aj_cgroup_limit_names(g->cg.missing, names, sizeof(names));
		aj_gv_warn(g, "limits NOT enforced (--limits best-effort): %s: %s", names,
			   g->cg.why);
	}
	return 0;
}

int aj_gv_restage_etc(gv_run *g, aj_error *err)
{
	if (g->staged.etc_tree < 0)
		return 0;
	close(g->staged.etc_tree);
	g->staged.etc_tree = -1;
	int lock = -1;
	aj_mount_plan *plan = calloc(1, sizeof(*plan));
	if (plan && aj_etc_cache_use(plan, &lock))
		g->staged.etc_tree = plan->etc_tree;
	free(plan);
	if (g->staged.etc_tree < 0)
		return aj_err(err, EIO, "the copy of the host's /etc cannot be mounted again");
	if (g->etc_lock >= 0)
		close(g->etc_lock);
	g->etc_lock = lock;
	return 0;
}

void aj_gv_teardown(gv_run *g)
{
	if (g->net_ready) {
		aj_net_teardown(&g->net);
		g->net_ready = false;
	}
	if (g->state[0]) {
		char root[128];
		snprintf(root, sizeof(root), "--root=%s", g->state);
		char *args[] = {g->runsc, root, "delete", "--force", g->id, NULL};
		struct stat st;
		char lock[PATH_MAX];
		snprintf(lock, sizeof(lock), "%s/%s_sandbox:%s.state", g->state, g->id, g->id);
		if (stat(lock, &st) == 0)
			(void)aj_gv_runsc_cmd_in(g->netns_fd, g->runsc, args, NULL, 0);
	}
	if (g->have_cg) {
		aj_gv_kill_cgroup(g);
		aj_cgroup_destroy(&g->cg);
		g->have_cg = false;
	}
	/* runsc's processes are gone (delete, the cgroup killed), and with them
	 * the mount namespace that held the binds on the placeholders */
	aj_protect_release(g->prot);
	g->prot = NULL;
	aj_gv_staged_free(&g->staged);
	if (g->staged.etc_tree >= 0)
		close(g->staged.etc_tree);
	if (g->etc_lock >= 0)
		close(g->etc_lock);
	if (g->netns_fd >= 0) {
		close(g->netns_fd);
		g->netns_fd = -1;
	}
	if (g->dir[0]) {
		int r = aj_rm_tree_at(AT_FDCWD, g->dir, 64);
		if (r < 0 && r != -ENOENT)
			aj_gv_warn(g, "cannot remove %s: %s", g->dir, strerror(-r));
	}
}

/* Child: a mount namespace of its own (gone with runsc's processes) where
 * the staged host paths are bound at bundle/binds/N. */
static int stage_binds(gv_run *g)
{
	bool net = g->p->net != AJ_NET_NONE;
	if (g->staged.n == 0 && g->staged.etc_tree < 0 && !net)
		return 0;
	if (unshare(CLONE_NEWNS) < 0 || mount(NULL, "/", NULL, MS_REC | MS_PRIVATE, NULL) < 0) {
		fprintf(stderr, "agentjail: cannot make a mount namespace for runsc: %s\n",
			strerror(errno));
		return -1;
	}
	for (size_t i = 0; i < g->staged.n; i++) {
		char at[PATH_MAX];
		snprintf(at, sizeof(at), "%s/binds/%zu", g->bundle, i);
		if (mount(g->staged.src[i], at, NULL, MS_BIND | MS_REC, NULL) < 0) {
			fprintf(stderr, "agentjail: cannot bind %s for runsc: %s\n",
				g->staged.src[i], strerror(errno));
			return -1;
		}
	}
	/* the workspace's host-run files, read-only (and .git pinned) on the
	 * staged workspace: the gofer's rbind of it takes these mounts along,
	 * locked in its user namespace, so a write, a rename or a removal the
	 * sandbox asks for fails in the host kernel (EROFS, EBUSY) */
	if (g->prot && g->staged.workspace >= 0) {
		char at[PATH_MAX];
		aj_error perr;
		aj_err_clear(&perr);
		snprintf(at, sizeof(at), "%s/binds/%d", g->bundle, g->staged.workspace);
		if (aj_protect_apply_dir(g->prot, at, &perr) < 0) {
			char msg[AJ_ERR_MSG_MAX + AJ_ERR_HINT_MAX + 32];
			aj_err_format(&perr, msg, sizeof(msg));
			fprintf(stderr, "agentjail: %s\n", msg);
			return -1;
		}
	}
	/* runsc (2022) takes a netns where /proc/sys/net/core/rmem_default
	 * exists for the host's root one and refuses to use it; this kernel
	 * has it in every netns. Hidden under a tmpfs for runsc run (its mount
	 * namespace only), the check sees the namespace agentjail made. A
	 * second, whole procfs beside it lets the gofer and the sandbox still
	 * mount their own (the kernel allows a new proc in a user namespace
	 * only where one is fully visible). */
	char proc[PATH_MAX];
	snprintf(proc, sizeof(proc), "%s/proc", g->dir);
	if (net && ((mkdir(proc, 0555) < 0 && errno != EEXIST) ||
		    mount("proc", proc, "proc", MS_NOSUID | MS_NODEV | MS_NOEXEC, NULL) < 0 ||
		    mount("tmpfs", "/proc/sys/net/core", "tmpfs", MS_NOSUID | MS_NODEV | MS_NOEXEC,
			  "size=4k,mode=0555") < 0)) {
		fprintf(stderr, "agentjail: cannot prepare runsc's view of /proc/sys/net: %s\n",
			strerror(errno));
		return -1;
	}
	char etc[PATH_MAX];
	snprintf(etc, sizeof(etc), "%s/binds/etc", g->bundle);
	if (g->staged.etc_tree >= 0 &&
	    aj_move_mount(g->staged.etc_tree, "", AT_FDCWD, etc, MOVE_MOUNT_F_EMPTY_PATH) < 0) {
		fprintf(stderr, "agentjail: cannot mount the /etc copy for runsc: %s\n",
			strerror(errno));
		return -1;
	}
	return 0;
}

/* The bundle's CA bundle (bundle.c): the root's own and netd's CA, made
 * after runsc's process was, written before runsc reads its bundle. */
static int fill_ca(gv_run *g, aj_error *err)
{
	if (!g->net.ca_pem)
		return aj_err(err, EPROTO, "the network helper gave no CA certificate");
	_cleanup_free_ char *text = NULL;
	size_t len = 0;
	int r = aj_etc_ca_bundle(g->p->rootfs, true, g->net.ca_pem, &text, &len, err);
	char path[PATH_MAX];
	snprintf(path, sizeof(path), "%s/files/ca-certificates.crt", g->bundle);
	_cleanup_close_ int fd =
	    r < 0 ? -1 : open(path, O_WRONLY | O_TRUNC | O_NOFOLLOW | O_CLOEXEC);
	if (r == 0 && (fd < 0 || aj_write_all(fd, text, len) < 0))
		r = aj_err(err, errno, "cannot write the sandbox's CA bundle %s", path);
	return r;
}

/* runsc run --detach hands its stdio to the sandbox's init for good:
 * /dev/null, and its errors to a file (a pipe would stay open) */
static int detach_stdio(gv_run *g)
{
	char path[PATH_MAX];
	snprintf(path, sizeof(path), "%s/runsc.err", g->dir);
	int null = open("/dev/null", O_RDWR | O_CLOEXEC);
	int log = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
	if (null < 0 || log < 0 || dup2(null, 0) < 0 || dup2(null, 1) < 0 || dup2(log, 2) < 0)
		return -1;
	return 0;
}

/* Start `runsc run`: in the cgroup before it execs; stdout and stderr into
 * out[] when redacting (else the caller's). */
pid_t aj_gv_start(gv_run *g, const int out[2], bool detach, aj_error *err)
{
	/* the child moves itself into the v1 hierarchies (no RCU wait, unlike
	 * moving another process: ~5 ms each here, cgroup.h); the parent moves
	 * it into a v2 cgroup, if there is one */
	int tasks[AJ_CG_MAX_DIRS], nt = 0;
	aj_error cgerr;
	aj_err_clear(&cgerr);
	if (g->have_cg && (nt = aj_cgroup_open_tasks(&g->cg, tasks, &cgerr)) < 0)
		return aj_err(err, cgerr.code ? cgerr.code : EIO,
			      "cannot move runsc into the sandbox's cgroup: %s", cgerr.msg);
	/* sync: parent -> child "go"; ready: child -> parent "my network
	 * namespace exists" (--net open, --allow: the veth goes there) */
	int sync[2], ready[2] = {-1, -1};
	bool net = g->p->net != AJ_NET_NONE, join = net && g->netns_fd >= 0;
	if (pipe2(sync, O_CLOEXEC) < 0 || (net && pipe2(ready, O_CLOEXEC) < 0)) {
		for (int i = 0; i < nt; i++)
			close(tasks[i]);
		return aj_err(err, errno, "pipe");
	}
	char root[128];
	snprintf(root, sizeof(root), "--root=%s", g->state);
	/* AGENTJAIL_RUNSC_LOG=DIR: runsc's debug logs there (for a bug report) */
	const char *logdir = getenv("AGENTJAIL_RUNSC_LOG");
	char dlog[PATH_MAX + 16];
	snprintf(dlog, sizeof(dlog), "--debug-log=%s/", logdir ? logdir : "");
	char *args[18] = {g->runsc,
			  root,
			  "--platform=ptrace",
			  g->p->net != AJ_NET_NONE ? "--network=sandbox" : "--network=none",
			  "--ignore-cgroups",
			  "--overlay2=none",
			  "--oci-seccomp"}; /* the bundle's setid rules (bundle.c) */
	size_t na = 7;
	if (logdir && *logdir) {
		args[na++] = "--debug";
		args[na++] = dlog;
	}
	char image[PATH_MAX + 16];
	snprintf(image, sizeof(image), "--image-path=%s", g->restore ? g->restore : "");
	args[na++] = g->restore ? "restore" : "run";
	if (g->restore)
		args[na++] = image;
	if (detach || g->restore)
		args[na++] = "--detach";
	args[na++] = "--bundle";
	args[na++] = g->bundle;
	args[na++] = g->id;
	args[na] = NULL;
	pid_t pid = fork();
	if (pid < 0) {
		int e = errno;
		close(sync[0]), close(sync[1]);
		for (int i = 0; i < nt; i++)
			close(tasks[i]);
		return aj_err(err, e, "fork");
	}
	if (pid == 0) {
		close(sync[1]);
		aj_error jerr;
		if (nt > 0 && aj_cgroup_join_self(tasks, (size_t)nt, &jerr) < 0) {
			fprintf(stderr, "agentjail: cannot join the sandbox's cgroup: %s\n",
				jerr.msg);
			_exit(125);
		}
		/* a restore in place (box.c) goes back into the namespace it had */
		int ns = join ? setns(g->netns_fd, CLONE_NEWNET) : net ? unshare(CLONE_NEWNET) : 0;
		if (net && (ns < 0 || write(ready[1], "n", 1) != 1)) {
			fprintf(stderr, "agentjail: cannot make runsc's network namespace: %s\n",
				strerror(errno));
			_exit(125);
		}
		char c;
		if (read(sync[0], &c, 1) != 1)
			_exit(125);
		prctl(PR_SET_PDEATHSIG, SIGKILL);
		if (stage_binds(g) < 0)
			_exit(125);
		if (detach && detach_stdio(g) < 0)
			_exit(125);
		if (!detach && out[0] >= 0)
			dup2(out[0], 1), dup2(out[1], 2);
		aj_close_all_except(NULL, 0);
		signal(SIGPIPE, SIG_DFL);
		execv(g->runsc, args);
		fprintf(stderr, "agentjail: cannot run %s: %s\n", g->runsc, strerror(errno));
		_exit(125);
	}
	close(sync[0]);
	for (int i = 0; i < nt; i++)
		close(tasks[i]);
	aj_error jerr;
	aj_err_clear(&jerr);
	int r = 0;
	if (g->have_cg && aj_cgroup_join(&g->cg, pid, false, &jerr) < 0)
		r = aj_err(err, jerr.code ? jerr.code : EIO,
			   "cannot move runsc into the sandbox's cgroup: %s", jerr.msg);
	if (net) {
		char c;
		close(ready[1]);
		if (r == 0 && read(ready[0], &c, 1) != 1)
			r = aj_err(err, EPIPE, "runsc's network namespace");
		close(ready[0]);
		/* runsc's control socket is an abstract one, in this netns: later
		 * runsc commands (exec, kill, delete) must run there too */
		char ns[64];
		snprintf(ns, sizeof(ns), "/proc/%d/ns/net", (int)pid);
		if (r == 0 && g->netns_fd < 0 && (g->netns_fd = open(ns, O_RDONLY | O_CLOEXEC)) < 0)
			r = aj_err(err, errno, "runsc's network namespace");
		/* the veth, addresses, nft table and (--allow) netd (net.c); in
		 * the namespace of a restore in place, only eth0's address and
		 * route, which runsc took into its netstack at the first start */
		if (r == 0)
			r = join ? aj_net_readdress(&g->net, g->netns_fd, err)
				 : aj_net_setup(&g->net, g->p, pid, err);
		if (r == 0 && g->staged.ca)
			r = fill_ca(g, err);
	}
	if (r < 0 || write(sync[1], "x", 1) != 1) {
		close(sync[1]);
		kill(pid, SIGKILL);
		waitpid(pid, NULL, 0);
		return r < 0 ? r : aj_err(err, EPIPE, "cannot start runsc");
	}
	close(sync[1]);
	return pid;
}

/* Wait for runsc run, relaying output, enforcing --timeout. */
static int wait_run(gv_run *g, pid_t pid, aj_relay *relay, aj_run_result *res)
{
	const aj_policy *p = g->p;
	int pidfd = (int)syscall(SYS_pidfd_open, pid, 0);
	unsigned long long start_ms = now_ms(), deadline = 0, exit_ms = 0;
	int stage = 0, status = 0;
	bool exited = false;
	struct rusage ru = {0};
	if (p->timeout_ms)
		deadline = start_ms + p->timeout_ms;
	for (;;) {
		if (!exited && wait4(pid, &status, WNOHANG, &ru) == pid) {
			exited = true;
			exit_ms = now_ms();
		}
		bool outputs = relay && aj_relay_outputs_open(relay);
		/* after runsc ends, its output is drained for at most 2 s */
		if (exited && (!outputs || now_ms() > exit_ms + 2000))
			break;
		struct pollfd pf[AJ_RELAY_MAX + 1];
		size_t n = relay ? aj_relay_pollfds(relay, pf, AJ_RELAY_MAX) : 0;
		pf[n].fd = exited ? -1 : pidfd;
		pf[n].events = POLLIN;
		int tmo = exited ? 100 : pidfd < 0 ? 20 : -1;
		if (deadline && !exited) {
			unsigned long long t = now_ms();
			tmo = t >= deadline ? 0 : (int)(deadline - t);
		}
		int k = poll(pf, n + 1, tmo);
		if (k > 0 && relay)
			aj_relay_handle(relay, pf, n);
		if (deadline && !exited && now_ms() >= deadline) {
			if (stage == 0) {
				res->timed_out = true;
				aj_gv_runsc_signal(g, "TERM");
				deadline = now_ms() + (p->kill_after_ms ? p->kill_after_ms : 1);
			} else if (stage == 1) {
				aj_gv_runsc_signal(g, "KILL");
				deadline = now_ms() + 1000;
			} else {
				kill(pid, SIGKILL);
				aj_gv_kill_cgroup(g);
				deadline = 0;
			}
			stage++;
		}
	}
	if (pidfd >= 0)
		close(pidfd);
	res->wall_ms = now_ms() - start_ms;
	res->limits_missing = g->cg.missing;
	res->cpu_user_ms = (unsigned long long)ru.ru_utime.tv_sec * 1000 +
			   (unsigned long long)ru.ru_utime.tv_usec / 1000;
	res->cpu_sys_ms = (unsigned long long)ru.ru_stime.tv_sec * 1000 +
			  (unsigned long long)ru.ru_stime.tv_usec / 1000;
	return status;
}

/* Did the host pids cgroup refuse a task? */
static bool pids_hit(gv_run *g)
{
	for (int i = 0; g->have_cg && i < g->cg.n; i++) {
		if (strcmp(g->cg.dirs[i].ctrl, "pids"))
			continue;
		char path[PATH_MAX + 16];
		snprintf(path, sizeof(path), "%s/pids.events", g->cg.dirs[i].path);
		_cleanup_free_ char *ev = NULL;
		const char *m;
		if (aj_read_file(path, &ev, NULL) == 0 && (m = strstr(ev, "max ")))
			return atoll(m + 4) > 0;
	}
	return false;
}

static void result(gv_run *g, int status, aj_run_result *res)
{
	int code = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
	res->status = code;
	res->exit_code = code;
	if (code > 128 && code < 128 + 65)
		res->term_signal = code - 128;
	if (g->have_cg) {
		res->oom_killed = aj_cgroup_oom_killed(&g->cg);
		res->peak_memory_bytes = aj_cgroup_peak_memory(&g->cg);
	}
	/* the OOM killer took the Sentry (or the command inside): the sandbox
	 * was killed for its memory, as at level 1 */
	if (res->oom_killed && !res->timed_out && (code == 128 || code == 137 || code == 255)) {
		res->term_signal = SIGKILL;
		res->exit_code = 137;
	}
	if (res->timed_out)
		res->exit_code = AJ_EXIT_TIMEOUT;
	else if (code && pids_hit(g))
		aj_gv_warn(
		    g,
		    "the sandbox's host tasks (gVisor's own threads included) reached their "
		    "cgroup limit (%llu for --pids %llu) and gVisor's kernel stopped (exit %d)",
		    aj_gv_host_pids(g->p->pids), g->p->pids, code);
}

/* A pipe, socket or terminal (written at no offset), or closed. */
static bool stream_fd(int fd)
{
	struct stat st;
	return fstat(fd, &st) < 0 || S_ISFIFO(st.st_mode) || S_ISSOCK(st.st_mode) ||
	       S_ISCHR(st.st_mode);
}

int aj_gvisor_run(const aj_policy *p, const aj_run_hooks *hooks, aj_run_result *res, aj_error *err)
{
	memset(res, 0, sizeof(*res));
	/* --publish: the listeners are the run's own (gvports.c), not netd's */
	aj_policy q = *p;
	q.n_publish = 0;
	char agent[PATH_MAX];
	gv_run g = {.p = &q,
		    .hooks = hooks,
		    .etc_lock = -1,
		    .netns_fd = -1,
		    .staged = {.etc_tree = -1, .workspace = -1}};
	int r = aj_gvisor_probe(g.runsc, sizeof(g.runsc), err);
	if (r < 0 || (r = aj_policy_validate(p, err)) < 0 ||
	    (r = aj_gv_refuse_unsupported(p, err)) < 0 || (r = check_command(p, err)) < 0)
		return r < 0 ? r : -ENOENT;
	/* one redactor per stream: each holds back its own partial match */
	aj_redactor red[2];
	aj_redactor_init(&red[0]);
	aj_redactor_init(&red[1]);
	if (aj_redactor_init_policy(&red[0], p) < 0 || aj_redactor_init_policy(&red[1], p) < 0) {
		aj_redactor_free(&red[0]);
		aj_redactor_free(&red[1]);
		return aj_err(err, ENOMEM, "redactor");
	}
	/* --publish: the agent bound in, each connection a runsc exec of it */
	aj_gv_publish *gp = NULL;
	if (p->n_publish && ((r = aj_gv_find_agent(agent, sizeof(agent), err)) < 0 ||
			     (r = aj_gv_publish_listen(&gp, p, err)) < 0)) {
		aj_gv_publish_stop(&gp);
		aj_redactor_free(&red[0]);
		aj_redactor_free(&red[1]);
		return r;
	}
	g.agent = gp ? agent : NULL;
	aj_relay relay;
	aj_relay_init(&relay);
	/* through pipes when redacting, and when the caller's stdout or stderr
	 * is a file: the Sentry would write a donated file at its own offset,
	 * over what the caller had written there before */
	bool redact = aj_redactor_active(&red[0]);
	bool relayed = redact || !stream_fd(1) || !stream_fd(2);
	int out[2] = {-1, -1};
	if ((r = aj_gv_setup(&g, err)) == 0 && relayed) {
		int po[2], pe[2];
		if (pipe2(po, O_CLOEXEC) < 0 || pipe2(pe, O_CLOEXEC) < 0) {
			r = aj_err(err, errno, "pipe");
		} else {
			out[0] = po[1], out[1] = pe[1];
			aj_relay_add(&relay, po[0], 1, false, true);
			if (redact)
				aj_relay_set_redactor(&relay, &red[0]);
			aj_relay_add(&relay, pe[0], 2, false, true);
			if (redact)
				aj_relay_set_redactor(&relay, &red[1]);
		}
	}
	pid_t pid = r == 0 ? aj_gv_start(&g, out, false, err) : -1;
	for (int i = 0; i < 2; i++)
		if (out[i] >= 0)
			close(out[i]);
	if (pid > 0 && (r = aj_gv_publish_start(gp, &g, err)) < 0) {
		kill(pid, SIGKILL);
		while (waitpid(pid, NULL, 0) < 0 && errno == EINTR)
			;
	} else if (pid > 0) {
		int status = wait_run(&g, pid, relayed ? &relay : NULL, res);
		result(&g, status, res);
		r = 0;
	} else if (r == 0) {
		r = pid;
	}
	aj_gv_publish_stop(&gp);
	aj_relay_close(&relay);
	aj_redactor_free(&red[0]);
	aj_redactor_free(&red[1]);
	aj_gv_teardown(&g);
	return r;
}
