// SPDX-License-Identifier: BSD-3-Clause
/*
 * The model's device memory (DPA space) as memory objects a client may hold.
 *
 * Device memory is one flat host mapping (m->mem: the job engine, the tests
 * and the Type-3 personality address it by DPA) stitched together from
 * extents, each a range of some file mapped MAP_FIXED at its DPA. At first
 * one extent covers everything (a memfd, or the --backing file). When the
 * host maps an HPA range (hpa_map, i.e. when it creates a region), that DPA
 * range is carved out into a memfd of its own and of exactly its size, sealed
 * against shrinking and growing (F_SEAL_SHRINK | F_SEAL_GROW | F_SEAL_SEAL):
 * that memfd is the only fd a client ever gets, so device memory outside the
 * region is unreachable through it, and no client can truncate memory the
 * server touches. Data already in the range moves along (only the pages that
 * hold data: holes stay holes). A file-backed device (--backing) is never
 * carved: the file holds all device memory, so its fd is not for clients
 * (model_fd_unshareable says why).
 *
 * A new tenant (--on-disconnect reset) gets a fresh region object
 * (model_devmem_renew): the departed client may keep its mapping of the old
 * one, which is then detached from the device, so it neither sees the next
 * guest's data nor writes into it, and the scrub costs no memset.
 */
#include <errno.h>
#include <fcntl.h>
#include <linux/falloc.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "accel.h"
#include "../common/sigbus_guard.h"

#define DEVMEM_SEALS (F_SEAL_SHRINK | F_SEAL_GROW | F_SEAL_SEAL)

static int ext_push(struct model_devmem *dm, const struct model_ext *e)
{
	if (dm->n == dm->cap) {
		unsigned cap = dm->cap ? 2 * dm->cap : 4;
		struct model_ext *p = realloc(dm->ext, sizeof(*p) * cap);
		if (!p)
			return -ENOMEM;
		dm->ext = p;
		dm->cap = cap;
	}
	dm->ext[dm->n++] = *e;
	return 0;
}

static void ext_sort(struct model_devmem *dm)
{
	for (unsigned i = 1; i < dm->n; i++)
		for (unsigned k = i; k > 0 && dm->ext[k - 1].dpa > dm->ext[k].dpa; k--) {
			struct model_ext t = dm->ext[k];
			dm->ext[k] = dm->ext[k - 1];
			dm->ext[k - 1] = t;
		}
}

