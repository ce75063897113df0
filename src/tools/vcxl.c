// SPDX-License-Identifier: BSD-3-Clause
/*
 * vcxl: inspect and drive a vcxl (or any vfio-user CXL) device socket.
 *   vcxl info SOCKET [--json]        ids, flags, CXL capability, regions, IRQs
 *   vcxl lspci SOCKET                config space decoded like lspci -vvv
 *   vcxl hdm SOCKET [--json]         the virtual HDM decoders (through BAR accesses)
 *   vcxl commit SOCKET --decoder N --base ADDR --size SIZE
 *   vcxl decommit SOCKET --decoder N
 *   vcxl memtest SOCKET [--size SIZE]
 *   vcxl mbox SOCKET --opcode OP [--in HEX] [--irq] [--timeout MS] [--json]
 *                                    one raw CXL mailbox command (memory devices)
 *   vcxl reset SOCKET
 */
#include <errno.h>
#include <getopt.h>
#include <json-c/json.h>
#include <linux/pci_regs.h>
#include <poll.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <sys/mman.h>
#include <time.h>
#include <unistd.h>

#include "vcxl/client.h"
#include "vcxl/cxl_mbox.h"
#include "vcxl/cxl_regs.h"
#include "vcxl/cxl_spec.h"
#include "vcxl/server.h"
#include "lspci.h"

#define CFG_SIZE	    4096
#define COMMIT_POLL_MS	    1000
#define MBOX_TIMEOUT_MS	    5000
#define MBOX_TIMEOUT_MAX_MS 3600000

