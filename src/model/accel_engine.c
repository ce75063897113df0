// SPDX-License-Identifier: BSD-3-Clause
/* Accelerator model BAR2: the job engine (FILL/COPY over DPA and DMA) and MSI-X table/PBA. */
#include <errno.h>
#include <linux/pci_regs.h>
#include <string.h>

#include "accel.h"
#include "../common/sigbus_guard.h"

#define JOB_OP_MASK	0xffu
#define JOB_FLAGS_MASK	(ACCEL_JOBF_SRC_HOST | ACCEL_JOBF_DST_HOST | ACCEL_JOBF_IRQ)
#define JOB_VECTOR_MASK 0x7ffu /* an MSI-X table index */
#define STATUS_W1C	(ACCEL_STATUS_DONE | ACCEL_STATUS_ERROR)
#define MSIX_ADDR_LO_RW VCXL_GENMASK(31, 2)
#define MSIX_TABLE_END	(VCXL_MODEL_MSIX_TABLE + VCXL_MODEL_MSIX_VECTORS * PCI_MSIX_ENTRY_SIZE)

/* ---- MSI-X (PCI r3.0 6.8.2) ------------------------------------------ */

static uint32_t msix_vctrl(uint32_t v)
{
	return VCXL_MODEL_MSIX_TABLE + v * PCI_MSIX_ENTRY_SIZE + PCI_MSIX_ENTRY_VECTOR_CTRL;
}

static bool msix_deliverable(const struct vcxl_model *m, unsigned v)
{
	uint16_t ctrl = model_msix_ctrl(m);
	return (ctrl & PCI_MSIX_FLAGS_ENABLE) && !(ctrl & PCI_MSIX_FLAGS_MASKALL) &&
	       !(vcxl_rf_get32(&m->bar2rf, msix_vctrl(v)) & PCI_MSIX_ENTRY_CTRL_MASKBIT) &&
	       m->irq_fn;
}

static void msix_pending(struct vcxl_model *m, unsigned v, bool on)
{
	uint32_t off = VCXL_MODEL_MSIX_PBA + (v / 32) * 4;
	vcxl_rf_update32(&m->bar2rf, off, 1u << (v % 32), on ? 1u << (v % 32) : 0);
}

/* A masked (or disabled) vector is remembered in the PBA and sent on unmask. */
void model_msix_raise(struct vcxl_model *m, unsigned v)
{
	if (v >= VCXL_MODEL_MSIX_VECTORS)
		return;
	if (msix_deliverable(m, v))
		m->irq_fn(m->irq_opaque, VCXL_IRQ_MSIX, v);
	else
		msix_pending(m, v, true);
}

void model_msix_update(struct vcxl_model *m)
{
	for (unsigned v = 0; v < VCXL_MODEL_MSIX_VECTORS; v++) {
		uint32_t pba = vcxl_rf_get32(&m->bar2rf, VCXL_MODEL_MSIX_PBA + (v / 32) * 4);
		if ((pba & (1u << (v % 32))) && msix_deliverable(m, v)) {
			msix_pending(m, v, false);
			m->irq_fn(m->irq_opaque, VCXL_IRQ_MSIX, v);
		}
	}
}

static void msix_table_write(void *opaque, struct vcxl_regfile *rf, uint32_t dw_off, uint32_t old,
			     uint32_t val)
{
	model_msix_update(opaque);
}

/* ---- job engine --------------------------------------------------------- */

/*
 * One job at a time, in steps (src/model/model.h has the register
 * contract): the doorbell latches the job registers, clears DONE/ERROR, sets
 * BUSY and runs the first step; each vcxl_model_poll runs one more of at most
 * MODEL_JOB_STEP bytes, so a job over all device memory never holds the
 * server's loop for more than one step. At the end BUSY clears, DONE or ERROR
 * sets, JOBS_DONE counts and the job's MSI-X vector fires. A doorbell while
 * BUSY is ignored; a reset (FLR, CXL reset, the engine's reset) aborts the job:
 * no completion, no interrupt, memory as far as it got.
 */

/* Inside device memory and inside the engine's DPA window. */
static bool dpa_ok(const struct vcxl_model *m, uint64_t addr, uint64_t len)
{
	uint64_t wb = m->dpa_win_base, ws = m->dpa_win_size;

	return len <= m->mem_size && addr <= m->mem_size - len && addr >= wb && len <= ws &&
	       addr - wb <= ws - len;
}

