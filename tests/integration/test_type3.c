// SPDX-License-Identifier: BSD-3-Clause
/*
 * The Type-3 serving path with the real binary: `vcxl-server --model type3`
 * answers with the CXL memory device identity (8086:0d93, class 050210), the
 * Register Locator lists the memory device registers (RBI 3) beside the
 * component block, the mailbox works through BAR2 region accesses (Identify,
 * Get Partition Info, an unsupported opcode), Memory Device Status reports
 * media ready, the guest's virtual decoders reset HOSTONLY and commit with it,
 * and the server logs the guest's commits and decommits. `vcxl mbox` sends raw
 * commands (Identify, an unknown opcode, Scan Media completing by MSI-X or by
 * polling, bad input) and leaves the device as found; without the background
 * completion interrupt enable the device signals no eventfd. Also: a region
 * smaller than the device is refused, --model accel is the accelerator (and
 * has no mailbox for `vcxl mbox`), and a bad --model value is a usage error.
 */
#include <json-c/json.h>
#include <linux/pci_regs.h>
#include <poll.h>
#include <sys/eventfd.h>

#include "tap.h"
#include "integration/harness.h"
#include "cxl/cxl_mbox.h"
#include "cxl/cxl_regs.h"
#include "model/model.h"

#define CFG  VFIO_PCI_CONFIG_REGION_INDEX
#define BAR0 VFIO_PCI_BAR0_REGION_INDEX
#define BAR2 VFIO_PCI_BAR2_REGION_INDEX
#define G256 VCXL_SZ_256M

static uint32_t cfg32(struct vcxl_client *c, uint32_t off)
{
	uint32_t v = 0xdeadbeef;

	vcxl_client_read32(c, CFG, off, &v);
	return v;
}

/* PCIe r6 7.9.6: find a CXL DVSEC by walking the extended capabilities. */
static uint32_t find_dvsec(struct vcxl_client *c, uint16_t id)
{
	uint32_t off = PCIE_EXT_CAP_START;

	for (int n = 0; off && n < 64; n++) {
		uint32_t hdr = cfg32(c, off);

		if (!hdr || hdr == 0xffffffffu)
			return 0;
		if (VCXL_FIELD_GET(PCIE_EXT_CAP_ID_MASK, hdr) == PCIE_EXT_CAP_ID_DVSEC &&
		    VCXL_FIELD_GET(PCIE_DVSEC_HDR1_VENDOR, cfg32(c, off + PCIE_DVSEC_HEADER1)) ==
			CXL_VENDOR_ID &&
		    VCXL_FIELD_GET(PCIE_DVSEC_HDR2_ID, cfg32(c, off + PCIE_DVSEC_HEADER2)) == id)
			return off;
		off = (uint32_t)VCXL_FIELD_GET(PCIE_EXT_CAP_NEXT_MASK, hdr);
	}
	return 0;
}

struct regblock {
	bool found;
	unsigned bar;
	uint64_t off;
};

/* CXL r3.1 8.1.9: the Register Locator entries, by block id */
static void regloc(struct vcxl_client *c, struct regblock *comp, struct regblock *mdev)
{
	uint32_t rl = find_dvsec(c, CXL_DVSEC_ID_REG_LOCATOR);
	uint32_t len =
	    rl ? (uint32_t)VCXL_FIELD_GET(PCIE_DVSEC_HDR1_LEN, cfg32(c, rl + PCIE_DVSEC_HEADER1))
	       : 0;

	*comp = *mdev = (struct regblock){0};
	for (uint32_t k = 0; rl && CXL_REGLOC_BLOCK_HI(k) + 4 <= len; k++) {
		uint32_t lo = cfg32(c, rl + CXL_REGLOC_BLOCK_LO(k));
		uint32_t hi = cfg32(c, rl + CXL_REGLOC_BLOCK_HI(k));
		struct regblock b = {true, (unsigned)VCXL_FIELD_GET(CXL_REGLOC_BIR, lo),
				     ((uint64_t)hi << 32) | (lo & CXL_REGLOC_OFFSET_LO)};
		unsigned rbi = (unsigned)VCXL_FIELD_GET(CXL_REGLOC_BLOCK_ID, lo);

		if (rbi == CXL_REGLOC_RBI_COMPONENT)
			*comp = b;
		else if (rbi == CXL_REGLOC_RBI_MEMDEV)
			*mdev = b;
	}
}

