// SPDX-License-Identifier: BSD-3-Clause
/* Accelerator model: config space (type-0 header, PCIe, MSI-X, CXL DVSECs, DOE), FLR, CXL
 * reset. */
#include <errno.h>
#include <linux/pci_regs.h>

#include "accel.h"

#define CMD_RW                                                                                     \
	(PCI_COMMAND_MEMORY | PCI_COMMAND_MASTER | PCI_COMMAND_PARITY | PCI_COMMAND_SERR |         \
	 PCI_COMMAND_INTX_DISABLE)
#define CMD_RSVD VCXL_GENMASK(15, 11)
#define STATUS_RW1C                                                                                \
	(PCI_STATUS_PARITY | PCI_STATUS_SIG_TARGET_ABORT | PCI_STATUS_REC_TARGET_ABORT |           \
	 PCI_STATUS_REC_MASTER_ABORT | PCI_STATUS_SIG_SYSTEM_ERROR | PCI_STATUS_DETECTED_PARITY)
#define STATUS_RSVD	   VCXL_GENMASK(2, 0)
#define BAR_MEM_FLAGS_MASK 0xfu

/* PCIe capability fields of the model */
#define PCIE_LINK_SPEED_32GT  5u
#define PCIE_LINK_WIDTH_X16   16u
#define PCIE_LINK_WIDTH_SHIFT 4
#define PCIE_CAP_VERSION      2u
#define PCIE_DEVCAP_MPS_256B  1u
#define PCIE_DEVCTL_RW                                                                             \
	(PCI_EXP_DEVCTL_CERE | PCI_EXP_DEVCTL_NFERE | PCI_EXP_DEVCTL_FERE | PCI_EXP_DEVCTL_URRE |  \
	 PCI_EXP_DEVCTL_RELAX_EN | PCI_EXP_DEVCTL_PAYLOAD | PCI_EXP_DEVCTL_EXT_TAG |               \
	 PCI_EXP_DEVCTL_NOSNOOP_EN | PCI_EXP_DEVCTL_READRQ | PCI_EXP_DEVCTL_BCR_FLR)
#define PCIE_DEVCTL_RESET                                                                          \
	(PCI_EXP_DEVCTL_RELAX_EN | PCI_EXP_DEVCTL_NOSNOOP_EN | PCI_EXP_DEVCTL_READRQ_512B)
#define PCIE_DEVSTA_RW1C                                                                           \
	(PCI_EXP_DEVSTA_CED | PCI_EXP_DEVSTA_NFED | PCI_EXP_DEVSTA_FED | PCI_EXP_DEVSTA_URD)
#define PCIE_DEVSTA_RSVD    VCXL_GENMASK(15, 6)
#define PCIE_LNKCTL_RW	    (PCI_EXP_LNKCTL_ASPMC | PCI_EXP_LNKCTL_CCC | PCI_EXP_LNKCTL_ES)
#define PCIE_LNKCAP2_SPEEDS VCXL_GENMASK(5, 1) /* 2.5 .. 32 GT/s */
#define MSIX_CTRL_RSVD	    VCXL_GENMASK(13, 11)

static uint64_t bar_size(const struct vcxl_model *m, unsigned bar)
{
	return bar == MODEL_COMP_BAR ? VCXL_MODEL_BAR0_SIZE : vcxl_model_bar2_size(m);
}

/* PCI r3.0 6.2.5.1: BAR address bits below the size read 0, so writing all-ones
 * reads back the size mask. BAR0 is 64-bit (BAR1 holds its upper half), BAR2 32-bit. */
