// SPDX-License-Identifier: BSD-3-Clause
/*
 * 120,000 random accesses (width 1/2/4/8) over the model's config space and
 * the component block of BAR0. After every access:
 *  - oracle 1 (engine masks): a bit changed only if it was writable (RW,
 *    armed RWO, RW1C, not locked) in the bytes the access covered just
 *    before it, or it is one of the few hardware-owned live bits;
 *  - oracle 2 (independent expectations, written from the spec, not from the
 *    masks): identity/RO fields keep their values, reserved bits read 0,
 *    CONFIG_LOCK freezes Control and Range Base, a committed decoder's
 *    programming is frozen, Lock-On-Commit keeps it committed, Committed and
 *    Error Not Committed never both set, a decoder only commits when the
 *    commit rules hold.
 */
#include <errno.h>
#include <linux/pci_regs.h>
#include <string.h>

#include "../../src/model/accel.h"
#include "tap.h"

#define N_ACCESS 120000
#define NDEC	 4
#define G256	 VCXL_SZ_256M
#define MEMSZ	 (4 * G256)

static struct vcxl_model *m;
static struct vcxl_backend *be;
static uint64_t rs = 0x243f6a8885a308d3ull;
/* splitmix64: consecutive outputs are independent in their low bits too */
static uint64_t rnd(void)
{
	uint64_t z = (rs += 0x9e3779b97f4a7c15ull);
	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
	return z ^ (z >> 31);
}

static uint8_t prev_cfg[MODEL_CFG_SIZE], prev_cm[MODEL_COMP_RF_SIZE];
static uint8_t live_cfg[MODEL_CFG_SIZE], live_cm[MODEL_COMP_RF_SIZE];
static unsigned viol_mask, viol_expect, commits_seen, locked_seen, cfg_locked_seen;
static const char *first_fail;
static uint64_t first_fail_iter;

static void fail(const char *what, uint64_t it)
{
	viol_expect++;
	if (!first_fail) {
		first_fail = what;
		first_fail_iter = it;
	}
}

static uint32_t c32(uint32_t off)
{
	return vcxl_rf_get32(&m->cfgrf, off);
}

static uint32_t h32(uint32_t reg)
{
	return vcxl_rf_get32(&m->comprf, m->comp.hdm.off + reg);
}

static void snapshot(void)
{
	memcpy(prev_cfg, m->cfgrf.val, sizeof(prev_cfg));
	memcpy(prev_cm, m->comprf.val, sizeof(prev_cm));
}

static void set_live(void)
{
	uint32_t d = MODEL_DVSEC_DEVICE;
	/* Info_Valid / Active (refresh), Status2 Cache Invalid etc. (hardware) */
	live_cfg[d + CXL_DVSEC_RANGE_SIZE_LO(0)] = 0x03;
	live_cfg[d + CXL_DVSEC_STATUS2] = 0x07;
	/* DOE: Status and Read Data Mailbox are driven by the mailbox */
	for (unsigned b = 0; b < 4; b++) {
		live_cfg[MODEL_DOE + PCI_DOE_STATUS + b] = 0xff;
		live_cfg[MODEL_DOE + PCI_DOE_READ + b] = 0xff;
	}
	/* HDM: Committed / Error Not Committed */
	for (unsigned n = 0; n < NDEC; n++)
		live_cm[m->comp.hdm.off + CXL_HDM_DEC_CTRL(n) + 1] =
		    (CXL_HDM_DEC_CTRL_COMMITTED | CXL_HDM_DEC_CTRL_COMMIT_ERR) >> 8;
}

/* ---- oracle 1: changes only where the engine allowed them ---------------- */

static void check_masks(const struct vcxl_regfile *rf, const uint8_t *prev, const uint8_t *live,
			uint32_t lo, uint32_t hi, const uint8_t *wr_before, uint64_t it)
{
	for (uint32_t i = 0; i < rf->size; i++) {
		uint8_t d = prev[i] ^ rf->val[i];
		if (!d)
			continue;
		uint8_t allowed = live[i];
		if (i >= lo && i < hi)
			allowed |= wr_before[i - lo];
		if (d & ~allowed) {
			viol_mask++;
			if (viol_mask < 5)
				diag(
				    "iter %llu: byte 0x%x changed 0x%02x -> 0x%02x, allowed 0x%02x",
				    (unsigned long long)it, i, prev[i], rf->val[i], allowed);
		}
	}
}

