/* SPDX-License-Identifier: MIT */
/* libFuzzer target: the one host-name normaliser (core/hostname.c).
 * Checks: it accepts or refuses (saying why), never crashes; what it
 * accepts is canonical (normalising the output again gives the same kind
 * and text), has no upper-case, control, non-ASCII or NUL byte, no
 * trailing dot, no empty label, at most 253 bytes; an address's text
 * parses back to the same address, and a name never ends in a label an
 * address parser would read as a number. */
#include <arpa/inet.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "hostname.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	aj_host h, again;
	const char *why = NULL;
	if (aj_host_norm((const char *)data, size, &h, &why) != 0) {
		if (!why)
			abort(); /* a refusal always says why */
		return 0;
	}
	size_t n = strlen(h.text);
	if (n == 0 || n > AJ_HOST_MAX)
		abort();
	for (size_t i = 0; i < n; i++) {
		unsigned char c = (unsigned char)h.text[i];
		if (c <= 0x20 || c >= 0x7f || (c >= 'A' && c <= 'Z'))
			abort();
	}
	if (aj_host_norm(h.text, n, &again, &why) != 0 || again.kind != h.kind ||
	    strcmp(again.text, h.text) != 0 || memcmp(again.addr, h.addr, sizeof(h.addr)) != 0)
		abort(); /* not idempotent */
	unsigned char addr[16];
	switch (h.kind) {
	case AJ_HOST_NAME: {
		if (h.text[n - 1] == '.' || h.text[0] == '.' || strstr(h.text, ".."))
			abort();
		struct in_addr a;
		if (inet_aton(h.text, &a) != 0)
			abort(); /* a resolver would read it as an address */
		break;
	}
	case AJ_HOST_IPV4:
		if (inet_pton(AF_INET, h.text, addr) != 1 || memcmp(addr, h.addr, 4) != 0)
			abort();
		break;
	case AJ_HOST_IPV6:
		if (inet_pton(AF_INET6, h.text, addr) != 1 || memcmp(addr, h.addr, 16) != 0)
			abort();
		break;
	default: abort();
	}
	return 0;
}
