// SPDX-License-Identifier: BSD-3-Clause
/*
 * libFuzzer harness: the migration load path (docs/migration.md), what a
 * destination does with the bytes of MIG_DATA_WRITE at RESUMING -> STOP
 * (vcxl_vdev_ops.mig_load), on a real device.
 *
 * Input: a device state stream. It is loaded twice: as it is, and with its
 * framing repaired (every section's CRC, the END CRC and count, the header's
 * length and CRC recomputed), so that mutations reach the sections' checks
 * and not only the checksums. The seeds are real saved states (gen_corpus).
 *
 * Oracle:
 *  1. The load returns 0 or a negative errno.
 *  2. Host-owned state is unchanged (fuzz_dev.h: physical decoders, Device
 *     DVSEC, Register Locator, headers, physical DOE, the canaries in device
 *     memory outside the region): a stream never writes outside the region.
 *  3. A refused stream leaves the device reset: no virtual decoder committed.
 *  4. A loaded stream is a state this device can have: saved again, it
 *     loads again, and that load saves to the same bytes.
 *  5. mig_check (the load's checks alone, what the server runs before the
 *     downtime) agrees with the load, and applies nothing: the device saves
 *     to the same bytes before and after it.
 *  6. The server's part (src/server/migration.c): a DMAPAGES section found by
 *     its framing (vcxl_mig_find) lies inside the stream, and its parse
 *     against one window (vcxl_mig_dmapages_parse) is 0 or -EINVAL; accepted,
 *     every page is 4 KiB aligned and whole in the window, and the pages end
 *     where the payload does.
 */
#include <errno.h>

#include "../src/vfio-cxl/vdev_priv.h"
#include "fuzz_dev.h"
#include "fuzz_harness.h"
#include "common/migstream.h"

static struct fz_dev dev;
static bool dev_ready;

/* Recompute what a writer would have: section CRCs (lengths clamped to the
 * bytes there), END's CRC and count, the header's length and CRC. */
static void repair(uint8_t *s, size_t len)
{
	size_t off = VCXL_MIG_HDR_LEN;
	uint32_t nsec = 0;

	if (len < VCXL_MIG_HDR_LEN)
		return;
	vcxl_mig_wr64(s + 16, len);
	while (len - off >= VCXL_MIG_SEC_HDR_LEN) {
		uint8_t *h = s + off;
		uint64_t plen = vcxl_mig_rd64(h + 8), room = len - off - VCXL_MIG_SEC_HDR_LEN;

		if (plen > room)
			plen = room & ~7ull;
		vcxl_mig_wr64(h + 8, plen);
		if (vcxl_mig_rd32(h) == VCXL_MIG_SEC_END && plen >= VCXL_MIG_END_LEN) {
			vcxl_mig_wr32(h + VCXL_MIG_SEC_HDR_LEN, vcxl_crc32(0, s, off));
			vcxl_mig_wr32(h + VCXL_MIG_SEC_HDR_LEN + 4, nsec);
		}
		vcxl_mig_wr32(h + 16, vcxl_crc32(0, h + VCXL_MIG_SEC_HDR_LEN, plen));
		off += VCXL_MIG_SEC_HDR_LEN + ((plen + 7) & ~7ull);
		nsec++;
		if (vcxl_mig_rd32(h) == VCXL_MIG_SEC_END || off > len)
			break;
	}
	vcxl_mig_wr32(s + 28, 0);
	vcxl_mig_wr32(s + 28, vcxl_crc32(0, s, VCXL_MIG_HDR_LEN));
}

static bool any_committed(struct fz_dev *f)
{
	struct vcxl_hdm *h = &f->vdev->comp.hdm;

	for (unsigned i = 0; i < h->count; i++) {
		struct vcxl_hdm_decoder d;
		vcxl_hdm_decoder_get(h, i, &d);
		if (d.committed)
			return true;
	}
	return false;
}

