/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * vfio-user wire format (QEMU docs/interop/vfio-user.rst, as QEMU 10.2 speaks
 * it; see docs and /work/shared/notes/vfio-user-protocol.md). All integers are
 * host-endian. Payload structs that match the kernel's are taken from
 * <linux/vfio.h> (vfio_device_info, vfio_region_info, vfio_irq_info,
 * vfio_irq_set); the rest are declared here, packed, with their sizes asserted.
 */
#ifndef VCXL_VFIO_USER_H
#define VCXL_VFIO_USER_H

#include <stddef.h>
#include <stdint.h>
#include <linux/vfio.h>

/* Protocol version this implementation speaks (QEMU 10.2 proposes 0.0) */
#define VFIO_USER_MAJOR 0
#define VFIO_USER_MINOR 0

/* vfio-user spec "Header" */
struct vfio_user_hdr {
	uint16_t msg_id;
	uint16_t command;
	uint32_t msg_size; /* whole message, header included */
	uint32_t flags;
	uint32_t error; /* positive errno when flags has VFIO_USER_F_ERROR */
} __attribute__((packed));
_Static_assert(sizeof(struct vfio_user_hdr) == 16, "vfio-user header is 16 bytes");

#define VFIO_USER_F_TYPE_MASK  0xfu
#define VFIO_USER_F_TYPE_CMD   0x0u
#define VFIO_USER_F_TYPE_REPLY 0x1u
#define VFIO_USER_F_NO_REPLY   (1u << 4)
#define VFIO_USER_F_ERROR      (1u << 5)
#define VFIO_USER_F_KNOWN      (VFIO_USER_F_TYPE_MASK | VFIO_USER_F_NO_REPLY | VFIO_USER_F_ERROR)

/* vfio-user spec "Commands" */
enum vfio_user_command {
	VFIO_USER_VERSION = 1,
	VFIO_USER_DMA_MAP = 2,
	VFIO_USER_DMA_UNMAP = 3,
	VFIO_USER_DEVICE_GET_INFO = 4,
	VFIO_USER_DEVICE_GET_REGION_INFO = 5,
	VFIO_USER_DEVICE_GET_REGION_IO_FDS = 6,
	VFIO_USER_DEVICE_GET_IRQ_INFO = 7,
	VFIO_USER_DEVICE_SET_IRQS = 8,
	VFIO_USER_REGION_READ = 9,
	VFIO_USER_REGION_WRITE = 10,
	VFIO_USER_DMA_READ = 11,
	VFIO_USER_DMA_WRITE = 12,
	VFIO_USER_DEVICE_RESET = 13,
	VFIO_USER_REGION_WRITE_MULTI = 15,
	VFIO_USER_DEVICE_FEATURE = 16,
	VFIO_USER_MIG_DATA_READ = 17,
	VFIO_USER_MIG_DATA_WRITE = 18,
	VFIO_USER_MAX_COMMAND,
};

/* VERSION: {major, minor} then a NUL-terminated JSON object */
struct vfio_user_version {
	uint16_t major;
	uint16_t minor;
	char caps[];
} __attribute__((packed));

/* Capability defaults (spec) and the limits QEMU 10.2 accepts */
#define VFIO_USER_DEF_MAX_MSG_FDS  1
#define VFIO_USER_DEF_MAX_XFER	   (1u << 20)
#define VFIO_USER_DEF_MAX_DMA_MAPS 65535
#define VFIO_USER_DEF_PGSIZES	   4096ull
#define VFIO_USER_QEMU_MAX_MSG_FDS 16
#define VFIO_USER_QEMU_MAX_XFER	   (64u << 20)

/* DMA_MAP request (argsz = 32) */
struct vfio_user_dma_map {
	uint32_t argsz;
	uint32_t flags;	 /* VFIO_USER_F_DMA_REGION_READ/WRITE */
	uint64_t offset; /* offset of the region in the passed fd */
	uint64_t addr;	 /* IOVA */
	uint64_t size;
} __attribute__((packed));
_Static_assert(sizeof(struct vfio_user_dma_map) == 32, "DMA_MAP is 32 bytes");

