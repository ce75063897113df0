// SPDX-License-Identifier: BSD-3-Clause
/*
 * The vfio-cxl core and host core serving the model's Type-3 personality:
 * variant choice (by id, and by class code for an unknown CXL memory device),
 * the media-ready check a Type-3 gets and a Type-2 skips, the physical
 * decoder programmed HDM-H from a Type-3 capable window, the guest's virtual
 * decoders resetting HOSTONLY (also after FLR) and committing with it, the
 * region-must-cover-the-device rule, and the accelerator unchanged.
 */
#include <errno.h>
#include <linux/pci_regs.h>
#include <linux/vfio.h>
#include <string.h>

#include "tap.h"
#include "be_wrap.h"
#include "cxl/cxl_mbox.h"
#include "vfio-cxl/vfio_cxl.h"
#include "../../src/vfio-cxl/variant.h"

#define G256 VCXL_SZ_256M
#define WB   VCXL_HOST_DEFAULT_WIN_BASE

static struct vcxl_model *mk(enum vcxl_model_kind kind, uint64_t mem)
{
	struct vcxl_model_cfg c = {.mem_size = mem, .decoders = 2, .kind = kind};
	struct vcxl_model *m = NULL;

	if (vcxl_model_create(&c, &m))
		return NULL;
	return m;
}

static uint32_t vbar32(struct vcxl_vdev *v, uint64_t off)
{
	uint32_t x = 0xdeadbeef;

	vcxl_vdev_ops.region_read(v, VFIO_PCI_BAR0_REGION_INDEX, off, &x, 4);
	return x;
}

static void vbar_w32(struct vcxl_vdev *v, uint64_t off, uint32_t x)
{
	vcxl_vdev_ops.region_write(v, VFIO_PCI_BAR0_REGION_INDEX, off, &x, 4);
}

struct notes {
	unsigned n;
	bool on;
	uint64_t gpa, size;
};

static void on_hdm(void *opaque, unsigned n, bool committed, uint64_t gpa, uint64_t size,
		   uint64_t region_off)
{
	struct notes *k = opaque;

	(void)region_off;
	k->n++;
	k->on = committed;
	k->gpa = gpa;
	k->size = size;
}

static void test_variants(void)
{
	const struct vcxl_variant *t3 =
	    vcxl_variant_match(VCXL_MODEL_VENDOR, VCXL_MODEL_TYPE3_DEVICE);

	is(strcmp(t3->name, "vcxl-type3"), 0, "8086:0d93 matches the vcxl-type3 variant");
	ok(t3->media_ready, "vcxl-type3: media-ready applies");
	ok(!vcxl_variant_match(VCXL_MODEL_VENDOR, VCXL_MODEL_DEVICE)->media_ready,
	   "vcxl-accel: media-ready still skipped");
	const struct vcxl_variant *g =
	    vcxl_variant_match_class(0x1234, 0x5678, CXL_PCI_CLASS_MEMDEV);
	ok(g != vcxl_variant_generic() && g->media_ready && !strcmp(g->name, "generic-type3"),
	   "unknown id with class 050210: generic-type3, media-ready applies");
	ok(vcxl_variant_match_class(0x1234, 0x5678, 0x120000) == vcxl_variant_generic(),
	   "unknown id, other class: the generic variant");
	ok(vcxl_variant_match_class(VCXL_MODEL_VENDOR, VCXL_MODEL_DEVICE, CXL_PCI_CLASS_MEMDEV) ==
	       vcxl_variant_match(VCXL_MODEL_VENDOR, VCXL_MODEL_DEVICE),
	   "a known id keeps its variant whatever the class");
}

