/* SPDX-License-Identifier: MIT */
/* GET /v1/sandboxes/{id}/exec as a WebSocket, in the Kubernetes exec
 * channel convention: every binary message starts with its channel, 0
 * stdin (client to server), 1 stdout, 2 stderr, 3 status (a JSON Status
 * when the command ends, then the close), 4 resize. The command and its
 * options come as URL arguments: command=ARG (repeated), stdin=true, cwd,
 * timeout, env=NAME=VALUE (repeated). */
#include <errno.h>
#include <fcntl.h>
#include <unistd.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "front_call.h"
#include "http.h"
#include "metrics.h"
#include "request.h"
#include "stream.h"
#include "util.h"
#include "ws.h"

static bool is_bool(const char *v)
{
	return !strcmp(v, "true") || !strcmp(v, "false") || !strcmp(v, "1") || !strcmp(v, "0");
}

/* One URL argument into o (cmd, env: its arrays); false with why set when
 * it is unknown or of the wrong type (docs/openapi.json: strict). */
static bool one_arg(json_t *o, char *frag, bool *with_stdin, bool *tty, char *why, size_t wl)
{
	char *v = strchr(frag, '=');
	if (v)
		*v++ = '\0';
	else
		v = frag + strlen(frag);
	char *end = NULL;
	if (!strcmp(frag, "command"))
		json_array_append_new(json_object_get(o, "cmd"), json_string(v));
	else if (!strcmp(frag, "stdin") || !strcmp(frag, "tty")) {
		if (!is_bool(v))
			return snprintf(why, wl, "'%s': expected true or false", frag), false;
		*(frag[0] == 's' ? with_stdin : tty) = !strcmp(v, "true") || !strcmp(v, "1");
	} else if (!strcmp(frag, "cwd"))
		json_object_set_new(o, "cwd", json_string(v));
	else if (!strcmp(frag, "timeout")) {
		double t = strtod(v, &end);
		if (!*v || *end)
			return snprintf(why, wl, "'timeout': expected a number"), false;
		json_object_set_new(o, "timeout", json_real(t));
	} else if (!strcmp(frag, "env")) {
		char *val = strchr(v, '=');
		if (!val)
			return snprintf(why, wl, "'env': expected NAME=VALUE"), false;
		*val++ = '\0';
		json_object_set_new(json_object_get(o, "env"), v, json_string(val));
	} else
		return snprintf(why, wl, "unknown query argument '%.60s'", frag), false;
	return true;
}

/* The exec request's JSON from the URL arguments; *with_stdin, *tty set.
 * NULL with why set for a refused argument (or no memory). */
static char *request_from_args(struct lws *wsi, bool *with_stdin, bool *tty, char *why, size_t wl)
{
	json_t *cmd = json_array(), *env = json_object();
	json_t *o = json_pack("{s:o, s:o}", "cmd", cmd, "env", env);
	snprintf(why, wl, "out of memory");
	char frag[4096];
	for (int i = 0; o; i++) {
		int n = lws_hdr_copy_fragment(wsi, frag, sizeof(frag), WSI_TOKEN_HTTP_URI_ARGS, i);
		if (n < 0)
			break;
		if (!one_arg(o, frag, with_stdin, tty, why, wl)) {
			json_decref(o);
			return NULL;
		}
	}
	char *body = o ? json_dumps(o, JSON_COMPACT) : NULL;
	json_decref(o);
	return body;
}

