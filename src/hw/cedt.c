// SPDX-License-Identifier: BSD-3-Clause
/*
 * The ACPI CXL Early Discovery Table (what Linux's cxl_acpi reads): CHBS
 * (host bridge component registers) and CFMWS (fixed memory windows). The
 * parser takes a buffer and trusts nothing in it: every length is checked
 * against the table and the buffer before a field is read.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "hw_priv.h"
#include "cxl/cxl_regs.h"

/* ACPI 6.5 5.2.6: the system description table header */
#define ACPI_HDR_LEN	  36
#define ACPI_HDR_LENGTH	  4
#define ACPI_HDR_CHECKSUM 9

/* CXL r3.1 9.18.1: every CEDT structure starts with type, reserved, length */
#define CEDT_REC_HDR_LEN 4
#define CEDT_TYPE_CHBS	 0
#define CEDT_TYPE_CFMWS	 1

/* CXL r3.1 9.18.1.2 Table 9-21: CHBS */
#define CHBS_LEN      32
#define CHBS_UID      4
#define CHBS_VERSION  8
#define CHBS_BASE     16
#define CHBS_LENGTH   24
#define CHBS_VER_RCH  0
#define CHBS_VER_CXL2 1
#define CHBS_RCH_LEN  0x2000 /* [spec] CXL 1.1 RCRB: 8 KiB */
#define CHBS_CXL2_LEN 0x10000

/* CXL r3.1 9.18.1.3 Table 9-22: CFMWS */
#define CFMWS_FIXED_LEN	   36
#define CFMWS_BASE	   8
#define CFMWS_SIZE	   16
#define CFMWS_ENIW	   24
#define CFMWS_ARITH	   25
#define CFMWS_HBIG	   28
#define CFMWS_RESTRICT	   32
#define CFMWS_QTG	   34
#define CFMWS_TARGETS	   36
#define CFMWS_TARGET_SIZE  4
#define CFMWS_ARITH_MODULO 0
#define CFMWS_ARITH_XOR	   1

static uint16_t get16(const uint8_t *p)
{
	return (uint16_t)(p[0] | (p[1] << 8));
}

static uint32_t get32(const uint8_t *p)
{
	return (uint32_t)p[0] | ((uint32_t)p[1] << 8) | ((uint32_t)p[2] << 16) |
	       ((uint32_t)p[3] << 24);
}

static uint64_t get64(const uint8_t *p)
{
	return get32(p) | ((uint64_t)get32(p + 4) << 32);
}

/* CXL r3.1 9.18.1.3: ENIW encodes the interleave ways (as the HDM IW field) */
static unsigned eniw_ways(uint8_t eniw)
{
	switch (eniw) {
	case CXL_HDM_IW_1:
		return 1;
	case CXL_HDM_IW_2:
		return 2;
	case CXL_HDM_IW_4:
		return 4;
	case CXL_HDM_IW_8:
		return 8;
	case CXL_HDM_IW_16:
		return 16;
	case CXL_HDM_IW_3:
		return 3;
	case CXL_HDM_IW_6:
		return 6;
	case CXL_HDM_IW_12:
		return 12;
	default:
		return 0;
	}
}

/* CXL r3.1 9.18.1.2 */
static int parse_chbs(const uint8_t *p, unsigned rlen, unsigned at, struct vcxl_cedt *c, char *err,
		      size_t errlen)
{
	struct vcxl_cedt_chbs h;

	if (rlen < CHBS_LEN)
		return hw_err(err, errlen, -EINVAL, "CEDT: CHBS at 0x%x: length %u < %u", at, rlen,
			      CHBS_LEN);
	h.uid = get32(p + CHBS_UID);
	h.cxl_version = get32(p + CHBS_VERSION);
	h.base = get64(p + CHBS_BASE);
	h.length = get64(p + CHBS_LENGTH);
	if (h.cxl_version != CHBS_VER_RCH && h.cxl_version != CHBS_VER_CXL2)
		return hw_err(err, errlen, -EINVAL, "CEDT: CHBS uid %u: unknown CXL version %u",
			      h.uid, h.cxl_version);
	if (!h.base || !h.length || h.base + h.length < h.base)
		return hw_err(err, errlen, -EINVAL, "CEDT: CHBS uid %u: bad range 0x%llx+0x%llx",
			      h.uid, (unsigned long long)h.base, (unsigned long long)h.length);
	if (h.cxl_version == CHBS_VER_CXL2 && h.length < CHBS_CXL2_LEN)
		return hw_err(err, errlen, -EINVAL,
			      "CEDT: CHBS uid %u: component block length 0x%llx < 64 KiB", h.uid,
			      (unsigned long long)h.length);
	for (unsigned i = 0; i < c->nchbs; i++)
		if (c->chbs[i].uid == h.uid)
			return hw_err(err, errlen, -EINVAL, "CEDT: two CHBS for host bridge uid %u",
				      h.uid);
	if (c->nchbs >= VCXL_CEDT_MAX_CHBS)
		return hw_err(err, errlen, -ENOSPC, "CEDT: more than %u CHBS", VCXL_CEDT_MAX_CHBS);
	c->chbs[c->nchbs++] = h;
	return 0;
}

