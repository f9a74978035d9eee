/* SPDX-License-Identifier: MIT */
/* One HTTP request of the service and its response (libwebsockets). */
#ifndef AJ_HTTP_H
#define AJ_HTTP_H

#include <libwebsockets.h>

#include "daemon.h"

#define AJ_HTTP_MAX_BODY (1u << 20) /* JSON request bodies */
#define AJ_HTTP_CHUNK 65536

enum aj_method { AJ_GET, AJ_POST, AJ_PUT, AJ_PATCH, AJ_DELETE, AJ_OTHER };

struct aj_job;

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
	bool body_too_big;
	int upload_fd; /* PUT .../files: written as it arrives */
	unsigned long long uploaded;
	aj_sandbox *sb; /* a reference while the request works on it */
	char file_path[4096];
	/* response */
	int status;
	const char *ctype;
	char *resp; /* a whole response body, or NULL */
	size_t resp_len, resp_off;
	bool headers_sent, stream; /* stream: length unknown, connection closes */
	bool finished;		   /* all written: complete on the next writable */
	int dl_fd;		   /* download: read and sent chunk by chunk */
	unsigned long long dl_left;
	struct aj_job *job;	  /* exec: output produced by a worker thread */
	struct aj_follow *follow; /* output of a background process */
	int ws_channel;		  /* WebSocket: channel of the message being received */
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
/* A URL argument, decoded (NULL when absent); buf must also hold "name=". */
const char *aj_http_arg(aj_req *r, const char *name, char *buf, size_t len);

/* api.c: route a request whose body (if any) is complete. */
void aj_api_dispatch(aj_req *r);
/* Before the body arrives: prepare a streamed upload. Returns false when
 * an error response was set instead. */
bool aj_api_begin_upload(aj_req *r);
/* Body bytes of an upload. */
int aj_api_upload_data(aj_req *r, const void *buf, size_t len);

/* exec.c */
/* Account for an ended command (metrics, audit) and build its exit event. */
json_t *aj_exec_ended(aj_sandbox *sb, const char *peer, json_t *cmd, int r,
		      const aj_run_result *res, const aj_error *err);
/* An output event {"type": stdout|stderr, "data"|"data_b64": ...}. */
json_t *aj_exec_data_event(int stream, const char *buf, size_t len);
void aj_exec_start(aj_req *r, aj_sandbox *sb);
/* A WebSocket exec (ws.c): body is the exec request's JSON. */
/* tty: {master, slave} of a pty (taken), or NULL. */
int aj_exec_ws_start(aj_req *r, aj_sandbox *sb, const char *body, bool with_stdin, const int *tty,
		     aj_error *err);
/* Data from the client on a channel (0 stdin); eof: an empty stdin
 * message (closes the command's stdin). -1: close. */
int aj_exec_ws_receive(aj_req *r, int channel, const unsigned char *data, size_t len, bool eof);
/* ws.c: the WebSocket callbacks of the protocol callback. */
int aj_ws_callback(struct lws *wsi, enum lws_callback_reasons reason, aj_req *r, void *in,
		   size_t len);
/* Writable: send what the worker produced. Returns -1 to close. */
int aj_exec_writable(aj_req *r, unsigned char *buf, size_t cap);
/* The connection closed: cancel and release. */
void aj_exec_detach(aj_req *r);
/* Wake the connections whose workers produced output (service thread). */
void aj_exec_wake_all(void);
void aj_exec_set_context(struct lws_context *ctx);
/* Worker threads (exec and background processes) are counted... */
void aj_worker_enter(void);
void aj_worker_leave(void);
/* ...so that shutdown waits (bounded) for them to end (their sandboxes are gone). */
void aj_exec_shutdown(void);

/* files.c */
void aj_files_get(aj_req *r, aj_sandbox *sb);
void aj_files_delete(aj_req *r, aj_sandbox *sb);
void aj_files_mkdir(aj_req *r, aj_sandbox *sb);
int aj_files_open_upload(aj_req *r, aj_sandbox *sb);
void aj_files_finish_upload(aj_req *r);

/* http.c: who is at the other end (peer, remote); release a request. */
void aj_http_peer(aj_req *r);
void aj_http_req_free(aj_req *r);

/* server.c: the bearer token, "" when none is needed. */
bool aj_http_token_ok(aj_req *r);

#endif
