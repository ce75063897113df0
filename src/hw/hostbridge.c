// SPDX-License-Identifier: BSD-3-Clause
/*
 * The host bridge's HDM decoder (what Linux's cxl_port driver programs for a
 * host bridge with more than one root port), reached through the component
 * registers the CEDT CHBS points at, and the host address window set-up that
 * a stock kernel without Type-2 support never does for us.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "hw_priv.h"
#include "cxl/cxl_spec.h"
#include "host/host_cxl.h"

/* Linux's cxld_await_commit allows 20 ms; be lenient with slow emulators. */
#define HB_COMMIT_TMO_NS  (100 * HW_NS_PER_MS)
#define HB_COMMIT_POLL_NS (1 * HW_NS_PER_MS)
#define HB_CM_END	  (CXL_CM_OFFSET + CXL_CM_SIZE)

static int hb_rd(struct vcxl_hw_hb *hb, uint32_t off, uint32_t *v)
{
	return hb->regs.read32(hb->regs.opaque, off, v);
}

static int cm_rd(void *opaque, uint32_t off, uint32_t *v)
{
	struct vcxl_hw_hb *hb = opaque;

	if (off > CXL_CM_SIZE - 4)
		return -EINVAL;
	return hb_rd(hb, CXL_CM_OFFSET + off, v);
}

/* The HDM Decoder Capability's registers, relative to it (spec layer hdm_io). */
static int hdm_rd(void *opaque, uint32_t off, uint32_t *v)
{
	struct vcxl_hw_hb *hb = opaque;

	return hb->regs.read32(hb->regs.opaque, hb->hdm_off + off, v);
}

static int hdm_wr(void *opaque, uint32_t off, uint32_t v)
{
	struct vcxl_hw_hb *hb = opaque;

	return hb->regs.write32(hb->regs.opaque, hb->hdm_off + off, v);
}

static struct vcxl_hdm_io hb_io(struct vcxl_hw_hb *hb)
{
	return (struct vcxl_hdm_io){.rd = hdm_rd, .wr = hdm_wr, .opaque = hb};
}

/* CXL r3.1 8.2.4: the CM capability array of the host bridge's component block */
int vcxl_hw_hb_init(struct vcxl_hw_hb *hb, const struct vcxl_hw_regs *regs, char *err,
		    size_t errlen)
{
	uint32_t off;
	unsigned n;
	int rc;

	hb->regs = *regs;
	hb->hdm_off = 0;
	hb->hdm_count = 0;
	hb->decoder = -1;
	hb->set_enable = false;
	rc = vcxl_comp_find_cap(cm_rd, hb, CXL_CM_CAP_ID_HDM, &off);
	if (rc == -ENOENT)
		return 0; /* CXL r3.1 9.13.1: a single-root-port host bridge may have none */
	if (rc == -ENODEV)
		return hw_err(err, errlen, rc,
			      "host bridge component block has no CXL capability array");
	if (rc)
		return hw_err(err, errlen, rc, "host bridge component registers unreadable (%d)",
			      rc);
	hb->hdm_off = CXL_CM_OFFSET + off;
	struct vcxl_hdm_io io = hb_io(hb);
	/* CXL r3.1 8.2.4.20.1: Decoder Count encoding, the decoders inside the block */
	rc = vcxl_hdm_io_count(&io, &n);
	if (!rc && (n == 0 || hb->hdm_off + CXL_HDM_CAP_SIZE(n) > HB_CM_END))
		rc = -EINVAL;
	if (rc) {
		uint32_t cap = 0;
		int rrc = hdm_rd(hb, CXL_HDM_CAP, &cap);

		hb->hdm_off = 0;
		return rc == -EINVAL && !rrc
			   ? hw_err(err, errlen, -ENODEV,
				    "host bridge HDM capability 0x%08x: bad decoder count", cap)
			   : hw_err(err, errlen, rc, "host bridge HDM capability read failed");
	}
	hb->hdm_count = n;
	return 0;
}

int vcxl_hw_hb_read_decoder(struct vcxl_hw_hb *hb, unsigned n, uint64_t *base, uint64_t *size,
			    uint32_t *ctrl, uint32_t *tl_lo)
{
	struct vcxl_hdm_io io = hb_io(hb);
	struct vcxl_hdm_decoder d;
	uint64_t tl;
	int rc;

	if (!hb->hdm_off || n >= hb->hdm_count)
		return -ENOENT;
	if ((rc = vcxl_hdm_io_read(&io, n, &d)) || (rc = vcxl_hdm_io_read_targets(&io, n, &tl)))
		return rc;
	*base = d.base;
	*size = d.size;
	*ctrl = d.ctrl;
	*tl_lo = (uint32_t)tl;
	return 0;
}

