// SPDX-License-Identifier: BSD-3-Clause
/*
 * type2-guest: the user-space half of e2e-type2, in a guest whose stock Linux
 * 7.2 CXL core and guest-drivers/vcxl_accel drive vcxl's Type-2 model. It
 * uses only the driver's interface (/dev/vcxl_accelN: vcxl_accel_uapi.h):
 *
 *   type2-guest jobs HPA SIZE   the region the driver reports is [HPA, +SIZE);
 *                               FILL and COPY jobs in device memory, CPU stores
 *                               and loads through the region's mapping meeting
 *                               what the jobs wrote, one interrupt per job
 *   type2-guest verify          what `jobs` left is still there; a new job runs
 *   type2-guest longjob         FILLs over the rest of the region until an FLR hits one
 *   type2-guest hdm BDF         decoder 0 of the function's component block,
 *                               read through sysfs resourceN (driver unbound)
 *
 * One "STEP name: ok|FAIL detail" line per check; "HOSTCHECK mem ..." lines
 * name device memory the host then reads through the server's control socket
 * (region offset, length, and the qword pattern: first value and step).
 */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <time.h>
#include <unistd.h>

#include "guest-step.h"
#include "vcxl_accel_uapi.h"

#define DEV_PATH "/dev/vcxl_accel0"
#define MIB	 (1ull << 20)
/* Offsets in the region and lengths of the jobs (the region is >= 256 MiB) */
#define FILL_OFF       (16 * MIB)
#define FILL_LEN       (16 * MIB)
#define FILL_PATTERN   0x5a17c0de0f11a5edull
#define COPY_OFF       (64 * MIB)
#define STORE_OFF      (96 * MIB)
#define STORE_LEN      (4 * MIB)
#define STORE_SEED     0x7e57000000000000ull
#define STORE_COPY     (128 * MIB)
#define VERIFY_OFF     (160 * MIB)
#define VERIFY_LEN     (1 * MIB)
#define VERIFY_PATTERN 0x0123456789abcdefull
#define LONG_OFF       (192 * MIB)
#define LONG_JOBS      50

/* CXL r3.1 8.1.9: Register Locator DVSEC; 8.2.4: CXL.cachemem capabilities */
#define PCI_EXT_CAP_DVSEC     0x23
#define CXL_VENDOR	      0x1e98
#define CXL_DVSEC_REGLOC      8
#define REGLOC_BLOCK1	      0x0c
#define REGLOC_BIR	      0x7u
#define REGLOC_TYPE_SHIFT     8
#define REGLOC_TYPE_COMPONENT 1
#define REGLOC_OFF_LO_MASK    0xffff0000u
#define CXL_CM_OFFSET	      0x1000u
#define CXL_CAP_ID_HDM	      5
#define HDM_DEC0_BASE_LO      0x10
#define HDM_DEC0_CTRL	      0x20
#define HDM_CTRL_LOCK	      (1u << 8)
#define HDM_CTRL_COMMITTED    (1u << 10)

struct accel {
	int fd;
	struct vcxl_accel_info info;
	volatile uint64_t *mem;
};

static int accel_open(struct accel *a)
{
	a->fd = open(DEV_PATH, O_RDWR);
	if (a->fd < 0) {
		printf("open %s: %s\n", DEV_PATH, strerror(errno));
		return -1;
	}
	if (ioctl(a->fd, VCXL_ACCEL_INFO, &a->info)) {
		printf("VCXL_ACCEL_INFO: %s\n", strerror(errno));
		return -1;
	}
	void *p = mmap(NULL, a->info.hpa_size, PROT_READ | PROT_WRITE, MAP_SHARED, a->fd, 0);
	if (p == MAP_FAILED) {
		printf("mmap of the region: %s\n", strerror(errno));
		return -1;
	}
	a->mem = p;
	return 0;
}

