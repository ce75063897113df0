// SPDX-License-Identifier: BSD-3-Clause
/*
 * Host CXL core: a DOE mailbox client and the CDAT read (what Linux's
 * pci_doe + cxl_cdat_read_table do). Used once at bring-up, before any guest
 * exists; the guest is later served from a virtual mailbox, so host and guest
 * never interleave on the device's DOE.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "host_priv.h"

#define DOE_TMO_NS	 (1000 * NS_PER_MS) /* PCIe r6 6.30.2: 1 s */
#define DOE_POLL_NS	 (1 * NS_PER_MS)
#define DOE_MAX_RSP_DW	 1024u
#define CDAT_MAX_LEN	 0x10000u
#define CDAT_MAX_ENTRIES 256u

static int doe_rd(struct vcxl_cxl_dev *d, uint32_t reg, uint32_t *v)
{
	return cfg_rd(d->be, d->doe_off + reg, 4, v);
}

static int doe_wr(struct vcxl_cxl_dev *d, uint32_t reg, uint32_t v)
{
	return cfg_wr(d->be, d->doe_off + reg, 4, v);
}

/* PCIe r6 6.30.2: DOE Abort returns the mailbox to idle */
static void doe_abort(struct vcxl_cxl_dev *d)
{
	doe_wr(d, PCI_DOE_CTRL, PCI_DOE_CTRL_ABORT);
}

/* Poll Status until (status & mask) == want, or error/timeout. */
static int doe_wait(struct vcxl_cxl_dev *d, uint32_t mask, uint32_t want, uint32_t *status)
{
	uint64_t start = vcxl_host_now_ns(d->host);

	for (;;) {
		int rc = doe_rd(d, PCI_DOE_STATUS, status);
		if (rc)
			return rc;
		if (*status == 0xffffffffu)
			return -ENODEV;
		if (*status & PCI_DOE_STATUS_ERROR)
			return -EPROTO;
		if ((*status & mask) == want)
			return 0;
		if (vcxl_host_now_ns(d->host) - start >= DOE_TMO_NS)
			return -ETIMEDOUT;
		vcxl_host_sleep_ns(d->host, DOE_POLL_NS);
	}
}

/* PCIe r6 6.30.1: one request/response exchange. rsp gets up to rsp_cap
 * dwords (header included); *rsp_dw the object's length. */
static int doe_exchange(struct vcxl_cxl_dev *d, const uint32_t *req, unsigned req_dw, uint32_t *rsp,
			unsigned rsp_cap, unsigned *rsp_dw)
{
	uint32_t st, v;
	int rc = doe_wait(d, PCI_DOE_STATUS_BUSY, 0, &st);

	if (rc)
		goto abort;
	if (st & PCI_DOE_STATUS_DATA_READY) {
		doe_abort(d); /* a stale response from someone else */
		if ((rc = doe_wait(d, PCI_DOE_STATUS_BUSY | PCI_DOE_STATUS_DATA_READY, 0, &st)))
			goto abort;
	}
	for (unsigned i = 0; i < req_dw; i++)
		if ((rc = doe_wr(d, PCI_DOE_WRITE, req[i])))
			goto abort;
	if ((rc = doe_wr(d, PCI_DOE_CTRL, PCI_DOE_CTRL_GO)))
		goto abort;
	if ((rc = doe_wait(d, PCI_DOE_STATUS_DATA_READY, PCI_DOE_STATUS_DATA_READY, &st)))
		goto abort;
	unsigned len = 2;
	for (unsigned i = 0; i < len; i++) {
		if ((rc = doe_rd(d, PCI_DOE_READ, &v)) || (rc = doe_wr(d, PCI_DOE_READ, 0)))
			goto abort;
		if (i == 1) {
			len = VCXL_FIELD_GET(PCI_DOE_HDR2_LENGTH, v);
			if (len == 0)
				len = PCI_DOE_MAX_LENGTH_DW;
			if (len < 2 || len > rsp_cap) {
				rc = -EPROTO;
				goto abort;
			}
		}
		rsp[i] = v;
	}
	*rsp_dw = len;
	return 0;
abort:
	if (rc != -ENODEV)
		doe_abort(d);
	return rc;
}

