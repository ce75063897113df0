// SPDX-License-Identifier: BSD-3-Clause
/*
 * The model's part of a migration (backend.h mig_*; docs/migration.md): what
 * the device holds that the guest set or that runs, as sections of the stream:
 *   MODEL_CFG   config space, the guest's parts (the CXL Device DVSEC, the
 *               Register Locator and the DOE are the host's: not taken)
 *   MODEL_BAR2  job engine registers and the MSI-X PBA (the table is the
 *               host's: it follows the client's arming; the DPA window is
 *               the host's)
 *   MODEL_JOB   the job in flight (paused at STOP, resumed where it stopped),
 *               JOBS_DONE, Memory_Active reached
 *   MODEL_BAR0  BAR0's RAM (the component block left out), zero pages elided
 *   MODEL_T3    Type-3: memory device registers, mailbox state, LSA
 * The component block is the host's entirely (the physical decoders): never
 * sent. Loading stages every section, checked; commit applies them all.
 * Pages of device memory the engine writes are tracked (mig_dirty), since
 * QEMU's dirty log does not see a device's writes: a DMA logging report takes
 * those a guest decoder maps (mig_dirty_clear), the stream carries the rest.
 */
#include <errno.h>
#include <linux/pci_regs.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <time.h>

#include "accel.h"
#include "../common/sigbus_guard.h"
#include "cxl/cxl_regs.h"
#include "common/migstream.h"

#define BAR0_PAGES	(VCXL_MODEL_BAR0_SIZE / VCXL_MIG_PAGE)
#define BAR0_MAP_BYTES	(BAR0_PAGES / 8)
#define JOB_STATE_LEN	80u /* MODEL_JOB payload */
#define BE_SECTIONS	(VCXL_MIG_SEC_BE_LAST - VCXL_MIG_SEC_BE_FIRST + 1)
#define BIT_OF(t)	(1u << ((t)-VCXL_MIG_SEC_BE_FIRST))
#define MSIX_PBA_BYTES	8u
#define MEMDEV_T3_FIXED (CXL_INT_POLICY_SIZE + 4 * 4 + 8)
_Static_assert(BE_SECTIONS <= 32, "a bit per backend section");

struct model_mig_stage {
	unsigned have; /* BIT_OF(type) per staged section */
	uint8_t *cfg, *bar2, *memdev;
	struct model_job job;
	uint64_t jobs_done;
	bool latched;
	uint8_t bar0_map[BAR0_MAP_BYTES]; /* a bit per BAR0 page the stream carries */
	uint8_t *bar0;			  /* those pages, in page order */
	uint8_t int_policy[CXL_INT_POLICY_SIZE];
	bool ts_valid, bg_running, scan_valid;
	uint64_t ts_now;
	uint16_t bg_opcode;
	uint8_t lsa[VCXL_MODEL_T3_LSA_SIZE];
};

/* ---- which bytes are whose --------------------------------------------- */

/* Config space: the guest's parts, the standard header and capabilities and
 * the bodies of the GPF and Flex Bus DVSECs. The host's: the CXL Device
 * DVSEC and the Register Locator (programmed at bring-up), every extended
 * capability and DVSEC header, the DOE the host read CDAT from. The model
 * changes no read-only config bit by itself: none is live, all are checked. */
#define DVSEC_BODY (PCIE_DVSEC_HEADER2 + 2) /* past the headers */
static const struct vcxl_rf_range cfg_take[] = {
    {0, MODEL_DVSEC_DEVICE},
    {MODEL_DVSEC_GPF + DVSEC_BODY, MODEL_DVSEC_FLEXBUS - MODEL_DVSEC_GPF - DVSEC_BODY},
    {MODEL_DVSEC_FLEXBUS + DVSEC_BODY, MODEL_DOE - MODEL_DVSEC_FLEXBUS - DVSEC_BODY},
};
/* BAR2: the engine's registers and the PBA; the DPA window and the MSI-X
 * table are the host's. */
