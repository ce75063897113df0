// SPDX-License-Identifier: BSD-3-Clause
/*
 * Host CXL core: device bring-up through the backend (what Linux's cxl_pci
 * probe does for a Type-2 device: DVSEC, Register Locator, component
 * registers, HDM decoder enumeration, range active, media ready).
 */
#include <errno.h>
#include <linux/pci_regs.h>
#include <stdlib.h>
#include <string.h>

#include "host_priv.h"
#include "cxl/cxl_spec.h"

#define CFG_SPACE_SIZE 4096u
#define POLL_NS	       (10 * NS_PER_MS)
/* Linux waits 1.5 s for Memory_Info_Valid; the spec allows 1 s [spec]. */
#define INFO_VALID_TMO_NS (1500 * NS_PER_MS)
#define CM_CAP_MAX	  ((CXL_CM_SIZE / 4) - 1)

/* ---- Capability discovery --------------------------------------------- */

/* PCIe r6 7.6.3: walk the extended capability list from 0x100 */
int vcxl_ext_cap_walk(struct vcxl_backend *be, vcxl_ext_cap_fn fn, void *opaque)
{
	uint8_t seen[(CFG_SPACE_SIZE - PCIE_EXT_CAP_START) / 4 / 8] = {0};
	uint32_t off = PCIE_EXT_CAP_START;

	while (off) {
		uint32_t hdr;
		int rc;

		if (off < PCIE_EXT_CAP_START || off > CFG_SPACE_SIZE - 4 || (off & 3))
			return -EINVAL;
		unsigned idx = (off - PCIE_EXT_CAP_START) / 4;
		if (seen[idx / 8] & (1u << (idx % 8)))
			return -ELOOP;
		seen[idx / 8] |= (uint8_t)(1u << (idx % 8));
		rc = cfg_rd(be, off, 4, &hdr);
		if (rc)
			return rc;
		if (hdr == 0 || hdr == 0xffffffffu)
			return 0; /* no (more) capabilities, or device gone */
		rc = fn(opaque, off, hdr);
		if (rc)
			return rc > 0 ? 0 : rc;
		off = VCXL_FIELD_GET(PCIE_EXT_CAP_NEXT_MASK, hdr);
	}
	return 0;
}

struct dvsec_find {
	struct vcxl_backend *be;
	uint16_t vendor, id;
	uint32_t off, len;
	int rc;
};

static int dvsec_match(void *opaque, uint32_t off, uint32_t hdr)
{
	struct dvsec_find *f = opaque;
	uint32_t h1, h2;

	if (VCXL_FIELD_GET(PCIE_EXT_CAP_ID_MASK, hdr) != PCIE_EXT_CAP_ID_DVSEC)
		return 0;
	f->rc = cfg_rd(f->be, off + PCIE_DVSEC_HEADER1, 4, &h1);
	if (!f->rc)
		f->rc = cfg_rd(f->be, off + PCIE_DVSEC_HEADER2, 2, &h2);
	if (f->rc)
		return f->rc;
	if (VCXL_FIELD_GET(PCIE_DVSEC_HDR1_VENDOR, h1) != f->vendor ||
	    VCXL_FIELD_GET(PCIE_DVSEC_HDR2_ID, h2) != f->id)
		return 0;
	f->off = off;
	f->len = VCXL_FIELD_GET(PCIE_DVSEC_HDR1_LEN, h1);
	return 1;
}

int vcxl_host_find_dvsec(struct vcxl_backend *be, uint16_t vendor, uint16_t id, uint32_t *off,
			 uint32_t *len)
{
	struct dvsec_find f = {.be = be, .vendor = vendor, .id = id};
	int rc = vcxl_ext_cap_walk(be, dvsec_match, &f);

	if (rc)
		return rc;
	if (f.rc)
		return f.rc;
	if (!f.off)
		return -ENOENT;
	*off = f.off;
	if (len)
		*len = f.len;
	return 0;
}

/* PCI 3.0 6.7: the standard capability list */
static int be_cfg_rd32(void *opaque, uint32_t off, uint32_t *v)
{
	return cfg_rd(opaque, off, 4, v);
}

/* The spec layer's walk over backend reads; a malformed list (a loop, a
 * pointer out of range) has no such capability, as before. */
