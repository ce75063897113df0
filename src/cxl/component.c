// SPDX-License-Identifier: BSD-3-Clause
/* Component registers: CXL.cache/mem capability array, HDM decoders (with commit rules), RAS,
 * Link. */
#include <errno.h>

#include "cxl/cxl_spec.h"

/* Where the structures go, relative to the CM range (QEMU uses the same start). */
#define CM_FIRST_STRUCT 0x80u
#define CM_STRUCT_ALIGN 0x10u
#define CM_MAX_CAPS	3u

/* HDM register offsets of decoder n, relative to the CM-relative HDM base h->off */
#define HDM_REG(h, reg) ((h)->off + (reg))

/* Control bits the spec makes RsvdP for a decoder without BI/UIO support (8.2.4.20.7) */
#define HDM_CTRL_RSVD                                                                              \
	(VCXL_BIT(15) | VCXL_GENMASK(31, 28) | CXL_HDM_DEC_CTRL_BI | CXL_HDM_DEC_CTRL_UIO |        \
	 CXL_HDM_DEC_CTRL_UIG | CXL_HDM_DEC_CTRL_UIW | CXL_HDM_DEC_CTRL_ISP)
/* Control fields frozen while Committed (everything RWL except Commit itself) */
#define HDM_CTRL_LOCK_WHILE_COMMITTED (CXL_HDM_DEC_CTRL_RWL_MASK & ~CXL_HDM_DEC_CTRL_COMMIT)

/* ---- encodings (CXL r3.1 8.2.4.20.1, 8.2.4.20.7) ---------------------- */

static const uint8_t hdm_count_table[] = {1, 2, 4, 6, 8, 10, 12, 14, 16, 20, 24, 28, 32};

int vcxl_hdm_count_encode(unsigned count)
{
	for (unsigned e = 0; e < sizeof(hdm_count_table); e++)
		if (hdm_count_table[e] == count)
			return (int)e;
	return -1;
}

int vcxl_hdm_count_decode(unsigned enc)
{
	return enc < sizeof(hdm_count_table) ? hdm_count_table[enc] : -1;
}

unsigned vcxl_hdm_iw_decode(unsigned iw)
{
	if (iw <= CXL_HDM_IW_16)
		return 1u << iw;
	if (iw >= CXL_HDM_IW_3 && iw <= CXL_HDM_IW_12)
		return 3u << (iw - CXL_HDM_IW_3);
	return 0;
}

int vcxl_hdm_iw_encode(unsigned ways)
{
	for (unsigned iw = 0; iw <= CXL_HDM_IW_12; iw++)
		if (vcxl_hdm_iw_decode(iw) == ways && ways)
			return (int)iw;
	return -1;
}

unsigned vcxl_hdm_ig_decode(unsigned ig)
{
	return ig <= CXL_HDM_IG_MAX_ENC ? 256u << ig : 0;
}

int vcxl_hdm_ig_encode(unsigned granularity)
{
	for (unsigned ig = 0; ig <= CXL_HDM_IG_MAX_ENC; ig++)
		if (vcxl_hdm_ig_decode(ig) == granularity)
			return (int)ig;
	return -1;
}

/* Number of HPA way-select bits of an IW encoding (the power-of-two factor). */
static unsigned iw_select_bits(unsigned iw)
{
	return iw >= CXL_HDM_IW_3 ? iw - CXL_HDM_IW_3 : iw;
}

const char *vcxl_hdm_err_str(enum vcxl_hdm_commit_err e)
{
	switch (e) {
	case VCXL_HDM_OK:
		return "ok";
	case VCXL_HDM_ERR_DISABLED:
		return "HDM Decoder Enable is clear";
	case VCXL_HDM_ERR_ORDER:
		return "decoder n-1 is not committed";
	case VCXL_HDM_ERR_ZERO_SIZE:
		return "size is zero";
	case VCXL_HDM_ERR_ALIGN:
		return "base/size/skip not 256 MiB granular or size not a multiple of ways * 256 "
		       "MiB";
	case VCXL_HDM_ERR_IW:
		return "interleave ways invalid or not supported";
	case VCXL_HDM_ERR_IG:
		return "interleave granularity invalid or not supported";
	case VCXL_HDM_ERR_OVERLAP:
		return "HPA range wraps, or lies below or overlaps decoder n-1";
	case VCXL_HDM_ERR_DPA:
		return "DPA range beyond device capacity";
	case VCXL_HDM_ERR_POLICY:
		return "refused by owner policy";
	}
	return "unknown";
}

