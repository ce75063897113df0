// SPDX-License-Identifier: BSD-3-Clause
/* CXL Device DVSEC: every field's attribute, byte/word access, CONFIG_LOCK scope, gating. */
#include <errno.h>
#include <string.h>

#include "tap.h"
#include "cxl/cxl_spec.h"

#define B 0x100u /* DVSEC offset in the test config space */

struct ctx {
	int triggers;
	uint16_t last_bits;
	int refreshes;
	uint32_t last_refresh_off;
};

static void trig(void *opaque, struct vcxl_dvsec_device *d, uint16_t bits)
{
	struct ctx *c = opaque;
	c->triggers++;
	c->last_bits = bits;
}

static void refresh(void *opaque, struct vcxl_dvsec_device *d, uint32_t off)
{
	struct ctx *c = opaque;
	c->refreshes++;
	c->last_refresh_off = off;
}

static const struct vcxl_dvsec_device_ops ops = {trig, refresh};

static uint64_t rd(struct vcxl_regfile *rf, uint32_t off, unsigned len)
{
	uint64_t v = 0xdeadbeef;
	if (vcxl_rf_read(rf, off, len, &v))
		return 0xdeadbeefdeadull;
	return v;
}

static int wr(struct vcxl_regfile *rf, uint32_t off, unsigned len, uint64_t v)
{
	return vcxl_rf_write(rf, off, len, v);
}

static void setup(struct vcxl_regfile *rf, struct vcxl_dvsec_device *d, struct ctx *c, bool gated)
{
	struct vcxl_dvsec_device_cfg cfg = {
	    .cap = CXL_DVSEC_CAP_CACHE | CXL_DVSEC_CAP_MEM | (1u << 4) | CXL_DVSEC_CAP_RESET |
		   CXL_DVSEC_CAP_RESET_MEMCLR | CXL_DVSEC_CAP_VIRAL | CXL_DVSEC_CAP_CACHE_WBI,
	    .cap2 = gated ? CXL_DVSEC_CAP2_MOD_COMPL : 0,
	    .cap3 = gated ? (CXL_DVSEC_CAP3_HOT_CONFIG | CXL_DVSEC_CAP3_P2P_MEM)
			  : CXL_DVSEC_CAP3_HOT_HDM, /* bit 2 alone must NOT gate Ctrl2 bit 4 */
	    .ctrl = 0,
	    .range_size = {0x50000000ull | (3ull << 32), 0},
	    .range_flags = {(2u << 2) | (2u << 5) | (1u << 13) | 0xffff0000u, 0},
	};
	memset(c, 0, sizeof(*c));
	vcxl_rf_init(rf, 0x1000);
	ok(vcxl_dvsec_device_layout(d, rf, B, 0x140, &cfg, &ops, c) == 0, "layout (gated=%d)",
	   gated);
}

static void test_header_cap(void)
{
	struct vcxl_regfile rf;
	struct vcxl_dvsec_device d;
	struct ctx c;
	setup(&rf, &d, &c, false);
	is(rd(&rf, B, 4), 0x14010023, "ext cap header: DVSEC, version 1, next 0x140");
	is(rd(&rf, B + 4, 4), 0x03c31e98, "header 1: CXL vendor, rev 3, length 0x3c");
	is(rd(&rf, B + 8, 2), 0, "header 2: DVSEC ID 0");
	uint64_t cap = rd(&rf, B + CXL_DVSEC_CAP, 2);
	ok(cap & CXL_DVSEC_CAP_IO, "IO_Capable forced to 1");
	wr(&rf, B + CXL_DVSEC_CAP, 2, 0);
	wr(&rf, B + CXL_DVSEC_CAP + 1, 1, 0xff);
	is(rd(&rf, B + CXL_DVSEC_CAP, 2), cap, "Capability RO to word and byte writes");
	wr(&rf, B + CXL_DVSEC_CAP2, 2, 0xffff);
	is(rd(&rf, B + CXL_DVSEC_CAP2, 2), 0, "Capability2 RO");
	wr(&rf, B + CXL_DVSEC_CAP3, 4, 0xffffffff);
	is(rd(&rf, B + CXL_DVSEC_CAP3, 4), CXL_DVSEC_CAP3_HOT_HDM, "Capability3 RO, pad reads 0");
	vcxl_rf_fini(&rf);
}