int vcxl_host_find_cap(struct vcxl_backend *be, uint8_t id, uint32_t *off)
{
	int rc = vcxl_pci_find_cap(be_cfg_rd32, be, id, off);

	return rc == -ELOOP ? -ENOENT : rc;
}

/* ---- Component registers ---------------------------------------------- */

int vcxl_cxl_comp_read32(struct vcxl_cxl_dev *d, uint32_t off, uint32_t *v)
{
	uint64_t x = 0;
	int rc = d->be->ops->bar_read(d->be->dev, d->comp_bar, d->comp_off + off, 4, &x);

	*v = (uint32_t)x;
	return rc;
}

int vcxl_cxl_comp_write32(struct vcxl_cxl_dev *d, uint32_t off, uint32_t v)
{
	return d->be->ops->bar_write(d->be->dev, d->comp_bar, d->comp_off + off, 4, v);
}

int vcxl_cxl_read_decoder(struct vcxl_cxl_dev *d, unsigned n, struct vcxl_phys_decoder *out)
{
	struct vcxl_hdm_io io = hdm_io(d);
	struct vcxl_hdm_decoder dec;
	int rc;

	if (n >= d->hdm_count)
		return -EINVAL;
	if ((rc = vcxl_hdm_io_read(&io, n, &dec)))
		return rc;
	out->base = dec.base;
	out->size = dec.size;
	out->skip = dec.skip;
	out->ctrl = dec.ctrl;
	out->committed = dec.committed;
	out->error = dec.ctrl & CXL_HDM_DEC_CTRL_COMMIT_ERR;
	out->locked = dec.lock_on_commit && dec.committed;
	return 0;
}

/* ---- Bring-up steps --------------------------------------------------- */

/* CXL r3.1 8.1.3: the CXL Device DVSEC and what it says about memory */
static int probe_dvsec(struct vcxl_cxl_dev *d, char *err, size_t errlen)
{
	uint32_t h1, v;
	int rc = vcxl_host_find_dvsec(d->be, CXL_VENDOR_ID, CXL_DVSEC_ID_DEVICE, &d->dvsec,
				      &d->dvsec_len);

	if (rc == -ENOENT)
		return host_err(err, errlen, -ENODEV, "no CXL Device DVSEC (0x1e98, id 0)");
	if (rc)
		return host_err(err, errlen, rc, "extended capability walk failed (%d)", rc);
	if ((rc = cfg_rd(d->be, d->dvsec + PCIE_DVSEC_HEADER1, 4, &h1)))
		return host_err(err, errlen, rc, "DVSEC header read failed");
	d->dvsec_rev = (uint8_t)VCXL_FIELD_GET(PCIE_DVSEC_HDR1_REV, h1);
	if (d->dvsec_len < CXL_DVSEC_DEVICE_LEN_REV1)
		return host_err(err, errlen, -ENODEV, "CXL Device DVSEC too short (0x%x)",
				d->dvsec_len);
	if ((rc = cfg_rd(d->be, d->dvsec + CXL_DVSEC_CAP, 2, &v)))
		return host_err(err, errlen, rc, "DVSEC Capability read failed");
	d->cap = (uint16_t)v;
	if ((rc = cfg_rd(d->be, d->dvsec + CXL_DVSEC_CAP2, 2, &v)))
		return host_err(err, errlen, rc, "DVSEC Capability2 read failed");
	d->cap2 = (uint16_t)v;
	d->cap3 = 0;
	if (d->dvsec_len >= CXL_DVSEC_DEVICE_LEN) {
		if ((rc = cfg_rd(d->be, d->dvsec + CXL_DVSEC_CAP3, 2, &v)))
			return host_err(err, errlen, rc, "DVSEC Capability3 read failed");
		d->cap3 = (uint16_t)v;
	}
	if ((rc = cfg_rd(d->be, d->dvsec + CXL_DVSEC_CTRL, 2, &v)))
		return host_err(err, errlen, rc, "DVSEC Control read failed");
	d->ctrl_at_probe = (uint16_t)v;
	if (!(d->cap & CXL_DVSEC_CAP_MEM))
		return host_err(err, errlen, -ENODEV, "device is not Mem_Capable");
	d->ranges = VCXL_FIELD_GET(CXL_DVSEC_CAP_HDM_COUNT, d->cap);
	if (d->ranges < 1 || d->ranges > CXL_DVSEC_RANGE_MAX)
		return host_err(err, errlen, -ENODEV, "DVSEC HDM_Count %u invalid", d->ranges);
	return 0;
}

