/* SPDX-License-Identifier: MIT */
/* libFuzzer target: an OCI runtime bundle's config.json into an aj_policy
 * (aj_oci_config_parse, `agentjail oci create`), and as a process object
 * (aj_oci_process_parse, `oci exec --process`). The bundle directory
 * exists, with a rootfs and a bind source, so inputs reach past root.path.
 * Each input is accepted or refused with an error, never a crash or leak;
 * a refused one leaves the config freed and empty. */
#include <assert.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "oci_bundle.h"

static char bundle[] = "/tmp/ajfuzzbundle.XXXXXX";

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static int ready;
	if (!ready) {
		char sub[sizeof(bundle) + 16];
		if (!mkdtemp(bundle))
			abort();
		snprintf(sub, sizeof(sub), "%s/rootfs", bundle);
		if (mkdir(sub, 0755) < 0)
			abort();
		snprintf(sub, sizeof(sub), "%s/data", bundle);
		if (mkdir(sub, 0755) < 0)
			abort();
		ready = 1;
	}
	aj_oci_config c;
	aj_error err;
	aj_err_clear(&err);
	if (aj_oci_config_parse((const char *)data, size, bundle, &c, &err) == 0) {
		assert(c.argv && c.argv[0] && c.policy.argv == c.argv && c.policy.rootfs);
		aj_oci_config_free(&c);
	} else {
		assert(err.msg[0] && !c.argv && !c.policy.rootfs && !c.hooks && !c.netns);
	}
	/* the same bytes as `oci exec --process FILE`'s process object */
	aj_err_clear(&err);
	if (aj_oci_process_parse((const char *)data, size, &c, &err) == 0)
		aj_oci_config_free(&c);
	else
		assert(err.msg[0] && !c.argv);
	return 0;
}
