/* SPDX-License-Identifier: MIT */
/* The seam between agentjail and an isolation level (docs/levels.md): each
 * backend (src/backend/LEVEL) fills one ops table; the CLI and the service
 * call only these. What a backend lacks is a clear bit in caps, and the
 * API answers 501 with the backend's name for it. A backend's sandbox is an
 * aj_inst, opaque to its callers; one running command is an aj_job. */
#ifndef AJ_BACKEND_H
#define AJ_BACKEND_H

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>
#include <sys/types.h>

#include "error.h"
#include "policy.h"

/* What one command did (`agentjail run`, an exec). */
typedef struct aj_run_result {
	int exit_code;	 /* what `agentjail run` exits with */
	int term_signal; /* signal that killed the command, 0 if it exited */
	int status;	 /* raw exit status when it exited normally */
	bool timed_out;	 /* --timeout expired (exit_code 124) */
	bool oom_killed; /* the kernel's OOM killer acted in the sandbox */
	unsigned long long wall_ms;
	unsigned long long cpu_user_ms, cpu_sys_ms;
	unsigned long long peak_memory_bytes; /* 0 when unknown */
	unsigned limits_missing; /* --limits best-effort: the limits not applied (AJ_LIMIT_*) */
} aj_run_result;

#define AJ_EXIT_TIMEOUT 124

typedef struct aj_run_hooks {
	/* Called once per degraded feature (e.g. no cgroup limits). */
	void (*warn)(void *ctx, const char *msg);
	void *ctx;
	/* Optional (`agentjail oci create`/`start`): called once the sandbox
	 * is built, before its command runs, with its init's host pid; the
	 * command runs when it returns 0; a negative return (err filled)
	 * ends the run, everything removed. */
	int (*ready)(void *ctx, pid_t init, aj_error *err);
	/* Optional (`agentjail oci exec`, level 1): > 0, a listening
	 * SOCK_SEQPACKET unix socket; while the command runs, each connection
	 * is one more command to start in its sandbox (run_exec.h). */
	int exec_listen;
	/* Optional (`agentjail oci pause`): also a freezer cgroup, as a
	 * persistent sandbox has (found again from its init's cgroups). */
	bool freezer;
	/* Optional (`agentjail oci`: a pidfd of the engine's process): > 0, an
	 * fd that turns readable when the run must end: its init is killed. */
	int watch_fd;
} aj_run_hooks;

typedef struct aj_exec_spec {
	char **argv;		       /* command and arguments (required) */
	char **env;		       /* more NAME=VALUE entries (later wins), or NULL */
	const char *cwd;	       /* NULL: the policy's */
	const char *stdin_data;	       /* the command's whole stdin, or NULL (empty) */
	int stdin_fd;		       /* > 0: the command's stdin instead (e.g. a pipe) */
	int tty_master, tty_slave;     /* > 0: a pty (ops.open_pty): the slave is the
					* command's stdio and controlling terminal (exec_start
					* closes tty_slave); output is read from the master */
	size_t stdin_len;	       /* bytes */
	unsigned long long timeout_ms; /* 0: none; then SIGTERM, SIGKILL after kill_after */
} aj_exec_spec;

typedef struct aj_exec_io {
	/* Redacted output as it comes: stream 1 stdout, 2 stderr. A negative
	 * return kills the command (the consumer went away). */
	int (*output)(void *ctx, int stream, const char *buf, size_t len);
	void *ctx;
	/* -1, or a pipe: each byte read is a signal for the command's process
	 * group; a 0 byte cancels (SIGKILL, and output is dropped). */
	int signal_fd;
	/* > 0: an fd the consumer never writes to: when it is readable (its
	 * end closed), the command is cancelled as by a 0 byte above. */
	int cancel_fd;
} aj_exec_io;

typedef struct aj_inst aj_inst;
typedef struct aj_job aj_job;

/* What a backend can do beyond run, create, exec, destroy and sweep. */
enum {
	AJ_CAP_PTY = 1u << 0,	   /* open_pty: exec on a terminal */
	AJ_CAP_FILES = 1u << 1,	   /* the file ops below */
	AJ_CAP_PAUSE = 1u << 2,	   /* pause/resume, memory kept */
	AJ_CAP_SNAPSHOT = 1u << 3, /* snapshot: the filesystem as a new image */
	AJ_CAP_FORK = 1u << 4,	   /* fork: new sandboxes from a copy of one */
	AJ_CAP_WARM = 1u << 5,	   /* a warm interpreter for a pool's warm-up */
	AJ_CAP_UPDATE = 1u << 6,   /* update: limits and disk changed while it lives */
	AJ_CAP_ROOT_FD = 1u << 7,  /* root_fd: the host can open the sandbox's root */
	/* a workspace or --rw bind in a sandbox that lives across commands, with
	 * every command under the walls that keep host files safe (no setid) */
	AJ_CAP_HOST_RW = 1u << 8,
	AJ_CAP_PORTS = 1u << 9, /* port_connect: the service's ports proxy */
};

