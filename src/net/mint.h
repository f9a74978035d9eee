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

#include "error.h"
#include "policy.h"

/* Does p have a secret scoped to hosts (what the hook mints)? */
bool aj_mint_wanted(const aj_policy *p);
/* Mint every scoped secret of p for the sandbox id with the hook cmd:
 * each value is replaced by the hook's output and marked minted. Fails
 * closed: a hook that fails, times out (10 s) or prints no single-line
 * value fails it all, and what was minted before is revoked. 0 or -errno
 * with err set (the secret named, never a value). */
int aj_mint_secrets(const char *cmd, aj_policy *p, const char *id, aj_error *err);
/* Revoke every minted secret of p (`CMD revoke`, the minted value on
 * stdin) and clear its mark; returns how many revocations failed (the
 * first one's reason in err). */
int aj_mint_revoke(const char *cmd, aj_policy *p, const char *id, aj_error *err);
/* Revoke secret name (scoped to hosts) that a killed service minted for
 * sandbox id (serve's crash sweep): `CMD revoke` with the same environment
 * and an empty stdin, the minted value having never been on disk. */
int aj_mint_revoke_lost(const char *cmd, const char *name, char *const *hosts, size_t n_hosts,
			const char *id, aj_error *err);

#endif
