// SPDX-License-Identifier: BSD-3-Clause
/* vfio-cxl variants: the built-in table (see variant.h). */
#include <stddef.h>

#include "variant.h"
#include "vdev_priv.h"
#include "cxl/cxl_regs.h"
#include "model/model.h"

/* The accelerator's job engine reaches device memory by DPA on its own: its
 * DPA window (model.h) is set to the region, so jobs the guest starts never
 * touch device memory outside it. */
static int accel_confine(struct vcxl_vdev *v, void *priv)
{
	const struct vcxl_region *r = v->region;
	int rc = v->be->ops->bar_write(v->be->dev, VCXL_MODEL_CTRL_BAR, ACCEL_REG_DPA_WIN_BASE, 8,
				       r->dpa);

	return rc
		   ?: v->be->ops->bar_write(v->be->dev, VCXL_MODEL_CTRL_BAR, ACCEL_REG_DPA_WIN_SIZE,
					    8, r->size);
}

/* The built-in accelerator model: a Type-2 device with no memory device
 * registers, so media-ready does not apply (only range active does). Its
 * memory is device-coherent and cacheable. */
static const struct vcxl_variant accel_model = {
    .name = "vcxl-accel",
    .vendor = VCXL_MODEL_VENDOR,
    .device = VCXL_MODEL_DEVICE,
    .mem_size = 0,
    .media_ready = false,
    .noncached = false,
    .confine = accel_confine,
    .nhost_regs = 1,
    .host_regs = {{.bar = VCXL_MODEL_CTRL_BAR,
		   .off = ACCEL_REG_DPA_WIN_BASE,
		   .len = ACCEL_REG_DPA_WIN_END - ACCEL_REG_DPA_WIN_BASE}},
};

/* The model's Type-3 personality (QEMU's cxl-type3 has the same id): a CXL
 * memory device, so the media-ready check applies (CXL r3.1 8.2.8.5.1.1). */
static const struct vcxl_variant type3_model = {
    .name = "vcxl-type3",
    .vendor = VCXL_MODEL_VENDOR,
    .device = VCXL_MODEL_TYPE3_DEVICE,
    .mem_size = 0,
    .media_ready = true,
    .noncached = false,
};

/* An unknown CXL memory device (class 050210): DVSEC ranges, media ready. */
static const struct vcxl_variant generic_type3 = {
    .name = "generic-type3",
    .vendor = VCXL_VARIANT_ANY,
    .device = VCXL_VARIANT_ANY,
    .media_ready = true,
};

/* Anything else: trust the DVSEC ranges, assume Type-2 (no media ready). */
static const struct vcxl_variant generic = {
    .name = "generic",
    .vendor = VCXL_VARIANT_ANY,
    .device = VCXL_VARIANT_ANY,
};

static const struct vcxl_variant *const table[] = {&accel_model, &type3_model, &generic};

static bool id_match(uint16_t want, uint16_t id)
{
	return want == VCXL_VARIANT_ANY || want == id;
}

const struct vcxl_variant *vcxl_variant_match(uint16_t vendor, uint16_t device)
{
	for (size_t i = 0; i < sizeof(table) / sizeof(table[0]); i++)
		if (id_match(table[i]->vendor, vendor) && id_match(table[i]->device, device))
			return table[i];
	return &generic;
}

const struct vcxl_variant *vcxl_variant_match_class(uint16_t vendor, uint16_t device,
						    uint32_t class_code)
{
	const struct vcxl_variant *v = vcxl_variant_match(vendor, device);

	if (v == &generic && class_code == CXL_PCI_CLASS_MEMDEV)
		return &generic_type3;
	return v;
}

const struct vcxl_variant *vcxl_variant_generic(void)
{
	return &generic;
}
