// SPDX-License-Identifier: BSD-3-Clause
/*
 * vfio-cxl core: the device state of a migration (docs/migration.md). Save
 * writes the stream: the header with this device's geometry, the core's own
 * sections (virtual config space, the virtual DOE's exchange in flight, the
 * virtual component block with the HDM decoders, the trapped mailbox's
 * flags), the host-owned facts (compared on load, never taken), the
 * backend's sections, and the pages of the region the device wrote itself
 * since tracking started that no DMA logging report returned (vmig_dirty.c).
 * Load is hostile input: the whole stream is parsed
 * and checked into a staging copy (the backend stages its own), then
 * committed; on any error nothing is applied and the device is reset.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "vdev_priv.h"
#include "../common/sigbus_guard.h"
#include "common/migstream.h"

#define DOE_FIXED_DW   4u /* req_len, rsp_len, rsp_pos, busy */
#define DOE_REQ_WORDS  (sizeof(((struct vcxl_doe *)0)->req) / 4)
#define DOE_RSP_WORDS  (sizeof(((struct vcxl_doe *)0)->rsp) / 4)
#define VMBOX_LEN      12u
#define HOST_FIXED_LEN 48u
#define HOST_REG_MAX   64u /* bytes of one host register range compared */

struct vmig_stage {
	unsigned have; /* 1 << section type, for the core's */
	const uint8_t *vcfg, *vcomp;
	struct {
		uint32_t req_len, rsp_len, rsp_pos, busy;
		uint32_t req[DOE_REQ_WORDS];
		uint32_t rsp[DOE_RSP_WORDS];
	} doe;
	uint32_t mbox_refused, mbox_op, mbox_inflight;
	const uint8_t *devmem; /* DEVMEM payload */
	uint64_t devmem_pages;
	struct vcxl_rf_range *vcfg_take;
	unsigned vcfg_ntake;
	struct vcxl_mig_iter it; /* owns the decoded payloads staged above */
};

static bool vmig_capable(const struct vcxl_vdev *v)
{
	const struct vcxl_backend_ops *o = v->be->ops;

	return o->mig_save && o->mig_stage && o->mig_commit && o->mig_abort && o->mig_quiesce;
}

static void vmig_geom(struct vcxl_vdev *v, struct vcxl_mig_geom *g)
{
	memset(g, 0, sizeof(*g));
	g->vendor = v->dev->vendor;
	g->device = v->dev->device;
	g->class_code = v->dev->class_code;
	g->personality = v->dev->hostonly ? VCXL_MIG_PERS_TYPE3 : VCXL_MIG_PERS_ACCEL;
	g->guest_decoders = v->guest_decoders;
	g->host_decoders = v->dev->hdm_count;
	g->config_size = v->vcfg.size;
	g->mem_size = v->dev->dpa_capacity;
	g->region_size = v->region->size;
	for (unsigned i = 0; i < VCXL_MIG_NUM_BARS && i < VCXL_NUM_BARS; i++)
		g->bar_size[i] = v->bar[i].bi.size;
}

static int geom_check(struct vcxl_vdev *v, const struct vcxl_mig_geom *s, char *err, size_t errlen)
{
	struct vcxl_mig_geom h;

	vmig_geom(v, &h);
	if (s->vendor != h.vendor || s->device != h.device || s->class_code != h.class_code ||
	    s->personality != h.personality)
		return vcxl_mig_fail(
		    err, errlen,
		    "geometry: device %04x:%04x class %06x (%s) in the stream, this is "
		    "%04x:%04x class %06x (%s)",
		    s->vendor, s->device, s->class_code,
		    s->personality == VCXL_MIG_PERS_TYPE3 ? "type3" : "accel", h.vendor, h.device,
		    h.class_code, h.personality == VCXL_MIG_PERS_TYPE3 ? "type3" : "accel");
	if (s->mem_size != h.mem_size || s->region_size != h.region_size)
		return vcxl_mig_fail(
		    err, errlen,
		    "geometry: device memory 0x%llx, region 0x%llx in the stream; this "
		    "device: 0x%llx, 0x%llx (--mem-size, --region-size must match)",
		    (unsigned long long)s->mem_size, (unsigned long long)s->region_size,
		    (unsigned long long)h.mem_size, (unsigned long long)h.region_size);
	if (s->guest_decoders != h.guest_decoders || s->host_decoders != h.host_decoders)
		return vcxl_mig_fail(
		    err, errlen,
		    "geometry: %u virtual / %u device decoders in the stream, this "
		    "device %u / %u (--decoders must match)",
		    s->guest_decoders, s->host_decoders, h.guest_decoders, h.host_decoders);
	if (s->config_size != h.config_size)
		return vcxl_mig_fail(err, errlen,
				     "geometry: config space of %u bytes, this device %u",
				     s->config_size, h.config_size);
	for (unsigned i = 0; i < VCXL_MIG_NUM_BARS; i++)
		if (s->bar_size[i] != h.bar_size[i])
			return vcxl_mig_fail(
			    err, errlen, "geometry: BAR%u of 0x%llx bytes, this device 0x%llx", i,
			    (unsigned long long)s->bar_size[i], (unsigned long long)h.bar_size[i]);
	return 0;
}

