/* SPDX-License-Identifier: MIT */
/* Level 3 in the service: a microVM that lives across commands (backend.h).
 *
 * create: the one-shot run's boot (boot.c) with AJ_MV_BOX_PORTS agent
 * ports, checked by a first request (a stat of /). Each command and file
 * operation takes a free port for its exchange with the guest's agent (a
 * new agentjail-agent per request, guest/init.c), so that many run side
 * by side; a port whose agent did not answer to the end (a cancelled
 * command, a lost agent) is drained before its next use, or given up.
 * destroy: the VM's processes, its host cgroup and directory (boot.c).
 * state/sweep: the same by the recorded pids (with start times), cgroups
 * and directory. */
#include <ctype.h>
#include <errno.h>
#include <fcntl.h>
#include <jansson.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <termios.h>
#include <time.h>
#include <unistd.h>

#include "agent_frame.h"
#include "agent_relay.h"
#include "boot.h"
#include "execreq.h"
#include "image.h"
#include "mvbox.h"
#include "net_addr.h"
#include "snap.h"
#include "microvm.h"
#include "redact.h"
#include "util.h"

#define READY_TIMEOUT_MS 60000ULL
/* a ready VM's answer to its identity at hand-out (a pool's that does not
 * answer in time is replaced by a new one: registry.c) */
#define CLAIM_TIMEOUT_MS 5000ULL
/* an identity given this recently (a create's ready request) is the claim's,
 * if its round trip (how late the clock it set may be) was at most SKEW */
#define IDENT_FRESH_MS 2000ULL
#define IDENT_SKEW_MS 250ULL
/* how long a pooled VM's agent may take to set its limits at hand-out */
#define LIMITS_TIMEOUT_MS 5000ULL
/* a call without a deadline (files, snapshot) whose agent sends or takes
 * nothing this long is given up: a stalled or hostile guest can't hold a
 * thread (a test may shorten it: AGENTJAIL_MICROVM_TEST_AGENT_IDLE_MS) */
#define AGENT_IDLE_MS 30000ULL
static unsigned long long agent_idle_ms(void)
{
	return aj_mv_test_ms("AGENTJAIL_MICROVM_TEST_AGENT_IDLE_MS", AGENT_IDLE_MS);
}
static int port_take(aj_inst *i)
{
	return aj_mvbox_port_take(i, true);
}

/* One request (q, consumed) and its answer; data: DATA frames from
 * src_fd (len bytes, ~0ULL: to its EOF). wait_ms: how long the answer
 * may take (0: as long as the VM lives). */
static int call_agent(aj_inst *i, json_t *q, int src_fd, unsigned long long len, mv_call *c,
		      const char *path, unsigned long long wait_ms, aj_error *err)
{
	char *txt = json_dumps(q, JSON_COMPACT);
	json_decref(q);
	if (!txt)
		return aj_err(err, ENOMEM, "request");
	int k = port_take(i);
	if (k < 0) {
		free(txt);
		return aj_mvbox_vm_gone(i, err);
	}
	mv_port *pt = &i->port[k];
	unsigned long long idle_ms = agent_idle_ms();
	int r = aj_mvbox_port_send(pt->fd, AJ_AG_REQUEST, txt, strlen(txt), idle_ms);
	free(txt);
	if (r == 0 && src_fd >= 0) {
		char buf[65536];
		unsigned long long left = len;
		while (r == 0 && left) {
			ssize_t n = read(src_fd, buf, left < sizeof(buf) ? left : sizeof(buf));
			if (n < 0 && errno == EINTR)
				continue;
			if (n == 0 && len == ~0ULL)
				break;
			if (n <= 0) {
				r = n < 0 ? -errno : -EIO; /* fewer bytes than said */
				break;
			}
			left -= (unsigned long long)n;
			r = aj_mvbox_port_send(pt->fd, AJ_AG_DATA, buf, (size_t)n, idle_ms);
		}
		/* the end, even after a short read: the agent answers */
		int e =
		    r == -ETIMEDOUT ? r : aj_mvbox_port_send(pt->fd, AJ_AG_DATA, NULL, 0, idle_ms);
		r = r ? r : e;
	}
	if (r == -ETIMEDOUT) { /* a frame cut short: the port is given up */
		aj_mvbox_port_give(i, k, false, true);
		aj_err(err, ETIMEDOUT, "%s: the sandbox's VM agent took nothing for %llu ms", path,
		       idle_ms);
		aj_err_hint(err, "retry; if it persists, delete the sandbox and create a new one");
		return -ETIMEDOUT;
	}
	unsigned long long until = wait_ms ? aj_mvbox_now_ms() + wait_ms : 0;
	int rr = 0;
	bool stopped = false, idle = false, late = false;
	unsigned long long last = aj_mvbox_now_ms();
	while (!c->have_exit && rr >= 0) {
		unsigned long long t = aj_mvbox_now_ms();
		if (!until && !stopped && t - last >= idle_ms)
			idle = true;
		if (!until && !stopped && c->until && t >= c->until)
			idle = late = true;
		if (((c->sink && c->sr < 0) || idle) && !stopped) {
			/* the stream refused: the agent told to stop, and given
			 * DRAIN_MS for its answer (a guest that goes on is cut off) */
			unsigned char h[AJ_AGENT_HDR + 1];
			aj_agent_hdr(h, AJ_AG_SIGNAL, 1);
			h[AJ_AGENT_HDR] = SIGKILL;
			/* never blocking: an agent that stopped reading its port
			 * is cut off after DRAIN_MS all the same */
			(void)!send(pt->fd, h, sizeof(h), MSG_DONTWAIT | MSG_NOSIGNAL);
			stopped = true;
			until = t + DRAIN_MS;
		}
		if (until && t >= until)
			break;
		rr =
		    aj_mvbox_port_read(pt, until ? (int)(until - t) : 1000, aj_mvbox_call_frame, c);
		/* a stream's frames count only when the sink takes something:
		 * empty or refused ones from a trickling guest don't */
		if (rr > 0 && (!c->sink || c->progress))
			last = aj_mvbox_now_ms();
		c->progress = false;
		if (rr == 0 && !until && i->vm.pids[0] > 0 && kill(i->vm.pids[0], 0) < 0)
			break;
	}
	/* told to stop and no answer: given up (its stream may be cut
	 * mid-frame; a drain at the next use would wait DRAIN_MS again) */
	aj_mvbox_port_give(i, k, c->have_exit, !c->have_exit && (rr < 0 || stopped));
	if (r < 0 && c->have_exit && c->x.err)
		r = 0; /* the agent's own error says more */
	if (r < 0)
		return aj_err(err, -r, "%s: cannot send the file to the sandbox", path);
	if (c->werr < 0)
		return aj_err(err, -c->werr, "%s", path);
	if (late && !c->have_exit) {
		aj_err(
		    err, ETIMEDOUT,
		    "snapshot: the sandbox's VM agent did not finish streaming its root in %llu s "
		    "(60 s plus 1 s per MiB the snapshot may take)",
		    c->secs);
		aj_err_hint(err, "retry; if it persists, delete the sandbox and create a new one");
		return -ETIMEDOUT;
	}
	if (idle && !c->have_exit) {
		aj_err(err, ETIMEDOUT, "%s: the sandbox's VM agent sent nothing%s for %llu ms",
		       path, c->sink ? " the snapshot could take" : "", idle_ms);
		aj_err_hint(err, "retry; if it persists, delete the sandbox and create a new one");
		return -ETIMEDOUT;
	}
	if (!c->have_exit)
		return aj_mvbox_vm_gone(i, err);
	int e = c->x.err;
	if (e == EPERM)
		return aj_err(err, EPERM, "%s: not allowed (a kernel filesystem, or not permitted)",
			      path);
	if (e)
		return aj_err(err, e, "%s: %s", path, c->x.error);
	return 0;
}

