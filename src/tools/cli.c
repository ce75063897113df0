// SPDX-License-Identifier: BSD-3-Clause
/* The vcxl CLI's shared helpers: error lines, the session, config space. */
#include <errno.h>
#include <stdarg.h>
#include <string.h>
#include <time.h>

#include "cli.h"

int fail(const char *fmt, ...)
{
	va_list ap;

	fprintf(stderr, "vcxl: ");
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fprintf(stderr, "\n");
	return 1;
}

int ctx_open(struct ctx *x, const char *sock)
{
	int rc = vcxl_client_connect(sock, &x->c);

	if (rc)
		return fail("%s: connect: %s", sock, strerror(-rc));
	rc = vcxl_client_get_info(x->c, &x->info);
	if (rc) {
		vcxl_client_close(x->c);
		return fail("%s: GET_INFO: %s", sock, strerror(-rc));
	}
	return 0;
}

int read_config(struct ctx *x, uint8_t *cfg)
{
	int rc = vcxl_client_region_read(x->c, VFIO_PCI_CONFIG_REGION_INDEX, 0, cfg, CLI_CFG_SIZE);

	if (rc)
		return fail("config read: %s", strerror(-rc));
	return 0;
}

int cfg_buf_read32(void *opaque, uint32_t off, uint32_t *val)
{
	const uint8_t *cfg = opaque;

	if (off > CLI_CFG_SIZE - 4)
		return -EINVAL;
	memcpy(val, cfg + off, 4);
	return 0;
}

int need_cxl(struct ctx *x)
{
	if (!x->info.has_cxl || !(x->info.flags & VFIO_DEVICE_FLAGS_CXL))
		return fail("device has no CXL capability (not a vfio-cxl device)");
	return 0;
}

int64_t now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

int64_t now_ms(void)
{
	return now_ns() / 1000000;
}
