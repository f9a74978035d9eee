/* SPDX-License-Identifier: MIT */
/* Level 4 behind the seam (backend.h): each command is node running
 * runtime/runner.mjs in a level-1 sandbox (the process backend), which
 * runs the WebAssembly module, python3 (Pyodide) or node (QuickJS). The
 * policy handed to level 1 is the caller's with the runtime directory
 * bound read-only at AJ_WASM_DEST, no terminal, and the user's
 * environment moved to the runner's arguments: node reads NODE_OPTIONS
 * and friends from its own environment, which would run code outside the
 * WebAssembly wall. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "backend_process.h"
#include "sandbox.h"
#include "util.h"
#include "wasm.h"

static bool is_file(const char *path, int mode)
{
	struct stat st;
	return stat(path, &st) == 0 && S_ISREG(st.st_mode) && access(path, mode) == 0;
}

/* the runtime directory: $AGENTJAIL_WASM_DIR, the source tree's when this
 * program runs from its build directory, else the installed one */
static const char *rt_dir(char *buf, size_t len)
{
	const char *d = getenv("AGENTJAIL_WASM_DIR");
	if (d && *d)
		return d;
#ifdef AJ_WASM_BUILD_DIR
	char self[PATH_MAX];
	ssize_t n = readlink("/proc/self/exe", self, sizeof(self) - 1);
	if (n > 0) {
		self[n] = '\0';
		char *slash = strrchr(self, '/');
		if (slash && (*slash = '\0', !strcmp(self, AJ_WASM_BUILD_DIR)))
			return AJ_WASM_SOURCE_DIR;
	}
#endif
	snprintf(buf, len, "%s/wasm", AJ_LIBEXECDIR);
	return buf;
}

int aj_wasm_rt_find(aj_wasm_rt *rt, aj_error *err)
{
	memset(rt, 0, sizeof(*rt));
	/* the sandbox sees the host's /usr: node must be there */
	static const char *const nodes[] = {"/usr/bin/node", "/usr/local/bin/node",
					    "/usr/bin/nodejs"};
	for (size_t i = 0; i < AJ_ARRAY_SIZE(nodes) && !rt->node[0]; i++)
		if (is_file(nodes[i], X_OK))
			snprintf(rt->node, sizeof(rt->node), "%s", nodes[i]);
	if (!rt->node[0]) {
		aj_err(err, ENOENT, "--isolation wasm: Node.js (node) is not installed");
		aj_err_hint(err, "install Node.js 20 or later (apt-get install nodejs), or run "
				 "scripts/setup.sh");
		err->exit = AJ_EXIT_INTERNAL;
		return -ENOENT;
	}
	char buf[PATH_MAX], runner[PATH_MAX + 16];
	const char *d = rt_dir(buf, sizeof(buf));
	if (!realpath(d, rt->dir) ||
	    (snprintf(runner, sizeof(runner), "%s/runner.mjs", rt->dir), !is_file(runner, R_OK))) {
		aj_err(err, ENOENT, "--isolation wasm: the runtime's runner.mjs is not in %s", d);
		aj_err_hint(err, "install agentjail with its wasm runtime, or name its directory "
				 "with AGENTJAIL_WASM_DIR (src/backend/wasm/runtime)");
		err->exit = AJ_EXIT_INTERNAL;
		return -ENOENT;
	}
	return 0;
}

