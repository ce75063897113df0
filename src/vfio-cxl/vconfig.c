// SPDX-License-Identifier: BSD-3-Clause
/*
 * vfio-cxl core: the guest's config space. One per-dword route map decides
 * for every byte whether it is emulated (CXL Device DVSEC, virtual DOE),
 * passed through, or read-only; see enum vcfg_route.
 */
#include <endian.h>
#include <errno.h>
#include <linux/pci_regs.h>
#include <stdlib.h>
#include <string.h>

#include "vdev_priv.h"

#define CDAT_BUF_SIZE 512
/* Guest-visible CDAT defaults when the device gave none (QEMU's Type-3 values) */
#define CDAT_DEF_READ_LAT_NS  150
#define CDAT_DEF_WRITE_LAT_NS 250
#define CDAT_DEF_BW_GBS	      16

/* ---- Virtual CXL Device DVSEC ----------------------------------------- */

static uint32_t vdvsec(const struct vcxl_vdev *v, uint32_t reg)
{
	return v->dev->dvsec + reg;
}

/* CXL r3.1 8.1.3.5 / 8.1.3.8.2: live fields come from the device on read */
static void vdvsec_refresh(void *opaque, struct vcxl_dvsec_device *d, uint32_t dvsec_off)
{
	struct vcxl_vdev *v = opaque;
	uint64_t x = 0;

	if (dvsec_off == CXL_DVSEC_CTRL2) {
		const uint32_t live = CXL_DVSEC_STATUS2_CACHE_INV | CXL_DVSEC_STATUS2_PM_INIT_DONE;
		if (v->be->ops->cfg_read(v->be->dev, vdvsec(v, CXL_DVSEC_STATUS2), 2, &x) ||
		    x == 0xffff)
			return;
		vcxl_rf_update32(d->rf, d->base + CXL_DVSEC_CTRL2, live << 16, (uint32_t)x << 16);
	} else if (dvsec_off == CXL_DVSEC_RANGE_SIZE_LO(0)) {
		/* the exposed region lives in the device's range 0 */
		const uint32_t live = CXL_DVSEC_RANGE_INFO_VALID | CXL_DVSEC_RANGE_ACTIVE;
		if (v->be->ops->cfg_read(v->be->dev, vdvsec(v, CXL_DVSEC_RANGE_SIZE_LO(0)), 4,
					 &x) ||
		    x == 0xffffffffu)
			return;
		vcxl_rf_update32(d->rf, d->base + CXL_DVSEC_RANGE_SIZE_LO(0), live, (uint32_t)x);
	}
}

/* CXL r3.1 8.1.3.4: Control2 triggers. Initiate CXL Reset is virtual (done
 * once the write completes); Cache WB+Invalidate goes to the device, whose
 * Control2 is otherwise left exactly as it is. */
static void vdvsec_ctrl2_trigger(void *opaque, struct vcxl_dvsec_device *d, uint16_t bits)
{
	struct vcxl_vdev *v = opaque;
	uint64_t c2 = 0;

	if (bits & CXL_DVSEC_CTRL2_INIT_RESET)
		v->pending_cxl_reset = true;
	if ((bits & CXL_DVSEC_CTRL2_INIT_CACHE_WBI) && (v->dev->cap & CXL_DVSEC_CAP_CACHE_WBI) &&
	    !v->be->ops->cfg_read(v->be->dev, vdvsec(v, CXL_DVSEC_CTRL2), 2, &c2) && c2 != 0xffff) {
		c2 &= ~(uint64_t)(CXL_DVSEC_CTRL2_INIT_RESET);
		v->be->ops->cfg_write(v->be->dev, vdvsec(v, CXL_DVSEC_CTRL2), 2,
				      c2 | CXL_DVSEC_CTRL2_INIT_CACHE_WBI);
	}
}

static const struct vcxl_dvsec_device_ops vdvsec_ops = {
    .ctrl2_trigger = vdvsec_ctrl2_trigger,
    .refresh = vdvsec_refresh,
};

/* The guest's DVSEC: a snapshot of the device's, describing the exposed
 * region as range 1 (HDM_Count 1), CXL Reset capable (it is virtual),
 * Control as after a conventional reset. */
