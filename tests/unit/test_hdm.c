// SPDX-License-Identifier: BSD-3-Clause
/* Component CM range: capability array, HDM decoder registers and every commit rule, RAS. */
#include <errno.h>
#include <string.h>

#include "tap.h"
#include "cxl/cxl_spec.h"

#define G256 CXL_HDM_GRANULE

struct ctx {
	int changed_on, changed_off;
	unsigned last_n;
	uint64_t off_base;    /* Base of the decoder last reported decommitted */
	uint64_t refuse_base; /* validate() refuses this base */
};

static enum vcxl_hdm_commit_err validate(void *opaque, struct vcxl_hdm *h, unsigned n,
					 const struct vcxl_hdm_decoder *d)
{
	struct ctx *c = opaque;
	return c->refuse_base && d->base == c->refuse_base ? VCXL_HDM_ERR_POLICY : VCXL_HDM_OK;
}

static void changed(void *opaque, struct vcxl_hdm *h, unsigned n, bool on)
{
	struct ctx *c = opaque;
	struct vcxl_hdm_decoder d;

	if (on) {
		c->changed_on++;
	} else {
		c->changed_off++;
		vcxl_hdm_decoder_get(h, n, &d);
		c->off_base = d.base;
	}
	c->last_n = n;
}

static const struct vcxl_hdm_ops ops = {validate, changed};

static struct vcxl_regfile rf;
static struct vcxl_comp comp;
static struct ctx cx;
#define H (&comp.hdm)

static void setup(uint32_t flags, bool poison_less)
{
	struct vcxl_comp_cfg cfg = {.hdm_count = 4,
				    .hdm_cap_flags = flags,
				    .ras = true,
				    .link = true,
				    .dpa_capacity = 16 * G256};
	memset(&cx, 0, sizeof(cx));
	vcxl_rf_init(&rf, CXL_CM_SIZE);
	int rc = vcxl_comp_layout(&comp, &rf, 0, &cfg, &ops, &cx);
	if (rc)
		diag("layout failed %d", rc);
}

static uint32_t r32(uint32_t off)
{
	uint64_t v = 0;
	if (vcxl_rf_read(&rf, off, 4, &v))
		return 0xdeadbeef;
	return (uint32_t)v;
}

static void w32(uint32_t off, uint32_t v)
{
	vcxl_rf_write(&rf, off, 4, v);
}

static uint32_t hreg(uint32_t r)
{
	return H->off + r;
}

static void enable(void)
{
	w32(hreg(CXL_HDM_GLOBAL_CTRL), CXL_HDM_GCTRL_ENABLE);
}

/* Program decoder n as Linux does (base hi/lo, size hi/lo, skip hi/lo, ctrl), commit. */
static uint32_t commit(unsigned n, uint64_t base, uint64_t size, uint64_t skip, uint32_t ctrl)
{
	w32(hreg(CXL_HDM_DEC_BASE_HI(n)), (uint32_t)(base >> 32));
	w32(hreg(CXL_HDM_DEC_BASE_LO(n)), (uint32_t)base);
	w32(hreg(CXL_HDM_DEC_SIZE_HI(n)), (uint32_t)(size >> 32));
	w32(hreg(CXL_HDM_DEC_SIZE_LO(n)), (uint32_t)size);
	w32(hreg(CXL_HDM_DEC_SKIP_HI(n)), (uint32_t)(skip >> 32));
	w32(hreg(CXL_HDM_DEC_SKIP_LO(n)), (uint32_t)skip);
	w32(hreg(CXL_HDM_DEC_CTRL(n)), ctrl | CXL_HDM_DEC_CTRL_COMMIT);
	return r32(hreg(CXL_HDM_DEC_CTRL(n)));
}

static void uncommit(unsigned n)
{
	w32(hreg(CXL_HDM_DEC_CTRL(n)), r32(hreg(CXL_HDM_DEC_CTRL(n))) & ~CXL_HDM_DEC_CTRL_COMMIT);
}