/* What level 4 cannot do, refused before anything starts (exit 125). */
static int check_policy(const aj_policy *p, aj_error *err)
{
	const char *what = NULL, *why = NULL;
	if (p->net != AJ_NET_NONE || p->n_publish)
		what = "--net open, --allow and --publish",
		why = "a WebAssembly module has no sockets (WASI preview 1)";
	else if (p->rootfs)
		what = "--rootfs and --image", why = "the runtime runs from the host's /usr";
	else if (p->tty == AJ_TTY_ALWAYS)
		what = "--tty", why = "a module's stdio are pipes";
	if (what) {
		aj_err(err, ENOTSUP, "--isolation wasm does not take %s: %s", what, why);
		aj_err_hint(err, "use --isolation process for it (docs/levels.md)");
		err->exit = AJ_EXIT_INTERNAL;
		err->status = 501; /* the API: what a level lacks */
		snprintf(err->api_code, sizeof(err->api_code), "%s", "not_supported");
		return -ENOTSUP;
	}
	if (p->memory && p->memory < AJ_WASM_MIN_MEMORY) {
		aj_err(err, EINVAL,
		       "--isolation wasm: --memory %llu MiB is too small: the runtime (node) "
		       "needs %llu MiB of it",
		       p->memory >> 20, AJ_WASM_RESERVE >> 20);
		aj_err_hint(err, "give --memory %llum or more", AJ_WASM_MIN_MEMORY >> 20);
		err->exit = AJ_EXIT_INTERNAL;
		err->status = 400;
		snprintf(err->api_code, sizeof(err->api_code), "%s", "bad_request");
		return -EINVAL;
	}
	return 0;
}

/* node's command line: the runner, the limits, the command's environment
 * and what it sees (docs/levels.md). */
static char **runner_argv(const aj_wasm_rt *rt, const aj_policy *p, char *const *argv,
			  char *const *env, bool bridge)
{
	size_t n_argv = 0, n_env = 0;
	while (argv && argv[n_argv])
		n_argv++;
	while (env && env[n_env])
		n_env++;
	size_t cap = 16 + 2 * (p->n_env + n_env + p->n_binds) + n_argv, n = 0;
	char **v = calloc(cap, sizeof(char *));
	if (!v)
		return NULL;
#define ADD(s)                                                                                     \
	do {                                                                                       \
		if (!(v[n++] = (s)))                                                               \
			goto fail;                                                                 \
	} while (0)
	ADD(strdup(rt->node));
	ADD(strdup("--disable-warning=ExperimentalWarning"));
	/* V8's concurrent marking aborts node 20 here after a WASI module grew
	 * its memory (docs/levels.md); and no eval for what Pyodide reaches */
	ADD(strdup("--single-threaded-gc"));
	ADD(strdup("--disallow-code-generation-from-strings"));
	unsigned long long lin = p->memory ? p->memory - AJ_WASM_RESERVE : 0;
	if (lin)
		ADD(aj_asprintf("--wasm-max-mem-pages=%llu", lin >> 16));
	ADD(strdup(AJ_WASM_DEST "/runner.mjs"));
	if (lin) {
		ADD(strdup("--memory-bytes"));
		ADD(aj_asprintf("%llu", lin & ~0xffffULL));
	}
	for (size_t i = 0; i < p->n_env; i++) {
		ADD(strdup("--env"));
		ADD(strdup(p->env[i]));
	}
	for (size_t i = 0; i < n_env; i++) {
		ADD(strdup("--env"));
		ADD(strdup(env[i]));
	}
	for (size_t i = 0; i < p->n_binds; i++) {
		ADD(strdup("--preopen"));
		ADD(strdup(p->binds[i].dest));
	}
	if (bridge) /* the code interpreter's, not a command (code.mjs) */
		ADD(strdup("--code-bridge"));
	ADD(strdup("--"));
	for (size_t i = 0; i < n_argv; i++)
		ADD(strdup(argv[i]));
#undef ADD
	v[n] = NULL;
	return v;
fail:
	aj_strv_free(v);
	return NULL;
}

/* p as level 1 runs it: lp is a shallow copy (p's strings, borrowed) with
 * one more bind, whose source is rt's. */
static int level1_policy(const aj_policy *p, const aj_wasm_rt *rt, aj_policy *lp, aj_error *err)
{
	if (p->n_binds >= AJ_MAX_BINDS)
		return aj_err(err, E2BIG, "--isolation wasm: at most %d binds", AJ_MAX_BINDS - 1);
	*lp = *p;
	lp->isolation = AJ_ISO_PROCESS;
	lp->n_env = 0; /* the runner's arguments */
	lp->tty = AJ_TTY_NEVER;
	lp->binds[lp->n_binds++] =
	    (aj_bind){.src = (char *)rt->dir, .dest = (char *)AJ_WASM_DEST, .writable = false};
	return 0;
}

