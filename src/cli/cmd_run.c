/* SPDX-License-Identifier: MIT */
/* agentjail run: flags -> aj_policy -> the level's run (backends.h). */
#include <errno.h>
#include <getopt.h>
#include <jansson.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <unistd.h>

#include "backends.h"
#include "commands.h"
#include "image.h"
#include "mint.h"
#include "mintrec.h"
#include "net.h"
#include "plan.h"
#include "policy.h"
#include "sandbox.h"
#include "stall.h"
#include "util.h"

static const char run_usage[] =
    "Usage: agentjail run [OPTIONS] -- COMMAND [ARG...]\n"
    "\n"
    "Run COMMAND in a new sandbox: new user, mount, pid, ipc, uts, cgroup and\n"
    "network namespaces (loopback only by default); the host's /usr, /bin, /lib... read-only;\n"
    "a synthesized /etc; fresh /proc and a minimal /dev; tmpfs /tmp and home.\n"
    "\n"
    "Filesystem:\n"
    "  -w, --workspace DIR     bind DIR read-write at /workspace (the default cwd)\n"
    "      --rootfs DIR        use DIR as the root, read-only under a tmpfs overlay\n"
    "      --image NAME        use a stored image as the root (agentjail image --help)\n"
    "      --ro SRC[:DEST]     bind a host path read-only (DEST defaults to SRC)\n"
    "      --rw SRC[:DEST]     bind a host path read-write\n"
    "      --cwd DIR           working directory inside the sandbox\n"
    "      --disk SIZE         room for everything written outside the workspace:\n"
    "                          /tmp, home, /dev/shm and the --rootfs overlay (512M)\n"
    "Identity and environment:\n"
    "  -u, --user UID[:GID]    uid (and gid) inside the sandbox (0)\n"
    "      --hostname NAME     host name inside the sandbox (agentjail)\n"
    "  -e, --env NAME=VALUE    set a variable; --env NAME copies it from the caller\n"
    "      --env-file FILE     NAME=VALUE lines ('#' comments allowed)\n"
    "Secrets:\n"
    "      --secret NAME=VALUE the command sees NAME set to a placeholder, never\n"
    "                          VALUE; --secret NAME takes VALUE from your environment.\n"
    "                          VALUE (and its base64) is redacted from the output\n"
    "      --secret NAME@HOST[,HOST...]=VALUE  the same, and agentjail's proxy puts\n"
    "                          VALUE in for the placeholder in HTTP requests to those\n"
    "                          hosts only (each also given to --allow); HOSTS:body\n"
    "                          (NAME@HOST:body=VALUE): in request bodies too\n"
    "      --redact VALUE      also replace VALUE by [REDACTED] in the output\n"
    "      --mask GLOB         hide more workspace files (see docs/cli.md)\n"
    "      --no-default-masks  don't hide .env*, *.pem, *.key, id_rsa*, .ssh/, .aws/ ...\n"
    "      --unmask PATH       show PATH of the workspace as it is, secrets and all,\n"
    "                          though a mask matches it (repeatable)\n"
    "      --writable PATH     let the sandbox change PATH of the workspace, one of\n"
    "                          the files host tools run (.git/config, .git/hooks,\n"
    "                          .vscode, .mcp.json, .envrc ...), read-only by default\n"
    "                          (docs/security.md; repeatable)\n"
    "Limits (cgroup; the whole sandbox):\n"
    "      --memory SIZE       memory limit, no swap (1G; 0 = none)\n"
    "      --pids N            process limit (256; 0 = none)\n"
    "      --cpus N.N          CPU quota in CPUs (none)\n"
    "      --limits MODE       strict (default): a limit that cannot be enforced\n"
    "                          (no usable cgroup) fails the run with exit 125;\n"
    "                          best-effort: run with the limits that can be, the\n"
    "                          others named on stderr and in --result\n"
    "      --timeout SECS      wall-clock limit (fractional); then SIGTERM to the\n"
    "                          whole sandbox, SIGKILL after --kill-after; exit 124\n"
    "      --kill-after SECS   grace between SIGTERM and SIGKILL (2)\n"
    "      --nofile N          open files per process (RLIMIT_NOFILE)\n"
    "      --fsize SIZE        largest file a process may write (RLIMIT_FSIZE)\n"
    "      --result FILE       write a JSON report: exit_code, signal, timed_out,\n"
    "                          oom_killed, wall_ms, cpu_user_ms, cpu_sys_ms,\n"
    "                          peak_memory_bytes, limits_not_applied\n"
    "Network (docs/network.md):\n"
    "      --net none|open     none: loopback only (default); open: outbound via\n"
    "                          NAT (root), never to the host, private, link-local,\n"
    "                          metadata, multicast or reserved addresses\n"
    "      --deny CIDR         also refuse CIDR (repeatable)\n"
    "      --allow DEST        allow-list mode (root): only DEST, which is HOST,\n"
    "                          *.DOMAIN or an IPv4 CIDR, optionally :PORT (default\n"
    "                          80 and 443); names through agentjail's resolver,\n"
    "                          HTTP(S)_PROXY set to its proxy (repeatable)\n"
    "      --dns ADDR[:PORT]   upstream resolver for --allow, or for the proxy that\n"
    "                          scoped secrets use with --net open (default: the\n"
    "                          host's)\n"
    "      --publish HP:PORT   reach the sandbox's PORT at 127.0.0.1:HP on the host\n"
    "      --net-log FILE      JSON lines: every DNS query and connection, verdict\n"
    "      --upstream-ca FILE  the CA (PEM) HTTPS servers of scoped secrets are\n"
    "                          verified against (default: the host's trust store)\n"
    "      --secret-mint CMD   run CMD mint/revoke to turn each scoped secret into a\n"
    "                          value for this run only (docs/network.md)\n"
    "      --inspect HOST      intercept HTTPS to HOST (also in --allow) and log\n"
    "                          each request's method and path, without a secret\n"
    "Terminal:\n"
    "  -t, --tty               always give the command a new pseudo-terminal\n"
    "  -T, --no-tty            never (default: when stdin and stdout are terminals)\n"
    "Hardening:\n"
    "      --seccomp-profile FILE  JSON seccomp profile replacing the default one\n"
    "                          (level 3: stacked on the guest agent's filter;\n"
    "                          docs/security.md)\n"
    "Isolation level (docs/levels.md):\n"
    "      --isolation process|gvisor|microvm|wasm\n"
    "                          the level: process (default: namespaces, seccomp,\n"
    "                          Landlock), gvisor (gVisor's user-space kernel, runsc;\n"
    "                          one-shot) or microvm (a qemu microVM with its own\n"
    "                          kernel; one-shot, --memory is its RAM, --cpus its\n"
    "                          vCPUs; no network) or wasm (COMMAND is a WASI\n"
    "                          module /workspace/PROG.wasm, python3 on Pyodide or\n"
    "                          node on QuickJS, on Node.js's WASI inside level 1;\n"
    "                          no network)\n"
    "Other:\n"
    "      --print-plan        print the compiled plan (mounts, /etc, masks,\n"
    "                          seccomp, Landlock, network, limits, user, env names;\n"
    "                          never a secret's value) as JSON and exit 0 without\n"
    "                          running COMMAND or making any namespace\n"
    "  -q, --quiet             don't warn about features this host lacks\n"
    "  -h, --help              show this help\n"
    "\n"
    "Exit status: the command's; 128+N if it was killed by signal N (137 with\n"
    "an out-of-memory line); 124 on --timeout; 125 if agentjail itself failed;\n"
    "126 if COMMAND is not executable; 127 if not found.\n"
    "SIZE accepts K, M, G suffixes (1024-based).\n";

