// SPDX-License-Identifier: BSD-3-Clause
/* Host address space: windows, the HPA allocator, and DPA allocation. */
#include <errno.h>
#include <string.h>

#include "tap.h"
#include "host/host_cxl.h"

#define G  VCXL_HPA_GRANULE
#define WB 0x1000000000ull

static void test_windows(void)
{
	struct vcxl_host h;

	vcxl_host_init(&h);
	is(vcxl_host_add_window(&h, WB + 1, 4 * G, VCXL_WIN_RAM), (uint64_t)-EINVAL,
	   "unaligned window base refused");
	is(vcxl_host_add_window(&h, WB, G + 4096, VCXL_WIN_RAM), (uint64_t)-EINVAL,
	   "unaligned window size refused");
	is(vcxl_host_add_window(&h, WB, 0, VCXL_WIN_RAM), (uint64_t)-EINVAL,
	   "empty window refused");
	is(vcxl_host_add_window(&h, ~0ull & ~(G - 1), 2 * G, VCXL_WIN_RAM), (uint64_t)-EINVAL,
	   "window wrapping 2^64 refused");
	is(vcxl_host_add_window(&h, WB, 8 * G, VCXL_WIN_RAM | VCXL_WIN_TYPE2), 0, "window added");
	is(vcxl_host_add_window(&h, WB + 7 * G, 2 * G, VCXL_WIN_RAM), (uint64_t)-EEXIST,
	   "overlapping window refused");
	for (unsigned i = 1; i < VCXL_HOST_MAX_WINDOWS; i++)
		vcxl_host_add_window(&h, WB + 16 * G * i, G, VCXL_WIN_RAM);
	is(h.nwin, VCXL_HOST_MAX_WINDOWS, "windows up to the maximum");
	is(vcxl_host_add_window(&h, 0x100 * G, G, VCXL_WIN_RAM), (uint64_t)-ENOSPC,
	   "one window too many refused");
	vcxl_host_fini(&h);
}

static void test_alloc_free(void)
{
	struct vcxl_host h;
	uint64_t a, b, c, d, big;

	vcxl_host_init(&h);
	vcxl_host_add_window(&h, WB, 4 * G, VCXL_WIN_RAM); /* not Type-2 capable */
	vcxl_host_add_window(&h, 2 * WB, 8 * G, VCXL_WIN_RAM | VCXL_WIN_TYPE2);
	is(vcxl_host_hpa_alloc(&h, G + 1, VCXL_WIN_TYPE2, &a), (uint64_t)-EINVAL,
	   "non-granular size refused");
	is(vcxl_host_hpa_alloc(&h, 0, VCXL_WIN_TYPE2, &a), (uint64_t)-EINVAL, "zero size refused");
	is(vcxl_host_hpa_alloc(&h, G, VCXL_WIN_TYPE2, &a), 0, "alloc 1");
	is(a, 2 * WB, "first fit skips the window without TYPE2, lowest address first");
	is(vcxl_host_hpa_alloc(&h, 2 * G, VCXL_WIN_TYPE2, &b), 0, "alloc 2");
	is(b, 2 * WB + G, "second allocation follows the first");
	is(vcxl_host_hpa_alloc(&h, G, VCXL_WIN_TYPE2, &c), 0, "alloc 3");
	is(c, 2 * WB + 3 * G, "third follows");
	is(vcxl_host_hpa_alloc(&h, G, VCXL_WIN_RAM, &d), 0, "RAM-only alloc");
	is(d, WB, "RAM-only alloc may use the first window");
	is(vcxl_host_hpa_alloc(&h, 5 * G, VCXL_WIN_TYPE2, &d), (uint64_t)-ENOSPC,
	   "out of space: -ENOSPC");
	is(vcxl_host_hpa_avail(&h, VCXL_WIN_TYPE2, &big), 4 * G, "4 granules free in TYPE2");
	is(big, 4 * G, "largest extent 4 granules");
	is(vcxl_host_hpa_free(&h, b, 2 * G), 0, "free the middle one");
	is(h.win[1].nfree, 2, "two free extents (hole + tail)");
	is(vcxl_host_hpa_free(&h, b, 2 * G), (uint64_t)-EINVAL, "double free refused");
	is(vcxl_host_hpa_free(&h, b + G, 2 * G), (uint64_t)-EINVAL, "overlapping free refused");
	is(vcxl_host_hpa_free(&h, 3 * WB, G), (uint64_t)-EINVAL, "free outside windows refused");
	is(vcxl_host_hpa_alloc(&h, 2 * G, VCXL_WIN_TYPE2, &d), 0, "realloc into the hole");
	is(d, b, "first fit reuses the hole");
	is(vcxl_host_hpa_free(&h, d, 2 * G), 0, "free again");
	is(vcxl_host_hpa_free(&h, a, G), 0, "free the first: coalesces with the hole");
	is(h.win[1].nfree, 2, "still two extents (joined low + tail)");
	is(h.win[1].free[0].size, 3 * G, "joined extent is 3 granules");
	is(vcxl_host_hpa_free(&h, c, G), 0, "free the last: everything coalesces");
	is(h.win[1].nfree, 1, "one extent");
	is(h.win[1].free[0].base, 2 * WB, "at the window base");
	is(h.win[1].free[0].size, 8 * G, "the whole window");
	vcxl_host_fini(&h);
}

