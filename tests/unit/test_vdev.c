// SPDX-License-Identifier: BSD-3-Clause
/*
 * The vfio-cxl virtual device as a VFIO user sees it: device/region/IRQ
 * info, the UABI capability, sparse mmap, the CXL region, what a Linux
 * guest's CXL core does against it, reset, variants, and create's unwind
 * under an injected failure of every backend operation.
 */
#include <errno.h>
#include <linux/pci_regs.h>
#include <string.h>
#include <sys/mman.h>

#include "../../src/vfio-cxl/variant.h"
#include "be_wrap.h"
#include "tap.h"
#include "host/host_cxl.h"
#include "model/model.h"
#include "vcxl/uapi.h"
#include "vfio-cxl/vfio_cxl.h"
#include "vdev_util.h"

#define G   VCXL_HPA_GRANULE
#define GPA 0x400000000ull /* where the guest puts its CXL window (16 GiB) */

struct env {
	struct vcxl_model *m;
	struct vcxl_backend *raw;
	struct bw w;
	struct vcxl_host h;
	struct vclock clk;
	struct vcxl_vdev *v;
	char err[200];
};

static int env_init(struct env *e, const struct vcxl_model_cfg *mc, struct vcxl_vdev_cfg *vc)
{
	memset(e, 0, sizeof(*e));
	if (vcxl_model_create(mc, &e->m))
		return -1;
	e->raw = vcxl_model_backend(e->m);
	bw_init(&e->w, e->raw);
	vcxl_host_init(&e->h);
	vcxl_host_add_window(&e->h, VCXL_HOST_DEFAULT_WIN_BASE, 64 * G,
			     VCXL_HOST_DEFAULT_WIN_FLAGS);
	e->clk.model = e->m;
	vclock_install(&e->h, &e->clk);
	struct vcxl_vdev_cfg def = {0};
	if (!vc)
		vc = &def;
	vc->host = &e->h;
	int rc = vcxl_vdev_create(&e->w.be, vc, &e->v, e->err, sizeof(e->err));
	if (rc) {
		diag("vdev create: %s", e->err);
		vcxl_host_fini(&e->h);
		vcxl_model_destroy(e->m);
	}
	return rc;
}

static void env_fini(struct env *e)
{
	vcxl_vdev_destroy(e->v);
	vcxl_host_fini(&e->h);
	vcxl_model_destroy(e->m);
}

/* ---- info ----------------------------------------------------------------- */

static void test_info(void)
{
	struct vcxl_model_cfg mc = {.mem_size = 2 * G, .decoders = 2};
	struct env e;
	struct vcxl_vdev_info info;
	struct vcxl_vregion_info ri;

	if (!ok(env_init(&e, &mc, NULL) == 0, "vdev created"))
		return;
	const struct vcxl_cxl_dev *d = vcxl_vdev_host_dev(e.v);
	const struct vcxl_region *r = vcxl_vdev_region(e.v);
	vcxl_vdev_ops.get_info(e.v, &info);
	is(info.flags, VFIO_DEVICE_FLAGS_PCI | VFIO_DEVICE_FLAGS_RESET | VFIO_DEVICE_FLAGS_CXL,
	   "device flags PCI | RESET | CXL (bit 9)");
	is(VFIO_DEVICE_FLAGS_CXL, 1u << 9, "CXL flag is bit 9");
	is(info.num_regions, 11, "11 regions (9 PCI, the CXL region, the component registers)");
	is(info.num_irqs, 5, "5 IRQ indexes");
	is(info.cxl.header.id, 6, "cap id 6");
	is(info.cxl.header.version, 1, "cap version 1");
	is(info.cxl.hdm_count, 2, "guest decoders as the device has");
	is(info.cxl.hdm_bar, 0, "component BAR 0");
	is(info.cxl.comp_offset, d->comp_off, "comp offset");
	is(info.cxl.comp_size, 0x10000, "comp size 64 KiB");
	is(info.cxl.hdm_size, 0x10 + 0x20 * 2, "hdm size");
	is(info.cxl.region_index, 9, "region index 9");
	is(info.cxl.region_size, 2 * G, "region size: all device memory");
	is(info.cxl.flags & VFIO_CXL_CAP_FIRMWARE_COMMITTED, 0, "not firmware committed");
	/* the HDM offset is where the guest's walk of the virtual array finds it */
	uint64_t cm = info.cxl.comp_offset + CXL_CM_OFFSET;
	uint32_t hdr = (uint32_t)g_rd(e.v, 0, cm, 4, NULL);
	uint64_t found = 0;
	for (unsigned k = 1; k <= VCXL_FIELD_GET(CXL_CM_CAP_HDR_ARRAY_SIZE, hdr); k++) {
		uint32_t el = (uint32_t)g_rd(e.v, 0, cm + 4 * k, 4, NULL);
		if (VCXL_FIELD_GET(CXL_CM_CAP_HDR_ID, el) == CXL_CM_CAP_ID_HDM)
			found = cm + VCXL_FIELD_GET(CXL_CM_CAP_PTR, el);
	}
	is(info.cxl.hdm_offset, found, "hdm_offset = BAR offset of the HDM capability (0x%llx)",
	   (unsigned long long)found);

	is(vcxl_vdev_ops.region_info(e.v, 1, &ri), 0, "BAR1 info");
	is(ri.size, 0, "BAR1 absent (upper half of 64-bit BAR0)");
	is(vcxl_vdev_ops.region_info(e.v, 2, &ri), 0, "BAR2 info");
	is(ri.size, VCXL_MODEL_BAR2_SIZE, "BAR2 size");
	is(ri.flags, VFIO_REGION_INFO_FLAG_READ | VFIO_REGION_INFO_FLAG_WRITE,
	   "BAR2 R/W, not mmappable (backend has no fd for it)");
	is(vcxl_vdev_ops.region_info(e.v, VFIO_PCI_ROM_REGION_INDEX, &ri), 0, "ROM info");
	is(ri.size, 0, "ROM size 0");
	is(vcxl_vdev_ops.region_info(e.v, VFIO_PCI_CONFIG_REGION_INDEX, &ri), 0, "config info");
	is(ri.size, 4096, "config 4096 bytes");
	is(ri.flags, VFIO_REGION_INFO_FLAG_READ | VFIO_REGION_INFO_FLAG_WRITE, "config R/W");
	is(vcxl_vdev_ops.region_info(e.v, VFIO_PCI_VGA_REGION_INDEX, &ri), 0, "VGA info");
	is(ri.size, 0, "VGA size 0");
	is(vcxl_vdev_ops.region_info(e.v, 9, &ri), 0, "CXL region info");
	is(ri.size, 2 * G, "CXL region size");
	is(ri.flags,
	   VFIO_REGION_INFO_FLAG_READ | VFIO_REGION_INFO_FLAG_WRITE | VFIO_REGION_INFO_FLAG_MMAP,
	   "CXL region R/W/MMAP");
	ok(ri.has_type && ri.type == 0x80001e98u && ri.subtype == 1,
	   "type 0x80001e98 (PCI vendor type | CXL 0x1e98) subtype 1");
	is(ri.fd, r->fd, "fd from hpa_map");
	is(ri.fd_offset, r->fd_offset, "offset from hpa_map");
	ok(!ri.has_comp, "no component-register geometry on the CXL region");

	/* region 10: the component registers (v3/v4 COMP_REGS), geometry in a region cap */
	is(vcxl_vdev_ops.region_info(e.v, 10, &ri), 0, "component-registers region info");
	is(ri.size, 0x10000, "size: the 64 KiB component block");
	is(ri.flags, VFIO_REGION_INFO_FLAG_READ | VFIO_REGION_INFO_FLAG_WRITE,
	   "R/W, not mmappable");
	is(ri.fd, -1, "no fd");
	ok(ri.has_type && ri.type == 0x80001e98u && ri.subtype == 2,
	   "type 0x80001e98 subtype 2 (COMP_REGS)");
	ok(ri.has_comp && ri.comp.header.id == VFIO_REGION_INFO_CAP_CXL_COMP_REGS &&
	       ri.comp.header.version == 1,
	   "geometry capability, version 1");
	is(ri.comp.bar, info.cxl.hdm_bar, "geometry: BAR = the device cap's hdm_bar");
	is(ri.comp.offset, info.cxl.comp_offset, "geometry: block offset = comp_offset");
	is(ri.comp.size, info.cxl.comp_size, "geometry: block size = comp_size");
	is(ri.comp.offset + ri.comp.hdm_offset, info.cxl.hdm_offset,
	   "geometry: block + hdm_offset = the device cap's hdm_offset (from the BAR)");
	is(ri.comp.hdm_count, info.cxl.hdm_count, "geometry: hdm_count");
	is(ri.comp.hdm_size, info.cxl.hdm_size, "geometry: hdm_size");
	is(vcxl_vdev_ops.region_info(e.v, 11, &ri), (uint64_t)-EINVAL, "index 11: -EINVAL");

	uint32_t count, flags;
	is(vcxl_vdev_ops.irq_info(e.v, VFIO_PCI_INTX_IRQ_INDEX, &count, &flags), 0, "INTx info");
	is(count, 0, "INTx not offered (count 0)");
	is(gcfg(e.v, PCI_INTERRUPT_PIN, 1), 0, "and Interrupt Pin reads 0");
	is(gcfg_w(e.v, PCI_INTERRUPT_LINE, 1, 0x2b), 0, "Interrupt Line write");
	is(gcfg(e.v, PCI_INTERRUPT_LINE, 1), 0x2b, "Interrupt Line is scratch");
	vcxl_vdev_ops.irq_info(e.v, VFIO_PCI_MSIX_IRQ_INDEX, &count, &flags);
	is(count, VCXL_MODEL_MSIX_VECTORS, "MSI-X vectors per backend");
	is(flags, VFIO_IRQ_INFO_EVENTFD | VFIO_IRQ_INFO_NORESIZE, "MSI-X EVENTFD | NORESIZE");
	vcxl_vdev_ops.irq_info(e.v, VFIO_PCI_MSI_IRQ_INDEX, &count, &flags);
	is(count, 0, "MSI per backend (none)");
	is(flags, VFIO_IRQ_INFO_EVENTFD | VFIO_IRQ_INFO_NORESIZE, "MSI flags");
	vcxl_vdev_ops.irq_info(e.v, VFIO_PCI_ERR_IRQ_INDEX, &count, &flags);
	is(count, 0, "ERR count 0");
	vcxl_vdev_ops.irq_info(e.v, VFIO_PCI_REQ_IRQ_INDEX, &count, &flags);
	is(count, 0, "REQ count 0");
	is(vcxl_vdev_ops.irq_info(e.v, 5, &count, &flags), (uint64_t)-EINVAL,
	   "IRQ index 5: -EINVAL");
	env_fini(&e);
}

