// SPDX-License-Identifier: BSD-3-Clause
/* CXL DVSECs in config space: Device (ID 0), Register Locator (8), GPF (5), Flex Bus (7). */
#include <errno.h>

#include "cxl/cxl_spec.h"

/* Status: everything but Viral_Status is reserved (CXL r3.1 8.1.3.3). */
#define DVSEC_STATUS_RSVD ((uint16_t)~CXL_DVSEC_STATUS_VIRAL)
/* Control: bits 13 and 15 reserved; bit 12 reserved unless Cap3 P2P (8.1.3.2). */
#define DVSEC_CTRL_RSVD (VCXL_BIT(13) | VCXL_BIT(15))
/* Control2 bits 15:6 reserved (8.1.3.4) */
#define DVSEC_CTRL2_RSVD VCXL_GENMASK(15, 6)
/* Status2 bits 14:4 reserved (8.1.3.5) */
#define DVSEC_STATUS2_RSVD VCXL_GENMASK(14, 4)
/* Lock bits 15:1 reserved (8.1.3.6) */
#define DVSEC_LOCK_RSVD VCXL_GENMASK(15, 1)
/* Range Size Low bits 27:16 reserved (8.1.3.8.2) [spec: r3.1 gives them meaning on some
 * devices; this layout does not implement those] */
#define DVSEC_RANGE_SIZE_LO_RSVD VCXL_GENMASK(27, 16)
/* Range Base Low bits 27:0 reserved (8.1.3.8.4) */
#define DVSEC_RANGE_BASE_LO_RSVD VCXL_GENMASK(27, 0)
/* Capability3 bits 15:5 reserved, and the 2 bytes of padding after it (8.1.3.10) */
#define DVSEC_CAP3_RSVD VCXL_GENMASK(15, 5)
/* The two bytes after Capability3, seen from its dword */
#define DVSEC_PAD_RSVD VCXL_GENMASK(31, 16)
/* Size Low fields owned by the layout (Info_Valid/Active are live, set by the owner) */
#define DVSEC_RANGE_FLAGS                                                                          \
	(CXL_DVSEC_RANGE_MEDIA_TYPE | CXL_DVSEC_RANGE_MEM_CLASS | CXL_DVSEC_RANGE_DESIRED_IL |     \
	 CXL_DVSEC_RANGE_ACTIVE_TMO)

static uint16_t dvsec_ctrl_rwl_mask(const struct vcxl_dvsec_device_cfg *cfg)
{
	uint16_t m = CXL_DVSEC_CTRL_RWL_MASK;
	if (cfg->cap3 & CXL_DVSEC_CAP3_P2P_MEM)
		m |= CXL_DVSEC_CTRL_P2P_MEM_EN;
	return m;
}

/* CXL r3.1 8.1.3.4: Control2 bits 1 and 2 start an operation and read as 0. */
static void dvsec_ctrl2_write(void *opaque, struct vcxl_regfile *rf, uint32_t dw_off, uint32_t old,
			      uint32_t val)
{
	struct vcxl_dvsec_device *d = opaque;
	uint16_t trig =
	    (uint16_t)(val & (CXL_DVSEC_CTRL2_INIT_CACHE_WBI | CXL_DVSEC_CTRL2_INIT_RESET));

	if (!trig)
		return;
	vcxl_rf_update32(rf, dw_off, trig, 0);
	if (d->ops && d->ops->ctrl2_trigger)
		d->ops->ctrl2_trigger(d->opaque, d, trig);
}

static void dvsec_refresh(void *opaque, struct vcxl_regfile *rf, uint32_t dw_off)
{
	struct vcxl_dvsec_device *d = opaque;
	if (d->ops && d->ops->refresh)
		d->ops->refresh(d->opaque, d, dw_off - d->base);
}