int model_devmem_open(struct vcxl_model *m)
{
	struct model_devmem *dm = &m->dm;
	struct stat st;
	int fd;

	if (m->cfg.backing)
		fd = open(m->cfg.backing, O_RDWR | O_CREAT | O_CLOEXEC, 0600);
	else
		fd = memfd_create("vcxl-devmem", MFD_CLOEXEC);
	if (fd < 0)
		return -errno;
	m->mem_fd = fd;
	if (fstat(fd, &st))
		return -errno;
	if ((uint64_t)st.st_size < m->mem_size && ftruncate(fd, (off_t)m->mem_size))
		return -errno;
	/* no page is touched here */
	void *p = mmap(NULL, m->mem_size, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	if (p == MAP_FAILED)
		return -errno;
	m->mem = p;
	struct model_ext e = {.dpa = 0, .size = m->mem_size, .fd_off = 0, .fd = dup(fd)};
	if (e.fd < 0)
		return -errno;
	int rc = ext_push(dm, &e);
	if (rc)
		close(e.fd);
	return rc;
}

void model_devmem_close(struct vcxl_model *m)
{
	struct model_devmem *dm = &m->dm;

	if (m->mem)
		munmap(m->mem, m->mem_size);
	m->mem = NULL;
	for (unsigned i = 0; i < dm->n; i++)
		close(dm->ext[i].fd);
	free(dm->ext);
	memset(dm, 0, sizeof(*dm));
	if (m->mem_fd >= 0)
		close(m->mem_fd);
	m->mem_fd = -1;
}

/* Copy what device memory holds in [dpa, dpa + size) to fd at offset 0: only
 * the data extents of the files behind it (SEEK_DATA), so holes stay holes and
 * no page is allocated for them. */
static int copy_data(struct vcxl_model *m, uint64_t dpa, uint64_t size, int fd)
{
	const struct model_devmem *dm = &m->dm;
	uint64_t end = dpa + size;

	for (unsigned i = 0; i < dm->n; i++) {
		const struct model_ext *e = &dm->ext[i];
		uint64_t lo = e->dpa > dpa ? e->dpa : dpa;
		uint64_t hi = e->dpa + e->size < end ? e->dpa + e->size : end;
		if (lo >= hi)
			continue;
		off_t at = (off_t)(e->fd_off + (lo - e->dpa)),
		      stop = (off_t)(e->fd_off + (hi - e->dpa));
		while (at < stop) {
			off_t d = lseek(e->fd, at, SEEK_DATA);
			if (d < 0 || d >= stop)
				break; /* ENXIO: no data after at */
			off_t h = lseek(e->fd, d, SEEK_HOLE);
			if (h < 0 || h > stop)
				h = stop;
			uint64_t from = e->dpa + ((uint64_t)d - e->fd_off);
			size_t len = (size_t)(h - d);
			const uint8_t *src = m->mem + from;
			off_t dst = (off_t)(from - dpa);
			while (len) {
				ssize_t n = pwrite(fd, src, len, dst);
				if (n < 0 && errno == EINTR)
					continue;
				if (n <= 0)
					return n < 0 ? -errno : -EIO;
				src += n;
				dst += n;
				len -= (size_t)n;
			}
			at = h;
		}
	}
	return 0;
}

/* A new memfd of exactly size bytes (zeroed), sealed against shrinking and
 * growing and against further seals: what may go to a client. fd or -errno. */
int model_memfd_sealed(const char *name, uint64_t size)
{
	int fd = memfd_create(name, MFD_CLOEXEC | MFD_ALLOW_SEALING), rc;

	if (fd < 0)
		return -errno;
	if (ftruncate(fd, (off_t)size) || fcntl(fd, F_ADD_SEALS, DEVMEM_SEALS)) {
		rc = -errno;
		close(fd);
		return rc;
	}
	return fd;
}

/*
 * A new tenant's memory object: a fresh sealed memfd (zeroed, no page
 * allocated) mapped MAP_FIXED over [at, at + size) in place of the object *fd,
 * which is closed. Whatever a client still maps of the old object is
 * detached from the device: the model neither maps nor holds it (the vdev
 * empties it, release.h). O(1) in the size. On error *fd
 * stays in use, mapped at at.
 */
int model_memfd_swap(const char *name, void *at, uint64_t size, int *fd)
{
	int nfd = model_memfd_sealed(name, size), rc;

	if (nfd < 0)
		return nfd;
	if (mmap(at, size, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_FIXED, nfd, 0) == MAP_FAILED) {
		rc = -errno;
		/* a failed MAP_FIXED may have unmapped the range: the old object back */
		(void)mmap(at, size, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_FIXED, *fd, 0);
		close(nfd);
		return rc;
	}
	close(*fd);
	*fd = nfd;
	return 0;
}

/* A new memfd of size bytes holding device memory [dpa, dpa + size). */
static int new_object(struct vcxl_model *m, uint64_t dpa, uint64_t size, bool sealed)
{
	int fd = sealed ? model_memfd_sealed("vcxl-region", size)
			: memfd_create("vcxl-devmem", MFD_CLOEXEC);
	int rc;

	if (fd < 0)
		return sealed ? fd : -errno;
	if (!sealed && ftruncate(fd, (off_t)size)) {
		rc = -errno;
		goto fail;
	}
	if ((rc = copy_data(m, dpa, size, fd)))
		goto fail;
	return fd;
fail:
	close(fd);
	return rc;
}

static void punch(int fd, uint64_t off, uint64_t len)
{
	/* best effort: frees the pages; the data was copied before */
	(void)fallocate(fd, FALLOC_FL_PUNCH_HOLE | FALLOC_FL_KEEP_SIZE, (off_t)off, (off_t)len);
}

/*
 * Make device memory [dpa, dpa + size) one sealed memfd of exactly that size
 * and return it (owned by the model). Extents it cuts keep their file where
 * only the model holds it; a part of an extent a client may hold (an earlier
 * region) moves to a new private memfd, and the old object is emptied, so
 * nothing outside the new range stays reachable through it.
 */
int model_devmem_carve(struct vcxl_model *m, uint64_t dpa, uint64_t size, int *fd)
{
	struct model_devmem *dm = &m->dm;
	struct model_devmem next = {0};
	uint64_t end = dpa + size;
	int rc, nfd;

	if (!m->mem || !size || end < dpa || end > m->mem_size)
		return -EINVAL;
	for (unsigned i = 0; i < dm->n; i++)
		if (dm->ext[i].shared && dm->ext[i].dpa == dpa && dm->ext[i].size == size) {
			*fd = dm->ext[i].fd;
			return 0;
		}
	nfd = new_object(m, dpa, size, true);
	if (nfd < 0)
		return nfd;
	/* the new extent list: untouched extents, the remainders of cut ones,
	 * and the region; nothing is mapped or released until all are made */
	struct model_ext region = {.dpa = dpa, .size = size, .fd = nfd, .shared = true};
	if ((rc = ext_push(&next, &region)))
		goto fail;
	for (unsigned i = 0; i < dm->n; i++) {
		const struct model_ext *e = &dm->ext[i];
		uint64_t eend = e->dpa + e->size;
		if (eend <= dpa || e->dpa >= end) {
			struct model_ext k = *e;
			if ((k.fd = dup(e->fd)) < 0 || (rc = ext_push(&next, &k))) {
				rc = k.fd < 0 ? -errno : rc;
				if (k.fd >= 0)
					close(k.fd);
				goto fail;
			}
			continue;
		}
		struct model_ext part[2] = {
		    {.dpa = e->dpa, .size = e->dpa < dpa ? dpa - e->dpa : 0},
		    {.dpa = end, .size = eend > end ? eend - end : 0},
		};
		for (unsigned p = 0; p < 2; p++) {
			struct model_ext *k = &part[p];
			if (!k->size)
				continue;
			if (e->shared) {
				k->fd = new_object(m, k->dpa, k->size, false);
				k->remap = true;
				rc = k->fd < 0 ? k->fd : 0;
			} else {
				k->fd_off = e->fd_off + (k->dpa - e->dpa);
				k->fd = dup(e->fd);
				rc = k->fd < 0 ? -errno : 0;
			}
			if (rc || (rc = ext_push(&next, k))) {
				if (k->fd >= 0)
					close(k->fd);
				goto fail;
			}
		}
	}
	/* the point of no return: map the new objects over their DPA */
	for (unsigned i = 0; i < next.n; i++) {
		struct model_ext *k = &next.ext[i];
		if (k->fd != nfd && !k->remap)
			continue;
		void *p = mmap(m->mem + k->dpa, k->size, PROT_READ | PROT_WRITE,
			       MAP_SHARED | MAP_FIXED, k->fd, (off_t)k->fd_off);
		/* the region is mapped first: if that fails nothing changed yet */
		if (p == MAP_FAILED && k->fd == nfd) {
			rc = -errno;
			goto fail;
		}
		k->remap = false;
	}
	/* empty what the old extents held in the carved range (and all of an old
	 * region object, which a client may still hold), then drop them */
	for (unsigned i = 0; i < dm->n; i++) {
		const struct model_ext *e = &dm->ext[i];
		uint64_t eend = e->dpa + e->size;
		if (eend <= dpa || e->dpa >= end) {
			close(e->fd);
			continue;
		}
		if (e->shared) {
			punch(e->fd, 0, e->size);
		} else {
			uint64_t lo = e->dpa > dpa ? e->dpa : dpa, hi = eend < end ? eend : end;
			punch(e->fd, e->fd_off + (lo - e->dpa), hi - lo);
		}
		close(e->fd);
	}
	free(dm->ext);
	*dm = next;
	ext_sort(dm);
	*fd = nfd;
	return 0;
fail:
	for (unsigned i = 0; i < next.n; i++)
		if (next.ext[i].fd != nfd)
			close(next.ext[i].fd);
	free(next.ext);
	close(nfd);
	return rc;
}

/* A new tenant: the region object of exactly [dpa, dpa + size) (a carve made
 * it) replaced by a fresh, zeroed one (model_memfd_swap); -ENOENT if there is
 * no such object (a --backing device is never carved). */
int model_devmem_renew(struct vcxl_model *m, uint64_t dpa, uint64_t size, int *fd)
{
	struct model_devmem *dm = &m->dm;

	for (unsigned i = 0; i < dm->n; i++) {
		struct model_ext *e = &dm->ext[i];
		if (!e->shared || e->dpa != dpa || e->size != size)
			continue;
		int rc = model_memfd_swap("vcxl-region", m->mem + dpa, size, &e->fd);
		if (!rc)
			*fd = e->fd;
		return rc;
	}
	return -ENOENT;
}

/* CXL reset with Mem Clr Enable: punch every extent (reads back 0, frees pages). */
void model_devmem_clear(struct vcxl_model *m)
{
	const struct model_devmem *dm = &m->dm;
	bool all = true;

	for (unsigned i = 0; i < dm->n; i++)
		if (fallocate(dm->ext[i].fd, FALLOC_FL_PUNCH_HOLE | FALLOC_FL_KEEP_SIZE,
			      (off_t)dm->ext[i].fd_off, (off_t)dm->ext[i].size))
			all = false;
	if (!all && m->mem)
		vcxl_guarded_memset(m->mem, 0, m->mem_size);
}

/* Why fd must not go to a client, or NULL if it may (see backend.h). */
const char *model_fd_unshareable(const struct vcxl_model *m, int fd)
{
	if (fd < 0)
		return "no fd";
	if (fd == m->bar0_fd)
		return NULL;
	if (fd == m->mem_fd)
		return m->cfg.backing
			   ? "the --backing file holds all device memory, not only the region"
			   : "the fd holds all device memory, not only the region";
	for (unsigned i = 0; i < m->dm.n; i++)
		if (m->dm.ext[i].fd == fd)
			return m->dm.ext[i].shared
				   ? NULL
				   : (m->cfg.backing ? "the --backing file holds all device "
						       "memory, not only the region"
						     : "the fd holds device memory outside the "
						       "region");
	return "not an fd of this device";
}
