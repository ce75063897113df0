// SPDX-License-Identifier: BSD-3-Clause
/* DOE mailbox (PCIe r6 6.30, 7.9.24) with Discovery and CXL Table Access (CDAT, CXL r3.1 8.1.11).
 */
#include <errno.h>
#include <string.h>

#include "cxl/cxl_spec.h"

#define DOE_HDR_DW    2u /* data object header: vendor/type, length */
#define DOE_REQ_DW    3u /* Discovery and Table Access requests: header + one DW */
#define DOE_REQ_MAX   (sizeof(((struct vcxl_doe *)0)->req) / 4)
#define DOE_RSP_MAX   (sizeof(((struct vcxl_doe *)0)->rsp) / 4)
#define DOE_CTRL_RSVD ((uint32_t) ~(PCI_DOE_CTRL_ABORT | PCI_DOE_CTRL_INT_EN | PCI_DOE_CTRL_GO))
#define DOE_STATUS_RSVD                                                                            \
	((uint32_t) ~(PCI_DOE_STATUS_BUSY | PCI_DOE_STATUS_INT_STATUS | PCI_DOE_STATUS_ERROR |     \
		      PCI_DOE_STATUS_DATA_READY))
#define CDAT_SUBHDR_LEN_OFF 2u /* u8 type, u8 reserved, u16 length */
#define CDAT_SUBHDR_SIZE    4u

/* The protocols this mailbox answers, in Discovery index order (index 0 is Discovery). */
static const struct {
	uint16_t vendor;
	uint8_t type;
} doe_protocols[] = {
    {PCI_DOE_VENDOR_PCISIG, PCI_DOE_TYPE_DISCOVERY},
    {CXL_VENDOR_ID, CXL_DOE_TYPE_TABLE_ACCESS},
};
#define DOE_NR_PROTOCOLS (sizeof(doe_protocols) / sizeof(doe_protocols[0]))

static void doe_status(struct vcxl_doe *doe, uint32_t mask, uint32_t v)
{
	vcxl_rf_update32(doe->rf, doe->base + PCI_DOE_STATUS, mask, v);
}

static uint32_t doe_hdr1(uint16_t vendor, uint8_t type)
{
	return (uint32_t)(VCXL_FIELD_PREP(PCI_DOE_HDR1_VENDOR, vendor) |
			  VCXL_FIELD_PREP(PCI_DOE_HDR1_TYPE, type));
}

/* Abort (PCIe r6 6.30.2): drop request and response, clear Error, Busy and Ready. */
static void doe_abort(struct vcxl_doe *doe)
{
	doe->req_len = 0;
	doe->rsp_len = 0;
	doe->rsp_pos = 0;
	doe->busy = false;
	doe_status(doe, PCI_DOE_STATUS_BUSY | PCI_DOE_STATUS_ERROR | PCI_DOE_STATUS_DATA_READY, 0);
}

static void doe_error(struct vcxl_doe *doe)
{
	doe->req_len = 0;
	doe->rsp_len = 0;
	doe->rsp_pos = 0;
	doe_status(doe, PCI_DOE_STATUS_DATA_READY | PCI_DOE_STATUS_BUSY, 0);
	doe_status(doe, PCI_DOE_STATUS_ERROR, PCI_DOE_STATUS_ERROR);
}

/* PCIe r6 6.30.1.1: Discovery, request DW2[7:0] = index. */
static int doe_discovery(struct vcxl_doe *doe)
{
	unsigned idx = (unsigned)VCXL_FIELD_GET(PCI_DOE_DISC_REQ_INDEX, doe->req[2]);
	if (doe->req_len != DOE_REQ_DW || idx >= DOE_NR_PROTOCOLS)
		return -EINVAL;
	unsigned next = idx + 1 < DOE_NR_PROTOCOLS ? idx + 1 : 0;
	doe->rsp[2] =
	    (uint32_t)(VCXL_FIELD_PREP(PCI_DOE_DISC_RSP_VENDOR, doe_protocols[idx].vendor) |
		       VCXL_FIELD_PREP(PCI_DOE_DISC_RSP_PROTOCOL, doe_protocols[idx].type) |
		       VCXL_FIELD_PREP(PCI_DOE_DISC_RSP_NEXT, next));
	doe->rsp_len = DOE_REQ_DW;
	return 0;
}

static uint16_t le16_at(const uint8_t *p)
{
	return (uint16_t)(p[0] | (p[1] << 8));
}

/* CDAT entry `handle`: 0 is the header, k >= 1 the k-th structure. Bounded by the table. */
static int cdat_entry(const struct vcxl_doe *doe, unsigned handle, size_t *off, size_t *len,
		      bool *last)
{
	size_t o = CDAT_HEADER_SIZE;
	if (!doe->cdat || doe->cdat_len < CDAT_HEADER_SIZE)
		return -ENOENT;
	if (handle == 0) {
		*off = 0;
		*len = CDAT_HEADER_SIZE;
		*last = doe->cdat_len < CDAT_HEADER_SIZE + CDAT_SUBHDR_SIZE;
		return 0;
	}
	for (unsigned k = 1;; k++) {
		if (doe->cdat_len - o < CDAT_SUBHDR_SIZE)
			return -ENOENT;
		size_t l = le16_at(doe->cdat + o + CDAT_SUBHDR_LEN_OFF);
		if (l < CDAT_SUBHDR_SIZE || l > doe->cdat_len - o)
			return -ENOENT;
		if (k == handle) {
			*off = o;
			*len = l;
			*last = doe->cdat_len - (o + l) < CDAT_SUBHDR_SIZE;
			return 0;
		}
		o += l;
	}
}

