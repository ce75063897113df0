// SPDX-License-Identifier: BSD-3-Clause
/*
 * The VFIO backend's operations. Everything but IRQ routing, DMA mapping and
 * function reset is plain pread/pwrite/mmap on file descriptors, so it runs
 * (and is tested) on ordinary files laid out like a VFIO device.
 *
 * Config space: 0x000-0x0ff through the VFIO config region (vfio-pci's
 * virtualised view: BARs, Command, MSI/MSI-X are its business); 0x100-0xfff
 * through the raw sysfs config file, because vfio-pci hides the CXL DVSECs
 * and DOE there. Writes into extended space are allowed only inside a CXL
 * DVSEC or a DOE capability (the host core drives those; the vfio-cxl core
 * never forwards guest DVSEC writes); anything else there is -EPERM.
 */
#include <errno.h>
#include <fcntl.h>
#include <linux/pci_regs.h>
#include <linux/vfio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <unistd.h>

#include "iommufd_uapi.h"
#include "../common/sigbus_guard.h"
#include "vfio_priv.h"
#include "cxl/cxl_regs.h"

static uint64_t ones(unsigned len)
{
	return len >= 8 ? ~0ull : (1ull << (8 * len)) - 1;
}

static bool len_ok(unsigned len)
{
	return len == 1 || len == 2 || len == 4 || len == 8;
}

/* A little-endian access of len (1/2/4) bytes at off of fd. */
static int fd_read(int fd, uint64_t off, unsigned len, uint64_t *val)
{
	uint8_t b[4];
	ssize_t n;

	do
		n = pread(fd, b, len, (off_t)off);
	while (n < 0 && errno == EINTR);
	if (n != (ssize_t)len) {
		*val = ones(len);
		return n < 0 ? (errno == ENODEV ? -ENODEV : -EIO) : -EIO;
	}
	uint64_t v = 0;
	for (unsigned i = 0; i < len; i++)
		v |= (uint64_t)b[i] << (8 * i);
	*val = v;
	return 0;
}

static int fd_write(int fd, uint64_t off, unsigned len, uint64_t val)
{
	uint8_t b[4];
	ssize_t n;

	for (unsigned i = 0; i < len; i++)
		b[i] = (uint8_t)(val >> (8 * i));
	do
		n = pwrite(fd, b, len, (off_t)off);
	while (n < 0 && errno == EINTR);
	if (n != (ssize_t)len)
		return n < 0 ? (errno == ENODEV ? -ENODEV : -EIO) : -EIO;
	return 0;
}

/* 8-byte accesses are two dword accesses, low first (vfio-pci before 6.13
 * and sysfs config do at most 4 bytes at a time). */
static int split_read(int fd, uint64_t off, unsigned len, uint64_t *val)
{
	uint64_t lo, hi;
	int rc;

	if (len < 8)
		return fd_read(fd, off, len, val);
	rc = fd_read(fd, off, 4, &lo);
	if (!rc)
		rc = fd_read(fd, off + 4, 4, &hi);
	*val = rc ? ~0ull : lo | (hi << 32);
	return rc;
}

static int split_write(int fd, uint64_t off, unsigned len, uint64_t val)
{
	if (len < 8)
		return fd_write(fd, off, len, val);
	int rc = fd_write(fd, off, 4, (uint32_t)val);
	return rc ?: fd_write(fd, off + 4, 4, val >> 32);
}

/* ---- config space ----------------------------------------------------- */

static bool in_std(uint32_t off, unsigned len)
{
	return off + len <= PCIE_EXT_CAP_START;
}

static int cfg_check(uint32_t off, unsigned len)
{
	if (!len_ok(len) || off >= HW_CFG_SIZE || len > HW_CFG_SIZE - off)
		return -EINVAL;
	/* one access never spans standard and extended space */
	if (off < PCIE_EXT_CAP_START && !in_std(off, len))
		return -EINVAL;
	return 0;
}

static int vfio_cfg_access(struct vcxl_hw_vfio *v, uint32_t off, unsigned len, uint64_t *val,
			   bool wr)
{
	const struct vcxl_hw_region *r = &v->region[VFIO_PCI_CONFIG_REGION_INDEX];

	if ((uint64_t)off + len > r->size) {
		if (!wr)
			*val = ones(len);
		return -EINVAL;
	}
	return wr ? split_write(v->dev_fd, r->offset + off, len, *val)
		  : split_read(v->dev_fd, r->offset + off, len, val);
}