static int cfg_bars(const struct vcxl_model *m, struct vcxl_regfile *rf)
{
	uint32_t m0 = (uint32_t) ~(bar_size(m, MODEL_COMP_BAR) - 1) & ~BAR_MEM_FLAGS_MASK;
	uint32_t m2 = (uint32_t) ~(bar_size(m, MODEL_CTRL_BAR) - 1) & ~BAR_MEM_FLAGS_MASK;
	int rc = vcxl_rf_init_val(rf, PCI_BASE_ADDRESS_0, 4, PCI_BASE_ADDRESS_MEM_TYPE_64);
	rc = rc ?: vcxl_rf_define(rf, PCI_BASE_ADDRESS_0, 4, m0, VCXL_RF_RW);
	rc = rc ?: vcxl_rf_define(rf, PCI_BASE_ADDRESS_1, 4, ~0u, VCXL_RF_RW);
	rc = rc ?: vcxl_rf_init_val(rf, PCI_BASE_ADDRESS_2, 4, PCI_BASE_ADDRESS_MEM_TYPE_32);
	rc = rc ?: vcxl_rf_define(rf, PCI_BASE_ADDRESS_2, 4, m2, VCXL_RF_RW);
	/* BAR3..5 and the expansion ROM BAR are not implemented: RO 0 */
	return rc;
}

/* PCI r3.0 6.2: the type-0 header. */
static int cfg_header(const struct vcxl_model *m, struct vcxl_regfile *rf)
{
	int rc = vcxl_rf_init_val(rf, PCI_VENDOR_ID, 2, VCXL_MODEL_VENDOR);
	rc = rc ?: vcxl_rf_init_val(rf, PCI_DEVICE_ID, 2, model_device_id(m));
	rc = rc ?: vcxl_rf_define(rf, PCI_COMMAND, 2, CMD_RW, VCXL_RF_RW);
	rc = rc ?: vcxl_rf_define(rf, PCI_COMMAND, 2, CMD_RSVD, VCXL_RF_RSVD);
	rc = rc ?: vcxl_rf_init_val(rf, PCI_STATUS, 2, PCI_STATUS_CAP_LIST);
	rc = rc ?: vcxl_rf_define(rf, PCI_STATUS, 2, STATUS_RW1C, VCXL_RF_RW1C);
	rc = rc ?: vcxl_rf_define(rf, PCI_STATUS, 2, STATUS_RSVD, VCXL_RF_RSVD);
	rc = rc
		 ?: vcxl_rf_init_val(rf, PCI_CLASS_REVISION, 4,
				     (model_class(m) << 8) | MODEL_REVISION);
	rc = rc ?: vcxl_rf_define(rf, PCI_CACHE_LINE_SIZE, 1, 0xff, VCXL_RF_RW);
	rc = rc ?: vcxl_rf_init_val(rf, PCI_HEADER_TYPE, 1, PCI_HEADER_TYPE_NORMAL);
	rc = rc ?: cfg_bars(m, rf);
	rc = rc ?: vcxl_rf_init_val(rf, PCI_SUBSYSTEM_VENDOR_ID, 2, VCXL_MODEL_VENDOR);
	rc = rc ?: vcxl_rf_init_val(rf, PCI_SUBSYSTEM_ID, 2, model_device_id(m));
	rc = rc ?: vcxl_rf_init_val(rf, PCI_CAPABILITY_LIST, 1, MODEL_PCIE_CAP);
	rc = rc ?: vcxl_rf_define(rf, PCI_CAPABILITY_LIST + 1, 2, 0xffff, VCXL_RF_RSVD);
	rc = rc ?: vcxl_rf_define(rf, PCI_CAPABILITY_LIST + 3, 1, 0xff, VCXL_RF_RSVD);
	rc = rc ?: vcxl_rf_define(rf, PCI_CAPABILITY_LIST + 4, 4, ~0u, VCXL_RF_RSVD);
	/* no INTx: Interrupt Pin 0, Interrupt Line is a plain RW scratch register */
	rc = rc ?: vcxl_rf_define(rf, PCI_INTERRUPT_LINE, 1, 0xff, VCXL_RF_RW);
	return rc;
}

