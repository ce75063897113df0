// SPDX-License-Identifier: BSD-3-Clause
/*
 * vcxl-bench: every figure is a ratio against a baseline measured side by side
 * in the same run, each repeated and reported as a median with its spread.
 * Prints `name value unit ratio-vs-baseline` per measurement and writes all of
 * it as JSON (argv: vcxl-server path, output JSON path, optionally the sections
 * to run). The servers it starts log errors only; VCXL_BENCH_LOG=info (any
 * --log-level) shows more.
 */
#include <errno.h>
#include <fcntl.h>
#include <json-c/json.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <poll.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "ref_dispatch.h"
#include "vcxl/client.h"
#include "vcxl/vfio_user.h"
#include "cxl/cxl_regs.h"
#include "cxl/cxl_spec.h"
#include "model/model.h"
#include "vfio-cxl/vfio_cxl.h"

#define RUNS	9
#define RT_RUNS 41

static json_object *results;
static int cur_runs = RUNS; /* repetitions behind the next report() */
static const char *server_bin;
static char tmpdir[256];

static double now_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec * 1e9 + (double)ts.tv_nsec;
}

static int cmp_dbl(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;
	return x < y ? -1 : x > y;
}

struct stat5 {
	double median, min, max, p25, p75;
};

static struct stat5 stats(double *v, int n)
{
	struct stat5 s;
	qsort(v, (size_t)n, sizeof(*v), cmp_dbl);
	s.median = v[n / 2];
	s.min = v[0];
	s.max = v[n - 1];
	s.p25 = v[n / 4];
	s.p75 = v[(3 * n) / 4];
	return s;
}

static json_object *jstat(struct stat5 s)
{
	json_object *o = json_object_new_object();
	json_object_object_add(o, "median", json_object_new_double(s.median));
	json_object_object_add(o, "min", json_object_new_double(s.min));
	json_object_object_add(o, "max", json_object_new_double(s.max));
	json_object_object_add(o, "p25", json_object_new_double(s.p25));
	json_object_object_add(o, "p75", json_object_new_double(s.p75));
	return o;
}

/* One result line + JSON entry. ratio = value / baseline (lower-is-better
 * units) or as stated by `ratio_desc`. */
static void report(const char *name, struct stat5 v, const char *unit, struct stat5 base,
		   double ratio, const char *ratio_desc, const char *goal, int goal_met)
{
	printf("%-34s %12.3f %-6s %8.3f\n", name, v.median, unit, ratio);
	json_object *o = json_object_new_object();
	json_object_object_add(o, "name", json_object_new_string(name));
	json_object_object_add(o, "value", jstat(v));
	json_object_object_add(o, "unit", json_object_new_string(unit));
	json_object_object_add(o, "baseline", jstat(base));
	json_object_object_add(o, "ratio", json_object_new_double(ratio));
	json_object_object_add(o, "ratio_is", json_object_new_string(ratio_desc));
	json_object_object_add(o, "runs", json_object_new_int(cur_runs));
	if (goal) {
		json_object_object_add(o, "goal", json_object_new_string(goal));
		json_object_object_add(o, "goal_met", json_object_new_boolean(goal_met));
	}
	json_object_array_add(results, o);
	fflush(stdout);
}

static void unpin_self(void)
{
	cpu_set_t all;
	CPU_ZERO(&all);
	for (int i = 0; i < CPU_SETSIZE; i++)
		CPU_SET(i, &all);
	sched_setaffinity(0, sizeof(all), &all);
}

static void pin_cpu(pid_t pid, int cpu)
{
	cpu_set_t set;
	CPU_ZERO(&set);
	CPU_SET(cpu, &set);
	sched_setaffinity(pid, sizeof(set), &set);
}

/* ---- 1. emulated register access ------------------------------------- */

static int cfg_rd32(void *opaque, uint32_t off, uint32_t *val)
{
	return vcxl_vdev_ops.region_read(opaque, VFIO_PCI_CONFIG_REGION_INDEX, off, val, 4);
}

static double bench_vdev_regs(struct vcxl_vdev *v, uint32_t dvsec, uint32_t bar, uint64_t hdm,
			      unsigned decoders, long iters)
{
	uint32_t val = 0;
	unsigned last = decoders - 1;
	double t0 = now_ns();
	for (long i = 0; i < iters; i++) {
		vcxl_vdev_ops.region_read(v, VFIO_PCI_CONFIG_REGION_INDEX, dvsec + CXL_DVSEC_CTRL,
					  &val, 4);
		vcxl_vdev_ops.region_read(v, bar, hdm + CXL_HDM_DEC_CTRL(last), &val, 4);
		val = 0x10000000u;
		vcxl_vdev_ops.region_write(v, bar, hdm + CXL_HDM_DEC_BASE_LO(last), &val, 4);
		vcxl_vdev_ops.region_read(v, VFIO_PCI_CONFIG_REGION_INDEX,
					  dvsec + CXL_DVSEC_RANGE_SIZE_LO(0), &val, 4);
	}
	return (now_ns() - t0) / ((double)iters * 4);
}

static double bench_ref_regs(struct ref_dev *r, uint32_t dvsec, uint64_t hdm, unsigned decoders,
			     long iters)
{
	uint32_t val = 0;
	unsigned last = decoders - 1;
	double t0 = now_ns();
	for (long i = 0; i < iters; i++) {
		ref_cfg_rw(r, dvsec + CXL_DVSEC_CTRL, &val, 4, false);
		ref_mmio_rw(r, hdm + CXL_HDM_DEC_CTRL(last), &val, 4, false);
		val = 0x10000000u;
		ref_mmio_rw(r, hdm + CXL_HDM_DEC_BASE_LO(last), &val, 4, true);
		ref_cfg_rw(r, dvsec + CXL_DVSEC_RANGE_SIZE_LO(0), &val, 4, false);
		__asm__ volatile("" : : "r"(val) : "memory");
	}
	return (now_ns() - t0) / ((double)iters * 4);
}

static void bench_registers(void)
{
	static const unsigned counts[] = {1, 4, 10};
	double ours_med[3] = {0};
	for (int k = 0; k < 3; k++) {
		struct vcxl_model_cfg mc = {.decoders = counts[k]};
		struct vcxl_model *m = NULL;
		struct vcxl_vdev *v = NULL;
		struct vcxl_vdev_cfg vc = {0};
		char err[256] = "";
		if (vcxl_model_create(&mc, &m) ||
		    vcxl_vdev_create(vcxl_model_backend(m), &vc, &v, err, sizeof(err))) {
			fprintf(stderr, "bench: device setup failed: %s\n", err);
			exit(1);
		}
		struct vcxl_vdev_info info;
		vcxl_vdev_ops.get_info(v, &info);
		uint32_t dvsec = 0, dlen = 0;
		vcxl_pcie_find_dvsec(cfg_rd32, v, CXL_VENDOR_ID, CXL_DVSEC_ID_DEVICE, &dvsec,
				     &dlen);
		struct ref_dev *ref = calloc(1, sizeof(*ref));
		ref_dev_init(ref, dvsec, info.cxl.hdm_offset, info.cxl.hdm_count);
		const long iters = 100000;
		double a[RUNS], b[RUNS];
		for (int r = 0; r < RUNS; r++) {
			a[r] = bench_vdev_regs(v, dvsec, info.cxl.hdm_bar, info.cxl.hdm_offset,
					       info.cxl.hdm_count, iters);
			b[r] = bench_ref_regs(ref, dvsec, info.cxl.hdm_offset, info.cxl.hdm_count,
					      iters);
		}
		struct stat5 sa = stats(a, RUNS), sb = stats(b, RUNS);
		ours_med[k] = sa.median;
		char name[64];
		snprintf(name, sizeof(name), "reg_access_%u_decoders", counts[k]);
		double ratio = sa.median / sb.median;
		report(name, sa, "ns", sb, ratio, "vcxl/linked-list (lower is better)",
		       counts[k] == 10 ? "<= 0.2 (5x faster) at 10 decoders" : NULL,
		       counts[k] == 10 ? ratio <= 0.2 : 1);
		ref_dev_fini(ref);
		free(ref);
		vcxl_vdev_destroy(v);
		vcxl_model_destroy(m);
	}
	struct stat5 s10 = {ours_med[2], ours_med[2], ours_med[2], ours_med[2], ours_med[2]};
	struct stat5 s1 = {ours_med[0], ours_med[0], ours_med[0], ours_med[0], ours_med[0]};
	double flat = ours_med[2] / ours_med[0];
	report("reg_access_10_vs_1_decoders", s10, "ns", s1, flat, "10 decoders / 1 decoder",
	       "~1.0 (constant in decoder count), <= 1.25", flat <= 1.25);
}

