/* SPDX-License-Identifier: MIT */
/* The service's sandboxes: create, find, expire, destroy; a state file per
 * live sandbox so that a killed service's residue is removed at the next
 * start. */
#include "registry.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/random.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "audit.h"
#include "backends.h"
#include "metrics.h"
#include "image.h"
#include "mint.h"
#include "mintrec.h"
#include "nft.h"
#include "sysfilter.h"
#include "tenant.h"
#include "threads.h"
#include "util.h"

static pthread_mutex_t reg_mu = PTHREAD_MUTEX_INITIALIZER;
static aj_sandbox **reg;
static size_t reg_n, reg_cap;
static char state_dir[PATH_MAX];
static char minted_dir[PATH_MAX];     /* what each sandbox's mint hook made (no values) */
static char old_minted_dir[PATH_MAX]; /* --state-dir/minted: an older agentjail's, swept */
static unsigned reg_max;
static const char *reg_mint;

void aj_registry_set_mint(const char *cmd)
{
	reg_mint = cmd;
}
static char node_name[AJ_NODE_NAME_MAX + 1]; /* --node: the end of every id */

long long aj_now_ms(void)
{
	struct timespec t;
	clock_gettime(CLOCK_REALTIME, &t);
	return (long long)t.tv_sec * 1000 + t.tv_nsec / 1000000;
}

bool aj_node_name_valid(const char *name, const char **why)
{
	size_t n = strlen(name);
	const char *w = NULL;
	if (n == 0 || n > AJ_NODE_NAME_MAX)
		w = "it must be 1 to 63 characters";
	else if (strspn(name, "abcdefghijklmnopqrstuvwxyz0123456789-") != n)
		w = "only a-z, 0-9 and '-' may be in it";
	else if (name[0] == '-' || name[n - 1] == '-')
		w = "it may neither start nor end with '-'";
	if (w && why)
		*why = w;
	return !w;
}

void aj_registry_init(const char *dir, unsigned max, const char *node)
{
	snprintf(state_dir, sizeof(state_dir), "%s/sandboxes", dir);
	/* beside the runs' records, in the state that outlives a reboot (an
	 * --state-dir such as /run/agentjail does not: a machine that went
	 * down would leave its minted credentials unrevoked) */
	snprintf(minted_dir, sizeof(minted_dir), "%s/minted", aj_state_dir());
	snprintf(old_minted_dir, sizeof(old_minted_dir), "%s/minted", dir);
	snprintf(node_name, sizeof(node_name), "%s", node ? node : "");
	reg_max = max;
}

static void state_path(const char *id, char *buf, size_t len)
{
	snprintf(buf, len, "%s/%s.json", state_dir, id);
}

/* What the next start needs to clean up should this service be killed:
 * the backend's record (backend.h) and which backend it is. */
static void state_write(const aj_sandbox *sb)
{
	json_t *o = sb->be->state(sb->inst);
	char path[PATH_MAX];
	state_path(sb->id, path, sizeof(path));
	if (o && json_object_set_new(o, "sandbox", json_string(sb->id)) == 0 &&
	    json_object_set_new(o, "isolation", json_string(sb->be->name)) == 0)
		json_dump_file(o, path, JSON_COMPACT);
	json_decref(o);
}

static void sweep_one(const char *path)
{
	json_t *o = json_load_file(path, 0, NULL);
	const char *iso = json_string_value(json_object_get(o, "isolation"));
	aj_policy p;
	aj_policy_init(&p);
	/* records from before the seam name no level: level 1's */
	if (o && aj_policy_set_isolation(&p, iso ? iso : "process", NULL) == 0 &&
	    aj_backend_of(p.isolation))
		aj_backend_of(p.isolation)->sweep(o);
	aj_policy_free(&p);
	json_decref(o);
	unlink(path);
}

/* The record of what the mint hook makes for sandbox id (mintrec.h),
 * written before it runs and removed once revoked: a killed service's
 * next start revokes what it names (aj_registry_revoke_lost_start). */
static int minted_write(const aj_sandbox *sb, bool only_minted, aj_error *err)
{
	int r = aj_mkdir_p(aj_state_dir(), 0755);
	if (r < 0 && r != -EEXIST) {
		aj_err(err, -r,
		       "cannot make the state directory %s (the records of minted secrets)",
		       aj_state_dir());
		aj_err_hint(err, "set AGENTJAIL_STATE_DIR to a directory of the service's user "
				 "(not writable by others) that outlives a reboot");
		return r;
	}
	return aj_mintrec_write(minted_dir, sb->id, &sb->policy, only_minted, reg_mint, 0, err);
}

