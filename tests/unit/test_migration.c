// SPDX-License-Identifier: BSD-3-Clause
/*
 * Migration (docs/migration.md): the state machine's arcs, the device state
 * stream saved on one vdev and loaded on a fresh one (registers, decoders,
 * BAR0 RAM, a job in flight that resumes and completes with its interrupt,
 * device memory the job wrote), every hostile load (truncated, bad
 * magic/version/checksum, sections reordered/duplicated/missing/oversized,
 * wrong geometry, decoders and jobs that break the rules here) leaving the
 * device reset and usable, and the protocol over a socket: DEVICE_FEATURE,
 * MIG_DATA_READ/WRITE and DMA logging bitmaps.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <linux/pci_regs.h>
#include <poll.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <unistd.h>

#include "vcxl/client.h"
#include "cxl/cxl_regs.h"
#include "common/migstream.h"
#include "common/release.h"
#include "model/model.h"
#include "server/server.h"
#include "be_wrap.h"
#include "tap.h"
#include "regfile/regfile.h"
#include "vdev_util.h"

#include "../../src/model/accel.h"
#include "../../src/server/conn.h"
#include "../../src/vfio-cxl/vdev_priv.h"

/* The fds open in the process once every memory object a reset handed to
 * vcxl_release_memory() is closed: those close on a thread of their own, after
 * the reply (a count taken before then held one more, and the loop below then
 * found one fd fewer: 7 runs of 120 under load). */
static long settled_fds(void)
{
	vcxl_release_wait(2000);
	return count_fds();
}

#define M	(1ull << 20)
#define G	(1ull << 30)
#define S_ERR	VFIO_DEVICE_STATE_ERROR
#define S_STP	VFIO_DEVICE_STATE_STOP
#define S_RUN	VFIO_DEVICE_STATE_RUNNING
#define S_SC	VFIO_DEVICE_STATE_STOP_COPY
#define S_RES	VFIO_DEVICE_STATE_RESUMING
#define NSTATES VFIO_USER_DEVICE_NUM_STATES
#define BAD	0xffu

struct env {
	struct vcxl_model *m;
	struct vcxl_vdev *v;
	uint64_t hdm, dpa;
	unsigned irqs[VCXL_MODEL_MSIX_VECTORS];
	char err[256];
};

static void on_irq(void *opaque, enum vcxl_irq_type type, unsigned vector)
{
	struct env *e = opaque;

	if (type == VCXL_IRQ_MSIX && vector < VCXL_MODEL_MSIX_VECTORS)
		e->irqs[vector]++;
}

/* guest_decoders: virtual HDM decoders (0: as the device has) */
static int env_init_dec(struct env *e, uint64_t mem, enum vcxl_model_kind kind,
			unsigned guest_decoders)
{
	struct vcxl_model_cfg mc = {.mem_size = mem, .kind = kind};
	struct vcxl_vdev_cfg vc = {.guest_decoders = guest_decoders};
	struct vcxl_vdev_info info;

	memset(e, 0, sizeof(*e));
	if (vcxl_model_create(&mc, &e->m))
		return -1;
	if (vcxl_vdev_create(vcxl_model_backend(e->m), &vc, &e->v, e->err, sizeof(e->err))) {
		diag("create: %s", e->err);
		vcxl_model_destroy(e->m);
		return -1;
	}
	vcxl_vdev_ops.get_info(e->v, &info);
	e->hdm = info.cxl.hdm_offset;
	e->dpa = vcxl_vdev_region(e->v)->dpa;
	vcxl_vdev_ops.set_irq_handler(e->v, on_irq, e);
	return 0;
}

static int env_init(struct env *e, uint64_t mem, enum vcxl_model_kind kind)
{
	return env_init_dec(e, mem, kind, 0);
}

static void env_fini(struct env *e)
{
	vcxl_vdev_destroy(e->v);
	vcxl_model_destroy(e->m);
}

static void hw(struct env *e, uint32_t reg, uint32_t v)
{
	g_wr(e->v, 0, e->hdm + reg, 4, v);
}

static uint32_t hr(struct env *e, uint32_t reg)
{
	return (uint32_t)g_rd(e->v, 0, e->hdm + reg, 4, NULL);
}

static void commit0(struct env *e, uint64_t base, uint64_t size)
{
	hw(e, CXL_HDM_GLOBAL_CTRL, CXL_HDM_GCTRL_ENABLE);
	hw(e, CXL_HDM_DEC_BASE_HI(0), (uint32_t)(base >> 32));
	hw(e, CXL_HDM_DEC_BASE_LO(0), (uint32_t)base);
	hw(e, CXL_HDM_DEC_SIZE_HI(0), (uint32_t)(size >> 32));
	hw(e, CXL_HDM_DEC_SIZE_LO(0), (uint32_t)size);
	hw(e, CXL_HDM_DEC_CTRL(0), CXL_HDM_DEC_CTRL_COMMIT);
}

static bool committed0(struct env *e)
{
	return hr(e, CXL_HDM_DEC_CTRL(0)) & CXL_HDM_DEC_CTRL_COMMITTED;
}

static uint32_t eng(struct env *e, uint32_t reg)
{
	return (uint32_t)g_rd(e->v, VCXL_MODEL_CTRL_BAR, reg, 4, NULL);
}

static void eng_w(struct env *e, uint32_t reg, unsigned len, uint64_t v)
{
	g_wr(e->v, VCXL_MODEL_CTRL_BAR, reg, len, v);
}

/* MSI-X on, vector armed by "the client" */
static void irq_on(struct env *e, unsigned vec)
{
	gcfg_w(e->v, MODEL_MSIX_CAP + PCI_MSIX_FLAGS, 2, PCI_MSIX_FLAGS_ENABLE);
	vcxl_vdev_ops.irq_arm(e->v, VFIO_PCI_MSIX_IRQ_INDEX, vec, true);
}

static int save(struct env *e, struct vcxl_mig_buf *b)
{
	memset(b, 0, sizeof(*b));
	return vcxl_vdev_ops.mig_save(e->v, b);
}

static int load(struct env *e, const uint8_t *s, size_t len)
{
	e->err[0] = 0;
	return vcxl_vdev_ops.mig_load(e->v, s, len, e->err, sizeof(e->err));
}

static int check(struct env *e, const uint8_t *s, size_t len)
{
	e->err[0] = 0;
	return vcxl_vdev_ops.mig_check(e->v, s, len, e->err, sizeof(e->err));
}

/* Whether two saves of a device are the same bytes */
static bool same_state(const struct vcxl_mig_buf *x, const struct vcxl_mig_buf *y)
{
	return x->len == y->len && !memcmp(x->data, y->data, x->len);
}

/* ---- the state machine: every pair, against the kernel's table ---------- */

/* expected next state from [cur][target] (BAD: -EINVAL); P2P and PRE_COPY
 * are not offered, ERROR is no target and is left only by reset */
static const uint8_t fsm_next[NSTATES][NSTATES] = {
    [S_ERR] = {BAD, BAD, BAD, BAD, BAD, BAD, BAD, BAD},
    [S_STP] = {BAD, S_STP, S_RUN, S_SC, S_RES, BAD, BAD, BAD},
    [S_RUN] = {BAD, S_STP, S_RUN, S_STP, S_STP, BAD, BAD, BAD},
    [S_SC] = {BAD, S_STP, S_STP, S_SC, S_STP, BAD, BAD, BAD},
    [S_RES] = {BAD, S_STP, S_STP, S_STP, S_RES, BAD, BAD, BAD},
    [5] = {BAD, BAD, BAD, BAD, BAD, BAD, BAD, BAD},
    [6] = {BAD, BAD, BAD, BAD, BAD, BAD, BAD, BAD},
    [7] = {BAD, BAD, BAD, BAD, BAD, BAD, BAD, BAD},
};

static void test_fsm_table(void)
{
	unsigned bad = 0, n = 0;

	for (uint32_t c = 0; c < NSTATES + 2; c++)
		for (uint32_t t = 0; t < NSTATES + 2; t++) {
			uint32_t next = 0xdead;
			int rc = vcxl_mig_next_state(c, t, &next);
			uint8_t exp = c < NSTATES && t < NSTATES ? fsm_next[c][t] : BAD;

			n++;
			if (exp == BAD ? rc != -EINVAL : (rc || next != exp)) {
				bad++;
				diag("%s -> %s: rc %d next %u, expected %u", vcxl_mig_state_name(c),
				     vcxl_mig_state_name(t), rc, next, exp);
			}
		}
	is(bad, 0, "next state of all %u (state, target) pairs as the kernel's arcs", n);
	ok(!strcmp(vcxl_mig_state_name(S_SC), "stop-copy"), "state names");
}

/* ---- round trip ------------------------------------------------------------ */

#define JOB_LEN (16 * M)
#define PATTERN 0x1122334455667788ull
#define RAM_OFF 0x200000u /* in BAR0, past the component block */

static bool mem_is(struct env *e, uint64_t off, uint64_t len, uint64_t pattern)
{
	const uint8_t *p = (const uint8_t *)vcxl_model_mem(e->m) + e->dpa + off;

	for (uint64_t i = 0; i < len; i++)
		if (p[i] != (uint8_t)(pattern >> (8 * ((off + i) % 8))))
			return false;
	return true;
}

/* A source with everything set: decoder committed, registers, BAR0 RAM, a
 * FILL job of 16 MiB one step in (4 MiB written), stopped; its stream. */
static int make_source(struct env *a, struct vcxl_mig_buf *b)
{
	if (env_init(a, 512 * M, VCXL_MODEL_ACCEL))
		return -1;
	vcxl_vdev_ops.mig_dirty(a->v, true);
	commit0(a, 0x1000000000ull, 256 * M);
	g_wr(a->v, 0, RAM_OFF, 8, 0xfeedfacecafebeefull);
	g_wr(a->v, 0, RAM_OFF + 0x1ff8, 8, 0x0102030405060708ull); /* a run of 2 pages */
	g_wr(a->v, 0, RAM_OFF + 0x3000, 4, 0x12345678);
	irq_on(a, 1);
	eng_w(a, ACCEL_REG_JOB_OP, 4, ACCEL_OP_FILL);
	eng_w(a, ACCEL_REG_JOB_FLAGS, 4, ACCEL_JOBF_IRQ);
	eng_w(a, ACCEL_REG_JOB_VECTOR, 4, 1);
	eng_w(a, ACCEL_REG_JOB_DST, 8, a->dpa);
	eng_w(a, ACCEL_REG_JOB_LEN, 8, JOB_LEN);
	eng_w(a, ACCEL_REG_JOB_PATTERN, 8, PATTERN);
	eng_w(a, ACCEL_REG_DOORBELL, 4, ACCEL_DOORBELL_GO);
	vcxl_vdev_ops.mig_quiesce(a->v, true);
	/* stopped: polls move nothing */
	vcxl_vdev_ops.poll(a->v);
	return save(a, b);
}

/* Decoder notifications (the server logs each and keeps what its status
 * shows) counted */
struct notes {
	unsigned on, off;
	uint64_t base;
};

static void count_note(void *opaque, unsigned n, bool on, uint64_t gpa, uint64_t size,
		       uint64_t region_off)
{
	struct notes *c = opaque;

	(void)n, (void)size, (void)region_off;
	if (on) {
		c->on++;
		c->base = gpa;
	} else {
		c->off++;
	}
}

/* A load notifies the decoders it changed and no other: loading a state
 * whose decoder 0 is where the device has it says nothing (it said
 * "decommitted" then "committed": two log lines in the downtime) */
static void test_load_notifies_changes(void)
{
	const uint64_t base = 0x1000000000ull;
	struct env a, b, f;
	struct vcxl_mig_buf sa = {0}, sf = {0};
	struct notes c = {0};

	if (env_init(&a, 512 * M, VCXL_MODEL_ACCEL) || env_init(&b, 512 * M, VCXL_MODEL_ACCEL) ||
	    env_init(&f, 512 * M, VCXL_MODEL_ACCEL)) {
		ok(0, "devices");
		return;
	}
	commit0(&a, base, 256 * M);
	ok(committed0(&a), "source: decoder 0 committed");
	setup_ok(save(&a, &sa) || save(&f, &sf));
	vcxl_vdev_set_hdm_notify(b.v, count_note, &c);
	is(load(&b, sa.data, sa.len), 0, "its state loads into a fresh device");
	ok(c.on == 1 && c.off == 0 && c.base == base,
	   "one notification: decoder 0 committed at 0x%llx (on %u, off %u)",
	   (unsigned long long)c.base, c.on, c.off);
	c = (struct notes){0};
	is(load(&b, sa.data, sa.len), 0, "the same state again");
	ok(c.on == 0 && c.off == 0, "no notification: nothing changed (on %u, off %u)", c.on,
	   c.off);
	c = (struct notes){0};
	is(load(&b, sf.data, sf.len), 0, "a state without the decoder");
	ok(c.on == 0 && c.off == 1, "one notification: decoder 0 decommitted (on %u, off %u)", c.on,
	   c.off);
	vcxl_mig_buf_free(&sa);
	vcxl_mig_buf_free(&sf);
	env_fini(&a);
	env_fini(&b);
	env_fini(&f);
}

