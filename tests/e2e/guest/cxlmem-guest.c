// SPDX-License-Identifier: BSD-3-Clause
/*
 * cxlmem-guest: the guest half of the CXL.mem end-to-end proof (e2e-cxlmem,
 * make bench-guest, make demo). It runs as root in a busybox initramfs of a
 * QEMU guest where the vcxl accelerator (8086:0d94) sits under a CXL root
 * port, attached with a CXL-aware QEMU's vfio-user-pci, no driver bound.
 *
 * It finds the device's CXL fixed memory window in the ACPI CEDT (the CFMWS
 * whose targets include the device's host bridge UID), commits HDM decoders
 * inside it as Linux would, and accesses the window through /dev/mem: the
 * committed range must be the device memory at the decoder's DPA, and a
 * decommitted range must not reach it.
 *
 * The host seeds device memory before boot: at every seed DPA S (SEED_DPAS)
 * the qword at S + 8i holds SEED ^ (S + 8i). Reading SEED ^ dpa at a window
 * address therefore proves which DPA that address maps. What the guest
 * writes is checked on the host: "HOSTCHECK mem dpa= len= pattern= expect="
 * lines (qword i of the range is pattern + i; present: all of them; absent:
 * none of them).
 *
 * Modes: the proof (default), --bench (bandwidth: the committed window,
 * guest RAM, and a QEMU cxl-type3 window when --t3 finds one), --demo (a
 * short narrated run), --fw (two devices of a --firmware-committed server:
 * decoders committed and locked by the VM's firmware, an overlap refused and
 * retried when it goes, unplug; "UNPLUG-READY <bdf>" asks the host for
 * device_del). Output: "STEP <name>: ok|FAIL|skip <detail>",
 * "HOSTCHECK ...", "BENCH <what> <op> <MB/s> <bytes>" and a final
 * "RESULT: <n> ok, <m> failed".
 *
 * Build (static: the initramfs has no libc for it):
 *   gcc -static -O2 -Wall -Wextra -Werror -Iinclude -Isrc -o cxlmem-guest cxlmem-guest.c
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <limits.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include <linux/pci_regs.h>

#include "guest-step.h"
#include "cxl/cxl_regs.h"
#include "model/model.h"

#define SYSFS_PCI "/sys/bus/pci/devices"
#define CEDT_PATH "/sys/firmware/acpi/tables/CEDT"
#define PATH_LEN  512

/* QEMU's cxl-type3 memory expander (hw/mem/cxl_type3.c) */
#define QEMU_T3_VENDOR 0x8086
#define QEMU_T3_DEVICE 0x0d93

/* Host-seeded device memory (see run-e2e-cxlmem.sh, which writes the same) */
#define SEED	      0x5345454443584c31ull /* "1LXCDEES" */
#define SEED_LEN      ((uint64_t)0x10000ull)
#define SEED_OFF      ((uint64_t)0x400000ull)	      /* seeds sit 4 MiB into each 256 MiB */
#define DEC_SIZE      ((uint64_t)VCXL_SZ_256M)	      /* every decoder in the proof */
#define DPA_DEC1      ((uint64_t)(2 * VCXL_SZ_256M))  /* decoder 1 after a 256 MiB DPA skip */
#define DPA_SKIPPED   ((uint64_t)(1 * VCXL_SZ_256M))  /* the skipped DPA range */
#define OUTSIDE_GAP   ((uint64_t)(64 * VCXL_SZ_256M)) /* past the window: a bad base */
#define REBASE_DELTA  ((uint64_t)(4 * VCXL_SZ_256M))  /* "another base": 1 GiB higher */
#define WRITE_LEN     ((uint64_t)0x8000ull)	      /* bytes per guest write check */
#define COMMIT_POLLS  20			      /* Linux cxld_await_commit(): 20 x 1 ms */
#define RESET_POLL_MS 2000			      /* CXL reset: Status2 Reset Complete */

/* ACPI 6.5 5.2.6 table header; CXL r3.1 9.18.1 CEDT structures */
#define ACPI_HDR_LEN	  36
#define ACPI_HDR_LENGTH	  4
#define CEDT_REC_TYPE	  0
#define CEDT_REC_LENGTH	  2
#define CEDT_TYPE_CFMWS	  1
#define CFMWS_BASE	  8 /* CXL r3.1 Table 9-22 */
#define CFMWS_SIZE	  16
#define CFMWS_ENIW	  24
#define CFMWS_TARGETS	  36
#define CFMWS_MAX	  8
#define CFMWS_MAX_TARGETS 16

struct window {
	uint64_t base, size;
	unsigned ntargets;
	uint32_t target[CFMWS_MAX_TARGETS];
};

struct dev {
	char bdf[64];
	int cfg_fd;
	uint8_t cfg[4096];
	size_t cfg_len;
	unsigned dvsec_dev, dvsec_regloc;
	unsigned comp_bar;
	uint64_t comp_off;
	volatile uint8_t *bar;
	size_t bar_len;
	uint64_t hdm; /* HDM capability, offset in the component BAR */
	unsigned ndec;
	uint64_t mem_size; /* DVSEC Range 1 size */
	long uid;	   /* ACPI _UID of the host bridge, -1 unknown */
};

static int mem_fd = -1;

static double now_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

static int read_sysfs(const char *path, char *buf, size_t len)
{
	int fd = open(path, O_RDONLY);
	ssize_t n;

	if (fd < 0)
		return -errno;
	n = read(fd, buf, len - 1);
	close(fd);
	if (n <= 0)
		return -EIO;
	buf[n] = 0;
	buf[strcspn(buf, "\n")] = 0;
	return 0;
}

static int write_sysfs(const char *path, const char *s)
{
	int fd = open(path, O_WRONLY);
	ssize_t n;

	if (fd < 0)
		return -errno;
	n = write(fd, s, strlen(s));
	close(fd);
	return n == (ssize_t)strlen(s) ? 0 : -errno;
}

/* ---- config space and the component block ---- */

static uint32_t cfg_read(struct dev *d, unsigned off, unsigned len)
{
	uint32_t v = 0;

	if (pread(d->cfg_fd, &v, len, off) != (ssize_t)len)
		return ~0u;
	return v;
}

static void cfg_write(struct dev *d, unsigned off, unsigned len, uint32_t v)
{
	if (pwrite(d->cfg_fd, &v, len, off) != (ssize_t)len)
		printf("  config write 0x%x: %s\n", off, strerror(errno));
}

static uint32_t hdm_read(struct dev *d, unsigned reg)
{
	return *(volatile uint32_t *)(d->bar + d->hdm + reg);
}

static void hdm_write(struct dev *d, unsigned reg, uint32_t v)
{
	*(volatile uint32_t *)(d->bar + d->hdm + reg) = v;
	__sync_synchronize();
}

/* The nth (0-based) vendor:device function in BDF order */
static int find_pci(unsigned long vendor, unsigned long device, unsigned nth, char *bdf, size_t len)
{
	DIR *dir = opendir(SYSFS_PCI);
	struct dirent *e;
	char path[PATH_LEN], buf[32], best[64] = "", floor[64] = "";
	int found = -ENODEV;

	if (!dir)
		return -errno;
	/* nth + 1 passes over the directory, each taking the least BDF above the last */
	for (unsigned pass = 0; pass <= nth; pass++) {
		found = -ENODEV;
		rewinddir(dir);
		best[0] = 0;
		while ((e = readdir(dir))) {
			if (e->d_name[0] == '.' || strlen(e->d_name) >= sizeof(best) ||
			    strlen(e->d_name) >= len ||
			    (floor[0] && strcmp(e->d_name, floor) <= 0) ||
			    (best[0] && strcmp(e->d_name, best) >= 0))
				continue;
			snprintf(path, sizeof(path), SYSFS_PCI "/%s/vendor", e->d_name);
			if (read_sysfs(path, buf, sizeof(buf)) || strtoul(buf, NULL, 16) != vendor)
				continue;
			snprintf(path, sizeof(path), SYSFS_PCI "/%s/device", e->d_name);
			if (read_sysfs(path, buf, sizeof(buf)) || strtoul(buf, NULL, 16) != device)
				continue;
			memcpy(best, e->d_name, strlen(e->d_name) + 1);
			found = 0;
		}
		if (found)
			break;
		memcpy(floor, best, sizeof(floor));
	}
	closedir(dir);
	if (!found)
		memcpy(bdf, best, strlen(best) + 1);
	return found;
}

