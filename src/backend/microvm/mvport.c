/* SPDX-License-Identifier: MIT */
/* A level-3 sandbox's agent ports (mvbox.h): frames read from the VM's
 * agent, ports taken and given back, stale answers drained, and the
 * frames of a file operation's answer. */
#include <ctype.h>
#include <errno.h>
#include <jansson.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "agent_resync.h"
#include "mvbox.h"
#include "util.h"

unsigned long long aj_mvbox_now_ms(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (unsigned long long)ts.tv_sec * 1000ULL + (unsigned long long)ts.tv_nsec / 1000000;
}

/* ---- the ports ---- */

int aj_mvbox_port_send(int fd, char type, const void *buf, size_t len, unsigned long long idle_ms)
{
	unsigned char h[AJ_AGENT_HDR];
	aj_agent_hdr(h, type, (uint32_t)len);
	const struct {
		const void *p;
		size_t n;
	} part[2] = {{h, sizeof(h)}, {buf, len}};
	for (int k = 0; k < 2; k++)
		for (size_t off = 0; off < part[k].n;) {
			ssize_t n = send(fd, (const char *)part[k].p + off, part[k].n - off,
					 MSG_DONTWAIT | MSG_NOSIGNAL);
			if (n > 0) {
				off += (size_t)n;
				continue;
			}
			if (n < 0 && errno != EAGAIN && errno != EINTR)
				return -errno;
			struct pollfd pf = {fd, POLLOUT, 0};
			int w = poll(&pf, 1, (int)idle_ms);
			if (w == 0)
				return -ETIMEDOUT;
			if (w < 0 && errno != EINTR)
				return -errno;
		}
	return 0;
}

/* Out of memory for the port's buffer: the small frames waiting (the
 * answer 'X') taken through the stack, whole frames only, so that an
 * agent that answered never costs its port. 1, or -ENOMEM: the stream
 * as it was. */
static int port_peek(mv_port *pt, aj_agent_frame_fn fn, void *ctx)
{
	char buf[4096];
	ssize_t n = recv(pt->fd, buf, sizeof(buf), MSG_DONTWAIT | MSG_PEEK);
	if (n < 0 && (errno == EINTR || errno == EAGAIN))
		return 1;
	if (n <= 0)
		return n < 0 ? -errno : -EPIPE;
	ssize_t off = aj_agent_split(buf, (size_t)n, fn, ctx);
	if (off < 0)
		return -EPROTO;
	if (off == 0)
		return -ENOMEM;
	return recv(pt->fd, buf, (size_t)off, MSG_DONTWAIT) == off ? 1 : -EPROTO;
}

/* What came from the agent: read once (waiting at most wait_ms, -1:
 * forever), whole frames to fn. 1: read some, 0: nothing came in time,
 * -EPIPE: the VM's end, -EPROTO: a broken stream. */
int aj_mvbox_port_read(mv_port *pt, int wait_ms, aj_agent_frame_fn fn, void *ctx)
{
	struct pollfd pf = {pt->fd, POLLIN, 0};
	int k = poll(&pf, 1, wait_ms);
	if (k < 0)
		return errno == EINTR ? 0 : -errno;
	if (k == 0)
		return 0;
	if (pt->icap - pt->ilen < 65536) {
		size_t cap = pt->icap ? pt->icap * 2 : 131072;
		char *nb = realloc(pt->ibuf, cap);
		if (nb)
			pt->ibuf = nb, pt->icap = cap;
		else if (pt->ilen == pt->icap)
			return pt->ilen ? -ENOMEM : port_peek(pt, fn, ctx);
	}
	ssize_t n = recv(pt->fd, pt->ibuf + pt->ilen, pt->icap - pt->ilen, MSG_DONTWAIT);
	if (n < 0 && (errno == EINTR || errno == EAGAIN))
		return 1;
	if (n <= 0)
		return -EPIPE;
	pt->ilen += (size_t)n;
	ssize_t off = aj_agent_split(pt->ibuf, pt->ilen, fn, ctx);
	if (off < 0)
		return -EPROTO;
	memmove(pt->ibuf, pt->ibuf + off, pt->ilen - (size_t)off);
	pt->ilen -= (size_t)off;
	return 1;
}

