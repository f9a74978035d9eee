/* SPDX-License-Identifier: MIT */
/* The supervisor's half of the ports proxy (ports.h): the front names a
 * sandbox and a port; the sandbox is checked as for every other op (its
 * tenant's, running), and the backend connects inside the sandbox's own
 * network namespace (backend.h, port_connect). The connected socket goes
 * to the front, which relays bytes and nothing else: the sandbox's
 * network policy is not touched, and no host port is opened. */
#include "ports.h"

#include <errno.h>
#include <string.h>
#include <unistd.h>

#include "audit.h"
#include "backends.h"
#include "util.h"

void aj_op_port_connect(json_t *args, aj_reply *rep)
{
	json_t *pv = json_object_get(args, "port");
	json_int_t port = json_is_integer(pv) ? json_integer_value(pv) : 0;
	if (port < 1 || port > 65535) {
		aj_reply_error(rep, 400, "bad_request",
			       "the port must be a number from 1 to 65535");
		return;
	}
	aj_sandbox *sb = aj_arg_running(args, rep);
	if (!sb)
		return;
	aj_error err;
	aj_err_clear(&err);
	int fd = -ENOTSUP;
	if (!aj_backend_can(sb->be, AJ_CAP_PORTS, &err) || !sb->be->port_connect)
		aj_reply_fail(rep, 501, "not_supported", &err);
	else if ((fd = sb->be->port_connect(sb->inst, (unsigned)port, &err)) == -ECONNREFUSED)
		aj_reply_error(rep, 502, "port_closed",
			       "nothing listens on port %d in sandbox '%s' (its loopback address)",
			       (int)port, sb->id);
	else if (fd == -EBUSY) /* every connection the backend allows in use */
		aj_reply_fail(rep, 503, "busy", &err);
	else if (fd < 0)
		aj_reply_fail(rep, 502, "bad_gateway", &err);
	else {
		aj_reply_json(rep, 200, json_object());
		rep->fd = fd;
	}
	aj_audit(fd >= 0 ? "port_connect" : "port_connect_failed",
		 json_pack("{s:s, s:s, s:i}", "sandbox", sb->id, "peer", aj_arg_peer(args), "port",
			   (int)port));
	aj_sandbox_unref(sb);
}
