/* SPDX-License-Identifier: MIT */
/* A client of `agentjail serve`: svc_client.h. */
#include <jansson.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "daemon.h"
#include "svc_client.h"
#include "util.h"

void aj_svc_init(aj_svc *c)
{
	memset(c, 0, sizeof(*c));
	c->socket = getenv("AGENTJAIL_SOCKET");
	if (!c->socket || !*c->socket)
		c->socket = AJ_DAEMON_RUN_DIR "/agentjail.sock";
}

int aj_svc_option(aj_svc *c, const char *opt, const char *val)
{
	if (!strcmp(opt, "--socket")) {
		c->socket = val;
	} else if (!strcmp(opt, "--url")) {
		c->url = val;
	} else if (!strcmp(opt, "--token-file")) {
		_cleanup_free_ char *t = NULL;
		if (aj_read_file(val, &t, NULL) < 0) {
			fprintf(stderr, "agentjail: cannot read --token-file %s\n", val);
			return -1;
		}
		t[strcspn(t, "\r\n")] = '\0';
		snprintf(c->auth, sizeof(c->auth), "Authorization: Bearer %s", t);
	} else {
		return 0;
	}
	return 1;
}

const char *aj_svc_where(const aj_svc *c)
{
	return c->url ? c->url : c->socket;
}

/* Append (NUL-terminated); the room doubles: a realloc per append was one
 * per curl buffer of a stream. */
size_t aj_buf_write(char *p, size_t sz, size_t n, void *ud)
{
	aj_buf *b = ud;
	size_t add = sz * n;
	if (b->len + add + 1 > b->cap) {
		size_t cap = b->cap ? b->cap : 4096;
		while (cap < b->len + add + 1)
			cap *= 2;
		char *d = realloc(b->data, cap);
		if (!d)
			return 0;
		b->data = d;
		b->cap = cap;
	}
	memcpy(b->data + b->len, p, add);
	b->len += add;
	b->data[b->len] = '\0';
	return add;
}

bool aj_ndjson_feed(aj_buf *line, const char *p, size_t n, size_t max, aj_ndjson_cb cb, void *ud)
{
	for (size_t i = 0; i < n;) {
		const char *nl = memchr(p + i, '\n', n - i);
		size_t span = nl ? (size_t)(nl - (p + i)) : n - i;
		if (line->len + span > max)
			return false;
		if (span && !aj_buf_write((char *)p + i, 1, span, line))
			return false;
		i += span;
		if (!nl)
			break;
		i++;
		cb(ud, line->data ? line->data : "", line->len);
		line->len = 0;
	}
	return true;
}

void aj_ndjson_end(aj_buf *line, aj_ndjson_cb cb, void *ud)
{
	if (line->len)
		cb(ud, line->data, line->len);
	line->len = 0;
}

static void set_body(CURL *h, const aj_svc_req *q, struct curl_slist **hdr)
{
	if (q->body) {
		char ct[128];
		snprintf(ct, sizeof(ct), "Content-Type: %s",
			 q->ctype ? q->ctype : "application/json");
		*hdr = curl_slist_append(*hdr, ct);
		curl_easy_setopt(h, CURLOPT_POSTFIELDSIZE_LARGE,
				 (curl_off_t)(q->body_len ? q->body_len : strlen(q->body)));
		curl_easy_setopt(h, CURLOPT_POSTFIELDS, q->body);
	}
	struct stat st;
	if (q->upload && fstat(fileno(q->upload), &st) == 0) {
		curl_easy_setopt(h, CURLOPT_UPLOAD, 1L);
		curl_easy_setopt(h, CURLOPT_READDATA, q->upload);
		curl_easy_setopt(h, CURLOPT_INFILESIZE_LARGE, (curl_off_t)st.st_size);
	}
}

long aj_svc_request(const aj_svc *c, const aj_svc_req *q)
{
	CURL *h = curl_easy_init();
	if (!h)
		return -1;
	char url[4096];
	snprintf(url, sizeof(url), "%s%s", c->url ? c->url : "http://agentjail", q->path);
	struct curl_slist *hdr = NULL;
	if (c->auth[0])
		hdr = curl_slist_append(hdr, c->auth);
	hdr = curl_slist_append(hdr, "Expect:");
	set_body(h, q, &hdr);
	curl_easy_setopt(h, CURLOPT_URL, url);
	if (!c->url)
		curl_easy_setopt(h, CURLOPT_UNIX_SOCKET_PATH, c->socket);
	curl_easy_setopt(h, CURLOPT_CUSTOMREQUEST, q->method);
	curl_easy_setopt(h, CURLOPT_HTTPHEADER, hdr);
	curl_easy_setopt(h, CURLOPT_NOSIGNAL, 1L);
	if (q->watch) {
		curl_easy_setopt(h, CURLOPT_XFERINFOFUNCTION, q->watch);
		curl_easy_setopt(h, CURLOPT_XFERINFODATA, q->watch_ud);
		curl_easy_setopt(h, CURLOPT_NOPROGRESS, 0L);
	}
	if (q->sink) /* streams: fewer, bigger reads (the default is 16 KiB) */
		curl_easy_setopt(h, CURLOPT_BUFFERSIZE, 256L * 1024);
	curl_easy_setopt(h, CURLOPT_WRITEFUNCTION, q->sink ? q->sink : aj_buf_write);
	curl_easy_setopt(h, CURLOPT_WRITEDATA, q->sink ? q->ud : (void *)q->out);
	CURLcode rc = curl_easy_perform(h);
	long status = -1;
	if (rc == CURLE_OK) {
		curl_easy_getinfo(h, CURLINFO_RESPONSE_CODE, &status);
		char *ct = NULL;
		if (q->got_ctype_size &&
		    curl_easy_getinfo(h, CURLINFO_CONTENT_TYPE, &ct) == CURLE_OK)
			snprintf(q->got_ctype, q->got_ctype_size, "%s", ct ? ct : "");
	} else if (rc == CURLE_ABORTED_BY_CALLBACK) {
		/* the caller's watch knows why */
	} else if (rc != CURLE_WRITE_ERROR && q->why) {
		snprintf(q->why, q->why_size, "cannot reach the service at %s: %s", aj_svc_where(c),
			 curl_easy_strerror(rc));
	} else if (rc != CURLE_WRITE_ERROR) {
		fprintf(stderr, "agentjail: cannot reach the service at %s: %s\n", aj_svc_where(c),
			curl_easy_strerror(rc));
	}
	curl_slist_free_all(hdr);
	curl_easy_cleanup(h);
	return status;
}

void aj_svc_error_message(const aj_buf *b, long status, char *out, size_t size)
{
	json_t *o = b && b->data ? json_loads(b->data, 0, NULL) : NULL;
	json_t *e = json_object_get(o, "error");
	const char *m = json_string_value(json_object_get(e, "message"));
	const char *code = json_string_value(json_object_get(e, "code"));
	if (m && code)
		snprintf(out, size, "%s (%s, HTTP %ld)", m, code, status);
	else
		snprintf(out, size, "%s (HTTP %ld)",
			 m	       ? m
			 : b && b->len ? b->data
				       : "error",
			 status);
	json_decref(o);
}
