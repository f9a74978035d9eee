/* SPDX-License-Identifier: MIT */
/* CIDR values (cidr.c). */
#ifndef AJ_CIDR_H
#define AJ_CIDR_H

#include <stdbool.h>
#include <stddef.h>

typedef struct aj_cidr {
	int family; /* AF_INET or AF_INET6 */
	unsigned char addr[16];
	unsigned prefix;
} aj_cidr;

/* Parse "ADDR/PREFIX" (or a bare address: /32, /128) into c; the host bits
 * are cleared. Returns 0 or -EINVAL. */
int aj_cidr_parse(const char *s, aj_cidr *c);
/* Canonical "ADDR/PREFIX" text. */
void aj_cidr_format(const aj_cidr *c, char *buf, size_t len);
bool aj_cidr_contains(const aj_cidr *c, int family, const void *addr);

#endif
