/* SPDX-License-Identifier: MIT */
/* agentjail oci exec: one more command in a running container, handed to
 * its monitor over exec.sock (docs/oci.md, "exec"). */
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <jansson.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/signalfd.h>
#include <unistd.h>

#include "error.h"
#include "oci_bundle.h"
#include "oci_common.h"
#include "policy.h"
#include "run_exec.h"
#include "util.h"

/* ---- exec: one more command in a running container ---- */

typedef struct exec_opts {
	const char *process, *console, *pid_file, *cwd, *user;
	bool tty, detach;
	aj_policy extra; /* --env entries, checked */
} exec_opts;

static int exec_parse(int argc, char **argv, exec_opts *o)
{
	static const struct option opts[] = {
	    {"process", required_argument, NULL, 'p'},
	    {"tty", no_argument, NULL, 't'},
	    {"console-socket", required_argument, NULL, 'c'},
	    {"pid-file", required_argument, NULL, 'P'},
	    {"detach", no_argument, NULL, 'd'},
	    {"cwd", required_argument, NULL, 'w'},
	    {"env", required_argument, NULL, 'e'},
	    {"user", required_argument, NULL, 'u'},
	    {"no-new-privs", no_argument, NULL, 'n'},
	    {"cap", required_argument, NULL, 'C'},
	    {"additional-gids", required_argument, NULL, 'g'},
	    {"preserve-fds", required_argument, NULL, 'f'},
	    {"process-label", required_argument, NULL, 'l'},
	    {"apparmor", required_argument, NULL, 'a'},
	    {"cgroup", required_argument, NULL, 'G'},
	    {"ignore-paused", no_argument, NULL, 'i'},
	    {NULL, 0, NULL, 0},
	};
	int c;
	aj_error err;
	optind = 1;
	while ((c = getopt_long(argc, argv, "+p:tde:u:g:c:", opts, NULL)) != -1) {
		switch (c) {
		case 'p': o->process = optarg; break;
		case 't': o->tty = true; break;
		case 'c': o->console = optarg; break;
		case 'P': o->pid_file = optarg; break;
		case 'd': o->detach = true; break;
		case 'w': o->cwd = optarg; break;
		case 'u': o->user = optarg; break;
		case 'n':
		case 'i': break; /* no_new_privs: always; never paused */
		case 'C':
		case 'g': break; /* agentjail's own capabilities and groups */
		case 'e':
			aj_err_clear(&err);
			if (aj_policy_add_env(&o->extra, optarg, &err) < 0)
				return aj_oci_fail(&err);
			break;
		case 'f':
			if (strcmp(optarg, "0"))
				return aj_oci_failf(
				    "exec --preserve-fds %s is not supported (fix: pass no "
				    "extra descriptors; docs/oci.md)",
				    optarg);
			break;
		case 'l':
		case 'a':
			if (*optarg)
				return aj_oci_failf(
				    "exec --%s is not supported (agentjail applies no LSM "
				    "profile; docs/oci.md)",
				    c == 'l' ? "process-label" : "apparmor");
			break;
		case 'G':
			return aj_oci_failf("exec --cgroup is not supported (fix: the container's "
					    "cgroup is the only one; docs/oci.md)");
		default:
			return aj_oci_failf(
			    "exec: unknown or incomplete option '%s' (fix: see agentjail "
			    "oci --help)",
			    argv[optind - 1]);
		}
	}
	return 0;
}

/* The command: --process FILE, else the arguments and options. */
static int exec_command(exec_opts *o, int argc, char **argv, aj_oci_config *cmd)
{
	aj_error err;
	aj_err_clear(&err);
	if (o->process) {
		if (argc > 0)
			return aj_oci_failf("exec: --process FILE or a command, not both (fix: the "
					    "command goes in the file's args)");
		_cleanup_free_ char *text = NULL;
		size_t len = 0;
		if (aj_read_file(o->process, &text, &len) < 0)
			return aj_oci_failf("cannot read the process file %s: %s", o->process,
					    strerror(errno));
		if (aj_oci_process_parse(text, len, cmd, &err) < 0)
			return aj_oci_fail(&err);
		if (o->tty)
			cmd->terminal = true;
	} else {
		memset(cmd, 0, sizeof(*cmd));
		aj_policy_init(&cmd->policy);
		if (argc < 1)
			return aj_oci_failf(
			    "exec needs a container id and a command (fix: agentjail oci "
			    "exec ID COMMAND [ARGS], or --process FILE)");
		if (!(cmd->argv = calloc((size_t)argc + 1, sizeof(char *))))
			return aj_oci_failf("exec: out of memory");
		for (int i = 0; i < argc; i++)
			if (!(cmd->argv[i] = strdup(argv[i])))
				return aj_oci_failf("exec: out of memory");
		cmd->terminal = o->tty;
	}
	if ((o->cwd && aj_policy_set_cwd(&cmd->policy, o->cwd, &err) < 0) ||
	    (o->user && aj_policy_set_user(&cmd->policy, o->user, &err) < 0))
		return aj_oci_fail(&err);
	if (o->user)
		cmd->user = true;
	for (size_t i = 0; i < o->extra.n_env; i++)
		if (aj_policy_add_env(&cmd->policy, o->extra.env[i], &err) < 0)
			return aj_oci_fail(&err);
	if (cmd->terminal != (o->console != NULL))
		return aj_oci_failf("exec: a terminal %s --console-socket (fix: --tty and "
				    "--console-socket together, or neither; docs/oci.md)",
				    cmd->terminal ? "needs" : "is not asked for: no");
	return 0;
}

