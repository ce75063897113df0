/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The vfio-user server: transport (UNIX sockets with SCM_RIGHTS, or an
 * in-memory buffer for fuzzing), the protocol layer (one struct vcxl_conn per
 * connected client: message reassembly, validation, dispatch, DMA map table,
 * IRQ eventfds, server->client DMA), and the epoll event loop serving any
 * number of devices.
 *
 * The protocol layer reaches its device only through struct vcxl_dev_ops
 * (vfio_cxl.h): the vfio-cxl core's own table, vcxl_vdev_ops, or a fake
 * device's in tests and fuzzers. It never sees a backend.
 */
#ifndef VCXL_SERVER_H
#define VCXL_SERVER_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>
#include <sys/uio.h>

#include "vfio-cxl/vfio_cxl.h"
#include "vcxl/vfio_user.h"

/* ---------------------------------------------------------------------- */
/* Logging (stderr, one line per message)                                  */
/* ---------------------------------------------------------------------- */
enum vcxl_log_level {
	VCXL_LOG_ERROR = 0,
	VCXL_LOG_WARN,
	VCXL_LOG_INFO,
	VCXL_LOG_DEBUG,
};
void vcxl_log_set_level(enum vcxl_log_level lvl);
enum vcxl_log_level vcxl_log_get_level(void);
/* "error"|"warn"|"info"|"debug" -> 0 or -EINVAL */
int vcxl_log_parse_level(const char *s, enum vcxl_log_level *lvl);
void vcxl_log(enum vcxl_log_level lvl, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* Start-up: lines below warn are held from vcxl_log_hold() until
 * vcxl_log_release(): printed (in order, with their times) once the start
 * succeeded, dropped when it was refused, so that a refused start prints its
 * error as its only line. Warnings and errors are never held. */
/* The eventfd checks' directory (/proc/self/fd), opened once: before the
 * loop, so that a client's first SET_IRQS does not add an fd for good */
void vcxl_irq_init(void);
void vcxl_log_hold(void);
void vcxl_log_release(bool print);
bool vcxl_log_held(void);
/* Every rejected client message is logged at warn with this prefix. */
#define VCXL_PROTO_ERR_PREFIX "protocol error: "

/* Client-triggered log lines, rate-limited per source (a connection, a
 * listener): at most VCXL_LOG_RATE_BURST lines per VCXL_LOG_RATE_WINDOW_MS,
 * then nothing until the next window, whose first line is preceded by one
 * "WHO: N client-triggered messages suppressed". Zero-initialised. */
#define VCXL_LOG_RATE_BURST	50
#define VCXL_LOG_RATE_WINDOW_MS 1000
struct vcxl_ratelimit {
	int64_t window_ms; /* start of the current window */
	unsigned lines;	   /* printed in it */
	unsigned long suppressed;
};
/* The decision at now_ms: true if a line may be printed; *report is the
 * count suppressed before it to report first (0: none). */
bool vcxl_ratelimit_allow(struct vcxl_ratelimit *rl, int64_t now_ms, unsigned long *report);
/* vcxl_log through rl (lines the level filters out are not counted) */
void vcxl_log_limited(struct vcxl_ratelimit *rl, const char *who, enum vcxl_log_level lvl,
		      const char *fmt, ...) __attribute__((format(printf, 4, 5)));

/* ---------------------------------------------------------------------- */
/* Readiness (systemd's sd_notify protocol, without libsystemd)            */
/* ---------------------------------------------------------------------- */
#define VCXL_NOTIFY_ENV	     "NOTIFY_SOCKET" /* where the service manager listens */
#define VCXL_NOTIFY_READY    "READY=1"	     /* sent once everything start-up does is done */
#define VCXL_NOTIFY_STOPPING "STOPPING=1"    /* sent when the server starts to exit */
/* A datagram socket connected to addr ("/path" or "@abstract"): fd or -errno
 * (-EINVAL empty, -EAFNOSUPPORT other forms, -ENAMETOOLONG, connect's errno) */
int vcxl_notify_open(const char *addr);
/* The longest vcxl_notify_send waits for room in a full queue */
#define VCXL_NOTIFY_WAIT_MS 100
/* Send one notification ("VAR=value" lines) on fd without blocking longer
 * than VCXL_NOTIFY_WAIT_MS: 0 or -errno (-EAGAIN: the queue stayed full) */
int vcxl_notify_send(int fd, const char *state);

/* ---------------------------------------------------------------------- */
/* Limits                                                                  */
/* ---------------------------------------------------------------------- */
#define VCXL_SRV_MAX_MSG_FDS	16	   /* fds the server accepts per message */
#define VCXL_SRV_MAX_XFER	(1u << 20) /* max_data_xfer_size the server accepts */
#define VCXL_SRV_MAX_DMA_MAPS	4096	   /* DMA windows valid at once */
#define VCXL_SRV_MSG_SLACK	4096	   /* header/struct room above max_data_xfer_size */
#define VCXL_SRV_MAX_QUEUED	256	   /* client requests queued during its DMA wait */
#define VCXL_SRV_MAX_QUEUED_FDS 16	   /* fds those queued requests may hold */
#define VCXL_SRV_DMA_TIMEOUT_MS 5000	   /* wait for the client's DMA_READ/WRITE reply */
#define VCXL_SRV_PGSIZE		4096ull
/* Per-client budgets (docs/security.md, "Per-client budgets"); the server
 * sets its own from the machine at start (vcxl-server --help). */
#define VCXL_SRV_MAX_DMA_MAPPED (4ull << 40) /* address space of mmapped DMA windows */
#define VCXL_SRV_MAX_CLIENT_FDS 4096	     /* fds held: DMA windows and IRQ eventfds */

/* ---------------------------------------------------------------------- */
/* Transport                                                               */
/* ---------------------------------------------------------------------- */
struct vcxl_io_ops {
	/* Send iov (one message) with fds attached to its first byte.
	 * Returns bytes sent (may be short), -EAGAIN or -errno. */
	ssize_t (*send)(void *io, const struct iovec *iov, int iovcnt, const int *fds,
			unsigned nfds);
	/* Receive up to len bytes. Received fds are stored in fds[0..*nfds)
	 * (at most maxfds; more are closed and *ctrunc set, as is a truncated
	 * control message). Returns bytes, 0 on EOF, -EAGAIN or -errno. */
	ssize_t (*recv)(void *io, void *buf, size_t len, int *fds, unsigned maxfds, unsigned *nfds,
			bool *ctrunc);
	/* Wait until readable (or writable): 0, -ETIMEDOUT or -errno. */
	int (*wait)(void *io, bool for_write, int timeout_ms);
};

/* UNIX socket transport: io is (void *)(intptr_t)fd of a connected socket. */
extern const struct vcxl_io_ops vcxl_sock_io_ops;
static inline void *vcxl_sock_io(int fd)
{
	return (void *)(intptr_t)fd;
}
/* Listen on path (stale sockets removed; a live server there is -EADDRINUSE). */
int vcxl_sock_listen(const char *path, int backlog);
/* The same with an explicit mode (-1: as the umask says) and group
 * ((gid_t)-1: the process's): the socket is bound in a private directory
 * beside path, given its group and mode there and renamed into place, never
 * following a path another user could swap (transport.c), and only then
 * listens, so it is never wider than asked, nor connectable before. */
int vcxl_sock_listen_perm(const char *path, int backlog, int mode, gid_t gid);
/* Accept one client, non-blocking and close-on-exec: fd or -errno. */
int vcxl_sock_accept(int lfd);
/* Connect (blocking, close-on-exec): fd or -errno. */
int vcxl_sock_connect(const char *path);
/* Blocking helpers for clients: send a whole message with fds; receive
 * exactly len bytes, collecting fds (closed beyond maxfds). */
int vcxl_sock_send_all(int fd, const struct iovec *iov, int iovcnt, const int *fds, unsigned nfds);
/* One blocking recvmsg of up to len bytes: the count, 0 at EOF, or -errno. */
ssize_t vcxl_sock_recv_some(int fd, void *buf, size_t len, int *fds, unsigned maxfds,
			    unsigned *nfds, bool *ctrunc);
int vcxl_sock_recv_all(int fd, void *buf, size_t len, int *fds, unsigned maxfds, unsigned *nfds,
		       bool *ctrunc);

/* Buffer transport (fuzzing, unit tests): input bytes are consumed in order;
 * fds can be queued to arrive with the byte at a given input offset; output
 * is appended to a growable buffer. */
struct vcxl_bufio {
	const uint8_t *in;
	size_t in_len, in_off;
	struct {
		size_t at;
		int fd;
	} infd[32];
	unsigned n_infd, infd_next;
	uint8_t *out;
	size_t out_len, out_cap;
	unsigned out_fds; /* fds the server attached (not duplicated) */
	/* called with every fd the server attaches, as a client would receive
	 * it (fuzzing: what a client can do to it); may be NULL */
	void (*on_fd)(void *opaque, int fd);
	void *on_fd_opaque;
	size_t max_out; /* 0 = unbounded; beyond it send returns -EAGAIN */
	unsigned sends; /* send calls that took bytes (a client's wake-ups) */
};
extern const struct vcxl_io_ops vcxl_buf_io_ops;
void vcxl_bufio_init(struct vcxl_bufio *b, const void *in, size_t len);
/* fd arrives with the recv() that consumes input byte `at` */
int vcxl_bufio_add_fd(struct vcxl_bufio *b, size_t at, int fd);
void vcxl_bufio_fini(struct vcxl_bufio *b);

/* ---------------------------------------------------------------------- */
/* DMA map table                                                           */
/* ---------------------------------------------------------------------- */
struct vcxl_dma_map {
	uint64_t iova, size;
	uint32_t flags;	 /* VFIO_USER_F_DMA_REGION_READ/WRITE */
	int fd;		 /* -1: no fd, reached through DMA_READ/WRITE messages */
	uint64_t offset; /* in fd */
	void *map_base;	 /* mmap() result (page aligned) or NULL */
	size_t map_len;
	uint8_t *ptr;	 /* host address of iova, or NULL */
	bool dev_mapped; /* also mapped for the device's own DMA (IOMMU) */
};

/* What one client's windows cost the server, and its budget (0: none). */
struct vcxl_dma_budget {
	uint64_t mapped, max_mapped; /* bytes of address space mmapped */
	unsigned fds, max_fds;	     /* fds held by windows */
};

struct vcxl_dma_table {
	struct vcxl_dma_map *maps; /* sorted by iova, non-overlapping */
	unsigned n, cap, max;
	uint64_t pgsize;
	/* Called for every mapping before it is dropped (e.g. to undo an IOMMU
	 * mapping of the device); may be NULL. */
	void (*on_release)(void *opaque, const struct vcxl_dma_map *m);
	void *release_opaque;
	struct vcxl_dma_budget budget;
};

void vcxl_dma_init(struct vcxl_dma_table *t, unsigned max_maps, uint64_t pgsize);
/* Budgets of mapped bytes and window fds (0: unlimited). */
void vcxl_dma_set_budget(struct vcxl_dma_table *t, uint64_t max_mapped, unsigned max_fds);
/* Add [iova, iova+size) backed by fd at offset (fd -1: no fd). The table
 * takes ownership of fd on success AND on failure. -EINVAL (size 0,
 * alignment, overflow, flags), -EEXIST (overlap), -ENOSPC (count), -EDQUOT
 * (mapped bytes over budget), -EMFILE (window fds over budget), -ENODEV (the
 * fd is not shared memory or device-DAX: a copy from it could block), or
 * the mmap errno. */
int vcxl_dma_add(struct vcxl_dma_table *t, uint64_t iova, uint64_t size, uint32_t flags, int fd,
		 uint64_t offset);
/* Remove the mapping that matches exactly: 0 or -ENOENT. */
int vcxl_dma_remove(struct vcxl_dma_table *t, uint64_t iova, uint64_t size);
/* Remove every mapping inside [iova, iova+size) (VFIO type1 semantics):
 * 0 with *removed (may be 0), or -EINVAL if a mapping straddles the range. */
int vcxl_dma_remove_range(struct vcxl_dma_table *t, uint64_t iova, uint64_t size,
			  unsigned *removed);
void vcxl_dma_remove_all(struct vcxl_dma_table *t);
/* memcpy to or from client memory: -EFAULT instead of dying of SIGBUS when
 * the client's file no longer backs the window. */
int vcxl_dma_copy(void *dst, const void *src, size_t len);
/* Mapping containing iova, or NULL. */
const struct vcxl_dma_map *vcxl_dma_find(const struct vcxl_dma_table *t, uint64_t iova);
/* The same, for the table's owner to update a mapping's bookkeeping. */
struct vcxl_dma_map *vcxl_dma_lookup(struct vcxl_dma_table *t, uint64_t iova);

/* ---------------------------------------------------------------------- */
/* Connection (protocol layer)                                             */
/* ---------------------------------------------------------------------- */
struct vcxl_conn;

struct vcxl_conn_cfg {
	uint32_t max_xfer;     /* our max_data_xfer_size; 0 = VCXL_SRV_MAX_XFER */
	unsigned max_dma_maps; /* 0 = VCXL_SRV_MAX_DMA_MAPS */
	unsigned max_msg_fds;  /* 0 = VCXL_SRV_MAX_MSG_FDS */
	/* per-client budgets, 0 = the VCXL_SRV_MAX_* default */
	uint64_t max_dma_mapped; /* bytes of mmapped DMA windows (-EDQUOT) */
	uint64_t max_dma_pinned; /* pinned for the device's own DMA (-EDQUOT); 0 = unlimited */
	unsigned max_fds;	 /* fds held: windows and IRQ eventfds (-EMFILE) */
	int dma_timeout_ms;	 /* 0 = VCXL_SRV_DMA_TIMEOUT_MS */
	const char *name;	 /* for logs */
	/* Messages taken from the transport per readable event; 0 = until it
	 * would block (bounded). A level-triggered socket loop uses 1, which
	 * spares the recvmsg that only says EAGAIN. */
	unsigned max_batch;
};

/* Counters of one connection (the control socket reports them). */
#define VCXL_STATS_CMDS	  32  /* messages by vfio-user command, 0..31 */
#define VCXL_STATS_ERRNOS 134 /* error replies by errno, 1..133 (0: other) */
/* A connection's migration (docs/migration.md), for the control socket. */
#define VCXL_MIG_ERRMSG 160
struct vcxl_mig_stats {
	uint32_t state;	     /* VFIO_DEVICE_STATE_* now */
	bool logging;	     /* DMA logging started */
	uint64_t bytes_sent; /* MIG_DATA_READ bytes of the current/last stream */
	uint64_t bytes_received;
	uint64_t state_bytes;	    /* the device state's size: last saved, or being loaded */
	uint64_t stop_copy_ms;	    /* the last STOP_COPY: entered to left */
	int64_t stop_copy_since_ms; /* CLOCK_MONOTONIC ms STOP_COPY began; 0: not in it */
	uint64_t transitions, failures;
	/* pages of device memory the device wrote that DMA logging reports
	 * returned since logging started (the stream leaves them out) */
	uint64_t devmem_reported;
	char last_error[VCXL_MIG_ERRMSG]; /* why the last transition failed ("" none) */
};

/* "running", "stop-copy", ... (VFIO_DEVICE_STATE_*) */
const char *vcxl_mig_state_name(uint32_t state);

struct vcxl_conn_stats {
	uint64_t msgs, errors, proto_errors, dma_msgs, irqs;
	uint64_t by_cmd[VCXL_STATS_CMDS];
	uint64_t by_errno[VCXL_STATS_ERRNOS];
	/* the device's DMA into client memory: bytes it read (guest memory to
	 * the device) and wrote (the device to guest memory) */
	uint64_t dma_read_bytes, dma_write_bytes;
	struct vcxl_mig_stats mig;
};

/* ---------------------------------------------------------------------- */
/* Device counters (stats.c): a device's history across its clients        */
/* ---------------------------------------------------------------------- */
/* Add a's request, error, DMA and interrupt counters into t (modulo 2^64);
 * a's migration is the connection's own and is not added. The loop adds a
 * client's counters into its device's when the client leaves, so counting
 * costs the request path nothing but the connection's own increments. */
void vcxl_stats_add(struct vcxl_conn_stats *t, const struct vcxl_conn_stats *a);
/* out = now - then, counter by counter (a client's share since it connected) */
void vcxl_dev_counters_sub(struct vcxl_dev_counters *out, const struct vcxl_dev_counters *now,
			   const struct vcxl_dev_counters *then);
/* "device_reset", "flr", "cxl_reset", "disconnect_keep", "disconnect_reset";
 * NULL past VCXL_DEV_RESET_KINDS */
const char *vcxl_reset_kind_name(unsigned kind);
/* The counters as query-stats serves them (a json-c object, caller puts it):
 * requests, requests_by_command, errors, errors_by_errno, protocol_errors,
 * dma_read_bytes, dma_write_bytes, dma_messages, interrupts, resets.KIND. */
struct json_object;
struct json_object *vcxl_stats_json(const struct vcxl_conn_stats *st,
				    const struct vcxl_dev_counters *dev);

/* Bind a connected client to a device. Installs DMA ops and the IRQ handler
 * on the device; closing removes them and calls ops->client_gone if the
 * client negotiated VERSION (before that it could see or change nothing). */
struct vcxl_conn *vcxl_conn_create(const struct vcxl_conn_cfg *cfg, const struct vcxl_dev_ops *ops,
				   void *dev, const struct vcxl_io_ops *io, void *io_opaque);
/* The client is gone (its fd may be closed now): drop what was its, then
 * make the device ready for the next one (client_gone) on the coroutine, in
 * steps that let the loop serve other devices. true once that is done;
 * false: call vcxl_conn_close_step every turn (vcxl_conn_timeout says
 * when) until it returns true, then vcxl_conn_destroy. */
bool vcxl_conn_close(struct vcxl_conn *c);
bool vcxl_conn_close_step(struct vcxl_conn *c);
/* Free it; what is left of closing runs first, in place (blocking). */
void vcxl_conn_destroy(struct vcxl_conn *c);
/* Socket readable: receive and handle messages (bounded batch). 0 to keep
 * the connection, -errno (EOF = -ECONNRESET, broken stream = -EPROTO) to
 * close it. */
int vcxl_conn_on_readable(struct vcxl_conn *c);
/* Socket writable: flush queued output. 0 or -errno (close). */
int vcxl_conn_on_writable(struct vcxl_conn *c);
/* Handle requests already received but not yet served: queued during a DMA
 * wait, or complete in the read-ahead buffer (no EPOLLIN comes for those).
 * At most one batch per call, so a loop calling it for every connection is
 * fair. 1: more are pending (call again without waiting), 0, or -errno. */
int vcxl_conn_drain(struct vcxl_conn *c);
bool vcxl_conn_wants_write(const struct vcxl_conn *c);
/* A request handler waits for this client (server->client DMA): the device's
 * operation is suspended; do not run the device's timers meanwhile. */
bool vcxl_conn_busy(const struct vcxl_conn *c);
/* Run the device's timers and background work (ops->poll: a model job's next
 * step), on the connection's coroutine when that work may wait for this
 * client's DMA, like a request. The poll's timeout, or -1 while busy (it
 * waits: vcxl_conn_timeout has the deadline). */
int vcxl_conn_poll(struct vcxl_conn *c);
/* ms until that wait's deadline (call vcxl_conn_drain then), -1 for none. */
int vcxl_conn_timeout(const struct vcxl_conn *c);
/* A device call of this connection runs on a worker thread (run_blocking: a
 * reset): until it returns nothing else may use the device. */
bool vcxl_conn_blocked(const struct vcxl_conn *c);
/* True when the connection must be closed (fatal error seen). */
bool vcxl_conn_dead(const struct vcxl_conn *c);
void vcxl_conn_get_stats(const struct vcxl_conn *c, struct vcxl_conn_stats *st);
const struct vcxl_dma_table *vcxl_conn_dma(const struct vcxl_conn *c);

/* ---------------------------------------------------------------------- */
/* Event loop                                                              */
/* ---------------------------------------------------------------------- */
struct vcxl_loop;
int vcxl_loop_create(struct vcxl_loop **out);
/* Serve dev on a listening socket path (the loop unlinks it at destroy). */
int vcxl_loop_add_device(struct vcxl_loop *l, const char *path, const struct vcxl_dev_ops *ops,
			 void *dev, const struct vcxl_conn_cfg *cfg);
/* Sockets of devices added from now on get this mode (-1: umask) and group
 * ((gid_t)-1: the process's); see vcxl_sock_listen_perm. */
void vcxl_loop_set_socket_perm(struct vcxl_loop *l, int mode, gid_t gid);
/* A listening socket at path with the loop's socket mode and group (the
 * control socket's); fd or -errno. */
int vcxl_loop_listen(struct vcxl_loop *l, const char *path, int backlog);
/* Run until SIGTERM/SIGINT (signalfd; the signals are blocked by the caller
 * or by this function) or vcxl_loop_stop(). 0 or -errno. */
int vcxl_loop_run(struct vcxl_loop *l);
/* SIGUSR1 calls fn (the server uses it to simulate surprise removal). */
void vcxl_loop_on_sigusr1(struct vcxl_loop *l, void (*fn)(void *opaque), void *opaque);
void vcxl_loop_stop(struct vcxl_loop *l);
void vcxl_loop_destroy(struct vcxl_loop *l);
/* Watch another fd (the control socket): fn(opaque, epoll events) when
 * ready. 0 or -errno. vcxl_loop_unwatch before closing fd. */
int vcxl_loop_watch(struct vcxl_loop *l, int fd, uint32_t events,
		    void (*fn)(void *opaque, uint32_t events), void *opaque);
void vcxl_loop_unwatch(struct vcxl_loop *l, int fd);
/* What the loop knows of device i (for the control socket). */
struct vcxl_loop_dev_info {
	const char *path;
	const char *name;
	unsigned clients; /* accepted so far */
	bool connected;
	int pid, uid, gid; /* the client's SO_PEERCRED; -1 if unknown */
	int64_t since_ms;  /* CLOCK_MONOTONIC ms at accept */
	bool busy; /* a device call runs on a worker thread (a reset): leave the device alone */
	struct vcxl_conn_stats st; /* of the current connection */
	/* the device's history: every client's counters, the current one's
	 * included; its resets by kind (ops->counters), and the current
	 * client's share of them since it connected */
	struct vcxl_conn_stats total;
	struct vcxl_dev_counters resets, client_resets;
	/* a client left and the device was made ready for the next one
	 * (client_gone, then ops->prepare); failures: it could not be, and the
	 * device refused clients for a while */
	uint64_t handovers, handover_failures;
};
unsigned vcxl_loop_devices(const struct vcxl_loop *l);
/* 0, or -ENOENT if there is no device i. */
int vcxl_loop_device_info(const struct vcxl_loop *l, unsigned i, struct vcxl_loop_dev_info *info);

/* Size with K/M/G/T suffix (powers of 1024): 0 or -EINVAL. */
int vcxl_parse_size(const char *s, uint64_t *out);
/* The sooner of two poll timeouts in ms, -1 meaning none. */
static inline int vcxl_min_timeout(int a, int b)
{
	if (a < 0)
		return b;
	if (b < 0)
		return a;
	return a < b ? a : b;
}

#endif /* VCXL_SERVER_H */