static int job(struct accel *a, unsigned long cmd, uint64_t dst, uint64_t src, uint64_t len,
	       uint64_t pattern, uint32_t *lat_us)
{
	struct vcxl_accel_job j = {.dst = dst, .src = src, .len = len, .pattern = pattern};

	if (ioctl(a->fd, cmd, &j))
		return -errno;
	if (lat_us)
		*lat_us = j.irq_latency_us;
	return 0;
}

/* qwords of [off, off + len) equal to first + step * i; returns mismatches */
static uint64_t check(struct accel *a, uint64_t off, uint64_t len, uint64_t first, uint64_t stp)
{
	uint64_t bad = 0;

	for (uint64_t i = 0; i < len / 8; i++)
		bad += a->mem[off / 8 + i] != first + stp * i;
	return bad;
}

static void hostcheck(uint64_t off, uint64_t len, uint64_t first, uint64_t stp)
{
	printf("HOSTCHECK mem dpa=%#" PRIx64 " len=%#" PRIx64 " pattern=%#" PRIx64 " step=%" PRIu64
	       " expect=present\n",
	       off, len, first, stp);
}

static uint64_t irqs(struct accel *a)
{
	struct vcxl_accel_info i;

	return ioctl(a->fd, VCXL_ACCEL_INFO, &i) ? 0 : i.irqs;
}

static int cmd_jobs(uint64_t want_hpa, uint64_t want_size)
{
	struct accel a;
	uint64_t bad, irq0, nj = 0;
	uint32_t lat = 0;
	int rc;

	if (accel_open(&a))
		return 1;
	step("driver-region", a.info.hpa_start == want_hpa && a.info.hpa_size == want_size,
	     "[%#" PRIx64 ", +%#" PRIx64 ") (sysfs region: [%#" PRIx64 ", +%#" PRIx64
	     "]), engine DPA %#" PRIx64,
	     (uint64_t)a.info.hpa_start, (uint64_t)a.info.hpa_size, want_hpa, want_size,
	     (uint64_t)a.info.engine_dpa);
	irq0 = irqs(&a);

	rc = job(&a, VCXL_ACCEL_FILL, FILL_OFF, 0, FILL_LEN, FILL_PATTERN, &lat);
	nj++;
	bad = rc ? FILL_LEN / 8 : check(&a, FILL_OFF, FILL_LEN, FILL_PATTERN, 0);
	step("fill", !rc && !bad,
	     "%llu MiB at region offset %#llx: rc %d, %" PRIu64
	     " of %llu qwords wrong through the mapping, interrupt after %u us",
	     FILL_LEN / MIB, FILL_OFF, rc, bad, FILL_LEN / 8, lat);
	hostcheck(FILL_OFF, FILL_LEN, FILL_PATTERN, 0);

	rc = job(&a, VCXL_ACCEL_COPY, COPY_OFF, FILL_OFF, FILL_LEN, 0, &lat);
	nj++;
	bad = rc ? FILL_LEN / 8 : check(&a, COPY_OFF, FILL_LEN, FILL_PATTERN, 0);
	step("copy", !rc && !bad, "%llu MiB %#llx -> %#llx: rc %d, %" PRIu64 " qwords wrong",
	     FILL_LEN / MIB, FILL_OFF, COPY_OFF, rc, bad);
	hostcheck(COPY_OFF, FILL_LEN, FILL_PATTERN, 0);

	/* the CPU's stores, then the device copies them: both meet in device memory */
	for (uint64_t i = 0; i < STORE_LEN / 8; i++)
		a.mem[STORE_OFF / 8 + i] = STORE_SEED + i;
	bad = check(&a, STORE_OFF, STORE_LEN, STORE_SEED, 1);
	step("store-load", !bad, "%llu MiB stored and loaded at %#llx: %" PRIu64 " qwords wrong",
	     STORE_LEN / MIB, STORE_OFF, bad);
	hostcheck(STORE_OFF, STORE_LEN, STORE_SEED, 1);
	rc = job(&a, VCXL_ACCEL_COPY, STORE_COPY, STORE_OFF, STORE_LEN, 0, &lat);
	nj++;
	bad = rc ? STORE_LEN / 8 : check(&a, STORE_COPY, STORE_LEN, STORE_SEED, 1);
	step("store-copy", !rc && !bad,
	     "the device copied the CPU's stores %#llx -> %#llx: rc %d, %" PRIu64 " qwords wrong",
	     STORE_OFF, STORE_COPY, rc, bad);
	hostcheck(STORE_COPY, STORE_LEN, STORE_SEED, 1);

	rc = job(&a, VCXL_ACCEL_FILL, a.info.hpa_size - 4096, 0, 8192, FILL_PATTERN, NULL);
	step("bounds", rc == -EINVAL, "a FILL past the region's end: %s (want EINVAL)",
	     strerror(-rc));

	uint64_t got = irqs(&a) - irq0;
	step("interrupts", got == nj, "%" PRIu64 " completion interrupts for %" PRIu64 " jobs", got,
	     nj);
	return n_fail != 0;
}