/* ---- decoder state ---------------------------------------------------- */

static uint64_t hdm_get_pair(const struct vcxl_hdm *h, uint32_t lo, uint32_t hi)
{
	return ((uint64_t)vcxl_rf_get32(h->rf, HDM_REG(h, hi)) << 32) |
	       (vcxl_rf_get32(h->rf, HDM_REG(h, lo)) & CXL_HDM_DEC_LO_MASK);
}

void vcxl_hdm_decoder_get(const struct vcxl_hdm *h, unsigned n, struct vcxl_hdm_decoder *d)
{
	*d = (struct vcxl_hdm_decoder){0};
	if (n >= h->count)
		return;
	d->base = hdm_get_pair(h, CXL_HDM_DEC_BASE_LO(n), CXL_HDM_DEC_BASE_HI(n));
	d->size = hdm_get_pair(h, CXL_HDM_DEC_SIZE_LO(n), CXL_HDM_DEC_SIZE_HI(n));
	d->skip = hdm_get_pair(h, CXL_HDM_DEC_SKIP_LO(n), CXL_HDM_DEC_SKIP_HI(n));
	d->ctrl = vcxl_rf_get32(h->rf, HDM_REG(h, CXL_HDM_DEC_CTRL(n)));
	d->ways = vcxl_hdm_iw_decode((unsigned)VCXL_FIELD_GET(CXL_HDM_DEC_CTRL_IW, d->ctrl));
	d->granularity = vcxl_hdm_ig_decode((unsigned)VCXL_FIELD_GET(CXL_HDM_DEC_CTRL_IG, d->ctrl));
	d->committed = d->ctrl & CXL_HDM_DEC_CTRL_COMMITTED;
	d->lock_on_commit = d->ctrl & CXL_HDM_DEC_CTRL_LOCK_ON_COMMIT;
	d->hostonly = d->ctrl & CXL_HDM_DEC_CTRL_HOSTONLY;
}

/* The DPA this decoder starts at: skips plus size/ways of decoders 0..n-1 (as QEMU's
 * cxl_type3_dpa walks them), plus its own skip. false on overflow. */
static bool hdm_dpa_start(const struct vcxl_hdm *h, unsigned n, uint64_t skip, uint64_t *start)
{
	uint64_t dpa = 0;
	for (unsigned i = 0; i < n; i++) {
		struct vcxl_hdm_decoder p;
		vcxl_hdm_decoder_get(h, i, &p);
		uint64_t len = p.ways ? p.size / p.ways : 0;
		if (__builtin_add_overflow(dpa, p.skip, &dpa) ||
		    __builtin_add_overflow(dpa, len, &dpa))
			return false;
	}
	return !__builtin_add_overflow(dpa, skip, start);
}

/* CXL r3.1 8.2.4.20.12 (Committing Decoder Programming): interleave against Capability. */
static enum vcxl_hdm_commit_err hdm_check_interleave(const struct vcxl_hdm *h, uint32_t ctrl)
{
	unsigned iw = (unsigned)VCXL_FIELD_GET(CXL_HDM_DEC_CTRL_IW, ctrl);
	unsigned ig = (unsigned)VCXL_FIELD_GET(CXL_HDM_DEC_CTRL_IG, ctrl);

	if (!vcxl_hdm_iw_decode(iw))
		return VCXL_HDM_ERR_IW;
	if (iw >= CXL_HDM_IW_3 && !(h->cap_flags & CXL_HDM_CAP_IW_3_6_12))
		return VCXL_HDM_ERR_IW;
	if (iw == CXL_HDM_IW_16 && !(h->cap_flags & CXL_HDM_CAP_IW_16))
		return VCXL_HDM_ERR_IW;
	if (ig > CXL_HDM_IG_MAX_ENC)
		return VCXL_HDM_ERR_IG;
	/*
	 * The way is selected by HPA bits [8+IG, 8+IG+k-1] (k = log2 of the power-of-two
	 * factor of the ways). Bits 11:8 need A11to8 and bits 14:12 need A14to12 in the
	 * Capability register. With ways == 1 (the usual endpoint) no bit selects a way, so
	 * the granularity only describes the interleave set and every encoding is accepted.
	 */
	unsigned k = iw_select_bits(iw);
	if (!k)
		return VCXL_HDM_OK;
	uint32_t used = VCXL_GENMASK(8 + ig + k - 1, 8 + ig);
	if ((used & VCXL_GENMASK(11, 8)) && !(h->cap_flags & CXL_HDM_CAP_IL_11_8))
		return VCXL_HDM_ERR_IG;
	if ((used & VCXL_GENMASK(14, 12)) && !(h->cap_flags & CXL_HDM_CAP_IL_14_12))
		return VCXL_HDM_ERR_IG;
	return VCXL_HDM_OK;
}

