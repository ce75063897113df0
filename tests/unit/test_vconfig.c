// SPDX-License-Identifier: BSD-3-Clause
/*
 * The guest's config space: the emulated CXL Device DVSEC (CONFIG_LOCK on the
 * guest's view only, virtual CXL reset, live Status2 / Info_Valid / Active,
 * byte and word access), the route map (host-owned registers read-only,
 * the rest passed through), and the virtual DOE serving the guest's CDAT.
 */
#include <errno.h>
#include <linux/pci_regs.h>
#include <string.h>

#include "be_wrap.h"
#include "tap.h"
#include "host/host_cxl.h"
#include "model/model.h"
#include "vfio-cxl/vfio_cxl.h"
#include "vdev_util.h"

#define G VCXL_HPA_GRANULE

struct env {
	struct vcxl_model *m;
	struct vcxl_backend *raw;
	struct bw w;
	struct vcxl_host h;
	struct vclock clk;
	struct vcxl_vdev *v;
	uint32_t dv; /* DVSEC offset (guest and device alike) */
	char err[200];
};

static int env_init(struct env *e, const struct vcxl_model_cfg *mc, uint64_t region_size)
{
	memset(e, 0, sizeof(*e));
	if (vcxl_model_create(mc, &e->m))
		return -1;
	e->raw = vcxl_model_backend(e->m);
	bw_init(&e->w, e->raw);
	vcxl_host_init(&e->h);
	vcxl_host_add_window(&e->h, VCXL_HOST_DEFAULT_WIN_BASE, 64 * G,
			     VCXL_HOST_DEFAULT_WIN_FLAGS);
	e->clk.model = e->m;
	vclock_install(&e->h, &e->clk);
	struct vcxl_vdev_cfg vc = {.host = &e->h, .region_size = region_size};
	if (vcxl_vdev_create(&e->w.be, &vc, &e->v, e->err, sizeof(e->err))) {
		diag("create: %s", e->err);
		vcxl_host_fini(&e->h);
		vcxl_model_destroy(e->m);
		return -1;
	}
	e->dv = vcxl_vdev_host_dev(e->v)->dvsec;
	return 0;
}

static void env_fini(struct env *e)
{
	vcxl_vdev_destroy(e->v);
	vcxl_host_fini(&e->h);
	vcxl_model_destroy(e->m);
}

static uint32_t pcfg(struct env *e, uint32_t off)
{
	return raw_cfg32(e->raw, off);
}

