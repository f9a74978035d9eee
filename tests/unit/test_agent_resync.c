/* SPDX-License-Identifier: MIT */
/* Unit tests: a given-up level-3 port read back in step (agent_resync.c):
 * a frame cut mid-way is flushed by the filler; a stale agent relaying
 * the nonce in its output (even a whole forged acknowledgement and hello
 * answer, and a frame of zero bytes before them) never puts the port in
 * step, where a search of the raw bytes (the reverted revival's) did;
 * after the filler only the exact frames pass (an earlier try's late
 * acknowledgement skipped to the next filler); the backoff's arithmetic. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "agent_proto.h"
#include "agent_resync.h"

typedef struct stream {
	char *b;
	size_t len, cap;
} stream;

static void put(stream *s, const void *p, size_t n)
{
	if (s->len + n > s->cap) {
		s->cap = (s->len + n) * 2;
		s->b = realloc(s->b, s->cap);
		assert_non_null(s->b);
	}
	memcpy(s->b + s->len, p, n);
	s->len += n;
}

static void frame(stream *s, char type, const void *p, size_t n)
{
	unsigned char h[AJ_AGENT_HDR];
	aj_agent_hdr(h, type, (uint32_t)n);
	put(s, h, sizeof(h));
	put(s, p, n);
}

static void zeros(stream *s, size_t n)
{
	char *z = calloc(1, n);
	assert_non_null(z);
	put(s, z, n);
	free(z);
}

/* init's acknowledgement and the fresh agent's answer for nonce */
static void ack_hello(stream *s, const char *nonce)
{
	char x[128];
	frame(s, AJ_AG_RESET, nonce, strlen(nonce));
	int n = snprintf(x, sizeof(x), AJ_AGENT_HELLO_FMT, nonce);
	frame(s, AJ_AG_EXIT, x, (size_t)n);
}

/* s fed in pieces of step bytes: the last feed's result, *at the bytes
 * taken in all */
static int feed(aj_agent_resync *r, const stream *s, size_t step, size_t *at)
{
	int rc = 0;
	*at = 0;
	while (*at < s->len && rc == 0) {
		size_t n = s->len - *at < step ? s->len - *at : step, used = 0;
		rc = aj_agent_resync_feed(r, s->b + *at, n, &used);
		assert_true(used <= n);
		*at += used;
	}
	return rc;
}

static void test_nonce(void **state)
{
	(void)state;
	char a[AJ_AGENT_NONCE_LEN + 1], b[AJ_AGENT_NONCE_LEN + 1];
	assert_int_equal(aj_agent_nonce(a), 0);
	assert_int_equal(aj_agent_nonce(b), 0);
	assert_int_equal(strlen(a), AJ_AGENT_NONCE_LEN);
	assert_int_equal(strspn(a, "0123456789abcdef"), AJ_AGENT_NONCE_LEN);
	assert_string_not_equal(a, b);
}

/* a frame cut mid-way (its length says 1000, 10 bytes came), then the
 * filler, init's acknowledgement and the hello's answer: in step, in any
 * piece size; what follows is left for the port */
static void test_cut_frame_flushed(void **state)
{
	(void)state;
	char nonce[AJ_AGENT_NONCE_LEN + 1];
	assert_int_equal(aj_agent_nonce(nonce), 0);
	static const size_t steps[] = {1, 7, 4096, 1u << 22};
	for (size_t k = 0; k < sizeof(steps) / sizeof(steps[0]); k++) {
		stream s = {0};
		unsigned char h[AJ_AGENT_HDR];
		aj_agent_hdr(h, AJ_AG_STDOUT, 1000);
		put(&s, h, sizeof(h));
		put(&s, "0123456789", 10);
		zeros(&s, AJ_AGENT_FILL);
		ack_hello(&s, nonce);
		size_t end = s.len;
		frame(&s, AJ_AG_STDOUT, "next", 4);
		aj_agent_resync r;
		aj_agent_resync_init(&r, nonce);
		size_t at;
		assert_int_equal(feed(&r, &s, steps[k], &at), 1);
		assert_int_equal(at, end);
		free(s.b);
	}
}

/* A stale agent that read the nonce relays it in 'O' frames: a forged
 * acknowledgement and answer, after a frame's worth of zero bytes (the
 * longest run a stream of frames can hold). Never in step (the revival
 * times out and fails); a raw search for the answer would have found it. */
static void test_stale_relay_refused(void **state)
{
	(void)state;
	char nonce[AJ_AGENT_NONCE_LEN + 1];
	assert_int_equal(aj_agent_nonce(nonce), 0);
	stream forged = {0};
	ack_hello(&forged, nonce);
	stream s = {0};
	frame(&s, AJ_AG_STDOUT, forged.b, forged.len);
	char *z = calloc(1, AJ_AGENT_MAX_FRAME);
	assert_non_null(z);
	frame(&s, AJ_AG_STDOUT, z, AJ_AGENT_MAX_FRAME);
	free(z);
	frame(&s, AJ_AG_STDOUT, forged.b, forged.len);
	stream mixed = {0}; /* zeros and the forgery in one frame */
	zeros(&mixed, 65536);
	put(&mixed, forged.b, forged.len);
	frame(&s, AJ_AG_STDERR, mixed.b, mixed.len);
	/* the reverted revival's way: the answer searched in the raw bytes */
	stream x = {0};
	char ans[128];
	int an = snprintf(ans, sizeof(ans), AJ_AGENT_HELLO_FMT, nonce);
	frame(&x, AJ_AG_EXIT, ans, (size_t)an);
	assert_non_null(memmem(s.b, s.len, x.b, x.len));
	aj_agent_resync r;
	aj_agent_resync_init(&r, nonce);
	size_t at;
	assert_int_equal(feed(&r, &s, 4096, &at), 0);
	assert_int_equal(at, s.len);
	assert_int_equal(r.state, AJ_RESYNC_FILLER);
	/* the genuine filler and frames after the stale ones: in step */
	size_t end = s.len;
	zeros(&s, AJ_AGENT_FILL);
	ack_hello(&s, nonce);
	assert_int_equal(aj_agent_resync_feed(&r, s.b + end, s.len - end, &at), 1);
	assert_int_equal(at, s.len - end);
	free(s.b), free(forged.b), free(mixed.b), free(x.b);
}