/* Pattern bytes continue across chunks: byte i of the job is byte (i % 8) of the pattern. */
static void pattern_fill(uint8_t *p, size_t n, uint64_t pos, uint64_t pattern)
{
	for (size_t i = 0; i < n; i++)
		p[i] = (uint8_t)(pattern >> (8 * ((pos + i) % 8)));
}

/* Bytes [off, off + n) of a FILL. */
static int fill_piece(struct vcxl_model *m, const struct model_job *j, uint64_t off, uint64_t n)
{
	uint8_t buf[MODEL_DMA_CHUNK];

	if (!(j->flags & ACCEL_JOBF_DST_HOST)) {
		uint8_t *mem = model_mem_map(m);

		if (!dpa_ok(m, j->dst, j->len) || !mem)
			return -EINVAL;
		/* device memory a client may map too: every access guarded */
		if (j->pattern == 0 || j->pattern == ~0ull)
			return vcxl_guarded_memset(mem + j->dst + off, (uint8_t)j->pattern, n);
		/* chunks are multiples of 8: each starts at the same pattern byte */
		pattern_fill(buf, sizeof(buf), off, j->pattern);
		for (uint64_t i = 0; i < n; i += sizeof(buf)) {
			uint64_t k = n - i < sizeof(buf) ? n - i : sizeof(buf);
			if (vcxl_guarded_memcpy(mem + j->dst + off + i, buf, k))
				return -EFAULT;
		}
		return 0;
	}
	if (!m->dma || !m->dma->write)
		return -EIO;
	for (uint64_t i = 0; i < n;) {
		size_t k = n - i < sizeof(buf) ? (size_t)(n - i) : sizeof(buf);
		pattern_fill(buf, k, off + i, j->pattern);
		if (m->dma->write(m->dma_opaque, j->dst + off + i, buf, k))
			return -EIO;
		i += k;
	}
	return 0;
}

/* Bytes [off, off + n) of a COPY: either side device memory (DPA) or a DMA
 * address (SRC_HOST/DST_HOST). */
static int copy_piece(struct vcxl_model *m, const struct model_job *j, uint64_t off, uint64_t n)
{
	bool sh = j->flags & ACCEL_JOBF_SRC_HOST, dh = j->flags & ACCEL_JOBF_DST_HOST;
	uint8_t *mem = model_mem_map(m);
	uint8_t buf[MODEL_DMA_CHUNK];

	if ((!sh && !dpa_ok(m, j->src, j->len)) || (!dh && !dpa_ok(m, j->dst, j->len)))
		return -EINVAL;
	if ((sh && (!m->dma || !m->dma->read)) || (dh && (!m->dma || !m->dma->write)))
		return -EIO;
	if ((!sh || !dh) && !mem)
		return -ENOMEM;
	if (!sh && !dh)
		return vcxl_guarded_memmove(mem + j->dst + off, mem + j->src + off, n);
	/* device memory goes through buf, under the guard (a client may map it) */
	for (uint64_t i = 0; i < n;) {
		size_t k = n - i < sizeof(buf) ? (size_t)(n - i) : sizeof(buf);
		uint64_t s = j->src + off + i, d = j->dst + off + i;

		if (!sh && vcxl_guarded_memcpy(buf, mem + s, k))
			return -EFAULT;
		if (sh && m->dma->read(m->dma_opaque, s, buf, k))
			return -EIO;
		if (!dh && vcxl_guarded_memcpy(mem + d, buf, k))
			return -EFAULT;
		if (dh && m->dma->write(m->dma_opaque, d, buf, k))
			return -EIO;
		i += k;
	}
	return 0;
}

