/* SPDX-License-Identifier: MIT */
/* Unit tests: messages between agentjail and a sandbox's init (sync.c):
 * a message with bytes after it (an exec's inline spec) and its fds, two
 * messages in one call, and what a reader refuses (too short, too long)
 * with the fds that came with it closed. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <errno.h>
#include <stdbool.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include "run_exec.h"
#include "sync.h"

/* A socket pair as agentjail and init have, a pipe, an empty message. */
static void prepare(int sv[2], int p[2], aj_msg *m)
{
	assert_int_equal(socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, sv), 0);
	assert_int_equal(pipe(p), 0);
	memset(m, 0, sizeof(*m));
}

static bool is_open(int fd)
{
	return fcntl(fd, F_GETFD) >= 0;
}

static void test_more_with_fds(void **state)
{
	(void)state;
	int sv[2], p[2];
	aj_msg m;
	prepare(sv, p, &m);
	m.type = AJ_MSG_EXEC;
	m.argc = 2;
	static const char spec[] = "/tmp\0echo\0hi\0";
	int fds[2] = {p[0], p[1]};
	assert_int_equal(aj_sync_send_more(sv[0], &m, spec, sizeof(spec), fds, 2), 0);
	struct {
		aj_msg m;
		char text[AJ_EXEC_INLINE_MAX];
	} in;
	int got_fds[4];
	size_t n = 0, got = 0;
	assert_int_equal(
	    aj_sync_recv_upto(sv[1], &in, sizeof(in.m), sizeof(in), &got, got_fds, 4, &n), 0);
	assert_int_equal(got, sizeof(aj_msg) + sizeof(spec));
	assert_int_equal(in.m.type, AJ_MSG_EXEC);
	assert_int_equal(in.m.argc, 2);
	assert_memory_equal(in.text, spec, sizeof(spec));
	assert_int_equal(n, 2);
	/* the fds work: what goes into the received write end comes out of ours */
	assert_int_equal(write(got_fds[1], "x", 1), 1);
	char c = 0;
	assert_int_equal(read(p[0], &c, 1), 1);
	assert_int_equal(c, 'x');
	for (int i = 0; i < 2; i++) {
		close(got_fds[i]);
		close(p[i]);
		close(sv[i]);
	}
}

static void test_two(void **state)
{
	(void)state;
	int sv[2], p[2];
	aj_msg a, b, r;
	prepare(sv, p, &a);
	close(p[0]);
	close(p[1]);
	memset(&b, 0, sizeof(b));
	a.type = AJ_MSG_STARTED;
	b.type = AJ_MSG_EXIT;
	b.status = 3;
	assert_int_equal(aj_sync_send_two(sv[0], &a, &b), 0);
	assert_int_equal(aj_sync_recv(sv[1], &r, NULL, 0, NULL), 0);
	assert_int_equal(r.type, AJ_MSG_STARTED);
	assert_int_equal(aj_sync_recv(sv[1], &r, NULL, 0, NULL), 0);
	assert_int_equal(r.type, AJ_MSG_EXIT);
	assert_int_equal(r.status, 3);
	/* two messages, not one: nothing else is there */
	close(sv[0]);
	assert_int_equal(aj_sync_recv(sv[1], &r, NULL, 0, NULL), -EPIPE);
	close(sv[1]);
}

static void test_refused(void **state)
{
	(void)state;
	int sv[2], p[2];
	aj_msg m;
	prepare(sv, p, &m);
	/* a fixed-size reader refuses a message with more after it */
	char more[64] = {0};
	assert_int_equal(aj_sync_send_more(sv[0], &m, more, sizeof(more), NULL, 0), 0);
	assert_int_equal(aj_sync_recv(sv[1], &m, NULL, 0, NULL), -EBADMSG);
	/* a message shorter than asked for is refused, its fds closed */
	int fds[1] = {p[1]};
	assert_int_equal(aj_sync_send_buf(sv[0], more, 8, fds, 1), 0);
	int got[1] = {-1};
	size_t n = 0, len = 0;
	struct {
		aj_msg m;
		char text[128];
	} in;
	assert_int_equal(aj_sync_recv_upto(sv[1], &in, sizeof(in.m), sizeof(in), &len, got, 1, &n),
			 -EBADMSG);
	assert_int_equal(n, 1);
	close(got[0]);
	close(p[1]);
	/* every write end is closed now: the pipe reads EOF */
	char c;
	assert_int_equal(read(p[0], &c, 1), 0);
	/* fds beyond the reader's room are closed, not leaked */
	assert_int_equal(pipe(p), 0);
	int two[2] = {p[1], p[1]};
	assert_int_equal(aj_sync_send(sv[0], &m, two, 2), 0);
	n = 0;
	assert_int_equal(aj_sync_recv(sv[1], &m, got, 1, &n), 0);
	assert_int_equal(n, 1);
	assert_true(is_open(got[0]));
	close(got[0]);
	close(p[1]);
	assert_int_equal(read(p[0], &c, 1), 0);
	close(p[0]);
	close(sv[0]);
	close(sv[1]);
}

/* A requester whose command spec is a pipe it never closes: the runner
 * (oci exec's monitor) answers an error at once instead of reading it
 * forever (alarm: the old code hung here), and forwards nothing. */
static void test_exec_forward_hung_spec(void **state)
{
	(void)state;
	struct sockaddr_un sa = {.sun_family = AF_UNIX};
	snprintf(sa.sun_path + 1, sizeof(sa.sun_path) - 1, "aj-test-exec-%d", (int)getpid());
	socklen_t sl =
	    (socklen_t)(offsetof(struct sockaddr_un, sun_path) + 1 + strlen(sa.sun_path + 1));
	int l = socket(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0);
	assert_true(l >= 0);
	assert_int_equal(bind(l, (struct sockaddr *)&sa, sl), 0);
	assert_int_equal(listen(l, 1), 0);
	int c = socket(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0);
	assert_int_equal(connect(c, (struct sockaddr *)&sa, sl), 0);
	int in[2], spec[2], init[2];
	assert_int_equal(pipe(in), 0);
	assert_int_equal(pipe(spec), 0);
	assert_int_equal(socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, init), 0);
	aj_msg m;
	memset(&m, 0, sizeof(m));
	m.type = AJ_MSG_EXEC;
	m.argc = 1;
	int fds[4] = {in[0], in[1], in[1], spec[0]};
	assert_int_equal(aj_sync_send(c, &m, fds, 4), 0);
	alarm(5);
	aj_run_exec_forward(l, init[0], NULL);
	alarm(0);
	assert_int_equal(aj_sync_recv(c, &m, NULL, 0, NULL), 0);
	assert_int_equal(m.type, AJ_MSG_ERROR);
	assert_non_null(strstr(m.err.msg, "bad exec request"));
	char b;
	assert_int_equal(recv(init[1], &b, 1, MSG_DONTWAIT), -1); /* nothing to init */
	int all[] = {l, c, in[0], in[1], spec[0], spec[1], init[0], init[1]};
	for (size_t i = 0; i < sizeof(all) / sizeof(all[0]); i++)
		close(all[i]);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_more_with_fds),
	    cmocka_unit_test(test_two),
	    cmocka_unit_test(test_refused),
	    cmocka_unit_test(test_exec_forward_hung_spec),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
