/* SPDX-License-Identifier: MIT */
/* agentjail oci pause, resume, ps and update: a live container's freezer,
 * processes and cgroup limits. */
#include <dirent.h>
#include <errno.h>
#include <jansson.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "cgroup.h"
#include "error.h"
#include "oci_bundle.h"
#include "oci_common.h"
#include "policy.h"
#include "util.h"

/* pause, resume: the container's freezer cgroup (v1's freezer or v2's
 * cgroup.freeze), every process of it stopped where it is. */
int aj_oci_cmd_pause(int rootfd, const char *id, bool frozen)
{
	aj_oci_state st;
	if (aj_oci_load_state(rootfd, id, &st))
		return AJ_EXIT_INTERNAL;
	const char *want = frozen ? "running" : "paused";
	int r = 0;
	aj_cgroup *cg = NULL;
	aj_error err;
	aj_err_clear(&err);
	if (strcmp(st.status, want))
		r = aj_oci_failf("container %s is %s, not %s (fix: %s)", id, st.status, want,
				 frozen ? "only a running container pauses"
					: "only a paused container resumes");
	else if (!(cg = calloc(1, sizeof(*cg))))
		r = aj_oci_failf("%s: out of memory", frozen ? "pause" : "resume");
	else if (aj_oci_container_cgroup(&st, cg, &err) < 0 ||
		 aj_cgroup_freeze(cg, frozen, &err) < 0) {
		aj_err_hint(&err, "pause needs the cgroup v1 freezer controller or cgroup v2 "
				  "(agentjail doctor)");
		r = aj_oci_fail(&err);
	}
	free(cg);
	json_decref(st.j);
	return r;
}

/* ps [--format table|json] ID: the host pids of the container's processes
 * (those in its pid namespace, init included), as runc's `ps`. */
int aj_oci_cmd_ps(int rootfd, int argc, char **argv)
{
	bool json = false;
	int i = 1;
	for (; i < argc && argv[i][0] == '-'; i++) {
		const char *f = NULL;
		if (!strcmp(argv[i], "--format") || !strcmp(argv[i], "-f"))
			f = i + 1 < argc ? argv[++i] : "";
		else if (!strncmp(argv[i], "--format=", 9))
			f = argv[i] + 9;
		if (!f || (strcmp(f, "json") && strcmp(f, "table")))
			return aj_oci_failf(
			    "ps: unknown option or format '%s' (fix: agentjail oci ps "
			    "[--format table|json] ID)",
			    f ? f : argv[i]);
		json = !strcmp(f, "json");
	}
	if (argc - i != 1)
		return aj_oci_failf("ps needs one container id (fix: agentjail oci ps [--format "
				    "table|json] ID; ps options after the id are not supported)");
	const char *id = argv[i];
	aj_oci_state st;
	if (aj_oci_load_state(rootfd, id, &st))
		return AJ_EXIT_INTERNAL;
	char path[64];
	snprintf(path, sizeof(path), "/proc/%d/ns/pid", (int)st.init);
	struct stat ns, o;
	bool alive = strcmp(st.status, "stopped") && aj_oci_init_alive(&st) && stat(path, &ns) == 0;
	json_decref(st.j);
	if (!alive)
		return aj_oci_failf(
		    "container %s is not running (fix: ps lists a created, running or "
		    "paused container's processes)",
		    id);
	DIR *d = opendir("/proc");
	json_t *pids = json_array();
	if (!d || !pids) {
		if (d)
			closedir(d);
		json_decref(pids);
		return aj_oci_failf("ps: cannot read /proc: %s", strerror(errno));
	}
	struct dirent *e;
	while ((e = readdir(d))) {
		char *end;
		long pid = strtol(e->d_name, &end, 10);
		if (*end || pid <= 0)
			continue;
		snprintf(path, sizeof(path), "/proc/%ld/ns/pid", pid);
		if (stat(path, &o) == 0 && o.st_ino == ns.st_ino && o.st_dev == ns.st_dev)
			json_array_append_new(pids, json_integer(pid));
	}
	closedir(d);
	if (json) {
		json_dumpf(pids, stdout, JSON_COMPACT);
		putchar('\n');
	} else {
		printf("PID\n");
		size_t k;
		json_t *v;
		json_array_foreach(pids, k, v) printf("%lld\n", (long long)json_integer_value(v));
	}
	json_decref(pids);
	return fflush(stdout) == 0 ? 0 : AJ_EXIT_INTERNAL;
}

/* update --resources FILE|- ID: new memory, pids and cpu limits, cpu
 * weight and cpuset on the live cgroup (runtime-spec linux.resources, as
 * runc's); all checked before any is written, all or nothing. */
int aj_oci_cmd_update(int rootfd, int argc, char **argv)
{
	const char *file = NULL;
	int i = 1;
	for (; i < argc && argv[i][0] == '-' && argv[i][1]; i++) {
		if ((!strcmp(argv[i], "--resources") || !strcmp(argv[i], "-r")) && i + 1 < argc)
			file = argv[++i];
		else if (!strncmp(argv[i], "--resources=", 12))
			file = argv[i] + 12;
		else
			return aj_oci_failf(
			    "update: option '%s' is not supported (fix: agentjail oci "
			    "update --resources FILE|- ID, a linux.resources object)",
			    argv[i]);
	}
	if (argc - i != 1 || !file)
		return aj_oci_failf(
		    "update needs --resources FILE (or - for stdin) and one container id "
		    "(fix: agentjail oci update --resources FILE ID)");
	const char *id = argv[i];
	_cleanup_free_ char *text = NULL;
	size_t len = 0;
	int r = !strcmp(file, "-") ? aj_read_fd(STDIN_FILENO, &text, &len)
				   : aj_read_file(file, &text, &len);
	if (r < 0)
		return aj_oci_failf("update: cannot read %s: %s",
				    strcmp(file, "-") ? file : "stdin", strerror(errno));
	aj_policy p;
	aj_policy_init(&p);
	aj_error err;
	aj_err_clear(&err);
	if (aj_oci_resources_parse(text, len, &p, &err) < 0) {
		aj_policy_free(&p);
		return aj_oci_fail(&err);
	}
	aj_oci_state st;
	if (aj_oci_load_state(rootfd, id, &st)) {
		aj_policy_free(&p);
		return AJ_EXIT_INTERNAL;
	}
	aj_cgroup *cg = calloc(1, sizeof(*cg));
	r = 0;
	if (!strcmp(st.status, "stopped"))
		r = aj_oci_failf(
		    "container %s is stopped (fix: update a created, running or paused one)", id);
	else if (!cg)
		r = aj_oci_failf("update: out of memory");
	else if (aj_oci_container_cgroup(&st, cg, &err) < 0)
		r = aj_oci_fail(&err);
	/* all checked before any is written; a write the kernel refuses
	 * puts back those done (cgroup.h) */
	if (r == 0 && aj_cgroup_update_all(cg, &p, &err) < 0)
		r = aj_oci_fail(&err);
	free(cg);
	json_decref(st.j);
	aj_policy_free(&p);
	return r;
}