static void test_round_trip(void)
{
	struct env a, b;
	struct vcxl_mig_buf s, cnt = {.count_only = true};
	uint8_t ram[8];

	if (make_source(&a, &s)) {
		ok(0, "source");
		return;
	}
	ok(eng(&a, ACCEL_REG_STATUS) & ACCEL_STATUS_BUSY, "source: the job is in flight at STOP");
	ok(a.m->job.done == 4 * M, "source: one step of the job done before STOP (0x%llx)",
	   (unsigned long long)a.m->job.done);
	is(vcxl_vdev_ops.mig_save(a.v, &cnt), 0, "count-only save");
	ok(cnt.len >= s.len, "the stop-copy size bounds the stream (%zu >= %zu bytes)", cnt.len,
	   s.len);
	ok(s.len < VCXL_MIG_STATE_MAX + 4 * M + 8 * 1024,
	   "stream: %zu bytes, under 8 MiB plus the 4 MiB the job dirtied", s.len);

	if (env_init(&b, 512 * M, VCXL_MODEL_ACCEL)) {
		ok(0, "destination");
		return;
	}
	irq_on(&b, 1); /* the destination's client arms its vectors */
	/* BAR0 RAM the stream does not hold: zero after the load */
	g_wr(b.v, 0, RAM_OFF + 0x5000, 4, 0x5a5a5a5a);
	vcxl_vdev_ops.mig_quiesce(b.v, true);
	{
		struct vcxl_mig_buf b0, b1;
		int rs = save(&b, &b0);

		is(check(&b, s.data, s.len), 0, "the stream checks on a fresh device: %s", b.err);
		is(rs | save(&b, &b1), 0, "saves around the check");
		ok(same_state(&b0, &b1) && !committed0(&b),
		   "the check applied nothing (%zu bytes of state unchanged)", b1.len);
		vcxl_mig_buf_free(&b0);
		vcxl_mig_buf_free(&b1);
	}
	is(load(&b, s.data, s.len), 0, "load on a fresh device: %s", b.err);
	is(memcmp(a.v->vcfg.val, b.v->vcfg.val, a.v->vcfg.size), 0, "virtual config space equal");
	is(memcmp(a.v->vcomp.val, b.v->vcomp.val, a.v->vcomp.size), 0,
	   "virtual component block equal");
	ok(committed0(&b), "decoder 0 committed on the destination");
	is(hr(&b, CXL_HDM_DEC_BASE_HI(0)), 0x10, "decoder 0 base");
	ok(vcxl_rf_group_locked(&b.v->vcomp, b.v->comp.hdm.committed_group[0]) ==
	       vcxl_rf_group_locked(&a.v->vcomp, a.v->comp.hdm.committed_group[0]),
	   "decoder 0's commit lock as the source's");
	for (uint32_t r = ACCEL_REG_JOB_OP; r < ACCEL_REG_DPA_WIN_BASE; r += 4)
		if (eng(&a, r) != eng(&b, r))
			ok(0, "engine register 0x%x: 0x%x vs 0x%x", r, eng(&a, r), eng(&b, r));
	ok(1, "engine registers equal");
	memset(ram, 0, sizeof(ram));
	is(g_rd(b.v, 0, RAM_OFF, 8, NULL), 0xfeedfacecafebeefull, "BAR0 RAM");
	is(g_rd(b.v, 0, RAM_OFF + 0x3000, 4, NULL), 0x12345678, "BAR0 RAM, another page");
	is(g_rd(b.v, 0, RAM_OFF + 0x1ff8, 8, NULL), 0x0102030405060708ull,
	   "BAR0 RAM, the second page of a run written in one go");
	is(g_rd(b.v, 0, RAM_OFF + 0x5000, 4, NULL), 0, "BAR0 RAM the stream lacks: zero");
	ok(mem_is(&b, 0, 4 * M, PATTERN), "device memory the job wrote before STOP arrived");
	ok(eng(&b, ACCEL_REG_STATUS) & ACCEL_STATUS_BUSY, "destination: the job is in flight");
	is(b.irqs[1], 0, "no interrupt while stopped");
	vcxl_vdev_ops.mig_quiesce(b.v, false);
	for (int i = 0; i < 100 && (eng(&b, ACCEL_REG_STATUS) & ACCEL_STATUS_BUSY); i++)
		vcxl_vdev_ops.poll(b.v);
	is(eng(&b, ACCEL_REG_STATUS) & (ACCEL_STATUS_BUSY | ACCEL_STATUS_DONE), ACCEL_STATUS_DONE,
	   "the job completed on the destination");
	is(eng(&b, ACCEL_REG_JOBS_DONE), 1, "JOBS_DONE");
	is(b.irqs[1], 1, "its completion interrupt");
	ok(mem_is(&b, 0, JOB_LEN, PATTERN), "all 16 MiB filled");
	/* a new job runs */
	eng_w(&b, ACCEL_REG_JOB_LEN, 8, 64 * 1024);
	eng_w(&b, ACCEL_REG_JOB_PATTERN, 8, 0);
	eng_w(&b, ACCEL_REG_DOORBELL, 4, ACCEL_DOORBELL_GO);
	is(eng(&b, ACCEL_REG_JOBS_DONE), 2, "a new job runs after the migration");
	is(b.irqs[1], 2, "and interrupts");
	/* the same stream loads again (save/restore: the same file twice) */
	is(load(&b, s.data, s.len), 0, "the same stream loads again");
	vcxl_mig_buf_free(&s);
	env_fini(&b);
	env_fini(&a);
}

static void test_type3_round_trip(void)
{
	struct env a, b;
	struct vcxl_mig_buf s;

	if (env_init(&a, 256 * M, VCXL_MODEL_TYPE3) || env_init(&b, 256 * M, VCXL_MODEL_TYPE3)) {
		ok(0, "type3 devices");
		return;
	}
	memset(a.m->lsa, 0x5a, 64);
	a.m->memdev.int_policy[0] = 2;
	is(save(&a, &s), 0, "type3: save");
	is(load(&b, s.data, s.len), 0, "type3: load (%s)", b.err);
	is(memcmp(a.m->lsa, b.m->lsa, sizeof(a.m->lsa)), 0, "type3: LSA");
	is(b.m->memdev.int_policy[0], 2, "type3: event interrupt policy");
	is(memcmp(a.m->memdevrf.val, b.m->memdevrf.val, a.m->memdevrf.size), 0,
	   "type3: memory device registers");
	vcxl_mig_buf_free(&s);
	env_fini(&b);
	struct env c;
	if (!env_init(&c, 256 * M, VCXL_MODEL_ACCEL)) {
		is(save(&a, &s), 0, "type3: save again");
		ok(load(&c, s.data, s.len) == -EINVAL && strstr(c.err, "geometry"),
		   "a Type-3 stream on an accelerator: refused (%s)", c.err);
		vcxl_mig_buf_free(&s);
		env_fini(&c);
	}
	env_fini(&a);
}

/* ---- hostile streams --------------------------------------------------------- */

struct sec {
	uint32_t type, flags;
	const uint8_t *p;
	uint64_t len;
};

/* The sections, decoded (it owns the payloads: vcxl_mig_close when done);
 * build() codes them again as the writer does. */
static unsigned split(struct vcxl_mig_iter *it, const uint8_t *s, size_t len,
		      struct vcxl_mig_hdr *h, struct sec *out)
{
	unsigned n = 0;
	char err[128];

	if (vcxl_mig_open(it, s, len, h, err, sizeof(err)))
		return 0;
	while (n < 32 && vcxl_mig_next(it, &out[n].type, &out[n].flags, &out[n].p, &out[n].len, err,
				       sizeof(err)) > 0)
		out[n++].flags &= ~VCXL_MIG_SEC_ZERO_RUNS;
	return n;
}

/* Build a stream of these sections, in this order, with correct checksums. */
static void build(struct vcxl_mig_buf *b, const struct vcxl_mig_geom *g, const struct sec *s,
		  unsigned n)
{
	memset(b, 0, sizeof(*b));
	vcxl_mig_begin(b, g);
	for (unsigned i = 0; i < n; i++) {
		vcxl_mig_sec_begin(b, s[i].type, s[i].flags);
		vcxl_mig_put(b, s[i].p, s[i].len);
		vcxl_mig_sec_end(b);
	}
	vcxl_mig_finish(b);
}

static int find(const struct sec *s, unsigned n, uint32_t type)
{
	for (unsigned i = 0; i < n; i++)
		if (s[i].type == type)
			return (int)i;
	return -1;
}

/* refused with EINVAL, and the device reset (decoder 0 not committed) and usable */
static void refused(struct env *b, const struct vcxl_mig_buf *x, const char *what)
{
	int rc;

	commit0(b, 0x2000000000ull, 256 * M);
	rc = check(b, x->data, x->len);
	ok(rc == -EINVAL && b->err[0] && committed0(b),
	   "%s: the check refuses it and applies nothing (%s)", what, b->err);
	rc = load(b, x->data, x->len);
	ok(rc == -EINVAL && b->err[0] && !committed0(b), "%s: refused, device reset (%s)", what,
	   b->err);
	g_wr(b->v, 0, RAM_OFF, 4, 0xabcd);
	ok(g_rd(b->v, 0, RAM_OFF, 4, NULL) == 0xabcd, "%s: device usable after", what);
}

static void test_hostile(void)
{
	struct env a, b;
	struct vcxl_mig_buf s, x;
	struct vcxl_mig_hdr h;
	struct sec sec[32], t[33];
	struct vcxl_mig_iter it;
	unsigned n, bad = 0;
	uint8_t *c;

	if (make_source(&a, &s) || env_init(&b, 512 * M, VCXL_MODEL_ACCEL)) {
		ok(0, "devices");
		return;
	}
	n = split(&it, s.data, s.len, &h, sec);
	ok(n >= 9, "%u sections", n);

	/* truncated: at every byte of the header, at every byte of the first 64 of
	 * each section (its head, its first fields) and of the last 8 before the
	 * next, and every 4093rd byte elsewhere (each failed load resets the
	 * device: 0.5 ms) */
	{
		unsigned tries = 0;
		size_t at[34];
		at[0] = VCXL_MIG_HDR_LEN;
		for (unsigned i = 0; i < n; i++)
			at[i + 1] = (size_t)(sec[i].p - s.data) + sec[i].len;
		for (size_t l = 0; l < s.len; l++) {
			bool near = l < VCXL_MIG_HDR_LEN;
			for (unsigned i = 0; i <= n && !near; i++)
				near =
				    (l >= at[i] && l < at[i] + 64) || (l + 8 >= at[i] && l < at[i]);
			if (!near && l % 4093)
				continue;
			tries++;
			if (load(&b, s.data, l) != -EINVAL)
				bad++;
		}
		is(bad, 0, "truncated at %u of its %zu bytes: refused", tries, s.len);
	}
	/* truncated with the header's length (and CRC) fixed: found by the sections */
	c = malloc(s.len);
	bad = 0;
	for (size_t l = VCXL_MIG_HDR_LEN; l < s.len; l += 509) {
		uint64_t v = l;
		uint32_t crc;
		memcpy(c, s.data, l);
		memcpy(c + 16, &v, 8);
		memset(c + 28, 0, 4);
		crc = vcxl_crc32(0, c, VCXL_MIG_HDR_LEN);
		memcpy(c + 28, &crc, 4);
		if (load(&b, c, l) != -EINVAL)
			bad++;
	}
	is(bad, 0, "truncated with a consistent header, every 509 bytes: refused");
	refused(&b, &(struct vcxl_mig_buf){.data = s.data, .len = s.len - 1}, "one byte short");

	memcpy(c, s.data, s.len);
	c[0] ^= 1;
	refused(&b, &(struct vcxl_mig_buf){.data = c, .len = s.len}, "bad magic");
	ok(strstr(b.err, "magic") != NULL, "the reason names the magic");
	memcpy(c, s.data, s.len);
	c[8] = 2; /* major version 2, header CRC fixed */
	{
		uint32_t crc;
		memset(c + 28, 0, 4);
		crc = vcxl_crc32(0, c, VCXL_MIG_HDR_LEN);
		memcpy(c + 28, &crc, 4);
	}
	refused(&b, &(struct vcxl_mig_buf){.data = c, .len = s.len}, "version 2");
	ok(strstr(b.err, "version") != NULL, "the reason names the version");
	memcpy(c, s.data, s.len);
	c[s.len / 2] ^= 0x40;
	refused(&b, &(struct vcxl_mig_buf){.data = c, .len = s.len}, "a flipped bit");
	ok(strstr(b.err, "checksum") != NULL, "the reason names the checksum");
	memcpy(c, s.data, s.len);
	c[20] ^= 1; /* header length field... of the stream: header CRC */
	refused(&b, &(struct vcxl_mig_buf){.data = c, .len = s.len}, "header bit");
	free(c);

	/* sections reordered, duplicated, missing, oversized, unknown */
	memcpy(t, sec, n * sizeof(*t));
	t[0] = sec[1];
	t[1] = sec[0];
	build(&x, &h.geom, t, n);
	refused(&b, &x, "two sections swapped");
	ok(strstr(b.err, "out of order") != NULL, "the reason: out of order");
	vcxl_mig_buf_free(&x);
	memcpy(t, sec, n * sizeof(*t));
	memmove(t + 2, t + 1, (n - 1) * sizeof(*t));
	t[1] = t[0];
	build(&x, &h.geom, t, n + 1);
	refused(&b, &x, "a section twice");
	ok(strstr(b.err, "duplicated") != NULL, "the reason: duplicated");
	vcxl_mig_buf_free(&x);
	for (unsigned drop = 0; drop < n; drop++) {
		unsigned k = 0;
		for (unsigned i = 0; i < n; i++)
			if (i != drop)
				t[k++] = sec[i];
		build(&x, &h.geom, t, k);
		if (sec[drop].type == VCXL_MIG_SEC_DEVMEM) {
			/* without the dirty pages the state is still whole */
			vcxl_mig_buf_free(&x);
			continue;
		}
		commit0(&b, 0x2000000000ull, 256 * M);
		if (load(&b, x.data, x.len) != -EINVAL || committed0(&b))
			ok(0, "without %s: loaded", vcxl_mig_sec_name(sec[drop].type));
		vcxl_mig_buf_free(&x);
	}
	ok(1, "each mandatory section missing: refused");
	{
		int i = find(sec, n, VCXL_MIG_SEC_MODEL_BAR0);
		uint8_t *big = calloc(1, sec[i].len + 4096);
		memcpy(big, sec[i].p, sec[i].len);
		memcpy(t, sec, n * sizeof(*t));
		t[i].p = big;
		t[i].len = sec[i].len + 4096;
		build(&x, &h.geom, t, n);
		refused(&b, &x, "MODEL_BAR0 with a page too many");
		vcxl_mig_buf_free(&x);
		t[i].len = sec[i].len - 8;
		build(&x, &h.geom, t, n);
		refused(&b, &x, "MODEL_BAR0 8 bytes short");
		vcxl_mig_buf_free(&x);
		free(big);
	}
	{
		/* an unknown section: refused if mandatory, skipped if optional */
		static const uint8_t junk[16] = {1, 2, 3};
		memcpy(t, sec, n * sizeof(*t));
		t[n] = (struct sec){.type = 40, .p = junk, .len = sizeof(junk)};
		build(&x, &h.geom, t, n + 1);
		refused(&b, &x, "an unknown mandatory section");
		vcxl_mig_buf_free(&x);
		t[n].flags = VCXL_MIG_SEC_OPTIONAL;
		build(&x, &h.geom, t, n + 1);
		is(load(&b, x.data, x.len), 0, "an unknown optional section is skipped (%s)",
		   b.err);
		vcxl_mig_buf_free(&x);
	}
	{
		/* a section length past the end (its CRC no matter) */
		memcpy(t, sec, n * sizeof(*t));
		build(&x, &h.geom, t, n);
		uint64_t huge = 1ull << 62;
		memcpy(x.data + VCXL_MIG_HDR_LEN + 8, &huge, 8);
		refused(&b, &x, "a section length of 2^62");
		vcxl_mig_buf_free(&x);
	}

	/* another geometry */
	{
		struct vcxl_mig_geom g = h.geom;
		g.region_size *= 2;
		build(&x, &g, sec, n);
		refused(&b, &x, "another region size");
		ok(strstr(b.err, "geometry") != NULL, "the reason: geometry");
		vcxl_mig_buf_free(&x);
		g = h.geom;
		g.guest_decoders++;
		build(&x, &g, sec, n);
		refused(&b, &x, "another decoder count");
		vcxl_mig_buf_free(&x);
	}
	{
		struct env d;
		if (!env_init(&d, 1 * G, VCXL_MODEL_ACCEL)) {
			ok(load(&d, s.data, s.len) == -EINVAL && strstr(d.err, "geometry"),
			   "a destination with another --mem-size refuses (%s)", d.err);
			env_fini(&d);
		}
	}

	/* consistent framing, content that breaks the rules here */
	{
		int i = find(sec, n, VCXL_MIG_SEC_VCOMP);
		uint8_t *p = malloc(sec[i].len);
		uint32_t sz = 0x40000000u; /* 1 GiB, beyond the 512 MiB region */
		memcpy(p, sec[i].p, sec[i].len);
		memcpy(p + a.v->comp.hdm.off + CXL_HDM_DEC_SIZE_HI(0), &(uint32_t){1}, 4);
		memcpy(p + a.v->comp.hdm.off + CXL_HDM_DEC_SIZE_LO(0), &sz, 4);
		memcpy(t, sec, n * sizeof(*t));
		t[i].p = p;
		build(&x, &h.geom, t, n);
		refused(&b, &x, "decoder 0 committed past the region");
		ok(strstr(b.err, "decoder 0") != NULL, "the reason names the decoder");
		vcxl_mig_buf_free(&x);
		free(p);
	}
	{
		int i = find(sec, n, VCXL_MIG_SEC_HOST);
		uint8_t *p = malloc(sec[i].len);
		memcpy(p, sec[i].p, sec[i].len);
		p[8] ^= 0x10; /* the host region's HPA */
		memcpy(t, sec, n * sizeof(*t));
		t[i].p = p;
		build(&x, &h.geom, t, n);
		refused(&b, &x, "another host region");
		ok(strstr(b.err, "host region") != NULL, "the reason: host region");
		vcxl_mig_buf_free(&x);
		free(p);
	}
	{
		int i = find(sec, n, VCXL_MIG_SEC_MODEL_JOB);
		uint8_t *p = malloc(sec[i].len);
		uint64_t len = 4 * G;
		memcpy(p, sec[i].p, sec[i].len);
		memcpy(p + 32, &len, 8); /* the job's length past device memory */
		memcpy(t, sec, n * sizeof(*t));
		t[i].p = p;
		build(&x, &h.geom, t, n);
		refused(&b, &x, "a job past device memory");
		vcxl_mig_buf_free(&x);
		free(p);
	}
	{
		int i = find(sec, n, VCXL_MIG_SEC_DEVMEM);
		uint8_t *p = malloc(sec[i].len);
		uint64_t pg = 1ull << 40;
		memcpy(p, sec[i].p, sec[i].len);
		memcpy(p + 16, &pg, 8);
		memcpy(t, sec, n * sizeof(*t));
		t[i].p = p;
		build(&x, &h.geom, t, n);
		refused(&b, &x, "a dirty page outside the region");
		vcxl_mig_buf_free(&x);
		free(p);
	}
	is(load(&b, s.data, s.len), 0, "after all that, the good stream loads");
	ok(committed0(&b), "and its decoder is committed");
	vcxl_mig_close(&it);
	vcxl_mig_buf_free(&s);
	env_fini(&b);
	env_fini(&a);
}