/* ---- sparse mmap ------------------------------------------------------------ */

static void test_sparse(void)
{
	const char *names[] = {"start", "middle", "end"};
	for (int at = VCXL_COMP_AT_START; at <= VCXL_COMP_AT_END; at++) {
		struct vcxl_model_cfg mc = {.mem_size = G, .comp_at = (enum vcxl_comp_at)at};
		struct env e;
		struct vcxl_vregion_info ri;
		if (env_init(&e, &mc, NULL))
			continue;
		uint64_t c = vcxl_vdev_host_dev(e.v)->comp_off, S = VCXL_MODEL_BAR0_SIZE;
		vcxl_vdev_ops.region_info(e.v, 0, &ri);
		ok(ri.flags & VFIO_REGION_INFO_FLAG_MMAP, "%s: BAR0 mmappable", names[at]);
		ok(ri.fd >= 0, "%s: BAR0 fd from bar_info", names[at]);
		is(ri.size, S, "%s: BAR0 size", names[at]);
		struct vcxl_sparse_area want[2];
		unsigned nw = 0;
		if (c > 0)
			want[nw++] = (struct vcxl_sparse_area){0, c};
		if (c + 0x10000 < S)
			want[nw++] = (struct vcxl_sparse_area){c + 0x10000, S - c - 0x10000};
		is(ri.nr_sparse, nw, "%s: %u sparse areas", names[at], nw);
		bool same = ri.nr_sparse == nw;
		uint64_t covered = 0;
		for (unsigned i = 0; same && i < nw; i++) {
			same &= ri.sparse[i].offset == want[i].offset &&
				ri.sparse[i].size == want[i].size;
			covered += ri.sparse[i].size;
			same &= !(ri.sparse[i].offset & 4095) && !(ri.sparse[i].size & 4095);
		}
		ok(same, "%s: areas are BAR minus [0x%llx, +64K) exactly, page aligned", names[at],
		   (unsigned long long)c);
		is(covered, S - 0x10000, "%s: nothing but the block is left out (no off-by-one)",
		   names[at]);
		/* mmapped bytes outside the block are the BAR's, the same as region reads */
		uint64_t probe = nw ? want[nw - 1].offset + want[nw - 1].size - 8 : 0;
		uint8_t *map =
		    mmap(NULL, S, PROT_READ | PROT_WRITE, MAP_SHARED, ri.fd, (off_t)ri.fd_offset);
		if (map != MAP_FAILED) {
			*(uint64_t *)(map + probe) = 0x1122334455667788ull;
			is(g_rd(e.v, 0, probe, 8, NULL), 0x1122334455667788ull,
			   "%s: last mmappable qword = region read", names[at]);
			munmap(map, S);
		}
		env_fini(&e);
	}
}

/* ---- the component-registers region (v3/v4 COMP_REGS) ---------------------- */

/* Region 10 is the same register file as the block inside BAR0: what one
 * path writes the other reads, a commit through it commits, and anything
 * but dword-aligned dwords (or an aligned qword) is -EINVAL. */
