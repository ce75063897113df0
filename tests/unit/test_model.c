// SPDX-License-Identifier: BSD-3-Clause
/* Device model: identity, BAR sizing, capability chain, component block placement, device
 * memory, firmware commit, Memory_Active, FLR and CXL reset, job engine, MSI-X, removal. */
#include <errno.h>
#include <fcntl.h>
#include <linux/pci_regs.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "tap.h"
#include "cxl/cxl_spec.h"
#include "model/model.h"
#include "../../src/model/accel.h"

#define G256 VCXL_SZ_256M

static struct vcxl_backend *be;

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

static int rd32(void *opaque, uint32_t off, uint32_t *v)
{
	*v = (uint32_t)cr(off, 4);
	return 0;
}

static struct vcxl_model *mk(const struct vcxl_model_cfg *c)
{
	struct vcxl_model *m = NULL;
	int rc = vcxl_model_create(c, &m);
	if (rc) {
		diag("create failed: %d", rc);
		exit(1);
	}
	be = vcxl_model_backend(m);
	return m;
}

static uint32_t dvsec(void)
{
	uint32_t off = 0;
	vcxl_pcie_find_dvsec(rd32, NULL, CXL_VENDOR_ID, CXL_DVSEC_ID_DEVICE, &off, NULL);
	return off;
}

/* the component block's BAR offset, from the Register Locator */
static uint64_t comp_base(void)
{
	uint32_t rl = 0, len = 0;
	struct vcxl_regloc_entry e = {0};
	vcxl_pcie_find_dvsec(rd32, NULL, CXL_VENDOR_ID, CXL_DVSEC_ID_REG_LOCATOR, &rl, &len);
	for (uint32_t k = 0; k < (len - CXL_REGLOC_FIRST_ENTRY) / 8; k++) {
		vcxl_regloc_decode((uint32_t)cr(rl + CXL_REGLOC_BLOCK_LO(k), 4),
				   (uint32_t)cr(rl + CXL_REGLOC_BLOCK_HI(k), 4), &e);
		if (e.id == CXL_REGLOC_RBI_COMPONENT)
			return e.offset;
	}
	return ~0ull;
}

static uint32_t hdm_off(void)
{
	uint64_t cb = comp_base() + CXL_CM_OFFSET;
	uint32_t hdr = (uint32_t)br(0, cb, 4);
	for (unsigned k = 1; k <= hdr >> 24; k++) {
		uint32_t e = (uint32_t)br(0, cb + 4 * k, 4);
		if ((e & 0xffff) == CXL_CM_CAP_ID_HDM)
			return (uint32_t)(cb + (e >> 20));
	}
	return 0;
}

static void test_identity(void)
{
	struct vcxl_model *m = mk(NULL);
	is(cr(PCI_VENDOR_ID, 2), 0x8086, "vendor 0x8086");
	is(cr(PCI_DEVICE_ID, 2), 0x0d94, "device 0x0d94");
	is(cr(PCI_CLASS_REVISION, 4) >> 8, 0x120000, "class: processing accelerator");
	is(cr(PCI_HEADER_TYPE, 1), 0, "type-0 header");
	cw(PCI_COMMAND, 2, 0xffff);
	is(cr(PCI_COMMAND, 2),
	   PCI_COMMAND_MEMORY | PCI_COMMAND_MASTER | PCI_COMMAND_PARITY | PCI_COMMAND_SERR |
	       PCI_COMMAND_INTX_DISABLE,
	   "Command: only implemented bits are RW (no I/O space)");
	ok(cr(PCI_STATUS, 2) & PCI_STATUS_CAP_LIST, "Status: capability list");
	is(cr(PCI_INTERRUPT_PIN, 1), 0, "no INTx pin");
	/* capability chain: PCIe -> MSI-X */
	uint8_t p = (uint8_t)cr(PCI_CAPABILITY_LIST, 1);
	is(cr(p, 1), PCI_CAP_ID_EXP, "first capability: PCI Express");
	is((cr(p + PCI_EXP_FLAGS, 2) >> 4) & 0xf, PCI_EXP_TYPE_ENDPOINT, "endpoint");
	ok(cr(p + PCI_EXP_DEVCAP, 4) & PCI_EXP_DEVCAP_FLR, "FLR capable");
	uint8_t x = (uint8_t)cr(p + 1, 1);
	is(cr(x, 1), PCI_CAP_ID_MSIX, "second capability: MSI-X");
	is((cr(x + PCI_MSIX_FLAGS, 2) & PCI_MSIX_FLAGS_QSIZE) + 1, VCXL_MODEL_MSIX_VECTORS,
	   "MSI-X table size");
	is(cr(x + PCI_MSIX_TABLE, 4), VCXL_MODEL_MSIX_TABLE | 2, "table in BAR2");
	is(cr(x + PCI_MSIX_PBA, 4), VCXL_MODEL_MSIX_PBA | 2, "PBA in BAR2");
	{
		/* one 4 KiB page for both structures (a VMM overlays each on the BAR: a
		 * page split between regions costs it at every memory transaction) */
		uint32_t t = cr(x + PCI_MSIX_TABLE, 4) & PCI_MSIX_TABLE_OFFSET;
		uint32_t b = cr(x + PCI_MSIX_PBA, 4) & PCI_MSIX_PBA_OFFSET;
		uint32_t tlen = VCXL_MODEL_MSIX_VECTORS * PCI_MSIX_ENTRY_SIZE;
		is(b / 4096, t / 4096, "the PBA in the MSI-X table's 4 KiB page");
		ok(b >= t + tlen || b + 8 <= t, "the PBA apart from the table");
	}
	is(cr(x + 1, 1), 0, "end of the list");
	/* extended capabilities */
	uint32_t off;
	ok(dvsec() == 0x100, "CXL Device DVSEC at 0x100");
	is((cr(dvsec() + 4, 4) >> 16) & 0xf, 3, "Device DVSEC rev 3");
	ok(vcxl_pcie_find_dvsec(rd32, NULL, CXL_VENDOR_ID, CXL_DVSEC_ID_GPF_DEVICE, &off, NULL) ==
	       0,
	   "GPF device DVSEC present");
	ok(vcxl_pcie_find_dvsec(rd32, NULL, CXL_VENDOR_ID, CXL_DVSEC_ID_FLEXBUS, &off, NULL) == 0,
	   "Flex Bus DVSEC present");
	ok(vcxl_pcie_find_ext_cap(rd32, NULL, PCIE_EXT_CAP_ID_DOE, &off) == 0, "DOE present");
	uint16_t cap = (uint16_t)cr(dvsec() + CXL_DVSEC_CAP, 2);
	ok((cap & CXL_DVSEC_CAP_MEM) && (cap & CXL_DVSEC_CAP_CACHE) &&
	       VCXL_FIELD_GET(CXL_DVSEC_CAP_HDM_COUNT, cap) == 1 && (cap & CXL_DVSEC_CAP_RESET),
	   "Type-2: cache + mem, one range, CXL reset capable");
	is(cr(dvsec() + CXL_DVSEC_RANGE_SIZE_HI(0), 4), 0, "range 1 size high");
	is(cr(dvsec() + CXL_DVSEC_RANGE_SIZE_LO(0), 4) & 0xf0000000u, 0x10000000u,
	   "range 1 = 256 MiB default memory");
	is(be->ops->irq_count(be->dev, VCXL_IRQ_MSIX), VCXL_MODEL_MSIX_VECTORS, "MSI-X count");
	is(be->ops->irq_count(be->dev, VCXL_IRQ_MSI) + be->ops->irq_count(be->dev, VCXL_IRQ_INTX),
	   0, "no MSI, no INTx");
	ok(strstr(be->ops->name(be->dev), "0d94") != NULL, "name");
	vcxl_model_destroy(m);
}

