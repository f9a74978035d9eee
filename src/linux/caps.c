/* SPDX-License-Identifier: MIT */
#include "caps.h"

#include <errno.h>
#include <grp.h>
#include <linux/capability.h>
#include <linux/securebits.h>
#include <stdbool.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <unistd.h>

static bool kept(int c, const int *keep, size_t nkeep)
{
	for (size_t i = 0; i < nkeep; i++)
		if (keep[i] == c)
			return true;
	return false;
}

int aj_caps_drop_all(uid_t uid, gid_t gid, int drop_groups, aj_error *err)
{
	return aj_caps_drop_keep(uid, gid, drop_groups, NULL, 0, err);
}

int aj_caps_drop_bounding(const int *keep, size_t nkeep, aj_error *err)
{
	/* up to the kernel's last capability, which may be newer than our
	 * headers: past it, PR_CAPBSET_DROP says EINVAL */
	for (int c = 0; c < 64; c++) {
		if (kept(c, keep, nkeep) || prctl(PR_CAPBSET_DROP, c, 0, 0, 0) == 0)
			continue;
		if (errno == EINVAL)
			break;
		return aj_err(err, errno, "cannot drop capability %d from the bounding set", c);
	}
	return 0;
}

int aj_caps_raise_effective(const int *caps, size_t n)
{
	struct __user_cap_header_struct h = {.version = _LINUX_CAPABILITY_VERSION_3};
	struct __user_cap_data_struct d[_LINUX_CAPABILITY_U32S_3];
	if (syscall(SYS_capget, &h, d) < 0)
		return -errno;
	for (size_t i = 0; i < n; i++) {
		if (caps[i] < 0 || caps[i] >= 32 * _LINUX_CAPABILITY_U32S_3)
			return -EINVAL;
		d[caps[i] / 32].effective |= 1u << (caps[i] % 32);
	}
	return syscall(SYS_capset, &h, d) < 0 ? -errno : 0;
}

int aj_caps_drop_keep(uid_t uid, gid_t gid, int drop_groups, const int *keep, size_t nkeep,
		      aj_error *err)
{
	int r = aj_caps_drop_bounding(keep, nkeep, err);
	return r < 0 ? r : aj_caps_drop_rest(uid, gid, drop_groups, keep, nkeep, err);
}

int aj_caps_drop_rest(uid_t uid, gid_t gid, int drop_groups, const int *keep, size_t nkeep,
		      aj_error *err)
{
	unsigned long bits = SECBIT_NOROOT | SECBIT_NOROOT_LOCKED | SECBIT_NO_SETUID_FIXUP |
			     SECBIT_NO_SETUID_FIXUP_LOCKED | SECBIT_KEEP_CAPS_LOCKED |
			     SECBIT_NO_CAP_AMBIENT_RAISE | SECBIT_NO_CAP_AMBIENT_RAISE_LOCKED;
	if (prctl(PR_SET_SECUREBITS, bits, 0, 0, 0) < 0)
		return aj_err(err, errno, "cannot lock securebits");
	if (drop_groups && setgroups(0, NULL) < 0)
		return aj_err(err, errno, "cannot drop supplementary groups");
	if (setresgid(gid, gid, gid) < 0)
		return aj_err(err, errno, "cannot switch to gid %u inside the sandbox",
			      (unsigned)gid);
	if (setresuid(uid, uid, uid) < 0)
		return aj_err(err, errno, "cannot switch to uid %u inside the sandbox",
			      (unsigned)uid);
	/* capset(2) with the sets on the stack, not libcap's cap_init: this
	 * runs in the command's process before exec, in init's memory, and a
	 * heap allocation there wrote to pages init shares copy-on-write with
	 * its parent (~5 faults, ~0.2 ms of a run; docs/performance.md round 9) */
	struct __user_cap_header_struct h = {.version = _LINUX_CAPABILITY_VERSION_3};
	struct __user_cap_data_struct d[_LINUX_CAPABILITY_U32S_3];
	memset(d, 0, sizeof(d));
	for (size_t i = 0; i < nkeep; i++) {
		if (keep[i] < 0 || keep[i] >= 32 * _LINUX_CAPABILITY_U32S_3)
			return aj_err(err, EINVAL, "no capability %d to keep", keep[i]);
		d[keep[i] / 32].permitted |= 1u << (keep[i] % 32);
		d[keep[i] / 32].effective |= 1u << (keep[i] % 32);
	}
	if (syscall(SYS_capset, &h, d) < 0)
		return aj_err(err, errno, "cannot clear capabilities");
	if (prctl(PR_CAP_AMBIENT, PR_CAP_AMBIENT_CLEAR_ALL, 0, 0, 0) < 0 && errno != EINVAL)
		return aj_err(err, errno, "cannot clear ambient capabilities");
	if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) < 0)
		return aj_err(err, errno, "cannot set no_new_privs");
	return 0;
}