static bool ext_writable(const struct vcxl_hw_vfio *v, uint32_t off, unsigned len)
{
	for (unsigned i = 0; i < v->nwr; i++)
		if (off >= v->wr[i].off && off + len <= v->wr[i].off + v->wr[i].len)
			return true;
	return false;
}

static int h_cfg_read(void *dev, uint32_t off, unsigned len, uint64_t *val)
{
	struct vcxl_hw_vfio *v = dev;
	int rc = cfg_check(off, len);

	if (rc) {
		*val = len_ok(len) ? ones(len) : 0;
		return rc;
	}
	if (off < PCIE_EXT_CAP_START || v->cfg_fd < 0)
		return vfio_cfg_access(v, off, len, val, false);
	return split_read(v->cfg_fd, off, len, val);
}

static int h_cfg_write(void *dev, uint32_t off, unsigned len, uint64_t val)
{
	struct vcxl_hw_vfio *v = dev;
	int rc = cfg_check(off, len);

	if (rc)
		return rc;
	if (off < PCIE_EXT_CAP_START)
		return vfio_cfg_access(v, off, len, &val, true);
	if (v->cfg_fd < 0 || !ext_writable(v, off, len))
		return -EPERM;
	return split_write(v->cfg_fd, off, len, val);
}

/* PCIe r6 7.6.3 / 7.9.6 / 7.9.24: find the CXL DVSECs and DOE mailboxes in
 * the raw config space; those are the extended ranges the host core writes. */
static int scan_ext_caps(struct vcxl_hw_vfio *v)
{
	uint8_t seen[(HW_CFG_SIZE - PCIE_EXT_CAP_START) / 4] = {0};
	uint32_t off = PCIE_EXT_CAP_START;

	v->nwr = 0;
	v->dvsec = 0;
	if (v->cfg_fd < 0)
		return 0;
	while (off) {
		uint64_t hdr, h1, h2;
		if (off < PCIE_EXT_CAP_START || off > HW_CFG_SIZE - 4 || (off & 3) ||
		    seen[(off - PCIE_EXT_CAP_START) / 4]++)
			return -ELOOP;
		if (split_read(v->cfg_fd, off, 4, &hdr))
			return -EIO;
		if (hdr == 0 || hdr == 0xffffffffu)
			break;
		unsigned id = VCXL_FIELD_GET(PCIE_EXT_CAP_ID_MASK, hdr);
		struct hw_range r = {0, 0};
		if (id == PCIE_EXT_CAP_ID_DVSEC && off <= HW_CFG_SIZE - 12 &&
		    !split_read(v->cfg_fd, off + PCIE_DVSEC_HEADER1, 4, &h1) &&
		    !split_read(v->cfg_fd, off + PCIE_DVSEC_HEADER2, 2, &h2) &&
		    VCXL_FIELD_GET(PCIE_DVSEC_HDR1_VENDOR, h1) == CXL_VENDOR_ID) {
			r = (struct hw_range){off, VCXL_FIELD_GET(PCIE_DVSEC_HDR1_LEN, h1)};
			if (VCXL_FIELD_GET(PCIE_DVSEC_HDR2_ID, h2) == CXL_DVSEC_ID_DEVICE &&
			    !v->dvsec && r.len >= CXL_DVSEC_DEVICE_LEN_REV1)
				v->dvsec = off;
		} else if (id == PCIE_EXT_CAP_ID_DOE) {
			r = (struct hw_range){off, PCI_DOE_CAP_SIZE};
		}
		if (r.len && r.off + r.len <= HW_CFG_SIZE && v->nwr < HW_MAX_WR_RANGES)
			v->wr[v->nwr++] = r;
		off = VCXL_FIELD_GET(PCIE_EXT_CAP_NEXT_MASK, hdr);
	}
	return 0;
}

/* ---- BARs --------------------------------------------------------------- */

static int bar_check(struct vcxl_hw_vfio *v, unsigned bar, uint64_t off, unsigned len)
{
	if (bar >= VCXL_NUM_BARS || !len_ok(len))
		return -EINVAL;
	const struct vcxl_hw_region *r = &v->region[bar];
	if (!r->size || off >= r->size || len > r->size - off)
		return -EINVAL;
	return 0;
}

/*
 * MMIO through a mapping of the BAR is done at the access's own width. VFIO's
 * read/write path splits an 8-byte access into two 4-byte ones on kernels
 * without 64-bit vfio_pci_core_do_io_rw (6.1 has none), and a device may not
 * take that: QEMU's cxl-type3 ignores 4-byte writes to the mailbox Command
 * register. So the BAR's mmappable areas are used where they cover the access.
 */
