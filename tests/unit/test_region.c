// SPDX-License-Identifier: BSD-3-Clause
/* Host CXL regions: create (physical decoder programming), destroy,
 * firmware-committed attach, out-of-space, data through the mapping. */
#include <errno.h>
#include <string.h>
#include <sys/mman.h>

#include "be_wrap.h"
#include "tap.h"
#include "host/host_cxl.h"
#include "model/model.h"

#define G  VCXL_HPA_GRANULE
#define WB VCXL_HOST_DEFAULT_WIN_BASE

struct env {
	struct vcxl_model *m;
	struct vcxl_backend *raw;
	struct bw w;
	struct vcxl_host h;
	struct vclock clk;
	struct vcxl_cxl_dev *d;
	char err[200];
};

static int env_init(struct env *e, const struct vcxl_model_cfg *mc, uint64_t win_size)
{
	memset(e, 0, sizeof(*e));
	if (vcxl_model_create(mc, &e->m))
		return -1;
	e->raw = vcxl_model_backend(e->m);
	bw_init(&e->w, e->raw);
	vcxl_host_init(&e->h);
	vcxl_host_add_window(&e->h, WB, win_size, VCXL_HOST_DEFAULT_WIN_FLAGS);
	e->clk.model = e->m;
	vclock_install(&e->h, &e->clk);
	if (vcxl_cxl_probe(&e->h, &e->w.be, NULL, &e->d, e->err, sizeof(e->err))) {
		diag("probe: %s", e->err);
		vcxl_model_destroy(e->m);
		return -1;
	}
	return 0;
}

static void env_fini(struct env *e)
{
	vcxl_cxl_remove(e->d);
	vcxl_host_fini(&e->h);
	vcxl_model_destroy(e->m);
}

static uint32_t phys_hdm(struct env *e, uint32_t reg)
{
	return raw_bar32(e->raw, e->d->comp_bar, e->d->comp_off + e->d->hdm_off + reg);
}

static uint16_t phys_dvsec_ctrl(struct env *e)
{
	return (uint16_t)raw_cfg32(e->raw, e->d->dvsec + CXL_DVSEC_CTRL);
}

