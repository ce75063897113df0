// SPDX-License-Identifier: BSD-3-Clause
/*
 * vcxl hdm, commit, decommit: the guest-visible HDM decoders through BAR
 * accesses, read and programmed with the spec layer's decoder helpers (the
 * same the host core programs physical decoders with).
 */
#include <errno.h>
#include <json-c/json.h>
#include <linux/pci_regs.h>
#include <string.h>
#include <unistd.h>

#include "cli.h"

#define COMMIT_POLL_MS 1000
#define COMMIT_POLL_US 1000

static int hdm_rd(void *opaque, uint32_t reg, uint32_t *v)
{
	struct ctx *x = opaque;

	return vcxl_client_read32(x->c, x->info.cxl.hdm_bar, x->info.cxl.hdm_offset + reg, v);
}

static int hdm_wr(void *opaque, uint32_t reg, uint32_t v)
{
	struct ctx *x = opaque;

	return vcxl_client_write32(x->c, x->info.cxl.hdm_bar, x->info.cxl.hdm_offset + reg, v);
}

static struct vcxl_hdm_io hdm_io(struct ctx *x)
{
	return (struct vcxl_hdm_io){.rd = hdm_rd, .wr = hdm_wr, .opaque = x};
}

/* CXL r3.1 8.2.4.20.1: the spec layer decodes Decoder Count (reserved: -EINVAL) */
int cli_hdm_count(const struct vcxl_hdm_io *io, unsigned cap_count, unsigned *count)
{
	int rc = vcxl_hdm_io_count(io, count);

	if (!rc && cap_count && *count > cap_count)
		*count = cap_count;
	return rc;
}

int cmd_hdm(struct ctx *x, bool json)
{
	struct vcxl_hdm_io io = hdm_io(x);
	struct json_object *root, *arr;
	uint32_t cap, gctl;
	unsigned n;
	int rc;

	if (need_cxl(x))
		return 1;
	rc = hdm_rd(x, CXL_HDM_CAP, &cap);
	rc = rc ? rc : hdm_rd(x, CXL_HDM_GLOBAL_CTRL, &gctl);
	rc = rc ? rc : cli_hdm_count(&io, x->info.cxl.hdm_count, &n);
	if (rc)
		return fail("HDM capability read (BAR%u + 0x%llx): %s", x->info.cxl.hdm_bar,
			    (unsigned long long)x->info.cxl.hdm_offset, strerror(-rc));
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
		struct vcxl_hdm_decoder d;
		struct json_object *j;
		unsigned iw, ig;

		rc = vcxl_hdm_io_read(&io, i, &d);
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
		json_object_object_add(j, "committed", json_object_new_boolean(d.committed));
		json_object_object_add(
		    j, "commit_error",
		    json_object_new_boolean(d.ctrl & CXL_HDM_DEC_CTRL_COMMIT_ERR));
		json_object_object_add(j, "lock_on_commit",
				       json_object_new_boolean(d.lock_on_commit));
		json_object_object_add(j, "hostonly", json_object_new_boolean(d.hostonly));
		json_object_object_add(j, "iw", json_object_new_int((int)iw));
		json_object_object_add(j, "ig", json_object_new_int((int)ig));
		json_object_array_add(arr, j);
		if (!json)
			printf("decoder %u: base 0x%llx size 0x%llx skip 0x%llx ctrl 0x%08x "
			       "(IG %u (%u B) IW %u LockOnCommit%c Commit%c Committed%c "
			       "ErrNotCommitted%c TargetType %s)\n",
			       i, (unsigned long long)d.base, (unsigned long long)d.size,
			       (unsigned long long)d.skip, d.ctrl, ig, 256u << ig, iw,
			       d.lock_on_commit ? '+' : '-',
			       d.ctrl & CXL_HDM_DEC_CTRL_COMMIT ? '+' : '-',
			       d.committed ? '+' : '-',
			       d.ctrl & CXL_HDM_DEC_CTRL_COMMIT_ERR ? '+' : '-',
			       d.hostonly ? "host-only (HDM-H)" : "device-coherent (HDM-D/DB)");
	}
	json_object_object_add(root, "decoders", arr);
	if (json)
		printf("%s\n", json_object_to_json_string_ext(root, JSON_C_TO_STRING_PRETTY));
	json_object_put(root);
	return 0;
}

