/* SPDX-License-Identifier: MIT */
/* The front process of `agentjail serve` (front.c). */
#ifndef AJ_FRONT_H
#define AJ_FRONT_H

#include <sys/types.h>

#include "daemon.h"
#include "error.h"
#include "guard.h"

/* The front process: serve on the listeners, ask the supervisor on sock.
 * Never returns. */
void aj_front_main(const aj_daemon_opts *o, int sock, const char *token_value)
    __attribute__((noreturn));

/* Drop to uid/gid (when root), no capabilities (bounding set
 * too), no_new_privs, not dumpable. */
int aj_front_drop(uid_t uid, gid_t gid, aj_error *err);

#define AJ_FRONT_UID 65534 /* nobody: owns nothing */

/* The front's file descriptors (RLIMIT_NOFILE raised to this when it can)
 * and lws's header buffers: what the budget of guard.h leaves is for the unix
 * socket and authenticated connections (front.c). */
#define AJ_FRONT_NOFILE 65536
#define AJ_FRONT_HEADER_POOL (AJ_GUARD_TCP_MAX + 512)

#endif
