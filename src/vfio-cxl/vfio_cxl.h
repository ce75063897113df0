/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The vfio-cxl core: the virtual device a guest sees. It stands on a host CXL
 * device (host_cxl.h) and a backend (backend.h) and presents VFIO regions:
 * BARs (component block emulated and trapped, the rest passed through with
 * sparse mmap), config space (CXL DVSEC emulated, other capabilities passed
 * through, DOE/CDAT served), and the CXL region as a device region.
 * The vfio-user server speaks only to the device table, struct vcxl_dev_ops,
 * which this core implements (vcxl_vdev_ops); the rest of this header is
 * lifecycle, policy and introspection.
 */
#ifndef VCXL_VFIO_CXL_H
#define VCXL_VFIO_CXL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "vfio-cxl/backend.h"
#include "common/migstream.h"
#include "vcxl/uapi.h"

#define VCXL_MAX_SPARSE 4

/* Region and IRQ indexes the virtual device serves (VFIO PCI numbering) */
#define VCXL_VDEV_CXL_REGION  VFIO_PCI_NUM_REGIONS	 /* 9: the CXL region */
#define VCXL_VDEV_COMP_REGION (VFIO_PCI_NUM_REGIONS + 1) /* 10: the component registers */
#define VCXL_VDEV_NUM_REGIONS (VFIO_PCI_NUM_REGIONS + 2)
#define VCXL_VDEV_NUM_IRQS    VFIO_PCI_NUM_IRQS
#define VCXL_VDEV_CONFIG_SIZE 4096u

struct vcxl_host;
struct vcxl_variant;
struct vcxl_region;
struct vcxl_cxl_dev;

struct vcxl_sparse_area {
	uint64_t offset, size;
};

struct vcxl_vregion_info {
	uint32_t flags;	    /* VFIO_REGION_INFO_FLAG_READ/WRITE/MMAP */
	uint64_t size;	    /* 0 = absent */
	int fd;		    /* mmap fd when MMAP, else -1 (owned by the vdev) */
	uint64_t fd_offset; /* offset of the region within fd */
	/* With VFIO_REGION_INFO_FLAG_MMAP: nr_sparse == 0 means the whole region is
	 * mmappable; otherwise only these areas are (VFIO_REGION_INFO_CAP_SPARSE_MMAP). */
	unsigned nr_sparse; /* mmappable areas (offsets relative to the region) */
	struct vcxl_sparse_area sparse[VCXL_MAX_SPARSE];
	bool has_type; /* device-specific region: VFIO_REGION_INFO_CAP_TYPE */
	uint32_t type, subtype;
	bool has_comp; /* the COMP_REGS region: VFIO_REGION_INFO_CAP_CXL_COMP_REGS */
	struct vcxl_region_info_cap_cxl_comp_regs comp;
};

struct vcxl_vdev_info {
	uint32_t flags; /* VFIO_DEVICE_FLAGS_PCI | RESET | CXL */
	uint32_t num_regions;
	uint32_t num_irqs;
	struct vfio_device_info_cap_cxl cxl;
};

struct vcxl_vdev;

/* What the next client finds after a client disconnects (--on-disconnect). */
enum vcxl_on_disconnect {
	/* device reset, virtual state restored, region memory zeroed */
	VCXL_ON_DISCONNECT_RESET = 0,
	/* device and virtual state as the client left them (vfio-user spec) */
	VCXL_ON_DISCONNECT_KEEP,
};

struct vcxl_vdev_cfg {
	uint64_t region_size;	 /* CXL region to create; 0 = all device memory */
	bool prefer_firmware;	 /* attach to a firmware-committed region if present */
	bool attach_only;	 /* only attach (--region-dax): never program a decoder */
	unsigned guest_decoders; /* virtual HDM decoders; 0 = as the device has */
	/* Host address space to allocate from; NULL = a private host with the
	 * default window (host_cxl.h VCXL_HOST_DEFAULT_WIN_*). Must outlive the vdev. */
	struct vcxl_host *host;
	/* Plug-in with the device's facts; NULL = match by vendor/device id. */
	const struct vcxl_variant *variant;
	/* Hand the client fds the backend says reach beyond what its guest may
	 * access (backend.h fd_unshareable): a real device's VFIO fd, a whole
	 * --backing file. Off: such BARs and regions are served by messages. */
	bool trust_client;
	/* what a client's disconnect does (default: reset, docs/reset.md) */
	enum vcxl_on_disconnect on_disconnect;
};

/*
 * prefer_firmware: true = if firmware committed decoder 0 at probe, attach to
 * that region (upstream's "attach first"); otherwise create one. false =
 * create a region in the next free decoder (firmware decoders keep their DPA),
 * and attach to the firmware region only when that is impossible (no decoder
 * or DPA left). A firmware decoder is never reprogrammed. attach_only: the
 * region memory belongs to someone else (a kernel device-DAX), so a device
 * whose decoder 0 is not committed is refused instead of given a new region.
 */

