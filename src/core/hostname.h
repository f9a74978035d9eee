/* SPDX-License-Identifier: MIT */
/* The one host-name normaliser (hostname.c): every host name agentjail
 * checks against a policy (the proxy's CONNECT authority and Host header,
 * the resolver's questions, --allow and a secret's hosts) goes through it,
 * so that two spellings of one host can't be judged differently. */
#ifndef AJ_HOSTNAME_H
#define AJ_HOSTNAME_H

#include <stdbool.h>
#include <stddef.h>

#define AJ_HOST_MAX 253

typedef enum aj_host_kind {
	AJ_HOST_NAME = 1, /* a DNS name: lower-case LDH/_ labels, no trailing dot */
	AJ_HOST_IPV4,	  /* any spelling of an IPv4 address: dotted quad text */
	AJ_HOST_IPV6,	  /* an IPv6 literal (without brackets): RFC 5952 text */
} aj_host_kind;

typedef struct aj_host {
	aj_host_kind kind;
	char text[AJ_HOST_MAX + 1]; /* the canonical spelling */
	unsigned char addr[16];	    /* IPV4: 4 bytes, IPV6: 16, network order */
} aj_host;

/* Normalise in (len bytes, not NUL-terminated; NUL bytes refused):
 * ASCII lower-cased, one trailing dot removed; refused: control bytes,
 * spaces, non-ASCII (IDN must come as punycode "xn--" labels), empty
 * labels, labels over 63 or names over 253 bytes, characters other than
 * letters, digits, '-', '_' and '.'. A name whose last label is numeric
 * (digits, or 0x hex) is an IPv4 address in any of its spellings
 * (3221225994, 0300.0.2.012, 0xc0.0.2.10, 192.0.2.10) or refused; an
 * IPv6 literal comes without brackets. 0, or -EINVAL with *why set (why
 * may be NULL). */
int aj_host_norm(const char *in, size_t len, aj_host *out, const char **why);
/* aj_host_norm for names only: out (outlen bytes) gets the canonical
 * name; IP literals are refused. 0 or -EINVAL. */
int aj_host_canon(const char *in, size_t len, char *out, size_t outlen);
/* Does the canonical name match pattern ("host.example" exactly, or
 * "*.example": any name below example, not example itself)? */
bool aj_host_match(const char *pattern, const char *name);

#endif