/* CXL r3.1 8.2.8.2: offset (in BAR2) of device capability `id`, 0 if absent */
static uint64_t devcap(struct vcxl_client *c, uint64_t blk, uint16_t id)
{
	uint64_t arr = 0;

	if (vcxl_client_read64(c, BAR2, blk, &arr))
		return 0;
	if (VCXL_FIELD_GET(CXLDEV_CAP_ARRAY_ID, arr) != CXLDEV_CAP_ARRAY_CAP_ID)
		return 0;
	for (unsigned i = 0; i < VCXL_FIELD_GET(CXLDEV_CAP_ARRAY_COUNT, arr) && i < 16; i++) {
		uint64_t h = blk + CXLDEV_CAP_HDR_FIRST + i * CXLDEV_CAP_HDR_STRIDE;
		uint32_t hid = 0, hoff = 0;

		vcxl_client_read32(c, BAR2, h, &hid);
		vcxl_client_read32(c, BAR2, h + CXLDEV_CAP_HDR_OFFSET, &hoff);
		if (VCXL_FIELD_GET(CXLDEV_CAP_HDR_ID, hid) == id)
			return blk + hoff;
	}
	return 0;
}

/* CXL r3.1 8.2.8.4: one mailbox command the way cxl_pci sends it: payload,
 * Command, doorbell (with ctrl_bits of Mailbox Control kept); poll the
 * doorbell; Status. Returns the return code (or -errno), output bytes in out
 * (up to *out_len, updated). */
static int mbox_cmd_ctrl(struct vcxl_client *c, uint64_t mb, uint16_t op, const void *in,
			 size_t in_len, void *out, size_t *out_len, uint32_t ctrl_bits)
{
	uint64_t st = 0, cmd = 0;
	uint32_t ctrl = 0;
	int rc, tries;

	if (in_len &&
	    (rc = vcxl_client_region_write(c, BAR2, mb + CXLDEV_MBOX_PAYLOAD, in, in_len)))
		return rc;
	cmd = VCXL_FIELD_PREP(CXLDEV_MBOX_CMD_OPCODE, op) |
	      VCXL_FIELD_PREP(CXLDEV_MBOX_CMD_PAYLOAD_LEN, in_len);
	if ((rc = vcxl_client_write64(c, BAR2, mb + CXLDEV_MBOX_CMD, cmd)) ||
	    (rc = vcxl_client_write32(c, BAR2, mb + CXLDEV_MBOX_CTRL,
				      ctrl_bits | CXLDEV_MBOX_CTRL_DOORBELL)))
		return rc;
	for (tries = 0; tries < 100; tries++) {
		if ((rc = vcxl_client_read32(c, BAR2, mb + CXLDEV_MBOX_CTRL, &ctrl)))
			return rc;
		if (!(ctrl & CXLDEV_MBOX_CTRL_DOORBELL))
			break;
		h_sleep_ms(1);
	}
	if (ctrl & CXLDEV_MBOX_CTRL_DOORBELL)
		return -ETIMEDOUT;
	if ((rc = vcxl_client_read64(c, BAR2, mb + CXLDEV_MBOX_STATUS, &st)) ||
	    (rc = vcxl_client_read64(c, BAR2, mb + CXLDEV_MBOX_CMD, &cmd)))
		return rc;
	size_t n = VCXL_FIELD_GET(CXLDEV_MBOX_CMD_PAYLOAD_LEN, cmd);
	if (out_len) {
		if (n > *out_len)
			n = *out_len;
		if (n && (rc = vcxl_client_region_read(c, BAR2, mb + CXLDEV_MBOX_PAYLOAD, out, n)))
			return rc;
		*out_len = n;
	}
	return (int)VCXL_FIELD_GET(CXLDEV_MBOX_STATUS_RC, st);
}

static int mbox_cmd(struct vcxl_client *c, uint64_t mb, uint16_t op, const void *in, size_t in_len,
		    void *out, size_t *out_len)
{
	return mbox_cmd_ctrl(c, mb, op, in, in_len, out, out_len, 0);
}

static uint64_t le64(const uint8_t *p)
{
	uint64_t v = 0;

	for (int i = 7; i >= 0; i--)
		v = (v << 8) | p[i];
	return v;
}

static void test_identity(struct vcxl_client *c, const struct vcxl_client_info *info)
{
	is(cfg32(c, PCI_VENDOR_ID), (uint32_t)VCXL_MODEL_TYPE3_DEVICE << 16 | VCXL_MODEL_VENDOR,
	   "config: 8086:0d93");
	is(cfg32(c, PCI_CLASS_REVISION) >> 8, CXL_PCI_CLASS_MEMDEV,
	   "config: class code 050210 (CXL memory device)");
	ok(info->flags & VFIO_DEVICE_FLAGS_CXL, "GET_INFO: VFIO_DEVICE_FLAGS_CXL");
	ok(info->has_cxl && info->cxl.region_size == G256,
	   "GET_INFO: CXL capability, region 256 MiB (all device memory)");
}