static const struct vcxl_rf_range bar2_take[] = {
    {0, ACCEL_REG_DPA_WIN_BASE},
    {VCXL_MODEL_MSIX_PBA, MSIX_PBA_BYTES},
};
static const struct vcxl_rf_range bar2_live[] = {
    {ACCEL_REG_STATUS, 4},
    {ACCEL_REG_JOBS_DONE, 4},
    {VCXL_MODEL_MSIX_PBA, MSIX_PBA_BYTES},
};
#define N(a) (sizeof(a) / sizeof((a)[0]))

static bool bar0_page_is_comp(const struct vcxl_model *m, uint64_t pg)
{
	uint64_t off = pg * VCXL_MIG_PAGE;

	return off >= m->comp_off && off < m->comp_off + CXL_COMPONENT_BLOCK_SIZE;
}

/* ---- quiesce and dirty tracking ---------------------------------------- */

int model_mig_quiesce(void *dev, bool stop)
{
	struct vcxl_model *m = dev;

	m->mig_paused = stop;
	/* interrupts that came due while stopped (PBA) go out now */
	if (!stop)
		model_msix_update(m);
	return 0;
}

void model_mig_mark(struct vcxl_model *m, uint64_t dpa, uint64_t len)
{
	if (!m->dirty || !len || dpa >= m->mem_size)
		return;
	if (len > m->mem_size - dpa)
		len = m->mem_size - dpa;
	for (uint64_t p = dpa / VCXL_MIG_PAGE; p <= (dpa + len - 1) / VCXL_MIG_PAGE; p++)
		m->dirty[p / 64] |= 1ull << (p % 64);
}

int model_mig_dirty(void *dev, bool on)
{
	struct vcxl_model *m = dev;
	uint64_t words = (m->mem_size / VCXL_MIG_PAGE + 63) / 64;

	free(m->dirty);
	m->dirty = NULL;
	if (!on)
		return 0;
	m->dirty = calloc(words, sizeof(uint64_t));
	return m->dirty ? 0 : -ENOMEM;
}

int model_mig_dirty_get(void *dev, uint64_t dpa, uint64_t len, uint64_t *bitmap)
{
	struct vcxl_model *m = dev;
	uint64_t n = len / VCXL_MIG_PAGE;

	if ((dpa | len) % VCXL_MIG_PAGE || dpa > m->mem_size || len > m->mem_size - dpa)
		return -EINVAL;
	memset(bitmap, 0, (n + 63) / 64 * sizeof(uint64_t));
	if (!m->dirty)
		return 0;
	if (dpa / VCXL_MIG_PAGE % 64 == 0) {
		/* word-aligned: the tracking bitmap's words as they are, the last
		 * one cut to the range */
		memcpy(bitmap, m->dirty + dpa / VCXL_MIG_PAGE / 64, n / 64 * sizeof(uint64_t));
		if (n % 64)
			bitmap[n / 64] =
			    m->dirty[(dpa / VCXL_MIG_PAGE + n) / 64] & ((1ull << (n % 64)) - 1);
		return 0;
	}
	for (uint64_t i = 0; i < n; i++) {
		uint64_t p = dpa / VCXL_MIG_PAGE + i;
		if (p % 64 == 0 && n - i >= 64 && !m->dirty[p / 64]) {
			i += 63; /* a word of clean pages */
			continue;
		}
		if (m->dirty[p / 64] & (1ull << (p % 64)))
			bitmap[i / 64] |= 1ull << (i % 64);
	}
	return 0;
}

/* Forget the pages of [dpa, dpa + len) whose bit is set in bitmap (bit i: page
 * dpa + i * VCXL_MIG_PAGE): a DMA logging report gave them to the client. */
int model_mig_dirty_clear(void *dev, uint64_t dpa, uint64_t len, const uint64_t *bitmap)
{
	struct vcxl_model *m = dev;
	uint64_t n = len / VCXL_MIG_PAGE;

	if ((dpa | len) % VCXL_MIG_PAGE || dpa > m->mem_size || len > m->mem_size - dpa)
		return -EINVAL;
	for (uint64_t i = 0; m->dirty && i < n; i++) {
		uint64_t p = dpa / VCXL_MIG_PAGE + i;
		if (bitmap[i / 64] & (1ull << (i % 64)))
			m->dirty[p / 64] &= ~(1ull << (p % 64));
	}
	return 0;
}

/* ---- save -------------------------------------------------------------- */

