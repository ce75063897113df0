// SPDX-License-Identifier: BSD-3-Clause
/*
 * The control socket with the real binaries while a client is attached to
 * the device: `vcxl status --json` and the text output name the attached
 * client (SO_PEERCRED), the guest's committed decoder (GPA -> region offset),
 * the host region and the counters; bad requests (not JSON, not an object,
 * unknown command, overlong line) get a JSON error on the same connection
 * and neither the control connection nor the device client is dropped;
 * set-log-level works; --control none and a control path that is not a
 * socket; read-memory returns what the client wrote to the CXL region and
 * refuses bad devices, lengths and ranges.
 */
#include <json-c/json.h>
#include <linux/pci_regs.h>
#include <sys/socket.h>
#include <sys/un.h>

#include "../../src/server/control.h"
#include "harness.h"
#include "tap.h"
#include "cxl/cxl_regs.h"
#include "cxl/cxl_spec.h"

#define GPA 0x100000000ull

struct bar {
	struct vcxl_client *c;
	const struct vcxl_client_info *info;
};

static int bar_rd(void *o, uint32_t off, uint32_t *v)
{
	const struct bar *b = o;

	return vcxl_client_read32(b->c, b->info->cxl.hdm_bar, b->info->cxl.hdm_offset + off, v);
}

static int bar_wr(void *o, uint32_t off, uint32_t v)
{
	const struct bar *b = o;

	return vcxl_client_write32(b->c, b->info->cxl.hdm_bar, b->info->cxl.hdm_offset + off, v);
}

static int cfg_rd(void *o, uint32_t off, uint32_t *v)
{
	return vcxl_client_read32(o, VFIO_PCI_CONFIG_REGION_INDEX, off, v);
}

/* What a guest driver does: Mem_Enable, HDM Decoder Enable, commit decoder 0. */
static int guest_commit(struct vcxl_client *c, const struct vcxl_client_info *info)
{
	struct bar b = {c, info};
	struct vcxl_hdm_io io = {bar_rd, bar_wr, &b};
	uint32_t dvsec, len, ctrl = 0, g = 0;
	uint16_t ctl = 0;
	int rc = vcxl_pcie_find_dvsec(cfg_rd, c, CXL_VENDOR_ID, CXL_DVSEC_ID_DEVICE, &dvsec, &len);

	rc = rc ? rc
		: vcxl_client_region_read(c, VFIO_PCI_CONFIG_REGION_INDEX, dvsec + CXL_DVSEC_CTRL,
					  &ctl, 2);
	ctl |= CXL_DVSEC_CTRL_MEM_EN;
	rc = rc ? rc
		: vcxl_client_region_write(c, VFIO_PCI_CONFIG_REGION_INDEX, dvsec + CXL_DVSEC_CTRL,
					   &ctl, 2);
	rc = rc ? rc : bar_rd(&b, CXL_HDM_GLOBAL_CTRL, &g);
	rc = rc ? rc : bar_wr(&b, CXL_HDM_GLOBAL_CTRL, g | CXL_HDM_GCTRL_ENABLE);
	rc = rc ? rc : bar_rd(&b, CXL_HDM_DEC_CTRL(0), &ctrl);
	rc = rc ? rc
		: vcxl_hdm_io_program(&io, 0, GPA, VCXL_SZ_256M, 0,
				      vcxl_hdm_commit_ctrl(ctrl, false));
	rc = rc ? rc : bar_rd(&b, CXL_HDM_DEC_CTRL(0), &ctrl);
	return rc ? rc : (ctrl & CXL_HDM_DEC_CTRL_COMMITTED) ? 0 : -EIO;
}

static int ctl_connect(const char *path)
{
	struct sockaddr_un sa = {.sun_family = AF_UNIX};
	int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);

	if (strlen(path) >= sizeof(sa.sun_path)) {
		if (fd >= 0)
			close(fd);
		return -1;
	}
	memcpy(sa.sun_path, path, strlen(path) + 1);
	if (fd >= 0 && connect(fd, (struct sockaddr *)&sa, sizeof(sa)) < 0) {
		close(fd);
		return -1;
	}
	return fd;
}

/* Send raw bytes, read one reply line (parsed; NULL if none in 5 s). */
static struct json_object *ctl_req(int fd, const char *req, size_t len)
{
	static char buf[1 << 16];
	size_t got = 0;

