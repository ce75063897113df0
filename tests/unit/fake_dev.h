/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * A fake device behind struct vcxl_dev_ops (vfio_cxl.h) for protocol tests and fuzzing:
 * BAR0 64 KiB (memfd, mmappable except the first 4 KiB), BAR2 16 KiB trapped
 * with a tiny DMA engine, config space 4 KiB, a typed region 9, MSI-X x4.
 */
#ifndef VCXL_TESTS_FAKE_DEV_H
#define VCXL_TESTS_FAKE_DEV_H

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "server/server.h"

#define FAKE_BAR0_SIZE	 0x10000
#define FAKE_BAR2_SIZE	 0x4000
#define FAKE_CFG_SIZE	 0x1000
#define FAKE_R9_SIZE	 0x100000
#define FAKE_NUM_REGIONS 10
/* BAR2 registers: a write of 1 to DOORBELL copies LEN bytes SRC->DST via DMA
 * (or fills DST with PATTERN if OP == 1) then raises MSI-X VECTOR. */
#define FAKE_SRC      0x10
#define FAKE_DST      0x18
#define FAKE_LEN      0x20
#define FAKE_OP	      0x28
#define FAKE_DOORBELL 0x30
#define FAKE_STATUS   0x34 /* 0 ok, else -errno of the last job */
#define FAKE_VECTOR   0x38

struct fake_dev {
	int bar0_fd, r9_fd;
	uint8_t *bar0;
	uint8_t bar2[FAKE_BAR2_SIZE];
	uint8_t cfg[FAKE_CFG_SIZE];
	const struct vcxl_dma_ops *dma;
	void *dma_opaque;
	vcxl_irq_fn irq;
	void *irq_opaque;
	unsigned resets, gone, jobs;
	/* a device that does its own DMA and signals eventfds (VFIO-like) */
	unsigned iommu_maps, iommu_unmaps;
	uint64_t last_map_iova, last_map_size;
	bool last_map_write;
	int irq_fd_vec1; /* -2: never set */
	unsigned irq_fd_calls;
};

static inline void fake_get_info(void *dev, struct vcxl_vdev_info *info)
{
	memset(info, 0, sizeof(*info));
	info->flags = VFIO_DEVICE_FLAGS_PCI | VFIO_DEVICE_FLAGS_RESET | VFIO_DEVICE_FLAGS_CXL;
	info->num_regions = FAKE_NUM_REGIONS;
	info->num_irqs = 5;
	info->cxl.header.id = VFIO_DEVICE_INFO_CAP_CXL;
	info->cxl.header.version = VCXL_DEVICE_INFO_CAP_CXL_VERSION;
	info->cxl.hdm_count = 1;
	info->cxl.hdm_bar = 0;
	info->cxl.region_index = 9;
	info->cxl.hdm_offset = 0x1000 + 0x400;
	info->cxl.hdm_size = 0x30;
	info->cxl.comp_offset = 0;
	info->cxl.comp_size = 0x1000;
	info->cxl.region_size = FAKE_R9_SIZE;
}

static inline int fake_region_info(void *dev, uint32_t index, struct vcxl_vregion_info *ri)
{
	struct fake_dev *f = dev;

	memset(ri, 0, sizeof(*ri));
	ri->fd = -1;
	switch (index) {
	case VFIO_PCI_BAR0_REGION_INDEX:
		ri->size = FAKE_BAR0_SIZE;
		ri->flags = VFIO_REGION_INFO_FLAG_READ | VFIO_REGION_INFO_FLAG_WRITE |
			    VFIO_REGION_INFO_FLAG_MMAP;
		ri->fd = f->bar0_fd;
		ri->nr_sparse = 1;
		ri->sparse[0].offset = 0x1000;
		ri->sparse[0].size = FAKE_BAR0_SIZE - 0x1000;
		return 0;
	case VFIO_PCI_BAR2_REGION_INDEX:
		ri->size = FAKE_BAR2_SIZE;
		ri->flags = VFIO_REGION_INFO_FLAG_READ | VFIO_REGION_INFO_FLAG_WRITE;
		return 0;
	case VFIO_PCI_CONFIG_REGION_INDEX:
		ri->size = FAKE_CFG_SIZE;
		ri->flags = VFIO_REGION_INFO_FLAG_READ | VFIO_REGION_INFO_FLAG_WRITE;
		return 0;
	case 9:
		ri->size = FAKE_R9_SIZE;
		ri->flags = VFIO_REGION_INFO_FLAG_READ | VFIO_REGION_INFO_FLAG_WRITE |
			    VFIO_REGION_INFO_FLAG_MMAP;
		ri->fd = f->r9_fd;
		ri->has_type = true;
		ri->type = VFIO_REGION_TYPE_CXL;
		ri->subtype = VFIO_REGION_SUBTYPE_CXL;
		return 0;
	default:
		return -EINVAL; /* absent */
	}
}

