/* SPDX-License-Identifier: MIT */
/* The routes of the service's HTTP API (api.c). */
#ifndef AJ_API_H
#define AJ_API_H

#include <stdbool.h>
#include <stddef.h>

#include "http.h"

/* Route a request whose body (if any) is complete. */
void aj_api_dispatch(aj_req *r);
/* Before the body arrives: prepare a streamed upload. Returns false when
 * an error response was set instead. */
bool aj_api_begin_upload(aj_req *r);
/* Body bytes of an upload (buffered until the file is open). */
int aj_api_upload_data(aj_req *r, const void *buf, size_t len);
/* The upload's body is complete. */
void aj_api_upload_done(aj_req *r);

#endif
