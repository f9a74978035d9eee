/* SPDX-License-Identifier: MIT */
/* Level 2 behind the seam (backend.h): a persistent gVisor sandbox.
 *
 * create: the same private directory, bundle, cgroup, network namespace and
 * workspace guard as a one-shot run (runsc.c, gvrun.h), started with
 * `runsc run --detach` and agentjail-agent as the container's init (bound
 * read-only at AJ_AGENT_PATH). Each command and file operation is one
 * `runsc exec` of the agent (exec.c, files.c). destroy: `runsc delete
 * --force`, the cgroup, the directory. The ports proxy: gvports.c. state/sweep: the same by the
 * recorded runsc root, container id, cgroups and pids with start times. */
#include "gvbox.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <termios.h>
#include <unistd.h>

#include "agent_proto.h"
#include "image.h"
#include "util.h"

/* What level 2 cannot enforce for a persistent sandbox stops create. */
static int refuse(const aj_policy *p, bool have_cg, aj_error *err)
{
	if (!have_cg && !p->limits_best_effort && (p->memory || p->pids || p->cpu_millis)) {
		aj_err(err, ENOTSUP,
		       "isolation level gvisor: --memory, --pids, --cpus need a cgroup and none "
		       "could be made here");
		aj_err_hint(err, "agentjail doctor says why; --limits best-effort runs without");
		return -ENOTSUP;
	}
	return 0;
}

/* The command's base environment: the process env of config.json (the
 * policy's, with --allow's proxy variables). */
static char **bundle_env(const gv_run *g)
{
	char path[PATH_MAX];
	snprintf(path, sizeof(path), "%s/config.json", g->bundle);
	json_t *cfg = json_load_file(path, 0, NULL);
	json_t *env = json_object_get(json_object_get(cfg, "process"), "env");
	size_t n = json_array_size(env);
	char **v = calloc(n + 1, sizeof(char *));
	for (size_t k = 0; v && k < n; k++)
		if (!(v[k] = strdup(json_string_value(json_array_get(env, k)) ?: ""))) {
			aj_strv_free(v);
			v = NULL;
		}
	json_decref(cfg);
	return v;
}

static pid_t sandbox_pid(const gv_run *g)
{
	char root[128], out[4096];
	snprintf(root, sizeof(root), "--root=%s", g->state);
	char *args[] = {(char *)g->runsc, root, "state", (char *)g->id, NULL};
	if (aj_gv_runsc_cmd_in(g->netns_fd, g->runsc, args, out, sizeof(out)) != 0)
		return 0;
	json_t *j = json_loads(out, 0, NULL);
	pid_t pid = (pid_t)json_integer_value(json_object_get(j, "pid"));
	json_decref(j);
	return pid;
}

static void create_error(aj_inst *i, int status, aj_error *err)
{
	char path[PATH_MAX];
	_cleanup_free_ char *txt = NULL;
	snprintf(path, sizeof(path), "%s/runsc.err", i->g.dir);
	(void)aj_read_file(path, &txt, NULL);
	char *last = NULL;
	for (char *s = txt, *save = NULL, *t; (t = strtok_r(s, "\n", &save)); s = NULL)
		last = t;
	aj_err(err, EIO, "runsc could not start the sandbox (status %d): %s", status,
	       last ? last : "no message");
}

static void free_inst(aj_inst *i)
{
	aj_strv_free(i->envp);
	pthread_mutex_destroy(&i->gate_mu);
	pthread_cond_destroy(&i->gate_cv);
	free(i);
}

/* Wait for `runsc run --detach` (or restore) to return: 0 once the
 * sandbox runs, else -EIO with runsc's message. */
static int wait_started(aj_inst *i, pid_t pid, aj_error *err)
{
	int st = 0;
	while (waitpid(pid, &st, 0) < 0 && errno == EINTR)
		;
	int code = WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
	if (code == 0)
		return 0;
	create_error(i, code, err);
	return -EIO;
}

