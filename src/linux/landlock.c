/* SPDX-License-Identifier: MIT */
#include "landlock.h"

#include <errno.h>
#include <fcntl.h>
#include <stdint.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "util.h"

/* Our own definitions: Debian's headers predate ABI 4-7. */
#define LL_CREATE_RULESET_VERSION (1U << 0)
#define LL_RULE_PATH_BENEATH 1
#define LL_FS_EXECUTE (1ULL << 0)
#define LL_FS_WRITE_FILE (1ULL << 1)
#define LL_FS_READ_FILE (1ULL << 2)
#define LL_FS_READ_DIR (1ULL << 3)
#define LL_FS_REMOVE_DIR (1ULL << 4)
#define LL_FS_REMOVE_FILE (1ULL << 5)
#define LL_FS_MAKE_CHAR (1ULL << 6)
#define LL_FS_MAKE_DIR (1ULL << 7)
#define LL_FS_MAKE_REG (1ULL << 8)
#define LL_FS_MAKE_SOCK (1ULL << 9)
#define LL_FS_MAKE_FIFO (1ULL << 10)
#define LL_FS_MAKE_BLOCK (1ULL << 11)
#define LL_FS_MAKE_SYM (1ULL << 12)
#define LL_FS_REFER (1ULL << 13)	   /* ABI 2 */
#define LL_FS_TRUNCATE (1ULL << 14)	   /* ABI 3 */
#define LL_FS_IOCTL_DEV (1ULL << 15)	   /* ABI 5 */
#define LL_SCOPE_ABSTRACT_UNIX (1ULL << 0) /* ABI 6 */
#define LL_SCOPE_SIGNAL (1ULL << 1)

struct ll_ruleset_attr {
	uint64_t handled_access_fs;
	uint64_t handled_access_net;
	uint64_t scoped;
};

struct ll_path_beneath {
	uint64_t allowed_access;
	int32_t parent_fd;
} __attribute__((packed));

#define LL_READ (LL_FS_EXECUTE | LL_FS_READ_FILE | LL_FS_READ_DIR)
#define LL_WRITE_TREE                                                                              \
	(LL_FS_WRITE_FILE | LL_FS_REMOVE_DIR | LL_FS_REMOVE_FILE | LL_FS_MAKE_DIR |                \
	 LL_FS_MAKE_REG | LL_FS_MAKE_SOCK | LL_FS_MAKE_FIFO | LL_FS_MAKE_SYM | LL_FS_REFER |       \
	 LL_FS_TRUNCATE)
#define LL_DEVICE (LL_FS_READ_FILE | LL_FS_WRITE_FILE | LL_FS_TRUNCATE | LL_FS_IOCTL_DEV)

int aj_landlock_abi(void)
{
	long v = syscall(SYS_landlock_create_ruleset, NULL, 0, LL_CREATE_RULESET_VERSION);
	return v < 0 ? 0 : (int)v;
}

static uint64_t fs_mask(int abi)
{
	uint64_t m = (1ULL << 13) - 1; /* ABI 1 */
	if (abi >= 2)
		m |= LL_FS_REFER;
	if (abi >= 3)
		m |= LL_FS_TRUNCATE;
	if (abi >= 5)
		m |= LL_FS_IOCTL_DEV;
	return m;
}

/* Allow access (masked to what the ABI handles) beneath path; a path that
 * does not exist in this sandbox is skipped. */
static int allow(int ruleset, const char *path, uint64_t access, uint64_t mask, aj_error *err)
{
	_cleanup_close_ int fd = open(path, O_PATH | O_CLOEXEC);
	if (fd < 0)
		return errno == ENOENT ? 0 : aj_err(err, errno, "landlock: cannot open %s", path);
	struct ll_path_beneath pb = {.allowed_access = access & mask, .parent_fd = fd};
	/* a file (device node) may only carry file rights */
	struct stat st;
	if (fstat(fd, &st) == 0 && !S_ISDIR(st.st_mode))
		pb.allowed_access &= LL_FS_EXECUTE | LL_FS_WRITE_FILE | LL_FS_READ_FILE |
				     LL_FS_TRUNCATE | LL_FS_IOCTL_DEV;
	if (syscall(SYS_landlock_add_rule, ruleset, LL_RULE_PATH_BENEATH, &pb, 0) < 0)
		return aj_err(err, errno, "landlock: cannot add a rule for %s", path);
	return 0;
}

