/* SPDX-License-Identifier: MIT */
/* The seccomp-bpf filter of the command: compiled in the parent with
 * libseccomp, loaded by the command last before exec. */
#ifndef AJ_SYSFILTER_H
#define AJ_SYSFILTER_H

#include <linux/filter.h>
#include <stdbool.h>
#include <stddef.h>

#include "error.h"
#include "policy.h"

typedef struct aj_bpf {
	struct sock_filter *insns;
	size_t len;
	bool replaced; /* a --seccomp-profile replaced the default profile */
	/* the policy's seccomp_stack: a second filter, loaded on top of the
	 * first by each command before exec (an OCI bundle's own) */
	struct sock_filter *stack;
	size_t stack_len;
} aj_bpf;

/* The program to load: the default profile (a personality check, then
 * the main program), or a --seccomp-profile file's (that alone); the
 * API's inline profile or a bundle's linux.seccomp stacked on it. */
int aj_seccomp_compile(const aj_policy *p, aj_bpf *out, aj_error *err);
/* The policy's profile alone (its file or inline text): level 3's agent
 * stacks it on its own filter. */
int aj_seccomp_compile_profile(const aj_policy *p, aj_bpf *out, aj_error *err);
/* The default profile's main program, compiled by libseccomp now. */
int aj_seccomp_compile_default(aj_bpf *out, aj_error *err);
/* The default profile's main program as compiled at build time by
 * src/tools/seccomp_gen.c (length 0: none, compile at run time). */
extern const struct sock_filter aj_seccomp_prebuilt[];
extern const size_t aj_seccomp_prebuilt_len;
/* Only the rule that no setuid/setgid file is made (chmod, creat, mknod,
 * open with O_CREAT): for a process that writes a share on the host
 * for another kernel (level 3's virtiofsd). */
int aj_seccomp_compile_setid(aj_bpf *out, aj_error *err);
/* Load the compiled program (requires no_new_privs). */
int aj_seccomp_load(const aj_bpf *bpf, aj_error *err);
/* Load the stacked one, if any (the kernel applies both, the stricter
 * action wins). */
int aj_seccomp_load_stack(const aj_bpf *bpf, aj_error *err);
void aj_bpf_free(aj_bpf *bpf);

/* Parse a JSON profile into a libseccomp context (void * to keep
 * <seccomp.h> out of this header). */
int aj_seccomp_profile_load(const char *path, void **ctx, aj_error *err);
/* The same from text (path only names it in errors). */
int aj_seccomp_profile_parse(const char *text, size_t len, const char *path, void **ctx,
			     aj_error *err);
/* Release a context from the two above. */
void aj_seccomp_profile_free(void *ctx);

/* netd's own filter (seccomp_netd.c), loaded into the calling process. */
int aj_seccomp_netd(aj_error *err);

/* Names of the syscalls the default profile denies (for docs and doctor). */
extern const char *const aj_seccomp_denied[];

#endif