/* CXL r3.1 8.1.11.1: Read Entry of the CDAT table; response DW2 carries the next handle. */
static int doe_table_access(struct vcxl_doe *doe)
{
	uint32_t q = doe->req[2];
	size_t off, len;
	bool last;

	if (doe->req_len != DOE_REQ_DW ||
	    VCXL_FIELD_GET(CXL_DOE_TABLE_REQ_CODE, q) != CXL_DOE_TABLE_READ_ENTRY ||
	    VCXL_FIELD_GET(CXL_DOE_TABLE_TYPE, q) != CXL_DOE_TABLE_TYPE_CDAT)
		return -EINVAL;
	unsigned handle = (unsigned)VCXL_FIELD_GET(CXL_DOE_TABLE_HANDLE, q);
	if (cdat_entry(doe, handle, &off, &len, &last))
		return -ENOENT;
	size_t dw = (len + 3) / 4;
	if (DOE_REQ_DW + dw > DOE_RSP_MAX)
		return -E2BIG;
	unsigned next = last ? CXL_DOE_TABLE_LAST_HANDLE : handle + 1;
	doe->rsp[2] = (uint32_t)(VCXL_FIELD_PREP(CXL_DOE_TABLE_REQ_CODE, CXL_DOE_TABLE_READ_ENTRY) |
				 VCXL_FIELD_PREP(CXL_DOE_TABLE_TYPE, CXL_DOE_TABLE_TYPE_CDAT) |
				 VCXL_FIELD_PREP(CXL_DOE_TABLE_HANDLE, next));
	memset(&doe->rsp[DOE_REQ_DW], 0, dw * 4);
	memcpy(&doe->rsp[DOE_REQ_DW], doe->cdat + off, len);
	doe->rsp_len = (unsigned)(DOE_REQ_DW + dw);
	return 0;
}

/* PCIe r6 6.30.1: a whole object was written and Go set: check it, run its protocol. */
static void doe_go(struct vcxl_doe *doe)
{
	int rc = -EINVAL;

	if (vcxl_rf_get32(doe->rf, doe->base + PCI_DOE_STATUS) & PCI_DOE_STATUS_ERROR)
		return;
	if (doe->req_len >= DOE_HDR_DW) {
		uint32_t len = (uint32_t)VCXL_FIELD_GET(PCI_DOE_HDR2_LENGTH, doe->req[1]);
		uint16_t vendor = (uint16_t)VCXL_FIELD_GET(PCI_DOE_HDR1_VENDOR, doe->req[0]);
		uint8_t type = (uint8_t)VCXL_FIELD_GET(PCI_DOE_HDR1_TYPE, doe->req[0]);
		if (len == 0)
			len = PCI_DOE_MAX_LENGTH_DW;
		if (len != doe->req_len)
			rc = -EINVAL;
		else if (vendor == PCI_DOE_VENDOR_PCISIG && type == PCI_DOE_TYPE_DISCOVERY)
			rc = doe_discovery(doe);
		else if (vendor == CXL_VENDOR_ID && type == CXL_DOE_TYPE_TABLE_ACCESS)
			rc = doe_table_access(doe);
		if (!rc) {
			doe->rsp[0] = doe_hdr1(vendor, type);
			doe->rsp[1] = (uint32_t)VCXL_FIELD_PREP(PCI_DOE_HDR2_LENGTH, doe->rsp_len);
		}
	}
	doe->req_len = 0;
	if (rc) {
		doe_error(doe);
		return;
	}
	doe->rsp_pos = 0;
	doe->objects++;
	uint32_t st = PCI_DOE_STATUS_DATA_READY;
	if (vcxl_rf_get32(doe->rf, doe->base + PCI_DOE_CTRL) & PCI_DOE_CTRL_INT_EN)
		st |= PCI_DOE_STATUS_INT_STATUS;
	doe_status(doe, st, st);
}

static void doe_ctrl_write(void *opaque, struct vcxl_regfile *rf, uint32_t dw_off, uint32_t old,
			   uint32_t val)
{
	struct vcxl_doe *doe = opaque;
	/* Abort and Go are write-only triggers: they read 0 */
	vcxl_rf_update32(rf, dw_off, PCI_DOE_CTRL_ABORT | PCI_DOE_CTRL_GO, 0);
	if (val & PCI_DOE_CTRL_ABORT)
		doe_abort(doe);
	else if (val & PCI_DOE_CTRL_GO)
		doe_go(doe);
}

