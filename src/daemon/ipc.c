/* SPDX-License-Identifier: MIT */
/* The front/supervisor message protocol (ipc.h): encoding, sending,
 * receiving and the checks of everything received. */
#include "ipc.h"

#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include "util.h"

#define SEALS (F_SEAL_SEAL | F_SEAL_SHRINK | F_SEAL_GROW | F_SEAL_WRITE)

void aj_ipc_msg_free(aj_ipc_msg *m)
{
	free(m->payload);
	m->payload = NULL;
	m->len = 0;
	if (m->object_fd >= 0)
		close(m->object_fd);
	m->object_fd = -1;
}

static bool op_ok(const char *op, int type)
{
	size_t n = strnlen(op, AJ_IPC_OP_MAX);
	if (n == AJ_IPC_OP_MAX)
		return false; /* no NUL */
	if (type == AJ_IPC_REPLY)
		return n == 0;
	if (n == 0 || strspn(op, "abcdefghijklmnopqrstuvwxyz0123456789._") != n)
		return false;
	for (size_t i = n; i < AJ_IPC_OP_MAX; i++)
		if (op[i])
			return false; /* the rest is zero: nothing hidden */
	return true;
}

/* A payload memfd: sealed, of the size announced; read into out. */
static int read_memfd(int fd, size_t len, char **out, aj_error *err)
{
	struct stat st;
	if (fstat(fd, &st) < 0 || !S_ISREG(st.st_mode) || (size_t)st.st_size != len)
		return aj_err(err, EBADMSG, "ipc: the payload fd is not a file of %zu bytes", len);
	int seals = fcntl(fd, F_GET_SEALS);
	if (seals < 0 || (seals & SEALS) != SEALS)
		return aj_err(err, EBADMSG, "ipc: the payload fd is not a sealed memfd");
	char *b = malloc(len + 1);
	if (!b)
		return aj_err(err, ENOMEM, "ipc: payload");
	size_t got = 0;
	while (got < len) {
		ssize_t k = pread(fd, b + got, len - got, (off_t)got);
		if (k < 0 && errno == EINTR)
			continue;
		if (k <= 0) {
			free(b);
			return aj_err(err, EBADMSG, "ipc: short payload fd");
		}
		got += (size_t)k;
	}
	b[len] = '\0';
	*out = b;
	return 0;
}

static int check_hdr(const aj_ipc_hdr *h, size_t n, size_t nfds, int expect, aj_error *err)
{
	if (h->magic != AJ_IPC_MAGIC || h->version != AJ_IPC_VERSION)
		return aj_err(err, EPROTO, "ipc: bad magic or version %u", h->version);
	if (h->type != expect)
		return aj_err(err, EBADMSG, "ipc: unexpected message type %u", h->type);
	if (!op_ok(h->op, h->type))
		return aj_err(err, EBADMSG, "ipc: bad op name");
	uint32_t known = AJ_IPC_F_PAYLOAD_FD | (expect == AJ_IPC_REPLY ? AJ_IPC_F_OBJECT_FD : 0);
	if (h->flags & ~known)
		return aj_err(err, EBADMSG, "ipc: unknown flags %#x", h->flags);
	size_t want = (size_t) !!(h->flags & AJ_IPC_F_PAYLOAD_FD) +
		      (size_t) !!(h->flags & AJ_IPC_F_OBJECT_FD);
	if (nfds != want)
		return aj_err(err, EBADMSG, "ipc: %zu fds where %zu were announced", nfds, want);
	if (expect == AJ_IPC_REQUEST && h->status != 0)
		return aj_err(err, EBADMSG, "ipc: a request with a status");
	if (expect == AJ_IPC_REPLY && (h->status < 100 || h->status > 599))
		return aj_err(err, EBADMSG, "ipc: bad status %d", h->status);
	if (h->flags & AJ_IPC_F_PAYLOAD_FD) {
		if (n != sizeof(*h) || h->len <= AJ_IPC_INLINE_MAX || h->len > AJ_IPC_PAYLOAD_MAX)
			return aj_err(err, EMSGSIZE, "ipc: bad payload fd length %u", h->len);
	} else if (h->len > AJ_IPC_INLINE_MAX || n != sizeof(*h) + h->len) {
		return aj_err(err, EMSGSIZE, "ipc: %zu bytes for a payload of %u", n, h->len);
	}
	return 0;
}

