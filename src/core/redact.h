/* SPDX-License-Identifier: MIT */
/* Streaming redaction of secret values (and their base64 forms) in the
 * command's output, also when a value is split across two writes. */
#ifndef AJ_REDACT_H
#define AJ_REDACT_H

#include <stdbool.h>
#include <stddef.h>

#define AJ_REDACT_MAX_PATTERNS 256
#define AJ_REDACTED "[REDACTED]"

typedef struct aj_redactor {
	char *pat[AJ_REDACT_MAX_PATTERNS];
	size_t plen[AJ_REDACT_MAX_PATTERNS];
	size_t n;
	size_t maxlen;
	bool first[256];	 /* bytes that start some pattern */
	unsigned char firstv[8]; /* the first of them, for memchr */
	size_t nfirst;		 /* how many distinct (a table scan above 8) */
	char *tail;		 /* bytes held back: they may start a match */
	size_t tail_len;
} aj_redactor;

void aj_redactor_init(aj_redactor *r);
/* Add a secret value: itself and its base64 forms at the three alignments
 * (those long enough not to match by chance). Values shorter than 4 bytes
 * are refused (-EINVAL): redacting them would garble ordinary output. */
int aj_redactor_add(aj_redactor *r, const char *value);
/* Init with every secret value and --redact value of a policy. */
struct aj_policy;
int aj_redactor_init_policy(aj_redactor *r, const struct aj_policy *p);
bool aj_redactor_active(const aj_redactor *r);
/* Feed len bytes; out receives what can be emitted now (malloc'ed, *out_len
 * bytes). final: no more input, flush everything. Returns 0 or -ENOMEM. */
int aj_redactor_feed(aj_redactor *r, const char *in, size_t len, bool final, char **out,
		     size_t *out_len);
void aj_redactor_free(aj_redactor *r);

#endif
