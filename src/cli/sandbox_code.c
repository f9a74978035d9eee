/* SPDX-License-Identifier: MIT */
/* agentjail sandbox code [--context NAME] [--timeout SECS] [--out DIR]
 * [--json] ID: the code is read from stdin and run in the sandbox's code
 * context (a Jupyter kernel: docs/guides/code-interpreter.md). Printed
 * output goes to our stdout and stderr as it comes; a result's text/plain
 * to stdout; each image (PNG, SVG, JPEG) to a file of DIR, its name
 * printed; an error's traceback to stderr. --json prints the events as
 * they come instead. */
#include "sandbox_code.h"

#include <errno.h>
#include <fcntl.h>
#include <jansson.h>
#include <libwebsockets.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "error.h"
#include "util.h"

#define CODE_MAX (1u << 20) /* a request body's limit (docs/api.md) */

typedef struct run {
	aj_buf line, error;
	const char *out_dir;
	bool json, ended, failed, timed_out, oom;
	unsigned images;
	int write_errors;
} run;

static int usage_fail(const char *msg)
{
	fprintf(stderr, "agentjail: sandbox code: %s\n", msg);
	return AJ_EXIT_INTERNAL;
}

/* An image of a bundle to DIR/code-N.EXT (base64 decoded unless svg). */
static void save_image(run *r, const char *mime, const char *val)
{
	const char *ext = !strcmp(mime, "image/png")	   ? "png"
			  : !strcmp(mime, "image/svg+xml") ? "svg"
							   : "jpg";
	char path[4096];
	size_t n = strlen(val);
	_cleanup_free_ char *raw = NULL;
	const char *bytes = val;
	if (strcmp(ext, "svg")) {
		raw = malloc(n / 4 * 3 + 4);
		int k =
		    raw ? lws_b64_decode_string_len(val, (int)n, raw, (int)(n / 4 * 3 + 4)) : -1;
		if (k < 0) {
			fprintf(stderr, "agentjail: %s: not base64\n", mime);
			r->write_errors++;
			return;
		}
		bytes = raw, n = (size_t)k;
	}
	int fd = -1; /* the next free name: a file that is there is never replaced */
	do {
		snprintf(path, sizeof(path), "%s/code-%u.%s", r->out_dir, ++r->images, ext);
		fd = open(path, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC | O_NOFOLLOW, 0644);
	} while (fd < 0 && errno == EEXIST && r->images < 100000);
	if (fd < 0 || aj_write_all(fd, bytes, n) < 0) {
		fprintf(stderr, "agentjail: cannot write %s: %s\n", path, strerror(errno));
		r->write_errors++;
	} else {
		printf("[%s: %s]\n", mime, path);
	}
	if (fd >= 0)
		close(fd);
}

static void on_bundle(run *r, json_t *data)
{
	static const char *const images[] = {"image/png", "image/svg+xml", "image/jpeg"};
	bool image = false;
	for (size_t i = 0; i < AJ_ARRAY_SIZE(images); i++) {
		const char *v = json_string_value(json_object_get(data, images[i]));
		if (v) {
			save_image(r, images[i], v);
			image = true;
			break; /* one file per output: the first format of the list */
		}
	}
	const char *text = json_string_value(json_object_get(data, "text/plain"));
	if (text && !image)
		printf("%s\n", text);
}

static void on_event(void *ud, const char *line, size_t len)
{
	run *r = ud;
	if (r->json) {
		fwrite(line, 1, len, stdout);
		fputc('\n', stdout);
	}
	json_t *o = json_loadb(line, len, 0, NULL);
	const char *type = json_string_value(json_object_get(o, "type"));
	if (!type) {
		aj_buf_write((char *)line, 1, len, &r->error);
	} else if (!strcmp(type, "end")) {
		r->ended = true;
		r->timed_out = json_is_true(json_object_get(o, "timed_out"));
		r->oom = json_is_true(json_object_get(o, "oom_killed"));
	} else if (!strcmp(type, "error")) {
		r->failed = true;
	}
	if (r->json || !type) {
		json_decref(o);
		return;
	}
	const char *data = json_string_value(json_object_get(o, "data"));
	if (!strcmp(type, "stdout") && data) {
		fputs(data, stdout);
	} else if (!strcmp(type, "stderr") && data) {
		fflush(stdout);
		fputs(data, stderr);
	} else if (!strcmp(type, "display") || !strcmp(type, "result")) {
		on_bundle(r, json_object_get(o, "data"));
	} else if (!strcmp(type, "error")) {
		fflush(stdout);
		json_t *tb = json_object_get(o, "traceback");
		size_t i;
		json_t *l;
		if (json_array_size(tb))
			json_array_foreach(tb, i, l) fprintf(stderr, "%s\n", json_string_value(l));
		else
			fprintf(stderr, "%s: %s\n", json_string_value(json_object_get(o, "name")),
				json_string_value(json_object_get(o, "value")));
	}
	fflush(stdout);
	json_decref(o);
}

