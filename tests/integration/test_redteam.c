/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Three attacks of issue 21's red team (none of items 1-13), each by a
 * hostile client of device 0 with the real socket and the fds it holds,
 * device 1's client the bystander, the server's /proc/PID/fd the oracle:
 *
 * 1. fds parked in requests queued behind a DMA wait. The device DMAs into
 *    an fd-less window (a DMA_WRITE request to the client), the client does
 *    not answer and sends instead 250 small requests carrying 16 fds each.
 *    The server queues them until the DMA ends (5 s, or 256 queued): with
 *    RLIMIT_NOFILE 1024 it ran out of fds, and device 1's DMA_MAP lost its
 *    fd. Fixed: queued requests hold at most VCXL_SRV_MAX_QUEUED_FDS.
 * 2. fds on messages nobody asked for: replies to no request, commands
 *    before VERSION, unknown commands, a message whose two halves each bring
 *    a set. Holds: every fd is closed, the server's fd count is unchanged.
 * 3. DMA windows the device may not use that way: a read-only window the
 *    engine writes, a write-only one it reads, an O_RDONLY fd and a memfd
 *    sealed F_SEAL_FUTURE_WRITE offered read-write. Holds: the job ends in
 *    ERROR with the window's bytes unchanged, the maps are refused.
 */
#include <dirent.h>
#include <linux/vfio.h>
#include <sys/eventfd.h>
#include <sys/mman.h>
#include <sys/resource.h>

#include "tap.h"
#include "integration/harness.h"
#include "model/model.h"
#include "vcxl/vfio_user.h"

#define RW	   (VFIO_USER_F_DMA_REGION_READ | VFIO_USER_F_DMA_REGION_WRITE)
#define FD_LIMIT   1024
#define FLOOD_MSGS 250

/* The fd count settles once the server has handled what it was sent. */
static int settle_fds(pid_t pid, int want)
{
	return h_settle_fds(pid, want, 5000);
}

static bool server_alive(const struct harness *h)
{
	return h->pid > 0 && kill(h->pid, 0) == 0 && waitpid(h->pid, NULL, WNOHANG) == 0;
}

static void limit_fds(void)
{
	struct rlimit r = {FD_LIMIT, FD_LIMIT};

	setrlimit(RLIMIT_NOFILE, &r);
}

static int start(struct harness *h, const char *bin)
{
	const char *argv[] = {bin, "--socket",	 h->sock, "--log-level",   "info", "--devices",
			      "2", "--mem-size", "512M",  "--region-size", "256M", NULL};
	char first[160];
	int rc = h_prepare(h, bin, "vcxl-rt");

	if (rc)
		return rc;
	rc = h_launch(h, argv, limit_fds, H_READY_MS);
	h_dev_sock(h, 1, first, sizeof(first));
	return rc ?: h_wait_socket(first, 5000);
}

static bool device_served(struct vcxl_client *c)
{
	uint32_t v = 0;

	return vcxl_client_read32(c, VFIO_PCI_CONFIG_REGION_INDEX, 0, &v) == 0 && v == 0x0d948086;
}

/* A message of cmd with a payload of len bytes, sent as it is with fds. */
static int send_msg(struct vcxl_client *c, uint16_t id, uint16_t cmd, uint32_t flags,
		    const void *payload, size_t len, const int *fds, unsigned nfds)
{
	uint8_t buf[64];
	struct vfio_user_hdr hd = {
	    .msg_id = id, .command = cmd, .msg_size = (uint32_t)(sizeof(hd) + len), .flags = flags};

	if (len > sizeof(buf) - sizeof(hd))
		return -EINVAL;
	memcpy(buf, &hd, sizeof(hd));
	memcpy(buf + sizeof(hd), payload, len);
	return vcxl_client_send_bytes(c, buf, sizeof(hd) + len, fds, nfds);
}

/* Program the job engine; the doorbell is the caller's. */
static void job_setup(struct vcxl_client *c, uint32_t op, uint32_t flags, uint64_t src,
		      uint64_t dst, uint64_t len)
{
	const uint32_t bar = VCXL_MODEL_CTRL_BAR;

	vcxl_client_write32(c, bar, ACCEL_REG_STATUS, ACCEL_STATUS_DONE | ACCEL_STATUS_ERROR);
	vcxl_client_write32(c, bar, ACCEL_REG_JOB_OP, op);
	vcxl_client_write32(c, bar, ACCEL_REG_JOB_FLAGS, flags);
	vcxl_client_write64(c, bar, ACCEL_REG_JOB_SRC, src);
	vcxl_client_write64(c, bar, ACCEL_REG_JOB_DST, dst);
	vcxl_client_write64(c, bar, ACCEL_REG_JOB_LEN, len);
	vcxl_client_write64(c, bar, ACCEL_REG_JOB_PATTERN, 0x0123456789abcdefull);
}

