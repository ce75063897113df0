// SPDX-License-Identifier: BSD-3-Clause
/*
 * The built-in CXL Type-2 accelerator model (8086:0d94) as a backend.
 *
 * BAR0 (64-bit, 4 MiB): the 64 KiB component register block at the start,
 * middle or end, the rest on-device RAM backed by a memfd that maps the whole
 * BAR (the component part of the fd is unused). BAR2 (32-bit, 16 KiB): job
 * engine registers, MSI-X table and PBA. Device memory (the DPA space the HDM
 * decoders map) is a separate memfd or backing file, mapped on first use.
 *
 * Interrupts: MSI-X only (VCXL_MODEL_MSIX_VECTORS); no MSI capability and no
 * INTx (Interrupt Pin 0), so irq_count() is 0 for both.
 * MMIO is answered whatever the Command register's Memory Space Enable says:
 * the transport in front of the model decides about gating.
 */
#include <errno.h>
#include <fcntl.h>
#include <linux/falloc.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "accel.h"
#include "../common/sigbus_guard.h"

#define MODEL_DEFAULT_MEM VCXL_SZ_256M

uint64_t model_now_ms(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000u + (uint64_t)ts.tv_nsec / 1000000u;
}

/* Once Memory_Active is reached it stays until the next reset restarts the delay. */
bool model_mem_active(struct vcxl_model *m)
{
	if (!m->active_latched)
		m->active_latched = model_now_ms() - m->active_t0_ms >= m->cfg.active_delay_ms;
	return m->active_latched;
}

void model_restart_active(struct vcxl_model *m)
{
	m->active_t0_ms = model_now_ms();
	m->active_latched = false;
}

/* Device memory by DPA (devmem.c maps it at creation; no page is touched). */
uint8_t *model_mem_map(struct vcxl_model *m)
{
	return m->mem;
}

/* CXL reset with Mem Clr Enable: reads back 0, pages freed. */
void model_mem_clear(struct vcxl_model *m)
{
	model_devmem_clear(m);
}

/* ---- backend operations -------------------------------------------------- */

static uint64_t all_ones(unsigned len)
{
	return len >= 8 ? ~0ull : (1ull << (8 * len)) - 1;
}

static bool len_ok(unsigned len)
{
	return len == 1 || len == 2 || len == 4 || len == 8;
}

static int m_cfg_read(void *dev, uint32_t off, unsigned len, uint64_t *val)
{
	struct vcxl_model *m = dev;
	if (m->removed) {
		*val = all_ones(len);
		return -ENODEV;
	}
	return vcxl_rf_read(&m->cfgrf, off, len, val);
}

static int m_cfg_write(void *dev, uint32_t off, unsigned len, uint64_t val)
{
	struct vcxl_model *m = dev;
	if (m->removed)
		return -ENODEV;
	return vcxl_rf_write(&m->cfgrf, off, len, val);
}

/* Component block: only the CM range has registers; the rest reads 0, writes are dropped. */
static int comp_access(struct vcxl_model *m, uint64_t off, unsigned len, uint64_t *val, bool wr)
{
	if (off >= CXL_CM_OFFSET && off - CXL_CM_OFFSET < MODEL_COMP_RF_SIZE) {
		uint32_t o = (uint32_t)(off - CXL_CM_OFFSET);
		if (o + len > MODEL_COMP_RF_SIZE)
			return -EINVAL;
		return wr ? vcxl_rf_write(&m->comprf, o, len, *val)
			  : vcxl_rf_read(&m->comprf, o, len, val);
	}
	if (off < CXL_CM_OFFSET && off + len > CXL_CM_OFFSET)
		return -EINVAL;
	if (!wr)
		*val = 0;
	return 0;
}