static json_t *req(const char *op, const char *path)
{
	return json_pack("{s:s,s:s}", "op", op, "path", path);
}

/* A files API request, as the sandbox's --user (the agent's fsuid/fsgid:
 * level 1's, daemon/files.c), so what it makes is U's in the guest and the
 * owner's on the host in the workspace and --rw binds. */
static json_t *file_req(const aj_inst *i, const char *op, const char *path)
{
	json_t *q = req(op, path);
	const aj_policy *p = i->vm.p;
	if (p->uid || p->gid) /* not set (out of memory): no request, never as root */
		q = aj_mv_exec_user(q, p->uid, p->gid);
	return q;
}

static int check_path(const char *path, aj_error *err)
{
	if (!path || path[0] != '/')
		return aj_err(err, EINVAL, "a path inside the sandbox is absolute");
	return 0;
}

static int mv_file_read(aj_inst *i, const char *path, int *fd, aj_file_stat *st, aj_error *err)
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
	mv_call c = {.st = st ? st : &tmp, .data_fd = m};
	r = call_agent(i, file_req(i, "read", path), -1, 0, &c, path, 0, err);
	if (r < 0 || lseek(m, 0, SEEK_SET) < 0) {
		close(m);
		return r < 0 ? r : aj_err(err, errno, "memfd");
	}
	*fd = m;
	return 0;
}

static int mv_file_write(aj_inst *i, const char *path, int src_fd, unsigned long long len,
			 unsigned mode, aj_error *err)
{
	int r = check_path(path, err);
	if (r < 0)
		return r;
	json_t *q = file_req(i, "write", path);
	q = aj_mv_json_set(q, "mode", json_integer(mode ? mode : 0644));
	mv_call c = {.data_fd = -1};
	return call_agent(i, q, src_fd, len, &c, path, 0, err);
}

static int mv_file_stat(aj_inst *i, const char *path, aj_file_stat *st, aj_error *err)
{
	int r = check_path(path, err);
	if (r < 0)
		return r;
	mv_call c = {.st = st, .data_fd = -1};
	return call_agent(i, file_req(i, "stat", path), -1, 0, &c, path, 0, err);
}

static int mv_file_list(aj_inst *i, const char *path, aj_dirent_fn fn, void *ctx, aj_error *err)
{
	int r = check_path(path, err);
	if (r < 0)
		return r;
	mv_call c = {.fn = fn, .ctx = ctx, .data_fd = -1};
	return call_agent(i, file_req(i, "list", path), -1, 0, &c, path, 0, err);
}

static int mv_file_remove(aj_inst *i, const char *path, bool recursive, aj_error *err)
{
	int r = check_path(path, err);
	if (r < 0)
		return r;
	json_t *q = file_req(i, "remove", path);
	q = aj_mv_json_set(q, "recursive", json_boolean(recursive));
	mv_call c = {.data_fd = -1};
	return call_agent(i, q, -1, 0, &c, path, 0, err);
}

static int mv_file_mkdir(aj_inst *i, const char *path, bool parents, aj_error *err)
{
	int r = check_path(path, err);
	if (r < 0)
		return r;
	json_t *q = file_req(i, "mkdir", path);
	q = aj_mv_json_set(q, "parents", json_boolean(parents));
	mv_call c = {.data_fd = -1};
	return call_agent(i, q, -1, 0, &c, path, 0, err);
}

/* AJ_CAP_UPDATE, a pooled VM at hand-out: checked and applied by update.c,
 * the guest's limits by its agent */
static int mv_update(aj_inst *i, const aj_policy *p, unsigned what, aj_error *err)
{
	json_t *q = NULL;
	int r = aj_mvbox_update_check(i, p, what, &q, err);
	if (r == 0 && q) {
		mv_call c = {.data_fd = -1};
		r = call_agent(i, q, -1, 0, &c, "limits", LIMITS_TIMEOUT_MS, err);
		if (r < 0)
			aj_err_prefix(err, "microvm: the VM's agent did not set its limits");
	}
	return r < 0 ? r : aj_mvbox_update_apply(i, p, what, err);
}

/* The guest's root streamed by its agent (op "tree": its own mount, the
 * guest's processes frozen meanwhile) to sink, for a snapshot. A paused
 * VM is thawed for it (its agent runs in it) and frozen again after: its
 * processes may run for the moment before the agent freezes them. */
static int mv_root_stream(aj_inst *i, const aj_root_sink *sink, aj_error *err)
{
	bool paused = i->paused;
	int r = paused ? aj_cgroup_freeze(&i->vm.cg, false, err) : 0;
	if (r < 0)
		return r;
	/* sent empty: the host drops them (tree_write.c), so no hard link may
	 * name what is in them */
	json_t *q = json_pack("{s:s,s:s,s:b,s:[s,s,s]}", "op", "tree", "path", "/", "freeze", 1,
			      "skip", "tmp", &AJ_SANDBOX_HOME[1], AJ_IMAGE_CHECKPOINT_DIR);
	/* a deadline: a guest trickling entries holds the image store's lock */
	unsigned long long secs = 60 + sink->max_bytes / (1ULL << 20);
	mv_call c = {
	    .data_fd = -1, .sink = sink, .until = aj_mvbox_now_ms() + secs * 1000, .secs = secs};
	r = call_agent(i, q, -1, 0, &c, "/", 0, err);
	if (c.sr < 0) { /* the sink's error says more (no room, a refused entry) */
		*err = c.serr;
		r = c.sr;
	}
	aj_error e;
	if (paused && aj_cgroup_freeze(&i->vm.cg, true, &e) < 0 && r == 0) {
		*err = e;
		r = -(e.code ? e.code : EIO);
	}
	return r;
}

/* ---- the sandbox ---- */

/* killed, and every port being made anew ended (its thread sees killed
 * within 100 ms): before the VM's teardown */
static void end_revivers(aj_inst *i)
{
	pthread_mutex_lock(&i->mu);
	i->killed = true;
	pthread_cond_broadcast(&i->cv);
	while (i->revivers)
		pthread_cond_wait(&i->cv, &i->mu);
	pthread_mutex_unlock(&i->mu);
}

