/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * What every harness defines (libFuzzer's entry point) and shares: the
 * same source builds a libFuzzer target (clang, -fsanitize=fuzzer) and a
 * corpus replay program (replay.c, any compiler) that meson runs as a test.
 */
#ifndef VCXL_FUZZ_HARNESS_H
#define VCXL_FUZZ_HARNESS_H

#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

#include "server/server.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* An oracle violation: say what, then abort (libFuzzer saves the input). */
static inline void __attribute__((noreturn, format(printf, 1, 2))) fz_fail(const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	fprintf(stderr, "FUZZ ORACLE VIOLATION: ");
	vfprintf(stderr, fmt, ap);
	fprintf(stderr, "\n");
	va_end(ap);
	abort();
}

/* Rejected input is the normal case: keep the server's warnings out of the
 * fuzzer's output (VCXL_FUZZ_LOG=warn|info|debug brings them back). */
static inline void fz_quiet(void)
{
	static int done;
	enum vcxl_log_level lvl = VCXL_LOG_ERROR;
	const char *e;

	if (done)
		return;
	done = 1;
	e = getenv("VCXL_FUZZ_LOG");
	if (e)
		vcxl_log_parse_level(e, &lvl);
	vcxl_log_set_level(lvl);
}

#endif /* VCXL_FUZZ_HARNESS_H */
