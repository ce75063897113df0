/* SPDX-License-Identifier: BSD-3-Clause */
/* Baseline register dispatch modelled on the RFC v2 design (see ref_dispatch.c). */
#ifndef VCXL_BENCH_REF_DISPATCH_H
#define VCXL_BENCH_REF_DISPATCH_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define REF_SHADOW_SIZE 0x20000u

struct ref_block;

struct ref_dev {
	struct ref_block *cfg_head;
	struct ref_block *mmio_head;
	uint8_t *shadow;
	uint8_t hw[REF_SHADOW_SIZE];
};

int ref_dev_init(struct ref_dev *d, uint32_t dvsec, uint64_t hdm, unsigned decoders);
int ref_cfg_rw(struct ref_dev *d, uint64_t off, void *buf, size_t n, bool write);
int ref_mmio_rw(struct ref_dev *d, uint64_t off, void *buf, size_t n, bool write);
void ref_dev_fini(struct ref_dev *d);

#endif