static void test_mailbox(struct vcxl_client *c, uint64_t blk)
{
	uint64_t md = devcap(c, blk, CXLDEV_CAP_ID_MEMDEV);
	uint64_t mb = devcap(c, blk, CXLDEV_CAP_ID_PRIMARY_MBOX);
	uint64_t st = 0;
	uint32_t caps = 0;
	uint8_t out[256];
	size_t n;
	int rc;

	ok(devcap(c, blk, CXLDEV_CAP_ID_DEVICE_STATUS) != 0,
	   "capability array: device status registers");
	ok(md != 0 && mb != 0, "capability array: memory device status and primary mailbox");
	vcxl_client_read64(c, BAR2, md + CXLMDEV_STATUS, &st);
	is(VCXL_FIELD_GET(CXLMDEV_STATUS_MEDIA, st), CXLMDEV_MEDIA_READY,
	   "memory device status: media ready");
	ok(st & CXLMDEV_STATUS_MBOX_READY, "memory device status: mailbox interface ready");
	vcxl_client_read32(c, BAR2, mb + CXLDEV_MBOX_CAPS, &caps);
	is(VCXL_FIELD_GET(CXLDEV_MBOX_CAP_PAYLOAD_SIZE, caps), VCXL_MODEL_T3_PAYLOAD_SHIFT,
	   "mailbox capabilities: 2 KiB payload");

	n = sizeof(out);
	memset(out, 0, sizeof(out));
	rc = mbox_cmd(c, mb, CXL_MBOX_OP_IDENTIFY, NULL, 0, out, &n);
	is(rc, CXL_MBOX_RC_SUCCESS, "Identify through BAR2 region accesses: Success");
	ok(n >= CXL_IDENTIFY_SIZE_V2, "Identify: %zu output bytes (Linux needs 0x43)", n);
	ok(!memcmp(out + CXL_IDENTIFY_FW_REV, VCXL_MODEL_T3_FW_REVISION,
		   strlen(VCXL_MODEL_T3_FW_REVISION)),
	   "Identify: firmware revision \"%s\"", VCXL_MODEL_T3_FW_REVISION);
	is(le64(out + CXL_IDENTIFY_TOTAL_CAP), 1, "Identify: total capacity 1 x 256 MiB");
	is(le64(out + CXL_IDENTIFY_VOLATILE_CAP), 1, "Identify: volatile capacity 1 x 256 MiB");
	is(le64(out + CXL_IDENTIFY_PERSISTENT_CAP), 0, "Identify: no persistent capacity");

	n = sizeof(out);
	rc = mbox_cmd(c, mb, CXL_MBOX_OP_GET_PARTITION_INFO, NULL, 0, out, &n);
	ok(rc == CXL_MBOX_RC_SUCCESS && n == CXL_PARTITION_INFO_SIZE && le64(out) == 1,
	   "Get Partition Info: active volatile 1 x 256 MiB (rc %d, %zu bytes)", rc, n);

	n = sizeof(out);
	rc = mbox_cmd(c, mb, 0x7fff, NULL, 0, out, &n);
	ok(rc == CXL_MBOX_RC_UNSUPPORTED && n == 0,
	   "unknown opcode 0x7fff: Unsupported, no output (rc %d)", rc);
	uint8_t junk[4] = {1, 2, 3, 4};
	n = sizeof(out);
	rc = mbox_cmd(c, mb, CXL_MBOX_OP_IDENTIFY, junk, sizeof(junk), out, &n);
	ok(rc != CXL_MBOX_RC_SUCCESS && rc > 0,
	   "Identify with an input payload: refused with a return code (rc %d)", rc);

	/* host-owned state: commands off the allow-list (cxl_mbox.h) are
	 * answered Unsupported and never reach the device */
	uint8_t lsa_in[CXL_GET_LSA_IN_SIZE] = {0}, before[16], after[16];
	lsa_in[4] = sizeof(before); /* offset 0, length 16 */
	n = sizeof(before);
	rc = mbox_cmd(c, mb, CXL_MBOX_OP_GET_LSA, lsa_in, sizeof(lsa_in), before, &n);
	is(rc, CXL_MBOX_RC_SUCCESS, "Get LSA (allowed): Success");
	uint8_t set[CXL_SET_LSA_HDR_SIZE + 16];
	memset(set, 0, CXL_SET_LSA_HDR_SIZE);
	memset(set + CXL_SET_LSA_HDR_SIZE, 0xee, 16);
	n = sizeof(out);
	rc = mbox_cmd(c, mb, CXL_MBOX_OP_SET_LSA, set, sizeof(set), out, &n);
	ok(rc == CXL_MBOX_RC_UNSUPPORTED && n == 0,
	   "Set LSA (persistent): Unsupported, no output (rc %d, %zu bytes)", rc, n);
	n = sizeof(after);
	rc = mbox_cmd(c, mb, CXL_MBOX_OP_GET_LSA, lsa_in, sizeof(lsa_in), after, &n);
	ok(rc == CXL_MBOX_RC_SUCCESS && !memcmp(before, after, sizeof(before)),
	   "... the label storage area is unchanged");
	static const uint16_t refused[] = {
	    CXL_MBOX_OP_SANITIZE,	    CXL_MBOX_OP_ACTIVATE_FW,   CXL_MBOX_OP_TRANSFER_FW,
	    CXL_MBOX_OP_SET_PARTITION_INFO, CXL_MBOX_OP_INJECT_POISON, CXL_MBOX_OP_CLEAR_POISON};
	for (unsigned i = 0; i < sizeof(refused) / sizeof(refused[0]); i++) {
		n = sizeof(out);
		rc = mbox_cmd(c, mb, refused[i], NULL, 0, out, &n);
		ok(rc == CXL_MBOX_RC_UNSUPPORTED && n == 0, "opcode 0x%04x: Unsupported (rc %d)",
		   refused[i], rc);
	}
	n = sizeof(out);
	rc = mbox_cmd(c, mb, CXL_MBOX_OP_IDENTIFY, NULL, 0, out, &n);
	ok(rc == CXL_MBOX_RC_SUCCESS && n >= CXL_IDENTIFY_SIZE_V2,
	   "Identify after the refusals: Success again");
}

