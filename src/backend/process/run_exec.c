/* SPDX-License-Identifier: MIT */
/* More commands in a running `agentjail run` sandbox (run_exec.h). */
#include "run_exec.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/signalfd.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include "init.h"
#include "sync.h"
#include "util.h"

#define SPEC_MAX (1u << 20)
#define FLAGS (AJ_EXEC_TTY | AJ_EXEC_NO_STDIN | AJ_EXEC_USER)

/* Append NUL-terminated s to *buf. */
static int put(char **buf, size_t *len, size_t *cap, const char *s)
{
	size_t l = strlen(s) + 1;
	if (*len + l > *cap) {
		size_t nc = (*len + l) * 2;
		char *nb = realloc(*buf, nc);
		if (!nb)
			return -ENOMEM;
		*buf = nb;
		*cap = nc;
	}
	memcpy(*buf + *len, s, l);
	*len += l;
	return 0;
}

static int memfd_of(const char *data, size_t len)
{
	int fd = memfd_create("command", MFD_CLOEXEC);
	if (fd < 0)
		return -errno;
	int r = aj_write_all(fd, data, len);
	if (r == 0 && lseek(fd, 0, SEEK_SET) < 0)
		r = -errno;
	if (r < 0) {
		close(fd);
		return r;
	}
	return fd;
}

/* The request's strings (cwd, argc args, envc env entries) over the run's
 * environment: a new spec in *out, its env count in *envc. */
static int merge(const char *txt, size_t len, int argc, int *envc, char *const *base, char **out,
		 size_t *olen)
{
	int want = 1 + argc + *envc;
	if (argc < 1 || *envc < 0 || argc > 65536 || *envc > 65536)
		return -EINVAL;
	_cleanup_free_ const char **s = calloc((size_t)want, sizeof(char *));
	if (!s)
		return -ENOMEM;
	size_t off = 0;
	for (int i = 0; i < want; i++) {
		const char *end = off < len ? memchr(txt + off, '\0', len - off) : NULL;
		if (!end)
			return -EINVAL;
		s[i] = txt + off;
		off = (size_t)(end - txt) + 1;
	}
	size_t nb = 0;
	while (base && base[nb])
		nb++;
	_cleanup_free_ const char **env = calloc(nb + (size_t)*envc + 1, sizeof(char *));
	if (!env)
		return -ENOMEM;
	for (size_t i = 0; i < nb; i++)
		env[i] = base[i];
	size_t n = nb;
	for (int i = 0; i < *envc; i++) { /* replace NAME= or append */
		const char *e = s[1 + argc + i];
		size_t nl = strcspn(e, "=");
		if (!e[nl] || nl == 0)
			return -EINVAL;
		size_t k = 0;
		while (k < n && !(strncmp(env[k], e, nl) == 0 && env[k][nl] == '='))
			k++;
		env[k] = e;
		if (k == n)
			n++;
	}
	char *buf = NULL;
	size_t blen = 0, cap = 0;
	int r = 0;
	for (int i = 0; r == 0 && i < 1 + argc; i++)
		r = put(&buf, &blen, &cap, s[i]);
	for (size_t i = 0; r == 0 && i < n; i++)
		r = put(&buf, &blen, &cap, env[i]);
	if (r < 0) {
		free(buf);
		return r;
	}
	*envc = (int)n;
	*out = buf;
	*olen = blen;
	return 0;
}

void aj_run_exec_forward(int listen_fd, int init_sock, char *const *base_env)
{
	int conn = accept4(listen_fd, NULL, NULL, SOCK_CLOEXEC);
	if (conn < 0)
		return;
	aj_msg m;
	memset(&m, 0, sizeof(m));
	int fds[5] = {-1, -1, -1, -1, -1};
	size_t n = 0;
	aj_error err;
	aj_err_clear(&err);
	/* the requester sends at once; the run's relay waits meanwhile */
	struct pollfd pf = {conn, POLLIN, 0};
	int r = poll(&pf, 1, 2000) == 1 ? aj_sync_recv(conn, &m, fds, AJ_ARRAY_SIZE(fds), &n)
					: -ETIMEDOUT;
	bool no_stdin = m.status & AJ_EXEC_NO_STDIN;
	struct stat st;
	_cleanup_free_ char *txt = NULL, *spec = NULL;
	size_t len = 0, slen = 0;
	/* the spec is a file (a memfd): a pipe whose writer never closes it
	 * would stall the runner, and with it the run's relay */
	if (r == 0 &&
	    (m.type != AJ_MSG_EXEC || (m.status & ~FLAGS) || n != 4u - no_stdin ||
	     fstat(fds[n - 1], &st) < 0 || !S_ISREG(st.st_mode) || st.st_size > (off_t)SPEC_MAX))
		r = -EPROTO;
	if (r == 0)
		r = aj_read_fd(fds[n - 1], &txt, &len);
	int envc = m.envc;
	if (r == 0)
		r = merge(txt, len, m.argc, &envc, base_env, &spec, &slen);
	int sfd = -1;
	if (r == 0) {
		aj_msg out = {.type = AJ_MSG_EXEC,
			      .status = m.status & FLAGS,
			      .argc = m.argc,
			      .envc = envc,
			      .uid = m.uid,
			      .gid = m.gid};
		bool inl = slen <= AJ_EXEC_INLINE_MAX;
		if (inl)
			out.status |= AJ_EXEC_SPEC_INLINE;
		else if ((sfd = memfd_of(spec, slen)) < 0)
			r = sfd;
		int fw[5], k = 0;
		fw[k++] = conn;
		for (size_t i = 0; i + 1 < n; i++)
			fw[k++] = fds[i];
		if (sfd >= 0)
			fw[k++] = sfd;
		if (r == 0)
			r = aj_sync_send_more(init_sock, &out, inl ? spec : NULL, inl ? slen : 0,
					      fw, (size_t)k);
		if (r < 0) {
			aj_err(&err, -r, "the sandbox takes no command now");
			aj_sync_send_error(conn, &err);
		}
	} else {
		aj_err(&err,
		       r == -ENOMEM	 ? ENOMEM
		       : r == -ETIMEDOUT ? ETIMEDOUT
					 : EPROTO,
		       "bad exec request (%s)",
		       r == -ETIMEDOUT ? "nothing sent within 2 s"
				       : "a message and its command as a file expected");
		aj_sync_send_error(conn, &err);
	}
	if (sfd >= 0)
		close(sfd);
	for (size_t i = 0; i < n; i++)
		close(fds[i]);
	close(conn); /* init has its own copy */
}

