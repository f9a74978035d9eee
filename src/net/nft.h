/* SPDX-License-Identifier: MIT */
/* The per-sandbox nftables table (nft.c). */
#ifndef AJ_NFT_H
#define AJ_NFT_H

#include <stddef.h>
#include <stdint.h>

#include "error.h"
#include "net_addr.h"
#include "policy.h"

int aj_nft_build(const aj_net *n, const aj_policy *p, char **out);
int aj_nft_apply(const char *cmds, aj_error *err);
struct nft_ctx;
struct nft_ctx *aj_nft_ctx_new(void);
/* Let the sandbox connect to ip_be (network order) on ports for timeout_s
 * seconds (the allow4 set); the timeout restarts if present. */
int aj_nft_allow(struct nft_ctx *ctx, const char *table, uint32_t ip_be, const unsigned *ports,
		 size_t nports, unsigned timeout_s);
void aj_nft_delete_table(const char *table);
/* Delete tables agentjail-<PID>-* whose agentjail is dead. */
void aj_nft_sweep_stale(void);

#endif