/* Pages [0, region size) the device wrote since tracking started. */
static uint64_t *vmig_dirty_map(struct vcxl_vdev *v, uint64_t *npages, int *rc)
{
	const struct vcxl_backend_ops *o = v->be->ops;
	uint64_t n = v->region->size / VCXL_MIG_PAGE;
	uint64_t *map;

	*npages = n;
	*rc = 0;
	if (!o->mig_dirty_get)
		return NULL;
	map = calloc((n + 63) / 64 ? (n + 63) / 64 : 1, sizeof(uint64_t));
	if (!map) {
		*rc = -ENOMEM;
		return NULL;
	}
	*rc = o->mig_dirty_get(v->be->dev, v->region->dpa, n * VCXL_MIG_PAGE, map);
	if (*rc) {
		free(map);
		return NULL;
	}
	return map;
}

/* The host's facts: region placement and the host registers' values. */
static int host_regs_read(struct vcxl_vdev *v, unsigned i, uint8_t *out, uint32_t *len)
{
	const struct vcxl_variant_reg *r = &v->variant->host_regs[i];
	uint32_t n = r->len > HOST_REG_MAX ? HOST_REG_MAX : (uint32_t)r->len;

	*len = n & ~3u;
	for (uint32_t k = 0; k < *len; k += 4) {
		uint64_t x = 0;
		int rc = v->be->ops->bar_read(v->be->dev, r->bar, r->off + k, 4, &x);
		if (rc)
			return rc;
		for (unsigned b = 0; b < 4; b++)
			out[k + b] = (uint8_t)(x >> (8 * b));
	}
	return 0;
}

static void save_host(struct vcxl_vdev *v, struct vcxl_mig_buf *b)
{
	const struct vcxl_region *r = v->region;
	uint8_t regs[HOST_REG_MAX];

	vcxl_mig_sec_begin(b, VCXL_MIG_SEC_HOST, 0);
	vcxl_mig_put_u32(b, r->decoder);
	vcxl_mig_put_u32(b, r->firmware);
	vcxl_mig_put_u64(b, r->hpa);
	vcxl_mig_put_u64(b, r->size);
	vcxl_mig_put_u64(b, r->dpa);
	vcxl_mig_put_u64(b, r->skip);
	vcxl_mig_put_u32(b, v->variant->nhost_regs);
	vcxl_mig_put_u32(b, 0);
	for (unsigned i = 0; i < v->variant->nhost_regs; i++) {
		uint32_t n = 0;
		if (host_regs_read(v, i, regs, &n))
			b->err = b->err ? b->err : -EIO;
		vcxl_mig_put_u32(b, n);
		vcxl_mig_put_u32(b, 0);
		vcxl_mig_put(b, regs, n);
	}
	vcxl_mig_sec_end(b);
}

