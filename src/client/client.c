// SPDX-License-Identifier: BSD-3-Clause
/* vfio-user client library (see include/vcxl/client.h). */
#include <errno.h>
#include <json-c/json.h>
#include <poll.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "vcxl/client.h"
#include "server/server.h"

#define CLIENT_TIMEOUT_MS 10000
#define CLIENT_RBUF	  4096
#define CLIENT_MAX_MAPS	  64
#define CLIENT_MAX_MSG	  ((64u << 20) + 4096)

/* What QEMU 10.2 proposes (hw/vfio-user/proxy.c caps_json()) */
static const char qemu_caps[] =
    "{\"capabilities\":{\"migration\":{\"pgsize\":4096,\"max_bitmap_size\":268435456},"
    "\"max_msg_fds\":16,\"max_data_xfer_size\":1048576,\"pgsizes\":4096,"
    "\"max_dma_maps\":65535,\"write_multiple\":true}}";

struct client_map {
	uint64_t iova, size;
	uint32_t flags;
	uint8_t *mem;
};

struct vcxl_client {
	int fd;
	uint16_t next_id;
	struct vcxl_client_caps caps;
	struct client_map maps[CLIENT_MAX_MAPS];
	unsigned nmaps;
	uint64_t dma_requests;
	vcxl_client_trace_fn trace;
	void *trace_opaque;
	bool rcvtimeo; /* SO_RCVTIMEO holds the default timeout */
	/* Read-ahead: one recvmsg usually brings a whole reply. fds that came
	 * with a read belong to the message holding that read's last byte: the
	 * kernel ends a read right after the segment that carried them, and a
	 * sender attaches them to the one sendmsg of their message. */
	uint8_t rbuf[CLIENT_RBUF];
	size_t rb_off, rb_len;
	uint64_t rb_pos; /* stream offset of rbuf[0] */
	int pfds[VCXL_CLIENT_MAX_SPARSE];
	unsigned pnfds;
	bool pctrunc, pfd_have;
	uint64_t pfd_owner; /* stream offset of the last byte of their read */
	/* REGION_READ straight into the caller's buffer (no payload copy) */
	void *direct_dst;
	size_t direct_len;
	uint16_t direct_id;
	bool direct_done;
};

static void trace_msg(struct vcxl_client *c, bool sent, const struct iovec *iov, int n)
{
	size_t total = 0, off = 0;
	uint8_t *buf;

	if (!c->trace)
		return;
	for (int i = 0; i < n; i++)
		total += iov[i].iov_len;
	buf = malloc(total ? total : 1);
	if (!buf)
		return;
	for (int i = 0; i < n; i++) {
		memcpy(buf + off, iov[i].iov_base, iov[i].iov_len);
		off += iov[i].iov_len;
	}
	c->trace(c->trace_opaque, sent, buf, total);
	free(buf);
}

void vcxl_client_set_trace(struct vcxl_client *c, vcxl_client_trace_fn fn, void *opaque)
{
	c->trace = fn;
	c->trace_opaque = opaque;
}

int vcxl_client_fd(const struct vcxl_client *c)
{
	return c->fd;
}

const struct vcxl_client_caps *vcxl_client_server_caps(const struct vcxl_client *c)
{
	return &c->caps;
}

uint64_t vcxl_client_dma_requests(const struct vcxl_client *c)
{
	return c->dma_requests;
}

void vcxl_client_reply_free(struct vcxl_client_reply *rep)
{
	if (!rep)
		return;
	free(rep->data);
	rep->data = NULL;
	for (unsigned i = 0; i < rep->nfds; i++)
		close(rep->fds[i]);
	rep->nfds = 0;
}

static int client_wait(struct vcxl_client *c, int timeout_ms)
{
	struct pollfd p = {.fd = c->fd, .events = POLLIN};
	int rc;

	do {
		rc = poll(&p, 1, timeout_ms);
	} while (rc < 0 && errno == EINTR);
	if (rc < 0)
		return -errno;
	return rc == 0 ? -ETIMEDOUT : 0;
}

