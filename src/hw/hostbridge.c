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
#include "vcxl/cxl_spec.h"
#include "vcxl/host_cxl.h"

/* Linux's cxld_await_commit allows 20 ms; be lenient with slow emulators. */
#define HB_COMMIT_TMO_NS  (100 * HW_NS_PER_MS)
#define HB_COMMIT_POLL_NS (1 * HW_NS_PER_MS)
#define HB_CM_END	  (CXL_CM_OFFSET + CXL_CM_SIZE)

static int hb_rd(struct vcxl_hw_hb *hb, uint32_t off, uint32_t *v)
{
	return hb->regs.read32(hb->regs.opaque, off, v);
}

static int hb_wr(struct vcxl_hw_hb *hb, uint32_t off, uint32_t v)
{
	return hb->regs.write32(hb->regs.opaque, off, v);
}

static int cm_rd(void *opaque, uint32_t off, uint32_t *v)
{
	struct vcxl_hw_hb *hb = opaque;

	if (off > CXL_CM_SIZE - 4)
		return -EINVAL;
	return hb_rd(hb, CXL_CM_OFFSET + off, v);
}

/* CXL r3.1 8.2.4: the CM capability array of the host bridge's component block */
int vcxl_hw_hb_init(struct vcxl_hw_hb *hb, const struct vcxl_hw_regs *regs, char *err,
		    size_t errlen)
{
	uint32_t off, cap;
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
	if ((rc = hb_rd(hb, CXL_CM_OFFSET + off + CXL_HDM_CAP, &cap)))
		return hw_err(err, errlen, rc, "host bridge HDM capability read failed");
	/* CXL r3.1 8.2.4.20.1: Decoder Count encoding */
	int n = vcxl_hdm_count_decode(VCXL_FIELD_GET(CXL_HDM_CAP_DECODER_COUNT, cap));
	if (n <= 0 || CXL_CM_OFFSET + off + CXL_HDM_CAP_SIZE((unsigned)n) > HB_CM_END)
		return hw_err(err, errlen, -ENODEV,
			      "host bridge HDM capability 0x%08x: bad decoder count", cap);
	hb->hdm_off = CXL_CM_OFFSET + off;
	hb->hdm_count = (unsigned)n;
	return 0;
}

int vcxl_hw_hb_read_decoder(struct vcxl_hw_hb *hb, unsigned n, uint64_t *base, uint64_t *size,
			    uint32_t *ctrl, uint32_t *tl_lo)
{
	uint32_t bl, bh, sl, sh;
	int rc;

	if (!hb->hdm_off || n >= hb->hdm_count)
		return -ENOENT;
	if ((rc = hb_rd(hb, hb->hdm_off + CXL_HDM_DEC_BASE_LO(n), &bl)) ||
	    (rc = hb_rd(hb, hb->hdm_off + CXL_HDM_DEC_BASE_HI(n), &bh)) ||
	    (rc = hb_rd(hb, hb->hdm_off + CXL_HDM_DEC_SIZE_LO(n), &sl)) ||
	    (rc = hb_rd(hb, hb->hdm_off + CXL_HDM_DEC_SIZE_HI(n), &sh)) ||
	    (rc = hb_rd(hb, hb->hdm_off + CXL_HDM_DEC_CTRL(n), ctrl)) ||
	    (rc = hb_rd(hb, hb->hdm_off + CXL_HDM_DEC_TL_LO(n), tl_lo)))
		return rc;
	*base = ((uint64_t)bh << 32) | (bl & CXL_HDM_DEC_LO_MASK);
	*size = ((uint64_t)sh << 32) | (sl & CXL_HDM_DEC_LO_MASK);
	return 0;
}

static int hb_clear(struct vcxl_hw_hb *hb, unsigned n)
{
	static const uint32_t regs[6] = {CXL_HDM_DEC_SIZE_HI(0), CXL_HDM_DEC_SIZE_LO(0),
					 CXL_HDM_DEC_BASE_HI(0), CXL_HDM_DEC_BASE_LO(0),
					 CXL_HDM_DEC_TL_HI(0),	 CXL_HDM_DEC_TL_LO(0)};
	uint32_t ctrl;
	int rc = hb_rd(hb, hb->hdm_off + CXL_HDM_DEC_CTRL(n), &ctrl);

	if (!rc)
		rc = hb_wr(hb, hb->hdm_off + CXL_HDM_DEC_CTRL(n), ctrl & ~CXL_HDM_DEC_CTRL_COMMIT);
	for (unsigned i = 0; i < 6 && !rc; i++)
		rc = hb_wr(hb, hb->hdm_off + regs[i] + n * CXL_HDM_DECODER_STRIDE, 0);
	return rc;
}