static uint32_t job_run(struct vcxl_client *c)
{
	uint32_t st = 0;

	vcxl_client_write32(c, VCXL_MODEL_CTRL_BAR, ACCEL_REG_DOORBELL, ACCEL_DOORBELL_GO);
	if (vcxl_client_read32(c, VCXL_MODEL_CTRL_BAR, ACCEL_REG_STATUS, &st))
		return ~0u;
	return st;
}

/* ---- 1: fds parked behind a DMA wait ---------------------------------- */

static void test_queued_fds(struct harness *h, struct vcxl_client *c0, struct vcxl_client *c1)
{
	struct vfio_user_region_access a = {
	    .offset = ACCEL_REG_DOORBELL, .region = VCXL_MODEL_CTRL_BAR, .count = 4};
	struct vfio_irq_info ii = {.argsz = sizeof(ii), .index = VFIO_PCI_MSIX_IRQ_INDEX};
	uint8_t door[sizeof(a) + 4];
	const uint32_t go = ACCEL_DOORBELL_GO;
	int efd = eventfd(0, EFD_CLOEXEC), fds[VCXL_SRV_MAX_MSG_FDS];
	int base, peak = 0, sent = 0, mfd, rc;

	for (unsigned i = 0; i < VCXL_SRV_MAX_MSG_FDS; i++)
		fds[i] = efd;
	base = settle_fds(h->pid, -1);
	is(vcxl_client_dma_map(c0, 0x100000, 0x1000, RW, -1, 0, NULL), 0,
	   "queued fds: an fd-less DMA window (the device DMAs by messages)");
	job_setup(c0, ACCEL_OP_FILL, ACCEL_JOBF_DST_HOST, 0, 0x100000, 0x1000);
	memcpy(door, &a, sizeof(a));
	memcpy(door + sizeof(a), &go, sizeof(go));
	/* the doorbell: the engine's first step sends DMA_WRITE and waits for it */
	ok(send_msg(c0, 0x7000, VFIO_USER_REGION_WRITE, 0, door, sizeof(door), NULL, 0) == 0,
	   "queued fds: doorbell of a FILL into the window; its DMA_WRITE is never answered");
	h_sleep_ms(100);
	for (int i = 0; i < FLOOD_MSGS; i++) {
		if (send_msg(c0, (uint16_t)(0x7100 + i), VFIO_USER_DEVICE_GET_IRQ_INFO, 0, &ii,
			     sizeof(ii), fds, VCXL_SRV_MAX_MSG_FDS))
			break;
		sent++;
		if (i % 10 == 9) {
			int n = h_pid_fds(h->pid);
			peak = n > peak ? n : peak;
		}
	}
	h_sleep_ms(300);
	rc = h_pid_fds(h->pid);
	peak = rc > peak ? rc : peak;
	is(sent, FLOOD_MSGS, "queued fds: %d requests with %d fds each sent", sent,
	   VCXL_SRV_MAX_MSG_FDS);
	ok(peak <= base + VCXL_SRV_MAX_QUEUED_FDS + 2 * VCXL_SRV_MAX_MSG_FDS + 8,
	   "queued fds: the server held at most %d fds beyond its own %d (peak %d, limit %d)",
	   VCXL_SRV_MAX_QUEUED_FDS + 2 * VCXL_SRV_MAX_MSG_FDS + 8, base, peak, FD_LIMIT);
	/* the neighbour needs an fd of its own meanwhile */
	mfd = memfd_create("rt-guest-ram", MFD_CLOEXEC);
	setup_ok(mfd < 0 || ftruncate(mfd, 1 << 20) != 0);
	is(vcxl_client_dma_map(c1, 0x100000, 1 << 20, RW, mfd, 0, NULL), 0,
	   "queued fds: device 1's DMA_MAP with an fd succeeds meanwhile");
	ok(device_served(c1), "queued fds: device 1 is served");
	vcxl_client_dma_unmap(c1, 0x100000, 1 << 20, 0);
	close(mfd);
	close(efd);
	ok(server_alive(h), "queued fds: the server lives");
}

/* ---- 2: fds on messages nobody asked for ------------------------------- */

