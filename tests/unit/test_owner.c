// SPDX-License-Identifier: BSD-3-Clause
/*
 * One owner of a device at a time: the event loop, its control socket and a
 * fake device whose reset blocks for 600 ms on the server's worker thread
 * (a hardware FLR through run_blocking). The device records every call made
 * while its reset runs. Over the real sockets:
 *  - query-status and read-memory on the control socket during the reset:
 *    query-status answers at once from the last description, marked busy;
 *    read-memory waits for the reset and then reads; no device call beside
 *    the reset;
 *  - the client leaves mid-reset with a DMA window and an MSI-X eventfd:
 *    both are taken from the device only after the reset returned;
 *  - a DMA_MAP whose pinning blocks as long (hardware pins the whole window)
 *    runs on the worker thread: the operator is answered meanwhile.
 */
#include <errno.h>
#include <json-c/json.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

#include "tap.h"
#include "unit/fake_dev.h"
#include "vcxl/client.h"
#include "../../src/server/control.h"

#define RESET_MS 600 /* margin for a loaded machine: query-status must come back within it */

static struct fake_dev dev;
static atomic_int in_reset, overlaps;
static char overlap_what[64];

/* A device call: counted when the reset runs beside it. */
static void touch(const char *what)
{
	if (atomic_load(&in_reset) && atomic_fetch_add(&overlaps, 1) == 0)
		snprintf(overlap_what, sizeof(overlap_what), "%s", what);
}

static int slow_fn(void *arg)
{
	struct timespec ts = {0, RESET_MS * 1000000L};

	(void)arg;
	atomic_store(&in_reset, 1);
	nanosleep(&ts, NULL);
	atomic_store(&in_reset, 0);
	return 0;
}

static int o_reset(void *d)
{
	touch("reset");
	dev.resets++;
	if (dev.dma && dev.dma->run_blocking)
		return dev.dma->run_blocking(dev.dma_opaque, slow_fn, NULL);
	return slow_fn(NULL);
}

static void o_get_info(void *d, struct vcxl_vdev_info *i)
{
	touch("get_info");
	fake_get_info(d, i);
}
static int o_region_info(void *d, uint32_t n, struct vcxl_vregion_info *ri)
{
	touch("region_info");
	return fake_region_info(d, n, ri);
}
static int o_region_read(void *d, uint32_t n, uint64_t off, void *buf, size_t len)
{
	touch("region_read");
	return fake_region_read(d, n, off, buf, len);
}
static int o_region_write(void *d, uint32_t n, uint64_t off, const void *buf, size_t len)
{
	touch("region_write");
	return fake_region_write(d, n, off, buf, len);
}
static int o_irq_info(void *d, uint32_t n, uint32_t *count, uint32_t *flags)
{
	touch("irq_info");
	return fake_irq_info(d, n, count, flags);
}
static void o_set_irq_handler(void *d, vcxl_irq_fn fn, void *opaque)
{
	touch("set_irq_handler");
	fake_set_irq_handler(d, fn, opaque);
}
static int o_set_irq_eventfd(void *d, uint32_t n, uint32_t v, int fd)
{
	touch("set_irq_eventfd");
	return fake_set_irq_eventfd(d, n, v, fd);
}
static atomic_int slow_pin; /* the next dma_map pins for RESET_MS, as hardware's does */

static int o_dma_map(void *d, uint64_t iova, uint64_t size, void *vaddr, bool write)
{
	touch("dma_map");
	if (atomic_exchange(&slow_pin, 0) && dev.dma && dev.dma->run_blocking)
		dev.dma->run_blocking(dev.dma_opaque, slow_fn, NULL);
	return fake_dma_map(d, iova, size, vaddr, write);
}
static int o_dma_unmap(void *d, uint64_t iova, uint64_t size)
{
	touch("dma_unmap");
	return fake_dma_unmap(d, iova, size);
}
static void o_set_dma(void *d, const struct vcxl_dma_ops *ops, void *opaque)
{
	touch("set_dma");
	fake_set_dma(d, ops, opaque);
}
static int o_client_gone(void *d)
{
	touch("client_gone");
	return fake_client_gone(d);
}
static int o_poll(void *d)
{
	touch("poll");
	return -1;
}

