// SPDX-License-Identifier: BSD-3-Clause
/* The register engine: masked merge, RW1C, RWO, lock groups, hooks (see regfile.h). */
#include "regfile/regfile.h"

#include <endian.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>

enum { RF_ARRAYS = 9 };

int vcxl_rf_init(struct vcxl_regfile *rf, uint32_t size)
{
	memset(rf, 0, sizeof(*rf));
	if (size == 0 || size > (1u << 24))
		return -EINVAL;
	size = (size + 3u) & ~3u;
	uint32_t ndw = size / 4;
	uint8_t *mem = calloc((size_t)size * RF_ARRAYS + (size_t)ndw * 3, 1);
	if (!mem)
		return -ENOMEM;
	rf->size = size;
	rf->val = mem;
	rf->reset_val = mem + size;
	rf->wmask = mem + 2 * size;
	rf->w1c = mem + 3 * size;
	rf->rwo = mem + 4 * size;
	rf->rsvd = mem + 5 * size;
	rf->rwo_armed = mem + 6 * size;
	rf->locked = mem + 7 * size;
	rf->eff = mem + 8 * size;
	rf->dw_hook = mem + (size_t)RF_ARRAYS * size;
	rf->dw_acc = rf->dw_hook + ndw;
	rf->dw_cond = rf->dw_acc + ndw;
	return 0;
}

void vcxl_rf_fini(struct vcxl_regfile *rf)
{
	free(rf->val);
	free(rf->groups);
	memset(rf, 0, sizeof(*rf));
}

static bool rf_range_ok(const struct vcxl_regfile *rf, uint32_t off, uint64_t len)
{
	return len <= rf->size && off <= rf->size - len;
}

/* Bytes up to end (within the file) may now be non-zero: zero_from follows */
static void rf_may_set(struct vcxl_regfile *rf, uint32_t end)
{
	if (end > rf->zero_from)
		rf->zero_from = end;
}

/* Little-endian load of n bytes at off (0 outside the file). */
static inline uint64_t rf_load(const struct vcxl_regfile *rf, uint32_t off, unsigned n)
{
	uint64_t v = 0;
	if (rf_range_ok(rf, off, n)) {
		const uint8_t *p = rf->val + off;
		uint32_t v32;
		uint16_t v16;
		/* fixed-size copies compile to single loads (no call, no stall) */
		switch (n) {
		case 1:
			return *p;
		case 2:
			memcpy(&v16, p, 2);
			return le16toh(v16);
		case 4:
			memcpy(&v32, p, 4);
			return le32toh(v32);
		case 8:
			memcpy(&v, p, 8);
			return le64toh(v);
		default:
			break;
		}
	}
	for (unsigned b = 0; b < n; b++)
		v |= (uint64_t)vcxl_rf_get8(rf, off + b) << (8 * b);
	return v;
}

static void rf_refresh_eff(struct vcxl_regfile *rf, uint32_t i)
{
	rf->eff[i] = (uint8_t)((rf->wmask[i] | rf->rwo_armed[i]) & ~rf->locked[i]);
}

/* rf_refresh_eff over [off, off + len), eight bytes at a time (a reset of a
 * 64 KiB component block does this for every byte) */
static void rf_refresh_eff_range(struct vcxl_regfile *rf, uint32_t off, uint32_t len)
{
	uint32_t i = off, end = off + len;

	for (; i + 8 <= end; i += 8) {
		uint64_t w, a, l, e;
		memcpy(&w, rf->wmask + i, 8);
		memcpy(&a, rf->rwo_armed + i, 8);
		memcpy(&l, rf->locked + i, 8);
		e = (w | a) & ~l;
		memcpy(rf->eff + i, &e, 8);
	}
	for (; i < end; i++)
		rf_refresh_eff(rf, i);
}

