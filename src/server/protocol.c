// SPDX-License-Identifier: BSD-3-Clause
/*
 * The vfio-user protocol layer: validates every field of a client's command
 * and dispatches it to the device through struct vcxl_dev_ops (VERSION,
 * DMA_MAP/UNMAP, device and region info, region access, DEVICE_RESET; the
 * IRQ commands are irq.c's).
 */
#include <errno.h>
#include <json-c/json.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "conn.h"

#define REGION_INDEX_STD_MAX VFIO_PCI_VGA_REGION_INDEX

bool conn_msg_no_fds(struct vcxl_conn *c, struct vcxl_msg *m)
{
	if (m->nfds || m->bad_fds) {
		proto_err(c, m, "%u unexpected fds", m->nfds);
		return false;
	}
	return true;
}

/* The common start of a handler: no fds, a payload of at least len bytes,
 * copied to dst. false (with the error reply set) otherwise. */
bool conn_msg_take(struct vcxl_conn *c, struct vcxl_msg *m, struct reply *r, void *dst, size_t len)
{
	if (!conn_msg_no_fds(c, m)) {
		reply_error(r, EINVAL);
		return false;
	}
	if (m->len < len) {
		proto_err(c, m, "payload %zu too short", m->len);
		reply_error(r, EINVAL);
		return false;
	}
	memcpy(dst, m->data, len);
	return true;
}

static int json_get_u64(struct json_object *caps, const char *key, uint64_t *v, uint64_t min,
			uint64_t max)
{
	struct json_object *o;
	int64_t x;

	if (!json_object_object_get_ex(caps, key, &o))
		return 0;
	if (!json_object_is_type(o, json_type_int))
		return -EINVAL;
	x = json_object_get_int64(o);
	if (x < 0 || (uint64_t)x < min || (uint64_t)x > max)
		return -EINVAL;
	*v = (uint64_t)x;
	return 0;
}

/* An optional boolean member: 0 (left alone when absent) or -EINVAL */
static int json_get_bool(struct json_object *caps, const char *key, bool *v)
{
	struct json_object *o;

	if (!json_object_object_get_ex(caps, key, &o))
		return 0;
	if (!json_object_is_type(o, json_type_boolean))
		return -EINVAL;
	*v = json_object_get_boolean(o);
	return 0;
}

/* vfio-user spec "VERSION": the client's capabilities */
static int version_parse_caps(struct vcxl_conn *c, struct vcxl_msg *m, const char *json, size_t len,
			      uint64_t *max_fds, uint64_t *max_xfer, uint64_t *pgsizes,
			      uint64_t *max_maps, bool *wm, bool *dirty)
{
	struct json_tokener *tok;
	struct json_object *root, *caps;
	int rc = -EINVAL;

	if (strnlen(json, len) != len - 1) {
		proto_err(c, m, "capabilities not a NUL-terminated string");
		return -EINVAL;
	}
	tok = json_tokener_new();
	if (!tok)
		return -ENOMEM;
	root = json_tokener_parse_ex(tok, json, (int)len);
	if (!root || json_tokener_get_error(tok) != json_tokener_success ||
	    !json_object_is_type(root, json_type_object)) {
		proto_err(c, m, "capabilities are not a JSON object");
		goto out;
	}
	/* one JSON object: after it, only whitespace up to the NUL */
	for (size_t i = json_tokener_get_parse_end(tok); i < len - 1; i++)
		if (!strchr(" \t\r\n", json[i])) {
			proto_err(c, m, "bytes after the capabilities object");
			goto out;
		}
	if (!json_object_object_get_ex(root, "capabilities", &caps)) {
		rc = 0;
		goto out;
	}
	if (!json_object_is_type(caps, json_type_object)) {
		proto_err(c, m, "\"capabilities\" is not an object");
		goto out;
	}
	if (json_get_u64(caps, "max_msg_fds", max_fds, 0, 1024) ||
	    json_get_u64(caps, "max_data_xfer_size", max_xfer, 1, UINT32_MAX) ||
	    json_get_u64(caps, "pgsizes", pgsizes, 1, UINT64_MAX >> 1) ||
	    json_get_u64(caps, "max_dma_maps", max_maps, 1, UINT32_MAX)) {
		proto_err(c, m, "bad capability value");
		goto out;
	}
	if (!(*pgsizes & VCXL_SRV_PGSIZE)) {
		proto_err(c, m, "pgsizes 0x%llx lacks 4 KiB", (unsigned long long)*pgsizes);
		goto out;
	}
	/* dirty_in_stop_copy is vcxl's: docs/migration.md section 2 */
	const struct {
		const char *key;
		bool *v;
	} flags[] = {{"write_multiple", wm}, {"dirty_in_stop_copy", dirty}};
	for (unsigned i = 0; i < sizeof(flags) / sizeof(flags[0]); i++)
		if (json_get_bool(caps, flags[i].key, flags[i].v)) {
			proto_err(c, m, "%s is not a boolean", flags[i].key);
			goto out;
		}
	rc = 0;
out:
	json_object_put(root);
	json_tokener_free(tok);
	return rc;
}