/* CXL r3.1 8.2.4.20: the guest's decoders reset HOSTONLY and commit with it. */
static void test_decoder(struct harness *h, struct vcxl_client *c,
			 const struct vcxl_client_info *info)
{
	uint64_t hdm = info->cxl.hdm_offset;
	uint32_t ctrl = 0, g = 0;
	const uint64_t base = 0x2000000000ull;

	vcxl_client_read32(c, BAR0, hdm + CXL_HDM_DEC_CTRL(0), &ctrl);
	ok(ctrl & CXL_HDM_DEC_CTRL_HOSTONLY,
	   "virtual decoder 0 resets with Target Range Type HOSTONLY (ctrl 0x%x)", ctrl);
	ok(!(ctrl & CXL_HDM_DEC_CTRL_COMMITTED), "virtual decoder 0 not committed at reset");
	vcxl_client_read32(c, BAR0, hdm + CXL_HDM_GLOBAL_CTRL, &g);
	vcxl_client_write32(c, BAR0, hdm + CXL_HDM_GLOBAL_CTRL, g | CXL_HDM_GCTRL_ENABLE);
	vcxl_client_write32(c, BAR0, hdm + CXL_HDM_DEC_BASE_HI(0), (uint32_t)(base >> 32));
	vcxl_client_write32(c, BAR0, hdm + CXL_HDM_DEC_BASE_LO(0), (uint32_t)base);
	vcxl_client_write32(c, BAR0, hdm + CXL_HDM_DEC_SIZE_HI(0), 0);
	vcxl_client_write32(c, BAR0, hdm + CXL_HDM_DEC_SIZE_LO(0), (uint32_t)G256);
	vcxl_client_write32(c, BAR0, hdm + CXL_HDM_DEC_CTRL(0),
			    CXL_HDM_DEC_CTRL_HOSTONLY | CXL_HDM_DEC_CTRL_COMMIT);
	vcxl_client_read32(c, BAR0, hdm + CXL_HDM_DEC_CTRL(0), &ctrl);
	ok((ctrl & CXL_HDM_DEC_CTRL_COMMITTED) && !(ctrl & CXL_HDM_DEC_CTRL_COMMIT_ERR) &&
	       (ctrl & CXL_HDM_DEC_CTRL_HOSTONLY),
	   "guest commits decoder 0 HOSTONLY at 0x%llx (ctrl 0x%x)", (unsigned long long)base,
	   ctrl);
	vcxl_client_write32(c, BAR0, hdm + CXL_HDM_DEC_CTRL(0), CXL_HDM_DEC_CTRL_HOSTONLY);
	vcxl_client_read32(c, BAR0, hdm + CXL_HDM_DEC_CTRL(0), &ctrl);
	ok(!(ctrl & CXL_HDM_DEC_CTRL_COMMITTED), "guest decommits decoder 0");
	uint32_t v = 0;
	vcxl_client_read32(c, CFG, 0, &v); /* a round trip: the log lines are written */
	is(h_log_count(h, "dev0: guest decoder 0 committed base 0x2000000000 size 0x10000000"), 1,
	   "server log: the guest's commit with its base and size");
	is(h_log_count(h, "dev0: guest decoder 0 decommitted base 0x2000000000 size 0x10000000"), 1,
	   "server log: the guest's decommit");
}

/* ---- vcxl mbox ----------------------------------------------------------- */

/* Scan Media input (CXL r3.1 8.2.9.9.4.5): DPA 0, one 64-byte unit, flags 0 */
#define SCAN_IN                                                                                    \
	"0000000000000000"                                                                         \
	"0100000000000000"                                                                         \
	"00"

