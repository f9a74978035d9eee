/* SPDX-License-Identifier: MIT */
/* --net open: a veth pair between agentjail's network namespace and the
 * sandbox's, a /30 from a private pool, a default route via the host side,
 * NAT and filtering in an nftables table of the sandbox's own (nft.c). */
#include "net.h"

#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <libmnl/libmnl.h>
#include <linux/if_link.h>
#include <linux/if_tun.h>
#include <linux/rtnetlink.h>
#include <linux/veth.h>
#include <net/if.h>
#include <pthread.h>
#include <sched.h>
#include <linux/magic.h>
#include <sys/ioctl.h>
#include <sys/stat.h>
#include <sys/vfs.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/random.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

#include "netd.h"
#include "nft.h"
#include "util.h"

/* ------------------------------------------------------------ address slots */

static bool pid_alive(int pid)
{
	return kill(pid, 0) == 0 || errno == EPERM;
}

static int link_delete(const char *name);

/* Host-side links aj<PID>n<SLOT> of agentjails that are gone. (Their peer
 * usually vanished with the sandbox's namespace, taking the pair along.) */
static void sweep_stale_links(void)
{
	struct if_nameindex *ifs = if_nameindex();
	if (!ifs)
		return;
	for (struct if_nameindex *i = ifs; i->if_index; i++) {
		int pid;
		unsigned slot;
		char end;
		if (sscanf(i->if_name, "aj%dn%u%c", &pid, &slot, &end) == 2 && pid > 0 &&
		    !pid_alive(pid))
			(void)link_delete(i->if_name);
	}
	if_freenameindex(ifs);
}

void aj_net_sweep(void)
{
	aj_nft_sweep_stale();
	sweep_stale_links();
}

int aj_net_prepare(aj_net *n, const aj_policy *p, aj_error *err)
{
	memset(n, 0, sizeof(*n));
	n->slot_fd = -1;
	if (p->net == AJ_NET_NONE)
		return 0;
	if (geteuid() != 0) {
		aj_err(err, EPERM, "%s needs root (it creates a veth pair and nftables rules)",
		       p->net == AJ_NET_ALLOW ? "--allow" : "--net open");
		aj_err_hint(err, "run agentjail as root, or use --net none");
		return -EPERM;
	}
	aj_nft_sweep_stale();
	sweep_stale_links();
	/* Slot S of the pool is held for this process's lifetime by an
	 * abstract unix socket name; such names are per network namespace,
	 * exactly the scope in which two sandboxes' addresses could collide. */
	unsigned slot;
	int fd = aj_reserve_random("net-slot", AJ_NET_SLOTS, &slot);
	if (fd >= 0) {
		n->slot_fd = fd;
		n->slot = slot;
		n->host_ip = AJ_NET_POOL + slot * 4 + 1;
		n->sandbox_ip = n->host_ip + 1;
		snprintf(n->host_if, sizeof(n->host_if), "aj%dn%u", (int)getpid(), slot);
		snprintf(n->table, sizeof(n->table), "agentjail-%d-%u", (int)getpid(), slot);
		n->nflog_group = p->net_log ? AJ_NFLOG_BASE + slot : 0;
		n->active = true;
		return 0;
	}
	if (fd != -EBUSY)
		return aj_err(err, -fd, "cannot reserve a sandbox address");
	return aj_err(err, EBUSY, "no free address in 10.200.0.0/16 for a new sandbox");
}

/* ------------------------------------------------------------ rtnetlink */

static int nl_talk(struct mnl_socket *nl, struct nlmsghdr *nlh)
{
	char buf[MNL_SOCKET_BUFFER_SIZE];
	unsigned seq = (unsigned)time(NULL);
	nlh->nlmsg_flags |= NLM_F_REQUEST | NLM_F_ACK;
	nlh->nlmsg_seq = seq;
	if (mnl_socket_sendto(nl, nlh, nlh->nlmsg_len) < 0)
		return -errno;
	ssize_t r = mnl_socket_recvfrom(nl, buf, sizeof(buf));
	if (r < 0)
		return -errno;
	if (mnl_cb_run(buf, (size_t)r, seq, mnl_socket_get_portid(nl), NULL, NULL) < 0)
		return -errno;
	return 0;
}