static int handle_version(struct vcxl_conn *c, struct vcxl_msg *m, struct reply *r)
{
	uint64_t max_fds = VFIO_USER_DEF_MAX_MSG_FDS, max_xfer = VFIO_USER_DEF_MAX_XFER;
	uint64_t pgsizes = VFIO_USER_DEF_PGSIZES, max_maps = VFIO_USER_DEF_MAX_DMA_MAPS;
	struct vfio_user_version v;
	struct json_object *root, *caps;
	const char *s;
	bool wm = false, dirty = false;
	size_t slen;

	if (c->negotiated) {
		proto_err(c, m, "version already negotiated");
		return reply_error(r, EINVAL);
	}
	if (!conn_msg_take(c, m, r, &v, sizeof(v)))
		return r->err;
	if (v.major != VFIO_USER_MAJOR) {
		proto_err(c, m, "unsupported major version %u", v.major);
		return reply_error(r, ENOTSUP);
	}
	if (m->len > sizeof(v) &&
	    version_parse_caps(c, m, (const char *)m->data + sizeof(v), m->len - sizeof(v),
			       &max_fds, &max_xfer, &pgsizes, &max_maps, &wm, &dirty))
		return reply_error(r, EINVAL);

	c->client_max_fds = (uint32_t)max_fds;
	c->client_max_xfer = (uint32_t)max_xfer;
	c->write_multi = wm;
	c->mig.dirty_in_data = dirty;
	if (max_maps < c->dma.max)
		c->dma.max = (unsigned)max_maps;

	root = json_object_new_object();
	caps = json_object_new_object();
	json_object_object_add(caps, "max_msg_fds", json_object_new_int64(c->cfg.max_msg_fds));
	json_object_object_add(caps, "max_data_xfer_size", json_object_new_int64(c->cfg.max_xfer));
	json_object_object_add(caps, "pgsizes", json_object_new_int64((int64_t)VCXL_SRV_PGSIZE));
	json_object_object_add(caps, "max_dma_maps", json_object_new_int64(c->dma.max));
	if (wm)
		json_object_object_add(caps, "write_multiple", json_object_new_boolean(1));
	if (dirty)
		json_object_object_add(caps, "dirty_in_stop_copy", json_object_new_boolean(1));
	json_object_object_add(root, "capabilities", caps);
	s = json_object_to_json_string_ext(root, JSON_C_TO_STRING_PLAIN);
	slen = strlen(s) + 1;
	if (sizeof(v) + slen > sizeof(r->small)) {
		json_object_put(root);
		return reply_error(r, ENOMEM);
	}
	v.major = VFIO_USER_MAJOR;
	/* minor = min(client's, ours); ours is 0, the only minor QEMU 10.2 takes */
	v.minor = VFIO_USER_MINOR;
	memcpy(r->small, &v, sizeof(v));
	memcpy(r->small + sizeof(v), s, slen);
	json_object_put(root);
	reply_payload(r, r->small, sizeof(v) + slen);
	c->negotiated = true;
	vcxl_log(VCXL_LOG_INFO, "%s: client negotiated: max_msg_fds %u max_data_xfer_size %u%s",
		 conn_name(c), c->client_max_fds, c->client_max_xfer, wm ? " write_multiple" : "");
	return 0;
}

