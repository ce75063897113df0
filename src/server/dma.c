// SPDX-License-Identifier: BSD-3-Clause
/*
 * The DMA map table: the client's memory windows (vfio-user DMA_MAP), sorted
 * by IOVA and non-overlapping, each mmapped from its fd when it has one.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdbool.h>
#include <stdio.h>
#include <sys/stat.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "server/server.h"
#include "../common/sigbus_guard.h"

void vcxl_dma_init(struct vcxl_dma_table *t, unsigned max_maps, uint64_t pgsize)
{
	memset(t, 0, sizeof(*t));
	t->max = max_maps ? max_maps : VCXL_SRV_MAX_DMA_MAPS;
	t->pgsize = pgsize ? pgsize : VCXL_SRV_PGSIZE;
}

void vcxl_dma_set_budget(struct vcxl_dma_table *t, uint64_t max_mapped, unsigned max_fds)
{
	t->budget.max_mapped = max_mapped;
	t->budget.max_fds = max_fds;
}

/* Index of the first mapping whose end is above iova (binary search). */
static unsigned dma_lower_bound(const struct vcxl_dma_table *t, uint64_t iova)
{
	unsigned lo = 0, hi = t->n;

	while (lo < hi) {
		unsigned mid = lo + (hi - lo) / 2;
		const struct vcxl_dma_map *m = &t->maps[mid];

		if (m->iova + m->size <= iova)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo;
}

struct vcxl_dma_map *vcxl_dma_lookup(struct vcxl_dma_table *t, uint64_t iova)
{
	return (struct vcxl_dma_map *)vcxl_dma_find(t, iova);
}

const struct vcxl_dma_map *vcxl_dma_find(const struct vcxl_dma_table *t, uint64_t iova)
{
	unsigned i = dma_lower_bound(t, iova);

	if (i < t->n && t->maps[i].iova <= iova)
		return &t->maps[i];
	return NULL;
}

static void dma_map_release(struct vcxl_dma_table *t, struct vcxl_dma_map *m)
{
	if (t->on_release)
		t->on_release(t->release_opaque, m);
	if (m->map_base) {
		munmap(m->map_base, m->map_len);
		t->budget.mapped -= m->map_len;
	}
	if (m->fd >= 0) {
		close(m->fd);
		t->budget.fds--;
	}
	m->map_base = NULL;
	m->ptr = NULL;
	m->fd = -1;
}

/* vfio-user spec "DMA_MAP": the IOVA range and the fd range must be valid. */
static int dma_check_args(const struct vcxl_dma_table *t, uint64_t iova, uint64_t size,
			  uint32_t flags, int fd, uint64_t offset)
{
	uint64_t mask = t->pgsize - 1;
	uint32_t rw = VFIO_USER_F_DMA_REGION_READ | VFIO_USER_F_DMA_REGION_WRITE;

	if (flags & ~(rw | VFIO_USER_F_DMA_REGION_LIBVFU_EXT))
		return -EINVAL;
	if (!(flags & rw))
		return -EINVAL;
	if (!size || ((iova | size) & mask))
		return -EINVAL;
	if (iova + size <= iova) /* the end must be representable */
		return -EINVAL;
	if (fd >= 0 && (offset + size < offset || offset > (uint64_t)INT64_MAX - size))
		return -EINVAL;
	return 0;
}

/* Client memory can vanish under a mapping (a client may truncate the file it
 * passed): copies to and from it are SIGBUS-guarded (src/common/sigbus_guard.h). */
struct dma_copy {
	void *dst;
	const void *src;
	size_t len;
};

static void dma_copy_fn(void *arg)
{
	struct dma_copy *c = arg;

	memcpy(c->dst, c->src, c->len);
}

int vcxl_dma_copy(void *dst, const void *src, size_t len)
{
	struct dma_copy c = {dst, src, len};

	return vcxl_sigbus_guarded(dma_copy_fn, &c);
}

/* Memory the loop may touch without waiting on anybody: shared memory
 * (memfd, tmpfs, hugetlbfs: the kernel's own pages; they alone answer
 * F_GET_SEALS) or device-DAX (a device's memory). A file on any other
 * filesystem may be served by the client itself (FUSE, NFS): a copy from it,
 * and even its fstat/fstatfs, would hold the loop until the client answers
 * (docs/security.md). Nothing here asks the file's filesystem before it is
 * known to be one of these. */
static bool dma_fd_never_blocks(int fd)
{
	char path[64], link[32];
	struct stat st;
	ssize_t n;

	if (fcntl(fd, F_GET_SEALS) >= 0)
		return true;
	snprintf(path, sizeof(path), "/proc/self/fd/%d", fd);
	n = readlink(path, link, sizeof(link) - 1);
	if (n <= 0)
		return false;
	link[n] = 0;
	return !strncmp(link, "/dev/dax", 8) && !fstat(fd, &st) && S_ISCHR(st.st_mode);
}

/* The window's fd must be memory that never blocks, and a file must cover
 * the whole window, or the mapping would fault at once. */
static int dma_fd_check(int fd, uint64_t offset, uint64_t size)
{
	struct stat st;

	if (fcntl(fd, F_GETFD) < 0)
		return -errno; /* not an fd at all */
	if (!dma_fd_never_blocks(fd))
		return -ENODEV; /* as mmap(2) says of a file it cannot map */
	if (fstat(fd, &st) < 0)
		return -errno;
	if (!S_ISREG(st.st_mode))
		return 0;
	if ((uint64_t)st.st_size < offset || (uint64_t)st.st_size - offset < size)
		return -EINVAL;
	return 0;
}

/* What one more window costs against the client's budget: -EMFILE when its
 * fd is one too many, -EDQUOT when its len bytes of address space are. */
static int dma_budget_check(const struct vcxl_dma_budget *b, uint64_t len)
{
	if (b->max_fds && b->fds >= b->max_fds)
		return -EMFILE;
	if (b->max_mapped && (len > b->max_mapped || b->mapped > b->max_mapped - len))
		return -EDQUOT;
	return 0;
}

/* mmap the fd range with the protection the flags grant, within the budget. */
static int dma_mmap(struct vcxl_dma_budget *b, struct vcxl_dma_map *m)
{
	int prot = 0;
	uint64_t page = (uint64_t)sysconf(_SC_PAGESIZE);
	uint64_t aligned = m->offset & ~(page - 1);
	uint64_t skew = m->offset - aligned;
	void *p;

	if (m->flags & VFIO_USER_F_DMA_REGION_READ)
		prot |= PROT_READ;
	if (m->flags & VFIO_USER_F_DMA_REGION_WRITE)
		prot |= PROT_WRITE;
	if (m->size + skew > SIZE_MAX)
		return -EINVAL;
	int rc = dma_budget_check(b, m->size + skew);
	if (!rc)
		rc = dma_fd_check(m->fd, m->offset, m->size);
	if (rc)
		return rc;
	p = mmap(NULL, m->size + skew, prot, MAP_SHARED, m->fd, (off_t)aligned);
	if (p == MAP_FAILED)
		return -errno;
	m->map_base = p;
	m->map_len = m->size + skew;
	m->ptr = (uint8_t *)p + skew;
	b->mapped += m->map_len;
	b->fds++;
	return 0;
}

int vcxl_dma_add(struct vcxl_dma_table *t, uint64_t iova, uint64_t size, uint32_t flags, int fd,
		 uint64_t offset)
{
	struct vcxl_dma_map m = {
	    .iova = iova, .size = size, .flags = flags, .fd = fd, .offset = offset};
	unsigned i;
	int rc;

	rc = dma_check_args(t, iova, size, flags, fd, offset);
	if (rc)
		goto fail;
	i = dma_lower_bound(t, iova);
	if (i < t->n && t->maps[i].iova < iova + size) {
		rc = -EEXIST;
		goto fail;
	}
	if (t->n >= t->max) {
		rc = -ENOSPC;
		goto fail;
	}
	if (t->n == t->cap) {
		unsigned ncap = t->cap ? t->cap * 2 : 16;
		struct vcxl_dma_map *n;

		if (ncap > t->max)
			ncap = t->max;
		n = realloc(t->maps, ncap * sizeof(*n));
		if (!n) {
			rc = -ENOMEM;
			goto fail;
		}
		t->maps = n;
		t->cap = ncap;
	}
	if (fd >= 0) {
		rc = dma_mmap(&t->budget, &m);
		if (rc)
			goto fail;
	}
	memmove(&t->maps[i + 1], &t->maps[i], (t->n - i) * sizeof(*t->maps));
	t->maps[i] = m;
	t->n++;
	return 0;
fail:
	if (fd >= 0)
		close(fd);
	return rc;
}

int vcxl_dma_remove(struct vcxl_dma_table *t, uint64_t iova, uint64_t size)
{
	unsigned i = dma_lower_bound(t, iova);

	if (i >= t->n || t->maps[i].iova != iova || t->maps[i].size != size)
		return -ENOENT;
	dma_map_release(t, &t->maps[i]);
	memmove(&t->maps[i], &t->maps[i + 1], (t->n - i - 1) * sizeof(*t->maps));
	t->n--;
	return 0;
}

/*
 * VFIO type1 semantics (VFIO_IOMMU_UNMAP_DMA), which QEMU's client relies on
 * (with a vIOMMU it unmaps ranges it never mapped): drop every mapping that
 * lies inside [iova, iova+size); a mapping only partly inside refuses the
 * whole request (-EINVAL, nothing dropped); none inside is a success.
 */
int vcxl_dma_remove_range(struct vcxl_dma_table *t, uint64_t iova, uint64_t size, unsigned *removed)
{
	unsigned first = dma_lower_bound(t, iova), last = first;

	*removed = 0;
	if (size == 0 || iova + size < iova)
		return -EINVAL;
	while (last < t->n && t->maps[last].iova < iova + size) {
		const struct vcxl_dma_map *m = &t->maps[last];
		if (m->iova < iova || m->iova + m->size > iova + size)
			return -EINVAL;
		last++;
	}
	if (first == last) /* nothing inside: a success (t->maps may be NULL) */
		return 0;
	for (unsigned i = first; i < last; i++)
		dma_map_release(t, &t->maps[i]);
	memmove(&t->maps[first], &t->maps[last], (t->n - last) * sizeof(*t->maps));
	t->n -= last - first;
	*removed = last - first;
	return 0;
}

void vcxl_dma_remove_all(struct vcxl_dma_table *t)
{
	for (unsigned i = 0; i < t->n; i++)
		dma_map_release(t, &t->maps[i]);
	free(t->maps);
	t->maps = NULL;
	t->n = t->cap = 0;
}
