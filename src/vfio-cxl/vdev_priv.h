/* SPDX-License-Identifier: BSD-3-Clause */
/* vfio-cxl core internals: the virtual device and its parts. */
#ifndef VCXL_VDEV_PRIV_H
#define VCXL_VDEV_PRIV_H

#include <stdarg.h>
#include <stdio.h>

#include "variant.h"
#include "../common/errmsg.h"
#include "cxl/cxl_mbox.h"
#include "cxl/cxl_spec.h"
#include "host/host_cxl.h"
#include "regfile/regfile.h"
#include "vfio-cxl/vfio_cxl.h"

/*
 * Config space routing, one entry per dword (the only place that decides
 * where a config byte goes):
 *   PASS    to the device through the backend
 *   RO      reads from the device, writes dropped (host-owned: Register
 *           Locator, extended capability and DVSEC headers)
 *   EMUL    the virtual config register file (CXL Device DVSEC, virtual DOE)
 *   DEVCTL  to the device, but Initiate FLR is taken out and performed as
 *           the vdev's FLR (vdev_reset_apply(VDEV_RESET_FLR))
 */
enum vcfg_route {
	VCFG_PASS = 0,
	VCFG_RO,
	VCFG_EMUL,
	VCFG_DEVCTL,
};

#define VCFG_DWORDS (VCXL_VDEV_CONFIG_SIZE / 4)
/* Trapped ranges per BAR: the component block, the MSI-X table and PBA, the
 * variant's host registers and the gaps between a backend's mmappable areas
 * (at most VCXL_BAR_MAX_AREAS + 1) fit with room to spare; a BAR that would
 * need more is not mmappable at all (vbar_build says so), never truncated. */
#define VBAR_MAX_HOLES 16
#define VBAR_MSIX_MAX  2048 /* PCI 3.0 6.8.2.3: Table Size is 11 bits */
/* The guest's Device Capabilities Array: its register and the headers a
 * walk reads at most (CXL r3.1 8.2.8.1-2, VCXL_DEVCAP_MAX_WALK) */
#define VBAR_DEVCAP_VIEW (CXLDEV_CAP_HDR_FIRST + VCXL_DEVCAP_MAX_WALK * CXLDEV_CAP_HDR_STRIDE)

struct vcxl_vbar {
	struct vcxl_bar_info bi;
	unsigned nholes; /* trapped ranges, page aligned, sorted, merged */
	struct vcxl_sparse_area holes[VBAR_MAX_HOLES];
	unsigned nsparse; /* the rest: mmappable areas */
	struct vcxl_sparse_area sparse[VCXL_MAX_SPARSE];
	bool mmap;
	bool holes_overflow; /* a trapped range did not fit: no mmap */
	bool renew_pending;  /* a new tenant's fresh object could not be made yet */
};

/* room for the reset kinds (enum vdev_reset, below) */
#define VDEV_RESET_KINDS_MAX 8

/* Bytes of region the --on-disconnect reset scrub zeroes per loop turn. */
#define VDEV_SCRUB_STEP (64ull << 20)

struct vcxl_vdev {
	struct vcxl_backend *be;
	struct vcxl_vdev_cfg cfg;
	struct vcxl_host *host;
	struct vcxl_host host_store; /* when the vdev owns its host */
	bool own_host;
	const struct vcxl_variant *variant;
	bool variant_open;
	struct vcxl_cxl_dev *dev;
	struct vcxl_region *region;

	/* virtual config space */
	bool vcfg_ready;
	struct vcxl_regfile vcfg;
	uint8_t route[VCFG_DWORDS];
	struct vcxl_dvsec_device dvsec;
	uint32_t dvsec_len; /* bytes of config routed to the virtual DVSEC */
	bool has_doe;
	struct vcxl_doe doe;
	uint8_t *cdat;
	size_t cdat_len;
	uint32_t pcie_cap, msix_cap; /* 0 = absent */
	/* the device's MSI-X table and PBA: host-owned, as vfio-pci keeps them */
	unsigned msix_bar, pba_bar, msix_nvec;
	uint64_t msix_table_off, msix_table_len, pba_off, pba_len;
	uint64_t msix_armed[VBAR_MSIX_MAX / 64]; /* vectors the client armed */
	bool flr_capable;
	bool pending_cxl_reset;