static void bar_map_areas(struct vcxl_hw_vfio *v, unsigned bar)
{
	struct hw_bar_map *m = &v->bar_map[bar];
	const struct vcxl_hw_region *r = &v->region[bar];
	struct vcxl_bar_area whole = {0, r->size};
	const struct vcxl_bar_area *a = r->nr_sparse ? r->sparse : &whole;
	unsigned n = r->nr_sparse ? r->nr_sparse : 1;

	m->tried = true;
	if (!(r->flags & VFIO_REGION_INFO_FLAG_MMAP) || v->dev_fd < 0)
		return;
	for (unsigned i = 0; i < n && m->n < VCXL_BAR_MAX_AREAS; i++) {
		if (!a[i].size || a[i].offset + a[i].size > r->size)
			continue;
		void *p = mmap(NULL, a[i].size, PROT_READ | PROT_WRITE, MAP_SHARED, v->dev_fd,
			       (off_t)(r->offset + a[i].offset));
		if (p == MAP_FAILED)
			continue; /* that area stays on read/write */
		m->area[m->n].off = a[i].offset;
		m->area[m->n].size = a[i].size;
		m->area[m->n].p = p;
		m->n++;
	}
}

/* the mapped address of [off, off + len) if one area holds it and it is aligned */
static volatile uint8_t *bar_mapped(struct vcxl_hw_vfio *v, unsigned bar, uint64_t off,
				    unsigned len)
{
	struct hw_bar_map *m = &v->bar_map[bar];

	if (!m->tried)
		bar_map_areas(v, bar);
	if (off % len)
		return NULL;
	for (unsigned i = 0; i < m->n; i++)
		if (off >= m->area[i].off && off + len <= m->area[i].off + m->area[i].size)
			return m->area[i].p + (off - m->area[i].off);
	return NULL;
}

struct mmio {
	volatile uint8_t *p;
	unsigned len;
	uint64_t val;
};

static void mmio_read_fn(void *arg)
{
	struct mmio *a = arg;

	switch (a->len) {
	case 1:
		a->val = *a->p;
		break;
	case 2:
		a->val = *(volatile uint16_t *)a->p;
		break;
	case 4:
		a->val = *(volatile uint32_t *)a->p;
		break;
	default:
		a->val = *(volatile uint64_t *)a->p;
		break;
	}
}

static void mmio_write_fn(void *arg)
{
	struct mmio *a = arg;

	switch (a->len) {
	case 1:
		*a->p = (uint8_t)a->val;
		break;
	case 2:
		*(volatile uint16_t *)a->p = (uint16_t)a->val;
		break;
	case 4:
		*(volatile uint32_t *)a->p = (uint32_t)a->val;
		break;
	default:
		*(volatile uint64_t *)a->p = a->val;
		break;
	}
}

/* vfio-pci revokes BAR mappings (reset, memory decode off, removal): the
 * access then faults, and gets -EIO like the read/write path would */
static int mmio(volatile uint8_t *p, unsigned len, uint64_t *val, bool wr)
{
	struct mmio a = {p, len, wr ? *val : 0};
	int rc = vcxl_sigbus_guarded(wr ? mmio_write_fn : mmio_read_fn, &a);

	if (rc)
		return -EIO;
	*val = a.val;
	return 0;
}

static int h_bar_read(void *dev, unsigned bar, uint64_t off, unsigned len, uint64_t *val)
{
	struct vcxl_hw_vfio *v = dev;
	int rc = bar_check(v, bar, off, len);

	if (rc) {
		*val = len_ok(len) ? ones(len) : 0;
		return rc;
	}
	volatile uint8_t *p = bar_mapped(v, bar, off, len);
	if (p) {
		rc = mmio(p, len, val, false);
		if (rc)
			*val = ones(len);
		return rc;
	}
	return split_read(v->dev_fd, v->region[bar].offset + off, len, val);
}

static int h_bar_write(void *dev, unsigned bar, uint64_t off, unsigned len, uint64_t val)
{
	struct vcxl_hw_vfio *v = dev;
	int rc = bar_check(v, bar, off, len);

	if (rc)
		return rc;
	volatile uint8_t *p = bar_mapped(v, bar, off, len);
	if (p)
		return mmio(p, len, &val, true);
	return split_write(v->dev_fd, v->region[bar].offset + off, len, val);
}

/* Do the sparse areas cover the whole region (then one fd maps it all)? */
static bool sparse_covers(const struct vcxl_hw_region *r)
{
	uint64_t at = 0;
	bool progress = true;

	while (at < r->size && progress) {
		progress = false;
		for (unsigned i = 0; i < r->nr_sparse; i++) {
			const struct vcxl_bar_area *a = &r->sparse[i];
			if (a->offset <= at && a->offset + a->size > at) {
				at = a->offset + a->size;
				progress = true;
			}
		}
	}
	return at >= r->size;
}

