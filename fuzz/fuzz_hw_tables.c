// SPDX-License-Identifier: BSD-3-Clause
/*
 * libFuzzer harness: the real-hardware backend's parsers of data vcxl does
 * not control (firmware and kernel), on a buffer, no device needed:
 *   vcxl_cedt_parse        the ACPI CEDT (CHBS, CFMWS) from firmware;
 *   vcxl_hw_region_decode  a VFIO_DEVICE_GET_REGION_INFO reply and its
 *                          capability chain from the kernel;
 *   vcxl_hw_iomem_claimed  /proc/iomem text from the kernel.
 *
 * Input: [sel] [rest]. sel % 3 picks the parser: 0 CEDT (rest = the table
 * file), 1 region info (rest = the ioctl's reply buffer), 2 iomem (rest =
 * base[8] size[8], little endian, zero-padded, then the text up to the first
 * NUL). m = sel / 3: m % 5 picks the caller's reason / name buffer size
 * (FZ_BUFLENS); for a CEDT, bit 0 of m / 5 sets the header's length field to
 * the input's length and bit 1 fixes the checksum byte up (the checksum
 * would otherwise stop almost every mutation at the header). rest is copied
 * to a buffer of exactly its size (over-reads hit ASan in the replay builds
 * too).
 *
 * Oracle: an independent reading of each format (the ACPI and CXL spec
 * layouts, linux/vfio.h, /proc/iomem's "start-end : name" lines) decides
 * what the parser must do, and its answer is compared field by field:
 *  CEDT: accepted iff the reading finds the table valid (signature, header
 *    length within the input, checksum, every structure inside the table,
 *    CHBS/CFMWS field rules, no overlapping windows, no duplicate host
 *    bridge UID, at most VCXL_CEDT_MAX_* of each), the errno the expected
 *    one (-ENOSPC only for one structure too many); an accepted table's
 *    CHBS/CFMWS are the bytes of the structures inside it, counts within
 *    bounds, windows pairwise disjoint, non-empty, 256 MiB aligned and
 *    granular, not wrapping, the bytes up to the header length sum to 0; a
 *    refused one has a one-line, NUL-terminated, non-empty reason within the
 *    buffer and an all-zero result.
 *  Region info: 0 iff the reading finds the reply well-formed, else -EINVAL;
 *    on success offset/size/flags from the fixed part, the sparse areas in
 *    order, each non-empty and inside the region, nr_sparse <=
 *    VCXL_BAR_MAX_AREAS and sparse_overflow set iff the reply listed more.
 *  iomem: for the input's range and for ranges ending next to the ends of
 *    the first lines: -EINVAL iff the range is empty or wraps, else 0 or 1;
 *    1 iff some well-formed line (hex, no sign, prefix or whitespace inside the
 *    numbers, start <= end) overlaps [base, base + size) without strictly
 *    containing it, and the claimant is that first line's name (a substring
 *    of the input, one line), truncated to the buffer.
 * Buffers are bounded by canaries: nothing is written past the size given.
 */
#include <errno.h>
#include <linux/vfio.h>
#include <stdbool.h>
#include <string.h>

#include "fuzz_harness.h"
#include "cxl/cxl_regs.h"
#include "hw/hw_vfio.h"

#define FZ_OUTBUF 320
#define FZ_CANARY 0xa5
static const size_t FZ_BUFLENS[] = {256, 24, 2, 1, 0};
#define FZ_NBUFLENS (sizeof(FZ_BUFLENS) / sizeof(FZ_BUFLENS[0]))

static uint64_t le(const uint8_t *p, unsigned n)
{
	uint64_t v = 0;

	for (unsigned i = 0; i < n; i++)
		v |= (uint64_t)p[i] << (8 * i);
	return v;
}

/* [a, a + as) and [b, b + bs), both non-empty and not wrapping */
static bool disjoint(uint64_t a, uint64_t as, uint64_t b, uint64_t bs)
{
	return a + as <= b || b + bs <= a;
}

