/* SPDX-License-Identifier: MIT */
/* HTTPS interception for scoped secrets (tls.c): netd's per-sandbox CA,
 * whose private key exists only in netd's memory, the leaf certificates it
 * issues for the secrets' hosts, and the two TLS contexts (toward the
 * sandbox: our leaf, ALPN h2 when the server spoke h2 to netd, else
 * http/1.1; toward the server: verified against the host's trust store or
 * --upstream-ca). */
#ifndef AJ_TLS_H
#define AJ_TLS_H

#include <stdbool.h>

#include "error.h"
#include "policy.h"

typedef struct aj_tls aj_tls;
struct ssl_st;
struct ssl_ctx_st;

/* Is any secret of p scoped to the canonical host (its HTTPS is then
 * intercepted)? */
bool aj_tls_intercepts(const aj_policy *p, const char *host);

/* netd, before it drops privileges: make the CA (name-constrained to the
 * secrets' hosts), load the upstream trust. 0 or -errno with err set. */
int aj_tls_new(const aj_policy *p, aj_tls **out, aj_error *err);
void aj_tls_free(aj_tls *t);
/* Write the CA's private key (PEM) to a new file path, mode 0600: the
 * operator's AGENTJAIL_CA_KEY_FILE, for tests and debugging only. */
int aj_tls_export_key(const aj_tls *t, const char *path, aj_error *err);
/* An operator's upstream CA file (serve --upstream-ca, AGENTJAIL_UPSTREAM_CA):
 * an absolute path to a readable file of PEM certificates, each one a CA.
 * what names it in the message. 0 or -errno with err set (the fix). */
int aj_tls_check_ca_file(const char *what, const char *path, aj_error *err);
/* The CA certificate (PEM, public): what the sandbox trusts. */
const char *aj_tls_ca_pem(const aj_tls *t);

/* A server-side SSL toward the sandbox for host (canonical, a name or an
 * IPv4 address), with a leaf certificate for it; the handshake fails
 * when the client's SNI names another host. h2: ALPN picks h2 when the
 * client offers it. NULL on failure. */
struct ssl_st *aj_tls_accept_new(aj_tls *t, const char *host, bool h2);
/* Did the handshake of s fail because the SNI named another host? */
bool aj_tls_sni_mismatch(struct ssl_st *s);
/* A client-side SSL toward the server host (SNI, hostname checked); h2:
 * ALPN offers h2 and http/1.1 (else http/1.1 only). */
struct ssl_st *aj_tls_connect_new(aj_tls *t, const char *host, bool is_ip, bool h2);
/* Did the handshake of s agree on h2 (ALPN)? */
bool aj_tls_is_h2(struct ssl_st *s);

#endif
