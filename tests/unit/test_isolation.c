// SPDX-License-Identifier: BSD-3-Clause
/*
 * Isolation: 100,000 random guest accesses (config, BAR0, BAR2; random
 * offsets, widths, values; biased towards the emulated DVSEC and HDM
 * decoders, with commits and Control2 CXL-reset triggers mixed in) must never
 * change a host-owned register on the device: the physical HDM decoders and
 * Global Control, the CM capability array, RAS, the Device DVSEC (Control,
 * Lock, Ranges, headers) and the Register Locator. Checked after every access
 * by reading the model through its backend.
 */
#include <errno.h>
#include <linux/pci_regs.h>
#include <string.h>

#include "be_wrap.h"
#include "tap.h"
#include "host/host_cxl.h"
#include "model/model.h"
#include "vfio-cxl/vfio_cxl.h"
#include "vdev_util.h"

#define G	VCXL_HPA_GRANULE
#define NACCESS 100000

static uint64_t rng = 0x9e3779b97f4a7c15ull;

static uint64_t rnd(void)
{
	rng ^= rng << 13;
	rng ^= rng >> 7;
	rng ^= rng << 17;
	return rng;
}

static unsigned rwidth(void)
{
	static const unsigned w[] = {1, 2, 4, 4, 8};
	return w[rnd() % 5];
}

/* Values with a bias to bits that matter: triggers, commit, lock, enables. */
static uint64_t rvalue(void)
{
	switch (rnd() % 6) {
	case 0:
		return 0;
	case 1:
		return ~0ull;
	case 2:
		return 1ull << (rnd() % 32);
	default:
		return rnd();
	}
}

struct stats {
	unsigned long accesses, errors, commits_ok, commits_err, cxl_resets, flr_writes;
};

