// SPDX-License-Identifier: BSD-3-Clause
/*
 * Host CXL core: DPA allocation and regions (what Linux's cxl_dpa_alloc,
 * cxl_create_region / cxl_decoder_commit / cxl_decoder_reset do for one
 * endpoint decoder, one way, no interleave).
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "host_priv.h"

/* Linux's cxld_await_commit: 20 polls of 1 ms; hardware must answer in 10 ms. */
#define COMMIT_POLL_NS (1 * NS_PER_MS)
#define COMMIT_TMO_NS  (20 * NS_PER_MS)

/* ---- DPA ----------------------------------------------------------------- */

static unsigned dpa_used(const struct vcxl_cxl_dev *d)
{
	unsigned n = 0;

	while (n < d->hdm_count && d->dpa[n].used)
		n++;
	return n;
}

static uint64_t dpa_end(const struct vcxl_cxl_dev *d, unsigned n)
{
	return n ? d->dpa[n - 1].dpa + d->dpa[n - 1].size : 0;
}

/* CXL r3.1 8.2.4.20.12: decoder n's DPA follows decoder n-1's, after skip */
int vcxl_dpa_alloc(struct vcxl_cxl_dev *d, uint64_t size, uint64_t skip, unsigned *decoder,
		   uint64_t *dpa)
{
	if (!size || (size & (CXL_HDM_GRANULE - 1)) || (skip & (CXL_HDM_GRANULE - 1)))
		return -EINVAL;
	unsigned n = dpa_used(d);
	if (n >= d->hdm_count)
		return -ENOSPC;
	uint64_t end = dpa_end(d, n);
	if (skip > d->dpa_capacity - end || size > d->dpa_capacity - end - skip)
		return -ENOSPC;
	d->dpa[n] =
	    (struct vcxl_dpa_slot){.skip = skip, .dpa = end + skip, .size = size, .used = true};
	*decoder = n;
	*dpa = end + skip;
	return 0;
}

int vcxl_dpa_free(struct vcxl_cxl_dev *d, unsigned decoder)
{
	unsigned n = dpa_used(d);

	if (decoder >= d->hdm_count || !d->dpa[decoder].used)
		return -EINVAL;
	if (decoder + 1 != n)
		return -EBUSY; /* Linux: only the last allocation can be freed */
	if (d->dpa[decoder].firmware)
		return -EPERM;
	memset(&d->dpa[decoder], 0, sizeof(d->dpa[decoder]));
	return 0;
}

uint64_t vcxl_dpa_avail(const struct vcxl_cxl_dev *d)
{
	unsigned n = dpa_used(d);

	if (n >= d->hdm_count)
		return 0;
	return d->dpa_capacity - dpa_end(d, n);
}

/* ---- Enables ------------------------------------------------------------ */

static int dvsec_ctrl_rd(struct vcxl_cxl_dev *d, uint32_t *v)
{
	return cfg_rd(d->be, d->dvsec + CXL_DVSEC_CTRL, 2, v);
}

/* CXL r3.1 8.2.4.20.2 + 8.1.3.2: HDM Decoder Enable, then Mem_Enable
 * (Linux's cxl_hdm_decode_init order). Records what it turned on. */
static int enable_decoding(struct vcxl_cxl_dev *d, bool *did_hdm, bool *did_mem, char *err,
			   size_t errlen)
{
	uint32_t g, ctrl, lock;
	int rc;

	*did_hdm = *did_mem = false;
	if ((rc = hdm_rd(d, CXL_HDM_GLOBAL_CTRL, &g)))
		return host_err(err, errlen, rc, "HDM Global Control read failed");
	if (!(g & CXL_HDM_GCTRL_ENABLE)) {
		if ((rc = hdm_wr(d, CXL_HDM_GLOBAL_CTRL, g | CXL_HDM_GCTRL_ENABLE)))
			return host_err(err, errlen, rc, "HDM Global Control write failed");
		*did_hdm = true;
	}
	if ((rc = dvsec_ctrl_rd(d, &ctrl)))
		return host_err(err, errlen, rc, "DVSEC Control read failed");
	if (ctrl & CXL_DVSEC_CTRL_MEM_EN)
		return 0;
	if ((rc = cfg_rd(d->be, d->dvsec + CXL_DVSEC_LOCK, 2, &lock)))
		return host_err(err, errlen, rc, "DVSEC Lock read failed");
	if (lock & CXL_DVSEC_LOCK_CONFIG)
		return host_err(err, errlen, -EPERM,
				"Mem_Enable is clear and DVSEC CONFIG_LOCK is set");
	if ((rc = cfg_wr(d->be, d->dvsec + CXL_DVSEC_CTRL, 2, ctrl | CXL_DVSEC_CTRL_MEM_EN)))
		return host_err(err, errlen, rc, "DVSEC Control write failed");
	*did_mem = true;
	if ((rc = dvsec_ctrl_rd(d, &ctrl)))
		return host_err(err, errlen, rc, "DVSEC Control read failed");
	if (!(ctrl & CXL_DVSEC_CTRL_MEM_EN))
		return host_err(err, errlen, -EIO, "Mem_Enable does not stick");
	return 0;
}

