/* SPDX-License-Identifier: MIT */
/* libFuzzer target: container image archives (aj_image_import_oci). The
 * input is the outer archive; it is imported into a fresh directory under
 * a private temporary one. Checks: no crash, the working directory is
 * restored, the scratch directory is removed, and nothing appears next to
 * the tree (a member that climbed out would land there). */
#include <assert.h>
#include <dirent.h>
#include <fcntl.h>
#include <ftw.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "image.h"

static char base[] = "/tmp/ajfuzzoci.XXXXXX";
static char cwd[4096];

static int rm_one(const char *p, const struct stat *st, int flag, struct FTW *f)
{
	(void)st, (void)flag, (void)f;
	return remove(p);
}

static size_t entries(const char *dir)
{
	DIR *d = opendir(dir);
	size_t n = 0;
	for (struct dirent *e; d && (e = readdir(d));)
		n += strcmp(e->d_name, ".") && strcmp(e->d_name, "..");
	if (d)
		closedir(d);
	return n;
}

static void cleanup(void)
{
	(void)nftw(base, rm_one, 16, FTW_DEPTH | FTW_PHYS);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	if (!cwd[0]) {
		assert(mkdtemp(base) && getcwd(cwd, sizeof(cwd)));
		atexit(cleanup);
	}
	char in[64], root[64], work[64];
	snprintf(in, sizeof(in), "%s/in.tar", base);
	snprintf(root, sizeof(root), "%s/root", base);
	snprintf(work, sizeof(work), "%s/work", base);
	FILE *f = fopen(in, "wb");
	assert(f && fwrite(data, 1, size, f) == size && fclose(f) == 0);
	assert(mkdir(root, 0755) == 0);
	aj_error err;
	aj_err_clear(&err);
	(void)aj_image_import_oci(in, root, work, &err);
	char now[4096];
	assert(getcwd(now, sizeof(now)) && !strcmp(now, cwd));
	assert(access(work, F_OK) != 0);
	assert(entries(base) == 2); /* in.tar, root */
	assert(nftw(root, rm_one, 16, FTW_DEPTH | FTW_PHYS) == 0);
	unlink(in);
	return 0;
}
