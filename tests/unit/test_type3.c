// SPDX-License-Identifier: BSD-3-Clause
/*
 * The Type-3 personality of the model: identity, Register Locator, DVSEC, HDM reset
 * values, BAR2 layout, a replay of Linux's cxl_pci probe (drivers/cxl/pci.c:
 * cxl_pci_probe in 6.12 order), background commands and their MSI-X completion
 * interrupt, FLR, media readiness, the host core's Type-3 checks, and that the
 * accelerator personality is unchanged.
 */
#include <errno.h>
#include <linux/pci_regs.h>
#include <stdlib.h>
#include <string.h>

#include "irq_log.h"
#include "tap.h"
#include "cxl/cxl_mbox.h"
#include "cxl/cxl_spec.h"
#include "host/host_cxl.h"
#include "model/model.h"

#define G256 VCXL_SZ_256M
#define MDEV VCXL_MODEL_T3_MEMDEV_OFF

static struct vcxl_backend *be;
static const uint8_t cel_uuid[CXL_UUID_SIZE] = CXL_CEL_UUID;

static uint64_t cr(uint32_t off, unsigned len)
{
	uint64_t v = 0;
	if (be->ops->cfg_read(be->dev, off, len, &v))
		return 0xbad0bad0bad0ull;
	return v;
}

static void cw(uint32_t off, unsigned len, uint64_t v)
{
	be->ops->cfg_write(be->dev, off, len, v);
}

static int rd32(void *opaque, uint32_t off, uint32_t *v)
{
	*v = (uint32_t)cr(off, 4);
	return 0;
}

static uint64_t br(unsigned bar, uint64_t off, unsigned len)
{
	uint64_t v = 0;
	if (be->ops->bar_read(be->dev, bar, off, len, &v))
		return 0xbad0bad0bad0ull;
	return v;
}

static int bw(unsigned bar, uint64_t off, unsigned len, uint64_t v)
{
	return be->ops->bar_write(be->dev, bar, off, len, v);
}

static struct vcxl_model *mk(enum vcxl_model_kind kind, uint64_t mem, bool fw, unsigned delay)
{
	struct vcxl_model_cfg c = {.mem_size = mem,
				   .kind = kind,
				   .firmware_committed = fw,
				   .fw_hpa_base = 0x2000000000ull,
				   .active_delay_ms = delay};
	struct vcxl_model *m = NULL;
	int rc = vcxl_model_create(&c, &m);
	if (rc) {
		diag("create failed: %d", rc);
		exit(1);
	}
	be = vcxl_model_backend(m);
	return m;
}

static uint32_t find_dvsec(uint16_t id, uint32_t *len)
{
	uint32_t off = 0;
	vcxl_pcie_find_dvsec(rd32, NULL, CXL_VENDOR_ID, id, &off, len);
	return off;
}

/* Register Locator entries of the current device */
static unsigned regloc(struct vcxl_regloc_entry *e, unsigned max)
{
	uint32_t len = 0, rl = find_dvsec(CXL_DVSEC_ID_REG_LOCATOR, &len);
	unsigned n = (len - CXL_REGLOC_FIRST_ENTRY) / CXL_REGLOC_ENTRY_SIZE;
	for (unsigned k = 0; k < n && k < max; k++)
		vcxl_regloc_decode((uint32_t)cr(rl + CXL_REGLOC_BLOCK_LO(k), 4),
				   (uint32_t)cr(rl + CXL_REGLOC_BLOCK_HI(k), 4), &e[k]);
	return n;
}

/* component-block offset of the HDM capability, via the CM capability array */
static uint64_t comp_off;
static int comp_rd(void *opaque, uint32_t off, uint32_t *v)
{
	*v = (uint32_t)br(0, comp_off + CXL_CM_OFFSET + off, 4);
	return 0;
}

static uint64_t hdm_base(void)
{
	struct vcxl_regloc_entry e[4];
	uint32_t off = 0;
	regloc(e, 4);
	comp_off = e[0].offset;
	vcxl_comp_find_cap(comp_rd, NULL, CXL_CM_CAP_ID_HDM, &off);
	return comp_off + CXL_CM_OFFSET + off;
}

/* ---- mailbox access as cxl_pci does it (readq/writeq/readl/writel, memcpy_*io) ---------- */

struct mbox {
	uint64_t mb; /* mailbox capability offset in BAR2 */
	uint64_t md; /* memdev capability offset in BAR2 */
	size_t payload;
};