/* ---- device memory the device wrote, through DMA logging reports ------------ */

#define DEC0_GPA 0x1000000000ull /* decoder 0: region [0, 256 MiB) */
#define DEC1_GPA 0x2000000000ull /* decoder 1: region [256 MiB, 512 MiB) */
#define DEC_SIZE (256 * M)
#define PG	 4096u
#define RPT_BITS (DEC_SIZE / PG) /* a report over a whole decoder in 4 KiB pages */
#define is_str(got, exp, ...)                                                                      \
	do {                                                                                       \
		const char *g_ = (got), *e_ = (exp);                                               \
		if (!ok(!strcmp(g_, e_), __VA_ARGS__))                                             \
			diag("  got \"%s\", expected \"%s\"", g_, e_);                             \
	} while (0)

static void commit_n(struct env *e, unsigned n, uint64_t base, uint64_t size)
{
	hw(e, CXL_HDM_GLOBAL_CTRL, CXL_HDM_GCTRL_ENABLE);
	hw(e, CXL_HDM_DEC_BASE_HI(n), (uint32_t)(base >> 32));
	hw(e, CXL_HDM_DEC_BASE_LO(n), (uint32_t)base);
	hw(e, CXL_HDM_DEC_SIZE_HI(n), (uint32_t)(size >> 32));
	hw(e, CXL_HDM_DEC_SIZE_LO(n), (uint32_t)size);
	hw(e, CXL_HDM_DEC_CTRL(n), CXL_HDM_DEC_CTRL_COMMIT);
}

/* A FILL job of the engine at region offset off, run to its end. */
static void fill(struct env *e, uint64_t off, uint64_t len, uint64_t pattern)
{
	eng_w(e, ACCEL_REG_JOB_OP, 4, ACCEL_OP_FILL);
	eng_w(e, ACCEL_REG_JOB_FLAGS, 4, 0);
	eng_w(e, ACCEL_REG_JOB_DST, 8, e->dpa + off);
	eng_w(e, ACCEL_REG_JOB_LEN, 8, len);
	eng_w(e, ACCEL_REG_JOB_PATTERN, 8, pattern);
	eng_w(e, ACCEL_REG_DOORBELL, 4, ACCEL_DOORBELL_GO);
	for (int i = 0; i < 1000 && (eng(e, ACCEL_REG_STATUS) & ACCEL_STATUS_BUSY); i++)
		vcxl_vdev_ops.poll(e->v);
}

/* The bits set in a bitmap of nbits, as "k,k,..." (at most a few). */
static const char *bits_of(const uint64_t *bm, uint64_t nbits, char *buf, size_t len)
{
	size_t o = 0;

	buf[0] = 0;
	for (uint64_t k = 0; k < nbits && o + 24 < len; k++)
		if (bm[k / 64] & (1ull << (k % 64)))
			o += (size_t)snprintf(buf + o, len - o, "%s%llu", o ? "," : "",
					      (unsigned long long)k);
	return buf;
}

/* A report as the server makes it for a client (QEMU) with a DMA window at
 * each decoder's range: the op once per window; the pages, or the first error. */
static int64_t report(struct env *e, uint64_t iova, uint64_t len, uint64_t ps, uint64_t *bm,
		      size_t words)
{
	static const uint64_t win[][2] = {{DEC0_GPA, DEC_SIZE}, {DEC1_GPA, DEC_SIZE}};
	int64_t total = 0;

	memset(bm, 0, words * 8);
	for (unsigned i = 0; i < 2; i++) {
		int64_t n =
		    vcxl_vdev_ops.mig_dirty_report(e->v, iova, len, ps, bm, win[i][0], win[i][1]);
		if (n < 0)
			return n;
		total += n;
	}
	return total;
}

/* The op for one client window */
static int64_t report_win(struct env *e, uint64_t iova, uint64_t len, uint64_t *bm, size_t words,
			  uint64_t win, uint64_t win_len)
{
	memset(bm, 0, words * 8);
	return vcxl_vdev_ops.mig_dirty_report(e->v, iova, len, PG, bm, win, win_len);
}

/* DEVMEM's page indexes in a saved stream: their count, the first few in pg. */
static int64_t devmem_pages(struct env *e, uint64_t *pg, unsigned max)
{
	struct vcxl_mig_buf b;
	struct vcxl_mig_hdr h;
	struct vcxl_mig_iter it;
	struct sec sec[32];
	unsigned n;
	int i;
	uint64_t cnt = 0;

	if (save(e, &b))
		return -1;
	n = split(&it, b.data, b.len, &h, sec);
	i = find(sec, n, VCXL_MIG_SEC_DEVMEM);
	if (i < 0) {
		vcxl_mig_close(&it);
		vcxl_mig_buf_free(&b);
		return -1;
	}
	memcpy(&cnt, sec[i].p + 8, 8);
	for (unsigned k = 0; k < max && k < cnt; k++)
		memcpy(&pg[k], sec[i].p + 16 + 8 * k, 8);
	vcxl_mig_close(&it);
	vcxl_mig_buf_free(&b);
	return (int64_t)cnt;
}

