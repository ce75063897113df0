// SPDX-License-Identifier: BSD-3-Clause
/*
 * libFuzzer harness: the VERSION capabilities parser (static in
 * src/server/protocol.c), reached through the message handler with a
 * VERSION-only stream on the buffer transport. The device behind the
 * connection is a stub (the parser never reaches it), so runs are fast.
 *
 * Input: [mode] [capabilities bytes]. mode bit 0: send the bytes as they are
 * (else a NUL is appended, as every real client does); bit 1: major version
 * 1; bit 2: follow with a second VERSION and a GET_INFO.
 *
 * Oracle: an independent reading of the vfio-user spec's rules for the
 * client's capabilities decides whether the server must accept; an accepted
 * VERSION must be answered with version 0.0 and a NUL-terminated JSON object
 * whose capabilities are within the server's limits and the client's
 * (max_dma_maps = min of both, write_multiple and vcxl's dirty_in_stop_copy
 * only if offered); a refused one
 * with EINVAL (ENOTSUP for the major); a GET_INFO succeeds exactly when the
 * negotiation did; a second VERSION is refused after a good one.
 */
#include <errno.h>
#include <json-c/json.h>
#include <string.h>

#include "fuzz_harness.h"
#include "server/server.h"

#define FZ_CAPS_MAX 8192
#define FZ_SRV_MAPS VCXL_SRV_MAX_DMA_MAPS

static void stub_get_info(void *dev, struct vcxl_vdev_info *info)
{
	info->flags = VFIO_DEVICE_FLAGS_PCI;
	info->num_regions = VFIO_PCI_NUM_REGIONS;
	info->num_irqs = VFIO_PCI_NUM_IRQS;
}

static int stub_region_info(void *dev, uint32_t index, struct vcxl_vregion_info *ri)
{
	return -EINVAL;
}

static int stub_region_read(void *dev, uint32_t index, uint64_t off, void *buf, size_t len)
{
	return -EINVAL;
}

static int stub_region_write(void *dev, uint32_t index, uint64_t off, const void *buf, size_t len)
{
	return -EINVAL;
}

static int stub_irq_info(void *dev, uint32_t index, uint32_t *count, uint32_t *flags)
{
	*count = *flags = 0;
	return 0;
}

static void stub_set_irq_handler(void *dev, vcxl_irq_fn fn, void *opaque)
{
}

static void stub_set_dma(void *dev, const struct vcxl_dma_ops *ops, void *opaque)
{
}

static int stub_reset(void *dev)
{
	return 0;
}

static int stub_client_gone(void *dev)
{
	return 0;
}

static int stub_poll(void *dev)
{
	return -1;
}

static const struct vcxl_dev_ops stub_ops = {
    .get_info = stub_get_info,
    .region_info = stub_region_info,
    .region_read = stub_region_read,
    .region_write = stub_region_write,
    .irq_info = stub_irq_info,
    .set_irq_handler = stub_set_irq_handler,
    .set_dma = stub_set_dma,
    .reset = stub_reset,
    .client_gone = stub_client_gone,
    .poll = stub_poll,
};

struct expect {
	bool ok;
	uint64_t max_maps;
	bool wm, dirty;
};

/* vfio-user spec "VERSION": an optional integer member within [min, max] */
static bool cap_int(struct json_object *caps, const char *key, uint64_t min, uint64_t max,
		    uint64_t *out)
{
	struct json_object *o;
	int64_t x;

	if (!json_object_object_get_ex(caps, key, &o))
		return true;
	if (json_object_get_type(o) != json_type_int)
		return false;
	x = json_object_get_int64(o);
	if (x < 0 || (uint64_t)x < min || (uint64_t)x > max)
		return false;
	if (out)
		*out = (uint64_t)x;
	return true;
}

/* What the server must do with these capability bytes (len includes any NUL). */
static struct expect expect_caps(const char *s, size_t len)
{
	struct expect e = {.ok = false, .max_maps = VFIO_USER_DEF_MAX_DMA_MAPS};
	struct json_tokener *tok;
	struct json_object *root, *caps, *o;
	uint64_t pg = VFIO_USER_DEF_PGSIZES;

