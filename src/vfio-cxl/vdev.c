// SPDX-License-Identifier: BSD-3-Clause
/*
 * vfio-cxl core: the virtual device (vfio_cxl.h). Bring-up and teardown in
 * one order and its exact reverse, and the device table the server serves
 * (vcxl_vdev_ops): region and IRQ info, access dispatch, virtualised resets,
 * the device's timers.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <sys/mman.h>
#include <linux/pci_regs.h>
#include <linux/vfio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "vdev_priv.h"
#include "../common/release.h"
#include "../common/sigbus_guard.h"

/* ---- Lifecycle ------------------------------------------------------------ */

/* Reverse of vcxl_vdev_create, from wherever it got to. */
static void vdev_teardown(struct vcxl_vdev *v)
{
	if (v->region_map)
		munmap(v->region_map, v->region->size);
	v->region_map = NULL;
	vcomp_fini(v);
	vcfg_fini(v);
	if (v->region)
		vcxl_region_destroy(v->region);
	v->region = NULL;
	if (v->variant_open && v->variant->close)
		v->variant->close(v, v->variant->priv);
	v->variant_open = false;
	vcxl_cxl_remove(v->dev);
	v->dev = NULL;
	if (v->own_host)
		vcxl_host_fini(&v->host_store);
	free(v);
}

static int vdev_host(struct vcxl_vdev *v, char *err, size_t errlen)
{
	if (v->cfg.host) {
		v->host = v->cfg.host;
		return 0;
	}
	vcxl_host_init(&v->host_store);
	v->own_host = true;
	v->host = &v->host_store;
	int rc = vcxl_host_add_window(v->host, VCXL_HOST_DEFAULT_WIN_BASE,
				      VCXL_HOST_DEFAULT_WIN_SIZE, VCXL_HOST_DEFAULT_WIN_FLAGS);
	return rc ? vdev_err(err, errlen, rc, "default host window: %d", rc) : 0;
}

/* Attach first or create first (see vcxl_vdev_cfg.prefer_firmware). */
static int vdev_region(struct vcxl_vdev *v, char *err, size_t errlen)
{
	struct vcxl_cxl_dev *d = v->dev;
	int rc;

	if (d->fw_committed && (v->cfg.prefer_firmware || v->cfg.attach_only))
		return vcxl_region_attach_firmware(d, &v->region, err, errlen);
	if (v->cfg.attach_only)
		return vdev_err(
		    err, errlen, -ENOENT,
		    "no committed region to attach to: endpoint decoder 0 is not "
		    "committed (a reset since firmware or the kernel set it up clears it)");
	rc = vcxl_region_create(d, v->cfg.region_size, &v->region, err, errlen);
	if (rc == -ENOSPC && d->fw_committed)
		rc = vcxl_region_attach_firmware(d, &v->region, err, errlen);
	return rc;
}

/*
 * A Type-3's memory device registers (mailbox) pass through untouched, so
 * Identify and Get Partition Info (CXL r3.1 8.2.9.9.1.1, 8.2.9.9.2.1) tell
 * the guest the whole device's capacity. The guest's virtual DVSEC ranges and
 * decoders cover only the region: the two agree only if the region is all
 * of the device's memory, so anything smaller is refused.
 */
static int vdev_check_type3(struct vcxl_vdev *v, char *err, size_t errlen)
{
	const struct vcxl_cxl_dev *d = v->dev;

	if (!d->hostonly || !d->has_devregs || v->region->size == d->dpa_capacity)
		return 0;
	return vdev_err(err, errlen, -EINVAL,
			"Type-3 device: the region (0x%llx bytes) must cover all device memory "
			"(0x%llx bytes), since its mailbox reports the whole capacity to the guest",
			(unsigned long long)v->region->size, (unsigned long long)d->dpa_capacity);
}

const char *vdev_fd_unshareable(const struct vcxl_vdev *v, int fd, bool *never)
{
	bool nev = false;
	const char *why = v->be->ops->fd_unshareable
			      ? v->be->ops->fd_unshareable(v->be->dev, fd, &nev)
			      : "the backend does not say what its fds reach";

	*never = why && nev;
	return why && (nev || !v->cfg.trust_client) ? why : NULL;
}

/* Isolation: the region's fd goes to the client only if it reaches exactly
 * the region; otherwise the region is served by REGION_READ/WRITE, said once. */
static void vdev_region_share(struct vcxl_vdev *v)
{
	bool never;
	const char *why = vdev_fd_unshareable(v, v->region->fd, &never);

	v->region_fd_shared = !why;
	if (why)
		fprintf(stderr,
			"vcxl: %s: CXL region served by REGION_READ/WRITE only, not mmap: %s%s\n",
			v->be->ops->name(v->be->dev), why,
			never ? "" : " (--trust-client hands it out anyway)");
}

