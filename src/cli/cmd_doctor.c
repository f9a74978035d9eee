/* SPDX-License-Identifier: MIT */
/* agentjail doctor: show what this host lets a sandbox use, with fixes. */
#include <jansson.h>
#include <limits.h>
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "../backend/gvisor/gvisor.h"
#include "../backend/microvm/microvm.h"
#include "../backend/wasm/wasm.h"
#include "commands.h"
#include "doctor.h"
#include "error.h"
#include "image.h"
#include "mintrec.h"
#include "util.h"

static const char doctor_usage[] =
    "Usage: agentjail doctor [--json]\n"
    "\n"
    "Check what this host lets a sandbox use: user and other namespaces,\n"
    "cgroups, seccomp, Landlock, overlayfs, idmapped mounts, nftables, veth.\n"
    "Every check really tries the feature (in a throw-away child and namespace)\n"
    "and leaves nothing behind. Run it as the user that will run agentjail:\n"
    "root and ordinary users get different answers.\n"
    "\n"
    "  --json      print a JSON array of {name, status, essential, detail, fix}\n"
    "  -h, --help  show this help\n"
    "\n"
    "Exit status: 0 when sandboxes can run (no essential check failed), 1 when\n"
    "they cannot, 125 on bad usage.\n";

static const char *const labels[] = {
    [AJ_CHECK_OK] = "[ ok ]",
    [AJ_CHECK_WARN] = "[warn]",
    [AJ_CHECK_FAIL] = "[FAIL]",
};

static int print_json(const aj_check *c, size_t n)
{
	json_t *arr = json_array();
	int r = 0;

	for (size_t i = 0; arr && i < n && r == 0; i++) {
		json_t *o =
		    json_pack("{s:s, s:s, s:b, s:s, s:s?}", "name", c[i].name, "status",
			      aj_doctor_status_name(c[i].status), "essential", (int)c[i].essential,
			      "detail", c[i].detail, "fix", c[i].fix[0] ? c[i].fix : NULL);

		r = o ? json_array_append_new(arr, o) : -1;
	}
	if (!arr || r < 0 || json_dumpf(arr, stdout, JSON_INDENT(2)) < 0) {
		json_decref(arr);
		fputs("agentjail doctor: cannot format JSON output\n", stderr);
		return AJ_EXIT_INTERNAL;
	}
	json_decref(arr);
	putchar('\n');
	return 0;
}

static void print_text(const aj_check *c, size_t n, bool can_run)
{
	size_t warn = 0, fail = 0;

	for (size_t i = 0; i < n; i++) {
		printf("%s %-17s %s\n", labels[c[i].status], c[i].name, c[i].detail);
		if (c[i].status != AJ_CHECK_OK && c[i].fix[0])
			printf("       fix: %s\n", c[i].fix);
		warn += c[i].status == AJ_CHECK_WARN;
		fail += c[i].status == AJ_CHECK_FAIL;
	}
	if (can_run)
		printf("\nSandboxes can run on this host (%zu warning%s).\n", warn,
		       warn == 1 ? "" : "s");
	else
		printf("\nSandboxes cannot run on this host: %zu essential check%s failed.\n", fail,
		       fail == 1 ? "" : "s");
}

/* Records of minted secrets of runs and services (docs/network.md, the
 * mint hook): those whose owner is gone await the next run or serve;
 * .bad- ones a person. */
static void minted_doctor(aj_check *c)
{
	char dir[PATH_MAX];
	snprintf(dir, sizeof(dir), "%s/minted", aj_state_dir());
	unsigned live = 0, lost = 0, bad = 0;
	aj_error err;
	aj_err_clear(&err);
	*c = (aj_check){.name = "minted secrets", .status = AJ_CHECK_OK};
	int r = aj_mintrec_scan(dir, &live, &lost, &bad, &err);
	if (r < 0 && r != -EACCES) { /* EACCES: another user's */
		c->status = AJ_CHECK_WARN;
		snprintf(c->detail, sizeof(c->detail), "%s", err.msg);
		snprintf(c->fix, sizeof(c->fix), "%s", err.hint);
		return;
	}
	snprintf(c->detail, sizeof(c->detail),
		 "%s: %u record%s of live runs and services, %u of ones that are gone, %u set "
		 "aside",
		 dir, live, live == 1 ? "" : "s", lost, bad);
	if (lost || bad) {
		c->status = AJ_CHECK_WARN;
		snprintf(c->fix, sizeof(c->fix),
			 "the next agentjail run or serve that starts revokes those whose owner "
			 "is gone (with the hook each names); revoke the credentials of the "
			 ".bad-* records by hand, then remove them");
	}
}

int aj_cmd_doctor(int argc, char **argv)
{
	aj_check checks[AJ_DOCTOR_MAX_CHECKS + 4]; /* + levels 2 to 4, minted secrets */
	bool json = false, can_run;
	size_t n;

	for (int i = 1; i < argc; i++) {
		if (!strcmp(argv[i], "--json")) {
			json = true;
		} else if (!strcmp(argv[i], "--help") || !strcmp(argv[i], "-h")) {
			fputs(doctor_usage, stdout);
			return 0;
		} else {
			fprintf(stderr,
				"agentjail doctor: unknown argument '%s' (fix: see agentjail "
				"doctor --help)\n",
				argv[i]);
			return AJ_EXIT_INTERNAL;
		}
	}
	n = aj_doctor_run(checks, AJ_DOCTOR_MAX_CHECKS);
	aj_gvisor_doctor(&checks[n++]);
	aj_microvm_doctor(&checks[n++]);
	aj_wasm_doctor(&checks[n++]);
	minted_doctor(&checks[n++]);
	can_run = aj_doctor_can_run(checks, n);
	if (json) {
		if (print_json(checks, n))
			return AJ_EXIT_INTERNAL;
	} else {
		print_text(checks, n, can_run);
	}
	return can_run ? 0 : 1;
}
