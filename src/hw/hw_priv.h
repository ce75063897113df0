/* SPDX-License-Identifier: BSD-3-Clause */
/* Internals shared by the files of src/hw/. */
#ifndef VCXL_HW_PRIV_H
#define VCXL_HW_PRIV_H

#include <stdarg.h>
#include <stdio.h>

#include "vcxl/hw_vfio.h"

#define HW_NS_PER_MS 1000000ull

/* Write a one-line reason into err (if any) and return rc. */
static inline int __attribute__((format(printf, 4, 5)))
hw_err(char *err, size_t errlen, int rc, const char *fmt, ...)
{
	if (err && errlen) {
		va_list ap;
		va_start(ap, fmt);
		vsnprintf(err, errlen, fmt, ap);
		va_end(ap);
	}
	return rc;
}

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