/* CXL r3.1 8.2.4.20.12: every rule a decoder must meet before Committed may be set. */
static enum vcxl_hdm_commit_err hdm_check(struct vcxl_hdm *h, unsigned n,
					  const struct vcxl_hdm_decoder *d)
{
	uint32_t gctrl = vcxl_rf_get32(h->rf, HDM_REG(h, CXL_HDM_GLOBAL_CTRL));
	struct vcxl_hdm_decoder prev;
	enum vcxl_hdm_commit_err e;
	uint64_t end, dpa;

	if (!(gctrl & CXL_HDM_GCTRL_ENABLE))
		return VCXL_HDM_ERR_DISABLED;
	if (n > 0) {
		vcxl_hdm_decoder_get(h, n - 1, &prev);
		if (!prev.committed)
			return VCXL_HDM_ERR_ORDER;
	}
	if (d->size == 0)
		return VCXL_HDM_ERR_ZERO_SIZE;
	e = hdm_check_interleave(h, d->ctrl);
	if (e)
		return e;
	if ((d->base | d->size | d->skip) & (CXL_HDM_GRANULE - 1) ||
	    d->size % ((uint64_t)d->ways * CXL_HDM_GRANULE))
		return VCXL_HDM_ERR_ALIGN;
	if (__builtin_add_overflow(d->base, d->size, &end))
		return VCXL_HDM_ERR_OVERLAP;
	if (n > 0 && d->base < prev.base + prev.size)
		return VCXL_HDM_ERR_OVERLAP;
	if (h->dpa_capacity) {
		if (!hdm_dpa_start(h, n, d->skip, &dpa) ||
		    __builtin_add_overflow(dpa, d->size / d->ways, &end) || end > h->dpa_capacity)
			return VCXL_HDM_ERR_DPA;
	}
	if (h->ops && h->ops->validate)
		return h->ops->validate(h->opaque, h, n, d);
	return VCXL_HDM_OK;
}

static void hdm_set_status(struct vcxl_hdm *h, unsigned n, bool committed, bool err)
{
	uint32_t v =
	    (committed ? CXL_HDM_DEC_CTRL_COMMITTED : 0) | (err ? CXL_HDM_DEC_CTRL_COMMIT_ERR : 0);
	vcxl_rf_update32(h->rf, HDM_REG(h, CXL_HDM_DEC_CTRL(n)),
			 CXL_HDM_DEC_CTRL_COMMITTED | CXL_HDM_DEC_CTRL_COMMIT_ERR, v);
}

/* Commit 0->1: validate, then Committed or Error Not Committed. */
static enum vcxl_hdm_commit_err hdm_commit(struct vcxl_hdm *h, unsigned n)
{
	struct vcxl_hdm_decoder d;
	vcxl_hdm_decoder_get(h, n, &d);
	enum vcxl_hdm_commit_err e = hdm_check(h, n, &d);
	h->last_err[n] = e;
	hdm_set_status(h, n, e == VCXL_HDM_OK, e != VCXL_HDM_OK);
	if (e == VCXL_HDM_OK && h->ops && h->ops->changed)
		h->ops->changed(h->opaque, h, n, true);
	return e;
}

/* Commit 1->0: decommit (the Commit bit cannot reach here while locked). */
static void hdm_decommit(struct vcxl_hdm *h, unsigned n)
{
	bool was =
	    vcxl_rf_get32(h->rf, HDM_REG(h, CXL_HDM_DEC_CTRL(n))) & CXL_HDM_DEC_CTRL_COMMITTED;
	hdm_set_status(h, n, false, false);
	h->last_err[n] = VCXL_HDM_OK;
	if (was && h->ops && h->ops->changed)
		h->ops->changed(h->opaque, h, n, false);
}