static uint16_t mbox_send(const struct mbox *x, uint16_t op, const void *in, size_t in_len,
			  void *out, size_t out_cap, size_t *out_len)
{
	if (br(2, x->mb + CXLDEV_MBOX_CTRL, 4) & CXLDEV_MBOX_CTRL_DOORBELL)
		return 0xffff; /* "mailbox queue busy" */
	bw(2, x->mb + CXLDEV_MBOX_CMD, 8,
	   op | VCXL_FIELD_PREP(CXLDEV_MBOX_CMD_PAYLOAD_LEN, in_len));
	for (size_t i = 0; i < in_len; i++)
		bw(2, x->mb + CXLDEV_MBOX_PAYLOAD + i, 1, ((const uint8_t *)in)[i]);
	bw(2, x->mb + CXLDEV_MBOX_CTRL, 4, CXLDEV_MBOX_CTRL_DOORBELL);
	int spins = 0;
	while (br(2, x->mb + CXLDEV_MBOX_CTRL, 4) & CXLDEV_MBOX_CTRL_DOORBELL)
		if (++spins > 1000)
			return 0xfffe; /* "mailbox timeout" */
	uint16_t rc =
	    (uint16_t)VCXL_FIELD_GET(CXLDEV_MBOX_STATUS_RC, br(2, x->mb + CXLDEV_MBOX_STATUS, 8));
	size_t n =
	    (size_t)VCXL_FIELD_GET(CXLDEV_MBOX_CMD_PAYLOAD_LEN, br(2, x->mb + CXLDEV_MBOX_CMD, 8));
	if (n > out_cap)
		n = out_cap;
	for (size_t i = 0; i < n; i++)
		((uint8_t *)out)[i] = (uint8_t)br(2, x->mb + CXLDEV_MBOX_PAYLOAD + i, 1);
	*out_len = n;
	return rc;
}

static uint64_t le(const uint8_t *p, unsigned n)
{
	uint64_t v = 0;
	for (unsigned i = 0; i < n; i++)
		v |= (uint64_t)p[i] << (8 * i);
	return v;
}

/* cxl_probe_device_regs: the capability array of the RBI 3 block */
static int probe_device_regs(uint64_t base, struct mbox *x)
{
	uint64_t arr = br(2, base, 8);
	uint64_t status = 0;
	uint32_t mlen = 0, slen = 0, dlen = 0;

	if (VCXL_FIELD_GET(CXLDEV_CAP_ARRAY_ID, arr) != CXLDEV_CAP_ARRAY_CAP_ID)
		return -ENODEV;
	x->mb = x->md = 0;
	for (unsigned cap = 1; cap <= VCXL_FIELD_GET(CXLDEV_CAP_ARRAY_COUNT, arr); cap++) {
		uint64_t h = base + cap * CXLDEV_CAP_HDR_STRIDE;
		uint32_t id = (uint32_t)VCXL_FIELD_GET(CXLDEV_CAP_HDR_ID, br(2, h, 4));
		uint32_t off = (uint32_t)br(2, h + CXLDEV_CAP_HDR_OFFSET, 4);
		uint32_t len = (uint32_t)br(2, h + CXLDEV_CAP_HDR_LENGTH, 4);
		if (id == CXLDEV_CAP_ID_DEVICE_STATUS) {
			status = base + off;
			slen = len;
		} else if (id == CXLDEV_CAP_ID_PRIMARY_MBOX) {
			x->mb = base + off;
			mlen = len;
		} else if (id == CXLDEV_CAP_ID_MEMDEV) {
			x->md = base + off;
			dlen = len;
		}
	}
	if (!status || !x->mb || !x->md || slen < 8 || dlen < 8 || mlen < CXLDEV_MBOX_PAYLOAD)
		return -ENXIO;
	return 0;
}

/*
 * cxl_pci_probe (Linux 6.12): device regs, component regs, media ready, IRQ vectors,
 * mailbox setup, enumerate commands (CEL), set timestamp, poison state, identify, range
 * info, event config (policy + drain the four logs), RAS unmask; then a poison list read
 * as region creation / trigger_poison_list does.
 */