static void test_comp_region(void)
{
	struct vcxl_model_cfg mc = {.mem_size = G, .decoders = 2};
	struct env e;
	struct vcxl_vregion_info ri;
	uint8_t buf[64];
	int rc;

	if (!ok(env_init(&e, &mc, NULL) == 0, "vdev"))
		return;
	vcxl_vdev_ops.region_info(e.v, VCXL_VDEV_COMP_REGION, &ri);
	const uint64_t cs = ri.comp.offset, h = ri.comp.hdm_offset;
	const uint32_t R = VCXL_VDEV_COMP_REGION;

	is(g_rd(e.v, R, CXL_CM_OFFSET, 4, &rc), g_rd(e.v, 0, cs + CXL_CM_OFFSET, 4, NULL),
	   "CM capability header: region 10 = BAR0 + block");
	is(rc, 0, "dword read: ok");
	is(g_rd(e.v, R, h + CXL_HDM_CAP, 4, NULL), g_rd(e.v, 0, cs + h + CXL_HDM_CAP, 4, NULL),
	   "HDM capability register: region 10 = BAR0");
	/* enable + program + commit decoder 0 through region 10 (CXL r3.1 8.2.4.20) */
	is(g_wr(e.v, R, h + CXL_HDM_GLOBAL_CTRL, 4, CXL_HDM_GCTRL_ENABLE), 0,
	   "HDM Decoder Enable through region 10");
	is(g_wr(e.v, R, h + CXL_HDM_DEC_BASE_LO(0), 8, 0x100000000ull), 0,
	   "decoder 0 base, one aligned qword");
	is(g_wr(e.v, R, h + CXL_HDM_DEC_SIZE_LO(0), 4, (uint32_t)VCXL_SZ_256M), 0, "size low");
	is(g_wr(e.v, R, h + CXL_HDM_DEC_SIZE_HI(0), 4, 0), 0, "size high");
	is(g_rd(e.v, 0, cs + h + CXL_HDM_DEC_BASE_HI(0), 4, NULL), 1,
	   "base high written through region 10 reads back through BAR0");
	is(g_wr(e.v, R, h + CXL_HDM_DEC_CTRL(0), 4, CXL_HDM_DEC_CTRL_COMMIT), 0, "commit");
	uint32_t ctrl = (uint32_t)g_rd(e.v, 0, cs + h + CXL_HDM_DEC_CTRL(0), 4, NULL);
	ok((ctrl & CXL_HDM_DEC_CTRL_COMMITTED) && !(ctrl & CXL_HDM_DEC_CTRL_COMMIT_ERR),
	   "decoder 0 committed (BAR0 view: ctrl 0x%08x)", ctrl);
	/* several dwords at once */
	memset(buf, 0, sizeof(buf));
	is(vcxl_vdev_ops.region_read(e.v, R, h + CXL_HDM_DEC_BASE_LO(0), buf, 32), 0,
	   "32-byte read: ok (dword by dword)");
	uint32_t w[8];
	memcpy(w, buf, sizeof(w));
	ok(w[0] == 0 && w[1] == 1 && w[2] == (uint32_t)VCXL_SZ_256M && w[3] == 0 &&
	       (w[4] & CXL_HDM_DEC_CTRL_COMMITTED),
	   "base lo/hi, size lo/hi, control in one read");
	/* access rules: defined errors, nothing changed */
	is(vcxl_vdev_ops.region_read(e.v, R, h + 2, buf, 4), (uint64_t)-EINVAL,
	   "unaligned dword: -EINVAL");
	is(vcxl_vdev_ops.region_read(e.v, R, h, buf, 2), (uint64_t)-EINVAL, "2-byte read: -EINVAL");
	is(vcxl_vdev_ops.region_write(e.v, R, h + CXL_HDM_DEC_CTRL(0), buf, 1), (uint64_t)-EINVAL,
	   "1-byte write: -EINVAL");
	is(vcxl_vdev_ops.region_read(e.v, R, 0x10000 - 4, buf, 8), (uint64_t)-EINVAL,
	   "read past the block: -EINVAL");
	is(vcxl_vdev_ops.region_read(e.v, R, 0x10000, buf, 4), (uint64_t)-EINVAL,
	   "read at the end: -EINVAL");
	is(vcxl_vdev_ops.region_read(e.v, R, UINT64_MAX - 3, buf, 4), (uint64_t)-EINVAL,
	   "offset near 2^64: -EINVAL");
	is(vcxl_vdev_ops.region_read(e.v, R, 0, buf, 0), (uint64_t)-EINVAL,
	   "empty access: -EINVAL");
	is((uint32_t)g_rd(e.v, 0, cs + h + CXL_HDM_DEC_CTRL(0), 4, NULL), ctrl,
	   "refused accesses left decoder 0 as it was");
	is(vcxl_vdev_ops.region_ptr(e.v, R, 0, 4), NULL,
	   "no host pointer into the register region");
	env_fini(&e);
}

/* ---- the CXL region --------------------------------------------------------- */

static void test_region_io(void)
{
	struct vcxl_model_cfg mc = {.mem_size = G};
	struct env e;
	struct vcxl_vregion_info ri;

	if (!ok(env_init(&e, &mc, NULL) == 0, "vdev"))
		return;
	const struct vcxl_region *r = vcxl_vdev_region(e.v);
	uint8_t *dev = vcxl_model_mem(e.m);
	char msg[] = "written through region 9";
	is(vcxl_vdev_ops.region_write(e.v, 9, 0x1000, msg, sizeof(msg)), 0,
	   "pwrite through region 9");
	ok(dev && memcmp(dev + r->dpa + 0x1000, msg, sizeof(msg)) == 0, "device memory holds it");
	memcpy(dev + r->dpa + G - 16, "end-of-region!!", 16);
	char back[16];
	is(vcxl_vdev_ops.region_read(e.v, 9, G - 16, back, 16), 0, "read the last 16 bytes");
	ok(memcmp(back, "end-of-region!!", 16) == 0, "match device memory");
	is(vcxl_vdev_ops.region_read(e.v, 9, G - 8, back, 16), (uint64_t)-EINVAL,
	   "read past the end");
	is(vcxl_vdev_ops.region_write(e.v, 9, G, back, 1), (uint64_t)-EINVAL, "write at the end");
	vcxl_vdev_ops.region_info(e.v, 9, &ri);
	uint8_t *map =
	    mmap(NULL, G, PROT_READ | PROT_WRITE, MAP_SHARED, ri.fd, (off_t)ri.fd_offset);
	if (ok(map != MAP_FAILED, "region 9 mmapped")) {
		unsigned bad = 0;
		for (uint64_t o = 0; o < G; o += 0x100000 + 64)
			map[o] = (uint8_t)(o * 7);
		for (uint64_t o = 0; o < G; o += 0x100000 + 64)
			bad += dev[r->dpa + o] != (uint8_t)(o * 7);
		is(bad, 0, "data written through the mapping equals vcxl_model_mem");
		munmap(map, G);
	}
	env_fini(&e);
}

/* ---- a Linux guest's CXL core against the virtual view ---------------------- */

struct notify_log {
	unsigned calls;
	unsigned n;
	bool on;
	uint64_t gpa, size, roff;
};

static void on_hdm(void *o, unsigned n, bool on, uint64_t gpa, uint64_t size, uint64_t roff)
{
	struct notify_log *l = o;
	l->calls++;
	l->n = n;
	l->on = on;
	l->gpa = gpa;
	l->size = size;
	l->roff = roff;
}

