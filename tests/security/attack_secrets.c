/* SPDX-License-Identifier: MIT */
/* ajattack: secrets, leaks, credentials, Landlock, kernel info. */
#include "attack.h"

/* ------------------------------------------------------------ secrets */

void scan_file(const char *path, const char *needle, int *unreadable)
{
	static char buf[1 << 20];
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0) {
		(*unreadable)++;
		return;
	}
	size_t n = 0;
	ssize_t r;
	while (n < sizeof(buf) && (r = read(fd, buf + n, sizeof(buf) - n)) > 0)
		n += (size_t)r;
	if (r < 0 && n == 0)
		(*unreadable)++;
	close(fd);
	if (memmem(buf, n, needle, strlen(needle)))
		escaped("secret", "found in %s", path);
}

/* Look for needle in every file below dir (bounded, no symlinks). */
void scan_tree(const char *dir, const char *needle, int depth, int *files)
{
	DIR *d = opendir(dir);
	if (!d)
		return;
	struct dirent *e;
	while ((e = readdir(d)) && *files < 50000) {
		if (!strcmp(e->d_name, ".") || !strcmp(e->d_name, ".."))
			continue;
		char p[PATH_MAX];
		if ((size_t)snprintf(p, sizeof(p), "%s/%s", dir, e->d_name) >= sizeof(p))
			continue;
		struct stat st;
		if (lstat(p, &st) < 0)
			continue;
		if (S_ISDIR(st.st_mode) && depth < 16) {
			scan_tree(p, needle, depth + 1, files);
		} else if (S_ISREG(st.st_mode)) {
			int unreadable = 0;
			(*files)++;
			scan_file(p, needle, &unreadable);
		}
	}
	closedir(d);
}

/* The canary is given reversed so that our own cmdline does not hold it. */
int a_scan_secret(const char *reversed, bool pid1_only)
{
	size_t n = strlen(reversed);
	char *needle = malloc(n + 1);
	for (size_t i = 0; i < n; i++)
		needle[i] = reversed[n - 1 - i];
	needle[n] = 0;
	int unreadable = 0, scanned = 0;
	DIR *d = opendir("/proc");
	struct dirent *e;
	while (d && (e = readdir(d))) {
		if (!is_num(e->d_name) || (pid1_only && strcmp(e->d_name, "1")))
			continue;
		static const char *const files[] = {"environ", "cmdline", "comm"};
		for (size_t i = 0; i < ARRAY_SIZE(files); i++) {
			char p[PATH_MAX];
			snprintf(p, sizeof(p), "/proc/%s/%s", e->d_name, files[i]);
			scan_file(p, needle, &unreadable);
			scanned++;
		}
	}
	if (d)
		closedir(d);
	info("scanned %d unreadable %d", scanned, unreadable);
	if (!pid1_only) {
		/* and every file the sandbox can read outside the host's system dirs */
		static const char *const dirs[] = {"/etc",	 "/tmp",     "/home",
						   "/workspace", "/dev/shm", "/run",
						   "/var",	 "/root",    "/"};
		int files = 0;
		for (size_t i = 0; i < ARRAY_SIZE(dirs) - 1; i++)
			scan_tree(dirs[i], needle, 0, &files);
		/* files right in / (not the system trees) */
		DIR *r = opendir("/");
		while (r && (e = readdir(r))) {
			char p[PATH_MAX];
			struct stat st;
			snprintf(p, sizeof(p), "/%s", e->d_name);
			if (lstat(p, &st) == 0 && S_ISREG(st.st_mode)) {
				int u = 0;
				files++;
				scan_file(p, needle, &u);
			}
		}
		if (r)
			closedir(r);
		info("files %d", files);
	}
	if (!n_escaped)
		held("secret");
	free(needle);
	return finish();
}