static int save_rf(struct vcxl_mig_buf *b, uint32_t type, const struct vcxl_regfile *rf)
{
	struct iovec iov[VCXL_RF_STATE_IOV];

	return vcxl_mig_put_section(b, type, 0, iov, vcxl_rf_state_iov(rf, iov));
}

static void save_job(struct vcxl_model *m, struct vcxl_mig_buf *b)
{
	const struct model_job *j = &m->job;
	bool a = j->active;

	vcxl_mig_sec_begin(b, VCXL_MIG_SEC_MODEL_JOB, 0);
	vcxl_mig_put_u32(b, a);
	vcxl_mig_put_u32(b, a ? j->op : 0);
	vcxl_mig_put_u32(b, a ? j->flags : 0);
	vcxl_mig_put_u32(b, a ? j->vector : 0);
	vcxl_mig_put_u64(b, a ? j->src : 0);
	vcxl_mig_put_u64(b, a ? j->dst : 0);
	vcxl_mig_put_u64(b, a ? j->len : 0);
	vcxl_mig_put_u64(b, a ? j->pattern : 0);
	vcxl_mig_put_u64(b, a ? j->done : 0);
	vcxl_mig_put_u64(b, m->jobs_done);
	vcxl_mig_put_u32(b, model_mem_active(m));
	vcxl_mig_put_u32(b, 0);
	vcxl_mig_put_u64(b, 0);
	vcxl_mig_sec_end(b);
}

/* A page of BAR0's RAM all zero (a client maps BAR0: read under the guard;
 * a page that cannot be read counts as not zero) */
static bool bar0_page_zero(const struct vcxl_model *m, uint64_t pg)
{
	uint64_t w[VCXL_MIG_PAGE / 8], acc = 0;

	if (vcxl_guarded_memcpy(w, m->bar0 + pg * VCXL_MIG_PAGE, VCXL_MIG_PAGE))
		return false;
	for (unsigned i = 0; i < VCXL_MIG_PAGE / 8; i++)
		acc |= w[i];
	return !acc;
}

/* The BAR0 pages that may hold data: a bit per page. The memfd's holes
 * (pages nothing ever wrote) read as zero, so only the rest needs reading;
 * without SEEK_DATA every page may. */
static void bar0_data_map(const struct vcxl_model *m, uint8_t *map)
{
	off_t at = 0, end = VCXL_MODEL_BAR0_SIZE;

	memset(map, 0, BAR0_MAP_BYTES);
	while (at < end) {
		off_t data = lseek(m->bar0_fd, at, SEEK_DATA), hole;

		if (data < 0 && errno == ENXIO)
			return; /* holes to the end */
		hole = data < 0 ? -1 : lseek(m->bar0_fd, data, SEEK_HOLE);
		if (data < 0 || hole < 0) {
			memset(map, 0xff, BAR0_MAP_BYTES);
			return;
		}
		for (off_t o = data & ~(off_t)(VCXL_MIG_PAGE - 1); o < hole && o < end;
		     o += VCXL_MIG_PAGE)
			map[o / VCXL_MIG_PAGE / 8] |= (uint8_t)(1u << (o / VCXL_MIG_PAGE % 8));
		at = hole;
	}
}

/* {u64 BAR size, u64 component block offset, a bit per page (set: the page
 * follows), the pages} */
static void save_bar0(struct vcxl_model *m, struct vcxl_mig_buf *b)
{
	uint8_t map[BAR0_MAP_BYTES];

	bar0_data_map(m, map);
	for (uint64_t pg = 0; pg < BAR0_PAGES; pg++)
		if ((map[pg / 8] & (1u << (pg % 8))) &&
		    (bar0_page_is_comp(m, pg) || bar0_page_zero(m, pg)))
			map[pg / 8] &= (uint8_t) ~(1u << (pg % 8));
	vcxl_mig_sec_begin(b, VCXL_MIG_SEC_MODEL_BAR0, 0);
	vcxl_mig_put_u64(b, VCXL_MODEL_BAR0_SIZE);
	vcxl_mig_put_u64(b, m->comp_off);
	vcxl_mig_put(b, map, sizeof(map));
	for (uint64_t pg = 0; pg < BAR0_PAGES; pg++) {
		uint8_t *d;
		if (!(map[pg / 8] & (1u << (pg % 8))))
			continue;
		/* a client maps BAR0 too: copied under the guard */
		d = vcxl_mig_reserve(b, VCXL_MIG_PAGE);
		if (d && vcxl_guarded_memcpy(d, m->bar0 + pg * VCXL_MIG_PAGE, VCXL_MIG_PAGE))
			b->err = -EIO;
	}
	vcxl_mig_sec_end(b);
}

