/* SPDX-License-Identifier: MIT */
/* Unit tests: the front/supervisor protocol (src/daemon/ipc.c). What the
 * supervisor receives is checked whole: malformed, truncated, oversized,
 * wrong type, wrong op, wrong flags, wrong fd count or kind are refused,
 * and every fd that came with a refused message is closed. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <unistd.h>

#include "ipc.h"

static aj_ipc_hdr hdr(int type, const char *op, uint32_t len)
{
	aj_ipc_hdr h;
	memset(&h, 0, sizeof(h));
	h.magic = AJ_IPC_MAGIC;
	h.version = AJ_IPC_VERSION;
	h.type = (uint16_t)type;
	h.id = 7;
	h.len = len;
	if (op)
		strncpy(h.op, op, sizeof(h.op) - 1);
	return h;
}

/* A message of header + payload, decoded as a request (no fds). */
static int decode(const aj_ipc_hdr *h, const char *payload, size_t plen, aj_ipc_msg *m)
{
	char buf[sizeof(*h) + 256];
	memcpy(buf, h, sizeof(*h));
	memcpy(buf + sizeof(*h), payload, plen);
	aj_error err;
	return aj_ipc_decode(buf, sizeof(*h) + plen, NULL, 0, AJ_IPC_REQUEST, m, &err);
}

static bool fd_open(int fd)
{
	return fcntl(fd, F_GETFD) >= 0;
}

static void test_valid(void **state)
{
	(void)state;
	aj_ipc_hdr h = hdr(AJ_IPC_REQUEST, "files.get", 4);
	aj_ipc_msg m;
	assert_int_equal(decode(&h, "{ } ", 4, &m), 0);
	assert_string_equal(m.h.op, "files.get");
	assert_int_equal(m.h.id, 7);
	aj_error err;
	json_t *o = aj_ipc_json(&m, &err);
	assert_non_null(o);
	json_decref(o);
	aj_ipc_msg_free(&m);
}

static void test_bad_headers(void **state)
{
	(void)state;
	aj_ipc_msg m;
	aj_ipc_hdr h = hdr(AJ_IPC_REQUEST, "get", 2);
	/* truncated: shorter than a header, or than the payload announced */
	aj_error err;
	assert_true(aj_ipc_decode(&h, sizeof(h) - 1, NULL, 0, AJ_IPC_REQUEST, &m, &err) < 0);
	assert_true(decode(&h, "{", 1, &m) < 0);
	/* longer than announced */
	assert_true(decode(&h, "{}}", 3, &m) < 0);
	/* oversized inline payload */
	h = hdr(AJ_IPC_REQUEST, "get", AJ_IPC_INLINE_MAX + 1);
	assert_true(decode(&h, "{}", 2, &m) < 0);
	/* wrong magic, version, type */
	h = hdr(AJ_IPC_REQUEST, "get", 2);
	h.magic ^= 1;
	assert_true(decode(&h, "{}", 2, &m) < 0);
	h = hdr(AJ_IPC_REQUEST, "get", 2);
	h.version = 2;
	assert_true(decode(&h, "{}", 2, &m) < 0);
	h = hdr(AJ_IPC_REPLY, "get", 2);
	assert_true(decode(&h, "{}", 2, &m) < 0);
	/* a request with a status, unknown flags, an object fd asked for */
	h = hdr(AJ_IPC_REQUEST, "get", 2);
	h.status = 200;
	assert_true(decode(&h, "{}", 2, &m) < 0);
	h = hdr(AJ_IPC_REQUEST, "get", 2);
	h.flags = 0x80;
	assert_true(decode(&h, "{}", 2, &m) < 0);
	h.flags = AJ_IPC_F_OBJECT_FD;
	assert_true(decode(&h, "{}", 2, &m) < 0);
	/* op names: empty, bad characters, no NUL, bytes after the NUL */
	h = hdr(AJ_IPC_REQUEST, "", 2);
	assert_true(decode(&h, "{}", 2, &m) < 0);
	h = hdr(AJ_IPC_REQUEST, "../get", 2);
	assert_true(decode(&h, "{}", 2, &m) < 0);
	h = hdr(AJ_IPC_REQUEST, "get", 2);
	memset(h.op, 'a', sizeof(h.op));
	assert_true(decode(&h, "{}", 2, &m) < 0);
	h = hdr(AJ_IPC_REQUEST, "get", 2);
	h.op[10] = 'x';
	assert_true(decode(&h, "{}", 2, &m) < 0);
	/* a reply: a status out of range */
	h = hdr(AJ_IPC_REPLY, NULL, 0);
	h.status = 99;
	assert_true(aj_ipc_decode(&h, sizeof(h), NULL, 0, AJ_IPC_REPLY, &m, &err) < 0);
	h.status = 200;
	assert_int_equal(aj_ipc_decode(&h, sizeof(h), NULL, 0, AJ_IPC_REPLY, &m, &err), 0);
	aj_ipc_msg_free(&m);
}