static void free_inst(aj_inst *i)
{
	end_revivers(i);
	/* the ports proxy's relays end with the VM (their ports closed) */
	pthread_mutex_lock(&i->mu);
	if (i->relays && i->vm.pids[0] > 0)
		kill(i->vm.pids[0], SIGKILL);
	for (int k = 0; k < AJ_MV_PROXY_MAX; k++)
		if (i->relay_fd[k] >= 0)
			(void)shutdown(i->relay_fd[k], SHUT_RDWR);
	while (i->relays)
		pthread_cond_wait(&i->cv, &i->mu);
	pthread_mutex_unlock(&i->mu);
	aj_mv_teardown(&i->vm);
	for (int k = 0; k < AJ_MV_BOX_PORTS; k++)
		free(i->port[k].ibuf);
	aj_strv_free(i->envp);
	pthread_mutex_destroy(&i->mu);
	pthread_cond_destroy(&i->cv);
	free(i);
}

static int give_identity(aj_inst *i, unsigned long long timeout_ms, aj_error *err)
{
	json_t *q = aj_mv_identity_req(i->vm.p);
	mv_call c = {.data_fd = -1};
	int r =
	    q ? call_agent(i, q, -1, 0, &c, "/", timeout_ms, err) : aj_err(err, ENOMEM, "identity");
	if (r < 0)
		aj_err_prefix(err, "microvm: the restored VM did not take its identity");
	return r;
}

/* The NIC of a snapshot's VM (a tap's address is the sandbox's own, never
 * in a snapshot): plugged, then the agent takes the VM's own identity
 * (entropy, clock, hostname) and only then addresses it (agent_net.c, op
 * "net"): a restored VM sends no packet as its template. A snapshot whose
 * VMs' NIC failed NIC_FAILS in a row is removed (the next create boots and
 * saves a new one): a bad one is not restored, and booted after, forever. */
#define NIC_FAILS 3
static int plug_nic(aj_inst *i, int tap, aj_error *err)
{
	json_t *q = NULL, *id = NULL;
	int r = 0;
	/* a test's fault (docs/levels.md, "Test knobs"): a restored VM's
	 * hotplug fails, as a bad snapshot's would */
	if (i->vm.restored && getenv("AGENTJAIL_MICROVM_TEST_NIC_FAIL"))
		r = aj_err(err, EIO,
			   "microvm: the NIC's hotplug (AGENTJAIL_MICROVM_TEST_NIC_FAIL)");
	if (r == 0)
		r = aj_mv_snap_plug_net(i->vm.vm, tap, err);
	/* the identity's clock taken after the hotplug, which may be slow */
	if (r == 0 && (!(q = aj_mv_net_req(i->vm.net)) || !(id = aj_mv_identity_req(i->vm.p)) ||
		       json_object_update_missing(q, id) < 0))
		r = aj_err(err, ENOMEM, "microvm: the NIC's request");
	json_decref(id);
	mv_call c = {.data_fd = -1};
	if (r == 0) {
		r = call_agent(i, q, -1, 0, &c, "eth0", READY_TIMEOUT_MS, err);
		q = NULL;
		if (r < 0)
			aj_err_prefix(err, "microvm: the guest did not take its identity and bring "
					   "up its NIC with the sandbox's address");
	}
	json_decref(q);
	/* only a restored VM's failure is its snapshot's (not a fork's copy,
	 * whose snapfile is its own); want of memory or time is the host's */
	if (!i->vm.restored || i->vm.restore_dir[0] ||
	    (r < 0 && (err->code == ENOMEM || err->code == ETIMEDOUT)))
		return r;
	unsigned fails = aj_mv_snap_nic_result(i->vm.snapfile, r == 0);
	if (fails >= NIC_FAILS) {
		fprintf(stderr,
			"agentjail: microvm: the NIC failed in %u VMs in a row of snapshot %s: "
			"removed (the next VM boots and saves a new one)\n",
			fails, i->vm.snapfile);
		aj_mv_snap_remove(i->vm.snapfile);
	}
	return r;
}

/* The boot (or restore) up to the agent's first answer; a booted one that
 * may be is saved first. A restored VM takes its identity when it is
 * handed out (mv_claim), and before its NIC comes up (plug_nic): until
 * then it is the snapshot's. *ws: the failure was the workspace's or the
 * NIC's hotplug (the snapshot restored fine). */
static int mv_boot_ready(aj_inst *i, bool *ws, aj_error *err)
{
	*ws = false;
	int r = aj_mv_boot(&i->vm, false, err);
	for (int k = 0; k < AJ_MV_BOX_PORTS; k++)
		i->port[k].fd = i->vm.ports[k];
	if (r == 0 && !i->envp &&
	    !(i->envp = aj_policy_build_env(i->vm.p, NULL, aj_mv_net_env(i->vm.net))))
		r = aj_err(err, ENOMEM, "environment");
	if (r == 0) {
		/* ready: the guest's agent answers (its boot is done); a restored
		 * VM's first request is its identity (one round trip less for a
		 * create, whose claim follows), before its workspace and NIC */
		aj_file_stat st;
		mv_call c = {.st = i->vm.restored ? NULL : &st, .data_fd = -1};
		json_t *q = i->vm.restored ? aj_mv_identity_req(i->vm.p) : req("stat", "/");
		unsigned long long t0 = aj_mvbox_now_ms();
		r = q ? call_agent(i, q, -1, 0, &c, "/", READY_TIMEOUT_MS, err)
		      : aj_err(err, ENOMEM, "identity");
		if (r < 0)
			aj_err_prefix(err, "microvm: the VM did not become ready");
		/* the clock it set is at most the round trip late: kept when
		 * that is short (else the claim sets it again) */
		unsigned long long now = aj_mvbox_now_ms();
		i->ident_ms = r == 0 && i->vm.restored && now - t0 <= IDENT_SKEW_MS ? now : 0;
	}
	if (r == 0 && !i->vm.restored && i->vm.snap) {
		aj_error serr;
		aj_err_clear(&serr);
		/* without it, the next one boots */
		int sr = aj_mv_snap_save_ram(i->vm.vm, i->vm.snapfile, i->vm.ramfd, &serr);
		if (sr == -ENOTRECOVERABLE) { /* left stopped: this VM fails */
			*err = serr;
			r = sr;
		} else if (sr < 0 && getenv("AGENTJAIL_MICROVM_DEBUG"))
			fprintf(stderr, "agentjail: microvm: no snapshot: %s\n", serr.msg);
	}
	/* a snapshot's VM (saved or restored without it): its workspace
	 * plugged now (vhost-user-fs does not migrate), the agent mounts it */
	if (r == 0 && i->vm.snap && i->vm.p->workspace) {
		r = aj_mv_snap_plug_ws(i->vm.vm, err);
		json_t *q = r == 0 ? json_pack("{s:s}", "op", "workspace") : NULL;
		mv_call c = {.data_fd = -1};
		if (r == 0)
			r = q ? call_agent(i, q, -1, 0, &c, "/", READY_TIMEOUT_MS, err)
			      : aj_err(err, ENOMEM, "workspace");
		if (r < 0 && q)
			aj_err_prefix(err, "microvm: the guest did not mount the workspace");
		*ws = r < 0;
	}
	/* and its NIC; the create fails if it is not up (after one boot with
	 * it: create_inst) */
	int nsfd, tap = aj_mv_net_fds(i->vm.net, &nsfd);
	if (r == 0 && i->vm.snap && tap >= 0) {
		r = plug_nic(i, tap, err);
		*ws = r < 0;
	}
	return r;
}

