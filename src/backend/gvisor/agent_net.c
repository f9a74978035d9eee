/* SPDX-License-Identifier: MIT */
/* The agent's ops "identity" and "net" (agent_net.h) for a microVM restored
 * from its image's snapshot (microvm/box.c): it has its template's memory
 * and no NIC at its save. "identity": fresh entropy (mixed in, the kernel's
 * generator reseeded), the time and the hostname. "net": the host
 * hot-plugged the sandbox's tap as a virtio-net-pci device; the request's
 * identity is taken first, then eth0 (its driver loaded at boot by the
 * guest's init, aj.pci=1) gets the sandbox's address in its /30, up, the
 * default route via the host's side (nicup.c, as the guest's init gives a
 * booted VM), and the sandbox's resolver in /etc/resolv.conf. No packet
 * leaves before the VM is its own; a "net" without an identity is refused.
 * Any step that fails fails the op: the host then fails the create (fail
 * closed). */
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <linux/random.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <time.h>
#include <unistd.h>

#include "agent_net.h"
#include "nicup.h"

#define NIC "eth0"
/* the hot-plugged device probes after the host's device_add returns */
#define NIC_WAIT_MS 30000

/* The identity's fields read and checked: 0 or EINVAL. */
static int identity_args(json_t *q, const char **seed, const char **host, struct timespec *ts)
{
	*seed = json_string_value(json_object_get(q, "seed"));
	*host = json_string_value(json_object_get(q, "hostname"));
	json_t *sec = json_object_get(q, "sec"), *nsec = json_object_get(q, "nsec");
	size_t n = *seed ? strlen(*seed) : 0;
	if (!*seed || !*host || n % 2 || n < 32 || n > 128 ||
	    strspn(*seed, "0123456789abcdef") != n || !json_is_integer(sec) ||
	    !json_is_integer(nsec))
		return EINVAL;
	ts->tv_sec = (time_t)json_integer_value(sec);
	ts->tv_nsec = (long)json_integer_value(nsec);
	return ts->tv_sec <= 0 || ts->tv_nsec < 0 || ts->tv_nsec > 999999999L ? EINVAL : 0;
}

int aj_agent_identity(json_t *q)
{
	const char *seed, *host;
	struct timespec ts;
	int e = identity_args(q, &seed, &host, &ts);
	if (e)
		return e;
	size_t n = strlen(seed) / 2;
	/* rand_pool_info ends in a flexible array: heap-allocated, not nested */
	struct rand_pool_info *rp = calloc(1, sizeof(*rp) + n);
	if (!rp)
		return ENOMEM;
	rp->entropy_count = (int)n * 8;
	rp->buf_size = (int)n;
	unsigned char *buf = (unsigned char *)rp->buf;
	for (size_t k = 0; k < n; k++) {
		unsigned v;
		sscanf(seed + 2 * k, "%2x", &v); /* hex digits: checked above */
		buf[k] = (unsigned char)v;
	}
	int fd = open("/dev/urandom", O_WRONLY | O_CLOEXEC);
	if (fd < 0 || ioctl(fd, RNDADDENTROPY, rp) < 0 || ioctl(fd, RNDRESEEDCRNG) < 0)
		e = errno;
	if (fd >= 0)
		close(fd);
	free(rp);
	if (e)
		return e;
	if (clock_settime(CLOCK_REALTIME, &ts) < 0 || sethostname(host, strlen(host)) < 0)
		return errno;
	return 0;
}

static int write_resolv(const char *text)
{
	/* the guest's own file (its overlay's), never through a link */
	int fd =
	    open("/etc/resolv.conf", O_WRONLY | O_CREAT | O_TRUNC | O_NOFOLLOW | O_CLOEXEC, 0644);
	if (fd < 0)
		return errno;
	size_t len = strlen(text), off = 0;
	while (off < len) {
		ssize_t n = write(fd, text + off, len - off);
		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0) {
			int e = n < 0 ? errno : EIO;
			close(fd);
			return e;
		}
		off += (size_t)n;
	}
	return close(fd) < 0 ? errno : 0;
}

int aj_agent_net(json_t *q)
{
	const char *addr = json_string_value(json_object_get(q, "addr"));
	const char *gw = json_string_value(json_object_get(q, "gw"));
	const char *resolv = json_string_value(json_object_get(q, "resolv"));
	json_int_t prefix = json_integer_value(json_object_get(q, "prefix"));
	const char *seed, *host;
	struct timespec ts;
	struct in_addr ip, via;
	if (!addr || !gw || !resolv || prefix < 1 || prefix > 32 ||
	    inet_pton(AF_INET, addr, &ip) != 1 || inet_pton(AF_INET, gw, &via) != 1 ||
	    identity_args(q, &seed, &host, &ts))
		return EINVAL;
	int e = aj_agent_identity(q);
	if (e)
		return e;
	const char *step;
	e = -aj_nic_up(NIC, ip, (unsigned)prefix, via, NIC_WAIT_MS, &step);
	return e ? e : write_resolv(resolv);
}
