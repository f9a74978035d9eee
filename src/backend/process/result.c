/* SPDX-License-Identifier: MIT */
/* The --result report: how a run ended, as JSON. */
#include <errno.h>
#include <fcntl.h>
#include <jansson.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "sandbox.h"
#include "util.h"

int aj_run_result_write(const char *path, const aj_run_result *res, aj_error *err)
{
	json_t *o = json_pack(
	    "{s:i, s:o, s:b, s:b, s:I, s:I, s:I, s:I}", "exit_code", res->exit_code, "signal",
	    res->term_signal ? json_integer(res->term_signal) : json_null(), "timed_out",
	    res->timed_out, "oom_killed", res->oom_killed, "wall_ms", (json_int_t)res->wall_ms,
	    "cpu_user_ms", (json_int_t)res->cpu_user_ms, "cpu_sys_ms", (json_int_t)res->cpu_sys_ms,
	    "peak_memory_bytes", (json_int_t)res->peak_memory_bytes);
	/* --limits best-effort: the limits that were not applied */
	static const char *const names[] = {"memory", "pids", "cpus"};
	json_t *missing = json_array();
	for (unsigned i = 0; missing && i < AJ_ARRAY_SIZE(names); i++)
		if (res->limits_missing & (1u << i))
			json_array_append_new(missing, json_string(names[i]));
	if (o && missing)
		json_object_set_new(o, "limits_not_applied", missing);
	else
		json_decref(missing);
	if (!o || !missing)
		return json_decref(o), aj_err(err, ENOMEM, "--result: cannot build the report");
	_cleanup_free_ char *text = json_dumps(o, JSON_INDENT(2) | JSON_SORT_KEYS);
	json_decref(o);
	_cleanup_free_ char *tmp = aj_asprintf("%s.tmp-%d", path, (int)getpid());
	if (!text || !tmp)
		return aj_err(err, ENOMEM, "--result");
	int fd = open(tmp, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC | O_NOFOLLOW, 0600);
	if (fd < 0)
		return aj_err(err, errno, "--result: cannot create %s", tmp);
	int r = aj_write_all(fd, text, strlen(text));
	if (r == 0)
		r = aj_write_all(fd, "\n", 1);
	if (close(fd) < 0 && r == 0)
		r = -errno;
	if (r == 0 && rename(tmp, path) < 0)
		r = -errno;
	if (r < 0) {
		unlink(tmp);
		return aj_err(err, -r, "--result: cannot write %s", path);
	}
	return 0;
}