int vcxl_rf_define(struct vcxl_regfile *rf, uint32_t off, unsigned width, uint64_t mask,
		   enum vcxl_rf_attr attr)
{
	if (width == 0 || width > 8 || !rf_range_ok(rf, off, width))
		return -EINVAL;
	for (unsigned b = 0; b < width; b++) {
		uint8_t m = (uint8_t)(mask >> (8 * b));
		uint32_t i = off + b;
		if (!m)
			continue;
		rf->wmask[i] &= (uint8_t)~m;
		rf->w1c[i] &= (uint8_t)~m;
		rf->rwo[i] &= (uint8_t)~m;
		rf->rwo_armed[i] &= (uint8_t)~m;
		rf->rsvd[i] &= (uint8_t)~m;
		switch (attr) {
		case VCXL_RF_RO:
			break;
		case VCXL_RF_RW:
			rf->wmask[i] |= m;
			rf_may_set(rf, i + 1);
			break;
		case VCXL_RF_RW1C:
			rf->w1c[i] |= m;
			rf_may_set(rf, i + 1);
			break;
		case VCXL_RF_RWO:
			rf->rwo[i] |= m;
			rf->rwo_armed[i] |= m;
			rf_may_set(rf, i + 1);
			break;
		case VCXL_RF_RSVD:
			rf->rsvd[i] |= m;
			rf->val[i] &= (uint8_t)~m;
			rf->reset_val[i] &= (uint8_t)~m;
			break;
		}
		rf_refresh_eff(rf, i);
	}
	return 0;
}

int vcxl_rf_init_val(struct vcxl_regfile *rf, uint32_t off, unsigned width, uint64_t val)
{
	if (width == 0 || width > 8 || !rf_range_ok(rf, off, width))
		return -EINVAL;
	for (unsigned b = 0; b < width; b++) {
		uint8_t v = (uint8_t)(val >> (8 * b));
		v &= (uint8_t)~rf->rsvd[off + b];
		rf->val[off + b] = v;
		rf->reset_val[off + b] = v;
		if (v)
			rf_may_set(rf, off + b + 1);
	}
	vcxl_rf_update_locks(rf);
	return 0;
}

int vcxl_rf_access_rule(struct vcxl_regfile *rf, uint32_t off, uint32_t len,
			enum vcxl_rf_access rule)
{
	uint32_t gran = rule == VCXL_RF_ACC_QWORD ? VCXL_RF_QWORD : VCXL_RF_DWORD;

	if (!rf_range_ok(rf, off, len) || (off & (gran - 1)) || (len & (gran - 1)) ||
	    rule > VCXL_RF_ACC_QWORD)
		return -EINVAL;
	for (uint32_t d = off / 4; d < (off + len) / 4; d++)
		rf->dw_acc[d] = (uint8_t)rule;
	return 0;
}

int vcxl_rf_hook(struct vcxl_regfile *rf, uint32_t off, uint32_t len, vcxl_rf_read_fn read,
		 vcxl_rf_write_fn write, void *opaque)
{
	if (!rf_range_ok(rf, off, len) || len == 0)
		return -EINVAL;
	if (rf->n_hooks >= VCXL_RF_MAX_HOOKS)
		return -ENOSPC;
	struct vcxl_rf_hook *h = &rf->hooks[rf->n_hooks++];
	h->read = read;
	h->write = write;
	h->opaque = opaque;
	for (uint32_t d = off / 4; d <= (off + len - 1) / 4; d++)
		rf->dw_hook[d] = (uint8_t)rf->n_hooks;
	return 0;
}

/* Recompute locked[] for all bytes named by any group, then eff[] for them. */
static void rf_recompute_locked(struct vcxl_regfile *rf)
{
	for (unsigned g = 0; g < rf->n_groups; g++) {
		const struct vcxl_rf_group *grp = &rf->groups[g];
		for (unsigned f = 0; f < grp->n_fields; f++)
			for (unsigned b = 0; b < 4; b++)
				rf->locked[grp->fields[f].off + b] = 0;
	}
	for (unsigned g = 0; g < rf->n_groups; g++) {
		const struct vcxl_rf_group *grp = &rf->groups[g];
		if (!grp->locked)
			continue;
		for (unsigned f = 0; f < grp->n_fields; f++)
			for (unsigned b = 0; b < 4; b++)
				rf->locked[grp->fields[f].off + b] |=
				    (uint8_t)(grp->fields[f].mask >> (8 * b));
	}
	for (unsigned g = 0; g < rf->n_groups; g++) {
		const struct vcxl_rf_group *grp = &rf->groups[g];
		for (unsigned f = 0; f < grp->n_fields; f++)
			for (unsigned b = 0; b < 4; b++)
				rf_refresh_eff(rf, grp->fields[f].off + b);
	}
}

