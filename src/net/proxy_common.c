/* SPDX-License-Identifier: MIT */
/* What the proxy's plain-HTTP (proxy.c) and intercepted HTTPS
 * (proxy_tls.c) paths share: the answer to a refused request, and the
 * scoped secrets put into a request with their net-log lines. */
#include "proxy_common.h"

#include <stdio.h>
#include <string.h>
#include <sys/socket.h>

#include "inject.h"
#include "netlog.h"

void aj_proxy_reply(int fd, int status, const char *reason, const char *body)
{
	char msg[1024];
	int n = snprintf(msg, sizeof(msg),
			 "HTTP/1.1 %d %s\r\nContent-Type: text/plain\r\nContent-Length: %zu\r\n"
			 "Connection: close\r\n\r\n%s",
			 status, reason, strlen(body), body);
	if (n > 0)
		(void)send(fd, msg, (size_t)n < sizeof(msg) ? (size_t)n : sizeof(msg) - 1,
			   MSG_NOSIGNAL);
}

/* Scoped secrets (inject.c): the values into req where the sandbox wrote
 * their placeholders, for the secrets' own hosts; a net-log line for each
 * placeholder seen, injected or withheld (never a value). */
int aj_proxy_fill_secrets(aj_netd_ctx *ctx, aj_proxy_req *req)
{
	aj_inject_note notes[AJ_INJECT_NOTES];
	size_t n = 0;
	int r = aj_inject(ctx->p, req, notes, &n);
	for (size_t i = 0; i < n; i++) {
		json_t *ev = json_pack("{s:s,s:s,s:s,s:i,s:s}", "event",
				       notes[i].injected ? "secret_injected" : "secret_withheld",
				       "secret", notes[i].secret, "host", req->host, "port",
				       (int)req->port, "where", notes[i].where);
		if (ev && notes[i].reason)
			json_object_set_new(ev, "reason", json_string(notes[i].reason));
		aj_netlog(ctx, ev);
	}
	return r;
}