static void test_bars(void)
{
	struct vcxl_model *m = mk(NULL);
	struct vcxl_bar_info bi;
	is(cr(PCI_BASE_ADDRESS_0, 4), PCI_BASE_ADDRESS_MEM_TYPE_64, "BAR0: 64-bit memory");
	cw(PCI_BASE_ADDRESS_0, 4, 0xffffffff);
	cw(PCI_BASE_ADDRESS_1, 4, 0xffffffff);
	uint64_t sz = (cr(PCI_BASE_ADDRESS_0, 4) & ~0xfull) | (cr(PCI_BASE_ADDRESS_1, 4) << 32);
	is(~sz + 1, VCXL_MODEL_BAR0_SIZE, "BAR0 sizing: ~0 reads back the 4 MiB mask");
	is(cr(PCI_BASE_ADDRESS_0, 4) & 0xf, PCI_BASE_ADDRESS_MEM_TYPE_64, "type bits RO");
	cw(PCI_BASE_ADDRESS_0, 4, 0xfe812345);
	is(cr(PCI_BASE_ADDRESS_0, 4), 0xfe800004, "BAR0 assignment keeps only size-aligned bits");
	cw(PCI_BASE_ADDRESS_2, 4, 0xffffffff);
	is((~(cr(PCI_BASE_ADDRESS_2, 4) & ~0xfu) + 1) & 0xffffffffu, VCXL_MODEL_BAR2_SIZE,
	   "BAR2 sizing: 32-bit, 16 KiB");
	cw(PCI_BASE_ADDRESS_3, 4, 0xffffffff);
	cw(PCI_BASE_ADDRESS_5, 4, 0xffffffff);
	cw(PCI_ROM_ADDRESS, 4, 0xffffffff);
	is(cr(PCI_BASE_ADDRESS_3, 4) | cr(PCI_BASE_ADDRESS_5, 4) | cr(PCI_ROM_ADDRESS, 4), 0,
	   "BAR3..5 and ROM not implemented");
	ok(be->ops->bar_info(be->dev, 0, &bi) == 0 && bi.size == VCXL_MODEL_BAR0_SIZE &&
	       (bi.flags & VCXL_BAR_MEM64) && bi.fd >= 0,
	   "bar_info(0): 4 MiB, 64-bit, fd");
	ok(be->ops->bar_info(be->dev, 2, &bi) == 0 && bi.size == VCXL_MODEL_BAR2_SIZE &&
	       !(bi.flags & VCXL_BAR_MEM64) && bi.fd == -1,
	   "bar_info(2): 16 KiB, 32-bit, trapped");
	ok(be->ops->bar_info(be->dev, 4, &bi) == 0 && bi.size == 0, "bar_info(4): absent");
	ok(be->ops->bar_info(be->dev, 6, &bi) == -EINVAL, "bar_info(6): -EINVAL");
	/* BAR2 registers */
	is(br(2, ACCEL_REG_ID, 4), ACCEL_ID_VALUE, "engine ID");
	is(br(2, ACCEL_REG_VERSION, 4), ACCEL_VERSION_VALUE, "engine version");
	ok(bw(2, ACCEL_REG_JOB_OP, 1, 1) == -EINVAL, "BAR2 byte access refused");
	ok(bw(2, VCXL_MODEL_BAR2_SIZE, 4, 0) == -EINVAL, "BAR2 out of range");
	ok(bw(1, 0, 4, 0) == -EINVAL, "BAR1 (upper half of BAR0) has no registers");
	vcxl_model_destroy(m);
}

