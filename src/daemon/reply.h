/* SPDX-License-Identifier: MIT */
/* The answers of the supervisor's ops and the checks of their arguments
 * (reply.c; the ops: sup.h). */
#ifndef AJ_REPLY_H
#define AJ_REPLY_H

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>

#include "error.h"
#include "registry.h"
#include "tenant.h"

typedef struct aj_reply {
	int status;   /* HTTP status */
	json_t *body; /* JSON object (owned) */
	int fd;	      /* an fd for the front (owned), or -1 */
} aj_reply;

typedef void (*aj_op_fn)(json_t *args, aj_reply *rep);

/* Answer a JSON object (o consumed). */
void aj_reply_json(aj_reply *rep, int status, json_t *o);
/* Answer {"error": {"code", "message"}}. */
void aj_reply_error(aj_reply *rep, int status, const char *code, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));
void aj_reply_fail(aj_reply *rep, int status, const char *code, const aj_error *err);
/* 403 {"error": {"code": "forbidden", "message", "policy_key", "policy_file"}} */
void aj_reply_denial(aj_reply *rep, const aj_denial *d);

/* Argument checks, answering 400 (or 404) when they fail. */
/* A string without NUL of at most max bytes; NULL when absent or bad
 * (optional: absent is not an error). */
const char *aj_arg_str(json_t *args, const char *key, size_t max, bool optional, aj_reply *rep);
/* The sandbox named by args.sandbox, with a reference; NULL: answered. */
aj_sandbox *aj_arg_sandbox(json_t *args, aj_reply *rep);
/* The same, and 409 sandbox_paused when it is paused (work that needs its
 * processes running: exec, files, signals). */
aj_sandbox *aj_arg_running(json_t *args, aj_reply *rep);
/* Who the front says the client is (audit only): never more than that. */
const char *aj_arg_peer(json_t *args);
/* A boolean (absent: false). */
bool aj_arg_bool(json_t *args, const char *key);

#endif
