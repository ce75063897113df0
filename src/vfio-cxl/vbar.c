// SPDX-License-Identifier: BSD-3-Clause
/*
 * vfio-cxl core: the guest's BARs. The component block is trapped (served by
 * vcomp.c), so are the pages of the MSI-X table and PBA; everything else
 * passes through and is mmappable when the backend gives an fd. Sparse
 * areas are exactly the BAR minus the trapped ranges, page aligned, correct
 * with a hole at the start, middle or end.
 */
#include <endian.h>
#include <errno.h>
#include <linux/pci_regs.h>
#include <linux/vfio.h>
#include <string.h>
#include <unistd.h>

#include "vdev_priv.h"
#include "../common/release.h"
#include "cxl/cxl_mbox.h"
#include "cxl/cxl_regs.h"

static uint64_t page_size(void)
{
	long p = sysconf(_SC_PAGESIZE);

	return p > 0 ? (uint64_t)p : 4096;
}

static void hole_add(struct vcxl_vbar *b, uint64_t off, uint64_t len)
{
	uint64_t pg = page_size();
	uint64_t lo = off & ~(pg - 1);
	uint64_t hi = (off + len + pg - 1) & ~(pg - 1);

	if (hi > b->bi.size)
		hi = b->bi.size;
	if (lo >= hi)
		return;
	if (b->nholes >= VBAR_MAX_HOLES) {
		/* never drop a trapped range: the BAR loses its mmap instead */
		b->holes_overflow = true;
		return;
	}
	/* insert sorted */
	unsigned i = b->nholes;
	while (i > 0 && b->holes[i - 1].offset > lo) {
		b->holes[i] = b->holes[i - 1];
		i--;
	}
	b->holes[i].offset = lo;
	b->holes[i].size = hi - lo;
	b->nholes++;
	/* merge overlapping or touching neighbours */
	for (unsigned k = 0; k + 1 < b->nholes;) {
		struct vcxl_sparse_area *a = &b->holes[k], *c = &b->holes[k + 1];
		if (c->offset <= a->offset + a->size) {
			uint64_t end = c->offset + c->size;
			if (end > a->offset + a->size)
				a->size = end - a->offset;
			memmove(c, c + 1, sizeof(*c) * (b->nholes - k - 2));
			b->nholes--;
		} else {
			k++;
		}
	}
}

/* The complement of the holes in [0, size). */
static void sparse_compute(struct vcxl_vbar *b)
{
	uint64_t at = 0;

	b->nsparse = 0;
	for (unsigned i = 0; i <= b->nholes; i++) {
		uint64_t end = i < b->nholes ? b->holes[i].offset : b->bi.size;
		/* areas past VCXL_MAX_SPARSE are left out: served by messages
		 * (never more mappable than the complement of the holes) */
		if (end > at && b->nsparse < VCXL_MAX_SPARSE) {
			b->sparse[b->nsparse].offset = at;
			b->sparse[b->nsparse].size = end - at;
			b->nsparse++;
		}
		if (i < b->nholes)
			at = b->holes[i].offset + b->holes[i].size;
	}
}

/* PCI 3.0 6.8.2: the MSI-X table and PBA locations */
static int msix_holes(struct vcxl_vdev *v)
{
	uint64_t flags = 0, table = 0, pba = 0;
	int rc;

	if (!v->msix_cap)
		return 0;
	if ((rc = v->be->ops->cfg_read(v->be->dev, v->msix_cap + PCI_MSIX_FLAGS, 2, &flags)) ||
	    (rc = v->be->ops->cfg_read(v->be->dev, v->msix_cap + PCI_MSIX_TABLE, 4, &table)) ||
	    (rc = v->be->ops->cfg_read(v->be->dev, v->msix_cap + PCI_MSIX_PBA, 4, &pba)))
		return rc;
	uint64_t nvec = (flags & PCI_MSIX_FLAGS_QSIZE) + 1;
	unsigned tb = table & PCI_MSIX_TABLE_BIR, pb = pba & PCI_MSIX_PBA_BIR;
	v->msix_nvec = (unsigned)nvec;
	v->msix_bar = tb;
	v->msix_table_off = table & PCI_MSIX_TABLE_OFFSET;
	v->msix_table_len = nvec * PCI_MSIX_ENTRY_SIZE;
	v->pba_bar = pb;
	v->pba_off = pba & PCI_MSIX_PBA_OFFSET;
	v->pba_len = ((nvec + 63) / 64) * 8;
	if (tb < VCXL_NUM_BARS)
		hole_add(&v->bar[tb], v->msix_table_off, v->msix_table_len);
	if (pb < VCXL_NUM_BARS)
		hole_add(&v->bar[pb], v->pba_off, v->pba_len);
	return 0;
}

