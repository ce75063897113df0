// SPDX-License-Identifier: BSD-3-Clause
/*
 * Transports: UNIX socket listen/connect (stale socket removal, live server
 * detection), fd passing, and message reassembly from a byte-at-a-time
 * buffer transport with fds attached mid-stream.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/eventfd.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include "server/server.h"
#include "../../src/server/conn.h" /* CONN_BATCH */
#include "tap.h"
#include "unit/fake_dev.h"

static const struct vfio_user_hdr *out_msg(const struct vcxl_bufio *b, size_t *off)
{
	const struct vfio_user_hdr *h;

	if (*off + sizeof(*h) > b->out_len)
		return NULL;
	h = (const void *)(b->out + *off);
	*off += h->msg_size;
	return h;
}

static size_t put_msg(uint8_t *buf, size_t at, uint16_t id, uint16_t cmd, const void *p, size_t len)
{
	struct vfio_user_hdr h = {.msg_id = id, .command = cmd, .msg_size = (uint32_t)(16 + len)};

	memcpy(buf + at, &h, 16);
	if (len)
		memcpy(buf + at + 16, p, len);
	return at + 16 + len;
}

/* A bufio whose recv hands out one byte at a time */
static ssize_t slow_recv(void *io, void *buf, size_t len, int *fds, unsigned maxfds, unsigned *nfds,
			 bool *ctrunc)
{
	return vcxl_buf_io_ops.recv(io, buf, len ? 1 : 0, fds, maxfds, nfds, ctrunc);
}

static void test_sockets(void)
{
	char path[64];
	int l, c, a, efd, got[4];
	unsigned n = 0;
	bool tr = false;
	char buf[8];
	struct iovec iov = {.iov_base = "hello", .iov_len = 5};

	snprintf(path, sizeof(path), "/tmp/vcxl-tt-%d.sock", getpid());
	l = vcxl_sock_listen(path, 4);
	ok(l >= 0, "listen");
	is(vcxl_sock_listen(path, 4), -EADDRINUSE, "live server detected");
	a = vcxl_sock_accept(l); /* the liveness probe's connection */
	ok(a >= 0, "probe connection queued");
	close(a);
	c = vcxl_sock_connect(path);
	ok(c >= 0, "connect");
	a = vcxl_sock_accept(l);
	ok(a >= 0, "accept");
	ok(fcntl(a, F_GETFL) & O_NONBLOCK, "accepted socket is non-blocking");
	ok(fcntl(a, F_GETFD) & FD_CLOEXEC, "accepted socket is close-on-exec");
	efd = eventfd(0, EFD_CLOEXEC);
	is(vcxl_sock_send_all(c, &iov, 1, &efd, 1), 0, "send with an fd");
	is(vcxl_sock_recv_all(a, buf, 5, got, 4, &n, &tr), 0, "recv_all 5 bytes");
	is(n, 1, "fd came along");
	ok(!memcmp(buf, "hello", 5), "data intact");
	is(vcxl_sock_io_ops.recv(vcxl_sock_io(a), buf, 5, got, 4, &n, &tr), -EAGAIN,
	   "empty non-blocking socket: EAGAIN");
	close(c);
	close(a);
	close(l);
	for (unsigned i = 0; i < n; i++)
		close(got[i]);
	ok(access(path, F_OK) == 0, "socket file left by a dead server");
	l = vcxl_sock_listen(path, 4);
	ok(l >= 0, "stale socket replaced");
	c = vcxl_sock_connect(path);
	a = vcxl_sock_accept(l);
	n = 0;
	is(vcxl_sock_send_all(c, &iov, 1, &efd, 1), 0, "send again");
	{
		ssize_t r = vcxl_sock_io_ops.recv(vcxl_sock_io(a), buf, 5, got, 4, &n, &tr);

		is(r, 5, "io recv got the message");
		is(n, 1, "one fd received");
		ok(n == 1 && (fcntl(got[0], F_GETFD) & FD_CLOEXEC), "received fd is close-on-exec");
		if (n)
			close(got[0]);
	}
	{
		int many[20];
		ssize_t r;

		for (int i = 0; i < 20; i++)
			many[i] = efd;
		n = 0;
		tr = false;
		r = vcxl_sock_send_all(c, &iov, 1, many, 16);
		is(r, 0, "send 16 fds");
		r = vcxl_sock_io_ops.recv(vcxl_sock_io(a), buf, 5, got, 4, &n, &tr);
		is(r, 5, "recv with room for 4");
		is(n, 4, "4 kept");
		ok(tr, "excess reported");
		for (unsigned i = 0; i < n; i++)
			close(got[i]);
	}
	close(efd);
	close(c);
	close(a);
	close(l);
	unlink(path);
	is(vcxl_sock_listen("/tmp/"
			    "xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx"
			    "xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx",
			    1),
	   -ENAMETOOLONG, "path too long");
}

