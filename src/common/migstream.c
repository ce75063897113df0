// SPDX-License-Identifier: BSD-3-Clause
/* The migration stream's framing: writer, reader, CRC-32 (src/common/migstream.h). */
#include <endian.h>
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/uio.h>
#include <zlib.h>

#include "common/migstream.h"

/* Header field offsets (docs/migration.md "Stream format") */
#define H_MAGIC	   0
#define H_MAJOR	   8
#define H_MINOR	   10
#define H_HDR_LEN  12
#define H_LEN	   16
#define H_FLAGS	   24
#define H_CRC	   28
#define H_VENDOR   32
#define H_DEVICE   34
#define H_CLASS	   36
#define H_PERS	   40
#define H_GDEC	   44
#define H_HDEC	   48
#define H_CFGSZ	   52
#define H_MEM	   56
#define H_REGION   64
#define H_BARS	   72
#define H_RESERVED (H_BARS + 8 * VCXL_MIG_NUM_BARS)
_Static_assert(H_RESERVED <= VCXL_MIG_HDR_LEN, "header fits");
/* Section head field offsets */
#define S_TYPE	0
#define S_FLAGS 4
#define S_LEN	8
#define S_CRC	16
#define S_RSVD	20

/* CRC-32 (IEEE 802.3, reflected; zlib's, which has the fast implementation) */
uint32_t vcxl_crc32(uint32_t crc, const void *p, size_t n)
{
	return (uint32_t)crc32_z(crc, p, n);
}

/* The CRC of a followed by b, from their CRCs and b's length (zlib's
 * crc32_combine: a few table steps, not a pass over b) */
static uint32_t crc32_join(uint32_t a, uint32_t b, uint64_t blen)
{
	return (uint32_t)crc32_combine64(a, b, (z_off64_t)blen);
}

/* A section's part of the stream CRC (END covers every byte before END's
 * head): its head, its payload by the payload's CRC, its zero padding */
static uint32_t crc_section(uint32_t crc, const uint8_t *head, uint32_t payload_crc, uint64_t plen,
			    const uint8_t *pad, size_t padlen)
{
	crc = vcxl_crc32(crc, head, VCXL_MIG_SEC_HDR_LEN);
	crc = crc32_join(crc, payload_crc, plen);
	return vcxl_crc32(crc, pad, padlen);
}

/* ---- writer ---- */

int vcxl_mig_fail(char *err, size_t errlen, const char *fmt, ...)
{
	va_list ap;

	if (err && errlen) {
		va_start(ap, fmt);
		vsnprintf(err, errlen, fmt, ap);
		va_end(ap);
	}
	return -EINVAL;
}

static size_t buf_max(const struct vcxl_mig_buf *b)
{
	return b->max ? b->max : (size_t)(VCXL_MIG_STATE_MAX + VCXL_MIG_DEVMEM_MAX);
}

/* n more bytes at the end, not cleared (NULL while counting or on error) */
static uint8_t *buf_grow(struct vcxl_mig_buf *b, size_t n)
{
	uint8_t *p;

	if (b->err)
		return NULL;
	if (n > buf_max(b) || b->len > buf_max(b) - n) {
		b->err = -EFBIG;
		return NULL;
	}
	if (b->count_only) {
		b->len += n;
		return NULL;
	}
	if (b->len + n > b->cap) {
		size_t cap = b->cap ? b->cap : 64u << 10;
		while (cap < b->len + n)
			cap *= 2;
		uint8_t *d = realloc(b->data, cap);
		if (!d) {
			b->err = -ENOMEM;
			return NULL;
		}
		b->data = d;
		b->cap = cap;
	}
	p = b->data + b->len;
	b->len += n;
	return p;
}

uint8_t *vcxl_mig_reserve(struct vcxl_mig_buf *b, size_t n)
{
	uint8_t *p = buf_grow(b, n);

	if (p)
		memset(p, 0, n);
	return p;
}

