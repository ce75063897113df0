// SPDX-License-Identifier: BSD-3-Clause
/* CXL memory device register block and mailbox (spec layer): layout and attributes, doorbell,
 * return codes and their names, background status, the background completion interrupt,
 * the capability array lookup, every command's payload, bad lengths, unknown opcodes, reset,
 * and a random command storm. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "tap.h"
#include "cxl/cxl_mbox.h"

#define SHIFT	   11
#define PAYLOAD	   (1u << SHIFT)
#define MB(reg)	   (VCXL_MDEV_MBOX_OFF + (reg))
#define MEMDEV_CAP 0x40000000ull /* 1 GiB */
#define LSA_SIZE   512
#define MSGNUM	   2

static struct vcxl_regfile rf;
static struct vcxl_memdev md;
static uint8_t lsa[LSA_SIZE];
static uint64_t fake_ns = 5000;
static const uint8_t cel_uuid[CXL_UUID_SIZE] = CXL_CEL_UUID;

static uint64_t clk(void *opaque)
{
	return fake_ns;
}

static const struct vcxl_memdev_ops ops = {.now_ns = clk};

static struct vcxl_memdev_facts facts(uint32_t lsa_size)
{
	struct vcxl_memdev_facts f = {
	    .fw_revision = "test-fw 1.2",
	    .volatile_bytes = MEMDEV_CAP,
	    .lsa_size = lsa_size,
	    .lsa = lsa_size ? lsa : NULL,
	    .poison_max = 0x123456,
	    .event_log_size = 17,
	    .event_msgnum = MSGNUM,
	    .temperature_c = -5,
	};
	return f;
}

static void setup(uint32_t lsa_size)
{
	vcxl_memdev_fini(&md);
	vcxl_rf_fini(&rf);
	struct vcxl_memdev_facts f = facts(lsa_size);
	if (vcxl_rf_init(&rf, vcxl_memdev_block_size(SHIFT)) ||
	    vcxl_memdev_layout(&md, &rf, 0, SHIFT, &f, &ops, NULL)) {
		diag("layout failed");
		exit(1);
	}
}

static uint64_t r64(uint32_t off)
{
	uint64_t v = 0;
	return vcxl_rf_read(&rf, off, 8, &v) ? 0xbadbadbadull : v;
}

static uint32_t r32(uint32_t off)
{
	uint64_t v = 0;
	return vcxl_rf_read(&rf, off, 4, &v) ? 0xbadbad : (uint32_t)v;
}

static void w64(uint32_t off, uint64_t v)
{
	vcxl_rf_write(&rf, off, 8, v);
}

static void w32(uint32_t off, uint32_t v)
{
	vcxl_rf_write(&rf, off, 4, v);
}

static uint64_t le(const uint8_t *p, unsigned n)
{
	uint64_t v = 0;
	for (unsigned i = 0; i < n; i++)
		v |= (uint64_t)p[i] << (8 * i);
	return v;
}

static void put(uint8_t *p, unsigned n, uint64_t v)
{
	for (unsigned i = 0; i < n; i++)
		p[i] = (uint8_t)(v >> (8 * i));
}

static bool byte_writes; /* write the payload one byte at a time (memcpy_toio) */
static bool doorbell_was_busy;
static uint32_t ctrl_bits; /* Mailbox Control bits kept when ringing the doorbell */

/* CXL r3.1 8.2.8.4.4, in the order Linux's __cxl_pci_mbox_send_cmd uses; the length
 * written to the Command register may differ from the bytes supplied (bad-length tests). */
static uint16_t send_raw(uint16_t op, const void *in, size_t in_bytes, uint64_t len_field,
			 void *out, size_t out_cap, size_t *out_len)
{
	uint8_t zero[8] = {0};
	if (r32(MB(CXLDEV_MBOX_CTRL)) & CXLDEV_MBOX_CTRL_DOORBELL)
		doorbell_was_busy = true;
	w64(MB(CXLDEV_MBOX_CMD), op | VCXL_FIELD_PREP(CXLDEV_MBOX_CMD_PAYLOAD_LEN, len_field));
	if (byte_writes) {
		for (size_t i = 0; i < in_bytes; i++)
			vcxl_rf_write(&rf, MB(CXLDEV_MBOX_PAYLOAD) + (uint32_t)i, 1,
				      ((const uint8_t *)in)[i]);
	} else if (in_bytes) {
		vcxl_rf_write_buf(&rf, MB(CXLDEV_MBOX_PAYLOAD), in ? in : zero, in_bytes);
	}
	w32(MB(CXLDEV_MBOX_CTRL), ctrl_bits | CXLDEV_MBOX_CTRL_DOORBELL);
	if (r32(MB(CXLDEV_MBOX_CTRL)) & CXLDEV_MBOX_CTRL_DOORBELL)
		doorbell_was_busy = true;
	uint16_t rc = (uint16_t)VCXL_FIELD_GET(CXLDEV_MBOX_STATUS_RC, r64(MB(CXLDEV_MBOX_STATUS)));
	size_t n = (size_t)VCXL_FIELD_GET(CXLDEV_MBOX_CMD_PAYLOAD_LEN, r64(MB(CXLDEV_MBOX_CMD)));
	if (out_len)
		*out_len = n;
	if (out && n)
		vcxl_rf_read_buf(&rf, MB(CXLDEV_MBOX_PAYLOAD), out, n < out_cap ? n : out_cap);
	return rc;
}

static uint8_t out[PAYLOAD];
static size_t olen;

static uint16_t send(uint16_t op, const void *in, size_t in_len)
{
	memset(out, 0xa5, sizeof(out));
	return send_raw(op, in, in_len, in_len, out, sizeof(out), &olen);
}

/* ---- layout --------------------------------------------------------------- */