static void test_linux_probe(void)
{
	struct vcxl_model *m = mk(VCXL_MODEL_TYPE3, 2 * G256, false, 0);
	struct vcxl_regloc_entry e[4];
	struct mbox x = {0};
	static uint8_t out[1u << 20];
	uint8_t in[64];
	size_t n;

	/* cxl_mem_pci_tbl: class code 0x050210 */
	is(cr(PCI_CLASS_REVISION, 4) >> 8, 0x050210, "class: CXL memory device");
	is(cr(PCI_VENDOR_ID, 2), VCXL_MODEL_VENDOR, "vendor");
	is(cr(PCI_DEVICE_ID, 2), VCXL_MODEL_TYPE3_DEVICE, "device 0x0d93");
	/* pcim_enable_device + pci_set_master */
	cw(PCI_COMMAND, 2, PCI_COMMAND_MEMORY | PCI_COMMAND_MASTER);
	uint32_t dv = find_dvsec(CXL_DVSEC_ID_DEVICE, NULL);
	ok(dv != 0, "Device DVSEC present");

	/* cxl_pci_setup_regs(RBI_MEMDEV) */
	unsigned nr = regloc(e, 4);
	is(nr, 2, "Register Locator: two blocks");
	ok(e[1].id == CXL_REGLOC_RBI_MEMDEV && e[1].bir == 2 && e[1].offset == MDEV,
	   "memory device registers at BAR2 + 64 KiB");
	ok(e[0].id == CXL_REGLOC_RBI_COMPONENT && e[0].bir == 0, "component block in BAR0");
	struct vcxl_bar_info bi;
	be->ops->bar_info(be->dev, 2, &bi);
	ok(e[1].offset % VCXL_SZ_64K == 0 && e[1].offset + VCXL_SZ_4K <= bi.size,
	   "memdev block 64 KiB aligned, inside BAR2");
	is(probe_device_regs(e[1].offset, &x), 0, "cxl_probe_device_regs finds status/mbox/memdev");

	/* cxl_pci_setup_regs(RBI_COMPONENT): RAS and HDM found */
	uint64_t hdm = hdm_base();
	ok(hdm > comp_off, "component block: HDM capability found");

	/* cxl_await_media_ready: range valid + active for HDM_Count ranges, then media status */
	uint16_t cap = (uint16_t)cr(dv + CXL_DVSEC_CAP, 2);
	unsigned hdm_count = (unsigned)VCXL_FIELD_GET(CXL_DVSEC_CAP_HDM_COUNT, cap);
	is(hdm_count, 1, "HDM_Count 1");
	bool active = true;
	for (unsigned i = 0; i < hdm_count; i++) {
		uint32_t lo = (uint32_t)cr(dv + CXL_DVSEC_RANGE_SIZE_LO(i), 4);
		active &= (lo & CXL_DVSEC_RANGE_INFO_VALID) && (lo & CXL_DVSEC_RANGE_ACTIVE);
	}
	ok(active, "Memory_Info_Valid and Memory_Active");
	uint64_t ms = br(2, x.md + CXLMDEV_STATUS, 8);
	is(VCXL_FIELD_GET(CXLMDEV_STATUS_MEDIA, ms), CXLMDEV_MEDIA_READY, "media ready");

	/* cxl_alloc_irq_vectors: MSI-X is there */
	is(be->ops->irq_count(be->dev, VCXL_IRQ_MSIX), VCXL_MODEL_MSIX_VECTORS, "MSI-X vectors");

	/* cxl_pci_setup_mailbox */
	uint32_t caps = (uint32_t)br(2, x.mb + CXLDEV_MBOX_CAPS, 4);
	ok(br(2, x.md + CXLMDEV_STATUS, 8) & CXLMDEV_STATUS_MBOX_READY, "mailbox interface ready");
	ok(!(br(2, x.mb + CXLDEV_MBOX_CTRL, 4) & CXLDEV_MBOX_CTRL_DOORBELL), "mailbox idle");
	x.payload = (size_t)1 << VCXL_FIELD_GET(CXLDEV_MBOX_CAP_PAYLOAD_SIZE, caps);
	if (x.payload > (1u << 20))
		x.payload = 1u << 20;
	ok(x.payload >= 256, "payload %zu >= 256 bytes", x.payload);
	ok((caps & CXLDEV_MBOX_CAP_BG_CMD_IRQ) &&
	       VCXL_FIELD_GET(CXLDEV_MBOX_CAP_IRQ_MSGNUM, caps) == VCXL_MODEL_T3_MBOX_MSGNUM &&
	       VCXL_MODEL_T3_MBOX_MSGNUM < VCXL_MODEL_MSIX_VECTORS,
	   "background completion interrupt on MSI-X vector %u (of %u)", VCXL_MODEL_T3_MBOX_MSGNUM,
	   VCXL_MODEL_MSIX_VECTORS);

	/* cxl_enumerate_cmds: Get Supported Logs (size_out = payload, min_out 2) */
	uint16_t rc = mbox_send(&x, CXL_MBOX_OP_GET_SUPPORTED_LOGS, NULL, 0, out, x.payload, &n);
	ok(rc == 0 && n >= 2, "Get Supported Logs");
	uint32_t cel_size = 0;
	for (unsigned i = 0; i < le(out, 2); i++) {
		const uint8_t *ent = out + CXL_GSL_HDR_SIZE + i * CXL_GSL_ENTRY_SIZE;
		if (!memcmp(ent, cel_uuid, CXL_UUID_SIZE))
			cel_size = (uint32_t)le(ent + CXL_UUID_SIZE, 4);
	}
	ok(cel_size > 0 && cel_size % CXL_CEL_ENTRY_SIZE == 0, "CEL found, %u bytes", cel_size);
	/* cxl_xfer_log: chunks of the payload size, each must return what was asked */
	static uint8_t cel[4096];
	bool xfer = cel_size <= sizeof(cel);
	for (uint32_t off = 0; xfer && off < cel_size;) {
		uint32_t chunk = cel_size - off < x.payload ? cel_size - off : (uint32_t)x.payload;
		memcpy(in, cel_uuid, CXL_UUID_SIZE);
		for (unsigned b = 0; b < 4; b++) {
			in[CXL_GET_LOG_IN_OFFSET + b] = (uint8_t)(off >> (8 * b));
			in[CXL_GET_LOG_IN_LENGTH + b] = (uint8_t)(chunk >> (8 * b));
		}
		rc = mbox_send(&x, CXL_MBOX_OP_GET_LOG, in, CXL_GET_LOG_IN_SIZE, cel + off, chunk,
			       &n);
		xfer = rc == 0 && n == chunk;
		off += chunk;
	}
	ok(xfer, "Get Log transfers the CEL");
	bool has_identify = false, has_poison = false, has_policy = false, has_events = false;
	for (uint32_t i = 0; i < cel_size / CXL_CEL_ENTRY_SIZE; i++) {
		uint16_t op = (uint16_t)le(cel + 4 * i, 2);
		has_identify |= op == CXL_MBOX_OP_IDENTIFY;
		has_poison |= op == CXL_MBOX_OP_GET_POISON;
		has_policy |= op == CXL_MBOX_OP_GET_EVT_INT_POLICY;
		has_events |= op == CXL_MBOX_OP_GET_EVENT_RECORDS;
	}
	ok(has_identify && has_poison && has_policy && has_events,
	   "CEL enables identify, poison, event commands");

	/* cxl_set_timestamp */
	uint8_t ts[8] = {1, 2, 3, 4, 5, 6, 7, 8};
	is(mbox_send(&x, CXL_MBOX_OP_SET_TIMESTAMP, ts, 8, out, 0, &n), 0, "Set Timestamp");

	/* cxl_dev_state_identify: size_out 0x43 must be met */
	rc = mbox_send(&x, CXL_MBOX_OP_IDENTIFY, NULL, 0, out, CXL_IDENTIFY_SIZE_V2, &n);
	ok(rc == 0 && n == CXL_IDENTIFY_SIZE_V2, "Identify Memory Device");
	is(le(out + CXL_IDENTIFY_TOTAL_CAP, 8), 2, "total 2 x 256 MiB");
	is(le(out + CXL_IDENTIFY_VOLATILE_CAP, 8), 2, "all volatile");
	is(le(out + CXL_IDENTIFY_PERSISTENT_CAP, 8), 0, "no pmem");
	is(le(out + CXL_IDENTIFY_PARTITION_ALIGN, 8), 0,
	   "partition align 0: cxl_mem_create_range_info skips Get Partition Info");
	is(le(out + CXL_IDENTIFY_LSA_SIZE, 4), VCXL_MODEL_T3_LSA_SIZE, "LSA size");
	ok(le(out + CXL_IDENTIFY_POISON_MAX, 3) > 0, "poison list max > 0");
	is(memcmp(out, VCXL_MODEL_T3_FW_REVISION, strlen(VCXL_MODEL_T3_FW_REVISION)), 0,
	   "firmware revision");
	/* the DVSEC range agrees with Identify */
	uint64_t rsize = (cr(dv + CXL_DVSEC_RANGE_SIZE_HI(0), 4) << 32) |
			 (cr(dv + CXL_DVSEC_RANGE_SIZE_LO(0), 4) & CXL_DVSEC_RANGE_SIZE_LO_MASK);
	is(rsize, 2 * G256, "DVSEC range 1 size = identified capacity");

	/* cxl_event_config: get policy, set MSI/MSI-X, get again, drain the logs */
	rc = mbox_send(&x, CXL_MBOX_OP_GET_EVT_INT_POLICY, NULL, 0, out, 4, &n);
	ok(rc == 0 && n == 4 && VCXL_FIELD_GET(CXL_INT_MODE, out[0]) != CXL_INT_FW,
	   "event interrupt policy not firmware-owned");
	uint8_t pol[4] = {CXL_INT_MSI_MSIX, CXL_INT_MSI_MSIX, CXL_INT_MSI_MSIX, CXL_INT_MSI_MSIX};
	is(mbox_send(&x, CXL_MBOX_OP_SET_EVT_INT_POLICY, pol, 4, out, 0, &n), 0,
	   "Set Event Interrupt Policy (4 bytes, as 6.12)");
	mbox_send(&x, CXL_MBOX_OP_GET_EVT_INT_POLICY, NULL, 0, out, 4, &n);
	bool vec_ok = true;
	for (unsigned i = 0; i < 4; i++)
		vec_ok &= VCXL_FIELD_GET(CXL_INT_MODE, out[i]) == CXL_INT_MSI_MSIX &&
			  VCXL_FIELD_GET(CXL_INT_MSGNUM, out[i]) < VCXL_MODEL_MSIX_VECTORS;
	ok(vec_ok, "each log signals an existing MSI-X vector");
	uint32_t evs = (uint32_t)br(2, e[1].offset + VCXL_MDEV_STATUS_OFF, 4);
	is(evs, 0, "event status: nothing pending");
	bool empty = true;
	for (uint8_t log = CXL_EVENT_LOG_FATAL + 1; log-- > 0;) {
		rc = mbox_send(&x, CXL_MBOX_OP_GET_EVENT_RECORDS, &log, 1, out, x.payload, &n);
		empty &= rc == 0 && n >= CXL_GET_EVENTS_HDR_SIZE &&
			 le(out + CXL_GET_EVENTS_COUNT, 2) == 0;
	}
	ok(empty, "fatal/fail/warn/info logs empty");

	/* cxl_pci_ras_unmask: RAS masks are writable */
	uint32_t ras = 0;
	vcxl_comp_find_cap(comp_rd, NULL, CXL_CM_CAP_ID_RAS, &ras);
	uint64_t um = comp_off + CXL_CM_OFFSET + ras + CXL_RAS_UNCORR_MASK;
	bw(0, um, 4, 0);
	is(br(0, um, 4), 0, "RAS uncorrectable mask cleared");

	/* region creation / trigger_poison_list: Get Poison List over the DPA range */
	memset(in, 0, sizeof(in));
	uint64_t units = 2 * G256 / CXL_POISON_UNIT;
	for (unsigned b = 0; b < 8; b++)
		in[8 + b] = (uint8_t)(units >> (8 * b));
	rc = mbox_send(&x, CXL_MBOX_OP_GET_POISON, in, CXL_POISON_IN_SIZE, out, x.payload, &n);
	ok(rc == 0 && n == CXL_POISON_OUT_HDR_SIZE && le(out + CXL_POISON_OUT_COUNT, 2) == 0,
	   "Get Poison List: none");

	/* HDM decoder of a Type-3: Target Range Type resets to HOSTONLY */
	uint32_t ctrl = (uint32_t)br(0, hdm + CXL_HDM_DEC_CTRL(0), 4);
	ok(ctrl & CXL_HDM_DEC_CTRL_HOSTONLY, "decoder 0 Target Range Type: host-only");
	ok(!(ctrl & CXL_HDM_DEC_CTRL_COMMITTED), "decoder 0 not committed");

	/* unknown commands get a defined answer */
	rc = mbox_send(&x, 0x4400, NULL, 0, out, 0, &n);
	is(rc, CXL_MBOX_RC_UNSUPPORTED, "Sanitize: Unsupported");
	vcxl_model_destroy(m);
}