static bool overlaps(uint64_t a, uint64_t as, uint64_t b, uint64_t bs)
{
	return a < b + bs && b < a + as;
}

/* CXL r3.1 9.18.1.3 */
static int parse_cfmws(const uint8_t *p, unsigned rlen, unsigned at, struct vcxl_cedt *c, char *err,
		       size_t errlen)
{
	struct vcxl_cedt_cfmws w;

	memset(&w, 0, sizeof(w));
	if (rlen < CFMWS_FIXED_LEN)
		return hw_err(err, errlen, -EINVAL, "CEDT: CFMWS at 0x%x: length %u < %u", at, rlen,
			      CFMWS_FIXED_LEN);
	w.base = get64(p + CFMWS_BASE);
	w.size = get64(p + CFMWS_SIZE);
	w.eniw = p[CFMWS_ENIW];
	w.arithmetic = p[CFMWS_ARITH];
	w.hbig = get32(p + CFMWS_HBIG);
	w.restrictions = get16(p + CFMWS_RESTRICT);
	w.qtg_id = get16(p + CFMWS_QTG);
	w.ways = eniw_ways(w.eniw);
	if (!w.ways)
		return hw_err(err, errlen, -EINVAL, "CEDT: CFMWS at 0x%x: reserved ENIW %u", at,
			      w.eniw);
	if (w.arithmetic != CFMWS_ARITH_MODULO && w.arithmetic != CFMWS_ARITH_XOR)
		return hw_err(err, errlen, -EINVAL,
			      "CEDT: CFMWS at 0x%x: unknown interleave arithmetic %u", at,
			      w.arithmetic);
	if (rlen < CFMWS_FIXED_LEN + w.ways * CFMWS_TARGET_SIZE)
		return hw_err(err, errlen, -EINVAL,
			      "CEDT: CFMWS at 0x%x: length %u too short for %u targets", at, rlen,
			      w.ways);
	if (!w.size || (w.base | w.size) & (CXL_HDM_GRANULE - 1) || w.base + w.size < w.base)
		return hw_err(err, errlen, -EINVAL,
			      "CEDT: CFMWS at 0x%x: window 0x%llx+0x%llx not 256 MiB granular", at,
			      (unsigned long long)w.base, (unsigned long long)w.size);
	w.ntargets = w.ways;
	for (unsigned i = 0; i < w.ways; i++)
		w.target[i] = get32(p + CFMWS_TARGETS + i * CFMWS_TARGET_SIZE);
	for (unsigned i = 0; i < c->ncfmws; i++)
		if (overlaps(w.base, w.size, c->cfmws[i].base, c->cfmws[i].size))
			return hw_err(err, errlen, -EINVAL,
				      "CEDT: CFMWS 0x%llx+0x%llx overlaps window %u",
				      (unsigned long long)w.base, (unsigned long long)w.size, i);
	if (c->ncfmws >= VCXL_CEDT_MAX_CFMWS)
		return hw_err(err, errlen, -ENOSPC, "CEDT: more than %u CFMWS",
			      VCXL_CEDT_MAX_CFMWS);
	c->cfmws[c->ncfmws++] = w;
	return 0;
}

/* ACPI 6.5 5.2.6: the bytes of the whole table sum to zero */
static bool checksum_ok(const uint8_t *p, size_t len)
{
	uint8_t sum = 0;

	for (size_t i = 0; i < len; i++)
		sum = (uint8_t)(sum + p[i]);
	return sum == 0;
}

