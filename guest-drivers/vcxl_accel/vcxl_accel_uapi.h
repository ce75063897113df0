/* SPDX-License-Identifier: GPL-2.0 WITH Linux-syscall-note */
/*
 * vcxl_accel: the user interface of the guest driver for vcxl's accelerator
 * model. One character device per function, /dev/vcxl_accelN:
 *
 *   ioctl VCXL_ACCEL_INFO   the CXL region the driver found and its counters
 *   ioctl VCXL_ACCEL_FILL   fill [dst, dst + len) of the region with a pattern
 *   ioctl VCXL_ACCEL_COPY   copy [src, src + len) to [dst, dst + len)
 *   mmap                    the region itself (offset 0 is its first byte)
 *
 * Offsets are from the start of the region (HPA range start). A job is
 * submitted through the device's doorbell and completes by MSI-X; the ioctl
 * returns when the device signalled it: 0 (done), -EIO (the device reported
 * an error), -ETIMEDOUT (no interrupt within timeout_ms), -EINTR (a reset
 * aborted it).
 */
#ifndef VCXL_ACCEL_UAPI_H
#define VCXL_ACCEL_UAPI_H

#include <linux/ioctl.h>
#include <linux/types.h>

struct vcxl_accel_info {
	__u64 hpa_start;  /* the region's host physical address (the guest's) */
	__u64 hpa_size;	  /* its size in bytes */
	__u64 engine_dpa; /* the device's DPA of region offset 0 */
	__u64 jobs_done;  /* the device's completed-job counter */
	__u64 irqs;	  /* completion interrupts taken */
	__u64 resets;	  /* function resets survived while bound */
};

struct vcxl_accel_job {
	__u64 dst;	      /* offset in the region */
	__u64 src;	      /* offset in the region (COPY) */
	__u64 len;	      /* bytes */
	__u64 pattern;	      /* FILL: byte i is byte (i % 8) of the pattern */
	__u32 timeout_ms;     /* 0: the driver's default */
	__u32 irq_latency_us; /* out: doorbell to interrupt */
};

#define VCXL_ACCEL_MAGIC 0xcd
#define VCXL_ACCEL_INFO	 _IOR(VCXL_ACCEL_MAGIC, 0, struct vcxl_accel_info)
#define VCXL_ACCEL_FILL	 _IOWR(VCXL_ACCEL_MAGIC, 1, struct vcxl_accel_job)
#define VCXL_ACCEL_COPY	 _IOWR(VCXL_ACCEL_MAGIC, 2, struct vcxl_accel_job)

#endif /* VCXL_ACCEL_UAPI_H */