static void load_one(struct fz_dev *f, const uint8_t *s, size_t len, const char *what)
{
	char err[256];
	int rc;

	vcxl_vdev_ops.reset(f->vdev);
	struct vcxl_mig_buf c0 = {0}, c1 = {0};
	int crc;

	if (vcxl_vdev_ops.mig_save(f->vdev, &c0))
		fz_fail("%s: the reset device not saved", what);
	crc = vcxl_vdev_ops.mig_check(f->vdev, s, len, err, sizeof(err));
	if (vcxl_vdev_ops.mig_save(f->vdev, &c1) || c0.len != c1.len ||
	    memcmp(c0.data, c1.data, c0.len))
		fz_fail("%s: the check changed the device (%d)", what, crc);
	vcxl_mig_buf_free(&c0);
	vcxl_mig_buf_free(&c1);
	rc = vcxl_vdev_ops.mig_load(f->vdev, s, len, err, sizeof(err));
	if (rc > 0 || crc > 0)
		fz_fail("%s: load returned %d, check %d", what, rc, crc);
	if (!rc != !crc)
		fz_fail("%s: the check says %d, the load %d (%s)", what, crc, rc, err);
	fz_check_host(f, what, true);
	if (rc) {
		if (any_committed(f))
			fz_fail("%s: refused (%s) but a virtual decoder stays committed", what,
				err);
		return;
	}
	/* a state this device can have: saved, it loads again, to the same bytes */
	struct vcxl_mig_buf a = {0}, b = {0};
	if (vcxl_vdev_ops.mig_save(f->vdev, &a))
		fz_fail("%s: loaded but not saved again", what);
	rc = vcxl_vdev_ops.mig_load(f->vdev, a.data, a.len, err, sizeof(err));
	if (rc)
		fz_fail("%s: its own save refused: %s", what, err);
	if (vcxl_vdev_ops.mig_save(f->vdev, &b) || a.len != b.len || memcmp(a.data, b.data, a.len))
		fz_fail("%s: save, load, save is not stable", what);
	fz_check_host(f, "reload", true);
	vcxl_mig_buf_free(&a);
	vcxl_mig_buf_free(&b);
}

static bool in_window(const void *opaque, uint64_t iova)
{
	(void)opaque;
	return iova >= FZ_DMA_WIN && iova - FZ_DMA_WIN <= FZ_DMA_WIN_LEN - VCXL_MIG_PAGE;
}

static void check_dma_pages(const uint8_t *s, size_t len, const char *what)
{
	const uint8_t *p, *iovas, *pages;
	uint64_t plen, n;
	uint32_t flags;
	char err[256];
	int rc = vcxl_mig_find(s, len, VCXL_MIG_SEC_DMAPAGES, &p, &plen, &flags);

	if (rc != 1) {
		if (rc && rc != -EINVAL)
			fz_fail("%s: vcxl_mig_find returned %d", what, rc);
		return;
	}
	if (p < s || plen > len || p - s > (ptrdiff_t)(len - plen))
		fz_fail("%s: DMAPAGES payload outside the stream", what);
	rc =
	    vcxl_mig_dmapages_parse(p, plen, in_window, NULL, &iovas, &pages, &n, err, sizeof(err));
	if (rc && rc != -EINVAL)
		fz_fail("%s: DMAPAGES parse returned %d", what, rc);
	if (rc)
		return;
	for (uint64_t i = 0; i < n; i++) {
		uint64_t iova = vcxl_mig_rd64(iovas + 8 * i);
		if (iova % VCXL_MIG_PAGE || !in_window(NULL, iova))
			fz_fail("%s: DMAPAGES accepted iova 0x%llx", what,
				(unsigned long long)iova);
	}
	if (pages + n * VCXL_MIG_PAGE != p + plen)
		fz_fail("%s: DMAPAGES pages do not end with the payload", what);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	uint8_t *copy;

	fz_quiet();
	if (!dev_ready) {
		if (fz_dev_open(&dev, VCXL_COMP_AT_START, 0))
			fz_fail("device setup failed");
		/* a destination in RESUMING: nothing runs by itself */
		vcxl_vdev_ops.mig_quiesce(dev.vdev, true);
		dev_ready = true;
	}
	load_one(&dev, data, size, "as sent");
	check_dma_pages(data, size, "as sent");
	copy = malloc(size ? size : 1);
	if (!copy)
		return 0;
	memcpy(copy, data, size);
	repair(copy, size);
	load_one(&dev, copy, size, "framing repaired");
	check_dma_pages(copy, size, "framing repaired");
	free(copy);
	return 0;
}
