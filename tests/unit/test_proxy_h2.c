/* SPDX-License-Identifier: MIT */
/* HTTP/2 on an intercepted connection (proxy_h2.c): which requests get a
 * value, and the relay's memory, flow-control window and GOAWAY. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <arpa/inet.h>
#include <openssl/evp.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <jansson.h>
#include <malloc.h>
#include <nghttp2/nghttp2.h>
#include <poll.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "allow.h"
#include "inject.h"
#include "netd_ctx.h"
#include "nft.h"
#include "proxy_parse.h"
#include "proxy_h2.h"
#include "proxy_tls.h"
#include "policy.h"

/* What an HTTP/2 client sends for requests to each authority (the
 * preface, SETTINGS, one HEADERS each with the placeholder in a header
 * and the query); its length. */
static size_t h2_client(char *buf, size_t cap, const char *const *auth, size_t n, const char *ph)
{
	nghttp2_session_callbacks *cb;
	nghttp2_session *s;
	assert_int_equal(nghttp2_session_callbacks_new(&cb), 0);
	assert_int_equal(nghttp2_session_client_new(&s, cb, NULL), 0);
	assert_int_equal(nghttp2_submit_settings(s, NGHTTP2_FLAG_NONE, NULL, 0), 0);
	char path[256], bearer[256];
	snprintf(path, sizeof(path), "/a?k=%s", ph);
	snprintf(bearer, sizeof(bearer), "Bearer %s", ph);
	for (size_t i = 0; i < n; i++) {
#define NV(a, b) {(uint8_t *)(a), (uint8_t *)(b), strlen(a), strlen(b), NGHTTP2_NV_FLAG_NONE}
		nghttp2_nv nv[] = {NV(":method", "GET"), NV(":scheme", "https"),
				   NV(":authority", auth[i]), NV(":path", path),
				   NV("authorization", bearer)};
#undef NV
		assert_true(nghttp2_submit_request(s, NULL, nv, 5, NULL, NULL) > 0);
	}
	size_t o = 0;
	const uint8_t *d;
	ssize_t k;
	while ((k = nghttp2_session_mem_send(s, &d)) > 0) {
		assert_true(o + (size_t)k <= cap);
		memcpy(buf + o, d, (size_t)k);
		o += (size_t)k;
	}
	nghttp2_session_del(s);
	nghttp2_session_callbacks_del(cb);
	return o;
}

/* HTTP/2 on an intercepted connection (proxy_h2.c): a request whose
 * :authority names the CONNECT host gets the value (header and query);
 * one naming another host, or another port, is never sent on. */
static void test_h2_frame(void **state)
{
	(void)state;
	aj_policy p;
	aj_policy_init(&p);
	assert_int_equal(aj_policy_add_secret(&p, "KEY@api.test=real-value-1", NULL), 0);
	const char *ph = p.secrets[0].placeholder;
	aj_netd_ctx ctx = {.p = &p, .log_fd = -1, .audit_fd = -1};
	aj_proxy_req c;
	static const char connect[] = "CONNECT api.test:443 HTTP/1.1\r\n\r\n";
	assert_int_equal(aj_proxy_parse(connect, strlen(connect), &c), 0);
	static const char *const auth[] = {"api.test", "other.test", "api.test:8443",
					   "API.test:443"};
	char in[8192], out[8192];
	size_t len = h2_client(in, sizeof(in), auth, 4, ph);
	size_t n = aj_proxy_h2_frame(&ctx, &c, in, len, out, sizeof(out) - 1);
	out[n] = '\0';
	assert_non_null(strstr(out, ":authority: api.test\n:path: /a?k=real-value-1\n"
				    "authorization: Bearer real-value-1\n"));
	assert_non_null(strstr(out, ":authority: API.test:443\n"));
	assert_null(strstr(out, "other.test"));
	assert_null(strstr(out, "8443"));
	assert_null(strstr(out, ph));
	aj_policy_free(&p);
}

