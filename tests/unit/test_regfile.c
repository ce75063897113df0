// SPDX-License-Identifier: BSD-3-Clause
/* Register engine: attributes, locks, hooks, access rules, split-access equivalence. */
#include <errno.h>
#include <string.h>
#include <sys/uio.h>

#include "tap.h"
#include "regfile/regfile.h"

static void test_attrs(void)
{
	struct vcxl_regfile rf;
	uint64_t v;
	ok(vcxl_rf_init(&rf, 64) == 0, "init");
	vcxl_rf_init_val(&rf, 0, 4, 0x12345678);
	vcxl_rf_define(&rf, 0, 4, 0x0000ff00, VCXL_RF_RW);
	vcxl_rf_define(&rf, 0, 4, 0x000000f0, VCXL_RF_RW1C);
	vcxl_rf_define(&rf, 0, 4, 0xf0000000, VCXL_RF_RSVD);
	vcxl_rf_read(&rf, 0, 4, &v);
	is(v, 0x02345678, "reserved bits read 0 even if the reset value had them");
	vcxl_rf_write(&rf, 0, 4, 0xffffffff);
	vcxl_rf_read(&rf, 0, 4, &v);
	is(v, 0x0234ff08, "RW bits take the value, RW1C bits clear on 1, RO/RSVD keep");
	vcxl_rf_write(&rf, 0, 4, 0x00000000);
	vcxl_rf_read(&rf, 0, 4, &v);
	is(v, 0x02340008, "writing 0 clears RW, leaves RW1C");
	vcxl_rf_set32(&rf, 0, 0x000000f0 | vcxl_rf_get32(&rf, 0));
	vcxl_rf_write(&rf, 0, 1, 0x30);
	vcxl_rf_read(&rf, 0, 4, &v);
	is(v, 0x023400c8, "byte write clears only the written RW1C bits");

	/* RWO: first write sticks, later writes ignored until reset */
	vcxl_rf_define(&rf, 8, 2, 0x0001, VCXL_RF_RWO);
	vcxl_rf_write(&rf, 8, 2, 1);
	vcxl_rf_write(&rf, 8, 2, 0);
	vcxl_rf_read(&rf, 8, 2, &v);
	is(v, 1, "RWO bit keeps its first written value");
	vcxl_rf_reset(&rf);
	vcxl_rf_read(&rf, 8, 2, &v);
	is(v, 0, "reset restores RWO value");
	vcxl_rf_write(&rf, 8, 1, 0);
	vcxl_rf_write(&rf, 8, 1, 1);
	vcxl_rf_read(&rf, 8, 2, &v);
	is(v, 0, "RWO: a first write of 0 also consumes the write-once");

	ok(vcxl_rf_read(&rf, 62, 4, &v) == -EINVAL, "read past the end refused");
	ok(vcxl_rf_write(&rf, 64, 1, 0) == -EINVAL, "write at the end refused");
	ok(vcxl_rf_read(&rf, 0, 3, &v) == -EINVAL, "3-byte access refused");
	ok(vcxl_rf_write(&rf, 0xffffffffu, 8, 0) == -EINVAL, "offset overflow refused");
	vcxl_rf_fini(&rf);
}

struct hook_log {
	int writes, reads;
	uint32_t last_old, last_new, last_off;
};

static void hw(void *opaque, struct vcxl_regfile *rf, uint32_t off, uint32_t old, uint32_t val)
{
	struct hook_log *l = opaque;
	l->writes++;
	l->last_old = old;
	l->last_new = val;
	l->last_off = off;
	/* commit-like behaviour: bit 9 set -> bit 10 set */
	if (val & (1u << 9))
		vcxl_rf_update32(rf, off, 1u << 10, 1u << 10);
	else
		vcxl_rf_update32(rf, off, 1u << 10, 0);
}

static void hr(void *opaque, struct vcxl_regfile *rf, uint32_t off)
{
	struct hook_log *l = opaque;
	l->reads++;
	vcxl_rf_set32(rf, off, 0xabcd0000u + (uint32_t)l->reads);
}

