// SPDX-License-Identifier: BSD-3-Clause
/*
 * The real vcxl-server driven in QEMU 10.2's order: VERSION, DMA_MAPs before
 * GET_INFO, GET_INFO, REGION_INFO 0-5 and 7 with the argsz retry, IRQ_INFO,
 * a 4 KiB config read; then the sparse areas, the CXL region through its fd,
 * reset, and the vcxl CLI against the same server.
 */
#include <json-c/json.h>
#include <sys/mman.h>

#include "tap.h"
#include "integration/harness.h"

static const uint32_t RW = VFIO_USER_F_DMA_REGION_READ | VFIO_USER_F_DMA_REGION_WRITE;

static void test_qemu_order(struct harness *h)
{
	struct vcxl_client *c;
	struct vcxl_client_info info;
	struct vcxl_client_region ri[8];
	uint8_t cfg[4096];
	uint32_t count, flags;
	int mfd = memfd_create("guest-ram", MFD_CLOEXEC);

	setup_ok(ftruncate(mfd, 16 << 20));
	is(vcxl_client_connect(h->sock, &c), 0, "VERSION with QEMU 10.2 capabilities");
	ok(vcxl_client_server_caps(c)->max_msg_fds == 16 &&
	       vcxl_client_server_caps(c)->max_data_xfer_size == (1u << 20),
	   "server capabilities: 16 fds, 1 MiB transfers");
	/* QEMU maps RAM (memfd) and the BIOS ROM (no fd) before GET_INFO */
	is(vcxl_client_dma_map(c, 0, 0xc0000, RW, mfd, 0, NULL), 0, "DMA_MAP low RAM with fd");
	is(vcxl_client_dma_map(c, 0xc0000, 0x20000, VFIO_USER_F_DMA_REGION_READ, -1, 0, NULL), 0,
	   "DMA_MAP ROM read-only, no fd");
	is(vcxl_client_dma_map(c, 0x100000, 0xf00000, RW, mfd, 0x100000, NULL), 0,
	   "DMA_MAP high RAM with fd at its file offset");
	/* Regression (seen in tests/e2e with intel-iommu): QEMU 10.2 unmaps ranges
	 * it never mapped when the guest switches IOMMU domains, and expects
	 * success as from VFIO type1. Must not be a protocol error. */
	is(vcxl_client_dma_unmap(c, 0xfef00000ull, 0x100000, 0), 0,
	   "DMA_UNMAP of a never-mapped range (QEMU + vIOMMU): success");
	is(vcxl_client_dma_unmap(c, 0x100000000ull, 0x100000000ull, 0), 0,
	   "DMA_UNMAP of a large never-mapped range: success");
	is(vcxl_client_get_info(c, &info), 0, "GET_INFO");
	ok(info.flags & VFIO_DEVICE_FLAGS_PCI, "flag PCI");
	ok(info.flags & VFIO_DEVICE_FLAGS_RESET, "flag RESET");
	ok(info.flags & VFIO_DEVICE_FLAGS_CXL, "flag CXL (bit 9)");
	ok(info.num_regions >= 9 && info.num_regions <= 100, "num_regions %u in [9, 100]",
	   info.num_regions);
	ok(info.num_irqs >= 3 && info.num_irqs <= 50, "num_irqs %u in [3, 50]", info.num_irqs);
	ok(info.has_cxl, "CXL device-info capability");
	is(info.cxl.header.version, VCXL_DEVICE_INFO_CAP_CXL_VERSION, "cap version 1");
	for (uint32_t i = 0; i <= 7; i++) {
		if (i == 6)
			continue;
		memset(&ri[i], 0, sizeof(ri[i]));
		is(vcxl_client_region_info(c, i, &ri[i]), 0, "REGION_INFO %u", i);
	}
	ok(ri[0].size > 0 && (ri[0].flags & VFIO_REGION_INFO_FLAG_MMAP), "BAR0 mmappable");
	is(ri[0].tries, 2, "BAR0: argsz retry (32, then the size asked for)");
	ok(ri[0].fd >= 0, "BAR0 fd on the second reply");
	is(ri[1].size, 0, "BAR1 absent: size 0");
	is(ri[7].size, 4096, "config space 4 KiB (PCIe)");
	ok(ri[7].fd < 0, "config not mmappable");
	is(vcxl_client_irq_info(c, VFIO_PCI_ERR_IRQ_INDEX, &count, &flags), 0, "IRQ_INFO ERR");
	is(vcxl_client_irq_info(c, VFIO_PCI_MSIX_IRQ_INDEX, &count, &flags), 0, "IRQ_INFO MSI-X");
	ok(count >= 1 && (flags & VFIO_IRQ_INFO_EVENTFD), "MSI-X vectors with eventfds (%u)",
	   count);
	is(vcxl_client_irq_info(c, VFIO_PCI_INTX_IRQ_INDEX, &count, &flags), 0, "IRQ_INFO INTx");
	is(vcxl_client_region_read(c, 7, 0, cfg, sizeof(cfg)), 0, "config read of 4096");
	ok(cfg[0] == 0x86 && cfg[1] == 0x80 && cfg[2] == 0x94 && cfg[3] == 0x0d, "8086:0d94");
	is(vcxl_client_set_irqs(c, VFIO_PCI_INTX_IRQ_INDEX,
				VFIO_IRQ_SET_DATA_NONE | VFIO_IRQ_SET_ACTION_TRIGGER, 0, 0, NULL, 0,
				NULL),
	   0, "SET_IRQS INTx disable-all (as QEMU at reset)");
	{
		uint32_t rom = 0xfffff800;

		is(vcxl_client_region_write(c, 7, 0x30, &rom, 4), 0, "ROM BAR sizing write");
	}
	is(vcxl_client_reset(c), 0, "DEVICE_RESET");
	is(vcxl_client_dma_unmap(c, 0xc0000, 0x20000, 0), 0, "DMA_UNMAP ROM");
	is(vcxl_client_dma_unmap(c, 0, 0, VFIO_DMA_UNMAP_FLAG_ALL), 0, "DMA_UNMAP all");

	/* the component block is trapped; the rest of the BAR is sparse-mmapped */
	{
		uint64_t cs = info.cxl.comp_offset, ce = cs + info.cxl.comp_size;
		bool clear = true, mapped = true;

		ok(ri[0].nr_sparse >= 1, "BAR%u has sparse areas", info.cxl.hdm_bar);
		for (unsigned k = 0; k < ri[0].nr_sparse; k++) {
			uint64_t s = ri[0].sparse[k].offset, e = s + ri[0].sparse[k].size;
			void *p;

			if (s < ce && cs < e)
				clear = false;
			p = mmap(NULL, ri[0].sparse[k].size, PROT_READ | PROT_WRITE, MAP_SHARED,
				 ri[0].fd, (off_t)(ri[0].offset + s));
			if (p == MAP_FAILED)
				mapped = false;
			else
				munmap(p, ri[0].sparse[k].size);
		}
		ok(clear, "component block [0x%llx, 0x%llx) in no sparse area",
		   (unsigned long long)cs, (unsigned long long)ce);
		ok(mapped, "every sparse area mmaps through the fd");
		ok(info.cxl.hdm_offset >= cs && info.cxl.hdm_offset + info.cxl.hdm_size <= ce,
		   "HDM decoders inside the component block");
	}
	for (uint32_t i = 0; i <= 7; i++)
		if (i != 6 && ri[i].fd >= 0)
			close(ri[i].fd);

	/* CXL region: typed, mmappable, data equal through the fd and REGION_READ */
	{
		struct vcxl_client_region r;
		uint8_t back[8192];
		uint8_t *p;

		is(vcxl_client_region_info(c, info.cxl.region_index, &r), 0,
		   "REGION_INFO CXL region");
		ok(r.has_type && r.type == 0x80001e98u && r.subtype == VFIO_REGION_SUBTYPE_CXL,
		   "CXL region type 0x80001e98 subtype 1");
		is(r.size, info.cxl.region_size, "region size matches the capability");
		ok(r.fd >= 0 && (r.flags & VFIO_REGION_INFO_FLAG_MMAP), "CXL region has an fd");
		p = r.fd >= 0 ? mmap(NULL, 1 << 20, PROT_READ | PROT_WRITE, MAP_SHARED, r.fd,
				     (off_t)r.offset)
			      : MAP_FAILED;
		ok(p != MAP_FAILED, "CXL region mmaps");
		if (p != MAP_FAILED) {
			for (unsigned i = 0; i < 8192; i++)
				p[0x3000 + i] = (uint8_t)(i * 13 + 1);
			is(vcxl_client_region_read(c, r.index, 0x3000, back, sizeof(back)), 0,
			   "REGION_READ of the CXL region");
			ok(!memcmp(back, p + 0x3000, sizeof(back)), "fd mapping == REGION_READ");
			memset(back, 0x77, 64);
			vcxl_client_region_write(c, r.index, 0x10000, back, 64);
			ok(p[0x10000] == 0x77 && p[0x1003f] == 0x77,
			   "REGION_WRITE visible in mapping");
			munmap(p, 1 << 20);
		}
		if (r.fd >= 0)
			close(r.fd);
	}
	vcxl_client_close(c);
	close(mfd);
}