static void test_config_lock(void)
{
	struct vcxl_model_cfg mc = {.mem_size = 2 * G};
	struct env e;

	if (!ok(env_init(&e, &mc, G) == 0, "vdev (256 MiB region of 512 MiB)"))
		return;
	uint32_t dv = e.dv;
	uint32_t p_ctrl = pcfg(&e, dv + CXL_DVSEC_CTRL), p_lock = pcfg(&e, dv + CXL_DVSEC_LOCK);
	uint32_t p_base = pcfg(&e, dv + CXL_DVSEC_RANGE_BASE_LO(0));
	uint32_t lo = gcfg(e.v, dv + CXL_DVSEC_RANGE_SIZE_LO(0), 4);
	is(lo & CXL_DVSEC_RANGE_SIZE_LO_MASK, G, "Range Size = exposed region, not device memory");

	/* byte access to DVSEC registers works (RFC v2 refused it) */
	is(gcfg_w(e.v, dv + CXL_DVSEC_CTRL, 1, CXL_DVSEC_CTRL_MEM_EN), 0, "byte write to Control");
	is(gcfg(e.v, dv + CXL_DVSEC_CTRL, 1), CXL_DVSEC_CTRL_MEM_EN | CXL_DVSEC_CTRL_IO_EN,
	   "byte read back (IO_Enable stays 1)");
	is(gcfg_w(e.v, dv + CXL_DVSEC_CTRL, 2, 0), 0, "word write 0");
	is(gcfg(e.v, dv + CXL_DVSEC_CTRL, 2), CXL_DVSEC_CTRL_IO_EN, "IO_Enable is RO 1");
	gcfg_w(e.v, dv + CXL_DVSEC_CTRL, 2, CXL_DVSEC_CTRL_MEM_EN);
	gcfg_w(e.v, dv + CXL_DVSEC_RANGE_BASE_HI(0), 4, 0x4);
	gcfg_w(e.v, dv + CXL_DVSEC_RANGE_BASE_LO(0), 4, 0x3fffffff);
	is(gcfg(e.v, dv + CXL_DVSEC_RANGE_BASE_LO(0), 4), 0x30000000,
	   "Range Base Low keeps only [31:28]");
	is(gcfg_w(e.v, dv + CXL_DVSEC_LOCK, 1, CXL_DVSEC_LOCK_CONFIG), 0, "byte write CONFIG_LOCK");
	is(gcfg(e.v, dv + CXL_DVSEC_LOCK, 2), CXL_DVSEC_LOCK_CONFIG, "locked");
	gcfg_w(e.v, dv + CXL_DVSEC_CTRL, 2, 0);
	gcfg_w(e.v, dv + CXL_DVSEC_RANGE_BASE_HI(0), 4, 0x8);
	is(gcfg(e.v, dv + CXL_DVSEC_CTRL, 2), CXL_DVSEC_CTRL_IO_EN | CXL_DVSEC_CTRL_MEM_EN,
	   "Control frozen by the lock");
	is(gcfg(e.v, dv + CXL_DVSEC_RANGE_BASE_HI(0), 4), 0x4, "Range Base frozen by the lock");
	gcfg_w(e.v, dv + CXL_DVSEC_LOCK, 2, 0);
	is(gcfg(e.v, dv + CXL_DVSEC_LOCK, 2), CXL_DVSEC_LOCK_CONFIG, "CONFIG_LOCK is write-once");
	is(pcfg(&e, dv + CXL_DVSEC_LOCK), p_lock, "the device's Lock is untouched");
	is(pcfg(&e, dv + CXL_DVSEC_CTRL), p_ctrl, "the device's Control is untouched");
	is(pcfg(&e, dv + CXL_DVSEC_RANGE_BASE_LO(0)), p_base,
	   "the device's Range Base is untouched");
	ok(p_ctrl & CXL_DVSEC_CTRL_MEM_EN, "(the host keeps Mem_Enable on)");
	env_fini(&e);
}