static void test_hooks_and_locks(void)
{
	struct vcxl_regfile rf;
	struct hook_log log = {0};
	uint64_t v;
	vcxl_rf_init(&rf, 0x40);
	/* control at 0x10: bits 0..9 RW, bit 10 "committed" RO; base at 0x14 RW */
	vcxl_rf_define(&rf, 0x10, 4, 0x3ff, VCXL_RF_RW);
	vcxl_rf_define(&rf, 0x14, 4, 0xffffffff, VCXL_RF_RW);
	vcxl_rf_hook(&rf, 0x10, 4, NULL, hw, &log);
	vcxl_rf_hook(&rf, 0x20, 4, hr, NULL, &log);
	struct vcxl_rf_lock_field f[] = {{0x14, 0xffffffff}, {0x10, 0xff}};
	int g = vcxl_rf_lock_group(&rf, 0x10, 1u << 10, f, 2);
	ok(g >= 0, "lock group created");
	ok(!vcxl_rf_group_locked(&rf, g), "group starts unlocked");
	vcxl_rf_write(&rf, 0x14, 4, 0x10000000);
	vcxl_rf_write(&rf, 0x10, 2, 0x0205);
	is(log.writes, 1, "write hook ran once for a 2-byte write");
	is(log.last_new & 0x3ff, 0x205, "hook sees the merged value");
	ok(vcxl_rf_group_locked(&rf, g), "hook-set condition locks the group");
	vcxl_rf_write(&rf, 0x14, 4, 0x20000000);
	vcxl_rf_read(&rf, 0x14, 4, &v);
	is(v, 0x10000000, "locked field ignores writes");
	vcxl_rf_write(&rf, 0x10, 1, 0x07);
	vcxl_rf_read(&rf, 0x10, 4, &v);
	is(v & 0xff, 0x05, "locked byte of control ignores writes");
	vcxl_rf_write(&rf, 0x11, 1, 0x00);
	ok(!vcxl_rf_group_locked(&rf, g), "clearing bit 9 (unlocked part) unlocks");
	vcxl_rf_write(&rf, 0x14, 4, 0x20000000);
	vcxl_rf_read(&rf, 0x14, 4, &v);
	is(v, 0x20000000, "unlocked field writable again");

	vcxl_rf_read(&rf, 0x20, 4, &v);
	is(v, 0xabcd0001, "read hook refreshes before the read");
	vcxl_rf_read(&rf, 0x22, 2, &v);
	is(v, 0xabcd, "partial read runs the hook too");
	is(log.reads, 2, "one read hook call per access");

	/* 8-byte write spanning two dwords with a hook in the first */
	log.writes = 0;
	vcxl_rf_write(&rf, 0x10, 8, 0x3000000000000200ull);
	is(log.writes, 1, "8-byte write spanning two dwords: hook on the hooked dword only");
	vcxl_rf_read(&rf, 0x14, 4, &v);
	is(v, 0x20000000, "second dword of the 8-byte write was locked by the first");
	vcxl_rf_reset(&rf);
	ok(!vcxl_rf_group_locked(&rf, g), "reset clears the lock");
	vcxl_rf_fini(&rf);
}

static void test_dword_rule(void)
{
	struct vcxl_regfile rf;
	uint64_t v;
	vcxl_rf_init(&rf, 0x20);
	vcxl_rf_define(&rf, 0, 8, ~0ull, VCXL_RF_RW);
	vcxl_rf_access_rule(&rf, 0, 0x10, VCXL_RF_ACC_DWORD);
	ok(vcxl_rf_write(&rf, 0, 4, 0x11223344) == 0, "dword write allowed");
	ok(vcxl_rf_write(&rf, 0, 8, 0x5566778811223344ull) == 0, "aligned qword allowed");
	ok(vcxl_rf_write(&rf, 1, 1, 0) == -EINVAL, "byte write refused");
	ok(vcxl_rf_read(&rf, 2, 2, &v) == -EINVAL, "word read refused");
	ok(vcxl_rf_read(&rf, 4, 8, &v) == -EINVAL, "misaligned qword refused");
	vcxl_rf_read(&rf, 0, 8, &v);
	is(v, 0x5566778811223344ull, "refused accesses changed nothing");
	ok(rf.rejected == 3, "rejections counted");
	ok(vcxl_rf_read(&rf, 0x10, 1, &v) == 0, "outside the rule any size works");
	vcxl_rf_fini(&rf);
}

/* What a hook on a 64-bit register saw: the whole register at each call. */
struct qlog {
	int writes, reads;
	uint64_t seen[4];
};

static void qw_hook(void *opaque, struct vcxl_regfile *rf, uint32_t off, uint32_t old, uint32_t val)
{
	struct qlog *l = opaque;
	(void)old;
	(void)val;
	if (l->writes < 4)
		l->seen[l->writes] = vcxl_rf_get64(rf, off & ~7u);
	l->writes++;
}