/* A device that does its own DMA (a VFIO device behind an IOMMU) gets the
 * window mapped for it; windows without an fd it cannot reach. */
static int dma_map_device(struct vcxl_conn *c, uint64_t iova)
{
	struct vcxl_dma_map *dm = vcxl_dma_lookup(&c->dma, iova);
	int rc;

	if (!c->ops->dma_map || !dm)
		return 0;
	if (!dm->ptr) {
		/* QEMU maps its ROMs and the device's own BARs so, again at every
		 * remap: for a device that needs the fd, a client's warning,
		 * rate-limited as its protocol errors; the model reaches the window
		 * with DMA_READ/DMA_WRITE (vfio-user spec "DMA_MAP") */
		if (c->ops->dma_needs_fd && c->ops->dma_needs_fd(c->dev))
			vcxl_log_limited(&c->log_rl, conn_name(c), VCXL_LOG_WARN,
					 "%s: DMA window [0x%llx, +0x%llx) has no fd: the device "
					 "cannot reach it",
					 conn_name(c), (unsigned long long)dm->iova,
					 (unsigned long long)dm->size);
		else
			vcxl_log(VCXL_LOG_DEBUG,
				 "%s: DMA window [0x%llx, +0x%llx) has no fd: the device reaches "
				 "it by DMA_READ/DMA_WRITE",
				 conn_name(c), (unsigned long long)dm->iova,
				 (unsigned long long)dm->size);
		return 0;
	}
	/* the device's own mapping pins the window: within the pinned budget */
	if (c->cfg.max_dma_pinned &&
	    (dm->size > c->cfg.max_dma_pinned || c->pinned > c->cfg.max_dma_pinned - dm->size))
		return -EDQUOT;
	rc = c->ops->dma_map(c->dev, dm->iova, dm->size, dm->ptr,
			     dm->flags & VFIO_USER_F_DMA_REGION_WRITE);
	dm->dev_mapped = rc == 0;
	if (dm->dev_mapped)
		c->pinned += dm->size;
	return rc == -EOPNOTSUPP ? 0 : rc;
}

/* Every mapping that goes (unmap, unmap-all, disconnect) leaves the device too. */
void conn_dma_unmap_device(void *opaque, const struct vcxl_dma_map *dm)
{
	struct vcxl_conn *c = opaque;

	if (dm->dev_mapped)
		c->pinned -= dm->size;
	if (c->ops->dma_unmap && dm->dev_mapped)
		c->ops->dma_unmap(c->dev, dm->iova, dm->size);
}

/* Why a window was refused, for the log. */
static const char *dma_map_why(int rc)
{
	switch (rc) {
	case -ENOSPC:
		return "over the client's budget of DMA windows (--max-dma-windows)";
	case -EDQUOT:
		return "over the client's budget of mapped bytes (--max-dma-mapped)";
	case -EMFILE:
		return "over the client's budget of fds (--max-client-fds)";
	case -ENODEV:
		return "its fd is neither shared memory (memfd, tmpfs, hugetlbfs) nor device-DAX: "
		       "a copy from it could block the server";
	}
	return strerror(-rc);
}