static void sweep_say(void *ctx, const char *msg)
{
	(void)ctx;
	aj_log("error", "agentjail serve: ", "%s", msg);
}

static void sweep_event(void *ctx, const char *ev, json_t *o)
{
	(void)ctx;
	aj_audit(ev, o);
}

static pthread_t sweep_thread;
static bool sweep_started;
static int sweep_stop; /* set (atomically) at the service's stop */

/* The records whose owner is gone, of the service's sandboxes and of runs
 * (one directory), and those an older version kept in the --state-dir */
static void *revoke_lost(void *arg)
{
	(void)arg;
	aj_mintrec_out out = {sweep_say, sweep_event, NULL, NULL, &sweep_stop};
	int left = aj_mintrec_sweep(minted_dir, reg_mint, &out);
	if (strcmp(old_minted_dir, minted_dir) != 0)
		left += aj_mintrec_sweep(old_minted_dir, reg_mint, &out);
	aj_audit("secret_sweep_done", json_pack("{s:i}", "left", left));
	return NULL;
}

void aj_registry_revoke_lost_start(void)
{
	/* the thread takes no SIGINT/SIGTERM: the service's stop is the main loop's */
	sigset_t block, old;
	sigemptyset(&block);
	sigaddset(&block, SIGINT);
	sigaddset(&block, SIGTERM);
	pthread_sigmask(SIG_BLOCK, &block, &old);
	sweep_started = pthread_create(&sweep_thread, NULL, revoke_lost, NULL) == 0;
	pthread_sigmask(SIG_SETMASK, &old, NULL);
	if (!sweep_started) /* no thread: done here, the requests wait */
		(void)revoke_lost(NULL);
}

void aj_registry_revoke_lost_stop(void)
{
	__atomic_store_n(&sweep_stop, 1, __ATOMIC_RELAXED);
	if (sweep_started)
		pthread_join(sweep_thread, NULL);
	sweep_started = false;
}

void aj_registry_sweep(void)
{
	(void)aj_mkdir_p(state_dir, 0700);
	DIR *d = opendir(state_dir);
	struct dirent *de;
	while (d && (de = readdir(d))) {
		if (de->d_name[0] == '.')
			continue;
		char path[PATH_MAX];
		snprintf(path, sizeof(path), "%s/%s", state_dir, de->d_name);
		sweep_one(path);
	}
	if (d)
		closedir(d);
	if (geteuid() == 0)
		aj_nft_sweep_stale(); /* tables of dead keepers (--net open) */
	aj_backends_sweep();	      /* what no record names */
}

static void make_id(char *buf, size_t len)
{
	unsigned char r[8];
	if (getrandom(r, sizeof(r), 0) != sizeof(r))
		memset(r, 0, sizeof(r));
	snprintf(buf, len, "sb-%02x%02x%02x%02x%02x%02x%02x%02x%s%s", r[0], r[1], r[2], r[3], r[4],
		 r[5], r[6], r[7], node_name[0] ? "-" : "", node_name);
}

void aj_sandbox_ref(aj_sandbox *sb)
{
	__atomic_add_fetch(&sb->refs, 1, __ATOMIC_SEQ_CST);
}

/* Set on the supervisor's own thread, which starts every exec: the last
 * reference dropped there never waits for a teardown (issue 20). */
static __thread bool teardown_elsewhere;

void aj_registry_teardown_elsewhere(bool on)
{
	teardown_elsewhere = on;
}

static void sandbox_free(aj_sandbox *sb);

/* The minted secrets of sb revoked (at its end, or a create that failed
 * after minting), each audited as it went; what failed stays marked and
 * its record is rewritten to name just those, for the next start. */
static void revoke_minted(aj_sandbox *sb)
{
	bool was[AJ_MAX_SECRETS] = {false};
	for (size_t i = 0; i < sb->policy.n_secrets && i < AJ_MAX_SECRETS; i++)
		was[i] = sb->policy.secrets[i].minted;
	aj_error err;
	aj_err_clear(&err);
	if (!reg_mint || aj_mint_revoke(reg_mint, &sb->policy, sb->id, &err) == 0) {
		aj_mintrec_remove(minted_dir, sb->id);
	} else {
		char msg[AJ_ERR_MSG_MAX + AJ_ERR_HINT_MAX + 64];
		aj_err_format(&err, msg, sizeof(msg));
		aj_error werr;
		bool kept = minted_write(sb, true, &werr) == 0;
		aj_log("error", "agentjail serve: ", "sandbox %s: %s (%s)", sb->id, msg,
		       kept ? "kept in its record for the next start"
			    : "its record cannot be written: revoke it by hand");
	}
	for (size_t i = 0; i < sb->policy.n_secrets && i < AJ_MAX_SECRETS; i++) {
		const aj_secret *s = &sb->policy.secrets[i];
		if (!was[i])
			continue;
		if (!s->minted)
			aj_audit("secret_revoked",
				 json_pack("{s:s,s:s}", "sandbox", sb->id, "secret", s->name));
		else
			aj_audit("secret_revoke_failed",
				 json_pack("{s:s,s:s,s:s}", "sandbox", sb->id, "secret", s->name,
					   "error", err.msg));
	}
}

