// SPDX-License-Identifier: BSD-3-Clause
/*
 * Baseline for the register-access benchmark: dispatch the way the vfio-cxl
 * RFC v2 design does, written here from its description (not its code).
 *
 * Every emulated register is a "block" {start, length, read, write} on a
 * linked list, one list for config space and one for the component BAR. On
 * every access the list is walked from the head until a block whose start
 * equals the access offset rounded down to the block length; its handler
 * then copies between the caller and a shadow copy, applying the register's
 * write mask. Unmatched accesses fall through to "hardware" (here: a flat
 * array). HDM blocks are added per decoder, so the walk grows with the
 * decoder count.
 */
#include "ref_dispatch.h"

#include <stdlib.h>
#include <string.h>

#include "cxl/cxl_regs.h"

struct ref_block {
	uint64_t start, len;
	uint32_t wmask;
	int (*read)(struct ref_dev *d, struct ref_block *b, uint64_t off, void *buf, size_t n);
	int (*write)(struct ref_dev *d, struct ref_block *b, uint64_t off, const void *buf,
		     size_t n);
	struct ref_block *next;
};

static int shadow_read(struct ref_dev *d, struct ref_block *b, uint64_t off, void *buf, size_t n)
{
	(void)b;
	memcpy(buf, d->shadow + off, n);
	return (int)n;
}

static int shadow_write(struct ref_dev *d, struct ref_block *b, uint64_t off, const void *buf,
			size_t n)
{
	uint32_t v = 0, old;
	memcpy(&v, buf, n);
	memcpy(&old, d->shadow + (off & ~3ull), 4);
	v = (old & ~b->wmask) | (v & b->wmask);
	memcpy(d->shadow + off, &v, n);
	return (int)n;
}

static void add_block(struct ref_block **head, uint64_t start, uint64_t len, uint32_t wmask)
{
	struct ref_block *b = calloc(1, sizeof(*b));
	if (!b)
		return;
	b->start = start;
	b->len = len;
	b->wmask = wmask;
	b->read = shadow_read;
	b->write = shadow_write;
	/* list_add_tail */
	while (*head)
		head = &(*head)->next;
	*head = b;
}

static struct ref_block *find_block(struct ref_block *head, uint64_t off)
{
	for (struct ref_block *b = head; b; b = b->next)
		if (b->start == (off & ~(b->len - 1)))
			return b;
	return NULL;
}

int ref_dev_init(struct ref_dev *d, uint32_t dvsec, uint64_t hdm, unsigned decoders)
{
	memset(d, 0, sizeof(*d));
	d->shadow = calloc(1, REF_SHADOW_SIZE);
	if (!d->shadow)
		return -1;
	/* config space: one block per DVSEC register (2-byte registers) */
	static const uint16_t dvsec_regs[] = {CXL_DVSEC_CAP,   CXL_DVSEC_CTRL,	  CXL_DVSEC_STATUS,
					      CXL_DVSEC_CTRL2, CXL_DVSEC_STATUS2, CXL_DVSEC_LOCK,
					      CXL_DVSEC_CAP2};
	for (unsigned i = 0; i < sizeof(dvsec_regs) / sizeof(dvsec_regs[0]); i++)
		add_block(&d->cfg_head, dvsec + dvsec_regs[i], 2, 0xffff);
	for (unsigned r = 0; r < CXL_DVSEC_RANGE_MAX; r++) {
		add_block(&d->cfg_head, dvsec + CXL_DVSEC_RANGE_SIZE_HI(r), 4, 0);
		add_block(&d->cfg_head, dvsec + CXL_DVSEC_RANGE_SIZE_LO(r), 4, 0);
		add_block(&d->cfg_head, dvsec + CXL_DVSEC_RANGE_BASE_HI(r), 4, ~0u);
		add_block(&d->cfg_head, dvsec + CXL_DVSEC_RANGE_BASE_LO(r), 4,
			  CXL_DVSEC_RANGE_BASE_LO_MASK);
	}
	/* component BAR: HDM capability, global control, then 7 per decoder */
	add_block(&d->mmio_head, hdm + CXL_HDM_CAP, 4, 0);
	add_block(&d->mmio_head, hdm + CXL_HDM_GLOBAL_CTRL, 4, CXL_HDM_GCTRL_ENABLE);
	for (unsigned n = 0; n < decoders; n++) {
		add_block(&d->mmio_head, hdm + CXL_HDM_DEC_BASE_LO(n), 4, CXL_HDM_DEC_LO_MASK);
		add_block(&d->mmio_head, hdm + CXL_HDM_DEC_BASE_HI(n), 4, ~0u);
		add_block(&d->mmio_head, hdm + CXL_HDM_DEC_SIZE_LO(n), 4, CXL_HDM_DEC_LO_MASK);
		add_block(&d->mmio_head, hdm + CXL_HDM_DEC_SIZE_HI(n), 4, ~0u);
		add_block(&d->mmio_head, hdm + CXL_HDM_DEC_CTRL(n), 4, CXL_HDM_DEC_CTRL_RWL_MASK);
		add_block(&d->mmio_head, hdm + CXL_HDM_DEC_TL_LO(n), 4, CXL_HDM_DEC_LO_MASK);
		add_block(&d->mmio_head, hdm + CXL_HDM_DEC_TL_HI(n), 4, ~0u);
	}
	return 0;
}

static int ref_rw(struct ref_dev *d, struct ref_block *head, uint64_t off, void *buf, size_t n,
		  bool write)
{
	struct ref_block *b = find_block(head, off);
	if (!b) {
		/* pass through to "hardware" */
		if (write)
			memcpy(d->hw + (off & (REF_SHADOW_SIZE - 1)), buf, n);
		else
			memcpy(buf, d->hw + (off & (REF_SHADOW_SIZE - 1)), n);
		return (int)n;
	}
	if (off & (b->len - 1))
		return -1;
	if (n > b->len)
		n = b->len;
	return write ? b->write(d, b, off & (REF_SHADOW_SIZE - 1), buf, n)
		     : b->read(d, b, off & (REF_SHADOW_SIZE - 1), buf, n);
}

int ref_cfg_rw(struct ref_dev *d, uint64_t off, void *buf, size_t n, bool write)
{
	return ref_rw(d, d->cfg_head, off, buf, n, write);
}

int ref_mmio_rw(struct ref_dev *d, uint64_t off, void *buf, size_t n, bool write)
{
	return ref_rw(d, d->mmio_head, off, buf, n, write);
}

static void free_list(struct ref_block *b)
{
	while (b) {
		struct ref_block *n = b->next;
		free(b);
		b = n;
	}
}

void ref_dev_fini(struct ref_dev *d)
{
	free_list(d->cfg_head);
	free_list(d->mmio_head);
	free(d->shadow);
	memset(d, 0, sizeof(*d));
}