/* Run the CLI (stdout and stderr together): its exit status, or -1. */
static int run_cli(const char *cli, const char *args, char *out, size_t len)
{
	char cmd[8192];
	FILE *f;
	size_t n;
	int st;

	snprintf(cmd, sizeof(cmd), "'%s' %s 2>&1", cli, args);
	f = popen(cmd, "r");
	if (!f)
		return -1;
	n = fread(out, 1, len - 1, f);
	out[n] = 0;
	st = pclose(f);
	return WIFEXITED(st) ? WEXITSTATUS(st) : -1;
}

static int64_t jint(struct json_object *o, const char *key)
{
	struct json_object *v;

	return json_object_object_get_ex(o, key, &v) ? json_object_get_int64(v) : -1;
}

static const char *jstr(struct json_object *o, const char *key)
{
	struct json_object *v;

	return json_object_object_get_ex(o, key, &v) ? json_object_get_string(v) : "";
}

static bool one_error_line(const char *out, const char *needle)
{
	const char *nl = strchr(out, '\n');

	return !strncmp(out, "vcxl: ", 6) && strstr(out, needle) && nl && !nl[1];
}

static void test_cli_mbox(const struct harness *h)
{
	static char out[1 << 16], args[8192];
	struct json_object *j, *bg;
	int rc;

	snprintf(args, sizeof(args), "mbox %s --opcode 0x4000", h->sock);
	rc = run_cli(h->cli, args, out, sizeof(out));
	ok(rc == 0 && strstr(out, "rc=0x0000 Success") && strstr(out, "69 output bytes") &&
	       strstr(out, "|vcxl-t3 0.1"),
	   "vcxl mbox Identify: exit 0, Success, 69 bytes, firmware revision in the dump (rc %d)",
	   rc);
	snprintf(args, sizeof(args), "mbox %s --opcode 0x4000 --json", h->sock);
	rc = run_cli(h->cli, args, out, sizeof(out));
	j = json_tokener_parse(out);
	ok(rc == 0 && j && jint(j, "rc") == CXL_MBOX_RC_SUCCESS &&
	       jint(j, "out_len") == CXL_IDENTIFY_SIZE &&
	       strlen(jstr(j, "out")) == 2 * CXL_IDENTIFY_SIZE &&
	       !strncmp(jstr(j, "out"), "7663786c2d7433", 14) &&
	       !strcmp(jstr(j, "name"), "Identify Memory Device"),
	   "vcxl mbox Identify --json: rc 0, out_len 0x45, payload hex starts \"vcxl-t3\"");
	json_object_put(j);

	snprintf(args, sizeof(args), "mbox %s --opcode 0x7fff", h->sock);
	rc = run_cli(h->cli, args, out, sizeof(out));
	ok(rc != 0 && strstr(out, "rc=0x0003 Unsupported") && strstr(out, "0 output bytes"),
	   "vcxl mbox 0x7fff: Unsupported, exit %d", rc);

	snprintf(args, sizeof(args), "mbox %s --opcode 0x4304 --in %s --irq", h->sock, SCAN_IN);
	rc = run_cli(h->cli, args, out, sizeof(out));
	ok(rc == 0 && strstr(out, "rc=0x0001 Background Command Started") &&
	       strstr(out, "background command 0x4304 complete: rc=0x0000 Success (MSI-X vector 1 "
			   "fired after "),
	   "vcxl mbox Scan Media --irq: completion on MSI-X vector 1 (exit %d)", rc);
	if (rc)
		diag("%s", out);
	snprintf(args, sizeof(args), "mbox %s --opcode 0x4304 --in %s --irq --json", h->sock,
		 SCAN_IN);
	rc = run_cli(h->cli, args, out, sizeof(out));
	j = json_tokener_parse(out);
	bg = NULL;
	ok(rc == 0 && j && jint(j, "rc") == CXL_MBOX_RC_BACKGROUND &&
	       json_object_object_get_ex(j, "background", &bg) &&
	       !strcmp(jstr(bg, "completion"), "msix") &&
	       jint(bg, "vector") == VCXL_MODEL_T3_MBOX_MSGNUM && jint(bg, "percent") == 100 &&
	       jint(bg, "rc") == CXL_MBOX_RC_SUCCESS &&
	       jint(bg, "opcode") == CXL_MBOX_OP_SCAN_MEDIA,
	   "--irq --json: background object (msix, vector 1, 100 %%, Success)");
	json_object_put(j);

	snprintf(args, sizeof(args), "mbox %s --opcode 0x4304 --in %s", h->sock, SCAN_IN);
	rc = run_cli(h->cli, args, out, sizeof(out));
	ok(rc == 0 && strstr(out, "background command 0x4304 complete: rc=0x0000 Success (100 %, "
				  "polled"),
	   "vcxl mbox Scan Media without --irq: completes by polling (exit %d)", rc);

	snprintf(args, sizeof(args), "mbox %s --opcode 0x4304 --in 00000000", h->sock);
	rc = run_cli(h->cli, args, out, sizeof(out));
	ok(rc != 0 && strstr(out, "Invalid Payload Length"),
	   "Scan Media with 4 input bytes: Invalid Payload Length, exit %d", rc);

	snprintf(args, sizeof(args), "mbox %s --opcode 0x4000 --in 0a0", h->sock);
	rc = run_cli(h->cli, args, out, sizeof(out));
	ok(rc != 0 && one_error_line(out, "odd number of hex digits"),
	   "--in with an odd number of digits refused in one line (exit %d)", rc);
	snprintf(args, sizeof(args), "mbox %s --opcode 0x4000 --in 0g", h->sock);
	rc = run_cli(h->cli, args, out, sizeof(out));
	ok(rc != 0 && one_error_line(out, "not a hex digit"), "--in 0g refused (exit %d)", rc);
	int k = snprintf(args, sizeof(args), "mbox %s --opcode 0x4000 --in ", h->sock);
	for (unsigned i = 0; i <= (1u << VCXL_MODEL_T3_PAYLOAD_SHIFT); i++)
		k += snprintf(args + k, sizeof(args) - (size_t)k, "00");
	rc = run_cli(h->cli, args, out, sizeof(out));
	ok(rc != 0 && one_error_line(out, "the mailbox payload holds 2048"),
	   "--in of 2049 bytes refused (exit %d)", rc);
	snprintf(args, sizeof(args), "mbox %s --opcode 0x10000", h->sock);
	rc = run_cli(h->cli, args, out, sizeof(out));
	ok(rc != 0 && one_error_line(out, "invalid --opcode"), "--opcode 0x10000 refused");
	snprintf(args, sizeof(args), "mbox %s", h->sock);
	rc = run_cli(h->cli, args, out, sizeof(out));
	ok(rc != 0 && one_error_line(out, "needs --opcode"), "mbox without --opcode refused");
}

