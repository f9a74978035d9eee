/* SPDX-License-Identifier: MIT */
/* agentjail run: flags -> aj_policy -> aj_sandbox_run. */
#include <errno.h>
#include <getopt.h>
#include <stdio.h>
#include <string.h>

#include "commands.h"
#include "policy.h"
#include "sandbox.h"
#include "util.h"

static const char run_usage[] =
	"Usage: agentjail run [OPTIONS] -- COMMAND [ARG...]\n"
	"\n"
	"Run COMMAND in a new sandbox: new user, mount, pid, ipc, uts, cgroup and\n"
	"network namespaces (loopback only); the host's /usr, /bin, /lib... read-only;\n"
	"a synthesized /etc; fresh /proc and a minimal /dev; tmpfs /tmp and home.\n"
	"\n"
	"Filesystem:\n"
	"  -w, --workspace DIR     bind DIR read-write at /workspace (the default cwd)\n"
	"      --rootfs DIR        use DIR as the root, read-only under a tmpfs overlay\n"
	"      --ro SRC[:DEST]     bind a host path read-only (DEST defaults to SRC)\n"
	"      --rw SRC[:DEST]     bind a host path read-write\n"
	"      --cwd DIR           working directory inside the sandbox\n"
	"      --tmp-size SIZE     size of /tmp, home, /dev/shm and the overlay (256M)\n"
	"Identity and environment:\n"
	"  -u, --user UID[:GID]    uid (and gid) inside the sandbox (0)\n"
	"      --hostname NAME     host name inside the sandbox (agentjail)\n"
	"  -e, --env NAME=VALUE    set a variable; --env NAME copies it from the caller\n"
	"      --env-file FILE     NAME=VALUE lines ('#' comments allowed)\n"
	"Limits (cgroup; the whole sandbox):\n"
	"      --memory SIZE       memory limit, no swap (1G; 0 = none)\n"
	"      --pids N            process limit (256; 0 = none)\n"
	"      --cpus N.N          CPU quota in CPUs (none)\n"
	"Terminal:\n"
	"  -t, --tty               always give the command a new pseudo-terminal\n"
	"  -T, --no-tty            never (default: when stdin and stdout are terminals)\n"
	"Other:\n"
	"  -q, --quiet             don't warn about features this host lacks\n"
	"  -h, --help              show this help\n"
	"\n"
	"Exit status: the command's; 128+N if it was killed by signal N; 125 if\n"
	"agentjail itself failed; 126 if COMMAND is not executable; 127 if not found.\n"
	"SIZE accepts K, M, G suffixes (1024-based).\n";

enum {
	OPT_ROOTFS = 256, OPT_RO, OPT_RW, OPT_CWD, OPT_TMP, OPT_HOST, OPT_ENVFILE,
	OPT_MEM, OPT_PIDS, OPT_CPUS,
};

static const struct option run_opts[] = {
	{"workspace", required_argument, NULL, 'w'}, {"rootfs", required_argument, NULL, OPT_ROOTFS},
	{"ro", required_argument, NULL, OPT_RO},     {"rw", required_argument, NULL, OPT_RW},
	{"cwd", required_argument, NULL, OPT_CWD},   {"tmp-size", required_argument, NULL, OPT_TMP},
	{"user", required_argument, NULL, 'u'},      {"hostname", required_argument, NULL, OPT_HOST},
	{"env", required_argument, NULL, 'e'},       {"env-file", required_argument, NULL, OPT_ENVFILE},
	{"memory", required_argument, NULL, OPT_MEM}, {"pids", required_argument, NULL, OPT_PIDS},
	{"cpus", required_argument, NULL, OPT_CPUS}, {"tty", no_argument, NULL, 't'},
	{"no-tty", no_argument, NULL, 'T'},          {"quiet", no_argument, NULL, 'q'},
	{"help", no_argument, NULL, 'h'},            {NULL, 0, NULL, 0},
};

static int parse_size_opt(const char *flag, const char *v, unsigned long long *out, aj_error *err)
{
	if (aj_parse_size(v, out) < 0) {
		aj_err(err, EINVAL, "%s '%s': expected a size such as 512M or 2G", flag, v);
		return -EINVAL;
	}
	return 0;
}

static int apply_opt(aj_policy *p, int c, const char *v, aj_error *err)
{
	switch (c) {
	case 'w': return aj_policy_set_workspace(p, v, err);
	case OPT_ROOTFS: return aj_policy_set_rootfs(p, v, err);
	case OPT_RO: return aj_policy_add_bind(p, v, false, err);
	case OPT_RW: return aj_policy_add_bind(p, v, true, err);
	case OPT_CWD: return aj_policy_set_cwd(p, v, err);
	case OPT_TMP: return parse_size_opt("--tmp-size", v, &p->tmp_size, err);
	case 'u': return aj_policy_set_user(p, v, err);
	case OPT_HOST: return aj_policy_set_hostname(p, v, err);
	case 'e': return aj_policy_add_env(p, v, err);
	case OPT_ENVFILE: return aj_policy_add_env_file(p, v, err);
	case OPT_MEM: return parse_size_opt("--memory", v, &p->memory, err);
	case OPT_PIDS:
		if (aj_parse_uint(v, 4194304, &p->pids) < 0)
			return aj_err(err, EINVAL, "--pids '%s': expected a number", v);
		return 0;
	case OPT_CPUS: return aj_policy_set_cpus(p, v, err);
	case 't': p->tty = AJ_TTY_ALWAYS; return 0;
	case 'T': p->tty = AJ_TTY_NEVER; return 0;
	case 'q': p->quiet = true; return 0;
	default: return aj_err(err, EINVAL, "unknown option");
	}
}

static void cli_warn(void *ctx, const char *msg)
{
	(void)ctx;
	fprintf(stderr, "agentjail: warning: %s\n", msg);
}

int aj_cmd_run(int argc, char **argv)
{
	aj_policy p;
	aj_policy_init(&p);
	aj_error err;
	aj_err_clear(&err);
	opterr = 0;
	optind = 1;
	int c, r = 0;
	while ((c = getopt_long(argc, argv, "+w:u:e:tTqh", run_opts, NULL)) != -1) {
		if (c == 'h') {
			fputs(run_usage, stdout);
			aj_policy_free(&p);
			return 0;
		}
		if (c == '?' || c == ':') {
			const char *bad = argv[optind - 1];
			if (optopt && c == '?' && strchr("wue", optopt))
				aj_err(&err, EINVAL, "option '%s' needs a value", bad);
			else
				aj_err(&err, EINVAL, "unknown or incomplete option '%s'", bad);
			aj_err_hint(&err, "see agentjail run --help");
			r = -EINVAL;
			break;
		}
		if ((r = apply_opt(&p, c, optarg, &err)) < 0)
			break;
	}
	if (r == 0) {
		p.argv = argv + optind;
		aj_run_hooks hooks = {.warn = cli_warn};
		aj_run_result res;
		r = aj_sandbox_run(&p, &hooks, &res, &err);
		if (r == 0) {
			aj_policy_free(&p);
			return res.exit_code;
		}
	}
	aj_policy_free(&p);
	return aj_cli_fail(&err);
}
