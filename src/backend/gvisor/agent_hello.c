/* SPDX-License-Identifier: MIT */
/* A level-3 agent's start on its port (agent_hello.h): the byte the guest
 * init read before it, or a revived port's hello answered with the host's
 * nonce, in a frame of its own, so that the host knows the port in step. */
#include "agent_hello.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "agent_resync.h"

int aj_agent_port_args(int argc, char **argv, bool *hello)
{
	*hello = false;
	const char *v = getenv(AJ_AGENT_START_ENV);
	if (!v || argc < 2 || strcmp(argv[1], "cg"))
		return -1;
	char *end;
	long b = strtol(v, &end, 10);
	*hello = !strcmp(v, "hello");
	int r = *end || b < 1 || b > 255 ? -1 : (int)b;
	unsetenv(AJ_AGENT_START_ENV); /* never a command's */
	return r;
}

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
