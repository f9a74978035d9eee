/* SPDX-License-Identifier: MIT */
/* Level 1 behind the seam (backend.h): the namespace sandbox, a box held by
 * its keeper (box.h), as the `process` backend. */
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "backend.h"
#include "backend_process.h"
#include "box.h"
#include "cgroup.h"
#include "port.h"
#include "sandbox.h"
#include "util.h"
#include "zygote.h"

struct aj_inst {
	aj_box box;
};

static int probe(aj_error *err)
{
	(void)err;
	return 0; /* what level 1 needs is checked as each sandbox is built */
}

static int create(const aj_policy *p, const char *source, aj_inst **out, aj_error *err)
{
	aj_inst *i = calloc(1, sizeof(*i));
	if (!i)
		return aj_err(err, ENOMEM, "sandbox");
	aj_box_init(&i->box);
	int r = aj_box_create(&i->box, p, source, err);
	if (r < 0) {
		aj_box_destroy(&i->box);
		free(i);
		return r;
	}
	*out = i;
	return 0;
}

/* Processes are recorded by pid and start time (aj_pid_start_time). The
 * keeper is our child and init the keeper's: neither pid can be reused
 * before it is recorded. */

static json_t *state(aj_inst *i)
{
	const aj_box *b = &i->box;
	json_t *cg = json_array();
	for (int k = 0; b->info.have_cg && k < b->info.cg.n; k++)
		json_array_append_new(
		    cg, json_pack("{s:s, s:i, s:s}", "ctrl", b->info.cg.dirs[k].ctrl, "version",
				  b->info.cg.dirs[k].version, "path", b->info.cg.dirs[k].path));
	return json_pack("{s:i, s:i, s:I, s:I, s:s, s:o}", "keeper", (int)b->keeper, "init",
			 (int)b->info.init, "keeper_start",
			 (json_int_t)aj_pid_start_time(b->keeper), "init_start",
			 (json_int_t)aj_pid_start_time(b->info.init), "cgroup_name",
			 b->info.cg.name, "cgroups", cg);
}

/* SIGKILL the process a state record names, pid and start time, and wait
 * (2 s at most) until it is gone for good: a dying keeper still holds its
 * name, e.g. in its nftables table's, until reaped. The process is named
 * exactly (issue 20): a pidfd pins it, then its start time must be the
 * recorded one; a process that merely carries our title (any process can
 * set its argv or comm), or took a recorded pid later, is left alone, and
 * so is every pid of a record without start times. */
static void sweep_kill(int pid, unsigned long long start)
{
	if (pid <= 0 || start == 0)
		return;
	int pfd = (int)syscall(SYS_pidfd_open, pid, 0);
	if (pfd < 0)
		return;
	bool ours = aj_pid_start_time(pid) == start; /* the pidfd's process, if pid is still it */
	if (ours)
		(void)syscall(SYS_pidfd_send_signal, pfd, SIGKILL, NULL, 0);
	close(pfd);
	for (int k = 0; ours && k < 200 && aj_pid_start_time(pid) == start; k++)
		usleep(10000);
}

/* The cgroups a record names (only directories of agentjail's naming). */
static void state_cgroups(json_t *o, aj_cgroup *cg)
{
	memset(cg, 0, sizeof(*cg));
	size_t k;
	json_t *d;
	json_array_foreach(json_object_get(o, "cgroups"), k, d)
	{
		const char *p = json_string_value(json_object_get(d, "path"));
		const char *c = json_string_value(json_object_get(d, "ctrl"));
		if (!p || !c || cg->n >= AJ_CG_MAX_DIRS || !strstr(p, "/agentjail-"))
			continue;
		snprintf(cg->dirs[cg->n].path, sizeof(cg->dirs[0].path), "%s", p);
		snprintf(cg->dirs[cg->n].ctrl, sizeof(cg->dirs[0].ctrl), "%s", c);
		cg->dirs[cg->n++].version = (int)json_integer_value(json_object_get(d, "version"));
	}
}

static void sweep(json_t *o)
{
	aj_cgroup cg;
	state_cgroups(o, &cg);
	aj_cgroup_thaw(&cg); /* a paused sandbox's init dies only once thawed */
	/* gone for good before what they held is swept */
	sweep_kill((int)json_integer_value(json_object_get(o, "init")),
		   (unsigned long long)json_integer_value(json_object_get(o, "init_start")));
	sweep_kill((int)json_integer_value(json_object_get(o, "keeper")),
		   (unsigned long long)json_integer_value(json_object_get(o, "keeper_start")));
	if (cg.n)
		aj_cgroup_destroy(&cg);
}

/* Everything in it killed at once (init's pid stays reserved until the
 * keeper reaps it in its teardown); a frozen init would not die. */