/* Read more bytes into the read-ahead buffer (one recvmsg). */
static int client_fill(struct vcxl_client *c)
{
	int fds[VCXL_CLIENT_MAX_SPARSE];
	unsigned nf = 0;
	bool ct = false;
	ssize_t n;

	if (c->rb_off) {
		memmove(c->rbuf, c->rbuf + c->rb_off, c->rb_len - c->rb_off);
		c->rb_pos += c->rb_off;
		c->rb_len -= c->rb_off;
		c->rb_off = 0;
	}
	n = vcxl_sock_recv_some(c->fd, c->rbuf + c->rb_len, sizeof(c->rbuf) - c->rb_len, fds,
				VCXL_CLIENT_MAX_SPARSE, &nf, &ct);
	if (n == -EAGAIN || n == -EWOULDBLOCK)
		return -ETIMEDOUT;
	if (n < 0)
		return (int)n;
	if (n == 0)
		return -ECONNRESET;
	c->rb_len += (size_t)n;
	if (nf || ct) {
		if (c->pfd_have) { /* a second set before the first was claimed: refuse it */
			for (unsigned i = 0; i < nf; i++)
				close(fds[i]);
			c->pctrunc = true;
			return 0;
		}
		memcpy(c->pfds, fds, sizeof(int) * nf);
		c->pnfds = nf;
		c->pctrunc = ct;
		c->pfd_have = true;
		c->pfd_owner = c->rb_pos + c->rb_len - 1;
	}
	return 0;
}

/* Place payload bytes [at, at+n) of the message being received. */
static void client_put(struct vcxl_client_reply *rep, uint8_t *direct, size_t split, size_t at,
		       const uint8_t *src, size_t n)
{
	if (at < split) {
		size_t k = split - at < n ? split - at : n;
		memcpy(rep->data + at, src, k);
		at += k;
		src += k;
		n -= k;
	}
	if (n)
		memcpy(direct + (at - split), src, n);
}

/* Read one whole message (header, payload, fds). */
static int client_recv_msg(struct vcxl_client *c, struct vcxl_client_reply *rep, int timeout_ms)
{
	bool ctrunc = false;
	int rc;

	memset(rep, 0, sizeof(*rep));
	uint64_t start = c->rb_pos + c->rb_off;
	while (c->rb_len - c->rb_off < sizeof(rep->hdr)) {
		/* With SO_RCVTIMEO set to the default timeout, the receive waits by itself. */
		if (!(c->rcvtimeo && timeout_ms == CLIENT_TIMEOUT_MS)) {
			rc = client_wait(c, timeout_ms);
			if (rc)
				return rc;
		}
		rc = client_fill(c);
		if (rc)
			return rc;
	}
	memcpy(&rep->hdr, c->rbuf + c->rb_off, sizeof(rep->hdr));
	c->rb_off += sizeof(rep->hdr);
	if (rep->hdr.msg_size < sizeof(rep->hdr) || rep->hdr.msg_size > CLIENT_MAX_MSG) {
		rc = -EPROTO;
		goto fail;
	}
	rep->len = rep->hdr.msg_size - sizeof(rep->hdr);
	/* A REGION_READ reply we wait for: the data goes straight to the caller. */
	uint8_t *direct = NULL;
	size_t split = rep->len;
	if (c->direct_dst && rep->hdr.msg_id == c->direct_id &&
	    (rep->hdr.flags & VFIO_USER_F_TYPE_MASK) == VFIO_USER_F_TYPE_REPLY &&
	    !(rep->hdr.flags & VFIO_USER_F_ERROR) && !c->trace &&
	    rep->len == sizeof(struct vfio_user_region_access) + c->direct_len) {
		direct = c->direct_dst;
		split = sizeof(struct vfio_user_region_access);
	}
	if (split) {
		rep->data = malloc(split);
		if (!rep->data) {
			rc = -ENOMEM;
			goto fail;
		}
	}
	size_t have = c->rb_len - c->rb_off;
	size_t take = have < rep->len ? have : rep->len;
	client_put(rep, direct, split, 0, c->rbuf + c->rb_off, take);
	c->rb_off += take;
	if (take < rep->len) {
		/* the rest is read exactly, into place */
		size_t at = take;
		if (at < split) {
			rc = vcxl_sock_recv_all(c->fd, rep->data + at, split - at, rep->fds,
						VCXL_CLIENT_MAX_SPARSE, &rep->nfds, &ctrunc);
			if (rc)
				goto fail;
			at = split;
		}
		if (at < rep->len) {
			rc = vcxl_sock_recv_all(
			    c->fd, direct ? direct + (at - split) : rep->data + at, rep->len - at,
			    rep->fds, VCXL_CLIENT_MAX_SPARSE, &rep->nfds, &ctrunc);
			if (rc)
				goto fail;
		}
		c->rb_pos += c->rb_off;
		c->rb_off = c->rb_len = 0;
		c->rb_pos += rep->len - take;
	}
	/* fds that came with the read ending inside this message are its own */
	if (c->pfd_have && c->pfd_owner >= start && c->pfd_owner < start + rep->hdr.msg_size) {
		for (unsigned i = 0; i < c->pnfds; i++) {
			if (rep->nfds < VCXL_CLIENT_MAX_SPARSE)
				rep->fds[rep->nfds++] = c->pfds[i];
			else
				close(c->pfds[i]);
		}
		ctrunc |= c->pctrunc;
		c->pfd_have = false;
		c->pnfds = 0;
	}
	if (direct) {
		rep->len = split;
		c->direct_done = true;
		return ctrunc ? -EPROTO : 0;
	}
	if (c->trace) {
		struct iovec iov[2] = {{&rep->hdr, sizeof(rep->hdr)}, {rep->data, rep->len}};

		trace_msg(c, false, iov, 2);
	}
	return 0;
fail:
	vcxl_client_reply_free(rep);
	return rc;
}