static void save_devmem(struct vcxl_vdev *v, struct vcxl_mig_buf *b)
{
	uint64_t n, count = 0;
	int rc;
	uint64_t *map = vmig_dirty_map(v, &n, &rc);
	uint8_t *mem;

	if (rc) {
		b->err = b->err ? b->err : rc;
		return;
	}
	/* most words are clean: no popcount call for them (the baseline x86-64
	 * ISA has no popcnt: libgcc's loop) */
	for (uint64_t w = 0; map && w < (n + 63) / 64; w++)
		if (map[w])
			count += (uint64_t)__builtin_popcountll(map[w]);
	if (!count) { /* none: the lists below would only walk the map */
		free(map);
		map = NULL;
	}
	mem = count ? vdev_region_map(v) : NULL;
	if (count * VCXL_MIG_PAGE > VCXL_MIG_DEVMEM_MAX) {
		b->err = b->err ? b->err : -EFBIG;
		free(map);
		return;
	}
	vcxl_mig_sec_begin(b, VCXL_MIG_SEC_DEVMEM, 0);
	vcxl_mig_put_u64(b, VCXL_MIG_PAGE);
	vcxl_mig_put_u64(b, count);
	for (uint64_t i = 0; map && i < n; i++)
		if (!map[i / 64])
			i |= 63; /* a word of clean pages */
		else if (map[i / 64] & (1ull << (i % 64)))
			vcxl_mig_put_u64(b, i);
	for (uint64_t i = 0; map && i < n; i++) {
		uint8_t *d;
		if (!map[i / 64]) {
			i |= 63;
			continue;
		}
		if (!(map[i / 64] & (1ull << (i % 64))))
			continue;
		d = vcxl_mig_reserve(b, VCXL_MIG_PAGE);
		if (d && (!mem || vcxl_guarded_memcpy(d, mem + i * VCXL_MIG_PAGE, VCXL_MIG_PAGE)))
			b->err = b->err ? b->err : -EIO;
	}
	free(map);
	vcxl_mig_sec_end(b);
}

int vmig_save(void *dev, struct vcxl_mig_buf *b)
{
	struct vcxl_vdev *v = dev;
	struct vcxl_mig_geom g;
	struct iovec iov[VCXL_RF_STATE_IOV];

	if (!vmig_capable(v))
		return -ENOTTY;
	vmig_geom(v, &g);
	vcxl_mig_begin(b, &g);

	vcxl_mig_put_section(b, VCXL_MIG_SEC_VCFG, 0, iov, vcxl_rf_state_iov(&v->vcfg, iov));

	if (v->has_doe) {
		const struct vcxl_doe *d = &v->doe;
		vcxl_mig_sec_begin(b, VCXL_MIG_SEC_VDOE, 0);
		vcxl_mig_put_u32(b, d->req_len);
		vcxl_mig_put_u32(b, d->rsp_len);
		vcxl_mig_put_u32(b, d->rsp_pos);
		vcxl_mig_put_u32(b, d->busy);
		for (unsigned i = 0; i < DOE_REQ_WORDS; i++)
			vcxl_mig_put_u32(b, d->req[i]);
		for (unsigned i = 0; i < d->rsp_len && i < DOE_RSP_WORDS; i++)
			vcxl_mig_put_u32(b, d->rsp[i]);
		vcxl_mig_sec_end(b);
	}

	vcxl_mig_put_section(b, VCXL_MIG_SEC_VCOMP, 0, iov, vcxl_rf_state_iov(&v->vcomp, iov));

	vcxl_mig_sec_begin(b, VCXL_MIG_SEC_VMBOX, 0);
	vcxl_mig_put_u32(b, v->mbox_refused);
	vcxl_mig_put_u32(b, v->mbox_refused_op);
	vcxl_mig_put_u32(b, v->mbox_inflight);
	vcxl_mig_sec_end(b);

	save_host(v, b);
	if (!b->err) {
		int rc = v->be->ops->mig_save(v->be->dev, b);
		if (rc && !b->err)
			b->err = rc;
	}
	save_devmem(v, b);
	vcxl_mig_finish(b);
	return b->err;
}

/* ---- load ---------------------------------------------------------------- */

/* The virtual config bytes the guest's view is made of: the EMUL dwords. */
static int vcfg_take_ranges(struct vcxl_vdev *v, struct vmig_stage *s)
{
	s->vcfg_take = calloc(VCFG_DWORDS, sizeof(*s->vcfg_take));
	if (!s->vcfg_take)
		return -ENOMEM;
	for (uint32_t d = 0; d < VCFG_DWORDS && d * 4 < v->vcfg.size; d++) {
		struct vcxl_rf_range *last =
		    s->vcfg_ntake ? &s->vcfg_take[s->vcfg_ntake - 1] : NULL;
		if (v->route[d] != VCFG_EMUL)
			continue;
		if (last && last->off + last->len == d * 4)
			last->len += 4;
		else
			s->vcfg_take[s->vcfg_ntake++] = (struct vcxl_rf_range){d * 4, 4};
	}
	return 0;
}