/* With serve --secret-mint: each scoped secret's value becomes the hook's
 * for this sandbox, in its policy and in the source its keeper reads
 * (*source: the text to hand on). */
static int mint(aj_sandbox *sb, json_t *req, char **source, aj_error *err)
{
	if (!reg_mint || !aj_mint_wanted(&sb->policy))
		return (*source = json_dumps(req, JSON_COMPACT)) ? 0
								 : aj_err(err, ENOMEM, "sandbox");
	/* on a failure, what was minted is revoked by sandbox_free (its record
	 * kept if that fails), as at a sandbox's end */
	int r = minted_write(sb, false, err);
	if (r == 0)
		r = aj_mint_secrets(reg_mint, &sb->policy, sb->id, NULL, err);
	if (r < 0) {
		err->status = 500;
		snprintf(err->api_code, sizeof(err->api_code), "%s", "secret_mint_failed");
		return r;
	}
	/* the keeper's "secret", in the object form whatever form the client
	 * used (a string or an array too), from the policy: minted values in */
	json_t *copy = json_deep_copy(req), *secrets = json_object();
	for (size_t i = 0; copy && secrets && i < sb->policy.n_secrets; i++) {
		const aj_secret *s = &sb->policy.secrets[i];
		json_t *hosts = json_array(), *o = json_pack("{s:s}", "value", s->value);
		for (size_t h = 0; hosts && h < s->n_hosts; h++)
			json_array_append_new(hosts, json_string(s->hosts[h]));
		if (!hosts || !o || (s->n_hosts && json_object_set(o, "hosts", hosts)) ||
		    (s->header && json_object_set_new(o, "header", json_string(s->header))) ||
		    (s->body && json_object_set_new(o, "body", json_true())) ||
		    json_object_set_new(secrets, s->name, o)) {
			json_decref(hosts);
			json_decref(copy);
			copy = NULL;
			break;
		}
		json_decref(hosts);
	}
	if (copy && json_object_set_new(copy, "secret", secrets))
		json_decref(copy), copy = NULL;
	else if (!copy)
		json_decref(secrets);
	*source = copy ? json_dumps(copy, JSON_COMPACT) : NULL;
	json_decref(copy);
	for (size_t i = 0; i < sb->policy.n_secrets; i++)
		if (sb->policy.secrets[i].minted)
			aj_audit("secret_minted", json_pack("{s:s,s:s}", "sandbox", sb->id,
							    "secret", sb->policy.secrets[i].name));
	return *source ? 0 : aj_err(err, ENOMEM, "sandbox");
}

static void *teardown_thread(void *arg)
{
	sandbox_free(arg);
	aj_worker_leave();
	return NULL;
}

void aj_sandbox_unref(aj_sandbox *sb)
{
	if (!sb || __atomic_sub_fetch(&sb->refs, 1, __ATOMIC_SEQ_CST) > 0)
		return;
	/* A teardown may take long (the keeper waits for every process of
	 * the sandbox to die: thousands, or one in D state, or a frozen one),
	 * and an expiry, an exec's end or a pool's stale sandbox drops the
	 * last reference on the supervisor's thread: the execs of every other
	 * sandbox would wait behind it. There, a worker thread (counted, so
	 * the shutdown waits for it) does it; its processes were killed when
	 * the sandbox left the registry. (The keeper dies with the thread
	 * that created it, a pool thread, not with this one.) */
	if (teardown_elsewhere) {
		aj_worker_enter();
		if (aj_thread_start(teardown_thread, sb) == 0)
			return;
		aj_worker_leave();
	}
	sandbox_free(sb);
}

static void sandbox_free(aj_sandbox *sb)
{
	if (sb->root_fd >= 0)
		close(sb->root_fd);
	if (sb->inst)
		sb->be->destroy(sb->inst); /* waits for the keeper's teardown */
	revoke_minted(sb); /* what fails stays in its record: the next start tries again */
	char path[PATH_MAX];
	state_path(sb->id, path, sizeof(path));
	unlink(path);
	if (sb->procs) /* their workers have ended: they held references */
		sb->procs_free(sb->procs);
	pthread_mutex_destroy(&sb->procs_mu);
	pthread_mutex_destroy(&sb->state_mu);
	aj_policy_free(&sb->policy);
	json_decref(sb->req);
	free(sb);
}