/* create, or (ckpt) a fork's copy restored from its source's save there. */
static int create_inst(const aj_policy *p, const char *ckpt, aj_inst **out, aj_error *err)
{
	*out = NULL;
	aj_inst *i = calloc(1, sizeof(*i));
	if (!i)
		return aj_err(err, ENOMEM, "sandbox");
	pthread_mutex_init(&i->mu, NULL);
	pthread_condattr_t ca; /* timed waits on it: aj_mvbox_port_take */
	pthread_condattr_init(&ca);
	pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
	pthread_cond_init(&i->cv, &ca);
	pthread_condattr_destroy(&ca);
	for (int k = 0; k < AJ_MV_PROXY_MAX; k++)
		i->relay_fd[k] = -1;
	int r;
	bool boot_only = false;
	for (int attempt = 0;; attempt++) {
		aj_mv_vm_init(&i->vm, p, NULL, AJ_MV_BOX_PORTS);
		i->vm.freezer = true;
		/* an image: started from its snapshot, or booted and saved as
		 * one (snap.c), its workspace and NIC hot-plugged after (not
		 * with HTTPS interception: netd's CA is the sandbox's own, in
		 * its initramfs); a snapshot that does not restore (another
		 * qemu) is removed and the VM booted */
		i->vm.snap = !boot_only && p->rootfs && !p->n_binds && !aj_net_tls_wanted(p);
		if (ckpt)
			snprintf(i->vm.restore_dir, sizeof(i->vm.restore_dir), "%s", ckpt);
		/* a workspace or NIC that fails to plug, mount or take its
		 * address (the tenant's, or this snapshot's): booted once more
		 * without the snapshot, which is kept (no tenant evicts it, but
		 * a NIC that fails in NIC_FAILS restored VMs in a row does:
		 * plug_nic); a restore that fails removes it */
		bool ws;
		r = mv_boot_ready(i, &ws, err);
		if (r == 0 || attempt || ckpt || (!i->vm.restored && !ws))
			break;
		if (ws)
			boot_only = true;
		else
			aj_mv_snap_remove(i->vm.snapfile);
		end_revivers(i);
		aj_mv_teardown(&i->vm);
		i->killed = false; /* the next attempt's VM (no thread left to see it) */
		aj_err_clear(err);
		aj_strv_free(i->envp); /* its proxy address was the first attempt's */
		i->envp = NULL;
		for (int k = 0; k < AJ_MV_BOX_PORTS; k++) {
			free(i->port[k].ibuf);
			i->port[k] = (mv_port){.fd = -1};
		}
	}
	if (r < 0) {
		free_inst(i);
		return r;
	}
	aj_mvbox_shape(i, p);
	*out = i;
	return 0;
}

static int mv_create(const aj_policy *p, const char *source, aj_inst **out, aj_error *err)
{
	(void)source;
	return create_inst(p, NULL, out, err);
}

/* A VM handed out: a restored one's own entropy, clock and hostname (the
 * snapshot's memory is every copy's); a booted one has its own. */
static int mv_claim(aj_inst *i, aj_error *err)
{
	/* given at its ready request just now (a create's): not again; a
	 * pool's that waited takes it anew (the host's clock, and an answer) */
	bool fresh = i->ident_ms && aj_mvbox_now_ms() - i->ident_ms < IDENT_FRESH_MS;
	i->ident_ms = 0;
	int r = i->vm.restored && !fresh ? give_identity(i, CLAIM_TIMEOUT_MS, err) : 0;
	/* a snapshot whose agent can't (an older one's): removed with its
	 * RAM (a RAM file left would refuse the next save for a minute), the
	 * next VM boots (a fork's save is its own) */
	if (r < 0 && !i->vm.restore_dir[0])
		aj_mv_snap_remove(i->vm.snapfile);
	return r;
}

/* err as the API's answer: status (409 conflict, 501 not_supported). */
static int refuse_as(aj_error *err, int status, int e)
{
	err->status = status;
	snprintf(err->api_code, sizeof(err->api_code), "%s",
		 status == 501 ? "not_supported" : "conflict");
	return -e;
}

/* A fork's save: the running VM migrated to a file in a new directory of
 * its own (snap.c), every agent port held meanwhile (a port's exchange in
 * the save would be each copy's half-done one), then it goes on. */
static void mv_kill(aj_inst *i);