/* Undo, in reverse order, the enables this core turned on. */
static int disable_decoding(struct vcxl_cxl_dev *d, bool hdm, bool mem)
{
	uint32_t v;
	int rc = 0;

	if (mem && !(rc = dvsec_ctrl_rd(d, &v)))
		rc = cfg_wr(d->be, d->dvsec + CXL_DVSEC_CTRL, 2, v & ~CXL_DVSEC_CTRL_MEM_EN);
	if (rc)
		return rc;
	if (hdm && !(rc = hdm_rd(d, CXL_HDM_GLOBAL_CTRL, &v)))
		rc = hdm_wr(d, CXL_HDM_GLOBAL_CTRL, v & ~CXL_HDM_GCTRL_ENABLE);
	return rc;
}

/* When the last region goes and no decoder is in use, restore the enables. */
static void release_enables(struct vcxl_cxl_dev *d)
{
	if (d->regions || dpa_used(d))
		return;
	if (!disable_decoding(d, d->set_hdm_enable, d->set_mem_enable))
		d->set_hdm_enable = d->set_mem_enable = false;
}

/* ---- Decoder programming ------------------------------------------------ */

struct dec_regs {
	uint32_t v[7];
};

/* Linux's setup_hw_decoder write order (base, size, skip: high then low), CTRL last */
static const uint32_t dec_order[7] = {1, 0, 3, 2, 5, 4, 6};

static uint32_t dec_reg(unsigned n, unsigned i)
{
	static const uint32_t rel[7] = {0x00, 0x04, 0x08, 0x0c, 0x14, 0x18, 0x10};
	/* BASE_LO BASE_HI SIZE_LO SIZE_HI SKIP_LO SKIP_HI CTRL */
	return CXL_HDM_DEC_BASE_LO(n) + rel[i];
}

static int dec_save(struct vcxl_cxl_dev *d, unsigned n, struct dec_regs *s)
{
	for (unsigned i = 0; i < 7; i++) {
		int rc = hdm_rd(d, dec_reg(n, i), &s->v[i]);
		if (rc)
			return rc;
	}
	return 0;
}

static int dec_write(struct vcxl_cxl_dev *d, unsigned n, const struct dec_regs *s)
{
	for (unsigned k = 0; k < 7; k++) {
		int rc = hdm_wr(d, dec_reg(n, dec_order[k]), s->v[dec_order[k]]);
		if (rc)
			return rc;
	}
	return 0;
}

/* Put a decoder back as it was: Commit off first, then the registers. */
static void dec_restore(struct vcxl_cxl_dev *d, unsigned n, const struct dec_regs *s)
{
	uint32_t ctrl;

	if (!hdm_rd(d, CXL_HDM_DEC_CTRL(n), &ctrl) && (ctrl & CXL_HDM_DEC_CTRL_COMMIT))
		hdm_wr(d, CXL_HDM_DEC_CTRL(n), ctrl & ~CXL_HDM_DEC_CTRL_COMMIT);
	struct dec_regs t = *s;
	t.v[6] &= ~CXL_HDM_DEC_CTRL_COMMIT;
	dec_write(d, n, &t);
}