/* Does [off, off+len) of bar touch a register the variant says the host owns? */
static bool host_reg_overlap(const struct vcxl_vdev *v, unsigned bar, uint64_t off, size_t len)
{
	for (unsigned i = 0; i < v->variant->nhost_regs; i++) {
		const struct vcxl_variant_reg *r = &v->variant->host_regs[i];
		if (r->bar == bar && off < r->off + r->len && r->off < off + len)
			return true;
	}
	return false;
}

/* Does [off, off+len) of bar touch the device's MSI-X table or PBA? */
static bool msix_overlap(const struct vcxl_vdev *v, unsigned bar, uint64_t off, size_t len)
{
	if (!v->msix_cap)
		return false;
	if (bar == v->msix_bar && off < v->msix_table_off + v->msix_table_len &&
	    v->msix_table_off < off + len)
		return true;
	return bar == v->pba_bar && off < v->pba_off + v->pba_len && v->pba_off < off + len;
}

/*
 * The guest's MSI-X table lives in the VMM; the device's table is the host's,
 * as with vfio-pci: arming vector n (the client gave it an eventfd) unmasks
 * the device's entry, disarming masks it. PCI 3.0 6.8.2.9.
 */
int vbar_msix_arm(struct vcxl_vdev *v, unsigned vector, bool armed)
{
	if (!v->msix_cap || vector >= v->msix_nvec || v->msix_bar >= VCXL_NUM_BARS)
		return -EINVAL;
	uint64_t off =
	    v->msix_table_off + (uint64_t)vector * PCI_MSIX_ENTRY_SIZE + PCI_MSIX_ENTRY_VECTOR_CTRL;
	int rc = v->be->ops->bar_write(v->be->dev, v->msix_bar, off, 4,
				       armed ? 0 : PCI_MSIX_ENTRY_CTRL_MASKBIT);
	uint64_t bit = 1ull << (vector % 64);

	if (!rc && armed)
		v->msix_armed[vector / 64] |= bit;
	else if (!rc)
		v->msix_armed[vector / 64] &= ~bit;
	return rc;
}

void vbar_msix_rearm(struct vcxl_vdev *v)
{
	for (unsigned n = 0; n < v->msix_nvec && n < VBAR_MSIX_MAX; n++)
		if (v->msix_armed[n / 64] & (1ull << (n % 64)))
			vbar_msix_arm(v, n, true);
}

void vbar_msix_disarm_all(struct vcxl_vdev *v)
{
	for (unsigned n = 0; n < v->msix_nvec && n < VBAR_MSIX_MAX; n++)
		vbar_msix_arm(v, n, false);
}

/* The backend can map only parts of this BAR (VFIO sparse mmap of a real
 * device): everything outside its areas is trapped as well, and the areas'
 * fd serves the mmappable rest. */
static void backend_areas(struct vcxl_vbar *b)
{
	struct vcxl_bar_area a[VCXL_BAR_MAX_AREAS];
	unsigned n = b->bi.nr_areas < VCXL_BAR_MAX_AREAS ? b->bi.nr_areas : VCXL_BAR_MAX_AREAS;
	uint64_t at = 0;

	if (b->bi.fd >= 0 || n == 0 || b->bi.area_fd < 0)
		return;
	memcpy(a, b->bi.area, sizeof(a[0]) * n);
	for (unsigned i = 1; i < n; i++) /* sort by offset */
		for (unsigned k = i; k > 0 && a[k - 1].offset > a[k].offset; k--) {
			struct vcxl_bar_area t = a[k];
			a[k] = a[k - 1];
			a[k - 1] = t;
		}
	for (unsigned i = 0; i < n; i++) {
		if (a[i].offset > at)
			hole_add(b, at, a[i].offset - at);
		if (a[i].offset + a[i].size > at)
			at = a[i].offset + a[i].size;
	}
	if (at < b->bi.size)
		hole_add(b, at, b->bi.size - at);
	b->bi.fd = b->bi.area_fd;
	b->bi.fd_offset = b->bi.area_fd_offset;
}