/* vcxl commit on a class memory device commits host-only (HDM-H), as Linux's
 * cxld_set_type() does for a Type-3; the target type read back is printed. */
static void test_cli_commit(const struct harness *h)
{
	static char out[4096], args[512];
	int rc;

	snprintf(args, sizeof(args), "commit %s --decoder 0 --base 0x2000000000 --size 256M",
		 h->sock);
	rc = run_cli(h->cli, args, out, sizeof(out));
	ok(rc == 0 && strstr(out, "decoder 0 committed: base 0x2000000000 size 0x10000000") &&
	       strstr(out, "host-only (HDM-H)"),
	   "vcxl commit on a Type-3: committed with Target Range Type host-only (exit %d)", rc);
	if (rc || !strstr(out, "host-only"))
		diag("%s", out);
}

/* What `vcxl mbox --irq` changed is back: BG interrupt enable and MSI-X enable clear. */
static void test_left_as_found(const struct harness *h, uint64_t mb)
{
	struct vcxl_client *c = NULL;
	uint32_t ctrl = ~0u, msix = 0;
	uint16_t ctl = 0xffff;

	if (vcxl_client_connect(h->sock, &c)) {
		ok(0, "client connected after vcxl mbox");
		return;
	}
	vcxl_client_read32(c, BAR2, mb + CXLDEV_MBOX_CTRL, &ctrl);
	is(ctrl, 0, "after vcxl mbox --irq: Mailbox Control back to 0 (interrupt enable clear)");
	for (uint32_t p = cfg32(c, PCI_CAPABILITY_LIST) & 0xfc, n = 0; p && n < 48; n++) {
		uint32_t hdr = cfg32(c, p);

		if ((hdr & 0xff) == PCI_CAP_ID_MSIX) {
			msix = p;
			ctl = (uint16_t)(hdr >> 16);
			break;
		}
		p = (hdr >> 8) & 0xfc;
	}
	ok(msix && !(ctl & PCI_MSIX_FLAGS_ENABLE), "MSI-X disabled again (Message Control 0x%x)",
	   ctl);
	is(cfg32(c, PCI_COMMAND) & PCI_COMMAND_MASTER, 0,
	   "Bus Master Enable back off (--irq sets it for the MSI-X write)");
	vcxl_client_close(c);
}

static bool bg_done(struct vcxl_client *c, uint64_t mb)
{
	uint64_t st = CXLDEV_MBOX_STATUS_BG_OP;

	for (int i = 0; i < 2000 && (st & CXLDEV_MBOX_STATUS_BG_OP); i++) {
		if (vcxl_client_read64(c, BAR2, mb + CXLDEV_MBOX_STATUS, &st))
			return false;
		if (st & CXLDEV_MBOX_STATUS_BG_OP)
			h_sleep_ms(1);
	}
	return !(st & CXLDEV_MBOX_STATUS_BG_OP);
}

/* CXL r3.1 8.2.8.4.4: the completion interrupt only with its enable bit (QEMU's
 * cxl-type3 signals regardless); the positive case shows the path works. */
