/* SPDX-License-Identifier: MIT */
/* CIDR values of the policy (--deny, --allow, --dns): parsing, text,
 * matching. Pure functions of aj_cidr (cidr.h); no network stack. */
#include <arpa/inet.h>
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "cidr.h"
#include "util.h"

int aj_cidr_parse(const char *s, aj_cidr *c)
{
	char buf[INET6_ADDRSTRLEN + 8];
	if (!s || strlen(s) >= sizeof(buf))
		return -EINVAL;
	snprintf(buf, sizeof(buf), "%s", s);
	memset(c, 0, sizeof(*c));
	char *slash = strchr(buf, '/');
	if (slash)
		*slash = '\0';
	if (inet_pton(AF_INET, buf, c->addr) == 1)
		c->family = AF_INET;
	else if (inet_pton(AF_INET6, buf, c->addr) == 1)
		c->family = AF_INET6;
	else
		return -EINVAL;
	unsigned max = c->family == AF_INET ? 32 : 128;
	c->prefix = max;
	if (slash) {
		unsigned long long v;
		if (!slash[1] || aj_parse_uint(slash + 1, max, &v) < 0)
			return -EINVAL;
		c->prefix = (unsigned)v;
	}
	for (unsigned bit = c->prefix; bit < max; bit++)
		c->addr[bit / 8] &= (unsigned char)~(0x80u >> (bit % 8));
	return 0;
}

void aj_cidr_format(const aj_cidr *c, char *buf, size_t len)
{
	char a[INET6_ADDRSTRLEN] = "?";
	inet_ntop(c->family, c->addr, a, sizeof(a));
	snprintf(buf, len, "%s/%u", a, c->prefix);
}

bool aj_cidr_contains(const aj_cidr *c, int family, const void *addr)
{
	if (c->family != family)
		return false;
	const unsigned char *a = addr;
	for (unsigned bit = 0; bit < c->prefix; bit++) {
		unsigned m = 0x80u >> (bit % 8);
		if ((a[bit / 8] & m) != (c->addr[bit / 8] & m))
			return false;
	}
	return true;
}
