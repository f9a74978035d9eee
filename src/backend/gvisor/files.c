/* SPDX-License-Identifier: MIT */
/* The file operations of a persistent level-2 sandbox: the host cannot
 * see gVisor's in-memory filesystems, so each is one `runsc exec` of
 * agentjail-agent as the sandbox's root user, which resolves the path with
 * the sandbox's own kernel and refuses kernel filesystems (agent.c). */
#include <errno.h>
#include <fcntl.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "agent_frame.h"
#include "gvbox.h"
#include "util.h"

static void stat_of(const aj_agent_stat *a, aj_file_stat *st)
{
	st->type = a->type;
	st->mode = a->mode;
	st->size = a->size;
	st->mtime = a->mtime;
}

typedef struct call {
	aj_file_stat *st;
	int data_fd; /* DATA frames go here (read) */
	aj_dirent_fn fn;
	void *ctx;
	bool stopped;
	int e; /* the agent's errno; -1: no answer */
	char error[256];
} call;

static int handle(call *c, char type, char *buf, unsigned len)
{
	aj_agent_stat as;
	if (type == AJ_AG_STAT && c->st) {
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
	} else if (type == AJ_AG_DATA && c->data_fd >= 0 && len) {
		return aj_write_all(c->data_fd, buf, len);
	} else if (type == AJ_AG_EXIT) {
		aj_agent_exit x;
		aj_agent_exit_parse(buf, len, &x);
		c->e = x.err;
		snprintf(c->error, sizeof(c->error), "%s", x.error);
	}
	return 0;
}

/* One request (q, consumed); data: DATA frames from src_fd (len bytes). */
static int call_agent(aj_inst *i, json_t *q, int src_fd, unsigned long long len, call *c,
		      const char *path, aj_error *err)
{
	gv_agent a;
	c->e = -1;
	char *txt = json_dumps(q, JSON_COMPACT);
	json_decref(q);
	if (!txt)
		return aj_err(err, ENOMEM, "request");
	int r = aj_gvbox_agent_spawn(i, true, &a, err);
	if (r == 0 &&
	    (fcntl(a.to, F_SETFL, O_NONBLOCK) < 0 || fcntl(a.from, F_SETFL, O_NONBLOCK) < 0))
		r = -errno;
	if (r == 0)
		r = aj_agent_send_idle(a.to, AJ_AG_REQUEST, txt, strlen(txt), AJ_GV_AGENT_IDLE_MS);
	free(txt);
	if (r == 0 && src_fd >= 0) {
		char buf[65536];
		unsigned long long left = len;
		while (r == 0 && left) {
			ssize_t n = read(src_fd, buf, left < sizeof(buf) ? left : sizeof(buf));
			if (n < 0 && errno == EINTR)
				continue;
			if (n == 0 && len == ~0ULL) /* to its EOF (backend.h) */
				break;
			if (n <= 0) {
				r = n < 0 ? -errno : -EIO; /* fewer bytes than said */
				break;
			}
			left -= (unsigned long long)n;
			r = aj_agent_send_idle(a.to, AJ_AG_DATA, buf, (size_t)n,
					       AJ_GV_AGENT_IDLE_MS);
		}
		int e = r == -ETIMEDOUT
			    ? r
			    : aj_agent_send_idle(a.to, AJ_AG_DATA, NULL, 0, AJ_GV_AGENT_IDLE_MS);
		r = r ? r : e;
	}
	int hr = 0;
	bool idle = r == -ETIMEDOUT;
	while (!idle) {
		char type, *buf = NULL;
		uint32_t n;
		int k = aj_agent_recv_idle(a.from, &type, &buf, &n, AJ_GV_AGENT_IDLE_MS);
		idle = k == -ETIMEDOUT;
		if (k <= 0)
			break;
		if (hr == 0)
			hr = handle(c, type, buf, n);
		free(buf);
		if (type == AJ_AG_EXIT)
			break;
	}
	char msg[512];
	aj_gvbox_runsc_error(&a, msg, sizeof(msg));
	/* a stopped agent (the sandbox's user can stop it) is killed, not waited for */
	aj_gvbox_agent_settle(&a, idle, AJ_GV_AGENT_GRACE_MS);
	aj_gvbox_agent_end(&a, false);
	if (idle) {
		aj_err(err, ETIMEDOUT, "%s: the sandbox's agent sent nothing for %d s", path,
		       AJ_GV_AGENT_IDLE_MS / 1000);
		aj_err_hint(err, "retry; if it persists, delete the sandbox and create a new one");
		return -ETIMEDOUT;
	}
	if (r < 0)
		return aj_err(err, -r, "%s: cannot send the file to the sandbox", path);
	if (hr < 0)
		return aj_err(err, -hr, "%s", path);
	if (c->e < 0)
		return aj_err(err, EIO, "%s: the sandbox did not answer: %s", path,
			      *msg ? msg : "runsc exec failed");
	if (c->e == EPERM)
		return aj_err(err, EPERM, "%s: not allowed (a kernel filesystem, or not permitted)",
			      path);
	if (c->e)
		return aj_err(err, c->e, "%s: %s", path, c->error);
	return 0;
}