/* Frames whole in the buffer already (left by an earlier read). */
static int port_split(mv_port *pt, aj_agent_frame_fn fn, void *ctx)
{
	ssize_t off = aj_agent_split(pt->ibuf, pt->ilen, fn, ctx);
	if (off < 0)
		return -EPROTO;
	memmove(pt->ibuf, pt->ibuf + off, pt->ilen - (size_t)off);
	pt->ilen -= (size_t)off;
	return 0;
}

static bool drop_until_exit(void *ctx, char type, const char *buf, size_t len)
{
	(void)buf, (void)len;
	if (type != AJ_AG_EXIT)
		return true;
	*(bool *)ctx = true;
	return false;
}

/* A stale port: its agent's command killed, its frames read to the
 * answer. false: it did not answer in time (the port is given up). */
bool aj_mvbox_drain(mv_port *pt)
{
	unsigned char h[AJ_AGENT_HDR + 1];
	aj_agent_hdr(h, AJ_AG_SIGNAL, 1);
	h[AJ_AGENT_HDR] = SIGKILL;
	(void)!send(pt->fd, h, sizeof(h), MSG_DONTWAIT | MSG_NOSIGNAL);
	bool done = false;
	if (port_split(pt, drop_until_exit, &done) < 0)
		return false;
	unsigned long long until = aj_mvbox_now_ms() + DRAIN_MS;
	while (!done) {
		unsigned long long t = aj_mvbox_now_ms();
		if (t >= until ||
		    aj_mvbox_port_read(pt, (int)(until - t), drop_until_exit, &done) < 0)
			return false;
	}
	pt->ilen = 0;
	return true;
}

/* ---- a given-up port made anew (agent_resync.h) ---- */

static bool inst_killed(aj_inst *i)
{
	pthread_mutex_lock(&i->mu);
	bool k = i->killed;
	pthread_mutex_unlock(&i->mu);
	return k;
}

/* Port pt back in step, within REVIVE_MS: the host's filler and
 * AJ_AG_RESET with a fresh nonce sent (what an old agent still on the port
 * reads ends it: guest/init_reset.c), while what comes back is dropped
 * until the guest's filler, then parsed as frames: init's AJ_AG_RESET with
 * the nonce (the old agent reaped), then the fresh agent's answer to a
 * hello with it, and nothing more. */
static bool port_resync(aj_inst *i, mv_port *pt)
{
	char nonce[AJ_AGENT_NONCE_LEN + 1];
	if (aj_agent_nonce(nonce) < 0)
		return false;
	aj_agent_resync r;
	aj_agent_resync_init(&r, nonce);
	/* twice a filler: an old agent may take a frame's worth before it ends */
	static const char zero[65536];
	unsigned char rst[AJ_AGENT_HDR + AJ_AGENT_NONCE_LEN];
	aj_agent_hdr(rst, AJ_AG_RESET, AJ_AGENT_NONCE_LEN);
	memcpy(rst + AJ_AGENT_HDR, nonce, AJ_AGENT_NONCE_LEN);
	size_t fill = 2 * (size_t)AJ_AGENT_FILL, total = fill + sizeof(rst), sent = 0;
	bool hello_sent = false;
	char buf[65536];
	unsigned long long until = aj_mvbox_now_ms() + REVIVE_MS;
	for (;;) {
		unsigned long long t = aj_mvbox_now_ms();
		if (t >= until || inst_killed(i))
			return false;
		if (r.state == AJ_RESYNC_HELLO && !hello_sent) {
			char q[64 + AJ_AGENT_NONCE_LEN];
			int qn =
			    snprintf(q, sizeof(q), "{\"op\":\"hello\",\"nonce\":\"%s\"}", nonce);
			if (aj_mvbox_port_send(pt->fd, AJ_AG_REQUEST, q, (size_t)qn, 2000) < 0)
				return false;
			hello_sent = true;
		}
		struct pollfd pf = {pt->fd, POLLIN | (sent < total ? POLLOUT : 0), 0};
		int wait = until - t < 100 ? (int)(until - t) : 100; /* killed seen within it */
		if (poll(&pf, 1, wait) < 0 && errno != EINTR)
			return false;
		if (pf.revents & POLLOUT) {
			const void *p = sent < fill ? (const void *)zero : rst + (sent - fill);
			size_t n = sent < fill ? fill - sent : total - sent;
			ssize_t w = send(pt->fd, p, n < sizeof(zero) ? n : sizeof(zero),
					 MSG_DONTWAIT | MSG_NOSIGNAL);
			if (w < 0 && errno != EAGAIN && errno != EINTR)
				return false;
			sent += w > 0 ? (size_t)w : 0;
		}
		if (!(pf.revents & (POLLIN | POLLHUP | POLLERR)))
			continue;
		ssize_t got = recv(pt->fd, buf, sizeof(buf), MSG_DONTWAIT);
		if (got == 0 || (got < 0 && errno != EAGAIN && errno != EINTR))
			return false;
		size_t used = 0;
		int rr = got > 0 ? aj_agent_resync_feed(&r, buf, (size_t)got, &used) : 0;
		if (rr != 0) /* in step, and nothing after the hello's answer */
			return rr == 1 && used == (size_t)got;
	}
}