int vcxl_mig_put(struct vcxl_mig_buf *b, const void *p, size_t n)
{
	uint8_t *d = vcxl_mig_reserve(b, n);

	if (d && n)
		memcpy(d, p, n);
	return b->err;
}

int vcxl_mig_put_u32(struct vcxl_mig_buf *b, uint32_t v)
{
	uint8_t *d = vcxl_mig_reserve(b, 4);

	if (d)
		vcxl_mig_wr32(d, v);
	return b->err;
}

int vcxl_mig_put_u64(struct vcxl_mig_buf *b, uint64_t v)
{
	uint8_t *d = vcxl_mig_reserve(b, 8);

	if (d)
		vcxl_mig_wr64(d, v);
	return b->err;
}

int vcxl_mig_begin(struct vcxl_mig_buf *b, const struct vcxl_mig_geom *g)
{
	uint8_t *h = vcxl_mig_reserve(b, VCXL_MIG_HDR_LEN);

	b->body_crc = 0;
	if (!h)
		return b->err;
	vcxl_mig_wr64(h + H_MAGIC, VCXL_MIG_MAGIC);
	vcxl_mig_wr16(h + H_MAJOR, VCXL_MIG_VERSION_MAJOR);
	vcxl_mig_wr16(h + H_MINOR, VCXL_MIG_VERSION_MINOR);
	vcxl_mig_wr32(h + H_HDR_LEN, VCXL_MIG_HDR_LEN);
	vcxl_mig_wr16(h + H_VENDOR, g->vendor);
	vcxl_mig_wr16(h + H_DEVICE, g->device);
	vcxl_mig_wr32(h + H_CLASS, g->class_code);
	vcxl_mig_wr32(h + H_PERS, g->personality);
	vcxl_mig_wr32(h + H_GDEC, g->guest_decoders);
	vcxl_mig_wr32(h + H_HDEC, g->host_decoders);
	vcxl_mig_wr32(h + H_CFGSZ, g->config_size);
	vcxl_mig_wr64(h + H_MEM, g->mem_size);
	vcxl_mig_wr64(h + H_REGION, g->region_size);
	for (unsigned i = 0; i < VCXL_MIG_NUM_BARS; i++)
		vcxl_mig_wr64(h + H_BARS + 8 * i, g->bar_size[i]);
	return 0;
}

int vcxl_mig_sec_begin(struct vcxl_mig_buf *b, uint32_t type, uint32_t flags)
{
	size_t at = b->len;
	uint8_t *h = vcxl_mig_reserve(b, VCXL_MIG_SEC_HDR_LEN);

	b->sec_at = at;
	if (h) {
		vcxl_mig_wr32(h + S_TYPE, type);
		vcxl_mig_wr32(h + S_FLAGS, flags);
	}
	return b->err;
}

/* ---- zero-run coding (VCXL_MIG_SEC_ZERO_RUNS) ---- */

/* Zero runs shorter than this stay in a literal (a record costs 8 bytes) */
#define ZR_MIN_RUN 16u

static bool zr_word_zero(const uint8_t *p, size_t i, size_t n)
{
	uint64_t w;

	if (n - i < 8)
		return false;
	memcpy(&w, p + i, 8);
	return !w;
}

/* Zero runs are first measured in blocks of this many bytes (memcmp's vector
 * compare against zeros) */
#define ZR_BLOCK 256u
static const uint8_t zr_zero_block[ZR_BLOCK];

/* Bytes of zero from i (blocks, words, then bytes at the end) */
static size_t zr_zeros(const uint8_t *p, size_t i, size_t n)
{
	size_t j = i;

	while (n - j >= ZR_BLOCK && !memcmp(p + j, zr_zero_block, ZR_BLOCK))
		j += ZR_BLOCK;
	while (zr_word_zero(p, j, n))
		j += 8;
	while (j < n && !p[j])
		j++;
	return j - i;
}

/* A piece known to be n zero bytes (raw NULL), nothing read: it lengthens the
 * last record when that one is zeros alone, so that the coding is the same as
 * of the zero bytes themselves; else one record. */