/* The HTTP/2 relay itself (aj_proxy_h2_plain in a thread, over socket
 * pairs): the test is the sandbox (a client session) and the server (a
 * server session). Streams are indexed by id (both sides number alike). */
#define PEER_IDS 16
typedef struct peer {
	int fd;
	nghttp2_session *s;
	size_t got[PEER_IDS], want[PEER_IDS]; /* DATA received; still to send */
	bool fin[PEER_IDS];		      /* END_STREAM once want is sent */
	bool head[PEER_IDS], ended[PEER_IDS], closed[PEER_IDS];
	uint32_t code[PEER_IDS];
	int32_t hold; /* a stream whose DATA is not consumed (no window given back) */
	bool manual, eof, goaway;
	int32_t goaway_last;
} peer;

static ssize_t peer_send(nghttp2_session *s, const uint8_t *d, size_t n, int flags, void *user)
{
	(void)s, (void)flags;
	ssize_t r = send(((peer *)user)->fd, d, n, MSG_NOSIGNAL | MSG_DONTWAIT);
	if (r < 0)
		return errno == EAGAIN ? NGHTTP2_ERR_WOULDBLOCK : NGHTTP2_ERR_CALLBACK_FAILURE;
	return r;
}

static ssize_t peer_recv(nghttp2_session *s, uint8_t *d, size_t n, int flags, void *user)
{
	(void)s, (void)flags;
	ssize_t r = recv(((peer *)user)->fd, d, n, MSG_DONTWAIT);
	if (r < 0)
		return errno == EAGAIN ? NGHTTP2_ERR_WOULDBLOCK : NGHTTP2_ERR_CALLBACK_FAILURE;
	return r ? r : NGHTTP2_ERR_EOF;
}

static int peer_frame(nghttp2_session *s, const nghttp2_frame *f, void *user)
{
	(void)s;
	peer *p = user;
	int32_t id = f->hd.stream_id;
	if (f->hd.type == NGHTTP2_GOAWAY) {
		p->goaway = true;
		p->goaway_last = f->goaway.last_stream_id;
	}
	if (id <= 0 || id >= PEER_IDS)
		return 0;
	if (f->hd.type == NGHTTP2_HEADERS)
		p->head[id] = true;
	if ((f->hd.type == NGHTTP2_HEADERS || f->hd.type == NGHTTP2_DATA) &&
	    (f->hd.flags & NGHTTP2_FLAG_END_STREAM))
		p->ended[id] = true;
	return 0;
}

static int peer_data(nghttp2_session *s, uint8_t flags, int32_t id, const uint8_t *d, size_t n,
		     void *user)
{
	(void)flags, (void)d;
	peer *p = user;
	if (id > 0 && id < PEER_IDS)
		p->got[id] += n;
	if (p->manual && id != p->hold)
		(void)nghttp2_session_consume(s, id, n);
	return 0;
}

static int peer_close(nghttp2_session *s, int32_t id, uint32_t code, void *user)
{
	(void)s;
	peer *p = user;
	if (id > 0 && id < PEER_IDS) {
		p->closed[id] = true;
		p->code[id] = code;
	}
	return 0;
}

static ssize_t peer_body(nghttp2_session *s, int32_t id, uint8_t *d, size_t n, uint32_t *flags,
			 nghttp2_data_source *src, void *user)
{
	(void)s, (void)src;
	peer *p = user;
	size_t k = p->want[id] < n ? p->want[id] : n;
	memset(d, 'x', k);
	p->want[id] -= k;
	if (!p->want[id] && p->fin[id])
		*flags |= NGHTTP2_DATA_FLAG_EOF;
	else if (!k)
		return NGHTTP2_ERR_DEFERRED;
	return (ssize_t)k;
}

/* A client (window: its streams' initial window, 0 the default) or a
 * server session on fd. */