static int read_range_lo(struct vcxl_cxl_dev *d, unsigned i, uint32_t *lo)
{
	return cfg_rd(d->be, d->dvsec + CXL_DVSEC_RANGE_SIZE_LO(i), 4, lo);
}

/* Poll Size Low of range i until bit is set or tmo_ns passes. */
static int wait_range_bit(struct vcxl_cxl_dev *d, unsigned i, uint32_t bit, uint64_t tmo_ns,
			  uint32_t *lo)
{
	uint64_t start = vcxl_host_now_ns(d->host);

	for (;;) {
		int rc = read_range_lo(d, i, lo);
		if (rc)
			return rc;
		if (*lo == 0xffffffffu)
			return -ENODEV;
		if (*lo & bit)
			return 0;
		if (vcxl_host_now_ns(d->host) - start >= tmo_ns)
			return -ETIMEDOUT;
		vcxl_host_sleep_ns(d->host, POLL_NS);
	}
}

/* CXL r3.1 8.1.3.8.2: Memory_Active_Timeout encoding n means 1 << 2n seconds */
static uint64_t active_timeout_ns(uint32_t lo)
{
	unsigned n = VCXL_FIELD_GET(CXL_DVSEC_RANGE_ACTIVE_TMO, lo);

	if (n > CXL_DVSEC_ACTIVE_TMO_MAX_ENC)
		n = CXL_DVSEC_ACTIVE_TMO_MAX_ENC; /* reserved encodings: the longest */
	return (1ull << (2 * n)) * NS_PER_S;
}

int vcxl_cxl_await_range_active(struct vcxl_cxl_dev *d, char *err, size_t errlen)
{
	for (unsigned i = 0; i < d->ranges; i++) {
		uint32_t lo, hi;
		int rc = wait_range_bit(d, i, CXL_DVSEC_RANGE_INFO_VALID, INFO_VALID_TMO_NS, &lo);

		if (rc == -ETIMEDOUT)
			return host_err(err, errlen, rc, "range %u: Memory_Info_Valid not set", i);
		if (rc)
			return host_err(err, errlen, rc, "range %u: Size Low read failed", i);
		uint64_t tmo = active_timeout_ns(lo);
		rc = wait_range_bit(d, i, CXL_DVSEC_RANGE_ACTIVE, tmo, &lo);
		if (rc == -ETIMEDOUT)
			return host_err(err, errlen, rc,
					"range %u: Memory_Active not set within %llu s", i,
					(unsigned long long)(tmo / NS_PER_S));
		if (rc)
			return host_err(err, errlen, rc, "range %u: Size Low read failed", i);
		if ((rc = cfg_rd(d->be, d->dvsec + CXL_DVSEC_RANGE_SIZE_HI(i), 4, &hi)))
			return host_err(err, errlen, rc, "range %u: Size High read failed", i);
		d->range_size[i] = ((uint64_t)hi << 32) | (lo & CXL_DVSEC_RANGE_SIZE_LO_MASK);
		d->range_flags[i] = lo & VCXL_GENMASK(15, 0);
	}
	return 0;
}

/* CXL r3.1 8.1.9: Register Locator -> BAR + offset of a register block */
static int regloc_find(struct vcxl_cxl_dev *d, uint8_t rbi, unsigned *bir, uint64_t *off)
{
	unsigned n = (d->regloc_len - CXL_REGLOC_FIRST_ENTRY) / CXL_REGLOC_ENTRY_SIZE;

	for (unsigned k = 0; k < n; k++) {
		uint32_t lo, hi;
		int rc = cfg_rd(d->be, d->regloc + CXL_REGLOC_BLOCK_LO(k), 4, &lo);
		if (!rc)
			rc = cfg_rd(d->be, d->regloc + CXL_REGLOC_BLOCK_HI(k), 4, &hi);
		if (rc)
			return rc;
		struct vcxl_regloc_entry e;
		vcxl_regloc_decode(lo, hi, &e);
		if (e.id != rbi)
			continue;
		*bir = e.bir;
		*off = e.offset;
		return 0;
	}
	return -ENOENT;
}