typedef struct mv_revive {
	aj_inst *i;
	int k;
} mv_revive;

static void *revive_thread(void *arg)
{
	mv_revive *rv = arg;
	aj_inst *i = rv->i;
	int rv_k = rv->k;
	mv_port *pt = &i->port[rv_k];
	free(rv);
	pt->ilen = 0;
	bool ok = port_resync(i, pt);
	/* the service's log: a port given up and back, or not yet */
	fprintf(stderr, "agentjail: microvm: agent port %d %s\n", rv_k,
		ok ? "made anew" : "not made anew (tried again later)");
	pthread_mutex_lock(&i->mu);
	pt->reviving = pt->busy = false;
	if (ok) {
		pt->dead = pt->stale = false;
		pt->fails = 0;
	} else {
		struct timespec now;
		clock_gettime(CLOCK_MONOTONIC, &now);
		pt->retry = aj_agent_revive_at(now, pt->fails);
		pt->fails += pt->fails < 64;
	}
	i->revivers--;
	pthread_cond_broadcast(&i->cv);
	pthread_mutex_unlock(&i->mu);
	return NULL;
}

void aj_mvbox_revive_due(aj_inst *i)
{
	if (i->killed || i->paused || i->vm.pids[0] <= 0 || kill(i->vm.pids[0], 0) < 0)
		return;
	struct timespec now;
	clock_gettime(CLOCK_MONOTONIC, &now);
	for (int k = 0; k < AJ_MV_BOX_PORTS; k++) {
		mv_port *pt = &i->port[k];
		/* a port a fork holds is busy: never made anew under it */
		if (!pt->dead || pt->busy || pt->reviving || pt->fd < 0 ||
		    now.tv_sec < pt->retry.tv_sec ||
		    (now.tv_sec == pt->retry.tv_sec && now.tv_nsec < pt->retry.tv_nsec))
			continue;
		mv_revive *rv = malloc(sizeof(*rv));
		pthread_t t;
		pthread_attr_t at;
		pthread_attr_init(&at);
		pthread_attr_setdetachstate(&at, PTHREAD_CREATE_DETACHED);
		pt->reviving = pt->busy = true;
		i->revivers++;
		if (rv)
			*rv = (mv_revive){i, k};
		if (!rv || pthread_create(&t, &at, revive_thread, rv) != 0) {
			free(rv);
			pt->reviving = pt->busy = false;
			i->revivers--;
			pt->retry = aj_agent_revive_at(now, pt->fails);
		}
		pthread_attr_destroy(&at);
	}
}

