// SPDX-License-Identifier: BSD-3-Clause
/*
 * Migration over the real server binary (docs/migration.md): a hostile
 * client sends DEVICE_FEATURE with bad argsz, flags and features,
 * MIG_DATA_READ in the wrong state or too big, MIG_DATA_WRITE of garbage and
 * of too much; every answer is a defined errno, the log says why, and the
 * server lives and serves. Then a migration from server A to server B over
 * the protocol alone: BAR0 RAM written on A reads back on B; A's status
 * (control socket, `vcxl status`) shows the stop-copy's size and progress
 * while it runs, B's the bytes received; a destination with another
 * --mem-size refuses the stream with a log line, and the source resumes.
 * Device memory a job writes where a committed guest decoder maps it comes
 * back in DMA_LOGGING_REPORT at its guest-physical address, once (through
 * the client's DMA window of that decoder, not one reaching past it), and
 * the stop-copy stream's DEVMEM then holds only the pages no report returned.
 * Two tenants of one server: one device migrated out and in while the other's
 * client works; nothing of the other's in the stream or changed by it.
 */
#include <json-c/json.h>
#include <linux/vfio.h>

#include "cxl/cxl_regs.h"
#include "tap.h"
#include "integration/harness.h"
#include "common/migstream.h"
#include "model/model.h"

#define RAM_OFF 0x200000u /* BAR0, past the component block */

/* a raw request: the errno of the reply (0 ok), its payload in out */
static int raw(struct vcxl_client *c, uint16_t cmd, const void *p, size_t len, void *out,
	       size_t outlen, size_t *got)
{
	struct vcxl_client_reply rep;
	int rc = vcxl_client_raw(c, cmd, 0, p, len, NULL, 0, &rep);

	if (rc)
		return rc < 0 ? -rc : rc;
	rc = (rep.hdr.flags & VFIO_USER_F_ERROR) ? (int)rep.hdr.error : 0;
	if (!rc && out)
		memcpy(out, rep.data, rep.len < outlen ? rep.len : outlen);
	if (got)
		*got = rep.len;
	vcxl_client_reply_free(&rep);
	return rc;
}

static int feat(struct vcxl_client *c, uint32_t argsz, uint32_t flags, const void *data, size_t len,
		void *out, size_t outlen)
{
	uint8_t buf[128];
	struct vfio_device_feature f = {.argsz = argsz, .flags = flags};

	memcpy(buf, &f, sizeof(f));
	if (len) /* data may be NULL then: memcpy's arguments must not be */
		memcpy(buf + sizeof(f), data, len);
	return raw(c, VFIO_USER_DEVICE_FEATURE, buf, sizeof(f) + len, out, outlen, NULL);
}

static int set_state(struct vcxl_client *c, uint32_t s)
{
	struct vfio_device_feature_mig_state m = {.device_state = s, .data_fd = -1};

	return feat(c, 16, VFIO_DEVICE_FEATURE_SET | VFIO_DEVICE_FEATURE_MIG_DEVICE_STATE, &m,
		    sizeof(m), NULL, 0);
}

static long mig_read(struct vcxl_client *c, uint32_t size, uint8_t *dst)
{
	struct vfio_user_mig_data d = {.argsz = 8 + size, .size = size};
	uint8_t *out = malloc(8 + (size_t)size);
	size_t got = 0;
	int rc = raw(c, VFIO_USER_MIG_DATA_READ, &d, sizeof(d), out, 8 + (size_t)size, &got);
	long n = rc ? -rc : (long)got - 8;

	if (n > 0 && dst)
		memcpy(dst, out + 8, (size_t)n);
	free(out);
	return n;
}

static int mig_write(struct vcxl_client *c, uint32_t argsz, uint32_t size, const uint8_t *p,
		     size_t plen)
{
	uint8_t *buf = malloc(8 + plen);
	struct vfio_user_mig_data d = {.argsz = argsz, .size = size};
	int rc;

	memcpy(buf, &d, 8);
	memcpy(buf + 8, p, plen);
	rc = raw(c, VFIO_USER_MIG_DATA_WRITE, buf, 8 + plen, NULL, 0, NULL);
	free(buf);
	return rc;
}