/* Bring up the device behind be (host CXL core), create or attach its region,
 * and build the virtual view. On error nothing is left behind; err (if not
 * NULL) gets a one-line reason. */
int vcxl_vdev_create(struct vcxl_backend *be, const struct vcxl_vdev_cfg *cfg,
		     struct vcxl_vdev **out, char *err, size_t errlen);
void vcxl_vdev_destroy(struct vcxl_vdev *v);

/* Resets so far, and how many of them cleared the host region's decoder so
 * that a device reset had to program it again. */
struct vcxl_vdev_stats {
	uint64_t resets, region_restores;
	/* every reset applied, by kind: the guest's FLR and CXL Reset, DEVICE_RESET
	 * (VFIO), and a client's disconnect */
	uint64_t flr, cxl_reset, device_reset, disconnect;
};
void vcxl_vdev_get_stats(const struct vcxl_vdev *v, struct vcxl_vdev_stats *st);
/* Change what a client's disconnect does from now on (vcxl_vdev_cfg.on_disconnect). */
void vcxl_vdev_set_on_disconnect(struct vcxl_vdev *v, enum vcxl_on_disconnect policy);

/* ---------------------------------------------------------------------- */
/* The device interface: what a vfio-user server serves                   */
/* ---------------------------------------------------------------------- */
/* Resets a device counts by kind (docs/reset.md), for the server's device
 * counters (query-stats): what the device applied since it was created. */
enum vcxl_dev_reset_kind {
	VCXL_DEV_RESET_VFIO,		/* VFIO DEVICE_RESET (the VMM's machine reset) */
	VCXL_DEV_RESET_FLR,		/* the guest's Initiate FLR */
	VCXL_DEV_RESET_CXL,		/* the guest's Initiate CXL Reset */
	VCXL_DEV_RESET_DISCONNECT_KEEP, /* a client left, --on-disconnect keep */
	VCXL_DEV_RESET_DISCONNECT,	/* a client left, --on-disconnect reset */
	VCXL_DEV_RESET_KINDS,
};
struct vcxl_dev_counters {
	uint64_t resets[VCXL_DEV_RESET_KINDS];
};

/*
 * One table of operations on a device, in VFIO terms (regions, IRQ indexes,
 * reset), libvfio-user style: the server (server.h) reaches its device only
 * through it. vcxl_vdev_ops below is the vfio-cxl core itself (dev is a
 * struct vcxl_vdev *); tests and fuzzers plug fake devices into the server
 * with tables of their own. Optional entries may be NULL.
 */
struct vcxl_dev_ops {
	void (*get_info)(void *dev, struct vcxl_vdev_info *info);
	/* 0 or -EINVAL (no such region) */
	int (*region_info)(void *dev, uint32_t index, struct vcxl_vregion_info *ri);
	/* Region access: 0 or -errno (-EINVAL bad index/offset/size). A device
	 * that is gone reads all-ones and drops writes (PCIe r6 6.7.3). */
	int (*region_read)(void *dev, uint32_t index, uint64_t off, void *buf, size_t len);
	int (*region_write)(void *dev, uint32_t index, uint64_t off, const void *buf, size_t len);
	/* Host pointer to [off, off+len) of a memory-backed region for zero-copy
	 * replies, valid until the device goes; NULL if the region has none.
	 * Optional. */
	void *(*region_ptr)(void *dev, uint32_t index, uint64_t off, size_t len);
	/* Vectors and VFIO_IRQ_INFO_* flags of a VFIO IRQ index. */
	int (*irq_info)(void *dev, uint32_t index, uint32_t *count, uint32_t *flags);
	/* The handler that delivers device interrupts (the server signals the
	 * client's eventfds); fn NULL: none. */
	void (*set_irq_handler)(void *dev, vcxl_irq_fn fn, void *opaque);
	/* The client armed (gave an eventfd to) or disarmed a vector: the host
	 * programs the device's own MSI-X entry (unmask / mask), as vfio-pci
	 * does; the guest's table lives in the VMM. Optional. */
	int (*irq_arm)(void *dev, uint32_t index, uint32_t vector, bool armed);
	/* Hand the client's trigger eventfd (-1: none) to a device that signals
	 * it itself (VFIO_DEVICE_SET_IRQS). -EOPNOTSUPP when the device raises
	 * IRQs through set_irq_handler instead. Optional. */
	int (*set_irq_eventfd)(void *dev, uint32_t index, uint32_t vector, int fd);
	/* Make a client DMA window (mapped at vaddr) reachable by the device's
	 * own DMA (an IOMMU mapping), and undo it. -EOPNOTSUPP when the device
	 * does DMA through set_dma instead. Optional. */
	int (*dma_map)(void *dev, uint64_t iova, uint64_t size, void *vaddr, bool write);
	int (*dma_unmap)(void *dev, uint64_t iova, uint64_t size);
	/* Whether the device reaches client memory only through dma_map (its
	 * IOMMU), so that a window without an fd is out of its reach. Optional
	 * (NULL: no; the device's DMA goes through set_dma, into a window
	 * without an fd by DMA_READ/DMA_WRITE messages). */
	bool (*dma_needs_fd)(void *dev);
	/* Device-initiated DMA into client memory (ops NULL: none). */
	void (*set_dma)(void *dev, const struct vcxl_dma_ops *ops, void *opaque);
	/* VFIO_DEVICE_RESET. What each kind of reset does: docs/reset.md. */
	int (*reset)(void *dev);
	/* The client went away (after it negotiated): its vectors disarmed, then
	 * the device's --on-disconnect policy applied. 0 or -errno (the device
	 * logs it; what it could not do, prepare owes). */
	int (*client_gone)(void *dev);
	/* Make the device ready for a new client, one bounded step per call:
	 * what a hand-over still owes (fresh memory objects that could not be
	 * made when the last client left, a scrub of memory an earlier run of
	 * the server left). 0 ready; -EINPROGRESS: more steps (call again next
	 * turn); another -errno: not servable now (the server serves no client
	 * and tries again later). Optional (NULL: always ready). */
	int (*prepare)(void *dev);
	/* Run device timers and one bounded step of background work (a model
	 * job); ms to the next deadline, 0 while work is left, -1 for none.
	 * Optional. */
	int (*poll)(void *dev);
	/* What the device counts itself (resets by kind). Optional (NULL: 0). */
	void (*counters)(void *dev, struct vcxl_dev_counters *out);

