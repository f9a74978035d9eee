/* SPDX-License-Identifier: MIT */
/* One HTTP request of the service and its response (libwebsockets). */
#ifndef AJ_HTTP_H
#define AJ_HTTP_H

#include <libwebsockets.h>

#include "daemon.h"
#include "operator.h"

#define AJ_HTTP_MAX_BODY (1u << 20) /* JSON request bodies */
#define AJ_HTTP_CHUNK 65536
#define AJ_HTTP_HEAD_MAX 512 /* the response's status line and headers */

enum aj_method { AJ_GET, AJ_POST, AJ_PUT, AJ_PATCH, AJ_DELETE, AJ_OTHER };

struct aj_job;
struct aj_call;

typedef struct aj_req {
	struct lws *wsi;
	int method;
	char path[512];
	char peer[80]; /* "uid:N" (unix socket) or the client's address */
	bool remote;   /* came over TCP */
	bool dispatched;
	/* request body */
	char *body;
	size_t body_len;
	bool body_too_big, body_done;
	unsigned completions; /* HTTP_BODY_COMPLETION callbacks (http.c) */
	bool upload;	      /* PUT .../files: the body goes to upload_fd */
	int upload_fd;	      /* from the supervisor (files.put); -1 while asked for */
	unsigned long long uploaded;
	unsigned long long upload_wait; /* files.put_done's id (a level's ops), or 0 */
	char sb_id[40];			/* the sandbox of the route */
	struct aj_call *call;		/* a request to the supervisor in flight */
	char file_path[5600];		/* as given, or its base64 (file_path_b64) */
	bool file_path_b64;
	/* response */
	int status;
	const char *ctype;
	const char *allow; /* a 405's Allow header (static), or NULL */
	char *resp;	   /* a whole response body, or NULL */
	size_t resp_len, resp_off;
	bool headers_sent, stream; /* stream: length unknown */
	bool chunked;		   /* a stream in chunks (HTTP/1.1), else to the close */
	bool finished;		   /* WebSocket: the close frame went out */
	bool closing;		   /* WebSocket: close on the next writable */
	int dl_fd;		   /* download: read and sent chunk by chunk */
	unsigned long long dl_left;
	struct aj_job *job; /* a stream from the supervisor (exec, process output) */
	int ws_channel;	    /* WebSocket: channel of the message being received */
	/* TCP: the bearer token, checked (tenant.h), passed on to the supervisor */
	char token[AJ_TOKEN_MAX + 1];
} aj_req;

/* Answer with a JSON body (o consumed). */
void aj_http_json(aj_req *r, int status, json_t *o);
/* Answer {"error": {"code": code, "message": ...}}. */
void aj_http_error(aj_req *r, int status, const char *code, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));
/* The same from an aj_error (message and hint). */
void aj_http_fail(aj_req *r, int status, const char *code, const aj_error *err);
/* Start a response of unknown length (exec) or of len bytes (download). */
void aj_http_stream(aj_req *r, int status, const char *ctype);
/* The status line and headers, at *p (advanced), up to end; not sent. */
int aj_http_head(aj_req *r, unsigned char **p, unsigned char *end);
/* The client speaks HTTP/1.1: a stream can go in chunks. */
bool aj_http_chunked(aj_req *r);
/* A URL argument, decoded (NULL when absent); buf must also hold "name=". */
const char *aj_http_arg(aj_req *r, const char *name, char *buf, size_t len);

/* api.c: route a request whose body (if any) is complete. */
void aj_api_dispatch(aj_req *r);
/* Before the body arrives: prepare a streamed upload. Returns false when
 * an error response was set instead. */
bool aj_api_begin_upload(aj_req *r);
/* Body bytes of an upload (buffered until the file is open). */
int aj_api_upload_data(aj_req *r, const void *buf, size_t len);
/* The upload's body is complete. */
void aj_api_upload_done(aj_req *r);

/* front.c: requests to the supervisor. done runs on the service thread
 * with the reply (status, JSON object taken, fd taken or -1); not at all
 * when the request went away first. */
typedef void (*aj_call_done)(aj_req *r, int status, json_t *reply, int fd);
/* Send op with args (consumed; "peer" added). Returns 0, or answers 503
 * and returns a negative errno. */