static void hostile(struct harness *h, struct vcxl_client *c)
{
	uint8_t junk[4096];
	int before = h_log_count(h, VCXL_PROTO_ERR_PREFIX);

	memset(junk, 0xa5, sizeof(junk));
	is(feat(c, 0, VFIO_DEVICE_FEATURE_GET | 1, NULL, 0, NULL, 0), EINVAL, "argsz 0: EINVAL");
	is(feat(c, 7, VFIO_DEVICE_FEATURE_GET | 1, NULL, 0, NULL, 0), EINVAL, "argsz 7: EINVAL");
	is(feat(c, 0xffffffffu, 0xffffffffu, NULL, 0, NULL, 0), EINVAL, "every flag: EINVAL");
	is(feat(c, 16, 0, NULL, 0, NULL, 0), EINVAL, "no flag: EINVAL");
	is(feat(c, 16, VFIO_DEVICE_FEATURE_GET | 0x7777, NULL, 0, NULL, 0), ENOTTY,
	   "feature 0x7777: ENOTTY");
	is(feat(c, 16, VFIO_DEVICE_FEATURE_GET | 0, NULL, 0, NULL, 0), ENOTTY,
	   "feature 0 (PCI_VF_TOKEN): ENOTTY");
	is(feat(c, 16, VFIO_DEVICE_FEATURE_SET | VFIO_DEVICE_FEATURE_MIG_DEVICE_STATE, junk, 4,
		NULL, 0),
	   EINVAL, "MIG_DEVICE_STATE SET of 4 bytes: EINVAL");
	is(set_state(c, 0x12345678), EINVAL, "MIG_DEVICE_STATE 0x12345678: EINVAL");
	is(set_state(c, VFIO_DEVICE_STATE_RUNNING_P2P), EINVAL, "RUNNING_P2P: EINVAL");
	is(feat(c, 16, VFIO_DEVICE_FEATURE_SET | VFIO_DEVICE_FEATURE_DMA_LOGGING_START, junk,
		sizeof(struct vfio_user_dma_logging_control), NULL, 0),
	   E2BIG, "DMA_LOGGING_START of junk (0xa5a5a5a5 ranges): E2BIG");
	is(mig_read(c, 64, NULL), -EINVAL, "MIG_DATA_READ while RUNNING: EINVAL");
	is(mig_write(c, 8 + 64, 64, junk, 64), EINVAL, "MIG_DATA_WRITE while RUNNING: EINVAL");
	is(set_state(c, VFIO_DEVICE_STATE_RESUMING), 0, "RESUMING");
	is(mig_read(c, 64, NULL), -EINVAL, "MIG_DATA_READ while RESUMING: EINVAL");
	is(mig_write(c, 8 + 64, 65, junk, 64), EINVAL, "MIG_DATA_WRITE size past its payload");
	is(mig_write(c, 8 + 4096, 4096, junk, 4096), 0, "4 KiB of garbage written");
	is(set_state(c, VFIO_DEVICE_STATE_RUNNING), EINVAL, "RESUMING -> RUNNING: refused");
	ok(h_log_count(h, "device state refused") >= 1,
	   "the log says the device state was refused");
	is(set_state(c, VFIO_DEVICE_STATE_STOP), EINVAL, "in ERROR: STOP refused");
	is(vcxl_client_reset(c), 0, "DEVICE_RESET");
	is(set_state(c, VFIO_DEVICE_STATE_RESUMING), 0, "RESUMING again");
	{
		/* more than any stream: refused with EFBIG once past the bound */
		uint8_t *big = calloc(1, 1u << 20);
		int rc = 0;
		uint64_t total = 0;
		while (!rc && total < VCXL_MIG_STATE_MAX + VCXL_MIG_DEVMEM_MAX + (4u << 20)) {
			rc = mig_write(c, 8 + (1u << 20), 1u << 20, big, 1u << 20);
			total += 1u << 20;
		}
		is(rc, EFBIG, "writing past the largest stream: EFBIG after %llu MiB",
		   (unsigned long long)(total >> 20));
		free(big);
	}
	is(set_state(c, VFIO_DEVICE_STATE_RUNNING), EINVAL, "that stream does not load");
	is(vcxl_client_reset(c), 0, "DEVICE_RESET");
	ok(h_log_count(h, VCXL_PROTO_ERR_PREFIX) > before, "protocol errors logged");
}

/* the whole stream through MIG_DATA_READ */
static size_t read_all(struct vcxl_client *c, uint8_t **out)
{
	size_t len = 0, cap = 16u << 20;
	uint8_t *p = malloc(cap);
	long n;

	while ((n = mig_read(c, 1u << 20, p + len)) > 0) {
		len += (size_t)n;
		if (len + (1u << 20) > cap)
			p = realloc(p, cap *= 2);
		if (n < (1 << 20))
			break;
	}
	*out = p;
	return len;
}

