// SPDX-License-Identifier: BSD-3-Clause
/*
 * The hand-over of a device to the next tenant (--on-disconnect reset), with
 * the real server binary, its sockets and the fds it sends (docs/security.md,
 * "Attacks and what stops them"; docs/reset.md, disconnect reset).
 *
 * Nothing of the departed tenant's is left in any personality's state: a
 * first client records everything a guest can read of a fresh device (every
 * config space dword, every BAR's readable bytes, the COMP_REGS region and,
 * for the Type-3 personality, the answer of every allow-listed mailbox query);
 * tenant A then writes every register it can reach, sets the Timestamp and
 * the Event Interrupt Policy, runs Scan Media, and leaves; tenant B must read
 * exactly what the fresh device showed.
 */
#include <linux/pci_regs.h>
#include <linux/vfio.h>
#include <sys/mman.h>

#include "tap.h"
#include "integration/harness.h"
#include "vcxl/cxl_mbox.h"
#include "vcxl/cxl_regs.h"
#include "vcxl/model.h"
#include "vcxl/vfio_cxl.h"

#define CFG   VFIO_PCI_CONFIG_REGION_INDEX
#define BAR2  VFIO_PCI_BAR2_REGION_INDEX
#define MB    (VCXL_MODEL_T3_MEMDEV_OFF + VCXL_MDEV_MBOX_OFF) /* the model's mailbox in BAR2 */
#define NIDX  (VCXL_VDEV_COMP_REGION + 1)		      /* region indexes read */
#define CHUNK 4096u

/* ---- what a guest can read ------------------------------------------------ */

struct view {
	uint64_t size[NIDX];
	uint8_t *bytes[NIDX]; /* readable bytes of each region (unreadable dwords: 0xee) */
	uint8_t mbox[64][2048];
	size_t mbox_len[64];
	int mbox_rc[64];
	unsigned nmbox;
};

/* A chunk by one read; where that is refused, dword by dword (a register
 * area that takes only dword accesses), an unreadable dword marked. */
static void read_chunk(struct vcxl_client *c, uint32_t idx, uint64_t off, uint8_t *buf, size_t len)
{
	if (!vcxl_client_region_read(c, idx, off, buf, len))
		return;
	for (size_t i = 0; i < len; i += 4) {
		uint32_t v = 0xeeeeeeee;

		vcxl_client_read32(c, idx, off + i, &v);
		memcpy(buf + i, &v, 4);
	}
}

static void write_chunk(struct vcxl_client *c, uint32_t idx, uint64_t off, const uint8_t *buf,
			size_t len)
{
	if (!vcxl_client_region_write(c, idx, off, buf, len))
		return;
	for (size_t i = 0; i < len; i += 4) {
		uint32_t v;

		memcpy(&v, buf + i, 4);
		vcxl_client_write32(c, idx, off + i, v);
	}
}

static bool readable(uint32_t idx)
{
	/* the CXL region's own hand-over (scrub, fresh object) is test_hostile's */
	return idx <= VFIO_PCI_BAR5_REGION_INDEX || idx == CFG || idx == VCXL_VDEV_COMP_REGION;
}

/* CXL r3.1 8.2.8.4: one mailbox command: payload, Command, doorbell, poll,
 * Status and output. The return code or -errno. */