/* Waits for the command with the caller's signals forwarded to it. */
static int exec_wait(int conn)
{
	sigset_t set;
	sigemptyset(&set);
	int sigs[] = {SIGINT, SIGTERM, SIGHUP, SIGQUIT, SIGUSR1, SIGUSR2, SIGWINCH};
	for (size_t i = 0; i < AJ_ARRAY_SIZE(sigs); i++)
		sigaddset(&set, sigs[i]);
	sigprocmask(SIG_BLOCK, &set, NULL);
	_cleanup_close_ int sfd = signalfd(-1, &set, SFD_CLOEXEC);
	return aj_run_exec_wait(conn, sfd);
}

int aj_oci_cmd_exec(int rootfd, int argc, char **argv)
{
	exec_opts o;
	memset(&o, 0, sizeof(o));
	aj_policy_init(&o.extra);
	int rc = exec_parse(argc, argv, &o);
	aj_oci_config cmd;
	memset(&cmd, 0, sizeof(cmd));
	aj_policy_init(&cmd.policy);
	if (rc == 0 && optind >= argc)
		rc = aj_oci_failf("exec needs a container id (fix: agentjail oci exec ID COMMAND)");
	const char *id = rc == 0 ? argv[optind] : NULL;
	if (rc == 0)
		rc = exec_command(&o, argc - optind - 1, argv + optind + 1, &cmd);
	aj_policy_free(&o.extra);
	aj_oci_state st = {0};
	if (rc == 0 && aj_oci_load_state(rootfd, id, &st))
		rc = AJ_EXIT_INTERNAL;
	else if (rc == 0 && (strcmp(st.status, "running") || !aj_oci_init_alive(&st)))
		rc = aj_oci_failf("container %s is %s, not running (fix: exec runs in a started "
				  "container)",
				  id, st.status);
	json_decref(st.j);
	int master = -1, slave = -1;
	if (rc == 0 && cmd.terminal && (master = aj_oci_open_pty(&slave)) < 0)
		rc = aj_oci_failf("cannot make a terminal for exec in %s: %s", id,
				  strerror(-master));
	if (rc == 0 && master >= 0 && cmd.rows && cmd.cols) {
		struct winsize ws = {.ws_row = (unsigned short)cmd.rows,
				     .ws_col = (unsigned short)cmd.cols};
		(void)ioctl(master, TIOCSWINSZ, &ws);
	}
	int r;
	if (rc == 0 && master >= 0 && (r = aj_oci_send_console(o.console, master)) < 0)
		rc = aj_oci_failf("--console-socket %s: %s", o.console, strerror(-r));
	if (master >= 0)
		close(master); /* the engine's now */
	/* the caller's stdio, or the new terminal; a terminal of the caller's
	 * never goes in (TIOCSTI would type into it): /dev/null instead */
	int io[3] = {-1, -1, -1}, conn = -1;
	for (int i = 0; rc == 0 && i < 3; i++) {
		if (slave >= 0)
			io[i] = slave;
		else if (isatty(i) || fcntl(i, F_GETFD) < 0)
			io[i] = open("/dev/null", i ? O_WRONLY | O_CLOEXEC : O_RDONLY | O_CLOEXEC);
		else
			io[i] = i;
	}
	char sock[64]; /* through an fd on its directory: sun_path is short */
	_cleanup_close_ int dfd =
	    rc == 0 ? openat(rootfd, id, O_PATH | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC) : -1;
	snprintf(sock, sizeof(sock), "/proc/self/fd/%d/" OCI_EXEC_SOCK, dfd);
	char *envv[AJ_MAX_ENV + 1] = {NULL};
	memcpy(envv, cmd.policy.env, cmd.policy.n_env * sizeof(char *));
	aj_run_exec_req req = {.argv = cmd.argv,
			       .env = envv,
			       .cwd = cmd.policy.cwd,
			       .stdio = {io[0], io[1], io[2]},
			       .tty = slave >= 0,
			       .set_user = cmd.user,
			       .uid = cmd.policy.uid,
			       .gid = cmd.policy.gid};
	aj_error err;
	aj_err_clear(&err);
	if (rc == 0 && dfd < 0)
		rc = aj_oci_failf("container %s does not exist", id);
	else if (rc == 0 && (conn = aj_run_exec_start(sock, &req, &err)) < 0)
		rc = aj_oci_fail(&err);
	for (int i = 0; i < 3; i++)
		if (io[i] > 2 && io[i] != slave)
			close(io[i]);
	if (slave >= 0)
		close(slave);
	aj_oci_config_free(&cmd);
	if (rc != 0)
		return rc;
	/* --detach: a process of ours waits for it (the engine's subreaper
	 * waits for the pid file's pid); else this one */
	pid_t pid = o.detach ? fork() : getpid();
	if (pid < 0) {
		close(conn);
		return aj_oci_failf("exec: cannot fork: %s", strerror(errno));
	}
	if (pid == 0) {
		char title[64];
		snprintf(title, sizeof(title), "agentjail-oci-exec %.40s", id);
		aj_proctitle_set(title);
		_exit(exec_wait(conn));
	}
	if (o.pid_file && (r = aj_oci_write_pid_file(o.pid_file, pid)) < 0) {
		close(conn); /* init kills the command */
		return aj_oci_failf("cannot write the pid file %s: %s", o.pid_file, strerror(-r));
	}
	if (o.detach) {
		close(conn);
		return 0;
	}
	return exec_wait(conn);
}