static void test_linux_guest(void)
{
	struct vcxl_model_cfg mc = {.mem_size = G};
	struct env e;
	struct notify_log nl = {0};
	int rc;

	if (!ok(env_init(&e, &mc, NULL) == 0, "vdev"))
		return;
	vcxl_vdev_set_hdm_notify(e.v, on_hdm, &nl);
	const struct vcxl_region *r = vcxl_vdev_region(e.v);
	struct vcxl_phys_decoder before, after;
	vcxl_cxl_read_decoder(vcxl_vdev_host_dev(e.v), 0, &before);

	/* pci_find_dvsec_capability(pdev, 0x1e98, 0) */
	is(gcfg(e.v, PCI_VENDOR_ID, 2), VCXL_MODEL_VENDOR, "vendor id passes through");
	uint32_t dv = g_find_dvsec(e.v, CXL_VENDOR_ID, CXL_DVSEC_ID_DEVICE);
	ok(dv >= 0x100, "guest finds the CXL Device DVSEC at 0x%x", dv);
	uint32_t h1 = gcfg(e.v, dv + PCIE_DVSEC_HEADER1, 4);
	is(VCXL_FIELD_GET(PCIE_DVSEC_HDR1_LEN, h1), CXL_DVSEC_DEVICE_LEN, "DVSEC length 0x3c");
	uint16_t cap = (uint16_t)gcfg(e.v, dv + CXL_DVSEC_CAP, 2);
	ok(cap & CXL_DVSEC_CAP_MEM, "Mem_Capable");
	ok(cap & CXL_DVSEC_CAP_IO, "IO_Capable");
	is(VCXL_FIELD_GET(CXL_DVSEC_CAP_HDM_COUNT, cap), 1, "HDM_Count 1");
	ok(cap & CXL_DVSEC_CAP_RESET, "CXL Reset Capable (virtual)");
	uint16_t ctrl = (uint16_t)gcfg(e.v, dv + CXL_DVSEC_CTRL, 2);
	is(ctrl, CXL_DVSEC_CTRL_IO_EN, "Control: only IO_Enable at open");
	/* wait_for_valid / range active */
	uint32_t lo = gcfg(e.v, dv + CXL_DVSEC_RANGE_SIZE_LO(0), 4);
	ok(lo & CXL_DVSEC_RANGE_INFO_VALID, "Memory_Info_Valid (live)");
	ok(lo & CXL_DVSEC_RANGE_ACTIVE, "Memory_Active (live)");
	uint64_t rsize = ((uint64_t)gcfg(e.v, dv + CXL_DVSEC_RANGE_SIZE_HI(0), 4) << 32) |
			 (lo & CXL_DVSEC_RANGE_SIZE_LO_MASK);
	is(rsize, r->size, "Range 1 size = exposed region size");
	is(gcfg(e.v, dv + CXL_DVSEC_RANGE_BASE_LO(0), 4), 0, "Range 1 base: the guest's (0)");
	is(gcfg(e.v, dv + CXL_DVSEC_RANGE_SIZE_LO(1), 4), 0, "Range 2 size 0");
	is(gcfg(e.v, dv + CXL_DVSEC_LOCK, 2), 0, "not locked");

	/* cxl_pci_setup_regs: Register Locator -> component block */
	uint32_t rl = g_find_dvsec(e.v, CXL_VENDOR_ID, CXL_DVSEC_ID_REG_LOCATOR);
	ok(rl >= 0x100, "guest finds the Register Locator at 0x%x", rl);
	unsigned nent = (VCXL_FIELD_GET(PCIE_DVSEC_HDR1_LEN, gcfg(e.v, rl + 4, 4)) - 0xc) / 8;
	int bir = -1;
	uint64_t comp = 0;
	for (unsigned k = 0; k < nent; k++) {
		uint32_t l = gcfg(e.v, rl + CXL_REGLOC_BLOCK_LO(k), 4);
		if (VCXL_FIELD_GET(CXL_REGLOC_BLOCK_ID, l) == CXL_REGLOC_RBI_COMPONENT) {
			bir = (int)VCXL_FIELD_GET(CXL_REGLOC_BIR, l);
			comp = (l & CXL_REGLOC_OFFSET_LO) |
			       ((uint64_t)gcfg(e.v, rl + CXL_REGLOC_BLOCK_HI(k), 4) << 32);
		}
	}
	is(bir, 0, "component block in BAR0");
	is(comp, vcxl_vdev_host_dev(e.v)->comp_off, "at the device's offset");

	/* cxl_probe_component_regs */
	uint64_t cm = comp + CXL_CM_OFFSET, hdm = 0;
	uint32_t hdr = (uint32_t)g_rd(e.v, 0, cm, 4, &rc);
	is(rc, 0, "read CM header");
	is(VCXL_FIELD_GET(CXL_CM_CAP_HDR_ID, hdr), CXL_CM_CAP_ID_ARRAY,
	   "capability array header id 1");
	unsigned ncap = VCXL_FIELD_GET(CXL_CM_CAP_HDR_ARRAY_SIZE, hdr);
	ok(ncap >= 1, "%u capabilities", ncap);
	bool ras = false;
	for (unsigned k = 1; k <= ncap; k++) {
		uint32_t el = (uint32_t)g_rd(e.v, 0, cm + 4 * k, 4, NULL);
		if (VCXL_FIELD_GET(CXL_CM_CAP_HDR_ID, el) == CXL_CM_CAP_ID_HDM)
			hdm = cm + VCXL_FIELD_GET(CXL_CM_CAP_PTR, el);
		if (VCXL_FIELD_GET(CXL_CM_CAP_HDR_ID, el) == CXL_CM_CAP_ID_RAS)
			ras = true;
	}
	ok(hdm, "HDM capability at BAR0+0x%llx", (unsigned long long)hdm);
	ok(ras, "RAS capability shown (emulated)");
	uint32_t hcap = (uint32_t)g_rd(e.v, 0, hdm + CXL_HDM_CAP, 4, NULL);
	is(VCXL_FIELD_GET(CXL_HDM_CAP_DECODER_COUNT, hcap), 0,
	   "decoder count encoding 0 (1 decoder)");
	is(g_rd(e.v, 0, hdm + CXL_HDM_GLOBAL_CTRL, 4, NULL), 0, "HDM decoding off at open");
	is(g_rd(e.v, 0, hdm + CXL_HDM_DEC_CTRL(0), 4, NULL), 0, "decoder 0 not committed");
	g_rd(e.v, 0, hdm + CXL_HDM_CAP, 2, &rc);
	is(rc, (uint64_t)-EINVAL, "2-byte read of a CM register refused (CXL r3.1 8.2.2)");

	/* cxl_hdm_decode_init: HDM Decoder Enable, then Mem_Enable */
	is(g_wr(e.v, 0, hdm + CXL_HDM_GLOBAL_CTRL, 4, CXL_HDM_GCTRL_ENABLE), 0,
	   "HDM Decoder Enable");
	is(g_rd(e.v, 0, hdm + CXL_HDM_GLOBAL_CTRL, 4, NULL), CXL_HDM_GCTRL_ENABLE, "reads back");
	is(gcfg_w(e.v, dv + CXL_DVSEC_CTRL, 2, ctrl | CXL_DVSEC_CTRL_MEM_EN), 0, "Mem_Enable");
	is(gcfg(e.v, dv + CXL_DVSEC_CTRL, 2), CXL_DVSEC_CTRL_IO_EN | CXL_DVSEC_CTRL_MEM_EN,
	   "Mem_Enable reads back");

	/* cxl_decoder_commit: BASE_HI, BASE_LO, SIZE_HI, SIZE_LO, SKIP, CTRL */
	g_wr(e.v, 0, hdm + CXL_HDM_DEC_BASE_HI(0), 4, GPA >> 32);
	g_wr(e.v, 0, hdm + CXL_HDM_DEC_BASE_LO(0), 4, (uint32_t)GPA);
	g_wr(e.v, 0, hdm + CXL_HDM_DEC_SIZE_HI(0), 4, r->size >> 32);
	g_wr(e.v, 0, hdm + CXL_HDM_DEC_SIZE_LO(0), 4, (uint32_t)r->size);
	g_wr(e.v, 0, hdm + CXL_HDM_DEC_SKIP_HI(0), 4, 0);
	g_wr(e.v, 0, hdm + CXL_HDM_DEC_SKIP_LO(0), 4, 0);
	uint32_t c0 = (uint32_t)g_rd(e.v, 0, hdm + CXL_HDM_DEC_CTRL(0), 4, NULL);
	is(g_wr(e.v, 0, hdm + CXL_HDM_DEC_CTRL(0), 4, c0 | CXL_HDM_DEC_CTRL_COMMIT), 0, "commit");
	c0 = (uint32_t)g_rd(e.v, 0, hdm + CXL_HDM_DEC_CTRL(0), 4, NULL);
	ok(c0 & CXL_HDM_DEC_CTRL_COMMITTED, "Committed (cxld_await_commit)");
	ok(!(c0 & CXL_HDM_DEC_CTRL_COMMIT_ERR), "no Error Not Committed");
	uint64_t base = g_rd(e.v, 0, hdm + CXL_HDM_DEC_BASE_LO(0), 8, NULL);
	is(base, GPA, "base reads back as the guest wrote (8-byte read)");
	uint64_t size = g_rd(e.v, 0, hdm + CXL_HDM_DEC_SIZE_LO(0), 8, NULL);
	is(size, r->size, "size reads back");
	is(nl.calls, 1, "commit notified");
	ok(nl.on && nl.n == 0 && nl.gpa == GPA && nl.size == r->size && nl.roff == 0,
	   "notification: decoder 0 at GPA 0x%llx, region offset 0", (unsigned long long)nl.gpa);
	g_wr(e.v, 0, hdm + CXL_HDM_DEC_BASE_LO(0), 4, 0x70000000);
	is(g_rd(e.v, 0, hdm + CXL_HDM_DEC_BASE_LO(0), 4, NULL), (uint32_t)GPA,
	   "base is read-only while committed");

	vcxl_cxl_read_decoder(vcxl_vdev_host_dev(e.v), 0, &after);
	ok(after.base == before.base && after.size == before.size && after.ctrl == before.ctrl,
	   "the physical decoder still holds the host's HPA 0x%llx",
	   (unsigned long long)after.base);
	ok(after.base != GPA, "the guest's base never reached it");

	/* cxl_decoder_reset */
	c0 = (uint32_t)g_rd(e.v, 0, hdm + CXL_HDM_DEC_CTRL(0), 4, NULL);
	g_wr(e.v, 0, hdm + CXL_HDM_DEC_CTRL(0), 4, c0 & ~CXL_HDM_DEC_CTRL_COMMIT);
	g_wr(e.v, 0, hdm + CXL_HDM_DEC_SIZE_HI(0), 4, 0);
	g_wr(e.v, 0, hdm + CXL_HDM_DEC_SIZE_LO(0), 4, 0);
	g_wr(e.v, 0, hdm + CXL_HDM_DEC_BASE_HI(0), 4, 0);
	g_wr(e.v, 0, hdm + CXL_HDM_DEC_BASE_LO(0), 4, 0);
	c0 = (uint32_t)g_rd(e.v, 0, hdm + CXL_HDM_DEC_CTRL(0), 4, NULL);
	ok(!(c0 & CXL_HDM_DEC_CTRL_COMMITTED), "decommitted");
	is(g_rd(e.v, 0, hdm + CXL_HDM_DEC_BASE_LO(0), 8, NULL), 0, "base cleared");
	ok(nl.calls == 2 && !nl.on, "decommit notified");
	vcxl_cxl_read_decoder(vcxl_vdev_host_dev(e.v), 0, &after);
	ok(after.committed && after.base == before.base, "physical decoder untouched throughout");
	env_fini(&e);
}