static bool committed(uint32_t ctrl)
{
	return (ctrl & CXL_HDM_DEC_CTRL_COMMITTED) && !(ctrl & CXL_HDM_DEC_CTRL_COMMIT_ERR);
}

static bool failed(uint32_t ctrl)
{
	return !(ctrl & CXL_HDM_DEC_CTRL_COMMITTED) && (ctrl & CXL_HDM_DEC_CTRL_COMMIT_ERR);
}

#define IW(x) ((uint32_t)(x) << 4)

static void expect_fail(unsigned n, uint32_t ctrl, enum vcxl_hdm_commit_err e, const char *what)
{
	ok(failed(ctrl) && H->last_err[n] == e, "Error Not Committed: %s (%s)", what,
	   vcxl_hdm_err_str(H->last_err[n]));
	uncommit(n);
	ok(!(r32(hreg(CXL_HDM_DEC_CTRL(n))) & CXL_HDM_DEC_CTRL_COMMIT_ERR),
	   "clearing Commit clears Error Not Committed");
}

static int cm_rd(void *opaque, uint32_t off, uint32_t *v)
{
	*v = r32(off);
	return 0;
}

static void test_layout(void)
{
	uint32_t off = 0;
	uint64_t v;
	setup(CXL_HDM_CAP_IL_11_8, true);
	uint32_t hdr = r32(0);
	is(hdr & 0xffff, CXL_CM_CAP_ID_ARRAY, "array header ID 1");
	is((hdr >> 16) & 0xf, 1, "capability version 1");
	is((hdr >> 20) & 0xf, 1, "cache/mem version 1");
	is(hdr >> 24, 3, "array size 3 (RAS, Link, HDM)");
	ok(vcxl_comp_find_cap(cm_rd, NULL, CXL_CM_CAP_ID_HDM, &off) == 0 && off == H->off,
	   "HDM found through the array, pointer CM-relative (0x%x)", off);
	ok(vcxl_comp_find_cap(cm_rd, NULL, CXL_CM_CAP_ID_RAS, &off) == 0 && off == comp.ras_off,
	   "RAS found");
	ok(vcxl_comp_find_cap(cm_rd, NULL, CXL_CM_CAP_ID_LINK, &off) == 0 && off == comp.link_off,
	   "Link found");
	ok(vcxl_comp_find_cap(cm_rd, NULL, CXL_CM_CAP_ID_IDE, &off) == -ENOENT, "IDE absent");
	ok((r32(4) >> 16 & 0xf) == CXL_RAS_CAP_VERSION, "RAS element version");
	uint32_t cap = r32(hreg(CXL_HDM_CAP));
	is(cap & 0xf, 2, "decoder count 4 encodes as 2");
	is(cap & ~0xfu, CXL_HDM_CAP_IL_11_8, "capability flags as configured, target count 0");
	w32(hreg(CXL_HDM_CAP), 0xffffffff);
	is(r32(hreg(CXL_HDM_CAP)), cap, "HDM Capability RO");
	w32(0, 0);
	is(r32(0), hdr, "array header RO");

	/* access rule: 4/8 bytes only */
	ok(vcxl_rf_read(&rf, hreg(CXL_HDM_GLOBAL_CTRL), 1, &v) == -EINVAL, "byte read refused");
	ok(vcxl_rf_write(&rf, hreg(CXL_HDM_GLOBAL_CTRL), 2, 2) == -EINVAL, "word write refused");
	is(r32(hreg(CXL_HDM_GLOBAL_CTRL)), 0, "refused write changed nothing");
	ok(vcxl_rf_write(&rf, hreg(CXL_HDM_DEC_BASE_LO(0)), 8, 0x00000002f0000000ull) == 0,
	   "8-byte write to Base Low/High accepted");
	is(r32(hreg(CXL_HDM_DEC_BASE_HI(0))), 2, "8-byte write reached Base High");
	ok(vcxl_rf_read(&rf, 0xf00, 1, &v) == -EINVAL, "rule covers the whole CM range");

	/* Global Control */
	w32(hreg(CXL_HDM_GLOBAL_CTRL), 0xffffffff);
	is(r32(hreg(CXL_HDM_GLOBAL_CTRL)), CXL_HDM_GCTRL_ENABLE,
	   "Global Control: Poison RO 0 without Cap bit 10, reserved 31:2");
	vcxl_rf_fini(&rf);
	setup(CXL_HDM_CAP_POISON, false);
	w32(hreg(CXL_HDM_GLOBAL_CTRL), 0xffffffff);
	is(r32(hreg(CXL_HDM_GLOBAL_CTRL)), 3, "Poison Enable RW with Cap bit 10");
	w32(hreg(CXL_HDM_GLOBAL_CTRL), 0);
	is(r32(hreg(CXL_HDM_GLOBAL_CTRL)), 0, "both bits clear again");

	/* per-decoder registers */
	for (unsigned n = 0; n < 4; n++) {
		uint32_t regs[] = {CXL_HDM_DEC_BASE_LO(n), CXL_HDM_DEC_SIZE_LO(n),
				   CXL_HDM_DEC_SKIP_LO(n)};
		for (unsigned k = 0; k < 3; k++) {
			w32(hreg(regs[k]), 0xffffffff);
			w32(hreg(regs[k] + 4), 0xffffffff);
		}
		is(r32(hreg(CXL_HDM_DEC_BASE_LO(n))) | r32(hreg(CXL_HDM_DEC_SIZE_LO(n))) |
		       r32(hreg(CXL_HDM_DEC_SKIP_LO(n))),
		   0xf0000000, "decoder %u: Base/Size/Skip Low [31:28] only", n);
		ok(r32(hreg(CXL_HDM_DEC_BASE_HI(n))) == ~0u &&
		       r32(hreg(CXL_HDM_DEC_SIZE_HI(n))) == ~0u,
		   "decoder %u: Base/Size High RW", n);
		ok(r32(hreg(CXL_HDM_DEC_SKIP_HI(n))) == ~0u && r32(hreg(CXL_HDM_DEC_SKIP_LO(n))),
		   "decoder %u: DPA Skip is stored, not reserved", n);
		w32(hreg(CXL_HDM_DEC_CTRL(n)), ~CXL_HDM_DEC_CTRL_COMMIT);
		is(r32(hreg(CXL_HDM_DEC_CTRL(n))),
		   CXL_HDM_DEC_CTRL_IG | CXL_HDM_DEC_CTRL_IW | CXL_HDM_DEC_CTRL_LOCK_ON_COMMIT |
		       CXL_HDM_DEC_CTRL_HOSTONLY,
		   "decoder %u Control: IG IW Lock Type RW; Committed/Error RO; BI/UIO reserved",
		   n);
		w32(hreg(CXL_HDM_DEC_CTRL(n) + 0xc), ~0u);
		is(r32(hreg(CXL_HDM_DEC_CTRL(n) + 0xc)), 0, "decoder %u reserved dword", n);
	}
	vcxl_rf_fini(&rf);
}