/* The ACPI _UID of the device's host bridge: /sys/devices/pciDDDD:BB/firmware_node/uid */
static long host_bridge_uid(const char *bdf)
{
	char path[PATH_MAX], real[PATH_MAX], buf[32], *p, *end;

	snprintf(path, sizeof(path), SYSFS_PCI "/%s", bdf);
	if (!realpath(path, real))
		return -1;
	p = strstr(real, "/pci");
	if (!p)
		return -1;
	end = strchr(p + 1, '/');
	if (end)
		*end = 0;
	if (strlen(real) + sizeof("/firmware_node/uid") > sizeof(path))
		return -1;
	memcpy(path, real, strlen(real) + 1);
	strcat(path, "/firmware_node/uid");
	if (read_sysfs(path, buf, sizeof(buf)))
		return -1;
	return strtol(buf, NULL, 0);
}

/* PCIe r6 7.9.6 DVSEC; CXL r3.1 8.1.3 (Device DVSEC), 8.1.9 (Register Locator),
 * 8.2.4 (capability array) and 8.2.4.20 (HDM decoders). */
static int open_cxl_dev(struct dev *d, unsigned long vendor, unsigned long device, unsigned nth)
{
	char path[PATH_LEN];
	unsigned off = PCIE_EXT_CAP_START, guard = 0, e, len;
	uint32_t h1, hdr;
	struct stat st;
	void *p;
	int fd;

	memset(d, 0, sizeof(*d));
	d->cfg_fd = -1;
	if (find_pci(vendor, device, nth, d->bdf, sizeof(d->bdf)))
		return -ENODEV;
	snprintf(path, sizeof(path), SYSFS_PCI "/%s/config", d->bdf);
	d->cfg_fd = open(path, O_RDWR);
	if (d->cfg_fd < 0)
		return -errno;
	d->cfg_len = (size_t)pread(d->cfg_fd, d->cfg, sizeof(d->cfg), 0);
	if (d->cfg_len < 0x200 || d->cfg_len > sizeof(d->cfg))
		return -EIO;
	while (off && off + 12 <= d->cfg_len && guard++ < 64) {
		uint32_t h;
		uint16_t id;

		memcpy(&h, d->cfg + off, 4);
		if (!h || h == ~0u)
			break;
		memcpy(&h1, d->cfg + off + PCIE_DVSEC_HEADER1, 4);
		memcpy(&id, d->cfg + off + PCIE_DVSEC_HEADER2, 2);
		if (VCXL_FIELD_GET(PCIE_EXT_CAP_ID_MASK, h) == PCIE_EXT_CAP_ID_DVSEC &&
		    VCXL_FIELD_GET(PCIE_DVSEC_HDR1_VENDOR, h1) == CXL_VENDOR_ID) {
			if (id == CXL_DVSEC_ID_DEVICE)
				d->dvsec_dev = off;
			else if (id == CXL_DVSEC_ID_REG_LOCATOR)
				d->dvsec_regloc = off;
		}
		off = VCXL_FIELD_GET(PCIE_EXT_CAP_NEXT_MASK, h);
	}
	if (!d->dvsec_dev || !d->dvsec_regloc)
		return -ENOENT;
	memcpy(&h1, d->cfg + d->dvsec_regloc + PCIE_DVSEC_HEADER1, 4);
	len = VCXL_FIELD_GET(PCIE_DVSEC_HDR1_LEN, h1);
	d->comp_bar = ~0u;
	for (e = CXL_REGLOC_FIRST_ENTRY; e + CXL_REGLOC_ENTRY_SIZE <= len;
	     e += CXL_REGLOC_ENTRY_SIZE) {
		uint32_t lo, hi;

		memcpy(&lo, d->cfg + d->dvsec_regloc + e, 4);
		memcpy(&hi, d->cfg + d->dvsec_regloc + e + 4, 4);
		if (VCXL_FIELD_GET(CXL_REGLOC_BLOCK_ID, lo) != CXL_REGLOC_RBI_COMPONENT)
			continue;
		d->comp_bar = VCXL_FIELD_GET(CXL_REGLOC_BIR, lo);
		d->comp_off = ((uint64_t)hi << 32) | (lo & CXL_REGLOC_OFFSET_LO);
		break;
	}
	if (d->comp_bar > 5)
		return -ENOENT;
	snprintf(path, sizeof(path), SYSFS_PCI "/%s/resource%u", d->bdf, d->comp_bar);
	fd = open(path, O_RDWR | O_SYNC);
	if (fd < 0)
		return -errno;
	if (fstat(fd, &st) || st.st_size <= 0 ||
	    d->comp_off + CXL_COMPONENT_BLOCK_SIZE > (uint64_t)st.st_size) {
		close(fd);
		return -EINVAL;
	}
	p = mmap(NULL, (size_t)st.st_size, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	close(fd);
	if (p == MAP_FAILED)
		return -errno;
	d->bar = p;
	d->bar_len = (size_t)st.st_size;
	hdr = *(volatile uint32_t *)(d->bar + d->comp_off + CXL_CM_OFFSET);
	if (VCXL_FIELD_GET(CXL_CM_CAP_HDR_ID, hdr) != CXL_CM_CAP_ID_ARRAY)
		return -ENOENT;
	for (unsigned i = 1; i <= VCXL_FIELD_GET(CXL_CM_CAP_HDR_ARRAY_SIZE, hdr) && i < 64; i++) {
		uint32_t c = *(volatile uint32_t *)(d->bar + d->comp_off + CXL_CM_OFFSET + 4 * i);

		if (VCXL_FIELD_GET(CXL_CM_CAP_HDR_ID, c) == CXL_CM_CAP_ID_HDM && !d->hdm)
			d->hdm = d->comp_off + CXL_CM_OFFSET + VCXL_FIELD_GET(CXL_CM_CAP_PTR, c);
	}
	if (!d->hdm)
		return -ENOENT;
	{
		/* CXL r3.1 8.2.4.20.1 Decoder Count: 0 -> 1, n <= 8 -> 2n, then 4(n-4) */
		unsigned enc = VCXL_FIELD_GET(CXL_HDM_CAP_DECODER_COUNT, hdm_read(d, CXL_HDM_CAP));

		d->ndec = enc == 0 ? 1 : enc <= 8 ? enc * 2 : (enc - 4) * 4;
	}
	{
		/* CXL r3.1 8.1.3.8 DVSEC Range 1 Size */
		uint32_t hi = cfg_read(d, d->dvsec_dev + CXL_DVSEC_RANGE_SIZE_HI(0), 4);
		uint32_t lo = cfg_read(d, d->dvsec_dev + CXL_DVSEC_RANGE_SIZE_LO(0), 4);

		d->mem_size = ((uint64_t)hi << 32) | (lo & CXL_DVSEC_RANGE_SIZE_LO_MASK);
	}
	d->uid = host_bridge_uid(d->bdf);
	return 0;
}

/* CXL r3.1 8.2.4.20.2 HDM Decoder Enable; 8.1.3.2 DVSEC Control Mem_Enable */
static void enable_mem(struct dev *d)
{
	uint32_t cmd = cfg_read(d, PCI_COMMAND, 2);

	cfg_write(d, PCI_COMMAND, 2, cmd | PCI_COMMAND_MEMORY);
	hdm_write(d, CXL_HDM_GLOBAL_CTRL, hdm_read(d, CXL_HDM_GLOBAL_CTRL) | CXL_HDM_GCTRL_ENABLE);
	cfg_write(d, d->dvsec_dev + CXL_DVSEC_CTRL, 2,
		  cfg_read(d, d->dvsec_dev + CXL_DVSEC_CTRL, 2) | CXL_DVSEC_CTRL_MEM_EN);
}

/* Program + commit decoder n as Linux's setup_hw_decoder() (CXL r3.1 8.2.4.20.12) */
static uint32_t commit_decoder(struct dev *d, unsigned n, uint64_t base, uint64_t size,
			       uint64_t skip)
{
	uint32_t ctrl = hdm_read(d, CXL_HDM_DEC_CTRL(n));

	ctrl &= ~(CXL_HDM_DEC_CTRL_IG | CXL_HDM_DEC_CTRL_IW | CXL_HDM_DEC_CTRL_HOSTONLY |
		  CXL_HDM_DEC_CTRL_COMMIT);
	hdm_write(d, CXL_HDM_DEC_CTRL(n), ctrl);
	hdm_write(d, CXL_HDM_DEC_BASE_HI(n), (uint32_t)(base >> 32));
	hdm_write(d, CXL_HDM_DEC_BASE_LO(n), (uint32_t)base);
	hdm_write(d, CXL_HDM_DEC_SIZE_HI(n), (uint32_t)(size >> 32));
	hdm_write(d, CXL_HDM_DEC_SIZE_LO(n), (uint32_t)size);
	hdm_write(d, CXL_HDM_DEC_SKIP_HI(n), (uint32_t)(skip >> 32));
	hdm_write(d, CXL_HDM_DEC_SKIP_LO(n), (uint32_t)skip);
	hdm_write(d, CXL_HDM_DEC_CTRL(n),
		  ctrl | (uint32_t)VCXL_FIELD_PREP(CXL_HDM_DEC_CTRL_IW, CXL_HDM_IW_1) |
		      CXL_HDM_DEC_CTRL_COMMIT);
	for (unsigned i = 0; i < COMMIT_POLLS; i++) {
		ctrl = hdm_read(d, CXL_HDM_DEC_CTRL(n));
		if (ctrl & (CXL_HDM_DEC_CTRL_COMMITTED | CXL_HDM_DEC_CTRL_COMMIT_ERR))
			break;
		sleep_ms(1);
	}
	return ctrl;
}

/* Linux cxl_decoder_reset(): clear Commit, then zero size and base */
static uint32_t decommit_decoder(struct dev *d, unsigned n)
{
	hdm_write(d, CXL_HDM_DEC_CTRL(n),
		  hdm_read(d, CXL_HDM_DEC_CTRL(n)) & ~CXL_HDM_DEC_CTRL_COMMIT);
	hdm_write(d, CXL_HDM_DEC_SIZE_HI(n), 0);
	hdm_write(d, CXL_HDM_DEC_SIZE_LO(n), 0);
	hdm_write(d, CXL_HDM_DEC_BASE_HI(n), 0);
	hdm_write(d, CXL_HDM_DEC_BASE_LO(n), 0);
	return hdm_read(d, CXL_HDM_DEC_CTRL(n));
}

static bool committed(uint32_t ctrl)
{
	return (ctrl & CXL_HDM_DEC_CTRL_COMMITTED) && !(ctrl & CXL_HDM_DEC_CTRL_COMMIT_ERR);
}

static uint64_t dec_reg64(struct dev *d, unsigned lo, unsigned hi)
{
	return ((uint64_t)hdm_read(d, hi) << 32) | (hdm_read(d, lo) & CXL_HDM_DEC_LO_MASK);
}

/* ---- the ACPI CEDT: CXL fixed memory windows (CXL r3.1 9.18.1.3) ---- */

static unsigned read_windows(struct window *w, unsigned max, char *err, size_t errlen)
{
	static uint8_t t[65536];
	int fd = open(CEDT_PATH, O_RDONLY);
	ssize_t n;
	uint32_t tlen;
	unsigned nw = 0;

	if (fd < 0) {
		snprintf(err, errlen, "%s: %s", CEDT_PATH, strerror(errno));
		return 0;
	}
	n = read(fd, t, sizeof(t));
	close(fd);
	if (n < ACPI_HDR_LEN) {
		snprintf(err, errlen, "CEDT: %zd bytes", n);
		return 0;
	}
	memcpy(&tlen, t + ACPI_HDR_LENGTH, 4);
	if (tlen > (uint32_t)n)
		tlen = (uint32_t)n;
	for (uint32_t at = ACPI_HDR_LEN; at + 4 <= tlen && nw < max;) {
		uint16_t rlen;

		memcpy(&rlen, t + at + CEDT_REC_LENGTH, 2);
		if (rlen < 4 || at + rlen > tlen)
			break;
		if (t[at + CEDT_REC_TYPE] == CEDT_TYPE_CFMWS && rlen >= CFMWS_TARGETS) {
			/* ENIW encodes 1, 2, 4, 8, 16 (0-4) or 3, 6, 12 (8-10) ways */
			unsigned eniw = t[at + CFMWS_ENIW];
			unsigned ways = eniw < 8 ? 1u << eniw : 3u << (eniw - 8);

			memcpy(&w[nw].base, t + at + CFMWS_BASE, 8);
			memcpy(&w[nw].size, t + at + CFMWS_SIZE, 8);
			w[nw].ntargets = 0;
			for (unsigned k = 0; k < ways && k < CFMWS_MAX_TARGETS &&
					     CFMWS_TARGETS + 4 * (k + 1) <= rlen;
			     k++)
				memcpy(&w[nw].target[w[nw].ntargets++],
				       t + at + CFMWS_TARGETS + 4 * k, 4);
			nw++;
		}
		at += rlen;
	}
	if (!nw)
		snprintf(err, errlen, "CEDT has no CFMWS");
	return nw;
}

/* The window whose targets include the host bridge uid (else the first). */
static const struct window *pick_window(const struct window *w, unsigned nw, long uid)
{
	for (unsigned i = 0; i < nw; i++)
		for (unsigned k = 0; k < w[i].ntargets; k++)
			if ((long)w[i].target[k] == uid)
				return &w[i];
	return uid < 0 && nw ? &w[0] : NULL;
}

/* ---- /dev/mem ---- */

static volatile uint64_t *map_phys(uint64_t pa, uint64_t len)
{
	void *p;

	if (mem_fd < 0)
		mem_fd = open("/dev/mem", O_RDWR | O_SYNC);
	if (mem_fd < 0)
		return NULL;
	p = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_SHARED, mem_fd, (off_t)pa);
	return p == MAP_FAILED ? NULL : p;
}