/* CXL r3.1 8.2.4.20.12: commit and wait for Committed or Error Not Committed */
static int dec_commit(struct vcxl_cxl_dev *d, unsigned n, uint64_t hpa, uint64_t size,
		      uint64_t skip, uint32_t ctrl_now, char *err, size_t errlen)
{
	struct vcxl_hdm_io io = hdm_io(d);
	uint32_t ctrl;
	int rc;

	/* one way, 256 B granularity, Target Range Type as the device: 0
	 * (device-coherent) for a Type-2, 1 (host-only) for a Type-3, as Linux's
	 * cxld_set_type; Lock-On-Commit left as found (Linux never sets it) */
	ctrl = vcxl_hdm_commit_ctrl(ctrl_now, d->hostonly);
	if ((rc = vcxl_hdm_io_program(&io, n, hpa, size, skip, ctrl)))
		return host_err(err, errlen, rc, "decoder %u: register write failed", n);
	uint64_t start = vcxl_host_now_ns(d->host);
	for (;;) {
		if ((rc = hdm_rd(d, CXL_HDM_DEC_CTRL(n), &ctrl)))
			return host_err(err, errlen, rc, "decoder %u: control read failed", n);
		if (ctrl & CXL_HDM_DEC_CTRL_COMMIT_ERR)
			return host_err(err, errlen, -EIO,
					"decoder %u: Error Not Committed (HPA 0x%llx size 0x%llx "
					"skip 0x%llx)",
					n, (unsigned long long)hpa, (unsigned long long)size,
					(unsigned long long)skip);
		if (ctrl & CXL_HDM_DEC_CTRL_COMMITTED)
			return 0;
		if (vcxl_host_now_ns(d->host) - start >= COMMIT_TMO_NS)
			return host_err(err, errlen, -ETIMEDOUT,
					"decoder %u: neither Committed nor Error within 20 ms", n);
		vcxl_host_sleep_ns(d->host, COMMIT_POLL_NS);
	}
}

/* Linux's cxl_decoder_reset: clear Commit, then size and base (and skip). */
static int dec_decommit(struct vcxl_cxl_dev *d, unsigned n)
{
	struct vcxl_hdm_io io = hdm_io(d);

	return vcxl_hdm_io_decommit(&io, n);
}

static int region_map(struct vcxl_region *r, char *err, size_t errlen)
{
	struct vcxl_backend *be = r->dev->be;
	int rc = be->ops->hpa_map(be->dev, r->hpa, r->size, &r->fd, &r->fd_offset);

	if (rc)
		return host_err(err, errlen, rc, "backend cannot map HPA 0x%llx+0x%llx (%d)",
				(unsigned long long)r->hpa, (unsigned long long)r->size, rc);
	if (r->fd < 0)
		return host_err(err, errlen, -EIO, "backend mapped the region without an fd");
	return 0;
}

/* Program decoder r->decoder for the region, keeping the old registers in
 * *saved for the caller's unwind. */
static int region_program(struct vcxl_region *r, struct dec_regs *saved, bool *wrote, char *err,
			  size_t errlen)
{
	struct vcxl_cxl_dev *d = r->dev;
	int rc = dec_save(d, r->decoder, saved);

	*wrote = false;
	if (rc)
		return host_err(err, errlen, rc, "decoder %u: read failed", r->decoder);
	if (saved->v[6] & CXL_HDM_DEC_CTRL_COMMITTED)
		return host_err(err, errlen, -EBUSY, "decoder %u is already committed", r->decoder);
	*wrote = true;
	return dec_commit(d, r->decoder, r->hpa, r->size, r->skip, saved->v[6], err, errlen);
}