/* A register block must lie in a memory BAR, 64 KiB aligned, wholly inside it. */
static int check_block(struct vcxl_cxl_dev *d, const char *what, unsigned bir, uint64_t off,
		       uint64_t len, uint64_t *bar_size, char *err, size_t errlen)
{
	struct vcxl_bar_info bi;
	int rc;

	if (bir >= VCXL_NUM_BARS)
		return host_err(err, errlen, -ENODEV, "%s block: BIR %u is not a BAR", what, bir);
	if ((rc = d->be->ops->bar_info(d->be->dev, bir, &bi)))
		return host_err(err, errlen, rc, "%s block: BAR%u info failed", what, bir);
	if (!bi.size || !(bi.flags & VCXL_BAR_PRESENT) || (bi.flags & VCXL_BAR_IO))
		return host_err(err, errlen, -ENODEV, "%s block: BAR%u is not a memory BAR", what,
				bir);
	if (off & (VCXL_SZ_64K - 1))
		return host_err(err, errlen, -ENODEV,
				"%s block: offset 0x%llx in BAR%u is not 64 KiB aligned", what,
				(unsigned long long)off, bir);
	if (off > bi.size || bi.size - off < len)
		return host_err(err, errlen, -ENODEV,
				"%s block: 0x%llx+0x%llx lies outside BAR%u (size 0x%llx)", what,
				(unsigned long long)off, (unsigned long long)len, bir,
				(unsigned long long)bi.size);
	*bar_size = bi.size;
	return 0;
}

static int probe_regloc(struct vcxl_cxl_dev *d, char *err, size_t errlen)
{
	uint64_t bar_size;
	int rc = vcxl_host_find_dvsec(d->be, CXL_VENDOR_ID, CXL_DVSEC_ID_REG_LOCATOR, &d->regloc,
				      &d->regloc_len);

	if (rc == -ENOENT)
		return host_err(err, errlen, -ENODEV, "no Register Locator DVSEC");
	if (rc)
		return host_err(err, errlen, rc, "Register Locator lookup failed (%d)", rc);
	if (d->regloc_len < CXL_REGLOC_FIRST_ENTRY)
		return host_err(err, errlen, -ENODEV, "Register Locator too short");
	rc = regloc_find(d, CXL_REGLOC_RBI_COMPONENT, &d->comp_bar, &d->comp_off);
	if (rc == -ENOENT)
		return host_err(err, errlen, -ENODEV, "Register Locator lists no component block");
	if (rc)
		return host_err(err, errlen, rc, "Register Locator read failed");
	rc = check_block(d, "component", d->comp_bar, d->comp_off, CXL_COMPONENT_BLOCK_SIZE,
			 &d->comp_bar_size, err, errlen);
	if (rc)
		return rc;
	rc = regloc_find(d, CXL_REGLOC_RBI_MEMDEV, &d->devregs_bar, &d->devregs_off);
	if (rc == 0) {
		/* at least the capability array + one header must fit */
		rc = check_block(d, "device", d->devregs_bar, d->devregs_off, VCXL_SZ_4K, &bar_size,
				 err, errlen);
		if (rc)
			return rc;
		d->has_devregs = true;
	} else if (rc != -ENOENT) {
		return host_err(err, errlen, rc, "Register Locator read failed");
	}
	return 0;
}

