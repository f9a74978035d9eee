/* SPDX-License-Identifier: MIT */
/* The synthesized /etc of the default root. */
#ifndef AJ_ETC_H
#define AJ_ETC_H

#include <stdbool.h>
#include <stddef.h>

#include "error.h"
#include "policy.h"

#define AJ_ETC_FILES 6

/* The texts of passwd, group, hosts, hostname, resolv.conf, nsswitch.conf,
 * formatted by the parent before clone: the child only writes them (a
 * malloc in the child is copy-on-write faults on the heap it shares with
 * the parent: ~0.5 ms here, docs/performance.md). */
typedef struct aj_etc_files {
	char *text[AJ_ETC_FILES];
} aj_etc_files;

/* Fill f for p (resolv_conf: NULL for the no-network default). 0 or -ENOMEM
 * (f is then freed). */
int aj_etc_prepare(const aj_policy *p, const char *resolv_conf, aj_etc_files *f);
void aj_etc_free(aj_etc_files *f);
/* Their names in /etc. */
extern const char *const aj_etc_generated[AJ_ETC_FILES];

/* Write the prepared files into root/etc (created). Allocates nothing. */
int aj_etc_write(const char *root, const aj_etc_files *f, aj_error *err);
/* Write them into the directory dir (which exists). */
int aj_etc_write_dir(const char *dir, const aj_etc_files *f, aj_error *err);
/* The passwd text for a policy (malloc'ed), exposed for tests. */
char *aj_etc_passwd(const aj_policy *p);
char *aj_etc_group(const aj_policy *p);

/* HTTPS interception (net_addr.h): the root's CA bundle, AJ_NET_CA_BUNDLE
 * of rootfd (resolved inside it) or the host's for -1, malloc'ed in *out;
 * *out NULL when there is none. Anything but a regular file there (a
 * FIFO, device, socket, directory) is refused, never opened for reading:
 * -EINVAL with err saying so. */
int aj_etc_read_ca(int rootfd, char **out, size_t *len, aj_error *err);
/* 0 when fd (the root's CA bundle) is a regular file, else -EINVAL with
 * err naming its kind and how to fix the image. */
int aj_etc_ca_check(int fd, aj_error *err);

/* Levels 2 and 3: the root's own CA bundle (aj_etc_read_ca of rootfs,
 * or the host's for NULL) with netd's CA pem appended, malloc'ed in
 * *out. A root without a bundle: the CA alone when missing_ok (an image,
 * which gets one), else -ENOENT with err saying how to fix it. */
int aj_etc_ca_bundle(const char *rootfs, bool missing_ok, const char *pem, char **out, size_t *len,
		     aj_error *err);

/* The host /etc entries the default root shows: these names, and those
 * for which aj_etc_allowed_name says yes (a readdir of /etc). */
extern const char *const aj_etc_allowed[];
extern const size_t aj_etc_allowed_n;
bool aj_etc_allowed_name(const char *name);

#endif
