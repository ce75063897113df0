// SPDX-License-Identifier: BSD-3-Clause
/*
 * Server behaviour with the real binary: two devices in one process, a
 * stalled client not blocking the other device, one client per socket (the
 * next waits in the backlog), disconnect and reconnect, a table of malformed
 * messages each answered with its errno while the server keeps serving,
 * unrecoverable streams closed, pipelined requests (more than one batch in
 * one write) all answered on two devices at once, eventfds checked and never
 * blocking the server, --on-disconnect reset (no byte of one tenant for the
 * next) and keep (all of it for a reconnecting client), a neighbour's round
 * trip bounded while device 0 stalls DMA (its job fails at the timeout, or
 * with -ENOBUFS when it floods instead of answering) / floods / holds a full
 * eventfd or runs a 1 GiB job (in steps: BUSY, a doorbell while BUSY dropped,
 * a reset aborting it) or has its 1 GiB --backing region scrubbed for the next
 * tenant (in steps), and a clean SIGTERM exit.
 */
#include <sys/eventfd.h>
#include <sys/mman.h>

#include "tap.h"
#include "integration/harness.h"
#include "model/model.h"

static const uint32_t RW = VFIO_USER_F_DMA_REGION_READ | VFIO_USER_F_DMA_REGION_WRITE;

static int send_version(struct vcxl_client *c)
{
	static const char js[] = "{\"capabilities\":{\"max_msg_fds\":16}}";
	uint8_t buf[16 + 4 + sizeof(js)];
	struct vfio_user_hdr h = {
	    .msg_id = 1, .command = VFIO_USER_VERSION, .msg_size = sizeof(buf)};

	memset(buf, 0, sizeof(buf));
	memcpy(buf, &h, sizeof(h));
	memcpy(buf + 20, js, sizeof(js));
	return vcxl_client_send_bytes(c, buf, sizeof(buf), NULL, 0);
}

static void test_two_devices_and_stall(struct harness *h)
{
	char s0[160], s1[160];
	struct vcxl_client *a, *b, *b2;
	struct vcxl_client_reply rep;
	uint32_t v = 0;
	uint8_t partial[16 + 16 + 4];
	struct vfio_user_hdr hw = {
	    .msg_id = 42, .command = VFIO_USER_REGION_WRITE, .msg_size = sizeof(partial)};
	struct vfio_user_region_access ra = {.offset = 0x3c, .region = 7, .count = 4};
	uint32_t val = 0xff;

	h_dev_sock(h, 0, s0, sizeof(s0));
	h_dev_sock(h, 1, s1, sizeof(s1));
	is(vcxl_client_connect(s0, &a), 0, "device 0 connected");
	is(vcxl_client_connect(s1, &b), 0, "device 1 connected");
	/* a sends a header promising a payload, then stalls mid-message */
	memcpy(partial, &hw, 16);
	memcpy(partial + 16, &ra, 16);
	memcpy(partial + 32, &val, 4);
	is(vcxl_client_send_bytes(a, partial, 20, NULL, 0), 0, "device 0: half a message sent");
	h_sleep_ms(50);
	ok(vcxl_client_read32(b, 7, 0, &v) == 0 && v == 0x0d948086,
	   "device 1 served while device 0's client stalls");
	{
		struct vcxl_client_info info;

		is(vcxl_client_get_info(b, &info), 0, "device 1 GET_INFO");
	}
	is(vcxl_client_send_bytes(a, partial + 20, sizeof(partial) - 20, NULL, 0), 0,
	   "device 0: rest of the message");
	is(vcxl_client_recv_reply(a, &rep, 5000), 0, "device 0: reply after the stall");
	ok(rep.hdr.msg_id == 42 && !(rep.hdr.flags & VFIO_USER_F_ERROR), "reassembled write ok");
	vcxl_client_reply_free(&rep);

	/* one client per socket: the next waits in the backlog */
	is(vcxl_client_connect_raw(s1, &b2), 0, "second client connects to device 1's socket");
	send_version(b2);
	is(vcxl_client_recv_reply(b2, &rep, 300), -ETIMEDOUT, "not served while the first is on");
	ok(vcxl_client_read32(b, 7, 0, &v) == 0, "first client unaffected");
	vcxl_client_close(b);
	is(vcxl_client_recv_reply(b2, &rep, 5000), 0, "served after the first disconnects");
	ok(rep.hdr.msg_id == 1 && !(rep.hdr.flags & VFIO_USER_F_ERROR), "its VERSION succeeded");
	vcxl_client_reply_free(&rep);
	vcxl_client_close(b2);

	/* disconnect drops the mappings; reconnect gets a fresh connection */
	{
		int mfd = memfd_create("g", MFD_CLOEXEC);

		setup_ok(ftruncate(mfd, 1 << 20));
		is(vcxl_client_dma_map(a, 0x100000, 1 << 20, RW, mfd, 0, NULL), 0,
		   "map on device 0");
		close(mfd);
		vcxl_client_close(a);
		is(vcxl_client_connect(s0, &a), 0, "reconnect to device 0");
		is(vcxl_client_dma_map(a, 0x100000, 1 << 20, RW, -1, 0, NULL), 0,
		   "old mapping gone after disconnect: the range maps again (no EEXIST)");
		vcxl_client_close(a);
	}
}

struct bad {
	const char *name;
	uint16_t cmd;
	uint32_t flags;
	uint8_t payload[64];
	size_t len;
	int nfds;
	int err;
};