static void test_layout(void)
{
	uint64_t arr = r64(0);
	static const uint16_t ids[] = {CXLDEV_CAP_ID_DEVICE_STATUS, CXLDEV_CAP_ID_PRIMARY_MBOX,
				       CXLDEV_CAP_ID_MEMDEV};
	static const uint32_t offs[] = {VCXL_MDEV_STATUS_OFF, VCXL_MDEV_MBOX_OFF,
					VCXL_MDEV_MEMDEV_OFF};
	uint32_t lens[] = {8, CXLDEV_MBOX_PAYLOAD + PAYLOAD, 8};

	is(VCXL_FIELD_GET(CXLDEV_CAP_ARRAY_ID, arr), CXLDEV_CAP_ARRAY_CAP_ID, "cap array id 0");
	is(VCXL_FIELD_GET(CXLDEV_CAP_ARRAY_COUNT, arr), 3, "three capabilities");
	is(VCXL_FIELD_GET(CXLDEV_CAP_ARRAY_VERSION, arr), 1, "cap array version 1");
	is(VCXL_FIELD_GET(CXLDEV_CAP_ARRAY_TYPE, arr), CXLDEV_CAP_ARRAY_TYPE_MEMDEV,
	   "cap array type: memory device");
	for (unsigned i = 0; i < 3; i++) {
		uint32_t h = CXLDEV_CAP_HDR_FIRST + i * CXLDEV_CAP_HDR_STRIDE;
		is(VCXL_FIELD_GET(CXLDEV_CAP_HDR_ID, r32(h)), ids[i], "cap %u id", i);
		is(r32(h + CXLDEV_CAP_HDR_OFFSET), offs[i], "cap %u offset", i);
		is(r32(h + CXLDEV_CAP_HDR_LENGTH), lens[i], "cap %u length", i);
		ok(offs[i] + lens[i] <= rf.size, "cap %u lies inside the block", i);
	}
	/* RO: software writes are ignored */
	w64(0, ~0ull);
	w32(CXLDEV_CAP_HDR_FIRST + CXLDEV_CAP_HDR_OFFSET, 0x1234);
	is(r64(0), arr, "cap array register is RO");
	is(r32(CXLDEV_CAP_HDR_FIRST + CXLDEV_CAP_HDR_OFFSET), VCXL_MDEV_STATUS_OFF,
	   "cap header is RO");
	is(r64(VCXL_MDEV_STATUS_OFF + CXLDEV_EVENT_STATUS), 0, "event status: no events");
	w64(VCXL_MDEV_STATUS_OFF, ~0ull);
	is(r64(VCXL_MDEV_STATUS_OFF), 0, "event status is RO");
	uint64_t ms = r64(VCXL_MDEV_MEMDEV_OFF + CXLMDEV_STATUS);
	is(VCXL_FIELD_GET(CXLMDEV_STATUS_MEDIA, ms), CXLMDEV_MEDIA_READY, "media ready");
	ok(ms & CXLMDEV_STATUS_MBOX_READY, "mailbox interface ready");
	ok(!(ms & (CXLMDEV_STATUS_FATAL | CXLMDEV_STATUS_FW_HALT)), "not fatal, no fw halt");
	w64(VCXL_MDEV_MEMDEV_OFF, 0);
	is(r64(VCXL_MDEV_MEMDEV_OFF), ms, "memdev status is RO");
	vcxl_memdev_set_media(&md, CXLMDEV_MEDIA_DISABLED);
	vcxl_memdev_set_mbox_ready(&md, false);
	ms = r64(VCXL_MDEV_MEMDEV_OFF);
	ok(VCXL_FIELD_GET(CXLMDEV_STATUS_MEDIA, ms) == CXLMDEV_MEDIA_DISABLED &&
	       !(ms & CXLMDEV_STATUS_MBOX_READY),
	   "owner updates media status and mailbox ready");
	vcxl_memdev_set_media(&md, CXLMDEV_MEDIA_READY);
	vcxl_memdev_set_mbox_ready(&md, true);
	uint32_t caps = r32(MB(CXLDEV_MBOX_CAPS));
	is(VCXL_FIELD_GET(CXLDEV_MBOX_CAP_PAYLOAD_SIZE, caps), SHIFT, "payload size 2^11");
	ok(!(caps & (CXLDEV_MBOX_CAP_BG_CMD_IRQ | CXLDEV_MBOX_CAP_DB_IRQ)),
	   "no mailbox interrupts advertised");
	w32(MB(CXLDEV_MBOX_CAPS), 0);
	is(r32(MB(CXLDEV_MBOX_CAPS)), caps, "mailbox capabilities RO");
	is(vcxl_memdev_block_size(8), 0x1000, "block size, 256 B payload");
	is(vcxl_memdev_block_size(11), 0x1000, "block size, 2 KiB payload");
	is(vcxl_memdev_block_size(12), 0x2000, "block size, 4 KiB payload");
	is(vcxl_memdev_block_size(20), 0x101000, "block size, 1 MiB payload");
}

static void test_layout_errors(void)
{
	struct vcxl_regfile r2 = {0};
	struct vcxl_memdev d2 = {0};
	struct vcxl_memdev_facts f = facts(0);

	vcxl_rf_init(&r2, 0x2000);
	is(vcxl_memdev_layout(&d2, &r2, 0, 7, &f, NULL, NULL), -EINVAL, "payload 2^7 refused");
	is(vcxl_memdev_layout(&d2, &r2, 0, 21, &f, NULL, NULL), -EINVAL, "payload 2^21 refused");
	is(vcxl_memdev_layout(&d2, &r2, 4, 8, &f, NULL, NULL), -EINVAL, "misaligned base refused");
	is(vcxl_memdev_layout(&d2, &r2, 0, 12, &f, NULL, NULL), 0, "2 x 4 KiB block fits");
	vcxl_memdev_fini(&d2);
	is(vcxl_memdev_layout(&d2, &r2, 0x1000, 12, &f, NULL, NULL), -EINVAL,
	   "block beyond the file refused");
	f.lsa_size = 16;
	is(vcxl_memdev_layout(&d2, &r2, 0, 8, &f, NULL, NULL), -EINVAL, "LSA size without LSA");
	f = facts(0);
	f.volatile_bytes = 0x1000;
	is(vcxl_memdev_layout(&d2, &r2, 0, 8, &f, NULL, NULL), -EINVAL,
	   "capacity not 256 MiB granular");
	vcxl_memdev_fini(&d2);
	vcxl_rf_fini(&r2);
}

/* ---- doorbell and registers ---------------------------------------------------- */

static void test_doorbell(void)
{
	uint64_t n = md.commands;

	doorbell_was_busy = false;
	is(send(CXL_MBOX_OP_IDENTIFY, NULL, 0), CXL_MBOX_RC_SUCCESS, "identify succeeds");
	ok(!doorbell_was_busy, "doorbell clear before and after a command");
	is(md.commands, n + 1, "one doorbell, one command");
	w32(MB(CXLDEV_MBOX_CTRL), 0);
	is(md.commands, n + 1, "writing 0 to Control runs nothing");
	w32(MB(CXLDEV_MBOX_CTRL), ~0u & ~CXLDEV_MBOX_CTRL_DOORBELL);
	is(r32(MB(CXLDEV_MBOX_CTRL)), 0, "Control reserved/interrupt bits read 0");
	is(md.commands, n + 1, "no command without the doorbell bit");
	w64(MB(CXLDEV_MBOX_CMD), ~0ull);
	is(r64(MB(CXLDEV_MBOX_CMD)), CXLDEV_MBOX_CMD_OPCODE | CXLDEV_MBOX_CMD_PAYLOAD_LEN,
	   "Command register: opcode and length RW, rest reserved");
	uint64_t st = r64(MB(CXLDEV_MBOX_STATUS));
	w64(MB(CXLDEV_MBOX_STATUS), ~0ull);
	w64(MB(CXLDEV_MBOX_BG_STATUS), ~0ull);
	is(r64(MB(CXLDEV_MBOX_STATUS)), st, "Status register RO");
	is(r64(MB(CXLDEV_MBOX_BG_STATUS)), 0, "Background Command Status RO, idle");
	/* the Command register after completion: same opcode, output length */
	send(CXL_MBOX_OP_GET_HEALTH_INFO, NULL, 0);
	uint64_t cmd = r64(MB(CXLDEV_MBOX_CMD));
	ok(VCXL_FIELD_GET(CXLDEV_MBOX_CMD_OPCODE, cmd) == CXL_MBOX_OP_GET_HEALTH_INFO &&
	       VCXL_FIELD_GET(CXLDEV_MBOX_CMD_PAYLOAD_LEN, cmd) == CXL_HEALTH_INFO_SIZE,
	   "Command register holds opcode and output length");
	/* byte-wise payload writes (memcpy_toio) work like dword writes */
	uint8_t ts[8];
	put(ts, 8, 0x1122334455667788ull);
	byte_writes = true;
	is(send(CXL_MBOX_OP_SET_TIMESTAMP, ts, 8), CXL_MBOX_RC_SUCCESS, "byte-wise payload write");
	byte_writes = false;
	send(CXL_MBOX_OP_GET_TIMESTAMP, NULL, 0);
	is(le(out, 8), 0x1122334455667788ull, "byte-wise input arrived");
	md.ts_valid = false;
}

