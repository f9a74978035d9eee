/* SPDX-License-Identifier: MIT */
/* The audit log: one JSON object per line, appended and flushed per event. */
#include "audit.h"

#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "tenant.h"
#include "util.h"

static int audit_fd = -1;
enum aj_log_format aj_log_format = AJ_LOG_PLAIN;

void aj_log(const char *level, const char *prefix, const char *fmt, ...)
{
	char msg[2048];
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	if (aj_log_format != AJ_LOG_JSON) {
		fprintf(stderr, "%s%s\n", prefix, msg);
		return;
	}
	struct timespec ts;
	clock_gettime(CLOCK_REALTIME, &ts);
	json_t *o = json_pack("{s:f, s:s, s:s}", "ts", (double)ts.tv_sec + (double)ts.tv_nsec / 1e9,
			      "level", level, "msg", msg);
	char *line = o ? json_dumps(o, JSON_COMPACT | JSON_SORT_KEYS) : NULL;
	json_decref(o);
	if (line)
		fprintf(stderr, "%s\n", line);
	free(line);
}
static pthread_mutex_t audit_mu = PTHREAD_MUTEX_INITIALIZER;

int aj_audit_open(const char *path, aj_error *err)
{
	audit_fd = open(path, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC | O_NOFOLLOW, 0600);
	if (audit_fd < 0)
		return aj_err(err, errno, "cannot open the audit log %s", path);
	return 0;
}

void aj_audit(const char *event, json_t *fields)
{
	if (!fields)
		fields = json_object();
	/* who: the tenant of the op this thread runs, unless the event names it */
	aj_tenant *t = aj_tenant_current();
	if (t && !json_object_get(fields, "tenant"))
		json_object_set_new(fields, "tenant", json_string(t->name));
	struct timespec ts;
	clock_gettime(CLOCK_REALTIME, &ts);
	json_object_set_new(fields, "ts", json_real((double)ts.tv_sec + (double)ts.tv_nsec / 1e9));
	json_object_set_new(fields, "event", json_string(event));
	char *line = json_dumps(fields, JSON_COMPACT | JSON_SORT_KEYS);
	json_decref(fields);
	if (!line)
		return;
	size_t n = strlen(line);
	line[n] = '\n'; /* json_dumps' NUL becomes the newline */
	pthread_mutex_lock(&audit_mu);
	if (audit_fd >= 0)
		(void)aj_write_all(audit_fd, line, n + 1);
	if (aj_log_format == AJ_LOG_JSON) /* the same line on stderr (a log collector's) */
		(void)aj_write_all(STDERR_FILENO, line, n + 1);
	pthread_mutex_unlock(&audit_mu);
	free(line);
}

int aj_audit_fd(void)
{
	return audit_fd;
}

void aj_audit_close(void)
{
	if (audit_fd >= 0)
		close(audit_fd);
	audit_fd = -1;
}
