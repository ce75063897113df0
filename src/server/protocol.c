// SPDX-License-Identifier: BSD-3-Clause
/*
 * The vfio-user protocol layer: one struct vcxl_conn per connected client.
 * It reassembles messages from a non-blocking transport, validates every
 * field, dispatches commands to the device through struct vcxl_dev_ops, keeps
 * the client's DMA windows and IRQ eventfds, and performs device DMA either
 * through mmapped DMA windows or with server->client DMA_READ/DMA_WRITE.
 *
 * Server->client DMA is synchronous: the request is sent, then the socket is
 * read until the matching reply arrives; client requests that arrive in the
 * meantime are queued (bounded) and handled, in order, once the DMA is done.
 * While one device waits for its client, other devices are not served (the
 * wait is bounded by dma_timeout_ms); mmapped DMA (fd-backed guest RAM) never
 * waits.
 */
#include <errno.h>
#include <json-c/json.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <time.h>
#include <unistd.h>

#include "vcxl/server.h"

#define CONN_BATCH	     64
#define CONN_QUEUE_BYTES     (16u << 20)
#define NUM_IRQ_INDEX	     (VFIO_PCI_REQ_IRQ_INDEX + 1)
#define REGION_INDEX_STD_MAX VFIO_PCI_VGA_REGION_INDEX

struct vcxl_msg {
	struct vfio_user_hdr hdr;
	uint8_t *data; /* payload: hdr.msg_size - 16 bytes */
	size_t len;
	int fds[VCXL_SRV_MAX_MSG_FDS];
	unsigned nfds;
	bool bad_fds; /* more fds than allowed, or a truncated control message */
	struct vcxl_msg *next;
};

struct vcxl_tx {
	struct vcxl_tx *next;
	uint8_t *buf;
	size_t len, off;
	int fd; /* not owned; sent with the first byte */
	unsigned nfds;
};

struct irq_index {
	uint32_t count, flags;
	int *trigger; /* ACTION_TRIGGER eventfds, owned */
	int *notify;  /* ACTION_MASK/UNMASK eventfds (e.g. INTx resample), owned */
	uint8_t *masked, *pending;
};

struct vcxl_conn {
	struct vcxl_conn_cfg cfg;
	const struct vcxl_dev_ops *ops;
	void *dev;
	const struct vcxl_io_ops *io;
	void *io_opaque;
	uint32_t num_regions, num_irqs;
	size_t msg_cap;

	bool negotiated, dead, in_dma_wait, write_multi;
	int dead_err;
	uint32_t client_max_xfer, client_max_fds;

	struct vcxl_dma_table dma;
	struct irq_index irqs[NUM_IRQ_INDEX];

	struct vcxl_msg *rx; /* message being received */
	size_t rx_have;	     /* bytes of it received (header included) */
	uint64_t rx_start;   /* its stream offset */
	/* Read-ahead at message boundaries: one recvmsg usually brings a whole
	 * request. fds that came with a read belong to the message holding the
	 * read's last byte: the kernel ends a read right after the segment that
	 * carried them, and a sender attaches them to its message's sendmsg. */
	uint8_t *rbuf;
	size_t rb_off, rb_len;
	uint64_t rb_pos; /* stream offset of rbuf[0] */
	int pfds[VCXL_SRV_MAX_MSG_FDS];
	unsigned pnfds;
	bool pbad, pfd_have;
	uint64_t pfd_owner;
	struct vcxl_msg *q_head, *q_tail; /* requests queued during a DMA wait */
	size_t q_bytes;
	unsigned q_len;
	struct vcxl_tx *tx_head, *tx_tail;
	uint16_t next_id;
	struct vcxl_conn_stats st;
};

/* A reply under construction */
struct reply {
	int err; /* positive errno; 0 = success */
	struct iovec iov[2];
	int iovcnt;
	int fd;
	void *heap;
	uint8_t small[512] __attribute__((aligned(8)));
};

static void msg_free(struct vcxl_msg *m)
{
	if (!m)
		return;
	for (unsigned i = 0; i < m->nfds; i++)
		if (m->fds[i] >= 0)
			close(m->fds[i]);
	free(m->data);
	free(m);
}

static const char *conn_name(const struct vcxl_conn *c)
{
	return c->cfg.name ? c->cfg.name : "dev";
}