static bool zr_code_zeros(size_t n, uint8_t *out, size_t *op, size_t limit, size_t *last)
{
	size_t o = *op;

	if (*last != SIZE_MAX && !vcxl_mig_rd32(out + *last + 4) &&
	    n <= UINT32_MAX - vcxl_mig_rd32(out + *last)) {
		vcxl_mig_wr32(out + *last, (uint32_t)(vcxl_mig_rd32(out + *last) + n));
		return true;
	}
	if (o + VCXL_MIG_ZR_REC_LEN > limit || n > UINT32_MAX)
		return false;
	vcxl_mig_wr32(out + o, (uint32_t)n);
	vcxl_mig_wr32(out + o + 4, 0);
	*last = o;
	*op = o + VCXL_MIG_ZR_REC_LEN;
	return true;
}

/* The records of raw[0, n) appended at out + *o: false when they would pass
 * limit bytes of out. *last: where the last record went (SIZE_MAX: none). */
static bool zr_code_into(const uint8_t *raw, size_t n, uint8_t *out, size_t *op, size_t limit,
			 size_t *last)
{
	size_t i = 0, o = *op;

	if (!raw)
		return !n || zr_code_zeros(n, out, op, limit, last);

	while (i < n) {
		size_t z = zr_zeros(raw, i, n), lit = i + z, end;

		/* the literal runs to the next zero run worth a record, or the end */
		for (end = lit; end < n;) {
			size_t r = zr_zeros(raw, end, n);
			const uint8_t *zb;

			if (r >= ZR_MIN_RUN || end + r == n)
				break;
			if (r) {
				end += r;
				continue;
			}
			/* data up to the next zero byte stays in the literal */
			zb = memchr(raw + end, 0, n - end);
			end = zb ? (size_t)(zb - raw) : n;
		}
		if (o + VCXL_MIG_ZR_REC_LEN + (end - lit) > limit)
			return false;
		vcxl_mig_wr32(out + o, (uint32_t)z);
		vcxl_mig_wr32(out + o + 4, (uint32_t)(end - lit));
		memcpy(out + o + VCXL_MIG_ZR_REC_LEN, raw + lit, end - lit);
		*last = o;
		o += VCXL_MIG_ZR_REC_LEN + (end - lit);
		i = end;
	}
	*op = o;
	return true;
}

/* Whether n bytes are worth coding, and the most their coding may take */
static bool zr_worth(size_t n, size_t *limit)
{
	*limit = n - n / 4;
	return n <= VCXL_MIG_ZR_MAX && n >= 2 * ZR_MIN_RUN;
}

/* Code raw[0, n) into out (room for n bytes); its coded length, or 0 when
 * that saves less than a quarter (the section then stays as it is). */
static size_t zr_code(const uint8_t *raw, size_t n, uint8_t *out)
{
	size_t o = VCXL_MIG_ZR_HDR_LEN, limit, last = SIZE_MAX;

	if (!zr_worth(n, &limit))
		return 0;
	vcxl_mig_wr64(out, n);
	return zr_code_into(raw, n, out, &o, limit, &last) ? o : 0;
}

/* Replace the open section's payload by its coding when that pays. */
static void zr_section(struct vcxl_mig_buf *b)
{
	uint8_t *h = b->data + b->sec_at, *raw = h + VCXL_MIG_SEC_HDR_LEN;
	size_t plen = b->len - b->sec_at - VCXL_MIG_SEC_HDR_LEN, clen;
	uint8_t *tmp;

	if (plen > VCXL_MIG_ZR_MAX || plen < 2 * ZR_MIN_RUN || !(tmp = malloc(plen)))
		return;
	clen = zr_code(raw, plen, tmp);
	if (clen) {
		memcpy(raw, tmp, clen);
		b->len = b->sec_at + VCXL_MIG_SEC_HDR_LEN + clen;
		vcxl_mig_wr32(h + S_FLAGS, vcxl_mig_rd32(h + S_FLAGS) | VCXL_MIG_SEC_ZERO_RUNS);
	}
	free(tmp);
}