static void test_comp_placement(void)
{
	static const uint64_t want[] = {0, 0x200000, VCXL_MODEL_BAR0_SIZE - 0x10000};
	for (int at = 0; at < 3; at++) {
		struct vcxl_model_cfg c = {.comp_at = (enum vcxl_comp_at)at};
		struct vcxl_model *m = mk(&c);
		struct vcxl_bar_info bi;
		uint64_t cb = comp_base();
		is(cb, want[at], "comp_at %d: Register Locator points at 0x%llx", at,
		   (unsigned long long)want[at]);
		is(br(0, cb + CXL_CM_OFFSET, 4) & 0xffff, CXL_CM_CAP_ID_ARRAY,
		   "capability array at block + 0x1000");
		is(br(0, cb + 0x10, 4) | br(0, cb + 0x2000, 4) | br(0, cb + 0xfffc, 4), 0,
		   "rest of the block reads 0");
		ok(bw(0, cb + 0x2000, 4, 0x1234) == 0 && br(0, cb + 0x2000, 4) == 0,
		   "writes outside the CM range are dropped");
		ok(br(0, cb + CXL_CM_OFFSET, 1) == 0xbad0bad0bad0ull, "CM byte read refused");
		/* RAM part of BAR0 through MMIO and through the fd */
		uint64_t ram = at == 0 ? 0x10000 : 0;
		ok(bw(0, ram + 8, 8, 0x1122334455667788ull) == 0 &&
		       br(0, ram + 8, 8) == 0x1122334455667788ull,
		   "BAR0 RAM read/write");
		be->ops->bar_info(be->dev, 0, &bi);
		uint8_t *p = mmap(NULL, VCXL_MODEL_BAR0_SIZE, PROT_READ, MAP_SHARED, bi.fd, 0);
		ok(p != MAP_FAILED && p[ram + 8] == 0x88 && p[ram + 15] == 0x11,
		   "the BAR0 fd maps the whole BAR (RAM at the same offsets)");
		if (p != MAP_FAILED)
			munmap(p, VCXL_MODEL_BAR0_SIZE);
		if (at == 1)
			ok(bw(0, cb - 4, 8, 0) == -EINVAL, "access straddling the block refused");
		vcxl_model_destroy(m);
	}
}

static void test_create_args(void)
{
	struct vcxl_model *m = NULL;
	struct vcxl_model_cfg c = {.mem_size = G256 + 4096};
	is(vcxl_model_create(&c, &m), -EINVAL, "mem_size not a multiple of 256 MiB");
	c = (struct vcxl_model_cfg){.decoders = 11};
	is(vcxl_model_create(&c, &m), -EINVAL, "11 decoders");
	c = (struct vcxl_model_cfg){.decoders = 3};
	is(vcxl_model_create(&c, &m), -EINVAL, "3 decoders (no count encoding)");
	c = (struct vcxl_model_cfg){.active_timeout_enc = 5};
	is(vcxl_model_create(&c, &m), -EINVAL, "timeout encoding 5");
	c = (struct vcxl_model_cfg){.firmware_committed = true, .fw_hpa_base = 0x1000};
	is(vcxl_model_create(&c, &m), -EINVAL, "unaligned firmware HPA");
	ok(m == NULL, "nothing returned on failure");

	/* a big device starts fast: memory is not touched at creation */
	struct timespec a, b;
	c = (struct vcxl_model_cfg){.mem_size = 64ull << 30, .decoders = 10};
	clock_gettime(CLOCK_MONOTONIC, &a);
	m = mk(&c);
	clock_gettime(CLOCK_MONOTONIC, &b);
	int fd;
	uint64_t size;
	ok(vcxl_model_mem_fd(m, &fd, &size) == 0 && size == 64ull << 30 && fd >= 0,
	   "64 GiB memfd device");
	diag("64 GiB model created in %ld us",
	     (long)((b.tv_sec - a.tv_sec) * 1000000 + (b.tv_nsec - a.tv_nsec) / 1000));
	uint32_t h = hdm_off();
	is(br(0, h + CXL_HDM_CAP, 4) & 0xf, 5, "10 decoders encode as 5");
	vcxl_model_destroy(m);

	/* backing file, created and extended */
	char path[] = "/tmp/vcxl-test-backing-XXXXXX";
	int tfd = mkstemp(path);
	close(tfd);
	c = (struct vcxl_model_cfg){.mem_size = 2 * G256, .backing = path};
	m = mk(&c);
	uint8_t *mem = vcxl_model_mem(m);
	mem[12345] = 0x5a;
	vcxl_model_destroy(m);
	tfd = open(path, O_RDONLY);
	uint8_t byte = 0;
	ok(pread(tfd, &byte, 1, 12345) == 1 && byte == 0x5a && lseek(tfd, 0, SEEK_END) == 2 * G256,
	   "backing file extended to mem_size and written through");
	close(tfd);
	unlink(path);
}

static void commit0(uint64_t base, uint64_t size)
{
	uint32_t h = hdm_off();
	bw(0, h + CXL_HDM_GLOBAL_CTRL, 4, CXL_HDM_GCTRL_ENABLE);
	cw(dvsec() + CXL_DVSEC_CTRL, 2, CXL_DVSEC_CTRL_MEM_EN);
	bw(0, h + CXL_HDM_DEC_BASE_HI(0), 4, base >> 32);
	bw(0, h + CXL_HDM_DEC_BASE_LO(0), 4, (uint32_t)base);
	bw(0, h + CXL_HDM_DEC_SIZE_HI(0), 4, size >> 32);
	bw(0, h + CXL_HDM_DEC_SIZE_LO(0), 4, (uint32_t)size);
	bw(0, h + CXL_HDM_DEC_CTRL(0), 4, CXL_HDM_DEC_CTRL_COMMIT);
}