/* PCIe r6 7.5.3.4: Initiate FLR is a trigger that reads 0. */
static void cfg_devctl_write(void *opaque, struct vcxl_regfile *rf, uint32_t dw_off, uint32_t old,
			     uint32_t val)
{
	struct vcxl_model *m = opaque;
	if (!(val & PCI_EXP_DEVCTL_BCR_FLR))
		return;
	vcxl_rf_update32(rf, dw_off, PCI_EXP_DEVCTL_BCR_FLR, 0);
	model_flr(m);
}

/* PCIe r6 7.5.3: PCI Express capability (version 2) of an endpoint, FLR capable. */
static int cfg_pcie_cap(struct vcxl_model *m)
{
	struct vcxl_regfile *rf = &m->cfgrf;
	uint32_t b = MODEL_PCIE_CAP;
	uint32_t link = PCIE_LINK_SPEED_32GT | (PCIE_LINK_WIDTH_X16 << PCIE_LINK_WIDTH_SHIFT);
	uint32_t hdr = PCI_CAP_ID_EXP | (MODEL_MSIX_CAP << 8) |
		       ((PCIE_CAP_VERSION | (PCI_EXP_TYPE_ENDPOINT << 4)) << 16);

	int rc = vcxl_rf_init_val(rf, b, 4, hdr);
	rc = rc
		 ?: vcxl_rf_init_val(rf, b + PCI_EXP_DEVCAP, 4,
				     PCIE_DEVCAP_MPS_256B | PCI_EXP_DEVCAP_EXT_TAG |
					 PCI_EXP_DEVCAP_FLR);
	rc = rc ?: vcxl_rf_init_val(rf, b + PCI_EXP_DEVCTL, 2, PCIE_DEVCTL_RESET);
	rc = rc ?: vcxl_rf_define(rf, b + PCI_EXP_DEVCTL, 2, PCIE_DEVCTL_RW, VCXL_RF_RW);
	rc = rc ?: vcxl_rf_define(rf, b + PCI_EXP_DEVSTA, 2, PCIE_DEVSTA_RW1C, VCXL_RF_RW1C);
	rc = rc ?: vcxl_rf_define(rf, b + PCI_EXP_DEVSTA, 2, PCIE_DEVSTA_RSVD, VCXL_RF_RSVD);
	rc = rc ?: vcxl_rf_init_val(rf, b + PCI_EXP_LNKCAP, 4, link);
	rc = rc ?: vcxl_rf_define(rf, b + PCI_EXP_LNKCTL, 2, PCIE_LNKCTL_RW, VCXL_RF_RW);
	rc = rc ?: vcxl_rf_init_val(rf, b + PCI_EXP_LNKSTA, 2, link);
	rc = rc ?: vcxl_rf_init_val(rf, b + PCI_EXP_LNKCAP2, 4, PCIE_LNKCAP2_SPEEDS);
	rc = rc ?: vcxl_rf_init_val(rf, b + PCI_EXP_LNKCTL2, 2, PCIE_LINK_SPEED_32GT);
	rc = rc ?: vcxl_rf_define(rf, b + PCI_EXP_LNKCTL2, 2, PCI_EXP_LNKCTL2_TLS, VCXL_RF_RW);
	rc = rc ?: vcxl_rf_hook(rf, b + PCI_EXP_DEVCTL, 4, NULL, cfg_devctl_write, m);
	return rc;
}

static void cfg_msix_write(void *opaque, struct vcxl_regfile *rf, uint32_t dw_off, uint32_t old,
			   uint32_t val)
{
	model_msix_update(opaque);
}

