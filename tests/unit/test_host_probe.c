// SPDX-License-Identifier: BSD-3-Clause
/* Host CXL core bring-up against the model, and against malformed variants of
 * it (a wrapper rewrites what the core reads). */
#include <errno.h>
#include <string.h>

#include "be_wrap.h"
#include "tap.h"
#include "host/host_cxl.h"
#include "model/model.h"

#define G VCXL_HPA_GRANULE

struct env {
	struct vcxl_model *m;
	struct bw w;
	struct vcxl_host h;
	struct vclock clk;
	char err[200];
};

static int env_init(struct env *e, const struct vcxl_model_cfg *mc)
{
	memset(e, 0, sizeof(*e));
	int rc = vcxl_model_create(mc, &e->m);
	if (rc)
		return rc;
	bw_init(&e->w, vcxl_model_backend(e->m));
	vcxl_host_init(&e->h);
	vcxl_host_add_window(&e->h, VCXL_HOST_DEFAULT_WIN_BASE, VCXL_HOST_DEFAULT_WIN_SIZE,
			     VCXL_HOST_DEFAULT_WIN_FLAGS);
	e->clk.model = e->m;
	vclock_install(&e->h, &e->clk);
	return 0;
}

static void env_fini(struct env *e)
{
	vcxl_host_fini(&e->h);
	vcxl_model_destroy(e->m);
}

static int env_probe(struct env *e, const struct vcxl_dev_facts *f, struct vcxl_cxl_dev **d)
{
	e->err[0] = 0;
	return vcxl_cxl_probe(&e->h, &e->w.be, f, d, e->err, sizeof(e->err));
}

static void test_basic(void)
{
	struct vcxl_model_cfg mc = {.mem_size = 2 * G, .decoders = 2};
	struct env e;
	struct vcxl_cxl_dev *d = NULL;

	if (!ok(env_init(&e, &mc) == 0, "model created"))
		return;
	is(env_probe(&e, NULL, &d), 0, "probe succeeds: %s", e.err);
	if (!d) {
		env_fini(&e);
		return;
	}
	struct vcxl_backend *raw = vcxl_model_backend(e.m);
	is(d->vendor, VCXL_MODEL_VENDOR, "vendor id");
	is(d->device, VCXL_MODEL_DEVICE, "device id");
	is(d->dvsec, raw_find_dvsec(raw, CXL_DVSEC_ID_DEVICE), "Device DVSEC found where it is");
	is(d->regloc, raw_find_dvsec(raw, CXL_DVSEC_ID_REG_LOCATOR), "Register Locator found");
	ok(d->cap & CXL_DVSEC_CAP_MEM, "Mem_Capable");
	is(d->ranges, 1, "HDM_Count 1");
	is(d->range_size[0], 2 * G, "range 1 size from the DVSEC");
	ok(d->range_flags[0] & CXL_DVSEC_RANGE_ACTIVE, "range active recorded");
	is(d->dpa_capacity, 2 * G, "DPA capacity = device memory");
	is(d->comp_bar, 0, "component block in BAR0");
	is(d->comp_off & 0xffff, 0, "component block 64 KiB aligned");
	is(d->comp_bar_size, VCXL_MODEL_BAR0_SIZE, "BAR0 size");
	is(d->hdm_count, 2, "two physical decoders (count encoding decoded)");
	is(d->hdm_size, CXL_HDM_CAP_SIZE(2), "HDM size 0x10 + 0x20 n");
	ok(d->hdm_off >= CXL_CM_OFFSET && d->hdm_off < CXL_CM_OFFSET + CXL_CM_SIZE,
	   "HDM capability inside the CM range (0x%x)", d->hdm_off);
	uint32_t hcap = raw_bar32(raw, 0, d->comp_off + d->hdm_off);
	is(VCXL_FIELD_GET(CXL_HDM_CAP_DECODER_COUNT, hcap), 1, "HDM cap register at hdm_off");
	ok(d->ras_off != 0, "RAS capability found");
	is(d->fw_committed, 0, "no firmware decoders");
	is(vcxl_dpa_avail(d), 2 * G, "all DPA free");
	ok(d->doe_off != 0, "DOE found");
	if (d->cdat) {
		uint8_t sum = 0;
		for (size_t i = 0; i < d->cdat_len; i++)
			sum = (uint8_t)(sum + d->cdat[i]);
		is(sum, 0, "device CDAT read over DOE, checksum ok (%zu bytes)", d->cdat_len);
		is(d->cdat[0] | d->cdat[1] << 8, d->cdat_len, "CDAT length matches its header");
	} else {
		ok(0, "device CDAT read over DOE: %s", d->note);
		ok(0, "CDAT length");
	}
	/* probing writes nothing but the DOE mailbox, and changes no host-owned register */
	struct host_state s1, s2;
	hs_take(raw, d, &s1);
	e.w.cfg_writes = e.w.bar_writes = 0;
	struct vcxl_cxl_dev *d2 = NULL;
	is(env_probe(&e, NULL, &d2), 0, "second probe");
	is(e.w.bar_writes, 0, "probe wrote no component register");
	ok(e.w.cfg_writes > 0, "probe wrote only DOE (%lu writes)", e.w.cfg_writes);
	hs_take(raw, d, &s2);
	is(hs_diff(&s1, &s2), (uint64_t)-1, "host-owned registers unchanged by probe");
	vcxl_cxl_remove(d2);
	vcxl_cxl_remove(d);
	env_fini(&e);
}