static void vdvsec_cfg(const struct vcxl_vdev *v, struct vcxl_dvsec_device_cfg *c)
{
	const struct vcxl_cxl_dev *d = v->dev;
	uint16_t cap = d->cap;

	memset(c, 0, sizeof(*c));
	cap &= (uint16_t) ~(CXL_DVSEC_CAP_HDM_COUNT | CXL_DVSEC_CAP_RESET_TMO |
			    CXL_DVSEC_CAP_RESET_MEMCLR);
	cap |= (uint16_t)VCXL_FIELD_PREP(CXL_DVSEC_CAP_HDM_COUNT, 1) | CXL_DVSEC_CAP_RESET;
	c->cap = cap;
	c->cap2 = d->cap2;
	c->cap3 = d->cap3;
	c->ctrl = 0;
	c->range_size[0] = v->region->size;
	c->range_flags[0] = d->range_flags[0];
}

/* ---- Guest CDAT ----------------------------------------------------------- */

static uint64_t le_get(const uint8_t *p, unsigned n)
{
	uint64_t v = 0;

	for (unsigned i = 0; i < n; i++)
		v |= (uint64_t)p[i] << (8 * i);
	return v;
}

/* Take flags, latency and bandwidth of the device's DSMAS covering the region. */
static void cdat_from_device(const struct vcxl_vdev *v, struct vcxl_cdat_range *r)
{
	const uint8_t *t = v->dev->cdat;
	size_t len = v->dev->cdat_len;
	int handle = -1;

	if (!t || len < CDAT_HEADER_SIZE)
		return;
	for (int pass = 0; pass < 2; pass++) {
		for (size_t p = CDAT_HEADER_SIZE; p + 4 <= len;) {
			size_t sl = (size_t)le_get(t + p + 2, 2);
			if (sl < 4 || p + sl > len)
				break;
			const uint8_t *s = t + p;
			if (pass == 0 && s[0] == CDAT_TYPE_DSMAS && sl >= CDAT_DSMAS_SIZE) {
				uint64_t b = le_get(s + 8, 8), l = le_get(s + 16, 8);
				if (v->region->dpa >= b && v->region->dpa - b < l) {
					handle = s[4];
					r->dsmas_flags = s[5];
				}
			} else if (pass == 1 && s[0] == CDAT_TYPE_DSLBIS &&
				   sl >= CDAT_DSLBIS_SIZE && s[4] == handle) {
				uint64_t val = le_get(s + 8, 8) * le_get(s + 16, 2) / 1000;
				uint16_t v16 = val > 0xffff ? 0xffff : (uint16_t)val;
				switch (s[6]) {
				case HMAT_LB_DATA_READ_LATENCY:
					r->read_lat_ns = v16;
					break;
				case HMAT_LB_DATA_WRITE_LATENCY:
					r->write_lat_ns = v16;
					break;
				case HMAT_LB_DATA_READ_BANDWIDTH:
					r->read_bw_gbs = v16;
					break;
				case HMAT_LB_DATA_WRITE_BANDWIDTH:
					r->write_bw_gbs = v16;
					break;
				}
			} else if (pass == 1 && s[0] == CDAT_TYPE_DSEMTS &&
				   sl >= CDAT_DSEMTS_SIZE && s[4] == handle) {
				r->efi_type = s[5];
			}
			p += sl;
		}
		if (handle < 0)
			return;
	}
}

/* CDAT r1.03: the guest's table describes the exposed region, DPA 0..size */
static int vcdat_build(struct vcxl_vdev *v)
{
	struct vcxl_cdat_range r = {
	    .dpa_base = 0,
	    .dpa_len = v->region->size,
	    .efi_type = CDAT_DSEMTS_EFI_RESERVED, /* accelerator-private memory */
	    .read_lat_ns = CDAT_DEF_READ_LAT_NS,
	    .write_lat_ns = CDAT_DEF_WRITE_LAT_NS,
	    .read_bw_gbs = CDAT_DEF_BW_GBS,
	    .write_bw_gbs = CDAT_DEF_BW_GBS,
	};

	cdat_from_device(v, &r);
	v->cdat = malloc(CDAT_BUF_SIZE);
	if (!v->cdat)
		return -ENOMEM;
	int n = vcxl_cdat_build(v->cdat, CDAT_BUF_SIZE, &r, 1);
	if (n < 0) {
		free(v->cdat);
		v->cdat = NULL;
		return n;
	}
	v->cdat_len = (size_t)n;
	return 0;
}

/* ---- Route map ------------------------------------------------------------ */

static void route_set(struct vcxl_vdev *v, uint32_t off, uint32_t len, enum vcfg_route r)
{
	for (uint32_t d = off / 4; d < (off + len + 3) / 4 && d < VCFG_DWORDS; d++)
		v->route[d] = (uint8_t)r;
}

