/* SPDX-License-Identifier: MIT */
/* libFuzzer target: a given-up level-3 port's stream read back in step
 * (core/agent_resync.c), bytes the guest (and a stale agent) control.
 * Input: a mode byte (bit 0: the filler already read, as AJ_AGENT_FILL
 * zero bytes would leave it), a piece size, then the port's bytes.
 * Checks: the result is in step, more needed or out of step, the same
 * whether the bytes come whole or in pieces, with the same bytes taken;
 * more needed takes all; out of step stays so; in step only right after
 * this nonce's exact AJ_AG_RESET and hello answer frames. */
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "agent_resync.h"

static const char NONCE[] = "0123456789abcdef0123456789abcdef";

static int run(const uint8_t *b, size_t n, size_t step, bool filled, size_t *taken)
{
	aj_agent_resync r;
	aj_agent_resync_init(&r, NONCE);
	if (filled)
		r.zeros = AJ_AGENT_FILL;
	int rc = 0;
	*taken = 0;
	while (*taken < n && rc == 0) {
		size_t k = n - *taken < step ? n - *taken : step, used = 0;
		rc = aj_agent_resync_feed(&r, (const char *)b + *taken, k, &used);
		if (used > k || (rc == 0 && used != k) || (rc != 0 && rc != 1 && rc != -EPROTO))
			abort();
		*taken += used;
	}
	size_t used = 9;
	if (rc != 0 && aj_agent_resync_feed(&r, "R", 1, &used) != rc)
		abort(); /* in step or out of step for good */
	if (rc == 1 && used != 0)
		abort();
	return rc;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	if (size < 2)
		return 0;
	bool filled = data[0] & 1;
	size_t step = data[1] ? data[1] : 1;
	const uint8_t *b = data + 2;
	size_t n = size - 2, whole, pieces;
	int rc = run(b, n, n ? n : 1, filled, &whole);
	if (run(b, n, step, filled, &pieces) != rc || pieces != whole)
		abort(); /* the same however the bytes are cut */
	if (rc == 1) {	 /* the exact frames end what was taken */
		unsigned char h[AJ_AGENT_HDR];
		char x[128];
		int xn = snprintf(x, sizeof(x), AJ_AGENT_HELLO_FMT, NONCE);
		size_t rl = AJ_AGENT_HDR + AJ_AGENT_NONCE_LEN, xl = AJ_AGENT_HDR + (size_t)xn;
		if (whole < rl + xl)
			abort();
		const uint8_t *p = b + whole - xl - rl;
		aj_agent_hdr(h, AJ_AG_RESET, AJ_AGENT_NONCE_LEN);
		if (memcmp(p, h, AJ_AGENT_HDR) ||
		    memcmp(p + AJ_AGENT_HDR, NONCE, AJ_AGENT_NONCE_LEN))
			abort();
		aj_agent_hdr(h, AJ_AG_EXIT, (uint32_t)xn);
		if (memcmp(p + rl, h, AJ_AGENT_HDR) || memcmp(p + rl + AJ_AGENT_HDR, x, (size_t)xn))
			abort();
	}
	return 0;
}