/* CXL r3.1 8.1.3.2: Mem_Enable in the Device DVSEC, as cxl_set_mem_enable() does */
static int ensure_mem_enable(struct ctx *x, const uint8_t *cfg)
{
	uint32_t off, len;
	uint16_t ctl;
	int rc = vcxl_pcie_find_dvsec(cfg_buf_read32, (void *)cfg, CXL_VENDOR_ID,
				      CXL_DVSEC_ID_DEVICE, &off, &len);

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

static int decoder_check(struct ctx *x, unsigned n)
{
	struct vcxl_hdm_io io = hdm_io(x);
	unsigned count;
	int rc = cli_hdm_count(&io, x->info.cxl.hdm_count, &count);

	if (rc)
		return fail("HDM capability read: %s", strerror(-rc));
	if (n >= count)
		return fail("decoder %u: the device has %u decoder%s", n, count,
			    count == 1 ? "" : "s");
	return 0;
}

/* Linux's cxld_set_type(): a class memory device (Type-3, CXL r3.1 8.1.12.1
 * class code 050210) decodes host-only coherent memory (HDM-H). */
static bool is_memdev(const uint8_t *cfg)
{
	uint32_t class_rev;

	memcpy(&class_rev, cfg + PCI_CLASS_REVISION, 4);
	return (class_rev >> 8) == CXL_PCI_CLASS_MEMDEV;
}

/* CXL r3.1 8.2.4.20.12 and Linux cxl_decoder_commit(): program, then Commit, poll Committed */
int cmd_commit(struct ctx *x, unsigned n, uint64_t base, uint64_t size)
{
	struct vcxl_hdm_io io = hdm_io(x);
	uint8_t cfg[CLI_CFG_SIZE];
	uint32_t gctl, ctrl;
	int64_t deadline;
	int rc;

	if (need_cxl(x) || decoder_check(x, n))
		return 1;
	if ((base | size) & (CXL_HDM_GRANULE - 1) || !size)
		return fail("decoder %u: base and size must be non-zero multiples of 256M", n);
	if (read_config(x, cfg) || ensure_mem_enable(x, cfg))
		return 1;
	rc = hdm_rd(x, CXL_HDM_GLOBAL_CTRL, &gctl);
	if (!rc && !(gctl & CXL_HDM_GCTRL_ENABLE))
		rc = hdm_wr(x, CXL_HDM_GLOBAL_CTRL, gctl | CXL_HDM_GCTRL_ENABLE);
	rc = rc ? rc : hdm_rd(x, CXL_HDM_DEC_CTRL(n), &ctrl);
	if (rc)
		return fail("decoder %u: %s", n, strerror(-rc));
	if (ctrl & CXL_HDM_DEC_CTRL_COMMITTED)
		return fail("decoder %u: already committed (decommit it first)", n);
	ctrl = vcxl_hdm_commit_ctrl(ctrl, is_memdev(cfg));
	rc = vcxl_hdm_io_program(&io, n, base, size, 0, ctrl);
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
		usleep(COMMIT_POLL_US);
	}
	printf("decoder %u committed: base 0x%llx size 0x%llx, %s\n", n, (unsigned long long)base,
	       (unsigned long long)size,
	       ctrl & CXL_HDM_DEC_CTRL_HOSTONLY ? "host-only (HDM-H)"
						: "device-coherent (HDM-D/DB)");
	return 0;
}

/* Linux cxl_decoder_reset(): clear Commit, then zero size and base */
int cmd_decommit(struct ctx *x, unsigned n)
{
	struct vcxl_hdm_io io = hdm_io(x);
	uint32_t ctrl;
	int rc;

	if (need_cxl(x) || decoder_check(x, n))
		return 1;
	rc = hdm_rd(x, CXL_HDM_DEC_CTRL(n), &ctrl);
	if (rc)
		return fail("decoder %u: %s", n, strerror(-rc));
	if ((ctrl & CXL_HDM_DEC_CTRL_COMMITTED) && (ctrl & CXL_HDM_DEC_CTRL_LOCK_ON_COMMIT))
		return fail("decoder %u: locked (Lock On Commit)", n);
	rc = vcxl_hdm_io_decommit(&io, n);
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
