/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Test helpers for the host and vfio-cxl cores:
 *  - a backend wrapper that counts operations, fails the k-th one, and lets
 *    a test rewrite what reads return (a malformed device without a new model);
 *  - a snapshot of every host-owned register, read through the raw backend;
 *  - a virtual clock whose sleeps advance time and poll the model.
 */
#ifndef VCXL_TESTS_BE_WRAP_H
#define VCXL_TESTS_BE_WRAP_H

#include <dirent.h>
#include <errno.h>
#include <stdbool.h>
#include <string.h>

#include "vfio-cxl/backend.h"
#include "cxl/cxl_regs.h"
#include "host/host_cxl.h"
#include "model/model.h"

struct bw;
typedef void (*bw_cfg_filter)(struct bw *w, uint32_t off, unsigned len, uint64_t *val);
typedef void (*bw_bar_filter)(struct bw *w, unsigned bar, uint64_t off, unsigned len,
			      uint64_t *val);

#define BW_LOG_MAX 256

struct bw_write {
	char space; /* 'c' config, 'b' BAR */
	unsigned bar;
	uint64_t off, val;
	unsigned len;
};

struct bw {
	struct vcxl_backend be; /* hand this to the code under test */
	struct vcxl_backend *inner;
	unsigned long ops;     /* counted operations so far */
	unsigned long fail_at; /* 1-based op that fails with fail_rc; 0 = none */
	int fail_rc;
	unsigned long cfg_writes, bar_writes, resets;
	bw_cfg_filter cfg_filter;
	bw_bar_filter bar_filter;
	void *priv;
	unsigned nlog; /* successful writes, in order (first BW_LOG_MAX) */
	struct bw_write log[BW_LOG_MAX];
};

static inline void bw_log(struct bw *w, char space, unsigned bar, uint64_t off, unsigned len,
			  uint64_t val)
{
	if (w->nlog < BW_LOG_MAX)
		w->log[w->nlog] = (struct bw_write){space, bar, off, val, len};
	w->nlog++;
}

static inline bool bw_tick(struct bw *w)
{
	w->ops++;
	return w->fail_at && w->ops == w->fail_at;
}

static inline int bw_cfg_read(void *dev, uint32_t off, unsigned len, uint64_t *val)
{
	struct bw *w = dev;
	if (bw_tick(w))
		return w->fail_rc;
	int rc = w->inner->ops->cfg_read(w->inner->dev, off, len, val);
	if (!rc && w->cfg_filter)
		w->cfg_filter(w, off, len, val);
	return rc;
}

static inline int bw_cfg_write(void *dev, uint32_t off, unsigned len, uint64_t val)
{
	struct bw *w = dev;
	if (bw_tick(w))
		return w->fail_rc;
	w->cfg_writes++;
	bw_log(w, 'c', 0, off, len, val);
	return w->inner->ops->cfg_write(w->inner->dev, off, len, val);
}

static inline int bw_bar_read(void *dev, unsigned bar, uint64_t off, unsigned len, uint64_t *val)
{
	struct bw *w = dev;
	if (bw_tick(w))
		return w->fail_rc;
	int rc = w->inner->ops->bar_read(w->inner->dev, bar, off, len, val);
	if (!rc && w->bar_filter)
		w->bar_filter(w, bar, off, len, val);
	return rc;
}

static inline int bw_bar_write(void *dev, unsigned bar, uint64_t off, unsigned len, uint64_t val)
{
	struct bw *w = dev;
	if (bw_tick(w))
		return w->fail_rc;
	w->bar_writes++;
	bw_log(w, 'b', bar, off, len, val);
	return w->inner->ops->bar_write(w->inner->dev, bar, off, len, val);
}

static inline int bw_bar_info(void *dev, unsigned bar, struct vcxl_bar_info *info)
{
	struct bw *w = dev;
	if (bw_tick(w))
		return w->fail_rc;
	return w->inner->ops->bar_info(w->inner->dev, bar, info);
}