/* Qwords at window offset off that hold the seed of dpa (SEED ^ (dpa + 8i)). */
static uint64_t seed_matches(volatile uint64_t *win, uint64_t off, uint64_t dpa, uint64_t *first)
{
	uint64_t n = 0;

	for (uint64_t i = 0; i < SEED_LEN / 8; i++) {
		uint64_t v = win[off / 8 + i];

		if (i == 0 && first)
			*first = v;
		n += v == (SEED ^ (dpa + 8 * i));
	}
	return n;
}

static void write_pattern(volatile uint64_t *win, uint64_t off, uint64_t pattern, uint64_t len)
{
	for (uint64_t i = 0; i < len / 8; i++)
		win[off / 8 + i] = pattern + i;
	__sync_synchronize();
}

static uint64_t pattern_matches(volatile uint64_t *win, uint64_t off, uint64_t pattern,
				uint64_t len)
{
	uint64_t n = 0;

	for (uint64_t i = 0; i < len / 8; i++)
		n += win[off / 8 + i] == pattern + i;
	return n;
}

static void hostcheck(uint64_t dpa, uint64_t len, uint64_t pattern, bool present)
{
	printf("HOSTCHECK mem dpa=0x%" PRIx64 " len=0x%" PRIx64 " pattern=0x%016" PRIx64
	       " expect=%s\n",
	       dpa, len, pattern, present ? "present" : "absent");
	fflush(stdout);
}

