/* SPDX-License-Identifier: MIT */
/* Snapshots of a level-3 sandbox (docs/levels.md, "Snapshots"): a VM on an
 * image without a workspace (its devices all migrate: virtio-blk, -serial,
 * -rng; a vhost-user-fs one does not) is saved once ready, and later
 * sandboxes of the same kind start by restoring it instead of booting.
 * Such a VM boots with its RAM in a memfd of ours, shared with qemu
 * (memory-backend-file on /proc/self/fd/4, share=on); the save is qemu's
 * migration of the devices only (x-ignore-shared) to
 * STATE/microvm/snap-IMAGE-KEY.vmstate, and the RAM, copied from that memfd
 * while the VM stands stopped, to snap-IMAGE-KEY.ram beside it (IMAGE: the
 * image's digest, KEY: its command line without its directory, the /etc
 * layer and the image). A restore maps the RAM private (share=off:
 * copy-on-write, the pages shared by every VM restored from it until one
 * writes) from a sealed memfd loaded once from the file: qemu 7.2 opens a
 * share=off file read-write, and the seals keep its uid (anyone's) from
 * changing the shared pages. A fork's save (box.c) is the whole VM in one
 * stream, restored with -incoming fd:3. The fds go to qemu over QMP
 * (getfd) and as fds 3 and 4: qemu 7.2 has no `file:`
 * URI and its seccomp filter forbids `exec:`. */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <jansson.h>
#include <poll.h>
#include <stdbool.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <dirent.h>
#include <signal.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <sys/random.h>
#include <sys/sendfile.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/statvfs.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

#include "snap.h"
#include "image.h"
#include "microvm.h"
#include "rootimg.h"
#include "util.h"

static uint64_t fnv(uint64_t h, const char *s, size_t n)
{
	for (size_t i = 0; i < n; i++)
		h = (h ^ (unsigned char)s[i]) * 1099511628211ULL;
	return h;
}

void aj_mv_snap_path(const char *dir, char *const *argv, size_t n, const char *rootimg,
		     unsigned long long etc_hash, char *out, size_t len)
{
	uint64_t a = 14695981039346656037ULL, b = 0x9e3779b97f4a7c15ULL;
	size_t dl = strlen(dir);
	for (size_t i = 0; i < n; i++) {
		/* the VM's own directory is left out: it differs each time */
		const char *s = argv[i], *d;
		while ((d = strstr(s, dir))) {
			a = fnv(a, s, (size_t)(d - s)), b = fnv(b, s, (size_t)(d - s));
			s = d + dl;
		}
		a = fnv(a, s, strlen(s) + 1), b = fnv(b, s, strlen(s) + 1);
	}
	a = fnv(a, rootimg, strlen(rootimg)), b = fnv(b, rootimg, strlen(rootimg));
	a ^= etc_hash, b = fnv(b, (const char *)&etc_hash, sizeof(etc_hash));
	/* the image's digest first: its snapshots go with it (aj_microvm_image_gc) */
	const char *base = strrchr(rootimg, '/');
	char img[65];
	if (!aj_mv_rootimg_digest(base ? base + 1 : rootimg, img))
		snprintf(img, sizeof(img), "dir");
	snprintf(out, len, "%s/microvm/snap-%s-%016llx%016llx.vmstate", aj_state_dir(), img,
		 (unsigned long long)a, (unsigned long long)b);
}

/* A file name of STATE/microvm that is (part of) a snapshot made on a
 * stored image: snap-HEX-KEY..., true with HEX. */
static bool snap_digest(const char *name, char hex[65])
{
	if (strncmp(name, "snap-", 5) || strnlen(name + 5, 65) < 65 || name[5 + 64] != '-')
		return false;
	for (int k = 0; k < 64; k++) {
		char c = name[5 + k];
		if (!((c >= '0' && c <= '9') || (c >= 'a' && c <= 'f')))
			return false;
	}
	memcpy(hex, name + 5, 64);
	hex[64] = '\0';
	return true;
}

void aj_microvm_image_gc(void)
{
	char dir[PATH_MAX];
	snprintf(dir, sizeof(dir), "%s/microvm", aj_state_dir());
	DIR *d = opendir(dir);
	if (!d)
		return;
	for (struct dirent *e; (e = readdir(d));) {
		char hex[65], img[PATH_MAX + 80];
		if (!aj_mv_rootimg_digest(e->d_name, hex) && !snap_digest(e->d_name, hex))
			continue;
		/* its image is in the store (STATE/images/HEX): kept */
		snprintf(img, sizeof(img), "%s/images/%s", aj_state_dir(), hex);
		struct stat st;
		if (lstat(img, &st) == 0 || errno != ENOENT)
			continue;
		/* a save under way (NAME.PID.tmp) is its process's to finish */
		const char *tmp = strrchr(e->d_name, '.');
		if (tmp && !strcmp(tmp, ".tmp")) {
			const char *dot = tmp;
			while (dot > e->d_name && dot[-1] != '.')
				dot--;
			int pid = atoi(dot);
			if (pid > 0 && !(kill(pid, 0) < 0 && errno == ESRCH))
				continue;
		}
		if (fstatat(dirfd(d), e->d_name, &st, AT_SYMLINK_NOFOLLOW) == 0 &&
		    S_ISREG(st.st_mode))
			(void)unlinkat(dirfd(d), e->d_name, 0);
	}
	closedir(d);
}