/* The device's own engines confined to the region (variant.h confine). */
static int vdev_confine(struct vcxl_vdev *v, char *err, size_t errlen)
{
	int rc = v->variant->confine ? v->variant->confine(v, v->variant->priv) : 0;

	return rc ? vdev_err(err, errlen, rc,
			     "variant %s cannot confine the device to the region (%d)",
			     v->variant->name, rc)
		  : 0;
}

/* Does the region's memory die with this process? Only a memfd does (the
 * model's sealed objects); a file (--backing, tmpfs or disk), a device-DAX
 * or real device memory holds what the last tenant of an earlier run wrote,
 * however that run ended (SIGKILL, OOM, a power cut of a disk file). */
static bool vdev_region_outlives(const struct vcxl_vdev *v)
{
	char path[64], target[16] = "";

	if (v->region->fd < 0)
		return true;
	snprintf(path, sizeof(path), "/proc/self/fd/%d", v->region->fd);
	return readlink(path, target, sizeof(target) - 1) < 0 ||
	       strncmp(target, "/memfd:", strlen("/memfd:")) != 0;
}

/* The hand-over promise (--on-disconnect reset: no tenant reads another's
 * data) holds across a crash: memory that outlived an earlier run is zeroed
 * before the first client is served (vdev_prepare, a step per loop turn). */
static void vdev_dirty_at_start(struct vcxl_vdev *v)
{
	if (v->cfg.on_disconnect != VCXL_ON_DISCONNECT_RESET || !vdev_region_outlives(v))
		return;
	v->scrub_pending = true;
	v->scrub_off = 0;
	fprintf(stderr,
		"vcxl: %s: the region's memory outlives the server (not a memfd): zeroed before "
		"the first client (--on-disconnect reset)\n",
		v->be->ops->name(v->be->dev));
}

int vcxl_vdev_create(struct vcxl_backend *be, const struct vcxl_vdev_cfg *cfg,
		     struct vcxl_vdev **out, char *err, size_t errlen)
{
	uint64_t id = 0, cls = 0;
	int rc;

	if (!out)
		return vdev_err(err, errlen, -EINVAL, "no output pointer");
	*out = NULL;
	if (!be || !be->ops || !be->ops->cfg_read || !be->ops->cfg_write || !be->ops->bar_read ||
	    !be->ops->bar_write || !be->ops->bar_info || !be->ops->hpa_map)
		return vdev_err(err, errlen, -EINVAL, "backend lacks required operations");
	struct vcxl_vdev *v = calloc(1, sizeof(*v));
	if (!v)
		return vdev_err(err, errlen, -ENOMEM, "out of memory");
	v->be = be;
	if (cfg)
		v->cfg = *cfg;
	if ((rc = be->ops->cfg_read(be->dev, PCI_VENDOR_ID, 4, &id))) {
		vdev_err(err, errlen, rc, "config read failed (%d)", rc);
		goto fail;
	}
	if ((rc = be->ops->cfg_read(be->dev, PCI_CLASS_REVISION, 4, &cls))) {
		vdev_err(err, errlen, rc, "config read failed (%d)", rc);
		goto fail;
	}
	v->variant = v->cfg.variant ? v->cfg.variant
				    : vcxl_variant_match_class((uint16_t)id, (uint16_t)(id >> 16),
							       (uint32_t)(cls >> 8));
	if ((rc = vdev_host(v, err, errlen)))
		goto fail;
	struct vcxl_dev_facts facts = {
	    .media_ready = v->variant->media_ready,
	    .mem_size = v->variant->mem_size,
	    .no_cdat = v->variant->no_cdat,
	};
	if ((rc = vcxl_cxl_probe(v->host, be, &facts, &v->dev, err, errlen)))
		goto fail;
	if (v->variant->open) {
		if ((rc = v->variant->open(v, v->variant->priv))) {
			vdev_err(err, errlen, rc, "variant %s refused the device (%d)",
				 v->variant->name, rc);
			goto fail;
		}
	}
	v->variant_open = true;
	if ((rc = vdev_region(v, err, errlen)) || (rc = vdev_check_type3(v, err, errlen)) ||
	    (rc = vdev_confine(v, err, errlen)) || (rc = vcfg_build(v, err, errlen)) ||
	    (rc = vcomp_build(v, err, errlen)) || (rc = vbar_build(v, err, errlen)))
		goto fail;
	vdev_region_share(v);
	vdev_dirty_at_start(v);
	*out = v;
	return 0;
fail:
	vdev_teardown(v);
	return rc;
}

