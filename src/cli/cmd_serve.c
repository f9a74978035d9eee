/* SPDX-License-Identifier: MIT */
/* agentjail serve: the sandbox service (src/daemon). */
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include "commands.h"
#include "audit.h"
#include "daemon.h"
#include "mint.h"
#include "stall.h"
#include "tls.h"
#include "util.h"

static const char serve_usage[] =
    "Usage: agentjail serve [OPTIONS]\n"
    "\n"
    "Serve the sandbox API (docs/api.md): sandboxes that live across many commands,\n"
    "files in and out, streamed output, TTLs, metrics and an audit log.\n"
    "\n"
    "  --socket PATH         unix socket, mode 0600 (" AJ_DAEMON_RUN_DIR "/agentjail.sock);\n"
    "                        started by systemd's agentjail.socket, serve takes that\n"
    "                        one instead (LISTEN_FDS; docs/install.md)\n"
    "  --listen ADDR:PORT    also listen on TCP; needs --token-file\n"
    "  --token-file FILE     bearer token every TCP request must carry (one line): the\n"
    "                        operator's, like the unix socket's clients\n"
    "  --tokens FILE         named tokens, one tenant each, with caps (a JSON array;\n"
    "                        mode 0600): a tenant sees only its own sandboxes\n"
    "  --operator-policy FILE  what clients may ask for (JSON): host paths they may\n"
    "                        bind (none by default), rootfs, images, network modes,\n"
    "                        caps on memory, pids, cpus, disk, timeout, sandboxes\n"
    "  --state-dir DIR       audit log, state of live sandboxes (" AJ_DAEMON_RUN_DIR ")\n"
    "  --max-sandboxes N     at most N sandboxes at once (64)\n"
    "  --header-timeout S    a request's headers must come within S seconds, else 408 (10;\n"
    "                        at most 5 for a TCP connection before its token)\n"
    "  --pool [LEVEL:]IMAGE=N[,code]  keep N sandboxes of IMAGE (an image name, or\n"
    "                        'default' for the host-root sandbox) ready for creates\n"
    "                        that ask for exactly that policy (env, secret, memory,\n"
    "                        pids, timeout may differ), at isolation LEVEL (process;\n"
    "                        e.g. gvisor:default=2, microvm:IMAGE=N); ,code: with a\n"
    "                        Jupyter kernel started ahead for run_code; repeatable\n"
    "  --node NAME           this service's name on a cluster, at the end of every\n"
    "                        sandbox id (sb-HEX-NAME) so a proxy routes by id\n"
    "                        (docs/kubernetes.md): a DNS label (a-z, 0-9, '-', at\n"
    "                        most 63); default: the host name's first label\n"
    "  -q, --quiet           no start message, only errors\n"
    "  --log-format plain|json  plain (default: lines of text) or json: one JSON object a\n"
    "                        line on stderr, the messages and every audit event (with\n"
    "                        its sandbox and tenant)\n"
    "  --store-quota SIZE    snapshots may fill the image store up to SIZE (e.g. 20G),\n"
    "                        by apparent size; default: no quota, the store's free\n"
    "                        space minus a reserve (5%, at least 1 GiB) is the limit\n"
    "  --upstream-ca FILE    scoped secrets over HTTPS: verify their servers against\n"
    "                        the CA certificates (PEM) in FILE, not the host's store\n"
    "  --secret-mint CMD     run CMD mint at each create (CMD revoke at its end) to\n"
    "                        turn each scoped secret into one for that sandbox only\n"
    "                        (docs/network.md, the mint hook)\n";

static const struct option serve_opts[] = {
    {"socket", required_argument, NULL, 's'},
    {"listen", required_argument, NULL, 'l'},
    {"token-file", required_argument, NULL, 'k'},
    {"tokens", required_argument, NULL, 'T'},
    {"operator-policy", required_argument, NULL, 'P'},
    {"state-dir", required_argument, NULL, 'd'},
    {"max-sandboxes", required_argument, NULL, 'm'},
    {"header-timeout", required_argument, NULL, 't'},
    {"pool", required_argument, NULL, 'p'},
    {"quiet", no_argument, NULL, 'q'},
    {"log-format", required_argument, NULL, 'L'},
    {"help", no_argument, NULL, 'h'},
    {"store-quota", required_argument, NULL, 'Q'},
    {"upstream-ca", required_argument, NULL, 'U'},
    {"secret-mint", required_argument, NULL, 'M'},
    {"node", required_argument, NULL, 'N'},
    {NULL, 0, NULL, 0},
};

/* Socket activation (sd_listen_fds(3)'s protocol): systemd passes the
 * unix socket of agentjail.socket as fd 3, with LISTEN_PID (ours) and
 * LISTEN_FDS=1. Anything else passed that way is refused: serve must not
 * serve where the operator did not mean it to. Returns 0 (none), 1 (taken:
 * o->socket is its path) or -1. */
