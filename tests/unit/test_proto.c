// SPDX-License-Identifier: BSD-3-Clause
/*
 * Protocol layer against a fake device: a server thread runs one vcxl_conn
 * on a socketpair, the client library drives it like QEMU does.
 */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <pthread.h>
#include <stdio.h>
#include <string.h>
#include <sys/eventfd.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "vcxl/client.h"
#include "server/server.h"
#include "tap.h"
#include "unit/fake_dev.h"
#include "unit/stderr_capture.h"

struct srv {
	struct fake_dev dev;
	int fd;
	pthread_t th;
	int exit_rc;
	struct vcxl_conn_stats st;
	unsigned maps_at_exit;
	unsigned busy_turns;	/* loop turns while a handler waited */
	unsigned closing_turns; /* loop turns while the closed connection finished */
};

static const struct vcxl_dev_ops *srv_ops = &fake_dev_ops;

static void *srv_main(void *arg)
{
	struct srv *s = arg;
	struct vcxl_conn_cfg cfg = {.name = "fake", .dma_timeout_ms = 2000};
	struct vcxl_conn *c =
	    vcxl_conn_create(&cfg, srv_ops, &s->dev, &vcxl_sock_io_ops, vcxl_sock_io(s->fd));
	int rc = 0;

	while (!rc) {
		struct pollfd p = {.fd = s->fd,
				   .events = vcxl_conn_wants_write(c) ? POLLOUT : POLLIN};
		int t = vcxl_conn_timeout(c), n;

		if (vcxl_conn_busy(c))
			s->busy_turns++;
		n = poll(&p, 1, t < 0 ? 20000 : t);
		if (n < 0 || (n == 0 && t < 0)) {
			rc = -ETIMEDOUT;
			break;
		}
		if (n)
			rc = (p.events & POLLOUT) ? vcxl_conn_on_writable(c)
						  : vcxl_conn_on_readable(c);
		if (!rc && vcxl_conn_drain(c) < 0)
			rc = -EIO;
	}
	s->exit_rc = rc;
	vcxl_conn_get_stats(c, &s->st);
	s->maps_at_exit = vcxl_conn_dma(c)->n;
	/* as the event loop: close, then step what is left until it is done */
	for (bool done = vcxl_conn_close(c); !done && s->closing_turns < 100000;
	     done = vcxl_conn_close_step(c)) {
		int t = vcxl_conn_timeout(c);

		s->closing_turns++;
		poll(NULL, 0, t < 0 ? 1 : t);
	}
	vcxl_conn_destroy(c);
	close(s->fd);
	return NULL;
}

static struct vcxl_client *srv_start(struct srv *s, bool negotiate)
{
	struct vcxl_client *c;
	int sv[2];

	memset(s, 0, sizeof(*s));
	if (fake_dev_init(&s->dev) || socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv))
		return NULL;
	fcntl(sv[0], F_SETFL, O_NONBLOCK);
	s->fd = sv[0];
	pthread_create(&s->th, NULL, srv_main, s);
	if (vcxl_client_from_fd(sv[1], &c))
		return NULL;
	if (negotiate && vcxl_client_negotiate(c, NULL)) {
		vcxl_client_close(c);
		return NULL;
	}
	return c;
}

static void srv_stop(struct srv *s, struct vcxl_client *c)
{
	vcxl_client_close(c);
	pthread_join(s->th, NULL);
	fake_dev_fini(&s->dev);
}

static int raw_err(struct vcxl_client *c, uint16_t cmd, uint32_t flags, const void *p, size_t len,
		   const int *fds, unsigned nfds)
{
	struct vcxl_client_reply rep;
	int rc = vcxl_client_raw(c, cmd, flags, p, len, fds, nfds, &rep);

	if (rc)
		return rc;
	rc = (rep.hdr.flags & VFIO_USER_F_ERROR) ? (int)rep.hdr.error : 0;
	vcxl_client_reply_free(&rep);
	return rc;
}