/* ---- reset -------------------------------------------------------------------- */

static void guest_commit(struct vcxl_vdev *v, uint64_t size)
{
	struct vcxl_vdev_info info;
	vcxl_vdev_ops.get_info(v, &info);
	uint64_t hdm = info.cxl.hdm_offset;
	uint32_t dv = g_find_dvsec(v, CXL_VENDOR_ID, 0);
	g_wr(v, 0, hdm + CXL_HDM_GLOBAL_CTRL, 4, CXL_HDM_GCTRL_ENABLE);
	gcfg_w(v, dv + CXL_DVSEC_CTRL, 2, CXL_DVSEC_CTRL_MEM_EN);
	g_wr(v, 0, hdm + CXL_HDM_DEC_BASE_LO(0), 8, GPA);
	g_wr(v, 0, hdm + CXL_HDM_DEC_SIZE_LO(0), 8, size);
	g_wr(v, 0, hdm + CXL_HDM_DEC_CTRL(0), 4, CXL_HDM_DEC_CTRL_COMMIT);
}

static bool guest_committed(struct vcxl_vdev *v)
{
	struct vcxl_vdev_info info;
	vcxl_vdev_ops.get_info(v, &info);
	return g_rd(v, 0, info.cxl.hdm_offset + CXL_HDM_DEC_CTRL(0), 4, NULL) &
	       CXL_HDM_DEC_CTRL_COMMITTED;
}

static void test_reset(void)
{
	struct vcxl_model_cfg mc = {.mem_size = G};
	struct env e;

	if (!ok(env_init(&e, &mc, NULL) == 0, "vdev"))
		return;
	const struct vcxl_region *r = vcxl_vdev_region(e.v);
	uint32_t dv = g_find_dvsec(e.v, CXL_VENDOR_ID, 0);
	guest_commit(e.v, r->size);
	ok(guest_committed(e.v), "guest committed its decoder");
	gcfg_w(e.v, dv + CXL_DVSEC_LOCK, 2, CXL_DVSEC_LOCK_CONFIG);
	vcxl_vdev_ops.region_write(e.v, 9, 4096, "keep me", 8);
	unsigned long resets = e.w.resets;
	is(vcxl_vdev_ops.reset(e.v), 0, "VFIO_DEVICE_RESET");
	is(e.w.resets, resets + 1, "backend FLR done");
	ok(!guest_committed(e.v), "virtual decoder decommitted");
	is(gcfg(e.v, dv + CXL_DVSEC_CTRL, 2), CXL_DVSEC_CTRL_IO_EN, "virtual Mem_Enable cleared");
	is(gcfg(e.v, dv + CXL_DVSEC_LOCK, 2), 0, "virtual CONFIG_LOCK cleared");
	is(vcxl_region_verify(r), 0, "host decoder still committed as created");
	char buf[8];
	vcxl_vdev_ops.region_read(e.v, 9, 4096, buf, 8);
	ok(memcmp(buf, "keep me", 8) == 0, "region data preserved across reset");

	/* FLR through the guest's config space: a function reset that leaves
	 * CXL.cache/CXL.mem state alone (CXL r3.1 9.5) */
	uint32_t pcie = 0;
	for (uint32_t p = gcfg(e.v, PCI_CAPABILITY_LIST, 1); p; p = gcfg(e.v, p + 1, 1))
		if (gcfg(e.v, p, 1) == PCI_CAP_ID_EXP) {
			pcie = p;
			break;
		}
	ok(pcie, "PCIe capability at 0x%x", pcie);
	if (pcie && (gcfg(e.v, pcie + PCI_EXP_DEVCAP, 4) & PCI_EXP_DEVCAP_FLR)) {
		guest_commit(e.v, r->size);
		gcfg_w(e.v, dv + CXL_DVSEC_LOCK, 2, CXL_DVSEC_LOCK_CONFIG);
		resets = e.w.resets;
		uint16_t devctl = (uint16_t)gcfg(e.v, pcie + PCI_EXP_DEVCTL, 2);
		is(gcfg_w(e.v, pcie + PCI_EXP_DEVCTL, 2, devctl | PCI_EXP_DEVCTL_BCR_FLR), 0,
		   "guest writes Initiate FLR");
		is(e.w.resets, resets + 1, "intercepted: one backend FLR");
		ok(guest_committed(e.v), "FLR keeps the committed virtual decoder (CXL r3.1 9.5)");
		is(gcfg(e.v, dv + CXL_DVSEC_CTRL, 2) & CXL_DVSEC_CTRL_MEM_EN, CXL_DVSEC_CTRL_MEM_EN,
		   "FLR keeps the virtual Mem_Enable");
		is(gcfg(e.v, dv + CXL_DVSEC_LOCK, 2), CXL_DVSEC_LOCK_CONFIG,
		   "FLR keeps the virtual CONFIG_LOCK");
		is(vcxl_region_verify(r), 0, "host region intact");
		is(gcfg(e.v, pcie + PCI_EXP_DEVCTL, 2) & PCI_EXP_DEVCTL_BCR_FLR, 0,
		   "FLR bit reads 0");
		/* CXL Reset clears the decoders FLR keeps (CXL r3.1 9.7), but not
		 * CONFIG_LOCK nor what it locks (8.1.3.6; test_cxl_reset_dvsec) */
		resets = e.w.resets;
		gcfg_w(e.v, dv + CXL_DVSEC_CTRL2, 2, CXL_DVSEC_CTRL2_INIT_RESET);
		ok(!guest_committed(e.v), "CXL Reset decommits the virtual decoder");
		is(gcfg(e.v, dv + CXL_DVSEC_CTRL, 2) & CXL_DVSEC_CTRL_MEM_EN, CXL_DVSEC_CTRL_MEM_EN,
		   "CXL Reset keeps the locked virtual Mem_Enable");
		is(gcfg(e.v, dv + CXL_DVSEC_LOCK, 2), CXL_DVSEC_LOCK_CONFIG,
		   "CXL Reset keeps the virtual CONFIG_LOCK");
		is(e.w.resets, resets, "CXL Reset is virtual: no device reset");
	} else {
		ok(1, "# skip: device without FLR capability");
	}

	/* a device whose reset clears HDM decoders (a bus reset for lack of FLR, as
	 * vfio-pci does it): the host region is programmed again, and counted */
	struct vcxl_vdev_stats st0, st1;
	struct vcxl_cxl_dev *hd = vcxl_vdev_host_dev(e.v);
	uint64_t h0 = hd->comp_off + hd->hdm_off;
	uint64_t c0 = 0;
	vcxl_vdev_get_stats(e.v, &st0);
	e.raw->ops->bar_read(e.raw->dev, hd->comp_bar, h0 + CXL_HDM_DEC_CTRL(r->decoder), 4, &c0);
	e.raw->ops->bar_write(e.raw->dev, hd->comp_bar, h0 + CXL_HDM_DEC_CTRL(r->decoder), 4,
			      c0 & ~(uint64_t)CXL_HDM_DEC_CTRL_COMMIT);
	ok(vcxl_region_verify(r) != 0, "decoder gone from the device");
	is(vcxl_vdev_ops.reset(e.v), 0, "reset of a device that lost the decoder");
	vcxl_vdev_get_stats(e.v, &st1);
	is(st1.resets, st0.resets + 1, "stats: one more reset");
	is(st1.region_restores, st0.region_restores + 1, "stats: the region was restored");
	is(vcxl_region_verify(r), 0, "host region decodes again");
	is(vcxl_vdev_ops.reset(e.v), 0, "a reset that keeps the decoder");
	vcxl_vdev_get_stats(e.v, &st0);
	is(st0.region_restores, st1.region_restores, "stats: nothing to restore");

	/* client disconnect, --on-disconnect keep: everything as it was left */
	guest_commit(e.v, r->size);
	resets = e.w.resets;
	vcxl_vdev_set_on_disconnect(e.v, VCXL_ON_DISCONNECT_KEEP);
	is(vcxl_vdev_ops.client_gone(e.v), 0, "client gone (keep)");
	is(e.w.resets, resets, "keep: no device reset");
	ok(guest_committed(e.v), "keep: the virtual decoder stays committed");
	vcxl_vdev_ops.region_read(e.v, 9, 4096, buf, 8);
	ok(memcmp(buf, "keep me", 8) == 0, "keep: data kept");
	/* --on-disconnect reset: a clean device for the next tenant */
	vcxl_vdev_set_on_disconnect(e.v, VCXL_ON_DISCONNECT_RESET);
	is(vcxl_vdev_ops.client_gone(e.v), 0, "client gone (reset)");
	is(e.w.resets, resets + 1, "reset: one device reset");
	ok(!guest_committed(e.v), "reset: virtual view as at open");
	vcxl_vdev_ops.region_read(e.v, 9, 4096, buf, 8);
	ok(!memcmp(buf, "\0\0\0\0\0\0\0\0", 8), "reset: region memory scrubbed");
	is(vcxl_region_verify(r), 0, "client gone: host region intact");
	env_fini(&e);
}