/* ---- the proof ---- */

struct proof {
	struct dev d;
	uint64_t W;		/* window base (decoder 0's base) */
	uint64_t wsize;		/* window bytes used */
	volatile uint64_t *win; /* /dev/mem mapping of [W, W + wsize) */
	unsigned canary;	/* distinct patterns */
};

static uint64_t next_pattern(struct proof *p)
{
	return 0x6775657374000000ull + ((uint64_t)++p->canary << 32);
}

/* Decoder state -> expectation, checked at a seeded address of each decoder:
 * committed: the seed of its DPA is there; not committed: it is not. */
static bool check_map(struct proof *p, const char *what, char *out, size_t outlen)
{
	struct dev *d = &p->d;
	bool ok = true;
	size_t l = 0;

	out[0] = 0;
	for (unsigned n = 0; n < 2 && n < d->ndec; n++) {
		uint32_t ctrl = hdm_read(d, CXL_HDM_DEC_CTRL(n));
		uint64_t base = dec_reg64(d, CXL_HDM_DEC_BASE_LO(n), CXL_HDM_DEC_BASE_HI(n));
		uint64_t dpa = n == 0 ? 0 : DPA_DEC1;
		uint64_t off = (n == 0 ? 0 : DEC_SIZE) + SEED_OFF, m, first = 0;
		bool c = committed(ctrl) && base == p->W + (n == 0 ? 0 : DEC_SIZE);

		m = seed_matches(p->win, off, dpa + SEED_OFF, &first);
		if (c != (m == SEED_LEN / 8) || (!c && m))
			ok = false;
		l += (size_t)snprintf(out + l, outlen - l,
				      "%sdecoder %u %s (ctrl 0x%08x): window+0x%" PRIx64
				      " %s the seed of DPA 0x%" PRIx64 " (%" PRIu64 "/%" PRIu64
				      " qwords, first 0x%" PRIx64 ")",
				      n ? "; " : "", n, c ? "committed" : "not committed", ctrl,
				      off, m == SEED_LEN / 8 ? "holds" : "does not hold",
				      dpa + SEED_OFF, m, SEED_LEN / 8, first);
		if (l >= outlen)
			break;
	}
	(void)what;
	return ok;
}

/* A canary write at decoder 0's range: present at its DPA iff decoder 0 is committed. */
static void canary(struct proof *p, uint64_t off)
{
	uint32_t ctrl = hdm_read(&p->d, CXL_HDM_DEC_CTRL(0));
	uint64_t base = dec_reg64(&p->d, CXL_HDM_DEC_BASE_LO(0), CXL_HDM_DEC_BASE_HI(0));
	uint64_t pat = next_pattern(p);

	write_pattern(p->win, off, pat, WRITE_LEN);
	hostcheck(off, WRITE_LEN, pat, committed(ctrl) && base == p->W);
}

static bool commit_pair(struct proof *p)
{
	struct dev *d = &p->d;

	enable_mem(d);
	return committed(commit_decoder(d, 0, p->W, DEC_SIZE, 0)) &&
	       (d->ndec < 2 ||
		committed(commit_decoder(d, 1, p->W + DEC_SIZE, DEC_SIZE, DPA_DEC1 - DEC_SIZE)));
}

static void decommit_all(struct dev *d)
{
	for (unsigned n = d->ndec; n-- > 0;)
		decommit_decoder(d, n);
}

static int sysfs_reset(struct dev *d, const char *method, char *err, size_t errlen)
{
	char path[PATH_LEN], have[128] = "";
	int rc;

	snprintf(path, sizeof(path), SYSFS_PCI "/%s/reset_method", d->bdf);
	read_sysfs(path, have, sizeof(have));
	rc = write_sysfs(path, method);
	if (rc) {
		snprintf(err, errlen, "reset_method '%s' (device offers '%s'): %s", method, have,
			 strerror(-rc));
		return rc;
	}
	snprintf(path, sizeof(path), SYSFS_PCI "/%s/reset", d->bdf);
	rc = write_sysfs(path, "1");
	if (rc)
		snprintf(err, errlen, "reset (%s): %s", method, strerror(-rc));
	snprintf(path, sizeof(path), SYSFS_PCI "/%s/reset_method", d->bdf);
	write_sysfs(path, "default");
	return rc;
}

/* CXL r3.1 8.1.3.4 Control2 Initiate CXL Reset; 8.1.3.5 Status2 Reset Complete */
static int cxl_reset(struct dev *d, char *err, size_t errlen)
{
	unsigned c2 = d->dvsec_dev + CXL_DVSEC_CTRL2, s2 = d->dvsec_dev + CXL_DVSEC_STATUS2;

	if (!(cfg_read(d, d->dvsec_dev + CXL_DVSEC_CAP, 2) & CXL_DVSEC_CAP_RESET)) {
		snprintf(err, errlen, "device is not CXL Reset Capable");
		return -ENOTSUP;
	}
	cfg_write(d, c2, 2, cfg_read(d, c2, 2) | CXL_DVSEC_CTRL2_INIT_RESET);
	for (unsigned ms = 0; ms < RESET_POLL_MS; ms += 10) {
		uint32_t st = cfg_read(d, s2, 2);

		if (st & CXL_DVSEC_STATUS2_RESET_ERR) {
			snprintf(err, errlen, "Status2 0x%04x: CXL Reset Error", st);
			return -EIO;
		}
		if (st & CXL_DVSEC_STATUS2_RESET_DONE)
			return 0;
		sleep_ms(10);
	}
	snprintf(err, errlen, "no Reset Complete in %u ms", RESET_POLL_MS);
	return -ETIMEDOUT;
}

static void reset_step(struct proof *p, const char *name, const char *how,
		       int (*doit)(struct proof *, char *, size_t))
{
	char err[256] = "", map[1024];
	bool before = commit_pair(p), ok;
	int rc;

	if (!before) {
		step(name, 0, "could not commit decoders 0 and 1 before the reset");
		return;
	}
	rc = doit(p, err, sizeof(err));
	if (rc) {
		step(name, 0, "%s: %s", how, err);
		return;
	}
	ok = check_map(p, name, map, sizeof(map));
	canary(p, 0x60000 + 0x10000 * (p->canary % 8));
	step(name, ok, "%s, then %s", how, map);
}

static int do_flr(struct proof *p, char *err, size_t errlen)
{
	return sysfs_reset(&p->d, "flr", err, errlen);
}

static int do_cxl_reset(struct proof *p, char *err, size_t errlen)
{
	return cxl_reset(&p->d, err, errlen);
}

static int do_bus_reset(struct proof *p, char *err, size_t errlen)
{
	return sysfs_reset(&p->d, "bus", err, errlen);
}