/* vfio-user spec "DMA_MAP" */
static int handle_dma_map(struct vcxl_conn *c, struct vcxl_msg *m, struct reply *r)
{
	struct vfio_user_dma_map d;
	int fd = -1, rc;

	if (m->bad_fds || m->nfds > 1) {
		proto_err(c, m, "%u fds (at most 1)", m->nfds);
		return reply_error(r, EINVAL);
	}
	if (m->len < sizeof(d)) {
		proto_err(c, m, "payload %zu too short", m->len);
		return reply_error(r, EINVAL);
	}
	memcpy(&d, m->data, sizeof(d));
	if (d.argsz < sizeof(d) || d.argsz > m->len) {
		proto_err(c, m, "argsz %u", d.argsz);
		return reply_error(r, EINVAL);
	}
	if (m->nfds) {
		fd = m->fds[0];
		m->fds[0] = -1;
	}
	/* the client's fd budget holds its windows' fds and its eventfds */
	if (fd >= 0 && c->dma.budget.fds + c->irq_fds >= c->cfg.max_fds) {
		close(fd);
		proto_err(c, m, "map [0x%llx, +0x%llx): over the client's budget of %u fds",
			  (unsigned long long)d.addr, (unsigned long long)d.size, c->cfg.max_fds);
		return reply_error(r, EMFILE);
	}
	rc = vcxl_dma_add(&c->dma, d.addr, d.size, d.flags, fd, d.offset);
	if (rc) {
		proto_err(c, m, "map [0x%llx, +0x%llx) flags 0x%x: %s", (unsigned long long)d.addr,
			  (unsigned long long)d.size, d.flags, dma_map_why(rc));
		return reply_error(r, -rc);
	}
	rc = dma_map_device(c, d.addr);
	if (rc) {
		unsigned gone;
		proto_err(c, m, "device cannot map [0x%llx, +0x%llx): %s",
			  (unsigned long long)d.addr, (unsigned long long)d.size,
			  rc == -EDQUOT
			      ? "over the client's budget of pinned bytes (--max-dma-pinned)"
			      : strerror(-rc));
		vcxl_dma_remove_range(&c->dma, d.addr, d.size, &gone);
		return reply_error(r, -rc);
	}
	vcxl_log(VCXL_LOG_DEBUG, "%s: dma map [0x%llx, +0x%llx) flags 0x%x fd %d", conn_name(c),
		 (unsigned long long)d.addr, (unsigned long long)d.size, d.flags, fd);
	return 0;
}

/* vfio-user spec "DMA_UNMAP"; QEMU also sends VFIO_DMA_UNMAP_FLAG_ALL */
static int handle_dma_unmap(struct vcxl_conn *c, struct vcxl_msg *m, struct reply *r)
{
	struct vfio_user_dma_unmap d;
	int rc = 0;

	if (!conn_msg_take(c, m, r, &d, sizeof(d)))
		return r->err;
	if (d.argsz < sizeof(d) || (d.flags & ~VFIO_DMA_UNMAP_FLAG_ALL)) {
		proto_err(c, m, "argsz %u flags 0x%x", d.argsz, d.flags);
		return reply_error(r, EINVAL);
	}
	if (d.flags & VFIO_DMA_UNMAP_FLAG_ALL) {
		if (d.addr || d.size) {
			proto_err(c, m, "unmap-all with a range");
			return reply_error(r, EINVAL);
		}
		vcxl_dma_remove_all(&c->dma);
	} else {
		unsigned removed = 0;
		rc = vcxl_dma_remove_range(&c->dma, d.addr, d.size, &removed);
		if (!rc && !removed)
			vcxl_log(VCXL_LOG_DEBUG, "%s: DMA_UNMAP [0x%llx, +0x%llx): nothing mapped",
				 c->cfg.name ? c->cfg.name : "dev", (unsigned long long)d.addr,
				 (unsigned long long)d.size);
	}
	if (rc) {
		proto_err(c, m, "range [0x%llx, +0x%llx) splits a mapping",
			  (unsigned long long)d.addr, (unsigned long long)d.size);
		return reply_error(r, -rc);
	}
	d.argsz = sizeof(d);
	memcpy(r->small, &d, sizeof(d));
	reply_payload(r, r->small, sizeof(d));
	return 0;
}