static int cmd_verify(const char *when)
{
	struct accel a;
	uint64_t bad;
	int rc;
	char name[64];

	if (accel_open(&a))
		return 1;
	bad = check(&a, FILL_OFF, FILL_LEN, FILL_PATTERN, 0) +
	      check(&a, STORE_COPY, STORE_LEN, STORE_SEED, 1);
	snprintf(name, sizeof(name), "%s-data", when);
	step(name, !bad, "the jobs' and the stores' data after %s: %" PRIu64 " qwords wrong", when,
	     bad);
	uint64_t irq0 = irqs(&a);
	/* each caller its own range, so that the host finds each one's job */
	uint64_t voff = VERIFY_OFF + (strcmp(when, "flr") ? 2 * VERIFY_LEN : 0);
	rc = job(&a, VCXL_ACCEL_FILL, voff, 0, VERIFY_LEN, VERIFY_PATTERN, NULL);
	bad = rc ? VERIFY_LEN / 8 : check(&a, voff, VERIFY_LEN, VERIFY_PATTERN, 0);
	snprintf(name, sizeof(name), "%s-job", when);
	step(name, !rc && !bad && irqs(&a) == irq0 + 1,
	     "a new FILL after %s: rc %d, %" PRIu64 " qwords wrong, %" PRIu64 " interrupt(s)", when,
	     rc, bad, irqs(&a) - irq0);
	hostcheck(voff, VERIFY_LEN, VERIFY_PATTERN, 0);
	return n_fail != 0;
}

/* Back-to-back FILLs over the rest of the region until a reset interrupts one (the
 * driver answers -EINTR for the job the FLR aborted, -EAGAIN while it resets). */
static int cmd_longjob(void)
{
	struct accel a;
	uint64_t len;
	int rc = 0, n;

	if (accel_open(&a))
		return 1;
	len = a.info.hpa_size - LONG_OFF;
	printf("LONGJOB start: up to %d FILLs of %" PRIu64 " bytes\n", LONG_JOBS, len);
	fflush(stdout);
	for (n = 0; n < LONG_JOBS && !rc; n++)
		rc = job(&a, VCXL_ACCEL_FILL, LONG_OFF, 0, len, FILL_PATTERN, NULL);
	printf("LONGJOB rc=%d (%s) at job %d of %d\n", rc, rc ? strerror(-rc) : "all completed", n,
	       LONG_JOBS);
	return rc != 0 && rc != -EINTR && rc != -EAGAIN;
}

static int read_at(const char *path, void *buf, size_t len, off_t off)
{
	int fd = open(path, O_RDONLY);
	ssize_t n = fd < 0 ? -1 : pread(fd, buf, len, off);

	if (fd >= 0)
		close(fd);
	return n == (ssize_t)len ? 0 : -1;
}