	if (len == 0) {
		e.ok = true;
		return e;
	}
	/* exactly one NUL, the last byte */
	if (memchr(s, 0, len) != s + len - 1)
		return e;
	tok = json_tokener_new();
	root = json_tokener_parse_ex(tok, s, (int)len);
	/* the JSON text ends at the last non-whitespace byte before the NUL */
	size_t text_end = len - 1;
	while (text_end && strchr(" \t\r\n", s[text_end - 1]))
		text_end--;
	if (root && json_tokener_get_error(tok) == json_tokener_success &&
	    json_tokener_get_parse_end(tok) >= text_end &&
	    json_object_get_type(root) == json_type_object) {
		if (!json_object_object_get_ex(root, "capabilities", &caps)) {
			e.ok = true;
		} else if (json_object_get_type(caps) == json_type_object &&
			   cap_int(caps, "max_msg_fds", 0, 1024, NULL) &&
			   cap_int(caps, "max_data_xfer_size", 1, UINT32_MAX, NULL) &&
			   cap_int(caps, "pgsizes", 1, UINT64_MAX >> 1, &pg) &&
			   cap_int(caps, "max_dma_maps", 1, UINT32_MAX, &e.max_maps) &&
			   (pg & VCXL_SRV_PGSIZE)) {
			e.ok = true;
			if (json_object_object_get_ex(caps, "write_multiple", &o)) {
				e.ok = json_object_get_type(o) == json_type_boolean;
				e.wm = e.ok && json_object_get_boolean(o);
			}
			/* vcxl's (docs/migration.md section 2): a boolean too */
			if (json_object_object_get_ex(caps, "dirty_in_stop_copy", &o)) {
				bool b = json_object_get_type(o) == json_type_boolean;

				e.dirty = e.ok && b && json_object_get_boolean(o);
				e.ok = e.ok && b;
			}
		}
	}
	json_object_put(root);
	json_tokener_free(tok);
	return e;
}

static size_t put_msg(uint8_t *buf, uint16_t id, uint16_t cmd, const void *p1, size_t l1,
		      const void *p2, size_t l2)
{
	struct vfio_user_hdr h = {
	    .msg_id = id, .command = cmd, .msg_size = (uint32_t)(sizeof(h) + l1 + l2)};

	memcpy(buf, &h, sizeof(h));
	if (l1)
		memcpy(buf + sizeof(h), p1, l1);
	if (l2)
		memcpy(buf + sizeof(h) + l1, p2, l2);
	return sizeof(h) + l1 + l2;
}

/* The reply's capabilities object, or abort. */
static void check_server_caps(const char *s, size_t len, const struct expect *e)
{
	struct json_object *root, *caps, *o;
	int64_t v;

	if (!len || s[len - 1] || strlen(s) != len - 1)
		fz_fail("VERSION reply JSON not NUL-terminated");
	root = json_tokener_parse(s);
	if (!root || !json_object_object_get_ex(root, "capabilities", &caps) ||
	    json_object_get_type(caps) != json_type_object)
		fz_fail("VERSION reply without a capabilities object: %s", s);
	if (!json_object_object_get_ex(caps, "max_msg_fds", &o) ||
	    (v = json_object_get_int64(o)) < 1 || v > VCXL_SRV_MAX_MSG_FDS)
		fz_fail("reply max_msg_fds: %s", s);
	if (!json_object_object_get_ex(caps, "max_data_xfer_size", &o) ||
	    (v = json_object_get_int64(o)) < 1 || v > (int64_t)VCXL_SRV_MAX_XFER)
		fz_fail("reply max_data_xfer_size: %s", s);
	if (!json_object_object_get_ex(caps, "pgsizes", &o) ||
	    json_object_get_int64(o) != (int64_t)VCXL_SRV_PGSIZE)
		fz_fail("reply pgsizes: %s", s);
	if (!json_object_object_get_ex(caps, "max_dma_maps", &o) ||
	    (uint64_t)json_object_get_int64(o) !=
		(e->max_maps < FZ_SRV_MAPS ? e->max_maps : FZ_SRV_MAPS))
		fz_fail("reply max_dma_maps for a client offering %llu: %s",
			(unsigned long long)e->max_maps, s);
	o = NULL;
	if (json_object_object_get_ex(caps, "write_multiple", &o) != e->wm ||
	    (e->wm && !json_object_get_boolean(o)))
		fz_fail("write_multiple echoed wrongly (client %d): %s", e->wm, s);
	o = NULL;
	if (json_object_object_get_ex(caps, "dirty_in_stop_copy", &o) != e->dirty ||
	    (e->dirty && !json_object_get_boolean(o)))
		fz_fail("dirty_in_stop_copy echoed wrongly (client %d): %s", e->dirty, s);
	json_object_put(root);
}

