/* SPDX-License-Identifier: MIT */
/* agentjail serve: sandboxes that live across many commands, behind an
 * HTTP API (libwebsockets), with files, streamed output, TTLs, metrics and
 * an audit log. Its options and entry point (server.c). */
#ifndef AJ_DAEMON_H
#define AJ_DAEMON_H

#include <stdbool.h>
#include <stddef.h>

#include "error.h"

typedef struct aj_daemon_opts {
	const char *listen; /* "ADDR:PORT" or NULL: no TCP */
	const char *socket; /* unix socket path */
	/* > 2: the unix socket, listening, made by systemd (serve takes it:
	 * LISTEN_FDS); it is at socket, and is left there when serve ends */
	int socket_fd;
	const char *token_file; /* bearer token; required with listen */
	/* what clients may do (tenant.h; NULL: the defaults), named tokens */
	const char *operator_policy;
	const char *tokens_file;
	const char *state_dir;
	unsigned max_sandboxes;
	unsigned header_timeout_s; /* request headers must come within this (408) */
	bool quiet;
	const char *pools[16]; /* --pool IMAGE=N */
	size_t n_pools;
	unsigned long long store_quota; /* --store-quota: snapshots' room (0: free space) */
	const char *secret_mint;	/* --secret-mint CMD (mint.h), or NULL */
	const char *node;		/* --node: this service's name on a cluster, in every id */
} aj_daemon_opts;

#define AJ_DAEMON_RUN_DIR "/run/agentjail"
#define AJ_DAEMON_DEFAULT_MAX 64
#define AJ_DAEMON_MAX_TTL_S (7 * 24 * 3600)
#define AJ_DAEMON_DEFAULT_TTL_S 3600

/* A sandbox id: "sb-" 16 hex digits "-" NODE (docs/api.md), NODE a DNS
 * label naming the service that holds it, so a proxy can route by id. */
#define AJ_NODE_NAME_MAX 63
#define AJ_SANDBOX_ID_SIZE (3 + 16 + 1 + AJ_NODE_NAME_MAX + 1)

/* Is name a DNS label (RFC 1123: 1 to 63 of a-z, 0-9, '-'; no '-' at
 * either end)? On a refusal, why says what is wrong. */
bool aj_node_name_valid(const char *name, const char **why);

/* Serve until SIGINT/SIGTERM. Returns 0 or a negative errno (err filled). */
int aj_daemon_run(const aj_daemon_opts *o, aj_error *err);

#endif