static int setup(struct proof *p, bool verbose)
{
	struct window w[CFMWS_MAX];
	const struct window *win;
	char err[256] = "";
	unsigned nw;
	int rc = open_cxl_dev(&p->d, VCXL_MODEL_VENDOR, VCXL_MODEL_DEVICE, 0);

	if (rc) {
		step("find", 0, "vcxl accelerator %04x:%04x: %s", VCXL_MODEL_VENDOR,
		     VCXL_MODEL_DEVICE, strerror(-rc));
		return -1;
	}
	step("find", 1,
	     "%s: CXL Device DVSEC at 0x%x, component block BAR%u+0x%" PRIx64
	     ", %u HDM decoder(s), DVSEC range 0x%" PRIx64 ", host bridge _UID %ld",
	     p->d.bdf, p->d.dvsec_dev, p->d.comp_bar, p->d.comp_off, p->d.ndec, p->d.mem_size,
	     p->d.uid);
	nw = read_windows(w, CFMWS_MAX, err, sizeof(err));
	for (unsigned i = 0; verbose && i < nw; i++)
		printf("  CFMWS %u: base 0x%" PRIx64 " size 0x%" PRIx64 " target[0] %u\n", i,
		       w[i].base, w[i].size, w[i].target[0]);
	win = pick_window(w, nw, p->d.uid);
	if (!win) {
		step("cedt", 0, "%s%sno CFMWS targets host bridge %ld (%u windows)", err,
		     err[0] ? "; " : "", p->d.uid, nw);
		return -1;
	}
	p->W = (win->base + CXL_HDM_GRANULE - 1) & ~(CXL_HDM_GRANULE - 1);
	p->wsize = win->base + win->size - p->W;
	step("cedt", 1,
	     "%u CXL fixed memory window(s); the device's: [0x%" PRIx64 ", +0x%" PRIx64
	     ") targets host bridge %ld",
	     nw, win->base, win->size, p->d.uid);
	if (p->wsize > REBASE_DELTA + DEC_SIZE)
		p->wsize = REBASE_DELTA + DEC_SIZE;
	p->win = map_phys(p->W, p->wsize);
	if (!p->win) {
		step("devmem", 0, "mmap /dev/mem [0x%" PRIx64 ", +0x%" PRIx64 "): %s", p->W,
		     p->wsize, strerror(errno));
		return -1;
	}
	return 0;
}

static void run_proof(void)
{
	struct proof p;
	struct dev *d = &p.d;
	uint64_t m, first = 0, pat1, pat;
	uint32_t ctrl;
	char map[1024];

	memset(&p, 0, sizeof(p));
	if (setup(&p, true))
		return;
	if (p.wsize < REBASE_DELTA + DEC_SIZE || d->ndec < 2 || d->mem_size < DPA_DEC1 + DEC_SIZE) {
		step("geometry", 0,
		     "need a window of >= 0x%" PRIx64 " bytes (have 0x%" PRIx64
		     "), 2 decoders (have %u), "
		     "0x%" PRIx64 " bytes of device memory (have 0x%" PRIx64 ")",
		     REBASE_DELTA + DEC_SIZE, p.wsize, d->ndec, DPA_DEC1 + DEC_SIZE, d->mem_size);
		return;
	}

	/* 1. commit decoder 0 at the window base: the window is device memory at DPA 0 */
	m = seed_matches(p.win, SEED_OFF, SEED_OFF, &first);
	step("before-commit", m == 0,
	     "window+0x%" PRIx64 " before any commit: %" PRIu64 " seed qwords (first 0x%" PRIx64
	     ")",
	     SEED_OFF, m, first);
	enable_mem(d);
	ctrl = commit_decoder(d, 0, p.W, DEC_SIZE, 0);
	step("commit", committed(ctrl),
	     "decoder 0 at 0x%" PRIx64 " size 0x%" PRIx64 ": ctrl 0x%08x", p.W, DEC_SIZE, ctrl);
	m = seed_matches(p.win, SEED_OFF, SEED_OFF, &first);
	step("read-seed", m == SEED_LEN / 8,
	     "window+0x%" PRIx64 " reads the host's seed of DPA 0x%" PRIx64 ": %" PRIu64 "/%" PRIu64
	     " qwords "
	     "(first 0x%" PRIx64 ")",
	     SEED_OFF, SEED_OFF, m, SEED_LEN / 8, first);
	pat1 = next_pattern(&p);
	write_pattern(p.win, 0x10000, pat1, WRITE_LEN);
	m = pattern_matches(p.win, 0x10000, pat1, WRITE_LEN);
	step("write-read", m == WRITE_LEN / 8,
	     "0x%" PRIx64 " bytes written through /dev/mem at 0x%" PRIx64 ", read back: %" PRIu64
	     "/%" PRIu64 " qwords",
	     WRITE_LEN, p.W + 0x10000, m, WRITE_LEN / 8);
	hostcheck(0x10000, WRITE_LEN, pat1, true);

	/* 2. decommit: the window no longer reaches device memory */
	ctrl = decommit_decoder(d, 0);
	m = seed_matches(p.win, SEED_OFF, SEED_OFF, &first);
	pat = next_pattern(&p);
	write_pattern(p.win, 0x20000, pat, WRITE_LEN);
	hostcheck(0x20000, WRITE_LEN, pat, false);
	step("decommit",
	     !committed(ctrl) && m == 0 && !pattern_matches(p.win, 0x20000, pat, WRITE_LEN),
	     "decoder 0 ctrl 0x%08x; window+0x%" PRIx64 ": %" PRIu64
	     " seed qwords (first 0x%" PRIx64 "); a write there is not read back",
	     ctrl, SEED_OFF, m, first);

	/* 3. commit at another base: the same DPA at the new address, none at the old */
	ctrl = commit_decoder(d, 0, p.W + REBASE_DELTA, DEC_SIZE, 0);
	{
		uint64_t at_new = seed_matches(p.win, REBASE_DELTA + SEED_OFF, SEED_OFF, NULL);
		uint64_t data = pattern_matches(p.win, REBASE_DELTA + 0x10000, pat1, WRITE_LEN);
		uint64_t at_old = seed_matches(p.win, SEED_OFF, SEED_OFF, NULL);

		step("rebase",
		     committed(ctrl) && at_new == SEED_LEN / 8 && data == WRITE_LEN / 8 &&
			 at_old == 0,
		     "decoder 0 at 0x%" PRIx64 " (ctrl 0x%08x): DPA 0x%" PRIx64 " seed %" PRIu64
		     "/%" PRIu64 ", the earlier write %" PRIu64 "/%" PRIu64
		     " qwords at the new base; %" PRIu64 " seed qwords left at the old base",
		     p.W + REBASE_DELTA, ctrl, SEED_OFF, at_new, SEED_LEN / 8, data, WRITE_LEN / 8,
		     at_old);
		pat = next_pattern(&p);
		write_pattern(p.win, REBASE_DELTA + 0x30000, pat, WRITE_LEN);
		hostcheck(0x30000, WRITE_LEN, pat, true);
	}
	decommit_decoder(d, 0);

	/* 4. two decoders, decoder 1 after a DPA skip */
	{
		uint32_t c0 = commit_decoder(d, 0, p.W, DEC_SIZE, 0);
		uint32_t c1 = commit_decoder(d, 1, p.W + DEC_SIZE, DEC_SIZE, DPA_DEC1 - DEC_SIZE);
		uint64_t s0 = seed_matches(p.win, SEED_OFF, SEED_OFF, NULL);
		uint64_t s1 = seed_matches(p.win, DEC_SIZE + SEED_OFF, DPA_DEC1 + SEED_OFF, NULL);
		uint64_t sk =
		    seed_matches(p.win, DEC_SIZE + SEED_OFF, DPA_SKIPPED + SEED_OFF, NULL);
		uint64_t p4 = next_pattern(&p), p5 = next_pattern(&p);

		write_pattern(p.win, 0x50000, p4, WRITE_LEN);
		write_pattern(p.win, DEC_SIZE + 0x50000, p5, WRITE_LEN);
		hostcheck(0x50000, WRITE_LEN, p4, true);
		hostcheck(DPA_DEC1 + 0x50000, WRITE_LEN, p5, true);
		hostcheck(DPA_SKIPPED + 0x50000, WRITE_LEN, p5, false);
		step("dpa-skip",
		     committed(c0) && committed(c1) && s0 == SEED_LEN / 8 && s1 == SEED_LEN / 8 &&
			 sk == 0,
		     "decoder 0 [0x%" PRIx64 ", +256M) -> DPA 0 (ctrl 0x%08x, seed %" PRIu64
		     "/%" PRIu64 "); decoder 1 [0x%" PRIx64 ", +256M) skip 256M -> DPA 0x%" PRIx64
		     " (ctrl "
		     "0x%08x, seed %" PRIu64 "/%" PRIu64 "; skipped DPA 0x%" PRIx64 " seen %" PRIu64
		     ")",
		     p.W, c0, s0, SEED_LEN / 8, p.W + DEC_SIZE, DPA_DEC1, c1, s1, SEED_LEN / 8,
		     DPA_SKIPPED, sk);
		check_map(&p, "dpa-skip", map, sizeof(map));
		printf("  %s\n", map);
	}

	/* 5. resets leave the mapping exactly as the decoder state they leave */
	reset_step(&p, "reset-flr", "guest FLR (reset_method flr)", do_flr);
	reset_step(&p, "reset-cxl", "CXL reset (DVSEC Control2 Initiate CXL Reset)", do_cxl_reset);
	reset_step(&p, "reset-device", "secondary bus reset (QEMU: VFIO_DEVICE_RESET)",
		   do_bus_reset);

	/* 6. bad input: a base outside every window maps nothing, QEMU survives */
	decommit_all(d);
	enable_mem(d);
	ctrl = commit_decoder(d, 0, p.W + p.wsize + OUTSIDE_GAP, DEC_SIZE, 0);
	{
		bool ok2 = commit_pair(&p);
		char m2[1024];
		bool mapped = check_map(&p, "after-bad", m2, sizeof(m2));

		step("outside-window", ok2 && mapped,
		     "decoder 0 committed at 0x%" PRIx64 " outside every window (ctrl 0x%08x): "
		     "the VM runs on; committed again inside: %s",
		     p.W + p.wsize + OUTSIDE_GAP, ctrl, m2);
	}
	decommit_all(d);
}

