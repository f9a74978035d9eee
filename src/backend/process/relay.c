/* SPDX-License-Identifier: MIT */
#include "relay.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "util.h"

void aj_relay_init(aj_relay *r)
{
	r->n = 0;
}

/* A non-blocking way to write to fd without touching the caller's open
 * file description: pipes, FIFOs and terminals are reopened through /proc
 * with O_NONBLOCK. Regular files never block (and reopening would lose
 * O_APPEND), sockets get PIPE_BUF-sized writes after POLLOUT. */
static void open_nonblocking(aj_chan *c, int fd)
{
	struct stat st;
	c->dst_nb = fd;
	c->dst_small = false;
	if (fstat(fd, &st) < 0 || S_ISBLK(st.st_mode))
		return;
	if (S_ISREG(st.st_mode)) {
		c->splice = true;
		return;
	}
	if (S_ISFIFO(st.st_mode) || S_ISCHR(st.st_mode)) {
		char path[64];
		snprintf(path, sizeof(path), "/proc/self/fd/%d", fd);
		int nb = open(path, O_WRONLY | O_NONBLOCK | O_CLOEXEC | O_NOCTTY);
		if (nb >= 0) {
			c->dst_nb = nb;
			c->splice = S_ISFIFO(st.st_mode);
			return;
		}
	}
	c->dst_small = true;
}

static bool is_pipe(int fd)
{
	struct stat st;
	return fstat(fd, &st) == 0 && S_ISFIFO(st.st_mode);
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
	c->eof = false;
	c->red = NULL;
	c->pend = NULL;
	c->len = c->off = 0;
	c->splice = c->wait_out = false;
	if (input) {
		/* our own pipe or pty master: non-blocking is ours to set */
		fcntl(dst, F_SETFL, fcntl(dst, F_GETFL) | O_NONBLOCK);
		c->dst_nb = dst;
		c->dst_small = false;
	} else {
		/* output from the sandbox's pipe into a pipe or a file: moved
		 * by the kernel (splice), unless it must be redacted */
		open_nonblocking(c, dst);
		c->splice = c->splice && is_pipe(src);
	}
	return 0;
}

void aj_relay_set_redactor(aj_relay *r, aj_redactor *red)
{
	if (r->n > 0 && red && aj_redactor_active(red))
		r->ch[r->n - 1].red = red;
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
	if (c->dst_nb >= 0 && c->dst_nb != c->dst)
		close(c->dst_nb);
	c->dst_nb = -1;
	if (c->pend != c->buf)
		free(c->pend);
	c->pend = NULL;
	c->len = c->off = 0;
}

size_t aj_relay_pollfds(aj_relay *r, struct pollfd *pf, size_t max)
{
	size_t n = 0;
	for (int i = 0; i < r->n && n < max; i++, n++) {
		aj_chan *c = &r->ch[i];
		pf[n].revents = 0;
		if (!c->open) {
			pf[n].fd = -1;
		} else if (c->len > c->off || c->wait_out) {
			pf[n].fd = c->dst_nb;
			pf[n].events = POLLOUT;
		} else {
			pf[n].fd = c->src;
			pf[n].events = POLLIN;
		}
	}
	return n;
}

/* Set the pending bytes: the read buffer itself, or the redactor's output. */
static void set_pending(aj_chan *c, size_t n, bool final)
{
	if (c->red && !c->input) {
		char *out = NULL;
		size_t olen = 0;
		if (aj_redactor_feed(c->red, c->buf, n, final, &out, &olen) < 0) {
			chan_end(c);
			return;
		}
		c->pend = out;
		c->len = olen;
	} else {
		c->pend = c->buf;
		c->len = n;
	}
	c->off = 0;
}

static void pump_write(aj_chan *c)
{
	size_t want = c->len - c->off;
	if (c->dst_small && want > PIPE_BUF)
		want = PIPE_BUF;
	ssize_t w = write(c->dst_nb, c->pend + c->off, want);
	if (w > 0) {
		c->off += (size_t)w;
	} else if (w < 0 && errno != EAGAIN && errno != EINTR) {
		/* input: the command closed its stdin; output: the caller
		 * stopped reading (the command then gets EPIPE) */
		chan_end(c);
		return;
	}
	if (c->off == c->len) {
		if (c->pend != c->buf)
			free(c->pend);
		c->pend = NULL;
		c->len = c->off = 0;
		if (c->eof)
			chan_end(c);
	}
}

/* src is readable: move what it holds straight into dst. EAGAIN means dst
 * is full (or src was emptied meanwhile): wait for POLLOUT on dst, then
 * for POLLIN on src again, so neither case spins. */
static void pump_splice(aj_chan *c)
{
	ssize_t n = splice(c->src, NULL, c->dst_nb, NULL, 1 << 20, SPLICE_F_NONBLOCK);
	if (n > 0)
		return;
	if (n < 0 && errno == EAGAIN) {
		c->wait_out = true;
	} else if (n < 0 && errno == EINVAL) {
		c->splice = false; /* dst cannot take a splice: copy from now on */
	} else if (n == 0 || errno != EINTR) {
		/* EOF, or the caller stopped reading (EPIPE) */
		c->eof = true;
		chan_end(c);
	}
}

static void pump_read(aj_chan *c, const struct pollfd *p)
{
	if (!(p->revents & (POLLIN | POLLHUP | POLLERR)))
		return;
	if (c->splice && !c->red) {
		pump_splice(c);
		return;
	}
	ssize_t n = read(c->src, c->buf, sizeof(c->buf));
	if (n > 0) {
		set_pending(c, (size_t)n, false);
		/* a non-blocking dst: write now rather than after one more
		 * poll (EAGAIN when full: then we wait for POLLOUT). Not a
		 * socket we could not make non-blocking (dst_small). */
		if (c->open && c->len > c->off && !c->dst_small)
			pump_write(c);
	} else if (n == 0 || (errno != EINTR && errno != EAGAIN)) {
		/* EOF, or EIO from a pty whose slave closed: flush what the
		 * redactor held back, then end */
		c->eof = true;
		set_pending(c, 0, true);
		if (c->open && c->len == 0)
			chan_end(c);
	}
}

void aj_relay_handle(aj_relay *r, const struct pollfd *pf, size_t n)
{
	for (size_t i = 0; i < n && i < (size_t)r->n; i++) {
		aj_chan *c = &r->ch[i];
		if (!c->open || pf[i].fd < 0)
			continue;
		if (c->wait_out) {
			if (pf[i].revents & (POLLOUT | POLLERR | POLLHUP))
				c->wait_out = false;
		} else if (c->len > c->off) {
			if (pf[i].revents & (POLLOUT | POLLERR | POLLHUP))
				pump_write(c);
		} else
			pump_read(c, &pf[i]);
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
	for (int i = 0; i < r->n; i++)
		chan_end(&r->ch[i]);
	r->n = 0;
}

bool aj_relay_output_pending(const aj_relay *r)
{
	for (int i = 0; i < r->n; i++)
		if (!r->ch[i].input && r->ch[i].open && r->ch[i].len > r->ch[i].off)
			return true;
	return false;
}
