/* SPDX-License-Identifier: MIT */
/* A given-up agent port made anew, the guest init's side (init_reset.h):
 * the host sends a filler (zero bytes: agent_resync.h) and AJ_AG_RESET
 * with a nonce; an agent still on the port reads a zero type as the end
 * of its stream, a stopped one is killed (init.c), and once it is reaped
 * init reads the rest itself, then a child of init sends the filler and
 * AJ_AG_RESET back and becomes the fresh agent, whose one request is the
 * host's hello. */
#include "init_reset.h"

#include <errno.h>
#include <string.h>
#include <unistd.h>

int aj_reset_scan(port_reset *r, const unsigned char *b, size_t n, size_t *used)
{
	bool junk = false;
	for (size_t i = 0; i < n; i++) {
		if (r->have) {
			r->f[r->have++] = b[i];
			if (r->have == AJ_AGENT_HDR &&
			    (r->f[0] != AJ_AG_RESET || aj_agent_len(r->f) != AJ_AGENT_NONCE_LEN)) {
				r->zeros = r->have = 0, junk = true;
				continue;
			}
			if (r->have < sizeof(r->f))
				continue;
			size_t hex = 0;
			while (hex < AJ_AGENT_NONCE_LEN &&
			       strchr("0123456789abcdef", r->f[AJ_AGENT_HDR + hex]) &&
			       r->f[AJ_AGENT_HDR + hex])
				hex++;
			if (hex < AJ_AGENT_NONCE_LEN) {
				r->zeros = r->have = 0, junk = true;
				continue;
			}
			*used = i + 1;
			return 1;
		}
		if (!b[i])
			r->zeros += r->zeros < AJ_AGENT_FILL;
		else if (r->zeros >= AJ_AGENT_FILL)
			r->f[0] = b[i], r->have = 1;
		else /* not after a whole filler: an old exchange's bytes */
			r->zeros = 0, junk = true;
	}
	*used = n;
	return junk ? -1 : 0;
}

bool aj_reset_busy(const port_reset *r)
{
	return r->zeros || r->have;
}

static int write_all(int fd, const void *buf, size_t len)
{
	const char *p = buf;
	while (len) {
		ssize_t w = write(fd, p, len);
		if (w < 0 && errno == EINTR)
			continue;
		if (w <= 0)
			return -1;
		p += w;
		len -= (size_t)w;
	}
	return 0;
}

int aj_reset_ack(int fd, const port_reset *r)
{
	static const unsigned char zero[65536];
	for (size_t left = AJ_AGENT_FILL; left;) {
		size_t n = left < sizeof(zero) ? left : sizeof(zero);
		if (write_all(fd, zero, n) < 0)
			return -1;
		left -= n;
	}
	return write_all(fd, r->f, sizeof(r->f));
}
