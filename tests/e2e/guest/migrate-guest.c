// SPDX-License-Identifier: BSD-3-Clause
/*
 * migrate-guest: the guest half of e2e-migrate (tests/e2e/run-e2e-migrate.sh).
 * It runs in the Linux 7.2 guest of e2e-type2, guest-drivers/vcxl_accel bound
 * to vcxl's accelerator; the server is --firmware-committed, so the VM's
 * firmware (the CXL-aware QEMU) committed and locked decoder 0 and the driver
 * found its region through the kernel's Type-2 API.
 *
 *   migrate-guest run BDF
 *
 * Setup (STEP setup-*): decoder 0 committed and locked at the region's base
 * (the component block through sysfs resource mmap); a seeded pattern over
 * PAT_LEN (64 MiB) of CXL memory through the driver's mapping of the region;
 * device registers: HDM decoder 1's base and size, the CXL RAS masks, the
 * PCIe Device Control register; a seeded pattern over BAR0's RAM. Then two
 * threads run until told otherwise:
 *   jobs   back-to-back FILLs of JOB_LEN over one zone, each with its own
 *          pattern, completed by MSI-X (the driver's ioctl), so a job is in
 *          flight almost all the time;
 *   dirty  a generation counter: generation g rewrites DIRTY_LEN of CXL memory
 *          and as much of guest RAM (qword i = g << 40 | i), then the counter
 *          (in CXL memory and in RAM).
 * "MIG-READY" says so on the console. Commands come from the host on the
 * second serial line (/dev/ttyS1, a socket of the current QEMU), a line each:
 *   VERIFY TAG [inflight=PATTERN]  stop both threads (the job in flight
 *          completes, the generation ends), check everything (STEP TAG-*),
 *          print HOSTCHECK lines for the host and "VERIFY-DONE TAG fail=N".
 *          Among them: UNTOUCHED_LEN the guest never writes reads zero (a
 *          destination whose memory held data there must have cleared it).
 *          The threads stay stopped while the host reads device memory.
 *          PATTERN: the job the host found in flight (BUSY) when the VM
 *          stopped for the switch-over; it must have completed with its
 *          interrupt.
 *   RESUME     start both threads again ("RESUMED").
 *   FINAL TAG  VERIFY, then one new job checked, "FINAL-DONE".
 *   QUIT       exit (the init powers the VM off).
 * The host writes nothing into the guest: the guest learns of a migration
 * only through these lines, so whatever it finds is what migrated.
 * Every check is a "STEP name: ok|FAIL detail" line (guest-step.h); HOSTCHECK
 * lines name region offsets and the qwords the host must find there through
 * the server's control socket: "pattern=P step=S" (qword i = P + S * i).
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <pthread.h>
#include <sched.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <termios.h>
#include <time.h>
#include <unistd.h>

#include "guest-step.h"
#include "vcxl_accel_uapi.h"

/* The device, as the spec and vcxl's model define it (the guest program stands alone,
 * as a vendor's would: no vcxl header) */
#define PCIE_EXT_CAP_START		0x100
#define PCIE_EXT_CAP_ID_DVSEC		0x0023
#define CXL_VENDOR_ID			0x1e98
#define CXL_DVSEC_ID_REG_LOCATOR	8 /* CXL r3.1 8.1.9 */
#define CXL_REGLOC_FIRST_ENTRY		0x0c
#define CXL_REGLOC_RBI_COMPONENT	1
#define CXL_CM_OFFSET			0x1000 /* CXL r3.1 8.2.4: CXL.cachemem in the block */
#define CXL_CM_CAP_ID_RAS		2
#define CXL_CM_CAP_ID_HDM		5
#define CXL_RAS_UNCORR_MASK		0x04
#define CXL_RAS_CORR_MASK		0x10
#define CXL_HDM_DEC_BASE_LO(n)		(0x10 + (n)*0x20) /* CXL r3.1 8.2.4.20 */
#define CXL_HDM_DEC_BASE_HI(n)		(0x14 + (n)*0x20)
#define CXL_HDM_DEC_SIZE_LO(n)		(0x18 + (n)*0x20)
#define CXL_HDM_DEC_SIZE_HI(n)		(0x1c + (n)*0x20)
#define CXL_HDM_DEC_CTRL(n)		(0x20 + (n)*0x20)
#define CXL_HDM_DEC_LO_MASK		0xf0000000u
#define CXL_HDM_DEC_CTRL_LOCK_ON_COMMIT (1u << 8)
#define CXL_HDM_DEC_CTRL_COMMITTED	(1u << 10)
#define VCXL_MODEL_BAR0_SIZE		(4u << 20) /* component block + device RAM */
#define VCXL_MODEL_CTRL_BAR		2	   /* the job engine */
#define VCXL_MODEL_BAR2_SIZE		0x4000
#define ACCEL_REG_JOB_OP		0x08
#define ACCEL_REG_JOB_FLAGS		0x0c
#define ACCEL_REG_JOB_DST		0x18
#define ACCEL_REG_JOB_LEN		0x20
#define ACCEL_REG_JOB_PATTERN		0x28
#define ACCEL_REG_STATUS		0x34
#define ACCEL_REG_JOB_VECTOR		0x38
#define ACCEL_OP_FILL			1
#define ACCEL_JOBF_IRQ			(1u << 2)
#define ACCEL_STATUS_BUSY		(1u << 0)