static int fail(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static int fail(const char *fmt, ...)
{
	va_list ap;

	fprintf(stderr, "vcxl: ");
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fprintf(stderr, "\n");
	return 1;
}

static void usage(FILE *f)
{
	fprintf(
	    f,
	    "Usage: vcxl COMMAND SOCKET [OPTIONS]\n"
	    "  info SOCKET [--json]      device flags, CXL capability, regions, IRQs\n"
	    "  lspci SOCKET              config space decoded as lspci -vvv does\n"
	    "  hdm SOCKET [--json]       virtual HDM decoders (read through BAR accesses)\n"
	    "  commit SOCKET --decoder N --base ADDR --size SIZE\n"
	    "                            program and commit an HDM decoder like Linux does\n"
	    "  decommit SOCKET --decoder N\n"
	    "  memtest SOCKET [--size SIZE]  pattern test of the CXL region (mmap + REGION_READ)\n"
	    "  mbox SOCKET --opcode OP [--in HEX] [--irq] [--timeout MS] [--json]\n"
	    "                            one CXL mailbox command (memory device registers);\n"
	    "                            --in: input payload bytes in order (\"1122ff\");\n"
	    "                            a background command is waited for by polling, or\n"
	    "                            with --irq on the mailbox's MSI-X vector\n"
	    "                            (default timeout %d ms)\n"
	    "  reset SOCKET              DEVICE_RESET\n"
	    "SIZE and ADDR take K/M/G/T suffixes; OP is 0x4000 or decimal.\n",
	    MBOX_TIMEOUT_MS);
}

struct ctx {
	struct vcxl_client *c;
	struct vcxl_client_info info;
};

static int ctx_open(struct ctx *x, const char *sock)
{
	int rc = vcxl_client_connect(sock, &x->c);

	if (rc)
		return fail("%s: connect: %s", sock, strerror(-rc));
	rc = vcxl_client_get_info(x->c, &x->info);
	if (rc) {
		vcxl_client_close(x->c);
		return fail("%s: GET_INFO: %s", sock, strerror(-rc));
	}
	return 0;
}

static const char *region_name(uint32_t i)
{
	static const char *const n[] = {"BAR0", "BAR1", "BAR2",	  "BAR3", "BAR4",
					"BAR5", "ROM",	"CONFIG", "VGA"};

	return i < 9 ? n[i] : "device-specific";
}

static const char *irq_name(uint32_t i)
{
	static const char *const n[] = {"INTx", "MSI", "MSI-X", "ERR", "REQ"};

	return i < 5 ? n[i] : "other";
}

static void flags_str(char *buf, size_t len, uint32_t flags)
{
	snprintf(buf, len, "%s%s%s%s", flags & VFIO_DEVICE_FLAGS_PCI ? "pci " : "",
		 flags & VFIO_DEVICE_FLAGS_RESET ? "reset " : "",
		 flags & VFIO_DEVICE_FLAGS_CXL ? "cxl " : "",
		 flags & VFIO_DEVICE_FLAGS_CAPS ? "caps " : "");
	if (*buf)
		buf[strlen(buf) - 1] = 0;
}

static struct json_object *jflags(uint32_t flags)
{
	struct json_object *a = json_object_new_array();

	if (flags & VFIO_DEVICE_FLAGS_PCI)
		json_object_array_add(a, json_object_new_string("pci"));
	if (flags & VFIO_DEVICE_FLAGS_RESET)
		json_object_array_add(a, json_object_new_string("reset"));
	if (flags & VFIO_DEVICE_FLAGS_CXL)
		json_object_array_add(a, json_object_new_string("cxl"));
	if (flags & VFIO_DEVICE_FLAGS_CAPS)
		json_object_array_add(a, json_object_new_string("caps"));
	return a;
}

static int cmd_info(struct ctx *x, bool json)
{
	const struct vfio_device_info_cap_cxl *cx = &x->info.cxl;
	struct json_object *root = json_object_new_object(), *regs = json_object_new_array();
	struct json_object *irqs = json_object_new_array();
	uint16_t ids[2] = {0, 0};
	char fl[64];

	vcxl_client_region_read(x->c, VFIO_PCI_CONFIG_REGION_INDEX, 0, ids, sizeof(ids));
	flags_str(fl, sizeof(fl), x->info.flags);
	if (!json) {
		printf("device %04x:%04x\n", ids[0], ids[1]);
		printf("flags: 0x%x (%s)\n", x->info.flags, fl);
		printf("regions: %u, irqs: %u\n", x->info.num_regions, x->info.num_irqs);
		if (x->info.has_cxl)
			printf("cxl: hdm_count %u hdm_bar %u hdm_offset 0x%llx hdm_size 0x%llx "
			       "comp_offset 0x%llx comp_size 0x%llx region_index %u region_size "
			       "0x%llx firmware_committed %s cache_capable %s\n",
			       cx->hdm_count, cx->hdm_bar, (unsigned long long)cx->hdm_offset,
			       (unsigned long long)cx->hdm_size,
			       (unsigned long long)cx->comp_offset,
			       (unsigned long long)cx->comp_size, cx->region_index,
			       (unsigned long long)cx->region_size,
			       cx->flags & VFIO_CXL_CAP_FIRMWARE_COMMITTED ? "yes" : "no",
			       cx->flags & VFIO_CXL_CAP_CACHE_CAPABLE ? "yes" : "no");
		else
			printf("cxl: no CXL capability\n");
	}
	json_object_object_add(root, "vendor", json_object_new_int(ids[0]));
	json_object_object_add(root, "device", json_object_new_int(ids[1]));
	json_object_object_add(root, "flags", jflags(x->info.flags));
	json_object_object_add(root, "flags_value", json_object_new_int64(x->info.flags));
	json_object_object_add(root, "num_regions", json_object_new_int64(x->info.num_regions));
	json_object_object_add(root, "num_irqs", json_object_new_int64(x->info.num_irqs));
	if (x->info.has_cxl) {
		struct json_object *j = json_object_new_object();

		json_object_object_add(j, "hdm_count", json_object_new_int(cx->hdm_count));
		json_object_object_add(j, "hdm_bar", json_object_new_int(cx->hdm_bar));
		json_object_object_add(j, "hdm_offset",
				       json_object_new_int64((int64_t)cx->hdm_offset));
		json_object_object_add(j, "hdm_size", json_object_new_int64((int64_t)cx->hdm_size));
		json_object_object_add(j, "comp_offset",
				       json_object_new_int64((int64_t)cx->comp_offset));
		json_object_object_add(j, "comp_size",
				       json_object_new_int64((int64_t)cx->comp_size));
		json_object_object_add(j, "region_index", json_object_new_int64(cx->region_index));
		json_object_object_add(j, "region_size",
				       json_object_new_int64((int64_t)cx->region_size));
		json_object_object_add(
		    j, "firmware_committed",
		    json_object_new_boolean(cx->flags & VFIO_CXL_CAP_FIRMWARE_COMMITTED));
		json_object_object_add(
		    j, "cache_capable",
		    json_object_new_boolean(cx->flags & VFIO_CXL_CAP_CACHE_CAPABLE));
		json_object_object_add(root, "cxl", j);
	}
	for (uint32_t i = 0; i < x->info.num_regions; i++) {
		struct vcxl_client_region ri;
		struct json_object *j, *sp;
		int rc = vcxl_client_region_info(x->c, i, &ri);

		if (rc) {
			json_object_put(root);
			json_object_put(regs);
			json_object_put(irqs);
			return fail("REGION_INFO %u: %s", i, strerror(-rc));
		}
		if (ri.fd >= 0)
			close(ri.fd);
		j = json_object_new_object();
		sp = json_object_new_array();
		json_object_object_add(j, "index", json_object_new_int64(i));
		json_object_object_add(j, "name", json_object_new_string(region_name(i)));
		json_object_object_add(j, "size", json_object_new_int64((int64_t)ri.size));
		json_object_object_add(j, "flags", json_object_new_int64(ri.flags));
		json_object_object_add(j, "offset", json_object_new_int64((int64_t)ri.offset));
		json_object_object_add(
		    j, "mmap", json_object_new_boolean(ri.flags & VFIO_REGION_INFO_FLAG_MMAP));
		for (unsigned k = 0; k < ri.nr_sparse; k++) {
			struct json_object *a = json_object_new_object();

			json_object_object_add(a, "offset",
					       json_object_new_int64((int64_t)ri.sparse[k].offset));
			json_object_object_add(a, "size",
					       json_object_new_int64((int64_t)ri.sparse[k].size));
			json_object_array_add(sp, a);
		}
		json_object_object_add(j, "sparse", sp);
		if (ri.has_type) {
			json_object_object_add(j, "type", json_object_new_int64(ri.type));
			json_object_object_add(j, "subtype", json_object_new_int64(ri.subtype));
		}
		json_object_array_add(regs, j);
		if (json || !ri.size)
			continue;
		printf("region %u (%s): size 0x%llx flags %s%s%s%s offset 0x%llx", i,
		       region_name(i), (unsigned long long)ri.size,
		       ri.flags & VFIO_REGION_INFO_FLAG_READ ? "r" : "-",
		       ri.flags & VFIO_REGION_INFO_FLAG_WRITE ? "w" : "-",
		       ri.flags & VFIO_REGION_INFO_FLAG_MMAP ? "m" : "-",
		       ri.flags & VFIO_REGION_INFO_FLAG_CAPS ? "c" : "-",
		       (unsigned long long)ri.offset);
		for (unsigned k = 0; k < ri.nr_sparse; k++)
			printf("%s[0x%llx-0x%llx)", k ? " " : " sparse ",
			       (unsigned long long)ri.sparse[k].offset,
			       (unsigned long long)(ri.sparse[k].offset + ri.sparse[k].size));
		if (ri.has_type)
			printf(" type 0x%x subtype 0x%x%s", ri.type, ri.subtype,
			       ri.type == VFIO_REGION_TYPE_CXL &&
				       ri.subtype == VFIO_REGION_SUBTYPE_CXL
				   ? " (CXL region)"
				   : "");
		printf("\n");
	}
	for (uint32_t i = 0; i < x->info.num_irqs; i++) {
		uint32_t count = 0, flags = 0;
		struct json_object *j;
		int rc = vcxl_client_irq_info(x->c, i, &count, &flags);

		if (rc) {
			json_object_put(root);
			json_object_put(regs);
			json_object_put(irqs);
			return fail("IRQ_INFO %u: %s", i, strerror(-rc));
		}
		j = json_object_new_object();
		json_object_object_add(j, "index", json_object_new_int64(i));
		json_object_object_add(j, "name", json_object_new_string(irq_name(i)));
		json_object_object_add(j, "count", json_object_new_int64(count));
		json_object_object_add(j, "flags", json_object_new_int64(flags));
		json_object_array_add(irqs, j);
		if (!json)
			printf("irq %u (%s): count %u flags%s%s%s%s\n", i, irq_name(i), count,
			       flags & VFIO_IRQ_INFO_EVENTFD ? " eventfd" : "",
			       flags & VFIO_IRQ_INFO_MASKABLE ? " maskable" : "",
			       flags & VFIO_IRQ_INFO_AUTOMASKED ? " automasked" : "",
			       flags & VFIO_IRQ_INFO_NORESIZE ? " noresize" : "");
	}
	json_object_object_add(root, "regions", regs);
	json_object_object_add(root, "irqs", irqs);
	if (json)
		printf("%s\n", json_object_to_json_string_ext(root, JSON_C_TO_STRING_PRETTY));
	json_object_put(root);
	return 0;
}

static int read_config(struct ctx *x, uint8_t *cfg)
{
	int rc = vcxl_client_region_read(x->c, VFIO_PCI_CONFIG_REGION_INDEX, 0, cfg, CFG_SIZE);

	if (rc)
		return fail("config read: %s", strerror(-rc));
	return 0;
}

static int cmd_lspci(struct ctx *x)
{
	uint8_t cfg[CFG_SIZE];
	struct vcxl_lspci_bar bars[7] = {{0}};

	if (read_config(x, cfg))
		return 1;
	for (uint32_t i = 0; i < 7 && i < x->info.num_regions; i++) {
		struct vcxl_client_region ri;

		if (vcxl_client_region_info(x->c, i, &ri))
			continue;
		if (ri.fd >= 0)
			close(ri.fd);
		bars[i].size = ri.size;
		bars[i].mmap = ri.flags & VFIO_REGION_INFO_FLAG_MMAP;
	}
	vcxl_lspci_decode(stdout, cfg, bars);
	return 0;
}

/* ---- HDM decoders through BAR accesses ------------------------------- */

static int hdm_rd(struct ctx *x, uint32_t reg, uint32_t *v)
{
	return vcxl_client_read32(x->c, x->info.cxl.hdm_bar, x->info.cxl.hdm_offset + reg, v);
}

static int hdm_wr(struct ctx *x, uint32_t reg, uint32_t v)
{
	return vcxl_client_write32(x->c, x->info.cxl.hdm_bar, x->info.cxl.hdm_offset + reg, v);
}

static int need_cxl(struct ctx *x)
{
	if (!x->info.has_cxl || !(x->info.flags & VFIO_DEVICE_FLAGS_CXL))
		return fail("device has no CXL capability (not a vfio-cxl device)");
	return 0;
}

/* CXL r3.1 8.2.4.20.1: decoder count encoding (0 -> 1, n -> 2n) */
static unsigned hdm_decoder_count(uint32_t cap)
{
	unsigned v = (unsigned)VCXL_FIELD_GET(CXL_HDM_CAP_DECODER_COUNT, cap);

	return v ? v * 2 : 1;
}

struct hdm_dec {
	uint64_t base, size, skip;
	uint32_t ctrl;
};

static int hdm_read_decoder(struct ctx *x, unsigned n, struct hdm_dec *d)
{
	uint32_t blo, bhi, slo, shi, tlo, thi;
	int rc = hdm_rd(x, CXL_HDM_DEC_BASE_LO(n), &blo);

	rc = rc ? rc : hdm_rd(x, CXL_HDM_DEC_BASE_HI(n), &bhi);
	rc = rc ? rc : hdm_rd(x, CXL_HDM_DEC_SIZE_LO(n), &slo);
	rc = rc ? rc : hdm_rd(x, CXL_HDM_DEC_SIZE_HI(n), &shi);
	rc = rc ? rc : hdm_rd(x, CXL_HDM_DEC_CTRL(n), &d->ctrl);
	rc = rc ? rc : hdm_rd(x, CXL_HDM_DEC_SKIP_LO(n), &tlo);
	rc = rc ? rc : hdm_rd(x, CXL_HDM_DEC_SKIP_HI(n), &thi);
	if (rc)
		return rc;
	d->base = (uint64_t)bhi << 32 | (blo & CXL_HDM_DEC_LO_MASK);
	d->size = (uint64_t)shi << 32 | (slo & CXL_HDM_DEC_LO_MASK);
	d->skip = (uint64_t)thi << 32 | (tlo & CXL_HDM_DEC_LO_MASK);
	return 0;
}

static int cmd_hdm(struct ctx *x, bool json)
{
	struct json_object *root, *arr;
	uint32_t cap, gctl;
	unsigned n;
	int rc;

	if (need_cxl(x))
		return 1;
	rc = hdm_rd(x, CXL_HDM_CAP, &cap);
	rc = rc ? rc : hdm_rd(x, CXL_HDM_GLOBAL_CTRL, &gctl);
	if (rc)
		return fail("HDM capability read (BAR%u + 0x%llx): %s", x->info.cxl.hdm_bar,
			    (unsigned long long)x->info.cxl.hdm_offset, strerror(-rc));
	n = hdm_decoder_count(cap);
	if (x->info.cxl.hdm_count && n > x->info.cxl.hdm_count)
		n = x->info.cxl.hdm_count;
	root = json_object_new_object();
	arr = json_object_new_array();
	json_object_object_add(root, "bar", json_object_new_int(x->info.cxl.hdm_bar));
	json_object_object_add(root, "offset",
			       json_object_new_int64((int64_t)x->info.cxl.hdm_offset));
	json_object_object_add(root, "cap", json_object_new_int64(cap));
	json_object_object_add(root, "decoder_count", json_object_new_int((int)n));
	json_object_object_add(
	    root, "target_count",
	    json_object_new_int((int)VCXL_FIELD_GET(CXL_HDM_CAP_TARGET_COUNT, cap)));
	json_object_object_add(root, "enabled",
			       json_object_new_boolean(gctl & CXL_HDM_GCTRL_ENABLE));
	json_object_object_add(root, "poison_enabled",
			       json_object_new_boolean(gctl & CXL_HDM_GCTRL_POISON_EN));
	if (!json)
		printf("HDM decoders at BAR%u + 0x%llx: cap 0x%08x (%u decoders, targets %u%s%s) "
		       "global ctrl 0x%08x (HDM Decoder Enable%c Poison%c)\n",
		       x->info.cxl.hdm_bar, (unsigned long long)x->info.cxl.hdm_offset, cap, n,
		       (unsigned)VCXL_FIELD_GET(CXL_HDM_CAP_TARGET_COUNT, cap),
		       cap & CXL_HDM_CAP_IW_3_6_12 ? ", 3/6/12-way" : "",
		       cap & CXL_HDM_CAP_IW_16 ? ", 16-way" : "", gctl,
		       gctl & CXL_HDM_GCTRL_ENABLE ? '+' : '-',
		       gctl & CXL_HDM_GCTRL_POISON_EN ? '+' : '-');
	for (unsigned i = 0; i < n; i++) {
		struct hdm_dec d;
		struct json_object *j;
		unsigned iw = (unsigned)VCXL_FIELD_GET(CXL_HDM_DEC_CTRL_IW, 0), ig;

		rc = hdm_read_decoder(x, i, &d);
		if (rc) {
			json_object_put(root);
			json_object_put(arr);
			return fail("decoder %u read: %s", i, strerror(-rc));
		}
		iw = (unsigned)VCXL_FIELD_GET(CXL_HDM_DEC_CTRL_IW, d.ctrl);
		ig = (unsigned)VCXL_FIELD_GET(CXL_HDM_DEC_CTRL_IG, d.ctrl);
		j = json_object_new_object();
		json_object_object_add(j, "index", json_object_new_int((int)i));
		json_object_object_add(j, "base", json_object_new_int64((int64_t)d.base));
		json_object_object_add(j, "size", json_object_new_int64((int64_t)d.size));
		json_object_object_add(j, "skip", json_object_new_int64((int64_t)d.skip));
		json_object_object_add(j, "ctrl", json_object_new_int64(d.ctrl));
		json_object_object_add(
		    j, "committed", json_object_new_boolean(d.ctrl & CXL_HDM_DEC_CTRL_COMMITTED));
		json_object_object_add(
		    j, "commit_error",
		    json_object_new_boolean(d.ctrl & CXL_HDM_DEC_CTRL_COMMIT_ERR));
		json_object_object_add(
		    j, "lock_on_commit",
		    json_object_new_boolean(d.ctrl & CXL_HDM_DEC_CTRL_LOCK_ON_COMMIT));
		json_object_object_add(j, "hostonly",
				       json_object_new_boolean(d.ctrl & CXL_HDM_DEC_CTRL_HOSTONLY));
		json_object_object_add(j, "iw", json_object_new_int((int)iw));
		json_object_object_add(j, "ig", json_object_new_int((int)ig));
		json_object_array_add(arr, j);
		if (!json)
			printf("decoder %u: base 0x%llx size 0x%llx skip 0x%llx ctrl 0x%08x "
			       "(IG %u (%u B) IW %u LockOnCommit%c Commit%c Committed%c "
			       "ErrNotCommitted%c TargetType %s)\n",
			       i, (unsigned long long)d.base, (unsigned long long)d.size,
			       (unsigned long long)d.skip, d.ctrl, ig, 256u << ig, iw,
			       d.ctrl & CXL_HDM_DEC_CTRL_LOCK_ON_COMMIT ? '+' : '-',
			       d.ctrl & CXL_HDM_DEC_CTRL_COMMIT ? '+' : '-',
			       d.ctrl & CXL_HDM_DEC_CTRL_COMMITTED ? '+' : '-',
			       d.ctrl & CXL_HDM_DEC_CTRL_COMMIT_ERR ? '+' : '-',
			       d.ctrl & CXL_HDM_DEC_CTRL_HOSTONLY ? "host-only (HDM-H)"
								  : "device-coherent (HDM-D/DB)");
	}
	json_object_object_add(root, "decoders", arr);
	if (json)
		printf("%s\n", json_object_to_json_string_ext(root, JSON_C_TO_STRING_PRETTY));
	json_object_put(root);
	return 0;
}

static int cfg_buf_read32(void *opaque, uint32_t off, uint32_t *val)
{
	const uint8_t *cfg = opaque;

	if (off > CFG_SIZE - 4)
		return -EINVAL;
	memcpy(val, cfg + off, 4);
	return 0;
}

/* CXL r3.1 8.1.3.2: Mem_Enable in the Device DVSEC, as cxl_set_mem_enable() does */
static int ensure_mem_enable(struct ctx *x)
{
	uint8_t cfg[CFG_SIZE];
	uint32_t off, len;
	uint16_t ctl;
	int rc;

	if (read_config(x, cfg))
		return -EIO;
	rc = vcxl_pcie_find_dvsec(cfg_buf_read32, cfg, CXL_VENDOR_ID, CXL_DVSEC_ID_DEVICE, &off,
				  &len);
	if (rc) {
		fail("no CXL Device DVSEC in config space");
		return rc;
	}
	memcpy(&ctl, cfg + off + CXL_DVSEC_CTRL, 2);
	if (ctl & CXL_DVSEC_CTRL_MEM_EN)
		return 0;
	ctl |= CXL_DVSEC_CTRL_MEM_EN;
	rc = vcxl_client_region_write(x->c, VFIO_PCI_CONFIG_REGION_INDEX, off + CXL_DVSEC_CTRL,
				      &ctl, 2);
	if (rc)
		fail("setting Mem_Enable: %s", strerror(-rc));
	return rc;
}

static int64_t now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

static int decoder_check(struct ctx *x, unsigned n)
{
	uint32_t cap;
	int rc = hdm_rd(x, CXL_HDM_CAP, &cap);
	unsigned count;

	if (rc)
		return fail("HDM capability read: %s", strerror(-rc));
	count = hdm_decoder_count(cap);
	if (x->info.cxl.hdm_count && count > x->info.cxl.hdm_count)
		count = x->info.cxl.hdm_count;
	if (n >= count)
		return fail("decoder %u: the device has %u decoder%s", n, count,
			    count == 1 ? "" : "s");
	return 0;
}

/* CXL r3.1 8.2.4.20.12 and Linux cxl_decoder_commit(): program, then Commit, poll Committed */
static int cmd_commit(struct ctx *x, unsigned n, uint64_t base, uint64_t size)
{
	uint32_t gctl, ctrl;
	int64_t deadline;
	int rc;

	if (need_cxl(x) || decoder_check(x, n))
		return 1;
	if ((base | size) & (CXL_HDM_GRANULE - 1) || !size)
		return fail("decoder %u: base and size must be non-zero multiples of 256M", n);
	if (ensure_mem_enable(x))
		return 1;
	rc = hdm_rd(x, CXL_HDM_GLOBAL_CTRL, &gctl);
	if (!rc && !(gctl & CXL_HDM_GCTRL_ENABLE))
		rc = hdm_wr(x, CXL_HDM_GLOBAL_CTRL, gctl | CXL_HDM_GCTRL_ENABLE);
	rc = rc ? rc : hdm_rd(x, CXL_HDM_DEC_CTRL(n), &ctrl);
	if (rc)
		return fail("decoder %u: %s", n, strerror(-rc));
	if (ctrl & CXL_HDM_DEC_CTRL_COMMITTED)
		return fail("decoder %u: already committed (decommit it first)", n);
	/* one way, 256 B granularity, device-coherent memory (Type-2) */
	ctrl &= ~(CXL_HDM_DEC_CTRL_IG | CXL_HDM_DEC_CTRL_IW | CXL_HDM_DEC_CTRL_HOSTONLY |
		  CXL_HDM_DEC_CTRL_COMMIT);
	rc = hdm_wr(x, CXL_HDM_DEC_BASE_HI(n), (uint32_t)(base >> 32));
	rc = rc ? rc : hdm_wr(x, CXL_HDM_DEC_BASE_LO(n), (uint32_t)base);
	rc = rc ? rc : hdm_wr(x, CXL_HDM_DEC_SIZE_HI(n), (uint32_t)(size >> 32));
	rc = rc ? rc : hdm_wr(x, CXL_HDM_DEC_SIZE_LO(n), (uint32_t)size);
	rc = rc ? rc : hdm_wr(x, CXL_HDM_DEC_SKIP_HI(n), 0);
	rc = rc ? rc : hdm_wr(x, CXL_HDM_DEC_SKIP_LO(n), 0);
	rc = rc ? rc : hdm_wr(x, CXL_HDM_DEC_CTRL(n), ctrl);
	rc = rc ? rc : hdm_wr(x, CXL_HDM_DEC_CTRL(n), ctrl | CXL_HDM_DEC_CTRL_COMMIT);
	if (rc)
		return fail("decoder %u: programming: %s", n, strerror(-rc));
	deadline = now_ms() + COMMIT_POLL_MS;
	for (;;) {
		rc = hdm_rd(x, CXL_HDM_DEC_CTRL(n), &ctrl);
		if (rc)
			return fail("decoder %u: %s", n, strerror(-rc));
		if (ctrl & CXL_HDM_DEC_CTRL_COMMIT_ERR)
			return fail("decoder %u: Error Not Committed (ctrl 0x%08x): the device "
				    "refused base 0x%llx size 0x%llx (decoder order, alignment, "
				    "overlap or capacity)",
				    n, ctrl, (unsigned long long)base, (unsigned long long)size);
		if (ctrl & CXL_HDM_DEC_CTRL_COMMITTED)
			break;
		if (now_ms() > deadline)
			return fail("decoder %u: not committed after %d ms (ctrl 0x%08x)", n,
				    COMMIT_POLL_MS, ctrl);
		usleep(1000);
	}
	printf("decoder %u committed: base 0x%llx size 0x%llx\n", n, (unsigned long long)base,
	       (unsigned long long)size);
	return 0;
}

/* Linux cxl_decoder_reset(): clear Commit, then zero size and base */
static int cmd_decommit(struct ctx *x, unsigned n)
{
	uint32_t ctrl;
	int rc;

	if (need_cxl(x) || decoder_check(x, n))
		return 1;
	rc = hdm_rd(x, CXL_HDM_DEC_CTRL(n), &ctrl);
	if (rc)
		return fail("decoder %u: %s", n, strerror(-rc));
	if ((ctrl & CXL_HDM_DEC_CTRL_COMMITTED) && (ctrl & CXL_HDM_DEC_CTRL_LOCK_ON_COMMIT))
		return fail("decoder %u: locked (Lock On Commit)", n);
	rc = hdm_wr(x, CXL_HDM_DEC_CTRL(n), ctrl & ~CXL_HDM_DEC_CTRL_COMMIT);
	rc = rc ? rc : hdm_wr(x, CXL_HDM_DEC_SIZE_HI(n), 0);
	rc = rc ? rc : hdm_wr(x, CXL_HDM_DEC_SIZE_LO(n), 0);
	rc = rc ? rc : hdm_wr(x, CXL_HDM_DEC_BASE_HI(n), 0);
	rc = rc ? rc : hdm_wr(x, CXL_HDM_DEC_BASE_LO(n), 0);
	rc = rc ? rc : hdm_rd(x, CXL_HDM_DEC_CTRL(n), &ctrl);
	if (rc)
		return fail("decoder %u: %s", n, strerror(-rc));
	if (ctrl & CXL_HDM_DEC_CTRL_COMMITTED)
		return fail("decoder %u: still committed (ctrl 0x%08x); decommit decoders "
			    "above it first",
			    n, ctrl);
	printf("decoder %u decommitted\n", n);
	return 0;
}

static double mbps(uint64_t bytes, int64_t ns)
{
	return ns > 0 ? (double)bytes / (double)ns * 1e3 : 0.0;
}

static int64_t now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

static uint64_t pattern(uint64_t off)
{
	return (off * 0x9e3779b97f4a7c15ull) ^ 0xc3a5c85c97cb3127ull;
}

static int cmd_memtest(struct ctx *x, uint64_t size)
{
	struct vcxl_client_region ri;
	uint64_t *p, *chunk;
	int64_t t0, t1, t2, t3;
	const size_t cs = 1u << 20;
	int rc;

	if (need_cxl(x))
		return 1;
	rc = vcxl_client_region_info(x->c, x->info.cxl.region_index, &ri);
	if (rc)
		return fail("REGION_INFO %u: %s", x->info.cxl.region_index, strerror(-rc));
	if (!ri.size || ri.fd < 0 || !(ri.flags & VFIO_REGION_INFO_FLAG_MMAP)) {
		if (ri.fd >= 0)
			close(ri.fd);
		return fail("CXL region %u is not mappable (size 0x%llx)", ri.index,
			    (unsigned long long)ri.size);
	}
	if (!size)
		size = ri.size < (64ull << 20) ? ri.size : (64ull << 20);
	size &= ~7ull;
	if (size > ri.size || !size) {
		close(ri.fd);
		return fail("--size 0x%llx: the CXL region is 0x%llx bytes",
			    (unsigned long long)size, (unsigned long long)ri.size);
	}
	p = mmap(NULL, size, PROT_READ | PROT_WRITE, MAP_SHARED, ri.fd, (off_t)ri.offset);
	close(ri.fd);
	if (p == MAP_FAILED)
		return fail("mmap of the CXL region: %s", strerror(errno));
	t0 = now_ns();
	for (uint64_t i = 0; i < size / 8; i++)
		p[i] = pattern(i * 8);
	t1 = now_ns();
	for (uint64_t i = 0; i < size / 8; i++) {
		if (p[i] != pattern(i * 8)) {
			munmap(p, size);
			return fail("mismatch through the mapping at 0x%llx",
				    (unsigned long long)(i * 8));
		}
	}
	t2 = now_ns();
	chunk = malloc(cs);
	if (!chunk) {
		munmap(p, size);
		return fail("out of memory");
	}
	for (uint64_t off = 0; off < size; off += cs) {
		size_t n = size - off < cs ? (size_t)(size - off) : cs;

		rc = vcxl_client_region_read(x->c, ri.index, off, chunk, n);
		if (rc) {
			free(chunk);
			munmap(p, size);
			return fail("REGION_READ at 0x%llx: %s", (unsigned long long)off,
				    strerror(-rc));
		}
		for (size_t i = 0; i < n / 8; i++) {
			if (chunk[i] != pattern(off + i * 8)) {
				free(chunk);
				munmap(p, size);
				return fail("mismatch through REGION_READ at 0x%llx",
					    (unsigned long long)(off + i * 8));
			}
		}
	}
	t3 = now_ns();
	free(chunk);
	munmap(p, size);
	printf("memtest: %llu MiB of region %u OK; mmap write %.0f MB/s, mmap verify %.0f MB/s, "
	       "REGION_READ verify %.0f MB/s\n",
	       (unsigned long long)(size >> 20), ri.index, mbps(size, t1 - t0), mbps(size, t2 - t1),
	       mbps(size, t3 - t2));
	return 0;
}

/* ---- raw mailbox commands (CXL r3.1 8.2.8.4) ------------------------- */

#define MBOX_HEX_PER_LINE 16

/* Dwords of a register block in a BAR, for the spec layer's walkers. */
struct bar_window {
	struct ctx *x;
	unsigned bar;
	uint64_t base;
};

static int bar_window_read32(void *opaque, uint32_t off, uint32_t *val)
{
	const struct bar_window *w = opaque;

	return vcxl_client_read32(w->x->c, w->bar, w->base + off, val);
}

struct mbox {
	unsigned bar;
	uint64_t blk; /* memory device register block, in the BAR */
	uint64_t mb;  /* Primary Mailbox capability, in the BAR */
	uint64_t md;  /* Memory Device capability, in the BAR; 0 if absent */
	uint32_t caps;
	size_t payload;
};

static int mb_rd32(struct ctx *x, const struct mbox *m, uint32_t reg, uint32_t *v)
{
	return vcxl_client_read32(x->c, m->bar, m->mb + reg, v);
}

static int mb_wr32(struct ctx *x, const struct mbox *m, uint32_t reg, uint32_t v)
{
	return vcxl_client_write32(x->c, m->bar, m->mb + reg, v);
}

static int mb_rd64(struct ctx *x, const struct mbox *m, uint32_t reg, uint64_t *v)
{
	return vcxl_client_read64(x->c, m->bar, m->mb + reg, v);
}

/* CXL r3.1 8.1.9 and 8.2.8.1-2: the Register Locator's memory device block
 * (RBI 3), then the Primary Mailbox in that block's capability array. */
static int find_mailbox(struct ctx *x, uint8_t *cfg, struct mbox *m)
{
	struct vcxl_regloc_entry e;
	struct bar_window w;
	uint32_t off = 0, len = 0, shift;
	int rc = vcxl_regloc_find(cfg_buf_read32, cfg, CXL_REGLOC_RBI_MEMDEV, &e);

	if (rc == -ENOENT)
		return fail("no memory device registers: the Register Locator lists no block "
			    "with identifier 3 (not a CXL memory device)");
	if (rc)
		return fail("Register Locator: %s", strerror(-rc));
	if (e.bir >= VFIO_PCI_ROM_REGION_INDEX)
		return fail("memory device registers: BIR %u is not a BAR", e.bir);
	w = (struct bar_window){x, e.bir, e.offset};
	rc = vcxl_devcap_find(bar_window_read32, &w, CXLDEV_CAP_ID_PRIMARY_MBOX, &off, &len);
	if (rc == -ENODEV)
		return fail("BAR%u + 0x%llx: no device capabilities array", e.bir,
			    (unsigned long long)e.offset);
	if (rc == -ENOENT)
		return fail("BAR%u + 0x%llx: no Primary Mailbox in the device capabilities array",
			    e.bir, (unsigned long long)e.offset);
	if (rc)
		return fail("BAR%u + 0x%llx: %s", e.bir, (unsigned long long)e.offset,
			    strerror(-rc));
	if (len < CXLDEV_MBOX_PAYLOAD)
		return fail("Primary Mailbox capability is %u bytes, less than its registers", len);
	*m = (struct mbox){.bar = e.bir, .blk = e.offset, .mb = e.offset + off};
	if (!vcxl_devcap_find(bar_window_read32, &w, CXLDEV_CAP_ID_MEMDEV, &off, NULL))
		m->md = e.offset + off;
	rc = mb_rd32(x, m, CXLDEV_MBOX_CAPS, &m->caps);
	if (rc)
		return fail("Mailbox Capabilities read: %s", strerror(-rc));
	/* 8.2.8.4.3: Payload Size is log2 of the bytes, 8 (256 B) to 20 (1 MiB) */
	shift = (uint32_t)VCXL_FIELD_GET(CXLDEV_MBOX_CAP_PAYLOAD_SIZE, m->caps);
	if (shift < CXLDEV_MBOX_PAYLOAD_MIN_SHIFT || shift > CXLDEV_MBOX_PAYLOAD_MAX_SHIFT)
		return fail("Mailbox Capabilities 0x%08x: payload size 2^%u is out of range",
			    m->caps, shift);
	m->payload = (size_t)1 << shift;
	if (m->payload > len - CXLDEV_MBOX_PAYLOAD)
		m->payload = len - CXLDEV_MBOX_PAYLOAD;
	return 0;
}

static int hexval(char c)
{
	if (c >= '0' && c <= '9')
		return c - '0';
	if (c >= 'a' && c <= 'f')
		return c - 'a' + 10;
	if (c >= 'A' && c <= 'F')
		return c - 'A' + 10;
	return -1;
}

#define HEX_SEPARATORS " :-,"

/* --in: the payload bytes in order, two hex digits each; ' ', ':', '-' or
 * ',' may separate bytes. */
static int parse_hex(const char *s, uint8_t **out, size_t *len)
{
	size_t n = 0;
	uint8_t *b = malloc(strlen(s) / 2 + 1);

	if (!b)
		return fail("out of memory");
	for (const char *p = s; *p;) {
		int hi, lo;

		if (strchr(HEX_SEPARATORS, *p)) {
			p++;
			continue;
		}
		hi = hexval(p[0]);
		if (hi < 0) {
			free(b);
			return fail("--in '%s': '%c' is not a hex digit", s, p[0]);
		}
		if (!p[1] || strchr(HEX_SEPARATORS, p[1])) {
			free(b);
			return fail("--in '%s': odd number of hex digits (give whole bytes)", s);
		}
		lo = hexval(p[1]);
		if (lo < 0) {
			free(b);
			return fail("--in '%s': '%c' is not a hex digit", s, p[1]);
		}
		b[n++] = (uint8_t)(hi << 4 | lo);
		p += 2;
	}
	*out = b;
	*len = n;
	return 0;
}

static char *hex_string(const uint8_t *p, size_t n)
{
	char *s = malloc(2 * n + 1);

	for (size_t i = 0; s && i < n; i++)
		snprintf(s + 2 * i, 3, "%02x", p[i]);
	if (s)
		s[2 * n] = 0;
	return s;
}

static void hex_dump(const uint8_t *p, size_t n)
{
	for (size_t o = 0; o < n; o += MBOX_HEX_PER_LINE) {
		size_t k = n - o < MBOX_HEX_PER_LINE ? n - o : MBOX_HEX_PER_LINE;

		printf("  %04zx:", o);
		for (size_t i = 0; i < MBOX_HEX_PER_LINE; i++) {
			if (i < k)
				printf(" %02x", p[o + i]);
			else
				printf("   ");
		}
		printf("  |");
		for (size_t i = 0; i < k; i++)
			putchar(p[o + i] >= 0x20 && p[o + i] < 0x7f ? p[o + i] : '.');
		printf("|\n");
	}
}

/* --irq: what was changed to get the completion interrupt, undone in reverse. */
struct mbox_irq {
	int efd;
	unsigned vector;
	uint32_t msix;	   /* MSI-X capability offset */
	uint16_t msix_ctl; /* Message Control as found */
	uint16_t cmd;	   /* Command register as found */
	bool msix_set, armed, ctrl_set, cmd_set;
};

/*
 * Before the command, as a driver does: CXL r3.1 8.2.8.4.3 Background Command
 * Complete Interrupt Capable and the Interrupt Message Number (for MSI-X, the
 * table entry); MSI-X enabled in config space (PCI r3.0 6.8.2.3), the vector's
 * eventfd armed with SET_IRQS (as QEMU's vfio-user-pci does on enable), then
 * 8.2.8.4.4 Background Command Completion Interrupt set in Mailbox Control.
 * An MSI-X message is a memory write by the function, so Bus Master Enable
 * (PCI r3.0 6.2.2) is set too: a real device (and QEMU's) sends nothing
 * without it, even where vcxl's own model does not check.
 */
static int irq_setup(struct ctx *x, const uint8_t *cfg, const struct mbox *m, struct mbox_irq *q)
{
	uint32_t count = 0, flags = 0, ctrl;
	uint16_t ctl;
	unsigned nvec;
	uint64_t junk;
	int rc;

	if (!(m->caps & CXLDEV_MBOX_CAP_BG_CMD_IRQ))
		return fail("--irq: the mailbox cannot interrupt on background completion "
			    "(Mailbox Capabilities 0x%08x); leave out --irq to poll",
			    m->caps);
	q->vector = (unsigned)VCXL_FIELD_GET(CXLDEV_MBOX_CAP_IRQ_MSGNUM, m->caps);
	if (vcxl_pci_find_cap(cfg_buf_read32, (void *)cfg, PCI_CAP_ID_MSIX, &q->msix))
		return fail("--irq: no MSI-X capability in config space");
	memcpy(&ctl, cfg + q->msix + PCI_MSIX_FLAGS, 2);
	nvec = (ctl & PCI_MSIX_FLAGS_QSIZE) + 1u;
	rc = vcxl_client_irq_info(x->c, VFIO_PCI_MSIX_IRQ_INDEX, &count, &flags);
	if (rc)
		return fail("--irq: IRQ_INFO MSI-X: %s", strerror(-rc));
	if (q->vector >= nvec || q->vector >= count || !(flags & VFIO_IRQ_INFO_EVENTFD))
		return fail("--irq: interrupt message number %u, but MSI-X has %u vector%s (%u "
			    "with eventfds)",
			    q->vector, nvec, nvec == 1 ? "" : "s",
			    flags & VFIO_IRQ_INFO_EVENTFD ? count : 0);
	q->efd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
	if (q->efd < 0)
		return fail("eventfd: %s", strerror(errno));
	memcpy(&q->cmd, cfg + PCI_COMMAND, 2);
	if (!(q->cmd & PCI_COMMAND_MASTER)) {
		uint16_t cmd = (uint16_t)(q->cmd | PCI_COMMAND_MASTER);
		rc = vcxl_client_region_write(x->c, VFIO_PCI_CONFIG_REGION_INDEX, PCI_COMMAND, &cmd,
					      2);
		if (rc)
			return fail("--irq: Bus Master Enable: %s", strerror(-rc));
		q->cmd_set = true;
	}
	q->msix_ctl = ctl;
	ctl = (uint16_t)((ctl | PCI_MSIX_FLAGS_ENABLE) & ~PCI_MSIX_FLAGS_MASKALL);
	rc = vcxl_client_region_write(x->c, VFIO_PCI_CONFIG_REGION_INDEX, q->msix + PCI_MSIX_FLAGS,
				      &ctl, 2);
	if (rc)
		return fail("--irq: enabling MSI-X: %s", strerror(-rc));
	q->msix_set = true;
	rc = vcxl_client_set_irqs(x->c, VFIO_PCI_MSIX_IRQ_INDEX,
				  VFIO_IRQ_SET_DATA_EVENTFD | VFIO_IRQ_SET_ACTION_TRIGGER,
				  q->vector, 1, &q->efd, 1, NULL);
	if (rc)
		return fail("--irq: SET_IRQS MSI-X vector %u: %s", q->vector, strerror(-rc));
	q->armed = true;
	rc = mb_rd32(x, m, CXLDEV_MBOX_CTRL, &ctrl);
	rc = rc ? rc
		: mb_wr32(x, m, CXLDEV_MBOX_CTRL,
			  (ctrl & ~CXLDEV_MBOX_CTRL_DOORBELL) | CXLDEV_MBOX_CTRL_BG_CMD_IRQ);
	if (rc)
		return fail("--irq: Mailbox Control: %s", strerror(-rc));
	q->ctrl_set = true;
	/* whatever was pending before the command is not its completion */
	while (read(q->efd, &junk, sizeof(junk)) == sizeof(junk))
		;
	return 0;
}

/* Leave the device as found: interrupt enable off, eventfd gone, MSI-X and
 * the Command register back. */
static void irq_teardown(struct ctx *x, const struct mbox *m, struct mbox_irq *q)
{
	uint32_t ctrl;

	if (q->ctrl_set && !mb_rd32(x, m, CXLDEV_MBOX_CTRL, &ctrl))
		mb_wr32(x, m, CXLDEV_MBOX_CTRL,
			ctrl & ~(CXLDEV_MBOX_CTRL_BG_CMD_IRQ | CXLDEV_MBOX_CTRL_DOORBELL));
	if (q->armed)
		vcxl_client_set_irqs(x->c, VFIO_PCI_MSIX_IRQ_INDEX,
				     VFIO_IRQ_SET_DATA_NONE | VFIO_IRQ_SET_ACTION_TRIGGER, 0, 0,
				     NULL, 0, NULL);
	if (q->msix_set)
		vcxl_client_region_write(x->c, VFIO_PCI_CONFIG_REGION_INDEX,
					 q->msix + PCI_MSIX_FLAGS, &q->msix_ctl, 2);
	if (q->cmd_set)
		vcxl_client_region_write(x->c, VFIO_PCI_CONFIG_REGION_INDEX, PCI_COMMAND, &q->cmd,
					 2);
	if (q->efd >= 0)
		close(q->efd);
	q->efd = -1;
	q->msix_set = q->armed = q->ctrl_set = q->cmd_set = false;
}

/* Wait for the eventfd, answering server requests (DMA) meanwhile. */
static int irq_wait(struct ctx *x, struct mbox_irq *q, int64_t deadline)
{
	struct pollfd p[2] = {{.fd = q->efd, .events = POLLIN},
			      {.fd = vcxl_client_fd(x->c), .events = POLLIN}};
	uint64_t v;
	int rc = vcxl_client_poll(x->c, 0);

	if (rc < 0)
		return rc;
	for (;;) {
		int64_t left = deadline - now_ms();

		if (read(q->efd, &v, sizeof(v)) == sizeof(v))
			return 0;
		if (left <= 0)
			return -ETIMEDOUT;
		rc = poll(p, 2, (int)left);
		if (rc < 0 && errno == EINTR)
			continue;
		if (rc < 0)
			return -errno;
		if (p[0].revents & POLLIN)
			continue;
		if (p[1].revents & POLLIN) {
			rc = vcxl_client_poll(x->c, 0);
			if (rc < 0)
				return rc;
		} else if (p[1].revents & (POLLHUP | POLLERR)) {
			return -ECONNRESET;
		}
	}
}

struct mbox_res {
	uint16_t rc;
	size_t out_len; /* as the Command register says */
	uint8_t *out;	/* out_len bytes, at most the payload */
	bool bg;	/* a background command was waited for */
	uint16_t bg_opcode, bg_rc;
	unsigned bg_pct;
	int64_t bg_ms;
};

/* CXL r3.1 8.2.8.4.7: the background command ended when Background Operation
 * clears; Background Command Status then holds its opcode, 100 % and rc. */
static int bg_wait_poll(struct ctx *x, const struct mbox *m, int64_t deadline)
{
	uint64_t st;
	int rc;

	for (;;) {
		rc = mb_rd64(x, m, CXLDEV_MBOX_STATUS, &st);
		if (rc)
			return rc;
		if (!(st & CXLDEV_MBOX_STATUS_BG_OP))
			return 0;
		if (now_ms() > deadline)
			return -ETIMEDOUT;
		vcxl_client_poll(x->c, 0);
		usleep(1000);
	}
}

/* CXL r3.1 8.2.8.4.4 steps 1-8, the way cxl_pci sends a command: doorbell
 * clear, payload, Command, doorbell; poll the doorbell, then Status, Command
 * (output length) and the output payload. */
static int mbox_send(struct ctx *x, const struct mbox *m, uint16_t opcode, const uint8_t *in,
		     size_t in_len, int timeout_ms, struct mbox_res *r, int64_t *t_ring)
{
	uint64_t cmd, st;
	uint32_t ctrl;
	int64_t deadline;
	int rc = mb_rd32(x, m, CXLDEV_MBOX_CTRL, &ctrl);

	if (rc)
		return fail("Mailbox Control read: %s", strerror(-rc));
	if (ctrl & CXLDEV_MBOX_CTRL_DOORBELL)
		return fail("mailbox busy: the doorbell is set (another command in flight)");
	if (in_len)
		rc =
		    vcxl_client_region_write(x->c, m->bar, m->mb + CXLDEV_MBOX_PAYLOAD, in, in_len);
	cmd = VCXL_FIELD_PREP(CXLDEV_MBOX_CMD_OPCODE, opcode) |
	      VCXL_FIELD_PREP(CXLDEV_MBOX_CMD_PAYLOAD_LEN, in_len);
	rc = rc ? rc : vcxl_client_write64(x->c, m->bar, m->mb + CXLDEV_MBOX_CMD, cmd);
	*t_ring = now_ms();
	rc = rc ? rc : mb_wr32(x, m, CXLDEV_MBOX_CTRL, ctrl | CXLDEV_MBOX_CTRL_DOORBELL);
	if (rc)
		return fail("sending opcode 0x%04x: %s", opcode, strerror(-rc));
	deadline = *t_ring + timeout_ms;
	for (;;) {
		rc = mb_rd32(x, m, CXLDEV_MBOX_CTRL, &ctrl);
		if (rc)
			return fail("Mailbox Control read: %s", strerror(-rc));
		if (!(ctrl & CXLDEV_MBOX_CTRL_DOORBELL))
			break;
		if (now_ms() > deadline)
			return fail("opcode 0x%04x: doorbell still set after %d ms", opcode,
				    timeout_ms);
		usleep(1000);
	}
	rc = mb_rd64(x, m, CXLDEV_MBOX_STATUS, &st);
	rc = rc ? rc : vcxl_client_read64(x->c, m->bar, m->mb + CXLDEV_MBOX_CMD, &cmd);
	if (rc)
		return fail("Mailbox Status read: %s", strerror(-rc));
	r->rc = (uint16_t)VCXL_FIELD_GET(CXLDEV_MBOX_STATUS_RC, st);
	r->out_len = (size_t)VCXL_FIELD_GET(CXLDEV_MBOX_CMD_PAYLOAD_LEN, cmd);
	if (r->out_len > m->payload)
		return fail("opcode 0x%04x: output length %zu exceeds the %zu-byte payload", opcode,
			    r->out_len, m->payload);
	r->out = calloc(1, r->out_len + 1);
	if (!r->out)
		return fail("out of memory");
	if (r->out_len) {
		rc = vcxl_client_region_read(x->c, m->bar, m->mb + CXLDEV_MBOX_PAYLOAD, r->out,
					     r->out_len);
		if (rc)
			return fail("payload read: %s", strerror(-rc));
	}
	return 0;
}

static void mbox_print(const struct mbox *m, uint16_t opcode, const struct mbox_res *r, bool irq,
		       unsigned vector, bool json)
{
	if (json) {
		struct json_object *root = json_object_new_object();
		char *hex = hex_string(r->out, r->out_len);

		json_object_object_add(root, "bar", json_object_new_int((int)m->bar));
		json_object_object_add(root, "mailbox", json_object_new_int64((int64_t)m->mb));
		json_object_object_add(root, "opcode", json_object_new_int(opcode));
		json_object_object_add(root, "name",
				       json_object_new_string(vcxl_mbox_opcode_name(opcode)));
		json_object_object_add(root, "rc", json_object_new_int(r->rc));
		json_object_object_add(root, "rc_name",
				       json_object_new_string(vcxl_mbox_rc_name(r->rc)));
		json_object_object_add(root, "out_len", json_object_new_int64((int64_t)r->out_len));
		json_object_object_add(root, "out", json_object_new_string(hex ? hex : ""));
		if (r->bg) {
			struct json_object *b = json_object_new_object();

			json_object_object_add(b, "opcode", json_object_new_int(r->bg_opcode));
			json_object_object_add(b, "rc", json_object_new_int(r->bg_rc));
			json_object_object_add(b, "rc_name",
					       json_object_new_string(vcxl_mbox_rc_name(r->bg_rc)));
			json_object_object_add(b, "percent", json_object_new_int((int)r->bg_pct));
			json_object_object_add(b, "completion",
					       json_object_new_string(irq ? "msix" : "poll"));
			if (irq)
				json_object_object_add(b, "vector",
						       json_object_new_int((int)vector));
			json_object_object_add(b, "ms", json_object_new_int64(r->bg_ms));
			json_object_object_add(root, "background", b);
		}
		printf("%s\n", json_object_to_json_string_ext(root, JSON_C_TO_STRING_PRETTY));
		json_object_put(root);
		free(hex);
		return;
	}
	printf("mailbox at BAR%u + 0x%llx: opcode 0x%04x (%s): rc=0x%04x %s, %zu output byte%s\n",
	       m->bar, (unsigned long long)m->mb, opcode, vcxl_mbox_opcode_name(opcode), r->rc,
	       vcxl_mbox_rc_name(r->rc), r->out_len, r->out_len == 1 ? "" : "s");
	hex_dump(r->out, r->out_len);
	if (!r->bg)
		return;
	if (irq)
		printf("background command 0x%04x complete: rc=0x%04x %s (MSI-X vector %u fired "
		       "after %lld ms)\n",
		       r->bg_opcode, r->bg_rc, vcxl_mbox_rc_name(r->bg_rc), vector,
		       (long long)r->bg_ms);
	else
		printf("background command 0x%04x complete: rc=0x%04x %s (%u %%, polled for %lld "
		       "ms)\n",
		       r->bg_opcode, r->bg_rc, vcxl_mbox_rc_name(r->bg_rc), r->bg_pct,
		       (long long)r->bg_ms);
}

/* vcxl mbox: one command; background commands are waited for by polling the
 * Status register or, with --irq, on the mailbox's MSI-X vector. */
static int cmd_mbox(struct ctx *x, uint16_t opcode, const uint8_t *in, size_t in_len, bool irq,
		    int timeout_ms, bool json)
{
	uint8_t cfg[CFG_SIZE];
	struct mbox m;
	struct mbox_irq q = {.efd = -1};
	struct mbox_res r = {0};
	int64_t t_ring = 0, deadline;
	uint64_t v = 0;
	int rc;

	if (read_config(x, cfg) || find_mailbox(x, cfg, &m))
		return 1;
	if (m.md && !vcxl_client_read64(x->c, m.bar, m.md + CXLMDEV_STATUS, &v) &&
	    !(v & CXLMDEV_STATUS_MBOX_READY))
		return fail("mailbox interface not ready (Memory Device Status 0x%016llx)",
			    (unsigned long long)v);
	if (in_len > m.payload)
		return fail("--in: %zu bytes, the mailbox payload holds %zu", in_len, m.payload);
	if (irq && irq_setup(x, cfg, &m, &q)) {
		irq_teardown(x, &m, &q);
		return 1;
	}
	rc = mbox_send(x, &m, opcode, in, in_len, timeout_ms, &r, &t_ring);
	if (!rc && r.rc == CXL_MBOX_RC_BACKGROUND) {
		deadline = t_ring + timeout_ms;
		rc = irq ? irq_wait(x, &q, deadline) : bg_wait_poll(x, &m, deadline);
		r.bg_ms = now_ms() - t_ring;
		rc = rc ? rc : mb_rd64(x, &m, CXLDEV_MBOX_BG_STATUS, &v);
		if (rc == -ETIMEDOUT)
			rc = fail("background command 0x%04x: no completion %s within %d ms",
				  opcode, irq ? "interrupt" : "(Background Operation still set)",
				  timeout_ms);
		else if (rc)
			rc = fail("background command 0x%04x: %s", opcode, strerror(-rc));
		else {
			r.bg = true;
			r.bg_opcode = (uint16_t)VCXL_FIELD_GET(CXLDEV_MBOX_BG_OPCODE, v);
			r.bg_pct = (unsigned)VCXL_FIELD_GET(CXLDEV_MBOX_BG_PCT, v);
			r.bg_rc = (uint16_t)VCXL_FIELD_GET(CXLDEV_MBOX_BG_RC, v);
			if (irq && !mb_rd64(x, &m, CXLDEV_MBOX_STATUS, &v) &&
			    (v & CXLDEV_MBOX_STATUS_BG_OP))
				rc = fail("background command 0x%04x: interrupt fired but "
					  "Background Operation is still set",
					  opcode);
		}
	}
	if (irq)
		irq_teardown(x, &m, &q);
	if (!rc) {
		mbox_print(&m, opcode, &r, irq, q.vector, json);
		if (r.bg)
			rc = r.bg_rc != CXL_MBOX_RC_SUCCESS;
		else
			rc = r.rc != CXL_MBOX_RC_SUCCESS;
	}
	free(r.out);
	return rc;
}

static int parse_u64(const char *opt, const char *s, uint64_t *v)
{
	if (vcxl_parse_size(s, v))
		return fail("invalid %s '%s'", opt, s);
	return 0;
}

int main(int argc, char **argv)
{
	static const struct option lopts[] = {
	    {"json", no_argument, NULL, 'j'},	      {"decoder", required_argument, NULL, 'd'},
	    {"base", required_argument, NULL, 'b'},   {"size", required_argument, NULL, 's'},
	    {"opcode", required_argument, NULL, 'o'}, {"in", required_argument, NULL, 'i'},
	    {"irq", no_argument, NULL, 'q'},	      {"timeout", required_argument, NULL, 't'},
	    {"help", no_argument, NULL, 'h'},	      {NULL, 0, NULL, 0},
	};
	const char *cmd, *sock;
	bool json = false, have_dec = false, have_base = false, have_size = false;
	bool have_op = false, irq = false;
	uint64_t base = 0, size = 0, dec = 0;
	unsigned long opcode = 0, timeout = MBOX_TIMEOUT_MS;
	const char *in_arg = NULL;
	uint8_t *in = NULL;
	size_t in_len = 0;
	char *end;
	struct ctx x;
	int ch, rc;

	if (argc < 2 || !strcmp(argv[1], "--help") || !strcmp(argv[1], "-h")) {
		usage(argc < 2 ? stderr : stdout);
		return argc < 2 ? 2 : 0;
	}
	cmd = argv[1];
	optind = 2;
	while ((ch = getopt_long(argc, argv, "jd:b:s:o:i:qt:h", lopts, NULL)) != -1) {
		switch (ch) {
		case 'j':
			json = true;
			break;
		case 'd':
			if (parse_u64("--decoder", optarg, &dec) || dec > 31)
				return fail("invalid --decoder '%s'", optarg);
			have_dec = true;
			break;
		case 'b':
			if (parse_u64("--base", optarg, &base))
				return 1;
			have_base = true;
			break;
		case 's':
			if (parse_u64("--size", optarg, &size))
				return 1;
			have_size = true;
			break;
		case 'o':
			errno = 0;
			opcode = strtoul(optarg, &end,
					 optarg[0] == '0' && (optarg[1] | 0x20) == 'x' ? 16 : 10);
			if (errno || end == optarg || *end || opcode > 0xffff || *optarg == '-')
				return fail("invalid --opcode '%s' (0 to 0xffff)", optarg);
			have_op = true;
			break;
		case 'i':
			in_arg = optarg;
			break;
		case 'q':
			irq = true;
			break;
		case 't':
			errno = 0;
			timeout = strtoul(optarg, &end, 10);
			if (errno || end == optarg || *end || !timeout ||
			    timeout > MBOX_TIMEOUT_MAX_MS || *optarg == '-')
				return fail("invalid --timeout '%s' (1 to %d ms)", optarg,
					    MBOX_TIMEOUT_MAX_MS);
			break;
		case 'h':
			usage(stdout);
			return 0;
		default:
			usage(stderr);
			return 2;
		}
	}
	if (optind >= argc)
		return fail("%s: missing SOCKET", cmd);
	sock = argv[optind];
	if (optind + 1 < argc)
		return fail("%s: unexpected argument '%s'", cmd, argv[optind + 1]);
	if (strcmp(cmd, "info") && strcmp(cmd, "lspci") && strcmp(cmd, "hdm") &&
	    strcmp(cmd, "commit") && strcmp(cmd, "decommit") && strcmp(cmd, "memtest") &&
	    strcmp(cmd, "mbox") && strcmp(cmd, "reset"))
		return fail("unknown command '%s' (see vcxl --help)", cmd);
	if (!strcmp(cmd, "mbox") && !have_op)
		return fail("mbox needs --opcode OP");
	if (in_arg && parse_hex(in_arg, &in, &in_len))
		return 1;
	if (!strcmp(cmd, "commit") && (!have_dec || !have_base || !have_size))
		return fail("commit needs --decoder N --base ADDR --size SIZE");
	if (!strcmp(cmd, "decommit") && !have_dec)
		return fail("decommit needs --decoder N");
	if (ctx_open(&x, sock)) {
		free(in);
		return 1;
	}
	if (!strcmp(cmd, "info"))
		rc = cmd_info(&x, json);
	else if (!strcmp(cmd, "lspci"))
		rc = cmd_lspci(&x);
	else if (!strcmp(cmd, "hdm"))
		rc = cmd_hdm(&x, json);
	else if (!strcmp(cmd, "commit"))
		rc = cmd_commit(&x, (unsigned)dec, base, size);
	else if (!strcmp(cmd, "decommit"))
		rc = cmd_decommit(&x, (unsigned)dec);
	else if (!strcmp(cmd, "memtest"))
		rc = cmd_memtest(&x, have_size ? size : 0);
	else if (!strcmp(cmd, "mbox"))
		rc = cmd_mbox(&x, (uint16_t)opcode, in, in_len, irq, (int)timeout, json);
	else {
		rc = vcxl_client_reset(x.c);
		if (rc)
			rc = fail("DEVICE_RESET: %s", strerror(-rc));
		else
			printf("device reset\n");
	}
	vcxl_client_close(x.c);
	free(in);
	return rc;
}
