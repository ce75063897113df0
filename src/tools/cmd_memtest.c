// SPDX-License-Identifier: BSD-3-Clause
/* vcxl memtest: a pattern through the CXL region's mmap and REGION_READ (a
 * region the server gives no fd for: REGION_WRITE and REGION_READ). On a
 * terminal (stderr and stdout both ttys, no --json) each pass shows its
 * progress and throughput on one line that is rewritten, then cleared. */
#include <errno.h>
#include <json-c/json.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "cli.h"

#define MEMTEST_DEFAULT_SIZE (64ull << 20)
#define MEMTEST_CHUNK	     (1u << 20)
#define PROGRESS_EVERY_NS    100000000 /* redraw at most every 100 ms */
#define PASSES		     3

static double mbps(uint64_t bytes, int64_t ns)
{
	return ns > 0 ? (double)bytes / (double)ns * 1e3 : 0.0;
}

static uint64_t pattern(uint64_t off)
{
	return (off * 0x9e3779b97f4a7c15ull) ^ 0xc3a5c85c97cb3127ull;
}

struct progress {
	bool on;
	unsigned pass;
	const char *what;
	uint64_t total;
	int64_t t0, last;
};

static void progress_start(struct progress *p, unsigned pass, const char *what)
{
	p->pass = pass;
	p->what = what;
	p->t0 = p->last = now_ns();
}

/* "memtest: pass 2/3 mmap verify  45%  29/64 MiB  7012 MB/s" */
static void progress(struct progress *p, uint64_t done, bool final)
{
	int64_t t;

	if (!p->on)
		return;
	t = now_ns();
	if (!final && t - p->last < PROGRESS_EVERY_NS)
		return;
	p->last = t;
	fprintf(stderr, "\r\033[Kmemtest: pass %u/%u %-18s %3u%% %5llu/%llu MiB %6.0f MB/s",
		p->pass, PASSES, p->what, (unsigned)(done * 100 / p->total),
		(unsigned long long)(done >> 20), (unsigned long long)(p->total >> 20),
		mbps(done, t - p->t0));
	fflush(stderr);
}

static void progress_end(struct progress *p)
{
	if (p->on) {
		fprintf(stderr, "\r\033[K");
		fflush(stderr);
	}
}

static int memtest_fail(struct progress *pr, void *p, uint64_t size, void *chunk, const char *what,
			uint64_t off, int rc)
{
	progress_end(pr);
	free(chunk);
	munmap(p, size);
	if (rc)
		return fail("%s at 0x%llx: %s", what, (unsigned long long)off, strerror(-rc));
	return fail("mismatch through %s at 0x%llx", what, (unsigned long long)off);
}

/* The region is not mappable (the server keeps its memory to itself:
 * docs/security.md): the pattern through REGION_WRITE, verified through
 * REGION_READ, 1 MiB at a time. */
static int memtest_msgs(struct ctx *x, const struct vcxl_client_region *ri, uint64_t size,
			bool json)
{
	uint64_t *chunk = malloc(MEMTEST_CHUNK);
	int64_t t0, t1, t2;
	int rc;

	if (!chunk)
		return fail("out of memory");
	t0 = now_ns();
	for (uint64_t off = 0; off < size; off += MEMTEST_CHUNK) {
		size_t n = size - off < MEMTEST_CHUNK ? (size_t)(size - off) : MEMTEST_CHUNK;
		for (size_t i = 0; i < n / 8; i++)
			chunk[i] = pattern(off + i * 8);
		rc = vcxl_client_region_write(x->c, ri->index, off, chunk, n);
		if (rc) {
			free(chunk);
			return fail("REGION_WRITE at 0x%llx: %s", (unsigned long long)off,
				    strerror(-rc));
		}
	}
	t1 = now_ns();
	for (uint64_t off = 0; off < size; off += MEMTEST_CHUNK) {
		size_t n = size - off < MEMTEST_CHUNK ? (size_t)(size - off) : MEMTEST_CHUNK;
		rc = vcxl_client_region_read(x->c, ri->index, off, chunk, n);
		for (size_t i = 0; !rc && i < n / 8; i++)
			if (chunk[i] != pattern(off + i * 8))
				rc = -EIO;
		if (rc) {
			free(chunk);
			return fail(rc == -EIO ? "mismatch through REGION_READ at 0x%llx"
					       : "REGION_READ at 0x%llx failed",
				    (unsigned long long)off);
		}
	}
	t2 = now_ns();
	free(chunk);
	if (json) {
		struct json_object *j = json_object_new_object();

		json_object_object_add(j, "region", json_object_new_int((int)ri->index));
		json_object_object_add(j, "size", json_object_new_int64((int64_t)size));
		json_object_object_add(j, "ok", json_object_new_boolean(true));
		json_object_object_add(j, "mappable", json_object_new_boolean(false));
		json_object_object_add(j, "region_write_mbps",
				       json_object_new_int64((int64_t)mbps(size, t1 - t0)));
		json_object_object_add(j, "region_read_verify_mbps",
				       json_object_new_int64((int64_t)mbps(size, t2 - t1)));
		printf("%s\n", json_object_to_json_string_ext(j, JSON_C_TO_STRING_PRETTY));
		json_object_put(j);
		return 0;
	}
	printf("memtest: %llu MiB of region %u OK (not mappable: messages only); REGION_WRITE "
	       "%.0f MB/s, REGION_READ verify %.0f MB/s\n",
	       (unsigned long long)(size >> 20), ri->index, mbps(size, t1 - t0),
	       mbps(size, t2 - t1));
	return 0;
}