/* vfio-user spec "DEVICE_GET_INFO" + the vfio-cxl device capability */
static int handle_get_info(struct vcxl_conn *c, struct vcxl_msg *m, struct reply *r)
{
	struct vcxl_vdev_info vi;
	struct vfio_user_device_info info;
	uint32_t argsz, full;
	bool has_cap;

	if (!conn_msg_no_fds(c, m))
		return reply_error(r, EINVAL);
	if (m->len < VFIO_USER_DEVICE_INFO_MIN) {
		proto_err(c, m, "payload %zu too short", m->len);
		return reply_error(r, EINVAL);
	}
	memcpy(&argsz, m->data, sizeof(argsz));
	if (argsz < VFIO_USER_DEVICE_INFO_MIN) {
		proto_err(c, m, "argsz %u", argsz);
		return reply_error(r, EINVAL);
	}
	memset(&vi, 0, sizeof(vi));
	c->ops->get_info(c->dev, &vi);
	has_cap = vi.cxl.header.id == VFIO_DEVICE_INFO_CAP_CXL;
	full = has_cap ? sizeof(info) + sizeof(vi.cxl) : VFIO_USER_DEVICE_INFO_MIN;
	memset(&info, 0, sizeof(info));
	info.argsz = full;
	info.flags = vi.flags | (has_cap ? VFIO_DEVICE_FLAGS_CAPS : 0);
	info.num_regions = vi.num_regions;
	info.num_irqs = vi.num_irqs;
	if (has_cap && argsz >= full) {
		info.cap_offset = sizeof(info);
		vi.cxl.header.next = 0;
		memcpy(r->small, &info, sizeof(info));
		memcpy(r->small + sizeof(info), &vi.cxl, sizeof(vi.cxl));
		reply_payload(r, r->small, full);
		return 0;
	}
	memcpy(r->small, &info, sizeof(info));
	reply_payload(r, r->small, argsz < sizeof(info) ? VFIO_USER_DEVICE_INFO_MIN : sizeof(info));
	if (!has_cap)
		r->iov[0].iov_len = VFIO_USER_DEVICE_INFO_MIN;
	return 0;
}

/* Append one capability to a chain being built in buf; returns its offset. */
static uint32_t cap_append(uint8_t *buf, uint32_t *len, uint32_t *last_next, uint16_t id,
			   uint16_t version, const void *body, uint32_t body_len)
{
	struct vfio_info_cap_header h = {.id = id, .version = version, .next = 0};
	uint32_t off = *len;

	if (last_next)
		memcpy(buf + *last_next, &off, sizeof(off));
	memcpy(buf + off, &h, sizeof(h));
	memcpy(buf + off + sizeof(h), body, body_len);
	*len += (uint32_t)(sizeof(h) + body_len);
	return off + (uint32_t)offsetof(struct vfio_info_cap_header, next);
}

/* vfio-user spec "DEVICE_GET_REGION_INFO": sparse-mmap and type caps, argsz retry */
static int handle_region_info(struct vcxl_conn *c, struct vcxl_msg *m, struct reply *r)
{
	struct vfio_region_info req, info;
	struct vcxl_vregion_info ri;
	uint32_t len = sizeof(info), next_at = 0, *last = NULL;
	int rc;

	if (!conn_msg_take(c, m, r, &req, sizeof(req)))
		return r->err;
	if (req.argsz < sizeof(req)) {
		proto_err(c, m, "argsz %u", req.argsz);
		return reply_error(r, EINVAL);
	}
	if (req.index >= c->num_regions) {
		proto_err(c, m, "region index %u of %u", req.index, c->num_regions);
		return reply_error(r, EINVAL);
	}
	memset(&ri, 0, sizeof(ri));
	ri.fd = -1;
	rc = c->ops->region_info(c->dev, req.index, &ri);
	if (rc) {
		if (req.index > REGION_INDEX_STD_MAX) {
			proto_err(c, m, "region %u: %s", req.index, strerror(-rc));
			return reply_error(r, -rc);
		}
		memset(&ri, 0, sizeof(ri)); /* absent standard region: size 0 */
		ri.fd = -1;
	}
	if (!ri.size) {
		ri.flags = 0;
		ri.nr_sparse = 0;
		ri.has_type = false;
		ri.has_comp = false;
	}
	if (!(ri.flags & VFIO_REGION_INFO_FLAG_MMAP) || ri.fd < 0) {
		ri.flags &= ~VFIO_REGION_INFO_FLAG_MMAP;
		ri.nr_sparse = 0;
		ri.fd = -1;
	}
	if (ri.nr_sparse > VCXL_MAX_SPARSE)
		ri.nr_sparse = VCXL_MAX_SPARSE;

	memset(&info, 0, sizeof(info));
	info.index = req.index;
	info.flags = ri.flags & (VFIO_REGION_INFO_FLAG_READ | VFIO_REGION_INFO_FLAG_WRITE |
				 VFIO_REGION_INFO_FLAG_MMAP);
	info.size = ri.size;
	info.offset = ri.fd >= 0 ? ri.fd_offset : 0;
	if (ri.nr_sparse) {
		uint8_t body[8 + 16 * VCXL_MAX_SPARSE];
		uint32_t nr = ri.nr_sparse, zero = 0;

		memcpy(body, &nr, 4);
		memcpy(body + 4, &zero, 4);
		for (unsigned i = 0; i < nr; i++) {
			struct vfio_region_sparse_mmap_area a = {.offset = ri.sparse[i].offset,
								 .size = ri.sparse[i].size};

			memcpy(body + 8 + 16 * i, &a, sizeof(a));
		}
		next_at = cap_append(r->small, &len, NULL, VFIO_REGION_INFO_CAP_SPARSE_MMAP, 1,
				     body, 8 + 16 * nr);
		last = &next_at;
	}
	if (ri.has_type) {
		uint32_t body[2] = {ri.type, ri.subtype};

		next_at = cap_append(r->small, &len, last, VFIO_REGION_INFO_CAP_TYPE, 1, body,
				     sizeof(body));
		last = &next_at;
	}
	if (ri.has_comp)
		next_at =
		    cap_append(r->small, &len, last, ri.comp.header.id, ri.comp.header.version,
			       (const uint8_t *)&ri.comp + sizeof(ri.comp.header),
			       sizeof(ri.comp) - sizeof(ri.comp.header));
	info.argsz = len;
	if (len > sizeof(info) && req.argsz >= len) {
		info.flags |= VFIO_REGION_INFO_FLAG_CAPS;
		info.cap_offset = sizeof(info);
	} else {
		/* Too small: the fixed part with argsz = the size needed. CAPS
		 * stays clear (no chain follows; QEMU rejects CAPS with
		 * cap_offset 0) and the client retries with the larger argsz. */
		len = sizeof(info);
	}
	memcpy(r->small, &info, sizeof(info));
	reply_payload(r, r->small, len);
	r->fd = ri.fd;
	return 0;
}