static void test_type3_view(void)
{
	struct vcxl_model *m = mk(VCXL_MODEL_TYPE3, G256);
	struct vcxl_vdev *v = NULL;
	char err[256] = "";
	struct notes k = {0};

	if (!m) {
		ok(0, "type3 model created");
		return;
	}
	is(vcxl_vdev_create(vcxl_model_backend(m), NULL, &v, err, sizeof(err)), 0,
	   "vdev over the Type-3 model (%s)", err);
	if (!v) {
		vcxl_model_destroy(m);
		return;
	}
	struct vcxl_cxl_dev *d = vcxl_vdev_host_dev(v);
	const struct vcxl_region *r = vcxl_vdev_region(v);
	struct vcxl_phys_decoder pd;

	is(strcmp(vcxl_vdev_variant(v)->name, "vcxl-type3"), 0, "variant vcxl-type3 chosen");
	ok(d->facts.media_ready && d->has_devregs, "host core: media-ready checked, devregs found");
	is(d->class_code, CXL_PCI_CLASS_MEMDEV, "host core read class code 050210");
	ok(d->hostonly, "host core: the device is host-only coherent (HDM-H)");
	is(vcxl_cxl_read_decoder(d, r->decoder, &pd), 0, "physical decoder read");
	ok(pd.committed && (pd.ctrl & CXL_HDM_DEC_CTRL_HOSTONLY),
	   "physical decoder committed with Target Range Type HOSTONLY (ctrl 0x%x)", pd.ctrl);
	ok(r->hpa >= WB && r->hpa + r->size <= WB + VCXL_HOST_DEFAULT_WIN_SIZE,
	   "region HPA from the default window (now Type-3 capable)");

	struct vcxl_vdev_info info;
	vcxl_vdev_ops.get_info(v, &info);
	uint64_t ctl0 = info.cxl.hdm_offset + CXL_HDM_DEC_CTRL(0);
	ok(vbar32(v, ctl0) & CXL_HDM_DEC_CTRL_HOSTONLY, "virtual decoder 0 resets HOSTONLY");
	ok(vbar32(v, info.cxl.hdm_offset + CXL_HDM_DEC_CTRL(1)) & CXL_HDM_DEC_CTRL_HOSTONLY,
	   "virtual decoder 1 resets HOSTONLY");
	vcxl_vdev_set_hdm_notify(v, on_hdm, &k);
	vbar_w32(v, info.cxl.hdm_offset + CXL_HDM_GLOBAL_CTRL, CXL_HDM_GCTRL_ENABLE);
	vbar_w32(v, info.cxl.hdm_offset + CXL_HDM_DEC_BASE_LO(0), 0x10000000);
	vbar_w32(v, info.cxl.hdm_offset + CXL_HDM_DEC_BASE_HI(0), 0x1);
	vbar_w32(v, info.cxl.hdm_offset + CXL_HDM_DEC_SIZE_LO(0), (uint32_t)G256);
	vbar_w32(v, ctl0, CXL_HDM_DEC_CTRL_HOSTONLY | CXL_HDM_DEC_CTRL_COMMIT);
	ok((vbar32(v, ctl0) & CXL_HDM_DEC_CTRL_COMMITTED) && k.n == 1 && k.on &&
	       k.gpa == 0x110000000ull && k.size == G256,
	   "guest commit with HOSTONLY (as Linux's cxl_mem writes it): committed, notified");
	is(vcxl_vdev_ops.reset(v), 0, "FLR");
	ok(!(vbar32(v, ctl0) & CXL_HDM_DEC_CTRL_COMMITTED) &&
	       (vbar32(v, ctl0) & CXL_HDM_DEC_CTRL_HOSTONLY),
	   "after FLR: decoder 0 decommitted and HOSTONLY again");
	is(vcxl_region_verify(r), 0, "host region untouched by the guest and the FLR");
	vcxl_vdev_destroy(v);
	vcxl_model_destroy(m);
}

/* The mailbox reports the whole device, so the region must be all of it. */
static void test_partial_region(void)
{
	struct vcxl_model *m = mk(VCXL_MODEL_TYPE3, 2 * G256);
	struct vcxl_vdev_cfg vc = {.region_size = G256};
	struct vcxl_vdev *v = NULL;
	char err[256] = "";

	if (!m) {
		ok(0, "type3 model created");
		return;
	}
	is(vcxl_vdev_create(vcxl_model_backend(m), &vc, &v, err, sizeof(err)), -EINVAL,
	   "Type-3 with a region of half the device refused");
	ok(strstr(err, "must cover all device memory") != NULL, "reason: %s", err);
	ok(v == NULL, "no vdev");
	vc.region_size = 0;
	err[0] = '\0';
	is(vcxl_vdev_create(vcxl_model_backend(m), &vc, &v, err, sizeof(err)), 0,
	   "the same device served with a region over all of it (%s)", err);
	if (v)
		is(vcxl_vdev_region(v)->size, 2 * G256, "region 512 MiB");
	vcxl_vdev_destroy(v);
	vcxl_model_destroy(m);
}

