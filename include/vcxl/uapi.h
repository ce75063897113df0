/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The vfio-cxl UABI as vcxl serves it over vfio-user (see docs/uapi.md).
 * Numbers follow the vfio-cxl RFC v2 series; the capability layout follows
 * its v3 successor with explicit fields and no implicit padding.
 */
#ifndef VCXL_UAPI_H
#define VCXL_UAPI_H

#include <linux/types.h>
#include <linux/vfio.h>

#ifndef VFIO_DEVICE_FLAGS_CXL
#define VFIO_DEVICE_FLAGS_CXL (1 << 9) /* device supports CXL */
#endif
#ifndef VFIO_DEVICE_INFO_CAP_CXL
#define VFIO_DEVICE_INFO_CAP_CXL 6
#endif
#define VCXL_DEVICE_INFO_CAP_CXL_VERSION 1

/*
 * The CXL regions' type: a PCI vendor region type (VFIO_REGION_TYPE_PCI_VENDOR_TYPE)
 * of the CXL vendor id 0x1e98, i.e. 0x80001e98, as RFC v2 patch 07 registers it
 * (vfio_pci_core_register_dev_region(PCI_VENDOR_ID_CXL | VENDOR_TYPE, SUBTYPE_CXL)).
 */
#define VCXL_PCI_VENDOR_ID_CXL 0x1e98
/* VFIO_REGION_TYPE_PCI_VENDOR_TYPE as an unsigned constant: <linux/vfio.h>
 * spells it (1 << 31), which overflows int (UBSan: left shift into the sign bit). */
#define VCXL_REGION_TYPE_PCI_VENDOR 0x80000000u
#define VFIO_REGION_TYPE_CXL	    (VCXL_REGION_TYPE_PCI_VENDOR | VCXL_PCI_VENDOR_ID_CXL)
#ifndef VFIO_REGION_SUBTYPE_CXL
#define VFIO_REGION_SUBTYPE_CXL 1 /* the CXL (HDM) region: mmappable memory */
#endif
#ifndef VFIO_REGION_SUBTYPE_CXL_COMP_REGS
#define VFIO_REGION_SUBTYPE_CXL_COMP_REGS 2 /* component registers: read/write, no mmap */
#endif

/*
 * The component-registers region's geometry, a region-info capability as the
 * series' v4 direction puts it (VFIO_REGION_INFO_CAP_CXL_COMP_REGS on the
 * COMP_REGS region: the component BAR, the block's offset and size). Upstream
 * has not fixed its number; vcxl uses 6, the first id <linux/vfio.h> leaves
 * free (see docs/uapi.md).
 */
#ifndef VFIO_REGION_INFO_CAP_CXL_COMP_REGS
#define VFIO_REGION_INFO_CAP_CXL_COMP_REGS 6
#endif
#define VCXL_REGION_INFO_CAP_CXL_COMP_REGS_VERSION 1

struct vcxl_region_info_cap_cxl_comp_regs {
	struct vfio_info_cap_header header; /* id VFIO_REGION_INFO_CAP_CXL_COMP_REGS, version 1 */
	__u32 bar;			    /* BAR index holding the component block */
	__u32 hdm_count;		    /* HDM decoders the guest sees */
	__u64 offset;			    /* component block, from the start of the BAR */
	__u64 size;			    /* bytes of the block (= the region's size) */
	__u64 hdm_offset; /* HDM Decoder Capability, from the start of the block */
	__u64 hdm_size;	  /* 0x10 + 0x20 * hdm_count */
};

_Static_assert(sizeof(struct vcxl_region_info_cap_cxl_comp_regs) == 48, "no padding holes");

/* vfio_device_info_cap_cxl.flags */
#define VFIO_CXL_CAP_FIRMWARE_COMMITTED (1u << 0) /* region was committed by firmware */
#define VFIO_CXL_CAP_CACHE_CAPABLE	(1u << 1) /* device is CXL.cache capable */
#define VFIO_CXL_CAP_NONCACHED		(1u << 2) /* map the CXL region uncached */

struct vfio_device_info_cap_cxl {
	struct vfio_info_cap_header header; /* id VFIO_DEVICE_INFO_CAP_CXL, version 1 */
	__u32 flags;			    /* VFIO_CXL_CAP_* */
	__u8 hdm_count;			    /* HDM decoders the guest sees */
	__u8 hdm_bar;			    /* BAR index holding the component block */
	__u16 reserved;
	__u32 region_index; /* device region index of the CXL region */
	__u32 reserved2;
	__u64 hdm_offset;  /* HDM decoder capability, from the start of the BAR */
	__u64 hdm_size;	   /* 0x10 + 0x20 * hdm_count */
	__u64 comp_offset; /* component block, from the start of the BAR */
	__u64 comp_size;   /* 64 KiB */
	__u64 region_size; /* bytes of the CXL region */
};

_Static_assert(sizeof(struct vfio_device_info_cap_cxl) == 64, "no padding holes");

#endif /* VCXL_UAPI_H */