/* The caller's buffer: reason/name inside [0, len), the rest untouched. */
static void check_outbuf(const char *what, const char *buf, size_t len, bool want_text)
{
	for (size_t i = len; i < FZ_OUTBUF; i++)
		if ((uint8_t)buf[i] != FZ_CANARY)
			fz_fail("%s: byte %zu written, buffer of %zu", what, i, len);
	if (!want_text || !len)
		return;
	if (!memchr(buf, 0, len))
		fz_fail("%s: not NUL-terminated within %zu bytes", what, len);
	if (strchr(buf, '\n'))
		fz_fail("%s: more than one line: '%s'", what, buf);
}

/* ---- CEDT ----------------------------------------------------------------- */

/* ACPI 6.5 5.2.6: system description table header */
#define ACPI_HDR_LEN 36
/* CXL r3.1 9.18.1: structure header type[1] reserved[1] length[2] */
#define REC_HDR 4
/* CXL r3.1 9.18.1.2 Table 9-21: CHBS */
#define CHBS_MIN 32
/* CXL r3.1 9.18.1.3 Table 9-22: CFMWS, 36 bytes + 4 per interleave target */
#define CFMWS_MIN 36

struct ref_cedt {
	int rc; /* what the parser must return */
	unsigned nchbs, ncfmws, nother;
	uint32_t chbs_at[VCXL_CEDT_MAX_CHBS], cfmws_at[VCXL_CEDT_MAX_CFMWS];
};

/* CXL r3.1 9.18.1.3: ENIW 0-4 = 2^n ways, 8-10 = 3 * 2^(n-8) ways */
static unsigned ref_ways(uint8_t eniw)
{
	if (eniw <= 4)
		return 1u << eniw;
	if (eniw >= 8 && eniw <= 10)
		return 3u << (eniw - 8);
	return 0;
}

/* CXL r3.1 9.18.1.2 (plus the parser's rules: CXL 2.0 block 64 KiB, unique uid) */
static bool ref_chbs_ok(const uint8_t *p, const uint8_t *r, unsigned rlen, const struct ref_cedt *c)
{
	uint32_t ver, uid;
	uint64_t base, len;

	if (rlen < CHBS_MIN)
		return false;
	uid = (uint32_t)le(r + 4, 4);
	ver = (uint32_t)le(r + 8, 4);
	base = le(r + 16, 8);
	len = le(r + 24, 8);
	/* version 0 RCH, 1 CXL 2.0+ with a 64 KiB component block (CXL r3.1 8.2.3) */
	if (ver > 1 || !base || !len || base + len < base || (ver == 1 && len < 0x10000))
		return false;
	for (unsigned i = 0; i < c->nchbs; i++)
		if ((uint32_t)le(p + c->chbs_at[i] + 4, 4) == uid)
			return false;
	return true;
}

/* CXL r3.1 9.18.1.3: Base HPA 256 MiB aligned, Window Size a multiple of 256 MiB */
static bool ref_cfmws_ok(const uint8_t *p, const uint8_t *r, unsigned rlen,
			 const struct ref_cedt *c)
{
	uint64_t base, size;
	unsigned ways;

	if (rlen < CFMWS_MIN)
		return false;
	base = le(r + 8, 8);
	size = le(r + 16, 8);
	ways = ref_ways(r[24]);
	/* interleave arithmetic 0 modulo, 1 XOR */
	if (!ways || r[25] > 1 || rlen < CFMWS_MIN + 4 * ways || !size || base % VCXL_SZ_256M ||
	    size % VCXL_SZ_256M || base + size < base)
		return false;
	for (unsigned i = 0; i < c->ncfmws; i++) {
		const uint8_t *o = p + c->cfmws_at[i];

		if (!disjoint(base, size, le(o + 8, 8), le(o + 16, 8)))
			return false;
	}
	return true;
}

