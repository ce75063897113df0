// SPDX-License-Identifier: BSD-3-Clause
/* Standard and extended capability walks, DVSEC discovery (robust to garbage), DVSEC
 * headers, Register Locator (layout and lookup by block id), GPF and Flex Bus DVSEC
 * layouts. */
#include <errno.h>
#include <linux/pci_regs.h>
#include <string.h>

#include "tap.h"
#include "cxl/cxl_spec.h"

static uint32_t cfg[1024]; /* 4 KiB config space as dwords */

static int rd(void *opaque, uint32_t off, uint32_t *v)
{
	(void)opaque;
	if (off >= 4096 || (off & 3))
		return -EINVAL;
	*v = cfg[off / 4];
	return 0;
}

static uint32_t ext_hdr(uint16_t id, uint32_t next)
{
	return id | (1u << 16) | (next << 20);
}

static void put_dvsec(uint32_t off, uint32_t next, uint16_t vendor, uint16_t id, uint16_t len)
{
	cfg[off / 4] = ext_hdr(0x23, next);
	cfg[off / 4 + 1] = vendor | (0u << 16) | ((uint32_t)len << 20);
	cfg[off / 4 + 2] = id;
}

static void test_walk(void)
{
	uint32_t off = 0, len = 0;

	memset(cfg, 0, sizeof(cfg));
	ok(vcxl_pcie_find_ext_cap(rd, NULL, 0x2e, &off) == -ENOENT, "empty ext space: -ENOENT");

	/* 0x100 AER(1) -> 0x200 DVSEC(other vendor) -> 0x300 CXL DVSEC 8 -> 0x180 DOE -> end */
	cfg[0x100 / 4] = ext_hdr(0x0001, 0x200);
	put_dvsec(0x200, 0x300, 0x1234, 8, 0x24);
	put_dvsec(0x300, 0x180, CXL_VENDOR_ID, 8, 0x24);
	cfg[0x180 / 4] = ext_hdr(0x2e, 0);
	ok(vcxl_pcie_find_ext_cap(rd, NULL, 0x2e, &off) == 0 && off == 0x180,
	   "finds DOE after a backwards pointer");
	ok(vcxl_pcie_find_ext_cap(rd, NULL, 0x0001, &off) == 0 && off == 0x100, "finds first cap");
	ok(vcxl_pcie_find_ext_cap(rd, NULL, 0x0010, &off) == -ENOENT, "absent cap: -ENOENT");
	ok(vcxl_pcie_find_dvsec(rd, NULL, CXL_VENDOR_ID, 8, &off, &len) == 0 && off == 0x300 &&
	       len == 0x24,
	   "DVSEC match needs vendor and id (skips other vendor's id 8)");
	ok(vcxl_pcie_find_dvsec(rd, NULL, CXL_VENDOR_ID, 0, &off, &len) == -ENOENT,
	   "absent DVSEC: -ENOENT");

	/* loop: DOE points back to 0x100 */
	cfg[0x180 / 4] = ext_hdr(0x2e, 0x100);
	ok(vcxl_pcie_find_ext_cap(rd, NULL, 0x0010, &off) == -ELOOP, "self loop: -ELOOP");
	ok(vcxl_pcie_find_dvsec(rd, NULL, CXL_VENDOR_ID, 5, &off, &len) == -ELOOP,
	   "DVSEC search in a loop: -ELOOP");
	ok(vcxl_pcie_find_ext_cap(rd, NULL, 0x2e, &off) == 0 && off == 0x180,
	   "a cap before the loop closes is still found");
	/* a pointer into legacy space */
	cfg[0x180 / 4] = ext_hdr(0x2e, 0x40);
	ok(vcxl_pcie_find_ext_cap(rd, NULL, 0x0010, &off) == -ELOOP, "next < 0x100: -ELOOP");
	cfg[0x180 / 4] = ext_hdr(0x2e, 0x182);
	ok(vcxl_pcie_find_ext_cap(rd, NULL, 0x0010, &off) == -ELOOP, "unaligned next: -ELOOP");
	/* all-ones: device gone */
	for (int i = 0; i < 1024; i++)
		cfg[i] = ~0u;
	ok(vcxl_pcie_find_ext_cap(rd, NULL, 0x2e, &off) == -ENOENT, "all-ones space: -ENOENT");
	/* random garbage never crashes and always terminates */
	uint64_t s = 12345;
	int bad = 0;
	for (int t = 0; t < 2000; t++) {
		for (int i = 0; i < 1024; i++) {
			s ^= s << 13, s ^= s >> 7, s ^= s << 17;
			cfg[i] = (uint32_t)s;
		}
		int rc = vcxl_pcie_find_dvsec(rd, NULL, CXL_VENDOR_ID, 0, &off, &len);
		if (rc != 0 && rc != -ENOENT && rc != -ELOOP)
			bad++;
	}
	is(bad, 0, "2000 garbage config spaces: only 0/-ENOENT/-ELOOP");
}