static int client_send(struct vcxl_client *c, struct iovec *iov, int n, const int *fds,
		       unsigned nfds)
{
	trace_msg(c, true, iov, n);
	return vcxl_sock_send_all(c->fd, iov, n, fds, nfds);
}

static struct client_map *client_find_map(struct vcxl_client *c, uint64_t addr, uint64_t len)
{
	for (unsigned i = 0; i < c->nmaps; i++) {
		struct client_map *m = &c->maps[i];

		if (m->mem && addr >= m->iova && len <= m->size && addr - m->iova <= m->size - len)
			return m;
	}
	return NULL;
}

static int client_send_hdr_reply(struct vcxl_client *c, const struct vfio_user_hdr *req, int err)
{
	struct vfio_user_hdr h = {.msg_id = req->msg_id,
				  .command = req->command,
				  .msg_size = sizeof(h),
				  .flags = VFIO_USER_F_TYPE_REPLY | (err ? VFIO_USER_F_ERROR : 0),
				  .error = (uint32_t)err};
	struct iovec iov = {&h, sizeof(h)};

	return client_send(c, &iov, 1, NULL, 0);
}

/* Answer DMA_READ/DMA_WRITE the way QEMU 10.x does ({u64; u32; data; pad4}). */
static int client_serve_request(struct vcxl_client *c, struct vcxl_client_reply *req)
{
	struct vfio_user_dma_rw rw;
	struct client_map *m;
	uint8_t pad[VFIO_USER_DMA_RW_PAD] = {0};
	bool wr = req->hdr.command == VFIO_USER_DMA_WRITE;

	c->dma_requests++;
	if (req->nfds)
		return client_send_hdr_reply(c, &req->hdr, EINVAL);
	if (req->hdr.command != VFIO_USER_DMA_READ && !wr)
		return client_send_hdr_reply(c, &req->hdr, ENOSYS);
	if (req->len < sizeof(rw) + VFIO_USER_DMA_RW_PAD)
		return client_send_hdr_reply(c, &req->hdr, EINVAL);
	memcpy(&rw, req->data, sizeof(rw));
	if (rw.count > c->caps.max_data_xfer_size && rw.count > VFIO_USER_DEF_MAX_XFER)
		return client_send_hdr_reply(c, &req->hdr, E2BIG);
	if (wr && req->len < sizeof(rw) + rw.count + VFIO_USER_DMA_RW_PAD)
		return client_send_hdr_reply(c, &req->hdr, E2BIG);
	m = client_find_map(c, rw.addr, rw.count);
	if (!m || !(m->flags & (wr ? VFIO_USER_F_DMA_REGION_WRITE : VFIO_USER_F_DMA_REGION_READ)))
		return client_send_hdr_reply(c, &req->hdr, EFAULT);
	if (wr) {
		memcpy(m->mem + (rw.addr - m->iova), req->data + sizeof(rw), rw.count);
		return client_send_hdr_reply(c, &req->hdr, 0);
	} else {
		struct vfio_user_hdr h = {
		    .msg_id = req->hdr.msg_id,
		    .command = req->hdr.command,
		    .msg_size = (uint32_t)(sizeof(h) + sizeof(rw) + rw.count + sizeof(pad)),
		    .flags = VFIO_USER_F_TYPE_REPLY};
		struct iovec iov[4] = {{&h, sizeof(h)},
				       {&rw, sizeof(rw)},
				       {m->mem + (rw.addr - m->iova), rw.count},
				       {pad, sizeof(pad)}};

		return client_send(c, iov, 4, NULL, 0);
	}
}