	/* ---- migration v2 (docs/migration.md); optional, all NULL or none ---- */
	/* VFIO_MIGRATION_* flags the device supports; 0: not migratable. */
	uint64_t (*mig_flags)(void *dev);
	/* Stop (true) / restart (false) what the device does by itself. */
	int (*mig_quiesce)(void *dev, bool stop);
	/* The device state stream (migstream.h) into b; with b->count_only only
	 * its exact length. -EFBIG: over b->max (device memory dirtied beyond
	 * VCXL_MIG_DEVMEM_MAX). */
	int (*mig_save)(void *dev, struct vcxl_mig_buf *b);
	/* Load a whole stream: every part checked into a staging copy, then
	 * committed. On error (err: one line why) nothing of the stream is
	 * applied and the device is reset (as DEVICE_RESET) and usable. */
	int (*mig_load)(void *dev, const uint8_t *s, size_t len, char *err, size_t errlen);
	/* mig_load()'s checks alone, nothing applied: 0 or -errno (err: why).
	 * Optional. */
	int (*mig_check)(void *dev, const uint8_t *s, size_t len, char *err, size_t errlen);
	/* The largest stream the device may send or take. */
	uint64_t (*mig_max_size)(void *dev);
	/* Track pages of device memory the device writes itself (sent in the
	 * stream) from now on (on), or stop (off). */
	int (*mig_dirty)(void *dev, bool on);
	/* Pages of device memory the device wrote that the stream would carry
	 * (none reported since): 1 some, 0 none, -errno. Optional. */
	int (*mig_dirty_pending)(void *dev);
	/* DMA_LOGGING_REPORT's share of device memory (docs/migration.md
	 * section 3), for the part of the report inside the client's DMA
	 * window [win, win + win_len): if the window lies whole inside the
	 * committed guest HDM decoders' ranges, OR into bitmap (bit k: the
	 * page [iova + k * pgsize, +pgsize)) the guest-physical pages of
	 * [iova, iova + len) in the window that a decoder maps onto device
	 * memory the device wrote since tracking began or since a report last
	 * returned it, and forget the device pages that part holds whole: the
	 * stream leaves them out. The device pages reported, or -errno; a page
	 * forgotten is always in bitmap, also when a later part failed.
	 * Optional. */
	int64_t (*mig_dirty_report)(void *dev, uint64_t iova, uint64_t len, uint64_t pgsize,
				    uint64_t *bitmap, uint64_t win, uint64_t win_len);
};

/* The vfio-cxl core as a device: dev is a struct vcxl_vdev *. */
extern const struct vcxl_dev_ops vcxl_vdev_ops;

struct vcxl_backend *vcxl_vdev_backend(struct vcxl_vdev *v);

/* The guest committed (committed=true) or decommitted virtual decoder n:
 * guest-physical [gpa, gpa + size) maps the CXL region at region_off. The
 * server may use it to place the region; the vdev itself needs nothing. */
typedef void (*vcxl_hdm_notify_fn)(void *opaque, unsigned n, bool committed, uint64_t gpa,
				   uint64_t size, uint64_t region_off);
void vcxl_vdev_set_hdm_notify(struct vcxl_vdev *v, vcxl_hdm_notify_fn fn, void *opaque);
/* Introspection (tests, CLI): the host device, its region, the variant used. */
struct vcxl_cxl_dev *vcxl_vdev_host_dev(struct vcxl_vdev *v);
const struct vcxl_region *vcxl_vdev_region(struct vcxl_vdev *v);
const struct vcxl_variant *vcxl_vdev_variant(struct vcxl_vdev *v);

#endif /* VCXL_VFIO_CXL_H */
