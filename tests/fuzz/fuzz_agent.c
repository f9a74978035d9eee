/* SPDX-License-Identifier: MIT */
/* libFuzzer target: what the host reads from an agent inside a sandbox or
 * a guest (core/agent_frame.c), which that sandbox controls. Checks: the
 * stream splitter and the blocking reader see the same frames, each within
 * AJ_AGENT_MAX_FRAME, and together exactly the bytes consumed; a cut or
 * oversized frame is an error, never a frame; the answers' JSON reads as
 * an exit status within range or as "not valid", and a stat within its
 * types and mode bits. */
#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "agent_frame.h"

typedef struct seen {
	int fd; /* the same bytes, read frame by frame */
	size_t frames;
} seen;

static void check_body(char type, const char *buf, size_t len)
{
	if (type == AJ_AG_EXIT) {
		aj_agent_exit x;
		aj_agent_exit_parse(buf, len, &x);
		if ((!x.valid && (x.err != EPROTO || x.exit_code || x.term_signal)) ||
		    x.exit_code < 0 || x.exit_code > 255 || x.term_signal < 0 ||
		    x.term_signal > 64 || x.err < 0 ||
		    strnlen(x.error, sizeof(x.error)) >= sizeof(x.error) ||
		    strnlen(x.confine, sizeof(x.confine)) >= sizeof(x.confine))
			abort();
	} else if (type == AJ_AG_STAT || type == AJ_AG_ENTRY) {
		aj_agent_stat st;
		aj_agent_stat_parse(buf, len, &st);
		if (!strchr("fdlo", st.type) || st.type == 0 || st.mode > 07777)
			abort();
		free(st.name);
	}
}

static bool frame(void *ctx, char type, const char *buf, size_t len)
{
	seen *s = ctx;
	char t, *b = NULL;
	uint32_t n;
	if (len > AJ_AGENT_MAX_FRAME || aj_agent_recv(s->fd, &t, &b, &n) != 1 || t != type ||
	    n != len || memcmp(b, buf, len) != 0 || b[n] != '\0')
		abort(); /* the two readers disagree */
	free(b);
	s->frames++;
	check_body(type, buf, len);
	return true;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	seen s = {memfd_create("agent", MFD_CLOEXEC), 0};
	if (s.fd < 0 || (size && write(s.fd, data, size) != (ssize_t)size) ||
	    lseek(s.fd, 0, SEEK_SET) != 0)
		abort();
	ssize_t used = aj_agent_split((const char *)data, size, frame, &s);
	if (used > (ssize_t)size || (used < 0 && used != -EPROTO))
		abort();
	/* what is left is no whole frame: the blocking reader ends there too */
	char t, *b = NULL;
	uint32_t n;
	int r = aj_agent_recv(s.fd, &t, &b, &n);
	if (used >= 0 && (size_t)used == size ? r != 0 : r != -EPROTO)
		abort();
	free(b);
	close(s.fd);
	return 0;
}
