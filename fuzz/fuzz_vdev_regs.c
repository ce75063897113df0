// SPDX-License-Identifier: BSD-3-Clause
/*
 * libFuzzer harness: the guest's register view, fed random access sequences
 * through vcxl_vdev_ops.region_read/write (what REGION_READ/WRITE reach), on a
 * fresh real device per input.
 *
 * Input: a sequence of 12-byte tuples {op, offset[3], value[8]}. op bits 0-2
 * pick the window (0 the virtual CXL Device DVSEC, 1 all of config space,
 * 2 the virtual DOE, 3 the virtual HDM decoders, 4 the component block,
 * 5 the whole component BAR, 6 BAR2, 7 the CXL region around its end),
 * bit 3 write, bits 4-5 width 1/2/4/8, bit 6 aligns the offset to the width.
 *
 * Oracle, after every access:
 *  1. Host-owned state unchanged (fuzz_dev.h: physical decoders, Device DVSEC,
 *     Register Locator, headers, physical DOE; canaries in device memory
 *     outside the region after CXL-region accesses and resets).
 *  2. The virtual register files (config shadow and component block) changed
 *     only as the register engine's masks allow. A byte may change only
 *      a) in the accessed range, in bits writable at that moment
 *         (vcxl_rf_writable8() before or after the access: RW + armed RWO -
 *         locked, + RW1C), a RW1C bit only from 1 to 0; or
 *      b) by a hook effect characterised here: Committed / Error Not
 *         Committed of the decoder whose Control dword was written; the live
 *         Status2 and Range Size Low (Info_Valid, Active) bits of an accessed
 *         dword; Reset Complete/Error after a virtual CXL reset; the DOE
 *         Control, Status and Read Mailbox dwords after a DOE access; or
 *      c) by a reset the access caused (FLR through Device Control: every
 *         byte; a virtual CXL reset: every byte of the DVSEC and component
 *         block), to its reset value; the part of the access after the reset
 *         may then change the bits software can write at all (RW, RWO,
 *         RW1C) relative to the reset value.
 *     Reserved bits are never stored, and a read returns exactly the
 *     register file's bytes with reserved bits 0.
 *  3. Every access returns 0 or a negative errno.
 * The job engine's doorbell is left out: a job is device work on device
 * memory the guest owns (covered by fuzz_vfio_user and the model tests).
 */
#include <errno.h>
#include <linux/pci_regs.h>

#include "../src/vfio-cxl/vdev_priv.h"
#include "fuzz_dev.h"
#include "fuzz_harness.h"

#define FZ_TUPLE      12
#define FZ_MAX_TUPLES 512

enum fz_win {
	WIN_DVSEC = 0,
	WIN_CONFIG,
	WIN_DOE,
	WIN_HDM,
	WIN_COMP,
	WIN_COMP_BAR,
	WIN_BAR2,
	WIN_REGION,
};

struct fz_access {
	enum fz_win win;
	bool write;
	unsigned width;
	uint32_t region;
	uint64_t off;
	uint64_t val;
};

/* One register file, snapshotted around an access. */
struct fz_rf {
	const char *name;
	struct vcxl_regfile *rf;
	uint8_t *pre;
	uint64_t lo, hi; /* accessed byte range in rf; lo == hi: none */
	uint8_t wr_pre[8];
};

static uint64_t le_get(const uint8_t *p, unsigned n)
{
	uint64_t v = 0;

	for (unsigned i = 0; i < n; i++)
		v |= (uint64_t)p[i] << (8 * i);
	return v;
}