static void qr_hook(void *opaque, struct vcxl_regfile *rf, uint32_t off)
{
	struct qlog *l = opaque;
	l->reads++;
	/* a live field in each half: both halves refresh before any read */
	vcxl_rf_set32(rf, off, 0x5a000000u + (uint32_t)l->reads);
}

/* CXL r3.1 8.2.2: a 64-bit register is one 8-byte quantity. */
static void test_qword_rule(void)
{
	struct vcxl_regfile rf;
	struct qlog log = {0};
	uint64_t v;
	vcxl_rf_init(&rf, 0x30);
	vcxl_rf_define(&rf, 0, 8, ~0ull, VCXL_RF_RW);
	vcxl_rf_define(&rf, 8, 8, ~0ull, VCXL_RF_RW);
	ok(vcxl_rf_access_rule(&rf, 0, 8, VCXL_RF_ACC_QWORD) == 0, "64-bit register at 0");
	ok(vcxl_rf_access_rule(&rf, 8, 8, VCXL_RF_ACC_DWORD) == 0, "two 32-bit registers at 8");
	ok(vcxl_rf_access_rule(&rf, 0x14, 8, VCXL_RF_ACC_QWORD) == -EINVAL,
	   "a 64-bit register must be 8-byte aligned");
	ok(vcxl_rf_access_rule(&rf, 0x18, 4, VCXL_RF_ACC_QWORD) == -EINVAL,
	   "and 8 bytes long (or a run of them)");

	ok(vcxl_rf_write(&rf, 0, 8, 0x1122334455667788ull) == 0, "8-byte write");
	vcxl_rf_read(&rf, 0, 8, &v);
	is(v, 0x1122334455667788ull, "8-byte read returns it");
	v = 0;
	ok(vcxl_rf_read(&rf, 0, 4, &v) == 0 && v == 0x55667788, "4-byte read of the low half: it");
	v = 0;
	ok(vcxl_rf_read(&rf, 4, 4, &v) == 0 && v == 0x11223344, "4-byte read of the high half: it");
	uint64_t before = rf.rejected;
	ok(vcxl_rf_write(&rf, 0, 4, 0) == -EINVAL, "4-byte write of the low half refused");
	ok(vcxl_rf_write(&rf, 4, 4, 0) == -EINVAL, "4-byte write of the high half refused");
	ok(vcxl_rf_write(&rf, 2, 2, 0) == -EINVAL, "2-byte write refused");
	ok(vcxl_rf_read(&rf, 7, 1, &v) == -EINVAL, "1-byte read refused");
	ok(vcxl_rf_read(&rf, 4, 8, &v) == -EINVAL, "8 bytes across the register's edge refused");
	ok(vcxl_rf_write(&rf, 4, 8, 0) == -EINVAL, "so is such a write");
	is(rf.rejected - before, 6, "every refusal counted");
	vcxl_rf_read(&rf, 0, 8, &v);
	is(v, 0x1122334455667788ull, "refused writes changed nothing");

	/* one merge: a lock the new low half sets does not stop its own high half */
	struct vcxl_rf_lock_field fq[] = {{4, ~0u}}, fd[] = {{0xc, ~0u}};
	int gq = vcxl_rf_lock_group(&rf, 0, 1, fq, 1);
	int gd = vcxl_rf_lock_group(&rf, 8, 1, fd, 1);
	vcxl_rf_write(&rf, 0, 8, 0xcafef00d00000000ull);
	vcxl_rf_write(&rf, 8, 8, 0xcafef00d00000000ull);
	vcxl_rf_write(&rf, 0, 8, 0xdeadbeef00000001ull);
	vcxl_rf_write(&rf, 8, 8, 0xdeadbeef00000001ull);
	ok(vcxl_rf_group_locked(&rf, gq) && vcxl_rf_group_locked(&rf, gd), "both locked now");
	is(vcxl_rf_get64(&rf, 0), 0xdeadbeef00000001ull,
	   "64-bit register: both halves merged under the masks before the access");
	is(vcxl_rf_get64(&rf, 8), 0xcafef00d00000001ull,
	   "two 32-bit registers: the second was locked by the first (ascending order)");
	vcxl_rf_fini(&rf);

	/* hooks: write hooks after the whole merge, read hooks for the whole register */
	vcxl_rf_init(&rf, 0x10);
	vcxl_rf_define(&rf, 0, 8, ~0ull, VCXL_RF_RW);
	vcxl_rf_access_rule(&rf, 0, 0x10, VCXL_RF_ACC_QWORD);
	vcxl_rf_hook(&rf, 0, 8, NULL, qw_hook, &log);
	vcxl_rf_write(&rf, 0, 8, 0x0123456789abcdefull);
	is(log.writes, 2, "write hook per dword of the register");
	is(log.seen[0], 0x0123456789abcdefull, "the low half's hook sees the new high half");
	vcxl_rf_fini(&rf);
	vcxl_rf_init(&rf, 0x10);
	vcxl_rf_access_rule(&rf, 0, 0x10, VCXL_RF_ACC_QWORD);
	vcxl_rf_hook(&rf, 0, 8, qr_hook, NULL, &log);
	log.reads = 0;
	vcxl_rf_read(&rf, 4, 4, &v);
	is(log.reads, 2, "a read of one half refreshes both halves");
	is(v, 0x5a000002, "and returns the half of that one snapshot");
	vcxl_rf_read(&rf, 0, 8, &v);
	is(v, 0x5a0000045a000003ull, "8-byte read: one refresh, one snapshot");

	/* bulk access: whole 8-byte quantities */
	uint8_t buf[16] = {0};
	memset(buf, 0xa5, sizeof(buf));
	ok(vcxl_rf_write_buf(&rf, 0, buf, 16) == 0, "bulk write over two 64-bit registers");
	ok(vcxl_rf_read_buf(&rf, 0, buf, 16) == 0, "bulk read over them");
	ok(vcxl_rf_read_buf(&rf, 4, buf, 8) == 0, "bulk read of halves (reads allowed)");
	ok(vcxl_rf_write_buf(&rf, 4, buf, 8) == -EINVAL, "bulk write of halves refused");
	vcxl_rf_fini(&rf);
}