static int take_activation(aj_daemon_opts *o, aj_error *err)
{
	const char *pid = getenv("LISTEN_PID"), *fds = getenv("LISTEN_FDS");
	unsigned long long p, n;
	if (!pid || !fds || aj_parse_uint(pid, 1ULL << 31, &p) < 0 || p != (unsigned)getpid())
		return 0;
	unsetenv("LISTEN_PID");
	unsetenv("LISTEN_FDS");
	unsetenv("LISTEN_FDNAMES");
	if (aj_parse_uint(fds, 64, &n) < 0 || n != 1)
		return aj_err(err, EINVAL, "LISTEN_FDS=%s: serve takes exactly one socket", fds);
	int fd = 3, type = 0, listening = 0;
	struct sockaddr_un sa = {0};
	socklen_t tl = sizeof(type), ll = sizeof(listening), sl = sizeof(sa);
	if (getsockopt(fd, SOL_SOCKET, SO_TYPE, &type, &tl) < 0 ||
	    getsockopt(fd, SOL_SOCKET, SO_ACCEPTCONN, &listening, &ll) < 0 ||
	    getsockname(fd, (struct sockaddr *)&sa, &sl) < 0 || sa.sun_family != AF_UNIX ||
	    type != SOCK_STREAM || !listening || sa.sun_path[0] != '/') {
		aj_err(err, EINVAL,
		       "the socket systemd passed is not a listening unix stream socket "
		       "with a path");
		aj_err_hint(err, "agentjail.socket: ListenStream=/run/agentjail/agentjail.sock");
		return -1;
	}
	/* not to be inherited by anything serve runs (a sandbox must never
	 * hold the socket its operator connects to) */
	if (fcntl(fd, F_SETFD, FD_CLOEXEC) < 0)
		return aj_err(err, errno, "cannot set close-on-exec on systemd's socket");
	static char path[sizeof(sa.sun_path) + 1];
	memcpy(path, sa.sun_path, sizeof(sa.sun_path));
	o->socket = path;
	o->socket_fd = fd;
	return 1;
}

/* The node name: --node as given, or the host name's first label in lower
 * case (buf); either must be a DNS label (daemon.h). 0 or -EINVAL. */
static int node_name(const char *given, char *buf, size_t len, aj_error *err)
{
	const char *why = NULL;
	if (given) {
		if (aj_node_name_valid(given, &why))
			return 0;
		aj_err(err, EINVAL, "--node '%s': not a DNS label: %s", given, why);
		aj_err_hint(err, "name the node like a Kubernetes node or pod: e.g. --node node-1");
		return -EINVAL;
	}
	char host[256] = "";
	if (gethostname(host, sizeof(host) - 1) < 0)
		host[0] = '\0';
	host[strcspn(host, ".")] = '\0';
	/* a host name that is no DNS label still names the node: lower case,
	 * other characters as '-', no '-' at either end, at most 63 */
	size_t n = 0;
	for (const char *c = host; *c && n < AJ_NODE_NAME_MAX; c++) {
		char ch = (*c >= 'A' && *c <= 'Z') ? (char)(*c - 'A' + 'a') : *c;
		if (!((ch >= 'a' && ch <= 'z') || (ch >= '0' && ch <= '9')))
			ch = '-';
		if (ch == '-' && (n == 0 || host[n - 1] == '-'))
			continue;
		host[n++] = ch;
	}
	while (n > 0 && host[n - 1] == '-')
		n--;
	host[n] = '\0';
	snprintf(buf, len, "%s", n ? host : "node");
	if (aj_node_name_valid(buf, &why))
		return 0;
	aj_err(err, EINVAL, "the host name gives no node name: %s", why);
	aj_err_hint(err, "give the service a name with --node NAME (a-z, 0-9, '-')");
	return -EINVAL;
}

/* A failure to start: as the command line says it, or a JSON line
 * (--log-format json, once parsed). */
static int serve_fail(aj_error *err)
{
	if (aj_log_format != AJ_LOG_JSON)
		return aj_cli_fail(err);
	char msg[AJ_ERR_MSG_MAX + AJ_ERR_HINT_MAX + 64];
	aj_err_format(err, msg, sizeof(msg));
	aj_log("error", "agentjail: ", "%s", msg);
	return AJ_EXIT_INTERNAL;
}

