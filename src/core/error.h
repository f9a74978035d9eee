/* SPDX-License-Identifier: MIT */
/* Structured errors: what failed, the errno, and how to fix it. */
#ifndef AJ_ERROR_H
#define AJ_ERROR_H

#include <stddef.h>

#define AJ_ERR_MSG_MAX 512
#define AJ_ERR_HINT_MAX 768

/* Exit codes of agentjail itself (the command's own status passes through). */
enum {
	AJ_EXIT_INTERNAL = 125, /* agentjail failed (setup, bad input) */
	AJ_EXIT_NOEXEC = 126,	/* command found but not executable */
	AJ_EXIT_NOTFOUND = 127, /* command not found */
};

typedef struct aj_error {
	int code;	   /* positive errno, 0 if none */
	int exit;	   /* exit status to use (125, 126, 127) */
	int status;	   /* the service's HTTP status for it (e.g. 409), 0: its choice */
	char api_code[32]; /* with status: the API's error code (the struct crosses processes) */
	char msg[AJ_ERR_MSG_MAX];
	char hint[AJ_ERR_HINT_MAX];
} aj_error;

/* Fill err (may be NULL) and return -errnum (or -EINVAL when errnum is 0).
 * errnum is a positive errno value or 0. */
int aj_err(aj_error *err, int errnum, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
/* Attach a "how to fix it" hint to an already filled error. */
void aj_err_hint(aj_error *err, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* Prefix the message with context ("while X: "). */
void aj_err_prefix(aj_error *err, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* Format "msg: strerror (code)" plus hint into buf. */
void aj_err_format(const aj_error *err, char *buf, size_t len);
void aj_err_clear(aj_error *err);

#endif
