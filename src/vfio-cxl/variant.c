// SPDX-License-Identifier: BSD-3-Clause
/* vfio-cxl variants: the built-in table (see variant.h). */
#include <stddef.h>

#include "variant.h"
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

/* Anything else: trust the DVSEC ranges, assume Type-2 (no media ready). */
static const struct vcxl_variant generic = {
    .name = "generic",
    .vendor = VCXL_VARIANT_ANY,
    .device = VCXL_VARIANT_ANY,
};

static const struct vcxl_variant *const table[] = {&accel_model, &generic};

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

const struct vcxl_variant *vcxl_variant_generic(void)
{
	return &generic;
}