struct route_walk {
	struct vcxl_vdev *v;
	int rc;
};

/* PCIe r6 7.9.6: per extended capability, what the guest may touch */
static int route_ext_cap(void *opaque, uint32_t off, uint32_t hdr)
{
	struct route_walk *w = opaque;
	struct vcxl_vdev *v = w->v;
	uint16_t id = (uint16_t)VCXL_FIELD_GET(PCIE_EXT_CAP_ID_MASK, hdr);
	uint64_t h1 = 0, h2 = 0;

	route_set(v, off, 4, VCFG_RO);
	/* PCIe r6 6.30: the CDAT DOE is served virtually; any other DOE
	 * mailbox (CMA/SPDM, IDE, ...) is the host's: read-only */
	if (id == PCIE_EXT_CAP_ID_DOE) {
		bool virt = off == v->dev->doe_off && v->has_doe;
		route_set(v, off, PCI_DOE_CAP_SIZE, virt ? VCFG_EMUL : VCFG_RO);
		return 0;
	}
	if (id != PCIE_EXT_CAP_ID_DVSEC)
		return 0;
	if ((w->rc = v->be->ops->cfg_read(v->be->dev, off + PCIE_DVSEC_HEADER1, 4, &h1)) ||
	    (w->rc = v->be->ops->cfg_read(v->be->dev, off + PCIE_DVSEC_HEADER2, 2, &h2)))
		return w->rc;
	route_set(v, off + PCIE_DVSEC_HEADER1, 4, VCFG_RO);
	if (VCXL_FIELD_GET(PCIE_DVSEC_HDR1_VENDOR, h1) != CXL_VENDOR_ID)
		return 0;
	/* CXL DVSECs: Header 2 shares its dword with RO body fields */
	route_set(v, off + PCIE_DVSEC_HEADER2, 4, VCFG_RO);
	uint32_t len = (uint32_t)VCXL_FIELD_GET(PCIE_DVSEC_HDR1_LEN, h1);
	/* CXL r3.1 8.1: the Device DVSEC is emulated; every other CXL DVSEC
	 * (Register Locator, GPF, Flex Bus port, Test, MLD, ...) is host-owned
	 * and read-only: nothing the guest writes there reaches the device */
	if (VCXL_FIELD_GET(PCIE_DVSEC_HDR2_ID, h2) == CXL_DVSEC_ID_DEVICE && off == v->dev->dvsec)
		route_set(v, off, v->dvsec_len, VCFG_EMUL);
	else
		route_set(v, off, len, VCFG_RO);
	return 0;
}

static int route_build(struct vcxl_vdev *v)
{
	struct route_walk w = {.v = v};
	uint64_t devcap = 0;

	memset(v->route, VCFG_PASS, sizeof(v->route));
	if (v->pcie_cap) {
		int rc = v->be->ops->cfg_read(v->be->dev, v->pcie_cap + PCI_EXP_DEVCAP, 4, &devcap);
		if (rc)
			return rc;
		v->flr_capable = devcap & PCI_EXP_DEVCAP_FLR;
		route_set(v, v->pcie_cap + PCI_EXP_DEVCTL, 4, VCFG_DEVCTL);
	}
	/* no INTx (irq info says count 0): Interrupt Pin reads 0, Line is scratch */
	route_set(v, PCI_INTERRUPT_LINE, 4, VCFG_EMUL);
	int rc = vcxl_ext_cap_walk(v->be, route_ext_cap, &w);
	return rc ? rc : w.rc;
}

/* PCI 3.0 6.2.4: Interrupt Line (RW scratch), Interrupt Pin forced to 0 */
static int vintx_layout(struct vcxl_vdev *v)
{
	uint64_t dw = 0;
	int rc = v->be->ops->cfg_read(v->be->dev, PCI_INTERRUPT_LINE, 4, &dw);

	if (rc)
		return rc;
	dw &= ~(0xffull << (8 * (PCI_INTERRUPT_PIN - PCI_INTERRUPT_LINE)));
	rc = vcxl_rf_init_val(&v->vcfg, PCI_INTERRUPT_LINE, 4, dw);
	return rc ?: vcxl_rf_define(&v->vcfg, PCI_INTERRUPT_LINE, 1, 0xff, VCXL_RF_RW);
}

/* ---- Build / teardown ----------------------------------------------------- */

