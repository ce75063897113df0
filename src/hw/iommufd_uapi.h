/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The iommufd and VFIO cdev UAPI (Linux 6.6+) for building against older
 * kernel headers (Debian 12 ships 6.1's, which have neither). The numbers and
 * layouts are the kernel's ABI (include/uapi/linux/iommufd.h, vfio.h); the
 * system headers win when they have them.
 */
#ifndef VCXL_HW_IOMMUFD_UAPI_H
#define VCXL_HW_IOMMUFD_UAPI_H

#include <linux/types.h>
#include <linux/vfio.h>
#include <sys/ioctl.h>

#if defined(__has_include)
#if __has_include(<linux/iommufd.h>)
#include <linux/iommufd.h>
#endif
#endif

#ifndef IOMMU_IOAS_ALLOC
#define IOMMUFD_TYPE	       (';')
#define IOMMUFD_CMD_DESTROY    0x80
#define IOMMUFD_CMD_IOAS_ALLOC 0x81
#define IOMMUFD_CMD_IOAS_MAP   0x85
#define IOMMUFD_CMD_IOAS_UNMAP 0x86

struct iommu_destroy {
	__u32 size;
	__u32 id;
};
#define IOMMU_DESTROY _IO(IOMMUFD_TYPE, IOMMUFD_CMD_DESTROY)

struct iommu_ioas_alloc {
	__u32 size;
	__u32 flags;
	__u32 out_ioas_id;
};
#define IOMMU_IOAS_ALLOC _IO(IOMMUFD_TYPE, IOMMUFD_CMD_IOAS_ALLOC)

enum iommufd_ioas_map_flags {
	IOMMU_IOAS_MAP_FIXED_IOVA = 1 << 0,
	IOMMU_IOAS_MAP_WRITEABLE = 1 << 1,
	IOMMU_IOAS_MAP_READABLE = 1 << 2,
};

struct iommu_ioas_map {
	__u32 size;
	__u32 flags;
	__u32 ioas_id;
	__u32 __reserved;
	__aligned_u64 user_va;
	__aligned_u64 length;
	__aligned_u64 iova;
};
#define IOMMU_IOAS_MAP _IO(IOMMUFD_TYPE, IOMMUFD_CMD_IOAS_MAP)

struct iommu_ioas_unmap {
	__u32 size;
	__u32 ioas_id;
	__aligned_u64 iova;
	__aligned_u64 length;
};
#define IOMMU_IOAS_UNMAP _IO(IOMMUFD_TYPE, IOMMUFD_CMD_IOAS_UNMAP)
#endif /* IOMMU_IOAS_ALLOC */

#ifndef VFIO_DEVICE_BIND_IOMMUFD
struct vfio_device_bind_iommufd {
	__u32 argsz;
	__u32 flags;
	__s32 iommufd;
	__u32 out_devid;
};
#define VFIO_DEVICE_BIND_IOMMUFD _IO(VFIO_TYPE, VFIO_BASE + 18)

struct vfio_device_attach_iommufd_pt {
	__u32 argsz;
	__u32 flags;
	__u32 pt_id;
};
#define VFIO_DEVICE_ATTACH_IOMMUFD_PT _IO(VFIO_TYPE, VFIO_BASE + 19)
#endif /* VFIO_DEVICE_BIND_IOMMUFD */

#endif /* VCXL_HW_IOMMUFD_UAPI_H */