/* ---- the memory device mailbox (CXL r3.1 8.2.8.4) ------------------------ */

struct mbox_rd {
	struct vcxl_vdev *v;
	unsigned bar;
	uint64_t base;
};

static int mbox_rd32(void *opaque, uint32_t off, uint32_t *val)
{
	struct mbox_rd *r = opaque;
	uint64_t x = 0;
	int rc = r->v->be->ops->bar_read(r->v->be->dev, r->bar, r->base + off, 4, &x);

	*val = (uint32_t)x;
	return rc;
}

/* Bytes of a mailbox at off (8.2.8.4): its registers and the payload its
 * Capabilities register says, or the header's length if that is more. */
static uint64_t mbox_extent(struct mbox_rd *r, uint32_t off, uint32_t len)
{
	uint32_t caps = 0;
	unsigned shift = CXLDEV_MBOX_PAYLOAD_MAX_SHIFT;
	uint64_t n;

	if (!mbox_rd32(r, off + CXLDEV_MBOX_CAPS, &caps) &&
	    VCXL_FIELD_GET(CXLDEV_MBOX_CAP_PAYLOAD_SIZE, caps) < shift)
		shift = (unsigned)VCXL_FIELD_GET(CXLDEV_MBOX_CAP_PAYLOAD_SIZE, caps);
	n = CXLDEV_MBOX_PAYLOAD + (1ull << shift);
	return len > n ? len : n;
}

/* One capability header (8.2.8.2): kept in the guest's array, or (the
 * Secondary Mailbox) left out of it and hidden. */
static bool devcap_entry(struct vcxl_vdev *v, struct mbox_rd *r, const uint32_t hdr[4])
{
	uint16_t id = (uint16_t)VCXL_FIELD_GET(CXLDEV_CAP_HDR_ID, hdr[0]);
	uint32_t off = hdr[CXLDEV_CAP_HDR_OFFSET / 4], len = hdr[CXLDEV_CAP_HDR_LENGTH / 4];

	if (id == CXLDEV_CAP_ID_PRIMARY_MBOX && !v->has_mbox && len >= CXLDEV_MBOX_PAYLOAD) {
		v->has_mbox = true;
		v->mbox_bar = r->bar;
		v->mbox_off = r->base + off;
		v->mbox_len = mbox_extent(r, off, len);
	}
	/* CXL r3.1 8.2.8.4: the Secondary Mailbox is earmarked for platform
	 * firmware, which is the host's: the guest neither sees nor reaches it */
	if (id == CXLDEV_CAP_ID_SECONDARY_MBOX) {
		v->has_smbox = true;
		v->smbox_off = r->base + off;
		v->smbox_len = mbox_extent(r, off, len);
		return false;
	}
	return true;
}

/* Four dwords into the guest's view, little endian as the registers. */
static void view_put(uint8_t *p, const uint32_t x[4])
{
	for (unsigned k = 0; k < 16; k++)
		p[k] = (uint8_t)(x[k / 4] >> (8 * (k % 4)));
}

/* The device's capabilities (8.2.8.1-2): where the Primary Mailbox is, and
 * the array as the guest reads it, without the Secondary Mailbox. */