	/* virtual component block */
	bool vcomp_ready;
	struct vcxl_regfile vcomp;
	struct vcxl_comp comp;
	unsigned guest_decoders;

	struct vcxl_vbar bar[VCXL_NUM_BARS];

	/* the memory device's Primary Mailbox (CXL r3.1 8.2.8.4): trapped whole
	 * (registers and payload), commands off the allow-list answered
	 * Unsupported, Command and payload writes dropped while the device may
	 * still hold a command (vbar.c) */
	bool has_mbox;
	unsigned mbox_bar;
	uint64_t mbox_off; /* in the BAR */
	uint64_t mbox_len; /* registers and payload */
	bool mbox_refused; /* the last doorbell was refused: Status and Command read so */
	uint16_t mbox_refused_op;
	bool mbox_inflight; /* a doorbell went to the device, not yet seen cleared */
	/* the Device Capabilities Array (8.2.8.1-2) as the guest sees it: the
	 * Secondary Mailbox left out, its registers hidden (read 0, writes dropped) */
	bool has_devcap;
	uint64_t devcap_off; /* in the devregs BAR */
	uint32_t devcap_len;
	uint8_t devcap_view[VBAR_DEVCAP_VIEW];
	bool has_smbox;
	uint64_t smbox_off, smbox_len; /* in the devregs BAR */

	/* host mapping of the CXL region, made on first use (no page touched) */
	uint8_t *region_map;
	bool region_fd_shared; /* the client gets the region's fd (mmap) */
	/* the hand-over to the next tenant not done yet (vdev_prepare ends it):
	 * a fresh region object could not be made, or the region holds what an
	 * earlier run of the server left there (zeroed from scrub_off on) */
	bool renew_pending, scrub_pending;
	uint64_t scrub_off;

	vcxl_hdm_notify_fn hdm_notify;
	void *hdm_notify_opaque;
	uint64_t virtual_cxl_resets, flrs, region_restores;
	uint64_t resets_by_kind[VDEV_RESET_KINDS_MAX]; /* vdev_reset_apply() calls */
	bool gone_logged;			       /* the backend reported the device gone */
	/* the server's DMA ops (pause: a long scrub lets the loop run) */
	const struct vcxl_dma_ops *dma;
	void *dma_opaque;
};

#define vdev_err vcxl_errf /* src/common/errmsg.h */

/* Why the backend's fd must not go to the client (NULL: it may, or the
 * operator trusts the client). */
const char *vdev_fd_unshareable(const struct vcxl_vdev *v, int fd, bool *never);

/* vconfig.c */
int vcfg_build(struct vcxl_vdev *v, char *err, size_t errlen);
void vcfg_fini(struct vcxl_vdev *v);
int vcfg_read(struct vcxl_vdev *v, uint64_t off, void *buf, size_t len);
int vcfg_write(struct vcxl_vdev *v, uint64_t off, const void *buf, size_t len);
/* What a reset does to the virtual CXL Device DVSEC. */
enum vdev_dvsec_reset {
	DVSEC_KEEP,	    /* untouched (FLR: CXL r3.1 9.5) */
	DVSEC_CXL_RESET,    /* CXL r3.1 9.7: non-sticky, unlocked fields to defaults */
	DVSEC_CONVENTIONAL, /* everything to reset values, CONFIG_LOCK included */
};
/* The virtual config shadows: the CXL Device DVSEC as dvsec says, and/or
 * everything else emulated to reset values, the DOE mailbox included
 * (function). */
