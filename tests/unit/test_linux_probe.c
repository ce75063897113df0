// SPDX-License-Identifier: BSD-3-Clause
/*
 * Replay the accesses the Linux CXL core makes when it probes a Type-2 device
 * and commits an endpoint decoder (drivers/cxl/core/pci.c, regs.c, hdm.c as
 * summarised in the register notes §2.11, §4, §6.1), against the model.
 */
#include <errno.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>

#include "tap.h"
#include "cxl/cxl_spec.h"
#include "model/model.h"

static struct vcxl_backend *be;

static uint32_t cfg_dword(uint32_t off)
{
	uint64_t v = 0;
	be->ops->cfg_read(be->dev, off, 4, &v);
	return (uint32_t)v;
}

static uint16_t cfg_word(uint32_t off)
{
	uint64_t v = 0;
	be->ops->cfg_read(be->dev, off, 2, &v);
	return (uint16_t)v;
}

static int rd32(void *opaque, uint32_t off, uint32_t *v)
{
	*v = cfg_dword(off);
	return 0;
}

static uint32_t readl(uint64_t off)
{
	uint64_t v = 0;
	be->ops->bar_read(be->dev, 0, off, 4, &v);
	return (uint32_t)v;
}

static void writel(uint32_t v, uint64_t off)
{
	be->ops->bar_write(be->dev, 0, off, 4, v);
}

static void msleep(unsigned ms)
{
	struct timespec ts = {ms / 1000, (long)(ms % 1000) * 1000000};
	nanosleep(&ts, NULL);
}

struct probe {
	uint32_t dvsec;
	uint64_t comp;	/* component block offset in BAR0 */
	uint64_t hdm;	/* HDM capability offset in BAR0 */
	unsigned count; /* decoders */
};

/* cxl_pci_setup_regs / cxl_probe_component_regs */
static int probe_regs(struct probe *p)
{
	uint32_t rl, len;
	struct vcxl_regloc_entry e;
	if (vcxl_pcie_find_dvsec(rd32, NULL, CXL_VENDOR_ID, CXL_DVSEC_ID_REG_LOCATOR, &rl, &len))
		return -ENODEV;
	p->comp = ~0ull;
	for (uint32_t k = 0; k < (len - CXL_REGLOC_FIRST_ENTRY) / CXL_REGLOC_ENTRY_SIZE; k++) {
		vcxl_regloc_decode(cfg_dword(rl + CXL_REGLOC_BLOCK_LO(k)),
				   cfg_dword(rl + CXL_REGLOC_BLOCK_HI(k)), &e);
		if (e.id == CXL_REGLOC_RBI_COMPONENT && e.bir == 0)
			p->comp = e.offset;
	}
	if (p->comp == ~0ull)
		return -ENODEV;
	uint64_t cm = p->comp + CXL_CM_OFFSET;
	uint32_t hdr = readl(cm);
	if ((hdr & 0xffff) != CXL_CM_CAP_ID_ARRAY)
		return -ENXIO; /* "Couldn't locate the CXL.cache and CXL.mem capability array" */
	bool ras = false;
	p->hdm = 0;
	for (unsigned cap = 1; cap <= (hdr >> 24); cap++) {
		uint32_t h = readl(cm + 4 * cap);
		uint64_t at = cm + (h >> 20);
		uint32_t first = readl(at);
		if ((h & 0xffff) == CXL_CM_CAP_ID_HDM) {
			p->hdm = at;
			p->count =
			    (unsigned)vcxl_hdm_count_decode(first & CXL_HDM_CAP_DECODER_COUNT);
		} else if ((h & 0xffff) == CXL_CM_CAP_ID_RAS) {
			ras = true;
		}
	}
	return p->hdm && ras ? 0 : -ENXIO;
}