/* What update applies. */
enum {
	AJ_UPDATE_LIMITS = 1u << 0, /* memory and pids */
	AJ_UPDATE_CPU = 1u << 1,
	AJ_UPDATE_DISK = 1u << 2, /* the writable space (--disk) */
};

/* A sandbox as the host sees it. */
typedef struct aj_inst_info {
	uid_t uid, gid;		 /* host ids of the sandbox's root user (files the host writes) */
	pid_t pid;		 /* a host pid of the sandbox (its init), for display; 0: none */
	pid_t holder;		 /* the host process holding it (its keeper: audit, tests) */
	unsigned limits_missing; /* AJ_LIMIT_* not applied (--limits best-effort) */
	const char *warm;	 /* the warm interpreter when ready, else NULL */
	bool alive;		 /* its init still runs */
	bool cpu_quota;		 /* update can set a CPU quota (a cpu cgroup) */
} aj_inst_info;

typedef struct aj_inst_stats {
	unsigned long long memory_bytes, memory_peak_bytes, cpu_usec, pids;
	unsigned long long oom_kills; /* processes the OOM killer took so far */
} aj_inst_stats;

/* A file or directory entry inside a sandbox (the file ops). */
typedef struct aj_file_stat {
	char type; /* 'f' file, 'd' directory, 'l' symlink, 'o' other */
	unsigned mode;
	unsigned long long size;
	long long mtime; /* seconds */
} aj_file_stat;
typedef int (*aj_dirent_fn)(void *ctx, const char *name, const aj_file_stat *st);

/* One entry of a sandbox's root as a level streams it (root_stream): what
 * the sandbox says, untrusted (image/tree_write.c checks it). */
typedef struct aj_root_entry {
	const char *path; /* relative to the root */
	char type;	  /* 'f' file, 'd' directory, 'l' symlink, 'p' FIFO, 'h' hard link */
	unsigned mode;	  /* the permission bits (07777) */
	unsigned long long uid, gid, size;
	long long mtime;
	long mtime_ns;
	const char *link; /* a symlink's target, the file a hard link is to */
} aj_root_entry;
/* Where root_stream puts them: each entry, then (a file) its bytes. A
 * negative return stops the stream with that error. */
typedef struct aj_root_sink {
	int (*entry)(void *ctx, const aj_root_entry *e, aj_error *err);
	int (*data)(void *ctx, const void *buf, size_t len, aj_error *err);
	void *ctx;
	unsigned long long max_bytes; /* the most it takes: how long the stream may last */
} aj_root_sink;