static int bar0_access(struct vcxl_model *m, uint64_t off, unsigned len, uint64_t *val, bool wr)
{
	uint64_t cend = m->comp_off + CXL_COMPONENT_BLOCK_SIZE;
	if (off >= m->comp_off && off < cend) {
		if (off + len > cend)
			return -EINVAL;
		return comp_access(m, off - m->comp_off, len, val, wr);
	}
	if (off < m->comp_off && off + len > m->comp_off)
		return -EINVAL;
	/* BAR0 RAM is a memfd a client maps too: guarded (it is sealed against
	 * truncation, so this is a second line) */
	uint8_t b[8];
	if (wr) {
		for (unsigned i = 0; i < len; i++)
			b[i] = (uint8_t)(*val >> (8 * i));
		return vcxl_guarded_memcpy(m->bar0 + off, b, len);
	}
	uint64_t v = 0;
	int rc = vcxl_guarded_memcpy(b, m->bar0 + off, len);
	for (unsigned i = 0; i < len; i++)
		v |= (uint64_t)b[i] << (8 * i);
	*val = rc ? all_ones(len) : v;
	return rc;
}

static int bar_access(struct vcxl_model *m, unsigned bar, uint64_t off, unsigned len, uint64_t *val,
		      bool wr)
{
	if (!len_ok(len))
		return -EINVAL;
	if (bar == MODEL_COMP_BAR) {
		if (off >= VCXL_MODEL_BAR0_SIZE || len > VCXL_MODEL_BAR0_SIZE - off)
			return -EINVAL;
		return bar0_access(m, off, len, val, wr);
	}
	if (bar == MODEL_CTRL_BAR) {
		if (off >= VCXL_MODEL_BAR2_SIZE)
			return model_type3_bar2_access(m, off, len, val, wr);
		return wr ? vcxl_rf_write(&m->bar2rf, (uint32_t)off, len, *val)
			  : vcxl_rf_read(&m->bar2rf, (uint32_t)off, len, val);
	}
	return -EINVAL;
}

static int m_bar_read(void *dev, unsigned bar, uint64_t off, unsigned len, uint64_t *val)
{
	struct vcxl_model *m = dev;
	if (m->removed) {
		*val = all_ones(len);
		return -ENODEV;
	}
	return bar_access(m, bar, off, len, val, false);
}

static int m_bar_write(void *dev, unsigned bar, uint64_t off, unsigned len, uint64_t val)
{
	struct vcxl_model *m = dev;
	if (m->removed)
		return -ENODEV;
	return bar_access(m, bar, off, len, &val, true);
}

static int m_bar_info(void *dev, unsigned bar, struct vcxl_bar_info *info)
{
	struct vcxl_model *m = dev;
	if (bar >= VCXL_NUM_BARS)
		return -EINVAL;
	*info = (struct vcxl_bar_info){.fd = -1};
	if (m->removed)
		return -ENODEV;
	if (bar == MODEL_COMP_BAR) {
		info->size = VCXL_MODEL_BAR0_SIZE;
		info->flags = VCXL_BAR_PRESENT | VCXL_BAR_MEM64;
		info->fd = m->bar0_fd;
	} else if (bar == MODEL_CTRL_BAR) {
		info->size = vcxl_model_bar2_size(m);
		info->flags = VCXL_BAR_PRESENT;
	}
	return 0;
}

/* CXL.mem: an HPA range the committed decoders map to one contiguous DPA range, with
 * Mem_Enable set in the DVSEC; anything else is not decoded (-ENXIO). */
static int m_hpa_map(void *dev, uint64_t hpa, uint64_t size, int *fd, uint64_t *fd_offset)
{
	struct vcxl_model *m = dev;
	uint64_t dpa;
	if (m->removed)
		return -ENODEV;
	if (size == 0)
		return -EINVAL;
	if (!(vcxl_rf_get16(&m->cfgrf, MODEL_DVSEC_DEVICE + CXL_DVSEC_CTRL) &
	      CXL_DVSEC_CTRL_MEM_EN))
		return -ENXIO;
	if (!vcxl_hdm_decode_contig(&m->comp.hdm, hpa, size, &dpa) || dpa > m->mem_size ||
	    size > m->mem_size - dpa)
		return -ENXIO;
	/* a file-backed device is not carved (the file must keep all memory) */
	if (m->cfg.backing) {
		*fd = m->mem_fd;
		*fd_offset = dpa;
		return 0;
	}
	*fd_offset = 0;
	return model_devmem_carve(m, dpa, size, fd);
}

/* A new tenant: a fresh object for the region (devmem.c); a --backing file
 * holds all device memory and stays (the vdev zeroes the region in it). */