int aj_ipc_decode(const void *buf, size_t n, int *fds, size_t nfds, int expect, aj_ipc_msg *out,
		  aj_error *err)
{
	memset(out, 0, sizeof(*out));
	out->object_fd = -1;
	int r;
	if (n < sizeof(aj_ipc_hdr)) {
		r = aj_err(err, EBADMSG, "ipc: a message of %zu bytes (header: %zu)", n,
			   sizeof(aj_ipc_hdr));
		goto fail;
	}
	memcpy(&out->h, buf, sizeof(out->h));
	if ((r = check_hdr(&out->h, n, nfds, expect, err)) < 0)
		goto fail;
	out->len = out->h.len;
	if (out->h.flags & AJ_IPC_F_PAYLOAD_FD) {
		if ((r = read_memfd(fds[0], out->len, &out->payload, err)) < 0)
			goto fail;
	} else if (out->len) {
		if (!(out->payload = malloc(out->len + 1))) {
			r = aj_err(err, ENOMEM, "ipc: payload");
			goto fail;
		}
		memcpy(out->payload, (const char *)buf + sizeof(aj_ipc_hdr), out->len);
		out->payload[out->len] = '\0';
	}
	if (out->h.flags & AJ_IPC_F_OBJECT_FD) {
		out->object_fd = fds[nfds - 1];
		fds[nfds - 1] = -1;
	}
	if (out->h.flags & AJ_IPC_F_PAYLOAD_FD) {
		close(fds[0]);
		fds[0] = -1;
	}
	return 0;
fail:
	for (size_t i = 0; i < nfds; i++)
		if (fds[i] >= 0) {
			close(fds[i]);
			fds[i] = -1;
		}
	free(out->payload);
	out->payload = NULL;
	out->len = 0;
	return r;
}

static int depth_of(const json_t *v, int limit)
{
	if (limit < 0)
		return -1;
	int d = 0;
	if (json_is_object(v)) {
		const char *k;
		json_t *x;
		json_object_foreach((json_t *)v, k, x)
		{
			int c = depth_of(x, limit - 1);
			if (c < 0)
				return -1;
			d = c > d ? c : d;
		}
	} else if (json_is_array(v)) {
		size_t i;
		json_t *x;
		json_array_foreach(v, i, x)
		{
			int c = depth_of(x, limit - 1);
			if (c < 0)
				return -1;
			d = c > d ? c : d;
		}
	} else {
		return 0;
	}
	return d + 1;
}

json_t *aj_ipc_json(const aj_ipc_msg *m, aj_error *err)
{
	if (!m->len)
		return json_object();
	json_error_t je;
	json_t *o = json_loadb(m->payload, m->len, JSON_REJECT_DUPLICATES | JSON_ALLOW_NUL, &je);
	if (!o) {
		aj_err(err, EBADMSG, "ipc: the payload is not JSON: %s", je.text);
		return NULL;
	}
	if (!json_is_object(o) || depth_of(o, AJ_IPC_JSON_DEPTH) < 0) {
		json_decref(o);
		aj_err(err, EBADMSG, "ipc: the payload is not a JSON object of depth <= %d",
		       AJ_IPC_JSON_DEPTH);
		return NULL;
	}
	return o;
}

/* A sealed memfd holding buf. */
static int make_memfd(const char *buf, size_t len)
{
	int fd = memfd_create("aj-ipc", MFD_CLOEXEC | MFD_ALLOW_SEALING);
	if (fd < 0)
		return -errno;
	int r = aj_write_all(fd, buf, len);
	if (r == 0 && fcntl(fd, F_ADD_SEALS, SEALS) < 0)
		r = -errno;
	if (r < 0) {
		close(fd);
		return r;
	}
	return fd;
}

