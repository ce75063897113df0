/* SPDX-License-Identifier: BSD-3-Clause */
/* One-line error reasons for callers that pass an (err, errlen) buffer. */
#ifndef VCXL_COMMON_ERRMSG_H
#define VCXL_COMMON_ERRMSG_H

#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>

/* Write a one-line reason into err (if any) and return rc. */
static inline int __attribute__((format(printf, 4, 5)))
vcxl_errf(char *err, size_t errlen, int rc, const char *fmt, ...)
{
	if (err && errlen) {
		va_list ap;
		va_start(ap, fmt);
		vsnprintf(err, errlen, fmt, ap);
		va_end(ap);
	}
	return rc;
}

#endif /* VCXL_COMMON_ERRMSG_H */