static void test_unknown(void)
{
	static const uint16_t ops_[] = {0x0000,
					0xffff,
					CXL_MBOX_OP_SET_PARTITION_INFO,
					CXL_MBOX_OP_SANITIZE,
					CXL_MBOX_OP_TRANSFER_FW,
					CXL_MBOX_OP_ACTIVATE_FW,
					CXL_MBOX_OP_INJECT_POISON,
					CXL_MBOX_OP_SET_ALERT_CONFIG,
					0x4500,
					0x0500};
	for (unsigned i = 0; i < sizeof(ops_) / sizeof(ops_[0]); i++) {
		uint16_t rc = send(ops_[i], "abcdefgh", 8);
		ok(rc == CXL_MBOX_RC_UNSUPPORTED && olen == 0,
		   "opcode 0x%04x: Unsupported, no output", ops_[i]);
	}
	is(strcmp(vcxl_mbox_opcode_name(0x7777), "unknown"), 0, "name of an unknown opcode");
	is(strcmp(vcxl_mbox_opcode_name(CXL_MBOX_OP_IDENTIFY), "Identify Memory Device"), 0,
	   "name of Identify");
}

/* Every command with a fixed input length: exact, one more, one less, too long for the
 * payload registers. The expected lengths come from the spec, not the implementation. */
static void test_lengths(void)
{
	static const struct {
		uint16_t op;
		uint32_t in, out;
	} t[] = {
	    {CXL_MBOX_OP_GET_EVENT_RECORDS, 1, CXL_GET_EVENTS_HDR_SIZE},
	    {CXL_MBOX_OP_GET_EVT_INT_POLICY, 0, 5},
	    {CXL_MBOX_OP_GET_FW_INFO, 0, 0x50},
	    {CXL_MBOX_OP_GET_TIMESTAMP, 0, 8},
	    {CXL_MBOX_OP_SET_TIMESTAMP, 8, 0},
	    {CXL_MBOX_OP_GET_SUPPORTED_LOGS, 0, 28},
	    {CXL_MBOX_OP_IDENTIFY, 0, 0x45},
	    {CXL_MBOX_OP_GET_PARTITION_INFO, 0, 0x20},
	    {CXL_MBOX_OP_GET_LSA, 8, 0},
	    {CXL_MBOX_OP_GET_HEALTH_INFO, 0, 0x12},
	    {CXL_MBOX_OP_GET_ALERT_CONFIG, 0, 0x10},
	    {CXL_MBOX_OP_GET_POISON, 0x10, 0x20},
	    {CXL_MBOX_OP_GET_SCAN_MEDIA_CAPS, 0x10, 4},
	};
	uint8_t in[64] = {0};

	put(in + 8, 8, 1); /* a 64-byte DPA range for the poison/scan commands */
	for (unsigned i = 0; i < sizeof(t) / sizeof(t[0]); i++) {
		uint16_t op = t[i].op;
		uint16_t rc = send(op, in, t[i].in);
		ok(rc == CXL_MBOX_RC_SUCCESS && olen == t[i].out, "0x%04x exact length: %u out", op,
		   t[i].out);
		rc = send(op, in, t[i].in + 1);
		ok(rc == CXL_MBOX_RC_INVALID_PAYLOAD_LEN && olen == 0,
		   "0x%04x one byte too many: Invalid Payload Length", op);
		if (t[i].in) {
			rc = send(op, in, t[i].in - 1);
			is(rc, CXL_MBOX_RC_INVALID_PAYLOAD_LEN, "0x%04x one byte short", op);
		}
		rc = send_raw(op, NULL, 0, PAYLOAD + 1, out, sizeof(out), &olen);
		ok(rc == CXL_MBOX_RC_INVALID_PAYLOAD_LEN && olen == 0,
		   "0x%04x length beyond the payload registers", op);
	}
	uint16_t rc =
	    send_raw(CXL_MBOX_OP_SET_LSA, NULL, 0, VCXL_GENMASK(20, 0), out, sizeof(out), &olen);
	is(rc, CXL_MBOX_RC_INVALID_PAYLOAD_LEN, "Set LSA with the largest length field");
	rc = send(CXL_MBOX_OP_GET_LOG, in, CXL_GET_LOG_IN_SIZE - 1);
	is(rc, CXL_MBOX_RC_INVALID_PAYLOAD_LEN, "Get Log short input");
	rc = send(CXL_MBOX_OP_SCAN_MEDIA, in, CXL_SCAN_MEDIA_IN_SIZE + 1);
	is(rc, CXL_MBOX_RC_INVALID_PAYLOAD_LEN, "Scan Media long input");
	rc = send(CXL_MBOX_OP_SET_EVT_INT_POLICY, in, 3);
	is(rc, CXL_MBOX_RC_INVALID_PAYLOAD_LEN, "Set Event Interrupt Policy with 3 bytes");
	rc = send(CXL_MBOX_OP_SET_EVT_INT_POLICY, in, 6);
	is(rc, CXL_MBOX_RC_INVALID_PAYLOAD_LEN, "Set Event Interrupt Policy with 6 bytes");
	rc = send(CXL_MBOX_OP_CLEAR_EVENT_RECORDS, in, 5);
	is(rc, CXL_MBOX_RC_INVALID_PAYLOAD_LEN, "Clear Event Records header short");
	/* direct dispatch with a length beyond the payload size */
	struct vcxl_mbox_cmd c = {.opcode = CXL_MBOX_OP_IDENTIFY,
				  .in = in,
				  .in_len = PAYLOAD + 8,
				  .out = out,
				  .out_cap = PAYLOAD};
	is(vcxl_mbox_execute(&md, &c), CXL_MBOX_RC_INVALID_PAYLOAD_LEN, "execute: length checked");
}

/* ---- command payloads ------------------------------------------------------------ */

