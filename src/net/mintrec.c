/* SPDX-License-Identifier: MIT */
/* Records of minted secrets (mintrec.h): written whole by a rename, checked
 * strictly before anything in them reaches the hook, claimed by an flock
 * so that two starting processes never both revoke one. */
#include "mintrec.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "mint.h"
#include "util.h"

#define TMP_STALE_S 60 /* a temporary record lives for a write and an fsync */
#define BOOT_ID_LEN 36
#define SWEEP_MS 10000 /* a start's sweep at most: the rest is left for the next one */

static long long now_ms(void)
{
	struct timespec t;
	clock_gettime(CLOCK_MONOTONIC, &t);
	return (long long)t.tv_sec * 1000 + t.tv_nsec / 1000000;
}

__attribute__((format(printf, 2, 3))) static void say(const aj_mintrec_out *out, const char *fmt,
						      ...)
{
	char msg[1024];
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	if (out && out->say)
		out->say(out->ctx, msg);
}

static void event(const aj_mintrec_out *out, const char *ev, json_t *o)
{
	if (out && out->event && o)
		out->event(out->ctx, ev, o);
	else
		json_decref(o);
}

/* this boot's id (36 characters), "" if unknown */
static void boot_id(char out[BOOT_ID_LEN + 1])
{
	_cleanup_free_ char *s = NULL;
	out[0] = '\0';
	if (aj_read_file("/proc/sys/kernel/random/boot_id", &s, NULL) == 0 &&
	    strlen(s) >= BOOT_ID_LEN) {
		memcpy(out, s, BOOT_ID_LEN);
		out[BOOT_ID_LEN] = '\0';
	}
}

static json_int_t pidns_ino(void)
{
	struct stat st;
	return stat("/proc/self/ns/pid", &st) == 0 ? (json_int_t)st.st_ino : 0;
}

/* NULL with *unknown set when this boot's id, the pid namespace or a start
 * time cannot be read (a record without them could never be judged) */
static json_t *owner_json(pid_t also, bool *unknown)
{
	char boot[BOOT_ID_LEN + 1];
	boot_id(boot);
	json_int_t ns = pidns_ino();
	*unknown = !boot[0] || ns <= 0;
	json_t *pids = *unknown ? NULL : json_array();
	pid_t who[2] = {getpid(), also};
	for (int i = 0; pids && i < 2; i++) {
		unsigned long long start = who[i] > 0 ? aj_pid_start_time(who[i]) : 1;
		if (start == 0)
			*unknown = true;
		else if (who[i] > 0)
			json_array_append_new(
			    pids, json_pack("[I,I]", (json_int_t)who[i], (json_int_t)start));
	}
	if (*unknown) {
		json_decref(pids);
		return NULL;
	}
	return pids ? json_pack("{s:s,s:I,s:o}", "boot", boot, "pidns", ns, "pids", pids) : NULL;
}

/* Was a (valid) record's owner of another boot? */
static bool owner_rebooted(json_t *owner)
{
	char boot[BOOT_ID_LEN + 1];
	boot_id(boot);
	return boot[0] && strcmp(boot, json_string_value(json_object_get(owner, "boot"))) != 0;
}

/* What a sweep's revoke comes after, for the audit */
static const char *after_what(const aj_mintrec_out *out, json_t *o, const char *id)
{
	if (out && out->after)
		return out->after;
	if (owner_rebooted(json_object_get(o, "owner")))
		return "a restart of the machine";
	return strncmp(id, "run-", 4) == 0 ? "its run was killed" : "the service's crash";
}

static bool stopped(const aj_mintrec_out *out)
{
	return out && out->stop && __atomic_load_n(out->stop, __ATOMIC_RELAXED);
}

/* Is the owner of a (valid) record alive? One of its pids with its start
 * time in this boot; a record of another pid namespace is taken as alive
 * (its pids mean nothing here). -1: this boot's id or pid namespace is
 * unknown (the record is left alone). */