/* ---- QMP ---- */

typedef struct qmp {
	int fd;
	char buf[8192];
	size_t len;
} qmp;

/* The next line from qemu, parsed; NULL at the end or after timeout. */
static json_t *qmp_line(qmp *q, unsigned long long deadline_ms)
{
	for (;;) {
		char *nl = memchr(q->buf, '\n', q->len);
		if (nl) {
			*nl = '\0';
			json_t *j = json_loads(q->buf, 0, NULL);
			size_t used = (size_t)(nl + 1 - q->buf);
			memmove(q->buf, nl + 1, q->len - used);
			q->len -= used;
			if (j)
				return j;
			continue;
		}
		if (q->len == sizeof(q->buf))
			q->len = 0; /* a line longer than any answer we wait for */
		struct timespec ts;
		clock_gettime(CLOCK_MONOTONIC, &ts);
		unsigned long long now =
		    (unsigned long long)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
		struct pollfd pf = {q->fd, POLLIN, 0};
		if (now >= deadline_ms || poll(&pf, 1, (int)(deadline_ms - now)) <= 0)
			return NULL;
		ssize_t r = read(q->fd, q->buf + q->len, sizeof(q->buf) - q->len);
		if (r <= 0)
			return NULL;
		q->len += (size_t)r;
	}
}

static unsigned long long mono_ms(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (unsigned long long)ts.tv_sec * 1000 + (unsigned long long)ts.tv_nsec / 1000000;
}

/* Send cmd (with an fd as SCM_RIGHTS when fd >= 0); its "return" (a new
 * reference), or NULL with err. Events before the answer are skipped. */
static json_t *qmp_cmd(qmp *q, const char *cmd, int fd, aj_error *err)
{
	struct iovec iov = {(void *)cmd, strlen(cmd)};
	union {
		char c[CMSG_SPACE(sizeof(int))];
		struct cmsghdr h;
	} u;
	struct msghdr mh = {.msg_iov = &iov, .msg_iovlen = 1};
	if (fd >= 0) {
		mh.msg_control = u.c, mh.msg_controllen = sizeof(u.c);
		struct cmsghdr *c = CMSG_FIRSTHDR(&mh);
		c->cmsg_level = SOL_SOCKET, c->cmsg_type = SCM_RIGHTS;
		c->cmsg_len = CMSG_LEN(sizeof(int));
		memcpy(CMSG_DATA(c), &fd, sizeof(int));
	}
	if (sendmsg(q->fd, &mh, MSG_NOSIGNAL) != (ssize_t)iov.iov_len) {
		aj_err(err, errno, "microvm: QMP %s", cmd);
		return NULL;
	}
	unsigned long long deadline = mono_ms() + 10000;
	for (json_t *j; (j = qmp_line(q, deadline));) {
		json_t *ret = json_object_get(j, "return"), *e = json_object_get(j, "error");
		if (ret) {
			json_incref(ret);
			json_decref(j);
			return ret;
		}
		if (e) {
			aj_err(err, EIO, "microvm: QMP %s: %s", cmd,
			       json_string_value(json_object_get(e, "desc")) ?: "error");
			json_decref(j);
			return NULL;
		}
		json_decref(j);
	}
	aj_err(err, ETIMEDOUT, "microvm: QMP %s: no answer", cmd);
	return NULL;
}

static int qmp_open(const char *vmdir, qmp *q, aj_error *err)
{
	struct sockaddr_un a = {.sun_family = AF_UNIX};
	snprintf(a.sun_path, sizeof(a.sun_path), "%s/qmp.sock", vmdir);
	q->len = 0;
	q->fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (q->fd < 0 || connect(q->fd, (struct sockaddr *)&a, sizeof(a)) < 0)
		return aj_err(err, errno, "microvm: QMP %s", a.sun_path);
	json_t *greeting = qmp_line(q, mono_ms() + 5000);
	if (!greeting)
		return aj_err(err, EIO, "microvm: QMP: no greeting");
	json_decref(greeting);
	json_t *r = qmp_cmd(q, "{\"execute\":\"qmp_capabilities\"}", -1, err);
	if (!r)
		return -EIO;
	json_decref(r);
	return 0;
}

/* Snapshots are keyed on the VM's whole configuration: a client varying
 * it would make one RAM image per create. At most AJ_MV_SNAP_KEEP stay
 * (the oldest go first), and a save a dead process left is removed. */
#define AJ_MV_SNAP_KEEP 8

void aj_mv_snap_ram_path(const char *file, char *out, size_t len)
{
	size_t n = strlen(file);
	if (n > 8 && !strcmp(file + n - 8, ".vmstate"))
		n -= 8;
	snprintf(out, len, "%.*s.ram", (int)n, file);
}