static void test_create_destroy(void)
{
	struct vcxl_model_cfg mc = {.mem_size = 2 * G, .decoders = 2};
	struct env e;
	struct vcxl_region *r = NULL, *r2 = NULL;
	struct host_state before, after;

	if (!ok(env_init(&e, &mc, 16 * G) == 0, "env"))
		return;
	hs_take(e.raw, e.d, &before);
	ok(!(phys_hdm(&e, CXL_HDM_GLOBAL_CTRL) & CXL_HDM_GCTRL_ENABLE),
	   "HDM decoding off at start");
	e.w.nlog = 0;
	is(vcxl_region_create(e.d, G, &r, e.err, sizeof(e.err)), 0, "create 256 MiB region: %s",
	   e.err);
	if (!r) {
		env_fini(&e);
		return;
	}
	is(r->decoder, 0, "decoder 0");
	is(r->hpa, WB, "HPA: first fit in the Type-2 window");
	is(r->dpa, 0, "DPA 0");
	is(r->size, G, "size");
	ok(!r->firmware && r->in_window, "created, in a window");
	ok(r->fd >= 0, "mapped through hpa_map (fd %d)", r->fd);

	/* Linux's order: Global Control, Mem_Enable, BASE_HI, BASE_LO, SIZE_HI, SIZE_LO,
	 * SKIP_HI, SKIP_LO, CTRL */
	uint64_t h0 = e.d->comp_off + e.d->hdm_off;
	struct {
		char space;
		uint64_t off;
	} want[] = {
	    {'b', h0 + CXL_HDM_GLOBAL_CTRL},	{'c', e.d->dvsec + CXL_DVSEC_CTRL},
	    {'b', h0 + CXL_HDM_DEC_BASE_HI(0)}, {'b', h0 + CXL_HDM_DEC_BASE_LO(0)},
	    {'b', h0 + CXL_HDM_DEC_SIZE_HI(0)}, {'b', h0 + CXL_HDM_DEC_SIZE_LO(0)},
	    {'b', h0 + CXL_HDM_DEC_SKIP_HI(0)}, {'b', h0 + CXL_HDM_DEC_SKIP_LO(0)},
	    {'b', h0 + CXL_HDM_DEC_CTRL(0)},
	};
	unsigned nw = sizeof(want) / sizeof(want[0]), order_ok = e.w.nlog == nw;
	for (unsigned i = 0; i < nw && i < e.w.nlog; i++)
		order_ok &= e.w.log[i].space == want[i].space && e.w.log[i].off == want[i].off;
	ok(order_ok, "programming order as Linux (%u writes)", e.w.nlog);

	ok(phys_hdm(&e, CXL_HDM_GLOBAL_CTRL) & CXL_HDM_GCTRL_ENABLE, "HDM Decoder Enable set");
	ok(phys_dvsec_ctrl(&e) & CXL_DVSEC_CTRL_MEM_EN, "Mem_Enable set");
	struct vcxl_phys_decoder pd;
	is(vcxl_cxl_read_decoder(e.d, 0, &pd), 0, "read physical decoder");
	is(pd.base, WB, "physical base");
	is(pd.size, G, "physical size");
	is(pd.skip, 0, "physical skip");
	ok(pd.committed && !pd.error, "Committed");
	is(VCXL_FIELD_GET(CXL_HDM_DEC_CTRL_IW, pd.ctrl), 0, "one way");
	ok(!(pd.ctrl & CXL_HDM_DEC_CTRL_HOSTONLY), "device-coherent (Type-2)");
	is(vcxl_region_verify(r), 0, "verify");

	/* data through the mapping is device memory */
	uint8_t *dev = vcxl_model_mem(e.m);
	void *map = mmap(NULL, G, PROT_READ | PROT_WRITE, MAP_SHARED, r->fd, (off_t)r->fd_offset);
	ok(map != MAP_FAILED && dev, "region mmapped");
	if (map != MAP_FAILED && dev) {
		uint8_t *p = map;
		for (uint64_t o = 0; o < G; o += 4096 * 97)
			p[o] = (uint8_t)(o >> 12 ^ 0x5a);
		unsigned bad = 0;
		for (uint64_t o = 0; o < G; o += 4096 * 97)
			bad += dev[r->dpa + o] != (uint8_t)(o >> 12 ^ 0x5a);
		is(bad, 0, "bytes written through the region equal device memory at DPA");
		dev[r->dpa + 12345] = 0xa7;
		is(p[12345], 0xa7, "and device memory shows through the mapping");
		munmap(map, G);
	}

	is(vcxl_region_create(e.d, G, &r2, e.err, sizeof(e.err)), 0, "second region: %s", e.err);
	if (r2) {
		is(r2->decoder, 1, "decoder 1");
		is(r2->dpa, G, "DPA after decoder 0");
		is(r2->hpa, WB + G, "next HPA");
		ok(phys_hdm(&e, CXL_HDM_DEC_CTRL(1)) & CXL_HDM_DEC_CTRL_COMMITTED, "committed");
	}
	struct vcxl_region *r3 = NULL;
	is(vcxl_region_create(e.d, G, &r3, e.err, sizeof(e.err)), (uint64_t)-ENOSPC,
	   "no decoder/DPA left: -ENOSPC");
	ok(strstr(e.err, "DPA") != NULL, "message: %s", e.err);
	vcxl_region_destroy(r2);
	ok(!(phys_hdm(&e, CXL_HDM_DEC_CTRL(1)) & CXL_HDM_DEC_CTRL_COMMITTED),
	   "decoder 1 decommitted");
	ok(phys_hdm(&e, CXL_HDM_GLOBAL_CTRL) & CXL_HDM_GCTRL_ENABLE,
	   "enables stay while a region lives");
	vcxl_region_destroy(r);
	is(phys_hdm(&e, CXL_HDM_DEC_CTRL(0)) & CXL_HDM_DEC_CTRL_COMMITTED, 0,
	   "decoder 0 decommitted");
	is(phys_hdm(&e, CXL_HDM_DEC_BASE_LO(0)) | phys_hdm(&e, CXL_HDM_DEC_BASE_HI(0)), 0,
	   "base cleared");
	is(phys_hdm(&e, CXL_HDM_DEC_SIZE_LO(0)) | phys_hdm(&e, CXL_HDM_DEC_SIZE_HI(0)), 0,
	   "size cleared");
	is(vcxl_host_hpa_avail(&e.h, 0, NULL), 16 * G, "HPA freed");
	is(vcxl_dpa_avail(e.d), 2 * G, "DPA freed");
	hs_take(e.raw, e.d, &after);
	is(hs_diff(&before, &after), (uint64_t)-1, "device back as it was (enables undone)");
	env_fini(&e);
}