static void test_control(void)
{
	struct vcxl_regfile rf;
	struct vcxl_dvsec_device d;
	struct ctx c;
	for (int gated = 0; gated < 2; gated++) {
		setup(&rf, &d, &c, gated);
		uint16_t rwl = CXL_DVSEC_CTRL_RWL_MASK | (gated ? CXL_DVSEC_CTRL_P2P_MEM_EN : 0);
		is(rd(&rf, B + CXL_DVSEC_CTRL, 2), CXL_DVSEC_CTRL_IO_EN,
		   "Control resets to IO_Enable");
		wr(&rf, B + CXL_DVSEC_CTRL, 2, 0xffff);
		is(rd(&rf, B + CXL_DVSEC_CTRL, 2), rwl | CXL_DVSEC_CTRL_IO_EN,
		   "Control: RWL bits take 1s, 13/15 reserved, bit 12 only with Cap3 P2P");
		wr(&rf, B + CXL_DVSEC_CTRL, 2, 0);
		is(rd(&rf, B + CXL_DVSEC_CTRL, 2), CXL_DVSEC_CTRL_IO_EN, "IO_Enable is RO 1");
		ok(wr(&rf, B + CXL_DVSEC_CTRL + 1, 1, 0x40) == 0,
		   "byte write to Control high byte");
		is(rd(&rf, B + CXL_DVSEC_CTRL, 2), CXL_DVSEC_CTRL_VIRAL_EN | CXL_DVSEC_CTRL_IO_EN,
		   "byte write set Viral_Enable only");
		wr(&rf, B + CXL_DVSEC_CTRL, 1, CXL_DVSEC_CTRL_MEM_EN);
		is(rd(&rf, B + CXL_DVSEC_CTRL, 2),
		   CXL_DVSEC_CTRL_VIRAL_EN | CXL_DVSEC_CTRL_IO_EN | CXL_DVSEC_CTRL_MEM_EN,
		   "byte write to low byte keeps the high byte");
		/* dword write covering Control and Status */
		vcxl_rf_set16(&rf, B + CXL_DVSEC_STATUS, CXL_DVSEC_STATUS_VIRAL);
		wr(&rf, B + CXL_DVSEC_CTRL, 4, 0x00000004);
		is(rd(&rf, B + CXL_DVSEC_CTRL, 4), 0x40000006,
		   "dword write: Control takes value, Status W1C untouched by 0s");
		vcxl_rf_fini(&rf);
	}
}

static void test_status(void)
{
	struct vcxl_regfile rf;
	struct vcxl_dvsec_device d;
	struct ctx c;
	setup(&rf, &d, &c, false);
	vcxl_rf_set16(&rf, B + CXL_DVSEC_STATUS, 0xffff);
	is(rd(&rf, B + CXL_DVSEC_STATUS, 2), CXL_DVSEC_STATUS_VIRAL,
	   "Status: only Viral_Status exists, the rest is reserved");
	wr(&rf, B + CXL_DVSEC_STATUS, 2, (uint16_t)~CXL_DVSEC_STATUS_VIRAL);
	is(rd(&rf, B + CXL_DVSEC_STATUS, 2), CXL_DVSEC_STATUS_VIRAL, "writing 0 to Viral keeps it");
	wr(&rf, B + CXL_DVSEC_STATUS + 1, 1, 0x40);
	is(rd(&rf, B + CXL_DVSEC_STATUS, 2), 0, "byte write of 1 clears Viral (RW1CS)");

	/* Status2: bits 0,1,2,15 RO, bit 3 RW1CS, 14:4 reserved */
	vcxl_rf_set16(&rf, B + CXL_DVSEC_STATUS2, 0xffff);
	is(rd(&rf, B + CXL_DVSEC_STATUS2, 2), 0x800f, "Status2 defined bits only");
	wr(&rf, B + CXL_DVSEC_STATUS2, 2, 0xffff);
	is(rd(&rf, B + CXL_DVSEC_STATUS2, 2), 0x8007, "Status2: only bit 3 clears on 1, RO stay");
	vcxl_rf_set16(&rf, B + CXL_DVSEC_STATUS2, 0x8);
	wr(&rf, B + CXL_DVSEC_STATUS2, 1, 0x8);
	is(rd(&rf, B + CXL_DVSEC_STATUS2, 2), 0, "byte write clears Volatile HDM Preservation Err");
	is(c.last_refresh_off, CXL_DVSEC_CTRL2, "reading Status2 ran the refresh hook");
	vcxl_rf_fini(&rf);
}

