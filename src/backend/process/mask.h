/* SPDX-License-Identifier: MIT */
/* Masking secret files in the workspace: credentials are replaced by empty
 * files or directories, .env files by the same keys with placeholders. */
#ifndef AJ_MASK_H
#define AJ_MASK_H

#include <stdbool.h>
#include <stddef.h>

#include "error.h"
#include "policy.h"

/* The default globs (NULL-terminated). A glob ending in '/' names
 * directories; one containing '/' matches the end of the relative path;
 * others match a file or directory name at any depth. */
extern const char *const aj_mask_defaults[];

/* True when rel (path relative to the workspace, no leading '/') with base
 * name name matches glob. */
bool aj_mask_match(const char *glob, const char *rel, const char *name, bool is_dir);

/* The text that replaces a masked .env file: KEY=placeholder lines. */
char *aj_mask_env_text(const aj_policy *p, const char *content);

/* Make repl, what covers the masked name: an empty directory (is_dir), an
 * empty file, or for .env* names the same keys with placeholder values
 * (read from content, an fd of the original, or -1); 0444. Both levels use
 * it: level 1 binds it in the child, level 2 names it in the bundle. */
int aj_mask_replacement(const aj_policy *p, const char *repl, const char *name, bool is_dir,
			int content, aj_error *err);

/* Child, before pivot_root: walk the workspace mounted at root/workspace
 * (root: the future sandbox root, used to resolve symlinks as the sandbox
 * will) and mount the replacements over every match; scratch is a writable
 * directory for the generated files. Returns the number masked or -errno. */
int aj_mask_workspace(const aj_policy *p, const char *root, const char *scratch, aj_error *err);

#endif
