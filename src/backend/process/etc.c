/* SPDX-License-Identifier: MIT */
#include "etc.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "inroot.h"
#include "net_addr.h"
#include "util.h"

char *aj_etc_passwd(const aj_policy *p)
{
	if (p->uid == 0)
		return aj_asprintf("root:x:0:0:root:%s:/bin/sh\n"
				   "nobody:x:65534:65534:nobody:/nonexistent:/usr/sbin/nologin\n",
				   AJ_SANDBOX_HOME);
	return aj_asprintf("root:x:0:0:root:/root:/bin/sh\n"
			   "agent:x:%u:%u:agent:%s:/bin/sh\n"
			   "nobody:x:65534:65534:nobody:/nonexistent:/usr/sbin/nologin\n",
			   (unsigned)p->uid, (unsigned)p->gid, AJ_SANDBOX_HOME);
}

char *aj_etc_group(const aj_policy *p)
{
	if (p->gid == 0)
		return strdup("root:x:0:\nnogroup:x:65534:\n");
	return aj_asprintf("root:x:0:\nagent:x:%u:\nnogroup:x:65534:\n", (unsigned)p->gid);
}

const char *const aj_etc_generated[AJ_ETC_FILES] = {"passwd",	"group",       "hosts",
						    "hostname", "resolv.conf", "nsswitch.conf"};

int aj_etc_prepare(const aj_policy *p, const char *resolv_conf, aj_etc_files *f)
{
	const char *host = p->hostname ? p->hostname : AJ_DEFAULT_HOSTNAME;
	memset(f, 0, sizeof(*f));
	f->text[0] = aj_etc_passwd(p);
	f->text[1] = aj_etc_group(p);
	f->text[2] = aj_asprintf("127.0.0.1\tlocalhost\n::1\tlocalhost ip6-localhost ip6-loopback\n"
				 "127.0.1.1\t%s\n",
				 host);
	f->text[3] = aj_asprintf("%s\n", host);
	f->text[4] =
	    strdup(resolv_conf ? resolv_conf
			       : "# agentjail: this sandbox has no network (loopback only)\n"
				 "nameserver 127.0.0.1\noptions timeout:1 attempts:1\n");
	f->text[5] = strdup("passwd: files\ngroup: files\nshadow: files\nhosts: files dns\n"
			    "networks: files\nprotocols: files\nservices: files\n");
	for (size_t i = 0; i < AJ_ETC_FILES; i++)
		if (!f->text[i]) {
			aj_etc_free(f);
			return -ENOMEM;
		}
	return 0;
}

void aj_etc_free(aj_etc_files *f)
{
	for (size_t i = 0; i < AJ_ETC_FILES; i++) {
		free(f->text[i]);
		f->text[i] = NULL;
	}
}

int aj_etc_write_dir(const char *dir, const aj_etc_files *f, aj_error *err)
{
	for (size_t i = 0; i < AJ_ETC_FILES; i++) {
		char path[4096];
		snprintf(path, sizeof(path), "%s/%s", dir, aj_etc_generated[i]);
		int r = f->text[i] ? aj_write_file(path, f->text[i], 0644) : -ENOMEM;
		if (r < 0)
			return aj_err(err, -r, "cannot write /etc/%s", aj_etc_generated[i]);
	}
	return 0;
}

int aj_etc_write(const char *root, const aj_etc_files *f, aj_error *err)
{
	char path[4096];
	snprintf(path, sizeof(path), "%s/etc", root);
	if (mkdir(path, 0755) < 0 && errno != EEXIST)
		return aj_err(err, errno, "cannot create /etc");
	int r = aj_etc_write_dir(path, f, err);
	if (r < 0)
		return r;
	snprintf(path, sizeof(path), "%s/etc/ssl", root);
	(void)mkdir(path, 0755);
	return 0;
}

/* Harmless host configuration programs need; everything else in /etc is
 * synthesized (see etc.c) or absent. Never: shadow, gshadow, machine-id, ssh
 * host keys, the host's passwd/group, pip.conf/npmrc (may carry tokens).
 * As root these come from the state directory's copy (etc_cache.c), else
 * a bind each. */
const char *const aj_etc_allowed[] = {
    "/etc/ld.so.cache",
    "/etc/ld.so.conf",
    "/etc/ld.so.conf.d",
    "/etc/ssl/certs",
    "/etc/ssl/openssl.cnf",
    "/etc/ca-certificates",
    "/etc/ca-certificates.conf",
    "/etc/alternatives",
    "/etc/protocols",
    "/etc/services",
    "/etc/mime.types",
    "/etc/inputrc",
    "/etc/bash.bashrc",
    "/etc/profile",
    "/etc/gai.conf",
    "/etc/host.conf",
    "/etc/localtime",
    "/etc/timezone",
    "/etc/mailcap",
    "/etc/magic",
    "/etc/magic.mime",
    "/etc/perl",
    "/etc/fonts",
    "/etc/debian_version",
    "/etc/os-release",
    "/etc/locale.alias",
    "/etc/papersize",
    /* Debian's chromium: /usr/bin/chromium sources each file of /etc/chromium.d (its
     * default flags), the browser reads /etc/chromium's preferences */
    "/etc/chromium.d",
    "/etc/chromium",
};

