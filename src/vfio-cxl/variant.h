/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * vfio-cxl variants: a small plug-in per device family giving the facts the
 * generic core cannot discover (the role of a vfio-pci variant driver, e.g.
 * RFC v2's cxl-accel sample, without any of its hard-coded sizes in the core).
 */
#ifndef VCXL_VFIO_CXL_VARIANT_H
#define VCXL_VFIO_CXL_VARIANT_H

#include <stdbool.h>
#include <stdint.h>

struct vcxl_vdev;

#define VCXL_VARIANT_ANY	   0xffff
#define VCXL_VARIANT_MAX_HOST_REGS 4

/* A device register range the host owns: the guest's writes are dropped (its
 * reads pass), and the range's pages are never mmappable. */
struct vcxl_variant_reg {
	unsigned bar;
	uint64_t off, len;
};

struct vcxl_variant {
	const char *name;
	uint16_t vendor, device; /* match; VCXL_VARIANT_ANY matches every id */
	uint64_t mem_size;	 /* device memory expected; 0 = as the DVSEC ranges say */
	bool media_ready;	 /* the Type-3 media-ready check (memdev status) applies */
	bool noncached;		 /* the region must be mapped uncached by the client */
	bool no_cdat;		 /* don't read the device's CDAT; build it from facts */
	/* Called once the host core has brought the device up, before the region
	 * is set up (open) and after the region is gone (close). open may refuse
	 * with -errno; close must not fail. Either may be NULL. */
	int (*open)(struct vcxl_vdev *v, void *priv);
	void (*close)(struct vcxl_vdev *v, void *priv);
	/* Confine the device itself (its engines) to the exposed region: called
	 * once the region exists and after every reset of the device; a failure
	 * refuses the device (-errno). NULL: the device reaches device memory
	 * only through the host's decoders. */
	int (*confine)(struct vcxl_vdev *v, void *priv);
	/* host-owned registers (e.g. what confine programs) */
	unsigned nhost_regs;
	struct vcxl_variant_reg host_regs[VCXL_VARIANT_MAX_HOST_REGS];
	void *priv;
};

/* The built-in table: the accelerator model (0x8086:0x0d94), the Type-3 model
 * (0x8086:0x0d93, also QEMU's cxl-type3), then the generic default that
 * matches anything. Never returns NULL. */
const struct vcxl_variant *vcxl_variant_match(uint16_t vendor, uint16_t device);
/* As vcxl_variant_match, but a device the table does not know whose class
 * code (24 bits) says CXL memory device gets the generic Type-3 variant
 * (media-ready applies). Never returns NULL. */
const struct vcxl_variant *vcxl_variant_match_class(uint16_t vendor, uint16_t device,
						    uint32_t class_code);
/* The generic default (no media-ready, DVSEC size, cached). */
const struct vcxl_variant *vcxl_variant_generic(void);

#endif /* VCXL_VFIO_CXL_VARIANT_H */
