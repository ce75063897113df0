// SPDX-License-Identifier: BSD-3-Clause
/*
 * vfio-user migration v2 (QEMU docs/interop/vfio-user.rst "VFIO_USER_DEVICE_FEATURE",
 * "VFIO_USER_MIG_DATA_READ", "VFIO_USER_MIG_DATA_WRITE"; docs/migration.md):
 *   DEVICE_FEATURE   MIGRATION (STOP_COPY), MIG_DEVICE_STATE (the state
 *                    machine), MIG_DATA_SIZE (a bound, exact in STOP_COPY),
 *                    DMA_LOGGING_START/STOP/REPORT (ranges inline, bitmap in
 *                    the reply)
 *   MIG_DATA_READ    the saved stream, in the client's chunks; a short read ends it
 *   MIG_DATA_WRITE   the stream to load, appended until RESUMING -> STOP loads it
 * The state machine is the kernel's (enum vfio_device_mig_state) without the
 * P2P and PRE_COPY states. The device does the work through the device
 * table's mig_* entries (vfio_cxl.h); DMA logging is bookkept here, since
 * every DMA write of the device passes through this connection (dma_xfer.c).
 */
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "conn.h"

/* Logged ranges and their bitmaps a client may ask for. */
#define MIG_LOG_MAX_RANGES 1024
#define MIG_LOG_MAX_BITMAP (64ull << 20)   /* bytes of bitmap over all ranges */
#define MIG_LOG_MIN_PGSIZE VCXL_SRV_PGSIZE /* a smaller hint gets this */
#define MIG_LOG_MAX_PGSIZE (1ull << 30)
#define FEAT_HDR	   sizeof(struct vfio_device_feature)

static bool state_supported(uint32_t s)
{
	switch (s) {
	case VFIO_DEVICE_STATE_ERROR:
	case VFIO_DEVICE_STATE_STOP:
	case VFIO_DEVICE_STATE_RUNNING:
	case VFIO_DEVICE_STATE_STOP_COPY:
	case VFIO_DEVICE_STATE_RESUMING:
		return true;
	}
	return false; /* RUNNING_P2P, PRE_COPY, PRE_COPY_P2P: not offered */
}

/* The direct arcs (vfio-user spec "Direct State Transitions", P2P and PRE_COPY removed). */
static bool mig_arc(uint32_t from, uint32_t to)
{
	switch (from) {
	case VFIO_DEVICE_STATE_RUNNING:
		return to == VFIO_DEVICE_STATE_STOP;
	case VFIO_DEVICE_STATE_STOP:
		return to == VFIO_DEVICE_STATE_RUNNING || to == VFIO_DEVICE_STATE_STOP_COPY ||
		       to == VFIO_DEVICE_STATE_RESUMING;
	case VFIO_DEVICE_STATE_STOP_COPY:
	case VFIO_DEVICE_STATE_RESUMING:
		return to == VFIO_DEVICE_STATE_STOP;
	}
	return false;
}

int vcxl_mig_next_state(uint32_t cur, uint32_t target, uint32_t *next)
{
	if (!state_supported(cur) || !state_supported(target) || cur == VFIO_DEVICE_STATE_ERROR ||
	    target == VFIO_DEVICE_STATE_ERROR)
		return -EINVAL;
	if (cur == target || mig_arc(cur, target)) {
		*next = target;
		return 0;
	}
	/* every other pair is two arcs through STOP, which saves nothing */
	if (mig_arc(cur, VFIO_DEVICE_STATE_STOP) && mig_arc(VFIO_DEVICE_STATE_STOP, target)) {
		*next = VFIO_DEVICE_STATE_STOP;
		return 0;
	}
	return -EINVAL;
}

const char *vcxl_mig_state_name(uint32_t state)
{
	switch (state) {
	case VFIO_DEVICE_STATE_ERROR:
		return "error";
	case VFIO_DEVICE_STATE_STOP:
		return "stop";
	case VFIO_DEVICE_STATE_RUNNING:
		return "running";
	case VFIO_DEVICE_STATE_STOP_COPY:
		return "stop-copy";
	case VFIO_DEVICE_STATE_RESUMING:
		return "resuming";
	case VFIO_DEVICE_STATE_RUNNING_P2P:
		return "running-p2p";
	case VFIO_USER_DEVICE_STATE_PRE_COPY:
		return "pre-copy";
	case VFIO_USER_DEVICE_STATE_PRE_COPY_P2P:
		return "pre-copy-p2p";
	}
	return "unknown";
}

static bool mig_capable(const struct vcxl_conn *c)
{
	const struct vcxl_dev_ops *o = c->ops;

	return o->mig_flags && o->mig_quiesce && o->mig_save && o->mig_load && o->mig_max_size &&
	       (o->mig_flags(c->dev) & VFIO_MIGRATION_STOP_COPY);
}

static void set_state(struct vcxl_conn *c, uint32_t s)
{
	c->mig.state = s;
	c->st.mig.state = s;
}

static void mig_fail(struct vcxl_conn *c, const char *why)
{
	c->st.mig.failures++;
	snprintf(c->st.mig.last_error, sizeof(c->st.mig.last_error), "%s", why);
}

/* ---- DMA logging ------------------------------------------------------- */

static void log_free(struct vcxl_conn *c)
{
	for (unsigned i = 0; i < c->mig.nranges; i++)
		free(c->mig.ranges[i].bits);
	free(c->mig.ranges);
	c->mig.ranges = NULL;
	c->mig.nranges = 0;
	c->mig.log_written = false;
	c->mig.logging = false;
	c->st.mig.logging = false;
}

static void dev_dirty(struct vcxl_conn *c, bool on)
{
	if (c->mig.dev_dirty == on || !c->ops->mig_dirty)
		return;
	if (!c->ops->mig_dirty(c->dev, on) || !on)
		c->mig.dev_dirty = on;
}

void conn_mig_log_write(struct vcxl_conn *c, uint64_t iova, uint64_t len)
{
	uint64_t ps = c->mig.log_pgsize;

	if (!c->mig.logging || !len)
		return;
	for (unsigned i = 0; i < c->mig.nranges; i++) {
		struct mig_log_range *r = &c->mig.ranges[i];
		uint64_t lo = iova > r->iova ? iova : r->iova;
		uint64_t end = iova + len, rend = r->iova + r->len;
		uint64_t hi = end < rend ? end : rend;

		if (lo >= hi)
			continue;
		for (uint64_t p = (lo - r->iova) / ps; p <= (hi - 1 - r->iova) / ps; p++)
			r->bits[p / 64] |= 1ull << (p % 64);
		c->mig.log_written = true;
	}
}