static int run_cli(const struct harness *h, const char *args, char *out, size_t len)
{
	char cmd[512];
	FILE *f;
	size_t n;

	snprintf(cmd, sizeof(cmd), "%s %s 2>&1", h->cli, args);
	f = popen(cmd, "r");
	if (!f)
		return -1;
	n = fread(out, 1, len - 1, f);
	out[n] = 0;
	return pclose(f);
}

/*
 * GET_INFO at every argsz a client may send (vfio-user spec "DEVICE_GET_INFO";
 * kernel vfio_pci_ioctl_get_info's rule): the device-info capability is in
 * the reply when argsz has room for it, otherwise the reply is the fixed part
 * that fits, with CAPS set, cap_offset 0 and argsz = the size needed.
 * QEMU 10.2's vfio-user client asks with 16; the kernel path (and a patched
 * QEMU) with sizeof(struct vfio_device_info) = 24, then with the argsz it got.
 */
/* The component-registers region over the wire: found by type/subtype, its
 * geometry capability after the type capability (argsz retry), and its
 * registers the same as the block inside the BAR. */
static void test_comp_regs_region(struct harness *h)
{
	struct vcxl_client *c;
	struct vcxl_client_info info;
	struct vcxl_client_region ri;
	uint32_t found = 0, a = 0, b = 0;

	is(vcxl_client_connect(h->sock, &c), 0, "COMP_REGS: client connects");
	if (!c)
		return;
	is(vcxl_client_get_info(c, &info), 0, "GET_INFO");
	for (uint32_t i = VFIO_PCI_NUM_REGIONS; i < info.num_regions; i++) {
		if (vcxl_client_region_info(c, i, &ri))
			continue;
		if (ri.fd >= 0)
			close(ri.fd);
		if (ri.has_type && ri.type == 0x80001e98u && ri.subtype == 2)
			found = i;
	}
	ok(found != 0, "a region of type 0x80001e98 subtype 2 (index %u)", found);
	if (!found) {
		vcxl_client_close(c);
		return;
	}
	is(vcxl_client_region_info(c, found, &ri), 0, "REGION_INFO %u", found);
	is(ri.tries, 2, "caps beyond 32 bytes: argsz retry");
	is(ri.argsz, 32 + 16 + 48, "argsz: info + type cap + geometry cap");
	ok((ri.flags & VFIO_REGION_INFO_FLAG_READ) && (ri.flags & VFIO_REGION_INFO_FLAG_WRITE) &&
	       !(ri.flags & VFIO_REGION_INFO_FLAG_MMAP) && ri.fd < 0,
	   "read/write, no mmap, no fd");
	ok(ri.has_comp && ri.comp.bar == info.cxl.hdm_bar &&
	       ri.comp.offset == info.cxl.comp_offset && ri.comp.size == ri.size &&
	       ri.comp.offset + ri.comp.hdm_offset == info.cxl.hdm_offset &&
	       ri.comp.hdm_count == info.cxl.hdm_count,
	   "geometry capability agrees with the device capability");
	is(vcxl_client_read32(c, found, ri.comp.hdm_offset, &a), 0, "REGION_READ HDM cap");
	is(vcxl_client_read32(c, ri.comp.bar, ri.comp.offset + ri.comp.hdm_offset, &b), 0,
	   "the same register through the BAR");
	is(a, b, "same value (0x%08x)", a);
	vcxl_client_close(c);
}