static int put_all(struct vcxl_client *c, const uint8_t *s, size_t len)
{
	for (size_t off = 0; off < len; off += 1u << 20) {
		uint32_t n = (uint32_t)(len - off < (1u << 20) ? len - off : 1u << 20);
		int rc = mig_write(c, 8 + n, n, s + off, n);
		if (rc)
			return rc;
	}
	return 0;
}

static struct json_object *status(struct harness *h)
{
	char args[300], out[65536];

	snprintf(args, sizeof(args), "status %s --json", h->sock);
	if (h_run_cli(h->cli, args, out, sizeof(out)))
		return NULL;
	return json_tokener_parse(out);
}

/* status' "migration" object of device i */
static struct json_object *mig_of_dev(struct json_object *st, size_t i)
{
	struct json_object *r, *devs, *d, *m;

	if (!st || !json_object_object_get_ex(st, "devices", &devs)) {
		if (!st || !json_object_object_get_ex(st, "return", &r) ||
		    !json_object_object_get_ex(r, "devices", &devs))
			return NULL;
	}
	d = json_object_array_get_idx(devs, i);
	return d && json_object_object_get_ex(d, "migration", &m) ? m : NULL;
}

static struct json_object *mig_of(struct json_object *st)
{
	return mig_of_dev(st, 0);
}

static int64_t jint(struct json_object *o, const char *k)
{
	struct json_object *v;

	return o && json_object_object_get_ex(o, k, &v) ? json_object_get_int64(v) : -1;
}

static const char *jstr(struct json_object *o, const char *k)
{
	struct json_object *v;

	return o && json_object_object_get_ex(o, k, &v) ? json_object_get_string(v) : "";
}

/* ---- device memory a job wrote, through DMA logging reports -------------- */

#define ACCEL_BAR  2
#define WIN_GPA	   0x110000000ull /* decoder 0, as QEMU's HDM window in e2e-migrate */
#define WIN_SIZE   (256ull << 20) /* decoder 0: region [0, 256 MiB) */
#define PG	   4096u
#define WIN_PAGES  (WIN_SIZE / PG)
#define UNMAPPED   (300ull << 20) /* a region offset no committed decoder maps */
#define RPT_HDR	   (sizeof(struct vfio_device_feature) + 24)
#define RPT_OUTLEN (RPT_HDR + WIN_PAGES / 8)
#define DMA_RW	   (VFIO_USER_F_DMA_REGION_READ | VFIO_USER_F_DMA_REGION_WRITE)

static uint32_t job_fill(struct vcxl_client *c, uint64_t dpa, uint64_t len)
{
	uint32_t st = 0;

	vcxl_client_write32(c, ACCEL_BAR, ACCEL_REG_STATUS, ACCEL_STATUS_DONE | ACCEL_STATUS_ERROR);
	vcxl_client_write32(c, ACCEL_BAR, ACCEL_REG_JOB_OP, ACCEL_OP_FILL);
	vcxl_client_write32(c, ACCEL_BAR, ACCEL_REG_JOB_FLAGS, 0);
	vcxl_client_write64(c, ACCEL_BAR, ACCEL_REG_JOB_DST, dpa);
	vcxl_client_write64(c, ACCEL_BAR, ACCEL_REG_JOB_LEN, len);
	vcxl_client_write64(c, ACCEL_BAR, ACCEL_REG_JOB_PATTERN, 0x5a5a5a5a5a5a5a5aull);
	vcxl_client_write32(c, ACCEL_BAR, ACCEL_REG_DOORBELL, ACCEL_DOORBELL_GO);
	for (int i = 0; i < 2000; i++) {
		if (vcxl_client_read32(c, ACCEL_BAR, ACCEL_REG_STATUS, &st))
			return 0;
		if (st & (ACCEL_STATUS_DONE | ACCEL_STATUS_ERROR))
			return st;
		h_sleep_ms(1);
	}
	return 0;
}

