/* SPDX-License-Identifier: MIT */
/* A pooled microVM handed out with other limits, env or secrets than its
 * pool's (AJ_CAP_UPDATE, daemon/pool.c), as far as a built VM can honestly
 * take them: env and secrets are the host's (every exec request carries
 * the base environment, redaction reads the policy); pids and memory up to
 * the VM's RAM are the guest's "cmd" cgroup's, and --disk the size of its
 * writable tmpfs (the agent's op "limits": a size below what it holds is
 * refused); cpus up to its vCPUs is the quota of the VMM's host cgroup.
 * What it cannot (memory above its RAM, more vCPUs) answers ENOTSUP, and
 * any refusal has the pool throw the VM away and build a fresh one: a
 * limit asked for and not applied never hands the VM out. */
#include <errno.h>
#include <jansson.h>

#include "cgroup.h"
#include "mount.h"
#include "mvbox.h"
#include "util.h"
#include "vmnet.h"

/* the smallest --memory a VM takes (boot.c's check at create) */
#define MIN_MEMORY (128ULL << 20)

void aj_mvbox_shape(aj_inst *i, const aj_policy *p)
{
	i->vm_ram = p->memory; /* 0: boot.c's default, not relied on here */
	i->vm_cpus = p->cpu_millis ? (unsigned)((p->cpu_millis + 999) / 1000) : 1;
}

bool aj_mvbox_cpu_quota(aj_inst *i)
{
	return i->vm.have_cg && aj_cgroup_has_cpu(&i->vm.cg);
}

static int no_fit(aj_error *err, const char *what)
{
	aj_err(err, ENOTSUP, "isolation 'microvm': a built VM cannot take %s", what);
	aj_err_hint(err, "a fresh VM is made for it");
	return -ENOTSUP;
}

int aj_mvbox_update_check(aj_inst *i, const aj_policy *p, unsigned what, json_t **limits,
			  aj_error *err)
{
	*limits = NULL;
	if ((what & AJ_UPDATE_LIMITS) && (!p->pids || !p->memory))
		return no_fit(err, "no pids or memory limit");
	if ((what & AJ_UPDATE_LIMITS) && (!i->vm_ram || p->memory > i->vm_ram))
		return no_fit(err, "more memory than its RAM");
	if ((what & AJ_UPDATE_LIMITS) && p->memory < MIN_MEMORY)
		return no_fit(err, "less than 128 MiB of memory");
	if ((what & AJ_UPDATE_CPU) &&
	    (!p->cpu_millis || p->cpu_millis > (unsigned long long)i->vm_cpus * 1000))
		return no_fit(err, "more CPUs than its vCPUs");
	if ((what & AJ_UPDATE_CPU) && !aj_mvbox_cpu_quota(i))
		return aj_err(err, ENOENT, "no cpu cgroup to change the VM's quota in");
	if (!(what & (AJ_UPDATE_LIMITS | AJ_UPDATE_DISK)))
		return 0;
	/* pids.max counts one agent per port, as guest/init.c's aj.pids=;
	 * memory at the RAM: the RAM is the limit, nothing to set; the disk
	 * in bytes and inodes, as boot.c's aj.disk= and aj.inodes= (0: none
	 * of these changed) */
	bool lim = what & AJ_UPDATE_LIMITS, disk = what & AJ_UPDATE_DISK;
	*limits = json_pack("{s:s,s:s,s:I,s:I,s:I,s:I}", "op", "limits", "path", "/", "pids",
			    (json_int_t)(lim ? p->pids + i->vm.nports : 0), "memory",
			    (json_int_t)(lim && p->memory < i->vm_ram ? p->memory : 0), "disk",
			    (json_int_t)(disk ? p->tmp_size : 0), "inodes",
			    (json_int_t)(disk ? aj_scratch_inodes(p->tmp_size) : 0));
	return *limits ? 0 : aj_err(err, ENOMEM, "limits");
}

int aj_mvbox_update_apply(aj_inst *i, const aj_policy *p, unsigned what, aj_error *err)
{
	if (what & AJ_UPDATE_CPU) {
		int r = aj_cgroup_update_cpu(&i->vm.cg, p->cpu_millis, err);
		if (r < 0)
			return r;
	}
	char **env = aj_policy_build_env(p, NULL, aj_mv_net_env(i->vm.net));
	if (!env)
		return aj_err(err, ENOMEM, "environment");
	aj_strv_free(i->envp);
	i->envp = env;
	return 0;
}

int aj_mvbox_fork_fits(aj_inst *i, aj_error *err)
{
	const aj_policy *p = i->vm.p;
	unsigned cpus = p->cpu_millis ? (unsigned)((p->cpu_millis + 999) / 1000) : 1;
	if (p->memory == i->vm_ram && cpus == i->vm_cpus)
		return 0;
	aj_err(err, ENOTSUP,
	       "this microVM was handed out from a pool with less memory or fewer CPUs than "
	       "its VM has: a fork's copies, made with its limits, would not fit its save");
	aj_err_hint(err, "fork a VM created with its pool's memory and cpus, or one not "
			 "served from a pool");
	return -ENOTSUP;
}