/* ---- server helpers ------------------------------------------------------ */

static pid_t start_server(const char *sock, const char *extra, unsigned wait_sockets)
{
	pid_t pid = fork();
	if (pid == 0) {
		char *argv[16];
		int n = 0;
		argv[n++] = (char *)server_bin;
		argv[n++] = "--socket";
		argv[n++] = (char *)sock;
		argv[n++] = "--log-level";
		argv[n++] = getenv("VCXL_BENCH_LOG") ? getenv("VCXL_BENCH_LOG") : "error";
		char buf[256];
		if (extra) {
			snprintf(buf, sizeof(buf), "%s", extra);
			for (char *t = strtok(buf, " "); t && n < 15; t = strtok(NULL, " "))
				argv[n++] = t;
		}
		argv[n] = NULL;
		int devnull = open("/dev/null", O_WRONLY);
		if (devnull >= 0)
			dup2(devnull, 1);
		execv(server_bin, argv);
		_exit(127);
	}
	/* wait until the last socket exists */
	char last[300];
	if (wait_sockets > 1)
		snprintf(last, sizeof(last), "%s.%u", sock, wait_sockets - 1);
	else
		snprintf(last, sizeof(last), "%s", sock);
	for (int i = 0; i < 20000; i++) {
		struct stat st;
		if (stat(last, &st) == 0)
			return pid;
		usleep(500);
	}
	fprintf(stderr, "bench: server did not come up\n");
	kill(pid, SIGKILL);
	exit(1);
}

static void stop_server(pid_t pid)
{
	kill(pid, SIGTERM);
	waitpid(pid, NULL, 0);
}

static struct vcxl_client *connect_or_die(const char *sock)
{
	struct vcxl_client *c = NULL;
	for (int i = 0; i < 200; i++) {
		if (vcxl_client_connect(sock, &c) == 0)
			return c;
		usleep(5000);
	}
	fprintf(stderr, "bench: cannot connect to %s\n", sock);
	exit(1);
}

static uint32_t find_dvsec_client(struct vcxl_client *c)
{
	uint8_t cfg[4096];
	if (vcxl_client_region_read(c, VFIO_PCI_CONFIG_REGION_INDEX, 0, cfg, sizeof(cfg)) < 0)
		return 0;
	for (uint32_t off = PCIE_EXT_CAP_START, hops = 0; off && hops < 64; hops++) {
		uint32_t h, h1, h2;
		memcpy(&h, cfg + off, 4);
		memcpy(&h1, cfg + off + PCIE_DVSEC_HEADER1, 4);
		memcpy(&h2, cfg + off + PCIE_DVSEC_HEADER2, 4);
		if (VCXL_FIELD_GET(PCIE_EXT_CAP_ID_MASK, h) == PCIE_EXT_CAP_ID_DVSEC &&
		    VCXL_FIELD_GET(PCIE_DVSEC_HDR1_VENDOR, h1) == CXL_VENDOR_ID &&
		    VCXL_FIELD_GET(PCIE_DVSEC_HDR2_ID, h2) == CXL_DVSEC_ID_DEVICE)
			return off;
		off = (uint32_t)VCXL_FIELD_GET(PCIE_EXT_CAP_NEXT_MASK, h);
		if (off >= 4096 - 12)
			break;
	}
	return 0;
}

/* ---- 2. vfio-user round trip vs raw ping-pong --------------------------- */

/* Raw baseline: same message sizes as REGION_READ/WRITE of 4 bytes. */
static void pingpong_child(int fd)
{
	uint8_t buf[64];
	for (;;) {
		ssize_t n = recv(fd, buf, sizeof(buf), 0);
		if (n <= 0)
			_exit(0);
		size_t reply = (n == 36) ? 32 : 36; /* write req 36 -> 32, read req 32 -> 36 */
		if (send(fd, buf, reply, 0) < 0)
			_exit(0);
	}
}

static double pingpong(int fd, size_t req, size_t rep, long iters)
{
	uint8_t buf[64] = {0};
	double t0 = now_ns();
	for (long i = 0; i < iters; i++) {
		if (send(fd, buf, req, 0) != (ssize_t)req)
			return -1;
		size_t got = 0;
		while (got < rep) {
			ssize_t n = recv(fd, buf + got, rep - got, 0);
			if (n <= 0)
				return -1;
			got += (size_t)n;
		}
	}
	return (now_ns() - t0) / (double)iters / 1000.0;
}

static void bench_roundtrip(void)
{
	char sock[300];
	snprintf(sock, sizeof(sock), "%s/rt.sock", tmpdir);
	pid_t srv = start_server(sock, NULL, 1);
	pin_cpu(srv, 0);
	pin_cpu(0, 0);
	struct vcxl_client *c = connect_or_die(sock);
	uint32_t dvsec = find_dvsec_client(c);
	int sv[2];
	socketpair(AF_UNIX, SOCK_STREAM, 0, sv);
	pid_t pp = fork();
	if (pp == 0) {
		close(sv[0]);
		pin_cpu(0, 0);
		pingpong_child(sv[1]);
	}
	close(sv[1]);
	/* many short interleaved blocks: a load change hits both sides alike */
	const long iters = 3000;
	double rd[RT_RUNS], wr[RT_RUNS], brd[RT_RUNS], bwr[RT_RUNS];
	uint32_t v = 0;
	for (int r = 0; r < RT_RUNS; r++) {
		double t0 = now_ns();
		for (long i = 0; i < iters; i++)
			vcxl_client_read32(c, VFIO_PCI_CONFIG_REGION_INDEX, dvsec + CXL_DVSEC_CTRL,
					   &v);
		rd[r] = (now_ns() - t0) / (double)iters / 1000.0;
		t0 = now_ns();
		for (long i = 0; i < iters; i++)
			vcxl_client_write32(c, VFIO_PCI_CONFIG_REGION_INDEX,
					    dvsec + CXL_DVSEC_CTRL2, 0);
		wr[r] = (now_ns() - t0) / (double)iters / 1000.0;
		brd[r] = pingpong(sv[0], 32, 36, iters);
		bwr[r] = pingpong(sv[0], 36, 32, iters);
	}
	close(sv[0]);
	waitpid(pp, NULL, 0);
	vcxl_client_close(c);
	stop_server(srv);
	cur_runs = RT_RUNS;
	struct stat5 a = stats(rd, RT_RUNS), b = stats(brd, RT_RUNS);
	report("region_read_4B_roundtrip", a, "us", b, a.median / b.median,
	       "vfio-user/raw ping-pong, same core", "<= 1.1", a.median / b.median <= 1.1);
	a = stats(wr, RT_RUNS);
	b = stats(bwr, RT_RUNS);
	report("region_write_4B_roundtrip", a, "us", b, a.median / b.median,
	       "vfio-user/raw ping-pong, same core", "<= 1.1", a.median / b.median <= 1.1);
	cur_runs = RUNS;
	unpin_self();
}

/* One DEVICE_FEATURE of flags with its data; 0 or -1 (an error reply, or a reply of
 * another length than rlen) */
static int feature(struct vcxl_client *c, uint32_t flags, const void *data, size_t len, size_t rlen)
{
	uint8_t q[sizeof(struct vfio_device_feature) + 64];
	struct vfio_device_feature f = {.argsz = (uint32_t)(sizeof(f) + rlen), .flags = flags};
	struct vcxl_client_reply rep;
	int rc;

	if (len > sizeof(q) - sizeof(f))
		return -1;
	memcpy(q, &f, sizeof(f));
	memcpy(q + sizeof(f), data, len);
	rc = vcxl_client_raw(c, VFIO_USER_DEVICE_FEATURE, 0, q, sizeof(f) + len, NULL, 0, &rep);
	if (rc)
		return -1;
	rc = (rep.hdr.flags & VFIO_USER_F_ERROR) || rep.len != sizeof(f) + rlen ? -1 : 0;
	vcxl_client_reply_free(&rep);
	return rc;
}

/* One DMA_LOGGING_REPORT; 0 or -1 */
static int dirty_report(struct vcxl_client *c, uint64_t iova, uint64_t len, size_t bitmap)
{
	struct vfio_user_dma_logging_report r = {iova, len, 4096};

	return feature(c, VFIO_DEVICE_FEATURE_GET | VFIO_DEVICE_FEATURE_DMA_LOGGING_REPORT, &r,
		       sizeof(r), sizeof(r) + bitmap);
}