/* Refuse with a close frame saying why. */
static int refuse(struct lws *wsi, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static int refuse(struct lws *wsi, const char *fmt, ...)
{
	char msg[120]; /* a close frame's reason is short */
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	lws_close_reason(wsi, LWS_CLOSE_STATUS_POLICY_VIOLATION, (unsigned char *)msg, strlen(msg));
	aj_metrics_add(&aj_stats.errors, 1);
	return -1;
}

/* Close on the next writable, with the reason in r->resp. */
static void close_later(aj_req *r, const char *why)
{
	free(r->resp);
	r->resp = strdup(why);
	r->closing = true;
	lws_rx_flow_control(r->wsi, 1); /* paused while the command started */
	lws_callback_on_writable(r->wsi);
}

static void started(aj_req *r, int status, json_t *reply, int fd)
{
	if (fd < 0 || status != 200) {
		const char *m =
		    json_string_value(json_object_get(json_object_get(reply, "error"), "message"));
		close_later(r, m ? m : "cannot start the command");
		json_decref(reply);
		if (fd >= 0)
			close(fd);
		return;
	}
	json_decref(reply);
	int e = aj_stream_start(r, fd, true);
	if (e < 0)
		close_later(r, strerror(-e));
}

/* The close frame saying why, then the client's close is awaited (its
 * frames sent meanwhile are dropped): closing at once could reset the
 * connection under a client still writing, and lose the reason. */
static int close_frame(struct lws *wsi, aj_req *r)
{
	if (r->finished)
		return 0;
	r->finished = true;
	unsigned char buf[LWS_PRE + 128];
	const char *why = r->resp ? r->resp : "refused";
	size_t n = strlen(why) < 120 ? strlen(why) : 120;
	buf[LWS_PRE] = (unsigned char)(LWS_CLOSE_STATUS_POLICY_VIOLATION >> 8);
	buf[LWS_PRE + 1] = (unsigned char)(LWS_CLOSE_STATUS_POLICY_VIOLATION & 0xff);
	memcpy(buf + LWS_PRE + 2, why, n);
	aj_metrics_add(&aj_stats.errors, 1);
	/* 4: the close opcode (lws-write.h keeps it for lws_close_reason, which
	 * closes at once) */
	if (lws_write(wsi, buf + LWS_PRE, n + 2, (enum lws_write_protocol)4) < 0)
		return -1;
	lws_set_timeout(wsi, PENDING_TIMEOUT_CLOSE_ACK, 5);
	return 0;
}

static int on_established(struct lws *wsi, aj_req *r)
{
	memset(r, 0, sizeof(*r));
	r->wsi = wsi;
	r->upload_fd = r->dl_fd = -1;
	aj_http_peer(r);
	aj_metrics_add(&aj_stats.requests, 1);
	char uri[256], id[AJ_SANDBOX_ID_SIZE];
	const char *p = uri + strlen("/v1/sandboxes/");
	size_t n = 0;
	if (lws_hdr_copy(wsi, uri, sizeof(uri), WSI_TOKEN_GET_URI) <= 0 ||
	    !aj_startswith(uri, "/v1/sandboxes/") ||
	    (n = strspn(p, "abcdefghijklmnopqrstuvwxyz0123456789-")) == 0 || n >= sizeof(id) ||
	    strcmp(p + n, "/exec") != 0)
		return refuse(wsi, "WebSocket exec is GET /v1/sandboxes/{id}/exec");
	memcpy(id, p, n);
	id[n] = '\0';
	snprintf(r->sb_id, sizeof(r->sb_id), "%s", id); /* its streams' budget (stream.c) */
	bool with_stdin = false, tty = false;
	char why[100];
	_cleanup_free_ char *body = request_from_args(wsi, &with_stdin, &tty, why, sizeof(why));
	aj_error err;
	aj_err_clear(&err);
	aj_exec_req q; /* checked here, again by the supervisor */
	if (!body || aj_exec_req_parse(body, strlen(body), &q, &err) < 0)
		return refuse(wsi, "%s", body ? err.msg : why);
	aj_exec_req_free(&q);
	json_t *a = json_pack("{s:s, s:o, s:b, s:b, s:b}", "sandbox", id, "req",
			      json_loads(body, 0, NULL), "ws", 1, "stdin", with_stdin, "tty", tty);
	return aj_front_call(r, "exec", a, started) < 0 ? refuse(wsi, "the service is stopping")
							: 0;
}

int aj_ws_callback(struct lws *wsi, enum lws_callback_reasons reason, aj_req *r, void *in,
		   size_t len)
{
	switch (reason) {
	case LWS_CALLBACK_FILTER_PROTOCOL_CONNECTION: {
		aj_req tmp = {.wsi = wsi};
		aj_http_peer(&tmp);
		return aj_http_token_ok(&tmp) ? 0 : -1; /* refused before the upgrade */
	}
	case LWS_CALLBACK_ESTABLISHED: return on_established(wsi, r);
	case LWS_CALLBACK_RECEIVE: {
		if (r->closing)
			return 0; /* waiting for the client's close */
		const unsigned char *p = in;
		if (lws_is_first_fragment(wsi)) {
			if (len == 0)
				return 0;
			r->ws_channel = p[0];
			p++;
			len--;
		}
		bool eof = len == 0 && lws_is_first_fragment(wsi) && lws_is_final_fragment(wsi);
		return aj_exec_ws_receive(r, r->ws_channel, p, len, eof);
	}
	case LWS_CALLBACK_SERVER_WRITEABLE: {
		if (r->closing)
			return close_frame(wsi, r);
		return r->job ? aj_exec_writable(r) : 0;
	}
	default: return 0;
	}
}