static void test_comp_at(void)
{
	const char *names[] = {"start", "middle", "end"};
	for (int at = VCXL_COMP_AT_START; at <= VCXL_COMP_AT_END; at++) {
		struct vcxl_model_cfg mc = {.mem_size = G, .comp_at = (enum vcxl_comp_at)at};
		struct env e;
		struct vcxl_cxl_dev *d = NULL;
		if (env_init(&e, &mc))
			continue;
		is(env_probe(&e, NULL, &d), 0, "comp at %s: probe: %s", names[at], e.err);
		if (d) {
			uint64_t want = at == VCXL_COMP_AT_START ? 0
					: at == VCXL_COMP_AT_END
					    ? VCXL_MODEL_BAR0_SIZE - VCXL_SZ_64K
					    : d->comp_off;
			is(d->comp_off, want, "comp at %s: offset 0x%llx", names[at],
			   (unsigned long long)d->comp_off);
			if (at == VCXL_COMP_AT_MIDDLE)
				ok(d->comp_off > 0 &&
				       d->comp_off < VCXL_MODEL_BAR0_SIZE - VCXL_SZ_64K,
				   "middle is neither start nor end");
		}
		vcxl_cxl_remove(d);
		env_fini(&e);
	}
}

static void test_firmware(void)
{
	struct vcxl_model_cfg mc = {.mem_size = 2 * G,
				    .decoders = 1,
				    .firmware_committed = true,
				    .fw_hpa_base = VCXL_HOST_DEFAULT_WIN_BASE + 4 * G};
	struct env e;
	struct vcxl_cxl_dev *d = NULL;

	if (env_init(&e, &mc))
		return;
	is(env_probe(&e, NULL, &d), 0, "firmware-committed device probes: %s", e.err);
	if (d) {
		is(d->fw_committed, 1, "decoder 0 found committed");
		ok(d->dpa[0].used && d->dpa[0].firmware, "its DPA is reserved as firmware's");
		ok(d->dpa[0].size > 0, "firmware decoder has a size (0x%llx)",
		   (unsigned long long)d->dpa[0].size);
	}
	vcxl_cxl_remove(d);
	env_fini(&e);
}

/* ---- malformed devices ---------------------------------------------------- */

struct patch {
	uint32_t off;	/* config dword / BAR offset to patch */
	uint32_t clear; /* bits to clear */
	uint32_t set;	/* bits to set */
	long remaining; /* reads still patched; < 0 = forever */
	unsigned long hits;
};

static void patch_cfg(struct bw *w, uint32_t off, unsigned len, uint64_t *val)
{
	struct patch *p = w->priv;
	if (off > p->off || off + len <= p->off || p->remaining == 0)
		return;
	unsigned sh = 8 * (p->off - off);
	*val = (*val & ~((uint64_t)p->clear << sh)) | ((uint64_t)p->set << sh);
	p->hits++;
	if (p->remaining > 0)
		p->remaining--;
}

static void patch_bar(struct bw *w, unsigned bar, uint64_t off, unsigned len, uint64_t *val)
{
	patch_cfg(w, (uint32_t)off, len, val);
}