static int mv_checkpoint(aj_inst *i, char **ckpt, aj_error *err)
{
	*ckpt = NULL;
	if (aj_mvbox_fork_fits(i, err) < 0) /* update.c */
		return refuse_as(err, 501, ENOTSUP);
	if (!i->vm.snap || i->vm.p->workspace || i->vm.net) {
		aj_err(err, ENOTSUP,
		       "a microVM with a workspace, --ro/--rw binds, a NIC or no image cannot be "
		       "forked: its virtiofs devices (vhost-user-fs) do not migrate in qemu 7.2, "
		       "and a NIC's address is the sandbox's own");
		aj_err_hint(err, "fork a microVM made from an image with no workspace, binds or "
				 "network (put files in with the files API), or use "
				 "\"isolation\": \"process\"");
		return refuse_as(err, 501, ENOTSUP);
	}
	if (i->paused) {
		aj_err(err, EBUSY, "sandbox is paused: its VM cannot be saved while frozen");
		aj_err_hint(err, "resume it (POST .../resume) first");
		return refuse_as(err, 409, EBUSY);
	}
	pthread_mutex_lock(&i->mu);
	/* a port given up or being made anew: refused (a save could copy a
	 * port half made anew in the guest); none started while the fork
	 * holds them all */
	unsigned busy = 0, dead = 0;
	for (int k = 0; k < AJ_MV_BOX_PORTS; k++) {
		busy += i->port[k].busy && !i->port[k].dead;
		dead += i->port[k].dead;
	}
	for (int k = 0; !busy && !dead && k < AJ_MV_BOX_PORTS; k++)
		i->port[k].busy = true;
	pthread_mutex_unlock(&i->mu);
	if (dead) {
		aj_err(err, EAGAIN,
		       "%u of the VM's agent ports %s being made anew (a command that did not "
		       "answer left %s): a fork now could copy one half made",
		       dead, dead == 1 ? "is" : "are", dead == 1 ? "it" : "them");
		aj_err_hint(err, "retry the fork in a few seconds (a port is made anew within "
				 "10 s, retried later while the command that held it lives)");
		return refuse_as(err, 409, EAGAIN);
	}
	if (busy) {
		aj_err(err, EBUSY,
		       "%u command%s or file operation%s running in the sandbox: their "
		       "exchanges with the VM's agent cannot be copied",
		       busy, busy == 1 ? " is" : "s are", busy == 1 ? "" : "s");
		aj_err_hint(err, "fork when they have ended (a background process: start it "
				 "detached, e.g. `setsid CMD </dev/null >/tmp/log 2>&1 &`)");
		return refuse_as(err, 409, EBUSY);
	}
	/* a port a cancelled command left: drained to its answer first */
	for (int k = 0; k < AJ_MV_BOX_PORTS; k++)
		if (!i->port[k].dead && i->port[k].stale && !aj_mvbox_drain(&i->port[k]))
			i->port[k].dead = true;
	char dir[sizeof(i->vm.dir) + 32];
	snprintf(dir, sizeof(dir), "%s/fork-XXXXXX", i->vm.dir);
	bool made = mkdtemp(dir) != NULL;
	int r = made ? 0 : aj_err(err, errno, "microvm: a directory for the fork's save");
	char file[PATH_MAX];
	if (r == 0) {
		snprintf(file, sizeof(file), "%s/%s", dir, strrchr(i->vm.snapfile, '/') + 1);
		r = aj_mv_snap_save(i->vm.vm, file, err);
	}
	if (r == -ENOSPC) {
		err->status = 507;
		snprintf(err->api_code, sizeof(err->api_code), "%s", "insufficient_storage");
	} else if (r == -ENOTRECOVERABLE) { /* stopped for good: gone, not hung */
		i->lost = true;
		mv_kill(i);
		aj_err_hint(err, "the sandbox's VM was killed; create it again");
		err->status = 500;
		snprintf(err->api_code, sizeof(err->api_code), "%s", "vm_lost");
	} else if (r == -ETIMEDOUT) {
		aj_err_hint(err, "the sandbox goes on; retry the fork (a VM with less \"memory\" "
				 "saves sooner)");
	}
	if (r == 0 && !(*ckpt = strdup(dir)))
		r = aj_err(err, ENOMEM, "checkpoint");
	if (r < 0 && made)
		(void)aj_rm_tree_at(AT_FDCWD, dir, 4);
	pthread_mutex_lock(&i->mu);
	for (int k = 0; k < AJ_MV_BOX_PORTS; k++) {
		i->port[k].busy = false;
		i->port[k].stale = false;
	}
	pthread_cond_broadcast(&i->cv);
	pthread_mutex_unlock(&i->mu);
	return r;
}

static int mv_restore(const aj_policy *p, const char *source, const char *ckpt, aj_inst **out,
		      aj_error *err)
{
	(void)source;
	return create_inst(p, ckpt, out, err);
}

static void mv_checkpoint_drop(char *ckpt)
{
	if (ckpt && strstr(ckpt, "/fork-"))
		(void)aj_rm_tree_at(AT_FDCWD, ckpt, 4);
	free(ckpt);
}

/* Field 22 of /proc/PID/stat: when it started (clock ticks after boot). */

static json_t *mv_state(aj_inst *i)
{
	aj_mv_vm *m = &i->vm;
	json_t *cgs = json_array(), *pids = json_array();
	for (int k = 0; m->have_cg && k < m->cg.n; k++)
		json_array_append_new(cgs, json_string(m->cg.dirs[k].path));
	for (size_t k = 0; k < AJ_ARRAY_SIZE(m->pids); k++) {
		unsigned long long st = m->pids[k] > 0 ? aj_pid_start_time(m->pids[k]) : 0;
		if (st)
			json_array_append_new(pids, json_pack("{s:i,s:I}", "pid", (int)m->pids[k],
							      "start", (json_int_t)st));
	}
	return json_pack("{s:s,s:s,s:o,s:o}", "backend", "microvm", "dir", m->dir, "cgroups", cgs,
			 "pids", pids);
}

static void mv_sweep(json_t *state)
{
	const char *dir = json_string_value(json_object_get(state, "dir"));
	/* the processes by pid and start time, never by name */
	size_t k;
	json_t *v;
	json_array_foreach(json_object_get(state, "pids"), k, v)
	{
		pid_t pid = (pid_t)json_integer_value(json_object_get(v, "pid"));
		unsigned long long st =
		    (unsigned long long)json_integer_value(json_object_get(v, "start"));
		if (pid > 1 && st && aj_pid_start_time(pid) == st)
			kill(pid, SIGKILL);
	}
	/* the VMM's cgroups: thawed (a paused VM dies only then), whatever is
	 * left in them killed, then them */
	json_array_foreach(json_object_get(state, "cgroups"), k, v)
	{
		const char *cg = json_string_value(v);
		if (!cg || !aj_startswith(cg, "/sys/fs/cgroup/") || strstr(cg, ".."))
			continue;
		char f[PATH_MAX + 32];
		snprintf(f, sizeof(f), "%s/freezer.state", cg);
		if (access(f, W_OK) == 0)
			(void)aj_write_file(f, "THAWED", 0);
		snprintf(f, sizeof(f), "%s/cgroup.freeze", cg);
		if (access(f, W_OK) == 0)
			(void)aj_write_file(f, "0", 0);
	}
	json_array_foreach(json_object_get(state, "cgroups"), k, v)
	{
		const char *cg = json_string_value(v);
		if (!cg || !aj_startswith(cg, "/sys/fs/cgroup/") || strstr(cg, ".."))
			continue;
		for (int tries = 0; tries < 50; tries++) {
			char path[PATH_MAX + 16];
			_cleanup_free_ char *procs = NULL;
			snprintf(path, sizeof(path), "%s/cgroup.procs", cg);
			if (aj_read_file(path, &procs, NULL) < 0 || !*procs)
				break;
			for (char *s = procs, *save = NULL, *t; (t = strtok_r(s, "\n", &save));
			     s = NULL)
				kill((pid_t)atoi(t), SIGKILL);
			usleep(20000);
		}
		(void)rmdir(cg);
	}
	struct stat st;
	/* the directory: one of ours by its shape (below the prefix, one name) */
	if (dir && aj_startswith(dir, AJ_MV_DIR_PREFIX) &&
	    !strchr(dir + strlen(AJ_MV_DIR_PREFIX), '/') && !strstr(dir, "..") &&
	    lstat(dir, &st) == 0 && S_ISDIR(st.st_mode) && st.st_uid == geteuid())
		(void)aj_rm_tree_at(AT_FDCWD, dir, 16);
}

static void mv_kill(aj_inst *i)
{
	pthread_mutex_lock(&i->mu);
	i->killed = true;
	pthread_cond_broadcast(&i->cv);
	pthread_mutex_unlock(&i->mu);
	if (i->vm.have_cg)
		aj_cgroup_thaw(&i->vm.cg); /* a paused VM dies only once thawed */
	if (i->vm.pids[0] > 0)
		kill(i->vm.pids[0], SIGKILL); /* the guest and all in it */
}

static void mv_destroy(aj_inst *i)
{
	if (i)
		free_inst(i);
}

