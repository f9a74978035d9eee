/* SPDX-License-Identifier: MIT */
/* Warm interpreters (zygote.h): the zygote runs as one long command of the
 * sandbox, started by a thread of its own that waits for it. */
#include "zygote.h"

#include <errno.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>

#include "util.h"

extern const char aj_zygote_server_py[], aj_zygote_client_py[];

struct aj_zygote {
	aj_box *box;
	pthread_t thread;
	char interp[64];
	char sock[64];
	char *warmup;
	int ready;	/* atomic */
	char line[128]; /* the start of its stdout: "ready INTERP\n" */
	size_t line_len;
};

bool aj_zygote_interp(const char *warmup, char *interp, size_t len)
{
	size_t n = warmup ? strspn(warmup, "abcdefghijklmnopqrstuvwxyz0123456789._/-") : 0;
	const char *base = warmup ? memrchr(warmup, '/', n) : NULL;
	base = base ? base + 1 : warmup;
	if (n == 0 || n >= len || !aj_startswith(warmup + n, " -c ") ||
	    !aj_startswith(base, "python"))
		return false;
	memcpy(interp, warmup, n);
	interp[n] = '\0';
	return true;
}

static int on_output(void *ctx, int stream, const char *buf, size_t len)
{
	struct aj_zygote *z = ctx;
	if (stream != 1 || __atomic_load_n(&z->ready, __ATOMIC_SEQ_CST))
		return 0;
	size_t room = sizeof(z->line) - 1 - z->line_len;
	memcpy(z->line + z->line_len, buf, len < room ? len : room);
	z->line_len += len < room ? len : room;
	z->line[z->line_len] = '\0';
	char want[96];
	snprintf(want, sizeof(want), "ready %s\n", z->interp);
	if (strstr(z->line, want))
		__atomic_store_n(&z->ready, 1, __ATOMIC_SEQ_CST);
	return 0;
}

static void *run(void *arg)
{
	struct aj_zygote *z = arg;
	char *argv[] = {z->interp, "-c", (char *)aj_zygote_server_py, z->sock, z->warmup, NULL};
	aj_exec_spec spec = {.argv = argv, .cwd = "/"};
	aj_exec_io io = {.output = on_output, .ctx = z, .signal_fd = -1};
	aj_run_result res;
	aj_error err;
	aj_err_clear(&err);
	(void)aj_box_exec_direct(z->box, &spec, &io, &res, &err);
	__atomic_store_n(&z->ready, 0, __ATOMIC_SEQ_CST); /* it ended */
	return NULL;
}

int aj_zygote_start(aj_box *b, const char *warmup, aj_error *err)
{
	static const aj_box_warm hooks = {aj_zygote_argv, aj_zygote_free};
	if (b->zygote)
		return aj_err(err, EEXIST, "the sandbox has a zygote already");
	b->warm = &hooks;
	struct aj_zygote *z = calloc(1, sizeof(*z));
	if (!z)
		return aj_err(err, ENOMEM, "zygote");
	if (!aj_zygote_interp(warmup, z->interp, sizeof(z->interp))) {
		free(z);
		return aj_err(err, EINVAL, "the warm-up '%s' is no 'python3 -c CODE' command",
			      warmup ? warmup : "");
	}
	unsigned r = 0;
	if (getrandom(&r, sizeof(r), 0) != sizeof(r))
		r = (unsigned)(uintptr_t)z;
	snprintf(z->sock, sizeof(z->sock), "/tmp/.agentjail-zygote-%08x.sock", r);
	z->box = b;
	if (!(z->warmup = strdup(warmup))) {
		free(z);
		return aj_err(err, ENOMEM, "zygote");
	}
	int e = pthread_create(&z->thread, NULL, run, z);
	if (e) {
		free(z->warmup);
		free(z);
		return aj_err(err, e, "cannot start the zygote's thread");
	}
	b->zygote = z;
	return 0;
}

const char *aj_zygote_ready(const aj_box *b)
{
	const struct aj_zygote *z = b->zygote;
	return z && __atomic_load_n(&z->ready, __ATOMIC_SEQ_CST) ? z->interp : NULL;
}

char **aj_zygote_argv(const aj_box *b, char *const *argv)
{
	const char *interp = aj_zygote_ready(b);
	if (!interp || !argv[0] || strcmp(argv[0], interp) != 0 || !argv[1] ||
	    strcmp(argv[1], "-c") != 0 || !argv[2])
		return NULL;
	size_t n = 0;
	while (argv[n])
		n++;
	/* INTERP -I -S -c CLIENT SOCKET INTERP CODE ARGS... */
	char **v = calloc(n + 6, sizeof(char *));
	const char *head[] = {interp,	       "-I",  "-S", "-c", aj_zygote_client_py,
			      b->zygote->sock, interp};
	size_t k = 0;
	for (; v && k < AJ_ARRAY_SIZE(head); k++)
		if (!(v[k] = strdup(head[k])))
			goto fail;
	for (size_t i = 2; v && i < n; i++, k++)
		if (!(v[k] = strdup(argv[i])))
			goto fail;
	return v;
fail:
	aj_strv_free(v);
	return NULL;
}

void aj_zygote_free(aj_box *b)
{
	struct aj_zygote *z = b->zygote;
	if (!z)
		return;
	pthread_join(z->thread, NULL);
	free(z->warmup);
	free(z);
	b->zygote = NULL;
}
