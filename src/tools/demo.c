// SPDX-License-Identifier: BSD-3-Clause
/*
 * vcxl-demo: a self-demonstration of the built-in CXL Type-2 accelerator model.
 * Creates the device, decodes its DVSECs, runs the Linux CXL probe sequence,
 * commits HDM decoder 0, runs a FILL job and reads it back through the
 * memory fd. Exits 0 when every step worked.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>

#include "cxl/cxl_spec.h"
#include "model/model.h"

#define DEMO_HPA     UINT64_C(0x4000000000)
#define DEMO_PATTERN 0x5a5aa5a5c0ffee00ull

static struct vcxl_backend *be;

static uint32_t cfg32(uint32_t off)
{
	uint64_t v = 0;
	be->ops->cfg_read(be->dev, off, 4, &v);
	return (uint32_t)v;
}

static int rd32(void *opaque, uint32_t off, uint32_t *v)
{
	*v = cfg32(off);
	return 0;
}

static uint32_t mmio32(unsigned bar, uint64_t off)
{
	uint64_t v = 0;
	be->ops->bar_read(be->dev, bar, off, 4, &v);
	return (uint32_t)v;
}

static void mmio_w(unsigned bar, uint64_t off, unsigned len, uint64_t v)
{
	be->ops->bar_write(be->dev, bar, off, len, v);
}

static int cm_rd(void *opaque, uint32_t off, uint32_t *v)
{
	*v = mmio32(0, *(uint64_t *)opaque + CXL_CM_OFFSET + off);
	return 0;
}

static void sleep_ms(unsigned ms)
{
	struct timespec ts = {0, (long)ms * 1000000};
	nanosleep(&ts, NULL);
}

static int fail(const char *what, int rc)
{
	fprintf(stderr, "vcxl-demo: %s failed (%d)\n", what, rc);
	return 1;
}

static int show_dvsecs(uint32_t *dvsec, uint64_t *comp)
{
	uint32_t off, len, rl, rl_len;
	int rc = vcxl_pcie_find_dvsec(rd32, NULL, CXL_VENDOR_ID, CXL_DVSEC_ID_DEVICE, &off, &len);
	if (rc)
		return rc;
	uint16_t cap = (uint16_t)cfg32(off + CXL_DVSEC_CAP);
	uint32_t lo = cfg32(off + CXL_DVSEC_RANGE_SIZE_LO(0));
	uint64_t size =
	    (uint64_t)cfg32(off + CXL_DVSEC_RANGE_SIZE_HI(0)) << 32 | (lo & 0xf0000000u);
	printf("CXL Device DVSEC @0x%03x len 0x%x rev %u: cap 0x%04x (%s%s%s, HDM_Count %u%s)\n",
	       off, len, (cfg32(off + PCIE_DVSEC_HEADER1) >> 16) & 0xf, cap,
	       cap & CXL_DVSEC_CAP_CACHE ? "cache " : "", cap & CXL_DVSEC_CAP_IO ? "io " : "",
	       cap & CXL_DVSEC_CAP_MEM ? "mem" : "",
	       (unsigned)VCXL_FIELD_GET(CXL_DVSEC_CAP_HDM_COUNT, cap),
	       cap & CXL_DVSEC_CAP_RESET ? ", CXL reset" : "");
	printf("  range 1: %" PRIu64 " MiB, media/class %u/%u (CDAT), active timeout enc %u\n",
	       size >> 20, (unsigned)VCXL_FIELD_GET(CXL_DVSEC_RANGE_MEDIA_TYPE, lo),
	       (unsigned)VCXL_FIELD_GET(CXL_DVSEC_RANGE_MEM_CLASS, lo),
	       (unsigned)VCXL_FIELD_GET(CXL_DVSEC_RANGE_ACTIVE_TMO, lo));
	rc =
	    vcxl_pcie_find_dvsec(rd32, NULL, CXL_VENDOR_ID, CXL_DVSEC_ID_REG_LOCATOR, &rl, &rl_len);
	if (rc)
		return rc;
	*comp = ~0ull;
	for (uint32_t k = 0; k < (rl_len - CXL_REGLOC_FIRST_ENTRY) / CXL_REGLOC_ENTRY_SIZE; k++) {
		struct vcxl_regloc_entry e;
		vcxl_regloc_decode(cfg32(rl + CXL_REGLOC_BLOCK_LO(k)),
				   cfg32(rl + CXL_REGLOC_BLOCK_HI(k)), &e);
		printf("Register Locator @0x%03x entry %u: BAR%u + 0x%" PRIx64 " block id %u\n", rl,
		       k, e.bir, e.offset, e.id);
		if (e.id == CXL_REGLOC_RBI_COMPONENT)
			*comp = e.offset;
	}
	if (!vcxl_pcie_find_dvsec(rd32, NULL, CXL_VENDOR_ID, CXL_DVSEC_ID_GPF_DEVICE, &off, &len))
		printf("GPF Device DVSEC @0x%03x len 0x%x\n", off, len);
	if (!vcxl_pcie_find_dvsec(rd32, NULL, CXL_VENDOR_ID, CXL_DVSEC_ID_FLEXBUS, &off, &len))
		printf("Flex Bus DVSEC @0x%03x len 0x%x, status 0x%04x\n", off, len,
		       cfg32(off + CXL_FLEXBUS_CTRL) >> 16);
	if (!vcxl_pcie_find_ext_cap(rd32, NULL, PCIE_EXT_CAP_ID_DOE, &off))
		printf("DOE @0x%03x (Discovery, CDAT table access)\n", off);
	rc = vcxl_pcie_find_dvsec(rd32, NULL, CXL_VENDOR_ID, CXL_DVSEC_ID_DEVICE, dvsec, NULL);
	return rc ?: (*comp == ~0ull ? -ENOENT : 0);
}

/* drivers/cxl/core/pci.c order: Info_Valid, HDM enable, Mem_Enable, Memory_Active */
static int linux_probe(uint32_t dv, uint64_t hdm)
{
	int tries;
	for (tries = 0; !(cfg32(dv + CXL_DVSEC_RANGE_SIZE_LO(0)) & CXL_DVSEC_RANGE_INFO_VALID);
	     tries++) {
		if (tries > 15)
			return -ETIMEDOUT;
		sleep_ms(100);
	}
	uint32_t g = mmio32(0, hdm + CXL_HDM_GLOBAL_CTRL);
	if (!(g & CXL_HDM_GCTRL_ENABLE))
		mmio_w(0, hdm + CXL_HDM_GLOBAL_CTRL, 4, g | CXL_HDM_GCTRL_ENABLE);
	uint16_t ctrl = (uint16_t)cfg32(dv + CXL_DVSEC_CTRL);
	be->ops->cfg_write(be->dev, dv + CXL_DVSEC_CTRL, 2, ctrl | CXL_DVSEC_CTRL_MEM_EN);
	for (tries = 0; !(cfg32(dv + CXL_DVSEC_RANGE_SIZE_LO(0)) & CXL_DVSEC_RANGE_ACTIVE);
	     tries++) {
		if (tries > 200)
			return -ETIMEDOUT;
		sleep_ms(10);
	}
	printf("probe: Memory_Info_Valid, HDM Decoder Enable, Mem_Enable, Memory_Active: ok\n");
	return 0;
}