static void test_version(void)
{
	struct srv s;
	struct vcxl_client *c = srv_start(&s, false);
	const struct vcxl_client_caps *caps;
	uint32_t dummy = 0;

	ok(c != NULL, "server thread started");
	is(raw_err(c, VFIO_USER_DEVICE_GET_INFO, 0, &dummy, 4, NULL, 0), EINVAL,
	   "command before VERSION: EINVAL");
	is(vcxl_client_negotiate(c, "{\"capabilities\":"), -EINVAL, "truncated JSON: EINVAL");
	is(vcxl_client_negotiate(c, "[1,2]"), -EINVAL, "JSON array: EINVAL");
	is(vcxl_client_negotiate(c, "{\"capabilities\":{\"max_msg_fds\":\"x\"}}"), -EINVAL,
	   "string max_msg_fds: EINVAL");
	is(vcxl_client_negotiate(c, "{\"capabilities\":{\"pgsizes\":8192}}"), -EINVAL,
	   "pgsizes without 4 KiB: EINVAL");
	is(vcxl_client_negotiate(c, "{\"capabilities\":{}} x"), -EINVAL,
	   "bytes after the JSON object: EINVAL");
	is(vcxl_client_negotiate(c, "{} {}"), -EINVAL, "two JSON objects: EINVAL");
	{
		uint8_t v[6] = {0, 0, 0, 0, '{', '}'}; /* not NUL-terminated */

		is(raw_err(c, VFIO_USER_VERSION, 0, v, sizeof(v), NULL, 0), EINVAL,
		   "JSON without NUL: EINVAL");
		v[0] = 1;
		v[5] = 0;
		is(raw_err(c, VFIO_USER_VERSION, 0, v, sizeof(v), NULL, 0), ENOTSUP,
		   "major 1: ENOTSUP");
	}
	is(vcxl_client_negotiate(c, NULL), 0, "QEMU 10.2 capabilities accepted");
	caps = vcxl_client_server_caps(c);
	is(caps->max_msg_fds, VCXL_SRV_MAX_MSG_FDS, "server max_msg_fds");
	is(caps->max_data_xfer_size, VCXL_SRV_MAX_XFER, "server max_data_xfer_size");
	is(caps->pgsizes, 4096, "server pgsizes");
	is(caps->max_dma_maps, VCXL_SRV_MAX_DMA_MAPS, "max_dma_maps min(client, server)");
	ok(caps->write_multiple, "write_multiple echoed (implemented, offered)");
	is(vcxl_client_negotiate(c, NULL), -EINVAL, "second VERSION: EINVAL");
	srv_stop(&s, c);

	c = srv_start(&s, false);
	ok(c != NULL, "second server thread started");
	is(vcxl_client_negotiate(c, "{\"capabilities\":{}} \n"), 0,
	   "whitespace after the JSON object: accepted");
	srv_stop(&s, c);
	is(s.dev.gone, 1, "client_gone on disconnect");

	c = srv_start(&s, false);
	is(vcxl_client_negotiate(c, "{\"capabilities\":{\"max_dma_maps\":7}}"), 0,
	   "minimal capabilities");
	caps = vcxl_client_server_caps(c);
	ok(!caps->write_multiple, "write_multiple not echoed when not offered");
	is(caps->max_dma_maps, 7, "max_dma_maps follows the client's smaller value");
	{
		/* vfio-user spec "VERSION": REGION_WRITE_MULTI only after write_multiple */
		struct {
			uint64_t cnt;
			struct vfio_user_wr_multi_entry e;
		} __attribute__((packed)) wm = {1, {0x200, 2, 4, {1, 2, 3, 4}}};
		uint32_t v = 0;

		is(raw_err(c, VFIO_USER_REGION_WRITE_MULTI, 0, &wm, sizeof(wm), NULL, 0), ENOSYS,
		   "REGION_WRITE_MULTI without write_multiple negotiated: ENOSYS");
		is(vcxl_client_read32(c, 2, 0x200, &v), 0, "read the register");
		is(v, 0, "and the refused write left it alone");
	}
	srv_stop(&s, c);
}