static int commit_dec0(struct vcxl_client *c)
{
	struct vcxl_client_info info;
	uint32_t g = 0, ctrl = 0;
	unsigned bar;
	uint64_t hdm;

	if (vcxl_client_get_info(c, &info) || !info.has_cxl)
		return -1;
	bar = info.cxl.hdm_bar;
	hdm = info.cxl.hdm_offset;
	vcxl_client_read32(c, bar, hdm + CXL_HDM_GLOBAL_CTRL, &g);
	vcxl_client_write32(c, bar, hdm + CXL_HDM_GLOBAL_CTRL, g | CXL_HDM_GCTRL_ENABLE);
	vcxl_client_write32(c, bar, hdm + CXL_HDM_DEC_BASE_HI(0), (uint32_t)(WIN_GPA >> 32));
	vcxl_client_write32(c, bar, hdm + CXL_HDM_DEC_BASE_LO(0), (uint32_t)WIN_GPA);
	vcxl_client_write32(c, bar, hdm + CXL_HDM_DEC_SIZE_HI(0), (uint32_t)(WIN_SIZE >> 32));
	vcxl_client_write32(c, bar, hdm + CXL_HDM_DEC_SIZE_LO(0), (uint32_t)WIN_SIZE);
	vcxl_client_read32(c, bar, hdm + CXL_HDM_DEC_CTRL(0), &ctrl);
	vcxl_client_write32(c, bar, hdm + CXL_HDM_DEC_CTRL(0), ctrl | CXL_HDM_DEC_CTRL_COMMIT);
	for (int i = 0; i < 100; i++) {
		vcxl_client_read32(c, bar, hdm + CXL_HDM_DEC_CTRL(0), &ctrl);
		if (ctrl & (CXL_HDM_DEC_CTRL_COMMITTED | CXL_HDM_DEC_CTRL_COMMIT_ERR))
			break;
		h_sleep_ms(1);
	}
	return (ctrl & CXL_HDM_DEC_CTRL_COMMITTED) ? 0 : -1;
}

/* DMA_LOGGING_REPORT: the errno; the reply's bitmap in bm (RPT_OUTLEN room) */
static int report(struct vcxl_client *c, uint64_t iova, uint64_t len, uint64_t ps, uint64_t *bm)
{
	struct vfio_user_dma_logging_report rep = {iova, len, ps};
	static uint8_t out[RPT_OUTLEN];
	int rc;

	memset(out, 0, sizeof(out));
	rc = feat(c, (uint32_t)RPT_OUTLEN,
		  VFIO_DEVICE_FEATURE_GET | VFIO_DEVICE_FEATURE_DMA_LOGGING_REPORT, &rep,
		  sizeof(rep), out, sizeof(out));
	memcpy(bm, out + RPT_HDR, WIN_PAGES / 8);
	return rc;
}

/* The set bits of bm, "k,k,..." */
static const char *bits(const uint64_t *bm, uint64_t n, char *buf, size_t len)
{
	size_t o = 0;

	buf[0] = 0;
	for (uint64_t k = 0; k < n && o + 24 < len; k++)
		if (bm[k / 64] & (1ull << (k % 64)))
			o += (size_t)snprintf(buf + o, len - o, "%s%llu", o ? "," : "",
					      (unsigned long long)k);
	return buf;
}

/* DEVMEM's pages in a stream, as "page,page,..." of region pages; "-" if none */
static const char *devmem_of(const uint8_t *s, size_t len, char *buf, size_t blen)
{
	struct vcxl_mig_iter it;
	struct vcxl_mig_hdr hdr;
	uint32_t type, flags;
	const uint8_t *p;
	uint64_t plen, n = 0;
	char err[160];
	size_t o = 0;

	snprintf(buf, blen, "-");
	if (vcxl_mig_open(&it, s, len, &hdr, err, sizeof(err))) {
		snprintf(buf, blen, "bad stream: %s", err);
		return buf;
	}
	while (vcxl_mig_next(&it, &type, &flags, &p, &plen, err, sizeof(err)) > 0) {
		if (type != VCXL_MIG_SEC_DEVMEM || plen < 16)
			continue;
		memcpy(&n, p + 8, 8);
		buf[0] = 0;
		for (uint64_t i = 0; i < n && o + 24 < blen; i++) {
			uint64_t pg;
			memcpy(&pg, p + 16 + 8 * i, 8);
			o += (size_t)snprintf(buf + o, blen - o, "%s%llu", o ? "," : "",
					      (unsigned long long)pg);
		}
		if (!n)
			snprintf(buf, blen, "none");
	}
	vcxl_mig_close(&it);
	return buf;
}