/* PCI r3.0 6.8.2: MSI-X capability, table and PBA in BAR2. */
static int cfg_msix_cap(struct vcxl_model *m)
{
	struct vcxl_regfile *rf = &m->cfgrf;
	uint32_t b = MODEL_MSIX_CAP;
	uint32_t hdr = PCI_CAP_ID_MSIX | ((uint32_t)(VCXL_MODEL_MSIX_VECTORS - 1) << 16);

	int rc = vcxl_rf_init_val(rf, b, 4, hdr);
	rc = rc
		 ?: vcxl_rf_define(rf, b + PCI_MSIX_FLAGS, 2,
				   PCI_MSIX_FLAGS_ENABLE | PCI_MSIX_FLAGS_MASKALL, VCXL_RF_RW);
	rc = rc ?: vcxl_rf_define(rf, b + PCI_MSIX_FLAGS, 2, MSIX_CTRL_RSVD, VCXL_RF_RSVD);
	rc = rc
		 ?: vcxl_rf_init_val(rf, b + PCI_MSIX_TABLE, 4,
				     VCXL_MODEL_MSIX_TABLE | MODEL_CTRL_BAR);
	rc = rc ?: vcxl_rf_init_val(rf, b + PCI_MSIX_PBA, 4, VCXL_MODEL_MSIX_PBA | MODEL_CTRL_BAR);
	rc = rc ?: vcxl_rf_hook(rf, b, 4, NULL, cfg_msix_write, m);
	return rc;
}

uint16_t model_msix_ctrl(const struct vcxl_model *m)
{
	return vcxl_rf_get16(&m->cfgrf, MODEL_MSIX_CAP + PCI_MSIX_FLAGS);
}

/* Memory_Info_Valid is valid from creation; Memory_Active follows the delay. */
void model_refresh_ranges(struct vcxl_model *m)
{
	uint32_t v =
	    CXL_DVSEC_RANGE_INFO_VALID | (model_mem_active(m) ? CXL_DVSEC_RANGE_ACTIVE : 0);
	vcxl_rf_update32(&m->cfgrf, MODEL_DVSEC_DEVICE + CXL_DVSEC_RANGE_SIZE_LO(0),
			 CXL_DVSEC_RANGE_INFO_VALID | CXL_DVSEC_RANGE_ACTIVE, v);
}

static void dvsec_refresh(void *opaque, struct vcxl_dvsec_device *d, uint32_t off)
{
	model_refresh_ranges(opaque);
}

/*
 * CXL r3.1 9.7: CXL reset. Non-sticky registers return to their defaults:
 * the HDM decoders (including Lock-On-Commit locks) and Global Control, and
 * the Device DVSEC but CONFIG_LOCK and the fields it locks (8.1.3.6; the spec
 * layer's rule, the same the vfio-cxl core applies to the guest's view).
 * Device memory is cleared when Mem Clr Enable was set, Memory_Active
 * restarts its delay. A firmware-committed decoder does not come back:
 * firmware does not run on a CXL reset, the host must re-commit.
 */
int model_cxl_reset(struct vcxl_model *m)
{
	uint32_t st2 = MODEL_DVSEC_DEVICE + CXL_DVSEC_STATUS2;
	uint16_t cap = vcxl_rf_get16(&m->cfgrf, MODEL_DVSEC_DEVICE + CXL_DVSEC_CAP);
	uint16_t ctrl2 = vcxl_rf_get16(&m->cfgrf, MODEL_DVSEC_DEVICE + CXL_DVSEC_CTRL2);

	if (!(cap & CXL_DVSEC_CAP_RESET))
		return -EOPNOTSUPP;
	vcxl_rf_set16(&m->cfgrf, st2,
		      vcxl_rf_get16(&m->cfgrf, st2) &
			  (uint16_t) ~(CXL_DVSEC_STATUS2_RESET_DONE | CXL_DVSEC_STATUS2_RESET_ERR));
	vcxl_hdm_reset(&m->comp.hdm);
	if ((ctrl2 & CXL_DVSEC_CTRL2_RESET_MEMCLR) && (cap & CXL_DVSEC_CAP_RESET_MEMCLR))
		model_mem_clear(m);
	model_restart_active(m);
	/* the device cache is written back and invalidated as part of the reset;
	 * Cache Invalid reads 0 again with Disable Caching back to 0 (8.1.3.5) */
	vcxl_dvsec_device_cxl_reset(&m->dvsec);
	vcxl_rf_set16(&m->cfgrf, st2, vcxl_rf_get16(&m->cfgrf, st2) | CXL_DVSEC_STATUS2_RESET_DONE);
	model_refresh_ranges(m);
	return 0;
}