static void hdm_decoder_write(void *opaque, struct vcxl_regfile *rf, uint32_t dw_off, uint32_t old,
			      uint32_t val)
{
	struct vcxl_hdm *h = opaque;
	uint32_t rel = dw_off - h->off - CXL_HDM_DECODER_FIRST;
	unsigned n = rel / CXL_HDM_DECODER_STRIDE;

	if (rel % CXL_HDM_DECODER_STRIDE != CXL_HDM_DEC_CTRL(0) - CXL_HDM_DECODER_FIRST ||
	    n >= h->count)
		return;
	if (!(old & CXL_HDM_DEC_CTRL_COMMIT) && (val & CXL_HDM_DEC_CTRL_COMMIT))
		hdm_commit(h, n);
	else if ((old & CXL_HDM_DEC_CTRL_COMMIT) && !(val & CXL_HDM_DEC_CTRL_COMMIT))
		hdm_decommit(h, n);
}

/* ---- layout ----------------------------------------------------------- */

/* CXL r3.1 8.2.4.20.2: Poison bit RW only if capable; HDM Decoder Enable RW. */
static int hdm_define_global(struct vcxl_hdm *h)
{
	uint32_t rw = CXL_HDM_GCTRL_ENABLE;
	if (h->cap_flags & CXL_HDM_CAP_POISON)
		rw |= CXL_HDM_GCTRL_POISON_EN;
	int rc = vcxl_rf_define(h->rf, HDM_REG(h, CXL_HDM_GLOBAL_CTRL), 4, rw, VCXL_RF_RW);
	rc = rc ?: vcxl_rf_define(h->rf, HDM_REG(h, CXL_HDM_GLOBAL_CTRL), 4, ~rw, VCXL_RF_RSVD);
	rc = rc
		 ?: vcxl_rf_define(h->rf, HDM_REG(h, CXL_HDM_GLOBAL_CTRL + 4), 8, ~0ull,
				   VCXL_RF_RSVD);
	return rc;
}

/* Low dword of a 256 MiB granular pair: [31:28] RW, [27:0] reserved; high dword RW. */
static int hdm_define_pair(struct vcxl_hdm *h, uint32_t lo, uint32_t hi)
{
	int rc = vcxl_rf_define(h->rf, HDM_REG(h, lo), 4, CXL_HDM_DEC_LO_MASK, VCXL_RF_RW);
	rc = rc ?: vcxl_rf_define(h->rf, HDM_REG(h, lo), 4, ~CXL_HDM_DEC_LO_MASK, VCXL_RF_RSVD);
	rc = rc ?: vcxl_rf_define(h->rf, HDM_REG(h, hi), 4, ~0u, VCXL_RF_RW);
	return rc;
}

/* CXL r3.1 8.2.4.20.3-11: one device decoder and its two lock groups. */
static int hdm_define_decoder(struct vcxl_hdm *h, unsigned n, bool hostonly)
{
	uint32_t ctrl = HDM_REG(h, CXL_HDM_DEC_CTRL(n));
	int rc = hdm_define_pair(h, CXL_HDM_DEC_BASE_LO(n), CXL_HDM_DEC_BASE_HI(n));
	rc = rc ?: hdm_define_pair(h, CXL_HDM_DEC_SIZE_LO(n), CXL_HDM_DEC_SIZE_HI(n));
	/* Device decoders hold DPA Skip where switch decoders hold the Target List */
	rc = rc ?: hdm_define_pair(h, CXL_HDM_DEC_SKIP_LO(n), CXL_HDM_DEC_SKIP_HI(n));
	rc = rc ?: vcxl_rf_define(h->rf, ctrl, 4, CXL_HDM_DEC_CTRL_RWL_MASK, VCXL_RF_RW);
	rc = rc ?: vcxl_rf_define(h->rf, ctrl, 4, HDM_CTRL_RSVD, VCXL_RF_RSVD);
	rc = rc ?: vcxl_rf_define(h->rf, ctrl + 0xc, 4, ~0u, VCXL_RF_RSVD);
	rc = rc ?: vcxl_rf_init_val(h->rf, ctrl, 4, hostonly ? CXL_HDM_DEC_CTRL_HOSTONLY : 0);
	if (rc)
		return rc;

	/* While Committed: Base, Size, Skip and the Control fields but Commit are RO. */
	struct vcxl_rf_lock_field fc[] = {
	    {HDM_REG(h, CXL_HDM_DEC_BASE_LO(n)), CXL_HDM_DEC_LO_MASK},
	    {HDM_REG(h, CXL_HDM_DEC_BASE_HI(n)), ~0u},
	    {HDM_REG(h, CXL_HDM_DEC_SIZE_LO(n)), CXL_HDM_DEC_LO_MASK},
	    {HDM_REG(h, CXL_HDM_DEC_SIZE_HI(n)), ~0u},
	    {HDM_REG(h, CXL_HDM_DEC_SKIP_LO(n)), CXL_HDM_DEC_LO_MASK},
	    {HDM_REG(h, CXL_HDM_DEC_SKIP_HI(n)), ~0u},
	    {ctrl, HDM_CTRL_LOCK_WHILE_COMMITTED},
	};
	int g = vcxl_rf_lock_group(h->rf, ctrl, CXL_HDM_DEC_CTRL_COMMITTED, fc,
				   sizeof(fc) / sizeof(fc[0]));
	if (g < 0)
		return g;
	h->committed_group[n] = g;
	/* Lock-On-Commit: only once Committed does Commit itself turn RO (until reset). */
	struct vcxl_rf_lock_field fl[] = {{ctrl, CXL_HDM_DEC_CTRL_COMMIT}};
	g = vcxl_rf_lock_group(h->rf, ctrl,
			       CXL_HDM_DEC_CTRL_COMMITTED | CXL_HDM_DEC_CTRL_LOCK_ON_COMMIT, fl, 1);
	if (g < 0)
		return g;
	h->lock_group[n] = g;
	return 0;
}