static void test_encodings(void)
{
	static const unsigned counts[] = {1, 2, 4, 6, 8, 10, 12, 14, 16, 20, 24, 28, 32};
	int bad = 0;
	for (unsigned e = 0; e < 13; e++)
		if (vcxl_hdm_count_decode(e) != (int)counts[e] ||
		    vcxl_hdm_count_encode(counts[e]) != (int)e)
			bad++;
	is(bad, 0, "decoder count table 1..32 both ways");
	ok(vcxl_hdm_count_encode(3) == -1 && vcxl_hdm_count_decode(13) == -1 &&
	       vcxl_hdm_count_encode(0) == -1,
	   "invalid counts/encodings");
	ok(vcxl_hdm_iw_decode(0) == 1 && vcxl_hdm_iw_decode(4) == 16 &&
	       vcxl_hdm_iw_decode(8) == 3 && vcxl_hdm_iw_decode(10) == 12 &&
	       vcxl_hdm_iw_decode(5) == 0 && vcxl_hdm_iw_decode(11) == 0,
	   "IW decode");
	ok(vcxl_hdm_iw_encode(6) == 9 && vcxl_hdm_iw_encode(8) == 3 &&
	       vcxl_hdm_iw_encode(5) == -1 && vcxl_hdm_iw_encode(0) == -1,
	   "IW encode");
	ok(vcxl_hdm_ig_decode(0) == 256 && vcxl_hdm_ig_decode(6) == 16384 &&
	       vcxl_hdm_ig_decode(7) == 0 && vcxl_hdm_ig_encode(4096) == 4 &&
	       vcxl_hdm_ig_encode(300) == -1,
	   "IG encode/decode");
}

