// SPDX-License-Identifier: BSD-3-Clause
/*
 * One struct vcxl_conn per connected client: creation binds it to its device
 * (DMA ops, IRQ handler), the event loop drives it through vcxl_conn_*.
 *
 * Dispatch: a request whose handler may have to wait for the client (the
 * client mapped a DMA window without an fd, so device DMA there takes
 * DMA_READ/DMA_WRITE messages) runs on the connection's coroutine. When the
 * device's DMA waits for the client's reply, the handler yields: the loop
 * serves every other device, this client's further requests are queued
 * (bounded), its reply resumes the handler, and a client that never answers
 * fails only its own device's operation at dma_timeout_ms (-ETIMEDOUT). One
 * DMA request is outstanding per device at a time.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "conn.h"

void conn_queue_msg(struct vcxl_conn *c, struct vcxl_msg *m)
{
	m->next = NULL;
	if (c->q_tail)
		c->q_tail->next = m;
	else
		c->q_head = m;
	c->q_tail = m;
	c->q_len++;
	c->q_bytes += m->len + sizeof(*m);
	c->q_fds += m->nfds;
}

struct vcxl_msg *conn_dequeue_msg(struct vcxl_conn *c)
{
	struct vcxl_msg *m = c->q_head;

	if (!m)
		return NULL;
	c->q_head = m->next;
	if (!c->q_head)
		c->q_tail = NULL;
	c->q_len--;
	c->q_bytes -= m->len + sizeof(*m);
	c->q_fds -= m->nfds;
	return m;
}

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
	if (!c->cfg.max_dma_mapped)
		c->cfg.max_dma_mapped = VCXL_SRV_MAX_DMA_MAPPED;
	if (!c->cfg.max_fds)
		c->cfg.max_fds = VCXL_SRV_MAX_CLIENT_FDS;
	c->ops = ops;
	c->dev = dev;
	c->io = io;
	c->io_opaque = io_opaque;
	c->msg_cap = (size_t)c->cfg.max_xfer + VCXL_SRV_MSG_SLACK;
	c->client_max_xfer = VFIO_USER_DEF_MAX_XFER;
	c->client_max_fds = VFIO_USER_DEF_MAX_MSG_FDS;
	c->mig.state = c->st.mig.state = VFIO_DEVICE_STATE_RUNNING;
	vcxl_dma_init(&c->dma, c->cfg.max_dma_maps, VCXL_SRV_PGSIZE);
	vcxl_dma_set_budget(&c->dma, c->cfg.max_dma_mapped, c->cfg.max_fds);
	c->dma.on_release = conn_dma_unmap_device;
	c->dma.release_opaque = c;
	memset(&vi, 0, sizeof(vi));
	ops->get_info(dev, &vi);
	c->num_regions = vi.num_regions;
	c->num_irqs = vi.num_irqs;
	ops->set_dma(dev, &conn_dma_ops, c);
	ops->set_irq_handler(dev, conn_irq, c);
	return c;
}

/* The coroutine's body: one request, the device's poll, or (closing) the
 * device's reset for the next client; then back to the loop. */
static void conn_co_main(void *opaque)
{
	struct vcxl_conn *c = opaque;
	struct vcxl_msg *m = c->co_msg;

	c->co_msg = NULL;
	if (m) {
		c->co_req = m;
		c->co_req_acked = false;
		conn_handle_request(c, m);
		c->co_req = NULL;
	} else if (c->closing)
		c->ops->client_gone(c->dev);
	else
		c->poll_ret = c->ops->poll(c->dev);
}

/* Continue the suspended handler (its reply came, or the wait ended). */
static void conn_co_resume(struct vcxl_conn *c)
{
	c->co_busy = !coro_resume(c->co);
}

/* A REGION_WRITE's reply before its device work waits for the client (the
 * write itself is done: what waits is what it started, a job's DMA) */
static void conn_ack_early(struct vcxl_conn *c)
{
	const struct vcxl_msg *m = c->co_req;
	struct reply r = {.fd = -1};

	if (!m || c->co_req_acked || m->hdr.command != VFIO_USER_REGION_WRITE ||
	    (m->hdr.flags & VFIO_USER_F_NO_REPLY) ||
	    m->len < sizeof(struct vfio_user_region_access))
		return;
	reply_region_write(&r, m->data);
	conn_send_reply(c, m, &r);
	c->co_req_acked = true;
}

struct vcxl_msg *conn_dma_wait(struct vcxl_conn *c)
{
	struct vcxl_msg *m;