static void test_hpa_map(void)
{
	struct vcxl_model_cfg c = {.mem_size = 2 * G256, .decoders = 2};
	struct vcxl_model *m = mk(&c);
	int fd = -1;
	uint64_t off = 0;
	ok(be->ops->hpa_map(be->dev, 16 * G256, G256, &fd, &off) == -ENXIO, "nothing decoded");
	commit0(16 * G256, 2 * G256);
	uint32_t h = hdm_off();
	ok(br(0, h + CXL_HDM_DEC_CTRL(0), 4) & CXL_HDM_DEC_CTRL_COMMITTED, "decoder 0 committed");
	ok(be->ops->hpa_map(be->dev, 17 * G256, 4096, &fd, &off) == 0 && off == 0,
	   "hpa_map decodes HPA -> an object of its own, at offset 0");
	int mfd;
	uint64_t msz;
	struct stat st;
	vcxl_model_mem_fd(m, &mfd, &msz);
	ok(fd != mfd && fstat(fd, &st) == 0 && st.st_size == 4096,
	   "hpa_map's fd is not the device memory fd, and exactly the mapped range");
	ok(fcntl(fd, F_GET_SEALS) == (F_SEAL_SHRINK | F_SEAL_GROW | F_SEAL_SEAL),
	   "... sealed against shrink and grow, seals sealed");
	ok(ftruncate(fd, 0) < 0 && errno == EPERM, "... ftruncate refused");
	bool never = false;
	ok(be->ops->fd_unshareable(be->dev, fd, &never) == NULL, "... and may go to a client");
	ok(be->ops->fd_unshareable(be->dev, mfd, &never) != NULL, "the device memory fd may not");
	ok(be->ops->hpa_map(be->dev, 17 * G256, 2 * G256, &fd, &off) == -ENXIO,
	   "range past the decoder: -ENXIO");
	ok(be->ops->hpa_map(be->dev, 16 * G256, 0, &fd, &off) == -EINVAL, "size 0: -EINVAL");
	/* write through an hpa mapping, read through the model's memory */
	be->ops->hpa_map(be->dev, 16 * G256 + 0x1000, 0x1000, &fd, &off);
	uint8_t *p = mmap(NULL, 0x1000, PROT_READ | PROT_WRITE, MAP_SHARED, fd, (off_t)off);
	p[7] = 0x77;
	munmap(p, 0x1000);
	is(((uint8_t *)vcxl_model_mem(m))[0x1007], 0x77, "HPA mapping is device memory");
	cw(dvsec() + CXL_DVSEC_CTRL, 2, 0);
	ok(be->ops->hpa_map(be->dev, 16 * G256, 4096, &fd, &off) == -ENXIO,
	   "Mem_Enable clear: not decoded");
	vcxl_model_destroy(m);
}

static void test_firmware_and_active(void)
{
	struct vcxl_model_cfg c = {.firmware_committed = true,
				   .fw_hpa_base = 0x2000000000ull,
				   .active_delay_ms = 60,
				   .active_timeout_enc = 2};
	struct vcxl_model *m = mk(&c);
	uint32_t h = hdm_off(), d = dvsec();
	ok(br(0, h + CXL_HDM_GLOBAL_CTRL, 4) & CXL_HDM_GCTRL_ENABLE,
	   "firmware: HDM Decoder Enable");
	ok(br(0, h + CXL_HDM_DEC_CTRL(0), 4) & CXL_HDM_DEC_CTRL_COMMITTED, "firmware: committed");
	is(br(0, h + CXL_HDM_DEC_BASE_HI(0), 4), 0x20, "firmware HPA base");
	ok(cr(d + CXL_DVSEC_CTRL, 2) & CXL_DVSEC_CTRL_MEM_EN, "firmware: Mem_Enable");
	is(cr(d + CXL_DVSEC_RANGE_BASE_HI(0), 4), 0x20, "Range 1 Base mirrors decoder 0");
	int fd;
	uint64_t off;
	ok(be->ops->hpa_map(be->dev, 0x2000000000ull, G256, &fd, &off) == 0 && off == 0,
	   "firmware region mapped");
	uint32_t lo = (uint32_t)cr(d + CXL_DVSEC_RANGE_SIZE_LO(0), 4);
	ok((lo & CXL_DVSEC_RANGE_INFO_VALID) && !(lo & CXL_DVSEC_RANGE_ACTIVE),
	   "Info_Valid at once, Active not yet");
	is(VCXL_FIELD_GET(CXL_DVSEC_RANGE_ACTIVE_TMO, lo), 2, "Memory_Active_Timeout = cfg");
	int left = vcxl_model_poll(m);
	ok(left > 0 && left <= 60, "poll reports the Active deadline (%d ms)", left);
	struct timespec ts = {0, 80 * 1000000};
	nanosleep(&ts, NULL);
	ok(cr(d + CXL_DVSEC_RANGE_SIZE_LO(0), 4) & CXL_DVSEC_RANGE_ACTIVE,
	   "Active after the delay");
	is(vcxl_model_poll(m), -1, "no deadline left");

	/* CXL reset: decoders cleared, Active re-sequenced; the unlocked DVSEC
	 * Control and Range Base to their defaults (CXL r3.1 9.7) */
	cw(d + CXL_DVSEC_CTRL2, 2, CXL_DVSEC_CTRL2_INIT_RESET);
	uint16_t st2 = (uint16_t)cr(d + CXL_DVSEC_STATUS2, 2);
	ok((st2 & CXL_DVSEC_STATUS2_RESET_DONE) && !(st2 & CXL_DVSEC_STATUS2_RESET_ERR),
	   "CXL reset: Reset Complete, no Reset Error");
	is(br(0, h + CXL_HDM_DEC_CTRL(0), 4) | br(0, h + CXL_HDM_GLOBAL_CTRL, 4), 0,
	   "CXL reset clears the firmware-committed decoder and Global Control");
	ok(be->ops->hpa_map(be->dev, 0x2000000000ull, G256, &fd, &off) == -ENXIO,
	   "no decode after CXL reset");
	ok(!(cr(d + CXL_DVSEC_RANGE_SIZE_LO(0), 4) & CXL_DVSEC_RANGE_ACTIVE),
	   "Memory_Active restarts after CXL reset");
	is(cr(d + CXL_DVSEC_CTRL, 2), CXL_DVSEC_CTRL_IO_EN,
	   "unlocked DVSEC Control to its default (Mem_Enable 0)");
	is(cr(d + CXL_DVSEC_RANGE_BASE_HI(0), 4), 0, "unlocked Range 1 Base to its default");
	vcxl_model_destroy(m);
}