/* CXL r3.1 8.2.4.20.12: commit, then wait for Committed or Error Not Committed */
static int hb_await_commit(struct vcxl_hw_hb *hb, unsigned n, char *err, size_t errlen)
{
	uint64_t t0 = hw_now_ns();
	uint32_t ctrl;

	for (;;) {
		int rc = hdm_rd(hb, CXL_HDM_DEC_CTRL(n), &ctrl);
		if (rc)
			return hw_err(err, errlen, rc, "host bridge decoder %u: read failed", n);
		if (ctrl & CXL_HDM_DEC_CTRL_COMMIT_ERR)
			return hw_err(err, errlen, -EIO,
				      "host bridge decoder %u: Error Not Committed (ctrl 0x%08x)",
				      n, ctrl);
		if (ctrl & CXL_HDM_DEC_CTRL_COMMITTED)
			return 0;
		if (hw_now_ns() - t0 >= HB_COMMIT_TMO_NS)
			return hw_err(err, errlen, -ETIMEDOUT,
				      "host bridge decoder %u: not Committed within 100 ms", n);
		hw_sleep_ns(HB_COMMIT_POLL_NS);
	}
}

/* A committed decoder must not already decode part of the range, unless
 * firmware set it up exactly as wanted (then it is used as is). */
static int hb_find_slot(struct vcxl_hw_hb *hb, uint64_t base, uint64_t size, uint8_t port,
			unsigned *slot, bool *ready, char *err, size_t errlen)
{
	struct vcxl_hdm_io io = hb_io(hb);

	*ready = false;
	for (unsigned n = 0; n < hb->hdm_count; n++) {
		struct vcxl_hdm_decoder d;
		uint64_t tl;
		int rc = vcxl_hdm_io_read(&io, n, &d);
		if (!rc)
			rc = vcxl_hdm_io_read_targets(&io, n, &tl);
		if (rc)
			return hw_err(err, errlen, rc, "host bridge decoder %u: read failed", n);
		if (!d.committed) {
			*slot = n;
			return 0;
		}
		/* one way, its target (byte 0 of the Target List) our root port */
		if (d.base == base && d.size == size && d.ways == 1 &&
		    (uint8_t)(tl & CXL_HDM_DEC_TL_PORT0) == port) {
			*slot = n;
			*ready = true;
			return 0;
		}
		if (d.base < base + size && base < d.base + d.size)
			return hw_err(err, errlen, -EBUSY,
				      "host bridge decoder %u already decodes 0x%llx+0x%llx", n,
				      (unsigned long long)d.base, (unsigned long long)d.size);
	}
	return hw_err(err, errlen, -ENOSPC, "host bridge: all %u decoders are committed",
		      hb->hdm_count);
}

/* Decommit decoder n and put HDM Decoder Enable back if we set it. */
static void hb_undo(struct vcxl_hw_hb *hb, unsigned n)
{
	struct vcxl_hdm_io io = hb_io(hb);

	vcxl_hdm_io_decommit(&io, n);
	if (hb->set_enable)
		vcxl_hdm_io_set_enable(&io, false, NULL);
	hb->set_enable = false;
}

int vcxl_hw_hb_commit(struct vcxl_hw_hb *hb, uint64_t base, uint64_t size, uint8_t port,
		      bool hostonly, char *err, size_t errlen)
{
	struct vcxl_hdm_io io = hb_io(hb);
	unsigned n = 0;
	bool ready;
	uint32_t ctrl;
	int rc;

	if (!hb->hdm_off)
		return 0; /* pass-through host bridge: nothing decodes here */
	if (hb->decoder >= 0)
		return hw_err(err, errlen, -EBUSY, "host bridge decoder already committed");
	if (!size || (base | size) & (CXL_HDM_GRANULE - 1))
		return hw_err(err, errlen, -EINVAL, "host bridge range not 256 MiB granular");
	if ((rc = hb_find_slot(hb, base, size, port, &n, &ready, err, errlen)))
		return rc;
	if (ready)
		return 0; /* firmware's decoder: not ours to decommit */
	/* CXL r3.1 8.2.4.20.2: HDM Decoder Enable */
	if ((rc = vcxl_hdm_io_set_enable(&io, true, &hb->set_enable)))
		return hw_err(err, errlen, rc, "host bridge HDM Global Control access failed");
	if ((rc = hdm_rd(hb, CXL_HDM_DEC_CTRL(n), &ctrl))) {
		hw_err(err, errlen, rc, "host bridge decoder %u: read failed", n);
		goto undo;
	}
	/* CXL r3.1 8.2.4.20.5-11: base, size, target list (the root port as
	 * interleave way 0), then Control: 1 way, 256 B granularity, target type,
	 * Commit; never Lock On Commit (the decoder is ours to decommit) */
	ctrl = vcxl_hdm_commit_ctrl(ctrl & ~CXL_HDM_DEC_CTRL_LOCK_ON_COMMIT, hostonly);
	if ((rc = vcxl_hdm_io_program_port(&io, n, base, size, port, ctrl))) {
		hw_err(err, errlen, rc, "host bridge decoder %u: write failed", n);
		goto undo;
	}
	if ((rc = hb_await_commit(hb, n, err, errlen)))
		goto undo;
	hb->decoder = (int)n;
	return 0;
undo:
	hb_undo(hb, n);
	return rc;
}