static struct mnl_socket *nl_open(void)
{
	struct mnl_socket *nl = mnl_socket_open2(NETLINK_ROUTE, SOCK_CLOEXEC);
	if (nl && mnl_socket_bind(nl, 0, MNL_SOCKET_AUTOPID) < 0) {
		int e = errno;
		mnl_socket_close(nl);
		errno = e;
		return NULL;
	}
	return nl;
}

static int link_delete(const char *name)
{
	struct mnl_socket *nl = nl_open();
	if (!nl)
		return -errno;
	char buf[MNL_SOCKET_BUFFER_SIZE];
	struct nlmsghdr *nlh = mnl_nlmsg_put_header(buf);
	nlh->nlmsg_type = RTM_DELLINK;
	struct ifinfomsg *ifm = mnl_nlmsg_put_extra_header(nlh, sizeof(*ifm));
	ifm->ifi_family = AF_UNSPEC;
	mnl_attr_put_strz(nlh, IFLA_IFNAME, name);
	int r = nl_talk(nl, nlh);
	mnl_socket_close(nl);
	return r;
}

/* veth HOST <-> eth0, eth0 created directly in the netns of pid (or of
 * the namespace fd nsfd, when pid is 0). */
static int veth_create(struct mnl_socket *nl, const char *host, pid_t pid, int nsfd)
{
	char buf[MNL_SOCKET_BUFFER_SIZE];
	struct nlmsghdr *nlh = mnl_nlmsg_put_header(buf);
	nlh->nlmsg_type = RTM_NEWLINK;
	nlh->nlmsg_flags = NLM_F_CREATE | NLM_F_EXCL;
	struct ifinfomsg *ifm = mnl_nlmsg_put_extra_header(nlh, sizeof(*ifm));
	ifm->ifi_family = AF_UNSPEC;
	mnl_attr_put_strz(nlh, IFLA_IFNAME, host);
	struct nlattr *info = mnl_attr_nest_start(nlh, IFLA_LINKINFO);
	mnl_attr_put_strz(nlh, IFLA_INFO_KIND, "veth");
	struct nlattr *data = mnl_attr_nest_start(nlh, IFLA_INFO_DATA);
	struct nlattr *peer = mnl_attr_nest_start(nlh, VETH_INFO_PEER);
	struct ifinfomsg *pifm = mnl_nlmsg_put_extra_header(nlh, sizeof(*pifm));
	pifm->ifi_family = AF_UNSPEC;
	mnl_attr_put_strz(nlh, IFLA_IFNAME, "eth0");
	if (pid)
		mnl_attr_put_u32(nlh, IFLA_NET_NS_PID, (uint32_t)pid);
	else
		mnl_attr_put_u32(nlh, IFLA_NET_NS_FD, (uint32_t)nsfd);
	mnl_attr_nest_end(nlh, peer);
	mnl_attr_nest_end(nlh, data);
	mnl_attr_nest_end(nlh, info);
	return nl_talk(nl, nlh);
}

static int link_up(struct mnl_socket *nl, unsigned ifindex)
{
	char buf[MNL_SOCKET_BUFFER_SIZE];
	struct nlmsghdr *nlh = mnl_nlmsg_put_header(buf);
	nlh->nlmsg_type = RTM_NEWLINK;
	struct ifinfomsg *ifm = mnl_nlmsg_put_extra_header(nlh, sizeof(*ifm));
	ifm->ifi_family = AF_UNSPEC;
	ifm->ifi_index = (int)ifindex;
	ifm->ifi_flags = IFF_UP;
	ifm->ifi_change = IFF_UP;
	return nl_talk(nl, nlh);
}