static int stage_vcfg(struct vcxl_vdev *v, struct vmig_stage *s, const uint8_t *p, uint64_t len,
		      char *err, size_t errlen)
{
	/* live fields (read-only bits the vdev itself sets): the DVSEC's Status2 and
	 * Range Size Low (refreshed from the device, Reset Complete), the DOE's
	 * Control, Status and Read Mailbox; every other read-only bit is checked */
	uint32_t dv = v->dvsec.base, doe = v->doe.base;
	struct vcxl_rf_range live[6] = {
	    {dv + CXL_DVSEC_STATUS2, 2},
	    {dv + CXL_DVSEC_RANGE_SIZE_LO(0), 4},
	    {dv + CXL_DVSEC_RANGE_SIZE_LO(1), 4},
	};
	unsigned nlive = 3;
	uint32_t bad = 0;
	int rc = vcfg_take_ranges(v, s);

	if (rc)
		return rc;
	if (v->has_doe) {
		live[nlive++] = (struct vcxl_rf_range){doe + PCI_DOE_CTRL, 4};
		live[nlive++] = (struct vcxl_rf_range){doe + PCI_DOE_STATUS, 4};
		live[nlive++] = (struct vcxl_rf_range){doe + PCI_DOE_READ, 4};
	}
	if (len != vcxl_rf_state_len(&v->vcfg))
		return vcxl_mig_fail(err, errlen, "VCFG: %llu bytes, expected %zu",
				     (unsigned long long)len, vcxl_rf_state_len(&v->vcfg));
	if (vcxl_rf_check_state(&v->vcfg, p, len, s->vcfg_take, s->vcfg_ntake, live, nlive, &bad))
		return vcxl_mig_fail(
		    err, errlen, "VCFG: config byte 0x%x differs from this device's layout", bad);
	s->vcfg = p;
	return 0;
}

static int stage_vdoe(struct vcxl_vdev *v, struct vmig_stage *s, const uint8_t *p, uint64_t len,
		      char *err, size_t errlen)
{
	struct vcxl_mig_rd r;

	if (!v->has_doe)
		return vcxl_mig_fail(err, errlen, "VDOE section for a device without DOE");
	vcxl_mig_rd_init(&r, p, len);
	s->doe.req_len = vcxl_mig_get_u32(&r);
	s->doe.rsp_len = vcxl_mig_get_u32(&r);
	s->doe.rsp_pos = vcxl_mig_get_u32(&r);
	s->doe.busy = vcxl_mig_get_u32(&r);
	if (r.bad || s->doe.req_len > DOE_REQ_WORDS || s->doe.rsp_len > DOE_RSP_WORDS ||
	    s->doe.rsp_pos > s->doe.rsp_len || s->doe.busy > 1)
		return vcxl_mig_fail(err, errlen, "VDOE: exchange state out of range");
	for (unsigned i = 0; i < DOE_REQ_WORDS; i++)
		s->doe.req[i] = vcxl_mig_get_u32(&r);
	for (unsigned i = 0; i < s->doe.rsp_len; i++)
		s->doe.rsp[i] = vcxl_mig_get_u32(&r);
	if (!vcxl_mig_rd_done(&r))
		return vcxl_mig_fail(err, errlen, "VDOE: %llu bytes do not match its lengths",
				     (unsigned long long)len);
	return 0;
}

/* Check the decoders of a staged VCOMP as the spec's and the vdev's commit
 * rules would: its HDM capability's registers (all the rules read) are
 * installed, checked and the old ones put back. */
