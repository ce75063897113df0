// SPDX-License-Identifier: BSD-3-Clause
/*
 * vcxl-hw-firmware: the "firmware" of the e2e-hw --region-dax test. Firmware
 * commits a device's HDM decoder before the OS owns the device; here that is
 * done while the device is bound to no driver, through its sysfs config file
 * and BAR mappings (resourceN), never through vfio-pci: vfio-pci resets a
 * device without FLR on its bus when the last user closes it, and that reset
 * clears HDM decoders, so a commit made through VFIO would not survive.
 * The commit itself is vcxl's host core (Linux's order: HDM Decoder Enable,
 * Mem_Enable, decoder 0 over the first CFMWS window), which is then left so.
 *
 *   vcxl-hw-firmware --device BDF           commit decoder 0, print "HW fw-..." lines
 *   vcxl-hw-firmware --device BDF --show    print endpoint decoder 0 as it reads now
 *
 * --show works only while no driver holds the BAR: with CONFIG_IO_STRICT_DEVMEM
 * (Debian's) a BAR vfio-pci requested cannot be mapped through sysfs.
 */
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "vfio-cxl/backend.h"
#include "host/host_cxl.h"
#include "hw/hw_vfio.h"

struct sysfs_dev {
	char dir[128];
	int cfg_fd, mem_fd;
	volatile uint8_t *bar[VCXL_NUM_BARS];
	uint64_t bar_size[VCXL_NUM_BARS];
	struct vcxl_backend be;
};

static int s_cfg_read(void *dev, uint32_t off, unsigned len, uint64_t *val)
{
	struct sysfs_dev *s = dev;
	uint64_t v = 0;

	if (len > sizeof(v) || pread(s->cfg_fd, &v, len, off) != (ssize_t)len)
		return -EIO;
	*val = v;
	return 0;
}

static int s_cfg_write(void *dev, uint32_t off, unsigned len, uint64_t val)
{
	struct sysfs_dev *s = dev;

	return len <= sizeof(val) && pwrite(s->cfg_fd, &val, len, off) == (ssize_t)len ? 0 : -EIO;
}

static volatile uint8_t *bar_at(struct sysfs_dev *s, unsigned bar, uint64_t off, unsigned len)
{
	if (bar >= VCXL_NUM_BARS || !s->bar[bar] || off + len > s->bar_size[bar] || off % len)
		return NULL;
	return s->bar[bar] + off;
}

/* MMIO: 4- and 8-byte accesses as issued, never split into bytes */
static int s_bar_read(void *dev, unsigned bar, uint64_t off, unsigned len, uint64_t *val)
{
	volatile uint8_t *p = bar_at(dev, bar, off, len);

	if (!p || (len != 4 && len != 8))
		return -EINVAL;
	*val = len == 4 ? *(volatile uint32_t *)p : *(volatile uint64_t *)p;
	return 0;
}

static int s_bar_write(void *dev, unsigned bar, uint64_t off, unsigned len, uint64_t val)
{
	volatile uint8_t *p = bar_at(dev, bar, off, len);

	if (!p || (len != 4 && len != 8))
		return -EINVAL;
	if (len == 4)
		*(volatile uint32_t *)p = (uint32_t)val;
	else
		*(volatile uint64_t *)p = val;
	return 0;
}

static int s_bar_info(void *dev, unsigned bar, struct vcxl_bar_info *info)
{
	struct sysfs_dev *s = dev;

	memset(info, 0, sizeof(*info));
	info->fd = info->area_fd = -1;
	if (bar >= VCXL_NUM_BARS)
		return -EINVAL;
	info->size = s->bar_size[bar];
	info->flags = s->bar[bar] ? VCXL_BAR_PRESENT : 0;
	return 0;
}

/* the region's memory is the HPA range in /dev/mem, as for the VFIO backend */
static int s_hpa_map(void *dev, uint64_t hpa, uint64_t size, int *fd, uint64_t *fd_offset)
{
	struct sysfs_dev *s = dev;

	(void)size;
	if (s->mem_fd < 0 && (s->mem_fd = open("/dev/mem", O_RDWR | O_SYNC | O_CLOEXEC)) < 0)
		return -errno;
	*fd = s->mem_fd;
	*fd_offset = hpa;
	return 0;
}

static int s_reset(void *dev, enum vcxl_reset_kind kind)
{
	(void)dev;
	(void)kind;
	return -EOPNOTSUPP;
}

static unsigned s_irq_count(void *dev, enum vcxl_irq_type type)
{
	(void)dev;
	(void)type;
	return 0;
}

static void s_set_irq_handler(void *dev, vcxl_irq_fn fn, void *opaque)
{
	(void)dev;
	(void)fn;
	(void)opaque;
}

static void s_set_dma(void *dev, const struct vcxl_dma_ops *ops, void *opaque)
{
	(void)dev;
	(void)ops;
	(void)opaque;
}

static const char *s_name(void *dev)
{
	return ((struct sysfs_dev *)dev)->dir;
}