/* NIC hotplugs that failed in a row, by snapshot (its file's name), in
 * this process: a few slots, a new failure taking the oldest one's */
static struct {
	char name[NAME_MAX + 1];
	unsigned fails;
	unsigned long long used;
} nic_fails[8];
static unsigned long long nic_clock;
static pthread_mutex_t nic_mu = PTHREAD_MUTEX_INITIALIZER;

unsigned aj_mv_snap_nic_result(const char *file, bool ok)
{
	const char *name = strrchr(file, '/') ? strrchr(file, '/') + 1 : file;
	unsigned n = 0;
	pthread_mutex_lock(&nic_mu);
	size_t at = 0;
	for (size_t k = 0; k < AJ_ARRAY_SIZE(nic_fails); k++) {
		if (!strcmp(nic_fails[k].name, name)) {
			at = k;
			break;
		}
		if (nic_fails[k].used < nic_fails[at].used)
			at = k;
	}
	if (ok && !strcmp(nic_fails[at].name, name)) {
		nic_fails[at].name[0] = '\0';
		nic_fails[at].used = 0;
	} else if (!ok) {
		if (strcmp(nic_fails[at].name, name)) {
			snprintf(nic_fails[at].name, sizeof(nic_fails[at].name), "%s", name);
			nic_fails[at].fails = 0;
		}
		n = ++nic_fails[at].fails;
		nic_fails[at].used = ++nic_clock;
	}
	pthread_mutex_unlock(&nic_mu);
	return n;
}

void aj_mv_snap_remove(const char *file)
{
	char ram[PATH_MAX];
	aj_mv_snap_ram_path(file, ram, sizeof(ram));
	unlink(file);
	unlink(ram);
	(void)aj_mv_snap_nic_result(file, true); /* a new save there starts afresh */
}

static void snap_evict(void)
{
	char dir[PATH_MAX];
	snprintf(dir, sizeof(dir), "%s/microvm", aj_state_dir());
	DIR *d = opendir(dir);
	if (!d)
		return;
	struct {
		char name[NAME_MAX + 1];
		time_t mtime;
	} keep[AJ_MV_SNAP_KEEP + 1];
	size_t n = 0;
	struct dirent *e;
	while ((e = readdir(d))) {
		if (strncmp(e->d_name, "snap-", 5))
			continue;
		struct stat st;
		if (fstatat(dirfd(d), e->d_name, &st, AT_SYMLINK_NOFOLLOW) < 0 ||
		    !S_ISREG(st.st_mode))
			continue;
		const char *tmp = strstr(e->d_name, ".vmstate.");
		if (!tmp && (tmp = strstr(e->d_name, ".ram.")))
			tmp -= 4; /* NAME.ram.PID.tmp: the pid at the same place */
		if (tmp) {	  /* NAME.vmstate.PID.tmp */
			int pid = atoi(tmp + 9);
			if (pid > 0 && kill(pid, 0) < 0 && errno == ESRCH)
				unlinkat(dirfd(d), e->d_name, 0);
			continue;
		}
		size_t l = strlen(e->d_name);
		if (l > 4 && !strcmp(e->d_name + l - 4, ".ram")) {
			/* a RAM file without its state (a save that died between
			 * its renames, or its state evicted): gone after a minute */
			char state[NAME_MAX + 8];
			snprintf(state, sizeof(state), "%.*s.vmstate", (int)(l - 4), e->d_name);
			if (faccessat(dirfd(d), state, F_OK, 0) < 0 &&
			    st.st_ctime + 60 < time(NULL))
				unlinkat(dirfd(d), e->d_name, 0);
			continue;
		}
		/* the newest AJ_MV_SNAP_KEEP - 1 are kept: room for the one saved now */
		size_t at = n;
		while (at > 0 && keep[at - 1].mtime < st.st_mtime)
			at--;
		memmove(&keep[at + 1], &keep[at], (n - at) * sizeof(keep[0]));
		snprintf(keep[at].name, sizeof(keep[at].name), "%s", e->d_name);
		keep[at].mtime = st.st_mtime;
		if (++n == AJ_MV_SNAP_KEEP) { /* the oldest of them goes, with its RAM */
			char path[PATH_MAX + NAME_MAX + 2];
			snprintf(path, sizeof(path), "%s/%s", dir, keep[--n].name);
			aj_mv_snap_remove(path);
		}
	}
	closedir(d);
}

/* A save's bound in time: a stopped VM's RAM written once (a test may
 * shorten it: AGENTJAIL_MICROVM_TEST_SAVE_MS). */
#define AJ_MV_SAVE_TIMEOUT_MS 60000ULL

unsigned long long aj_mv_test_ms(const char *env, unsigned long long def)
{
	const char *v = getenv(env);
	char *end;
	errno = 0;
	unsigned long long ms = v && *v ? strtoull(v, &end, 10) : 0;
	return ms && !errno && !*end && ms < def ? ms : def;
}

