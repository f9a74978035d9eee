/* SPDX-License-Identifier: MIT */
/* The audit log: one JSON object per line, appended and flushed per event. */
#include <errno.h>
#include <fcntl.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "daemon.h"
#include "tenant.h"
#include "util.h"

static int audit_fd = -1;
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
	pthread_mutex_lock(&audit_mu);
	if (audit_fd >= 0) {
		size_t n = strlen(line);
		line[n] = '\n'; /* json_dumps' NUL becomes the newline */
		(void)aj_write_all(audit_fd, line, n + 1);
	}
	pthread_mutex_unlock(&audit_mu);
	free(line);
}

void aj_audit_close(void)
{
	if (audit_fd >= 0)
		close(audit_fd);
	audit_fd = -1;
}