static void test_devmem_report(void)
{
	struct env a, b;
	const size_t words = RPT_BITS / 64;
	uint64_t *bm = calloc(words, 8), pg[4] = {0};
	struct vcxl_mig_buf s;
	char buf[256];

	if (!bm || env_init_dec(&a, 512 * M, VCXL_MODEL_ACCEL, 2)) {
		ok(0, "env");
		free(bm);
		return;
	}
	is(vcxl_vdev_ops.mig_dirty(a.v, true), 0, "tracking on (DMA_LOGGING_START)");
	commit_n(&a, 0, DEC0_GPA, DEC_SIZE);
	ok(committed0(&a), "decoder 0 committed at 0x%llx", (unsigned long long)DEC0_GPA);
	/* one job where decoder 0 maps, one where no decoder does */
	fill(&a, 0x3000, 0x2000, PATTERN);
	fill(&a, 300 * M, 0x1000, PATTERN);
	is(report(&a, DEC0_GPA, DEC_SIZE, PG, bm, words), 2,
	   "a report over decoder 0's window: 2 device pages");
	is_str(bits_of(bm, RPT_BITS, buf, sizeof(buf)), "3,4",
	       "exactly the job's pages, at their guest-physical address");
	is(report(&a, DEC0_GPA, DEC_SIZE, PG, bm, words), 0, "a second report: none");
	is_str(bits_of(bm, RPT_BITS, buf, sizeof(buf)), "", "its bitmap is empty");
	is(devmem_pages(&a, pg, 4), 1, "the stream's DEVMEM: only the page no decoder maps");
	is(pg[0], 300 * M / PG, "that page (region page %llu)", (unsigned long long)pg[0]);

	/* written again after the report: reported again */
	fill(&a, 0x4000, 0x1000, ~PATTERN);
	is(devmem_pages(&a, pg, 4), 2, "a page written again is in DEVMEM until reported");
	is(report(&a, DEC0_GPA + 0x4000, PG, PG, bm, 1), 1, "a report of that page alone");
	is(bm[0], 1, "bit 0");
	is(devmem_pages(&a, pg, 4), 1, "and DEVMEM no longer has it");

	/* a report page smaller than the device's 4 KiB: bits, but nothing forgotten */
	fill(&a, 0x5000, 0x1000, PATTERN);
	is(report(&a, DEC0_GPA + 0x5000, 0x400, 0x400, bm, 1), 1, "a 1 KiB report inside the page");
	is(bm[0], 1, "its bit set");
	is(report(&a, DEC0_GPA + 0x5000, 0x2000, 0x400, bm, 1), 1,
	   "the page is still there: 1 KiB pages over 8 KiB");
	is(bm[0], 0xf, "the 4 report pages of the device page");
	is(report(&a, DEC0_GPA + 0x5000, 0x1000, 0x400, bm, 1), 0, "covered whole: forgotten");
	/* report pages larger than the device's: 1 GiB over decoder 0 */
	fill(&a, 0x10000, 0x1000, PATTERN);
	fill(&a, 200 * M, 0x3000, PATTERN);
	is(report(&a, 0, 128 * G, G, bm, words), 4,
	   "a report in 1 GiB pages over 128 GiB: 4 pages");
	is_str(bits_of(bm, 128, buf, sizeof(buf)), "64", "one bit: the GiB of decoder 0's base");
	is(report(&a, DEC0_GPA, DEC_SIZE, PG, bm, words), 0, "and they are forgotten");

	/* decoder 1: region offset 256 MiB, so the page no decoder mapped now maps */
	commit_n(&a, 1, DEC1_GPA, DEC_SIZE);
	ok(hr(&a, CXL_HDM_DEC_CTRL(1)) & CXL_HDM_DEC_CTRL_COMMITTED, "decoder 1 committed");
	is(report(&a, DEC1_GPA, DEC_SIZE, PG, bm, words), 1, "a report over decoder 1's window");
	is_str(bits_of(bm, RPT_BITS, buf, sizeof(buf)), "11264",
	       "the page at region 300 MiB, 44 MiB into decoder 1");
	is(devmem_pages(&a, pg, 4), 0, "DEVMEM is empty");

	/* partly overlapping reports, and ranges no decoder maps */
	fill(&a, DEC_SIZE - 0x1000, 0x1000, PATTERN);
	fill(&a, DEC_SIZE, 0x1000, PATTERN);
	is(report(&a, DEC0_GPA + DEC_SIZE - 0x2000, 0x4000, PG, bm, 1), 1,
	   "a report past decoder 0's end: its last page only");
	is(bm[0], 2, "bit 1");
	is(report(&a, DEC0_GPA + DEC_SIZE, DEC1_GPA - DEC0_GPA - DEC_SIZE, DEC_SIZE, bm, words), 0,
	   "between the decoders: nothing");
	is(report(&a, DEC1_GPA - 0x1000, 0x2000, PG, bm, 1), 1, "decoder 1's first page");
	is(bm[0], 2, "bit 1");

	/* hostile values: errno, nothing forgotten */
	fill(&a, 0x6000, 0x1000, PATTERN);
	/* a client window reaching past the decoders (guest RAM a decoder overlaps)
	 * is not the CXL memory: nothing through it */
	is(report_win(&a, DEC0_GPA, DEC_SIZE, bm, words, DEC0_GPA - DEC_SIZE, 2 * DEC_SIZE), 0,
	   "a window reaching below decoder 0: nothing reported");
	is(report_win(&a, DEC0_GPA, DEC_SIZE, bm, words, DEC0_GPA, DEC_SIZE + PG), 0,
	   "a window a page past decoder 0's end: nothing reported");
	is(report_win(&a, DEC0_GPA, DEC_SIZE, bm, words, DEC0_GPA, 0), -EINVAL,
	   "an empty window: EINVAL");
	is(report_win(&a, DEC0_GPA, DEC_SIZE, bm, words, DEC0_GPA, 0 - DEC0_GPA), -EINVAL,
	   "a wrapping window: EINVAL");
	is(report_win(&a, DEC0_GPA, DEC_SIZE, bm, words, DEC0_GPA + 0x6000, PG / 2), 1,
	   "a window of half the page: reported");
	is(report_win(&a, DEC0_GPA, DEC_SIZE, bm, words, DEC0_GPA + 0x6000, PG / 2), 1,
	   "and kept (the window holds only half of it)");
	is(report(&a, DEC0_GPA, DEC_SIZE, 0, bm, words), -EINVAL, "page size 0: EINVAL");
	is(report(&a, DEC0_GPA, DEC_SIZE, 3000, bm, words), -EINVAL, "page size 3000: EINVAL");
	is(report(&a, DEC0_GPA, 0, PG, bm, words), -EINVAL, "length 0: EINVAL");
	is(report(&a, ~0ull - 0xfff, 0x2000, PG, bm, words), -EINVAL, "a wrapping range: EINVAL");
	is(report(&a, DEC0_GPA + 0x800, PG, PG, bm, words), -EINVAL, "unaligned iova: EINVAL");
	is(report(&a, 1ull << 63, 1ull << 63, 1ull << 63, bm, 1), -EINVAL,
	   "the top half of the address space (its end wraps to 0): EINVAL");
	is(report(&a, 1ull << 62, 1ull << 62, 1ull << 62, bm, 1), 0,
	   "a 2^62 page at 2^62: no decoder there");
	is(devmem_pages(&a, pg, 4), 1, "the page is still in DEVMEM");

	/* every page reaches the destination, one way or the other: a copy of
	 * what the report returned (the client's RAM pass), then the stream */
	fill(&a, 0x7000, 0x1000, PATTERN);
	fill(&a, 400 * M, 0x1000, PATTERN);
	is(report(&a, DEC0_GPA, DEC_SIZE, PG, bm, words), 2, "pages 6 and 7 reported");
	vcxl_vdev_ops.mig_quiesce(a.v, true);
	is(save(&a, &s), 0, "stop-copy save");
	if (!env_init_dec(&b, 512 * M, VCXL_MODEL_ACCEL, 2)) {
		uint8_t *src = (uint8_t *)vcxl_model_mem(a.m) + a.dpa;
		uint8_t *dst = (uint8_t *)vcxl_model_mem(b.m) + b.dpa;

		for (uint64_t k = 0; k < RPT_BITS; k++) /* the client's copy */
			if (bm[k / 64] & (1ull << (k % 64)))
				memcpy(dst + k * PG, src + k * PG, PG);
		vcxl_vdev_ops.mig_quiesce(b.v, true);
		is(load(&b, s.data, s.len), 0, "the destination loads the stream: %s", b.err);
		ok(mem_is(&b, 0x6000, 0x2000, PATTERN) && mem_is(&b, 400 * M, 0x1000, PATTERN),
		   "reported pages (copied) and DEVMEM's (loaded) both arrived");
		ok(!mem_is(&b, 0x3000, 0x1000, PATTERN),
		   "a page an earlier report returned is not in the stream (copied then)");
		env_fini(&b);
	}
	vcxl_mig_buf_free(&s);
	is(vcxl_vdev_ops.mig_dirty(a.v, false), 0, "tracking off");
	fill(&a, 0x8000, 0x1000, PATTERN);
	is(report(&a, DEC0_GPA, DEC_SIZE, PG, bm, words), 0, "tracking off: nothing reported");
	env_fini(&a);

	/* adjacent decoders, one client window over both (QEMU's flat view merges
	 * two aliases of the region at contiguous offsets) */
	if (!env_init_dec(&a, 512 * M, VCXL_MODEL_ACCEL, 2)) {
		uint64_t *big = calloc(2 * words, 8);

		vcxl_vdev_ops.mig_dirty(a.v, true);
		commit_n(&a, 0, DEC0_GPA, DEC_SIZE);
		commit_n(&a, 1, DEC0_GPA + DEC_SIZE, DEC_SIZE);
		fill(&a, 0x1000, PG, PATTERN);
		fill(&a, DEC_SIZE + 0x2000, PG, PATTERN);
		is(report_win(&a, DEC0_GPA, 2 * DEC_SIZE, big, 2 * words, DEC0_GPA,
			      2 * DEC_SIZE + PG),
		   0, "adjacent decoders, a window a page past both: nothing");
		is(report_win(&a, DEC0_GPA, 2 * DEC_SIZE, big, 2 * words, DEC0_GPA, 2 * DEC_SIZE),
		   2, "one window over both decoders: a page of each");
		is_str(bits_of(big, 2 * RPT_BITS, buf, sizeof(buf)), "1,65538",
		       "at their guest-physical addresses");
		is(devmem_pages(&a, pg, 4), 0, "DEVMEM is empty");
		free(big);
		env_fini(&a);
	}
	free(bm);
}

/* ---- the protocol: a server thread with the vdev, a client ------------------ */

struct srv {
	struct env e;
	int fd;
	pthread_t th;
};

static void *srv_main(void *arg)
{
	struct srv *s = arg;
	struct vcxl_conn_cfg cfg = {.name = "mig"};
	struct vcxl_conn *c =
	    vcxl_conn_create(&cfg, &vcxl_vdev_ops, s->e.v, &vcxl_sock_io_ops, vcxl_sock_io(s->fd));
	int rc = 0;

	while (!rc) {
		struct pollfd p = {.fd = s->fd,
				   .events = vcxl_conn_wants_write(c) ? POLLOUT : POLLIN};
		int t = vcxl_conn_poll(c), n;

		n = poll(&p, 1, t < 0 ? 20000 : t);
		if (n < 0 || (n == 0 && t < 0))
			break;
		if (n)
			rc = (p.events & POLLOUT) ? vcxl_conn_on_writable(c)
						  : vcxl_conn_on_readable(c);
		if (!rc && vcxl_conn_drain(c) < 0)
			rc = -EIO;
	}
	vcxl_conn_destroy(c);
	close(s->fd);
	return NULL;
}

static struct vcxl_client *srv_start_caps(struct srv *s, const char *caps)
{
	struct vcxl_client *c;
	int sv[2];

	if (env_init(&s->e, 512 * M, VCXL_MODEL_ACCEL) ||
	    socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv))
		return NULL;
	fcntl(sv[0], F_SETFL, O_NONBLOCK);
	s->fd = sv[0];
	pthread_create(&s->th, NULL, srv_main, s);
	if (vcxl_client_from_fd(sv[1], &c) || vcxl_client_negotiate(c, caps))
		return NULL;
	return c;
}

static struct vcxl_client *srv_start(struct srv *s)
{
	return srv_start_caps(s, NULL);
}

static void srv_stop(struct srv *s, struct vcxl_client *c)
{
	vcxl_client_close(c);
	pthread_join(s->th, NULL);
	env_fini(&s->e);
}

/* DEVICE_FEATURE: the errno, and the reply payload in out (if any) */
static int feat(struct vcxl_client *c, uint32_t flags, uint32_t argsz, const void *data, size_t len,
		void *out, size_t outlen)
{
	uint8_t buf[256];
	struct vfio_device_feature f = {.argsz = argsz, .flags = flags};
	struct vcxl_client_reply rep;
	int rc;

	memcpy(buf, &f, sizeof(f));
	if (len)
		memcpy(buf + sizeof(f), data, len);
	rc = vcxl_client_raw(c, VFIO_USER_DEVICE_FEATURE, 0, buf, sizeof(f) + len, NULL, 0, &rep);
	if (rc)
		return rc;
	rc = (rep.hdr.flags & VFIO_USER_F_ERROR) ? (int)rep.hdr.error : 0;
	if (!rc && out)
		memcpy(out, rep.data, rep.len < outlen ? rep.len : outlen);
	vcxl_client_reply_free(&rep);
	return rc;
}

static int set_state(struct vcxl_client *c, uint32_t st)
{
	struct vfio_device_feature_mig_state m = {.device_state = st, .data_fd = -1};

	return feat(c, VFIO_DEVICE_FEATURE_SET | VFIO_DEVICE_FEATURE_MIG_DEVICE_STATE, 16, &m,
		    sizeof(m), NULL, 0);
}

static uint32_t get_state(struct vcxl_client *c)
{
	uint8_t out[16] = {0};
	uint32_t st = 0xff;

	if (!feat(c, VFIO_DEVICE_FEATURE_GET | VFIO_DEVICE_FEATURE_MIG_DEVICE_STATE, 16, NULL, 0,
		  out, sizeof(out)))
		memcpy(&st, out + 8, 4);
	return st;
}

/* MIG_DATA_READ of size: bytes returned, or -errno */
static long data_read(struct vcxl_client *c, uint32_t size, uint8_t *dst)
{
	struct vfio_user_mig_data d = {.argsz = 8 + size, .size = size};
	struct vcxl_client_reply rep;
	long n;

	if (vcxl_client_raw(c, VFIO_USER_MIG_DATA_READ, 0, &d, sizeof(d), NULL, 0, &rep))
		return -EIO;
	if (rep.hdr.flags & VFIO_USER_F_ERROR)
		n = -(long)rep.hdr.error;
	else {
		memcpy(&d, rep.data, 8);
		n = d.size;
		if (dst && rep.len == 8 + d.size)
			memcpy(dst, rep.data + 8, d.size);
		else if (rep.len != 8 + d.size)
			n = -EPROTO;
	}
	vcxl_client_reply_free(&rep);
	return n;
}

static int data_write(struct vcxl_client *c, const uint8_t *p, uint32_t size)
{
	uint8_t *buf = malloc(8 + size);
	struct vfio_user_mig_data d = {.argsz = 8 + size, .size = size};
	struct vcxl_client_reply rep;
	int rc;

	memcpy(buf, &d, 8);
	memcpy(buf + 8, p, size);
	rc = vcxl_client_raw(c, VFIO_USER_MIG_DATA_WRITE, 0, buf, 8 + size, NULL, 0, &rep);
	free(buf);
	if (rc)
		return rc;
	rc = (rep.hdr.flags & VFIO_USER_F_ERROR) ? (int)rep.hdr.error : 0;
	vcxl_client_reply_free(&rep);
	return rc;
}

/* The whole stream through MIG_DATA_READ in chunks; its length */
static size_t read_stream(struct vcxl_client *c, uint8_t **out)
{
	size_t len = 0, cap = 64 * M;
	uint8_t *p = malloc(cap);
	long n;

	while ((n = data_read(c, 256 * 1024, p + len)) > 0) {
		len += (size_t)n;
		if (n < 256 * 1024)
			break;
	}
	*out = p;
	return len;
}