static void test_identify(void)
{
	is(send(CXL_MBOX_OP_IDENTIFY, NULL, 0), CXL_MBOX_RC_SUCCESS, "identify");
	ok(olen >= CXL_IDENTIFY_SIZE_V2, "identify output covers Linux's 0x43 bytes");
	is(memcmp(out, "test-fw 1.2", 11), 0, "firmware revision");
	is(le(out + CXL_IDENTIFY_TOTAL_CAP, 8), 4, "total capacity 4 x 256 MiB");
	is(le(out + CXL_IDENTIFY_VOLATILE_CAP, 8), 4, "volatile capacity = all");
	is(le(out + CXL_IDENTIFY_PERSISTENT_CAP, 8), 0, "no persistent capacity");
	is(le(out + CXL_IDENTIFY_PARTITION_ALIGN, 8), 0, "not partitionable");
	for (unsigned l = 0; l < 4; l++)
		is(le(out + CXL_IDENTIFY_INFO_LOG_SIZE + 2 * l, 2), 17, "event log %u size", l);
	is(le(out + CXL_IDENTIFY_LSA_SIZE, 4), LSA_SIZE, "LSA size");
	is(le(out + CXL_IDENTIFY_POISON_MAX, 3), 0x123456, "poison list max (24 bits)");
	is(le(out + CXL_IDENTIFY_INJECT_LIMIT, 2), 0, "no poison injection");
	is(out[CXL_IDENTIFY_POISON_CAPS] | out[CXL_IDENTIFY_QOS_CAPS], 0, "no poison/QoS caps");
	is(le(out + CXL_IDENTIFY_DC_LOG_SIZE, 2), 0, "no dynamic capacity log");
}

static void test_logs(void)
{
	uint8_t in[CXL_GET_LOG_IN_SIZE];
	uint8_t cel[256];
	unsigned n = vcxl_mbox_cel_count(&md);

	is(send(CXL_MBOX_OP_GET_SUPPORTED_LOGS, NULL, 0), CXL_MBOX_RC_SUCCESS,
	   "get supported logs");
	is(le(out, 2), 1, "one log");
	is(memcmp(out + CXL_GSL_HDR_SIZE, cel_uuid, 16), 0, "it is the CEL");
	uint32_t size = (uint32_t)le(out + CXL_GSL_HDR_SIZE + 16, 4);
	is(size, n * CXL_CEL_ENTRY_SIZE, "CEL size = 4 bytes per command");
	ok(size <= sizeof(cel), "CEL fits");

	memcpy(in, cel_uuid, 16);
	put(in + CXL_GET_LOG_IN_OFFSET, 4, 0);
	put(in + CXL_GET_LOG_IN_LENGTH, 4, size);
	is(send(CXL_MBOX_OP_GET_LOG, in, sizeof(in)), CXL_MBOX_RC_SUCCESS, "get the whole CEL");
	is(olen, size, "CEL length");
	memcpy(cel, out, size);
	/* chunked reads (as cxl_xfer_log with a small payload) give the same bytes */
	bool same = true;
	for (uint32_t o = 0; o < size; o += 6) {
		uint32_t l = size - o < 6 ? size - o : 6;
		put(in + CXL_GET_LOG_IN_OFFSET, 4, o);
		put(in + CXL_GET_LOG_IN_LENGTH, 4, l);
		same &= send(CXL_MBOX_OP_GET_LOG, in, sizeof(in)) == 0 && olen == l &&
			!memcmp(out, cel + o, l);
	}
	ok(same, "CEL read in 6-byte chunks matches");
	static const uint16_t want[] = {CXL_MBOX_OP_GET_EVENT_RECORDS,
					CXL_MBOX_OP_CLEAR_EVENT_RECORDS,
					CXL_MBOX_OP_GET_EVT_INT_POLICY,
					CXL_MBOX_OP_SET_EVT_INT_POLICY,
					CXL_MBOX_OP_GET_FW_INFO,
					CXL_MBOX_OP_GET_TIMESTAMP,
					CXL_MBOX_OP_SET_TIMESTAMP,
					CXL_MBOX_OP_GET_SUPPORTED_LOGS,
					CXL_MBOX_OP_GET_LOG,
					CXL_MBOX_OP_IDENTIFY,
					CXL_MBOX_OP_GET_PARTITION_INFO,
					CXL_MBOX_OP_GET_LSA,
					CXL_MBOX_OP_SET_LSA,
					CXL_MBOX_OP_GET_HEALTH_INFO,
					CXL_MBOX_OP_GET_ALERT_CONFIG,
					CXL_MBOX_OP_GET_POISON,
					CXL_MBOX_OP_GET_SCAN_MEDIA_CAPS,
					CXL_MBOX_OP_SCAN_MEDIA,
					CXL_MBOX_OP_GET_SCAN_MEDIA};
	is(n, sizeof(want) / sizeof(want[0]), "CEL lists every supported command");
	for (unsigned w = 0; w < sizeof(want) / sizeof(want[0]); w++) {
		unsigned hits = 0;
		uint16_t eff = 0;
		for (unsigned e = 0; e < n; e++)
			if (le(cel + 4 * e, 2) == want[w]) {
				hits++;
				eff = (uint16_t)le(cel + 4 * e + 2, 2);
			}
		ok(hits == 1, "CEL lists 0x%04x once", want[w]);
		if (want[w] == CXL_MBOX_OP_SCAN_MEDIA)
			ok(eff & CXL_CEL_EFFECT_BACKGROUND, "Scan Media: background effect");
		if (want[w] == CXL_MBOX_OP_IDENTIFY)
			is(eff, 0, "Identify has no effects");
		if (want[w] == CXL_MBOX_OP_SET_LSA)
			ok(eff & CXL_CEL_EFFECT_IMM_DATA, "Set LSA: immediate data change");
	}
	/* errors */
	put(in + CXL_GET_LOG_IN_OFFSET, 4, 4);
	put(in + CXL_GET_LOG_IN_LENGTH, 4, size);
	is(send(CXL_MBOX_OP_GET_LOG, in, sizeof(in)), CXL_MBOX_RC_INVALID_INPUT,
	   "get log past the end");
	put(in + CXL_GET_LOG_IN_OFFSET, 4, 0xffffffff);
	put(in + CXL_GET_LOG_IN_LENGTH, 4, 8);
	is(send(CXL_MBOX_OP_GET_LOG, in, sizeof(in)), CXL_MBOX_RC_INVALID_INPUT,
	   "get log offset 0xffffffff");
	put(in + CXL_GET_LOG_IN_OFFSET, 4, 0);
	put(in + CXL_GET_LOG_IN_LENGTH, 4, PAYLOAD + 4);
	is(send(CXL_MBOX_OP_GET_LOG, in, sizeof(in)), CXL_MBOX_RC_INVALID_INPUT,
	   "get log longer than the payload");
	put(in + CXL_GET_LOG_IN_LENGTH, 4, 0);
	ok(send(CXL_MBOX_OP_GET_LOG, in, sizeof(in)) == 0 && olen == 0, "get log of 0 bytes");
	in[3] ^= 1;
	put(in + CXL_GET_LOG_IN_LENGTH, 4, 4);
	is(send(CXL_MBOX_OP_GET_LOG, in, sizeof(in)), CXL_MBOX_RC_INVALID_LOG,
	   "get log of an unknown UUID");
	uint16_t op, eff;
	is(vcxl_mbox_cel_entry(&md, n, &op, &eff), -ENOENT, "CEL entry past the end");
}