void aj_sandbox_set_ttl(aj_sandbox *sb, double seconds)
{
	pthread_mutex_lock(&sb->state_mu);
	long long ms = seconds > 0 ? (long long)(seconds * 1000) : 0;
	if (sb->paused) /* counts from the resume */
		sb->paused_left_ms = ms;
	else
		__atomic_store_n(&sb->expires_ms, ms ? aj_now_ms() + ms : 0, __ATOMIC_SEQ_CST);
	pthread_mutex_unlock(&sb->state_mu);
}

bool aj_sandbox_paused(aj_sandbox *sb)
{
	pthread_mutex_lock(&sb->state_mu);
	bool p = sb->paused;
	pthread_mutex_unlock(&sb->state_mu);
	return p;
}

int aj_sandbox_pause(aj_sandbox *sb, bool pause, aj_error *err)
{
	pthread_mutex_lock(&sb->state_mu);
	int r = 0;
	if (sb->paused == pause)
		r = aj_err(err, EALREADY, "sandbox '%s' is %s already", sb->id,
			   pause ? "paused" : "running");
	else if (sb->saving) {
		r = aj_err(err, EBUSY, "sandbox '%s' is being saved (a fork or snapshot)", sb->id);
		aj_err_hint(err, "pause or resume it when that has ended");
		err->status = 409;
		snprintf(err->api_code, sizeof(err->api_code), "%s", "conflict");
	} else if (aj_backend_can(sb->be, AJ_CAP_PAUSE, err))
		r = sb->be->pause(sb->inst, pause, err);
	else
		r = -ENOTSUP;
	if (r == 0 && pause) { /* the TTL clock stops */
		long long exp = __atomic_load_n(&sb->expires_ms, __ATOMIC_SEQ_CST),
			  now = aj_now_ms();
		sb->paused_left_ms = exp ? (exp > now ? exp - now : 1) : 0;
		__atomic_store_n(&sb->expires_ms, 0, __ATOMIC_SEQ_CST);
	} else if (r == 0) {
		__atomic_store_n(&sb->expires_ms,
				 sb->paused_left_ms ? aj_now_ms() + sb->paused_left_ms : 0,
				 __ATOMIC_SEQ_CST);
		sb->paused_left_ms = 0;
	}
	if (r == 0)
		sb->paused = pause;
	pthread_mutex_unlock(&sb->state_mu);
	return r;
}

/* The API's own keys; the rest is the policy (run's long option names). */
static int take_ttl(json_t *req, double *ttl, aj_error *err)
{
	json_t *t = json_object_get(req, "timeout");
	*ttl = AJ_DAEMON_DEFAULT_TTL_S;
	if (t && !json_is_number(t))
		return aj_err(err, EINVAL, "'timeout': expected seconds (a number)");
	if (t)
		*ttl = json_number_value(t);
	if (*ttl < 0 || *ttl > AJ_DAEMON_MAX_TTL_S)
		return aj_err(err, ERANGE, "'timeout': expected 0 (no TTL) to %d seconds",
			      AJ_DAEMON_MAX_TTL_S);
	json_object_del(req, "timeout");
	return 0;
}

static int add_to_registry(aj_sandbox *sb, aj_error *err)
{
	const char *key, *file;
	unsigned long long tcap = aj_tenant_max_sandboxes(aj_tenant_find(sb->tenant), &key, &file);
	pthread_mutex_lock(&reg_mu);
	int r = 0;
	unsigned long long mine = 0;
	for (size_t i = 0; tcap && i < reg_n; i++)
		mine += !strcmp(reg[i]->tenant, sb->tenant);
	if (reg_n >= reg_max) {
		r = aj_err(err, EAGAIN, "too many sandboxes (--max-sandboxes %u)", reg_max);
	} else if (tcap && mine >= tcap) {
		/* EDQUOT: a 403 naming the key (sup_api.c) */
		r = aj_err(err, EDQUOT, "tenant %s has %llu sandboxes: '%s' of the %s is %llu",
			   sb->tenant, mine, key, file, tcap);
		aj_err_hint(err, "delete one first, or raise '%s' in the %s", key, file);
	} else if (reg_n == reg_cap) {
		size_t cap = reg_cap ? reg_cap * 2 : 16;
		aj_sandbox **n = realloc(reg, cap * sizeof(*n));
		if (!n)
			r = aj_err(err, ENOMEM, "registry");
		else
			reg = n, reg_cap = cap;
	}
	if (r == 0)
		reg[reg_n++] = sb;
	pthread_mutex_unlock(&reg_mu);
	return r;
}