static int check_decoders(struct vcxl_vdev *v, const uint8_t *st, char *err, size_t errlen)
{
	struct vcxl_hdm *h = &v->comp.hdm;
	struct vcxl_rf_range hdm = {h->off, CXL_HDM_CAP_SIZE(h->count)};
	uint8_t old[2 * CXL_HDM_CAP_SIZE(CXL_HDM_MAX_DECODERS_DEVICE)];
	int rc = 0;

	if (h->count > CXL_HDM_MAX_DECODERS_DEVICE)
		return vcxl_mig_fail(err, errlen, "VCOMP: %u decoders, at most %u", h->count,
				     CXL_HDM_MAX_DECODERS_DEVICE);
	vcxl_rf_save_range(&v->vcomp, hdm.off, hdm.len, old);
	vcxl_rf_load_state(&v->vcomp, st, &hdm, 1);
	for (unsigned i = 0; i < h->count && !rc; i++) {
		struct vcxl_hdm_decoder d;
		enum vcxl_hdm_commit_err e;

		vcxl_hdm_decoder_get(h, i, &d);
		if ((d.ctrl & CXL_HDM_DEC_CTRL_COMMITTED) && (d.ctrl & CXL_HDM_DEC_CTRL_COMMIT_ERR))
			rc = vcxl_mig_fail(err, errlen,
					   "VCOMP: decoder %u both Committed and in error", i);
		else if ((d.ctrl & CXL_HDM_DEC_CTRL_COMMITTED) &&
			 !(d.ctrl & CXL_HDM_DEC_CTRL_COMMIT))
			rc = vcxl_mig_fail(err, errlen,
					   "VCOMP: decoder %u Committed without Commit", i);
		else if (d.committed && (e = vcxl_hdm_check(h, i, &d)) != VCXL_HDM_OK)
			rc = vcxl_mig_fail(
			    err, errlen,
			    "VCOMP: decoder %u committed at 0x%llx size 0x%llx breaks the "
			    "commit rules here: %s",
			    i, (unsigned long long)d.base, (unsigned long long)d.size,
			    vcxl_hdm_err_str(e));
	}
	vcxl_rf_restore_range(&v->vcomp, hdm.off, hdm.len, old);
	return rc;
}

static int stage_vcomp(struct vcxl_vdev *v, struct vmig_stage *s, const uint8_t *p, uint64_t len,
		       char *err, size_t errlen)
{
	struct vcxl_hdm *h = &v->comp.hdm;
	struct vcxl_rf_range live[CXL_HDM_MAX_DECODERS_DEVICE];
	uint32_t bad = 0;

	if (len != vcxl_rf_state_len(&v->vcomp))
		return vcxl_mig_fail(err, errlen, "VCOMP: %llu bytes, expected %zu",
				     (unsigned long long)len, vcxl_rf_state_len(&v->vcomp));
	/* Committed and Error Not Committed are the decoder's answer, not the guest's */
	for (unsigned i = 0; i < h->count; i++)
		live[i] = (struct vcxl_rf_range){h->off + CXL_HDM_DEC_CTRL(i), 4};
	if (vcxl_rf_check_state(&v->vcomp, p, len, NULL, 0, live, h->count, &bad))
		return vcxl_mig_fail(
		    err, errlen,
		    "VCOMP: component register byte 0x%x differs from this device's layout", bad);
	s->vcomp = p;
	return check_decoders(v, p, err, errlen);
}

static int stage_vmbox(struct vmig_stage *s, const uint8_t *p, uint64_t len, char *err,
		       size_t errlen)
{
	struct vcxl_mig_rd r;

	vcxl_mig_rd_init(&r, p, len);
	s->mbox_refused = vcxl_mig_get_u32(&r);
	s->mbox_op = vcxl_mig_get_u32(&r);
	s->mbox_inflight = vcxl_mig_get_u32(&r);
	if (len != VMBOX_LEN || !vcxl_mig_rd_done(&r) || s->mbox_refused > 1 ||
	    s->mbox_op > 0xffff || s->mbox_inflight > 1)
		return vcxl_mig_fail(err, errlen, "VMBOX: bad mailbox flags");
	return 0;
}