int vcxl_client_recv_reply(struct vcxl_client *c, struct vcxl_client_reply *rep, int timeout_ms)
{
	for (;;) {
		int rc = client_recv_msg(c, rep, timeout_ms);

		if (rc)
			return rc;
		if ((rep->hdr.flags & VFIO_USER_F_TYPE_MASK) == VFIO_USER_F_TYPE_REPLY)
			return 0;
		rc = client_serve_request(c, rep);
		vcxl_client_reply_free(rep);
		if (rc)
			return rc;
	}
}

int vcxl_client_poll(struct vcxl_client *c, int timeout_ms)
{
	int handled = 0;

	for (;;) {
		struct vcxl_client_reply rep;
		int rc = client_recv_msg(c, &rep, handled ? 0 : timeout_ms);

		if (rc == -ETIMEDOUT)
			return handled;
		if (rc)
			return rc;
		if ((rep.hdr.flags & VFIO_USER_F_TYPE_MASK) != VFIO_USER_F_TYPE_REPLY) {
			rc = client_serve_request(c, &rep);
			handled++;
		}
		vcxl_client_reply_free(&rep);
		if (rc)
			return rc;
	}
}

/* Send a request and wait for its reply (serving DMA requests meanwhile). */
static int client_xchg(struct vcxl_client *c, uint16_t cmd, uint32_t flags,
		       const struct iovec *payload, int npay, const int *fds, unsigned nfds,
		       struct vcxl_client_reply *rep)
{
	struct vfio_user_hdr h = {
	    .msg_id = c->next_id++, .command = cmd, .flags = VFIO_USER_F_TYPE_CMD | flags};
	struct iovec iov[6] = {{&h, sizeof(h)}};
	int rc;

	h.msg_size = sizeof(h);
	for (int i = 0; i < npay && i < 5; i++) {
		iov[i + 1] = payload[i];
		h.msg_size += (uint32_t)payload[i].iov_len;
	}
	rc = client_send(c, iov, npay + 1, fds, nfds);
	if (rc || (flags & VFIO_USER_F_NO_REPLY))
		return rc;
	for (;;) {
		rc = vcxl_client_recv_reply(c, rep, CLIENT_TIMEOUT_MS);
		if (rc)
			return rc;
		if (rep->hdr.msg_id == h.msg_id && rep->hdr.command == cmd)
			break;
		vcxl_client_reply_free(rep);
	}
	if (rep->hdr.flags & VFIO_USER_F_ERROR) {
		rc = rep->hdr.error ? -(int)rep->hdr.error : -EIO;
		vcxl_client_reply_free(rep);
		return rc;
	}
	return 0;
}

/* An exchange whose reply carries no fds and at least min bytes. */
static int client_call(struct vcxl_client *c, uint16_t cmd, const void *req, size_t len, void *out,
		       size_t min, size_t max)
{
	struct iovec iov = {(void *)req, len};
	struct vcxl_client_reply rep;
	int rc = client_xchg(c, cmd, 0, &iov, len ? 1 : 0, NULL, 0, &rep);

	if (rc)
		return rc;
	if (rep.len < min || rep.nfds)
		rc = -EPROTO;
	else if (out)
		memcpy(out, rep.data, rep.len < max ? rep.len : max);
	vcxl_client_reply_free(&rep);
	return rc;
}

int vcxl_client_raw(struct vcxl_client *c, uint16_t cmd, uint32_t flags, const void *payload,
		    size_t len, const int *fds, unsigned nfds, struct vcxl_client_reply *rep)
{
	struct vfio_user_hdr h = {.msg_id = c->next_id++,
				  .command = cmd,
				  .flags = flags,
				  .msg_size = (uint32_t)(sizeof(h) + len)};
	struct iovec iov[2] = {{&h, sizeof(h)}, {(void *)payload, len}};
	int rc = client_send(c, iov, len ? 2 : 1, fds, nfds);

	if (rc)
		return rc;
	if (flags & VFIO_USER_F_NO_REPLY)
		return 0;
	for (;;) {
		rc = vcxl_client_recv_reply(c, rep, CLIENT_TIMEOUT_MS);
		if (rc || rep->hdr.msg_id == h.msg_id)
			return rc;
		vcxl_client_reply_free(rep);
	}
}

