/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Shared by the fuzz harnesses, the corpus generator and the corpus replay
 * tests: one REAL device (the accelerator model behind the vfio-cxl core,
 * exactly as vcxl-server builds it), and the host-side oracle.
 *
 * Host-owned state is read through the model's backend, never through the
 * code under test:
 *  - every register tests/unit/be_wrap.h hs_take() watches (whole Device
 *    DVSEC minus its live status fields, Register Locator, CM capability
 *    array, every physical HDM decoder and Global Control, RAS);
 *  - every PCIe extended capability header and DVSEC header 1/2 dword, and
 *    the physical DOE Capabilities register (the guest's DOE is virtual);
 *  - canaries in device memory outside the exposed CXL region: the region is
 *    half of the device's memory, and 64 KiB on each side of it plus the last
 *    64 KiB of the device are filled with a pattern that must survive.
 * A violation prints what changed and aborts, which libFuzzer reports as a
 * crash with the input saved.
 */
#ifndef VCXL_FUZZ_DEV_H
#define VCXL_FUZZ_DEV_H

#include <linux/pci_regs.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fuzz_harness.h"
#include "unit/be_wrap.h"
#include "cxl/cxl_regs.h"
#include "host/host_cxl.h"
#include "model/model.h"
#include "server/server.h"
#include "vfio-cxl/vfio_cxl.h"

#define FZ_MEM_SIZE    (512ull << 20) /* device memory */
#define FZ_REGION_SIZE (256ull << 20) /* the CXL region: the other half is host-only */
#define FZ_CANARY_LEN  0x10000u
/* The client memory a DMAPAGES section may write (fuzz_mig_load's oracle 6,
 * gen_corpus's seed): one window */
#define FZ_DMA_WIN     0x100000ull
#define FZ_DMA_WIN_LEN 0x100000ull
#define FZ_MAX_CANARY  3
#define FZ_MAX_HDRS    64

struct fz_dev {
	struct vcxl_model *model;
	struct vcxl_vdev *vdev;
	struct vcxl_backend *be;
	const struct vcxl_cxl_dev *d;
	const struct vcxl_region *r;
	struct vcxl_vdev_info info;
	struct host_state hs;
	unsigned nhdr;
	uint32_t hdr_off[FZ_MAX_HDRS], hdr_val[FZ_MAX_HDRS];
	uint8_t *mem;
	unsigned ncanary;
	uint64_t canary[FZ_MAX_CANARY];
};

/* The canary pattern, the same in every canary block */
static inline const uint8_t *fz_canary_ref(void)
{
	static uint8_t ref[FZ_CANARY_LEN];
	static bool made;

	if (!made) {
		for (uint32_t i = 0; i < FZ_CANARY_LEN; i++)
			ref[i] = (uint8_t)(0xa5 ^ (i >> 3) ^ (i * 7));
		made = true;
	}
	return ref;
}

/* PCIe r6 7.9.6: every extended capability header, and DVSEC headers 1 and 2 */
static inline void fz_take_headers(struct fz_dev *f)
{
	uint32_t off = PCIE_EXT_CAP_START;

	f->nhdr = 0;
	for (int n = 0; off && n < 48 && f->nhdr + 3 <= FZ_MAX_HDRS; n++) {
		uint32_t h = raw_cfg32(f->be, off);

		if (h == 0 || h == ~0u)
			break;
		f->hdr_off[f->nhdr] = off;
		f->hdr_val[f->nhdr++] = h;
		if ((h & 0xffff) == PCIE_EXT_CAP_ID_DVSEC) {
			f->hdr_off[f->nhdr] = off + PCIE_DVSEC_HEADER1;
			f->hdr_val[f->nhdr++] = raw_cfg32(f->be, off + PCIE_DVSEC_HEADER1);
			f->hdr_off[f->nhdr] = off + PCIE_DVSEC_HEADER2;
			f->hdr_val[f->nhdr++] = raw_cfg32(f->be, off + PCIE_DVSEC_HEADER2);
		}
		off = h >> 20;
	}
	/* the physical DOE capability registers (its mailbox state is transient:
	 * an FLR the guest may cause resets it) */
	for (uint32_t o = PCI_DOE_CAP; f->d->doe_off && o < PCI_DOE_CTRL && f->nhdr < FZ_MAX_HDRS;
	     o += 4) {
		f->hdr_off[f->nhdr] = f->d->doe_off + o;
		f->hdr_val[f->nhdr++] = raw_cfg32(f->be, f->d->doe_off + o);
	}
}

static inline void fz_canary_add(struct fz_dev *f, uint64_t dpa)
{
	if (f->ncanary >= FZ_MAX_CANARY || dpa + FZ_CANARY_LEN > FZ_MEM_SIZE)
		return;
	memcpy(f->mem + dpa, fz_canary_ref(), FZ_CANARY_LEN);
	f->canary[f->ncanary++] = dpa;
}

/* The device as vcxl-server makes it; 0 or -errno. */
static inline int fz_dev_open(struct fz_dev *f, enum vcxl_comp_at at, unsigned guest_decoders)
{
	struct vcxl_model_cfg mc = {.mem_size = FZ_MEM_SIZE, .decoders = 2, .comp_at = at};
	struct vcxl_vdev_cfg vc = {.region_size = FZ_REGION_SIZE, .guest_decoders = guest_decoders};
	char err[200];
	int rc;

	memset(f, 0, sizeof(*f));
	rc = vcxl_model_create(&mc, &f->model);
	if (rc)
		return rc;
	f->be = vcxl_model_backend(f->model);
	rc = vcxl_vdev_create(f->be, &vc, &f->vdev, err, sizeof(err));
	if (rc) {
		fprintf(stderr, "fuzz: vdev: %s\n", err);
		vcxl_model_destroy(f->model);
		return rc;
	}
	f->d = vcxl_vdev_host_dev(f->vdev);
	f->r = vcxl_vdev_region(f->vdev);
	vcxl_vdev_ops.get_info(f->vdev, &f->info);
	f->mem = vcxl_model_mem(f->model);
	if (!f->mem) {
		vcxl_vdev_destroy(f->vdev);
		vcxl_model_destroy(f->model);
		return -ENOMEM;
	}
	if (f->r->dpa >= FZ_CANARY_LEN)
		fz_canary_add(f, f->r->dpa - FZ_CANARY_LEN);
	fz_canary_add(f, f->r->dpa + f->r->size);
	fz_canary_add(f, FZ_MEM_SIZE - FZ_CANARY_LEN);
	hs_take(f->be, f->d, &f->hs);
	fz_take_headers(f);
	return 0;
}

static inline void fz_dev_close(struct fz_dev *f)
{
	vcxl_vdev_destroy(f->vdev);
	vcxl_model_destroy(f->model);
	memset(f, 0, sizeof(*f));
}

/* Abort if any host-owned register (or, with mem, canary) changed; `when`
 * says after what. */
static inline void fz_check_host(struct fz_dev *f, const char *when, bool mem)
{
	struct host_state now;
	int k;

	hs_take(f->be, f->d, &now);
	k = hs_diff(&f->hs, &now);
	if (k >= 0)
		fz_fail("%s: host register %s+0x%x changed 0x%08x -> 0x%08x", when,
			f->hs.where[k] >> 28 ? "comp" : "cfg", f->hs.where[k] & 0x0fffffff,
			f->hs.val[k], now.val[k]);
	for (unsigned i = 0; i < f->nhdr; i++) {
		uint32_t v = raw_cfg32(f->be, f->hdr_off[i]);

		if (v != f->hdr_val[i])
			fz_fail("%s: host config dword 0x%x changed 0x%08x -> 0x%08x", when,
				f->hdr_off[i], f->hdr_val[i], v);
	}
	if (vcxl_region_verify(f->r))
		fz_fail("%s: the host's physical decoder no longer decodes the region", when);
	for (unsigned c = 0; mem && c < f->ncanary; c++)
		if (memcmp(f->mem + f->canary[c], fz_canary_ref(), FZ_CANARY_LEN))
			fz_fail("%s: device memory outside the region changed in DPA "
				"[0x%llx, +0x%x)",
				when, (unsigned long long)f->canary[c], FZ_CANARY_LEN);
}

#endif /* VCXL_FUZZ_DEV_H */