static void ref_cedt(const uint8_t *p, size_t len, struct ref_cedt *c)
{
	uint32_t tlen;
	uint8_t sum = 0;

	memset(c, 0, sizeof(*c));
	c->rc = -EINVAL;
	if (len < ACPI_HDR_LEN || memcmp(p, "CEDT", 4))
		return;
	tlen = (uint32_t)le(p + 4, 4);
	if (tlen < ACPI_HDR_LEN || tlen > len)
		return;
	for (uint32_t i = 0; i < tlen; i++)
		sum = (uint8_t)(sum + p[i]);
	if (sum)
		return;
	for (uint32_t at = ACPI_HDR_LEN; at < tlen;) {
		unsigned rlen;

		if (at + REC_HDR > tlen)
			return;
		rlen = (unsigned)le(p + at + 2, 2);
		if (rlen < REC_HDR || at + rlen > tlen)
			return;
		if (p[at] == 0) {
			if (!ref_chbs_ok(p, p + at, rlen, c))
				return;
			if (c->nchbs == VCXL_CEDT_MAX_CHBS) {
				c->rc = -ENOSPC;
				return;
			}
			c->chbs_at[c->nchbs++] = at;
		} else if (p[at] == 1) {
			if (!ref_cfmws_ok(p, p + at, rlen, c))
				return;
			if (c->ncfmws == VCXL_CEDT_MAX_CFMWS) {
				c->rc = -ENOSPC;
				return;
			}
			c->cfmws_at[c->ncfmws++] = at;
		} else {
			c->nother++;
		}
		at += rlen;
	}
	c->rc = 0;
}