/* CXL r3.1 8.2.4.20: HDM Decoder Capability structure at rf offset off. */
static int hdm_layout(struct vcxl_hdm *h, struct vcxl_regfile *rf, uint32_t off,
		      const struct vcxl_comp_cfg *cfg, const struct vcxl_hdm_ops *ops, void *opaque)
{
	uint32_t flags =
	    cfg->hdm_cap_flags & (CXL_HDM_CAP_IL_11_8 | CXL_HDM_CAP_IL_14_12 | CXL_HDM_CAP_POISON |
				  CXL_HDM_CAP_IW_3_6_12 | CXL_HDM_CAP_IW_16);
	int enc = vcxl_hdm_count_encode(cfg->hdm_count);
	int rc;

	*h = (struct vcxl_hdm){.rf = rf,
			       .off = off,
			       .count = cfg->hdm_count,
			       .cap_flags = flags,
			       .dpa_capacity = cfg->dpa_capacity,
			       .ops = ops,
			       .opaque = opaque};
	/* Target Count is meaningful only for switch and host bridge decoders: 0 on a
	 * device [spec]. */
	rc = vcxl_rf_init_val(rf, off + CXL_HDM_CAP, 4,
			      VCXL_FIELD_PREP(CXL_HDM_CAP_DECODER_COUNT, enc) | flags);
	rc = rc ?: hdm_define_global(h);
	for (unsigned n = 0; n < h->count && !rc; n++)
		rc = hdm_define_decoder(h, n, cfg->hostonly_reset);
	rc = rc
		 ?: vcxl_rf_hook(rf, off + CXL_HDM_DECODER_FIRST,
				 CXL_HDM_CAP_SIZE(h->count) - CXL_HDM_DECODER_FIRST, NULL,
				 hdm_decoder_write, h);
	return rc;
}

/* CXL r3.1 8.2.4.17: RAS status RW1CS, mask and severity RWS, the rest RO. */
static int ras_layout(struct vcxl_regfile *rf, uint32_t off)
{
	int rc = vcxl_rf_define(rf, off + CXL_RAS_UNCORR_STATUS, 4, CXL_RAS_UNCORR_MASK_ALL,
				VCXL_RF_RW1C);
	rc = rc
		 ?: vcxl_rf_define(rf, off + CXL_RAS_UNCORR_MASK, 4, CXL_RAS_UNCORR_MASK_ALL,
				   VCXL_RF_RW);
	rc = rc
		 ?: vcxl_rf_define(rf, off + CXL_RAS_UNCORR_SEVERITY, 4, CXL_RAS_UNCORR_MASK_ALL,
				   VCXL_RF_RW);
	rc = rc
		 ?: vcxl_rf_define(rf, off + CXL_RAS_CORR_STATUS, 4, CXL_RAS_CORR_MASK_ALL,
				   VCXL_RF_RW1C);
	rc =
	    rc ?: vcxl_rf_define(rf, off + CXL_RAS_CORR_MASK, 4, CXL_RAS_CORR_MASK_ALL, VCXL_RF_RW);
	for (uint32_t r = CXL_RAS_UNCORR_STATUS; r <= CXL_RAS_CORR_MASK && !rc; r += 4) {
		uint32_t defined =
		    (r < CXL_RAS_CORR_STATUS) ? CXL_RAS_UNCORR_MASK_ALL : CXL_RAS_CORR_MASK_ALL;
		rc = vcxl_rf_define(rf, off + r, 4, ~defined, VCXL_RF_RSVD);
	}
	/* Masks come out of reset with every error masked, severities fatal (as QEMU) [spec] */
	rc = rc ?: vcxl_rf_init_val(rf, off + CXL_RAS_UNCORR_MASK, 4, CXL_RAS_UNCORR_MASK_ALL);
	rc = rc ?: vcxl_rf_init_val(rf, off + CXL_RAS_UNCORR_SEVERITY, 4, CXL_RAS_UNCORR_MASK_ALL);
	rc = rc ?: vcxl_rf_init_val(rf, off + CXL_RAS_CORR_MASK, 4, CXL_RAS_CORR_MASK_ALL);
	rc = rc
		 ?: vcxl_rf_define(rf, off + CXL_RAS_CAP_CTRL, 4, ~CXL_RAS_CAP_CTRL_FE_PTR,
				   VCXL_RF_RSVD);
	return rc;
}

