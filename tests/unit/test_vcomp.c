// SPDX-License-Identifier: BSD-3-Clause
/*
 * The guest's component block: the virtual capability array and HDM
 * decoders with the vdev's commit policy (256 MiB aligned, within the
 * exposed region, one way), access rules, emulated RAS, and that nothing the
 * guest writes reaches the device.
 */
#include <errno.h>
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
	struct vcxl_vdev *v;
	uint64_t comp, hdm; /* BAR0 offsets */
	uint64_t rsize;
	char err[200];
};

static int env_init(struct env *e, const struct vcxl_model_cfg *mc, unsigned guest_decoders)
{
	memset(e, 0, sizeof(*e));
	if (vcxl_model_create(mc, &e->m))
		return -1;
	e->raw = vcxl_model_backend(e->m);
	bw_init(&e->w, e->raw);
	vcxl_host_init(&e->h);
	vcxl_host_add_window(&e->h, VCXL_HOST_DEFAULT_WIN_BASE, 64 * G,
			     VCXL_HOST_DEFAULT_WIN_FLAGS);
	struct vcxl_vdev_cfg vc = {.host = &e->h, .guest_decoders = guest_decoders};
	if (vcxl_vdev_create(&e->w.be, &vc, &e->v, e->err, sizeof(e->err))) {
		diag("create: %s", e->err);
		vcxl_host_fini(&e->h);
		vcxl_model_destroy(e->m);
		return -1;
	}
	struct vcxl_vdev_info info;
	vcxl_vdev_ops.get_info(e->v, &info);
	e->comp = info.cxl.comp_offset;
	e->hdm = info.cxl.hdm_offset;
	e->rsize = info.cxl.region_size;
	return 0;
}

static void env_fini(struct env *e)
{
	vcxl_vdev_destroy(e->v);
	vcxl_host_fini(&e->h);
	vcxl_model_destroy(e->m);
}

static uint32_t hr(struct env *e, uint32_t reg)
{
	return (uint32_t)g_rd(e->v, 0, e->hdm + reg, 4, NULL);
}

static void hw(struct env *e, uint32_t reg, uint32_t v)
{
	g_wr(e->v, 0, e->hdm + reg, 4, v);
}

/* Program decoder n and commit; returns its Control afterwards. */
static uint32_t commit(struct env *e, unsigned n, uint64_t base, uint64_t size, uint64_t skip,
		       uint32_t ctrl)
{
	hw(e, CXL_HDM_DEC_BASE_HI(n), (uint32_t)(base >> 32));
	hw(e, CXL_HDM_DEC_BASE_LO(n), (uint32_t)base);
	hw(e, CXL_HDM_DEC_SIZE_HI(n), (uint32_t)(size >> 32));
	hw(e, CXL_HDM_DEC_SIZE_LO(n), (uint32_t)size);
	hw(e, CXL_HDM_DEC_SKIP_HI(n), (uint32_t)(skip >> 32));
	hw(e, CXL_HDM_DEC_SKIP_LO(n), (uint32_t)skip);
	hw(e, CXL_HDM_DEC_CTRL(n), ctrl | CXL_HDM_DEC_CTRL_COMMIT);
	return hr(e, CXL_HDM_DEC_CTRL(n));
}

static void decommit(struct env *e, unsigned n)
{
	hw(e, CXL_HDM_DEC_CTRL(n), hr(e, CXL_HDM_DEC_CTRL(n)) & ~CXL_HDM_DEC_CTRL_COMMIT);
}

#define COMMITTED(c)                                                                               \
	(((c) & (CXL_HDM_DEC_CTRL_COMMITTED | CXL_HDM_DEC_CTRL_COMMIT_ERR)) ==                     \
	 CXL_HDM_DEC_CTRL_COMMITTED)
#define REFUSED(c)                                                                                 \
	(((c) & (CXL_HDM_DEC_CTRL_COMMITTED | CXL_HDM_DEC_CTRL_COMMIT_ERR)) ==                     \
	 CXL_HDM_DEC_CTRL_COMMIT_ERR)

