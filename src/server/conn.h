/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Private to src/server: one struct vcxl_conn per connected client, shared by
 * the files that serve it:
 *   conn.c      lifecycle and the entry points the event loop calls
 *               (vcxl_conn_*), message dispatch: handlers on the coroutine
 *               (coro.c) when they may wait, requests queued meanwhile
 *               (a REGION_READ during a DMA wait answered at once, the
 *               REGION_WRITE that started the work acknowledged before it)
 *   framing.c   messages <-> the byte stream: reassembly from the read-ahead
 *               buffer, fds, header checks, the output queue, replies
 *   protocol.c  per-command validation and dispatch: VERSION, DMA_MAP/UNMAP,
 *               device/region info, region access, DEVICE_RESET
 *   irq.c       IRQ state: eventfds per index/vector, masks, arming the
 *               device's vectors, GET_IRQ_INFO/SET_IRQS
 *   dma_xfer.c  the device's DMA into client memory: mmapped windows or
 *               server->client DMA_READ/DMA_WRITE messages (the handler's
 *               coroutine yields until the reply)
 * transport.c (sockets, buffer) and dma.c (the DMA map table) sit below.
 */
#ifndef VCXL_SERVER_CONN_H
#define VCXL_SERVER_CONN_H

#include <pthread.h>
#include <stdatomic.h>
#include <time.h>

#include "coro.h"
#include "common/migstream.h"
#include "server/server.h"

#define CONN_BATCH 64
/* A request handler that does many pieces of work (WRITE_MULTI's entries)
 * yields one loop turn after this long of them. */
#define CONN_STEP_US	 1000
#define CONN_QUEUE_BYTES (16u << 20)
#define NUM_IRQ_INDEX	 (VFIO_PCI_REQ_IRQ_INDEX + 1)
/* A held reply at most this long (a larger one, or one with an fd, first
 * sends what is held, then itself) */
#define CONN_CORK_MAX 4096

/* What a suspended handler waits for. */
enum conn_wait {
	WAIT_DMA,      /* the client's reply to a DMA request (dma_deadline) */
	WAIT_BLOCKING, /* run_blocking's worker thread */
	WAIT_PAUSE,    /* one turn of the loop between two steps */
};

/* Payloads up to this size (register accesses, DMA replies) are kept in
 * the message itself: no allocation of their own. */
#define CONN_MSG_SMALL 64

struct vcxl_msg {
	struct vfio_user_hdr hdr;
	uint8_t *data; /* payload: hdr.msg_size - 16 bytes (small or malloc) */
	size_t len;
	int fds[VCXL_SRV_MAX_MSG_FDS];
	unsigned nfds;
	bool bad_fds; /* more fds than allowed, or a truncated control message */
	struct vcxl_msg *next;
	uint8_t small[CONN_MSG_SMALL];
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

/* DMA logging (migration.c): one bitmap per logged IOVA range */
struct mig_log_range {
	uint64_t iova, len; /* iova aligned down to the logging page size */
	uint64_t *bits;
};

/* A connection's migration (migration.c, docs/migration.md) */
struct conn_mig {
	uint32_t state;		 /* VFIO_DEVICE_STATE_*; RUNNING at connect */
	struct vcxl_mig_buf out; /* STOP_COPY: the saved stream */
	size_t out_off;		 /* bytes of it read */
	uint8_t *in;		 /* RESUMING: the stream written so far */
	size_t in_len, in_cap;
	bool in_bad; /* a write was refused: the stream cannot load */
	/* RESUMING: the device's state loaded once the whole stream arrived
	 * (its header's length), at the first request after it other than a
	 * DMA window's (preload_due until then), not at RESUMING -> STOP, which
	 * then only writes the client's pages: 1 loaded, -errno refused (the
	 * device reset, preload_err says why), 0 not yet (or bytes came after) */
	int preload;
	bool preload_due;
	char preload_err[VCXL_MIG_ERRMSG];
	bool dev_dirty; /* the device tracks its own writes to its memory */
	bool logging;
	bool said_unsupported; /* "not migratable" logged once */
	/* capability "dirty_in_stop_copy": the client asks for no
	 * DMA_LOGGING_REPORT once the device stopped; STOP_COPY's stream carries
	 * the pages the device wrote since the last one (DMAPAGES section) */
	bool dirty_in_data;
	uint64_t dma_pages_saved; /* the last STOP_COPY's DMAPAGES pages */
	bool out_pending;	  /* STOP_COPY's save waits for the first read */
	bool save_soon;		  /* or only for the transition's reply to go out */
	int out_err;		  /* STOP_COPY's save failed: every read fails with it */
	uint64_t log_pgsize;
	unsigned nranges;
	struct mig_log_range *ranges;
	/* a bit of ranges was set since logging started: until then every
	 * bitmap is zero, and no scan of them is made (the idle device's
	 * STOP_COPY, its save's DMAPAGES and the reports find nothing at once) */
	bool log_written;
};

struct vcxl_conn {
	struct vcxl_ratelimit log_rl; /* its client-triggered warnings (proto_err) */
	struct vcxl_conn_cfg cfg;
	const struct vcxl_dev_ops *ops;
	void *dev;
	const struct vcxl_io_ops *io;
	void *io_opaque;
	uint32_t num_regions, num_irqs;
	size_t msg_cap;