/* Decode a coded payload into a new buffer of its decoded length: 0, or
 * -EINVAL with err (hostile input: every count checked against both ends). */
struct zr_buf {
	struct zr_buf *next;
	uint8_t data[];
};

static int zr_decode(const uint8_t *p, uint64_t len, struct zr_buf **out, uint64_t *olen, char *err,
		     size_t errlen, const char *name)
{
	uint64_t n, i = VCXL_MIG_ZR_HDR_LEN, o = 0;
	struct zr_buf *b;
	uint8_t *d;

	if (len < VCXL_MIG_ZR_HDR_LEN)
		return vcxl_mig_fail(err, errlen, "section %s: zero-run coding without its length",
				     name);
	n = vcxl_mig_rd64(p);
	if (n > VCXL_MIG_ZR_MAX)
		return vcxl_mig_fail(err, errlen,
				     "section %s: decodes to %llu bytes, more than %llu", name,
				     (unsigned long long)n, (unsigned long long)VCXL_MIG_ZR_MAX);
	b = calloc(1, sizeof(*b) + n);
	if (!b)
		return -ENOMEM;
	d = b->data;
	while (i < len) {
		uint32_t z, lit;

		if (len - i < VCXL_MIG_ZR_REC_LEN)
			goto bad;
		z = vcxl_mig_rd32(p + i);
		lit = vcxl_mig_rd32(p + i + 4);
		i += VCXL_MIG_ZR_REC_LEN;
		if (z > n - o || lit > n - o - z || lit > len - i)
			goto bad;
		o += z;
		memcpy(d + o, p + i, lit);
		o += lit;
		i += lit;
	}
	if (o != n)
		goto bad;
	*out = b;
	*olen = n;
	return 0;
bad:
	free(b);
	return vcxl_mig_fail(err, errlen, "section %s: zero-run coding corrupt at byte %llu", name,
			     (unsigned long long)i);
}

static int sec_close(struct vcxl_mig_buf *b, bool code)
{
	size_t plen, pad;

	if (code && !b->err && !b->count_only)
		zr_section(b);
	plen = b->len - b->sec_at - VCXL_MIG_SEC_HDR_LEN;
	pad = (VCXL_MIG_ALIGN - plen % VCXL_MIG_ALIGN) % VCXL_MIG_ALIGN;

	vcxl_mig_reserve(b, pad);
	if (b->err)
		return b->err;
	b->nsec++;
	if (b->count_only)
		return 0;
	uint8_t *h = b->data + b->sec_at;
	uint32_t crc = vcxl_crc32(0, h + VCXL_MIG_SEC_HDR_LEN, plen);

	vcxl_mig_wr64(h + S_LEN, plen);
	vcxl_mig_wr32(h + S_CRC, crc);
	b->body_crc = crc_section(b->body_crc, h, crc, plen, h + VCXL_MIG_SEC_HDR_LEN + plen, pad);
	return 0;
}

int vcxl_mig_sec_end(struct vcxl_mig_buf *b)
{
	return sec_close(b, true);
}

