/* SPDX-License-Identifier: MIT */
/* ajgvdrive: the persistent level-2 backend (aj_backend_gvisor) driven
 * through the seam (backend.h) without the service: create a sandbox from
 * a policy JSON file, commands and files in it, destroy, and check that
 * nothing is left (tests/gvisor/box.bats). TAP-like lines; exit 0 when all
 * pass.
 *   ajgvdrive POLICY.json            the scenario
 *   ajgvdrive POLICY.json --sweep    create, then the crash sweep from state
 *   ajgvdrive POLICY.json --measure  exec latency and memory of an idle sandbox
 *   ajgvdrive POLICY.json --refused  create must fail with a clear error
 *   ajgvdrive POLICY.json --oom      a command past --memory: 137
 *   ajgvdrive POLICY.json --exec CMD sh -c CMD in it, its stdout printed
 *   ajgvdrive POLICY.json --fork N CMD
 *                                    CMD in it, then in N copies of it
 *                                    (checkpoint, restore; copy K's
 *                                    "net-log" is the policy's with ".K"),
 *                                    then in it again; $WHO names the party
 *                                    (src, copy0.., src2), outputs printed */
#include <errno.h>
#include <fcntl.h>
#include <jansson.h>
#include <limits.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "backend.h"
#include "gvisor.h"
#include "util.h"

static const aj_backend *B = &aj_backend_gvisor;
static int failures, count;

static void check(bool ok, const char *what, const char *detail)
{
	count++;
	printf("%s %d - %s%s%s\n", ok ? "ok" : "not ok", count, what, detail ? ": " : "",
	       detail ? detail : "");
	fflush(stdout);
	if (!ok)
		failures++;
}

typedef struct out {
	char *buf[3];
	size_t len[3];
	int chunks;
} out;

static int on_output(void *ctx, int stream, const char *buf, size_t len)
{
	out *o = ctx;
	char *nb = realloc(o->buf[stream], o->len[stream] + len + 1);
	if (!nb)
		return -1;
	memcpy(nb + o->len[stream], buf, len);
	o->len[stream] += len;
	nb[o->len[stream]] = '\0';
	o->buf[stream] = nb;
	o->chunks++;
	return 0;
}

static void out_free(out *o)
{
	for (int k = 0; k < 3; k++)
		free(o->buf[k]);
	memset(o, 0, sizeof(*o));
}

typedef struct xopt {
	const char *stdin_data;
	int stdin_fd, signal_fd, tty_master, tty_slave;
	unsigned long long timeout_ms;
} xopt;

static int run(aj_inst *in, char **argv, const xopt *x, out *o, aj_run_result *res, aj_error *err)
{
	memset(o, 0, sizeof(*o));
	aj_exec_spec s = {.argv = argv};
	if (x) {
		s.stdin_data = x->stdin_data;
		s.stdin_len = x->stdin_data ? strlen(x->stdin_data) : 0;
		s.stdin_fd = x->stdin_fd;
		s.tty_master = x->tty_master;
		s.tty_slave = x->tty_slave;
		s.timeout_ms = x->timeout_ms;
	}
	aj_exec_io io = {.output = on_output, .ctx = o, .signal_fd = x ? x->signal_fd : -1};
	if (!x || !x->signal_fd)
		io.signal_fd = -1;
	aj_err_clear(err);
	aj_job *j = B->exec_start(in, &s, &io);
	return j ? B->exec_wait(j, res, err) : -ENOMEM;
}

#define SH(cmd) ((char *[]){"/bin/sh", "-c", cmd, NULL})

static void resize_later(int master, int rows, int cols, int ms)
{
	usleep((useconds_t)ms * 1000);
	struct winsize ws = {.ws_row = (unsigned short)rows, .ws_col = (unsigned short)cols};
	ioctl(master, TIOCSWINSZ, &ws);
}

static void *resizer(void *arg)
{
	resize_later(*(int *)arg, 40, 100, 1500);
	return NULL;
}