static int h_bar_info(void *dev, unsigned bar, struct vcxl_bar_info *info)
{
	struct vcxl_hw_vfio *v = dev;
	uint64_t lo = 0;

	if (bar >= VCXL_NUM_BARS)
		return -EINVAL;
	*info = (struct vcxl_bar_info){.fd = -1, .area_fd = -1};
	const struct vcxl_hw_region *r = &v->region[bar];
	if (!r->size)
		return 0;
	/* PCI 3.0 6.2.5.1: the BAR's type bits, as vfio-pci shows them */
	int rc = vfio_cfg_access(v, PCI_BASE_ADDRESS_0 + 4 * bar, 4, &lo, false);
	if (rc)
		return rc;
	info->size = r->size;
	info->flags = VCXL_BAR_PRESENT;
	if (lo & PCI_BASE_ADDRESS_SPACE_IO) {
		info->flags |= VCXL_BAR_IO;
	} else {
		if ((lo & PCI_BASE_ADDRESS_MEM_TYPE_MASK) == PCI_BASE_ADDRESS_MEM_TYPE_64)
			info->flags |= VCXL_BAR_MEM64;
		if (lo & PCI_BASE_ADDRESS_MEM_PREFETCH)
			info->flags |= VCXL_BAR_PREFETCH;
	}
	if (!(r->flags & VFIO_REGION_INFO_FLAG_MMAP) || (info->flags & VCXL_BAR_IO))
		return 0;
	if (!r->sparse_overflow && (!r->nr_sparse || sparse_covers(r))) {
		info->fd = v->dev_fd;
		info->fd_offset = r->offset;
		return 0;
	}
	/* only parts can be mapped: say which (a subset when the kernel listed
	 * more than fit: never claim more than is mappable) */
	info->nr_areas = r->nr_sparse;
	info->area_fd = v->dev_fd;
	info->area_fd_offset = r->offset;
	memcpy(info->area, r->sparse, sizeof(r->sparse[0]) * r->nr_sparse);
	return 0;
}

/* ---- HPA ------------------------------------------------------------------ */

static bool range_in(uint64_t a, uint64_t as, uint64_t b, uint64_t bs)
{
	return as && a + as > a && a >= b && a - b <= bs && as <= bs - (a - b);
}

static int h_hpa_map(void *dev, uint64_t hpa, uint64_t size, int *fd, uint64_t *fd_offset)
{
	struct vcxl_hw_vfio *v = dev;

	if (!size || hpa + size < hpa)
		return -EINVAL;
	if (v->dax_fd >= 0) {
		if (!range_in(hpa, size, v->dax_base, v->dax_size))
			return -ERANGE;
		*fd = v->dax_fd;
		*fd_offset = hpa - v->dax_base;
		v->dax_map_hpa = hpa;
		v->dax_map_size = size;
		return 0;
	}
	if (v->win_set && !range_in(hpa, size, v->win_base, v->win_size))
		return -ERANGE;
	if (v->mem_fd < 0) {
		/* no O_SYNC: device memory is mapped write-back */
		v->mem_fd = open(v->devmem, O_RDWR | O_CLOEXEC);
		if (v->mem_fd < 0)
			return -errno;
	}
	/* fail here, with the kernel's reason, rather than in the client's mmap */
	long pg = sysconf(_SC_PAGESIZE);
	void *p = mmap(NULL, (size_t)pg, PROT_READ, MAP_SHARED, v->mem_fd, (off_t)hpa);
	if (p == MAP_FAILED)
		return -errno;
	munmap(p, (size_t)pg);
	*fd = v->mem_fd;
	*fd_offset = hpa;
	return 0;
}

/*
 * Isolation (backend.h fd_unshareable). The VFIO device fd reaches every BAR
 * whole (sparse areas are advice to mmap), config space and the device
 * ioctls (VFIO_DEVICE_RESET, SET_IRQS): never for a client but a trusted one.
 * A BAR range of its own would be a dma-buf of it (VFIO_DEVICE_FEATURE_DMA_BUF,
 * Linux 6.19, for device peer-to-peer; mmap of it by a process is not merged
 * as of this writing), and vfio-user's one fd per region with areas at their
 * BAR offsets does not fit a dma-buf's concatenated ranges: such BARs are
 * served by messages (docs/security.md). /dev/mem reaches any physical range:
 * never. A device-DAX reaches exactly its range: fine when that is the region.
 */