/* ---- bandwidth ---- */

static double bw_write(volatile uint64_t *p, uint64_t len)
{
	double t = now_s();

	for (uint64_t i = 0; i < len / 8; i += 4) {
		p[i] = i;
		p[i + 1] = i + 1;
		p[i + 2] = i + 2;
		p[i + 3] = i + 3;
	}
	__sync_synchronize();
	return (double)len / (now_s() - t) / 1e6;
}

static double bw_read(volatile uint64_t *p, uint64_t len, uint64_t *sum)
{
	double t = now_s();
	uint64_t s = 0;

	for (uint64_t i = 0; i < len / 8; i += 4)
		s += p[i] ^ p[i + 1] ^ p[i + 2] ^ p[i + 3];
	*sum += s;
	return (double)len / (now_s() - t) / 1e6;
}

static int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return x < y ? -1 : x > y;
}

#define BENCH_MAX_REPS 16

/* One untimed write pass first (host page faults on first touch, for every target alike),
 * then reps timed write + read passes; the median is the figure. */
static void bench_one(const char *what, volatile uint64_t *p, uint64_t len, unsigned reps)
{
	double w[BENCH_MAX_REPS], r[BENCH_MAX_REPS];
	uint64_t sum = 0;

	if (reps > BENCH_MAX_REPS)
		reps = BENCH_MAX_REPS;
	bw_write(p, len);
	for (unsigned i = 0; i < reps; i++) {
		w[i] = bw_write(p, len);
		r[i] = bw_read(p, len, &sum);
	}
	qsort(w, reps, sizeof(double), cmp_double);
	qsort(r, reps, sizeof(double), cmp_double);
	printf("BENCH %s write %.1f %" PRIu64 " min %.1f max %.1f\n", what, w[reps / 2], len, w[0],
	       w[reps - 1]);
	printf("BENCH %s read %.1f %" PRIu64 " min %.1f max %.1f\n", what, r[reps / 2], len, r[0],
	       r[reps - 1]);
	printf("  (%s: %u runs of 0x%" PRIx64 " bytes, checksum 0x%" PRIx64 ")\n", what, reps, len,
	       sum);
	fflush(stdout);
}

/* QEMU's cxl-type3 behind its own host bridge and window: commit its decoder 0 */
static volatile uint64_t *t3_window(uint64_t len, char *why, size_t whylen)
{
	struct window w[CFMWS_MAX];
	struct dev t3;
	const struct window *win;
	char err[256] = "";
	unsigned nw;
	uint64_t base;
	uint32_t ctrl;

	if (open_cxl_dev(&t3, QEMU_T3_VENDOR, QEMU_T3_DEVICE, 0)) {
		snprintf(why, whylen, "no QEMU cxl-type3 (%04x:%04x) in this VM", QEMU_T3_VENDOR,
			 QEMU_T3_DEVICE);
		return NULL;
	}
	nw = read_windows(w, CFMWS_MAX, err, sizeof(err));
	win = pick_window(w, nw, t3.uid);
	if (!win || t3.uid < 0) {
		snprintf(why, whylen, "no CFMWS for the cxl-type3's host bridge %ld", t3.uid);
		return NULL;
	}
	base = (win->base + CXL_HDM_GRANULE - 1) & ~(CXL_HDM_GRANULE - 1);
	enable_mem(&t3);
	ctrl = commit_decoder(&t3, 0, base, len, 0);
	if (!committed(ctrl)) {
		snprintf(why, whylen, "cxl-type3 decoder 0 at 0x%" PRIx64 ": ctrl 0x%08x", base,
			 ctrl);
		return NULL;
	}
	printf("  cxl-type3 %s: decoder 0 committed at 0x%" PRIx64 " size 0x%" PRIx64 "\n", t3.bdf,
	       base, len);
	return map_phys(base, len);
}

static void run_bench(uint64_t mib, uint64_t t3_mib, unsigned reps)
{
	struct proof p;
	uint64_t len = mib << 20, t3len = t3_mib << 20;
	volatile uint64_t *ram, *t3;
	char why[256];
	uint32_t ctrl;

	memset(&p, 0, sizeof(p));
	if (setup(&p, false))
		return;
	if (len > DEC_SIZE)
		len = DEC_SIZE;
	enable_mem(&p.d);
	ctrl = commit_decoder(&p.d, 0, p.W, DEC_SIZE, 0);
	step("commit", committed(ctrl),
	     "decoder 0 at 0x%" PRIx64 " size 0x%" PRIx64 ": ctrl 0x%08x", p.W, DEC_SIZE, ctrl);
	if (!committed(ctrl))
		return;
	ram = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_POPULATE,
		   -1, 0);
	if (ram == MAP_FAILED) {
		step("ram", 0, "mmap 0x%" PRIx64 " bytes of guest RAM: %s", len, strerror(errno));
		return;
	}
	bench_one("ram", ram, len, reps);
	bench_one("vcxl", p.win, len, reps);
	t3 = t3_window(VCXL_SZ_256M, why, sizeof(why));
	if (t3)
		bench_one("type3", t3, t3len, reps < 3 ? reps : 3); /* ~1 s per pass */
	else
		printf("BENCH type3 skip %s\n", why);
	step("bench", 1, "guest RAM, the vcxl window%s measured",
	     t3 ? " and the cxl-type3 window" : "");
	decommit_decoder(&p.d, 0);
}

