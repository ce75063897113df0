/* SPDX-License-Identifier: BSD-3-Clause */
/* Internals shared by the files of src/hw/. */
#ifndef VCXL_HW_PRIV_H
#define VCXL_HW_PRIV_H

#include <stdarg.h>
#include <stdio.h>

#include "../common/errmsg.h"
#include "hw/hw_vfio.h"

#define HW_NS_PER_MS 1000000ull

#define hw_err vcxl_errf /* src/common/errmsg.h */

static inline const char *hw_or(const char *s, const char *dflt)
{
	return s && *s ? s : dflt;
}

/* Read a whole (small) file into a NUL-terminated malloc'ed buffer. */
int hw_read_file(const char *path, char **buf, size_t *len, size_t max);
/* First line of a sysfs attribute, trailing newline removed. */
int hw_read_attr(const char *path, char *buf, size_t len);
uint64_t hw_now_ns(void);
/* "DDDD:BB:DD.F" */
bool hw_is_bdf(const char *s);
void hw_sleep_ns(uint64_t ns);

#endif /* VCXL_HW_PRIV_H */