static void devcap_scan(struct vcxl_vdev *v)
{
	const struct vcxl_cxl_dev *d = v->dev;
	struct mbox_rd r = {.v = v, .bar = d->devregs_bar, .base = d->devregs_off};
	uint32_t arr[4], hdr[4];
	unsigned count, kept = 0;

	if (!d->has_devregs || d->devregs_bar >= VCXL_NUM_BARS)
		return;
	for (unsigned k = 0; k < 4; k++)
		if (mbox_rd32(&r, 4 * k, &arr[k]))
			return;
	if (VCXL_FIELD_GET(CXLDEV_CAP_ARRAY_ID, ((uint64_t)arr[1] << 32) | arr[0]) !=
	    CXLDEV_CAP_ARRAY_CAP_ID)
		return;
	count = (unsigned)VCXL_FIELD_GET(CXLDEV_CAP_ARRAY_COUNT, ((uint64_t)arr[1] << 32) | arr[0]);
	if (count > VCXL_DEVCAP_MAX_WALK)
		count = VCXL_DEVCAP_MAX_WALK;
	memset(v->devcap_view, 0, sizeof(v->devcap_view));
	for (unsigned i = 0; i < count; i++) {
		uint32_t h = CXLDEV_CAP_HDR_FIRST + i * CXLDEV_CAP_HDR_STRIDE;
		for (unsigned k = 0; k < 4; k++)
			if (mbox_rd32(&r, h + 4 * k, &hdr[k]))
				return;
		if (devcap_entry(v, &r, hdr))
			view_put(v->devcap_view + CXLDEV_CAP_HDR_FIRST +
				     kept++ * CXLDEV_CAP_HDR_STRIDE,
				 hdr);
	}
	uint64_t a = ((uint64_t)arr[1] << 32) | arr[0];
	a = (a & ~CXLDEV_CAP_ARRAY_COUNT) | VCXL_FIELD_PREP(CXLDEV_CAP_ARRAY_COUNT, kept);
	arr[0] = (uint32_t)a;
	arr[1] = (uint32_t)(a >> 32);
	view_put(v->devcap_view, arr);
	v->has_devcap = true;
	v->devcap_off = d->devregs_off;
	v->devcap_len = CXLDEV_CAP_HDR_FIRST + count * CXLDEV_CAP_HDR_STRIDE;
}

void vbar_mbox_reset(struct vcxl_vdev *v)
{
	v->mbox_refused = false;
	v->mbox_inflight = false;
}

static bool range_hit(uint64_t a, uint64_t alen, uint64_t b, uint64_t blen)
{
	return a < b + blen && b < a + alen;
}

/* CXL r3.1 8.2.8.4: software writes Command and the payload only while the
 * doorbell is clear; the device may read them until it clears it. Such a
 * write while a passed doorbell is still set is dropped, so the device only
 * ever sees the command that was checked. */
static bool mbox_write_held(struct vcxl_vdev *v, uint64_t p, unsigned w)
{
	uint64_t ctrl = 0;

	if (!v->mbox_inflight || (!range_hit(p, w, v->mbox_off + CXLDEV_MBOX_CMD, 8) &&
				  !range_hit(p, w, v->mbox_off + CXLDEV_MBOX_PAYLOAD,
					     v->mbox_len - CXLDEV_MBOX_PAYLOAD)))
		return false;
	if (!v->be->ops->bar_read(v->be->dev, v->mbox_bar, v->mbox_off + CXLDEV_MBOX_CTRL, 4,
				  &ctrl) &&
	    !(ctrl & CXLDEV_MBOX_CTRL_DOORBELL)) {
		v->mbox_inflight = false;
		return false;
	}
	return true;
}

/* A write of [p, p + w) carrying val: a doorbell for a command off the
 * allow-list is taken out (the device never sees it) and the command is
 * answered Unsupported through the Status and Command registers. */
static uint64_t mbox_filter_write(struct vcxl_vdev *v, uint64_t p, unsigned w, uint64_t val)
{
	uint64_t ctrl = v->mbox_off + CXLDEV_MBOX_CTRL, cmd = 0;

	if (ctrl < p || ctrl >= p + w)
		return val;
	uint64_t db = (uint64_t)CXLDEV_MBOX_CTRL_DOORBELL << (8 * (ctrl - p));
	if (!(val & db))
		return val;
	v->be->ops->bar_read(v->be->dev, v->mbox_bar, v->mbox_off + CXLDEV_MBOX_CMD, 8, &cmd);
	uint16_t op = (uint16_t)VCXL_FIELD_GET(CXLDEV_MBOX_CMD_OPCODE, cmd);
	v->mbox_refused = !vcxl_mbox_guest_allowed(op);
	if (!v->mbox_refused) {
		v->mbox_inflight = true;
		return val;
	}
	v->mbox_refused_op = op;
	return val & ~db;
}

/* Reads of the Status and Command registers after a refused doorbell:
 * Return Code Unsupported, no background operation, no output payload. */
