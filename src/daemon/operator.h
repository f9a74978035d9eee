/* SPDX-License-Identifier: MIT */
/* What the operator of `agentjail serve` lets its clients do (docs/api.md,
 * "Operator policy and tenants"): the operator policy (serve
 * --operator-policy FILE) and the tenants (serve --tokens FILE, each a name,
 * a bearer token and caps). The parsers here have no I/O (fuzzed:
 * tests/fuzz/fuzz_operator.c); loading the files and the checks of a
 * request against them are in tenant.c, in the supervisor. */
#ifndef AJ_OPERATOR_H
#define AJ_OPERATOR_H

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>

#include "error.h"

#define AJ_OP_MAX_ROOTS 32
#define AJ_OP_MAX_IMAGES 64
#define AJ_TENANT_MAX 64
#define AJ_TENANT_NAME_MAX 32
#define AJ_TOKEN_MIN 16
#define AJ_TOKEN_MAX 255
#define AJ_OP_FILE_MAX (1u << 20)
/* The tenant of the unix socket's clients and of --token-file. */
#define AJ_TENANT_OPERATOR "operator"

/* Caps; 0: none. */
typedef struct aj_caps {
	unsigned long long memory, pids, cpu_millis, disk;
	unsigned long long timeout_s; /* the sandbox's TTL (the API's "timeout") */
	unsigned long long sandboxes; /* live sandboxes of one tenant */
} aj_caps;

typedef struct aj_root {
	char *path; /* absolute, normalized, not "/" */
	bool rw;    /* rw binds and workspaces may be below it */
} aj_root;

typedef struct aj_operator_policy {
	aj_root binds[AJ_OP_MAX_ROOTS]; /* "bind_roots": where binds and workspaces may be */
	size_t n_binds;
	aj_root rootfs[AJ_OP_MAX_ROOTS]; /* "rootfs_roots": where a "rootfs" may be */
	size_t n_rootfs;
	char *images[AJ_OP_MAX_IMAGES]; /* "images": names or fnmatch patterns */
	size_t n_images;
	bool images_any; /* "images" absent: every image of the store */
	unsigned net;	 /* "net": bit (1 << aj_net_mode) per mode allowed */
	aj_caps caps;
} aj_operator_policy;

typedef struct aj_tenant {
	char name[AJ_TENANT_NAME_MAX + 1];
	unsigned char digest[32]; /* SHA-256 of its token (the token itself is not kept) */
	bool has_token;
	aj_caps caps;
	/* its own counters (metrics of a tenant) */
	unsigned long long created, failed, destroyed, execs;
} aj_tenant;

/* The safe defaults: no bind root, no rootfs root, every image, every
 * network mode, no caps. */
void aj_operator_default(aj_operator_policy *p);
void aj_operator_free(aj_operator_policy *p);
/* Parse an operator policy (a JSON object; docs/api.md). Returns 0, or
 * -EINVAL with err naming the key that is wrong. p is reset first. */
int aj_operator_parse(const char *text, size_t len, aj_operator_policy *p, aj_error *err);

/* Parse a tokens file (a JSON array of {"tenant", "token", caps...}) into
 * out[0..*n). Names are [a-z0-9][a-z0-9_-]*, tokens 16 to 255 printable
 * characters without spaces, both unique. Returns 0 or -EINVAL. */
int aj_tenants_parse(const char *text, size_t len, aj_tenant *out, size_t max, size_t *n,
		     aj_error *err);
bool aj_tenant_name_ok(const char *name);
/* SHA-256 of a token. */
void aj_token_digest(const char *token, size_t len, unsigned char out[32]);

/* A path's components without "" and "."; false on "..", a relative path
 * or one too long. out: "/a/b" ("/" for the root). */
bool aj_op_normalize(const char *path, char *out, size_t len);
/* path (normalized) is root or below it. */
bool aj_op_under(const char *path, const char *root);

#endif
