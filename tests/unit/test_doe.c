// SPDX-License-Identifier: BSD-3-Clause
/* DOE mailbox: Discovery, full CDAT read-out by handle, error paths, interrupt status. */
#include <errno.h>
#include <string.h>

#include "tap.h"
#include "cxl/cxl_spec.h"

#define D 0x200u

static struct vcxl_regfile rf;
static struct vcxl_doe doe;
static uint8_t cdat[1024];
static int cdat_len;

static uint32_t r32(uint32_t off)
{
	uint64_t v = 0;
	vcxl_rf_read(&rf, off, 4, &v);
	return (uint32_t)v;
}

static void w32(uint32_t off, uint32_t v)
{
	vcxl_rf_write(&rf, off, 4, v);
}

static uint32_t status(void)
{
	return r32(D + PCI_DOE_STATUS);
}

static void send(const uint32_t *dw, unsigned n)
{
	for (unsigned i = 0; i < n; i++)
		w32(D + PCI_DOE_WRITE, dw[i]);
	/* read-modify-write, keeping Interrupt Enable */
	w32(D + PCI_DOE_CTRL, r32(D + PCI_DOE_CTRL) | PCI_DOE_CTRL_GO);
}

/* Read a response object like Linux pci_doe: header first, then length-2 DWs. */
static int recv(uint32_t *out, unsigned max)
{
	unsigned n = 0, len;
	if (!(status() & PCI_DOE_STATUS_DATA_READY))
		return -1;
	out[n++] = r32(D + PCI_DOE_READ);
	w32(D + PCI_DOE_READ, 0);
	out[n++] = r32(D + PCI_DOE_READ);
	w32(D + PCI_DOE_READ, 0);
	len = out[1] & PCI_DOE_HDR2_LENGTH;
	while (n < len && n < max) {
		out[n++] = r32(D + PCI_DOE_READ);
		w32(D + PCI_DOE_READ, 0);
	}
	return (int)n;
}

static void setup(void)
{
	struct vcxl_cdat_range r[2] = {{0, 0x10000000, 0, CDAT_DSEMTS_EFI_RESERVED, 1, 2, 3, 4},
				       {0x10000000, 0x10000000, 0, 0, 5, 6, 7, 8}};
	cdat_len = vcxl_cdat_build(cdat, sizeof(cdat), r, 2);
	vcxl_rf_init(&rf, 0x1000);
	ok(vcxl_doe_layout(&doe, &rf, D, 0x300, cdat, (size_t)cdat_len) == 0, "DOE layout");
}

static void test_discovery(void)
{
	uint32_t rsp[8];
	is(r32(D), 0x3001002e, "ext cap header: DOE, version 1, next 0x300");
	uint32_t q0[] = {0x00000001, 3, 0};
	send(q0, 3);
	ok(status() & PCI_DOE_STATUS_DATA_READY, "Data Object Ready after Go");
	is(recv(rsp, 8), 3, "discovery response 3 DW");
	ok(rsp[0] == 0x00000001 && rsp[1] == 3, "response header: PCI-SIG discovery, length 3");
	is(rsp[2], 0x01000001, "index 0: discovery itself (vendor 1 type 0), next 1");
	ok(!(status() & PCI_DOE_STATUS_DATA_READY), "consuming the last DW clears Ready");
	uint32_t q1[] = {0x00000001, 3, 1};
	send(q1, 3);
	recv(rsp, 8);
	is(rsp[2], 0x00021e98, "index 1: CXL table access (0x1e98 type 2), next 0 = last");
	uint32_t q2[] = {0x00000001, 3, 2};
	send(q2, 3);
	ok(status() & PCI_DOE_STATUS_ERROR, "index past the end: Error");
	w32(D + PCI_DOE_CTRL, PCI_DOE_CTRL_ABORT);
	ok(!(status() & PCI_DOE_STATUS_ERROR), "Abort clears Error");
	is(r32(D + PCI_DOE_CTRL), 0, "Abort and Go read 0");
}