int vcxl_client_send_bytes(struct vcxl_client *c, const void *buf, size_t len, const int *fds,
			   unsigned nfds)
{
	struct iovec iov = {(void *)buf, len};

	return client_send(c, &iov, 1, fds, nfds);
}

static uint64_t json_u64(struct json_object *caps, const char *key, uint64_t def)
{
	struct json_object *o;

	if (caps && json_object_object_get_ex(caps, key, &o) &&
	    json_object_is_type(o, json_type_int) && json_object_get_int64(o) >= 0)
		return (uint64_t)json_object_get_int64(o);
	return def;
}

int vcxl_client_negotiate(struct vcxl_client *c, const char *json)
{
	struct vfio_user_version v = {.major = VFIO_USER_MAJOR, .minor = VFIO_USER_MINOR};
	const char *caps_s = json ? json : qemu_caps;
	struct iovec iov[2] = {{&v, sizeof(v)}, {(void *)caps_s, strlen(caps_s) + 1}};
	struct json_object *root = NULL, *caps = NULL, *o;
	struct vcxl_client_reply rep;
	int rc;

	rc = client_xchg(c, VFIO_USER_VERSION, 0, iov, 2, NULL, 0, &rep);
	if (rc)
		return rc;
	rc = -EPROTO;
	if (rep.len < sizeof(v) + 1 || rep.data[rep.len - 1] != 0)
		goto out;
	memcpy(&v, rep.data, sizeof(v));
	if (v.major != VFIO_USER_MAJOR || v.minor > VFIO_USER_MINOR)
		goto out;
	root = json_tokener_parse((const char *)rep.data + sizeof(v));
	if (!root || !json_object_is_type(root, json_type_object))
		goto out;
	json_object_object_get_ex(root, "capabilities", &caps);
	c->caps.max_msg_fds = (uint32_t)json_u64(caps, "max_msg_fds", VFIO_USER_DEF_MAX_MSG_FDS);
	c->caps.max_data_xfer_size =
	    (uint32_t)json_u64(caps, "max_data_xfer_size", VFIO_USER_DEF_MAX_XFER);
	c->caps.pgsizes = json_u64(caps, "pgsizes", VFIO_USER_DEF_PGSIZES);
	c->caps.max_dma_maps = (uint32_t)json_u64(caps, "max_dma_maps", VFIO_USER_DEF_MAX_DMA_MAPS);
	c->caps.write_multiple = caps && json_object_object_get_ex(caps, "write_multiple", &o) &&
				 json_object_get_boolean(o);
	c->caps.dirty_in_stop_copy = caps &&
				     json_object_object_get_ex(caps, "dirty_in_stop_copy", &o) &&
				     json_object_get_boolean(o);
	if (!c->caps.max_data_xfer_size)
		goto out;
	rc = 0;
out:
	json_object_put(root);
	vcxl_client_reply_free(&rep);
	return rc;
}

int vcxl_client_from_fd(int fd, struct vcxl_client **out)
{
	struct vcxl_client *c = calloc(1, sizeof(*c));

	if (!c) {
		close(fd);
		return -ENOMEM;
	}
	c->fd = fd;
	/* Blocking receives time out by themselves (no poll per reply). */
	struct timeval tv = {.tv_sec = CLIENT_TIMEOUT_MS / 1000,
			     .tv_usec = (CLIENT_TIMEOUT_MS % 1000) * 1000};
	c->rcvtimeo = setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv)) == 0;
	c->caps.max_msg_fds = VFIO_USER_DEF_MAX_MSG_FDS;
	c->caps.max_data_xfer_size = VFIO_USER_DEF_MAX_XFER;
	*out = c;
	return 0;
}

int vcxl_client_connect_raw(const char *path, struct vcxl_client **out)
{
	int fd = vcxl_sock_connect(path);

	if (fd < 0)
		return fd;
	return vcxl_client_from_fd(fd, out);
}

