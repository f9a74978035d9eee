/* SPDX-License-Identifier: MIT */
/* The service's messages on stderr and its audit log (audit.c). */
#ifndef AJ_AUDIT_H
#define AJ_AUDIT_H

#include <jansson.h>

#include "error.h"

/* serve --log-format: plain (lines of text, as before) or json (one JSON
 * object per line on stderr: the messages, and every audit event with its
 * sandbox and tenant fields). Set before the service forks its front. */
enum aj_log_format { AJ_LOG_PLAIN, AJ_LOG_JSON };
extern enum aj_log_format aj_log_format;
/* A message of the service on stderr: "PREFIXMESSAGE" (plain) or
 * {"ts", "level", "msg"} (json). */
void aj_log(const char *level, const char *prefix, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

/* The audit log: JSON lines. */
int aj_audit_open(const char *path, aj_error *err);
/* Log one event: {"ts":..., "event": event, ...fields} (fields consumed). */
void aj_audit(const char *event, json_t *fields);
void aj_audit_close(void);
/* The audit log's descriptor (O_APPEND), or -1: a level-1 keeper's netd
 * appends its secret_* lines to it (registry.c). */
int aj_audit_fd(void);

#endif