static void devmem_report(struct harness *h)
{
	struct vcxl_client *c = NULL;
	struct {
		struct vfio_user_dma_logging_control ctl;
		struct vfio_user_dma_logging_range r;
	} st = {{.page_size = PG, .num_ranges = 1}, {WIN_GPA, 2 * WIN_SIZE}};
	uint64_t *bm = calloc(WIN_PAGES / 64, 8);
	uint8_t *stream = NULL;
	char buf[512], want[64];
	size_t len;

	if (!ok(!vcxl_client_connect(h->sock, &c) && bm, "devmem: a client"))
		goto out;
	is(commit_dec0(c), 0, "devmem: decoder 0 committed at 0x%llx (256 MiB)",
	   (unsigned long long)WIN_GPA);
	is(feat(c, sizeof(struct vfio_device_feature) + sizeof(st),
		VFIO_DEVICE_FEATURE_SET | VFIO_DEVICE_FEATURE_DMA_LOGGING_START, &st, sizeof(st),
		NULL, 0),
	   0, "devmem: DMA_LOGGING_START over [0x%llx, +512 MiB)", (unsigned long long)WIN_GPA);
	is(job_fill(c, 0x3000, 0x2000) & ACCEL_STATUS_DONE, ACCEL_STATUS_DONE,
	   "devmem: FILL of DPA [0x3000, +0x2000)");
	is(job_fill(c, UNMAPPED, PG) & ACCEL_STATUS_DONE, ACCEL_STATUS_DONE,
	   "devmem: FILL of a page no decoder maps (DPA 300 MiB)");
	/* the client's DMA window there reaches past the decoder: it is not (only)
	 * the CXL memory (guest RAM a decoder overlaps), nothing goes through it */
	is(vcxl_client_dma_map(c, WIN_GPA, 2 * WIN_SIZE, DMA_RW, -1, 0, NULL), 0,
	   "devmem: a DMA window of 512 MiB at the decoder's base (no fd)");
	is(report(c, WIN_GPA, WIN_SIZE, PG, bm), 0, "devmem: REPORT over the decoder's range");
	ok(!strcmp(bits(bm, WIN_PAGES, buf, sizeof(buf)), ""),
	   "devmem: nothing through a window reaching past the decoder (%s)", buf);
	is(vcxl_client_dma_unmap(c, WIN_GPA, 2 * WIN_SIZE, 0), 0, "devmem: that window unmapped");
	is(vcxl_client_dma_map(c, WIN_GPA, WIN_SIZE, DMA_RW, -1, 0, NULL), 0,
	   "devmem: the decoder's window mapped, as QEMU does");
	is(report(c, WIN_GPA, WIN_SIZE, PG, bm), 0, "devmem: REPORT over the decoder's window");
	ok(!strcmp(bits(bm, WIN_PAGES, buf, sizeof(buf)), "3,4"),
	   "devmem: exactly the job's pages at their GPA (bits: %s)", buf);
	is(report(c, WIN_GPA, WIN_SIZE, PG, bm), 0, "devmem: a second REPORT");
	ok(!strcmp(bits(bm, WIN_PAGES, buf, sizeof(buf)), ""), "devmem: shows none (%s)", buf);
	{
		struct json_object *js = status(h);
		struct json_object *m = mig_of(js);
		is(jint(m, "devmem_pages_reported"), 2, "devmem: status: 2 pages reported");
		json_object_put(js);
	}
	/* dirtied again after the report: in the next one */
	job_fill(c, 0x4000, PG);
	is(report(c, WIN_GPA, WIN_SIZE, PG, bm), 0, "devmem: REPORT after another FILL");
	ok(!strcmp(bits(bm, WIN_PAGES, buf, sizeof(buf)), "4"),
	   "devmem: the page dirtied after the report (bits: %s)", buf);
	/* hostile reports over the window: errno replies, nothing lost */
	job_fill(c, 0x5000, PG);
	is(report(c, WIN_GPA, WIN_SIZE, 0, bm), EINVAL, "devmem: page size 0: EINVAL");
	is(report(c, WIN_GPA, WIN_SIZE, 3 * PG, bm), EINVAL, "devmem: page size 12 KiB: EINVAL");
	is(report(c, WIN_GPA + 0x800, WIN_SIZE, PG, bm), EINVAL, "devmem: unaligned iova: EINVAL");
	is(report(c, WIN_GPA, 1ull << 63, PG, bm), EINVAL,
	   "devmem: a range past the logged one: EINVAL");
	is(report(c, WIN_GPA, 0 - WIN_GPA, PG, bm), EINVAL, "devmem: a wrapping range: EINVAL");
	is(report(c, WIN_GPA, WIN_SIZE, 1, bm), E2BIG,
	   "devmem: 1-byte pages over 256 MiB (a 32 MiB bitmap): E2BIG");
	is(report(c, WIN_GPA + 0x5000, 64, 1, bm), 0, "devmem: 64 1-byte pages inside the page");
	is(bm[0], ~0ull, "devmem: all 64 set");
	is(report(c, WIN_GPA, WIN_SIZE, PG, bm), 0, "devmem: REPORT in 4 KiB pages");
	ok(!strcmp(bits(bm, WIN_PAGES, buf, sizeof(buf)), "5"),
	   "devmem: the page is still there, once (bits: %s)", buf);
	/* the stop-copy stream: only the page no report returned */
	is(set_state(c, VFIO_DEVICE_STATE_STOP_COPY), 0, "devmem: RUNNING -> STOP_COPY");
	len = read_all(c, &stream);
	snprintf(want, sizeof(want), "%llu", (unsigned long long)(UNMAPPED / PG));
	ok(!strcmp(devmem_of(stream, len, buf, sizeof(buf)), want),
	   "devmem: the stream's DEVMEM has page %s only (%s)", want, buf);
	is(set_state(c, VFIO_DEVICE_STATE_RUNNING), 0, "devmem: back to RUNNING");
	is(feat(c, 16, VFIO_DEVICE_FEATURE_SET | VFIO_DEVICE_FEATURE_DMA_LOGGING_STOP, NULL, 0,
		NULL, 0),
	   0, "devmem: DMA_LOGGING_STOP");
out:
	free(stream);
	free(bm);
	if (c)
		vcxl_client_close(c);
}