/* ---- oracle 2: independent expectations ----------------------------------- */

struct frozen {
	bool on;
	uint32_t v[8];
};
static struct frozen dvsec_lock, dec_frozen[NDEC];
static bool dec_locked[NDEC];
static uint32_t ident[16];

static void read_ident(void)
{
	uint32_t d = MODEL_DVSEC_DEVICE;
	uint32_t offs[] = {0x00,
			   0x08,
			   0x2c,
			   MODEL_PCIE_CAP,
			   MODEL_PCIE_CAP + PCI_EXP_DEVCAP,
			   MODEL_MSIX_CAP + PCI_MSIX_TABLE,
			   MODEL_MSIX_CAP + PCI_MSIX_PBA,
			   d,
			   d + 4,
			   d + CXL_DVSEC_RANGE_SIZE_HI(0),
			   d + CXL_DVSEC_LOCK /* Cap2 in the high half */,
			   MODEL_DVSEC_REGLOC + CXL_REGLOC_BLOCK_LO(0),
			   MODEL_DOE,
			   MODEL_DOE + PCI_DOE_CAP,
			   d + 8 /* DVSEC ID + Capability */,
			   d + CXL_DVSEC_CAP3};
	for (unsigned i = 0; i < 16; i++)
		ident[i] = vcxl_rf_get32(&m->cfgrf, offs[i]);
	ident[10] &= 0xffff0000u; /* Cap2 only; Lock is writable */
	is(ident[0], 0x0d948086, "identity as expected");
	is(ident[1], 0x12000001, "class/revision as expected");
}

static void freeze_dvsec(struct frozen *f)
{
	uint32_t d = MODEL_DVSEC_DEVICE;
	f->v[0] = c32(d + CXL_DVSEC_CTRL) & 0xffff;
	f->v[1] = c32(d + CXL_DVSEC_RANGE_BASE_HI(0));
	f->v[2] = c32(d + CXL_DVSEC_RANGE_BASE_LO(0));
	f->v[3] = c32(d + CXL_DVSEC_RANGE_BASE_HI(1));
	f->v[4] = c32(d + CXL_DVSEC_RANGE_BASE_LO(1));
}

static void freeze_dec(struct frozen *f, unsigned n)
{
	f->v[0] = h32(CXL_HDM_DEC_BASE_LO(n));
	f->v[1] = h32(CXL_HDM_DEC_BASE_HI(n));
	f->v[2] = h32(CXL_HDM_DEC_SIZE_LO(n));
	f->v[3] = h32(CXL_HDM_DEC_SIZE_HI(n));
	f->v[4] = h32(CXL_HDM_DEC_SKIP_LO(n));
	f->v[5] = h32(CXL_HDM_DEC_SKIP_HI(n));
	f->v[6] = h32(CXL_HDM_DEC_CTRL(n)) &
		  (CXL_HDM_DEC_CTRL_IG | CXL_HDM_DEC_CTRL_IW | CXL_HDM_DEC_CTRL_LOCK_ON_COMMIT |
		   CXL_HDM_DEC_CTRL_HOSTONLY);
}

static bool frozen_same(const struct frozen *a, const struct frozen *b, unsigned n)
{
	return memcmp(a->v, b->v, n * sizeof(a->v[0])) == 0;
}

static uint64_t pair(uint32_t lo, uint32_t hi)
{
	return ((uint64_t)h32(hi) << 32) | (h32(lo) & 0xf0000000u);
}