/* `runsc run --detach` (or restore, with g->restore) and its wait. */
static int start_detached(aj_inst *i, gv_run *g, aj_error *err)
{
	int none[2] = {-1, -1};
	pid_t pid = aj_gv_start(g, none, true, err);
	return pid > 0 ? wait_started(i, pid, err) : (int)pid;
}

/* An image made by a level-2 snapshot holds the sandbox's memory (a
 * checkpoint) in its AJ_IMAGE_CHECKPOINT_DIR: its directory in buf, or
 * NULL (trusted only as the image's metadata says: aj_image_checkpoint_of). */
static const char *image_checkpoint(const aj_policy *p, char *buf, size_t len)
{
	return p->rootfs ? aj_image_checkpoint_of(p->rootfs, buf, len) : NULL;
}

/* err as the API's answer: status (409 conflict, 501 not_supported). */
static int refuse_as(aj_error *err, int status, int e)
{
	if (err) {
		err->status = status;
		snprintf(err->api_code, sizeof(err->api_code), "%s",
			 status == 501 ? "not_supported" : "conflict");
	}
	return -e;
}

#define GV_SHAPE "shape.json"

/* What of a bundle a restore must find as it was saved (runsc restore
 * takes the mounts and namespaces the checkpoint holds, whatever the new
 * bundle says): each mount's destination, type and options, the
 * namespaces, the user and the hostname. NULL: the bundle can't be read. */
static json_t *bundle_shape(const gv_run *g)
{
	char path[PATH_MAX];
	snprintf(path, sizeof(path), "%s/config.json", g->bundle);
	json_t *cfg = json_load_file(path, 0, NULL), *m = json_array(), *v;
	size_t k;
	json_array_foreach(json_object_get(cfg, "mounts"), k, v) json_array_append_new(
	    m, json_pack("[O,O,O]", json_object_get(v, "destination"), json_object_get(v, "type"),
			 json_object_get(v, "options")));
	json_t *shape = json_pack("{s:o,s:O,s:O,s:O}", "mounts", m, "namespaces",
				  json_object_get(json_object_get(cfg, "linux"), "namespaces"),
				  "user", json_object_get(json_object_get(cfg, "process"), "user"),
				  "hostname", json_object_get(cfg, "hostname"));
	json_decref(cfg);
	return shape;
}

/* Does the new bundle have the shape the checkpoint was saved with? */
static int same_shape(const gv_run *g, const char *ckpt, aj_error *err)
{
	char path[PATH_MAX];
	snprintf(path, sizeof(path), "%s/%s", ckpt, GV_SHAPE);
	json_t *saved = json_load_file(path, 0, NULL), *now = bundle_shape(g);
	bool same = saved && now && json_equal(saved, now);
	json_decref(saved);
	json_decref(now);
	if (same)
		return 0;
	aj_err(err, EINVAL,
	       "this sandbox's mounts, network, user or hostname differ from those of the sandbox "
	       "the saved memory was made of (a level-2 snapshot restores only into the same "
	       "shape)");
	return refuse_as(err, 409, EINVAL);
}

/* create, or (ckpt) restore from a checkpoint of a sandbox of the same
 * policy. */