static bool rf_group_cond(const struct vcxl_regfile *rf, const struct vcxl_rf_group *grp)
{
	return (vcxl_rf_get32(rf, grp->cond_off) & grp->cond_mask) == grp->cond_mask;
}

/* Re-evaluate the groups whose condition lives in dword d (O(groups on d)). */
static void rf_eval_cond_dword(struct vcxl_regfile *rf, uint32_t d)
{
	bool changed = false;
	for (unsigned g = rf->dw_cond[d]; g; g = rf->groups[g - 1].next_same_cond) {
		struct vcxl_rf_group *grp = &rf->groups[g - 1];
		bool now = rf_group_cond(rf, grp);
		if (now != grp->locked) {
			grp->locked = now;
			changed = true;
		}
	}
	if (changed)
		rf_recompute_locked(rf);
}

int vcxl_rf_lock_group(struct vcxl_regfile *rf, uint32_t cond_off, uint32_t cond_mask,
		       const struct vcxl_rf_lock_field *fields, unsigned n)
{
	if ((cond_off & 3) || !rf_range_ok(rf, cond_off, 4) || cond_mask == 0 ||
	    n > VCXL_RF_MAX_GROUP_FIELDS)
		return -EINVAL;
	for (unsigned f = 0; f < n; f++)
		if ((fields[f].off & 3) || !rf_range_ok(rf, fields[f].off, 4))
			return -EINVAL;
	if (rf->n_groups >= VCXL_RF_MAX_GROUPS)
		return -ENOSPC;
	struct vcxl_rf_group *ng = realloc(rf->groups, sizeof(*ng) * (rf->n_groups + 1));
	if (!ng)
		return -ENOMEM;
	rf->groups = ng;
	struct vcxl_rf_group *grp = &rf->groups[rf->n_groups];
	memset(grp, 0, sizeof(*grp));
	grp->cond_off = cond_off;
	grp->cond_mask = cond_mask;
	grp->n_fields = (uint8_t)n;
	memcpy(grp->fields, fields, sizeof(*fields) * n);
	grp->next_same_cond = rf->dw_cond[cond_off / 4];
	rf->dw_cond[cond_off / 4] = (uint8_t)(rf->n_groups + 1);
	int idx = (int)rf->n_groups++;
	grp->locked = rf_group_cond(rf, grp);
	rf_recompute_locked(rf);
	return idx;
}

void vcxl_rf_update_locks(struct vcxl_regfile *rf)
{
	for (unsigned g = 0; g < rf->n_groups; g++)
		rf->groups[g].locked = rf_group_cond(rf, &rf->groups[g]);
	rf_recompute_locked(rf);
}

bool vcxl_rf_group_locked(const struct vcxl_regfile *rf, int group)
{
	if (group < 0 || (unsigned)group >= rf->n_groups)
		return false;
	return rf->groups[group].locked;
}

uint8_t vcxl_rf_writable8(const struct vcxl_regfile *rf, uint32_t off)
{
	if (off >= rf->size)
		return 0;
	return (uint8_t)(rf->eff[off] | rf->w1c[off]);
}

/* Whether a 4-byte access at aligned off needs the slow path: a half of a 64-bit register. */
static inline bool rf_in_qword(const struct vcxl_regfile *rf, uint32_t off)
{
	return rf->dw_acc[off / 4] == VCXL_RF_ACC_QWORD;
}

