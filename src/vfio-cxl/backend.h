/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The backend interface: how the host CXL core and the vfio-cxl core reach a
 * device. The built-in accelerator model implements it (model.h); a Linux
 * VFIO backend for real hardware implements the same operations.
 *
 * Every operation returns 0 or a negative errno. A device that is gone
 * (surprise removal) reads all-ones and returns -ENODEV.
 */
#ifndef VCXL_BACKEND_H
#define VCXL_BACKEND_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct vcxl_mig_buf; /* migstream.h */

#define VCXL_NUM_BARS 6

enum vcxl_bar_flags {
	VCXL_BAR_PRESENT = 1u << 0,
	VCXL_BAR_MEM64 = 1u << 1,
	VCXL_BAR_PREFETCH = 1u << 2,
	VCXL_BAR_IO = 1u << 3,
};

#define VCXL_BAR_MAX_AREAS 4

struct vcxl_bar_area {
	uint64_t offset, size; /* relative to the BAR */
};

struct vcxl_bar_info {
	uint64_t size;	/* 0 = BAR not implemented */
	uint32_t flags; /* enum vcxl_bar_flags */
	int fd;		/* fd that maps the whole BAR at fd_offset, or -1 */
	uint64_t fd_offset;
	/* Only parts of the BAR can be mapped (VFIO sparse mmap): then fd is -1,
	 * and area_fd maps area[0..nr_areas) at area_fd_offset + area offset.
	 * nr_areas == 0: nothing beyond fd (area_fd is then meaningless). */
	unsigned nr_areas;
	int area_fd;
	uint64_t area_fd_offset;
	struct vcxl_bar_area area[VCXL_BAR_MAX_AREAS];
};

enum vcxl_reset_kind {
	VCXL_RESET_FLR = 0, /* PCIe function level reset */
	VCXL_RESET_CXL = 1, /* CXL reset (Control2 Initiate CXL Reset) */
	/* A new tenant (--on-disconnect reset): an FLR, and also the state a
	 * guest set that an FLR keeps (a Type-3 mailbox's Timestamp and Event
	 * Interrupt Policy, a live Cache Invalid): the device as a fresh one
	 * reads. A backend that cannot forget more than an FLR does an FLR
	 * (docs/security.md says what each keeps). */
	VCXL_RESET_TENANT = 2,
};

/* IRQ types, numbered as VFIO's PCI IRQ indexes. */
enum vcxl_irq_type {
	VCXL_IRQ_INTX = 0,
	VCXL_IRQ_MSI = 1,
	VCXL_IRQ_MSIX = 2,
};

/* Device-initiated DMA into the client's memory, and the server's help for
 * slow device operations (installed by the server). */
struct vcxl_dma_ops {
	int (*read)(void *opaque, uint64_t iova, void *buf, size_t len);
	int (*write)(void *opaque, uint64_t iova, const void *buf, size_t len);
	/* Optional (NULL: call fn in place). Run fn(arg), which may block (an
	 * ioctl that waits for the hardware, a reset's settle time), without
	 * holding the server's loop: fn runs on a worker thread while the
	 * operation that called this waits and the loop serves everyone else;
	 * this device gets no other call meanwhile, so fn may touch it (and
	 * nothing else). Returns fn's result. */
	int (*run_blocking)(void *opaque, int (*fn)(void *arg), void *arg);
	/* Optional: between two bounded steps of a long operation (a scrub),
	 * let the loop serve everyone else once. */
	void (*pause)(void *opaque);
};

/* Raise interrupt `vector` of `type` (installed by the server). */
typedef void (*vcxl_irq_fn)(void *opaque, enum vcxl_irq_type type, unsigned vector);

struct vcxl_backend_ops {
	int (*cfg_read)(void *dev, uint32_t off, unsigned len, uint64_t *val);
	int (*cfg_write)(void *dev, uint32_t off, unsigned len, uint64_t val);
	int (*bar_read)(void *dev, unsigned bar, uint64_t off, unsigned len, uint64_t *val);
	int (*bar_write)(void *dev, unsigned bar, uint64_t off, unsigned len, uint64_t val);
	int (*bar_info)(void *dev, unsigned bar, struct vcxl_bar_info *info);
	/* Map host physical range [hpa, hpa+size) that the device decodes:
	 * returns an fd and offset that mmap it (the fd stays owned by the backend). */
	int (*hpa_map)(void *dev, uint64_t hpa, uint64_t size, int *fd, uint64_t *fd_offset);
	int (*reset)(void *dev, enum vcxl_reset_kind kind);
	/* Number of vectors of an IRQ type. */
	unsigned (*irq_count)(void *dev, enum vcxl_irq_type type);
	void (*set_irq_handler)(void *dev, vcxl_irq_fn fn, void *opaque);
	void (*set_dma)(void *dev, const struct vcxl_dma_ops *ops, void *opaque);
	/* Device identity for logs. */
	const char *(*name)(void *dev);

