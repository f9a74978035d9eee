/* SPDX-License-Identifier: MIT */
#include "relay.h"

#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "util.h"

void aj_relay_init(aj_relay *r)
{
	r->n = 0;
}

int aj_relay_add(aj_relay *r, int src, int dst, bool input, bool owns)
{
	if (r->n >= AJ_RELAY_MAX || src < 0 || dst < 0)
		return -EINVAL;
	aj_chan *c = &r->ch[r->n++];
	c->src = src;
	c->dst = dst;
	c->input = input;
	c->owns = owns;
	c->open = true;
	c->len = c->off = 0;
	c->red = NULL;
	if (input)
		fcntl(dst, F_SETFL, fcntl(dst, F_GETFL) | O_NONBLOCK);
	return 0;
}

void aj_relay_set_redactor(aj_relay *r, aj_redactor *red)
{
	if (r->n > 0 && red && aj_redactor_active(red))
		r->ch[r->n - 1].red = red;
}

/* Write out to the caller, through the redactor if any. */
static int emit(aj_chan *c, const char *buf, size_t n, bool final)
{
	if (!c->red)
		return n ? aj_write_all(c->dst, buf, n) : 0;
	char *out = NULL;
	size_t olen = 0;
	int r = aj_redactor_feed(c->red, buf, n, final, &out, &olen);
	if (r == 0 && olen)
		r = aj_write_all(c->dst, out, olen);
	free(out);
	return r;
}

/* The fd on the sandbox's side of a channel. */
static int sandbox_fd(const aj_chan *c)
{
	return c->input ? c->dst : c->src;
}

static void chan_end(aj_chan *c)
{
	if (!c->open)
		return;
	c->open = false;
	if (c->owns)
		close(sandbox_fd(c));
}

size_t aj_relay_pollfds(aj_relay *r, struct pollfd *pf, size_t max)
{
	size_t n = 0;
	for (int i = 0; i < r->n && n < max; i++, n++) {
		aj_chan *c = &r->ch[i];
		pf[n].revents = 0;
		if (!c->open) {
			pf[n].fd = -1;
		} else if (c->input && c->len > c->off) {
			pf[n].fd = c->dst;
			pf[n].events = POLLOUT;
		} else {
			pf[n].fd = c->src;
			pf[n].events = POLLIN;
		}
	}
	return n;
}

static void pump_input(aj_chan *c, const struct pollfd *p)
{
	if (c->len > c->off) {
		if (!(p->revents & (POLLOUT | POLLERR | POLLHUP)))
			return;
		ssize_t w = write(c->dst, c->buf + c->off, c->len - c->off);
		if (w > 0)
			c->off += (size_t)w;
		else if (w < 0 && errno != EAGAIN && errno != EINTR)
			chan_end(c); /* the command closed its stdin */
		if (c->off == c->len)
			c->off = c->len = 0;
		return;
	}
	if (!(p->revents & (POLLIN | POLLHUP | POLLERR)))
		return;
	ssize_t n = read(c->src, c->buf, sizeof(c->buf));
	if (n > 0)
		c->len = (size_t)n;
	else if (n == 0 || (errno != EINTR && errno != EAGAIN))
		chan_end(c);
}

static void pump_output(aj_chan *c, const struct pollfd *p)
{
	if (!(p->revents & (POLLIN | POLLHUP | POLLERR)))
		return;
	ssize_t n = read(c->src, c->buf, sizeof(c->buf));
	if (n > 0) {
		/* blocking write: a slow reader slows the command down */
		if (emit(c, c->buf, (size_t)n, false) < 0)
			chan_end(c); /* reader gone: the command gets EPIPE */
	} else if (n == 0 || (errno != EINTR && errno != EAGAIN)) {
		(void)emit(c, NULL, 0, true); /* what the redactor held back */
		chan_end(c); /* EOF, or EIO from a pty whose slave closed */
	}
}

void aj_relay_handle(aj_relay *r, const struct pollfd *pf, size_t n)
{
	for (size_t i = 0; i < n && i < (size_t)r->n; i++) {
		aj_chan *c = &r->ch[i];
		if (!c->open || pf[i].fd < 0)
			continue;
		if (c->input)
			pump_input(c, &pf[i]);
		else
			pump_output(c, &pf[i]);
	}
}

bool aj_relay_outputs_open(const aj_relay *r)
{
	for (int i = 0; i < r->n; i++)
		if (!r->ch[i].input && r->ch[i].open)
			return true;
	return false;
}

void aj_relay_close(aj_relay *r)
{
	for (int i = 0; i < r->n; i++) {
		chan_end(&r->ch[i]);
	}
	r->n = 0;
}