static void peer_init(peer *p, int fd, bool server, uint32_t window, bool manual)
{
	*p = (peer){.fd = fd, .manual = manual};
	nghttp2_session_callbacks *cb;
	nghttp2_option *opt;
	assert_int_equal(nghttp2_session_callbacks_new(&cb), 0);
	assert_int_equal(nghttp2_option_new(&opt), 0);
	nghttp2_option_set_no_auto_window_update(opt, manual);
	nghttp2_session_callbacks_set_send_callback(cb, peer_send);
	nghttp2_session_callbacks_set_recv_callback(cb, peer_recv);
	nghttp2_session_callbacks_set_on_frame_recv_callback(cb, peer_frame);
	nghttp2_session_callbacks_set_on_data_chunk_recv_callback(cb, peer_data);
	nghttp2_session_callbacks_set_on_stream_close_callback(cb, peer_close);
	if (server)
		assert_int_equal(nghttp2_session_server_new2(&p->s, cb, p, opt), 0);
	else
		assert_int_equal(nghttp2_session_client_new2(&p->s, cb, p, opt), 0);
	nghttp2_settings_entry set[] = {{NGHTTP2_SETTINGS_INITIAL_WINDOW_SIZE, window}};
	assert_int_equal(nghttp2_submit_settings(p->s, NGHTTP2_FLAG_NONE, set, window ? 1 : 0), 0);
	nghttp2_session_callbacks_del(cb);
	nghttp2_option_del(opt);
}

typedef struct rig {
	peer cl, sv;
	int rc, ru; /* the relay's ends */
	pthread_t t;
	aj_policy p;
	aj_netd_ctx ctx;
	aj_proxy_req connect;
} rig;

static void *rig_relay(void *arg)
{
	rig *r = arg;
	aj_proxy_h2_plain(&r->ctx, &r->connect, r->rc, r->ru);
	close(r->rc); /* the sandbox and the server see the end */
	close(r->ru);
	return NULL;
}

static void rig_start(rig *r, uint32_t client_window, bool manual)
{
	int c[2], u[2];
	assert_int_equal(socketpair(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK, 0, c), 0);
	assert_int_equal(socketpair(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK, 0, u), 0);
	aj_policy_init(&r->p);
	r->ctx = (aj_netd_ctx){.p = &r->p, .log_fd = -1, .audit_fd = -1};
	pthread_mutex_init(&r->ctx.lock, NULL);
	static const char connect[] = "CONNECT api.test:443 HTTP/1.1\r\n\r\n";
	assert_int_equal(aj_proxy_parse(connect, strlen(connect), &r->connect), 0);
	r->rc = c[1];
	r->ru = u[1];
	peer_init(&r->cl, c[0], false, client_window, manual);
	peer_init(&r->sv, u[0], true, 0, false);
	assert_int_equal(pthread_create(&r->t, NULL, rig_relay, r), 0);
}

/* Both peers: what came in, then what they have to send. */
static void rig_step(rig *r)
{
	struct pollfd pfd[2] = {{.fd = r->cl.eof ? -1 : r->cl.fd, .events = POLLIN},
				{.fd = r->sv.eof ? -1 : r->sv.fd, .events = POLLIN}};
	(void)poll(pfd, 2, 5);
	peer *ps[] = {&r->cl, &r->sv};
	for (size_t i = 0; i < 2; i++) {
		if (ps[i]->eof)
			continue;
		if (nghttp2_session_recv(ps[i]->s) != 0 || nghttp2_session_send(ps[i]->s) != 0)
			ps[i]->eof = true;
	}
}

static double now_s(void)
{
	struct timespec t;
	clock_gettime(CLOCK_MONOTONIC, &t);
	return (double)t.tv_sec + (double)t.tv_nsec / 1e9;
}

/* Step until cond, failing after 3 s (a stalled relay). */
#define RIG_UNTIL(r, cond)                                                                         \
	do {                                                                                       \
		double t0_ = now_s();                                                              \
		while (!(cond)) {                                                                  \
			assert_true(now_s() - t0_ < 3);                                            \
			rig_step(r);                                                               \
		}                                                                                  \
	} while (0)