static void test_cxl_reset(void)
{
	struct vcxl_model_cfg mc = {.mem_size = G};
	struct env e;
	struct vcxl_vdev_info info;

	if (!ok(env_init(&e, &mc, 0) == 0, "vdev"))
		return;
	uint32_t dv = e.dv;
	vcxl_vdev_ops.get_info(e.v, &info);
	uint64_t hdm = info.cxl.hdm_offset;
	const struct vcxl_region *r = vcxl_vdev_region(e.v);
	g_wr(e.v, 0, hdm + CXL_HDM_GLOBAL_CTRL, 4, CXL_HDM_GCTRL_ENABLE);
	g_wr(e.v, 0, hdm + CXL_HDM_DEC_BASE_LO(0), 8, 0x800000000ull);
	g_wr(e.v, 0, hdm + CXL_HDM_DEC_SIZE_LO(0), 8, r->size);
	g_wr(e.v, 0, hdm + CXL_HDM_DEC_CTRL(0), 4, CXL_HDM_DEC_CTRL_COMMIT);
	ok(g_rd(e.v, 0, hdm + CXL_HDM_DEC_CTRL(0), 4, NULL) & CXL_HDM_DEC_CTRL_COMMITTED,
	   "guest decoder committed");
	gcfg_w(e.v, dv + CXL_DVSEC_CTRL, 2, CXL_DVSEC_CTRL_MEM_EN);
	gcfg_w(e.v, dv + CXL_DVSEC_LOCK, 2, CXL_DVSEC_LOCK_CONFIG);
	vcxl_vdev_ops.region_write(e.v, 9, 0, "data", 4);
	is(gcfg(e.v, dv + CXL_DVSEC_STATUS2, 2) & CXL_DVSEC_STATUS2_RESET_DONE, 0,
	   "no Reset Complete yet");
	uint32_t p_c2 = pcfg(&e, dv + CXL_DVSEC_CTRL2);
	unsigned long resets = e.w.resets, cw = e.w.cfg_writes;
	is(gcfg_w(e.v, dv + CXL_DVSEC_CTRL2, 2, CXL_DVSEC_CTRL2_INIT_RESET), 0,
	   "guest: Initiate CXL Reset");
	is(gcfg(e.v, dv + CXL_DVSEC_CTRL2, 2) & CXL_DVSEC_CTRL2_INIT_RESET, 0, "trigger reads 0");
	ok(gcfg(e.v, dv + CXL_DVSEC_STATUS2, 2) & CXL_DVSEC_STATUS2_RESET_DONE,
	   "Status2 Reset Complete in the virtual view");
	is(gcfg(e.v, dv + CXL_DVSEC_STATUS2, 2) & CXL_DVSEC_STATUS2_RESET_ERR, 0, "no Reset Error");
	is(g_rd(e.v, 0, hdm + CXL_HDM_DEC_CTRL(0), 4, NULL) & CXL_HDM_DEC_CTRL_COMMITTED, 0,
	   "virtual decoder decommitted");
	is(g_rd(e.v, 0, hdm + CXL_HDM_GLOBAL_CTRL, 4, NULL), 0,
	   "virtual HDM Decoder Enable cleared");
	/* CXL r3.1 8.1.3.6: CONFIG_LOCK and what it locks survive a CXL Reset */
	is(gcfg(e.v, dv + CXL_DVSEC_LOCK, 2), CXL_DVSEC_LOCK_CONFIG, "virtual CONFIG_LOCK kept");
	is(gcfg(e.v, dv + CXL_DVSEC_CTRL, 2), CXL_DVSEC_CTRL_IO_EN | CXL_DVSEC_CTRL_MEM_EN,
	   "locked virtual Control kept");
	is(e.w.resets, resets, "no device reset");
	is(e.w.cfg_writes, cw, "nothing written to the device's config space");
	is(pcfg(&e, dv + CXL_DVSEC_CTRL2), p_c2, "device Control2/Status2 untouched");
	is(vcxl_region_verify(r), 0, "host region intact (decoder committed)");
	char b[4];
	vcxl_vdev_ops.region_read(e.v, 9, 0, b, 4);
	ok(memcmp(b, "data", 4) == 0, "region data intact");
	/* a second reset works too, from a locked state, by a byte write */
	struct vcxl_vdev_stats st0, st1;
	vcxl_vdev_get_stats(e.v, &st0);
	g_wr(e.v, 0, hdm + CXL_HDM_GLOBAL_CTRL, 4, CXL_HDM_GCTRL_ENABLE);
	gcfg_w(e.v, dv + CXL_DVSEC_CTRL2, 1, CXL_DVSEC_CTRL2_INIT_RESET);
	vcxl_vdev_get_stats(e.v, &st1);
	ok(st1.cxl_reset == st0.cxl_reset + 1 &&
	       g_rd(e.v, 0, hdm + CXL_HDM_GLOBAL_CTRL, 4, NULL) == 0,
	   "byte-written trigger resets again");
	/* Control2's RW bits are the guest's */
	gcfg_w(e.v, dv + CXL_DVSEC_CTRL2, 2, CXL_DVSEC_CTRL2_DISABLE_CACHE);
	is(gcfg(e.v, dv + CXL_DVSEC_CTRL2, 2), CXL_DVSEC_CTRL2_DISABLE_CACHE,
	   "Disable Caching reads back");
	is(pcfg(&e, dv + CXL_DVSEC_CTRL2) & 0xffff, p_c2 & 0xffff, "and stays virtual");
	env_fini(&e);
}