/* cxl_dvsec_rr_decode + cxl_hdm_decode_init + cxl_await_media_ready */
static int probe_dvsec(struct probe *p, bool *fw)
{
	if (vcxl_pcie_find_dvsec(rd32, NULL, CXL_VENDOR_ID, CXL_DVSEC_ID_DEVICE, &p->dvsec, NULL))
		return -ENODEV;
	uint16_t cap = cfg_word(p->dvsec + CXL_DVSEC_CAP);
	uint16_t ctrl = cfg_word(p->dvsec + CXL_DVSEC_CTRL);
	unsigned hdm_count = (unsigned)VCXL_FIELD_GET(CXL_DVSEC_CAP_HDM_COUNT, cap);
	if (!(cap & CXL_DVSEC_CAP_MEM) || hdm_count == 0 || hdm_count > 2)
		return -ENXIO;
	/* wait_for_valid: up to 1.5 s */
	int tries = 0;
	while (!(cfg_dword(p->dvsec + CXL_DVSEC_RANGE_SIZE_LO(0)) & CXL_DVSEC_RANGE_INFO_VALID)) {
		if (++tries > 15)
			return -ETIMEDOUT;
		msleep(100);
	}
	for (unsigned i = 0; i < hdm_count; i++) {
		uint64_t size = (uint64_t)cfg_dword(p->dvsec + CXL_DVSEC_RANGE_SIZE_HI(i)) << 32 |
				(cfg_dword(p->dvsec + CXL_DVSEC_RANGE_SIZE_LO(i)) & 0xf0000000u);
		uint64_t base = (uint64_t)cfg_dword(p->dvsec + CXL_DVSEC_RANGE_BASE_HI(i)) << 32 |
				(cfg_dword(p->dvsec + CXL_DVSEC_RANGE_BASE_LO(i)) & 0xf0000000u);
		if (ctrl & CXL_DVSEC_CTRL_MEM_EN)
			diag("range %u: base 0x%llx size 0x%llx", i, (unsigned long long)base,
			     (unsigned long long)size);
		if (i == 0 && size == 0)
			return -ENXIO;
	}
	uint32_t g = readl(p->hdm + CXL_HDM_GLOBAL_CTRL);
	*fw = g & CXL_HDM_GCTRL_ENABLE;
	if (!*fw) {
		/* devm_cxl_enable_hdm, then Mem_Enable */
		writel(g | CXL_HDM_GCTRL_ENABLE, p->hdm + CXL_HDM_GLOBAL_CTRL);
	}
	if (!(ctrl & CXL_DVSEC_CTRL_MEM_EN))
		be->ops->cfg_write(be->dev, p->dvsec + CXL_DVSEC_CTRL, 2,
				   ctrl | CXL_DVSEC_CTRL_MEM_EN);
	/* cxl_await_media_ready: poll Active once per (short) interval */
	for (tries = 0; tries < 200; tries++) {
		if (cfg_dword(p->dvsec + CXL_DVSEC_RANGE_SIZE_LO(0)) & CXL_DVSEC_RANGE_ACTIVE)
			return 0;
		msleep(10);
	}
	return -ETIMEDOUT;
}

/* cxl_settle_decoders + init_hdm_decoder; returns the number committed */
static int enumerate(struct probe *p, uint64_t *dpa_end)
{
	int committed = 0;
	uint64_t dpa = 0;
	for (unsigned i = 0; i < p->count; i++) {
		uint64_t d = p->hdm + CXL_HDM_DECODER_FIRST + i * CXL_HDM_DECODER_STRIDE;
		uint32_t ctrl = readl(d + 0x10);
		uint64_t base = (uint64_t)readl(d + 4) << 32 | readl(d);
		uint64_t size = (uint64_t)readl(d + 0xc) << 32 | readl(d + 8);
		if (!(ctrl & CXL_HDM_DEC_CTRL_COMMITTED))
			continue;
		if (base == ~0ull || size == ~0ull || size == 0 || (int)i != committed)
			return -ENXIO;
		unsigned ways =
		    vcxl_hdm_iw_decode((unsigned)VCXL_FIELD_GET(CXL_HDM_DEC_CTRL_IW, ctrl));
		if (!ways || size % ways)
			return -ENXIO;
		uint64_t skip = (uint64_t)readl(d + 0x18) << 32 | readl(d + 0x14);
		dpa += skip + size / ways;
		committed++;
	}
	*dpa_end = dpa;
	return committed;
}

