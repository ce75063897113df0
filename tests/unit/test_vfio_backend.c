// SPDX-License-Identifier: BSD-3-Clause
/* The VFIO backend without VFIO: a file laid out like a VFIO device fd (the
 * model's config space with the extended part hidden, as vfio-pci does, and
 * its BARs) plus a raw "sysfs config" file. Config routing, the extended
 * write policy, BAR access, bar_info with sparse mmap, region-info decoding,
 * CXL reset, hpa_map, and the host core probing a device through it all. */
#include <errno.h>
#include <fcntl.h>
#include <linux/pci_regs.h>
#include <linux/vfio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "tap.h"
#include "cxl/cxl_regs.h"
#include "host/host_cxl.h"
#include "hw/hw_vfio.h"
#include "model/model.h"
#include "../../src/hw/vfio_priv.h"

#define REG_OFF(i) ((uint64_t)(i) << 24) /* region i of the fake device file */
#define CFG_IDX	   VFIO_PCI_CONFIG_REGION_INDEX

static char dir[128];

struct fake {
	char devpath[200], cfgpath[200], mempath[200];
	struct vcxl_hw_layout l;
	struct vcxl_hw_vfio *v;
	struct vcxl_backend *be;
	uint8_t cfg[4096];
	uint32_t dvsec; /* CXL Device DVSEC in cfg */
};

static int pw(int fd, const void *b, size_t n, uint64_t off)
{
	return pwrite(fd, b, n, (off_t)off) == (ssize_t)n ? 0 : -1;
}

static uint32_t file32(const char *path, uint64_t off)
{
	uint32_t v = 0;
	int fd = open(path, O_RDONLY);

	if (fd >= 0) {
		if (pread(fd, &v, 4, (off_t)off) != 4)
			v = 0xdeadbeef;
		close(fd);
	}
	return v;
}

static void file_put(const char *path, uint64_t off, const void *b, size_t n)
{
	int fd = open(path, O_WRONLY);

	if (fd >= 0) {
		if (pw(fd, b, n, off))
			diag("write %s failed", path);
		close(fd);
	}
}