static const struct vcxl_dev_ops o_ops = {
    .get_info = o_get_info,
    .region_info = o_region_info,
    .region_read = o_region_read,
    .region_write = o_region_write,
    .irq_info = o_irq_info,
    .set_irq_handler = o_set_irq_handler,
    .set_irq_eventfd = o_set_irq_eventfd,
    .dma_map = o_dma_map,
    .dma_unmap = o_dma_unmap,
    .set_dma = o_set_dma,
    .reset = o_reset,
    .client_gone = o_client_gone,
    .poll = o_poll,
};

/* What main.c's describe and reader do: read through the device. */
static void describe(void *opaque, unsigned i, bool admin, struct json_object *d)
{
	uint32_t v = 0;

	o_region_read(opaque, VFIO_PCI_CONFIG_REGION_INDEX, 0, &v, 4);
	json_object_object_add(d, "vendor", json_object_new_int((int)(v & 0xffff)));
}

static int reader(void *opaque, unsigned i, uint64_t off, void *buf, size_t len)
{
	return o_region_read(opaque, 9, off, buf, len);
}

static struct vcxl_loop *loop;
static struct vcxl_control *ctl;

static void *loop_main(void *arg)
{
	(void)arg;
	vcxl_loop_run(loop);
	return NULL;
}

static double ms_since(const struct timespec *t0)
{
	struct timespec t;

	clock_gettime(CLOCK_MONOTONIC, &t);
	return (double)(t.tv_sec - t0->tv_sec) * 1e3 + (double)(t.tv_nsec - t0->tv_nsec) / 1e6;
}

static int ctl_connect(const char *path)
{
	struct sockaddr_un a = {.sun_family = AF_UNIX};
	int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);

	snprintf(a.sun_path, sizeof(a.sun_path), "%s", path);
	if (fd >= 0 && connect(fd, (struct sockaddr *)&a, sizeof(a))) {
		close(fd);
		return -1;
	}
	return fd;
}

/* One reply line (parsed), or NULL after timeout_ms. */
static struct json_object *ctl_reply(int fd, int timeout_ms)
{
	static char buf[16384];
	static size_t have;
	char *nl;

	while (!(nl = memchr(buf, '\n', have))) {
		struct pollfd p = {.fd = fd, .events = POLLIN};
		ssize_t n;

		if (poll(&p, 1, timeout_ms) <= 0)
			return NULL;
		n = read(fd, buf + have, sizeof(buf) - have);
		if (n <= 0)
			return NULL;
		have += (size_t)n;
	}
	*nl = 0;
	struct json_object *j = json_tokener_parse(buf);
	size_t used = (size_t)(nl - buf) + 1;
	memmove(buf, nl + 1, have - used);
	have -= used;
	return j;
}

static struct json_object *jget(struct json_object *o, const char *path)
{
	char key[64];

	while (o && *path) {
		const char *dot = strchr(path, '.');
		size_t n = dot ? (size_t)(dot - path) : strlen(path);
		snprintf(key, sizeof(key), "%.*s", (int)n, path);
		if (json_object_is_type(o, json_type_array))
			o = json_object_array_get_idx(o, (size_t)atoi(key));
		else if (!json_object_object_get_ex(o, key, &o))
			o = NULL;
		path += n + (dot ? 1 : 0);
	}
	return o;
}

static void send_reset(struct vcxl_client *c, uint16_t id)
{
	struct vfio_user_hdr h = {.msg_id = id, .command = VFIO_USER_DEVICE_RESET, .msg_size = 16};

	vcxl_client_send_bytes(c, &h, sizeof(h), NULL, 0);
}

/* Wait until the reset runs on the worker thread. */
static bool reset_started(void)
{
	for (int i = 0; i < 2000 && !atomic_load(&in_reset); i++)
		usleep(1000);
	return atomic_load(&in_reset);
}