static int migrate_status(qmp *q, char *st, char *why, aj_error *err)
{
	json_t *s = qmp_cmd(q, "{\"execute\":\"query-migrate\"}", -1, err);
	if (!s)
		return -EIO;
	snprintf(st, 32, "%s", json_string_value(json_object_get(s, "status")) ?: "");
	snprintf(why, 256, "%s", json_string_value(json_object_get(s, "error-desc")) ?: "");
	json_decref(s);
	return 0;
}

/* migrate_cancel, then its end waited for (10 s at most): whether it ended. */
static bool cancel_migration(qmp *q)
{
	json_t *j = qmp_cmd(q, "{\"execute\":\"migrate_cancel\"}", -1, NULL);
	json_decref(j);
	for (unsigned long long until = mono_ms() + 10000; mono_ms() < until;) {
		char st[32], why[256];
		if (migrate_status(q, st, why, NULL) < 0)
			return false;
		if (!strcmp(st, "cancelled") || !strcmp(st, "failed") || !strcmp(st, "completed"))
			return true;
		struct timespec ts = {0, 5000000};
		nanosleep(&ts, NULL);
	}
	return false;
}

/* The save's directory must hold the guest's whole RAM (its bound). */
static int room_for(qmp *q, const char *file, aj_error *err)
{
	json_t *m = qmp_cmd(q, "{\"execute\":\"query-memory-size-summary\"}", -1, err);
	if (!m)
		return -EIO;
	unsigned long long ram =
	    (unsigned long long)json_integer_value(json_object_get(m, "base-memory"));
	json_decref(m);
	char dir[PATH_MAX];
	snprintf(dir, sizeof(dir), "%s", file);
	char *slash = strrchr(dir, '/');
	if (slash)
		*slash = '\0';
	struct statvfs vs;
	if (statvfs(slash ? dir : ".", &vs) < 0)
		return aj_err(err, errno, "microvm: %s", dir);
	unsigned long long room = (unsigned long long)vs.f_bavail * vs.f_frsize;
	if (room < ram) {
		aj_err(err, ENOSPC,
		       "microvm: %s has %llu MiB free, less than the VM's %llu MiB of RAM that "
		       "its save may need",
		       dir, room >> 20, ram >> 20);
		aj_err_hint(err, "free space there (the state directory), or give the sandbox "
				 "less \"memory\"");
		return -ENOSPC;
	}
	return 0;
}

enum { CHUNK = 1 << 20, PAGE = 4096 };

/* in's data (its extents, less the pages of zeros) written at the same
 * offsets of out, sized as in, through buf (CHUNK bytes): 0 or -errno.
 * System calls only: a forked child of the threaded service runs it. */
static int copy_with(int in, int out, char *buf)
{
	struct stat st;
	if (fstat(in, &st) < 0 || ftruncate(out, st.st_size) < 0)
		return -errno;
	static const char zero[PAGE];
	for (off_t off = 0; off < st.st_size;) {
		off_t data = lseek(in, off, SEEK_DATA);
		if (data < 0)
			return errno == ENXIO ? 0 : -errno;
		off_t end = lseek(in, data, SEEK_HOLE);
		if (end < 0)
			return -errno;
		for (off = data; off < end;) {
			size_t want = (size_t)(end - off) < CHUNK ? (size_t)(end - off) : CHUNK;
			ssize_t r = pread(in, buf, want, off);
			if (r <= 0)
				return r < 0 ? -errno : -EIO;
			/* a write per run of non-zero pages, not per page */
			for (ssize_t k = 0, run = 0;; k += PAGE) {
				bool last = k >= r;
				size_t len = last || r - k >= PAGE ? PAGE : (size_t)(r - k);
				if (!last && memcmp(buf + k, zero, len))
					continue;
				ssize_t stop = last ? r : k;
				ssize_t w = stop > run ? pwrite(out, buf + run,
								(size_t)(stop - run), off + run)
						       : 0;
				if (w != stop - run)
					return w < 0 ? -errno : -EIO;
				if (last)
					break;
				run = k + PAGE;
			}
			off += r;
		}
	}
	return 0;
}

static int copy_data(int in, int out)
{
	_cleanup_free_ char *buf = malloc(CHUNK);
	return buf ? copy_with(in, out, buf) : -ENOMEM;
}

/* x-ignore-shared on: a shared RAM block (our memfd) is left out of the
 * stream; off: the whole RAM in it (a restore or a save may have set it) */
static int migrate_caps(qmp *q, bool on, aj_error *err)
{
	json_t *j = qmp_cmd(q,
			    on ? "{\"execute\":\"migrate-set-capabilities\",\"arguments\":"
				 "{\"capabilities\":[{\"capability\":\"x-ignore-shared\","
				 "\"state\":true}]}}"
			       : "{\"execute\":\"migrate-set-capabilities\",\"arguments\":"
				 "{\"capabilities\":[{\"capability\":\"x-ignore-shared\","
				 "\"state\":false}]}}",
			    -1, err);
	json_decref(j);
	return j ? 0 : -EIO;
}