/* Read-ahead: several messages per read; fds belong to the message that
 * carried them, however the reads fall. */
static void test_readahead_fds(void)
{
	static uint8_t in[4096];
	struct fake_dev f;
	struct vcxl_bufio b;
	struct vcxl_conn *c;
	const char *caps = "{\"capabilities\":{\"max_msg_fds\":4}}";
	uint8_t ver[64] = {0};
	struct vfio_user_dma_map d1 = {32, 3, 0, 0x100000, 0x1000};
	struct vfio_user_dma_map d2 = {32, 3, 0, 0x200000, 0x1000};
	struct vfio_user_dma_map d3 = {32, 3, 0, 0x300000, 0x1000};
	struct vfio_user_region_access ra = {.offset = 0, .region = 7, .count = 4};
	int m1 = memfd_create("a", MFD_CLOEXEC), m3 = memfd_create("c", MFD_CLOEXEC);
	size_t at = 0;
	int rc = 0;

	setup_ok(ftruncate(m1, 0x1000));
	setup_ok(ftruncate(m3, 0x1000));
	fake_dev_init(&f);
	memcpy(ver + 4, caps, strlen(caps) + 1);
	at = put_msg(in, at, 1, VFIO_USER_VERSION, ver, 4 + strlen(caps) + 1);
	at = put_msg(in, at, 2, VFIO_USER_REGION_READ, &ra, sizeof(ra));
	vcxl_bufio_init(&b, in, 0);
	vcxl_bufio_add_fd(&b, at, m1); /* rides with DMA_MAP 3 */
	at = put_msg(in, at, 3, VFIO_USER_DMA_MAP, &d1, sizeof(d1));
	at = put_msg(in, at, 4, VFIO_USER_DMA_MAP, &d2, sizeof(d2)); /* no fd */
	at = put_msg(in, at, 5, VFIO_USER_REGION_READ, &ra, sizeof(ra));
	vcxl_bufio_add_fd(&b, at, m3); /* rides with DMA_MAP 6 */
	at = put_msg(in, at, 6, VFIO_USER_DMA_MAP, &d3, sizeof(d3));
	b.in_len = at;
	c = vcxl_conn_create(NULL, &fake_dev_ops, &f, &vcxl_buf_io_ops, &b);
	while (!rc)
		rc = vcxl_conn_on_readable(c);
	is(rc, -ECONNRESET, "read-ahead: input consumed to EOF");
	const struct vcxl_dma_table *t = vcxl_conn_dma(c);
	is(t->n, 3, "read-ahead: three maps");
	ok(t->n == 3 && t->maps[0].iova == 0x100000 && t->maps[0].ptr,
	   "the first fd went to the DMA_MAP it rode with");
	ok(t->n == 3 && t->maps[1].iova == 0x200000 && !t->maps[1].ptr,
	   "the map sent without an fd got none");
	ok(t->n == 3 && t->maps[2].iova == 0x300000 && t->maps[2].ptr,
	   "the second fd went to its own DMA_MAP, behind a REGION_READ in the same read");
	vcxl_conn_destroy(c);
	vcxl_bufio_fini(&b);
	fake_dev_fini(&f);
}