static void rig_stop(rig *r)
{
	if (!r->cl.eof)
		shutdown(r->cl.fd, SHUT_RDWR);
	if (!r->sv.eof)
		shutdown(r->sv.fd, SHUT_RDWR);
	assert_int_equal(pthread_join(r->t, NULL), 0);
	close(r->cl.fd);
	close(r->sv.fd);
	nghttp2_session_del(r->cl.s);
	nghttp2_session_del(r->sv.s);
	aj_policy_free(&r->p);
}

#define H2NV(a, b)                                                                                 \
	{                                                                                          \
		(uint8_t *)(a), (uint8_t *)(b), strlen(a), strlen(b), NGHTTP2_NV_FLAG_NONE         \
	}

/* A request from the sandbox: its body from cl.want/fin (none: no body). */
static int32_t rig_request(rig *r, bool body)
{
	nghttp2_nv nv[] = {H2NV(":method", body ? "POST" : "GET"), H2NV(":scheme", "https"),
			   H2NV(":authority", "api.test"), H2NV(":path", "/x")};
	nghttp2_data_provider prd = {.read_callback = peer_body};
	int32_t id = nghttp2_submit_request(r->cl.s, NULL, nv, 4, body ? &prd : NULL, NULL);
	assert_true(id > 0 && id < PEER_IDS);
	return id;
}

/* The server's answer to id: a body from sv.want/fin (none: no body). */
static void rig_respond(rig *r, int32_t id, bool body)
{
	nghttp2_nv nv[] = {H2NV(":status", "200")};
	nghttp2_data_provider prd = {.read_callback = peer_body};
	assert_int_equal(nghttp2_submit_response(r->sv.s, id, nv, 1, body ? &prd : NULL), 0);
}

#if defined(__SANITIZE_ADDRESS__)
size_t __sanitizer_get_current_allocated_bytes(void);
static size_t heap_used(void)
{
	return __sanitizer_get_current_allocated_bytes();
}
#else
static size_t heap_used(void)
{
	struct mallinfo2 m = mallinfo2();
	return m.uordblks + m.hblkhd;
}
#endif

/* A long response to a sandbox that gives its window back in small steps
 * (the relay never has nothing left to send): the relay's memory stays
 * about one window, not everything the stream carried. */
static void test_h2_relay_memory(void **state)
{
	(void)state;
	rig r;
	rig_start(&r, 1024, false);
	int32_t id = rig_request(&r, false);
	RIG_UNTIL(&r, r.sv.ended[id]);
	size_t total = 2u << 20, before = heap_used();
	r.sv.want[id] = total;
	rig_respond(&r, id, true);
	RIG_UNTIL(&r, r.cl.got[id] == total);
	size_t after = heap_used();
	assert_true(after < before + (512u << 10));
	r.sv.fin[id] = true;
	assert_int_equal(nghttp2_session_resume_data(r.sv.s, id), 0);
	RIG_UNTIL(&r, r.cl.closed[id]);
	assert_int_equal(r.cl.code[id], 0);
	rig_stop(&r);
}

/* Bytes the relay drops are given back on the connection's window, which
 * every stream shares: a body sent after the server closed its stream,
 * and a response the sandbox reset with most of it still buffered. After
 * either, a new stream's 20000 bytes still get through. */