static void test_malformed(struct harness *h)
{
	char s0[160];
	struct vcxl_client *c;
	struct vcxl_client_reply rep;
	int efd = memfd_create("x", MFD_CLOEXEC);
	const struct bad bads[] = {
	    {"unknown command 99", 99, 0, {0}, 0, 0, ENOSYS},
	    {"command 0", 0, 0, {0}, 0, 0, ENOSYS},
	    {"DEVICE_FEATURE argsz 0", VFIO_USER_DEVICE_FEATURE, 0, {0}, 8, 0, EINVAL},
	    {"REGION_IO_FDS", VFIO_USER_DEVICE_GET_REGION_IO_FDS, 0, {16}, 16, 0, ENOSYS},
	    {"second VERSION", VFIO_USER_VERSION, 0, {0, 0, 0, 0, '{', '}', 0}, 7, 0, EINVAL},
	    {"GET_INFO short", VFIO_USER_DEVICE_GET_INFO, 0, {16}, 4, 0, EINVAL},
	    {"GET_INFO argsz 8", VFIO_USER_DEVICE_GET_INFO, 0, {8}, 16, 0, EINVAL},
	    {"REGION_INFO index 200",
	     VFIO_USER_DEVICE_GET_REGION_INFO,
	     0,
	     {32, 0, 0, 0, 0, 0, 0, 0, 200},
	     32,
	     0,
	     EINVAL},
	    {"REGION_INFO argsz 16", VFIO_USER_DEVICE_GET_REGION_INFO, 0, {16}, 32, 0, EINVAL},
	    {"IRQ_INFO index 9",
	     VFIO_USER_DEVICE_GET_IRQ_INFO,
	     0,
	     {16, 0, 0, 0, 0, 0, 0, 0, 9},
	     16,
	     0,
	     EINVAL},
	    {"REGION_READ count 1M+1",
	     VFIO_USER_REGION_READ,
	     0,
	     {0, 0, 0, 0, 0, 0, 0, 0, 7, 0, 0, 0, 1, 0, 0x10, 0},
	     16,
	     0,
	     E2BIG},
	    {"REGION_READ region 99",
	     VFIO_USER_REGION_READ,
	     0,
	     {0, 0, 0, 0, 0, 0, 0, 0, 99, 0, 0, 0, 4},
	     16,
	     0,
	     EINVAL},
	    {"REGION_READ past config",
	     VFIO_USER_REGION_READ,
	     0,
	     {0xfe, 0x0f, 0, 0, 0, 0, 0, 0, 7, 0, 0, 0, 4},
	     16,
	     0,
	     EINVAL},
	    {"REGION_READ with an fd",
	     VFIO_USER_REGION_READ,
	     0,
	     {0, 0, 0, 0, 0, 0, 0, 0, 7, 0, 0, 0, 4},
	     16,
	     1,
	     EINVAL},
	    {"REGION_WRITE count > data",
	     VFIO_USER_REGION_WRITE,
	     0,
	     {0, 0, 0, 0, 0, 0, 0, 0, 7, 0, 0, 0, 8, 0, 0, 0, 1, 2},
	     18,
	     0,
	     EINVAL},
	    {"DMA_MAP short", VFIO_USER_DMA_MAP, 0, {32}, 16, 0, EINVAL},
	    {"DMA_MAP unaligned",
	     VFIO_USER_DMA_MAP,
	     0,
	     {32, 0, 0, 0, 3, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 1, 0, 0, 0, 0, 0, 0, 0, 0, 0x10},
	     32,
	     0,
	     EINVAL},
	    {"DMA_MAP overlap",
	     VFIO_USER_DMA_MAP,
	     0,
	     {32, 0, 0, 0, 3, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0x10, 0, 0, 0, 0, 0, 0, 0x10},
	     32,
	     0,
	     EEXIST},
	    {"DMA_UNMAP size 0",
	     VFIO_USER_DMA_UNMAP,
	     0,
	     {24, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0x70},
	     24,
	     0,
	     EINVAL},
	    {"DMA_UNMAP dirty-bitmap flag",
	     VFIO_USER_DMA_UNMAP,
	     0,
	     {24, 0, 0, 0, 1},
	     24,
	     0,
	     EINVAL},
	    {"SET_IRQS two actions",
	     VFIO_USER_DEVICE_SET_IRQS,
	     0,
	     {20, 0, 0, 0, 0x19, 0, 0, 0, 2, 0, 0, 0, 0, 0, 0, 0, 1},
	     20,
	     0,
	     EINVAL},
	    {"SET_IRQS index 9",
	     VFIO_USER_DEVICE_SET_IRQS,
	     0,
	     {20, 0, 0, 0, 0x21, 0, 0, 0, 9, 0, 0, 0, 0, 0, 0, 0, 1},
	     20,
	     0,
	     EINVAL},
	    {"SET_IRQS vectors beyond count",
	     VFIO_USER_DEVICE_SET_IRQS,
	     0,
	     {20, 0, 0, 0, 0x21, 0, 0, 0, 2, 0, 0, 0, 0, 1, 0, 0, 1},
	     20,
	     0,
	     EINVAL},
	    {"DEVICE_RESET with payload", VFIO_USER_DEVICE_RESET, 0, {0}, 4, 0, EINVAL},
	    {"ERROR flag in a command",
	     VFIO_USER_DEVICE_RESET,
	     VFIO_USER_F_ERROR,
	     {0},
	     0,
	     0,
	     EINVAL},
	    {"client DMA_WRITE", VFIO_USER_DMA_WRITE, 0, {0}, 16, 0, EINVAL},
	    {"WRITE_MULTI wr_cnt 0", VFIO_USER_REGION_WRITE_MULTI, 0, {0}, 8, 0, EINVAL},
	};
	const unsigned nbad = sizeof(bads) / sizeof(bads[0]);
	int before;
	uint32_t v = 0;

	h_dev_sock(h, 0, s0, sizeof(s0));
	is(vcxl_client_connect(s0, &c), 0, "connect");
	is(vcxl_client_dma_map(c, 0x100000, 0x100000, RW, -1, 0, NULL), 0,
	   "a map for the overlap case");
	before = h_log_count(h, VCXL_PROTO_ERR_PREFIX);
	for (unsigned i = 0; i < nbad; i++) {
		int rc =
		    vcxl_client_raw(c, bads[i].cmd, bads[i].flags, bads[i].payload, bads[i].len,
				    bads[i].nfds ? &efd : NULL, (unsigned)bads[i].nfds, &rep);

		ok(rc == 0 && (rep.hdr.flags & VFIO_USER_F_ERROR) &&
		       (int)rep.hdr.error == bads[i].err && rep.hdr.msg_size == 16,
		   "%s: header-only error %d", bads[i].name, bads[i].err);
		if (!rc && (int)rep.hdr.error != bads[i].err)
			diag("got error %u", rep.hdr.error);
		if (!rc)
			vcxl_client_reply_free(&rep);
	}
	ok(vcxl_client_read32(c, 7, 0, &v) == 0 && v == 0x0d948086, "valid request still served");
	/* each error is logged before its reply goes out: no wait needed */
	is(h_log_count(h, VCXL_PROTO_ERR_PREFIX) - before, nbad,
	   "each bad message logged as a protocol error");
	vcxl_client_close(c);

	/* the negotiated max_dma_maps bounds the table */
	is(vcxl_client_connect_raw(s0, &c), 0, "connect");
	is(vcxl_client_negotiate(c, "{\"capabilities\":{\"max_dma_maps\":2}}"), 0,
	   "max_dma_maps 2");
	vcxl_client_dma_map(c, 0x10000, 0x1000, RW, -1, 0, NULL);
	vcxl_client_dma_map(c, 0x20000, 0x1000, RW, -1, 0, NULL);
	is(vcxl_client_dma_map(c, 0x30000, 0x1000, RW, -1, 0, NULL), -ENOSPC, "third map: ENOSPC");
	vcxl_client_close(c);

	/* streams that cannot be resynchronised are closed; the socket serves again */
	{
		static const struct vfio_user_hdr fatal[] = {
		    {.msg_id = 1, .command = VFIO_USER_DEVICE_RESET, .msg_size = 15},
		    {.msg_id = 2, .command = VFIO_USER_DEVICE_RESET, .msg_size = 16, .flags = 2},
		    {.msg_id = 3, .command = VFIO_USER_REGION_WRITE, .msg_size = 0x7fffffff},
		};
		static const char *const names[] = {"msg_size 15", "message type 2",
						    "msg_size 2 GiB"};

		for (unsigned i = 0; i < 3; i++) {
			is(vcxl_client_connect(s0, &c), 0, "connect (%s)", names[i]);
			vcxl_client_send_bytes(c, &fatal[i], sizeof(fatal[i]), NULL, 0);
			ok(vcxl_client_recv_reply(c, &rep, 5000) == -ECONNRESET,
			   "%s: connection closed", names[i]);
			vcxl_client_close(c);
		}
		is(vcxl_client_connect(s0, &c), 0, "next client served after the closes");
		ok(vcxl_client_read32(c, 7, 0, &v) == 0 && v == 0x0d948086,
		   "and its requests work");
		vcxl_client_close(c);
	}
	close(efd);
}

