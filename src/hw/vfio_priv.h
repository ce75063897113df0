/* SPDX-License-Identifier: BSD-3-Clause */
/* The VFIO backend's state, shared by vfio.c (opening) and vfio_ops.c (operations). */
#ifndef VCXL_HW_VFIO_PRIV_H
#define VCXL_HW_VFIO_PRIV_H

#include <limits.h>

#include "hw_priv.h"

#define HW_MAX_WR_RANGES 16
#define HW_MAX_VECTORS	 2048 /* PCI 3.0 6.8.2: MSI-X Table Size is at most 2048 */
#define HW_NUM_IRQ_TYPES 3    /* INTx, MSI, MSI-X */
#define HW_CFG_SIZE	 4096u

struct hw_range {
	uint32_t off, len;
};

struct vcxl_hw_vfio {
	struct vcxl_backend be;
	char bdf[16];
	char name[96];
	const char *iommu_name;

	int dev_fd; /* VFIO device fd */
	int cfg_fd; /* sysfs raw config space, -1 = none */
	int container_fd, group_fd, iommufd;
	uint32_t ioas_id;

	struct vcxl_hw_region region[VCXL_HW_NUM_REGIONS];
	unsigned irq_count[VCXL_HW_NUM_IRQS];
	/* the mmappable areas of each BAR, mapped at the first access to it */
	struct hw_bar_map {
		bool tried;
		unsigned n;
		struct {
			uint64_t off, size;
			volatile uint8_t *p;
		} area[VCXL_BAR_MAX_AREAS];
	} bar_map[VCXL_NUM_BARS];

	/* extended config space the backend writes through sysfs: the CXL DVSECs
	 * and DOE mailboxes (the host core's business); the rest is refused */
	unsigned nwr;
	struct hw_range wr[HW_MAX_WR_RANGES];
	uint32_t dvsec; /* CXL Device DVSEC, 0 = none */

	char devmem[PATH_MAX];
	int mem_fd;
	int dax_fd;
	uint64_t dax_base, dax_size;
	/* the last range hpa_map gave out through the device-DAX */
	uint64_t dax_map_hpa, dax_map_size;
	bool win_set;
	uint64_t win_base, win_size;

	vcxl_irq_fn irq_fn;
	void *irq_opaque;
	const struct vcxl_dma_ops *dma;
	void *dma_opaque;
	/* the DMA_MAP being pinned (one at a time: the device has one owner) */
	struct hw_pin {
		uint64_t iova, size;
		void *vaddr;
		bool write;
	} pin;
	int *efd[HW_NUM_IRQ_TYPES];		/* dup'ed eventfds per vector, -1 unset */
	unsigned irq_enabled[HW_NUM_IRQ_TYPES]; /* vectors enabled in the kernel */
};

extern const struct vcxl_backend_ops vcxl_hw_vfio_ops;

/* Build the backend over dev_fd/cfg_fd (takes both), scan the extended
 * capabilities. Shared by vcxl_hw_vfio_open and vcxl_hw_vfio_from_layout. */
int hw_vfio_init(struct vcxl_hw_vfio *v, char *err, size_t errlen);
void hw_vfio_free(struct vcxl_hw_vfio *v);

#endif /* VCXL_HW_VFIO_PRIV_H */