/* Host-owned state: compared with this server's, never taken. */
static int check_host(struct vcxl_vdev *v, const uint8_t *p, uint64_t len, char *err, size_t errlen)
{
	const struct vcxl_region *r = v->region;
	struct vcxl_mig_rd rd;
	uint32_t dec, fw, nregs;
	uint64_t hpa, size, dpa, skip;

	vcxl_mig_rd_init(&rd, p, len);
	dec = vcxl_mig_get_u32(&rd);
	fw = vcxl_mig_get_u32(&rd);
	hpa = vcxl_mig_get_u64(&rd);
	size = vcxl_mig_get_u64(&rd);
	dpa = vcxl_mig_get_u64(&rd);
	skip = vcxl_mig_get_u64(&rd);
	nregs = vcxl_mig_get_u32(&rd);
	vcxl_mig_get_u32(&rd);
	if (rd.bad)
		return vcxl_mig_fail(err, errlen, "HOST truncated");
	if (dec != r->decoder || fw != r->firmware || size != r->size || dpa != r->dpa ||
	    skip != r->skip || hpa != r->hpa)
		return vcxl_mig_fail(
		    err, errlen,
		    "host region differs: decoder %u%s HPA 0x%llx size 0x%llx DPA 0x%llx "
		    "in the stream, here decoder %u%s HPA 0x%llx size 0x%llx DPA 0x%llx",
		    dec, fw ? " (firmware)" : "", (unsigned long long)hpa, (unsigned long long)size,
		    (unsigned long long)dpa, r->decoder, r->firmware ? " (firmware)" : "",
		    (unsigned long long)r->hpa, (unsigned long long)r->size,
		    (unsigned long long)r->dpa);
	if (vcxl_region_verify(r))
		return vcxl_mig_fail(err, errlen, "host decoder %u does not decode the region here",
				     r->decoder);
	if (nregs != v->variant->nhost_regs)
		return vcxl_mig_fail(err, errlen, "%u host register ranges in the stream, %u here",
				     nregs, v->variant->nhost_regs);
	for (unsigned i = 0; i < nregs; i++) {
		uint8_t mine[HOST_REG_MAX];
		uint32_t n = 0, sn = vcxl_mig_get_u32(&rd);
		const uint8_t *theirs;

		vcxl_mig_get_u32(&rd);
		theirs = vcxl_mig_get(&rd, sn);
		if (!theirs || host_regs_read(v, i, mine, &n) || n != sn || memcmp(mine, theirs, n))
			return vcxl_mig_fail(
			    err, errlen,
			    "host register range %u (BAR%u +0x%llx) differs from this "
			    "device's (the host programs it)",
			    i, v->variant->host_regs[i].bar,
			    (unsigned long long)v->variant->host_regs[i].off);
	}
	if (!vcxl_mig_rd_done(&rd))
		return vcxl_mig_fail(err, errlen, "HOST: trailing bytes");
	return 0;
}

static int stage_devmem(struct vcxl_vdev *v, struct vmig_stage *s, const uint8_t *p, uint64_t len,
			char *err, size_t errlen)
{
	struct vcxl_mig_rd r;
	uint64_t psz, n, prev = 0, pages = v->region->size / VCXL_MIG_PAGE;

	vcxl_mig_rd_init(&r, p, len);
	psz = vcxl_mig_get_u64(&r);
	n = vcxl_mig_get_u64(&r);
	if (r.bad || psz != VCXL_MIG_PAGE || n > pages || n > VCXL_MIG_DEVMEM_MAX / VCXL_MIG_PAGE ||
	    len - r.off != n * (8 + VCXL_MIG_PAGE))
		return vcxl_mig_fail(err, errlen, "DEVMEM: %llu pages of %llu bytes in %llu bytes",
				     (unsigned long long)n, (unsigned long long)psz,
				     (unsigned long long)len);
	for (uint64_t i = 0; i < n; i++) {
		uint64_t pg = vcxl_mig_get_u64(&r);
		if (pg >= pages || (i && pg <= prev))
			return vcxl_mig_fail(err, errlen,
					     "DEVMEM: page %llu out of order or outside the region",
					     (unsigned long long)pg);
		prev = pg;
	}
	s->devmem = p;
	s->devmem_pages = n;
	return 0;
}

/* A virtual decoder as the client's decoder notifications describe it */
struct dec_view {
	bool on;
	uint64_t base, size, off;
};

static void decoders_view(struct vcxl_vdev *v, struct dec_view *dv)
{
	struct vcxl_hdm *h = &v->comp.hdm;

	for (unsigned i = 0; i < h->count; i++) {
		struct vcxl_hdm_decoder d;

		vcxl_hdm_decoder_get(h, i, &d);
		dv[i] = (struct dec_view){d.committed, d.base, d.size, vcomp_region_off(h, i)};
	}
}

static bool dec_view_same(const struct dec_view *a, const struct dec_view *b)
{
	return a->on == b->on && a->base == b->base && a->size == b->size && a->off == b->off;
}

/* The decoders a load changed, as commits and decommits would have told
 * them: what went or moved first, then what came; one the load left as it
 * was is not notified (nor logged). */
static void notify_decoders(struct vcxl_vdev *v, const struct dec_view *was,
			    const struct dec_view *now)
{
	unsigned n = v->comp.hdm.count;

	for (unsigned i = 0; i < n && v->hdm_notify; i++)
		if (was[i].on && !dec_view_same(&was[i], &now[i]))
			v->hdm_notify(v->hdm_notify_opaque, i, false, was[i].base, was[i].size,
				      was[i].off);
	for (unsigned i = 0; i < n && v->hdm_notify; i++)
		if (now[i].on && !dec_view_same(&was[i], &now[i]))
			v->hdm_notify(v->hdm_notify_opaque, i, true, now[i].base, now[i].size,
				      now[i].off);
}