static int create_inst(const aj_policy *p, const char *ckpt, aj_inst **out, aj_error *err)
{
	*out = NULL;
	aj_inst *i = calloc(1, sizeof(*i));
	if (!i)
		return aj_err(err, ENOMEM, "sandbox");
	pthread_mutex_init(&i->gate_mu, NULL);
	pthread_cond_init(&i->gate_cv, NULL);
	for (int k = 0; k < AJ_PROXY_MAX; k++)
		i->proxy[k].fd = -1;
	char saved[PATH_MAX];
	const char *from_image = ckpt ? NULL : image_checkpoint(p, saved, sizeof(saved));
	if (from_image)
		ckpt = from_image;
	gv_run *g = &i->g;
	*g = (gv_run){.etc_lock = -1,
		      .netns_fd = -1,
		      .staged = {.etc_tree = -1, .workspace = -1},
		      .persistent = true,
		      .restore = ckpt,
		      .agent = i->agent};
	i->q = *p; /* shallow: only the command differs */
	i->init_argv[0] = AJ_AGENT_PATH;
	i->init_argv[1] = "init";
	i->q.argv = i->init_argv;
	g->p = &i->q;
	int r = aj_gvisor_probe(g->runsc, sizeof(g->runsc), err);
	if (r == 0)
		r = aj_gv_find_agent(i->agent, sizeof(i->agent), err);
	if (r == 0)
		r = aj_gv_refuse_unsupported(&i->q, err);
	if (r < 0) {
		free_inst(i);
		return r;
	}
	if ((r = aj_gv_setup(g, err)) == 0)
		r = refuse(p, g->have_cg, err);
	if (r == 0 && ckpt)
		r = same_shape(g, ckpt, err);
	if (r == 0)
		r = start_detached(i, g, err);
	g->restore = NULL;
	if (r == 0 && !(i->envp = bundle_env(g)))
		r = aj_err(err, ENOMEM, "environment");
	if (r == 0 && !(i->sandbox_pid = sandbox_pid(g)))
		r = aj_err(err, ESRCH, "runsc started no sandbox");
	if (r < 0 && from_image && (r == -EIO || r == -EINVAL)) {
		aj_err_prefix(err, "the image's saved memory (a level-2 snapshot) could not be "
				   "restored");
		aj_err_hint(err, "create from it with the policy of the sandbox it was made from "
				 "(the same workspace, binds, disk and net), or with "
				 "\"isolation\": \"process\" for its files only");
		err->status = 409;
		snprintf(err->api_code, sizeof(err->api_code), "%s", "conflict");
	}
	if (r < 0) {
		aj_gv_teardown(g);
		free_inst(i);
		return r;
	}
	*out = i;
	return 0;
}

static int gv_create(const aj_policy *p, const char *source, aj_inst **out, aj_error *err)
{
	(void)source;
	return create_inst(p, NULL, out, err);
}

static int gv_restore(const aj_policy *p, const char *source, const char *ckpt, aj_inst **out,
		      aj_error *err)
{
	(void)source;
	return create_inst(p, ckpt, out, err);
}

/* What a checkpoint of i cannot copy. */
static int checkpoint_refuse(aj_inst *i, aj_error *err)
{
	const aj_policy *p = &i->q;
	bool rw = p->workspace != NULL;
	for (size_t k = 0; k < p->n_binds; k++)
		rw = rw || p->binds[k].writable;
	if (rw) {
		aj_err(err, EBUSY,
		       "a gVisor sandbox with a workspace or an rw bind cannot be forked or "
		       "snapshotted: the copies would share its host directory, which gVisor's "
		       "saved view of its files cannot follow");
		aj_err_hint(err, "copy a sandbox without them (put files in with the files "
				 "API), or use \"isolation\": \"process\"");
		return refuse_as(err, 409, EBUSY);
	}
	if (i->paused) {
		aj_err(err, EBUSY,
		       "sandbox is paused: runsc checkpoint (fork, snapshot) refuses a paused "
		       "container");
		aj_err_hint(err, "resume it (POST .../resume) first");
		return refuse_as(err, 409, EBUSY);
	}
	return 0;
}

/* The checkpoint of i into dir (runsc stops the container), then i
 * restored from it in place: the same id, directory, cgroup and bundle. */