static int drain_replies(struct vcxl_client *c, int want)
{
	struct vcxl_client_reply rep;
	int got = 0;

	while (got < want && vcxl_client_recv_reply(c, &rep, 5000) == 0) {
		for (unsigned i = 0; i < rep.nfds; i++)
			close(rep.fds[i]);
		vcxl_client_reply_free(&rep);
		got++;
	}
	return got;
}

static void test_stray_fds(struct harness *h, const char *sock)
{
	struct vfio_irq_info ii = {.argsz = sizeof(ii), .index = VFIO_PCI_MSIX_IRQ_INDEX};
	struct vfio_user_region_access ra = {.offset = 0, .region = 7, .count = 4};
	struct vfio_user_dma_rw rw = {.addr = 0x100000, .count = 0};
	int efd = eventfd(0, EFD_CLOEXEC), fds[VCXL_SRV_MAX_MSG_FDS], base, got;
	struct vcxl_client *c = NULL;
	uint8_t half[sizeof(struct vfio_user_hdr) + 8];

	for (unsigned i = 0; i < VCXL_SRV_MAX_MSG_FDS; i++)
		fds[i] = efd;
	base = settle_fds(h->pid, -1);
	/* before VERSION: each refused */
	if (!ok(vcxl_client_connect_raw(sock, &c) == 0, "stray fds: raw connect"))
		return;
	for (int i = 0; i < 100; i++)
		send_msg(c, (uint16_t)i, VFIO_USER_DEVICE_GET_IRQ_INFO, 0, &ii, sizeof(ii), fds,
			 VCXL_SRV_MAX_MSG_FDS);
	is(drain_replies(c, 100), 100,
	   "stray fds: 100 commands before VERSION, 16 fds each: "
	   "100 error replies");
	is(vcxl_client_negotiate(c, NULL), 0, "stray fds: VERSION");
	/* replies to no request: no answer, fds closed */
	for (int i = 0; i < 100; i++)
		send_msg(c, (uint16_t)(0x4000 + i), VFIO_USER_DMA_WRITE, VFIO_USER_F_TYPE_REPLY,
			 &rw, sizeof(rw), fds, VCXL_SRV_MAX_MSG_FDS);
	/* unknown commands */
	for (int i = 0; i < 100; i++)
		send_msg(c, (uint16_t)(0x5000 + i), 0x7f, 0, &ii, sizeof(ii), fds,
			 VCXL_SRV_MAX_MSG_FDS);
	got = drain_replies(c, 100);
	is(got, 100,
	   "stray fds: 100 unknown commands answered (and no answer to 100 replies "
	   "to nothing)");
	/* one REGION_READ in two halves, each half with its own 16 fds */
	for (int i = 0; i < 100; i++) {
		struct vfio_user_hdr hd = {.msg_id = (uint16_t)(0x6000 + i),
					   .command = VFIO_USER_REGION_READ,
					   .msg_size = (uint32_t)(sizeof(hd) + sizeof(ra))};

		memcpy(half, &hd, sizeof(hd));
		memcpy(half + sizeof(hd), &ra, 8);
		vcxl_client_send_bytes(c, half, sizeof(half), fds, VCXL_SRV_MAX_MSG_FDS);
		h_sleep_ms(1);
		vcxl_client_send_bytes(c, (uint8_t *)&ra + 8, sizeof(ra) - 8, fds,
				       VCXL_SRV_MAX_MSG_FDS);
	}
	is(drain_replies(c, 100), 100,
	   "stray fds: 100 REGION_READs in two halves, 16 fds each "
	   "half: 100 replies");
	ok(device_served(c), "stray fds: the connection still serves");
	is(settle_fds(h->pid, base + 1), base + 1,
	   "stray fds: 8,000 fds sent, server fds %d before, %d after (its client socket)", base,
	   h_pid_fds(h->pid) - 1);
	vcxl_client_close(c);
	close(efd);
	is(settle_fds(h->pid, base), base, "stray fds: back to %d once the client left", base);
}

/* ---- 3: DMA windows the device may not use that way -------------------- */

