/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The built-in device model: a CXL Type-2 accelerator (vendor 0x8086, device
 * 0x0d94), the "hardware" vcxl serves when no real device is used. It is a
 * backend (backend.h) like any real device.
 */
#ifndef VCXL_MODEL_H
#define VCXL_MODEL_H

#include <stdbool.h>
#include <stdint.h>

#include "vfio-cxl/backend.h"

#define VCXL_MODEL_VENDOR 0x8086
#define VCXL_MODEL_DEVICE 0x0d94
/* The Type-3 personality answers with QEMU's cxl-type3 device id */
#define VCXL_MODEL_TYPE3_DEVICE 0x0d93

/* Which device the model is. The zero value is the accelerator. */
enum vcxl_model_kind {
	VCXL_MODEL_ACCEL = 0, /* Type-2 accelerator, class 0x120000 */
	VCXL_MODEL_TYPE3,     /* Type-3 memory expander, class 0x050210, mailbox */
};

enum vcxl_comp_at {
	VCXL_COMP_AT_START = 0,
	VCXL_COMP_AT_MIDDLE,
	VCXL_COMP_AT_END,
};

struct vcxl_model_cfg {
	uint64_t mem_size; /* device memory (DPA capacity), multiple of 256 MiB; 0 = 256 MiB */
	unsigned decoders; /* physical HDM decoders 1..10; 0 = 1 */
	enum vcxl_comp_at comp_at;
	bool firmware_committed;     /* start with decoder 0 committed by "firmware" */
	uint64_t fw_hpa_base;	     /* HPA firmware used (256 MiB aligned) */
	const char *backing;	     /* file backing device memory; NULL = memfd */
	unsigned active_delay_ms;    /* Memory_Active asserts this long after reset */
	unsigned active_timeout_enc; /* Memory_Active_Timeout encoding 0..4 */

	/* which personality; the zero value is the accelerator */
	enum vcxl_model_kind kind;
};

struct vcxl_model;

int vcxl_model_create(const struct vcxl_model_cfg *cfg, struct vcxl_model **out);
void vcxl_model_destroy(struct vcxl_model *m);
struct vcxl_backend *vcxl_model_backend(struct vcxl_model *m);

/* Device memory (DPA space): the fd, its size, and a host mapping (for tests). */
int vcxl_model_mem_fd(struct vcxl_model *m, int *fd, uint64_t *size);
void *vcxl_model_mem(struct vcxl_model *m);
/* Simulate surprise removal: reads all-ones, writes dropped, -ENODEV. */
void vcxl_model_remove(struct vcxl_model *m);
/* Advance time-based state (Memory_Active delay) and the running job by one
 * step of at most a few MiB. Called by the event loop; returns the ms until
 * the next deadline, 0 while a job runs, or -1 for none. */
int vcxl_model_poll(struct vcxl_model *m);

/* Layout facts (tests and self-demo use them; the host core finds them itself). */
#define VCXL_MODEL_BAR0_SIZE	(4u << 20) /* component block + device RAM */
#define VCXL_MODEL_BAR2_SIZE	0x4000	   /* accelerator control + MSI-X */
#define VCXL_MODEL_CTRL_BAR	2	   /* job engine, MSI-X */
#define VCXL_MODEL_MSIX_VECTORS 4
#define VCXL_MODEL_MSIX_TABLE	0x2000 /* in BAR2 */
/* The PBA shares the table's 4 KiB page, which holds no other register (PCIe r6.0
 * 7.7.2 allows both structures in one page; only other registers must stay out of
 * it [spec]). A VMM overlays both on the BAR: one page split between regions
 * instead of two, and QEMU builds each such page again (a subpage) in every flat
 * view at every memory transaction, a migration's load included. */
#define VCXL_MODEL_MSIX_PBA 0x2800 /* in BAR2 */

/* Type-3: BAR2 also holds the CXL memory device registers (Register Locator
 * RBI 3) at a 64 KiB boundary; the job engine registers are absent (read 0).
 * The label storage area is VCXL_MODEL_T3_LSA_SIZE bytes (not persistent). */