static uint32_t ext_cap_next(struct vcxl_vdev *v, uint32_t off, int *rc)
{
	uint64_t hdr = 0;

	*rc = v->be->ops->cfg_read(v->be->dev, off, 4, &hdr);
	return (uint32_t)VCXL_FIELD_GET(PCIE_EXT_CAP_NEXT_MASK, hdr);
}

int vcfg_build(struct vcxl_vdev *v, char *err, size_t errlen)
{
	struct vcxl_dvsec_device_cfg dc;
	int rc;

	if ((rc = vcxl_rf_init(&v->vcfg, VCXL_VDEV_CONFIG_SIZE)))
		return vdev_err(err, errlen, rc, "virtual config space: out of memory");
	v->vcfg_ready = true;
	rc = vcxl_host_find_cap(v->be, PCI_CAP_ID_EXP, &v->pcie_cap);
	if (rc && rc != -ENOENT)
		return vdev_err(err, errlen, rc, "capability list walk failed (%d)", rc);
	rc = vcxl_host_find_cap(v->be, PCI_CAP_ID_MSIX, &v->msix_cap);
	if (rc && rc != -ENOENT)
		return vdev_err(err, errlen, rc, "capability list walk failed (%d)", rc);

	/* CXL r3.1 8.1.3: the emulated Device DVSEC sits where the device's is */
	uint32_t next = ext_cap_next(v, v->dev->dvsec, &rc);
	if (rc)
		return vdev_err(err, errlen, rc, "DVSEC header read failed");
	v->dvsec_len =
	    v->dev->dvsec_len < CXL_DVSEC_DEVICE_LEN ? v->dev->dvsec_len : CXL_DVSEC_DEVICE_LEN;
	vdvsec_cfg(v, &dc);
	rc =
	    vcxl_dvsec_device_layout(&v->dvsec, &v->vcfg, v->dev->dvsec, next, &dc, &vdvsec_ops, v);
	if (rc)
		return vdev_err(err, errlen, rc, "virtual DVSEC layout failed (%d)", rc);

	/* PCIe r6 7.9.24: the guest's DOE is virtual, serving the guest CDAT */
	if (v->dev->doe_off) {
		next = ext_cap_next(v, v->dev->doe_off, &rc);
		if (rc)
			return vdev_err(err, errlen, rc, "DOE header read failed");
		if ((rc = vcdat_build(v)))
			return vdev_err(err, errlen, rc, "guest CDAT build failed (%d)", rc);
		rc =
		    vcxl_doe_layout(&v->doe, &v->vcfg, v->dev->doe_off, next, v->cdat, v->cdat_len);
		if (rc)
			return vdev_err(err, errlen, rc, "virtual DOE layout failed (%d)", rc);
		v->has_doe = true;
	}
	if ((rc = vintx_layout(v)))
		return vdev_err(err, errlen, rc, "config header read failed (%d)", rc);
	if ((rc = route_build(v)))
		return vdev_err(err, errlen, rc, "config route map build failed (%d)", rc);
	return 0;
}

void vcfg_fini(struct vcxl_vdev *v)
{
	if (v->vcfg_ready)
		vcxl_rf_fini(&v->vcfg);
	v->vcfg_ready = false;
	v->has_doe = false;
	free(v->cdat);
	v->cdat = NULL;
}

void vcfg_reset(struct vcxl_vdev *v, enum vdev_dvsec_reset dvsec, bool function)
{
	uint32_t b = v->dvsec.base, e = b + v->dvsec_len;

	if (dvsec == DVSEC_CONVENTIONAL)
		vcxl_rf_reset_range(&v->vcfg, b, v->dvsec_len);
	else if (dvsec == DVSEC_CXL_RESET)
		vcxl_dvsec_device_cxl_reset(&v->dvsec);
	if (function) {
		vcxl_rf_reset_range(&v->vcfg, 0, b);
		vcxl_rf_reset_range(&v->vcfg, e, VCXL_VDEV_CONFIG_SIZE - e);
		if (v->has_doe)
			vcxl_doe_reset(&v->doe);
	}
	v->pending_cxl_reset = false;
}

/* CXL r3.1 9.7 (CXL reset), in the guest's view only (vdev_reset_apply:
 * virtual decoders decommitted, the virtual DVSEC's non-sticky unlocked
 * fields to their defaults, as the spec layer says for any device), then
 * Reset Complete. The host's region and decoder are not touched. */
