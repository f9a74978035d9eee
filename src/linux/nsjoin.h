/* SPDX-License-Identifier: MIT */
/* Joining an existing namespace by path (`oci create` with a bundle's
 * linux.namespaces path: a pod's ipc and uts namespaces), its type checked
 * on the opened file, never on the name. */
#ifndef AJ_NSJOIN_H
#define AJ_NSJOIN_H

#include "error.h"

/* Open path, check it is a namespace file (nsfs) of type nstype
 * (CLONE_NEWIPC, CLONE_NEWUTS, ...; NS_GET_NSTYPE on the fd) and not the
 * calling process's own namespace of that type (the host's), then setns
 * into it. 0, or a negative errno with err naming the path (exit 125). */
int aj_ns_join(const char *path, int nstype, aj_error *err);

/* "ipc", "uts", "network", ... for a CLONE_NEW* value, "?" for others. */
const char *aj_ns_type_name(int nstype);

#endif
