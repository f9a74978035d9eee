/* SPDX-License-Identifier: MIT */
/* An intercepted HTTPS connection that speaks HTTP/2 on both sides
 * (proxy_h2.c, libnghttp2). */
#ifndef AJ_PROXY_H2_H
#define AJ_PROXY_H2_H

#include <stddef.h>

#include "netd_ctx.h"
#include "proxy_parse.h"

struct ssl_st;

/* Relay the streams of c (the sandbox, TLS done, ALPN h2) to u (the
 * server, TLS done, ALPN h2): each request's headers checked (its
 * :authority names the CONNECT host and port) and given the scoped
 * secrets' values as an HTTP/1.1 request is (inject.c); bodies and
 * responses relayed as they come, under HTTP/2 flow control. Returns
 * when the sandbox's side ends, or after the server's side ends (GOAWAY
 * or EOF) once the sandbox has the responses already answered. Frees
 * neither SSL. */
void aj_proxy_h2(aj_netd_ctx *ctx, const aj_proxy_req *connect, struct ssl_st *c, struct ssl_st *u);

/* The same over plain non-blocking sockets (tests: both ends speak
 * HTTP/2 without TLS). Closes neither. */
void aj_proxy_h2_plain(aj_netd_ctx *ctx, const aj_proxy_req *connect, int c, int u);

/* The same without TLS, for tests and fuzzing: in (len bytes) is what
 * the client sends (the connection preface and frames); out gets, one
 * "name: value\n" line per header and a blank line per request, the
 * requests as the server decodes them (at most cap bytes; returns how
 * many), until the input is used up. */
size_t aj_proxy_h2_frame(aj_netd_ctx *ctx, const aj_proxy_req *connect, const char *in, size_t len,
			 char *out, size_t cap);

#endif