/* ---- client pages in the stream (capability "dirty_in_stop_copy") ------- */

/* The window holding the 4 KiB page at iova whole, mapped here (an fd) and
 * readable or writable; NULL for none. The device writes a window without an
 * fd through DMA_WRITE messages: the client wrote those pages itself and
 * tracks them as its own. */
static const struct vcxl_dma_map *page_window(const struct vcxl_conn *c, uint64_t iova, bool write)
{
	const struct vcxl_dma_map *mp = vcxl_dma_find(&c->dma, iova);
	uint32_t need = write ? VFIO_USER_F_DMA_REGION_WRITE : VFIO_USER_F_DMA_REGION_READ;

	if (!mp || !mp->ptr || !(mp->flags & need) || iova < mp->iova || mp->size < VCXL_MIG_PAGE ||
	    iova - mp->iova > mp->size - VCXL_MIG_PAGE)
		return NULL;
	return mp;
}

/*
 * The logged pages the device wrote since the last report that a window
 * mapped here holds, in 4 KiB pages: their count, up to max; with iovas, each
 * page's iova (8 bytes each) and its contents at data (4 KiB each), *err the
 * first copy's failure (a window no longer backed by the client's fd).
 */
static uint64_t dirty_pages(const struct vcxl_conn *c, uint64_t max, uint8_t *iovas, uint8_t *data,
			    int *err)
{
	uint64_t ps = c->mig.log_pgsize, n = 0;

	if (!c->mig.log_written)
		return 0; /* every bitmap is still zero */
	for (unsigned i = 0; i < c->mig.nranges; i++) {
		const struct mig_log_range *r = &c->mig.ranges[i];
		uint64_t npg = (r->len + ps - 1) / ps;

		for (uint64_t p = 0; p < npg; p++) {
			if (!r->bits[p / 64]) {
				p |= 63; /* a word of clean pages */
				continue;
			}
			if (!(r->bits[p / 64] & (1ull << (p % 64))))
				continue;
			for (uint64_t o = 0; o < ps; o += VCXL_MIG_PAGE) {
				uint64_t iova = r->iova + p * ps + o;
				const struct vcxl_dma_map *mp = page_window(c, iova, false);

				if (!mp)
					continue;
				if (iovas) {
					int rc = vcxl_dma_copy(data + n * VCXL_MIG_PAGE,
							       mp->ptr + (iova - mp->iova),
							       VCXL_MIG_PAGE);
					vcxl_mig_wr64(iovas + 8 * n, iova);
					if (rc && !*err)
						*err = rc;
				}
				if (++n == max)
					return n;
			}
		}
	}
	return n;
}

/* vcxl_mig_finish()'s tail: the DMAPAGES section {u64 page size, u64 count,
 * count iovas, count pages}, when the device wrote any; the logged bits stay
 * (a client that reports after all gets them too: the same bytes twice). */
static void save_dma_pages(struct vcxl_mig_buf *b, void *opaque)
{
	struct vcxl_conn *c = opaque;
	uint64_t n = dirty_pages(c, UINT64_MAX, NULL, NULL, NULL);
	int err = 0;
	uint8_t *p;

	if (!b->count_only)
		c->mig.dma_pages_saved = n;
	if (!n)
		return;
	if (n > VCXL_MIG_DMAPAGES_MAX / VCXL_MIG_PAGE) {
		b->err = b->err ? b->err : -EFBIG;
		return;
	}
	vcxl_mig_sec_begin(b, VCXL_MIG_SEC_DMAPAGES, 0);
	vcxl_mig_put_u64(b, VCXL_MIG_PAGE);
	vcxl_mig_put_u64(b, n);
	if ((p = vcxl_mig_reserve(b, n * (8 + VCXL_MIG_PAGE))))
		dirty_pages(c, n, p, p + 8 * n, &err);
	if (err && !b->err)
		b->err = err;
	vcxl_mig_sec_end(b);
}

/* Where a stream's DMAPAGES section is (pointers into the stream or its
 * iterator's decoding: valid until vcxl_mig_close) */
struct dma_pages {
	const uint8_t *iovas, *data;
	uint64_t n;
};

static bool page_writable(const void *opaque, uint64_t iova)
{
	return page_window(opaque, iova, true) != NULL;
}

/* A DMAPAGES payload checked against this client's windows (each page whole
 * in a writable window mapped here), nothing written: 0, or -EINVAL with err. */
static int dma_pages_check(const struct vcxl_conn *c, const uint8_t *p, uint64_t plen,
			   struct dma_pages *dp, char *err, size_t errlen)
{
	return vcxl_mig_dmapages_parse(p, plen, page_writable, c, &dp->iovas, &dp->data, &dp->n,
				       err, errlen);
}

/*
 * A stream's DMAPAGES section, if any, checked (dma_pages_check). Found by
 * its framing alone: the device's load checks the whole stream (checksums
 * included) before a page is written. A coded section is decoded by the full
 * reader into it (its payload lives until vcxl_mig_close). The stream is
 * hostile input.
 */
static int dma_pages_stage(const struct vcxl_conn *c, const uint8_t *st, size_t len,
			   struct vcxl_mig_iter *it, struct dma_pages *dp, char *err, size_t errlen)
{
	struct vcxl_mig_hdr h;
	const uint8_t *p;
	uint32_t type, flags;
	uint64_t plen;
	int rc;

	memset(dp, 0, sizeof(*dp));
	if (vcxl_mig_find(st, len, VCXL_MIG_SEC_DMAPAGES, &p, &plen, &flags) <= 0)
		return 0; /* none, or framing the device's load refuses */
	if (!(flags & VCXL_MIG_SEC_ZERO_RUNS))
		return dma_pages_check(c, p, plen, dp, err, errlen);
	if ((rc = vcxl_mig_open(it, st, len, &h, err, errlen)))
		return rc;
	while ((rc = vcxl_mig_next(it, &type, &flags, &p, &plen, err, errlen)) > 0)
		if (type == VCXL_MIG_SEC_DMAPAGES)
			return dma_pages_check(c, p, plen, dp, err, errlen);
	return rc;
}

