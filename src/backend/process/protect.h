/* SPDX-License-Identifier: MIT */
/* The workspace's host-run files: paths that host tools run code from after
 * the sandbox ends (.git/config, .git/hooks/, .vscode/, .mcp.json ...) are
 * read-only inside, also those that do not exist yet, and .git can't be
 * renamed, removed or replaced (docs/security.md, "Files the host runs").
 *
 * The parent lists them (aj_protect_prepare, reading .git/config for
 * core.hooksPath and includes through fds, never following a symlink out of
 * the workspace) and makes an empty placeholder for each missing one, so
 * that there is something to mount on; the child binds each read-only onto
 * itself (aj_protect_apply); the parent removes the placeholders it made
 * (aj_protect_release), and a later run removes those of a run that died
 * (a manifest per run, locked while it lives). */
#ifndef AJ_PROTECT_H
#define AJ_PROTECT_H

#include <stdbool.h>
#include <stddef.h>
#include <sys/types.h>

#include "error.h"
#include "policy.h"

#define AJ_PROTECT_MAX 512
#define AJ_PROTECT_REL_MAX 512

typedef enum aj_protect_kind {
	AJ_PROTECT_RO,	/* bound read-only onto itself */
	AJ_PROTECT_PIN, /* a directory bound writable onto itself: can't be renamed,
			   removed or replaced (.git) */
} aj_protect_kind;

typedef struct aj_protect_entry {
	char rel[AJ_PROTECT_REL_MAX]; /* relative to the workspace */
	aj_protect_kind kind;
	char made; /* 0, or the placeholder agentjail made: 'd' directory, 'l' symlink,
		    'f' the file AJ_PROTECT_DOT */
	dev_t dev;
	ino_t ino;
} aj_protect_entry;

typedef struct aj_protect {
	aj_protect_entry e[AJ_PROTECT_MAX];
	size_t n;
	int ws_fd;    /* parent: the workspace (O_PATH) */
	int manifest; /* parent: this run's record of placeholders, locked; or -1 */
	int mdir;     /* parent: the manifests' directory, or -1 */
	char manifest_name[64];
} aj_protect;

/* The names protected at the top of every workspace (besides .git). */
extern const char *const aj_protect_names[];

/* Where a missing file that git reads is pinned: a symlink to a path that
 * can't exist (git treats it as missing, on the host and inside). */
#define AJ_PROTECT_LINK "/proc/0/agentjail-placeholder"
/* .git/commondir's placeholder holds this: the git directory itself. */
#define AJ_PROTECT_DOT "."

/* Is rel (a --writable value) a protected path or below one? */
bool aj_protect_known(const char *rel);

/* Parent, before the clone: *out is NULL when there is no workspace or
 * everything was lifted with --writable. */
int aj_protect_prepare(const aj_policy *p, aj_protect **out, aj_error *err);
/* Child, after the workspace is mounted at root/workspace (and masked). */
int aj_protect_apply(const aj_protect *pr, const char *root, aj_error *err);
/* The same on the workspace mounted at path (level 2: the staged
 * workspace in runsc's mount namespace, which runsc's gofer serves). */
int aj_protect_apply_dir(const aj_protect *pr, const char *path, aj_error *err);
/* Parent, after the sandbox is gone: remove the placeholders made, free. */
void aj_protect_release(aj_protect *pr);
/* Remove the placeholders of runs that died (their manifest is unlocked). */
void aj_protect_sweep(void);

#endif