/* Snapshot the model into the two files */
static int fake_make(struct fake *f, bool mmap_bars)
{
	struct vcxl_model_cfg mc = {.mem_size = VCXL_SZ_256M, .decoders = 2};
	struct vcxl_model *m;

	memset(f, 0, sizeof(*f));
	if (vcxl_model_create(&mc, &m))
		return -1;
	struct vcxl_backend *mb = vcxl_model_backend(m);
	for (uint32_t o = 0; o < 4096; o += 4) {
		uint64_t x = 0;
		mb->ops->cfg_read(mb->dev, o, 4, &x);
		memcpy(f->cfg + o, &x, 4);
	}
	snprintf(f->devpath, sizeof(f->devpath), "%s/dev", dir);
	snprintf(f->cfgpath, sizeof(f->cfgpath), "%s/config", dir);
	snprintf(f->mempath, sizeof(f->mempath), "%s/mem", dir);
	int dfd = open(f->devpath, O_RDWR | O_CREAT | O_TRUNC, 0600);
	int cfd = open(f->cfgpath, O_RDWR | O_CREAT | O_TRUNC, 0600);
	if (dfd < 0 || cfd < 0)
		return -1;
	/* VFIO's config region: the standard part; vfio-pci hides the rest (reads 0) */
	uint8_t zero[4096 - 256] = {0};
	pw(dfd, f->cfg, 256, REG_OFF(CFG_IDX));
	pw(dfd, zero, sizeof(zero), REG_OFF(CFG_IDX) + 256);
	pw(cfd, f->cfg, sizeof(f->cfg), 0);
	for (unsigned bar = 0; bar < VCXL_NUM_BARS; bar++) {
		struct vcxl_bar_info bi;
		if (mb->ops->bar_info(mb->dev, bar, &bi) || !bi.size)
			continue;
		for (uint64_t o = 0; o < bi.size && o < 0x20000; o += 4) {
			uint64_t x = 0;
			if (!mb->ops->bar_read(mb->dev, bar, o, 4, &x))
				pw(dfd, &x, 4, REG_OFF(bar) + o);
		}
		f->l.region[bar] = (struct vcxl_hw_region){
		    .offset = REG_OFF(bar),
		    .size = bi.size,
		    .flags = VFIO_REGION_INFO_FLAG_READ | VFIO_REGION_INFO_FLAG_WRITE |
			     (mmap_bars ? VFIO_REGION_INFO_FLAG_MMAP : 0)};
	}
	vcxl_model_destroy(m);
	f->l.region[CFG_IDX] = (struct vcxl_hw_region){.offset = REG_OFF(CFG_IDX),
						       .size = 4096,
						       .flags = VFIO_REGION_INFO_FLAG_READ |
								VFIO_REGION_INFO_FLAG_WRITE};
	f->l.dev_fd = dfd;
	f->l.cfg_fd = cfd;
	f->l.irq_count[VFIO_PCI_MSIX_IRQ_INDEX] = VCXL_MODEL_MSIX_VECTORS;
	f->l.name = "0000:0d:00.0";
	f->l.devmem = f->mempath;
	int mfd = open(f->mempath, O_RDWR | O_CREAT | O_TRUNC, 0600);
	if (mfd < 0 || ftruncate(mfd, 1ll << 30))
		return -1;
	close(mfd);
	/* find the CXL Device DVSEC in the snapshot */
	for (uint32_t o = 0x100; o && o < 4096;) {
		uint32_t h, h1;
		uint16_t id;
		memcpy(&h, f->cfg + o, 4);
		memcpy(&h1, f->cfg + o + 4, 4);
		memcpy(&id, f->cfg + o + 8, 2);
		if ((h & 0xffff) == PCIE_EXT_CAP_ID_DVSEC && (h1 & 0xffff) == CXL_VENDOR_ID &&
		    id == CXL_DVSEC_ID_DEVICE) {
			f->dvsec = o;
			break;
		}
		o = h >> 20;
	}
	return 0;
}

static int fake_open(struct fake *f, char *err, size_t errlen)
{
	int rc = vcxl_hw_vfio_from_layout(&f->l, &f->v, err, errlen);

	f->be = rc ? NULL : vcxl_hw_vfio_backend(f->v);
	return rc;
}

static void fake_close(struct fake *f)
{
	vcxl_hw_vfio_close(f->v);
	f->v = NULL;
}