#define DEV_PATH "/dev/vcxl_accel0"
#define CMD_TTY	 "/dev/ttyS1"
#define MIB	 (1ull << 20)

/* The region (>= 512 MiB): what lives where, as offsets from its start */
#define PAT_OFF	   0ull
#define PAT_LEN	   (64 * MIB)
#define PAT_SEED   0x6d69677261746531ull /* "1etargim": qword i is PAT_SEED + PAT_STEP * i */
#define PAT_STEP   0x009e3779b97f4a7dull
#define DIRTY_OFF  (64 * MIB)
#define DIRTY_LEN  (8 * MIB)
#define GEN_OFF	   (72 * MIB) /* the generation counter, a qword */
#define JOB_OFF	   (128 * MIB)
#define JOB_LEN	   (128 * MIB)
#define JOB_SEED   0x4a4f42000000a5a5ull
#define FINAL_OFF  (320 * MIB)
#define FINAL_LEN  (4 * MIB)
#define FINAL_PAT  0x46494e414c4a4f42ull
#define UNTOUCHED_OFF (448 * MIB) /* never written: reads zero wherever the VM moves */
#define UNTOUCHED_LEN (4 * MIB)
#define REGION_MIN (512 * MIB)

/* BAR0's RAM past the component block (model.h: 4 MiB BAR0) */
#define BAR0_RAM_OFF  (2 * MIB)
#define BAR0_RAM_LEN  (16 * 1024)
#define BAR0_RAM_SEED 0x6261723072616d31ull

/* Device registers the guest sets */
#define DEC1_BASE_LO	0x30000000u /* bits 31:28 only */
#define DEC1_BASE_HI	0x00000007u
#define DEC1_SIZE_LO	0x10000000u /* 256 MiB */
#define DEC1_SIZE_HI	0u
#define RAS_UNCORR_MASK 0x00000a5au
#define RAS_CORR_MASK	0x00000045u
/* PCIe Device Control: Max_Read_Request_Size 1024 (3 << 12), relaxed ordering,
 * no snoop: fields the kernel set up at enumeration and leaves alone */
#define PCI_EXP_DEVCTL_MASK (0x7000u | 0x0010u | 0x0800u)
#define PCI_EXP_DEVCTL_WANT (0x3000u | 0x0010u)

#define PCI_CAP_ID_EXP	    0x10
#define PCI_EXP_DEVCTL	    8
#define PCI_CAPABILITY_LIST 0x34

static uint64_t splitmix64(uint64_t x)
{
	x += 0x9e3779b97f4a7c15ull;
	x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ull;
	x = (x ^ (x >> 27)) * 0x94d049bb133111ebull;
	return x ^ (x >> 31);
}

static uint64_t now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000 + (uint64_t)ts.tv_nsec / 1000000;
}

/* ---- the device: the driver's region and jobs, BAR0 and BAR2 read through sysfs ---- */

struct dev {
	const char *bdf;
	int fd;
	struct vcxl_accel_info info;
	volatile uint64_t *mem; /* the region */
	volatile uint8_t *bar0, *bar2;
	uint64_t comp_off; /* the component block in BAR0 */
	volatile uint32_t *hdm, *ras;
	char cfg_path[256];
};

static struct dev D;
static int irqs_fd = -1; /* the driver's sysfs "irqs" */

static int sysfs_map(const char *bdf, unsigned bar, size_t len, int prot, volatile uint8_t **out)
{
	char path[256];
	int fd;
	void *p;

	snprintf(path, sizeof(path), "/sys/bus/pci/devices/%s/resource%u", bdf, bar);
	fd = open(path, (prot & PROT_WRITE) ? O_RDWR | O_SYNC : O_RDONLY | O_SYNC);
	if (fd < 0) {
		printf("open %s: %s\n", path, strerror(errno));
		return -1;
	}
	p = mmap(NULL, len, prot, MAP_SHARED, fd, 0);
	close(fd);
	if (p == MAP_FAILED) {
		printf("mmap %s: %s\n", path, strerror(errno));
		return -1;
	}
	*out = p;
	return 0;
}

