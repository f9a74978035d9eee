/* SPDX-License-Identifier: MIT */
#include "sync.h"

#include <errno.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

static int send_iov(int sock, struct iovec *iov, int niov, const int *fds, size_t n, int flags);

static int send_buf(int sock, const void *buf, size_t len, const int *fds, size_t n, int flags)
{
	struct iovec iov = {.iov_base = (void *)buf, .iov_len = len};
	return send_iov(sock, &iov, 1, fds, n, flags);
}

int aj_sync_send(int sock, const aj_msg *msg, const int *fds, size_t n)
{
	return send_buf(sock, msg, sizeof(*msg), fds, n, 0);
}

int aj_sync_send_more(int sock, const aj_msg *msg, const void *more, size_t len, const int *fds,
		      size_t n)
{
	struct iovec iov[2] = {{(void *)msg, sizeof(*msg)}, {(void *)more, len}};
	return send_iov(sock, iov, len ? 2 : 1, fds, n, MSG_DONTWAIT);
}

int aj_sync_send_two(int sock, const aj_msg *a, const aj_msg *b)
{
	struct iovec iov[2] = {{(void *)a, sizeof(*a)}, {(void *)b, sizeof(*b)}};
	struct mmsghdr mm[2] = {{.msg_hdr = {.msg_iov = &iov[0], .msg_iovlen = 1}},
				{.msg_hdr = {.msg_iov = &iov[1], .msg_iovlen = 1}}};
	for (unsigned done = 0; done < 2;) {
		int r = sendmmsg(sock, mm + done, 2 - done, MSG_NOSIGNAL);
		if (r < 0 && errno == EINTR)
			continue;
		if (r <= 0)
			return r < 0 ? -errno : -EIO;
		done += (unsigned)r;
	}
	return 0;
}

int aj_sync_recv(int sock, aj_msg *msg, int *fds, size_t cap, size_t *n)
{
	return aj_sync_recv_buf(sock, msg, sizeof(*msg), fds, cap, n);
}

int aj_sync_send_buf(int sock, const void *buf, size_t len, const int *fds, size_t n)
{
	return send_buf(sock, buf, len, fds, n, 0);
}

static int send_iov(int sock, struct iovec *iov, int niov, const int *fds, size_t n, int flags)
{
	if (n > AJ_SYNC_MAX_FDS)
		return -E2BIG;
	size_t len = 0;
	for (int i = 0; i < niov; i++)
		len += iov[i].iov_len;
	union {
		char buf[CMSG_SPACE(sizeof(int) * AJ_SYNC_MAX_FDS)];
		struct cmsghdr align;
	} u;
	struct msghdr mh = {.msg_iov = iov, .msg_iovlen = (size_t)niov};
	if (n > 0) {
		memset(&u, 0, sizeof(u));
		mh.msg_control = u.buf;
		mh.msg_controllen = CMSG_SPACE(sizeof(int) * n);
		struct cmsghdr *c = CMSG_FIRSTHDR(&mh);
		c->cmsg_level = SOL_SOCKET;
		c->cmsg_type = SCM_RIGHTS;
		c->cmsg_len = CMSG_LEN(sizeof(int) * n);
		memcpy(CMSG_DATA(c), fds, sizeof(int) * n);
	}
	for (;;) {
		ssize_t r = sendmsg(sock, &mh, MSG_NOSIGNAL | flags);
		if (r >= 0)
			return r == (ssize_t)len ? 0 : -EIO;
		if (errno != EINTR)
			return -errno;
	}
}

int aj_sync_recv_buf(int sock, void *buf, size_t len, int *fds, size_t cap, size_t *n)
{
	return aj_sync_recv_upto(sock, buf, len, len, NULL, fds, cap, n);
}

int aj_sync_recv_upto(int sock, void *buf, size_t min, size_t len, size_t *got, int *fds,
		      size_t cap, size_t *n)
{
	struct iovec iov = {.iov_base = buf, .iov_len = len};
	union {
		char buf[CMSG_SPACE(sizeof(int) * AJ_SYNC_MAX_FDS)];
		struct cmsghdr align;
	} u;
	struct msghdr mh = {.msg_iov = &iov,
			    .msg_iovlen = 1,
			    .msg_control = u.buf,
			    .msg_controllen = sizeof(u.buf)};
	if (n)
		*n = 0;
	ssize_t r;
	do
		r = recvmsg(sock, &mh, MSG_CMSG_CLOEXEC);
	while (r < 0 && errno == EINTR);
	if (r < 0)
		return -errno;
	if (r == 0)
		return -EPIPE;
	for (struct cmsghdr *c = CMSG_FIRSTHDR(&mh); c; c = CMSG_NXTHDR(&mh, c)) {
		if (c->cmsg_level != SOL_SOCKET || c->cmsg_type != SCM_RIGHTS)
			continue;
		size_t cnt = (c->cmsg_len - CMSG_LEN(0)) / sizeof(int);
		int *in = (int *)(void *)CMSG_DATA(c);
		for (size_t i = 0; i < cnt; i++) {
			if (fds && n && *n < cap)
				fds[(*n)++] = in[i];
			else
				close(in[i]);
		}
	}
	if ((size_t)r < min || (mh.msg_flags & (MSG_TRUNC | MSG_CTRUNC)))
		return -EBADMSG;
	if (got)
		*got = (size_t)r;
	return 0;
}

void aj_sync_send_error(int sock, const aj_error *err)
{
	aj_msg m;
	memset(&m, 0, sizeof(m));
	m.type = AJ_MSG_ERROR;
	m.err = *err;
	(void)aj_sync_send(sock, &m, NULL, 0);
}