static int mbox_cmd(struct vcxl_client *c, uint16_t op, const void *in, size_t in_len, void *out,
		    size_t *out_len)
{
	uint64_t st = 0, cmd;
	uint32_t ctrl = CXLDEV_MBOX_CTRL_DOORBELL;
	int rc;

	if (in_len &&
	    (rc = vcxl_client_region_write(c, BAR2, MB + CXLDEV_MBOX_PAYLOAD, in, in_len)))
		return rc;
	cmd = VCXL_FIELD_PREP(CXLDEV_MBOX_CMD_OPCODE, op) |
	      VCXL_FIELD_PREP(CXLDEV_MBOX_CMD_PAYLOAD_LEN, in_len);
	if ((rc = vcxl_client_write64(c, BAR2, MB + CXLDEV_MBOX_CMD, cmd)) ||
	    (rc = vcxl_client_write32(c, BAR2, MB + CXLDEV_MBOX_CTRL, CXLDEV_MBOX_CTRL_DOORBELL)))
		return rc;
	for (int t = 0; t < 1000 && (ctrl & CXLDEV_MBOX_CTRL_DOORBELL); t++)
		if ((rc = vcxl_client_read32(c, BAR2, MB + CXLDEV_MBOX_CTRL, &ctrl)))
			return rc;
	if ((rc = vcxl_client_read64(c, BAR2, MB + CXLDEV_MBOX_STATUS, &st)) ||
	    (rc = vcxl_client_read64(c, BAR2, MB + CXLDEV_MBOX_CMD, &cmd)))
		return rc;
	size_t n = VCXL_FIELD_GET(CXLDEV_MBOX_CMD_PAYLOAD_LEN, cmd);
	if (out_len) {
		n = n > *out_len ? *out_len : n;
		if (n && (rc = vcxl_client_region_read(c, BAR2, MB + CXLDEV_MBOX_PAYLOAD, out, n)))
			return rc;
		*out_len = n;
	}
	return (int)VCXL_FIELD_GET(CXLDEV_MBOX_STATUS_RC, st);
}

/* Every allow-listed query (vcxl_mbox_guest_allowed) that changes nothing,
 * with a valid input */
struct query {
	uint16_t op;
	uint8_t in[CXL_GET_LOG_IN_SIZE];
	size_t in_len;
};

static const struct query queries[] = {
    {CXL_MBOX_OP_IDENTIFY_GENERIC, {0}, 0},
    {CXL_MBOX_OP_BG_OP_STATUS, {0}, 0},
    {CXL_MBOX_OP_GET_EVENT_RECORDS, {0}, CXL_GET_EVENTS_IN_SIZE},
    {CXL_MBOX_OP_GET_EVT_INT_POLICY, {0}, 0},
    {CXL_MBOX_OP_GET_FW_INFO, {0}, 0},
    {CXL_MBOX_OP_GET_TIMESTAMP, {0}, 0},
    {CXL_MBOX_OP_GET_SUPPORTED_LOGS, {0}, 0},
    {CXL_MBOX_OP_GET_LOG, {0}, CXL_GET_LOG_IN_SIZE},
    {CXL_MBOX_OP_GET_LOG_CAPS, {0}, 16},
    {CXL_MBOX_OP_GET_LOGS_SUBLIST, {0}, 0},
    {CXL_MBOX_OP_GET_SUPPORTED_FEATURES, {0x40}, 8},
    {CXL_MBOX_OP_GET_FEATURE, {0}, 0x15},
    {CXL_MBOX_OP_IDENTIFY, {0}, 0},
    {CXL_MBOX_OP_GET_PARTITION_INFO, {0}, 0},
    {CXL_MBOX_OP_GET_LSA, {0, 0, 0, 0, 0x40}, CXL_GET_LSA_IN_SIZE},
    {CXL_MBOX_OP_GET_HEALTH_INFO, {0}, 0},
    {CXL_MBOX_OP_GET_ALERT_CONFIG, {0}, 0},
    {CXL_MBOX_OP_GET_SHUTDOWN_STATE, {0}, 0},
    {CXL_MBOX_OP_GET_POISON, {0, 0, 0, 0, 0, 0, 0, 0, 1}, CXL_POISON_IN_SIZE},
    {CXL_MBOX_OP_GET_SCAN_MEDIA_CAPS, {0, 0, 0, 0, 0, 0, 0, 0, 1}, CXL_SCAN_CAPS_IN_SIZE},
    {CXL_MBOX_OP_GET_SCAN_MEDIA, {0}, 0},
};

#define NQUERIES (sizeof(queries) / sizeof(queries[0]))

static void view_free(struct view *v)
{
	for (unsigned i = 0; i < NIDX; i++)
		free(v->bytes[i]);
	memset(v, 0, sizeof(*v));
}