static void test_identity_and_bars(void)
{
	struct vcxl_model *m = mk(VCXL_MODEL_TYPE3, 0, false, 0);
	struct vcxl_bar_info bi;
	uint32_t dv = find_dvsec(CXL_DVSEC_ID_DEVICE, NULL);

	is(vcxl_model_get_kind(m), VCXL_MODEL_TYPE3, "kind");
	ok(strstr(be->ops->name(be->dev), "type3") != NULL, "name says type3");
	is(cr(PCI_SUBSYSTEM_ID, 2), VCXL_MODEL_TYPE3_DEVICE, "subsystem id");
	uint16_t cap = (uint16_t)cr(dv + CXL_DVSEC_CAP, 2);
	is(cap, 0x1e, "DVSEC Capability 0x1E: IO, Mem, HwInit, HDM_Count 1");
	ok(!(cr(dv + CXL_DVSEC_CTRL, 2) & CXL_DVSEC_CTRL_CACHE_EN), "no cache enable");
	is(be->ops->reset(be->dev, VCXL_RESET_CXL), -EOPNOTSUPP, "no CXL reset");
	uint32_t fb = find_dvsec(CXL_DVSEC_ID_FLEXBUS, NULL);
	ok(fb && !(cr(fb + CXL_FLEXBUS_CAP, 2) & CXL_FLEXBUS_CACHE) &&
	       (cr(fb + CXL_FLEXBUS_CAP, 2) & CXL_FLEXBUS_MEM),
	   "Flex Bus: CXL.mem, no CXL.cache");

	/* BAR2 sizing and contents */
	cw(PCI_BASE_ADDRESS_2, 4, 0xffffffff);
	is((~(cr(PCI_BASE_ADDRESS_2, 4) & ~0xfu) + 1) & 0xffffffffu, VCXL_MODEL_T3_BAR2_SIZE,
	   "BAR2 sizes to 128 KiB");
	ok(be->ops->bar_info(be->dev, 2, &bi) == 0 && bi.size == VCXL_MODEL_T3_BAR2_SIZE &&
	       bi.fd < 0,
	   "BAR2 info: 128 KiB, trapped (no fd)");
	is(vcxl_model_bar2_size(m), VCXL_MODEL_T3_BAR2_SIZE, "bar2 size helper");
	is(br(2, ACCEL_REG_ID, 4), 0, "no job engine");
	is(bw(2, ACCEL_REG_DOORBELL, 4, ACCEL_DOORBELL_GO), 0, "engine doorbell write ignored");
	is(br(2, ACCEL_REG_STATUS, 4), 0, "engine status reads 0");
	is(br(2, VCXL_MODEL_MSIX_TABLE + PCI_MSIX_ENTRY_VECTOR_CTRL, 4),
	   PCI_MSIX_ENTRY_CTRL_MASKBIT, "MSI-X table in place, vector masked");
	is(br(2, 0x8000, 4), 0, "hole between MSI-X and the memdev block reads 0");
	is(bw(2, 0x8000, 4, 0x1234), 0, "hole write dropped");
	is(br(2, 0x8000, 4), 0, "still 0");
	is(bw(2, MDEV - 4, 8, 0), -EINVAL, "access straddling the block start refused");
	is(br(2, MDEV + 0x1ffc, 4), 0, "past the block reads 0");
	is(br(2, VCXL_MODEL_T3_BAR2_SIZE, 4), 0xbad0bad0bad0ull, "past BAR2: error");
	uint64_t v;
	is(be->ops->bar_read(be->dev, 2, VCXL_MODEL_T3_BAR2_SIZE - 4, 8, &v), -EINVAL,
	   "access across the BAR end refused");
	is(br(2, MDEV, 8) & 0xffff, CXLDEV_CAP_ARRAY_CAP_ID, "capability array at the block");
	is(br(2, MDEV + VCXL_MDEV_MBOX_OFF + CXLDEV_MBOX_CAPS, 4) & CXLDEV_MBOX_CAP_PAYLOAD_SIZE,
	   VCXL_MODEL_T3_PAYLOAD_SHIFT, "mailbox payload shift");
	/* 1- and 2-byte register reads work (guests may use them) */
	is(br(2, MDEV + CXLDEV_CAP_HDR_FIRST + 1, 1), 0, "byte read of a cap header");
	vcxl_model_remove(m);
	is(be->ops->bar_read(be->dev, 2, MDEV, 8, &v), -ENODEV, "removed: -ENODEV");
	is(v, ~0ull, "removed: all-ones");
	vcxl_model_destroy(m);
}

