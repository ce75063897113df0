// SPDX-License-Identifier: BSD-3-Clause
/* vcxl info (GET_INFO, regions, IRQs) and vcxl lspci (config space decoded). */
#include <json-c/json.h>
#include <string.h>
#include <unistd.h>

#include "cli.h"
#include "lspci.h"

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

int cmd_info(struct ctx *x, bool json)
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
		if (ri.has_comp) {
			struct json_object *g = json_object_new_object();

			json_object_object_add(g, "bar", json_object_new_int64(ri.comp.bar));
			json_object_object_add(g, "offset",
					       json_object_new_int64((int64_t)ri.comp.offset));
			json_object_object_add(g, "size",
					       json_object_new_int64((int64_t)ri.comp.size));
			json_object_object_add(g, "hdm_offset",
					       json_object_new_int64((int64_t)ri.comp.hdm_offset));
			json_object_object_add(g, "hdm_count",
					       json_object_new_int64(ri.comp.hdm_count));
			json_object_object_add(j, "comp_regs", g);
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
			       : ri.type == VFIO_REGION_TYPE_CXL &&
				       ri.subtype == VFIO_REGION_SUBTYPE_CXL_COMP_REGS
				   ? " (CXL component registers)"
				   : "");
		if (ri.has_comp)
			printf(" BAR%u+0x%llx size 0x%llx, HDM at +0x%llx, %u decoder(s)",
			       ri.comp.bar, (unsigned long long)ri.comp.offset,
			       (unsigned long long)ri.comp.size,
			       (unsigned long long)ri.comp.hdm_offset, ri.comp.hdm_count);
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

int cmd_lspci(struct ctx *x)
{
	uint8_t cfg[CLI_CFG_SIZE];
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