static int rf_rd(void *opaque, uint32_t off, uint32_t *v)
{
	*v = vcxl_rf_get32(opaque, off);
	return 0;
}

static void test_layouts(void)
{
	struct vcxl_regfile rf;
	uint32_t off, len;
	uint64_t v;

	vcxl_rf_init(&rf, 4096);
	struct vcxl_regloc_entry e[2] = {{0, CXL_REGLOC_RBI_COMPONENT, 0x3f0000},
					 {2, CXL_REGLOC_RBI_VENDOR, 0x123400000000ull}};
	ok(vcxl_dvsec_regloc_layout(&rf, 0x100, 0x140, e, 2) == 0, "regloc layout");
	ok(vcxl_dvsec_gpf_device_layout(&rf, 0x140, 0x160, 0x0305, 1500) == 0, "gpf layout");
	ok(vcxl_dvsec_flexbus_layout(&rf, 0x160, 0,
				     CXL_FLEXBUS_CACHE | CXL_FLEXBUS_IO | CXL_FLEXBUS_MEM) == 0,
	   "flex bus layout");
	ok(vcxl_dvsec_regloc_layout(&rf, 0x100, 0, e, 0) == -EINVAL,
	   "regloc with 0 entries refused");
	struct vcxl_regloc_entry badoff = {0, 1, 0x1000};
	ok(vcxl_dvsec_regloc_layout(&rf, 0x200, 0, &badoff, 1) == -EINVAL,
	   "regloc offset not 64 KiB aligned refused");
	struct vcxl_regloc_entry badbir = {6, 1, 0};
	ok(vcxl_dvsec_regloc_layout(&rf, 0x200, 0, &badbir, 1) == -EINVAL, "regloc BIR 6 refused");

	ok(vcxl_pcie_find_dvsec(rf_rd, &rf, CXL_VENDOR_ID, CXL_DVSEC_ID_REG_LOCATOR, &off, &len) ==
		   0 &&
	       off == 0x100 && len == 0x1c,
	   "regloc found, length 0x0c + 2*8");
	vcxl_rf_read(&rf, 0x100, 4, &v);
	is(v, 0x14010023, "regloc ext cap header: id 0x23 ver 1 next 0x140");
	vcxl_rf_read(&rf, 0x104, 4, &v);
	is(v, 0x01c01e98, "regloc DVSEC header 1: vendor 0x1e98 rev 0 len 0x1c");
	vcxl_rf_read(&rf, 0x10c, 4, &v);
	is(v, 0x003f0100, "entry 0 low: BIR 0, RBI 1, offset[31:16]");
	struct vcxl_regloc_entry d;
	vcxl_regloc_decode(vcxl_rf_get32(&rf, 0x114), vcxl_rf_get32(&rf, 0x118), &d);
	ok(d.bir == 2 && d.id == 0xff && d.offset == 0x123400000000ull,
	   "entry 1 decodes (offset high dword)");
	vcxl_regloc_decode(0xffffffff, 0, &d);
	ok(d.bir == 7 && d.id == 0xff && d.offset == 0xffff0000, "decode masks reserved [7:3]");
	vcxl_rf_write(&rf, 0x10c, 4, 0);
	vcxl_rf_write(&rf, 0x104, 2, 0);
	vcxl_rf_read(&rf, 0x10c, 4, &v);
	is(v, 0x003f0100, "regloc entries are RO");
	ok(vcxl_regloc_find(rf_rd, &rf, CXL_REGLOC_RBI_VENDOR, &d) == 0 && d.bir == 2 &&
	       d.offset == 0x123400000000ull,
	   "regloc find: the second entry by block id");
	ok(vcxl_regloc_find(rf_rd, &rf, CXL_REGLOC_RBI_COMPONENT, &d) == 0 && d.bir == 0 &&
	       d.offset == 0x3f0000,
	   "regloc find: the first entry by block id");
	is(vcxl_regloc_find(rf_rd, &rf, CXL_REGLOC_RBI_MEMDEV, &d), -ENOENT,
	   "regloc find: absent block id: -ENOENT");
	is(vcxl_regloc_find(NULL, &rf, CXL_REGLOC_RBI_MEMDEV, &d), -EINVAL,
	   "regloc find without a reader: -EINVAL");
	vcxl_rf_read(&rf, 0x104, 4, &v);
	is(v, 0x01c01e98, "DVSEC header RO");

	ok(vcxl_pcie_find_dvsec(rf_rd, &rf, CXL_VENDOR_ID, CXL_DVSEC_ID_GPF_DEVICE, &off, &len) ==
		   0 &&
	       off == 0x140 && len == 0x10,
	   "GPF device DVSEC, length 0x10");
	vcxl_rf_write(&rf, 0x14a, 2, 0xffff);
	vcxl_rf_read(&rf, 0x14a, 2, &v);
	is(v, 0x0305, "GPF phase 2 duration RO");
	vcxl_rf_read(&rf, 0x14c, 4, &v);
	is(v, 1500, "GPF phase 2 power");
	ok(vcxl_pcie_find_dvsec(rf_rd, &rf, CXL_VENDOR_ID, CXL_DVSEC_ID_FLEXBUS, &off, &len) == 0 &&
	       off == 0x160 && len == 0x20,
	   "Flex Bus DVSEC, length 0x20");
	vcxl_rf_read(&rf, 0x164, 4, &v);
	is((v >> 16) & 0xf, 2, "Flex Bus DVSEC revision 2");
	vcxl_rf_write(&rf, 0x16c, 2, 0);
	vcxl_rf_read(&rf, 0x16c, 2, &v);
	is(v, 7, "Flex Bus control shows cache/io/mem enabled and is RO");
	ok(vcxl_dvsec_header_layout(&rf, 0x102, 0, 0, 0, 0x10) == -EINVAL,
	   "unaligned DVSEC refused");
	ok(vcxl_dvsec_header_layout(&rf, 0xff8, 0, 0, 0, 0x10) == -EINVAL,
	   "DVSEC past end refused");
	vcxl_rf_fini(&rf);
}