/* The staged pages into the client's memory: 0 or the first copy's -errno. */
static int dma_pages_apply(const struct vcxl_conn *c, const struct dma_pages *dp)
{
	for (uint64_t i = 0; i < dp->n; i++) {
		uint64_t iova = vcxl_mig_rd64(dp->iovas + 8 * i);
		const struct vcxl_dma_map *mp = page_window(c, iova, true);
		int rc = mp ? vcxl_dma_copy(mp->ptr + (iova - mp->iova),
					    dp->data + i * VCXL_MIG_PAGE, VCXL_MIG_PAGE)
			    : -EFAULT;

		if (rc)
			return rc;
	}
	return 0;
}

static bool pow2(uint64_t x)
{
	return x && !(x & (x - 1));
}

/* DMA_LOGGING_START: {page_size, num_ranges, reserved, ranges[]} */
/* The stream buffer MIG_DATA_WRITE starts with (doubled as it grows) */
#define MIG_IN_FIRST (64u << 10)

/* The heap a save or load of an idle device grows into, at most (its decoded
 * register files, staging copies and stream: about 0.6 MiB for the model) */
#define MIG_WARM_HEAP (2u << 20)

/* Pages of device memory the device wrote that the stream would carry (its
 * DEVMEM section); an error counts as some. */
static bool dev_pages_pending(const struct vcxl_conn *c)
{
	return c->mig.dev_dirty && c->ops->mig_dirty_pending &&
	       c->ops->mig_dirty_pending(c->dev) != 0;
}

/*
 * Once before a migration's downtime (pre-copy's DMA_LOGGING_START on the
 * source, the arc into RESUMING on the destination): a save of the device's
 * state as it is, then that stream checked (source) or loaded back (RESUMING):
 * neither changes the device (a load of the state it saved leaves it as it
 * was, and in RESUMING the device's state is the stream's to replace anyway);
 * then MIG_WARM_HEAP of heap written and freed (main.c's mallopt keeps freed
 * heap mapped). A server process's first save and load otherwise fault in
 * their code and buffers (some 2 us a page fault on these VMs): make bench's
 * mig_arc_*_first measured 245 and 271 us for them, against 56 and 78 us once
 * warm, and the downtime would pay the difference; with the check alone
 * warming the destination, its load's commit and apply stayed cold (120 us
 * against 54). Failures do not matter here (a job mid-step: -EBUSY; a load
 * refused resets the device, which the stream replaces). No save when the
 * state would carry device memory pages (up to VCXL_MIG_DEVMEM_MAX): copying
 * them out and back held the loop, and every other device's client, 438 ms
 * for 240 MiB. The destination also checks an eventfd of its own
 * (conn_irq_warm): QEMU's config load sets the MSI-X eventfds again in the
 * downtime.
 */
static void mig_warm(struct vcxl_conn *c, bool load)
{
	struct vcxl_mig_buf b = {.max = (size_t)c->ops->mig_max_size(c->dev)};
	char err[VCXL_MIG_ERRMSG];
	void *heap;

	if (!dev_pages_pending(c) && !c->ops->mig_save(c->dev, &b)) {
		if (load)
			c->ops->mig_load(c->dev, b.data, b.len, err, sizeof(err));
		else if (c->ops->mig_check)
			c->ops->mig_check(c->dev, b.data, b.len, err, sizeof(err));
	}
	vcxl_mig_buf_free(&b);
	if (load)
		conn_irq_warm();
	if ((heap = malloc(MIG_WARM_HEAP))) {
		explicit_bzero(heap, MIG_WARM_HEAP); /* a store the compiler keeps */
		free(heap);
	}
}

static int log_start(struct vcxl_conn *c, struct vcxl_msg *m, struct reply *r)
{
	struct vfio_user_dma_logging_control ctl;
	const size_t rsz = sizeof(struct vfio_user_dma_logging_range);
	uint64_t bytes = 0, ps;
	unsigned n;

	if (m->len < FEAT_HDR + sizeof(ctl)) {
		proto_err(c, m, "DMA_LOGGING_START: payload %zu too short", m->len);
		return reply_error(r, EINVAL);
	}
	memcpy(&ctl, m->data + FEAT_HDR, sizeof(ctl));
	if (ctl.reserved || ctl.num_ranges > MIG_LOG_MAX_RANGES ||
	    m->len != FEAT_HDR + sizeof(ctl) + (size_t)ctl.num_ranges * rsz) {
		proto_err(c, m, "DMA_LOGGING_START: %u ranges in %zu bytes (at most %u)",
			  ctl.num_ranges, m->len, MIG_LOG_MAX_RANGES);
		return reply_error(r, ctl.num_ranges > MIG_LOG_MAX_RANGES ? E2BIG : EINVAL);
	}
	if (!pow2(ctl.page_size) || ctl.page_size > MIG_LOG_MAX_PGSIZE) {
		proto_err(c, m, "DMA_LOGGING_START: page size 0x%llx",
			  (unsigned long long)ctl.page_size);
		return reply_error(r, EINVAL);
	}
	if (c->mig.logging) {
		proto_err(c, m, "DMA_LOGGING_START: logging already started");
		return reply_error(r, EBUSY);
	}
	/* the vfio-user spec lets the device pick its page size: at least 4 KiB */
	ps = ctl.page_size < MIG_LOG_MIN_PGSIZE ? MIG_LOG_MIN_PGSIZE : ctl.page_size;
	n = ctl.num_ranges ? ctl.num_ranges : c->dma.n; /* 0: every write = every window */
	struct mig_log_range *rg = calloc(n ? n : 1, sizeof(*rg));
	if (!rg)
		return reply_error(r, ENOMEM);
	for (unsigned i = 0; i < n; i++) {
		struct vfio_user_dma_logging_range in;
		uint64_t base, end;

		if (ctl.num_ranges)
			memcpy(&in, m->data + FEAT_HDR + sizeof(ctl) + i * rsz, rsz);
		else
			in = (struct vfio_user_dma_logging_range){c->dma.maps[i].iova,
								  c->dma.maps[i].size};
		if (!in.length || in.iova + in.length < in.iova ||
		    (i && in.iova < rg[i - 1].iova + rg[i - 1].len)) {
			proto_err(c, m,
				  "DMA_LOGGING_START: range %u [0x%llx, +0x%llx) empty, "
				  "wrapping, or not above the one before",
				  i, (unsigned long long)in.iova, (unsigned long long)in.length);
			c->mig.ranges = rg;
			c->mig.nranges = i;
			log_free(c);
			return reply_error(r, EINVAL);
		}
		base = in.iova & ~(ps - 1);
		end = in.iova + in.length;
		rg[i].iova = base;
		rg[i].len = end - base;
		uint64_t words = ((end - base + ps - 1) / ps + 63) / 64;
		bytes += words * 8;
		if (bytes > MIG_LOG_MAX_BITMAP || !(rg[i].bits = calloc(words, 8))) {
			proto_err(c, m, "DMA_LOGGING_START: bitmaps over %llu bytes",
				  (unsigned long long)MIG_LOG_MAX_BITMAP);
			c->mig.ranges = rg;
			c->mig.nranges = i + 1;
			log_free(c);
			return reply_error(r, bytes > MIG_LOG_MAX_BITMAP ? E2BIG : ENOMEM);
		}
	}
	c->mig.ranges = rg;
	c->mig.nranges = n;
	c->mig.log_pgsize = ps;
	c->mig.log_written = false;
	c->mig.logging = true;
	c->st.mig.devmem_reported = 0;
	c->st.mig.logging = true;
	/* pages of device memory the device writes itself: in reports where a
	 * committed decoder maps them, else in the stream (section 3) */
	dev_dirty(c, true);
	vcxl_log(VCXL_LOG_INFO, "%s: migration: DMA logging started: %u ranges, %llu-byte pages",
		 conn_name(c), n, (unsigned long long)ps);
	mig_warm(c, false);
	/* the reply is the request, with the page size the device picked */
	ctl.page_size = ps;
	if (!(r->heap = malloc(m->len)))
		return reply_error(r, ENOMEM);
	memcpy(r->heap, m->data, m->len);
	memcpy((uint8_t *)r->heap + FEAT_HDR, &ctl, sizeof(ctl));
	reply_payload(r, r->heap, m->len);
	return 0;
}

