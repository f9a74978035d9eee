/* SPDX-License-Identifier: MIT */
/* A given-up agent port's stream read back in step (agent_resync.h). */
#include "agent_resync.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <sys/random.h>

int aj_agent_nonce(char out[AJ_AGENT_NONCE_LEN + 1])
{
	unsigned char rnd[AJ_AGENT_NONCE_LEN / 2];
	size_t got = 0;
	while (got < sizeof(rnd)) {
		ssize_t n = getrandom(rnd + got, sizeof(rnd) - got, 0);
		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			return n < 0 ? -errno : -EIO;
		got += (size_t)n;
	}
	for (size_t k = 0; k < sizeof(rnd); k++)
		snprintf(out + 2 * k, 3, "%02x", rnd[k]);
	return 0;
}

void aj_agent_resync_init(aj_agent_resync *r, const char *nonce)
{
	memset(r, 0, sizeof(*r));
	snprintf(r->nonce, sizeof(r->nonce), "%s", nonce);
	r->state = strlen(nonce) == AJ_AGENT_NONCE_LEN ? AJ_RESYNC_FILLER : AJ_RESYNC_FAILED;
}

/* The frame expected now: its type and exact payload (into p). */
static size_t expected(const aj_agent_resync *r, char *type, char *p, size_t cap)
{
	if (r->state == AJ_RESYNC_ACK) {
		*type = AJ_AG_RESET;
		return (size_t)snprintf(p, cap, "%s", r->nonce);
	}
	*type = AJ_AG_EXIT;
	return (size_t)snprintf(p, cap, AJ_AGENT_HELLO_FMT, r->nonce);
}

int aj_agent_resync_feed(aj_agent_resync *r, const char *buf, size_t len, size_t *used)
{
	size_t i = 0;
	while (i < len && r->state != AJ_RESYNC_DONE && r->state != AJ_RESYNC_FAILED) {
		if (r->state == AJ_RESYNC_FILLER) {
			/* what comes before a whole filler is dropped unparsed:
			 * an old exchange's bytes, its frames cut anywhere */
			if (!buf[i]) {
				r->zeros += r->zeros < AJ_AGENT_FILL;
				i++;
				continue;
			}
			if (r->zeros < AJ_AGENT_FILL) {
				r->zeros = 0;
				i++;
				continue;
			}
			r->state = AJ_RESYNC_ACK; /* the filler's end: a frame's start */
			r->have = 0;
		}
		char type, want[sizeof(r->hdr)];
		size_t wlen = expected(r, &type, want, sizeof(want));
		r->hdr[r->have++] = buf[i++];
		if (r->have == AJ_AGENT_HDR &&
		    (r->hdr[0] != type || aj_agent_len((const unsigned char *)r->hdr) != wlen)) {
			r->state = AJ_RESYNC_FAILED; /* another frame, or one out of step */
			break;
		}
		if (r->have < AJ_AGENT_HDR + wlen)
			continue;
		if (memcmp(r->hdr + AJ_AGENT_HDR, want, wlen)) {
			/* a whole AJ_AG_RESET of an earlier try, answered late: the
			 * filler again (only init's child writes one), else out of step */
			bool late = r->state == AJ_RESYNC_ACK;
			r->state = late ? AJ_RESYNC_FILLER : AJ_RESYNC_FAILED;
			r->zeros = r->have = 0;
			if (late)
				continue;
			break;
		}
		r->have = 0;
		r->state = r->state == AJ_RESYNC_ACK ? AJ_RESYNC_HELLO : AJ_RESYNC_DONE;
	}
	*used = i;
	if (r->state == AJ_RESYNC_FAILED)
		return -EPROTO;
	return r->state == AJ_RESYNC_DONE;
}

struct timespec aj_agent_revive_at(struct timespec now, unsigned fails)
{
	unsigned long long ms = 300ULL << (fails < 7 ? fails : 7);
	if (ms > 30000)
		ms = 30000;
	long long ns = (long long)now.tv_nsec + (long long)(ms % 1000) * 1000000LL;
	struct timespec at = {now.tv_sec + (time_t)(ms / 1000) + (time_t)(ns / 1000000000LL),
			      (long)(ns % 1000000000LL)};
	return at;
}
