/* SPDX-License-Identifier: MIT */
/* agentjail oci: the OCI runtime command line (as runc's) for Podman and
 * other engines: create, start, state, kill, delete, exec, pause, resume,
 * ps, update, features (docs/oci.md). `create` forks a monitor that builds
 * the sandbox on the level-1 core and holds its command before exec until
 * `start` writes to the state directory's exec.fifo; the monitor removes
 * every trace of the sandbox when the command ends. The pid file names a
 * process in the container's namespaces that the engine waits for (it
 * exits with the command's status); `state`'s pid is the command's.
 * Here: the dispatch, the global options, create, start, state, kill,
 * delete, features; the monitor is in oci_monitor.c, exec in oci_exec.c,
 * pause, resume, ps and update in oci_ctl.c. */
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <jansson.h>
#include <limits.h>
#include <poll.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/utsname.h>
#include <time.h>
#include <unistd.h>

#include "commands.h"
#include "error.h"
#include "net.h"
#include "nsjoin.h"
#include "oci_bundle.h"
#include "oci_common.h"
#include "util.h"

static const char oci_usage[] =
    "Usage: agentjail oci [--root DIR] [--log FILE] [--log-format text|json] COMMAND\n"
    "\n"
    "The OCI runtime command line (runc's), for Podman and other engines:\n"
    "  agentjail oci create [--bundle DIR] [--pid-file FILE] [--console-socket SOCK] ID\n"
    "                     build the container from DIR/config.json, its command held\n"
    "  agentjail oci start ID      run the held command\n"
    "  agentjail oci state ID      the runtime-spec state as JSON\n"
    "  agentjail oci kill [--all] ID [SIGNAL]\n"
    "                     TERM (default), KILL, INT, HUP, QUIT, USR1 or USR2\n"
    "  agentjail oci delete [--force] ID\n"
    "                     remove it (--force: even a running or paused one)\n"
    "  agentjail oci pause ID, resume ID\n"
    "                     freeze or thaw every process of it (its freezer cgroup)\n"
    "  agentjail oci ps [--format table|json] ID\n"
    "                     the host pids of its processes\n"
    "  agentjail oci update --resources FILE|- ID\n"
    "                     new limits, cpu weight and cpuset (linux.resources JSON)\n"
    "  agentjail oci features    what is supported, as JSON\n"
    "\n"
    "--root DIR: the state directories (default /run/agentjail-oci as root, else\n"
    "$XDG_RUNTIME_DIR/agentjail-oci). --log FILE: errors appended there too, as JSON\n"
    "lines with --log-format json. Errors: exit 125. Docs: docs/oci.md.\n";

/* A joined uts namespace keeps its name (the sandbox's user namespace
 * does not own it): a bundle's hostname must be that name. */
static int check_hostname(const aj_oci_config *c, aj_error *err)
{
	struct utsname u;
	if (!c->policy.hostname || (uname(&u) == 0 && !strcmp(u.nodename, c->policy.hostname)))
		return 0;
	aj_err(err, EINVAL,
	       "hostname %s with the uts namespace %s, whose name is %s: a joined uts "
	       "namespace's name is not changed",
	       c->policy.hostname, c->utsns, u.nodename);
	aj_err_hint(err, "leave hostname out, or give the pod's (docs/oci.md)");
	return -EINVAL;
}

/* A pod's ipc and uts namespaces (the CRI's pause container's): both
 * checked, then joined by this process as root, before the sandbox's user
 * namespace is made (the monitor and the sandbox inherit them), before the
 * network's wall: a refusal changes nothing. The runtime's own are kept
 * for the hooks (they run in the runtime's namespaces). */
static int join_pod_namespaces(const aj_oci_config *c, aj_error *err)
{
	_cleanup_close_ int ipc = -1, uts = -1;
	if ((c->ipcns && (ipc = aj_ns_open(c->ipcns, CLONE_NEWIPC, err)) < 0) ||
	    (c->utsns && (uts = aj_ns_open(c->utsns, CLONE_NEWUTS, err)) < 0))
		return -EINVAL;
	if ((ipc >= 0 &&
	     (aj_oci_runtime_ipcns = open("/proc/self/ns/ipc", O_RDONLY | O_CLOEXEC)) < 0) ||
	    (uts >= 0 &&
	     (aj_oci_runtime_utsns = open("/proc/self/ns/uts", O_RDONLY | O_CLOEXEC)) < 0))
		return aj_err(err, errno, "cannot open this process's namespaces");
	if ((ipc >= 0 && aj_ns_enter(ipc, CLONE_NEWIPC, c->ipcns, err) < 0) ||
	    (uts >= 0 && aj_ns_enter(uts, CLONE_NEWUTS, c->utsns, err) < 0) ||
	    (uts >= 0 && check_hostname(c, err) < 0))
		return -EINVAL;
	return 0;
}