/* The commit rules, restated for this device (A11to8 + A14to12, no 3/6/12, no 16). */
static bool commit_valid(unsigned n, uint64_t dpa_before)
{
	uint32_t ctrl = h32(CXL_HDM_DEC_CTRL(n));
	unsigned iw = (ctrl >> 4) & 0xf, ig = ctrl & 0xf;
	uint64_t base = pair(CXL_HDM_DEC_BASE_LO(n), CXL_HDM_DEC_BASE_HI(n));
	uint64_t size = pair(CXL_HDM_DEC_SIZE_LO(n), CXL_HDM_DEC_SIZE_HI(n));
	uint64_t skip = pair(CXL_HDM_DEC_SKIP_LO(n), CXL_HDM_DEC_SKIP_HI(n));
	if (!(h32(CXL_HDM_GLOBAL_CTRL) & 2) || size == 0 || iw > 3 || ig > 6)
		return false;
	uint64_t ways = 1ull << iw;
	if (size % (ways * G256) || base + size < base)
		return false;
	if (n > 0) {
		uint64_t pb = pair(CXL_HDM_DEC_BASE_LO(n - 1), CXL_HDM_DEC_BASE_HI(n - 1));
		uint64_t ps = pair(CXL_HDM_DEC_SIZE_LO(n - 1), CXL_HDM_DEC_SIZE_HI(n - 1));
		if (!(h32(CXL_HDM_DEC_CTRL(n - 1)) & CXL_HDM_DEC_CTRL_COMMITTED) || base < pb + ps)
			return false;
	}
	if (skip > MEMSZ || dpa_before > MEMSZ - skip || size / ways > MEMSZ - skip - dpa_before)
		return false;
	return true;
}

static uint64_t dpa_used_before(unsigned n)
{
	uint64_t dpa = 0;
	for (unsigned i = 0; i < n; i++) {
		uint32_t ctrl = h32(CXL_HDM_DEC_CTRL(i));
		uint64_t ways = 1ull << ((ctrl >> 4) & 0x3);
		dpa += pair(CXL_HDM_DEC_SKIP_LO(i), CXL_HDM_DEC_SKIP_HI(i)) +
		       pair(CXL_HDM_DEC_SIZE_LO(i), CXL_HDM_DEC_SIZE_HI(i)) / ways;
	}
	return dpa;
}