static void test_info(void)
{
	struct srv s;
	struct vcxl_client *c = srv_start(&s, true);
	struct vcxl_client_info info;
	struct vcxl_client_region ri;
	uint32_t count, flags;

	is(vcxl_client_get_info_argsz(c, 16, &info), 0, "GET_INFO argsz 16");
	is(info.argsz, 24 + 64, "argsz says the full size");
	ok(!info.has_cxl, "no cap in a 16-byte reply");
	ok(info.flags & VFIO_DEVICE_FLAGS_CAPS, "CAPS flag");
	is(vcxl_client_get_info(c, &info), 0, "GET_INFO with retry");
	ok(info.has_cxl, "CXL capability parsed");
	is(info.cxl.region_index, 9, "cap region_index");
	is(info.cxl.region_size, FAKE_R9_SIZE, "cap region_size");
	is(info.num_regions, FAKE_NUM_REGIONS, "num_regions");
	ok((info.flags & VFIO_DEVICE_FLAGS_CXL) && (info.flags & VFIO_DEVICE_FLAGS_PCI),
	   "flags PCI|CXL");

	is(vcxl_client_region_info(c, 0, &ri), 0, "REGION_INFO 0");
	is(ri.tries, 2, "argsz retry took two requests");
	is(ri.size, FAKE_BAR0_SIZE, "BAR0 size");
	ok(ri.fd >= 0, "BAR0 fd received");
	is(ri.nr_sparse, 1, "one sparse area");
	is(ri.sparse[0].offset, 0x1000, "sparse offset");
	ok((ri.flags & VFIO_REGION_INFO_FLAG_MMAP) && (ri.flags & VFIO_REGION_INFO_FLAG_CAPS),
	   "MMAP|CAPS");
	if (ri.fd >= 0) {
		uint8_t *p = mmap(NULL, ri.sparse[0].size, PROT_READ | PROT_WRITE, MAP_SHARED,
				  ri.fd, (off_t)(ri.offset + ri.sparse[0].offset));
		uint32_t v = 0;

		ok(p != MAP_FAILED, "sparse area mmappable");
		if (p != MAP_FAILED) {
			memcpy(p + 8, "\x11\x22\x33\x44", 4);
			is(vcxl_client_read32(c, 0, 0x1008, &v), 0, "REGION_READ in the area");
			is(v, 0x44332211, "mmap write visible through REGION_READ");
			munmap(p, ri.sparse[0].size);
		}
		close(ri.fd);
	}
	is(vcxl_client_region_info(c, 1, &ri), 0, "absent BAR1: no error");
	is(ri.size, 0, "absent BAR1: size 0");
	ok(ri.fd < 0, "absent BAR1: no fd");
	is(vcxl_client_region_info(c, 2, &ri), 0, "REGION_INFO 2");
	is(ri.tries, 1, "no caps: one request");
	ok(ri.fd < 0 && !(ri.flags & VFIO_REGION_INFO_FLAG_MMAP), "BAR2 trapped");
	is(vcxl_client_region_info(c, 9, &ri), 0, "REGION_INFO 9");
	ok(ri.has_type && ri.type == VFIO_REGION_TYPE_CXL && ri.subtype == VFIO_REGION_SUBTYPE_CXL,
	   "region 9 type cap 0x80001e98/1");
	if (ri.fd >= 0)
		close(ri.fd);
	is(vcxl_client_region_info(c, FAKE_NUM_REGIONS, &ri), -EINVAL, "index num_regions: EINVAL");

	is(vcxl_client_irq_info(c, VFIO_PCI_MSIX_IRQ_INDEX, &count, &flags), 0, "IRQ_INFO MSI-X");
	is(count, 4, "MSI-X count");
	is(vcxl_client_irq_info(c, VFIO_PCI_ERR_IRQ_INDEX, &count, &flags), 0, "IRQ_INFO ERR");
	is(count, 0, "ERR count 0");
	is(vcxl_client_irq_info(c, 5, &count, &flags), -EINVAL, "IRQ_INFO 5: EINVAL");
	srv_stop(&s, c);
}

static void test_region_rw(void)
{
	struct srv s;
	struct vcxl_client *c = srv_start(&s, true);
	uint8_t buf[4096], back[4096];
	uint32_t v = 0;
	struct vfio_user_region_access a = {
	    .offset = 0, .region = 2, .count = VCXL_SRV_MAX_XFER + 1};

	for (unsigned i = 0; i < sizeof(buf); i++)
		buf[i] = (uint8_t)(i * 7);
	is(vcxl_client_region_write(c, 7, 0, buf, sizeof(buf)), 0, "config write 4096");
	is(vcxl_client_region_read(c, 7, 0, back, sizeof(back)), 0, "config read 4096");
	ok(!memcmp(buf, back, sizeof(buf)), "config data round trip");
	is(vcxl_client_region_read(c, 7, 4095, back, 2), -EINVAL, "read past the end: EINVAL");
	is(vcxl_client_region_read(c, 12, 0, back, 4), -EINVAL, "bad region: EINVAL");
	is(raw_err(c, VFIO_USER_REGION_READ, 0, &a, sizeof(a), NULL, 0), E2BIG,
	   "count above max_data_xfer_size: E2BIG");
	a.count = 0;
	is(raw_err(c, VFIO_USER_REGION_READ, 0, &a, sizeof(a), NULL, 0), EINVAL, "count 0: EINVAL");
	a.count = 8;
	a.offset = UINT64_MAX - 3;
	is(raw_err(c, VFIO_USER_REGION_READ, 0, &a, sizeof(a), NULL, 0), EINVAL,
	   "offset+count overflow: EINVAL");
	a.offset = 0;
	is(raw_err(c, VFIO_USER_REGION_WRITE, 0, &a, sizeof(a), NULL, 0), EINVAL,
	   "write without its data: EINVAL");

	for (uint32_t i = 0; i < 16; i++)
		vcxl_client_region_write_posted(c, 2, 0x100, &i, 4);
	is(vcxl_client_read32(c, 2, 0x100, &v), 0, "read after posted writes");
	is(v, 15, "posted writes applied in order");
	{
		struct {
			uint64_t cnt;
			struct vfio_user_wr_multi_entry e[2];
		} __attribute__((packed))
		wm = {2, {{0x200, 2, 4, {1, 2, 3, 4}}, {0x204, 2, 2, {5, 6}}}};

		is(raw_err(c, VFIO_USER_REGION_WRITE_MULTI, 0, &wm, sizeof(wm), NULL, 0), 0,
		   "REGION_WRITE_MULTI");
		is(vcxl_client_read32(c, 2, 0x200, &v), 0, "read back multi");
		is(v, 0x04030201, "first multi entry");
		is(vcxl_client_read32(c, 2, 0x204, &v), 0, "read back multi 2");
		is(v & 0xffff, 0x0605, "second multi entry");
		wm.e[1].count = 9;
		is(raw_err(c, VFIO_USER_REGION_WRITE_MULTI, 0, &wm, sizeof(wm), NULL, 0), EINVAL,
		   "multi entry count 9: EINVAL");
	}
	srv_stop(&s, c);
	is(s.exit_rc, -ECONNRESET, "server saw a clean EOF");
}