void vdev_virtual_cxl_reset(struct vcxl_vdev *v)
{
	uint32_t b = v->dvsec.base;

	vdev_reset_apply(v, VDEV_RESET_CXL);
	vcxl_rf_update32(&v->vcfg, b + CXL_DVSEC_CTRL2,
			 (uint32_t)(CXL_DVSEC_STATUS2_RESET_DONE | CXL_DVSEC_STATUS2_RESET_ERR)
			     << 16,
			 (uint32_t)CXL_DVSEC_STATUS2_RESET_DONE << 16);
	v->virtual_cxl_resets++;
}

/* ---- Access ----------------------------------------------------------- */

static uint64_t le_bytes(const uint8_t *p, unsigned n)
{
	return le_get(p, n);
}

static void put_bytes(uint8_t *p, unsigned n, uint64_t v)
{
	if (n == 4) { /* the common case as one store */
		uint32_t v32 = htole32((uint32_t)v);
		memcpy(p, &v32, 4);
		return;
	}
	for (unsigned i = 0; i < n; i++)
		p[i] = (uint8_t)(v >> (8 * i));
}

/* Largest access that stays in one dword: 4, 2 or 1 bytes, naturally aligned. */
static unsigned cfg_chunk(uint64_t off, size_t left)
{
	if (!(off & 3) && left >= 4)
		return 4;
	if (!(off & 1) && left >= 2)
		return 2;
	return 1;
}

static int vcfg_check(uint64_t off, size_t len)
{
	if (len == 0 || off >= VCXL_VDEV_CONFIG_SIZE || len > VCXL_VDEV_CONFIG_SIZE - off)
		return -EINVAL;
	return 0;
}

int vcfg_read(struct vcxl_vdev *v, uint64_t off, void *buf, size_t len)
{
	uint8_t *out = buf;
	int rc = vcfg_check(off, len);

	if (rc)
		return rc;
	if (len == 4 && !(off & 3) && v->route[off / 4] == VCFG_EMUL) {
		/* the common guest access: one emulated dword */
		uint64_t val = 0;
		rc = vcxl_rf_read(&v->vcfg, (uint32_t)off, 4, &val);
		if (!rc)
			put_bytes(out, 4, val);
		return rc;
	}
	for (uint64_t p = off; p < off + len;) {
		unsigned w = cfg_chunk(p, off + len - p);
		uint64_t val = 0;
		if (v->route[p / 4] == VCFG_EMUL)
			rc = vcxl_rf_read(&v->vcfg, (uint32_t)p, w, &val);
		else
			rc = v->be->ops->cfg_read(v->be->dev, (uint32_t)p, w, &val);
		if (rc)
			return rc;
		put_bytes(out + (p - off), w, val);
		p += w;
	}
	return 0;
}

/* PCIe r6 7.5.3.4: Initiate Function Level Reset, intercepted */
static int devctl_write(struct vcxl_vdev *v, uint32_t p, unsigned w, uint64_t val)
{
	uint32_t flr_byte = v->pcie_cap + PCI_EXP_DEVCTL + 1;
	uint8_t flr_bit = (uint8_t)(PCI_EXP_DEVCTL_BCR_FLR >> 8);
	bool flr = false;

	if (p <= flr_byte && flr_byte < p + w) {
		unsigned sh = 8 * (flr_byte - p);
		flr = (val >> sh) & flr_bit;
		val &= ~((uint64_t)flr_bit << sh);
	}
	int rc = v->be->ops->cfg_write(v->be->dev, p, w, val);
	if (!rc && flr && v->flr_capable)
		rc = vdev_reset_apply(v, VDEV_RESET_FLR);
	return rc;
}

int vcfg_write(struct vcxl_vdev *v, uint64_t off, const void *buf, size_t len)
{
	const uint8_t *in = buf;
	int rc = vcfg_check(off, len);

	if (rc)
		return rc;
	for (uint64_t p = off; p < off + len;) {
		unsigned w = cfg_chunk(p, off + len - p);
		uint64_t val = le_bytes(in + (p - off), w);
		switch (v->route[p / 4]) {
		case VCFG_EMUL:
			rc = vcxl_rf_write(&v->vcfg, (uint32_t)p, w, val);
			if (v->pending_cxl_reset)
				vdev_virtual_cxl_reset(v);
			break;
		case VCFG_RO:
			rc = 0; /* host-owned: the write is dropped */
			break;
		case VCFG_DEVCTL:
			rc = devctl_write(v, (uint32_t)p, w, val);
			break;
		default:
			rc = v->be->ops->cfg_write(v->be->dev, (uint32_t)p, w, val);
			break;
		}
		if (rc)
			return rc;
		p += w;
	}
	return 0;
}