static int region_access_check(struct vcxl_conn *c, struct vcxl_msg *m,
			       const struct vfio_user_region_access *a)
{
	if (a->count > c->cfg.max_xfer) {
		proto_err(c, m, "count %u above max_data_xfer_size %u", a->count, c->cfg.max_xfer);
		return E2BIG;
	}
	if (!a->count || a->region >= c->num_regions || a->offset + a->count < a->offset) {
		proto_err(c, m, "region %u offset 0x%llx count %u", a->region,
			  (unsigned long long)a->offset, a->count);
		return EINVAL;
	}
	return 0;
}

/* vfio-user spec "REGION_READ" */
static int handle_region_read(struct vcxl_conn *c, struct vcxl_msg *m, struct reply *r)
{
	struct vfio_user_region_access a;
	uint8_t *buf;
	int rc;

	if (!conn_msg_no_fds(c, m))
		return reply_error(r, EINVAL);
	if (m->len != sizeof(a)) {
		proto_err(c, m, "payload %zu, expected %zu", m->len, sizeof(a));
		return reply_error(r, EINVAL);
	}
	memcpy(&a, m->data, sizeof(a));
	rc = region_access_check(c, m, &a);
	if (rc)
		return reply_error(r, rc);
	void *direct = c->ops->region_ptr && sizeof(a) + a.count > sizeof(r->small)
			   ? c->ops->region_ptr(c->dev, a.region, a.offset, a.count)
			   : NULL;
	if (direct) {
		/* memory-backed region: the reply is sent straight from its mapping */
		memcpy(r->small, &a, sizeof(a));
		reply_payload(r, r->small, sizeof(a));
		reply_payload(r, direct, a.count);
		return 0;
	}
	if (sizeof(a) + a.count <= sizeof(r->small)) {
		buf = r->small;
	} else {
		buf = r->heap = malloc(sizeof(a) + a.count);
		if (!buf)
			return reply_error(r, ENOMEM);
	}
	rc = c->ops->region_read(c->dev, a.region, a.offset, buf + sizeof(a), a.count);
	if (rc < 0) {
		proto_err(c, m, "read region %u [0x%llx, +%u): %s", a.region,
			  (unsigned long long)a.offset, a.count, strerror(-rc));
		return reply_error(r, -rc);
	}
	memcpy(buf, &a, sizeof(a));
	reply_payload(r, buf, sizeof(a) + a.count);
	return 0;
}