/* Rewrite live bits the device reports */
struct live {
	uint32_t off;
	uint32_t clear, set;
};

static void live_filter(struct bw *w, uint32_t off, unsigned len, uint64_t *val)
{
	struct live *l = w->priv;
	if (off <= l->off && l->off < off + len) {
		unsigned sh = 8 * (l->off - off);
		*val = (*val & ~((uint64_t)l->clear << sh)) | ((uint64_t)l->set << sh);
	}
}

static void test_live(void)
{
	struct vcxl_model_cfg mc = {.mem_size = G};
	struct env e;
	struct live l;

	if (!ok(env_init(&e, &mc, 0) == 0, "vdev"))
		return;
	uint32_t dv = e.dv;
	e.w.priv = &l;
	e.w.cfg_filter = live_filter;
	l = (struct live){dv + CXL_DVSEC_RANGE_SIZE_LO(0), CXL_DVSEC_RANGE_ACTIVE, 0};
	is(gcfg(e.v, dv + CXL_DVSEC_RANGE_SIZE_LO(0), 4) & CXL_DVSEC_RANGE_ACTIVE, 0,
	   "device drops Memory_Active: guest sees it");
	ok(gcfg(e.v, dv + CXL_DVSEC_RANGE_SIZE_LO(0), 1) & CXL_DVSEC_RANGE_INFO_VALID,
	   "Info_Valid still (byte read)");
	l = (struct live){dv + CXL_DVSEC_RANGE_SIZE_LO(0), CXL_DVSEC_RANGE_INFO_VALID, 0};
	is(gcfg(e.v, dv + CXL_DVSEC_RANGE_SIZE_LO(0), 4) & CXL_DVSEC_RANGE_INFO_VALID, 0,
	   "device drops Info_Valid: guest sees it");
	l = (struct live){dv + CXL_DVSEC_STATUS2, 0, CXL_DVSEC_STATUS2_PM_INIT_DONE};
	ok(gcfg(e.v, dv + CXL_DVSEC_STATUS2, 2) & CXL_DVSEC_STATUS2_PM_INIT_DONE,
	   "Status2 PM Init Complete is live");
	l = (struct live){dv + CXL_DVSEC_STATUS2, CXL_DVSEC_STATUS2_PM_INIT_DONE,
			  CXL_DVSEC_STATUS2_CACHE_INV};
	uint16_t s2 = (uint16_t)gcfg(e.v, dv + CXL_DVSEC_STATUS2, 2);
	ok((s2 & CXL_DVSEC_STATUS2_CACHE_INV) && !(s2 & CXL_DVSEC_STATUS2_PM_INIT_DONE),
	   "Status2 Cache Invalid is live, and follows the device down too");
	e.w.cfg_filter = NULL;
	ok(gcfg(e.v, dv + CXL_DVSEC_RANGE_SIZE_LO(0), 4) & CXL_DVSEC_RANGE_ACTIVE,
	   "back to active");
	is(gcfg(e.v, dv + CXL_DVSEC_RANGE_SIZE_LO(0), 4) & CXL_DVSEC_RANGE_SIZE_LO_MASK, G,
	   "size bits unaffected by the live refresh");
	env_fini(&e);
}

