/* SPDX-License-Identifier: BSD-3-Clause */
/* `vcxl lspci` config-space decoder */
#ifndef VCXL_TOOLS_LSPCI_H
#define VCXL_TOOLS_LSPCI_H

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

struct vcxl_lspci_bar {
	uint64_t size;
	bool mmap;
};

/* bars: 7 entries (BAR0-5, ROM) from REGION_INFO, or NULL */
void vcxl_lspci_decode(FILE *f, const uint8_t cfg[4096], const struct vcxl_lspci_bar *bars);

#endif