/* Random layout; any access == the same bytes written one at a time. */
static uint64_t rng = 0x9e3779b97f4a7c15ull;
static uint64_t rnd(void)
{
	rng ^= rng << 13;
	rng ^= rng >> 7;
	rng ^= rng << 17;
	return rng;
}

static void setup_random(struct vcxl_regfile *rf, uint64_t seed)
{
	uint64_t save = rng;
	rng = seed;
	vcxl_rf_init(rf, 64);
	for (uint32_t o = 0; o < 64; o += 4) {
		uint32_t a = (uint32_t)rnd(), b = (uint32_t)rnd(), c = (uint32_t)rnd();
		vcxl_rf_init_val(rf, o, 4, rnd());
		vcxl_rf_define(rf, o, 4, a, VCXL_RF_RW);
		vcxl_rf_define(rf, o, 4, b & ~a, VCXL_RF_RW1C);
		vcxl_rf_define(rf, o, 4, c & ~a & ~b, VCXL_RF_RWO);
	}
	struct vcxl_rf_lock_field f[] = {{0x20, 0xffffffff}, {0x24, 0x0000ffff}};
	vcxl_rf_lock_group(rf, 0x00, 0x1, f, 2);
	rng = save;
}

static void test_split_equivalence(void)
{
	struct vcxl_regfile a, b;
	int mism = 0;
	setup_random(&a, 42);
	setup_random(&b, 42);
	for (int i = 0; i < 20000; i++) {
		unsigned len = 1u << (rnd() % 4);
		uint32_t off = (uint32_t)(rnd() % (64 - len + 1));
		uint64_t val = rnd();
		vcxl_rf_write(&a, off, len, val);
		for (unsigned k = 0; k < len; k++)
			vcxl_rf_write(&b, off + k, 1, (val >> (8 * k)) & 0xff);
		if (memcmp(a.val, b.val, 64) != 0)
			mism++;
		if (rnd() % 1000 == 0) {
			vcxl_rf_reset(&a);
			vcxl_rf_reset(&b);
		}
	}
	is(mism, 0, "20000 random writes: wide access == bytes one by one");
	vcxl_rf_fini(&a);
	vcxl_rf_fini(&b);
}

/* Migration state: the take ranges bound what a check and a load visit (a range
 * past the end is ignored, one over it clamped); a range saved and restored
 * brings back values, armed RWO bits and the locks they imply. */