static int save_and_restart(aj_inst *i, const char *dir, aj_error *err)
{
	gv_run *g = &i->g;
	char root[128], image[PATH_MAX + 16];
	snprintf(root, sizeof(root), "--root=%s", g->state);
	snprintf(image, sizeof(image), "--image-path=%s", dir);
	char *save[] = {g->runsc, root, "checkpoint", image, g->id, NULL};
	char msg[2048] = "";
	int st = aj_gv_runsc_cmd_fd(g->netns_fd, g->runsc, save, msg, sizeof(msg), 2);
	if (st != 0) { /* runsc's last line says why */
		char *last = NULL;
		for (char *s = msg, *sv = NULL, *t; (t = strtok_r(s, "\n", &sv)); s = NULL)
			last = t;
		return aj_err(err, EIO, "runsc checkpoint failed (status %d): %s", st,
			      last ? last : "no message");
	}
	/* the container is stopped now, its processes gone: restored under a
	 * new id (a runsc delete of the stopped one takes ~1.3 s here; its
	 * record goes with the directory, and the crash sweep's cgroup kill
	 * and directory removal find the restored one as they found it) */
	aj_gv_new_id(g);
	aj_gv_kill_cgroup(g);
	int r = aj_gv_restage_etc(g, err);
	g->restore = dir;
	if (r == 0)
		r = start_detached(i, g, err);
	g->restore = NULL;
	i->sandbox_pid = r == 0 ? sandbox_pid(g) : 0;
	if (r == 0 && !i->sandbox_pid)
		r = aj_err(err, ESRCH, "runsc restored no sandbox");
	if (r < 0)
		aj_err_prefix(err, "the sandbox was saved but could not be restarted (it is "
				   "stopped now)");
	return r;
}

static int gv_checkpoint(aj_inst *i, char **ckpt, aj_error *err)
{
	*ckpt = NULL;
	int r = checkpoint_refuse(i, err);
	if (r < 0)
		return r;
	pthread_mutex_lock(&i->gate_mu);
	unsigned busy = i->busy;
	if (!busy)
		i->saving = true;
	pthread_mutex_unlock(&i->gate_mu);
	if (busy) {
		aj_err(err, EBUSY,
		       "%u command%s, file operation%s or ports-proxy connection%s running in "
		       "the sandbox: runsc checkpoint cannot save what runsc exec connects to "
		       "the host",
		       busy, busy == 1 ? "" : "s", busy == 1 ? "" : "s",
		       busy == 1 ? " is" : "s are");
		aj_err_hint(
		    err, "fork or snapshot when they have ended (a background process: kill it, or "
			 "start it detached, e.g. `nohup CMD >/tmp/log 2>&1 &`)");
		return refuse_as(err, 409, EBUSY);
	}
	char dir[PATH_MAX];
	snprintf(dir, sizeof(dir), "%s/checkpoint-XXXXXX", i->g.dir);
	bool made = mkdtemp(dir) != NULL;
	r = made ? save_and_restart(i, dir, err)
		 : aj_err(err, errno, "cannot create a directory for the checkpoint");
	if (r == 0) {
		char shape[PATH_MAX + 16];
		snprintf(shape, sizeof(shape), "%s/%s", dir, GV_SHAPE);
		json_t *j = bundle_shape(&i->g);
		if (!j || json_dump_file(j, shape, JSON_COMPACT) < 0)
			r = aj_err(err, EIO, "cannot write the checkpoint's %s", GV_SHAPE);
		json_decref(j);
	}
	if (r == 0 && !(*ckpt = strdup(dir)))
		r = aj_err(err, ENOMEM, "checkpoint");
	if (r < 0 && made)
		(void)aj_rm_tree_at(AT_FDCWD, dir, 4);
	pthread_mutex_lock(&i->gate_mu);
	i->saving = false;
	pthread_cond_broadcast(&i->gate_cv);
	pthread_mutex_unlock(&i->gate_mu);
	return r;
}

static void gv_checkpoint_drop(char *ckpt)
{
	if (ckpt && aj_startswith(ckpt, GV_BOX_PREFIX))
		(void)aj_rm_tree_at(AT_FDCWD, ckpt, 4);
	free(ckpt);
}

/* Field 22 of /proc/PID/stat: when it started (clock ticks after boot). */