	if (send(fd, req, len, MSG_NOSIGNAL) != (ssize_t)len)
		return NULL;
	while (got < sizeof(buf) - 1) {
		struct pollfd p = {.fd = fd, .events = POLLIN};
		ssize_t n;

		if (poll(&p, 1, 5000) <= 0)
			return NULL;
		n = recv(fd, buf + got, sizeof(buf) - 1 - got, 0);
		if (n <= 0)
			return NULL;
		got += (size_t)n;
		if (memchr(buf, '\n', got))
			break;
	}
	buf[got] = 0;
	return json_tokener_parse(buf);
}

static bool is_error(struct json_object *r, const char *cls)
{
	struct json_object *c = h_jget(r, "error.class");

	return c && !strcmp(json_object_get_string(c), cls);
}

static void test_bad_requests(const char *ctl, struct vcxl_client *c)
{
	static char big[VCXL_SZ_4K * 3];
	int fd = ctl_connect(ctl);
	struct json_object *r;
	uint32_t v = 0;
	int rc;

	ok(fd >= 0, "control socket accepts");
	r = ctl_req(fd, "this is not json\n", 17);
	ok(is_error(r, "JSONError"), "not JSON: {\"error\": {\"class\": \"JSONError\"}}");
	json_object_put(r);
	r = ctl_req(fd, "[1, 2]\n", 7);
	ok(is_error(r, "GenericError"), "an array: GenericError");
	json_object_put(r);
	r = ctl_req(fd, "{\"execute\": \"format-disk\"}\n", 27);
	ok(is_error(r, "CommandNotFound"), "unknown command: CommandNotFound");
	json_object_put(r);
	r = ctl_req(fd, "{\"execute\": \"query-status\"} {}\n", 31);
	ok(is_error(r, "JSONError"), "two JSON texts on a line: JSONError");
	json_object_put(r);
	r = ctl_req(fd, "{\"execute\": \"query-status\", \"arguments\": {\"device\": 7}}\n", 56);
	ok(is_error(r, "DeviceNotFound"), "no device 7: DeviceNotFound");
	json_object_put(r);
	r = ctl_req(fd, "{\"execute\": \"set-log-level\", \"arguments\": {\"level\": \"loud\"}}\n",
		    61);
	ok(is_error(r, "InvalidParameter"), "log level 'loud': InvalidParameter");
	json_object_put(r);
	memset(big, 'x', sizeof(big) - 1);
	big[sizeof(big) - 1] = '\n';
	r = ctl_req(fd, big, sizeof(big));
	ok(is_error(r, "GenericError") &&
	       strstr(json_object_get_string(h_jget(r, "error.desc")), "long"),
	   "a %zu-byte line: 'request line too long'", sizeof(big));
	json_object_put(r);
	r = ctl_req(fd, "{\"execute\": \"set-log-level\", \"arguments\": {\"level\": \"debug\"}}\n",
		    62);
	ok(r && h_jget(r, "return"), "after all that, the same connection still answers");
	json_object_put(r);
	r = ctl_req(fd, "{\"execute\": \"query-log-level\"}\n", 31);
	ok(r && !strcmp(json_object_get_string(h_jget(r, "return.level")), "debug"),
	   "set-log-level debug took effect");
	json_object_put(r);
	r = ctl_req(fd, "{\"execute\":\"query-devices\"}\n", 28);
	ok(r && json_object_get_boolean(h_jget(r, "return.0.connected")),
	   "query-devices: device 0 connected");
	json_object_put(r);
	close(fd);
	rc = vcxl_client_read32(c, VFIO_PCI_CONFIG_REGION_INDEX, 0, &v);
	ok(rc == 0 && v == 0x0d948086, "the device client is still served (ids 0x%08x)", v);
}

/* read-memory: the host's look at device memory while a client is attached
 * (the region is the server's sealed memfd: no other way in) */