static void kill_all(aj_inst *i)
{
	if (i->box.info.have_cg)
		(void)aj_cgroup_freeze(&i->box.info.cg, false, NULL);
	if (i->box.info.init > 0)
		kill(i->box.info.init, SIGKILL);
}

static void destroy(aj_inst *i)
{
	if (!i)
		return;
	aj_box_destroy(&i->box); /* waits for the keeper's teardown */
	free(i);
}

static void info(aj_inst *i, aj_inst_info *o)
{
	memset(o, 0, sizeof(*o));
	o->uid = i->box.info.uid;
	o->gid = i->box.info.gid;
	o->pid = i->box.info.init;
	o->holder = i->box.keeper;
	o->limits_missing = i->box.info.cg.missing;
	o->warm = aj_zygote_ready(&i->box);
	o->alive = i->box.info.init > 0 && kill(i->box.info.init, 0) == 0;
	o->cpu_quota = i->box.info.have_cg && aj_cgroup_has_cpu(&i->box.info.cg);
}

static aj_job *exec_start(aj_inst *i, const aj_exec_spec *spec, const aj_exec_io *io)
{
	return (aj_job *)aj_box_exec_start(&i->box, spec, io);
}

static int exec_wait(aj_job *j, aj_run_result *res, aj_error *err)
{
	return aj_box_exec_wait((aj_box_job *)j, res, err);
}

static void exec_abandon(aj_job *j)
{
	aj_box_exec_abandon((aj_box_job *)j);
}

static int open_pty(aj_inst *i, int pty[2], aj_error *err)
{
	return aj_box_open_pty(&i->box, pty, err);
}

static int pause_it(aj_inst *i, bool pause, aj_error *err)
{
	if (!i->box.info.have_cg)
		return aj_err(err, ENOTSUP, "the sandbox has no cgroup: it cannot be paused");
	return aj_cgroup_freeze(&i->box.info.cg, pause, err);
}

static int stats(aj_inst *i, aj_inst_stats *o, aj_error *err)
{
	memset(o, 0, sizeof(*o));
	if (!i->box.info.have_cg ||
	    aj_cgroup_stats(&i->box.info.cg, &o->memory_bytes, &o->memory_peak_bytes, &o->cpu_usec,
			    &o->pids) < 0)
		return aj_err(err, ENOTSUP, "the sandbox has no memory cgroup to read");
	o->oom_kills = aj_cgroup_oom_kills(&i->box.info.cg);
	return 0;
}

static int update(aj_inst *i, const aj_policy *p, unsigned what, aj_error *err)
{
	aj_box *b = &i->box;
	int r = 0;
	if ((what & AJ_UPDATE_LIMITS) && (r = aj_cgroup_update_limits(&b->info.cg, p, err)) < 0)
		return r;
	if ((what & AJ_UPDATE_CPU) &&
	    (r = aj_cgroup_update_cpu(&b->info.cg, p->cpu_millis, err)) < 0)
		return r;
	if ((what & AJ_UPDATE_DISK) && (r = aj_box_set_disk(b, p->tmp_size, err)) < 0)
		return r;
	char **env = aj_policy_build_env(p, NULL, b->envp);
	if (!env)
		return aj_err(err, ENOMEM, "environment");
	aj_strv_free(b->envp);
	b->envp = env;
	return 0;
}

static int warm(aj_inst *i, const char *warmup, aj_error *err)
{
	return aj_zygote_start(&i->box, warmup, err);
}

static int root_fd(aj_inst *i, aj_error *err)
{
	return aj_box_root_fd(&i->box, err);
}

static int port_connect(aj_inst *i, unsigned port, aj_error *err)
{
	return aj_box_port_connect(&i->box, port, err);
}

const aj_backend aj_backend_process = {
    .name = "process",
    .level = AJ_ISO_PROCESS,
    .caps = AJ_CAP_PTY | AJ_CAP_FILES | AJ_CAP_PAUSE | AJ_CAP_SNAPSHOT | AJ_CAP_FORK | AJ_CAP_WARM |
	    AJ_CAP_UPDATE | AJ_CAP_ROOT_FD | AJ_CAP_HOST_RW | AJ_CAP_PORTS,
    .probe = probe,
    .run = aj_sandbox_run,
    .create = create,
    .state = state,
    .sweep = sweep,
    .kill = kill_all,
    .destroy = destroy,
    .info = info,
    .exec_start = exec_start,
    .exec_wait = exec_wait,
    .exec_abandon = exec_abandon,
    .open_pty = open_pty,
    .pause = pause_it,
    .stats = stats,
    .update = update,
    .warm = warm,
    .root_fd = root_fd,
    .port_connect = port_connect,
};