static json_t *gv_state(aj_inst *i)
{
	gv_run *g = &i->g;
	json_t *cgs = json_array(), *pids = json_array();
	for (int k = 0; g->have_cg && k < g->cg.n; k++) {
		json_array_append_new(cgs, json_string(g->cg.dirs[k].path));
		char path[PATH_MAX + 16];
		_cleanup_free_ char *procs = NULL;
		snprintf(path, sizeof(path), "%s/cgroup.procs", g->cg.dirs[k].path);
		if (aj_read_file(path, &procs, NULL) < 0)
			continue;
		for (char *s = procs, *save = NULL, *t; (t = strtok_r(s, "\n", &save)); s = NULL) {
			pid_t pid = (pid_t)atoi(t);
			unsigned long long st = aj_pid_start_time(pid);
			if (pid > 1 && st)
				json_array_append_new(pids, json_pack("{s:i,s:I}", "pid", (int)pid,
								      "start", (json_int_t)st));
		}
	}
	/* --allow's netd is not in the cgroup */
	if (g->net.netd > 0 && aj_pid_start_time(g->net.netd))
		json_array_append_new(pids, json_pack("{s:i,s:I}", "pid", (int)g->net.netd, "start",
						      (json_int_t)aj_pid_start_time(g->net.netd)));
	if (!g->have_cg && i->sandbox_pid > 0)
		json_array_append_new(pids,
				      json_pack("{s:i,s:I}", "pid", (int)i->sandbox_pid, "start",
						(json_int_t)aj_pid_start_time(i->sandbox_pid)));
	json_t *st =
	    json_pack("{s:s,s:s,s:s,s:s,s:s,s:o,s:o}", "backend", "gvisor", "runsc", g->runsc,
		      "root", g->state, "id", g->id, "dir", g->dir, "cgroups", cgs, "pids", pids);
	/* the host's side of --net open/--allow: the veth and the nft table */
	if (st && (g->net.link_made || g->net.table_made))
		json_object_set_new(st, "net",
				    json_pack("{s:s,s:s}", "table",
					      g->net.table_made ? g->net.table : "", "link",
					      g->net.link_made ? g->net.host_if : ""));
	return st;
}

/* A path that is one of ours by its shape: below prefix, one component. */
static bool ours(const char *path, const char *prefix)
{
	return path && aj_startswith(path, prefix) && !strchr(path + strlen(prefix), '/') &&
	       !strstr(path, "..");
}

/* The recorded veth and nft table (names of agentjail's shape only). */
static void sweep_net(json_t *net)
{
	const char *table = json_string_value(json_object_get(net, "table"));
	const char *link = json_string_value(json_object_get(net, "link"));
	aj_net n = {.slot_fd = -1, .netd_stop = -1};
	if (table && aj_startswith(table, "agentjail-") && strlen(table) < sizeof(n.table)) {
		snprintf(n.table, sizeof(n.table), "%s", table);
		n.table_made = true;
	}
	if (link && aj_startswith(link, "aj") && strlen(link) < sizeof(n.host_if)) {
		snprintf(n.host_if, sizeof(n.host_if), "%s", link);
		n.link_made = true;
	}
	if (n.table_made || n.link_made)
		aj_net_teardown(&n);
}

static void gv_sweep(json_t *state)
{
	const char *runsc = json_string_value(json_object_get(state, "runsc"));
	const char *root = json_string_value(json_object_get(state, "root"));
	const char *id = json_string_value(json_object_get(state, "id"));
	const char *dir = json_string_value(json_object_get(state, "dir"));
	if (!runsc || !root || !id || !dir || !ours(dir, GV_BOX_PREFIX) ||
	    !aj_startswith(id, "agentjail-"))
		return;
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
	char lock[PATH_MAX], rootarg[PATH_MAX + 16];
	snprintf(lock, sizeof(lock), "%s/%s_sandbox:%s.state", root, id, id);
	snprintf(rootarg, sizeof(rootarg), "--root=%s", root);
	struct stat st;
	if (aj_startswith(root, dir) && stat(lock, &st) == 0) {
		char *args[] = {(char *)runsc, rootarg, "delete", "--force", (char *)id, NULL};
		(void)aj_gv_runsc_cmd(runsc, args, NULL, 0);
	}
	/* the cgroups it recorded: whatever is left in them, then them */
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
	sweep_net(json_object_get(state, "net"));
	if (lstat(dir, &st) == 0 && S_ISDIR(st.st_mode) && st.st_uid == geteuid())
		(void)aj_rm_tree_at(AT_FDCWD, dir, 64);
	aj_protect_sweep();
}