int aj_ipc_send(int sock, int type, uint32_t id, const char *op, int status, const json_t *payload,
		int object_fd)
{
	_cleanup_free_ char *txt = payload ? json_dumps(payload, JSON_COMPACT) : NULL;
	if (payload && !txt)
		return -ENOMEM;
	size_t len = txt ? strlen(txt) : 0;
	if (len > AJ_IPC_PAYLOAD_MAX)
		return -EMSGSIZE;
	aj_ipc_hdr h;
	memset(&h, 0, sizeof(h));
	h.magic = AJ_IPC_MAGIC;
	h.version = AJ_IPC_VERSION;
	h.type = (uint16_t)type;
	h.id = id;
	h.status = status;
	h.len = (uint32_t)len;
	if (op)
		snprintf(h.op, sizeof(h.op), "%s", op);
	int fds[AJ_IPC_MAX_FDS], nfds = 0;
	_cleanup_close_ int memfd = -1;
	if (len > AJ_IPC_INLINE_MAX) {
		memfd = make_memfd(txt, len);
		if (memfd < 0)
			return memfd;
		fds[nfds++] = memfd;
		h.flags |= AJ_IPC_F_PAYLOAD_FD;
	}
	if (object_fd >= 0) {
		fds[nfds++] = object_fd;
		h.flags |= AJ_IPC_F_OBJECT_FD;
	}
	struct iovec iov[2] = {{&h, sizeof(h)}, {txt, len}};
	union {
		char buf[CMSG_SPACE(sizeof(int) * AJ_IPC_MAX_FDS)];
		struct cmsghdr align;
	} u;
	memset(&u, 0, sizeof(u));
	struct msghdr mh = {.msg_iov = iov, .msg_iovlen = memfd >= 0 || !len ? 1 : 2};
	if (nfds) {
		mh.msg_control = u.buf;
		mh.msg_controllen = CMSG_SPACE(sizeof(int) * (size_t)nfds);
		struct cmsghdr *c = CMSG_FIRSTHDR(&mh);
		c->cmsg_level = SOL_SOCKET;
		c->cmsg_type = SCM_RIGHTS;
		c->cmsg_len = CMSG_LEN(sizeof(int) * (size_t)nfds);
		memcpy(CMSG_DATA(c), fds, sizeof(int) * (size_t)nfds);
	}
	ssize_t k;
	do
		k = sendmsg(sock, &mh, MSG_NOSIGNAL);
	while (k < 0 && errno == EINTR);
	return k < 0 ? -errno : 0;
}

int aj_ipc_recv(int sock, int expect, aj_ipc_msg *out, aj_error *err)
{
	static __thread char buf[sizeof(aj_ipc_hdr) + AJ_IPC_INLINE_MAX + 1];
	union {
		char b[CMSG_SPACE(sizeof(int) * (AJ_IPC_MAX_FDS + 1))];
		struct cmsghdr align;
	} u;
	struct iovec iov = {buf, sizeof(buf)};
	struct msghdr mh = {
	    .msg_iov = &iov, .msg_iovlen = 1, .msg_control = u.b, .msg_controllen = sizeof(u.b)};
	ssize_t k;
	do
		k = recvmsg(sock, &mh, MSG_CMSG_CLOEXEC);
	while (k < 0 && errno == EINTR);
	memset(out, 0, sizeof(*out));
	out->object_fd = -1;
	if (k < 0)
		return -errno;
	int fds[AJ_IPC_MAX_FDS + 1];
	size_t nfds = 0;
	bool bad_cmsg = false;
	for (struct cmsghdr *c = CMSG_FIRSTHDR(&mh); c; c = CMSG_NXTHDR(&mh, c)) {
		if (c->cmsg_level != SOL_SOCKET || c->cmsg_type != SCM_RIGHTS) {
			bad_cmsg = true;
			continue;
		}
		size_t n = (c->cmsg_len - CMSG_LEN(0)) / sizeof(int);
		for (size_t i = 0; i < n; i++) {
			int fd;
			memcpy(&fd, CMSG_DATA(c) + i * sizeof(int), sizeof(int));
			if (nfds < AJ_IPC_MAX_FDS + 1)
				fds[nfds++] = fd;
			else
				close(fd);
		}
	}
	if (k == 0 && nfds == 0)
		return -EPIPE;
	if (bad_cmsg || (mh.msg_flags & (MSG_TRUNC | MSG_CTRUNC))) {
		for (size_t i = 0; i < nfds; i++)
			close(fds[i]);
		if ((size_t)k >= sizeof(aj_ipc_hdr))
			memcpy(&out->h, buf, sizeof(out->h));
		return aj_err(err, EMSGSIZE, "ipc: a truncated message or foreign control data");
	}
	return aj_ipc_decode(buf, (size_t)k, fds, nfds, expect, out, err);
}