static void ram_preload(const char *ram);

int aj_mv_snap_save_ram(const char *vmdir, const char *file, int ramfd, aj_error *err)
{
	snap_evict();
	qmp q = {.fd = -1};
	char tmp[PATH_MAX + 32], ram[PATH_MAX], ramtmp[PATH_MAX + 32];
	aj_mv_snap_ram_path(file, ram, sizeof(ram));
	snprintf(tmp, sizeof(tmp), "%s.%d.tmp", file, (int)getpid());
	snprintf(ramtmp, sizeof(ramtmp), "%s.%d.tmp", ram, (int)getpid());
	int fd = open(tmp, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0600), rfd = -1;
	int r = fd < 0 ? aj_err(err, errno, "microvm: %s", tmp) : 0;
	if (r == 0 && ramfd >= 0 &&
	    (rfd = open(ramtmp, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0600)) < 0)
		r = aj_err(err, errno, "microvm: %s", ramtmp);
	if (r == 0)
		r = qmp_open(vmdir, &q, err);
	/* the RAM in our memfd: the stream carries the devices only; else all */
	if (r == 0)
		r = migrate_caps(&q, ramfd >= 0, err);
	json_t *j = NULL;
	if (r == 0 &&
	    !(j = qmp_cmd(&q, "{\"execute\":\"getfd\",\"arguments\":{\"fdname\":\"snap\"}}", fd,
			  err)))
		r = -EIO;
	json_decref(j);
	j = NULL;
	/* not live: the VM stopped first, its memory written once (a running
	 * guest dirtying pages faster than they are copied would never end);
	 * the source restores running (store-global-state=off, boot.c) */
	bool stopped = false;
	if (r == 0 && (r = room_for(&q, file, err)) == 0) {
		if ((j = qmp_cmd(&q, "{\"execute\":\"stop\"}", -1, err)))
			stopped = true;
		else
			r = -EIO;
		json_decref(j);
		j = NULL;
	}
	if (r == 0 && (j = qmp_cmd(&q,
				   "{\"execute\":\"migrate-set-parameters\",\"arguments\":"
				   "{\"max-bandwidth\":17179869184}}",
				   -1, NULL)))
		json_decref(j);
	j = NULL;
	if (r == 0 &&
	    !(j = qmp_cmd(&q, "{\"execute\":\"migrate\",\"arguments\":{\"uri\":\"fd:snap\"}}", -1,
			  err)))
		r = -EIO;
	json_decref(j);
	j = NULL;
	bool started = r == 0;
	unsigned long long bound =
	    aj_mv_test_ms("AGENTJAIL_MICROVM_TEST_SAVE_MS", AJ_MV_SAVE_TIMEOUT_MS);
	for (unsigned long long until = mono_ms() + bound; r == 0;) {
		char st[32], why[256];
		if (migrate_status(&q, st, why, err) < 0) {
			r = -EIO;
			break;
		}
		if (!strcmp(st, "completed"))
			break;
		bool late = mono_ms() > until;
		if (!strcmp(st, "failed") || !strcmp(st, "cancelled") || late) {
			char in[48];
			snprintf(in, sizeof(in), "not done in %llu ms", bound);
			r = aj_err(err, late ? ETIMEDOUT : EIO, "microvm: the VM's save: %s%s%s",
				   late ? in : st, *why ? ": " : "", why);
			break;
		}
		struct timespec ts = {0, 5000000};
		nanosleep(&ts, NULL);
	}
	/* the VM stands stopped: its RAM as the devices were saved */
	int e;
	if (r == 0 && rfd >= 0 && (e = copy_data(ramfd, rfd)) < 0)
		r = aj_err(err, -e, "microvm: the snapshot's RAM %s", ramtmp);
	/* a save that did not end: cancelled, and its end waited for (qemu
	 * writes no more into the file, and `cont` is not a no-op) */
	bool ended = !(r < 0 && started) || cancel_migration(&q);
	/* the source goes on as the sandbox: a VM left stopped (or still
	 * saving) is lost */
	if (stopped && (!ended || !(j = qmp_cmd(&q, "{\"execute\":\"cont\"}", -1, NULL)))) {
		char why[sizeof(err->msg)];
		snprintf(why, sizeof(why), "%s", r < 0 ? err->msg : "");
		aj_err(err, ENOTRECOVERABLE, "microvm: the VM did not go on after its save%s%s",
		       *why ? " (which failed: " : "", *why ? why : "");
		if (*why)
			strncat(err->msg, ")", sizeof(err->msg) - strlen(err->msg) - 1);
		r = -ENOTRECOVERABLE;
	}
	json_decref(j);
	if (q.fd >= 0)
		close(q.fd);
	/* one mtime for both files: a restore takes only a pair (aj_mv_snap_open);
	 * the RAM first, the state (what a restore looks for) last; a pair in
	 * place stays (a concurrent save of the same VM gives way) */
	struct timespec now[2];
	clock_gettime(CLOCK_REALTIME, &now[0]);
	now[1] = now[0];
	if (r == 0 && rfd >= 0 &&
	    (fsync(rfd) < 0 || futimens(rfd, now) < 0 || futimens(fd, now) < 0 ||
	     renameat2(AT_FDCWD, ramtmp, AT_FDCWD, ram, RENAME_NOREPLACE) < 0))
		r = aj_err(err, errno, "microvm: %s", ram);
	else if (r == 0 && rfd >= 0)
		ramtmp[0] = '\0'; /* in place */
	if (fd >= 0 && r == 0 &&
	    (fsync(fd) < 0 || renameat2(AT_FDCWD, tmp, AT_FDCWD, file, RENAME_NOREPLACE) < 0)) {
		r = aj_err(err, errno, "microvm: %s", file);
		if (rfd >= 0)
			unlink(ram);
	}
	if (fd >= 0)
		close(fd);
	if (rfd >= 0)
		close(rfd);
	if (r < 0) {
		unlink(tmp);
		if (ramtmp[0])
			unlink(ramtmp);
	}
	/* the RAM loaded for the restores now (from the page cache), not in
	 * the first one's create (docs/performance.md, round 30) */
	if (r == 0 && rfd >= 0)
		ram_preload(ram);
	return r;
}