enum {
	OPT_ROOTFS = 256,
	OPT_RO,
	OPT_RW,
	OPT_CWD,
	OPT_TMP,
	OPT_HOST,
	OPT_ENVFILE,
	OPT_MEM,
	OPT_PIDS,
	OPT_CPUS,
	OPT_TIMEOUT,
	OPT_KILLAFTER,
	OPT_NOFILE,
	OPT_FSIZE,
	OPT_RESULT,
	OPT_SECCOMP,
	OPT_SECRET,
	OPT_REDACT,
	OPT_MASK,
	OPT_NOMASKS,
	OPT_NET,
	OPT_DENY,
	OPT_ALLOW,
	OPT_DNS,
	OPT_PUBLISH,
	OPT_NETLOG,
	OPT_UPSTREAM_CA,
	OPT_SECRET_MINT,
	OPT_INSPECT,
	OPT_IMAGE,
	OPT_LIMITS,
	OPT_ISOLATION,
	OPT_WRITABLE,
	OPT_UNMASK,
	OPT_PRINT_PLAN,
};

static const struct option run_opts[] = {
    {"workspace", required_argument, NULL, 'w'},
    {"rootfs", required_argument, NULL, OPT_ROOTFS},
    {"ro", required_argument, NULL, OPT_RO},
    {"rw", required_argument, NULL, OPT_RW},
    {"cwd", required_argument, NULL, OPT_CWD},
    {"tmp-size", required_argument, NULL, OPT_TMP},
    {"disk", required_argument, NULL, OPT_TMP},
    {"timeout", required_argument, NULL, OPT_TIMEOUT},
    {"kill-after", required_argument, NULL, OPT_KILLAFTER},
    {"nofile", required_argument, NULL, OPT_NOFILE},
    {"fsize", required_argument, NULL, OPT_FSIZE},
    {"result", required_argument, NULL, OPT_RESULT},
    {"seccomp-profile", required_argument, NULL, OPT_SECCOMP},
    {"secret", required_argument, NULL, OPT_SECRET},
    {"redact", required_argument, NULL, OPT_REDACT},
    {"mask", required_argument, NULL, OPT_MASK},
    {"no-default-masks", no_argument, NULL, OPT_NOMASKS},
    {"user", required_argument, NULL, 'u'},
    {"hostname", required_argument, NULL, OPT_HOST},
    {"env", required_argument, NULL, 'e'},
    {"env-file", required_argument, NULL, OPT_ENVFILE},
    {"memory", required_argument, NULL, OPT_MEM},
    {"pids", required_argument, NULL, OPT_PIDS},
    {"cpus", required_argument, NULL, OPT_CPUS},
    {"tty", no_argument, NULL, 't'},
    {"no-tty", no_argument, NULL, 'T'},
    {"quiet", no_argument, NULL, 'q'},
    {"net", required_argument, NULL, OPT_NET},
    {"deny", required_argument, NULL, OPT_DENY},
    {"allow", required_argument, NULL, OPT_ALLOW},
    {"dns", required_argument, NULL, OPT_DNS},
    {"publish", required_argument, NULL, OPT_PUBLISH},
    {"net-log", required_argument, NULL, OPT_NETLOG},
    {"upstream-ca", required_argument, NULL, OPT_UPSTREAM_CA},
    {"secret-mint", required_argument, NULL, OPT_SECRET_MINT},
    {"inspect", required_argument, NULL, OPT_INSPECT},
    {"image", required_argument, NULL, OPT_IMAGE},
    {"limits", required_argument, NULL, OPT_LIMITS},
    {"isolation", required_argument, NULL, OPT_ISOLATION},
    {"writable", required_argument, NULL, OPT_WRITABLE},
    {"unmask", required_argument, NULL, OPT_UNMASK},
    {"print-plan", no_argument, NULL, OPT_PRINT_PLAN},
    {"help", no_argument, NULL, 'h'},
    {NULL, 0, NULL, 0},
};