static void test_firmware_committed(void)
{
	struct vcxl_model *m = mk(VCXL_MODEL_TYPE3, G256, true, 0);
	uint64_t hdm = hdm_base();
	uint32_t ctrl = (uint32_t)br(0, hdm + CXL_HDM_DEC_CTRL(0), 4);

	ok((ctrl & CXL_HDM_DEC_CTRL_COMMITTED) && (ctrl & CXL_HDM_DEC_CTRL_HOSTONLY),
	   "firmware committed decoder 0 as host-only memory");
	int fd;
	uint64_t fo;
	is(be->ops->hpa_map(be->dev, 0x2000000000ull, G256, &fd, &fo), 0,
	   "CXL.mem decodes the firmware range");
	vcxl_model_destroy(m);
}

static struct mbox t3_mbox(void)
{
	struct mbox x = {.mb = MDEV + VCXL_MDEV_MBOX_OFF,
			 .md = MDEV + VCXL_MDEV_MEMDEV_OFF,
			 .payload = 1u << VCXL_MODEL_T3_PAYLOAD_SHIFT};
	return x;
}

static void test_background_and_flr(void)
{
	struct vcxl_model *m = mk(VCXL_MODEL_TYPE3, G256, false, 0);
	struct mbox x = t3_mbox();
	uint8_t in[CXL_SCAN_MEDIA_IN_SIZE] = {0}, out[64];
	size_t n;

	in[8] = 1;
	is(mbox_send(&x, CXL_MBOX_OP_SCAN_MEDIA, in, sizeof(in), out, 0, &n),
	   CXL_MBOX_RC_BACKGROUND, "scan media started in the background");
	ok(br(2, x.mb + CXLDEV_MBOX_STATUS, 8) & CXLDEV_MBOX_STATUS_BG_OP, "background op set");
	is(VCXL_FIELD_GET(CXLDEV_MBOX_BG_PCT, br(2, x.mb + CXLDEV_MBOX_BG_STATUS, 8)), 0, "0 %%");
	vcxl_model_poll(m);
	uint64_t bg = br(2, x.mb + CXLDEV_MBOX_BG_STATUS, 8);
	ok(VCXL_FIELD_GET(CXLDEV_MBOX_BG_PCT, bg) == 100 &&
	       VCXL_FIELD_GET(CXLDEV_MBOX_BG_RC, bg) == 0,
	   "the model's poll completes it: 100 %%, success");
	ok(!(br(2, x.mb + CXLDEV_MBOX_STATUS, 8) & CXLDEV_MBOX_STATUS_BG_OP),
	   "background op clear");
	is(mbox_send(&x, CXL_MBOX_OP_GET_SCAN_MEDIA, NULL, 0, out, sizeof(out), &n), 0,
	   "scan results");

	/* label storage survives FLR; the mailbox is reset by it */
	uint8_t set[12] = {0, 0, 0, 0, 0, 0, 0, 0, 'L', 'S', 'A', '!'};
	is(mbox_send(&x, CXL_MBOX_OP_SET_LSA, set, sizeof(set), out, 0, &n), 0, "set LSA");
	mbox_send(&x, CXL_MBOX_OP_SCAN_MEDIA, in, sizeof(in), out, 0, &n);
	uint32_t pcie = (uint32_t)cr(PCI_CAPABILITY_LIST, 1); /* the PCIe capability */
	cw(pcie + PCI_EXP_DEVCTL, 2, cr(pcie + PCI_EXP_DEVCTL, 2) | PCI_EXP_DEVCTL_BCR_FLR);
	ok(br(2, x.mb + CXLDEV_MBOX_STATUS, 8) == 0 && br(2, x.mb + CXLDEV_MBOX_BG_STATUS, 8) == 0,
	   "FLR: mailbox status and background status reset");
	is(mbox_send(&x, CXL_MBOX_OP_GET_SCAN_MEDIA, NULL, 0, out, sizeof(out), &n),
	   CXL_MBOX_RC_INVALID_INPUT, "FLR: scan abandoned, no results");
	uint8_t get[8] = {0, 0, 0, 0, 4, 0, 0, 0};
	ok(mbox_send(&x, CXL_MBOX_OP_GET_LSA, get, 8, out, sizeof(out), &n) == 0 && n == 4 &&
	       !memcmp(out, "LSA!", 4),
	   "FLR: label storage kept");
	ok(br(2, x.md + CXLMDEV_STATUS, 8) & CXLMDEV_STATUS_MBOX_READY, "FLR: mailbox ready");
	vcxl_model_destroy(m);
}