/* vfio-user spec "REGION_WRITE" (posted when NO_REPLY) */
static int handle_region_write(struct vcxl_conn *c, struct vcxl_msg *m, struct reply *r)
{
	struct vfio_user_region_access a;
	int rc;

	if (!conn_msg_take(c, m, r, &a, sizeof(a)))
		return r->err;
	rc = region_access_check(c, m, &a);
	if (rc)
		return reply_error(r, rc);
	if (m->len != sizeof(a) + a.count) {
		proto_err(c, m, "payload %zu for count %u", m->len, a.count);
		return reply_error(r, EINVAL);
	}
	rc = c->ops->region_write(c->dev, a.region, a.offset, m->data + sizeof(a), a.count);
	if (rc < 0) {
		proto_err(c, m, "write region %u [0x%llx, +%u): %s", a.region,
			  (unsigned long long)a.offset, a.count, strerror(-rc));
		return reply_error(r, -rc);
	}
	memcpy(r->small, &a, sizeof(a));
	reply_region_write(r, r->small);
	return 0;
}

/* The loop's other clients wait while this one's entries run: a write may
 * start a device's job and run its first step (4 MiB of a FILL), so after
 * CONN_STEP_US of them the handler yields one turn (it runs on the
 * coroutine, conn_may_block). */
static int64_t mono_us(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000000 + ts.tv_nsec / 1000;
}

static void write_multi_yield_if_due(struct vcxl_conn *c, int64_t *since_us)
{
	if (mono_us() - *since_us < CONN_STEP_US)
		return;
	conn_pause(c);
	*since_us = mono_us();
}

/* vfio-user spec "REGION_WRITE_MULTI" */
static int handle_write_multi(struct vcxl_conn *c, struct vcxl_msg *m, struct reply *r)
{
	const size_t esz = sizeof(struct vfio_user_wr_multi_entry);
	uint64_t cnt;
	int first = 0;
	int64_t since_us = mono_us();

	/* vfio-user spec "VERSION": only a client that offered write_multiple sends it */
	if (!c->write_multi) {
		proto_err(c, m, "write_multiple was not negotiated");
		return reply_error(r, ENOSYS);
	}
	if (!conn_msg_take(c, m, r, &cnt, sizeof(cnt)))
		return r->err;
	if (!cnt || cnt > VFIO_USER_MULTI_MAX || m->len != sizeof(cnt) + cnt * esz) {
		proto_err(c, m, "wr_cnt %llu in %zu bytes", (unsigned long long)cnt, m->len);
		return reply_error(r, EINVAL);
	}
	for (uint64_t i = 0; i < cnt; i++) {
		struct vfio_user_wr_multi_entry e;
		int rc;

		if (i)
			write_multi_yield_if_due(c, &since_us);
		if (c->dead)
			return reply_error(r, ECONNRESET); /* gone meanwhile: nobody to answer */
		memcpy(&e, m->data + sizeof(cnt) + i * esz, esz);
		if (!e.count || e.count > VFIO_USER_MULTI_DATA || e.region >= c->num_regions ||
		    e.offset + e.count < e.offset) {
			proto_err(c, m, "entry %llu: region %u count %u", (unsigned long long)i,
				  e.region, e.count);
			if (!first)
				first = EINVAL;
			continue;
		}
		rc = c->ops->region_write(c->dev, e.region, e.offset, e.data, e.count);
		if (rc < 0 && !first) {
			proto_err(c, m, "entry %llu: %s", (unsigned long long)i, strerror(-rc));
			first = -rc;
		}
	}
	if (first)
		return reply_error(r, first);
	memcpy(r->small, &cnt, sizeof(cnt));
	reply_payload(r, r->small, sizeof(cnt));
	return 0;
}