static void test_partition_fw_health(void)
{
	is(send(CXL_MBOX_OP_GET_PARTITION_INFO, NULL, 0), 0, "get partition info");
	ok(le(out, 8) == 4 && le(out + 8, 8) == 0 && le(out + 16, 8) == 0 && le(out + 24, 8) == 0,
	   "active volatile = all, nothing persistent or pending");
	is(send(CXL_MBOX_OP_GET_FW_INFO, NULL, 0), 0, "get fw info");
	ok(out[CXL_FW_INFO_SLOTS] == 1 &&
	       VCXL_FIELD_GET(CXL_FW_INFO_SLOT_CUR, out[CXL_FW_INFO_SLOT_INFO]) == 1,
	   "one slot, slot 1 active");
	is(memcmp(out + CXL_FW_INFO_SLOT1_REV, "test-fw 1.2", 11), 0, "slot 1 revision");
	is(send(CXL_MBOX_OP_GET_HEALTH_INFO, NULL, 0), 0, "get health info");
	ok(out[0] == 0 && out[1] == 0 && out[2] == 0 && out[3] == 0, "healthy, media normal");
	is((int16_t)le(out + CXL_HEALTH_TEMPERATURE, 2), -5, "temperature -5 C");
	is(le(out + 6, 4) | le(out + 10, 4) | le(out + 14, 4), 0, "no error counts");
	is(send(CXL_MBOX_OP_GET_ALERT_CONFIG, NULL, 0), 0, "get alert config");
	uint8_t z[CXL_ALERT_CONFIG_SIZE] = {0};
	is(memcmp(out, z, sizeof(z)), 0, "no alerts valid or programmable");
}

static void test_lsa(void)
{
	uint8_t in[CXL_SET_LSA_HDR_SIZE + LSA_SIZE + 8];

	memset(in, 0, sizeof(in));
	put(in, 4, 100);
	memcpy(in + 8, "hello", 5);
	is(send(CXL_MBOX_OP_SET_LSA, in, 8 + 5), 0, "set LSA at 100");
	is(memcmp(lsa + 100, "hello", 5), 0, "label storage written");
	put(in, 4, 98);
	put(in + 4, 4, 9);
	is(send(CXL_MBOX_OP_GET_LSA, in, 8), 0, "get LSA 98..107");
	ok(olen == 9 && !memcmp(out + 2, "hello", 5) && out[0] == 0, "read back");
	put(in, 4, 0);
	put(in + 4, 4, LSA_SIZE);
	ok(send(CXL_MBOX_OP_GET_LSA, in, 8) == 0 && olen == LSA_SIZE, "get the whole LSA");
	put(in + 4, 4, LSA_SIZE + 1);
	is(send(CXL_MBOX_OP_GET_LSA, in, 8), CXL_MBOX_RC_INVALID_INPUT, "get LSA past the end");
	put(in, 4, 0xffffffff);
	put(in + 4, 4, 2);
	is(send(CXL_MBOX_OP_GET_LSA, in, 8), CXL_MBOX_RC_INVALID_INPUT, "get LSA at 0xffffffff");
	put(in, 4, LSA_SIZE - 2);
	is(send(CXL_MBOX_OP_SET_LSA, in, 8 + 3), CXL_MBOX_RC_INVALID_INPUT,
	   "set LSA crossing the end");
	ok(lsa[LSA_SIZE - 2] == 0, "nothing written on error");
	put(in, 4, LSA_SIZE);
	is(send(CXL_MBOX_OP_SET_LSA, in, 8), 0, "set LSA of 0 bytes at the end");
	put(in, 4, 0);
	is(send(CXL_MBOX_OP_SET_LSA, in, 8 + LSA_SIZE), 0, "set the whole LSA");
	is(lsa[100], 0, "overwritten");

	/* a device without label storage: no LSA commands, and the CEL says so */
	setup(0);
	is(send(CXL_MBOX_OP_GET_LSA, in, 8), CXL_MBOX_RC_UNSUPPORTED, "no LSA: get unsupported");
	is(send(CXL_MBOX_OP_SET_LSA, in, 9), CXL_MBOX_RC_UNSUPPORTED, "no LSA: set unsupported");
	uint16_t op, eff;
	bool listed = false;
	for (unsigned e = 0; vcxl_mbox_cel_entry(&md, e, &op, &eff) == 0; e++)
		listed |= op == CXL_MBOX_OP_GET_LSA || op == CXL_MBOX_OP_SET_LSA;
	ok(!listed, "no LSA: CEL lists neither");
	send(CXL_MBOX_OP_IDENTIFY, NULL, 0);
	is(le(out + CXL_IDENTIFY_LSA_SIZE, 4), 0, "no LSA: identify LSA size 0");
	setup(LSA_SIZE);
}

