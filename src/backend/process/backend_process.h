/* SPDX-License-Identifier: MIT */
/* Level 1's ops table (backend.h): the namespace sandbox. */
#ifndef AJ_BACKEND_PROCESS_H
#define AJ_BACKEND_PROCESS_H

#include "backend.h"

extern const aj_backend aj_backend_process;

#endif