/* CXL r3.1 8.1.3.4: Control2 Initiate Cache WB+Invalidate / Initiate CXL Reset. */
static void dvsec_trigger(void *opaque, struct vcxl_dvsec_device *d, uint16_t bits)
{
	struct vcxl_model *m = opaque;
	uint32_t st2 = MODEL_DVSEC_DEVICE + CXL_DVSEC_STATUS2;
	uint16_t cap = vcxl_rf_get16(&m->cfgrf, MODEL_DVSEC_DEVICE + CXL_DVSEC_CAP);

	/* the model's cache holds nothing dirty: write-back completes at once */
	if ((bits & CXL_DVSEC_CTRL2_INIT_CACHE_WBI) && (cap & CXL_DVSEC_CAP_CACHE_WBI))
		vcxl_rf_set16(&m->cfgrf, st2,
			      vcxl_rf_get16(&m->cfgrf, st2) | CXL_DVSEC_STATUS2_CACHE_INV);
	if (bits & CXL_DVSEC_CTRL2_INIT_RESET)
		model_cxl_reset(m);
}

static const struct vcxl_dvsec_device_ops dvsec_ops = {dvsec_trigger, dvsec_refresh};

/* CXL r3.1 8.1.3: a Type-2 device: cache + mem capable, one range, CXL reset with mem clear. */
static int cfg_cxl_dvsecs(struct vcxl_model *m)
{
	struct vcxl_regfile *rf = &m->cfgrf;
	struct vcxl_dvsec_device_cfg dc = {
	    .cap = (uint16_t)(CXL_DVSEC_CAP_CACHE | CXL_DVSEC_CAP_MEM |
			      VCXL_FIELD_PREP(CXL_DVSEC_CAP_HDM_COUNT, 1) |
			      CXL_DVSEC_CAP_CACHE_WBI | CXL_DVSEC_CAP_RESET |
			      VCXL_FIELD_PREP(CXL_DVSEC_CAP_RESET_TMO, MODEL_RESET_TMO_ENC) |
			      CXL_DVSEC_CAP_RESET_MEMCLR | CXL_DVSEC_CAP_VIRAL),
	    /* 1 MiB device cache: unit 64 KiB, 16 units */
	    .cap2 = (uint16_t)(VCXL_FIELD_PREP(CXL_DVSEC_CAP2_CACHE_UNIT, 1) |
			       VCXL_FIELD_PREP(CXL_DVSEC_CAP2_CACHE_SIZE, 16)),
	    .cap3 = 0,
	    .ctrl = 0,
	    .range_size = {m->mem_size, 0},
	    .range_flags =
		{(uint32_t)(VCXL_FIELD_PREP(CXL_DVSEC_RANGE_MEDIA_TYPE, CXL_DVSEC_MEDIA_CDAT) |
			    VCXL_FIELD_PREP(CXL_DVSEC_RANGE_MEM_CLASS, CXL_DVSEC_CLASS_CDAT) |
			    VCXL_FIELD_PREP(CXL_DVSEC_RANGE_ACTIVE_TMO, m->cfg.active_timeout_enc)),
		 0},
	};
	struct vcxl_regloc_entry loc[] = {
	    {MODEL_COMP_BAR, CXL_REGLOC_RBI_COMPONENT, m->comp_off},
	    {MODEL_CTRL_BAR, CXL_REGLOC_RBI_MEMDEV, VCXL_MODEL_T3_MEMDEV_OFF},
	};
	uint16_t flexbus =
	    CXL_FLEXBUS_CACHE | CXL_FLEXBUS_IO | CXL_FLEXBUS_MEM | CXL_FLEXBUS_68B_FLIT_VH;

	/* Type-3: no CXL.cache, and the memory device registers are listed too */
	if (model_is_type3(m)) {
		model_type3_dvsec_cfg(m, &dc);
		flexbus &= (uint16_t)~CXL_FLEXBUS_CACHE;
	}
	int rc = vcxl_dvsec_device_layout(&m->dvsec, rf, MODEL_DVSEC_DEVICE, MODEL_DVSEC_REGLOC,
					  &dc, &dvsec_ops, m);
	rc = rc
		 ?: vcxl_dvsec_regloc_layout(rf, MODEL_DVSEC_REGLOC, MODEL_DVSEC_GPF, loc,
					     model_is_type3(m) ? 2 : 1);
	/* GPF phase 2: 100 ms (base 1, scale 100 ms = 5 [spec]), 2 W */
	rc = rc
		 ?: vcxl_dvsec_gpf_device_layout(
			rf, MODEL_DVSEC_GPF, MODEL_DVSEC_FLEXBUS,
			(uint16_t)(VCXL_FIELD_PREP(CXL_GPF_DEV_PHASE2_BASE, 1) |
				   VCXL_FIELD_PREP(CXL_GPF_DEV_PHASE2_SCALE, 5)),
			2000);
	rc = rc ?: vcxl_dvsec_flexbus_layout(rf, MODEL_DVSEC_FLEXBUS, MODEL_DOE, flexbus);
	rc = rc ?: vcxl_doe_layout(&m->doe, rf, MODEL_DOE, 0, m->cdat, (size_t)m->cdat_len);
	return rc;
}

