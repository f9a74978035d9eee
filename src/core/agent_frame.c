/* SPDX-License-Identifier: MIT */
#include <errno.h>
#include <jansson.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "agent_frame.h"
#include "util.h"

/* poll fd for ev up to idle_ms (-1: for ever). 0, -ETIMEDOUT or -errno. */
static int wait_fd(int fd, short ev, int idle_ms)
{
	struct pollfd p = {.fd = fd, .events = ev};
	int r;
	while ((r = poll(&p, 1, idle_ms)) < 0 && errno == EINTR)
		;
	return r < 0 ? -errno : r == 0 ? -ETIMEDOUT : 0;
}

static int write_idle(int fd, const void *buf, size_t len, int idle_ms)
{
	const char *p = buf;
	while (len > 0) {
		ssize_t n = write(fd, p, len);
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0 && errno == EAGAIN) {
			int r = wait_fd(fd, POLLOUT, idle_ms);
			if (r < 0)
				return r;
			continue;
		}
		if (n < 0)
			return -errno;
		p += n;
		len -= (size_t)n;
	}
	return 0;
}

int aj_agent_send_idle(int fd, char type, const void *buf, size_t len, int idle_ms)
{
	unsigned char h[AJ_AGENT_HDR];
	if (len > AJ_AGENT_MAX_FRAME)
		return -EMSGSIZE;
	aj_agent_hdr(h, type, (uint32_t)len);
	int r = write_idle(fd, h, sizeof(h), idle_ms);
	if (r == 0 && len)
		r = write_idle(fd, buf, len, idle_ms);
	return r;
}

int aj_agent_send(int fd, char type, const void *buf, size_t len)
{
	return aj_agent_send_idle(fd, type, buf, len, -1);
}

/* 1: all of it, 0: the end before the first byte, -EPROTO: cut short. */
static int read_full(int fd, void *buf, size_t len, int idle_ms)
{
	char *p = buf;
	size_t got = 0;
	while (got < len) {
		ssize_t n = read(fd, p + got, len - got);
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0 && errno == EAGAIN) {
			int r = wait_fd(fd, POLLIN, idle_ms);
			if (r < 0)
				return r;
			continue;
		}
		if (n < 0)
			return -errno;
		if (n == 0)
			return got ? -EPROTO : 0;
		got += (size_t)n;
	}
	return 1;
}

int aj_agent_recv(int fd, char *type, char **buf, uint32_t *len)
{
	return aj_agent_recv_idle(fd, type, buf, len, -1);
}

int aj_agent_recv_idle(int fd, char *type, char **buf, uint32_t *len, int idle_ms)
{
	unsigned char h[AJ_AGENT_HDR];
	*buf = NULL;
	int r = read_full(fd, h, sizeof(h), idle_ms);
	if (r <= 0)
		return r;
	*type = (char)h[0];
	*len = aj_agent_len(h);
	if (*len > AJ_AGENT_MAX_FRAME)
		return -EPROTO;
	if (!(*buf = malloc((size_t)*len + 1)))
		return -ENOMEM;
	if (*len && (r = read_full(fd, *buf, *len, idle_ms)) != 1) {
		free(*buf);
		*buf = NULL;
		return r == 0 ? -EPROTO : r;
	}
	(*buf)[*len] = '\0';
	return 1;
}

ssize_t aj_agent_split(const char *buf, size_t len, aj_agent_frame_fn fn, void *ctx)
{
	size_t off = 0;
	while (len - off >= AJ_AGENT_HDR) {
		uint32_t n = aj_agent_len((const unsigned char *)buf + off);
		if (n > AJ_AGENT_MAX_FRAME)
			return -EPROTO;
		if (len - off - AJ_AGENT_HDR < n)
			break;
		const char *body = buf + off + AJ_AGENT_HDR;
		off += AJ_AGENT_HDR + n;
		if (!fn(ctx, buf[off - AJ_AGENT_HDR - n], body, n))
			break;
	}
	return (ssize_t)off;
}

/* The end of the frame that holds byte off (frames start at 0). */
static size_t frame_end(const aj_agent_queue *q, size_t off)
{
	size_t b = 0;
	while (b < off && b + AJ_AGENT_HDR <= q->len)
		b += AJ_AGENT_HDR + aj_agent_len(q->buf + b);
	return b;
}

int aj_agent_queue_put(aj_agent_queue *q, char type, const void *buf, size_t len, bool front)
{
	if (len > AJ_AGENT_MAX_FRAME)
		return -EMSGSIZE;
	size_t n = AJ_AGENT_HDR + len;
	if (q->off && q->off == q->len) {
		q->off = q->len = 0;
	} else if (q->off && q->len + n > q->cap) { /* the frames sent whole dropped */
		size_t first = 0;
		while (first + AJ_AGENT_HDR + aj_agent_len(q->buf + first) <= q->off)
			first += AJ_AGENT_HDR + aj_agent_len(q->buf + first);
		memmove(q->buf, q->buf + first, q->len - first);
		q->len -= first;
		q->off -= first;
	}
	if (q->len + n > q->cap) {
		size_t cap = q->cap ? q->cap : 4096;
		while (cap < q->len + n)
			cap *= 2;
		unsigned char *nb = realloc(q->buf, cap);
		if (!nb)
			return -ENOMEM;
		q->buf = nb;
		q->cap = cap;
	}
	size_t at = front ? frame_end(q, q->off) : q->len;
	/* never ahead of a request not yet sent: the agent skips all before it */
	for (size_t r = at; front && r < q->len; r += AJ_AGENT_HDR + aj_agent_len(q->buf + r))
		if (q->buf[r] == (unsigned char)AJ_AG_REQUEST)
			at = r + AJ_AGENT_HDR + aj_agent_len(q->buf + r);
	while (front && at < q->len && q->buf[at] == (unsigned char)type)
		at += AJ_AGENT_HDR + aj_agent_len(q->buf + at);
	memmove(q->buf + at + n, q->buf + at, q->len - at);
	aj_agent_hdr(q->buf + at, type, (uint32_t)len);
	if (len)
		memcpy(q->buf + at + AJ_AGENT_HDR, buf, len);
	q->len += n;
	return 0;
}