/* Access checks: range, width, and each dword's rule (regfile.h, enum vcxl_rf_access). */
static inline int rf_check(const struct vcxl_regfile *rf, uint32_t off, unsigned len, bool write)
{
	if (!(len == 1 || len == 2 || len == 4 || len == 8) || !rf_range_ok(rf, off, len))
		return -EINVAL;
	/* the common case: one aligned dword of a 32-bit register, which every rule allows */
	if (len == 4 && !(off & 3) && !rf_in_qword(rf, off))
		return 0;
	bool aligned = !(off & (len - 1));
	for (uint32_t d = off / 4; d <= (off + len - 1) / 4; d++) {
		switch (rf->dw_acc[d]) {
		case VCXL_RF_ACC_DWORD:
			if (len < VCXL_RF_DWORD || !aligned)
				return -EINVAL;
			break;
		case VCXL_RF_ACC_QWORD:
			/* aligned 8 bytes = the whole register; a 4-byte half: reads only */
			if (!aligned || !(len == VCXL_RF_QWORD || (len == VCXL_RF_DWORD && !write)))
				return -EINVAL;
			break;
		default:
			break;
		}
	}
	return 0;
}

/* The dwords [*first, *last] whose read hooks an access of [off, off+len) runs: its
 * own, widened to whole 64-bit registers (one snapshot of the register). */
static inline void rf_hook_span(const struct vcxl_regfile *rf, uint32_t off, unsigned len,
				uint32_t *first, uint32_t *last)
{
	*first = off / 4;
	*last = (off + len - 1) / 4;
	if (rf->dw_acc[*first] == VCXL_RF_ACC_QWORD)
		*first &= ~1u;
	if (rf->dw_acc[*last] == VCXL_RF_ACC_QWORD)
		*last |= 1u;
}

int vcxl_rf_read(struct vcxl_regfile *rf, uint32_t off, unsigned len, uint64_t *val)
{
	if (len == 4 && !(off & 3) && off < rf->size && !rf_in_qword(rf, off)) {
		/* one aligned dword of a 32-bit register */
		unsigned h = rf->dw_hook[off / 4];
		if (h && rf->hooks[h - 1].read)
			rf->hooks[h - 1].read(rf->hooks[h - 1].opaque, rf, off);
		uint32_t v32;
		memcpy(&v32, rf->val + off, 4);
		*val = le32toh(v32);
		return 0;
	}
	int rc = rf_check(rf, off, len, false);
	if (rc) {
		rf->rejected++;
		return rc;
	}
	uint32_t first, last;
	rf_hook_span(rf, off, len, &first, &last);
	for (uint32_t d = first; d <= last; d++) {
		unsigned h = rf->dw_hook[d];
		if (h && rf->hooks[h - 1].read)
			rf->hooks[h - 1].read(rf->hooks[h - 1].opaque, rf, d * 4);
	}
	*val = rf_load(rf, off, len);
	return 0;
}

/* Merge the bytes [lo, hi) of one dword under the current masks. */
static void rf_merge(struct vcxl_regfile *rf, uint32_t lo, uint32_t hi, uint32_t off, uint64_t v)
{
	for (uint32_t i = lo; i < hi; i++) {
		uint8_t nb = (uint8_t)(v >> (8 * (i - off)));
		uint8_t m = rf->eff[i];
		uint8_t cur = (uint8_t)((rf->val[i] & ~m) | (nb & m));
		cur &= (uint8_t) ~(nb & rf->w1c[i]);
		rf->val[i] = cur;
		if (rf->rwo_armed[i]) {
			rf->rwo_armed[i] = 0;
			rf_refresh_eff(rf, i);
		}
	}
}

/* The common case: one aligned dword, merged with 32-bit masks. */
static void rf_write_dword(struct vcxl_regfile *rf, uint32_t off, uint32_t val)
{
	uint32_t old, m, c, armed, nv;
	memcpy(&old, rf->val + off, 4);
	memcpy(&m, rf->eff + off, 4);
	memcpy(&c, rf->w1c + off, 4);
	memcpy(&armed, rf->rwo_armed + off, 4);
	old = le32toh(old);
	m = le32toh(m);
	c = le32toh(c);
	nv = (old & ~m) | (val & m);
	nv &= ~(val & c);
	nv = htole32(nv);
	memcpy(rf->val + off, &nv, 4);
	if (armed) {
		memset(rf->rwo_armed + off, 0, 4);
		for (unsigned b = 0; b < 4; b++)
			rf_refresh_eff(rf, off + b);
	}
	unsigned h = rf->dw_hook[off / 4];
	if (h && rf->hooks[h - 1].write)
		rf->hooks[h - 1].write(rf->hooks[h - 1].opaque, rf, off, old,
				       vcxl_rf_get32(rf, off));
	if (rf->dw_cond[off / 4])
		rf_eval_cond_dword(rf, off / 4);
}

