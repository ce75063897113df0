/* SPDX-License-Identifier: BSD-3-Clause */
/* Internals of the accelerator model, shared by accel.c, accel_cfg.c and accel_engine.c. */
#ifndef VCXL_MODEL_ACCEL_H
#define VCXL_MODEL_ACCEL_H

#include <stdbool.h>
#include <stdint.h>

#include "cxl/cxl_mbox.h"
#include "cxl/cxl_spec.h"
#include "model/model.h"

/* Config space layout of the model */
#define MODEL_CFG_SIZE	    0x1000u
#define MODEL_PCIE_CAP	    0x40u
#define MODEL_PCIE_CAP_SIZE 0x3cu /* PCIe capability version 2 */
#define MODEL_MSIX_CAP	    0x80u
#define MODEL_DVSEC_DEVICE  0x100u
#define MODEL_DVSEC_REGLOC  0x140u
#define MODEL_DVSEC_GPF	    0x160u
#define MODEL_DVSEC_FLEXBUS 0x180u
#define MODEL_DOE	    0x1a0u
#define MODEL_REVISION	    0x01u
#define MODEL_COMP_BAR	    0u
#define MODEL_CTRL_BAR	    2u
#define MODEL_CDAT_MAX	    256u
#define MODEL_DMA_CHUNK	    0x10000u
/* Bytes a job moves per step: the doorbell runs the first step, every
 * vcxl_model_poll one more, so a job never holds the caller longer than
 * this much work (a few ms). */
#define MODEL_JOB_STEP (4u << 20)
/* Memory_Info_Valid is set at once; CXL reset completes synchronously. */
#define MODEL_RESET_TMO_ENC 0 /* 10 ms */
/* Component block storage: only the CXL.cache/mem range (the rest reads 0) */
#define MODEL_COMP_RF_SIZE CXL_CM_SIZE

/* The job engine's one job, latched at the doorbell (accel_engine.c). */
struct model_job {
	uint32_t op, flags;
	uint64_t src, dst, len, pattern;
	unsigned vector;
	uint64_t done; /* bytes moved so far */
	bool active;   /* STATUS.BUSY */
	bool backward; /* an overlapping DPA copy upwards: chunks from the end */
	bool stepping; /* a step is under way (waiting for its DMA) */
};

/* Device memory: extents of files mapped at their DPA in m->mem (devmem.c) */
struct model_ext {
	uint64_t dpa, size, fd_off;
	int fd;	     /* owned by the extent */
	bool shared; /* a region object: exactly this range, sealed, may go to a client */
	bool remap;  /* (carving) a new object still to map */
};

struct model_devmem {
	struct model_ext *ext; /* sorted by dpa, covering [0, mem_size) */
	unsigned n, cap;
};

struct vcxl_model {
	struct vcxl_model_cfg cfg;
	struct vcxl_backend be;
	char name[48];
	bool removed;

	struct vcxl_regfile cfgrf;  /* 4 KiB config space */
	struct vcxl_regfile comprf; /* CM range of the component block */
	struct vcxl_regfile bar2rf; /* job engine + MSI-X */
	struct vcxl_dvsec_device dvsec;
	struct vcxl_comp comp;
	struct vcxl_doe doe;
	uint8_t cdat[MODEL_CDAT_MAX];
	int cdat_len;

	uint64_t comp_off; /* component block offset in BAR0 */
	int bar0_fd;
	uint8_t *bar0; /* BAR0 backing (component block part unused) */

	int mem_fd; /* the memfd or --backing file device memory was created on */
	uint64_t mem_size;
	uint8_t *mem; /* all device memory, by DPA (no page touched until used) */
	struct model_devmem dm;
	/* the job engine's DPA window (host-owned, kept across resets) */
	uint64_t dpa_win_base, dpa_win_size;

	uint64_t active_t0_ms; /* Memory_Active asserts active_delay_ms after this */
	bool active_latched;   /* Memory_Active reached since active_t0_ms (no clock read) */
	uint64_t jobs_done;
	struct model_job job;
	uint64_t job_gen; /* counts engine resets: a step that waited sees its job aborted */

	vcxl_irq_fn irq_fn;
	void *irq_opaque;
	const struct vcxl_dma_ops *dma;
	void *dma_opaque;