/* vfio-user spec allows pipelining: n REGION_READs of the vendor/device ID
 * in one write. */
/* n REGION_READs (or, write, REGION_WRITEs of the read-only Vendor ID) of
 * config dword 0 in one write */
static int send_pipelined(struct vcxl_client *c, unsigned n, uint16_t first_id, bool write)
{
	const size_t one =
	    sizeof(struct vfio_user_hdr) + sizeof(struct vfio_user_region_access) + (write ? 4 : 0);
	uint8_t *buf = calloc(n, one);
	int rc;

	if (!buf)
		return -ENOMEM;
	for (unsigned i = 0; i < n; i++) {
		struct vfio_user_hdr hh = {.msg_id = (uint16_t)(first_id + i),
					   .command = write ? VFIO_USER_REGION_WRITE
							    : VFIO_USER_REGION_READ,
					   .msg_size = (uint32_t)one};
		struct vfio_user_region_access ra = {.offset = 0, .region = 7, .count = 4};

		memcpy(buf + i * one, &hh, sizeof(hh));
		memcpy(buf + i * one + sizeof(hh), &ra, sizeof(ra));
	}
	rc = vcxl_client_send_bytes(c, buf, n * one, NULL, 0);
	free(buf);
	return rc;
}

static int send_pipelined_reads(struct vcxl_client *c, unsigned n, uint16_t first_id)
{
	return send_pipelined(c, n, first_id, false);
}

/* Replies to n pipelined reads, in order, each with the ID. */
static unsigned recv_pipelined_reads(struct vcxl_client *c, unsigned n, uint16_t first_id)
{
	unsigned got = 0;

	for (unsigned i = 0; i < n; i++) {
		struct vcxl_client_reply rep;
		uint32_t v = 0;

		if (vcxl_client_recv_reply(c, &rep, 2000))
			break;
		if (rep.hdr.msg_id == (uint16_t)(first_id + i) && rep.len >= 16 + 4) {
			memcpy(&v, rep.data + 16, 4);
			if (v == 0x0d948086)
				got++;
		}
		vcxl_client_reply_free(&rep);
	}
	return got;
}

static void test_pipelining(struct harness *h)
{
	char s0[160], s1[160];
	struct vcxl_client *a, *b;

	h_dev_sock(h, 0, s0, sizeof(s0));
	h_dev_sock(h, 1, s1, sizeof(s1));
	if (vcxl_client_connect(s0, &a) || vcxl_client_connect(s1, &b)) {
		ok(0, "pipelining: connect");
		return;
	}
	is(send_pipelined_reads(a, 100, 1000), 0, "100 REGION_READs in one write");
	is(recv_pipelined_reads(a, 100, 1000), 100, "all 100 answered, in order");
	/* both devices pipelining at once: each connection gets all its replies */
	is(send_pipelined_reads(a, 300, 2000), 0, "device 0: 300 reads in one write");
	is(send_pipelined_reads(b, 300, 3000), 0, "device 1: 300 reads in one write");
	is(recv_pipelined_reads(b, 300, 3000), 300, "device 1: all 300 answered");
	is(recv_pipelined_reads(a, 300, 2000), 300, "device 0: all 300 answered");
	vcxl_client_close(a);
	vcxl_client_close(b);
}