static int cfg_read(unsigned off, void *buf, size_t len)
{
	int fd = open(D.cfg_path, O_RDONLY);
	ssize_t n = fd < 0 ? -1 : pread(fd, buf, len, off);

	if (fd >= 0)
		close(fd);
	return n == (ssize_t)len ? 0 : -1;
}

static int cfg_write(unsigned off, const void *buf, size_t len)
{
	int fd = open(D.cfg_path, O_WRONLY);
	ssize_t n = fd < 0 ? -1 : pwrite(fd, buf, len, off);

	if (fd >= 0)
		close(fd);
	return n == (ssize_t)len ? 0 : -1;
}

/* The component block (Register Locator DVSEC), its HDM decoder and RAS capabilities */
static int find_component(void)
{
	unsigned pos = PCIE_EXT_CAP_START;
	bool found = false;
	unsigned bir = 0;

	for (int guard = 0; pos && guard < 64; guard++) {
		uint32_t hdr, h1, h2;

		if (cfg_read(pos, &hdr, 4) || cfg_read(pos + 4, &h1, 4) ||
		    cfg_read(pos + 8, &h2, 4))
			break;
		if ((hdr & 0xffff) == PCIE_EXT_CAP_ID_DVSEC && (h1 & 0xffff) == CXL_VENDOR_ID &&
		    (h2 & 0xffff) == CXL_DVSEC_ID_REG_LOCATOR) {
			unsigned len = h1 >> 20;
			for (unsigned b = CXL_REGLOC_FIRST_ENTRY; b + 8 <= len; b += 8) {
				uint32_t lo, hi;
				cfg_read(pos + b, &lo, 4);
				cfg_read(pos + b + 4, &hi, 4);
				if (((lo >> 8) & 0xff) == CXL_REGLOC_RBI_COMPONENT) {
					bir = lo & 7;
					D.comp_off = ((uint64_t)hi << 32) | (lo & 0xffff0000u);
					found = true;
				}
			}
		}
		pos = hdr >> 20;
	}
	if (!found || bir != 0) {
		printf("component block: %s (BIR %u)\n", found ? "not in BAR0" : "not found", bir);
		return -1;
	}
	if (sysfs_map(D.bdf, 0, VCXL_MODEL_BAR0_SIZE, PROT_READ | PROT_WRITE, &D.bar0))
		return -1;
	volatile uint32_t *cm = (volatile uint32_t *)(D.bar0 + D.comp_off + CXL_CM_OFFSET);
	unsigned n = cm[0] >> 24;
	for (unsigned i = 1; i <= n; i++) {
		uint32_t id = cm[i] & 0xffff, ptr = cm[i] >> 20;
		if (id == CXL_CM_CAP_ID_HDM)
			D.hdm = (volatile uint32_t *)((volatile uint8_t *)cm + ptr);
		if (id == CXL_CM_CAP_ID_RAS)
			D.ras = (volatile uint32_t *)((volatile uint8_t *)cm + ptr);
	}
	if (!D.hdm || !D.ras) {
		printf("component block at BAR0 %#" PRIx64 ": HDM %p RAS %p\n", D.comp_off,
		       (void *)D.hdm, (void *)D.ras);
		return -1;
	}
	return 0;
}

static unsigned pcie_cap(void)
{
	uint8_t p = 0;

	cfg_read(PCI_CAPABILITY_LIST, &p, 1);
	for (int guard = 0; p && guard < 48; guard++) {
		uint8_t id, next;
		if (cfg_read(p, &id, 1) || cfg_read(p + 1, &next, 1))
			return 0;
		if (id == PCI_CAP_ID_EXP)
			return p;
		p = next & 0xfc;
	}
	return 0;
}

static int dev_open(const char *bdf)
{
	char path[256];
	void *p;

	D.bdf = bdf;
	snprintf(D.cfg_path, sizeof(D.cfg_path), "/sys/bus/pci/devices/%s/config", bdf);
	D.fd = open(DEV_PATH, O_RDWR);
	if (D.fd < 0 || ioctl(D.fd, VCXL_ACCEL_INFO, &D.info)) {
		printf("%s: %s\n", DEV_PATH, strerror(errno));
		return -1;
	}
	p = mmap(NULL, D.info.hpa_size, PROT_READ | PROT_WRITE, MAP_SHARED, D.fd, 0);
	if (p == MAP_FAILED) {
		printf("mmap of the region: %s\n", strerror(errno));
		return -1;
	}
	D.mem = p;
	snprintf(path, sizeof(path), "/sys/bus/pci/devices/%s/irqs", bdf);
	irqs_fd = open(path, O_RDONLY);
	if (sysfs_map(bdf, VCXL_MODEL_CTRL_BAR, VCXL_MODEL_BAR2_SIZE, PROT_READ, &D.bar2))
		return -1;
	return find_component();
}