static void fz_decode(const struct fz_dev *f, const uint8_t *t, struct fz_access *a)
{
	static const unsigned widths[] = {1, 2, 4, 8};
	uint64_t raw = le_get(t + 1, 3);
	uint32_t doe = f->d->doe_off;

	a->win = (enum fz_win)(t[0] & 7);
	a->write = t[0] & 0x08;
	a->width = widths[(t[0] >> 4) & 3];
	a->val = le_get(t + 4, 8);
	a->region = VFIO_PCI_CONFIG_REGION_INDEX;
	switch (a->win) {
	case WIN_DVSEC:
		a->off = f->d->dvsec + raw % CXL_DVSEC_DEVICE_LEN;
		break;
	case WIN_CONFIG:
		a->off = raw % VCXL_VDEV_CONFIG_SIZE;
		break;
	case WIN_DOE:
		a->off = doe ? doe + raw % PCI_DOE_CAP_SIZE : raw % VCXL_VDEV_CONFIG_SIZE;
		break;
	case WIN_HDM:
		a->region = f->info.cxl.hdm_bar;
		a->off = f->info.cxl.hdm_offset + raw % f->info.cxl.hdm_size;
		break;
	case WIN_COMP:
		a->region = f->info.cxl.hdm_bar;
		a->off = f->info.cxl.comp_offset + raw % CXL_COMPONENT_BLOCK_SIZE;
		break;
	case WIN_COMP_BAR:
		a->region = f->info.cxl.hdm_bar;
		a->off = raw % VCXL_MODEL_BAR0_SIZE;
		break;
	case WIN_BAR2:
		a->region = 2;
		a->off = raw % VCXL_MODEL_BAR2_SIZE;
		if (a->write && (a->off & ~7ull) == ACCEL_REG_DOORBELL)
			a->off = ACCEL_REG_JOB_PATTERN;
		break;
	case WIN_REGION:
		a->region = f->info.cxl.region_index;
		a->off = raw & 0x800000 ? raw % 0x10000
					: f->info.cxl.region_size - 0x8000 + raw % 0x10000;
		break;
	}
	if (t[0] & 0x40)
		a->off &= ~(uint64_t)(a->width - 1);
}

/* The part of the access that lands in the virtual config shadow / component block. */
static void fz_ranges(const struct fz_dev *f, const struct fz_access *a, struct fz_rf *cfg,
		      struct fz_rf *comp)
{
	cfg->lo = cfg->hi = comp->lo = comp->hi = 0;
	if (a->region == VFIO_PCI_CONFIG_REGION_INDEX) {
		uint64_t lo = a->off, hi = a->off + a->width;

		if (hi > VCXL_VDEV_CONFIG_SIZE)
			hi = VCXL_VDEV_CONFIG_SIZE;
		/* only emulated dwords are served by the shadow */
		while (lo < hi && f->vdev->route[lo / 4] != VCFG_EMUL)
			lo++;
		while (hi > lo && f->vdev->route[(hi - 1) / 4] != VCFG_EMUL)
			hi--;
		if (lo < hi) {
			cfg->lo = lo;
			cfg->hi = hi;
		}
	} else if (a->region == f->info.cxl.hdm_bar) {
		uint64_t cs = f->info.cxl.comp_offset, ce = cs + CXL_COMPONENT_BLOCK_SIZE;
		uint64_t lo = a->off > cs ? a->off : cs, hi = a->off + a->width;

		if (hi > ce)
			hi = ce;
		if (lo < hi) {
			comp->lo = lo - cs;
			comp->hi = hi - cs;
		}
	}
}

static void fz_snap(struct fz_rf *s)
{
	memcpy(s->pre, s->rf->val, s->rf->size);
	for (uint64_t i = s->lo; i < s->hi; i++)
		s->wr_pre[i - s->lo] = vcxl_rf_writable8(s->rf, (uint32_t)i);
}

static bool in_dword(uint64_t i, uint64_t dw, const struct fz_rf *s)
{
	return i >= dw && i < dw + 4 && s->lo < dw + 4 && dw < s->hi;
}