/* 0, or the error a job ends with before it moves a byte. */
static int job_check(struct vcxl_model *m, const struct model_job *j)
{
	bool sh = j->flags & ACCEL_JOBF_SRC_HOST, dh = j->flags & ACCEL_JOBF_DST_HOST;

	if (j->flags & ~JOB_FLAGS_MASK)
		return -EINVAL;
	if ((j->flags & ACCEL_JOBF_IRQ) && j->vector >= VCXL_MODEL_MSIX_VECTORS)
		return -EINVAL;
	switch (j->op) {
	case ACCEL_OP_NOP:
		return 0;
	case ACCEL_OP_FILL:
		if (sh)
			return -EINVAL;
		if (!dh)
			return dpa_ok(m, j->dst, j->len) && model_mem_map(m) ? 0 : -EINVAL;
		return j->len <= m->mem_size && m->dma && m->dma->write ? 0 : -EIO;
	case ACCEL_OP_COPY:
		if (j->len > m->mem_size || (!sh && !dpa_ok(m, j->src, j->len)) ||
		    (!dh && !dpa_ok(m, j->dst, j->len)))
			return -EINVAL;
		if ((sh && (!m->dma || !m->dma->read)) || (dh && (!m->dma || !m->dma->write)))
			return -EIO;
		return (!sh || !dh) && !model_mem_map(m) ? -ENOMEM : 0;
	}
	return -EINVAL;
}

bool model_job_valid(const struct vcxl_model *m, const struct model_job *j)
{
	bool sh = j->flags & ACCEL_JOBF_SRC_HOST, dh = j->flags & ACCEL_JOBF_DST_HOST;

	if ((j->flags & ~JOB_FLAGS_MASK) || j->vector > JOB_VECTOR_MASK ||
	    ((j->flags & ACCEL_JOBF_IRQ) && j->vector >= VCXL_MODEL_MSIX_VECTORS))
		return false;
	if (j->len > m->mem_size || j->done > j->len)
		return false;
	switch (j->op) {
	case ACCEL_OP_FILL:
		return !sh && (dh || dpa_ok(m, j->dst, j->len));
	case ACCEL_OP_COPY:
		return (sh || dpa_ok(m, j->src, j->len)) && (dh || dpa_ok(m, j->dst, j->len));
	}
	return false;
}

/* BUSY off, DONE or ERROR on, JOBS_DONE++, the job's vector if it asked for one. */
static void job_finish(struct vcxl_model *m, const struct model_job *j, int rc)
{
	struct vcxl_regfile *rf = &m->bar2rf;

	m->job.active = false;
	vcxl_rf_update32(rf, ACCEL_REG_STATUS, STATUS_W1C | ACCEL_STATUS_BUSY,
			 rc ? ACCEL_STATUS_ERROR : ACCEL_STATUS_DONE);
	m->jobs_done++;
	vcxl_rf_set32(rf, ACCEL_REG_JOBS_DONE, (uint32_t)m->jobs_done);
	if ((j->flags & ACCEL_JOBF_IRQ) && j->vector < VCXL_MODEL_MSIX_VECTORS)
		model_msix_raise(m, j->vector);
}

bool model_engine_step(struct vcxl_model *m)
{
	struct model_job *j = &m->job, cur;
	uint64_t n, off, gen = m->job_gen;
	int rc = 0;

	if (!j->active || j->stepping || m->mig_paused)
		return j->active;
	n = j->len - j->done < MODEL_JOB_STEP ? j->len - j->done : MODEL_JOB_STEP;
	/* an overlapping copy to a higher DPA goes from the end, so no byte is
	 * overwritten before it is copied */
	off = j->backward ? j->len - j->done - n : j->done;
	j->stepping = true;
	cur = *j;
	if (n)
		rc = j->op == ACCEL_OP_FILL ? fill_piece(m, &cur, off, n)
					    : copy_piece(m, &cur, off, n);
	/* device memory the step may have written, for a migration (model_mig.c) */
	if (n && !(cur.flags & ACCEL_JOBF_DST_HOST))
		model_mig_mark(m, cur.dst + off, n);
	/* reset while the step waited for DMA: the job is gone */
	if (gen != m->job_gen)
		return false;
	j->stepping = false;
	j->done += n;
	if (!rc && j->done < j->len)
		return true;
	job_finish(m, &cur, rc);
	return false;
}