static inline uint8_t *fake_region_ptr(struct fake_dev *f, uint32_t index, uint64_t off, size_t len)
{
	uint64_t size;
	uint8_t *base;

	switch (index) {
	case 0:
		size = FAKE_BAR0_SIZE, base = f->bar0;
		break;
	case 2:
		size = FAKE_BAR2_SIZE, base = f->bar2;
		break;
	case 7:
		size = FAKE_CFG_SIZE, base = f->cfg;
		break;
	default:
		return NULL;
	}
	if (off > size || len > size - off)
		return NULL;
	return base + off;
}

static inline int fake_region_read(void *dev, uint32_t index, uint64_t off, void *buf, size_t len)
{
	struct fake_dev *f = dev;
	uint8_t *p;

	if (index == 9) {
		if (off > FAKE_R9_SIZE || len > FAKE_R9_SIZE - off)
			return -EINVAL;
		return pread(f->r9_fd, buf, len, (off_t)off) == (ssize_t)len ? 0 : -EIO;
	}
	p = fake_region_ptr(f, index, off, len);
	if (!p)
		return -EINVAL;
	memcpy(buf, p, len);
	return 0;
}

static inline uint64_t fake_reg64(struct fake_dev *f, unsigned off)
{
	uint64_t v;

	memcpy(&v, f->bar2 + off, 8);
	return v;
}

static inline void fake_run_job(struct fake_dev *f)
{
	uint64_t len = fake_reg64(f, FAKE_LEN);
	int32_t st = 0;
	uint8_t *buf = malloc(len ? len : 1);

	if (!buf || !f->dma) {
		st = -ENODEV;
	} else if (fake_reg64(f, FAKE_OP) == 1) {
		memset(buf, 0xa5, len);
		st = f->dma->write(f->dma_opaque, fake_reg64(f, FAKE_DST), buf, len);
	} else {
		st = f->dma->read(f->dma_opaque, fake_reg64(f, FAKE_SRC), buf, len);
		if (!st)
			st = f->dma->write(f->dma_opaque, fake_reg64(f, FAKE_DST), buf, len);
	}
	free(buf);
	memcpy(f->bar2 + FAKE_STATUS, &st, 4);
	f->jobs++;
	if (f->irq)
		f->irq(f->irq_opaque, VCXL_IRQ_MSIX, f->bar2[FAKE_VECTOR]);
}

static inline int fake_region_write(void *dev, uint32_t index, uint64_t off, const void *buf,
				    size_t len)
{
	struct fake_dev *f = dev;
	uint8_t *p;

	if (index == 9) {
		if (off > FAKE_R9_SIZE || len > FAKE_R9_SIZE - off)
			return -EINVAL;
		return pwrite(f->r9_fd, buf, len, (off_t)off) == (ssize_t)len ? 0 : -EIO;
	}
	p = fake_region_ptr(f, index, off, len);
	if (!p)
		return -EINVAL;
	memcpy(p, buf, len);
	if (index == 2 && off == FAKE_DOORBELL && len >= 1 && (*(const uint8_t *)buf & 1))
		fake_run_job(f);
	return 0;
}

static inline int fake_irq_info(void *dev, uint32_t index, uint32_t *count, uint32_t *flags)
{
	static const uint32_t counts[5] = {0, 1, 4, 0, 0};

	if (index >= 5)
		return -EINVAL;
	*count = counts[index];
	*flags = VFIO_IRQ_INFO_EVENTFD | (index ? VFIO_IRQ_INFO_NORESIZE : 0);
	return 0;
}