static void test_cxl_reset(void)
{
	struct vcxl_model *m = mk(NULL);
	uint32_t d = dvsec(), h = hdm_off();
	uint8_t *mem = vcxl_model_mem(m);
	commit0(8 * G256, G256);
	/* lock the decoder: a CXL reset must still clear it */
	bw(0, h + CXL_HDM_DEC_CTRL(0), 4,
	   CXL_HDM_DEC_CTRL_COMMIT | CXL_HDM_DEC_CTRL_LOCK_ON_COMMIT);
	uint32_t ctl = (uint32_t)br(0, h + CXL_HDM_DEC_CTRL(0), 4);
	ok((ctl & CXL_HDM_DEC_CTRL_COMMITTED), "committed");
	memset(mem, 0xab, 4096);
	mem[G256 - 1] = 0xcd;
	ok(be->ops->reset(be->dev, VCXL_RESET_CXL) == 0, "backend CXL reset without Mem Clr");
	ok(mem[0] == 0xab && mem[G256 - 1] == 0xcd, "memory kept without Mem Clr Enable");
	is(br(0, h + CXL_HDM_DEC_CTRL(0), 4), 0, "locked decoder cleared by CXL reset");
	bw(0, h + CXL_HDM_DEC_BASE_HI(0), 4, 3);
	is(br(0, h + CXL_HDM_DEC_BASE_HI(0), 4), 3, "and unlocked");
	cw(d + CXL_DVSEC_CTRL2, 2, CXL_DVSEC_CTRL2_RESET_MEMCLR);
	cw(d + CXL_DVSEC_CTRL2, 2, CXL_DVSEC_CTRL2_RESET_MEMCLR | CXL_DVSEC_CTRL2_INIT_RESET);
	ok(mem[0] == 0 && mem[4095] == 0 && mem[G256 - 1] == 0, "Mem Clr Enable clears memory");
	is(cr(d + CXL_DVSEC_CTRL2, 2), 0,
	   "trigger reads 0, Mem Clr Enable back to its default (CXL r3.1 9.7)");
	cw(d + CXL_DVSEC_CTRL2, 2, CXL_DVSEC_CTRL2_INIT_CACHE_WBI);
	ok(cr(d + CXL_DVSEC_STATUS2, 2) & CXL_DVSEC_STATUS2_CACHE_INV,
	   "cache WB+invalidate completes (Cache Invalid)");
	vcxl_model_destroy(m);
}

static void test_flr(void)
{
	struct vcxl_model *m = mk(NULL);
	uint32_t d = dvsec(), h = hdm_off();
	commit0(8 * G256, G256);
	cw(d + CXL_DVSEC_LOCK, 2, CXL_DVSEC_LOCK_CONFIG);
	cw(PCI_COMMAND, 2, PCI_COMMAND_MEMORY | PCI_COMMAND_MASTER);
	cw(PCI_BASE_ADDRESS_2, 4, 0xfe000000);
	cw(0x80 + PCI_MSIX_FLAGS, 2, PCI_MSIX_FLAGS_ENABLE);
	bw(2, ACCEL_REG_JOB_LEN, 8, 1234);
	bw(2, VCXL_MODEL_MSIX_TABLE + 12, 4, 0);
	uint16_t devctl = (uint16_t)cr(0x40 + PCI_EXP_DEVCTL, 2);
	cw(0x40 + PCI_EXP_DEVCTL, 2, devctl | PCI_EXP_DEVCTL_BCR_FLR);
	is(cr(0x40 + PCI_EXP_DEVCTL, 2) & PCI_EXP_DEVCTL_BCR_FLR, 0, "Initiate FLR reads 0");
	is(cr(PCI_COMMAND, 2), 0, "FLR: Command reset");
	is(cr(PCI_BASE_ADDRESS_2, 4), 0, "FLR: BARs reset");
	is(cr(0x80 + PCI_MSIX_FLAGS, 2) & PCI_MSIX_FLAGS_ENABLE, 0, "FLR: MSI-X disabled");
	is(br(2, ACCEL_REG_JOB_LEN, 8), 0, "FLR: engine registers reset");
	is(br(2, VCXL_MODEL_MSIX_TABLE + 12, 4), 1, "FLR: vectors masked again");
	ok(br(0, h + CXL_HDM_DEC_CTRL(0), 4) & CXL_HDM_DEC_CTRL_COMMITTED,
	   "FLR does not touch HDM decoders [spec]");
	ok((cr(d + CXL_DVSEC_CTRL, 2) & CXL_DVSEC_CTRL_MEM_EN) &&
	       (cr(d + CXL_DVSEC_LOCK, 2) & CXL_DVSEC_LOCK_CONFIG),
	   "FLR keeps the CXL DVSEC (Mem_Enable, CONFIG_LOCK)");
	int fd;
	uint64_t off;
	ok(be->ops->hpa_map(be->dev, 8 * G256, G256, &fd, &off) == 0, "CXL.mem still decodes");
	cw(PCI_COMMAND, 2, PCI_COMMAND_MEMORY);
	ok(be->ops->reset(be->dev, VCXL_RESET_FLR) == 0 && cr(PCI_COMMAND, 2) == 0,
	   "backend reset(FLR)");
	vcxl_model_destroy(m);
}

/* ---- job engine and MSI-X ------------------------------------------------ */

struct irqlog {
	int n;
	unsigned last;
};

static void on_irq(void *opaque, enum vcxl_irq_type type, unsigned vector)
{
	struct irqlog *l = opaque;
	if (type == VCXL_IRQ_MSIX) {
		l->n++;
		l->last = vector;
	}
}

static uint8_t host[1 << 20];
static int dma_fail;

static int dma_read(void *opaque, uint64_t iova, void *buf, size_t len)
{
	if (dma_fail || iova > sizeof(host) || len > sizeof(host) - iova)
		return -EFAULT;
	memcpy(buf, host + iova, len);
	return 0;
}