/* PCIe r6 6.30.1.1: is (vendor, type) among the mailbox's protocols? */
static int doe_has_protocol(struct vcxl_cxl_dev *d, uint16_t vendor, uint8_t type)
{
	uint32_t rsp[3];
	unsigned idx = 0, n;

	for (unsigned iter = 0; iter < 64; iter++) {
		uint32_t req[3] = {
		    (uint32_t)VCXL_FIELD_PREP(PCI_DOE_HDR1_VENDOR, PCI_DOE_VENDOR_PCISIG) |
			(uint32_t)VCXL_FIELD_PREP(PCI_DOE_HDR1_TYPE, PCI_DOE_TYPE_DISCOVERY),
		    3,
		    (uint32_t)VCXL_FIELD_PREP(PCI_DOE_DISC_REQ_INDEX, idx),
		};
		int rc = doe_exchange(d, req, 3, rsp, 3, &n);
		if (rc)
			return rc;
		if (n < 3)
			return -EPROTO;
		if (VCXL_FIELD_GET(PCI_DOE_DISC_RSP_VENDOR, rsp[2]) == vendor &&
		    VCXL_FIELD_GET(PCI_DOE_DISC_RSP_PROTOCOL, rsp[2]) == type)
			return 0;
		idx = VCXL_FIELD_GET(PCI_DOE_DISC_RSP_NEXT, rsp[2]);
		if (idx == 0)
			return -EOPNOTSUPP;
	}
	return -ELOOP;
}

/* CXL r3.1 8.1.11: read the CDAT entry by entry (Table Access, Read Entry) */
int vcxl_host_read_cdat(struct vcxl_cxl_dev *d, uint8_t **cdat, size_t *len, char *err,
			size_t errlen)
{
	uint32_t *rsp = malloc(DOE_MAX_RSP_DW * 4);
	uint8_t *buf = NULL;
	size_t used = 0, want = 0;
	unsigned handle = 0, n;
	int rc;

	*cdat = NULL;
	*len = 0;
	if (!rsp)
		return host_err(err, errlen, -ENOMEM, "out of memory");
	rc = doe_has_protocol(d, CXL_VENDOR_ID, CXL_DOE_TYPE_TABLE_ACCESS);
	if (rc) {
		host_err(err, errlen, rc, "DOE has no CXL table access protocol (%d)", rc);
		goto out;
	}
	buf = malloc(CDAT_MAX_LEN);
	if (!buf) {
		rc = host_err(err, errlen, -ENOMEM, "out of memory");
		goto out;
	}
	for (unsigned e = 0; e < CDAT_MAX_ENTRIES; e++) {
		uint32_t req[3] = {
		    (uint32_t)VCXL_FIELD_PREP(PCI_DOE_HDR1_VENDOR, CXL_VENDOR_ID) |
			(uint32_t)VCXL_FIELD_PREP(PCI_DOE_HDR1_TYPE, CXL_DOE_TYPE_TABLE_ACCESS),
		    3,
		    (uint32_t)(VCXL_FIELD_PREP(CXL_DOE_TABLE_REQ_CODE, CXL_DOE_TABLE_READ_ENTRY) |
			       VCXL_FIELD_PREP(CXL_DOE_TABLE_TYPE, CXL_DOE_TABLE_TYPE_CDAT) |
			       VCXL_FIELD_PREP(CXL_DOE_TABLE_HANDLE, handle)),
		};
		rc = doe_exchange(d, req, 3, rsp, DOE_MAX_RSP_DW, &n);
		if (rc) {
			host_err(err, errlen, rc, "DOE exchange for CDAT entry %u failed (%d)",
				 handle, rc);
			goto out;
		}
		if (n < 3) {
			rc = host_err(err, errlen, -EPROTO, "short CDAT response");
			goto out;
		}
		size_t bytes = (size_t)(n - 3) * 4;
		if (used + bytes > CDAT_MAX_LEN) {
			rc = host_err(err, errlen, -EPROTO, "CDAT larger than 64 KiB");
			goto out;
		}
		memcpy(buf + used, &rsp[3], bytes);
		used += bytes;
		if (e == 0) {
			if (used < CDAT_HEADER_SIZE) {
				rc = host_err(err, errlen, -EPROTO, "CDAT header truncated");
				goto out;
			}
			want = (size_t)buf[0] | (size_t)buf[1] << 8 | (size_t)buf[2] << 16 |
			       (size_t)buf[3] << 24;
			if (want < CDAT_HEADER_SIZE || want > CDAT_MAX_LEN) {
				rc =
				    host_err(err, errlen, -EPROTO, "CDAT length %zu invalid", want);
				goto out;
			}
		}
		handle = VCXL_FIELD_GET(CXL_DOE_TABLE_HANDLE, rsp[2]);
		if (handle == CXL_DOE_TABLE_LAST_HANDLE)
			break;
	}
	if (handle != CXL_DOE_TABLE_LAST_HANDLE || used < want) {
		rc = host_err(err, errlen, -EPROTO, "CDAT incomplete (%zu of %zu bytes)", used,
			      want);
		goto out;
	}
	uint8_t sum = 0;
	for (size_t i = 0; i < want; i++)
		sum = (uint8_t)(sum + buf[i]);
	if (sum) {
		rc = host_err(err, errlen, -EPROTO, "CDAT checksum bad");
		goto out;
	}
	*cdat = buf;
	*len = want;
	buf = NULL;
	rc = 0;
out:
	free(buf);
	free(rsp);
	return rc;
}