static void test_state_ranges(void)
{
	struct vcxl_regfile rf;
	struct vcxl_rf_lock_field f[] = {{0x14, 0xffffffff}};
	uint8_t st[2 * 0x2000], saved[2 * 0x20];
	uint32_t bad = 0;
	uint64_t v;
	int g;

	vcxl_rf_init(&rf, 0x2000);
	vcxl_rf_define(&rf, 0x10, 4, 0x3ff, VCXL_RF_RW);
	vcxl_rf_define(&rf, 0x14, 4, 0xffffffff, VCXL_RF_RW);
	vcxl_rf_define(&rf, 0x18, 4, 0xff, VCXL_RF_RWO);
	vcxl_rf_init_val(&rf, 0x1800, 4, 0x12345678); /* read-only */
	g = vcxl_rf_lock_group(&rf, 0x10, 1u << 9, f, 1);

	vcxl_rf_save(&rf, st);
	st[0x1800] ^= 0x01;  /* a read-only bit changed, outside the first range */
	st[0x10 + 1] = 0x02; /* bit 9 set: the lock's condition */
	st[0x14] = 0xaa;
	{
		struct vcxl_rf_range take[] = {{0x10, 0x10}, {0x3000, 0x10}};
		struct vcxl_rf_range over[] = {{0x1ff0, 0x100}};

		is(vcxl_rf_check_state(&rf, st, sizeof(st), take, 2, NULL, 0, &bad), 0,
		   "check: a bad byte outside the take ranges passes (a range past the end "
		   "ignored)");
		is(vcxl_rf_check_state(&rf, st, sizeof(st), over, 1, NULL, 0, &bad), 0,
		   "check: a range over the end clamped");
		is(vcxl_rf_check_state(&rf, st, sizeof(st), NULL, 0, NULL, 0, &bad), -EINVAL,
		   "check: the whole file finds it");
		is(bad, 0x1800, "at its offset");
		take[0] = (struct vcxl_rf_range){0x1800, 4};
		bad = 0;
		is(vcxl_rf_check_state(&rf, st, sizeof(st), take, 1, NULL, 0, &bad), -EINVAL,
		   "check: a take range over it finds it");
		is(bad, 0x1800, "at its offset");

		vcxl_rf_save_range(&rf, 0x10, 0x20, saved);
		take[0] = (struct vcxl_rf_range){0x10, 0x10};
		vcxl_rf_load_state(&rf, st, take, 1);
		vcxl_rf_read(&rf, 0x14, 4, &v);
		is(v, 0xaa, "load: a byte in the take range loaded");
		is(vcxl_rf_get32(&rf, 0x1800), 0x12345678, "load: a byte outside it untouched");
		ok(vcxl_rf_group_locked(&rf, g), "load: the lock its condition implies");
		vcxl_rf_write(&rf, 0x18, 1, 0x5a); /* RWO: writable once */
		vcxl_rf_restore_range(&rf, 0x10, 0x20, saved);
		vcxl_rf_read(&rf, 0x14, 4, &v);
		is(v, 0, "restore: the value back");
		ok(!vcxl_rf_group_locked(&rf, g), "restore: the lock re-evaluated");
		vcxl_rf_read(&rf, 0x18, 4, &v);
		is(v, 0, "restore: the RWO byte's value back");
		vcxl_rf_write(&rf, 0x18, 1, 0x33);
		vcxl_rf_read(&rf, 0x18, 4, &v);
		is(v, 0x33, "restore: and its armed bits (writable once more)");
		vcxl_rf_restore_range(&rf, 0x1ff0, 0x20, saved);
		is(vcxl_rf_get32(&rf, 0x1ff0), 0, "restore: a range over the end does nothing");
	}
	vcxl_rf_fini(&rf);
}

/* zero_from: past it values and armed bits are zero, so a save hands out
 * the rest as a NULL piece (nothing read). Definitions of writable bits,
 * non-zero owner stores and loads raise it; a store of reserved bits alone
 * (kept 0) and a read-only definition do not. */
