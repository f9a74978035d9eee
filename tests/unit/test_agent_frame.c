/* SPDX-License-Identifier: MIT */
/* Unit tests: the queue of frames to an agent (agent_frame.c), sent
 * without blocking by level 3's run and the service's VMs: partial
 * writes and EAGAIN keep every byte in order, a signal overtakes the
 * stdin not yet begun (never a frame cut short), the high-water mark,
 * a broken stream, and an allocation failure that leaves the queue as
 * it was (realloc is wrapped: tests/meson.build). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "agent_frame.h"
#include "agent_proto.h"
#include "execreq.h"
#include "mvbox.h"

/* realloc fails while fail_realloc is set */
static bool fail_realloc;
void *__real_realloc(void *p, size_t n);
void *__wrap_realloc(void *p, size_t n);
void *__wrap_realloc(void *p, size_t n)
{
	return fail_realloc ? NULL : __real_realloc(p, n);
}

/* A socket pair with small buffers, both ends non-blocking. */
static void small_pair(int sv[2])
{
	assert_int_equal(socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv), 0);
	int sz = 4096;
	setsockopt(sv[0], SOL_SOCKET, SO_SNDBUF, &sz, sizeof(sz));
	setsockopt(sv[1], SOL_SOCKET, SO_RCVBUF, &sz, sizeof(sz));
	fcntl(sv[1], F_SETFL, O_NONBLOCK);
}

/* Everything readable now from fd appended to *buf. */
static void drain(int fd, unsigned char **buf, size_t *len)
{
	unsigned char tmp[65536];
	ssize_t n;
	while ((n = read(fd, tmp, sizeof(tmp))) > 0) {
		*buf = __real_realloc(*buf, *len + (size_t)n);
		memcpy(*buf + *len, tmp, (size_t)n);
		*len += (size_t)n;
	}
}

typedef struct seen {
	char type[64];
	size_t len[64];
	unsigned char first[64];
	int n;
} seen;

static bool on_frame(void *ctx, char type, const char *buf, size_t len)
{
	seen *s = ctx;
	if (s->n < 64) {
		s->type[s->n] = type;
		s->len[s->n] = len;
		s->first[s->n] = len ? (unsigned char)buf[0] : 0;
		s->n++;
	}
	return true;
}

/* Frames bigger than the socket takes: -EAGAIN with bytes left, then
 * each flush after the reader took some sends more; the reader gets the
 * frames whole and in order. */
static void test_partial_writes_and_eagain(void **state)
{
	(void)state;
	int sv[2];
	small_pair(sv);
	aj_agent_queue q = {0};
	static char big[200000];
	for (size_t i = 0; i < sizeof(big); i++)
		big[i] = (char)('a' + i % 26);
	assert_int_equal(aj_agent_queue_put(&q, AJ_AG_STDIN, big, sizeof(big), false), 0);
	assert_int_equal(aj_agent_queue_put(&q, AJ_AG_STDIN, "x", 1, false), 0);
	assert_int_equal(aj_agent_queue_flush(&q, sv[0]), -EAGAIN);
	size_t left = aj_agent_queue_pending(&q);
	assert_true(left > 0 && left < sizeof(big) + 1 + 2 * AJ_AGENT_HDR);
	unsigned char *got = NULL;
	size_t glen = 0;
	int rounds = 0;
	while (aj_agent_queue_pending(&q)) {
		drain(sv[1], &got, &glen);
		int r = aj_agent_queue_flush(&q, sv[0]);
		assert_true(r == 0 || r == -EAGAIN);
		assert_true(++rounds < 100000);
	}
	drain(sv[1], &got, &glen);
	assert_int_equal(glen, sizeof(big) + 1 + 2 * AJ_AGENT_HDR);
	assert_memory_equal(got + AJ_AGENT_HDR, big, sizeof(big));
	seen s = {0};
	assert_int_equal(aj_agent_split((char *)got, glen, on_frame, &s), (ssize_t)glen);
	assert_int_equal(s.n, 2);
	assert_int_equal(s.type[1], AJ_AG_STDIN);
	assert_int_equal(s.first[1], 'x');
	free(got);
	aj_agent_queue_free(&q);
	close(sv[0]);
	close(sv[1]);
}

/* A signal queued in front goes after the frame cut short (never into
 * it), ahead of the stdin not yet begun, after the signals before it. */
