/* SPDX-License-Identifier: BSD-3-Clause */
/* A minimal TAP producer for vcxl's tests: ok(), is(), done(). */
#ifndef VCXL_TESTS_TAP_H
#define VCXL_TESTS_TAP_H

#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>

static int tap_n, tap_failed;

static inline int tap_ok(int cond, const char *file, int line, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));
static inline int tap_ok(int cond, const char *file, int line, const char *fmt, ...)
{
	va_list ap;
	tap_n++;
	printf("%s %d - ", cond ? "ok" : "not ok", tap_n);
	va_start(ap, fmt);
	vprintf(fmt, ap);
	va_end(ap);
	printf("\n");
	if (!cond) {
		tap_failed++;
		printf("#   failed at %s:%d\n", file, line);
	}
	fflush(stdout);
	return cond;
}

#define ok(cond, ...) tap_ok(!!(cond), __FILE__, __LINE__, __VA_ARGS__)
/* is(got, expected, name...): compares as uint64_t and prints both on failure */
#define is(got, exp, ...)                                                                          \
	do {                                                                                       \
		uint64_t tap_g_ = (uint64_t)(got), tap_e_ = (uint64_t)(exp);                       \
		if (!ok(tap_g_ == tap_e_, __VA_ARGS__))                                            \
			printf("#   got 0x%" PRIx64 ", expected 0x%" PRIx64 "\n", tap_g_, tap_e_); \
	} while (0)
#define diag(...)                                                                                  \
	do {                                                                                       \
		printf("# ");                                                                      \
		printf(__VA_ARGS__);                                                               \
		printf("\n");                                                                      \
	} while (0)

/* A setup step that must work (ftruncate and the like; _FORTIFY_SOURCE
 * builds refuse to ignore their result): TAP "Bail out!" if it fails. */
#define setup_ok(expr)                                                                             \
	do {                                                                                       \
		if ((expr) != 0) {                                                                 \
			printf("Bail out! %s:%d: %s failed\n", __FILE__, __LINE__, #expr);         \
			exit(1);                                                                   \
		}                                                                                  \
	} while (0)

static inline int tap_done(void)
{
	printf("1..%d\n", tap_n);
	return tap_failed ? 1 : 0;
}
#define done() tap_done()

#endif