static void check_expect(uint64_t it, const bool was_committed[NDEC])
{
	uint32_t d = MODEL_DVSEC_DEVICE;
	uint32_t offs[] = {0x00,
			   0x08,
			   0x2c,
			   MODEL_PCIE_CAP,
			   MODEL_PCIE_CAP + PCI_EXP_DEVCAP,
			   MODEL_MSIX_CAP + PCI_MSIX_TABLE,
			   MODEL_MSIX_CAP + PCI_MSIX_PBA,
			   d,
			   d + 4,
			   d + CXL_DVSEC_RANGE_SIZE_HI(0),
			   d + CXL_DVSEC_LOCK,
			   MODEL_DVSEC_REGLOC + CXL_REGLOC_BLOCK_LO(0),
			   MODEL_DOE,
			   MODEL_DOE + PCI_DOE_CAP,
			   d + 8,
			   d + CXL_DVSEC_CAP3};
	for (unsigned i = 0; i < 16; i++) {
		uint32_t v = c32(offs[i]);
		if (i == 10)
			v &= 0xffff0000u;
		if (v != ident[i])
			fail("RO identity/capability field changed", it);
	}
	/* reserved / hardwired bits, from the spec */
	if (c32(PCI_COMMAND) & (VCXL_GENMASK(15, 11) | 0x2b9u))
		fail("Command reserved/hardwired bits", it);
	if ((c32(PCI_BASE_ADDRESS_0) & 0x3fffffu) != PCI_BASE_ADDRESS_MEM_TYPE_64)
		fail("BAR0 low bits", it);
	if (c32(PCI_BASE_ADDRESS_2) & 0x3fffu)
		fail("BAR2 low bits", it);
	if (c32(PCI_BASE_ADDRESS_3) | c32(PCI_BASE_ADDRESS_4) | c32(PCI_BASE_ADDRESS_5) |
	    c32(PCI_ROM_ADDRESS))
		fail("unimplemented BARs", it);
	if ((c32(0x34) & 0xffffff00u) || c32(0x38))
		fail("reserved 0x35..0x3b", it);
	if (vcxl_rf_get8(&m->cfgrf, PCI_INTERRUPT_PIN))
		fail("interrupt pin", it);
	uint32_t ctrl = c32(d + CXL_DVSEC_CTRL);
	if (!(ctrl & CXL_DVSEC_CTRL_IO_EN) ||
	    (ctrl & (CXL_DVSEC_CTRL_P2P_MEM_EN | VCXL_BIT(13) | VCXL_BIT(15))))
		fail("DVSEC Control IO_Enable=1, 12/13/15 = 0", it);
	if ((ctrl >> 16) & ~CXL_DVSEC_STATUS_VIRAL)
		fail("DVSEC Status reserved", it);
	uint32_t c2 = c32(d + CXL_DVSEC_CTRL2);
	if (c2 &
	    (CXL_DVSEC_CTRL2_INIT_CACHE_WBI | CXL_DVSEC_CTRL2_INIT_RESET | VCXL_GENMASK(15, 4)))
		fail("DVSEC Control2 triggers read 0, 15:4 reserved (no Cap3/Cap2 gating)", it);
	if ((c2 >> 16) & VCXL_GENMASK(14, 4))
		fail("DVSEC Status2 reserved", it);
	if (c32(d + CXL_DVSEC_LOCK) & VCXL_GENMASK(15, 1))
		fail("DVSEC Lock reserved", it);
	if ((c32(d + CXL_DVSEC_RANGE_SIZE_LO(0)) & ~3u) !=
	    (0x10000000u * 4 | (2u << 2) | (2u << 5)))
		fail("Range 1 Size Low fields", it);
	if ((c32(d + CXL_DVSEC_RANGE_BASE_LO(0)) | c32(d + CXL_DVSEC_RANGE_BASE_LO(1))) &
	    0x0fffffffu)
		fail("Range Base Low reserved", it);
	if (c32(d + CXL_DVSEC_CAP3) & 0xffff0000u)
		fail("DVSEC pad", it);
	/* CONFIG_LOCK */
	if (c32(d + CXL_DVSEC_LOCK) & CXL_DVSEC_LOCK_CONFIG) {
		struct frozen now;
		freeze_dvsec(&now);
		if (!dvsec_lock.on) {
			dvsec_lock = now;
			dvsec_lock.on = true;
			cfg_locked_seen++;
		} else if (!frozen_same(&now, &dvsec_lock, 5)) {
			fail("Control/Range Base changed under CONFIG_LOCK", it);
		}
	} else if (dvsec_lock.on) {
		fail("CONFIG_LOCK cleared without reset", it);
	}
	/* component block */
	if (vcxl_rf_get32(&m->comprf, 0) != 0x03110001u)
		fail("CM array header", it);
	if (h32(CXL_HDM_CAP) != (2u | CXL_HDM_CAP_IL_11_8 | CXL_HDM_CAP_IL_14_12))
		fail("HDM capability", it);
	if (h32(CXL_HDM_GLOBAL_CTRL) & ~2u)
		fail("HDM Global Control: Poison RO 0, 31:2 reserved", it);
	for (unsigned n = 0; n < NDEC; n++) {
		if ((h32(CXL_HDM_DEC_BASE_LO(n)) | h32(CXL_HDM_DEC_SIZE_LO(n)) |
		     h32(CXL_HDM_DEC_SKIP_LO(n))) &
		    0x0fffffffu)
			fail("decoder low dword reserved bits", it);
		uint32_t dc = h32(CXL_HDM_DEC_CTRL(n));
		if (dc & VCXL_GENMASK(31, 13))
			fail("decoder Control reserved bits", it);
		bool cm = dc & CXL_HDM_DEC_CTRL_COMMITTED;
		if (cm && (dc & CXL_HDM_DEC_CTRL_COMMIT_ERR))
			fail("Committed and Error both set", it);
		if (cm && !(dc & CXL_HDM_DEC_CTRL_COMMIT))
			fail("Committed without Commit", it);
		if (cm && !was_committed[n]) {
			commits_seen++;
			/* the programming of a just-committed decoder is frozen, and one access
			 * cannot reach an earlier decoder: "now" is what the commit saw */
			if (!commit_valid(n, dpa_used_before(n)))
				fail("decoder committed although the rules did not hold", it);
		}
		if (!cm && was_committed[n] && dec_locked[n])
			fail("Lock-On-Commit decoder decommitted", it);
		if (cm && was_committed[n]) {
			struct frozen now;
			freeze_dec(&now, n);
			if (!frozen_same(&now, &dec_frozen[n], 7))
				fail("committed decoder reprogrammed", it);
		}
		if (cm) {
			freeze_dec(&dec_frozen[n], n);
			if ((dc & CXL_HDM_DEC_CTRL_LOCK_ON_COMMIT) && !dec_locked[n]) {
				dec_locked[n] = true;
				locked_seen++;
			}
		} else {
			dec_locked[n] = false;
		}
	}
}