static void check_cedt_accepted(const uint8_t *p, size_t len, const struct vcxl_cedt *c,
				const struct ref_cedt *ref)
{
	uint32_t tlen = (uint32_t)le(p + 4, 4);
	uint8_t sum = 0;

	if (c->nchbs != ref->nchbs || c->ncfmws != ref->ncfmws || c->nother != ref->nother)
		fz_fail("CEDT: %u CHBS %u CFMWS %u other, the table has %u %u %u", c->nchbs,
			c->ncfmws, c->nother, ref->nchbs, ref->ncfmws, ref->nother);
	if (c->nchbs > VCXL_CEDT_MAX_CHBS || c->ncfmws > VCXL_CEDT_MAX_CFMWS)
		fz_fail("CEDT: counts %u/%u beyond the bounds", c->nchbs, c->ncfmws);
	if (len < ACPI_HDR_LEN || memcmp(p, "CEDT", 4) || tlen < ACPI_HDR_LEN || tlen > len)
		fz_fail("CEDT accepted with header length %u, %zu bytes", tlen, len);
	for (uint32_t i = 0; i < tlen; i++)
		sum = (uint8_t)(sum + p[i]);
	if (sum)
		fz_fail("CEDT accepted with checksum sum 0x%02x", sum);
	for (unsigned i = 0; i < c->nchbs; i++) {
		const struct vcxl_cedt_chbs *h = &c->chbs[i];
		uint32_t at = ref->chbs_at[i];
		const uint8_t *r = p + at;

		if (at < ACPI_HDR_LEN || at + le(r + 2, 2) > tlen || le(r + 2, 2) < CHBS_MIN)
			fz_fail("CHBS %u at 0x%x outside the table", i, at);
		if (h->uid != le(r + 4, 4) || h->cxl_version != le(r + 8, 4) ||
		    h->base != le(r + 16, 8) || h->length != le(r + 24, 8))
			fz_fail("CHBS %u: fields differ from the structure at 0x%x", i, at);
		if (!h->base || !h->length || h->base + h->length < h->base)
			fz_fail("CHBS %u: range 0x%llx+0x%llx", i, (unsigned long long)h->base,
				(unsigned long long)h->length);
		for (unsigned k = 0; k < i; k++)
			if (c->chbs[k].uid == h->uid)
				fz_fail("CHBS %u and %u: same uid %u", k, i, h->uid);
	}
	for (unsigned i = 0; i < c->ncfmws; i++) {
		const struct vcxl_cedt_cfmws *w = &c->cfmws[i];
		uint32_t at = ref->cfmws_at[i];
		const uint8_t *r = p + at;
		unsigned rlen = (unsigned)le(r + 2, 2);

		if (at < ACPI_HDR_LEN || at + rlen > tlen || rlen < CFMWS_MIN + 4 * w->ntargets)
			fz_fail("CFMWS %u at 0x%x (%u targets) outside the table", i, at,
				w->ntargets);
		if (w->base != le(r + 8, 8) || w->size != le(r + 16, 8) || w->eniw != r[24] ||
		    w->arithmetic != r[25] || w->hbig != le(r + 28, 4) ||
		    w->restrictions != le(r + 32, 2) || w->qtg_id != le(r + 34, 2))
			fz_fail("CFMWS %u: fields differ from the structure at 0x%x", i, at);
		if (w->ways != ref_ways(w->eniw) || w->ntargets != w->ways ||
		    w->ntargets > VCXL_CEDT_MAX_TARGETS)
			fz_fail("CFMWS %u: ENIW %u decoded as %u ways, %u targets", i, w->eniw,
				w->ways, w->ntargets);
		for (unsigned k = 0; k < w->ntargets; k++)
			if (w->target[k] != le(r + CFMWS_MIN + 4 * k, 4))
				fz_fail("CFMWS %u: target %u differs", i, k);
		if (!w->size || w->base % VCXL_SZ_256M || w->size % VCXL_SZ_256M ||
		    w->base + w->size < w->base)
			fz_fail("CFMWS %u: window 0x%llx+0x%llx not 256 MiB granular", i,
				(unsigned long long)w->base, (unsigned long long)w->size);
		for (unsigned k = 0; k < i; k++)
			if (!disjoint(w->base, w->size, c->cfmws[k].base, c->cfmws[k].size))
				fz_fail("CFMWS %u and %u overlap", k, i);
	}
}

static void fuzz_cedt(uint8_t *p, size_t len, size_t errlen, unsigned fix)
{
	static const struct vcxl_cedt zero;
	static struct vcxl_cedt c;
	char err[FZ_OUTBUF];
	struct ref_cedt ref;
	int rc;

	if ((fix & 1) && len >= ACPI_HDR_LEN)
		for (unsigned i = 0; i < 4; i++)
			p[4 + i] = (uint8_t)((uint64_t)len >> (8 * i));
	if ((fix & 2) && len >= ACPI_HDR_LEN && le(p + 4, 4) >= ACPI_HDR_LEN &&
	    le(p + 4, 4) <= len) {
		uint8_t sum = 0;

		p[9] = 0;
		for (size_t i = 0; i < le(p + 4, 4); i++)
			sum = (uint8_t)(sum + p[i]);
		p[9] = (uint8_t)-sum;
	}
	memset(err, FZ_CANARY, sizeof(err));
	memset(&c, 0x5a, sizeof(c));
	rc = vcxl_cedt_parse(p, len, &c, errlen ? err : NULL, errlen);
	ref_cedt(p, len, &ref);
	if (rc != ref.rc)
		fz_fail("CEDT of %zu bytes: parser %d, expected %d (%.*s)", len, rc, ref.rc,
			rc && errlen ? (int)strnlen(err, errlen) : 0, err);
	check_outbuf("CEDT reason", err, errlen, rc != 0);
	if (rc) {
		if (errlen >= 2 && !err[0])
			fz_fail("CEDT refused (%d) without a reason", rc);
		if (memcmp(&c, &zero, sizeof(c)))
			fz_fail("CEDT refused (%d), result not cleared", rc);
		return;
	}
	check_cedt_accepted(p, len, &c, &ref);
}