/* CXL r3.1 8.2.4: walk the CXL.cache/mem capability array to HDM and RAS */
static int probe_cm_caps(struct vcxl_cxl_dev *d, char *err, size_t errlen)
{
	uint32_t hdr, cap;
	int rc = vcxl_cxl_comp_read32(d, CXL_CM_OFFSET, &hdr);

	if (rc)
		return host_err(err, errlen, rc, "component block read failed");
	if (VCXL_FIELD_GET(CXL_CM_CAP_HDR_ID, hdr) != CXL_CM_CAP_ID_ARRAY)
		return host_err(err, errlen, -ENODEV,
				"no CXL.cache/mem capability array header at component+0x1000");
	unsigned count = VCXL_FIELD_GET(CXL_CM_CAP_HDR_ARRAY_SIZE, hdr);
	if (count > CM_CAP_MAX)
		return host_err(err, errlen, -ENODEV, "capability array size %u too big", count);
	for (unsigned k = 1; k <= count; k++) {
		uint32_t e;
		if ((rc = vcxl_cxl_comp_read32(d, CXL_CM_OFFSET + 4 * k, &e)))
			return host_err(err, errlen, rc, "capability element read failed");
		unsigned id = VCXL_FIELD_GET(CXL_CM_CAP_HDR_ID, e);
		uint32_t ptr = VCXL_FIELD_GET(CXL_CM_CAP_PTR, e);
		if (id == 0)
			continue; /* NULL entry: skip */
		if (ptr <= 4 * count || (ptr & 3) || ptr >= CXL_CM_SIZE)
			return host_err(err, errlen, -ENODEV,
					"capability %u: pointer 0x%x outside the CM range", id,
					ptr);
		switch (id) {
		case CXL_CM_CAP_ID_HDM: {
			if ((rc = vcxl_cxl_comp_read32(d, CXL_CM_OFFSET + ptr, &cap)))
				return host_err(err, errlen, rc, "HDM capability read failed");
			unsigned enc = VCXL_FIELD_GET(CXL_HDM_CAP_DECODER_COUNT, cap);
			/* CXL r3.1 8.2.4.20.1: decoder count encoding */
			int n = vcxl_hdm_count_decode(enc);
			if (n <= 0 || n > CXL_HDM_MAX_DECODERS_DEVICE)
				return host_err(
				    err, errlen, -ENODEV,
				    "HDM decoder count encoding 0x%x invalid for a device", enc);
			if (ptr + CXL_HDM_CAP_SIZE((unsigned)n) > CXL_CM_SIZE)
				return host_err(err, errlen, -ENODEV,
						"HDM capability overruns the CM range");
			d->hdm_off = CXL_CM_OFFSET + ptr;
			d->hdm_count = (unsigned)n;
			d->hdm_cap = cap;
			d->hdm_size = CXL_HDM_CAP_SIZE((unsigned)n);
			break;
		}
		case CXL_CM_CAP_ID_RAS:
			if (ptr + CXL_RAS_CAP_SIZE > CXL_CM_SIZE)
				return host_err(err, errlen, -ENODEV,
						"RAS capability overruns the CM range");
			d->ras_off = CXL_CM_OFFSET + ptr;
			break;
		case CXL_CM_CAP_ID_LINK:
			d->link_off = CXL_CM_OFFSET + ptr;
			break;
		default:
			break; /* not used by an endpoint's host core */
		}
	}
	if (!d->hdm_off)
		return host_err(err, errlen, -ENODEV,
				"no HDM decoder capability (DVSEC range emulation not supported)");
	return 0;
}

/* CXL r3.1 8.2.4.20: enumerate decoders; firmware-committed ones must be in
 * order and their DPA is reserved as Linux's init_hdm_decoder does. */
static int probe_decoders(struct vcxl_cxl_dev *d, char *err, size_t errlen)
{
	uint64_t dpa_end = 0;

	for (unsigned n = 0; n < d->hdm_count; n++) {
		struct vcxl_phys_decoder dec;
		int rc = vcxl_cxl_read_decoder(d, n, &dec);
		if (rc)
			return host_err(err, errlen, rc, "decoder %u read failed", n);
		if (!dec.committed)
			break;
		if (dec.base == ~0ull || dec.size == ~0ull || dec.size == 0)
			return host_err(err, errlen, -ENXIO,
					"decoder %u committed with invalid base/size", n);
		unsigned iw = VCXL_FIELD_GET(CXL_HDM_DEC_CTRL_IW, dec.ctrl);
		if (iw != CXL_HDM_IW_1)
			return host_err(err, errlen, -ENXIO,
					"decoder %u committed interleaved (IW %u): unsupported", n,
					iw);
		if (dpa_end + dec.skip + dec.size > d->dpa_capacity || dec.skip > d->dpa_capacity)
			return host_err(
			    err, errlen, -ENXIO, "decoder %u: DPA 0x%llx+0x%llx beyond capacity", n,
			    (unsigned long long)(dpa_end + dec.skip), (unsigned long long)dec.size);
		d->dpa[n] = (struct vcxl_dpa_slot){.skip = dec.skip,
						   .dpa = dpa_end + dec.skip,
						   .size = dec.size,
						   .used = true,
						   .firmware = true};
		dpa_end += dec.skip + dec.size;
		d->fw_committed = n + 1;
	}
	/* a committed decoder after an uncommitted one is out of order */
	for (unsigned n = d->fw_committed + 1; n < d->hdm_count; n++) {
		uint32_t ctrl;
		int rc = hdm_rd(d, CXL_HDM_DEC_CTRL(n), &ctrl);
		if (rc)
			return host_err(err, errlen, rc, "decoder %u read failed", n);
		if (ctrl & CXL_HDM_DEC_CTRL_COMMITTED)
			return host_err(err, errlen, -ENXIO, "decoder %u committed out of order",
					n);
	}
	return 0;
}