static uint64_t msix_vctrl_off(unsigned v)
{
	return VCXL_MODEL_MSIX_TABLE + v * PCI_MSIX_ENTRY_SIZE + PCI_MSIX_ENTRY_VECTOR_CTRL;
}

/* CXL r3.1 8.2.8.4.4: the background completion interrupt goes through the model's
 * MSI-X (PCI r3.0 6.8.2): only with the enable bit; held pending while masked. */
static void test_bg_irq(void)
{
	struct vcxl_model *m = mk(VCXL_MODEL_TYPE3, G256, false, 0);
	struct mbox x = t3_mbox();
	struct irq_log log = {0};
	const unsigned vec = VCXL_MODEL_T3_MBOX_MSGNUM;
	const uint32_t bg = CXLDEV_MBOX_CTRL_BG_CMD_IRQ;
	uint8_t in[CXL_SCAN_MEDIA_IN_SIZE] = {0}, out[8];
	uint32_t msix = 0;
	size_t n;

	in[8] = 1; /* one 64-byte line */
	be->ops->set_irq_handler(be->dev, on_irq, &log);
	ok(vcxl_pci_find_cap(rd32, NULL, PCI_CAP_ID_MSIX, &msix) == 0, "MSI-X capability");
	cw(msix + PCI_MSIX_FLAGS, 2, PCI_MSIX_FLAGS_ENABLE);
	bw(2, msix_vctrl_off(vec), 4, 0);

	is(mbox_send(&x, CXL_MBOX_OP_SCAN_MEDIA, in, sizeof(in), out, 0, &n),
	   CXL_MBOX_RC_BACKGROUND, "scan, interrupt enable clear");
	vcxl_model_poll(m);
	ok(!(br(2, x.mb + CXLDEV_MBOX_STATUS, 8) & CXLDEV_MBOX_STATUS_BG_OP), "completed");
	is(log.count, 0, "enable clear: no interrupt (unlike QEMU's cxl-type3)");

	bw(2, x.mb + CXLDEV_MBOX_CTRL, 4, bg);
	is(mbox_send(&x, CXL_MBOX_OP_SCAN_MEDIA, in, sizeof(in), out, 0, &n),
	   CXL_MBOX_RC_BACKGROUND, "scan, rung as cxl_pci does (Doorbell alone)");
	is(br(2, x.mb + CXLDEV_MBOX_CTRL, 4), 0, "that write cleared the (RW) enable");
	bw(2, x.mb + CXLDEV_MBOX_CTRL, 4, bg);
	is(log.count, 0, "enable set while it runs: no interrupt before completion");
	vcxl_model_poll(m);
	ok(log.count == 1 && log.last == vec, "completion raised MSI-X vector %u (%u raised)", vec,
	   log.count);

	/* masked vector: pending in the PBA, delivered on unmask */
	bw(2, msix_vctrl_off(vec), 4, PCI_MSIX_ENTRY_CTRL_MASKBIT);
	mbox_send(&x, CXL_MBOX_OP_SCAN_MEDIA, in, sizeof(in), out, 0, &n);
	bw(2, x.mb + CXLDEV_MBOX_CTRL, 4, bg);
	vcxl_model_poll(m);
	is(log.count, 1, "masked vector: not delivered");
	ok(br(2, VCXL_MODEL_MSIX_PBA, 4) & (1u << vec), "masked vector: pending bit set");
	bw(2, msix_vctrl_off(vec), 4, 0);
	ok(log.count == 2 && !(br(2, VCXL_MODEL_MSIX_PBA, 4) & (1u << vec)),
	   "unmask delivers it and clears the pending bit");

	/* MSI-X disabled: held the same way */
	cw(msix + PCI_MSIX_FLAGS, 2, 0);
	mbox_send(&x, CXL_MBOX_OP_SCAN_MEDIA, in, sizeof(in), out, 0, &n);
	bw(2, x.mb + CXLDEV_MBOX_CTRL, 4, bg);
	vcxl_model_poll(m);
	is(log.count, 2, "MSI-X disabled: not delivered");
	cw(msix + PCI_MSIX_FLAGS, 2, PCI_MSIX_FLAGS_ENABLE);
	is(log.count, 3, "delivered once MSI-X is enabled");

	/* FLR: the enable is a mailbox register, reset with it */
	bw(2, x.mb + CXLDEV_MBOX_CTRL, 4, bg);
	uint32_t pcie = (uint32_t)cr(PCI_CAPABILITY_LIST, 1);
	cw(pcie + PCI_EXP_DEVCTL, 2, cr(pcie + PCI_EXP_DEVCTL, 2) | PCI_EXP_DEVCTL_BCR_FLR);
	is(br(2, x.mb + CXLDEV_MBOX_CTRL, 4), 0, "FLR clears the interrupt enable");
	be->ops->set_irq_handler(be->dev, NULL, NULL);
	vcxl_model_destroy(m);
}