static void test_config_routing(void)
{
	struct fake f;
	char err[200] = "";
	uint64_t v;

	if (!ok(fake_make(&f, true) == 0, "fake device made"))
		return;
	is(fake_open(&f, err, sizeof(err)), 0, "backend over the layout: %s", err);
	if (!f.v)
		return;
	ok(f.dvsec >= 0x100, "model has a CXL Device DVSEC at 0x%x", f.dvsec);
	is(f.be->ops->cfg_read(f.be->dev, PCI_VENDOR_ID, 4, &v), 0, "read ID");
	is(v, VCXL_MODEL_VENDOR | (VCXL_MODEL_DEVICE << 16), "ID through the VFIO config region");
	/* extended space: the VFIO view is 0 there, the raw file has the DVSEC */
	is(file32(f.devpath, REG_OFF(CFG_IDX) + 0x100), 0, "VFIO view hides 0x100");
	is(f.be->ops->cfg_read(f.be->dev, 0x100, 4, &v), 0, "read 0x100");
	uint32_t want;
	memcpy(&want, f.cfg + 0x100, 4);
	ok(v == want && v != 0, "0x100 comes from sysfs config (0x%llx)", (unsigned long long)v);
	is(f.be->ops->cfg_read(f.be->dev, f.dvsec + PCIE_DVSEC_HEADER1, 2, &v), 0, "word read");
	is(v, CXL_VENDOR_ID, "DVSEC vendor");
	is(f.be->ops->cfg_read(f.be->dev, f.dvsec + 4, 8, &v), 0, "8-byte read (two dwords)");
	uint64_t w8;
	memcpy(&w8, f.cfg + f.dvsec + 4, 8);
	is(v, w8, "8-byte value");
	/* malformed accesses */
	is(f.be->ops->cfg_read(f.be->dev, 0xfe, 4, &v), -EINVAL, "straddling 0x100 refused");
	is(v, 0xffffffff, "reads all-ones");
	is(f.be->ops->cfg_read(f.be->dev, 4096, 4, &v), -EINVAL, "beyond 4 KiB");
	is(f.be->ops->cfg_read(f.be->dev, 4094, 4, &v), -EINVAL, "ending beyond 4 KiB");
	is(f.be->ops->cfg_read(f.be->dev, 0, 3, &v), -EINVAL, "length 3");
	is(f.be->ops->cfg_write(f.be->dev, 0xff, 2, 0), -EINVAL, "write straddling 0x100");
	/* writes: standard space goes to VFIO, CXL DVSEC to sysfs, other ext space refused */
	is(f.be->ops->cfg_write(f.be->dev, PCI_COMMAND, 2, PCI_COMMAND_MEMORY), 0, "Command write");
	is(file32(f.devpath, REG_OFF(CFG_IDX) + PCI_COMMAND) & 0xffff, PCI_COMMAND_MEMORY,
	   "landed in the VFIO config region");
	uint32_t ctl = f.dvsec + CXL_DVSEC_CTRL;
	uint64_t cur;
	f.be->ops->cfg_read(f.be->dev, ctl, 2, &cur);
	is(f.be->ops->cfg_write(f.be->dev, ctl, 2, cur | CXL_DVSEC_CTRL_MEM_EN), 0,
	   "DVSEC Control write");
	ok(file32(f.cfgpath, ctl) & CXL_DVSEC_CTRL_MEM_EN, "landed in the raw config file");
	is(file32(f.devpath, REG_OFF(CFG_IDX) + ctl), 0, "not in the VFIO view");
	uint32_t before = file32(f.cfgpath, 0xffc);
	is(f.be->ops->cfg_write(f.be->dev, 0xffc, 4, 0x12345678), -EPERM,
	   "write outside CXL DVSEC/DOE refused");
	is(file32(f.cfgpath, 0xffc), before, "raw config unchanged");
	fake_close(&f);

	/* no sysfs config (unprivileged): extended space falls back to the VFIO view */
	fake_make(&f, true);
	close(f.l.cfg_fd);
	f.l.cfg_fd = -1;
	fake_open(&f, err, sizeof(err));
	is(f.be->ops->cfg_read(f.be->dev, 0x100, 4, &v), 0, "read without sysfs");
	is(v, 0, "sees what vfio-pci shows");
	is(f.be->ops->cfg_write(f.be->dev, f.dvsec + CXL_DVSEC_CTRL, 2, 0), -EPERM,
	   "and cannot write extended space");
	fake_close(&f);
}