static void test_h2_relay_window(void **state)
{
	(void)state;
	rig r;
	rig_start(&r, 0, false);
	int32_t id = rig_request(&r, true); /* headers now, the body later */
	RIG_UNTIL(&r, r.sv.head[id]);
	rig_respond(&r, id, false); /* a whole answer, then: no more of the body */
	RIG_UNTIL(&r, r.cl.ended[id]);
	assert_int_equal(nghttp2_submit_rst_stream(r.sv.s, NGHTTP2_FLAG_NONE, id, NGHTTP2_NO_ERROR),
			 0);
	RIG_UNTIL(&r, r.sv.closed[id]);
	r.cl.want[id] = 60000;
	r.cl.fin[id] = true;
	assert_int_equal(nghttp2_session_resume_data(r.cl.s, id), 0);
	RIG_UNTIL(&r, r.cl.closed[id]);
	int32_t id2 = rig_request(&r, true);
	r.cl.want[id2] = 20000;
	r.cl.fin[id2] = true;
	RIG_UNTIL(&r, r.sv.ended[id2]);
	assert_int_equal(r.sv.got[id2], 20000);
	rig_respond(&r, id2, false);
	RIG_UNTIL(&r, r.cl.closed[id2]);
	rig_stop(&r);

	/* the sandbox takes 1024 bytes of 60000, then resets the stream */
	rig_start(&r, 1024, true);
	id = rig_request(&r, false);
	r.cl.hold = id;
	RIG_UNTIL(&r, r.sv.ended[id]);
	r.sv.want[id] = 60000;
	r.sv.fin[id] = true;
	rig_respond(&r, id, true);
	RIG_UNTIL(&r, r.sv.want[id] == 0 && r.cl.got[id] == 1024);
	for (int i = 0; i < 10; i++) /* the relay reads the rest */
		rig_step(&r);
	usleep(50000);
	assert_int_equal(nghttp2_submit_rst_stream(r.cl.s, NGHTTP2_FLAG_NONE, id, NGHTTP2_CANCEL),
			 0);
	RIG_UNTIL(&r, r.sv.closed[id]);
	id2 = rig_request(&r, false);
	RIG_UNTIL(&r, r.sv.ended[id2]);
	r.sv.want[id2] = 20000;
	r.sv.fin[id2] = true;
	rig_respond(&r, id2, true);
	RIG_UNTIL(&r, r.cl.closed[id2]);
	assert_int_equal(r.cl.got[id2], 20000);
	assert_int_equal(r.cl.code[id2], 0);
	rig_stop(&r);
}

/* The server answers, says GOAWAY and hangs up while most of the answer
 * is still with the relay (the sandbox has not given its window back):
 * a new stream is refused; the sandbox gets all of the answer, a
 * graceful GOAWAY naming its stream, and then the end of the connection. */
static void test_h2_relay_goaway(void **state)
{
	(void)state;
	rig r;
	rig_start(&r, 4096, true);
	int32_t id = rig_request(&r, false);
	r.cl.hold = id;
	RIG_UNTIL(&r, r.sv.ended[id]);
	r.sv.want[id] = 50000;
	r.sv.fin[id] = true;
	rig_respond(&r, id, true);
	RIG_UNTIL(&r, r.sv.closed[id]);
	assert_int_equal(
	    nghttp2_submit_goaway(r.sv.s, NGHTTP2_FLAG_NONE, id, NGHTTP2_NO_ERROR, NULL, 0), 0);
	assert_int_equal(nghttp2_session_send(r.sv.s), 0);
	/* a new stream now is refused (the sandbox may retry it elsewhere),
	 * not sent on nor answered by the relay */
	int32_t id2 = rig_request(&r, false);
	RIG_UNTIL(&r, r.cl.closed[id2]);
	assert_int_equal(r.cl.code[id2], NGHTTP2_REFUSED_STREAM);
	assert_false(r.cl.head[id2]);
	assert_false(r.sv.head[id2]);
	shutdown(r.sv.fd, SHUT_RDWR);
	r.sv.eof = true;
	usleep(50000); /* the relay sees the end with the answer buffered */
	r.cl.hold = 0;
	assert_int_equal(nghttp2_session_consume(r.cl.s, id, r.cl.got[id]), 0);
	RIG_UNTIL(&r, r.cl.eof);
	assert_true(r.cl.closed[id]);
	assert_int_equal(r.cl.code[id], 0);
	assert_int_equal(r.cl.got[id], 50000);
	assert_true(r.cl.goaway);
	/* its last stream: the refused one if the relay saw it before */
	assert_in_range(r.cl.goaway_last, id, id2);
	rig_stop(&r);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_h2_frame),
	    cmocka_unit_test(test_h2_relay_memory),
	    cmocka_unit_test(test_h2_relay_window),
	    cmocka_unit_test(test_h2_relay_goaway),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
