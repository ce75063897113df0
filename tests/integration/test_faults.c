// SPDX-License-Identifier: BSD-3-Clause
/*
 * Fault and denial-of-service tests against the real vcxl-server binary:
 *  - a client dies in the middle of a message: the server serves the next one;
 *  - a client sends a header promising more bytes than it sends and stalls:
 *    the other device (--devices 2) is served meanwhile, and the stalled
 *    message is answered once it completes;
 *  - 1,000 connect/disconnect cycles (each negotiating, some passing a memfd
 *    and an eventfd): no growth of the server's fds or RSS; 50 cycles under
 *    valgrind --leak-check=full with a clean exit (when valgrind is there and
 *    the server is not an ASan build);
 *  - SIGKILL while a client writes to a file-backed region (--backing) through
 *    its mapping and REGION_WRITE: after a restart on the same file, every
 *    write that completed before the kill is there;
 *  - surprise removal of a device (needs a trigger in the server; SKIP
 *    otherwise): all-ones reads, dropped writes, a log line, the other device
 *    still served;
 *  - resource bounds: huge argsz, more DMA maps than max_dma_maps, msg_size
 *    above the cap, too many fds, unread 1 MiB replies: each refused with its
 *    errno (or the connection closed), the server's RSS bounded meanwhile;
 *  - a DMA window larger than the fd it maps, and one whose fd the client
 *    shrinks after mapping: refused or a failed job, never a dead server.
 */
#include <dirent.h>
#include <poll.h>
#include <sys/eventfd.h>
#include <sys/mman.h>
#include <sys/socket.h>

#include "cxl/cxl_regs.h"
#include "model/model.h"
#include "tap.h"
#include "integration/harness.h"

#define CYCLES	     1000
#define VG_CYCLES    50
#define REPLY_MS     5000
#define RSS_SLACK_KB (2 * 1024)
#define RSS_BOUND_KB (32 * 1024)
#define REC_SIZE     64
#define CFG	     VFIO_PCI_CONFIG_REGION_INDEX
static const uint32_t RW = VFIO_USER_F_DMA_REGION_READ | VFIO_USER_F_DMA_REGION_WRITE;

static const char *server_bin;
static bool asan_server;

/* One TAP point for a part that cannot run here, with the reason. */
static void skip(const char *why)
{
	tap_n++;
	printf("ok %d # SKIP %s\n", tap_n, why);
	fflush(stdout);
}

/* ---- /proc of the server ----------------------------------------------- */

static long pid_rss_kb(pid_t pid)
{
	char p[64], line[256];
	long kb = -1;
	FILE *f;

	snprintf(p, sizeof(p), "/proc/%d/status", (int)pid);
	f = fopen(p, "r");
	if (!f)
		return -1;
	while (fgets(line, sizeof(line), f))
		if (sscanf(line, "VmRSS: %ld kB", &kb) == 1)
			break;
	fclose(f);
	return kb;
}

/* The fd count settles once the server has handled what it was sent. */
static int settle_fds(pid_t pid, int want)
{
	return h_settle_fds(pid, want, 3000);
}

/* ---- client helpers ------------------------------------------------------ */

/* Connect and negotiate; retried while the server still holds the previous
 * client (one client per device socket: a connection that races the old
 * one's teardown is refused). */
static int connect_retry(const char *path, struct vcxl_client **c)
{
	int rc = -EIO;

	for (int t = 0; t < H_READY_MS; t += 5) {
		rc = vcxl_client_connect(path, c);
		if (rc == 0)
			return 0;
		h_sleep_ms(5);
	}
	return rc;
}

static void put_hdr(uint8_t *buf, uint16_t id, uint16_t cmd, uint32_t size)
{
	struct vfio_user_hdr h = {.msg_id = id, .command = cmd, .msg_size = size};

	memcpy(buf, &h, sizeof(h));
}

/* REGION_READ request bytes for (region, off, count) */
static size_t read_req(uint8_t *buf, uint16_t id, uint32_t region, uint64_t off, uint32_t count)
{
	struct vfio_user_region_access a = {.offset = off, .region = region, .count = count};

	put_hdr(buf, id, VFIO_USER_REGION_READ, sizeof(struct vfio_user_hdr) + sizeof(a));
	memcpy(buf + sizeof(struct vfio_user_hdr), &a, sizeof(a));
	return sizeof(struct vfio_user_hdr) + sizeof(a);
}

/* Wait for the server to close its end: true on EOF within ms. */
static bool peer_closed(int fd, int ms)
{
	struct pollfd p = {.fd = fd, .events = POLLIN};
	char b[256];

	for (int t = 0; t < ms; t += 10) {
		if (poll(&p, 1, 10) == 1) {
			ssize_t n = recv(fd, b, sizeof(b), MSG_DONTWAIT);

			if (n == 0 || (n < 0 && errno == ECONNRESET))
				return true;
		}
	}
	return false;
}

