/* SPDX-License-Identifier: MIT */
#include "sync.h"

#include <errno.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

static int send_buf(int sock, const void *buf, size_t len, const int *fds, size_t n, int flags);

int aj_sync_send(int sock, const aj_msg *msg, const int *fds, size_t n)
{
	return send_buf(sock, msg, sizeof(*msg), fds, n, 0);
}

int aj_sync_send_nowait(int sock, const aj_msg *msg, const int *fds, size_t n)
{
	return send_buf(sock, msg, sizeof(*msg), fds, n, MSG_DONTWAIT);
}

int aj_sync_recv(int sock, aj_msg *msg, int *fds, size_t cap, size_t *n)
{
	return aj_sync_recv_buf(sock, msg, sizeof(*msg), fds, cap, n);
}

int aj_sync_send_buf(int sock, const void *buf, size_t len, const int *fds, size_t n)
{
	return send_buf(sock, buf, len, fds, n, 0);
}

static int send_buf(int sock, const void *buf, size_t len, const int *fds, size_t n, int flags)
{
	if (n > AJ_SYNC_MAX_FDS)
		return -E2BIG;
	struct iovec iov = {.iov_base = (void *)buf, .iov_len = len};
	union {
		char buf[CMSG_SPACE(sizeof(int) * AJ_SYNC_MAX_FDS)];
		struct cmsghdr align;
	} u;
	struct msghdr mh = {.msg_iov = &iov, .msg_iovlen = 1};
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
	if (r != (ssize_t)len || (mh.msg_flags & (MSG_TRUNC | MSG_CTRUNC)))
		return -EBADMSG;
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