static void save_t3(struct vcxl_model *m, struct vcxl_mig_buf *b)
{
	struct vcxl_memdev *d = &m->memdev;
	uint8_t *p;
	uint64_t ts = 0;

	if (d->ts_valid) {
		struct timespec now;
		clock_gettime(CLOCK_REALTIME, &now);
		ts = d->ts_value +
		     ((uint64_t)now.tv_sec * 1000000000ull + (uint64_t)now.tv_nsec - d->ts_set_at);
	}
	vcxl_mig_sec_begin(b, VCXL_MIG_SEC_MODEL_T3, 0);
	p = vcxl_mig_reserve(b, vcxl_rf_state_len(&m->memdevrf));
	if (p)
		vcxl_rf_save(&m->memdevrf, p);
	vcxl_mig_put(b, d->int_policy, sizeof(d->int_policy));
	vcxl_mig_put_u32(b, d->ts_valid);
	vcxl_mig_put_u32(b, d->bg_running);
	vcxl_mig_put_u32(b, d->bg_opcode);
	vcxl_mig_put_u32(b, d->scan_valid);
	vcxl_mig_put_u64(b, ts);
	vcxl_mig_put(b, m->lsa, sizeof(m->lsa));
	vcxl_mig_sec_end(b);
}

int model_mig_save(void *dev, struct vcxl_mig_buf *b)
{
	struct vcxl_model *m = dev;

	if (m->removed)
		return -ENODEV;
	if (m->job.stepping)
		return -EBUSY; /* a step waits for its DMA: STOP comes after it */
	save_rf(b, VCXL_MIG_SEC_MODEL_CFG, &m->cfgrf);
	save_rf(b, VCXL_MIG_SEC_MODEL_BAR2, &m->bar2rf);
	save_job(m, b);
	save_bar0(m, b);
	if (model_is_type3(m))
		save_t3(m, b);
	return b->err;
}

/* ---- load -------------------------------------------------------------- */

static struct model_mig_stage *stage_get(struct vcxl_model *m)
{
	if (!m->stage)
		m->stage = calloc(1, sizeof(*m->stage));
	return m->stage;
}

void model_mig_abort(void *dev)
{
	struct vcxl_model *m = dev;
	struct model_mig_stage *s = m->stage;

	if (!s)
		return;
	free(s->cfg);
	free(s->bar2);
	free(s->memdev);
	free(s->bar0);
	free(s);
	m->stage = NULL;
}

void model_mig_fini(struct vcxl_model *m)
{
	model_mig_abort(m);
	free(m->dirty);
	m->dirty = NULL;
}

static int stage_rf(const struct vcxl_regfile *rf, const char *what, const uint8_t *p, uint64_t len,
		    const struct vcxl_rf_range *take, unsigned ntake,
		    const struct vcxl_rf_range *live, unsigned nlive, uint8_t **out, char *err,
		    size_t errlen)
{
	uint32_t bad = 0;

	if (len != vcxl_rf_state_len(rf))
		return vcxl_mig_fail(err, errlen, "%s: %llu bytes, this device has %zu", what,
				     (unsigned long long)len, vcxl_rf_state_len(rf));
	if (vcxl_rf_check_state(rf, p, len, take, ntake, live, nlive, &bad))
		return vcxl_mig_fail(err, errlen,
				     "%s: register byte 0x%x differs from this device's layout",
				     what, bad);
	*out = malloc(len);
	if (!*out)
		return -ENOMEM;
	memcpy(*out, p, len);
	return 0;
}

