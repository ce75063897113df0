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
#include <sys/resource.h>

#include "tap.h"
#include "integration/harness.h"
#include "cxl/cxl_mbox.h"
#include "cxl/cxl_regs.h"
#include "model/model.h"
#include "vfio-cxl/vfio_cxl.h"

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

/* ---- a crash between two tenants ---------------------------------------- */

static size_t count_byte(const uint8_t *p, size_t n, uint8_t v)
{
	size_t k = 0;

	for (size_t i = 0; i < n; i++)
		k += p[i] == v;
	return k;
}

/* Bytes equal to v in a page of the region, read by REGION_READ (or
 * (size_t)-1 if the read failed) */
static size_t region_count(struct vcxl_client *c, uint64_t off, uint8_t v)
{
	uint8_t buf[CHUNK];

	if (vcxl_client_region_read(c, VCXL_VDEV_CXL_REGION, off, buf, sizeof(buf)))
		return (size_t)-1;
	return count_byte(buf, sizeof(buf), v);
}

/*
 * --backing FILE, --on-disconnect reset (the default): tenant A writes a
 * secret through its mapping of the region (--trust-client: it has the
 * file's fd) and through REGION_WRITE, and the server is SIGKILLed (the OOM
 * killer, a stop timeout) with A attached, so no disconnect scrub runs. The
 * file still holds the secret; the restarted server zeroes it before its
 * first client, tenant B, reads any of it.
 */
static void test_crash_backing(const char *bin)
{
	char dir[] = "/tmp/vcxl-hc-XXXXXX", file[96];
	const char *args[] = {"--mem-size", "256M", "--region-size",  "256M",
			      "--backing",  file,   "--trust-client", NULL};
	const uint64_t at_map = 0x100000, at_msg = 0x0ff00000;
	struct vcxl_client_region ri;
	struct harness h = {0};
	struct vcxl_client *c;
	uint8_t page[CHUNK], got[CHUNK];
	int st;

	if (!ok(mkdtemp(dir) != NULL, "crash: temp dir"))
		return;
	snprintf(file, sizeof(file), "%s/devmem", dir);
	if (!ok(h_start(&h, bin, -1, args) == 0, "crash: server up with --backing"))
		goto out;
	if (!ok(vcxl_client_connect(h.sock, &c) == 0 &&
		    vcxl_client_region_info(c, VCXL_VDEV_CXL_REGION, &ri) == 0 && ri.fd >= 0,
		"crash: tenant A gets the region's fd (--trust-client)"))
		goto out;
	uint8_t *map =
	    mmap(NULL, ri.size, PROT_READ | PROT_WRITE, MAP_SHARED, ri.fd, (off_t)ri.offset);
	if (ok(map != MAP_FAILED, "crash: tenant A maps the region")) {
		memset(map + at_map, 0xa5, CHUNK);
		munmap(map, ri.size);
	}
	memset(page, 0xa6, sizeof(page));
	is(vcxl_client_region_write(c, VCXL_VDEV_CXL_REGION, at_msg, page, sizeof(page)), 0,
	   "crash: tenant A writes a secret page by REGION_WRITE");
	close(ri.fd);
	kill(h.pid, SIGKILL);
	waitpid(h.pid, &st, 0);
	h.pid = 0;
	ok(WIFSIGNALED(st) && WTERMSIG(st) == SIGKILL, "crash: server SIGKILLed with A attached");
	vcxl_client_close(c);
	h_cleanup(&h);
	int fd = open(file, O_RDONLY);
	ok(fd >= 0 && pread(fd, got, sizeof(got), (off_t)at_msg) == (ssize_t)sizeof(got) &&
	       count_byte(got, sizeof(got), 0xa6) == sizeof(got),
	   "crash: the backing file outlived the server with A's secret in it");
	if (fd >= 0)
		close(fd);

	if (!ok(h_start(&h, bin, -1, args) == 0, "crash: server restarted on the same file"))
		goto out;
	if (ok(vcxl_client_connect(h.sock, &c) == 0, "crash: tenant B connects")) {
		is(region_count(c, at_map, 0xa5), 0,
		   "crash: B reads none of what A wrote through its mapping");
		is(region_count(c, at_msg, 0xa6), 0,
		   "crash: B reads none of what A wrote by REGION_WRITE");
		is(region_count(c, at_msg, 0), CHUNK, "crash: B reads zeros there");
		vcxl_client_close(c);
	}
	ok(h_log_count(&h, "outlives the server") == 1 && h_log_count(&h, "region zeroed (") == 1,
	   "crash: the server said it would zero the region, and did");
	is(h_stop(&h), 0, "crash: server exits cleanly");
	if (tap_failed)
		h_dump_log(&h);
out:
	h_cleanup(&h);
	unlink(file);
	rmdir(dir);
}