static void test_bad_json(void **state)
{
	(void)state;
	static const char *const bad[] = {"[1]", "{\"a\":", "\"x\"", "{\"a\":1,\"a\":2}", "nul"};
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		aj_ipc_hdr h = hdr(AJ_IPC_REQUEST, "get", (uint32_t)strlen(bad[i]));
		aj_ipc_msg m;
		assert_int_equal(decode(&h, bad[i], strlen(bad[i]), &m), 0);
		aj_error err;
		assert_null(aj_ipc_json(&m, &err));
		aj_ipc_msg_free(&m);
	}
	/* too deep */
	char deep[200] = "";
	for (int i = 0; i < 40; i++)
		strcat(deep, "[");
	for (int i = 0; i < 40; i++)
		strcat(deep, "]");
	char obj[220];
	snprintf(obj, sizeof(obj), "{\"a\":%s}", deep);
	aj_ipc_hdr h = hdr(AJ_IPC_REQUEST, "get", (uint32_t)strlen(obj));
	aj_ipc_msg m;
	assert_int_equal(decode(&h, obj, strlen(obj), &m), 0);
	aj_error err;
	assert_null(aj_ipc_json(&m, &err));
	aj_ipc_msg_free(&m);
}

/* fds: a wrong count or kind is refused and every fd closed. */
static void test_fds(void **state)
{
	(void)state;
	aj_error err;
	aj_ipc_msg m;
	int p[2];
	assert_int_equal(pipe(p), 0);
	/* an fd the header does not announce */
	aj_ipc_hdr h = hdr(AJ_IPC_REQUEST, "get", 0);
	int fds[2] = {p[0], -1};
	assert_true(aj_ipc_decode(&h, sizeof(h), fds, 1, AJ_IPC_REQUEST, &m, &err) < 0);
	assert_false(fd_open(p[0]));
	/* a payload fd that is a pipe, not a sealed memfd */
	h = hdr(AJ_IPC_REQUEST, "get", AJ_IPC_INLINE_MAX + 10);
	h.flags = AJ_IPC_F_PAYLOAD_FD;
	fds[0] = p[1];
	assert_true(aj_ipc_decode(&h, sizeof(h), fds, 1, AJ_IPC_REQUEST, &m, &err) < 0);
	assert_false(fd_open(p[1]));
	/* a memfd not sealed, or of another size */
	int mfd = memfd_create("t", MFD_ALLOW_SEALING);
	assert_true(mfd >= 0);
	char *big = calloc(1, AJ_IPC_INLINE_MAX + 10);
	assert_non_null(big);
	memset(big, ' ', AJ_IPC_INLINE_MAX + 10);
	big[0] = '{';
	big[AJ_IPC_INLINE_MAX + 9] = '}';
	assert_int_equal(write(mfd, big, AJ_IPC_INLINE_MAX + 10), AJ_IPC_INLINE_MAX + 10);
	int dupd = dup(mfd);
	fds[0] = mfd;
	assert_true(aj_ipc_decode(&h, sizeof(h), fds, 1, AJ_IPC_REQUEST, &m, &err) < 0);
	assert_false(fd_open(mfd));
	/* sealed: accepted; then the same with two fds: refused, both closed */
	assert_int_equal(
	    fcntl(dupd, F_ADD_SEALS, F_SEAL_SEAL | F_SEAL_SHRINK | F_SEAL_GROW | F_SEAL_WRITE), 0);
	fds[0] = dup(dupd);
	assert_int_equal(aj_ipc_decode(&h, sizeof(h), fds, 1, AJ_IPC_REQUEST, &m, &err), 0);
	assert_int_equal(m.len, AJ_IPC_INLINE_MAX + 10);
	json_t *o = aj_ipc_json(&m, &err);
	assert_non_null(o);
	json_decref(o);
	aj_ipc_msg_free(&m);
	assert_false(fd_open(fds[0]));
	fds[0] = dup(dupd);
	fds[1] = dup(dupd);
	int keep[2] = {fds[0], fds[1]};
	assert_true(aj_ipc_decode(&h, sizeof(h), fds, 2, AJ_IPC_REQUEST, &m, &err) < 0);
	assert_false(fd_open(keep[0]));
	assert_false(fd_open(keep[1]));
	close(dupd);
	free(big);
}