static bool is_asan_binary(const char *path)
{
	static const char needle[] = "AddressSanitizer";
	FILE *f = fopen(path, "rb");
	char buf[1 << 16];
	size_t n, keep = 0;
	bool found = false;

	if (!f)
		return false;
	while (!found && (n = fread(buf + keep, 1, sizeof(buf) - keep, f)) > 0) {
		n += keep;
		found = memmem(buf, n, needle, sizeof(needle) - 1) != NULL;
		keep = sizeof(needle) - 1;
		memmove(buf, buf + n - keep, keep);
	}
	fclose(f);
	return found;
}

/* ASan holds freed memory in a quarantine: RSS would grow with every cycle.
 * Without it, RSS growth means a leak again. (In the child, before exec.) */
static void asan_no_quarantine(void)
{
	char opts[512];
	const char *o = getenv("ASAN_OPTIONS");

	snprintf(opts, sizeof(opts), "%s%squarantine_size_mb=0", o ? o : "", o && *o ? ":" : "");
	setenv("ASAN_OPTIONS", opts, 1);
}

/* Start `wrapper... server --socket S --log-level info args...` (harness.h
 * layout, so h_stop/h_cleanup/h_log_count work); returns once it is ready. */
static int start_wrapped(struct harness *h, const char *const *wrapper, int first_sock,
			 const char *const *args, int wait_ms)
{
	const char *argv[48];
	char first[160];
	struct stat st;
	int n = 0;
	int rc = h_prepare(h, server_bin, "vcxl-ft");

	if (rc)
		return rc;
	for (int i = 0; wrapper && wrapper[i]; i++)
		argv[n++] = wrapper[i];
	argv[n++] = server_bin;
	argv[n++] = "--socket";
	argv[n++] = h->sock;
	argv[n++] = "--log-level";
	argv[n++] = "info";
	for (int i = 0; args && args[i] && n < 46; i++)
		argv[n++] = args[i];
	argv[n] = NULL;
	rc = h_launch(h, argv, asan_server ? asan_no_quarantine : NULL, wait_ms);
	h_dev_sock(h, first_sock, first, sizeof(first));
	if (!rc && (lstat(first, &st) || !S_ISSOCK(st.st_mode)))
		rc = -ENOTSOCK;
	return rc;
}

static void finish(struct harness *h, const char *what)
{
	is(h_stop(h), 0, "%s: server exits cleanly on SIGTERM", what);
	if (tap_failed)
		h_dump_log(h);
	h_cleanup(h);
}

/* ---- 1. a client dies in the middle of a message ----------------------------- */

static void test_die_mid_message(void)
{
	struct harness h;
	struct vcxl_client *c;
	struct vcxl_client_info info;
	uint8_t buf[64];

	if (!ok(start_wrapped(&h, NULL, -1, NULL, H_READY_MS) == 0,
		"mid-message: server started")) {
		h_cleanup(&h);
		return;
	}
	/* a REGION_READ header promising 16 payload bytes, 5 of them sent */
	is(connect_retry(h.sock, &c), 0, "client 1 connects and negotiates");
	read_req(buf, 7, CFG, 0, 4);
	is(vcxl_client_send_bytes(c, buf, sizeof(struct vfio_user_hdr) + 5, NULL, 0), 0,
	   "client 1 sends a header and 5 of 16 payload bytes");
	vcxl_client_close(c);
	/* 7 bytes of a header, then gone */
	is(connect_retry(h.sock, &c), 0, "client 2 connects and negotiates");
	is(vcxl_client_send_bytes(c, buf, 7, NULL, 0), 0, "client 2 sends 7 bytes of a header");
	vcxl_client_close(c);
	is(connect_retry(h.sock, &c), 0, "client 3 connects after two clients died mid-message");
	is(vcxl_client_get_info(c, &info), 0, "client 3: GET_INFO served");
	ok(info.has_cxl && info.num_regions == VCXL_VDEV_NUM_REGIONS,
	   "client 3: the device is whole (CXL capability, %u regions)", info.num_regions);
	vcxl_client_close(c);
	ok(h_log_count(&h, "client connected") >= 3, "the server logged all three clients");
	finish(&h, "mid-message");
}

/* ---- 2. a stalled partial message does not block the other device --------- */

