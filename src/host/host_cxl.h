/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The host CXL core: what the kernel's CXL core does for the host, in
 * userspace and through the backend only (backend.h), so the same code drives
 * the built-in model and real hardware.
 *
 *  - the host address space: root decoder windows (CFMWS-like) and an HPA
 *    allocator (first fit, 256 MiB granularity, coalescing free list);
 *  - device bring-up: CXL Device DVSEC, Register Locator, component block,
 *    CM capability array (HDM, RAS, Link), Memory_Info_Valid/Memory_Active,
 *    the Type-3-only media-ready check, CDAT read over the device's DOE;
 *  - DPA allocation in decoder order (skip respected);
 *  - regions: create (HPA + DPA + program and commit the physical HDM
 *    decoder in Linux's order), destroy, or attach to a decoder firmware
 *    already committed.
 *
 * Nothing here knows about guests: the vfio-cxl core (vfio_cxl.h) builds the
 * guest's virtual view on top. Not thread safe: callers serialise.
 */
#ifndef VCXL_HOST_CXL_H
#define VCXL_HOST_CXL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "vfio-cxl/backend.h"
#include "cxl/cxl_regs.h"

/* ---- Host address space ----------------------------------------------- */

/* Root decoder window restrictions (CXL r3.1 9.18.1.3 CFMWS, simplified) */
#define VCXL_WIN_RAM   (1u << 0) /* volatile memory may be mapped */
#define VCXL_WIN_PMEM  (1u << 1) /* persistent memory may be mapped */
#define VCXL_WIN_TYPE2 (1u << 2) /* device-coherent (HDM-D/HDM-DB) targets allowed */
#define VCXL_WIN_TYPE3 (1u << 3) /* host-only coherent (HDM-H) targets allowed */

#define VCXL_HPA_GRANULE      CXL_HDM_GRANULE /* 256 MiB: size and alignment unit */
#define VCXL_HOST_MAX_WINDOWS 8
/* The window a private host gets when nobody configured one (64 GiB at 64 GiB). */
#define VCXL_HOST_DEFAULT_WIN_BASE  0x1000000000ull
#define VCXL_HOST_DEFAULT_WIN_SIZE  0x1000000000ull
#define VCXL_HOST_DEFAULT_WIN_FLAGS (VCXL_WIN_RAM | VCXL_WIN_TYPE2 | VCXL_WIN_TYPE3)

struct vcxl_hpa_extent {
	uint64_t base, size;
};

struct vcxl_host_window {
	uint64_t base, size;
	uint32_t flags;
	unsigned nfree, cap; /* free extents, sorted by base, never adjacent */
	struct vcxl_hpa_extent *free;
};

/* Time source: tests install a virtual clock so waits don't sleep. sleep_ns
 * is also the place to advance a simulated device (poll function). */
struct vcxl_host_clock {
	uint64_t (*now_ns)(void *opaque);
	void (*sleep_ns)(void *opaque, uint64_t ns);
	void *opaque;
};

struct vcxl_host {
	unsigned nwin;
	struct vcxl_host_window win[VCXL_HOST_MAX_WINDOWS];
	struct vcxl_host_clock clock;
};

/* A host with no windows and the real monotonic clock. */
void vcxl_host_init(struct vcxl_host *h);
void vcxl_host_fini(struct vcxl_host *h);
void vcxl_host_set_clock(struct vcxl_host *h, const struct vcxl_host_clock *clk);
uint64_t vcxl_host_now_ns(struct vcxl_host *h);
void vcxl_host_sleep_ns(struct vcxl_host *h, uint64_t ns);

/* Add a window: base and size 256 MiB granular, non-zero, not overlapping
 * another window. 0, -EINVAL, -EEXIST (overlap), -ENOSPC (too many), -ENOMEM. */
int vcxl_host_add_window(struct vcxl_host *h, uint64_t base, uint64_t size, uint32_t flags);
/* First fit over the windows whose flags include all of `flags`, in window
 * order, lowest address first. size: non-zero multiple of 256 MiB (-EINVAL).
 * -ENOSPC when no window has a free extent that large. */
int vcxl_host_hpa_alloc(struct vcxl_host *h, uint64_t size, uint32_t flags, uint64_t *base);
/* Claim a fixed range (firmware-committed decoder). 0 when reserved inside a
 * window, -ENOENT when the range lies in no window at all (the caller may
 * accept it as a fixed range outside the windows), -ERANGE when it straddles
 * a window edge, -EBUSY when part of it is already allocated, -EINVAL bad
 * size/alignment. */
int vcxl_host_hpa_reserve(struct vcxl_host *h, uint64_t base, uint64_t size);
/* Return a range; coalesces with its free neighbours. -EINVAL when the range
 * is not in a window or (partly) free already (double free). */
int vcxl_host_hpa_free(struct vcxl_host *h, uint64_t base, uint64_t size);
/* Free bytes over windows matching flags (0 = all), and the largest extent. */
uint64_t vcxl_host_hpa_avail(const struct vcxl_host *h, uint32_t flags, uint64_t *largest);

/* ---- Device bring-up ---------------------------------------------------- */

/* What the variant (vfio-cxl plug-in) knows about the device. */
struct vcxl_dev_facts {
	bool media_ready;  /* Type-3 style media ready check (memdev status) applies */
	uint64_t mem_size; /* expected device memory; 0 = take the DVSEC ranges */
	bool no_cdat;	   /* don't read CDAT over DOE (build it from facts) */
	/* the device decodes host-only coherent memory (HDM-H, a Type-3); also
	 * implied by the CXL memory device class code (CXL_PCI_CLASS_MEMDEV) */
	bool hostonly;
};

struct vcxl_dpa_slot {
	uint64_t skip, dpa, size; /* DPA [dpa, dpa + size) after skipping `skip` */
	bool used;
	bool firmware;
};

struct vcxl_cxl_dev {
	struct vcxl_backend *be;
	struct vcxl_host *host;
	struct vcxl_dev_facts facts;
	uint16_t vendor, device;
	uint32_t class_code; /* PCI class code (base, sub, prog-if), read at probe */
	/* HDM-H (Type-3): decoders are programmed with Target Range Type 1 and
	 * regions come from VCXL_WIN_TYPE3 windows; else HDM-D/DB from TYPE2 ones */
	bool hostonly;

	/* CXL Device DVSEC (config offsets) */
	uint32_t dvsec, dvsec_len;
	uint8_t dvsec_rev;
	uint16_t cap, cap2, cap3, ctrl_at_probe;
	unsigned ranges; /* HDM_Count */
	uint64_t range_size[CXL_DVSEC_RANGE_MAX];
	uint32_t range_flags[CXL_DVSEC_RANGE_MAX]; /* Size Low bits 15:0 */
	uint32_t regloc, regloc_len;

	/* Component block: BAR + offset, and what the CM capability array holds
	 * (offsets from the start of the component block; 0 = absent) */
	unsigned comp_bar;
	uint64_t comp_off, comp_bar_size;
	uint32_t hdm_off, hdm_size, hdm_cap;
	unsigned hdm_count;
	uint32_t ras_off, link_off;

	/* Device (memdev) register block, if the Register Locator lists one */
	bool has_devregs;
	unsigned devregs_bar;
	uint64_t devregs_off;

	/* DOE / CDAT (read once at bring-up; NULL when unavailable) */
	uint32_t doe_off; /* 0 = none */
	uint8_t *cdat;
	size_t cdat_len;

	/* DPA space: allocated in decoder order */
	uint64_t dpa_capacity;
	struct vcxl_dpa_slot dpa[CXL_HDM_MAX_DECODERS_DEVICE];
	unsigned fw_committed; /* decoders committed by firmware at probe */
	unsigned regions;      /* regions of ours that exist */
	bool fw_attached;      /* a region is attached to the firmware decoder */

	/* enables we set (undone when the last region goes) */
	bool set_hdm_enable, set_mem_enable;
	char note[160]; /* last non-fatal remark (e.g. why CDAT was not read) */
};

/* Bring the device behind be up. On error nothing is changed on the device
 * and err gets a one-line reason. */
int vcxl_cxl_probe(struct vcxl_host *h, struct vcxl_backend *be, const struct vcxl_dev_facts *f,
		   struct vcxl_cxl_dev **out, char *err, size_t errlen);
void vcxl_cxl_remove(struct vcxl_cxl_dev *d);

/* CXL r3.1 8.1.3.8.2: wait for Memory_Info_Valid, then Memory_Active, with
 * the timeout the device states (Memory_Active_Timeout n: 1 << 2n s). */
int vcxl_cxl_await_range_active(struct vcxl_cxl_dev *d, char *err, size_t errlen);
/* CXL r3.1 8.2.8.5.1.1: Type-3 media ready (memdev status). -EIO if not
 * ready, -ENODEV if there are no device registers to ask. */
int vcxl_cxl_media_ready(struct vcxl_cxl_dev *d, char *err, size_t errlen);

/* Component register access (offset from the component block), 4 bytes. */
int vcxl_cxl_comp_read32(struct vcxl_cxl_dev *d, uint32_t off, uint32_t *v);
int vcxl_cxl_comp_write32(struct vcxl_cxl_dev *d, uint32_t off, uint32_t v);

/* Physical decoder n as the device shows it now. */
struct vcxl_phys_decoder {
	uint64_t base, size, skip;
	uint32_t ctrl;
	bool committed, error, locked;
};
int vcxl_cxl_read_decoder(struct vcxl_cxl_dev *d, unsigned n, struct vcxl_phys_decoder *out);

/* Extended capability walk over backend config reads (PCIe r6 7.6.3):
 * calls fn for every capability, stops at the first non-zero return. Loops
 * and out-of-range pointers end the walk with -ELOOP / -EINVAL. */
typedef int (*vcxl_ext_cap_fn)(void *opaque, uint32_t off, uint32_t hdr);
int vcxl_ext_cap_walk(struct vcxl_backend *be, vcxl_ext_cap_fn fn, void *opaque);
/* Find a DVSEC (vendor, id) by walking: 0 + offset/length, or -ENOENT. */
int vcxl_host_find_dvsec(struct vcxl_backend *be, uint16_t vendor, uint16_t id, uint32_t *off,
			 uint32_t *len);
/* Find a standard capability (PCI 3.0 6.7), 0 + offset or -ENOENT. */
int vcxl_host_find_cap(struct vcxl_backend *be, uint8_t id, uint32_t *off);

/* ---- DPA allocation ------------------------------------------------------ */

/* Next decoder in order gets DPA [end of previous + skip, + size).
 * -ENOSPC if no decoder or not enough capacity, -EINVAL bad size. */
int vcxl_dpa_alloc(struct vcxl_cxl_dev *d, uint64_t size, uint64_t skip, unsigned *decoder,
		   uint64_t *dpa);
/* Only the last allocated decoder can be freed (-EBUSY otherwise). */
int vcxl_dpa_free(struct vcxl_cxl_dev *d, unsigned decoder);
uint64_t vcxl_dpa_avail(const struct vcxl_cxl_dev *d);

/* ---- Regions ------------------------------------------------------------- */

struct vcxl_region {
	struct vcxl_cxl_dev *dev;
	unsigned decoder;
	uint64_t hpa, size, dpa, skip;
	bool firmware;	/* attached to a firmware-committed decoder, not programmed */
	bool in_window; /* HPA reserved in a host window (else a fixed range outside) */
	int fd;		/* memory of the region: mmap(fd, fd_offset) (owned by the backend) */
	uint64_t fd_offset;
};

/* CXL r3.1 8.2.4.20.12 + Linux's order: allocate HPA in a TYPE2-capable
 * window (TYPE3 for a hostonly device) and DPA, enable HDM decoding and
 * Mem_Enable, program and commit the next physical decoder (Target Range Type
 * as the device's coherence), map it. size 0 = all free DPA. On error nothing is
 * left behind (device, HPA, DPA). */
int vcxl_region_create(struct vcxl_cxl_dev *d, uint64_t size, struct vcxl_region **out, char *err,
		       size_t errlen);
/* Attach to the region firmware committed in decoder 0 (no reprogramming).
 * -ENOENT if there is none. */
int vcxl_region_attach_firmware(struct vcxl_cxl_dev *d, struct vcxl_region **out, char *err,
				size_t errlen);
/* Created: decommit, clear base/size/skip, free DPA and HPA. Attached: only
 * release the reservation; the firmware decoder stays committed. */
void vcxl_region_destroy(struct vcxl_region *r);
/* 0 if the physical decoder still decodes the region as recorded, else -EIO. */
int vcxl_region_verify(const struct vcxl_region *r);
/* The host-owned registers behind a region as the device holds them, read
 * through the backend now (nothing cached): what no guest may change. */
struct vcxl_host_regs {
	struct vcxl_phys_decoder dec;	 /* the region's physical HDM decoder */
	uint32_t hdm_global_ctrl;	 /* CXL r3.1 8.2.4.20.2 */
	uint32_t dvsec_ctrl, dvsec_lock; /* CXL r3.1 8.1.3.2, 8.1.3.6 */
	/* CXL r3.1 8.1.3.8: Range n Size High, Size Low, Base High, Base Low */
	uint32_t range[CXL_DVSEC_RANGE_MAX][4];
};
int vcxl_region_read_host_regs(const struct vcxl_region *r, struct vcxl_host_regs *out);
/* A new tenant: the region's memory in a fresh, zeroed object from the
 * backend (backend.h hpa_renew); r->fd and r->fd_offset name it. -EOPNOTSUPP
 * when the backend cannot (the caller zeroes the memory in place); on any
 * error r keeps its old fd. */
int vcxl_region_renew(struct vcxl_region *r);
/* Re-program a created region whose decoder was lost (e.g. a reset that
 * cleared it). -EPERM for firmware regions. */
int vcxl_region_restore(struct vcxl_region *r, char *err, size_t errlen);

#endif /* VCXL_HOST_CXL_H */