	conn_ack_early(c);
	conn_uncork(c); /* nothing held while the handler waits for its client */
	c->dma_reply = NULL;
	c->dma_err = 0;
	c->dma_deadline = now_ms() + c->cfg.dma_timeout_ms;
	c->wait = WAIT_DMA;
	coro_yield(c->co);
	m = c->dma_reply;
	c->dma_reply = NULL;
	return m;
}

static void *conn_blk_thread(void *opaque)
{
	struct vcxl_conn *c = opaque;

	c->blk_ret = c->blk_fn(c->blk_arg);
	atomic_store(&c->blk_done, 1);
	return NULL;
}

/* The device's blocking call on a worker thread; the handler waits on the
 * coroutine (its client's requests queue up), the loop goes on and resumes
 * it once the thread is done. In place when nobody can wait (not on the
 * coroutine) or nobody will (the connection is being torn down at once). */
int conn_run_blocking(void *opaque, int (*fn)(void *arg), void *arg)
{
	struct vcxl_conn *c = opaque;

	if (!c || !coro_running(c->co) || c->abandon)
		return fn(arg);
	c->blk_fn = fn;
	c->blk_arg = arg;
	atomic_store(&c->blk_done, 0);
	if (pthread_create(&c->blk_th, NULL, conn_blk_thread, c))
		return fn(arg);
	c->wait = WAIT_BLOCKING;
	while (!atomic_load(&c->blk_done) && !c->abandon)
		coro_yield(c->co);
	pthread_join(c->blk_th, NULL); /* done, or abandoned: wait here */
	return c->blk_ret;
}

/* One turn of the loop between two steps of a long operation. */
void conn_pause(void *opaque)
{
	struct vcxl_conn *c = opaque;

	if (!c || !coro_running(c->co) || c->abandon)
		return;
	c->wait = WAIT_PAUSE;
	coro_yield(c->co);
}

/* Resume a suspended handler whose wait is over: its DMA timed out (or can
 * never be answered: the client is gone), its thread finished, its pause
 * took its turn. */
static void conn_wake(struct vcxl_conn *c)
{
	if (!c->co_busy)
		return;
	switch (c->wait) {
	case WAIT_DMA:
		if (c->dma_reply)
			return;
		if (c->dead || c->abandon)
			c->dma_err = -ECONNRESET;
		else if (now_ms() >= c->dma_deadline)
			c->dma_err = -ETIMEDOUT;
		else
			return;
		break;
	case WAIT_BLOCKING:
		if (!atomic_load(&c->blk_done) && !c->abandon)
			return;
		break;
	case WAIT_PAUSE:
		break;
	}
	conn_co_resume(c);
}

/* Can this client's requests make the device wait for it? Only DMA into a
 * window without an fd does; windows change only between requests. */
static bool conn_may_wait(const struct vcxl_conn *c)
{
	for (unsigned i = 0; i < c->dma.n; i++)
		if (!c->dma.maps[i].ptr)
			return true;
	return false;
}

/* Requests that may block the device, on hardware (run_blocking): a device
 * reset, a config space write (Initiate FLR, Initiate CXL Reset: 100 ms and
 * more), a DMA_MAP (the kernel pins the whole window: seconds for a large
 * guest's RAM). */
static bool conn_may_block(const struct vcxl_msg *m)
{
	uint32_t region;

	switch (m->hdr.command) {
	case VFIO_USER_DEVICE_RESET:
	case VFIO_USER_REGION_WRITE_MULTI:
	case VFIO_USER_DMA_MAP:
		return true;
	case VFIO_USER_REGION_WRITE:
		if (m->len < offsetof(struct vfio_user_region_access, count))
			return false;
		memcpy(&region, m->data + offsetof(struct vfio_user_region_access, region),
		       sizeof(region));
		return region == VFIO_PCI_CONFIG_REGION_INDEX;
	}
	return false;
}