static void commands(aj_inst *in)
{
	out o;
	aj_run_result res;
	aj_error err;
	char d[256];
	int r = run(in, SH("echo hello >/tmp/state; echo persisted >/workspace/ws"), NULL, &o, &res,
		    &err);
	check(r == 0 && res.exit_code == 0, "a command runs", err.msg);
	out_free(&o);
	r = run(in, SH("cat /tmp/state /workspace/ws; cat /proc/version"), NULL, &o, &res, &err);
	check(r == 0 && o.buf[1] && strstr(o.buf[1], "hello\npersisted\n"),
	      "state persists between commands", o.buf[1]);
	check(o.buf[1] && strstr(o.buf[1], "4.4.0"), "under gVisor's kernel", NULL);
	out_free(&o);
	r = run(in, SH("echo out; echo err >&2; exit 7"), NULL, &o, &res, &err);
	check(r == 0 && res.exit_code == 7 && o.buf[1] && !strcmp(o.buf[1], "out\n") && o.buf[2] &&
		  !strcmp(o.buf[2], "err\n"),
	      "exit code, stdout and stderr apart", NULL);
	out_free(&o);
	r = run(in, SH("kill -KILL $$"), NULL, &o, &res, &err);
	check(r == 0 && res.exit_code == 137 && res.term_signal == SIGKILL,
	      "killed by a signal: 137", NULL);
	out_free(&o);
	r = run(in, (char *[]){"seq", "1", "300000", NULL}, NULL, &o, &res, &err);
	snprintf(d, sizeof(d), "%zu bytes in %d chunks", o.len[1], o.chunks);
	check(r == 0 && res.exit_code == 0 && o.len[1] == 1988895 && o.chunks > 1 &&
		  !strcmp(o.buf[1] + o.len[1] - 7, "300000\n"),
	      "a long output streamed whole", d);
	out_free(&o);
	r = run(in, (char *[]){"cat", NULL}, &(xopt){.stdin_data = "from stdin_data"}, &o, &res,
		&err);
	check(r == 0 && o.buf[1] && !strcmp(o.buf[1], "from stdin_data"), "stdin_data", o.buf[1]);
	out_free(&o);
	int p[2];
	if (pipe(p) == 0) {
		(void)!write(p[1], "from a pipe", 11);
		close(p[1]);
		r = run(in, (char *[]){"cat", NULL}, &(xopt){.stdin_fd = p[0]}, &o, &res, &err);
		close(p[0]);
		check(r == 0 && o.buf[1] && !strcmp(o.buf[1], "from a pipe"), "stdin_fd", o.buf[1]);
		out_free(&o);
	}
	r = run(in, (char *[]){"env", NULL}, NULL, &o, &res, &err);
	check(r == 0 && o.buf[1] && !strstr(o.buf[1], "s3cr3t-value-42") &&
		  strstr(o.buf[1], "[REDACTED]"),
	      "secret values are redacted in the output", NULL);
	out_free(&o);
	r = run(in, (char *[]){"sleep", "30", NULL}, &(xopt){.timeout_ms = 700}, &o, &res, &err);
	snprintf(d, sizeof(d), "exit %d after %llu ms", res.exit_code, res.wall_ms);
	check(r == 0 && res.exit_code == 124 && res.timed_out && res.wall_ms < 5000, "timeout: 124",
	      d);
	out_free(&o);
	if (pipe(p) == 0) {
		char sig = SIGTERM;
		(void)!write(p[1], &sig, 1);
		r = run(in, SH("sleep 20; echo not-reached"), &(xopt){.signal_fd = p[0]}, &o, &res,
			&err);
		snprintf(d, sizeof(d), "exit %d signal %d", res.exit_code, res.term_signal);
		check(r == 0 && res.exit_code == 143 && res.term_signal == SIGTERM && !o.buf[1],
		      "a signal byte signals the command's process group", d);
		out_free(&o);
		close(p[1]);
		close(p[0]);
	}
	r = run(in, SH("test -d /workspace/.git || exit 99; echo evil >>/workspace/.git/config"),
		NULL, &o, &res, &err);
	check(r == 0 && res.exit_code != 0, "the workspace guard holds: .git/config read-only",
	      o.buf[2]);
	out_free(&o);
	r = run(in, (char *[]){"/no/such/command", NULL}, NULL, &o, &res, &err);
	check(r < 0 && err.exit == 127, "not found: 127", err.msg);
	out_free(&o);
	r = run(in, (char *[]){"/usr/share", NULL}, NULL, &o, &res, &err);
	check(r < 0 && err.exit == 126, "not executable: 126", err.msg);
	out_free(&o);
}

typedef struct par {
	aj_inst *in;
	int k, r, code;
	out o;
} par;

static void *par_run(void *arg)
{
	par *x = arg;
	char cmd[64];
	aj_run_result res;
	aj_error err;
	snprintf(cmd, sizeof(cmd), "sleep 0.3; echo par-%d", x->k);
	x->r = run(x->in, SH(cmd), NULL, &x->o, &res, &err);
	x->code = res.exit_code;
	return NULL;
}

