/* SPDX-License-Identifier: MIT */
/* --seccomp-profile FILE: a JSON profile that replaces the default one.
 *
 *   {"default_action": "allow", "default_errno": 1,
 *    "syscalls": [{"names": ["ptrace"], "action": "errno", "errno": 1,
 *                  "args": [{"index": 0, "op": "eq", "value": 3}]}]}
 *
 * actions: allow, errno, kill (the process), trap, log. ops: eq, ne, lt,
 * le, gt, ge, masked_eq (with "mask"). Every error names the field. */
#include <errno.h>
#include <jansson.h>
#include <seccomp.h>
#include <string.h>

#include "sysfilter.h"
#include "util.h"

static int parse_action(const char *s, int errnum, uint32_t *out)
{
	if (!strcmp(s, "allow"))
		*out = SCMP_ACT_ALLOW;
	else if (!strcmp(s, "errno"))
		*out = SCMP_ACT_ERRNO((uint16_t)errnum);
	else if (!strcmp(s, "kill"))
		*out = SCMP_ACT_KILL_PROCESS;
	else if (!strcmp(s, "trap"))
		*out = SCMP_ACT_TRAP;
	else if (!strcmp(s, "log"))
		*out = SCMP_ACT_LOG;
	else
		return -EINVAL;
	return 0;
}

static int parse_op(const char *s, enum scmp_compare *op)
{
	static const struct {
		const char *name;
		enum scmp_compare op;
	} ops[] = {{"eq", SCMP_CMP_EQ},
		   {"ne", SCMP_CMP_NE},
		   {"lt", SCMP_CMP_LT},
		   {"le", SCMP_CMP_LE},
		   {"gt", SCMP_CMP_GT},
		   {"ge", SCMP_CMP_GE},
		   {"masked_eq", SCMP_CMP_MASKED_EQ}};
	for (size_t i = 0; i < AJ_ARRAY_SIZE(ops); i++)
		if (!strcmp(s, ops[i].name)) {
			*op = ops[i].op;
			return 0;
		}
	return -EINVAL;
}

static int get_u64(json_t *v, uint64_t *out)
{
	if (!json_is_integer(v) || json_integer_value(v) < 0)
		return -EINVAL;
	*out = (uint64_t)json_integer_value(v);
	return 0;
}

static int parse_args(json_t *args, struct scmp_arg_cmp *cmp, unsigned *n, const char *where,
		      aj_error *err)
{
	*n = 0;
	if (!args)
		return 0;
	if (!json_is_array(args) || json_array_size(args) > 6)
		return aj_err(err, EINVAL, "%s: \"args\" must be an array of at most 6 objects",
			      where);
	size_t i;
	json_t *a;
	json_array_foreach(args, i, a)
	{
		uint64_t idx, val, mask = 0;
		const char *ops;
		enum scmp_compare op;
		if (!json_is_object(a) || get_u64(json_object_get(a, "index"), &idx) < 0 ||
		    idx > 5 || get_u64(json_object_get(a, "value"), &val) < 0 ||
		    !(ops = json_string_value(json_object_get(a, "op"))) || parse_op(ops, &op) < 0)
			return aj_err(err, EINVAL,
				      "%s: args[%zu] needs \"index\" (0-5), \"op\" (eq, ne, lt, "
				      "le, gt, ge, masked_eq) and a non-negative integer \"value\"",
				      where, i);
		if (op == SCMP_CMP_MASKED_EQ && get_u64(json_object_get(a, "mask"), &mask) < 0)
			return aj_err(err, EINVAL,
				      "%s: args[%zu]: masked_eq needs an integer \"mask\"", where,
				      i);
		cmp[i] = (struct scmp_arg_cmp){.arg = (unsigned)idx,
					       .op = op,
					       .datum_a = op == SCMP_CMP_MASKED_EQ ? mask : val,
					       .datum_b = op == SCMP_CMP_MASKED_EQ ? val : 0};
		(*n)++;
	}
	return 0;
}

