/* SPDX-License-Identifier: BSD-3-Clause */
/* Test helpers: guest-side access to a vdev's regions, as a VFIO user would. */
#ifndef VCXL_TESTS_VDEV_UTIL_H
#define VCXL_TESTS_VDEV_UTIL_H

#include <linux/vfio.h>
#include <stdint.h>

#include "vfio-cxl/vfio_cxl.h"

static inline uint64_t g_rd(struct vcxl_vdev *v, uint32_t region, uint64_t off, unsigned len,
			    int *rc)
{
	uint64_t x = 0;
	int r = vcxl_vdev_ops.region_read(v, region, off, &x, len);
	if (rc)
		*rc = r;
	return x;
}

static inline int g_wr(struct vcxl_vdev *v, uint32_t region, uint64_t off, unsigned len,
		       uint64_t val)
{
	return vcxl_vdev_ops.region_write(v, region, off, &val, len);
}

static inline uint32_t gcfg(struct vcxl_vdev *v, uint32_t off, unsigned len)
{
	return (uint32_t)g_rd(v, VFIO_PCI_CONFIG_REGION_INDEX, off, len, NULL);
}

static inline int gcfg_w(struct vcxl_vdev *v, uint32_t off, unsigned len, uint32_t val)
{
	return g_wr(v, VFIO_PCI_CONFIG_REGION_INDEX, off, len, val);
}

/* A guest's DVSEC search over the config region (what pci_find_dvsec_capability does). */
static inline uint32_t g_find_dvsec(struct vcxl_vdev *v, uint16_t vendor, uint16_t id)
{
	uint32_t off = 0x100;
	for (int n = 0; off && n < 64; n++) {
		uint32_t h = gcfg(v, off, 4);
		if (h == 0 || h == ~0u)
			return 0;
		if ((h & 0xffff) == 0x23 && (gcfg(v, off + 4, 4) & 0xffff) == vendor &&
		    gcfg(v, off + 8, 2) == id)
			return off;
		off = h >> 20;
	}
	return 0;
}

static inline uint32_t g_find_ext(struct vcxl_vdev *v, uint16_t capid)
{
	uint32_t off = 0x100;
	for (int n = 0; off && n < 64; n++) {
		uint32_t h = gcfg(v, off, 4);
		if (h == 0 || h == ~0u)
			return 0;
		if ((h & 0xffff) == capid)
			return off;
		off = h >> 20;
	}
	return 0;
}

#endif /* VCXL_TESTS_VDEV_UTIL_H */