static int cmd_create(int argc, char **argv, char **main_argv)
{
	static const struct option opts[] = {
	    {"bundle", required_argument, NULL, 'b'},
	    {"pid-file", required_argument, NULL, 'p'},
	    {"console-socket", required_argument, NULL, 'c'},
	    {"no-pivot", no_argument, NULL, 'n'},
	    {"no-new-keyring", no_argument, NULL, 'k'},
	    {"preserve-fds", required_argument, NULL, 'f'},
	    {NULL, 0, NULL, 0},
	};
	const char *bundle = ".", *pid_file = NULL, *console = NULL;
	int c;
	optind = 1;
	while ((c = getopt_long(argc, argv, "+b:", opts, NULL)) != -1) {
		if (c == 'b')
			bundle = optarg;
		else if (c == 'p')
			pid_file = optarg;
		else if (c == 'c')
			console = optarg;
		else if (c == 'f' && strcmp(optarg, "0"))
			return aj_oci_failf(
			    "--preserve-fds %s is not supported (fix: pass no extra "
			    "descriptors; docs/oci.md)",
			    optarg);
		else if (c == '?' || c == ':')
			return aj_oci_failf("create: unknown or incomplete option '%s' (fix: see "
					    "agentjail oci --help)",
					    argv[optind - 1]);
	}
	if (optind + 1 != argc)
		return aj_oci_failf(
		    "create needs one container id (fix: agentjail oci create --bundle "
		    "DIR ID)");
	const char *id = argv[optind];
	if (!aj_oci_id_valid(id))
		return aj_oci_failf(
		    "container id '%s' is not valid (fix: letters, digits, '_', '.', '-')", id);
	char dir[PATH_MAX], cfgpath[PATH_MAX + 16];
	if (!realpath(bundle, dir))
		return aj_oci_failf("bundle %s: %s (fix: --bundle DIR with a config.json)", bundle,
				    strerror(errno));
	snprintf(cfgpath, sizeof(cfgpath), "%s/config.json", dir);
	_cleanup_free_ char *text = NULL;
	size_t len = 0;
	if (aj_read_file(cfgpath, &text, &len) < 0)
		return aj_oci_failf("cannot read %s: %s (fix: a bundle is a directory with a "
				    "config.json, runtime-spec 1.x)",
				    cfgpath, strerror(errno));
	aj_oci_config cfg;
	aj_error err;
	aj_err_clear(&err);
	if (aj_oci_config_parse(text, len, dir, &cfg, &err) < 0)
		return aj_oci_fail(&err);
	if (cfg.terminal != (console != NULL)) {
		aj_oci_config_free(&cfg);
		return aj_oci_failf("process.terminal %s --console-socket (fix: both or neither; "
				    "docs/oci.md)",
				    cfg.terminal ? "needs" : "is false: no");
	}
	if (cfg.terminal)
		cfg.policy.tty = AJ_TTY_ALWAYS;
#ifdef AJ_RUN_NET_HELPER
	/* this program has no network stack: agentjail-net takes the command */
	if (aj_net_wanted(&cfg.policy) || cfg.netns) {
		aj_oci_config_free(&cfg);
		return aj_cli_exec_helper("agentjail-net", main_argv);
	}
#else
	(void)main_argv;
#endif
	if (join_pod_namespaces(&cfg, &err) < 0) {
		aj_oci_config_free(&cfg);
		return aj_oci_fail(&err);
	}
	/* an engine's network namespace: this process joins it (the monitor
	 * and the sandbox inherit it), walled unless the annotations open it */
	if (cfg.netns &&
	    (aj_oci_runtime_netns = open("/proc/self/ns/net", O_RDONLY | O_CLOEXEC)) < 0) {
		aj_oci_config_free(&cfg);
		return aj_oci_failf("cannot open this process's network namespace: %s",
				    strerror(errno));
	}
	if (cfg.netns && aj_net_join_netns(cfg.netns, cfg.netns_open, &err) < 0) {
		aj_oci_config_free(&cfg);
		return aj_oci_fail(&err);
	}
	_cleanup_close_ int rootfd = aj_oci_open_root(true);
	if (rootfd == -EPERM) {
		aj_oci_config_free(&cfg);
		return aj_oci_failf(
		    "the state root is another user's or writable by others: refused "
		    "(fix: --root DIR, a directory of yours, not group- or other-writable)");
	}
	if (rootfd < 0) {
		aj_oci_config_free(&cfg);
		return aj_oci_failf("cannot make the state root: %s (fix: --root DIR, writable)",
				    strerror(-rootfd));
	}
	if (mkdirat(rootfd, id, 0700) < 0) {
		aj_oci_config_free(&cfg);
		return aj_oci_failf(
		    "container %s: %s (fix: another id, or agentjail oci delete %s)", id,
		    errno == EEXIST ? "already exists" : strerror(errno), id);
	}
	int rc = aj_oci_spawn_monitor(&cfg, rootfd, id, dir, pid_file, console, text);
	if (rc != 0)
		(void)aj_oci_remove_state(rootfd, id);
	aj_oci_config_free(&cfg);
	return rc;
}