static void test_out_of_space(void)
{
	struct vcxl_model_cfg mc = {.mem_size = 4 * G};
	struct env e;
	struct vcxl_region *r = NULL;
	struct host_state before, after;

	if (!ok(env_init(&e, &mc, 2 * G) == 0, "env (2-granule window)"))
		return;
	hs_take(e.raw, e.d, &before);
	is(vcxl_region_create(e.d, 4 * G, &r, e.err, sizeof(e.err)), (uint64_t)-ENOSPC,
	   "region larger than the window: -ENOSPC");
	ok(strstr(e.err, "window") != NULL, "message: %s", e.err);
	ok(r == NULL, "no region");
	is(vcxl_dpa_avail(e.d), 4 * G, "DPA given back");
	is(vcxl_host_hpa_avail(&e.h, 0, NULL), 2 * G, "HPA untouched");
	hs_take(e.raw, e.d, &after);
	is(hs_diff(&before, &after), (uint64_t)-1, "device untouched");
	is(vcxl_region_create(e.d, 8 * G, &r, e.err, sizeof(e.err)), (uint64_t)-ENOSPC,
	   "more than the device memory: -ENOSPC");
	is(vcxl_region_create(e.d, G / 2, &r, e.err, sizeof(e.err)), (uint64_t)-EINVAL,
	   "not 256 MiB granular: -EINVAL");
	is(vcxl_region_create(e.d, 0, &r, e.err, sizeof(e.err)), (uint64_t)-ENOSPC,
	   "size 0 = all of DPA (4 granules) does not fit a 2-granule window");
	env_fini(&e);
}