int vcxl_mig_put_section(struct vcxl_mig_buf *b, uint32_t type, uint32_t flags,
			 const struct iovec *parts, unsigned nparts)
{
	size_t total = 0, limit, at, o = VCXL_MIG_ZR_HDR_LEN, last = SIZE_MAX;
	uint8_t *out;
	bool coded = true;

	for (unsigned i = 0; i < nparts; i++) {
		if (total + parts[i].iov_len < total)
			return b->err = b->err ? b->err : -EFBIG;
		total += parts[i].iov_len;
	}
	if (vcxl_mig_sec_begin(b, type, flags))
		return b->err;
	if (!b->count_only && zr_worth(total, &limit)) {
		at = b->len;
		/* not cleared: what the coding leaves of it is given back */
		if (!(out = buf_grow(b, limit)))
			return b->err;
		vcxl_mig_wr64(out, total);
		for (unsigned i = 0; i < nparts && coded; i++)
			coded = zr_code_into(parts[i].iov_base, parts[i].iov_len, out, &o, limit,
					     &last);
		b->len = at + (coded ? o : 0);
		if (coded) {
			uint8_t *h = b->data + b->sec_at;

			vcxl_mig_wr32(h + S_FLAGS,
				      vcxl_mig_rd32(h + S_FLAGS) | VCXL_MIG_SEC_ZERO_RUNS);
			return sec_close(b, false);
		}
	}
	for (unsigned i = 0; i < nparts; i++)
		if (parts[i].iov_base)
			vcxl_mig_put(b, parts[i].iov_base, parts[i].iov_len);
		else
			vcxl_mig_reserve(b, parts[i].iov_len); /* zeroed */
	return sec_close(b, false); /* coding did not pay: no second try */
}

int vcxl_mig_finish(struct vcxl_mig_buf *b)
{
	uint32_t nsec;

	if (b->tail && !b->err)
		b->tail(b, b->tail_opaque);
	nsec = b->nsec;
	vcxl_mig_sec_begin(b, VCXL_MIG_SEC_END, 0);
	size_t end_at = b->sec_at;
	uint8_t *e = vcxl_mig_reserve(b, VCXL_MIG_END_LEN);
	if (b->err)
		return b->err;
	if (!b->count_only) {
		/* the header's length and CRC first: the END CRC covers them */
		vcxl_mig_wr64(b->data + H_LEN, b->len);
		vcxl_mig_wr32(b->data + H_CRC, 0);
		vcxl_mig_wr32(b->data + H_CRC, vcxl_crc32(0, b->data, VCXL_MIG_HDR_LEN));
		/* the sections' bytes by the CRCs their closing kept (b->body_crc) */
		vcxl_mig_wr32(e, crc32_join(vcxl_crc32(0, b->data, VCXL_MIG_HDR_LEN), b->body_crc,
					    end_at - VCXL_MIG_HDR_LEN));
		vcxl_mig_wr32(e + 4, nsec);
	}
	return vcxl_mig_sec_end(b);
}

void vcxl_mig_buf_free(struct vcxl_mig_buf *b)
{
	free(b->data);
	memset(b, 0, sizeof(*b));
}

/* ---- reader ---- */