static void set_job(struct vcxl_client *c, uint64_t src, uint64_t dst, uint64_t len, uint64_t op,
		    uint8_t vec)
{
	vcxl_client_write64(c, 2, FAKE_SRC, src);
	vcxl_client_write64(c, 2, FAKE_DST, dst);
	vcxl_client_write64(c, 2, FAKE_LEN, len);
	vcxl_client_write64(c, 2, FAKE_OP, op);
	vcxl_client_write32(c, 2, FAKE_VECTOR, vec);
}

static void test_dma_irq(void)
{
	struct srv s;
	struct vcxl_client *c = srv_start(&s, true);
	int mfd = memfd_create("guest", MFD_CLOEXEC), efd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
	uint8_t *g, *nofd = calloc(1, 0x4000);
	uint32_t st = 1;
	uint64_t ev = 0;
	const uint32_t rw = VFIO_USER_F_DMA_REGION_READ | VFIO_USER_F_DMA_REGION_WRITE;

	setup_ok(ftruncate(mfd, 0x10000));
	g = mmap(NULL, 0x10000, PROT_READ | PROT_WRITE, MAP_SHARED, mfd, 0);
	for (unsigned i = 0; i < 0x1000; i++)
		g[i] = (uint8_t)(i ^ 0x5a);
	is(vcxl_client_dma_map(c, 0x100000, 0x10000, rw, mfd, 0, NULL), 0, "DMA_MAP with memfd");
	is(vcxl_client_dma_map(c, 0x108000, 0x1000, rw, mfd, 0, NULL), -EEXIST, "overlap: EEXIST");
	is(vcxl_client_dma_map(c, 0x200100, 0x1000, rw, -1, 0, NULL), -EINVAL,
	   "unaligned iova: EINVAL");
	is(vcxl_client_dma_map(c, 0x200000, 0, rw, -1, 0, NULL), -EINVAL, "size 0: EINVAL");
	is(vcxl_client_dma_map(c, UINT64_MAX - 0xfff, 0x2000, rw, -1, 0, NULL), -EINVAL,
	   "iova overflow: EINVAL");
	is(vcxl_client_dma_map(c, 0x200000, 0x1000, 0, -1, 0, NULL), -EINVAL, "no R/W: EINVAL");
	{
		int two[2] = {mfd, mfd};
		struct vfio_user_dma_map d = {32, rw, 0, 0x300000, 0x1000};

		is(raw_err(c, VFIO_USER_DMA_MAP, 0, &d, sizeof(d), two, 2), EINVAL,
		   "DMA_MAP with 2 fds: EINVAL");
	}
	is(vcxl_client_dma_map(c, 0x400000, 0x4000, rw, -1, 0, nofd), 0, "DMA_MAP without fd");

	/* copy within the mmapped window, irq on vector 1 */
	is(vcxl_client_set_irqs(c, VFIO_PCI_MSIX_IRQ_INDEX,
				VFIO_IRQ_SET_DATA_EVENTFD | VFIO_IRQ_SET_ACTION_TRIGGER, 1, 1, &efd,
				1, NULL),
	   0, "SET_IRQS MSI-X vector 1 eventfd");
	set_job(c, 0x100000, 0x108000, 0x1000, 0, 1);
	is(vcxl_client_write32(c, 2, FAKE_DOORBELL, 1), 0, "doorbell (mmap DMA)");
	vcxl_client_read32(c, 2, FAKE_STATUS, &st);
	is(st, 0, "job status ok");
	ok(!memcmp(g, g + 0x8000, 0x1000), "device copied through the mmapped window");
	ok(read(efd, &ev, 8) == 8 && ev == 1, "MSI-X vector 1 delivered to the eventfd");

	/* fill into the fd-less window: DMA_WRITE messages answered by the client */
	set_job(c, 0, 0x400000 + 0x10, 0x2000, 1, 1);
	is(vcxl_client_write32(c, 2, FAKE_DOORBELL, 1), 0, "doorbell (message DMA write)");
	vcxl_client_read32(c, 2, FAKE_STATUS, &st);
	is(st, 0, "fallback fill status ok");
	ok(nofd[0x10] == 0xa5 && nofd[0x200f] == 0xa5 && nofd[0xf] == 0 && nofd[0x2010] == 0,
	   "fill landed exactly via DMA_WRITE");
	/* copy mmapped -> fd-less -> read back via DMA_READ */
	set_job(c, 0x100000, 0x401000, 0x800, 0, 1);
	vcxl_client_write32(c, 2, FAKE_DOORBELL, 1);
	ok(!memcmp(nofd + 0x1000, g, 0x800), "copy into the fd-less window");
	set_job(c, 0x401000, 0x10c000, 0x800, 0, 1);
	vcxl_client_write32(c, 2, FAKE_DOORBELL, 1);
	vcxl_client_read32(c, 2, FAKE_STATUS, &st);
	is(st, 0, "DMA_READ job status ok");
	ok(!memcmp(g + 0xc000, g, 0x800), "copy out of the fd-less window via DMA_READ");
	ok(vcxl_client_dma_requests(c) >= 2, "client answered DMA requests");
	set_job(c, 0x900000, 0x100000, 0x10, 0, 1);
	vcxl_client_write32(c, 2, FAKE_DOORBELL, 1);
	vcxl_client_read32(c, 2, FAKE_STATUS, &st);
	is((int32_t)st, -EFAULT, "DMA outside any window: -EFAULT");

	/* masks and disable */
	while (read(efd, &ev, 8) == 8)
		;
	is(vcxl_client_set_irqs(c, 2, VFIO_IRQ_SET_DATA_NONE | VFIO_IRQ_SET_ACTION_MASK, 1, 1, NULL,
				0, NULL),
	   0, "MASK vector 1");
	set_job(c, 0x100000, 0x108000, 0x10, 0, 1);
	vcxl_client_write32(c, 2, FAKE_DOORBELL, 1);
	ok(read(efd, &ev, 8) < 0, "masked: no interrupt");
	is(vcxl_client_set_irqs(c, 2, VFIO_IRQ_SET_DATA_NONE | VFIO_IRQ_SET_ACTION_UNMASK, 1, 1,
				NULL, 0, NULL),
	   0, "UNMASK vector 1");
	ok(read(efd, &ev, 8) == 8, "pending interrupt delivered on unmask");
	is(vcxl_client_set_irqs(c, 2, VFIO_IRQ_SET_DATA_NONE | VFIO_IRQ_SET_ACTION_TRIGGER, 0, 0,
				NULL, 0, NULL),
	   0, "count 0 + DATA_NONE + TRIGGER: disable all");
	vcxl_client_write32(c, 2, FAKE_DOORBELL, 1);
	ok(read(efd, &ev, 8) < 0, "disabled: no interrupt");
	is(vcxl_client_set_irqs(c, 2, VFIO_IRQ_SET_DATA_EVENTFD | VFIO_IRQ_SET_ACTION_TRIGGER, 0, 2,
				&efd, 1, NULL),
	   -EINVAL, "1 fd for 2 vectors: EINVAL");
	is(vcxl_client_set_irqs(c, 2, VFIO_IRQ_SET_DATA_EVENTFD | VFIO_IRQ_SET_ACTION_TRIGGER, 3, 2,
				NULL, 0, NULL),
	   -EINVAL, "vectors beyond count: EINVAL");
	is(vcxl_client_set_irqs(c, 2, VFIO_IRQ_SET_DATA_NONE | VFIO_IRQ_SET_DATA_BOOL, 0, 1, NULL,
				0, NULL),
	   -EINVAL, "two data types: EINVAL");
	is(vcxl_client_set_irqs(c, 2, VFIO_IRQ_SET_DATA_EVENTFD | VFIO_IRQ_SET_ACTION_TRIGGER, 0, 1,
				NULL, 0, NULL),
	   0, "no fds: de-assign");
	is(vcxl_client_set_irqs(c, 0, VFIO_IRQ_SET_DATA_NONE | VFIO_IRQ_SET_ACTION_TRIGGER, 0, 0,
				NULL, 0, NULL),
	   0, "INTx (count 0) disable-all accepted");

	is(vcxl_client_dma_unmap(c, 0x100000, 0x8000, 0), -EINVAL,
	   "unmap splitting a mapping: EINVAL");
	is(vcxl_client_dma_unmap(c, 0x100000, 0x10000, 0), 0, "exact unmap");
	/* QEMU with a vIOMMU unmaps ranges it never mapped and expects success */
	is(vcxl_client_dma_unmap(c, 0x100000, 0x10000, 0), 0, "unmap twice: success, no-op");
	is(vcxl_client_dma_unmap(c, 0xfef00000ull, 0x100000, 0), 0,
	   "unmap of a never-mapped range (QEMU 10.2 + intel-iommu): success");
	is(vcxl_client_dma_unmap(c, 0x1000, 0x1000, VFIO_DMA_UNMAP_FLAG_ALL), -EINVAL,
	   "unmap-all with a range: EINVAL");
	is(vcxl_client_dma_unmap(c, 0, 0, VFIO_DMA_UNMAP_FLAG_ALL), 0, "unmap-all");
	is(vcxl_client_dma_map(c, 0x400000, 0x4000, rw, -1, 0, NULL), 0,
	   "all were dropped: the range maps again");
	is(vcxl_client_dma_unmap(c, 0x400000, 0x4000, 0), 0, "and unmaps");
	is(vcxl_client_dma_map(c, 0x100000, 0x10000, rw, mfd, 0, NULL), 0, "map again");
	is(vcxl_client_reset(c), 0, "DEVICE_RESET");
	is(s.dev.resets, 1, "device reset once");
	srv_stop(&s, c);
	is(s.maps_at_exit, 1, "one map live at disconnect");
	is(s.dev.gone, 1, "client_gone");
	munmap(g, 0x10000);
	close(mfd);
	close(efd);
	free(nofd);
}