static uint32_t bar2_r32(uint32_t off)
{
	return *(volatile uint32_t *)(D.bar2 + off);
}

static uint64_t bar2_r64(uint32_t off)
{
	return bar2_r32(off) | (uint64_t)bar2_r32(off + 4) << 32;
}

/* the driver's interrupt count: its sysfs attribute (no register read, unlike
 * VCXL_ACCEL_INFO's JOBS_DONE: the job thread reads it between two jobs) */
static uint64_t info_irqs(void)
{
	struct vcxl_accel_info i;
	char buf[32];
	ssize_t n;

	if (irqs_fd >= 0 && (n = pread(irqs_fd, buf, sizeof(buf) - 1, 0)) > 0) {
		buf[n] = 0;
		return strtoull(buf, NULL, 10);
	}
	return ioctl(D.fd, VCXL_ACCEL_INFO, &i) ? 0 : i.irqs;
}

static uint64_t info_jobs_done(void)
{
	struct vcxl_accel_info i;

	return ioctl(D.fd, VCXL_ACCEL_INFO, &i) ? 0 : i.jobs_done;
}

static int fill(uint64_t off, uint64_t len, uint64_t pattern, uint32_t *lat_us)
{
	struct vcxl_accel_job j = {.dst = off, .len = len, .pattern = pattern};

	if (ioctl(D.fd, VCXL_ACCEL_FILL, &j))
		return -errno;
	if (lat_us)
		*lat_us = j.irq_latency_us;
	return 0;
}

/* qwords of the region's [off, off + len) other than first + step * i */
static uint64_t check_arith(uint64_t off, uint64_t len, uint64_t first, uint64_t stp)
{
	uint64_t bad = 0;

	for (uint64_t i = 0; i < len / 8; i++)
		bad += D.mem[off / 8 + i] != first + stp * i;
	return bad;
}

static void hostcheck(uint64_t off, uint64_t len, uint64_t first, uint64_t stp)
{
	printf("HOSTCHECK mem dpa=%#" PRIx64 " len=%#" PRIx64 " pattern=%#" PRIx64 " step=%" PRIu64
	       " expect=present\n",
	       off, len, first, stp);
}

/* ---- what the guest sets up, and checks after each command ---- */

static uint64_t hpa_base; /* the region's base, as setup found it */
static uint16_t devctl_want;

static uint64_t pattern_bad(void)
{
	return check_arith(PAT_OFF, PAT_LEN, PAT_SEED, PAT_STEP);
}

static uint64_t bar0_ram_bad(void)
{
	volatile uint32_t *r = (volatile uint32_t *)(D.bar0 + BAR0_RAM_OFF);
	uint64_t bad = 0;

	for (uint64_t i = 0; i < BAR0_RAM_LEN / 4; i++)
		bad += r[i] != (uint32_t)splitmix64(BAR0_RAM_SEED + i);
	return bad;
}

static void check_decoders(const char *tag)
{
	char name[64];
	uint32_t c0 = D.hdm[CXL_HDM_DEC_CTRL(0) / 4];
	uint64_t b0 = (uint64_t)D.hdm[CXL_HDM_DEC_BASE_HI(0) / 4] << 32 |
		      (D.hdm[CXL_HDM_DEC_BASE_LO(0) / 4] & CXL_HDM_DEC_LO_MASK);
	uint64_t s0 = (uint64_t)D.hdm[CXL_HDM_DEC_SIZE_HI(0) / 4] << 32 |
		      (D.hdm[CXL_HDM_DEC_SIZE_LO(0) / 4] & CXL_HDM_DEC_LO_MASK);
	uint32_t b1l = D.hdm[CXL_HDM_DEC_BASE_LO(1) / 4], b1h = D.hdm[CXL_HDM_DEC_BASE_HI(1) / 4];
	uint32_t s1l = D.hdm[CXL_HDM_DEC_SIZE_LO(1) / 4], s1h = D.hdm[CXL_HDM_DEC_SIZE_HI(1) / 4];
	uint32_t c1 = D.hdm[CXL_HDM_DEC_CTRL(1) / 4];

	snprintf(name, sizeof(name), "%s-decoders", tag);
	step(name,
	     (c0 & CXL_HDM_DEC_CTRL_COMMITTED) && (c0 & CXL_HDM_DEC_CTRL_LOCK_ON_COMMIT) &&
		 b0 == hpa_base && s0 == D.info.hpa_size &&
		 (b1l & CXL_HDM_DEC_LO_MASK) == DEC1_BASE_LO && b1h == DEC1_BASE_HI &&
		 (s1l & CXL_HDM_DEC_LO_MASK) == DEC1_SIZE_LO && s1h == DEC1_SIZE_HI &&
		 !(c1 & CXL_HDM_DEC_CTRL_COMMITTED),
	     "decoder 0: control %#x (committed %d, locked %d), base %#" PRIx64 " size %#" PRIx64
	     " (want %#" PRIx64 ", %#" PRIx64 "); decoder 1 (not committed): base %#x:%08x size "
	     "%#x:%08x control %#x (want %#x:%08x, %#x:%08x)",
	     c0, !!(c0 & CXL_HDM_DEC_CTRL_COMMITTED), !!(c0 & CXL_HDM_DEC_CTRL_LOCK_ON_COMMIT), b0,
	     s0, hpa_base, (uint64_t)D.info.hpa_size, b1h, b1l, s1h, s1l, c1, DEC1_BASE_HI,
	     DEC1_BASE_LO, DEC1_SIZE_HI, DEC1_SIZE_LO);
}