/* ---- VFIO_DEVICE_GET_REGION_INFO reply ------------------------------------ */

/* linux/vfio.h: struct vfio_region_info, vfio_info_cap_header, sparse mmap */
#define RI_ARGSZ     0
#define RI_FLAGS     4
#define RI_CAP_OFF   12
#define RI_SIZE	     16
#define RI_OFFSET    24
#define RI_LEN	     32
#define CAP_ID	     0
#define CAP_NEXT     4
#define CAP_HDR	     8
#define SM_NR	     8
#define SM_AREAS     16
#define SM_AREA_SIZE 16
#define FZ_MAX_CAPS  64 /* beyond: the decoder may stop (a work bound) */

_Static_assert(sizeof(struct vfio_region_info) == RI_LEN &&
		   __builtin_offsetof(struct vfio_region_info, cap_offset) == RI_CAP_OFF &&
		   __builtin_offsetof(struct vfio_region_info, size) == RI_SIZE &&
		   __builtin_offsetof(struct vfio_region_info, offset) == RI_OFFSET &&
		   sizeof(struct vfio_info_cap_header) == CAP_HDR &&
		   sizeof(struct vfio_region_info_cap_sparse_mmap) == SM_AREAS &&
		   sizeof(struct vfio_region_sparse_mmap_area) == SM_AREA_SIZE,
	       "linux/vfio.h layout");

struct ref_region {
	int rc;
	unsigned ncaps;
	struct vcxl_hw_region r;
	unsigned total; /* areas listed */
};

/* The reply's contract (hw_vfio.h): capabilities past the fixed part,
 * 4-byte aligned, inside min(argsz, buffer), the chain only forward; sparse
 * areas listed in full, each non-empty and inside the region. */
static void ref_region(const uint8_t *b, size_t n, struct ref_region *e)
{
	uint64_t lim, at;

	memset(e, 0, sizeof(*e));
	e->rc = -EINVAL;
	if (n < RI_LEN)
		return;
	e->r.flags = (uint32_t)le(b + RI_FLAGS, 4);
	e->r.size = le(b + RI_SIZE, 8);
	e->r.offset = le(b + RI_OFFSET, 8);
	at = le(b + RI_CAP_OFF, 4);
	lim = le(b + RI_ARGSZ, 4);
	if (lim > n)
		lim = n;
	if (!(e->r.flags & VFIO_REGION_INFO_FLAG_CAPS))
		at = 0;
	while (at) {
		uint64_t next;

		if (at < RI_LEN || at % 4 || at + CAP_HDR > lim)
			return;
		e->ncaps++;
		next = le(b + at + CAP_NEXT, 4);
		if (le(b + at + CAP_ID, 2) == VFIO_REGION_INFO_CAP_SPARSE_MMAP) {
			uint64_t nr;

			if (at + SM_AREAS > lim)
				return;
			nr = le(b + at + SM_NR, 4);
			if (at + SM_AREAS + nr * SM_AREA_SIZE > lim)
				return;
			for (uint64_t i = 0; i < nr; i++) {
				const uint8_t *a = b + at + SM_AREAS + i * SM_AREA_SIZE;
				uint64_t off = le(a, 8), sz = le(a + 8, 8);

				if (!sz || off + sz < off || off + sz > e->r.size)
					return;
				if (e->r.nr_sparse < VCXL_BAR_MAX_AREAS)
					e->r.sparse[e->r.nr_sparse++] =
					    (struct vcxl_bar_area){.offset = off, .size = sz};
				else
					e->r.sparse_overflow = true;
				e->total++;
			}
			/* a sparse capability without areas: nothing is mappable */
			if (!nr)
				e->r.flags &= ~(uint32_t)VFIO_REGION_INFO_FLAG_MMAP;
		}
		if (next && next <= at)
			return;
		at = next;
	}
	e->rc = 0;
}