static void test_firmware(void)
{
	struct vcxl_region *r = NULL;
	struct env e;

	/* inside a window: reserved there */
	struct vcxl_model_cfg mc = {
	    .mem_size = 2 * G, .firmware_committed = true, .fw_hpa_base = WB + 4 * G};
	if (!ok(env_init(&e, &mc, 16 * G) == 0, "env with firmware-committed decoder"))
		return;
	struct vcxl_phys_decoder pd;
	vcxl_cxl_read_decoder(e.d, 0, &pd);
	uint32_t ctrl0 = pd.ctrl;
	e.w.nlog = 0;
	is(vcxl_region_attach_firmware(e.d, &r, e.err, sizeof(e.err)), 0, "attach: %s", e.err);
	if (r) {
		ok(r->firmware, "firmware region");
		is(r->hpa, WB + 4 * G, "HPA as firmware programmed it");
		is(r->size, pd.size, "size from the decoder");
		ok(r->in_window, "reserved in the window");
		is(e.w.nlog, 0, "attached without writing anything");
		is(vcxl_host_hpa_avail(&e.h, 0, NULL), 16 * G - r->size, "window space reserved");
		struct vcxl_region *r2 = NULL;
		is(vcxl_region_attach_firmware(e.d, &r2, e.err, sizeof(e.err)), (uint64_t)-EBUSY,
		   "second attach refused");
		uint8_t *dev = vcxl_model_mem(e.m);
		uint8_t *map = mmap(NULL, r->size, PROT_READ | PROT_WRITE, MAP_SHARED, r->fd,
				    (off_t)r->fd_offset);
		if (ok(map != MAP_FAILED && dev, "mapped")) {
			memcpy(map + 4096, "firmware", 8);
			ok(memcmp(dev + r->dpa + 4096, "firmware", 8) == 0,
			   "data through the mapping lands in device memory");
			munmap(map, r->size);
		}
		vcxl_region_destroy(r);
		vcxl_cxl_read_decoder(e.d, 0, &pd);
		ok(pd.committed && pd.ctrl == ctrl0,
		   "firmware decoder still committed after detach");
		is(vcxl_host_hpa_avail(&e.h, 0, NULL), 16 * G, "reservation released");
	}
	/* the range already taken by someone else */
	is(vcxl_host_hpa_reserve(&e.h, WB + 4 * G, G), 0, "someone takes the firmware range");
	is(vcxl_region_attach_firmware(e.d, &r, e.err, sizeof(e.err)), (uint64_t)-EBUSY,
	   "attach over a used range: -EBUSY");
	ok(strstr(e.err, "in use") != NULL, "message: %s", e.err);
	env_fini(&e);

	/* outside every window: accepted as a fixed region */
	mc.fw_hpa_base = 0x40000000000ull;
	if (!ok(env_init(&e, &mc, 16 * G) == 0, "env with firmware region outside the windows"))
		return;
	is(vcxl_region_attach_firmware(e.d, &r, e.err, sizeof(e.err)), 0, "attach: %s", e.err);
	if (r) {
		ok(!r->in_window, "fixed region outside the windows");
		is(r->hpa, 0x40000000000ull, "its HPA");
		is(vcxl_host_hpa_avail(&e.h, 0, NULL), 16 * G, "windows untouched");
		vcxl_region_destroy(r);
	}
	env_fini(&e);

	/* straddling a window edge: refused */
	mc.fw_hpa_base = WB + 15 * G;
	if (!ok(env_init(&e, &mc, 16 * G) == 0, "env with firmware region across the window end"))
		return;
	is(vcxl_region_attach_firmware(e.d, &r, e.err, sizeof(e.err)), (uint64_t)-ERANGE,
	   "straddling: -ERANGE");
	ok(strstr(e.err, "straddles") != NULL, "message: %s", e.err);
	env_fini(&e);
}

/* The physical decoder answers Error Not Committed, or never answers. */
static void ctrl_lie(struct bw *w, unsigned bar, uint64_t off, unsigned len, uint64_t *val)
{
	uint64_t *p = w->priv;
	if (off == p[0])
		*val =
		    (*val & ~(uint64_t)(CXL_HDM_DEC_CTRL_COMMITTED | CXL_HDM_DEC_CTRL_COMMIT_ERR)) |
		    p[1];
}

static void test_commit_errors(void)
{
	struct vcxl_model_cfg mc = {.mem_size = G};
	struct env e;
	struct vcxl_region *r = NULL;
	struct host_state before, after;

	if (!ok(env_init(&e, &mc, 16 * G) == 0, "env"))
		return;
	hs_take(e.raw, e.d, &before);
	uint64_t lie[2] = {e.d->comp_off + e.d->hdm_off + CXL_HDM_DEC_CTRL(0),
			   CXL_HDM_DEC_CTRL_COMMIT_ERR};
	e.w.priv = lie;
	e.w.bar_filter = ctrl_lie;
	is(vcxl_region_create(e.d, G, &r, e.err, sizeof(e.err)), (uint64_t)-EIO,
	   "Error Not Committed: -EIO");
	ok(strstr(e.err, "Error Not Committed") != NULL, "reported clearly: %s", e.err);
	e.w.bar_filter = NULL;
	hs_take(e.raw, e.d, &after);
	is(hs_diff(&before, &after), (uint64_t)-1, "device restored after the failed commit");
	is(vcxl_host_hpa_avail(&e.h, 0, NULL), 16 * G, "HPA freed");
	is(vcxl_dpa_avail(e.d), G, "DPA freed");

	lie[1] = 0;
	e.w.bar_filter = ctrl_lie;
	uint64_t t0 = e.clk.now;
	is(vcxl_region_create(e.d, G, &r, e.err, sizeof(e.err)), (uint64_t)-ETIMEDOUT,
	   "neither Committed nor Error: -ETIMEDOUT");
	ok(e.clk.now - t0 >= 20000000ull && e.clk.now - t0 < 30000000ull, "bounded poll (~20 ms)");
	e.w.bar_filter = NULL;
	hs_take(e.raw, e.d, &after);
	is(hs_diff(&before, &after), (uint64_t)-1, "device restored after the timeout");
	env_fini(&e);
}