static void check_registers(const char *tag)
{
	char name[64];
	unsigned pcie = pcie_cap();
	uint16_t devctl = 0;
	uint32_t um = D.ras[CXL_RAS_UNCORR_MASK / 4], cm = D.ras[CXL_RAS_CORR_MASK / 4];

	if (pcie)
		cfg_read(pcie + PCI_EXP_DEVCTL, &devctl, 2);
	snprintf(name, sizeof(name), "%s-registers", tag);
	step(name, pcie && devctl == devctl_want && um == RAS_UNCORR_MASK && cm == RAS_CORR_MASK,
	     "PCIe Device Control %#06x (want %#06x), CXL RAS uncorrectable mask %#x, "
	     "correctable mask %#x (want %#x, %#x)",
	     devctl, devctl_want, um, cm, RAS_UNCORR_MASK, RAS_CORR_MASK);
	uint64_t bad = bar0_ram_bad();
	snprintf(name, sizeof(name), "%s-bar0-ram", tag);
	step(name, !bad, "%u KiB of BAR0 RAM at %#llx: %" PRIu64 " of %u dwords wrong",
	     BAR0_RAM_LEN / 1024, BAR0_RAM_OFF, bad, BAR0_RAM_LEN / 4);
}

/* Step 1-3: decoder 0 as firmware committed it, the pattern, the registers, BAR0 RAM */
static int setup(void)
{
	uint64_t t0 = now_ms(), bad;
	unsigned pcie;
	uint16_t devctl = 0;

	hpa_base = D.info.hpa_start;
	step("setup-region", D.info.hpa_size >= REGION_MIN,
	     "the driver's region [%#" PRIx64 ", +%#" PRIx64 "), engine DPA %#" PRIx64 ", %" PRIu64
	     " jobs done (want >= %llu MiB)",
	     (uint64_t)D.info.hpa_start, (uint64_t)D.info.hpa_size, (uint64_t)D.info.engine_dpa,
	     (uint64_t)D.info.jobs_done, REGION_MIN / MIB);
	if (D.info.hpa_size < REGION_MIN)
		return -1;

	for (uint64_t i = 0; i < PAT_LEN / 8; i++)
		D.mem[PAT_OFF / 8 + i] = PAT_SEED + PAT_STEP * i;
	bad = pattern_bad();
	step("setup-pattern", !bad,
	     "%llu MiB of seeded pattern written at region offset %#llx and read back in %" PRIu64
	     " ms: %" PRIu64 " qwords wrong",
	     PAT_LEN / MIB, PAT_OFF, now_ms() - t0, bad);

	D.hdm[CXL_HDM_DEC_BASE_LO(1) / 4] = DEC1_BASE_LO;
	D.hdm[CXL_HDM_DEC_BASE_HI(1) / 4] = DEC1_BASE_HI;
	D.hdm[CXL_HDM_DEC_SIZE_LO(1) / 4] = DEC1_SIZE_LO;
	D.hdm[CXL_HDM_DEC_SIZE_HI(1) / 4] = DEC1_SIZE_HI;
	D.ras[CXL_RAS_UNCORR_MASK / 4] = RAS_UNCORR_MASK;
	D.ras[CXL_RAS_CORR_MASK / 4] = RAS_CORR_MASK;
	pcie = pcie_cap();
	if (pcie && !cfg_read(pcie + PCI_EXP_DEVCTL, &devctl, 2)) {
		devctl_want = (uint16_t)((devctl & ~PCI_EXP_DEVCTL_MASK) | PCI_EXP_DEVCTL_WANT);
		cfg_write(pcie + PCI_EXP_DEVCTL, &devctl_want, 2);
	}
	volatile uint32_t *r = (volatile uint32_t *)(D.bar0 + BAR0_RAM_OFF);
	for (uint64_t i = 0; i < BAR0_RAM_LEN / 4; i++)
		r[i] = (uint32_t)splitmix64(BAR0_RAM_SEED + i);
	printf("setup: PCIe Device Control %#06x -> %#06x\n", devctl, devctl_want);
	check_decoders("setup");
	check_registers("setup");
	return 0;
}