/* ---- CXL Reset: the device and the virtual view agree ----------------------- */

/* What a CXL Reset leaves in a Device DVSEC, read through rd(dvsec offset). */
struct dvsec_after {
	uint16_t ctrl, ctrl2, lock, st2;
	uint32_t base_hi, base_lo;
};

typedef uint32_t (*dvsec_rd_fn)(void *ctx, uint32_t off, unsigned len);
typedef void (*dvsec_wr_fn)(void *ctx, uint32_t off, unsigned len, uint32_t val);

#define RB_HI 0x5u	  /* a Range 1 Base the test programs: 0x5_3000_0000 */
#define RB_LO 0x30000000u /* (Base Low holds bits 31:28 only) */

/* Program Control, Range 1 Base and Control2, optionally lock, then Initiate
 * CXL Reset; what the DVSEC reads afterwards. */
static struct dvsec_after dvsec_cxl_reset(dvsec_rd_fn rd, dvsec_wr_fn wr, void *ctx, uint32_t dv,
					  bool lock)
{
	struct dvsec_after a;

	wr(ctx, dv + CXL_DVSEC_CTRL, 2,
	   CXL_DVSEC_CTRL_CACHE_EN | CXL_DVSEC_CTRL_MEM_EN | CXL_DVSEC_CTRL_VIRAL_EN);
	wr(ctx, dv + CXL_DVSEC_RANGE_BASE_HI(0), 4, RB_HI);
	wr(ctx, dv + CXL_DVSEC_RANGE_BASE_LO(0), 4, RB_LO);
	wr(ctx, dv + CXL_DVSEC_CTRL2, 2, CXL_DVSEC_CTRL2_DISABLE_CACHE);
	if (lock)
		wr(ctx, dv + CXL_DVSEC_LOCK, 2, CXL_DVSEC_LOCK_CONFIG);
	wr(ctx, dv + CXL_DVSEC_CTRL2, 2,
	   CXL_DVSEC_CTRL2_DISABLE_CACHE | CXL_DVSEC_CTRL2_INIT_RESET);
	a.ctrl = (uint16_t)rd(ctx, dv + CXL_DVSEC_CTRL, 2);
	a.ctrl2 = (uint16_t)rd(ctx, dv + CXL_DVSEC_CTRL2, 2);
	a.st2 = (uint16_t)rd(ctx, dv + CXL_DVSEC_STATUS2, 2);
	a.lock = (uint16_t)rd(ctx, dv + CXL_DVSEC_LOCK, 2);
	a.base_hi = rd(ctx, dv + CXL_DVSEC_RANGE_BASE_HI(0), 4);
	a.base_lo = rd(ctx, dv + CXL_DVSEC_RANGE_BASE_LO(0), 4);
	return a;
}

static uint32_t model_rd(void *ctx, uint32_t off, unsigned len)
{
	struct vcxl_backend *be = ctx;
	uint64_t x = 0;

	be->ops->cfg_read(be->dev, off, len, &x);
	return (uint32_t)x;
}

static void model_wr(void *ctx, uint32_t off, unsigned len, uint32_t val)
{
	struct vcxl_backend *be = ctx;

	be->ops->cfg_write(be->dev, off, len, val);
}

static uint32_t guest_rd(void *ctx, uint32_t off, unsigned len)
{
	return gcfg(ctx, off, len);
}

static void guest_wr(void *ctx, uint32_t off, unsigned len, uint32_t val)
{
	gcfg_w(ctx, off, len, val);
}

/* CXL r3.1 9.7: non-sticky registers to their defaults, but CONFIG_LOCK and
 * the fields it locks are not affected (8.1.3.6): Control and Range Base are
 * kept only when locked; Control2 (RW) back to 0; Reset Complete set. */
static void check_after(const char *who, bool lock, const struct dvsec_after *a)
{
	const char *l = lock ? "locked" : "unlocked";

	is(a->ctrl,
	   lock ? CXL_DVSEC_CTRL_IO_EN | CXL_DVSEC_CTRL_CACHE_EN | CXL_DVSEC_CTRL_MEM_EN |
		      CXL_DVSEC_CTRL_VIRAL_EN
		: CXL_DVSEC_CTRL_IO_EN,
	   "%s, %s: Control %s", who, l, lock ? "kept (locked)" : "to its default");
	is(a->lock, lock ? CXL_DVSEC_LOCK_CONFIG : 0, "%s, %s: CONFIG_LOCK %s", who, l,
	   lock ? "kept" : "still clear");
	is(a->base_hi, lock ? RB_HI : 0, "%s, %s: Range 1 Base High %s", who, l,
	   lock ? "kept" : "to 0");
	is(a->base_lo, lock ? RB_LO : 0, "%s, %s: Range 1 Base Low %s", who, l,
	   lock ? "kept" : "to 0");
	is(a->ctrl2, 0, "%s, %s: Control2 to its default (Disable Caching 0)", who, l);
	is(a->st2 & (CXL_DVSEC_STATUS2_RESET_DONE | CXL_DVSEC_STATUS2_RESET_ERR),
	   CXL_DVSEC_STATUS2_RESET_DONE, "%s, %s: Reset Complete, no Reset Error", who, l);
}

static void test_cxl_reset_dvsec(void)
{
	for (int lock = 0; lock < 2; lock++) {
		struct vcxl_model_cfg mc = {.mem_size = G};
		struct vcxl_model *m = NULL;
		struct env e;

		if (!ok(vcxl_model_create(&mc, &m) == 0 && env_init(&e, &mc, NULL) == 0,
			"a model, and a vdev over another"))
			return;
		uint32_t dv = g_find_dvsec(e.v, CXL_VENDOR_ID, 0);
		unsigned long resets = e.w.resets;
		/* the same DVSEC offset on both: the virtual one sits where the device's is */
		struct dvsec_after phys =
		    dvsec_cxl_reset(model_rd, model_wr, vcxl_model_backend(m), dv, lock);
		struct dvsec_after virt = dvsec_cxl_reset(guest_rd, guest_wr, e.v, dv, lock);
		check_after("model", lock, &phys);
		check_after("virtual", lock, &virt);
		ok(phys.ctrl == virt.ctrl && phys.ctrl2 == virt.ctrl2 && phys.lock == virt.lock &&
		       phys.base_hi == virt.base_hi && phys.base_lo == virt.base_lo,
		   "%s: the model's CXL Reset and the virtual one leave the same DVSEC",
		   lock ? "locked" : "unlocked");
		is(e.w.resets, resets, "the virtual CXL Reset does not reset the device");
		env_fini(&e);
		vcxl_model_destroy(m);
	}
}