/* Eventfds: anything else is refused; a blocking eventfd whose counter is
 * full must not block the server (the interrupt is already pending). */
static void test_eventfds(struct harness *h)
{
	const uint32_t trig_fd = VFIO_IRQ_SET_DATA_EVENTFD | VFIO_IRQ_SET_ACTION_TRIGGER;
	const uint32_t trig_none = VFIO_IRQ_SET_DATA_NONE | VFIO_IRQ_SET_ACTION_TRIGGER;
	const uint64_t full = 0xfffffffffffffffeull;
	char s0[160], s1[160];
	struct vcxl_client *a, *b;
	int p[2], efd = eventfd(0, EFD_CLOEXEC); /* blocking, as a hostile client passes it */
	uint64_t cnt = 0;
	uint32_t v = 0;

	h_dev_sock(h, 0, s0, sizeof(s0));
	h_dev_sock(h, 1, s1, sizeof(s1));
	if (efd < 0 || pipe(p) || vcxl_client_connect(s0, &a) || vcxl_client_connect(s1, &b)) {
		ok(0, "eventfds: setup");
		return;
	}
	is(vcxl_client_set_irqs(a, VFIO_PCI_MSIX_IRQ_INDEX, trig_fd, 0, 1, &p[1], 1, NULL), -EINVAL,
	   "a pipe as trigger eventfd: EINVAL");
	is(vcxl_client_set_irqs(a, VFIO_PCI_MSIX_IRQ_INDEX, trig_fd, 0, 1, &efd, 1, NULL), 0,
	   "a blocking eventfd as trigger");
	ok(write(efd, &full, 8) == 8, "its counter filled to the maximum");
	/* the software trigger makes the server write the eventfd */
	is(vcxl_client_set_irqs(a, VFIO_PCI_MSIX_IRQ_INDEX, trig_none, 0, 1, NULL, 0, NULL), 0,
	   "TRIGGER on the full eventfd answered");
	ok(vcxl_client_read32(b, 7, 0, &v) == 0 && v == 0x0d948086, "device 1 still served");
	ok(read(efd, &cnt, 8) == 8 && cnt == full,
	   "full counter left as it was (already signalled)");
	is(vcxl_client_set_irqs(a, VFIO_PCI_MSIX_IRQ_INDEX, trig_none, 0, 1, NULL, 0, NULL), 0,
	   "TRIGGER on the drained eventfd");
	ok(h_eventfd_fired(efd, 2000), "and it fires");
	vcxl_client_close(a);
	vcxl_client_close(b);
	close(p[0]);
	close(p[1]);
	close(efd);
}

/* One tenant's session on a device: write a pattern into the CXL region,
 * through the mapping the server passes and through REGION_WRITE. */
#define TENANT_SPAN (1u << 20)
static int tenant_write(const char *sock, uint8_t pattern)
{
	struct vcxl_client *c;
	struct vcxl_client_info info;
	struct vcxl_client_region ri;
	uint8_t *buf = malloc(TENANT_SPAN), *map;
	int rc = -EIO;

	if (!buf || vcxl_client_connect(sock, &c)) {
		free(buf);
		return -EIO;
	}
	memset(buf, pattern, TENANT_SPAN);
	if (vcxl_client_get_info(c, &info) ||
	    vcxl_client_region_info(c, info.cxl.region_index, &ri))
		goto out;
	map = ri.fd >= 0
		  ? mmap(NULL, ri.size, PROT_READ | PROT_WRITE, MAP_SHARED, ri.fd, (off_t)ri.offset)
		  : MAP_FAILED;
	if (map == MAP_FAILED)
		goto out;
	memcpy(map, buf, TENANT_SPAN);			       /* the first MiB by mmap */
	memcpy(map + ri.size - TENANT_SPAN, buf, TENANT_SPAN); /* and the last */
	munmap(map, ri.size);
	rc = 0;
	for (uint64_t off = TENANT_SPAN; off < 2 * TENANT_SPAN && !rc; off += 65536)
		rc = vcxl_client_region_write(c, info.cxl.region_index, off, buf, 65536);
out:
	if (ri.fd >= 0)
		close(ri.fd);
	vcxl_client_close(c);
	free(buf);
	return rc;
}

/* The next tenant: bytes of the three written MiB equal to pattern, or -1. */
static long tenant_count(const char *sock, uint8_t pattern)
{
	struct vcxl_client *c;
	struct vcxl_client_info info;
	struct vcxl_client_region ri;
	uint8_t *buf = malloc(65536);
	long n = 0;

	if (!buf || vcxl_client_connect(sock, &c)) {
		free(buf);
		return -1;
	}
	if (vcxl_client_get_info(c, &info) ||
	    vcxl_client_region_info(c, info.cxl.region_index, &ri)) {
		n = -1;
		goto out;
	}
	if (ri.fd >= 0)
		close(ri.fd);
	for (int part = 0; part < 3 && n >= 0; part++) {
		uint64_t base = part == 2 ? ri.size - TENANT_SPAN : (uint64_t)part * TENANT_SPAN;

		for (uint64_t off = 0; off < TENANT_SPAN; off += 65536) {
			if (vcxl_client_region_read(c, info.cxl.region_index, base + off, buf,
						    65536)) {
				n = -1;
				break;
			}
			for (unsigned i = 0; i < 65536; i++)
				n += buf[i] == pattern;
		}
	}
out:
	vcxl_client_close(c);
	free(buf);
	return n;
}