int aj_mv_snap_save(const char *vmdir, const char *file, aj_error *err)
{
	return aj_mv_snap_save_ram(vmdir, file, -1, err);
}

/* ---- restores ---- */

/* The sealed memfds of the snapshots' RAM, loaded once per process and
 * snapshot file (a few: each holds the data of a RAM; a dropped one lives
 * on in the VMs that map it). */
#define RAM_CACHE 2
static struct {
	dev_t dev;
	ino_t ino;
	struct timespec mtime;
	int fd; /* -1: empty */
	unsigned long long used;
} ram_cache[RAM_CACHE] = {{.fd = -1}, {.fd = -1}};
static pthread_mutex_t ram_mu = PTHREAD_MUTEX_INITIALIZER;
static unsigned long long ram_clock;

static int ram_memfd(int in, const struct stat *st, const char *name, aj_error *err)
{
	pthread_mutex_lock(&ram_mu);
	int slot = 0, fd = -1;
	for (int k = 0; k < RAM_CACHE; k++) {
		if (ram_cache[k].fd >= 0 && ram_cache[k].dev == st->st_dev &&
		    ram_cache[k].ino == st->st_ino &&
		    ram_cache[k].mtime.tv_sec == st->st_mtim.tv_sec &&
		    ram_cache[k].mtime.tv_nsec == st->st_mtim.tv_nsec) {
			ram_cache[k].used = ++ram_clock;
			fd = fcntl(ram_cache[k].fd, F_DUPFD_CLOEXEC, 5);
			pthread_mutex_unlock(&ram_mu);
			return fd < 0 ? aj_err(err, errno, "microvm: the snapshot's RAM") : fd;
		}
		if (ram_cache[k].used < ram_cache[slot].used)
			slot = k;
	}
	int m = memfd_create(name, MFD_CLOEXEC | MFD_ALLOW_SEALING), e = 0;
	if (m < 0)
		e = errno;
	else if ((e = -copy_data(in, m)) == 0 &&
		 fcntl(m, F_ADD_SEALS, F_SEAL_WRITE | F_SEAL_SHRINK | F_SEAL_GROW | F_SEAL_SEAL) <
		     0)
		e = errno;
	if (e == 0 && (fd = fcntl(m, F_DUPFD_CLOEXEC, 5)) < 0)
		e = errno;
	if (e) {
		if (m >= 0)
			close(m);
		pthread_mutex_unlock(&ram_mu);
		return aj_err(err, e, "microvm: the snapshot's RAM %s", name);
	}
	if (ram_cache[slot].fd >= 0)
		close(ram_cache[slot].fd);
	ram_cache[slot].dev = st->st_dev, ram_cache[slot].ino = st->st_ino;
	ram_cache[slot].mtime = st->st_mtim;
	ram_cache[slot].fd = m;
	ram_cache[slot].used = ++ram_clock;
	pthread_mutex_unlock(&ram_mu);
	return fd;
}

static void ram_preload(const char *ram)
{
	_cleanup_close_ int in = open(ram, O_RDONLY | O_CLOEXEC);
	struct stat st;
	const char *name = strrchr(ram, '/');
	int fd =
	    in >= 0 && fstat(in, &st) == 0 ? ram_memfd(in, &st, name ? name + 1 : ram, NULL) : -1;
	if (fd >= 0)
		close(fd);
}