static size_t on_stream(char *p, size_t sz, size_t n, void *ud)
{
	run *r = ud;
	return aj_ndjson_feed(&r->line, p, sz * n, 64u << 20, on_event, r) ? sz * n : 0;
}

/* The code from stdin (at most CODE_MAX bytes), or NULL (message printed). */
static char *read_code(void)
{
	aj_buf b = {0};
	char chunk[65536];
	ssize_t n;
	while ((n = read(0, chunk, sizeof(chunk))) > 0 || (n < 0 && errno == EINTR))
		if (n > 0 &&
		    (b.len + (size_t)n > CODE_MAX || !aj_buf_write(chunk, 1, (size_t)n, &b))) {
			free(b.data);
			usage_fail("the code on stdin is over 1 MiB");
			return NULL;
		}
	if (!b.data)
		return strdup("");
	return b.data;
}

int aj_sandbox_code(const aj_svc *c, int argc, char **argv)
{
	run r = {.out_dir = "."};
	const char *ctx = NULL, *id = NULL;
	double timeout = 0;
	for (int i = 0; i < argc; i++) {
		const char *a = argv[i];
		bool val = i + 1 < argc;
		if (!strcmp(a, "--json"))
			r.json = true;
		else if (!strcmp(a, "--context") && val)
			ctx = argv[++i];
		else if (!strcmp(a, "--out") && val)
			r.out_dir = argv[++i];
		else if (!strcmp(a, "--timeout") && val) {
			char *end;
			timeout = strtod(argv[++i], &end);
			if (*end || !(timeout > 0))
				return usage_fail("--timeout: a number of seconds > 0");
		} else if (a[0] == '-')
			return usage_fail("unknown option (see agentjail sandbox code --help)");
		else if (!id)
			id = a;
		else
			return usage_fail("one sandbox ID; the code comes on stdin");
	}
	if (!id)
		return usage_fail("which sandbox? (agentjail sandbox code ID < code.py)");
	_cleanup_free_ char *code = read_code();
	if (!code)
		return AJ_EXIT_INTERNAL;
	json_t *req = json_pack("{s:s, s:s}", "code", code, "language", "python");
	if (ctx)
		json_object_set_new(req, "context", json_string(ctx));
	if (timeout > 0)
		json_object_set_new(req, "timeout", json_real(timeout));
	_cleanup_free_ char *body = req ? json_dumps(req, JSON_COMPACT) : NULL;
	json_decref(req);
	if (!body)
		return usage_fail("the code is not UTF-8 text");
	char path[256];
	snprintf(path, sizeof(path), "/v1/sandboxes/%s/code", id);
	aj_svc_req q = {.method = "POST", .path = path, .body = body, .sink = on_stream, .ud = &r};
	long st = aj_svc_request(c, &q);
	aj_ndjson_end(&r.line, on_event, &r);
	fflush(stdout);
	int rc;
	if (st != 200) {
		char msg[1024];
		aj_svc_error_message(&r.error, st, msg, sizeof(msg));
		if (st >= 0)
			fprintf(stderr, "agentjail: %s\n", msg);
		rc = AJ_EXIT_INTERNAL;
	} else if (!r.ended) {
		fprintf(stderr, "agentjail: the service ended the stream early\n");
		rc = AJ_EXIT_INTERNAL;
	} else {
		rc = r.oom ? 137 : r.timed_out ? 124 : r.failed || r.write_errors ? 1 : 0;
	}
	free(r.line.data);
	free(r.error.data);
	return rc;
}