static uint64_t mbox_filter_read(struct vcxl_vdev *v, uint64_t p, unsigned w, uint64_t val)
{
	if (!v->mbox_refused)
		return val;
	uint64_t st = v->mbox_off + CXLDEV_MBOX_STATUS, cm = v->mbox_off + CXLDEV_MBOX_CMD;
	uint64_t fst = VCXL_FIELD_PREP(CXLDEV_MBOX_STATUS_RC, CXL_MBOX_RC_UNSUPPORTED);
	uint64_t fcm = VCXL_FIELD_PREP(CXLDEV_MBOX_CMD_OPCODE, v->mbox_refused_op);

	for (unsigned b = 0; b < w; b++) {
		uint64_t a = p + b, fake;
		if (a >= st && a < st + 8)
			fake = fst >> (8 * (a - st));
		else if (a >= cm && a < cm + 8)
			fake = fcm >> (8 * (a - cm));
		else
			continue;
		val = (val & ~(0xffull << (8 * b))) | ((fake & 0xff) << (8 * b));
	}
	return val;
}

static bool mbox_regs(const struct vcxl_vdev *v, unsigned bar, uint64_t p, unsigned w)
{
	return v->has_mbox && bar == v->mbox_bar && range_hit(p, w, v->mbox_off, v->mbox_len);
}

/* The capabilities array and the Secondary Mailbox: what the guest sees of
 * them instead of the device (8.2.8.1-2). */
static bool devcap_regs(const struct vcxl_vdev *v, unsigned bar, uint64_t p, unsigned w)
{
	if (bar != v->dev->devregs_bar)
		return false;
	return (v->has_devcap && range_hit(p, w, v->devcap_off, v->devcap_len)) ||
	       (v->has_smbox && range_hit(p, w, v->smbox_off, v->smbox_len));
}

static uint64_t devcap_read(const struct vcxl_vdev *v, uint64_t p, unsigned w, uint64_t val)
{
	for (unsigned b = 0; b < w; b++) {
		uint64_t a = p + b, x;
		if (v->has_devcap && a >= v->devcap_off && a < v->devcap_off + v->devcap_len)
			x = v->devcap_view[a - v->devcap_off];
		else if (v->has_smbox && a >= v->smbox_off && a < v->smbox_off + v->smbox_len)
			x = 0;
		else
			continue;
		val = (val & ~(0xffull << (8 * b))) | (x << (8 * b));
	}
	return val;
}

int vbar_build(struct vcxl_vdev *v, char *err, size_t errlen)
{
	int rc;

	for (unsigned i = 0; i < VCXL_NUM_BARS; i++) {
		struct vcxl_vbar *b = &v->bar[i];
		memset(b, 0, sizeof(*b));
		if ((rc = v->be->ops->bar_info(v->be->dev, i, &b->bi)))
			return vdev_err(err, errlen, rc, "BAR%u info failed (%d)", i, rc);
		if (!(b->bi.flags & VCXL_BAR_PRESENT))
			b->bi.size = 0;
		backend_areas(b);
	}
	struct vcxl_vbar *cb = &v->bar[v->dev->comp_bar];
	hole_add(cb, v->dev->comp_off, CXL_COMPONENT_BLOCK_SIZE);
	if ((rc = msix_holes(v)))
		return vdev_err(err, errlen, rc, "MSI-X capability read failed (%d)", rc);
	for (unsigned i = 0; i < v->variant->nhost_regs; i++) {
		const struct vcxl_variant_reg *r = &v->variant->host_regs[i];
		if (r->bar < VCXL_NUM_BARS)
			hole_add(&v->bar[r->bar], r->off, r->len);
	}
	/* the mailbox registers and payload are always trapped: the filter must
	 * see them; so are the capabilities array and a Secondary Mailbox */
	devcap_scan(v);
	if (v->has_mbox)
		hole_add(&v->bar[v->mbox_bar], v->mbox_off, v->mbox_len);
	if (v->has_devcap)
		hole_add(&v->bar[v->dev->devregs_bar], v->devcap_off, v->devcap_len);
	if (v->has_smbox)
		hole_add(&v->bar[v->dev->devregs_bar], v->smbox_off, v->smbox_len);
	for (unsigned i = 0; i < VCXL_NUM_BARS; i++) {
		struct vcxl_vbar *b = &v->bar[i];
		sparse_compute(b);
		b->mmap =
		    b->bi.size && b->bi.fd >= 0 && !(b->bi.flags & VCXL_BAR_IO) && b->nsparse > 0;
		/* a trapped range that did not fit is never left mappable */
		if (b->mmap && b->holes_overflow) {
			b->mmap = false;
			fprintf(stderr,
				"vcxl: %s: BAR%u served by REGION_READ/WRITE only, not mmap: more "
				"than %u trapped ranges (component block, MSI-X, host registers, "
				"gaps between the backend's areas)\n",
				v->be->ops->name(v->be->dev), i, VBAR_MAX_HOLES);
		}
		/* isolation: the fd goes to the client only if it reaches this BAR alone */
		bool never = false;
		const char *why = b->mmap ? vdev_fd_unshareable(v, b->bi.fd, &never) : NULL;
		if (why) {
			b->mmap = false;
			fprintf(
			    stderr,
			    "vcxl: %s: BAR%u served by REGION_READ/WRITE only, not mmap: %s%s\n",
			    v->be->ops->name(v->be->dev), i, why,
			    never ? "" : " (--trust-client hands it out anyway)");
		}
	}
	return 0;
}