/* PCI r3.0 6.7: the standard list from the Capabilities Pointer */
static void test_std_caps(void)
{
	uint32_t off = 0;
	struct vcxl_regloc_entry e;

	memset(cfg, 0, sizeof(cfg));
	ok(vcxl_pci_find_cap(rd, NULL, PCI_CAP_ID_MSIX, &off) == -ENOENT,
	   "no Capabilities List bit: -ENOENT");
	cfg[PCI_COMMAND / 4] = (uint32_t)PCI_STATUS_CAP_LIST << 16;
	cfg[PCI_CAPABILITY_LIST / 4] = 0x40 | 0x3; /* low two bits reserved */
	cfg[0x40 / 4] = PCI_CAP_ID_EXP | (0x80u << 8);
	cfg[0x80 / 4] = PCI_CAP_ID_MSIX | (0u << 8) | (3u << 16);
	ok(vcxl_pci_find_cap(rd, NULL, PCI_CAP_ID_MSIX, &off) == 0 && off == 0x80,
	   "MSI-X found after PCIe (pointer's reserved bits ignored)");
	ok(vcxl_pci_find_cap(rd, NULL, PCI_CAP_ID_EXP, &off) == 0 && off == 0x40,
	   "first capability found");
	is(vcxl_pci_find_cap(rd, NULL, PCI_CAP_ID_MSI, &off), -ENOENT, "absent: -ENOENT");
	cfg[0x80 / 4] = PCI_CAP_ID_MSIX | (0x40u << 8);
	is(vcxl_pci_find_cap(rd, NULL, PCI_CAP_ID_MSI, &off), -ELOOP, "cycle: -ELOOP");
	cfg[0x80 / 4] = PCI_CAP_ID_MSIX | (0x10u << 8);
	is(vcxl_pci_find_cap(rd, NULL, PCI_CAP_ID_MSI, &off), -ELOOP,
	   "pointer into the header: -ELOOP");
	for (int i = 0; i < 1024; i++)
		cfg[i] = ~0u;
	is(vcxl_pci_find_cap(rd, NULL, PCI_CAP_ID_MSIX, &off), -ENOENT, "all-ones: -ENOENT");
	is(vcxl_pci_find_cap(NULL, NULL, PCI_CAP_ID_MSIX, &off), -EINVAL, "no reader: -EINVAL");
	/* garbage terminates with a defined answer */
	uint64_t s = 777;
	int bad = 0;
	for (int t = 0; t < 2000; t++) {
		for (int i = 0; i < 1024; i++) {
			s ^= s << 13, s ^= s >> 7, s ^= s << 17;
			cfg[i] = (uint32_t)s;
		}
		int rc = vcxl_pci_find_cap(rd, NULL, PCI_CAP_ID_MSIX, &off);
		if ((rc != 0 && rc != -ENOENT && rc != -ELOOP) ||
		    (rc == 0 && (off < 0x40 || off > 0xfc)))
			bad++;
		rc = vcxl_regloc_find(rd, NULL, CXL_REGLOC_RBI_MEMDEV, &e);
		if (rc != 0 && rc != -ENOENT && rc != -ELOOP && rc != -EINVAL)
			bad++;
	}
	is(bad, 0, "2000 garbage config spaces: only 0/-ENOENT/-ELOOP (and in range)");
}

int main(void)
{
	test_walk();
	test_std_caps();
	test_layouts();
	return done();
}