static void test_stall(void)
{
	static const char *const args[] = {"--devices", "2", NULL};
	struct harness h;
	struct vcxl_client *stalled, *other;
	struct vcxl_client_reply rep;
	char s0[160], s1[160];
	uint8_t buf[64];
	size_t len;
	int served = 0, rc;

	if (!ok(start_wrapped(&h, NULL, 0, args, H_READY_MS) == 0,
		"stall: server with 2 devices")) {
		h_cleanup(&h);
		return;
	}
	h_dev_sock(&h, 0, s0, sizeof(s0));
	h_dev_sock(&h, 1, s1, sizeof(s1));
	is(connect_retry(s0, &stalled), 0, "device 0: client negotiates");
	len = read_req(buf, 0x77, CFG, 0, 4);
	is(vcxl_client_send_bytes(stalled, buf, len - 8, NULL, 0), 0,
	   "device 0: REGION_READ header + half its payload, then the client stalls");
	is(connect_retry(s1, &other), 0, "device 1: client negotiates while device 0 stalls");
	for (int i = 0; i < 200; i++) {
		uint32_t v = 0;

		if (vcxl_client_read32(other, CFG, 0, &v) == 0 &&
		    v == (VCXL_MODEL_VENDOR | (uint32_t)VCXL_MODEL_DEVICE << 16))
			served++;
	}
	is(served, 200, "device 1 answered 200 config reads meanwhile");
	is(vcxl_client_recv_reply(stalled, &rep, 200), -ETIMEDOUT,
	   "device 0: no reply to the incomplete message");
	is(vcxl_client_send_bytes(stalled, buf + len - 8, 8, NULL, 0), 0,
	   "device 0: the client sends the missing 8 bytes");
	rc = vcxl_client_recv_reply(stalled, &rep, REPLY_MS);
	is(rc, 0, "device 0: the reply arrives");
	if (rc == 0) {
		uint32_t id = 0;

		if (rep.len >= sizeof(struct vfio_user_region_access) + 4)
			memcpy(&id, rep.data + sizeof(struct vfio_user_region_access), 4);
		ok(rep.hdr.msg_id == 0x77 && !(rep.hdr.flags & VFIO_USER_F_ERROR) &&
		       id == (VCXL_MODEL_VENDOR | (uint32_t)VCXL_MODEL_DEVICE << 16),
		   "device 0: the completed REGION_READ is answered correctly (id 0x%x)",
		   rep.hdr.msg_id);
		vcxl_client_reply_free(&rep);
	}
	vcxl_client_close(stalled);
	vcxl_client_close(other);
	finish(&h, "stall");
}

/* ---- 3. connect/disconnect cycles: fds and RSS ---------------------------- */

/* One cycle; every 10th passes a memfd DMA window and an eventfd. */
static int one_cycle(const char *path, int i)
{
	struct vcxl_client *c;
	struct vcxl_client_info info;
	int rc = connect_retry(path, &c);

	if (rc)
		return rc;
	rc = vcxl_client_get_info(c, &info);
	if (!rc && i % 10 == 0) {
		int mfd = memfd_create("guest", MFD_CLOEXEC);
		int efd = eventfd(0, EFD_CLOEXEC);

		if (mfd < 0 || efd < 0 || ftruncate(mfd, 1 << 20))
			rc = -errno;
		if (!rc)
			rc = vcxl_client_dma_map(c, 1ull << 32, 1 << 20, RW, mfd, 0, NULL);
		if (!rc)
			rc = vcxl_client_set_irqs(c, VFIO_PCI_MSIX_IRQ_INDEX,
						  VFIO_IRQ_SET_DATA_EVENTFD |
						      VFIO_IRQ_SET_ACTION_TRIGGER,
						  0, 1, &efd, 1, NULL);
		if (mfd >= 0)
			close(mfd);
		if (efd >= 0)
			close(efd);
	}
	vcxl_client_close(c);
	return rc;
}

static void test_cycles(void)
{
	struct harness h;
	int fds0, fds1, failed = 0, slack;
	long rss0, rss1;

	if (!ok(start_wrapped(&h, NULL, -1, NULL, H_READY_MS) == 0, "cycles: server started")) {
		h_cleanup(&h);
		return;
	}
	for (int i = 0; i < 50; i++) /* warm up allocator arenas */
		failed += one_cycle(h.sock, i) != 0;
	fds0 = settle_fds(h.pid, -1);
	fds0 = h_pid_fds(h.pid);
	rss0 = pid_rss_kb(h.pid);
	for (int i = 0; i < CYCLES; i++)
		failed += one_cycle(h.sock, i) != 0;
	fds1 = settle_fds(h.pid, fds0);
	rss1 = pid_rss_kb(h.pid);
	is(failed, 0,
	   "%d connect/negotiate/GET_INFO/close cycles (100 with a memfd DMA map and "
	   "an eventfd)",
	   CYCLES + 50);
	is(fds1, fds0, "server fds after %d cycles: %d (before: %d)", CYCLES, fds1, fds0);
	/* ASan's allocator itself grows by about 1 kB per cycle (no quarantine) */
	slack = asan_server ? 2 * RSS_SLACK_KB : RSS_SLACK_KB;
	ok(rss0 > 0 && rss1 - rss0 < slack, "server RSS %ld kB -> %ld kB (growth < %d kB)", rss0,
	   rss1, slack);
	diag("cycles: server RSS %ld kB before, %ld kB after %d cycles; fds %d -> %d", rss0, rss1,
	     CYCLES, fds0, fds1);
	finish(&h, "cycles");
}