static int dvsec_define_range(struct vcxl_dvsec_device *d, unsigned i,
			      const struct vcxl_dvsec_device_cfg *cfg)
{
	struct vcxl_regfile *rf = d->rf;
	uint32_t base = d->base;
	uint64_t size = cfg->range_size[i];
	uint32_t lo = (uint32_t)(size & CXL_DVSEC_RANGE_SIZE_LO_MASK) |
		      (cfg->range_flags[i] & DVSEC_RANGE_FLAGS);
	int rc;

	if (size & ~(uint64_t)VCXL_GENMASK64(63, 28))
		return -EINVAL;
	/* 8.1.3.8.1-2: Size High/Low RO (HwInit) */
	rc = vcxl_rf_init_val(rf, base + CXL_DVSEC_RANGE_SIZE_HI(i), 4, size >> 32);
	rc = rc ?: vcxl_rf_init_val(rf, base + CXL_DVSEC_RANGE_SIZE_LO(i), 4, lo);
	rc = rc
		 ?: vcxl_rf_define(rf, base + CXL_DVSEC_RANGE_SIZE_LO(i), 4,
				   DVSEC_RANGE_SIZE_LO_RSVD, VCXL_RF_RSVD);
	/* 8.1.3.8.3-4: Base High/Low RWL under CONFIG_LOCK, Base Low only [31:28] */
	rc = rc ?: vcxl_rf_define(rf, base + CXL_DVSEC_RANGE_BASE_HI(i), 4, ~0u, VCXL_RF_RW);
	rc = rc
		 ?: vcxl_rf_define(rf, base + CXL_DVSEC_RANGE_BASE_LO(i), 4,
				   CXL_DVSEC_RANGE_BASE_LO_MASK, VCXL_RF_RW);
	rc = rc
		 ?: vcxl_rf_define(rf, base + CXL_DVSEC_RANGE_BASE_LO(i), 4,
				   DVSEC_RANGE_BASE_LO_RSVD, VCXL_RF_RSVD);
	rc = rc ?: vcxl_rf_hook(rf, base + CXL_DVSEC_RANGE_SIZE_LO(i), 4, dvsec_refresh, NULL, d);
	return rc;
}

/* CXL r3.1 8.1.3.2 and 8.1.3.4: Control and Control2 attributes. */
static int dvsec_define_controls(struct vcxl_regfile *rf, uint32_t base,
				 const struct vcxl_dvsec_device_cfg *cfg)
{
	uint16_t rwl = dvsec_ctrl_rwl_mask(cfg);
	uint16_t ctrl_rsvd = DVSEC_CTRL_RSVD;
	uint16_t c2_rw = CXL_DVSEC_CTRL2_DISABLE_CACHE | CXL_DVSEC_CTRL2_RESET_MEMCLR |
			 CXL_DVSEC_CTRL2_INIT_CACHE_WBI | CXL_DVSEC_CTRL2_INIT_RESET;
	uint16_t c2_rsvd = DVSEC_CTRL2_RSVD;
	int rc;

	if (!(cfg->cap3 & CXL_DVSEC_CAP3_P2P_MEM))
		ctrl_rsvd |= CXL_DVSEC_CTRL_P2P_MEM_EN;
	/* Bit 4 is configurable only if Cap3 says so: bit 3 (configurability), not bit 2 */
	if (cfg->cap3 & CXL_DVSEC_CAP3_HOT_CONFIG)
		c2_rw |= CXL_DVSEC_CTRL2_HDM_HOT_STATE;
	else
		c2_rsvd |= CXL_DVSEC_CTRL2_HDM_HOT_STATE;
	if (cfg->cap2 & CXL_DVSEC_CAP2_MOD_COMPL)
		c2_rw |= CXL_DVSEC_CTRL2_MOD_COMPL_EN;
	else
		c2_rsvd |= CXL_DVSEC_CTRL2_MOD_COMPL_EN;

	rc = vcxl_rf_init_val(rf, base + CXL_DVSEC_CTRL, 2,
			      (cfg->ctrl & rwl) | CXL_DVSEC_CTRL_IO_EN);
	rc = rc ?: vcxl_rf_define(rf, base + CXL_DVSEC_CTRL, 2, rwl, VCXL_RF_RW);
	rc = rc ?: vcxl_rf_define(rf, base + CXL_DVSEC_CTRL, 2, ctrl_rsvd, VCXL_RF_RSVD);
	rc = rc ?: vcxl_rf_define(rf, base + CXL_DVSEC_CTRL2, 2, c2_rw, VCXL_RF_RW);
	rc = rc ?: vcxl_rf_define(rf, base + CXL_DVSEC_CTRL2, 2, c2_rsvd, VCXL_RF_RSVD);
	return rc;
}