static void test_events(void)
{
	uint8_t in[16] = {0};

	for (uint8_t l = 0; l <= CXL_EVENT_LOG_MAX; l++) {
		in[0] = l;
		ok(send(CXL_MBOX_OP_GET_EVENT_RECORDS, in, 1) == 0 &&
		       olen == CXL_GET_EVENTS_HDR_SIZE && le(out + CXL_GET_EVENTS_COUNT, 2) == 0 &&
		       out[0] == 0,
		   "event log %u: no records, no overflow", l);
	}
	in[0] = 4;
	is(send(CXL_MBOX_OP_GET_EVENT_RECORDS, in, 1), CXL_MBOX_RC_INVALID_INPUT,
	   "event log 4 (dynamic capacity) invalid");
	memset(in, 0, sizeof(in));
	in[CXL_CLEAR_EVENTS_FLAGS] = CXL_CLEAR_EVENTS_ALL;
	is(send(CXL_MBOX_OP_CLEAR_EVENT_RECORDS, in, 6), 0, "clear all events");
	in[CXL_CLEAR_EVENTS_COUNT] = 1;
	is(send(CXL_MBOX_OP_CLEAR_EVENT_RECORDS, in, 8), CXL_MBOX_RC_INVALID_INPUT,
	   "clear all with handles invalid");
	in[CXL_CLEAR_EVENTS_FLAGS] = 0;
	put(in + 6, 2, 7);
	is(send(CXL_MBOX_OP_CLEAR_EVENT_RECORDS, in, 8), CXL_MBOX_RC_INVALID_HANDLE,
	   "clear a handle that does not exist");
	in[CXL_CLEAR_EVENTS_COUNT] = 3;
	is(send(CXL_MBOX_OP_CLEAR_EVENT_RECORDS, in, 8), CXL_MBOX_RC_INVALID_PAYLOAD_LEN,
	   "clear 3 handles with 1 supplied");
	in[CXL_CLEAR_EVENTS_COUNT] = 0;
	in[0] = 9;
	is(send(CXL_MBOX_OP_CLEAR_EVENT_RECORDS, in, 6), CXL_MBOX_RC_INVALID_INPUT,
	   "clear in log 9 invalid");

	/* interrupt policy */
	is(send(CXL_MBOX_OP_GET_EVT_INT_POLICY, NULL, 0), 0, "get policy");
	ok(olen == 5 && !out[0] && !out[1] && !out[2] && !out[3] && !out[4],
	   "default: no interrupts");
	memset(in, CXL_INT_MSI_MSIX, 4);
	is(send(CXL_MBOX_OP_SET_EVT_INT_POLICY, in, 4), 0, "set MSI/MSI-X for the 4 logs");
	send(CXL_MBOX_OP_GET_EVT_INT_POLICY, NULL, 0);
	bool all = true;
	for (unsigned i = 0; i < 4; i++)
		all &= VCXL_FIELD_GET(CXL_INT_MODE, out[i]) == CXL_INT_MSI_MSIX &&
		       VCXL_FIELD_GET(CXL_INT_MSGNUM, out[i]) == MSGNUM;
	ok(all && out[4] == 0, "MSI/MSI-X with the device's message number");
	in[2] = CXL_INT_FW;
	is(send(CXL_MBOX_OP_SET_EVT_INT_POLICY, in, 4), CXL_MBOX_RC_INVALID_INPUT,
	   "firmware interrupts refused");
	in[2] = 3;
	is(send(CXL_MBOX_OP_SET_EVT_INT_POLICY, in, 4), CXL_MBOX_RC_INVALID_INPUT,
	   "reserved mode refused");
	send(CXL_MBOX_OP_GET_EVT_INT_POLICY, NULL, 0);
	ok(VCXL_FIELD_GET(CXL_INT_MODE, out[2]) == CXL_INT_MSI_MSIX, "refused set changed nothing");
	memset(in, 0, 5);
	in[4] = CXL_INT_MSI_MSIX;
	is(send(CXL_MBOX_OP_SET_EVT_INT_POLICY, in, 5), CXL_MBOX_RC_INVALID_INPUT,
	   "dynamic capacity interrupts refused");
	in[4] = 0;
	in[0] = 0xf0; /* message number bits are the device's, ignored */
	is(send(CXL_MBOX_OP_SET_EVT_INT_POLICY, in, 5), 0, "set 5-byte policy, all none");
	send(CXL_MBOX_OP_GET_EVT_INT_POLICY, NULL, 0);
	ok(!out[0] && !out[1] && !out[2] && !out[3] && !out[4], "back to no interrupts");
}

static void test_timestamp(void)
{
	uint8_t in[8];

	md.ts_valid = false;
	ok(send(CXL_MBOX_OP_GET_TIMESTAMP, NULL, 0) == 0 && olen == 8 && le(out, 8) == 0,
	   "timestamp 0 before it is set");
	put(in, 8, 1700000000000000000ull);
	is(send(CXL_MBOX_OP_SET_TIMESTAMP, in, 8), 0, "set timestamp");
	fake_ns += 123456;
	send(CXL_MBOX_OP_GET_TIMESTAMP, NULL, 0);
	is(le(out, 8), 1700000000000123456ull, "timestamp advances with the clock");
}

static void test_poison_and_scan(void)
{
	uint8_t in[CXL_SCAN_MEDIA_IN_SIZE] = {0};

	put(in, 8, 0);
	put(in + 8, 8, MEMDEV_CAP / CXL_POISON_UNIT);
	ok(send(CXL_MBOX_OP_GET_POISON, in, 16) == 0 && olen == CXL_POISON_OUT_HDR_SIZE &&
	       le(out + CXL_POISON_OUT_COUNT, 2) == 0 && out[0] == 0,
	   "poison list of the whole device: empty");
	put(in, 8, 64);
	is(send(CXL_MBOX_OP_GET_POISON, in, 16), CXL_MBOX_RC_INVALID_PA,
	   "poison list range past the end");
	put(in, 8, 0);
	put(in + 8, 8, 0);
	is(send(CXL_MBOX_OP_GET_POISON, in, 16), CXL_MBOX_RC_INVALID_INPUT, "zero length");
	put(in + 8, 8, ~0ull);
	is(send(CXL_MBOX_OP_GET_POISON, in, 16), CXL_MBOX_RC_INVALID_PA, "overflowing length");
	put(in, 8, 0x3f); /* reserved low bits are ignored */
	put(in + 8, 8, 1);
	is(send(CXL_MBOX_OP_GET_POISON, in, 16), 0, "reserved DPA bits ignored");

	ok(send(CXL_MBOX_OP_GET_SCAN_MEDIA_CAPS, in, 16) == 0 && olen == 4 && le(out, 4) > 0,
	   "scan media capabilities: an estimate");
	is(send(CXL_MBOX_OP_GET_SCAN_MEDIA, NULL, 0), CXL_MBOX_RC_INVALID_INPUT,
	   "scan results before any scan");

	/* background operation */
	put(in, 8, 0);
	put(in + 8, 8, MEMDEV_CAP / CXL_POISON_UNIT);
	uint16_t rc = send(CXL_MBOX_OP_SCAN_MEDIA, in, CXL_SCAN_MEDIA_IN_SIZE);
	is(rc, CXL_MBOX_RC_BACKGROUND, "scan media: background command started");
	ok(!(r32(MB(CXLDEV_MBOX_CTRL)) & CXLDEV_MBOX_CTRL_DOORBELL), "doorbell clear");
	ok(r64(MB(CXLDEV_MBOX_STATUS)) & CXLDEV_MBOX_STATUS_BG_OP, "Background Operation set");
	uint64_t bg = r64(MB(CXLDEV_MBOX_BG_STATUS));
	ok(VCXL_FIELD_GET(CXLDEV_MBOX_BG_OPCODE, bg) == CXL_MBOX_OP_SCAN_MEDIA &&
	       VCXL_FIELD_GET(CXLDEV_MBOX_BG_PCT, bg) == 0,
	   "background status: scan media, 0 %%");
	ok(vcxl_memdev_bg_busy(&md), "owner sees it busy");
	is(send(CXL_MBOX_OP_SCAN_MEDIA, in, CXL_SCAN_MEDIA_IN_SIZE), CXL_MBOX_RC_BUSY,
	   "second background command: Busy");
	is(send(CXL_MBOX_OP_GET_SCAN_MEDIA, NULL, 0), CXL_MBOX_RC_BUSY, "results while scanning");
	ok(send(CXL_MBOX_OP_IDENTIFY, NULL, 0) == 0, "foreground commands run meanwhile");
	ok(r64(MB(CXLDEV_MBOX_STATUS)) & CXLDEV_MBOX_STATUS_BG_OP,
	   "Background Operation still set after a foreground command");
	send(CXL_MBOX_OP_GET_POISON, in, 16);
	ok(out[CXL_POISON_OUT_FLAGS] & CXL_POISON_FLAG_SCANNING, "poison list says scanning");
	vcxl_memdev_bg_complete(&md);
	bg = r64(MB(CXLDEV_MBOX_BG_STATUS));
	ok(VCXL_FIELD_GET(CXLDEV_MBOX_BG_OPCODE, bg) == CXL_MBOX_OP_SCAN_MEDIA &&
	       VCXL_FIELD_GET(CXLDEV_MBOX_BG_PCT, bg) == 100 &&
	       VCXL_FIELD_GET(CXLDEV_MBOX_BG_RC, bg) == CXL_MBOX_RC_SUCCESS,
	   "background status: 100 %%, success");
	ok(!(r64(MB(CXLDEV_MBOX_STATUS)) & CXLDEV_MBOX_STATUS_BG_OP), "Background Operation clear");
	ok(send(CXL_MBOX_OP_GET_SCAN_MEDIA, NULL, 0) == 0 && olen == CXL_SCAN_RESULTS_HDR_SIZE &&
	       le(out + CXL_SCAN_RESULTS_COUNT, 2) == 0,
	   "scan results: no media errors");
	vcxl_memdev_bg_complete(&md);
	is(VCXL_FIELD_GET(CXLDEV_MBOX_BG_PCT, r64(MB(CXLDEV_MBOX_BG_STATUS))), 100,
	   "completing when idle changes nothing");
	put(in + 8, 8, MEMDEV_CAP / CXL_POISON_UNIT + 1);
	is(send(CXL_MBOX_OP_SCAN_MEDIA, in, CXL_SCAN_MEDIA_IN_SIZE), CXL_MBOX_RC_INVALID_PA,
	   "scan past the end refused");
	ok(!vcxl_memdev_bg_busy(&md), "and did not start");
}