static void test_commit_rules(void)
{
	uint32_t c;
	setup(0, true);

	c = commit(0, 4 * G256, G256, 0, 0);
	expect_fail(0, c, VCXL_HDM_ERR_DISABLED, "HDM Decoder Enable clear");
	enable();
	c = commit(1, 8 * G256, G256, 0, 0);
	expect_fail(1, c, VCXL_HDM_ERR_ORDER, "decoder 1 before decoder 0");
	c = commit(0, 4 * G256, 0, 0, 0);
	expect_fail(0, c, VCXL_HDM_ERR_ZERO_SIZE, "size 0");
	c = commit(0, 4 * G256, G256, 0, IW(5));
	expect_fail(0, c, VCXL_HDM_ERR_IW, "IW encoding 5 invalid");
	c = commit(0, 4 * G256, 3 * G256, 0, IW(CXL_HDM_IW_3));
	expect_fail(0, c, VCXL_HDM_ERR_IW, "3-way without IW_3_6_12 capability");
	c = commit(0, 4 * G256, 16 * G256, 0, IW(CXL_HDM_IW_16));
	expect_fail(0, c, VCXL_HDM_ERR_IW, "16-way without IW_16 capability");
	c = commit(0, 4 * G256, G256, 0, 7);
	expect_fail(0, c, VCXL_HDM_ERR_IG, "IG encoding 7");
	c = commit(0, 4 * G256, 2 * G256, 0, IW(CXL_HDM_IW_2) | 0);
	expect_fail(0, c, VCXL_HDM_ERR_IG, "2-way at 256 B needs A11to8");
	c = commit(0, 4 * G256, 2 * G256, 0, IW(CXL_HDM_IW_2) | 4);
	expect_fail(0, c, VCXL_HDM_ERR_IG, "2-way at 4 KiB needs A14to12");
	c = commit(0, 4 * G256, 3 * G256, 0, IW(CXL_HDM_IW_2) | 6);
	expect_fail(0, c, VCXL_HDM_ERR_IG, "2-way at 16 KiB uses bit 14, needs A14to12");
	c = commit(0, 0xffffffff00000000ull | (0xfull << 28), 2 * G256, 0, 0);
	expect_fail(0, c, VCXL_HDM_ERR_OVERLAP, "HPA range wraps");
	c = commit(0, 4 * G256, 17 * G256, 0, 0);
	expect_fail(0, c, VCXL_HDM_ERR_DPA, "size beyond DPA capacity");
	c = commit(0, 4 * G256, 8 * G256, 9 * G256, 0);
	expect_fail(0, c, VCXL_HDM_ERR_DPA, "skip pushes the range beyond capacity");
	cx.refuse_base = 4 * G256;
	c = commit(0, 4 * G256, G256, 0, 0);
	expect_fail(0, c, VCXL_HDM_ERR_POLICY, "owner validate() refuses");
	cx.refuse_base = 0;

	/* direct checks of what the register masks make impossible through MMIO */
	struct vcxl_hdm_decoder d = {.base = 4 * G256 + 0x1000, .size = G256, .ways = 1, .ctrl = 0};
	is(vcxl_hdm_check(H, 0, &d), VCXL_HDM_ERR_ALIGN, "base not 256 MiB granular");
	d.base = 4 * G256;
	d.skip = 0x100000;
	is(vcxl_hdm_check(H, 0, &d), VCXL_HDM_ERR_ALIGN, "skip not 256 MiB granular");
	d.skip = 0;
	d.size = G256 + 0x1000;
	is(vcxl_hdm_check(H, 0, &d), VCXL_HDM_ERR_ALIGN, "size not 256 MiB granular");

	/* success, with a skip */
	int on = cx.changed_on;
	c = commit(0, 4 * G256, 2 * G256, G256, 0);
	ok(committed(c), "decoder 0 commits (base 1 GiB, size 512 MiB, skip 256 MiB)");
	is(H->last_err[0], VCXL_HDM_OK, "last_err OK");
	ok(cx.changed_on == on + 1 && cx.last_n == 0, "changed(0, on) called");
	c = commit(1, 5 * G256, G256, 0, 0);
	expect_fail(1, c, VCXL_HDM_ERR_OVERLAP, "decoder 1 overlaps decoder 0");
	c = commit(1, 2 * G256, G256, 0, 0);
	expect_fail(1, c, VCXL_HDM_ERR_OVERLAP, "decoder 1 below decoder 0");
	/* DPA used so far: skip 1 + 2 = 3 granules; 14 more don't fit in 16 */
	c = commit(1, 8 * G256, 14 * G256, 0, 0);
	expect_fail(1, c, VCXL_HDM_ERR_DPA, "decoder 1 DPA after decoder 0 beyond capacity");
	c = commit(1, 8 * G256, 13 * G256, 0, 0);
	ok(committed(c), "decoder 1 commits exactly up to capacity");
	c = commit(3, 40 * G256, G256, 0, 0);
	expect_fail(3, c, VCXL_HDM_ERR_ORDER, "decoder 3 while 2 is not committed");
	vcxl_rf_fini(&rf);

	/* capabilities that allow the interleave */
	setup(CXL_HDM_CAP_IL_11_8 | CXL_HDM_CAP_IL_14_12 | CXL_HDM_CAP_IW_3_6_12 |
		  CXL_HDM_CAP_IW_16,
	      true);
	enable();
	c = commit(0, 4 * G256, 2 * G256, 0, IW(CXL_HDM_IW_2) | 0);
	ok(committed(c), "2-way 256 B commits with A11to8");
	uncommit(0);
	c = commit(0, 4 * G256, 2 * G256, 0, IW(CXL_HDM_IW_4) | 2);
	expect_fail(0, c, VCXL_HDM_ERR_ALIGN, "4-way needs size multiple of 1 GiB");
	c = commit(0, 4 * G256, 3 * G256, 0, IW(CXL_HDM_IW_3) | 1);
	ok(committed(c), "3-way commits with IW_3_6_12");
	uncommit(0);
	c = commit(0, 4 * G256, 16 * G256, 0, IW(CXL_HDM_IW_16) | 6);
	ok(committed(c), "16-way at 16 KiB (bits 17:14) commits with IW_16 + A14to12");
	vcxl_rf_fini(&rf);

	/* ways == 1: granularity is accepted without the IL bits */
	setup(0, true);
	enable();
	c = commit(0, 4 * G256, G256, 0, 6);
	ok(committed(c), "1-way decoder accepts any IG encoding 0..6");
	vcxl_rf_fini(&rf);
}