static void test_bg_irq_enable(const struct harness *h, uint64_t mb)
{
	struct vcxl_client *c = NULL;
	uint8_t in[CXL_SCAN_MEDIA_IN_SIZE] = {0};
	uint32_t caps = 0, msix = 0;
	int efd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
	unsigned vec;
	uint16_t ctl;

	in[8] = 1;
	if (vcxl_client_connect(h->sock, &c)) {
		ok(0, "client connected");
		close(efd);
		return;
	}
	vcxl_client_read32(c, BAR2, mb + CXLDEV_MBOX_CAPS, &caps);
	vec = (unsigned)VCXL_FIELD_GET(CXLDEV_MBOX_CAP_IRQ_MSGNUM, caps);
	ok((caps & CXLDEV_MBOX_CAP_BG_CMD_IRQ) && vec == VCXL_MODEL_T3_MBOX_MSGNUM,
	   "Mailbox Capabilities: background completion interrupt on vector %u", vec);
	for (uint32_t p = cfg32(c, PCI_CAPABILITY_LIST) & 0xfc, n = 0; p && n < 48; n++) {
		if ((cfg32(c, p) & 0xff) == PCI_CAP_ID_MSIX) {
			msix = p;
			break;
		}
		p = (cfg32(c, p) >> 8) & 0xfc;
	}
	ctl = PCI_MSIX_FLAGS_ENABLE;
	ok(msix && !vcxl_client_region_write(c, CFG, msix + PCI_MSIX_FLAGS, &ctl, 2),
	   "MSI-X enabled");
	is(vcxl_client_set_irqs(c, VFIO_PCI_MSIX_IRQ_INDEX,
				VFIO_IRQ_SET_DATA_EVENTFD | VFIO_IRQ_SET_ACTION_TRIGGER, vec, 1,
				&efd, 1, NULL),
	   0, "SET_IRQS: eventfd on vector %u", vec);
	h_eventfd_fired(efd, 0);

	is(mbox_cmd(c, mb, CXL_MBOX_OP_SCAN_MEDIA, in, sizeof(in), NULL, NULL),
	   CXL_MBOX_RC_BACKGROUND, "Scan Media with the interrupt enable clear");
	ok(bg_done(c, mb), "completes (polled)");
	ok(!h_eventfd_fired(efd, 200), "enable clear: no eventfd signal");

	vcxl_client_write32(c, BAR2, mb + CXLDEV_MBOX_CTRL, CXLDEV_MBOX_CTRL_BG_CMD_IRQ);
	is(mbox_cmd_ctrl(c, mb, CXL_MBOX_OP_SCAN_MEDIA, in, sizeof(in), NULL, NULL,
			 CXLDEV_MBOX_CTRL_BG_CMD_IRQ),
	   CXL_MBOX_RC_BACKGROUND, "Scan Media with the enable set");
	ok(h_eventfd_fired(efd, 2000), "enable set: the eventfd is signalled");
	ok(bg_done(c, mb), "and the command is complete");

	vcxl_client_write32(c, BAR2, mb + CXLDEV_MBOX_CTRL, 0);
	vcxl_client_set_irqs(c, VFIO_PCI_MSIX_IRQ_INDEX,
			     VFIO_IRQ_SET_DATA_NONE | VFIO_IRQ_SET_ACTION_TRIGGER, 0, 0, NULL, 0,
			     NULL);
	ctl = 0;
	vcxl_client_region_write(c, CFG, msix + PCI_MSIX_FLAGS, &ctl, 2);
	vcxl_client_close(c);
	close(efd);
}

static void test_type3_server(const char *bin, const char *cli)
{
	struct harness h = {.cli = cli};
	const char *args[] = {"--model", "type3", "--decoders", "2", NULL};
	struct vcxl_client *c = NULL;
	struct vcxl_client_info info;
	struct regblock comp, mdev;
	int rc = h_start(&h, bin, -1, args);

	ok(rc == 0, "vcxl-server --model type3 started");
	if (rc) {
		h_dump_log(&h);
		h_cleanup(&h);
		return;
	}
	is(h_log_count(&h, "serving device 0 (8086:0d93"), 1, "server log names 8086:0d93");
	is(vcxl_client_connect(h.sock, &c), 0, "client connected");
	if (!c) {
		h_cleanup(&h);
		return;
	}
	is(vcxl_client_get_info(c, &info), 0, "GET_INFO");
	test_identity(c, &info);
	regloc(c, &comp, &mdev);
	ok(comp.found && comp.bar == 0, "Register Locator: component block in BAR0");
	ok(mdev.found && mdev.bar == 2 && mdev.off == VCXL_MODEL_T3_MEMDEV_OFF,
	   "Register Locator: memory device registers (RBI 3) at BAR2 + 0x%llx",
	   (unsigned long long)mdev.off);
	struct vcxl_client_region ri;
	ok(vcxl_client_region_info(c, BAR2, &ri) == 0 && ri.size == VCXL_MODEL_T3_BAR2_SIZE &&
	       !(ri.flags & VFIO_REGION_INFO_FLAG_MMAP),
	   "BAR2: 128 KiB, trapped (not mmappable: the mailbox runs in the server)");
	if (ri.fd >= 0)
		close(ri.fd);
	if (mdev.found)
		test_mailbox(c, mdev.off);
	test_decoder(&h, c, &info);
	vcxl_client_close(c);
	if (mdev.found) {
		uint64_t mb = mdev.off + VCXL_MDEV_MBOX_OFF;

		test_bg_irq_enable(&h, mb);
		test_cli_mbox(&h);
		test_cli_commit(&h);
		test_left_as_found(&h, mb);
	}
	is(h_log_count(&h, VCXL_PROTO_ERR_PREFIX), 0, "no protocol error in the server log");
	is(h_stop(&h), 0, "SIGTERM: exit 0");
	if (tap_failed)
		h_dump_log(&h);
	h_cleanup(&h);
}