static int wasm_probe(aj_error *err)
{
	aj_wasm_rt rt;
	return aj_wasm_rt_find(&rt, err);
}

static int wasm_run(const aj_policy *p, const aj_run_hooks *hooks, aj_run_result *res,
		    aj_error *err)
{
	aj_wasm_rt rt;
	int r = aj_wasm_rt_find(&rt, err);
	if (r < 0 || (r = check_policy(p, err)) < 0)
		return r;
	_cleanup_free_ aj_policy *lp = malloc(sizeof(*lp));
	if (!lp)
		return aj_err(err, ENOMEM, "policy");
	if ((r = level1_policy(p, &rt, lp, err)) < 0)
		return r;
	char **argv = runner_argv(&rt, p, p->argv, NULL, false);
	if (!argv)
		return aj_err(err, ENOMEM, "the runtime's command line");
	lp->argv = argv;
	r = aj_backend_process.run(lp, hooks, res, err);
	aj_strv_free(argv);
	return r;
}

/* A sandbox that lives across commands: a level-1 one, each exec the
 * runner. */
struct aj_inst {
	const aj_policy *p; /* the caller's (borrowed, outlives it) */
	aj_policy lp;	    /* level 1's (level1_policy) */
	aj_wasm_rt rt;
	aj_inst *box; /* the process backend's */
};

/* The keeper rebuilds level 1's policy from JSON (box.h): the caller's,
 * with the runtime's bind and without the environment. */
static char *level1_source(const char *source, const aj_wasm_rt *rt, aj_error *err)
{
	json_error_t je;
	json_t *j = json_loads(source, JSON_REJECT_DUPLICATES, &je);
	if (!j || !json_is_object(j)) {
		json_decref(j);
		aj_err(err, EINVAL, "the sandbox's policy: %s", je.text);
		return NULL;
	}
	json_t *ro = json_object_get(j, "ro"), *list = json_array();
	if (json_is_string(ro))
		json_array_append(list, ro);
	else if (json_is_array(ro))
		json_array_extend(list, ro);
	_cleanup_free_ char *bind = aj_asprintf("%s:%s", rt->dir, AJ_WASM_DEST);
	char *out = NULL;
	if (bind && json_array_append_new(list, json_string(bind)) == 0 &&
	    json_object_set_new(j, "ro", list) == 0 &&
	    json_object_set_new(j, "isolation", json_string("process")) == 0) {
		json_object_del(j, "env");
		out = json_dumps(j, JSON_COMPACT);
	} else {
		json_decref(list);
	}
	json_decref(j);
	if (!out)
		aj_err(err, ENOMEM, "the sandbox's policy");
	return out;
}

static int wasm_create(const aj_policy *p, const char *source, aj_inst **out, aj_error *err)
{
	aj_inst *i = calloc(1, sizeof(*i));
	if (!i)
		return aj_err(err, ENOMEM, "sandbox");
	i->p = p;
	int r = aj_wasm_rt_find(&i->rt, err);
	if (r == 0)
		r = check_policy(p, err);
	if (r == 0)
		r = level1_policy(p, &i->rt, &i->lp, err);
	_cleanup_free_ char *src = r == 0 ? level1_source(source, &i->rt, err) : NULL;
	if (r == 0 && !src)
		r = -ENOMEM;
	if (r == 0)
		r = aj_backend_process.create(&i->lp, src, &i->box, err);
	if (r < 0) {
		free(i);
		return r;
	}
	*out = i;
	return 0;
}

static json_t *wasm_state(aj_inst *i)
{
	return aj_backend_process.state(i->box);
}

static void wasm_sweep(json_t *state)
{
	aj_backend_process.sweep(state);
}

static void wasm_kill(aj_inst *i)
{
	aj_backend_process.kill(i->box);
}

static void wasm_destroy(aj_inst *i)
{
	if (!i)
		return;
	aj_backend_process.destroy(i->box);
	free(i);
}

static void wasm_info(aj_inst *i, aj_inst_info *out)
{
	aj_backend_process.info(i->box, out);
	out->warm = NULL;
}