static void test_layout(void)
{
	struct vcxl_model_cfg mc = {.mem_size = G};
	struct env e;
	int rc;

	if (!ok(env_init(&e, &mc, 0) == 0, "vdev"))
		return;
	const struct vcxl_cxl_dev *d = vcxl_vdev_host_dev(e.v);
	uint64_t cm = e.comp + CXL_CM_OFFSET;
	uint32_t hdr = (uint32_t)g_rd(e.v, 0, cm, 4, NULL);
	is(VCXL_FIELD_GET(CXL_CM_CAP_HDR_ID, hdr), 1, "array header id 1");
	is(VCXL_FIELD_GET(CXL_CM_CAP_HDR_VERSION, hdr), 1, "version 1");
	is(VCXL_FIELD_GET(CXL_CM_CAP_HDR_CM_VERSION, hdr), 1, "cache/mem version 1");
	unsigned n = VCXL_FIELD_GET(CXL_CM_CAP_HDR_ARRAY_SIZE, hdr);
	is(n, (d->ras_off != 0) + (d->link_off != 0) + 1u, "as many capabilities as the device");
	uint32_t hcap = hr(&e, CXL_HDM_CAP);
	is(VCXL_FIELD_GET(CXL_HDM_CAP_DECODER_COUNT, hcap), 0, "1 guest decoder");
	is(hcap & (CXL_HDM_CAP_IW_3_6_12 | CXL_HDM_CAP_IW_16 | CXL_HDM_CAP_UIO), 0,
	   "no 3/6/12/16-way or UIO capability advertised");
	/* outside the CM range the block reads 0 and ignores writes, any width */
	is(g_rd(e.v, 0, e.comp + 0x10, 1, &rc), 0, "CXL.io range reads 0");
	is(rc, 0, "byte access there is fine");
	g_wr(e.v, 0, e.comp + 0x2000, 4, 0xffffffff);
	is(g_rd(e.v, 0, e.comp + 0x2000, 4, NULL), 0,
	   "implementation-specific range ignores writes");
	is(g_rd(e.v, 0, e.comp + 0xfffc, 4, NULL), 0, "last dword of the block reads 0");
	/* CM registers: 4/8 bytes only */
	g_rd(e.v, 0, e.hdm + CXL_HDM_GLOBAL_CTRL, 1, &rc);
	is(rc, (uint64_t)-EINVAL, "1-byte read of Global Control refused");
	is(g_wr(e.v, 0, e.hdm + CXL_HDM_GLOBAL_CTRL, 2, 2), (uint64_t)-EINVAL,
	   "2-byte write refused");
	is(hr(&e, CXL_HDM_GLOBAL_CTRL), 0, "and had no effect");
	g_rd(e.v, 0, e.hdm + CXL_HDM_DEC_BASE_HI(0), 8, &rc);
	is(rc, (uint64_t)-EINVAL, "misaligned 8-byte access refused");
	/* Global Control: only HDM Decoder Enable (no poison capability) */
	hw(&e, CXL_HDM_GLOBAL_CTRL, 0xffffffff);
	is(hr(&e, CXL_HDM_GLOBAL_CTRL), CXL_HDM_GCTRL_ENABLE, "only bit 1 sticks");
	/* reserved low bits of base/size: masked, not refused (Linux writes them) */
	hw(&e, CXL_HDM_DEC_BASE_LO(0), 0x1234567f);
	is(hr(&e, CXL_HDM_DEC_BASE_LO(0)), 0x10000000, "base low keeps [31:28]");
	/* DPA skip is kept (RFC v2 dropped it) */
	hw(&e, CXL_HDM_DEC_SKIP_LO(0), 0x10000000);
	is(hr(&e, CXL_HDM_DEC_SKIP_LO(0)), 0x10000000, "DPA skip low is writable");
	env_fini(&e);
}

