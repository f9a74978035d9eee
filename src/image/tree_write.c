/* SPDX-License-Identifier: MIT */
/* A tree written from entries a sandbox's level streams (aj_root_sink: a
 * microVM's agent walks its root), for a snapshot. The stream is
 * untrusted, as a container image's layers are (image_oci.c): libarchive
 * writes it with the same checks (no absolute path, no "..", no path
 * through a symlink on disk), owners outside the image's id range become
 * nobody, only files, directories, symlinks and FIFOs are made, a hard
 * link only to a name this stream made a regular file (and still is one:
 * the set "files"), and the
 * entries may add up to max_bytes (else -EDQUOT): a regular file by its
 * apparent size, and every entry ENTRY_COST more plus its path and link
 * target (what it costs on disk and, for a directory, in libarchive's
 * deferred fixups in memory). Dropped, their data read and thrown away:
 * AJ_IMAGE_CHECKPOINT_DIR at the top (only a level-2 snapshot makes it,
 * image_build.c) and what is under /tmp and the sandbox's home (the agent
 * skips them; a hostile guest may not). */
#include <archive.h>
#include <archive_entry.h>
#include <errno.h>
#include <limits.h>
#include <search.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "image.h"
#include "policy.h"
#include "userns.h"
#include "util.h"

/* What an entry costs at least, and at most how many directories a stream
 * may have (libarchive keeps a fixup per directory in memory until close). */
#define ENTRY_COST 4096ULL
#define MAX_DIRS 1000000ULL

struct aj_tree_writer {
	struct archive *w;
	struct archive_entry *e;
	bool open; /* an entry written, its data may follow */
	bool drop; /* the open entry is dropped: its data thrown away */
	bool data; /* a regular file's data may follow (until an empty one) */
	unsigned long long dirs;
	unsigned long long left;       /* bytes the open entry may still have */
	unsigned long long bytes, max; /* charged so far, and the cap */
	unsigned long long entries;
	void *files; /* tsearch set of the names written as regular files */
	char path[PATH_MAX];
};

static const int secure = ARCHIVE_EXTRACT_SECURE_SYMLINKS | ARCHIVE_EXTRACT_SECURE_NODOTDOT |
			  ARCHIVE_EXTRACT_SECURE_NOABSOLUTEPATHS;

int aj_tree_writer_new(unsigned long long max_bytes, aj_tree_writer **out, aj_error *err)
{
	aj_tree_writer *t = calloc(1, sizeof(*t));
	if (t && (t->w = archive_write_disk_new()) && (t->e = archive_entry_new())) {
		archive_write_disk_set_options(
		    t->w, secure | ARCHIVE_EXTRACT_OWNER | ARCHIVE_EXTRACT_PERM |
			      ARCHIVE_EXTRACT_TIME | ARCHIVE_EXTRACT_SPARSE);
		t->max = max_bytes;
		*out = t;
		return 0;
	}
	if (t && t->w)
		archive_write_free(t->w);
	free(t);
	return aj_err(err, ENOMEM, "out of memory");
}

static const char *why(aj_tree_writer *t)
{
	const char *m = archive_error_string(t->w);
	return m ? m : "unknown error";
}

static int finish(aj_tree_writer *t, aj_error *err)
{
	if (!t->open)
		return 0;
	t->open = false;
	if (t->drop)
		return 0;
	if (archive_write_finish_entry(t->w) < ARCHIVE_WARN)
		return aj_err(err, EIO, "snapshot: cannot write /%s: %s", t->path, why(t));
	return 0;
}

/* Is rel (relative) name itself or under it (prefix "a/b", no slash at
 * either end)? */
static bool at_or_under(const char *rel, const char *name)
{
	size_t n = strlen(name);
	return !strncmp(rel, name, n) && (!rel[n] || rel[n] == '/');
}

/* Entries the tree doesn't keep (the comment at the top). */
static bool dropped(const char *rel)
{
	const char *home = &AJ_SANDBOX_HOME[1]; /* "home/agent" */
	size_t h = strlen(home);
	return at_or_under(rel, AJ_IMAGE_CHECKPOINT_DIR) || !strncmp(rel, "tmp/", 4) ||
	       (!strncmp(rel, home, h) && rel[h] == '/');
}

static unsigned long long id_of(unsigned long long id)
{
	return id < AJ_UID_RANGE ? id : 65534; /* outside the image's ids: nobody */
}

static int name_cmp(const void *a, const void *b)
{
	return strcmp(a, b);
}

/* rel is a regular file now (f) or not (any other type): the set follows. */
static int note_file(aj_tree_writer *t, const char *rel, bool file, aj_error *err)
{
	char **had = tfind(rel, &t->files, name_cmp);
	if (!file && had) {
		char *name = *had;
		tdelete(rel, &t->files, name_cmp);
		free(name);
	} else if (file && !had) {
		char *name = strdup(rel), **in = name ? tsearch(name, &t->files, name_cmp) : NULL;
		if (!in) {
			free(name);
			return aj_err(err, ENOMEM, "out of memory");
		}
	}
	return 0;
}

/* one spelling per name (no empty or "." part, no trailing slash), as the
 * guest's walk makes them: the set of file names can't be aliased */
