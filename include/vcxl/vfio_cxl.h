/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The vfio-cxl core: the virtual device a guest sees. It stands on a host CXL
 * device (host_cxl.h) and a backend (backend.h) and presents VFIO regions:
 * BARs (component block emulated and trapped, the rest passed through with
 * sparse mmap), config space (CXL DVSEC emulated, other capabilities passed
 * through, DOE/CDAT served), and the CXL region as a device region.
 * The vfio-user server speaks only to this interface.
 */
#ifndef VCXL_VFIO_CXL_H
#define VCXL_VFIO_CXL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "vcxl/backend.h"
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

void vcxl_vdev_get_info(struct vcxl_vdev *v, struct vcxl_vdev_info *info);

/* Resets so far, and how many of them cleared the host region's decoder so
 * that vcxl_vdev_reset had to program it again. */
struct vcxl_vdev_stats {
	uint64_t resets, region_restores;
	/* every reset applied, by kind: the guest's FLR and CXL Reset, DEVICE_RESET
	 * (VFIO), and a client's disconnect */
	uint64_t flr, cxl_reset, device_reset, disconnect;
};
void vcxl_vdev_get_stats(const struct vcxl_vdev *v, struct vcxl_vdev_stats *st);
int vcxl_vdev_region_info(struct vcxl_vdev *v, uint32_t index, struct vcxl_vregion_info *ri);
/* Region access: returns 0 or -errno (-EINVAL bad index/offset/size). */
int vcxl_vdev_region_read(struct vcxl_vdev *v, uint32_t index, uint64_t off, void *buf, size_t len);
int vcxl_vdev_region_write(struct vcxl_vdev *v, uint32_t index, uint64_t off, const void *buf,
			   size_t len);
/* A host pointer to [off, off+len) of a memory-backed region (the CXL
 * region), for zero-copy transfers; NULL if the region has none. The pointer
 * stays valid until vcxl_vdev_destroy. */
void *vcxl_vdev_region_ptr(struct vcxl_vdev *v, uint32_t index, uint64_t off, size_t len);
/* IRQs: count of vectors and VFIO_IRQ_INFO_* flags per VFIO IRQ index. */
int vcxl_vdev_irq_info(struct vcxl_vdev *v, uint32_t index, uint32_t *count, uint32_t *flags);
/* The client armed (gave an eventfd to) or disarmed IRQ vector `vector` of
 * VFIO IRQ index `index`: the host programs the device's own MSI-X entry
 * (unmask / mask), as vfio-pci does; the guest's table lives in the VMM. */
int vcxl_vdev_irq_arm(struct vcxl_vdev *v, uint32_t index, uint32_t vector, bool armed);
/* For a backend that signals eventfds itself (VFIO: VFIO_DEVICE_SET_IRQS):
 * hand it the client's eventfd for a vector (-1: none). -EOPNOTSUPP for
 * backends that raise IRQs through the handler below (the model). */
int vcxl_vdev_set_irq_eventfd(struct vcxl_vdev *v, uint32_t index, uint32_t vector, int fd);
/* For a backend whose device does its own DMA through an IOMMU: map / unmap
 * a client window (host address vaddr). -EOPNOTSUPP otherwise. */
int vcxl_vdev_dma_map(struct vcxl_vdev *v, uint64_t iova, uint64_t size, void *vaddr, bool write);
int vcxl_vdev_dma_unmap(struct vcxl_vdev *v, uint64_t iova, uint64_t size);
/* Install the handler that delivers device interrupts (server wires eventfds). */
void vcxl_vdev_set_irq_handler(struct vcxl_vdev *v, vcxl_irq_fn fn, void *opaque);
void vcxl_vdev_set_dma(struct vcxl_vdev *v, const struct vcxl_dma_ops *ops, void *opaque);
/* VFIO_DEVICE_RESET: function reset, every virtual state restored (as a
 * conventional reset), host region kept, region contents kept. What each
 * kind of reset does: docs/reset.md. */
int vcxl_vdev_reset(struct vcxl_vdev *v);
/* What the next client finds after a client disconnects (--on-disconnect). */
enum vcxl_on_disconnect {
	/* device reset, virtual state restored, region memory zeroed */
	VCXL_ON_DISCONNECT_RESET = 0,
	/* device and virtual state as the client left them (vfio-user spec) */
	VCXL_ON_DISCONNECT_KEEP,
};
/* The client went away: its vectors disarmed, then the policy applied.
 * 0 or the device reset's / scrub's -errno. */
int vcxl_vdev_client_gone(struct vcxl_vdev *v, enum vcxl_on_disconnect policy);
/* Timers of the device (model deadlines): ms to next, -1 for none. */
int vcxl_vdev_poll(struct vcxl_vdev *v);
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
