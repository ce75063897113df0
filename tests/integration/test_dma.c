// SPDX-License-Identifier: BSD-3-Clause
/*
 * Device DMA and interrupts through the real server: the accelerator's job
 * engine copies between a memfd DMA window and device memory (mmapped DMA),
 * the same through an fd-less window (DMA_READ/DMA_WRITE messages answered by
 * the client), MSI-X completion interrupts on an eventfd, and a guest-style
 * HDM decoder commit through BAR0 region writes.
 */
#include <linux/pci_regs.h>
#include <poll.h>
#include <sys/eventfd.h>
#include <sys/mman.h>

#include "cxl/cxl_regs.h"
#include "cxl/cxl_spec.h"
#include "model/model.h"
#include "tap.h"
#include "integration/harness.h"

#define GUEST_IOVA 0x100000000ull
#define NOFD_IOVA  0x200000000ull
#define WIN_SIZE   (16u << 20)
#define ACCEL_BAR  2
static const uint32_t RW = VFIO_USER_F_DMA_REGION_READ | VFIO_USER_F_DMA_REGION_WRITE;

static int cfg_read32(void *opaque, uint32_t off, uint32_t *val)
{
	memcpy(val, (uint8_t *)opaque + off, 4);
	return 0;
}

/* Run one job and wait for DONE/ERROR: the STATUS value, or 0 on timeout. */
static uint32_t run_job(struct vcxl_client *c, uint32_t op, uint32_t flags, uint64_t src,
			uint64_t dst, uint64_t len, unsigned vec)
{
	uint32_t st = 0;

	vcxl_client_write32(c, ACCEL_BAR, ACCEL_REG_STATUS, ACCEL_STATUS_DONE | ACCEL_STATUS_ERROR);
	vcxl_client_write32(c, ACCEL_BAR, ACCEL_REG_JOB_OP, op);
	vcxl_client_write32(c, ACCEL_BAR, ACCEL_REG_JOB_FLAGS, flags);
	vcxl_client_write64(c, ACCEL_BAR, ACCEL_REG_JOB_SRC, src);
	vcxl_client_write64(c, ACCEL_BAR, ACCEL_REG_JOB_DST, dst);
	vcxl_client_write64(c, ACCEL_BAR, ACCEL_REG_JOB_LEN, len);
	vcxl_client_write64(c, ACCEL_BAR, ACCEL_REG_JOB_PATTERN, 0x0123456789abcdefull);
	vcxl_client_write32(c, ACCEL_BAR, ACCEL_REG_JOB_VECTOR, vec);
	vcxl_client_write32(c, ACCEL_BAR, ACCEL_REG_DOORBELL, ACCEL_DOORBELL_GO);
	for (int i = 0; i < 2000; i++) {
		vcxl_client_poll(c, 0);
		if (vcxl_client_read32(c, ACCEL_BAR, ACCEL_REG_STATUS, &st))
			return 0;
		if (st & (ACCEL_STATUS_DONE | ACCEL_STATUS_ERROR))
			return st;
		h_sleep_ms(1);
	}
	return 0;
}

/* What a guest driver does before using MSI-X: enable it, unmask the vector. */
static void msix_enable(struct vcxl_client *c, const uint8_t *cfg, unsigned vec)
{
	unsigned p = cfg[PCI_CAPABILITY_LIST] & ~3u;

	for (int hops = 0; p && hops < 48; hops++) {
		if (cfg[p] == PCI_CAP_ID_MSIX) {
			uint16_t ctl;

			memcpy(&ctl, cfg + p + PCI_MSIX_FLAGS, 2);
			ctl = (uint16_t)((ctl | PCI_MSIX_FLAGS_ENABLE) & ~PCI_MSIX_FLAGS_MASKALL);
			vcxl_client_region_write(c, VFIO_PCI_CONFIG_REGION_INDEX,
						 p + PCI_MSIX_FLAGS, &ctl, 2);
			break;
		}
		p = cfg[p + 1] & ~3u;
	}
	vcxl_client_write32(c, ACCEL_BAR,
			    VCXL_MODEL_MSIX_TABLE + vec * PCI_MSIX_ENTRY_SIZE + PCI_MSIX_ENTRY_DATA,
			    0x40 + vec);
	vcxl_client_write32(
	    c, ACCEL_BAR,
	    VCXL_MODEL_MSIX_TABLE + vec * PCI_MSIX_ENTRY_SIZE + PCI_MSIX_ENTRY_VECTOR_CTRL, 0);
}