/* ---- start, state, kill, delete, features ---- */

static int one_id(int argc, char **argv, const char *what)
{
	if (argc != 2)
		return aj_oci_failf("%s needs one container id (fix: agentjail oci %s ID)", what,
				    what);
	return 0;
}

/* After start: the command's host pid into the state (runtime-spec's
 * pid, what engines read for top, nsenter and inspect), once init has
 * started it (2 s at most; a command that ended at once leaves init's). */
static void record_command(int rootfd, const char *id)
{
	aj_oci_state st;
	if (aj_oci_load_state(rootfd, id, &st))
		return;
	pid_t cmd = 0;
	for (int i = 0; i < 400 && aj_oci_init_alive(&st) && !(cmd = aj_oci_first_child(st.init));
	     i++) {
		struct timespec ts = {0, 5 * 1000 * 1000};
		nanosleep(&ts, NULL);
	}
	unsigned long long t = cmd > 0 ? aj_oci_start_time(cmd) : 0;
	_cleanup_close_ int dfd = openat(rootfd, id, O_PATH | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	char *text = NULL;
	if (t && dfd >= 0 && json_object_set_new(st.j, "cmd", json_integer(cmd)) == 0 &&
	    json_object_set_new(st.j, "cmd_start", json_integer((json_int_t)t)) == 0 &&
	    (text = json_dumps(st.j, JSON_COMPACT)))
		(void)aj_oci_write_file_at(dfd, OCI_STATE, text);
	free(text);
	json_decref(st.j);
}

static int cmd_start(int rootfd, const char *id)
{
	aj_oci_state st;
	if (aj_oci_load_state(rootfd, id, &st))
		return AJ_EXIT_INTERNAL;
	bool created = !strcmp(st.status, "created");
	const char *status = st.status;
	json_decref(st.j);
	if (!created)
		return aj_oci_failf(
		    "container %s is %s, not created (fix: only a created container "
		    "starts)",
		    id, status);
	char fifo[PATH_MAX];
	snprintf(fifo, sizeof(fifo), "%s/" OCI_FIFO, id);
	int fd = openat(rootfd, fifo, O_WRONLY | O_NONBLOCK | O_CLOEXEC | O_NOFOLLOW);
	if (fd < 0 || write(fd, "1", 1) != 1) {
		int e = errno;
		if (fd >= 0)
			close(fd);
		return aj_oci_failf("cannot start %s: %s (its monitor is gone)", id, strerror(e));
	}
	close(fd);
	(void)unlinkat(rootfd, fifo, 0);
	record_command(rootfd, id);
	if (aj_oci_load_state(rootfd, id, &st) == 0) {
		aj_error err;
		(void)aj_oci_run_hooks(json_object_get(st.j, "hooks"), "poststart", id, "running",
				       st.init, json_string_value(json_object_get(st.j, "bundle")),
				       json_object_get(st.j, "annotations"), false, &err);
		json_decref(st.j);
	}
	return 0;
}

static int cmd_state(int rootfd, const char *id)
{
	aj_oci_state st;
	if (aj_oci_load_state(rootfd, id, &st))
		return AJ_EXIT_INTERNAL;
	json_t *out = json_pack(
	    "{s:O, s:O, s:s, s:i, s:O, s:O, s:O}", "ociVersion",
	    json_object_get(st.j, "ociVersion"), "id", json_object_get(st.j, "id"), "status",
	    st.status, "pid", strcmp(st.status, "stopped") ? (int)st.cpid : 0, "bundle",
	    json_object_get(st.j, "bundle"), "annotations", json_object_get(st.j, "annotations"),
	    "created", json_object_get(st.j, "created"));
	json_decref(st.j);
	if (!out)
		return aj_oci_failf(
		    "the state of %s is damaged (fix: agentjail oci delete --force %s)", id, id);
	json_dumpf(out, stdout, JSON_INDENT(2) | JSON_PRESERVE_ORDER);
	json_decref(out);
	putchar('\n');
	return fflush(stdout) == 0 ? 0 : AJ_EXIT_INTERNAL;
}

static int parse_signal(const char *s)
{
	static const struct {
		const char *name;
		int sig;
	} sigs[] = {{"TERM", SIGTERM}, {"KILL", SIGKILL}, {"INT", SIGINT},  {"HUP", SIGHUP},
		    {"QUIT", SIGQUIT}, {"USR1", SIGUSR1}, {"USR2", SIGUSR2}};
	if (!strncmp(s, "SIG", 3))
		s += 3;
	char *end;
	long n = strtol(s, &end, 10);
	for (size_t i = 0; i < AJ_ARRAY_SIZE(sigs); i++)
		if (!strcmp(s, sigs[i].name) || (*s && !*end && n == sigs[i].sig))
			return sigs[i].sig;
	return -1;
}

static int cmd_kill(int rootfd, int argc, char **argv)
{
	int i = 1;
	if (i < argc && (!strcmp(argv[i], "--all") || !strcmp(argv[i], "-a")))
		i++; /* one signal reaches the whole sandbox either way (docs/oci.md) */
	if (argc - i < 1 || argc - i > 2)
		return aj_oci_failf(
		    "kill needs a container id and a signal (fix: agentjail oci kill ID "
		    "[SIGNAL])");
	const char *id = argv[i];
	int sig = argc - i == 2 ? parse_signal(argv[i + 1]) : SIGTERM;
	if (sig < 0)
		return aj_oci_failf(
		    "kill: signal %s is not supported (fix: TERM, KILL, INT, HUP, QUIT, "
		    "USR1 or USR2)",
		    argv[i + 1]);
	aj_oci_state st;
	if (aj_oci_load_state(rootfd, id, &st))
		return AJ_EXIT_INTERNAL;
	int r = 0;
	if (st.orphan)
		aj_oci_end_orphan(&st); /* its monitor is gone: it cannot go on */
	else if (!strcmp(st.status, "stopped"))
		/* runc's words, which containerd's shim takes for "already
		 * finished" (its StopPodSandbox kills a stopped pause container) */
		r = aj_oci_failf("container %s: container not running", id);
	/* KILL: the sandbox's init, and with it every process in it; the
	 * others: the monitor, which forwards them to the command */
	else if (sig == SIGKILL && aj_oci_init_alive(&st))
		r = kill(st.init, SIGKILL) < 0 ? aj_oci_failf("kill %s: %s", id, strerror(errno))
					       : 0;
	else if (kill(st.pid, sig) < 0)
		r = aj_oci_failf("kill %s: %s", id, strerror(errno));
	if (r == 0 && sig == SIGKILL && !strcmp(st.status, "paused"))
		aj_oci_thaw(&st); /* a frozen process dies only once thawed */
	json_decref(st.j);
	return r;
}

/* Wait for the monitor to finish its teardown (10 s at most). */
static int wait_gone(pid_t pid)
{
	int fd = (int)syscall(SYS_pidfd_open, pid, 0);
	if (fd < 0)
		return errno == ESRCH ? 0 : -errno;
	struct pollfd pf = {fd, POLLIN, 0};
	int n = poll(&pf, 1, 10000);
	close(fd);
	return n == 1 ? 0 : -ETIMEDOUT;
}

static int cmd_delete(int rootfd, int argc, char **argv, char **main_argv)
{
	bool force = false;
	int i = 1;
	for (; i < argc && argv[i][0] == '-'; i++) {
		if (!strcmp(argv[i], "--force") || !strcmp(argv[i], "-f"))
			force = true;
		else
			return aj_oci_failf(
			    "delete: unknown option '%s' (fix: agentjail oci delete "
			    "[--force] ID)",
			    argv[i]);
	}
	if (argc - i != 1)
		return aj_oci_failf(
		    "delete needs one container id (fix: agentjail oci delete [--force] ID)");
	const char *id = argv[i];
	aj_oci_state st;
	if (aj_oci_load_state(rootfd, id, &st))
		return AJ_EXIT_INTERNAL;
#ifdef AJ_RUN_NET_HELPER
	/* agentjail's own network: its sweep (below) is agentjail-net's */
	if (json_is_true(json_object_get(st.j, "net"))) {
		json_decref(st.j);
		return aj_cli_exec_helper("agentjail-net", main_argv);
	}
#else
	(void)main_argv;
#endif
	int r = 0;
	/* as runc: a created one is killed, a running or paused one only
	 * with --force (nothing changed) */
	if ((!strcmp(st.status, "running") || !strcmp(st.status, "paused")) && !force) {
		r = aj_oci_failf("cannot delete container %s that is not stopped: it is %s (fix: "
				 "agentjail oci kill %s KILL, then delete; or delete --force)",
				 id, st.status, id);
	} else if (st.orphan) {
		aj_oci_end_orphan(&st);
	} else if (st.ending) {
		/* stopped, its monitor still cleaning up (an engine deletes as
		 * soon as its init is reaped): the state goes once it is done */
		if (wait_gone(st.pid) < 0)
			r = aj_oci_failf("container %s: its monitor (pid %d) did not end", id,
					 (int)st.pid);
	} else if (strcmp(st.status, "stopped")) {
		if (aj_oci_init_alive(&st))
			kill(st.init, SIGKILL);
		else
			kill(st.pid, SIGTERM);
		if (!strcmp(st.status, "paused"))
			aj_oci_thaw(&st);
		if (wait_gone(st.pid) < 0)
			r = aj_oci_failf("container %s: its monitor (pid %d) did not end", id,
					 (int)st.pid);
	}
	if (r == 0 && aj_oci_remove_state(rootfd, id) < 0)
		r = aj_oci_failf("cannot remove the state of %s: %s", id, strerror(errno));
	/* a monitor SIGKILLed left its cgroups and its network's nft table
	 * and links (the next sandbox's sweep would take them): gone now */
	if (r == 0) {
		aj_cgroup_sweep(json_string_value(json_object_get(st.j, "cgroups")));
		if (json_is_true(json_object_get(st.j, "net")))
			aj_net_sweep();
	}
	aj_error err;
	if (r == 0)
		(void)aj_oci_run_hooks(json_object_get(st.j, "hooks"), "poststop", id, "stopped", 0,
				       json_string_value(json_object_get(st.j, "bundle")),
				       json_object_get(st.j, "annotations"), false, &err);
	json_decref(st.j);
	return r;
}

static int cmd_features(void)
{
	json_t *f = json_pack(
	    "{s:s, s:s, s:[], s:[s,s,s,s], s:{s:[s,s,s,s,s,s,s], s:[], s:{s:b, s:b, s:b, s:b},"
	    " s:{s:b}, s:{s:b}, s:{s:b}}, s:{s:s, s:s}}",
	    "ociVersionMin", "1.0.0", "ociVersionMax", OCI_VERSION, "hooks", "mountOptions", "bind",
	    "rbind", "ro", "rw", "linux", "namespaces", "pid", "network", "ipc", "uts", "mount",
	    "user", "cgroup", "capabilities", "cgroup", "v1", 1, "v2", 1, "systemd", 0,
	    "systemdUser", 0, "seccomp", "enabled", 0, "apparmor", "enabled", 0, "selinux",
	    "enabled", 0, "annotations", "run.agentjail.net", "none|open", "run.agentjail.allow",
	    "HOST[:PORT],...");
	if (!f)
		return aj_oci_failf("features: out of memory");
	json_dumpf(f, stdout, JSON_INDENT(2) | JSON_PRESERVE_ORDER);
	json_decref(f);
	putchar('\n');
	return fflush(stdout) == 0 ? 0 : AJ_EXIT_INTERNAL;
}

static int global_opts(int argc, char **argv)
{
	static const struct option opts[] = {
	    {"root", required_argument, NULL, 'r'},
	    {"log", required_argument, NULL, 'l'},
	    {"log-format", required_argument, NULL, 'F'},
	    {"systemd-cgroup", no_argument, NULL, 's'},
	    {"debug", no_argument, NULL, 'd'},
	    {"rootless", required_argument, NULL, 'R'},
	    {"help", no_argument, NULL, 'h'},
	    {NULL, 0, NULL, 0},
	};
	int c;
	opterr = 0;
	optind = 1;
	while ((c = getopt_long(argc, argv, "+h", opts, NULL)) != -1) {
		if (c == 'h') {
			fputs(oci_usage, stdout);
			return -1;
		}
		if (c == 'r')
			aj_oci_g.root = optarg;
		else if (c == 'l' && !(aj_oci_g.log = fopen(optarg, "ae")))
			return aj_oci_failf("--log %s: %s", optarg, strerror(errno));
		else if (c == 'F' && strcmp(optarg, "json") && strcmp(optarg, "text"))
			return aj_oci_failf("--log-format %s: expected text or json", optarg);
		else if (c == 'F')
			aj_oci_g.json = !strcmp(optarg, "json");
		else if (c == 's')
			return aj_oci_failf(
			    "--systemd-cgroup is not supported: agentjail makes its cgroups "
			    "below its own (fix: podman --cgroup-manager cgroupfs; "
			    "docs/oci.md)");
		else if (c == '?' || c == ':')
			return aj_oci_failf(
			    "oci: unknown or incomplete option '%s' (fix: see agentjail oci "
			    "--help)",
			    argv[optind - 1]);
	}
	return 0;
}

int aj_cmd_oci(int argc, char **argv)
{
	memset(&aj_oci_g, 0, sizeof(aj_oci_g));
	char **main_argv = argv - 1; /* main's (agentjail-net takes the same) */
	int r = global_opts(argc, argv);
	if (r != 0)
		return r == -1 ? 0 : r;
	argc -= optind;
	argv += optind;
	const char *cmd = argc > 0 ? argv[0] : "";
	for (int i = 1; i < argc && strcmp(cmd, "exec"); i++) /* exec: the command's */
		if (!strcmp(argv[i], "--help") || !strcmp(argv[i], "-h")) {
			fputs(oci_usage, stdout);
			return 0;
		}
	int rc;
	if (!strcmp(cmd, "create"))
		rc = cmd_create(argc, argv, main_argv);
	else if (!strcmp(cmd, "features"))
		rc = cmd_features();
	else if (!strcmp(cmd, "start") || !strcmp(cmd, "state") || !strcmp(cmd, "kill") ||
		 !strcmp(cmd, "delete") || !strcmp(cmd, "exec") || !strcmp(cmd, "pause") ||
		 !strcmp(cmd, "resume") || !strcmp(cmd, "ps") || !strcmp(cmd, "update")) {
		int rootfd = aj_oci_open_root(false);
		if (rootfd == -EPERM)
			rc = aj_oci_failf("the state root is another user's or writable by others: "
					  "refused (fix: --root DIR, a directory of yours)");
		else if (rootfd < 0 && cmd[0] != 'k' && cmd[0] != 'e' && argc >= 2)
			rc = aj_oci_failf("container %s does not exist", argv[argc - 1]);
		else if (rootfd < 0)
			rc = aj_oci_failf("no containers at the state root (fix: --root DIR)");
		else if (!strcmp(cmd, "kill"))
			rc = cmd_kill(rootfd, argc, argv);
		else if (!strcmp(cmd, "delete"))
			rc = cmd_delete(rootfd, argc, argv, main_argv);
		else if (!strcmp(cmd, "exec"))
			rc = aj_oci_cmd_exec(rootfd, argc, argv);
		else if (!strcmp(cmd, "ps"))
			rc = aj_oci_cmd_ps(rootfd, argc, argv);
		else if (!strcmp(cmd, "update"))
			rc = aj_oci_cmd_update(rootfd, argc, argv);
		else if ((rc = one_id(argc, argv, cmd)) != 0)
			;
		else if (!strcmp(cmd, "pause") || !strcmp(cmd, "resume"))
			rc = aj_oci_cmd_pause(rootfd, argv[1], cmd[0] == 'p');
		else
			rc =
			    cmd[3] == 'r' ? cmd_start(rootfd, argv[1]) : cmd_state(rootfd, argv[1]);
		if (rootfd >= 0)
			close(rootfd);
	} else if (!*cmd)
		rc = aj_oci_failf("oci needs a command (fix: see agentjail oci --help)");
	else
		rc = aj_oci_failf(
		    "oci %s is not supported (fix: create, start, state, kill, delete, exec, "
		    "pause, resume, ps, update or features; docs/oci.md)",
		    cmd);
	if (aj_oci_g.log)
		fclose(aj_oci_g.log);
	return rc;
}
