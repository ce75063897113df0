// SPDX-License-Identifier: BSD-3-Clause
/*
 * Host address space: root decoder windows and the HPA free-space allocator
 * (what Linux's cxl_root_decoder + cxl_get_hpa_freespace do for the host).
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "host/host_cxl.h"

static uint64_t real_now_ns(void *opaque)
{
	struct timespec ts;

	(void)opaque;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

static void real_sleep_ns(void *opaque, uint64_t ns)
{
	struct timespec ts = {.tv_sec = (time_t)(ns / 1000000000ull),
			      .tv_nsec = (long)(ns % 1000000000ull)};

	(void)opaque;
	while (nanosleep(&ts, &ts) && errno == EINTR)
		;
}

void vcxl_host_init(struct vcxl_host *h)
{
	memset(h, 0, sizeof(*h));
	h->clock.now_ns = real_now_ns;
	h->clock.sleep_ns = real_sleep_ns;
}

void vcxl_host_fini(struct vcxl_host *h)
{
	for (unsigned i = 0; i < h->nwin; i++)
		free(h->win[i].free);
	memset(h, 0, sizeof(*h));
}

void vcxl_host_set_clock(struct vcxl_host *h, const struct vcxl_host_clock *clk)
{
	if (clk && clk->now_ns && clk->sleep_ns) {
		h->clock = *clk;
	} else {
		h->clock.now_ns = real_now_ns;
		h->clock.sleep_ns = real_sleep_ns;
		h->clock.opaque = NULL;
	}
}

uint64_t vcxl_host_now_ns(struct vcxl_host *h)
{
	return h->clock.now_ns(h->clock.opaque);
}

void vcxl_host_sleep_ns(struct vcxl_host *h, uint64_t ns)
{
	h->clock.sleep_ns(h->clock.opaque, ns);
}

static bool hpa_granular(uint64_t v)
{
	return (v & (VCXL_HPA_GRANULE - 1)) == 0;
}

/* [base, base + size) without wrapping past 2^64 */
static bool range_ok(uint64_t base, uint64_t size)
{
	return size && base + size > base;
}

static bool ranges_overlap(uint64_t a, uint64_t as, uint64_t b, uint64_t bs)
{
	return a < b + bs && b < a + as;
}

int vcxl_host_add_window(struct vcxl_host *h, uint64_t base, uint64_t size, uint32_t flags)
{
	if (!range_ok(base, size) || !hpa_granular(base) || !hpa_granular(size))
		return -EINVAL;
	if (h->nwin >= VCXL_HOST_MAX_WINDOWS)
		return -ENOSPC;
	for (unsigned i = 0; i < h->nwin; i++)
		if (ranges_overlap(base, size, h->win[i].base, h->win[i].size))
			return -EEXIST;
	struct vcxl_host_window *w = &h->win[h->nwin];
	w->free = calloc(4, sizeof(*w->free));
	if (!w->free)
		return -ENOMEM;
	w->cap = 4;
	w->base = base;
	w->size = size;
	w->flags = flags;
	w->free[0].base = base;
	w->free[0].size = size;
	w->nfree = 1;
	h->nwin++;
	return 0;
}

static struct vcxl_host_window *window_of(struct vcxl_host *h, uint64_t base, uint64_t size,
					  bool *straddles)
{
	*straddles = false;
	for (unsigned i = 0; i < h->nwin; i++) {
		struct vcxl_host_window *w = &h->win[i];
		if (!ranges_overlap(base, size, w->base, w->size))
			continue;
		if (base >= w->base && base + size <= w->base + w->size)
			return w;
		*straddles = true;
		return NULL;
	}
	return NULL;
}

/* Remove [base, base + size) from free extent i (which contains it). */
static int extent_carve(struct vcxl_host_window *w, unsigned i, uint64_t base, uint64_t size)
{
	struct vcxl_hpa_extent e = w->free[i];
	uint64_t head = base - e.base;
	uint64_t tail = e.base + e.size - (base + size);

	if (head && tail) {
		if (w->nfree == w->cap) {
			struct vcxl_hpa_extent *n = realloc(w->free, sizeof(*n) * w->cap * 2);
			if (!n)
				return -ENOMEM;
			w->free = n;
			w->cap *= 2;
		}
		memmove(&w->free[i + 2], &w->free[i + 1], sizeof(e) * (w->nfree - i - 1));
		w->free[i].size = head;
		w->free[i + 1].base = base + size;
		w->free[i + 1].size = tail;
		w->nfree++;
	} else if (head) {
		w->free[i].size = head;
	} else if (tail) {
		w->free[i].base = base + size;
		w->free[i].size = tail;
	} else {
		memmove(&w->free[i], &w->free[i + 1], sizeof(e) * (w->nfree - i - 1));
		w->nfree--;
	}
	return 0;
}

