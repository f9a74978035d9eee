/* SPDX-License-Identifier: MIT */
/* Parsing the JSON bodies of API requests (no I/O: fuzzed on its own). */
#ifndef AJ_REQUEST_H
#define AJ_REQUEST_H

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>

#include "error.h"

#define AJ_EXEC_MAX_ARGS 4096
#define AJ_EXEC_MAX_TIMEOUT_S (24 * 3600)

typedef struct aj_exec_req {
	json_t *cmd; /* as given (for the audit log) */
	char **argv; /* a string cmd is run by /bin/sh -c */
	char **env;  /* NAME=VALUE entries, or NULL */
	char *cwd;   /* or NULL */
	char *stdin_data;
	size_t stdin_len;
	unsigned long long timeout_ms;
	bool background; /* a background process (procs.c) */
} aj_exec_req;

/* Parse a JSON object {cmd, env, cwd, timeout, stdin}. Returns 0 or
 * -EINVAL with err saying which field is wrong. */
int aj_exec_req_parse(const char *body, size_t len, aj_exec_req *q, aj_error *err);
void aj_exec_req_free(aj_exec_req *q);

/* Parse a JSON object body (NULL/empty: {}). Returns a new reference or
 * NULL with err filled. */
json_t *aj_json_body(const char *body, size_t len, aj_error *err);

/* Base64 in the standard or the URL-safe alphabet, '=' padding optional
 * (a space is taken for '+', as a query string's decoding makes it): at
 * most cap bytes into out, their count in *out_len. -EINVAL: not base64
 * (or not canonical); -ENAMETOOLONG: more than cap bytes. */
int aj_b64_decode(const char *in, size_t len, unsigned char *out, size_t cap, size_t *out_len);
/* How many of the first bytes of s are whole UTF-8 characters (no NUL, no
 * overlong form, no surrogate); aj_utf8_valid: all of them. */
size_t aj_utf8_prefix(const unsigned char *s, size_t len);
bool aj_utf8_valid(const char *s, size_t len);

#endif