/* ---- the two threads ---- */

struct job_rec {
	uint64_t no, pattern;
	int rc;
	uint32_t lat_us;
	uint64_t irqs_after;
};
#define JOB_LOG 4096

static volatile int stop_threads;
static pthread_t job_thr, dirty_thr;
static uint64_t jobs_run, jobs_failed, job_last_pattern, job_next = 1, lat_max_us;
static struct job_rec job_log[JOB_LOG];
static uint64_t irq_base, jobs_done_base;

static uint64_t job_pattern(uint64_t no)
{
	return JOB_SEED ^ (no << 20);
}

static void *job_main(void *arg)
{
	/* the next job goes in as soon as the last one's interrupt is in: ahead of the
	 * generation thread, which has the vCPU otherwise */
	struct sched_param sp = {.sched_priority = 10};

	(void)arg;
	pthread_setschedparam(pthread_self(), SCHED_FIFO, &sp);
	while (!stop_threads) {
		uint64_t no = job_next++, pat = job_pattern(no);
		uint32_t lat = 0;
		int rc = fill(JOB_OFF, JOB_LEN, pat, &lat);
		struct job_rec *r = &job_log[no % JOB_LOG];

		*r = (struct job_rec){
		    .no = no, .pattern = pat, .rc = rc, .lat_us = lat, .irqs_after = info_irqs()};
		jobs_run++;
		if (lat > lat_max_us)
			lat_max_us = lat;
		if (rc) {
			jobs_failed++;
			printf("job %" PRIu64 ": %s\n", no, strerror(-rc));
			fflush(stdout);
			break;
		}
		job_last_pattern = pat;
	}
	return NULL;
}

static uint64_t gen, gen_checked;
static uint64_t *ram_zone;

static void *dirty_main(void *arg)
{
	(void)arg;
	while (!stop_threads) {
		uint64_t g = gen + 1, v = g << 40;

		for (uint64_t i = 0; i < DIRTY_LEN / 8; i++) {
			D.mem[DIRTY_OFF / 8 + i] = v + i;
			ram_zone[i] = v + i;
		}
		D.mem[GEN_OFF / 8] = g;
		gen = g;
	}
	return NULL;
}

static void threads_start(void)
{
	stop_threads = 0;
	pthread_create(&job_thr, NULL, job_main, NULL);
	pthread_create(&dirty_thr, NULL, dirty_main, NULL);
}

static void threads_stop(void)
{
	stop_threads = 1;
	pthread_join(job_thr, NULL);
	pthread_join(dirty_thr, NULL);
}

/* ---- the host's commands ---- */