int vcxl_host_hpa_alloc(struct vcxl_host *h, uint64_t size, uint32_t flags, uint64_t *base)
{
	if (!size || !hpa_granular(size))
		return -EINVAL;
	for (unsigned wi = 0; wi < h->nwin; wi++) {
		struct vcxl_host_window *w = &h->win[wi];
		if ((w->flags & flags) != flags)
			continue;
		for (unsigned i = 0; i < w->nfree; i++) {
			if (w->free[i].size < size)
				continue;
			uint64_t b = w->free[i].base;
			int rc = extent_carve(w, i, b, size);
			if (rc)
				return rc;
			*base = b;
			return 0;
		}
	}
	return -ENOSPC;
}

int vcxl_host_hpa_reserve(struct vcxl_host *h, uint64_t base, uint64_t size)
{
	bool straddles;

	if (!range_ok(base, size) || !hpa_granular(base) || !hpa_granular(size))
		return -EINVAL;
	struct vcxl_host_window *w = window_of(h, base, size, &straddles);
	if (!w)
		return straddles ? -ERANGE : -ENOENT;
	for (unsigned i = 0; i < w->nfree; i++) {
		struct vcxl_hpa_extent *e = &w->free[i];
		if (base >= e->base && base + size <= e->base + e->size)
			return extent_carve(w, i, base, size);
	}
	return -EBUSY;
}

int vcxl_host_hpa_free(struct vcxl_host *h, uint64_t base, uint64_t size)
{
	bool straddles;

	if (!range_ok(base, size) || !hpa_granular(base) || !hpa_granular(size))
		return -EINVAL;
	struct vcxl_host_window *w = window_of(h, base, size, &straddles);
	if (!w)
		return -EINVAL;
	unsigned i = 0;
	while (i < w->nfree && w->free[i].base < base)
		i++;
	/* neighbours: i-1 below, i above; neither may overlap (double free) */
	if (i > 0 && w->free[i - 1].base + w->free[i - 1].size > base)
		return -EINVAL;
	if (i < w->nfree && w->free[i].base < base + size)
		return -EINVAL;
	bool join_lo = i > 0 && w->free[i - 1].base + w->free[i - 1].size == base;
	bool join_hi = i < w->nfree && w->free[i].base == base + size;
	if (join_lo && join_hi) {
		w->free[i - 1].size += size + w->free[i].size;
		memmove(&w->free[i], &w->free[i + 1], sizeof(w->free[0]) * (w->nfree - i - 1));
		w->nfree--;
	} else if (join_lo) {
		w->free[i - 1].size += size;
	} else if (join_hi) {
		w->free[i].base = base;
		w->free[i].size += size;
	} else {
		if (w->nfree == w->cap) {
			struct vcxl_hpa_extent *n = realloc(w->free, sizeof(*n) * w->cap * 2);
			if (!n)
				return -ENOMEM;
			w->free = n;
			w->cap *= 2;
		}
		memmove(&w->free[i + 1], &w->free[i], sizeof(w->free[0]) * (w->nfree - i));
		w->free[i].base = base;
		w->free[i].size = size;
		w->nfree++;
	}
	return 0;
}

uint64_t vcxl_host_hpa_avail(const struct vcxl_host *h, uint32_t flags, uint64_t *largest)
{
	uint64_t total = 0, big = 0;

	for (unsigned wi = 0; wi < h->nwin; wi++) {
		const struct vcxl_host_window *w = &h->win[wi];
		if ((w->flags & flags) != flags)
			continue;
		for (unsigned i = 0; i < w->nfree; i++) {
			total += w->free[i].size;
			if (w->free[i].size > big)
				big = w->free[i].size;
		}
	}
	if (largest)
		*largest = big;
	return total;
}