static void test_protocol(void)
{
	struct srv s;
	struct vcxl_client *c = srv_start(&s);
	uint8_t out[64], *stream = NULL;
	uint64_t v = 0, size = 0;
	size_t len;

	if (!c) {
		ok(0, "server");
		return;
	}
	is(feat(c, VFIO_DEVICE_FEATURE_GET | VFIO_DEVICE_FEATURE_MIGRATION, 16, NULL, 0, out, 16),
	   0, "GET MIGRATION");
	memcpy(&v, out + 8, 8);
	is(v, VFIO_MIGRATION_STOP_COPY, "flags: STOP_COPY only (no P2P, no PRE_COPY)");
	is(feat(c, VFIO_DEVICE_FEATURE_PROBE | VFIO_DEVICE_FEATURE_GET | 1, 8, NULL, 0, NULL, 0), 0,
	   "PROBE GET MIGRATION");
	is(feat(c, VFIO_DEVICE_FEATURE_PROBE | VFIO_DEVICE_FEATURE_SET | 1, 8, NULL, 0, NULL, 0),
	   EINVAL, "PROBE SET MIGRATION: EINVAL (no SET)");
	is(feat(c, VFIO_DEVICE_FEATURE_GET | VFIO_DEVICE_FEATURE_SET | 2, 16, NULL, 0, NULL, 0),
	   EINVAL, "GET|SET without PROBE: EINVAL");
	is(feat(c, 1, 16, NULL, 0, NULL, 0), EINVAL, "no GET/SET/PROBE: EINVAL");
	is(feat(c, (1u << 19) | VFIO_DEVICE_FEATURE_GET | 1, 16, NULL, 0, NULL, 0), EINVAL,
	   "unknown flag bit: EINVAL");
	is(feat(c, VFIO_DEVICE_FEATURE_GET | 3, 16, NULL, 0, NULL, 0), ENOTTY,
	   "feature 3 (LOW_POWER_ENTRY): ENOTTY");
	is(feat(c, VFIO_DEVICE_FEATURE_GET | 1, 12, NULL, 0, NULL, 0), EINVAL,
	   "argsz too small for the reply: EINVAL");
	is(feat(c, VFIO_DEVICE_FEATURE_GET | 1, 4, NULL, 0, NULL, 0), EINVAL, "argsz 4: EINVAL");
	is(get_state(c), S_RUN, "RUNNING at connect");
	is(data_read(c, 64, NULL), -EINVAL, "MIG_DATA_READ while RUNNING: EINVAL");
	is(data_write(c, (const uint8_t *)"junk", 4), EINVAL,
	   "MIG_DATA_WRITE while RUNNING: EINVAL");

	is(feat(c, VFIO_DEVICE_FEATURE_GET | VFIO_DEVICE_FEATURE_MIG_DATA_SIZE, 16, NULL, 0, out,
		16),
	   0, "GET MIG_DATA_SIZE");
	memcpy(&size, out + 8, 8);
	is(set_state(c, S_SC), 0, "RUNNING -> STOP_COPY");
	is(get_state(c), S_SC, "in STOP_COPY");
	is(data_read(c, 2 * M, NULL), -EINVAL, "a read over max_data_xfer_size: EINVAL");
	len = read_stream(c, &stream);
	ok(len <= size, "the stream is within MIG_DATA_SIZE's answer (%zu <= %llu bytes)", len,
	   (unsigned long long)size);
	is(data_read(c, 64, NULL), 0, "at the end a read returns 0 bytes");
	is(set_state(c, VFIO_USER_DEVICE_STATE_PRE_COPY), EINVAL, "STOP_COPY -> PRE_COPY: EINVAL");
	is(get_state(c), S_SC, "still STOP_COPY");
	is(set_state(c, S_RES), 0, "STOP_COPY -> RESUMING (through STOP)");
	for (size_t off = 0; off < len; off += 100000)
		data_write(c, stream + off, (uint32_t)(len - off < 100000 ? len - off : 100000));
	is(set_state(c, S_RUN), 0, "RESUMING -> RUNNING: the stream loads");
	is(get_state(c), S_RUN, "RUNNING");

	/* garbage into RESUMING: ERROR, left only by DEVICE_RESET */
	is(set_state(c, S_RES), 0, "RUNNING -> RESUMING");
	is(data_write(c, (const uint8_t *)"garbage!", 8), 0, "8 bytes of garbage taken");
	is(set_state(c, S_STP), EINVAL, "RESUMING -> STOP with garbage: EINVAL");
	is(get_state(c), S_ERR, "ERROR");
	is(set_state(c, S_RUN), EINVAL, "ERROR -> RUNNING: EINVAL");
	is(set_state(c, S_ERR), EINVAL, "ERROR as a target: EINVAL");
	is(vcxl_client_reset(c), 0, "DEVICE_RESET");
	is(get_state(c), S_RUN, "RUNNING after DEVICE_RESET");

	/* every (reachable state, target) pair through the protocol */
	{
		static const uint32_t from[] = {S_STP, S_RUN, S_SC, S_RES};
		unsigned bad = 0, n = 0;
		for (unsigned i = 0; i < 4; i++)
			for (uint32_t t = 0; t < NSTATES + 1; t++) {
				uint32_t exp = t < NSTATES ? fsm_next[from[i]][t] : BAD;
				int rc;

				vcxl_client_reset(c);
				set_state(c, from[i]);
				if (from[i] == S_RES)
					data_write(c, stream, (uint32_t)(len < M ? len : M)),
					    (void)0;
				if (from[i] == S_RES && len > M)
					for (size_t off = M; off < len; off += M)
						data_write(
						    c, stream + off,
						    (uint32_t)(len - off < M ? len - off : M));
				rc = set_state(c, t);
				n++;
				if (exp == BAD ? (rc != EINVAL || get_state(c) != from[i])
					       : (rc || get_state(c) != t)) {
					bad++;
					diag("%s -> %s: rc %d state %s",
					     vcxl_mig_state_name(from[i]), vcxl_mig_state_name(t),
					     rc, vcxl_mig_state_name(get_state(c)));
				}
			}
		is(bad, 0, "%u transitions over the socket as the table says", n);
	}
	vcxl_client_reset(c);

	/* DMA logging: a job's DMA into client memory shows in the bitmap */
	{
		int mfd = memfd_create("guest", MFD_CLOEXEC);
		struct {
			struct vfio_user_dma_logging_control ctl;
			struct vfio_user_dma_logging_range r;
		} st = {{.page_size = 4096, .num_ranges = 1}, {0x100000, 0x100000}};
		struct vfio_user_dma_logging_report rep = {0x100000, 0x100000, 4096};
		uint8_t rout[8 + 24 + 32];
		uint64_t bm[4];

		setup_ok(ftruncate(mfd, 0x100000));
		is(vcxl_client_dma_map(c, 0x100000, 0x100000,
				       VFIO_USER_F_DMA_REGION_READ | VFIO_USER_F_DMA_REGION_WRITE,
				       mfd, 0, NULL),
		   0, "DMA map 1 MiB");
		is(feat(c, VFIO_DEVICE_FEATURE_GET | VFIO_DEVICE_FEATURE_DMA_LOGGING_REPORT, 64,
			&rep, sizeof(rep), NULL, 0),
		   EINVAL, "REPORT before START: EINVAL");
		is(feat(c, VFIO_DEVICE_FEATURE_SET | VFIO_DEVICE_FEATURE_DMA_LOGGING_START, 40, &st,
			sizeof(st), NULL, 0),
		   0, "DMA_LOGGING_START");
		is(feat(c, VFIO_DEVICE_FEATURE_SET | VFIO_DEVICE_FEATURE_DMA_LOGGING_START, 40, &st,
			sizeof(st), NULL, 0),
		   EBUSY, "START twice: EBUSY");
		/* the job: FILL 0x2000 bytes of client memory at +0x3000 */
		vcxl_client_write32(c, VCXL_MODEL_CTRL_BAR, ACCEL_REG_JOB_OP, ACCEL_OP_FILL);
		vcxl_client_write32(c, VCXL_MODEL_CTRL_BAR, ACCEL_REG_JOB_FLAGS,
				    ACCEL_JOBF_DST_HOST);
		vcxl_client_write64(c, VCXL_MODEL_CTRL_BAR, ACCEL_REG_JOB_DST, 0x103000);
		vcxl_client_write64(c, VCXL_MODEL_CTRL_BAR, ACCEL_REG_JOB_LEN, 0x2000);
		vcxl_client_write32(c, VCXL_MODEL_CTRL_BAR, ACCEL_REG_DOORBELL, 1);
		is(feat(c, VFIO_DEVICE_FEATURE_GET | VFIO_DEVICE_FEATURE_DMA_LOGGING_REPORT,
			sizeof(rout), &rep, sizeof(rep), rout, sizeof(rout)),
		   0, "REPORT");
		memcpy(bm, rout + 32, sizeof(bm));
		is(bm[0], 0x18, "pages 3 and 4 dirty, nothing else");
		ok(!bm[1] && !bm[2] && !bm[3], "the rest of the bitmap clear");
		is(feat(c, VFIO_DEVICE_FEATURE_GET | VFIO_DEVICE_FEATURE_DMA_LOGGING_REPORT,
			sizeof(rout), &rep, sizeof(rep), rout, sizeof(rout)),
		   0, "REPORT again");
		memcpy(bm, rout + 32, sizeof(bm));
		is(bm[0], 0, "a report clears what it reported");
		/* past clean words: page 138 (word 2) and the last, 255 (word 3) */
		vcxl_client_write64(c, VCXL_MODEL_CTRL_BAR, ACCEL_REG_JOB_DST, 0x18a000);
		vcxl_client_write64(c, VCXL_MODEL_CTRL_BAR, ACCEL_REG_JOB_LEN, 0x1000);
		vcxl_client_write32(c, VCXL_MODEL_CTRL_BAR, ACCEL_REG_DOORBELL, 1);
		vcxl_client_write64(c, VCXL_MODEL_CTRL_BAR, ACCEL_REG_JOB_DST, 0x1ff000);
		vcxl_client_write32(c, VCXL_MODEL_CTRL_BAR, ACCEL_REG_DOORBELL, 1);
		is(feat(c, VFIO_DEVICE_FEATURE_GET | VFIO_DEVICE_FEATURE_DMA_LOGGING_REPORT,
			sizeof(rout), &rep, sizeof(rep), rout, sizeof(rout)),
		   0, "REPORT after jobs at pages 138 and 255");
		memcpy(bm, rout + 32, sizeof(bm));
		ok(!bm[0] && !bm[1] && bm[2] == 1ull << 10 && bm[3] == 1ull << 63,
		   "only those two (%llx %llx %llx %llx)", (unsigned long long)bm[0],
		   (unsigned long long)bm[1], (unsigned long long)bm[2], (unsigned long long)bm[3]);
		vcxl_client_write64(c, VCXL_MODEL_CTRL_BAR, ACCEL_REG_JOB_DST, 0x103000);
		vcxl_client_write64(c, VCXL_MODEL_CTRL_BAR, ACCEL_REG_JOB_LEN, 0x2000);
		vcxl_client_write32(c, VCXL_MODEL_CTRL_BAR, ACCEL_REG_DOORBELL, 1);
		rep.page_size = 8192;
		is(feat(c, VFIO_DEVICE_FEATURE_GET | VFIO_DEVICE_FEATURE_DMA_LOGGING_REPORT,
			sizeof(rout), &rep, sizeof(rep), rout, sizeof(rout)),
		   0, "REPORT in 8 KiB pages");
		memcpy(bm, rout + 32, sizeof(bm));
		is(bm[0], 0x6, "8 KiB pages 1 and 2");
		rep.iova = 0x300000;
		is(feat(c, VFIO_DEVICE_FEATURE_GET | VFIO_DEVICE_FEATURE_DMA_LOGGING_REPORT,
			sizeof(rout), &rep, sizeof(rep), rout, sizeof(rout)),
		   EINVAL, "REPORT outside the logged range: EINVAL");
		rep.iova = 0x100000;
		rep.page_size = 4096;
		is(feat(c, VFIO_DEVICE_FEATURE_GET | VFIO_DEVICE_FEATURE_DMA_LOGGING_REPORT, 40,
			&rep, sizeof(rep), NULL, 0),
		   EINVAL, "REPORT with argsz too small for its bitmap: EINVAL");
		rep.page_size = 3000;
		is(feat(c, VFIO_DEVICE_FEATURE_GET | VFIO_DEVICE_FEATURE_DMA_LOGGING_REPORT,
			sizeof(rout), &rep, sizeof(rep), NULL, 0),
		   EINVAL, "REPORT page size not a power of 2: EINVAL");
		is(feat(c, VFIO_DEVICE_FEATURE_SET | VFIO_DEVICE_FEATURE_DMA_LOGGING_STOP, 8, NULL,
			0, NULL, 0),
		   0, "DMA_LOGGING_STOP");
		st.r.length = 0;
		is(feat(c, VFIO_DEVICE_FEATURE_SET | VFIO_DEVICE_FEATURE_DMA_LOGGING_START, 40, &st,
			sizeof(st), NULL, 0),
		   EINVAL, "START with an empty range: EINVAL");
		st.r.length = 0x1000;
		st.ctl.num_ranges = 2;
		is(feat(c, VFIO_DEVICE_FEATURE_SET | VFIO_DEVICE_FEATURE_DMA_LOGGING_START, 40, &st,
			sizeof(st), NULL, 0),
		   EINVAL, "START claiming more ranges than sent: EINVAL");
		close(mfd);
	}
	free(stream);
	srv_stop(&s, c);
}

/* A register of the model the stream carries, read through the protocol */
static uint64_t job_pattern(struct vcxl_client *c)
{
	uint64_t v = ~0ull;

	vcxl_client_read64(c, VCXL_MODEL_CTRL_BAR, ACCEL_REG_JOB_PATTERN, &v);
	return v;
}

/*
 * The destination loads the device's state at the write that brings the
 * whole stream (its header's length), not at RESUMING -> STOP, which QEMU asks
 * for milliseconds later in the downtime; the client sees the same results:
 * the write succeeds whatever the stream holds, RESUMING -> STOP says whether
 * it loaded, and bytes after the whole stream undo the load.
 */