int vcxl_region_create(struct vcxl_cxl_dev *d, uint64_t size, struct vcxl_region **out, char *err,
		       size_t errlen)
{
	struct dec_regs saved;
	bool did_hdm = false, did_mem = false, programmed = false;
	int rc;

	*out = NULL;
	if (size == 0)
		size = vcxl_dpa_avail(d);
	if (size == 0)
		return host_err(err, errlen, -ENOSPC, "no free device memory or decoder");
	if (size & (VCXL_HPA_GRANULE - 1))
		return host_err(err, errlen, -EINVAL,
				"region size 0x%llx is not a multiple of 256 MiB",
				(unsigned long long)size);
	struct vcxl_region *r = calloc(1, sizeof(*r));
	if (!r)
		return host_err(err, errlen, -ENOMEM, "out of memory");
	r->dev = d;
	r->size = size;
	r->fd = -1;
	rc = vcxl_dpa_alloc(d, size, 0, &r->decoder, &r->dpa);
	if (rc) {
		host_err(err, errlen, rc, "cannot allocate 0x%llx bytes of DPA (free 0x%llx)",
			 (unsigned long long)size, (unsigned long long)vcxl_dpa_avail(d));
		goto free_r;
	}
	r->skip = d->dpa[r->decoder].skip;
	rc = vcxl_host_hpa_alloc(
	    d->host, size, VCXL_WIN_RAM | (d->hostonly ? VCXL_WIN_TYPE3 : VCXL_WIN_TYPE2), &r->hpa);
	if (rc) {
		host_err(err, errlen, rc, "no Type-%d capable host window has 0x%llx bytes free",
			 d->hostonly ? 3 : 2, (unsigned long long)size);
		goto free_dpa;
	}
	r->in_window = true;
	if ((rc = enable_decoding(d, &did_hdm, &did_mem, err, errlen)))
		goto disable;
	rc = region_program(r, &saved, &programmed, err, errlen);
	if (rc)
		goto decommit;
	if ((rc = region_map(r, err, errlen)))
		goto decommit;
	d->set_hdm_enable |= did_hdm;
	d->set_mem_enable |= did_mem;
	d->regions++;
	*out = r;
	return 0;

decommit:
	if (programmed)
		dec_restore(d, r->decoder, &saved);
disable:
	disable_decoding(d, did_hdm, did_mem);
	vcxl_host_hpa_free(d->host, r->hpa, r->size);
free_dpa:
	vcxl_dpa_free(d, r->decoder);
free_r:
	free(r);
	return rc;
}

int vcxl_region_attach_firmware(struct vcxl_cxl_dev *d, struct vcxl_region **out, char *err,
				size_t errlen)
{
	struct vcxl_phys_decoder dec;
	int rc;

	*out = NULL;
	if (!d->fw_committed)
		return host_err(err, errlen, -ENOENT, "no firmware-committed decoder");
	if (d->fw_attached)
		return host_err(err, errlen, -EBUSY, "firmware region already attached");
	if ((rc = vcxl_cxl_read_decoder(d, 0, &dec)))
		return host_err(err, errlen, rc, "decoder 0 read failed");
	if (!dec.committed || dec.size != d->dpa[0].size || dec.skip != d->dpa[0].skip)
		return host_err(err, errlen, -ENXIO, "decoder 0 changed since probe");
	struct vcxl_region *r = calloc(1, sizeof(*r));
	if (!r)
		return host_err(err, errlen, -ENOMEM, "out of memory");
	r->dev = d;
	r->decoder = 0;
	r->hpa = dec.base;
	r->size = dec.size;
	r->skip = dec.skip;
	r->dpa = d->dpa[0].dpa;
	r->firmware = true;
	r->fd = -1;
	rc = vcxl_host_hpa_reserve(d->host, r->hpa, r->size);
	if (rc == 0) {
		r->in_window = true;
	} else if (rc == -ENOENT) {
		/* firmware put it outside every window we know: accept it as a
		 * fixed range (the platform owns that address space) */
		r->in_window = false;
	} else {
		host_err(err, errlen, rc == -EBUSY ? -EBUSY : rc,
			 "firmware region HPA 0x%llx+0x%llx %s", (unsigned long long)r->hpa,
			 (unsigned long long)r->size,
			 rc == -EBUSY	 ? "is already in use"
			 : rc == -ERANGE ? "straddles a host window edge"
					 : "is invalid");
		free(r);
		return rc;
	}
	if ((rc = region_map(r, err, errlen))) {
		if (r->in_window)
			vcxl_host_hpa_free(d->host, r->hpa, r->size);
		free(r);
		return rc;
	}
	d->regions++;
	d->fw_attached = true;
	*out = r;
	return 0;
}