/* Commands from several threads at once. */
static void parallel(aj_inst *in)
{
	par x[4];
	pthread_t t[4];
	for (int k = 0; k < 4; k++) {
		x[k] = (par){.in = in, .k = k};
		pthread_create(&t[k], NULL, par_run, &x[k]);
	}
	bool ok = true;
	for (int k = 0; k < 4; k++) {
		char want[16];
		pthread_join(t[k], NULL);
		snprintf(want, sizeof(want), "par-%d\n", k);
		ok = ok && x[k].r == 0 && x[k].code == 0 && x[k].o.buf[1] &&
		     !strcmp(x[k].o.buf[1], want);
		out_free(&x[k].o);
	}
	check(ok, "four commands at once from four threads", NULL);
}

/* The OOM killer in the sandbox's cgroup: 137 and oom_killed. */
static void oom(aj_inst *in)
{
	out o;
	aj_run_result res;
	aj_error err;
	int r = run(in, (char *[]){"python3", "-c", "x = bytearray(1 << 30); print(len(x))", NULL},
		    NULL, &o, &res, &err);
	char d[128];
	snprintf(d, sizeof(d), "r %d exit %d oom %d %s", r, res.exit_code, res.oom_killed, err.msg);
	check(r == 0 && res.exit_code == 137 && res.oom_killed, "out of memory: 137, oom_killed",
	      d);
	out_free(&o);
}

static void terminal(aj_inst *in)
{
	int pty[2];
	aj_error err;
	aj_err_clear(&err);
	int r = B->open_pty(in, pty, &err);
	check(r == 0, "open_pty", err.msg);
	if (r < 0)
		return;
	resize_later(pty[0], 30, 90, 0);
	pthread_t t;
	pthread_create(&t, NULL, resizer, &pty[0]);
	out o;
	aj_run_result res;
	r = run(in, SH("tty; stty size; sleep 3; stty size"),
		&(xopt){.tty_master = pty[0], .tty_slave = pty[1]}, &o, &res, &err);
	pthread_join(t, NULL);
	check(r == 0 && res.exit_code == 0 && o.buf[1] && strstr(o.buf[1], "/dev/pts/") &&
		  strstr(o.buf[1], "30 90") && strstr(o.buf[1], "40 100"),
	      "a terminal inside, resized through the master", o.buf[1]);
	out_free(&o);
	close(pty[0]);
}

static void pausing(aj_inst *in)
{
	aj_error err;
	aj_err_clear(&err);
	int r = B->pause(in, true, &err);
	check(r == 0, "pause", err.msg);
	r = B->pause(in, false, &err);
	check(r == 0, "resume", err.msg);
	out o;
	aj_run_result res;
	r = run(in, (char *[]){"true", NULL}, NULL, &o, &res, &err);
	check(r == 0 && res.exit_code == 0, "a command after resume", err.msg);
	out_free(&o);
	aj_inst_stats st;
	r = B->stats(in, &st, &err);
	char d[128];
	snprintf(d, sizeof(d), "memory %llu, pids %llu, cpu %llu us", st.memory_bytes, st.pids,
		 st.cpu_usec);
	check(r == 0 && st.memory_bytes > 0 && st.pids > 0, "stats", d);
}

static int lister(void *ctx, const char *name, const aj_file_stat *st)
{
	if (!strcmp(name, "x") && st->type == 'f')
		*(int *)ctx += 1;
	if (!strcmp(name, "sub") && st->type == 'd')
		*(int *)ctx += 10;
	return 0;
}

static int read_all(aj_inst *in, const char *path, char *buf, size_t len, aj_error *err)
{
	int fd;
	aj_file_stat st;
	aj_err_clear(err);
	int r = B->file_read(in, path, &fd, &st, err);
	if (r < 0)
		return r;
	ssize_t n = read(fd, buf, len - 1);
	close(fd);
	buf[n > 0 ? n : 0] = '\0';
	return 0;
}

