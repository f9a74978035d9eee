/* SPDX-License-Identifier: MIT */
/* The synthesized /etc of the default root. */
#ifndef AJ_ETC_H
#define AJ_ETC_H

#include "error.h"
#include "policy.h"

/* Write passwd, group, hosts, hostname, resolv.conf, nsswitch.conf into
 * root/etc (created). */
int aj_etc_write(const char *root, const aj_policy *p, const char *resolv_conf, aj_error *err);
/* The passwd text for a policy (malloc'ed), exposed for tests. */
char *aj_etc_passwd(const aj_policy *p);
char *aj_etc_group(const aj_policy *p);

#endif