int vcxl_client_connect(const char *path, struct vcxl_client **out)
{
	struct vcxl_client *c;
	int rc = vcxl_client_connect_raw(path, &c);

	if (rc)
		return rc;
	rc = vcxl_client_negotiate(c, NULL);
	if (rc) {
		vcxl_client_close(c);
		return rc;
	}
	*out = c;
	return 0;
}

void vcxl_client_close(struct vcxl_client *c)
{
	if (c && c->pfd_have)
		for (unsigned i = 0; i < c->pnfds; i++)
			close(c->pfds[i]);
	if (!c)
		return;
	close(c->fd);
	free(c);
}

int vcxl_client_get_info_argsz(struct vcxl_client *c, uint32_t argsz, struct vcxl_client_info *info)
{
	struct vfio_user_device_info req = {.argsz = argsz}, got;
	struct iovec iov = {&req, VFIO_USER_DEVICE_INFO_MIN};
	struct vcxl_client_reply rep;
	int rc;

	rc = client_xchg(c, VFIO_USER_DEVICE_GET_INFO, 0, &iov, 1, NULL, 0, &rep);
	if (rc)
		return rc;
	memset(info, 0, sizeof(*info));
	memset(&got, 0, sizeof(got));
	if (rep.len < VFIO_USER_DEVICE_INFO_MIN || rep.len > argsz) {
		rc = -EPROTO;
		goto out;
	}
	memcpy(&got, rep.data, rep.len < sizeof(got) ? rep.len : sizeof(got));
	info->argsz = got.argsz;
	info->flags = got.flags;
	info->num_regions = got.num_regions;
	info->num_irqs = got.num_irqs;
	if ((got.flags & VFIO_DEVICE_FLAGS_CAPS) && got.cap_offset) {
		uint32_t off = got.cap_offset;

		for (unsigned hops = 0; off && hops < 16; hops++) {
			struct vfio_info_cap_header h;

			if (off < sizeof(got) || off > rep.len || rep.len - off < sizeof(h)) {
				rc = -EPROTO;
				goto out;
			}
			memcpy(&h, rep.data + off, sizeof(h));
			if (h.id == VFIO_DEVICE_INFO_CAP_CXL &&
			    rep.len - off >= sizeof(info->cxl)) {
				memcpy(&info->cxl, rep.data + off, sizeof(info->cxl));
				info->has_cxl = true;
			}
			off = h.next;
		}
	}
out:
	vcxl_client_reply_free(&rep);
	return rc;
}

int vcxl_client_get_info(struct vcxl_client *c, struct vcxl_client_info *info)
{
	int rc = vcxl_client_get_info_argsz(c, VFIO_USER_DEVICE_INFO_MIN, info);

	if (rc || info->argsz <= VFIO_USER_DEVICE_INFO_MIN)
		return rc;
	return vcxl_client_get_info_argsz(c, info->argsz, info);
}

static int region_parse_caps(const uint8_t *buf, size_t len, uint32_t cap_offset,
			     struct vcxl_client_region *ri)
{
	uint32_t off = cap_offset;

	for (unsigned hops = 0; off && hops < 16; hops++) {
		struct vfio_info_cap_header h;

		if (off < sizeof(struct vfio_region_info) || off > len || len - off < sizeof(h))
			return -EPROTO;
		memcpy(&h, buf + off, sizeof(h));
		if (h.id == VFIO_REGION_INFO_CAP_SPARSE_MMAP) {
			uint32_t nr;

			if (len - off < sizeof(h) + 8)
				return -EPROTO;
			memcpy(&nr, buf + off + sizeof(h), 4);
			if (nr > VCXL_CLIENT_MAX_SPARSE || (len - off - sizeof(h) - 8) / 16 < nr)
				return -EPROTO;
			for (uint32_t i = 0; i < nr; i++) {
				struct vfio_region_sparse_mmap_area a;

				memcpy(&a, buf + off + sizeof(h) + 8 + 16 * i, sizeof(a));
				ri->sparse[i].offset = a.offset;
				ri->sparse[i].size = a.size;
			}
			ri->nr_sparse = nr;
		} else if (h.id == VFIO_REGION_INFO_CAP_TYPE) {
			uint32_t t[2];

			if (len - off < sizeof(h) + sizeof(t))
				return -EPROTO;
			memcpy(t, buf + off + sizeof(h), sizeof(t));
			ri->has_type = true;
			ri->type = t[0];
			ri->subtype = t[1];
		} else if (h.id == VFIO_REGION_INFO_CAP_CXL_COMP_REGS) {
			if (len - off < sizeof(ri->comp))
				return -EPROTO;
			memcpy(&ri->comp, buf + off, sizeof(ri->comp));
			ri->has_comp = true;
		}
		off = h.next;
	}
	return 0;
}