/* A device with its own DMA and eventfd signalling (the VFIO backend): the
 * server maps client windows for it and hands it the client's eventfds. */
static void test_hw_device(void)
{
	struct srv s;
	struct vcxl_client *c;
	const uint32_t rw = VFIO_USER_F_DMA_REGION_READ | VFIO_USER_F_DMA_REGION_WRITE;
	int mfd = memfd_create("guest", MFD_CLOEXEC), efd = eventfd(0, EFD_CLOEXEC);

	srv_ops = &fake_hw_dev_ops;
	c = srv_start(&s, true);
	ok(c != NULL, "hw device: connected");
	if (!c)
		return;
	setup_ok(ftruncate(mfd, 0x20000));
	is(vcxl_client_dma_map(c, 0x100000, 0x10000, rw, mfd, 0, NULL), 0, "DMA_MAP with an fd");
	is(s.dev.iommu_maps, 1, "... mapped for the device's own DMA");
	is(s.dev.last_map_iova, 0x100000, "... at the IOVA");
	is(s.dev.last_map_size, 0x10000, "... with the size");
	ok(s.dev.last_map_write, "... writable");
	/* the server thread logs a request's lines before it replies */
	struct stderr_capture cap;
	int captured = stderr_capture(&cap);
	is(vcxl_client_dma_map(c, 0x200000, 0x10000, VFIO_USER_F_DMA_REGION_READ, -1, 0, NULL), 0,
	   "DMA_MAP without an fd is accepted");
	FILE *log = captured ? NULL : stderr_release(&cap);
	is(stderr_lines(log, "has no fd: the device cannot reach it"), 1,
	   "... with a warning: the device needs the fd");
	if (log)
		fclose(log);
	is(s.dev.iommu_maps, 1, "... and cannot reach it (not mapped)");
	is(vcxl_client_dma_map(c, 1ull << 48, 0x10000, rw, mfd, 0x10000, NULL), -ENOSPC,
	   "the device's mapping fails: the DMA_MAP fails with its errno");
	is(vcxl_client_dma_map(c, 1ull << 48, 0x10000, rw, -1, 0, NULL), 0,
	   "... and the window was dropped (the range maps again)");
	is(vcxl_client_dma_unmap(c, 0x100000, 0x10000, 0), 0, "DMA_UNMAP");
	is(s.dev.iommu_unmaps, 1, "... unmapped from the device");
	is(vcxl_client_set_irqs(c, VFIO_PCI_MSIX_IRQ_INDEX,
				VFIO_IRQ_SET_DATA_EVENTFD | VFIO_IRQ_SET_ACTION_TRIGGER, 1, 1, &efd,
				1, NULL),
	   0, "SET_IRQS eventfd on MSI-X vector 1");
	ok(s.dev.irq_fd_vec1 >= 0, "the device got an eventfd for vector 1");
	is(vcxl_client_dma_map(c, 0x100000, 0x10000, rw, mfd, 0, NULL), 0, "map again");
	srv_stop(&s, c);
	is(s.dev.irq_fd_vec1, -1, "disconnect: the device's eventfd is withdrawn");
	is(s.dev.iommu_unmaps, 2, "disconnect: the live fd window is unmapped from the device");
	srv_ops = &fake_dev_ops;
	close(mfd);
	close(efd);
}

