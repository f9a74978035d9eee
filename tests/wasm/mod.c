/* SPDX-License-Identifier: MIT */
/* The WASI test module of tests/wasm (built by the suite with clang-14
 * --target=wasm32-wasi): one command per test.
 *   read FILE        print FILE, exit 0; exit 3 with the error when it cannot
 *   write FILE TEXT  write TEXT to FILE, exit 0; exit 3 with the error
 *   ls DIR           the entries of DIR
 *   env NAME         the value of NAME, or "(unset)"
 *   echo ARGS...     the arguments, then stdin to stdout, "to-err" on stderr
 *   exit N           exit N
 *   grow             allocate 16 MiB at a time until malloc fails (exit 1)
 *   grow-trap        the same, then trap when malloc fails
 *   loop             spin forever
 *   trap             execute `unreachable`
 *   recurse          recurse until the stack runs out
 *   spin N           a compute-bound loop of N million steps (bench/wasm.sh) */
#include <dirent.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static char *volatile keep;

static int grow(int do_trap)
{
	size_t total = 0;
	for (;;) {
		char *p = malloc(16 << 20);
		if (!p) {
			printf("malloc failed after %zu MiB\n", total >> 20);
			fflush(stdout);
			if (do_trap)
				__builtin_trap();
			return 1;
		}
		memset(p, 1, 16 << 20);
		keep = p;
		total += 16 << 20;
	}
}

static volatile int depth_sink;
static int recurse(int n)
{
	volatile char pad[256];
	pad[0] = (char)n;
	depth_sink = pad[0];
	return recurse(n + 1) + pad[0];
}

int main(int argc, char **argv)
{
	const char *cmd = argc > 1 ? argv[1] : "";
	if (!strcmp(cmd, "read") && argc > 2) {
		FILE *f = fopen(argv[2], "r");
		if (!f) {
			printf("cannot read %s: %s\n", argv[2], strerror(errno));
			return 3;
		}
		char buf[4096];
		size_t n;
		while ((n = fread(buf, 1, sizeof(buf), f)) > 0)
			fwrite(buf, 1, n, stdout);
		fclose(f);
		return 0;
	}
	if (!strcmp(cmd, "write") && argc > 3) {
		FILE *f = fopen(argv[2], "w");
		if (!f || fputs(argv[3], f) < 0 || fclose(f) != 0) {
			printf("cannot write %s: %s\n", argv[2], strerror(errno));
			return 3;
		}
		return 0;
	}
	if (!strcmp(cmd, "ls") && argc > 2) {
		DIR *d = opendir(argv[2]);
		if (!d) {
			printf("cannot list %s: %s\n", argv[2], strerror(errno));
			return 3;
		}
		struct dirent *e;
		while ((e = readdir(d)))
			if (strcmp(e->d_name, ".") && strcmp(e->d_name, ".."))
				printf("%s\n", e->d_name);
		closedir(d);
		return 0;
	}
	if (!strcmp(cmd, "env") && argc > 2) {
		const char *v = getenv(argv[2]);
		printf("%s\n", v ? v : "(unset)");
		return 0;
	}
	if (!strcmp(cmd, "echo")) {
		for (int i = 2; i < argc; i++)
			printf("%s%s", argv[i], i + 1 < argc ? " " : "\n");
		int c;
		while ((c = getchar()) != EOF)
			putchar(c);
		fprintf(stderr, "to-err\n");
		return 0;
	}
	if (!strcmp(cmd, "exit") && argc > 2)
		return atoi(argv[2]);
	if (!strcmp(cmd, "grow"))
		return grow(0);
	if (!strcmp(cmd, "grow-trap"))
		return grow(1);
	if (!strcmp(cmd, "loop"))
		for (volatile int i = 0;; i++)
			;
	if (!strcmp(cmd, "trap"))
		__builtin_trap();
	if (!strcmp(cmd, "recurse"))
		return recurse(0);
	if (!strcmp(cmd, "spin") && argc > 2) {
		/* data-dependent loads and stores in 1 MiB: nothing to fold away */
		static unsigned buf[1 << 18];
		unsigned long long n = strtoull(argv[2], NULL, 10) * 1000000ULL;
		unsigned x = 2463534242u;
		for (unsigned long long i = 0; i < n; i++) {
			x ^= x << 13, x ^= x >> 17, x ^= x << 5;
			x += buf[x & ((1 << 18) - 1)];
			buf[(x >> 7) & ((1 << 18) - 1)] ^= x;
		}
		printf("%u\n", x);
		return 0;
	}
	fprintf(stderr,
		"usage: mod read|write|ls|env|echo|exit|grow|grow-trap|loop|trap|recurse|spin\n");
	return 2;
}
