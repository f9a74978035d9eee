/* SPDX-License-Identifier: MIT */
/* libFuzzer target: the mountinfo + /proc/self/cgroup parsers. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "cgroup.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	char *s = malloc(size + 1);
	if (!s)
		return 0;
	memcpy(s, data, size);
	s[size] = '\0';
	/* split the input in two texts at the first NUL or in the middle */
	size_t cut = strlen(s) < size ? strlen(s) : size / 2;
	char *a = strndup(s, cut), *b = strdup(s + (cut < size ? cut + (s[cut] == '\0') : size));
	aj_cgroup_hier h;
	static const char *const ctrls[] = {"memory", "pids", "cpu", ""};
	for (size_t i = 0; a && b && i < 4; i++)
		(void)aj_cgroup_find(a, b, ctrls[i], &h);
	free(a);
	free(b);
	free(s);
	return 0;
}