static const char *h_fd_unshareable(void *dev, int fd, bool *never)
{
	struct vcxl_hw_vfio *v = dev;

	if (fd >= 0 && fd == v->dax_fd) {
		if (v->dax_map_hpa == v->dax_base && v->dax_map_size == v->dax_size)
			return NULL;
		*never = true;
		return "the device-DAX is larger than the region";
	}
	*never = fd != v->dev_fd;
	if (fd >= 0 && fd == v->dev_fd)
		return "the VFIO device fd reaches every BAR whole, config space and device "
		       "ioctls (reset, interrupts)";
	if (fd >= 0 && fd == v->mem_fd)
		return "no device-DAX for the region (--region-dax): /dev/mem would reach every "
		       "physical range";
	return "not an fd of this device";
}

/* ---- reset ------------------------------------------------------------------ */

/* CXL r3.1 8.1.3.1: CXL Reset Timeout 0..4 = 10 ms, 100 ms, 1 s, 10 s, 100 s */
static uint64_t cxl_reset_tmo_ns(unsigned enc)
{
	uint64_t ns = 10 * HW_NS_PER_MS;

	if (enc > CXL_RESET_TMO_MAX_ENC)
		enc = CXL_RESET_TMO_MAX_ENC;
	while (enc--)
		ns *= 10;
	return ns;
}

/* CXL r3.1 9.7: Initiate CXL Reset (Control2), wait for Status2 (up to the
 * Reset Timeout: 10 ms to 100 s; on a worker thread, see hw_blocking) */
static int cxl_reset(void *arg)
{
	struct vcxl_hw_vfio *v = arg;
	uint64_t cap, ctrl2, st2;
	int rc;

	if (!v->dvsec || v->cfg_fd < 0)
		return -EOPNOTSUPP;
	if ((rc = split_read(v->cfg_fd, v->dvsec + CXL_DVSEC_CAP, 2, &cap)))
		return rc;
	if (!(cap & CXL_DVSEC_CAP_RESET))
		return -EOPNOTSUPP;
	uint64_t tmo = cxl_reset_tmo_ns(VCXL_FIELD_GET(CXL_DVSEC_CAP_RESET_TMO, cap));
	if ((rc = split_read(v->cfg_fd, v->dvsec + CXL_DVSEC_CTRL2, 2, &ctrl2)))
		return rc;
	ctrl2 &= ~(uint64_t)(CXL_DVSEC_CTRL2_INIT_CACHE_WBI | CXL_DVSEC_CTRL2_INIT_RESET);
	if ((rc = split_write(v->cfg_fd, v->dvsec + CXL_DVSEC_CTRL2, 2,
			      ctrl2 | CXL_DVSEC_CTRL2_INIT_RESET)))
		return rc;
	uint64_t t0 = hw_now_ns();
	for (;;) {
		if ((rc = split_read(v->cfg_fd, v->dvsec + CXL_DVSEC_STATUS2, 2, &st2)))
			return rc;
		if (st2 == 0xffff)
			return -ENODEV;
		if (st2 & CXL_DVSEC_STATUS2_RESET_ERR)
			return -EIO;
		if (st2 & CXL_DVSEC_STATUS2_RESET_DONE)
			return 0;
		if (hw_now_ns() - t0 >= tmo)
			return -ETIMEDOUT;
		hw_sleep_ns(tmo / 20 ?: HW_NS_PER_MS);
	}
}

/* vfio-pci picks FLR, PM or bus reset and saves/restores config; the ioctl
 * returns after the reset's waits (PCIe r6 6.6.2: 100 ms after an FLR) */
static int flr(void *arg)
{
	struct vcxl_hw_vfio *v = arg;

	return ioctl(v->dev_fd, VFIO_DEVICE_RESET) ? -errno : 0;
}

/* A reset waits for the hardware: through the server's run_blocking (a worker
 * thread while the loop serves every other device), in place without it. */
static int hw_blocking(struct vcxl_hw_vfio *v, int (*fn)(void *arg))
{
	if (v->dma && v->dma->run_blocking)
		return v->dma->run_blocking(v->dma_opaque, fn, v);
	return fn(v);
}

static int h_reset(void *dev, enum vcxl_reset_kind kind)
{
	struct vcxl_hw_vfio *v = dev;

	switch (kind) {
	case VCXL_RESET_FLR:
	case VCXL_RESET_TENANT: /* the device's own mailbox state: docs/security.md */
		return hw_blocking(v, flr);
	case VCXL_RESET_CXL:
		return hw_blocking(v, cxl_reset);
	}
	return -EINVAL;
}

