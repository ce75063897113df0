// SPDX-License-Identifier: BSD-3-Clause
/* CDAT table builder (CDAT r1.03): header, then per range DSMAS + 4 DSLBIS + DSEMTS. */
#include <errno.h>
#include <string.h>

#include "cxl/cxl_spec.h"

/* Field offsets inside the structures (CDAT r1.03 Tables 1, 2, 3, 10) */
#define CDAT_HDR_LENGTH	  0
#define CDAT_HDR_REVISION 4
#define CDAT_HDR_CHECKSUM 5
#define CDAT_HDR_SEQUENCE 12
#define CDAT_SUB_TYPE	  0
#define CDAT_SUB_LENGTH	  2
#define DSMAS_HANDLE	  4
#define DSMAS_FLAGS	  5
#define DSMAS_DPA_BASE	  8
#define DSMAS_DPA_LEN	  16
#define DSLBIS_HANDLE	  4
#define DSLBIS_FLAGS	  5
#define DSLBIS_DATA_TYPE  6
#define DSLBIS_BASE_UNIT  8
#define DSLBIS_ENTRY0	  16
#define DSEMTS_HANDLE	  4
#define DSEMTS_EFI_TYPE	  5
#define DSEMTS_DPA_OFF	  8
#define DSEMTS_DPA_LEN	  16

/* HMAT units: latency entries in picoseconds x base unit, bandwidth in MB/s x base unit. */
#define LAT_BASE_UNIT_PS_PER_NS	 1000ull
#define BW_BASE_UNIT_MBS_PER_GBS 1000ull

#define CDAT_PER_RANGE (CDAT_DSMAS_SIZE + 4 * CDAT_DSLBIS_SIZE + CDAT_DSEMTS_SIZE)

static void put16(uint8_t *p, uint16_t v)
{
	p[0] = (uint8_t)v;
	p[1] = (uint8_t)(v >> 8);
}

static void put32(uint8_t *p, uint32_t v)
{
	put16(p, (uint16_t)v);
	put16(p + 2, (uint16_t)(v >> 16));
}

static void put64(uint8_t *p, uint64_t v)
{
	put32(p, (uint32_t)v);
	put32(p + 4, (uint32_t)(v >> 32));
}

static uint8_t *cdat_sub(uint8_t *p, uint8_t type, uint16_t len)
{
	memset(p, 0, len);
	p[CDAT_SUB_TYPE] = type;
	put16(p + CDAT_SUB_LENGTH, len);
	return p;
}

/* CDAT r1.03 3.1: Device Scoped Memory Affinity Structure */
static uint8_t *put_dsmas(uint8_t *p, uint8_t handle, const struct vcxl_cdat_range *r)
{
	cdat_sub(p, CDAT_TYPE_DSMAS, CDAT_DSMAS_SIZE);
	p[DSMAS_HANDLE] = handle;
	p[DSMAS_FLAGS] = r->dsmas_flags;
	put64(p + DSMAS_DPA_BASE, r->dpa_base);
	put64(p + DSMAS_DPA_LEN, r->dpa_len);
	return p + CDAT_DSMAS_SIZE;
}

/* CDAT r1.03 3.2: Device Scoped Latency and Bandwidth Information Structure */
static uint8_t *put_dslbis(uint8_t *p, uint8_t handle, uint8_t data_type, uint64_t unit,
			   uint16_t value)
{
	cdat_sub(p, CDAT_TYPE_DSLBIS, CDAT_DSLBIS_SIZE);
	p[DSLBIS_HANDLE] = handle;
	p[DSLBIS_FLAGS] = HMAT_LB_MEM_MEMORY;
	p[DSLBIS_DATA_TYPE] = data_type;
	put64(p + DSLBIS_BASE_UNIT, unit);
	put16(p + DSLBIS_ENTRY0, value);
	return p + CDAT_DSLBIS_SIZE;
}

/*
 * CDAT r1.03 3.5: Device Scoped EFI Memory Type Structure, covering the whole
 * DSMAS range (offset relative to the DSMAS DPA base). For an accelerator's
 * private memory the caller passes CDAT_DSEMTS_EFI_RESERVED: as Dan Williams
 * argued on the vfio-cxl threads, "EFI reserved" rather than conventional +
 * specific-purpose keeps the host from ever onlining the memory as System RAM.
 */
static uint8_t *put_dsemts(uint8_t *p, uint8_t handle, const struct vcxl_cdat_range *r)
{
	cdat_sub(p, CDAT_TYPE_DSEMTS, CDAT_DSEMTS_SIZE);
	p[DSEMTS_HANDLE] = handle;
	p[DSEMTS_EFI_TYPE] = r->efi_type;
	put64(p + DSEMTS_DPA_OFF, 0);
	put64(p + DSEMTS_DPA_LEN, r->dpa_len);
	return p + CDAT_DSEMTS_SIZE;
}

int vcxl_cdat_build(uint8_t *buf, size_t cap, const struct vcxl_cdat_range *r, unsigned n)
{
	size_t len = CDAT_HEADER_SIZE + (size_t)n * CDAT_PER_RANGE;
	uint8_t *p;
	uint8_t sum = 0;

	if (!buf || (n && !r) || n > 0xff)
		return -EINVAL;
	if (len > cap)
		return -ENOSPC;
	p = buf + CDAT_HEADER_SIZE;
	/* CDAT r1.03 2.1: header */
	memset(buf, 0, CDAT_HEADER_SIZE);
	put32(buf + CDAT_HDR_LENGTH, (uint32_t)len);
	buf[CDAT_HDR_REVISION] = CDAT_REVISION;
	put32(buf + CDAT_HDR_SEQUENCE, 0);
	for (unsigned i = 0; i < n; i++) {
		uint8_t h = (uint8_t)i;
		p = put_dsmas(p, h, &r[i]);
		p = put_dslbis(p, h, HMAT_LB_DATA_READ_LATENCY, LAT_BASE_UNIT_PS_PER_NS,
			       r[i].read_lat_ns);
		p = put_dslbis(p, h, HMAT_LB_DATA_WRITE_LATENCY, LAT_BASE_UNIT_PS_PER_NS,
			       r[i].write_lat_ns);
		p = put_dslbis(p, h, HMAT_LB_DATA_READ_BANDWIDTH, BW_BASE_UNIT_MBS_PER_GBS,
			       r[i].read_bw_gbs);
		p = put_dslbis(p, h, HMAT_LB_DATA_WRITE_BANDWIDTH, BW_BASE_UNIT_MBS_PER_GBS,
			       r[i].write_bw_gbs);
		p = put_dsemts(p, h, &r[i]);
	}
	/* the checksum makes all bytes of the table sum to 0 */
	for (size_t i = 0; i < len; i++)
		sum = (uint8_t)(sum + buf[i]);
	buf[CDAT_HDR_CHECKSUM] = (uint8_t)(0x100 - sum);
	return (int)len;
}