int aj_cmd_serve(int argc, char **argv)
{
	aj_daemon_opts o = {.socket = AJ_DAEMON_RUN_DIR "/agentjail.sock",
			    .state_dir = AJ_DAEMON_RUN_DIR,
			    .max_sandboxes = AJ_DAEMON_DEFAULT_MAX,
			    .header_timeout_s = 10};
	aj_error err;
	aj_err_clear(&err);
	opterr = 0;
	optind = 1;
	int c;
	unsigned long long n;
	bool upstream_flag = false;
	while ((c = getopt_long(argc, argv, "+qh", serve_opts, NULL)) != -1) {
		switch (c) {
		case 's': o.socket = optarg; break;
		case 'l': o.listen = optarg; break;
		case 'k': o.token_file = optarg; break;
		case 'T': o.tokens_file = optarg; break;
		case 'P': o.operator_policy = optarg; break;
		case 'd': o.state_dir = optarg; break;
		case 'q': o.quiet = true; break;
		case 'L':
			if (strcmp(optarg, "json") && strcmp(optarg, "plain")) {
				aj_err(&err, EINVAL, "--log-format '%s': expected json or plain",
				       optarg);
				return aj_cli_fail(&err);
			}
			aj_log_format = !strcmp(optarg, "json") ? AJ_LOG_JSON : AJ_LOG_PLAIN;
			break;
		case 'p':
			if (o.n_pools >= AJ_ARRAY_SIZE(o.pools)) {
				aj_err(&err, E2BIG, "--pool: at most %zu pools",
				       AJ_ARRAY_SIZE(o.pools));
				return aj_cli_fail(&err);
			}
			o.pools[o.n_pools++] = optarg;
			break;
		case 'm':
			if (aj_parse_uint(optarg, 100000, &n) < 0 || n == 0) {
				aj_err(&err, EINVAL, "--max-sandboxes '%s': expected 1 to 100000",
				       optarg);
				return aj_cli_fail(&err);
			}
			o.max_sandboxes = (unsigned)n;
			break;
		case 't':
			if (aj_parse_uint(optarg, 3600, &n) < 0 || n == 0) {
				aj_err(&err, EINVAL,
				       "--header-timeout '%s': expected 1 to 3600 seconds", optarg);
				return aj_cli_fail(&err);
			}
			o.header_timeout_s = (unsigned)n;
			break;
		case 'Q':
			if (aj_parse_size(optarg, &n) < 0 || n < (1ULL << 20)) {
				aj_err(
				    &err, EINVAL,
				    "--store-quota '%s': expected a size of at least 1M (e.g. 20G)",
				    optarg);
				return aj_cli_fail(&err);
			}
			o.store_quota = n;
			break;
		case 'U':
			if (aj_tls_check_ca_file("--upstream-ca", optarg, &err) < 0)
				return aj_cli_fail(&err);
			/* the keepers read it (cmd_keeper.c) */
			if (setenv("AGENTJAIL_UPSTREAM_CA", optarg, 1) < 0) {
				aj_err(&err, errno, "--upstream-ca");
				return aj_cli_fail(&err);
			}
			upstream_flag = true;
			break;
		case 'M': {
			aj_policy tmp;
			aj_policy_init(&tmp);
			int mr = aj_policy_set_secret_mint(&tmp, optarg, &err);
			aj_policy_free(&tmp);
			if (mr < 0)
				return aj_cli_fail(&err);
			o.secret_mint = optarg;
			break;
		}
		case 'N': o.node = optarg; break;
		case 'h': fputs(serve_usage, stdout); return 0;
		default:
			aj_err(&err, EINVAL, "unknown or incomplete option '%s'", argv[optind - 1]);
			aj_err_hint(&err, "see agentjail serve --help");
			return aj_cli_fail(&err);
		}
	}
	if (optind < argc) {
		aj_err(&err, EINVAL, "unexpected argument '%s'", argv[optind]);
		return serve_fail(&err);
	}
	/* the same variable from serve's environment: checked as the flag is */
	const char *env_ca = getenv("AGENTJAIL_UPSTREAM_CA");
	if (!upstream_flag && env_ca && env_ca[0] &&
	    aj_tls_check_ca_file("AGENTJAIL_UPSTREAM_CA", env_ca, &err) < 0)
		return serve_fail(&err);
	if (aj_relay_stall_init(&err) < 0) /* the ports proxy's (stall.h) */
		return serve_fail(&err);
	char host[AJ_NODE_NAME_MAX + 1];
	if (node_name(o.node, host, sizeof(host), &err) < 0)
		return serve_fail(&err);
	if (!o.node)
		o.node = host;
	if (take_activation(&o, &err) < 0)
		return serve_fail(&err);
	if (o.socket[0] != '/' || o.state_dir[0] != '/') {
		aj_err(&err, EINVAL, "--socket and --state-dir must be absolute paths");
		return serve_fail(&err);
	}
	if (aj_daemon_run(&o, &err) < 0)
		return serve_fail(&err);
	return 0;
}