static void test_reserve(void)
{
	struct vcxl_host h;
	uint64_t a;

	vcxl_host_init(&h);
	vcxl_host_add_window(&h, WB, 8 * G, VCXL_WIN_RAM | VCXL_WIN_TYPE2);
	is(vcxl_host_hpa_reserve(&h, WB + 2 * G, 2 * G), 0, "reserve inside the window");
	is(vcxl_host_hpa_reserve(&h, WB + 3 * G, G), (uint64_t)-EBUSY, "reserve again: busy");
	is(vcxl_host_hpa_reserve(&h, WB + 7 * G, 2 * G), (uint64_t)-ERANGE,
	   "straddling the window end: -ERANGE");
	is(vcxl_host_hpa_reserve(&h, 4 * WB, G), (uint64_t)-ENOENT,
	   "outside every window: -ENOENT");
	is(vcxl_host_hpa_reserve(&h, WB + 1, G), (uint64_t)-EINVAL, "unaligned: -EINVAL");
	is(vcxl_host_hpa_alloc(&h, 2 * G, VCXL_WIN_TYPE2, &a), 0, "alloc below the reservation");
	is(a, WB, "fits before it");
	is(vcxl_host_hpa_alloc(&h, 2 * G, VCXL_WIN_TYPE2, &a), 0, "next alloc");
	is(a, WB + 4 * G, "goes after the reservation");
	vcxl_host_fini(&h);
}

/* Random alloc/free against a granule bitmap: first fit, no overlap, coalescing. */
static void test_random(void)
{
	enum { NG = 64, OPS = 20000 };
	struct vcxl_host h;
	uint8_t used[NG] = {0};
	struct {
		uint64_t base, n;
	} live[NG];
	unsigned nlive = 0, bad_fit = 0, bad_free = 0, bad_avail = 0;
	uint32_t seed = 12345;

	vcxl_host_init(&h);
	vcxl_host_add_window(&h, WB, NG * G, VCXL_WIN_RAM | VCXL_WIN_TYPE2);
	for (unsigned op = 0; op < OPS; op++) {
		seed = seed * 1103515245u + 12345u;
		if ((seed >> 16) % 2 && nlive) {
			unsigned k = (seed >> 8) % nlive;
			if (vcxl_host_hpa_free(&h, live[k].base, live[k].n * G))
				bad_free++;
			for (uint64_t g = 0; g < live[k].n; g++)
				used[(live[k].base - WB) / G + g] = 0;
			live[k] = live[--nlive];
		} else {
			uint64_t n = 1 + (seed >> 20) % 6, base = 0;
			int expect = -1;
			for (unsigned s = 0; s + n <= NG && expect < 0; s++) {
				unsigned f = 0;
				while (f < n && !used[s + f])
					f++;
				if (f == n)
					expect = (int)s;
			}
			int rc = vcxl_host_hpa_alloc(&h, n * G, VCXL_WIN_TYPE2, &base);
			if (expect < 0) {
				bad_fit += rc != -ENOSPC;
				continue;
			}
			if (rc || base != WB + (uint64_t)expect * G) {
				bad_fit++;
				continue;
			}
			for (uint64_t g = 0; g < n; g++)
				used[expect + g] = 1;
			live[nlive].base = base;
			live[nlive].n = n;
			nlive++;
		}
		uint64_t freeg = 0;
		for (unsigned g = 0; g < NG; g++)
			freeg += !used[g];
		if (vcxl_host_hpa_avail(&h, 0, NULL) != freeg * G)
			bad_avail++;
		for (unsigned e = 0; e + 1 < h.win[0].nfree; e++)
			if (h.win[0].free[e].base + h.win[0].free[e].size >=
			    h.win[0].free[e + 1].base)
				bad_avail++; /* adjacent extents must have been coalesced */
	}
	is(bad_fit, 0, "%u random allocations matched the first-fit reference", OPS);
	is(bad_free, 0, "every free succeeded");
	is(bad_avail, 0, "free space and coalescing matched after every operation");
	vcxl_host_fini(&h);
}

