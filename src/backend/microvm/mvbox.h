/* SPDX-License-Identifier: MIT */
/* A persistent level-3 sandbox (box.c): a VM whose agent answers on
 * AJ_MV_BOX_PORTS ports; its agent ports (mvport.c), shared with
 * the ports proxy (mvports.c). */
#ifndef AJ_MV_BOX_H
#define AJ_MV_BOX_H

#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>

#include "agent_frame.h"
#include "agent_relay.h"
#include "backend.h"
#include "boot.h"
#include "microvm.h"

/* concurrent requests of one sandbox (more wait for a free port) */
#define AJ_MV_BOX_PORTS 4
/* how long an agent told to stop may take to answer */
#define DRAIN_MS 5000ULL
/* a given-up port's revival (mvport.c): its bound, in the background */
#define REVIVE_MS 10000ULL
/* the ports proxy's connections: at most this many of the agent ports at
 * once (the rest stay for exec and files), each ended after RELAY_IDLE_MS
 * without a byte either way (agent_relay.h: the same at level 2) */
#define AJ_MV_PROXY_MAX AJ_PROXY_MAX
#define RELAY_IDLE_MS AJ_PROXY_IDLE_MS

typedef struct mv_port {
	int fd;
	bool busy;
	bool stale;	       /* its agent's answer ('X') not read yet */
	bool dead;	       /* given up: it never answered (made anew in the background) */
	bool reviving;	       /* being made anew (a thread of mvport.c's), held busy */
	unsigned fails;	       /* revivals failed in a row */
	struct timespec retry; /* the next revival not before (CLOCK_MONOTONIC) */
	char *ibuf;	       /* bytes from the agent not yet a whole frame */
	size_t ilen, icap;
} mv_port;

struct aj_inst {
	aj_mv_vm vm;
	char **envp; /* the commands' base environment (the policy's) */
	pthread_mutex_t mu;
	pthread_cond_t cv;
	mv_port port[AJ_MV_BOX_PORTS];
	bool killed;
	/* killed: it did not go on after a fork's save (vm_lost); atomic: set
	 * by the fork, read by other requests' threads without mu */
	_Atomic bool lost;
	bool paused;  /* its VMM frozen (a save would wait for ever) */
	int relays;   /* the ports proxy's connections (threads), under mu */
	int revivers; /* ports being made anew (threads), under mu */
	/* their ends of the socket pairs (-1: none), under mu: shut down by
	 * free_inst so that a relay blocked writing to the front wakes */
	int relay_fd[AJ_MV_PROXY_MAX];
	/* when a restored VM took its identity in its first request (box.c:
	 * mv_boot_ready; 0: not), which a claim soon after needs not repeat */
	unsigned long long ident_ms;
	/* the VM as built (update.c): its RAM (0: unknown) and vCPUs */
	unsigned long long vm_ram;
	unsigned vm_cpus;
};

typedef struct mv_call {
	aj_file_stat *st;
	int data_fd; /* DATA frames go here (read) */
	aj_dirent_fn fn;
	void *ctx;
	bool stopped, have_exit;
	int werr; /* a write to data_fd failed (-errno) */
	aj_agent_exit x;
	/* a root's stream (op "tree"): entries and bytes to sink until it
	 * fails (sr, serr); the rest is read to the answer and dropped */
	const aj_root_sink *sink;
	int sr;
	aj_error serr;
	bool progress;			/* the sink took an entry or bytes: not idle */
	unsigned long long until, secs; /* the stream's deadline (now_ms; 0: none), in s */
} mv_call;

unsigned long long aj_mvbox_now_ms(void);
/* A free agent port's index (wait: until one is), -EBUSY or -EPIPE. */
int aj_mvbox_port_take(aj_inst *i, bool wait);
/* Port k back: answered (its 'X' read), dead (given up). */
void aj_mvbox_port_give(aj_inst *i, int k, bool answered, bool dead);
/* A frame to the agent, each piece taken within idle_ms: -ETIMEDOUT when
 * the agent stopped reading (the port's blocking fd would hold the thread). */
int aj_mvbox_port_send(int fd, char type, const void *buf, size_t len, unsigned long long idle_ms);
/* What came from the agent, read once, whole frames to fn. */
int aj_mvbox_port_read(mv_port *pt, int wait_ms, aj_agent_frame_fn fn, void *ctx);
/* Given-up ports due made anew, each by a thread of its own (under mu). */
void aj_mvbox_revive_due(aj_inst *i);
/* A stale port read to its answer: false if it never came. */
bool aj_mvbox_drain(mv_port *pt);
/* The VM does not answer: err says so, -EPIPE. */
int aj_mvbox_vm_gone(aj_inst *i, aj_error *err);
/* A frame of a file operation's answer into c (an mv_call). */
bool aj_mvbox_call_frame(void *ctx, char type, const char *buf, size_t len);
/* update.c: the VM's shape recorded at its build (p its policy then) */
void aj_mvbox_shape(aj_inst *i, const aj_policy *p);
/* update.c, AJ_CAP_UPDATE of a pooled VM at hand-out: -ENOTSUP (err set)
 * when the VM cannot take p's what; else *limits the agent's request for
 * the guest's pids and memory (NULL: none), then update_apply the rest. */
int aj_mvbox_update_check(aj_inst *i, const aj_policy *p, unsigned what, json_t **limits,
			  aj_error *err);
int aj_mvbox_update_apply(aj_inst *i, const aj_policy *p, unsigned what, aj_error *err);
/* update.c: -ENOTSUP (err set) when its copies, built from its policy,
 * would not be its shape: its memory or CPUs lowered at hand-out */
int aj_mvbox_fork_fits(aj_inst *i, aj_error *err);
/* update.c: its CPU quota can be changed (a cpu controller on the host) */
bool aj_mvbox_cpu_quota(aj_inst *i);
/* The ports proxy (mvports.c): a socket to port on the guest's loopback. */
int aj_mvbox_port_connect(aj_inst *i, unsigned port, aj_error *err);

#endif