/* Doorbell: latch the job and start it (model.h: one job at a time). */
static void engine_doorbell(void *opaque, struct vcxl_regfile *rf, uint32_t dw_off, uint32_t old,
			    uint32_t val)
{
	struct vcxl_model *m = opaque;
	struct model_job j = {
	    .op = vcxl_rf_get32(rf, ACCEL_REG_JOB_OP),
	    .flags = vcxl_rf_get32(rf, ACCEL_REG_JOB_FLAGS),
	    .src = vcxl_rf_get64(rf, ACCEL_REG_JOB_SRC),
	    .dst = vcxl_rf_get64(rf, ACCEL_REG_JOB_DST),
	    .len = vcxl_rf_get64(rf, ACCEL_REG_JOB_LEN),
	    .pattern = vcxl_rf_get64(rf, ACCEL_REG_JOB_PATTERN),
	    .vector = vcxl_rf_get32(rf, ACCEL_REG_JOB_VECTOR),
	};
	int rc;

	vcxl_rf_set32(rf, dw_off, 0);
	if (!(val & ACCEL_DOORBELL_GO) || m->job.active)
		return; /* BUSY: the running job goes on, this doorbell is dropped */
	rc = job_check(m, &j);
	if (rc || j.op == ACCEL_OP_NOP) {
		job_finish(m, &j, rc);
		return;
	}
	j.backward = j.op == ACCEL_OP_COPY && !(j.flags & ACCEL_JOBF_SRC_HOST) &&
		     !(j.flags & ACCEL_JOBF_DST_HOST) && j.dst > j.src && j.dst - j.src < j.len;
	j.active = true;
	m->job = j;
	vcxl_rf_update32(rf, ACCEL_REG_STATUS, STATUS_W1C | ACCEL_STATUS_BUSY, ACCEL_STATUS_BUSY);
	model_engine_step(m);
}

/* The DPA window registers: the engine takes them as written. */
static void dpa_win_write(void *opaque, struct vcxl_regfile *rf, uint32_t dw_off, uint32_t old,
			  uint32_t val)
{
	struct vcxl_model *m = opaque;

	m->dpa_win_base = vcxl_rf_get64(rf, ACCEL_REG_DPA_WIN_BASE);
	m->dpa_win_size = vcxl_rf_get64(rf, ACCEL_REG_DPA_WIN_SIZE);
}

static void dpa_win_load(struct vcxl_model *m)
{
	struct vcxl_regfile *rf = &m->bar2rf;

	vcxl_rf_set32(rf, ACCEL_REG_DPA_WIN_BASE, (uint32_t)m->dpa_win_base);
	vcxl_rf_set32(rf, ACCEL_REG_DPA_WIN_BASE + 4, (uint32_t)(m->dpa_win_base >> 32));
	vcxl_rf_set32(rf, ACCEL_REG_DPA_WIN_SIZE, (uint32_t)m->dpa_win_size);
	vcxl_rf_set32(rf, ACCEL_REG_DPA_WIN_SIZE + 4, (uint32_t)(m->dpa_win_size >> 32));
}

static int engine_regs(struct vcxl_model *m)
{
	struct vcxl_regfile *rf = &m->bar2rf;
	int rc = vcxl_rf_init_val(rf, ACCEL_REG_ID, 4, ACCEL_ID_VALUE);
	rc = rc ?: vcxl_rf_init_val(rf, ACCEL_REG_VERSION, 4, ACCEL_VERSION_VALUE);
	rc = rc ?: vcxl_rf_define(rf, ACCEL_REG_JOB_OP, 4, JOB_OP_MASK, VCXL_RF_RW);
	rc = rc ?: vcxl_rf_define(rf, ACCEL_REG_JOB_OP, 4, ~JOB_OP_MASK, VCXL_RF_RSVD);
	rc = rc ?: vcxl_rf_define(rf, ACCEL_REG_JOB_FLAGS, 4, JOB_FLAGS_MASK, VCXL_RF_RW);
	rc = rc ?: vcxl_rf_define(rf, ACCEL_REG_JOB_FLAGS, 4, ~JOB_FLAGS_MASK, VCXL_RF_RSVD);
	for (uint32_t r = ACCEL_REG_JOB_SRC; r <= ACCEL_REG_JOB_PATTERN && !rc; r += 8)
		rc = vcxl_rf_define(rf, r, 8, ~0ull, VCXL_RF_RW);
	rc = rc ?: vcxl_rf_define(rf, ACCEL_REG_DOORBELL, 4, ACCEL_DOORBELL_GO, VCXL_RF_RW);
	rc = rc ?: vcxl_rf_define(rf, ACCEL_REG_DOORBELL, 4, ~ACCEL_DOORBELL_GO, VCXL_RF_RSVD);
	rc = rc ?: vcxl_rf_define(rf, ACCEL_REG_STATUS, 4, STATUS_W1C, VCXL_RF_RW1C);
	rc = rc
		 ?: vcxl_rf_define(rf, ACCEL_REG_STATUS, 4, ~(STATUS_W1C | ACCEL_STATUS_BUSY),
				   VCXL_RF_RSVD);
	rc = rc ?: vcxl_rf_define(rf, ACCEL_REG_JOB_VECTOR, 4, JOB_VECTOR_MASK, VCXL_RF_RW);
	rc = rc ?: vcxl_rf_define(rf, ACCEL_REG_JOB_VECTOR, 4, ~JOB_VECTOR_MASK, VCXL_RF_RSVD);
	rc = rc ?: vcxl_rf_hook(rf, ACCEL_REG_DOORBELL, 4, NULL, engine_doorbell, m);
	rc = rc ?: vcxl_rf_define(rf, ACCEL_REG_DPA_WIN_BASE, 8, ~0ull, VCXL_RF_RW);
	rc = rc ?: vcxl_rf_define(rf, ACCEL_REG_DPA_WIN_SIZE, 8, ~0ull, VCXL_RF_RW);
	rc = rc
		 ?: vcxl_rf_hook(rf, ACCEL_REG_DPA_WIN_BASE,
				 ACCEL_REG_DPA_WIN_END - ACCEL_REG_DPA_WIN_BASE, NULL,
				 dpa_win_write, m);
	if (!rc)
		dpa_win_load(m);
	return rc;
}

