/* SPDX-License-Identifier: MIT */
/* The one host-name normaliser (hostname.h). IPv4 spellings follow the
 * WHATWG URL standard's "ends in a number" rule: inet_aton (glibc) reads
 * the decimal, octal and hex forms and the 1..4-part forms the way
 * curl, browsers and libc resolvers do, so a name the policy takes for a
 * name can never be connected to as an address. */
#include "hostname.h"

#include <arpa/inet.h>
#include <errno.h>
#include <string.h>

static int refuse(const char **why, const char *reason)
{
	if (why)
		*why = reason;
	return -EINVAL;
}

/* The last label is digits only or 0x/0X followed by hex digits (or
 * nothing): an address spelling, never a name. */
static bool numeric_label(const char *l)
{
	if (l[0] == '0' && l[1] == 'x')
		return strspn(l + 2, "0123456789abcdef") == strlen(l + 2);
	return l[0] && strspn(l, "0123456789") == strlen(l);
}

static int norm_ipv6(const char *in, size_t len, aj_host *out, const char **why)
{
	char buf[INET6_ADDRSTRLEN + 1];
	if (len >= sizeof(buf))
		return refuse(why, "malformed IPv6 address");
	memcpy(buf, in, len);
	buf[len] = '\0';
	if (inet_pton(AF_INET6, buf, out->addr) != 1)
		return refuse(why, "malformed IPv6 address");
	inet_ntop(AF_INET6, out->addr, out->text, sizeof(out->text));
	out->kind = AJ_HOST_IPV6;
	return 0;
}

int aj_host_norm(const char *in, size_t len, aj_host *out, const char **why)
{
	memset(out, 0, sizeof(*out));
	if (len == 0)
		return refuse(why, "empty host");
	for (size_t i = 0; i < len; i++) {
		unsigned char ch = (unsigned char)in[i];
		if (ch == 0)
			return refuse(why, "NUL byte in the host");
		if (ch < 0x20 || ch == 0x7f)
			return refuse(why, "control byte in the host");
		if (ch >= 0x80)
			return refuse(why, "non-ASCII host (give IDN names in punycode, xn--)");
	}
	if (memchr(in, ':', len))
		return norm_ipv6(in, len, out, why);
	if (in[len - 1] == '.')
		len--; /* one trailing dot: the same (fully qualified) name */
	if (len == 0)
		return refuse(why, "empty host");
	if (len > AJ_HOST_MAX)
		return refuse(why, "host name longer than 253 bytes");
	size_t label = 0, last = 0;
	for (size_t i = 0; i < len; i++) {
		unsigned char ch = (unsigned char)in[i];
		if (ch == '.') {
			if (label == 0)
				return refuse(why, "empty label in the host");
			label = 0;
			last = i + 1;
		} else if ((ch >= 'a' && ch <= 'z') || (ch >= '0' && ch <= '9') || ch == '-' ||
			   ch == '_') {
			label++;
		} else if (ch >= 'A' && ch <= 'Z') {
			ch = (unsigned char)(ch - 'A' + 'a');
			label++;
		} else {
			return refuse(why, "character not allowed in a host name");
		}
		if (label > 63)
			return refuse(why, "label longer than 63 bytes in the host");
		out->text[i] = (char)ch;
	}
	if (label == 0)
		return refuse(why, "empty label in the host");
	out->text[len] = '\0';
	if (!numeric_label(out->text + last)) {
		out->kind = AJ_HOST_NAME;
		return 0;
	}
	struct in_addr a;
	if (inet_aton(out->text, &a) == 0) {
		memset(out, 0, sizeof(*out));
		return refuse(why, "neither a host name nor an IPv4 address");
	}
	memcpy(out->addr, &a, 4);
	inet_ntop(AF_INET, &a, out->text, sizeof(out->text));
	out->kind = AJ_HOST_IPV4;
	return 0;
}

int aj_host_canon(const char *in, size_t len, char *out, size_t outlen)
{
	aj_host h;
	if (aj_host_norm(in, len, &h, NULL) < 0 || h.kind != AJ_HOST_NAME ||
	    strlen(h.text) >= outlen)
		return -EINVAL;
	memcpy(out, h.text, strlen(h.text) + 1);
	return 0;
}

bool aj_host_match(const char *pattern, const char *name)
{
	if (pattern[0] != '*')
		return strcmp(pattern, name) == 0;
	const char *suffix = pattern + 1; /* ".example.com" */
	size_t sl = strlen(suffix), nl = strlen(name);
	return nl > sl && strcmp(name + nl - sl, suffix) == 0;
}