static void files(aj_inst *in)
{
	aj_error err;
	aj_err_clear(&err);
	int r = B->file_mkdir(in, "/tmp/a/b/sub", true, &err);
	check(r == 0, "mkdir -p", err.msg);
	int p[2];
	if (pipe(p) < 0)
		return;
	(void)!write(p[1], "file data\n", 10);
	close(p[1]);
	r = B->file_write(in, "/tmp/a/b/x", p[0], 10, 0640, &err);
	close(p[0]);
	check(r == 0, "write", err.msg);
	char buf[4096];
	r = read_all(in, "/tmp/a/b/x", buf, sizeof(buf), &err);
	check(r == 0 && !strcmp(buf, "file data\n"), "read it back", err.msg);
	aj_file_stat st;
	r = B->file_stat(in, "/tmp/a/b/x", &st, &err);
	check(r == 0 && st.type == 'f' && st.size == 10 && st.mode == 0640, "stat", err.msg);
	int seen = 0;
	r = B->file_list(in, "/tmp/a/b", lister, &seen, &err);
	check(r == 0 && seen == 11, "list", err.msg);
	out o;
	aj_run_result res;
	r = run(in,
		SH("cat /tmp/a/b/x; ln -s /etc/shadow /tmp/shadow; "
		   "ln -s /proc/self/environ /tmp/environ"),
		NULL, &o, &res, &err);
	check(r == 0 && o.buf[1] && !strcmp(o.buf[1], "file data\n"),
	      "a command sees the file written", NULL);
	out_free(&o);
	r = B->file_remove(in, "/tmp/a", true, &err);
	check(r == 0, "remove a tree", err.msg);
	r = B->file_stat(in, "/tmp/a", &st, &err);
	check(r == -ENOENT, "gone", err.msg);
	r = read_all(in, "/proc/self/status", buf, sizeof(buf), &err);
	check(r == -EPERM, "/proc refused", err.msg);
	r = read_all(in, "/tmp/environ", buf, sizeof(buf), &err);
	check(r == -EPERM, "a symlink into /proc refused", err.msg);
	r = B->file_list(in, "/sys", lister, &seen, &err);
	check(r == -EPERM, "/sys refused", err.msg);
	r = read_all(in, "/dev/null", buf, sizeof(buf), &err);
	check(r == -EPERM, "/dev refused", err.msg);
	r = B->file_mkdir(in, "/proc/x", false, &err);
	check(r == -EPERM, "mkdir in /proc refused", err.msg);
	_cleanup_free_ char *host = NULL;
	(void)aj_read_file("/etc/shadow", &host, NULL);
	r = read_all(in, "/tmp/shadow", buf, sizeof(buf), &err);
	check((r == -ENOENT || (r == 0 && host && strcmp(buf, host))) && !strstr(buf, "root:"),
	      "a symlink to /etc/shadow shows the sandbox's view only", err.msg);
	r = B->file_remove(in, "/tmp/shadow", false, &err);
	check(r == 0, "remove a file", err.msg);
}

/* Anything of this sandbox left: processes naming its runsc root, its
 * directory, its cgroups. */
static bool residue(json_t *state, char *what, size_t len)
{
	const char *dir = json_string_value(json_object_get(state, "dir"));
	struct stat st;
	if (dir && stat(dir, &st) == 0) {
		snprintf(what, len, "directory %s", dir);
		return true;
	}
	size_t k;
	json_t *v;
	json_array_foreach(json_object_get(state, "cgroups"), k, v)
	{
		if (stat(json_string_value(v), &st) == 0) {
			snprintf(what, len, "cgroup %s", json_string_value(v));
			return true;
		}
	}
	json_array_foreach(json_object_get(state, "pids"), k, v)
	{
		char path[64];
		_cleanup_free_ char *pst = NULL;
		snprintf(path, sizeof(path), "/proc/%d/stat",
			 (int)json_integer_value(json_object_get(v, "pid")));
		const char *e = aj_read_file(path, &pst, NULL) == 0 ? strrchr(pst, ')') : NULL;
		/* a zombie child of ours (netd: its parent "died" only here) is gone */
		if (e && e[1] && e[2] != 'Z' && e[2] != 'X') {
			snprintf(what, len, "process %s", path);
			return true;
		}
	}
	return false;
}

/* The policy of a JSON text: the API's keys, and "net-log" (which the API
 * refuses: it names a host file) with suffix appended when given. */
static int load_policy(const char *source, const char *suffix, aj_policy *p, aj_error *err)
{
	json_t *j = json_loads(source, 0, NULL);
	char *log = NULL;
	const char *l = json_string_value(json_object_get(j, "net-log"));
	if (l && asprintf(&log, "%s%s", l, suffix ? suffix : "") < 0)
		log = NULL;
	json_object_del(j, "net-log");
	aj_policy_init(p);
	int r = j ? aj_policy_from_json(p, j, err) : aj_err(err, EINVAL, "policy: not JSON");
	if (r == 0 && log)
		r = aj_policy_set_net_log(p, log, err);
	free(log);
	json_decref(j);
	p->quiet = true;
	return r;
}