/* Region HPA comes from a window that allows the device's coherence. */
static void test_windows(void)
{
	struct vcxl_model *t3 = mk(VCXL_MODEL_TYPE3, G256), *acc = mk(VCXL_MODEL_ACCEL, G256);
	struct vcxl_host h2, h3;
	struct vcxl_vdev_cfg c2 = {.host = &h2}, c3 = {.host = &h3};
	struct vcxl_vdev *v = NULL;
	char err[256] = "";

	if (!t3 || !acc) {
		ok(0, "models created");
		return;
	}
	vcxl_host_init(&h2);
	vcxl_host_init(&h3);
	vcxl_host_add_window(&h2, WB, 4 * G256, VCXL_WIN_RAM | VCXL_WIN_TYPE2);
	vcxl_host_add_window(&h3, WB, 4 * G256, VCXL_WIN_RAM | VCXL_WIN_TYPE3);
	is(vcxl_vdev_create(vcxl_model_backend(t3), &c2, &v, err, sizeof(err)), -ENOSPC,
	   "Type-3 and only a Type-2 window: refused");
	ok(strstr(err, "Type-3 capable") != NULL, "reason: %s", err);
	is(vcxl_vdev_create(vcxl_model_backend(acc), &c3, &v, err, sizeof(err)), -ENOSPC,
	   "accelerator and only a Type-3 window: refused");
	ok(strstr(err, "Type-2 capable") != NULL, "reason: %s", err);
	err[0] = '\0';
	is(vcxl_vdev_create(vcxl_model_backend(t3), &c3, &v, err, sizeof(err)), 0,
	   "Type-3 in a Type-3 window (%s)", err);
	if (v)
		is(vcxl_vdev_region(v)->hpa, WB, "HPA at the window base");
	vcxl_vdev_destroy(v);
	v = NULL;
	err[0] = '\0';
	is(vcxl_vdev_create(vcxl_model_backend(acc), &c2, &v, err, sizeof(err)), 0,
	   "accelerator in a Type-2 window (%s)", err);
	vcxl_vdev_destroy(v);
	vcxl_host_fini(&h2);
	vcxl_host_fini(&h3);
	vcxl_model_destroy(t3);
	vcxl_model_destroy(acc);
}

/* Media not ready: a Type-3 is refused, a Type-2 never asks. */
static void media_not_ready(struct bw *w, unsigned bar, uint64_t off, unsigned len, uint64_t *val)
{
	if (bar == 2 && off == VCXL_MODEL_T3_MEMDEV_OFF + VCXL_MDEV_MEMDEV_OFF + CXLMDEV_STATUS)
		*val &= ~(uint64_t)CXLMDEV_STATUS_MEDIA;
}

static void test_media_ready_check(void)
{
	struct vcxl_model *t3 = mk(VCXL_MODEL_TYPE3, G256);
	struct vcxl_vdev *v = NULL;
	char err[256] = "";
	struct bw w;

	if (!t3) {
		ok(0, "type3 model created");
		return;
	}
	bw_init(&w, vcxl_model_backend(t3));
	w.bar_filter = media_not_ready;
	is(vcxl_vdev_create(&w.be, NULL, &v, err, sizeof(err)), -EIO,
	   "Type-3 whose media is not ready: refused");
	ok(strstr(err, "media not ready") != NULL, "reason: %s", err);
	w.bar_filter = NULL;
	is(vcxl_vdev_create(&w.be, NULL, &v, err, sizeof(err)), 0, "media ready: served");
	vcxl_vdev_destroy(v);
	vcxl_model_destroy(t3);
}

static void test_accel_unchanged(void)
{
	struct vcxl_model *m = mk(VCXL_MODEL_ACCEL, G256);
	struct vcxl_vdev *v = NULL;
	char err[256] = "";

	if (!m) {
		ok(0, "accel model created");
		return;
	}
	is(vcxl_vdev_create(vcxl_model_backend(m), NULL, &v, err, sizeof(err)), 0, "accel vdev");
	if (v) {
		struct vcxl_cxl_dev *d = vcxl_vdev_host_dev(v);
		struct vcxl_phys_decoder pd;
		struct vcxl_vdev_info info;

		ok(!d->hostonly && !d->facts.media_ready, "accel: device-coherent, no media-ready");
		vcxl_cxl_read_decoder(d, vcxl_vdev_region(v)->decoder, &pd);
		ok(pd.committed && !(pd.ctrl & CXL_HDM_DEC_CTRL_HOSTONLY),
		   "accel: physical decoder committed device-coherent (ctrl 0x%x)", pd.ctrl);
		vcxl_vdev_ops.get_info(v, &info);
		ok(!(vbar32(v, info.cxl.hdm_offset + CXL_HDM_DEC_CTRL(0)) &
		     CXL_HDM_DEC_CTRL_HOSTONLY),
		   "accel: virtual decoder 0 resets device-coherent");
	}
	vcxl_vdev_destroy(v);
	vcxl_model_destroy(m);
}

int main(void)
{
	test_variants();
	test_type3_view();
	test_partial_region();
	test_windows();
	test_media_ready_check();
	test_accel_unchanged();
	return done();
}
