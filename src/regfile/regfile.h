/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The register engine: a register file is data.
 *
 * A file is a byte array plus per-byte attribute masks:
 *   RW    software-writable bits (RWL bits are RW bits that belong to a lock group)
 *   RW1C  write-1-to-clear bits (RW1CS: the "sticky" part is the owner's reset policy)
 *   RWO   write-once bits: writable until the first write that covers their byte,
 *         then read-only until vcxl_rf_reset()
 *   RSVD  reserved bits: read 0, writes ignored (the engine never stores them)
 * Every other bit is read-only (RO/HwInit); only the owner changes it, with
 * vcxl_rf_set*().
 *
 * Lock groups: a set of fields that turn read-only while a condition holds,
 * the condition being "all bits of cond_mask are set in the dword at cond_off"
 * (DVSEC CONFIG_LOCK; HDM Committed; HDM Lock-On-Commit + Committed).
 *
 * Hooks: per-dword callbacks. A write hook runs after the masked merge of the
 * bytes of its dword, with the dword's old and new value; a read hook runs
 * before the bytes of its dword are read (to refresh live fields).
 *
 * An access of 1, 2, 4 or 8 bytes is processed dword by dword in ascending
 * address order: merge, then hook, then lock re-evaluation. Hooks are
 * edge-triggered on the bits that changed, so an access gives the same result
 * as its bytes written one at a time in ascending order. The exception is a
 * 64-bit register (VCXL_RF_ACC_QWORD): one merge of its 8 bytes, then hooks.
 *
 * Access widths are data too, a rule per register (enum vcxl_rf_access); a
 * refused access changes nothing, returns -EINVAL and counts in `rejected`.
 *
 * Lookup is O(1): per-dword metadata arrays index hooks and lock conditions.
 */
#ifndef VCXL_REGFILE_H
#define VCXL_REGFILE_H

#include <endian.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/uio.h>

#define VCXL_RF_MAX_HOOKS	 255
#define VCXL_RF_MAX_GROUPS	 255
#define VCXL_RF_MAX_GROUP_FIELDS 16

enum vcxl_rf_attr {
	VCXL_RF_RO = 0,
	VCXL_RF_RW,
	VCXL_RF_RW1C,
	VCXL_RF_RWO,
	VCXL_RF_RSVD,
};

#define VCXL_RF_DWORD 4u /* bytes of a 32-bit register */
#define VCXL_RF_QWORD 8u /* bytes of a 64-bit register */

/* CXL r3.1 8.2.2 (component registers): a 32-bit register is one 4-byte quantity, a
 * 64-bit one one 8-byte quantity, naturally aligned, no partial reads. */
enum vcxl_rf_access {
	/* 1, 2, 4 or 8 bytes, any alignment, in ascending order */
	VCXL_RF_ACC_ANY = 0,
	/* a 32-bit register: naturally aligned 4 bytes. An aligned 8-byte access over
	 * two of them (not one quantity for the spec) is taken as the two 4-byte
	 * accesses in ascending order; 1/2 bytes and unaligned accesses are refused. */
	VCXL_RF_ACC_DWORD = 1,
	/* a 64-bit register (8-byte aligned; a rule range is a run of them): an aligned
	 * 8-byte access is one quantity (the read hooks of both halves, then one
	 * snapshot; one merge of both halves under the masks in effect before it, then
	 * the halves' write hooks, then locks). A 4-byte read of either half is
	 * answered with that half of one such snapshot (Linux reads the first dword of
	 * every CM capability); a 4-byte write of a half, which would tear the
	 * register, and every other width are refused. */
	VCXL_RF_ACC_QWORD = 2,
};

struct vcxl_regfile;

typedef void (*vcxl_rf_write_fn)(void *opaque, struct vcxl_regfile *rf, uint32_t dw_off,
				 uint32_t old, uint32_t val);
typedef void (*vcxl_rf_read_fn)(void *opaque, struct vcxl_regfile *rf, uint32_t dw_off);

struct vcxl_rf_hook {
	vcxl_rf_read_fn read;
	vcxl_rf_write_fn write;
	void *opaque;
};

struct vcxl_rf_lock_field {
	uint32_t off; /* dword aligned */
	uint32_t mask;
};

struct vcxl_rf_group {
	uint32_t cond_off;
	uint32_t cond_mask;
	uint8_t next_same_cond; /* chain of groups sharing a condition dword, 0 = end */
	bool locked;
	uint8_t n_fields;
	struct vcxl_rf_lock_field fields[VCXL_RF_MAX_GROUP_FIELDS];
};

struct vcxl_regfile {
	uint32_t size; /* bytes, multiple of 4 */
	uint8_t *val;
	uint8_t *reset_val;
	uint8_t *wmask;	    /* RW bits (before locks) */
	uint8_t *w1c;	    /* RW1C bits */
	uint8_t *rwo;	    /* RWO bits (definition) */
	uint8_t *rsvd;	    /* reserved bits */
	uint8_t *rwo_armed; /* RWO bits still writable */
	uint8_t *locked;    /* bits currently locked by a group */
	uint8_t *eff;	    /* effective writable bits: (wmask | rwo_armed) & ~locked */
	uint8_t *dw_hook;   /* per dword: hook index + 1, 0 = none */
	uint8_t *dw_acc;    /* per dword: enum vcxl_rf_access */
	uint8_t *dw_cond;   /* per dword: first group index + 1 conditioned on it */
	unsigned n_hooks;
	struct vcxl_rf_hook hooks[VCXL_RF_MAX_HOOKS];
	unsigned n_groups;
	struct vcxl_rf_group *groups;
	uint64_t rejected; /* accesses refused (-EINVAL), for diagnostics */
	/* val and rwo_armed are zero from this byte to the end: nothing there is
	 * writable or was ever set (a component block's 64 KiB has its registers
	 * in the first few KiB). Raised by every definition and owner store that
	 * can make a byte there non-zero; a migration's save and check skip past it. */
	uint32_t zero_from;
};

/* Lifecycle. size is rounded up to a multiple of 4. Returns 0 or -errno. */
int vcxl_rf_init(struct vcxl_regfile *rf, uint32_t size);
void vcxl_rf_fini(struct vcxl_regfile *rf);

/* Layout (owner side). width is 1, 2, 4 or 8 bytes; mask selects bits. */
int vcxl_rf_define(struct vcxl_regfile *rf, uint32_t off, unsigned width, uint64_t mask,
		   enum vcxl_rf_attr attr);
/* Set the value and the reset value (owner side: ignores attributes). */
int vcxl_rf_init_val(struct vcxl_regfile *rf, uint32_t off, unsigned width, uint64_t val);
/* The access rule of [off, off+len): dword aligned, qword aligned for QWORD. */
int vcxl_rf_access_rule(struct vcxl_regfile *rf, uint32_t off, uint32_t len,
			enum vcxl_rf_access rule);
/* Attach a hook to every dword in [off, off+len). Returns 0 or -errno. */
int vcxl_rf_hook(struct vcxl_regfile *rf, uint32_t off, uint32_t len, vcxl_rf_read_fn read,
		 vcxl_rf_write_fn write, void *opaque);
/* Add a lock group; returns the group index (>= 0) or -errno. */
int vcxl_rf_lock_group(struct vcxl_regfile *rf, uint32_t cond_off, uint32_t cond_mask,
		       const struct vcxl_rf_lock_field *fields, unsigned n);

/* Software (guest / client) access, attribute-checked. 0 or -EINVAL. */
int vcxl_rf_read(struct vcxl_regfile *rf, uint32_t off, unsigned len, uint64_t *val);
int vcxl_rf_write(struct vcxl_regfile *rf, uint32_t off, unsigned len, uint64_t val);
/* Bulk access of any length, split into the widest accesses the rules allow. */
int vcxl_rf_read_buf(struct vcxl_regfile *rf, uint32_t off, void *buf, size_t len);
int vcxl_rf_write_buf(struct vcxl_regfile *rf, uint32_t off, const void *buf, size_t len);

/* Owner (hardware) access: no attribute checks, no hooks; locks re-evaluated. */
uint8_t vcxl_rf_get8(const struct vcxl_regfile *rf, uint32_t off);
uint16_t vcxl_rf_get16(const struct vcxl_regfile *rf, uint32_t off);
uint32_t vcxl_rf_get32_slow(const struct vcxl_regfile *rf, uint32_t off);
uint64_t vcxl_rf_get64(const struct vcxl_regfile *rf, uint32_t off);

/* The hot owner read (hooks and live-field refreshes): inline when in range. */
static inline uint32_t vcxl_rf_get32(const struct vcxl_regfile *rf, uint32_t off)
{
	if (off <= rf->size && rf->size - off >= 4) {
		uint32_t v;
		__builtin_memcpy(&v, rf->val + off, 4);
		return le32toh(v);
	}
	return vcxl_rf_get32_slow(rf, off);
}
void vcxl_rf_set8(struct vcxl_regfile *rf, uint32_t off, uint8_t v);
void vcxl_rf_set16(struct vcxl_regfile *rf, uint32_t off, uint16_t v);
void vcxl_rf_set32(struct vcxl_regfile *rf, uint32_t off, uint32_t v);
/* Owner update of selected bits only: val = (val & ~mask) | (v & mask). */
void vcxl_rf_update32(struct vcxl_regfile *rf, uint32_t off, uint32_t mask, uint32_t v);

/* Restore every value to its reset value, re-arm RWO bits, re-evaluate locks. */
void vcxl_rf_reset(struct vcxl_regfile *rf);
/* Restore a byte range to its reset value (e.g. one decoder). */
void vcxl_rf_reset_range(struct vcxl_regfile *rf, uint32_t off, uint32_t len);
/* Re-evaluate every lock group (after bulk owner changes). */
void vcxl_rf_update_locks(struct vcxl_regfile *rf);

/* Introspection for tests and fuzzers. */
bool vcxl_rf_group_locked(const struct vcxl_regfile *rf, int group);
/* Bits software can change right now (RW + armed RWO, minus locked; plus RW1C). */
uint8_t vcxl_rf_writable8(const struct vcxl_regfile *rf, uint32_t off);

/* Migration (docs/migration.md): a file's state is its values and its RWO bits
 * still armed; locks and effective masks follow from them. The state is
 * 2 * size bytes: val, then rwo_armed. */
struct vcxl_rf_range {
	uint32_t off, len;
};
static inline size_t vcxl_rf_state_len(const struct vcxl_regfile *rf)
{
	return 2 * (size_t)rf->size;
}
void vcxl_rf_save(const struct vcxl_regfile *rf, uint8_t *out);
/* The same state as pieces in place, for a writer that copies them itself
 * (vcxl_mig_put_section): values, then armed bits, each up to zero_from and
 * then its zero rest as a piece with iov_base NULL. Returns the count. */
#define VCXL_RF_STATE_IOV 4
unsigned vcxl_rf_state_iov(const struct vcxl_regfile *rf, struct iovec iov[VCXL_RF_STATE_IOV]);
/* Check a saved state against this file's layout, for the bytes of the take
 * ranges (ntake 0: the whole file): reserved bits 0, armed RWO bits among the
 * RWO bits, and every read-only bit equal to this file's, except in the live
 * ranges (bits the owner changes: status, Committed). 0, or -EINVAL with the
 * first bad byte's offset in *bad_off. */
int vcxl_rf_check_state(const struct vcxl_regfile *rf, const uint8_t *st, size_t len,
			const struct vcxl_rf_range *take, unsigned ntake,
			const struct vcxl_rf_range *live, unsigned nlive, uint32_t *bad_off);
/* Install a checked state's take ranges (no hooks); locks re-evaluated. */
void vcxl_rf_load_state(struct vcxl_regfile *rf, const uint8_t *st,
			const struct vcxl_rf_range *take, unsigned ntake);
/* One range's values and armed RWO bits (2 * len bytes: values, then armed
 * bits) and back (an owner's scratch evaluation of a state); the restore
 * re-evaluates locks. An out-of-range range does nothing. */
void vcxl_rf_save_range(const struct vcxl_regfile *rf, uint32_t off, uint32_t len, uint8_t *out);
void vcxl_rf_restore_range(struct vcxl_regfile *rf, uint32_t off, uint32_t len, const uint8_t *in);

#endif /* VCXL_REGFILE_H */