void vcxl_vdev_destroy(struct vcxl_vdev *v)
{
	if (!v)
		return;
	if (v->be->ops->set_irq_handler)
		v->be->ops->set_irq_handler(v->be->dev, NULL, NULL);
	if (v->be->ops->set_dma)
		v->be->ops->set_dma(v->be->dev, NULL, NULL);
	vdev_teardown(v);
}

/* ---- Info ----------------------------------------------------------------- */

static void vdev_get_info(void *dev, struct vcxl_vdev_info *info)
{
	struct vcxl_vdev *v = dev;
	struct vfio_device_info_cap_cxl *c = &info->cxl;

	memset(info, 0, sizeof(*info));
	info->flags = VFIO_DEVICE_FLAGS_PCI | VFIO_DEVICE_FLAGS_RESET | VFIO_DEVICE_FLAGS_CXL;
	info->num_regions = VCXL_VDEV_NUM_REGIONS;
	info->num_irqs = VCXL_VDEV_NUM_IRQS;
	c->header.id = VFIO_DEVICE_INFO_CAP_CXL;
	c->header.version = VCXL_DEVICE_INFO_CAP_CXL_VERSION;
	c->header.next = 0;
	if (v->region->firmware)
		c->flags |= VFIO_CXL_CAP_FIRMWARE_COMMITTED;
	if (v->dev->cap & CXL_DVSEC_CAP_CACHE)
		c->flags |= VFIO_CXL_CAP_CACHE_CAPABLE;
	if (v->variant->noncached)
		c->flags |= VFIO_CXL_CAP_NONCACHED;
	c->hdm_count = (__u8)v->guest_decoders;
	c->hdm_bar = (__u8)v->dev->comp_bar;
	c->region_index = VCXL_VDEV_CXL_REGION;
	c->hdm_offset = v->dev->comp_off + v->comp.hdm.off;
	c->hdm_size = CXL_HDM_CAP_SIZE(v->guest_decoders);
	c->comp_offset = v->dev->comp_off;
	c->comp_size = CXL_COMPONENT_BLOCK_SIZE;
	c->region_size = v->region->size;
}

static int vdev_region_info(void *dev, uint32_t index, struct vcxl_vregion_info *ri)
{
	struct vcxl_vdev *v = dev;

	memset(ri, 0, sizeof(*ri));
	ri->fd = -1;
	switch (index) {
	case VFIO_PCI_BAR0_REGION_INDEX ... VFIO_PCI_BAR5_REGION_INDEX:
		return vbar_region_info(v, index, ri);
	case VFIO_PCI_ROM_REGION_INDEX:
	case VFIO_PCI_VGA_REGION_INDEX:
		return 0; /* absent: size 0 */
	case VFIO_PCI_CONFIG_REGION_INDEX:
		ri->size = VCXL_VDEV_CONFIG_SIZE;
		ri->flags = VFIO_REGION_INFO_FLAG_READ | VFIO_REGION_INFO_FLAG_WRITE;
		return 0;
	case VCXL_VDEV_CXL_REGION:
		ri->size = v->region->size;
		ri->flags = VFIO_REGION_INFO_FLAG_READ | VFIO_REGION_INFO_FLAG_WRITE;
		if (v->region_fd_shared) {
			ri->flags |= VFIO_REGION_INFO_FLAG_MMAP;
			ri->fd = v->region->fd;
			ri->fd_offset = v->region->fd_offset;
		}
		ri->has_type = true;
		ri->type = VFIO_REGION_TYPE_CXL;
		ri->subtype = VFIO_REGION_SUBTYPE_CXL;
		return 0;
	case VCXL_VDEV_COMP_REGION:
		/* the v3/v4 COMP_REGS region: the emulated component block, no mmap */
		ri->size = CXL_COMPONENT_BLOCK_SIZE;
		ri->flags = VFIO_REGION_INFO_FLAG_READ | VFIO_REGION_INFO_FLAG_WRITE;
		ri->has_type = true;
		ri->type = VFIO_REGION_TYPE_CXL;
		ri->subtype = VFIO_REGION_SUBTYPE_CXL_COMP_REGS;
		ri->has_comp = true;
		ri->comp.header.id = VFIO_REGION_INFO_CAP_CXL_COMP_REGS;
		ri->comp.header.version = VCXL_REGION_INFO_CAP_CXL_COMP_REGS_VERSION;
		ri->comp.bar = v->dev->comp_bar;
		ri->comp.hdm_count = v->guest_decoders;
		ri->comp.offset = v->dev->comp_off;
		ri->comp.size = CXL_COMPONENT_BLOCK_SIZE;
		ri->comp.hdm_offset = v->comp.hdm.off;
		ri->comp.hdm_size = CXL_HDM_CAP_SIZE(v->guest_decoders);
		return 0;
	default:
		return -EINVAL;
	}
}