static void test_signal_overtakes_stdin(void **state)
{
	(void)state;
	int sv[2];
	small_pair(sv);
	aj_agent_queue q = {0};
	static char a[100000], b[10];
	memset(a, 'A', sizeof(a));
	memset(b, 'B', sizeof(b));
	assert_int_equal(aj_agent_queue_put(&q, AJ_AG_STDIN, a, sizeof(a), false), 0);
	assert_int_equal(aj_agent_queue_put(&q, AJ_AG_STDIN, b, sizeof(b), false), 0);
	assert_int_equal(aj_agent_queue_flush(&q, sv[0]), -EAGAIN); /* a cut short */
	unsigned char term = SIGTERM, kill9 = SIGKILL;
	assert_int_equal(aj_agent_queue_put(&q, AJ_AG_SIGNAL, &term, 1, true), 0);
	assert_int_equal(aj_agent_queue_put(&q, AJ_AG_SIGNAL, &kill9, 1, true), 0);
	unsigned char *got = NULL;
	size_t glen = 0;
	while (aj_agent_queue_pending(&q)) {
		drain(sv[1], &got, &glen);
		(void)aj_agent_queue_flush(&q, sv[0]);
	}
	drain(sv[1], &got, &glen);
	seen s = {0};
	assert_int_equal(aj_agent_split((char *)got, glen, on_frame, &s), (ssize_t)glen);
	assert_int_equal(s.n, 4);
	assert_int_equal(s.type[0], AJ_AG_STDIN);
	assert_int_equal(s.len[0], sizeof(a));
	assert_int_equal(s.type[1], AJ_AG_SIGNAL);
	assert_int_equal(s.first[1], SIGTERM);
	assert_int_equal(s.type[2], AJ_AG_SIGNAL);
	assert_int_equal(s.first[2], SIGKILL);
	assert_int_equal(s.type[3], AJ_AG_STDIN);
	assert_int_equal(s.first[3], 'B');
	free(got);
	aj_agent_queue_free(&q);
	close(sv[0]);
	close(sv[1]);
}

/* A signal never goes ahead of a request not yet sent: the agent skips
 * every frame before its request, so a cancel there would be lost. */
static void test_signal_never_overtakes_request(void **state)
{
	(void)state;
	int sv[2];
	small_pair(sv);
	aj_agent_queue q = {0};
	static char fill[100000];
	memset(fill, 'F', sizeof(fill));
	/* the port's buffer held: nothing of the request is sent yet */
	assert_int_equal(aj_agent_queue_put(&q, AJ_AG_STDIN, fill, sizeof(fill), false), 0);
	assert_int_equal(aj_agent_queue_flush(&q, sv[0]), -EAGAIN);
	assert_int_equal(aj_agent_queue_put(&q, AJ_AG_REQUEST, "{}", 2, false), 0);
	assert_int_equal(aj_agent_queue_put(&q, AJ_AG_STDIN, "in", 2, false), 0);
	unsigned char kill9 = SIGKILL;
	assert_int_equal(aj_agent_queue_put(&q, AJ_AG_SIGNAL, &kill9, 1, true), 0);
	unsigned char *got = NULL;
	size_t glen = 0;
	while (aj_agent_queue_pending(&q)) {
		drain(sv[1], &got, &glen);
		(void)aj_agent_queue_flush(&q, sv[0]);
	}
	drain(sv[1], &got, &glen);
	seen s = {0};
	assert_int_equal(aj_agent_split((char *)got, glen, on_frame, &s), (ssize_t)glen);
	assert_int_equal(s.n, 4);
	assert_int_equal(s.type[1], AJ_AG_REQUEST);
	assert_int_equal(s.type[2], AJ_AG_SIGNAL); /* after the request, ahead of its stdin */
	assert_int_equal(s.type[3], AJ_AG_STDIN);
	free(got);
	aj_agent_queue_free(&q);
	close(sv[0]);
	close(sv[1]);
}

/* A reader that takes nothing: the queue keeps every frame, says when it
 * reached the high-water mark (the callers stop reading stdin), and all
 * of it arrives once the reader reads. */
static void test_high_water_mark(void **state)
{
	(void)state;
	int sv[2];
	small_pair(sv);
	aj_agent_queue q = {0};
	static char chunk[65536];
	memset(chunk, 'c', sizeof(chunk));
	int n = 0;
	while (!aj_agent_queue_full(&q)) {
		assert_int_equal(aj_agent_queue_put(&q, AJ_AG_STDIN, chunk, sizeof(chunk), false),
				 0);
		(void)aj_agent_queue_flush(&q, sv[0]);
		assert_true(++n < 64);
	}
	assert_true(aj_agent_queue_pending(&q) >= AJ_AGENT_QUEUE_HIGH);
	assert_true((size_t)n * (sizeof(chunk) + AJ_AGENT_HDR) >= AJ_AGENT_QUEUE_HIGH);
	unsigned char *got = NULL;
	size_t glen = 0;
	while (aj_agent_queue_pending(&q)) {
		drain(sv[1], &got, &glen);
		(void)aj_agent_queue_flush(&q, sv[0]);
	}
	drain(sv[1], &got, &glen);
	assert_false(aj_agent_queue_full(&q));
	assert_int_equal(glen, (size_t)n * (sizeof(chunk) + AJ_AGENT_HDR));
	free(got);
	aj_agent_queue_free(&q);
	close(sv[0]);
	close(sv[1]);
}

