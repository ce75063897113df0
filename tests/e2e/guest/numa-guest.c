// SPDX-License-Identifier: BSD-3-Clause
/*
 * numa-guest: allocate on one NUMA node (the CXL memory onlined as system RAM through
 * dax kmem), write and verify it, and prove where the pages are.
 *
 *   numa-guest NODE MIB
 *
 * mmap(MIB) anonymous, mbind(MPOL_BIND, NODE, MPOL_MF_STRICT), then every 4 KiB page is
 * written: qword 0 = TAG ^ page index, qword i = TAG + page index * 512 + i, and read
 * back. move_pages() (query mode) reports each page's node; all must be NODE.
 * The host finds the pages in the device's backing file by the same formula (any physical
 * placement), so the data is proven to be in device memory.
 *
 * Output: "NUMA <key>=<value> ..." lines and "STEP <name>: ok|FAIL <detail>"; a final
 * "RESULT: <n> ok, <m> failed". Static build (no libnuma: raw syscalls):
 *   gcc -static -O2 -Wall -Wextra -Werror -o numa-guest numa-guest.c
 */
#include <errno.h>
#include <stdarg.h>
#include <inttypes.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <unistd.h>

/* <linux/mempolicy.h> values (not in the static libc's headers everywhere) */
#define MPOL_BIND_MODE	 2
#define MPOL_MF_STRICT_F (1 << 0)
#define MPOL_MF_MOVE_F	 (1 << 1)
#define MAX_NODES	 64
#define PAGE		 4096u
#define QW_PER_PAGE	 (PAGE / 8)
#define TAG		 0x4e554d41434d454dull /* "MEMCAMUN" */
#define QUERY_BATCH	 1024

static unsigned n_ok, n_fail;

static void step(const char *name, int good, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

static void step(const char *name, int good, const char *fmt, ...)
{
	va_list ap;

	printf("STEP %s: %s ", name, good ? "ok" : "FAIL");
	va_start(ap, fmt);
	vprintf(fmt, ap);
	va_end(ap);
	printf("\n");
	fflush(stdout);
	if (good)
		n_ok++;
	else
		n_fail++;
}

int main(int argc, char **argv)
{
	unsigned long node, mask[MAX_NODES / (8 * sizeof(unsigned long))] = {0};
	uint64_t len, pages, bad = 0, off_node = 0;
	volatile uint64_t *p;

	if (argc != 3) {
		fprintf(stderr, "usage: %s NODE MIB\n", argv[0]);
		return 2;
	}
	node = strtoul(argv[1], NULL, 0);
	len = strtoull(argv[2], NULL, 0) << 20;
	if (node >= MAX_NODES || !len) {
		fprintf(stderr, "numa-guest: node < %d, MIB > 0\n", MAX_NODES);
		return 2;
	}
	pages = len / PAGE;
	p = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (p == MAP_FAILED) {
		step("mmap", 0, "%" PRIu64 " MiB: %s", len >> 20, strerror(errno));
		goto out;
	}
	mask[node / (8 * sizeof(unsigned long))] |= 1ul << (node % (8 * sizeof(unsigned long)));
	if (syscall(SYS_mbind, (void *)p, len, MPOL_BIND_MODE, mask, MAX_NODES + 1,
		    MPOL_MF_STRICT_F | MPOL_MF_MOVE_F)) {
		step("mbind", 0, "MPOL_BIND node %lu: %s", node, strerror(errno));
		goto out;
	}
	step("mbind", 1, "%" PRIu64 " MiB bound to node %lu (MPOL_BIND)", len >> 20, node);
	for (uint64_t pg = 0; pg < pages; pg++) {
		volatile uint64_t *q = p + pg * QW_PER_PAGE;

		q[0] = TAG ^ pg;
		for (unsigned i = 1; i < QW_PER_PAGE; i++)
			q[i] = TAG + pg * QW_PER_PAGE + i;
	}
	for (uint64_t pg = 0; pg < pages; pg++) {
		volatile uint64_t *q = p + pg * QW_PER_PAGE;
		int ok = q[0] == (TAG ^ pg);

		for (unsigned i = 1; ok && i < QW_PER_PAGE; i++)
			ok = q[i] == TAG + pg * QW_PER_PAGE + i;
		bad += !ok;
	}
	step("write-verify", bad == 0, "%" PRIu64 " pages written and read back, %" PRIu64 " bad",
	     pages, bad);
	for (uint64_t pg = 0; pg < pages; pg += QUERY_BATCH) {
		void *addr[QUERY_BATCH];
		int status[QUERY_BATCH];
		unsigned n = pages - pg < QUERY_BATCH ? (unsigned)(pages - pg) : QUERY_BATCH;

		for (unsigned i = 0; i < n; i++)
			addr[i] = (void *)(p + (pg + i) * QW_PER_PAGE);
		if (syscall(SYS_move_pages, 0, n, addr, NULL, status, 0)) {
			step("placement", 0, "move_pages: %s", strerror(errno));
			goto out;
		}
		for (unsigned i = 0; i < n; i++)
			off_node += status[i] != (int)node;
	}
	step("placement", off_node == 0,
	     "%" PRIu64 " of %" PRIu64 " pages on node %lu (move_pages)", pages - off_node, pages,
	     node);
	printf("NUMA pages=%" PRIu64 " tag=0x%016llx\n", pages, (unsigned long long)TAG);
out:
	printf("RESULT: %u ok, %u failed\n", n_ok, n_fail);
	return n_fail ? 1 : 0;
}