/* Walk the replies: id 1 = VERSION, 2 = GET_INFO, 3 = second VERSION. */
static void check_replies(const struct vcxl_bufio *b, const struct expect *e, bool major_ok,
			  bool extra)
{
	size_t pos = 0;
	unsigned seen = 0;
	bool accepted = e->ok && major_ok;

	while (pos + sizeof(struct vfio_user_hdr) <= b->out_len) {
		struct vfio_user_hdr h;
		const uint8_t *p;
		size_t plen;

		memcpy(&h, b->out + pos, sizeof(h));
		if (h.msg_size < sizeof(h) || h.msg_size > b->out_len - pos ||
		    (h.flags & VFIO_USER_F_TYPE_MASK) != VFIO_USER_F_TYPE_REPLY)
			fz_fail("malformed reply (msg_size %u, flags 0x%x)", h.msg_size, h.flags);
		p = b->out + pos + sizeof(h);
		plen = h.msg_size - sizeof(h);
		if (h.msg_id != seen + 1)
			fz_fail("reply id %u, expected %u", h.msg_id, seen + 1);
		if (h.msg_id == 1) {
			if (accepted) {
				struct vfio_user_version v;

				if (h.flags & VFIO_USER_F_ERROR)
					fz_fail("valid capabilities refused with %u", h.error);
				if (plen < sizeof(v))
					fz_fail("VERSION reply of %zu bytes", plen);
				memcpy(&v, p, sizeof(v));
				if (v.major != 0 || v.minor != 0)
					fz_fail("server version %u.%u", v.major, v.minor);
				check_server_caps((const char *)p + sizeof(v), plen - sizeof(v), e);
			} else if (!(h.flags & VFIO_USER_F_ERROR) ||
				   h.error != (major_ok ? EINVAL : ENOTSUP)) {
				fz_fail("invalid VERSION answered flags 0x%x error %u", h.flags,
					h.error);
			}
		} else if (h.msg_id == 2) {
			if (!!(h.flags & VFIO_USER_F_ERROR) == accepted)
				fz_fail("GET_INFO after a %s VERSION: flags 0x%x error %u",
					accepted ? "good" : "bad", h.flags, h.error);
		} else if (accepted != !!(h.flags & VFIO_USER_F_ERROR) ||
			   (accepted && h.error != EINVAL)) {
			/* a second VERSION: refused after a good one, else negotiates */
			fz_fail("second VERSION after a %s one: flags 0x%x error %u",
				accepted ? "good" : "bad", h.flags, h.error);
		}
		seen++;
		pos += h.msg_size;
	}
	if (pos != b->out_len || seen != (extra ? 3u : 1u))
		fz_fail("%u replies, %zu stray bytes", seen, b->out_len - pos);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static uint8_t msg[3 * sizeof(struct vfio_user_hdr) + 2 * 4 + FZ_CAPS_MAX + 1 + 16];
	struct vfio_user_version v = {.major = 0, .minor = 0};
	struct vfio_user_device_info di = {.argsz = sizeof(di)};
	static char caps[FZ_CAPS_MAX + 1];
	struct vcxl_conn_cfg cfg = {.name = "fuzz"};
	struct vcxl_bufio b;
	struct vcxl_conn *c;
	struct expect e;
	size_t clen, len = 0;
	uint8_t mode;

	if (size < 1 || size - 1 > FZ_CAPS_MAX)
		return 0;
	fz_quiet();
	mode = data[0];
	clen = size - 1;
	memcpy(caps, data + 1, clen);
	if (!(mode & 1))
		caps[clen++] = 0;
	if (mode & 2)
		v.major = 1;
	e = expect_caps(caps, clen);
	len += put_msg(msg + len, 1, VFIO_USER_VERSION, &v, sizeof(v), caps, clen);
	if (mode & 4) {
		struct vfio_user_version v2 = {0, 0};

		len += put_msg(msg + len, 2, VFIO_USER_DEVICE_GET_INFO, &di, sizeof(di), NULL, 0);
		len += put_msg(msg + len, 3, VFIO_USER_VERSION, &v2, sizeof(v2), "{}", 3);
	}
	vcxl_bufio_init(&b, msg, len);
	c = vcxl_conn_create(&cfg, &stub_ops, NULL, &vcxl_buf_io_ops, &b);
	if (!c)
		fz_fail("vcxl_conn_create failed");
	while (!vcxl_conn_on_readable(c))
		;
	check_replies(&b, &e, v.major == 0, mode & 4);
	vcxl_conn_destroy(c);
	vcxl_bufio_fini(&b);
	return 0;
}