/* ---- demo: the short story make demo tells ---- */

static void run_demo(void)
{
	struct proof p;
	uint64_t m, pat, first = 0;
	uint32_t ctrl;

	memset(&p, 0, sizeof(p));
	if (setup(&p, true))
		return;
	enable_mem(&p.d);
	ctrl = commit_decoder(&p.d, 0, p.W, DEC_SIZE, 0);
	step("commit", committed(ctrl),
	     "HDM decoder 0 committed at 0x%" PRIx64 " (the window's base), 256 MiB -> DPA 0 "
	     "(ctrl 0x%08x)",
	     p.W, ctrl);
	m = seed_matches(p.win, SEED_OFF, SEED_OFF, &first);
	step("read", m == SEED_LEN / 8,
	     "read 64 KiB at 0x%" PRIx64 " through /dev/mem: the host's data for DPA 0x%" PRIx64 " "
	     "(%" PRIu64 "/%" PRIu64 " qwords, first 0x%" PRIx64 ")",
	     p.W + SEED_OFF, SEED_OFF, m, SEED_LEN / 8, first);
	pat = next_pattern(&p);
	write_pattern(p.win, 0x10000, pat, WRITE_LEN);
	m = pattern_matches(p.win, 0x10000, pat, WRITE_LEN);
	step("write", m == WRITE_LEN / 8,
	     "wrote 32 KiB at 0x%" PRIx64 " (pattern 0x%" PRIx64 " + i), read back %" PRIu64
	     "/%" PRIu64 " qwords",
	     p.W + 0x10000, pat, m, WRITE_LEN / 8);
	hostcheck(0x10000, WRITE_LEN, pat, true);
}

/* ---- --fw: firmware-committed regions, overlap retry, unplug ---- */

#define FW_DEVS	   2
#define FW_OFF	   ((uint64_t)0x10000ull) /* where each device's pattern goes */
#define FW_PAT0	   0x6677303000000000ull  /* device 0's pattern ("fw00") */
#define FW_PAT1	   0x6677303100000000ull  /* device 1's */
#define UNPLUG_S   60			  /* the host's device_del and pciehp's 5 s */
#define FW_BASE_LO CXL_HDM_DEC_BASE_LO(0)

static void hostcheck_dev(unsigned dev, uint64_t dpa, uint64_t len, uint64_t pattern, bool present)
{
	printf("HOSTCHECK mem dev=%u dpa=0x%" PRIx64 " len=0x%" PRIx64 " pattern=0x%016" PRIx64
	       " expect=%s\n",
	       dev, dpa, len, pattern, present ? "present" : "absent");
	fflush(stdout);
}

/* Two devices of a --firmware-committed server, under one host bridge and
 * window. What the guest must see (docs/uapi.md "Firmware-committed regions"):
 * decoder 0 committed and locked by the VM's firmware (the CXL-aware QEMU) at
 * a base inside the window, over all of the region, before it runs. */