/* Bits of byte i that hooks may change (rule 2b). */
static uint8_t fz_hook_bits(const struct fz_dev *f, const struct fz_rf *s, bool is_cfg, uint64_t i,
			    bool cxl_reset)
{
	const struct vcxl_vdev *v = f->vdev;
	uint8_t m = 0;

	if (!is_cfg) {
		uint32_t hdm = (uint32_t)(f->info.cxl.hdm_offset - f->info.cxl.comp_offset);

		for (unsigned n = 0; n < v->guest_decoders; n++)
			if (in_dword(i, hdm + CXL_HDM_DEC_CTRL(n), s))
				m |= (uint8_t)((CXL_HDM_DEC_CTRL_COMMITTED |
						CXL_HDM_DEC_CTRL_COMMIT_ERR) >>
					       (8 * (i - hdm - CXL_HDM_DEC_CTRL(n))));
		return m;
	}
	uint32_t dv = v->dvsec.base, c2 = dv + CXL_DVSEC_CTRL2;
	uint32_t live2 = (uint32_t)(CXL_DVSEC_STATUS2_CACHE_INV | CXL_DVSEC_STATUS2_PM_INIT_DONE)
			 << 16;
	uint32_t done2 = (uint32_t)(CXL_DVSEC_STATUS2_RESET_DONE | CXL_DVSEC_STATUS2_RESET_ERR)
			 << 16;
	uint32_t rs = dv + CXL_DVSEC_RANGE_SIZE_LO(0);

	if (in_dword(i, c2, s))
		m |= (uint8_t)(live2 >> (8 * (i - c2)));
	if (cxl_reset && i >= c2 && i < c2 + 4)
		m |= (uint8_t)(done2 >> (8 * (i - c2)));
	if (in_dword(i, rs, s))
		m |= (uint8_t)((CXL_DVSEC_RANGE_INFO_VALID | CXL_DVSEC_RANGE_ACTIVE) >>
			       (8 * (i - rs)));
	if (v->has_doe && s->lo < v->doe.base + PCI_DOE_CAP_SIZE && v->doe.base < s->hi &&
	    i >= v->doe.base + PCI_DOE_CTRL && i < v->doe.base + PCI_DOE_CAP_SIZE)
		m = 0xff; /* the mailbox protocol runs in hooks (unit-tested) */
	return m;
}

static bool fz_reset_covers(const struct fz_dev *f, bool is_cfg, uint64_t i, bool flr,
			    bool cxl_reset)
{
	if (flr)
		return true;
	if (!cxl_reset)
		return false;
	return !is_cfg ||
	       (i >= f->vdev->dvsec.base && i < f->vdev->dvsec.base + f->vdev->dvsec_len);
}

/* Rule 2 for one register file. */
static void fz_check_rf(const struct fz_dev *f, struct fz_rf *s, bool is_cfg, bool flr,
			bool cxl_reset, const struct fz_access *a)
{
	const struct vcxl_regfile *rf = s->rf;

	if (!memcmp(s->pre, rf->val, rf->size))
		return;
	for (uint64_t i = 0; i < rf->size; i++) {
		uint8_t old, now, d, ok = 0;

		/* skip unchanged 64-byte blocks */
		if (!(i % 64) && i + 64 <= rf->size && !memcmp(s->pre + i, rf->val + i, 64)) {
			i += 63;
			continue;
		}
		old = s->pre[i];
		now = rf->val[i];
		d = old ^ now;
		if (!d)
			continue;
		if (now & rf->rsvd[i])
			fz_fail("%s byte 0x%llx: reserved bits 0x%02x stored", s->name,
				(unsigned long long)i, now & rf->rsvd[i]);
		if (fz_reset_covers(f, is_cfg, i, flr, cxl_reset)) {
			if (now == rf->reset_val[i])
				continue;
			/* the rest of the access lands after the reset: reset value
			 * plus bits software may write at all */
			if (i >= s->lo && i < s->hi && a->write &&
			    !((now ^ rf->reset_val[i]) & ~(rf->wmask[i] | rf->rwo[i] | rf->w1c[i])))
				continue;
		}
		if (i >= s->lo && i < s->hi && a->write) {
			ok = s->wr_pre[i - s->lo] | vcxl_rf_writable8(rf, (uint32_t)i);
			/* RW1C: only 1 -> 0 */
			ok &= (uint8_t) ~(rf->w1c[i] & now & ~old);
		}
		ok |= fz_hook_bits(f, s, is_cfg, i, cxl_reset);
		if (d & ~ok)
			fz_fail("%s byte 0x%llx: 0x%02x -> 0x%02x, bits 0x%02x not writable "
				"(%s region %u off 0x%llx w %u val 0x%llx)",
				s->name, (unsigned long long)i, old, now, d & ~ok,
				a->write ? "write" : "read", a->region, (unsigned long long)a->off,
				a->width, (unsigned long long)a->val);
	}
}

