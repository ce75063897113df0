// SPDX-License-Identifier: BSD-3-Clause
/* vfio-cxl variants: the built-in table (see variant.h). */
#include <stddef.h>

#include "variant.h"
#include "vcxl/cxl_regs.h"
#include "vcxl/model.h"

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
