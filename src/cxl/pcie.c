// SPDX-License-Identifier: BSD-3-Clause
/* PCI capability list and PCIe extended capability walks, DVSEC discovery and DVSEC headers. */
#include <errno.h>
#include <linux/pci_regs.h>

#include "cxl/cxl_spec.h"

#define PCIE_CFG_SPACE_END 0x1000u
/* Upper bound on the number of standard capabilities: one per dword. */
#define PCI_CAP_MAX_WALK ((PCI_CAP_END - PCI_CAP_START) / 4)
/* Upper bound on the number of extended capabilities: one per dword. */
#define PCIE_EXT_CAP_MAX_WALK ((PCIE_CFG_SPACE_END - PCIE_EXT_CAP_START) / 4)

/*
 * Walk the extended capability list from 0x100 and call match() on every
 * header (PCIe r6 7.6.3). The walk is bounded: a chain longer than the number
 * of dwords in extended config space, a pointer below 0x100 or outside config
 * space, or an unaligned pointer is a malformed chain (-ELOOP).
 */
typedef bool (*ext_cap_match_fn)(vcxl_cfg_read32_fn rd, void *opaque, uint32_t off, uint32_t hdr,
				 const void *arg);

static int ext_cap_walk(vcxl_cfg_read32_fn rd, void *opaque, ext_cap_match_fn match,
			const void *arg, uint32_t *found)
{
	uint32_t off = PCIE_EXT_CAP_START;

	for (unsigned n = 0; n < PCIE_EXT_CAP_MAX_WALK; n++) {
		uint32_t hdr;
		int rc = rd(opaque, off, &hdr);
		if (rc)
			return rc;
		/* An all-zero header at 0x100 means no extended capabilities; all-ones is a
		 * device that is gone or a master abort. */
		if (hdr == 0 || hdr == ~0u)
			return -ENOENT;
		if (match(rd, opaque, off, hdr, arg)) {
			*found = off;
			return 0;
		}
		uint32_t next = (uint32_t)VCXL_FIELD_GET(PCIE_EXT_CAP_NEXT_MASK, hdr);
		if (next == 0)
			return -ENOENT;
		if (next < PCIE_EXT_CAP_START || next >= PCIE_CFG_SPACE_END || (next & 3))
			return -ELOOP;
		off = next;
	}
	return -ELOOP;
}

/* PCI r3.0 6.7: Status bit 4 says there is a list; it starts at the
 * Capabilities Pointer and every entry holds its ID and the next pointer. */
int vcxl_pci_find_cap(vcxl_cfg_read32_fn rd, void *opaque, uint8_t id, uint32_t *off)
{
	uint32_t cmd_status, hdr, ptr;
	int rc;

	if (!rd || !off)
		return -EINVAL;
	rc = rd(opaque, PCI_COMMAND, &cmd_status);
	if (rc)
		return rc;
	if (cmd_status == ~0u || !((cmd_status >> 16) & PCI_STATUS_CAP_LIST))
		return -ENOENT;
	rc = rd(opaque, PCI_CAPABILITY_LIST & ~3u, &ptr);
	if (rc)
		return rc;
	ptr &= PCI_CAP_PTR_MASK;
	for (unsigned n = 0; n < PCI_CAP_MAX_WALK; n++) {
		if (ptr == 0)
			return -ENOENT;
		if (ptr < PCI_CAP_START || ptr >= PCI_CAP_END)
			return -ELOOP;
		rc = rd(opaque, ptr, &hdr);
		if (rc)
			return rc;
		if (VCXL_FIELD_GET(PCI_CAP_HDR_ID_MASK, hdr) == id) {
			*off = ptr;
			return 0;
		}
		ptr = (uint32_t)VCXL_FIELD_GET(PCI_CAP_HDR_NEXT_MASK, hdr) & PCI_CAP_PTR_MASK;
	}
	return -ELOOP;
}

static bool match_cap_id(vcxl_cfg_read32_fn rd, void *opaque, uint32_t off, uint32_t hdr,
			 const void *arg)
{
	return VCXL_FIELD_GET(PCIE_EXT_CAP_ID_MASK, hdr) == *(const uint16_t *)arg;
}

int vcxl_pcie_find_ext_cap(vcxl_cfg_read32_fn rd, void *opaque, uint16_t id, uint32_t *off)
{
	if (!rd || !off)
		return -EINVAL;
	return ext_cap_walk(rd, opaque, match_cap_id, &id, off);
}

struct dvsec_key {
	uint16_t vendor, id;
};

/* PCIe r6 7.9.6: DVSEC Header 1 carries the vendor, Header 2 the DVSEC ID. */
static bool match_dvsec(vcxl_cfg_read32_fn rd, void *opaque, uint32_t off, uint32_t hdr,
			const void *arg)
{
	const struct dvsec_key *k = arg;
	uint32_t h1, h2;

	if (VCXL_FIELD_GET(PCIE_EXT_CAP_ID_MASK, hdr) != PCIE_EXT_CAP_ID_DVSEC)
		return false;
	if (off + PCIE_DVSEC_HEADER2 + 4 > PCIE_CFG_SPACE_END)
		return false;
	if (rd(opaque, off + PCIE_DVSEC_HEADER1, &h1) || rd(opaque, off + PCIE_DVSEC_HEADER2, &h2))
		return false;
	return VCXL_FIELD_GET(PCIE_DVSEC_HDR1_VENDOR, h1) == k->vendor &&
	       VCXL_FIELD_GET(PCIE_DVSEC_HDR2_ID, h2) == k->id;
}