static void test_cdat_readout(void)
{
	uint8_t table[1024];
	size_t got = 0;
	uint32_t rsp[300];
	unsigned handle = 0, entries = 0;
	int bad = 0;
	do {
		uint32_t q[] = {0x00021e98, 3, (uint32_t)handle << 16};
		send(q, 3);
		int n = recv(rsp, 300);
		if (n < 3 || (rsp[2] & 0xffff) != 0) {
			bad++;
			break;
		}
		size_t bytes = (size_t)(n - 3) * 4;
		if (got + bytes > sizeof(table)) {
			bad++;
			break;
		}
		memcpy(table + got, &rsp[3], bytes);
		got += bytes;
		handle = rsp[2] >> 16;
		entries++;
	} while (handle != CXL_DOE_TABLE_LAST_HANDLE && entries < 100);
	is(bad, 0, "every read-entry response well formed");
	is(entries, 1 + 2 * 6, "header + 12 structures, read by handle until 0xFFFF");
	is(got, (uint64_t)cdat_len, "assembled table has the header's length");
	ok(memcmp(table, cdat, got) == 0, "assembled table equals the built CDAT");
	uint8_t sum = 0;
	for (size_t i = 0; i < got; i++)
		sum = (uint8_t)(sum + table[i]);
	is(sum, 0, "checksum of the read-out table");
	is((uint32_t)(table[0] | table[1] << 8), (uint32_t)cdat_len, "header length field");
	is(doe.objects >= entries, 1, "objects counted");
}

static void test_errors(void)
{
	uint32_t rsp[8];
	uint32_t mism[] = {0x00000001, 4, 0};
	send(mism, 3);
	ok(status() & PCI_DOE_STATUS_ERROR, "length field != DWs written: Error");
	uint32_t q0[] = {0x00000001, 3, 0};
	send(q0, 3);
	ok(!(status() & PCI_DOE_STATUS_DATA_READY), "while Error: requests ignored");
	w32(D + PCI_DOE_CTRL, PCI_DOE_CTRL_ABORT);
	uint32_t unk[] = {0x00051234, 3, 0};
	send(unk, 3);
	ok(status() & PCI_DOE_STATUS_ERROR, "unknown protocol: Error");
	w32(D + PCI_DOE_CTRL, PCI_DOE_CTRL_ABORT);
	for (unsigned i = 0; i < 5000; i++)
		w32(D + PCI_DOE_WRITE, i == 1 ? 5000 : 0x00000001);
	w32(D + PCI_DOE_CTRL, PCI_DOE_CTRL_GO);
	ok(status() & PCI_DOE_STATUS_ERROR, "overlong object (5000 DW): Error, no overflow");
	w32(D + PCI_DOE_CTRL, PCI_DOE_CTRL_ABORT);
	uint32_t zero[] = {0x00000001, 0, 0};
	send(zero, 3);
	ok(status() & PCI_DOE_STATUS_ERROR, "length 0 means 2^18 DW: mismatch, Error");
	w32(D + PCI_DOE_CTRL, PCI_DOE_CTRL_ABORT);
	w32(D + PCI_DOE_CTRL, PCI_DOE_CTRL_GO);
	ok(status() & PCI_DOE_STATUS_ERROR, "Go with no object: Error");
	w32(D + PCI_DOE_CTRL, PCI_DOE_CTRL_ABORT);
	uint32_t badtype[] = {0x00021e98, 3, 0x0100};
	send(badtype, 3);
	ok(status() & PCI_DOE_STATUS_ERROR, "table type 1 (not CDAT): Error");
	w32(D + PCI_DOE_CTRL, PCI_DOE_CTRL_ABORT);
	uint32_t badcode[] = {0x00021e98, 3, 0x0001};
	send(badcode, 3);
	ok(status() & PCI_DOE_STATUS_ERROR, "request code 1: Error");
	w32(D + PCI_DOE_CTRL, PCI_DOE_CTRL_ABORT);
	uint32_t badhandle[] = {0x00021e98, 3, 500u << 16};
	send(badhandle, 3);
	ok(status() & PCI_DOE_STATUS_ERROR, "unknown handle: Error");
	w32(D + PCI_DOE_CTRL, PCI_DOE_CTRL_ABORT);
	uint32_t longdisc[] = {0x00000001, 4, 0, 0};
	send(longdisc, 4);
	ok(status() & PCI_DOE_STATUS_ERROR, "discovery with 4 DW: Error");
	w32(D + PCI_DOE_CTRL, PCI_DOE_CTRL_ABORT);
	is(r32(D + PCI_DOE_READ), 0, "read mailbox reads 0 with no response");
	w32(D + PCI_DOE_READ, 0);
	ok(status() & PCI_DOE_STATUS_ERROR, "advancing with no response: Error");
	w32(D + PCI_DOE_CTRL, PCI_DOE_CTRL_ABORT);
	uint64_t v;
	ok(vcxl_rf_write(&rf, D + PCI_DOE_WRITE, 2, 1) == -EINVAL, "word write to mailbox refused");
	ok(vcxl_rf_read(&rf, D + PCI_DOE_READ, 1, &v) == -EINVAL, "byte read of mailbox refused");
	/* abort in the middle of a response */
	send(q0, 3);
	r32(D + PCI_DOE_READ);
	w32(D + PCI_DOE_READ, 0);
	w32(D + PCI_DOE_CTRL, PCI_DOE_CTRL_ABORT);
	ok(!(status() & (PCI_DOE_STATUS_DATA_READY | PCI_DOE_STATUS_ERROR)),
	   "Abort drops a half-read response");
	send(q0, 3);
	ok(recv(rsp, 8) == 3 && rsp[2] == 0x01000001, "mailbox works after abort");
	/* garbage: random writes to the DOE registers never break it */
	uint64_t s = 99;
	for (int i = 0; i < 20000; i++) {
		s ^= s << 13, s ^= s >> 7, s ^= s << 17;
		uint32_t reg = (uint32_t)(s % 6) * 4;
		w32(D + reg, (uint32_t)(s >> 20));
	}
	w32(D + PCI_DOE_CTRL, PCI_DOE_CTRL_ABORT);
	send(q0, 3);
	ok(recv(rsp, 8) == 3 && rsp[2] == 0x01000001, "mailbox works after 20000 random writes");
	vcxl_doe_reset(&doe);
	ok(status() == 0 && doe.req_len == 0, "reset: idle");
	is(r32(D + PCI_DOE_CAP), 0, "capabilities: no interrupt support");
}