static void view_take(struct vcxl_client *c, bool type3, struct view *v)
{
	memset(v, 0, sizeof(*v));
	for (uint32_t i = 0; i < NIDX; i++) {
		struct vcxl_client_region ri;

		if (!readable(i) || vcxl_client_region_info(c, i, &ri) || !ri.size ||
		    !(ri.flags & VFIO_REGION_INFO_FLAG_READ)) {
			continue;
		}
		if (ri.fd >= 0)
			close(ri.fd);
		v->size[i] = ri.size;
		v->bytes[i] = malloc(ri.size);
		for (uint64_t o = 0; v->bytes[i] && o < ri.size; o += CHUNK)
			read_chunk(c, i, o, v->bytes[i] + o,
				   ri.size - o < CHUNK ? ri.size - o : CHUNK);
	}
	for (unsigned q = 0; type3 && q < NQUERIES; q++) {
		v->mbox_len[q] = sizeof(v->mbox[q]);
		v->mbox_rc[q] = mbox_cmd(c, queries[q].op, queries[q].in, queries[q].in_len,
					 v->mbox[q], &v->mbox_len[q]);
		v->nmbox++;
	}
}

/* The first difference of region idx between a and b (or -1) */
static int64_t view_diff(const struct view *a, const struct view *b, uint32_t idx)
{
	if (a->size[idx] != b->size[idx] || !a->bytes[idx] != !b->bytes[idx])
		return 0;
	for (uint64_t o = 0; a->bytes[idx] && o < a->size[idx]; o++)
		if (a->bytes[idx][o] != b->bytes[idx][o])
			return (int64_t)o;
	return -1;
}

static void view_compare(const struct view *fresh, const struct view *after, const char *what)
{
	static const char *const names[NIDX] = {"BAR0", "BAR1",	      "BAR2",	  "BAR3",
						"BAR4", "BAR5",	      "ROM",	  "config",
						"VGA",	"CXL region", "COMP_REGS"};

	for (uint32_t i = 0; i < NIDX; i++) {
		int64_t at;

		if (!fresh->size[i] && !after->size[i])
			continue;
		at = view_diff(fresh, after, i);
		if (at < 0) {
			ok(1, "%s: %s reads as on a fresh device (0x%llx bytes)", what, names[i],
			   (unsigned long long)fresh->size[i]);
			continue;
		}
		uint32_t fv = 0, av = 0;
		uint64_t dw = (uint64_t)at & ~3ull;
		if (fresh->bytes[i] && after->bytes[i] && dw + 4 <= fresh->size[i]) {
			memcpy(&fv, fresh->bytes[i] + dw, 4);
			memcpy(&av, after->bytes[i] + dw, 4);
		}
		ok(0,
		   "%s: %s reads as on a fresh device: first difference at 0x%llx: %08x, fresh "
		   "%08x",
		   what, names[i], (unsigned long long)dw, av, fv);
	}
	for (unsigned q = 0; q < fresh->nmbox; q++) {
		bool same = fresh->mbox_rc[q] == after->mbox_rc[q] &&
			    fresh->mbox_len[q] == after->mbox_len[q] &&
			    !memcmp(fresh->mbox[q], after->mbox[q], fresh->mbox_len[q]);
		size_t k = 0;

		while (!same && k < fresh->mbox_len[q] && k < after->mbox_len[q] &&
		       fresh->mbox[q][k] == after->mbox[q][k])
			k++;
		if (same) {
			ok(1, "%s: mailbox 0x%04x answers as on a fresh device (rc %d, %zu bytes)",
			   what, queries[q].op, after->mbox_rc[q], after->mbox_len[q]);
			continue;
		}
		ok(0,
		   "%s: mailbox 0x%04x answers as on a fresh device: rc %d, %zu bytes, byte %zu "
		   "%02x; fresh rc %d, %zu bytes, %02x",
		   what, queries[q].op, after->mbox_rc[q], after->mbox_len[q], k, after->mbox[q][k],
		   fresh->mbox_rc[q], fresh->mbox_len[q], fresh->mbox[q][k]);
	}
}

/* ---- what a tenant can change --------------------------------------------- */

/* Tenant A changes every mailbox state it is allowed to: Timestamp, Event
 * Interrupt Policy, a Scan Media whose results stay, the payload. */