static void test_routes(void)
{
	struct vcxl_model_cfg mc = {.mem_size = G};
	struct env e;

	if (!ok(env_init(&e, &mc, 0) == 0, "vdev"))
		return;
	const struct vcxl_cxl_dev *d = vcxl_vdev_host_dev(e.v);
	uint32_t rl = d->regloc;
	uint32_t rl0 = pcfg(&e, rl + CXL_REGLOC_BLOCK_LO(0)), hdr = pcfg(&e, 0x100);
	is(gcfg(e.v, rl + CXL_REGLOC_BLOCK_LO(0), 4), rl0, "Register Locator reads the device's");
	is(gcfg_w(e.v, rl + CXL_REGLOC_BLOCK_LO(0), 4, 0x00030001), 0,
	   "write to it is accepted...");
	is(gcfg(e.v, rl + CXL_REGLOC_BLOCK_LO(0), 4), rl0, "...and ignored (guest view)");
	is(pcfg(&e, rl + CXL_REGLOC_BLOCK_LO(0)), rl0, "...and ignored (device)");
	unsigned long cw = e.w.cfg_writes;
	gcfg_w(e.v, 0x100, 4, 0);
	gcfg_w(e.v, rl + PCIE_DVSEC_HEADER1, 2, 0x1234);
	is(e.w.cfg_writes, cw, "extended capability / DVSEC header writes never reach the device");
	is(gcfg(e.v, 0x100, 4), hdr, "header unchanged");
	uint32_t gpf = g_find_dvsec(e.v, CXL_VENDOR_ID, CXL_DVSEC_ID_GPF_DEVICE);
	if (gpf) {
		gcfg_w(e.v, gpf + PCIE_DVSEC_HEADER2, 4, 0xffffffff);
		is(e.w.cfg_writes, cw, "GPF DVSEC header dword is read-only");
		uint32_t before = pcfg(&e, gpf + 0xc);
		gcfg_w(e.v, gpf + 0xc, 4, before ^ 0x5);
		is(e.w.cfg_writes, cw, "GPF body write never reaches the device (host-owned)");
		is(gcfg(e.v, gpf + 0xc, 4), before, "... and reads the device's value");
	}
	uint32_t fb = g_find_dvsec(e.v, CXL_VENDOR_ID, CXL_DVSEC_ID_FLEXBUS);
	if (ok(fb, "Flex Bus DVSEC found")) {
		gcfg_w(e.v, fb + CXL_FLEXBUS_CTRL, 2, 0);
		is(e.w.cfg_writes, cw, "Flex Bus Control write never reaches the device");
	}
	/* the standard header passes through */
	uint16_t cmd = (uint16_t)pcfg(&e, PCI_COMMAND);
	is(gcfg_w(e.v, PCI_COMMAND, 2, cmd | PCI_COMMAND_MASTER), 0, "Command write");
	ok(pcfg(&e, PCI_COMMAND) & PCI_COMMAND_MASTER, "reached the device");
	is(gcfg(e.v, PCI_DEVICE_ID, 2), VCXL_MODEL_DEVICE, "device id read through");
	/* a 4 KiB bulk read is split per dword and routed (QEMU reads it whole) */
	uint8_t all[4096];
	is(vcxl_vdev_ops.region_read(e.v, VFIO_PCI_CONFIG_REGION_INDEX, 0, all, sizeof(all)), 0,
	   "whole config space read");
	uint32_t w0;
	memcpy(&w0, all + e.dv + CXL_DVSEC_CAP - 2, 4);
	is(w0, gcfg(e.v, e.dv + CXL_DVSEC_CAP - 2, 4), "bulk read matches dword reads");
	uint8_t b;
	is(vcxl_vdev_ops.region_read(e.v, VFIO_PCI_CONFIG_REGION_INDEX, 4096, &b, 1),
	   (uint64_t)-EINVAL, "read at 4096: -EINVAL");
	is(vcxl_vdev_ops.region_read(e.v, VFIO_PCI_CONFIG_REGION_INDEX, 4094, all, 4),
	   (uint64_t)-EINVAL, "read across the end: -EINVAL");
	is(vcxl_vdev_ops.region_write(e.v, VFIO_PCI_CONFIG_REGION_INDEX, 0, all, 0),
	   (uint64_t)-EINVAL, "empty write: -EINVAL");
	env_fini(&e);
}

/* ---- the guest's DOE ------------------------------------------------------- */