static void test_int_status(void)
{
	uint32_t rsp[8];
	w32(D + PCI_DOE_CTRL, PCI_DOE_CTRL_INT_EN);
	is(r32(D + PCI_DOE_CTRL), PCI_DOE_CTRL_INT_EN, "Interrupt Enable RW");
	uint32_t q0[] = {0x00000001, 3, 0};
	send(q0, 3);
	ok(status() & PCI_DOE_STATUS_INT_STATUS, "Interrupt Status set with a response");
	is(r32(D + PCI_DOE_CTRL), PCI_DOE_CTRL_INT_EN, "Go did not clear Interrupt Enable");
	recv(rsp, 8);
	w32(D + PCI_DOE_STATUS, PCI_DOE_STATUS_INT_STATUS);
	ok(!(status() & PCI_DOE_STATUS_INT_STATUS), "Interrupt Status RW1C");
	w32(D + PCI_DOE_STATUS, 0xffffffff);
	is(status(), 0, "Status: Busy/Error/Ready not writable, reserved 0");
}

int main(void)
{
	setup();
	test_discovery();
	test_cdat_readout();
	test_errors();
	test_int_status();
	vcxl_rf_fini(&rf);
	struct vcxl_regfile r2;
	struct vcxl_doe d2;
	vcxl_rf_init(&r2, 0x100);
	ok(vcxl_doe_layout(&d2, &r2, 0x80, 0, NULL, 0) == -EINVAL, "DOE below 0x100 refused");
	vcxl_rf_fini(&r2);
	return done();
}