/* ---- Region access -------------------------------------------------------- */

/* The CXL region mapped into the server, MAP_SHARED over the region's fd. */
static uint8_t *cxl_region_map(struct vcxl_vdev *v)
{
	const struct vcxl_region *r = v->region;

	if (!v->region_map && r->fd >= 0) {
		void *p = mmap(NULL, r->size, PROT_READ | PROT_WRITE, MAP_SHARED, r->fd,
			       (off_t)r->fd_offset);
		if (p != MAP_FAILED)
			v->region_map = p;
	}
	return v->region_map;
}

uint8_t *vdev_region_map(struct vcxl_vdev *v)
{
	return cxl_region_map(v);
}

static void *vdev_region_ptr(void *dev, uint32_t index, uint64_t off, size_t len)
{
	struct vcxl_vdev *v = dev;
	const struct vcxl_region *r = v->region;

	if (index != VCXL_VDEV_CXL_REGION || len == 0 || off >= r->size || len > r->size - off)
		return NULL;
	uint8_t *map = cxl_region_map(v);
	return map ? map + off : NULL;
}

static int cxl_region_rw(struct vcxl_vdev *v, bool write, uint64_t off, void *buf, size_t len)
{
	const struct vcxl_region *r = v->region;
	uint8_t *p = buf, *map;

	if (len == 0 || off >= r->size || len > r->size - off)
		return -EINVAL;
	map = cxl_region_map(v);
	/* the client may map the same memory: guarded, so a fault fails this
	 * request (-EFAULT), never the server */
	if (map)
		return write ? vcxl_guarded_memcpy(map + off, buf, len)
			     : vcxl_guarded_memcpy(buf, map + off, len);
	while (len) {
		off_t at = (off_t)(r->fd_offset + off);
		ssize_t n = write ? pwrite(r->fd, p, len, at) : pread(r->fd, p, len, at);
		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			return n < 0 ? -errno : -EIO;
		p += n;
		off += (uint64_t)n;
		len -= (size_t)n;
	}
	return 0;
}

/* The COMP_REGS region: offset = offset in the component block, the same
 * register file as the block inside the BAR. Dword-aligned dwords only, a
 * 64-bit register as one aligned qword (CXL r3.1 8.2.2); else -EINVAL and
 * nothing changed. */
static int comp_region_rw(struct vcxl_vdev *v, bool write, uint64_t off, uint8_t *buf, size_t len)
{
	if (len == 0 || off % sizeof(uint32_t) || len % sizeof(uint32_t) ||
	    off >= CXL_COMPONENT_BLOCK_SIZE || len > CXL_COMPONENT_BLOCK_SIZE - off)
		return -EINVAL;
	return vcomp_access_buf(v, write, (uint32_t)off, buf, len);
}

static int region_rw(struct vcxl_vdev *v, uint32_t index, bool write, uint64_t off, void *buf,
		     size_t len)
{
	if (!buf)
		return -EINVAL;
	switch (index) {
	case VFIO_PCI_BAR0_REGION_INDEX ... VFIO_PCI_BAR5_REGION_INDEX:
		return vbar_rw(v, index, write, off, buf, len);
	case VFIO_PCI_CONFIG_REGION_INDEX:
		return write ? vcfg_write(v, off, buf, len) : vcfg_read(v, off, buf, len);
	case VCXL_VDEV_CXL_REGION:
		return cxl_region_rw(v, write, off, buf, len);
	case VCXL_VDEV_COMP_REGION:
		return comp_region_rw(v, write, off, buf, len);
	default:
		return -EINVAL;
	}
}

/* PCIe r6 6.7.3 / 2.3.2: a device that is gone answers reads with all-ones
 * and drops writes; the guest sees exactly that, not an error. */
static int gone_device(struct vcxl_vdev *v, int rc, bool write, void *buf, size_t len)
{
	if (rc != -ENODEV)
		return rc;
	if (!v->gone_logged) {
		v->gone_logged = true;
		fprintf(stderr,
			"vcxl: device %s is gone: reads return all-ones, writes are dropped\n",
			v->be->ops->name ? v->be->ops->name(v->be->dev) : "?");
	}
	if (!write)
		memset(buf, 0xff, len);
	return 0;
}

