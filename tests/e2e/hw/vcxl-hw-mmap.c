// SPDX-License-Identifier: BSD-3-Clause
/*
 * vcxl-hw-mmap: the e2e-hw check of what a VMM mmaps. For every BAR the
 * server says is mappable, map each area from the fd it passed (the VFIO
 * device fd, at the region's offset) and compare the first words with the
 * same words read through REGION_READ: the mapping is the device itself. And
 * the component block (the CXL device-info capability says where) must lie
 * in no mappable area, since the server emulates it, nor the memory device's
 * mailbox registers, which it filters. One "HW mmap ..." line per area, then
 * "HW mmap-summary areas=N mismatches=M comp_exposed=K mbox_exposed=L"
 * (QEMU's cxl-type3 has no area left: its one mappable page, BAR2, holds the
 * mailbox).
 * That needs a server started with --trust-client: by default it hands out
 * no fd at all for a real device (the VFIO device fd reaches every BAR whole
 * and the device's ioctls; /dev/mem every physical range): --expect-none
 * checks that, "HW mmap-none fds=N mmap_flags=M" (0 and 0 to pass).
 *
 *   vcxl-hw-mmap SOCKET [--expect-none]
 */
#include <errno.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "vcxl/client.h"

#define CMP_WORDS 16 /* device capability headers: stable, unlike status words */
#define NUM_BARS  6

int main(int argc, char **argv)
{
	struct vcxl_client *c;
	struct vcxl_client_info info;
	unsigned areas = 0, mismatches = 0, exposed = 0, mbox_exposed = 0;
	struct vcxl_client_mbox mb;
	char err[200];
	bool has_mb;

	bool none = argc == 3 && !strcmp(argv[2], "--expect-none");

	if (argc != 2 && !none) {
		fprintf(stderr, "usage: vcxl-hw-mmap SOCKET [--expect-none]\n");
		return 2;
	}
	int rc = vcxl_client_connect(argv[1], &c);
	if (rc || (rc = vcxl_client_get_info(c, &info)) || !info.has_cxl) {
		printf("HW mmap FAIL %s: %s\n", argv[1], rc ? strerror(-rc) : "no CXL capability");
		return 1;
	}
	has_mb = vcxl_client_mbox_find(c, &mb, err, sizeof(err)) == 0;
	if (none) {
		unsigned fds = 0, flags = 0;
		for (uint32_t r = 0; r < info.num_regions; r++) {
			struct vcxl_client_region ri;
			if (vcxl_client_region_info(c, r, &ri))
				continue;
			fds += ri.fd >= 0;
			flags += (ri.flags & VFIO_REGION_INFO_FLAG_MMAP) != 0;
			if (ri.fd >= 0)
				close(ri.fd);
		}
		printf("HW mmap-none fds=%u mmap_flags=%u\n", fds, flags);
		vcxl_client_close(c);
		return fds || flags;
	}
	for (uint32_t bar = 0; bar < NUM_BARS; bar++) {
		struct vcxl_client_region ri;
		if (vcxl_client_region_info(c, bar, &ri) || ri.fd < 0)
			continue;
		unsigned n = ri.nr_sparse ? ri.nr_sparse : 1;
		for (unsigned i = 0; i < n; i++) {
			uint64_t off = ri.nr_sparse ? ri.sparse[i].offset : 0;
			uint64_t size = ri.nr_sparse ? ri.sparse[i].size : ri.size;
			uint64_t ce = info.cxl.comp_offset + info.cxl.comp_size;
			bool comp = bar == info.cxl.hdm_bar && off < ce &&
				    info.cxl.comp_offset < off + size;
			exposed += comp;
			mbox_exposed += has_mb && bar == mb.bar && off < mb.mailbox + 0x20 &&
					mb.mailbox < off + size;
			void *p = mmap(NULL, size, PROT_READ, MAP_SHARED, ri.fd,
				       (off_t)(ri.offset + off));
			if (p == MAP_FAILED) {
				printf("HW mmap bar=%u area=0x%llx+0x%llx FAIL mmap: %s\n", bar,
				       (unsigned long long)off, (unsigned long long)size,
				       strerror(errno));
				mismatches++;
				continue;
			}
			unsigned words = size / 4 < CMP_WORDS ? (unsigned)(size / 4) : CMP_WORDS,
				 bad = 0;
			unsigned nonzero = 0;
			for (unsigned w = 0; w < words; w++) {
				uint32_t via_msg = ~0u, via_map = ((volatile uint32_t *)p)[w];
				if (vcxl_client_read32(c, bar, off + 4 * w, &via_msg) ||
				    via_msg != via_map)
					bad++;
				nonzero += via_map != 0;
			}
			if (!nonzero)
				bad++; /* all zero proves nothing about where the mapping goes */
			munmap(p, size);
			areas++;
			mismatches += bad != 0;
			printf("HW mmap bar=%u area=0x%llx+0x%llx words=%u nonzero=%u differ=%u "
			       "component_block=%d\n",
			       bar, (unsigned long long)off, (unsigned long long)size, words,
			       nonzero, bad, comp);
		}
		close(ri.fd);
	}
	printf("HW mmap-summary areas=%u mismatches=%u comp_exposed=%u mbox_exposed=%u\n", areas,
	       mismatches, exposed, mbox_exposed);
	vcxl_client_close(c);
	return !mismatches && !exposed && !mbox_exposed ? 0 : 1;
}