static void test_bars(void)
{
	struct fake f;
	char err[200] = "";
	struct vcxl_bar_info bi;
	uint64_t v;

	fake_make(&f, true);
	fake_open(&f, err, sizeof(err));
	if (!f.v)
		return;
	/* the component block's CM capability array header (model: BAR0 + 0) */
	is(f.be->ops->bar_read(f.be->dev, 0, CXL_CM_OFFSET, 4, &v), 0, "BAR0 read");
	is(VCXL_FIELD_GET(CXL_CM_CAP_HDR_ID, v), CXL_CM_CAP_ID_ARRAY, "CM array header");
	is(f.be->ops->bar_write(f.be->dev, 2, 0x100, 8, 0x1122334455667788ull), 0,
	   "8-byte BAR write");
	is(file32(f.devpath, REG_OFF(2) + 0x100), 0x55667788, "low dword");
	is(file32(f.devpath, REG_OFF(2) + 0x104), 0x11223344, "high dword");
	is(f.be->ops->bar_read(f.be->dev, 2, 0x100, 8, &v), 0, "8-byte read");
	is(v, 0x1122334455667788ull, "8-byte value");
	is(f.be->ops->bar_read(f.be->dev, 2, VCXL_MODEL_BAR2_SIZE - 2, 4, &v), -EINVAL,
	   "read past the BAR");
	is(f.be->ops->bar_read(f.be->dev, 1, 0, 4, &v), -EINVAL, "absent BAR");
	is(f.be->ops->bar_read(f.be->dev, 7, 0, 4, &v), -EINVAL, "BAR index 7");
	is(f.be->ops->bar_write(f.be->dev, 0, 0, 3, 0), -EINVAL, "length 3");

	is(f.be->ops->bar_info(f.be->dev, 0, &bi), 0, "BAR0 info");
	is(bi.size, VCXL_MODEL_BAR0_SIZE, "size from the region");
	ok(bi.flags & VCXL_BAR_MEM64, "64-bit from the BAR register");
	ok(bi.fd >= 0 && bi.fd_offset == REG_OFF(0), "whole BAR mappable: device fd + offset");
	/* ... for the server's own accesses: never for a client but a trusted one */
	bool never = true;
	ok(f.be->ops->fd_unshareable(f.be->dev, bi.fd, &never) != NULL && !never,
	   "the device fd may not go to a client (--trust-client only)");
	is(bi.nr_areas, 0, "no areas");
	is(f.be->ops->bar_info(f.be->dev, 2, &bi), 0, "BAR2 info");
	ok(!(bi.flags & VCXL_BAR_MEM64), "BAR2 is 32-bit");
	is(f.be->ops->bar_info(f.be->dev, 1, &bi), 0, "BAR1 info");
	ok(bi.size == 0 && bi.fd == -1, "BAR1 (upper half of BAR0) absent");
	/* accesses go through the BAR mapping; when it faults (vfio-pci revokes
	 * mappings on reset or removal; here the file shrinks under it) the
	 * access fails like a failed read/write, and the process lives on */
	int dfd = open(f.devpath, O_RDWR);
	ok(dfd >= 0 && ftruncate(dfd, (off_t)REG_OFF(2)) == 0, "device file cut before BAR2");
	v = 0;
	is(f.be->ops->bar_read(f.be->dev, 2, 0x100, 8, &v), -EIO,
	   "read of a revoked mapping: -EIO");
	is(v, ~0ull, "reads all-ones");
	is(f.be->ops->bar_write(f.be->dev, 2, 0x100, 4, 1), -EIO, "write to it: -EIO");
	if (dfd >= 0)
		close(dfd);
	fake_close(&f);

	/* not mmappable: read/write on the device fd, 8 bytes as two 4-byte accesses */
	fake_make(&f, false);
	fake_open(&f, err, sizeof(err));
	is(f.be->ops->bar_write(f.be->dev, 2, 0x108, 8, 0x0102030405060708ull), 0,
	   "8-byte write, trapped BAR");
	is(file32(f.devpath, REG_OFF(2) + 0x108), 0x05060708, "low dword");
	is(file32(f.devpath, REG_OFF(2) + 0x10c), 0x01020304, "high dword");
	fake_close(&f);

	/* sparse mmap from the kernel: only part mappable -> no whole-BAR fd */
	fake_make(&f, true);
	f.l.region[0].nr_sparse = 2;
	f.l.region[0].sparse[0] = (struct vcxl_bar_area){0, 0x100000};
	f.l.region[0].sparse[1] = (struct vcxl_bar_area){0x200000, 0x200000};
	f.l.region[2].nr_sparse = 2; /* these two cover BAR2 completely */
	f.l.region[2].sparse[0] = (struct vcxl_bar_area){0x2000, 0x2000};
	f.l.region[2].sparse[1] = (struct vcxl_bar_area){0, 0x2000};
	fake_open(&f, err, sizeof(err));
	f.be->ops->bar_info(f.be->dev, 0, &bi);
	ok(bi.fd == -1, "sparse BAR: no whole-BAR fd");
	is(bi.nr_areas, 2, "two mappable areas");
	ok(bi.area_fd >= 0 && bi.area_fd_offset == REG_OFF(0) && bi.area[1].offset == 0x200000 &&
	       bi.area[1].size == 0x200000,
	   "areas reported");
	f.be->ops->bar_info(f.be->dev, 2, &bi);
	ok(bi.fd >= 0 && bi.nr_areas == 0, "areas covering the BAR: whole-BAR fd");
	fake_close(&f);

	/* not mmappable at all */
	fake_make(&f, false);
	fake_open(&f, err, sizeof(err));
	f.be->ops->bar_info(f.be->dev, 0, &bi);
	ok(bi.size && bi.fd == -1 && bi.nr_areas == 0, "no MMAP flag: trapped only");
	fake_close(&f);
}