static int verify(const char *tag, uint64_t inflight)
{
	char name[64];
	uint64_t bad, t0 = now_ms();
	unsigned fail0 = n_fail;

	printf("VERIFY-BEGIN %s\n", tag);
	threads_stop();
	check_decoders(tag);
	check_registers(tag);

	bad = pattern_bad();
	snprintf(name, sizeof(name), "%s-pattern", tag);
	step(name, !bad,
	     "%llu MiB of seeded pattern at region offset %#llx: %" PRIu64 " of %llu qwords wrong",
	     PAT_LEN / MIB, PAT_OFF, bad, PAT_LEN / 8);
	hostcheck(PAT_OFF, PAT_LEN, PAT_SEED, PAT_STEP);

	/* the generation: every qword of both zones from the last one, the counter equal */
	uint64_t g = gen, v = g << 40, cbad = check_arith(DIRTY_OFF, DIRTY_LEN, v, 1), rbad = 0;
	for (uint64_t i = 0; i < DIRTY_LEN / 8; i++)
		rbad += ram_zone[i] != v + i;
	uint64_t ctr = D.mem[GEN_OFF / 8];
	snprintf(name, sizeof(name), "%s-generation", tag);
	step(name, g > gen_checked && !cbad && !rbad && ctr == g,
	     "generation %" PRIu64 " (%" PRIu64
	     " since the last check), counter in CXL memory %" PRIu64
	     "; %llu MiB of CXL memory: %" PRIu64 " qwords wrong; %llu MiB of RAM: %" PRIu64
	     " qwords wrong",
	     g, g - gen_checked, ctr, DIRTY_LEN / MIB, cbad, DIRTY_LEN / MIB, rbad);
	gen_checked = g;
	hostcheck(DIRTY_OFF, DIRTY_LEN, v, 1);
	hostcheck(GEN_OFF, 8, g, 0);

	/* the jobs: every one completed, one interrupt each, the device's counter */
	uint64_t irqs = info_irqs() - irq_base, done = info_jobs_done() - jobs_done_base;
	snprintf(name, sizeof(name), "%s-jobs", tag);
	step(name,
	     jobs_run > 0 && !jobs_failed && irqs == jobs_run &&
		 (uint32_t)done == (uint32_t)jobs_run,
	     "%" PRIu64 " FILLs of %llu MiB so far, %" PRIu64 " failed; %" PRIu64
	     " completion interrupts; the device's JOBS_DONE %+" PRId64 "; longest doorbell to "
	     "interrupt %" PRIu64 " ms",
	     jobs_run, JOB_LEN / MIB, jobs_failed, irqs, (int64_t)done, lat_max_us / 1000);
	if (inflight) {
		const struct job_rec *r = NULL;
		for (unsigned i = 0; i < JOB_LOG; i++)
			if (job_log[i].no && job_log[i].pattern == inflight)
				r = &job_log[i];
		snprintf(name, sizeof(name), "%s-job-in-flight", tag);
		step(name, r && !r->rc && r->irqs_after - irq_base == r->no,
		     "the job in flight at the switch-over (pattern %#" PRIx64
		     "): %s%s, job %" PRIu64 ", doorbell to interrupt %u ms, %" PRIu64
		     " interrupts after it",
		     inflight, r ? "completed " : "not found",
		     r ? (r->rc ? strerror(-r->rc) : "ok") : "", r ? r->no : 0,
		     r ? r->lat_us / 1000 : 0, r ? r->irqs_after - irq_base : 0);
	}
	bad = job_last_pattern ? check_arith(JOB_OFF, JOB_LEN, job_last_pattern, 0) : JOB_LEN / 8;
	snprintf(name, sizeof(name), "%s-job-data", tag);
	step(name, !bad,
	     "the last job's %llu MiB at region offset %#llx (pattern %#" PRIx64 "): %" PRIu64
	     " qwords wrong",
	     JOB_LEN / MIB, JOB_OFF, job_last_pattern, bad);
	hostcheck(JOB_OFF, JOB_LEN, job_last_pattern, 0);

	/* memory nobody wrote: zero on every destination, whatever its memory held before */
	bad = check_arith(UNTOUCHED_OFF, UNTOUCHED_LEN, 0, 0);
	snprintf(name, sizeof(name), "%s-untouched", tag);
	step(name, !bad, "%llu MiB never written at region offset %#llx: %" PRIu64 " qwords not zero",
	     UNTOUCHED_LEN / MIB, UNTOUCHED_OFF, bad);
	hostcheck(UNTOUCHED_OFF, UNTOUCHED_LEN, 0, 0);
	uint32_t op = bar2_r32(ACCEL_REG_JOB_OP), fl = bar2_r32(ACCEL_REG_JOB_FLAGS);
	uint32_t vec = bar2_r32(ACCEL_REG_JOB_VECTOR), st = bar2_r32(ACCEL_REG_STATUS);
	uint64_t dst = bar2_r64(ACCEL_REG_JOB_DST), len = bar2_r64(ACCEL_REG_JOB_LEN);
	uint64_t pat = bar2_r64(ACCEL_REG_JOB_PATTERN);
	snprintf(name, sizeof(name), "%s-job-registers", tag);
	step(name,
	     op == ACCEL_OP_FILL && fl == ACCEL_JOBF_IRQ && vec == 0 && !(st & ACCEL_STATUS_BUSY) &&
		 dst == D.info.engine_dpa + JOB_OFF && len == JOB_LEN && pat == job_last_pattern,
	     "BAR2: op %u flags %#x vector %u status %#x dst %#" PRIx64 " len %#" PRIx64
	     " pattern %#" PRIx64 " (the last job's: FILL, IRQ, 0, idle, %#" PRIx64
	     ", %#llx, %#" PRIx64 ")",
	     op, fl, vec, st, dst, len, pat, (uint64_t)(D.info.engine_dpa + JOB_OFF), JOB_LEN,
	     job_last_pattern);
	printf("VERIFY-DONE %s fail=%u (%" PRIu64 " ms)\n", tag, n_fail - fail0, now_ms() - t0);
	fflush(stdout);
	return n_fail != fail0;
}