/* One 64-bit register (rf_check passed: 8 aligned bytes): one merge of both halves
 * under the masks in effect before the access, then each half's hook, then locks. */
static void rf_write_qword(struct vcxl_regfile *rf, uint32_t off, uint64_t val)
{
	uint32_t old[2] = {vcxl_rf_get32(rf, off), vcxl_rf_get32(rf, off + 4)};

	rf_merge(rf, off, off + VCXL_RF_QWORD, off, val);
	for (uint32_t k = 0; k < 2; k++) {
		uint32_t d = off / 4 + k;
		unsigned h = rf->dw_hook[d];
		if (h && rf->hooks[h - 1].write)
			rf->hooks[h - 1].write(rf->hooks[h - 1].opaque, rf, d * 4, old[k],
					       vcxl_rf_get32(rf, d * 4));
	}
	for (uint32_t d = off / 4; d <= off / 4 + 1; d++)
		if (rf->dw_cond[d])
			rf_eval_cond_dword(rf, d);
}

int vcxl_rf_write(struct vcxl_regfile *rf, uint32_t off, unsigned len, uint64_t val)
{
	int rc = rf_check(rf, off, len, true);
	if (rc) {
		rf->rejected++;
		return rc;
	}
	if (len == 4 && !(off & 3)) {
		rf_write_dword(rf, off, (uint32_t)val);
		return 0;
	}
	if (len == VCXL_RF_QWORD && rf_in_qword(rf, off)) {
		rf_write_qword(rf, off, val);
		return 0;
	}
	uint32_t end = off + len;
	for (uint32_t d = off / 4; d <= (end - 1) / 4; d++) {
		uint32_t lo = d * 4 > off ? d * 4 : off;
		uint32_t hi = d * 4 + 4 < end ? d * 4 + 4 : end;
		uint32_t old = vcxl_rf_get32(rf, d * 4);
		rf_merge(rf, lo, hi, off, val);
		unsigned h = rf->dw_hook[d];
		if (h && rf->hooks[h - 1].write)
			rf->hooks[h - 1].write(rf->hooks[h - 1].opaque, rf, d * 4, old,
					       vcxl_rf_get32(rf, d * 4));
		if (rf->dw_cond[d])
			rf_eval_cond_dword(rf, d);
	}
	return 0;
}

/* Widest access at off for a bulk transfer with `left` bytes remaining. */
static unsigned rf_chunk(const struct vcxl_regfile *rf, uint32_t off, size_t left)
{
	if (rf->dw_acc[off / 4] == VCXL_RF_ACC_QWORD)
		return !(off & (VCXL_RF_QWORD - 1)) && left >= VCXL_RF_QWORD ? VCXL_RF_QWORD
									     : VCXL_RF_DWORD;
	if (rf->dw_acc[off / 4] == VCXL_RF_ACC_DWORD)
		return 4;
	if (!(off & 3) && left >= 4)
		return 4;
	if (!(off & 1) && left >= 2)
		return 2;
	return 1;
}

static int rf_check_buf(const struct vcxl_regfile *rf, uint32_t off, size_t len, bool write)
{
	if (len == 0 || !rf_range_ok(rf, off, len))
		return -EINVAL;
	for (uint32_t p = off; p < off + len;) {
		unsigned w = rf_chunk(rf, p, off + len - p);
		if (rf_check(rf, p, w, write))
			return -EINVAL;
		p += w;
	}
	return 0;
}

