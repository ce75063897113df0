// SPDX-License-Identifier: BSD-3-Clause
/*
 * vfio-cxl core: the pages of device memory the device writes itself, handed
 * to the client through DMA logging (docs/migration.md section 3).
 *
 * The client (QEMU, vmm/qemu 0016) keeps the CXL region as a migratable RAM
 * block mapped at the guest-physical base of every committed virtual HDM
 * decoder, maps those windows for DMA and logs them: on each dirty sync it
 * sends DMA_LOGGING_REPORT over them and copies the pages reported with the
 * guest's RAM, during pre-copy and in its final pass (the device is stopped
 * by then). A page the engine wrote (the backend's DPA dirty set) that a
 * committed decoder maps is reported at its guest-physical address and
 * forgotten by the backend, so that the stop-copy's DEVMEM section carries
 * only the pages no report returned (no decoder maps them, or no report came
 * after their last write). A page written again after a report is marked
 * again: the next report or DEVMEM has it.
 *
 * Only through a DMA window of the client that lies whole inside the
 * committed decoders' guest ranges: QEMU maps each decoder's window as its
 * own DMA window, while guest RAM a misprogrammed decoder overlaps is a
 * window reaching past it, whose pages the client copies as that RAM, not
 * as the CXL memory; such device pages stay for the stream.
 *
 * Trust: the client is the VM's own VMM; what it does with a report (copy
 * the pages, or not) only affects its own VM's migration. Nothing here
 * trusts its numbers: ranges are clipped to the window and the decoders, the
 * decoders to the region, and nothing is forgotten that is not in the
 * reply's bitmap.
 */
#include <errno.h>
#include <string.h>

#include "vdev_priv.h"
#include "common/migstream.h"

/* Device pages read from the backend per step: a 512-byte bitmap on the stack. */
#define REPORT_CHUNK_PAGES 4096u
#define REPORT_CHUNK_WORDS (REPORT_CHUNK_PAGES / 64)

static bool pow2(uint64_t x)
{
	return x && !(x & (x - 1));
}

/* Set the report's bits of the guest-physical bytes [lo, hi) (hi > lo). */
static void report_set(uint64_t *bitmap, uint64_t iova, uint64_t pgsize, uint64_t lo, uint64_t hi)
{
	for (uint64_t k = (lo - iova) / pgsize; k <= (hi - 1 - iova) / pgsize; k++)
		bitmap[k / 64] |= 1ull << (k % 64);
}

/* A committed decoder's guest range [*base, *end), sane (the commit rules
 * keep it 256 MiB granular inside the region); false for any other. */
static bool dec_range(struct vcxl_hdm *h, unsigned i, uint64_t *base, uint64_t *end)
{
	struct vcxl_hdm_decoder d;

	vcxl_hdm_decoder_get(h, i, &d);
	if (!d.committed || !d.size || d.base > UINT64_MAX - d.size ||
	    (d.base | d.size) % VCXL_MIG_PAGE)
		return false;
	*base = d.base;
	*end = d.base + d.size;
	return true;
}

/* Is guest-physical [lo, hi) covered by the committed decoders' ranges? */
static bool in_decoders(struct vcxl_hdm *h, uint64_t lo, uint64_t hi)
{
	bool moved = true;

	while (lo < hi && moved) {
		moved = false;
		for (unsigned i = 0; i < h->count && lo < hi; i++) {
			uint64_t b, e;
			if (dec_range(h, i, &b, &e) && b <= lo && lo < e) {
				lo = e;
				moved = true;
			}
		}
	}
	return lo >= hi;
}

/*
 * Guest pages [gpa, gpa + n pages) of a decoder, region pages from rpage on:
 * read the backend's dirty bits, report the parts inside [lo, hi) (bit k of
 * the report: [iova + k * pgsize, +pgsize)), forget the pages [lo, hi) holds
 * whole. Returns pages reported or -errno (nothing of this chunk forgotten).
 */