static void test_malformed(void)
{
	struct srv s;
	struct vcxl_client *c = srv_start(&s, true);
	struct vcxl_client_reply rep;
	int efd = eventfd(0, EFD_CLOEXEC);
	uint32_t v;

	is(raw_err(c, 99, 0, NULL, 0, NULL, 0), ENOSYS, "unknown command: ENOSYS");
	is(raw_err(c, VFIO_USER_DEVICE_FEATURE, 0, &v, 4, NULL, 0), EINVAL,
	   "DEVICE_FEATURE of 4 bytes: EINVAL");
	{
		/* a device without migration (the fake's table has no mig_*) */
		struct vfio_device_feature f = {
		    .argsz = 16, .flags = VFIO_DEVICE_FEATURE_GET | VFIO_DEVICE_FEATURE_MIGRATION};
		struct vfio_user_mig_data d = {.argsz = 8 + 64, .size = 64};
		is(raw_err(c, VFIO_USER_DEVICE_FEATURE, 0, &f, sizeof(f), NULL, 0), ENOTTY,
		   "DEVICE_FEATURE MIGRATION on a device without it: ENOTTY");
		is(raw_err(c, VFIO_USER_MIG_DATA_READ, 0, &d, sizeof(d), NULL, 0), ENOTTY,
		   "MIG_DATA_READ on a device without migration: ENOTTY");
	}
	is(raw_err(c, VFIO_USER_DMA_READ, 0, &v, 4, NULL, 0), EINVAL, "client DMA_READ: EINVAL");
	is(raw_err(c, VFIO_USER_DEVICE_RESET, 0, NULL, 0, &efd, 1), EINVAL,
	   "unexpected fd: EINVAL");
	is(raw_err(c, VFIO_USER_DEVICE_RESET, VFIO_USER_F_ERROR, NULL, 0, NULL, 0), EINVAL,
	   "ERROR flag in a command: EINVAL");
	is(raw_err(c, VFIO_USER_DEVICE_RESET, 0x100, NULL, 0, NULL, 0), EINVAL,
	   "unknown flag: EINVAL");
	is(raw_err(c, VFIO_USER_DEVICE_GET_REGION_INFO, 0, &v, 4, NULL, 0), EINVAL,
	   "short REGION_INFO: EINVAL");
	is(raw_err(c, VFIO_USER_DMA_UNMAP, 0, &v, 4, NULL, 0), EINVAL, "short DMA_UNMAP: EINVAL");
	is(raw_err(c, VFIO_USER_DEVICE_RESET, 0, &v, 4, NULL, 0), EINVAL, "RESET payload: EINVAL");
	{
		struct vfio_user_hdr h = {.msg_id = 7,
					  .command = VFIO_USER_DEVICE_RESET,
					  .msg_size = 16,
					  .flags = VFIO_USER_F_TYPE_REPLY};

		vcxl_client_send_bytes(c, &h, sizeof(h), NULL, 0);
		is(vcxl_client_read32(c, 7, 0, &v), 0, "stray reply ignored, next request served");
	}
	ok(vcxl_client_read32(c, 7, 0, &v) == 0 && v == 0x8086, "valid request still works");
	{
		struct vfio_user_hdr h = {
		    .msg_id = 8, .command = VFIO_USER_DEVICE_RESET, .msg_size = 8};

		vcxl_client_send_bytes(c, &h, sizeof(h), NULL, 0);
		ok(vcxl_client_recv_reply(c, &rep, 5000) != 0, "msg_size 8: connection closed");
	}
	srv_stop(&s, c);
	is(s.exit_rc, -EPROTO, "server closed with EPROTO");
	is(s.dev.gone, 1, "device told the client is gone");
	ok(s.st.proto_errors >= 10, "protocol errors counted");

	c = srv_start(&s, true);
	{
		struct vfio_user_hdr h = {.msg_id = 9,
					  .command = VFIO_USER_REGION_WRITE,
					  .msg_size = VCXL_SRV_MAX_XFER + VCXL_SRV_MSG_SLACK + 1};

		vcxl_client_send_bytes(c, &h, sizeof(h), NULL, 0);
		ok(vcxl_client_recv_reply(c, &rep, 5000) != 0, "msg_size beyond the cap: closed");
	}
	srv_stop(&s, c);
	is(s.exit_rc, -EPROTO, "oversize closed with EPROTO");
	c = srv_start(&s, true);
	{
		struct vfio_user_hdr h = {.msg_id = 9, .command = 1, .msg_size = 16, .flags = 3};

		vcxl_client_send_bytes(c, &h, sizeof(h), NULL, 0);
		ok(vcxl_client_recv_reply(c, &rep, 5000) != 0, "type 3: closed");
	}
	srv_stop(&s, c);
	close(efd);
}

