/* SPDX-License-Identifier: MIT */
/* The loopback connect of the ports proxy (loopback.h). */
#include "loopback.h"

#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <stdint.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <unistd.h>

/* A connected socket to the loopback address of family, or a negative errno. */
static int try_connect(int family, unsigned port, bool nonblock)
{
	int s = socket(family, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (s < 0)
		return -errno;
	struct timeval tv = {.tv_sec = AJ_LOOPBACK_CONNECT_TIMEOUT_S};
	(void)setsockopt(s, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof(tv)); /* bounds connect */
	struct sockaddr_in a4 = {.sin_family = AF_INET,
				 .sin_port = htons((uint16_t)port),
				 .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
	struct sockaddr_in6 a6 = {.sin6_family = AF_INET6,
				  .sin6_port = htons((uint16_t)port),
				  .sin6_addr = IN6ADDR_LOOPBACK_INIT};
	int r = family == AF_INET ? connect(s, (struct sockaddr *)&a4, sizeof(a4))
				  : connect(s, (struct sockaddr *)&a6, sizeof(a6));
	struct timeval none = {0};
	if (r == 0) /* the timeout was the connect's, not the relay's writes */
		r = setsockopt(s, SOL_SOCKET, SO_SNDTIMEO, &none, sizeof(none));
	int fl = r == 0 && nonblock ? fcntl(s, F_GETFL) : 0;
	if (r < 0 || fl < 0 || (nonblock && fcntl(s, F_SETFL, fl | O_NONBLOCK) < 0)) {
		int e = errno;
		close(s);
		return -(e == EINPROGRESS ? ETIMEDOUT : e); /* (SO_SNDTIMEO ran out) */
	}
	return s;
}

int aj_loopback_connect(unsigned port, bool nonblock)
{
	if (port == 0 || port > 65535)
		return -EINVAL;
	int s = try_connect(AF_INET, port, nonblock);
	if (s == -ECONNREFUSED) { /* a server on ::1 only */
		int s6 = try_connect(AF_INET6, port, nonblock);
		if (s6 >= 0 || (s6 != -EAFNOSUPPORT && s6 != -EADDRNOTAVAIL))
			s = s6;
	}
	return s;
}