/* One option: the core sets it by its long name (the API shares the names). */
static int apply_opt(aj_policy *p, int c, const char *v, aj_error *err)
{
	for (const struct option *o = run_opts; o->name; o++)
		if (o->val == c)
			return aj_policy_set(p, o->name, v, 0, err);
	return aj_err(err, EINVAL, "unknown option");
}

static void cli_warn(void *ctx, const char *msg)
{
	(void)ctx;
	fprintf(stderr, "agentjail: warning: %s\n", msg);
}

/* Say why the run ended when agentjail ended it (timeout, OOM). */
static void report_end(const aj_policy *p, const aj_run_result *res)
{
	if (res->timed_out)
		fprintf(stderr,
			"agentjail: timeout: the sandbox ran longer than --timeout %.3gs and was "
			"stopped (exit 124)\n",
			(double)p->timeout_ms / 1000.0);
	else if (res->oom_killed && res->term_signal == SIGKILL)
		fprintf(stderr,
			"agentjail: out of memory: the sandbox reached --memory %lluM and the "
			"kernel killed the command (exit 137)\n",
			p->memory >> 20);
	else if (res->oom_killed)
		fprintf(stderr,
			"agentjail: out of memory: the kernel killed a process of the sandbox "
			"(--memory %lluM)\n",
			p->memory >> 20);
}