static int dma_write(void *opaque, uint64_t iova, const void *buf, size_t len)
{
	if (dma_fail || iova > sizeof(host) || len > sizeof(host) - iova)
		return -EFAULT;
	memcpy(host + iova, buf, len);
	return 0;
}

static const struct vcxl_dma_ops dma = {.read = dma_read, .write = dma_write};

static uint32_t job(uint32_t op, uint32_t flags, uint64_t src, uint64_t dst, uint64_t len,
		    uint64_t pat)
{
	bw(2, ACCEL_REG_STATUS, 4, ACCEL_STATUS_DONE | ACCEL_STATUS_ERROR);
	bw(2, ACCEL_REG_JOB_OP, 4, op);
	bw(2, ACCEL_REG_JOB_FLAGS, 4, flags);
	bw(2, ACCEL_REG_JOB_SRC, 8, src);
	bw(2, ACCEL_REG_JOB_DST, 8, dst);
	bw(2, ACCEL_REG_JOB_LEN, 8, len);
	bw(2, ACCEL_REG_JOB_PATTERN, 8, pat);
	bw(2, ACCEL_REG_DOORBELL, 4, ACCEL_DOORBELL_GO);
	return (uint32_t)br(2, ACCEL_REG_STATUS, 4);
}

static void test_engine(void)
{
	struct vcxl_model *m = mk(NULL);
	uint8_t *mem = vcxl_model_mem(m);
	struct irqlog log = {0};
	uint32_t st;

	st = job(ACCEL_OP_FILL, 0, 0, 0x1000, 0x3003, 0x0807060504030201ull);
	is(st, ACCEL_STATUS_DONE, "fill: DONE");
	ok(mem[0x1000] == 1 && mem[0x1007] == 8 && mem[0x1008] == 1 && mem[0x4002] == 3 &&
	       mem[0x4003] == 0 && mem[0xfff] == 0,
	   "fill: pattern repeated, exact bounds");
	is(br(2, ACCEL_REG_DOORBELL, 4), 0, "doorbell reads 0");
	is(br(2, ACCEL_REG_JOBS_DONE, 4), 1, "JOBS_DONE 1");
	st = job(ACCEL_OP_COPY, 0, 0x1000, 0x100000, 0x3003, 0);
	ok(st == ACCEL_STATUS_DONE && memcmp(mem + 0x1000, mem + 0x100000, 0x3003) == 0,
	   "copy DPA -> DPA");
	st = job(ACCEL_OP_COPY, 0, 0x1000, 0x1004, 0x100, 0);
	ok(st == ACCEL_STATUS_DONE && mem[0x1004] == 1 && mem[0x100b] == 8,
	   "overlapping copy is a memmove");
	st = job(ACCEL_OP_FILL, 0, 0, G256 - 16, 17, 0xff);
	is(st, ACCEL_STATUS_ERROR, "fill past the end: ERROR");
	st = job(ACCEL_OP_FILL, 0, 0, 16, ~0ull - 8, 0xff);
	is(st, ACCEL_STATUS_ERROR, "fill with overflowing length: ERROR");
	st = job(ACCEL_OP_COPY, 0, ~0ull - 4, 0, 16, 0);
	is(st, ACCEL_STATUS_ERROR, "copy with overflowing source: ERROR");
	st = job(ACCEL_OP_FILL, 0, 0, G256 - 16, 16, 0x1111111111111111ull);
	ok(st == ACCEL_STATUS_DONE && mem[G256 - 1] == 0x11, "fill up to the last byte");
	st = job(7, 0, 0, 0, 0, 0);
	is(st, ACCEL_STATUS_ERROR, "unknown op: ERROR");
	st = job(ACCEL_OP_NOP, 0, 0, 0, 0, 0);
	is(st, ACCEL_STATUS_DONE, "NOP: DONE");
	/* DMA */
	st = job(ACCEL_OP_COPY, ACCEL_JOBF_SRC_HOST, 0, 0, 16, 0);
	is(st, ACCEL_STATUS_ERROR, "host copy without DMA ops: ERROR");
	be->ops->set_dma(be->dev, &dma, NULL);
	for (unsigned i = 0; i < 200000; i++)
		host[i] = (uint8_t)(i * 7);
	st = job(ACCEL_OP_COPY, ACCEL_JOBF_SRC_HOST, 100, 0x200000, 150000, 0);
	ok(st == ACCEL_STATUS_DONE && memcmp(mem + 0x200000, host + 100, 150000) == 0,
	   "copy host -> DPA over several DMA chunks");
	st = job(ACCEL_OP_COPY, ACCEL_JOBF_DST_HOST, 0x200000, 300000, 150000, 0);
	ok(st == ACCEL_STATUS_DONE && memcmp(host + 300000, host + 100, 150000) == 0,
	   "copy DPA -> host");
	st = job(ACCEL_OP_FILL, ACCEL_JOBF_DST_HOST, 0, 500000, 70000, 0x2211);
	ok(st == ACCEL_STATUS_DONE && host[500000] == 0x11 && host[500001] == 0x22 &&
	       host[500000 + 65536] == 0x11 && host[500002] == 0,
	   "fill into host memory, pattern continues across chunks");
	st = job(ACCEL_OP_COPY, ACCEL_JOBF_SRC_HOST | ACCEL_JOBF_DST_HOST, 0, 700000, 1000, 0);
	ok(st == ACCEL_STATUS_DONE && memcmp(host + 700000, host, 1000) == 0, "copy host -> host");
	st = job(ACCEL_OP_COPY, ACCEL_JOBF_SRC_HOST, sizeof(host) - 8, 0, 16, 0);
	is(st, ACCEL_STATUS_ERROR, "DMA op failure: ERROR");
	dma_fail = 1;
	st = job(ACCEL_OP_FILL, ACCEL_JOBF_DST_HOST, 0, 0, 16, 0);
	is(st, ACCEL_STATUS_ERROR, "DMA write failure: ERROR");
	dma_fail = 0;
	bw(2, ACCEL_REG_STATUS, 4, ACCEL_STATUS_ERROR);
	is(br(2, ACCEL_REG_STATUS, 4), 0, "STATUS RW1C");

	/* interrupts */
	be->ops->set_irq_handler(be->dev, on_irq, &log);
	bw(2, ACCEL_REG_JOB_VECTOR, 4, 3);
	job(ACCEL_OP_NOP, ACCEL_JOBF_IRQ, 0, 0, 0, 0);
	is(log.n, 0, "MSI-X disabled: no interrupt");
	ok(br(2, VCXL_MODEL_MSIX_PBA, 4) & 8, "pending bit 3 set");
	cw(0x80 + PCI_MSIX_FLAGS, 2, PCI_MSIX_FLAGS_ENABLE);
	is(log.n, 0, "enabled but vector masked: still pending");
	bw(2, VCXL_MODEL_MSIX_TABLE + 3 * 16 + 12, 4, 0);
	ok(log.n == 1 && log.last == 3, "unmask delivers the pending vector");
	is(br(2, VCXL_MODEL_MSIX_PBA, 4), 0, "pending bit cleared");
	job(ACCEL_OP_FILL, ACCEL_JOBF_IRQ, 0, 0, 64, 1);
	ok(log.n == 2 && log.last == 3, "unmasked: job completion interrupt");
	job(ACCEL_OP_FILL, ACCEL_JOBF_IRQ, 0, G256, 64, 1);
	ok(log.n == 3, "an ERROR completion interrupts too");
	cw(0x80 + PCI_MSIX_FLAGS, 2, PCI_MSIX_FLAGS_ENABLE | PCI_MSIX_FLAGS_MASKALL);
	job(ACCEL_OP_NOP, ACCEL_JOBF_IRQ, 0, 0, 0, 0);
	ok(log.n == 3 && (br(2, VCXL_MODEL_MSIX_PBA, 4) & 8), "function mask: pending");
	cw(0x80 + PCI_MSIX_FLAGS, 2, PCI_MSIX_FLAGS_ENABLE);
	ok(log.n == 4, "clearing the function mask delivers");
	job(ACCEL_OP_NOP, 0, 0, 0, 0, 0);
	is(log.n, 4, "no IRQ flag: no interrupt");
	bw(2, ACCEL_REG_JOB_VECTOR, 4, 9);
	st = job(ACCEL_OP_NOP, ACCEL_JOBF_IRQ, 0, 0, 0, 0);
	ok(st == ACCEL_STATUS_ERROR && log.n == 4, "vector beyond the table: ERROR, no interrupt");
	bw(2, VCXL_MODEL_MSIX_TABLE, 4, 0xffffffff);
	is(br(2, VCXL_MODEL_MSIX_TABLE, 4), 0xfffffffc, "MSI-X address low bits RO 0");
	is(br(2, ACCEL_REG_JOBS_DONE, 4) > 10, 1, "JOBS_DONE counts completions");
	vcxl_model_destroy(m);
}