static void test_preload(void)
{
	const uint64_t pat = 0x6b6b0123fedcba98ull;
	struct srv s;
	struct vcxl_client *c = srv_start(&s);
	uint8_t *stream = NULL, *bad = NULL;
	size_t len;

	if (!c) {
		ok(0, "server");
		return;
	}
	vcxl_client_write64(c, VCXL_MODEL_CTRL_BAR, ACCEL_REG_JOB_PATTERN, pat);
	is(job_pattern(c), pat, "a register set");
	is(set_state(c, S_SC), 0, "RUNNING -> STOP_COPY");
	len = read_stream(c, &stream);
	ok(len > 2 * VCXL_MIG_HDR_LEN, "the stream read (%zu bytes)", len);
	if (len <= 2 * VCXL_MIG_HDR_LEN)
		goto out;
	is(vcxl_client_reset(c), 0, "DEVICE_RESET");
	is(job_pattern(c), 0, "the register reset");

	is(set_state(c, S_RES), 0, "RUNNING -> RESUMING");
	is(data_write(c, stream, (uint32_t)(len - 1)), 0, "all of the stream but its last byte");
	is(job_pattern(c), 0, "nothing loaded yet");
	is(data_write(c, stream + len - 1, 1), 0, "its last byte");
	is(get_state(c), S_RES, "still RESUMING");
	is(job_pattern(c), pat, "the device's state loaded with it");
	is(set_state(c, S_STP), 0, "RESUMING -> STOP");
	is(job_pattern(c), pat, "the register as the source had it");
	is(set_state(c, S_RUN), 0, "STOP -> RUNNING");

	/* a byte after the whole stream: the load undone, STOP refused */
	vcxl_client_reset(c);
	is(set_state(c, S_RES), 0, "RESUMING again");
	is(data_write(c, stream, (uint32_t)len), 0, "the whole stream");
	is(job_pattern(c), pat, "loaded");
	is(data_write(c, (const uint8_t *)"x", 1), 0, "a byte after it taken");
	is(job_pattern(c), 0, "the load undone: the device reset");
	is(set_state(c, S_STP), EINVAL, "RESUMING -> STOP: EINVAL");
	is(get_state(c), S_ERR, "ERROR");
	is(vcxl_client_reset(c), 0, "DEVICE_RESET");

	/* a corrupt stream: the write still succeeds, STOP says it did not load */
	bad = malloc(len);
	if (bad) {
		memcpy(bad, stream, len);
		bad[len / 2] ^= 0x40;
		is(set_state(c, S_RES), 0, "RESUMING with a byte of the stream flipped");
		is(data_write(c, bad, (uint32_t)len), 0, "its write succeeds");
		is(job_pattern(c), 0, "nothing loaded");
		is(set_state(c, S_STP), EINVAL, "RESUMING -> STOP: EINVAL");
		is(get_state(c), S_ERR, "ERROR");
		is(vcxl_client_reset(c), 0, "DEVICE_RESET");
		is(job_pattern(c), 0, "the register reset");
	}

	/* a hostile client cycling loads: the whole stream, a byte after it (the
	 * undo), DEVICE_RESET, 200 times; nothing held grows (the server's fds,
	 * its heap under ASan's leak check) and the state still loads after */
	{
		long fds = settled_fds(), grew; /* the server runs in a thread of this process */
		unsigned fails = 0;

		for (unsigned i = 0; i < 200; i++) {
			fails += set_state(c, S_RES) != 0;
			fails += data_write(c, stream, (uint32_t)len) != 0;
			fails += data_write(c, (const uint8_t *)"x", 1) != 0;
			fails += vcxl_client_reset(c) != 0;
		}
		grew = settled_fds() - fds;
		is(fails, 0, "200 cycles of load, undo and DEVICE_RESET all answered");
		is(grew, 0, "no fd more in the process after them");
		is(set_state(c, S_RES) || data_write(c, stream, (uint32_t)len) ||
		       set_state(c, S_STP),
		   0, "the state still loads");
		is(job_pattern(c), pat, "with its register");
		vcxl_client_reset(c);
	}

	/* a hostile client keeping the load due: the whole stream, then only DMA
	 * windows (which do not need the device), 500 maps and unmaps with an fd
	 * each: every one is answered, no fd stays, and RESUMING -> STOP then
	 * loads */
	{
		int mfd = memfd_create("flood", MFD_CLOEXEC);
		long fds, grew;
		unsigned fails = 0;

		ok(mfd >= 0 && ftruncate(mfd, 0x10000) == 0, "a 64 KiB memfd");
		fds = settled_fds();
		is(set_state(c, S_RES), 0, "RESUMING");
		is(data_write(c, stream, (uint32_t)len), 0, "the whole stream");
		for (unsigned i = 0; i < 500; i++) {
			fails += vcxl_client_dma_map(c, 0x200000, 0x10000,
						     VFIO_USER_F_DMA_REGION_READ |
							 VFIO_USER_F_DMA_REGION_WRITE,
						     mfd, 0, NULL) != 0;
			fails += vcxl_client_dma_unmap(c, 0x200000, 0x10000, 0) != 0;
		}
		grew = settled_fds() - fds;
		is(fails, 0, "500 maps and unmaps after the stream all answered");
		is(grew, 0, "no fd more in the process after them");
		is(set_state(c, S_STP), 0, "RESUMING -> STOP: loaded");
		is(job_pattern(c), pat, "with its register");
		if (mfd >= 0)
			close(mfd);
		vcxl_client_reset(c);
	}

	/* leaving RESUMING by a reset after a load: the next RESUMING starts afresh */
	is(set_state(c, S_RES), 0, "RESUMING");
	is(data_write(c, stream, (uint32_t)len), 0, "the whole stream");
	is(vcxl_client_reset(c), 0, "DEVICE_RESET while RESUMING");
	is(set_state(c, S_RES), 0, "RESUMING again");
	is(data_write(c, stream, (uint32_t)(len / 2)), 0, "half of the stream");
	is(set_state(c, S_STP), EINVAL,
	   "RESUMING -> STOP: EINVAL (the earlier load does not count)");
out:
	free(bad);
	free(stream);
	srv_stop(&s, c);
}

/* QEMU 10.2's capabilities and vcxl's "dirty_in_stop_copy" */
#define CAPS_DIRTY                                                                                 \
	"{\"capabilities\":{\"migration\":{\"pgsize\":4096,\"max_bitmap_size\":268435456},"        \
	"\"max_msg_fds\":16,\"max_data_xfer_size\":1048576,\"pgsizes\":4096,"                      \
	"\"max_dma_maps\":65535,\"write_multiple\":true,\"dirty_in_stop_copy\":true}}"

/* A FILL of len bytes of client memory at iova with pattern */
static void fill_client(struct vcxl_client *c, uint64_t iova, uint64_t len, uint64_t pattern)
{
	vcxl_client_write32(c, VCXL_MODEL_CTRL_BAR, ACCEL_REG_JOB_OP, ACCEL_OP_FILL);
	vcxl_client_write32(c, VCXL_MODEL_CTRL_BAR, ACCEL_REG_JOB_FLAGS, ACCEL_JOBF_DST_HOST);
	vcxl_client_write64(c, VCXL_MODEL_CTRL_BAR, ACCEL_REG_JOB_PATTERN, pattern);
	vcxl_client_write64(c, VCXL_MODEL_CTRL_BAR, ACCEL_REG_JOB_DST, iova);
	vcxl_client_write64(c, VCXL_MODEL_CTRL_BAR, ACCEL_REG_JOB_LEN, len);
	vcxl_client_write32(c, VCXL_MODEL_CTRL_BAR, ACCEL_REG_DOORBELL, 1);
}

/* The stream into a RESUMING device, then RESUMING -> STOP's errno */
static int load_over(struct vcxl_client *c, const uint8_t *st, size_t len)
{
	int rc = set_state(c, S_RES);

	for (size_t off = 0; !rc && off < len; off += M)
		rc = data_write(c, st + off, (uint32_t)(len - off < M ? len - off : M));
	return rc ? rc : set_state(c, S_STP);
}

/* Every 8 bytes of [off, +len) of fd hold pattern */
static bool holds(int fd, off_t off, size_t len, uint64_t pattern)
{
	uint64_t w[512];
	bool same = true;

	for (size_t d = 0; d < len && same; d += sizeof(w)) {
		if (pread(fd, w, sizeof(w), off + (off_t)d) != (ssize_t)sizeof(w))
			return false;
		for (unsigned i = 0; i < 512; i++)
			same = same && w[i] == pattern;
	}
	return same;
}

/*
 * Capability "dirty_in_stop_copy": the client asks for no DMA_LOGGING_REPORT
 * once the device stopped, and STOP_COPY's stream carries the pages of client
 * memory the device wrote since the last report (a DMAPAGES section), which
 * the destination writes into its client's memory at RESUMING -> STOP, all or
 * nothing. Through the protocol, with the memfds the client maps.
 */