/* CXL r3.1 8.1.3.3, 8.1.3.5, 8.1.3.6: Status, Status2, Lock. */
static int dvsec_define_status(struct vcxl_regfile *rf, uint32_t base)
{
	int rc =
	    vcxl_rf_define(rf, base + CXL_DVSEC_STATUS, 2, CXL_DVSEC_STATUS_VIRAL, VCXL_RF_RW1C);
	rc = rc ?: vcxl_rf_define(rf, base + CXL_DVSEC_STATUS, 2, DVSEC_STATUS_RSVD, VCXL_RF_RSVD);
	rc = rc
		 ?: vcxl_rf_define(rf, base + CXL_DVSEC_STATUS2, 2, CXL_DVSEC_STATUS2_HDM_PRES_ERR,
				   VCXL_RF_RW1C);
	rc =
	    rc ?: vcxl_rf_define(rf, base + CXL_DVSEC_STATUS2, 2, DVSEC_STATUS2_RSVD, VCXL_RF_RSVD);
	rc = rc ?: vcxl_rf_define(rf, base + CXL_DVSEC_LOCK, 2, CXL_DVSEC_LOCK_CONFIG, VCXL_RF_RWO);
	rc = rc ?: vcxl_rf_define(rf, base + CXL_DVSEC_LOCK, 2, DVSEC_LOCK_RSVD, VCXL_RF_RSVD);
	return rc;
}

/* CXL r3.1 8.1.3.6: CONFIG_LOCK freezes the RWL fields of Control and Range Base. */
static int dvsec_config_lock_group(struct vcxl_dvsec_device *d,
				   const struct vcxl_dvsec_device_cfg *cfg)
{
	uint32_t b = d->base;
	struct vcxl_rf_lock_field f[] = {
	    {b + CXL_DVSEC_CTRL, dvsec_ctrl_rwl_mask(cfg)},
	    {b + CXL_DVSEC_RANGE_BASE_HI(0), ~0u},
	    {b + CXL_DVSEC_RANGE_BASE_LO(0), CXL_DVSEC_RANGE_BASE_LO_MASK},
	    {b + CXL_DVSEC_RANGE_BASE_HI(1), ~0u},
	    {b + CXL_DVSEC_RANGE_BASE_LO(1), CXL_DVSEC_RANGE_BASE_LO_MASK},
	};
	/* Lock (0x14) shares its dword with Capability2: the condition is bit 0 of it. */
	int g = vcxl_rf_lock_group(d->rf, b + CXL_DVSEC_LOCK, CXL_DVSEC_LOCK_CONFIG, f,
				   sizeof(f) / sizeof(f[0]));
	if (g < 0)
		return g;
	d->config_lock_group = g;
	return 0;
}