/* The DMA_LOGGING_REPORT QEMU sends for a 512 MiB RAM section at every dirty sync of a
 * migration (8 of them in the downtime's last sync, section sizes vary), against a
 * 4-byte read: what the server adds to a report's round trip (a 16 KiB bitmap). */
static void bench_dirty_report(void)
{
	const uint64_t iova = 1ull << 32, len = 512ull << 20;
	char sock[300];
	snprintf(sock, sizeof(sock), "%s/dr.sock", tmpdir);
	pid_t srv = start_server(sock, NULL, 1);
	pin_cpu(srv, 0);
	pin_cpu(0, 0);
	struct vcxl_client *c = connect_or_die(sock);
	uint32_t dvsec = find_dvsec_client(c);
	int mfd = memfd_create("bench-guest", MFD_CLOEXEC);
	struct {
		struct vfio_user_dma_logging_control ctl;
		struct vfio_user_dma_logging_range r;
	} st = {{.page_size = 4096, .num_ranges = 1}, {iova, len}};
	if (mfd < 0 || ftruncate(mfd, (off_t)len) ||
	    vcxl_client_dma_map(c, iova, len,
				VFIO_USER_F_DMA_REGION_READ | VFIO_USER_F_DMA_REGION_WRITE, mfd, 0,
				NULL) ||
	    feature(c, VFIO_DEVICE_FEATURE_SET | VFIO_DEVICE_FEATURE_DMA_LOGGING_START, &st,
		    sizeof(st), sizeof(st))) {
		fprintf(stderr, "bench: dirty logging setup failed\n");
		stop_server(srv);
		exit(1);
	}
	const long iters = 500;
	double rpt[RT_RUNS], rd[RT_RUNS];
	uint32_t v = 0;
	for (int r = 0; r < RT_RUNS; r++) {
		double t0 = now_ns();
		for (long i = 0; i < iters; i++)
			if (dirty_report(c, iova, len, len / 4096 / 8)) {
				fprintf(stderr, "bench: DMA_LOGGING_REPORT failed\n");
				stop_server(srv);
				exit(1);
			}
		rpt[r] = (now_ns() - t0) / (double)iters / 1000.0;
		t0 = now_ns();
		for (long i = 0; i < iters; i++)
			vcxl_client_read32(c, VFIO_PCI_CONFIG_REGION_INDEX, dvsec + CXL_DVSEC_CTRL,
					   &v);
		rd[r] = (now_ns() - t0) / (double)iters / 1000.0;
	}
	vcxl_client_close(c);
	close(mfd);
	stop_server(srv);
	cur_runs = RT_RUNS;
	struct stat5 a = stats(rpt, RT_RUNS), b = stats(rd, RT_RUNS);
	report("dirty_report_512M_roundtrip", a, "us", b, a.median / b.median,
	       "REPORT of 512 MiB (16 KiB bitmap) / 4-byte read, same core", NULL, 1);
	cur_runs = RUNS;
	unpin_self();
}

/* One MIG_DEVICE_STATE arc to state; 0 or -1 */
static int mig_state(struct vcxl_client *c, uint32_t state)
{
	struct vfio_device_feature_mig_state ms = {.device_state = state};

	return feature(c, VFIO_DEVICE_FEATURE_SET | VFIO_DEVICE_FEATURE_MIG_DEVICE_STATE, &ms,
		       sizeof(ms), sizeof(ms));
}

/* One MIG_DATA_READ of up to cap bytes into buf (or a MIG_DATA_WRITE of len bytes of
 * buf): the bytes moved, or -1 */
static long mig_data(struct vcxl_client *c, bool write, uint8_t *buf, size_t len)
{
	uint8_t *q = malloc(sizeof(struct vfio_user_mig_data) + len);
	struct vfio_user_mig_data d = {.argsz = (uint32_t)(sizeof(d) + len), .size = (uint32_t)len};
	struct vcxl_client_reply rep;
	long n = -1;

	if (!q)
		return -1;
	memcpy(q, &d, sizeof(d));
	if (write)
		memcpy(q + sizeof(d), buf, len);
	if (!vcxl_client_raw(c, write ? VFIO_USER_MIG_DATA_WRITE : VFIO_USER_MIG_DATA_READ, 0, q,
			     sizeof(d) + (write ? len : 0), NULL, 0, &rep)) {
		if (write && !(rep.hdr.flags & VFIO_USER_F_ERROR)) {
			n = (long)len; /* the reply is the header alone */
		} else if (!(rep.hdr.flags & VFIO_USER_F_ERROR) && rep.len >= sizeof(d)) {
			memcpy(&d, rep.data, sizeof(d));
			n = (long)d.size;
			if (d.size <= len && rep.len == sizeof(d) + d.size)
				memcpy(buf, rep.data + sizeof(d), d.size);
			else
				n = -1;
		}
		vcxl_client_reply_free(&rep);
	}
	free(q);
	return n;
}

/* The guest's HDM decoder registers through the client (vcxl_hdm_io) */
struct bench_hdm {
	struct vcxl_client *c;
	unsigned bar;
	uint64_t off;
};

static int bench_hdm_rd(void *opaque, uint32_t off, uint32_t *val)
{
	struct bench_hdm *h = opaque;

	return vcxl_client_read32(h->c, h->bar, h->off + off, val);
}

static int bench_hdm_wr(void *opaque, uint32_t off, uint32_t val)
{
	struct bench_hdm *h = opaque;

	return vcxl_client_write32(h->c, h->bar, h->off + off, val);
}

/* The device as a VM migrates it: its guest decoder 0 committed at gpa over
 * the whole device memory (what QEMU's firmware commit does in e2e-migrate),
 * that window and 512 MiB of guest RAM at 1 MiB mapped for DMA (the CXL
 * window without an fd, as QEMU maps it) and DMA logging started over both.
 * 0 or -1. */
static int mig_setup(struct vcxl_client *c, uint64_t gpa, uint64_t size, int ram_fd, bool log)
{
	struct vcxl_client_info info;
	struct bench_hdm bh = {.c = c};
	struct vcxl_hdm_io io = {.rd = bench_hdm_rd, .wr = bench_hdm_wr, .opaque = &bh};
	struct {
		struct vfio_user_dma_logging_control ctl;
		struct vfio_user_dma_logging_range r[2];
	} st = {{.page_size = 4096, .num_ranges = 2}, {{1ull << 20, 512ull << 20}, {gpa, size}}};
	uint32_t ctrl = 0;

	if (vcxl_client_get_info(c, &info) || !info.has_cxl)
		return -1;
	bh.bar = info.cxl.hdm_bar;
	bh.off = info.cxl.hdm_offset;
	if (vcxl_hdm_io_set_enable(&io, true, NULL) ||
	    bench_hdm_rd(&bh, CXL_HDM_DEC_CTRL(0), &ctrl) ||
	    vcxl_hdm_io_program(&io, 0, gpa, size, 0, vcxl_hdm_commit_ctrl(ctrl, false)))
		return -1;
	for (int i = 0; i < 1000 && !(ctrl & CXL_HDM_DEC_CTRL_COMMITTED); i++) {
		usleep(1000);
		if (bench_hdm_rd(&bh, CXL_HDM_DEC_CTRL(0), &ctrl))
			return -1;
	}
	if (!(ctrl & CXL_HDM_DEC_CTRL_COMMITTED) ||
	    vcxl_client_dma_map(c, 1ull << 20, 512ull << 20,
				VFIO_USER_F_DMA_REGION_READ | VFIO_USER_F_DMA_REGION_WRITE, ram_fd,
				0, NULL) ||
	    vcxl_client_dma_map(c, gpa, size,
				VFIO_USER_F_DMA_REGION_READ | VFIO_USER_F_DMA_REGION_WRITE, -1, 0,
				NULL))
		return -1;
	return !log ? 0
		    : feature(c, VFIO_DEVICE_FEATURE_SET | VFIO_DEVICE_FEATURE_DMA_LOGGING_START,
			      &st, sizeof(st), sizeof(st));
}

/* The server's share of a migration's downtime, arc by arc (what QEMU waits for between
 * the source's stop and the destination's start, docs/migration.md section 10): an idle
 * accelerator of 512 MiB set up as e2e-migrate's VM has it (mig_setup()) whose BAR0 RAM
 * holds 16 KiB of data, saved on one server and loaded into another, each message against
 * a 4-byte read on the same core. */
