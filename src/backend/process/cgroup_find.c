/* SPDX-License-Identifier: MIT */
/* Where a controller's cgroup hierarchy is mounted, and our place in it:
 * from the texts of /proc/self/mountinfo and /proc/self/cgroup. */
#include "cgroup_find.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "util.h"

/* Does a comma-separated option list contain word? */
static bool has_opt(const char *list, const char *word)
{
	size_t n = strlen(word);
	for (const char *p = list; p && *p;) {
		const char *e = strchrnul(p, ',');
		if ((size_t)(e - p) == n && strncmp(p, word, n) == 0)
			return true;
		p = *e ? e + 1 : e;
	}
	return false;
}

/* cgroup v2: a leaf "agentjail-PID-self" that agentjail moved itself into
 * (aj_cgroup_ensure_mounted: its own cgroup had processes, which v2 allows
 * no controllers for children beside) is not its place: the cgroup above. */
static void strip_self_leaf(char *path)
{
	char *last = strrchr(path, '/');
	int pid, end = 0;
	if (!last || last == path || sscanf(last + 1, "agentjail-%d-self%n", &pid, &end) != 1 ||
	    last[1 + end] != '\0' || pid <= 0)
		return;
	*last = '\0';
}

/* Our path in the hierarchy whose /proc/self/cgroup line matches. */
static int own_path(const char *proc_cgroup, const char *ctrl, char *out, size_t len)
{
	const char *line = proc_cgroup;
	while (line && *line) {
		const char *nl = strchrnul(line, '\n');
		const char *c1 = memchr(line, ':', (size_t)(nl - line));
		const char *c2 = c1 ? memchr(c1 + 1, ':', (size_t)(nl - c1 - 1)) : NULL;
		if (c1 && c2) {
			char ctrls[256];
			size_t cl = (size_t)(c2 - c1 - 1);
			if (cl < sizeof(ctrls)) {
				memcpy(ctrls, c1 + 1, cl);
				ctrls[cl] = '\0';
				bool match = *ctrl ? has_opt(ctrls, ctrl)
						   : (cl == 0 && strncmp(line, "0:", 2) == 0);
				size_t pl = (size_t)(nl - c2 - 1);
				if (match && pl < len) {
					memcpy(out, c2 + 1, pl);
					out[pl] = '\0';
					if (!*ctrl)
						strip_self_leaf(out);
					return 0;
				}
			}
		}
		line = *nl ? nl + 1 : nl;
	}
	return -ENOENT;
}

int aj_cgroup_find(const char *mountinfo, const char *proc_cgroup, const char *ctrl,
		   aj_cgroup_hier *out)
{
	bool found = false;
	for (const char *line = mountinfo; line && *line;) {
		const char *start = line, *nl = strchrnul(line, '\n');
		char buf[1024];
		size_t l = (size_t)(nl - start);
		line = *nl ? nl + 1 : nl;
		if (l >= sizeof(buf))
			continue;
		memcpy(buf, start, l);
		buf[l] = '\0';
		/* id parent maj:min root mountpoint opts ... - fstype source superopts */
		char *f[5] = {0}, *save = NULL, *tok = strtok_r(buf, " ", &save);
		for (int i = 0; i < 5 && tok; i++, tok = strtok_r(NULL, " ", &save))
			f[i] = tok;
		char *dash = tok;
		while (dash && strcmp(dash, "-") != 0)
			dash = strtok_r(NULL, " ", &save);
		char *fstype = dash ? strtok_r(NULL, " ", &save) : NULL;
		char *source = fstype ? strtok_r(NULL, " ", &save) : NULL;
		char *super = source ? strtok_r(NULL, " ", &save) : NULL;
		if (!f[4] || !fstype || !super || strcmp(f[3], "/") != 0)
			continue;
		bool v1 = strcmp(fstype, "cgroup") == 0, v2 = strcmp(fstype, "cgroup2") == 0;
		if (!((*ctrl && v1 && has_opt(super, ctrl)) || (!*ctrl && v2)))
			continue;
		if (own_path(proc_cgroup, ctrl, out->own, sizeof(out->own)) < 0)
			return -ENOENT;
		/* the last one: a later mount is on top of (or beside) an
		 * earlier one, e.g. agentjail's own over a covered /sys/fs/cgroup */
		snprintf(out->mount, sizeof(out->mount), "%s", f[4]);
		out->version = v1 ? 1 : 2;
		found = true;
	}
	return found ? 0 : -ENOENT;
}