int vcxl_dvsec_device_layout(struct vcxl_dvsec_device *d, struct vcxl_regfile *rf, uint32_t base,
			     uint32_t next, const struct vcxl_dvsec_device_cfg *cfg,
			     const struct vcxl_dvsec_device_ops *ops, void *opaque)
{
	int rc;

	if (!d || !rf || !cfg || (base & 3))
		return -EINVAL;
	d->rf = rf;
	d->base = base;
	d->ops = ops;
	d->opaque = opaque;
	d->config_lock_group = -1;
	rc = vcxl_dvsec_header_layout(rf, base, next, CXL_DVSEC_ID_DEVICE, CXL_DVSEC_DEVICE_REV,
				      CXL_DVSEC_DEVICE_LEN);
	if (rc)
		return rc;
	/* 8.1.3.1: Capability RO (HwInit), IO_Capable always 1 */
	rc = vcxl_rf_init_val(rf, base + CXL_DVSEC_CAP, 2, cfg->cap | CXL_DVSEC_CAP_IO);
	rc = rc ?: dvsec_define_controls(rf, base, cfg);
	rc = rc ?: dvsec_define_status(rf, base);
	/* 8.1.3.7: Capability2 RO */
	rc = rc ?: vcxl_rf_init_val(rf, base + CXL_DVSEC_CAP2, 2, cfg->cap2);
	for (unsigned i = 0; i < CXL_DVSEC_RANGE_MAX && !rc; i++)
		rc = dvsec_define_range(d, i, cfg);
	/* 8.1.3.10: Capability3 RO, then 2 reserved bytes to the DVSEC length 0x3C */
	rc = rc ?: vcxl_rf_init_val(rf, base + CXL_DVSEC_CAP3, 2, cfg->cap3 & ~DVSEC_CAP3_RSVD);
	rc = rc
		 ?: vcxl_rf_define(rf, base + CXL_DVSEC_CAP3, 4, DVSEC_CAP3_RSVD | DVSEC_PAD_RSVD,
				   VCXL_RF_RSVD);
	/* Control2/Status2 dword: trigger bits on write, live Status2 on read */
	rc = rc ?: vcxl_rf_hook(rf, base + CXL_DVSEC_CTRL2, 4, dvsec_refresh, dvsec_ctrl2_write, d);
	return rc ?: dvsec_config_lock_group(d, cfg);
}

/* CXL r3.1 9.7 (non-sticky to defaults) and 8.1.3.6 (CONFIG_LOCK and the
 * fields it locks are not affected by CXL Reset). */
void vcxl_dvsec_device_cxl_reset(struct vcxl_dvsec_device *d)
{
	struct vcxl_regfile *rf = d->rf;
	uint32_t b = d->base;
	uint16_t ctrl2 = vcxl_rf_get16(rf, b + CXL_DVSEC_CTRL2);

	if (!(vcxl_rf_get16(rf, b + CXL_DVSEC_LOCK) & CXL_DVSEC_LOCK_CONFIG)) {
		vcxl_rf_reset_range(rf, b + CXL_DVSEC_CTRL, sizeof(uint16_t));
		for (unsigned i = 0; i < CXL_DVSEC_RANGE_MAX; i++) {
			vcxl_rf_reset_range(rf, b + CXL_DVSEC_RANGE_BASE_HI(i), sizeof(uint32_t));
			vcxl_rf_reset_range(rf, b + CXL_DVSEC_RANGE_BASE_LO(i), sizeof(uint32_t));
		}
	}
	/* 8.1.3.4: Control2 bit 4 is RWS (sticky), the rest RW */
	vcxl_rf_reset_range(rf, b + CXL_DVSEC_CTRL2, sizeof(uint16_t));
	vcxl_rf_set16(rf, b + CXL_DVSEC_CTRL2,
		      vcxl_rf_get16(rf, b + CXL_DVSEC_CTRL2) |
			  (ctrl2 & CXL_DVSEC_CTRL2_HDM_HOT_STATE));
	/* 8.1.3.5: Cache Invalid reads 0 once Disable Caching is 0 */
	vcxl_rf_set16(rf, b + CXL_DVSEC_STATUS2,
		      vcxl_rf_get16(rf, b + CXL_DVSEC_STATUS2) &
			  (uint16_t)~CXL_DVSEC_STATUS2_CACHE_INV);
}