static int probe_capacity(struct vcxl_cxl_dev *d, char *err, size_t errlen)
{
	uint64_t dvsec_total = 0;

	for (unsigned i = 0; i < d->ranges; i++)
		dvsec_total += d->range_size[i];
	if (d->facts.mem_size && dvsec_total && dvsec_total < d->facts.mem_size)
		return host_err(err, errlen, -ENODEV,
				"device reports 0x%llx bytes of memory, variant expects 0x%llx",
				(unsigned long long)dvsec_total,
				(unsigned long long)d->facts.mem_size);
	d->dpa_capacity = d->facts.mem_size ? d->facts.mem_size : dvsec_total;
	if (!d->dpa_capacity || (d->dpa_capacity & (CXL_HDM_GRANULE - 1)))
		return host_err(err, errlen, -ENODEV, "device memory size 0x%llx unusable",
				(unsigned long long)d->dpa_capacity);
	return 0;
}

/* CXL r3.1 8.2.8.1/8.2.8.2: find the memory device capability */
static int find_memdev_cap(struct vcxl_cxl_dev *d, uint64_t *off)
{
	uint64_t lo = 0, hi = 0;
	struct vcxl_backend *be = d->be;
	int rc = be->ops->bar_read(be->dev, d->devregs_bar, d->devregs_off, 4, &lo);

	if (!rc)
		rc = be->ops->bar_read(be->dev, d->devregs_bar, d->devregs_off + 4, 4, &hi);
	if (rc)
		return rc;
	uint64_t arr = lo | (hi << 32);
	if (VCXL_FIELD_GET(CXLDEV_CAP_ARRAY_ID, arr) != CXLDEV_CAP_ARRAY_CAP_ID)
		return -ENOENT;
	unsigned count = VCXL_FIELD_GET(CXLDEV_CAP_ARRAY_COUNT, arr);
	for (unsigned i = 0; i < count && i < 64; i++) {
		uint64_t h = d->devregs_off + CXLDEV_CAP_HDR_FIRST + i * CXLDEV_CAP_HDR_STRIDE;
		uint64_t id = 0, coff = 0;
		if ((rc = be->ops->bar_read(be->dev, d->devregs_bar, h, 4, &id)) ||
		    (rc = be->ops->bar_read(be->dev, d->devregs_bar, h + CXLDEV_CAP_HDR_OFFSET, 4,
					    &coff)))
			return rc;
		if (VCXL_FIELD_GET(CXLDEV_CAP_HDR_ID, id) == CXLDEV_CAP_ID_MEMDEV) {
			*off = d->devregs_off + coff;
			return 0;
		}
	}
	return -ENOENT;
}

int vcxl_cxl_media_ready(struct vcxl_cxl_dev *d, char *err, size_t errlen)
{
	uint64_t off, st = 0;
	int rc;

	if (!d->has_devregs)
		return host_err(err, errlen, -ENODEV,
				"media-ready applies but the device has no device registers");
	rc = find_memdev_cap(d, &off);
	if (rc == -ENOENT)
		return host_err(err, errlen, -ENODEV,
				"media-ready applies but there is no memory device capability");
	if (rc)
		return host_err(err, errlen, rc, "device register read failed");
	rc = d->be->ops->bar_read(d->be->dev, d->devregs_bar, off + CXLMDEV_STATUS, 4, &st);
	if (rc)
		return host_err(err, errlen, rc, "memory device status read failed");
	if (VCXL_FIELD_GET(CXLMDEV_STATUS_MEDIA, st) != CXLMDEV_MEDIA_READY)
		return host_err(err, errlen, -EIO, "media not ready (status 0x%llx)",
				(unsigned long long)st);
	return 0;
}