static void test_commit_policy(void)
{
	struct vcxl_model_cfg mc = {.mem_size = 4 * G};
	struct env e;
	uint32_t c;

	if (!ok(env_init(&e, &mc, 2) == 0, "vdev, 2 guest decoders over 1 GiB"))
		return;
	uint64_t R = e.rsize;
	c = commit(&e, 0, 0x1000000000ull, R / 2, 0, 0);
	ok(REFUSED(c), "commit with HDM decoding disabled: Error Not Committed");
	decommit(&e, 0);
	hw(&e, CXL_HDM_GLOBAL_CTRL, CXL_HDM_GCTRL_ENABLE);
	c = commit(&e, 1, 0x1000000000ull, R / 2, 0, 0);
	ok(REFUSED(c), "decoder 1 before decoder 0: refused");
	decommit(&e, 1);
	c = commit(&e, 0, 0x1000000000ull, R + G, 0, 0);
	ok(REFUSED(c), "size beyond the exposed region: refused");
	decommit(&e, 0);
	c = commit(&e, 0, 0x1000000000ull, R, 0,
		   VCXL_FIELD_PREP(CXL_HDM_DEC_CTRL_IW, CXL_HDM_IW_2));
	ok(REFUSED(c), "two ways: refused");
	decommit(&e, 0);
	c = commit(&e, 0, 0x1000000000ull, R / 2, R / 2 + G, 0);
	ok(REFUSED(c), "skip + size beyond the region: refused");
	decommit(&e, 0);
	c = commit(&e, 0, 0x1000000000ull, 0, 0, 0);
	ok(REFUSED(c), "zero size: refused");
	decommit(&e, 0);
	ok(!(hr(&e, CXL_HDM_DEC_CTRL(0)) & CXL_HDM_DEC_CTRL_COMMIT_ERR),
	   "clearing Commit clears the error");

	c = commit(&e, 0, 0x1000000000ull, R / 2, 0, 0);
	ok(COMMITTED(c), "half the region at 64 GiB: Committed");
	c = commit(&e, 1, 0x1000000000ull + R / 2, R / 2 + G, 0, 0);
	ok(REFUSED(c), "decoder 1 would take the total past the region: refused");
	decommit(&e, 1);
	c = commit(&e, 1, 0x1000000000ull, R / 2, 0, 0);
	ok(REFUSED(c), "decoder 1 overlapping decoder 0's HPA: refused");
	decommit(&e, 1);
	c = commit(&e, 1, 0x2000000000ull, R / 2, 0, 0);
	ok(COMMITTED(c), "the other half at 128 GiB: Committed");
	/* committed decoders are frozen; decommit then recommit elsewhere works */
	hw(&e, CXL_HDM_DEC_SIZE_LO(1), 0);
	is(g_rd(e.v, 0, e.hdm + CXL_HDM_DEC_SIZE_LO(1), 8, NULL), R / 2,
	   "size frozen while committed");
	decommit(&e, 1);
	c = commit(&e, 1, 0x3000000000ull, R / 2 - G, G, 0);
	ok(COMMITTED(c), "recommitted elsewhere with a skip");
	/* Lock-On-Commit: Commit stays until reset */
	decommit(&e, 1);
	c = commit(&e, 1, 0x3000000000ull, R / 2, 0, CXL_HDM_DEC_CTRL_LOCK_ON_COMMIT);
	ok(COMMITTED(c), "committed with Lock-On-Commit");
	decommit(&e, 1);
	ok(hr(&e, CXL_HDM_DEC_CTRL(1)) & CXL_HDM_DEC_CTRL_COMMITTED,
	   "cannot decommit a locked decoder");
	vcxl_vdev_ops.client_gone(e.v);
	is(hr(&e, CXL_HDM_DEC_CTRL(1)), 0, "reset unlocks and decommits");
	is(hr(&e, CXL_HDM_GLOBAL_CTRL), 0, "and clears HDM Decoder Enable");
	env_fini(&e);
}

static void test_isolated(void)
{
	struct vcxl_model_cfg mc = {.mem_size = G};
	struct env e;

	if (!ok(env_init(&e, &mc, 0) == 0, "vdev"))
		return;
	const struct vcxl_cxl_dev *d = vcxl_vdev_host_dev(e.v);
	struct host_state before, after;
	hs_take(e.raw, d, &before);
	unsigned long bw0 = e.w.bar_writes;
	hw(&e, CXL_HDM_GLOBAL_CTRL, CXL_HDM_GCTRL_ENABLE);
	uint32_t c = commit(&e, 0, 0x1000000000ull, e.rsize, 0, 0);
	ok(COMMITTED(c), "guest commit");
	decommit(&e, 0);
	hw(&e, CXL_HDM_DEC_BASE_LO(0), 0);
	/* every dword of the block, written with all-ones */
	for (uint64_t o = 0; o < 0x10000; o += 4)
		g_wr(e.v, 0, e.comp + o, 4, 0xffffffff);
	is(e.w.bar_writes, bw0, "no guest component write reached the device");
	hs_take(e.raw, d, &after);
	is(hs_diff(&before, &after), (uint64_t)-1,
	   "physical HDM, RAS and capability array unchanged");
	/* the RAS the guest sees is virtual */
	uint64_t cm = e.comp + CXL_CM_OFFSET, ras = 0;
	uint32_t hdr = (uint32_t)g_rd(e.v, 0, cm, 4, NULL);
	for (unsigned k = 1; k <= VCXL_FIELD_GET(CXL_CM_CAP_HDR_ARRAY_SIZE, hdr); k++) {
		uint32_t el = (uint32_t)g_rd(e.v, 0, cm + 4 * k, 4, NULL);
		if (VCXL_FIELD_GET(CXL_CM_CAP_HDR_ID, el) == CXL_CM_CAP_ID_RAS)
			ras = cm + VCXL_FIELD_GET(CXL_CM_CAP_PTR, el);
	}
	if (ok(ras && d->ras_off, "guest RAS capability")) {
		g_wr(e.v, 0, ras + CXL_RAS_UNCORR_MASK, 4, 0x5);
		is(g_rd(e.v, 0, ras + CXL_RAS_UNCORR_MASK, 4, NULL), 0x5,
		   "RAS mask is the guest's");
		hs_take(e.raw, d, &after);
		is(hs_diff(&before, &after), (uint64_t)-1, "device RAS unchanged");
	}
	/* accesses straddling the block edge are split, not leaked */
	if (e.comp > 0) {
		uint64_t x = ~0ull;
		is(vcxl_vdev_ops.region_write(e.v, 0, e.comp - 4, &x, 8), 0,
		   "write straddling the edge");
		hs_take(e.raw, d, &after);
		is(hs_diff(&before, &after), (uint64_t)-1, "still nothing reached the block");
	}
	env_fini(&e);
}