/* The policy's level: built in, with persistent sandboxes (else 501), and
 * usable on this host (else 409 with the fix): never another level. */
static int level_usable(aj_sandbox *sb, aj_error *err)
{
	const aj_backend *be = aj_backend_of(sb->policy.isolation);
	int r;
	if (!be || !be->create) {
		r = aj_err(err, ENOTSUP,
			   "'isolation': '%s' has no sandboxes that live across "
			   "commands in this build",
			   be ? be->name : "?");
		aj_err_hint(err,
			    "use agentjail run --isolation %s for one command, or "
			    "\"isolation\": \"process\" (docs/levels.md)",
			    be ? be->name : "?");
		err->status = 501;
		snprintf(err->api_code, sizeof(err->api_code), "%s", "not_supported");
		return r;
	}
	bool rw = sb->policy.workspace != NULL;
	for (size_t k = 0; k < sb->policy.n_binds && !rw; k++)
		rw = sb->policy.binds[k].writable;
	if (rw && !aj_backend_can(be, AJ_CAP_HOST_RW, err)) /* 501 */
		return -ENOTSUP;
	if ((r = be->probe(err)) < 0) {
		err->status = 409;
		snprintf(err->api_code, sizeof(err->api_code), "%s", "isolation_unavailable");
		return r;
	}
	sb->be = be;
	return 0;
}

/* libseccomp's compile of rules comparing several arguments grows
 * exponentially (4 rules of 6 "gt" comparisons on one syscall: over 10 s):
 * a client's profile is compiled first in a child bounded in CPU time
 * and memory, so that it cannot hold the service. *len: its length. */
#define PROFILE_CPU_S 2
static int compile_bounded(const aj_policy *p, size_t *len, aj_error *err)
{
	int fds[2];
	if (pipe2(fds, O_CLOEXEC) < 0)
		return aj_err(err, errno, "'seccomp-profile': pipe");
	pid_t pid = fork();
	if (pid < 0) {
		int e = errno;
		close(fds[0]);
		close(fds[1]);
		return aj_err(err, e, "'seccomp-profile': fork");
	}
	struct {
		aj_error e;
		size_t len;
		int r;
	} out;
	if (pid == 0) {
		close(fds[0]);
		struct rlimit cpu = {PROFILE_CPU_S, PROFILE_CPU_S}, mem = {256 << 20, 256 << 20};
		(void)setrlimit(RLIMIT_CPU, &cpu);
		(void)setrlimit(RLIMIT_DATA, &mem);
		memset(&out, 0, sizeof(out));
		aj_bpf bpf;
		if ((out.r = aj_seccomp_compile(p, &bpf, &out.e)) == 0)
			out.len = bpf.len;
		_exit(write(fds[1], &out, sizeof(out)) == (ssize_t)sizeof(out) ? 0 : 1);
	}
	close(fds[1]);
	struct pollfd pf = {.fd = fds[0], .events = POLLIN};
	long long until = aj_now_ms() + PROFILE_CPU_S * 2000 + 1000; /* a loaded host */
	ssize_t n = -1;
	for (;;) {
		long long left = until - aj_now_ms();
		int pr = left > 0 ? poll(&pf, 1, (int)left) : 0;
		if (pr < 0 && errno == EINTR)
			continue;
		if (pr > 0)
			n = read(fds[0], &out, sizeof(out));
		if (n < 0 && pr > 0 && errno == EINTR)
			continue;
		break;
	}
	close(fds[0]);
	kill(pid, SIGKILL);
	while (waitpid(pid, NULL, 0) < 0 && errno == EINTR)
		;
	if (n != (ssize_t)sizeof(out))
		return aj_err(err, EINVAL,
			      "'seccomp-profile': not compiled within %d s of CPU (libseccomp's "
			      "tree grows with each rule comparing several arguments)",
			      PROFILE_CPU_S);
	if (out.r < 0) {
		*err = out.e;
		return out.r;
	}
	*len = out.len;
	return 0;
}

/* An inline "seccomp-profile", checked before anything is made: level 1's
 * parser and compiler (400 with its reason), the kernel's bound on a
 * filter (the guest's too), and a level that cannot apply it refuses
 * (level 2: gVisor implements the system calls itself): never dropped. */