/* Poll until BUSY clears: the number of polls, or -1 after too many. */
static int poll_job(struct vcxl_model *m)
{
	for (int n = 0; n < 10000; n++) {
		int t;

		if (!(br(2, ACCEL_REG_STATUS, 4) & ACCEL_STATUS_BUSY))
			return n;
		t = vcxl_model_poll(m);
		/* a running job asks to be polled again at once */
		if (t != 0 && (br(2, ACCEL_REG_STATUS, 4) & ACCEL_STATUS_BUSY))
			return -1;
	}
	return -1;
}

/* Large jobs run in steps: BUSY until the last one, the interrupt only then,
 * a doorbell while BUSY dropped, an overlapping copy exact across steps, a
 * reset aborting the job. */
static void test_engine_steps(void)
{
	const uint64_t big = 64ull << 20, ov = 24ull << 20;
	struct vcxl_model *m = mk(NULL);
	uint8_t *mem = vcxl_model_mem(m);
	struct irqlog log = {0};
	uint32_t st;
	int n;

	be->ops->set_irq_handler(be->dev, on_irq, &log);
	cw(0x80 + PCI_MSIX_FLAGS, 2, PCI_MSIX_FLAGS_ENABLE);
	bw(2, VCXL_MODEL_MSIX_TABLE + 16 + 12, 4, 0); /* vector 1 unmasked */
	bw(2, ACCEL_REG_JOB_VECTOR, 4, 1);
	st = job(ACCEL_OP_FILL, ACCEL_JOBF_IRQ, 0, 0x1000, big, 0x0807060504030201ull);
	is(st, ACCEL_STATUS_BUSY, "64 MiB fill: BUSY after the doorbell");
	is(log.n, 0, "no interrupt yet");
	ok(mem[0x1000] == 1 && mem[0x1000 + big - 1] == 0, "the first step done, not the last");
	/* dropped: a doorbell while BUSY, whatever the registers say */
	bw(2, ACCEL_REG_JOB_OP, 4, ACCEL_OP_NOP);
	bw(2, ACCEL_REG_DOORBELL, 4, ACCEL_DOORBELL_GO);
	is(br(2, ACCEL_REG_STATUS, 4), ACCEL_STATUS_BUSY, "doorbell while BUSY: still BUSY");
	n = poll_job(m);
	ok(n > 1, "done after %d polls", n);
	is(br(2, ACCEL_REG_STATUS, 4), ACCEL_STATUS_DONE, "then DONE");
	ok(log.n == 1 && log.last == 1, "one completion interrupt, at the end");
	is(br(2, ACCEL_REG_JOBS_DONE, 4), 1, "JOBS_DONE 1: the second doorbell was dropped");
	ok(mem[0x1000 + big - 1] == 8 && mem[0x1000 + big] == 0 && mem[0xfff] == 0 &&
	       mem[0x1000 + (5u << 20) + 3] == 4,
	   "fill: pattern exact across steps and bounds");
	/* an overlapping copy upwards over several steps is a memmove */
	for (uint64_t i = 0; i < ov; i += 4096)
		mem[0x1000 + i] = (uint8_t)(i >> 12);
	job(ACCEL_OP_COPY, 0, 0x1000, 0x1000 + (3u << 20) + 8, ov, 0);
	poll_job(m);
	st = (uint32_t)br(2, ACCEL_REG_STATUS, 4);
	n = 0;
	for (uint64_t i = 0; i < ov; i += 4096)
		n += mem[0x1000 + (3u << 20) + 8 + i] != (uint8_t)(i >> 12);
	ok(st == ACCEL_STATUS_DONE && n == 0, "overlapping copy up: exact (%d pages wrong)", n);
	job(ACCEL_OP_COPY, 0, 0x1000 + (3u << 20) + 8, 0x1000, ov, 0);
	poll_job(m);
	n = 0;
	for (uint64_t i = 0; i < ov; i += 4096)
		n += mem[0x1000 + i] != (uint8_t)(i >> 12);
	is(n, 0, "overlapping copy down: exact");
	/* FLR mid-job: aborted, no completion, no interrupt, nothing more written */
	log.n = 0;
	memset(mem + big, 0, 4096);
	bw(2, ACCEL_REG_JOB_VECTOR, 4, 1);
	st = job(ACCEL_OP_FILL, ACCEL_JOBF_IRQ, 0, 0, 2 * big, 0x5a5a5a5a5a5a5a5aull);
	is(st, ACCEL_STATUS_BUSY, "a 128 MiB fill runs");
	be->ops->reset(be->dev, VCXL_RESET_FLR);
	is(br(2, ACCEL_REG_STATUS, 4), 0, "FLR: STATUS 0");
	for (int i = 0; i < 40; i++)
		vcxl_model_poll(m);
	ok(br(2, ACCEL_REG_STATUS, 4) == 0 && br(2, ACCEL_REG_JOBS_DONE, 4) == 0 && log.n == 0,
	   "the job aborted: no completion, no interrupt after polls");
	is(mem[big], 0, "nothing written after the FLR");
	vcxl_model_destroy(m);
}