static void test_reset(void)
{
	uint8_t in[CXL_SCAN_MEDIA_IN_SIZE] = {0};

	put(in + 8, 8, 1);
	lsa[7] = 0x77;
	send(CXL_MBOX_OP_SCAN_MEDIA, in, sizeof(in));
	vcxl_memdev_reset(&md);
	ok(!vcxl_memdev_bg_busy(&md), "reset abandons the background command");
	ok(r64(MB(CXLDEV_MBOX_STATUS)) == 0 && r64(MB(CXLDEV_MBOX_BG_STATUS)) == 0 &&
	       r64(MB(CXLDEV_MBOX_CMD)) == 0 && r32(MB(CXLDEV_MBOX_CTRL)) == 0,
	   "mailbox registers at reset values");
	is(r64(MB(CXLDEV_MBOX_PAYLOAD)), 0, "payload cleared");
	is(VCXL_FIELD_GET(CXLDEV_MBOX_CAP_PAYLOAD_SIZE, r32(MB(CXLDEV_MBOX_CAPS))), SHIFT,
	   "capabilities kept");
	is(lsa[7], 0x77, "label storage kept");
	is(send(CXL_MBOX_OP_GET_SCAN_MEDIA, NULL, 0), CXL_MBOX_RC_INVALID_INPUT,
	   "no scan results after reset");
	is(send(CXL_MBOX_OP_IDENTIFY, NULL, 0), 0, "mailbox works after reset");
}

/* ---- background completion interrupt (8.2.8.4.3-4) ------------------------- */

static unsigned irq_count, irq_last;
static const struct vcxl_memdev *irq_dev;

static void on_irq(void *opaque, struct vcxl_memdev *d, unsigned msgnum)
{
	irq_count++;
	irq_last = msgnum;
	irq_dev = d;
}

static const struct vcxl_memdev_ops irq_ops = {.now_ns = clk, .irq = on_irq};

static int rf_rd32(void *opaque, uint32_t off, uint32_t *v)
{
	uint64_t x = 0;
	int rc = vcxl_rf_read(opaque, off, 4, &x);

	*v = (uint32_t)x;
	return rc;
}

static int zero_rd32(void *opaque, uint32_t off, uint32_t *v)
{
	*v = 0;
	return 0;
}