/* ---- IRQs ------------------------------------------------------------------ */

static unsigned h_irq_count(void *dev, enum vcxl_irq_type type)
{
	struct vcxl_hw_vfio *v = dev;

	return (unsigned)type < HW_NUM_IRQ_TYPES ? v->irq_count[type] : 0;
}

/* The hardware cannot call a function: interrupts go to eventfds
 * (set_irq_eventfd). The handler is kept for symmetry and never called. */
static void h_set_irq_handler(void *dev, vcxl_irq_fn fn, void *opaque)
{
	struct vcxl_hw_vfio *v = dev;

	v->irq_fn = fn;
	v->irq_opaque = opaque;
}

/* VFIO_DEVICE_SET_IRQS: eventfds for vectors [start, start + count) (DATA_NONE
 * with count 0 disables the whole index). */
static int set_irqs(struct vcxl_hw_vfio *v, unsigned type, unsigned start, unsigned count,
		    const int *fds)
{
	size_t sz = sizeof(struct vfio_irq_set) + sizeof(int32_t) * count;
	struct vfio_irq_set *s = calloc(1, sz);
	int rc;

	if (!s)
		return -ENOMEM;
	s->argsz = (uint32_t)sz;
	s->flags = VFIO_IRQ_SET_ACTION_TRIGGER |
		   (count ? VFIO_IRQ_SET_DATA_EVENTFD : VFIO_IRQ_SET_DATA_NONE);
	s->index = type;
	s->start = start;
	s->count = count;
	if (count)
		memcpy(s->data, fds, sizeof(int32_t) * count);
	rc = ioctl(v->dev_fd, VFIO_DEVICE_SET_IRQS, s) ? -errno : 0;
	free(s);
	return rc;
}

static int h_set_irq_eventfd(void *dev, enum vcxl_irq_type type, unsigned vector, int fd)
{
	struct vcxl_hw_vfio *v = dev;
	unsigned t = (unsigned)type;

	if (t >= HW_NUM_IRQ_TYPES || vector >= v->irq_count[t] || vector >= HW_MAX_VECTORS)
		return -EINVAL;
	if (!v->efd[t]) {
		v->efd[t] = malloc(sizeof(int) * v->irq_count[t]);
		if (!v->efd[t])
			return -ENOMEM;
		for (unsigned i = 0; i < v->irq_count[t]; i++)
			v->efd[t][i] = -1;
	}
	int nfd = -1;
	if (fd >= 0 && (nfd = fcntl(fd, F_DUPFD_CLOEXEC, 0)) < 0)
		return -errno;
	int old = v->efd[t][vector];
	v->efd[t][vector] = nfd;
	unsigned want = 0;
	for (unsigned i = 0; i < v->irq_count[t]; i++)
		if (v->efd[t][i] >= 0)
			want = i + 1;
	int rc;
	if (want == 0) {
		rc = set_irqs(v, t, 0, 0, NULL);
		v->irq_enabled[t] = rc ? v->irq_enabled[t] : 0;
	} else if (want <= v->irq_enabled[t]) {
		rc = set_irqs(v, t, vector, 1, &v->efd[t][vector]);
	} else {
		/* Linux before 6.5 cannot grow an enabled MSI-X set: disable, then
		 * enable every vector routed so far in one call */
		if (v->irq_enabled[t])
			set_irqs(v, t, 0, 0, NULL);
		rc = set_irqs(v, t, 0, want, v->efd[t]);
		v->irq_enabled[t] = rc ? 0 : want;
	}
	if (rc) {
		v->efd[t][vector] = old;
		if (nfd >= 0)
			close(nfd);
		return rc;
	}
	if (old >= 0)
		close(old);
	return 0;
}

/* Device DMA goes through the IOMMU (dma_map), never through these. */
static void h_set_dma(void *dev, const struct vcxl_dma_ops *ops, void *opaque)
{
	struct vcxl_hw_vfio *v = dev;

	v->dma = ops;
	v->dma_opaque = opaque;
}

/* ---- DMA ------------------------------------------------------------------- */

/* Map and pin v->pin for the device: the IOMMU domain gets the window, and
 * the kernel pins every page of it (seconds for a large guest's RAM). */