/* The pages of device memory the device wrote that a committed guest decoder
 * maps into the report's range (docs/migration.md section 3), through each DMA
 * window of the client there: added to its bitmap, and left out of the
 * stop-copy stream. A failure leaves the pages not reported in the device's
 * set (the stream carries them); the pages the device forgot are in bm
 * whatever happened, so the reply goes out. */
static void log_report_devmem(struct vcxl_conn *c, const struct vfio_user_dma_logging_report *rep,
			      uint64_t *bm)
{
	uint64_t end = rep->iova + rep->length;

	if (!c->mig.dev_dirty || !c->ops->mig_dirty_report)
		return;
	for (unsigned i = 0; i < c->dma.n; i++) {
		const struct vcxl_dma_map *w = &c->dma.maps[i];
		int64_t n;

		if (w->iova >= end || w->iova + w->size <= rep->iova)
			continue;
		n = c->ops->mig_dirty_report(c->dev, rep->iova, rep->length, rep->page_size, bm,
					     w->iova, w->size);
		if (n < 0) {
			vcxl_log(VCXL_LOG_WARN,
				 "%s: migration: DMA_LOGGING_REPORT [0x%llx, +0x%llx): device "
				 "memory not reported (%s); the stream carries it",
				 conn_name(c), (unsigned long long)rep->iova,
				 (unsigned long long)rep->length, strerror((int)-n));
			return;
		}
		c->st.mig.devmem_reported += (uint64_t)n;
	}
}

/* DMA_LOGGING_REPORT: {iova, length, page_size}; the reply appends the bitmap
 * of [iova, iova + length) in page_size units, and the log is cleared there. */
static int log_report(struct vcxl_conn *c, struct vcxl_msg *m, struct reply *r, uint32_t argsz)
{
	struct vfio_user_dma_logging_report rep;
	struct mig_log_range *rg = NULL;
	uint64_t npg, words, need, ps;
	uint64_t *bm;

	if (m->len != FEAT_HDR + sizeof(rep)) {
		proto_err(c, m, "DMA_LOGGING_REPORT: payload %zu", m->len);
		return reply_error(r, EINVAL);
	}
	memcpy(&rep, m->data + FEAT_HDR, sizeof(rep));
	if (!c->mig.logging) {
		proto_err(c, m, "DMA_LOGGING_REPORT: logging not started");
		return reply_error(r, EINVAL);
	}
	if (!pow2(rep.page_size) || !rep.length || rep.iova + rep.length < rep.iova ||
	    (rep.iova | rep.length) & (rep.page_size - 1)) {
		proto_err(c, m, "DMA_LOGGING_REPORT: [0x%llx, +0x%llx) in pages of 0x%llx",
			  (unsigned long long)rep.iova, (unsigned long long)rep.length,
			  (unsigned long long)rep.page_size);
		return reply_error(r, EINVAL);
	}
	for (unsigned i = 0; i < c->mig.nranges; i++) {
		struct mig_log_range *x = &c->mig.ranges[i];
		if (rep.iova >= x->iova && rep.iova + rep.length <= x->iova + x->len)
			rg = x;
	}
	if (!rg) {
		proto_err(c, m, "DMA_LOGGING_REPORT: [0x%llx, +0x%llx) is in no logged range",
			  (unsigned long long)rep.iova, (unsigned long long)rep.length);
		return reply_error(r, EINVAL);
	}
	npg = rep.length / rep.page_size;
	words = (npg + 63) / 64;
	need = FEAT_HDR + sizeof(rep) + words * 8;
	if (need > c->cfg.max_xfer + (uint64_t)FEAT_HDR + sizeof(rep) ||
	    need > c->client_max_xfer + (uint64_t)FEAT_HDR + sizeof(rep)) {
		proto_err(c, m,
			  "DMA_LOGGING_REPORT: a bitmap of %llu bytes is over the transfer size",
			  (unsigned long long)(words * 8));
		return reply_error(r, E2BIG);
	}
	if (argsz < need) {
		proto_err(c, m, "DMA_LOGGING_REPORT: argsz %u, the reply needs %llu", argsz,
			  (unsigned long long)need);
		return reply_error(r, EINVAL);
	}
	if (!(r->heap = calloc(1, need)))
		return reply_error(r, ENOMEM);
	bm = (uint64_t *)((uint8_t *)r->heap + FEAT_HDR + sizeof(rep));
	ps = c->mig.log_pgsize;
	for (uint64_t k = 0; c->mig.log_written && k < npg; k++) { /* else all clean */
		uint64_t lo = rep.iova + k * rep.page_size, hi = lo + rep.page_size;
		uint64_t p0 = (lo - rg->iova) / ps, p1 = (hi - 1 - rg->iova) / ps;
		bool dirty = false;

		if (hi > rg->iova + rg->len)
			p1 = (rg->len - 1) / ps;
		if (p0 == p1 && p0 % 64 == 0 && npg - k >= 64 && p0 + 63 < rg->len / ps &&
		    !rg->bits[p0 / 64] && rep.page_size == ps) {
			k += 63; /* 64 clean pages, one to one: nothing to report or clear */
			continue;
		}
		for (uint64_t p = p0; p <= p1; p++)
			if (rg->bits[p / 64] & (1ull << (p % 64))) {
				dirty = true;
				/* read and clear, as the kernel's report: only whole log pages */
				if (p * ps >= lo - rg->iova && (p + 1) * ps <= hi - rg->iova)
					rg->bits[p / 64] &= ~(1ull << (p % 64));
			}
		if (dirty)
			bm[k / 64] |= 1ull << (k % 64);
	}
	log_report_devmem(c, &rep, bm);
	struct vfio_device_feature f;
	memcpy(&f, m->data, sizeof(f));
	f.argsz = (uint32_t)need;
	memcpy(r->heap, &f, sizeof(f));
	memcpy((uint8_t *)r->heap + FEAT_HDR, &rep, sizeof(rep));
	reply_payload(r, r->heap, need);
	return 0;
}