/* drivers/cxl/core/hdm.c setup_hw_decoder + cxld_await_commit */
static int commit_decoder0(uint64_t hdm, uint64_t size)
{
	uint32_t ctrl = mmio32(0, hdm + CXL_HDM_DEC_CTRL(0)) | CXL_HDM_DEC_CTRL_COMMIT;
	mmio_w(0, hdm + CXL_HDM_DEC_BASE_HI(0), 4, DEMO_HPA >> 32);
	mmio_w(0, hdm + CXL_HDM_DEC_BASE_LO(0), 4, (uint32_t)DEMO_HPA);
	mmio_w(0, hdm + CXL_HDM_DEC_SIZE_HI(0), 4, size >> 32);
	mmio_w(0, hdm + CXL_HDM_DEC_SIZE_LO(0), 4, (uint32_t)size);
	mmio_w(0, hdm + CXL_HDM_DEC_SKIP_HI(0), 4, 0);
	mmio_w(0, hdm + CXL_HDM_DEC_SKIP_LO(0), 4, 0);
	mmio_w(0, hdm + CXL_HDM_DEC_CTRL(0), 4, ctrl);
	for (int i = 0; i < 20; i++) {
		ctrl = mmio32(0, hdm + CXL_HDM_DEC_CTRL(0));
		if (ctrl & CXL_HDM_DEC_CTRL_COMMIT_ERR)
			return -EIO;
		if (ctrl & CXL_HDM_DEC_CTRL_COMMITTED) {
			printf("decoder 0: committed HPA 0x%" PRIx64 " + %" PRIu64
			       " MiB -> DPA 0\n",
			       DEMO_HPA, size >> 20);
			return 0;
		}
		sleep_ms(1);
	}
	return -ETIMEDOUT;
}