static int pin_window(void *arg)
{
	struct vcxl_hw_vfio *v = arg;
	const struct hw_pin *p = &v->pin;

	if (v->iommufd >= 0) {
		struct iommu_ioas_map m = {
		    .size = sizeof(m),
		    .flags = IOMMU_IOAS_MAP_FIXED_IOVA | IOMMU_IOAS_MAP_READABLE |
			     (p->write ? IOMMU_IOAS_MAP_WRITEABLE : 0),
		    .ioas_id = v->ioas_id,
		    .user_va = (uintptr_t)p->vaddr,
		    .length = p->size,
		    .iova = p->iova,
		};
		return ioctl(v->iommufd, IOMMU_IOAS_MAP, &m) ? -errno : 0;
	}
	struct vfio_iommu_type1_dma_map m = {
	    .argsz = sizeof(m),
	    .flags = VFIO_DMA_MAP_FLAG_READ | (p->write ? VFIO_DMA_MAP_FLAG_WRITE : 0),
	    .vaddr = (uintptr_t)p->vaddr,
	    .iova = p->iova,
	    .size = p->size,
	};
	return ioctl(v->container_fd, VFIO_IOMMU_MAP_DMA, &m) ? -errno : 0;
}

/* The pinning waits on the kernel like a reset does: through the server's
 * run_blocking, so a large window never holds the loop (issue 21 item 4). */
static int h_dma_map(void *dev, uint64_t iova, uint64_t size, void *vaddr, bool write)
{
	struct vcxl_hw_vfio *v = dev;

	if (!size || iova + size < iova || !vaddr)
		return -EINVAL;
	if (v->iommufd < 0 && v->container_fd < 0)
		return -EOPNOTSUPP;
	v->pin = (struct hw_pin){.iova = iova, .size = size, .vaddr = vaddr, .write = write};
	return hw_blocking(v, pin_window);
}

static int h_dma_unmap(void *dev, uint64_t iova, uint64_t size)
{
	struct vcxl_hw_vfio *v = dev;

	if (!size || iova + size < iova)
		return -EINVAL;
	if (v->iommufd >= 0) {
		struct iommu_ioas_unmap u = {
		    .size = sizeof(u), .ioas_id = v->ioas_id, .iova = iova, .length = size};
		return ioctl(v->iommufd, IOMMU_IOAS_UNMAP, &u) ? -errno : 0;
	}
	if (v->container_fd >= 0) {
		struct vfio_iommu_type1_dma_unmap u = {
		    .argsz = sizeof(u), .iova = iova, .size = size};
		return ioctl(v->container_fd, VFIO_IOMMU_UNMAP_DMA, &u) ? -errno : 0;
	}
	return -EOPNOTSUPP;
}

static const char *h_name(void *dev)
{
	struct vcxl_hw_vfio *v = dev;

	return v->name;
}

const struct vcxl_backend_ops vcxl_hw_vfio_ops = {
    .cfg_read = h_cfg_read,
    .cfg_write = h_cfg_write,
    .bar_read = h_bar_read,
    .bar_write = h_bar_write,
    .bar_info = h_bar_info,
    .hpa_map = h_hpa_map,
    .reset = h_reset,
    .irq_count = h_irq_count,
    .set_irq_handler = h_set_irq_handler,
    .set_dma = h_set_dma,
    .name = h_name,
    .set_irq_eventfd = h_set_irq_eventfd,
    .dma_map = h_dma_map,
    .dma_unmap = h_dma_unmap,
    .fd_unshareable = h_fd_unshareable,
};

/* ---- life cycle -------------------------------------------------------------- */

int hw_vfio_init(struct vcxl_hw_vfio *v, char *err, size_t errlen)
{
	v->be.ops = &vcxl_hw_vfio_ops;
	v->be.dev = v;
	v->mem_fd = -1;
	v->dax_fd = -1;
	if (!v->devmem[0])
		snprintf(v->devmem, sizeof(v->devmem), "/dev/mem");
	if (!v->region[VFIO_PCI_CONFIG_REGION_INDEX].size)
		return hw_err(err, errlen, -ENODEV, "%s: no VFIO config region", v->bdf);
	int rc = scan_ext_caps(v);
	if (rc)
		return hw_err(err, errlen, rc, "%s: extended capability chain is malformed",
			      v->bdf);
	return 0;
}

void hw_vfio_free(struct vcxl_hw_vfio *v)
{
	for (unsigned t = 0; t < HW_NUM_IRQ_TYPES; t++) {
		if (!v->efd[t])
			continue;
		if (v->irq_enabled[t] && v->dev_fd >= 0)
			set_irqs(v, t, 0, 0, NULL);
		for (unsigned i = 0; i < v->irq_count[t]; i++)
			if (v->efd[t][i] >= 0)
				close(v->efd[t][i]);
		free(v->efd[t]);
	}
	for (unsigned b = 0; b < VCXL_NUM_BARS; b++)
		for (unsigned i = 0; i < v->bar_map[b].n; i++)
			munmap((void *)v->bar_map[b].area[i].p, v->bar_map[b].area[i].size);
	int *fds[] = {&v->dev_fd,   &v->cfg_fd,	      &v->mem_fd, &v->dax_fd,
		      &v->group_fd, &v->container_fd, &v->iommufd};
	for (unsigned i = 0; i < sizeof(fds) / sizeof(fds[0]); i++)
		if (*fds[i] >= 0)
			close(*fds[i]);
	free(v);
}