/* ---- the state machine -------------------------------------------------- */

static void drop_streams(struct vcxl_conn *c)
{
	vcxl_mig_buf_free(&c->mig.out);
	c->mig.out_off = 0;
	c->mig.out_pending = false;
	c->mig.save_soon = false;
	c->mig.out_err = 0;
	free(c->mig.in);
	c->mig.in = NULL;
	c->mig.in_len = c->mig.in_cap = 0;
	c->mig.in_bad = false;
	c->mig.preload = 0;
	c->mig.preload_due = false;
}

/* The server's sections after the device's, for a client that asked for them
 * (a save's stream or its size). */
static void stream_tail(struct vcxl_conn *c, struct vcxl_mig_buf *b)
{
	if (!c->mig.dirty_in_data || !c->mig.logging)
		return;
	b->tail = save_dma_pages;
	b->tail_opaque = c;
	if (b->max && b->max < SIZE_MAX / 2)
		b->max += VCXL_MIG_DMAPAGES_MAX + VCXL_MIG_DMAPAGES_MAX / VCXL_MIG_PAGE * 8 +
			  VCXL_MIG_SEC_HDR_LEN + 16;
}

/* The stream's device state into the device, its DMAPAGES section checked
 * first against the client's windows: 0, or -errno with err and the device
 * reset (the device checks its own sections and resets itself on a refusal). */
static int load_device(struct vcxl_conn *c, char *err, size_t errlen)
{
	struct vcxl_mig_iter it = {0};
	struct dma_pages dp;
	int rc = dma_pages_stage(c, c->mig.in, c->mig.in_len, &it, &dp, err, errlen);

	if (rc)
		c->ops->reset(c->dev);
	else
		rc = c->ops->mig_load(c->dev, c->mig.in, c->mig.in_len, err, errlen);
	vcxl_mig_close(&it);
	return rc;
}

/* Its DMAPAGES into the client's memory, checked again against the windows
 * mapped now (they may have changed since load_device): 0, or -errno with err
 * and the device reset. */
static int load_pages(struct vcxl_conn *c, char *err, size_t errlen)
{
	struct vcxl_mig_iter it = {0};
	struct dma_pages dp;
	int rc = dma_pages_stage(c, c->mig.in, c->mig.in_len, &it, &dp, err, errlen);

	if (!rc && (rc = dma_pages_apply(c, &dp)))
		snprintf(err, errlen, "client memory could not be written (%s)", strerror(-rc));
	if (rc)
		c->ops->reset(c->dev);
	vcxl_mig_close(&it);
	return rc;
}

/*
 * The device's state loaded while still RESUMING, once a write brought the
 * whole stream: the load is off the client's path to RESUMING -> STOP (QEMU
 * sends the stream in its iterable section and asks for STOP at the end of the
 * device's config section, milliseconds later). What the client sees does not
 * change: the write succeeds either way, and RESUMING -> STOP gives the load's
 * result. A write after it undoes it (preload_undo).
 */
static void preload(struct vcxl_conn *c)
{
	int rc = load_device(c, c->mig.preload_err, sizeof(c->mig.preload_err));

	c->mig.preload = rc ? rc : 1;
}

/* Bytes after the whole stream: the state it loaded goes (the device reset),
 * and RESUMING -> STOP loads the longer stream, which refuses it. */
static void preload_undo(struct vcxl_conn *c)
{
	if (c->mig.preload > 0)
		c->ops->reset(c->dev);
	c->mig.preload = 0;
}

/*
 * Before a request: a load the whole stream made due runs now, unless the
 * request is a DMA window's (or more of the stream). QEMU writes the stream in
 * its iterable section, then loads the sections before the device's config,
 * which remap guest memory (map/unmap requests) while its other threads (RCU,
 * the vCPU's, its I/O thread) keep both CPUs of a small host busy: a load then
 * takes a CPU from them, and one against the windows of that moment could
 * refuse pages the final windows take. The first other request (the device's
 * config write) is where the client needs the device again.
 */
void conn_mig_before_request(struct vcxl_conn *c, uint16_t cmd)
{
	if (!c->mig.preload_due || cmd == VFIO_USER_DMA_MAP || cmd == VFIO_USER_DMA_UNMAP ||
	    cmd == VFIO_USER_MIG_DATA_WRITE)
		return;
	c->mig.preload_due = false;
	preload(c);
}

/* RESUMING -> STOP: the stream written, all of it or nothing: the device's
 * state loaded (now or by preload), then the client's pages written. */
static int load_stream(struct vcxl_conn *c, char *err, size_t errlen)
{
	int rc = c->mig.preload;

	if (rc < 0) {
		snprintf(err, errlen, "%s", c->mig.preload_err);
		return rc;
	}
	if (!rc && (rc = load_device(c, err, errlen)))
		return rc;
	return load_pages(c, err, errlen);
}

/* Pages the device wrote that a report has not returned, in client or
 * device memory (the stream would carry them); an error counts as some. */