static void conn_dispatch(struct vcxl_conn *c, struct vcxl_msg *m)
{
	if ((m->hdr.flags & VFIO_USER_F_TYPE_MASK) == VFIO_USER_F_TYPE_REPLY) {
		if (c->co_busy && c->wait == WAIT_DMA && !c->dma_reply &&
		    m->hdr.msg_id == c->dma_id && m->hdr.command == c->dma_cmd) {
			c->dma_reply = m;
			conn_co_resume(c);
			return;
		}
		proto_err(c, m, "reply to no outstanding request");
		c->st.proto_errors++;
		conn_msg_free(m);
		return;
	}
	if (c->co_busy && c->wait == WAIT_DMA && !c->q_head &&
	    m->hdr.command == VFIO_USER_REGION_READ) {
		/* a read while the device waits for this client's DMA: answered now
		 * (nothing is queued before it), or a client that waits for it with
		 * the DMA's server unable to run would wait for the DMA timeout */
		conn_handle_request(c, m);
		return;
	}
	if (c->co_busy) {
		/* queued requests are bounded in count, bytes and the fds they hold:
		 * a client parking fds behind its own DMA wait would take the server's */
		conn_queue_msg(c, m);
		if (c->wait == WAIT_DMA &&
		    (c->q_len > VCXL_SRV_MAX_QUEUED || c->q_bytes > CONN_QUEUE_BYTES ||
		     c->q_fds > VCXL_SRV_MAX_QUEUED_FDS)) {
			c->dma_err = -ENOBUFS; /* the client floods instead of answering */
			conn_co_resume(c);
		}
		return;
	}
	if ((!conn_may_wait(c) && !conn_may_block(m)) || (!c->co && coro_create(&c->co))) {
		conn_handle_request(c, m);
		return;
	}
	c->co_msg = m;
	c->co_busy = !coro_start(c->co, conn_co_main, c);
}

int vcxl_conn_poll(struct vcxl_conn *c)
{
	if (!c->ops->poll || c->co_busy || c->closing)
		return -1;
	if (!conn_may_wait(c) || (!c->co && coro_create(&c->co)))
		return c->ops->poll(c->dev);
	c->co_msg = NULL;
	c->poll_ret = -1;
	c->co_busy = !coro_start(c->co, conn_co_main, c);
	return c->co_busy ? -1 : c->poll_ret;
}

/* The end of a connection, in two parts: what was the client's goes at once
 * (vcxl_conn_close), then the device is made ready for the next client
 * (ops->client_gone: under --on-disconnect reset a device reset and a scrub),
 * on the coroutine so that its slow steps (a hardware FLR, a large scrub)
 * let the loop serve every other device in between (vcxl_conn_close_step). */
bool vcxl_conn_blocked(const struct vcxl_conn *c)
{
	return c->co_busy && c->wait == WAIT_BLOCKING;
}

/* What of the device was the client's: its DMA windows (unmapped from the
 * device's IOMMU) and its interrupts. One owner of the device at a time:
 * never beside a device call that runs on the worker thread (a reset), so
 * it waits for that call to return (vcxl_conn_close_step). */
static void conn_release_device(struct vcxl_conn *c)
{
	if (c->dev_released || vcxl_conn_blocked(c))
		return;
	c->dev_released = true;
	/* a migration the client left: the device runs again, nothing kept */
	conn_mig_reset(c);
	c->ops->set_dma(c->dev, &conn_closing_dma_ops, c);
	c->ops->set_irq_handler(c->dev, conn_nodev_irq, NULL);
	/* a device that signals eventfds itself must drop the client's */
	for (uint32_t i = 0; c->ops->set_irq_eventfd && i < NUM_IRQ_INDEX; i++)
		for (uint32_t v = 0; c->irqs[i].trigger && v < c->irqs[i].count; v++)
			if (c->irqs[i].trigger[v] >= 0)
				c->ops->set_irq_eventfd(c->dev, i, v, -1);
	for (unsigned i = 0; i < NUM_IRQ_INDEX; i++)
		conn_irq_index_free(&c->irqs[i]);
	c->irq_fds = 0;
	vcxl_dma_remove_all(&c->dma);
}

bool vcxl_conn_close(struct vcxl_conn *c)
{
	struct vcxl_msg *m;

	if (c->closing)
		return vcxl_conn_close_step(c);
	c->closing = true;
	c->dead = true;
	if (!c->dead_err)
		c->dead_err = -ECONNRESET;
	/* a handler waiting for this client's DMA ends now, with the device's
	 * error; one waiting for the device (a reset) finishes in close_step */
	conn_wake(c);
	while ((m = conn_dequeue_msg(c)))
		conn_msg_free(m);
	conn_msg_free(c->rx);
	c->rx = NULL;
	for (unsigned i = 0; c->pfd_have && i < c->pnfds; i++)
		close(c->pfds[i]);
	c->pfd_have = false;
	free(c->rbuf);
	c->rbuf = NULL;
	c->rb_off = c->rb_len = 0;
	while (c->tx_head) {
		struct vcxl_tx *t = c->tx_head;

		c->tx_head = t->next;
		free(t->buf);
		free(t);
	}
	c->tx_tail = NULL;
	conn_cork_free(c);
	return vcxl_conn_close_step(c);
}