static void test_media_not_ready(void)
{
	struct vcxl_model *m = mk(VCXL_MODEL_TYPE3, G256, false, 60000);
	struct mbox x = t3_mbox();
	uint32_t dv = find_dvsec(CXL_DVSEC_ID_DEVICE, NULL);

	ok(!(cr(dv + CXL_DVSEC_RANGE_SIZE_LO(0), 4) & CXL_DVSEC_RANGE_ACTIVE), "memory not active");
	uint64_t ms = br(2, x.md + CXLMDEV_STATUS, 8);
	ok(VCXL_FIELD_GET(CXLMDEV_STATUS_MEDIA, ms) == CXLMDEV_MEDIA_NOT_READY &&
	       (ms & CXLMDEV_STATUS_MBOX_READY),
	   "media not ready, mailbox ready anyway");
	uint8_t out[CXL_IDENTIFY_SIZE];
	size_t n;
	is(mbox_send(&x, CXL_MBOX_OP_IDENTIFY, NULL, 0, out, sizeof(out), &n), 0,
	   "identify works before media is ready");
	vcxl_model_destroy(m);
}

/* The host core's Type-3 path: device registers found, media-ready check passes. */
static void test_host_core(void)
{
	struct vcxl_host h;
	struct vcxl_cxl_dev *d = NULL;
	struct vcxl_dev_facts f = {.media_ready = true};
	char err[160] = "";
	struct vcxl_model *m = mk(VCXL_MODEL_TYPE3, G256, false, 0);

	vcxl_host_init(&h);
	is(vcxl_cxl_probe(&h, be, &f, &d, err, sizeof(err)), 0, "host probe with media-ready");
	if (d) {
		ok(d->has_devregs && d->devregs_bar == 2 && d->devregs_off == MDEV,
		   "host found the device registers");
		is(vcxl_cxl_media_ready(d, err, sizeof(err)), 0, "media ready");
		vcxl_cxl_remove(d);
	} else {
		diag("%s", err);
		ok(0, "host found the device registers");
		ok(0, "media ready");
	}
	vcxl_model_destroy(m);

	m = mk(VCXL_MODEL_ACCEL, G256, false, 0);
	d = NULL;
	is(vcxl_cxl_probe(&h, be, &f, &d, err, sizeof(err)), -ENODEV,
	   "accelerator has no device registers: media-ready probe fails");
	vcxl_model_destroy(m);
	vcxl_host_fini(&h);
}