static void test_bufio(void)
{
	static uint8_t in[4096];
	struct fake_dev f;
	struct vcxl_bufio b;
	struct vcxl_io_ops slow = vcxl_buf_io_ops;
	struct vcxl_conn *c;
	const struct vfio_user_hdr *h;
	const char *caps = "{\"capabilities\":{\"max_msg_fds\":4}}";
	uint8_t ver[64] = {0};
	struct vfio_user_dma_map dm = {32, 3, 0, 0x100000, 0x1000};
	struct vfio_user_region_access ra = {.offset = 0, .region = 7, .count = 2};
	size_t at = 0, off = 0;
	int mfd = memfd_create("t", MFD_CLOEXEC);
	int rc = 0;

	setup_ok(ftruncate(mfd, 0x1000));
	fake_dev_init(&f);
	memcpy(ver + 4, caps, strlen(caps) + 1);
	at = put_msg(in, at, 1, VFIO_USER_VERSION, ver, 4 + strlen(caps) + 1);
	vcxl_bufio_init(&b, in, 0);
	vcxl_bufio_add_fd(&b, at + 3, mfd); /* fd rides inside the DMA_MAP header */
	at = put_msg(in, at, 2, VFIO_USER_DMA_MAP, &dm, sizeof(dm));
	at = put_msg(in, at, 3, VFIO_USER_REGION_READ, &ra, sizeof(ra));
	at = put_msg(in, at, 4, 77, NULL, 0);
	b.in_len = at;
	slow.recv = slow_recv;
	c = vcxl_conn_create(NULL, &fake_dev_ops, &f, &slow, &b);
	while (!rc)
		rc = vcxl_conn_on_readable(c);
	is(rc, -ECONNRESET, "input consumed to EOF");
	h = out_msg(&b, &off);
	ok(h && h->msg_id == 1 && !(h->flags & VFIO_USER_F_ERROR), "VERSION reply, byte by byte");
	h = out_msg(&b, &off);
	ok(h && h->msg_id == 2 && !(h->flags & VFIO_USER_F_ERROR) && h->msg_size == 16,
	   "DMA_MAP with mid-header fd succeeded");
	is(vcxl_conn_dma(c)->n, 1, "one map");
	ok(vcxl_conn_dma(c)->n && vcxl_conn_dma(c)->maps[0].ptr, "fd mapped");
	h = out_msg(&b, &off);
	ok(h && h->msg_id == 3 && h->msg_size == 16 + 16 + 2 &&
	       !memcmp((const uint8_t *)h + 32, "\x86\x80", 2),
	   "REGION_READ of config returns its bytes");
	h = out_msg(&b, &off);
	ok(h && h->msg_id == 4 && (h->flags & VFIO_USER_F_ERROR) && h->error == ENOSYS,
	   "unknown command: ENOSYS");
	ok(out_msg(&b, &off) == NULL, "nothing else sent");
	vcxl_conn_destroy(c);
	is(f.gone, 1, "client_gone");
	vcxl_bufio_fini(&b);

	/* backpressure: output capped, reading stops until flushed (the replies
	 * to what one read brought are held, then sent together) */
	at = 0;
	for (int i = 0; i < 100; i++)
		at = put_msg(in, at, (uint16_t)(10 + i), VFIO_USER_REGION_READ, &ra, sizeof(ra));
	vcxl_bufio_init(&b, in, at);
	b.max_out = 0;
	c = vcxl_conn_create(NULL, &fake_dev_ops, &f, &vcxl_buf_io_ops, &b);
	/* not negotiated: every reply is a 16-byte EINVAL */
	rc = 0;
	for (int i = 0; i < 4 && !rc; i++)
		rc = vcxl_conn_on_readable(c);
	is(rc, -ECONNRESET, "two batches run to EOF");
	ok(!vcxl_conn_wants_write(c), "fits");
	ok(b.out_len == 100 * 16, "all 100 error replies out");
	is(b.sends, 2, "in one send a batch (CONN_BATCH of one read), then the rest of the read");
	vcxl_conn_destroy(c);
	vcxl_bufio_fini(&b);

	vcxl_bufio_init(&b, in, at);
	b.max_out = 40;
	c = vcxl_conn_create(NULL, &fake_dev_ops, &f, &vcxl_buf_io_ops, &b);
	rc = vcxl_conn_on_readable(c);
	is(rc, 0, "batch with a full socket");
	ok(vcxl_conn_wants_write(c), "output queued");
	struct vcxl_conn_stats st;
	vcxl_conn_get_stats(c, &st);
	is(st.msgs, CONN_BATCH, "one batch handled, its replies queued");
	is(vcxl_conn_on_readable(c), 0, "readable again");
	vcxl_conn_get_stats(c, &st);
	is(st.msgs, CONN_BATCH, "handling stopped behind the queue (%llu of 100 answered)",
	   (unsigned long long)st.msgs);
	b.max_out = 0;
	/* the flush goes on with the requests already read ahead, to the EOF */
	is(vcxl_conn_on_writable(c), -ECONNRESET, "flush, then the read-ahead rest, then EOF");
	ok(!vcxl_conn_wants_write(c), "queue empty");
	is(b.out_len, 100 * 16, "rest handled after the flush");
	vcxl_conn_destroy(c);
	vcxl_bufio_fini(&b);
	fake_dev_fini(&f);
}

static void count_fd_send(void *opaque, int fd)
{
	struct vcxl_bufio *b = opaque;

	(void)fd;
	b->on_fd_opaque = (void *)(uintptr_t)b->sends; /* the send that carried it */
}