static int addr_add(struct mnl_socket *nl, unsigned ifindex, uint32_t ip, unsigned prefix)
{
	char buf[MNL_SOCKET_BUFFER_SIZE];
	struct nlmsghdr *nlh = mnl_nlmsg_put_header(buf);
	nlh->nlmsg_type = RTM_NEWADDR;
	nlh->nlmsg_flags = NLM_F_CREATE | NLM_F_EXCL;
	struct ifaddrmsg *ifa = mnl_nlmsg_put_extra_header(nlh, sizeof(*ifa));
	ifa->ifa_family = AF_INET;
	ifa->ifa_prefixlen = (unsigned char)prefix;
	ifa->ifa_index = ifindex;
	ifa->ifa_scope = RT_SCOPE_UNIVERSE;
	uint32_t be = htonl(ip);
	mnl_attr_put_u32(nlh, IFA_LOCAL, be);
	mnl_attr_put_u32(nlh, IFA_ADDRESS, be);
	return nl_talk(nl, nlh);
}

static int route_default(struct mnl_socket *nl, unsigned ifindex, uint32_t gw)
{
	char buf[MNL_SOCKET_BUFFER_SIZE];
	struct nlmsghdr *nlh = mnl_nlmsg_put_header(buf);
	nlh->nlmsg_type = RTM_NEWROUTE;
	nlh->nlmsg_flags = NLM_F_CREATE | NLM_F_EXCL;
	struct rtmsg *rtm = mnl_nlmsg_put_extra_header(nlh, sizeof(*rtm));
	rtm->rtm_family = AF_INET;
	rtm->rtm_table = RT_TABLE_MAIN;
	rtm->rtm_protocol = RTPROT_BOOT;
	rtm->rtm_scope = RT_SCOPE_UNIVERSE;
	rtm->rtm_type = RTN_UNICAST;
	mnl_attr_put_u32(nlh, RTA_GATEWAY, htonl(gw));
	mnl_attr_put_u32(nlh, RTA_OIF, ifindex);
	return nl_talk(nl, nlh);
}

/* ------------------------------------------------------------ sandbox side */

typedef struct inside_job {
	const aj_net *n;
	int nsfd;
	int result;
	const char *what;
} inside_job;

/* Runs in a short-lived thread that joins the sandbox's network namespace
 * (setns affects only the calling thread): eth0 gets the address and the
 * default route via the host side. */
static void *inside_thread(void *arg)
{
	inside_job *j = arg;
	j->what = "join the sandbox's network namespace";
	if (setns(j->nsfd, CLONE_NEWNET) < 0) {
		j->result = -errno;
		return NULL;
	}
	j->what = "find eth0 in the sandbox";
	unsigned idx = if_nametoindex("eth0");
	if (!idx) {
		j->result = -errno;
		return NULL;
	}
	j->what = "open a netlink socket in the sandbox";
	struct mnl_socket *nl = nl_open();
	if (!nl) {
		j->result = -errno;
		return NULL;
	}
	int r;
	j->what = "set the sandbox's address";
	if ((r = addr_add(nl, idx, j->n->sandbox_ip, 30)) == 0) {
		j->what = "bring up eth0 in the sandbox";
		if ((r = link_up(nl, idx)) == 0) {
			j->what = "add the sandbox's default route";
			r = route_default(nl, idx, j->n->host_ip);
		}
	}
	/* the loopback up too: gVisor's runsc takes the namespace's links as
	 * it finds them, and a sandbox without lo has no 127.0.0.1 */
	unsigned lo = if_nametoindex("lo");
	if (r == 0 && lo) {
		j->what = "bring up the sandbox's loopback";
		r = link_up(nl, lo);
	}
	mnl_socket_close(nl);
	j->result = r;
	return NULL;
}

static int configure_inside_ns(const aj_net *n, int nsfd, aj_error *err)
{
	inside_job j = {.n = n, .nsfd = nsfd};
	pthread_t t;
	int r = pthread_create(&t, NULL, inside_thread, &j);
	if (r != 0)
		return aj_err(err, r, "cannot start a thread to configure the sandbox's network");
	pthread_join(t, NULL);
	if (j.result < 0)
		return aj_err(err, -j.result, "cannot %s", j.what);
	return 0;
}