static int m_hpa_renew(void *dev, uint64_t hpa, uint64_t size, int *fd, uint64_t *fd_offset)
{
	struct vcxl_model *m = dev;
	uint64_t dpa;
	int rc;

	if (m->removed)
		return -ENODEV;
	if (m->cfg.backing)
		return -EOPNOTSUPP;
	if (!size || !vcxl_hdm_decode_contig(&m->comp.hdm, hpa, size, &dpa))
		return -ENXIO;
	if (!(rc = model_devmem_renew(m, dpa, size, fd)))
		*fd_offset = 0;
	return rc;
}

/* A new tenant: BAR0's RAM in a fresh object (the component block part of the
 * memfd backs nothing); BAR2 has no fd. */
static int m_bar_renew(void *dev, unsigned bar)
{
	struct vcxl_model *m = dev;

	if (m->removed)
		return -ENODEV;
	if (bar != MODEL_COMP_BAR)
		return -EOPNOTSUPP;
	return model_memfd_swap("vcxl-bar0", m->bar0, VCXL_MODEL_BAR0_SIZE, &m->bar0_fd);
}

static const char *m_fd_unshareable(void *dev, int fd, bool *never)
{
	(void)never; /* the --backing file may go to a trusted client */
	return model_fd_unshareable(dev, fd);
}

static int m_reset(void *dev, enum vcxl_reset_kind kind)
{
	struct vcxl_model *m = dev;
	if (m->removed)
		return -ENODEV;
	switch (kind) {
	case VCXL_RESET_FLR:
		model_flr(m);
		return 0;
	case VCXL_RESET_CXL:
		return model_cxl_reset(m);
	case VCXL_RESET_TENANT:
		model_tenant_reset(m);
		return 0;
	}
	return -EINVAL;
}

static unsigned m_irq_count(void *dev, enum vcxl_irq_type type)
{
	return type == VCXL_IRQ_MSIX ? VCXL_MODEL_MSIX_VECTORS : 0;
}

static void m_set_irq_handler(void *dev, vcxl_irq_fn fn, void *opaque)
{
	struct vcxl_model *m = dev;
	m->irq_fn = fn;
	m->irq_opaque = opaque;
	if (fn)
		model_msix_update(m);
}

static void m_set_dma(void *dev, const struct vcxl_dma_ops *ops, void *opaque)
{
	struct vcxl_model *m = dev;
	m->dma = ops;
	m->dma_opaque = opaque;
}

static const char *m_name(void *dev)
{
	struct vcxl_model *m = dev;
	return m->name;
}

static int m_poll(void *dev)
{
	return vcxl_model_poll(dev);
}

static const struct vcxl_backend_ops model_ops = {
    .cfg_read = m_cfg_read,
    .cfg_write = m_cfg_write,
    .bar_read = m_bar_read,
    .bar_write = m_bar_write,
    .bar_info = m_bar_info,
    .hpa_map = m_hpa_map,
    .reset = m_reset,
    .irq_count = m_irq_count,
    .set_irq_handler = m_set_irq_handler,
    .set_dma = m_set_dma,
    .name = m_name,
    .fd_unshareable = m_fd_unshareable,
    .poll = m_poll,
    .hpa_renew = m_hpa_renew,
    .bar_renew = m_bar_renew,
    .mig_quiesce = model_mig_quiesce,
    .mig_save = model_mig_save,
    .mig_stage = model_mig_stage,
    .mig_verify = model_mig_verify,
    .mig_commit = model_mig_commit,
    .mig_abort = model_mig_abort,
    .mig_dirty = model_mig_dirty,
    .mig_dirty_get = model_mig_dirty_get,
    .mig_dirty_clear = model_mig_dirty_clear,
};

/* ---- creation -------------------------------------------------------- */

