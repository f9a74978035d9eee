/* SPDX-License-Identifier: MIT */
/* A microVM guest's NIC brought up (nicup.c): the same steps for a booted
 * guest's init (microvm/guest/init.c, aj.net=) and for the agent of a VM
 * restored from its snapshot with the NIC hot-plugged (gvisor/agent_net.c,
 * op "net"). Standalone (libc only): both programs are linked statically
 * with it. */
#ifndef AJ_NICUP_H
#define AJ_NICUP_H

#include <netinet/in.h>

/* name's flags with IFF_UP set (the loopback, the NIC): 0 or -errno. */
int aj_nic_link_up(const char *name);
/* name (waited for up to wait_ms: its driver may still be probing) given
 * ip/prefix, up, and the default route via gw. 0, or -errno with *step
 * what failed ("the NIC", "the address", "the netmask", "the link", "the
 * default route"). */
int aj_nic_up(const char *name, struct in_addr ip, unsigned prefix, struct in_addr gw,
	      unsigned wait_ms, const char **step);

#endif