bool vcxl_conn_close_step(struct vcxl_conn *c)
{
	conn_wake(c);
	conn_release_device(c);
	if (c->co_busy)
		return false;
	/* a client that never negotiated could neither see nor change anything */
	if (c->negotiated && !c->gone_started) {
		c->gone_started = true;
		if (!c->co && coro_create(&c->co)) {
			c->ops->client_gone(c->dev);
			return true;
		}
		c->co_msg = NULL;
		c->co_busy = !coro_start(c->co, conn_co_main, c);
	}
	return !c->co_busy;
}

void vcxl_conn_destroy(struct vcxl_conn *c)
{
	if (!c)
		return;
	/* no more waiting: what is left runs in place */
	c->abandon = true;
	if (!c->closing)
		vcxl_conn_close(c);
	for (int i = 0; i < 1024 && !vcxl_conn_close_step(c); i++)
		;
	coro_destroy(c->co);
	c->ops->set_dma(c->dev, &conn_nodev_dma_ops, NULL);
	free(c);
}

/* A handler waits for its device (not for this client, whose flood would
 * fail its DMA with -ENOBUFS) and the queue is full: the client's further
 * requests stay unread until it is done. */
static bool conn_held(const struct vcxl_conn *c)
{
	return c->co_busy && c->wait != WAIT_DMA &&
	       (c->q_len >= VCXL_SRV_MAX_QUEUED || c->q_bytes > CONN_QUEUE_BYTES ||
		c->q_fds >= VCXL_SRV_MAX_QUEUED_FDS);
}

/* Complete requests already taken from the socket (queued during a DMA wait,
 * or in the read-ahead buffer) get no EPOLLIN wake-up of their own. */
static bool conn_pending(const struct vcxl_conn *c)
{
	return (c->q_head && !c->co_busy) || (c->rb_off < c->rb_len && !conn_held(c));
}

/* One message: a queued request (when no handler waits) or the next one from
 * the transport. false when there was none (or the stream broke). */
static bool conn_step(struct vcxl_conn *c)
{
	struct vcxl_msg *m = NULL;
	int rc;

	if (c->q_head && !c->co_busy) {
		conn_dispatch(c, conn_dequeue_msg(c));
		return true;
	}
	if (conn_held(c))
		return false;
	if (c->rb_off == c->rb_len)
		conn_cork_flush(c); /* what is held goes before the socket is read again */
	rc = conn_rx_step(c, &m);
	if (rc < 0) {
		conn_kill(c, rc);
		return false;
	}
	if (rc == 0)
		return false;
	conn_dispatch(c, m);
	return true;
}

int vcxl_conn_drain(struct vcxl_conn *c)
{
	conn_cork(c);
	conn_wake(c);
	for (int i = 0; i < CONN_BATCH && conn_pending(c) && !c->dead && !c->tx_head; i++)
		if (!conn_step(c))
			break;
	conn_uncork(c);
	if (c->dead)
		return c->dead_err;
	return conn_pending(c) && !c->tx_head ? 1 : 0;
}

int vcxl_conn_on_readable(struct vcxl_conn *c)
{
	conn_cork(c);
	for (int i = 0; i < CONN_BATCH && !c->dead && !c->tx_head; i++) {
		if (!conn_step(c))
			break;
		if (c->cfg.max_batch && (unsigned)i + 1 >= c->cfg.max_batch && !conn_pending(c))
			break; /* read-ahead bytes get no wake-up: go on while there are some */
	}
	conn_uncork(c);
	return c->dead ? c->dead_err : 0;
}

int vcxl_conn_on_writable(struct vcxl_conn *c)
{
	int rc = conn_tx_flush(c);

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

bool vcxl_conn_busy(const struct vcxl_conn *c)
{
	return c->co_busy;
}

int vcxl_conn_timeout(const struct vcxl_conn *c)
{
	int64_t left;

	if (!c->co_busy)
		return -1;
	if (c->wait == WAIT_PAUSE)
		return 0;
	if (c->wait == WAIT_BLOCKING) /* the worker thread is looked at every ms */
		return atomic_load(&c->blk_done) ? 0 : 1;
	left = c->dma_deadline - now_ms();
	return left <= 0 ? 0 : left > INT32_MAX ? INT32_MAX : (int)left;
}

void vcxl_conn_get_stats(const struct vcxl_conn *c, struct vcxl_conn_stats *st)
{
	*st = c->st;
}

const struct vcxl_dma_table *vcxl_conn_dma(const struct vcxl_conn *c)
{
	return &c->dma;
}