static int gdoe(struct vcxl_vdev *v, uint32_t doe, const uint32_t *req, unsigned n, uint32_t *rsp,
		unsigned cap)
{
	for (unsigned i = 0; i < n; i++)
		gcfg_w(v, doe + PCI_DOE_WRITE, 4, req[i]);
	gcfg_w(v, doe + PCI_DOE_CTRL, 4, PCI_DOE_CTRL_GO);
	if (!(gcfg(v, doe + PCI_DOE_STATUS, 4) & PCI_DOE_STATUS_DATA_READY))
		return -1;
	unsigned len = 2;
	for (unsigned i = 0; i < len && i < cap; i++) {
		rsp[i] = gcfg(v, doe + PCI_DOE_READ, 4);
		gcfg_w(v, doe + PCI_DOE_READ, 4, 0);
		if (i == 1)
			len = rsp[1] & 0x3ffff;
	}
	return (int)len;
}

static void test_doe(void)
{
	struct vcxl_model_cfg mc = {.mem_size = 2 * G};
	struct env e;

	if (!ok(env_init(&e, &mc, G) == 0, "vdev (region smaller than the device)"))
		return;
	uint32_t doe = g_find_ext(e.v, PCIE_EXT_CAP_ID_DOE);
	const struct vcxl_cxl_dev *d = vcxl_vdev_host_dev(e.v);
	if (!ok(doe == d->doe_off && doe, "guest sees the DOE at the device's offset 0x%x", doe)) {
		env_fini(&e);
		return;
	}
	unsigned long cw = e.w.cfg_writes, cr = e.w.ops;
	uint32_t rsp[256];
	uint32_t disc[3] = {0x00000001, 3, 1}; /* PCI-SIG discovery, index 1 */
	int n = gdoe(e.v, doe, disc, 3, rsp, 256);
	is(n, 3, "discovery answered");
	is(rsp[2] & 0xffffff, CXL_VENDOR_ID | (CXL_DOE_TYPE_TABLE_ACCESS << 16),
	   "index 1: CXL table access");
	uint8_t cdat[512];
	size_t used = 0;
	unsigned handle = 0;
	for (int i = 0; i < 16; i++) {
		uint32_t req[3] = {CXL_VENDOR_ID | (CXL_DOE_TYPE_TABLE_ACCESS << 16), 3,
				   handle << 16};
		n = gdoe(e.v, doe, req, 3, rsp, 256);
		if (n < 3)
			break;
		memcpy(cdat + used, &rsp[3], (size_t)(n - 3) * 4);
		used += (size_t)(n - 3) * 4;
		handle = rsp[2] >> 16;
		if (handle == 0xffff)
			break;
	}
	is(handle, 0xffff, "CDAT read to the last entry");
	uint32_t len;
	memcpy(&len, cdat, 4);
	is(len, used, "CDAT length %zu", used);
	uint8_t sum = 0;
	for (size_t i = 0; i < used; i++)
		sum = (uint8_t)(sum + cdat[i]);
	is(sum, 0, "checksum");
	/* first structure after the header is the DSMAS */
	uint8_t *ds = cdat + CDAT_HEADER_SIZE;
	is(ds[0], CDAT_TYPE_DSMAS, "DSMAS first");
	uint64_t base, dlen;
	memcpy(&base, ds + 8, 8);
	memcpy(&dlen, ds + 16, 8);
	is(base, 0, "DSMAS DPA base 0 (the guest's view)");
	is(dlen, G, "DSMAS length = exposed region, not the device's 512 MiB");
	is(e.w.cfg_writes, cw, "the guest's DOE traffic never touched the device's mailbox");
	(void)cr;
	/* the DOE mailbox registers are dword-only */
	is(vcxl_vdev_ops.region_read(e.v, VFIO_PCI_CONFIG_REGION_INDEX, doe + PCI_DOE_READ, rsp, 2),
	   (uint64_t)-EINVAL, "2-byte mailbox read refused");
	env_fini(&e);
}

int main(void)
{
	test_config_lock();
	test_cxl_reset();
	test_live();
	test_routes();
	test_doe();
	return done();
}