/* Write Data Mailbox: each DW written appends to the request object. */
static void doe_write_mbox(void *opaque, struct vcxl_regfile *rf, uint32_t dw_off, uint32_t old,
			   uint32_t val)
{
	struct vcxl_doe *doe = opaque;
	if (vcxl_rf_get32(rf, doe->base + PCI_DOE_STATUS) & PCI_DOE_STATUS_ERROR)
		return;
	if (doe->req_len >= DOE_REQ_MAX) {
		/* longer than this mailbox accepts: Error until Abort */
		doe_error(doe);
		return;
	}
	doe->req[doe->req_len++] = val;
}

static bool doe_ready(const struct vcxl_doe *doe)
{
	return vcxl_rf_get32(doe->rf, doe->base + PCI_DOE_STATUS) & PCI_DOE_STATUS_DATA_READY;
}

/* Read Data Mailbox: reads show the current response DW ... */
static void doe_read_mbox_read(void *opaque, struct vcxl_regfile *rf, uint32_t dw_off)
{
	struct vcxl_doe *doe = opaque;
	uint32_t v = 0;
	if (doe_ready(doe) && doe->rsp_pos < doe->rsp_len)
		v = doe->rsp[doe->rsp_pos];
	vcxl_rf_set32(rf, dw_off, v);
}

/* ... and a write of any value moves to the next one; the last one clears Ready. */
static void doe_read_mbox_write(void *opaque, struct vcxl_regfile *rf, uint32_t dw_off,
				uint32_t old, uint32_t val)
{
	struct vcxl_doe *doe = opaque;
	if (!doe_ready(doe)) {
		doe_error(doe);
		return;
	}
	if (++doe->rsp_pos >= doe->rsp_len) {
		doe->rsp_len = 0;
		doe->rsp_pos = 0;
		doe_status(doe, PCI_DOE_STATUS_DATA_READY, 0);
	}
	vcxl_rf_set32(rf, dw_off, 0);
}

int vcxl_doe_layout(struct vcxl_doe *doe, struct vcxl_regfile *rf, uint32_t base, uint32_t next,
		    const uint8_t *cdat, size_t cdat_len)
{
	if (!doe || !rf || (base & 3) || base < PCIE_EXT_CAP_START ||
	    (uint64_t)base + PCI_DOE_CAP_SIZE > rf->size || (next & 3))
		return -EINVAL;
	memset(doe, 0, sizeof(*doe));
	doe->rf = rf;
	doe->base = base;
	doe->cdat = cdat;
	doe->cdat_len = cdat ? cdat_len : 0;
	uint32_t hdr = (uint32_t)(VCXL_FIELD_PREP(PCIE_EXT_CAP_ID_MASK, PCIE_EXT_CAP_ID_DOE) |
				  VCXL_FIELD_PREP(PCIE_EXT_CAP_VER_MASK, PCIE_EXT_CAP_DOE_VER) |
				  VCXL_FIELD_PREP(PCIE_EXT_CAP_NEXT_MASK, next));
	int rc = vcxl_rf_init_val(rf, base, 4, hdr);
	/* Capabilities: no DOE interrupt (Interrupt Support 0) */
	rc = rc ?: vcxl_rf_init_val(rf, base + PCI_DOE_CAP, 4, 0);
	rc = rc ?: vcxl_rf_define(rf, base + PCI_DOE_CTRL, 4, ~DOE_CTRL_RSVD, VCXL_RF_RW);
	rc = rc ?: vcxl_rf_define(rf, base + PCI_DOE_CTRL, 4, DOE_CTRL_RSVD, VCXL_RF_RSVD);
	rc = rc
		 ?: vcxl_rf_define(rf, base + PCI_DOE_STATUS, 4, PCI_DOE_STATUS_INT_STATUS,
				   VCXL_RF_RW1C);
	rc = rc ?: vcxl_rf_define(rf, base + PCI_DOE_STATUS, 4, DOE_STATUS_RSVD, VCXL_RF_RSVD);
	rc = rc ?: vcxl_rf_define(rf, base + PCI_DOE_WRITE, 4, ~0u, VCXL_RF_RW);
	rc = rc ?: vcxl_rf_hook(rf, base + PCI_DOE_CTRL, 4, NULL, doe_ctrl_write, doe);
	rc = rc ?: vcxl_rf_hook(rf, base + PCI_DOE_WRITE, 4, NULL, doe_write_mbox, doe);
	rc = rc
		 ?: vcxl_rf_hook(rf, base + PCI_DOE_READ, 4, doe_read_mbox_read,
				 doe_read_mbox_write, doe);
	/* PCIe r6 7.9.24.5-6: the mailboxes are DW registers */
	rc = rc ?: vcxl_rf_access_rule(rf, base + PCI_DOE_WRITE, 8, VCXL_RF_ACC_DWORD);
	return rc;
}

void vcxl_doe_reset(struct vcxl_doe *doe)
{
	vcxl_rf_reset_range(doe->rf, doe->base, PCI_DOE_CAP_SIZE);
	doe->req_len = 0;
	doe->rsp_len = 0;
	doe->rsp_pos = 0;
	doe->busy = false;
}
