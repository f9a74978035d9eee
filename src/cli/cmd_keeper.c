/* SPDX-License-Identifier: MIT */
/* `agentjail __keeper CTL-FD SOURCE-FD`: not a user command. The service
 * starts it as the keeper of one sandbox (box.c: exec_keeper): the policy
 * is rebuilt from its JSON source (the service's own parse, with the same
 * remote rules) and the sandbox held until CTL-FD is closed. A program of
 * its own so that the keeper and the sandbox's init are small processes,
 * not copies of the service. It dies with the service's thread that
 * started it (posix_spawn): its parent-death signal is set here, and a
 * keeper whose parent is already gone ends. */
#include <errno.h>
#include <fcntl.h>
#include <jansson.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include "box.h"
#include "image.h"
#include "commands.h"
#include "policy.h"
#include "sandbox.h"
#include "sync.h"
#include "util.h"

static int fd_arg(const char *s)
{
	unsigned long long v;
	return aj_parse_uint(s, 1 << 20, &v) == 0 && v > 2 ? (int)v : -1;
}

static int fail(int ctl, aj_error *err)
{
	aj_box_info info;
	memset(&info, 0, sizeof(info));
	info.m.type = AJ_MSG_ERROR;
	info.m.err = *err;
	(void)aj_sync_send_buf(ctl, &info, sizeof(info), NULL, 0);
	return aj_cli_fail(err);
}

int aj_cmd_keeper(int argc, char **argv)
{
	aj_error err;
	aj_err_clear(&err);
	/* CTL-FD SOURCE-FD [AUDIT-FD SANDBOX-ID TENANT] (box.c: spawn_keeper) */
	bool n_ok = argc == 3 || argc == 6;
	int ctl = n_ok ? fd_arg(argv[1]) : -1, src = n_ok ? fd_arg(argv[2]) : -1;
	int audit = argc == 6 ? fd_arg(argv[3]) : -1;
	struct stat st;
	int type = 0;
	socklen_t tl = sizeof(type);
	if (ctl < 0 || src < 0 || fstat(src, &st) < 0 || !S_ISREG(st.st_mode) ||
	    getsockopt(ctl, SOL_SOCKET, SO_TYPE, &type, &tl) < 0 || type != SOCK_SEQPACKET ||
	    (argc == 6 && (audit < 0 || fcntl(audit, F_GETFD) < 0))) {
		aj_err(&err, EINVAL, "%s is agentjail serve's own keeper of a sandbox",
		       AJ_KEEPER_COMMAND);
		aj_err_hint(&err, "see agentjail --help for the commands");
		return aj_cli_fail(&err);
	}
	/* the peer of a socketpair is the process that made it: the service */
	struct ucred cred;
	socklen_t cl = sizeof(cred);
	if (prctl(PR_SET_PDEATHSIG, SIGKILL, 0, 0, 0) < 0 ||
	    getsockopt(ctl, SOL_SOCKET, SO_PEERCRED, &cred, &cl) < 0 || getppid() != cred.pid) {
		aj_err(&err, ESRCH, "%s: the parent is not the process that made CTL-FD",
		       AJ_KEEPER_COMMAND);
		aj_err_hint(&err, "only agentjail serve starts its keepers");
		return aj_cli_fail(&err);
	}
	int keep[3] = {ctl, src, audit};
	/* nothing else of the service's */
	aj_close_all_except(keep, audit >= 0 ? 3 : 2);
	(void)fcntl(ctl, F_SETFD, FD_CLOEXEC); /* not into the sandbox */
	if (audit >= 0)
		(void)fcntl(audit, F_SETFD, FD_CLOEXEC);
	_cleanup_free_ char *text = NULL;
	size_t len = 0;
	int r = lseek(src, 0, SEEK_SET) < 0 ? -errno : aj_read_fd(src, &text, &len);
	close(src);
	if (r < 0) {
		aj_err(&err, -r, "cannot read the sandbox's policy");
		return fail(ctl, &err);
	}
	json_error_t je;
	json_t *j = json_loadb(text, len, JSON_REJECT_DUPLICATES, &je);
	if (!j) {
		aj_err(&err, EINVAL, "the sandbox's policy: %s", je.text);
		return fail(ctl, &err);
	}
	aj_policy p;
	aj_policy_init(&p);
	p.quiet = true;			      /* as the service made it */
	r = aj_policy_from_json(&p, j, &err); /* reads AGENTJAIL_STATE_DIR (images) */
	/* the operator's: serve --upstream-ca (cmd_serve.c), before the title
	 * wipes the environment (netd could not read it later) */
	const char *ca = getenv("AGENTJAIL_UPSTREAM_CA");
	if (r == 0 && ca && ca[0])
		r = aj_policy_set_upstream_ca(&p, ca, &err);
	if (r == 0 && audit >= 0) {
		p.audit_fd = audit;
		if (!(p.audit_sandbox = strdup(argv[4])) || !(p.audit_tenant = strdup(argv[5])))
			r = aj_err(&err, ENOMEM, "out of memory");
	}
	/* after the policy and the state directory (the /etc and /dev copies
	 * are kept there): the title wipes the environment's strings */
	(void)aj_state_dir();
	aj_proctitle_set("agentjail-box");
	if (r == 0)
		r = aj_sandbox_hold(&p, ctl);
	else
		r = fail(ctl, &err);
	aj_policy_free(&p);
	json_decref(j);
	return r;
}