/* pending_only: only the BARs whose fresh object a failed hand-over still
 * owes. A BAR whose object cannot be replaced now keeps the old one (the
 * departed client's) and stays pending: the device is not served until it
 * is replaced (vdev_prepare). */
int vbar_renew(struct vcxl_vdev *v, bool pending_only)
{
	const struct vcxl_backend_ops *ops = v->be->ops;
	int rc = 0;

	if (!ops->bar_renew)
		return 0;
	for (unsigned i = 0; i < VCXL_NUM_BARS; i++) {
		struct vcxl_vbar *b = &v->bar[i];
		struct vcxl_bar_info bi;
		if (!b->bi.size || b->bi.fd < 0 || (pending_only && !b->renew_pending))
			continue;
		/* the old object is emptied once replaced; without an fd to
		 * do that (EMFILE) it is not replaced now either */
		int old = dup(b->bi.fd), r = old < 0 ? -errno : ops->bar_renew(v->be->dev, i);
		if (r && r != -EOPNOTSUPP) {
			/* the backend still uses the old object, which the
			 * departed client may map: owed, never zeroed in place */
			if (old >= 0)
				close(old);
			b->renew_pending = true;
			rc = rc ? rc : r;
			continue;
		}
		if (!r)
			r = ops->bar_info(v->be->dev, i, &bi);
		if (r) {
			close(old);
			if (r == -EOPNOTSUPP)
				continue;
			/* renewed but not described: never hand out a stale fd */
			b->mmap = false;
			b->bi.fd = b->bi.area_fd = -1;
			rc = rc ? rc : r;
			continue;
		}
		b->renew_pending = false;
		vcxl_release_memory(old); /* emptied off the loop (release.h) */
		/* the same BAR and areas, a new object (backend_areas: area_fd
		 * stands for the BAR when only areas map) */
		b->bi.fd = bi.fd >= 0 ? bi.fd : bi.area_fd;
		b->bi.fd_offset = bi.fd >= 0 ? bi.fd_offset : bi.area_fd_offset;
		b->bi.area_fd = bi.area_fd;
		b->bi.area_fd_offset = bi.area_fd_offset;
	}
	return rc;
}

int vbar_region_info(struct vcxl_vdev *v, unsigned bar, struct vcxl_vregion_info *ri)
{
	const struct vcxl_vbar *b = &v->bar[bar];

	ri->size = b->bi.size;
	ri->fd = -1;
	if (!b->bi.size)
		return 0;
	ri->flags = VFIO_REGION_INFO_FLAG_READ | VFIO_REGION_INFO_FLAG_WRITE;
	if (!b->mmap)
		return 0;
	ri->flags |= VFIO_REGION_INFO_FLAG_MMAP;
	ri->fd = b->bi.fd;
	ri->fd_offset = b->bi.fd_offset;
	if (b->nholes) {
		ri->nr_sparse = b->nsparse;
		memcpy(ri->sparse, b->sparse, sizeof(b->sparse[0]) * b->nsparse);
	}
	return 0;
}

