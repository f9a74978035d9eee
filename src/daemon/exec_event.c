/* SPDX-License-Identifier: MIT */
/* The events of a command's stream that exec and background processes
 * share (exec_event.h). */
#include "exec_event.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include <libwebsockets.h>

#include "audit.h"
#include "metrics.h"
#include "redact.h"
#include "tenant.h"
#include "util.h"

/* One piece of output: text as "data", anything else as "data_b64". */
json_t *aj_exec_data_event(int stream, const char *buf, size_t len)
{
	const char *name = stream == 1 ? "stdout" : "stderr";
	json_t *s = json_stringn(buf, len);
	if (s)
		return json_pack("{s:s, s:o}", "type", name, "data", s);
	size_t cap = len * 4 / 3 + 8;
	_cleanup_free_ char *b64 = malloc(cap);
	if (!b64 || lws_b64_encode_string(buf, (int)len, b64, (int)cap) < 0)
		return NULL;
	return json_pack("{s:s, s:s}", "type", name, "data_b64", b64);
}

/* The command as given, for the audit log: a secret's value in it (or its
 * base64) is redacted as in the output. */
static json_t *redacted_cmd(const aj_sandbox *sb, json_t *cmd)
{
	_cleanup_free_ char *txt = json_dumps(cmd, JSON_COMPACT | JSON_ENCODE_ANY);
	_cleanup_free_ char *out = NULL;
	size_t olen = 0;
	aj_redactor red;
	int r = txt ? aj_redactor_init_policy(&red, &sb->policy) : -ENOMEM;
	if (r == 0)
		r = aj_redactor_feed(&red, txt, strlen(txt), true, &out, &olen);
	aj_redactor_free(&red);
	if (r < 0 || !out)
		return json_string("[unavailable]");
	if (olen == strlen(txt) && memcmp(out, txt, olen) == 0)
		return json_incref(cmd);
	return json_stringn(out, olen);
}

json_t *aj_exec_ended(aj_sandbox *sb, const char *peer, json_t *cmd, int r,
		      const aj_run_result *res, const aj_error *err)
{
	json_t *ev;
	if (r < 0) {
		char msg[AJ_ERR_MSG_MAX + AJ_ERR_HINT_MAX + 64];
		aj_err_format(err, msg, sizeof(msg));
		/* the backend's own code when it gave one (a lost VM: vm_lost) */
		const char *code = err->api_code[0]		   ? err->api_code
				   : err->exit == AJ_EXIT_NOTFOUND ? "command_not_found"
				   : err->exit == AJ_EXIT_NOEXEC   ? "command_not_executable"
								   : "exec_failed";
		ev = json_pack("{s:s, s:i, s:{s:s, s:s}, s:I}", "type", "exit", "exit_code",
			       err->exit, "error", "code", code, "message", msg, "duration_ms",
			       (json_int_t)res->wall_ms);
		aj_metrics_add(&aj_stats.exec_failed, 1);
	} else {
		ev = json_pack("{s:s, s:i, s:o, s:b, s:b, s:I}", "type", "exit", "exit_code",
			       res->exit_code, "signal",
			       res->term_signal ? json_integer(res->term_signal) : json_null(),
			       "timed_out", res->timed_out, "oom_killed", res->oom_killed,
			       "duration_ms", (json_int_t)res->wall_ms);
		if (res->timed_out)
			aj_metrics_add(&aj_stats.timeouts, 1);
		if (res->oom_killed)
			aj_metrics_add(&aj_stats.oom_kills, 1);
	}
	aj_metrics_add(&aj_stats.execs, 1);
	aj_tenant *tn = aj_tenant_find(sb->tenant);
	if (tn)
		aj_metrics_add(&tn->execs, 1);
	aj_metrics_exec((double)res->wall_ms / 1000.0);
	aj_audit("exec",
		 json_pack("{s:s, s:s, s:s, s:o, s:i, s:I, s:b}", "sandbox", sb->id, "tenant",
			   sb->tenant, "peer", peer, "cmd", redacted_cmd(sb, cmd), "exit_code",
			   r < 0 ? err->exit : res->exit_code, "duration_ms",
			   (json_int_t)res->wall_ms, "timed_out", r == 0 && res->timed_out));
	return ev;
}