void vcxl_hw_hb_decommit(struct vcxl_hw_hb *hb)
{
	if (!hb->hdm_off || hb->decoder < 0)
		return;
	hb_undo(hb, (unsigned)hb->decoder);
	hb->decoder = -1;
}

/* ---- /dev/mem mapped component block -------------------------------------- */

static int map_rd(void *opaque, uint32_t off, uint32_t *v)
{
	struct vcxl_hw_hb *hb = opaque;

	if ((off & 3) || off > hb->map_len - 4)
		return -EINVAL;
	*v = *(volatile uint32_t *)((uint8_t *)hb->map + off);
	return 0;
}

static int map_wr(void *opaque, uint32_t off, uint32_t v)
{
	struct vcxl_hw_hb *hb = opaque;

	if ((off & 3) || off > hb->map_len - 4)
		return -EINVAL;
	*(volatile uint32_t *)((uint8_t *)hb->map + off) = v;
	return 0;
}

int vcxl_hw_hb_map(struct vcxl_hw_hb *hb, const char *devmem, uint64_t base, uint64_t len,
		   char *err, size_t errlen)
{
	const char *path = hw_or(devmem, "/dev/mem");
	long pg = sysconf(_SC_PAGESIZE);

	memset(hb, 0, sizeof(*hb));
	hb->decoder = -1;
	if (len > CXL_COMPONENT_BLOCK_SIZE)
		len = CXL_COMPONENT_BLOCK_SIZE;
	if (len < HB_CM_END || (pg > 0 && (base & ((uint64_t)pg - 1))))
		return hw_err(err, errlen, -EINVAL,
			      "host bridge component block 0x%llx+0x%llx unusable",
			      (unsigned long long)base, (unsigned long long)len);
	/* O_SYNC: an uncached mapping (registers) */
	int fd = open(path, O_RDWR | O_SYNC | O_CLOEXEC);
	if (fd < 0)
		return hw_err(err, errlen, -errno, "%s: %s (host bridge registers need root)", path,
			      strerror(errno));
	void *p = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_SHARED, fd, (off_t)base);
	int e = errno;
	close(fd);
	if (p == MAP_FAILED)
		return hw_err(err, errlen, -e,
			      "%s: cannot map host bridge registers at 0x%llx: %s (claimed by a "
			      "driver? CONFIG_IO_STRICT_DEVMEM)",
			      path, (unsigned long long)base, strerror(e));
	hb->map = p;
	hb->map_len = len;
	struct vcxl_hw_regs regs = {.read32 = map_rd, .write32 = map_wr, .opaque = hb};
	int rc = vcxl_hw_hb_init(hb, &regs, err, errlen);
	if (rc)
		vcxl_hw_hb_unmap(hb);
	return rc;
}

void vcxl_hw_hb_unmap(struct vcxl_hw_hb *hb)
{
	if (hb->map)
		munmap(hb->map, hb->map_len);
	hb->map = NULL;
	hb->map_len = 0;
}

/* ---- The window, end to end ------------------------------------------------ */

static uint32_t host_flags(uint16_t r)
{
	uint32_t f = 0;

	if (r & VCXL_CFMWS_R_VOLATILE)
		f |= VCXL_WIN_RAM;
	if (r & VCXL_CFMWS_R_PMEM)
		f |= VCXL_WIN_PMEM;
	if (r & VCXL_CFMWS_R_TYPE2)
		f |= VCXL_WIN_TYPE2;
	if (r & VCXL_CFMWS_R_TYPE3)
		f |= VCXL_WIN_TYPE3;
	return f;
}