static bool dirty_pending(const struct vcxl_conn *c)
{
	if (c->mig.logging && dirty_pages(c, 1, NULL, NULL, NULL))
		return true;
	return dev_pages_pending(c);
}

/*
 * The device's state saved into the stream MIG_DATA_READ hands out, at entry
 * into STOP_COPY or, for a client with dirty_in_stop_copy while the device has
 * written pages no report returned, at its first read (or size query) there:
 * the device is stopped either way, and a report the client asks for in
 * between (QEMU's final sync of the device's own memory) leaves out of the
 * stream what it returned. 0 or -errno (then every read fails
 * with it until the state changes).
 */
static int stream_save(struct vcxl_conn *c)
{
	char err[VCXL_MIG_ERRMSG], pages[96] = "";
	int rc;

	c->mig.out_pending = false;
	c->mig.out.max = (size_t)c->ops->mig_max_size(c->dev);
	stream_tail(c, &c->mig.out);
	rc = c->ops->mig_save(c->dev, &c->mig.out);
	if (rc) {
		snprintf(err, sizeof(err), "device state not saved: %s%s", strerror(-rc),
			 rc == -EFBIG ? " (the device dirtied more of its memory than a "
					"stream carries)"
				      : "");
		vcxl_log(VCXL_LOG_ERROR, "%s: migration: %s", conn_name(c), err);
		mig_fail(c, err);
		drop_streams(c);
		c->mig.out_err = rc;
		return rc;
	}
	if (c->mig.out.tail)
		snprintf(pages, sizeof(pages),
			 "; %llu pages of client memory it wrote since the last report in the "
			 "stream",
			 (unsigned long long)c->mig.dma_pages_saved);
	c->st.mig.state_bytes = c->mig.out.len;
	vcxl_log(VCXL_LOG_INFO,
		 "%s: migration: stop-copy: device state of %zu bytes saved (%llu pages of "
		 "device memory went by DMA logging reports%s)",
		 conn_name(c), c->mig.out.len, (unsigned long long)c->st.mig.devmem_reported,
		 pages);
	return 0;
}

/* One direct arc; 0 or -errno (the state then as the arc left it). */
static int mig_step(struct vcxl_conn *c, uint32_t to)
{
	uint32_t from = c->mig.state;
	char err[VCXL_MIG_ERRMSG];
	int rc = 0;

	if (from == VFIO_DEVICE_STATE_RUNNING && to == VFIO_DEVICE_STATE_STOP) {
		rc = c->ops->mig_quiesce(c->dev, true);
	} else if (from == VFIO_DEVICE_STATE_STOP && to == VFIO_DEVICE_STATE_RUNNING) {
		rc = c->ops->mig_quiesce(c->dev, false);
	} else if (from == VFIO_DEVICE_STATE_STOP && to == VFIO_DEVICE_STATE_STOP_COPY) {
		drop_streams(c);
		c->st.mig.bytes_sent = 0;
		c->st.mig.stop_copy_since_ms = now_ms();
		/* for dirty_in_stop_copy: with pages to carry, at the first read or
		 * size query (stream_save); else once this transition's reply went
		 * out (conn_mig_after_reply), before the next request is read */
		c->mig.out_pending = c->mig.dirty_in_data;
		c->mig.save_soon = c->mig.dirty_in_data && !dirty_pending(c);
		if (!c->mig.out_pending && (rc = stream_save(c)))
			return rc;
	} else if (from == VFIO_DEVICE_STATE_STOP_COPY && to == VFIO_DEVICE_STATE_STOP) {
		int64_t t = now_ms() - c->st.mig.stop_copy_since_ms;
		c->st.mig.stop_copy_ms = t > 0 ? (uint64_t)t : 0;
		c->st.mig.stop_copy_since_ms = 0;
		vcxl_log(VCXL_LOG_INFO,
			 "%s: migration: stop-copy ended: %llu of %zu bytes read in %llu ms",
			 conn_name(c), (unsigned long long)c->mig.out_off, c->mig.out.len,
			 (unsigned long long)c->st.mig.stop_copy_ms);
		drop_streams(c);
	} else if (from == VFIO_DEVICE_STATE_STOP && to == VFIO_DEVICE_STATE_RESUMING) {
		drop_streams(c);
		c->st.mig.bytes_received = 0;
		c->st.mig.state_bytes = 0;
		mig_warm(c, true);
		/* MIG_DATA_WRITE's first buffer, faulted in now, not in the downtime */
		if ((c->mig.in = malloc(MIG_IN_FIRST))) {
			memset(c->mig.in, 0, MIG_IN_FIRST);
			c->mig.in_cap = MIG_IN_FIRST;
		}
	} else if (from == VFIO_DEVICE_STATE_RESUMING && to == VFIO_DEVICE_STATE_STOP) {
		err[0] = 0;
		if (c->mig.in_bad) {
			snprintf(err, sizeof(err),
				 "a MIG_DATA_WRITE was refused: stream incomplete");
			rc = -EINVAL;
			c->ops->reset(c->dev);
		} else {
			rc = load_stream(c, err, sizeof(err));
		}
		if (rc) {
			vcxl_log(VCXL_LOG_ERROR,
				 "%s: migration: device state refused (%zu bytes): %s; the device "
				 "is reset, DEVICE_RESET leaves the error state",
				 conn_name(c), c->mig.in_len, err[0] ? err : strerror(-rc));
			mig_fail(c, err[0] ? err : strerror(-rc));
			drop_streams(c);
			set_state(c, VFIO_DEVICE_STATE_ERROR);
			return rc;
		}
		vcxl_log(VCXL_LOG_INFO, "%s: migration: device state of %zu bytes loaded",
			 conn_name(c), c->mig.in_len);
		drop_streams(c);
	}
	if (rc) {
		snprintf(err, sizeof(err), "%s -> %s: %s", vcxl_mig_state_name(from),
			 vcxl_mig_state_name(to), strerror(-rc));
		vcxl_log(VCXL_LOG_ERROR, "%s: migration: %s", conn_name(c), err);
		mig_fail(c, err);
		return rc;
	}
	set_state(c, to);
	return 0;
}