/* PCI r3.0 6.8.2.6-9: table entries (address, data, vector control) and the PBA. */
static int msix_regs(struct vcxl_model *m)
{
	struct vcxl_regfile *rf = &m->bar2rf;
	int rc = 0;
	for (unsigned v = 0; v < VCXL_MODEL_MSIX_VECTORS && !rc; v++) {
		uint32_t e = VCXL_MODEL_MSIX_TABLE + v * PCI_MSIX_ENTRY_SIZE;
		rc = vcxl_rf_define(rf, e + PCI_MSIX_ENTRY_LOWER_ADDR, 4, MSIX_ADDR_LO_RW,
				    VCXL_RF_RW);
		rc = rc ?: vcxl_rf_define(rf, e + PCI_MSIX_ENTRY_UPPER_ADDR, 4, ~0u, VCXL_RF_RW);
		rc = rc ?: vcxl_rf_define(rf, e + PCI_MSIX_ENTRY_DATA, 4, ~0u, VCXL_RF_RW);
		rc = rc
			 ?: vcxl_rf_define(rf, e + PCI_MSIX_ENTRY_VECTOR_CTRL, 4,
					   PCI_MSIX_ENTRY_CTRL_MASKBIT, VCXL_RF_RW);
		rc = rc
			 ?: vcxl_rf_define(rf, e + PCI_MSIX_ENTRY_VECTOR_CTRL, 4,
					   ~PCI_MSIX_ENTRY_CTRL_MASKBIT, VCXL_RF_RSVD);
		/* vectors come out of reset masked */
		rc = rc
			 ?: vcxl_rf_init_val(rf, e + PCI_MSIX_ENTRY_VECTOR_CTRL, 4,
					     PCI_MSIX_ENTRY_CTRL_MASKBIT);
	}
	rc = rc
		 ?: vcxl_rf_hook(rf, VCXL_MODEL_MSIX_TABLE, MSIX_TABLE_END - VCXL_MODEL_MSIX_TABLE,
				 NULL, msix_table_write, m);
	return rc;
}

int model_bar2_layout(struct vcxl_model *m)
{
	int rc = vcxl_rf_init(&m->bar2rf, VCXL_MODEL_BAR2_SIZE);
	/* a Type-3 memory expander has no job engine: its registers read 0 */
	rc = rc ?: (model_is_type3(m) ? 0 : engine_regs(m));
	rc = rc ?: msix_regs(m);
	/* MMIO registers of the engine, the MSI-X table and the PBA: DW/QW accesses only */
	rc = rc ?: vcxl_rf_access_rule(&m->bar2rf, 0, VCXL_MODEL_BAR2_SIZE, VCXL_RF_ACC_DWORD);
	return rc;
}

void model_engine_reset(struct vcxl_model *m)
{
	vcxl_rf_reset(&m->bar2rf);
	m->jobs_done = 0;
	/* a running job is aborted: no completion, no interrupt */
	m->job = (struct model_job){0};
	m->job_gen++;
	/* the host's DPA window survives resets (the host set it, not the guest) */
	if (!model_is_type3(m))
		dpa_win_load(m);
}