/* after the filler, only the exact frames: a stale frame, another nonce,
 * another answer, a longer frame */
static void test_out_of_step(void **state)
{
	(void)state;
	char nonce[AJ_AGENT_NONCE_LEN + 1], other[AJ_AGENT_NONCE_LEN + 1];
	assert_int_equal(aj_agent_nonce(nonce), 0);
	assert_int_equal(aj_agent_nonce(other), 0);
	for (int c = 0; c < 5; c++) {
		stream s = {0};
		zeros(&s, AJ_AGENT_FILL);
		char x[128];
		if (c == 0) {
			frame(&s, AJ_AG_STDOUT, nonce, strlen(nonce));
		} else if (c == 1) { /* the answer of another try */
			frame(&s, AJ_AG_RESET, nonce, strlen(nonce));
			int n = snprintf(x, sizeof(x), AJ_AGENT_HELLO_FMT, other);
			frame(&s, AJ_AG_EXIT, x, (size_t)n);
		} else if (c == 2) {
			frame(&s, AJ_AG_RESET, nonce, strlen(nonce));
			int n = snprintf(x, sizeof(x), "{\"errno\":0,\"exit\":0}%s", nonce);
			frame(&s, AJ_AG_EXIT, x, (size_t)n);
		} else if (c == 3) {
			frame(&s, AJ_AG_RESET, nonce, strlen(nonce));
			frame(&s, AJ_AG_STDOUT, "x", 1); /* the hello's answer is first */
		} else {
			int n = snprintf(x, sizeof(x), "%s ", nonce);
			frame(&s, AJ_AG_RESET, x, (size_t)n);
		}
		aj_agent_resync r;
		aj_agent_resync_init(&r, nonce);
		size_t at;
		assert_int_equal(feed(&r, &s, 4096, &at), -EPROTO);
		/* failed for good */
		assert_int_equal(aj_agent_resync_feed(&r, "R", 1, &at), -EPROTO);
		free(s.b);
	}
	aj_agent_resync r; /* a bad nonce never syncs */
	aj_agent_resync_init(&r, "abc");
	size_t at;
	assert_int_equal(aj_agent_resync_feed(&r, "", 1, &at), -EPROTO);
}

/* An earlier try's guest answer, late (its filler, acknowledgement and
 * hello answer), then this try's: the old whole AJ_AG_RESET sends the
 * reading back to the filler (the old answer dropped there), and this
 * try's frames put the port in step, in any piece size. */
static void test_late_answer_skipped(void **state)
{
	(void)state;
	char nonce[AJ_AGENT_NONCE_LEN + 1], old[AJ_AGENT_NONCE_LEN + 1];
	assert_int_equal(aj_agent_nonce(nonce), 0);
	assert_int_equal(aj_agent_nonce(old), 0);
	static const size_t steps[] = {1, 4096, 1u << 22};
	for (size_t k = 0; k < sizeof(steps) / sizeof(steps[0]); k++) {
		stream s = {0};
		zeros(&s, AJ_AGENT_FILL);
		ack_hello(&s, old);
		zeros(&s, AJ_AGENT_FILL);
		ack_hello(&s, nonce);
		aj_agent_resync r;
		aj_agent_resync_init(&r, nonce);
		size_t at;
		assert_int_equal(feed(&r, &s, steps[k], &at), 1);
		assert_int_equal(at, s.len);
		free(s.b);
	}
	/* an old acknowledgement with no filler after it: not in step */
	stream s = {0};
	zeros(&s, AJ_AGENT_FILL);
	ack_hello(&s, old);
	ack_hello(&s, nonce);
	aj_agent_resync r;
	aj_agent_resync_init(&r, nonce);
	size_t at;
	assert_int_equal(feed(&r, &s, 4096, &at), 0);
	assert_int_equal(r.state, AJ_RESYNC_FILLER);
	free(s.b);
}

static void test_backoff(void **state)
{
	(void)state;
	struct timespec now = {1000, 999999999L};
	struct timespec at = aj_agent_revive_at(now, 0);
	assert_int_equal(at.tv_sec, 1001);
	assert_int_equal(at.tv_nsec, 299999999L);
	unsigned long long prev = 0;
	for (unsigned f = 0; f < 100; f++) {
		at = aj_agent_revive_at(now, f);
		assert_true(at.tv_nsec >= 0 && at.tv_nsec < 1000000000L);
		unsigned long long d =
		    (unsigned long long)(at.tv_sec - now.tv_sec) * 1000000000ULL +
		    (unsigned long long)at.tv_nsec - (unsigned long long)now.tv_nsec;
		assert_true(d >= 300000000ULL && d <= 30000000000ULL);
		assert_true(d >= prev);
		prev = d;
	}
	assert_int_equal(prev, 30000000000ULL);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_nonce),
	    cmocka_unit_test(test_cut_frame_flushed),
	    cmocka_unit_test(test_stale_relay_refused),
	    cmocka_unit_test(test_out_of_step),
	    cmocka_unit_test(test_late_answer_skipped),
	    cmocka_unit_test(test_backoff),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