static int64_t report_chunk(struct vcxl_vdev *v, uint64_t gpa, uint64_t rpage, uint64_t n,
			    uint64_t iova, uint64_t lo, uint64_t hi, uint64_t pgsize,
			    uint64_t *bitmap)
{
	const struct vcxl_backend_ops *o = v->be->ops;
	uint64_t dirty[REPORT_CHUNK_WORDS], take[REPORT_CHUNK_WORDS];
	uint64_t dpa = v->region->dpa + rpage * VCXL_MIG_PAGE;
	int64_t count = 0;
	int rc;

	if ((rc = o->mig_dirty_get(v->be->dev, dpa, n * VCXL_MIG_PAGE, dirty)))
		return rc;
	memset(take, 0, sizeof(take));
	for (uint64_t i = 0; i < n; i++) {
		uint64_t g = gpa + i * VCXL_MIG_PAGE, ge = g + VCXL_MIG_PAGE;

		if (!dirty[i / 64]) {
			i |= 63; /* a word of clean pages */
			continue;
		}
		if (!(dirty[i / 64] & (1ull << (i % 64))))
			continue;
		if (ge <= lo || g >= hi)
			continue;
		report_set(bitmap, iova, pgsize, g > lo ? g : lo, ge < hi ? ge : hi);
		count++;
		/* a page only partly inside (report pages under 4 KiB) stays */
		if (g >= lo && ge <= hi)
			take[i / 64] |= 1ull << (i % 64);
	}
	if (count && (rc = o->mig_dirty_clear(v->be->dev, dpa, n * VCXL_MIG_PAGE, take)))
		return rc;
	return count;
}

int64_t vmig_dirty_report(void *dev, uint64_t iova, uint64_t len, uint64_t pgsize, uint64_t *bitmap,
			  uint64_t win, uint64_t win_len)
{
	struct vcxl_vdev *v = dev;
	const struct vcxl_backend_ops *o = v->be->ops;
	struct vcxl_hdm *h = &v->comp.hdm;
	uint64_t region = v->region->size, end = iova + len, wend = win + win_len;
	uint64_t lo = iova > win ? iova : win, hi;
	int64_t total = 0;

	if (!o->mig_dirty_get || !o->mig_dirty_clear)
		return -ENOTTY;
	if (!pow2(pgsize) || !len || end < iova || (iova | len) & (pgsize - 1) || !win_len ||
	    wend < win)
		return -EINVAL;
	hi = end < wend ? end : wend;
	/* the client's window there must be the CXL memory's: inside the decoders */
	if (lo >= hi || !in_decoders(h, win, wend))
		return 0;
	for (unsigned i = 0; i < h->count; i++) {
		uint64_t roff, b, e, dlo, dhi, p0, p1;

		if (!dec_range(h, i, &b, &e))
			continue;
		roff = vcomp_region_off(h, i);
		if (roff % VCXL_MIG_PAGE || roff > region || e - b > region - roff)
			continue;
		dlo = lo > b ? lo : b;
		dhi = hi < e ? hi : e;
		if (dlo >= dhi)
			continue;
		/* the decoder's pages [dlo, dhi) touches, whole or in part */
		p0 = (dlo - b) / VCXL_MIG_PAGE;
		p1 = (dhi - b - 1) / VCXL_MIG_PAGE + 1;
		for (uint64_t p = p0; p < p1; p += REPORT_CHUNK_PAGES) {
			uint64_t n = p1 - p < REPORT_CHUNK_PAGES ? p1 - p : REPORT_CHUNK_PAGES;
			int64_t c = report_chunk(v, b + p * VCXL_MIG_PAGE, roff / VCXL_MIG_PAGE + p,
						 n, iova, dlo, dhi, pgsize, bitmap);
			if (c < 0)
				return total ? total : c;
			total += c;
		}
	}
	return total;
}