static int configure_inside(const aj_net *n, pid_t child, aj_error *err)
{
	char path[64];
	snprintf(path, sizeof(path), "/proc/%d/ns/net", (int)child);
	_cleanup_close_ int nsfd = open(path, O_RDONLY | O_CLOEXEC);
	if (nsfd < 0)
		return aj_err(err, errno, "cannot open %s", path);
	return configure_inside_ns(n, nsfd, err);
}

int aj_net_readdress(const aj_net *n, int nsfd, aj_error *err)
{
	return n->active ? configure_inside_ns(n, nsfd, err) : 0;
}

/* Forwarding is per network namespace: agentjail turns it on in its own
 * (never off again: other sandboxes may be running). */
static int enable_forwarding(aj_error *err)
{
	_cleanup_free_ char *v = NULL;
	if (aj_read_file("/proc/sys/net/ipv4/ip_forward", &v, NULL) == 0 && v[0] == '1')
		return 0;
	int r = aj_write_file("/proc/sys/net/ipv4/ip_forward", "1", 0);
	if (r < 0)
		return aj_err(err, -r, "cannot turn on net.ipv4.ip_forward");
	return 0;
}

static int setup_host_side(aj_net *n, pid_t child, int nsfd, aj_error *err)
{
	struct mnl_socket *nl = nl_open();
	if (!nl)
		return aj_err(err, errno, "cannot open a netlink socket");
	int r = veth_create(nl, n->host_if, child, nsfd);
	const char *what = "create the veth pair";
	if (r == 0) {
		n->link_made = true;
		unsigned idx = if_nametoindex(n->host_if);
		r = idx ? 0 : -errno;
		what = "set the host side's address";
		if (r == 0 && (r = addr_add(nl, idx, n->host_ip, 30)) == 0) {
			what = "bring up the host side";
			r = link_up(nl, idx);
		}
	}
	mnl_socket_close(nl);
	if (r < 0)
		return aj_err(err, -r, "cannot %s %s", what, n->host_if);
	return 0;
}

int aj_net_setup(aj_net *n, const aj_policy *p, pid_t child, aj_error *err)
{
	if (!n->active)
		return aj_netd_start(n, p, child, err);
	_cleanup_free_ char *cmds = NULL;
	int r = aj_nft_build(n, p, &cmds);
	if (r < 0)
		return aj_err(err, -r, "cannot build the nftables rules");
	/* the filter first: no packet leaves the sandbox before it is there */
	if ((r = aj_nft_apply(cmds, err)) < 0)
		return r;
	n->table_made = true;
	if ((r = enable_forwarding(err)) < 0 || (r = setup_host_side(n, child, -1, err)) < 0 ||
	    (r = configure_inside(n, child, err)) < 0) {
		aj_err_prefix(err, "%s", p->net == AJ_NET_ALLOW ? "--allow" : "--net open");
		return r;
	}
	return aj_netd_start(n, p, child, err);
}

/* ------------------------------------------------------------ level 3 */

/* A netlink request on link ifindex (0: a new one named name) of kind (or
 * NULL), attached to master (or 0). */
static int link_new(struct mnl_socket *nl, const char *name, const char *kind, unsigned ifindex,
		    unsigned master)
{
	char buf[MNL_SOCKET_BUFFER_SIZE];
	struct nlmsghdr *nlh = mnl_nlmsg_put_header(buf);
	nlh->nlmsg_type = RTM_NEWLINK;
	nlh->nlmsg_flags = ifindex ? 0 : NLM_F_CREATE | NLM_F_EXCL;
	struct ifinfomsg *ifm = mnl_nlmsg_put_extra_header(nlh, sizeof(*ifm));
	ifm->ifi_family = AF_UNSPEC;
	ifm->ifi_index = (int)ifindex;
	if (name)
		mnl_attr_put_strz(nlh, IFLA_IFNAME, name);
	if (kind) {
		struct nlattr *info = mnl_attr_nest_start(nlh, IFLA_LINKINFO);
		mnl_attr_put_strz(nlh, IFLA_INFO_KIND, kind);
		mnl_attr_nest_end(nlh, info);
	}
	if (master)
		mnl_attr_put_u32(nlh, IFLA_MASTER, master);
	return nl_talk(nl, nlh);
}