int main(void)
{
	struct vcxl_model_cfg mc = {
	    .mem_size = 2 * G, .decoders = 2, .comp_at = VCXL_COMP_AT_MIDDLE};
	struct vcxl_model *m;
	struct vcxl_host h;
	struct vcxl_vdev *v;
	struct vcxl_vdev_info info;
	struct stats st = {0};
	char err[200];

	if (vcxl_model_create(&mc, &m)) {
		ok(0, "model");
		return done();
	}
	struct vcxl_backend *raw = vcxl_model_backend(m);
	vcxl_host_init(&h);
	vcxl_host_add_window(&h, VCXL_HOST_DEFAULT_WIN_BASE, 64 * G, VCXL_HOST_DEFAULT_WIN_FLAGS);
	struct vcxl_vdev_cfg vc = {.host = &h, .region_size = G, .guest_decoders = 2};
	if (!ok(vcxl_vdev_create(raw, &vc, &v, err, sizeof(err)) == 0, "vdev: %s", err)) {
		vcxl_model_destroy(m);
		return done();
	}
	vcxl_vdev_ops.get_info(v, &info);
	const struct vcxl_cxl_dev *d = vcxl_vdev_host_dev(v);
	const struct vcxl_region *r = vcxl_vdev_region(v);
	uint32_t dv = d->dvsec;
	uint64_t comp = info.cxl.comp_offset, hdm = info.cxl.hdm_offset;
	struct host_state base, now;
	uint32_t pcie = 0;
	vcxl_host_find_cap(raw, PCI_CAP_ID_EXP, &pcie);
	hs_take(raw, d, &base);
	ok(base.n > 60, "%u host-owned dwords watched", base.n);
	unsigned long bad = 0;

	for (unsigned long i = 0; i < NACCESS; i++) {
		unsigned kind = (unsigned)(rnd() % 100), w = rwidth();
		uint64_t val = rvalue(), off;
		uint32_t region;
		bool write = rnd() % 3 != 0;

		if (kind < 25) { /* the emulated DVSEC */
			region = VFIO_PCI_CONFIG_REGION_INDEX;
			off = dv + rnd() % CXL_DVSEC_DEVICE_LEN;
			if (w == 8)
				w = 4;
			if (rnd() % 8 == 0) { /* Initiate CXL Reset */
				off = dv + CXL_DVSEC_CTRL2;
				w = 2;
				val = CXL_DVSEC_CTRL2_INIT_RESET | (rnd() & 0xffff);
				write = true;
				st.cxl_resets++;
			}
		} else if (kind < 35) { /* anywhere in config space */
			region = VFIO_PCI_CONFIG_REGION_INDEX;
			w = w == 8 ? 4 : w;
			off = rnd() % 4096;
		} else if (kind < 65) { /* the virtual HDM decoders */
			region = 0;
			off = hdm + (rnd() % info.cxl.hdm_size & ~3ull);
			w = rnd() % 4 ? 4 : 8;
			if (rnd() % 6 == 0) { /* a sensible commit of a random decoder */
				unsigned n = (unsigned)(rnd() % 2);
				uint64_t gpa = (rnd() % 64) * G, sz = (1 + rnd() % 4) * G;
				g_wr(v, 0, hdm + CXL_HDM_GLOBAL_CTRL, 4, CXL_HDM_GCTRL_ENABLE);
				g_wr(v, 0, hdm + CXL_HDM_DEC_BASE_LO(n), 8, gpa);
				g_wr(v, 0, hdm + CXL_HDM_DEC_SIZE_LO(n), 8, sz);
				off = hdm + CXL_HDM_DEC_CTRL(n);
				w = 4;
				val = CXL_HDM_DEC_CTRL_COMMIT |
				      (rnd() & CXL_HDM_DEC_CTRL_LOCK_ON_COMMIT);
				write = true;
			}
		} else if (kind < 75) { /* anywhere in the component block */
			region = 0;
			off = comp + rnd() % 0x10000;
		} else if (kind < 85) { /* anywhere in BAR0 */
			region = 0;
			off = rnd() % VCXL_MODEL_BAR0_SIZE;
		} else { /* BAR2: accelerator + MSI-X */
			region = 2;
			off = rnd() % VCXL_MODEL_BAR2_SIZE;
			/* keep the job engine's doorbell out: a job is device work, not a
			 * register access, and is covered by the model's own tests */
			if ((off & ~7ull) == ACCEL_REG_DOORBELL)
				off = ACCEL_REG_JOB_PATTERN;
		}
		if (write && region == VFIO_PCI_CONFIG_REGION_INDEX) {
			/* count FLR attempts through Device Control (a virtual reset) */
			if (pcie && off <= pcie + PCI_EXP_DEVCTL + 1 &&
			    pcie + PCI_EXP_DEVCTL + 1 < off + w &&
			    ((val >> (8 * (pcie + PCI_EXP_DEVCTL + 1 - off))) & 0x80))
				st.flr_writes++;
		}
		int rc = write ? vcxl_vdev_ops.region_write(v, region, off, &val, w)
			       : vcxl_vdev_ops.region_read(v, region, off, &val, w);
		st.accesses++;
		st.errors += rc != 0;
		if (region == 0 && write && off >= hdm && off < hdm + info.cxl.hdm_size &&
		    (off - hdm - CXL_HDM_DEC_CTRL(0)) % CXL_HDM_DECODER_STRIDE == 0) {
			uint32_t c = (uint32_t)g_rd(v, 0, off, 4, NULL);
			st.commits_ok += !!(c & CXL_HDM_DEC_CTRL_COMMITTED);
			st.commits_err += !!(c & CXL_HDM_DEC_CTRL_COMMIT_ERR);
		}
		hs_take(raw, d, &now);
		int k = hs_diff(&base, &now);
		if (k >= 0) {
			if (bad++ < 5)
				diag("access %lu (%s region %u off 0x%llx w %u val 0x%llx): host "
				     "register 0x%x changed 0x%x -> 0x%x",
				     i, write ? "write" : "read", region, (unsigned long long)off,
				     w, (unsigned long long)val, base.where[k], base.val[k],
				     now.val[k]);
			base = now; /* report each change once */
		}
	}
	is(bad, 0, "%lu random guest accesses changed no host-owned register", st.accesses);
	is(vcxl_region_verify(r), 0, "the host's physical decoder still decodes the region");
	diag("%lu refused accesses, %lu committed / %lu refused guest commits, %lu CXL reset "
	     "triggers, %lu FLR writes",
	     st.errors, st.commits_ok, st.commits_err, st.cxl_resets, st.flr_writes);
	ok(st.commits_ok > 100, "guest commits succeeded (%lu)", st.commits_ok);
	ok(st.commits_err > 100, "guest commits were refused too (%lu)", st.commits_err);
	ok(st.cxl_resets > 1000, "CXL reset triggers issued (%lu)", st.cxl_resets);
	ok(st.errors > 0, "some accesses were refused (bad widths) without harm");
	/* the data path is intact after all that */
	uint8_t *dev = vcxl_model_mem(m);
	vcxl_vdev_ops.region_write(v, 9, 0x100, "still here", 10);
	ok(dev && memcmp(dev + r->dpa + 0x100, "still here", 10) == 0,
	   "region still maps device memory");
	vcxl_vdev_destroy(v);
	vcxl_host_fini(&h);
	vcxl_model_destroy(m);
	return done();
}