/* --on-disconnect: reset (this server's default) gives the next client no
 * byte of the last one's; keep (a second server) hands it everything. */
static void test_on_disconnect(struct harness *h, int argc, char **argv)
{
	char s1[160];
	struct harness k = {.cli = h->cli};
	const char *keep[] = {"--on-disconnect", "keep", NULL};

	h_dev_sock(h, 1, s1, sizeof(s1));
	is(tenant_write(s1, 0x5a), 0, "reset: tenant A writes 3 MiB (mmap and REGION_WRITE)");
	is(tenant_count(s1, 0x5a), 0, "reset: tenant B reads no byte tenant A wrote");
	is(h_log_count(h, "reset for the next client failed"), 0, "reset: no failure logged");

	if (!ok(h_start(&k, h_server_bin(argc, argv), -1, keep) == 0,
		"vcxl-server --on-disconnect keep started")) {
		h_cleanup(&k);
		return;
	}
	is(tenant_write(k.sock, 0xa5), 0, "keep: the client writes 3 MiB");
	is(tenant_count(k.sock, 0xa5), 3 * TENANT_SPAN,
	   "keep: reconnected, it reads all of it back");
	is(h_stop(&k), 0, "keep: server exits 0");
	h_cleanup(&k);
}

/* A job whose DMA_WRITEs (into a window without an fd) device 0's client
 * never answers: the doorbell is sent, nothing is read back. */
static int stall_dma(struct vcxl_client *a)
{
	uint8_t msg[sizeof(struct vfio_user_hdr) + sizeof(struct vfio_user_region_access) + 4];
	struct vfio_user_hdr hh = {
	    .msg_id = 0x77, .command = VFIO_USER_REGION_WRITE, .msg_size = sizeof(msg)};
	struct vfio_user_region_access ra = {.offset = ACCEL_REG_DOORBELL, .region = 2, .count = 4};
	uint32_t go = ACCEL_DOORBELL_GO;

	if (vcxl_client_dma_map(a, 0x40000000, 1 << 20, RW, -1, 0, NULL) ||
	    vcxl_client_write32(a, 2, ACCEL_REG_JOB_OP, ACCEL_OP_FILL) ||
	    vcxl_client_write32(a, 2, ACCEL_REG_JOB_FLAGS, ACCEL_JOBF_DST_HOST) ||
	    vcxl_client_write64(a, 2, ACCEL_REG_JOB_DST, 0x40000000) ||
	    vcxl_client_write64(a, 2, ACCEL_REG_JOB_LEN, 3 * 65536) ||
	    vcxl_client_write64(a, 2, ACCEL_REG_JOB_PATTERN, 0x1122334455667788ull))
		return -EIO;
	memcpy(msg, &hh, sizeof(hh));
	memcpy(msg + sizeof(hh), &ra, sizeof(ra));
	memcpy(msg + sizeof(hh) + sizeof(ra), &go, 4);
	return vcxl_client_send_bytes(a, msg, sizeof(msg), NULL, 0);
}

/* Liveness: while device 0's client stalls its DMA, floods requests without
 * reading replies, or holds a blocking eventfd at a full counter, device 1's
 * round trip stays bounded (generous bound; make bench has the figure). */
static void test_neighbour(struct harness *h)
{
	char s0[160], s1[160];
	struct vcxl_client *a, *b;
	double w;

	h_dev_sock(h, 0, s0, sizeof(s0));
	h_dev_sock(h, 1, s1, sizeof(s1));
	if (vcxl_client_connect(s0, &a) || vcxl_client_connect(s1, &b)) {
		ok(0, "neighbour: connect");
		return;
	}
	is(stall_dma(a), 0, "device 0: a job doing DMA its client never answers");
	w = h_neighbour_worst_ms(b, 1500);
	ok(w >= 0 && w < 1000, "device 1 served while device 0's DMA stalls: worst %.1f ms", w);
	{
		/* the client that never answers fails its own device's job, at the
		 * DMA timeout, with the device's error */
		uint32_t st = 0;

		h_sleep_ms(VCXL_SRV_DMA_TIMEOUT_MS - 1500 + 500);
		is(vcxl_client_read32(a, 2, ACCEL_REG_STATUS, &st), 0, "device 0 answers again");
		ok(st & ACCEL_STATUS_ERROR, "its job ended in ERROR (status 0x%x)", st);
		ok(h_log_count(h, "dev0: DMA write 0x40000000+65536: Connection timed out") == 1,
		   "the timeout is logged for device 0 only");
	}
	vcxl_client_close(a); /* gone; reconnect below */
	if (vcxl_client_connect(s0, &a) || stall_dma(a)) {
		ok(0, "device 0: a second stalled job");
		vcxl_client_close(b);
		return;
	}
	/* flooding instead of answering: more requests than the queue takes
	 * fail the job with -ENOBUFS, and every request is still answered (writes:
	 * a read while the job waits for its DMA is answered at once, not queued) */
	is(send_pipelined(a, VCXL_SRV_MAX_QUEUED + 44, 5000, true), 0,
	   "device 0: %d writes instead of the DMA reply", VCXL_SRV_MAX_QUEUED + 44);
	{
		uint32_t st = 0;
		struct vcxl_client_reply rep;
		unsigned got = 0;

		for (int i = 0; i < VCXL_SRV_MAX_QUEUED + 45; i++) {
			if (vcxl_client_recv_reply(a, &rep, 5000))
				break;
			got++;
			vcxl_client_reply_free(&rep);
		}
		is(got, VCXL_SRV_MAX_QUEUED + 45, "every request answered (the doorbell too)");
		is(vcxl_client_read32(a, 2, ACCEL_REG_STATUS, &st), 0, "status read");
		ok(st & ACCEL_STATUS_ERROR, "the job ended in ERROR (status 0x%x)", st);
		ok(h_log_count(h, "No buffer space available") >= 1, "-ENOBUFS logged");
	}
	vcxl_client_close(a);
	if (vcxl_client_connect(s0, &a) || stall_dma(a)) {
		ok(0, "device 0: a third stalled job");
		vcxl_client_close(b);
		return;
	}
	h_sleep_ms(100);
	vcxl_client_close(a); /* gone with its DMA outstanding */
	if (vcxl_client_connect(s0, &a)) {
		ok(0, "device 0: reconnect after the stalled DMA");
		vcxl_client_close(b);
		return;
	}
	{
		/* a flood: 2000 pipelined reads, no reply read */
		is(send_pipelined_reads(a, 2000, 1), 0, "device 0: 2000 requests, replies unread");
		w = h_neighbour_worst_ms(b, 500);
		ok(w >= 0 && w < 1000, "device 1 served during device 0's flood: worst %.1f ms", w);
	}
	vcxl_client_close(a);
	if (vcxl_client_connect(s0, &a) == 0) {
		int efd = eventfd(0, EFD_CLOEXEC);
		const uint64_t full = 0xfffffffffffffffeull;

		vcxl_client_set_irqs(a, VFIO_PCI_MSIX_IRQ_INDEX,
				     VFIO_IRQ_SET_DATA_EVENTFD | VFIO_IRQ_SET_ACTION_TRIGGER, 0, 1,
				     &efd, 1, NULL);
		if (write(efd, &full, 8) != 8)
			diag("eventfd fill failed");
		vcxl_client_set_irqs(a, VFIO_PCI_MSIX_IRQ_INDEX,
				     VFIO_IRQ_SET_DATA_NONE | VFIO_IRQ_SET_ACTION_TRIGGER, 0, 1,
				     NULL, 0, NULL);
		w = h_neighbour_worst_ms(b, 300);
		ok(w >= 0 && w < 1000,
		   "device 1 served while device 0 holds a full eventfd: worst %.1f ms", w);
		close(efd);
		vcxl_client_close(a);
	}
	vcxl_client_close(b);
}