/* CXL r3.1 8.2.4.19.1-7: the Link capability's registers are 64-bit [spec] */
static const uint32_t link_regs64[] = {
    CXL_LINK_LL_CAP,	       CXL_LINK_CTRL_STATUS,
    CXL_LINK_RX_CREDIT_CTRL,   CXL_LINK_RX_CREDIT_RET_STATUS,
    CXL_LINK_TX_CREDIT_STATUS, CXL_LINK_ACK_TIMER_CTRL,
    CXL_LINK_DEFEATURE,
};

/* The Link capability is reported with its registers reading 0 [spec: contents];
 * CXL r3.1 8.2.2: each is one 8-byte quantity (regfile.h VCXL_RF_ACC_QWORD). */
static int link_layout(struct vcxl_regfile *rf, uint32_t off)
{
	int rc = 0;
	for (unsigned i = 0; i < sizeof(link_regs64) / sizeof(link_regs64[0]) && !rc; i++)
		rc = vcxl_rf_access_rule(rf, off + link_regs64[i], CXL_COMP_REG64_BYTES,
					 VCXL_RF_ACC_QWORD);
	return rc;
}

static uint32_t cm_cap_element(uint16_t id, uint8_t version, uint32_t ptr)
{
	return (uint32_t)(VCXL_FIELD_PREP(CXL_CM_CAP_HDR_ID, id) |
			  VCXL_FIELD_PREP(CXL_CM_CAP_HDR_VERSION, version) |
			  VCXL_FIELD_PREP(CXL_CM_CAP_PTR, ptr));
}