/* The region must be all device memory: the mailbox reports the whole device. */
static void test_partial_region_refused(const char *bin)
{
	char cmd[600], line[512];
	bool said = false;
	int rc = -1;
	FILE *p;

	snprintf(cmd, sizeof(cmd),
		 "'%s' --model type3 --mem-size 512M --region-size 256M --socket "
		 "/tmp/vcxl-it-t3-refused.sock 2>&1; echo rc=$?",
		 bin);
	p = popen(cmd, "r");
	while (p && fgets(line, sizeof(line), p)) {
		if (strstr(line, "must cover all device memory"))
			said = true;
		sscanf(line, "rc=%d", &rc);
	}
	if (p)
		pclose(p);
	ok(rc != 0, "--model type3 with a region smaller than the device exits (rc %d)", rc);
	ok(said, "and says the region must cover all device memory");
}

static void test_accel_unchanged(const char *bin, const char *cli)
{
	struct harness h = {.cli = cli};
	static char out[4096];
	char cli_args[256];
	const char *args[] = {"--model", "accel", NULL};
	struct vcxl_client *c = NULL;
	struct vcxl_client_info info;
	struct regblock comp, mdev;
	uint32_t ctrl = 0;
	int rc = h_start(&h, bin, -1, args);

	ok(rc == 0, "vcxl-server --model accel started");
	if (!rc && vcxl_client_connect(h.sock, &c) == 0) {
		is(cfg32(c, PCI_VENDOR_ID), (uint32_t)VCXL_MODEL_DEVICE << 16 | VCXL_MODEL_VENDOR,
		   "accel: 8086:0d94");
		is(cfg32(c, PCI_CLASS_REVISION) >> 8, VCXL_MODEL_CLASS_ACCEL,
		   "accel: class 120000");
		regloc(c, &comp, &mdev);
		ok(comp.found && !mdev.found, "accel: Register Locator has no memory device block");
		vcxl_client_get_info(c, &info);
		vcxl_client_read32(c, BAR0, info.cxl.hdm_offset + CXL_HDM_DEC_CTRL(0), &ctrl);
		ok(!(ctrl & CXL_HDM_DEC_CTRL_HOSTONLY),
		   "accel: virtual decoder 0 resets device-coherent (ctrl 0x%x)", ctrl);
		vcxl_client_close(c);
		snprintf(cli_args, sizeof(cli_args), "mbox %s --opcode 0x4000", h.sock);
		rc = run_cli(cli, cli_args, out, sizeof(out));
		ok(rc != 0 && one_error_line(out, "no memory device registers"),
		   "accel: vcxl mbox fails in one line (no memory device registers)");
	} else {
		ok(0, "accel: client connected");
	}
	is(h_stop(&h), 0, "accel: SIGTERM: exit 0");
	h_cleanup(&h);
}

static void test_bad_model(const char *bin)
{
	char cmd[600];
	FILE *p;
	char line[256];
	bool said = false;

	snprintf(cmd, sizeof(cmd), "'%s' --model type4 --socket /nonexistent/x 2>&1; echo rc=$?",
		 bin);
	p = popen(cmd, "r");
	int rc = -1;
	while (p && fgets(line, sizeof(line), p)) {
		if (strstr(line, "--model") && strstr(line, "type4"))
			said = true;
		sscanf(line, "rc=%d", &rc);
	}
	if (p)
		pclose(p);
	ok(said && rc == 2, "--model type4: usage error naming the option (rc %d)", rc);
}

int main(int argc, char **argv)
{
	const char *bin = h_server_bin(argc, argv);

	test_type3_server(bin, h_cli_bin(argc, argv));
	test_partial_region_refused(bin);
	test_accel_unchanged(bin, h_cli_bin(argc, argv));
	test_bad_model(bin);
	return done();
}