enum mig_arc {
	SAVE_STOP,
	SAVE_REPORT,
	SAVE_STOP_COPY,
	SAVE_READ,
	LOAD_WRITE,
	LOAD_STOP,
	LOAD_RUN,
	NARC
};

/* A source and a destination server, set up as e2e-migrate's VM has them */
struct mig_pair {
	char sa[300], sb[300];
	pid_t pa, pb;
	struct vcxl_client *a, *b;
	int ram_a, ram_b;
};

#define MIG_GPA	 0x110000000ull
#define MIG_SIZE (512ull << 20)

/* 0, or -1 with the pair half up (mig_pair_stop() it) */
static int mig_pair_start(struct mig_pair *p)
{
	const char *args = "--firmware-committed --decoders 2 --mem-size 512M";
	bool ok;

	snprintf(p->sa, sizeof(p->sa), "%s/ma.sock", tmpdir);
	snprintf(p->sb, sizeof(p->sb), "%s/mb.sock", tmpdir);
	p->pa = start_server(p->sa, args, 1);
	p->pb = start_server(p->sb, args, 1);
	pin_cpu(p->pa, 0);
	pin_cpu(p->pb, 0);
	p->a = connect_or_die(p->sa);
	p->b = connect_or_die(p->sb);
	p->ram_a = memfd_create("bench-guest-a", MFD_CLOEXEC);
	p->ram_b = memfd_create("bench-guest-b", MFD_CLOEXEC);
	ok = p->ram_a >= 0 && p->ram_b >= 0 && !ftruncate(p->ram_a, MIG_SIZE) &&
	     !ftruncate(p->ram_b, MIG_SIZE) &&
	     !mig_setup(p->a, MIG_GPA, MIG_SIZE, p->ram_a, true) &&
	     !mig_setup(p->b, MIG_GPA, MIG_SIZE, p->ram_b, false);
	/* BAR0 RAM with data: what a guest's driver leaves there (4 pages) */
	for (uint32_t off = 0; ok && off < 16384; off += 4)
		ok = !vcxl_client_write32(p->a, VFIO_PCI_BAR0_REGION_INDEX,
					  CXL_COMPONENT_BLOCK_SIZE + off, 0x5a5a0000u | off);
	return ok ? 0 : -1;
}

static void mig_pair_stop(struct mig_pair *p)
{
	vcxl_client_close(p->a);
	vcxl_client_close(p->b);
	stop_server(p->pa);
	stop_server(p->pb);
	if (p->ram_a >= 0)
		close(p->ram_a);
	if (p->ram_b >= 0)
		close(p->ram_b);
}

/* One migration of the pair's device, source to destination, each arc's ns
 * added to t; then both run again. NULL, or what failed. */
static const char *mig_cycle(struct mig_pair *p, uint8_t *buf, size_t cap, double t[NARC])
{
	double t0 = now_ns(), t1, t1r, t2, t3, t4, t5, t6, t7;
	long n;

	if (mig_state(p->a, VFIO_DEVICE_STATE_STOP))
		return "RUNNING -> STOP";
	t1 = now_ns();
	if (dirty_report(p->a, MIG_GPA, MIG_SIZE, MIG_SIZE / 4096 / 8))
		return "the REPORT";
	t1r = now_ns();
	if (mig_state(p->a, VFIO_DEVICE_STATE_STOP_COPY))
		return "STOP -> STOP_COPY";
	t2 = now_ns();
	if ((n = mig_data(p->a, false, buf, cap)) <= 0)
		return "MIG_DATA_READ";
	t3 = now_ns();
	if (mig_data(p->a, false, buf + n, cap - (size_t)n) != 0 ||
	    mig_state(p->a, VFIO_DEVICE_STATE_RUNNING) ||
	    mig_state(p->b, VFIO_DEVICE_STATE_RESUMING))
		return "the source's end or RESUMING";
	t4 = now_ns();
	if (mig_data(p->b, true, buf, (size_t)n) != n)
		return "MIG_DATA_WRITE";
	t5 = now_ns();
	if (mig_state(p->b, VFIO_DEVICE_STATE_STOP))
		return "RESUMING -> STOP";
	t6 = now_ns();
	if (mig_state(p->b, VFIO_DEVICE_STATE_RUNNING))
		return "STOP -> RUNNING";
	t7 = now_ns();
	t[SAVE_STOP] += t1 - t0;
	t[SAVE_REPORT] += t1r - t1;
	t[SAVE_STOP_COPY] += t2 - t1r;
	t[SAVE_READ] += t3 - t2;
	t[LOAD_WRITE] += t5 - t4;
	t[LOAD_STOP] += t6 - t5;
	t[LOAD_RUN] += t7 - t6;
	return NULL;
}

/* The server's share of a migration's downtime, arc by arc (what QEMU waits for between
 * the source's stop and the destination's start, docs/migration.md section 10): an idle
 * accelerator of 512 MiB set up as e2e-migrate's VM has it (mig_setup()) whose BAR0 RAM
 * holds 16 KiB of data, saved on one server and loaded into another, each message against
 * a 4-byte read on the same core; then the first migration of a fresh pair of servers (what
 * a real migration pays: each server process migrates once), against the steady state. */
static void bench_mig_arcs(void)
{
	static const char *const name[NARC] = {
	    "mig_arc_running_to_stop", "mig_report_cxl_512M",  "mig_arc_stop_to_stop_copy",
	    "mig_data_read_state",     "mig_data_write_state", "mig_arc_resuming_to_stop",
	    "mig_arc_stop_to_running"};
	static const char *const what[NARC] = {
	    "source: the device quiesces / 4-byte read",
	    "source: the final sync's DMA_LOGGING_REPORT of the 512 MiB CXL window / 4-byte read",
	    "source: the device state is saved / 4-byte read",
	    "source: the saved state read in one MIG_DATA_READ / 4-byte read",
	    "destination: the state in one MIG_DATA_WRITE (not loaded yet) / 4-byte read",
	    "destination: RESUMING -> STOP, the load and its result / 4-byte read",
	    "destination: the device runs / 4-byte read"};
	const enum mig_arc first[] = {SAVE_STOP_COPY, LOAD_STOP};
	const int iters = 100;
	size_t cap = 1u << 20;
	uint8_t *buf = malloc(cap);
	double t[NARC][RT_RUNS], f[NARC][RUNS], rd[RT_RUNS];
	struct mig_pair p;
	const char *fail = buf ? NULL : "memory";
	uint32_t dvsec, v = 0;

	pin_cpu(0, 0);
	if (!fail && mig_pair_start(&p))
		fail = "the VM's set-up";
	dvsec = fail ? 0 : find_dvsec_client(p.a);
	for (int r = 0; !fail && r < RT_RUNS; r++) {
		double sum[NARC] = {0};
		for (int i = 0; !fail && i < iters; i++)
			fail = mig_cycle(&p, buf, cap, sum);
		for (int k = 0; k < NARC; k++)
			t[k][r] = sum[k] / iters / 1000.0;
		double t0 = now_ns();
		for (int i = 0; i < iters; i++)
			vcxl_client_read32(p.a, VFIO_PCI_CONFIG_REGION_INDEX,
					   dvsec + CXL_DVSEC_CTRL, &v);
		rd[r] = (now_ns() - t0) / iters / 1000.0;
	}
	mig_pair_stop(&p);
	for (int r = 0; !fail && r < RUNS; r++) {
		double one[NARC] = {0};
		if (mig_pair_start(&p))
			fail = "a fresh pair's set-up";
		fail = fail ? fail : mig_cycle(&p, buf, cap, one);
		for (int k = 0; k < NARC; k++)
			f[k][r] = one[k] / 1000.0;
		mig_pair_stop(&p);
	}
	free(buf);
	if (fail) {
		fprintf(stderr, "bench: a migration arc failed (%s)\n", fail);
		exit(1);
	}
	cur_runs = RT_RUNS;
	struct stat5 base = stats(rd, RT_RUNS);
	for (int k = 0; k < NARC; k++) {
		struct stat5 s = stats(t[k], RT_RUNS);
		report(name[k], s, "us", base, s.median / base.median, what[k], NULL, 1);
	}
	for (unsigned k = 0; k < sizeof(first) / sizeof(first[0]); k++) {
		char n[64], d[160];
		struct stat5 s, warm = stats(t[first[k]], RT_RUNS);

		cur_runs = RUNS;
		s = stats(f[first[k]], RUNS);
		snprintf(n, sizeof(n), "%s_first", name[first[k]]);
		snprintf(d, sizeof(d), "%s, a fresh server's first migration / steady state",
			 first[k] == SAVE_STOP_COPY ? "source: the save" : "destination: the load");
		report(n, s, "us", warm, s.median / warm.median, d, NULL, 1);
	}
	cur_runs = RUNS;
	unpin_self();
}

