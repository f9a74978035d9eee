/* SPDX-License-Identifier: MIT */
/* The front's seccomp allow-list (front_seccomp.c). */
#ifndef AJ_FRONT_SECCOMP_H
#define AJ_FRONT_SECCOMP_H

#include "error.h"

/* Load it (after the front's drop). */
int aj_front_seccomp(aj_error *err);

#endif
