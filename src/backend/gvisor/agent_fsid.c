/* SPDX-License-Identifier: MIT */
/* A file operation of the service's files API as the sandbox's --user, as
 * level 1's (daemon/files.c: setfsuid/setfsgid of its thread): the host
 * (microvm/box.c) sends the user's ids with the request, and the agent, a
 * process per request, takes them as its fsuid/fsgid. Permissions are then
 * checked as that user (the kernel drops the file capabilities with a
 * non-zero fsuid) and what it makes is U's in the guest, so the
 * workspace's and a --rw bind's virtiofsd make it the owner's on the host. */
#include "agent_fsid.h"
#include "agent_proto.h"

#include <errno.h>
#include <sys/fsuid.h>

int aj_agent_file_as(json_t *q)
{
	json_t *u = json_object_get(q, "uid"), *g = json_object_get(q, "gid");
	if (!u && !g)
		return 0;
	if (!json_is_integer(u) || !json_is_integer(g) || json_integer_value(u) < 0 ||
	    json_integer_value(g) < 0 || json_integer_value(u) >= 0xffffffffLL ||
	    json_integer_value(g) >= 0xffffffffLL)
		return -EINVAL;
	if (json_integer_value(u) == AJ_AGENT_GUEST_UID) /* the agents' own, as exec refuses */
		return -EPERM;
	uid_t uid = (uid_t)json_integer_value(u);
	gid_t gid = (gid_t)json_integer_value(g);
	/* setfsuid/setfsgid answer the previous id: a second call tells
	 * whether the change took (fail closed: never as root instead) */
	(void)setfsgid(gid);
	(void)setfsuid(uid);
	if ((gid_t)setfsgid(gid) != gid || (uid_t)setfsuid(uid) != uid)
		return -EPERM;
	return 0;
}