/* setup_hw_decoder + cxld_await_commit */
static int commit(struct probe *p, unsigned id, uint64_t base, uint64_t size, uint64_t skip)
{
	uint32_t ctrl = readl(p->hdm + CXL_HDM_DEC_CTRL(id));
	ctrl &= ~(CXL_HDM_DEC_CTRL_IG | CXL_HDM_DEC_CTRL_IW | CXL_HDM_DEC_CTRL_HOSTONLY);
	ctrl |= CXL_HDM_DEC_CTRL_COMMIT; /* IG 0 / IW 0: one way; Type-2: HOSTONLY stays 0 */
	writel((uint32_t)(base >> 32), p->hdm + CXL_HDM_DEC_BASE_HI(id));
	writel((uint32_t)base, p->hdm + CXL_HDM_DEC_BASE_LO(id));
	writel((uint32_t)(size >> 32), p->hdm + CXL_HDM_DEC_SIZE_HI(id));
	writel((uint32_t)size, p->hdm + CXL_HDM_DEC_SIZE_LO(id));
	writel((uint32_t)(skip >> 32), p->hdm + CXL_HDM_DEC_SKIP_HI(id));
	writel((uint32_t)skip, p->hdm + CXL_HDM_DEC_SKIP_LO(id));
	writel(ctrl, p->hdm + CXL_HDM_DEC_CTRL(id));
	for (int i = 0; i < 20; i++) {
		ctrl = readl(p->hdm + CXL_HDM_DEC_CTRL(id));
		if (ctrl & CXL_HDM_DEC_CTRL_COMMIT_ERR) {
			writel(ctrl & ~CXL_HDM_DEC_CTRL_COMMIT, p->hdm + CXL_HDM_DEC_CTRL(id));
			return -EIO;
		}
		if (ctrl & CXL_HDM_DEC_CTRL_COMMITTED)
			return 0;
		msleep(1);
	}
	return -ETIMEDOUT;
}

/* cxl_decoder_reset */
static void decommit(struct probe *p, unsigned id)
{
	uint32_t ctrl = readl(p->hdm + CXL_HDM_DEC_CTRL(id));
	writel(ctrl & ~CXL_HDM_DEC_CTRL_COMMIT, p->hdm + CXL_HDM_DEC_CTRL(id));
	writel(0, p->hdm + CXL_HDM_DEC_SIZE_HI(id));
	writel(0, p->hdm + CXL_HDM_DEC_SIZE_LO(id));
	writel(0, p->hdm + CXL_HDM_DEC_BASE_HI(id));
	writel(0, p->hdm + CXL_HDM_DEC_BASE_LO(id));
}