int vcxl_rf_read_buf(struct vcxl_regfile *rf, uint32_t off, void *buf, size_t len)
{
	if (rf_check_buf(rf, off, len, false)) {
		rf->rejected++;
		return -EINVAL;
	}
	uint8_t *out = buf;
	for (uint32_t p = off; p < off + len;) {
		unsigned w = rf_chunk(rf, p, off + len - p);
		uint64_t v = 0;
		vcxl_rf_read(rf, p, w, &v);
		for (unsigned b = 0; b < w; b++)
			out[p - off + b] = (uint8_t)(v >> (8 * b));
		p += w;
	}
	return 0;
}

int vcxl_rf_write_buf(struct vcxl_regfile *rf, uint32_t off, const void *buf, size_t len)
{
	if (rf_check_buf(rf, off, len, true)) {
		rf->rejected++;
		return -EINVAL;
	}
	const uint8_t *in = buf;
	for (uint32_t p = off; p < off + len;) {
		unsigned w = rf_chunk(rf, p, off + len - p);
		uint64_t v = 0;
		for (unsigned b = 0; b < w; b++)
			v |= (uint64_t)in[p - off + b] << (8 * b);
		vcxl_rf_write(rf, p, w, v);
		p += w;
	}
	return 0;
}

uint8_t vcxl_rf_get8(const struct vcxl_regfile *rf, uint32_t off)
{
	return off < rf->size ? rf->val[off] : 0;
}

uint16_t vcxl_rf_get16(const struct vcxl_regfile *rf, uint32_t off)
{
	return (uint16_t)rf_load(rf, off, 2);
}

uint32_t vcxl_rf_get32_slow(const struct vcxl_regfile *rf, uint32_t off)
{
	return (uint32_t)rf_load(rf, off, 4);
}

uint64_t vcxl_rf_get64(const struct vcxl_regfile *rf, uint32_t off)
{
	return rf_load(rf, off, 8);
}

static void rf_set_bytes(struct vcxl_regfile *rf, uint32_t off, unsigned n, uint64_t v)
{
	uint64_t stored = 0;

	if (!rf_range_ok(rf, off, n))
		return;
	if (n == 4) {
		uint32_t rsvd, le;
		memcpy(&rsvd, rf->rsvd + off, 4);
		le = htole32((uint32_t)v) & ~rsvd;
		memcpy(rf->val + off, &le, 4);
		stored = le;
	} else {
		for (unsigned b = 0; b < n; b++)
			stored |= rf->val[off + b] = (uint8_t)((v >> (8 * b)) & ~rf->rsvd[off + b]);
	}
	if (stored)
		rf_may_set(rf, off + n);
	for (uint32_t d = off / 4; d <= (off + n - 1) / 4; d++)
		if (rf->dw_cond[d])
			rf_eval_cond_dword(rf, d);
}

void vcxl_rf_set8(struct vcxl_regfile *rf, uint32_t off, uint8_t v)
{
	rf_set_bytes(rf, off, 1, v);
}

void vcxl_rf_set16(struct vcxl_regfile *rf, uint32_t off, uint16_t v)
{
	rf_set_bytes(rf, off, 2, v);
}

void vcxl_rf_set32(struct vcxl_regfile *rf, uint32_t off, uint32_t v)
{
	rf_set_bytes(rf, off, 4, v);
}

void vcxl_rf_update32(struct vcxl_regfile *rf, uint32_t off, uint32_t mask, uint32_t v)
{
	uint32_t old = vcxl_rf_get32(rf, off), nv = (old & ~mask) | (v & mask);
	if (nv != old) /* live-field refreshes mostly find nothing changed */
		vcxl_rf_set32(rf, off, nv);
}

void vcxl_rf_reset_range(struct vcxl_regfile *rf, uint32_t off, uint32_t len)
{
	if (!rf_range_ok(rf, off, len))
		return;
	memcpy(rf->val + off, rf->reset_val + off, len);
	memcpy(rf->rwo_armed + off, rf->rwo + off, len);
	rf_refresh_eff_range(rf, off, len);
	vcxl_rf_update_locks(rf);
}

void vcxl_rf_reset(struct vcxl_regfile *rf)
{
	vcxl_rf_reset_range(rf, 0, rf->size);
}

/* ---- migration state ---------------------------------------------------- */