/* Every backend operation of region_create, failed in turn, leaves nothing behind. */
static void test_fault_injection(void)
{
	struct vcxl_model_cfg mc = {.mem_size = 2 * G};
	struct env e;
	struct host_state before, after;
	unsigned bad = 0, k;

	if (!ok(env_init(&e, &mc, 16 * G) == 0, "env"))
		return;
	hs_take(e.raw, e.d, &before);
	for (k = 1; k < 200; k++) {
		struct vcxl_region *r = NULL;
		e.w.ops = 0;
		e.w.fail_at = k;
		int rc = vcxl_region_create(e.d, G, &r, e.err, sizeof(e.err));
		e.w.fail_at = 0;
		if (rc == 0) {
			vcxl_region_destroy(r);
			break;
		}
		hs_take(e.raw, e.d, &after);
		if (hs_diff(&before, &after) >= 0 || vcxl_host_hpa_avail(&e.h, 0, NULL) != 16 * G ||
		    vcxl_dpa_avail(e.d) != 2 * G || e.d->regions) {
			bad++;
			diag("failing op %u left state behind (%s)", k, e.err);
		}
	}
	ok(k > 5 && k < 200, "create succeeds once no operation fails (after %u)", k - 1);
	is(bad, 0, "each of %u injected failures left the device, HPA and DPA as before", k - 1);
	hs_take(e.raw, e.d, &after);
	is(hs_diff(&before, &after), (uint64_t)-1, "and destroy after success restored it too");
	env_fini(&e);
}

static void test_restore(void)
{
	struct vcxl_model_cfg mc = {.mem_size = G};
	struct env e;
	struct vcxl_region *r = NULL;

	if (!ok(env_init(&e, &mc, 16 * G) == 0, "env"))
		return;
	if (vcxl_region_create(e.d, G, &r, e.err, sizeof(e.err))) {
		ok(0, "create: %s", e.err);
		env_fini(&e);
		return;
	}
	/* something (a reset that should not have) drops the decoder */
	uint64_t h0 = e.d->comp_off + e.d->hdm_off;
	uint32_t c = phys_hdm(&e, CXL_HDM_DEC_CTRL(0));
	e.raw->ops->bar_write(e.raw->dev, 0, h0 + CXL_HDM_DEC_CTRL(0), 4,
			      c & ~CXL_HDM_DEC_CTRL_COMMIT);
	e.raw->ops->bar_write(e.raw->dev, 0, h0 + CXL_HDM_DEC_BASE_HI(0), 4, 0);
	is(vcxl_region_verify(r), (uint64_t)-EIO, "verify notices the lost decoder");
	is(vcxl_region_restore(r, e.err, sizeof(e.err)), 0, "restore: %s", e.err);
	is(vcxl_region_verify(r), 0, "decoder back as recorded");
	vcxl_region_destroy(r);
	env_fini(&e);
}

int main(void)
{
	test_create_destroy();
	test_out_of_space();
	test_firmware();
	test_commit_errors();
	test_fault_injection();
	test_restore();
	return done();
}