/* The agent's end gone: the error, the queue emptied; a pipe (level 2's
 * stream) is written too; a frame over the protocol's maximum refused. */
static void test_broken_stream_and_pipe(void **state)
{
	(void)state;
	signal(SIGPIPE, SIG_IGN);
	int sv[2];
	small_pair(sv);
	close(sv[1]);
	aj_agent_queue q = {0};
	assert_int_equal(aj_agent_queue_put(&q, AJ_AG_STDIN, "hi", 2, false), 0);
	assert_int_equal(aj_agent_queue_flush(&q, sv[0]), -EPIPE);
	assert_int_equal(aj_agent_queue_pending(&q), 0);
	close(sv[0]);
	int p[2];
	assert_int_equal(pipe2(p, O_CLOEXEC | O_NONBLOCK), 0);
	assert_int_equal(aj_agent_queue_put(&q, AJ_AG_STDIN, "hi", 2, false), 0);
	assert_int_equal(aj_agent_queue_flush(&q, p[1]), 0);
	char buf[16];
	assert_int_equal(read(p[0], buf, sizeof(buf)), AJ_AGENT_HDR + 2);
	assert_memory_equal(buf + AJ_AGENT_HDR, "hi", 2);
	assert_int_equal(aj_agent_queue_put(&q, AJ_AG_STDIN, NULL, AJ_AGENT_MAX_FRAME + 1, false),
			 -EMSGSIZE);
	close(p[0]);
	close(p[1]);
	aj_agent_queue_free(&q);
}

/* realloc failing: -ENOMEM, the queue as it was (what was queued still
 * goes out, in order); the next frame queues once memory is back. The
 * frames not begun can be dropped (the caller kills the command), the
 * one cut short kept to its end. */
static void test_allocation_failure(void **state)
{
	(void)state;
	int sv[2];
	small_pair(sv);
	aj_agent_queue q = {0};
	fail_realloc = true;
	assert_int_equal(aj_agent_queue_put(&q, AJ_AG_STDIN, "x", 1, false), -ENOMEM);
	assert_int_equal(aj_agent_queue_pending(&q), 0);
	fail_realloc = false;
	static char a[50000];
	memset(a, 'A', sizeof(a));
	assert_int_equal(aj_agent_queue_put(&q, AJ_AG_STDIN, a, sizeof(a), false), 0);
	assert_int_equal(aj_agent_queue_flush(&q, sv[0]), -EAGAIN);
	size_t pending = aj_agent_queue_pending(&q), len = q.len;
	fail_realloc = true;
	static char more[100000];
	unsigned char sig = SIGTERM;
	assert_int_equal(aj_agent_queue_put(&q, AJ_AG_STDIN, more, sizeof(more), false), -ENOMEM);
	assert_int_equal(aj_agent_queue_put(&q, AJ_AG_SIGNAL, &sig, 1, true), 0); /* fits */
	assert_int_equal(aj_agent_queue_pending(&q), pending + AJ_AGENT_HDR + 1);
	fail_realloc = false;
	assert_int_equal(aj_agent_queue_put(&q, AJ_AG_STDIN, "z", 1, false), 0);
	aj_agent_queue_drop_unbegun(&q); /* the signal and "z" go; a's rest stays */
	assert_int_equal(q.len, len);
	unsigned char *got = NULL;
	size_t glen = 0;
	while (aj_agent_queue_pending(&q)) {
		drain(sv[1], &got, &glen);
		(void)aj_agent_queue_flush(&q, sv[0]);
	}
	drain(sv[1], &got, &glen);
	seen s = {0};
	assert_int_equal(aj_agent_split((char *)got, glen, on_frame, &s), (ssize_t)glen);
	assert_int_equal(s.n, 1);
	assert_int_equal(s.len[0], sizeof(a));
	free(got);
	aj_agent_queue_free(&q);
	close(sv[0]);
	close(sv[1]);
}

/* A queue whose agent is gone (EPIPE) is not "sent": the port that
 * carried it is given up (box.c finish_out), never handed on as healthy. */