static int fill_and_check(struct vcxl_model *m, uint64_t size)
{
	const uint64_t dst = 0x100000, len = 0x200000;
	int fd;
	uint64_t fd_off;
	mmio_w(2, ACCEL_REG_JOB_OP, 4, ACCEL_OP_FILL);
	mmio_w(2, ACCEL_REG_JOB_FLAGS, 4, 0);
	mmio_w(2, ACCEL_REG_JOB_DST, 8, dst);
	mmio_w(2, ACCEL_REG_JOB_LEN, 8, len);
	mmio_w(2, ACCEL_REG_JOB_PATTERN, 8, DEMO_PATTERN);
	mmio_w(2, ACCEL_REG_DOORBELL, 4, ACCEL_DOORBELL_GO);
	uint32_t st = mmio32(2, ACCEL_REG_STATUS);
	printf("job: FILL DPA 0x%" PRIx64 " + 0x%" PRIx64 ": status 0x%x, jobs done %u\n", dst, len,
	       st, mmio32(2, ACCEL_REG_JOBS_DONE));
	if (st != ACCEL_STATUS_DONE)
		return -EIO;
	int rc = be->ops->hpa_map(be->dev, DEMO_HPA, size, &fd, &fd_off);
	if (rc)
		return rc;
	uint8_t *p = mmap(NULL, size, PROT_READ, MAP_SHARED, fd, (off_t)fd_off);
	if (p == MAP_FAILED)
		return -errno;
	size_t bad = 0;
	for (uint64_t i = 0; i < len; i++)
		if (p[dst + i] != (uint8_t)(DEMO_PATTERN >> (8 * (i % 8))))
			bad++;
	bad += p[dst - 1] != 0 || p[dst + len] != 0;
	printf("read back through the HPA mapping (fd %d + 0x%" PRIx64 "): %zu bad bytes\n", fd,
	       fd_off, bad);
	munmap(p, size);
	return bad ? -EIO : 0;
}

int main(void)
{
	struct vcxl_model_cfg cfg = {.mem_size = VCXL_SZ_256M * 2, .active_delay_ms = 50};
	struct vcxl_model *m;
	uint32_t dv, hdm_rel;
	uint64_t comp;
	int rc = vcxl_model_create(&cfg, &m);
	if (rc)
		return fail("model create", rc);
	be = vcxl_model_backend(m);
	printf("%s: vendor 0x%04x device 0x%04x class 0x%06x\n", be->ops->name(be->dev),
	       cfg32(0) & 0xffff, cfg32(0) >> 16, cfg32(8) >> 8);
	rc = show_dvsecs(&dv, &comp);
	if (rc)
		return fail("DVSEC decode", rc);
	rc = vcxl_comp_find_cap(cm_rd, &comp, CXL_CM_CAP_ID_HDM, &hdm_rel);
	if (rc)
		return fail("capability array walk", rc);
	uint64_t hdm = comp + CXL_CM_OFFSET + hdm_rel;
	printf("HDM decoder capability at BAR0 + 0x%" PRIx64 ": %d decoder(s)\n", hdm,
	       vcxl_hdm_count_decode(mmio32(0, hdm) & CXL_HDM_CAP_DECODER_COUNT));
	rc = linux_probe(dv, hdm);
	rc = rc ?: commit_decoder0(hdm, cfg.mem_size);
	if (rc)
		return fail("probe/commit", rc);
	rc = fill_and_check(m, cfg.mem_size);
	if (rc)
		return fail("fill job", rc);
	vcxl_model_destroy(m);
	printf("vcxl-demo: ok\n");
	return 0;
}
