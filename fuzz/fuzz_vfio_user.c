// SPDX-License-Identifier: BSD-3-Clause
/*
 * libFuzzer harness: the vfio-user protocol layer fed whole client byte
 * streams through the buffer transport (no socket), bound to a real device
 * (model + vfio-cxl core, built fresh for every input so runs are
 * deterministic), with the event loop's service cycle (message batch, device
 * timers, queued requests) run until the stream ends.
 *
 * Input: [m] [fd map: n bytes] [stream], n = m % 33. Map byte i describes
 * the fds that arrive with the first byte of message i of the stream
 * (messages found by walking msg_size): bits 0-2 count, bit 3 kind (0 memfd,
 * 1 eventfd), bits 4-6 memfd size class (4 KiB << 2 * class, sparse).
 * m / 33 (0-7) picks the transport: 0 takes every byte at once; 1-7 one that
 * blocks like a full socket (sends refused with EAGAIN or taken in part,
 * reads short or EAGAIN), more often the higher it is, from a generator
 * seeded by the input, so the server's output queue, partial frames and the
 * coroutine's waits with queued requests all run.
 *
 * Every fd the server sends (region and BAR fds) is used as a hostile
 * client would: written at its first and last byte through a mapping,
 * written past its end, truncated, grown, fallocated past its end, sealed;
 * each resize must be refused (fz_abuse_fd).
 *
 * Checked after every batch and at the end: no crash, ASan/UBSan clean, no
 * host-owned register or out-of-region device memory changed (fuzz_dev.h),
 * every reply well-formed, and exactly one reply per request: the server
 * handles the stream's commands in order (its msgs counter says how many),
 * so its replies, in order, are those commands' (msg_id, command) but for
 * NO_REPLY ones: no reply to a reply, no id the client never sent, none
 * twice, none missing (but the one a handler still waits on when the
 * stream ends); after the connection is gone: no fd left open and
 * (libFuzzer's -detect_leaks) no memory leaked.
 */
#include <fcntl.h>
#include <sys/eventfd.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "../src/common/release.h"
#include "../src/common/sigbus_guard.h"

#include "fuzz_dev.h"
#include "fuzz_harness.h"

#define FZ_MAP_MAX   32
#define FZ_MAX_ITERS 4096

/*
 * A DMA window larger than its fd used to kill the server with SIGBUS on
 * device DMA past the end of the file (src/server/dma.c now refuses such
 * windows and guards its copies). memfds therefore come in the sizes the
 * input asks for; build with -DFZ_SHORT_DMA_FDS=0 to size them to cover the
 * window of the DMA_MAP they come with instead.
 */
#ifndef FZ_SHORT_DMA_FDS
#define FZ_SHORT_DMA_FDS 1
#endif
#define FZ_MAX_COVER ((uint64_t)INT64_MAX)

static int fz_make_fd(uint8_t spec, uint64_t cover)
{
	uint64_t size = 4096ull << (2 * ((spec >> 4) & 7));
	int fd;

	if (spec & 0x08)
		return eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
	if (!FZ_SHORT_DMA_FDS && cover > size && cover <= FZ_MAX_COVER)
		size = cover;
	fd = memfd_create("fuzz-guest", MFD_CLOEXEC);
	if (fd >= 0 && ftruncate(fd, (off_t)size)) {
		close(fd);
		return -1;
	}
	return fd;
}

/* offset + size of a DMA_MAP message at s (0 for other messages) */
static uint64_t fz_dma_extent(const uint8_t *s, size_t avail, const struct vfio_user_hdr *h)
{
	struct vfio_user_dma_map d;

	if (h->command != VFIO_USER_DMA_MAP || avail < sizeof(*h) + sizeof(d))
		return 0;
	memcpy(&d, s + sizeof(*h), sizeof(d));
	return d.offset + d.size < d.offset ? 0 : d.offset + d.size;
}

/* Queue the fds the map asks for at the message boundaries of the stream. */
static void fz_attach_fds(struct vcxl_bufio *b, const uint8_t *map, unsigned n, const uint8_t *s,
			  size_t len)
{
	size_t pos = 0;

	for (unsigned i = 0; i < n && pos + sizeof(struct vfio_user_hdr) <= len; i++) {
		struct vfio_user_hdr h;

		memcpy(&h, s + pos, sizeof(h));
		for (unsigned k = 0; k < (map[i] & 7u); k++) {
			int fd = fz_make_fd(map[i], fz_dma_extent(s + pos, len - pos, &h));

			if (fd >= 0 && vcxl_bufio_add_fd(b, pos, fd))
				close(fd);
		}
		if (h.msg_size < sizeof(h))
			break;
		pos += h.msg_size;
	}
}