static void fuzz_region(const uint8_t *p, size_t len)
{
	struct vcxl_hw_region r;
	struct ref_region e;
	int rc;

	memset(&r, 0x5a, sizeof(r));
	rc = vcxl_hw_region_decode(p, len, &r);
	ref_region(p, len, &e);
	if (rc != 0 && rc != -EINVAL)
		fz_fail("region decode returned %d", rc);
	if (e.ncaps > FZ_MAX_CAPS && rc)
		return;
	if (rc != e.rc)
		fz_fail("region reply of %zu bytes, %u caps: decode %d, expected %d", len, e.ncaps,
			rc, e.rc);
	if (rc)
		return;
	if (r.offset != e.r.offset || r.size != e.r.size || r.flags != e.r.flags)
		fz_fail("region: offset/size/flags 0x%llx/0x%llx/0x%x, reply 0x%llx/0x%llx/0x%x",
			(unsigned long long)r.offset, (unsigned long long)r.size, r.flags,
			(unsigned long long)e.r.offset, (unsigned long long)e.r.size, e.r.flags);
	if (r.nr_sparse > VCXL_BAR_MAX_AREAS || r.nr_sparse != e.r.nr_sparse ||
	    r.sparse_overflow != (e.total > VCXL_BAR_MAX_AREAS))
		fz_fail("region: %u areas (overflow %d), the reply lists %u", r.nr_sparse,
			r.sparse_overflow, e.total);
	for (unsigned i = 0; i < r.nr_sparse; i++) {
		const struct vcxl_bar_area *a = &r.sparse[i];

		if (!a->size || a->offset > r.size || a->size > r.size - a->offset)
			fz_fail("region: area %u 0x%llx+0x%llx outside 0x%llx", i,
				(unsigned long long)a->offset, (unsigned long long)a->size,
				(unsigned long long)r.size);
		if (a->offset != e.r.sparse[i].offset || a->size != e.r.sparse[i].size)
			fz_fail("region: area %u differs from the reply", i);
	}
}

/* ---- /proc/iomem ---------------------------------------------------------- */

/* hex digits only, at least one, fitting 64 bits */
static const char *ref_hex(const char *s, const char *end, uint64_t *v)
{
	const char *start = s;

	*v = 0;
	for (; s < end; s++) {
		unsigned d;

		if (*s >= '0' && *s <= '9')
			d = (unsigned)(*s - '0');
		else if (*s >= 'a' && *s <= 'f')
			d = (unsigned)(*s - 'a' + 10);
		else if (*s >= 'A' && *s <= 'F')
			d = (unsigned)(*s - 'A' + 10);
		else
			break;
		if (*v >> 60)
			return NULL;
		*v = *v << 4 | d;
	}
	return s > start ? s : NULL;
}

/* One well-formed line [l, end): spaces, start-end " : " name, start <= end */
static bool ref_line(const char *l, const char *end, uint64_t *s, uint64_t *e, const char **name)
{
	while (l < end && *l == ' ')
		l++;
	if (!(l = ref_hex(l, end, s)) || l == end || *l != '-')
		return false;
	if (!(l = ref_hex(l + 1, end, e)) || end - l < 3 || memcmp(l, " : ", 3))
		return false;
	*name = l + 3;
	return *s <= *e;
}