void b64(const unsigned char *in, size_t n, char *outb)
{
	static const char t[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
	size_t o = 0;
	for (size_t i = 0; i < n; i += 3) {
		unsigned v = (unsigned)in[i] << 16 | (i + 1 < n ? (unsigned)in[i + 1] << 8 : 0) |
			     (i + 2 < n ? in[i + 2] : 0);
		outb[o++] = t[(v >> 18) & 63];
		outb[o++] = t[(v >> 12) & 63];
		outb[o++] = i + 1 < n ? t[(v >> 6) & 63] : '=';
		outb[o++] = i + 2 < n ? t[v & 63] : '=';
	}
	outb[o] = 0;
}

void pause_ms(int ms)
{
	struct timespec ts = {0, ms * 1000000L};
	nanosleep(&ts, NULL);
}

void wr(int fd, const char *p, size_t n)
{
	while (n) {
		ssize_t w = write(fd, p, n);
		if (w <= 0)
			return;
		p += w;
		n -= (size_t)w;
	}
}

/* Leak a value (read from FILE, e.g. one the user left in the workspace)
 * through the output in every way the redactor claims to cover. */
int a_leak(const char *file)
{
	char v[256];
	if (read_small(file, v, sizeof(v)) <= 0) {
		out("cannot read %s\n", file);
		return 2;
	}
	v[strcspn(v, "\r\n")] = 0;
	size_t n = strlen(v);
	char line[1024];
	snprintf(line, sizeof(line), "raw %s\n", v);
	wr(1, line, strlen(line));
	/* split across three writes, with pauses in between */
	wr(1, "split ", 6);
	wr(1, v, n / 3);
	pause_ms(60);
	wr(1, v + n / 3, n / 3);
	pause_ms(60);
	wr(1, v + 2 * (n / 3), n - 2 * (n / 3));
	wr(1, "\n", 1);
	/* one byte per write */
	wr(1, "bytes ", 6);
	for (size_t i = 0; i < n; i++) {
		wr(1, v + i, 1);
		pause_ms(2);
	}
	wr(1, "\n", 1);
	/* base64 at the three alignments */
	for (int a = 0; a < 3; a++) {
		unsigned char buf[300];
		memcpy(buf, "xy", (size_t)a);
		memcpy(buf + a, v, n);
		char enc[512];
		b64(buf, n + (size_t)a, enc);
		snprintf(line, sizeof(line), "b64_%d %s\n", a, enc);
		wr(1, line, strlen(line));
	}
	snprintf(line, sizeof(line), "stderr %s\n", v);
	wr(2, line, strlen(line));
	/* half on stdout, half on stderr (each stream alone never holds it) */
	snprintf(line, sizeof(line), "cross_out %.*s\n", (int)(n / 2), v);
	wr(1, line, strlen(line));
	snprintf(line, sizeof(line), "cross_err %s\n", v + n / 2);
	wr(2, line, strlen(line));
	return 0;
}

int a_creds(int argc, char **argv)
{
	static const char *const paths[] = {"/root",
					    "/root/.ssh",
					    "/etc/shadow",
					    "/etc/gshadow",
					    "/etc/ssh",
					    "/etc/sudoers",
					    "/etc/machine-id",
					    "/var",
					    "/run",
					    "/home/agent/.ssh",
					    "/etc/ssh/ssh_host_ed25519_key",
					    "/etc/pip.conf",
					    "/etc/npmrc",
					    "/proc/1/root/root"};
	for (size_t i = 0; i < ARRAY_SIZE(paths) + (size_t)argc; i++) {
		const char *p = i < ARRAY_SIZE(paths) ? paths[i] : argv[i - ARRAY_SIZE(paths)];
		char name[128];
		snprintf(name, sizeof(name), "cred%s", p);
		for (char *c = name; *c; c++)
			if (*c == '/' || *c == '.' || *c == '-')
				*c = '_';
		struct stat st;
		expect_fail(name, stat(p, &st));
	}
	DIR *d = opendir("/home");
	struct dirent *e;
	while (d && (e = readdir(d)))
		if (strcmp(e->d_name, ".") && strcmp(e->d_name, "..") && strcmp(e->d_name, "agent"))
			escaped("home_entry", "/home/%s", e->d_name);
	if (d)
		closedir(d);
	return finish();
}

/* Landlock: writes outside the writable areas fail even where the mount
 * itself is writable (/dev is a rw tmpfs, /proc is rw). */
int a_landlock(void)
{
	int fd = open("/ajescape", O_WRONLY | O_CREAT | O_CLOEXEC, 0644);
	if (fd >= 0)
		unlink("/ajescape");
	expect_open_fail("create_in_root", fd);
	fd = open("/etc/ajescape", O_WRONLY | O_CREAT | O_CLOEXEC, 0644);
	if (fd >= 0)
		unlink("/etc/ajescape");
	expect_open_fail("create_in_etc", fd);
	fd = open("/dev/ajescape", O_WRONLY | O_CREAT | O_CLOEXEC, 0644);
	if (fd >= 0)
		unlink("/dev/ajescape");
	expect_open_fail("create_in_dev", fd);
	if (mkdir("/dev/ajdir", 0755) == 0) {
		rmdir("/dev/ajdir");
		escaped("mkdir_in_dev", "made /dev/ajdir");
	} else {
		blocked("mkdir_in_dev", errno);
	}
	if (symlink("/workspace", "/dev/ajlink") == 0) {
		unlink("/dev/ajlink");
		escaped("symlink_in_dev", "made /dev/ajlink");
	} else {
		blocked("symlink_in_dev", errno);
	}
	if (unlink("/dev/null") == 0)
		escaped("unlink_dev_null", "removed /dev/null");
	else
		blocked("unlink_dev_null", errno);
	if (rename("/dev/zero", "/dev/ajzero") == 0)
		escaped("rename_dev_zero", "renamed /dev/zero");
	else
		blocked("rename_dev_zero", errno);
	expect_open_fail("write_proc_self_comm", open("/proc/self/comm", O_WRONLY | O_CLOEXEC));
	expect_fail("truncate_attack", truncate("/attack", 0));
	expect_fail("chmod_usr_bin", chmod("/usr/bin", 0777));
	/* the writable areas do work */
	static const char *const ok[] = {"/workspace/ajok", "/tmp/ajok", "/home/agent/ajok",
					 "/dev/shm/ajok"};
	for (size_t i = 0; i < ARRAY_SIZE(ok); i++) {
		fd = open(ok[i], O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
		bool w = fd >= 0 && write(fd, "ok\n", 3) == 3;
		info("write %s %s", ok[i], w ? "ok" : ename(errno));
		if (fd >= 0)
			close(fd);
		unlink(ok[i]);
	}
	return finish();
}

int a_kinfo(void)
{
	char buf[4096];
	long n = read_small("/proc/kallsyms", buf, sizeof(buf));
	if (n <= 0) {
		blocked("kallsyms", errno);
	} else {
		unsigned long long addr = 1;
		char sym[128] = "";
		sscanf(buf, "%llx %*s %127s", &addr, sym);
		info("kallsyms first %016llx %s", addr, sym);
		if (addr != 0)
			escaped("kallsyms", "kernel address %llx of %s visible", addr, sym);
		else
			held("kallsyms");
	}
	expect_open_fail("kcore", open("/proc/kcore", O_RDONLY | O_CLOEXEC));
	expect_open_fail("kmsg", open("/proc/kmsg", O_RDONLY | O_CLOEXEC));
	expect_open_fail("kpagecount", open("/proc/kpagecount", O_RDONLY | O_CLOEXEC));
	/* the kernel's heap and free pages' layouts (root's, 0400) */
	expect_open_fail("slabinfo", open("/proc/slabinfo", O_RDONLY | O_CLOEXEC));
	expect_open_fail("pagetypeinfo", open("/proc/pagetypeinfo", O_RDONLY | O_CLOEXEC));
	expect_open_fail("vmallocinfo", open("/proc/vmallocinfo", O_RDONLY | O_CLOEXEC));
	return finish();
}