static void test_cycles_valgrind(void)
{
	static const char *const vg[] = {"valgrind",
					 "-q",
					 "--leak-check=full",
					 "--errors-for-leak-kinds=definite,indirect",
					 "--error-exitcode=99",
					 NULL};
	struct harness h;
	int failed = 0, st;

	if (system("valgrind --version >/dev/null 2>&1") != 0) {
		skip("valgrind is not installed");
		return;
	}
	if (asan_server) {
		skip("the server is an ASan build (valgrind cannot run it; ASan checks leaks)");
		return;
	}
	if (!ok(start_wrapped(&h, vg, -1, NULL, 60000) == 0, "valgrind: server started")) {
		h_dump_log(&h);
		h_cleanup(&h);
		return;
	}
	for (int i = 0; i < VG_CYCLES; i++)
		failed += one_cycle(h.sock, i) != 0;
	kill(h.pid, SIGTERM);
	waitpid(h.pid, &st, 0);
	h.pid = 0;
	ok(failed == 0 && WIFEXITED(st) && WEXITSTATUS(st) == 0,
	   "%d cycles under valgrind --leak-check=full: exit status %d, no error or leak",
	   VG_CYCLES, WIFEXITED(st) ? WEXITSTATUS(st) : -1);
	if (tap_failed)
		h_dump_log(&h);
	h_cleanup(&h);
}

/* ---- 4. SIGKILL while writing a file-backed region ---------------------------- */

static void rec_fill(uint8_t *r, unsigned i)
{
	for (unsigned k = 0; k < REC_SIZE; k++)
		r[k] = (uint8_t)(i * 131 + k * 7 + 1);
}

static void test_kill_backing(void)
{
	char dir[] = "/tmp/vcxl-bk-XXXXXX", file[96];
	/* the whole backing file goes to the client only when it is trusted;
	 * keep: a file meant to outlive the run (under reset, the default, it
	 * is zeroed before the next run's first client: test_handover) */
	const char *args[] = {"--backing", file, "--trust-client", "--on-disconnect", "keep", NULL};
	struct harness h;
	struct vcxl_client *c;
	struct vcxl_client_info info;
	struct vcxl_client_region ri;
	uint8_t rec[REC_SIZE], got[REC_SIZE];
	unsigned done = 0, total = 4000, bad = 0;
	uint8_t *map = NULL;
	int st = 0;

	if (!mkdtemp(dir)) {
		ok(0, "backing: temp dir");
		return;
	}
	snprintf(file, sizeof(file), "%s/devmem", dir);
	if (!ok(start_wrapped(&h, NULL, -1, args, H_READY_MS) == 0, "backing: server on %s",
		file)) {
		h_cleanup(&h);
		rmdir(dir);
		return;
	}
	is(connect_retry(h.sock, &c), 0, "backing: client negotiates");
	vcxl_client_get_info(c, &info);
	is(vcxl_client_region_info(c, info.cxl.region_index, &ri), 0, "CXL region info");
	if (ri.fd >= 0 && (ri.flags & VFIO_REGION_INFO_FLAG_MMAP)) {
		map = mmap(NULL, ri.size, PROT_READ | PROT_WRITE, MAP_SHARED, ri.fd,
			   (off_t)ri.offset);
		if (map == MAP_FAILED)
			map = NULL;
	}
	ok(map != NULL, "CXL region mmapped from the fd the server passed");
	/* even records through the mapping, odd ones through REGION_WRITE; the
	 * server is killed with one REGION_WRITE in flight */
	for (unsigned i = 0; i < total; i++) {
		rec_fill(rec, i);
		if (i == total / 2) {
			uint8_t msg[sizeof(struct vfio_user_hdr) +
				    sizeof(struct vfio_user_region_access) + REC_SIZE];
			struct vfio_user_region_access a = {.offset = (uint64_t)i * REC_SIZE,
							    .region = info.cxl.region_index,
							    .count = REC_SIZE};

			put_hdr(msg, 0xbeef, VFIO_USER_REGION_WRITE, sizeof(msg));
			memcpy(msg + sizeof(struct vfio_user_hdr), &a, sizeof(a));
			memcpy(msg + sizeof(struct vfio_user_hdr) + sizeof(a), rec, REC_SIZE);
			vcxl_client_send_bytes(c, msg, sizeof(msg), NULL, 0);
			kill(h.pid, SIGKILL);
			waitpid(h.pid, &st, 0);
			h.pid = 0;
			break;
		}
		if (i % 2 == 0 && map) {
			memcpy(map + (uint64_t)i * REC_SIZE, rec, REC_SIZE);
		} else if (vcxl_client_region_write(c, info.cxl.region_index,
						    (uint64_t)i * REC_SIZE, rec, REC_SIZE)) {
			break;
		}
		done = i + 1;
	}
	if (h.pid > 0) { /* a write failed before the kill point */
		kill(h.pid, SIGKILL);
		waitpid(h.pid, &st, 0);
		h.pid = 0;
	}
	ok(WIFSIGNALED(st) && WTERMSIG(st) == SIGKILL,
	   "server killed with SIGKILL after %u completed writes", done);
	if (map)
		munmap(map, ri.size);
	if (ri.fd >= 0)
		close(ri.fd);
	vcxl_client_close(c);
	h_cleanup(&h);

	if (!ok(start_wrapped(&h, NULL, -1, args, H_READY_MS) == 0, "backing: server restarted")) {
		h_cleanup(&h);
		unlink(file);
		rmdir(dir);
		return;
	}
	is(connect_retry(h.sock, &c), 0, "backing: client negotiates after restart");
	for (unsigned i = 0; i < done; i++) {
		rec_fill(rec, i);
		if (vcxl_client_region_read(c, info.cxl.region_index, (uint64_t)i * REC_SIZE, got,
					    REC_SIZE) ||
		    memcmp(got, rec, REC_SIZE))
			bad++;
	}
	is(bad, 0, "all %u completed writes (%u mmap, %u REGION_WRITE) survived the kill", done,
	   (done + 1) / 2, done / 2);
	vcxl_client_close(c);
	finish(&h, "backing");
	unlink(file);
	rmdir(dir);
}