/* CXL r3.1 8.2.4.20.12: commit, then wait for Committed or Error Not Committed */
static int hb_await_commit(struct vcxl_hw_hb *hb, unsigned n, char *err, size_t errlen)
{
	uint64_t t0 = hw_now_ns();
	uint32_t ctrl;

	for (;;) {
		int rc = hb_rd(hb, hb->hdm_off + CXL_HDM_DEC_CTRL(n), &ctrl);
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
	*ready = false;
	for (unsigned n = 0; n < hb->hdm_count; n++) {
		uint64_t b, s;
		uint32_t ctrl, tl;
		int rc = vcxl_hw_hb_read_decoder(hb, n, &b, &s, &ctrl, &tl);
		if (rc)
			return hw_err(err, errlen, rc, "host bridge decoder %u: read failed", n);
		if (!(ctrl & CXL_HDM_DEC_CTRL_COMMITTED)) {
			*slot = n;
			return 0;
		}
		if (b == base && s == size && !VCXL_FIELD_GET(CXL_HDM_DEC_CTRL_IW, ctrl) &&
		    (tl & 0xff) == port) {
			*slot = n;
			*ready = true;
			return 0;
		}
		if (b < base + size && base < b + s)
			return hw_err(err, errlen, -EBUSY,
				      "host bridge decoder %u already decodes 0x%llx+0x%llx", n,
				      (unsigned long long)b, (unsigned long long)s);
	}
	return hw_err(err, errlen, -ENOSPC, "host bridge: all %u decoders are committed",
		      hb->hdm_count);
}

int vcxl_hw_hb_commit(struct vcxl_hw_hb *hb, uint64_t base, uint64_t size, uint8_t port,
		      bool hostonly, char *err, size_t errlen)
{
	unsigned n = 0;
	bool ready;
	uint32_t g, ctrl;
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
	if ((rc = hb_rd(hb, hb->hdm_off + CXL_HDM_GLOBAL_CTRL, &g)))
		return hw_err(err, errlen, rc, "host bridge HDM Global Control read failed");
	if (!(g & CXL_HDM_GCTRL_ENABLE)) {
		if ((rc = hb_wr(hb, hb->hdm_off + CXL_HDM_GLOBAL_CTRL, g | CXL_HDM_GCTRL_ENABLE)))
			return hw_err(err, errlen, rc,
				      "host bridge HDM Global Control write failed");
		hb->set_enable = true;
	}
	if ((rc = hb_rd(hb, hb->hdm_off + CXL_HDM_DEC_CTRL(n), &ctrl)))
		return hw_err(err, errlen, rc, "host bridge decoder %u: read failed", n);
	/* CXL r3.1 8.2.4.20.5-8: base, size, target list (port of interleave way 0),
	 * then Control: 1 way, 256 B granularity, target type, Commit */
	const uint32_t o = hb->hdm_off;
	ctrl &= ~(CXL_HDM_DEC_CTRL_IG | CXL_HDM_DEC_CTRL_IW | CXL_HDM_DEC_CTRL_HOSTONLY |
		  CXL_HDM_DEC_CTRL_COMMIT | CXL_HDM_DEC_CTRL_COMMITTED |
		  CXL_HDM_DEC_CTRL_COMMIT_ERR | CXL_HDM_DEC_CTRL_LOCK_ON_COMMIT);
	if (hostonly)
		ctrl |= CXL_HDM_DEC_CTRL_HOSTONLY;
	if ((rc = hb_wr(hb, o + CXL_HDM_DEC_BASE_HI(n), (uint32_t)(base >> 32))) ||
	    (rc = hb_wr(hb, o + CXL_HDM_DEC_BASE_LO(n), (uint32_t)base & CXL_HDM_DEC_LO_MASK)) ||
	    (rc = hb_wr(hb, o + CXL_HDM_DEC_SIZE_HI(n), (uint32_t)(size >> 32))) ||
	    (rc = hb_wr(hb, o + CXL_HDM_DEC_SIZE_LO(n), (uint32_t)size & CXL_HDM_DEC_LO_MASK)) ||
	    (rc = hb_wr(hb, o + CXL_HDM_DEC_TL_HI(n), 0)) ||
	    (rc = hb_wr(hb, o + CXL_HDM_DEC_TL_LO(n), port)) ||
	    (rc = hb_wr(hb, o + CXL_HDM_DEC_CTRL(n), ctrl | CXL_HDM_DEC_CTRL_COMMIT))) {
		hw_err(err, errlen, rc, "host bridge decoder %u: write failed", n);
		goto undo;
	}
	if ((rc = hb_await_commit(hb, n, err, errlen)))
		goto undo;
	hb->decoder = (int)n;
	return 0;
undo:
	hb_clear(hb, n);
	if (hb->set_enable && !hb_rd(hb, hb->hdm_off + CXL_HDM_GLOBAL_CTRL, &g))
		hb_wr(hb, hb->hdm_off + CXL_HDM_GLOBAL_CTRL, g & ~CXL_HDM_GCTRL_ENABLE);
	hb->set_enable = false;
	return rc;
}

void vcxl_hw_hb_decommit(struct vcxl_hw_hb *hb)
{
	uint32_t g;

	if (!hb->hdm_off || hb->decoder < 0)
		return;
	hb_clear(hb, (unsigned)hb->decoder);
	hb->decoder = -1;
	if (hb->set_enable && !hb_rd(hb, hb->hdm_off + CXL_HDM_GLOBAL_CTRL, &g))
		hb_wr(hb, hb->hdm_off + CXL_HDM_GLOBAL_CTRL, g & ~CXL_HDM_GCTRL_ENABLE);
	hb->set_enable = false;
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