/* One query against the text, checked against the reading of its lines. */
static void iomem_query(const char *text, uint64_t base, uint64_t size, size_t wholen)
{
	uint64_t last = base + size - 1;
	const char *first = NULL, *fend = NULL;
	char who[FZ_OUTBUF];
	size_t k;
	int rc, want;

	memset(who, FZ_CANARY, sizeof(who));
	rc = vcxl_hw_iomem_claimed(text, base, size, wholen ? who : NULL, wholen);
	if (!size || last < base) {
		if (rc != -EINVAL)
			fz_fail("iomem: range 0x%llx+0x%llx: %d, not -EINVAL",
				(unsigned long long)base, (unsigned long long)size, rc);
		check_outbuf("iomem claimant", who, 0, false);
		return;
	}
	for (const char *l = text; *l && !first;) {
		const char *nl = strchr(l, '\n'), *end = nl ? nl : l + strlen(l), *name;
		uint64_t s, e;

		/* overlapping and not strictly containing (a bridge window) */
		if (ref_line(l, end, &s, &e, &name) && s <= last && e >= base &&
		    !(s <= base && e >= last && (s != base || e != last))) {
			first = name;
			fend = end;
		}
		l = nl ? nl + 1 : end;
	}
	want = first != NULL;
	if (rc != want)
		fz_fail("iomem: range 0x%llx+0x%llx: %d, expected %d%s%.*s",
			(unsigned long long)base, (unsigned long long)size, rc, want,
			want ? " for " : "", want ? (int)(fend - first) : 0, first);
	check_outbuf("iomem claimant", who, wholen, rc == 1);
	if (rc != 1 || !wholen)
		return;
	k = (size_t)(fend - first);
	if (k > wholen - 1)
		k = wholen - 1;
	if (strlen(who) != k || memcmp(who, first, k) || !strstr(text, who))
		fz_fail("iomem: claimant '%s', the line says '%.*s'", who, (int)k, first);
}

/* The input's range, then ranges with their ends next to the ends of the
 * first FZ_IOMEM_EDGE_LINES well-formed lines (where the overlap and
 * containment rules decide; random 64-bit ranges seldom land there). */
#define FZ_IOMEM_EDGE_LINES 2
static void fuzz_iomem(const uint8_t *p, size_t len, size_t wholen)
{
	uint8_t hdr[16] = {0};
	uint64_t pt[4 * FZ_IOMEM_EDGE_LINES];
	unsigned npt = 0;
	size_t tlen, n = len < 16 ? len : 16;
	char *text;

	memcpy(hdr, p, n);
	p += n;
	len -= n;
	tlen = strnlen((const char *)p, len);
	text = malloc(tlen + 1);
	if (!text)
		fz_fail("out of memory");
	memcpy(text, p, tlen);
	text[tlen] = 0;
	iomem_query(text, le(hdr, 8), le(hdr + 8, 8), wholen);
	for (const char *l = text; *l && npt < 4 * FZ_IOMEM_EDGE_LINES;) {
		const char *nl = strchr(l, '\n'), *end = nl ? nl : l + strlen(l), *name;
		uint64_t s, e;

		if (ref_line(l, end, &s, &e, &name)) {
			pt[npt++] = s - 1;
			pt[npt++] = s;
			pt[npt++] = e;
			pt[npt++] = e + 1;
		}
		l = nl ? nl + 1 : end;
	}
	for (unsigned i = 0; i < npt; i++)
		for (unsigned j = 0; j < npt; j++)
			if (pt[i] <= pt[j])
				iomem_query(text, pt[i], pt[j] - pt[i] + 1, wholen);
	free(text);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	uint8_t *rest;
	size_t n, buflen;
	unsigned fix;

	if (size < 1)
		return 0;
	fz_quiet();
	n = size - 1;
	buflen = FZ_BUFLENS[(data[0] / 3) % FZ_NBUFLENS];
	fix = (data[0] / 3) / FZ_NBUFLENS;
	rest = malloc(n ? n : 1);
	if (!rest)
		fz_fail("out of memory");
	memcpy(rest, data + 1, n);
	switch (data[0] % 3) {
	case 0:
		fuzz_cedt(rest, n, buflen, fix);
		break;
	case 1:
		fuzz_region(rest, n);
		break;
	default:
		fuzz_iomem(rest, n, buflen);
		break;
	}
	free(rest);
	return 0;
}