static void gv_kill(aj_inst *i)
{
	aj_gv_runsc_signal(&i->g, "KILL");
	aj_gv_kill_cgroup(&i->g);
	i->killed = true;
}

static void gv_destroy(aj_inst *i)
{
	if (!i)
		return;
	aj_gvbox_ports_close(i); /* the ports proxy's relays end first */
	aj_gv_teardown(&i->g);
	free_inst(i);
}

static void gv_info(aj_inst *i, aj_inst_info *out)
{
	memset(out, 0, sizeof(*out));
	out->uid = i->g.idm.host_base;
	out->gid = i->g.idm.host_base;
	out->pid = i->sandbox_pid;
	out->limits_missing = i->g.have_cg ? i->g.cg.missing : 0;
	out->holder = i->sandbox_pid; /* runsc's sandbox process (the audit's "keeper") */
	out->alive = i->sandbox_pid > 0 && kill(i->sandbox_pid, 0) == 0;
}

/* A pooled sandbox's hand-out (AJ_CAP_UPDATE): the cgroup's memory and
 * pids (the host's ceiling for --pids, as at create) and CPU; env and
 * secrets for later commands (the agent's exec request carries the env,
 * redaction reads the policy). RLIMIT_NPROC inside is config.json's and
 * the agent can only lower it (per command): a higher --pids, like a
 * --disk (the Sentry's tmpfs sizes are fixed at its start), is refused,
 * and the pool builds a fresh sandbox instead. */
static int gv_update(aj_inst *i, const aj_policy *p, unsigned what, aj_error *err)
{
	gv_run *g = &i->g;
	if (what & AJ_UPDATE_DISK)
		return aj_err(err, ENOTSUP,
			      "isolation 'gvisor' cannot resize a live sandbox's writable space");
	if ((what & AJ_UPDATE_LIMITS) && (!p->pids || p->pids > i->q.pids))
		return aj_err(err, ENOTSUP,
			      "isolation 'gvisor' cannot raise a live sandbox's pids limit");
	if ((what & (AJ_UPDATE_LIMITS | AJ_UPDATE_CPU)) && !g->have_cg)
		return aj_err(err, ENOENT, "no cgroup to change the limits in");
	int r = 0;
	if (what & AJ_UPDATE_LIMITS) {
		aj_policy q = *p; /* shallow: the host's pids ceiling differs */
		q.pids = aj_gv_host_pids(p->pids);
		r = aj_cgroup_update_limits(&g->cg, &q, err);
	}
	if (r == 0 && (what & AJ_UPDATE_CPU))
		r = aj_cgroup_update_cpu(&g->cg, p->cpu_millis, err);
	if (r < 0)
		return r;
	char **env = aj_policy_build_env(p, NULL, i->envp);
	if (!env)
		return aj_err(err, ENOMEM, "environment");
	aj_strv_free(i->envp);
	i->envp = env;
	i->q = *p; /* the commands' policy (redaction, rlimits, cwd): shallow */
	i->q.argv = i->init_argv;
	return 0;
}

static int gv_pause(aj_inst *i, bool pause, aj_error *err)
{
	char root[128], msg[512] = "";
	snprintf(root, sizeof(root), "--root=%s", i->g.state);
	char *args[] = {i->g.runsc, root, pause ? "pause" : "resume", i->g.id, NULL};
	int r = aj_gv_runsc_cmd_in(i->g.netns_fd, i->g.runsc, args, msg, sizeof(msg));
	if (r != 0)
		return aj_err(err, EIO, "runsc %s failed (status %d)", pause ? "pause" : "resume",
			      r);
	i->paused = pause;
	return 0;
}