#define VCXL_MODEL_T3_BAR2_SIZE	    0x20000
#define VCXL_MODEL_T3_MEMDEV_OFF    0x10000 /* in BAR2 */
#define VCXL_MODEL_T3_PAYLOAD_SHIFT 11	    /* 2 KiB mailbox payload */
#define VCXL_MODEL_T3_MBOX_MSGNUM   1	    /* MSI-X vector of background completion */
#define VCXL_MODEL_T3_LSA_SIZE	    0x400
#define VCXL_MODEL_T3_FW_REVISION   "vcxl-t3 0.1"
#define VCXL_MODEL_CLASS_ACCEL	    0x120000u /* processing accelerator */
#define VCXL_MODEL_CLASS_TYPE3	    0x050210u /* memory controller, CXL, CXL memory device */

enum vcxl_model_kind vcxl_model_get_kind(const struct vcxl_model *m);
/* BAR2 size of this model (VCXL_MODEL_BAR2_SIZE or VCXL_MODEL_T3_BAR2_SIZE). */
uint64_t vcxl_model_bar2_size(const struct vcxl_model *m);

/* Accelerator control registers in BAR2 (the job engine). One job at a time:
 * a DOORBELL write of GO latches the JOB_* registers, clears DONE and ERROR and
 * sets BUSY; the job then runs in steps (the server serves everyone else in
 * between) and at the end BUSY clears, DONE or ERROR sets, JOBS_DONE counts and,
 * with ACCEL_JOBF_IRQ, JOB_VECTOR fires. A job that fails its checks (bounds,
 * flags, vector) ends at once with ERROR. While BUSY, a doorbell is ignored
 * and JOB_* writes only prepare the next job. An FLR (and so a device reset)
 * aborts a running job: no completion, no interrupt, device or guest memory
 * written as far as it got, the registers at reset values; a CXL Reset
 * (CXL.cache/CXL.mem only) leaves the engine alone. */
#define ACCEL_REG_ID	      0x00 /* RO: "VCXL" */
#define ACCEL_REG_VERSION     0x04 /* RO */
#define ACCEL_REG_JOB_OP      0x08 /* RW: ACCEL_OP_* */
#define ACCEL_REG_JOB_FLAGS   0x0c /* RW: ACCEL_JOBF_* */
#define ACCEL_REG_JOB_SRC     0x10 /* RW 64: DPA or IOVA, per flags */
#define ACCEL_REG_JOB_DST     0x18 /* RW 64 */
#define ACCEL_REG_JOB_LEN     0x20 /* RW 64: bytes */
#define ACCEL_REG_JOB_PATTERN 0x28 /* RW 64: fill pattern */
#define ACCEL_REG_DOORBELL    0x30 /* W: write 1 to start */
#define ACCEL_REG_STATUS      0x34 /* RO + RW1C done/error */
#define ACCEL_REG_JOB_VECTOR  0x38 /* RW: MSI-X vector raised on completion */
#define ACCEL_REG_JOBS_DONE   0x3c /* RO: completed job counter */
/* The job engine's DPA window: DPA jobs outside [base, base + size) end in
 * ERROR without touching memory. Host-owned: the host confines the engine
 * to the exposed region (the vfio-cxl variant programs it and drops the
 * guest's writes); kept across FLR and CXL reset, all device memory at
 * power-on. */
#define ACCEL_REG_DPA_WIN_BASE 0x40 /* RW 64 */
#define ACCEL_REG_DPA_WIN_SIZE 0x48 /* RW 64 */
#define ACCEL_REG_DPA_WIN_END  0x50
#define ACCEL_ID_VALUE	       0x4c584356u /* "VCXL" little endian */
#define ACCEL_VERSION_VALUE    0x00010000u
#define ACCEL_OP_NOP	       0
#define ACCEL_OP_FILL	       1
#define ACCEL_OP_COPY	       2
#define ACCEL_JOBF_SRC_HOST    (1u << 0) /* src is a DMA (guest) address */
#define ACCEL_JOBF_DST_HOST    (1u << 1) /* dst is a DMA (guest) address */
#define ACCEL_JOBF_IRQ	       (1u << 2) /* raise JOB_VECTOR on completion */
#define ACCEL_STATUS_BUSY      (1u << 0) /* RO: a job runs */
#define ACCEL_STATUS_DONE      (1u << 1) /* RW1C */
#define ACCEL_STATUS_ERROR     (1u << 2) /* RW1C */
#define ACCEL_DOORBELL_GO      (1u << 0)

#endif /* VCXL_MODEL_H */