static int check_profile(const aj_policy *p, aj_error *err)
{
	if (!p->seccomp_inline)
		return 0;
	int r;
	if (p->isolation == AJ_ISO_GVISOR) {
		r = aj_err(err, ENOTSUP,
			   "'seccomp-profile': not available with isolation gvisor (gVisor "
			   "implements the system calls itself)");
		aj_err_hint(err, "use \"isolation\": \"process\" or \"microvm\" for it "
				 "(docs/levels.md)");
		err->status = 501;
		snprintf(err->api_code, sizeof(err->api_code), "%s", "not_supported");
		return r;
	}
	size_t len = 0;
	if ((r = compile_bounded(p, &len, err)) == 0 && len > BPF_MAXINSNS)
		r = aj_err(err, EINVAL, "'seccomp-profile': %zu BPF instructions, at most %d", len,
			   BPF_MAXINSNS);
	if (r < 0) {
		aj_err_hint(err, "fix the profile (docs/security.md, \"A profile of your own\"); "
				 "merge rules: one rule may list many syscalls");
		err->status = 400;
		snprintf(err->api_code, sizeof(err->api_code), "%s", "bad_request");
	}
	return r;
}

/* A sandbox with scoped secrets: its netd appends its secret_* events to
 * the audit log, with the sandbox's id and the tenant of the op that
 * creates it (as aj_registry_add gives it; level 1: the keeper's netd). */
static int audit_to(aj_sandbox *sb, aj_error *err)
{
	if (!aj_mint_wanted(&sb->policy) || aj_audit_fd() < 0)
		return 0;
	aj_tenant *t = aj_tenant_current();
	sb->policy.audit_fd = aj_audit_fd();
	if (!(sb->policy.audit_sandbox = strdup(sb->id)) ||
	    !(sb->policy.audit_tenant = strdup(t ? t->name : AJ_TENANT_OPERATOR)))
		return aj_err(err, ENOMEM, "sandbox");
	return 0;
}

aj_sandbox *aj_sandbox_build(json_t *req, aj_error *err)
{
	return aj_sandbox_build_from(req, NULL, err);
}

aj_sandbox *aj_sandbox_build_from(json_t *req, const char *ckpt, aj_error *err)
{
	aj_sandbox *sb = calloc(1, sizeof(*sb));
	if (!sb) {
		aj_err(err, ENOMEM, "sandbox");
		return NULL;
	}
	aj_policy_init(&sb->policy);
	pthread_mutex_init(&sb->procs_mu, NULL);
	pthread_mutex_init(&sb->state_mu, NULL);
	sb->root_fd = -1;
	sb->be = aj_backend_of(AJ_ISO_PROCESS); /* a refused policy destroys nothing */
	sb->refs = 1;
	make_id(sb->id, sizeof(sb->id));
	sb->policy.quiet = true;
	int r;
	/* the keeper rebuilds the policy from the same text (box.h), with the
	 * minted values (sb->req keeps the given ones: a fork mints anew) */
	char *source = NULL;
	if (!(sb->req = json_deep_copy(req)))
		r = aj_err(err, ENOMEM, "sandbox");
	else if ((r = aj_policy_from_json(&sb->policy, req, err)) == 0 &&
		 (r = check_profile(&sb->policy, err)) == 0 && (r = level_usable(sb, err)) == 0 &&
		 (r = mint(sb, req, &source, err)) == 0 && (r = audit_to(sb, err)) == 0 &&
		 (r = ckpt ? sb->be->restore(&sb->policy, source, ckpt, &sb->inst, err)
			   : sb->be->create(&sb->policy, source, &sb->inst, err)) == 0 &&
		 (!(sb->be->caps & AJ_CAP_ROOT_FD) ||
		  (r = sb->root_fd = sb->be->root_fd(sb->inst, err)) >= 0))
		state_write(sb);
	if (source) {
		explicit_bzero(source, strlen(source));
		free(source);
	}
	if (r < 0) {
		aj_sandbox_unref(sb);
		return NULL;
	}
	return sb;
}

int aj_registry_admit(json_t *req, double *ttl, aj_error *err)
{
	int r = take_ttl(req, ttl, err);
	if (r < 0)
		return r;
	if (aj_registry_count() >= reg_max)
		return aj_err(err, EAGAIN, "too many sandboxes (--max-sandboxes %u)", reg_max);
	/* the tenant's cap before anything is built (checked again when added) */
	aj_tenant *t = aj_tenant_current();
	const char *key, *file;
	unsigned long long cap = aj_tenant_max_sandboxes(t, &key, &file);
	unsigned mine = aj_registry_count_tenant(t ? t->name : AJ_TENANT_OPERATOR);
	if (cap && mine >= cap) {
		r = aj_err(err, EDQUOT, "tenant %s has %u sandboxes: '%s' of the %s is %llu",
			   t ? t->name : AJ_TENANT_OPERATOR, mine, key, file, cap);
		aj_err_hint(err, "delete one first, or raise '%s' in the %s", key, file);
		return r;
	}
	return 0;
}