static int stage_job(struct vcxl_model *m, struct model_mig_stage *s, const uint8_t *p,
		     uint64_t len, char *err, size_t errlen)
{
	struct vcxl_mig_rd r;
	struct model_job j = {0};
	uint32_t active, latched;

	vcxl_mig_rd_init(&r, p, len);
	active = vcxl_mig_get_u32(&r);
	j.op = vcxl_mig_get_u32(&r);
	j.flags = vcxl_mig_get_u32(&r);
	j.vector = vcxl_mig_get_u32(&r);
	j.src = vcxl_mig_get_u64(&r);
	j.dst = vcxl_mig_get_u64(&r);
	j.len = vcxl_mig_get_u64(&r);
	j.pattern = vcxl_mig_get_u64(&r);
	j.done = vcxl_mig_get_u64(&r);
	s->jobs_done = vcxl_mig_get_u64(&r);
	latched = vcxl_mig_get_u32(&r);
	if (vcxl_mig_get_u32(&r) || vcxl_mig_get_u64(&r))
		return vcxl_mig_fail(err, errlen, "MODEL_JOB: reserved fields not zero");
	if (len != JOB_STATE_LEN || !vcxl_mig_rd_done(&r))
		return vcxl_mig_fail(err, errlen, "MODEL_JOB: %llu bytes, expected %u",
				     (unsigned long long)len, JOB_STATE_LEN);
	if (active > 1 || latched > 1)
		return vcxl_mig_fail(err, errlen, "MODEL_JOB: flags %u/%u not booleans", active,
				     latched);
	if (!active &&
	    (j.op || j.flags || j.vector || j.src || j.dst || j.len || j.pattern || j.done))
		return vcxl_mig_fail(err, errlen, "MODEL_JOB: an idle engine with a job");
	if (active && (!model_job_valid(m, &j) || !j.len || j.done >= j.len))
		return vcxl_mig_fail(
		    err, errlen,
		    "MODEL_JOB: job op %u flags 0x%x src 0x%llx dst 0x%llx len 0x%llx "
		    "done 0x%llx cannot run on this device",
		    j.op, j.flags, (unsigned long long)j.src, (unsigned long long)j.dst,
		    (unsigned long long)j.len, (unsigned long long)j.done);
	j.active = active;
	j.backward = j.op == ACCEL_OP_COPY && !(j.flags & ACCEL_JOBF_SRC_HOST) &&
		     !(j.flags & ACCEL_JOBF_DST_HOST) && j.dst > j.src && j.dst - j.src < j.len;
	s->job = j;
	s->latched = latched;
	return 0;
}

static int stage_bar0(struct vcxl_model *m, struct model_mig_stage *s, const uint8_t *p,
		      uint64_t len, char *err, size_t errlen)
{
	struct vcxl_mig_rd r;
	const uint8_t *map;
	uint64_t size, comp, n;

	vcxl_mig_rd_init(&r, p, len);
	size = vcxl_mig_get_u64(&r);
	comp = vcxl_mig_get_u64(&r);
	map = vcxl_mig_get(&r, BAR0_MAP_BYTES);
	if (!map)
		return vcxl_mig_fail(err, errlen, "MODEL_BAR0 truncated");
	if (size != VCXL_MODEL_BAR0_SIZE || comp != m->comp_off)
		return vcxl_mig_fail(
		    err, errlen,
		    "MODEL_BAR0: BAR0 of 0x%llx with the component block at 0x%llx, "
		    "this device: 0x%x at 0x%llx",
		    (unsigned long long)size, (unsigned long long)comp, VCXL_MODEL_BAR0_SIZE,
		    (unsigned long long)m->comp_off);
	n = 0;
	for (uint64_t pg = 0; pg < BAR0_PAGES; pg++)
		n += (map[pg / 8] >> (pg % 8)) & 1;
	s->bar0 = malloc(n ? n * VCXL_MIG_PAGE : 1);
	if (!s->bar0)
		return -ENOMEM;
	memcpy(s->bar0_map, map, BAR0_MAP_BYTES);
	n = 0;
	for (uint64_t pg = 0; pg < BAR0_PAGES; pg++) {
		const uint8_t *d;
		if (!(map[pg / 8] & (1u << (pg % 8))))
			continue;
		if (bar0_page_is_comp(m, pg))
			return vcxl_mig_fail(err, errlen,
					     "MODEL_BAR0: a page of the component block");
		if (!(d = vcxl_mig_get(&r, VCXL_MIG_PAGE)))
			return vcxl_mig_fail(err, errlen, "MODEL_BAR0 truncated at page %llu",
					     (unsigned long long)pg);
		memcpy(s->bar0 + n++ * VCXL_MIG_PAGE, d, VCXL_MIG_PAGE);
	}
	if (!vcxl_mig_rd_done(&r))
		return vcxl_mig_fail(err, errlen, "MODEL_BAR0: %zu bytes after its pages",
				     r.len - r.off);
	return 0;
}

