/* SPDX-License-Identifier: MIT */
/* Joining an existing namespace by path (`oci create` with a bundle's
 * linux.namespaces path: a pod's ipc and uts namespaces), its type checked
 * on the opened file, never on the name. */
#ifndef AJ_NSJOIN_H
#define AJ_NSJOIN_H

#include "error.h"

/* Open path and check it is a namespace file (nsfs) of type nstype
 * (CLONE_NEWIPC, CLONE_NEWUTS, ...; NS_GET_NSTYPE on the fd) and not the
 * calling process's own namespace of that type (the host's): its fd
 * (O_CLOEXEC), or a negative errno with err naming the path (exit 125). */
int aj_ns_open(const char *path, int nstype, aj_error *err);

/* setns into fd (from aj_ns_open), named path in err. 0 or -errno. */
int aj_ns_enter(int fd, int nstype, const char *path, aj_error *err);

/* "ipc", "uts", "network", ... for a CLONE_NEW* value, "?" for others. */
const char *aj_ns_type_name(int nstype);

#endif
