/* SPDX-License-Identifier: MIT */
/* --seccomp-profile at level 3: the host parses and compiles the profile
 * with level 1's code (microvm/boot.c, seccomp_profile.c) and sends the
 * x86_64 BPF program with each exec as "seccomp_profile", 16 hex digits
 * an instruction (code, jt, jf, k). The command's child loads it last
 * before its exec, on top of the agent's own filter: the kernel runs both
 * and the stricter action wins, so the profile can only narrow. Anything
 * wrong with it (its form, or the kernel's verifier refusing it) fails
 * the exec; the command never runs without it. */
#include "agent_seccomp.h"

#include <errno.h>
#include <linux/filter.h>
#include <linux/seccomp.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>

/* n hex digits at s; false when one is not a hex digit */
static bool hex_field(const char *s, int n, uint32_t *out)
{
	uint32_t v = 0;
	for (int i = 0; i < n; i++) {
		char c = s[i];
		unsigned d = c >= '0' && c <= '9'   ? (unsigned)(c - '0')
			     : c >= 'a' && c <= 'f' ? (unsigned)(c - 'a' + 10)
						    : 16;
		if (d == 16)
			return false;
		v = v << 4 | d;
	}
	*out = v;
	return true;
}

int aj_agent_profile_load(json_t *q)
{
	json_t *v = json_object_get(q, "seccomp_profile");
	if (!v)
		return 0;
	const char *hex = json_string_value(v);
	size_t len = hex ? strlen(hex) : 0;
	if (len == 0 || len % 16 || len / 16 > BPF_MAXINSNS)
		return -EINVAL;
	size_t n = len / 16;
	struct sock_filter *f = calloc(n, sizeof(*f));
	if (!f)
		return -ENOMEM;
	for (size_t i = 0; i < n; i++) {
		const char *s = hex + i * 16;
		uint32_t code, jt, jf, k;
		if (!hex_field(s, 4, &code) || !hex_field(s + 4, 2, &jt) ||
		    !hex_field(s + 6, 2, &jf) || !hex_field(s + 8, 8, &k)) {
			free(f);
			return -EINVAL;
		}
		f[i] = (struct sock_filter){(uint16_t)code, (uint8_t)jt, (uint8_t)jf, k};
	}
	struct sock_fprog prog = {.len = (unsigned short)n, .filter = f};
	int r = prctl(PR_SET_SECCOMP, SECCOMP_MODE_FILTER, &prog, 0, 0) < 0 ? -errno : 0;
	free(f);
	return r;
}