static void test_read_memory(const char *ctl, struct vcxl_client *c,
			     const struct vcxl_client_info *info)
{
	static const char pat[] = "vcxl\x01\xfe read-memory";
	char req[256], want[2 * sizeof(pat) + 1];
	struct json_object *r;
	const char *data;
	size_t n;
	int fd = ctl_connect(ctl);

	ok(fd >= 0, "read-memory: control socket accepts");
	is(vcxl_client_region_write(c, info->cxl.region_index, 0x12340, pat, sizeof(pat)), 0,
	   "the client writes %zu bytes at CXL region offset 0x12340", sizeof(pat));
	for (size_t i = 0; i < sizeof(pat); i++)
		snprintf(want + 2 * i, 3, "%02x", (uint8_t)pat[i]);
	n = (size_t)snprintf(req, sizeof(req),
			     "{\"execute\": \"read-memory\", \"arguments\": {\"device\": 0, "
			     "\"offset\": %d, \"length\": %zu}}\n",
			     0x12340, sizeof(pat));
	r = ctl_req(fd, req, n);
	data = json_object_get_string(h_jget(r, "return.data"));
	ok(data && !strcmp(data, want) && h_jgeti(r, "return.length") == (int64_t)sizeof(pat) &&
	       h_jgeti(r, "return.offset") == 0x12340,
	   "read-memory returns those bytes as hex (%s)", data ? data : "no data");
	json_object_put(r);
	n = (size_t)snprintf(req, sizeof(req),
			     "{\"execute\": \"read-memory\", \"arguments\": {\"device\": 0, "
			     "\"offset\": 0, \"length\": %d}}\n",
			     VCXL_CONTROL_READ_MAX);
	r = ctl_req(fd, req, n);
	data = json_object_get_string(h_jget(r, "return.data"));
	ok(data && strlen(data) == 2 * VCXL_CONTROL_READ_MAX, "%d bytes in one request",
	   VCXL_CONTROL_READ_MAX);
	json_object_put(r);

	static const struct {
		const char *args, *cls, *what;
	} bad[] = {
	    {"{\"device\": 9, \"offset\": 0, \"length\": 8}", "DeviceNotFound", "device 9"},
	    {"{\"device\": -1, \"offset\": 0, \"length\": 8}", "DeviceNotFound", "device -1"},
	    {"{\"offset\": 0, \"length\": 8}", "DeviceNotFound", "no device"},
	    {"{\"device\": 0, \"offset\": 0, \"length\": 0}", "InvalidParameter", "length 0"},
	    {"{\"device\": 0, \"offset\": 0, \"length\": 4097}", "InvalidParameter", "length 4097"},
	    {"{\"device\": 0, \"offset\": \"0\", \"length\": 8}", "InvalidParameter",
	     "offset a string"},
	    {"{\"device\": 0, \"offset\": -8, \"length\": 8}", "InvalidParameter", "offset -8"},
	    {"{\"device\": 0, \"length\": 8}", "InvalidParameter", "no offset"},
	};
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		n = (size_t)snprintf(req, sizeof(req),
				     "{\"execute\": \"read-memory\", \"arguments\": %s}\n",
				     bad[i].args);
		r = ctl_req(fd, req, n);
		ok(is_error(r, bad[i].cls), "read-memory, %s: %s", bad[i].what, bad[i].cls);
		json_object_put(r);
	}
	/* the end of the region: the last byte reads, one more is refused */
	n = (size_t)snprintf(req, sizeof(req),
			     "{\"execute\": \"read-memory\", \"arguments\": {\"device\": 0, "
			     "\"offset\": %llu, \"length\": 1}}\n",
			     (unsigned long long)info->cxl.region_size - 1);
	r = ctl_req(fd, req, n);
	ok(r && h_jget(r, "return.data"), "the region's last byte reads");
	json_object_put(r);
	n = (size_t)snprintf(req, sizeof(req),
			     "{\"execute\": \"read-memory\", \"arguments\": {\"device\": 0, "
			     "\"offset\": %llu, \"length\": 2}}\n",
			     (unsigned long long)info->cxl.region_size - 1);
	r = ctl_req(fd, req, n);
	ok(is_error(r, "InvalidParameter") &&
	       strstr(json_object_get_string(h_jget(r, "error.desc")), "outside"),
	   "a range past the region's end: InvalidParameter, 'outside the CXL region'");
	json_object_put(r);
	close(fd);
}

/* A pipeline: a client sends many read-memory requests before it reads any
 * reply (8 KiB each), more than the socket buffers: every reply comes, in
 * order, and the connection stays (it was closed at about 24). */