static void test_get_info_argsz(struct harness *h)
{
	static const struct {
		uint32_t argsz, len; /* asked, reply payload expected */
		bool cap;
	} cases[] = {
	    {16, 16, false}, {20, 16, false}, {24, 24, false},	{87, 24, false},
	    {88, 88, true},  {89, 88, true},  {4096, 88, true}, {0xffffffffu, 88, true},
	};
	struct vcxl_client *c;

	is(vcxl_client_connect(h->sock, &c), 0, "GET_INFO argsz: client connects");
	if (!c)
		return;
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		struct vfio_user_device_info req = {.argsz = cases[i].argsz}, got;
		struct vfio_device_info_cap_cxl cap;
		struct vcxl_client_reply rep;
		int rc = vcxl_client_raw(c, VFIO_USER_DEVICE_GET_INFO, 0, &req,
					 VFIO_USER_DEVICE_INFO_MIN, NULL, 0, &rep);

		is(rc, 0, "GET_INFO argsz %u: answered", cases[i].argsz);
		if (rc)
			continue;
		is(rep.hdr.flags & VFIO_USER_F_ERROR, 0, "argsz %u: no error", cases[i].argsz);
		is(rep.len, cases[i].len, "argsz %u: reply payload %u bytes", cases[i].argsz,
		   cases[i].len);
		memset(&got, 0, sizeof(got));
		memcpy(&got, rep.data, rep.len < sizeof(got) ? rep.len : sizeof(got));
		is(got.argsz, sizeof(got) + sizeof(cap), "argsz %u: reply argsz = 24 + 64 needed",
		   cases[i].argsz);
		ok((got.flags & VFIO_DEVICE_FLAGS_CAPS) && (got.flags & VFIO_DEVICE_FLAGS_CXL),
		   "argsz %u: flags CAPS | CXL", cases[i].argsz);
		if (cases[i].cap && rep.len >= sizeof(got) + sizeof(cap)) {
			memcpy(&cap, rep.data + sizeof(got), sizeof(cap));
			is(got.cap_offset, sizeof(got), "argsz %u: cap_offset 24", cases[i].argsz);
			ok(cap.header.id == VFIO_DEVICE_INFO_CAP_CXL && cap.header.version == 1 &&
			       cap.header.next == 0 && cap.region_index == VCXL_VDEV_CXL_REGION,
			   "argsz %u: the CXL capability, last in the chain", cases[i].argsz);
		} else if (cases[i].cap) {
			ok(0, "argsz %u: reply too short for the capability", cases[i].argsz);
		} else {
			is(got.cap_offset, 0, "argsz %u: no capability, cap_offset 0",
			   cases[i].argsz);
		}
		vcxl_client_reply_free(&rep);
	}
	vcxl_client_close(c);
}

