// SPDX-License-Identifier: BSD-3-Clause
/* vcxl mbox: one raw CXL mailbox command through the client library's
 * mailbox client (vcxl_client_mbox_*), its input parsed and its output printed. */
#include <json-c/json.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "cxl/cxl_mbox.h"

#define MBOX_HEX_PER_LINE 16

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
int parse_hex(const char *s, uint8_t **out, size_t *len)
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

static void mbox_print(const struct vcxl_client_mbox *m, uint16_t opcode,
		       const struct vcxl_client_mbox_result *r, bool irq, bool json)
{
	if (json) {
		struct json_object *root = json_object_new_object();
		char *hex = hex_string(r->out, r->out_len);

		json_object_object_add(root, "bar", json_object_new_int((int)m->bar));
		json_object_object_add(root, "mailbox", json_object_new_int64((int64_t)m->mailbox));
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
						       json_object_new_int((int)r->vector));
			json_object_object_add(b, "ms", json_object_new_int64(r->bg_ms));
			json_object_object_add(root, "background", b);
		}
		printf("%s\n", json_object_to_json_string_ext(root, JSON_C_TO_STRING_PRETTY));
		json_object_put(root);
		free(hex);
		return;
	}
	printf("mailbox at BAR%u + 0x%llx: opcode 0x%04x (%s): rc=0x%04x %s, %zu output byte%s\n",
	       m->bar, (unsigned long long)m->mailbox, opcode, vcxl_mbox_opcode_name(opcode), r->rc,
	       vcxl_mbox_rc_name(r->rc), r->out_len, r->out_len == 1 ? "" : "s");
	hex_dump(r->out, r->out_len);
	if (!r->bg)
		return;
	if (irq)
		printf("background command 0x%04x complete: rc=0x%04x %s (MSI-X vector %u fired "
		       "after %lld ms)\n",
		       r->bg_opcode, r->bg_rc, vcxl_mbox_rc_name(r->bg_rc), r->vector,
		       (long long)r->bg_ms);
	else
		printf("background command 0x%04x complete: rc=0x%04x %s (%u %%, polled for %lld "
		       "ms)\n",
		       r->bg_opcode, r->bg_rc, vcxl_mbox_rc_name(r->bg_rc), r->bg_pct,
		       (long long)r->bg_ms);
}

/* vcxl mbox: one command; background commands are waited for by polling the
 * Status register or, with --irq, on the mailbox's MSI-X vector. */
int cmd_mbox(struct ctx *x, uint16_t opcode, const uint8_t *in, size_t in_len, bool irq,
	     int timeout_ms, bool json)
{
	const struct vcxl_client_mbox_cmd k = {
	    .opcode = opcode, .in = in, .in_len = in_len, .irq = irq, .timeout_ms = timeout_ms};
	struct vcxl_client_mbox m;
	struct vcxl_client_mbox_result r;
	char err[256];
	int rc;

	if (vcxl_client_mbox_find(x->c, &m, err, sizeof(err)))
		return fail("%s", err);
	if (vcxl_client_mbox_exec(x->c, &m, &k, &r, err, sizeof(err)))
		return fail("%s", err);
	mbox_print(&m, opcode, &r, irq, json);
	rc = (r.bg ? r.bg_rc : r.rc) != CXL_MBOX_RC_SUCCESS;
	vcxl_client_mbox_result_free(&r);
	return rc;
}