void vcxl_region_destroy(struct vcxl_region *r)
{
	if (!r)
		return;
	struct vcxl_cxl_dev *d = r->dev;
	if (!r->firmware) {
		dec_decommit(d, r->decoder);
		vcxl_dpa_free(d, r->decoder);
	} else {
		d->fw_attached = false;
	}
	if (r->in_window)
		vcxl_host_hpa_free(d->host, r->hpa, r->size);
	d->regions--;
	release_enables(d);
	free(r);
}

int vcxl_region_verify(const struct vcxl_region *r)
{
	struct vcxl_cxl_dev *d = r->dev;
	struct vcxl_phys_decoder dec;
	uint32_t g, ctrl;

	if (vcxl_cxl_read_decoder(d, r->decoder, &dec) || hdm_rd(d, CXL_HDM_GLOBAL_CTRL, &g) ||
	    dvsec_ctrl_rd(d, &ctrl))
		return -EIO;
	if (!dec.committed || dec.base != r->hpa || dec.size != r->size || dec.skip != r->skip ||
	    !(g & CXL_HDM_GCTRL_ENABLE) || !(ctrl & CXL_DVSEC_CTRL_MEM_EN))
		return -EIO;
	return 0;
}

int vcxl_region_read_host_regs(const struct vcxl_region *r, struct vcxl_host_regs *out)
{
	struct vcxl_cxl_dev *d = r->dev;
	int rc;

	memset(out, 0, sizeof(*out));
	if ((rc = vcxl_cxl_read_decoder(d, r->decoder, &out->dec)) ||
	    (rc = hdm_rd(d, CXL_HDM_GLOBAL_CTRL, &out->hdm_global_ctrl)) ||
	    (rc = cfg_rd(d->be, d->dvsec + CXL_DVSEC_CTRL, 2, &out->dvsec_ctrl)) ||
	    (rc = cfg_rd(d->be, d->dvsec + CXL_DVSEC_LOCK, 2, &out->dvsec_lock)))
		return rc;
	for (unsigned i = 0; i < CXL_DVSEC_RANGE_MAX && i < d->ranges; i++) {
		const uint32_t reg[4] = {CXL_DVSEC_RANGE_SIZE_HI(i), CXL_DVSEC_RANGE_SIZE_LO(i),
					 CXL_DVSEC_RANGE_BASE_HI(i), CXL_DVSEC_RANGE_BASE_LO(i)};
		for (unsigned k = 0; k < 4; k++)
			if ((rc = cfg_rd(d->be, d->dvsec + reg[k], 4, &out->range[i][k])))
				return rc;
	}
	return 0;
}

int vcxl_region_renew(struct vcxl_region *r)
{
	struct vcxl_backend *be = r->dev->be;
	uint64_t off = 0;
	int fd = -1, rc;

	if (!be->ops->hpa_renew)
		return -EOPNOTSUPP;
	if ((rc = be->ops->hpa_renew(be->dev, r->hpa, r->size, &fd, &off)))
		return rc;
	if (fd < 0)
		return -EIO;
	r->fd = fd;
	r->fd_offset = off;
	return 0;
}

int vcxl_region_restore(struct vcxl_region *r, char *err, size_t errlen)
{
	struct vcxl_cxl_dev *d = r->dev;
	struct dec_regs saved;
	bool did_hdm, did_mem;
	int rc;

	if (!vcxl_region_verify(r))
		return 0;
	if (r->firmware)
		return host_err(err, errlen, -EPERM,
				"firmware region lost its decoder; cannot reprogram it");
	if ((rc = enable_decoding(d, &did_hdm, &did_mem, err, errlen)))
		return rc;
	d->set_hdm_enable |= did_hdm;
	d->set_mem_enable |= did_mem;
	if ((rc = dec_save(d, r->decoder, &saved)))
		return host_err(err, errlen, rc, "decoder %u: read failed", r->decoder);
	if (saved.v[6] & CXL_HDM_DEC_CTRL_COMMIT)
		hdm_wr(d, CXL_HDM_DEC_CTRL(r->decoder), saved.v[6] & ~CXL_HDM_DEC_CTRL_COMMIT);
	return dec_commit(d, r->decoder, r->hpa, r->size, r->skip,
			  saved.v[6] & ~CXL_HDM_DEC_CTRL_COMMIT, err, errlen);
}