static int vdev_region_read(void *dev, uint32_t index, uint64_t off, void *buf, size_t len)
{
	struct vcxl_vdev *v = dev;

	return gone_device(v, region_rw(v, index, false, off, buf, len), false, buf, len);
}

static int vdev_region_write(void *dev, uint32_t index, uint64_t off, const void *buf, size_t len)
{
	struct vcxl_vdev *v = dev;

	return gone_device(v, region_rw(v, index, true, off, (void *)buf, len), true, NULL, len);
}

/* ---- IRQs --------------------------------------------------------------- */

/* INTx is not offered (count 0, Interrupt Pin reads 0), as the vfio-cxl
 * series does for CXL devices; nor are ERR and REQ. MSI/MSI-X as the
 * device has them. */
static int vdev_irq_info(void *dev, uint32_t index, uint32_t *count, uint32_t *flags)
{
	struct vcxl_vdev *v = dev;

	*count = 0;
	*flags = 0;
	switch (index) {
	case VFIO_PCI_INTX_IRQ_INDEX:
	case VFIO_PCI_ERR_IRQ_INDEX:
	case VFIO_PCI_REQ_IRQ_INDEX:
		return 0;
	case VFIO_PCI_MSI_IRQ_INDEX:
	case VFIO_PCI_MSIX_IRQ_INDEX:
		if (v->be->ops->irq_count)
			*count = v->be->ops->irq_count(v->be->dev, index == VFIO_PCI_MSI_IRQ_INDEX
								       ? VCXL_IRQ_MSI
								       : VCXL_IRQ_MSIX);
		*flags = VFIO_IRQ_INFO_EVENTFD | VFIO_IRQ_INFO_NORESIZE;
		return 0;
	default:
		return -EINVAL;
	}
}

static enum vcxl_irq_type irq_type_of(uint32_t index)
{
	return index == VFIO_PCI_MSI_IRQ_INDEX ? VCXL_IRQ_MSI : VCXL_IRQ_MSIX;
}

static int vdev_set_irq_eventfd(void *dev, uint32_t index, uint32_t vector, int fd)
{
	struct vcxl_vdev *v = dev;

	if (!v->be->ops->set_irq_eventfd)
		return -EOPNOTSUPP;
	if (index != VFIO_PCI_MSI_IRQ_INDEX && index != VFIO_PCI_MSIX_IRQ_INDEX)
		return -EINVAL;
	return v->be->ops->set_irq_eventfd(v->be->dev, irq_type_of(index), vector, fd);
}

static int vdev_dma_map(void *dev, uint64_t iova, uint64_t size, void *vaddr, bool write)
{
	struct vcxl_vdev *v = dev;

	if (!v->be->ops->dma_map)
		return -EOPNOTSUPP;
	return v->be->ops->dma_map(v->be->dev, iova, size, vaddr, write);
}

/* Hardware DMA goes through the IOMMU: only a window with an fd is mapped
 * there. The model's goes through set_dma, which reaches every window. */
static bool vdev_dma_needs_fd(void *dev)
{
	struct vcxl_vdev *v = dev;

	return v->be->ops->dma_map != NULL;
}

static int vdev_dma_unmap(void *dev, uint64_t iova, uint64_t size)
{
	struct vcxl_vdev *v = dev;

	if (!v->be->ops->dma_unmap)
		return -EOPNOTSUPP;
	return v->be->ops->dma_unmap(v->be->dev, iova, size);
}

static int vdev_irq_arm(void *dev, uint32_t index, uint32_t vector, bool armed)
{
	struct vcxl_vdev *v = dev;

	/* a VFIO device's MSI-X table is the kernel's: VFIO_DEVICE_SET_IRQS arms it */
	if (v->be->ops->set_irq_eventfd)
		return 0;
	if (index != VFIO_PCI_MSIX_IRQ_INDEX)
		return index == VFIO_PCI_MSI_IRQ_INDEX ? 0 : -EINVAL;
	return vbar_msix_arm(v, vector, armed);
}

static void vdev_set_irq_handler(void *dev, vcxl_irq_fn fn, void *opaque)
{
	struct vcxl_vdev *v = dev;

	if (v->be->ops->set_irq_handler)
		v->be->ops->set_irq_handler(v->be->dev, fn, opaque);
}

static void vdev_set_dma(void *dev, const struct vcxl_dma_ops *ops, void *opaque)
{
	struct vcxl_vdev *v = dev;

	v->dma = ops; /* the server's help for slow steps (pause) */
	v->dma_opaque = opaque;
	if (v->be->ops->set_dma)
		v->be->ops->set_dma(v->be->dev, ops, opaque);
}

/* ---- Reset ---------------------------------------------------------------- */

