/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * What every e2e guest program reports with: one line per check,
 * "STEP name: ok|FAIL|skip detail", which the host turns into a TAP point each
 * (tests/e2e/lib.sh: e2e_steps_tap). Included by one file per program.
 */
#ifndef VCXL_E2E_GUEST_STEP_H
#define VCXL_E2E_GUEST_STEP_H

#include <stdarg.h>
#include <stdio.h>
#include <unistd.h>

static unsigned n_ok, n_fail;

static void step(const char *name, int result, const char *fmt, ...)
    __attribute__((format(printf, 3, 4), unused));

/* result: 1 (or any positive) ok, 0 FAIL, -1 skip */
static void step(const char *name, int result, const char *fmt, ...)
{
	va_list ap;

	printf("STEP %s: %s ", name, result > 0 ? "ok" : result == 0 ? "FAIL" : "skip");
	va_start(ap, fmt);
	vprintf(fmt, ap);
	va_end(ap);
	printf("\n");
	fflush(stdout);
	if (result > 0)
		n_ok++;
	else if (result == 0)
		n_fail++;
}

static inline void sleep_ms(unsigned ms)
{
	usleep(ms * 1000);
}

#endif /* VCXL_E2E_GUEST_STEP_H */