static void test_dpa(void)
{
	struct vcxl_cxl_dev d;
	unsigned n;
	uint64_t dpa;

	memset(&d, 0, sizeof(d));
	d.hdm_count = 2;
	d.dpa_capacity = 4 * G;
	is(vcxl_dpa_alloc(&d, G + 1, 0, &n, &dpa), (uint64_t)-EINVAL, "non-granular DPA refused");
	is(vcxl_dpa_alloc(&d, G, G, &n, &dpa), 0, "DPA with skip");
	is(n, 0, "decoder 0 first");
	is(dpa, G, "skip respected: DPA starts at the skip");
	is(vcxl_dpa_avail(&d), 2 * G, "2 granules left");
	is(vcxl_dpa_alloc(&d, 3 * G, 0, &n, &dpa), (uint64_t)-ENOSPC, "too big: -ENOSPC");
	is(vcxl_dpa_alloc(&d, 2 * G, 0, &n, &dpa), 0, "second allocation");
	is(n, 1, "decoder 1 next (decoder order)");
	is(dpa, 2 * G, "contiguous after decoder 0");
	is(vcxl_dpa_alloc(&d, G, 0, &n, &dpa), (uint64_t)-ENOSPC, "no decoder left: -ENOSPC");
	is(vcxl_dpa_free(&d, 0), (uint64_t)-EBUSY, "freeing out of order refused");
	is(vcxl_dpa_free(&d, 1), 0, "free the last");
	is(vcxl_dpa_free(&d, 0), 0, "then the first");
	is(vcxl_dpa_avail(&d), 4 * G, "all capacity back");
}

struct fake_clock {
	uint64_t now, sleeps;
};

static uint64_t fc_now(void *o)
{
	return ((struct fake_clock *)o)->now;
}

static void fc_sleep(void *o, uint64_t ns)
{
	struct fake_clock *c = o;
	c->now += ns;
	c->sleeps++;
}

static void test_clock(void)
{
	struct vcxl_host h;
	struct fake_clock fc = {.now = 1000};
	struct vcxl_host_clock clk = {fc_now, fc_sleep, &fc};

	vcxl_host_init(&h);
	uint64_t t0 = vcxl_host_now_ns(&h);
	ok(t0 > 0, "real clock by default");
	vcxl_host_set_clock(&h, &clk);
	vcxl_host_sleep_ns(&h, 500);
	is(vcxl_host_now_ns(&h), 1500, "test clock installed: sleep advances virtual time");
	is(fc.sleeps, 1, "one virtual sleep");
	vcxl_host_set_clock(&h, NULL);
	ok(vcxl_host_now_ns(&h) >= t0, "NULL restores the real clock");
	vcxl_host_fini(&h);
}

int main(void)
{
	test_windows();
	test_alloc_free();
	test_reserve();
	test_random();
	test_dpa();
	test_clock();
	return done();
}
