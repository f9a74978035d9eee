/* SPDX-License-Identifier: MIT */
/* libFuzzer target: the supervisor's message decoder (src/daemon/ipc.c):
 * a datagram from a front taken for compromised, with 0 to 2 fds (memfds
 * holding the input, sealed or not). Each must be accepted or refused,
 * never crash or leak, and every fd must be kept or closed. Input: one
 * byte of options (fd count, sealing, expected type), then the datagram. */
#include <fcntl.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/mman.h>
#include <unistd.h>

#include "ipc.h"

static int memfd_of(const uint8_t *data, size_t size, int seal)
{
	int fd = memfd_create("fuzz", MFD_CLOEXEC | MFD_ALLOW_SEALING);
	if (fd < 0)
		return -1;
	if (size && write(fd, data, size) < 0) {
		close(fd);
		return -1;
	}
	if (seal)
		(void)fcntl(fd, F_ADD_SEALS,
			    F_SEAL_SEAL | F_SEAL_SHRINK | F_SEAL_GROW | F_SEAL_WRITE);
	return fd;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	if (size < 1)
		return 0;
	uint8_t opt = data[0];
	data++;
	size--;
	int fds[2];
	size_t nfds = opt % 3;
	for (size_t i = 0; i < nfds; i++)
		fds[i] = memfd_of(data, size, opt & 4);
	for (size_t i = 0; i < nfds; i++)
		if (fds[i] < 0)
			return 0;
	aj_ipc_msg m;
	aj_error err;
	int type = opt & 8 ? AJ_IPC_REPLY : AJ_IPC_REQUEST;
	if (aj_ipc_decode(data, size, fds, nfds, type, &m, &err) == 0) {
		json_t *o = aj_ipc_json(&m, &err);
		json_decref(o);
		aj_ipc_msg_free(&m);
	}
	return 0;
}