static void tenant_mailbox(struct vcxl_client *c)
{
	uint8_t ts[CXL_TIMESTAMP_SIZE] = {0x11, 0x22, 0x33, 0x44, 0x55, 0x66, 0x77, 0x08};
	uint8_t pol[CXL_INT_POLICY_SIZE] = {1, 1, 1, 1, 0};
	uint8_t scan[CXL_SCAN_MEDIA_IN_SIZE] = {0};
	uint64_t st = CXLDEV_MBOX_STATUS_BG_OP;

	scan[8] = 1;
	is(mbox_cmd(c, CXL_MBOX_OP_SET_TIMESTAMP, ts, sizeof(ts), NULL, NULL), CXL_MBOX_RC_SUCCESS,
	   "tenant A: Set Timestamp");
	is(mbox_cmd(c, CXL_MBOX_OP_SET_EVT_INT_POLICY, pol, sizeof(pol), NULL, NULL),
	   CXL_MBOX_RC_SUCCESS, "tenant A: Set Event Interrupt Policy 01010101");
	is(mbox_cmd(c, CXL_MBOX_OP_SCAN_MEDIA, scan, sizeof(scan), NULL, NULL),
	   CXL_MBOX_RC_BACKGROUND, "tenant A: Scan Media (background)");
	for (int t = 0; t < 2000 && (st & CXLDEV_MBOX_STATUS_BG_OP); t++) {
		vcxl_client_read64(c, BAR2, MB + CXLDEV_MBOX_STATUS, &st);
		if (st & CXLDEV_MBOX_STATUS_BG_OP)
			h_sleep_ms(1);
	}
	ok(!(st & CXLDEV_MBOX_STATUS_BG_OP), "tenant A: the scan completed");
}

/* Tenant A writes a pattern over every writable byte a guest reaches: the
 * config space, every BAR (registers, RAM, MSI-X table), COMP_REGS. */
static void tenant_scribble(struct vcxl_client *c, const struct view *fresh, uint8_t pat)
{
	uint8_t buf[CHUNK];

	memset(buf, pat, sizeof(buf));
	for (uint32_t i = 0; i < NIDX; i++) {
		if (i == CFG)
			continue;
		for (uint64_t o = 0; o < fresh->size[i]; o += CHUNK)
			write_chunk(c, i, o, buf,
				    fresh->size[i] - o < CHUNK ? fresh->size[i] - o : CHUNK);
	}
	/* config space last (it may turn decoding off); the FLR trigger and
	 * the BARs included: what a guest can do, it may */
	write_chunk(c, CFG, 0, buf, VCXL_VDEV_CONFIG_SIZE);
}

static void test_nothing_left(const char *bin, bool type3)
{
	const char *acc[] = {"--mem-size", "256M", "--region-size", "256M", NULL};
	const char *t3[] = {"--model",	     "type3", "--mem-size", "256M",
			    "--region-size", "256M",  NULL};
	const char *what = type3 ? "type3" : "accel";
	struct harness h = {0};
	struct vcxl_client *c;
	struct view fresh, after;

	if (!ok(h_start(&h, bin, -1, type3 ? t3 : acc) == 0, "%s: server up", what)) {
		h_dump_log(&h);
		return h_cleanup(&h);
	}
	if (!ok(vcxl_client_connect(h.sock, &c) == 0, "%s: a first client connects", what))
		return h_cleanup(&h);
	view_take(c, type3, &fresh);
	ok(fresh.size[CFG] && fresh.size[0] && fresh.size[2], "%s: the fresh device read", what);
	vcxl_client_close(c);

	if (ok(vcxl_client_connect(h.sock, &c) == 0, "%s: tenant A connects", what)) {
		if (type3)
			tenant_mailbox(c);
		tenant_scribble(c, &fresh, 0x5a);
		vcxl_client_close(c);
	}
	if (ok(vcxl_client_connect(h.sock, &c) == 0, "%s: tenant B connects", what)) {
		view_take(c, type3, &after);
		view_compare(&fresh, &after, what);
		view_free(&after);
		vcxl_client_close(c);
	}
	view_free(&fresh);
	is(h_log_count(&h, "reset for the next client failed"), 0, "%s: no reset failure", what);
	is(h_stop(&h), 0, "%s: server exits cleanly", what);
	if (tap_failed)
		h_dump_log(&h);
	h_cleanup(&h);
}

int main(int argc, char **argv)
{
	const char *bin = h_server_bin(argc, argv);

	test_nothing_left(bin, false);
	test_nothing_left(bin, true);
	return done();
}