	/* ---- optional (NULL when the backend has no such thing) ---- */
	/* Real hardware signals interrupts to an eventfd, not through a call:
	 * route vector `vector` of `type` to eventfd fd (fd < 0: stop routing it).
	 * When present the server prefers it over set_irq_handler and passes the
	 * client's eventfds straight through (VFIO_DEVICE_SET_IRQS semantics). */
	int (*set_irq_eventfd)(void *dev, enum vcxl_irq_type type, unsigned vector, int fd);
	/* Device DMA through an IOMMU: make the client's [iova, iova + size),
	 * mapped at vaddr in this process, reachable by the device (write: the
	 * device may also write it). The server calls it on DMA_MAP, dma_unmap on
	 * DMA_UNMAP and for every live mapping when the client disconnects. */
	int (*dma_map)(void *dev, uint64_t iova, uint64_t size, void *vaddr, bool write);
	int (*dma_unmap)(void *dev, uint64_t iova, uint64_t size);
	/* Isolation: may fd (returned by bar_info or hpa_map) be handed to a
	 * client? NULL if it may: it reaches exactly the BAR or HPA range it
	 * was returned for (nothing else of the device or the host) and the
	 * client cannot resize it. Otherwise a one-line reason; the vfio-cxl
	 * core then serves that BAR or region by messages only, unless the
	 * operator trusts the client (--trust-client) and *never is left
	 * false (*never = true: not even then, e.g. /dev/mem). A backend
	 * without this op is never trusted with fds. */
	const char *(*fd_unshareable)(void *dev, int fd, bool *never);
	/* Run the device's timers (a model's deadlines) and one bounded step of
	 * its background work (a model job): ms to the next deadline, 0 while
	 * work is left, -1 for none. The owner of the device (the vfio-cxl
	 * core's poll) calls it from its loop. */
	int (*poll)(void *dev);
	/* A new tenant (--on-disconnect reset): the memory object behind the
	 * HPA range [hpa, hpa + size) that hpa_map gave out is replaced by a
	 * fresh, zeroed one, which the device uses from now on; its fd and
	 * offset are returned as hpa_map does. The old object is detached
	 * from the device (the caller empties it): it lives on only in the
	 * mappings and fds a departed client kept, and nothing written there
	 * reaches the device or the next client. -EOPNOTSUPP (or no op) where the memory cannot be
	 * replaced (a --backing file, real device memory): the caller zeroes
	 * it in place. On error the old object stays in use. */
	int (*hpa_renew)(void *dev, uint64_t hpa, uint64_t size, int *fd, uint64_t *fd_offset);
	/* The same for the memory behind BAR bar's fd (bar_info's fd or
	 * area_fd): a fresh, zeroed object; the caller asks bar_info again for
	 * the new fd. -EOPNOTSUPP (or no op) for a BAR without such memory. */
	int (*bar_renew)(void *dev, unsigned bar);

	/* ---- migration (docs/migration.md); optional: a backend without
	 * mig_save is not migratable (the hardware backend) ---- */
	/* Stop (true) or restart (false) everything the device does by itself:
	 * job steps, background commands, their DMA and interrupts. A job in
	 * flight stays latched and goes on where it stopped. */
	int (*mig_quiesce)(void *dev, bool stop);
	/* Append the device's own sections (VCXL_MIG_SEC_BE_FIRST..LAST) to a
	 * stream being written (migstream.h); host-owned state is left out. */
	int (*mig_save)(void *dev, struct vcxl_mig_buf *b);
	/* Loading: check one section into a staging copy (nothing applied);
	 * then commit: 0 with every staged section applied, or -errno with
	 * nothing applied (a section it needs is missing, sections that
	 * disagree); verify: commit's checks alone, nothing applied; abort
	 * drops the staging copy. */
	int (*mig_stage)(void *dev, uint32_t type, const uint8_t *p, uint64_t len, char *err,
			 size_t errlen);
	int (*mig_verify)(void *dev, char *err, size_t errlen);
	int (*mig_commit)(void *dev, char *err, size_t errlen);
	void (*mig_abort)(void *dev);
	/* Track (on) the pages of device memory the device writes itself, from
	 * empty; off forgets them. dirty_get sets bit i of bitmap (u64 words)
	 * for each VCXL_MIG_PAGE page [dpa + i * page, ...) written since. */
	int (*mig_dirty)(void *dev, bool on);
	int (*mig_dirty_get)(void *dev, uint64_t dpa, uint64_t len, uint64_t *bitmap);
	/* Forget the pages of [dpa, dpa + len) whose bit is set in bitmap (as
	 * dirty_get's): a DMA logging report handed them to the client, which
	 * copies them with the guest's memory; a page written again is marked
	 * again. Optional: without it, every page goes in the stream. */
	int (*mig_dirty_clear)(void *dev, uint64_t dpa, uint64_t len, const uint64_t *bitmap);
};

struct vcxl_backend {
	const struct vcxl_backend_ops *ops;
	void *dev;
};

/* Convenience wrappers */
static inline int vcxl_be_cfg_read32(struct vcxl_backend *be, uint32_t off, uint32_t *v)
{
	uint64_t x = 0;
	int rc = be->ops->cfg_read(be->dev, off, 4, &x);
	*v = (uint32_t)x;
	return rc;
}

#endif /* VCXL_BACKEND_H */