static int stage_t3(struct vcxl_model *m, struct model_mig_stage *s, const uint8_t *p, uint64_t len,
		    char *err, size_t errlen)
{
	size_t rfl = vcxl_rf_state_len(&m->memdevrf);
	/* the memory device block: registers and payload are the mailbox's own */
	const struct vcxl_rf_range live = {0, m->memdevrf.size};
	struct vcxl_mig_rd r;
	uint32_t ts_valid, bg, op, scan;
	const uint8_t *q;
	int rc;

	if (!model_is_type3(m))
		return vcxl_mig_fail(err, errlen, "MODEL_T3 section for an accelerator");
	if (len != rfl + MEMDEV_T3_FIXED + sizeof(s->lsa))
		return vcxl_mig_fail(err, errlen, "MODEL_T3: %llu bytes, expected %zu",
				     (unsigned long long)len,
				     rfl + MEMDEV_T3_FIXED + sizeof(s->lsa));
	rc = stage_rf(&m->memdevrf, "MODEL_T3", p, rfl, NULL, 0, &live, 1, &s->memdev, err, errlen);
	if (rc)
		return rc;
	vcxl_mig_rd_init(&r, p + rfl, len - rfl);
	q = vcxl_mig_get(&r, CXL_INT_POLICY_SIZE);
	if (q)
		memcpy(s->int_policy, q, CXL_INT_POLICY_SIZE);
	ts_valid = vcxl_mig_get_u32(&r);
	bg = vcxl_mig_get_u32(&r);
	op = vcxl_mig_get_u32(&r);
	scan = vcxl_mig_get_u32(&r);
	s->ts_now = vcxl_mig_get_u64(&r);
	q = vcxl_mig_get(&r, sizeof(s->lsa));
	if (!q || !vcxl_mig_rd_done(&r) || ts_valid > 1 || bg > 1 || scan > 1 || op > 0xffff)
		return vcxl_mig_fail(err, errlen, "MODEL_T3: bad mailbox state");
	memcpy(s->lsa, q, sizeof(s->lsa));
	s->ts_valid = ts_valid;
	s->bg_running = bg;
	s->bg_opcode = (uint16_t)op;
	s->scan_valid = scan;
	return 0;
}

int model_mig_stage(void *dev, uint32_t type, const uint8_t *p, uint64_t len, char *err,
		    size_t errlen)
{
	struct vcxl_model *m = dev;
	struct model_mig_stage *s = stage_get(m);

	if (!s)
		return -ENOMEM;
	if (type < VCXL_MIG_SEC_BE_FIRST || type > VCXL_MIG_SEC_BE_LAST || (s->have & BIT_OF(type)))
		return vcxl_mig_fail(err, errlen, "section %u not the model's, or twice", type);
	switch (type) {
	case VCXL_MIG_SEC_MODEL_CFG:
		if (stage_rf(&m->cfgrf, "MODEL_CFG", p, len, cfg_take, N(cfg_take), NULL, 0,
			     &s->cfg, err, errlen))
			return -EINVAL;
		break;
	case VCXL_MIG_SEC_MODEL_BAR2:
		if (stage_rf(&m->bar2rf, "MODEL_BAR2", p, len, bar2_take, N(bar2_take), bar2_live,
			     N(bar2_live), &s->bar2, err, errlen))
			return -EINVAL;
		break;
	case VCXL_MIG_SEC_MODEL_JOB:
		if (stage_job(m, s, p, len, err, errlen))
			return -EINVAL;
		break;
	case VCXL_MIG_SEC_MODEL_BAR0:
		if (stage_bar0(m, s, p, len, err, errlen))
			return -EINVAL;
		break;
	case VCXL_MIG_SEC_MODEL_T3:
		if (stage_t3(m, s, p, len, err, errlen))
			return -EINVAL;
		break;
	default:
		return vcxl_mig_fail(err, errlen, "section %u unknown to the model", type);
	}
	s->have |= BIT_OF(type);
	return 0;
}