static void test_control_during_reset(const char *dpath, int cfd)
{
	struct vcxl_client *c = NULL;
	struct json_object *j;
	struct timespec t0;
	static const char q2[] = "{\"execute\": \"query-status\"}\n"
				 "{\"execute\": \"read-memory\", \"arguments\": "
				 "{\"device\": 0, \"offset\": 16, \"length\": 4}}\n";
	const uint8_t pat[4] = {0xde, 0xad, 0xbe, 0xef};

	setup_ok(pwrite(dev.r9_fd, pat, 4, 16) != 4);
	if (!ok(vcxl_client_connect(dpath, &c) == 0, "client connected and negotiated"))
		return;
	ok(write(cfd, "{\"execute\": \"query-status\"}\n", 28) == 28, "query-status before");
	j = ctl_reply(cfd, 5000);
	ok(j && json_object_get_boolean(jget(j, "return.devices.0.busy")) == false &&
	       json_object_get_int(jget(j, "return.devices.0.vendor")) == 0x8086,
	   "... answered: not busy, vendor 0x8086 read from the device");
	json_object_put(j);

	atomic_store(&overlaps, 0);
	send_reset(c, 0x61);
	if (!ok(reset_started(), "DEVICE_RESET: the reset runs on the worker thread"))
		goto out;
	clock_gettime(CLOCK_MONOTONIC, &t0);
	ok(write(cfd, q2, sizeof(q2) - 1) == (ssize_t)sizeof(q2) - 1,
	   "query-status and read-memory sent during the reset");
	j = ctl_reply(cfd, 5000);
	double t1 = ms_since(&t0);
	bool resetting = atomic_load(&in_reset);
	ok(j && json_object_get_boolean(jget(j, "return.devices.0.busy")) &&
	       json_object_get_int(jget(j, "return.devices.0.vendor")) == 0x8086,
	   "query-status: busy, with the last description (%s)",
	   j ? json_object_to_json_string(jget(j, "return.devices.0")) : "no reply");
	ok(resetting && t1 < RESET_MS, "... answered while the reset still ran (%.0f ms)", t1);
	json_object_put(j);
	j = ctl_reply(cfd, 5000);
	double t2 = ms_since(&t0);
	const char *data = j ? json_object_get_string(jget(j, "return.data")) : NULL;
	ok(data && !strcmp(data, "deadbeef"), "read-memory: the bytes (%s)",
	   j ? json_object_to_json_string(j) : "no reply");
	ok(!atomic_load(&in_reset) && t2 > t1, "... after the reset returned (%.0f ms)", t2);
	json_object_put(j);
	is(atomic_load(&overlaps), 0, "no device call beside the reset (first: %s)",
	   overlap_what[0] ? overlap_what : "none");
	struct vcxl_client_reply rep;
	ok(vcxl_client_recv_reply(c, &rep, 5000) == 0 && rep.hdr.msg_id == 0x61,
	   "the reset's reply");
	vcxl_client_reply_free(&rep);
	ok(write(cfd, "{\"execute\": \"query-status\"}\n", 28) == 28, "query-status after");
	j = ctl_reply(cfd, 5000);
	ok(j && !json_object_get_boolean(jget(j, "return.devices.0.busy")), "... not busy");
	json_object_put(j);
out:
	vcxl_client_close(c);
}

static void test_disconnect_during_reset(const char *dpath, int cfd)
{
	struct vcxl_client *c = NULL;
	const uint32_t rw = VFIO_USER_F_DMA_REGION_READ | VFIO_USER_F_DMA_REGION_WRITE;
	int mfd = memfd_create("guest", MFD_CLOEXEC), efd = eventfd(0, EFD_CLOEXEC);
	unsigned unmaps, gone;

	setup_ok(ftruncate(mfd, 0x10000));
	/* the previous client's departure is done once the listener takes us */
	if (!ok(vcxl_client_connect(dpath, &c) == 0, "second client connected"))
		return;
	unmaps = dev.iommu_unmaps;
	gone = dev.gone;
	is(vcxl_client_dma_map(c, 0x100000, 0x10000, rw, mfd, 0, NULL), 0,
	   "DMA_MAP with an fd (mapped for the device)");
	is(vcxl_client_set_irqs(c, VFIO_PCI_MSIX_IRQ_INDEX,
				VFIO_IRQ_SET_DATA_EVENTFD | VFIO_IRQ_SET_ACTION_TRIGGER, 1, 1, &efd,
				1, NULL),
	   0, "SET_IRQS: an eventfd on MSI-X vector 1");
	atomic_store(&overlaps, 0);
	overlap_what[0] = 0;
	send_reset(c, 0x62);
	ok(reset_started(), "DEVICE_RESET running");
	vcxl_client_close(c); /* gone mid-reset */
	for (int i = 0; i < 3000 && dev.gone == gone; i++)
		usleep(1000);
	is(atomic_load(&overlaps), 0,
	   "the client left mid-reset: no device call beside the reset (first: %s)",
	   overlap_what[0] ? overlap_what : "none");
	ok(dev.iommu_unmaps == unmaps + 1 && dev.irq_fd_vec1 == -1 && dev.gone == gone + 1,
	   "after it: the window unmapped (%u), the eventfd withdrawn (%d), the device readied",
	   dev.iommu_unmaps - unmaps, dev.irq_fd_vec1);
	close(mfd);
	close(efd);
	(void)cfd;
}

