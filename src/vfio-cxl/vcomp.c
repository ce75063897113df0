// SPDX-License-Identifier: BSD-3-Clause
/*
 * vfio-cxl core: the guest's component register block. The 64 KiB block in
 * the component BAR is trapped and served from a virtual register file: the
 * CM capability array, HDM decoders the guest commits at its own
 * guest-physical addresses, RAS (and Link) emulated. Nothing written here
 * reaches the device: the host core alone programs the physical decoder.
 */
#include <errno.h>
#include <string.h>

#include "vdev_priv.h"

/* The policy on top of the spec's commit rules: one way, 256 MiB aligned
 * base, and every decoder's share (skip included) inside the exposed region. */
static enum vcxl_hdm_commit_err vcomp_validate(void *opaque, struct vcxl_hdm *h, unsigned n,
					       const struct vcxl_hdm_decoder *d)
{
	struct vcxl_vdev *v = opaque;
	uint64_t region = v->region->size, used = 0;

	if (d->ways != 1 || VCXL_FIELD_GET(CXL_HDM_DEC_CTRL_IW, d->ctrl) != CXL_HDM_IW_1)
		return VCXL_HDM_ERR_POLICY;
	if (d->base & (CXL_HDM_GRANULE - 1))
		return VCXL_HDM_ERR_POLICY;
	if (d->size > region || d->skip > region)
		return VCXL_HDM_ERR_POLICY;
	for (unsigned i = 0; i < n; i++) {
		struct vcxl_hdm_decoder p;
		vcxl_hdm_decoder_get(h, i, &p);
		used += p.skip + p.size;
	}
	if (used > region || d->skip > region - used || d->size > region - used - d->skip)
		return VCXL_HDM_ERR_POLICY;
	return VCXL_HDM_OK;
}

/* Where decoder n's guest range lands in the region (its virtual DPA). */
uint64_t vcomp_region_off(const struct vcxl_hdm *h, unsigned n)
{
	uint64_t off = 0;

	for (unsigned i = 0; i <= n; i++) {
		struct vcxl_hdm_decoder p;
		vcxl_hdm_decoder_get(h, i, &p);
		off += p.skip + (i < n ? p.size : 0);
	}
	return off;
}

static void vcomp_changed(void *opaque, struct vcxl_hdm *h, unsigned n, bool on)
{
	struct vcxl_vdev *v = opaque;
	struct vcxl_hdm_decoder d;

	if (!v->hdm_notify)
		return;
	vcxl_hdm_decoder_get(h, n, &d);
	v->hdm_notify(v->hdm_notify_opaque, n, on, d.base, d.size, vcomp_region_off(h, n));
}

static const struct vcxl_hdm_ops vcomp_ops = {
    .validate = vcomp_validate,
    .changed = vcomp_changed,
};

/*
 * A firmware-committed region (CXL r3.1 8.2.4.20.7, 9.3): firmware commits and
 * locks the decoder at a host physical address of the platform's memory map.
 * The guest's platform firmware is its VMM, and only the VMM knows the VM's
 * CXL fixed memory windows, so after every conventional reset (open, VFIO
 * reset, a new tenant) virtual decoder 0 is left as firmware programmed it
 * but for the address: HDM Decoder Enable set, all of the region from DPA 0,
 * one way, Lock-On-Commit set, not committed. The VMM writes Base and sets
 * Commit before the guest runs; from then on the guest can neither move nor
 * decommit it. A CXL reset does not run firmware: it leaves the decoder as the
 * spec's reset values (docs/uapi.md "Firmware-committed regions").
 */
