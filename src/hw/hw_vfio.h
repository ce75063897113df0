/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Real hardware: a CXL device bound to vfio-pci on a stock Linux kernel (no
 * Type-2 support in the kernel's CXL core).
 *
 *  - the VFIO backend (backend.h) over the group/container interface or the
 *    iommufd/cdev interface: standard config space through the VFIO config
 *    region, the CXL extended capabilities (which vfio-pci hides) through the
 *    raw sysfs config file, BARs through VFIO regions, IRQs to eventfds, DMA
 *    through the IOMMU, function reset and CXL reset, the HPA range through
 *    /dev/mem (or a device-DAX in attach mode);
 *  - the ACPI CEDT parser (CHBS, CFMWS), bounds checked, on a buffer;
 *  - the host address window: the device's host bridge (sysfs), a 1-way
 *    CFMWS window targeting it, the host bridge's HDM decoder programmed
 *    through its component registers (CHBS base via /dev/mem).
 *
 * Topologies this cannot drive are refused with a one-line reason.
 * Not thread safe: callers serialise (the server's event loop does).
 */
#ifndef VCXL_HW_VFIO_H
#define VCXL_HW_VFIO_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "vfio-cxl/backend.h"

struct vcxl_host;

/* ---- ACPI CEDT (CXL r3.1 9.18) ------------------------------------------ */

#define VCXL_CEDT_MAX_CHBS    16
#define VCXL_CEDT_MAX_CFMWS   16
#define VCXL_CEDT_MAX_TARGETS 16

/* CFMWS Window Restrictions (CXL r3.1 Table 9-22) */
#define VCXL_CFMWS_R_TYPE2    (1u << 0) /* device coherent (HDM-D/HDM-DB) */
#define VCXL_CFMWS_R_TYPE3    (1u << 1) /* host-only coherent (HDM-H) */
#define VCXL_CFMWS_R_VOLATILE (1u << 2)
#define VCXL_CFMWS_R_PMEM     (1u << 3)
#define VCXL_CFMWS_R_FIXED    (1u << 4) /* fixed device configuration */

struct vcxl_cedt_chbs {
	uint32_t uid;	       /* host bridge _UID */
	uint32_t cxl_version;  /* 0 = RCH (CXL 1.1), 1 = CXL 2.0+ host bridge */
	uint64_t base, length; /* component register block */
};

struct vcxl_cedt_cfmws {
	uint64_t base, size;
	unsigned ways;	       /* decoded from ENIW; 0 for a reserved encoding */
	uint8_t eniw;	       /* raw encoded interleave ways */
	uint8_t arithmetic;    /* 0 modulo, 1 XOR */
	uint32_t hbig;	       /* raw host bridge interleave granularity encoding */
	uint16_t restrictions; /* VCXL_CFMWS_R_* */
	uint16_t qtg_id;
	unsigned ntargets;
	uint32_t target[VCXL_CEDT_MAX_TARGETS]; /* host bridge UIDs */
};

struct vcxl_cedt {
	unsigned nchbs, ncfmws;
	unsigned nother; /* structures of other types, skipped */
	struct vcxl_cedt_chbs chbs[VCXL_CEDT_MAX_CHBS];
	struct vcxl_cedt_cfmws cfmws[VCXL_CEDT_MAX_CFMWS];
};

/* Parse a whole CEDT (ACPI header included) from buf. Every length is
 * checked against the buffer and the table (the header's length may be less
 * than len: the bytes after it are ignored); the checksum must be right;
 * a CFMWS window must be non-empty, not wrap, and have base and size
 * multiples of 256 MiB (CXL r3.1 9.18.1.3); overlapping windows and
 * duplicate host bridge UIDs are refused. 0, or -EINVAL / -ENOSPC (too many
 * structures) with a one-line reason and *out all zero. */
int vcxl_cedt_parse(const void *buf, size_t len, struct vcxl_cedt *out, char *err, size_t errlen);
/* Read and parse a CEDT file (default /sys/firmware/acpi/tables/CEDT). */
int vcxl_cedt_read(const char *path, struct vcxl_cedt *out, char *err, size_t errlen);
const struct vcxl_cedt_chbs *vcxl_cedt_find_chbs(const struct vcxl_cedt *c, uint32_t uid);

/* ---- Topology (sysfs) --------------------------------------------------- */

struct vcxl_hw_topo {
	char bdf[16];	  /* the endpoint */
	char rp_bdf[16];  /* its root port */
	char hb_name[32]; /* "pci0000:0c" */
	uint32_t hb_uid;  /* the host bridge's ACPI _UID */
	uint8_t rp_port;  /* root port's Port Number (PCIe Link Capabilities) */
};

/* From sysfs_root ("/sys" when NULL): endpoint -> root port -> host bridge
 * and its ACPI companion's _UID. Refuses (-EOPNOTSUPP, one line why) a
 * switch between root port and device and a second root port in use under
 * the host bridge. */
int vcxl_hw_topo_find(const char *sysfs_root, const char *bdf, struct vcxl_hw_topo *t, char *err,
		      size_t errlen);

/* Is any part of [base, base + size) claimed in iomem (a /proc/iomem text)?
 * Lines are "<spaces>start-end : name" with start <= end in hex digits;
 * other lines are skipped. Resources that strictly contain the range
 * (bridge windows) don't count. 1 + the first claimant's name (truncated to
 * wholen), 0 if free, -EINVAL for a NULL text or an empty or wrapping range. */
int vcxl_hw_iomem_claimed(const char *iomem, uint64_t base, uint64_t size, char *who,
			  size_t wholen);

/* Pick the first CFMWS window that targets host bridge uid alone (1 way)
 * and allows what the device needs (need: VCXL_CFMWS_R_* bits). Refuses
 * interleaved windows with a reason when those are all there is. */
int vcxl_hw_pick_window(const struct vcxl_cedt *c, uint32_t uid, uint16_t need,
			const struct vcxl_cedt_cfmws **out, char *err, size_t errlen);

/* ---- Host bridge HDM decoder (CXL r3.1 8.2.4.20) ------------------------- */

/* Register access to a host bridge's component block (offsets from its start). */
struct vcxl_hw_regs {
	int (*read32)(void *opaque, uint32_t off, uint32_t *v);
	int (*write32)(void *opaque, uint32_t off, uint32_t v);
	void *opaque;
};

struct vcxl_hw_hb {
	struct vcxl_hw_regs regs;
	uint32_t hdm_off; /* HDM capability from the block start; 0 = none (pass-through) */
	unsigned hdm_count;
	int decoder;	 /* decoder we committed, -1 none */
	bool set_enable; /* we turned HDM Decoder Enable on */
	/* /dev/mem mapping (vcxl_hw_hb_map) */
	void *map;
	size_t map_len;
};

/* Find the HDM decoder capability (none is fine: pass-through host bridge). */
int vcxl_hw_hb_init(struct vcxl_hw_hb *hb, const struct vcxl_hw_regs *regs, char *err,
		    size_t errlen);
/* Map the CHBS component block through devmem ("/dev/mem" when NULL) and init. */
int vcxl_hw_hb_map(struct vcxl_hw_hb *hb, const char *devmem, uint64_t base, uint64_t len,
		   char *err, size_t errlen);
/* Program and commit the first free decoder: [base, base + size), 1 way,
 * target list entry 0 = port. Enables HDM decoding if needed. No decoders:
 * 0 (nothing to do). */
int vcxl_hw_hb_commit(struct vcxl_hw_hb *hb, uint64_t base, uint64_t size, uint8_t port,
		      bool hostonly, char *err, size_t errlen);
/* Undo vcxl_hw_hb_commit (decoder cleared, enable restored). */
void vcxl_hw_hb_decommit(struct vcxl_hw_hb *hb);
void vcxl_hw_hb_unmap(struct vcxl_hw_hb *hb);

/* ---- The VFIO backend --------------------------------------------------- */

enum vcxl_hw_iommu {
	VCXL_HW_IOMMU_AUTO = 0, /* iommufd/cdev if the kernel has it, else group/container */
	VCXL_HW_IOMMU_GROUP,	/* /dev/vfio/N + container (VFIO_TYPE1v2/TYPE1) */
	VCXL_HW_IOMMU_IOMMUFD,	/* /dev/iommu + /dev/vfio/devices/vfioX */
};

struct vcxl_hw_vfio_cfg {
	const char *bdf;	/* "0000:0d:00.0" (required; bound to vfio-pci) */
	const char *sysfs_root; /* NULL = "/sys" */
	const char *dev_root;	/* NULL = "/dev" */
	enum vcxl_hw_iommu iommu;
	const char *region_dax; /* attach mode: this device-DAX is the region memory */
	const char *devmem;	/* NULL = "/dev/mem" */
};

struct vcxl_hw_vfio;

int vcxl_hw_vfio_open(const struct vcxl_hw_vfio_cfg *cfg, struct vcxl_hw_vfio **out, char *err,
		      size_t errlen);
void vcxl_hw_vfio_close(struct vcxl_hw_vfio *v);
struct vcxl_backend *vcxl_hw_vfio_backend(struct vcxl_hw_vfio *v);
const char *vcxl_hw_vfio_bdf(const struct vcxl_hw_vfio *v);
/* "iommufd" or "group" (how the device was opened), "none" for a layout. */
const char *vcxl_hw_vfio_iommu_name(const struct vcxl_hw_vfio *v);
/* hpa_map only maps inside [base, base + size) once this is set. */
void vcxl_hw_vfio_set_window(struct vcxl_hw_vfio *v, uint64_t base, uint64_t size);
/* --region-dax: use this device-DAX as the region memory: hpa_map maps the
 * HPA range it covers (its sysfs resource) through it, programs nothing. */
int vcxl_hw_vfio_attach_dax(struct vcxl_hw_vfio *v, const char *path, char *err, size_t errlen);

/* An already opened device, described by hand: no ioctl is issued while
 * building it (tests; other kernels' interfaces). dev_fd is the VFIO device
 * fd (or any file laid out the same way), cfg_fd the raw config space. The
 * backend takes ownership of both fds. */
struct vcxl_hw_region {
	uint64_t offset, size;
	uint32_t flags;	    /* VFIO_REGION_INFO_FLAG_* */
	unsigned nr_sparse; /* VFIO_REGION_INFO_CAP_SPARSE_MMAP areas, 0 = none */
	struct vcxl_bar_area sparse[VCXL_BAR_MAX_AREAS];
	bool sparse_overflow; /* the kernel listed more areas than fit */
};

#define VCXL_HW_NUM_REGIONS 9 /* VFIO_PCI_NUM_REGIONS */
#define VCXL_HW_NUM_IRQS    5 /* VFIO_PCI_NUM_IRQS */

struct vcxl_hw_layout {
	int dev_fd, cfg_fd;
	struct vcxl_hw_region region[VCXL_HW_NUM_REGIONS];
	unsigned irq_count[VCXL_HW_NUM_IRQS];
	const char *name;
	const char *devmem; /* NULL = "/dev/mem" */
};
int vcxl_hw_vfio_from_layout(const struct vcxl_hw_layout *l, struct vcxl_hw_vfio **out, char *err,
			     size_t errlen);
/* Decode a VFIO_DEVICE_GET_REGION_INFO reply (with its capability chain) of
 * buflen bytes into r. Capabilities must lie past the fixed part, 4-byte
 * aligned, inside min(argsz, buflen), the chain only going forward; sparse
 * mmap areas must be non-empty and inside the region (more than
 * VCXL_BAR_MAX_AREAS: the rest is dropped, sparse_overflow set; none: the
 * MMAP flag is cleared). -EINVAL on a short reply or a malformed chain. */
int vcxl_hw_region_decode(const void *buf, size_t buflen, struct vcxl_hw_region *r);

/* ---- The host address window, end to end --------------------------------- */

struct vcxl_hw_window_cfg {
	const char *cedt;   /* NULL = /sys/firmware/acpi/tables/CEDT */
	const char *iomem;  /* NULL = /proc/iomem */
	const char *devmem; /* NULL = /dev/mem */
	const char *sysfs_root;
	bool hostonly;	    /* Type-3 (HDM-H) device: else Type-2 (device coherent) */
	bool no_hb_program; /* don't touch the host bridge (firmware did it) */
};

struct vcxl_hw_window {
	struct vcxl_hw_topo topo;
	struct vcxl_cedt_cfmws win;
	struct vcxl_cedt_chbs chbs;
	bool have_chbs;
	struct vcxl_hw_hb hb;
	uint32_t host_flags; /* VCXL_WIN_* given to the host */
};

/* Find the device's host bridge and a 1-way window for it, check nobody
 * claimed the window, program and commit the host bridge's decoder over the
 * whole window (before any endpoint decoder), verify Committed, and add the
 * window to host h. The endpoint decoder is then the host core's
 * (vcxl_vdev_create / vcxl_region_create program it through the backend). */
int vcxl_hw_window_setup(struct vcxl_hw_vfio *v, const struct vcxl_hw_window_cfg *cfg,
			 struct vcxl_host *h, struct vcxl_hw_window **out, char *err,
			 size_t errlen);
/* After the endpoint decoder is gone (vcxl_vdev_destroy): decommit the host
 * bridge decoder, unmap, free. */
void vcxl_hw_window_teardown(struct vcxl_hw_window *w);
/* Host bridge decoder n as it reads now (for logs and checks). */
int vcxl_hw_hb_read_decoder(struct vcxl_hw_hb *hb, unsigned n, uint64_t *base, uint64_t *size,
			    uint32_t *ctrl, uint32_t *tl_lo);

#endif /* VCXL_HW_VFIO_H */