static void run_fw(bool unplug_only)
{
	struct dev d[FW_DEVS];
	struct window w[CFMWS_MAX];
	const struct window *win = NULL;
	uint64_t base[FW_DEVS], size[FW_DEVS];
	uint32_t ctrl[FW_DEVS];
	volatile uint64_t *m[FW_DEVS];
	char err[256] = "";
	unsigned nw, i;
	bool good = true;

	for (i = 0; i < FW_DEVS; i++) {
		int rc = open_cxl_dev(&d[i], VCXL_MODEL_VENDOR, VCXL_MODEL_DEVICE, i);

		if (rc) {
			step("fw-find", 0, "vcxl accelerator #%u: %s", i, strerror(-rc));
			return;
		}
	}
	nw = read_windows(w, CFMWS_MAX, err, sizeof(err));
	win = pick_window(w, nw, d[0].uid);
	step("fw-find", win && d[0].uid == d[1].uid,
	     "%s and %s under host bridge _UID %ld/%ld; window [0x%" PRIx64 ", +0x%" PRIx64 ")%s",
	     d[0].bdf, d[1].bdf, d[0].uid, d[1].uid, win ? win->base : 0, win ? win->size : 0, err);
	if (!win)
		return;
	if (unplug_only) {
		char path[PATH_LEN];
		struct stat st;
		double t0 = now_s();

		snprintf(path, sizeof(path), SYSFS_PCI "/%s", d[1].bdf);
		printf("UNPLUG-READY %s\n", d[1].bdf);
		while (now_s() - t0 < UNPLUG_S && !stat(path, &st))
			sleep_ms(100);
		sleep_ms(2000);
		step("unplug", stat(path, &st) != 0, "%s after %.1f s", d[1].bdf, now_s() - t0);
		return;
	}

	/* CXL r3.1 8.2.4.20.7: committed, Lock-On-Commit, inside the window */
	for (i = 0; i < FW_DEVS; i++) {
		ctrl[i] = hdm_read(&d[i], CXL_HDM_DEC_CTRL(0));
		base[i] = dec_reg64(&d[i], CXL_HDM_DEC_BASE_LO(0), CXL_HDM_DEC_BASE_HI(0));
		size[i] = dec_reg64(&d[i], CXL_HDM_DEC_SIZE_LO(0), CXL_HDM_DEC_SIZE_HI(0));
		good = good && committed(ctrl[i]) && (ctrl[i] & CXL_HDM_DEC_CTRL_LOCK_ON_COMMIT) &&
		       size[i] == d[i].mem_size && base[i] >= win->base &&
		       base[i] - win->base <= win->size - size[i];
	}
	good = good && (base[0] + size[0] <= base[1] || base[1] + size[1] <= base[0]);
	step("fw-committed", good,
	     "decoder 0 of each device committed and locked before the guest ran: "
	     "ctrl 0x%08x [0x%" PRIx64 ", +0x%" PRIx64 "), ctrl 0x%08x [0x%" PRIx64 ", +0x%" PRIx64
	     ")",
	     ctrl[0], base[0], size[0], ctrl[1], base[1], size[1]);
	if (!good)
		return;

	/* the lock: neither decommit nor a new base takes */
	hdm_write(&d[0], CXL_HDM_DEC_CTRL(0), ctrl[0] & ~CXL_HDM_DEC_CTRL_COMMIT);
	hdm_write(&d[0], FW_BASE_LO, (uint32_t)(base[0] + DEC_SIZE));
	step("fw-locked",
	     committed(hdm_read(&d[0], CXL_HDM_DEC_CTRL(0))) &&
		 dec_reg64(&d[0], CXL_HDM_DEC_BASE_LO(0), CXL_HDM_DEC_BASE_HI(0)) == base[0],
	     "decommit and rebase of a locked decoder ignored: ctrl 0x%08x base 0x%" PRIx64,
	     hdm_read(&d[0], CXL_HDM_DEC_CTRL(0)),
	     dec_reg64(&d[0], CXL_HDM_DEC_BASE_LO(0), CXL_HDM_DEC_BASE_HI(0)));

	for (i = 0; i < FW_DEVS; i++) {
		m[i] = map_phys(base[i], size[i]);
		if (!m[i]) {
			step("fw-access", 0, "mmap /dev/mem 0x%" PRIx64 ": %s", base[i],
			     strerror(errno));
			return;
		}
	}
	write_pattern(m[0], FW_OFF, FW_PAT0, WRITE_LEN);
	write_pattern(m[1], FW_OFF, FW_PAT1, WRITE_LEN);
	{
		uint64_t n0 = pattern_matches(m[0], FW_OFF, FW_PAT0, WRITE_LEN);
		uint64_t n1 = pattern_matches(m[1], FW_OFF, FW_PAT1, WRITE_LEN);

		step("fw-access", n0 == WRITE_LEN / 8 && n1 == WRITE_LEN / 8,
		     "0x%" PRIx64 " bytes written through each firmware window and read back: "
		     "%" PRIu64 "/%" PRIu64 " and %" PRIu64 "/%" PRIu64 " qwords",
		     WRITE_LEN, n0, WRITE_LEN / 8, n1, WRITE_LEN / 8);
	}
	hostcheck_dev(0, FW_OFF, WRITE_LEN, FW_PAT0, true);
	hostcheck_dev(1, FW_OFF, WRITE_LEN, FW_PAT1, true);

	/* a secondary bus reset (QEMU: VFIO_DEVICE_RESET, a conventional reset of
	 * the device): firmware runs again, the decoder comes back committed and
	 * locked at the same base, with the device's memory behind it */
	if (sysfs_reset(&d[0], "bus", err, sizeof(err))) {
		step("fw-reset", 0, "bus reset of %s: %s", d[0].bdf, err);
	} else {
		uint32_t c = hdm_read(&d[0], CXL_HDM_DEC_CTRL(0));
		uint64_t b = dec_reg64(&d[0], CXL_HDM_DEC_BASE_LO(0), CXL_HDM_DEC_BASE_HI(0));
		uint64_t n0 = pattern_matches(m[0], FW_OFF, FW_PAT0, WRITE_LEN);

		step("fw-reset",
		     committed(c) && (c & CXL_HDM_DEC_CTRL_LOCK_ON_COMMIT) && b == base[0] &&
			 n0 == WRITE_LEN / 8,
		     "after a bus reset of %s (VFIO_DEVICE_RESET) decoder 0 ctrl 0x%08x at "
		     "0x%" PRIx64 ", its memory there (%" PRIu64 "/%" PRIu64 " qwords)",
		     d[0].bdf, c, b, n0, WRITE_LEN / 8);
	}

	/* overlap: device 1, CXL-reset (firmware does not run again), commits at
	 * device 0's base; QEMU refuses it and device 0's memory stays there */
	if (cxl_reset(&d[1], err, sizeof(err))) {
		step("overlap-refused", 0, "CXL reset of %s: %s", d[1].bdf, err);
		return;
	}
	ctrl[1] = hdm_read(&d[1], CXL_HDM_DEC_CTRL(0));
	if (committed(ctrl[1])) {
		step("overlap-refused", 0, "decoder 0 of %s still committed after CXL reset",
		     d[1].bdf);
		return;
	}
	enable_mem(&d[1]);
	ctrl[1] = commit_decoder(&d[1], 0, base[0], size[1], 0);
	{
		uint64_t n0 = pattern_matches(m[0], FW_OFF, FW_PAT0, WRITE_LEN);

		step("overlap-refused", committed(ctrl[1]) && n0 == WRITE_LEN / 8,
		     "%s decoder 0 committed at 0x%" PRIx64 " (device 0's base, ctrl 0x%08x): "
		     "not mapped, the window there still reads device 0 (%" PRIu64 "/%" PRIu64
		     " qwords)",
		     d[1].bdf, base[0], ctrl[1], n0, WRITE_LEN / 8);
	}

	/* device 0 lets go (CXL reset: firmware does not run): device 1's decoder,
	 * refused for the overlap, is mapped now */
	if (cxl_reset(&d[0], err, sizeof(err))) {
		step("overlap-retry", 0, "CXL reset of %s: %s", d[0].bdf, err);
		return;
	}
	{
		uint64_t n1 = pattern_matches(m[0], FW_OFF, FW_PAT1, WRITE_LEN);

		step("overlap-retry",
		     n1 == WRITE_LEN / 8 && !committed(hdm_read(&d[0], CXL_HDM_DEC_CTRL(0))),
		     "%s CXL-reset (decoder 0 ctrl 0x%08x): 0x%" PRIx64 " now reads device 1's "
		     "memory (%" PRIu64 "/%" PRIu64 " qwords of its pattern)",
		     d[0].bdf, hdm_read(&d[0], CXL_HDM_DEC_CTRL(0)), base[0], n1, WRITE_LEN / 8);
	}

	/* unplug: the host's device_del (QMP) of device 1; pciehp lets it go */
	{
		char path[PATH_LEN];
		struct stat st;
		double t0 = now_s();
		uint64_t n1;
		bool gone = false;

		snprintf(path, sizeof(path), SYSFS_PCI "/%s", d[1].bdf);
		printf("UNPLUG-READY %s\n", d[1].bdf);
		fflush(stdout);
		while (now_s() - t0 < UNPLUG_S && !gone) {
			gone = stat(path, &st) != 0;
			sleep_ms(100);
		}
		/* QEMU unrealizes the device after the slot is powered off */
		sleep_ms(2000);
		n1 = pattern_matches(m[0], FW_OFF, FW_PAT1, WRITE_LEN);
		step("unplug", gone && n1 == 0,
		     "%s %s after %.1f s; 0x%" PRIx64 " reads %" PRIu64 "/%" PRIu64
		     " qwords of its pattern (the mapping went with it)",
		     d[1].bdf, gone ? "removed" : "still present", now_s() - t0, base[0], n1,
		     WRITE_LEN / 8);
	}
}

static void usage(const char *argv0)
{
	fprintf(stderr,
		"usage: %s [--bench [--mib N] [--t3-mib N] [--reps N] | --demo | --fw]\n"
		"  (default) the CXL.mem proof: commit, read, write, decommit, rebase, DPA skip,\n"
		"            resets, a base outside every window\n"
		"  --fw      two devices of a --firmware-committed server: committed and locked\n"
		"            at start, an overlap refused then retried, unplug of the second\n"
		"  --unplug  two devices: only the unplug of the second (any QEMU)\n",
		argv0);
}

int main(int argc, char **argv)
{
	enum { PROOF, BENCH, DEMO, FW, UNPLUG } mode = PROOF;
	uint64_t mib = 128, t3_mib = 16;
	unsigned reps = 9;

	for (int i = 1; i < argc; i++) {
		if (!strcmp(argv[i], "--bench"))
			mode = BENCH;
		else if (!strcmp(argv[i], "--demo"))
			mode = DEMO;
		else if (!strcmp(argv[i], "--fw"))
			mode = FW;
		else if (!strcmp(argv[i], "--unplug"))
			mode = UNPLUG;
		else if (!strcmp(argv[i], "--mib") && i + 1 < argc)
			mib = strtoull(argv[++i], NULL, 0);
		else if (!strcmp(argv[i], "--t3-mib") && i + 1 < argc)
			t3_mib = strtoull(argv[++i], NULL, 0);
		else if (!strcmp(argv[i], "--reps") && i + 1 < argc)
			reps = (unsigned)strtoul(argv[++i], NULL, 0);
		else {
			usage(argv[0]);
			return 2;
		}
	}
	setvbuf(stdout, NULL, _IOLBF, 0);
	if (mode == BENCH)
		run_bench(mib ? mib : 1, t3_mib ? t3_mib : 1, reps ? reps : 1);
	else if (mode == DEMO)
		run_demo();
	else if (mode == FW || mode == UNPLUG)
		run_fw(mode == UNPLUG);
	else
		run_proof();
	printf("RESULT: %u ok, %u failed\n", n_ok, n_fail);
	return n_fail ? 1 : 0;
}