/* ---- firmware-committed devices --------------------------------------------- */

/* The guest's view of a firmware-committed region (docs/uapi.md): decoder 0
 * preset as firmware leaves it but for the base, which the VMM writes with
 * Commit; then locked (CXL r3.1 8.2.4.20.7); a VFIO reset presets it again,
 * a CXL reset does not (firmware does not run). */
static void firmware_view(struct env *e, uint64_t hdm, uint64_t size)
{
	struct vcxl_vdev *v = e->v;
	uint32_t dv = g_find_dvsec(v, CXL_VENDOR_ID, 0);
	uint32_t ctrl = (uint32_t)g_rd(v, 0, hdm + CXL_HDM_DEC_CTRL(0), 4, NULL);

	ok(g_rd(v, 0, hdm + CXL_HDM_GLOBAL_CTRL, 4, NULL) & CXL_HDM_GCTRL_ENABLE,
	   "firmware view: HDM Decoder Enable set");
	is(ctrl & (CXL_HDM_DEC_CTRL_LOCK_ON_COMMIT | CXL_HDM_DEC_CTRL_COMMIT |
		   CXL_HDM_DEC_CTRL_COMMITTED | CXL_HDM_DEC_CTRL_IW),
	   CXL_HDM_DEC_CTRL_LOCK_ON_COMMIT,
	   "firmware view: Lock-On-Commit, one way, not committed");
	is(g_rd(v, 0, hdm + CXL_HDM_DEC_SIZE_LO(0), 8, NULL), size,
	   "firmware view: size = the region");
	is(g_rd(v, 0, hdm + CXL_HDM_DEC_SKIP_LO(0), 8, NULL), 0, "firmware view: DPA skip 0");
	is(g_rd(v, 0, hdm + CXL_HDM_DEC_BASE_LO(0), 8, NULL), 0, "firmware view: no base yet");

	/* the VMM, as the VM's firmware: base, then Commit */
	g_wr(v, 0, hdm + CXL_HDM_DEC_BASE_HI(0), 4, GPA >> 32);
	g_wr(v, 0, hdm + CXL_HDM_DEC_BASE_LO(0), 4, (uint32_t)GPA);
	g_wr(v, 0, hdm + CXL_HDM_DEC_CTRL(0), 4, ctrl | CXL_HDM_DEC_CTRL_COMMIT);
	ok(guest_committed(v), "VMM's commit at its window base: committed");
	/* the guest: decommit and move, both refused by the lock */
	ctrl = (uint32_t)g_rd(v, 0, hdm + CXL_HDM_DEC_CTRL(0), 4, NULL);
	g_wr(v, 0, hdm + CXL_HDM_DEC_CTRL(0), 4, ctrl & ~(uint32_t)CXL_HDM_DEC_CTRL_COMMIT);
	g_wr(v, 0, hdm + CXL_HDM_DEC_BASE_LO(0), 8, GPA + G);
	ok(guest_committed(v), "locked: decommit ignored");
	is(g_rd(v, 0, hdm + CXL_HDM_DEC_BASE_LO(0), 8, NULL), GPA, "locked: base unchanged");

	is(vcxl_vdev_ops.reset(v), 0, "VFIO_DEVICE_RESET");
	ok(!guest_committed(v), "after the reset: not committed...");
	is(g_rd(v, 0, hdm + CXL_HDM_DEC_CTRL(0), 4, NULL) & CXL_HDM_DEC_CTRL_LOCK_ON_COMMIT,
	   CXL_HDM_DEC_CTRL_LOCK_ON_COMMIT, "...but preset again for the VMM");
	is(g_rd(v, 0, hdm + CXL_HDM_DEC_SIZE_LO(0), 8, NULL), size, "preset again: size");

	gcfg_w(v, dv + CXL_DVSEC_CTRL2, 2, CXL_DVSEC_CTRL2_INIT_RESET);
	is(g_rd(v, 0, hdm + CXL_HDM_DEC_CTRL(0), 4, NULL) &
	       (CXL_HDM_DEC_CTRL_LOCK_ON_COMMIT | CXL_HDM_DEC_CTRL_COMMITTED),
	   0, "CXL reset: no firmware, decoder 0 at its reset values");
	is(g_rd(v, 0, hdm + CXL_HDM_DEC_SIZE_LO(0), 8, NULL), 0, "CXL reset: size 0");
	guest_commit(v, size);
	ok(guest_committed(v), "after the CXL reset the guest commits it itself");
}

static void test_firmware(void)
{
	struct vcxl_model_cfg mc = {.mem_size = G,
				    .firmware_committed = true,
				    .fw_hpa_base = VCXL_HOST_DEFAULT_WIN_BASE + 8 * G};
	struct vcxl_vdev_cfg vc = {.prefer_firmware = true};
	struct vcxl_vdev_info info;
	struct env e;

	if (!ok(env_init(&e, &mc, &vc) == 0, "vdev over a firmware-committed device"))
		return;
	const struct vcxl_region *r = vcxl_vdev_region(e.v);
	ok(r->firmware, "attached (prefer_firmware)");
	is(r->hpa, mc.fw_hpa_base, "at firmware's HPA");
	vcxl_vdev_ops.get_info(e.v, &info);
	ok(info.cxl.flags & VFIO_CXL_CAP_FIRMWARE_COMMITTED, "cap flag FIRMWARE_COMMITTED");
	is(info.cxl.region_size, r->size, "region size");
	uint8_t *dev = vcxl_model_mem(e.m);
	vcxl_vdev_ops.region_write(e.v, 9, 64, "fw", 2);
	ok(dev && memcmp(dev + r->dpa + 64, "fw", 2) == 0,
	   "region 9 is the firmware region's memory");
	firmware_view(&e, info.cxl.hdm_offset, r->size);
	env_fini(&e);

	/* attach-only (--region-dax) attaches the same way... */
	vc = (struct vcxl_vdev_cfg){.attach_only = true};
	if (ok(env_init(&e, &mc, &vc) == 0, "attach-only over a firmware-committed device")) {
		ok(vcxl_vdev_region(e.v)->firmware, "attach-only: attached");
		is(vcxl_vdev_region(e.v)->hpa, mc.fw_hpa_base, "attach-only: at firmware's HPA");
		env_fini(&e);
	}
	/* ...and refuses a device with nothing committed, programming nothing */
	struct vcxl_model_cfg mc0 = {.mem_size = G};
	struct vcxl_model *m0 = NULL;
	struct vcxl_vdev *v0 = NULL;
	struct bw w0;
	char why[256] = "";
	if (ok(vcxl_model_create(&mc0, &m0) == 0, "model without firmware commit")) {
		bw_init(&w0, vcxl_model_backend(m0));
		struct vcxl_vdev_cfg vc0 = {.attach_only = true}; /* a private host */
		is(vcxl_vdev_create(&w0.be, &vc0, &v0, why, sizeof(why)), -ENOENT,
		   "attach-only, nothing committed: -ENOENT");
		ok(strstr(why, "not committed") != NULL, "reason: %s", why);
		ok(!v0, "no vdev");
		is(w0.bar_writes, 0, "no BAR register written (no decoder programmed)");
		vcxl_model_destroy(m0);
	}

	/* create-first: the firmware decoder holds all DPA, so it falls back to attach */
	vc = (struct vcxl_vdev_cfg){.prefer_firmware = false};
	if (!ok(env_init(&e, &mc, &vc) == 0, "vdev, create preferred"))
		return;
	ok(vcxl_vdev_region(e.v)->firmware, "no room for a new region: attached instead");
	env_fini(&e);

	/* create-first with room: a new region in decoder 1, firmware's left alone */
	struct vcxl_model_cfg mc2 = mc;
	mc2.mem_size = 2 * G;
	mc2.decoders = 2;
	if (env_init(&e, &mc2, &vc)) {
		ok(0, "vdev over a 2-decoder device");
		return;
	}
	r = vcxl_vdev_region(e.v);
	struct vcxl_cxl_dev *d = vcxl_vdev_host_dev(e.v);
	if (d->dpa[0].size < mc2.mem_size) {
		ok(!r->firmware && r->decoder == 1, "created in decoder 1");
		is(r->dpa, d->dpa[0].dpa + d->dpa[0].size, "DPA after the firmware's");
	} else {
		ok(r->firmware, "firmware took all DPA: attached");
		ok(1, "(no second decoder needed)");
	}
	env_fini(&e);
}