int aj_front_call(aj_req *r, const char *op, json_t *args, aj_call_done done);
/* The usual done: answer the reply as JSON. */
void aj_front_reply(aj_req *r, int status, json_t *reply, int fd);
/* Forward: op with args, the reply as the answer. */
void aj_front_forward(aj_req *r, const char *op, json_t *args);
/* The request is gone: its reply, when it comes, is dropped. */
void aj_front_cancel(aj_req *r);
/* The front process: serve on the listeners, ask the supervisor on sock.
 * Never returns. */
void aj_front_main(const aj_daemon_opts *o, int sock, const char *token_value)
    __attribute__((noreturn));

/* stream.c: a stream from the supervisor (fd taken): NDJSON (the HTTP
 * response's body) or frames (ws: WebSocket messages). */
int aj_stream_start(aj_req *r, int fd, bool ws);
/* Data from the client on a channel (0 stdin); eof: an empty stdin
 * message (closes the command's stdin). -1: close. */
int aj_exec_ws_receive(aj_req *r, int channel, const unsigned char *data, size_t len, bool eof);
/* ws.c: the WebSocket callbacks of the protocol callback. */
int aj_ws_callback(struct lws *wsi, enum lws_callback_reasons reason, aj_req *r, void *in,
		   size_t len);
/* Writable: send what the stream brought. Returns -1 to close, 1 when the
 * response is all written (its transaction completes). */
int aj_exec_writable(aj_req *r);
/* The connection closed: the stream is closed (which cancels a command). */
void aj_exec_detach(aj_req *r);
/* The loop's context, and the vhost whose protocols have
 * "agentjail-stream" (aj_stream_callback): where streams are adopted. */
void aj_exec_set_context(struct lws_context *ctx, struct lws_vhost *vh);
int aj_stream_callback(struct lws *wsi, enum lws_callback_reasons reason, void *user, void *in,
		       size_t len);

/* http.c: who is at the other end (peer, remote); release a request. */
void aj_http_peer(aj_req *r);
void aj_http_req_free(aj_req *r);

/* guard.c: connections whose request headers never complete (408, 431),
 * and WebSocket upgrades without the token (401). */
void aj_guard_set_timeout(unsigned seconds);
void aj_guard_accepted(struct lws *wsi);
void aj_guard_headers_done(struct lws *wsi);
/* The timer: -1 (close) when it answered 408. */
int aj_guard_timer(struct lws *wsi);
void aj_guard_destroyed(struct lws *wsi);
/* Before each lws_service(); lws's log lines go through aj_guard_log. */
void aj_guard_before_service(void);
void aj_guard_log(int level, const char *line);
/* The lws levels shown on stderr. */
void aj_guard_log_level(int mask);
/* 0: the upgrade may go on; -1: answered 401, hang up. */
int aj_guard_upgrade(struct lws *wsi);
/* A request without the token over TCP: 401 on the socket itself, then
 * -1 (close): an unauthenticated connection is never kept. */
int aj_guard_refuse(struct lws *wsi);
/* LWS_CALLBACK_FILTER_NETWORK_CONNECTION: 1 refuses the new connection
 * (fd) for now: too many shed ones are still being closed. */
int aj_guard_filter(int fd);
/* Unauthenticated connections shed for the budget so far. */
unsigned long long aj_guard_shed(void);

/* The budget of unauthenticated TCP connections (guard.c, docs/security.md) */
#define AJ_GUARD_PER_PEER 32	 /* per client address */
#define AJ_GUARD_TCP_MAX 512	 /* in all */
#define AJ_GUARD_TCP_TIMEOUT_S 5 /* their headers must come within this */
/* The front's file descriptors (RLIMIT_NOFILE raised to this when it can)
 * and lws's header buffers: what the budget above leaves is for the unix
 * socket and authenticated connections (front.c). */
#define AJ_FRONT_NOFILE 65536
#define AJ_FRONT_HEADER_POOL (AJ_GUARD_TCP_MAX + 512)

/* The bearer token, "" when none is needed. */
bool aj_http_token_ok(aj_req *r);

/* front_seccomp.c: the front's seccomp allow-list (after its drop). */
int aj_front_seccomp(aj_error *err);
/* front.c: drop to uid/gid (when root), no capabilities (bounding set
 * too), no_new_privs, not dumpable. */
int aj_front_drop(uid_t uid, gid_t gid, aj_error *err);

#define AJ_FRONT_UID 65534 /* nobody: owns nothing */

#endif