	/* Type-3 personality only (cfg.kind == VCXL_MODEL_TYPE3): the memory
	 * device register block in BAR2 and the label storage area */
	struct vcxl_regfile memdevrf;
	struct vcxl_memdev memdev;
	uint8_t lsa[VCXL_MODEL_T3_LSA_SIZE];

	/* migration (model_mig.c) */
	bool mig_paused;	       /* quiesced: no job step, no background command */
	uint64_t *dirty;	       /* a bit per VCXL_MIG_PAGE the engine wrote; NULL: off */
	struct model_mig_stage *stage; /* a stream being loaded */
};

uint64_t model_now_ms(void);
uint8_t *model_mem_map(struct vcxl_model *m);
bool model_mem_active(struct vcxl_model *m);
void model_restart_active(struct vcxl_model *m);
void model_mem_clear(struct vcxl_model *m);

/* devmem.c: device memory as memory objects */
int model_devmem_open(struct vcxl_model *m);
void model_devmem_close(struct vcxl_model *m);
int model_devmem_carve(struct vcxl_model *m, uint64_t dpa, uint64_t size, int *fd);
void model_devmem_clear(struct vcxl_model *m);
int model_devmem_renew(struct vcxl_model *m, uint64_t dpa, uint64_t size, int *fd);
int model_memfd_sealed(const char *name, uint64_t size);
int model_memfd_swap(const char *name, void *at, uint64_t size, int *fd);
const char *model_fd_unshareable(const struct vcxl_model *m, int fd);

/* accel_cfg.c: config space, FLR, CXL reset */
int model_cfg_layout(struct vcxl_model *m);
void model_flr(struct vcxl_model *m);
void model_tenant_reset(struct vcxl_model *m);
int model_cxl_reset(struct vcxl_model *m);
void model_refresh_ranges(struct vcxl_model *m);
uint16_t model_msix_ctrl(const struct vcxl_model *m);

/* type3.c: the Type-3 personality */
bool model_is_type3(const struct vcxl_model *m);
uint16_t model_device_id(const struct vcxl_model *m);
uint32_t model_class(const struct vcxl_model *m);
void model_type3_dvsec_cfg(const struct vcxl_model *m, struct vcxl_dvsec_device_cfg *dc);
int model_type3_layout(struct vcxl_model *m);
void model_type3_fini(struct vcxl_model *m);
/* BAR2 access at or above VCXL_MODEL_BAR2_SIZE (memory device block, or 0). */
int model_type3_bar2_access(struct vcxl_model *m, uint64_t off, unsigned len, uint64_t *val,
			    bool wr);
void model_type3_flr(struct vcxl_model *m);
void model_type3_forget(struct vcxl_model *m);
void model_type3_poll(struct vcxl_model *m);

/* model_mig.c: migration (backend.h mig_*) */
struct vcxl_mig_buf;
int model_mig_quiesce(void *dev, bool stop);
int model_mig_save(void *dev, struct vcxl_mig_buf *b);
int model_mig_stage(void *dev, uint32_t type, const uint8_t *p, uint64_t len, char *err,
		    size_t errlen);
int model_mig_verify(void *dev, char *err, size_t errlen);
int model_mig_commit(void *dev, char *err, size_t errlen);
void model_mig_abort(void *dev);
int model_mig_dirty(void *dev, bool on);
int model_mig_dirty_get(void *dev, uint64_t dpa, uint64_t len, uint64_t *bitmap);
int model_mig_dirty_clear(void *dev, uint64_t dpa, uint64_t len, const uint64_t *bitmap);
void model_mig_fini(struct vcxl_model *m);
/* The engine wrote [dpa, dpa + len) of device memory. */
void model_mig_mark(struct vcxl_model *m, uint64_t dpa, uint64_t len);

/* accel_engine.c: BAR2 */
int model_bar2_layout(struct vcxl_model *m);
void model_engine_reset(struct vcxl_model *m);
/* A job as latched could run here (bounds, flags, vector; DMA ops not needed). */
bool model_job_valid(const struct vcxl_model *m, const struct model_job *j);
/* Move the running job on by up to MODEL_JOB_STEP bytes: true while it still runs. */
bool model_engine_step(struct vcxl_model *m);
void model_msix_update(struct vcxl_model *m);
/* Raise MSI-X vector v: delivered if enabled and unmasked, else pending in the PBA. */
void model_msix_raise(struct vcxl_model *m, unsigned v);

#endif /* VCXL_MODEL_ACCEL_H */