static void test_read_pipeline(const char *ctl)
{
	enum { N = 128, LEN = 4096 };
	static char req[N * 128], rx[N * (2 * LEN + 256)];
	size_t n = 0, got = 0;
	unsigned lines = 0, good = 0, sent_ok;
	int fd = ctl_connect(ctl);
	struct json_object *r;

	for (unsigned k = 0; k < N; k++)
		n += (size_t)snprintf(
		    req + n, sizeof(req) - n,
		    "{\"execute\": \"read-memory\", \"arguments\": {\"device\": 0, "
		    "\"offset\": %u, \"length\": %u}}\n",
		    k * LEN, LEN);
	sent_ok = fd >= 0 && send(fd, req, n, MSG_NOSIGNAL) == (ssize_t)n;
	ok(sent_ok, "pipeline: %d read-memory requests of %d bytes sent at once", N, LEN);
	usleep(300 * 1000); /* the server fills the socket and waits */
	while (sent_ok && lines < N && got < sizeof(rx) - 1) {
		struct pollfd p = {.fd = fd, .events = POLLIN};
		ssize_t m;

		if (poll(&p, 1, 5000) <= 0)
			break;
		m = recv(fd, rx + got, sizeof(rx) - 1 - got, 0);
		if (m <= 0)
			break;
		for (ssize_t i = 0; i < m; i++)
			lines += rx[got + (size_t)i] == '\n';
		got += (size_t)m;
	}
	rx[got] = 0;
	for (char *line = rx, *nl; lines && (nl = strchr(line, '\n')); line = nl + 1) {
		*nl = 0;
		r = json_tokener_parse(line);
		const char *d = json_object_get_string(h_jget(r, "return.data"));
		good += d && strlen(d) == 2 * LEN;
		json_object_put(r);
	}
	is(lines, N, "pipeline: %u reply lines", lines);
	is(good, N, "pipeline: each with its %d bytes", LEN);
	static const char q[] = "{\"execute\": \"query-log-level\"}\n";
	r = fd >= 0 ? ctl_req(fd, q, strlen(q)) : NULL;
	ok(r && h_jget(r, "return"), "pipeline: the connection stays");
	json_object_put(r);
	if (fd >= 0)
		close(fd);
}

