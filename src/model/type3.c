// SPDX-License-Identifier: BSD-3-Clause
/*
 * The Type-3 personality of the model (cfg.kind == VCXL_MODEL_TYPE3): a CXL
 * memory expander (8086:0d93, class 0x050210) that a stock Linux cxl_pci /
 * cxl_port / cxl_mem stack drives.
 *
 * It shares the accelerator's config space layout, component block and HDM
 * decoders (Target Range Type resets to HOSTONLY), MSI-X and device memory,
 * and differs in:
 *  - the CXL Device DVSEC: CXL.io + CXL.mem only, Mem_HwInit, HDM_Count 1, no
 *    CXL reset (QEMU's type3 Capability 0x1E);
 *  - the Register Locator, which also lists the memory device registers
 *    (RBI 3) at BAR2 + 64 KiB: capability array, device status, primary
 *    mailbox, memory device status (src/cxl/mailbox.c); the mailbox signals
 *    background command completion on an MSI-X vector when enabled;
 *  - BAR2 is 128 KiB and has no job engine (its registers read 0);
 *  - CDAT describes the memory as EFI conventional, specific purpose.
 * Media status follows Memory_Active: ready once the active delay has passed.
 */
#include <errno.h>
#include <string.h>

#include "accel.h"

/* Identify: records each (empty) event log could hold, poison list capacity */
#define T3_EVENT_LOG_SIZE 32
#define T3_POISON_MAX	  256
#define T3_TEMPERATURE_C  35
/* Event interrupts use MSI-X vector 0; the mailbox's (background command
 * completion) is VCXL_MODEL_T3_MBOX_MSGNUM */
#define T3_EVENT_MSGNUM 0

bool model_is_type3(const struct vcxl_model *m)
{
	return m->cfg.kind == VCXL_MODEL_TYPE3;
}

enum vcxl_model_kind vcxl_model_get_kind(const struct vcxl_model *m)
{
	return m->cfg.kind;
}

uint64_t vcxl_model_bar2_size(const struct vcxl_model *m)
{
	return model_is_type3(m) ? VCXL_MODEL_T3_BAR2_SIZE : VCXL_MODEL_BAR2_SIZE;
}

uint16_t model_device_id(const struct vcxl_model *m)
{
	return model_is_type3(m) ? VCXL_MODEL_TYPE3_DEVICE : VCXL_MODEL_DEVICE;
}

/* CXL r3.1 8.1.12.1: a CXL memory device has class 05h, subclass 02h, prog-if 10h. */
uint32_t model_class(const struct vcxl_model *m)
{
	return model_is_type3(m) ? VCXL_MODEL_CLASS_TYPE3 : VCXL_MODEL_CLASS_ACCEL;
}

/* CXL r3.1 8.1.3.1: CXL.io and CXL.mem, memory initialised by the device
 * (Mem_HwInit_Mode), one range; no CXL.cache and no CXL reset. */
void model_type3_dvsec_cfg(const struct vcxl_model *m, struct vcxl_dvsec_device_cfg *dc)
{
	dc->cap = (uint16_t)(CXL_DVSEC_CAP_IO | CXL_DVSEC_CAP_MEM | CXL_DVSEC_CAP_MEM_HWINIT |
			     VCXL_FIELD_PREP(CXL_DVSEC_CAP_HDM_COUNT, 1));
	dc->cap2 = 0;
	dc->cap3 = 0;
	dc->ctrl = 0;
}

/* CXL r3.1 8.2.8.5.1.1: media is ready when the memory is active. */
static void t3_refresh(void *opaque, struct vcxl_memdev *d)
{
	struct vcxl_model *m = opaque;

	vcxl_memdev_set_media(d,
			      model_mem_active(m) ? CXLMDEV_MEDIA_READY : CXLMDEV_MEDIA_NOT_READY);
}

/* CXL r3.1 8.2.8.4.3: for MSI-X the Interrupt Message Number is the table
 * entry; the model's MSI-X path delivers it or holds it pending (masked). */
static void t3_mbox_irq(void *opaque, struct vcxl_memdev *d, unsigned msgnum)
{
	model_msix_raise(opaque, msgnum);
}

static const struct vcxl_memdev_ops t3_ops = {
    .refresh = t3_refresh,
    .irq = t3_mbox_irq,
};

int model_type3_layout(struct vcxl_model *m)
{
	struct vcxl_memdev_facts f = {
	    .volatile_bytes = m->mem_size,
	    .persistent_bytes = 0,
	    .lsa_size = sizeof(m->lsa),
	    .lsa = m->lsa,
	    .poison_max = T3_POISON_MAX,
	    .event_log_size = T3_EVENT_LOG_SIZE,
	    .event_msgnum = T3_EVENT_MSGNUM,
	    .bg_irq = true,
	    .mbox_msgnum = VCXL_MODEL_T3_MBOX_MSGNUM,
	    .temperature_c = T3_TEMPERATURE_C,
	};
	size_t n = strlen(VCXL_MODEL_T3_FW_REVISION);
	int rc;

	if (!model_is_type3(m))
		return 0;
	memcpy(f.fw_revision, VCXL_MODEL_T3_FW_REVISION,
	       n < sizeof(f.fw_revision) ? n : sizeof(f.fw_revision));
	rc = vcxl_rf_init(&m->memdevrf, vcxl_memdev_block_size(VCXL_MODEL_T3_PAYLOAD_SHIFT));
	rc = rc
		 ?: vcxl_memdev_layout(&m->memdev, &m->memdevrf, 0, VCXL_MODEL_T3_PAYLOAD_SHIFT, &f,
				       &t3_ops, m);
	return rc;
}

void model_type3_fini(struct vcxl_model *m)
{
	vcxl_memdev_fini(&m->memdev);
	vcxl_rf_fini(&m->memdevrf);
}

/* BAR2 from VCXL_MODEL_BAR2_SIZE up: the memory device block at its 64 KiB
 * boundary, the rest reads 0 and drops writes. No access may straddle an edge. */
int model_type3_bar2_access(struct vcxl_model *m, uint64_t off, unsigned len, uint64_t *val,
			    bool wr)
{
	uint64_t size = vcxl_model_bar2_size(m);
	uint64_t mb = VCXL_MODEL_T3_MEMDEV_OFF, me = mb + m->memdevrf.size;

	if (!model_is_type3(m) || off >= size || len > size - off)
		return -EINVAL;
	if (off >= mb && off < me) {
		if (len > me - off)
			return -EINVAL;
		uint32_t o = (uint32_t)(off - mb);
		return wr ? vcxl_rf_write(&m->memdevrf, o, len, *val)
			  : vcxl_rf_read(&m->memdevrf, o, len, val);
	}
	if (off < mb && off + len > mb)
		return -EINVAL;
	if (!wr)
		*val = 0;
	return 0;
}

/* FLR resets the function's registers: the mailbox is idle afterwards and a
 * background command is abandoned [spec]; facts, LSA and policy are kept. */
void model_type3_flr(struct vcxl_model *m)
{
	if (model_is_type3(m))
		vcxl_memdev_reset(&m->memdev);
}

/* A new tenant: also the timestamp and event interrupt policy go. */
void model_type3_forget(struct vcxl_model *m)
{
	if (model_is_type3(m))
		vcxl_memdev_forget(&m->memdev);
}

/* A background command (Scan Media) finishes at the next poll of the model. */
void model_type3_poll(struct vcxl_model *m)
{
	if (model_is_type3(m) && vcxl_memdev_bg_busy(&m->memdev))
		vcxl_memdev_bg_complete(&m->memdev);
}
