/* SPDX-License-Identifier: MIT */
/* agentjail image build|ls|inspect|rm */
#include <errno.h>
#include <getopt.h>
#include <stdlib.h>
#include <jansson.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "commands.h"
#include "error.h"
#include "image.h"
#include "microvm.h"
#include "util.h"

static const char usage[] =
    "Usage: agentjail image build NAME SOURCE [--packages P1,P2...] [--warmup CMD]\n"
    "       agentjail image ls [--json]\n"
    "       agentjail image inspect NAME\n"
    "       agentjail image rm NAME\n"
    "\n"
    "Images are immutable root filesystems in the state directory ($AGENTJAIL_STATE_DIR,\n"
    "default " AJ_STATE_DIR_DEFAULT "), named and addressed by a sha256 of their content.\n"
    "Use one with `agentjail run --image NAME`: read-only, under a per-sandbox writable\n"
    "tmpfs layer capped by --disk.\n"
    "\n"
    "SOURCE (build, root only):\n"
    "  --from debian:SUITE     a Debian root filesystem made by mmdebstrap (minbase)\n"
    "      --packages LIST     comma-separated packages to include\n"
    "      --mirror URL        Debian mirror (default: mmdebstrap's)\n"
    "  --from-dir DIR          a copy of the tree at DIR\n"
    "  --from-tar FILE         a tar archive of a root filesystem\n"
    "  --from-oci FILE         a container image archive: `docker save` output or an\n"
    "                          OCI image layout tarball (layers applied in order,\n"
    "                          whiteouts honoured, unsafe members refused)\n"
    "  --recipe FILE           JSON: {\"from\": \"debian:SUITE\", \"packages\": [...],\n"
    "                          \"warmup\": \"CMD\"} (images/python.json is the default\n"
    "                          code-interpreter image)\n"
    "  --warmup CMD            a command the service runs to warm sandboxes of it\n"
    "  --state-dir DIR         instead of $AGENTJAIL_STATE_DIR\n";

static const char *state_dir;

static int usage_error(const char *what)
{
	fprintf(stderr, "agentjail: image: %s (fix: see agentjail image --help)\n", what);
	return AJ_EXIT_INTERNAL;
}

static int split_packages(char *list, aj_image_spec *s, aj_error *err)
{
	for (char *save = NULL, *p = strtok_r(list, ",", &save); p;
	     p = strtok_r(NULL, ",", &save)) {
		if (s->n_packages >= AJ_MAX_PACKAGES)
			return aj_err(err, E2BIG, "--packages: at most %d", AJ_MAX_PACKAGES);
		if (!aj_image_package_ok(p))
			return aj_err(err, EINVAL, "--packages: '%s' is not a Debian package name",
				      p);
		s->packages[s->n_packages++] = p;
	}
	return 0;
}

static void print_info(const aj_image_info *i)
{
	json_t *j = json_pack("{s:s,s:s,s:s,s:s,s:I,s:I,s:s}", "name", i->name, "digest", i->digest,
			      "source", i->source, "created", i->created, "size_bytes",
			      (json_int_t)i->size_bytes, "files", (json_int_t)i->files, "warmup",
			      i->warmup);
	char *s = j ? json_dumps(j, JSON_INDENT(2) | JSON_PRESERVE_ORDER) : NULL;
	if (s)
		printf("%s\n", s);
	free(s);
	json_decref(j);
}

enum {
	O_FROM = 256,
	O_DIR,
	O_TAR,
	O_OCI,
	O_RECIPE,
	O_PACKAGES,
	O_WARMUP,
	O_MIRROR,
	O_STATE,
	O_JSON
};