size_t aj_landlock_rules(const aj_policy *p, aj_landlock_rule *out, size_t max)
{
	static const char *const scratch[] = {"/tmp", AJ_SANDBOX_HOME, "/dev/shm"};
	static const char *const devs[] = {"/dev/null",	   "/dev/zero", "/dev/full", "/dev/random",
					   "/dev/urandom", "/dev/tty",	"/dev/pts"};
	size_t n = 0;
#define RULE(path_, access_)                                                                       \
	do {                                                                                       \
		if (n < max)                                                                       \
			out[n] = (aj_landlock_rule){(path_), (access_)};                           \
		n++;                                                                               \
	} while (0)
	RULE("/", p->rootfs ? AJ_LL_READ | AJ_LL_WRITE : AJ_LL_READ);
	for (size_t i = 0; i < AJ_ARRAY_SIZE(scratch); i++)
		RULE(scratch[i], AJ_LL_READ | AJ_LL_WRITE);
	for (size_t i = 0; i < AJ_ARRAY_SIZE(devs); i++)
		RULE(devs[i], AJ_LL_DEVICE);
	if (p->workspace)
		RULE(AJ_WORKSPACE_DIR, AJ_LL_READ | AJ_LL_WRITE);
	for (size_t i = 0; i < p->n_binds; i++)
		if (p->binds[i].writable)
			RULE(p->binds[i].dest, AJ_LL_READ | AJ_LL_WRITE);
#undef RULE
	return n;
}

static int add_rules(int rs, const aj_policy *p, uint64_t mask, aj_error *err)
{
	aj_landlock_rule rules[AJ_LL_MAX_RULES];
	size_t n = aj_landlock_rules(p, rules, AJ_ARRAY_SIZE(rules));
	if (n > AJ_ARRAY_SIZE(rules))
		return aj_err(err, E2BIG, "landlock: too many rules");
	int r = 0;
	for (size_t i = 0; r == 0 && i < n; i++) {
		uint64_t a = (rules[i].access & AJ_LL_READ ? LL_READ : 0) |
			     (rules[i].access & AJ_LL_WRITE ? LL_WRITE_TREE : 0) |
			     (rules[i].access & AJ_LL_DEVICE ? LL_DEVICE : 0);
		r = allow(rs, rules[i].path, a, mask, err);
	}
	return r;
}

int aj_landlock_prepare(const aj_policy *p, int *ruleset, aj_error *err)
{
	*ruleset = -1;
	int abi = aj_landlock_abi();
	if (abi <= 0)
		return 0;
	uint64_t mask = fs_mask(abi);
	struct ll_ruleset_attr attr = {.handled_access_fs = mask};
	size_t size = offsetof(struct ll_ruleset_attr, handled_access_net);
	if (abi >= 4)
		size = offsetof(struct ll_ruleset_attr, scoped);
	if (abi >= 6) {
		attr.scoped = LL_SCOPE_ABSTRACT_UNIX | LL_SCOPE_SIGNAL;
		size = sizeof(attr);
	}
	int rs = (int)syscall(SYS_landlock_create_ruleset, &attr, size, 0);
	if (rs < 0)
		return aj_err(err, errno, "landlock: cannot create a ruleset (ABI %d)", abi);
	int r = add_rules(rs, p, mask, err);
	if (r < 0) {
		close(rs);
		return r;
	}
	*ruleset = rs;
	return abi;
}

int aj_landlock_enforce(int ruleset, aj_error *err)
{
	if (ruleset < 0)
		return 0;
	if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) < 0 ||
	    syscall(SYS_landlock_restrict_self, ruleset, 0) < 0)
		return aj_err(err, errno, "landlock: cannot enforce the ruleset");
	return 0;
}

int aj_landlock_apply(const aj_policy *p, aj_error *err)
{
	int rs;
	int abi = aj_landlock_prepare(p, &rs, err);
	if (abi <= 0)
		return abi;
	int r = aj_landlock_enforce(rs, err);
	close(rs);
	return r < 0 ? r : abi;
}