int aj_agent_queue_flush(aj_agent_queue *q, int fd)
{
	bool sock = true;
	while (q->off < q->len) {
		const void *p = q->buf + q->off;
		size_t n = q->len - q->off;
		ssize_t w = sock ? send(fd, p, n, MSG_DONTWAIT | MSG_NOSIGNAL) : write(fd, p, n);
		if (w < 0 && errno == ENOTSOCK && sock) {
			sock = false;
			continue;
		}
		if (w < 0 && errno == EINTR)
			continue;
		if (w < 0 && (errno == EAGAIN || errno == EWOULDBLOCK))
			return -EAGAIN;
		if (w <= 0) {
			int e = w < 0 ? errno : EPIPE;
			q->off = q->len = 0;
			return -e;
		}
		q->off += (size_t)w;
	}
	q->off = q->len = 0;
	return 0;
}

int aj_agent_queue_finish(aj_agent_queue *q, int fd, int ms)
{
	struct timespec t0, t;
	clock_gettime(CLOCK_MONOTONIC, &t0);
	for (;;) {
		int r = aj_agent_queue_flush(q, fd);
		if (r != -EAGAIN)
			return r; /* all sent, or the stream broken (its queue emptied) */
		clock_gettime(CLOCK_MONOTONIC, &t);
		long long left =
		    ms - ((t.tv_sec - t0.tv_sec) * 1000LL + (t.tv_nsec - t0.tv_nsec) / 1000000);
		if (left <= 0)
			return -ETIMEDOUT;
		struct pollfd pf = {fd, POLLOUT, 0};
		(void)poll(&pf, 1, (int)left);
	}
}

void aj_agent_queue_drop_unbegun(aj_agent_queue *q)
{
	q->len = q->off ? frame_end(q, q->off) : 0;
	if (q->off >= q->len)
		q->off = q->len = 0;
}

void aj_agent_queue_free(aj_agent_queue *q)
{
	free(q->buf);
	*q = (aj_agent_queue){0};
}

static void copy_str(char *dst, size_t size, json_t *v)
{
	snprintf(dst, size, "%s", json_string_value(v) ? json_string_value(v) : "");
}

/* A JSON integer that fits an int, else 0. */
static int int_of(json_t *o, const char *key)
{
	json_int_t v = json_integer_value(json_object_get(o, key));
	return v >= -2147483647 && v <= 2147483647 ? (int)v : 0;
}

void aj_agent_exit_parse(const char *buf, size_t len, aj_agent_exit *x)
{
	memset(x, 0, sizeof(*x));
	json_t *j = json_loadb(buf, len, JSON_REJECT_DUPLICATES, NULL);
	if (json_is_object(j)) {
		x->valid = true;
		x->err = int_of(j, "errno");
		if (x->err < 0)
			x->err = EPROTO;
		x->exit_code = int_of(j, "exit");
		x->term_signal = int_of(j, "signal");
		if (x->exit_code < 0 || x->exit_code > 255 || x->term_signal < 0 ||
		    x->term_signal > 64) /* no process ends so */
			x->valid = false;
		copy_str(x->error, sizeof(x->error), json_object_get(j, "error"));
		copy_str(x->confine, sizeof(x->confine), json_object_get(j, "confine"));
		json_int_t u = json_integer_value(json_object_get(j, "cpu_user_us"));
		json_int_t sy = json_integer_value(json_object_get(j, "cpu_sys_us"));
		x->cpu_user_us = u > 0 ? (unsigned long long)u : 0;
		x->cpu_sys_us = sy > 0 ? (unsigned long long)sy : 0;
		x->oom = json_is_true(json_object_get(j, "oom"));
	}
	json_decref(j);
	if (!x->valid) {
		x->err = EPROTO;
		x->exit_code = x->term_signal = 0;
		x->cpu_user_us = x->cpu_sys_us = 0;
		x->oom = false;
		snprintf(x->error, sizeof(x->error), "the agent's answer is not valid");
	}
}

bool aj_agent_stat_parse(const char *buf, size_t len, aj_agent_stat *st)
{
	memset(st, 0, sizeof(*st));
	st->type = 'o';
	json_t *j = json_loadb(buf, len, JSON_REJECT_DUPLICATES, NULL);
	if (!json_is_object(j)) {
		json_decref(j);
		return false;
	}
	const char *t = json_string_value(json_object_get(j, "type"));
	if (t && (t[0] == 'f' || t[0] == 'd' || t[0] == 'l') && !t[1])
		st->type = t[0];
	json_int_t mode = json_integer_value(json_object_get(j, "mode"));
	st->mode = mode > 0 && mode <= 07777 ? (unsigned)mode : 0;
	json_int_t size = json_integer_value(json_object_get(j, "size"));
	st->size = size > 0 ? (unsigned long long)size : 0;
	st->mtime = (long long)json_integer_value(json_object_get(j, "mtime"));
	const char *name = json_string_value(json_object_get(j, "name"));
	if (name)
		st->name = strdup(name);
	json_decref(j);
	return !name || st->name;
}