static const struct vcxl_backend_ops sysfs_ops = {
    .cfg_read = s_cfg_read,
    .cfg_write = s_cfg_write,
    .bar_read = s_bar_read,
    .bar_write = s_bar_write,
    .bar_info = s_bar_info,
    .hpa_map = s_hpa_map,
    .reset = s_reset,
    .irq_count = s_irq_count,
    .set_irq_handler = s_set_irq_handler,
    .set_dma = s_set_dma,
    .name = s_name,
};

static int sysfs_open(struct sysfs_dev *s, const char *bdf)
{
	char path[192];

	memset(s, 0, sizeof(*s));
	s->mem_fd = -1;
	snprintf(s->dir, sizeof(s->dir), "/sys/bus/pci/devices/%s", bdf);
	snprintf(path, sizeof(path), "%s/config", s->dir);
	if ((s->cfg_fd = open(path, O_RDWR | O_CLOEXEC)) < 0) {
		printf("HW fw-FAIL %s: %s\n", path, strerror(errno));
		return -1;
	}
	for (unsigned b = 0; b < VCXL_NUM_BARS; b++) {
		struct stat st;
		snprintf(path, sizeof(path), "%s/resource%u", s->dir, b);
		int fd = open(path, O_RDWR | O_SYNC | O_CLOEXEC);
		if (fd < 0)
			continue; /* not implemented, or the upper half of a 64-bit BAR */
		if (!fstat(fd, &st) && st.st_size > 0) {
			void *p = mmap(NULL, (size_t)st.st_size, PROT_READ | PROT_WRITE, MAP_SHARED,
				       fd, 0);
			if (p != MAP_FAILED) {
				s->bar[b] = p;
				s->bar_size[b] = (uint64_t)st.st_size;
			}
		}
		close(fd);
	}
	s->be.ops = &sysfs_ops;
	s->be.dev = s;
	return 0;
}

static void print_decoder(const char *tag, struct vcxl_cxl_dev *d)
{
	struct vcxl_phys_decoder dec;

	if (vcxl_cxl_read_decoder(d, 0, &dec)) {
		printf("HW %s decoder0 unreadable\n", tag);
		return;
	}
	printf("HW %s decoder0 base=0x%llx size=0x%llx skip=0x%llx ctrl=0x%08x committed=%d\n", tag,
	       (unsigned long long)dec.base, (unsigned long long)dec.size,
	       (unsigned long long)dec.skip, dec.ctrl, dec.committed);
}

int main(int argc, char **argv)
{
	static const struct option lo[] = {
	    {"device", required_argument, NULL, 'D'},
	    {"show", no_argument, NULL, 's'},
	    {NULL, 0, NULL, 0},
	};
	const char *bdf = NULL;
	bool show = false;
	char err[256] = "";
	int ch;

	while ((ch = getopt_long(argc, argv, "", lo, NULL)) != -1) {
		if (ch == 'D')
			bdf = optarg;
		else if (ch == 's')
			show = true;
		else
			return 2;
	}
	if (!bdf) {
		fprintf(stderr, "usage: vcxl-hw-firmware --device BDF [--show]\n");
		return 2;
	}
	struct sysfs_dev s;
	if (sysfs_open(&s, bdf))
		return 1;

	struct vcxl_host host;
	struct vcxl_cedt cedt;
	vcxl_host_init(&host);
	if (vcxl_cedt_read(NULL, &cedt, err, sizeof(err)) || !cedt.ncfmws) {
		printf("HW fw-FAIL CEDT: %s\n", err[0] ? err : "no CFMWS window");
		return 1;
	}
	/* firmware knows its platform: the first window, whatever it allows */
	const struct vcxl_cedt_cfmws *w = &cedt.cfmws[0];
	vcxl_host_add_window(&host, w->base, w->size, VCXL_HOST_DEFAULT_WIN_FLAGS);

	struct vcxl_dev_facts facts = {.media_ready = true, .no_cdat = show};
	struct vcxl_cxl_dev *d;
	if (vcxl_cxl_probe(&host, &s.be, &facts, &d, err, sizeof(err))) {
		printf("HW fw-FAIL probe: %s\n", err);
		return 1;
	}
	if (show) {
		print_decoder("fw-show", d);
		return 0;
	}
	struct vcxl_region *r;
	if (vcxl_region_create(d, 0, &r, err, sizeof(err))) {
		printf("HW fw-FAIL commit: %s\n", err);
		return 1;
	}
	printf("HW fw-region hpa=0x%llx size=0x%llx dpa=0x%llx decoder=%u window=0x%llx+0x%llx\n",
	       (unsigned long long)r->hpa, (unsigned long long)r->size, (unsigned long long)r->dpa,
	       r->decoder, (unsigned long long)w->base, (unsigned long long)w->size);
	print_decoder("fw-ep", d);
	printf("HW fw-verify=%d\n", vcxl_region_verify(r));
	printf("HW fw-LEFT COMMITTED\n");
	return 0; /* no vcxl_region_destroy: the commit outlives us, as firmware's does */
}