/* CXL r3.1 8.1.9: Register Locator, one 8-byte entry per register block, all RO. */
int vcxl_dvsec_regloc_layout(struct vcxl_regfile *rf, uint32_t base, uint32_t next,
			     const struct vcxl_regloc_entry *e, unsigned n)
{
	uint32_t len = CXL_REGLOC_FIRST_ENTRY + n * CXL_REGLOC_ENTRY_SIZE;
	int rc;

	if (n == 0 || n > 64)
		return -EINVAL;
	rc = vcxl_dvsec_header_layout(rf, base, next, CXL_DVSEC_ID_REG_LOCATOR, CXL_REGLOC_REV,
				      (uint16_t)len);
	if (rc)
		return rc;
	rc = vcxl_rf_define(rf, base + PCIE_DVSEC_BODY, 2, 0xffff, VCXL_RF_RSVD);
	for (unsigned k = 0; k < n && !rc; k++) {
		if (e[k].bir > 5 || (e[k].offset & 0xffff))
			return -EINVAL;
		uint32_t lo = (uint32_t)(VCXL_FIELD_PREP(CXL_REGLOC_BIR, e[k].bir) |
					 VCXL_FIELD_PREP(CXL_REGLOC_BLOCK_ID, e[k].id)) |
			      (uint32_t)(e[k].offset & CXL_REGLOC_OFFSET_LO);
		rc = vcxl_rf_init_val(rf, base + CXL_REGLOC_BLOCK_LO(k), 4, lo);
		rc =
		    rc ?: vcxl_rf_init_val(rf, base + CXL_REGLOC_BLOCK_HI(k), 4, e[k].offset >> 32);
		rc = rc
			 ?: vcxl_rf_define(rf, base + CXL_REGLOC_BLOCK_LO(k), 4, VCXL_GENMASK(7, 3),
					   VCXL_RF_RSVD);
	}
	return rc;
}

/* CXL r3.1 8.1.7: GPF DVSEC for CXL devices, RO [spec: field layout]. */
int vcxl_dvsec_gpf_device_layout(struct vcxl_regfile *rf, uint32_t base, uint32_t next,
				 uint16_t phase2_duration, uint32_t phase2_power)
{
	uint16_t dur_rsvd = (uint16_t) ~(CXL_GPF_DEV_PHASE2_BASE | CXL_GPF_DEV_PHASE2_SCALE);
	int rc = vcxl_dvsec_header_layout(rf, base, next, CXL_DVSEC_ID_GPF_DEVICE, CXL_GPF_DEV_REV,
					  CXL_GPF_DEV_LEN);
	rc = rc ?: vcxl_rf_init_val(rf, base + CXL_GPF_DEV_PHASE2_DUR, 2, phase2_duration);
	rc = rc ?: vcxl_rf_define(rf, base + CXL_GPF_DEV_PHASE2_DUR, 2, dur_rsvd, VCXL_RF_RSVD);
	rc = rc ?: vcxl_rf_init_val(rf, base + CXL_GPF_DEV_PHASE2_POWER, 4, phase2_power);
	return rc;
}

/*
 * CXL r3.1 8.2.1.3: Flex Bus Port DVSEC. On a device (upstream port) the
 * Control fields mirror what was negotiated at link training; this layout
 * presents the link as trained with the capabilities enabled and makes every
 * register RO [spec: whether an endpoint's Control is writable].
 */
int vcxl_dvsec_flexbus_layout(struct vcxl_regfile *rf, uint32_t base, uint32_t next, uint16_t cap)
{
	int rc = vcxl_dvsec_header_layout(rf, base, next, CXL_DVSEC_ID_FLEXBUS, CXL_FLEXBUS_REV,
					  CXL_FLEXBUS_LEN);
	uint16_t negotiated = cap & (CXL_FLEXBUS_CACHE | CXL_FLEXBUS_IO | CXL_FLEXBUS_MEM |
				     CXL_FLEXBUS_68B_FLIT_VH | CXL_FLEXBUS_256B_FLIT);
	rc = rc ?: vcxl_rf_init_val(rf, base + CXL_FLEXBUS_CAP, 2, cap);
	rc = rc ?: vcxl_rf_init_val(rf, base + CXL_FLEXBUS_CTRL, 2, negotiated);
	rc = rc ?: vcxl_rf_init_val(rf, base + CXL_FLEXBUS_STATUS, 2, negotiated);
	return rc;
}