typedef struct tap_job {
	int nsfd; /* in: the sandbox's netns, or -1: make one (out) */
	int tap;  /* out: the tap's fd */
	int result;
	const char *what;
} tap_job;

/* In a thread of its own (unshare and setns change only the calling
 * thread): a new network namespace for the VMM, whose fd it returns. */
static void *netns_thread(void *arg)
{
	tap_job *j = arg;
	j->what = "make the VM's network namespace";
	if (unshare(CLONE_NEWNET) < 0 ||
	    (j->nsfd = open("/proc/thread-self/ns/net", O_RDONLY | O_CLOEXEC)) < 0)
		j->result = -errno;
	return NULL;
}

/* In the sandbox's netns: the bridge br0 between the veth's eth0 and the
 * tap device tap0 the VMM gets (its fd), all up, the loopback too. The
 * netns itself has no address: it only carries the guest's frames. */
static void *tap_thread(void *arg)
{
	tap_job *j = arg;
	j->what = "join the VM's network namespace";
	if (setns(j->nsfd, CLONE_NEWNET) < 0) {
		j->result = -errno;
		return NULL;
	}
	j->what = "open a netlink socket in the VM's network namespace";
	struct mnl_socket *nl = nl_open();
	if (!nl) {
		j->result = -errno;
		return NULL;
	}
	/* the tap belongs to the namespace /dev/net/tun was opened in */
	j->what = "create the tap device (/dev/net/tun)";
	int r = 0;
	j->tap = open("/dev/net/tun", O_RDWR | O_CLOEXEC);
	struct ifreq ifr = {.ifr_flags = IFF_TAP | IFF_NO_PI | IFF_VNET_HDR};
	snprintf(ifr.ifr_name, sizeof(ifr.ifr_name), "%s", "tap0");
	if (j->tap < 0 || ioctl(j->tap, TUNSETIFF, &ifr) < 0)
		r = -errno;
	j->what = "create the bridge br0";
	if (r == 0)
		r = link_new(nl, "br0", "bridge", 0, 0);
	unsigned br = r == 0 ? if_nametoindex("br0") : 0, eth = if_nametoindex("eth0"),
		 tap = if_nametoindex("tap0"), lo = if_nametoindex("lo");
	if (r == 0 && (!br || !eth || !tap || !lo))
		r = -ENODEV;
	j->what = "attach eth0 and tap0 to the bridge";
	if (r == 0 && (r = link_new(nl, NULL, NULL, eth, br)) == 0)
		r = link_new(nl, NULL, NULL, tap, br);
	j->what = "bring up the VM's links";
	unsigned up[] = {lo, eth, tap, br};
	for (size_t i = 0; r == 0 && i < AJ_ARRAY_SIZE(up); i++)
		r = link_up(nl, up[i]);
	mnl_socket_close(nl);
	j->result = r;
	return NULL;
}

static int run_job(void *(*fn)(void *), tap_job *j, aj_error *err)
{
	pthread_t t;
	int r = pthread_create(&t, NULL, fn, j);
	if (r != 0)
		return aj_err(err, r, "cannot start a thread to configure the VM's network");
	pthread_join(t, NULL);
	if (j->result < 0)
		return aj_err(err, -j->result, "cannot %s", j->what);
	return 0;
}