/* A free port for one request (waits for one unless !wait: then -EBUSY
 * when none is free), or -1 when the VM is gone or every port was given
 * up and none was made anew within REVIVE_MS + 2 s. */
int aj_mvbox_port_take(aj_inst *i, bool wait)
{
	/* with every port given up, the wait is for the rebuilds going now
	 * (REVIVE_MS): not for those the next ones start (i->cv: monotonic) */
	struct timespec until;
	clock_gettime(CLOCK_MONOTONIC, &until);
	until.tv_sec += (time_t)((REVIVE_MS + 2000) / 1000);
	bool late = false;
	pthread_mutex_lock(&i->mu);
	for (bool first = true;; first = false) {
		if (first)
			aj_mvbox_revive_due(i);
		int free_k = -1, live = 0, reviving = 0;
		for (int k = 0; k < AJ_MV_BOX_PORTS; k++) {
			mv_port *pt = &i->port[k];
			if (pt->dead) {
				reviving += pt->reviving;
				continue;
			}
			live++;
			if (!pt->busy && free_k < 0)
				free_k = k;
		}
		/* every port given up: the VM answers again once one is made
		 * anew (its revival bounded: REVIVE_MS), else not */
		if (i->killed || (!live && (!reviving || late))) {
			pthread_mutex_unlock(&i->mu);
			return -1;
		}
		if (free_k >= 0) {
			mv_port *pt = &i->port[free_k];
			pt->busy = true;
			pthread_mutex_unlock(&i->mu);
			if (!pt->stale)
				return free_k;
			bool ok = aj_mvbox_drain(pt);
			pthread_mutex_lock(&i->mu);
			pt->stale = false;
			if (ok)
				return pthread_mutex_unlock(&i->mu), free_k;
			pt->dead = true;
			pt->busy = false;
			/* given up by this request: made anew now, waited for anew */
			aj_mvbox_revive_due(i);
			clock_gettime(CLOCK_MONOTONIC, &until);
			until.tv_sec += (time_t)((REVIVE_MS + 2000) / 1000);
			late = false;
			continue;
		}
		if (!wait) {
			pthread_mutex_unlock(&i->mu);
			return -EBUSY;
		}
		if (live)
			pthread_cond_wait(&i->cv, &i->mu);
		else
			late = pthread_cond_timedwait(&i->cv, &i->mu, &until) == ETIMEDOUT;
	}
}

/* The port back: answered (its agent gone), or stale (drained later), or
 * dead (its stream ended: the VM is gone). */
void aj_mvbox_port_give(aj_inst *i, int k, bool answered, bool dead)
{
	pthread_mutex_lock(&i->mu);
	i->port[k].busy = false;
	i->port[k].stale = !answered;
	i->port[k].dead = i->port[k].dead || dead;
	if (answered)
		i->port[k].ilen = 0;
	if (dead)
		aj_mvbox_revive_due(i);
	pthread_cond_broadcast(&i->cv);
	pthread_mutex_unlock(&i->mu);
}

int aj_mvbox_vm_gone(aj_inst *i, aj_error *err)
{
	if (i->lost) { /* its execs and file operations: 500 vm_lost, as the fork */
		aj_err(err, EPIPE,
		       "microvm: the sandbox's VM was lost: it did not go on after a fork's save "
		       "and was killed");
		aj_err_hint(err, "delete the sandbox and create a new one");
		err->status = 500;
		snprintf(err->api_code, sizeof(err->api_code), "%s", "vm_lost");
		return -EPIPE;
	}
	char tail[512];
	aj_mv_console_tail(&i->vm, tail, sizeof(tail));
	aj_err(err, EPIPE,
	       "microvm: the sandbox's VM does not answer (it ended, or every agent "
	       "port was lost)%s%s",
	       *tail ? ": " : "", tail);
	aj_err_hint(err, "delete the sandbox and create a new one");
	return -EPIPE;
}

/* ---- file operations (and create's first request) ---- */

static void stat_of(const aj_agent_stat *a, aj_file_stat *st)
{
	st->type = a->type;
	st->mode = a->mode;
	st->size = a->size;
	st->mtime = a->mtime;
}