static int find_doe(void *opaque, uint32_t off, uint32_t hdr)
{
	uint32_t *doe = opaque;

	if (VCXL_FIELD_GET(PCIE_EXT_CAP_ID_MASK, hdr) != PCIE_EXT_CAP_ID_DOE)
		return 0;
	*doe = off;
	return 1;
}

int vcxl_cxl_probe(struct vcxl_host *h, struct vcxl_backend *be, const struct vcxl_dev_facts *f,
		   struct vcxl_cxl_dev **out, char *err, size_t errlen)
{
	uint32_t id;
	int rc;

	*out = NULL;
	if (!h || !be || !be->ops)
		return host_err(err, errlen, -EINVAL, "no host or backend");
	struct vcxl_cxl_dev *d = calloc(1, sizeof(*d));
	if (!d)
		return host_err(err, errlen, -ENOMEM, "out of memory");
	d->be = be;
	d->host = h;
	if (f)
		d->facts = *f;
	if ((rc = cfg_rd(be, PCI_VENDOR_ID, 4, &id))) {
		if (rc == -ENODEV)
			host_err(err, errlen, rc, "device not present (removed?)");
		else
			host_err(err, errlen, rc, "config read failed (%d)", rc);
		goto fail;
	}
	if (id == 0xffffffffu || (id & 0xffff) == 0xffff) {
		rc = host_err(err, errlen, -ENODEV, "device not present");
		goto fail;
	}
	d->vendor = (uint16_t)id;
	d->device = (uint16_t)(id >> 16);
	if ((rc = cfg_rd(be, PCI_CLASS_REVISION, 4, &id))) {
		host_err(err, errlen, rc, "config read failed (%d)", rc);
		goto fail;
	}
	d->class_code = id >> 8;
	d->hostonly = d->facts.hostonly || d->class_code == CXL_PCI_CLASS_MEMDEV;
	if ((rc = probe_dvsec(d, err, errlen)) || (rc = probe_regloc(d, err, errlen)) ||
	    (rc = probe_cm_caps(d, err, errlen)))
		goto fail;
	/* Type-2 and Type-3 both need the range active; only Type-3 has media
	 * ready (reference patch 01 split cxl_await_range_active out of it). */
	if ((rc = vcxl_cxl_await_range_active(d, err, errlen)))
		goto fail;
	if (d->facts.media_ready && (rc = vcxl_cxl_media_ready(d, err, errlen)))
		goto fail;
	if ((rc = probe_capacity(d, err, errlen)) || (rc = probe_decoders(d, err, errlen)))
		goto fail;
	rc = vcxl_ext_cap_walk(be, find_doe, &d->doe_off);
	if (rc) {
		host_err(err, errlen, rc, "extended capability walk failed (%d)", rc);
		goto fail;
	}
	if (d->facts.no_cdat) {
		snprintf(d->note, sizeof(d->note), "CDAT not read (variant says so)");
	} else if (!d->doe_off) {
		snprintf(d->note, sizeof(d->note), "no DOE capability: CDAT built from facts");
	} else {
		char why[120] = "";
		rc = vcxl_host_read_cdat(d, &d->cdat, &d->cdat_len, why, sizeof(why));
		if (rc == -ENODEV || rc == -EIO) {
			/* the backend failed: that is an error, not a missing feature */
			host_err(err, errlen, rc, "CDAT read: %s", why);
			goto fail;
		}
		if (rc)
			snprintf(d->note, sizeof(d->note), "CDAT not read: %s", why);
	}
	*out = d;
	return 0;
fail:
	free(d->cdat);
	free(d);
	return rc;
}

void vcxl_cxl_remove(struct vcxl_cxl_dev *d)
{
	if (!d)
		return;
	free(d->cdat);
	free(d);
}