static aj_job *runner_start(aj_inst *i, const aj_exec_spec *spec, const aj_exec_io *io, bool bridge)
{
	char **argv = runner_argv(&i->rt, i->p, bridge ? NULL : spec->argv, spec->env, bridge);
	if (!argv)
		return NULL;
	aj_exec_spec s = *spec;
	s.argv = argv;
	s.env = NULL;
	aj_job *j = aj_backend_process.exec_start(i->box, &s, io);
	aj_strv_free(argv);
	return j;
}

static aj_job *wasm_exec_start(aj_inst *i, const aj_exec_spec *spec, const aj_exec_io *io)
{
	return runner_start(i, spec, io, false);
}

/* the code interpreter: runner.mjs --code-bridge (code.mjs), Python
 * contexts on Pyodide, each a worker thread of that one node */
static aj_job *wasm_code_start(aj_inst *i, const aj_exec_spec *spec, const aj_exec_io *io)
{
	return runner_start(i, spec, io, true);
}

static int wasm_exec_wait(aj_job *j, aj_run_result *res, aj_error *err)
{
	return aj_backend_process.exec_wait(j, res, err);
}

static void wasm_exec_abandon(aj_job *j)
{
	aj_backend_process.exec_abandon(j);
}

static int wasm_pause(aj_inst *i, bool pause, aj_error *err)
{
	return aj_backend_process.pause(i->box, pause, err);
}

static int wasm_stats(aj_inst *i, aj_inst_stats *out, aj_error *err)
{
	return aj_backend_process.stats(i->box, out, err);
}

static int wasm_root_fd(aj_inst *i, aj_error *err)
{
	return aj_backend_process.root_fd(i->box, err);
}

const aj_backend aj_backend_wasm = {
    .name = "wasm",
    .level = AJ_ISO_WASM,
    /* the files API through level 1's root (a module uploaded to
     * /workspace), pause and a workspace; no terminal, snapshots, forks,
     * warm interpreters or live changes */
    .caps = AJ_CAP_FILES | AJ_CAP_ROOT_FD | AJ_CAP_PAUSE | AJ_CAP_HOST_RW,
    .probe = wasm_probe,
    .run = wasm_run,
    .create = wasm_create,
    .state = wasm_state,
    .sweep = wasm_sweep,
    .kill = wasm_kill,
    .destroy = wasm_destroy,
    .info = wasm_info,
    .exec_start = wasm_exec_start,
    .exec_wait = wasm_exec_wait,
    .exec_abandon = wasm_exec_abandon,
    .code_start = wasm_code_start,
    .pause = wasm_pause,
    .stats = wasm_stats,
    .root_fd = wasm_root_fd,
};

void aj_wasm_doctor(aj_check *c)
{
	memset(c, 0, sizeof(*c));
	c->name = "level 4: wasm";
	aj_wasm_rt rt;
	aj_error err;
	aj_err_clear(&err);
	if (aj_wasm_rt_find(&rt, &err) < 0) {
		c->status = AJ_CHECK_WARN;
		snprintf(c->detail, sizeof(c->detail), "not usable: %s", err.msg);
		snprintf(c->fix, sizeof(c->fix), "%s", err.hint);
		return;
	}
	/* the interpreters are optional: .wasm modules need only node */
	char py[PATH_MAX + 64], js[PATH_MAX + 96];
	snprintf(py, sizeof(py), "%s/node_modules/pyodide/pyodide.asm.wasm", rt.dir);
	snprintf(js, sizeof(js), "%s/node_modules/@jitl/quickjs-wasmfile-release-sync/package.json",
		 rt.dir);
	bool have_py = is_file(py, R_OK), have_js = is_file(js, R_OK);
	snprintf(c->detail, sizeof(c->detail),
		 "usable: %s with node:wasi inside a level-1 sandbox, runtime %s; python3 "
		 "(Pyodide) %s, node (QuickJS) %s",
		 rt.node, rt.dir, have_py ? "yes" : "missing", have_js ? "yes" : "missing");
	if (!have_py || !have_js) {
		c->status = AJ_CHECK_WARN;
		snprintf(c->fix, sizeof(c->fix),
			 "npm ci in %s (scripts/setup.sh does it) for python3 and node", rt.dir);
	}
}
