/* SPDX-License-Identifier: MIT */
/* The agent's op "hello" (agent_hello.h): the host's nonce echoed, so
 * that a level-3 port the host reconnected is back in step. */
#include "agent_hello.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "agent_proto.h"

int aj_agent_hello(const char *nonce)
{
	if (!nonce || strlen(nonce) != AJ_AGENT_NONCE_LEN ||
	    strspn(nonce, "0123456789abcdef") != AJ_AGENT_NONCE_LEN)
		return EINVAL;
	unsigned char out[AJ_AGENT_HDR + 64 + AJ_AGENT_NONCE_LEN];
	int n = snprintf((char *)out + AJ_AGENT_HDR, sizeof(out) - AJ_AGENT_HDR, AJ_AGENT_HELLO_FMT,
			 nonce);
	aj_agent_hdr(out, AJ_AG_EXIT, (uint32_t)n);
	size_t len = AJ_AGENT_HDR + (size_t)n;
	for (size_t off = 0; off < len;) {
		ssize_t w = write(1, out + off, len - off);
		if (w < 0 && errno == EINTR)
			continue;
		if (w <= 0)
			return EPIPE;
		off += (size_t)w;
	}
	return 0;
}