int vcxl_mig_open(struct vcxl_mig_iter *it, const void *s, size_t len, struct vcxl_mig_hdr *h,
		  char *err, size_t errlen)
{
	const uint8_t *p = s;
	uint8_t tmp[VCXL_MIG_HDR_LEN];

	memset(it, 0, sizeof(*it));
	memset(h, 0, sizeof(*h));
	if (len < 8 || vcxl_mig_rd64(p + H_MAGIC) != VCXL_MIG_MAGIC)
		return vcxl_mig_fail(err, errlen, "not a vcxl device state (bad magic)");
	if (len < VCXL_MIG_HDR_LEN)
		return vcxl_mig_fail(err, errlen, "stream truncated in its header (%zu bytes)",
				     len);
	h->magic = vcxl_mig_rd64(p + H_MAGIC);
	h->major = vcxl_mig_rd16(p + H_MAJOR);
	h->minor = vcxl_mig_rd16(p + H_MINOR);
	h->hdr_len = vcxl_mig_rd32(p + H_HDR_LEN);
	h->stream_len = vcxl_mig_rd64(p + H_LEN);
	h->flags = vcxl_mig_rd32(p + H_FLAGS);
	if (h->major != VCXL_MIG_VERSION_MAJOR)
		return vcxl_mig_fail(err, errlen, "stream version %u.%u, this server reads %u.x",
				     h->major, h->minor, VCXL_MIG_VERSION_MAJOR);
	if (h->hdr_len != VCXL_MIG_HDR_LEN)
		return vcxl_mig_fail(err, errlen, "header length %u, expected %u", h->hdr_len,
				     VCXL_MIG_HDR_LEN);
	memcpy(tmp, p, sizeof(tmp));
	vcxl_mig_wr32(tmp + H_CRC, 0);
	if (vcxl_crc32(0, tmp, sizeof(tmp)) != vcxl_mig_rd32(p + H_CRC))
		return vcxl_mig_fail(err, errlen, "header checksum mismatch");
	if (h->flags)
		return vcxl_mig_fail(err, errlen, "unknown header flags 0x%x", h->flags);
	for (unsigned i = H_RESERVED; i < VCXL_MIG_HDR_LEN; i++)
		if (p[i])
			return vcxl_mig_fail(err, errlen, "reserved header byte %u not zero", i);
	if (h->stream_len != len)
		return vcxl_mig_fail(err, errlen, "stream is %zu bytes, its header says %llu (%s)",
				     len, (unsigned long long)h->stream_len,
				     len < h->stream_len ? "truncated" : "trailing bytes");
	h->geom.vendor = vcxl_mig_rd16(p + H_VENDOR);
	h->geom.device = vcxl_mig_rd16(p + H_DEVICE);
	h->geom.class_code = vcxl_mig_rd32(p + H_CLASS);
	h->geom.personality = vcxl_mig_rd32(p + H_PERS);
	h->geom.guest_decoders = vcxl_mig_rd32(p + H_GDEC);
	h->geom.host_decoders = vcxl_mig_rd32(p + H_HDEC);
	h->geom.config_size = vcxl_mig_rd32(p + H_CFGSZ);
	h->geom.mem_size = vcxl_mig_rd64(p + H_MEM);
	h->geom.region_size = vcxl_mig_rd64(p + H_REGION);
	for (unsigned i = 0; i < VCXL_MIG_NUM_BARS; i++)
		h->geom.bar_size[i] = vcxl_mig_rd64(p + H_BARS + 8 * i);
	it->s = p;
	it->len = len;
	it->off = VCXL_MIG_HDR_LEN;
	return 0;
}

int vcxl_mig_dmapages_parse(const uint8_t *p, uint64_t plen,
			    bool (*page_ok)(const void *opaque, uint64_t iova), const void *opaque,
			    const uint8_t **iovas, const uint8_t **data, uint64_t *n, char *err,
			    size_t errlen)
{
	uint64_t k;

	if (plen < 16 || vcxl_mig_rd64(p) != VCXL_MIG_PAGE)
		return vcxl_mig_fail(err, errlen, "DMAPAGES: bad header");
	k = vcxl_mig_rd64(p + 8);
	if (k > VCXL_MIG_DMAPAGES_MAX / VCXL_MIG_PAGE || plen != 16 + k * (8 + VCXL_MIG_PAGE))
		return vcxl_mig_fail(err, errlen, "DMAPAGES: %llu pages in %llu bytes",
				     (unsigned long long)k, (unsigned long long)plen);
	for (uint64_t i = 0; i < k; i++) {
		uint64_t iova = vcxl_mig_rd64(p + 16 + 8 * i);

		if (iova % VCXL_MIG_PAGE || !page_ok(opaque, iova))
			return vcxl_mig_fail(err, errlen,
					     "DMAPAGES: the page at iova 0x%llx is in no writable "
					     "DMA window of this client",
					     (unsigned long long)iova);
	}
	*iovas = p + 16;
	*data = p + 16 + 8 * k;
	*n = k;
	return 0;
}

bool vcxl_mig_whole(const void *s, size_t len)
{
	const uint8_t *h = s;

	return len >= VCXL_MIG_HDR_LEN && vcxl_mig_rd64(h + H_MAGIC) == VCXL_MIG_MAGIC &&
	       vcxl_mig_rd64(h + H_LEN) == len;
}