/* CMD in in with WHO=who; its stdout printed, line by line, after "who: ". */
static void party(aj_inst *in, const char *who, const char *cmd)
{
	char *full = NULL;
	if (asprintf(&full, "WHO=%s; %s", who, cmd) < 0)
		return;
	out o;
	aj_run_result res;
	aj_error err;
	aj_err_clear(&err);
	int r = run(in, SH(full), NULL, &o, &res, &err);
	for (char *s = o.buf[1], *save = NULL, *t; s && (t = strtok_r(s, "\n", &save)); s = NULL)
		printf("%s: %s\n", who, t);
	char what[64];
	snprintf(what, sizeof(what), "the command in %s", who);
	check(r == 0 && res.exit_code == 0, what, r < 0 ? err.msg : o.buf[2]);
	out_free(&o);
	free(full);
}

#define FORK_MAX 4

/* --fork N CMD (above); each copy destroyed and checked for residue. */
static void forking(aj_inst *in, const char *source, unsigned n, const char *cmd)
{
	aj_inst *kids[FORK_MAX] = {0};
	json_t *states[FORK_MAX] = {0};
	aj_policy kp[FORK_MAX];
	char *ckpt = NULL, who[16], detail[128];
	aj_error err;
	aj_err_clear(&err);
	party(in, "src", cmd);
	int r = B->checkpoint(in, &ckpt, &err);
	check(r == 0, "checkpoint", err.msg);
	for (unsigned k = 0; r == 0 && k < n && k < FORK_MAX; k++) {
		char suffix[16];
		snprintf(suffix, sizeof(suffix), ".%u", k);
		aj_err_clear(&err);
		r = load_policy(source, suffix, &kp[k], &err);
		if (r == 0)
			r = B->restore(&kp[k], source, ckpt, &kids[k], &err);
		snprintf(detail, sizeof(detail), "restore copy %u", k);
		check(r == 0, detail, err.msg);
		if (r == 0)
			states[k] = B->state(kids[k]);
	}
	B->checkpoint_drop(ckpt);
	for (unsigned k = 0; k < n && k < FORK_MAX && kids[k]; k++) {
		snprintf(who, sizeof(who), "copy%u", k);
		party(kids[k], who, cmd);
	}
	party(in, "src2", cmd);
	for (unsigned k = 0; k < n && k < FORK_MAX; k++) {
		if (!kids[k])
			break;
		B->destroy(kids[k]);
		char what[PATH_MAX] = "";
		snprintf(detail, sizeof(detail), "copy %u destroyed leaves nothing", k);
		check(!residue(states[k], what, sizeof(what)), detail, what);
		json_decref(states[k]);
		aj_policy_free(&kp[k]);
	}
}

static double median_ms(aj_inst *in, int n)
{
	double *t = calloc((size_t)n, sizeof(double));
	for (int k = 0; k < n; k++) {
		struct timespec a, b;
		out o;
		aj_run_result res;
		aj_error err;
		clock_gettime(CLOCK_MONOTONIC, &a);
		(void)run(in, (char *[]){"true", NULL}, NULL, &o, &res, &err);
		clock_gettime(CLOCK_MONOTONIC, &b);
		out_free(&o);
		t[k] = (double)(b.tv_sec - a.tv_sec) * 1e3 + (double)(b.tv_nsec - a.tv_nsec) / 1e6;
	}
	for (int x = 0; x < n; x++)
		for (int y = x + 1; y < n; y++)
			if (t[y] < t[x]) {
				double s = t[x];
				t[x] = t[y], t[y] = s;
			}
	double m = t[n / 2];
	free(t);
	return m;
}