/* A byte pattern no other tenant writes: a tenant's 'secret' pages (each
 * tenant its own step, so that no window of one is a shift of the other's) */
static void tenant_pages(uint8_t *p, size_t len, uint8_t tag)
{
	for (size_t i = 0; i < len; i++)
		p[i] = (uint8_t)((i * (tag ? 29 : 13) + 7) | 0x80);
	memcpy(p, tag == 1 ? "TENANT-ONE-SECRET" : "TENANT-ZERO-OWN!!", 17);
}

/* Device 1's client reads its own BAR0 RAM back: 1 when it is served as written */
static unsigned tenant_served(struct vcxl_client *c1, const uint8_t *secret, unsigned *asked)
{
	uint32_t v = 0;

	(*asked)++;
	return vcxl_client_read32(c1, 0, RAM_OFF + 4096, &v) == 0 &&
	       v == vcxl_mig_rd32(secret + 4096);
}

/*
 * Two tenants of one server (--devices 2): device 0's client migrates its
 * device out and back in while device 1's client keeps using its own. The
 * stream carries device 0's BAR0 RAM and nothing of device 1's; device 1 is
 * served in every state of device 0's migration and reads back what it wrote
 * after device 0 loaded a state; device 1's migration stays RUNNING and
 * untouched throughout (its status).
 */
static void two_tenants(const char *bin, const char *cli)
{
	struct harness t = {.cli = cli};
	const char *args[] = {"--devices", "2", "--mem-size", "256M", NULL};
	struct vcxl_client *c0 = NULL, *c1 = NULL;
	static uint8_t own[2 * 4096], secret[2 * 4096], back[2 * 4096];
	char s0[160], s1[160];
	uint8_t *stream = NULL;
	size_t len = 0;
	unsigned served = 0, asked = 0;

	if (!ok(h_start(&t, bin, 0, args) == 0, "tenants: a server with two devices"))
		goto out;
	h_dev_sock(&t, 0, s0, sizeof(s0));
	h_dev_sock(&t, 1, s1, sizeof(s1));
	if (!ok(!vcxl_client_connect(s0, &c0) && !vcxl_client_connect(s1, &c1),
		"tenants: a client on each device"))
		goto out;
	tenant_pages(own, sizeof(own), 0);
	tenant_pages(secret, sizeof(secret), 1);
	ok(!vcxl_client_region_write(c0, 0, RAM_OFF, own, sizeof(own)) &&
	       !vcxl_client_region_write(c1, 0, RAM_OFF, secret, sizeof(secret)),
	   "tenants: each wrote 8 KiB of its BAR0 RAM");
	served += tenant_served(c1, secret, &asked);
	is(set_state(c0, VFIO_DEVICE_STATE_STOP_COPY), 0, "tenant 0: RUNNING -> STOP_COPY");
	served += tenant_served(c1, secret, &asked);
	len = read_all(c0, &stream);
	served += tenant_served(c1, secret, &asked);
	ok(len > VCXL_MIG_HDR_LEN && memmem(stream, len, "TENANT-ZERO-OWN!!", 17),
	   "tenant 0's stream (%zu bytes) carries its own BAR0 RAM", len);
	ok(len && !memmem(stream, len, "TENANT-ONE-SECRET", 17) &&
	       !memmem(stream, len, secret + 64, 64),
	   "... and nothing of tenant 1's");
	is(set_state(c0, VFIO_DEVICE_STATE_STOP), 0, "tenant 0: STOP_COPY -> STOP");
	served += tenant_served(c1, secret, &asked);
	/* tenant 0's device takes a state again (its own, changed first) */
	vcxl_client_write32(c0, 0, RAM_OFF, 0);
	is(set_state(c0, VFIO_DEVICE_STATE_RESUMING), 0, "tenant 0: STOP -> RESUMING");
	served += tenant_served(c1, secret, &asked);
	is(put_all(c0, stream, len), 0, "tenant 0: its stream written back");
	is(set_state(c0, VFIO_DEVICE_STATE_RUNNING), 0, "tenant 0: loaded, RUNNING");
	served += tenant_served(c1, secret, &asked);
	memset(back, 0, sizeof(back));
	ok(!vcxl_client_region_read(c0, 0, RAM_OFF, back, sizeof(back)) &&
	       !memcmp(back, own, sizeof(own)),
	   "tenant 0: its BAR0 RAM as saved");
	memset(back, 0, sizeof(back));
	ok(!vcxl_client_region_read(c1, 0, RAM_OFF, back, sizeof(back)) &&
	       !memcmp(back, secret, sizeof(secret)),
	   "tenant 1: its BAR0 RAM untouched by tenant 0's save and load");
	is(served, asked, "tenant 1 served in every state of tenant 0's migration (%u of %u reads)",
	   served, asked);
	{
		struct json_object *st = status(&t);
		struct json_object *m0 = mig_of_dev(st, 0), *m1 = mig_of_dev(st, 1);

		ok(m0 && jint(m0, "transitions") >= 4,
		   "tenant 0's migration status counts its transitions (%lld)",
		   m0 ? (long long)jint(m0, "transitions") : -1ll);
		ok(m1 && !strcmp(jstr(m1, "state"), "running") && jint(m1, "transitions") == 0,
		   "tenant 1's migration status: running, no transition (%s)",
		   m1 ? json_object_to_json_string(m1) : "none");
		json_object_put(st);
	}
out:
	free(stream);
	if (c0)
		vcxl_client_close(c0);
	if (c1)
		vcxl_client_close(c1);
	if (t.pid > 0)
		is(h_stop(&t), 0, "tenants: the server exits 0");
	if (tap_failed)
		h_dump_log(&t);
	h_cleanup(&t);
}