/* ---- 5. surprise removal ------------------------------------------------- */

/* The trigger this test expects: `vcxl-server --help` mentions SIGUSR1, and
 * SIGUSR1 surprise-removes device 0 (vcxl_model_remove). */
static bool server_has_remove_trigger(void)
{
	char cmd[600], line[512];
	bool found = false;
	FILE *p;

	snprintf(cmd, sizeof(cmd), "'%s' --help 2>&1", server_bin);
	p = popen(cmd, "r");
	if (!p)
		return false;
	while (fgets(line, sizeof(line), p))
		if (strstr(line, "SIGUSR1"))
			found = true;
	pclose(p);
	return found;
}

static void test_surprise_removal(void)
{
	static const char *const args[] = {"--devices", "2", NULL};
	struct harness h;
	struct vcxl_client *c0, *c1;
	struct vcxl_client_info info;
	uint32_t v = 0, before = 0;
	int rc;

	if (!server_has_remove_trigger()) {
		skip("vcxl-server has no surprise-removal trigger (expected: SIGUSR1 removes "
		     "device 0 via vcxl_model_remove, documented in --help)");
		return;
	}
	if (!ok(start_wrapped(&h, NULL, 0, args, H_READY_MS) == 0,
		"removal: server with 2 devices")) {
		h_cleanup(&h);
		return;
	}
	char s0[160], s1[160];

	h_dev_sock(&h, 0, s0, sizeof(s0));
	h_dev_sock(&h, 1, s1, sizeof(s1));
	if (connect_retry(s0, &c0) || connect_retry(s1, &c1)) {
		ok(0, "removal: clients connect to both devices");
		finish(&h, "removal");
		return;
	}
	vcxl_client_read32(c0, CFG, 0, &before);
	is(before, VCXL_MODEL_VENDOR | (uint32_t)VCXL_MODEL_DEVICE << 16,
	   "device 0 answers before the removal");
	kill(h.pid, SIGUSR1);
	for (int t = 0; t < H_READY_MS && h_log_count(&h, "remov") < 1; t += 10)
		h_sleep_ms(10);
	ok(h_log_count(&h, "remov") >= 1, "the server logged the removal");
	rc = vcxl_client_read32(c0, CFG, 0, &v);
	ok((rc == 0 && v == ~0u) || rc == -ENODEV,
	   "removed device: config read is all-ones (rc %d, 0x%08x)", rc, v);
	rc = vcxl_client_read32(c0, 2, ACCEL_REG_ID, &v);
	ok((rc == 0 && v == ~0u) || rc == -ENODEV, "removed device: BAR2 read is all-ones (rc %d)",
	   rc);
	vcxl_client_write32(c0, 2, ACCEL_REG_JOB_PATTERN, 0x1234);
	rc = vcxl_client_read32(c0, 2, ACCEL_REG_JOB_PATTERN, &v);
	ok((rc == 0 && v == ~0u) || rc == -ENODEV, "removed device: the write was dropped");
	is(vcxl_client_get_info(c1, &info), 0, "device 1 still serves GET_INFO");
	ok(vcxl_client_read32(c1, CFG, 0, &v) == 0 && v == before,
	   "device 1 config reads still work (0x%08x)", v);
	vcxl_client_close(c0);
	vcxl_client_close(c1);
	finish(&h, "removal");
}

