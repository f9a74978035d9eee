/* SPDX-License-Identifier: MIT */
/* libFuzzer target: every text parser behind the CLI flags (sizes, numbers,
 * seconds, user, cpus, hostname, env entries, in-sandbox paths, masks,
 * --writable paths, CIDRs,
 * resolv.conf) and
 * the env-file parser. Each must accept or refuse, never crash or leak. */
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "allow.h"
#include "mask.h"
#include "net.h"
#include "policy.h"
#include "util.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	char *s = malloc(size + 1);
	if (!s)
		return 0;
	memcpy(s, data, size);
	s[size] = '\0';
	aj_policy p;
	aj_policy_init(&p);
	aj_error err;
	unsigned long long v;
	(void)aj_parse_size(s, &v);
	(void)aj_parse_uint(s, 1000000, &v);
	(void)aj_parse_seconds("--timeout", s, &v, &err);
	(void)aj_policy_set_user(&p, s, &err);
	(void)aj_policy_set_cpus(&p, s, &err);
	(void)aj_policy_set_hostname(&p, s, &err);
	(void)aj_policy_set_cwd(&p, s, &err);
	(void)aj_policy_add_env(&p, s, &err);
	(void)aj_policy_add_mask(&p, s, &err);
	(void)aj_policy_add_writable(&p, s, &err);
	char *canon = NULL;
	if (aj_path_validate_inside("--ro", s, &canon, &err) == 0)
		free(canon);
	(void)aj_mask_match(s, "a/b/.env", ".env", false);
	aj_cidr cidr;
	if (aj_cidr_parse(s, &cidr) == 0) {
		char text[64];
		aj_cidr_format(&cidr, text, sizeof(text));
		aj_cidr c2;
		/* what we print, we read back the same */
		if (aj_cidr_parse(text, &c2) != 0 || memcmp(&cidr, &c2, sizeof(c2)) != 0)
			abort();
	}
	(void)aj_policy_add_deny(&p, s, &err);
	(void)aj_policy_add_publish(&p, s, &err);
	(void)aj_policy_set_dns(&p, s, &err);
	if (aj_policy_add_allow(&p, s, &err) == 0) {
		/* a stored name is canonical: it reads back unchanged */
		const aj_allow *a = &p.allow[p.n_allow - 1];
		if (a->host) {
			const char *h = a->host[0] == '*' ? a->host + 2 : a->host;
			char back[AJ_HOST_MAX + 1];
			if (aj_host_canon(h, strlen(h), back, sizeof(back)) != 0 ||
			    strcmp(back, h) != 0)
				abort();
			if (a->host[0] != '*' && !aj_allow_name(&p, h, 0))
				abort();
		}
	}
	{
		/* a canonical name is the input lower-cased, one trailing dot off */
		char host[AJ_HOST_MAX + 1];
		size_t n = strlen(s);
		if (n && s[n - 1] == '.')
			n--;
		if (aj_host_canon(s, strlen(s), host, sizeof(host)) == 0 &&
		    (strlen(host) != n || strpbrk(host, "ABCDEFGHIJKLMNOPQRSTUVWXYZ@:/ ")))
			abort();
	}
	aj_net n = {.host_ip = AJ_NET_POOL + 1};
	char *rc = aj_net_resolv_conf(&n, &p, s);
	free(rc);
	char *masked = aj_mask_env_text(&p, s);
	free(masked);
	/* the env-file parser reads a file: give it one */
	char path[] = "/tmp/aj-fuzz-env-XXXXXX";
	int fd = mkstemp(path);
	if (fd >= 0) {
		if (write(fd, data, size) == (ssize_t)size)
			(void)aj_policy_add_env_file(&p, path, &err);
		close(fd);
		unlink(path);
	}
	char **env = aj_policy_build_env(&p, s, NULL);
	aj_strv_free(env);
	aj_policy_free(&p);
	free(s);
	return 0;
}