int aj_mv_snap_open(const char *file, int *statefd, int *ramfd, aj_error *err)
{
	*statefd = *ramfd = -1;
	char ram[PATH_MAX];
	aj_mv_snap_ram_path(file, ram, sizeof(ram));
	_cleanup_close_ int s = open(file, O_RDONLY | O_CLOEXEC);
	_cleanup_close_ int r = s >= 0 ? open(ram, O_RDONLY | O_CLOEXEC) : -1;
	struct stat a, b;
	/* a state without its RAM is stale (a save renames the RAM first, a
	 * removal unlinks the state first): gone, so that the next save can
	 * take its place */
	if (s >= 0 && r < 0 && errno == ENOENT)
		unlink(file);
	if (s < 0 || r < 0 || fstat(s, &a) < 0 || fstat(r, &b) < 0)
		return -ENOENT;
	if (a.st_mtim.tv_sec != b.st_mtim.tv_sec || a.st_mtim.tv_nsec != b.st_mtim.tv_nsec)
		return -ENOENT; /* not a pair: another save's */
	const char *name = strrchr(ram, '/');
	int fd = ram_memfd(r, &b, name ? name + 1 : ram, err);
	if (fd < 0)
		return fd;
	*ramfd = fd;
	*statefd = s;
	s = -1;
	return 0;
}

int aj_mv_snap_incoming(const char *vmdir, aj_error *err)
{
	char sock[PATH_MAX];
	snprintf(sock, sizeof(sock), "%s/qmp.sock", vmdir);
	struct stat st;
	for (unsigned long long until = mono_ms() + 10000; stat(sock, &st) < 0;) {
		if (mono_ms() > until)
			return aj_err(err, ETIMEDOUT, "microvm: qemu's monitor %s", sock);
		struct timespec ts = {0, 1000000};
		nanosleep(&ts, NULL);
	}
	qmp q = {.fd = -1};
	int r = qmp_open(vmdir, &q, err);
	if (r == 0)
		r = migrate_caps(&q, true, err);
	json_t *j = NULL;
	if (r == 0 && !(j = qmp_cmd(&q,
				    "{\"execute\":\"migrate-incoming\",\"arguments\":{\"uri\":"
				    "\"fd:3\"}}",
				    -1, err)))
		r = -EIO;
	json_decref(j);
	if (q.fd >= 0)
		close(q.fd);
	return r;
}

/* The copy written by a child in cg (the VMM's host cgroups): a memfd's
 * pages are charged to the cgroup of who first writes them, so the VM's
 * RAM counts against the VM's limit, not the service's. 0 or -errno. */