/* ---- no fd for a fresh memory object ------------------------------------- */

static int set_nofile(pid_t pid, rlim_t cur)
{
	struct rlimit old, now;

	if (prlimit(pid, RLIMIT_NOFILE, NULL, &old))
		return -errno;
	now.rlim_cur = cur;
	now.rlim_max = old.rlim_max;
	return prlimit(pid, RLIMIT_NOFILE, &now, NULL) ? -errno : 0;
}

/*
 * The server is out of fds when tenant A leaves (soft RLIMIT_NOFILE below
 * what it has open, set from outside with prlimit), so the fresh region and
 * BAR0 objects of the hand-over cannot be made. A keeps its mappings of the
 * old ones. The device must not go to B with them: B is not served (one log
 * line says so, not one per attempt) until fds are free again; then B gets
 * fresh, zeroed memory that A's mappings neither see nor reach.
 */
static void test_no_fd_for_fresh_memory(const char *bin)
{
	const char *args[] = {"--mem-size", "256M", "--region-size", "256M", NULL};
	const uint64_t r_off = 0x100000;
	struct vcxl_client_region ra, ba, rb;
	struct rlimit lim;
	struct harness h = {0};
	struct vcxl_client *a, *b;
	uint8_t page[CHUNK], got[CHUNK];

	if (!ok(h_start(&h, bin, -1, args) == 0, "no fd: server up"))
		return h_cleanup(&h);
	if (!ok(vcxl_client_connect(h.sock, &a) == 0 &&
		    vcxl_client_region_info(a, VCXL_VDEV_CXL_REGION, &ra) == 0 &&
		    vcxl_client_region_info(a, VFIO_PCI_BAR0_REGION_INDEX, &ba) == 0 &&
		    ra.fd >= 0 && ba.fd >= 0,
		"no fd: tenant A gets the region's and BAR0's fds"))
		return h_cleanup(&h);
	const uint64_t b_off = ba.size - CHUNK; /* BAR0 RAM (the component block is at 0) */
	uint8_t *reg =
	    mmap(NULL, ra.size, PROT_READ | PROT_WRITE, MAP_SHARED, ra.fd, (off_t)ra.offset);
	uint8_t *bar =
	    mmap(NULL, ba.size, PROT_READ | PROT_WRITE, MAP_SHARED, ba.fd, (off_t)ba.offset);
	if (!ok(reg != MAP_FAILED && bar != MAP_FAILED, "no fd: tenant A maps both"))
		return h_cleanup(&h);
	memset(reg + r_off, 0xa1, CHUNK);
	memset(bar + b_off, 0xa1, CHUNK);

	if (prlimit(h.pid, RLIMIT_NOFILE, NULL, &lim))
		lim.rlim_cur = 1024;
	is(set_nofile(h.pid, 3), 0,
	   "no fd: the server's soft fd limit lowered to 3 (stdio only) from %llu",
	   (unsigned long long)lim.rlim_cur);
	vcxl_client_close(a); /* gone, mappings and fds kept */
	for (int t = 0; t < 200 && h_log_count(&h, "refusing clients") < 1; t++)
		h_sleep_ms(10);
	is(h_log_count(&h, "refusing clients"), 1,
	   "no fd: the device refuses clients, and says so");
	/* B tries: not served while the fresh objects cannot be made */
	int fd = vcxl_sock_connect(h.sock);
	struct pollfd p = {.fd = fd, .events = POLLIN};
	ok(fd >= 0 && (poll(&p, 1, 1000) == 0 || read(fd, got, sizeof(got)) == 0),
	   "no fd: B's attempt is not served (refused or waiting)");
	if (fd >= 0)
		close(fd);
	is(h_log_count(&h, "refusing clients"), 1, "no fd: one log line, not one per attempt");
	is(h_log_count(&h, "accept:"), 0, "no fd: no accept failure logged (nothing spins)");
	ok(count_byte(reg + r_off, CHUNK, 0xa1) == CHUNK &&
	       count_byte(bar + b_off, CHUNK, 0xa1) == CHUNK,
	   "no fd: A's old objects are left alone, not zeroed in place for B");

	is(set_nofile(h.pid, lim.rlim_cur), 0, "no fd: the fd limit restored");
	if (ok(vcxl_client_connect(h.sock, &b) == 0,
	       "no fd: tenant B connects once fds are free")) {
		is(region_count(b, r_off, 0xa1), 0, "no fd: B reads none of A's region bytes");
		is(vcxl_client_region_read(b, VFIO_PCI_BAR0_REGION_INDEX, b_off, got, sizeof(got)),
		   0, "no fd: B reads BAR0 RAM");
		is(count_byte(got, sizeof(got), 0xa1), 0, "no fd: none of A's BAR0 RAM bytes");
		memset(page, 0xb2, sizeof(page));
		is(vcxl_client_region_write(b, VCXL_VDEV_CXL_REGION, r_off, page, sizeof(page)) |
		       vcxl_client_region_write(b, VFIO_PCI_BAR0_REGION_INDEX, b_off, page,
						sizeof(page)),
		   0, "no fd: B writes the region and BAR0 RAM");
		is(count_byte(reg + r_off, CHUNK, 0xb2), 0,
		   "no fd: A's kept region mapping does not see B's write");
		is(count_byte(bar + b_off, CHUNK, 0xb2), 0,
		   "no fd: A's kept BAR0 mapping does not see B's write");
		memset(reg + r_off, 0xa3, CHUNK);
		memset(bar + b_off, 0xa3, CHUNK);
		is(region_count(b, r_off, 0xb2), CHUNK,
		   "no fd: A's late write does not reach B's region");
		vcxl_client_region_read(b, VFIO_PCI_BAR0_REGION_INDEX, b_off, got, sizeof(got));
		is(count_byte(got, sizeof(got), 0xb2), CHUNK, "no fd: nor B's BAR0 RAM");
		if (ok(vcxl_client_region_info(b, VCXL_VDEV_CXL_REGION, &rb) == 0 && rb.fd >= 0,
		       "no fd: B gets a region fd (mmap)")) {
			uint8_t *m =
			    mmap(NULL, rb.size, PROT_READ, MAP_SHARED, rb.fd, (off_t)rb.offset);
			ok(m != MAP_FAILED && count_byte(m + r_off, CHUNK, 0xb2) == CHUNK,
			   "no fd: B's mapping holds B's write, a new object");
			if (m != MAP_FAILED)
				munmap(m, rb.size);
			close(rb.fd);
		}
		vcxl_client_close(b);
	}
	is(h_log_count(&h, "ready again"), 1, "no fd: the device says it serves again");
	munmap(reg, ra.size);
	munmap(bar, ba.size);
	close(ra.fd);
	close(ba.fd);
	is(h_stop(&h), 0, "no fd: server exits cleanly");
	if (tap_failed)
		h_dump_log(&h);
	h_cleanup(&h);
}

int main(int argc, char **argv)
{
	const char *bin = h_server_bin(argc, argv);

	test_nothing_left(bin, false);
	test_nothing_left(bin, true);
	test_crash_backing(bin);
	test_no_fd_for_fresh_memory(bin);
	return done();
}