int vcxl_client_region_info(struct vcxl_client *c, uint32_t index, struct vcxl_client_region *ri)
{
	uint32_t argsz = sizeof(struct vfio_region_info);

	memset(ri, 0, sizeof(*ri));
	ri->fd = -1;
	for (unsigned tries = 1; tries <= 3; tries++) {
		struct vfio_region_info req = {.argsz = argsz, .index = index}, got;
		struct iovec iov = {&req, sizeof(req)};
		struct vcxl_client_reply rep;
		int rc;

		/* QEMU sends the 32-byte struct whatever argsz says */
		rc = client_xchg(c, VFIO_USER_DEVICE_GET_REGION_INFO, 0, &iov, 1, NULL, 0, &rep);
		if (rc)
			return rc;
		if (rep.len < sizeof(got) || rep.len > argsz || rep.nfds > 1) {
			vcxl_client_reply_free(&rep);
			return -EPROTO;
		}
		memcpy(&got, rep.data, sizeof(got));
		if (got.argsz > argsz) {
			argsz = got.argsz;
			vcxl_client_reply_free(&rep);
			continue;
		}
		ri->index = got.index;
		ri->flags = got.flags;
		ri->argsz = got.argsz;
		ri->size = got.size;
		ri->offset = got.offset;
		ri->tries = tries;
		if (got.flags & VFIO_REGION_INFO_FLAG_CAPS)
			rc = region_parse_caps(rep.data, rep.len, got.cap_offset, ri);
		if (!rc && rep.nfds) {
			ri->fd = rep.fds[0];
			rep.nfds = 0;
		}
		vcxl_client_reply_free(&rep);
		return rc;
	}
	return -EPROTO;
}

static uint32_t client_xfer_max(const struct vcxl_client *c)
{
	return c->caps.max_data_xfer_size ? c->caps.max_data_xfer_size : VFIO_USER_DEF_MAX_XFER;
}

int vcxl_client_region_read(struct vcxl_client *c, uint32_t index, uint64_t off, void *buf,
			    size_t len)
{
	while (len) {
		uint32_t n = len > client_xfer_max(c) ? client_xfer_max(c) : (uint32_t)len;
		struct vfio_user_region_access a = {.offset = off, .region = index, .count = n};
		struct iovec iov = {&a, sizeof(a)};
		struct vcxl_client_reply rep;

		c->direct_dst = buf;
		c->direct_len = n;
		c->direct_id = c->next_id;
		c->direct_done = false;
		int rc = client_xchg(c, VFIO_USER_REGION_READ, 0, &iov, 1, NULL, 0, &rep);
		bool direct = c->direct_done;

		c->direct_dst = NULL;
		if (rc)
			return rc;
		if (direct ? rep.len != sizeof(a) : rep.len != sizeof(a) + n) {
			vcxl_client_reply_free(&rep);
			return -EPROTO;
		}
		if (!direct)
			memcpy(buf, rep.data + sizeof(a), n);
		vcxl_client_reply_free(&rep);
		buf = (uint8_t *)buf + n;
		off += n;
		len -= n;
	}
	return 0;
}

static int client_region_write(struct vcxl_client *c, uint32_t index, uint64_t off, const void *buf,
			       size_t len, uint32_t flags)
{
	while (len) {
		uint32_t n = len > client_xfer_max(c) ? client_xfer_max(c) : (uint32_t)len;
		struct vfio_user_region_access a = {.offset = off, .region = index, .count = n};
		struct iovec iov[2] = {{&a, sizeof(a)}, {(void *)buf, n}};
		struct vcxl_client_reply rep;
		int rc = client_xchg(c, VFIO_USER_REGION_WRITE, flags, iov, 2, NULL, 0, &rep);

		if (rc)
			return rc;
		if (!(flags & VFIO_USER_F_NO_REPLY))
			vcxl_client_reply_free(&rep);
		buf = (const uint8_t *)buf + n;
		off += n;
		len -= n;
	}
	return 0;
}