/* ---- the access generator ------------------------------------------------- */

static uint64_t rnd_val(void)
{
	switch (rnd() % 8) {
	case 0:
		return 0;
	case 1:
		return ~0ull;
	case 2:
		return 1ull << (rnd() % 64);
	case 3:
		return (rnd() % 4) << 28;
	case 4:
		return rnd() % 16;
	case 5:
		return CXL_HDM_DEC_CTRL_COMMIT | (rnd() & 0x1ff);
	default:
		return rnd();
	}
}

/* values a decoder or Global Control is likely to accept */
static uint32_t good_val(void)
{
	static const uint32_t t[] = {0,
				     0x10000000,
				     0x20000000,
				     0x40000000,
				     0xf0000000,
				     1,
				     CXL_HDM_GCTRL_ENABLE,
				     CXL_HDM_DEC_CTRL_COMMIT,
				     CXL_HDM_DEC_CTRL_COMMIT | CXL_HDM_DEC_CTRL_LOCK_ON_COMMIT,
				     CXL_HDM_DEC_CTRL_COMMIT | 0x12,
				     CXL_HDM_DEC_CTRL_LOCK_ON_COMMIT};
	return t[rnd() % (sizeof(t) / sizeof(t[0]))];
}

static void cfg_forbid(uint32_t off, unsigned len, uint64_t *v)
{
	/* never trigger FLR or CXL reset at random: they are exercised on purpose below */
	static const struct {
		uint32_t off;
		uint8_t bits;
	} f[] = {{MODEL_PCIE_CAP + PCI_EXP_DEVCTL + 1, PCI_EXP_DEVCTL_BCR_FLR >> 8},
		 {MODEL_DVSEC_DEVICE + CXL_DVSEC_CTRL2, CXL_DVSEC_CTRL2_INIT_RESET}};
	for (unsigned k = 0; k < 2; k++)
		if (f[k].off >= off && f[k].off < off + len)
			*v &= ~((uint64_t)f[k].bits << (8 * (f[k].off - off)));
}

/* A forced access (the programming bursts below), or random when NULL. */
struct forced {
	uint32_t o; /* component block offset */
	unsigned len;
	uint64_t v;
};