static int mig_set_state(struct vcxl_conn *c, struct vcxl_msg *m, uint32_t target)
{
	uint32_t next;

	/* ERROR is no target, and only DEVICE_RESET leaves it (even for ERROR) */
	do {
		int rc = vcxl_mig_next_state(c->mig.state, target, &next);

		if (rc) {
			proto_err(c, m, "MIG_DEVICE_STATE: %s -> %s is not a transition",
				  vcxl_mig_state_name(c->mig.state), vcxl_mig_state_name(target));
			return rc;
		}
		if (next != c->mig.state && (rc = mig_step(c, next)))
			return rc;
	} while (c->mig.state != target);
	c->st.mig.transitions++;
	return 0;
}

void conn_mig_reset(struct vcxl_conn *c)
{
	if (c->mig.state != VFIO_DEVICE_STATE_RUNNING && c->ops->mig_quiesce)
		c->ops->mig_quiesce(c->dev, false);
	if (c->mig.state == VFIO_DEVICE_STATE_STOP_COPY)
		c->st.mig.stop_copy_since_ms = 0;
	drop_streams(c);
	log_free(c);
	dev_dirty(c, false);
	set_state(c, VFIO_DEVICE_STATE_RUNNING);
}

/* STOP_COPY's save for a dirty_in_stop_copy client whose device had no page
 * to carry: after the transition's reply, so that the client goes on (QEMU
 * stops its VM) while the server saves; no request comes in between. A
 * failure is every read's (c->mig.out_err), as for a save at the first read. */
void conn_mig_after_reply(struct vcxl_conn *c)
{
	if (!c->mig.save_soon)
		return;
	c->mig.save_soon = false;
	if (c->mig.out_pending && c->mig.state == VFIO_DEVICE_STATE_STOP_COPY)
		stream_save(c);
}

/* ---- DEVICE_FEATURE ------------------------------------------------------ */

/* Methods each feature has: GET, SET. */
static uint32_t feature_methods(uint32_t feature)
{
	switch (feature) {
	case VFIO_DEVICE_FEATURE_MIGRATION:
	case VFIO_DEVICE_FEATURE_MIG_DATA_SIZE:
	case VFIO_DEVICE_FEATURE_DMA_LOGGING_REPORT:
		return VFIO_DEVICE_FEATURE_GET;
	case VFIO_DEVICE_FEATURE_MIG_DEVICE_STATE:
		return VFIO_DEVICE_FEATURE_GET | VFIO_DEVICE_FEATURE_SET;
	case VFIO_DEVICE_FEATURE_DMA_LOGGING_START:
	case VFIO_DEVICE_FEATURE_DMA_LOGGING_STOP:
		return VFIO_DEVICE_FEATURE_SET;
	}
	return 0;
}

/* A GET's reply: the request's head with argsz grown, then data. */
static int reply_get(struct vcxl_conn *c, struct vcxl_msg *m, struct reply *r, uint32_t argsz,
		     const void *data, size_t len)
{
	struct vfio_device_feature f;

	if (argsz < FEAT_HDR + len) {
		proto_err(c, m, "argsz %u, the reply needs %zu", argsz, FEAT_HDR + len);
		return reply_error(r, EINVAL);
	}
	memcpy(&f, m->data, sizeof(f));
	f.argsz = (uint32_t)(FEAT_HDR + len);
	memcpy(r->small, &f, sizeof(f));
	memcpy(r->small + sizeof(f), data, len);
	reply_payload(r, r->small, FEAT_HDR + len);
	return 0;
}

static void reply_echo(struct vcxl_msg *m, struct reply *r)
{
	size_t n = m->len < sizeof(r->small) ? m->len : sizeof(r->small);

	memcpy(r->small, m->data, n);
	reply_payload(r, r->small, n);
}

static int stop_copy_size(struct vcxl_conn *c, uint64_t *len)
{
	struct vcxl_mig_buf b = {.count_only = true, .max = SIZE_MAX};
	int rc;

	if (c->mig.state == VFIO_DEVICE_STATE_STOP_COPY) {
		if (c->mig.out_pending)
			stream_save(c);
		*len = c->mig.out.len - c->mig.out_off;
		return c->mig.out_err;
	}
	stream_tail(c, &b);
	rc = c->ops->mig_save(c->dev, &b);
	*len = b.len;
	return rc;
}

int conn_handle_device_feature(struct vcxl_conn *c, struct vcxl_msg *m, struct reply *r)
{
	struct vfio_device_feature f;
	uint32_t feature, how, methods;

	if (!conn_msg_take(c, m, r, &f, sizeof(f)))
		return r->err;
	feature = f.flags & VFIO_DEVICE_FEATURE_MASK;
	how = f.flags & (VFIO_DEVICE_FEATURE_GET | VFIO_DEVICE_FEATURE_SET);
	if (f.argsz < sizeof(f) || (f.flags & ~VFIO_USER_FEATURE_KNOWN_FLAGS) ||
	    (how == (VFIO_DEVICE_FEATURE_GET | VFIO_DEVICE_FEATURE_SET) &&
	     !(f.flags & VFIO_DEVICE_FEATURE_PROBE)) ||
	    !(f.flags &
	      (VFIO_DEVICE_FEATURE_GET | VFIO_DEVICE_FEATURE_SET | VFIO_DEVICE_FEATURE_PROBE))) {
		proto_err(c, m, "argsz %u flags 0x%x", f.argsz, f.flags);
		return reply_error(r, EINVAL);
	}
	if (!mig_capable(c)) {
		/* the hardware backend: the client blocks migration (docs/hardware.md) */
		if (!c->mig.said_unsupported)
			vcxl_log(VCXL_LOG_INFO,
				 "%s: migration not offered: this device's backend cannot save its "
				 "state or track the device memory it writes (DEVICE_FEATURE %u: "
				 "ENOTTY)",
				 conn_name(c), feature);
		c->mig.said_unsupported = true;
		return reply_error(r, ENOTTY);
	}
	methods = feature_methods(feature);
	if (!methods) {
		vcxl_log(VCXL_LOG_DEBUG, "%s: DEVICE_FEATURE %u: not supported", conn_name(c),
			 feature);
		return reply_error(r, ENOTTY);
	}
	if ((how & methods) != how) {
		proto_err(c, m, "feature %u has no %s", feature,
			  how & VFIO_DEVICE_FEATURE_GET ? "GET" : "SET");
		return reply_error(r, EINVAL);
	}
	if (f.flags & VFIO_DEVICE_FEATURE_PROBE) {
		reply_echo(m, r);
		return 0;
	}
	switch (feature) {
	case VFIO_DEVICE_FEATURE_MIGRATION: {
		struct vfio_device_feature_migration mg = {.flags = c->ops->mig_flags(c->dev) &
								    VFIO_MIGRATION_STOP_COPY};
		return reply_get(c, m, r, f.argsz, &mg, sizeof(mg));
	}
	case VFIO_DEVICE_FEATURE_MIG_DATA_SIZE: {
		struct vfio_device_feature_mig_data_size ds;
		uint64_t len = 0;
		int rc = stop_copy_size(c, &len);

		if (rc && rc != -EFBIG) {
			proto_err(c, m, "MIG_DATA_SIZE: %s", strerror(-rc));
			return reply_error(r, -rc);
		}
		ds.stop_copy_length = len;
		return reply_get(c, m, r, f.argsz, &ds, sizeof(ds));
	}
	case VFIO_DEVICE_FEATURE_MIG_DEVICE_STATE: {
		struct vfio_device_feature_mig_state st = {.device_state = c->mig.state,
							   .data_fd = -1};
		int rc;

		if (how == VFIO_DEVICE_FEATURE_GET)
			return reply_get(c, m, r, f.argsz, &st, sizeof(st));
		if (m->len != sizeof(f) + sizeof(st)) {
			proto_err(c, m, "MIG_DEVICE_STATE: payload %zu", m->len);
			return reply_error(r, EINVAL);
		}
		memcpy(&st, m->data + sizeof(f), sizeof(st));
		if ((rc = mig_set_state(c, m, st.device_state)))
			return reply_error(r, -rc);
		reply_echo(m, r);
		return 0;
	}
	case VFIO_DEVICE_FEATURE_DMA_LOGGING_START:
		return log_start(c, m, r);
	case VFIO_DEVICE_FEATURE_DMA_LOGGING_STOP:
		if (c->mig.logging)
			vcxl_log(VCXL_LOG_INFO, "%s: migration: DMA logging stopped", conn_name(c));
		log_free(c);
		/* a stream already saved keeps its pages; none is needed any more */
		dev_dirty(c, false);
		reply_echo(m, r);
		return 0;
	case VFIO_DEVICE_FEATURE_DMA_LOGGING_REPORT:
		return log_report(c, m, r, f.argsz);
	}
	return reply_error(r, ENOTTY);
}