static void test_control2(void)
{
	struct vcxl_regfile rf;
	struct vcxl_dvsec_device d;
	struct ctx c;
	for (int gated = 0; gated < 2; gated++) {
		setup(&rf, &d, &c, gated);
		uint16_t rw = CXL_DVSEC_CTRL2_DISABLE_CACHE | CXL_DVSEC_CTRL2_RESET_MEMCLR;
		if (gated)
			rw |= CXL_DVSEC_CTRL2_HDM_HOT_STATE | CXL_DVSEC_CTRL2_MOD_COMPL_EN;
		wr(&rf, B + CXL_DVSEC_CTRL2, 2, 0xffff);
		is(rd(&rf, B + CXL_DVSEC_CTRL2, 2), rw,
		   "Control2 (gated=%d): 0,3 RW; 4 needs Cap3 bit 3; 5 needs Cap2 bit 6; triggers "
		   "read 0",
		   gated);
		is(c.triggers, 1, "one trigger call for one write");
		is(c.last_bits, CXL_DVSEC_CTRL2_INIT_CACHE_WBI | CXL_DVSEC_CTRL2_INIT_RESET,
		   "trigger gets both bits");
		wr(&rf, B + CXL_DVSEC_CTRL2, 1, CXL_DVSEC_CTRL2_INIT_RESET);
		is(c.triggers, 2, "byte write of Initiate CXL Reset triggers");
		is(c.last_bits, CXL_DVSEC_CTRL2_INIT_RESET, "only the reset bit");
		is(rd(&rf, B + CXL_DVSEC_CTRL2, 2), 0, "the byte write also cleared the RW bits");
		wr(&rf, B + CXL_DVSEC_CTRL2, 1, CXL_DVSEC_CTRL2_INIT_RESET);
		is(c.triggers, 3, "the trigger bit reads 0, so a second 1 triggers again");
		wr(&rf, B + CXL_DVSEC_CTRL2, 2, CXL_DVSEC_CTRL2_RESET_MEMCLR);
		is(c.triggers, 3, "writing other bits does not trigger");
		wr(&rf, B + CXL_DVSEC_STATUS2, 2, 0);
		is(c.triggers, 3, "writing Status2 does not trigger");
		is(rd(&rf, B + CXL_DVSEC_CTRL2, 2), CXL_DVSEC_CTRL2_RESET_MEMCLR,
		   "Mem Clr Enable RW");
		vcxl_rf_fini(&rf);
	}
}