static void test_jobs(struct harness *h)
{
	struct vcxl_client *c;
	struct vcxl_client_info info;
	uint8_t cfg[4096], back[4096];
	int mfd = memfd_create("guest", MFD_CLOEXEC), efd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
	uint8_t *g, *nofd = calloc(1, WIN_SIZE);
	uint32_t st;
	const uint64_t dpa = 0x200000;

	setup_ok(ftruncate(mfd, WIN_SIZE));
	g = mmap(NULL, WIN_SIZE, PROT_READ | PROT_WRITE, MAP_SHARED, mfd, 0);
	for (unsigned i = 0; i < 0x10000; i++)
		g[i] = (uint8_t)(i * 31 + 7);
	is(vcxl_client_connect(h->sock, &c), 0, "connect");
	is(vcxl_client_get_info(c, &info), 0, "GET_INFO");
	is(vcxl_client_region_read(c, 7, 0, cfg, sizeof(cfg)), 0, "config read");
	is(vcxl_client_dma_map(c, GUEST_IOVA, WIN_SIZE, RW, mfd, 0, NULL), 0, "DMA_MAP memfd");
	is(vcxl_client_dma_map(c, NOFD_IOVA, WIN_SIZE, RW, -1, 0, nofd), 0, "DMA_MAP without fd");
	is(vcxl_client_set_irqs(c, VFIO_PCI_MSIX_IRQ_INDEX,
				VFIO_IRQ_SET_DATA_EVENTFD | VFIO_IRQ_SET_ACTION_TRIGGER, 1, 1, &efd,
				1, NULL),
	   0, "SET_IRQS: eventfd on MSI-X vector 1");
	msix_enable(c, cfg, 1);

	st = run_job(c, ACCEL_OP_COPY, ACCEL_JOBF_SRC_HOST | ACCEL_JOBF_IRQ, GUEST_IOVA, dpa,
		     0x10000, 1);
	is(st & (ACCEL_STATUS_DONE | ACCEL_STATUS_ERROR), ACCEL_STATUS_DONE,
	   "copy guest memfd -> device memory");
	ok(h_eventfd_fired(efd, 2000), "MSI-X vector 1 delivered to the eventfd");
	is(vcxl_client_region_read(c, info.cxl.region_index, dpa, back, sizeof(back)), 0,
	   "read device memory through the CXL region");
	ok(!memcmp(back, g, sizeof(back)), "device memory holds the guest data");
	st = run_job(c, ACCEL_OP_COPY, ACCEL_JOBF_DST_HOST, dpa, GUEST_IOVA + 0x100000, 0x10000, 0);
	is(st & (ACCEL_STATUS_DONE | ACCEL_STATUS_ERROR), ACCEL_STATUS_DONE,
	   "copy device memory -> guest memfd");
	ok(!memcmp(g + 0x100000, g, 0x10000), "round trip through device memory is exact");
	ok(!h_eventfd_fired(efd, 0), "no interrupt without ACCEL_JOBF_IRQ");

	/* fd-less window: the server falls back to DMA_READ/DMA_WRITE messages */
	memcpy(nofd + 0x1000, g, 0x8000);
	st = run_job(c, ACCEL_OP_COPY, ACCEL_JOBF_SRC_HOST, NOFD_IOVA + 0x1000, dpa + 0x100000,
		     0x8000, 0);
	is(st & (ACCEL_STATUS_DONE | ACCEL_STATUS_ERROR), ACCEL_STATUS_DONE,
	   "copy fd-less window -> device memory (DMA_READ)");
	st = run_job(c, ACCEL_OP_COPY, ACCEL_JOBF_DST_HOST | ACCEL_JOBF_IRQ, dpa + 0x100000,
		     NOFD_IOVA + 0x200000, 0x8000, 1);
	is(st & (ACCEL_STATUS_DONE | ACCEL_STATUS_ERROR), ACCEL_STATUS_DONE,
	   "copy device memory -> fd-less window (DMA_WRITE)");
	ok(!memcmp(nofd + 0x200000, g, 0x8000), "fd-less round trip is exact");
	ok(vcxl_client_dma_requests(c) >= 2, "client answered %llu DMA requests",
	   (unsigned long long)vcxl_client_dma_requests(c));
	ok(h_eventfd_fired(efd, 2000), "completion interrupt after message DMA");
	/* a job larger than one step: its later steps run from the loop's poll,
	 * on the coroutine, and still wait for the client's DMA replies */
	st = run_job(c, ACCEL_OP_FILL, ACCEL_JOBF_DST_HOST | ACCEL_JOBF_IRQ, 0, NOFD_IOVA + 0x1000,
		     WIN_SIZE - 0x2000, 1);
	is(st & (ACCEL_STATUS_DONE | ACCEL_STATUS_ERROR), ACCEL_STATUS_DONE,
	   "a 16 MiB fill into the fd-less window, in steps (DMA_WRITE)");
	ok(nofd[0x1000] == 0xef && nofd[WIN_SIZE - 0x1001] == 0x01 &&
	       nofd[WIN_SIZE - 0x1000] == 0 && nofd[0xfff] == 0,
	   "every byte of it, none beyond");
	ok(h_eventfd_fired(efd, 2000), "its completion interrupt");
	st = run_job(c, ACCEL_OP_COPY, ACCEL_JOBF_SRC_HOST, 0x900000000ull, dpa, 0x1000, 0);
	is(st & (ACCEL_STATUS_DONE | ACCEL_STATUS_ERROR), ACCEL_STATUS_ERROR,
	   "DMA outside every window: job error");
	is(vcxl_client_dma_unmap(c, GUEST_IOVA, WIN_SIZE, 0), 0, "unmap the memfd window");
	st = run_job(c, ACCEL_OP_COPY, ACCEL_JOBF_SRC_HOST, GUEST_IOVA, dpa, 0x1000, 0);
	is(st & (ACCEL_STATUS_DONE | ACCEL_STATUS_ERROR), ACCEL_STATUS_ERROR,
	   "DMA into an unmapped window: job error");
	vcxl_client_close(c);
	munmap(g, WIN_SIZE);
	close(mfd);
	close(efd);
	free(nofd);
}