struct pin_job {
	struct vcxl_client *c;
	int mfd, rc;
};

static void *pin_thread(void *arg)
{
	struct pin_job *j = arg;

	j->rc = vcxl_client_dma_map(j->c, 0x200000, 0x10000,
				    VFIO_USER_F_DMA_REGION_READ | VFIO_USER_F_DMA_REGION_WRITE,
				    j->mfd, 0, NULL);
	return NULL;
}

/* A DMA_MAP whose pinning takes RESET_MS (hardware pins the whole window):
 * the pinning runs on the worker thread; the loop answers the operator
 * meanwhile, and nothing else touches the device. */
static void test_pin_off_loop(const char *dpath, int cfd)
{
	struct pin_job j = {.mfd = memfd_create("guest", MFD_CLOEXEC), .rc = 1};
	struct json_object *r;
	struct timespec t0;
	pthread_t th;

	setup_ok(ftruncate(j.mfd, 0x10000));
	if (!ok(vcxl_client_connect(dpath, &j.c) == 0, "third client connected"))
		return;
	atomic_store(&overlaps, 0);
	overlap_what[0] = 0;
	atomic_store(&slow_pin, 1);
	pthread_create(&th, NULL, pin_thread, &j);
	if (ok(reset_started(), "DMA_MAP: the window is being pinned")) {
		clock_gettime(CLOCK_MONOTONIC, &t0);
		ok(write(cfd, "{\"execute\": \"query-status\"}\n", 28) == 28,
		   "query-status sent while it pins");
		r = ctl_reply(cfd, 5000);
		double t = ms_since(&t0);
		bool pinning = atomic_load(&in_reset);
		ok(r && json_object_get_boolean(jget(r, "return.devices.0.busy")),
		   "... answered: the device is busy");
		ok(pinning && t < RESET_MS, "... while the pinning still ran (%.0f ms)", t);
		json_object_put(r);
	}
	pthread_join(th, NULL);
	is(j.rc, 0, "DMA_MAP's reply once pinned");
	is(atomic_load(&overlaps), 0, "no device call beside the pinning (first: %s)",
	   overlap_what[0] ? overlap_what : "none");
	vcxl_client_close(j.c);
	close(j.mfd);
}

int main(void)
{
	char dir[] = "/tmp/vcxl-owner-XXXXXX", dpath[64], cpath[64];
	sigset_t set;
	pthread_t th;

	sigemptyset(&set);
	sigaddset(&set, SIGTERM);
	sigaddset(&set, SIGINT);
	sigaddset(&set, SIGUSR1);
	pthread_sigmask(SIG_BLOCK, &set, NULL);
	signal(SIGPIPE, SIG_IGN);
	setup_ok(!mkdtemp(dir));
	snprintf(dpath, sizeof(dpath), "%s/dev", dir);
	snprintf(cpath, sizeof(cpath), "%s/ctl", dir);
	setup_ok(fake_dev_init(&dev));
	setup_ok(vcxl_loop_create(&loop));
	setup_ok(
	    vcxl_control_create(loop, cpath, VCXL_CONTROL_MODE, (gid_t)-1, describe, &dev, &ctl));
	vcxl_control_set_reader(ctl, reader);
	setup_ok(vcxl_loop_add_device(loop, dpath, &o_ops, &dev, NULL));
	pthread_create(&th, NULL, loop_main, NULL);
	int cfd = ctl_connect(cpath);
	if (ok(cfd >= 0, "control socket connected")) {
		test_control_during_reset(dpath, cfd);
		test_disconnect_during_reset(dpath, cfd);
		test_pin_off_loop(dpath, cfd);
		close(cfd);
	}
	kill(getpid(), SIGTERM);
	pthread_join(th, NULL);
	vcxl_control_destroy(ctl);
	vcxl_loop_destroy(loop);
	fake_dev_fini(&dev);
	rmdir(dir);
	return done();
}
