/* SPDX-License-Identifier: MIT */
/* The agent's op "net" (agent_net.h): a microVM restored from its image's
 * snapshot (microvm/box.c) has no NIC at its save; the host hot-plugs the
 * sandbox's tap as a virtio-net-pci device, then asks for this: eth0 (its
 * driver loaded at boot by the guest's init, aj.pci=1) with the sandbox's
 * address in its /30, up, the default route via the host's side, and the
 * sandbox's resolver in /etc/resolv.conf, as the guest's init gives a
 * booted VM (guest/init.c, setup_net). Any step that fails fails the op:
 * the host then fails the create (fail closed). */
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <net/if.h>
#include <net/route.h>
#include <netinet/in.h>
#include <stdio.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "agent_net.h"

#define NIC "eth0"
/* the hot-plugged device probes after the host's device_add returns */
#define NIC_WAIT_MS 30000

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

static int nic_up(int s, struct in_addr ip, unsigned prefix, struct in_addr gw)
{
	for (int i = 0; !if_nametoindex(NIC); i++) {
		if (i * 10 >= NIC_WAIT_MS)
			return ENODEV;
		struct timespec ts = {0, 10000000};
		nanosleep(&ts, NULL);
	}
	struct ifreq ifr = {0};
	snprintf(ifr.ifr_name, sizeof(ifr.ifr_name), "%s", NIC);
	struct sockaddr_in *sa = (struct sockaddr_in *)&ifr.ifr_addr;
	sa->sin_family = AF_INET;
	sa->sin_addr = ip;
	if (ioctl(s, SIOCSIFADDR, &ifr) < 0)
		return errno;
	sa->sin_addr.s_addr = htonl(prefix == 32 ? 0xffffffffu : ~(0xffffffffu >> prefix));
	if (ioctl(s, SIOCSIFNETMASK, &ifr) < 0 || ioctl(s, SIOCGIFFLAGS, &ifr) < 0)
		return errno;
	ifr.ifr_flags |= IFF_UP;
	if (ioctl(s, SIOCSIFFLAGS, &ifr) < 0)
		return errno;
	struct rtentry rt = {0};
	struct sockaddr_in *dst = (struct sockaddr_in *)&rt.rt_dst,
			   *via = (struct sockaddr_in *)&rt.rt_gateway,
			   *mask = (struct sockaddr_in *)&rt.rt_genmask;
	dst->sin_family = via->sin_family = mask->sin_family = AF_INET;
	via->sin_addr = gw;
	rt.rt_flags = RTF_UP | RTF_GATEWAY;
	rt.rt_dev = NIC;
	return ioctl(s, SIOCADDRT, &rt) < 0 ? errno : 0;
}

int aj_agent_net(json_t *q)
{
	const char *addr = json_string_value(json_object_get(q, "addr"));
	const char *gw = json_string_value(json_object_get(q, "gw"));
	const char *resolv = json_string_value(json_object_get(q, "resolv"));
	json_int_t prefix = json_integer_value(json_object_get(q, "prefix"));
	struct in_addr ip, via;
	if (!addr || !gw || !resolv || prefix < 1 || prefix > 32 ||
	    inet_pton(AF_INET, addr, &ip) != 1 || inet_pton(AF_INET, gw, &via) != 1)
		return EINVAL;
	int s = socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);
	if (s < 0)
		return errno;
	int e = nic_up(s, ip, (unsigned)prefix, via);
	close(s);
	return e ? e : write_resolv(resolv);
}
