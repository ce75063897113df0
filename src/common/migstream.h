/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The device state stream of a migration (docs/migration.md "Stream format"):
 * a header (magic, version, the device's geometry, its own CRC) and typed,
 * length-prefixed sections, each with a CRC-32 of its payload, in ascending
 * type order, ended by an END section that carries the CRC-32 of everything
 * before it and the number of sections. All integers little-endian; every
 * section payload starts 8-byte aligned.
 *
 * The writer builds a stream in memory (or only counts its bytes uncoded: a
 * bound of the stop-copy size); the reader checks the framing of a stream
 * someone else wrote, which is hostile input: every length is checked before
 * use.
 */
#ifndef VCXL_MIGSTREAM_H
#define VCXL_MIGSTREAM_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/uio.h>
#include <string.h>
#include <endian.h>

#define VCXL_MIG_MAGIC	       0x0a47494d4c584356ull /* "VCXLMIG\n" */
#define VCXL_MIG_VERSION_MAJOR 1		     /* a reader refuses another major */
#define VCXL_MIG_VERSION_MINOR 1		     /* 1: zero-run coded sections */
#define VCXL_MIG_ALIGN	       8u
#define VCXL_MIG_PAGE	       4096u /* device memory pages in the stream */

/* Bounds (docs/migration.md "Size"): the device's own state, and the pages
 * of device memory a device's jobs dirtied since logging started. A source
 * with more dirty pages than VCXL_MIG_DEVMEM_MAX refuses STOP_COPY (EFBIG). */
#define VCXL_MIG_STATE_MAX  (8ull << 20)
#define VCXL_MIG_DEVMEM_MAX (256ull << 20)
/* and the pages of client memory in a DMAPAGES section (its STOP_COPY refused
 * with EFBIG beyond) */
#define VCXL_MIG_DMAPAGES_MAX (256ull << 20)

/* Header: fixed, VCXL_MIG_HDR_LEN bytes */
#define VCXL_MIG_HDR_LEN  128u
#define VCXL_MIG_NUM_BARS 6
struct vcxl_mig_geom {
	uint16_t vendor, device;
	uint32_t class_code;
	uint32_t personality;	 /* VCXL_MIG_PERS_* */
	uint32_t guest_decoders; /* virtual HDM decoders */
	uint32_t host_decoders;	 /* the device's HDM decoders */
	uint32_t config_size;	 /* bytes of virtual config state */
	uint64_t mem_size;	 /* device memory (DPA capacity) */
	uint64_t region_size;	 /* the CXL region exposed to the guest */
	uint64_t bar_size[VCXL_MIG_NUM_BARS];
};
#define VCXL_MIG_PERS_ACCEL 1 /* the model's Type-2 accelerator */
#define VCXL_MIG_PERS_TYPE3 2 /* the model's Type-3 memory expander */

struct vcxl_mig_hdr {
	uint64_t magic;
	uint16_t major, minor;
	uint32_t hdr_len;
	uint64_t stream_len; /* the whole stream, header included */
	uint32_t flags;	     /* none defined: 0 */
	struct vcxl_mig_geom geom;
};

/* Section head: {u32 type, u32 flags, u64 len, u32 crc, u32 reserved} */
#define VCXL_MIG_SEC_HDR_LEN  24u
#define VCXL_MIG_SEC_OPTIONAL (1u << 0) /* a reader that does not know it skips it */
/* The payload is zero-run coded (minor 1): u64 decoded length, then records
 * {u32 zero bytes, u32 literal bytes, the literal bytes} until the decoded
 * length; the CRC covers the coded payload. The reader hands out the decoded
 * bytes. The writer codes a section when that saves a quarter of it. */
#define VCXL_MIG_SEC_ZERO_RUNS (1u << 1)
#define VCXL_MIG_SEC_FLAGS     (VCXL_MIG_SEC_OPTIONAL | VCXL_MIG_SEC_ZERO_RUNS)
#define VCXL_MIG_ZR_HDR_LEN    8u /* the decoded length */
#define VCXL_MIG_ZR_REC_LEN    8u /* a record's two counts */
/* A coded section decodes to at most this (a stream's own state; DEVMEM
 * payloads beyond it are never coded) */
#define VCXL_MIG_ZR_MAX VCXL_MIG_STATE_MAX
/* All the coded sections of one stream decode to at most this: a stream of
 * many small sections each claiming 8 MiB of zeros cannot make the reader
 * hold more (the device's own state is at most ~4.4 MiB, a coded DEVMEM at
 * most VCXL_MIG_ZR_MAX) */
#define VCXL_MIG_ZR_TOTAL_MAX (2 * VCXL_MIG_ZR_MAX)

enum vcxl_mig_sec_type {
	/* the vfio-cxl core (src/vfio-cxl/vmig.c) */
	VCXL_MIG_SEC_VCFG = 1,	/* virtual config space register file */
	VCXL_MIG_SEC_VDOE = 2,	/* the virtual DOE mailbox, an exchange in flight */
	VCXL_MIG_SEC_VCOMP = 3, /* virtual component block: HDM decoders, RAS */
	VCXL_MIG_SEC_VMBOX = 4, /* the trapped memory device mailbox's flags */
	VCXL_MIG_SEC_HOST = 5,	/* host-owned facts: compared, never loaded */
	/* the backend's sections (src/model/model_mig.c) */
	VCXL_MIG_SEC_BE_FIRST = 16,
	VCXL_MIG_SEC_MODEL_CFG = 16,  /* the device's config space (guest parts) */
	VCXL_MIG_SEC_MODEL_BAR2 = 17, /* job engine registers, PBA */
	VCXL_MIG_SEC_MODEL_JOB = 18,  /* the job in flight, counters */
	VCXL_MIG_SEC_MODEL_BAR0 = 19, /* BAR0's RAM, zero pages left out */
	VCXL_MIG_SEC_MODEL_T3 = 20,   /* Type-3: memory device registers, mailbox, LSA */
	VCXL_MIG_SEC_BE_LAST = 31,
	/* pages of device memory the device wrote itself since logging started */
	VCXL_MIG_SEC_DEVMEM = 32,
	/* the vfio-user server's sections (src/server/migration.c), loaded by it */
	VCXL_MIG_SEC_SRV_FIRST = 48,
	/* pages of client memory the device wrote since the client's last
	 * DMA_LOGGING_REPORT, for a client that asks for no report once the
	 * device stopped (capability "dirty_in_stop_copy", docs/migration.md) */
	VCXL_MIG_SEC_DMAPAGES = 48,
	VCXL_MIG_SEC_SRV_LAST = 63,
	VCXL_MIG_SEC_END = 0xffff, /* {u32 crc of all before, u32 sections before} */
};
#define VCXL_MIG_END_LEN 8u

/* Little-endian fields of a stream (every integer in it) */
static inline void vcxl_mig_wr16(uint8_t *p, uint16_t v)
{
	v = htole16(v);
	memcpy(p, &v, 2);
}
static inline void vcxl_mig_wr32(uint8_t *p, uint32_t v)
{
	v = htole32(v);
	memcpy(p, &v, 4);
}
static inline void vcxl_mig_wr64(uint8_t *p, uint64_t v)
{
	v = htole64(v);
	memcpy(p, &v, 8);
}
static inline uint16_t vcxl_mig_rd16(const uint8_t *p)
{
	uint16_t v;
	memcpy(&v, p, 2);
	return le16toh(v);
}
static inline uint32_t vcxl_mig_rd32(const uint8_t *p)
{
	uint32_t v;
	memcpy(&v, p, 4);
	return le32toh(v);
}
static inline uint64_t vcxl_mig_rd64(const uint8_t *p)
{
	uint64_t v;
	memcpy(&v, p, 8);
	return le64toh(v);
}

/* A refusal's reason into err (when err and errlen): -EINVAL, for
 * "return vcxl_mig_fail(err, errlen, ...)" wherever a stream is refused. */
int vcxl_mig_fail(char *err, size_t errlen, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

/* ---- writer ---- */
struct vcxl_mig_buf {
	uint8_t *data; /* NULL while counting */
	size_t len, cap;
	bool count_only; /* only len moves: the stream's size uncoded (a bound) */
	size_t max;	 /* refuse to grow beyond (0: VCXL_MIG_STATE_MAX + VCXL_MIG_DEVMEM_MAX) */
	int err;	 /* first error (sticky): -ENOMEM, -EFBIG */
	size_t sec_at;	 /* head of the open section */
	uint32_t nsec;
	uint32_t body_crc; /* CRC-32 of the closed sections' bytes (END's CRC without the header) */
	/* The stream's owner's sections (types VCXL_MIG_SEC_SRV_*), written by
	 * vcxl_mig_finish() before END: NULL for none */
	void (*tail)(struct vcxl_mig_buf *b, void *opaque);
	void *tail_opaque;
};

/* The header with geom (stream_len patched by vcxl_mig_finish). */
int vcxl_mig_begin(struct vcxl_mig_buf *b, const struct vcxl_mig_geom *geom);
int vcxl_mig_sec_begin(struct vcxl_mig_buf *b, uint32_t type, uint32_t flags);
int vcxl_mig_put(struct vcxl_mig_buf *b, const void *p, size_t n);
int vcxl_mig_put_u32(struct vcxl_mig_buf *b, uint32_t v);
int vcxl_mig_put_u64(struct vcxl_mig_buf *b, uint64_t v);
/* n bytes to fill in place (NULL while counting or on error: then skip). */
uint8_t *vcxl_mig_reserve(struct vcxl_mig_buf *b, size_t n);
int vcxl_mig_sec_end(struct vcxl_mig_buf *b);
/* A whole section whose payload is the parts one after the other, zero-run
 * coded straight from them when that saves a quarter or more, else copied as
 * they are: no raw copy of the payload is made to code it (a component
 * block's register file is 128 KiB, nearly all zero). A part with iov_base
 * NULL is iov_len zero bytes, coded without reading anything. 0 or b->err. */
int vcxl_mig_put_section(struct vcxl_mig_buf *b, uint32_t type, uint32_t flags,
			 const struct iovec *parts, unsigned nparts);
/* The END section, stream_len and the header CRC. */
int vcxl_mig_finish(struct vcxl_mig_buf *b);
void vcxl_mig_buf_free(struct vcxl_mig_buf *b);

/* ---- reader ---- */
struct vcxl_mig_iter {
	const uint8_t *s;
	size_t len, off;
	uint32_t last_type;
	uint32_t nsec;
	bool ended;
	void *decoded;	      /* decoded payloads handed out, freed by vcxl_mig_close */
	uint64_t decoded_len; /* their bytes, at most VCXL_MIG_ZR_TOTAL_MAX */
	uint32_t body_crc;    /* CRC-32 of the sections read so far, heads and padding too */
};
/* Check the header (magic, version, length, CRC): 0, or -EINVAL with err. */
int vcxl_mig_open(struct vcxl_mig_iter *it, const void *s, size_t len, struct vcxl_mig_hdr *h,
		  char *err, size_t errlen);
/* The next section: 1 with its type, flags and payload; 0 at a verified END
 * (nothing may follow it); -EINVAL with err (truncated, oversized, out of
 * order, duplicated, bad CRC, unknown flags). */
int vcxl_mig_next(struct vcxl_mig_iter *it, uint32_t *type, uint32_t *flags, const uint8_t **p,
		  uint64_t *len, char *err, size_t errlen);
/* The bytes so far are as long as the header says the stream is (its magic
 * right): a writer sent all of it. Nothing checked beyond that. */
bool vcxl_mig_whole(const void *s, size_t len);
/* Framing alone (no checksum, no decoding), for a reader whose full check
 * (vcxl_mig_open/next) comes before it uses what it found: the section of
 * this type, its raw payload (coded if flags say so). 1 found, 0 none,
 * -EINVAL bad framing. */
int vcxl_mig_find(const uint8_t *s, size_t len, uint32_t type, const uint8_t **p, uint64_t *plen,
		  uint32_t *flags);
/* A DMAPAGES payload ({u64 page size, u64 n, u64 iova[n], n pages}): its
 * page size VCXL_MIG_PAGE, n within VCXL_MIG_DMAPAGES_MAX, the payload exactly
 * its n, every iova a multiple of VCXL_MIG_PAGE for which page_ok(opaque,
 * iova) holds. 0 with *iovas, *data and *n, or -EINVAL with err. */
int vcxl_mig_dmapages_parse(const uint8_t *p, uint64_t plen,
			    bool (*page_ok)(const void *opaque, uint64_t iova), const void *opaque,
			    const uint8_t **iovas, const uint8_t **data, uint64_t *n, char *err,
			    size_t errlen);
/* Free what the iterator decoded: the payloads it handed out die here. */
void vcxl_mig_close(struct vcxl_mig_iter *it);

/* Bounded reads from one section's payload. */
struct vcxl_mig_rd {
	const uint8_t *p;
	size_t len, off;
	bool bad; /* a read went past the end */
};
static inline void vcxl_mig_rd_init(struct vcxl_mig_rd *r, const uint8_t *p, size_t len)
{
	r->p = p;
	r->len = len;
	r->off = 0;
	r->bad = false;
}
const uint8_t *vcxl_mig_get(struct vcxl_mig_rd *r, size_t n); /* NULL: too short */
uint32_t vcxl_mig_get_u32(struct vcxl_mig_rd *r);
uint64_t vcxl_mig_get_u64(struct vcxl_mig_rd *r);
/* Every byte read, none missing. */
static inline bool vcxl_mig_rd_done(const struct vcxl_mig_rd *r)
{
	return !r->bad && r->off == r->len;
}

uint32_t vcxl_crc32(uint32_t crc, const void *p, size_t n);
const char *vcxl_mig_sec_name(uint32_t type);

#endif /* VCXL_MIGSTREAM_H */
