/* SPDX-License-Identifier: MIT */
/* Tenants and the operator policy in the service (operator.h has the file
 * formats). Loaded once by the supervisor before it forks the front; the
 * front inherits only the tenants' names and token digests (it answers 401
 * early), and the supervisor decides on every request: it finds the tenant
 * of the token the request came with (the front passes it on), refuses
 * what the operator policy and the tenant's caps do not allow (403), and
 * answers 404 for another tenant's sandbox (docs/security.md, "Operator
 * policy and tenants"). */
#ifndef AJ_TENANT_H
#define AJ_TENANT_H

#include <jansson.h>
#include <stdbool.h>

#include "operator.h"

/* Why a request is refused: the message, and the key of which file to
 * change to allow it. */
typedef struct aj_denial {
	char msg[768];
	const char *key;  /* e.g. "bind_roots", or NULL */
	const char *file; /* "operator policy" or "tokens", or NULL */
} aj_denial;

/* serve --operator-policy FILE (NULL: the defaults), --tokens FILE (NULL:
 * none), and the --token-file token (NULL: none), which is the operator's.
 * Returns 0 or -EINVAL with err saying what is wrong. */
int aj_tenancy_load(const char *policy_file, const char *tokens_file, const char *operator_token,
		    aj_error *err);
void aj_tenancy_free(void);
/* Some TCP client can authenticate (a token is configured). */
bool aj_tenancy_has_tokens(void);

/* The tenant a bearer token belongs to, or NULL. Constant time in the
 * token and the tenants' tokens (digests compared, every one). */
const aj_tenant *aj_tenant_by_token(const char *token, size_t len);
aj_tenant *aj_tenant_find(const char *name);
/* The i-th tenant (0: the operator's), NULL past the last. */
aj_tenant *aj_tenant_at(size_t i);

/* Supervisor: the request's tenant from the front's "auth" ({"token"} or
 * {"local": true}), which is removed; args.tenant is set to its name (what
 * the front wrote there is overwritten). NULL: refused (err filled). */
const aj_tenant *aj_tenant_resolve(json_t *args, aj_error *err);
/* The tenant named by args.tenant (set by aj_tenant_resolve). */
aj_tenant *aj_tenant_of(json_t *args);
/* The tenant of the op this thread runs (for the registry and the audit
 * log), set around each op. */
void aj_tenant_set_current(aj_tenant *t);
aj_tenant *aj_tenant_current(void);
bool aj_tenant_is_operator(const aj_tenant *t);

/* A create request (req: the body, changed in place where a cap lowers a
 * default the client did not give). 0: allowed; 1: refused, d filled. */
int aj_tenant_check_create(const aj_tenant *t, json_t *req, aj_denial *d);
/* A TTL (create, fork, PATCH): 0 allowed, 1 refused. */
int aj_tenant_check_ttl(const aj_tenant *t, double seconds, aj_denial *d);
/* A snapshot's image name: 0 allowed, 1 refused. */
int aj_tenant_check_snapshot(const aj_tenant *t, const char *name, aj_denial *d);
/* The live-sandbox cap of a tenant (0: none), and where it comes from. */
unsigned long long aj_tenant_max_sandboxes(const aj_tenant *t, const char **key, const char **file);

#endif