typedef struct aj_backend {
	const char *name; /* "process", "gvisor" (the --isolation word) */
	aj_isolation level;
	unsigned caps; /* AJ_CAP_* */

	/* Usable here? 0, or a negative errno with err saying why and how to
	 * fix it (the CLI exits 125, the API answers 409). */
	int (*probe)(aj_error *err);
	/* `agentjail run`: policy->argv in a fresh sandbox, waited for. 0 when
	 * the command ran (see res), else a negative errno, err->exit 125/126/127. */
	int (*run)(const aj_policy *p, const aj_run_hooks *hooks, aj_run_result *res,
		   aj_error *err);

	/* A sandbox that lives across commands. p is borrowed and outlives it;
	 * source is p as the JSON text it was made from (aj_policy_from_json).
	 * The calling thread must live as long as the sandbox. */
	int (*create)(const aj_policy *p, const char *source, aj_inst **out, aj_error *err);
	/* What a later start needs to remove it should this process die (the
	 * service's state file), and that removal (by pid and start time, never
	 * by name alone). */
	json_t *(*state)(aj_inst *i);
	void (*sweep)(json_t *state);
	/* Kill every process in it now (it leaves the registry); destroy:
	 * remove every trace and free it (may wait for its teardown). */
	void (*kill)(aj_inst *i);
	void (*destroy)(aj_inst *i);
	void (*info)(aj_inst *i, aj_inst_info *out);

	/* One command, streamed (io is copied). exec_start never fails (NULL:
	 * out of memory); an error to start it comes from exec_wait, which any
	 * thread may call, waits and frees the job: 0 when it ran (res), else a
	 * negative errno with err->exit 126/127 (not executable/not found) or
	 * 125. exec_abandon frees a job without waiting (the command is killed).
	 * Safe from several threads at once. */
	aj_job *(*exec_start)(aj_inst *i, const aj_exec_spec *spec, const aj_exec_io *io);
	int (*exec_wait)(aj_job *j, aj_run_result *res, aj_error *err);
	void (*exec_abandon)(aj_job *j);
	/* The code interpreter's bridge (src/daemon/code.c's line protocol on
	 * its stdin and stdout) as a job of exec_start's kind, spec->argv
	 * ignored; NULL: the service runs its Python bridge by exec_start. */
	aj_job *(*code_start)(aj_inst *i, const aj_exec_spec *spec, const aj_exec_io *io);
	/* AJ_CAP_PTY: a new pseudo-terminal (80x24): pty[0] the master,
	 * pty[1] the terminal for aj_exec_spec.tty_slave. */
	int (*open_pty)(aj_inst *i, int pty[2], aj_error *err);

	/* AJ_CAP_PAUSE: freeze every process (true) or thaw. */
	int (*pause)(aj_inst *i, bool pause, aj_error *err);
	/* Memory, CPU and pids now; -ENOTSUP when the level can't tell. */
	int (*stats)(aj_inst *i, aj_inst_stats *out, aj_error *err);
	/* AJ_CAP_UPDATE: apply what of p (AJ_UPDATE_*) to a live sandbox (a
	 * pooled one at hand-out), and rebuild every command's base
	 * environment from p's env and secrets. */
	int (*update)(aj_inst *i, const aj_policy *p, unsigned what, aj_error *err);
	/* AJ_CAP_WARM: start the warm interpreter for a pool's warm-up command. */
	int (*warm)(aj_inst *i, const char *warmup, aj_error *err);
	/* Optional: i handed to a client (a create, a pool's hand-out, a fork's
	 * copy), once; what it must not share with others made alike (level 3:
	 * a restored VM's own entropy, clock and hostname). */
	int (*claim)(aj_inst *i, aj_error *err);

	/* AJ_CAP_FORK without AJ_CAP_ROOT_FD: the level copies a whole sandbox
	 * itself, memory and processes with its files. checkpoint: i saved into
	 * a new host directory (*ckpt, malloc'ed; i runs on after it); -EBUSY,
	 * -ENOTSUP with err's status (409, 501) saying why when it can't be.
	 * restore: create, but started from that checkpoint (p: the same
	 * policy). checkpoint_drop: remove it. */
	int (*checkpoint)(aj_inst *i, char **ckpt, aj_error *err);
	int (*restore)(const aj_policy *p, const char *source, const char *ckpt, aj_inst **out,
		       aj_error *err);
	void (*checkpoint_drop)(char *ckpt);

	/* AJ_CAP_SNAPSHOT without AJ_CAP_ROOT_FD, files only (level 3): the
	 * sandbox's root streamed to sink by the level itself, as a snapshot
	 * takes it (its own mount: mount points as empty directories, /tmp and
	 * the home directory empty, no socket or device), its processes held
	 * still meanwhile; a paused one stays paused. 0, or -errno. */
	int (*root_stream)(aj_inst *i, const aj_root_sink *sink, aj_error *err);

	/* AJ_CAP_ROOT_FD: a new O_PATH fd on the sandbox's root, for openat2
	 * with RESOLVE_IN_ROOT (snapshots, and the process backend's files). */
	int (*root_fd)(aj_inst *i, aj_error *err);

	/* AJ_CAP_PORTS: a new TCP connection to port (1-65535) on the sandbox's
	 * own loopback address (127.0.0.1, else ::1), made inside its network
	 * namespace: a connected, non-blocking socket, or -ECONNREFUSED when
	 * nothing listens there (another negative errno, err filled). */
	int (*port_connect)(aj_inst *i, unsigned port, aj_error *err);

	/* AJ_CAP_FILES: with AJ_CAP_ROOT_FD the service opens files through
	 * root_fd itself; a backend without it fills these. Paths are absolute paths inside the
	 * sandbox, resolved inside its root (never by host string), as its root user; a path
	 * through /proc, /sys, /dev or another kernel filesystem: -EPERM.
	 * read: *fd a readable stream of the file's bytes (a regular file or
	 * a pipe), st its stat; write: len bytes from src_fd (~0ULL: to its
	 * EOF) replace (or make, with mode) the file; list calls fn for
	 * each entry (a negative return stops it); remove: a file, an empty directory, or
	 * (recursive) a tree; mkdir: parents as `mkdir -p`. 0 or a negative errno, err filled. */
	int (*file_read)(aj_inst *i, const char *path, int *fd, aj_file_stat *st, aj_error *err);
	int (*file_write)(aj_inst *i, const char *path, int src_fd, unsigned long long len,
			  unsigned mode, aj_error *err);
	int (*file_stat)(aj_inst *i, const char *path, aj_file_stat *st, aj_error *err);
	int (*file_list)(aj_inst *i, const char *path, aj_dirent_fn fn, void *ctx, aj_error *err);
	int (*file_remove)(aj_inst *i, const char *path, bool recursive, aj_error *err);
	int (*file_mkdir)(aj_inst *i, const char *path, bool parents, aj_error *err);
} aj_backend;

#endif