#define VFIO_USER_F_DMA_REGION_READ  (1u << 0)
#define VFIO_USER_F_DMA_REGION_WRITE (1u << 1)
/* libvfio-user extensions (not in QEMU's spec): accepted and ignored */
#define VFIO_USER_F_DMA_REGION_LIBVFU_EXT ((1u << 2) | (1u << 3))

/* DMA_UNMAP request (argsz = 24); flags may carry VFIO_DMA_UNMAP_FLAG_ALL */
struct vfio_user_dma_unmap {
	uint32_t argsz;
	uint32_t flags;
	uint64_t addr;
	uint64_t size;
} __attribute__((packed));
_Static_assert(sizeof(struct vfio_user_dma_unmap) == 24, "DMA_UNMAP is 24 bytes");

/* DEVICE_GET_INFO: vfio-user carries the first 16 bytes of vfio_device_info
 * (argsz, flags, num_regions, num_irqs). A client that allows more gets
 * cap_offset and a pad word (as in current <linux/vfio.h>; Linux 6.1 headers
 * lack the pad) and the capability chain at +24, 8-byte aligned. */
struct vfio_user_device_info {
	uint32_t argsz;
	uint32_t flags;
	uint32_t num_regions;
	uint32_t num_irqs;
	uint32_t cap_offset;
	uint32_t pad;
} __attribute__((packed));
_Static_assert(sizeof(struct vfio_user_device_info) == 24, "device info layout");
#define VFIO_USER_DEVICE_INFO_MIN 16u

/* GET_REGION_INFO: struct vfio_region_info (32 bytes) + capability chain */
_Static_assert(sizeof(struct vfio_region_info) == 32, "vfio_region_info layout");
/* GET_IRQ_INFO: struct vfio_irq_info (16 bytes) */
_Static_assert(sizeof(struct vfio_irq_info) == 16, "vfio_irq_info layout");
/* SET_IRQS: struct vfio_irq_set (20 bytes) + BOOL data; eventfds in SCM_RIGHTS */
_Static_assert(sizeof(struct vfio_irq_set) == 20, "vfio_irq_set layout");

/* REGION_READ / REGION_WRITE */
struct vfio_user_region_access {
	uint64_t offset;
	uint32_t region;
	uint32_t count;
	uint8_t data[];
} __attribute__((packed));
_Static_assert(sizeof(struct vfio_user_region_access) == 16, "region access is 16 bytes");

/*
 * DMA_READ / DMA_WRITE as QEMU 10.1/10.2 put them on the wire (its
 * VFIOUserDMARW is {u64 offset; u32 count; data[]} with 4 bytes of tail
 * padding): data at +12, the message 4 bytes longer than 12 + count. The spec
 * and libvfio-user use a u64 count with data at +16; they do not interoperate.
 */
struct vfio_user_dma_rw {
	uint64_t addr;
	uint32_t count;
	uint8_t data[];
} __attribute__((packed));
#define VFIO_USER_DMA_RW_HDR 12u
#define VFIO_USER_DMA_RW_PAD 4u
_Static_assert(sizeof(struct vfio_user_dma_rw) == VFIO_USER_DMA_RW_HDR, "dma rw head");

/* REGION_WRITE_MULTI: wr_cnt then wr_cnt entries of 24 bytes */
#define VFIO_USER_MULTI_DATA 8
#define VFIO_USER_MULTI_MAX  200
struct vfio_user_wr_multi_entry {
	uint64_t offset;
	uint32_t region;
	uint32_t count;
	uint8_t data[VFIO_USER_MULTI_DATA];
} __attribute__((packed));
_Static_assert(sizeof(struct vfio_user_wr_multi_entry) == 24, "write multi entry");

