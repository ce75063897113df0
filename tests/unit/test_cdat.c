// SPDX-License-Identifier: BSD-3-Clause
/* CDAT builder: header, checksum, DSMAS + 4 DSLBIS + DSEMTS per range. */
#include <errno.h>
#include <string.h>

#include "tap.h"
#include "cxl/cxl_spec.h"

static uint64_t le(const uint8_t *p, unsigned n)
{
	uint64_t v = 0;
	for (unsigned i = 0; i < n; i++)
		v |= (uint64_t)p[i] << (8 * i);
	return v;
}

int main(void)
{
	uint8_t buf[1024];
	struct vcxl_cdat_range r[2] = {
	    {0, 0x40000000, 0, CDAT_DSEMTS_EFI_RESERVED, 150, 250, 16, 8},
	    {0x40000000, 0x10000000, CDAT_DSMAS_FLAG_NV, CDAT_DSEMTS_EFI_CONV_SP, 1, 2, 3, 4},
	};
	int len = vcxl_cdat_build(buf, sizeof(buf), r, 2);
	is(len, 16 + 2 * (24 + 4 * 24 + 24), "length: header + 2 x (DSMAS + 4 DSLBIS + DSEMTS)");
	is(le(buf, 4), (uint64_t)len, "header length field");
	is(buf[4], 2, "revision 2");
	uint8_t sum = 0;
	for (int i = 0; i < len; i++)
		sum = (uint8_t)(sum + buf[i]);
	is(sum, 0, "all bytes sum to 0 (checksum)");
	ok(buf[5] != 0 || sum == 0, "checksum byte filled in");

	static const uint8_t types[] = {0, 1, 1, 1, 1, 4};
	static const uint8_t dtypes[] = {1, 2, 4, 5};
	int bad = 0;
	const uint8_t *p = buf + 16;
	for (int k = 0; k < 2; k++) {
		for (int s = 0; s < 6; s++, p += 24) {
			if (p[0] != types[s] || le(p + 2, 2) != 24)
				bad++;
			if (p[4] != k)
				bad++; /* DSMAS handle / DSLBIS handle / DSEMTS DSMAS handle */
		}
	}
	is(bad, 0, "structure types, lengths and handles in order");
	p = buf + 16;
	ok(p[5] == 0 && le(p + 8, 8) == 0 && le(p + 16, 8) == 0x40000000, "DSMAS 0 base/length");
	const uint8_t *q = buf + 16 + 144;
	ok(q[5] == CDAT_DSMAS_FLAG_NV && le(q + 8, 8) == 0x40000000 && le(q + 16, 8) == 0x10000000,
	   "DSMAS 1 flags/base/length");
	bad = 0;
	for (int s = 0; s < 4; s++) {
		const uint8_t *l = buf + 16 + 24 + 24 * s;
		if (l[5] != HMAT_LB_MEM_MEMORY || l[6] != dtypes[s])
			bad++;
	}
	is(bad, 0, "DSLBIS: memory hierarchy, read/write latency, read/write bandwidth");
	const uint8_t *l0 = buf + 16 + 24;
	is(le(l0 + 8, 8) * le(l0 + 16, 2), 150000, "read latency 150 ns in ps");
	const uint8_t *l2 = buf + 16 + 24 + 48;
	is(le(l2 + 8, 8) * le(l2 + 16, 2), 16000, "read bandwidth 16 GB/s in MB/s");
	const uint8_t *e0 = buf + 16 + 120;
	ok(e0[5] == CDAT_DSEMTS_EFI_RESERVED && le(e0 + 8, 8) == 0 && le(e0 + 16, 8) == 0x40000000,
	   "DSEMTS 0: EFI reserved (private accelerator memory), whole range");
	is(vcxl_cdat_build(buf, 100, r, 2), -ENOSPC, "too small a buffer: -ENOSPC");
	len = vcxl_cdat_build(buf, sizeof(buf), NULL, 0);
	is(len, 16, "no ranges: header only");
	is((uint8_t)(buf[0] + buf[4] + buf[5]), 0, "header-only checksum");
	is(vcxl_cdat_build(NULL, 10, r, 1), -EINVAL, "NULL buffer refused");
	return done();
}