int vcxl_mig_find(const uint8_t *s, size_t len, uint32_t type, const uint8_t **p, uint64_t *plen,
		  uint32_t *flags)
{
	size_t off = VCXL_MIG_HDR_LEN;

	if (len < VCXL_MIG_HDR_LEN)
		return -EINVAL;
	while (len - off >= VCXL_MIG_SEC_HDR_LEN) {
		const uint8_t *h = s + off;
		uint32_t t = vcxl_mig_rd32(h + S_TYPE);
		uint64_t l = vcxl_mig_rd64(h + S_LEN), padded;

		padded = l + (VCXL_MIG_ALIGN - l % VCXL_MIG_ALIGN) % VCXL_MIG_ALIGN;
		if (l > len || padded > len - off - VCXL_MIG_SEC_HDR_LEN)
			return -EINVAL;
		if (t == type) {
			*p = h + VCXL_MIG_SEC_HDR_LEN;
			*plen = l;
			*flags = vcxl_mig_rd32(h + S_FLAGS);
			return 1;
		}
		if (t == VCXL_MIG_SEC_END || t > type)
			return 0; /* sections ascend */
		off += VCXL_MIG_SEC_HDR_LEN + padded;
	}
	return -EINVAL;
}

int vcxl_mig_next(struct vcxl_mig_iter *it, uint32_t *type, uint32_t *flags, const uint8_t **p,
		  uint64_t *len, char *err, size_t errlen)
{
	const uint8_t *h;
	uint64_t plen, padded;
	uint32_t crc;

	if (it->ended)
		return 0;
	if (it->len - it->off < VCXL_MIG_SEC_HDR_LEN)
		return vcxl_mig_fail(err, errlen, "stream truncated at byte %zu: no END section",
				     it->off);
	h = it->s + it->off;
	*type = vcxl_mig_rd32(h + S_TYPE);
	*flags = vcxl_mig_rd32(h + S_FLAGS);
	plen = vcxl_mig_rd64(h + S_LEN);
	if (*type <= it->last_type)
		return vcxl_mig_fail(err, errlen, "section %s (%u) at byte %zu %s",
				     vcxl_mig_sec_name(*type), *type, it->off,
				     *type == it->last_type ? "duplicated" : "out of order");
	if (*flags & ~VCXL_MIG_SEC_FLAGS)
		return vcxl_mig_fail(err, errlen, "section %s: unknown flags 0x%x",
				     vcxl_mig_sec_name(*type), *flags);
	if (vcxl_mig_rd32(h + S_RSVD))
		return vcxl_mig_fail(err, errlen, "section %s: reserved field not zero",
				     vcxl_mig_sec_name(*type));
	padded = plen + (VCXL_MIG_ALIGN - plen % VCXL_MIG_ALIGN) % VCXL_MIG_ALIGN;
	if (plen > it->len || padded > it->len - it->off - VCXL_MIG_SEC_HDR_LEN)
		return vcxl_mig_fail(err, errlen,
				     "section %s: %llu bytes, past the end of the stream",
				     vcxl_mig_sec_name(*type), (unsigned long long)plen);
	*p = h + VCXL_MIG_SEC_HDR_LEN;
	*len = plen;
	if (*type == VCXL_MIG_SEC_END)
		crc = 0; /* END's payload is not its own checksum's */
	else if ((crc = vcxl_crc32(0, *p, plen)) != vcxl_mig_rd32(h + S_CRC))
		return vcxl_mig_fail(err, errlen, "section %s: checksum mismatch",
				     vcxl_mig_sec_name(*type));
	for (uint64_t i = plen; i < padded; i++)
		if ((*p)[i])
			return vcxl_mig_fail(err, errlen, "section %s: padding not zero",
					     vcxl_mig_sec_name(*type));
	if (*type == VCXL_MIG_SEC_END) {
		if (*flags & VCXL_MIG_SEC_ZERO_RUNS)
			return vcxl_mig_fail(err, errlen, "END section zero-run coded");
		if (plen != VCXL_MIG_END_LEN)
			return vcxl_mig_fail(err, errlen, "END section of %llu bytes",
					     (unsigned long long)plen);
		/* every byte before END's head: the header, then each section by
		 * the CRC its check above computed (it->body_crc) */
		if (vcxl_mig_rd32(*p) != crc32_join(vcxl_crc32(0, it->s, VCXL_MIG_HDR_LEN),
						    it->body_crc, it->off - VCXL_MIG_HDR_LEN))
			return vcxl_mig_fail(err, errlen, "stream checksum mismatch");
		if (vcxl_mig_rd32(*p + 4) != it->nsec)
			return vcxl_mig_fail(err, errlen,
					     "END counts %u sections, the stream has %u",
					     vcxl_mig_rd32(*p + 4), it->nsec);
		if (it->off + VCXL_MIG_SEC_HDR_LEN + padded != it->len)
			return vcxl_mig_fail(err, errlen, "bytes after the END section");
		it->ended = true;
		return 0;
	}
	if (*flags & VCXL_MIG_SEC_ZERO_RUNS) {
		struct zr_buf *d = NULL;
		int rc = zr_decode(*p, plen, &d, len, err, errlen, vcxl_mig_sec_name(*type));

		if (rc)
			return rc;
		if (*len > VCXL_MIG_ZR_TOTAL_MAX - it->decoded_len) {
			free(d);
			return vcxl_mig_fail(
			    err, errlen,
			    "section %s: the coded sections decode to more than %llu "
			    "bytes",
			    vcxl_mig_sec_name(*type), (unsigned long long)VCXL_MIG_ZR_TOTAL_MAX);
		}
		it->decoded_len += *len;
		d->next = it->decoded;
		it->decoded = d;
		*p = d->data;
	}
	it->body_crc =
	    crc_section(it->body_crc, h, crc, plen, h + VCXL_MIG_SEC_HDR_LEN + plen, padded - plen);
	it->off += VCXL_MIG_SEC_HDR_LEN + padded;
	it->last_type = *type;
	it->nsec++;
	return 1;
}