static void test_window_perms(struct harness *h, struct vcxl_client *c)
{
	int mfd = memfd_create("rt-window", MFD_CLOEXEC | MFD_ALLOW_SEALING), ro, sealed, base;
	uint8_t *p;
	uint32_t st;
	size_t bad = 0;
	char path[64];

	setup_ok(mfd < 0 || ftruncate(mfd, 0x2000) != 0);
	p = mmap(NULL, 0x2000, PROT_READ | PROT_WRITE, MAP_SHARED, mfd, 0);
	setup_ok(p == MAP_FAILED);
	memset(p, 0x5a, 0x2000);
	base = settle_fds(h->pid, -1);
	is(vcxl_client_dma_map(c, 0x200000, 0x1000, VFIO_USER_F_DMA_REGION_READ, mfd, 0, NULL), 0,
	   "window perms: a read-only window with an fd");
	is(vcxl_client_dma_map(c, 0x300000, 0x1000, VFIO_USER_F_DMA_REGION_WRITE, mfd, 0x1000,
			       NULL),
	   0, "window perms: a write-only window with an fd");
	job_setup(c, ACCEL_OP_FILL, ACCEL_JOBF_DST_HOST, 0, 0x200000, 0x1000);
	st = job_run(c);
	ok(st != ~0u && (st & ACCEL_STATUS_ERROR),
	   "window perms: FILL into the read-only window: "
	   "ERROR (status 0x%x)",
	   st);
	job_setup(c, ACCEL_OP_COPY, ACCEL_JOBF_SRC_HOST | ACCEL_JOBF_DST_HOST, 0x300000, 0x200000,
		  0x1000);
	st = job_run(c);
	ok(st != ~0u && (st & ACCEL_STATUS_ERROR),
	   "window perms: COPY out of the write-only "
	   "window: ERROR (status 0x%x)",
	   st);
	for (size_t i = 0; i < 0x2000; i++)
		bad += p[i] != 0x5a;
	is(bad, 0, "window perms: the window's bytes unchanged");
	/* an fd that cannot be written, offered read-write */
	snprintf(path, sizeof(path), "/proc/self/fd/%d", mfd);
	ro = open(path, O_RDONLY | O_CLOEXEC);
	ok(ro >= 0 && vcxl_client_dma_map(c, 0x400000, 0x1000, RW, ro, 0, NULL) < 0,
	   "window perms: an O_RDONLY fd offered read-write: refused");
	sealed = memfd_create("rt-sealed", MFD_CLOEXEC | MFD_ALLOW_SEALING);
	ok(sealed >= 0 && ftruncate(sealed, 0x1000) == 0 &&
	       fcntl(sealed, F_ADD_SEALS, F_SEAL_FUTURE_WRITE) == 0 &&
	       vcxl_client_dma_map(c, 0x500000, 0x1000, RW, sealed, 0, NULL) < 0,
	   "window perms: a memfd sealed F_SEAL_FUTURE_WRITE offered read-write: refused");
	ok(device_served(c), "window perms: the device is served");
	vcxl_client_dma_unmap(c, 0x200000, 0x1000, 0);
	vcxl_client_dma_unmap(c, 0x300000, 0x1000, 0);
	is(settle_fds(h->pid, base), base, "window perms: server fds back to %d", base);
	ok(server_alive(h), "window perms: the server lives");
	if (ro >= 0)
		close(ro);
	if (sealed >= 0)
		close(sealed);
	munmap(p, 0x2000);
	close(mfd);
}

int main(int argc, char **argv)
{
	struct harness h = {0};
	struct vcxl_client *c0 = NULL, *c1 = NULL;
	char s0[160], s1[160];

	if (!ok(start(&h, h_server_bin(argc, argv)) == 0,
		"server with two devices, RLIMIT_NOFILE %d", FD_LIMIT)) {
		h_dump_log(&h);
		h_cleanup(&h);
		return done();
	}
	h_dev_sock(&h, 0, s0, sizeof(s0));
	h_dev_sock(&h, 1, s1, sizeof(s1));
	is(vcxl_client_connect(s1, &c1), 0, "device 1: a well-behaved client");
	is(vcxl_client_connect(s0, &c0), 0, "device 0: the hostile client");
	if (c0 && c1)
		test_queued_fds(&h, c0, c1);
	vcxl_client_close(c0);
	c0 = NULL;
	if (server_alive(&h))
		test_stray_fds(&h, s0);
	if (server_alive(&h) && vcxl_client_connect(s0, &c0) == 0) {
		test_window_perms(&h, c0);
		vcxl_client_close(c0);
	}
	ok(c1 && device_served(c1), "device 1 is still served after every attack");
	vcxl_client_close(c1);
	is(h_stop(&h), 0, "server exits cleanly");
	if (tap_failed)
		h_dump_log(&h);
	h_cleanup(&h);
	return done();
}
