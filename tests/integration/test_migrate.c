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
 */
#include <json-c/json.h>
#include <linux/vfio.h>

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

static struct json_object *mig_of(struct json_object *st)
{
	struct json_object *r, *devs, *d, *m;

	if (!st || !json_object_object_get_ex(st, "devices", &devs)) {
		if (!st || !json_object_object_get_ex(st, "return", &r) ||
		    !json_object_object_get_ex(r, "devices", &devs))
			return NULL;
	}
	d = json_object_array_get_idx(devs, 0);
	return d && json_object_object_get_ex(d, "migration", &m) ? m : NULL;
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

int main(int argc, char **argv)
{
	const char *bin = h_server_bin(argc, argv);
	struct harness a = {.cli = h_cli_bin(argc, argv)}, b = {.cli = a.cli}, d = {.cli = a.cli};
	const char *mem512[] = {"--mem-size", "512M", NULL};
	const char *mem1g[] = {"--mem-size", "1G", NULL};
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
	if (tap_failed) {
		h_dump_log(&a);
		h_dump_log(&b);
	}
	h_cleanup(&a);
	h_cleanup(&b);
	h_cleanup(&d);
	return tap_done();
}