int vcxl_comp_layout(struct vcxl_comp *c, struct vcxl_regfile *rf, uint32_t cm_off,
		     const struct vcxl_comp_cfg *cfg, const struct vcxl_hdm_ops *ops, void *opaque)
{
	uint32_t elem[CM_MAX_CAPS];
	unsigned n = 0;
	uint32_t p = CM_FIRST_STRUCT;
	int rc;

	if (!c || !rf || !cfg || (cm_off & 3) || cfg->hdm_count < 1 ||
	    cfg->hdm_count > CXL_HDM_MAX_DECODERS_DEVICE ||
	    vcxl_hdm_count_encode(cfg->hdm_count) < 0)
		return -EINVAL;
	*c = (struct vcxl_comp){.rf = rf, .cm_off = cm_off};
	if (cfg->ras) {
		c->ras_off = cm_off + p;
		elem[n++] = cm_cap_element(CXL_CM_CAP_ID_RAS, CXL_RAS_CAP_VERSION, p);
		p += CXL_RAS_CAP_SIZE;
	}
	if (cfg->link) {
		/* its 64-bit registers are naturally aligned (a no-op after RAS's 0x58) */
		p = (p + CXL_COMP_REG64_BYTES - 1) & ~(CXL_COMP_REG64_BYTES - 1);
		c->link_off = cm_off + p;
		elem[n++] = cm_cap_element(CXL_CM_CAP_ID_LINK, CXL_LINK_CAP_VERSION, p);
		p += CXL_LINK_CAP_SIZE;
	}
	p = (p + CM_STRUCT_ALIGN - 1) & ~(CM_STRUCT_ALIGN - 1);
	elem[n++] = cm_cap_element(CXL_CM_CAP_ID_HDM, CXL_HDM_CAP_VERSION, p);
	if ((uint64_t)cm_off + p + CXL_HDM_CAP_SIZE(cfg->hdm_count) > rf->size)
		return -EINVAL;

	/* CXL r3.1 8.2.4.1: CXL Capability Header, then one element per capability */
	rc = vcxl_rf_init_val(rf, cm_off, 4,
			      VCXL_FIELD_PREP(CXL_CM_CAP_HDR_ID, CXL_CM_CAP_ID_ARRAY) |
				  VCXL_FIELD_PREP(CXL_CM_CAP_HDR_VERSION, CXL_CM_CAP_VERSION) |
				  VCXL_FIELD_PREP(CXL_CM_CAP_HDR_CM_VERSION, CXL_CM_VERSION) |
				  VCXL_FIELD_PREP(CXL_CM_CAP_HDR_ARRAY_SIZE, n));
	for (unsigned k = 0; k < n && !rc; k++)
		rc = vcxl_rf_init_val(rf, cm_off + 4 * (k + 1), 4, elem[k]);
	if (!rc && cfg->ras)
		rc = ras_layout(rf, c->ras_off);
	rc = rc ?: hdm_layout(&c->hdm, rf, cm_off + p, cfg, ops, opaque);
	/* CXL r3.1 8.2.2: CM registers are 32-bit (4-byte quantities) but Link's 64-bit ones */
	uint32_t cm_len = rf->size - cm_off < CXL_CM_SIZE ? rf->size - cm_off : CXL_CM_SIZE;
	rc = rc ?: vcxl_rf_access_rule(rf, cm_off, cm_len & ~3u, VCXL_RF_ACC_DWORD);
	if (!rc && cfg->link)
		rc = link_layout(rf, c->link_off);
	return rc;
}

/* ---- owner operations --------------------------------------------------- */

/* Every committed decoder is reported decommitted before the registers go
 * back to their reset values, so that the report still names the range that
 * goes (after the reset, Base and Size read 0). */
void vcxl_hdm_reset(struct vcxl_hdm *h)
{
	for (unsigned n = 0; n < h->count; n++) {
		bool was = vcxl_rf_get32(h->rf, HDM_REG(h, CXL_HDM_DEC_CTRL(n))) &
			   CXL_HDM_DEC_CTRL_COMMITTED;

		h->last_err[n] = VCXL_HDM_OK;
		if (was && h->ops && h->ops->changed)
			h->ops->changed(h->opaque, h, n, false);
	}
	vcxl_rf_reset_range(h->rf, HDM_REG(h, CXL_HDM_GLOBAL_CTRL),
			    CXL_HDM_CAP_SIZE(h->count) - CXL_HDM_GLOBAL_CTRL);
}

enum vcxl_hdm_commit_err vcxl_hdm_check(struct vcxl_hdm *h, unsigned n,
					const struct vcxl_hdm_decoder *d)
{
	if (n >= h->count)
		return VCXL_HDM_ERR_ORDER;
	return hdm_check(h, n, d);
}

static void hdm_set_pair(struct vcxl_hdm *h, uint32_t lo, uint32_t hi, uint64_t v)
{
	vcxl_rf_set32(h->rf, HDM_REG(h, lo), (uint32_t)v & CXL_HDM_DEC_LO_MASK);
	vcxl_rf_set32(h->rf, HDM_REG(h, hi), (uint32_t)(v >> 32));
}

enum vcxl_hdm_commit_err vcxl_hdm_program(struct vcxl_hdm *h, unsigned n,
					  const struct vcxl_hdm_decoder *d, bool commit)
{
	if (n >= h->count)
		return VCXL_HDM_ERR_ORDER;
	uint32_t ctrl = HDM_REG(h, CXL_HDM_DEC_CTRL(n));
	/* owner writes go around the locks: drop a commitment first */
	if (vcxl_rf_get32(h->rf, ctrl) & CXL_HDM_DEC_CTRL_COMMITTED)
		hdm_decommit(h, n);
	hdm_set_pair(h, CXL_HDM_DEC_BASE_LO(n), CXL_HDM_DEC_BASE_HI(n), d->base);
	hdm_set_pair(h, CXL_HDM_DEC_SIZE_LO(n), CXL_HDM_DEC_SIZE_HI(n), d->size);
	hdm_set_pair(h, CXL_HDM_DEC_SKIP_LO(n), CXL_HDM_DEC_SKIP_HI(n), d->skip);
	uint32_t c = d->ctrl & (CXL_HDM_DEC_CTRL_RWL_MASK & ~CXL_HDM_DEC_CTRL_COMMIT);
	if (commit)
		c |= CXL_HDM_DEC_CTRL_COMMIT;
	vcxl_rf_set32(h->rf, ctrl, c);
	if (!commit)
		return VCXL_HDM_OK;
	return hdm_commit(h, n);
}