static void test_locks(void)
{
	uint32_t c;
	setup(0, true);
	enable();
	c = commit(0, 4 * G256, 2 * G256, G256, CXL_HDM_DEC_CTRL_HOSTONLY);
	ok(committed(c), "committed");
	ok(vcxl_rf_group_locked(&rf, H->committed_group[0]), "committed group locked");
	ok(!vcxl_rf_group_locked(&rf, H->lock_group[0]), "no Lock-On-Commit: Commit not locked");
	/* everything but Commit is RO while committed */
	w32(hreg(CXL_HDM_DEC_BASE_LO(0)), 0x70000000);
	w32(hreg(CXL_HDM_DEC_BASE_HI(0)), 9);
	vcxl_rf_write(&rf, hreg(CXL_HDM_DEC_SIZE_LO(0)), 8, 0x0000000100000000ull);
	w32(hreg(CXL_HDM_DEC_SKIP_LO(0)), 0);
	w32(hreg(CXL_HDM_DEC_SKIP_HI(0)), 7);
	w32(hreg(CXL_HDM_DEC_CTRL(0)),
	    CXL_HDM_DEC_CTRL_COMMIT | CXL_HDM_DEC_CTRL_LOCK_ON_COMMIT | 0x33);
	struct vcxl_hdm_decoder d;
	vcxl_hdm_decoder_get(H, 0, &d);
	ok(d.base == 4 * G256 && d.size == 2 * G256 && d.skip == G256,
	   "Base/Size/Skip RO while committed");
	ok(d.committed && d.hostonly && !d.lock_on_commit && d.ways == 1 && d.granularity == 256,
	   "IG/IW/Lock/Type RO while committed");
	int off = cx.changed_off;
	uncommit(0);
	c = r32(hreg(CXL_HDM_DEC_CTRL(0)));
	ok(!(c & (CXL_HDM_DEC_CTRL_COMMITTED | CXL_HDM_DEC_CTRL_COMMIT_ERR)),
	   "decommit: Committed and Error clear");
	ok(cx.changed_off == off + 1, "changed(0, off) called");
	w32(hreg(CXL_HDM_DEC_BASE_HI(0)), 9);
	is(r32(hreg(CXL_HDM_DEC_BASE_HI(0))), 9, "writable again after decommit");

	/* Lock-On-Commit set first: the decoder must still be programmable and committable */
	w32(hreg(CXL_HDM_DEC_CTRL(0)), CXL_HDM_DEC_CTRL_LOCK_ON_COMMIT);
	ok(!vcxl_rf_group_locked(&rf, H->lock_group[0]), "Lock-On-Commit alone locks nothing");
	w32(hreg(CXL_HDM_DEC_BASE_HI(0)), 0);
	is(r32(hreg(CXL_HDM_DEC_BASE_HI(0))), 0, "Base writable with Lock-On-Commit before commit");
	c = commit(0, 4 * G256, G256, 0, CXL_HDM_DEC_CTRL_LOCK_ON_COMMIT);
	ok(committed(c), "decoder with Lock-On-Commit commits (RFC v2 could not)");
	ok(vcxl_rf_group_locked(&rf, H->lock_group[0]), "now Commit is locked too");
	uncommit(0);
	ok(committed(r32(hreg(CXL_HDM_DEC_CTRL(0)))), "locked decoder cannot be decommitted");
	w32(hreg(CXL_HDM_DEC_CTRL(0)), 0);
	ok(committed(r32(hreg(CXL_HDM_DEC_CTRL(0)))) &&
	       (r32(hreg(CXL_HDM_DEC_CTRL(0))) & CXL_HDM_DEC_CTRL_LOCK_ON_COMMIT),
	   "writing 0 to Control changes nothing");
	/* Global Control stays writable (not part of a decoder lock) */
	w32(hreg(CXL_HDM_GLOBAL_CTRL), CXL_HDM_GCTRL_ENABLE);

	/* commit with Lock-On-Commit in the same write */
	c = commit(1, 8 * G256, G256, 0, CXL_HDM_DEC_CTRL_LOCK_ON_COMMIT);
	ok(committed(c) && vcxl_rf_group_locked(&rf, H->lock_group[1]),
	   "Lock-On-Commit and Commit in one write: committed and locked");

	off = cx.changed_off;
	vcxl_hdm_reset(H);
	ok(!vcxl_rf_group_locked(&rf, H->lock_group[0]) &&
	       !vcxl_rf_group_locked(&rf, H->committed_group[0]) &&
	       !vcxl_rf_group_locked(&rf, H->lock_group[1]),
	   "vcxl_hdm_reset releases every lock");
	is(r32(hreg(CXL_HDM_DEC_CTRL(0))) | r32(hreg(CXL_HDM_DEC_BASE_LO(0))) |
	       r32(hreg(CXL_HDM_GLOBAL_CTRL)),
	   0, "reset values restored (Control, Base, Global Control)");
	is(cx.changed_off, off + 2, "reset reports both decoders decommitted");
	ok(cx.last_n == 1 && cx.off_base == 8 * G256,
	   "each with the range that went (decoder 1: base 0x%llx, not the reset value)",
	   (unsigned long long)cx.off_base);
	enable();
	c = commit(0, 4 * G256, G256, 0, 0);
	ok(committed(c), "commit works after reset");
	vcxl_rf_fini(&rf);
}