/* Everything checked: apply. Nothing here fails but a SIGBUS on the region. */
static int vmig_apply(struct vcxl_vdev *v, struct vmig_stage *s)
{
	uint8_t *mem = s->devmem_pages ? vdev_region_map(v) : NULL;
	struct dec_view was[CXL_HDM_MAX_DECODERS_DEVICE], now[CXL_HDM_MAX_DECODERS_DEVICE];
	int rc = 0;

	decoders_view(v, was);
	vcxl_rf_load_state(&v->vcfg, s->vcfg, s->vcfg_take, s->vcfg_ntake);
	if (v->has_doe) {
		struct vcxl_doe *d = &v->doe;
		d->req_len = s->doe.req_len;
		d->rsp_len = s->doe.rsp_len;
		d->rsp_pos = s->doe.rsp_pos;
		d->busy = s->doe.busy;
		memcpy(d->req, s->doe.req, sizeof(d->req));
		memcpy(d->rsp, s->doe.rsp, sizeof(d->rsp));
	}
	vcxl_rf_load_state(&v->vcomp, s->vcomp, NULL, 0);
	v->mbox_refused = s->mbox_refused;
	v->mbox_refused_op = (uint16_t)s->mbox_op;
	v->mbox_inflight = s->mbox_inflight;
	v->pending_cxl_reset = false;
	decoders_view(v, now);
	notify_decoders(v, was, now);
	if (s->devmem_pages && !mem)
		return -EIO;
	for (uint64_t i = 0; i < s->devmem_pages && !rc; i++) {
		uint64_t pg;
		memcpy(&pg, s->devmem + 16 + 8 * i, 8);
		pg = le64toh(pg);
		rc = vcxl_guarded_memcpy(mem + pg * VCXL_MIG_PAGE,
					 s->devmem + 16 + 8 * s->devmem_pages + i * VCXL_MIG_PAGE,
					 VCXL_MIG_PAGE);
	}
	return rc;
}

static int vmig_parse(struct vcxl_vdev *v, struct vmig_stage *s, const uint8_t *st, size_t len,
		      char *err, size_t errlen)
{
	const struct vcxl_backend_ops *o = v->be->ops;
	struct vcxl_mig_iter *it = &s->it;
	struct vcxl_mig_hdr h;
	unsigned need = 1u << VCXL_MIG_SEC_VCFG | 1u << VCXL_MIG_SEC_VCOMP |
			1u << VCXL_MIG_SEC_VMBOX | 1u << VCXL_MIG_SEC_HOST |
			(v->has_doe ? 1u << VCXL_MIG_SEC_VDOE : 0);
	uint32_t type, flags;
	const uint8_t *p;
	uint64_t plen;
	int rc;

	if ((rc = vcxl_mig_open(it, st, len, &h, err, errlen)))
		return rc;
	if ((rc = geom_check(v, &h.geom, err, errlen)))
		return rc;
	while ((rc = vcxl_mig_next(it, &type, &flags, &p, &plen, err, errlen)) > 0) {
		switch (type) {
		case VCXL_MIG_SEC_VCFG:
			rc = stage_vcfg(v, s, p, plen, err, errlen);
			break;
		case VCXL_MIG_SEC_VDOE:
			rc = stage_vdoe(v, s, p, plen, err, errlen);
			break;
		case VCXL_MIG_SEC_VCOMP:
			rc = stage_vcomp(v, s, p, plen, err, errlen);
			break;
		case VCXL_MIG_SEC_VMBOX:
			rc = stage_vmbox(s, p, plen, err, errlen);
			break;
		case VCXL_MIG_SEC_HOST:
			rc = check_host(v, p, plen, err, errlen);
			break;
		case VCXL_MIG_SEC_DEVMEM:
			rc = stage_devmem(v, s, p, plen, err, errlen);
			break;
		default:
			if (type >= VCXL_MIG_SEC_BE_FIRST && type <= VCXL_MIG_SEC_BE_LAST)
				rc = o->mig_stage(v->be->dev, type, p, plen, err, errlen);
			else if (type >= VCXL_MIG_SEC_SRV_FIRST && type <= VCXL_MIG_SEC_SRV_LAST)
				rc = 0; /* the server's, which loads them itself */
			else if (flags & VCXL_MIG_SEC_OPTIONAL)
				rc = 0; /* a newer minor's: skipped */
			else
				rc = vcxl_mig_fail(err, errlen,
						   "unknown section %u (a newer vcxl's?)", type);
		}
		if (rc)
			return rc < 0 ? rc : -EINVAL;
		if (type < 32)
			s->have |= 1u << type;
	}
	if (rc)
		return rc;
	if ((s->have & need) != need)
		return vcxl_mig_fail(
		    err, errlen, "the stream lacks sections (has 0x%x, needs 0x%x)", s->have, need);
	return 0;
}