int aj_registry_add(aj_sandbox *sb, double ttl, const char *owner, aj_error *err)
{
	snprintf(sb->owner, sizeof(sb->owner), "%s", owner);
	/* the tenant of the op that adds it (a pool's sandbox gets its taker's) */
	aj_tenant *t = aj_tenant_current();
	snprintf(sb->tenant, sizeof(sb->tenant), "%s", t ? t->name : AJ_TENANT_OPERATOR);
	sb->created_ms = aj_now_ms();
	aj_sandbox_set_ttl(sb, ttl);
	/* its own identity now, not when it was built (a pool's waited) */
	int r = sb->be->claim && !sb->claimed ? sb->be->claim(sb->inst, err) : 0;
	if (r == 0)
		r = add_to_registry(sb, err);
	if (r < 0)
		aj_sandbox_unref(sb);
	return r;
}

aj_sandbox *aj_registry_get(const char *id)
{
	aj_sandbox *found = NULL;
	pthread_mutex_lock(&reg_mu);
	for (size_t i = 0; i < reg_n && !found; i++)
		if (strcmp(reg[i]->id, id) == 0) {
			found = reg[i];
			aj_sandbox_ref(found);
		}
	pthread_mutex_unlock(&reg_mu);
	return found;
}

/* Out of the registry; everything in it killed at once (init's pid stays
 * reserved until the keeper reaps it in its teardown). */
static aj_sandbox *take(size_t i)
{
	aj_sandbox *sb = reg[i];
	reg[i] = reg[--reg_n];
	__atomic_store_n(&sb->dead, true, __ATOMIC_SEQ_CST);
	sb->be->kill(sb->inst); /* a paused one is thawed first */
	return sb;
}

int aj_registry_destroy(const char *id)
{
	aj_sandbox *sb = NULL;
	pthread_mutex_lock(&reg_mu);
	for (size_t i = 0; i < reg_n && !sb; i++)
		if (strcmp(reg[i]->id, id) == 0)
			sb = take(i);
	pthread_mutex_unlock(&reg_mu);
	if (!sb)
		return -ENOENT;
	aj_metrics_add(&aj_stats.sandboxes_destroyed, 1);
	aj_tenant *t = aj_tenant_find(sb->tenant);
	if (t)
		aj_metrics_add(&t->destroyed, 1);
	aj_sandbox_unref(sb);
	return 0;
}

static void destroy_where(bool all)
{
	long long now = aj_now_ms();
	for (;;) {
		aj_sandbox *sb = NULL;
		pthread_mutex_lock(&reg_mu);
		for (size_t i = 0; i < reg_n && !sb; i++) {
			long long exp = __atomic_load_n(&reg[i]->expires_ms, __ATOMIC_SEQ_CST);
			if (all || (exp && exp <= now))
				sb = take(i);
		}
		pthread_mutex_unlock(&reg_mu);
		if (!sb)
			return;
		if (!all) {
			aj_metrics_add(&aj_stats.sandboxes_expired, 1);
			aj_audit("expire",
				 json_pack("{s:s, s:s}", "sandbox", sb->id, "tenant", sb->tenant));
		}
		aj_metrics_add(&aj_stats.sandboxes_destroyed, 1);
		aj_tenant *t = aj_tenant_find(sb->tenant);
		if (t)
			aj_metrics_add(&t->destroyed, 1);
		aj_sandbox_unref(sb);
	}
}

void aj_registry_expire(void)
{
	destroy_where(false);
}

void aj_registry_destroy_all(void)
{
	/* the shutdown: every teardown done before the process ends */
	bool was = teardown_elsewhere;
	teardown_elsewhere = false;
	destroy_where(true);
	teardown_elsewhere = was;
	pthread_mutex_lock(&reg_mu);
	free(reg);
	reg = NULL;
	reg_n = reg_cap = 0;
	pthread_mutex_unlock(&reg_mu);
}

unsigned aj_registry_count(void)
{
	pthread_mutex_lock(&reg_mu);
	unsigned n = (unsigned)reg_n;
	pthread_mutex_unlock(&reg_mu);
	return n;
}