/* A GET_REGION_INFO reply with a sparse-mmap capability of n areas */
static size_t reply(uint8_t *b, size_t cap, unsigned n, uint64_t size)
{
	struct vfio_region_info ri = {.flags = VFIO_REGION_INFO_FLAG_READ |
					       VFIO_REGION_INFO_FLAG_MMAP |
					       VFIO_REGION_INFO_FLAG_CAPS,
				      .cap_offset = sizeof(ri),
				      .size = size,
				      .offset = 0x10000000000ull};
	struct vfio_region_info_cap_sparse_mmap sm = {
	    .header = {.id = VFIO_REGION_INFO_CAP_SPARSE_MMAP, .version = 1}, .nr_areas = n};
	size_t len = sizeof(ri) + sizeof(sm) + n * sizeof(struct vfio_region_sparse_mmap_area);

	if (len > cap)
		return 0;
	memset(b, 0, cap);
	ri.argsz = (uint32_t)len;
	memcpy(b, &ri, sizeof(ri));
	memcpy(b + sizeof(ri), &sm, sizeof(sm));
	for (unsigned i = 0; i < n; i++) {
		struct vfio_region_sparse_mmap_area a = {.offset = i * 0x2000, .size = 0x1000};
		memcpy(b + sizeof(ri) + sizeof(sm) + i * sizeof(a), &a, sizeof(a));
	}
	return len;
}

static void test_region_decode(void)
{
	uint8_t b[512];
	struct vcxl_hw_region r;
	size_t len = reply(b, sizeof(b), 2, 0x10000);
	struct vfio_region_info *ri = (struct vfio_region_info *)b;

	is(vcxl_hw_region_decode(b, len, &r), 0, "sparse reply decodes");
	is(r.offset, 0x10000000000ull, "offset");
	is(r.size, 0x10000, "size");
	is(r.nr_sparse, 2, "two areas");
	is(r.sparse[1].offset, 0x2000, "area 1 offset");
	ok(!r.sparse_overflow, "no overflow");
	len = reply(b, sizeof(b), 6, 0x10000);
	is(vcxl_hw_region_decode(b, len, &r), 0, "six areas decode");
	ok(r.nr_sparse == VCXL_BAR_MAX_AREAS && r.sparse_overflow, "kept 4, overflow noted");
	len = reply(b, sizeof(b), 2, 0x10000);
	is(vcxl_hw_region_decode(b, len - 8, &r), -EINVAL, "area cut off");
	ri->cap_offset = 0x1000;
	is(vcxl_hw_region_decode(b, len, &r), -EINVAL, "cap beyond the reply");
	len = reply(b, sizeof(b), 2, 0x2000);
	is(vcxl_hw_region_decode(b, len, &r), -EINVAL, "area outside the region");
	len = reply(b, sizeof(b), 1, 0x10000);
	struct vfio_info_cap_header *h = (struct vfio_info_cap_header *)(b + sizeof(*ri));
	h->next = sizeof(*ri); /* points at itself */
	is(vcxl_hw_region_decode(b, len, &r), -EINVAL, "looping chain");
	len = reply(b, sizeof(b), 0, 0x10000);
	is(vcxl_hw_region_decode(b, len, &r), 0, "zero areas decode");
	ok(!(r.flags & VFIO_REGION_INFO_FLAG_MMAP), "zero areas: not mappable");
	is(vcxl_hw_region_decode(b, 8, &r), -EINVAL, "short reply");
}

