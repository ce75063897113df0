// SPDX-License-Identifier: BSD-3-Clause
/* Logging, size parsing and command names shared by the server and tools. */
#include <errno.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <time.h>

#include "server/server.h"

static enum vcxl_log_level log_level = VCXL_LOG_WARN;

static const char *const log_names[] = {
    [VCXL_LOG_ERROR] = "error",
    [VCXL_LOG_WARN] = "warn",
    [VCXL_LOG_INFO] = "info",
    [VCXL_LOG_DEBUG] = "debug",
};

void vcxl_log_set_level(enum vcxl_log_level lvl)
{
	log_level = lvl;
}

enum vcxl_log_level vcxl_log_get_level(void)
{
	return log_level;
}

int vcxl_log_parse_level(const char *s, enum vcxl_log_level *lvl)
{
	for (unsigned i = 0; i < sizeof(log_names) / sizeof(log_names[0]); i++) {
		if (!strcasecmp(s, log_names[i])) {
			*lvl = (enum vcxl_log_level)i;
			return 0;
		}
	}
	if (!strcasecmp(s, "warning")) {
		*lvl = VCXL_LOG_WARN;
		return 0;
	}
	return -EINVAL;
}

/* Start-up lines below warn, held until the start succeeds (vcxl_log_hold) */
static struct {
	bool on;
	char *text; /* whole formatted lines */
	size_t len;
} held;

void vcxl_log_hold(void)
{
	held.on = true;
}

void vcxl_log_release(bool print)
{
	if (print && held.len)
		fwrite(held.text, 1, held.len, stderr);
	free(held.text);
	held.text = NULL;
	held.len = 0;
	held.on = false;
}

bool vcxl_log_held(void)
{
	return held.on;
}

/* A held line is kept formatted, with the time it was logged; a line that
 * cannot be kept is printed at once (never lost). */
static bool log_keep(const char *text, size_t n)
{
	char *t = realloc(held.text, held.len + n);

	if (!t)
		return false;
	memcpy(t + held.len, text, n);
	held.text = t;
	held.len += n;
	return true;
}

void vcxl_log(enum vcxl_log_level lvl, const char *fmt, ...)
{
	char line[1024], out[1100];
	struct timespec ts;
	va_list ap;
	int n;

	if (lvl > log_level)
		return;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	va_start(ap, fmt);
	vsnprintf(line, sizeof(line), fmt, ap);
	va_end(ap);
	n = snprintf(out, sizeof(out), "vcxl-server[%ld.%03ld] %s: %s\n", (long)ts.tv_sec,
		     ts.tv_nsec / 1000000, log_names[lvl], line);
	if (n < 0)
		return;
	if ((size_t)n >= sizeof(out))
		n = sizeof(out) - 1;
	if (held.on && lvl > VCXL_LOG_WARN && log_keep(out, (size_t)n))
		return;
	fwrite(out, 1, (size_t)n, stderr);
}

bool vcxl_ratelimit_allow(struct vcxl_ratelimit *rl, int64_t now_ms, unsigned long *report)
{
	*report = 0;
	if (!rl->window_ms || now_ms - rl->window_ms >= VCXL_LOG_RATE_WINDOW_MS) {
		*report = rl->suppressed;
		rl->window_ms = now_ms ? now_ms : 1;
		rl->lines = 0;
		rl->suppressed = 0;
	}
	if (rl->lines >= VCXL_LOG_RATE_BURST) {
		rl->suppressed++;
		return false;
	}
	rl->lines++;
	return true;
}

void vcxl_log_limited(struct vcxl_ratelimit *rl, const char *who, enum vcxl_log_level lvl,
		      const char *fmt, ...)
{
	char line[1024];
	struct timespec ts;
	unsigned long report;
	va_list ap;

	if (lvl > log_level)
		return;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	if (!vcxl_ratelimit_allow(rl, (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000, &report))
		return;
	if (report)
		vcxl_log(lvl, "%s: %lu client-triggered messages suppressed", who, report);
	va_start(ap, fmt);
	vsnprintf(line, sizeof(line), fmt, ap);
	va_end(ap);
	vcxl_log(lvl, "%s", line);
}

int vcxl_parse_size(const char *s, uint64_t *out)
{
	unsigned shift = 0;
	char *end;
	unsigned long long v;

	if (!s || !*s || *s == '-')
		return -EINVAL;
	errno = 0;
	v = strtoull(s, &end, 0);
	if (errno || end == s)
		return -EINVAL;
	switch (*end) {
	case 'k':
	case 'K':
		shift = 10;
		break;
	case 'm':
	case 'M':
		shift = 20;
		break;
	case 'g':
	case 'G':
		shift = 30;
		break;
	case 't':
	case 'T':
		shift = 40;
		break;
	case '\0':
		break;
	default:
		return -EINVAL;
	}
	if (*end) {
		end++;
		if (*end == 'i' && end[1] == 'B')
			end += 2;
		else if (*end == 'B')
			end++;
	}
	if (*end)
		return -EINVAL;
	if (shift && v > (UINT64_MAX >> shift))
		return -EINVAL;
	*out = (uint64_t)v << shift;
	return 0;
}

const char *vfio_user_command_name(unsigned command)
{
	static const char *const names[] = {
	    [VFIO_USER_VERSION] = "VERSION",
	    [VFIO_USER_DMA_MAP] = "DMA_MAP",
	    [VFIO_USER_DMA_UNMAP] = "DMA_UNMAP",
	    [VFIO_USER_DEVICE_GET_INFO] = "DEVICE_GET_INFO",
	    [VFIO_USER_DEVICE_GET_REGION_INFO] = "DEVICE_GET_REGION_INFO",
	    [VFIO_USER_DEVICE_GET_REGION_IO_FDS] = "DEVICE_GET_REGION_IO_FDS",
	    [VFIO_USER_DEVICE_GET_IRQ_INFO] = "DEVICE_GET_IRQ_INFO",
	    [VFIO_USER_DEVICE_SET_IRQS] = "DEVICE_SET_IRQS",
	    [VFIO_USER_REGION_READ] = "REGION_READ",
	    [VFIO_USER_REGION_WRITE] = "REGION_WRITE",
	    [VFIO_USER_DMA_READ] = "DMA_READ",
	    [VFIO_USER_DMA_WRITE] = "DMA_WRITE",
	    [VFIO_USER_DEVICE_RESET] = "DEVICE_RESET",
	    [VFIO_USER_REGION_WRITE_MULTI] = "REGION_WRITE_MULTI",
	    [VFIO_USER_DEVICE_FEATURE] = "DEVICE_FEATURE",
	    [VFIO_USER_MIG_DATA_READ] = "MIG_DATA_READ",
	    [VFIO_USER_MIG_DATA_WRITE] = "MIG_DATA_WRITE",
	};

	if (command < sizeof(names) / sizeof(names[0]) && names[command])
		return names[command];
	return "UNKNOWN";
}