static void mv_info(aj_inst *i, aj_inst_info *out)
{
	memset(out, 0, sizeof(*out));
	/* the workspace's files are its owner's on the host (virtiofsd runs as it) */
	out->uid = i->vm.ws_uid;
	out->gid = i->vm.ws_gid;
	out->pid = i->vm.pids[0];
	out->holder = i->vm.pids[0]; /* qemu (the audit's "keeper") */
	out->limits_missing = i->vm.have_cg ? i->vm.cg.missing : 0;
	out->alive = !i->killed && i->vm.pids[0] > 0 && kill(i->vm.pids[0], 0) == 0;
	out->cpu_quota = aj_mvbox_cpu_quota(i); /* update.c */
}

/* The VMM frozen in its host cgroup (vCPUs, devices, virtiofsd), the
 * guest's memory kept; its clock jumps at resume. */
static int mv_pause(aj_inst *i, bool pause, aj_error *err)
{
	if (!i->vm.have_cg)
		return aj_err(err, ENOTSUP, "the VM has no host cgroup: it cannot be paused");
	int r = aj_cgroup_freeze(&i->vm.cg, pause, err);
	if (r == 0)
		i->paused = pause;
	return r;
}

/* The VMM's use on the host: the guest's RAM as far as it was touched and
 * qemu's and virtiofsd's own; pids are theirs (threads), not the guest's. */
static int mv_stats(aj_inst *i, aj_inst_stats *o, aj_error *err)
{
	memset(o, 0, sizeof(*o));
	if (!i->vm.have_cg || aj_cgroup_stats(&i->vm.cg, &o->memory_bytes, &o->memory_peak_bytes,
					      &o->cpu_usec, &o->pids) < 0)
		return aj_err(err, ENOTSUP, "the VM has no memory cgroup to read");
	o->oom_kills = aj_cgroup_oom_kills(&i->vm.cg);
	return 0;
}

/* A host pty: the command's terminal is one the guest's agent opens (in
 * the guest's devpts); this pair carries its input (written to the
 * master) and its size (TIOCSWINSZ on the master) there. */
static int mv_open_pty(aj_inst *i, int pty[2], aj_error *err)
{
	(void)i;
	int m = posix_openpt(O_RDWR | O_NOCTTY | O_CLOEXEC);
	if (m < 0 || grantpt(m) < 0 || unlockpt(m) < 0) {
		int e = errno;
		if (m >= 0)
			close(m);
		return aj_err(err, e, "cannot open a pseudo-terminal");
	}
	int s = open(ptsname(m), O_RDWR | O_NOCTTY | O_CLOEXEC);
	if (s < 0) {
		int e = errno;
		close(m);
		return aj_err(err, e, "cannot open a pseudo-terminal");
	}
	struct winsize ws = {.ws_row = 24, .ws_col = 80};
	(void)ioctl(m, TIOCSWINSZ, &ws);
	pty[0] = m, pty[1] = s;
	return 0;
}

/* ---- commands ---- */

struct aj_job {
	aj_inst *i;
	aj_exec_io io;
	aj_redactor red[2];
	int stdin_fd, tty;  /* where its stdin comes from (ours), or -1 */
	int port;	    /* the port it holds (exec_wait), or -1 */
	struct winsize ws;  /* the terminal's size last sent */
	aj_agent_queue out; /* frames not yet sent to the agent */
	int lost;	    /* a frame that could not be queued: -errno */
	unsigned long long timeout_ms, start_ms;
	bool cancelled, have_exit, timed_out, gone;
	aj_agent_exit ax; /* the agent's answer, when have_exit */
	aj_error err;	  /* an error to start it, for exec_wait */
	int failed;
};

/* A frame for the agent queued (front: a signal, ahead of stdin not yet
 * begun). One that can't be (out of memory) ends the exec with the error,
 * its command killed: never stdin or a signal lost silently. */
static int queue_at(aj_job *j, char type, const void *buf, size_t len, bool front)
{
	int r = aj_agent_queue_put(&j->out, type, buf, len, front);
	if (r < 0 && !j->lost)
		j->lost = r;
	return r;
}

static int queue(aj_job *j, char type, const void *buf, size_t len)
{
	return queue_at(j, type, buf, len, false);
}

static void send_signal(aj_job *j, int sig)
{
	unsigned char s = (unsigned char)sig;
	(void)queue_at(j, AJ_AG_SIGNAL, &s, 1, true);
}

static void cancel(aj_job *j)
{
	j->cancelled = true;
	send_signal(j, SIGKILL);
}

/* NAME=VALUE lists merged, a later NAME replacing an earlier one; NULL
 * when one could not be added (never an environment with one left out). */
static json_t *merged_env(char **base, char **more)
{
	json_t *a = json_array();
	char **lists[2] = {base, more};
	for (int l = 0; a && l < 2; l++)
		for (char **e = lists[l]; a && e && *e; e++) {
			size_t n = strcspn(*e, "=");
			size_t k;
			json_t *v;
			json_array_foreach(a, k, v)
			{
				const char *s = json_string_value(v);
				if (!strncmp(s, *e, n) && s[n] == '=') {
					json_array_remove(a, k);
					break;
				}
			}
			if (json_array_append_new(a, json_string(*e)) < 0) {
				json_decref(a);
				a = NULL;
			}
		}
	return a;
}

static int request(aj_job *j, const aj_exec_spec *s)
{
	const aj_policy *p = j->i->vm.p;
	json_t *argv = aj_mv_json_strv(s->argv), *env = merged_env(j->i->envp, s->env);
	const char *cwd = s->cwd	 ? s->cwd
			  : p->cwd	 ? p->cwd
			  : p->workspace ? AJ_WORKSPACE_DIR
			  : p->uid	 ? AJ_SANDBOX_HOME
					 : "/root";
	/* every piece checked: out of memory fails the exec, never runs the
	 * command without an argument or as guest root instead of --user */
	json_t *q = argv && env ? json_pack("{s:s,s:o,s:o,s:s,s:b}", "op", "exec", "argv", argv,
					    "env", env, "cwd", cwd, "tty", s->tty_slave > 0)
				: (json_decref(argv), json_decref(env), NULL);
	q = aj_mv_exec_profile(&j->i->vm, aj_mv_exec_rlimits(p, q));
	q = aj_mv_exec_user(q, p->uid, p->gid);
	if (s->tty_slave > 0) { /* a terminal of the guest's devpts, this size */
		q = aj_mv_json_set(q, "rows", json_integer(j->ws.ws_row));
		q = aj_mv_json_set(q, "cols", json_integer(j->ws.ws_col));
	}
	char *txt = q ? json_dumps(q, JSON_COMPACT) : NULL;
	json_decref(q);
	int r = txt ? queue(j, AJ_AG_REQUEST, txt, strlen(txt)) : -ENOMEM;
	free(txt);
	return r;
}