static int cmd_hdm(const char *bdf, uint64_t want_base)
{
	char path[256];
	uint32_t hdr, v;
	unsigned pos = 0x100, bir = 0;
	uint64_t off = 0;
	bool found = false;

	snprintf(path, sizeof(path), "/sys/bus/pci/devices/%s/config", bdf);
	/* PCIe r6.0 7.6: the extended capability list, looking for the Register Locator */
	for (int guard = 0; pos && guard < 64; guard++) {
		uint32_t h1;
		if (read_at(path, &hdr, 4, pos) || read_at(path, &h1, 4, pos + 4))
			break;
		if ((hdr & 0xffff) == PCI_EXT_CAP_DVSEC && (h1 & 0xffff) == CXL_VENDOR) {
			uint32_t h2, len;
			read_at(path, &h2, 4, pos + 8);
			len = h1 >> 20;
			if ((h2 & 0xffff) == CXL_DVSEC_REGLOC) {
				for (unsigned b = REGLOC_BLOCK1; b + 8 <= len; b += 8) {
					uint32_t lo, hi;
					read_at(path, &lo, 4, pos + b);
					read_at(path, &hi, 4, pos + b + 4);
					if (((lo >> REGLOC_TYPE_SHIFT) & 0xff) ==
					    REGLOC_TYPE_COMPONENT) {
						bir = lo & REGLOC_BIR;
						off = ((uint64_t)hi << 32) |
						      (lo & REGLOC_OFF_LO_MASK);
						found = true;
					}
				}
			}
		}
		pos = hdr >> 20;
	}
	if (!found) {
		step("hdm-after-unbind", 0, "no component block in the Register Locator");
		return 1;
	}
	snprintf(path, sizeof(path), "/sys/bus/pci/devices/%s/resource%u", bdf, bir);
	int fd = open(path, O_RDWR | O_SYNC);
	long pg = sysconf(_SC_PAGESIZE);
	void *p = fd < 0 ? MAP_FAILED
			 : mmap(NULL, 0x10000, PROT_READ, MAP_SHARED, fd, (off_t)(off & ~(pg - 1)));
	if (p == MAP_FAILED) {
		step("hdm-after-unbind", 0, "mmap %s: %s", path, strerror(errno));
		return 1;
	}
	volatile uint32_t *cm = (volatile uint32_t *)((char *)p + (off & (pg - 1)) + CXL_CM_OFFSET);
	unsigned n = cm[0] >> 24;
	uint32_t hdm = 0;
	for (unsigned i = 1; i <= n; i++)
		if ((cm[i] & 0xffff) == CXL_CAP_ID_HDM)
			hdm = cm[i] >> 20;
	if (!hdm) {
		step("hdm-after-unbind", 0, "no HDM decoder capability");
		return 1;
	}
	volatile uint32_t *h = (volatile uint32_t *)((char *)cm + hdm);
	v = h[HDM_DEC0_CTRL / 4];
	uint64_t base =
	    ((uint64_t)h[HDM_DEC0_BASE_LO / 4 + 1] << 32) | (h[HDM_DEC0_BASE_LO / 4] & 0xf0000000u);
	step("hdm-after-unbind",
	     (v & HDM_CTRL_COMMITTED) && (v & HDM_CTRL_LOCK) && base == want_base,
	     "decoder 0 as firmware left it: control %#x (committed %d, locked %d), base %#" PRIx64
	     " (want %#" PRIx64 ")",
	     v, !!(v & HDM_CTRL_COMMITTED), !!(v & HDM_CTRL_LOCK), base, want_base);
	return n_fail != 0;
}

int main(int argc, char **argv)
{
	setvbuf(stdout, NULL, _IOLBF, 0);
	if (argc == 4 && !strcmp(argv[1], "jobs"))
		return cmd_jobs(strtoull(argv[2], NULL, 0), strtoull(argv[3], NULL, 0));
	if (argc == 3 && !strcmp(argv[1], "verify"))
		return cmd_verify(argv[2]);
	if (argc == 2 && !strcmp(argv[1], "longjob"))
		return cmd_longjob();
	if (argc == 4 && !strcmp(argv[1], "hdm"))
		return cmd_hdm(argv[2], strtoull(argv[3], NULL, 0));
	fprintf(stderr,
		"usage: type2-guest jobs HPA SIZE | verify WHEN | longjob | hdm BDF BASE\n");
	return 2;
}