static int cmd_build(int argc, char **argv)
{
	static const struct option opts[] = {
	    {"from", required_argument, NULL, O_FROM},
	    {"from-dir", required_argument, NULL, O_DIR},
	    {"from-tar", required_argument, NULL, O_TAR},
	    {"from-oci", required_argument, NULL, O_OCI},
	    {"recipe", required_argument, NULL, O_RECIPE},
	    {"packages", required_argument, NULL, O_PACKAGES},
	    {"warmup", required_argument, NULL, O_WARMUP},
	    {"mirror", required_argument, NULL, O_MIRROR},
	    {"state-dir", required_argument, NULL, O_STATE},
	    {NULL, 0, NULL, 0},
	};
	aj_image_spec s = {0};
	aj_error err;
	aj_err_clear(&err);
	void *recipe = NULL;
	int sources = 0, c, r = 0;
	char *packages = NULL;
	while (r == 0 && (c = getopt_long(argc, argv, "", opts, NULL)) != -1) {
		switch (c) {
		case O_FROM:
			if (strncmp(optarg, "debian:", 7) != 0 || !aj_image_suite_ok(optarg + 7))
				r = aj_err(&err, EINVAL, "--from '%s': expected debian:SUITE",
					   optarg);
			s.source = AJ_IMAGE_FROM_DEBIAN, s.from = optarg + 7, sources++;
			break;
		case O_DIR: s.source = AJ_IMAGE_FROM_DIR, s.from = optarg, sources++; break;
		case O_TAR: s.source = AJ_IMAGE_FROM_TAR, s.from = optarg, sources++; break;
		case O_OCI: s.source = AJ_IMAGE_FROM_OCI, s.from = optarg, sources++; break;
		case O_RECIPE:
			if (sources++ == 0)
				r = aj_image_recipe_load(optarg, &s, &recipe, &err);
			break;
		case O_PACKAGES: packages = optarg; break;
		case O_WARMUP: s.warmup = optarg; break;
		case O_MIRROR:
			if (strncmp(optarg, "http://", 7) != 0 &&
			    strncmp(optarg, "https://", 8) != 0)
				r = aj_err(&err, EINVAL,
					   "--mirror '%s': expected an http(s):// URL", optarg);
			s.mirror = optarg;
			break;
		case O_STATE: state_dir = optarg; break;
		default: aj_image_recipe_free(recipe); return usage_error("bad option");
		}
	}
	if (r == 0 && optind + 1 != argc)
		r = aj_err(&err, EINVAL, "image build takes one NAME");
	if (r == 0 && sources != 1)
		r = aj_err(
		    &err, EINVAL,
		    "give exactly one of --from, --from-dir, --from-tar, --from-oci, --recipe");
	if (r == 0 && s.source != AJ_IMAGE_FROM_DEBIAN && (packages || s.mirror))
		r = aj_err(&err, EINVAL, "--packages and --mirror go with --from debian:SUITE");
	if (r == 0 && s.source != AJ_IMAGE_FROM_DEBIAN && s.from[0] != '/')
		r = aj_err(&err, EINVAL, "'%s': expected an absolute path", s.from);
	if (r == 0 && packages)
		r = split_packages(packages, &s, &err);
	if (r == 0 && !aj_image_name_ok(argv[optind]))
		r = aj_err(&err, EINVAL,
			   "image name '%s': expected lowercase letters, digits, '.', '_', '-' (up "
			   "to %d, starting with a letter or digit)",
			   argv[optind], AJ_IMAGE_NAME_MAX);
	struct stat st;
	if (r == 0 && s.source != AJ_IMAGE_FROM_DEBIAN) {
		bool want_dir = s.source == AJ_IMAGE_FROM_DIR;
		if (stat(s.from, &st) < 0)
			r = aj_err(&err, errno, "'%s'", s.from);
		else if (want_dir != !!S_ISDIR(st.st_mode))
			r = aj_err(&err, EINVAL, "'%s': not a %s", s.from,
				   want_dir ? "directory" : "file");
	}
	aj_image_info info;
	if (r == 0) {
		s.name = argv[optind];
		fprintf(stderr, "agentjail: building image %s...\n", s.name);
		r = aj_image_build(state_dir, &s, &info, &err);
	}
	aj_image_recipe_free(recipe);
	if (r < 0)
		return aj_cli_fail(&err);
	fprintf(stderr, "agentjail: image %s: %s, %llu files, %.1f MiB\n", info.name, info.digest,
		info.files, (double)info.size_bytes / 1048576.0);
	return 0;
}

int aj_cmd_image(int argc, char **argv)
{
	state_dir = aj_state_dir();
	if (argc < 2 || !strcmp(argv[1], "--help") || !strcmp(argv[1], "-h")) {
		fputs(usage, argc < 2 ? stderr : stdout);
		return argc < 2 ? AJ_EXIT_INTERNAL : 0;
	}
	for (int k = 2; k < argc; k++) /* `image SUB --help`: the usage */
		if (!strcmp(argv[k], "--help") || !strcmp(argv[k], "-h")) {
			fputs(usage, stdout);
			return 0;
		}
	const char *sub = argv[1];
	argc--, argv++;
	optind = 1;
	if (!strcmp(sub, "build"))
		return cmd_build(argc, argv);
	aj_error err;
	aj_err_clear(&err);
	bool json = argc == 2 && !strcmp(argv[1], "--json");
	if (!strcmp(sub, "ls") && (argc == 1 || json)) {
		aj_image_info *all = NULL;
		size_t n = 0;
		if (aj_image_list(state_dir, &all, &n, &err) < 0)
			return aj_cli_fail(&err);
		if (!json)
			printf("%-20s %-19s %10s %-20s %s\n", "NAME", "DIGEST", "SIZE", "CREATED",
			       "SOURCE");
		json_t *arr = json ? json_array() : NULL;
		for (size_t i = 0; i < n; i++) {
			if (json)
				json_array_append_new(
				    arr, json_pack("{s:s,s:s,s:I}", "name", all[i].name, "digest",
						   all[i].digest, "size_bytes",
						   (json_int_t)all[i].size_bytes));
			else
				printf("%-20s %.19s %9.1fM %-20s %s\n", all[i].name, all[i].digest,
				       (double)all[i].size_bytes / 1048576.0, all[i].created,
				       all[i].source);
		}
		if (json) {
			char *s = json_dumps(arr, JSON_COMPACT);
			printf("%s\n", s ? s : "[]");
			free(s);
			json_decref(arr);
		}
		free(all);
		return 0;
	}
	if ((!strcmp(sub, "inspect") || !strcmp(sub, "rm")) && argc == 2) {
		aj_image_info info;
		int r = !strcmp(sub, "rm") ? aj_image_remove(state_dir, argv[1], &err)
					   : aj_image_inspect(state_dir, argv[1], &info, &err);
		if (r < 0)
			return aj_cli_fail(&err);
		/* level 3's squashfs and snapshots of an image now gone */
		if (!strcmp(sub, "rm"))
			aj_microvm_image_gc();
		if (!strcmp(sub, "inspect"))
			print_info(&info);
		return 0;
	}
	return usage_error("expected build NAME ..., ls, inspect NAME or rm NAME");
}