/* The guest's offset (in BAR0) of capability id, by the array walk Linux does; 0 if none. */
static uint64_t cap_find(struct env *e, unsigned id)
{
	uint64_t cm = e->comp + CXL_CM_OFFSET;
	uint32_t hdr = (uint32_t)g_rd(e->v, 0, cm, 4, NULL);
	for (unsigned k = 1; k <= VCXL_FIELD_GET(CXL_CM_CAP_HDR_ARRAY_SIZE, hdr); k++) {
		uint32_t el = (uint32_t)g_rd(e->v, 0, cm + 4 * k, 4, NULL);
		if (VCXL_FIELD_GET(CXL_CM_CAP_HDR_ID, el) == id)
			return cm + VCXL_FIELD_GET(CXL_CM_CAP_PTR, el);
	}
	return 0;
}

/* CXL r3.1 8.2.4.19: the Link capability's 64-bit registers */
static const uint32_t link_regs64[] = {
    CXL_LINK_LL_CAP,	       CXL_LINK_CTRL_STATUS,
    CXL_LINK_RX_CREDIT_CTRL,   CXL_LINK_RX_CREDIT_RET_STATUS,
    CXL_LINK_TX_CREDIT_STATUS, CXL_LINK_ACK_TIMER_CTRL,
    CXL_LINK_DEFEATURE,
};
#define N_LINK_REGS64 (sizeof(link_regs64) / sizeof(link_regs64[0]))

/*
 * CXL r3.1 8.2.2: a 32-bit component register is one 4-byte quantity, a 64-bit one
 * one 8-byte quantity. The guest's block (BAR and region 10) and the model's own
 * block: every access width on each kind of register.
 */
