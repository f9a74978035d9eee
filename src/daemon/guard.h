/* SPDX-License-Identifier: MIT */
/* The front's guard (guard.c): connections whose request headers never
 * complete (408, 431), and WebSocket upgrades without the token (401). */
#ifndef AJ_GUARD_H
#define AJ_GUARD_H

#include <libwebsockets.h>

void aj_guard_set_timeout(unsigned seconds);
void aj_guard_accepted(struct lws *wsi);
void aj_guard_headers_done(struct lws *wsi);
/* The timer: -1 (close) when it answered 408. */
int aj_guard_timer(struct lws *wsi);
void aj_guard_destroyed(struct lws *wsi);
/* Before each lws_service(); lws's log lines go through aj_guard_log. */
void aj_guard_before_service(void);
void aj_guard_log(int level, const char *line);
/* The lws levels shown on stderr. */
void aj_guard_log_level(int mask);
/* 0: the upgrade may go on; -1: answered 401, hang up. */
int aj_guard_upgrade(struct lws *wsi);
/* A request without the token over TCP: 401 on the socket itself, then
 * -1 (close): an unauthenticated connection is never kept. */
int aj_guard_refuse(struct lws *wsi);
/* LWS_CALLBACK_FILTER_NETWORK_CONNECTION: 1 refuses the new connection
 * (fd) for now: too many shed ones are still being closed. */
int aj_guard_filter(int fd);
/* Unauthenticated connections shed for the budget so far. */
unsigned long long aj_guard_shed(void);

/* The budget of unauthenticated TCP connections (guard.c, docs/security.md) */
#define AJ_GUARD_PER_PEER 32	 /* per client address */
#define AJ_GUARD_TCP_MAX 512	 /* in all */
#define AJ_GUARD_TCP_TIMEOUT_S 5 /* their headers must come within this */

#endif