int cmd_memtest(struct ctx *x, uint64_t size, bool json)
{
	struct progress pr = {.on = !json && isatty(STDERR_FILENO) && isatty(STDOUT_FILENO)};
	struct vcxl_client_region ri;
	uint64_t *p, *chunk = NULL;
	int64_t t0, t1, t2, t3;
	int rc;

	if (need_cxl(x))
		return 1;
	rc = vcxl_client_region_info(x->c, x->info.cxl.region_index, &ri);
	if (rc)
		return fail("REGION_INFO %u: %s", x->info.cxl.region_index, strerror(-rc));
	if (!size)
		size = ri.size < MEMTEST_DEFAULT_SIZE ? ri.size : MEMTEST_DEFAULT_SIZE;
	size &= ~7ull;
	if (size > ri.size || !size) {
		if (ri.fd >= 0)
			close(ri.fd);
		return fail("--size 0x%llx: the CXL region is 0x%llx bytes",
			    (unsigned long long)size, (unsigned long long)ri.size);
	}
	if (ri.fd < 0 || !(ri.flags & VFIO_REGION_INFO_FLAG_MMAP)) {
		if (ri.fd >= 0)
			close(ri.fd);
		return memtest_msgs(x, &ri, size, json);
	}
	p = mmap(NULL, size, PROT_READ | PROT_WRITE, MAP_SHARED, ri.fd, (off_t)ri.offset);
	close(ri.fd);
	if (p == MAP_FAILED)
		return fail("mmap of the CXL region: %s", strerror(errno));
	pr.total = size;

	/* pass 1: write through the mapping, 1 MiB at a time */
	progress_start(&pr, 1, "mmap write");
	t0 = now_ns();
	for (uint64_t off = 0; off < size; off += MEMTEST_CHUNK) {
		uint64_t end = size - off < MEMTEST_CHUNK ? size : off + MEMTEST_CHUNK;

		for (uint64_t i = off / 8; i < end / 8; i++)
			p[i] = pattern(i * 8);
		progress(&pr, end, end == size);
	}
	t1 = now_ns();
	/* pass 2: verify through the mapping */
	progress_start(&pr, 2, "mmap verify");
	for (uint64_t off = 0; off < size; off += MEMTEST_CHUNK) {
		uint64_t end = size - off < MEMTEST_CHUNK ? size : off + MEMTEST_CHUNK;

		for (uint64_t i = off / 8; i < end / 8; i++)
			if (p[i] != pattern(i * 8))
				return memtest_fail(&pr, p, size, NULL, "the mapping", i * 8, 0);
		progress(&pr, end, end == size);
	}
	t2 = now_ns();
	/* pass 3: verify through REGION_READ messages */
	chunk = malloc(MEMTEST_CHUNK);
	if (!chunk) {
		progress_end(&pr);
		munmap(p, size);
		return fail("out of memory");
	}
	progress_start(&pr, 3, "REGION_READ verify");
	for (uint64_t off = 0; off < size; off += MEMTEST_CHUNK) {
		size_t n = size - off < MEMTEST_CHUNK ? (size_t)(size - off) : MEMTEST_CHUNK;

		rc = vcxl_client_region_read(x->c, ri.index, off, chunk, n);
		if (rc)
			return memtest_fail(&pr, p, size, chunk, "REGION_READ", off, rc);
		for (size_t i = 0; i < n / 8; i++)
			if (chunk[i] != pattern(off + i * 8))
				return memtest_fail(&pr, p, size, chunk, "REGION_READ", off + i * 8,
						    0);
		progress(&pr, off + n, off + n == size);
	}
	t3 = now_ns();
	progress_end(&pr);
	free(chunk);
	munmap(p, size);
	if (json) {
		struct json_object *j = json_object_new_object();

		json_object_object_add(j, "region", json_object_new_int((int)ri.index));
		json_object_object_add(j, "size", json_object_new_int64((int64_t)size));
		json_object_object_add(j, "ok", json_object_new_boolean(true));
		json_object_object_add(j, "mmap_write_mbps",
				       json_object_new_int64((int64_t)mbps(size, t1 - t0)));
		json_object_object_add(j, "mmap_verify_mbps",
				       json_object_new_int64((int64_t)mbps(size, t2 - t1)));
		json_object_object_add(j, "region_read_verify_mbps",
				       json_object_new_int64((int64_t)mbps(size, t3 - t2)));
		printf("%s\n", json_object_to_json_string_ext(j, JSON_C_TO_STRING_PRETTY));
		json_object_put(j);
		return 0;
	}
	printf("memtest: %llu MiB of region %u OK; mmap write %.0f MB/s, mmap verify %.0f MB/s, "
	       "REGION_READ verify %.0f MB/s\n",
	       (unsigned long long)(size >> 20), ri.index, mbps(size, t1 - t0), mbps(size, t2 - t1),
	       mbps(size, t3 - t2));
	return 0;
}