static void test_bg_irq(void)
{
	struct vcxl_memdev_facts f = facts(0);
	uint8_t in[CXL_SCAN_MEDIA_IN_SIZE] = {0};
	const uint32_t bg = CXLDEV_MBOX_CTRL_BG_CMD_IRQ;

	put(in + 8, 8, 1);
	w32(MB(CXLDEV_MBOX_CTRL), bg);
	is(r32(MB(CXLDEV_MBOX_CTRL)) & bg, 0, "not capable: the interrupt enable is reserved (0)");

	vcxl_memdev_fini(&md);
	f.bg_irq = true;
	f.mbox_msgnum = 16;
	is(vcxl_memdev_layout(&md, &rf, 0, SHIFT, &f, &irq_ops, NULL), -EINVAL,
	   "message number 16 does not fit its 4-bit field");
	vcxl_rf_fini(&rf);
	vcxl_rf_init(&rf, vcxl_memdev_block_size(SHIFT));
	f.mbox_msgnum = 13;
	is(vcxl_memdev_layout(&md, &rf, 0, SHIFT, &f, &irq_ops, NULL), 0,
	   "layout with the background completion interrupt");
	uint32_t caps = r32(MB(CXLDEV_MBOX_CAPS));
	ok((caps & CXLDEV_MBOX_CAP_BG_CMD_IRQ) && !(caps & CXLDEV_MBOX_CAP_DB_IRQ),
	   "capabilities: background completion interrupt capable, no doorbell interrupt");
	is(VCXL_FIELD_GET(CXLDEV_MBOX_CAP_IRQ_MSGNUM, caps), 13, "interrupt message number 13");
	is(VCXL_FIELD_GET(CXLDEV_MBOX_CAP_PAYLOAD_SIZE, caps), SHIFT, "payload size unchanged");
	w32(MB(CXLDEV_MBOX_CTRL), ~0u & ~CXLDEV_MBOX_CTRL_DOORBELL);
	is(r32(MB(CXLDEV_MBOX_CTRL)), bg, "Control: the enable is RW, the rest reserved");
	w32(MB(CXLDEV_MBOX_CTRL), 0);

	irq_count = 0;
	is(send(CXL_MBOX_OP_SCAN_MEDIA, in, sizeof(in)), CXL_MBOX_RC_BACKGROUND, "scan started");
	vcxl_memdev_bg_complete(&md);
	ok(irq_count == 0 && md.bg_irqs == 0, "enable clear: completion signals nothing");

	w32(MB(CXLDEV_MBOX_CTRL), bg);
	ctrl_bits = bg;
	is(send(CXL_MBOX_OP_SCAN_MEDIA, in, sizeof(in)), CXL_MBOX_RC_BACKGROUND,
	   "scan started with the enable set");
	is(irq_count, 0, "no interrupt when the command starts");
	ok(r32(MB(CXLDEV_MBOX_CTRL)) == bg, "doorbell cleared, enable kept");
	vcxl_memdev_bg_complete(&md);
	ok(irq_count == 1 && irq_last == 13 && irq_dev == &md && md.bg_irqs == 1,
	   "completion signals message 13 once");
	vcxl_memdev_bg_complete(&md);
	is(irq_count, 1, "completing when idle signals nothing");
	is(send(CXL_MBOX_OP_IDENTIFY, NULL, 0), CXL_MBOX_RC_SUCCESS, "identify");
	is(irq_count, 1, "a foreground command signals nothing");
	send(CXL_MBOX_OP_SCAN_MEDIA, in, sizeof(in));
	w32(MB(CXLDEV_MBOX_CTRL), 0);
	vcxl_memdev_bg_complete(&md);
	is(irq_count, 1, "enable cleared while the command runs: nothing at completion");
	ctrl_bits = 0;
	w32(MB(CXLDEV_MBOX_CTRL), bg);
	vcxl_memdev_reset(&md);
	is(r32(MB(CXLDEV_MBOX_CTRL)), 0, "reset clears the enable");
	ok(r32(MB(CXLDEV_MBOX_CAPS)) == caps, "reset keeps the capabilities");

	/* the capability array lookup the CLI and drivers use */
	uint32_t off = 0, len = 0;
	ok(vcxl_devcap_find(rf_rd32, &rf, CXLDEV_CAP_ID_PRIMARY_MBOX, &off, &len) == 0 &&
	       off == VCXL_MDEV_MBOX_OFF && len == CXLDEV_MBOX_PAYLOAD + PAYLOAD,
	   "devcap find: primary mailbox offset and length");
	ok(vcxl_devcap_find(rf_rd32, &rf, CXLDEV_CAP_ID_MEMDEV, &off, NULL) == 0 &&
	       off == VCXL_MDEV_MEMDEV_OFF,
	   "devcap find: memory device status (no length asked)");
	is(vcxl_devcap_find(rf_rd32, &rf, CXLDEV_CAP_ID_SECONDARY_MBOX, &off, &len), -ENOENT,
	   "devcap find: absent capability: -ENOENT");
	is(vcxl_devcap_find(zero_rd32, NULL, CXLDEV_CAP_ID_PRIMARY_MBOX, &off, &len), -ENOENT,
	   "devcap find: an all-zero block (array id 0, count 0): -ENOENT");
	is(vcxl_devcap_find(rf_rd32, &rf, CXLDEV_CAP_ID_PRIMARY_MBOX, NULL, &len), -EINVAL,
	   "devcap find without an output: -EINVAL");

	vcxl_memdev_fini(&md);
	vcxl_rf_fini(&rf);
	setup(LSA_SIZE);
}

static int ones_rd32(void *opaque, uint32_t off, uint32_t *v)
{
	*v = ~0u;
	return 0;
}

static void test_rc_names(void)
{
	ok(!strcmp(vcxl_mbox_rc_name(CXL_MBOX_RC_SUCCESS), "Success"), "rc 0: Success");
	ok(!strcmp(vcxl_mbox_rc_name(CXL_MBOX_RC_BACKGROUND), "Background Command Started"),
	   "rc 1: Background Command Started");
	ok(!strcmp(vcxl_mbox_rc_name(CXL_MBOX_RC_UNSUPPORTED), "Unsupported"), "rc 3: Unsupported");
	ok(!strcmp(vcxl_mbox_rc_name(CXL_MBOX_RC_INVALID_PAYLOAD_LEN), "Invalid Payload Length"),
	   "rc 0x16: Invalid Payload Length");
	unsigned named = 0;
	for (unsigned rc = 0; rc <= CXL_MBOX_RC_INVALID_EXTENT_LIST; rc++)
		named += strcmp(vcxl_mbox_rc_name((uint16_t)rc), "unknown") != 0;
	is(named, CXL_MBOX_RC_INVALID_EXTENT_LIST + 1, "every code 0..0x1e has a name");
	ok(!strcmp(vcxl_mbox_rc_name(0x1f), "unknown") &&
	       !strcmp(vcxl_mbox_rc_name(0xffff), "unknown"),
	   "codes past the table: unknown");
	uint32_t off;
	is(vcxl_devcap_find(ones_rd32, NULL, CXLDEV_CAP_ID_PRIMARY_MBOX, &off, NULL), -ENODEV,
	   "devcap find: all-ones block (array id 0xffff): -ENODEV");
}

/* Random opcodes, lengths and payloads: every answer is a defined return code, the output
 * never exceeds the payload, the doorbell always clears. Deterministic seed. */
static void test_storm(void)
{
	static const uint16_t known[] = {0x0100, 0x0101, 0x0102, 0x0103, 0x0200, 0x0300, 0x0301,
					 0x0400, 0x0401, 0x4000, 0x4100, 0x4102, 0x4103, 0x4200,
					 0x4201, 0x4300, 0x4303, 0x4304, 0x4305};
	static uint8_t in[PAYLOAD + 16];
	unsigned seed = 12345, bad = 0;

	doorbell_was_busy = false;
	for (unsigned it = 0; it < 20000; it++) {
		seed = seed * 1103515245u + 12345u;
		uint16_t op = (seed >> 8) & 1 ? known[(seed >> 12) % 19] : (uint16_t)(seed >> 9);
		uint32_t len =
		    (seed >> 16) % 4 == 0 ? (seed >> 3) % (PAYLOAD + 8) : (seed >> 3) % 40;
		for (unsigned i = 0; i < 40; i++)
			in[i] = (uint8_t)(seed >> (i % 24));
		if (it % 7 == 0)
			memcpy(in, cel_uuid, 16);
		size_t bytes = len <= PAYLOAD ? len : PAYLOAD;
		uint16_t rc = send_raw(op, in, bytes, len, out, sizeof(out), &olen);
		bool defined = rc <= CXL_MBOX_RC_INVALID_LOG;
		if (!defined || olen > PAYLOAD || (rc && rc != CXL_MBOX_RC_BACKGROUND && olen))
			bad++;
		if (rc == CXL_MBOX_RC_BACKGROUND)
			vcxl_memdev_bg_complete(&md);
	}
	is(bad, 0, "20000 random commands: defined return codes and lengths");
	ok(!doorbell_was_busy, "doorbell never left set");
}

int main(void)
{
	setup(LSA_SIZE);
	test_layout();
	test_layout_errors();
	test_doorbell();
	test_unknown();
	test_lengths();
	test_identify();
	test_logs();
	test_partition_fw_health();
	test_lsa();
	test_events();
	test_timestamp();
	test_poison_and_scan();
	test_reset();
	test_bg_irq();
	test_rc_names();
	test_storm();
	vcxl_memdev_fini(&md);
	vcxl_rf_fini(&rf);
	return done();
}