#define proto_err(c, m, fmt, ...)                                                                  \
	vcxl_log(VCXL_LOG_WARN, "%s: " VCXL_PROTO_ERR_PREFIX "%s id %u: " fmt, conn_name(c),       \
		 vfio_user_command_name((m)->hdr.command), (m)->hdr.msg_id, ##__VA_ARGS__)

static int64_t now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

static void reply_payload(struct reply *r, const void *p, size_t len)
{
	r->iov[r->iovcnt].iov_base = (void *)p;
	r->iov[r->iovcnt].iov_len = len;
	r->iovcnt++;
}

static int reply_error(struct reply *r, int err)
{
	r->err = err;
	return err;
}

/* ---------------------------------------------------------------------- */
/* Output                                                                  */
/* ---------------------------------------------------------------------- */

static void conn_kill(struct vcxl_conn *c, int err)
{
	if (!c->dead) {
		c->dead = true;
		c->dead_err = err ? err : -EIO;
	}
}

/* Queue what could not be sent now; the loop flushes it on EPOLLOUT. */
static int tx_queue(struct vcxl_conn *c, const struct iovec *iov, int iovcnt, size_t skip, int fd,
		    unsigned nfds)
{
	struct vcxl_tx *t = calloc(1, sizeof(*t));
	size_t total = 0, off = 0;

	for (int i = 0; i < iovcnt; i++)
		total += iov[i].iov_len;
	if (!t || !(t->buf = malloc(total ? total : 1))) {
		free(t);
		conn_kill(c, -ENOMEM);
		return -ENOMEM;
	}
	for (int i = 0; i < iovcnt; i++) {
		memcpy(t->buf + off, iov[i].iov_base, iov[i].iov_len);
		off += iov[i].iov_len;
	}
	t->len = total;
	t->off = skip;
	t->fd = fd;
	t->nfds = nfds;
	if (c->tx_tail)
		c->tx_tail->next = t;
	else
		c->tx_head = t;
	c->tx_tail = t;
	return 0;
}

static int tx_flush(struct vcxl_conn *c)
{
	while (c->tx_head) {
		struct vcxl_tx *t = c->tx_head;
		struct iovec v = {.iov_base = t->buf + t->off, .iov_len = t->len - t->off};
		ssize_t n = c->io->send(c->io_opaque, &v, 1, &t->fd, t->nfds);

		if (n == -EAGAIN)
			return -EAGAIN;
		if (n < 0) {
			conn_kill(c, (int)n);
			return (int)n;
		}
		t->nfds = 0;
		t->off += (size_t)n;
		if (t->off < t->len)
			continue;
		c->tx_head = t->next;
		if (!c->tx_head)
			c->tx_tail = NULL;
		free(t->buf);
		free(t);
	}
	return 0;
}

/* Send one message; on a full socket the rest is queued. */
static int conn_send(struct vcxl_conn *c, const struct iovec *iov, int iovcnt, int fd)
{
	unsigned nfds = fd >= 0 ? 1 : 0;
	size_t total = 0;
	ssize_t n;

	if (c->dead)
		return -EPIPE;
	for (int i = 0; i < iovcnt; i++)
		total += iov[i].iov_len;
	if (c->tx_head)
		return tx_queue(c, iov, iovcnt, 0, fd, nfds);
	n = c->io->send(c->io_opaque, iov, iovcnt, &fd, nfds);
	if (n == -EAGAIN)
		return tx_queue(c, iov, iovcnt, 0, fd, nfds);
	if (n < 0) {
		conn_kill(c, (int)n);
		return (int)n;
	}
	if ((size_t)n < total)
		return tx_queue(c, iov, iovcnt, (size_t)n, -1, 0);
	return 0;
}

/* Flush the output queue, waiting for the socket (DMA path only). */
static int tx_flush_wait(struct vcxl_conn *c, int64_t deadline)
{
	int rc;

	while ((rc = tx_flush(c)) == -EAGAIN) {
		int64_t left = deadline - now_ms();

		if (left <= 0)
			return -ETIMEDOUT;
		rc = c->io->wait(c->io_opaque, true, (int)left);
		if (rc)
			return rc;
	}
	return rc;
}

static void send_reply(struct vcxl_conn *c, const struct vcxl_msg *m, struct reply *r)
{
	struct vfio_user_hdr h = {
	    .msg_id = m->hdr.msg_id,
	    .command = m->hdr.command,
	    .msg_size = sizeof(h),
	    .flags = VFIO_USER_F_TYPE_REPLY,
	};
	struct iovec iov[3] = {{.iov_base = &h, .iov_len = sizeof(h)}};
	int n = 1;

	if (r->err) {
		h.flags |= VFIO_USER_F_ERROR;
		h.error = (uint32_t)r->err;
		c->st.errors++;
		conn_send(c, iov, 1, -1);
		return;
	}
	for (int i = 0; i < r->iovcnt; i++) {
		iov[n++] = r->iov[i];
		h.msg_size += (uint32_t)r->iov[i].iov_len;
	}
	conn_send(c, iov, n, r->fd);
}

/* ---------------------------------------------------------------------- */
/* Input                                                                   */
/* ---------------------------------------------------------------------- */

/* vfio-user spec "Header": a stream with a bad size or type cannot be resynchronised. */
static int rx_check_header(struct vcxl_conn *c, struct vcxl_msg *m)
{
	uint32_t type = m->hdr.flags & VFIO_USER_F_TYPE_MASK;

	if (m->hdr.msg_size < sizeof(m->hdr)) {
		proto_err(c, m, "msg_size %u below the header size, closing", m->hdr.msg_size);
		return -EPROTO;
	}
	if (type != VFIO_USER_F_TYPE_CMD && type != VFIO_USER_F_TYPE_REPLY) {
		proto_err(c, m, "message type %u, closing", type);
		return -EPROTO;
	}
	if (m->hdr.msg_size > c->msg_cap) {
		proto_err(c, m, "msg_size %u above the limit %zu, closing", m->hdr.msg_size,
			  c->msg_cap);
		return -EPROTO;
	}
	m->len = m->hdr.msg_size - sizeof(m->hdr);
	if (m->len) {
		m->data = malloc(m->len);
		if (!m->data)
			return -ENOMEM;
	}
	return 0;
}

/* Receive more of the current message: 1 = complete (*out), 0 = would block, <0 = close. */
#define RX_BUF 4096

/* One read into the (empty) read-ahead buffer: bytes, 0 would block, <0 close. */
static int rx_fill(struct vcxl_conn *c)
{
	int fds[VCXL_SRV_MAX_MSG_FDS];
	unsigned nf = 0;
	bool bad = false;
	ssize_t n;

	if (!c->rbuf && !(c->rbuf = malloc(RX_BUF)))
		return -ENOMEM;
	c->rb_pos += c->rb_len;
	c->rb_off = c->rb_len = 0;
	n = c->io->recv(c->io_opaque, c->rbuf, RX_BUF, fds, c->cfg.max_msg_fds, &nf, &bad);
	if (n == -EAGAIN)
		return 0;
	if (n < 0)
		return (int)n;
	if (n == 0)
		return -ECONNRESET;
	c->rb_len = (size_t)n;
	if (nf || bad) {
		if (c->pfd_have) { /* two fd sets for one message: refuse the second */
			for (unsigned i = 0; i < nf; i++)
				close(fds[i]);
			c->pbad = true;
		} else {
			memcpy(c->pfds, fds, sizeof(int) * nf);
			c->pnfds = nf;
			c->pbad = bad;
			c->pfd_have = true;
		}
		c->pfd_owner = c->rb_pos + c->rb_len - 1;
	}
	return (int)n;
}

/* Give m (starting at stream offset start) the pending fds if they are its. */
static void rx_claim_fds(struct vcxl_conn *c, struct vcxl_msg *m, uint64_t start)
{
	if (!c->pfd_have || c->pfd_owner < start || c->pfd_owner >= start + m->hdr.msg_size)
		return;
	for (unsigned i = 0; i < c->pnfds; i++) {
		if (m->nfds < c->cfg.max_msg_fds)
			m->fds[m->nfds++] = c->pfds[i];
		else {
			close(c->pfds[i]);
			m->bad_fds = true;
		}
	}
	m->bad_fds |= c->pbad;
	c->pfd_have = c->pbad = false;
	c->pnfds = 0;
}

static int rx_step(struct vcxl_conn *c, struct vcxl_msg **out)
{
	for (;;) {
		struct vcxl_msg *m = c->rx;
		size_t want;
		uint8_t *dst;
		ssize_t n;
		int rc;

		if (!m) {
			/* at a message boundary: take it from the read-ahead buffer */
			if (c->rb_off == c->rb_len) {
				rc = rx_fill(c);
				if (rc <= 0)
					return rc;
			}
			m = calloc(1, sizeof(*m));
			if (!m)
				return -ENOMEM;
			c->rx = m;
			c->rx_have = 0;
			c->rx_start = c->rb_pos + c->rb_off;
		}
		if (c->rb_off < c->rb_len) {
			/* bytes of this message already read ahead */
			size_t avail = c->rb_len - c->rb_off, k;
			if (c->rx_have < sizeof(m->hdr)) {
				k = sizeof(m->hdr) - c->rx_have;
				k = k < avail ? k : avail;
				memcpy((uint8_t *)&m->hdr + c->rx_have, c->rbuf + c->rb_off, k);
			} else {
				k = sizeof(m->hdr) + m->len - c->rx_have;
				k = k < avail ? k : avail;
				memcpy(m->data + (c->rx_have - sizeof(m->hdr)), c->rbuf + c->rb_off,
				       k);
			}
			c->rb_off += k;
			c->rx_have += k;
			if (c->rx_have == sizeof(m->hdr)) {
				rc = rx_check_header(c, m);
				if (rc)
					return rc;
				rx_claim_fds(c, m, c->rx_start);
			}
			if (c->rx_have >= sizeof(m->hdr) && c->rx_have == sizeof(m->hdr) + m->len) {
				*out = m;
				c->rx = NULL;
				c->rx_have = 0;
				return 1;
			}
			continue;
		}
		if (c->rx_have < sizeof(m->hdr)) {
			dst = (uint8_t *)&m->hdr + c->rx_have;
			want = sizeof(m->hdr) - c->rx_have;
		} else if (c->rx_have < sizeof(m->hdr) + m->len) {
			dst = m->data + (c->rx_have - sizeof(m->hdr));
			want = sizeof(m->hdr) + m->len - c->rx_have;
		} else {
			*out = m;
			c->rx = NULL;
			c->rx_have = 0;
			return 1;
		}
		n = c->io->recv(c->io_opaque, dst, want, m->fds, c->cfg.max_msg_fds, &m->nfds,
				&m->bad_fds);
		if (n == -EAGAIN)
			return 0;
		if (n < 0)
			return (int)n;
		if (n == 0)
			return -ECONNRESET;
		c->rx_have += (size_t)n;
		c->rb_pos += (size_t)n; /* read exactly, past the (empty) buffer */
		if (c->rx_have == sizeof(m->hdr)) {
			rc = rx_check_header(c, m);
			if (rc)
				return rc;
			rx_claim_fds(c, m, c->rx_start);
		}
	}
}

/* ---------------------------------------------------------------------- */
/* Command handlers                                                        */
/* ---------------------------------------------------------------------- */

static bool msg_no_fds(struct vcxl_conn *c, struct vcxl_msg *m)
{
	if (m->nfds || m->bad_fds) {
		proto_err(c, m, "%u unexpected fds", m->nfds);
		return false;
	}
	return true;
}

/* The common start of a handler: no fds, a payload of at least len bytes,
 * copied to dst. false (with the error reply set) otherwise. */
static bool msg_take(struct vcxl_conn *c, struct vcxl_msg *m, struct reply *r, void *dst,
		     size_t len)
{
	if (!msg_no_fds(c, m)) {
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

/* vfio-user spec "VERSION": the client's capabilities */
static int version_parse_caps(struct vcxl_conn *c, struct vcxl_msg *m, const char *json, size_t len,
			      uint64_t *max_fds, uint64_t *max_xfer, uint64_t *pgsizes,
			      uint64_t *max_maps, bool *wm)
{
	struct json_tokener *tok;
	struct json_object *root, *caps, *o;
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
	if (json_object_object_get_ex(caps, "write_multiple", &o)) {
		if (!json_object_is_type(o, json_type_boolean)) {
			proto_err(c, m, "write_multiple is not a boolean");
			goto out;
		}
		*wm = json_object_get_boolean(o);
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
	bool wm = false;
	size_t slen;

	if (c->negotiated) {
		proto_err(c, m, "version already negotiated");
		return reply_error(r, EINVAL);
	}
	if (!msg_take(c, m, r, &v, sizeof(v)))
		return r->err;
	if (v.major != VFIO_USER_MAJOR) {
		proto_err(c, m, "unsupported major version %u", v.major);
		return reply_error(r, ENOTSUP);
	}
	if (m->len > sizeof(v) &&
	    version_parse_caps(c, m, (const char *)m->data + sizeof(v), m->len - sizeof(v),
			       &max_fds, &max_xfer, &pgsizes, &max_maps, &wm))
		return reply_error(r, EINVAL);

	c->client_max_fds = (uint32_t)max_fds;
	c->client_max_xfer = (uint32_t)max_xfer;
	c->write_multi = wm;
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
		vcxl_log(VCXL_LOG_WARN,
			 "%s: DMA window [0x%llx, +0x%llx) has no fd: the device cannot reach it",
			 conn_name(c), (unsigned long long)dm->iova, (unsigned long long)dm->size);
		return 0;
	}
	rc = c->ops->dma_map(c->dev, dm->iova, dm->size, dm->ptr,
			     dm->flags & VFIO_USER_F_DMA_REGION_WRITE);
	dm->dev_mapped = rc == 0;
	return rc == -EOPNOTSUPP ? 0 : rc;
}

/* Every mapping that goes (unmap, unmap-all, disconnect) leaves the device too. */
static void dma_unmap_device(void *opaque, const struct vcxl_dma_map *dm)
{
	struct vcxl_conn *c = opaque;

	if (c->ops->dma_unmap && dm->dev_mapped)
		c->ops->dma_unmap(c->dev, dm->iova, dm->size);
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
	rc = vcxl_dma_add(&c->dma, d.addr, d.size, d.flags, fd, d.offset);
	if (rc) {
		proto_err(c, m, "map [0x%llx, +0x%llx) flags 0x%x: %s", (unsigned long long)d.addr,
			  (unsigned long long)d.size, d.flags, strerror(-rc));
		return reply_error(r, -rc);
	}
	rc = dma_map_device(c, d.addr);
	if (rc) {
		unsigned gone;
		proto_err(c, m, "device cannot map [0x%llx, +0x%llx): %s",
			  (unsigned long long)d.addr, (unsigned long long)d.size, strerror(-rc));
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

	if (!msg_take(c, m, r, &d, sizeof(d)))
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

	if (!msg_no_fds(c, m))
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

	if (!msg_take(c, m, r, &req, sizeof(req)))
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
	}
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

/* vfio-user spec "DEVICE_GET_IRQ_INFO" */
static int handle_irq_info(struct vcxl_conn *c, struct vcxl_msg *m, struct reply *r)
{
	struct vfio_irq_info info;
	uint32_t count = 0, flags = 0;
	int rc;

	if (!msg_take(c, m, r, &info, sizeof(info)))
		return r->err;
	if (info.argsz < sizeof(info) || info.index >= c->num_irqs) {
		proto_err(c, m, "argsz %u index %u of %u", info.argsz, info.index, c->num_irqs);
		return reply_error(r, EINVAL);
	}
	rc = c->ops->irq_info(c->dev, info.index, &count, &flags);
	if (rc) {
		proto_err(c, m, "irq index %u: %s", info.index, strerror(-rc));
		return reply_error(r, -rc);
	}
	info.argsz = sizeof(info);
	info.flags = flags;
	info.count = count;
	memcpy(r->small, &info, sizeof(info));
	reply_payload(r, r->small, sizeof(info));
	return 0;
}

static void irq_index_free(struct irq_index *q)
{
	for (uint32_t i = 0; i < q->count; i++) {
		if (q->trigger && q->trigger[i] >= 0)
			close(q->trigger[i]);
		if (q->notify && q->notify[i] >= 0)
			close(q->notify[i]);
	}
	free(q->trigger);
	free(q->notify);
	free(q->masked);
	free(q->pending);
	memset(q, 0, sizeof(*q));
}

/* Lazily size an IRQ index from the device's irq_info. */
static int irq_index_get(struct vcxl_conn *c, uint32_t index, struct irq_index **out)
{
	struct irq_index *q;
	uint32_t count = 0, flags = 0;
	int rc;

	if (index >= NUM_IRQ_INDEX || index >= c->num_irqs)
		return -EINVAL;
	q = &c->irqs[index];
	if (!q->trigger) {
		rc = c->ops->irq_info(c->dev, index, &count, &flags);
		if (rc)
			return rc;
		if (count > 4096)
			return -EINVAL;
		q->count = count;
		q->flags = flags;
		q->trigger = malloc(sizeof(int) * (count + 1));
		q->notify = malloc(sizeof(int) * (count + 1));
		q->masked = calloc(count + 1, 1);
		q->pending = calloc(count + 1, 1);
		if (!q->trigger || !q->notify || !q->masked || !q->pending) {
			irq_index_free(q);
			return -ENOMEM;
		}
		for (uint32_t i = 0; i <= count; i++)
			q->trigger[i] = q->notify[i] = -1;
	}
	*out = q;
	return 0;
}

static void irq_signal(struct vcxl_conn *c, struct irq_index *q, uint32_t v)
{
	if (q->masked[v]) {
		q->pending[v] = 1;
		return;
	}
	if (q->trigger[v] >= 0 && eventfd_write(q->trigger[v], 1) == 0)
		c->st.irqs++;
	if (q->flags & VFIO_IRQ_INFO_AUTOMASKED)
		q->masked[v] = 1;
}

static void irq_set_fd(int *slot, int fd)
{
	if (*slot >= 0)
		close(*slot);
	*slot = fd;
}

/* Tell the device's host side whether vector v of index has a trigger fd;
 * a device that signals eventfds itself gets the fd. 0 or the device's -errno
 * (logged: the client may not be told, e.g. when it is gone). */
static int irq_arm(struct vcxl_conn *c, struct irq_index *q, uint32_t index, uint32_t v, bool armed)
{
	int rc = 0;

	if (c->ops->irq_arm)
		rc = c->ops->irq_arm(c->dev, index, v, armed);
	if (!rc && c->ops->set_irq_eventfd) {
		rc = c->ops->set_irq_eventfd(c->dev, index, v, armed ? q->trigger[v] : -1);
		if (rc == -EOPNOTSUPP) /* the device raises IRQs through the server */
			rc = 0;
	}
	if (rc)
		vcxl_log(VCXL_LOG_WARN, "%s: irq index %u vector %u: device refused to %s it: %s",
			 conn_name(c), index, v, armed ? "arm" : "disarm", strerror(-rc));
	return rc;
}

/* After a device reset the device's own vector masks are back to reset
 * values: arm again every vector the client still has an eventfd on. */
static void irq_rearm_all(struct vcxl_conn *c)
{
	for (uint32_t i = 0; i < NUM_IRQ_INDEX; i++)
		for (uint32_t v = 0; c->irqs[i].trigger && v < c->irqs[i].count; v++)
			if (c->irqs[i].trigger[v] >= 0)
				irq_arm(c, &c->irqs[i], i, v, true);
}

static void irq_unmask(struct vcxl_conn *c, struct irq_index *q, uint32_t v)
{
	q->masked[v] = 0;
	if (q->pending[v]) {
		q->pending[v] = 0;
		irq_signal(c, q, v);
	}
}

/* vfio-user spec "DEVICE_SET_IRQS" (VFIO_DEVICE_SET_IRQS semantics) */
static int handle_set_irqs(struct vcxl_conn *c, struct vcxl_msg *m, struct reply *r)
{
	const uint32_t data_mask = VFIO_IRQ_SET_DATA_TYPE_MASK;
	const uint32_t act_mask = VFIO_IRQ_SET_ACTION_TYPE_MASK;
	struct vfio_irq_set s;
	struct irq_index *q;
	uint32_t data, act;
	const uint8_t *bools = NULL;
	int rc;

	if (m->bad_fds) {
		proto_err(c, m, "too many fds");
		return reply_error(r, EINVAL);
	}
	if (m->len < sizeof(s)) {
		proto_err(c, m, "payload %zu too short", m->len);
		return reply_error(r, EINVAL);
	}
	memcpy(&s, m->data, sizeof(s));
	data = s.flags & data_mask;
	act = s.flags & act_mask;
	if (s.argsz < sizeof(s) || (s.flags & ~(data_mask | act_mask)) ||
	    __builtin_popcount(data) != 1 || __builtin_popcount(act) != 1) {
		proto_err(c, m, "argsz %u flags 0x%x", s.argsz, s.flags);
		return reply_error(r, EINVAL);
	}
	rc = irq_index_get(c, s.index, &q);
	if (rc) {
		proto_err(c, m, "irq index %u: %s", s.index, strerror(-rc));
		return reply_error(r, -rc);
	}
	if (s.count == 0) {
		if (data != VFIO_IRQ_SET_DATA_NONE || act != VFIO_IRQ_SET_ACTION_TRIGGER ||
		    m->nfds) {
			proto_err(c, m, "count 0 with flags 0x%x", s.flags);
			return reply_error(r, EINVAL);
		}
		for (uint32_t i = 0; i < q->count; i++) {
			if (q->trigger[i] >= 0)
				irq_arm(c, q, s.index, i, false);
			irq_set_fd(&q->trigger[i], -1);
			q->masked[i] = q->pending[i] = 0;
		}
		return 0;
	}
	if (s.start >= q->count || s.count > q->count - s.start) {
		proto_err(c, m, "vectors %u+%u of %u", s.start, s.count, q->count);
		return reply_error(r, EINVAL);
	}
	if (data == VFIO_IRQ_SET_DATA_EVENTFD) {
		if (m->nfds && m->nfds != s.count) {
			proto_err(c, m, "%u fds for %u vectors", m->nfds, s.count);
			return reply_error(r, EINVAL);
		}
	} else if (m->nfds) {
		proto_err(c, m, "fds without DATA_EVENTFD");
		return reply_error(r, EINVAL);
	}
	if (data == VFIO_IRQ_SET_DATA_BOOL) {
		if (m->len < sizeof(s) + s.count) {
			proto_err(c, m, "%u bools missing", s.count);
			return reply_error(r, EINVAL);
		}
		bools = m->data + sizeof(s);
	}
	for (uint32_t i = 0; i < s.count; i++) {
		uint32_t v = s.start + i;

		if (data == VFIO_IRQ_SET_DATA_EVENTFD) {
			int fd = m->nfds ? m->fds[i] : -1;

			if (m->nfds)
				m->fds[i] = -1;
			irq_set_fd(act == VFIO_IRQ_SET_ACTION_TRIGGER ? &q->trigger[v]
								      : &q->notify[v],
				   fd);
			if (act == VFIO_IRQ_SET_ACTION_TRIGGER &&
			    irq_arm(c, q, s.index, v, fd >= 0) && fd >= 0) {
				/* the device cannot signal it: the client must not wait on it */
				irq_set_fd(&q->trigger[v], -1);
				return reply_error(r, EIO);
			}
			continue;
		}
		if (bools && !bools[i])
			continue;
		if (act == VFIO_IRQ_SET_ACTION_TRIGGER)
			irq_signal(c, q, v);
		else if (act == VFIO_IRQ_SET_ACTION_MASK)
			q->masked[v] = 1;
		else
			irq_unmask(c, q, v);
	}
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

	if (!msg_no_fds(c, m))
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

	if (!msg_take(c, m, r, &a, sizeof(a)))
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
	reply_payload(r, r->small, sizeof(a));
	return 0;
}

/* vfio-user spec "REGION_WRITE_MULTI" */
static int handle_write_multi(struct vcxl_conn *c, struct vcxl_msg *m, struct reply *r)
{
	const size_t esz = sizeof(struct vfio_user_wr_multi_entry);
	uint64_t cnt;
	int first = 0;

	if (!msg_take(c, m, r, &cnt, sizeof(cnt)))
		return r->err;
	if (!cnt || cnt > VFIO_USER_MULTI_MAX || m->len != sizeof(cnt) + cnt * esz) {
		proto_err(c, m, "wr_cnt %llu in %zu bytes", (unsigned long long)cnt, m->len);
		return reply_error(r, EINVAL);
	}
	for (uint64_t i = 0; i < cnt; i++) {
		struct vfio_user_wr_multi_entry e;
		int rc;

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

	if (!msg_no_fds(c, m))
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
	irq_rearm_all(c);
	vcxl_log(VCXL_LOG_INFO, "%s: device reset", conn_name(c));
	return 0;
}

static void handle_request(struct vcxl_conn *c, struct vcxl_msg *m)
{
	struct reply r = {.fd = -1};
	bool no_reply = m->hdr.flags & VFIO_USER_F_NO_REPLY;

	c->st.msgs++;
	if ((m->hdr.flags & ~VFIO_USER_F_KNOWN) || (m->hdr.flags & VFIO_USER_F_ERROR) ||
	    m->hdr.error) {
		proto_err(c, m, "flags 0x%x error %u in a command", m->hdr.flags, m->hdr.error);
		reply_error(&r, EINVAL);
	} else if (!c->negotiated && m->hdr.command != VFIO_USER_VERSION) {
		proto_err(c, m, "command before VERSION");
		reply_error(&r, EINVAL);
	} else {
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
			handle_irq_info(c, m, &r);
			break;
		case VFIO_USER_DEVICE_SET_IRQS:
			handle_set_irqs(c, m, &r);
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
	if (!no_reply)
		send_reply(c, m, &r);
	free(r.heap);
	msg_free(m); /* closes any fd a handler did not take */
}

static void handle_msg(struct vcxl_conn *c, struct vcxl_msg *m)
{
	if ((m->hdr.flags & VFIO_USER_F_TYPE_MASK) == VFIO_USER_F_TYPE_REPLY) {
		proto_err(c, m, "unexpected reply (no request outstanding)");
		c->st.proto_errors++;
		msg_free(m);
		return;
	}
	handle_request(c, m);
}

/* ---------------------------------------------------------------------- */
/* Server -> client DMA_READ / DMA_WRITE                                   */
/* ---------------------------------------------------------------------- */

static void queue_msg(struct vcxl_conn *c, struct vcxl_msg *m)
{
	m->next = NULL;
	if (c->q_tail)
		c->q_tail->next = m;
	else
		c->q_head = m;
	c->q_tail = m;
	c->q_len++;
	c->q_bytes += m->len + sizeof(*m);
}

static struct vcxl_msg *dequeue_msg(struct vcxl_conn *c)
{
	struct vcxl_msg *m = c->q_head;

	if (!m)
		return NULL;
	c->q_head = m->next;
	if (!c->q_head)
		c->q_tail = NULL;
	c->q_len--;
	c->q_bytes -= m->len + sizeof(*m);
	return m;
}

/* Read until the reply to (id, cmd) arrives; other requests are queued. */
static int dma_wait_reply(struct vcxl_conn *c, uint16_t id, uint16_t cmd, int64_t deadline,
			  struct vcxl_msg **out)
{
	for (;;) {
		struct vcxl_msg *m = NULL;
		int rc = rx_step(c, &m);

		if (rc < 0) {
			conn_kill(c, rc);
			return -EIO;
		}
		if (rc == 0) {
			int64_t left = deadline - now_ms();

			if (left <= 0)
				return -ETIMEDOUT;
			rc = c->io->wait(c->io_opaque, false, (int)left);
			if (rc)
				return rc;
			continue;
		}
		if ((m->hdr.flags & VFIO_USER_F_TYPE_MASK) == VFIO_USER_F_TYPE_REPLY) {
			if (m->hdr.msg_id == id && m->hdr.command == cmd) {
				*out = m;
				return 0;
			}
			proto_err(c, m, "reply to no outstanding request");
			c->st.proto_errors++;
			msg_free(m);
			continue;
		}
		queue_msg(c, m);
		if (c->q_len > VCXL_SRV_MAX_QUEUED || c->q_bytes > CONN_QUEUE_BYTES)
			return -ENOBUFS;
	}
}

/* One DMA_READ/DMA_WRITE exchange, QEMU 10.x layout {u64 addr; u32 count; data; pad[4]}. */
static int dma_msg_xfer(struct vcxl_conn *c, bool write, uint64_t addr, void *buf, uint32_t count)
{
	uint16_t cmd = write ? VFIO_USER_DMA_WRITE : VFIO_USER_DMA_READ;
	struct vfio_user_hdr h = {
	    .msg_id = c->next_id++, .command = cmd, .flags = VFIO_USER_F_TYPE_CMD};
	struct vfio_user_dma_rw rw = {.addr = addr, .count = count};
	static const uint8_t pad[VFIO_USER_DMA_RW_PAD];
	int64_t deadline = now_ms() + c->cfg.dma_timeout_ms;
	struct vcxl_msg *m = NULL;
	struct iovec iov[4];
	int n = 0, rc;

	if (c->dead)
		return -EIO;
	if (c->in_dma_wait)
		return -EBUSY;
	h.msg_size = (uint32_t)(sizeof(h) + sizeof(rw) + (write ? count : 0) + sizeof(pad));
	iov[n++] = (struct iovec){.iov_base = &h, .iov_len = sizeof(h)};
	iov[n++] = (struct iovec){.iov_base = &rw, .iov_len = sizeof(rw)};
	if (write)
		iov[n++] = (struct iovec){.iov_base = buf, .iov_len = count};
	iov[n++] = (struct iovec){.iov_base = (void *)pad, .iov_len = sizeof(pad)};

	c->in_dma_wait = true;
	rc = conn_send(c, iov, n, -1);
	if (!rc)
		rc = tx_flush_wait(c, deadline);
	if (!rc)
		rc = dma_wait_reply(c, h.msg_id, cmd, deadline, &m);
	c->in_dma_wait = false;
	c->st.dma_msgs++;
	if (rc) {
		vcxl_log(VCXL_LOG_WARN, "%s: DMA %s 0x%llx+%u: %s", conn_name(c),
			 write ? "write" : "read", (unsigned long long)addr, count, strerror(-rc));
		return rc;
	}
	if (m->hdr.flags & VFIO_USER_F_ERROR) {
		rc = m->hdr.error ? -(int)m->hdr.error : -EIO;
	} else if (!write) {
		struct vfio_user_dma_rw got;

		if (m->len < sizeof(got) + count) {
			rc = -EPROTO;
		} else {
			memcpy(&got, m->data, sizeof(got));
			if (got.addr != addr || got.count != count)
				rc = -EPROTO;
			else
				memcpy(buf, m->data + sizeof(got), count);
		}
	}
	if (rc == -EPROTO)
		proto_err(c, m, "bad DMA_READ reply (%zu bytes)", m->len);
	msg_free(m);
	return rc;
}

static int conn_dma_rw(struct vcxl_conn *c, uint64_t iova, uint8_t *buf, size_t len, bool write)
{
	uint32_t need = write ? VFIO_USER_F_DMA_REGION_WRITE : VFIO_USER_F_DMA_REGION_READ;

	if (!c || c->dead)
		return -ENODEV;
	if (iova + len < iova)
		return -EFAULT;
	while (len) {
		const struct vcxl_dma_map *mp = vcxl_dma_find(&c->dma, iova);
		uint64_t chunk;

		if (!mp)
			return -EFAULT;
		if (!(mp->flags & need))
			return -EPERM;
		chunk = mp->iova + mp->size - iova;
		if (chunk > len)
			chunk = len;
		if (mp->ptr) {
			int rc = write ? vcxl_dma_copy(mp->ptr + (iova - mp->iova), buf, chunk)
				       : vcxl_dma_copy(buf, mp->ptr + (iova - mp->iova), chunk);
			if (rc) {
				vcxl_log(VCXL_LOG_WARN,
					 "%s: DMA window [0x%llx, +0x%llx) no longer backed by the "
					 "client's fd",
					 conn_name(c), (unsigned long long)mp->iova,
					 (unsigned long long)mp->size);
				return rc;
			}
		} else {
			uint64_t done = 0, max = c->client_max_xfer ? c->client_max_xfer : 4096;

			while (done < chunk) {
				uint32_t n = (uint32_t)(chunk - done < max ? chunk - done : max);
				int rc = dma_msg_xfer(c, write, iova + done, buf + done, n);

				if (rc)
					return rc;
				done += n;
			}
		}
		iova += chunk;
		buf += chunk;
		len -= chunk;
	}
	return 0;
}

static int conn_dma_read(void *opaque, uint64_t iova, void *buf, size_t len)
{
	return conn_dma_rw(opaque, iova, buf, len, false);
}

static int conn_dma_write(void *opaque, uint64_t iova, const void *buf, size_t len)
{
	return conn_dma_rw(opaque, iova, (uint8_t *)buf, len, true);
}

static const struct vcxl_dma_ops conn_dma_ops = {
    .read = conn_dma_read,
    .write = conn_dma_write,
};

static int nodev_dma_read(void *opaque, uint64_t iova, void *buf, size_t len)
{
	return -ENODEV;
}

static int nodev_dma_write(void *opaque, uint64_t iova, const void *buf, size_t len)
{
	return -ENODEV;
}

static const struct vcxl_dma_ops nodev_dma_ops = {
    .read = nodev_dma_read,
    .write = nodev_dma_write,
};

static void conn_irq(void *opaque, enum vcxl_irq_type type, unsigned vector)
{
	struct vcxl_conn *c = opaque;
	struct irq_index *q;

	if ((unsigned)type >= NUM_IRQ_INDEX)
		return;
	q = &c->irqs[type];
	if (!q->trigger || vector >= q->count)
		return;
	irq_signal(c, q, vector);
}

static void nodev_irq(void *opaque, enum vcxl_irq_type type, unsigned vector)
{
}

/* ---------------------------------------------------------------------- */
/* Lifecycle                                                               */
/* ---------------------------------------------------------------------- */

struct vcxl_conn *vcxl_conn_create(const struct vcxl_conn_cfg *cfg, const struct vcxl_dev_ops *ops,
				   void *dev, const struct vcxl_io_ops *io, void *io_opaque)
{
	struct vcxl_conn *c = calloc(1, sizeof(*c));
	struct vcxl_vdev_info vi;

	if (!c)
		return NULL;
	if (cfg)
		c->cfg = *cfg;
	if (!c->cfg.max_xfer)
		c->cfg.max_xfer = VCXL_SRV_MAX_XFER;
	if (!c->cfg.max_dma_maps)
		c->cfg.max_dma_maps = VCXL_SRV_MAX_DMA_MAPS;
	if (!c->cfg.max_msg_fds || c->cfg.max_msg_fds > VCXL_SRV_MAX_MSG_FDS)
		c->cfg.max_msg_fds = VCXL_SRV_MAX_MSG_FDS;
	if (!c->cfg.dma_timeout_ms)
		c->cfg.dma_timeout_ms = VCXL_SRV_DMA_TIMEOUT_MS;
	c->ops = ops;
	c->dev = dev;
	c->io = io;
	c->io_opaque = io_opaque;
	c->msg_cap = (size_t)c->cfg.max_xfer + VCXL_SRV_MSG_SLACK;
	c->client_max_xfer = VFIO_USER_DEF_MAX_XFER;
	c->client_max_fds = VFIO_USER_DEF_MAX_MSG_FDS;
	vcxl_dma_init(&c->dma, c->cfg.max_dma_maps, VCXL_SRV_PGSIZE);
	c->dma.on_release = dma_unmap_device;
	c->dma.release_opaque = c;
	memset(&vi, 0, sizeof(vi));
	ops->get_info(dev, &vi);
	c->num_regions = vi.num_regions;
	c->num_irqs = vi.num_irqs;
	ops->set_dma(dev, &conn_dma_ops, c);
	ops->set_irq_handler(dev, conn_irq, c);
	return c;
}

void vcxl_conn_destroy(struct vcxl_conn *c)
{
	struct vcxl_msg *m;

	if (!c)
		return;
	c->ops->set_dma(c->dev, &nodev_dma_ops, NULL);
	c->ops->set_irq_handler(c->dev, nodev_irq, NULL);
	while ((m = dequeue_msg(c)))
		msg_free(m);
	msg_free(c->rx);
	for (unsigned i = 0; c->pfd_have && i < c->pnfds; i++)
		close(c->pfds[i]);
	free(c->rbuf);
	while (c->tx_head) {
		struct vcxl_tx *t = c->tx_head;

		c->tx_head = t->next;
		free(t->buf);
		free(t);
	}
	/* a device that signals eventfds itself must drop the client's */
	for (uint32_t i = 0; c->ops->set_irq_eventfd && i < NUM_IRQ_INDEX; i++)
		for (uint32_t v = 0; c->irqs[i].trigger && v < c->irqs[i].count; v++)
			if (c->irqs[i].trigger[v] >= 0)
				c->ops->set_irq_eventfd(c->dev, i, v, -1);
	for (unsigned i = 0; i < NUM_IRQ_INDEX; i++)
		irq_index_free(&c->irqs[i]);
	vcxl_dma_remove_all(&c->dma);
	c->ops->client_gone(c->dev);
	free(c);
}

int vcxl_conn_drain(struct vcxl_conn *c)
{
	for (int i = 0; i < CONN_BATCH && c->q_head && !c->dead && !c->tx_head; i++)
		handle_msg(c, dequeue_msg(c));
	if (c->dead)
		return c->dead_err;
	return c->q_head ? 1 : 0;
}

int vcxl_conn_on_readable(struct vcxl_conn *c)
{
	for (int i = 0; i < CONN_BATCH && !c->dead && !c->tx_head; i++) {
		struct vcxl_msg *m = NULL;
		int rc;

		if (c->q_head) {
			handle_msg(c, dequeue_msg(c));
			continue;
		}
		rc = rx_step(c, &m);
		if (rc < 0) {
			conn_kill(c, rc);
			break;
		}
		if (rc == 0)
			break;
		handle_msg(c, m);
		if (c->cfg.max_batch && (unsigned)i + 1 >= c->cfg.max_batch && !c->q_head &&
		    c->rb_off == c->rb_len) /* read-ahead bytes get no wake-up: go on */
			break;
	}
	return c->dead ? c->dead_err : 0;
}

int vcxl_conn_on_writable(struct vcxl_conn *c)
{
	int rc = tx_flush(c);

	if (rc == -EAGAIN)
		rc = 0;
	/* requests already read ahead wait for no EPOLLIN: serve them now */
	if (!rc && !c->dead && !c->tx_head && c->rb_off < c->rb_len)
		rc = vcxl_conn_on_readable(c);
	return c->dead ? c->dead_err : rc;
}

bool vcxl_conn_wants_write(const struct vcxl_conn *c)
{
	return c->tx_head != NULL;
}

bool vcxl_conn_dead(const struct vcxl_conn *c)
{
	return c->dead;
}

void vcxl_conn_get_stats(const struct vcxl_conn *c, struct vcxl_conn_stats *st)
{
	*st = c->st;
}

const struct vcxl_dma_table *vcxl_conn_dma(const struct vcxl_conn *c)
{
	return &c->dma;
}