/* CXL r3.1 9.18.1: the structures after the header, each inside the table */
static int cedt_walk(const uint8_t *p, uint32_t tlen, struct vcxl_cedt *out, char *err,
		     size_t errlen)
{
	int rc;

	for (uint32_t at = ACPI_HDR_LEN; at < tlen;) {
		if (tlen - at < CEDT_REC_HDR_LEN)
			return hw_err(err, errlen, -EINVAL,
				      "CEDT: truncated structure header at 0x%x", at);
		unsigned type = p[at], rlen = get16(p + at + 2);
		if (rlen < CEDT_REC_HDR_LEN || rlen > tlen - at)
			return hw_err(err, errlen, -EINVAL,
				      "CEDT: structure at 0x%x: length %u outside the table", at,
				      rlen);
		switch (type) {
		case CEDT_TYPE_CHBS:
			rc = parse_chbs(p + at, rlen, at, out, err, errlen);
			break;
		case CEDT_TYPE_CFMWS:
			rc = parse_cfmws(p + at, rlen, at, out, err, errlen);
			break;
		default:
			out->nother++; /* CXIMS, RDPAS, CSDS: not needed here */
			rc = 0;
			break;
		}
		if (rc)
			return rc;
		at += rlen;
	}
	return 0;
}

int vcxl_cedt_parse(const void *buf, size_t len, struct vcxl_cedt *out, char *err, size_t errlen)
{
	const uint8_t *p = buf;
	int rc;

	memset(out, 0, sizeof(*out));
	if (!buf || len < ACPI_HDR_LEN)
		return hw_err(err, errlen, -EINVAL, "CEDT: %zu bytes, shorter than an ACPI header",
			      len);
	if (memcmp(p, "CEDT", 4))
		return hw_err(err, errlen, -EINVAL, "CEDT: signature is not CEDT");
	uint32_t tlen = get32(p + ACPI_HDR_LENGTH);
	if (tlen < ACPI_HDR_LEN || tlen > len)
		return hw_err(err, errlen, -EINVAL, "CEDT: table length %u, %zu bytes available",
			      tlen, len);
	if (!checksum_ok(p, tlen))
		return hw_err(err, errlen, -EINVAL, "CEDT: bad checksum");
	rc = cedt_walk(p, tlen, out, err, errlen);
	if (rc) /* a refused table leaves nothing half-parsed */
		memset(out, 0, sizeof(*out));
	return rc;
}

int hw_read_file(const char *path, char **buf, size_t *len, size_t max)
{
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	size_t cap = 4096, n = 0;
	char *b;

	if (fd < 0)
		return -errno;
	b = malloc(cap + 1);
	if (!b) {
		close(fd);
		return -ENOMEM;
	}
	for (;;) {
		if (n == cap) {
			if (cap >= max) {
				free(b);
				close(fd);
				return -EFBIG;
			}
			cap *= 2;
			char *nb = realloc(b, cap + 1);
			if (!nb) {
				free(b);
				close(fd);
				return -ENOMEM;
			}
			b = nb;
		}
		ssize_t r = read(fd, b + n, cap - n);
		if (r < 0 && errno == EINTR)
			continue;
		if (r < 0) {
			int e = -errno;
			free(b);
			close(fd);
			return e;
		}
		if (r == 0)
			break;
		n += (size_t)r;
	}
	close(fd);
	b[n] = 0;
	*buf = b;
	*len = n;
	return 0;
}

int hw_read_attr(const char *path, char *buf, size_t len)
{
	char *b;
	size_t n;
	int rc = hw_read_file(path, &b, &n, 1u << 16);

	if (rc)
		return rc;
	size_t k = strcspn(b, "\n");
	if (k >= len)
		k = len - 1;
	memcpy(buf, b, k);
	buf[k] = 0;
	free(b);
	return 0;
}

uint64_t hw_now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

void hw_sleep_ns(uint64_t ns)
{
	struct timespec ts = {.tv_sec = (time_t)(ns / 1000000000ull),
			      .tv_nsec = (long)(ns % 1000000000ull)};

	while (nanosleep(&ts, &ts) && errno == EINTR)
		;
}

int vcxl_cedt_read(const char *path, struct vcxl_cedt *out, char *err, size_t errlen)
{
	const char *p = hw_or(path, "/sys/firmware/acpi/tables/CEDT");
	char *buf;
	size_t len;
	int rc = hw_read_file(p, &buf, &len, 1u << 20);

	if (rc == -ENOENT)
		return hw_err(err, errlen, rc, "no ACPI CEDT (%s): the platform has no CXL windows",
			      p);
	if (rc)
		return hw_err(err, errlen, rc, "%s: %s", p, strerror(-rc));
	rc = vcxl_cedt_parse(buf, len, out, err, errlen);
	free(buf);
	return rc;
}

const struct vcxl_cedt_chbs *vcxl_cedt_find_chbs(const struct vcxl_cedt *c, uint32_t uid)
{
	for (unsigned i = 0; i < c->nchbs; i++)
		if (c->chbs[i].uid == uid)
			return &c->chbs[i];
	return NULL;
}