static void test_zero_from(void)
{
	struct vcxl_regfile rf;
	struct iovec iov[VCXL_RF_STATE_IOV];
	static uint8_t img[2 * 0x10000], cat[2 * 0x10000], st[2 * 0x10000];
	unsigned n;
	size_t at = 0;

	vcxl_rf_init(&rf, 0x10000);
	is(rf.zero_from, 0, "a new file: zero from byte 0");
	vcxl_rf_define(&rf, 0x3000, 4, 0xffffffff, VCXL_RF_RSVD);
	vcxl_rf_define(&rf, 0x2000, 4, 0xff, VCXL_RF_RO);
	is(rf.zero_from, 0, "reserved and read-only definitions: still 0");
	vcxl_rf_define(&rf, 0x1000, 4, 0xff, VCXL_RF_RW);
	vcxl_rf_define(&rf, 0x1010, 2, 0xf, VCXL_RF_RWO);
	is(rf.zero_from, 0x1011, "RW and RWO bits: up to the last byte with one (0x%x)",
	   rf.zero_from);
	vcxl_rf_init_val(&rf, 0x1800, 4, 0x00345600);
	is(rf.zero_from, 0x1803, "a read-only value: up to its last non-zero byte (0x%x)",
	   rf.zero_from);
	vcxl_rf_set32(&rf, 0x3000, 0xffffffff);
	is(rf.zero_from, 0x1803, "an owner store of reserved bits only (kept 0): unchanged");
	vcxl_rf_set32(&rf, 0x4000, 1);
	is(rf.zero_from, 0x4004, "an owner store past it: raised (0x%x)", rf.zero_from);
	vcxl_rf_set32(&rf, 0x4000, 0);
	is(rf.zero_from, 0x4004, "a watermark: not lowered by a store of 0");

	n = vcxl_rf_state_iov(&rf, iov);
	is(n, 4, "the state in 4 pieces");
	ok(iov[0].iov_base == rf.val && iov[0].iov_len == 0x4004 && !iov[1].iov_base &&
	       iov[1].iov_len == 0x10000 - 0x4004 && iov[2].iov_base == rf.rwo_armed &&
	       iov[2].iov_len == 0x4004 && !iov[3].iov_base,
	   "values and armed bits up to zero_from, each with its zero rest");
	vcxl_rf_save(&rf, img);
	for (unsigned i = 0; i < n; i++) {
		if (iov[i].iov_base)
			memcpy(cat + at, iov[i].iov_base, iov[i].iov_len);
		else
			memset(cat + at, 0, iov[i].iov_len);
		at += iov[i].iov_len;
	}
	ok(at == sizeof(img) && !memcmp(cat, img, sizeof(img)),
	   "the pieces, the NULL ones as zeros, are the saved state");

	/* a hostile state with bits past zero_from: the check, which no longer
	 * reads the live file there, still refuses them */
	{
		uint32_t bad = 0;

		memcpy(st, img, sizeof(st));
		st[0x9000] = 0x01; /* a read-only value past the watermark */
		is(vcxl_rf_check_state(&rf, st, sizeof(st), NULL, 0, NULL, 0, &bad), -EINVAL,
		   "a value past zero_from: refused");
		is(bad, 0x9000, "... at its offset");
		memcpy(st, img, sizeof(st));
		st[0x10000 + 0xa004] = 0x01; /* an armed RWO bit where no RWO bit is */
		bad = 0;
		is(vcxl_rf_check_state(&rf, st, sizeof(st), NULL, 0, NULL, 0, &bad), -EINVAL,
		   "an armed bit past zero_from: refused");
		is(bad, 0xa004, "... at its offset");
		memcpy(st, img, sizeof(st));
		st[0x3000] = 0x01; /* a reserved bit, defined past the old data */
		is(vcxl_rf_check_state(&rf, st, sizeof(st), NULL, 0, NULL, 0, &bad), -EINVAL,
		   "a reserved bit set: refused");
		struct vcxl_rf_range live[] = {{0x9000, 4}};
		memcpy(st, img, sizeof(st));
		st[0x9000] = 0x01;
		is(vcxl_rf_check_state(&rf, st, sizeof(st), NULL, 0, live, 1, &bad), 0,
		   "the same value in a live range: taken");
	}

	memcpy(st, img, sizeof(st));
	st[0x6002] = 0x40; /* a live read-only field another device set */
	vcxl_rf_load_state(&rf, st, NULL, 0);
	is(rf.zero_from, 0x6003, "a load that sets a byte past it: raised (0x%x)", rf.zero_from);
	is(vcxl_rf_get8(&rf, 0x6002), 0x40, "and the byte loaded");
	vcxl_rf_reset(&rf);
	n = vcxl_rf_state_iov(&rf, iov);
	is(n, 4, "a reset keeps the watermark (values back, zero_from 0x%x)", rf.zero_from);
	vcxl_rf_fini(&rf);

	vcxl_rf_init(&rf, 64);
	vcxl_rf_init_val(&rf, 60, 4, 0x80000000);
	is(vcxl_rf_state_iov(&rf, iov), 2, "a file set to its last byte: 2 pieces, no NULL one");
	vcxl_rf_fini(&rf);
}

int main(void)
{
	test_attrs();
	test_hooks_and_locks();
	test_dword_rule();
	test_qword_rule();
	test_split_equivalence();
	test_state_ranges();
	test_zero_from();
	return done();
}
