/* SPDX-License-Identifier: MIT */
/* The agent protocol (docs/levels.md, "The in-sandbox agent"): how the host
 * asks a program inside the sandbox (gVisor's `runsc exec`, later the
 * microVM's guest agent) to run a command or touch a file. A stream of
 * frames each way: a type byte, a 4-byte little-endian length, then that
 * many bytes. The first frame from the host is a request ('Q', JSON); the
 * agent's last is the answer ('X', JSON). Header only: the agent is linked
 * statically without the rest of agentjail. */
#ifndef AJ_AGENT_PROTO_H
#define AJ_AGENT_PROTO_H

#include <stdint.h>

#define AJ_AGENT_HDR 5
#define AJ_AGENT_MAX_FRAME (1u << 20)
/* where the agent is inside the sandbox (bound read-only) */
#define AJ_AGENT_PATH "/.agentjail-agent"
/* a microVM's agent runs as this uid (with root's capabilities and file
 * access), out of the reach of its commands' signals: above any --user
 * (at most 65533) and nobody */
#define AJ_AGENT_GUEST_UID 65535u
/* The protocol's revision, raised with each request field an older agent
 * would ignore (the exec's "seccomp_profile": 2; "started", whose 'B' a
 * run's --timeout waits for, and the answer's CPU time: 3; the ops "net"
 * and "hello" (since taken out): 4; "limits", and a file request's
 * "uid"/"gid": 5; "net" with the VM's identity, taken before its NIC is
 * up: 6; a revived port's filler, AJ_AG_RESET and hello, init's
 * AJ_AGENT_START_ENV: 7, agent_resync.h; an exec's "uid"/"gid" always sent
 * to a microVM's agent, which refuses one without them, and the CPU time
 * of its command's own cgroup: 8; "limits"' "disk" and "inodes": 9; the exec
 * answer's "oom": 10). The
 * agent's binary holds AJ_AGENT_MARK; the host refuses an agent without its
 * own revision's. */
#define AJ_AGENT_PROTO_REV "10"
#define AJ_AGENT_MARK "agentjail-agent protocol " AJ_AGENT_PROTO_REV

/* host -> agent */
#define AJ_AG_REQUEST 'Q' /* JSON: {"op": ..., ...} */
#define AJ_AG_STDIN 'I'	  /* the command's stdin; empty: its end */
#define AJ_AG_SIGNAL 'S'  /* 1 byte: a signal for the command's process group */
#define AJ_AG_WINSIZE 'W' /* 4 bytes: rows, cols (16-bit little-endian each) */
#define AJ_AG_DATA 'D'	  /* file bytes (write, read); empty: the end */
/* agent -> host */
#define AJ_AG_STDOUT 'O'
#define AJ_AG_STDERR 'E'
#define AJ_AG_STAT 'T'	/* JSON: {"type":"f","mode":420,"size":N,"mtime":S} */
#define AJ_AG_ENTRY 'L' /* JSON: a stat with "name" */
/* JSON: {"exit":N,"signal":S} (and "oom":true: the guest's OOM killer
 * killed it) or {"errno":E,"error":"..."} */
#define AJ_AG_EXIT 'X'
/* empty: the command started (an exec with "started": level 3's run, whose
 * --timeout counts from here) */
#define AJ_AG_STARTED 'B'

static inline void aj_agent_hdr(unsigned char h[AJ_AGENT_HDR], char type, uint32_t len)
{
	h[0] = (unsigned char)type;
	h[1] = (unsigned char)(len & 0xff);
	h[2] = (unsigned char)((len >> 8) & 0xff);
	h[3] = (unsigned char)((len >> 16) & 0xff);
	h[4] = (unsigned char)((len >> 24) & 0xff);
}

static inline uint32_t aj_agent_len(const unsigned char h[AJ_AGENT_HDR])
{
	return (uint32_t)h[1] | (uint32_t)h[2] << 8 | (uint32_t)h[3] << 16 | (uint32_t)h[4] << 24;
}

#endif
