/* SPDX-License-Identifier: MIT */
/* Level 4 (`--isolation wasm`, docs/levels.md): the command runs on a
 * WebAssembly runtime, Node.js's node:wasi on V8 (WASI modules), with
 * Pyodide for python3 and QuickJS for node, both compiled to WebAssembly.
 * The runtime itself runs inside a level-1 sandbox: two walls, the
 * module's preopens and level 1's namespaces, seccomp, Landlock and
 * cgroup around the node process. runtime/runner.mjs is what node runs;
 * runtime/package.json pins the npm packages (scripts/setup.sh: npm ci). */
#ifndef AJ_WASM_H
#define AJ_WASM_H

#include <limits.h>

#include "backend.h"
#include "doctor.h"
#include "error.h"
#include "policy.h"

/* where the runtime directory is bound (read-only) inside the sandbox */
#define AJ_WASM_DEST "/opt/agentjail-wasm"
/* what of --memory node keeps for itself: the module's linear memory
 * gets the rest (docs/levels.md) */
#define AJ_WASM_RESERVE (96ULL << 20)
#define AJ_WASM_MIN_MEMORY (128ULL << 20)

typedef struct aj_wasm_rt {
	char node[PATH_MAX]; /* the node program (under /usr: the sandbox sees it) */
	char dir[PATH_MAX];  /* the runtime directory (runner.mjs, node_modules) */
} aj_wasm_rt;

/* node and the runner: AGENTJAIL_WASM_DIR names another runtime directory.
 * 0, or -errno with err saying what is missing and the fix (exit 125). */
int aj_wasm_rt_find(aj_wasm_rt *rt, aj_error *err);
/* The `agentjail doctor` line for level 4. */
void aj_wasm_doctor(aj_check *c);

extern const aj_backend aj_backend_wasm;

#endif