static void vmig_stage_free(struct vmig_stage *s)
{
	vcxl_mig_close(&s->it);
	free(s->vcfg_take);
	free(s);
}

/* A stream parsed into a new staging copy *sp (vmig_stage_free() it):
 * vmig_parse()'s verdict; -errno with *sp NULL when there is none. */
static int vmig_stage_new(struct vcxl_vdev *v, const uint8_t *st, size_t len,
			  struct vmig_stage **sp, char *err, size_t errlen)
{
	*sp = NULL;
	if (!vmig_capable(v))
		return -ENOTTY;
	*sp = calloc(1, sizeof(**sp));
	if (!*sp)
		return -ENOMEM;
	if (err && errlen)
		err[0] = 0;
	return vmig_parse(v, *sp, st, len, err, errlen);
}

/* vmig_load()'s checks alone: the staging copy is dropped, nothing applied. */
int vmig_check(void *dev, const uint8_t *st, size_t len, char *err, size_t errlen)
{
	struct vcxl_vdev *v = dev;
	struct vmig_stage *s;
	int rc = vmig_stage_new(v, st, len, &s, err, errlen);

	if (!s)
		return rc;
	if (!rc && v->be->ops->mig_verify)
		rc = v->be->ops->mig_verify(v->be->dev, err, errlen);
	v->be->ops->mig_abort(v->be->dev);
	vmig_stage_free(s);
	return rc;
}

int vmig_load(void *dev, const uint8_t *st, size_t len, char *err, size_t errlen)
{
	struct vcxl_vdev *v = dev;
	struct vmig_stage *s;
	int rc = vmig_stage_new(v, st, len, &s, err, errlen);

	if (!s)
		return rc;
	rc = rc ?: v->be->ops->mig_commit(v->be->dev, err, errlen);
	if (!rc && (rc = vmig_apply(v, s)))
		vcxl_mig_fail(err, errlen, "device memory could not be written (%s)",
			      strerror(-rc));
	if (rc) {
		v->be->ops->mig_abort(v->be->dev);
		if (err && errlen && !err[0])
			snprintf(err, errlen, "%s", strerror(-rc));
		/* nothing of the stream stays: the device as after DEVICE_RESET */
		vdev_reset_apply(v, VDEV_RESET_VFIO);
	}
	vmig_stage_free(s);
	return rc;
}

uint64_t vmig_flags(void *dev)
{
	return vmig_capable(dev) ? VFIO_MIGRATION_STOP_COPY : 0;
}

int vmig_quiesce(void *dev, bool stop)
{
	struct vcxl_vdev *v = dev;

	return vmig_capable(v) ? v->be->ops->mig_quiesce(v->be->dev, stop) : -ENOTTY;
}

uint64_t vmig_max_size(void *dev)
{
	(void)dev;
	return VCXL_MIG_STATE_MAX + VCXL_MIG_DEVMEM_MAX + VCXL_MIG_DEVMEM_MAX / VCXL_MIG_PAGE * 8;
}

int vmig_dirty_pending(void *dev)
{
	struct vcxl_vdev *v = dev;
	uint64_t n;
	int rc, any = 0;
	uint64_t *map = vmig_dirty_map(v, &n, &rc);

	for (uint64_t w = 0; map && !any && w < (n + 63) / 64; w++)
		any = map[w] != 0;
	free(map);
	return rc ? rc : any;
}

int vmig_dirty(void *dev, bool on)
{
	struct vcxl_vdev *v = dev;

	if (!vmig_capable(v))
		return -ENOTTY;
	return v->be->ops->mig_dirty ? v->be->ops->mig_dirty(v->be->dev, on) : 0;
}
