// SPDX-License-Identifier: BSD-3-Clause
/* The vcxl CLI's HDM decoder logic (src/tools/cmd_hdm.c) against fake
 * registers: the decoder count from every Decoder Count encoding, and the
 * cap from the vfio-cxl capability. */
#include <errno.h>
#include <string.h>

#include "../src/tools/cli.h"
#include "tap.h"

struct regs {
	uint32_t cap;
	int rc;
};

static int rd(void *opaque, uint32_t off, uint32_t *val)
{
	const struct regs *r = opaque;

	*val = off == CXL_HDM_CAP ? r->cap : 0;
	return r->rc;
}

static int wr(void *opaque, uint32_t off, uint32_t val)
{
	return 0;
}

/* CXL r3.1 8.2.4.20.1 Decoder Count: 0 -> 1, 1 -> 2, 2..8 -> 4..16 by 2,
 * 9 -> 20, 10 -> 24, 11 -> 28, 12 -> 32, 13..15 reserved. */
static const int spec_count[16] = {1, 2, 4, 6, 8, 10, 12, 14, 16, 20, 24, 28, 32, -1, -1, -1};

int main(void)
{
	struct regs r = {0};
	struct vcxl_hdm_io io = {.rd = rd, .wr = wr, .opaque = &r};

	for (unsigned e = 0; e < 16; e++) {
		unsigned n = 0;
		int rc;

		r.cap = (uint32_t)VCXL_FIELD_PREP(CXL_HDM_CAP_DECODER_COUNT, e) |
			VCXL_FIELD_PREP(CXL_HDM_CAP_TARGET_COUNT, 1);
		rc = cli_hdm_count(&io, 0, &n);
		if (spec_count[e] < 0)
			ok(rc == -EINVAL, "encoding %u is reserved: refused (rc %d, count %u)", e,
			   rc, n);
		else
			ok(rc == 0 && n == (unsigned)spec_count[e],
			   "encoding %u: %d decoders (got %u, rc %d)", e, spec_count[e], n, rc);
	}
	unsigned n = 0;
	r.cap = VCXL_FIELD_PREP(CXL_HDM_CAP_DECODER_COUNT, 9);
	ok(cli_hdm_count(&io, 10, &n) == 0 && n == 10,
	   "20 announced, the vfio-cxl capability says 10: 10 (got %u)", n);
	ok(cli_hdm_count(&io, 32, &n) == 0 && n == 20,
	   "20 announced, capability says 32: 20 (got %u)", n);
	r.rc = -EIO;
	ok(cli_hdm_count(&io, 0, &n) == -EIO, "a failed read is the error");
	return done();
}