int vcxl_pcie_find_dvsec(vcxl_cfg_read32_fn rd, void *opaque, uint16_t vendor, uint16_t dvsec_id,
			 uint32_t *off, uint32_t *len)
{
	struct dvsec_key k = {vendor, dvsec_id};
	uint32_t at, h1;
	int rc;

	if (!rd || !off)
		return -EINVAL;
	rc = ext_cap_walk(rd, opaque, match_dvsec, &k, &at);
	if (rc)
		return rc;
	rc = rd(opaque, at + PCIE_DVSEC_HEADER1, &h1);
	if (rc)
		return rc;
	*off = at;
	if (len)
		*len = (uint32_t)VCXL_FIELD_GET(PCIE_DVSEC_HDR1_LEN, h1);
	return 0;
}

/* PCIe r6 7.9.6.1-3: extended capability header plus DVSEC Headers 1 and 2, all RO. */
int vcxl_dvsec_header_layout(struct vcxl_regfile *rf, uint32_t base, uint32_t next,
			     uint16_t dvsec_id, uint8_t rev, uint16_t len)
{
	if ((base & 3) || (next & 3) || len < PCIE_DVSEC_BODY || len > 0xfff ||
	    (uint64_t)base + len > rf->size || (next && next < PCIE_EXT_CAP_START) ||
	    next >= PCIE_CFG_SPACE_END || rev > 0xf)
		return -EINVAL;
	uint32_t hdr = (uint32_t)(VCXL_FIELD_PREP(PCIE_EXT_CAP_ID_MASK, PCIE_EXT_CAP_ID_DVSEC) |
				  VCXL_FIELD_PREP(PCIE_EXT_CAP_VER_MASK, PCIE_EXT_CAP_DVSEC_VER) |
				  VCXL_FIELD_PREP(PCIE_EXT_CAP_NEXT_MASK, next));
	uint32_t h1 = (uint32_t)(VCXL_FIELD_PREP(PCIE_DVSEC_HDR1_VENDOR, CXL_VENDOR_ID) |
				 VCXL_FIELD_PREP(PCIE_DVSEC_HDR1_REV, rev) |
				 VCXL_FIELD_PREP(PCIE_DVSEC_HDR1_LEN, len));
	int rc = vcxl_rf_define(rf, base, 4, ~0u, VCXL_RF_RO);
	rc = rc ?: vcxl_rf_define(rf, base + PCIE_DVSEC_HEADER1, 4, ~0u, VCXL_RF_RO);
	rc = rc ?: vcxl_rf_define(rf, base + PCIE_DVSEC_HEADER2, 2, 0xffff, VCXL_RF_RO);
	rc = rc ?: vcxl_rf_init_val(rf, base, 4, hdr);
	rc = rc ?: vcxl_rf_init_val(rf, base + PCIE_DVSEC_HEADER1, 4, h1);
	rc = rc ?: vcxl_rf_init_val(rf, base + PCIE_DVSEC_HEADER2, 2, dvsec_id);
	return rc;
}

/* CXL r3.1 8.1.9.1: Register Block Offset = High << 32 | Low[31:16] << 16. */
void vcxl_regloc_decode(uint32_t lo, uint32_t hi, struct vcxl_regloc_entry *e)
{
	e->bir = (uint8_t)VCXL_FIELD_GET(CXL_REGLOC_BIR, lo);
	e->id = (uint8_t)VCXL_FIELD_GET(CXL_REGLOC_BLOCK_ID, lo);
	e->offset = ((uint64_t)hi << 32) | (lo & CXL_REGLOC_OFFSET_LO);
}

/* CXL r3.1 8.1.9: the entries follow the DVSEC headers up to the DVSEC Length. */
int vcxl_regloc_find(vcxl_cfg_read32_fn rd, void *opaque, uint8_t rbi, struct vcxl_regloc_entry *e)
{
	uint32_t rl, len, lo, hi;
	int rc;

	if (!rd || !e)
		return -EINVAL;
	rc = vcxl_pcie_find_dvsec(rd, opaque, CXL_VENDOR_ID, CXL_DVSEC_ID_REG_LOCATOR, &rl, &len);
	if (rc)
		return rc;
	for (uint32_t k = 0; CXL_REGLOC_BLOCK_HI(k) + 4 <= len; k++) {
		struct vcxl_regloc_entry ent;

		if ((rc = rd(opaque, rl + CXL_REGLOC_BLOCK_LO(k), &lo)) ||
		    (rc = rd(opaque, rl + CXL_REGLOC_BLOCK_HI(k), &hi)))
			return rc;
		vcxl_regloc_decode(lo, hi, &ent);
		if (ent.id == rbi) {
			*e = ent;
			return 0;
		}
	}
	return -ENOENT;
}