static inline int bw_hpa_map(void *dev, uint64_t hpa, uint64_t size, int *fd, uint64_t *fdo)
{
	struct bw *w = dev;
	if (bw_tick(w))
		return w->fail_rc;
	return w->inner->ops->hpa_map(w->inner->dev, hpa, size, fd, fdo);
}

static inline int bw_reset(void *dev, enum vcxl_reset_kind kind)
{
	struct bw *w = dev;
	if (bw_tick(w))
		return w->fail_rc;
	w->resets++;
	return w->inner->ops->reset(w->inner->dev, kind);
}

static inline unsigned bw_irq_count(void *dev, enum vcxl_irq_type type)
{
	struct bw *w = dev;
	return w->inner->ops->irq_count ? w->inner->ops->irq_count(w->inner->dev, type) : 0;
}

static inline void bw_set_irq(void *dev, vcxl_irq_fn fn, void *opaque)
{
	struct bw *w = dev;
	if (w->inner->ops->set_irq_handler)
		w->inner->ops->set_irq_handler(w->inner->dev, fn, opaque);
}

static inline void bw_set_dma(void *dev, const struct vcxl_dma_ops *ops, void *opaque)
{
	struct bw *w = dev;
	if (w->inner->ops->set_dma)
		w->inner->ops->set_dma(w->inner->dev, ops, opaque);
}

static inline const char *bw_name(void *dev)
{
	(void)dev;
	return "bw";
}

static inline const char *bw_fd_unshareable(void *dev, int fd, bool *never)
{
	struct bw *w = dev;
	return w->inner->ops->fd_unshareable
		   ? w->inner->ops->fd_unshareable(w->inner->dev, fd, never)
		   : "no fd_unshareable";
}

static const struct vcxl_backend_ops bw_ops = {
    .cfg_read = bw_cfg_read,
    .cfg_write = bw_cfg_write,
    .bar_read = bw_bar_read,
    .bar_write = bw_bar_write,
    .bar_info = bw_bar_info,
    .hpa_map = bw_hpa_map,
    .reset = bw_reset,
    .irq_count = bw_irq_count,
    .set_irq_handler = bw_set_irq,
    .set_dma = bw_set_dma,
    .name = bw_name,
    .fd_unshareable = bw_fd_unshareable,
};

static inline void bw_init(struct bw *w, struct vcxl_backend *inner)
{
	memset(w, 0, sizeof(*w));
	w->inner = inner;
	w->be.ops = &bw_ops;
	w->be.dev = w;
	w->fail_rc = -EIO;
}

/* ---- raw register access (never through the wrapper) ------------------ */

static inline uint32_t raw_cfg32(struct vcxl_backend *be, uint32_t off)
{
	uint64_t v = 0;
	be->ops->cfg_read(be->dev, off, 4, &v);
	return (uint32_t)v;
}

static inline uint32_t raw_bar32(struct vcxl_backend *be, unsigned bar, uint64_t off)
{
	uint64_t v = 0;
	be->ops->bar_read(be->dev, bar, off, 4, &v);
	return (uint32_t)v;
}

/* Find a DVSEC by walking raw config (independent of the code under test). */
static inline uint32_t raw_find_dvsec(struct vcxl_backend *be, uint16_t id)
{
	uint32_t off = PCIE_EXT_CAP_START;
	for (int n = 0; off && n < 64; n++) {
		uint32_t h = raw_cfg32(be, off);
		if (h == 0 || h == ~0u)
			return 0;
		if ((h & 0xffff) == PCIE_EXT_CAP_ID_DVSEC &&
		    (raw_cfg32(be, off + PCIE_DVSEC_HEADER1) & 0xffff) == CXL_VENDOR_ID &&
		    (raw_cfg32(be, off + PCIE_DVSEC_HEADER2) & 0xffff) == id)
			return off;
		off = h >> 20;
	}
	return 0;
}