/*
 * Reset kind x state: the one place that decides what each reset does to the
 * device and the guest's virtual view. docs/reset.md is this table with the
 * reasons; keep both in step.
 */
enum vdev_arm {
	ARM_KEEP,   /* the device's MSI-X entries as they are */
	ARM_REARM,  /* unmask again every vector the client armed */
	ARM_DISARM, /* mask every vector (the client's eventfds are gone) */
};

struct vdev_reset_effect {
	bool device; /* the device's function reset (backend FLR); host region checked */
	bool tenant; /* ... and what an FLR keeps that a guest set (VCXL_RESET_TENANT) */
	enum vdev_dvsec_reset dvsec; /* the virtual CXL Device DVSEC (Control, Lock, ...) */
	bool decoders;		     /* virtual HDM decoders decommitted, Lock-On-Commit cleared */
	bool comp;     /* the rest of the virtual component block (RAS) to reset values */
	bool function; /* the other emulated config registers, the DOE mailbox aborted */
	enum vdev_arm msix;
	bool scrub; /* a new tenant's memory: region and BAR RAM fresh (or zeroed) */
};

static const struct vdev_reset_effect vdev_reset_table[VDEV_RESET_KINDS] = {
    /* PCIe r6 6.6.2: the function's registers to reset values; CXL r3.1 9.5:
     * CXL.cache/CXL.mem state (DVSEC, HDM decoders, RAS) is not affected. The
     * client's eventfds are the VMM's: its vectors stay armed. */
    [VDEV_RESET_FLR] = {.device = true, .function = true, .msix = ARM_REARM},
    /* CXL r3.1 9.7: non-sticky CXL.cache/CXL.mem state to reset values (the
     * decoders and their Lock-On-Commit; the DVSEC but CONFIG_LOCK and the
     * fields it locks, 8.1.3.6), sticky RAS status kept; CXL.io (the
     * function) untouched. */
    [VDEV_RESET_CXL] = {.dvsec = DVSEC_CXL_RESET, .decoders = true},
    /* VFIO_DEVICE_RESET: the VMM resets the device with the machine, a
     * Conventional Reset (CXL r3.1 9.1.1; CONFIG_LOCK cleared, 8.1.3.6): the
     * system reset flow (9.3) through PERST# without auxiliary power, sticky
     * state cleared too. The VMM sets its IRQs up again. */
    [VDEV_RESET_VFIO] = {.device = true,
			 .dvsec = DVSEC_CONVENTIONAL,
			 .decoders = true,
			 .comp = true,
			 .function = true,
			 .msix = ARM_REARM},
    /* vfio-user spec "Client disconnection": the device state is kept for a
     * client that reconnects; only the client's eventfds go. */
    [VDEV_RESET_GONE_KEEP] = {.msix = ARM_DISARM},
    /* A clean device for the next tenant: as a fresh server would offer it. */
    [VDEV_RESET_GONE_RESET] = {.device = true,
			       .tenant = true,
			       .dvsec = DVSEC_CONVENTIONAL,
			       .decoders = true,
			       .comp = true,
			       .function = true,
			       .msix = ARM_DISARM,
			       .scrub = true},
};

/* Zero [*off, *off + VDEV_SCRUB_STEP) of the region, *off moved past it: a
 * hole punched in its file (memfd, tmpfs, ext4) where that works, else
 * written over through the mapping. */
static int vdev_region_scrub_step(struct vcxl_vdev *v, uint64_t *off)
{
	const struct vcxl_region *r = v->region;
	uint64_t n = r->size - *off < VDEV_SCRUB_STEP ? r->size - *off : VDEV_SCRUB_STEP;
	uint8_t *map;

	if (r->fd < 0 || fallocate(r->fd, FALLOC_FL_PUNCH_HOLE | FALLOC_FL_KEEP_SIZE,
				   (off_t)(r->fd_offset + *off), (off_t)n)) {
		if (!(map = cxl_region_map(v)))
			return -EIO;
		/* the client may map it too: guarded */
		int rc = vcxl_guarded_memset(map + *off, 0, n);
		if (rc)
			return rc;
	}
	*off += n;
	return 0;
}

/* Zero the whole region, a step at a time, the server's loop serving
 * everyone else in between (pause). */
static int vdev_region_scrub(struct vcxl_vdev *v)
{
	for (uint64_t off = 0; off < v->region->size;) {
		int rc = vdev_region_scrub_step(v, &off);

		if (rc)
			return rc;
		if (off < v->region->size && v->dma && v->dma->pause)
			v->dma->pause(v->dma_opaque);
	}
	return 0;
}

