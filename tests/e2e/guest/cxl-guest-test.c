// SPDX-License-Identifier: BSD-3-Clause
/*
 * cxl-guest-test: the guest half of the vcxl end-to-end test.
 *
 * Runs as root in a busybox initramfs inside a QEMU guest that has the vcxl
 * accelerator (8086:0d94) attached through vfio-user-pci, with no driver bound.
 * It drives the device the way Linux's CXL core would, from userspace:
 * config space through sysfs `config`, BARs through sysfs `resourceN` mmap.
 *
 * Interrupts without a driver: an MSI-X message is a DMA write of Message Data
 * to Message Address. Pointing table entry 0 at a locked page of our own (its
 * guest-physical address from /proc/self/pagemap) instead of the LAPIC turns
 * "the interrupt was delivered" into "the magic word appeared in our page".
 * That covers the whole chain (job engine -> server eventfd -> QEMU MSI-X
 * emulation -> guest memory) and, with the vector masked, the PBA pending bit.
 *
 * Output: one "STEP <name>: ok|FAIL|skip <detail>" line per step,
 * "HOSTCHECK ..." lines with facts the host verifies afterwards, and a final
 * "RESULT: <n> ok, <m> failed" line. Exit status 0 iff nothing failed.
 *
 * Build (static: the initramfs has no libc for it):
 *   gcc -static -O2 -Wall -Wextra -Werror -Iinclude -Isrc -o cxl-guest-test cxl-guest-test.c
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <poll.h>
#include <sys/eventfd.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include <linux/pci_regs.h>
#include <linux/vfio.h>

#include "guest-step.h"
#include "cxl/cxl_regs.h"
#include "model/model.h"

#define SYSFS_PCI "/sys/bus/pci/devices"
#define PATH_LEN  512

/* Test parameters (guest side) */
#define FILL_DPA       0x100000ull /* device memory the job engine fills */
#define FILL_LEN       0x10000ull
#define FILL_PATTERN   0x7663786c65326530ull /* "0e2elxcv" little endian */
#define HOST_PATTERN   0x686f737466696c6cull /* fill into guest RAM */
#define RAM_TEST_LEN   0x10000ull	     /* BAR0 RAM bytes written and read back */
#define MSI_MAGIC      0xc0de0000u	     /* Message Data, | a sequence number */
#define MSI_SLOT_OFF   0x800		     /* where in the DMA page the MSI lands */
#define DEFAULT_HPA    0x1000000000ull	     /* 64 GiB, when no CXL window exists */
#define JOB_TIMEOUT_MS 5000
#define MSI_TIMEOUT_MS 5000
#define COMMIT_POLLS   20 /* Linux cxld_await_commit(): 20 x 1 ms */

struct dev {
	char bdf[64];
	unsigned long vendor, device;
	int cfg_fd;
	uint8_t cfg[4096];
	size_t cfg_len;
	/* DVSEC offsets in config space, 0 = absent */
	unsigned dvsec_dev, dvsec_regloc, dvsec_gpf, dvsec_flexbus;
	/* component block */
	unsigned comp_bar;
	uint64_t comp_off;
	volatile uint8_t *bar[6];
	size_t bar_len[6];
	uint64_t hdm; /* HDM capability, offset in comp_bar */
	unsigned ndec;
	uint64_t region_size;
	uint64_t hpa;
	/* MSI-X */
	unsigned msix_cap, msix_tbl_bar, msix_pba_bar;
	uint32_t msix_tbl_off, msix_pba_off;
	/* DMA page */
	volatile uint8_t *page;
	uint64_t page_pa;
};

static bool expect_absent, do_reset = true, do_vfio;
static const char *want_bdf;
static uint64_t opt_hpa;

static uint64_t now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000 + (uint64_t)ts.tv_nsec / 1000000;
}

static int read_sysfs_hex(const char *path, unsigned long *v)
{
	char buf[64];
	int fd = open(path, O_RDONLY);
	ssize_t n;

	if (fd < 0)
		return -errno;
	n = read(fd, buf, sizeof(buf) - 1);
	close(fd);
	if (n <= 0)
		return -EIO;
	buf[n] = 0;
	*v = strtoul(buf, NULL, 16);
	return 0;
}

/* ---- config space (sysfs `config`) ---- */

static uint32_t cfg_read(struct dev *d, unsigned off, unsigned len)
{
	uint32_t v = 0;

	if (pread(d->cfg_fd, &v, len, off) != (ssize_t)len)
		return ~0u;
	return v;
}

static int cfg_write(struct dev *d, unsigned off, unsigned len, uint32_t v)
{
	return pwrite(d->cfg_fd, &v, len, off) == (ssize_t)len ? 0 : -errno;
}

/* ---- MMIO through sysfs resourceN ---- */