static void one_access(uint64_t it, const struct forced *f)
{
	unsigned len = 1u << (rnd() % 4);
	bool write = rnd() % 3 != 0;
	uint64_t v = rnd_val(), r;
	uint8_t wr_before[8] = {0};
	bool in_cfg = rnd() % 2;
	bool was_committed[NDEC];

	if (f) {
		len = f->len;
		v = f->v;
		write = true;
		in_cfg = false;
	}

	for (unsigned n = 0; n < NDEC; n++)
		was_committed[n] = h32(CXL_HDM_DEC_CTRL(n)) & CXL_HDM_DEC_CTRL_COMMITTED;
	snapshot();
	if (in_cfg) {
		uint32_t off = (uint32_t)(rnd() % 2 ? rnd() % 0x1c0 : rnd() % MODEL_CFG_SIZE);
		off &= ~(len - 1) | (rnd() % 4 == 0 ? 7u : 0u); /* mostly aligned */
		if (off + len > MODEL_CFG_SIZE)
			off = MODEL_CFG_SIZE - len;
		for (unsigned b = 0; b < len; b++)
			wr_before[b] = vcxl_rf_writable8(&m->cfgrf, off + b);
		if (write) {
			cfg_forbid(off, len, &v);
			be->ops->cfg_write(be->dev, off, len, v);
		} else {
			be->ops->cfg_read(be->dev, off, len, &r);
		}
		check_masks(&m->cfgrf, prev_cfg, live_cfg, write ? off : 0, write ? off + len : 0,
			    wr_before, it);
		check_masks(&m->comprf, prev_cm, live_cm, 0, 0, wr_before, it);
	} else {
		uint32_t o;
		unsigned pick = rnd() % 4;
		if (pick == 0)
			o = (uint32_t)(rnd() % CXL_COMPONENT_BLOCK_SIZE);
		else if (pick == 1)
			o = CXL_CM_OFFSET + (uint32_t)(rnd() % 0x400);
		else { /* a register of the HDM capability, with values that can commit */
			o = CXL_CM_OFFSET + m->comp.hdm.off +
			    (uint32_t)(rnd() % CXL_HDM_CAP_SIZE(NDEC));
			len = rnd() % 3 ? 4 : 8;
			if (rnd() % 4)
				v = good_val() | (uint64_t)good_val() << 32;
		}
		o &= ~(len - 1);
		if (rnd() % 8 == 0)
			o |= (uint32_t)(rnd() % 4);
		if (f)
			o = f->o;
		if (o + len > CXL_COMPONENT_BLOCK_SIZE)
			o = CXL_COMPONENT_BLOCK_SIZE - len;
		uint32_t ro = o - CXL_CM_OFFSET;
		bool in_cm = o >= CXL_CM_OFFSET && ro < MODEL_COMP_RF_SIZE;
		if (in_cm && write) {
			for (unsigned b = 0; b < len && ro + b < MODEL_COMP_RF_SIZE; b++)
				wr_before[b] = vcxl_rf_writable8(&m->comprf, ro + b);
		}
		if (write)
			be->ops->bar_write(be->dev, 0, m->comp_off + o, len, v);
		else
			be->ops->bar_read(be->dev, 0, m->comp_off + o, len, &r);
		/* The engine handles an 8-byte access dword by dword: the second dword is
		 * writable as the first one left the locks (a decommit in Control unlocks
		 * DPA Skip Low for the same access). Bound it by before | after. */
		if (in_cm && write && len == 8 && ro + 8 <= MODEL_COMP_RF_SIZE)
			for (unsigned b = 4; b < 8; b++)
				wr_before[b] |= vcxl_rf_writable8(&m->comprf, ro + b);
		check_masks(&m->comprf, prev_cm, live_cm, in_cm && write ? ro : 0,
			    in_cm && write ? ro + len : 0, wr_before, it);
		check_masks(&m->cfgrf, prev_cfg, live_cfg, 0, 0, wr_before, it);
	}
	check_expect(it, was_committed);
}

/* Program decoder n as Linux does, with values that are mostly (not always) valid, every
 * write an access checked like the random ones. Returns the number of accesses. */
static unsigned program_burst(uint64_t it)
{
	unsigned n = (unsigned)(rnd() % NDEC);
	uint32_t h = CXL_CM_OFFSET + m->comp.hdm.off;
	bool ordered = rnd() % 2;
	if (ordered) /* mostly the next decoder in order, so that commits happen */
		for (n = 0; n < NDEC - 1; n++)
			if (!(h32(CXL_HDM_DEC_CTRL(n)) & CXL_HDM_DEC_CTRL_COMMITTED))
				break;
	uint64_t base = (rnd() % 64) * G256, size = (1 + rnd() % 2) * G256, skip = 0;
	uint32_t ctrl = CXL_HDM_DEC_CTRL_COMMIT;
	if (rnd() % 4 == 0)
		skip = (rnd() % 3) * G256;
	if (ordered && n > 0)
		base = pair(CXL_HDM_DEC_BASE_LO(n - 1), CXL_HDM_DEC_BASE_HI(n - 1)) +
		       pair(CXL_HDM_DEC_SIZE_LO(n - 1), CXL_HDM_DEC_SIZE_HI(n - 1)) +
		       (rnd() % 3) * G256;
	if (rnd() % 10 == 0)
		ctrl |= CXL_HDM_DEC_CTRL_LOCK_ON_COMMIT;
	if (rnd() % 4 == 0)
		ctrl |= (uint32_t)(rnd() % 4) << 4 | (uint32_t)(rnd() % 8);
	struct forced seq[] = {
	    {h + CXL_HDM_GLOBAL_CTRL, 4, rnd() % 8 ? CXL_HDM_GCTRL_ENABLE : 0},
	    {h + CXL_HDM_DEC_BASE_HI(n), 4, base >> 32},
	    {h + CXL_HDM_DEC_BASE_LO(n), 4, (uint32_t)base},
	    {h + CXL_HDM_DEC_SIZE_HI(n), 4, size >> 32},
	    {h + CXL_HDM_DEC_SIZE_LO(n), 4, (uint32_t)size},
	    {h + CXL_HDM_DEC_SKIP_HI(n), 4, skip >> 32},
	    {h + CXL_HDM_DEC_SKIP_LO(n), 4, (uint32_t)skip},
	    {h + CXL_HDM_DEC_CTRL(n), 4, ctrl},
	};
	unsigned k = 0;
	for (; k < sizeof(seq) / sizeof(seq[0]); k++)
		one_access(it + k, &seq[k]);
	/* and sometimes tear it (or the top decoder) down again */
	if (rnd() % 3 == 0) {
		struct forced dc = {h + CXL_HDM_DEC_CTRL(n), 4, 0};
		one_access(it + k++, &dc);
	}
	return k;
}