static unsigned bar_chunk(uint64_t off, size_t left)
{
	for (unsigned w = 8; w > 1; w /= 2)
		if (!(off & (w - 1)) && left >= w)
			return w;
	return 1;
}

/* Little-endian (de)serialisation of a 1/2/4/8-byte access; fixed-size
 * copies so the common 4-byte case is a single load or store. */
static uint64_t get_le(const uint8_t *p, unsigned w)
{
	uint32_t v32;
	uint64_t v = 0;
	if (w == 4) {
		memcpy(&v32, p, 4);
		return le32toh(v32);
	}
	for (unsigned i = 0; i < w; i++)
		v |= (uint64_t)p[i] << (8 * i);
	return v;
}

static void put_le(uint8_t *p, unsigned w, uint64_t v)
{
	if (w == 4) {
		uint32_t v32 = htole32((uint32_t)v);
		memcpy(p, &v32, 4);
		return;
	}
	for (unsigned i = 0; i < w; i++)
		p[i] = (uint8_t)(v >> (8 * i));
}

int vbar_rw(struct vcxl_vdev *v, unsigned bar, bool write, uint64_t off, void *buf, size_t len)
{
	const struct vcxl_vbar *b = &v->bar[bar];
	uint64_t cs = v->dev->comp_off, ce = cs + CXL_COMPONENT_BLOCK_SIZE;
	bool comp_bar = bar == v->dev->comp_bar;
	uint8_t *p8 = buf;
	int rc;

	if (!b->bi.size || len == 0 || off >= b->bi.size || len > b->bi.size - off)
		return -EINVAL;
	if (comp_bar && len == 4 && off >= cs && off + 4 <= ce) {
		/* the common guest access: one dword of the component block */
		uint64_t val = write ? get_le(p8, 4) : 0;
		rc = vcomp_access(v, write, (uint32_t)(off - cs), 4, &val);
		if (!rc && !write)
			put_le(p8, 4, val);
		return rc;
	}
	/* PCI 3.0 6.8.2: the device's MSI-X table and PBA are host-owned: the
	 * guest's writes are dropped, its reads of them pass (QEMU reads the PBA) */
	if (write && msix_overlap(v, bar, off, len))
		return 0;
	/* host-owned device registers (variant.h): the guest's writes are dropped */
	if (write && host_reg_overlap(v, bar, off, len))
		return 0;
	for (uint64_t p = off; p < off + len;) {
		size_t left = off + len - p;
		/* never let one access straddle the component block edge */
		if (comp_bar && p < cs && p + left > cs)
			left = cs - p;
		else if (comp_bar && p >= cs && p < ce && p + left > ce)
			left = ce - p;
		bool in_comp = comp_bar && p >= cs && p < ce;
		/* a single guest access to the block goes to the register file as is,
		 * so its access rules (CXL r3.1 8.2.2) see the real width */
		unsigned w = in_comp && (left == 1 || left == 2 || left == 4 || left == 8)
				 ? (unsigned)left
				 : bar_chunk(p, left);
		uint64_t val = 0;
		if (write)
			val = get_le(p8 + (p - off), w);
		bool mb = !in_comp && mbox_regs(v, bar, p, w);
		bool dc = !in_comp && devcap_regs(v, bar, p, w);
		if (write && (dc || (mb && mbox_write_held(v, p, w)))) {
			p += w; /* read-only or hidden, or the device holds a command */
			continue;
		}
		if (write && mb)
			val = mbox_filter_write(v, p, w, val);
		if (in_comp)
			rc = vcomp_access(v, write, (uint32_t)(p - cs), w, &val);
		else if (write)
			rc = v->be->ops->bar_write(v->be->dev, bar, p, w, val);
		else
			rc = v->be->ops->bar_read(v->be->dev, bar, p, w, &val);
		if (rc)
			return rc;
		if (!write && mb)
			val = mbox_filter_read(v, p, w, val);
		if (!write && dc)
			val = devcap_read(v, p, w, val);
		if (!write)
			put_le(p8 + (p - off), w, val);
		p += w;
	}
	return 0;
}