/* Over a real SEQPACKET pair: small and large payloads, an object fd, and a
 * datagram larger than any message is refused (truncated). */
static void test_socket(void **state)
{
	(void)state;
	int sp[2];
	assert_int_equal(socketpair(AF_UNIX, SOCK_SEQPACKET, 0, sp), 0);
	json_t *small = json_pack("{s:s}", "sandbox", "sb-1");
	assert_int_equal(aj_ipc_send(sp[0], AJ_IPC_REQUEST, 1, "get", 0, small, -1), 0);
	aj_ipc_msg m;
	aj_error err;
	assert_int_equal(aj_ipc_recv(sp[1], AJ_IPC_REQUEST, &m, &err), 0);
	assert_int_equal(m.h.id, 1);
	aj_ipc_msg_free(&m);
	/* large: through a memfd */
	char *s = malloc(200000);
	memset(s, 'x', 199999);
	s[199999] = '\0';
	json_t *large = json_pack("{s:s}", "stdin", s);
	free(s);
	assert_int_equal(aj_ipc_send(sp[0], AJ_IPC_REQUEST, 2, "exec", 0, large, -1), 0);
	assert_int_equal(aj_ipc_recv(sp[1], AJ_IPC_REQUEST, &m, &err), 0);
	assert_true(m.h.flags & AJ_IPC_F_PAYLOAD_FD);
	json_t *o = aj_ipc_json(&m, &err);
	assert_int_equal(json_string_length(json_object_get(o, "stdin")), 199999);
	json_decref(o);
	aj_ipc_msg_free(&m);
	/* a reply with an object fd */
	int p[2];
	assert_int_equal(pipe(p), 0);
	assert_int_equal(aj_ipc_send(sp[1], AJ_IPC_REPLY, 3, NULL, 200, small, p[0]), 0);
	assert_int_equal(aj_ipc_recv(sp[0], AJ_IPC_REPLY, &m, &err), 0);
	assert_true(m.object_fd >= 0);
	assert_int_equal(write(p[1], "k", 1), 1);
	char c;
	assert_int_equal(read(m.object_fd, &c, 1), 1);
	aj_ipc_msg_free(&m);
	/* a request may not carry an object fd */
	assert_int_equal(aj_ipc_send(sp[1], AJ_IPC_REQUEST, 4, "get", 0, small, p[0]), 0);
	assert_true(aj_ipc_recv(sp[0], AJ_IPC_REQUEST, &m, &err) < 0);
	assert_int_equal(m.h.id, 4); /* the refusal can name it */
	/* a raw datagram larger than a message */
	char *junk = calloc(1, sizeof(aj_ipc_hdr) + AJ_IPC_INLINE_MAX + 100);
	assert_true(send(sp[1], junk, sizeof(aj_ipc_hdr) + AJ_IPC_INLINE_MAX + 100, 0) > 0);
	assert_true(aj_ipc_recv(sp[0], AJ_IPC_REQUEST, &m, &err) < 0);
	free(junk);
	/* the end of the peer */
	close(sp[1]);
	assert_int_equal(aj_ipc_recv(sp[0], AJ_IPC_REQUEST, &m, &err), -EPIPE);
	close(sp[0]);
	close(p[0]);
	close(p[1]);
	json_decref(small);
	json_decref(large);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_valid),    cmocka_unit_test(test_bad_headers),
	    cmocka_unit_test(test_bad_json), cmocka_unit_test(test_fds),
	    cmocka_unit_test(test_socket),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