/*
 * A fresh, zeroed object for the region (backend.h hpa_renew): a departed
 * client that kept a mapping or an fd of the old one holds memory detached
 * from the device, so it neither reads what the next guest writes nor writes
 * into it; the old object is emptied and closed off the loop (release.h), so
 * a client that kept it pins none of the server's memory, and the server's
 * own mapping of it goes (remapped on first use). Where the memory cannot
 * be replaced (a --backing file, real device memory) it is zeroed in place,
 * where a departed client that was trusted with its fd (--trust-client)
 * still maps it. Where it could be but is not now (no fd left: EMFILE), the
 * old object stays the device's, untouched, and the fresh one is owed
 * (renew_pending): the device serves nobody until it is made
 * (vdev_prepare); zeroing the old object in place would share it.
 */
static int vdev_renew_region(struct vcxl_vdev *v)
{
	int old = v->region->fd >= 0 ? dup(v->region->fd) : -1;
	int rc = v->region->fd >= 0 && old < 0 ? -errno : vcxl_region_renew(v->region);

	if (!rc) {
		if (v->region_map)
			munmap(v->region_map, v->region->size);
		v->region_map = NULL;
		v->renew_pending = false;
		vcxl_release_memory(old);
		return 0;
	}
	if (old >= 0)
		close(old);
	if (rc == -EOPNOTSUPP)
		return vdev_region_scrub(v);
	v->renew_pending = true;
	return rc;
}

/* A new tenant's memory: the region and every BAR memory the backend handed
 * out (bar_renew) fresh. */
static int vdev_new_tenant_memory(struct vcxl_vdev *v)
{
	int rc = vdev_renew_region(v);
	int r2 = vbar_renew(v, false);

	return rc ? rc : r2;
}

int vdev_reset_apply(struct vcxl_vdev *v, enum vdev_reset kind)
{
	const struct vdev_reset_effect *e = &vdev_reset_table[kind];
	int rc = 0;

	v->resets_by_kind[kind]++;
	if (e->device) {
		if (v->be->ops->reset)
			rc = v->be->ops->reset(v->be->dev,
					       e->tenant ? VCXL_RESET_TENANT : VCXL_RESET_FLR);
		v->flrs++;
	}
	if (e->dvsec != DVSEC_KEEP || e->function)
		vcfg_reset(v, e->dvsec, e->function);
	/* a refused mailbox command's Unsupported answer goes with the function */
	if (e->device || e->function)
		vbar_mbox_reset(v);
	if (e->decoders || e->comp)
		vcomp_reset(v, e->comp);
	if (!v->be->ops->set_irq_eventfd) { /* else the kernel owns the table */
		if (e->msix == ARM_REARM)
			vbar_msix_rearm(v);
		else if (e->msix == ARM_DISARM)
			vbar_msix_disarm_all(v);
	}
	/* PCIe FLR leaves CXL.mem state alone [spec]; if a device lost its
	 * decoder anyway, put the host's region back. */
	if (e->device && vcxl_region_verify(v->region)) {
		const struct vcxl_region *r = v->region;
		int r2 = vcxl_region_restore(v->region, NULL, 0);
		rc = rc ? rc : r2;
		v->region_restores += !r2;
		if (!r2)
			fprintf(stderr,
				"vcxl: %s: host decoder %u [0x%llx, +0x%llx) was cleared by the "
				"reset: programmed and committed again\n",
				v->be->ops->name(v->be->dev), r->decoder,
				(unsigned long long)r->hpa, (unsigned long long)r->size);
	}
	if (e->device) {
		/* a device that forgot its confinement in the reset gets it back */
		int r3 = vdev_confine(v, NULL, 0);
		rc = rc ? rc : r3;
	}
	if (e->scrub) {
		int r2 = vdev_new_tenant_memory(v);
		rc = rc ? rc : r2;
	}
	return rc;
}

static int vdev_reset(void *dev)
{
	return vdev_reset_apply(dev, VDEV_RESET_VFIO);
}

void vcxl_vdev_get_stats(const struct vcxl_vdev *v, struct vcxl_vdev_stats *st)
{
	st->resets = v->flrs;
	st->region_restores = v->region_restores;
	st->flr = v->resets_by_kind[VDEV_RESET_FLR];
	st->cxl_reset = v->resets_by_kind[VDEV_RESET_CXL];
	st->device_reset = v->resets_by_kind[VDEV_RESET_VFIO];
	st->disconnect =
	    v->resets_by_kind[VDEV_RESET_GONE_KEEP] + v->resets_by_kind[VDEV_RESET_GONE_RESET];
}