static int copy_in(int sealed, int m, const aj_cgroup *cg, aj_error *err)
{
	char *buf = mmap(NULL, CHUNK, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	int go[2] = {-1, -1}, r = 0;
	if (buf == MAP_FAILED)
		return aj_err(err, errno, "microvm: a copy of the snapshot's RAM");
	if (pipe2(go, O_CLOEXEC) < 0) {
		r = aj_err(err, errno, "microvm: a copy of the snapshot's RAM");
		munmap(buf, CHUNK);
		return r;
	}
	pid_t pid = fork();
	if (pid == 0) { /* async-signal-safe calls only (a threaded parent) */
		char c;
		close(go[1]);
		prctl(PR_SET_PDEATHSIG, SIGKILL);
		/* none of the service's other fds (clients, other VMs' ports,
		 * another copy's pipe) held for the copy: no exec closes them */
		unsigned keep[3] = {(unsigned)sealed, (unsigned)m, (unsigned)go[0]};
		for (int a = 0; a < 2; a++)
			for (int b = 0; b < 2 - a; b++)
				if (keep[b] > keep[b + 1]) {
					unsigned t = keep[b];
					keep[b] = keep[b + 1], keep[b + 1] = t;
				}
		unsigned lo = 3;
		for (int k = 0; k < 3; k++) {
			if (keep[k] > lo)
				syscall(SYS_close_range, lo, keep[k] - 1, 0);
			if (keep[k] + 1 > lo)
				lo = keep[k] + 1;
		}
		syscall(SYS_close_range, lo, ~0U, 0);
		if (read(go[0], &c, 1) != 1)
			_exit(ECHILD);
		int e = copy_with(sealed, m, buf);
		_exit(e < 0 ? (-e & 0xff ? -e & 0xff : EIO) : 0);
	}
	close(go[0]);
	munmap(buf, CHUNK);
	if (pid < 0) {
		r = aj_err(err, errno, "microvm: a copy of the snapshot's RAM (fork)");
		close(go[1]);
		return r;
	}
	/* the child is in the VM's cgroups before it writes a page */
	if ((r = aj_cgroup_join(cg, pid, true, err)) < 0)
		aj_err_prefix(err, "microvm: the RAM copy's cgroup");
	else if (write(go[1], "g", 1) != 1)
		r = aj_err(err, errno, "microvm: a copy of the snapshot's RAM");
	close(go[1]); /* a child not told to go sees EOF and exits */
	int st = 0;
	pid_t w;
	while ((w = waitpid(pid, &st, 0)) < 0 && errno == EINTR)
		;
	if (r == 0 && w != pid) /* its status unknown: the copy not used */
		r = aj_err(err, errno, "microvm: a copy of the snapshot's RAM (wait)");
	else if (r == 0 && !(WIFEXITED(st) && WEXITSTATUS(st) == 0))
		r = aj_err(err, WIFEXITED(st) ? WEXITSTATUS(st) : EINTR,
			   "microvm: a copy of the snapshot's RAM (in the VM's cgroup)");
	return r;
}

int aj_mv_snap_ram_copy(int sealed, const aj_cgroup *cg, aj_error *err)
{
	int m = memfd_create("agentjail-vm-ram", MFD_CLOEXEC), e = m < 0 ? errno : 0;
	if (m >= 0 && cg && cg->n > 0) {
		if ((e = -copy_in(sealed, m, cg, err)) != 0)
			close(m);
		return e ? -e : m;
	}
	if (m >= 0 && (e = -copy_data(sealed, m)) != 0)
		close(m);
	return e ? aj_err(err, e, "microvm: a copy of the snapshot's RAM") : m;
}

const char *const aj_mv_snap_ports[] = {AJ_MV_PORT_WS, AJ_MV_PORT_NET};
const size_t aj_mv_snap_n_ports = sizeof(aj_mv_snap_ports) / sizeof(aj_mv_snap_ports[0]);

int aj_mv_snap_plug_ws(const char *vmdir, aj_error *err)
{
	char sock[PATH_MAX];
	snprintf(sock, sizeof(sock), "%s/ws.sock", vmdir);
	qmp q = {.fd = -1};
	int r = qmp_open(vmdir, &q, err);
	/* jansson's text: the path's quotes and backslashes stay a string */
	json_t *j = json_pack("{s:s,s:{s:s,s:{s:s,s:{s:b,s:{s:s,s:{s:s}}}}}}", "execute",
			      "chardev-add", "arguments", "id", "fsw", "backend", "type", "socket",
			      "data", "server", 0, "addr", "type", "unix", "data", "path", sock);
	_cleanup_free_ char *cmd = j ? json_dumps(j, JSON_COMPACT) : NULL;
	json_decref(j);
	j = NULL;
	if (r == 0 && !cmd)
		r = aj_err(err, ENOMEM, "microvm: the workspace's chardev");
	if (r == 0 && !(j = qmp_cmd(&q, cmd, -1, err)))
		r = -EIO;
	json_decref(j);
	j = NULL;
	if (r == 0 && !(j = qmp_cmd(&q,
				    "{\"execute\":\"device_add\",\"arguments\":{\"driver\":"
				    "\"vhost-user-fs-pci\",\"id\":\"ws\",\"chardev\":\"fsw\","
				    "\"tag\":\"ws\",\"bus\":\"" AJ_MV_PORT_WS "\"}}",
				    -1, err)))
		r = -EIO;
	json_decref(j);
	if (q.fd >= 0)
		close(q.fd);
	if (r < 0)
		aj_err_prefix(err, "microvm: the workspace's hotplug");
	return r;
}

int aj_mv_snap_plug_net(const char *vmdir, int tapfd, aj_error *err)
{
	qmp q = {.fd = -1};
	int r = qmp_open(vmdir, &q, err);
	/* the tap by SCM_RIGHTS (qemu's fd 3 is the snapshot's state); no
	 * option ROM (the confined qemu has no /usr/share/qemu, the guest no
	 * firmware) */
	static const char *const cmd[] = {
	    "{\"execute\":\"getfd\",\"arguments\":{\"fdname\":\"tap0\"}}",
	    "{\"execute\":\"netdev_add\",\"arguments\":{\"type\":\"tap\",\"id\":\"net0\","
	    "\"fd\":\"tap0\"}}",
	    "{\"execute\":\"device_add\",\"arguments\":{\"driver\":\"virtio-net-pci\","
	    "\"id\":\"nic0\",\"netdev\":\"net0\",\"romfile\":\"\",\"bus\":\"" AJ_MV_PORT_NET
	    "\"}}"};
	for (size_t k = 0; r == 0 && k < sizeof(cmd) / sizeof(cmd[0]); k++) {
		json_t *j = qmp_cmd(&q, cmd[k], k == 0 ? tapfd : -1, err);
		if (!j)
			r = -EIO;
		json_decref(j);
	}
	if (q.fd >= 0)
		close(q.fd);
	if (r < 0)
		aj_err_prefix(err, "microvm: the NIC's hotplug");
	return r;
}

json_t *aj_mv_identity_req(const aj_policy *p)
{
	unsigned char seed[32];
	char hex[65];
	if (getrandom(seed, sizeof(seed), 0) != sizeof(seed))
		return NULL;
	for (size_t k = 0; k < sizeof(seed); k++)
		snprintf(hex + 2 * k, 3, "%02x", seed[k]);
	struct timespec ts;
	clock_gettime(CLOCK_REALTIME, &ts);
	return json_pack("{s:s,s:s,s:s,s:I,s:I}", "op", "identity", "seed", hex, "hostname",
			 p->hostname ? p->hostname : AJ_DEFAULT_HOSTNAME, "sec",
			 (json_int_t)ts.tv_sec, "nsec", (json_int_t)ts.tv_nsec);
}