static void final_job(const char *tag)
{
	char name[64];
	uint64_t irq0 = info_irqs();
	uint32_t lat = 0;
	int rc = fill(FINAL_OFF, FINAL_LEN, FINAL_PAT, &lat);
	uint64_t bad = rc ? FINAL_LEN / 8 : check_arith(FINAL_OFF, FINAL_LEN, FINAL_PAT, 0);

	snprintf(name, sizeof(name), "%s-new-job", tag);
	step(name, !rc && !bad && info_irqs() == irq0 + 1,
	     "a new FILL of %llu MiB at %#llx: %s, %" PRIu64 " qwords wrong, %" PRIu64
	     " interrupt(s), %u us",
	     FINAL_LEN / MIB, FINAL_OFF, rc ? strerror(-rc) : "ok", bad, info_irqs() - irq0, lat);
	hostcheck(FINAL_OFF, FINAL_LEN, FINAL_PAT, 0);
}

/* One line from the host's serial line */
static int read_cmd(int fd, char *buf, size_t len)
{
	size_t n = 0;

	for (;;) {
		char c;
		ssize_t r = read(fd, &c, 1);
		if (r < 0 && errno == EINTR)
			continue;
		if (r <= 0)
			return -1;
		if (c == '\r')
			continue;
		if (c == '\n') {
			if (!n)
				continue;
			buf[n] = 0;
			return 0;
		}
		if (n + 1 < len)
			buf[n++] = c;
	}
}

static int cmd_run(const char *bdf)
{
	struct termios t;
	char line[256];
	bool running;
	int tty;

	if (dev_open(bdf)) {
		step("setup-open", 0, "the device through %s and sysfs (%s)", DEV_PATH, bdf);
		return 1;
	}
	if (setup())
		return 1;
	ram_zone = mmap(NULL, DIRTY_LEN, PROT_READ | PROT_WRITE,
			MAP_PRIVATE | MAP_ANONYMOUS | MAP_POPULATE, -1, 0);
	tty = open(CMD_TTY, O_RDWR | O_NOCTTY);
	if (ram_zone == MAP_FAILED || tty < 0 || tcgetattr(tty, &t)) {
		step("setup-tty", 0, "RAM zone or %s: %s", CMD_TTY, strerror(errno));
		return 1;
	}
	cfmakeraw(&t);
	t.c_cc[VMIN] = 1;
	t.c_cc[VTIME] = 0;
	tcsetattr(tty, TCSANOW, &t);
	tcflush(tty, TCIFLUSH);
	irq_base = info_irqs();
	jobs_done_base = info_jobs_done();
	threads_start();
	running = true;
	printf("MIG-READY jobs of %llu MiB at %#llx, generations of %llu MiB at %#llx\n",
	       JOB_LEN / MIB, JOB_OFF, DIRTY_LEN / MIB, DIRTY_OFF);
	fflush(stdout);
	while (!read_cmd(tty, line, sizeof(line))) {
		char tag[64] = "";
		unsigned long long inflight = 0;
		const char *p = strstr(line, "inflight=");

		if (p)
			inflight = strtoull(p + 9, NULL, 0);
		if (sscanf(line, "VERIFY %63s", tag) == 1) {
			if (running)
				verify(tag, inflight);
			else
				printf("VERIFY-DONE %s fail=1 (not running)\n", tag);
			running = false;
		} else if (!strcmp(line, "RESUME")) {
			if (!running)
				threads_start();
			running = true;
			printf("RESUMED\n");
		} else if (sscanf(line, "FINAL %63s", tag) == 1) {
			if (running)
				verify(tag, inflight);
			running = false;
			final_job(tag);
			printf("FINAL-DONE %s: %u ok, %u failed\n", tag, n_ok, n_fail);
		} else if (!strcmp(line, "QUIT")) {
			return n_fail != 0;
		} else {
			printf("unknown command '%s'\n", line);
		}
		fflush(stdout);
	}
	if (running)
		threads_stop();
	step("commands", 0, "%s closed before FINAL", CMD_TTY);
	return 1;
}

int main(int argc, char **argv)
{
	setvbuf(stdout, NULL, _IOLBF, 0);
	if (argc == 3 && !strcmp(argv[1], "run"))
		return cmd_run(argv[2]);
	fprintf(stderr, "usage: migrate-guest run BDF\n");
	return 2;
}