/* A name of the entry j: key k, or k"x" in hex (not UTF-8); malloc'ed,
 * NULL when neither is there or the hex is bad. */
static char *tree_name(json_t *j, const char *k)
{
	const char *v = json_string_value(json_object_get(j, k));
	if (v)
		return strdup(v);
	char key[8];
	snprintf(key, sizeof(key), "%sx", k);
	const char *x = json_string_value(json_object_get(j, key));
	size_t n = x ? strlen(x) : 1;
	char *out = n % 2 ? NULL : malloc(n / 2 + 1);
	for (size_t i = 0; out && i < n / 2; i++) {
		unsigned b;
		if (sscanf(x + 2 * i, "%2x", &b) != 1 || !b || !isxdigit((unsigned char)x[2 * i]) ||
		    !isxdigit((unsigned char)x[2 * i + 1])) {
			free(out);
			return NULL;
		}
		out[i] = (char)b;
		out[i + 1] = '\0';
	}
	if (out && !n)
		out[0] = '\0';
	return out;
}

/* One entry of the guest's root ('L' of op "tree"): its JSON, untrusted. */
static int tree_entry(mv_call *c, const char *buf, size_t len)
{
	json_t *j = json_loadb(buf, len, 0, NULL);
	_cleanup_free_ char *p = tree_name(j, "p"), *l = tree_name(j, "l");
	const char *t = json_string_value(json_object_get(j, "t"));
	static const char *const num[] = {"m", "u", "g", "s", "mt", "mn"};
	long long v[6];
	bool ok = p && t && strlen(t) == 1;
	for (size_t k = 0; ok && k < AJ_ARRAY_SIZE(num); k++) {
		json_t *n = json_object_get(j, num[k]);
		v[k] = json_integer_value(n);
		ok = json_is_integer(n) && (v[k] >= 0 || k == 4);
	}
	int r;
	if (!ok) {
		r = aj_err(&c->serr, EPROTO, "snapshot: the VM's agent sent a malformed entry");
	} else {
		aj_root_entry e = {.path = p,
				   .type = t[0],
				   .mode = (unsigned)(v[0] & 07777),
				   .uid = (unsigned long long)v[1],
				   .gid = (unsigned long long)v[2],
				   .size = (unsigned long long)v[3],
				   .mtime = v[4],
				   .mtime_ns = (long)v[5],
				   .link = l};
		r = c->sink->entry(c->sink->ctx, &e, &c->serr);
	}
	json_decref(j);
	return r;
}

bool aj_mvbox_call_frame(void *ctx, char type, const char *buf, size_t len)
{
	mv_call *c = ctx;
	aj_agent_stat as;
	if (c->sink && (type == AJ_AG_ENTRY || type == AJ_AG_DATA)) {
		/* an empty DATA ends a file's bytes: the sink refuses it elsewhere */
		if (c->sr == 0)
			c->sr = type == AJ_AG_ENTRY
				    ? tree_entry(c, buf, len)
				    : c->sink->data(c->sink->ctx, buf, len, &c->serr);
		c->progress |= c->sr == 0 && (type == AJ_AG_ENTRY || len);
	} else if (type == AJ_AG_STAT && c->st) {
		aj_agent_stat_parse(buf, len, &as);
		stat_of(&as, c->st);
		free(as.name);
	} else if (type == AJ_AG_ENTRY && c->fn && !c->stopped) {
		aj_file_stat st;
		bool ok = aj_agent_stat_parse(buf, len, &as);
		stat_of(&as, &st);
		if (ok && as.name && c->fn(c->ctx, as.name, &st) < 0)
			c->stopped = true;
		free(as.name);
	} else if (type == AJ_AG_DATA && c->data_fd >= 0 && len && !c->werr) {
		c->werr = aj_write_all(c->data_fd, buf, len);
	} else if (type == AJ_AG_EXIT) {
		aj_agent_exit_parse(buf, len, &c->x);
		c->have_exit = true;
		return false;
	}
	return true;
}