/* A read returns the register file's bytes, reserved bits 0. */
static void fz_check_read(const struct fz_rf *s, const struct fz_access *a, uint64_t base,
			  const uint8_t *buf)
{
	for (uint64_t i = s->lo; i < s->hi; i++) {
		uint8_t got = buf[i + base - a->off];

		if (got & s->rf->rsvd[i])
			fz_fail("%s byte 0x%llx read reserved bits 0x%02x", s->name,
				(unsigned long long)i, got & s->rf->rsvd[i]);
		if (got != s->rf->val[i])
			fz_fail("%s byte 0x%llx read 0x%02x, register file holds 0x%02x", s->name,
				(unsigned long long)i, got, s->rf->val[i]);
	}
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static uint8_t pre_cfg[VCXL_VDEV_CONFIG_SIZE], pre_comp[CXL_COMPONENT_BLOCK_SIZE];
	struct fz_dev f;
	size_t n = size / FZ_TUPLE;

	fz_quiet();
	if (n > FZ_MAX_TUPLES)
		n = FZ_MAX_TUPLES;
	/* component block position and guest decoder count vary with the input */
	if (fz_dev_open(&f, size ? (enum vcxl_comp_at)(data[size - 1] % 3) : VCXL_COMP_AT_START,
			size && (data[size - 1] & 0x80) ? 1 : 2))
		fz_fail("device setup failed");
	struct fz_rf cfg = {.name = "virtual config", .rf = &f.vdev->vcfg, .pre = pre_cfg};
	struct fz_rf comp = {
	    .name = "virtual component block", .rf = &f.vdev->vcomp, .pre = pre_comp};

	if (f.vdev->vcfg.size != sizeof(pre_cfg) || f.vdev->vcomp.size != sizeof(pre_comp))
		fz_fail("unexpected register file sizes");
	for (size_t k = 0; k < n; k++) {
		struct fz_access a;
		uint64_t flrs = f.vdev->flrs, cxlr = f.vdev->virtual_cxl_resets;
		uint8_t buf[8];
		bool flr, cxl_reset;
		int rc;

		fz_decode(&f, data + k * FZ_TUPLE, &a);
		fz_ranges(&f, &a, &cfg, &comp);
		fz_snap(&cfg);
		fz_snap(&comp);
		memcpy(buf, &a.val, sizeof(buf));
		rc = a.write ? vcxl_vdev_ops.region_write(f.vdev, a.region, a.off, buf, a.width)
			     : vcxl_vdev_ops.region_read(f.vdev, a.region, a.off, buf, a.width);
		if (rc > 0 || rc < -4095)
			fz_fail("access returned %d", rc);
		flr = f.vdev->flrs != flrs;
		cxl_reset = f.vdev->virtual_cxl_resets != cxlr;
		fz_check_rf(&f, &cfg, true, flr, cxl_reset, &a);
		fz_check_rf(&f, &comp, false, flr, cxl_reset, &a);
		if (!a.write && rc == 0) {
			fz_check_read(&cfg, &a, 0, buf);
			fz_check_read(&comp, &a, f.info.cxl.comp_offset, buf);
		}
		fz_check_host(&f, "after a guest access", a.win == WIN_REGION || flr || cxl_reset);
	}
	fz_check_host(&f, "at the end of the input", true);
	fz_dev_close(&f);
	return 0;
}