void vcxl_rf_save(const struct vcxl_regfile *rf, uint8_t *out)
{
	memcpy(out, rf->val, rf->size);
	memcpy(out + rf->size, rf->rwo_armed, rf->size);
}

unsigned vcxl_rf_state_iov(const struct vcxl_regfile *rf, struct iovec iov[VCXL_RF_STATE_IOV])
{
	uint32_t z = rf->zero_from < rf->size ? rf->zero_from : rf->size;
	unsigned n = 0;

	for (unsigned half = 0; half < 2; half++) {
		iov[n++] = (struct iovec){.iov_base = half ? rf->rwo_armed : rf->val, .iov_len = z};
		if (z < rf->size)
			iov[n++] = (struct iovec){.iov_base = NULL, .iov_len = rf->size - z};
	}
	return n;
}

/* Bytes rf_block_unchanged() looks at in one go */
#define RF_BLOCK 64u

/* Whether the RF_BLOCK bytes at i (i % RF_BLOCK == 0) of a saved state equal
 * the live values and armed bits, and the live bytes keep the state rules
 * (no reserved bit set, armed bits only among the RWO bits): then checking
 * or loading them is a no-op, whatever the ranges. Most of a 64 KiB
 * component block is such blocks; the byte loops are for the rest. */
static bool rf_block_unchanged(const struct vcxl_regfile *rf, const uint8_t *st, uint32_t i)
{
	uint64_t v[RF_BLOCK / 8], a[RF_BLOCK / 8], rsvd[RF_BLOCK / 8], rwo[RF_BLOCK / 8], bad = 0;

	if (rf->size - i < RF_BLOCK || memcmp(st + i, rf->val + i, RF_BLOCK) ||
	    memcmp(st + rf->size + i, rf->rwo_armed + i, RF_BLOCK))
		return false;
	memcpy(v, rf->val + i, RF_BLOCK);
	memcpy(a, rf->rwo_armed + i, RF_BLOCK);
	memcpy(rsvd, rf->rsvd + i, RF_BLOCK);
	memcpy(rwo, rf->rwo + i, RF_BLOCK);
	for (unsigned k = 0; k < RF_BLOCK / 8; k++)
		bad |= (v[k] & rsvd[k]) | (a[k] & ~rwo[k]);
	return !bad;
}

/* Bytes rf_chunk_zero() looks at in one go */
#define RF_CHUNK 4096u
static const uint8_t rf_zero[RF_CHUNK];

/* Whether the RF_CHUNK bytes at i (i % RF_CHUNK == 0) of a saved state and of
 * the live file are all zero, values and armed bits: zero bytes keep every
 * state rule and equal each other, so checking or loading them is a no-op.
 * Most of a component block is such chunks (a vector compare each). */
static bool rf_chunk_zero(const struct vcxl_regfile *rf, const uint8_t *st, uint32_t i)
{
	bool live_zero = i >= rf->zero_from; /* known without reading them */

	return rf->size - i >= RF_CHUNK && !memcmp(st + i, rf_zero, RF_CHUNK) &&
	       !memcmp(st + rf->size + i, rf_zero, RF_CHUNK) &&
	       (live_zero || (!memcmp(rf->val + i, rf_zero, RF_CHUNK) &&
			      !memcmp(rf->rwo_armed + i, rf_zero, RF_CHUNK)));
}

/* Bytes from i (a multiple of RF_BLOCK) that checking or loading may skip */
static uint32_t rf_skip(const struct vcxl_regfile *rf, const uint8_t *st, uint32_t i)
{
	if (i % RF_CHUNK == 0 && rf_chunk_zero(rf, st, i))
		return RF_CHUNK;
	return rf_block_unchanged(rf, st, i) ? RF_BLOCK : 0;
}

static bool rf_in_ranges(uint32_t i, const struct vcxl_rf_range *r, unsigned n)
{
	for (unsigned k = 0; k < n; k++)
		if (i >= r[k].off && i - r[k].off < r[k].len)
			return true;
	return false;
}