static void test_attached(struct harness *h, const char *ctl)
{
	static char out[1 << 16];
	struct vcxl_client *c = NULL;
	struct vcxl_client_info info;
	struct json_object *j;
	uint32_t v;
	char args[512], want[128];
	int rc;

	is(vcxl_client_connect(h->sock, &c), 0, "a client attaches to the device");
	if (!c)
		return;
	is(vcxl_client_get_info(c, &info), 0, "GET_INFO");
	is(guest_commit(c, &info), 0, "the client commits guest decoder 0 at GPA 0x%llx",
	   (unsigned long long)GPA);
	for (int i = 0; i < 10; i++)
		vcxl_client_read32(c, VFIO_PCI_CONFIG_REGION_INDEX, 0, &v);
	ok(vcxl_client_read32(c, 99, 0, &v) < 0, "a REGION_READ of region 99 is refused");
	is(vcxl_client_reset(c), 0, "DEVICE_RESET");
	is(guest_commit(c, &info), 0, "decoder 0 committed again after the reset");

	snprintf(args, sizeof(args), "status %s --json", h->sock);
	rc = h_run_cli(h->cli, args, out, sizeof(out));
	j = json_tokener_parse(out);
	ok(rc == 0 && j, "vcxl status --json while the client is attached: exit 0, JSON");
	ok(h_jgeti(j, "devices.0.client.pid") == getpid() &&
	       h_jgeti(j, "devices.0.client.uid") == (int64_t)getuid(),
	   "the attached client: pid %lld (ours %d), uid %lld",
	   (long long)h_jgeti(j, "devices.0.client.pid"), (int)getpid(),
	   (long long)h_jgeti(j, "devices.0.client.uid"));
	ok(h_jgeti(j, "devices.0.guest_decoders.0.gpa") == (int64_t)GPA &&
	       h_jgeti(j, "devices.0.guest_decoders.0.size") == VCXL_SZ_256M &&
	       h_jgeti(j, "devices.0.guest_decoders.0.region_offset") == 0,
	   "guest decoder 0: GPA 0x100000000 + 256M -> region offset 0");
	ok(h_jgeti(j, "devices.0.host_region.size") == VCXL_SZ_256M &&
	       h_jgeti(j, "devices.0.host_region.hpa") > 0,
	   "host region: HPA 0x%llx, 256M",
	   (unsigned long long)h_jgeti(j, "devices.0.host_region.hpa"));
	ok(h_jgeti(j, "devices.0.counters.messages_by_command.REGION_READ") >= 11 &&
	       h_jgeti(j, "devices.0.counters.messages_by_command.VERSION") == 1 &&
	       h_jgeti(j, "devices.0.counters.errors_by_errno.EINVAL") >= 1,
	   "counters: REGION_READ %lld, VERSION 1, EINVAL %lld",
	   (long long)h_jgeti(j, "devices.0.counters.messages_by_command.REGION_READ"),
	   (long long)h_jgeti(j, "devices.0.counters.errors_by_errno.EINVAL"));
	ok(h_jgeti(j, "uptime_ms") >= 0 && h_jget(j, "log_level"), "uptime and log level reported");
	ok(h_jgeti(j, "devices.0.resets.device_reset") == 1 &&
	       h_jgeti(j, "devices.0.resets.flr") == 0 &&
	       h_jgeti(j, "devices.0.resets.disconnect") == 0 &&
	       h_jgeti(j, "devices.0.counters.messages_by_command.DEVICE_RESET") == 1,
	   "resets by kind: DEVICE_RESET 1, FLR 0, disconnect 0");
	json_object_put(j);

	snprintf(args, sizeof(args), "status %s", h->sock);
	rc = h_run_cli(h->cli, args, out, sizeof(out));
	snprintf(want, sizeof(want), "Client:         pid %d, uid %d", (int)getpid(),
		 (int)getuid());
	ok(rc == 0 && strstr(out, want) &&
	       strstr(out, "Guest decoders: 0: GPA 0x100000000-0x10fffffff -> region offset 0x0") &&
	       strstr(out, "Messages:") && strstr(out, "Uptime:"),
	   "vcxl status text (virsh dominfo style): client, guest decoder, counters");
	if (rc || !strstr(out, want))
		diag("%s", out);
	test_bad_requests(ctl, c);
	test_read_memory(ctl, c, &info);
	test_read_pipeline(ctl);
	vcxl_client_close(c);
}

/* The flood: 151 query-status lines per 4 KiB write, as fast as the server
 * takes them; a second process reads every reply (so the flood is never
 * dropped for not reading). Returns both pids. */
static void flood_start(const char *ctl, pid_t pids[2])
{
	static const char req[] = "{\"execute\":\"query-status\"}\n";
	static char buf[4096];
	size_t n = 0;
	int fd = ctl_connect(ctl);

	while (n + sizeof(req) - 1 <= sizeof(buf) && n / (sizeof(req) - 1) < 151) {
		memcpy(buf + n, req, sizeof(req) - 1);
		n += sizeof(req) - 1;
	}
	pids[0] = pids[1] = -1;
	if (fd < 0)
		return;
	pids[0] = fork();
	if (pids[0] == 0) {
		for (;;)
			if (send(fd, buf, n, MSG_NOSIGNAL) < 0)
				_exit(0);
	}
	pids[1] = fork();
	if (pids[1] == 0) {
		static char sink[1 << 16];

		while (recv(fd, sink, sizeof(sink), 0) > 0)
			;
		_exit(0);
	}
	close(fd);
}

static void flood_stop(pid_t pids[2])
{
	for (int i = 0; i < 2; i++)
		if (pids[i] > 0) {
			kill(pids[i], SIGKILL);
			waitpid(pids[i], NULL, 0);
		}
}

/* issue 21, item 5: a control client's flood of query-status (64 devices)
 * does not hold a neighbour device's round trip (before: 720-980 ms, every
 * line of a read answered at once) */