static void test_decode(void)
{
	uint64_t dpa = 0;
	setup(CXL_HDM_CAP_IL_11_8 | CXL_HDM_CAP_IW_3_6_12, true);
	enable();
	ok(!vcxl_hdm_decode(H, 4 * G256, &dpa), "nothing committed: no decode");
	commit(0, 4 * G256, 2 * G256, G256, 0);
	commit(1, 8 * G256, 2 * G256, 0, IW(CXL_HDM_IW_2) | 0);
	commit(2, 12 * G256, 3 * G256, G256, IW(CXL_HDM_IW_3) | 0);
	ok(vcxl_hdm_decode(H, 4 * G256 + 0x123, &dpa) && dpa == G256 + 0x123,
	   "decoder 0: dpa = skip + offset");
	ok(vcxl_hdm_decode(H, 8 * G256 + 0x80, &dpa) && dpa == 3 * G256 + 0x80,
	   "decoder 1 starts after skip0 + size0");
	ok(vcxl_hdm_decode(H, 8 * G256 + 0x280, &dpa) && dpa == 3 * G256 + 0x180,
	   "2-way: HPA bit 8 removed (0x280 -> 0x180)");
	/* decoder 2: dpa base = 1 + 2 + 1 (d1 size/ways) + 1 (skip) granules */
	ok(vcxl_hdm_decode(H, 12 * G256 + 0x340, &dpa) && dpa == 5 * G256 + 0x140,
	   "3-way: (off >> 8) / 3 (0x340 -> 0x140)");
	ok(!vcxl_hdm_decode(H, 6 * G256, &dpa), "HPA in no decoder");
	ok(vcxl_hdm_decode_contig(H, 4 * G256, 2 * G256, &dpa) && dpa == G256,
	   "whole decoder 0 is contiguous");
	ok(!vcxl_hdm_decode_contig(H, 5 * G256, 2 * G256, &dpa), "range past decoder end refused");
	ok(!vcxl_hdm_decode_contig(H, 8 * G256, 0x200, &dpa), "interleaved range across granules");
	ok(vcxl_hdm_decode_contig(H, 8 * G256, 0x100, &dpa), "one granule of an interleave");
	ok(!vcxl_hdm_decode_contig(H, 4 * G256, 0, &dpa), "zero length refused");
	uncommit(1);
	ok(!vcxl_hdm_decode(H, 12 * G256, &dpa), "walk stops at an uncommitted decoder");
	w32(hreg(CXL_HDM_GLOBAL_CTRL), 0);
	ok(!vcxl_hdm_decode(H, 4 * G256, &dpa), "HDM Decoder Enable clear: no decode");
	vcxl_rf_fini(&rf);
}

