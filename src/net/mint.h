/* SPDX-License-Identifier: MIT */
/* The mint hook of scoped secrets (docs/network.md, "Short-lived
 * credentials: the mint hook"): an operator's program that turns the value
 * of each secret scoped to hosts into one valid for one sandbox only, run
 * as `CMD mint` when the sandbox is made and `CMD revoke` when it ends.
 * The secret's name, hosts and the sandbox's id are in its environment
 * (AGENTJAIL_SECRET, AGENTJAIL_SECRET_HOSTS, AGENTJAIL_SANDBOX), the value
 * on its stdin (never on a command line); `mint` prints the new value. */
#ifndef AJ_MINT_H
#define AJ_MINT_H

#include <sys/stat.h>
#include <sys/types.h>

#include "error.h"
#include "policy.h"

/* The hook at path checked (the same for serve and run, at the start and
 * by a sweep): opened without following a symbolic link, a regular
 * executable file owned by root or the euid, not group/other-writable; its
 * stat in *st (a sweep runs a record's hook only when its dev/ino are the
 * configured hook's). 0, or -errno with err set. */
int aj_mint_hook_id(const char *path, struct stat *st, aj_error *err);
/* Does p have a secret scoped to hosts (what the hook mints)? */
bool aj_mint_wanted(const aj_policy *p);
/* run's revoker (aj_mint_guard_start): a child that holds what run minted
 * and revokes it should run be killed before it revokes it itself. */
typedef struct aj_mint_guard {
	int fd;	   /* to the revoker; -1: none */
	pid_t pid; /* the revoker; -1: none */
	/* called in the revoker after its revokes, with how many scoped
	 * secrets are left (marked minted in p: a failed revoke, or one run
	 * may have been minting when killed): the run's record updated; true
	 * when a record keeps them for a later start */
	bool (*revoked)(void *ctx, const aj_policy *p, int failed);
	void *ctx;
} aj_mint_guard;

/* Mint every scoped secret of p for the sandbox id with the hook cmd:
 * each value is replaced by the hook's output and marked minted, and told
 * to g (if not NULL) at once. Fails closed: a hook that fails, times out
 * (10 s) or prints no single-line value fails it all; what was minted
 * before stays marked for the caller to revoke (aj_mint_revoke), and so
 * does the failed one, its value emptied (it may have been issued). 0 or
 * -errno with err set (the secret named, never a value). */
int aj_mint_secrets(const char *cmd, aj_policy *p, const char *id, aj_mint_guard *g, aj_error *err);
/* Revoke every minted secret of p (`CMD revoke`, the minted value on
 * stdin) and clear the mark of each one revoked (a failed one keeps it);
 * returns how many revocations failed (the first one's reason in err). */
int aj_mint_revoke(const char *cmd, aj_policy *p, const char *id, aj_error *err);
/* Start run's revoker for p and id (before minting; p's values are not
 * kept by it): when its socket ends without aj_mint_guard_end (run was
 * SIGKILLed), it revokes what aj_mint_secrets told it, calls g->revoked
 * (if set), then exits. It has
 * its own session, /dev/null as stdio and no other descriptor: it holds
 * neither the terminal, a caller's pipe nor the sandbox. 0 or -errno. */
int aj_mint_guard_start(aj_mint_guard *g, const char *cmd, aj_policy *p, const char *id,
			aj_error *err);
/* run has revoked what it minted: the revoker exits without revoking;
 * waits for it. */
void aj_mint_guard_end(aj_mint_guard *g);
/* Revoke secret name (scoped to hosts) that a killed service minted for
 * sandbox id (serve's crash sweep): `CMD revoke` with the same environment
 * and an empty stdin, the minted value having never been on disk; its
 * environment scrubbed (PATH and those variables only); timeout_ms at most
 * the hook's 10 s. */
int aj_mint_revoke_lost(const char *cmd, const char *name, char *const *hosts, size_t n_hosts,
			const char *id, int timeout_ms, aj_error *err);

#endif
