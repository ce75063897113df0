// SPDX-License-Identifier: BSD-3-Clause
/* vcxl memtest: a pattern through the CXL region's mmap and REGION_READ. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "cli.h"

static double mbps(uint64_t bytes, int64_t ns)
{
	return ns > 0 ? (double)bytes / (double)ns * 1e3 : 0.0;
}

static uint64_t pattern(uint64_t off)
{
	return (off * 0x9e3779b97f4a7c15ull) ^ 0xc3a5c85c97cb3127ull;
}

int cmd_memtest(struct ctx *x, uint64_t size)
{
	struct vcxl_client_region ri;
	uint64_t *p, *chunk;
	int64_t t0, t1, t2, t3;
	const size_t cs = 1u << 20;
	int rc;

	if (need_cxl(x))
		return 1;
	rc = vcxl_client_region_info(x->c, x->info.cxl.region_index, &ri);
	if (rc)
		return fail("REGION_INFO %u: %s", x->info.cxl.region_index, strerror(-rc));
	if (!ri.size || ri.fd < 0 || !(ri.flags & VFIO_REGION_INFO_FLAG_MMAP)) {
		if (ri.fd >= 0)
			close(ri.fd);
		return fail("CXL region %u is not mappable (size 0x%llx)", ri.index,
			    (unsigned long long)ri.size);
	}
	if (!size)
		size = ri.size < (64ull << 20) ? ri.size : (64ull << 20);
	size &= ~7ull;
	if (size > ri.size || !size) {
		close(ri.fd);
		return fail("--size 0x%llx: the CXL region is 0x%llx bytes",
			    (unsigned long long)size, (unsigned long long)ri.size);
	}
	p = mmap(NULL, size, PROT_READ | PROT_WRITE, MAP_SHARED, ri.fd, (off_t)ri.offset);
	close(ri.fd);
	if (p == MAP_FAILED)
		return fail("mmap of the CXL region: %s", strerror(errno));
	t0 = now_ns();
	for (uint64_t i = 0; i < size / 8; i++)
		p[i] = pattern(i * 8);
	t1 = now_ns();
	for (uint64_t i = 0; i < size / 8; i++) {
		if (p[i] != pattern(i * 8)) {
			munmap(p, size);
			return fail("mismatch through the mapping at 0x%llx",
				    (unsigned long long)(i * 8));
		}
	}
	t2 = now_ns();
	chunk = malloc(cs);
	if (!chunk) {
		munmap(p, size);
		return fail("out of memory");
	}
	for (uint64_t off = 0; off < size; off += cs) {
		size_t n = size - off < cs ? (size_t)(size - off) : cs;

		rc = vcxl_client_region_read(x->c, ri.index, off, chunk, n);
		if (rc) {
			free(chunk);
			munmap(p, size);
			return fail("REGION_READ at 0x%llx: %s", (unsigned long long)off,
				    strerror(-rc));
		}
		for (size_t i = 0; i < n / 8; i++) {
			if (chunk[i] != pattern(off + i * 8)) {
				free(chunk);
				munmap(p, size);
				return fail("mismatch through REGION_READ at 0x%llx",
					    (unsigned long long)(off + i * 8));
			}
		}
	}
	t3 = now_ns();
	free(chunk);
	munmap(p, size);
	printf("memtest: %llu MiB of region %u OK; mmap write %.0f MB/s, mmap verify %.0f MB/s, "
	       "REGION_READ verify %.0f MB/s\n",
	       (unsigned long long)(size >> 20), ri.index, mbps(size, t1 - t0), mbps(size, t2 - t1),
	       mbps(size, t3 - t2));
	return 0;
}