int aj_run_exec_start(const char *path, const aj_run_exec_req *req, aj_error *err)
{
	struct sockaddr_un sa = {.sun_family = AF_UNIX};
	if (strlen(path) >= sizeof(sa.sun_path))
		return aj_err(err, ENAMETOOLONG, "the exec socket's path is too long: %s", path);
	memcpy(sa.sun_path, path, strlen(path));
	_cleanup_close_ int s = socket(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0);
	if (s < 0 || connect(s, (struct sockaddr *)&sa, sizeof(sa)) < 0)
		return aj_err(err, errno, "cannot reach the container's runner");
	aj_msg m = {.type = AJ_MSG_EXEC};
	char *txt = NULL;
	size_t len = 0, cap = 0;
	int r = put(&txt, &len, &cap, req->cwd ? req->cwd : "");
	for (char *const *v = req->argv; r == 0 && *v; v++, m.argc++)
		r = put(&txt, &len, &cap, *v);
	for (char *const *v = req->env; r == 0 && v && *v; v++, m.envc++)
		r = put(&txt, &len, &cap, *v);
	_cleanup_close_ int spec = r == 0 ? memfd_of(txt, len) : r;
	free(txt);
	if (spec < 0)
		return aj_err(err, -spec, "cannot pass the command on");
	if (req->tty)
		m.status |= AJ_EXEC_TTY;
	if (req->set_user) {
		m.status |= AJ_EXEC_USER;
		m.uid = (int)req->uid;
		m.gid = (int)req->gid;
	}
	int fds[4], n = 0;
	if (req->stdio[0] >= 0)
		fds[n++] = req->stdio[0];
	else
		m.status |= AJ_EXEC_NO_STDIN;
	fds[n++] = req->stdio[1];
	fds[n++] = req->stdio[2];
	fds[n++] = spec;
	if ((r = aj_sync_send(s, &m, fds, (size_t)n)) < 0)
		return aj_err(err, -r, "cannot reach the container's runner");
	struct pollfd pf = {s, POLLIN, 0};
	if (poll(&pf, 1, 30000) != 1)
		return aj_err(err, ETIMEDOUT, "the container did not start the command");
	r = aj_sync_recv(s, &m, NULL, 0, NULL);
	if (r == 0 && (m.type == AJ_MSG_STARTED || m.type == AJ_MSG_EXIT))
		return steal_fd(&s); /* EXIT: STARTED came with it, read by wait */
	if (r == 0 && m.type == AJ_MSG_ERROR) {
		*err = m.err;
		return -(err->code ? err->code : EINVAL);
	}
	return aj_err(err, r < 0 ? -r : EPROTO, "the container's runner went away");
}

int aj_run_exec_wait(int conn, int sigfd)
{
	for (;;) {
		struct pollfd pf[2] = {{conn, POLLIN, 0}, {sigfd, POLLIN, 0}};
		if (poll(pf, 2, -1) < 0) {
			if (errno == EINTR)
				continue;
			return 128 + SIGKILL;
		}
		if (pf[1].revents & POLLIN) {
			struct signalfd_siginfo si;
			aj_msg m = {.type = AJ_MSG_SIGNAL};
			if (read(sigfd, &si, sizeof(si)) == sizeof(si) && si.ssi_signo != SIGCHLD) {
				m.signal = (int)si.ssi_signo;
				(void)aj_sync_send(conn, &m, NULL, 0);
			}
		}
		if (!pf[0].revents)
			continue;
		aj_msg m;
		int r = aj_sync_recv(conn, &m, NULL, 0, NULL);
		if (r < 0) /* init is gone: the container ended under it */
			return 128 + SIGKILL;
		if (m.type == AJ_MSG_EXIT)
			return m.signal ? 128 + m.signal : m.status;
	}
}