static void test_dirty_in_stop_copy(void)
{
	struct srv s, d, p;
	struct vcxl_client *c = srv_start_caps(&s, CAPS_DIRTY),
			   *dc = srv_start_caps(&d, CAPS_DIRTY);
	struct vcxl_client *pc = srv_start(&p);
	struct {
		struct vfio_user_dma_logging_control ctl;
		struct vfio_user_dma_logging_range r;
	} st = {{.page_size = 4096, .num_ranges = 1}, {0x100000, 0x100000}};
	const uint32_t rw = VFIO_USER_F_DMA_REGION_READ | VFIO_USER_F_DMA_REGION_WRITE;
	const uint64_t pat = 0x5a5a0123456789a5ull, pat2 = 0x0f0f1111deadbeefull;
	int mfd = memfd_create("src", MFD_CLOEXEC), dfd = memfd_create("dst", MFD_CLOEXEC);
	int pfd = memfd_create("plain", MFD_CLOEXEC);
	struct vcxl_mig_iter it;
	struct vcxl_mig_hdr h;
	struct sec sec[33];
	uint8_t *stream = NULL, *pstream = NULL;
	size_t len = 0, plen = 0;
	unsigned n;
	int k;

	if (!c || !dc || !pc || mfd < 0 || dfd < 0 || pfd < 0 || ftruncate(mfd, M) ||
	    ftruncate(dfd, M) || ftruncate(pfd, M)) {
		ok(0, "servers and memfds");
		return;
	}
	ok(vcxl_client_server_caps(c)->dirty_in_stop_copy, "the server takes dirty_in_stop_copy");
	ok(!vcxl_client_server_caps(pc)->dirty_in_stop_copy,
	   "and does not offer it to a client that did not ask");
	is(vcxl_client_dma_map(c, 0x100000, M, rw, mfd, 0, NULL), 0, "source: DMA map 1 MiB");
	is(vcxl_client_dma_map(dc, 0x100000, M, rw, dfd, 0, NULL), 0, "destination: the same");
	is(vcxl_client_dma_map(pc, 0x100000, M, rw, pfd, 0, NULL), 0, "plain client: the same");
	is(feat(c, VFIO_DEVICE_FEATURE_SET | VFIO_DEVICE_FEATURE_DMA_LOGGING_START, 40, &st,
		sizeof(st), NULL, 0),
	   0, "source: DMA_LOGGING_START");
	is(feat(pc, VFIO_DEVICE_FEATURE_SET | VFIO_DEVICE_FEATURE_DMA_LOGGING_START, 40, &st,
		sizeof(st), NULL, 0),
	   0, "plain client: DMA_LOGGING_START");

	/* pages 3 and 4 written by the device after the last report */
	fill_client(c, 0x103000, 0x2000, pat);
	fill_client(pc, 0x103000, 0x2000, pat);
	ok(holds(mfd, 0x3000, 0x2000, pat), "the job wrote the source's client memory");
	is(set_state(c, S_SC), 0, "source: RUNNING -> STOP_COPY");
	len = read_stream(c, &stream);
	is(set_state(pc, S_SC), 0, "plain client: RUNNING -> STOP_COPY");
	plen = read_stream(pc, &pstream);
	n = split(&it, pstream, plen, &h, sec);
	is(find(sec, n, VCXL_MIG_SEC_DMAPAGES), -1, "a plain client's stream has no DMAPAGES");
	vcxl_mig_close(&it);
	n = split(&it, stream, len, &h, sec);
	k = find(sec, n, VCXL_MIG_SEC_DMAPAGES);
	ok(k >= 0 && k == (int)n - 1, "the stream ends with a DMAPAGES section");
	if (k < 0) {
		vcxl_mig_close(&it);
		goto out;
	}
	is(sec[k].len, 16 + 2 * (8 + 4096ull), "two pages in it");
	ok(vcxl_mig_rd64(sec[k].p) == 4096 && vcxl_mig_rd64(sec[k].p + 8) == 2 &&
	       vcxl_mig_rd64(sec[k].p + 16) == 0x103000 && vcxl_mig_rd64(sec[k].p + 24) == 0x104000,
	   "pages 0x103000 and 0x104000");
	{
		uint64_t w;
		memcpy(&w, sec[k].p + 32 + 4095 - 7, 8);
		is(w, pat, "with the job's bytes");
	}
	{
		uint8_t rout[8 + 24 + 32];
		struct vfio_user_dma_logging_report rep = {0x100000, 0x100000, 4096};
		uint64_t bm0;

		is(feat(c, VFIO_DEVICE_FEATURE_GET | VFIO_DEVICE_FEATURE_DMA_LOGGING_REPORT,
			sizeof(rout), &rep, sizeof(rep), rout, sizeof(rout)),
		   0, "a REPORT in STOP_COPY after all");
		memcpy(&bm0, rout + 32, 8);
		is(bm0, 0x18, "still has them (the save kept the logged bits)");
	}

	/* for such a client the state is saved at the first read: what a report
	 * returned in between (QEMU's final sync of the device's own memory) is
	 * not in the stream */
	{
		struct vfio_user_dma_logging_report rep = {0x100000, 0x100000, 4096};
		uint8_t rout[8 + 24 + 32], *s2 = NULL;
		struct vcxl_mig_iter it2;
		struct vcxl_mig_hdr h2;
		struct sec sec2[33];
		size_t len2;
		unsigned n2;

		is(set_state(pc, S_RUN), 0, "plain client: back to RUNNING");
		is(set_state(c, S_RUN), 0, "source: back to RUNNING");
		fill_client(c, 0x103000, 0x2000, pat);
		is(set_state(c, S_SC), 0, "source: RUNNING -> STOP_COPY again");
		is(feat(c, VFIO_DEVICE_FEATURE_GET | VFIO_DEVICE_FEATURE_DMA_LOGGING_REPORT,
			sizeof(rout), &rep, sizeof(rep), rout, sizeof(rout)),
		   0, "a REPORT before the first read");
		len2 = read_stream(c, &s2);
		n2 = split(&it2, s2, len2, &h2, sec2);
		ok(n2 > 0 && find(sec2, n2, VCXL_MIG_SEC_DMAPAGES) == -1,
		   "the stream then has no DMAPAGES: the report returned them");
		vcxl_mig_close(&it2);
		free(s2);
	}

	/* the device's state loads when the whole stream arrived, the pages only
	 * at RESUMING -> STOP, checked again against the windows mapped then */
	is(set_state(dc, S_RES), 0, "destination: RESUMING");
	is(data_write(dc, stream, (uint32_t)len), 0, "the whole stream written");
	ok(holds(dfd, 0x3000, 0x2000, 0), "its pages not yet written");
	is(vcxl_client_dma_unmap(dc, 0x100000, M, 0), 0, "the window unmapped before STOP");
	is(set_state(dc, S_STP), EINVAL, "RESUMING -> STOP: EINVAL (its pages have no window)");
	is(get_state(dc), S_ERR, "ERROR");
	ok(holds(dfd, 0x3000, 0x2000, 0), "nothing written");
	is(vcxl_client_reset(dc), 0, "DEVICE_RESET");
	is(vcxl_client_dma_map(dc, 0x100000, M, rw, dfd, 0, NULL), 0, "the window mapped again");

	/* the destination: its memory gets the pages at RESUMING -> STOP */
	is(load_over(dc, stream, len), 0, "destination: the stream loads");
	ok(holds(dfd, 0x3000, 0x2000, pat), "its client memory holds the pages");
	ok(holds(dfd, 0x2000, 0x1000, 0) && holds(dfd, 0x5000, 0x1000, 0), "and nothing else");

	/* a window the client maps after the whole stream and before anything
	 * else (QEMU remaps guest memory while it loads the sections before the
	 * device's config): the load waits for the first other request and takes
	 * the pages into the window mapped then */
	{
		static const uint8_t zero[0x2000];

		is(set_state(dc, S_RUN), 0, "destination: RUNNING");
		is(vcxl_client_reset(dc), 0, "DEVICE_RESET");
		ok(pwrite(dfd, zero, sizeof(zero), 0x3000) == (ssize_t)sizeof(zero),
		   "its client memory cleared");
		is(set_state(dc, S_RES), 0, "RESUMING");
		is(vcxl_client_dma_unmap(dc, 0x100000, M, 0), 0, "the window unmapped");
		is(data_write(dc, stream, (uint32_t)len), 0, "the whole stream written");
		is(vcxl_client_dma_map(dc, 0x100000, M, rw, dfd, 0, NULL), 0,
		   "the window mapped after it");
		is(set_state(dc, S_STP), 0, "RESUMING -> STOP: loaded");
		ok(holds(dfd, 0x3000, 0x2000, pat),
		   "the pages in the window mapped after the stream");
	}

	/* hostile DMAPAGES sections: refused whole, the client memory untouched */
	{
		struct vcxl_mig_buf x;
		struct sec t[33];
		uint8_t *pg = malloc(sec[k].len + 4096);
		struct {
			uint64_t iova;
			uint64_t count;
			size_t len;
			const char *what;
		} cases[] = {
		    {0x300000, 2, 0, "a page outside every window"},
		    {0x1ff000 + 0x800, 2, 0, "a page not 4 KiB aligned"},
		    {0x1ff000, 3, 0, "a count the payload does not hold"},
		    {0x1ff000, 2, 16, "a payload longer than its count"},
		    {0x100000, (VCXL_MIG_DMAPAGES_MAX >> 12) + 1, 0, "over the bound"},
		};
		unsigned bad = 0;

		for (unsigned i = 0; pg && i < sizeof(cases) / sizeof(cases[0]); i++) {
			memcpy(t, sec, sizeof(t));
			memcpy(pg, sec[k].p, sec[k].len);
			memset(pg + sec[k].len, 0, 4096);
			vcxl_mig_wr64(pg + 8, cases[i].count);
			vcxl_mig_wr64(pg + 24, cases[i].iova);
			memset(pg + 32, 0x77, 2 * 4096); /* the pages' bytes */
			t[k].p = pg;
			t[k].len = sec[k].len + cases[i].len;
			build(&x, &h.geom, t, n);
			vcxl_client_reset(dc);
			for (off_t o = 0; o < 0x1000; o += 8)
				setup_ok(pwrite(dfd, &pat2, 8, 0x1ff000 + o) != 8);
			if (load_over(dc, x.data, x.len) != EINVAL || get_state(dc) != S_ERR ||
			    !holds(dfd, 0x1ff000, 0x1000, pat2) ||
			    !holds(dfd, 0x3000, 0x2000, pat)) {
				bad++;
				diag("%s: state %u, client memory %d %d", cases[i].what,
				     get_state(dc), holds(dfd, 0x1ff000, 0x1000, pat2),
				     holds(dfd, 0x3000, 0x2000, pat));
			}
			vcxl_client_reset(dc);
			vcxl_mig_buf_free(&x);
		}
		is(bad, 0, "5 hostile DMAPAGES sections refused, nothing written");
		free(pg);
	}
	vcxl_mig_close(&it);

	/* pages of zeros: the section is zero-run coded, and still loads */
	{
		const uint8_t *zp;
		uint64_t zlen;
		uint32_t zflags = 0;
		uint8_t *zs = NULL;
		size_t zn;

		vcxl_client_reset(dc);
		is(set_state(c, S_RUN), 0, "source: RUNNING");
		fill_client(c, 0x103000, 0x2000, 0);
		is(set_state(c, S_SC), 0, "source: STOP_COPY after a job wrote zeros");
		zn = read_stream(c, &zs);
		ok(vcxl_mig_find(zs, zn, VCXL_MIG_SEC_DMAPAGES, &zp, &zlen, &zflags) == 1 &&
		       (zflags & VCXL_MIG_SEC_ZERO_RUNS),
		   "its DMAPAGES section is zero-run coded (flags 0x%x)", zflags);
		ok(holds(dfd, 0x3000, 0x2000, pat), "the destination's pages hold the old bytes");
		is(load_over(dc, zs, zn), 0, "destination: the stream loads");
		ok(holds(dfd, 0x3000, 0x2000, 0), "its pages now hold the zeros");
		free(zs);
	}

	/* nothing to carry: the state is saved once STOP_COPY's reply went out,
	 * before the next request is read (a register written after it is not
	 * in the stream) */
	{
		const uint64_t a = 0x1111222233334444ull, b = 0x5555666677778888ull;
		struct vfio_user_dma_logging_report rep = {0x100000, 0x100000, 4096};
		uint8_t rout[8 + 24 + 32], *ss = NULL;
		size_t sn;

		is(set_state(c, S_RUN), 0, "source: RUNNING");
		vcxl_client_write64(c, VCXL_MODEL_CTRL_BAR, ACCEL_REG_JOB_PATTERN, a);
		is(feat(c, VFIO_DEVICE_FEATURE_GET | VFIO_DEVICE_FEATURE_DMA_LOGGING_REPORT,
			sizeof(rout), &rep, sizeof(rep), rout, sizeof(rout)),
		   0, "a REPORT: no page left to carry");
		is(set_state(c, S_SC), 0, "source: STOP_COPY");
		vcxl_client_write64(c, VCXL_MODEL_CTRL_BAR, ACCEL_REG_JOB_PATTERN, b);
		sn = read_stream(c, &ss);
		vcxl_client_reset(dc);
		is(load_over(dc, ss, sn), 0, "destination: that stream loads");
		is(job_pattern(dc), a, "with the register as it was at STOP_COPY");
		free(ss);
	}

	/* a client that truncates the memfd behind its window: the server's copy
	 * of those pages faults (SIGBUS-guarded), the request fails, and the
	 * server goes on */
	{
		uint8_t *ts = NULL;
		int rc;

		vcxl_client_reset(dc);
		setup_ok(ftruncate(dfd, 0));
		rc = load_over(dc, stream, len);
		ok(rc != 0 && get_state(dc) == S_ERR,
		   "destination with its memfd truncated: the load fails (%d), ERROR", rc);
		is(vcxl_client_reset(dc), 0, "and DEVICE_RESET still answers");
		is(set_state(c, S_RUN), 0, "source: RUNNING");
		fill_client(c, 0x103000, 0x2000, pat);
		setup_ok(ftruncate(mfd, 0));
		is(set_state(c, S_SC), 0, "source with its memfd truncated: STOP_COPY");
		is(data_read(c, 64, ts), -EFAULT,
		   "its first read fails with EFAULT: the pages could not be copied");
		is(data_read(c, 64, ts), -EFAULT, "and so does the next");
		is(set_state(c, S_RUN), 0, "the source runs on");
	}
out:
	free(stream);
	free(pstream);
	close(mfd);
	close(dfd);
	close(pfd);
	srv_stop(&s, c);
	srv_stop(&d, dc);
	srv_stop(&p, pc);
}

/* A backend without the mig_* operations (the hardware backend's table has
 * none: no device-side dirty tracking of CXL memory) is not migratable: no
 * MIGRATION flags, and every operation refuses. */
static void test_not_migratable(void)
{
	struct vcxl_model_cfg mc = {.mem_size = 256 * M};
	struct vcxl_model *m;
	struct vcxl_vdev *v;
	struct vcxl_mig_buf b = {0};
	struct bw w;
	char err[200];

	if (vcxl_model_create(&mc, &m)) {
		ok(0, "model");
		return;
	}
	bw_init(&w, vcxl_model_backend(m));
	if (vcxl_vdev_create(&w.be, &(struct vcxl_vdev_cfg){0}, &v, err, sizeof(err))) {
		ok(0, "vdev: %s", err);
		vcxl_model_destroy(m);
		return;
	}
	ok(!w.be.ops->mig_save, "the wrapped backend has no mig_save");
	is(vcxl_vdev_ops.mig_flags(v), 0, "no migration flags: not advertised");
	is(vcxl_vdev_ops.mig_save(v, &b), (uint64_t)-ENOTTY, "save: ENOTTY");
	is(vcxl_vdev_ops.mig_load(v, (const uint8_t *)"x", 1, err, sizeof(err)), (uint64_t)-ENOTTY,
	   "load: ENOTTY");
	is(vcxl_vdev_ops.mig_quiesce(v, true), (uint64_t)-ENOTTY, "quiesce: ENOTTY");
	vcxl_vdev_destroy(v);
	vcxl_model_destroy(m);
}

/* ---- zero-run coding of sections (VCXL_MIG_SEC_ZERO_RUNS) --------------------- */

static uint64_t zr_rng = 0x9e3779b97f4a7c15ull;
static uint32_t zr_rand(void)
{
	zr_rng ^= zr_rng << 13;
	zr_rng ^= zr_rng >> 7;
	zr_rng ^= zr_rng << 17;
	return (uint32_t)zr_rng;
}

/* One section of these bytes through the writer and the reader: 0 when the
 * reader hands back the same bytes; *coded: the writer coded it */
static int zr_trip_parts(const uint8_t *raw, size_t n, unsigned nparts, bool *coded,
			 size_t *stream_len);

static int zr_trip(const uint8_t *raw, size_t n, bool *coded, size_t *stream_len)
{
	return zr_trip_parts(raw, n, 0, coded, stream_len);
}

/* nparts 0: the payload put and coded at sec_end; else vcxl_mig_put_section()
 * of it cut into nparts pieces at random points (empty ones included) */
static int zr_trip_parts(const uint8_t *raw, size_t n, unsigned nparts, bool *coded,
			 size_t *stream_len)
{
	struct vcxl_mig_geom g = {.vendor = 1};
	struct vcxl_mig_buf b = {0};
	struct vcxl_mig_iter it;
	struct vcxl_mig_hdr h;
	uint32_t type, flags;
	const uint8_t *p;
	uint64_t len;
	char err[128];
	int rc = -1;

	vcxl_mig_begin(&b, &g);
	if (!nparts) {
		vcxl_mig_sec_begin(&b, VCXL_MIG_SEC_VCOMP, 0);
		vcxl_mig_put(&b, raw, n);
		vcxl_mig_sec_end(&b);
	} else {
		struct iovec iov[3];
		size_t cut[4] = {0, n ? zr_rand() % (n + 1) : 0, n ? zr_rand() % (n + 1) : 0, n};

		if (cut[1] > cut[2]) {
			size_t x = cut[1];
			cut[1] = cut[2];
			cut[2] = x;
		}
		if (nparts < 3)
			cut[2] = n;
		if (nparts < 2)
			cut[1] = cut[2] = n;
		for (unsigned i = 0; i < 3; i++)
			iov[i] = (struct iovec){.iov_base = (void *)(raw + cut[i]),
						.iov_len = cut[i + 1] - cut[i]};
		vcxl_mig_put_section(&b, VCXL_MIG_SEC_VCOMP, 0, iov, 3);
	}
	vcxl_mig_finish(&b);
	*stream_len = b.len;
	if (!b.err && !vcxl_mig_open(&it, b.data, b.len, &h, err, sizeof(err)) &&
	    vcxl_mig_next(&it, &type, &flags, &p, &len, err, sizeof(err)) == 1) {
		*coded = flags & VCXL_MIG_SEC_ZERO_RUNS;
		rc = len == n && (!n || !memcmp(p, raw, n)) &&
			     vcxl_mig_next(&it, &type, &flags, &p, &len, err, sizeof(err)) == 0
			 ? 0
			 : -1;
	}
	vcxl_mig_close(&it);
	vcxl_mig_buf_free(&b);
	return rc;
}

/* A stream whose only section is this coded payload, CRCs right */
static void zr_stream(struct vcxl_mig_buf *b, const uint8_t *coded, size_t n, uint32_t type)
{
	struct vcxl_mig_geom g = {.vendor = 1};
	uint8_t *h;

	memset(b, 0, sizeof(*b));
	vcxl_mig_begin(b, &g);
	vcxl_mig_sec_begin(b, type, 0);
	h = b->data + b->sec_at;
	vcxl_mig_put(b, coded, n);
	vcxl_mig_sec_end(b); /* too short to be coded by the writer itself */
	h = b->data + b->sec_at;
	h[4] |= VCXL_MIG_SEC_ZERO_RUNS; /* the flags field, little-endian */
	vcxl_mig_finish(b);
	/* the writer's END CRC is of the bytes as each section closed: the flag
	 * set after is sealed by hand (END: its head, then CRC and count) */
	size_t end_at = b->len - VCXL_MIG_SEC_HDR_LEN - VCXL_MIG_END_LEN;
	vcxl_mig_wr32(b->data + end_at + VCXL_MIG_SEC_HDR_LEN, vcxl_crc32(0, b->data, end_at));
}