static void test_program(void)
{
	setup(0, true);
	struct vcxl_hdm_decoder d = {
	    .base = 16 * G256, .size = 4 * G256, .ctrl = CXL_HDM_DEC_CTRL_LOCK_ON_COMMIT};
	is(vcxl_hdm_program(H, 0, &d, true), VCXL_HDM_ERR_DISABLED, "firmware commit checks rules");
	vcxl_rf_update32(&rf, hreg(CXL_HDM_GLOBAL_CTRL), CXL_HDM_GCTRL_ENABLE,
			 CXL_HDM_GCTRL_ENABLE);
	is(vcxl_hdm_program(H, 0, &d, true), VCXL_HDM_OK, "firmware commit");
	struct vcxl_hdm_decoder g;
	vcxl_hdm_decoder_get(H, 0, &g);
	ok(g.committed && g.lock_on_commit && g.base == d.base && g.size == d.size,
	   "firmware state visible");
	ok(vcxl_rf_group_locked(&rf, H->lock_group[0]), "firmware-locked decoder locked");
	d.base = 20 * G256;
	is(vcxl_hdm_program(H, 0, &d, false), VCXL_HDM_OK, "owner can reprogram around locks");
	vcxl_hdm_decoder_get(H, 0, &g);
	ok(!g.committed && g.base == 20 * G256, "reprogrammed, uncommitted");
	vcxl_rf_fini(&rf);
}