/* Device 0 starts a FILL of len bytes of its memory; the doorbell goes out
 * without waiting for its reply (recv_doorbell takes it), so a server that
 * runs the job inside the doorbell is measured too. 0 or -errno. */
static int start_fill(struct vcxl_client *a, uint64_t len)
{
	uint8_t msg[sizeof(struct vfio_user_hdr) + sizeof(struct vfio_user_region_access) + 4];
	struct vfio_user_hdr hh = {
	    .msg_id = 0x79, .command = VFIO_USER_REGION_WRITE, .msg_size = sizeof(msg)};
	struct vfio_user_region_access ra = {.offset = ACCEL_REG_DOORBELL, .region = 2, .count = 4};
	uint32_t go = ACCEL_DOORBELL_GO;

	if (vcxl_client_write32(a, 2, ACCEL_REG_STATUS, ACCEL_STATUS_DONE | ACCEL_STATUS_ERROR) ||
	    vcxl_client_write32(a, 2, ACCEL_REG_JOB_OP, ACCEL_OP_FILL) ||
	    vcxl_client_write32(a, 2, ACCEL_REG_JOB_FLAGS, 0) ||
	    vcxl_client_write64(a, 2, ACCEL_REG_JOB_DST, 0) ||
	    vcxl_client_write64(a, 2, ACCEL_REG_JOB_LEN, len) ||
	    vcxl_client_write64(a, 2, ACCEL_REG_JOB_PATTERN, 0x0123456789abcdefull))
		return -EIO;
	memcpy(msg, &hh, sizeof(hh));
	memcpy(msg + sizeof(hh), &ra, sizeof(ra));
	memcpy(msg + sizeof(hh) + sizeof(ra), &go, 4);
	return vcxl_client_send_bytes(a, msg, sizeof(msg), NULL, 0);
}

/* The doorbell's reply: 0 when it came, without error, within ms. */
static int recv_doorbell(struct vcxl_client *a, int ms)
{
	struct vcxl_client_reply rep;
	int rc = vcxl_client_recv_reply(a, &rep, ms);

	if (rc)
		return rc;
	rc = rep.hdr.msg_id == 0x79 && !(rep.hdr.flags & VFIO_USER_F_ERROR) ? 0 : -EPROTO;
	vcxl_client_reply_free(&rep);
	return rc;
}

/* STATUS once BUSY is gone (0 after ms without that). */
static uint32_t wait_job(struct vcxl_client *a, int ms)
{
	uint32_t st = 0;

	for (int i = 0; i < ms; i++) {
		if (vcxl_client_read32(a, 2, ACCEL_REG_STATUS, &st))
			return 0;
		if (!(st & ACCEL_STATUS_BUSY))
			return st;
		h_sleep_ms(1);
	}
	return 0;
}

/* A slow device operation never holds the loop: device 0's job over all of
 * its 1 GiB runs in steps (BUSY meanwhile) while device 1's round trips stay
 * short; a doorbell while BUSY is dropped, a reset aborts the job. Before the
 * steps a 1 GiB FILL held device 1 for 300-600 ms (make bench). */