static int map_bar(struct dev *d, unsigned bar)
{
	char path[PATH_LEN];
	struct stat st;
	void *p;
	int fd;

	if (d->bar[bar])
		return 0;
	snprintf(path, sizeof(path), SYSFS_PCI "/%s/resource%u", d->bdf, bar);
	fd = open(path, O_RDWR | O_SYNC);
	if (fd < 0)
		return -errno;
	if (fstat(fd, &st) || st.st_size <= 0) {
		close(fd);
		return -EINVAL;
	}
	p = mmap(NULL, st.st_size, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	close(fd);
	if (p == MAP_FAILED)
		return -errno;
	d->bar[bar] = p;
	d->bar_len[bar] = st.st_size;
	return 0;
}

static uint32_t mmio_read32(struct dev *d, unsigned bar, uint64_t off)
{
	return *(volatile uint32_t *)(d->bar[bar] + off);
}

static void mmio_write32(struct dev *d, unsigned bar, uint64_t off, uint32_t v)
{
	*(volatile uint32_t *)(d->bar[bar] + off) = v;
	__sync_synchronize();
}

static uint64_t mmio_read64(struct dev *d, unsigned bar, uint64_t off)
{
	return *(volatile uint64_t *)(d->bar[bar] + off);
}

static void mmio_write64(struct dev *d, unsigned bar, uint64_t off, uint64_t v)
{
	*(volatile uint64_t *)(d->bar[bar] + off) = v;
	__sync_synchronize();
}

/* Component register block accessors (4-byte only, CXL r3.1 8.2.2) */
static uint32_t comp_read(struct dev *d, uint64_t off)
{
	return mmio_read32(d, d->comp_bar, d->comp_off + off);
}

static uint32_t hdm_read(struct dev *d, unsigned reg)
{
	return mmio_read32(d, d->comp_bar, d->hdm + reg);
}

static void hdm_write(struct dev *d, unsigned reg, uint32_t v)
{
	mmio_write32(d, d->comp_bar, d->hdm + reg, v);
}

/* ---- steps ---- */

static int find_device(struct dev *d)
{
	DIR *dir = opendir(SYSFS_PCI);
	struct dirent *e;
	char path[PATH_LEN];
	unsigned long ven, devid;
	int found = 0;

	if (!dir)
		return -errno;
	while ((e = readdir(dir))) {
		if (e->d_name[0] == '.')
			continue;
		if (want_bdf && strcmp(want_bdf, e->d_name))
			continue;
		snprintf(path, sizeof(path), SYSFS_PCI "/%s/vendor", e->d_name);
		if (read_sysfs_hex(path, &ven))
			continue;
		snprintf(path, sizeof(path), SYSFS_PCI "/%s/device", e->d_name);
		if (read_sysfs_hex(path, &devid))
			continue;
		/* --bdf selects a device whatever its id (to try the program on others) */
		if ((want_bdf || (ven == VCXL_MODEL_VENDOR && devid == VCXL_MODEL_DEVICE)) &&
		    !found) {
			if (strlen(e->d_name) >= sizeof(d->bdf))
				continue;
			memcpy(d->bdf, e->d_name, strlen(e->d_name) + 1);
			d->vendor = ven;
			d->device = devid;
			found = 1;
		}
	}
	closedir(dir);
	return found ? 0 : -ENODEV;
}

static int step_find(struct dev *d)
{
	char path[PATH_LEN], link[256];
	ssize_t n;

	if (find_device(d)) {
		step("find", expect_absent ? 1 : 0, "no %04x:%04x device%s", VCXL_MODEL_VENDOR,
		     VCXL_MODEL_DEVICE, expect_absent ? " (expected: boot without vcxl)" : "");
		return -1;
	}
	if (expect_absent) {
		step("find", 0, "found %s but expected no device", d->bdf);
		return -1;
	}
	snprintf(path, sizeof(path), SYSFS_PCI "/%s/driver", d->bdf);
	n = readlink(path, link, sizeof(link) - 1);
	if (n > 0) {
		link[n] = 0;
		step("find", 0, "%s is bound to a driver (%s); the test needs it unbound", d->bdf,
		     link);
		return -1;
	}
	step("find", 1, "%s (%04lx:%04lx, no driver bound)", d->bdf, d->vendor, d->device);
	return 0;
}

/* PCIe r6 7.9.6 DVSEC; CXL r3.1 8.1 (DVSEC IDs, Table 8-2) */
static void record_dvsec(struct dev *d, unsigned off, uint16_t id)
{
	switch (id) {
	case CXL_DVSEC_ID_DEVICE:
		d->dvsec_dev = off;
		break;
	case CXL_DVSEC_ID_REG_LOCATOR:
		d->dvsec_regloc = off;
		break;
	case CXL_DVSEC_ID_GPF_DEVICE:
		d->dvsec_gpf = off;
		break;
	case CXL_DVSEC_ID_FLEXBUS:
		d->dvsec_flexbus = off;
		break;
	}
}

static int step_config(struct dev *d)
{
	char path[PATH_LEN], list[512] = "";
	unsigned off = PCIE_EXT_CAP_START, guard = 0;
	ssize_t n;

	snprintf(path, sizeof(path), SYSFS_PCI "/%s/config", d->bdf);
	d->cfg_fd = open(path, O_RDWR);
	if (d->cfg_fd < 0) {
		step("config", 0, "open %s: %s", path, strerror(errno));
		return -1;
	}
	n = pread(d->cfg_fd, d->cfg, sizeof(d->cfg), 0);
	if (n < 0x200) {
		step("config", 0, "read only %zd bytes of config space", n);
		return -1;
	}
	d->cfg_len = n;
	while (off && off + 12 <= d->cfg_len && guard++ < 64) {
		uint32_t h, h1;
		uint16_t id;

		memcpy(&h, d->cfg + off, 4);
		if (!h || h == ~0u)
			break;
		if (VCXL_FIELD_GET(PCIE_EXT_CAP_ID_MASK, h) == PCIE_EXT_CAP_ID_DVSEC) {
			memcpy(&h1, d->cfg + off + PCIE_DVSEC_HEADER1, 4);
			memcpy(&id, d->cfg + off + PCIE_DVSEC_HEADER2, 2);
			if (VCXL_FIELD_GET(PCIE_DVSEC_HDR1_VENDOR, h1) == CXL_VENDOR_ID) {
				size_t l = strlen(list);

				snprintf(list + l, sizeof(list) - l, " id%u@0x%x", id, off);
				record_dvsec(d, off, id);
			}
		}
		off = VCXL_FIELD_GET(PCIE_EXT_CAP_NEXT_MASK, h);
	}
	if (!d->dvsec_dev || !d->dvsec_regloc || !d->dvsec_gpf || !d->dvsec_flexbus) {
		step("config", 0, "%zd bytes; CXL DVSECs:%s (need Device, RegLoc, GPF, FlexBus)", n,
		     list[0] ? list : " none");
		return -1;
	}
	step("config", 1, "%zd bytes; CXL DVSECs:%s", n, list);
	return 0;
}

/* CXL r3.1 8.1.9 Register Locator DVSEC: the component block's BIR + offset */
static int step_regloc(struct dev *d)
{
	unsigned base = d->dvsec_regloc, len, e;
	uint32_t h1;
	int found = 0;

	memcpy(&h1, d->cfg + base + PCIE_DVSEC_HEADER1, 4);
	len = VCXL_FIELD_GET(PCIE_DVSEC_HDR1_LEN, h1);
	for (e = CXL_REGLOC_FIRST_ENTRY; e + CXL_REGLOC_ENTRY_SIZE <= len;
	     e += CXL_REGLOC_ENTRY_SIZE) {
		uint32_t lo, hi;

		memcpy(&lo, d->cfg + base + e, 4);
		memcpy(&hi, d->cfg + base + e + 4, 4);
		if (VCXL_FIELD_GET(CXL_REGLOC_BLOCK_ID, lo) != CXL_REGLOC_RBI_COMPONENT)
			continue;
		d->comp_bar = VCXL_FIELD_GET(CXL_REGLOC_BIR, lo);
		d->comp_off = ((uint64_t)hi << 32) | (lo & CXL_REGLOC_OFFSET_LO);
		found = 1;
		break;
	}
	if (!found || d->comp_bar > 5) {
		step("regloc", 0, "no component register block entry (len 0x%x)", len);
		return -1;
	}
	if (map_bar(d, d->comp_bar) ||
	    d->comp_off + CXL_COMPONENT_BLOCK_SIZE > d->bar_len[d->comp_bar]) {
		step("regloc", 0, "cannot map BAR%u (size 0x%zx) for component block at 0x%" PRIx64,
		     d->comp_bar, d->bar_len[d->comp_bar], d->comp_off);
		return -1;
	}
	step("regloc", 1, "component block in BAR%u at 0x%" PRIx64 " (BAR size 0x%zx)", d->comp_bar,
	     d->comp_off, d->bar_len[d->comp_bar]);
	return 0;
}

/* CXL r3.1 8.2.4.20 HDM Decoder Count encoding: 0 -> 1, n <= 8 -> 2n, then 4(n-4) */
static unsigned hdm_decoder_count(uint32_t cap)
{
	unsigned enc = VCXL_FIELD_GET(CXL_HDM_CAP_DECODER_COUNT, cap);

	if (enc == 0)
		return 1;
	if (enc <= 8)
		return enc * 2;
	return (enc - 4) * 4;
}

/* CXL r3.1 8.2.4.1 CXL Capability Header + array, from CM (+0x1000) */
static int step_caparray(struct dev *d)
{
	uint32_t hdr = comp_read(d, CXL_CM_OFFSET), cap;
	unsigned n = VCXL_FIELD_GET(CXL_CM_CAP_HDR_ARRAY_SIZE, hdr), i;
	char list[256] = "";

	if (VCXL_FIELD_GET(CXL_CM_CAP_HDR_ID, hdr) != CXL_CM_CAP_ID_ARRAY) {
		step("caparray", 0, "CM capability header 0x%08x is not id %u", hdr,
		     CXL_CM_CAP_ID_ARRAY);
		return -1;
	}
	for (i = 1; i <= n && i < 64; i++) {
		uint32_t c = comp_read(d, CXL_CM_OFFSET + 4 * i);
		unsigned id = VCXL_FIELD_GET(CXL_CM_CAP_HDR_ID, c);
		unsigned ptr = VCXL_FIELD_GET(CXL_CM_CAP_PTR, c);
		size_t l = strlen(list);

		snprintf(list + l, sizeof(list) - l, " id%u@0x%x", id, ptr);
		if (id == CXL_CM_CAP_ID_HDM && !d->hdm)
			d->hdm = d->comp_off + CXL_CM_OFFSET + ptr;
	}
	if (!d->hdm) {
		step("caparray", 0, "header 0x%08x, caps:%s, no HDM decoder capability", hdr, list);
		return -1;
	}
	cap = hdm_read(d, CXL_HDM_CAP);
	d->ndec = hdm_decoder_count(cap);
	step("caparray", 1, "header 0x%08x caps:%s; HDM cap 0x%08x: %u decoder(s)", hdr, list, cap,
	     d->ndec);
	return 0;
}

/* CXL r3.1 8.1.3.8 DVSEC Range 1 Size: the memory the guest may decode */
static void read_region_size(struct dev *d)
{
	unsigned b = d->dvsec_dev;
	uint32_t hi = cfg_read(d, b + CXL_DVSEC_RANGE_SIZE_HI(0), 4);
	uint32_t lo = cfg_read(d, b + CXL_DVSEC_RANGE_SIZE_LO(0), 4);

	d->region_size = ((uint64_t)hi << 32) | (lo & CXL_DVSEC_RANGE_SIZE_LO_MASK);
	printf("  DVSEC range1 size 0x%" PRIx64 " (size_lo 0x%08x: valid=%u active=%u)\n",
	       d->region_size, lo, !!(lo & CXL_DVSEC_RANGE_INFO_VALID),
	       !!(lo & CXL_DVSEC_RANGE_ACTIVE));
	if (!d->region_size)
		d->region_size = VCXL_SZ_256M;
}

/* The guest HPA for decoder 0: the first CXL window (CXL topology) or 64 GiB. */
static uint64_t pick_hpa(void)
{
	FILE *f = fopen("/proc/iomem", "r");
	char line[256];
	uint64_t base = DEFAULT_HPA;

	if (opt_hpa)
		return opt_hpa;
	if (!f)
		return base;
	while (fgets(line, sizeof(line), f)) {
		unsigned long long s, e;

		if (!strstr(line, "CXL Window"))
			continue;
		if (sscanf(line, " %llx-%llx", &s, &e) == 2) {
			base = (s + CXL_HDM_GRANULE - 1) & ~(CXL_HDM_GRANULE - 1);
			break;
		}
	}
	fclose(f);
	return base;
}

/* CXL r3.1 8.2.4.20.2 HDM Decoder Enable; 8.1.3.2 DVSEC Control Mem_Enable */
static int step_enable(struct dev *d)
{
	unsigned ctl_off = d->dvsec_dev + CXL_DVSEC_CTRL;
	uint32_t g, ctl, cmd;

	/* Memory decode + bus mastering: MSI-X and DMA need them */
	cmd = cfg_read(d, PCI_COMMAND, 2);
	cfg_write(d, PCI_COMMAND, 2, cmd | PCI_COMMAND_MEMORY | PCI_COMMAND_MASTER);
	hdm_write(d, CXL_HDM_GLOBAL_CTRL, hdm_read(d, CXL_HDM_GLOBAL_CTRL) | CXL_HDM_GCTRL_ENABLE);
	g = hdm_read(d, CXL_HDM_GLOBAL_CTRL);
	ctl = cfg_read(d, ctl_off, 2);
	cfg_write(d, ctl_off, 2, ctl | CXL_DVSEC_CTRL_MEM_EN);
	ctl = cfg_read(d, ctl_off, 2);
	if (!(g & CXL_HDM_GCTRL_ENABLE) || !(ctl & CXL_DVSEC_CTRL_MEM_EN)) {
		step("enable", 0, "HDM global ctrl 0x%08x, DVSEC control 0x%04x (lock 0x%x)", g,
		     ctl, cfg_read(d, d->dvsec_dev + CXL_DVSEC_LOCK, 2));
		return -1;
	}
	step("enable", 1,
	     "HDM Decoder Enable set (global ctrl 0x%08x), Mem_Enable set "
	     "(DVSEC control 0x%04x)",
	     g, ctl);
	return 0;
}

/* Program decoder n as Linux setup_hw_decoder() does (CXL r3.1 8.2.4.20.12) */
static uint32_t program_decoder(struct dev *d, unsigned n, uint64_t base, uint64_t size,
				uint64_t skip, unsigned *polls)
{
	uint32_t ctrl = hdm_read(d, CXL_HDM_DEC_CTRL(n));
	unsigned i;

	ctrl &= ~(CXL_HDM_DEC_CTRL_IG | CXL_HDM_DEC_CTRL_IW | CXL_HDM_DEC_CTRL_HOSTONLY);
	ctrl |= VCXL_FIELD_PREP(CXL_HDM_DEC_CTRL_IW, CXL_HDM_IW_1) | CXL_HDM_DEC_CTRL_COMMIT;
	hdm_write(d, CXL_HDM_DEC_BASE_HI(n), (uint32_t)(base >> 32));
	hdm_write(d, CXL_HDM_DEC_BASE_LO(n), (uint32_t)base);
	hdm_write(d, CXL_HDM_DEC_SIZE_HI(n), (uint32_t)(size >> 32));
	hdm_write(d, CXL_HDM_DEC_SIZE_LO(n), (uint32_t)size);
	hdm_write(d, CXL_HDM_DEC_SKIP_HI(n), (uint32_t)(skip >> 32));
	hdm_write(d, CXL_HDM_DEC_SKIP_LO(n), (uint32_t)skip);
	hdm_write(d, CXL_HDM_DEC_CTRL(n), ctrl);
	/* cxld_await_commit(): Committed or Error Not Committed within ~20 ms */
	for (i = 0; i < COMMIT_POLLS; i++) {
		ctrl = hdm_read(d, CXL_HDM_DEC_CTRL(n));
		if (ctrl & (CXL_HDM_DEC_CTRL_COMMITTED | CXL_HDM_DEC_CTRL_COMMIT_ERR))
			break;
		sleep_ms(1);
	}
	*polls = i + 1;
	return ctrl;
}

/* Linux cxl_decoder_reset(): clear Commit, then zero size and base */
static uint32_t decommit_decoder(struct dev *d, unsigned n)
{
	uint32_t ctrl = hdm_read(d, CXL_HDM_DEC_CTRL(n));

	hdm_write(d, CXL_HDM_DEC_CTRL(n), ctrl & ~CXL_HDM_DEC_CTRL_COMMIT);
	hdm_write(d, CXL_HDM_DEC_SIZE_HI(n), 0);
	hdm_write(d, CXL_HDM_DEC_SIZE_LO(n), 0);
	hdm_write(d, CXL_HDM_DEC_BASE_HI(n), 0);
	hdm_write(d, CXL_HDM_DEC_BASE_LO(n), 0);
	return hdm_read(d, CXL_HDM_DEC_CTRL(n));
}

static bool committed_ok(uint32_t ctrl)
{
	return (ctrl & CXL_HDM_DEC_CTRL_COMMITTED) && !(ctrl & CXL_HDM_DEC_CTRL_COMMIT_ERR);
}

static bool commit_failed(uint32_t ctrl)
{
	return !(ctrl & CXL_HDM_DEC_CTRL_COMMITTED) && (ctrl & CXL_HDM_DEC_CTRL_COMMIT_ERR);
}

/* Decoder m+1 must not commit before decoder m (CXL r3.1 8.2.4.20.12) */
static void step_commit_order(struct dev *d)
{
	unsigned polls;
	uint32_t ctrl;

	if (d->ndec < 2) {
		step("commit-out-of-order", -1, "device offers %u decoder", d->ndec);
		return;
	}
	ctrl = program_decoder(d, 1, d->hpa + d->region_size, CXL_HDM_GRANULE, 0, &polls);
	step("commit-out-of-order", commit_failed(ctrl),
	     "decoder 1 before decoder 0: ctrl 0x%08x (want Error Not Committed) after %u poll(s)",
	     ctrl, polls);
	ctrl = decommit_decoder(d, 1);
	printf("  decoder 1 decommitted: ctrl 0x%08x\n", ctrl);
}

static int step_commit(struct dev *d, const char *name)
{
	unsigned polls;
	uint32_t ctrl = program_decoder(d, 0, d->hpa, d->region_size, 0, &polls);
	uint64_t base = ((uint64_t)hdm_read(d, CXL_HDM_DEC_BASE_HI(0)) << 32) |
			hdm_read(d, CXL_HDM_DEC_BASE_LO(0));
	uint64_t size = ((uint64_t)hdm_read(d, CXL_HDM_DEC_SIZE_HI(0)) << 32) |
			hdm_read(d, CXL_HDM_DEC_SIZE_LO(0));
	bool ok = committed_ok(ctrl) && base == d->hpa && size == d->region_size;

	step(name, ok,
	     "decoder 0 base 0x%" PRIx64 " size 0x%" PRIx64 " ctrl 0x%08x after %u poll(s)", base,
	     size, ctrl, polls);
	return ok ? 0 : -1;
}

/* A commit the device must refuse: a decoder larger than the CXL region. */
static void step_bad_commit(struct dev *d)
{
	unsigned polls;
	uint32_t ctrl = decommit_decoder(d, 0);
	bool gone = !(ctrl & CXL_HDM_DEC_CTRL_COMMITTED);

	step("decommit", gone, "decoder 0 ctrl 0x%08x after clearing Commit", ctrl);
	ctrl = program_decoder(d, 0, d->hpa, d->region_size + CXL_HDM_GRANULE, 0, &polls);
	step("commit-oversize", commit_failed(ctrl),
	     "size 0x%" PRIx64 " > region 0x%" PRIx64 ": ctrl 0x%08x (want Error Not Committed)",
	     (uint64_t)(d->region_size + CXL_HDM_GRANULE), d->region_size, ctrl);
	decommit_decoder(d, 0);
}

/* BAR0 outside the component block is plain device RAM, mapped straight through */
static void step_bar_ram(struct dev *d)
{
	unsigned bar = d->comp_bar;
	uint64_t start, i, bad = 0;

	start = d->comp_off >= RAM_TEST_LEN ? 0 : d->comp_off + CXL_COMPONENT_BLOCK_SIZE;
	if (start + RAM_TEST_LEN > d->bar_len[bar]) {
		step("bar-ram", -1, "no RAM outside the component block in BAR%u", bar);
		return;
	}
	for (i = 0; i < RAM_TEST_LEN; i += 8)
		mmio_write64(d, bar, start + i, 0xa5a5000000000000ull ^ (start + i));
	for (i = 0; i < RAM_TEST_LEN; i += 8)
		if (mmio_read64(d, bar, start + i) != (0xa5a5000000000000ull ^ (start + i)))
			bad++;
	step("bar-ram", !bad, "BAR%u [0x%" PRIx64 ", +0x%llx): %" PRIu64 " bad qword(s)", bar,
	     start, RAM_TEST_LEN, bad);
}

/* A locked page of our own memory and its guest-physical address (DMA target) */
static int setup_dma_page(struct dev *d)
{
	long psz = sysconf(_SC_PAGESIZE);
	uint64_t ent = 0;
	int fd;
	void *p;

	p = mmap(NULL, psz, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_POPULATE, -1,
		 0);
	if (p == MAP_FAILED || mlock(p, psz))
		return -errno;
	memset(p, 0, psz);
	fd = open("/proc/self/pagemap", O_RDONLY);
	if (fd < 0)
		return -errno;
	if (pread(fd, &ent, 8, ((uintptr_t)p / psz) * 8) != 8)
		ent = 0;
	close(fd);
	if (!(ent >> 63) || !(ent & ((1ull << 55) - 1)))
		return -EIO;
	d->page = p;
	d->page_pa = (ent & ((1ull << 55) - 1)) * psz;
	return 0;
}

static uint32_t accel_read(struct dev *d, unsigned reg)
{
	return mmio_read32(d, 2, reg);
}

static void accel_write(struct dev *d, unsigned reg, uint32_t v)
{
	mmio_write32(d, 2, reg, v);
}

static void accel_write64(struct dev *d, unsigned reg, uint64_t v)
{
	accel_write(d, reg, (uint32_t)v);
	accel_write(d, reg + 4, (uint32_t)(v >> 32));
}

/* Start one job and wait for DONE/ERROR; returns the final status. */
static uint32_t run_job(struct dev *d, uint32_t op, uint32_t flags, uint64_t src, uint64_t dst,
			uint64_t len, uint64_t pattern, unsigned *ms)
{
	uint64_t t0 = now_ms();
	uint32_t st;

	accel_write(d, ACCEL_REG_STATUS, ACCEL_STATUS_DONE | ACCEL_STATUS_ERROR);
	accel_write(d, ACCEL_REG_JOB_OP, op);
	accel_write(d, ACCEL_REG_JOB_FLAGS, flags);
	accel_write64(d, ACCEL_REG_JOB_SRC, src);
	accel_write64(d, ACCEL_REG_JOB_DST, dst);
	accel_write64(d, ACCEL_REG_JOB_LEN, len);
	accel_write64(d, ACCEL_REG_JOB_PATTERN, pattern);
	accel_write(d, ACCEL_REG_JOB_VECTOR, 0);
	accel_write(d, ACCEL_REG_DOORBELL, ACCEL_DOORBELL_GO);
	do {
		st = accel_read(d, ACCEL_REG_STATUS);
		if (st & (ACCEL_STATUS_DONE | ACCEL_STATUS_ERROR))
			break;
		sleep_ms(1);
	} while (now_ms() - t0 < JOB_TIMEOUT_MS);
	*ms = (unsigned)(now_ms() - t0);
	return st;
}

static bool job_done(uint32_t st)
{
	return (st & ACCEL_STATUS_DONE) && !(st & ACCEL_STATUS_ERROR);
}

static int step_accel_id(struct dev *d)
{
	uint32_t id, ver;

	if (map_bar(d, 2)) {
		step("accel-id", 0, "cannot map BAR2: %s", strerror(errno));
		return -1;
	}
	id = accel_read(d, ACCEL_REG_ID);
	ver = accel_read(d, ACCEL_REG_VERSION);
	step("accel-id", id == ACCEL_ID_VALUE, "BAR2 id 0x%08x version 0x%08x", id, ver);
	return id == ACCEL_ID_VALUE ? 0 : -1;
}

/* Job engine FILL of device memory (DPA); the host checks its backing file. */
static void step_fill_dpa(struct dev *d)
{
	uint32_t before = accel_read(d, ACCEL_REG_JOBS_DONE), after, st;
	unsigned ms;

	st = run_job(d, ACCEL_OP_FILL, 0, 0, FILL_DPA, FILL_LEN, FILL_PATTERN, &ms);
	after = accel_read(d, ACCEL_REG_JOBS_DONE);
	step("job-fill-dpa", job_done(st) && after == before + 1,
	     "dpa 0x%llx len 0x%llx pattern 0x%llx: status 0x%x jobs_done %u->%u in %u ms",
	     FILL_DPA, FILL_LEN, FILL_PATTERN, st, before, after, ms);
	printf("HOSTCHECK fill dpa=0x%llx len=0x%llx pattern=0x%016llx\n", FILL_DPA, FILL_LEN,
	       FILL_PATTERN);
}

static uint64_t page_mismatch(struct dev *d, uint64_t len, uint64_t pattern)
{
	uint64_t i, bad = 0;

	__sync_synchronize();
	for (i = 0; i < len; i += 8)
		if (*(volatile uint64_t *)(d->page + i) != pattern)
			bad++;
	return bad;
}

/* Device DMA into guest RAM: FILL host memory, then COPY device memory to it. */
static void step_dma(struct dev *d)
{
	uint64_t len = MSI_SLOT_OFF, bad;
	uint32_t st;
	unsigned ms;

	st = run_job(d, ACCEL_OP_FILL, ACCEL_JOBF_DST_HOST, 0, d->page_pa, len, HOST_PATTERN, &ms);
	bad = page_mismatch(d, len, HOST_PATTERN);
	step("dma-fill-host", job_done(st) && !bad,
	     "guest PA 0x%" PRIx64 " len 0x%" PRIx64 ": status 0x%x, %" PRIu64
	     " bad qword(s), %u ms",
	     d->page_pa, len, st, bad, ms);
	st = run_job(d, ACCEL_OP_COPY, ACCEL_JOBF_DST_HOST, FILL_DPA, d->page_pa, len, 0, &ms);
	bad = page_mismatch(d, len, FILL_PATTERN);
	step("dma-copy-dpa-to-host", job_done(st) && !bad,
	     "dpa 0x%llx -> guest PA 0x%" PRIx64 ": status 0x%x, %" PRIu64 " bad qword(s), %u ms",
	     FILL_DPA, d->page_pa, st, bad, ms);
}

static int find_msix(struct dev *d)
{
	unsigned off = d->cfg[PCI_CAPABILITY_LIST] & ~3u, guard = 0;

	while (off && off < 0x100 && guard++ < 48) {
		if (d->cfg[off + PCI_CAP_LIST_ID] == PCI_CAP_ID_MSIX) {
			uint32_t t, p;

			d->msix_cap = off;
			memcpy(&t, d->cfg + off + PCI_MSIX_TABLE, 4);
			memcpy(&p, d->cfg + off + PCI_MSIX_PBA, 4);
			d->msix_tbl_bar = t & PCI_MSIX_TABLE_BIR;
			d->msix_tbl_off = t & PCI_MSIX_TABLE_OFFSET;
			d->msix_pba_bar = p & PCI_MSIX_PBA_BIR;
			d->msix_pba_off = p & PCI_MSIX_PBA_OFFSET;
			return 0;
		}
		off = d->cfg[off + PCI_CAP_LIST_NEXT] & ~3u;
	}
	return -ENOENT;
}

static volatile uint32_t *msi_slot(struct dev *d)
{
	return (volatile uint32_t *)(d->page + MSI_SLOT_OFF);
}

static bool wait_msi(struct dev *d, uint32_t want, unsigned *ms)
{
	uint64_t t0 = now_ms();

	do {
		__sync_synchronize();
		if (*msi_slot(d) == want)
			break;
		sleep_ms(1);
	} while (now_ms() - t0 < MSI_TIMEOUT_MS);
	*ms = (unsigned)(now_ms() - t0);
	return *msi_slot(d) == want;
}

static void msix_vector_ctrl(struct dev *d, uint32_t ctrl)
{
	mmio_write32(d, d->msix_tbl_bar, d->msix_tbl_off + PCI_MSIX_ENTRY_VECTOR_CTRL, ctrl);
}

/* PCIe r6 6.1.4 MSI-X: vector 0 delivered, then masked -> PBA pending -> unmask */
static void step_msix(struct dev *d)
{
	uint32_t flags, st, pba;
	unsigned ms, mctl;
	bool got;

	if (find_msix(d) || map_bar(d, d->msix_tbl_bar) || map_bar(d, d->msix_pba_bar)) {
		step("msix", 0, "no usable MSI-X capability");
		return;
	}
	mctl = d->msix_cap + PCI_MSIX_FLAGS;
	/* Entry 0: address = our page, data = magic, unmasked; then enable MSI-X */
	msix_vector_ctrl(d, PCI_MSIX_ENTRY_CTRL_MASKBIT);
	mmio_write32(d, d->msix_tbl_bar, d->msix_tbl_off + PCI_MSIX_ENTRY_LOWER_ADDR,
		     (uint32_t)(d->page_pa + MSI_SLOT_OFF));
	mmio_write32(d, d->msix_tbl_bar, d->msix_tbl_off + PCI_MSIX_ENTRY_UPPER_ADDR,
		     (uint32_t)((d->page_pa + MSI_SLOT_OFF) >> 32));
	mmio_write32(d, d->msix_tbl_bar, d->msix_tbl_off + PCI_MSIX_ENTRY_DATA, MSI_MAGIC | 1);
	flags = cfg_read(d, mctl, 2);
	cfg_write(d, mctl, 2, (flags & ~PCI_MSIX_FLAGS_MASKALL) | PCI_MSIX_FLAGS_ENABLE);
	msix_vector_ctrl(d, 0);
	*msi_slot(d) = 0;

	st = run_job(d, ACCEL_OP_FILL, ACCEL_JOBF_IRQ, 0, FILL_DPA + FILL_LEN, 0x1000, FILL_PATTERN,
		     &ms);
	got = wait_msi(d, MSI_MAGIC | 1, &ms);
	step("msix-irq", job_done(st) && got,
	     "job with ACCEL_JOBF_IRQ vector 0: status 0x%x, MSI-X message %s (slot 0x%08x) "
	     "after %u ms",
	     st, got ? "delivered" : "NOT delivered", *msi_slot(d), ms);

	/* Masked: the message must be held and arrive on unmask */
	pba = mmio_read32(d, d->msix_pba_bar, d->msix_pba_off);
	step("msix-no-stale-pending", !(pba & 1),
	     "PBA 0x%08x after the delivered message (want bit 0 clear)", pba);
	msix_vector_ctrl(d, PCI_MSIX_ENTRY_CTRL_MASKBIT);
	mmio_write32(d, d->msix_tbl_bar, d->msix_tbl_off + PCI_MSIX_ENTRY_DATA, MSI_MAGIC | 2);
	*msi_slot(d) = 0;
	st = run_job(d, ACCEL_OP_FILL, ACCEL_JOBF_IRQ, 0, FILL_DPA + FILL_LEN, 0x1000, FILL_PATTERN,
		     &ms);
	/* Held while masked: give the message time to (wrongly) arrive */
	sleep_ms(200);
	got = *msi_slot(d) != 0;
	pba = mmio_read32(d, d->msix_pba_bar, d->msix_pba_off);
	step("msix-masked-held", job_done(st) && !got,
	     "vector 0 masked: status 0x%x, slot 0x%08x (want 0); PBA reads 0x%08x (QEMU "
	     "keeps the pending state itself; not asserted)",
	     st, *msi_slot(d), pba);
	msix_vector_ctrl(d, 0);
	got = wait_msi(d, MSI_MAGIC | 2, &ms);
	pba = mmio_read32(d, d->msix_pba_bar, d->msix_pba_off);
	step("msix-unmask-delivers", got && !(pba & 1),
	     "after unmask: slot 0x%08x after %u ms, PBA 0x%08x", *msi_slot(d), ms, pba);

	msix_vector_ctrl(d, PCI_MSIX_ENTRY_CTRL_MASKBIT);
	cfg_write(d, mctl, 2, cfg_read(d, mctl, 2) & ~PCI_MSIX_FLAGS_ENABLE);
}

/* Function reset through the kernel (sysfs `reset`, its first reset_method).
 * An FLR leaves CXL.cache/CXL.mem state alone (CXL r3.1 9.5): the decoder and
 * the DVSEC Control stay as they were. Any other method reaches vcxl as
 * VFIO_DEVICE_RESET (a conventional reset): the virtual decoder comes back
 * decommitted with HDM decode disabled (CXL r3.1 8.2.4.20.12). */
static void step_reset(struct dev *d)
{
	char path[PATH_LEN], method[128] = "?";
	uint32_t ctrl, g, ctrl0, dvctl0, dvctl;
	bool flr;
	int fd;
	ssize_t n;

	snprintf(path, sizeof(path), SYSFS_PCI "/%s/reset_method", d->bdf);
	fd = open(path, O_RDONLY);
	if (fd >= 0) {
		n = read(fd, method, sizeof(method) - 1);
		method[n > 0 ? n - 1 : 0] = 0;
		close(fd);
	}
	flr = !strncmp(method, "flr", 3) && (method[3] == 0 || method[3] == ' ');
	ctrl0 = hdm_read(d, CXL_HDM_DEC_CTRL(0));
	dvctl0 = cfg_read(d, d->dvsec_dev + CXL_DVSEC_CTRL, 2);
	snprintf(path, sizeof(path), SYSFS_PCI "/%s/reset", d->bdf);
	fd = open(path, O_WRONLY);
	if (fd < 0) {
		step("reset", 0, "no %s (reset_method '%s'): %s", path, method, strerror(errno));
		return;
	}
	n = write(fd, "1", 1);
	close(fd);
	if (n != 1) {
		step("reset", 0, "write %s (reset_method '%s'): %s", path, method, strerror(errno));
		return;
	}
	ctrl = hdm_read(d, CXL_HDM_DEC_CTRL(0));
	g = hdm_read(d, CXL_HDM_GLOBAL_CTRL);
	dvctl = cfg_read(d, d->dvsec_dev + CXL_DVSEC_CTRL, 2);
	if (flr)
		step("reset", ctrl == ctrl0 && dvctl == dvctl0,
		     "reset_method '%s' (FLR): decoder 0 ctrl 0x%08x (was 0x%08x), DVSEC control "
		     "0x%04x (was 0x%04x), global ctrl 0x%08x: want both kept",
		     method, ctrl, ctrl0, dvctl, dvctl0, g);
	else
		step("reset", !(ctrl & (CXL_HDM_DEC_CTRL_COMMITTED | CXL_HDM_DEC_CTRL_COMMIT)),
		     "reset_method '%s'; after reset decoder 0 ctrl 0x%08x (want not committed), "
		     "global ctrl 0x%08x, DVSEC control 0x%04x",
		     method, ctrl, g, dvctl);
}

/* ---- optional: the device under vfio-pci in the guest (needs intel_iommu=on) ---- */

#define VFIO_DMA_IOVA 0x40000000ull /* any IOVA: the guest IOMMU translates it */

struct vfio_ctx {
	int container, group, dev, efd;
	uint64_t bar2_off;
	void *buf;
};

static int vfio_bind(struct dev *d, char *group, size_t glen)
{
	char path[PATH_LEN], link[PATH_LEN];
	ssize_t n;
	int fd;

	snprintf(path, sizeof(path), SYSFS_PCI "/%s/driver_override", d->bdf);
	fd = open(path, O_WRONLY);
	if (fd < 0 || write(fd, "vfio-pci", 8) != 8) {
		if (fd >= 0)
			close(fd);
		return -errno;
	}
	close(fd);
	fd = open("/sys/bus/pci/drivers_probe", O_WRONLY);
	if (fd < 0)
		return -errno;
	n = write(fd, d->bdf, strlen(d->bdf));
	close(fd);
	if (n < 0)
		return -errno;
	snprintf(path, sizeof(path), SYSFS_PCI "/%s/iommu_group", d->bdf);
	n = readlink(path, link, sizeof(link) - 1);
	if (n <= 0)
		return -ENOENT;
	link[n] = 0;
	snprintf(group, glen, "/dev/vfio/%s", strrchr(link, '/') + 1);
	return 0;
}

static int vfio_open(struct dev *d, struct vfio_ctx *v, const char *group)
{
	struct vfio_group_status gs = {.argsz = sizeof(gs)};
	struct vfio_region_info ri = {.argsz = sizeof(ri), .index = VFIO_PCI_BAR2_REGION_INDEX};

	v->container = open("/dev/vfio/vfio", O_RDWR);
	v->group = open(group, O_RDWR);
	if (v->container < 0 || v->group < 0)
		return -errno;
	if (ioctl(v->group, VFIO_GROUP_GET_STATUS, &gs) || !(gs.flags & VFIO_GROUP_FLAGS_VIABLE))
		return -EBUSY;
	if (ioctl(v->group, VFIO_GROUP_SET_CONTAINER, &v->container) ||
	    ioctl(v->container, VFIO_SET_IOMMU, VFIO_TYPE1v2_IOMMU))
		return -errno;
	v->dev = ioctl(v->group, VFIO_GROUP_GET_DEVICE_FD, d->bdf);
	if (v->dev < 0)
		return -errno;
	if (ioctl(v->dev, VFIO_DEVICE_GET_REGION_INFO, &ri))
		return -errno;
	v->bar2_off = ri.offset;
	return 0;
}

static uint32_t vfio_rd(struct vfio_ctx *v, unsigned reg)
{
	uint32_t x = ~0u;

	if (pread(v->dev, &x, 4, v->bar2_off + reg) != 4)
		return ~0u;
	return x;
}

static void vfio_wr(struct vfio_ctx *v, unsigned reg, uint32_t x)
{
	if (pwrite(v->dev, &x, 4, v->bar2_off + reg) != 4)
		fprintf(stderr, "vfio write 0x%x: %s\n", reg, strerror(errno));
}

static void vfio_wr64(struct vfio_ctx *v, unsigned reg, uint64_t x)
{
	vfio_wr(v, reg, (uint32_t)x);
	vfio_wr(v, reg + 4, (uint32_t)(x >> 32));
}

/* DMA mapping in the guest IOMMU + MSI-X vector 0 as an eventfd */
static int vfio_setup_dma_irq(struct vfio_ctx *v)
{
	struct vfio_iommu_type1_dma_map map = {.argsz = sizeof(map)};
	char irqbuf[sizeof(struct vfio_irq_set) + sizeof(int32_t)];
	struct vfio_irq_set *irq = (struct vfio_irq_set *)irqbuf;
	int32_t fd;

	v->buf = mmap(NULL, 4096, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (v->buf == MAP_FAILED)
		return -errno;
	memset(v->buf, 0, 4096);
	map.flags = VFIO_DMA_MAP_FLAG_READ | VFIO_DMA_MAP_FLAG_WRITE;
	map.vaddr = (uintptr_t)v->buf;
	map.iova = VFIO_DMA_IOVA;
	map.size = 4096;
	if (ioctl(v->container, VFIO_IOMMU_MAP_DMA, &map))
		return -errno;
	v->efd = eventfd(0, EFD_NONBLOCK);
	if (v->efd < 0)
		return -errno;
	fd = v->efd;
	irq->argsz = sizeof(irqbuf);
	irq->flags = VFIO_IRQ_SET_DATA_EVENTFD | VFIO_IRQ_SET_ACTION_TRIGGER;
	irq->index = VFIO_PCI_MSIX_IRQ_INDEX;
	irq->start = 0;
	irq->count = 1;
	memcpy(irq->data, &fd, sizeof(fd));
	if (ioctl(v->dev, VFIO_DEVICE_SET_IRQS, irq))
		return -errno;
	return 0;
}

/* The job engine through vfio-pci: FILL into IOMMU-mapped memory, MSI-X to an eventfd */
static void vfio_job(struct vfio_ctx *v)
{
	struct pollfd pfd = {.fd = v->efd, .events = POLLIN};
	uint64_t t0 = now_ms(), cnt = 0, bad = 0, i;
	uint32_t st = 0;
	int pr;

	vfio_wr(v, ACCEL_REG_STATUS, ACCEL_STATUS_DONE | ACCEL_STATUS_ERROR);
	vfio_wr(v, ACCEL_REG_JOB_OP, ACCEL_OP_FILL);
	vfio_wr(v, ACCEL_REG_JOB_FLAGS, ACCEL_JOBF_DST_HOST | ACCEL_JOBF_IRQ);
	vfio_wr64(v, ACCEL_REG_JOB_DST, VFIO_DMA_IOVA);
	vfio_wr64(v, ACCEL_REG_JOB_LEN, 4096);
	vfio_wr64(v, ACCEL_REG_JOB_PATTERN, HOST_PATTERN);
	vfio_wr(v, ACCEL_REG_JOB_VECTOR, 0);
	vfio_wr(v, ACCEL_REG_DOORBELL, ACCEL_DOORBELL_GO);
	pr = poll(&pfd, 1, MSI_TIMEOUT_MS);
	if (pr == 1 && read(v->efd, &cnt, sizeof(cnt)) != sizeof(cnt))
		cnt = 0;
	st = vfio_rd(v, ACCEL_REG_STATUS);
	for (i = 0; i < 4096; i += 8)
		if (*(volatile uint64_t *)((uint8_t *)v->buf + i) != HOST_PATTERN)
			bad++;
	step("vfio-msix-eventfd", pr == 1 && cnt >= 1,
	     "MSI-X vector 0 eventfd %s (count %" PRIu64 ") after %u ms, status 0x%x",
	     pr == 1 ? "signalled" : "NOT signalled", cnt, (unsigned)(now_ms() - t0), st);
	step("vfio-dma-iommu", job_done(st) && !bad,
	     "FILL to IOVA 0x%llx through the guest IOMMU: %" PRIu64 " bad qword(s)", VFIO_DMA_IOVA,
	     bad);
}

static void step_vfio(struct dev *d)
{
	struct vfio_ctx v = {.container = -1, .group = -1, .dev = -1, .efd = -1};
	struct vfio_device_info di = {.argsz = sizeof(di)};
	char group[PATH_LEN];
	int rc;

	rc = vfio_bind(d, group, sizeof(group));
	if (!rc)
		rc = vfio_open(d, &v, group);
	if (!rc && ioctl(v.dev, VFIO_DEVICE_GET_INFO, &di))
		rc = -errno;
	step("vfio-open", !rc, "%s via %s: %s (flags 0x%x, %u regions, %u irqs)", d->bdf, group,
	     rc ? strerror(-rc) : "ok", di.flags, di.num_regions, di.num_irqs);
	if (rc)
		return;
	rc = vfio_setup_dma_irq(&v);
	step("vfio-dma-irq-setup", !rc, "MAP_DMA iova 0x%llx + SET_IRQS MSI-X 0: %s", VFIO_DMA_IOVA,
	     rc ? strerror(-rc) : "ok");
	if (!rc)
		vfio_job(&v);
	close(v.dev);
	close(v.group);
	close(v.container);
}

static void usage(const char *argv0)
{
	fprintf(stderr,
		"usage: %s [--bdf BDF] [--hpa ADDR] [--no-reset] [--vfio] [--expect-absent]\n",
		argv0);
}

static int parse_args(int argc, char **argv)
{
	int i;

	for (i = 1; i < argc; i++) {
		if (!strcmp(argv[i], "--bdf") && i + 1 < argc)
			want_bdf = argv[++i];
		else if (!strcmp(argv[i], "--hpa") && i + 1 < argc)
			opt_hpa = strtoull(argv[++i], NULL, 0);
		else if (!strcmp(argv[i], "--no-reset"))
			do_reset = false;
		else if (!strcmp(argv[i], "--vfio"))
			do_vfio = true;
		else if (!strcmp(argv[i], "--expect-absent"))
			expect_absent = true;
		else
			return -1;
	}
	return 0;
}

static void run_decoder_steps(struct dev *d)
{
	read_region_size(d);
	d->hpa = pick_hpa();
	printf("  guest HPA for decoder 0: 0x%" PRIx64 ", size 0x%" PRIx64 "\n", d->hpa,
	       d->region_size);
	if (step_enable(d))
		return;
	step_commit_order(d);
	if (step_commit(d, "commit"))
		return;
	step_bad_commit(d);
	step_commit(d, "recommit");
}

static void run_accel_steps(struct dev *d)
{
	int rc;

	if (step_accel_id(d))
		return;
	step_fill_dpa(d);
	rc = setup_dma_page(d);
	if (rc) {
		step("dma-page", 0, "no guest-physical page for DMA: %s", strerror(-rc));
		return;
	}
	if (do_vfio) {
		/* With the guest IOMMU on, untranslated guest-physical DMA is blocked */
		step("dma-fill-host", -1, "guest IOMMU on: DMA is checked through vfio-pci");
		step("msix-irq", -1, "guest IOMMU on: MSI-X is checked through vfio-pci");
		return;
	}
	step_dma(d);
	step_msix(d);
}

int main(int argc, char **argv)
{
	static struct dev d;

	setvbuf(stdout, NULL, _IOLBF, 0);
	if (parse_args(argc, argv)) {
		usage(argv[0]);
		return 2;
	}
	if (step_find(&d) == 0 && step_config(&d) == 0 && step_regloc(&d) == 0 &&
	    step_caparray(&d) == 0) {
		run_decoder_steps(&d);
		step_bar_ram(&d);
		run_accel_steps(&d);
		if (do_reset)
			step_reset(&d);
		if (do_vfio)
			step_vfio(&d);
	}
	printf("RESULT: %u ok, %u failed\n", n_ok, n_fail);
	return n_fail ? 1 : 0;
}