static void test_ras(void)
{
	setup(0, true);
	uint32_t r = comp.ras_off;
	is(r32(r + CXL_RAS_UNCORR_MASK), CXL_RAS_UNCORR_MASK_ALL,
	   "uncorrectable mask resets masked");
	w32(r + CXL_RAS_UNCORR_MASK, 0xffffffff);
	is(r32(r + CXL_RAS_UNCORR_MASK), CXL_RAS_UNCORR_MASK_ALL, "mask RW on defined bits only");
	w32(r + CXL_RAS_CORR_MASK, 0);
	is(r32(r + CXL_RAS_CORR_MASK), 0, "correctable mask RW");
	vcxl_rf_set32(&rf, r + CXL_RAS_UNCORR_STATUS, 0xffffffff);
	is(r32(r + CXL_RAS_UNCORR_STATUS), CXL_RAS_UNCORR_MASK_ALL, "status: defined bits");
	w32(r + CXL_RAS_UNCORR_STATUS, 0x1);
	is(r32(r + CXL_RAS_UNCORR_STATUS), CXL_RAS_UNCORR_MASK_ALL & ~1u, "status RW1C");
	w32(r + CXL_RAS_CAP_CTRL, 0xffffffff);
	is(r32(r + CXL_RAS_CAP_CTRL), 0, "capability/control RO");
	w32(comp.link_off, 0xffffffff);
	is(r32(comp.link_off), 0, "link capability reads 0, RO");
	vcxl_rf_fini(&rf);

	struct vcxl_comp_cfg bad = {.hdm_count = 3};
	vcxl_rf_init(&rf, CXL_CM_SIZE);
	ok(vcxl_comp_layout(&comp, &rf, 0, &bad, NULL, NULL) == -EINVAL, "count 3 refused");
	bad.hdm_count = 11;
	ok(vcxl_comp_layout(&comp, &rf, 0, &bad, NULL, NULL) == -EINVAL, "count 11 refused");
	bad.hdm_count = 10;
	ok(vcxl_comp_layout(&comp, &rf, 0xf00, &bad, NULL, NULL) == -EINVAL,
	   "structures beyond the file refused");
	ok(vcxl_comp_layout(&comp, &rf, 0, &bad, NULL, NULL) == 0, "10 decoders, no RAS/Link");
	is(r32(0) >> 24, 1, "array size 1");
	vcxl_rf_fini(&rf);
}

int main(void)
{
	test_layout();
	test_encodings();
	test_commit_rules();
	test_locks();
	test_decode();
	test_program();
	test_ras();
	return done();
}