int model_cfg_layout(struct vcxl_model *m)
{
	int rc = vcxl_rf_init(&m->cfgrf, MODEL_CFG_SIZE);
	rc = rc ?: cfg_header(m, &m->cfgrf);
	rc = rc ?: cfg_pcie_cap(m);
	rc = rc ?: cfg_msix_cap(m);
	rc = rc ?: cfg_cxl_dvsecs(m);
	return rc;
}

/*
 * PCIe r6 6.6.2: FLR returns the function's config registers to their reset
 * values (the model has no sticky registers outside the CXL DVSEC), aborts
 * the DOE mailbox and resets the job engine and MSI-X state in BAR2. Per CXL
 * r3.1 9.5 FLR does not affect CXL.cache/CXL.mem [spec]: the CXL Device DVSEC
 * (Mem_Enable, CONFIG_LOCK, ranges, sticky status), the HDM decoders and the
 * device memory are left as they are.
 */
void model_flr(struct vcxl_model *m)
{
	uint32_t dv_end = MODEL_DVSEC_DEVICE + CXL_DVSEC_DEVICE_LEN;
	vcxl_rf_reset_range(&m->cfgrf, 0, MODEL_DVSEC_DEVICE);
	vcxl_rf_reset_range(&m->cfgrf, dv_end, MODEL_CFG_SIZE - dv_end);
	vcxl_doe_reset(&m->doe);
	model_engine_reset(m);
	model_type3_flr(m);
}

/*
 * A new tenant: an FLR, and what an FLR keeps that a guest set: the Cache
 * Invalid status of its Initiate Cache WB+Invalidate (CXL r3.1 8.1.3.5; the
 * model caches nothing, so a fresh device reads 0) and the Type-3 mailbox's
 * timestamp and interrupt policy. Host-owned state stays: the DVSEC's
 * Mem_Enable and ranges, the HDM decoders, the DPA window, the LSA.
 */
void model_tenant_reset(struct vcxl_model *m)
{
	uint32_t st2 = MODEL_DVSEC_DEVICE + CXL_DVSEC_STATUS2;

	model_flr(m);
	vcxl_rf_set16(&m->cfgrf, st2,
		      vcxl_rf_get16(&m->cfgrf, st2) & (uint16_t)~CXL_DVSEC_STATUS2_CACHE_INV);
	model_type3_forget(m);
}