static void set16(struct fake *f, uint32_t off, uint16_t v)
{
	file_put(f->cfgpath, off, &v, 2);
}

/* The server's run_blocking, as a recorder: the reset's waits go through it. */
static int blocking_calls;

static int rec_run_blocking(void *opaque, int (*fn)(void *arg), void *arg)
{
	blocking_calls++;
	return fn(arg);
}

static const struct vcxl_dma_ops rec_ops = {.run_blocking = rec_run_blocking};

static void test_reset(void)
{
	struct fake f;
	char err[200] = "";

	fake_make(&f, true);
	if (!f.dvsec)
		return;
	uint16_t cap;
	memcpy(&cap, f.cfg + f.dvsec + CXL_DVSEC_CAP, 2);
	cap = (uint16_t)(cap & ~(CXL_DVSEC_CAP_RESET | CXL_DVSEC_CAP_RESET_TMO));
	set16(&f, f.dvsec + CXL_DVSEC_CAP, cap);
	fake_open(&f, err, sizeof(err));
	is(f.be->ops->reset(f.be->dev, VCXL_RESET_CXL), -EOPNOTSUPP, "no CXL Reset capability");
	/* advertised, 10 ms: Status2 says complete */
	set16(&f, f.dvsec + CXL_DVSEC_CAP, cap | CXL_DVSEC_CAP_RESET);
	set16(&f, f.dvsec + CXL_DVSEC_STATUS2, CXL_DVSEC_STATUS2_RESET_DONE);
	set16(&f, f.dvsec + CXL_DVSEC_CTRL2, 0);
	is(f.be->ops->reset(f.be->dev, VCXL_RESET_CXL), 0, "CXL reset completes");
	ok(file32(f.cfgpath, f.dvsec + CXL_DVSEC_CTRL2) & CXL_DVSEC_CTRL2_INIT_RESET,
	   "Initiate CXL Reset written");
	set16(&f, f.dvsec + CXL_DVSEC_STATUS2, CXL_DVSEC_STATUS2_RESET_ERR);
	is(f.be->ops->reset(f.be->dev, VCXL_RESET_CXL), -EIO, "CXL Reset Error reported");
	set16(&f, f.dvsec + CXL_DVSEC_STATUS2, 0);
	is(f.be->ops->reset(f.be->dev, VCXL_RESET_CXL), -ETIMEDOUT,
	   "no completion within the 10 ms the device states");
	ok(f.be->ops->reset(f.be->dev, VCXL_RESET_FLR) < 0, "FLR on a non-VFIO fd fails cleanly");
	is(f.be->ops->reset(f.be->dev, (enum vcxl_reset_kind)7), -EINVAL, "unknown reset kind");
	/* with the server's help, both resets wait off its loop */
	f.be->ops->set_dma(f.be->dev, &rec_ops, NULL);
	set16(&f, f.dvsec + CXL_DVSEC_STATUS2, CXL_DVSEC_STATUS2_RESET_DONE);
	is(f.be->ops->reset(f.be->dev, VCXL_RESET_CXL), 0, "CXL reset through run_blocking");
	ok(f.be->ops->reset(f.be->dev, VCXL_RESET_FLR) < 0, "FLR through run_blocking");
	is(blocking_calls, 2, "both waited through the server's run_blocking");
	/* pinning a DMA window waits on the kernel too: through run_blocking
	 * (/dev/null as the container: the MAP_DMA ioctl fails, ENOTTY) */
	int dummy = 0, nul = open("/dev/null", O_RDWR | O_CLOEXEC);
	f.v->container_fd = nul;
	is(f.be->ops->dma_map(f.be->dev, 0x100000, 0x1000, &dummy, true), -ENOTTY,
	   "DMA_MAP pinned by the container's ioctl (ENOTTY on /dev/null)");
	is(blocking_calls, 3, "... through the server's run_blocking, off its loop");
	is(f.be->ops->dma_map(f.be->dev, ~0ull - 10, 0x1000, &dummy, true), -EINVAL,
	   "a wrapping IOVA is refused before any pinning");
	is(blocking_calls, 3, "... without the worker");
	f.v->container_fd = -1;
	close(nul);
	f.be->ops->set_dma(f.be->dev, NULL, NULL);
	fake_close(&f);
}