int vcxl_client_region_write(struct vcxl_client *c, uint32_t index, uint64_t off, const void *buf,
			     size_t len)
{
	return client_region_write(c, index, off, buf, len, 0);
}

int vcxl_client_region_write_posted(struct vcxl_client *c, uint32_t index, uint64_t off,
				    const void *buf, size_t len)
{
	return client_region_write(c, index, off, buf, len, VFIO_USER_F_NO_REPLY);
}

int vcxl_client_read32(struct vcxl_client *c, uint32_t index, uint64_t off, uint32_t *v)
{
	return vcxl_client_region_read(c, index, off, v, 4);
}

int vcxl_client_write32(struct vcxl_client *c, uint32_t index, uint64_t off, uint32_t v)
{
	return vcxl_client_region_write(c, index, off, &v, 4);
}

int vcxl_client_read64(struct vcxl_client *c, uint32_t index, uint64_t off, uint64_t *v)
{
	return vcxl_client_region_read(c, index, off, v, 8);
}

int vcxl_client_write64(struct vcxl_client *c, uint32_t index, uint64_t off, uint64_t v)
{
	return vcxl_client_region_write(c, index, off, &v, 8);
}

int vcxl_client_irq_info(struct vcxl_client *c, uint32_t index, uint32_t *count, uint32_t *flags)
{
	struct vfio_irq_info req = {.argsz = sizeof(req), .index = index}, got;
	int rc = client_call(c, VFIO_USER_DEVICE_GET_IRQ_INFO, &req, sizeof(req), &got, sizeof(got),
			     sizeof(got));

	if (rc)
		return rc;
	*count = got.count;
	*flags = got.flags;
	return 0;
}

int vcxl_client_set_irqs(struct vcxl_client *c, uint32_t index, uint32_t flags, uint32_t start,
			 uint32_t count, const int *fds, unsigned nfds, const uint8_t *bools)
{
	struct vfio_irq_set s = {
	    .argsz = sizeof(s), .flags = flags, .index = index, .start = start, .count = count};
	struct iovec iov[2] = {{&s, sizeof(s)}, {(void *)bools, bools ? count : 0}};
	struct vcxl_client_reply rep;
	int rc;

	if (bools)
		s.argsz += count;
	rc = client_xchg(c, VFIO_USER_DEVICE_SET_IRQS, 0, iov, bools ? 2 : 1, fds, nfds, &rep);
	if (!rc)
		vcxl_client_reply_free(&rep);
	return rc;
}

int vcxl_client_dma_map(struct vcxl_client *c, uint64_t iova, uint64_t size, uint32_t flags, int fd,
			uint64_t offset, void *mem)
{
	struct vfio_user_dma_map d = {
	    .argsz = sizeof(d), .flags = flags, .offset = offset, .addr = iova, .size = size};
	struct iovec iov = {&d, sizeof(d)};
	struct vcxl_client_reply rep;
	int rc;

	if (mem && c->nmaps >= CLIENT_MAX_MAPS)
		return -ENOSPC;
	rc = client_xchg(c, VFIO_USER_DMA_MAP, 0, &iov, 1, fd >= 0 ? &fd : NULL, fd >= 0 ? 1 : 0,
			 &rep);
	if (rc)
		return rc;
	vcxl_client_reply_free(&rep);
	if (mem)
		c->maps[c->nmaps++] = (struct client_map){iova, size, flags, mem};
	return 0;
}

int vcxl_client_dma_unmap(struct vcxl_client *c, uint64_t iova, uint64_t size, uint32_t flags)
{
	struct vfio_user_dma_unmap d = {
	    .argsz = sizeof(d), .flags = flags, .addr = iova, .size = size};
	int rc = client_call(c, VFIO_USER_DMA_UNMAP, &d, sizeof(d), NULL, 0, 0);

	if (rc)
		return rc;
	for (unsigned i = 0; i < c->nmaps; i++) {
		if ((flags & VFIO_DMA_UNMAP_FLAG_ALL) ||
		    (c->maps[i].iova == iova && c->maps[i].size == size)) {
			c->maps[i] = c->maps[--c->nmaps];
			i--;
		}
	}
	return 0;
}

int vcxl_client_reset(struct vcxl_client *c)
{
	return client_call(c, VFIO_USER_DEVICE_RESET, NULL, 0, NULL, 0, 0);
}