/* ---- 6. resource bounds ------------------------------------------------------ */

static int reply_err(struct vcxl_client *c, uint16_t cmd, const void *p, size_t len, const int *fds,
		     unsigned nfds)
{
	struct vcxl_client_reply rep;
	int rc = vcxl_client_raw(c, cmd, 0, p, len, fds, nfds, &rep);

	if (rc)
		return rc;
	rc = rep.hdr.flags & VFIO_USER_F_ERROR ? -(int)rep.hdr.error : 0;
	for (unsigned i = 0; i < rep.nfds; i++)
		close(rep.fds[i]);
	vcxl_client_reply_free(&rep);
	return rc;
}

static void test_bounds(void)
{
	struct harness h;
	struct vcxl_client *c;
	long rss0, rss_max = 0;
	int fds0, rc, mapped = 0;
	uint8_t buf[64];

	if (!ok(start_wrapped(&h, NULL, -1, NULL, H_READY_MS) == 0, "bounds: server started")) {
		h_cleanup(&h);
		return;
	}
	is(connect_retry(h.sock, &c), 0, "bounds: client negotiates");
	fds0 = h_pid_fds(h.pid);
	rss0 = pid_rss_kb(h.pid);

	/* huge argsz: answered with what fits, never allocated */
	{
		struct vfio_region_info ri = {.argsz = 0xffffffffu, .index = 0};
		struct vfio_user_device_info di = {.argsz = 0xffffffffu};
		struct vfio_irq_info ii = {.argsz = 0xffffffffu, .index = VFIO_PCI_MSIX_IRQ_INDEX};
		struct vfio_user_dma_map dm = {
		    .argsz = 0xffffffffu, .flags = RW, .addr = 1ull << 40, .size = 4096};
		struct vfio_user_dma_unmap du = {
		    .argsz = 0xffffffffu, .addr = 1ull << 40, .size = 4096};

		is(reply_err(c, VFIO_USER_DEVICE_GET_REGION_INFO, &ri, sizeof(ri), NULL, 0), 0,
		   "GET_REGION_INFO argsz 0xffffffff: answered");
		is(reply_err(c, VFIO_USER_DEVICE_GET_INFO, &di, VFIO_USER_DEVICE_INFO_MIN, NULL, 0),
		   0, "GET_INFO argsz 0xffffffff: answered");
		is(reply_err(c, VFIO_USER_DEVICE_GET_IRQ_INFO, &ii, sizeof(ii), NULL, 0), 0,
		   "GET_IRQ_INFO argsz 0xffffffff: answered");
		is(reply_err(c, VFIO_USER_DMA_MAP, &dm, sizeof(dm), NULL, 0), -EINVAL,
		   "DMA_MAP argsz beyond the message: EINVAL");
		is(reply_err(c, VFIO_USER_DMA_UNMAP, &du, sizeof(du), NULL, 0), 0,
		   "DMA_UNMAP argsz 0xffffffff of no mapping: answered, a no-op (type1 semantics)");
	}
	/* DMA maps: up to max_dma_maps, then ENOSPC */
	{
		const struct vcxl_client_caps *caps = vcxl_client_server_caps(c);
		unsigned max = caps->max_dma_maps;

		for (unsigned i = 0; i < max + 1; i++) {
			rc = vcxl_client_dma_map(c, (1ull << 32) + (uint64_t)i * 8192, 4096, RW, -1,
						 0, NULL);
			if (rc)
				break;
			mapped++;
		}
		ok(max >= 1 && max <= VCXL_SRV_MAX_DMA_MAPS, "server offers max_dma_maps %u", max);
		is(mapped, (int)max, "%d DMA maps accepted", mapped);
		is(rc, -ENOSPC, "map %u beyond max_dma_maps: ENOSPC", max + 1);
		rss_max = pid_rss_kb(h.pid);
		is(vcxl_client_dma_unmap(c, 0, 0, VFIO_DMA_UNMAP_FLAG_ALL), 0, "unmap all");
	}
	/* too many fds */
	{
		int fds[24], n = 0;
		struct vfio_user_dma_map dm = {
		    .argsz = sizeof(dm), .flags = RW, .addr = 1ull << 40, .size = 4096};
		struct {
			struct vfio_irq_set s;
		} si = {{.argsz = sizeof(struct vfio_irq_set),
			 .flags = VFIO_IRQ_SET_DATA_EVENTFD | VFIO_IRQ_SET_ACTION_TRIGGER,
			 .index = VFIO_PCI_MSIX_IRQ_INDEX,
			 .start = 0,
			 .count = 1}};

		for (; n < 24; n++) {
			fds[n] = memfd_create("x", MFD_CLOEXEC);
			if (fds[n] < 0 || ftruncate(fds[n], 4096))
				break;
		}
		is(reply_err(c, VFIO_USER_DMA_MAP, &dm, sizeof(dm), fds, 2), -EINVAL,
		   "DMA_MAP with 2 fds: EINVAL");
		is(reply_err(c, VFIO_USER_DMA_MAP, &dm, sizeof(dm), fds, VCXL_SRV_MAX_MSG_FDS + 4),
		   -EINVAL, "DMA_MAP with %d fds (beyond max_msg_fds %d): EINVAL",
		   VCXL_SRV_MAX_MSG_FDS + 4, VCXL_SRV_MAX_MSG_FDS);
		is(reply_err(c, VFIO_USER_DEVICE_SET_IRQS, &si, sizeof(si), fds, 3), -EINVAL,
		   "SET_IRQS with 3 fds for 1 vector: EINVAL");
		is(reply_err(c, VFIO_USER_DEVICE_GET_INFO,
			     &(struct vfio_user_device_info){.argsz = 16},
			     VFIO_USER_DEVICE_INFO_MIN, fds, 1),
		   -EINVAL, "GET_INFO with an fd: EINVAL");
		for (int i = 0; i < n; i++)
			close(fds[i]);
		is(settle_fds(h.pid, fds0), fds0,
		   "every fd of the refused messages was closed "
		   "(server fds %d)",
		   fds0);
	}
	/* REGION_READ above max_data_xfer_size */
	{
		struct vfio_user_region_access a = {
		    .offset = 0, .region = 0, .count = VCXL_SRV_MAX_XFER + 1};

		is(reply_err(c, VFIO_USER_REGION_READ, &a, sizeof(a), NULL, 0), -E2BIG,
		   "REGION_READ count above max_data_xfer_size: E2BIG");
	}
	/* 100 unread 1 MiB replies: the server stops reading instead of queueing */
	{
		struct vcxl_client_info info;
		int got = 0;
		long rss;

		vcxl_client_get_info(c, &info);
		for (int i = 0; i < 100; i++) {
			size_t n = read_req(buf, (uint16_t)(0x1000 + i), info.cxl.region_index, 0,
					    VCXL_SRV_MAX_XFER);

			if (vcxl_client_send_bytes(c, buf, n, NULL, 0))
				break;
		}
		h_sleep_ms(300);
		rss = pid_rss_kb(h.pid);
		if (rss > rss_max)
			rss_max = rss;
		ok(rss - rss0 < RSS_BOUND_KB, "100 unread 1 MiB REGION_READs: server RSS +%ld kB",
		   rss - rss0);
		for (int i = 0; i < 100; i++) {
			struct vcxl_client_reply rep;

			if (vcxl_client_recv_reply(c, &rep, REPLY_MS))
				break;
			got += rep.hdr.msg_id == 0x1000 + i && rep.len == 16 + VCXL_SRV_MAX_XFER;
			vcxl_client_reply_free(&rep);
		}
		is(got, 100, "all 100 replies arrive, in order, once the client reads");
	}
	/* msg_size above the cap: the stream cannot be resynchronised: closed */
	put_hdr(buf, 9, VFIO_USER_REGION_WRITE, 64u << 20);
	vcxl_client_send_bytes(c, buf, sizeof(struct vfio_user_hdr), NULL, 0);
	ok(peer_closed(vcxl_client_fd(c), 3000), "msg_size 64 MiB: connection closed");
	vcxl_client_close(c);
	rc = connect_retry(h.sock, &c);
	is(rc, 0, "a new client is served after that");
	if (!rc)
		vcxl_client_close(c);
	ok(rss_max - rss0 < RSS_BOUND_KB, "server RSS stayed within %d MiB of %ld kB (peak %ld kB)",
	   RSS_BOUND_KB / 1024, rss0, rss_max);
	diag("bounds: server RSS %ld kB at start, peak %ld kB", rss0, rss_max);
	finish(&h, "bounds");
}