static void test_cli(struct harness *h)
{
	static char out[1 << 16];
	char args[256];
	struct json_object *root, *cxl, *o;
	int rc;

	snprintf(args, sizeof(args), "info %s --json", h->sock);
	rc = run_cli(h, args, out, sizeof(out));
	is(rc, 0, "vcxl info --json exits 0");
	root = json_tokener_parse(out);
	ok(root != NULL, "output is one JSON object");
	if (root) {
		bool has_cxl = false;

		ok(json_object_object_get_ex(root, "flags", &o), "key flags");
		for (size_t i = 0; o && i < json_object_array_length(o); i++)
			if (!strcmp(json_object_get_string(json_object_array_get_idx(o, i)), "cxl"))
				has_cxl = true;
		ok(has_cxl, "flags include cxl");
		ok(json_object_object_get_ex(root, "cxl", &cxl), "key cxl");
		if (cxl) {
			static const char *const keys[] = {
			    "hdm_count",   "hdm_bar",	"hdm_offset",	"hdm_size",
			    "comp_offset", "comp_size", "region_index", "firmware_committed"};
			bool all = true;

			for (unsigned i = 0; i < 8; i++)
				all &= json_object_object_get_ex(cxl, keys[i], NULL);
			ok(all, "cxl has every required key");
		}
		ok(json_object_object_get_ex(root, "regions", &o) &&
		       json_object_array_length(o) >= 9,
		   "regions listed");
		ok(json_object_object_get_ex(root, "irqs", &o), "irqs listed");
		json_object_put(root);
	}
	snprintf(args, sizeof(args), "lspci %s", h->sock);
	is(run_cli(h, args, out, sizeof(out)), 0, "vcxl lspci exits 0");
	ok(strstr(out, "CXLCap:") && strstr(out, "Register Locator") && strstr(out, "Range1:") &&
	       strstr(out, "Data Object Exchange"),
	   "lspci decodes the CXL DVSECs and DOE");
	snprintf(args, sizeof(args), "commit %s --decoder 0 --base 0x100000000 --size 256M",
		 h->sock);
	is(run_cli(h, args, out, sizeof(out)), 0, "vcxl commit decoder 0 exits 0");
	ok(strstr(out, "committed") != NULL && strstr(out, "device-coherent (HDM-D/DB)"),
	   "commit reports success, Target Range Type device-coherent on a Type-2");
	snprintf(args, sizeof(args), "commit %s --decoder 7 --base 0x100000000 --size 256M",
		 h->sock);
	rc = run_cli(h, args, out, sizeof(out));
	ok(rc != 0 && strstr(out, "vcxl: ") && !strchr(strchr(out, '\n') + 1, '\n'),
	   "commit of a missing decoder fails with one line");
	snprintf(args, sizeof(args), "hdm %s --json", h->sock);
	is(run_cli(h, args, out, sizeof(out)), 0, "vcxl hdm --json exits 0");
	root = json_tokener_parse(out);
	ok(root && json_object_object_get_ex(root, "decoders", &o), "hdm JSON has decoders");
	json_object_put(root);
	snprintf(args, sizeof(args), "memtest %s --size 8M", h->sock);
	is(run_cli(h, args, out, sizeof(out)), 0, "vcxl memtest exits 0");
	ok(strstr(out, "OK") && strstr(out, "MB/s"), "memtest reports bandwidth");
	snprintf(args, sizeof(args), "reset %s", h->sock);
	is(run_cli(h, args, out, sizeof(out)), 0, "vcxl reset exits 0");
	rc = run_cli(h, "info /nonexistent/sock", out, sizeof(out));
	ok(rc != 0 && !strncmp(out, "vcxl: ", 6), "bad socket: one error line, non-zero");
}

int main(int argc, char **argv)
{
	struct harness h = {.cli = h_cli_bin(argc, argv)};
	int rc = h_start(&h, h_server_bin(argc, argv), -1, NULL);

	ok(rc == 0, "vcxl-server started and accepts on %s", h.sock);
	if (rc) {
		h_dump_log(&h);
		h_cleanup(&h);
		return done();
	}
	test_qemu_order(&h);
	test_get_info_argsz(&h);
	test_comp_regs_region(&h);
	test_cli(&h);
	is(h_log_count(&h, VCXL_PROTO_ERR_PREFIX), 0, "no protocol error in the server log");
	is(h_stop(&h), 0, "SIGTERM: exit status 0");
	ok(access(h.sock, F_OK) != 0, "socket removed on exit");
	if (tap_failed)
		h_dump_log(&h);
	h_cleanup(&h);
	return done();
}
