// SPDX-License-Identifier: BSD-3-Clause
/*
 * Message framing over a non-blocking transport: requests and replies are
 * reassembled from a read-ahead buffer (fds go to the message holding the
 * read's last byte), headers are checked before any payload is allocated,
 * and output that the socket does not take now is queued for EPOLLOUT.
 */
#include <errno.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "conn.h"
#include "../common/sigbus_guard.h"

/* The last message freed, kept for the next one read: a request costs no
 * allocation (messages are made and freed on the loop's thread only). */
static struct vcxl_msg *msg_spare;

static struct vcxl_msg *msg_new(void)
{
	struct vcxl_msg *m = msg_spare;

	if (!m)
		return calloc(1, sizeof(*m));
	msg_spare = NULL;
	memset(m, 0, offsetof(struct vcxl_msg, small));
	return m;
}

void conn_msg_free(struct vcxl_msg *m)
{
	if (!m)
		return;
	for (unsigned i = 0; i < m->nfds; i++)
		if (m->fds[i] >= 0)
			close(m->fds[i]);
	if (m->data != m->small)
		free(m->data);
	if (msg_spare)
		free(m);
	else
		msg_spare = m;
}

void conn_kill(struct vcxl_conn *c, int err)
{
	if (!c->dead) {
		/* replies held for requests handled before the end go out first,
		 * as they would have uncorked (a failed send comes back here with
		 * nothing held) */
		conn_cork_flush(c);
		c->dead = true;
		c->dead_err = err ? err : -EIO;
	}
}

/* iov's bytes into dst: 0, or -EFAULT. A REGION_READ reply may come straight
 * from memory a client can map: a fault there ends this connection (the
 * caller's), not the server. */
static int iov_copy_guarded(uint8_t *dst, const struct iovec *iov, int iovcnt)
{
	for (int i = 0; i < iovcnt; i++) {
		if (vcxl_guarded_memcpy(dst, iov[i].iov_base, iov[i].iov_len))
			return -EFAULT;
		dst += iov[i].iov_len;
	}
	return 0;
}

/* Queue what could not be sent now; the loop flushes it on EPOLLOUT. */
static int tx_queue(struct vcxl_conn *c, const struct iovec *iov, int iovcnt, size_t skip, int fd,
		    unsigned nfds)
{
	struct vcxl_tx *t = calloc(1, sizeof(*t));
	size_t total = 0;

	for (int i = 0; i < iovcnt; i++)
		total += iov[i].iov_len;
	if (!t || !(t->buf = malloc(total ? total : 1))) {
		free(t);
		conn_kill(c, -ENOMEM);
		return -ENOMEM;
	}
	if (iov_copy_guarded(t->buf, iov, iovcnt)) {
		free(t->buf);
		free(t);
		conn_kill(c, -EFAULT);
		return -EFAULT;
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

int conn_tx_flush(struct vcxl_conn *c)
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

/* Send one message now; on a full socket the rest is queued. */
static int send_now(struct vcxl_conn *c, const struct iovec *iov, int iovcnt, int fd)
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

/* The held replies, in one write. */
int conn_cork_flush(struct vcxl_conn *c)
{
	struct iovec v = {.iov_base = c->ck_buf, .iov_len = c->ck_len};

	if (!c->ck_len)
		return 0;
	c->ck_len = 0;
	return send_now(c, &v, 1, -1);
}

/* Append a reply to the held ones: false when it must go on its own (too
 * large, or the buffer cannot grow). Bytes that fault kill the connection;
 * the replies held before it still go, without its part. */
static bool cork_add(struct vcxl_conn *c, const struct iovec *iov, int iovcnt)
{
	size_t total = 0;

	for (int i = 0; i < iovcnt; i++)
		total += iov[i].iov_len;
	if (total > CONN_CORK_MAX)
		return false;
	if (c->ck_len + total > c->ck_cap) {
		size_t cap = c->ck_cap ? c->ck_cap * 2 : CONN_CORK_MAX;
		uint8_t *b;

		while (cap < c->ck_len + total)
			cap *= 2;
		if (cap > CONN_CORK_MAX * 16 || !(b = realloc(c->ck_buf, cap)))
			return false;
		c->ck_buf = b;
		c->ck_cap = cap;
	}
	if (iov_copy_guarded(c->ck_buf + c->ck_len, iov, iovcnt))
		conn_kill(c, -EFAULT);
	else
		c->ck_len += total;
	return true;
}

/*
 * Requests a client sends without waiting for each reply (QEMU's config load
 * writes Command, maps BAR0, sets MSI-X, then changes the migration state and
 * reads the decoders, all before it waits) reach the server together: each
 * reply sent as it is made wakes the client's reader, which on a small host
 * then preempts the server before its next request. Held while the next
 * request comes from what one read brought (conn_step sends them before it
 * reads the socket again) and at most until the loop's turn ends, they go in
 * one write. A message with an fd, a large one, and a server->client request
 * (conn_send) send what is held first, in order.
 */
void conn_cork(struct vcxl_conn *c)
{
	c->corked = true;
}

void conn_uncork(struct vcxl_conn *c)
{
	c->corked = false;
	conn_cork_flush(c);
}

void conn_cork_free(struct vcxl_conn *c)
{
	free(c->ck_buf);
	c->ck_buf = NULL;
	c->ck_len = c->ck_cap = 0;
	c->corked = false;
}

int conn_send(struct vcxl_conn *c, const struct iovec *iov, int iovcnt, int fd)
{
	int rc = conn_cork_flush(c);

	return rc ? rc : send_now(c, iov, iovcnt, fd);
}

/* A reply: held while corked (no fd, small enough), else sent now. */
static void send_reply(struct vcxl_conn *c, const struct iovec *iov, int iovcnt, int fd)
{
	if (c->dead)
		return;
	if (c->corked && fd < 0 && !c->tx_head && cork_add(c, iov, iovcnt))
		return;
	conn_send(c, iov, iovcnt, fd);
}

void conn_send_reply(struct vcxl_conn *c, const struct vcxl_msg *m, struct reply *r)
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
		c->st.by_errno[r->err > 0 && r->err < VCXL_STATS_ERRNOS ? r->err : 0]++;
		send_reply(c, iov, 1, -1);
		return;
	}
	for (int i = 0; i < r->iovcnt; i++) {
		iov[n++] = r->iov[i];
		h.msg_size += (uint32_t)r->iov[i].iov_len;
	}
	send_reply(c, iov, n, r->fd);
}

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
	if (m->len && m->len <= sizeof(m->small)) {
		m->data = m->small;
	} else if (m->len) {
		m->data = malloc(m->len);
		if (!m->data)
			return -ENOMEM;
	}
	return 0;
}

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

int conn_rx_step(struct vcxl_conn *c, struct vcxl_msg **out)
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
			m = msg_new();
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