static void test_misc_ops(void)
{
	struct fake f;
	char err[200] = "";
	int fd;
	uint64_t off;

	fake_make(&f, true);
	fake_open(&f, err, sizeof(err));
	if (!f.v)
		return;
	is(f.be->ops->irq_count(f.be->dev, VCXL_IRQ_MSIX), VCXL_MODEL_MSIX_VECTORS,
	   "MSI-X count from the layout");
	is(f.be->ops->irq_count(f.be->dev, VCXL_IRQ_MSI), 0, "no MSI");
	is(f.be->ops->set_irq_eventfd(f.be->dev, VCXL_IRQ_MSIX, VCXL_MODEL_MSIX_VECTORS, -1),
	   -EINVAL, "vector out of range");
	is(f.be->ops->set_irq_eventfd(f.be->dev, VCXL_IRQ_MSI, 0, -1), -EINVAL,
	   "type without vectors");
	ok(f.be->ops->set_irq_eventfd(f.be->dev, VCXL_IRQ_MSIX, 0, 0) < 0,
	   "SET_IRQS on a non-VFIO fd fails cleanly");
	int dummy = 0;
	is(f.be->ops->dma_map(f.be->dev, 0x1000, 0x1000, &dummy, true), -EOPNOTSUPP,
	   "no IOMMU behind a layout: dma_map unsupported");
	is(f.be->ops->dma_map(f.be->dev, ~0ull - 10, 0x1000, &dummy, true), -EINVAL,
	   "wrapping IOVA");
	is(f.be->ops->dma_unmap(f.be->dev, 0x1000, 0), -EINVAL, "unmap size 0");
	ok(strstr(f.be->ops->name(f.be->dev), "0000:0d:00.0") != NULL, "name");
	is(strcmp(vcxl_hw_vfio_iommu_name(f.v), "none"), 0, "IOMMU kind: none");

	/* hpa_map through the "devmem" file, limited to the window once set */
	is(f.be->ops->hpa_map(f.be->dev, 0x10000000, VCXL_SZ_256M, &fd, &off), 0, "hpa_map");
	ok(fd >= 0 && off == 0x10000000, "devmem fd at offset = HPA");
	bool never = false;
	ok(f.be->ops->fd_unshareable(f.be->dev, fd, &never) != NULL && never,
	   "the devmem fd never goes to a client, not even a trusted one");
	vcxl_hw_vfio_set_window(f.v, 0x20000000, VCXL_SZ_256M);
	is(f.be->ops->hpa_map(f.be->dev, 0x10000000, VCXL_SZ_256M, &fd, &off), -ERANGE,
	   "outside the window refused");
	is(f.be->ops->hpa_map(f.be->dev, 0x28000000, VCXL_SZ_256M, &fd, &off), -ERANGE,
	   "straddling the window end refused");
	is(f.be->ops->hpa_map(f.be->dev, 0x20000000, VCXL_SZ_256M, &fd, &off), 0, "inside: ok");
	is(f.be->ops->hpa_map(f.be->dev, 0x20000000, 0, &fd, &off), -EINVAL, "size 0");
	/* device-DAX attach wants a character device */
	ok(vcxl_hw_vfio_attach_dax(f.v, f.mempath, err, sizeof(err)) == -EINVAL &&
	       strstr(err, "device-DAX"),
	   "regular file is not a device-DAX: %s", err);
	ok(vcxl_hw_vfio_attach_dax(f.v, "/nonexistent/dax9.9", err, sizeof(err)) == -ENOENT,
	   "missing dax: %s", err);
	fake_close(&f);
}

/* The host core brings the device up through the backend: DVSEC, Register
 * Locator and DOE from the raw config, component registers through BAR0. */