/* ---- host-owned state snapshot ------------------------------------------- */

#define HS_MAX 640

struct host_state {
	unsigned n;
	uint32_t where[HS_MAX]; /* (space << 28) | offset, for messages */
	uint32_t val[HS_MAX];
};

static inline void hs_add(struct host_state *s, uint32_t where, uint32_t v)
{
	if (s->n < HS_MAX) {
		s->where[s->n] = where;
		s->val[s->n++] = v;
	}
}

/*
 * Every register the guest must never change on the device: the whole
 * Device DVSEC (headers, Control, Lock, Ranges), the Register Locator, the
 * CM capability array, the HDM capability (all decoders), the RAS capability.
 * comp_bar/comp_off/hdm_off/ras_off/hdm_count come from a probed device.
 */
static inline void hs_take(struct vcxl_backend *be, const struct vcxl_cxl_dev *d,
			   struct host_state *s)
{
	memset(s, 0, sizeof(*s));
	for (uint32_t o = 0; o < d->dvsec_len; o += 4) {
		uint32_t v = raw_cfg32(be, d->dvsec + o);
		/* Status and Status2 (upper halves) and Info_Valid/Active are live */
		if (o == CXL_DVSEC_CTRL || o == CXL_DVSEC_CTRL2)
			v &= 0xffff;
		if (o == CXL_DVSEC_RANGE_SIZE_LO(0) || o == CXL_DVSEC_RANGE_SIZE_LO(1))
			v &= ~(CXL_DVSEC_RANGE_INFO_VALID | CXL_DVSEC_RANGE_ACTIVE);
		hs_add(s, d->dvsec + o, v);
	}
	for (uint32_t o = 0; o < d->regloc_len; o += 4)
		hs_add(s, d->regloc + o, raw_cfg32(be, d->regloc + o));
	for (uint32_t o = 0; o < 0x40; o += 4)
		hs_add(s, 0x10000000u | (CXL_CM_OFFSET + o),
		       raw_bar32(be, d->comp_bar, d->comp_off + CXL_CM_OFFSET + o));
	for (uint32_t o = 0; o < CXL_HDM_CAP_SIZE(d->hdm_count); o += 4)
		hs_add(s, 0x10000000u | (d->hdm_off + o),
		       raw_bar32(be, d->comp_bar, d->comp_off + d->hdm_off + o));
	if (d->ras_off)
		for (uint32_t o = 0; o < CXL_RAS_CAP_SIZE; o += 4)
			hs_add(s, 0x10000000u | (d->ras_off + o),
			       raw_bar32(be, d->comp_bar, d->comp_off + d->ras_off + o));
}

/* Index of the first difference, or -1. */
static inline int hs_diff(const struct host_state *a, const struct host_state *b)
{
	if (a->n != b->n)
		return 0;
	for (unsigned i = 0; i < a->n; i++)
		if (a->val[i] != b->val[i])
			return (int)i;
	return -1;
}

/* ---- virtual clock ---------------------------------------------------- */

struct vclock {
	uint64_t now;
	unsigned long sleeps;
	struct vcxl_model *model; /* polled on every sleep when set */
};

static inline uint64_t vclock_now(void *o)
{
	return ((struct vclock *)o)->now;
}

static inline void vclock_sleep(void *o, uint64_t ns)
{
	struct vclock *c = o;
	c->now += ns;
	c->sleeps++;
	if (c->model)
		vcxl_model_poll(c->model);
}

static inline void vclock_install(struct vcxl_host *h, struct vclock *c)
{
	struct vcxl_host_clock clk = {vclock_now, vclock_sleep, c};
	vcxl_host_set_clock(h, &clk);
}

static inline int count_fds(void)
{
	int n = 0;
	DIR *d = opendir("/proc/self/fd");
	if (!d)
		return -1;
	while (readdir(d))
		n++;
	closedir(d);
	return n;
}

#endif /* VCXL_TESTS_BE_WRAP_H */