static void test_flood(const char *bin)
{
	const char *args[] = {"--devices", "64", NULL};
	struct harness h = {0};
	struct vcxl_client *b = NULL;
	char ctl[200], s1[160];
	pid_t pids[2];
	double w0, w;

	if (!ok(h_start(&h, bin, 0, args) == 0, "server with 64 devices")) {
		h_dump_log(&h);
		return h_cleanup(&h);
	}
	snprintf(ctl, sizeof(ctl), "%s.ctl", h.sock);
	h_dev_sock(&h, 1, s1, sizeof(s1));
	is(vcxl_client_connect(s1, &b), 0, "a client on device 1");
	w0 = b ? h_neighbour_worst_ms(b, 300) : -1;
	flood_start(ctl, pids);
	ok(pids[0] > 0 && pids[1] > 0, "a control client floods query-status, 151 lines a write");
	h_sleep_ms(100);
	w = b ? h_neighbour_worst_ms(b, 1500) : -1;
	flood_stop(pids);
	ok(w >= 0 && w < 500,
	   "device 1 served during the control flood: worst %.1f ms (%.1f ms before it)", w, w0);
	vcxl_client_close(b);
	is(h_stop(&h), 0, "server exits cleanly");
	if (tap_failed)
		h_dump_log(&h);
	h_cleanup(&h);
}

/* A reply line on fd within ms: true (the connection is served) */
static bool answers(int fd, int ms)
{
	static const char req[] = "{\"execute\":\"query-log-level\"}\n";
	char buf[512];
	struct pollfd p = {.fd = fd, .events = POLLIN};

	size_t got = 0;

	if (send(fd, req, sizeof(req) - 1, MSG_NOSIGNAL) != sizeof(req) - 1)
		return false;
	/* one whole line (the reply and its newline may come in two sends) */
	while (got < sizeof(buf) - 1 && !memchr(buf, '\n', got)) {
		ssize_t n;

		if (poll(&p, 1, ms) != 1 ||
		    (n = recv(fd, buf + got, sizeof(buf) - 1 - got, 0)) <= 0)
			return false;
		got += (size_t)n;
	}
	buf[got] = 0;
	return strstr(buf, "\"return\"") != NULL;
}

/* The peer closed fd within ms (whatever it said first is read) */
static bool closed_within(int fd, int ms)
{
	struct pollfd p = {.fd = fd, .events = POLLIN};
	char buf[512];

	while (poll(&p, 1, ms) == 1) {
		ssize_t n = recv(fd, buf, sizeof(buf), MSG_DONTWAIT);

		if (n == 0)
			return true;
		if (n < 0 && errno != EAGAIN)
			return false;
	}
	return false;
}

/* issue 21, item 5: eight idle control connections do not lock the
 * administrator out, and idle ones are closed after --control-idle-timeout */
static void test_idle(const char *bin)
{
	struct harness h = {0};
	int fds[VCXL_CONTROL_CLIENTS], fd, n = 0;
	char ctl[200];

	if (!ok(h_start(&h, bin, -1, NULL) == 0, "server (idle timeout 60 s by default)")) {
		h_dump_log(&h);
		return h_cleanup(&h);
	}
	snprintf(ctl, sizeof(ctl), "%s.ctl", h.sock);
	for (int i = 0; i < VCXL_CONTROL_CLIENTS; i++) {
		fds[i] = ctl_connect(ctl);
		if (fds[i] >= 0 && answers(fds[i], 5000))
			n++;
	}
	is(n, VCXL_CONTROL_CLIENTS, "%d control connections, served once, then idle",
	   VCXL_CONTROL_CLIENTS);
	fd = ctl_connect(ctl);
	ok(fd >= 0 && answers(fd, 5000), "a 9th (the administrator's) is served at once");
	ok(closed_within(fds[0], 2000), "the longest-idle one gave its slot up");
	if (fd >= 0)
		close(fd);
	for (int i = 0; i < VCXL_CONTROL_CLIENTS; i++)
		if (fds[i] >= 0)
			close(fds[i]);
	is(h_stop(&h), 0, "server exits cleanly");
	h_cleanup(&h);

	const char *args[] = {"--control-idle-timeout", "1", NULL};
	if (!ok(h_start(&h, bin, -1, args) == 0, "server with --control-idle-timeout 1")) {
		h_dump_log(&h);
		return h_cleanup(&h);
	}
	snprintf(ctl, sizeof(ctl), "%s.ctl", h.sock);
	fd = ctl_connect(ctl);
	int busy = ctl_connect(ctl);
	bool kept = busy >= 0;
	int t = 0;
	for (; t < 6 && kept; t++) {
		h_sleep_ms(250);
		kept = answers(busy, 2000);
	}
	ok(kept, "a connection that keeps asking is kept past the timeout (%d of 6)", t);
	if (!kept)
		diag("closed: %d", closed_within(busy, 100));
	ok(fd >= 0 && closed_within(fd, 5000), "an idle one is closed after about 1 s");
	ok(h_log_count(&h, "control: a connection idle for") >= 1, "and the log says so");
	if (fd >= 0)
		close(fd);
	/* one that asks for more than the socket holds and never reads its replies:
	 * closed, seen without reading (POLLRDHUP) */
	fd = ctl_connect(ctl);
	{
		static char req[64 * 128];
		size_t len = 0;
		struct pollfd p = {.fd = fd, .events = POLLRDHUP};

		for (unsigned k = 0; k < 64; k++)
			len +=
			    (size_t)snprintf(req + len, sizeof(req) - len,
					     "{\"execute\": \"read-memory\", \"arguments\": "
					     "{\"device\": 0, \"offset\": %u, \"length\": 4096}}\n",
					     k * 4096);
		ok(fd >= 0 && send(fd, req, len, MSG_NOSIGNAL) == (ssize_t)len,
		   "a pipeline of 64 read-memory requests, never read");
		h_sleep_ms(3000);
		ok(fd >= 0 && poll(&p, 1, 0) == 1 && (p.revents & POLLRDHUP),
		   "is closed by the idle timeout too");
	}
	if (fd >= 0)
		close(fd);
	if (busy >= 0)
		close(busy);
	is(h_stop(&h), 0, "server exits cleanly");
	if (tap_failed)
		h_dump_log(&h);
	h_cleanup(&h);
}