static void test_remove(void)
{
	struct vcxl_model *m = mk(NULL);
	uint64_t v = 0;
	int fd;
	uint64_t off;
	struct vcxl_bar_info bi;
	vcxl_model_remove(m);
	ok(be->ops->cfg_read(be->dev, 0, 4, &v) == -ENODEV && v == 0xffffffff,
	   "removed: config reads all-ones, -ENODEV");
	ok(be->ops->cfg_read(be->dev, 0, 2, &v) == -ENODEV && v == 0xffff, "word read all-ones");
	ok(be->ops->bar_read(be->dev, 2, 0, 8, &v) == -ENODEV && v == ~0ull, "BAR read all-ones");
	ok(be->ops->cfg_write(be->dev, 4, 2, 6) == -ENODEV, "writes dropped with -ENODEV");
	ok(be->ops->bar_write(be->dev, 0, 0x20000, 4, 6) == -ENODEV, "BAR writes dropped");
	ok(be->ops->hpa_map(be->dev, 0, G256, &fd, &off) == -ENODEV, "hpa_map -ENODEV");
	ok(be->ops->reset(be->dev, VCXL_RESET_FLR) == -ENODEV, "reset -ENODEV");
	ok(be->ops->bar_info(be->dev, 0, &bi) == -ENODEV, "bar_info -ENODEV");
	is(vcxl_model_poll(m), -1, "poll: nothing to do");
	vcxl_model_destroy(m);
}

/* The pages the device wrote, read back over any range: a range whose first
 * page starts a bitmap word (the word-copy path) and one that does not (page
 * by page) give the same bits, none past the range's end. */
static void test_dirty_get(void)
{
	struct vcxl_model_cfg c = {.mem_size = G256};
	struct vcxl_model *m = mk(&c);
	const uint64_t pg = 4096, marked[] = {0, 63, 64, 100, 127, 128, 170, 200, 65535};
	uint64_t bm[4], want[4];
	bool same = true;

	is(be->ops->mig_dirty(be->dev, true), 0, "tracking on");
	for (unsigned i = 0; i < sizeof(marked) / sizeof(marked[0]); i++)
		model_mig_mark(m, marked[i] * pg, 1);
	/* [first, first + n) pages; first 0 and 64: whole words, 1 and 70: not */
	static const uint64_t first[] = {0, 64, 1, 70, 65472}, npg[] = {256, 100, 200, 130, 64};
	for (unsigned k = 0; k < sizeof(first) / sizeof(first[0]); k++) {
		memset(bm, 0xa5, sizeof(bm));
		memset(want, 0, sizeof(want));
		for (unsigned i = 0; i < sizeof(marked) / sizeof(marked[0]); i++)
			if (marked[i] >= first[k] && marked[i] < first[k] + npg[k])
				want[(marked[i] - first[k]) / 64] |=
				    1ull << ((marked[i] - first[k]) % 64);
		if (be->ops->mig_dirty_get(be->dev, first[k] * pg, npg[k] * pg, bm) ||
		    memcmp(bm, want, (npg[k] + 63) / 64 * 8)) {
			diag("pages %llu+%llu: %016llx %016llx %016llx %016llx",
			     (unsigned long long)first[k], (unsigned long long)npg[k],
			     (unsigned long long)bm[0], (unsigned long long)bm[1],
			     (unsigned long long)bm[2], (unsigned long long)bm[3]);
			same = false;
		}
	}
	ok(same, "the written pages' bits over aligned and unaligned ranges, none past the end");
	is(be->ops->mig_dirty_get(be->dev, pg, G256, bm), -EINVAL,
	   "a range past the memory: EINVAL");
	vcxl_model_destroy(m);
}

int main(void)
{
	test_identity();
	test_bars();
	test_comp_placement();
	test_create_args();
	test_hpa_map();
	test_firmware_and_active();
	test_cxl_reset();
	test_flr();
	test_engine();
	test_engine_steps();
	test_remove();
	test_dirty_get();
	return done();
}