/* ---- 7. a DMA window larger than its fd --------------------------------------- */

static void test_short_dma_fd(void)
{
	struct harness h;
	struct vcxl_client *c;
	int mfd = memfd_create("short", MFD_CLOEXEC), rc, st = 0;
	uint32_t status = 0;
	bool alive;

	if (!ok(start_wrapped(&h, NULL, -1, NULL, H_READY_MS) == 0, "short fd: server started")) {
		h_cleanup(&h);
		return;
	}
	is(connect_retry(h.sock, &c), 0, "short fd: client negotiates");
	setup_ok(ftruncate(mfd, 4096));
	/* a 1 MiB window on a 4 KiB memfd, then a device read at +64 KiB */
	rc = vcxl_client_dma_map(c, 1ull << 32, 1 << 20, RW, mfd, 0, NULL);
	if (rc == 0) {
		vcxl_client_write32(c, 2, ACCEL_REG_JOB_OP, ACCEL_OP_COPY);
		vcxl_client_write32(c, 2, ACCEL_REG_JOB_FLAGS, ACCEL_JOBF_SRC_HOST);
		vcxl_client_write64(c, 2, ACCEL_REG_JOB_SRC, (1ull << 32) + 0x10000);
		vcxl_client_write64(c, 2, ACCEL_REG_JOB_DST, 0);
		vcxl_client_write64(c, 2, ACCEL_REG_JOB_LEN, 0x1000);
		vcxl_client_write32(c, 2, ACCEL_REG_DOORBELL, ACCEL_DOORBELL_GO);
		vcxl_client_read32(c, 2, ACCEL_REG_STATUS, &status);
	}
	h_sleep_ms(50);
	alive = waitpid(h.pid, &st, WNOHANG) == 0;
	if (!alive)
		h.pid = 0;
	ok(alive && (rc == -EINVAL || (status & ACCEL_STATUS_ERROR)),
	   "DMA window larger than its fd: refused, or the job fails and the server lives");
	/* a window that was whole when mapped, then the client shrinks its file */
	if (alive) {
		int mfd2 = memfd_create("shrunk", MFD_CLOEXEC);
		setup_ok(ftruncate(mfd2, 1 << 20));
		rc = vcxl_client_dma_map(c, 2ull << 32, 1 << 20, RW, mfd2, 0, NULL);
		is(rc, 0, "shrink: a whole 1 MiB window maps");
		setup_ok(ftruncate(mfd2, 4096));
		status = 0;
		vcxl_client_write32(c, 2, ACCEL_REG_STATUS, ACCEL_STATUS_DONE | ACCEL_STATUS_ERROR);
		vcxl_client_write32(c, 2, ACCEL_REG_JOB_OP, ACCEL_OP_COPY);
		vcxl_client_write32(c, 2, ACCEL_REG_JOB_FLAGS, ACCEL_JOBF_SRC_HOST);
		vcxl_client_write64(c, 2, ACCEL_REG_JOB_SRC, (2ull << 32) + 0x10000);
		vcxl_client_write64(c, 2, ACCEL_REG_JOB_DST, 0);
		vcxl_client_write64(c, 2, ACCEL_REG_JOB_LEN, 0x1000);
		vcxl_client_write32(c, 2, ACCEL_REG_DOORBELL, ACCEL_DOORBELL_GO);
		vcxl_client_read32(c, 2, ACCEL_REG_STATUS, &status);
		h_sleep_ms(50);
		alive = waitpid(h.pid, &st, WNOHANG) == 0;
		if (!alive)
			h.pid = 0;
		if (!alive || !(status & ACCEL_STATUS_ERROR))
			diag("shrink: alive %d status 0x%x wait status 0x%x", alive, status, st);
		ok(alive && (status & ACCEL_STATUS_ERROR),
		   "shrink: the client truncates its fd under the window: the job fails, the "
		   "server lives (SIGBUS guarded)");
		close(mfd2);
	}
	vcxl_client_close(c);
	close(mfd);
	if (alive)
		h_stop(&h);
	h_cleanup(&h);
}

int main(int argc, char **argv)
{
	server_bin = h_server_bin(argc, argv);
	asan_server = is_asan_binary(server_bin);
	signal(SIGPIPE, SIG_IGN);
	test_die_mid_message();
	test_stall();
	test_cycles();
	test_cycles_valgrind();
	test_kill_backing();
	test_surprise_removal();
	test_bounds();
	test_short_dma_fd();
	return done();
}