/* Probe with one patched dword; returns rc and leaves the message in e->err. */
static int probe_patched(struct env *e, struct patch *p, bool bar, struct vcxl_cxl_dev **d)
{
	e->w.priv = p;
	e->w.cfg_filter = bar ? NULL : patch_cfg;
	e->w.bar_filter = bar ? patch_bar : NULL;
	int rc = env_probe(e, NULL, d);
	e->w.cfg_filter = NULL;
	e->w.bar_filter = NULL;
	return rc;
}

static unsigned regloc_comp_entry(struct vcxl_backend *raw, uint32_t regloc)
{
	for (unsigned k = 0; k < 8; k++)
		if (VCXL_FIELD_GET(CXL_REGLOC_BLOCK_ID,
				   raw_cfg32(raw, regloc + CXL_REGLOC_BLOCK_LO(k))) ==
		    CXL_REGLOC_RBI_COMPONENT)
			return k;
	return 0;
}

static void test_malformed(void)
{
	struct vcxl_model_cfg mc = {.mem_size = G};
	struct env e;
	struct vcxl_cxl_dev *d = NULL, *good = NULL;

	if (env_init(&e, &mc))
		return;
	struct vcxl_backend *raw = vcxl_model_backend(e.m);
	if (env_probe(&e, NULL, &good)) {
		ok(0, "baseline probe: %s", e.err);
		env_fini(&e);
		return;
	}
	uint32_t dv = good->dvsec, rl = good->regloc;
	unsigned k = regloc_comp_entry(raw, rl);
	struct patch p;

	p = (struct patch){.off = rl + CXL_REGLOC_BLOCK_HI(k), .set = 1, .remaining = -1};
	is(probe_patched(&e, &p, false, &d), (uint64_t)-ENODEV, "component block beyond the BAR");
	ok(strstr(e.err, "outside BAR0") != NULL, "clear message: %s", e.err);
	ok(d == NULL, "no device returned");

	/* the first 64 KiB aligned offset that no longer fits */
	p = (struct patch){.off = rl + CXL_REGLOC_BLOCK_LO(k),
			   .clear = CXL_REGLOC_OFFSET_LO,
			   .set = (uint32_t)VCXL_MODEL_BAR0_SIZE & CXL_REGLOC_OFFSET_LO,
			   .remaining = -1};
	is(probe_patched(&e, &p, false, &d), (uint64_t)-ENODEV,
	   "component block starting at the BAR end");
	ok(strstr(e.err, "outside BAR0") != NULL, "clear message: %s", e.err);

	p = (struct patch){
	    .off = rl + CXL_REGLOC_BLOCK_LO(k), .clear = CXL_REGLOC_BIR, .set = 6, .remaining = -1};
	is(probe_patched(&e, &p, false, &d), (uint64_t)-ENODEV, "BIR 6 refused");
	ok(strstr(e.err, "not a BAR") != NULL, "clear message: %s", e.err);

	p = (struct patch){
	    .off = rl + CXL_REGLOC_BLOCK_LO(k), .clear = CXL_REGLOC_BLOCK_ID, .remaining = -1};
	is(probe_patched(&e, &p, false, &d), (uint64_t)-ENODEV, "no component entry refused");
	ok(strstr(e.err, "no component block") != NULL, "clear message: %s", e.err);

	p = (struct patch){.off = dv + CXL_DVSEC_CAP, .clear = CXL_DVSEC_CAP_MEM, .remaining = -1};
	is(probe_patched(&e, &p, false, &d), (uint64_t)-ENODEV, "not Mem_Capable refused");
	ok(strstr(e.err, "Mem_Capable") != NULL, "clear message: %s", e.err);

	p = (struct patch){.off = dv + CXL_DVSEC_CAP,
			   .clear = CXL_DVSEC_CAP_HDM_COUNT,
			   .set = 3 << 4,
			   .remaining = -1};
	is(probe_patched(&e, &p, false, &d), (uint64_t)-ENODEV, "HDM_Count 3 refused");
	ok(strstr(e.err, "HDM_Count") != NULL, "clear message: %s", e.err);

	p = (struct patch){
	    .off = (uint32_t)good->comp_off + CXL_CM_OFFSET, .clear = ~0u, .remaining = -1};
	is(probe_patched(&e, &p, true, &d), (uint64_t)-ENODEV, "no CM array header refused");
	ok(strstr(e.err, "capability array header") != NULL, "clear message: %s", e.err);

	p = (struct patch){.off = (uint32_t)(good->comp_off + good->hdm_off),
			   .clear = CXL_HDM_CAP_DECODER_COUNT,
			   .set = 0xd,
			   .remaining = -1};
	is(probe_patched(&e, &p, true, &d), (uint64_t)-ENODEV,
	   "decoder count encoding 0xd refused");
	ok(strstr(e.err, "decoder count") != NULL, "clear message: %s", e.err);

	/* hide HDM: turn its array element into a NULL entry */
	uint32_t hdr = raw_bar32(raw, 0, good->comp_off + CXL_CM_OFFSET);
	unsigned n = VCXL_FIELD_GET(CXL_CM_CAP_HDR_ARRAY_SIZE, hdr);
	for (unsigned i = 1; i <= n; i++) {
		uint32_t el = raw_bar32(raw, 0, good->comp_off + CXL_CM_OFFSET + 4 * i);
		if (VCXL_FIELD_GET(CXL_CM_CAP_HDR_ID, el) == CXL_CM_CAP_ID_HDM)
			p = (struct patch){.off = (uint32_t)good->comp_off + CXL_CM_OFFSET + 4 * i,
					   .clear = CXL_CM_CAP_HDR_ID,
					   .remaining = -1};
	}
	is(probe_patched(&e, &p, true, &d), (uint64_t)-ENODEV, "no HDM capability refused");
	ok(strstr(e.err, "no HDM decoder capability") != NULL, "clear message: %s", e.err);

	/* a decoder committed out of order */
	if (good->hdm_count > 1) {
		p = (struct patch){
		    .off = (uint32_t)(good->comp_off + good->hdm_off + CXL_HDM_DEC_CTRL(1)),
		    .set = CXL_HDM_DEC_CTRL_COMMITTED,
		    .remaining = -1};
		is(probe_patched(&e, &p, true, &d), (uint64_t)-ENXIO,
		   "out-of-order commit refused");
	}

	struct vcxl_dev_facts f = {.mem_size = 2 * G};
	is(env_probe(&e, &f, &d), (uint64_t)-ENODEV,
	   "variant expects more memory than the device has");
	ok(strstr(e.err, "variant expects") != NULL, "clear message: %s", e.err);
	f.mem_size = 0;
	f.media_ready = true;
	is(env_probe(&e, &f, &d), (uint64_t)-ENODEV,
	   "media-ready applies to a device without memdev registers: refused");
	ok(strstr(e.err, "media-ready") != NULL, "clear message: %s", e.err);
	f.media_ready = false;
	is(env_probe(&e, &f, &d), 0, "without media-ready (Type-2 fact) it probes");
	vcxl_cxl_remove(d);
	d = NULL;

	vcxl_cxl_remove(good);
	vcxl_model_remove(e.m);
	is(env_probe(&e, NULL, &d), (uint64_t)-ENODEV, "surprise-removed device refused");
	ok(strstr(e.err, "not present") != NULL, "clear message: %s", e.err);
	env_fini(&e);
}

