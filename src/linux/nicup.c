/* SPDX-License-Identifier: MIT */
/* A microVM guest's NIC brought up with ioctls (nicup.h): no netlink
 * library in the guest's static programs. */
#include "nicup.h"

#include <errno.h>
#include <net/if.h>
#include <net/route.h>
#include <stdio.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

static int set_up(int s, const char *name)
{
	struct ifreq ifr = {0};
	snprintf(ifr.ifr_name, sizeof(ifr.ifr_name), "%s", name);
	if (ioctl(s, SIOCGIFFLAGS, &ifr) < 0)
		return -errno;
	ifr.ifr_flags |= IFF_UP;
	return ioctl(s, SIOCSIFFLAGS, &ifr) < 0 ? -errno : 0;
}

int aj_nic_link_up(const char *name)
{
	int s = socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);
	if (s < 0)
		return -errno;
	int r = set_up(s, name);
	close(s);
	return r;
}

static int configure(int s, const char *name, struct in_addr ip, unsigned prefix, struct in_addr gw,
		     const char **step)
{
	struct ifreq ifr = {0};
	snprintf(ifr.ifr_name, sizeof(ifr.ifr_name), "%s", name);
	struct sockaddr_in *sa = (struct sockaddr_in *)&ifr.ifr_addr;
	sa->sin_family = AF_INET;
	sa->sin_addr = ip;
	*step = "the address";
	if (ioctl(s, SIOCSIFADDR, &ifr) < 0)
		return -errno;
	sa->sin_addr.s_addr = htonl(prefix == 32 ? 0xffffffffu : ~(0xffffffffu >> prefix));
	*step = "the netmask";
	if (ioctl(s, SIOCSIFNETMASK, &ifr) < 0)
		return -errno;
	*step = "the link";
	int r = set_up(s, name);
	if (r < 0)
		return r;
	struct rtentry rt = {0};
	struct sockaddr_in *dst = (struct sockaddr_in *)&rt.rt_dst,
			   *via = (struct sockaddr_in *)&rt.rt_gateway,
			   *mask = (struct sockaddr_in *)&rt.rt_genmask;
	dst->sin_family = via->sin_family = mask->sin_family = AF_INET;
	via->sin_addr = gw;
	rt.rt_flags = RTF_UP | RTF_GATEWAY;
	char dev[IFNAMSIZ];
	snprintf(dev, sizeof(dev), "%s", name);
	rt.rt_dev = dev;
	*step = "the default route";
	return ioctl(s, SIOCADDRT, &rt) < 0 ? -errno : 0;
}

int aj_nic_up(const char *name, struct in_addr ip, unsigned prefix, struct in_addr gw,
	      unsigned wait_ms, const char **step)
{
	*step = "the NIC";
	if (prefix < 1 || prefix > 32 || strlen(name) >= IFNAMSIZ)
		return -EINVAL;
	for (unsigned waited = 0; !if_nametoindex(name); waited += 5) {
		if (waited >= wait_ms)
			return -ENODEV;
		struct timespec ts = {0, 5000000};
		nanosleep(&ts, NULL);
	}
	int s = socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);
	if (s < 0)
		return -errno;
	int r = configure(s, name, ip, prefix, gw, step);
	close(s);
	return r;
}