static bool canonical(const char *p)
{
	for (const char *c = p; c;) {
		size_t n = strcspn(c, "/");
		if (n == 0 || (n == 1 && c[0] == '.'))
			return false;
		c = c[n] ? c + n + 1 : NULL;
	}
	return true;
}

int aj_tree_writer_entry(aj_tree_writer *t, const aj_root_entry *e, aj_error *err)
{
	int r = finish(t, err);
	if (r < 0)
		return r;
	const char *rel = e->path ? aj_image_relative(e->path) : NULL;
	static const char types[] = "fdlph";
	if (!rel || !canonical(rel) || strlen(rel) >= sizeof(t->path) || !e->type ||
	    !strchr(types, e->type) ||
	    ((e->type == 'l' || e->type == 'h') &&
	     (!e->link || !*e->link || strlen(e->link) >= PATH_MAX)))
		return aj_err(err, EPROTO, "snapshot: the sandbox sent a bad entry '%.200s'",
			      e->path ? e->path : "");
	/* a hard link: to a name of this stream that is a regular file */
	const char *to = e->type == 'h' ? aj_image_relative(e->link) : NULL;
	if (e->type == 'h' &&
	    (!to || !canonical(to) || !strcmp(to, rel) || !tfind(to, &t->files, name_cmp)))
		return aj_err(err, EPROTO,
			      "snapshot: the sandbox sent a hard link /%.200s to '%.200s', not "
			      "a file it sent before",
			      rel, e->link);
	if (t->entries >= 10000000 || (e->type == 'd' && t->dirs >= MAX_DIRS))
		return aj_err(err, EFBIG, "snapshot: too many %s (at /%.200s)",
			      e->type == 'd' ? "directories" : "files", rel);
	unsigned long long cost = ENTRY_COST + strlen(rel) + (e->link ? strlen(e->link) : 0);
	if (cost > t->max - t->bytes || (e->type == 'f' && e->size > t->max - t->bytes - cost))
		return aj_err(err, EDQUOT, "snapshot: /%s passes the snapshot's size limit", rel);
	snprintf(t->path, sizeof(t->path), "%s", rel);
	t->entries++;
	t->bytes += cost + (e->type == 'f' ? e->size : 0);
	t->left = e->type == 'f' ? e->size : 0;
	t->data = e->type == 'f';
	if ((t->drop = dropped(rel))) {
		t->open = true;
		return 0;
	}
	t->dirs += e->type == 'd';
	mode_t type = e->type == 'f' || e->type == 'h' ? AE_IFREG
		      : e->type == 'd'		       ? AE_IFDIR
		      : e->type == 'l'		       ? AE_IFLNK
						       : AE_IFIFO;
	archive_entry_clear(t->e);
	archive_entry_set_pathname(t->e, rel);
	archive_entry_set_filetype(t->e, type);
	archive_entry_set_perm(t->e, e->mode & 07777);
	archive_entry_set_uid(t->e, (la_int64_t)id_of(e->uid));
	archive_entry_set_gid(t->e, (la_int64_t)id_of(e->gid));
	archive_entry_set_mtime(t->e, (time_t)e->mtime,
				e->mtime_ns >= 0 && e->mtime_ns < 1000000000L ? e->mtime_ns : 0);
	archive_entry_set_size(t->e, e->type == 'f' ? (la_int64_t)e->size : 0);
	if (e->type == 'l')
		archive_entry_set_symlink(t->e, e->link);
	if (e->type == 'h') /* no data: libarchive sets nothing of the file's */
		archive_entry_set_hardlink(t->e, to);
	/* out of the set first: a failed write may have removed the name */
	if ((r = note_file(t, rel, false, err)) < 0)
		return r;
	if (archive_write_header(t->w, t->e) < ARCHIVE_WARN)
		return aj_err(err, EPERM, "snapshot: refused or failed /%s: %s", rel, why(t));
	t->open = true;
	return e->type == 'f' || e->type == 'h' ? note_file(t, rel, true, err) : 0;
}

int aj_tree_writer_data(aj_tree_writer *t, const void *buf, size_t len, aj_error *err)
{
	if (!t->open || !t->data || len > t->left)
		return aj_err(err, EPROTO,
			      t->open && t->data
				  ? "snapshot: the sandbox sent more bytes than /%s has"
			      : t->open ? "snapshot: the sandbox sent data after /%s, not a file's"
					: "snapshot: the sandbox sent data before any file%s",
			      t->path);
	t->data = len > 0; /* an empty one ends the file's data */
	if (len && !t->drop && archive_write_data(t->w, buf, len) != (la_ssize_t)len)
		return aj_err(err, errno ? errno : EIO, "snapshot: cannot write /%s: %s", t->path,
			      why(t));
	t->left -= len;
	return 0;
}

int aj_tree_writer_close(aj_tree_writer *t, aj_error *err)
{
	if (!t)
		return 0;
	int r = err ? finish(t, err) : 0;
	/* the directories' modes and times, set last (libarchive defers them) */
	if (archive_write_close(t->w) < ARCHIVE_WARN && r == 0 && err)
		r = aj_err(err, EIO, "snapshot: %s", why(t));
	archive_write_free(t->w);
	archive_entry_free(t->e);
	tdestroy(t->files, free);
	free(t);
	return r;
}
