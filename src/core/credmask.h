/* SPDX-License-Identifier: MIT */
/* Credential files masked value by value: what is not secret is kept (a
 * registry's address, a user name, section names), the secrets become a
 * placeholder. Parsers of text the sandbox's owner did not write: anything
 * that does not parse is masked whole (NULL), never passed through. */
#ifndef AJ_CREDMASK_H
#define AJ_CREDMASK_H

#include <stddef.h>

#define AJ_CRED_PLACEHOLDER "agentjail-masked"
/* The largest file masked value by value; a larger one is masked whole. */
#define AJ_CRED_MAX_BYTES (1U << 20)

typedef enum {
	AJ_CRED_WHOLE,	 /* no known format: masked whole (empty) */
	AJ_CRED_NPMRC,	 /* .npmrc: key=value, _authToken/_auth/_password */
	AJ_CRED_INI,	 /* .pypirc, pip.conf, pip.ini: configparser, password */
	AJ_CRED_NETRC,	 /* .netrc: machine/login/password/account tokens */
	AJ_CRED_GITCRED, /* .git-credentials: one URL with user:pass@ a line */
	AJ_CRED_DOCKER,	 /* .docker/config.json: auths' auth, identitytoken */
	AJ_CRED_YARNRC,	 /* .yarnrc.yml: npmAuthToken, npmAuthIdent */
} aj_cred_kind;

/* The format of a masked file: rel is its path relative to the workspace,
 * name its base name. */
aj_cred_kind aj_cred_kind_of(const char *rel, const char *name);

/* The masked text of text (len bytes) in format kind, malloc'ed; NULL when
 * it does not parse, is larger than AJ_CRED_MAX_BYTES, holds a NUL byte,
 * kind is AJ_CRED_WHOLE, or memory runs out: then mask the file whole. */
char *aj_cred_mask(aj_cred_kind kind, const char *text, size_t len);

#endif