/* BAR0's RAM as the stream has it: its pages, zero elsewhere (a page already
 * zero is not written: most of the 4 MiB is) */
static void commit_bar0(struct vcxl_model *m, const struct model_mig_stage *s)
{
	static const uint8_t zero[VCXL_MIG_PAGE];
	uint8_t data[BAR0_MAP_BYTES];
	uint64_t n = 0;

	bar0_data_map(m, data);
	for (uint64_t pg = 0; pg < BAR0_PAGES; pg++) {
		uint8_t *d = m->bar0 + pg * VCXL_MIG_PAGE;

		if (bar0_page_is_comp(m, pg))
			continue;
		if (s->bar0_map[pg / 8] & (1u << (pg % 8)))
			vcxl_guarded_memcpy(d, s->bar0 + n++ * VCXL_MIG_PAGE, VCXL_MIG_PAGE);
		else if ((data[pg / 8] & (1u << (pg % 8))) && !bar0_page_zero(m, pg))
			vcxl_guarded_memcpy(d, zero, VCXL_MIG_PAGE);
	}
}

/* The staged sections make a whole state whose parts agree: 0 or -EINVAL */
int model_mig_verify(void *dev, char *err, size_t errlen)
{
	struct vcxl_model *m = dev;
	struct model_mig_stage *s = m->stage;
	unsigned need = BIT_OF(VCXL_MIG_SEC_MODEL_CFG) | BIT_OF(VCXL_MIG_SEC_MODEL_BAR2) |
			BIT_OF(VCXL_MIG_SEC_MODEL_JOB) | BIT_OF(VCXL_MIG_SEC_MODEL_BAR0) |
			(model_is_type3(m) ? BIT_OF(VCXL_MIG_SEC_MODEL_T3) : 0);
	bool busy;

	if (!s || (s->have & need) != need)
		return vcxl_mig_fail(err, errlen,
				     "the device's state is incomplete (sections 0x%x of 0x%x)",
				     s ? s->have : 0, need);
	busy = vcxl_mig_rd32(s->bar2 + ACCEL_REG_STATUS) & ACCEL_STATUS_BUSY;
	if (busy != s->job.active ||
	    vcxl_mig_rd32(s->bar2 + ACCEL_REG_JOBS_DONE) != (uint32_t)s->jobs_done)
		return vcxl_mig_fail(err, errlen,
				     "MODEL_BAR2 and MODEL_JOB disagree (BUSY %d, job %d)", busy,
				     s->job.active);
	return 0;
}

int model_mig_commit(void *dev, char *err, size_t errlen)
{
	struct vcxl_model *m = dev;
	struct model_mig_stage *s = m->stage;
	int rc = model_mig_verify(dev, err, errlen);

	if (rc)
		return rc;
	/* nothing below fails */
	vcxl_rf_load_state(&m->cfgrf, s->cfg, cfg_take, N(cfg_take));
	vcxl_rf_load_state(&m->bar2rf, s->bar2, bar2_take, N(bar2_take));
	m->job = s->job;
	m->job_gen++;
	m->jobs_done = s->jobs_done;
	if (s->latched)
		m->active_latched = true;
	commit_bar0(m, s);
	if (model_is_type3(m)) {
		struct vcxl_memdev *d = &m->memdev;
		struct timespec now;

		vcxl_rf_load_state(&m->memdevrf, s->memdev, NULL, 0);
		memcpy(d->int_policy, s->int_policy, sizeof(d->int_policy));
		clock_gettime(CLOCK_REALTIME, &now);
		d->ts_valid = s->ts_valid;
		d->ts_value = s->ts_now;
		d->ts_set_at = (uint64_t)now.tv_sec * 1000000000ull + (uint64_t)now.tv_nsec;
		d->bg_running = s->bg_running;
		d->bg_opcode = s->bg_opcode;
		d->scan_valid = s->scan_valid;
		memcpy(m->lsa, s->lsa, sizeof(m->lsa));
	}
	model_mig_abort(m);
	return 0;
}