static void test_slow_job(int argc, char **argv)
{
	struct harness g = {0};
	const char *args[] = {"--devices", "2", "--mem-size", "1G", NULL};
	const uint64_t len = 1ull << 30;
	char s0[160], s1[160];
	struct vcxl_client *a, *b;
	uint32_t st = 0, n = 0;
	uint64_t q = 0;
	double w;

	if (!ok(h_start(&g, h_server_bin(argc, argv), 0, args) == 0,
		"vcxl-server --devices 2 --mem-size 1G started")) {
		h_cleanup(&g);
		return;
	}
	h_dev_sock(&g, 0, s0, sizeof(s0));
	h_dev_sock(&g, 1, s1, sizeof(s1));
	if (h_wait_socket(s1, 5000) || vcxl_client_connect(s0, &a) || vcxl_client_connect(s1, &b)) {
		ok(0, "slow job: connect");
		h_stop(&g);
		h_cleanup(&g);
		return;
	}
	is(start_fill(a, len), 0, "device 0: doorbell of a 1 GiB FILL sent");
	w = h_neighbour_worst_ms(b, 300);
	ok(w >= 0 && w < 200, "device 1 served while device 0 fills 1 GiB: worst %.1f ms", w);
	is(recv_doorbell(a, 30000), 0, "the doorbell answered");
	if (vcxl_client_read32(a, 2, ACCEL_REG_STATUS, &st))
		st = ~0u;
	is(st, ACCEL_STATUS_BUSY, "its STATUS reads BUSY while the job runs");
	/* a second doorbell while BUSY (a NOP) is dropped: one job completes */
	vcxl_client_write32(a, 2, ACCEL_REG_JOB_OP, ACCEL_OP_NOP);
	vcxl_client_write32(a, 2, ACCEL_REG_DOORBELL, ACCEL_DOORBELL_GO);
	st = wait_job(a, 30000);
	is(st, ACCEL_STATUS_DONE, "the job ends DONE, BUSY clear (0x%x)", st);
	if (vcxl_client_read32(a, 2, ACCEL_REG_JOBS_DONE, &n))
		n = ~0u;
	is(n, 1, "JOBS_DONE 1: the doorbell while BUSY was dropped");
	ok(vcxl_client_read64(a, 2, ACCEL_REG_JOB_LEN, &q) == 0 && q == len,
	   "the JOB_* registers as the guest left them");
	/* a reset mid-job aborts it: no completion */
	is(start_fill(a, len), 0, "a second 1 GiB FILL started");
	is(recv_doorbell(a, 30000), 0, "its doorbell answered");
	is(vcxl_client_reset(a), 0, "DEVICE_RESET while it runs");
	h_sleep_ms(100);
	if (vcxl_client_read32(a, 2, ACCEL_REG_STATUS, &st))
		st = ~0u;
	is(st, 0, "after the reset: STATUS 0, the job aborted");
	if (vcxl_client_read32(a, 2, ACCEL_REG_JOBS_DONE, &n))
		n = ~0u;
	is(n, 0, "JOBS_DONE 0: no completion after the reset");
	vcxl_client_close(a);
	vcxl_client_close(b);
	is(h_stop(&g), 0, "1 GiB server: SIGTERM, exit 0");
	if (tap_failed)
		h_dump_log(&g);
	h_cleanup(&g);
}

/* One REGION_WRITE_MULTI of 200 doorbells, each a 4 MiB FILL into guest RAM
 * (a memfd DMA window): every doorbell runs its job's first step (all of
 * it) inside the write. The entries yield between steps, so device 1's round
 * trips stay short; before, they ran in one piece: 666-1096 ms. */
static void test_write_multi(int argc, char **argv)
{
	const uint64_t len = 4ull << 20, iova = 0x40000000ull;
	const unsigned n = VFIO_USER_MULTI_MAX;
	const char *args[] = {"--devices", "2", NULL};
	struct vfio_user_hdr hh = {.msg_id = 0x7a, .command = VFIO_USER_REGION_WRITE_MULTI};
	struct harness g = {0};
	struct vcxl_client_reply rep;
	char s0[160], s1[160];
	struct vcxl_client *a = NULL, *b = NULL;
	uint64_t cnt = n;
	size_t msz = sizeof(hh) + sizeof(cnt) + n * sizeof(struct vfio_user_wr_multi_entry);
	uint8_t *msg = calloc(1, msz);
	int mfd = memfd_create("guest", MFD_CLOEXEC);
	uint32_t done = 0;
	double w;

	if (!ok(msg && mfd >= 0 && !ftruncate(mfd, (off_t)len) &&
		    h_start(&g, h_server_bin(argc, argv), 0, args) == 0,
		"write-multi: vcxl-server --devices 2 started")) {
		h_cleanup(&g);
		goto out;
	}
	h_dev_sock(&g, 0, s0, sizeof(s0));
	h_dev_sock(&g, 1, s1, sizeof(s1));
	if (h_wait_socket(s1, 5000) || vcxl_client_connect(s0, &a) || vcxl_client_connect(s1, &b) ||
	    vcxl_client_dma_map(a, iova, len, RW, mfd, 0, NULL) ||
	    vcxl_client_write32(a, 2, ACCEL_REG_JOB_OP, ACCEL_OP_FILL) ||
	    vcxl_client_write32(a, 2, ACCEL_REG_JOB_FLAGS, ACCEL_JOBF_DST_HOST) ||
	    vcxl_client_write64(a, 2, ACCEL_REG_JOB_DST, iova) ||
	    vcxl_client_write64(a, 2, ACCEL_REG_JOB_LEN, len) ||
	    vcxl_client_write64(a, 2, ACCEL_REG_JOB_PATTERN, 0x0123456789abcdefull)) {
		ok(0, "write-multi: connect, map 4 MiB of guest RAM, set up the FILL");
		goto stop;
	}
	hh.msg_size = (uint32_t)msz;
	memcpy(msg, &hh, sizeof(hh));
	memcpy(msg + sizeof(hh), &cnt, sizeof(cnt));
	for (unsigned i = 0; i < n; i++) {
		struct vfio_user_wr_multi_entry e = {
		    .offset = ACCEL_REG_DOORBELL, .region = 2, .count = 4};
		uint32_t go = ACCEL_DOORBELL_GO;

		memcpy(e.data, &go, sizeof(go));
		memcpy(msg + sizeof(hh) + sizeof(cnt) + i * sizeof(e), &e, sizeof(e));
	}
	is(vcxl_client_send_bytes(a, msg, msz, NULL, 0), 0,
	   "device 0: one WRITE_MULTI of %u doorbells, each a 4 MiB FILL into guest RAM", n);
	w = h_neighbour_worst_ms(b, 300);
	ok(w >= 0 && w < 200, "device 1 served during device 0's WRITE_MULTI: worst %.1f ms", w);
	ok(vcxl_client_recv_reply(a, &rep, 30000) == 0 && rep.hdr.msg_id == 0x7a &&
	       !(rep.hdr.flags & VFIO_USER_F_ERROR),
	   "the WRITE_MULTI answered without error");
	vcxl_client_reply_free(&rep);
	if (vcxl_client_read32(a, 2, ACCEL_REG_JOBS_DONE, &done))
		done = ~0u;
	is(done, n, "JOBS_DONE %u: every doorbell ran its FILL", n);
stop:
	if (a)
		vcxl_client_close(a);
	if (b)
		vcxl_client_close(b);
	is(h_stop(&g), 0, "write-multi server: SIGTERM, exit 0");
	if (tap_failed)
		h_dump_log(&g);
	h_cleanup(&g);
out:
	if (mfd >= 0)
		close(mfd);
	free(msg);
}