/* Device address of hpa within committed decoder i (CXL r3.1 8.2.4.20.13). */
static uint64_t hdm_dpa_offset(const struct vcxl_hdm_decoder *d, uint64_t off)
{
	unsigned iw = (unsigned)VCXL_FIELD_GET(CXL_HDM_DEC_CTRL_IW, d->ctrl);
	unsigned g = 8 + (unsigned)VCXL_FIELD_GET(CXL_HDM_DEC_CTRL_IG, d->ctrl);
	unsigned k = iw_select_bits(iw);
	uint64_t low = off & ((1ull << g) - 1);
	uint64_t high = off >> (g + k);

	if (iw >= CXL_HDM_IW_3)
		high /= 3;
	return low | (high << g);
}

/* Find the committed decoder that decodes hpa; the walk stops at the first
 * uncommitted decoder (decoders commit in order). */
static bool hdm_find(const struct vcxl_hdm *h, uint64_t hpa, struct vcxl_hdm_decoder *out,
		     uint64_t *dpa)
{
	uint32_t gctrl = vcxl_rf_get32(h->rf, HDM_REG(h, CXL_HDM_GLOBAL_CTRL));
	uint64_t dpa_base = 0;

	if (!(gctrl & CXL_HDM_GCTRL_ENABLE))
		return false;
	for (unsigned i = 0; i < h->count; i++) {
		struct vcxl_hdm_decoder d;
		vcxl_hdm_decoder_get(h, i, &d);
		if (!d.committed || !d.ways)
			return false;
		dpa_base += d.skip;
		if (hpa >= d.base && hpa - d.base < d.size) {
			*out = d;
			*dpa = dpa_base + hdm_dpa_offset(&d, hpa - d.base);
			return true;
		}
		dpa_base += d.size / d.ways;
	}
	return false;
}

bool vcxl_hdm_decode(const struct vcxl_hdm *h, uint64_t hpa, uint64_t *dpa)
{
	struct vcxl_hdm_decoder d;
	return hdm_find(h, hpa, &d, dpa);
}

bool vcxl_hdm_decode_contig(const struct vcxl_hdm *h, uint64_t hpa, uint64_t len, uint64_t *dpa)
{
	struct vcxl_hdm_decoder d;
	uint64_t last;

	if (len == 0 || __builtin_add_overflow(hpa, len - 1, &last) || !hdm_find(h, hpa, &d, dpa))
		return false;
	if (last - d.base >= d.size)
		return false;
	if (d.ways == 1)
		return true;
	/* interleaved: contiguous only within one granule */
	uint64_t g = d.granularity;
	return (hpa - d.base) / g == (last - d.base) / g;
}

/* CXL r3.1 8.2.4.1: walk the capability array of a CM range. Offsets are CM-relative. */
int vcxl_comp_find_cap(vcxl_cfg_read32_fn rd, void *opaque, uint16_t id, uint32_t *off)
{
	uint32_t hdr;
	int rc = rd(opaque, 0, &hdr);
	if (rc)
		return rc;
	if (VCXL_FIELD_GET(CXL_CM_CAP_HDR_ID, hdr) != CXL_CM_CAP_ID_ARRAY)
		return -ENODEV;
	unsigned n = (unsigned)VCXL_FIELD_GET(CXL_CM_CAP_HDR_ARRAY_SIZE, hdr);
	for (unsigned k = 1; k <= n; k++) {
		uint32_t e;
		rc = rd(opaque, 4 * k, &e);
		if (rc)
			return rc;
		/* NULL entries are allowed and skipped */
		if (VCXL_FIELD_GET(CXL_CM_CAP_HDR_ID, e) == id && id) {
			uint32_t ptr = (uint32_t)VCXL_FIELD_GET(CXL_CM_CAP_PTR, e);
			if (ptr < 4 * (n + 1) || (ptr & 3))
				return -EINVAL;
			*off = ptr;
			return 0;
		}
	}
	return -ENOENT;
}