static void test_ranges(void)
{
	struct vcxl_regfile rf;
	struct vcxl_dvsec_device d;
	struct ctx c;
	setup(&rf, &d, &c, false);
	is(rd(&rf, B + CXL_DVSEC_RANGE_SIZE_HI(0), 4), 3, "Range 1 Size High");
	uint64_t lo = rd(&rf, B + CXL_DVSEC_RANGE_SIZE_LO(0), 4);
	is(lo, 0x50000000u | (2u << 2) | (2u << 5) | (1u << 13),
	   "Range 1 Size Low: size [31:28], media/class/timeout, reserved [27:16] dropped");
	is(c.last_refresh_off, CXL_DVSEC_RANGE_SIZE_LO(0), "Size Low read ran refresh hook");
	int before = c.refreshes;
	rd(&rf, B + CXL_DVSEC_RANGE_SIZE_LO(0) + 3, 1);
	is(c.refreshes, before + 1, "a byte read of Size Low refreshes too");
	wr(&rf, B + CXL_DVSEC_RANGE_SIZE_LO(0), 4, 0);
	wr(&rf, B + CXL_DVSEC_RANGE_SIZE_HI(0), 4, 0);
	is(rd(&rf, B + CXL_DVSEC_RANGE_SIZE_LO(0), 4), lo, "Size Low RO");
	is(rd(&rf, B + CXL_DVSEC_RANGE_SIZE_HI(0), 4), 3, "Size High RO");
	vcxl_rf_update32(&rf, B + CXL_DVSEC_RANGE_SIZE_LO(0), 0x00ff0003, 0x00ff0003);
	is(rd(&rf, B + CXL_DVSEC_RANGE_SIZE_LO(0), 4) & 0x00ff0003, 3,
	   "owner sets Info_Valid/Active; reserved stays 0");
	for (unsigned i = 0; i < 2; i++) {
		wr(&rf, B + CXL_DVSEC_RANGE_BASE_LO(i), 4, 0xffffffff);
		is(rd(&rf, B + CXL_DVSEC_RANGE_BASE_LO(i), 4), 0xf0000000,
		   "Range %u Base Low: [31:28] RW, [27:0] reserved", i + 1);
		wr(&rf, B + CXL_DVSEC_RANGE_BASE_HI(i), 4, 0x89abcdef);
		is(rd(&rf, B + CXL_DVSEC_RANGE_BASE_HI(i), 4), 0x89abcdef, "Base High RW");
		wr(&rf, B + CXL_DVSEC_RANGE_BASE_LO(i) + 2, 2, 0x2345);
		is(rd(&rf, B + CXL_DVSEC_RANGE_BASE_LO(i), 4), 0x20000000,
		   "word write to Base Low");
		wr(&rf, B + CXL_DVSEC_RANGE_BASE_HI(i) + 1, 1, 0x00);
		is(rd(&rf, B + CXL_DVSEC_RANGE_BASE_HI(i), 4), 0x89ab00ef,
		   "byte write to Base High");
	}
	vcxl_rf_fini(&rf);
}