static json_t *req(const char *op, const char *path)
{
	return json_pack("{s:s,s:s}", "op", op, "path", path);
}

static int check_path(const char *path, aj_error *err)
{
	if (!path || path[0] != '/')
		return aj_err(err, EINVAL, "a path inside the sandbox is absolute");
	return 0;
}

int aj_gvbox_file_read(aj_inst *i, const char *path, int *fd, aj_file_stat *st, aj_error *err)
{
	*fd = -1;
	int r = check_path(path, err);
	if (r < 0)
		return r;
	/* the bytes in a memfd: a regular file the caller reads at its pace */
	int m = memfd_create("sandbox-file", MFD_CLOEXEC);
	if (m < 0)
		return aj_err(err, errno, "memfd");
	aj_file_stat tmp;
	call c = {.st = st ? st : &tmp, .data_fd = m};
	r = call_agent(i, req("read", path), -1, 0, &c, path, err);
	if (r < 0 || lseek(m, 0, SEEK_SET) < 0) {
		close(m);
		return r < 0 ? r : aj_err(err, errno, "memfd");
	}
	*fd = m;
	return 0;
}

int aj_gvbox_file_write(aj_inst *i, const char *path, int src_fd, unsigned long long len,
			unsigned mode, aj_error *err)
{
	int r = check_path(path, err);
	if (r < 0)
		return r;
	json_t *q = req("write", path);
	json_object_set_new(q, "mode", json_integer(mode ? mode : 0644));
	json_object_set_new(q, "size", json_integer((json_int_t)len));
	call c = {.data_fd = -1};
	return call_agent(i, q, src_fd, len, &c, path, err);
}

int aj_gvbox_file_stat(aj_inst *i, const char *path, aj_file_stat *st, aj_error *err)
{
	int r = check_path(path, err);
	if (r < 0)
		return r;
	call c = {.st = st, .data_fd = -1};
	return call_agent(i, req("stat", path), -1, 0, &c, path, err);
}

int aj_gvbox_file_list(aj_inst *i, const char *path, aj_dirent_fn fn, void *ctx, aj_error *err)
{
	int r = check_path(path, err);
	if (r < 0)
		return r;
	call c = {.fn = fn, .ctx = ctx, .data_fd = -1};
	return call_agent(i, req("list", path), -1, 0, &c, path, err);
}

int aj_gvbox_file_remove(aj_inst *i, const char *path, bool recursive, aj_error *err)
{
	int r = check_path(path, err);
	if (r < 0)
		return r;
	json_t *q = req("remove", path);
	json_object_set_new(q, "recursive", json_boolean(recursive));
	call c = {.data_fd = -1};
	return call_agent(i, q, -1, 0, &c, path, err);
}

int aj_gvbox_file_mkdir(aj_inst *i, const char *path, bool parents, aj_error *err)
{
	int r = check_path(path, err);
	if (r < 0)
		return r;
	json_t *q = req("mkdir", path);
	json_object_set_new(q, "parents", json_boolean(parents));
	call c = {.data_fd = -1};
	return call_agent(i, q, -1, 0, &c, path, err);
}
