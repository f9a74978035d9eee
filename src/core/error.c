/* SPDX-License-Identifier: MIT */
#include "error.h"

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

int aj_err(aj_error *err, int errnum, const char *fmt, ...)
{
	if (errnum < 0)
		errnum = -errnum;
	if (err) {
		va_list ap;
		va_start(ap, fmt);
		vsnprintf(err->msg, sizeof(err->msg), fmt, ap);
		va_end(ap);
		err->code = errnum;
		err->status = 0;
		err->api_code[0] = '\0';
		err->hint[0] = '\0';
		if (err->exit == 0)
			err->exit = AJ_EXIT_INTERNAL;
	}
	return errnum ? -errnum : -EINVAL;
}

void aj_err_hint(aj_error *err, const char *fmt, ...)
{
	if (!err)
		return;
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(err->hint, sizeof(err->hint), fmt, ap);
	va_end(ap);
}

void aj_err_prefix(aj_error *err, const char *fmt, ...)
{
	if (!err)
		return;
	char prefix[AJ_ERR_MSG_MAX];
	char old[AJ_ERR_MSG_MAX];
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(prefix, sizeof(prefix), fmt, ap);
	va_end(ap);
	memcpy(old, err->msg, sizeof(old));
	snprintf(err->msg, sizeof(err->msg), "%s: %s", prefix, old);
}

void aj_err_format(const aj_error *err, char *buf, size_t len)
{
	int n;
	/* EINVAL/ELOOP only restate the message: leave them out */
	if (err->code && err->code != EINVAL && err->code != ELOOP)
		n = snprintf(buf, len, "%s: %s", err->msg, strerror(err->code));
	else
		n = snprintf(buf, len, "%s", err->msg);
	if (n < 0 || (size_t)n >= len || !err->hint[0])
		return;
	snprintf(buf + n, len - (size_t)n, " (fix: %s)", err->hint);
}

void aj_err_clear(aj_error *err)
{
	if (err)
		memset(err, 0, sizeof(*err));
}