/* The --on-disconnect reset scrub of a 1 GiB --backing region runs in steps:
 * device 1's round trips stay short while device 0's departed tenant's data
 * is zeroed, and the next tenant still reads none of it. */
static void test_slow_scrub(int argc, char **argv)
{
	struct harness g = {0};
	char backing[200], s0[160], s1[160];
	const char *args[] = {"--devices", "2", "--mem-size", "1G", "--backing", backing, NULL};
	const uint64_t len = 1ull << 30;
	struct vcxl_client *a, *b;
	struct vcxl_client_info info;
	uint64_t q = 0, nonzero = 0;
	double w;

	/* tmpfs when there is one: no disk writes, and a hole punched there frees
	 * the pages (about 250 ms per GiB in one piece) */
	snprintf(backing, sizeof(backing), "%s/vcxl-it-scrub-%d",
		 access("/dev/shm", W_OK) == 0 ? "/dev/shm" : "/tmp", (int)getpid());
	if (!ok(h_start(&g, h_server_bin(argc, argv), 0, args) == 0,
		"vcxl-server --devices 2 --mem-size 1G --backing FILE started")) {
		h_cleanup(&g);
		return;
	}
	h_dev_sock(&g, 0, s0, sizeof(s0));
	h_dev_sock(&g, 1, s1, sizeof(s1));
	if (h_wait_socket(s1, 5000) || vcxl_client_connect(s0, &a) || vcxl_client_connect(s1, &b) ||
	    vcxl_client_get_info(a, &info)) {
		ok(0, "slow scrub: connect");
		goto out;
	}
	/* the tenant fills all of its region (the engine, in steps) */
	is(start_fill(a, len), 0, "tenant: a FILL of the whole 1 GiB region");
	is(recv_doorbell(a, 30000), 0, "its doorbell answered");
	is(wait_job(a, 60000), ACCEL_STATUS_DONE, "the fill done");
	is(vcxl_client_region_read(a, info.cxl.region_index, len - 8, &q, 8), 0,
	   "the tenant reads its last bytes back");
	is(q, 0x0123456789abcdefull, "they hold its pattern");
	vcxl_client_close(a); /* gone: the scrub of 1 GiB starts */
	w = h_neighbour_worst_ms(b, 400);
	ok(w >= 0 && w < 200, "device 1 served while device 0's 1 GiB is scrubbed: worst %.1f ms",
	   w);
	if (!ok(vcxl_client_connect(s0, &a) == 0, "the next tenant connects"))
		goto out_b;
	for (uint64_t off = 0; off < len; off += len / 64) {
		q = 1;
		if (vcxl_client_region_read(a, info.cxl.region_index, off, &q, 8) || q)
			nonzero++;
	}
	is(nonzero, 0, "it reads zeros all over the region (64 places)");
	vcxl_client_close(a);
out_b:
	vcxl_client_close(b);
out:
	is(h_stop(&g), 0, "scrub server: SIGTERM, exit 0");
	ok(h_log_count(&g, "reset for the next client failed") == 0, "no scrub failure logged");
	if (tap_failed)
		h_dump_log(&g);
	h_cleanup(&g);
	for (int i = 0; i < 2; i++) {
		char f[220];

		snprintf(f, sizeof(f), "%s.%d", backing, i);
		unlink(f);
	}
}

int main(int argc, char **argv)
{
	struct harness h = {.cli = h_cli_bin(argc, argv)};
	const char *args[] = {"--devices", "2", NULL};
	char s0[160], s1[160];
	int rc = h_start(&h, h_server_bin(argc, argv), 0, args);

	ok(rc == 0, "vcxl-server --devices 2 started");
	if (rc) {
		h_dump_log(&h);
		h_cleanup(&h);
		return done();
	}
	h_dev_sock(&h, 0, s0, sizeof(s0));
	h_dev_sock(&h, 1, s1, sizeof(s1));
	ok(h_wait_socket(s1, 5000) == 0, "both sockets (PATH.0, PATH.1) accept");
	test_two_devices_and_stall(&h);
	test_malformed(&h);
	test_pipelining(&h);
	test_eventfds(&h);
	test_on_disconnect(&h, argc, argv);
	test_neighbour(&h);
	test_slow_job(argc, argv);
	test_write_multi(argc, argv);
	test_slow_scrub(argc, argv);
	is(h_stop(&h), 0, "SIGTERM: exit 0");
	ok(access(s0, F_OK) != 0 && access(s1, F_OK) != 0, "both sockets removed");
	if (tap_failed)
		h_dump_log(&h);
	h_cleanup(&h);
	return done();
}