static int cfg_check(struct vcxl_model_cfg *c)
{
	if (c->mem_size == 0)
		c->mem_size = MODEL_DEFAULT_MEM;
	if (c->decoders == 0)
		c->decoders = 1;
	if (c->mem_size % VCXL_SZ_256M || c->decoders > CXL_HDM_MAX_DECODERS_DEVICE ||
	    vcxl_hdm_count_encode(c->decoders) < 0 || c->comp_at > VCXL_COMP_AT_END ||
	    c->fw_hpa_base % VCXL_SZ_256M || c->active_timeout_enc > CXL_DVSEC_ACTIVE_TMO_MAX_ENC ||
	    c->kind > VCXL_MODEL_TYPE3)
		return -EINVAL;
	if (c->firmware_committed && c->fw_hpa_base + c->mem_size < c->fw_hpa_base)
		return -EINVAL;
	return 0;
}

static int open_bar0(struct vcxl_model *m)
{
	/* the client gets this fd: it can neither shrink nor grow it */
	m->bar0_fd = model_memfd_sealed("vcxl-bar0", VCXL_MODEL_BAR0_SIZE);
	if (m->bar0_fd < 0)
		return m->bar0_fd;
	void *p =
	    mmap(NULL, VCXL_MODEL_BAR0_SIZE, PROT_READ | PROT_WRITE, MAP_SHARED, m->bar0_fd, 0);
	if (p == MAP_FAILED)
		return -errno;
	m->bar0 = p;
	return 0;
}

static uint64_t comp_offset(enum vcxl_comp_at at)
{
	switch (at) {
	case VCXL_COMP_AT_START:
		break;
	case VCXL_COMP_AT_MIDDLE:
		return (VCXL_MODEL_BAR0_SIZE / 2) & ~(CXL_COMPONENT_BLOCK_SIZE - 1ull);
	case VCXL_COMP_AT_END:
		return VCXL_MODEL_BAR0_SIZE - CXL_COMPONENT_BLOCK_SIZE;
	}
	return 0;
}

/* CDAT: one DSMAS for all device memory, EFI reserved (private accelerator memory).
 * DSMAS flags: none; whether device-coherent HDM-D memory should carry the
 * HW-coherent flag is left open [spec]. A Type-3 expander's memory is EFI
 * conventional, specific purpose (as QEMU's type3 volatile memory). */
static int build_cdat(struct vcxl_model *m)
{
	struct vcxl_cdat_range r = {
	    .dpa_base = 0,
	    .dpa_len = m->mem_size,
	    .dsmas_flags = 0,
	    .efi_type = model_is_type3(m) ? CDAT_DSEMTS_EFI_CONV_SP : CDAT_DSEMTS_EFI_RESERVED,
	    .read_lat_ns = 120,
	    .write_lat_ns = 150,
	    .read_bw_gbs = 32,
	    .write_bw_gbs = 32,
	};
	m->cdat_len = vcxl_cdat_build(m->cdat, sizeof(m->cdat), &r, 1);
	return m->cdat_len < 0 ? m->cdat_len : 0;
}

static int comp_layout(struct vcxl_model *m)
{
	struct vcxl_comp_cfg cc = {
	    .hdm_count = m->cfg.decoders,
	    .hdm_cap_flags = CXL_HDM_CAP_IL_11_8 | CXL_HDM_CAP_IL_14_12,
	    .ras = true,
	    .link = true,
	    /* Type-2: device-coherent (HDM-D); Type-3: host-only coherent (HDM-H) */
	    .hostonly_reset = model_is_type3(m),
	    .dpa_capacity = m->mem_size,
	};
	int rc = vcxl_rf_init(&m->comprf, MODEL_COMP_RF_SIZE);
	return rc ?: vcxl_comp_layout(&m->comp, &m->comprf, 0, &cc, NULL, m);
}

/* What firmware leaves behind: HDM Decoder Enable, decoder 0 over all memory at
 * fw_hpa_base, Range 1 Base mirroring it, Mem_Enable. Not a reset value. */