/* --print-plan: the plan as JSON on stdout; nothing is run or made. */
static int print_compiled_plan(const aj_policy *p, aj_error *err)
{
	json_t *plan = aj_plan_json(p, err);
	if (!plan)
		return -EINVAL;
	int r = json_dumpf(plan, stdout, JSON_INDENT(2) | JSON_PRESERVE_ORDER);
	json_decref(plan);
	if (r < 0 || fputc('\n', stdout) == EOF || fflush(stdout) == EOF)
		return aj_err(err, EIO, "cannot write the plan");
	return 0;
}

static void sweep_say(void *ctx, const char *msg)
{
	(void)ctx;
	fprintf(stderr, "agentjail: warning: %s\n", msg);
}

/* What the mint hook made for runs that were killed with their revoker (or
 * a machine that went down): revoked by the next run (docs/network.md). */
static void sweep_minted(const char *dir, const char *hook)
{
	aj_mintrec_out out = {sweep_say, NULL, NULL, "its run was killed"};
	(void)aj_mintrec_sweep(dir, hook, &out);
}

typedef struct run_rec {
	const char *dir, *id, *hook;
} run_rec;

/* in the revoker of a killed run: its record removed, or left naming what
 * was not revoked */
static bool revoker_done(void *ctx, const aj_policy *p, int failed)
{
	const run_rec *rr = ctx;
	aj_error e;
	if (failed == 0) {
		aj_mintrec_remove(rr->dir, rr->id);
		return false;
	}
	return aj_mintrec_write(rr->dir, rr->id, p, true, rr->hook, 0, &e) == 0;
}

/* --secret-mint: a record of what is minted (owned by run and its
 * revoker), the revoker, the values; 0 or -errno */
static int mint_start(aj_policy *p, run_rec *rr, aj_mint_guard *g, aj_error *err)
{
	int r = aj_mkdir_p(aj_state_dir(), 0755);
	if (r < 0 && r != -EEXIST) {
		aj_err(err, -r, "--secret-mint: cannot make the state directory %s",
		       aj_state_dir());
		aj_err_hint(err, "as an unprivileged user, set AGENTJAIL_STATE_DIR to a directory "
				 "of yours (not writable by others): the records of what is minted "
				 "are kept there");
		return r;
	}
	if ((r = aj_mint_guard_start(g, p->secret_mint, p, rr->id, err)) < 0 ||
	    (r = aj_mintrec_write(rr->dir, rr->id, p, false, p->secret_mint, g->pid, err)) < 0)
		return r;
	return aj_mint_secrets(p->secret_mint, p, rr->id, g, err);
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
	bool print_plan = false;
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
		if (c == OPT_PRINT_PLAN) {
			print_plan = true;
			continue;
		}
		if ((r = apply_opt(&p, c, optarg, &err)) < 0)
			break;
	}
	if (r == 0) /* the --publish relays' stall bound (stall.h) */
		r = aj_relay_stall_init(&err);
	if (r == 0 && print_plan) {
		p.argv = argv + optind;
		r = print_compiled_plan(&p, &err);
		aj_policy_free(&p);
		return r < 0 ? aj_cli_fail(&err) : 0;
	}
