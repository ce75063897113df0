// SPDX-License-Identifier: BSD-3-Clause
/*
 * vcxl-hw-dma: the e2e-hw check that a client's DMA_MAP reaches the IOMMU when
 * the server runs on the VFIO backend. QEMU's cxl-type3 has no DMA engine, so
 * the mapping is observed where it has effects: the kernel pins the pages for
 * the IOMMU and charges them to the server process (type1: VmLck, iommufd:
 * VmPin, /proc/PID/status), and under QEMU's intel-iommu (caching mode) the
 * guest kernel's IOTLB invalidation for the IOVA shows in QEMU's trace, which
 * run-hw.sh checks from outside. Prints one "HW dma ..." line and exits 0 when
 * map, unmap, re-map and disconnect each moved the pinned total as they must.
 *
 *   vcxl-hw-dma SOCKET --server-pid PID [--iova ADDR] [--size SIZE]
 */
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>
#include <unistd.h>

#include "vcxl/client.h"
#include "server/server.h"
#include "vcxl/vfio_user.h"

#define RW	       (VFIO_USER_F_DMA_REGION_READ | VFIO_USER_F_DMA_REGION_WRITE)
#define SETTLE_POLL_MS 20
#define SETTLE_MAX_MS  3000

/* VmLck + VmPin of PID in KiB, or -1 */
static long pinned_kb(long pid)
{
	char path[64], line[256];
	long total = -1, v;

	snprintf(path, sizeof(path), "/proc/%ld/status", pid);
	FILE *f = fopen(path, "r");
	if (!f)
		return -1;
	while (fgets(line, sizeof(line), f))
		if (sscanf(line, "VmLck: %ld", &v) == 1 || sscanf(line, "VmPin: %ld", &v) == 1)
			total = (total < 0 ? 0 : total) + v;
	fclose(f);
	return total;
}

/* the pinned total once it equals want (the server works asynchronously) */
static long settle(long pid, long want)
{
	long kb = pinned_kb(pid);

	for (int t = 0; kb != want && t < SETTLE_MAX_MS; t += SETTLE_POLL_MS) {
		struct timespec ts = {0, SETTLE_POLL_MS * 1000000L};
		nanosleep(&ts, NULL);
		kb = pinned_kb(pid);
	}
	return kb;
}

int main(int argc, char **argv)
{
	static const struct option lo[] = {
	    {"server-pid", required_argument, NULL, 'p'},
	    {"iova", required_argument, NULL, 'i'},
	    {"size", required_argument, NULL, 's'},
	    {NULL, 0, NULL, 0},
	};
	uint64_t iova = 0x1000000000ull, size = 16ull << 20;
	long pid = 0;
	int ch;

	while ((ch = getopt_long(argc, argv, "", lo, NULL)) != -1) {
		switch (ch) {
		case 'p':
			pid = strtol(optarg, NULL, 0);
			break;
		case 'i':
			if (vcxl_parse_size(optarg, &iova))
				return 2;
			break;
		case 's':
			if (vcxl_parse_size(optarg, &size))
				return 2;
			break;
		default:
			return 2;
		}
	}
	if (optind >= argc || pid <= 0) {
		fprintf(stderr,
			"usage: vcxl-hw-dma SOCKET --server-pid PID [--iova A] [--size S]\n");
		return 2;
	}
	int mfd = memfd_create("vcxl-hw-dma", MFD_CLOEXEC);
	if (mfd < 0 || ftruncate(mfd, (off_t)size)) {
		printf("HW dma FAIL memfd: %s\n", strerror(errno));
		return 1;
	}
	void *mem = mmap(NULL, size, PROT_READ | PROT_WRITE, MAP_SHARED, mfd, 0);
	if (mem == MAP_FAILED) {
		printf("HW dma FAIL mmap: %s\n", strerror(errno));
		return 1;
	}
	memset(mem, 0xa5, size);

	struct vcxl_client *c;
	int rc = vcxl_client_connect(argv[optind], &c);
	if (rc) {
		printf("HW dma FAIL connect %s: %s\n", argv[optind], strerror(-rc));
		return 1;
	}
	long kb = (long)(size >> 10);
	long before = pinned_kb(pid);
	int map = vcxl_client_dma_map(c, iova, size, RW, mfd, 0, NULL);
	long mapped = settle(pid, before + kb);
	int unmap = vcxl_client_dma_unmap(c, iova, size, 0);
	long unmapped = settle(pid, before);
	int remap = vcxl_client_dma_map(c, iova, size, RW, mfd, 0, NULL);
	long remapped = settle(pid, before + kb);
	vcxl_client_close(c); /* the server drops the client's mappings */
	long disconnected = settle(pid, before);

	int ok = before >= 0 && !map && !unmap && !remap && mapped == before + kb &&
		 unmapped == before && remapped == before + kb && disconnected == before;
	printf("HW dma iova=0x%llx size=0x%llx map=%d unmap=%d remap=%d pinned_kb before=%ld "
	       "mapped=%ld unmapped=%ld remapped=%ld disconnected=%ld ok=%d\n",
	       (unsigned long long)iova, (unsigned long long)size, map, unmap, remap, before,
	       mapped, unmapped, remapped, disconnected, ok);
	munmap(mem, size);
	close(mfd);
	return ok ? 0 : 1;
}