static void vdev_counters(void *dev, struct vcxl_dev_counters *out)
{
	const struct vcxl_vdev *v = dev;

	out->resets[VCXL_DEV_RESET_VFIO] = v->resets_by_kind[VDEV_RESET_VFIO];
	out->resets[VCXL_DEV_RESET_FLR] = v->resets_by_kind[VDEV_RESET_FLR];
	out->resets[VCXL_DEV_RESET_CXL] = v->resets_by_kind[VDEV_RESET_CXL];
	out->resets[VCXL_DEV_RESET_DISCONNECT_KEEP] = v->resets_by_kind[VDEV_RESET_GONE_KEEP];
	out->resets[VCXL_DEV_RESET_DISCONNECT] = v->resets_by_kind[VDEV_RESET_GONE_RESET];
}

void vcxl_vdev_set_on_disconnect(struct vcxl_vdev *v, enum vcxl_on_disconnect policy)
{
	v->cfg.on_disconnect = policy;
}

static int vdev_client_gone(void *dev)
{
	struct vcxl_vdev *v = dev;
	int rc = vdev_reset_apply(v, v->cfg.on_disconnect == VCXL_ON_DISCONNECT_KEEP
					 ? VDEV_RESET_GONE_KEEP
					 : VDEV_RESET_GONE_RESET);

	if (rc)
		fprintf(stderr, "vcxl: %s: reset for the next client failed: %s\n",
			v->be->ops->name(v->be->dev), strerror(-rc));
	return rc;
}

/* What the hand-over to the next tenant still owes, one bounded step per
 * call: the fresh objects a failed hand-over could not make, then the
 * scrub of memory an earlier run of the server left (vdev_dirty_at_start). */
static int vdev_prepare(void *dev)
{
	struct vcxl_vdev *v = dev;
	int rc = v->renew_pending ? vdev_renew_region(v) : 0;
	int r2 = vbar_renew(v, true);

	if (rc || r2)
		return rc ? rc : r2;
	if (!v->scrub_pending)
		return 0;
	if ((rc = vdev_region_scrub_step(v, &v->scrub_off)))
		return rc;
	if (v->scrub_off < v->region->size)
		return -EINPROGRESS;
	v->scrub_pending = false;
	fprintf(stderr, "vcxl: %s: region zeroed (0x%llx bytes) before the first client\n",
		v->be->ops->name(v->be->dev), (unsigned long long)v->region->size);
	return 0;
}

/* The vdev has no timers of its own (virtual resets and commits complete
 * synchronously): the device's deadlines (the model's) are the backend's. */
static int vdev_poll(void *dev)
{
	struct vcxl_vdev *v = dev;

	return v->be->ops->poll ? v->be->ops->poll(v->be->dev) : -1;
}

const struct vcxl_dev_ops vcxl_vdev_ops = {
    .get_info = vdev_get_info,
    .region_info = vdev_region_info,
    .region_read = vdev_region_read,
    .region_write = vdev_region_write,
    .region_ptr = vdev_region_ptr,
    .irq_info = vdev_irq_info,
    .set_irq_handler = vdev_set_irq_handler,
    .irq_arm = vdev_irq_arm,
    .set_irq_eventfd = vdev_set_irq_eventfd,
    .dma_map = vdev_dma_map,
    .dma_unmap = vdev_dma_unmap,
    .dma_needs_fd = vdev_dma_needs_fd,
    .set_dma = vdev_set_dma,
    .reset = vdev_reset,
    .client_gone = vdev_client_gone,
    .prepare = vdev_prepare,
    .counters = vdev_counters,
    .poll = vdev_poll,
    .mig_flags = vmig_flags,
    .mig_quiesce = vmig_quiesce,
    .mig_save = vmig_save,
    .mig_load = vmig_load,
    .mig_check = vmig_check,
    .mig_max_size = vmig_max_size,
    .mig_dirty = vmig_dirty,
    .mig_dirty_pending = vmig_dirty_pending,
    .mig_dirty_report = vmig_dirty_report,
};

struct vcxl_backend *vcxl_vdev_backend(struct vcxl_vdev *v)
{
	return v->be;
}

void vcxl_vdev_set_hdm_notify(struct vcxl_vdev *v, vcxl_hdm_notify_fn fn, void *opaque)
{
	v->hdm_notify = fn;
	v->hdm_notify_opaque = opaque;
}

struct vcxl_cxl_dev *vcxl_vdev_host_dev(struct vcxl_vdev *v)
{
	return v->dev;
}

const struct vcxl_region *vcxl_vdev_region(struct vcxl_vdev *v)
{
	return v->region;
}

const struct vcxl_variant *vcxl_vdev_variant(struct vcxl_vdev *v)
{
	return v->variant;
}