void vcxl_mig_close(struct vcxl_mig_iter *it)
{
	struct zr_buf *d = it->decoded;

	while (d) {
		struct zr_buf *next = d->next;
		free(d);
		d = next;
	}
	it->decoded = NULL;
}

const uint8_t *vcxl_mig_get(struct vcxl_mig_rd *r, size_t n)
{
	const uint8_t *p;

	if (r->bad || n > r->len - r->off) {
		r->bad = true;
		return NULL;
	}
	p = r->p + r->off;
	r->off += n;
	return p;
}

uint32_t vcxl_mig_get_u32(struct vcxl_mig_rd *r)
{
	const uint8_t *p = vcxl_mig_get(r, 4);

	return p ? vcxl_mig_rd32(p) : 0;
}

uint64_t vcxl_mig_get_u64(struct vcxl_mig_rd *r)
{
	const uint8_t *p = vcxl_mig_get(r, 8);

	return p ? vcxl_mig_rd64(p) : 0;
}

const char *vcxl_mig_sec_name(uint32_t type)
{
	switch (type) {
	case VCXL_MIG_SEC_VCFG:
		return "VCFG";
	case VCXL_MIG_SEC_VDOE:
		return "VDOE";
	case VCXL_MIG_SEC_VCOMP:
		return "VCOMP";
	case VCXL_MIG_SEC_VMBOX:
		return "VMBOX";
	case VCXL_MIG_SEC_HOST:
		return "HOST";
	case VCXL_MIG_SEC_MODEL_CFG:
		return "MODEL_CFG";
	case VCXL_MIG_SEC_MODEL_BAR2:
		return "MODEL_BAR2";
	case VCXL_MIG_SEC_MODEL_JOB:
		return "MODEL_JOB";
	case VCXL_MIG_SEC_MODEL_BAR0:
		return "MODEL_BAR0";
	case VCXL_MIG_SEC_MODEL_T3:
		return "MODEL_T3";
	case VCXL_MIG_SEC_DEVMEM:
		return "DEVMEM";
	case VCXL_MIG_SEC_END:
		return "END";
	}
	return "unknown";
}