int vcxl_hw_vfio_from_layout(const struct vcxl_hw_layout *l, struct vcxl_hw_vfio **out, char *err,
			     size_t errlen)
{
	struct vcxl_hw_vfio *v = calloc(1, sizeof(*v));

	*out = NULL;
	if (!v) {
		close(l->dev_fd);
		if (l->cfg_fd >= 0)
			close(l->cfg_fd);
		return hw_err(err, errlen, -ENOMEM, "out of memory");
	}
	v->dev_fd = l->dev_fd;
	v->cfg_fd = l->cfg_fd;
	v->container_fd = v->group_fd = v->iommufd = -1;
	v->iommu_name = "none";
	memcpy(v->region, l->region, sizeof(v->region));
	memcpy(v->irq_count, l->irq_count, sizeof(v->irq_count));
	for (unsigned t = 0; t < HW_NUM_IRQ_TYPES; t++)
		if (v->irq_count[t] > HW_MAX_VECTORS)
			v->irq_count[t] = HW_MAX_VECTORS;
	snprintf(v->name, sizeof(v->name), "%s", hw_or(l->name, "vfio (layout)"));
	snprintf(v->bdf, sizeof(v->bdf), "%s", hw_or(l->name, "layout"));
	if (l->devmem)
		snprintf(v->devmem, sizeof(v->devmem), "%s", l->devmem);
	int rc = hw_vfio_init(v, err, errlen);
	if (rc) {
		hw_vfio_free(v);
		return rc;
	}
	*out = v;
	return 0;
}

/* VFIO_DEVICE_GET_REGION_INFO reply + capability chain (vfio.h: offsets of
 * struct vfio_info_cap_header from the start of the reply) */
int vcxl_hw_region_decode(const void *buf, size_t buflen, struct vcxl_hw_region *r)
{
	const uint8_t *b = buf;
	struct vfio_region_info ri;

	memset(r, 0, sizeof(*r));
	if (buflen < sizeof(ri))
		return -EINVAL;
	memcpy(&ri, b, sizeof(ri));
	r->offset = ri.offset;
	r->size = ri.size;
	r->flags = ri.flags;
	if (!(ri.flags & VFIO_REGION_INFO_FLAG_CAPS) || !ri.cap_offset)
		return 0;
	size_t lim = ri.argsz < buflen ? ri.argsz : buflen;
	uint32_t at = ri.cap_offset;
	for (unsigned guard = 0; at; guard++) {
		struct vfio_info_cap_header h;
		if (guard > 64 || at < sizeof(ri) || at > lim || lim - at < sizeof(h) || (at & 3))
			return -EINVAL;
		memcpy(&h, b + at, sizeof(h));
		if (h.id == VFIO_REGION_INFO_CAP_SPARSE_MMAP) {
			struct vfio_region_info_cap_sparse_mmap sm;
			if (lim - at < sizeof(sm))
				return -EINVAL;
			memcpy(&sm, b + at, sizeof(sm));
			if (sm.nr_areas >
			    (lim - at - sizeof(sm)) / sizeof(struct vfio_region_sparse_mmap_area))
				return -EINVAL;
			for (uint32_t i = 0; i < sm.nr_areas; i++) {
				struct vfio_region_sparse_mmap_area a;
				memcpy(&a, b + at + sizeof(sm) + i * sizeof(a), sizeof(a));
				if (!a.size || a.offset > r->size || a.size > r->size - a.offset)
					return -EINVAL;
				if (r->nr_sparse == VCXL_BAR_MAX_AREAS) {
					r->sparse_overflow = true;
					continue;
				}
				r->sparse[r->nr_sparse++] =
				    (struct vcxl_bar_area){.offset = a.offset, .size = a.size};
			}
			/* the kernel reporting the cap with no area: nothing is mappable */
			if (!sm.nr_areas)
				r->flags &= ~(uint32_t)VFIO_REGION_INFO_FLAG_MMAP;
		}
		if (h.next && h.next <= at)
			return -EINVAL; /* chains only go forward */
		at = h.next;
	}
	return 0;
}