/* ---- waits ---------------------------------------------------------------- */

static void test_waits(void)
{
	struct vcxl_model_cfg mc = {.mem_size = G};
	struct env e;
	struct vcxl_cxl_dev *d = NULL, *good = NULL;

	if (env_init(&e, &mc))
		return;
	if (env_probe(&e, NULL, &good)) {
		ok(0, "baseline probe: %s", e.err);
		env_fini(&e);
		return;
	}
	uint32_t lo = good->dvsec + CXL_DVSEC_RANGE_SIZE_LO(0);
	struct patch p;

	/* Memory_Active late for 30 reads: the core polls with short sleeps */
	p = (struct patch){.off = lo, .clear = CXL_DVSEC_RANGE_ACTIVE, .remaining = 30};
	e.clk.sleeps = 0;
	uint64_t t0 = e.clk.now;
	is(probe_patched(&e, &p, false, &d), 0, "late Memory_Active waited for: %s", e.err);
	/* one of the 30 patched reads is the Info_Valid check, which doesn't sleep */
	ok(e.clk.sleeps >= 29 && e.clk.sleeps < 40, "polled %lu times", e.clk.sleeps);
	ok(e.clk.now - t0 < 1000000000ull, "well within the timeout");
	vcxl_cxl_remove(d);
	d = NULL;

	/* never active: the timeout is the device's, 1 << 2n seconds */
	for (unsigned n = 0; n <= 2; n++) {
		p = (struct patch){.off = lo,
				   .clear = CXL_DVSEC_RANGE_ACTIVE | CXL_DVSEC_RANGE_ACTIVE_TMO,
				   .set = (uint32_t)VCXL_FIELD_PREP(CXL_DVSEC_RANGE_ACTIVE_TMO, n),
				   .remaining = -1};
		t0 = e.clk.now;
		is(probe_patched(&e, &p, false, &d), (uint64_t)-ETIMEDOUT,
		   "Memory_Active never: -ETIMEDOUT (enc %u)", n);
		uint64_t waited = e.clk.now - t0, want = (1ull << (2 * n)) * 1000000000ull;
		ok(waited >= want && waited < want + 50000000ull,
		   "waited %llu ms of virtual time for encoding %u (%llu s)",
		   (unsigned long long)(waited / 1000000), n,
		   (unsigned long long)(want / 1000000000));
		ok(strstr(e.err, "Memory_Active") != NULL, "clear message: %s", e.err);
	}
	/* reserved encodings wait the longest (256 s) */
	p = (struct patch){.off = lo,
			   .clear = CXL_DVSEC_RANGE_ACTIVE | CXL_DVSEC_RANGE_ACTIVE_TMO,
			   .set = (uint32_t)VCXL_FIELD_PREP(CXL_DVSEC_RANGE_ACTIVE_TMO, 7),
			   .remaining = -1};
	t0 = e.clk.now;
	is(probe_patched(&e, &p, false, &d), (uint64_t)-ETIMEDOUT, "reserved timeout encoding");
	ok(e.clk.now - t0 >= 256000000000ull && e.clk.now - t0 < 257000000000ull,
	   "reserved encoding waits 256 s");

	p = (struct patch){.off = lo, .clear = CXL_DVSEC_RANGE_INFO_VALID, .remaining = -1};
	t0 = e.clk.now;
	is(probe_patched(&e, &p, false, &d), (uint64_t)-ETIMEDOUT, "Memory_Info_Valid never");
	ok(e.clk.now - t0 >= 1500000000ull && e.clk.now - t0 < 1600000000ull,
	   "Info_Valid waited 1.5 s");
	ok(strstr(e.err, "Memory_Info_Valid") != NULL, "clear message: %s", e.err);

	/* the wait is separate from media ready: a call on its own */
	is(vcxl_cxl_await_range_active(good, NULL, 0), 0, "await_range_active on its own");
	is(vcxl_cxl_media_ready(good, e.err, sizeof(e.err)), (uint64_t)-ENODEV,
	   "media_ready on a Type-2 without memdev regs: -ENODEV");
	vcxl_cxl_remove(good);
	env_fini(&e);
}

static void test_real_delay(void)
{
	/* the model's own Memory_Active delay, with the real clock */
	struct vcxl_model_cfg mc = {.mem_size = G, .active_delay_ms = 60};
	struct vcxl_model *m;
	struct vcxl_host h;
	struct vcxl_cxl_dev *d = NULL;
	char err[160] = "";

	if (vcxl_model_create(&mc, &m))
		return;
	vcxl_host_init(&h);
	uint64_t t0 = vcxl_host_now_ns(&h);
	is(vcxl_cxl_probe(&h, vcxl_model_backend(m), NULL, &d, err, sizeof(err)), 0,
	   "probe waits for the model's Memory_Active delay: %s", err);
	uint64_t dt = vcxl_host_now_ns(&h) - t0;
	ok(dt >= 50000000ull && dt < 2000000000ull, "took %llu ms",
	   (unsigned long long)(dt / 1000000));
	vcxl_cxl_remove(d);
	vcxl_host_fini(&h);
	vcxl_model_destroy(m);
}

int main(void)
{
	test_basic();
	test_comp_at();
	test_firmware();
	test_malformed();
	test_waits();
	test_real_delay();
	return done();
}