static json_t *iso_time(long long ms)
{
	char buf[64];
	time_t t = (time_t)(ms / 1000);
	struct tm tm;
	gmtime_r(&t, &tm);
	strftime(buf, sizeof(buf), "%Y-%m-%dT%H:%M:%SZ", &tm);
	return json_string(buf);
}

static json_t *sandbox_json_base(aj_sandbox *sb)
{
	pthread_mutex_lock(&sb->state_mu);
	long long exp = __atomic_load_n(&sb->expires_ms, __ATOMIC_SEQ_CST);
	bool paused = sb->paused;
	long long left = paused ? sb->paused_left_ms : exp ? exp - aj_now_ms() : 0;
	pthread_mutex_unlock(&sb->state_mu);
	const aj_policy *p = &sb->policy;
	/* "limits": "best-effort": the limits that could not be applied */
	static const char *const names[] = {"memory", "pids", "cpus"};
	aj_inst_info in;
	sb->be->info(sb->inst, &in);
	json_t *missing = json_array();
	for (unsigned i = 0; i < AJ_ARRAY_SIZE(names); i++)
		if (in.limits_missing & (1u << i))
			json_array_append_new(missing, json_string(names[i]));
	json_t *o = json_pack(
	    "{s:s, s:s, s:o, s:o, s:o, s:I, s:{s:I, s:I, s:f, s:I}, s:s?, s:s, s:I, "
	    "s:s?}",
	    "id", sb->id, "state", paused ? "paused" : "running", "created_at",
	    iso_time(sb->created_ms), "expires_at", exp ? iso_time(exp) : json_null(),
	    "timeout_remaining", exp || left ? json_integer((left + 999) / 1000) : json_null(),
	    "pid", (json_int_t)in.pid, "limits", "memory", (json_int_t)p->memory, "pids",
	    (json_int_t)p->pids, "cpus", (double)p->cpu_millis / 1000.0, "disk",
	    (json_int_t)p->tmp_size, "workspace", p->workspace, "net",
	    p->net == AJ_NET_OPEN ? "open" : "none", "execs",
	    (json_int_t)__atomic_load_n(&sb->execs, __ATOMIC_SEQ_CST), "interpreter", in.warm);
	if (o)
		json_object_set_new(o, "isolation", json_string(sb->be->name));
	if (o && missing)
		json_object_set_new(o, "limits_not_applied", missing);
	else
		json_decref(missing);
	return o;
}

int aj_sandbox_holder(aj_sandbox *sb)
{
	aj_inst_info in;
	sb->be->info(sb->inst, &in);
	return (int)in.holder;
}

json_t *aj_sandbox_json(aj_sandbox *sb)
{
	json_t *o = sandbox_json_base(sb);
	/* the protected host-run files of the workspace the sandbox may
	 * change (--writable, protect.h): never silently */
	json_t *w = json_array();
	for (size_t i = 0; w && i < sb->policy.n_writable; i++)
		json_array_append_new(w, json_string(sb->policy.writable[i]));
	if (o && w)
		json_object_set_new(o, "writable", w);
	else
		json_decref(w);
	/* the workspace paths it sees unmasked (--unmask): never silently */
	json_t *u = json_array();
	for (size_t i = 0; u && i < sb->policy.n_unmask; i++)
		json_array_append_new(u, json_string(sb->policy.unmask[i]));
	if (o && u)
		json_object_set_new(o, "unmasked", u);
	else
		json_decref(u);
	return o;
}

unsigned aj_registry_count_tenant(const char *tenant)
{
	unsigned n = 0;
	pthread_mutex_lock(&reg_mu);
	for (size_t i = 0; i < reg_n; i++)
		n += !tenant || !strcmp(reg[i]->tenant, tenant);
	pthread_mutex_unlock(&reg_mu);
	return n;
}

json_t *aj_registry_list(const char *tenant)
{
	/* each sandbox's JSON built outside reg_mu (it takes the sandbox's
	 * state_mu): one slow sandbox does not stall every other call */
	json_t *a = json_array();
	pthread_mutex_lock(&reg_mu);
	size_t n = 0;
	aj_sandbox **l = calloc(reg_n ? reg_n : 1, sizeof(*l));
	for (size_t i = 0; l && i < reg_n; i++)
		if (!tenant || !strcmp(reg[i]->tenant, tenant)) {
			aj_sandbox_ref(reg[i]);
			l[n++] = reg[i];
		}
	pthread_mutex_unlock(&reg_mu);
	for (size_t i = 0; i < n; i++) {
		json_array_append_new(a, aj_sandbox_json(l[i]));
		aj_sandbox_unref(l[i]);
	}
	free(l);
	return json_pack("{s:o}", "sandboxes", a);
}