/* The end of [r.off, r.off + r.len) within the file */
static uint32_t rf_range_end(const struct vcxl_regfile *rf, const struct vcxl_rf_range *r)
{
	uint64_t end = (uint64_t)r->off + r->len;

	return end < rf->size ? (uint32_t)end : rf->size;
}

/* Check bytes [lo, hi) of a saved state: 0, or -EINVAL with the first bad byte */
static int rf_check_bytes(const struct vcxl_regfile *rf, const uint8_t *st, uint32_t lo,
			  uint32_t hi, const struct vcxl_rf_range *live, unsigned nlive,
			  uint32_t *bad_off)
{
	const uint8_t *val = st, *armed = st + rf->size;

	for (uint32_t i = lo, skip; i < hi; i++) {
		uint8_t ro;

		if (i % RF_BLOCK == 0 && (skip = rf_skip(rf, st, i))) {
			i += skip - 1; /* as the live state's bytes: they pass */
			continue;
		}
		ro = (uint8_t) ~(rf->wmask[i] | rf->w1c[i] | rf->rwo[i] | rf->rsvd[i]);
		if ((val[i] & rf->rsvd[i]) || (armed[i] & ~rf->rwo[i]) ||
		    (!rf_in_ranges(i, live, nlive) && ((val[i] ^ rf->val[i]) & ro))) {
			*bad_off = i;
			return -EINVAL;
		}
	}
	return 0;
}

/* Load bytes [lo, hi) of a saved state (locks re-evaluated by the caller) */
static void rf_load_bytes(struct vcxl_regfile *rf, const uint8_t *st, uint32_t lo, uint32_t hi)
{
	for (uint32_t i = lo, skip; i < hi; i++) {
		if (i % RF_BLOCK == 0 && (skip = rf_skip(rf, st, i))) {
			i += skip - 1; /* loading them would change nothing */
			continue;
		}
		rf->val[i] = st[i];
		rf->rwo_armed[i] = st[rf->size + i];
		if (st[i] | st[rf->size + i])
			rf_may_set(rf, i + 1);
		rf_refresh_eff(rf, i);
	}
}

/* Only the take ranges' bytes are visited (a range's check is not the cost of
 * the whole file's). */
int vcxl_rf_check_state(const struct vcxl_regfile *rf, const uint8_t *st, size_t len,
			const struct vcxl_rf_range *take, unsigned ntake,
			const struct vcxl_rf_range *live, unsigned nlive, uint32_t *bad_off)
{
	int rc = 0;

	if (len != vcxl_rf_state_len(rf)) {
		*bad_off = 0;
		return -EINVAL;
	}
	if (!ntake)
		return rf_check_bytes(rf, st, 0, rf->size, live, nlive, bad_off);
	for (unsigned k = 0; k < ntake && !rc; k++)
		if (take[k].off < rf->size)
			rc = rf_check_bytes(rf, st, take[k].off, rf_range_end(rf, &take[k]), live,
					    nlive, bad_off);
	return rc;
}

void vcxl_rf_load_state(struct vcxl_regfile *rf, const uint8_t *st,
			const struct vcxl_rf_range *take, unsigned ntake)
{
	if (!ntake)
		rf_load_bytes(rf, st, 0, rf->size);
	for (unsigned k = 0; k < ntake; k++)
		if (take[k].off < rf->size)
			rf_load_bytes(rf, st, take[k].off, rf_range_end(rf, &take[k]));
	vcxl_rf_update_locks(rf);
}

void vcxl_rf_save_range(const struct vcxl_regfile *rf, uint32_t off, uint32_t len, uint8_t *out)
{
	if (!rf_range_ok(rf, off, len))
		return;
	memcpy(out, rf->val + off, len);
	memcpy(out + len, rf->rwo_armed + off, len);
}

void vcxl_rf_restore_range(struct vcxl_regfile *rf, uint32_t off, uint32_t len, const uint8_t *in)
{
	if (!rf_range_ok(rf, off, len))
		return;
	memcpy(rf->val + off, in, len);
	memcpy(rf->rwo_armed + off, in + len, len);
	rf_may_set(rf, off + len);
	rf_refresh_eff_range(rf, off, len);
	vcxl_rf_update_locks(rf);
}