static void test_access_widths(void)
{
	struct vcxl_model_cfg mc = {.mem_size = G};
	struct env e;
	int rc;

	if (!ok(env_init(&e, &mc, 0) == 0, "vdev"))
		return;
	const struct vcxl_cxl_dev *d = vcxl_vdev_host_dev(e.v);
	uint64_t link = cap_find(&e, CXL_CM_CAP_ID_LINK);
	if (!ok(link && d->link_off, "the guest sees a Link capability (the model has one)")) {
		env_fini(&e);
		return;
	}
	is(link % CXL_COMP_REG64_BYTES, 0, "Link capability 8-byte aligned");

	/* Linux 7.2 cxl_probe_component_regs reads the first dword of every
	 * capability with readl, Link's (a 64-bit register) included */
	uint64_t cm = e.comp + CXL_CM_OFFSET;
	uint32_t hdr = (uint32_t)g_rd(e.v, 0, cm, 4, NULL);
	unsigned bad = 0;
	for (unsigned k = 1; k <= VCXL_FIELD_GET(CXL_CM_CAP_HDR_ARRAY_SIZE, hdr); k++) {
		uint32_t el = (uint32_t)g_rd(e.v, 0, cm + 4 * k, 4, NULL);
		g_rd(e.v, 0, cm + VCXL_FIELD_GET(CXL_CM_CAP_PTR, el), 4, &rc);
		bad += rc != 0;
	}
	is(bad, 0, "Linux's 4-byte read of each capability's first dword is answered");

	unsigned n8r = 0, n8w = 0, n4r = 0, n4w = 0, nsmall = 0;
	for (unsigned i = 0; i < N_LINK_REGS64; i++) {
		uint64_t r = link + link_regs64[i];
		uint64_t x = g_rd(e.v, 0, r, 8, &rc);
		n8r += rc == 0 && x == 0;
		n8w += g_wr(e.v, 0, r, 8, ~0ull) == 0 && g_rd(e.v, 0, r, 8, NULL) == 0;
		x = g_rd(e.v, 0, r, 4, &rc) | g_rd(e.v, 0, r + 4, 4, &rc);
		n4r += rc == 0 && x == 0;
		n4w += g_wr(e.v, 0, r, 4, ~0ull) == -EINVAL &&
		       g_wr(e.v, 0, r + 4, 4, ~0ull) == -EINVAL;
		g_rd(e.v, 0, r, 2, &rc);
		nsmall += rc == -EINVAL && g_wr(e.v, 0, r + 7, 1, 0) == -EINVAL;
	}
	is(n8r, N_LINK_REGS64, "Link: every 64-bit register reads as one 8-byte quantity (0)");
	is(n8w, N_LINK_REGS64, "Link: an 8-byte write is taken (read-only: stays 0)");
	is(n4r, N_LINK_REGS64, "Link: a 4-byte read of either half returns that half");
	is(n4w, N_LINK_REGS64, "Link: a 4-byte write of either half is refused");
	is(nsmall, N_LINK_REGS64, "Link: 1/2-byte accesses refused");
	g_rd(e.v, 0, link + 4, 8, &rc);
	is(rc, (uint64_t)-EINVAL, "Link: 8 bytes straddling two 64-bit registers refused");

	/* region 10 (COMP_REGS): the same register file */
	uint64_t lrel = link - e.comp;
	uint8_t buf[4 * CXL_COMP_REG64_BYTES];
	memset(buf, 0xff, sizeof(buf));
	is(vcxl_vdev_ops.region_write(e.v, VCXL_VDEV_COMP_REGION, lrel, buf, 4), -EINVAL,
	   "region 10: a 4-byte write into a 64-bit register refused");
	is(vcxl_vdev_ops.region_write(e.v, VCXL_VDEV_COMP_REGION, lrel, buf, sizeof(buf)), 0,
	   "region 10: a multi-dword write over 64-bit registers goes as 8-byte quantities");
	is(vcxl_vdev_ops.region_read(e.v, VCXL_VDEV_COMP_REGION, lrel, buf, sizeof(buf)), 0,
	   "region 10: and so does a read");
	is(vcxl_vdev_ops.region_write(e.v, VCXL_VDEV_COMP_REGION, lrel - 4, buf, 8), -EINVAL,
	   "region 10: 8 bytes into the low half of Link's first register refused");

	/* HDM: 32-bit registers. An aligned 8-byte access over a Low/High pair is the
	 * two 4-byte accesses in ascending order (what Linux's lo_hi helpers do). */
	hw(&e, CXL_HDM_GLOBAL_CTRL, CXL_HDM_GCTRL_ENABLE);
	is(g_wr(e.v, 0, e.hdm + CXL_HDM_DEC_BASE_LO(0), 8, 0x0000001230000000ull), 0,
	   "HDM: 8-byte write over Base Low+High taken");
	is(hr(&e, CXL_HDM_DEC_BASE_LO(0)), 0x30000000, "HDM: Base Low from the low dword");
	is(hr(&e, CXL_HDM_DEC_BASE_HI(0)), 0x12, "HDM: Base High from the high dword");
	is(g_rd(e.v, 0, e.hdm + CXL_HDM_DEC_BASE_LO(0), 8, NULL), 0x0000001230000000ull,
	   "HDM: 8-byte read over the pair");
	g_rd(e.v, 0, e.hdm + CXL_HDM_DEC_BASE_LO(0) + 2, 4, &rc);
	is(rc, (uint64_t)-EINVAL, "HDM: an unaligned 4-byte access refused");

	/* the model's own block follows the same rules */
	uint64_t ml = e.comp + d->link_off, x = 0;
	is(e.raw->ops->bar_write(e.raw->dev, 0, ml, 4, ~0ull), -EINVAL,
	   "model: a 4-byte write into a 64-bit Link register refused");
	ok(e.raw->ops->bar_read(e.raw->dev, 0, ml + 4, 4, &x) == 0 && x == 0,
	   "model: a 4-byte read of its high half answered");
	ok(e.raw->ops->bar_read(e.raw->dev, 0, ml, 8, &x) == 0 && x == 0,
	   "model: an 8-byte read answered");
	env_fini(&e);
}

int main(void)
{
	test_layout();
	test_commit_policy();
	test_isolated();
	test_access_widths();
	return done();
}
