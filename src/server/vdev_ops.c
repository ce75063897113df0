// SPDX-License-Identifier: BSD-3-Clause
/* struct vcxl_dev_ops bound to the vfio-cxl core (vfio_cxl.h) and the model's timers. */
#include <string.h>

#include "vcxl/model.h"
#include "vcxl/host_cxl.h"
#include "vcxl/server.h"

static struct vcxl_vdev *sdev_vdev(void *dev)
{
	return ((struct vcxl_sdev *)dev)->vdev;
}

static void sdev_get_info(void *dev, struct vcxl_vdev_info *info)
{
	vcxl_vdev_get_info(sdev_vdev(dev), info);
}

static int sdev_region_info(void *dev, uint32_t index, struct vcxl_vregion_info *ri)
{
	return vcxl_vdev_region_info(sdev_vdev(dev), index, ri);
}

static int sdev_region_read(void *dev, uint32_t index, uint64_t off, void *buf, size_t len)
{
	return vcxl_vdev_region_read(sdev_vdev(dev), index, off, buf, len);
}

static int sdev_region_write(void *dev, uint32_t index, uint64_t off, const void *buf, size_t len)
{
	return vcxl_vdev_region_write(sdev_vdev(dev), index, off, buf, len);
}

static void *sdev_region_ptr(void *dev, uint32_t index, uint64_t off, size_t len)
{
	return vcxl_vdev_region_ptr(sdev_vdev(dev), index, off, len);
}

static int sdev_irq_info(void *dev, uint32_t index, uint32_t *count, uint32_t *flags)
{
	return vcxl_vdev_irq_info(sdev_vdev(dev), index, count, flags);
}

static void sdev_set_irq_handler(void *dev, vcxl_irq_fn fn, void *opaque)
{
	vcxl_vdev_set_irq_handler(sdev_vdev(dev), fn, opaque);
}

static int sdev_irq_arm(void *dev, uint32_t index, uint32_t vector, bool armed)
{
	return vcxl_vdev_irq_arm(sdev_vdev(dev), index, vector, armed);
}

static int sdev_set_irq_eventfd(void *dev, uint32_t index, uint32_t vector, int fd)
{
	return vcxl_vdev_set_irq_eventfd(sdev_vdev(dev), index, vector, fd);
}

static int sdev_dma_map(void *dev, uint64_t iova, uint64_t size, void *vaddr, bool write)
{
	return vcxl_vdev_dma_map(sdev_vdev(dev), iova, size, vaddr, write);
}

static int sdev_dma_unmap(void *dev, uint64_t iova, uint64_t size)
{
	return vcxl_vdev_dma_unmap(sdev_vdev(dev), iova, size);
}

static void sdev_set_dma(void *dev, const struct vcxl_dma_ops *ops, void *opaque)
{
	vcxl_vdev_set_dma(sdev_vdev(dev), ops, opaque);
}

static int sdev_reset(void *dev)
{
	struct vcxl_vdev *v = sdev_vdev(dev);
	struct vcxl_vdev_stats before, after;

	vcxl_vdev_get_stats(v, &before);
	int rc = vcxl_vdev_reset(v);
	vcxl_vdev_get_stats(v, &after);
	if (after.region_restores != before.region_restores) {
		const struct vcxl_region *r = vcxl_vdev_region(v);
		vcxl_log(VCXL_LOG_INFO,
			 "host decoder %u [0x%llx, +0x%llx) was cleared by the reset: "
			 "programmed and committed again",
			 r->decoder, (unsigned long long)r->hpa, (unsigned long long)r->size);
	}
	return rc;
}

static void sdev_client_gone(void *dev)
{
	struct vcxl_sdev *s = dev;
	int rc = vcxl_vdev_client_gone(s->vdev, s->on_disconnect);

	if (rc)
		vcxl_log(VCXL_LOG_WARN, "reset for the next client failed: %s", strerror(-rc));
}

static int sdev_poll(void *dev)
{
	struct vcxl_sdev *s = dev;
	int t = -1;

	if (s->model)
		t = vcxl_model_poll(s->model);
	return vcxl_min_timeout(t, vcxl_vdev_poll(s->vdev));
}

const struct vcxl_dev_ops vcxl_sdev_ops = {
    .get_info = sdev_get_info,
    .region_info = sdev_region_info,
    .region_read = sdev_region_read,
    .region_write = sdev_region_write,
    .region_ptr = sdev_region_ptr,
    .irq_info = sdev_irq_info,
    .set_irq_handler = sdev_set_irq_handler,
    .irq_arm = sdev_irq_arm,
    .set_irq_eventfd = sdev_set_irq_eventfd,
    .dma_map = sdev_dma_map,
    .dma_unmap = sdev_dma_unmap,
    .set_dma = sdev_set_dma,
    .reset = sdev_reset,
    .client_gone = sdev_client_gone,
    .poll = sdev_poll,
};