static inline void fake_set_irq_handler(void *dev, vcxl_irq_fn fn, void *opaque)
{
	struct fake_dev *f = dev;

	f->irq = fn;
	f->irq_opaque = opaque;
}

static inline void fake_set_dma(void *dev, const struct vcxl_dma_ops *ops, void *opaque)
{
	struct fake_dev *f = dev;

	f->dma = ops;
	f->dma_opaque = opaque;
}

static inline int fake_reset(void *dev)
{
	struct fake_dev *f = dev;

	f->resets++;
	memset(f->bar2, 0, sizeof(f->bar2));
	return 0;
}

static inline int fake_client_gone(void *dev)
{
	((struct fake_dev *)dev)->gone++;
	return 0;
}

static inline int fake_poll(void *dev)
{
	return -1;
}

static const struct vcxl_dev_ops fake_dev_ops = {
    .get_info = fake_get_info,
    .region_info = fake_region_info,
    .region_read = fake_region_read,
    .region_write = fake_region_write,
    .irq_info = fake_irq_info,
    .set_irq_handler = fake_set_irq_handler,
    .set_dma = fake_set_dma,
    .reset = fake_reset,
    .client_gone = fake_client_gone,
    .poll = fake_poll,
};

static inline int fake_dma_map(void *dev, uint64_t iova, uint64_t size, void *vaddr, bool write)
{
	struct fake_dev *f = dev;
	if (!vaddr)
		return -EINVAL;
	f->iommu_maps++;
	f->last_map_iova = iova;
	f->last_map_size = size;
	f->last_map_write = write;
	return iova >= (1ull << 48) ? -ENOSPC : 0; /* beyond the "IOMMU" aperture */
}

static inline int fake_dma_unmap(void *dev, uint64_t iova, uint64_t size)
{
	struct fake_dev *f = dev;
	f->iommu_unmaps++;
	return 0;
}

static inline int fake_set_irq_eventfd(void *dev, uint32_t index, uint32_t vector, int fd)
{
	struct fake_dev *f = dev;
	f->irq_fd_calls++;
	if (index == VFIO_PCI_MSIX_IRQ_INDEX && vector == 1)
		f->irq_fd_vec1 = fd;
	return 0;
}

static inline bool fake_dma_needs_fd(void *dev)
{
	(void)dev;
	return true; /* an IOMMU mapping is its only way in */
}

/* The same device with the hardware (VFIO-like) operations. */
static const struct vcxl_dev_ops fake_hw_dev_ops = {
    .get_info = fake_get_info,
    .region_info = fake_region_info,
    .region_read = fake_region_read,
    .region_write = fake_region_write,
    .irq_info = fake_irq_info,
    .set_irq_handler = fake_set_irq_handler,
    .set_irq_eventfd = fake_set_irq_eventfd,
    .dma_map = fake_dma_map,
    .dma_unmap = fake_dma_unmap,
    .dma_needs_fd = fake_dma_needs_fd,
    .set_dma = fake_set_dma,
    .reset = fake_reset,
    .client_gone = fake_client_gone,
    .poll = fake_poll,
};

static inline int fake_dev_init(struct fake_dev *f)
{
	f->irq_fd_vec1 = -2;
	memset(f, 0, sizeof(*f));
	f->bar0_fd = memfd_create("fake-bar0", MFD_CLOEXEC);
	f->r9_fd = memfd_create("fake-r9", MFD_CLOEXEC);
	if (f->bar0_fd < 0 || f->r9_fd < 0 || ftruncate(f->bar0_fd, FAKE_BAR0_SIZE) ||
	    ftruncate(f->r9_fd, FAKE_R9_SIZE))
		return -errno;
	f->bar0 = mmap(NULL, FAKE_BAR0_SIZE, PROT_READ | PROT_WRITE, MAP_SHARED, f->bar0_fd, 0);
	if (f->bar0 == MAP_FAILED)
		return -errno;
	f->cfg[0] = 0x86;
	f->cfg[1] = 0x80;
	return 0;
}

static inline void fake_dev_fini(struct fake_dev *f)
{
	munmap(f->bar0, FAKE_BAR0_SIZE);
	close(f->bar0_fd);
	close(f->r9_fd);
}

#endif