/* ---- 3 + 4. CXL region bandwidth ------------------------------------------ */

static double gbps(size_t bytes, double ns)
{
	return (double)bytes / ns; /* bytes per ns == GB/s */
}

static void bench_region(void)
{
	char sock[300];
	snprintf(sock, sizeof(sock), "%s/bw.sock", tmpdir);
	pid_t srv = start_server(sock, NULL, 1);
	/* client and server on one core, as the round-trip figures */
	pin_cpu(srv, 0);
	pin_cpu(0, 0);
	struct vcxl_client *c = connect_or_die(sock);
	struct vcxl_client_info info;
	struct vcxl_client_region ri;
	if (vcxl_client_get_info(c, &info) || !info.has_cxl ||
	    vcxl_client_region_info(c, info.cxl.region_index, &ri) || ri.fd < 0) {
		fprintf(stderr, "bench: no mappable CXL region\n");
		exit(1);
	}
	const size_t sz = 64u << 20;
	uint8_t *reg = mmap(NULL, sz, PROT_READ | PROT_WRITE, MAP_SHARED, ri.fd, (off_t)ri.offset);
	uint8_t *a = mmap(NULL, sz, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	uint8_t *b = mmap(NULL, sz, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (reg == MAP_FAILED || a == MAP_FAILED || b == MAP_FAILED) {
		fprintf(stderr, "bench: mmap failed\n");
		exit(1);
	}
	memset(a, 0x5a, sz);
	memset(b, 0xa5, sz);
	memset(reg, 0x11, sz); /* fault every page in before timing */
	double w[RUNS], rd[RUNS], base[RUNS];
	for (int r = 0; r < RUNS; r++) {
		/* alternate the order so warm-up and drift favour neither side */
		double t0;
		if (r & 1) {
			t0 = now_ns();
			memcpy(b, a, sz);
			base[r] = gbps(sz, now_ns() - t0);
		}
		t0 = now_ns();
		memcpy(reg, a, sz);
		w[r] = gbps(sz, now_ns() - t0);
		t0 = now_ns();
		memcpy(b, reg, sz);
		rd[r] = gbps(sz, now_ns() - t0);
		if (!(r & 1)) {
			t0 = now_ns();
			memcpy(b, a, sz);
			base[r] = gbps(sz, now_ns() - t0);
		}
	}
	struct stat5 sw = stats(w, RUNS), sr = stats(rd, RUNS), sb = stats(base, RUNS);
	report("region_mmap_seq_write", sw, "GB/s", sb, sw.median / sb.median,
	       "mmap/memcpy (higher is better)", ">= 0.9", sw.median / sb.median >= 0.9);
	report("region_mmap_seq_read", sr, "GB/s", sb, sr.median / sb.median,
	       "mmap/memcpy (higher is better)", ">= 0.9", sr.median / sb.median >= 0.9);

	static const size_t xfers[] = {64u << 10, 1u << 20};
	for (int k = 0; k < 2; k++) {
		size_t x = xfers[k];
		const size_t total = 32u << 20;
		double mr[RUNS], mw[RUNS], mb[RUNS];
		for (int r = 0; r < RUNS; r++) {
			double t0 = now_ns();
			for (size_t off = 0; off < total; off += x)
				vcxl_client_region_read(c, info.cxl.region_index, off, b + off, x);
			mr[r] = gbps(total, now_ns() - t0);
			t0 = now_ns();
			for (size_t off = 0; off < total; off += x)
				vcxl_client_region_write(c, info.cxl.region_index, off, a + off, x);
			mw[r] = gbps(total, now_ns() - t0);
			t0 = now_ns();
			for (size_t off = 0; off < total; off += x)
				memcpy(b + off, a + off, x);
			mb[r] = gbps(total, now_ns() - t0);
		}
		char name[64];
		struct stat5 s1 = stats(mr, RUNS), s2 = stats(mw, RUNS), s3 = stats(mb, RUNS);
		int is1m = x == (1u << 20);
		snprintf(name, sizeof(name), "region_msg_read_%zuK", x >> 10);
		report(name, s1, "GB/s", s3, s1.median / s3.median, "messages/memcpy",
		       is1m ? ">= 0.3 at 1 MiB" : NULL, is1m ? s1.median / s3.median >= 0.3 : 1);
		snprintf(name, sizeof(name), "region_msg_write_%zuK", x >> 10);
		report(name, s2, "GB/s", s3, s2.median / s3.median, "messages/memcpy",
		       is1m ? ">= 0.3 at 1 MiB" : NULL, is1m ? s2.median / s3.median >= 0.3 : 1);
	}
	munmap(reg, sz);
	munmap(a, sz);
	munmap(b, sz);
	close(ri.fd);
	vcxl_client_close(c);
	stop_server(srv);
	unpin_self();
}

/* ---- 5. bring-up time and memory per device ------------------------------ */

static long rss_kib_excluding_shmem(pid_t pid)
{
	char path[64], line[256];
	snprintf(path, sizeof(path), "/proc/%d/status", (int)pid);
	FILE *f = fopen(path, "r");
	long anon = 0, file = 0;
	if (!f)
		return -1;
	while (fgets(line, sizeof(line), f)) {
		sscanf(line, "RssAnon: %ld", &anon);
		sscanf(line, "RssFile: %ld", &file);
	}
	fclose(f);
	return anon + file;
}

static void bench_bringup(void)
{
	static const unsigned counts[] = {1, 8, 64};
	double t1 = 0, rss1 = 0;
	for (int k = 0; k < 3; k++) {
		unsigned n = counts[k];
		double t[RUNS], rss[RUNS];
		for (int r = 0; r < RUNS; r++) {
			char sock[300], extra[64], last[320];
			snprintf(sock, sizeof(sock), "%s/up%u_%d.sock", tmpdir, n, r);
			snprintf(extra, sizeof(extra), "--devices %u", n);
			double t0 = now_ns();
			pid_t srv = start_server(sock, extra, n);
			if (n > 1)
				snprintf(last, sizeof(last), "%s.%u", sock, n - 1);
			else
				snprintf(last, sizeof(last), "%s", sock);
			struct vcxl_client *c = connect_or_die(last);
			t[r] = (now_ns() - t0) / 1e6;
			rss[r] = (double)rss_kib_excluding_shmem(srv) / 1024.0;
			vcxl_client_close(c);
			stop_server(srv);
		}
		struct stat5 st = stats(t, RUNS), sr = stats(rss, RUNS);
		if (n == 1) {
			t1 = st.median;
			rss1 = sr.median;
		}
		struct stat5 b1 = {t1, t1, t1, t1, t1};
		char name[64];
		snprintf(name, sizeof(name), "bringup_%u_devices", n);
		double lin = st.median / (t1 * n);
		report(name, st, "ms", b1, lin, "time / (N x time of 1 device)", "linear (<= 1.0)",
		       lin <= 1.05);
		double per = n > 1 ? (sr.median - rss1) / (double)(n - 1) : sr.median;
		struct stat5 sp = {per, per, per, per, per};
		struct stat5 budget = {1.0, 1.0, 1.0, 1.0, 1.0};
		snprintf(name, sizeof(name), "rss_per_device_%u_devices", n);
		report(name, sp, "MiB", budget, per / 1.0,
		       n > 1 ? "marginal RSS per device / 1 MiB budget"
			     : "process RSS (1 device) / 1 MiB",
		       n > 1 ? "< 1 MiB per device" : NULL, n > 1 ? per < 1.0 : 1);
	}
}

/* ---- 6. malformed-message rejection rate --------------------------------- */

static void bench_malformed(void)
{
	char sock[300];
	snprintf(sock, sizeof(sock), "%s/bad.sock", tmpdir);
	pid_t srv = start_server(sock, NULL, 1);
	pin_cpu(srv, 0);
	pin_cpu(0, 0);
	struct vcxl_client *c = connect_or_die(sock);
	const long iters = 20000;
	double bad[RUNS], good[RUNS];
	uint32_t v;
	for (int r = 0; r < RUNS; r++) {
		struct vfio_user_region_access acc = {.offset = 0, .region = 99, .count = 4};
		double t0 = now_ns();
		for (long i = 0; i < iters; i++) {
			struct vcxl_client_reply rep;
			memset(&rep, 0, sizeof(rep));
			if (vcxl_client_raw(c, VFIO_USER_REGION_READ, 0, &acc, sizeof(acc), NULL, 0,
					    &rep) < 0 &&
			    !(rep.hdr.flags & VFIO_USER_F_ERROR)) {
				fprintf(stderr, "bench: malformed request not answered\n");
				exit(1);
			}
			vcxl_client_reply_free(&rep);
		}
		bad[r] = (double)iters / ((now_ns() - t0) / 1e9);
		t0 = now_ns();
		for (long i = 0; i < iters; i++)
			vcxl_client_read32(c, VFIO_PCI_CONFIG_REGION_INDEX, 0, &v);
		good[r] = (double)iters / ((now_ns() - t0) / 1e9);
	}
	vcxl_client_close(c);
	stop_server(srv);
	unpin_self();
	struct stat5 a = stats(bad, RUNS), b = stats(good, RUNS);
	report("malformed_reject_rate", a, "msg/s", b, a.median / b.median,
	       "rejections/s over valid REGION_READ/s (higher is better)", ">= 0.9",
	       a.median / b.median >= 0.9);
}

/* ---- liveness: a neighbour's worst round trip ------------------------------ */

/* Device 0's client starts a job whose DMA_WRITEs (a window without an fd) it
 * never answers; device 1's client measures its REGION_READ round trips for
 * duration_ms: the worst one in ms. */
static double neighbour_stall_worst_ms(const char *s0, const char *s1, int duration_ms)
{
	struct vcxl_client *a = connect_or_die(s0), *b = connect_or_die(s1);
	uint8_t msg[sizeof(struct vfio_user_hdr) + sizeof(struct vfio_user_region_access) + 4];
	struct vfio_user_hdr hh = {
	    .msg_id = 0x77, .command = VFIO_USER_REGION_WRITE, .msg_size = sizeof(msg)};
	struct vfio_user_region_access ra = {.offset = ACCEL_REG_DOORBELL, .region = 2, .count = 4};
	uint32_t go = ACCEL_DOORBELL_GO, v;
	double worst = 0, start;

	if (vcxl_client_dma_map(a, 0x40000000, 1 << 20,
				VFIO_USER_F_DMA_REGION_READ | VFIO_USER_F_DMA_REGION_WRITE, -1, 0,
				NULL) ||
	    vcxl_client_write32(a, 2, ACCEL_REG_JOB_OP, ACCEL_OP_FILL) ||
	    vcxl_client_write32(a, 2, ACCEL_REG_JOB_FLAGS, ACCEL_JOBF_DST_HOST) ||
	    vcxl_client_write64(a, 2, ACCEL_REG_JOB_DST, 0x40000000) ||
	    vcxl_client_write64(a, 2, ACCEL_REG_JOB_LEN, 3 * 65536)) {
		fprintf(stderr, "bench: neighbour setup failed\n");
		exit(1);
	}
	memcpy(msg, &hh, sizeof(hh));
	memcpy(msg + sizeof(hh), &ra, sizeof(ra));
	memcpy(msg + sizeof(hh) + sizeof(ra), &go, 4);
	vcxl_client_send_bytes(a, msg, sizeof(msg), NULL, 0);
	start = now_ns();
	while ((now_ns() - start) / 1e6 < duration_ms) {
		double t0 = now_ns();
		if (vcxl_client_read32(b, 7, 0, &v)) {
			fprintf(stderr, "bench: neighbour read failed\n");
			exit(1);
		}
		double ms = (now_ns() - t0) / 1e6;
		if (ms > worst)
			worst = ms;
	}
	vcxl_client_close(a);
	vcxl_client_close(b);
	return worst;
}

/* The same round trips with device 0's client idle. */
static double neighbour_idle_worst_ms(const char *s1, int duration_ms)
{
	struct vcxl_client *b = connect_or_die(s1);
	double worst = 0, start = now_ns();
	uint32_t v;

	while ((now_ns() - start) / 1e6 < duration_ms) {
		double t0 = now_ns();
		vcxl_client_read32(b, 7, 0, &v);
		double ms = (now_ns() - t0) / 1e6;
		if (ms > worst)
			worst = ms;
	}
	vcxl_client_close(b);
	return worst;
}

/* Device 0's client starts a FILL of all its device memory (the job runs in
 * steps of a few MiB between the loop's other work); device 1's worst round
 * trip meanwhile. The doorbell's reply is not waited for, so a server that
 * ran the whole job inside the doorbell would be measured too. */
static double neighbour_fill_worst_ms(const char *s0, const char *s1, uint64_t len)
{
	struct vcxl_client *a = connect_or_die(s0), *b = connect_or_die(s1);
	uint8_t msg[sizeof(struct vfio_user_hdr) + sizeof(struct vfio_user_region_access) + 4];
	struct vfio_user_hdr hh = {
	    .msg_id = 0x78, .command = VFIO_USER_REGION_WRITE, .msg_size = sizeof(msg)};
	struct vfio_user_region_access ra = {.offset = ACCEL_REG_DOORBELL, .region = 2, .count = 4};
	uint32_t go = ACCEL_DOORBELL_GO, v;
	double worst = 0, start;

	if (vcxl_client_write32(a, 2, ACCEL_REG_JOB_OP, ACCEL_OP_FILL) ||
	    vcxl_client_write32(a, 2, ACCEL_REG_JOB_FLAGS, 0) ||
	    vcxl_client_write64(a, 2, ACCEL_REG_JOB_DST, 0) ||
	    vcxl_client_write64(a, 2, ACCEL_REG_JOB_LEN, len) ||
	    vcxl_client_write64(a, 2, ACCEL_REG_JOB_PATTERN, 0)) {
		fprintf(stderr, "bench: fill setup failed\n");
		exit(1);
	}
	memcpy(msg, &hh, sizeof(hh));
	memcpy(msg + sizeof(hh), &ra, sizeof(ra));
	memcpy(msg + sizeof(hh) + sizeof(ra), &go, 4);
	vcxl_client_send_bytes(a, msg, sizeof(msg), NULL, 0);
	start = now_ns();
	while ((now_ns() - start) / 1e6 < 1000) {
		double t0 = now_ns();
		vcxl_client_read32(b, 7, 0, &v);
		double ms = (now_ns() - t0) / 1e6;
		if (ms > worst)
			worst = ms;
	}
	vcxl_client_close(a);
	vcxl_client_close(b);
	return worst;
}

/* Device 0's tenant fills its whole 1 GiB --backing region (the engine) and
 * leaves: the --on-disconnect reset scrub zeroes it while device 1's client
 * measures its round trips for 1 s: the worst one. */
static double neighbour_scrub_worst_ms(const char *s0, const char *s1, uint64_t len)
{
	struct vcxl_client *a = connect_or_die(s0), *b = connect_or_die(s1);
	double worst = 0, start;
	uint32_t st = ACCEL_STATUS_BUSY, v;

	if (vcxl_client_write32(a, 2, ACCEL_REG_JOB_OP, ACCEL_OP_FILL) ||
	    vcxl_client_write32(a, 2, ACCEL_REG_JOB_FLAGS, 0) ||
	    vcxl_client_write64(a, 2, ACCEL_REG_JOB_DST, 0) ||
	    vcxl_client_write64(a, 2, ACCEL_REG_JOB_LEN, len) ||
	    vcxl_client_write64(a, 2, ACCEL_REG_JOB_PATTERN, 0x5a5a5a5a5a5a5a5aull) ||
	    vcxl_client_write32(a, 2, ACCEL_REG_DOORBELL, ACCEL_DOORBELL_GO)) {
		fprintf(stderr, "bench: scrub setup failed\n");
		exit(1);
	}
	for (int i = 0; i < 60000 && (st & ACCEL_STATUS_BUSY); i++) {
		if (vcxl_client_read32(a, 2, ACCEL_REG_STATUS, &st))
			break;
		usleep(1000);
	}
	vcxl_client_close(a); /* the scrub starts */
	start = now_ns();
	while ((now_ns() - start) / 1e6 < 1000) {
		double t0 = now_ns();
		vcxl_client_read32(b, 7, 0, &v);
		double ms = (now_ns() - t0) / 1e6;
		if (ms > worst)
			worst = ms;
	}
	vcxl_client_close(b);
	return worst;
}

/* Device 1's REGION_READ round trips for ms: the worst one. */
static double neighbour_worst_for_ms(struct vcxl_client *b, int ms)
{
	double worst = 0, start = now_ns();
	uint32_t v;

	while ((now_ns() - start) / 1e6 < ms) {
		double t0 = now_ns();
		vcxl_client_read32(b, 7, 0, &v);
		double d = (now_ns() - t0) / 1e6;
		if (d > worst)
			worst = d;
	}
	return worst;
}

/* Device 0's client sends one REGION_WRITE_MULTI of 200 doorbells, each a
 * 4 MiB FILL into guest RAM (a memfd window): each doorbell runs its job's
 * first step (all of it) inside the write; device 1's worst round trip for
 * 1 s. */
static double neighbour_write_multi_worst_ms(const char *s0, const char *s1)
{
	const uint64_t len = 4ull << 20, iova = 0x40000000ull;
	struct vcxl_client *a = connect_or_die(s0), *b = connect_or_die(s1);
	struct vfio_user_hdr hh = {.msg_id = 0x7a, .command = VFIO_USER_REGION_WRITE_MULTI};
	uint64_t cnt = VFIO_USER_MULTI_MAX;
	size_t msz = sizeof(hh) + sizeof(cnt) + cnt * sizeof(struct vfio_user_wr_multi_entry);
	uint8_t *msg = calloc(1, msz);
	int mfd = memfd_create("guest", MFD_CLOEXEC);
	struct vcxl_client_reply rep;
	double worst;

	if (!msg || mfd < 0 || ftruncate(mfd, (off_t)len) ||
	    vcxl_client_dma_map(a, iova, len,
				VFIO_USER_F_DMA_REGION_READ | VFIO_USER_F_DMA_REGION_WRITE, mfd, 0,
				NULL) ||
	    vcxl_client_write32(a, 2, ACCEL_REG_JOB_OP, ACCEL_OP_FILL) ||
	    vcxl_client_write32(a, 2, ACCEL_REG_JOB_FLAGS, ACCEL_JOBF_DST_HOST) ||
	    vcxl_client_write64(a, 2, ACCEL_REG_JOB_DST, iova) ||
	    vcxl_client_write64(a, 2, ACCEL_REG_JOB_LEN, len)) {
		fprintf(stderr, "bench: write-multi setup failed\n");
		exit(1);
	}
	hh.msg_size = (uint32_t)msz;
	memcpy(msg, &hh, sizeof(hh));
	memcpy(msg + sizeof(hh), &cnt, sizeof(cnt));
	for (unsigned i = 0; i < cnt; i++) {
		struct vfio_user_wr_multi_entry e = {
		    .offset = ACCEL_REG_DOORBELL, .region = 2, .count = 4};
		uint32_t go = ACCEL_DOORBELL_GO;

		memcpy(e.data, &go, sizeof(go));
		memcpy(msg + sizeof(hh) + sizeof(cnt) + i * sizeof(e), &e, sizeof(e));
	}
	vcxl_client_send_bytes(a, msg, msz, NULL, 0);
	worst = neighbour_worst_for_ms(b, 1000);
	if (!vcxl_client_recv_reply(a, &rep, 30000))
		vcxl_client_reply_free(&rep);
	vcxl_client_close(a);
	vcxl_client_close(b);
	close(mfd);
	free(msg);
	return worst;
}

static int ctl_connect(const char *path)
{
	struct sockaddr_un sa = {.sun_family = AF_UNIX};
	int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);

	snprintf(sa.sun_path, sizeof(sa.sun_path), "%s", path);
	if (fd >= 0 && connect(fd, (struct sockaddr *)&sa, sizeof(sa))) {
		close(fd);
		fd = -1;
	}
	return fd;
}

/* A control client sends 151 query-status lines per 4 KiB write (64 devices:
 * each answer is long), again and again, reading the answers; device 1's
 * worst round trip for 1 s. */
static double neighbour_ctl_flood_worst_ms(const char *ctl, const char *s1)
{
	static const char line[] = "{\"execute\":\"query-status\"}\n"; /* 27 bytes */
	struct vcxl_client *b = connect_or_die(s1);
	char buf[4096];
	size_t n = 0;
	int fd = ctl_connect(ctl);
	double worst;

	if (fd < 0) {
		fprintf(stderr, "bench: control socket %s: %s\n", ctl, strerror(errno));
		exit(1);
	}
	while (n + sizeof(line) - 1 <= sizeof(buf)) {
		memcpy(buf + n, line, sizeof(line) - 1);
		n += sizeof(line) - 1;
	}
	pid_t flood = fork();
	if (flood == 0) {
		/* write 4 KiB, take what answers came, again, for 1.2 s */
		static char rx[1 << 16];
		double t0 = now_ns();

		fcntl(fd, F_SETFL, O_NONBLOCK);
		while ((now_ns() - t0) / 1e6 < 1200) {
			struct pollfd p = {.fd = fd, .events = POLLIN | POLLOUT};

			if (poll(&p, 1, 100) < 0)
				break;
			if ((p.revents & POLLOUT) && write(fd, buf, n) < 0 && errno != EAGAIN)
				break;
			while (read(fd, rx, sizeof(rx)) > 0)
				;
		}
		_exit(0);
	}
	worst = neighbour_worst_for_ms(b, 1000);
	if (flood > 0)
		waitpid(flood, NULL, 0);
	close(fd);
	vcxl_client_close(b);
	return worst;
}

/* Eight control connections that send nothing, then the administrator
 * connects and asks query-status: the time to its answer (5000 when none
 * comes in 5 s: locked out). */
static double ctl_admin_after_idle_ms(const char *ctl)
{
	static const char req[] = "{\"execute\":\"query-status\",\"arguments\":{\"device\":0}}\n";
	int idle[8], fd;
	double t0, ms = 5000;
	char c;

	for (int i = 0; i < 8; i++)
		idle[i] = ctl_connect(ctl);
	usleep(100000);
	t0 = now_ns();
	fd = ctl_connect(ctl);
	if (fd >= 0 && write(fd, req, sizeof(req) - 1) == (ssize_t)sizeof(req) - 1) {
		struct pollfd p = {.fd = fd, .events = POLLIN};

		while (poll(&p, 1, (int)(5000 - (now_ns() - t0) / 1e6)) == 1 &&
		       read(fd, &c, 1) == 1)
			if (c == '\n') {
				ms = (now_ns() - t0) / 1e6;
				break;
			}
	}
	if (fd >= 0)
		close(fd);
	for (int i = 0; i < 8; i++)
		if (idle[i] >= 0)
			close(idle[i]);
	return ms;
}

/* The three sources of work of issue 21 item 5 beside the job engine's. */
static void bench_neighbour_sources(struct stat5 idle)
{
	const int runs = 3;
	char sock[300], s0[310], s1[310], ctl[310];
	double st[3];
	struct stat5 a;
	pid_t srv;

	snprintf(sock, sizeof(sock), "%s/nbw.sock", tmpdir);
	snprintf(s0, sizeof(s0), "%s.0", sock);
	snprintf(s1, sizeof(s1), "%s.1", sock);
	srv = start_server(sock, "--devices 2", 2);
	for (int i = 0; i < runs; i++)
		st[i] = neighbour_write_multi_worst_ms(s0, s1);
	stop_server(srv);
	a = stats(st, runs);
	report("neighbour_worst_rtt_write_multi_200", a, "ms", idle, a.median / idle.median,
	       "worst round trip, device 0's WRITE_MULTI of 200 4 MiB FILLs / device 0 idle",
	       "bounded (< 100 ms)", a.max < 100);

	snprintf(sock, sizeof(sock), "%s/nbc.sock", tmpdir);
	snprintf(s1, sizeof(s1), "%s.1", sock);
	snprintf(ctl, sizeof(ctl), "%s.ctl", sock);
	srv = start_server(sock, "--devices 64", 64);
	for (int i = 0; i < runs; i++)
		st[i] = neighbour_ctl_flood_worst_ms(ctl, s1);
	a = stats(st, runs);
	report("neighbour_worst_rtt_ctl_flood_64dev", a, "ms", idle, a.median / idle.median,
	       "worst round trip, a control client's 151 query-status per 4 KiB write, 64 "
	       "devices / device 0 idle",
	       "bounded (< 100 ms)", a.max < 100);
	for (int i = 0; i < runs; i++)
		st[i] = ctl_admin_after_idle_ms(ctl);
	stop_server(srv);
	a = stats(st, runs);
	report("ctl_admin_answer_after_8_idle", a, "ms", idle, a.median / idle.median,
	       "the administrator's query-status answer with 8 idle control connections / "
	       "device 1's idle worst round trip",
	       "bounded (< 100 ms)", a.max < 100);
}

static void bench_neighbour(void)
{
	const int runs = 3;
	char sock[300], s0[310], s1[310];
	double st[3], idle[3];
	snprintf(sock, sizeof(sock), "%s/nb.sock", tmpdir);
	snprintf(s0, sizeof(s0), "%s.0", sock);
	snprintf(s1, sizeof(s1), "%s.1", sock);
	pid_t srv = start_server(sock, "--devices 2", 2);
	for (int i = 0; i < runs; i++) {
		st[i] = neighbour_stall_worst_ms(s0, s1, 2000);
		idle[i] = neighbour_idle_worst_ms(s1, 2000);
	}
	stop_server(srv);
	cur_runs = runs;
	struct stat5 a = stats(st, runs), b = stats(idle, runs);
	report("neighbour_worst_rtt_dma_stall", a, "ms", b, a.median / b.median,
	       "worst round trip, device 0 stalls DMA / device 0 idle", "bounded (< 100 ms)",
	       a.max < 100);
	/* a device 0 job over 1 GiB, in steps */
	snprintf(sock, sizeof(sock), "%s/nbf.sock", tmpdir);
	snprintf(s0, sizeof(s0), "%s.0", sock);
	snprintf(s1, sizeof(s1), "%s.1", sock);
	srv = start_server(sock, "--devices 2 --mem-size 1G --on-disconnect keep", 2);
	for (int i = 0; i < runs; i++)
		st[i] = neighbour_fill_worst_ms(s0, s1, 1ull << 30);
	stop_server(srv);
	a = stats(st, runs);
	report("neighbour_worst_rtt_fill_1GiB", a, "ms", b, a.median / b.median,
	       "worst round trip, device 0 FILLs 1 GiB / device 0 idle", "bounded (< 100 ms)",
	       a.max < 100);
	/* device 0's 1 GiB --backing region (tmpfs) scrubbed for the next tenant, in steps */
	char backing[300];
	snprintf(sock, sizeof(sock), "%s/nbs.sock", tmpdir);
	snprintf(s0, sizeof(s0), "%s.0", sock);
	snprintf(s1, sizeof(s1), "%s.1", sock);
	snprintf(backing, sizeof(backing), "--devices 2 --mem-size 1G --backing %s/nbs.mem",
		 access("/dev/shm", W_OK) == 0 ? "/dev/shm" : tmpdir);
	srv = start_server(sock, backing, 2);
	for (int i = 0; i < runs; i++)
		st[i] = neighbour_scrub_worst_ms(s0, s1, 1ull << 30);
	stop_server(srv);
	for (int i = 0; i < 2; i++) {
		snprintf(backing, sizeof(backing), "%s/nbs.mem.%d",
			 access("/dev/shm", W_OK) == 0 ? "/dev/shm" : tmpdir, i);
		unlink(backing);
	}
	a = stats(st, runs);
	report("neighbour_worst_rtt_scrub_1GiB", a, "ms", b, a.median / b.median,
	       "worst round trip, device 0's 1 GiB --backing region scrubbed / device 0 idle",
	       "bounded (< 100 ms)", a.max < 100);
	bench_neighbour_sources(b);
	cur_runs = RUNS;
}

/* ---- --on-disconnect reset: the scrub ---------------------------------------- */

/* One tenant fills the whole region through its mapping and leaves; the time
 * from its close to the next client's VERSION reply covers the disconnect
 * (reset: device reset + scrub; keep: nothing) and the next accept. */
static double tenant_switch_ms(const char *sock, uint64_t size)
{
	struct vcxl_client *c = connect_or_die(sock), *n;
	struct vcxl_client_info info;
	struct vcxl_client_region ri;
	if (vcxl_client_get_info(c, &info) ||
	    vcxl_client_region_info(c, info.cxl.region_index, &ri) || ri.fd < 0 || ri.size < size) {
		fprintf(stderr, "bench: no mappable CXL region of %llu bytes\n",
			(unsigned long long)size);
		exit(1);
	}
	uint8_t *reg =
	    mmap(NULL, size, PROT_READ | PROT_WRITE, MAP_SHARED, ri.fd, (off_t)ri.offset);
	if (reg == MAP_FAILED) {
		fprintf(stderr, "bench: mmap failed\n");
		exit(1);
	}
	memset(reg, 0x5a, size);
	munmap(reg, size);
	close(ri.fd);
	double t0 = now_ns();
	vcxl_client_close(c);
	n = connect_or_die(sock);
	double ms = (now_ns() - t0) / 1e6;
	vcxl_client_close(n);
	return ms;
}

static void bench_scrub(void)
{
	const uint64_t size = 1ull << 30;
	const int runs = 5;
	char sock[300], sock_keep[300];
	double r[5], k[5];
	snprintf(sock, sizeof(sock), "%s/scrub.sock", tmpdir);
	snprintf(sock_keep, sizeof(sock_keep), "%s/keep.sock", tmpdir);
	pid_t s1 = start_server(sock, "--mem-size 1G --on-disconnect reset", 1);
	pid_t s2 = start_server(sock_keep, "--mem-size 1G --on-disconnect keep", 1);
	for (int i = 0; i < runs; i++) {
		r[i] = tenant_switch_ms(sock, size);
		k[i] = tenant_switch_ms(sock_keep, size);
	}
	stop_server(s1);
	stop_server(s2);
	cur_runs = runs;
	struct stat5 sr = stats(r, runs), sk = stats(k, runs);
	/* per GiB: the switch with the scrub less the switch without it */
	struct stat5 per = sr;
	per.median -= sk.median;
	per.min -= sk.median;
	per.max -= sk.median;
	per.p25 -= sk.median;
	per.p75 -= sk.median;
	report("disconnect_reset_scrub_per_GiB", per, "ms", sk, sr.median / sk.median,
	       "tenant switch reset/keep (1 GiB written)", NULL, 0);
	cur_runs = RUNS;
}

int main(int argc, char **argv)
{
	if (argc < 3) {
		fprintf(stderr, "usage: vcxl-bench VCXL-SERVER OUT.json [section...]\n");
		return 2;
	}
	server_bin = argv[1];
	signal(SIGPIPE, SIG_IGN);
	snprintf(tmpdir, sizeof(tmpdir), "/tmp/vcxl-bench.XXXXXX");
	if (!mkdtemp(tmpdir)) {
		perror("mkdtemp");
		return 1;
	}
	results = json_object_new_array();
	printf("%-34s %12s %-6s %8s\n", "# name", "value", "unit", "ratio");
	int all = argc == 3;
	for (int i = 3; i < argc || all; i++) {
		const char *s = all ? NULL : argv[i];
		if (all || !strcmp(s, "regs"))
			bench_registers();
		if (all || !strcmp(s, "roundtrip"))
			bench_roundtrip();
		if (all || !strcmp(s, "report"))
			bench_dirty_report();
		if (all || !strcmp(s, "migarcs"))
			bench_mig_arcs();
		if (all || !strcmp(s, "region"))
			bench_region();
		if (all || !strcmp(s, "bringup"))
			bench_bringup();
		if (all || !strcmp(s, "malformed"))
			bench_malformed();
		if (all || !strcmp(s, "scrub"))
			bench_scrub();
		if (all || !strcmp(s, "neighbour"))
			bench_neighbour();
		if (all)
			break;
	}
	json_object *root = json_object_new_object();
	char host[128] = "";
	gethostname(host, sizeof(host) - 1);
	json_object_object_add(root, "host", json_object_new_string(host));
	json_object_object_add(root, "cpus",
			       json_object_new_int((int)sysconf(_SC_NPROCESSORS_ONLN)));
	json_object_object_add(
	    root, "mem_kib",
	    json_object_new_int64((int64_t)sysconf(_SC_PHYS_PAGES) * sysconf(_SC_PAGESIZE) / 1024));
	json_object_object_add(root, "time", json_object_new_int64((int64_t)time(NULL)));
	json_object_object_add(root, "results", results);
	if (json_object_to_file_ext(argv[2], root, JSON_C_TO_STRING_PRETTY) < 0)
		fprintf(stderr, "bench: cannot write %s\n", argv[2]);
	json_object_put(root);
	char cmd[300];
	snprintf(cmd, sizeof(cmd), "rm -rf %s", tmpdir);
	if (system(cmd) != 0)
		fprintf(stderr, "bench: cleanup of %s failed\n", tmpdir);
	return 0;
}