static int firmware_commit(struct vcxl_model *m)
{
	struct vcxl_hdm *h = &m->comp.hdm;
	struct vcxl_hdm_decoder d = {.base = m->cfg.fw_hpa_base, .size = m->mem_size};
	if (model_is_type3(m))
		d.ctrl = CXL_HDM_DEC_CTRL_HOSTONLY;
	uint32_t dv = MODEL_DVSEC_DEVICE;

	vcxl_rf_update32(h->rf, h->off + CXL_HDM_GLOBAL_CTRL, CXL_HDM_GCTRL_ENABLE,
			 CXL_HDM_GCTRL_ENABLE);
	if (vcxl_hdm_program(h, 0, &d, true) != VCXL_HDM_OK)
		return -EINVAL;
	vcxl_rf_set32(&m->cfgrf, dv + CXL_DVSEC_RANGE_BASE_HI(0), (uint32_t)(d.base >> 32));
	vcxl_rf_set32(&m->cfgrf, dv + CXL_DVSEC_RANGE_BASE_LO(0),
		      (uint32_t)d.base & CXL_DVSEC_RANGE_BASE_LO_MASK);
	vcxl_rf_set16(&m->cfgrf, dv + CXL_DVSEC_CTRL,
		      vcxl_rf_get16(&m->cfgrf, dv + CXL_DVSEC_CTRL) | CXL_DVSEC_CTRL_MEM_EN);
	return 0;
}

int vcxl_model_create(const struct vcxl_model_cfg *cfg, struct vcxl_model **out)
{
	struct vcxl_model *m;
	int rc;

	if (!out)
		return -EINVAL;
	*out = NULL;
	m = calloc(1, sizeof(*m));
	if (!m)
		return -ENOMEM;
	m->mem_fd = -1;
	m->bar0_fd = -1;
	if (cfg)
		m->cfg = *cfg;
	rc = cfg_check(&m->cfg);
	if (rc) {
		free(m);
		return rc;
	}
	m->mem_size = m->cfg.mem_size;
	m->comp_off = comp_offset(m->cfg.comp_at);
	m->be.ops = &model_ops;
	m->be.dev = m;
	snprintf(m->name, sizeof(m->name), "vcxl-%s %04x:%04x",
		 model_is_type3(m) ? "type3" : "accel", VCXL_MODEL_VENDOR, model_device_id(m));
	m->dpa_win_size = m->mem_size;
	rc = model_devmem_open(m);
	rc = rc ?: open_bar0(m);
	rc = rc ?: build_cdat(m);
	rc = rc ?: model_cfg_layout(m);
	rc = rc ?: comp_layout(m);
	rc = rc ?: model_bar2_layout(m);
	rc = rc ?: model_type3_layout(m);
	if (!rc && m->cfg.firmware_committed)
		rc = firmware_commit(m);
	if (rc) {
		vcxl_model_destroy(m);
		return rc;
	}
	model_restart_active(m);
	model_refresh_ranges(m);
	*out = m;
	return 0;
}

void vcxl_model_destroy(struct vcxl_model *m)
{
	if (!m)
		return;
	model_mig_fini(m);
	model_devmem_close(m);
	if (m->bar0)
		munmap(m->bar0, VCXL_MODEL_BAR0_SIZE);
	if (m->bar0_fd >= 0)
		close(m->bar0_fd);
	vcxl_rf_fini(&m->cfgrf);
	vcxl_rf_fini(&m->comprf);
	vcxl_rf_fini(&m->bar2rf);
	model_type3_fini(m);
	free(m);
}

struct vcxl_backend *vcxl_model_backend(struct vcxl_model *m)
{
	return &m->be;
}

int vcxl_model_mem_fd(struct vcxl_model *m, int *fd, uint64_t *size)
{
	if (m->removed)
		return -ENODEV;
	*fd = m->mem_fd;
	*size = m->mem_size;
	return 0;
}

void *vcxl_model_mem(struct vcxl_model *m)
{
	return model_mem_map(m);
}

void vcxl_model_remove(struct vcxl_model *m)
{
	m->removed = true;
}

int vcxl_model_poll(struct vcxl_model *m)
{
	/* removed, or quiesced for a migration: nothing runs by itself */
	if (m->removed || m->mig_paused)
		return -1;
	/* a running job moves one step per poll: come back at once */
	bool busy = model_engine_step(m);
	model_type3_poll(m);
	model_refresh_ranges(m);
	if (busy)
		return 0;
	uint64_t now = model_now_ms(), due = m->active_t0_ms + m->cfg.active_delay_ms;
	if (now >= due)
		return -1;
	uint64_t left = due - now;
	return left > 0x7fffffff ? 0x7fffffff : (int)left;
}