static void test_config_lock(void)
{
	struct vcxl_regfile rf;
	struct vcxl_dvsec_device d;
	struct ctx c;
	uint8_t w_before[CXL_DVSEC_DEVICE_LEN], w_after[CXL_DVSEC_DEVICE_LEN];
	setup(&rf, &d, &c, true);
	wr(&rf, B + CXL_DVSEC_CTRL, 2, CXL_DVSEC_CTRL_MEM_EN);
	wr(&rf, B + CXL_DVSEC_RANGE_BASE_HI(0), 4, 0x1);
	wr(&rf, B + CXL_DVSEC_RANGE_BASE_LO(0), 4, 0x30000000);
	for (unsigned i = 0; i < CXL_DVSEC_DEVICE_LEN; i++)
		w_before[i] = vcxl_rf_writable8(&rf, B + i);
	ok(!vcxl_rf_group_locked(&rf, d.config_lock_group), "unlocked before CONFIG_LOCK");
	wr(&rf, B + CXL_DVSEC_LOCK, 1, 0xff);
	is(rd(&rf, B + CXL_DVSEC_LOCK, 2), 1, "CONFIG_LOCK set, bits 15:1 reserved");
	ok(vcxl_rf_group_locked(&rf, d.config_lock_group), "lock group engaged");
	wr(&rf, B + CXL_DVSEC_LOCK, 2, 0);
	is(rd(&rf, B + CXL_DVSEC_LOCK, 2), 1, "CONFIG_LOCK is write-once");
	wr(&rf, B + CXL_DVSEC_CTRL, 2, 0xffff);
	wr(&rf, B + CXL_DVSEC_CTRL, 1, 0);
	is(rd(&rf, B + CXL_DVSEC_CTRL, 2), CXL_DVSEC_CTRL_MEM_EN | CXL_DVSEC_CTRL_IO_EN,
	   "Control frozen under CONFIG_LOCK (word and byte)");
	wr(&rf, B + CXL_DVSEC_RANGE_BASE_HI(0), 4, 0xffffffff);
	wr(&rf, B + CXL_DVSEC_RANGE_BASE_LO(0), 2, 0);
	wr(&rf, B + CXL_DVSEC_RANGE_BASE_LO(0) + 3, 1, 0xff);
	is(rd(&rf, B + CXL_DVSEC_RANGE_BASE_HI(0), 4), 1, "Range 1 Base High frozen");
	is(rd(&rf, B + CXL_DVSEC_RANGE_BASE_LO(0), 4), 0x30000000, "Range 1 Base Low frozen");
	wr(&rf, B + CXL_DVSEC_RANGE_BASE_HI(1), 4, 5);
	is(rd(&rf, B + CXL_DVSEC_RANGE_BASE_HI(1), 4), 0, "Range 2 Base frozen too");
	wr(&rf, B + CXL_DVSEC_CTRL2, 2, CXL_DVSEC_CTRL2_DISABLE_CACHE);
	is(rd(&rf, B + CXL_DVSEC_CTRL2, 2), CXL_DVSEC_CTRL2_DISABLE_CACHE,
	   "Control2 still writable under CONFIG_LOCK");
	for (unsigned i = 0; i < CXL_DVSEC_DEVICE_LEN; i++)
		w_after[i] = vcxl_rf_writable8(&rf, B + i);
	int wrong = 0;
	for (unsigned i = 0; i < CXL_DVSEC_DEVICE_LEN; i++) {
		bool locked_reg =
		    (i >= CXL_DVSEC_CTRL && i < CXL_DVSEC_CTRL + 2) ||
		    (i >= CXL_DVSEC_RANGE_BASE_HI(0) && i < CXL_DVSEC_RANGE_SIZE_HI(1)) ||
		    (i >= CXL_DVSEC_RANGE_BASE_HI(1) && i < CXL_DVSEC_CAP3);
		bool lock_byte = i == CXL_DVSEC_LOCK;
		if (locked_reg && w_after[i] != 0)
			wrong++;
		if (!locked_reg && !lock_byte && w_after[i] != w_before[i])
			wrong++;
		if (lock_byte && w_after[i] != 0)
			wrong++;
	}
	is(wrong, 0, "CONFIG_LOCK locks exactly Control and Range Base (and itself)");
	vcxl_rf_reset(&rf);
	ok(!vcxl_rf_group_locked(&rf, d.config_lock_group), "reset releases CONFIG_LOCK");
	wr(&rf, B + CXL_DVSEC_CTRL, 2, CXL_DVSEC_CTRL_CACHE_EN);
	is(rd(&rf, B + CXL_DVSEC_CTRL, 2), CXL_DVSEC_CTRL_CACHE_EN | CXL_DVSEC_CTRL_IO_EN,
	   "Control writable after reset");
	/* RWO: a dword write that covers Lock and Capability2 also works */
	wr(&rf, B + CXL_DVSEC_LOCK, 4, 0xffff0001);
	ok(vcxl_rf_group_locked(&rf, d.config_lock_group), "dword write sets CONFIG_LOCK");
	vcxl_rf_fini(&rf);
}

static void test_bad_args(void)
{
	struct vcxl_regfile rf;
	struct vcxl_dvsec_device d;
	struct vcxl_dvsec_device_cfg cfg = {0};
	vcxl_rf_init(&rf, 0x1000);
	ok(vcxl_dvsec_device_layout(&d, &rf, 0x102, 0, &cfg, NULL, NULL) == -EINVAL,
	   "unaligned base refused");
	ok(vcxl_dvsec_device_layout(&d, &rf, 0xfe0, 0, &cfg, NULL, NULL) == -EINVAL,
	   "DVSEC past the end refused");
	cfg.range_size[0] = 0x1000;
	ok(vcxl_dvsec_device_layout(&d, &rf, 0x100, 0, &cfg, NULL, NULL) == -EINVAL,
	   "range size not 256 MiB granular refused");
	cfg.range_size[0] = 0;
	ok(vcxl_dvsec_device_layout(&d, &rf, 0x100, 0, &cfg, NULL, NULL) == 0, "NULL ops allowed");
	wr(&rf, 0x100 + CXL_DVSEC_CTRL2, 2, 0x6);
	is(rd(&rf, 0x100 + CXL_DVSEC_CTRL2, 2), 0, "triggers with NULL ops are harmless");
	vcxl_rf_fini(&rf);
}

int main(void)
{
	test_header_cap();
	test_control();
	test_status();
	test_control2();
	test_ranges();
	test_config_lock();
	test_bad_args();
	return done();
}