/* Replies to requests that came together go in one send; a reply with an fd
 * sends the held ones first and goes in a send of its own; nothing is held
 * across a read of the transport. */
static void test_cork(void)
{
	static uint8_t in[4096];
	struct fake_dev f;
	struct vcxl_bufio b;
	struct vcxl_conn *c;
	const struct vfio_user_hdr *h;
	const char *caps = "{\"capabilities\":{\"max_msg_fds\":4}}";
	uint8_t ver[64] = {0};
	struct vfio_user_region_access ra = {.offset = 0, .region = 7, .count = 2};
	struct vfio_region_info ri = {.argsz = sizeof(ri), .index = 0};
	size_t at = 0, off = 0;
	unsigned fd_send;
	int rc = 0, efd = eventfd(0, EFD_CLOEXEC);
	bool order = true;

	fake_dev_init(&f);
	memcpy(ver + 4, caps, strlen(caps) + 1);
	at = put_msg(in, at, 1, VFIO_USER_VERSION, ver, 4 + strlen(caps) + 1);
	at = put_msg(in, at, 2, VFIO_USER_REGION_READ, &ra, sizeof(ra));
	at = put_msg(in, at, 3, VFIO_USER_REGION_READ, &ra, sizeof(ra));
	at = put_msg(in, at, 4, VFIO_USER_DEVICE_GET_REGION_INFO, &ri, sizeof(ri)); /* BAR0: fd */
	at = put_msg(in, at, 5, VFIO_USER_REGION_READ, &ra, sizeof(ra));
	vcxl_bufio_init(&b, in, 0);
	vcxl_bufio_add_fd(&b, at, efd); /* the next read ends after message 6 */
	at = put_msg(in, at, 6, 77, NULL, 0);
	at = put_msg(in, at, 7, VFIO_USER_REGION_READ, &ra, sizeof(ra));
	b.in_len = at;
	b.on_fd = count_fd_send;
	b.on_fd_opaque = &b;
	c = vcxl_conn_create(NULL, &fake_dev_ops, &f, &vcxl_buf_io_ops, &b);
	while (!rc)
		rc = vcxl_conn_on_readable(c);
	fd_send = (unsigned)(uintptr_t)b.on_fd_opaque;
	is(rc, -ECONNRESET, "cork: input consumed to EOF");
	for (uint16_t id = 1; id <= 7; id++) {
		h = out_msg(&b, &off);
		order &= h && h->msg_id == id;
	}
	ok(order && !out_msg(&b, &off), "seven replies, in the requests' order");
	is(b.out_fds, 1, "BAR0's fd sent");
	/* reads: 1-6 (up to the message with the client's fd), then 7. Sends: 1-3
	 * held, then out before 4 (with its fd); 5 and 6 held until the next read;
	 * 7 before the read that finds the EOF */
	is(b.sends, 4, "four sends for seven replies (%u)", b.sends);
	is(fd_send, 2, "the fd went with the second send, after the replies held before it");
	vcxl_conn_destroy(c);
	vcxl_bufio_fini(&b);

	/* a stream that breaks after three requests in the same read: their
	 * replies still go, before the connection ends */
	at = 0;
	at = put_msg(in, at, 1, VFIO_USER_VERSION, ver, 4 + strlen(caps) + 1);
	at = put_msg(in, at, 2, VFIO_USER_REGION_READ, &ra, sizeof(ra));
	at = put_msg(in, at, 3, VFIO_USER_REGION_READ, &ra, sizeof(ra));
	{
		struct vfio_user_hdr bad = {.msg_id = 4,
					    .command = VFIO_USER_REGION_READ,
					    .msg_size = 8}; /* below the header: no resync */
		memcpy(in + at, &bad, sizeof(bad));
		at += sizeof(bad);
	}
	vcxl_bufio_init(&b, in, at);
	c = vcxl_conn_create(NULL, &fake_dev_ops, &f, &vcxl_buf_io_ops, &b);
	rc = 0;
	for (int i = 0; i < 4 && !rc; i++)
		rc = vcxl_conn_on_readable(c);
	is(rc, -EPROTO, "cork: a broken header ends the connection");
	off = 0;
	order = true;
	for (uint16_t id = 1; id <= 3; id++) {
		h = out_msg(&b, &off);
		order &= h && h->msg_id == id;
	}
	ok(order && !out_msg(&b, &off), "the three replies held before it went out, in order");
	vcxl_conn_destroy(c);
	vcxl_bufio_fini(&b);
	fake_dev_fini(&f);
}

int main(void)
{
	test_sockets();
	test_bufio();
	test_readahead_fds();
	test_cork();
	return done();
}