/* A device whose reset blocks (a hardware FLR: an ioctl of 100 ms and more)
 * waits through the server's run_blocking on a worker thread: the loop goes
 * on turning, this client's further requests are held and answered after the
 * reset's, in order. */
static int slow_fn(void *arg)
{
	struct timespec ts = {0, 300 * 1000000L};

	nanosleep(&ts, NULL);
	return *(int *)arg;
}

static int slow_reset(void *dev)
{
	struct fake_dev *f = dev;
	static int ret = 0;

	f->resets++;
	if (f->dma && f->dma->run_blocking)
		return f->dma->run_blocking(f->dma_opaque, slow_fn, &ret);
	return slow_fn(&ret);
}

static void test_blocking_reset(void)
{
	static struct vcxl_dev_ops ops;
	struct srv s;
	struct vcxl_client *c;
	struct vfio_user_hdr h = {
	    .msg_id = 0x51, .command = VFIO_USER_DEVICE_RESET, .msg_size = sizeof(h)};
	uint8_t rd[sizeof(struct vfio_user_hdr) + sizeof(struct vfio_user_region_access)];
	struct vfio_user_hdr hr = {
	    .msg_id = 0x52, .command = VFIO_USER_REGION_READ, .msg_size = sizeof(rd)};
	struct vfio_user_region_access ra = {.offset = 0, .region = 7, .count = 4};
	struct vcxl_client_reply rep;
	struct timespec t0, t1;
	uint16_t ids[2] = {0, 0};
	double ms;

	ops = fake_dev_ops;
	ops.reset = slow_reset;
	srv_ops = &ops;
	c = srv_start(&s, true);
	srv_ops = &fake_dev_ops;
	if (!ok(c != NULL, "blocking reset: server up"))
		return;
	memcpy(rd, &hr, sizeof(hr));
	memcpy(rd + sizeof(hr), &ra, sizeof(ra));
	clock_gettime(CLOCK_MONOTONIC, &t0);
	ok(vcxl_client_send_bytes(c, &h, sizeof(h), NULL, 0) == 0 &&
	       vcxl_client_send_bytes(c, rd, sizeof(rd), NULL, 0) == 0,
	   "DEVICE_RESET and a REGION_READ pipelined");
	for (int i = 0; i < 2; i++) {
		if (vcxl_client_recv_reply(c, &rep, 5000))
			break;
		ids[i] = rep.hdr.msg_id;
		if (i == 0)
			clock_gettime(CLOCK_MONOTONIC, &t1);
		vcxl_client_reply_free(&rep);
	}
	ms = (double)(t1.tv_sec - t0.tv_sec) * 1e3 + (double)(t1.tv_nsec - t0.tv_nsec) / 1e6;
	ok(ids[0] == 0x51 && ids[1] == 0x52, "the reset's reply first, then the read's (%#x %#x)",
	   ids[0], ids[1]);
	ok(ms >= 250, "the reset's reply after the device's wait (%.0f ms)", ms);
	srv_stop(&s, c);
	ok(s.busy_turns >= 10, "the loop turned %u times while the reset waited", s.busy_turns);
	is(s.dev.resets, 1, "one reset");
	/* the client leaves while its reset waits: the loop goes on turning until
	 * the reset is done, then the device is readied for the next client */
	srv_ops = &ops;
	c = srv_start(&s, true);
	srv_ops = &fake_dev_ops;
	if (!ok(c != NULL, "blocking reset: server up again"))
		return;
	h.msg_id = 0x53;
	ok(vcxl_client_send_bytes(c, &h, sizeof(h), NULL, 0) == 0, "DEVICE_RESET, then gone");
	usleep(50000);
	srv_stop(&s, c);
	ok(s.closing_turns >= 10, "the loop turned %u times while the closed client's reset waited",
	   s.closing_turns);
	ok(s.dev.resets == 1 && s.dev.gone == 1, "the reset done, then client_gone (%u, %u)",
	   s.dev.resets, s.dev.gone);
}

int main(void)
{
	test_version();
	test_info();
	test_region_rw();
	test_dma_irq();
	test_hw_device();
	test_malformed();
	test_blocking_reset();
	return done();
}
