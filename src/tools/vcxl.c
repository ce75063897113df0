// SPDX-License-Identifier: BSD-3-Clause
/*
 * vcxl: inspect and drive a vcxl (or any vfio-user CXL) device socket.
 *   vcxl info SOCKET [--json]        ids, flags, CXL capability, regions, IRQs
 *   vcxl lspci SOCKET                config space decoded like lspci -vvv
 *   vcxl hdm SOCKET [--json]         the virtual HDM decoders (through BAR accesses)
 *   vcxl commit SOCKET --decoder N --base ADDR --size SIZE
 *   vcxl decommit SOCKET --decoder N
 *   vcxl memtest SOCKET [--size SIZE]
 *   vcxl reset SOCKET
 */
#include <errno.h>
#include <getopt.h>
#include <json-c/json.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>
#include <unistd.h>

#include "vcxl/client.h"
#include "vcxl/cxl_regs.h"
#include "vcxl/cxl_spec.h"
#include "vcxl/server.h"
#include "lspci.h"

#define CFG_SIZE       4096
#define COMMIT_POLL_MS 1000

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
	    "  reset SOCKET              DEVICE_RESET\n"
	    "SIZE and ADDR take K/M/G/T suffixes.\n");
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

static int parse_u64(const char *opt, const char *s, uint64_t *v)
{
	if (vcxl_parse_size(s, v))
		return fail("invalid %s '%s'", opt, s);
	return 0;
}

int main(int argc, char **argv)
{
	static const struct option lopts[] = {
	    {"json", no_argument, NULL, 'j'},	    {"decoder", required_argument, NULL, 'd'},
	    {"base", required_argument, NULL, 'b'}, {"size", required_argument, NULL, 's'},
	    {"help", no_argument, NULL, 'h'},	    {NULL, 0, NULL, 0},
	};
	const char *cmd, *sock;
	bool json = false, have_dec = false, have_base = false, have_size = false;
	uint64_t base = 0, size = 0, dec = 0;
	struct ctx x;
	int ch, rc;

	if (argc < 2 || !strcmp(argv[1], "--help") || !strcmp(argv[1], "-h")) {
		usage(argc < 2 ? stderr : stdout);
		return argc < 2 ? 2 : 0;
	}
	cmd = argv[1];
	optind = 2;
	while ((ch = getopt_long(argc, argv, "jd:b:s:h", lopts, NULL)) != -1) {
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
	    strcmp(cmd, "reset"))
		return fail("unknown command '%s' (see vcxl --help)", cmd);
	if (!strcmp(cmd, "commit") && (!have_dec || !have_base || !have_size))
		return fail("commit needs --decoder N --base ADDR --size SIZE");
	if (!strcmp(cmd, "decommit") && !have_dec)
		return fail("decommit needs --decoder N");
	if (ctx_open(&x, sock))
		return 1;
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
	else {
		rc = vcxl_client_reset(x.c);
		if (rc)
			rc = fail("DEVICE_RESET: %s", strerror(-rc));
		else
			printf("device reset\n");
	}
	vcxl_client_close(x.c);
	return rc;
}