static void reset_tracking(void)
{
	memset(dec_frozen, 0, sizeof(dec_frozen));
	memset(dec_locked, 0, sizeof(dec_locked));
}

int main(void)
{
	struct vcxl_model_cfg c = {.mem_size = MEMSZ, .decoders = NDEC};
	ok(vcxl_model_create(&c, &m) == 0, "model");
	be = vcxl_model_backend(m);
	set_live();
	read_ident();
	bool second = false;
	for (uint64_t it = 0; it < N_ACCESS; it++) {
		if (!second && it >= N_ACCESS / 2) {
			second = true;
			/* second half on a fresh device whose CONFIG_LOCK is set first
			 * (the write-once bit is usually consumed by an early random write) */
			vcxl_model_destroy(m);
			ok(vcxl_model_create(&c, &m) == 0, "second model");
			be = vcxl_model_backend(m);
			be->ops->cfg_write(be->dev, MODEL_DVSEC_DEVICE + CXL_DVSEC_CTRL, 2,
					   CXL_DVSEC_CTRL_MEM_EN | CXL_DVSEC_CTRL_CACHE_EN);
			be->ops->cfg_write(be->dev, MODEL_DVSEC_DEVICE + CXL_DVSEC_LOCK, 1, 1);
			memset(&dvsec_lock, 0, sizeof(dvsec_lock));
			reset_tracking();
		}
		if (rnd() % 40 == 0)
			it += program_burst(it) - 1;
		else
			one_access(it, NULL);
		if (it % 10000 == 9999) {
			/* deliberate resets: FLR keeps CXL state, CXL reset clears decoders */
			if ((it / 10000) % 2) {
				be->ops->reset(be->dev, VCXL_RESET_CXL);
				reset_tracking();
				for (unsigned n = 0; n < NDEC; n++)
					if (h32(CXL_HDM_DEC_CTRL(n)))
						fail("CXL reset left a decoder", it);
			} else {
				be->ops->reset(be->dev, VCXL_RESET_FLR);
			}
		}
	}
	is(viol_mask, 0, "%d accesses: no bit changed that the engine did not allow", N_ACCESS);
	ok(viol_expect == 0, "independent expectations held (%u violations, first: %s at %llu)",
	   viol_expect, first_fail ? first_fail : "-", (unsigned long long)first_fail_iter);
	diag("commits %u, Lock-On-Commit locks %u, CONFIG_LOCK %u", commits_seen, locked_seen,
	     cfg_locked_seen);
	ok(commits_seen > 10, "the run committed decoders (%u times)", commits_seen);
	ok(locked_seen > 0, "the run locked decoders with Lock-On-Commit (%u)", locked_seen);
	ok(cfg_locked_seen > 0, "the run set CONFIG_LOCK");

	/* the oracles can fail: an RO bit flipped behind the engine's back is caught */
	unsigned before = viol_mask, exp_before = viol_expect;
	snapshot();
	m->cfgrf.val[MODEL_DVSEC_DEVICE + CXL_DVSEC_CAP] ^= CXL_DVSEC_CAP_MEM;
	uint8_t none[8] = {0};
	check_masks(&m->cfgrf, prev_cfg, live_cfg, 0, 0, none, N_ACCESS);
	bool cmt[NDEC];
	for (unsigned n = 0; n < NDEC; n++)
		cmt[n] = h32(CXL_HDM_DEC_CTRL(n)) & CXL_HDM_DEC_CTRL_COMMITTED;
	check_expect(N_ACCESS, cmt);
	ok(viol_mask == before + 1 && viol_expect > exp_before,
	   "self-check: both oracles flag a flipped RO Capability bit");
	vcxl_model_destroy(m);
	return done();
}