static aj_job *mv_exec_start(aj_inst *i, const aj_exec_spec *spec, const aj_exec_io *io)
{
	aj_job *j = calloc(1, sizeof(*j));
	if (!j) {
		if (spec->tty_slave > 0)
			close(spec->tty_slave);
		return NULL;
	}
	j->i = i;
	j->io = *io;
	j->stdin_fd = j->tty = -1;
	j->port = -1;
	j->timeout_ms = spec->timeout_ms;
	j->start_ms = aj_mvbox_now_ms();
	aj_err_clear(&j->err);
	aj_redactor_init(&j->red[0]);
	aj_redactor_init(&j->red[1]);
	if (spec->tty_slave > 0) {
		/* the host terminal passes bytes through: the line discipline is
		 * the guest's */
		j->tty = spec->tty_slave;
		struct termios t;
		if (tcgetattr(j->tty, &t) == 0) {
			cfmakeraw(&t);
			(void)tcsetattr(j->tty, TCSANOW, &t);
		}
		if (ioctl(j->tty, TIOCGWINSZ, &j->ws) < 0)
			j->ws = (struct winsize){.ws_row = 24, .ws_col = 80};
		(void)fcntl(j->tty, F_SETFL, O_NONBLOCK);
	} else if (spec->stdin_fd > 0) {
		j->stdin_fd = fcntl(spec->stdin_fd, F_DUPFD_CLOEXEC, 3);
	}
	int r = 0;
	if (aj_redactor_init_policy(&j->red[0], i->vm.p) < 0 ||
	    aj_redactor_init_policy(&j->red[1], i->vm.p) < 0)
		r = aj_err(&j->err, ENOMEM, "redactor");
	if (r == 0 && (!spec->argv || !spec->argv[0]))
		r = aj_err(&j->err, EINVAL, "no command given");
	if (r == 0 && (r = request(j, spec)) < 0)
		aj_err(&j->err, -r, "command");
	if (r == 0 && spec->stdin_fd <= 0 && spec->tty_slave <= 0) {
		for (size_t off = 0; r == 0 && off < spec->stdin_len; off += 65536) {
			size_t n = spec->stdin_len - off < 65536 ? spec->stdin_len - off : 65536;
			r = queue(j, AJ_AG_STDIN, spec->stdin_data + off, n);
		}
		if (r == 0)
			r = queue(j, AJ_AG_STDIN, NULL, 0);
		if (r < 0)
			aj_err(&j->err, -r, "stdin");
	}
	j->failed = r;
	return j;
}

static void emit(aj_job *j, int k, const char *buf, size_t len, bool final)
{
	_cleanup_free_ char *out = NULL;
	size_t olen = len;
	const char *o = buf;
	if (aj_redactor_active(&j->red[k])) {
		if (aj_redactor_feed(&j->red[k], buf, len, final, &out, &olen) < 0)
			return;
		o = out;
	}
	if (olen && !j->cancelled && j->io.output(j->io.ctx, k + 1, o, olen) < 0)
		cancel(j);
}

static bool job_frame(void *ctx, char type, const char *buf, size_t len)
{
	aj_job *j = ctx;
	if (type == AJ_AG_STDOUT || type == AJ_AG_STDERR) {
		emit(j, type == AJ_AG_STDOUT ? 0 : 1, buf, len, false);
	} else if (type == AJ_AG_EXIT) {
		aj_agent_exit_parse(buf, len, &j->ax);
		j->have_exit = true;
		return false;
	}
	return true;
}

/* The caller's stdin (a pipe, the terminal) into STDIN frames. */
static void read_input(aj_job *j, int *fd)
{
	char buf[65536];
	ssize_t n = read(*fd, buf, sizeof(buf));
	if (n < 0 && (errno == EINTR || errno == EAGAIN))
		return;
	if (n > 0) {
		(void)queue(j, AJ_AG_STDIN, buf, (size_t)n);
		return;
	}
	if (*fd != j->tty) {
		(void)queue(j, AJ_AG_STDIN, NULL, 0);
		close(*fd);
		*fd = -1;
	} else {
		j->tty = -1 - j->tty; /* keep it (closed at the end), stop polling */
	}
}

static void check_winsize(aj_job *j)
{
	struct winsize ws;
	if (j->tty < 0 || ioctl(j->tty, TIOCGWINSZ, &ws) < 0 ||
	    (ws.ws_row == j->ws.ws_row && ws.ws_col == j->ws.ws_col))
		return;
	j->ws = ws;
	unsigned char b[4] = {(unsigned char)(ws.ws_row & 0xff), (unsigned char)(ws.ws_row >> 8),
			      (unsigned char)(ws.ws_col & 0xff), (unsigned char)(ws.ws_col >> 8)};
	(void)queue(j, AJ_AG_WINSIZE, b, 4);
}

static void control(aj_job *j)
{
	char c[64];
	ssize_t n = read(j->io.signal_fd, c, sizeof(c));
	if (n == 0)
		j->io.signal_fd = -1;
	for (ssize_t k = 0; k < n; k++) {
		if (c[k] == 0)
			cancel(j);
		else
			send_signal(j, (unsigned char)c[k]);
	}
}

/* The relay until the agent's answer; timeouts as level 1. */
static void relay(aj_job *j)
{
	const aj_policy *p = j->i->vm.p;
	mv_port *pt = &j->i->port[j->port];
	unsigned long long deadline = j->timeout_ms ? j->start_ms + j->timeout_ms : 0;
	int stage = 0;
	while (!j->have_exit && !j->lost) {
		(void)aj_agent_queue_flush(&j->out, pt->fd); /* broken: the VM is gone */
		size_t queued = aj_agent_queue_pending(&j->out);
		int in = j->tty >= 0 ? j->tty : j->stdin_fd; /* read below the high-water mark */
		struct pollfd pf[4] = {
		    {pt->fd, (short)(POLLIN | (queued ? POLLOUT : 0)), 0},
		    {aj_agent_queue_full(&j->out) ? -1 : in, POLLIN, 0},
		    {j->io.signal_fd, POLLIN, 0},
		    {j->io.cancel_fd > 0 && !j->cancelled ? j->io.cancel_fd : -1, POLLIN, 0},
		};
		int tmo = j->tty >= 0 ? 100 : 1000; /* a terminal's size is polled */
		unsigned long long t = aj_mvbox_now_ms();
		if (deadline) {
			int d = t >= deadline ? 0 : (int)(deadline - t);
			tmo = d < tmo ? d : tmo;
		}
		int k = poll(pf, 4, tmo);
		if (k < 0 && errno != EINTR)
			break;
		int rd = k > 0 && (pf[0].revents & (POLLIN | POLLHUP | POLLERR))
			     ? aj_mvbox_port_read(pt, 0, job_frame, j)
			     : 0;
		if (rd == -ENOMEM && !j->have_exit) { /* the stream whole: killed, drained */
			j->lost = -ENOMEM;
			break;
		}
		if (rd < 0 && !j->have_exit) {
			j->gone = true;
			break;
		}
		if (j->have_exit)
			break;
		if (k == 0 && j->i->vm.pids[0] > 0 && kill(j->i->vm.pids[0], 0) < 0) {
			j->gone = true;
			break;
		}
		if (k > 0 && pf[1].revents)
			read_input(j, j->tty >= 0 ? &j->tty : &j->stdin_fd);
		check_winsize(j);
		if (k > 0 && pf[2].revents)
			control(j);
		if (k > 0 && pf[3].revents)
			cancel(j);
		if (deadline && aj_mvbox_now_ms() >= deadline) {
			if (stage == 0) {
				j->timed_out = true;
				send_signal(j, SIGTERM);
				deadline =
				    aj_mvbox_now_ms() + (p->kill_after_ms ? p->kill_after_ms : 1);
			} else if (stage == 1) {
				send_signal(j, SIGKILL);
				deadline = aj_mvbox_now_ms() + 2000;
			} else {
				break; /* no answer: the port is drained before its next use */
			}
			stage++;
		}
	}
	emit(j, 0, NULL, 0, true);
	emit(j, 1, NULL, 0, true);
}