static int zr_read(const struct vcxl_mig_buf *b, char *err, size_t errlen)
{
	struct vcxl_mig_iter it;
	struct vcxl_mig_hdr h;
	uint32_t type, flags;
	const uint8_t *p;
	uint64_t len;
	int rc = vcxl_mig_open(&it, b->data, b->len, &h, err, errlen);

	while (!rc && (rc = vcxl_mig_next(&it, &type, &flags, &p, &len, err, errlen)) > 0)
		rc = 0;
	vcxl_mig_close(&it);
	return rc;
}

static void test_zero_runs(void)
{
	static uint8_t raw[131072];
	struct vcxl_mig_buf b;
	unsigned bad = 0, coded_n = 0;
	bool coded = false;
	size_t slen = 0;
	uint8_t c[64];
	char err[160];

	/* sparse, dense, zero, tails of every length: each comes back as written */
	for (unsigned t = 0; t < 400; t++) {
		size_t n = t < 40 ? t : zr_rand() % sizeof(raw);
		unsigned density = zr_rand() % 5;

		memset(raw, 0, n);
		for (size_t i = 0; i < n; i++)
			if (density == 4 || (density && zr_rand() % (1u << (4 * density)) == 0))
				raw[i] = (uint8_t)(zr_rand() | 1);
		if (zr_trip(raw, n, &coded, &slen))
			bad++;
		coded_n += coded;
	}
	is(bad, 0, "400 payloads (0 to 70,000 bytes, zero to dense): decoded as written");
	ok(coded_n > 100 && coded_n < 400, "the sparse ones coded (%u of 400), the dense not",
	   coded_n);
	/* the same payloads written in pieces, coded straight from them */
	unsigned bad_p = 0, differ = 0;
	for (unsigned t = 0; t < 400; t++) {
		size_t n = t < 40 ? t : zr_rand() % sizeof(raw), slen1 = 0;
		unsigned density = zr_rand() % 5;
		bool coded1 = false;

		memset(raw, 0, n);
		for (size_t i = 0; i < n; i++)
			if (density == 4 || (density && zr_rand() % (1u << (4 * density)) == 0))
				raw[i] = (uint8_t)(zr_rand() | 1);
		if (zr_trip(raw, n, &coded1, &slen1) ||
		    zr_trip_parts(raw, n, 1 + t % 3, &coded, &slen))
			bad_p++;
		/* pieces cost at most a record each where they cut a run */
		differ += coded != coded1 || slen > slen1 + 32;
	}
	is(bad_p, 0, "400 payloads in 1 to 3 pieces (empty ones too): decoded as written");
	ok(differ < 8, "coded as the whole payload would be, within a record a cut (%u of 400 not)",
	   differ);
	memset(raw, 0, 131072);
	raw[5] = 1;
	raw[65536 + 9] = 3;
	int trip = zr_trip_parts(raw, 131072, 2, &coded, &slen);
	ok(!trip && coded && slen < 512,
	   "a 128 KiB register file's two halves, two bytes set: a %zu-byte stream", slen);
	memset(raw, 0x5a, 4096);
	ok(!zr_trip_parts(raw, 4096, 2, &coded, &slen) && !coded,
	   "4 KiB without a zero in two pieces: copied as it is");
	struct vcxl_mig_buf cb = {.count_only = true};
	struct iovec two[2] = {{raw, 100}, {raw + 100, 4000}};
	trip = vcxl_mig_put_section(&cb, VCXL_MIG_SEC_VCOMP, 0, two, 2);
	ok(!trip && cb.len == VCXL_MIG_SEC_HDR_LEN + 4104,
	   "counting: the payload uncoded (a bound), padded (%zu bytes)", cb.len);
	memset(raw, 0, 65536);
	raw[100] = 1;
	raw[65535] = 2;
	trip = zr_trip(raw, 65536, &coded, &slen);
	ok(!trip && coded && slen < 512, "64 KiB with two bytes set: a %zu-byte stream", slen);
	memset(raw, 0x5a, 4096);
	ok(!zr_trip(raw, 4096, &coded, &slen) && !coded, "4 KiB without a zero: not coded");

	/* a register file's state from its pieces (NULL past zero_from) codes to
	 * the same bytes as its two whole halves: the stream does not depend on
	 * where the watermark is */
	{
		struct vcxl_regfile rf;
		struct iovec pieces[VCXL_RF_STATE_IOV], halves[2];
		struct vcxl_mig_buf w1 = {0}, w2 = {0};
		unsigned np;

		vcxl_rf_init(&rf, 65536);
		vcxl_rf_define(&rf, 0x1000, 4, 0xffff, VCXL_RF_RW);
		vcxl_rf_define(&rf, 0x1008, 4, 0xff, VCXL_RF_RWO);
		vcxl_rf_init_val(&rf, 0x1100, 4, 0x10000001);
		vcxl_rf_set32(&rf, 0x1004, 0x0f); /* short zero runs inside the data */
		np = vcxl_rf_state_iov(&rf, pieces);
		halves[0] = (struct iovec){rf.val, rf.size};
		halves[1] = (struct iovec){rf.rwo_armed, rf.size};
		vcxl_mig_put_section(&w1, VCXL_MIG_SEC_VCOMP, 0, pieces, np);
		vcxl_mig_put_section(&w2, VCXL_MIG_SEC_VCOMP, 0, halves, 2);
		ok(np == 4 && !w1.err && w1.len == w2.len && !memcmp(w1.data, w2.data, w1.len),
		   "a 64 KiB file coded from its %u pieces: the same %zu bytes as from its halves",
		   np, w1.len);
		vcxl_mig_buf_free(&w1);
		vcxl_mig_buf_free(&w2);
		vcxl_rf_fini(&rf);
	}

	/* END's CRC is kept as sections close (their CRCs joined, not a pass over
	 * the stream): the same value as one pass over every byte before END */
	{
		struct vcxl_mig_geom g = {.vendor = 0x1234, .mem_size = 1 << 20};
		struct vcxl_mig_buf w = {0};
		struct iovec part = {raw, 65536};
		size_t end_at;

		memset(raw, 0, 65536);
		raw[7] = 9;
		raw[40000] = 1;
		vcxl_mig_begin(&w, &g);
		vcxl_mig_sec_begin(&w, VCXL_MIG_SEC_VCFG, 0);
		vcxl_mig_put(&w, "odd", 3); /* 5 bytes of padding */
		vcxl_mig_sec_end(&w);
		vcxl_mig_put_section(&w, VCXL_MIG_SEC_VCOMP, 0, &part, 1); /* coded */
		vcxl_mig_sec_begin(&w, VCXL_MIG_SEC_VMBOX, 0);
		vcxl_mig_put_u32(&w, 0xabcdef01);
		vcxl_mig_sec_end(&w);
		vcxl_mig_finish(&w);
		end_at = w.len - VCXL_MIG_SEC_HDR_LEN - VCXL_MIG_END_LEN;
		ok(!w.err && vcxl_mig_rd32(w.data + end_at + VCXL_MIG_SEC_HDR_LEN) ==
				 vcxl_crc32(0, w.data, end_at),
		   "END's CRC (sections' CRCs joined) is the CRC of the %zu bytes before END",
		   end_at);
		is(zr_read(&w, err, sizeof(err)), 0, "and reads (the reader joins them too)");
		w.data[VCXL_MIG_HDR_LEN + VCXL_MIG_SEC_HDR_LEN + 3] = 1; /* VCFG's padding */
		ok(zr_read(&w, err, sizeof(err)) == -EINVAL && strstr(err, "padding"),
		   "a padding byte set: refused (%s)", err);
		w.data[VCXL_MIG_HDR_LEN + VCXL_MIG_SEC_HDR_LEN + 3] = 0;
		vcxl_mig_wr32(w.data + end_at + VCXL_MIG_SEC_HDR_LEN,
			      vcxl_crc32(0, w.data, end_at) ^ 1);
		ok(zr_read(&w, err, sizeof(err)) == -EINVAL && strstr(err, "stream checksum"),
		   "END's CRC off by a bit: refused (%s)", err);
		vcxl_mig_buf_free(&w);
	}

	/* hostile coded payloads: each refused with a reason, nothing read past the end */
	memset(c, 0, sizeof(c));
	vcxl_mig_wr64(c, 64); /* decodes to 64 bytes */
	vcxl_mig_wr32(c + 8, 64);
	vcxl_mig_wr32(c + 12, 0);
	zr_stream(&b, c, 16, VCXL_MIG_SEC_VCOMP);
	is(zr_read(&b, err, sizeof(err)), 0, "a well-formed coded section (64 zero bytes) reads");
	vcxl_mig_buf_free(&b);
	vcxl_mig_wr32(c + 8, 65);
	zr_stream(&b, c, 16, VCXL_MIG_SEC_VCOMP);
	ok(zr_read(&b, err, sizeof(err)) == -EINVAL && strstr(err, "corrupt"),
	   "a zero run past the decoded length: refused (%s)", err);
	vcxl_mig_buf_free(&b);
	vcxl_mig_wr32(c + 8, 0);
	vcxl_mig_wr32(c + 12, 64); /* 64 literal bytes, 8 present */
	zr_stream(&b, c, 24, VCXL_MIG_SEC_VCOMP);
	ok(zr_read(&b, err, sizeof(err)) == -EINVAL && strstr(err, "corrupt"),
	   "a literal past the payload: refused (%s)", err);
	vcxl_mig_buf_free(&b);
	vcxl_mig_wr32(c + 8, 0xffffffffu);
	vcxl_mig_wr32(c + 12, 0xffffffffu);
	zr_stream(&b, c, 16, VCXL_MIG_SEC_VCOMP);
	ok(zr_read(&b, err, sizeof(err)) == -EINVAL && strstr(err, "corrupt"),
	   "counts that overflow: refused (%s)", err);
	vcxl_mig_buf_free(&b);
	vcxl_mig_wr32(c + 8, 32);
	vcxl_mig_wr32(c + 12, 0);
	zr_stream(&b, c, 16, VCXL_MIG_SEC_VCOMP);
	ok(zr_read(&b, err, sizeof(err)) == -EINVAL && strstr(err, "corrupt"),
	   "records short of the decoded length: refused (%s)", err);
	vcxl_mig_buf_free(&b);
	vcxl_mig_wr32(c + 8, 64);
	zr_stream(&b, c, 20, VCXL_MIG_SEC_VCOMP);
	ok(zr_read(&b, err, sizeof(err)) == -EINVAL && strstr(err, "corrupt"),
	   "half a record after the last: refused (%s)", err);
	vcxl_mig_buf_free(&b);
	vcxl_mig_wr64(c, VCXL_MIG_ZR_MAX + 1);
	zr_stream(&b, c, 16, VCXL_MIG_SEC_VCOMP);
	ok(zr_read(&b, err, sizeof(err)) == -EINVAL && strstr(err, "decodes to"),
	   "a decoded length over VCXL_MIG_ZR_MAX: refused before any allocation (%s)", err);
	vcxl_mig_buf_free(&b);
	zr_stream(&b, c, 4, VCXL_MIG_SEC_VCOMP);
	ok(zr_read(&b, err, sizeof(err)) == -EINVAL && strstr(err, "without its length"),
	   "a coded payload shorter than its length field: refused (%s)", err);
	vcxl_mig_buf_free(&b);

	/* many small sections each claiming 8 MiB of zeros: the reader holds at
	 * most VCXL_MIG_ZR_TOTAL_MAX of them */
	{
		struct vcxl_mig_geom g = {.vendor = 1};
		uint8_t z[16];

		vcxl_mig_wr64(z, VCXL_MIG_ZR_MAX);
		vcxl_mig_wr32(z + 8, (uint32_t)VCXL_MIG_ZR_MAX);
		vcxl_mig_wr32(z + 12, 0);
		memset(&b, 0, sizeof(b));
		vcxl_mig_begin(&b, &g);
		for (uint32_t t = 100; t < 103; t++) {
			vcxl_mig_sec_begin(&b, t, VCXL_MIG_SEC_OPTIONAL);
			vcxl_mig_put(&b, z, sizeof(z));
			vcxl_mig_sec_end(&b);
			b.data[b.sec_at + 4] |= VCXL_MIG_SEC_ZERO_RUNS;
		}
		vcxl_mig_finish(&b);
		ok(zr_read(&b, err, sizeof(err)) == -EINVAL && strstr(err, "decode to more than"),
		   "three 8 MiB zero sections in 136 bytes: the third refused (%s)", err);
		vcxl_mig_buf_free(&b);
	}

	/* a real device: the idle stream is small, and it loads */
	struct env a, d;
	struct vcxl_mig_buf s;
	if (env_init(&a, 512 * M, VCXL_MODEL_ACCEL) || env_init(&d, 512 * M, VCXL_MODEL_ACCEL)) {
		ok(0, "devices");
		return;
	}
	vcxl_vdev_ops.mig_quiesce(a.v, true);
	is(save(&a, &s), 0, "idle device: saved");
	ok(s.len < 8192, "idle device: a %zu-byte stream (181,224 bytes before coding)", s.len);
	is(load(&d, s.data, s.len), 0, "and it loads (%s)", d.err);
	vcxl_mig_buf_free(&s);
	env_fini(&d);
	env_fini(&a);
}

int main(void)
{
	test_fsm_table();
	test_round_trip();
	test_type3_round_trip();
	test_hostile();
	test_devmem_report();
	test_load_notifies_changes();
	test_protocol();
	test_preload();
	test_dirty_in_stop_copy();
	test_not_migratable();
	test_zero_runs();
	return tap_done();
}