static void test_host_probe(void)
{
	struct fake f;
	struct vcxl_host h;
	struct vcxl_cxl_dev *d = NULL;
	struct vcxl_dev_facts facts = {.no_cdat = true};
	char err[200] = "";

	fake_make(&f, true);
	fake_open(&f, err, sizeof(err));
	if (!f.v)
		return;
	vcxl_host_init(&h);
	is(vcxl_cxl_probe(&h, f.be, &facts, &d, err, sizeof(err)), 0,
	   "host core probes through the VFIO backend: %s", err);
	if (d) {
		is(d->dvsec, f.dvsec, "DVSEC found in the raw config");
		is(d->comp_bar, 0, "component block in BAR0");
		is(d->hdm_count, 2, "two HDM decoders through the BAR");
		is(d->dpa_capacity, VCXL_SZ_256M, "capacity from the DVSEC ranges");
		ok(d->doe_off >= 0x100, "DOE found at 0x%x", d->doe_off);
		vcxl_cxl_remove(d);
	}
	vcxl_host_fini(&h);
	fake_close(&f);

	/* what vfio-pci alone shows is not enough: without the raw config the
	 * probe fails with a clear reason */
	fake_make(&f, true);
	close(f.l.cfg_fd);
	f.l.cfg_fd = -1;
	fake_open(&f, err, sizeof(err));
	vcxl_host_init(&h);
	ok(vcxl_cxl_probe(&h, f.be, &facts, &d, err, sizeof(err)) == -ENODEV &&
	       strstr(err, "DVSEC"),
	   "hidden DVSEC: %s", err);
	vcxl_host_fini(&h);
	fake_close(&f);
}

/* Opening refuses devices not bound to vfio-pci before any ioctl */
static void test_open_refusals(void)
{
	char root[200], p[1200], err[200] = "";
	struct vcxl_hw_vfio *v;
	struct vcxl_hw_vfio_cfg cfg = {.bdf = "0000:0d:00.0", .sysfs_root = root};

	snprintf(root, sizeof(root), "%s/sys", dir);
	snprintf(p, sizeof(p),
		 "mkdir -p %s/devices/pci0000:0c/0000:0c:00.0/0000:0d:00.0 %s/bus/pci/devices "
		 "%s/bus/pci/drivers/cxl_pci && ln -sf ../../../devices/pci0000:0c/0000:0c:00.0/"
		 "0000:0d:00.0 %s/bus/pci/devices/0000:0d:00.0",
		 root, root, root, root);
	if (system(p))
		diag("mkdir failed");
	is(vcxl_hw_vfio_open(&cfg, &v, err, sizeof(err)), -ENODEV, "unbound device: %s", err);
	snprintf(p, sizeof(p),
		 "ln -sf ../../../../bus/pci/drivers/cxl_pci "
		 "%s/devices/pci0000:0c/0000:0c:00.0/0000:0d:00.0/driver",
		 root);
	if (system(p))
		diag("ln failed");
	ok(vcxl_hw_vfio_open(&cfg, &v, err, sizeof(err)) == -EBUSY && strstr(err, "cxl_pci"),
	   "bound to cxl_pci: %s", err);
	cfg.bdf = "0000:0d:00";
	is(vcxl_hw_vfio_open(&cfg, &v, err, sizeof(err)), -EINVAL, "bad BDF: %s", err);
	cfg.bdf = NULL;
	is(vcxl_hw_vfio_open(&cfg, &v, err, sizeof(err)), -EINVAL, "no BDF: %s", err);
}

int main(void)
{
	char cmd[300];

	snprintf(dir, sizeof(dir), "/tmp/vcxl-test-vfio.%d", (int)getpid());
	mkdir(dir, 0700);
	test_config_routing();
	test_bars();
	test_region_decode();
	test_reset();
	test_misc_ops();
	test_host_probe();
	test_open_refusals();
	snprintf(cmd, sizeof(cmd), "rm -rf %s", dir);
	if (system(cmd))
		diag("cleanup failed");
	return tap_done();
}