static int add_entry(scmp_filter_ctx ctx, json_t *e, size_t idx, uint32_t def, aj_error *err)
{
	char where[64];
	snprintf(where, sizeof(where), "syscalls[%zu]", idx);
	if (!json_is_object(e))
		return aj_err(err, EINVAL, "%s must be an object", where);
	json_t *names = json_object_get(e, "names");
	const char *acts = json_string_value(json_object_get(e, "action"));
	json_t *ej = json_object_get(e, "errno");
	int errnum = EPERM;
	if (ej &&
	    (!json_is_integer(ej) || json_integer_value(ej) < 1 || json_integer_value(ej) > 4095))
		return aj_err(err, EINVAL, "%s: \"errno\" must be an integer from 1 to 4095",
			      where);
	if (ej)
		errnum = (int)json_integer_value(ej);
	uint32_t act;
	if (!acts || parse_action(acts, errnum, &act) < 0)
		return aj_err(err, EINVAL,
			      "%s: \"action\" must be one of allow, errno, kill, trap, log", where);
	if (!json_is_array(names) || json_array_size(names) == 0)
		return aj_err(err, EINVAL,
			      "%s: \"names\" must be a non-empty array of syscall names", where);
	struct scmp_arg_cmp cmp[6];
	unsigned ncmp;
	int r = parse_args(json_object_get(e, "args"), cmp, &ncmp, where, err);
	if (r < 0)
		return r;
	if (act == def)
		return 0; /* same as the default: nothing to add */
	size_t i;
	json_t *nm;
	json_array_foreach(names, i, nm)
	{
		const char *name = json_string_value(nm);
		if (!name)
			return aj_err(err, EINVAL, "%s: names[%zu] is not a string", where, i);
		int nr = seccomp_syscall_resolve_name(name);
		if (nr == __NR_SCMP_ERROR)
			return aj_err(err, EINVAL, "%s: unknown syscall \"%s\"", where, name);
		r = seccomp_rule_add_array(ctx, act, nr, ncmp, cmp);
		if (r < 0 && r != -EEXIST)
			return aj_err(err, -r, "%s: cannot add the rule for \"%s\"", where, name);
	}
	return 0;
}

int aj_seccomp_profile_load(const char *path, void **out, aj_error *err)
{
	_cleanup_free_ char *text = NULL;
	size_t len = 0;
	int r = aj_read_file(path, &text, &len);
	if (r < 0)
		return aj_err(err, -r, "--seccomp-profile %s", path);
	return aj_seccomp_profile_parse(text, len, path, out, err);
}

int aj_seccomp_profile_parse(const char *text, size_t len, const char *path, void **out,
			     aj_error *err)
{
	json_error_t je;
	json_t *root = json_loadb(text, len, JSON_REJECT_DUPLICATES, &je);
	if (!root) {
		if (je.line > 0)
			aj_err(err, EINVAL, "--seccomp-profile %s: line %d: %s", path, je.line,
			       je.text);
		else
			aj_err(err, EINVAL, "--seccomp-profile: %s", je.text);
		return -EINVAL;
	}
	int r = 0;
	scmp_filter_ctx ctx = NULL;
	const char *defs = json_string_value(json_object_get(root, "default_action"));
	json_t *dej = json_object_get(root, "default_errno");
	int derr = dej && json_is_integer(dej) ? (int)json_integer_value(dej) : EPERM;
	uint32_t def;
	if (!json_is_object(root)) {
		r = aj_err(err, EINVAL, "--seccomp-profile %s: the top level must be an object",
			   path);
	} else if (!defs || parse_action(defs, derr, &def) < 0 || derr < 1 || derr > 4095) {
		r = aj_err(err, EINVAL,
			   "--seccomp-profile %s: \"default_action\" must be one of allow, errno, "
			   "kill, trap, log (\"default_errno\" 1-4095)",
			   path);
	} else if (!json_is_array(json_object_get(root, "syscalls"))) {
		r = aj_err(err, EINVAL, "--seccomp-profile %s: \"syscalls\" must be an array",
			   path);
	} else if (!(ctx = seccomp_init(def))) {
		r = aj_err(err, ENOMEM, "seccomp_init");
	} else {
		r = seccomp_attr_set(ctx, SCMP_FLTATR_ACT_BADARCH, SCMP_ACT_KILL_PROCESS);
		if (r == 0)
			r = seccomp_attr_set(ctx, SCMP_FLTATR_CTL_NNP, 0);
		size_t i;
		json_t *e;
		json_array_foreach(json_object_get(root, "syscalls"), i, e)
		{
			if (r < 0)
				break;
			r = add_entry(ctx, e, i, def, err);
		}
		if (r < 0)
			aj_err_prefix(err, "--seccomp-profile %s", path);
	}
	json_decref(root);
	if (r < 0) {
		if (ctx)
			seccomp_release(ctx);
		return r;
	}
	*out = ctx;
	return 0;
}

void aj_seccomp_profile_free(void *ctx)
{
	if (ctx)
		seccomp_release((scmp_filter_ctx)ctx);
}