/* CXL r3.1 8.2.4.20: program and commit decoder 0 as Linux's cxl core does */
static void test_guest_commit(struct harness *h)
{
	struct vcxl_client *c;
	struct vcxl_client_info info;
	uint8_t cfg[4096];
	uint32_t dvsec = 0, len = 0, ctrl = 0, g = 0;
	uint16_t ctl;
	uint64_t base = 0x400000000ull, size;
	unsigned bar;
	uint64_t hdm;
	int i;

	is(vcxl_client_connect(h->sock, &c), 0, "connect");
	is(vcxl_client_get_info(c, &info), 0, "GET_INFO");
	bar = info.cxl.hdm_bar;
	hdm = info.cxl.hdm_offset;
	size = info.cxl.region_size;
	vcxl_client_region_read(c, 7, 0, cfg, sizeof(cfg));
	is(vcxl_pcie_find_dvsec(cfg_read32, cfg, CXL_VENDOR_ID, CXL_DVSEC_ID_DEVICE, &dvsec, &len),
	   0, "CXL Device DVSEC found");
	memcpy(&ctl, cfg + dvsec + CXL_DVSEC_CTRL, 2);
	ctl |= CXL_DVSEC_CTRL_MEM_EN;
	is(vcxl_client_region_write(c, 7, dvsec + CXL_DVSEC_CTRL, &ctl, 2), 0, "set Mem_Enable");
	vcxl_client_region_read(c, 7, dvsec + CXL_DVSEC_CTRL, &ctl, 2);
	ok(ctl & CXL_DVSEC_CTRL_MEM_EN, "Mem_Enable reads back");
	vcxl_client_read32(c, bar, hdm + CXL_HDM_GLOBAL_CTRL, &g);
	is(vcxl_client_write32(c, bar, hdm + CXL_HDM_GLOBAL_CTRL, g | CXL_HDM_GCTRL_ENABLE), 0,
	   "HDM Decoder Enable");
	vcxl_client_write32(c, bar, hdm + CXL_HDM_DEC_BASE_HI(0), (uint32_t)(base >> 32));
	vcxl_client_write32(c, bar, hdm + CXL_HDM_DEC_BASE_LO(0), (uint32_t)base);
	vcxl_client_write32(c, bar, hdm + CXL_HDM_DEC_SIZE_HI(0), (uint32_t)(size >> 32));
	vcxl_client_write32(c, bar, hdm + CXL_HDM_DEC_SIZE_LO(0), (uint32_t)size);
	vcxl_client_write32(c, bar, hdm + CXL_HDM_DEC_SKIP_HI(0), 0);
	vcxl_client_write32(c, bar, hdm + CXL_HDM_DEC_SKIP_LO(0), 0);
	vcxl_client_read32(c, bar, hdm + CXL_HDM_DEC_CTRL(0), &ctrl);
	is(vcxl_client_write32(c, bar, hdm + CXL_HDM_DEC_CTRL(0), ctrl | CXL_HDM_DEC_CTRL_COMMIT),
	   0, "Commit through a BAR%u region write", bar);
	for (i = 0; i < 100; i++) {
		vcxl_client_read32(c, bar, hdm + CXL_HDM_DEC_CTRL(0), &ctrl);
		if (ctrl & (CXL_HDM_DEC_CTRL_COMMITTED | CXL_HDM_DEC_CTRL_COMMIT_ERR))
			break;
		h_sleep_ms(1);
	}
	ok((ctrl & CXL_HDM_DEC_CTRL_COMMITTED) && !(ctrl & CXL_HDM_DEC_CTRL_COMMIT_ERR),
	   "decoder 0 Committed (ctrl 0x%08x)", ctrl);
	{
		uint32_t lo = 0, hi = 0;

		vcxl_client_read32(c, bar, hdm + CXL_HDM_DEC_BASE_LO(0), &lo);
		vcxl_client_read32(c, bar, hdm + CXL_HDM_DEC_BASE_HI(0), &hi);
		is(((uint64_t)hi << 32) | (lo & CXL_HDM_DEC_LO_MASK), base, "base reads back");
	}
	/* decommit, then a size beyond the region must not commit */
	vcxl_client_write32(c, bar, hdm + CXL_HDM_DEC_CTRL(0), ctrl & ~CXL_HDM_DEC_CTRL_COMMIT);
	vcxl_client_read32(c, bar, hdm + CXL_HDM_DEC_CTRL(0), &ctrl);
	ok(!(ctrl & CXL_HDM_DEC_CTRL_COMMITTED), "decommitted");
	vcxl_client_write32(c, bar, hdm + CXL_HDM_DEC_SIZE_HI(0), 0x100);
	vcxl_client_write32(c, bar, hdm + CXL_HDM_DEC_CTRL(0), ctrl | CXL_HDM_DEC_CTRL_COMMIT);
	vcxl_client_read32(c, bar, hdm + CXL_HDM_DEC_CTRL(0), &ctrl);
	ok((ctrl & CXL_HDM_DEC_CTRL_COMMIT_ERR) && !(ctrl & CXL_HDM_DEC_CTRL_COMMITTED),
	   "oversized decoder: Error Not Committed (ctrl 0x%08x)", ctrl);
	vcxl_client_close(c);
}

int main(int argc, char **argv)
{
	struct harness h = {.cli = h_cli_bin(argc, argv)};
	int rc = h_start(&h, h_server_bin(argc, argv), -1, NULL);

	ok(rc == 0, "vcxl-server started");
	if (rc) {
		h_dump_log(&h);
		h_cleanup(&h);
		return done();
	}
	test_jobs(&h);
	test_guest_commit(&h);
	is(h_log_count(&h, VCXL_PROTO_ERR_PREFIX), 0, "no protocol error in the server log");
	is(h_stop(&h), 0, "clean exit");
	if (tap_failed)
		h_dump_log(&h);
	h_cleanup(&h);
	return done();
}