/* The accelerator personality is as before: identity, BAR2, Register Locator, HDM reset. */
static void test_accel_unchanged(void)
{
	struct vcxl_model *m = mk(VCXL_MODEL_ACCEL, G256, false, 0);
	struct vcxl_regloc_entry e[4];
	struct vcxl_bar_info bi;
	uint32_t len = 0;

	is(vcxl_model_get_kind(m), VCXL_MODEL_ACCEL, "default kind: accelerator");
	is(cr(PCI_CLASS_REVISION, 4) >> 8, 0x120000, "accel class 0x120000");
	is(cr(PCI_DEVICE_ID, 2), VCXL_MODEL_DEVICE, "accel device 0x0d94");
	find_dvsec(CXL_DVSEC_ID_REG_LOCATOR, &len);
	is(len, CXL_REGLOC_FIRST_ENTRY + CXL_REGLOC_ENTRY_SIZE, "one Register Locator entry");
	is(regloc(e, 4), 1, "only the component block");
	ok(be->ops->bar_info(be->dev, 2, &bi) == 0 && bi.size == VCXL_MODEL_BAR2_SIZE,
	   "BAR2 16 KiB");
	is(br(2, ACCEL_REG_ID, 4), ACCEL_ID_VALUE, "job engine present");
	is(br(2, VCXL_MODEL_BAR2_SIZE, 4), 0xbad0bad0bad0ull, "BAR2 end as before");
	uint64_t hdm = hdm_base();
	ok(!(br(0, hdm + CXL_HDM_DEC_CTRL(0), 4) & CXL_HDM_DEC_CTRL_HOSTONLY),
	   "accel decoder resets device-coherent");
	uint32_t dv = find_dvsec(CXL_DVSEC_ID_DEVICE, NULL);
	ok(cr(dv + CXL_DVSEC_CAP, 2) & CXL_DVSEC_CAP_CACHE, "accel is cache capable");
	vcxl_model_destroy(m);

	struct vcxl_model_cfg bad = {.kind = (enum vcxl_model_kind)7};
	is(vcxl_model_create(&bad, &m), -EINVAL, "unknown kind refused");
}

int main(void)
{
	test_linux_probe();
	test_identity_and_bars();
	test_firmware_committed();
	test_background_and_flr();
	test_bg_irq();
	test_media_not_ready();
	test_host_core();
	test_accel_unchanged();
	return done();
}