int aj_net_setup_tap(aj_net *n, const aj_policy *p, int *nsfd, int *tap, aj_error *err)
{
	*nsfd = *tap = -1;
	if (!n->active)
		return 0;
	_cleanup_free_ char *cmds = NULL;
	int r = aj_nft_build(n, p, &cmds);
	if (r < 0)
		return aj_err(err, -r, "cannot build the nftables rules");
	/* the filter first, as for level 1 */
	if ((r = aj_nft_apply(cmds, err)) < 0)
		return r;
	n->table_made = true;
	tap_job j = {.nsfd = -1, .tap = -1};
	if ((r = enable_forwarding(err)) == 0 && (r = run_job(netns_thread, &j, err)) == 0 &&
	    (r = setup_host_side(n, 0, j.nsfd, err)) == 0 &&
	    /* netd before the tap exists: it keeps none of its fds */
	    (r = aj_netd_start(n, p, 0, err)) == 0)
		r = run_job(tap_thread, &j, err);
	if (r < 0) {
		if (j.tap >= 0)
			close(j.tap);
		if (j.nsfd >= 0)
			close(j.nsfd);
		aj_err_prefix(err, "%s", p->net == AJ_NET_ALLOW ? "--allow" : "--net open");
		return r;
	}
	*nsfd = j.nsfd;
	*tap = j.tap;
	return 0;
}

void aj_net_teardown(aj_net *n)
{
	aj_netd_stop(n);
	free(n->ca_pem);
	n->ca_pem = NULL;
	if (n->link_made)
		(void)link_delete(n->host_if);
	if (n->table_made)
		aj_nft_delete_table(n->table);
	n->link_made = n->table_made = false;
	if (n->slot_fd >= 0)
		close(n->slot_fd);
	n->slot_fd = -1;
	n->active = false;
}

int aj_net_join_netns(const char *path, bool unwalled, aj_error *err)
{
	static const char wall[] =
	    "table inet agentjail-oci {\n"
	    " chain inbound { type filter hook input priority -300; policy drop; iifname \"lo\" "
	    "accept; }\n"
	    " chain outbound { type filter hook output priority -300; policy drop; oifname \"lo\" "
	    "accept; }\n"
	    " chain forwarded { type filter hook forward priority -300; policy drop; }\n"
	    "}\n";
	_cleanup_close_ int fd = open(path, O_RDONLY | O_CLOEXEC);
	struct statfs sf;
	if (fd < 0 || fstatfs(fd, &sf) < 0)
		return aj_err(err, errno, "linux.namespaces: the network namespace %s", path);
	/* never the runtime's own (the host's, for Podman): a wall there
	 * would cut the host off */
	struct stat a, b;
	if (sf.f_type == NSFS_MAGIC && fstat(fd, &a) == 0 && stat("/proc/self/ns/net", &b) == 0 &&
	    a.st_dev == b.st_dev && a.st_ino == b.st_ino) {
		aj_err(err, EINVAL,
		       "linux.namespaces: %s is the runtime's own network namespace (the host's)",
		       path);
		aj_err_hint(err, "a container gets a network namespace of its own: podman "
				 "--network none, or the engine's default network");
		return -EINVAL;
	}
	if (sf.f_type != NSFS_MAGIC || setns(fd, CLONE_NEWNET) < 0)
		return aj_err(err, sf.f_type != NSFS_MAGIC ? EINVAL : errno,
			      "linux.namespaces: cannot join the network namespace %s", path);
	_cleanup_close_ int s = socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);
	struct ifreq ifr;
	memset(&ifr, 0, sizeof(ifr));
	snprintf(ifr.ifr_name, sizeof(ifr.ifr_name), "lo");
	if (s < 0 || ioctl(s, SIOCGIFFLAGS, &ifr) < 0)
		return aj_err(err, errno, "no loopback in the network namespace %s", path);
	ifr.ifr_flags |= IFF_UP | IFF_RUNNING;
	if (ioctl(s, SIOCSIFFLAGS, &ifr) < 0)
		return aj_err(err, errno, "cannot bring up the loopback in %s", path);
	int r = unwalled ? 0 : aj_nft_apply(wall, err);
	if (r < 0)
		aj_err_prefix(err, "the wall of the network namespace %s", path);
	return r;
}