static int window_free(const struct vcxl_hw_window_cfg *cfg, const struct vcxl_cedt_cfmws *w,
		       char *err, size_t errlen)
{
	const char *path = hw_or(cfg->iomem, "/proc/iomem");
	char *text, who[96];
	size_t len;
	int rc = hw_read_file(path, &text, &len, 1u << 24);

	if (rc)
		return hw_err(err, errlen, rc, "%s: %s", path, strerror(-rc));
	rc = vcxl_hw_iomem_claimed(text, w->base, w->size, who, sizeof(who));
	free(text);
	/* a Soft Reserved range the kernel turned into device-DAX: attach instead */
	if (rc == 1 && (!strncmp(who, "hmem", 4) || !strncmp(who, "dax", 3)))
		return hw_err(err, errlen, -EBUSY,
			      "window 0x%llx+0x%llx is claimed (\"%s\" in %s): the kernel exposes "
			      "it as device-DAX; if firmware committed the decoders, use "
			      "--region-dax /dev/daxN.M",
			      (unsigned long long)w->base, (unsigned long long)w->size, who, path);
	if (rc == 1)
		return hw_err(err, errlen, -EBUSY,
			      "window 0x%llx+0x%llx is claimed (\"%s\" in %s): unload cxl_acpi / "
			      "the driver that owns it",
			      (unsigned long long)w->base, (unsigned long long)w->size, who, path);
	return rc < 0 ? hw_err(err, errlen, rc, "%s: unparsable", path) : 0;
}

int vcxl_hw_window_setup(struct vcxl_hw_vfio *v, const struct vcxl_hw_window_cfg *cfg,
			 struct vcxl_host *h, struct vcxl_hw_window **out, char *err, size_t errlen)
{
	static const struct vcxl_hw_window_cfg dflt;
	const struct vcxl_cedt_cfmws *w;
	struct vcxl_cedt *cedt;
	int rc;

	*out = NULL;
	if (!cfg)
		cfg = &dflt;
	struct vcxl_hw_window *win = calloc(1, sizeof(*win));
	cedt = calloc(1, sizeof(*cedt));
	if (!win || !cedt) {
		free(win);
		free(cedt);
		return hw_err(err, errlen, -ENOMEM, "out of memory");
	}
	win->hb.decoder = -1;
	if ((rc = vcxl_hw_topo_find(cfg->sysfs_root, vcxl_hw_vfio_bdf(v), &win->topo, err,
				    errlen)) ||
	    (rc = vcxl_cedt_read(cfg->cedt, cedt, err, errlen)))
		goto fail;
	uint16_t need =
	    VCXL_CFMWS_R_VOLATILE | (cfg->hostonly ? VCXL_CFMWS_R_TYPE3 : VCXL_CFMWS_R_TYPE2);
	if ((rc = vcxl_hw_pick_window(cedt, win->topo.hb_uid, need, &w, err, errlen)))
		goto fail;
	win->win = *w;
	win->host_flags = host_flags(w->restrictions);
	if ((rc = window_free(cfg, w, err, errlen)))
		goto fail;
	const struct vcxl_cedt_chbs *c = vcxl_cedt_find_chbs(cedt, win->topo.hb_uid);
	if (c) {
		win->chbs = *c;
		win->have_chbs = true;
	}
	if (!cfg->no_hb_program) {
		if (!c) {
			rc = hw_err(err, errlen, -ENODEV, "no CEDT CHBS for host bridge uid %u",
				    win->topo.hb_uid);
			goto fail;
		}
		if (c->cxl_version == 0) {
			rc = hw_err(err, errlen, -EOPNOTSUPP,
				    "host bridge uid %u is a CXL 1.1 RCH: unsupported", c->uid);
			goto fail;
		}
		if ((rc = vcxl_hw_hb_map(&win->hb, cfg->devmem, c->base, c->length, err, errlen)))
			goto fail;
		if ((rc = vcxl_hw_hb_commit(&win->hb, w->base, w->size, win->topo.rp_port,
					    cfg->hostonly, err, errlen)))
			goto fail;
	}
	rc = vcxl_host_add_window(h, w->base, w->size, win->host_flags);
	if (rc) {
		hw_err(err, errlen, rc, "window 0x%llx+0x%llx cannot be added to the host (%d)",
		       (unsigned long long)w->base, (unsigned long long)w->size, rc);
		goto fail;
	}
	vcxl_hw_vfio_set_window(v, w->base, w->size);
	free(cedt);
	*out = win;
	return 0;
fail:
	vcxl_hw_hb_decommit(&win->hb);
	vcxl_hw_hb_unmap(&win->hb);
	free(cedt);
	free(win);
	return rc;
}

void vcxl_hw_window_teardown(struct vcxl_hw_window *w)
{
	if (!w)
		return;
	vcxl_hw_hb_decommit(&w->hb);
	vcxl_hw_hb_unmap(&w->hb);
	free(w);
}
