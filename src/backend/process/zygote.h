/* SPDX-License-Identifier: MIT */
/* Warm interpreters: a sandbox of an image whose warm-up is a Python command
 * ("python3 -c CODE") can keep a zygote: an interpreter started in the
 * sandbox like any command (same seccomp, Landlock, capabilities, cgroup),
 * which has run the warm-up code (the imports) and forks a child for each
 * `python3 -c CODE ARGS...` exec. The exec itself still starts through init:
 * a small client (the same interpreter with -I -S) hands its stdio, cwd,
 * environment and arguments to the zygote, forwards signals and ends as the
 * child ends; without a zygote it runs the interpreter itself. */
#ifndef AJ_ZYGOTE_H
#define AJ_ZYGOTE_H

#include <stdbool.h>
#include <stddef.h>

#include "box.h"

/* The interpreter a warm-up runs ("python3" for "python3 -c '...'"), or
 * false when it is no Python one-liner. */
bool aj_zygote_interp(const char *warmup, char *interp, size_t len);
/* Start b's zygote for warmup (a thread runs it; it is ready when it has
 * run the warm-up). 0, or a negative errno (no Python warm-up: -EINVAL). */
int aj_zygote_start(aj_box *b, const char *warmup, aj_error *err);
/* The interpreter once the zygote is ready, else NULL. */
const char *aj_zygote_ready(const aj_box *b);
/* For a command argv: the client's argv when the zygote is ready and argv
 * is "INTERP -c CODE [ARGS...]" (malloc'ed strv), else NULL. */
char **aj_zygote_argv(const aj_box *b, char *const *argv);
/* Wait for the zygote's thread (its command ends with the sandbox) and
 * free it. */
void aj_zygote_free(aj_box *b);

#endif