#ifdef AJ_RUN_NET_HELPER
	/* this program has no network stack: agentjail-net runs the same
	 * command line (argv is main's argv + 1, see main.c) */
	if (r == 0 && aj_net_wanted(&p)) {
		aj_policy_free(&p);
		return aj_cli_exec_helper("agentjail-net", argv - 1);
	}
#endif
	if (r == 0) {
		p.argv = argv + optind;
		/* never silently, not even with --quiet */
		for (size_t i = 0; p.workspace && i < p.n_writable; i++)
			fprintf(stderr,
				"agentjail: notice: --writable %s: the sandbox may change it, and "
				"host tools run what is in it\n",
				p.writable[i]);
		for (size_t i = 0; p.workspace && i < p.n_unmask; i++)
			fprintf(stderr,
				"agentjail: notice: --unmask %s: the sandbox reads it as it is, "
				"secrets and all\n",
				p.unmask[i]);
		aj_run_hooks hooks = {.warn = cli_warn};
		aj_run_result res;
		/* --secret-mint: values for this run only, revoked at its end */
		char run_id[64], rec_dir[PATH_MAX];
		unsigned char rnd[8] = {0};
		if (getrandom(rnd, sizeof(rnd), 0) != (ssize_t)sizeof(rnd)) {
			aj_err(&err, EIO, "cannot read random bytes for this run's id (getrandom)");
			aj_policy_free(&p);
			return aj_cli_fail(&err);
		}
		snprintf(run_id, sizeof(run_id), "run-%ld-%02x%02x%02x%02x%02x%02x%02x%02x",
			 (long)getpid(), rnd[0], rnd[1], rnd[2], rnd[3], rnd[4], rnd[5], rnd[6],
			 rnd[7]);
		snprintf(rec_dir, sizeof(rec_dir), "%s/minted", aj_state_dir());
		sweep_minted(rec_dir, p.secret_mint);
		bool minting = p.secret_mint && aj_mint_wanted(&p);
		/* a revoker child revokes them should this run be SIGKILLed */
		run_rec rr = {rec_dir, run_id, p.secret_mint};
		aj_mint_guard guard = {-1, -1, revoker_done, &rr};
		if (!minting || (r = mint_start(&p, &rr, &guard, &err)) == 0)
			r = aj_backend_of(p.isolation)->run(&p, &hooks, &res, &err);
		aj_error rerr;
		aj_err_clear(&rerr);
		if (minting && aj_mint_revoke(p.secret_mint, &p, run_id, &rerr) > 0) {
			char msg[AJ_ERR_MSG_MAX + AJ_ERR_HINT_MAX + 64];
			aj_err_format(&rerr, msg, sizeof(msg));
			bool kept = aj_mintrec_write(rec_dir, run_id, &p, true, p.secret_mint, 0,
						     &rerr) == 0;
			fprintf(stderr, "agentjail: warning: %s (%s)\n", msg,
				kept ? "kept in its record: the next agentjail run tries again"
				     : "its record cannot be written: revoke it by hand");
		} else if (minting) {
			aj_mintrec_remove(rec_dir, run_id);
		}
		aj_mint_guard_end(&guard);
		if (r == 0) {
			report_end(&p, &res);
			if (p.result_path && aj_run_result_write(p.result_path, &res, &err) < 0) {
				aj_policy_free(&p);
				return aj_cli_fail(&err);
			}
			aj_policy_free(&p);
			return res.exit_code;
		}
	}
	aj_policy_free(&p);
	return aj_cli_fail(&err);
}
