// SPDX-License-Identifier: BSD-3-Clause
/* The DMA map table: bounds, overlap, exact unmap, mmap protection, count limit. */
#include <errno.h>
#include <fcntl.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "server/server.h"
#include "tap.h"

#define RW (VFIO_USER_F_DMA_REGION_READ | VFIO_USER_F_DMA_REGION_WRITE)

static int memfd(size_t size)
{
	int fd = memfd_create("dma-test", MFD_CLOEXEC);

	if (fd >= 0 && ftruncate(fd, (off_t)size) < 0) {
		close(fd);
		return -1;
	}
	return fd;
}

static int fd_is_open(int fd)
{
	return fcntl(fd, F_GETFD) >= 0;
}

int main(void)
{
	struct vcxl_dma_table t;
	const struct vcxl_dma_map *m;
	int fd, fd2;

	vcxl_dma_init(&t, 4, 4096);
	is(vcxl_dma_add(&t, 0x10000, 0x4000, RW, -1, 0), 0, "map without fd");
	is(vcxl_dma_add(&t, 0x20000, 0x1000, RW, -1, 0), 0, "second map");
	is(vcxl_dma_add(&t, 0x13000, 0x1000, RW, -1, 0), -EEXIST, "overlap at the tail: EEXIST");
	is(vcxl_dma_add(&t, 0xf000, 0x2000, RW, -1, 0), -EEXIST, "overlap at the head: EEXIST");
	is(vcxl_dma_add(&t, 0x0, 0x100000, RW, -1, 0), -EEXIST, "covering overlap: EEXIST");
	is(vcxl_dma_add(&t, 0x14000, 0x1000, RW, -1, 0), 0, "adjacent map is fine");
	is(vcxl_dma_add(&t, 0x30800, 0x1000, RW, -1, 0), -EINVAL, "unaligned iova: EINVAL");
	is(vcxl_dma_add(&t, 0x30000, 0x800, RW, -1, 0), -EINVAL, "unaligned size: EINVAL");
	is(vcxl_dma_add(&t, 0x30000, 0, RW, -1, 0), -EINVAL, "size 0: EINVAL");
	is(vcxl_dma_add(&t, 0xfffffffffffff000ull, 0x2000, RW, -1, 0), -EINVAL, "wrap: EINVAL");
	is(vcxl_dma_add(&t, 0xfffffffffffff000ull, 0x1000, RW, -1, 0), -EINVAL,
	   "range ending at 2^64: EINVAL");
	is(vcxl_dma_add(&t, 0xffff0000ull, 0x1000, RW, -1, 0), 0, "fourth map");
	is(vcxl_dma_add(&t, 0x40000, 0x1000, RW, -1, 0), -ENOSPC, "count limit: ENOSPC");
	is(vcxl_dma_add(&t, 0x40000, 0x1000, 0x10, -1, 0), -EINVAL, "unknown flag: EINVAL");
	is(t.n, 4, "four maps");
	for (unsigned i = 1; i < t.n; i++)
		ok(t.maps[i - 1].iova + t.maps[i - 1].size <= t.maps[i].iova, "sorted %u", i);
	m = vcxl_dma_find(&t, 0x13fff);
	ok(m && m->iova == 0x10000, "find inside the first map");
	ok(vcxl_dma_find(&t, 0x15000) == NULL, "find in a hole");
	ok(vcxl_dma_find(&t, 0xffff0fffull) != NULL, "find the last byte of a map");
	ok(vcxl_dma_find(&t, 0xffff1000ull) == NULL, "one past the end");
	is(vcxl_dma_remove(&t, 0x10000, 0x1000), -ENOENT, "inexact size: ENOENT");
	is(vcxl_dma_remove(&t, 0x11000, 0x3000), -ENOENT, "inexact start: ENOENT");
	is(vcxl_dma_remove(&t, 0x10000, 0x4000), 0, "exact remove");
	ok(vcxl_dma_find(&t, 0x10000) == NULL, "gone");
	/* type1-style range unmap, as QEMU's client uses it */
	unsigned removed = 99, before = t.n;
	is(vcxl_dma_remove_range(&t, 0x80000000ull, 0x1000, &removed), 0,
	   "range with nothing mapped: success");
	is(removed, 0, "... nothing removed");
	is(t.n, before, "... table unchanged");
	is(vcxl_dma_remove_range(&t, t.maps[0].iova, t.maps[0].size / 2, &removed), -EINVAL,
	   "range splitting a mapping: EINVAL");
	is(t.n, before, "... nothing removed");
	is(vcxl_dma_remove_range(&t, 0, 0, &removed), -EINVAL, "size 0: EINVAL");
	is(vcxl_dma_remove_range(&t, ~0ull - 0xfff, 0x2000, &removed), -EINVAL, "overflow: EINVAL");
	is(vcxl_dma_remove_range(&t, 0, ~0ull, &removed), 0, "a range covering everything");
	is(removed, before, "... removes every mapping");
	is(t.n, 0, "... table empty");
	vcxl_dma_remove_all(&t);
	is(t.n, 0, "remove all");

	/* fd-backed maps: mmap with the protection of the flags, fd owned */
	vcxl_dma_init(&t, 0, 0);
	fd = memfd(0x8000);
	ok(fd >= 0, "memfd");
	is(vcxl_dma_add(&t, 0x100000, 0x4000, RW, fd, 0x2000), 0, "map memfd at offset 0x2000");
	m = vcxl_dma_find(&t, 0x100000);
	ok(m && m->ptr, "mapped");
	if (m && m->ptr) {
		char b[4] = {0};

		memcpy(m->ptr, "abc", 4);
		ok(pread(fd, b, 4, 0x2000) == 4 && !strcmp(b, "abc"), "write lands at the offset");
	}
	fd2 = memfd(0x1000);
	is(vcxl_dma_add(&t, 0x100000, 0x1000, RW, fd2, 0), -EEXIST, "overlap with fd: EEXIST");
	ok(!fd_is_open(fd2), "fd closed on failure");
	fd2 = memfd(0x1000);
	is(vcxl_dma_add(&t, 0x200000, 0x1000, VFIO_USER_F_DMA_REGION_READ, fd2, 0), 0,
	   "read-only map");
	m = vcxl_dma_find(&t, 0x200000);
	ok(m && m->ptr && m->flags == VFIO_USER_F_DMA_REGION_READ, "read-only map has a pointer");
	fd2 = memfd(0x1000);
	is(vcxl_dma_add(&t, 0x300000, 0x1000, RW, fd2, UINT64_MAX - 0x10), -EINVAL,
	   "fd offset overflow: EINVAL");
	is(vcxl_dma_add(&t, 0x300000, 0x1000, RW, 9999, 0), -EBADF, "bad fd: EBADF");
	is(vcxl_dma_remove(&t, 0x100000, 0x4000), 0, "remove fd map");
	ok(!fd_is_open(fd), "fd closed on remove");
	vcxl_dma_remove_all(&t);
	return done();
}