	bool negotiated, dead, write_multi;
	int dead_err;
	uint32_t client_max_xfer, client_max_fds;

	struct vcxl_dma_table dma;
	struct irq_index irqs[NUM_IRQ_INDEX];
	unsigned irq_fds; /* eventfds held in irqs[] (the fd budget: cfg.max_fds) */
	uint64_t pinned;  /* bytes of windows the device maps itself (cfg.max_dma_pinned) */

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
	/* A handler that may wait for its client (server->client DMA) runs on
	 * the connection's coroutine; while it waits (co_busy), the client's
	 * further requests are queued and the loop serves everyone else. */
	struct coro *co;
	struct vcxl_msg *co_msg; /* the request it handles (NULL: poll or client_gone) */
	/* The request the coroutine is handling, and whether its reply went
	 * early: a REGION_WRITE whose device work waits for the client's DMA
	 * (conn_dma_wait) is acknowledged first, or the client, waiting for that
	 * reply, could not serve the DMA (QEMU serves it from the loop its
	 * waiting thread holds) */
	const struct vcxl_msg *co_req;
	bool co_req_acked;
	int poll_ret; /* what that poll returned */
	bool co_busy;
	enum conn_wait wait; /* what the suspended coroutine waits for */
	/* run_blocking's worker thread (WAIT_BLOCKING) */
	int (*blk_fn)(void *arg);
	void *blk_arg;
	int blk_ret;
	atomic_int blk_done;
	pthread_t blk_th;
	/* closing: the device's reset for the next client runs on the coroutine */
	bool closing, gone_started, abandon;
	bool dev_released;	    /* the client's DMA windows and IRQs are gone from the device */
	uint16_t dma_id, dma_cmd;   /* the one outstanding DMA request */
	struct vcxl_msg *dma_reply; /* its reply once it came */
	int dma_err;		    /* why the wait ended without one */
	int64_t dma_deadline;	    /* ms, CLOCK_MONOTONIC */
	size_t q_bytes;
	unsigned q_len;
	unsigned q_fds; /* fds held by queued requests (VCXL_SRV_MAX_QUEUED_FDS) */
	struct vcxl_tx *tx_head, *tx_tail;
	/* Replies held while one turn of the loop serves requests the client sent
	 * together (conn_cork): sent in one write at its end, so that the client
	 * wakes once for them instead of once a reply */
	bool corked;
	uint8_t *ck_buf;
	size_t ck_len, ck_cap;
	uint16_t next_id;
	struct vcxl_conn_stats st;
	struct conn_mig mig;
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

static inline const char *conn_name(const struct vcxl_conn *c)
{
	return c->cfg.name ? c->cfg.name : "dev";
}

/* A rejected client message: a warning, rate-limited per connection */
#define proto_err(c, m, fmt, ...)                                                                  \
	vcxl_log_limited(&(c)->log_rl, conn_name(c), VCXL_LOG_WARN,                                \
			 "%s: " VCXL_PROTO_ERR_PREFIX "%s id %u: " fmt, conn_name(c),              \
			 vfio_user_command_name((m)->hdr.command), (m)->hdr.msg_id, ##__VA_ARGS__)

static inline int64_t now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

static inline void reply_payload(struct reply *r, const void *p, size_t len)
{
	r->iov[r->iovcnt].iov_base = (void *)p;
	r->iov[r->iovcnt].iov_len = len;
	r->iovcnt++;
}

/* vfio-user spec "REGION_WRITE": the reply carries the access, without data */
static inline void reply_region_write(struct reply *r, const void *access)
{
	reply_payload(r, access, sizeof(struct vfio_user_region_access));
}

static inline int reply_error(struct reply *r, int err)
{
	r->err = err;
	return err;
}

/* framing.c */
void conn_msg_free(struct vcxl_msg *m);
/* Mark the connection for closing with err (first error wins). */
void conn_kill(struct vcxl_conn *c, int err);
int conn_tx_flush(struct vcxl_conn *c);
int conn_send(struct vcxl_conn *c, const struct iovec *iov, int iovcnt, int fd);
/* Hold replies from now on (conn_uncork sends them, in one write) */
void conn_cork(struct vcxl_conn *c);
void conn_uncork(struct vcxl_conn *c);
int conn_cork_flush(struct vcxl_conn *c); /* send what is held, staying corked */
void conn_cork_free(struct vcxl_conn *c);
void conn_send_reply(struct vcxl_conn *c, const struct vcxl_msg *m, struct reply *r);
/* Receive more of the current message: 1 = complete (*out), 0 = would block, <0 = close. */
int conn_rx_step(struct vcxl_conn *c, struct vcxl_msg **out);

/* protocol.c */
bool conn_msg_no_fds(struct vcxl_conn *c, struct vcxl_msg *m);
bool conn_msg_take(struct vcxl_conn *c, struct vcxl_msg *m, struct reply *r, void *dst, size_t len);
void conn_dma_unmap_device(void *opaque, const struct vcxl_dma_map *dm);
/* Validate and serve one request (replies are conn.c's). */
void conn_handle_request(struct vcxl_conn *c, struct vcxl_msg *m);

/* irq.c */
int conn_handle_irq_info(struct vcxl_conn *c, struct vcxl_msg *m, struct reply *r);
int conn_handle_set_irqs(struct vcxl_conn *c, struct vcxl_msg *m, struct reply *r);
void conn_irq_index_free(struct irq_index *q);
void conn_irq_rearm_all(struct vcxl_conn *c);
void conn_irq_warm(void); /* the eventfd check's first lookups, done now */
void conn_irq(void *opaque, enum vcxl_irq_type type, unsigned vector);
void conn_nodev_irq(void *opaque, enum vcxl_irq_type type, unsigned vector);

/* migration.c: DEVICE_FEATURE, MIG_DATA_READ/WRITE (vfio-user migration v2) */
int conn_handle_device_feature(struct vcxl_conn *c, struct vcxl_msg *m, struct reply *r);
int conn_handle_mig_data_read(struct vcxl_conn *c, struct vcxl_msg *m, struct reply *r);
int conn_handle_mig_data_write(struct vcxl_conn *c, struct vcxl_msg *m, struct reply *r);
/* The device wrote [iova, iova + len) of client memory: dirty while logging. */
void conn_mig_log_write(struct vcxl_conn *c, uint64_t iova, uint64_t len);
/* DEVICE_RESET or the client gone: RUNNING, buffers and logging dropped. */
void conn_mig_reset(struct vcxl_conn *c);
/* After a request's reply went out, before the next is read */
void conn_mig_after_reply(struct vcxl_conn *c);
/* Before a request is handled: a load the whole stream made due runs, unless
 * the request is a DMA window's or more of the stream */
void conn_mig_before_request(struct vcxl_conn *c, uint16_t cmd);
/* The kernel's combination-transition rule (shortest path, no saving state
 * inside it): the next state on the way from cur to target. 0, or -EINVAL
 * for an unsupported state or no path. */
int vcxl_mig_next_state(uint32_t cur, uint32_t target, uint32_t *next);

/* dma_xfer.c */
extern const struct vcxl_dma_ops conn_dma_ops;
extern const struct vcxl_dma_ops conn_nodev_dma_ops;
extern const struct vcxl_dma_ops conn_closing_dma_ops; /* no DMA; waits allowed */

/* conn.c */
void conn_queue_msg(struct vcxl_conn *c, struct vcxl_msg *m);
struct vcxl_msg *conn_dequeue_msg(struct vcxl_conn *c);
/* The handler's coroutine: wait for the outstanding DMA's reply (NULL:
 * c->dma_err says why: -ETIMEDOUT, -ENOBUFS, -ECONNRESET). Only on it. */
struct vcxl_msg *conn_dma_wait(struct vcxl_conn *c);
/* vcxl_dma_ops.run_blocking / .pause for this connection (opaque: the conn). */
int conn_run_blocking(void *opaque, int (*fn)(void *arg), void *arg);
void conn_pause(void *opaque);

#endif /* VCXL_SERVER_CONN_H */