struct fz_poke {
	volatile uint8_t *p;
	uint8_t v;
};

static void fz_poke_fn(void *arg)
{
	struct fz_poke *k = arg;

	*k->p = k->v;
}

/* What a client can do to an fd the server sent it, without the server:
 * stores inside it are the guest's business (and the canaries outside the
 * region must survive them); resizing must be refused. */
static void fz_abuse_fd(void *opaque, int fd)
{
	long pg = sysconf(_SC_PAGESIZE);
	struct stat st;
	uint8_t b = 0x5c;

	(void)opaque;
	if (fd < 0 || fstat(fd, &st) || !S_ISREG(st.st_mode) || st.st_size <= 0)
		return;
	size_t size = (size_t)st.st_size, pgsz = (size_t)pg;
	/* the first page, and the last one with the page past the end (small
	 * mappings: a 256 MiB one per reply would cost more than the input) */
	uint8_t *first = mmap(NULL, pgsz, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	size_t tail_off = size > pgsz ? (size - 1) & ~(pgsz - 1) : 0;
	uint8_t *tail =
	    mmap(NULL, 2 * pgsz, PROT_READ | PROT_WRITE, MAP_SHARED, fd, (off_t)tail_off);
	if (first != MAP_FAILED && tail != MAP_FAILED) {
		struct fz_poke k[3] = {{first, 0x5a},
				       {tail + (size - 1 - tail_off), 0xa5},
				       {tail + (size - tail_off), 0x11}};
		for (unsigned i = 0; i < 3; i++)
			if (vcxl_sigbus_guarded(fz_poke_fn, &k[i]) == 0 && i == 2 &&
			    size % pgsz == 0)
				fz_fail("a store past the end of a %zu-byte fd the server sent did "
					"not fault",
					size);
	}
	if (first != MAP_FAILED)
		munmap(first, pgsz);
	if (tail != MAP_FAILED)
		munmap(tail, 2 * pgsz);
	if (pwrite(fd, &b, 1, (off_t)size) == 1)
		fz_fail("pwrite past the end of an fd the server sent grew it");
	if (ftruncate(fd, 0) == 0 || ftruncate(fd, (off_t)size + pg) == 0)
		fz_fail("an fd the server sent could be resized");
	if (fallocate(fd, 0, (off_t)size, pg) == 0)
		fz_fail("fallocate past the end of an fd the server sent succeeded");
	if (fcntl(fd, F_ADD_SEALS, F_SEAL_WRITE) == 0)
		fz_fail("an fd the server sent could be write-sealed");
}

/* The commands of the client's stream, in order, as the server frames them. */
#define FZ_MAX_CMDS 8192
struct fz_oracle {
	struct {
		uint16_t id, cmd;
		bool reply; /* not NO_REPLY */
	} cmd[FZ_MAX_CMDS];
	unsigned ncmd;
	unsigned next; /* commands answered (or NO_REPLY) so far */
	uint64_t replies;
};

static void fz_oracle_init(struct fz_oracle *o, const uint8_t *s, size_t len)
{
	size_t pos = 0;

	o->ncmd = o->next = 0;
	o->replies = 0;
	while (len - pos >= sizeof(struct vfio_user_hdr) && o->ncmd < FZ_MAX_CMDS) {
		struct vfio_user_hdr h;
		uint32_t type;

		memcpy(&h, s + pos, sizeof(h));
		type = h.flags & VFIO_USER_F_TYPE_MASK;
		/* framing.c closes the stream at these: nothing after them is read */
		if (h.msg_size < sizeof(h) || h.msg_size > VCXL_SRV_MAX_XFER + VCXL_SRV_MSG_SLACK ||
		    (type != VFIO_USER_F_TYPE_CMD && type != VFIO_USER_F_TYPE_REPLY))
			break;
		if (type == VFIO_USER_F_TYPE_CMD) {
			o->cmd[o->ncmd].id = h.msg_id;
			o->cmd[o->ncmd].cmd = h.command;
			o->cmd[o->ncmd].reply = !(h.flags & VFIO_USER_F_NO_REPLY);
			o->ncmd++;
		}
		if (h.msg_size > len - pos)
			break;
		pos += h.msg_size;
	}
}

/* Skip the NO_REPLY commands among the first `handled`. */
static void fz_oracle_skip(struct fz_oracle *o, unsigned handled)
{
	while (o->next < handled && o->next < o->ncmd && !o->cmd[o->next].reply)
		o->next++;
}

/* A reply the server sent: the next command's, which it has handled. */
static void fz_oracle_reply(struct fz_oracle *o, const struct vfio_user_hdr *h, unsigned handled)
{
	fz_oracle_skip(o, handled);
	if (o->ncmd == FZ_MAX_CMDS && o->next >= o->ncmd)
		return; /* a stream longer than the oracle looks */
	if (o->next >= handled || o->next >= o->ncmd)
		fz_fail("reply id %u command %u to no request: %u commands handled, all answered",
			h->msg_id, h->command, handled);
	if (o->cmd[o->next].id != h->msg_id || o->cmd[o->next].cmd != h->command)
		fz_fail(
		    "reply id %u command %u where command %u's reply (id %u command %u) was due",
		    h->msg_id, h->command, o->next, o->cmd[o->next].id, o->cmd[o->next].cmd);
	o->next++;
	o->replies++;
}

/* Every message the server sent is a well-formed reply or a DMA request, and
 * every reply is the oracle's next. Complete messages are consumed; a partial
 * one (a short send) stays for the next call. */
static void fz_check_output(struct vcxl_bufio *b, struct fz_oracle *o, unsigned handled)
{
	size_t pos = 0;

	while (b->out_len - pos >= sizeof(struct vfio_user_hdr)) {
		struct vfio_user_hdr h;
		uint32_t type;

		memcpy(&h, b->out + pos, sizeof(h));
		type = h.flags & VFIO_USER_F_TYPE_MASK;
		if (h.msg_size < sizeof(h) || h.msg_size > VCXL_SRV_MAX_XFER + VCXL_SRV_MSG_SLACK)
			fz_fail("server message msg_size %u", h.msg_size);
		if (h.msg_size > b->out_len - pos)
			break; /* the rest comes with the next send */
		if (h.flags & ~VFIO_USER_F_KNOWN)
			fz_fail("server message flags 0x%x", h.flags);
		if (type == VFIO_USER_F_TYPE_REPLY) {
			if ((h.flags & VFIO_USER_F_ERROR) && (!h.error || h.msg_size != sizeof(h)))
				fz_fail("error reply with error %u, msg_size %u", h.error,
					h.msg_size);
			if (!(h.flags & VFIO_USER_F_ERROR) && h.error)
				fz_fail("success reply with error %u", h.error);
			fz_oracle_reply(o, &h, handled);
		} else if (type != VFIO_USER_F_TYPE_CMD ||
			   (h.command != VFIO_USER_DMA_READ && h.command != VFIO_USER_DMA_WRITE)) {
			fz_fail("server sent type %u command %u", type, h.command);
		}
		pos += h.msg_size;
	}
	/* the client consumed the complete messages */
	if (pos) {
		memmove(b->out, b->out + pos, b->out_len - pos);
		b->out_len -= pos;
	}
}

/* ---- a transport that blocks ------------------------------------------------ */

struct fz_io {
	struct vcxl_bufio b;
	uint64_t rng;
	unsigned level; /* 0: never blocks; 1-7: how often */
};

static unsigned fz_rand(struct fz_io *x, unsigned n)
{
	x->rng ^= x->rng << 13;
	x->rng ^= x->rng >> 7;
	x->rng ^= x->rng << 17;
	return (unsigned)(x->rng % n);
}

/* A full socket: EAGAIN, or part of the message (fds go with its first byte). */
static ssize_t fz_io_send(void *io, const struct iovec *iov, int iovcnt, const int *fds,
			  unsigned nfds)
{
	struct fz_io *x = io;
	struct iovec part[8];
	size_t total = 0, want;
	int n = 0;

	for (int i = 0; i < iovcnt; i++)
		total += iov[i].iov_len;
	if (!x->level || total < 2 || iovcnt > 8 || fz_rand(x, 16) >= 2 * x->level)
		return vcxl_buf_io_ops.send(&x->b, iov, iovcnt, fds, nfds);
	if (fz_rand(x, 2))
		return -EAGAIN;
	want = 1 + fz_rand(x, (unsigned)(total - 1 < 1u << 20 ? total - 1 : 1u << 20));
	for (int i = 0; i < iovcnt && want; i++) {
		size_t k = iov[i].iov_len < want ? iov[i].iov_len : want;

		part[n].iov_base = iov[i].iov_base;
		part[n++].iov_len = k;
		want -= k;
	}
	return vcxl_buf_io_ops.send(&x->b, part, n, fds, nfds);
}

/* Short reads and EAGAIN, as bytes trickle in. */
static ssize_t fz_io_recv(void *io, void *buf, size_t len, int *fds, unsigned maxfds,
			  unsigned *nfds, bool *ctrunc)
{
	struct fz_io *x = io;

	if (x->level && len > 1 && fz_rand(x, 16) < 2 * x->level) {
		if (!fz_rand(x, 4))
			return -EAGAIN;
		len = 1 + fz_rand(x, (unsigned)(len - 1 < 65536 ? len - 1 : 65536));
	}
	return vcxl_buf_io_ops.recv(&x->b, buf, len, fds, maxfds, nfds, ctrunc);
}

static int fz_io_wait(void *io, bool for_write, int timeout_ms)
{
	struct fz_io *x = io;

	return vcxl_buf_io_ops.wait(&x->b, for_write, timeout_ms);
}

static const struct vcxl_io_ops fz_io_ops = {
    .send = fz_io_send,
    .recv = fz_io_recv,
    .wait = fz_io_wait,
};

static unsigned fz_handled(const struct vcxl_conn *c)
{
	struct vcxl_conn_stats st;

	vcxl_conn_get_stats(c, &st);
	return (unsigned)st.msgs;
}

/* The loop's service cycle (src/server/loop.c), on a buffer. */
static void fz_serve(struct fz_dev *f, struct vcxl_conn *c, struct fz_io *x, struct fz_oracle *o)
{
	unsigned handled, slack;

	for (int i = 0; i < FZ_MAX_ITERS && !vcxl_conn_dead(c); i++) {
		int rc = vcxl_conn_on_readable(c);

		if (!rc)
			vcxl_conn_poll(c);
		if (!rc)
			rc = vcxl_conn_drain(c);
		if (!rc && vcxl_conn_wants_write(c))
			rc = vcxl_conn_on_writable(c);
		fz_check_output(&x->b, o, fz_handled(c));
		fz_check_host(f, "after a message batch", false);
		if (rc < 0)
			break;
	}
	/* what is still queued goes out (a client that still reads) */
	x->level = 0;
	for (int i = 0; i < FZ_MAX_ITERS && vcxl_conn_wants_write(c); i++)
		if (vcxl_conn_on_writable(c) && vcxl_conn_wants_write(c) && !vcxl_conn_dead(c))
			break;
	handled = fz_handled(c);
	fz_check_output(&x->b, o, handled);
	fz_oracle_skip(o, handled);
	/* every handled command answered, but one whose handler still waits for
	 * DMA, and the one whose reply a fault ended the connection on */
	slack = vcxl_conn_busy(c) ? 1u : 0u;
	if (vcxl_conn_dead(c)) {
		int err = vcxl_conn_drain(c); /* the connection's error */

		slack += err != -ECONNRESET && err != -EPROTO;
	}
	if (o->next + slack < handled && o->ncmd < FZ_MAX_CMDS)
		fz_fail("%u commands handled, %u answered or NO_REPLY", handled, o->next);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	int fds_at_start;
	struct vcxl_conn_cfg cfg = {.name = "fuzz"};
	static struct fz_oracle o;
	struct fz_io x;
	struct vcxl_conn *c;
	struct fz_dev f;
	unsigned n;
	uint64_t seed = 0xcbf29ce484222325ull;

	if (size < 1)
		return 0;
	fz_quiet();
	vcxl_irq_init(); /* the server's, before its loop: not the input's */
	/* per input: libFuzzer itself opens fds between inputs (the symbolizer
	 * it starts for a NEW_FUNC line keeps two pipes and /dev/null) */
	fds_at_start = count_fds();
	n = data[0] % (FZ_MAP_MAX + 1);
	if (n > size - 1)
		n = (unsigned)(size - 1);
	if (fz_dev_open(&f, VCXL_COMP_AT_START, 0))
		fz_fail("device setup failed");
	vcxl_bufio_init(&x.b, data + 1 + n, size - 1 - n);
	x.level = data[0] / (FZ_MAP_MAX + 1);
	for (size_t i = 0; i < size; i++) /* FNV-1a: the schedule follows the input */
		seed = (seed ^ data[i]) * 0x100000001b3ull;
	x.rng = seed | 1;
	x.b.on_fd = fz_abuse_fd;
	fz_attach_fds(&x.b, data + 1, n, data + 1 + n, size - 1 - n);
	fz_oracle_init(&o, data + 1 + n, size - 1 - n);
	c = vcxl_conn_create(&cfg, &vcxl_vdev_ops, f.vdev, &fz_io_ops, &x);
	if (!c)
		fz_fail("vcxl_conn_create failed");
	fz_serve(&f, c, &x, &o);
	vcxl_conn_destroy(c);
	vcxl_bufio_fini(&x.b);
	fz_check_host(&f, "after the client went away", true);
	fz_dev_close(&f);
	/* a new tenant's old memory objects are closed on a thread (release.h) */
	if (vcxl_release_wait(5000))
		fz_fail("old memory objects still not released after 5 s");
	if (count_fds() != fds_at_start)
		fz_fail("%d fds open after the input, %d before", count_fds(), fds_at_start);
	return 0;
}