const size_t aj_etc_allowed_n = AJ_ARRAY_SIZE(aj_etc_allowed);

/* /etc/python3*: Debian's python needs its sitecustomize and config. */
bool aj_etc_allowed_name(const char *name)
{
	return aj_startswith(name, "python3");
}

/* What kind of file st is, for the error naming it. */
static const char *kind_of(mode_t m)
{
	return S_ISFIFO(m)   ? "a FIFO"
	       : S_ISDIR(m)  ? "a directory"
	       : S_ISCHR(m)  ? "a character device"
	       : S_ISBLK(m)  ? "a block device"
	       : S_ISSOCK(m) ? "a socket"
			     : "not a regular file";
}

int aj_etc_ca_check(int fd, aj_error *err)
{
	struct stat st;
	if (fstat(fd, &st) < 0)
		return aj_err(err, errno, "cannot stat the root's %s", AJ_NET_CA_BUNDLE);
	if (S_ISREG(st.st_mode))
		return 0;
	aj_err(err, EINVAL,
	       "HTTPS interception for scoped secrets cannot use the root's %s: it is %s, "
	       "not a regular file",
	       AJ_NET_CA_BUNDLE, kind_of(st.st_mode));
	aj_err_hint(err, "make it the image's CA certificates (a PEM file) or remove it");
	return -EINVAL;
}

/* AJ_NET_CA_BUNDLE in rootfd (resolved inside it), or the host's for -1:
 * an fd or -errno. */
static int open_ca(int rootfd, int flags)
{
	if (rootfd >= 0)
		return aj_open_in_root(rootfd, AJ_NET_CA_BUNDLE, flags, 0);
	int fd = open(AJ_NET_CA_BUNDLE, flags | O_CLOEXEC);
	return fd < 0 ? -errno : fd;
}

int aj_etc_read_ca(int rootfd, char **out, size_t *len, aj_error *err)
{
	*out = NULL;
	*len = 0;
	/* O_PATH first: a FIFO or a device is never opened for reading */
	_cleanup_close_ int at = open_ca(rootfd, O_PATH);
	if (at == -ENOENT)
		return 0;
	if (at < 0)
		return aj_err(err, -at, "cannot open the root's %s", AJ_NET_CA_BUNDLE);
	int r = aj_etc_ca_check(at, err);
	if (r < 0)
		return r;
	/* O_NONBLOCK: a FIFO swapped in meanwhile cannot hang the start */
	_cleanup_close_ int in = open_ca(rootfd, O_RDONLY | O_NONBLOCK | O_NOCTTY);
	struct stat a, b;
	if (in < 0)
		return aj_err(err, -in, "cannot open the root's %s", AJ_NET_CA_BUNDLE);
	if (fstat(at, &a) < 0 || fstat(in, &b) < 0)
		return aj_err(err, errno, "cannot stat the root's %s", AJ_NET_CA_BUNDLE);
	if (a.st_dev != b.st_dev || a.st_ino != b.st_ino)
		return aj_err(err, EAGAIN, "the root's %s was replaced while read",
			      AJ_NET_CA_BUNDLE);
	if ((r = aj_read_fd(in, out, len)) < 0)
		return aj_err(err, -r, "cannot read the root's %s", AJ_NET_CA_BUNDLE);
	return 0;
}

int aj_etc_ca_bundle(const char *rootfs, bool missing_ok, const char *pem, char **out, size_t *len,
		     aj_error *err)
{
	*out = NULL;
	*len = 0;
	_cleanup_close_ int root = rootfs ? open(rootfs, O_PATH | O_DIRECTORY | O_CLOEXEC) : -1;
	if (rootfs && root < 0)
		return aj_err(err, errno, "cannot open the root %s", rootfs);
	_cleanup_free_ char *old = NULL;
	size_t n = 0;
	int r = aj_etc_read_ca(root, &old, &n, err);
	if (r < 0)
		return r;
	if (!old && !missing_ok) {
		aj_err(err, ENOENT, "HTTPS interception for scoped secrets needs %s in the root",
		       AJ_NET_CA_BUNDLE);
		aj_err_hint(err, "install ca-certificates on the host (or in the image)");
		return -ENOENT;
	}
	bool nl = n && old[n - 1] != '\n';
	size_t pl = strlen(pem);
	char *b = malloc(n + nl + pl + 1);
	if (!b)
		return aj_err(err, ENOMEM, "the sandbox's CA bundle");
	if (n)
		memcpy(b, old, n);
	if (nl)
		b[n] = '\n';
	memcpy(b + n + nl, pem, pl + 1);
	*out = b;
	*len = n + nl + pl;
	return 0;
}