/* vfio-user spec "DEVICE_RESET" */
static int handle_reset(struct vcxl_conn *c, struct vcxl_msg *m, struct reply *r)
{
	int rc;

	if (!conn_msg_no_fds(c, m))
		return reply_error(r, EINVAL);
	if (m->len) {
		proto_err(c, m, "payload %zu, expected none", m->len);
		return reply_error(r, EINVAL);
	}
	rc = c->ops->reset(c->dev);
	if (rc) {
		proto_err(c, m, "reset: %s", strerror(-rc));
		return reply_error(r, -rc);
	}
	conn_irq_rearm_all(c);
	/* vfio-user spec: DEVICE_RESET is the way out of ERROR, back to RUNNING */
	conn_mig_reset(c);
	vcxl_log(VCXL_LOG_INFO, "%s: device reset", conn_name(c));
	return 0;
}

void conn_handle_request(struct vcxl_conn *c, struct vcxl_msg *m)
{
	struct reply r = {.fd = -1};
	bool no_reply = m->hdr.flags & VFIO_USER_F_NO_REPLY;

	c->st.msgs++;
	c->st.by_cmd[m->hdr.command < VCXL_STATS_CMDS ? m->hdr.command : 0]++;
	if ((m->hdr.flags & ~VFIO_USER_F_KNOWN) || (m->hdr.flags & VFIO_USER_F_ERROR) ||
	    m->hdr.error) {
		proto_err(c, m, "flags 0x%x error %u in a command", m->hdr.flags, m->hdr.error);
		reply_error(&r, EINVAL);
	} else if (!c->negotiated && m->hdr.command != VFIO_USER_VERSION) {
		proto_err(c, m, "command before VERSION");
		reply_error(&r, EINVAL);
	} else {
		conn_mig_before_request(c, m->hdr.command);
		switch (m->hdr.command) {
		case VFIO_USER_VERSION:
			handle_version(c, m, &r);
			break;
		case VFIO_USER_DMA_MAP:
			handle_dma_map(c, m, &r);
			break;
		case VFIO_USER_DMA_UNMAP:
			handle_dma_unmap(c, m, &r);
			break;
		case VFIO_USER_DEVICE_GET_INFO:
			handle_get_info(c, m, &r);
			break;
		case VFIO_USER_DEVICE_GET_REGION_INFO:
			handle_region_info(c, m, &r);
			break;
		case VFIO_USER_DEVICE_GET_IRQ_INFO:
			conn_handle_irq_info(c, m, &r);
			break;
		case VFIO_USER_DEVICE_SET_IRQS:
			conn_handle_set_irqs(c, m, &r);
			break;
		case VFIO_USER_REGION_READ:
			handle_region_read(c, m, &r);
			break;
		case VFIO_USER_REGION_WRITE:
			handle_region_write(c, m, &r);
			break;
		case VFIO_USER_REGION_WRITE_MULTI:
			handle_write_multi(c, m, &r);
			break;
		case VFIO_USER_DEVICE_RESET:
			handle_reset(c, m, &r);
			break;
		case VFIO_USER_DEVICE_FEATURE:
			conn_handle_device_feature(c, m, &r);
			break;
		case VFIO_USER_MIG_DATA_READ:
			conn_handle_mig_data_read(c, m, &r);
			break;
		case VFIO_USER_MIG_DATA_WRITE:
			conn_handle_mig_data_write(c, m, &r);
			break;
		case VFIO_USER_DMA_READ:
		case VFIO_USER_DMA_WRITE:
			proto_err(c, m, "server-to-client command sent by the client");
			reply_error(&r, EINVAL);
			break;
		default:
			proto_err(c, m, "unsupported command %u", m->hdr.command);
			reply_error(&r, ENOSYS);
			break;
		}
	}
	if (r.err)
		c->st.proto_errors++;
	if (c->co_req == m && c->co_req_acked) {
		if (r.err) /* the write was acknowledged before what it started failed */
			vcxl_log(VCXL_LOG_WARN, "%s: REGION_WRITE id %u acknowledged, then: %s",
				 conn_name(c), m->hdr.msg_id, strerror(r.err));
	} else if (!no_reply) {
		conn_send_reply(c, m, &r);
	}
	free(r.heap);
	conn_msg_free(m); /* closes any fd a handler did not take */
	conn_mig_after_reply(c);
}