int main(int argc, char **argv)
{
	const char *bin = h_server_bin(argc, argv);
	struct harness h = {.cli = h_cli_bin(argc, argv)};
	char ctl[200], out[512], args[512];
	struct stat st;
	int rc = h_start(&h, bin, -1, NULL);

	ok(rc == 0, "vcxl-server started");
	snprintf(ctl, sizeof(ctl), "%s.ctl", h.sock);
	ok(stat(ctl, &st) == 0 && S_ISSOCK(st.st_mode), "control socket by default at SOCKET.ctl");
	if (!rc)
		test_attached(&h, ctl);
	is(h_log_count(&h, "control: log level debug"), 1, "the server logged the new level");
	is(h_stop(&h), 0, "SIGTERM: exit 0");
	ok(stat(ctl, &st) < 0, "control socket removed at exit");
	if (tap_failed)
		h_dump_log(&h);
	h_cleanup(&h);

	const char *none[] = {"--control", "none", NULL};
	rc = h_start(&h, bin, -1, none);
	snprintf(ctl, sizeof(ctl), "%s.ctl", h.sock);
	ok(rc == 0 && stat(ctl, &st) < 0, "--control none: no control socket");
	snprintf(args, sizeof(args), "status %s", h.sock);
	ok(h_run_cli(h.cli, args, out, sizeof(out)) == 1 && !strncmp(out, "vcxl: ", 6) &&
	       strchr(out, '\n') == out + strlen(out) - 1,
	   "vcxl status without a control socket: one line, exit 1");
	h_stop(&h);
	h_cleanup(&h);

	/* a regular file where the control socket goes: refused before serving */
	char dir[] = "/tmp/vcxl-ctl-XXXXXX", file[64], cmd[512];
	if (mkdtemp(dir)) {
		snprintf(file, sizeof(file), "%s/c.ctl", dir);
		FILE *f = fopen(file, "w");
		if (f)
			fclose(f);
		snprintf(cmd, sizeof(cmd), "'%s' --socket %s/d.sock --control %s 2>&1", bin, dir,
			 file);
		FILE *p = popen(cmd, "r");
		size_t n = p ? fread(out, 1, sizeof(out) - 1, p) : 0;
		out[n] = 0;
		int st2 = p ? pclose(p) : -1;
		ok(WIFEXITED(st2) && WEXITSTATUS(st2) == 2 &&
		       strstr(out, "c.ctl exists and is not a socket") && stat(file, &st) == 0 &&
		       S_ISREG(st.st_mode),
		   "--control on a regular file: exit 2, one line, file kept");
		unlink(file);
		rmdir(dir);
	}
	test_idle(bin);
	test_flood(bin);
	return done();
}