static void measure(aj_inst *in)
{
	printf("# exec of true: median %.1f ms of 50\n", median_ms(in, 50));
	sleep(2);
	json_t *s = B->state(in);
	unsigned long long rss = 0, pss = 0;
	size_t k;
	json_t *v;
	json_array_foreach(json_object_get(s, "pids"), k, v)
	{
		char path[64];
		_cleanup_free_ char *txt = NULL;
		snprintf(path, sizeof(path), "/proc/%d/smaps_rollup",
			 (int)json_integer_value(json_object_get(v, "pid")));
		if (aj_read_file(path, &txt, NULL) < 0)
			continue;
		const char *a = strstr(txt, "\nRss:"), *b = strstr(txt, "\nPss:");
		rss += a ? strtoull(a + 5, NULL, 10) : 0;
		pss += b ? strtoull(b + 5, NULL, 10) : 0;
	}
	aj_inst_stats st;
	aj_error err;
	B->stats(in, &st, &err);
	printf("# idle sandbox: %zu processes, RSS %llu KiB, PSS %llu KiB, cgroup memory %llu KiB, "
	       "host tasks %llu\n",
	       json_array_size(json_object_get(s, "pids")), rss, pss, st.memory_bytes / 1024,
	       st.pids);
	json_decref(s);
}

int main(int argc, char **argv)
{
	if (argc < 2) {
		fprintf(stderr, "usage: ajgvdrive POLICY.json [--sweep|--measure]\n");
		return 2;
	}
	const char *mode = argc > 2 ? argv[2] : "";
	char self[PATH_MAX], agent[PATH_MAX + 32];
	ssize_t n = readlink("/proc/self/exe", self, sizeof(self) - 1);
	if (n > 0 && !getenv("AGENTJAIL_GVISOR_AGENT")) {
		self[n] = '\0';
		*strrchr(self, '/') = '\0';
		snprintf(agent, sizeof(agent), "%s/../agentjail-agent", self);
		setenv("AGENTJAIL_GVISOR_AGENT", agent, 1);
	}
	_cleanup_free_ char *source = NULL;
	if (aj_read_file(argv[1], &source, NULL) < 0) {
		perror(argv[1]);
		return 2;
	}
	aj_policy p;
	aj_error err;
	aj_err_clear(&err);
	if (load_policy(source, NULL, &p, &err) < 0) {
		fprintf(stderr, "policy: %s\n", err.msg);
		return 2;
	}
	aj_inst *in = NULL;
	int r = B->create(&p, source, &in, &err);
	if (!strcmp(mode, "--refused")) {
		/* create must stop with a clear error (and leave nothing) */
		check(r < 0 && *err.msg, "create refused", err.msg);
		if (r == 0)
			B->destroy(in);
		aj_policy_free(&p);
		return failures ? 1 : 0;
	}
	check(r == 0, "create", err.msg);
	if (r < 0) {
		aj_policy_free(&p);
		return 1;
	}
	json_t *state = B->state(in);
	aj_inst_info info;
	B->info(in, &info);
	char idetail[64];
	snprintf(idetail, sizeof(idetail), "pid %d uid %u", (int)info.pid, (unsigned)info.uid);
	check(info.pid > 0 && info.uid != 0, "info: a sandbox pid, never host root", idetail);
	check(json_array_size(json_object_get(state, "pids")) >= 2, "state records the pids", NULL);
	if (!strcmp(mode, "--measure")) {
		measure(in);
	} else if (!strcmp(mode, "--exec") && argc > 3) {
		out o;
		aj_run_result res;
		r = run(in, SH(argv[3]), NULL, &o, &res, &err);
		printf("%s", o.buf[1] ? o.buf[1] : "");
		check(r == 0 && res.exit_code == 0, "the command", err.msg);
		out_free(&o);
	} else if (!strcmp(mode, "--fork") && argc > 4) {
		forking(in, source, (unsigned)atoi(argv[3]), argv[4]);
		json_decref(state); /* the source restored in place: its processes now */
		state = B->state(in);
	} else if (!strcmp(mode, "--oom")) {
		oom(in);
	} else if (!strcmp(mode, "--sweep")) {
		/* as after a crash of the service: only the state is left */
		B->sweep(state);
		char what[PATH_MAX] = "";
		check(!residue(state, what, sizeof(what)), "sweep leaves nothing", what);
		json_decref(state);
		printf("# %d failed of %d\n", failures, count);
		return failures ? 1 : 0; /* in is not freed: its creator "died" */
	} else {
		commands(in);
		parallel(in);
		terminal(in);
		pausing(in);
		files(in);
	}
	B->destroy(in);
	char what[PATH_MAX] = "";
	check(!residue(state, what, sizeof(what)), "destroy leaves nothing", what);
	json_decref(state);
	aj_policy_free(&p);
	printf("# %d failed of %d\n", failures, count);
	return failures ? 1 : 0;
}