void vcfg_reset(struct vcxl_vdev *v, enum vdev_dvsec_reset dvsec, bool function);
/* CXL r3.1 9.7: a virtual CXL reset (guest wrote Initiate CXL Reset). */
void vdev_virtual_cxl_reset(struct vcxl_vdev *v);

/* vdev.c: every reset goes through the table in vdev.c (docs/reset.md) */
enum vdev_reset {
	VDEV_RESET_FLR,	       /* guest's Initiate FLR */
	VDEV_RESET_CXL,	       /* guest's Initiate CXL Reset */
	VDEV_RESET_VFIO,       /* VFIO_DEVICE_RESET / vfio-user DEVICE_RESET */
	VDEV_RESET_GONE_KEEP,  /* client disconnected, --on-disconnect keep */
	VDEV_RESET_GONE_RESET, /* client disconnected, --on-disconnect reset */
	VDEV_RESET_KINDS,
};
_Static_assert(VDEV_RESET_KINDS <= VDEV_RESET_KINDS_MAX, "resets_by_kind holds every kind");
int vdev_reset_apply(struct vcxl_vdev *v, enum vdev_reset kind);

/* vcomp.c */
int vcomp_build(struct vcxl_vdev *v, char *err, size_t errlen);
void vcomp_fini(struct vcxl_vdev *v);
int vcomp_access(struct vcxl_vdev *v, bool write, uint32_t off, unsigned len, uint64_t *val);
int vcomp_access_buf(struct vcxl_vdev *v, bool write, uint32_t off, void *buf, size_t len);
void vcomp_reset(struct vcxl_vdev *v, bool full);
/* Where decoder n's guest range lands in the region (its virtual DPA): the
 * sizes and skips of the decoders below it and its own skip. */
uint64_t vcomp_region_off(const struct vcxl_hdm *h, unsigned n);

/* vbar.c */
int vbar_build(struct vcxl_vdev *v, char *err, size_t errlen);
int vbar_region_info(struct vcxl_vdev *v, unsigned bar, struct vcxl_vregion_info *ri);
/* A new tenant: fresh memory objects for the BARs' fds (backend.h bar_renew). */
int vbar_renew(struct vcxl_vdev *v, bool pending_only);
int vbar_rw(struct vcxl_vdev *v, unsigned bar, bool write, uint64_t off, void *buf, size_t len);
int vbar_msix_arm(struct vcxl_vdev *v, unsigned vector, bool armed);
/* After a device reset masked the device's table: unmask again every vector
 * the client armed (its eventfds are the VMM's, untouched by the reset). */
void vbar_msix_rearm(struct vcxl_vdev *v);
/* Every vector masked (the client's eventfds are gone). */
void vbar_msix_disarm_all(struct vcxl_vdev *v);
void vbar_mbox_reset(struct vcxl_vdev *v);

/* vdev.c: the server's mapping of the CXL region (made on first use) */
uint8_t *vdev_region_map(struct vcxl_vdev *v);

/* vmig.c: migration, the device table's mig_* entries (docs/migration.md) */
uint64_t vmig_flags(void *dev);
int vmig_quiesce(void *dev, bool stop);
int vmig_save(void *dev, struct vcxl_mig_buf *b);
int vmig_load(void *dev, const uint8_t *s, size_t len, char *err, size_t errlen);
int vmig_check(void *dev, const uint8_t *s, size_t len, char *err, size_t errlen);
uint64_t vmig_max_size(void *dev);
int vmig_dirty(void *dev, bool on);
int vmig_dirty_pending(void *dev);
/* vmig_dirty.c: the device table's mig_dirty_report */
int64_t vmig_dirty_report(void *dev, uint64_t iova, uint64_t len, uint64_t pgsize, uint64_t *bitmap,
			  uint64_t win, uint64_t win_len);

#endif /* VCXL_VDEV_PRIV_H */