static void vcomp_firmware_preset(struct vcxl_vdev *v)
{
	struct vcxl_hdm *h = &v->comp.hdm;
	struct vcxl_hdm_decoder d;

	if (!v->region->firmware)
		return;
	vcxl_hdm_decoder_get(h, 0, &d);
	d.base = 0;
	d.size = v->region->size;
	d.skip = 0;
	d.ctrl = (d.ctrl & ~(uint32_t)(CXL_HDM_DEC_CTRL_IG | CXL_HDM_DEC_CTRL_IW)) |
		 (uint32_t)VCXL_FIELD_PREP(CXL_HDM_DEC_CTRL_IW, CXL_HDM_IW_1) |
		 CXL_HDM_DEC_CTRL_LOCK_ON_COMMIT;
	vcxl_rf_update32(&v->vcomp, h->off + CXL_HDM_GLOBAL_CTRL, CXL_HDM_GCTRL_ENABLE,
			 CXL_HDM_GCTRL_ENABLE);
	vcxl_hdm_program(h, 0, &d, false);
}

int vcomp_build(struct vcxl_vdev *v, char *err, size_t errlen)
{
	const struct vcxl_cxl_dev *d = v->dev;
	unsigned n = v->cfg.guest_decoders ? v->cfg.guest_decoders : d->hdm_count;
	int rc;

	if (n < 1 || n > CXL_HDM_MAX_DECODERS_DEVICE || vcxl_hdm_count_encode(n) < 0)
		return vdev_err(err, errlen, -EINVAL,
				"guest decoder count %u not encodable (1, 2, 4, 6, 8 or 10)", n);
	v->guest_decoders = n;
	struct vcxl_comp_cfg cc = {
	    .hdm_count = n,
	    /* granularity bits as the device; interleave is refused anyway (IW=1) */
	    .hdm_cap_flags = d->hdm_cap & (CXL_HDM_CAP_IL_11_8 | CXL_HDM_CAP_IL_14_12),
	    .ras = d->ras_off != 0,
	    .link = d->link_off != 0,
	    /* Target Range Type resets as the device's: HDM-D/DB (0) for a
	     * Type-2, HDM-H (1) for a Type-3. Either value commits. */
	    .hostonly_reset = d->hostonly,
	    .dpa_capacity = v->region->size,
	};
	if ((rc = vcxl_rf_init(&v->vcomp, CXL_COMPONENT_BLOCK_SIZE)))
		return vdev_err(err, errlen, rc, "virtual component block: out of memory");
	v->vcomp_ready = true;
	rc = vcxl_comp_layout(&v->comp, &v->vcomp, CXL_CM_OFFSET, &cc, &vcomp_ops, v);
	if (rc)
		return vdev_err(err, errlen, rc, "virtual component layout failed (%d)", rc);
	vcomp_firmware_preset(v);
	return 0;
}

void vcomp_fini(struct vcxl_vdev *v)
{
	if (v->vcomp_ready)
		vcxl_rf_fini(&v->vcomp);
	v->vcomp_ready = false;
}

/* off: from the start of the component block; len 1/2/4/8 */
int vcomp_access(struct vcxl_vdev *v, bool write, uint32_t off, unsigned len, uint64_t *val)
{
	if (write)
		return vcxl_rf_write(&v->vcomp, off, len, *val);
	return vcxl_rf_read(&v->vcomp, off, len, val);
}

/* Region 10 (COMP_REGS), off and len dword multiples: split as the register file's
 * rules allow (a 64-bit register as one 8-byte quantity, CXL r3.1 8.2.2), checked
 * whole first so that a refused access changes nothing. */
int vcomp_access_buf(struct vcxl_vdev *v, bool write, uint32_t off, void *buf, size_t len)
{
	if (write)
		return vcxl_rf_write_buf(&v->vcomp, off, buf, len);
	return vcxl_rf_read_buf(&v->vcomp, off, buf, len);
}

/* full: everything as at open (VFIO reset, client gone), a firmware-committed
 * region's decoder preset again; else a CXL reset, which
 * clears the decoders but keeps the sticky RAS state [spec]. */
void vcomp_reset(struct vcxl_vdev *v, bool full)
{
	vcxl_hdm_reset(&v->comp.hdm);
	if (full) {
		vcxl_rf_reset(&v->vcomp);
		vcomp_firmware_preset(v);
	}
}