int main(int argc, char **argv)
{
	const char *bin = h_server_bin(argc, argv);
	struct harness a = {.cli = h_cli_bin(argc, argv)}, b = {.cli = a.cli}, d = {.cli = a.cli},
		       e = {.cli = a.cli};
	const char *mem512[] = {"--mem-size", "512M", NULL};
	const char *mem1g[] = {"--mem-size", "1G", NULL};
	const char *dec2[] = {"--mem-size", "512M", "--decoders", "2", NULL};
	struct vcxl_client *ca = NULL, *cb = NULL, *cd = NULL;
	uint8_t *stream = NULL;
	size_t len;
	uint64_t size = 0;
	uint8_t out[32];
	uint32_t v = 0;

	if (!ok(h_start(&a, bin, -1, mem512) == 0 && h_start(&b, bin, -1, mem512) == 0 &&
		    h_start(&d, bin, -1, mem1g) == 0,
		"three servers (512M, 512M, 1G)"))
		goto out;
	if (!ok(!vcxl_client_connect(a.sock, &ca) && !vcxl_client_connect(b.sock, &cb) &&
		    !vcxl_client_connect(d.sock, &cd),
		"clients"))
		goto out;
	hostile(&a, ca);

	/* a migration A -> B */
	{
		/* two pages of BAR0 RAM without a zero byte: a stream the zero-run coding
		 * keeps over 8 KiB, read below in parts */
		static uint8_t pages[2 * 4096];
		for (size_t i = 0; i < sizeof(pages); i++)
			pages[i] = (uint8_t)(i * 7 + 1) | 1;
		is(vcxl_client_region_write(ca, 0, RAM_OFF + 4096, pages, sizeof(pages)), 0,
		   "A: 8 KiB of BAR0 RAM written");
	}
	is(vcxl_client_write32(ca, 0, RAM_OFF, 0xc0ffee11), 0, "A: BAR0 RAM written");
	is(feat(ca, 16, VFIO_DEVICE_FEATURE_GET | VFIO_DEVICE_FEATURE_MIG_DATA_SIZE, NULL, 0, out,
		sizeof(out)),
	   0, "A: MIG_DATA_SIZE");
	memcpy(&size, out + 8, 8);
	ok(size > VCXL_MIG_HDR_LEN && size < VCXL_MIG_STATE_MAX, "A: stop-copy size %llu bytes",
	   (unsigned long long)size);
	is(set_state(ca, VFIO_DEVICE_STATE_STOP_COPY), 0, "A: RUNNING -> STOP_COPY");
	{
		uint64_t bound = size;

		is(feat(ca, 16, VFIO_DEVICE_FEATURE_GET | VFIO_DEVICE_FEATURE_MIG_DATA_SIZE, NULL,
			0, out, sizeof(out)),
		   0, "A: MIG_DATA_SIZE in STOP_COPY");
		memcpy(&size, out + 8, 8);
		ok(size > 8192 && size <= bound,
		   "A: in STOP_COPY, the stream's exact %llu bytes (bound %llu while running)",
		   (unsigned long long)size, (unsigned long long)bound);
	}
	{
		long n = mig_read(ca, 4096, NULL);
		struct json_object *st = status(&a);
		struct json_object *m = mig_of(st);
		char args[300], txt[8192];

		is(n, 4096, "A: the first 4 KiB read");
		ok(m && !strcmp(jstr(m, "state"), "stop-copy") &&
		       jint(m, "device_state_bytes") == (int64_t)size &&
		       jint(m, "bytes_sent") == 4096,
		   "A: query-status during stop-copy: state, size %lld, sent %lld",
		   (long long)jint(m, "device_state_bytes"), (long long)jint(m, "bytes_sent"));
		json_object_put(st);
		snprintf(args, sizeof(args), "status %s", a.sock);
		h_run_cli(a.cli, args, txt, sizeof(txt));
		ok(strstr(txt, "Migration:") && strstr(txt, "stop-copy, 4096 of"),
		   "A: vcxl status shows the stop-copy's progress");
		if (!strstr(txt, "stop-copy, 4096 of"))
			diag("%s", txt);
		set_state(ca, VFIO_DEVICE_STATE_STOP); /* restart the read */
		set_state(ca, VFIO_DEVICE_STATE_STOP_COPY);
	}
	len = read_all(ca, &stream);
	is(len, size, "A: %zu bytes read, as MIG_DATA_SIZE said", len);
	is(set_state(ca, VFIO_DEVICE_STATE_STOP), 0, "A: STOP_COPY -> STOP");
	is(set_state(cd, VFIO_DEVICE_STATE_RESUMING), 0, "D (1G): RESUMING");
	is(put_all(cd, stream, len), 0, "D: stream written");
	is(set_state(cd, VFIO_DEVICE_STATE_RUNNING), EINVAL, "D: another --mem-size refuses it");
	ok(h_log_count(&d, "geometry") >= 1, "D's log names the geometry");
	is(vcxl_client_reset(cd), 0, "D: DEVICE_RESET, usable");
	is(set_state(ca, VFIO_DEVICE_STATE_RUNNING), 0, "A resumes");
	is(vcxl_client_read32(ca, 0, RAM_OFF, &v), 0, "A: reads");
	is(v, 0xc0ffee11, "A: intact");
	is(set_state(cb, VFIO_DEVICE_STATE_RESUMING), 0, "B: RESUMING");
	is(put_all(cb, stream, len), 0, "B: stream written");
	{
		struct json_object *st = status(&b);
		struct json_object *m = mig_of(st);
		ok(m && !strcmp(jstr(m, "state"), "resuming") &&
		       jint(m, "bytes_received") == (int64_t)len,
		   "B: query-status while resuming: %lld bytes received",
		   (long long)jint(m, "bytes_received"));
		json_object_put(st);
	}
	is(set_state(cb, VFIO_DEVICE_STATE_RUNNING), 0, "B: RESUMING -> RUNNING, loaded");
	ok(h_log_count(&b, "device state of") >= 1, "B's log: device state loaded");
	v = 0;
	is(vcxl_client_read32(cb, 0, RAM_OFF, &v), 0, "B: reads");
	is(v, 0xc0ffee11, "B: BAR0 RAM as A had it");
	ok(h_log_count(&a, "stop-copy ended") >= 1, "A's log: the stop-copy's bytes and time");
	if (ok(h_start(&e, bin, -1, dec2) == 0, "E: a server with 2 decoders"))
		devmem_report(&e);
	two_tenants(bin, a.cli);

out:
	free(stream);
	if (ca)
		vcxl_client_close(ca);
	if (cb)
		vcxl_client_close(cb);
	if (cd)
		vcxl_client_close(cd);
	is(h_stop(&a), 0, "A exits 0");
	is(h_stop(&b), 0, "B exits 0");
	is(h_stop(&d), 0, "D exits 0");
	if (e.pid > 0)
		is(h_stop(&e), 0, "E exits 0");
	if (tap_failed) {
		h_dump_log(&a);
		h_dump_log(&b);
	}
	h_cleanup(&a);
	h_cleanup(&b);
	h_cleanup(&d);
	h_cleanup(&e);
	return tap_done();
}