static int owner_alive(json_t *owner)
{
	char boot[BOOT_ID_LEN + 1];
	boot_id(boot);
	if (!boot[0] || pidns_ino() <= 0)
		return -1;
	if (strcmp(boot, json_string_value(json_object_get(owner, "boot"))) != 0)
		return false; /* written before this boot: gone */
	if (json_integer_value(json_object_get(owner, "pidns")) != pidns_ino())
		return true;
	size_t k;
	json_t *p;
	json_array_foreach(json_object_get(owner, "pids"), k, p)
	{
		pid_t pid = (pid_t)json_integer_value(json_array_get(p, 0));
		unsigned long long start =
		    (unsigned long long)json_integer_value(json_array_get(p, 1));
		if (aj_pid_start_time(pid) == start && aj_pid_alive(pid)) /* not a zombie */
			return true;
	}
	return false;
}

/* A record (re)written whole, 0600, in dfd: a temporary file (.tmp-PID-…,
 * its writer named for the sweep) synced, then renamed over it; on failure
 * the old record is left as it was (it may be the only one naming a live
 * credential). */
static int record_put(int dfd, const char *name, json_t *o)
{
	char tmp[NAME_MAX + 1];
	unsigned char rnd[6];
	if (getrandom(rnd, sizeof(rnd), 0) != sizeof(rnd))
		return -EIO;
	if (snprintf(tmp, sizeof(tmp), ".tmp-%ld-%02x%02x%02x%02x%02x%02x-%s", (long)getpid(),
		     rnd[0], rnd[1], rnd[2], rnd[3], rnd[4], rnd[5], name) >= (int)sizeof(tmp))
		return -ENAMETOOLONG;
	int fd = openat(dfd, tmp, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
	if (fd < 0)
		return -errno;
	/* 0600 whatever the umask: a sweep takes no other mode */
	int r = fchmod(fd, 0600) == 0 && json_dumpfd(o, fd, JSON_COMPACT) == 0 && fsync(fd) == 0
		    ? 0
		    : -EIO;
	if (close(fd) < 0 && r == 0)
		r = -EIO;
	if (r == 0 && renameat(dfd, tmp, dfd, name) < 0)
		r = -errno;
	if (r < 0)
		unlinkat(dfd, tmp, 0);
	else
		(void)fsync(dfd); /* the rename itself on disk */
	return r;
}

/* A crash's temporary record: its writer (named in it) is gone, or it is
 * older than any write takes. Removing a live writer's only fails its
 * rename, which keeps the old record. */
static bool tmp_stale(int dfd, const char *name)
{
	char *end;
	long pid = strtol(name + 5, &end, 10);
	struct stat st;
	if (fstatat(dfd, name, &st, AT_SYMLINK_NOFOLLOW) < 0)
		return false;
	if (pid > 0 && *end == '-' && !aj_pid_alive((pid_t)pid))
		return true;
	return time(NULL) - st.st_mtime > TMP_STALE_S;
}

/* The state directory dir/.. (opened, following links): owned by the
 * euid or root and not writable by group or others (a record in it makes
 * a start run a hook). An fd or -errno with err set. */
static int state_dir_open(const char *dir, char *base, size_t len, aj_error *err)
{
	char parent[PATH_MAX];
	const char *slash = strrchr(dir, '/');
	if (!slash || !slash[1] ||
	    snprintf(parent, sizeof(parent), "%.*s", slash == dir ? 1 : (int)(slash - dir), dir) <
		0 ||
	    (size_t)snprintf(base, len, "%s", slash + 1) >= len)
		return aj_err(err, EINVAL, "%s: not a path of a directory of records", dir);
	int pfd = open(parent, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	struct stat st;
	if (pfd < 0) {
		int e = errno;
		aj_err(err, e, "cannot open the state directory %s", parent);
		if (e == EACCES || e == ENOENT)
			aj_err_hint(err, "as an unprivileged user, set AGENTJAIL_STATE_DIR to a "
					 "directory of yours (not writable by others)");
		return -e;
	}
	if (fstat(pfd, &st) < 0 || (st.st_uid != 0 && st.st_uid != geteuid()) ||
	    (st.st_mode & 022)) {
		close(pfd);
		aj_err(err, EPERM,
		       "the state directory %s is not owned by root or uid %u, or is writable "
		       "by group or others: no record of minted secrets in it is written or "
		       "acted on",
		       parent, (unsigned)geteuid());
		aj_err_hint(err, "chmod go-w it (and chown it), or set AGENTJAIL_STATE_DIR to one "
				 "that is; revoke the credentials its records name by hand");
		return -EPERM;
	}
	return pfd;
}

int aj_mintrec_dir_open(const char *dir, bool create, aj_error *err)
{
	char base[NAME_MAX + 1];
	int pfd = state_dir_open(dir, base, sizeof(base), err);
	if (pfd < 0)
		return pfd;
	if (create && mkdirat(pfd, base, 0700) < 0 && errno != EEXIST) {
		int e = errno;
		close(pfd);
		aj_err(err, e, "cannot make the directory of minted-secret records %s", dir);
		if (e == EACCES)
			aj_err_hint(err, "as an unprivileged user, set AGENTJAIL_STATE_DIR to a "
					 "directory of yours (not writable by others)");
		return -e;
	}
	int dfd = openat(pfd, base, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	close(pfd);
	struct stat st;
	if (dfd < 0 && errno != ENOTDIR && errno != ELOOP) {
		int e = errno;
		aj_err(err, e, "cannot open the directory of minted-secret records %s", dir);
		if (e == EACCES)
			aj_err_hint(err, "as an unprivileged user, set AGENTJAIL_STATE_DIR to a "
					 "directory of yours (not writable by others)");
		return -e;
	}
	if (dfd < 0 || fstat(dfd, &st) < 0 || st.st_uid != geteuid() || (st.st_mode & 077)) {
		if (dfd >= 0)
			close(dfd);
		aj_err(err, EPERM,
		       "%s: not a directory of this user's (uid %u), mode 0700: no record of "
		       "minted secrets in it is written or acted on",
		       dir, (unsigned)geteuid());
		aj_err_hint(err,
			    "make it one (chown %u, chmod 0700, not a symbolic link); revoke the "
			    "credentials its records name by hand",
			    (unsigned)geteuid());
		return -EPERM;
	}
	return dfd;
}

static json_t *secrets_json(const aj_policy *p, bool only_minted)
{
	json_t *list = json_array();
	for (size_t i = 0; list && i < p->n_secrets; i++) {
		const aj_secret *s = &p->secrets[i];
		if (!s->n_hosts || (only_minted && !s->minted))
			continue;
		json_t *hosts = json_array();
		for (size_t h = 0; hosts && h < s->n_hosts; h++)
			json_array_append_new(hosts, json_string(s->hosts[h]));
		if (!hosts || json_array_append_new(list, json_pack("{s:s,s:o}", "name", s->name,
								    "hosts", hosts)) < 0) {
			json_decref(list);
			return NULL;
		}
	}
	return list;
}

int aj_mintrec_write(const char *dir, const char *id, const aj_policy *p, bool only_minted,
		     const char *hook, pid_t also, aj_error *err)
{
	bool unknown = false;
	json_t *secrets = secrets_json(p, only_minted), *owner = owner_json(also, &unknown);
	if (unknown) {
		json_decref(secrets);
		aj_err(err, EIO,
		       "cannot read this boot's id, the pid namespace or a process's start "
		       "time (/proc/sys/kernel/random/boot_id, /proc/self/ns/pid, "
		       "/proc/PID/stat): a record of minted secrets could not be judged, "
		       "nothing is minted");
		aj_err_hint(err, "run agentjail where /proc is mounted and readable");
		return -EIO;
	}
	json_t *o = secrets && owner ? json_pack("{s:s,s:o,s:s,s:o}", "sandbox", id, "secrets",
						 secrets, "hook", hook, "owner", owner)
				     : NULL;
	if (!o) {
		json_decref(secrets), json_decref(owner);
		return aj_err(err, ENOMEM, "out of memory");
	}
	char name[NAME_MAX + 1];
	snprintf(name, sizeof(name), "%s.json", id);
	int dfd = aj_mintrec_dir_open(dir, true, err);
	int r = dfd < 0 ? dfd : record_put(dfd, name, o);
	if (dfd >= 0)
		close(dfd);
	json_decref(o);
	if (r < 0 && dfd >= 0) /* an older record, if any, is left: it names more, not less */
		return aj_err(err, -r, "cannot write the record of minted secrets %s/%s", dir,
			      name);
	return r;
}

void aj_mintrec_remove(const char *dir, const char *id)
{
	char name[NAME_MAX + 1];
	aj_error err;
	int dfd = aj_mintrec_dir_open(dir, false, &err);
	if (dfd < 0)
		return;
	if (snprintf(name, sizeof(name), "%s.json", id) < (int)sizeof(name))
		unlinkat(dfd, name, 0);
	close(dfd);
}

/* A record that cannot be trusted is set aside (never dropped, never
 * acted on): its credentials need revoking by hand. */
static void record_bad(int dfd, const char *dir, const char *name, int fd, const char *why,
		       const aj_mintrec_out *out)
{
	char aside[NAME_MAX + 16];
	int r;
	struct stat a, b;
	/* only the file judged: a record its owner rewrote meanwhile is another */
	if (fd >= 0 && (fstat(fd, &a) < 0 || fstatat(dfd, name, &b, AT_SYMLINK_NOFOLLOW) < 0 ||
			a.st_ino != b.st_ino || a.st_dev != b.st_dev))
		return;
	/* an earlier .bad-NAME is never replaced: the next free suffix */
	snprintf(aside, sizeof(aside), ".bad-%s", name);
	for (int k = 1; (r = renameat2(dfd, name, dfd, aside, RENAME_NOREPLACE)) < 0 &&
			errno == EEXIST && k < 1000;
	     k++)
		snprintf(aside, sizeof(aside), ".bad-%s.%d", name, k);
	if (r < 0) { /* ENOENT: another start set it aside first */
		if (errno != ENOENT)
			say(out,
			    "a record of minted secrets %s/%s is not one to act on (%s) and "
			    "cannot be set aside (%s); revoke its credentials by hand",
			    dir, name, why, strerror(errno));
		return;
	}
	say(out,
	    "a record of minted secrets is not one to act on (%s): set aside as %s/%s; "
	    "revoke its credentials by hand",
	    why, dir, aside);
	event(out, "secret_revoke_failed", json_pack("{s:s,s:s}", "record", name, "error", why));
}

/* "sb-" 16 hex digits and "-NODE" (serve --node: a-z, 0-9, '-' inside, 1
 * to 63), or a run's "run-PID-" 16 hex digits */
static bool id_valid(const char *id)
{
	size_t n = strlen(id), d;
	if (strncmp(id, "run-", 4) == 0) {
		d = strspn(id + 4, "0123456789");
		return d >= 1 && d <= 10 && id[4 + d] == '-' &&
		       strspn(id + 5 + d, "0123456789abcdef") == 16 && n == 21 + d;
	}
	if (n < 19 || strncmp(id, "sb-", 3) != 0 || strspn(id + 3, "0123456789abcdef") != 16)
		return false;
	const char *node = id + 20;
	size_t k = n - 20;
	return n == 19 || (id[19] == '-' && k >= 1 && k <= 63 &&
			   strspn(node, "abcdefghijklmnopqrstuvwxyz0123456789-") == k &&
			   node[0] != '-' && node[k - 1] != '-');
}

/* Whether the entries of a record are secrets as a policy has them: a
 * variable name, 1 to 16 hosts each canonical (aj_policy_add_secret_scoped
 * judges both), exactly these two keys. */
static bool record_secrets_valid(json_t *secrets, const char **why)
{
	aj_policy p;
	aj_policy_init(&p);
	size_t k;
	json_t *s;
	bool ok = json_array_size(secrets) <= AJ_MAX_SECRETS;
	json_array_foreach(secrets, k, s)
	{
		const char *name = json_string_value(json_object_get(s, "name"));
		json_t *hosts = json_object_get(s, "hosts");
		size_t n = json_array_size(hosts);
		ok = ok && json_is_object(s) && json_object_size(s) == 2 && name &&
		     json_is_array(hosts) && n >= 1 && n <= AJ_MAX_SECRET_HOSTS;
		const char *h[AJ_MAX_SECRET_HOSTS];
		for (size_t i = 0; ok && i < n; i++)
			ok = (h[i] = json_string_value(json_array_get(hosts, i))) != NULL;
		aj_error err;
		ok = ok && aj_policy_add_secret_scoped(&p, name, "revoke", h, n, NULL, &err) == 0;
		for (size_t i = 0; ok && i < n; i++) /* as written: canonical */
			ok = strcmp(p.secrets[p.n_secrets - 1].hosts[i], h[i]) == 0;
		if (!ok)
			break;
	}
	aj_policy_free(&p);
	if (!ok)
		*why = "an entry is not a secret's name and canonical hosts";
	return ok;
}

/* {"boot": 36 characters, "pidns": N > 0, "pids": [[PID, START], ...]}, 1
 * or 2 pids, each number positive */
static bool owner_valid(json_t *o)
{
	const char *boot = json_string_value(json_object_get(o, "boot"));
	json_t *pids = json_object_get(o, "pids");
	bool ok = json_is_object(o) && json_object_size(o) == 3 && boot &&
		  strlen(boot) == BOOT_ID_LEN && strspn(boot, "0123456789abcdef-") == BOOT_ID_LEN &&
		  json_integer_value(json_object_get(o, "pidns")) > 0 && json_is_array(pids) &&
		  json_array_size(pids) >= 1 && json_array_size(pids) <= 2;
	size_t k;
	json_t *p;
	json_array_foreach(pids, k, p)
	{
		json_t *pid = json_array_get(p, 0), *start = json_array_get(p, 1);
		ok = ok && json_array_size(p) == 2 && json_is_integer(pid) &&
		     json_is_integer(start) && json_integer_value(pid) > 0 &&
		     json_integer_value(pid) <= INT_MAX && json_integer_value(start) > 0;
	}
	return ok;
}

/* An absolute path of at most PATH_MAX - 1 printable characters */
static bool hook_valid(const char *h)
{
	size_t n = h ? strlen(h) : 0;
	bool ok = n > 1 && n < PATH_MAX && h[0] == '/';
	for (size_t i = 0; ok && i < n; i++)
		ok = h[i] >= 0x20 && h[i] < 0x7f;
	return ok;
}

/* A record checked before anything in it reaches the hook: a regular
 * file (no symlink followed) of this user, 0600, one link, at most 1 MiB,
 * strict JSON {"sandbox": ID, "secrets": [...], "hook": PATH, "owner":
 * {...}} with ID the file's name. NULL with *why if not; *fd stays open
 * (the claim is its flock). */
static json_t *record_load(int dfd, const char *fname, int *fd, const char **why)
{
	*fd = openat(dfd, fname, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC | O_NOCTTY);
	struct stat st;
	json_t *o = NULL;
	json_error_t jerr;
	*why = NULL;
	/* a failure of this process's (fds, memory, I/O) or a name gone is no
	 * verdict on the record: it is left for later (*why stays NULL) */
	if (*fd < 0 && (errno == ENOENT || errno == EMFILE || errno == ENFILE || errno == ENOMEM ||
			errno == EIO || errno == EINTR))
		return NULL;
	if (*fd < 0 || fstat(*fd, &st) < 0 || !S_ISREG(st.st_mode))
		*why = "not a regular file";
	else if (st.st_uid != geteuid() || (st.st_mode & 07777) != 0600 || st.st_nlink != 1)
		*why = "not a file of this user's own, mode 0600, with one link";
	else if (st.st_size > (1 << 20))
		*why = "larger than 1 MiB";
	else if (!(o = json_loadfd(*fd, JSON_REJECT_DUPLICATES, &jerr)) &&
		 json_error_code(&jerr) != json_error_out_of_memory)
		*why = "not JSON";
	if (*why || !o)
		return NULL;
	const char *id = json_string_value(json_object_get(o, "sandbox"));
	json_t *secrets = json_object_get(o, "secrets");
	char want[NAME_MAX + 1];
	if (!json_is_object(o) || json_object_size(o) != 4 || !id || !id_valid(id) ||
	    !json_is_array(secrets))
		*why = "not a record of minted secrets";
	else if (snprintf(want, sizeof(want), "%s.json", id) < 0 || strcmp(want, fname) != 0)
		*why = "its sandbox is not its file's name";
	else if (!hook_valid(json_string_value(json_object_get(o, "hook"))))
		*why = "its hook is not an absolute path";
	else if (!owner_valid(json_object_get(o, "owner")))
		*why = "its owner is not a boot, a pid namespace and 1 or 2 pids with start times";
	else
		(void)record_secrets_valid(secrets, why);
	if (*why) {
		json_decref(o);
		return NULL;
	}
	return o;
}

/* Revoke the secrets of record o (claimed: its file is flocked) with its
 * hook; remove it, or rewrite it with those not revoked. 1 when it is
 * kept. */
static int record_revoke(int dfd, const char *dir, const char *fname, json_t *o, const char *hook,
			 long long deadline, bool *spent, const aj_mintrec_out *out)
{
	const char *id = json_string_value(json_object_get(o, "sandbox"));
	json_t *left = json_array();
	size_t k;
	json_t *s;
	json_array_foreach(json_object_get(o, "secrets"), k, s)
	{
		const char *name = json_string_value(json_object_get(s, "name"));
		char *hosts[AJ_MAX_SECRET_HOSTS];
		size_t n = 0, h;
		json_t *v;
		json_array_foreach(json_object_get(s, "hosts"), h, v)
		{
			hosts[n++] = (char *)json_string_value(v);
		}
		aj_error err;
		aj_err_clear(&err);
		long long ms = deadline - now_ms();
		if (ms <= 0 || stopped(out)) { /* the sweep's time is spent: the next start's */
			*spent = true;
			if (left)
				json_array_append(left, s);
			continue;
		}
		if (aj_mint_revoke_lost(hook, name, hosts, n, id, (int)ms, &err) == 0) {
			event(out, "secret_revoked",
			      json_pack("{s:s,s:s,s:s}", "sandbox", id, "secret", name, "after",
					after_what(out, o, id)));
			continue;
		}
		say(out, "sandbox %s: %s (kept in %s/%s for the next start)", id, err.msg, dir,
		    fname);
		event(out, "secret_revoke_failed",
		      json_pack("{s:s,s:s,s:s}", "sandbox", id, "secret", name, "error", err.msg));
		if (left)
			json_array_append(left, s);
	}
	int kept = 1;
	if (left && json_array_size(left) == 0)
		kept = 0, unlinkat(dfd, fname, 0);
	else if (!left || json_object_set(o, "secrets", left) < 0 || record_put(dfd, fname, o) < 0)
		say(out, "sandbox %s: cannot rewrite %s/%s (left as it was)", id, dir, fname);
	json_decref(left);
	return kept;
}

/* Is fd still what dir's name is (not removed or replaced since opened)? */
static bool still_linked(int dfd, const char *name, int fd)
{
	struct stat a, b;
	return fstat(fd, &a) == 0 && a.st_nlink == 1 &&
	       fstatat(dfd, name, &b, AT_SYMLINK_NOFOLLOW) == 0 && a.st_ino == b.st_ino &&
	       a.st_dev == b.st_dev;
}

/* The names in d (a sweep acts on each once, whatever it renames) */
static char **list_names(DIR *d, size_t *n)
{
	char **v = NULL;
	size_t cap = 0;
	struct dirent *de;
	*n = 0;
	while ((de = readdir(d))) {
		if (strcmp(de->d_name, ".") == 0 || strcmp(de->d_name, "..") == 0)
			continue;
		if (*n == cap) {
			char **w = realloc(v, (cap = cap ? 2 * cap : 16) * sizeof(*v));
			if (!w)
				break;
			v = w;
		}
		if (!(v[*n] = strdup(de->d_name)))
			break;
		++*n;
	}
	return v;
}

/* Is the record's hook the configured one (the same file, checked)? */
static bool hook_same(const char *rec_hook, const struct stat *want)
{
	struct stat st;
	aj_error err;
	return want && aj_mint_hook_id(rec_hook, &st, &err) == 0 && st.st_dev == want->st_dev &&
	       st.st_ino == want->st_ino;
}

int aj_mintrec_sweep(const char *dir, const char *hook, const aj_mintrec_out *out)
{
	aj_error err;
	aj_err_clear(&err);
	int dfd = aj_mintrec_dir_open(dir, false, &err);
	if (dfd == -ENOENT || dfd == -EACCES) /* none, or another user's */
		return 0;
	if (dfd < 0) {
		say(out, "%s (%s)", err.msg, err.hint);
		event(out, "secret_revoke_failed",
		      json_pack("{s:s,s:s}", "record", dir, "error", err.msg));
		return 0;
	}
	DIR *d = fdopendir(dfd);
	if (!d) {
		close(dfd);
		return 0;
	}
	struct stat want_st, *want = NULL;
	if (hook && aj_mint_hook_id(hook, &want_st, &err) == 0)
		want = &want_st;
	long long deadline = now_ms() + SWEEP_MS;
	bool told_unknown = false, spent = false;
	json_t *told = json_object(); /* the hooks said to be needed, once each */
	size_t n_names;
	char **names = list_names(d, &n_names);
	int left = 0;
	for (size_t i = 0; i < n_names; i++) {
		const char *n = names[i];
		if (strncmp(n, ".tmp-", 5) == 0 && tmp_stale(dfd, n))
			unlinkat(dfd, n, 0);
		if (n[0] == '.')
			continue;
		spent |= stopped(out);
		if (spent) {
			left++;
			continue;
		}
		const char *why;
		int fd, alive = 0;
		json_t *o = record_load(dfd, n, &fd, &why);
		const char *rec_hook = json_string_value(json_object_get(o, "hook"));
		if (!o && !why)
			left += errno != ENOENT; /* not judged now: for the next start */
		else if (!o)
			record_bad(dfd, dir, n, fd, why, out);
		else if ((alive = owner_alive(json_object_get(o, "owner"))) != 0) {
			/* its owner revokes it; or its owner cannot be judged */
			if (alive < 0 && !told_unknown)
				say(out,
				    "this boot's id or pid namespace cannot be read: the records "
				    "of minted secrets in %s are left as they are",
				    dir);
			told_unknown |= alive < 0;
			left += alive < 0;
		} else if (!hook_same(rec_hook, want)) {
			/* only the hook this process was given runs (never one a
			 * record names: whoever wrote it would choose the program) */
			if (told && !json_object_get(told, rec_hook) &&
			    json_object_set_new(told, rec_hook, json_true()) == 0)
				say(out,
				    "%s/%s names the mint hook %s: it is kept for a run or "
				    "serve started with --secret-mint %s",
				    dir, n, rec_hook, rec_hook);
			left++;
		} else if (flock(fd, LOCK_EX | LOCK_NB) < 0 || !still_linked(dfd, n, fd))
			left++; /* another start has claimed it, or has done it */
		else
			left += record_revoke(dfd, dir, n, o, hook, deadline, &spent, out);
		json_decref(o);
		if (fd >= 0)
			close(fd); /* the claim ends */
		if (!spent && (now_ms() >= deadline || stopped(out)))
			spent = true;
	}
	if (spent && !stopped(out))
		say(out, "the sweep of %s took its %d s: what is left is for the next start", dir,
		    SWEEP_MS / 1000);
	json_decref(told);
	for (size_t i = 0; i < n_names; i++)
		free(names[i]);
	free(names);
	closedir(d);
	return left;
}

int aj_mintrec_scan(const char *dir, unsigned *live, unsigned *lost, unsigned *bad, aj_error *err)
{
	*live = *lost = *bad = 0;
	int dfd = aj_mintrec_dir_open(dir, false, err);
	if (dfd == -ENOENT)
		return 0;
	if (dfd < 0)
		return dfd;
	DIR *d = fdopendir(dfd);
	if (!d) {
		close(dfd);
		return 0;
	}
	struct dirent *de;
	while ((de = readdir(d))) {
		const char *n = de->d_name, *why;
		if (strncmp(n, ".bad-", 5) == 0)
			++*bad;
		if (n[0] == '.')
			continue;
		int fd;
		json_t *o = record_load(dfd, n, &fd, &why);
		if (!o)
			*bad += why != NULL;
		else if (owner_alive(json_object_get(o, "owner")) != 0)
			++*live;
		else
			++*lost;
		json_decref(o);
		if (fd >= 0)
			close(fd);
	}
	closedir(d);
	return 0;
}