static void test_finish_broken(void **state)
{
	(void)state;
	int sv[2];
	small_pair(sv);
	aj_agent_queue q = {0};
	assert_int_equal(aj_agent_queue_put(&q, AJ_AG_STDIN, "hi", 2, false), 0);
	assert_int_equal(aj_agent_queue_finish(&q, sv[0], 1000), 0);
	close(sv[1]);
	assert_int_equal(aj_agent_queue_put(&q, AJ_AG_STDIN, "hi", 2, false), 0);
	assert_int_equal(aj_agent_queue_finish(&q, sv[0], 1000), -EPIPE);
	/* a reader that takes nothing: -ETIMEDOUT once the time is up */
	int p[2];
	small_pair(p);
	static char big[65536];
	assert_int_equal(aj_agent_queue_put(&q, AJ_AG_STDIN, big, sizeof(big), false), 0);
	assert_int_equal(aj_agent_queue_finish(&q, p[0], 50), -ETIMEDOUT);
	aj_agent_queue_free(&q);
	close(sv[0]), close(p[0]), close(p[1]);
}

static bool saw_exit(void *ctx, char type, const char *buf, size_t len)
{
	(void)buf, (void)len;
	if (type == AJ_AG_EXIT)
		*(bool *)ctx = true;
	return type != AJ_AG_EXIT;
}

/* No memory for a port's buffer when the agent's answer ('X') comes: it
 * is read all the same (through the stack), the port kept; what follows
 * it stays in the socket. */
static void test_port_read_oom(void **state)
{
	(void)state;
	int sv[2];
	assert_int_equal(socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv), 0);
	unsigned char h[AJ_AGENT_HDR];
	const char x[] = "{\"exit\":0,\"signal\":0}";
	aj_agent_hdr(h, AJ_AG_STDOUT, 2);
	assert_int_equal(write(sv[1], h, sizeof(h)), sizeof(h));
	assert_int_equal(write(sv[1], "ok", 2), 2);
	aj_agent_hdr(h, AJ_AG_EXIT, sizeof(x) - 1);
	assert_int_equal(write(sv[1], h, sizeof(h)), sizeof(h));
	assert_int_equal(write(sv[1], x, sizeof(x) - 1), (ssize_t)sizeof(x) - 1);
	aj_agent_hdr(h, AJ_AG_STARTED, 0); /* the next request's */
	assert_int_equal(write(sv[1], h, sizeof(h)), sizeof(h));
	mv_port pt = {.fd = sv[0]};
	bool done = false;
	fail_realloc = true;
	assert_int_equal(aj_mvbox_port_read(&pt, 1000, saw_exit, &done), 1);
	fail_realloc = false;
	assert_true(done);
	assert_int_equal(pt.ilen, 0);
	char rest[16];
	assert_int_equal(recv(sv[0], rest, sizeof(rest), MSG_DONTWAIT), AJ_AGENT_HDR);
	assert_int_equal(rest[0], AJ_AG_STARTED);
	free(pt.ibuf);
	close(sv[0]), close(sv[1]);
}

/* jansson's allocations failing after `left` more */
static int json_left = -1;
static void *failing_malloc(size_t n)
{
	if (json_left == 0)
		return NULL;
	if (json_left > 0)
		json_left--;
	return malloc(n);
}

/* The exec request's user and lists under out-of-memory at every step:
 * whole or NULL, never a request without "uid"/"gid" (the command would
 * run as guest root) or with an argument left out. */
static void test_exec_request_oom(void **state)
{
	(void)state;
	json_set_alloc_funcs(failing_malloc, free);
	char *argv[] = {"sh", "-c", "id -u", NULL};
	for (int n = 0; n < 40; n++) {
		json_left = -1;
		json_t *q = json_object();
		json_left = n;
		q = aj_mv_exec_user(q, 1000, 1001);
		json_t *a = aj_mv_json_strv(argv);
		json_left = -1;
		if (q) {
			assert_int_equal(json_integer_value(json_object_get(q, "uid")), 1000);
			assert_int_equal(json_integer_value(json_object_get(q, "gid")), 1001);
		}
		if (a)
			assert_int_equal(json_array_size(a), 3);
		json_decref(q);
		json_decref(a);
	}
	json_set_alloc_funcs(malloc, free);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_partial_writes_and_eagain),
	    cmocka_unit_test(test_signal_overtakes_stdin),
	    cmocka_unit_test(test_signal_never_overtakes_request),
	    cmocka_unit_test(test_high_water_mark),
	    cmocka_unit_test(test_broken_stream_and_pipe),
	    cmocka_unit_test(test_allocation_failure),
	    cmocka_unit_test(test_finish_broken),
	    cmocka_unit_test(test_port_read_oom),
	    cmocka_unit_test(test_exec_request_oom),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