/* ---- MIG_DATA_READ / MIG_DATA_WRITE -------------------------------------- */

static uint32_t xfer_max(const struct vcxl_conn *c)
{
	return c->client_max_xfer < c->cfg.max_xfer ? c->client_max_xfer : c->cfg.max_xfer;
}

int conn_handle_mig_data_read(struct vcxl_conn *c, struct vcxl_msg *m, struct reply *r)
{
	struct vfio_user_mig_data d;
	size_t left, n;

	if (!conn_msg_take(c, m, r, &d, sizeof(d)))
		return r->err;
	if (!mig_capable(c)) {
		proto_err(c, m, "device not migratable");
		return reply_error(r, ENOTTY);
	}
	if (m->len != sizeof(d) || d.size > xfer_max(c) || d.argsz < sizeof(d) + (uint64_t)d.size) {
		proto_err(c, m, "argsz %u size %u (payload %zu, at most %u a read)", d.argsz,
			  d.size, m->len, xfer_max(c));
		return reply_error(r, EINVAL);
	}
	if (c->mig.state != VFIO_DEVICE_STATE_STOP_COPY) {
		proto_err(c, m, "device state %s: nothing to read (stop-copy only)",
			  vcxl_mig_state_name(c->mig.state));
		return reply_error(r, EINVAL);
	}
	if (c->mig.out_pending)
		stream_save(c);
	if (c->mig.out_err)
		return reply_error(r, -c->mig.out_err);
	left = c->mig.out.len - c->mig.out_off;
	n = d.size < left ? d.size : left;
	d.argsz = (uint32_t)(sizeof(d) + n);
	d.size = (uint32_t)n;
	memcpy(r->small, &d, sizeof(d));
	reply_payload(r, r->small, sizeof(d));
	if (n)
		reply_payload(r, c->mig.out.data + c->mig.out_off, n);
	c->mig.out_off += n;
	c->st.mig.bytes_sent += n;
	return 0;
}

int conn_handle_mig_data_write(struct vcxl_conn *c, struct vcxl_msg *m, struct reply *r)
{
	struct vfio_user_mig_data d;
	uint64_t max;

	if (!conn_msg_take(c, m, r, &d, sizeof(d)))
		return r->err;
	if (!mig_capable(c)) {
		proto_err(c, m, "device not migratable");
		return reply_error(r, ENOTTY);
	}
	if (d.argsz < sizeof(d) || d.size > xfer_max(c) || m->len != sizeof(d) + (size_t)d.size) {
		proto_err(c, m, "argsz %u size %u in a payload of %zu", d.argsz, d.size, m->len);
		if (c->mig.state == VFIO_DEVICE_STATE_RESUMING)
			c->mig.in_bad = true;
		return reply_error(r, EINVAL);
	}
	if (c->mig.state != VFIO_DEVICE_STATE_RESUMING) {
		proto_err(c, m, "device state %s: not resuming", vcxl_mig_state_name(c->mig.state));
		return reply_error(r, EINVAL);
	}
	max = c->ops->mig_max_size(c->dev);
	if (c->mig.in_len + d.size > max) {
		proto_err(c, m, "the stream grows past %llu bytes, the most this device takes",
			  (unsigned long long)max);
		c->mig.in_bad = true;
		return reply_error(r, EFBIG);
	}
	if (c->mig.in_len + d.size > c->mig.in_cap) {
		size_t cap = c->mig.in_cap ? c->mig.in_cap : MIG_IN_FIRST;
		uint8_t *p;

		while (cap < c->mig.in_len + d.size)
			cap *= 2;
		if (cap > max)
			cap = (size_t)max;
		if (!(p = realloc(c->mig.in, cap))) {
			c->mig.in_bad = true;
			return reply_error(r, ENOMEM);
		}
		c->mig.in = p;
		c->mig.in_cap = cap;
	}
	memcpy(c->mig.in + c->mig.in_len, m->data + sizeof(d), d.size);
	c->mig.in_len += d.size;
	c->st.mig.bytes_received += d.size;
	c->st.mig.state_bytes = c->mig.in_len;
	if (d.size) {
		preload_undo(c);
		c->mig.preload_due = vcxl_mig_whole(c->mig.in, c->mig.in_len);
	}
	return 0;
}