static void test_fresh_device(void)
{
	struct vcxl_model_cfg c = {.mem_size = 1ull << 30,
				   .decoders = 2,
				   .active_delay_ms = 30,
				   .comp_at = VCXL_COMP_AT_MIDDLE};
	struct vcxl_model *m;
	struct probe p;
	bool fw;
	uint64_t dpa_end;
	int fd;
	uint64_t off;

	ok(vcxl_model_create(&c, &m) == 0, "create a 1 GiB, 2-decoder device");
	be = vcxl_model_backend(m);
	is(probe_regs(&p), 0, "register locator + capability array walk finds HDM and RAS");
	is(p.comp, 0x200000, "component block in the middle of BAR0");
	is(p.count, 2, "HDM decoder count 2");
	is(probe_dvsec(&p, &fw), 0, "DVSEC probe: Info_Valid, HDM enable, Mem_Enable, Active");
	ok(!fw, "no firmware set-up found");
	ok(readl(p.hdm + CXL_HDM_GLOBAL_CTRL) & CXL_HDM_GCTRL_ENABLE, "HDM Decoder Enable set");
	ok(cfg_word(p.dvsec + CXL_DVSEC_CTRL) & CXL_DVSEC_CTRL_MEM_EN, "Mem_Enable set");
	is(enumerate(&p, &dpa_end), 0, "no committed decoders");
	/* region: 512 MiB at 0x40_0000_0000 after a 256 MiB skip, unaligned low bits masked */
	uint64_t base = 0x4000000000ull;
	is(commit(&p, 1, base, 1ull << 29, 0), -EIO, "out of order commit -> Error Not Committed");
	is(commit(&p, 0, base | 0x123, 1ull << 29, 1ull << 28), 0, "decoder 0 commits");
	is(readl(p.hdm + CXL_HDM_DEC_BASE_LO(0)), 0, "Base Low reserved bits masked, not rejected");
	is(commit(&p, 1, base + (1ull << 29), 1ull << 28, 0), 0, "decoder 1 commits after it");
	is(commit(&p, 1, base, 1ull << 28, 0), 0, "re-commit of a committed decoder is a no-op");
	is(enumerate(&p, &dpa_end), 2, "enumeration sees 2 committed decoders in order");
	is(dpa_end, 1ull << 30, "DPA accounted: skip 256M + 512M + 256M");
	/* the fd is the mapped range alone (offset 0); where it lands in DPA is
	 * what the store below shows */
	ok(be->ops->hpa_map(be->dev, base + 4096, 4096, &fd, &off) == 0 && off == 0,
	   "HPA decodes (an object of the mapped range alone)");
	uint8_t *mem = vcxl_model_mem(m);
	uint8_t *hp = mmap(NULL, 4096, PROT_READ | PROT_WRITE, MAP_SHARED, fd, (off_t)off);
	hp[1] = 0x42;
	ok(mem[(1ull << 28) + 4097] == 0x42,
	   "a store through the HPA mapping lands in DPA (skip applied)");
	munmap(hp, 4096);
	/* teardown in reverse order */
	decommit(&p, 1);
	decommit(&p, 0);
	is(enumerate(&p, &dpa_end), 0, "both decoders decommitted");
	ok(be->ops->hpa_map(be->dev, base, 4096, &fd, &off) == -ENXIO, "no decode after teardown");
	is(readl(p.hdm + CXL_HDM_DEC_BASE_HI(0)) | readl(p.hdm + CXL_HDM_DEC_SIZE_LO(0)), 0,
	   "registers cleared by the decommit writes");
	is(commit(&p, 0, base, 1ull << 28, 0), 0, "decoder 0 commits again");
	vcxl_model_destroy(m);
}

static void test_firmware_device(void)
{
	struct vcxl_model_cfg c = {.firmware_committed = true, .fw_hpa_base = 0x1000000000ull};
	struct vcxl_model *m;
	struct probe p;
	bool fw;
	uint64_t dpa_end;
	ok(vcxl_model_create(&c, &m) == 0, "create a firmware-committed device");
	be = vcxl_model_backend(m);
	is(probe_regs(&p), 0, "registers found");
	is(probe_dvsec(&p, &fw), 0, "DVSEC probe");
	ok(fw, "HDM Decoder Enable already set: firmware did the set-up");
	is(enumerate(&p, &dpa_end), 1, "decoder 0 enumerates as committed");
	is(dpa_end, 1ull << 28, "covering all 256 MiB");
	uint32_t ctrl = readl(p.hdm + CXL_HDM_DEC_CTRL(0));
	ok(!(ctrl & CXL_HDM_DEC_CTRL_HOSTONLY), "device-coherent (Type-2) target type");
	vcxl_model_destroy(m);
}

int main(void)
{
	test_fresh_device();
	test_firmware_device();
	return done();
}
