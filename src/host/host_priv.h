/* SPDX-License-Identifier: BSD-3-Clause */
/* Host CXL core internals shared by probe.c, doe.c and region.c. */
#ifndef VCXL_HOST_PRIV_H
#define VCXL_HOST_PRIV_H

#include <stdarg.h>
#include <stdio.h>

#include "../common/errmsg.h"
#include "cxl/cxl_spec.h"
#include "host/host_cxl.h"

#define NS_PER_MS 1000000ull
#define NS_PER_S  1000000000ull

#define host_err vcxl_errf /* src/common/errmsg.h */

static inline int cfg_rd(struct vcxl_backend *be, uint32_t off, unsigned len, uint32_t *v)
{
	uint64_t x = 0;
	int rc = be->ops->cfg_read(be->dev, off, len, &x);
	*v = (uint32_t)x;
	return rc;
}

static inline int cfg_wr(struct vcxl_backend *be, uint32_t off, unsigned len, uint32_t v)
{
	return be->ops->cfg_write(be->dev, off, len, v);
}

/* HDM decoder register access, offsets from the HDM capability. */
static inline int hdm_rd(struct vcxl_cxl_dev *d, uint32_t reg, uint32_t *v)
{
	return vcxl_cxl_comp_read32(d, d->hdm_off + reg, v);
}

static inline int hdm_wr(struct vcxl_cxl_dev *d, uint32_t reg, uint32_t v)
{
	return vcxl_cxl_comp_write32(d, d->hdm_off + reg, v);
}

/* The same access for the spec layer's decoder helpers (vcxl_hdm_io_*). */
static inline int hdm_io_rd(void *opaque, uint32_t reg, uint32_t *v)
{
	return hdm_rd(opaque, reg, v);
}

static inline int hdm_io_wr(void *opaque, uint32_t reg, uint32_t v)
{
	return hdm_wr(opaque, reg, v);
}

static inline struct vcxl_hdm_io hdm_io(struct vcxl_cxl_dev *d)
{
	return (struct vcxl_hdm_io){.rd = hdm_io_rd, .wr = hdm_io_wr, .opaque = d};
}

/* Read the device's CDAT over its DOE mailbox (doe.c). 0 + malloc'ed table. */
int vcxl_host_read_cdat(struct vcxl_cxl_dev *d, uint8_t **cdat, size_t *len, char *err,
			size_t errlen);

#endif /* VCXL_HOST_PRIV_H */