/* ---- variants and config errors -------------------------------------------- */

static unsigned v_opens, v_closes;

static int v_open(struct vcxl_vdev *v, void *priv)
{
	v_opens++;
	return priv ? -EPERM : 0;
}

static void v_close(struct vcxl_vdev *v, void *priv)
{
	v_closes++;
}

static void test_variants(void)
{
	struct vcxl_model_cfg mc = {.mem_size = G};
	struct vcxl_variant var = {.name = "test",
				   .vendor = VCXL_VARIANT_ANY,
				   .device = VCXL_VARIANT_ANY,
				   .noncached = true,
				   .open = v_open,
				   .close = v_close};
	struct vcxl_vdev_cfg vc = {.variant = &var};
	struct vcxl_vdev_info info;
	struct env e;

	is(strcmp(vcxl_variant_match(VCXL_MODEL_VENDOR, VCXL_MODEL_DEVICE)->name, "vcxl-accel"), 0,
	   "the model's id matches the built-in accelerator variant");
	ok(!vcxl_variant_match(VCXL_MODEL_VENDOR, VCXL_MODEL_DEVICE)->media_ready,
	   "accelerator: media-ready does not apply");
	ok(vcxl_variant_match(0x1234, 0x5678) == vcxl_variant_generic(),
	   "unknown device: generic default");
	if (env_init(&e, &mc, NULL) == 0) {
		ok(vcxl_vdev_variant(e.v) ==
		       vcxl_variant_match(VCXL_MODEL_VENDOR, VCXL_MODEL_DEVICE),
		   "vdev picked the accelerator variant");
		env_fini(&e);
	}
	if (ok(env_init(&e, &mc, &vc) == 0, "vdev with a custom variant")) {
		is(v_opens, 1, "open hook called");
		vcxl_vdev_ops.get_info(e.v, &info);
		ok(info.cxl.flags & VFIO_CXL_CAP_NONCACHED, "noncached variant: cap flag");
		env_fini(&e);
		is(v_closes, 1, "close hook called on destroy");
	}
	var.priv = &var; /* makes open refuse */
	is(env_init(&e, &mc, &vc), (uint64_t)-EPERM, "open hook refusal fails create");
	ok(strstr(e.err, "refused") != NULL, "message: %s", e.err);
	is(v_closes, 1, "close not called for a refused open");

	var = (struct vcxl_variant){.name = "big",
				    .vendor = VCXL_VARIANT_ANY,
				    .device = VCXL_VARIANT_ANY,
				    .mem_size = 2 * G};
	is(env_init(&e, &mc, &vc), (uint64_t)-ENODEV, "variant expecting more memory: refused");

	struct vcxl_vdev_cfg bad = {.guest_decoders = 3};
	is(env_init(&e, &mc, &bad), (uint64_t)-EINVAL, "3 guest decoders: not encodable");
	ok(strstr(e.err, "encodable") != NULL, "message: %s", e.err);
	struct vcxl_vdev_cfg two = {.guest_decoders = 2};
	if (ok(env_init(&e, &mc, &two) == 0, "2 guest decoders on a 1-decoder device")) {
		vcxl_vdev_ops.get_info(e.v, &info);
		is(info.cxl.hdm_count, 2, "guest sees 2");
		is(info.cxl.hdm_size, 0x50, "hdm size for 2");
		env_fini(&e);
	}
	struct vcxl_vdev_cfg big = {.region_size = 4 * G};
	is(env_init(&e, &mc, &big), (uint64_t)-ENOSPC, "region larger than the device: -ENOSPC");
	struct vcxl_vdev *v = NULL;
	char err[100];
	is(vcxl_vdev_create(NULL, NULL, &v, err, sizeof(err)), (uint64_t)-EINVAL, "no backend");
}

/* ---- create's unwind under every injected failure --------------------------- */

static void test_fault_injection(void)
{
	struct vcxl_model_cfg mc = {.mem_size = 2 * G, .decoders = 2};
	struct vcxl_model *m;
	struct vcxl_host h;
	struct vclock clk = {0};
	struct bw w;
	char err[200];
	unsigned k, bad = 0, nfail = 0;

	if (vcxl_model_create(&mc, &m))
		return;
	clk.model = m;
	vcxl_host_init(&h);
	vcxl_host_add_window(&h, VCXL_HOST_DEFAULT_WIN_BASE, 64 * G, VCXL_HOST_DEFAULT_WIN_FLAGS);
	vclock_install(&h, &clk);
	struct vcxl_backend *raw = vcxl_model_backend(m);
	bw_init(&w, raw);

	/* the baseline, from a probe that is thrown away */
	struct vcxl_cxl_dev *d0 = NULL;
	vcxl_cxl_probe(&h, raw, NULL, &d0, err, sizeof(err));
	if (!ok(d0 != NULL, "baseline probe")) {
		vcxl_model_destroy(m);
		return;
	}
	struct host_state before, after;
	hs_take(raw, d0, &before);
	int fds = count_fds();
	for (k = 1; k < 5000; k++) {
		struct vcxl_vdev_cfg vc = {.host = &h};
		struct vcxl_vdev *v = (struct vcxl_vdev *)&k; /* must be overwritten */
		w.ops = 0;
		w.fail_at = k;
		err[0] = 0;
		int rc = vcxl_vdev_create(&w.be, &vc, &v, err, sizeof(err));
		w.fail_at = 0;
		if (rc == 0 && w.ops < k) {
			vcxl_vdev_destroy(v);
			break; /* k is past the last operation create does */
		}
		if (rc == 0) {
			/* the failed op was one create tolerates (e.g. CDAT) */
			vcxl_vdev_destroy(v);
		} else {
			nfail++;
			if (v != NULL) {
				bad++;
				diag("op %u: *out not cleared", k);
			}
			if (!err[0]) {
				bad++;
				diag("op %u: no message", k);
			}
		}
		hs_take(raw, d0, &after);
		int i = hs_diff(&before, &after);
		if (i >= 0 || vcxl_host_hpa_avail(&h, 0, NULL) != 64 * G || count_fds() != fds) {
			bad++;
			diag("op %u (%s): state left behind (reg 0x%x: 0x%x -> 0x%x)", k, err,
			     i >= 0 ? before.where[i] : 0, i >= 0 ? before.val[i] : 0,
			     i >= 0 ? after.val[i] : 0);
		}
	}
	ok(k > 20 && k < 5000, "create uses %u backend operations", k - 1);
	ok(nfail > 10, "%u of them failing made create fail", nfail);
	is(bad, 0, "every failure (and every success + destroy) left nothing behind");
	vcxl_cxl_remove(d0);
	vcxl_host_fini(&h);
	vcxl_model_destroy(m);
}

int main(void)
{
	test_info();
	test_sparse();
	test_region_io();
	test_comp_region();
	test_linux_guest();
	test_reset();
	test_cxl_reset_dvsec();
	test_firmware();
	test_variants();
	test_fault_injection();
	return done();
}