static unsigned long long cg_value(const gv_run *g, const char *ctrl, const char *file,
				   const char *key)
{
	for (int k = 0; k < g->cg.n; k++) {
		if (strcmp(g->cg.dirs[k].ctrl, ctrl))
			continue;
		char path[PATH_MAX + 32];
		_cleanup_free_ char *txt = NULL;
		snprintf(path, sizeof(path), "%s/%s", g->cg.dirs[k].path, file);
		if (aj_read_file(path, &txt, NULL) < 0)
			return 0;
		const char *s = key ? strstr(txt, key) : txt;
		return s ? strtoull(s + (key ? strlen(key) : 0), NULL, 10) : 0;
	}
	return 0;
}

static int gv_stats(aj_inst *i, aj_inst_stats *out, aj_error *err)
{
	memset(out, 0, sizeof(*out));
	gv_run *g = &i->g;
	if (!g->have_cg)
		return aj_err(err, ENOTSUP, "no cgroup: the sandbox's use is not known");
	bool v2 = g->cg.n > 0 && g->cg.dirs[0].version == 2;
	const char *mem = v2 ? "unified" : "memory", *cpu = v2 ? "unified" : "cpuacct";
	out->memory_bytes = cg_value(g, mem, v2 ? "memory.current" : "memory.usage_in_bytes", NULL);
	out->memory_peak_bytes = aj_cgroup_peak_memory(&g->cg);
	out->pids = cg_value(g, v2 ? "unified" : "pids", "pids.current", NULL);
	out->cpu_usec = v2 ? cg_value(g, cpu, "cpu.stat", "usage_usec ")
			   : cg_value(g, cpu, "cpuacct.usage", NULL) / 1000;
	return 0;
}

/* A host pty: the command's terminal is one the agent opens inside (in
 * gVisor's devpts); this pair carries its input (written to the master)
 * and its window size (TIOCSWINSZ on the master) there. */
static int gv_open_pty(aj_inst *i, int pty[2], aj_error *err)
{
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

static int gv_run_once(const aj_policy *p, const aj_run_hooks *hooks, aj_run_result *res,
		       aj_error *err)
{
	return aj_gvisor_run(p, hooks, res, err);
}

static int gv_probe(aj_error *err)
{
	char path[PATH_MAX];
	return aj_gvisor_probe(path, sizeof(path), err);
}

const aj_backend aj_backend_gvisor = {
    .name = "gvisor",
    .level = AJ_ISO_GVISOR,
    /* AJ_CAP_HOST_RW: the agent puts every command under the setid filter
     * (agent.c) that runsc exec does not give it */
    .caps = AJ_CAP_PTY | AJ_CAP_FILES | AJ_CAP_PAUSE | AJ_CAP_HOST_RW | AJ_CAP_UPDATE |
	    AJ_CAP_FORK | AJ_CAP_SNAPSHOT | AJ_CAP_PORTS,
    .probe = gv_probe,
    .run = gv_run_once,
    .create = gv_create,
    .state = gv_state,
    .sweep = gv_sweep,
    .kill = gv_kill,
    .destroy = gv_destroy,
    .info = gv_info,
    .exec_start = aj_gvbox_exec_start,
    .exec_wait = aj_gvbox_exec_wait,
    .exec_abandon = aj_gvbox_exec_abandon,
    .open_pty = gv_open_pty,
    .pause = gv_pause,
    .update = gv_update,
    .stats = gv_stats,
    .file_read = aj_gvbox_file_read,
    .file_write = aj_gvbox_file_write,
    .file_stat = aj_gvbox_file_stat,
    .file_list = aj_gvbox_file_list,
    .file_remove = aj_gvbox_file_remove,
    .file_mkdir = aj_gvbox_file_mkdir,
    .checkpoint = gv_checkpoint,
    .restore = gv_restore,
    .checkpoint_drop = gv_checkpoint_drop,
    .port_connect = aj_gvbox_port_connect,
};
