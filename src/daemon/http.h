/* SPDX-License-Identifier: MIT */
/* One HTTP request of the service and its response (libwebsockets). */
#ifndef AJ_HTTP_H
#define AJ_HTTP_H

#include <jansson.h>
#include <libwebsockets.h>
#include <stdbool.h>
#include <stddef.h>

#include "daemon.h"
#include "error.h"
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
	unsigned completions; /* HTTP_BODY_COMPLETION callbacks (conn.c) */
	bool upload;	      /* PUT .../files: the body goes to upload_fd */
	int upload_fd;	      /* from the supervisor (files.put); -1 while asked for */
	unsigned long long uploaded;
	unsigned long long upload_wait; /* files.put_done's id (a level's ops), or 0 */
	char sb_id[AJ_SANDBOX_ID_SIZE]; /* the sandbox of the route */
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

/* Who is at the other end (peer, remote). */
void aj_http_peer(aj_req *r);

/* The bearer token, "" when none is needed. */
bool aj_http_token_ok(aj_req *r);

#endif
