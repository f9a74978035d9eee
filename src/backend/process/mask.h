/* SPDX-License-Identifier: MIT */
/* Masking secret files in the workspace: credentials are replaced by empty
 * files or directories, .env files by the same keys with placeholders,
 * credential files of known formats value by value (credmask.h). */
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

/* True when the workspace entry rel (base name name) is masked: a default
 * glob (unless --no-default-masks) or a --mask glob matches it and it is no
 * --unmask path. Both levels use it. */
bool aj_mask_matches(const aj_policy *p, const char *rel, const char *name, bool is_dir);

/* Make repl, what covers the masked entry rel (base name name): an empty
 * directory (is_dir); for .env* names the same keys with placeholder
 * values; for a credential file of a known format (credmask.h: .npmrc,
 * .pypirc, pip.conf, .netrc, .git-credentials, .docker/config.json,
 * .yarnrc.yml) the same file with its secrets replaced; else, or when it
 * does not parse, an empty file. The original is read from content (an fd,
 * or -1: empty); 0444. Both levels use it: level 1 binds it in the child,
 * level 2 names it in the bundle. */
int aj_mask_replacement(const aj_policy *p, const char *repl, const char *rel, const char *name,
			bool is_dir, int content, aj_error *err);

/* Child, before pivot_root: walk the workspace mounted at root/workspace
 * (root: the future sandbox root, used to resolve symlinks as the sandbox
 * will) and mount the replacements over every match; scratch is a writable
 * directory for the generated files. Returns the number masked or -errno. */
int aj_mask_workspace(const aj_policy *p, const char *root, const char *scratch, aj_error *err);

#endif