/* What is queued for the agent goes out whole before the port is given
 * back: a frame cut short would be read as the next request's. 0; or
 * -ETIMEDOUT: not all of it in 2 s (drained before the port's next use);
 * else -errno: the stream broke (EPIPE), the port is given up. */
static int finish_out(aj_job *j, int fd)
{
	return aj_agent_queue_finish(&j->out, fd, 2000);
}

static void free_job(aj_job *j)
{
	if (j->stdin_fd >= 0)
		close(j->stdin_fd);
	int tty = j->tty >= 0 ? j->tty : j->tty < -1 ? -1 - j->tty : -1;
	if (tty >= 0)
		close(tty);
	aj_redactor_free(&j->red[0]);
	aj_redactor_free(&j->red[1]);
	aj_agent_queue_free(&j->out);
	free(j);
}

static int mv_exec_wait(aj_job *j, aj_run_result *res, aj_error *err)
{
	memset(res, 0, sizeof(*res));
	if (j->failed < 0) {
		*err = j->err;
		int r = j->failed;
		free_job(j);
		return r;
	}
	aj_inst *i = j->i;
	if ((j->port = port_take(i)) < 0) {
		free_job(j);
		return aj_mvbox_vm_gone(i, err);
	}
	relay(j);
	int fd = i->port[j->port].fd;
	int fo = !j->lost && !j->gone && j->have_exit ? finish_out(j, fd) : 0;
	bool answered = !j->lost && j->have_exit && fo == 0;
	bool dead = j->gone || (fo < 0 && fo != -ETIMEDOUT);
	if (j->lost && !j->gone) {
		/* the command killed: what was not begun dropped, the frame cut
		 * short finished (else the port is given up), then SIGKILL; its
		 * answer is drained before the port's next use */
		aj_agent_queue_drop_unbegun(&j->out);
		unsigned char sig = SIGKILL;
		dead = finish_out(j, fd) < 0 ||
		       aj_mvbox_port_send(fd, AJ_AG_SIGNAL, &sig, 1, 2000) < 0;
	}
	aj_mvbox_port_give(i, j->port, answered, dead);
	res->wall_ms = aj_mvbox_now_ms() - j->start_ms;
	if (j->have_exit) { /* the command's tree's (its guest cgroup's) */
		res->cpu_user_ms = j->ax.cpu_user_us / 1000;
		res->cpu_sys_ms = j->ax.cpu_sys_us / 1000;
	}
	int r = 0;
	if (j->lost) {
		r = aj_err(err, -j->lost,
			   "microvm: out of memory for the frames to or from the guest's agent "
			   "(stdin, a signal, output): the command was killed rather than go on "
			   "without them");
	} else if (j->timed_out) {
		res->timed_out = true;
		res->exit_code = AJ_EXIT_TIMEOUT;
		res->term_signal = j->have_exit ? j->ax.term_signal : SIGKILL;
		res->status = j->have_exit ? j->ax.exit_code : 128 + SIGKILL;
	} else if (j->have_exit && j->ax.err) {
		int e = j->ax.err;
		if (j->ax.confine[0]) { /* not run without its walls */
			aj_err(err, e,
			       "the command was not started: the guest's agent could not set its "
			       "%s (%s)",
			       j->ax.confine, j->ax.error);
		} else if (e == ENOENT) {
			aj_err(err, e, "command not found in the microVM");
			err->exit = AJ_EXIT_NOTFOUND;
		} else if (e == EACCES || e == ENOEXEC || e == EISDIR || e == EPERM) {
			aj_err(err, e, "command: not executable in the microVM (%s)", j->ax.error);
			err->exit = AJ_EXIT_NOEXEC;
		} else {
			aj_err(err, e, "the command could not start in the microVM: %s",
			       j->ax.error);
		}
		r = -e;
	} else if (j->have_exit) {
		res->status = j->ax.exit_code;
		res->exit_code = j->ax.exit_code;
		res->term_signal = j->ax.term_signal;
		/* the agent's word (the guest kernel's count), never the console's */
		if (res->term_signal == SIGKILL && !j->cancelled && j->ax.oom)
			res->oom_killed = true;
	} else if (j->cancelled) {
		res->exit_code = 128 + SIGKILL;
		res->term_signal = SIGKILL;
	} else {
		r = aj_mvbox_vm_gone(i, err);
	}
	free_job(j);
	return r;
}

static void mv_exec_abandon(aj_job *j)
{
	free_job(j); /* never sent: it took a port only in exec_wait */
}

static int mv_run_once(const aj_policy *p, const aj_run_hooks *hooks, aj_run_result *res,
		       aj_error *err)
{
	return aj_microvm_run(p, hooks, res, err);
}

static int mv_probe(aj_error *err)
{
	aj_mv_host h;
	return aj_mv_host_find(&h, err);
}

const aj_backend aj_backend_microvm = {
    .name = "microvm",
    .level = AJ_ISO_MICROVM,
    /* AJ_CAP_HOST_RW: the guest's agent puts every command under the setid
     * filter (agent.c), as for a one-shot run */
    .caps = AJ_CAP_PTY | AJ_CAP_FILES | AJ_CAP_HOST_RW | AJ_CAP_PAUSE | AJ_CAP_FORK | AJ_CAP_PORTS |
	    AJ_CAP_SNAPSHOT | AJ_CAP_UPDATE,
    .probe = mv_probe,
    .run = mv_run_once,
    .create = mv_create,
    .state = mv_state,
    .sweep = mv_sweep,
    .kill = mv_kill,
    .destroy = mv_destroy,
    .info = mv_info,
    .exec_start = mv_exec_start,
    .exec_wait = mv_exec_wait,
    .exec_abandon = mv_exec_abandon,
    .open_pty = mv_open_pty,
    .pause = mv_pause,
    .claim = mv_claim,
    .update = mv_update,
    .checkpoint = mv_checkpoint,
    .restore = mv_restore,
    .checkpoint_drop = mv_checkpoint_drop,
    .root_stream = mv_root_stream,
    .stats = mv_stats,
    .file_read = mv_file_read,
    .file_write = mv_file_write,
    .file_stat = mv_file_stat,
    .file_list = mv_file_list,
    .file_remove = mv_file_remove,
    .file_mkdir = mv_file_mkdir,
    .port_connect = aj_mvbox_port_connect,
};