struct vfio_user_wr_multi {
	uint64_t wr_cnt;
	struct vfio_user_wr_multi_entry wrs[];
} __attribute__((packed));

/* ---- Migration v2 (vfio-user spec "VFIO_USER_DEVICE_FEATURE",
 * "VFIO_USER_MIG_DATA_READ/WRITE"; docs/migration.md) ---- */
/* DEVICE_FEATURE: struct vfio_device_feature {argsz, flags} then data
 * (<linux/vfio.h>); the data of MIGRATION and MIG_DEVICE_STATE are the
 * kernel's structs. Debian 12's <linux/vfio.h> (Linux 6.1) predates the
 * features below: their numbers are Linux 6.2+'s. */
#ifndef VFIO_MIGRATION_PRE_COPY
#define VFIO_MIGRATION_PRE_COPY (1 << 2)
#endif
#ifndef VFIO_DEVICE_FEATURE_DMA_LOGGING_START
#define VFIO_DEVICE_FEATURE_DMA_LOGGING_START  6
#define VFIO_DEVICE_FEATURE_DMA_LOGGING_STOP   7
#define VFIO_DEVICE_FEATURE_DMA_LOGGING_REPORT 8
#endif
#ifndef VFIO_DEVICE_FEATURE_MIG_DATA_SIZE
#define VFIO_DEVICE_FEATURE_MIG_DATA_SIZE 9
struct vfio_device_feature_mig_data_size {
	__aligned_u64 stop_copy_length;
};
#endif
/* enum vfio_device_mig_state of Linux 6.2+ (PRE_COPY states, unused here) */
#define VFIO_USER_DEVICE_STATE_PRE_COPY	    6
#define VFIO_USER_DEVICE_STATE_PRE_COPY_P2P 7
#define VFIO_USER_DEVICE_NUM_STATES	    8
#define VFIO_USER_FEATURE_KNOWN_FLAGS                                                              \
	(VFIO_DEVICE_FEATURE_MASK | VFIO_DEVICE_FEATURE_GET | VFIO_DEVICE_FEATURE_SET |            \
	 VFIO_DEVICE_FEATURE_PROBE)
_Static_assert(sizeof(struct vfio_device_feature) == 8, "DEVICE_FEATURE head is 8 bytes");
_Static_assert(sizeof(struct vfio_device_feature_migration) == 8, "MIGRATION data");
_Static_assert(sizeof(struct vfio_device_feature_mig_state) == 8, "MIG_DEVICE_STATE data");

/* DMA_LOGGING_START/STOP data: the ranges follow inline (the kernel's struct
 * has a pointer there instead) */
struct vfio_user_dma_logging_control {
	uint64_t page_size;
	uint32_t num_ranges; /* 0: log every write */
	uint32_t reserved;
} __attribute__((packed));
_Static_assert(sizeof(struct vfio_user_dma_logging_control) == 16, "logging control");
struct vfio_user_dma_logging_range {
	uint64_t iova, length;
} __attribute__((packed));
_Static_assert(sizeof(struct vfio_user_dma_logging_range) == 16, "logging range");
/* DMA_LOGGING_REPORT data: the reply appends the bitmap (u64s) at +24 */
struct vfio_user_dma_logging_report {
	uint64_t iova, length, page_size;
} __attribute__((packed));
_Static_assert(sizeof(struct vfio_user_dma_logging_report) == 24, "logging report");

/* MIG_DATA_READ request {argsz, size}; reply and MIG_DATA_WRITE request
 * {argsz, size, data} */
struct vfio_user_mig_data {
	uint32_t argsz;
	uint32_t size;
	uint8_t data[];
} __attribute__((packed));
_Static_assert(sizeof(struct vfio_user_mig_data) == 8, "MIG_DATA head is 8 bytes");

const char *vfio_user_command_name(unsigned command);

#endif /* VCXL_VFIO_USER_H */
