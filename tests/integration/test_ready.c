// SPDX-License-Identifier: BSD-3-Clause
/*
 * vcxl-server's readiness with the real binary ($NOTIFY_SOCKET, systemd's
 * sd_notify protocol; docs/design.md "Readiness"): when READY=1 arrives,
 * every device socket and the control socket accept, the start-up log lines
 * are written (and --user is in effect: integration_hostile); SIGTERM sends
 * STOPPING=1; a NOTIFY_SOCKET it cannot reach is logged and the server
 * serves anyway.
 */
#include <stdbool.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>

#include "harness.h"
#include "tap.h"

/* connect once, no retry: the socket is listening now */
static bool accepts(const char *path)
{
	int fd = vcxl_sock_connect(path);

	if (fd < 0)
		return false;
	close(fd);
	return true;
}

static void test_ready(const char *bin)
{
	struct harness h = {0};
	const char *args[] = {"--devices", "3", NULL};
	char p[160];
	bool all = true;
	int rc = h_start(&h, bin, 0, args);

	if (!ok(rc == 0, "READY=1 received from a server with 3 devices (%d)", rc)) {
		h_dump_log(&h);
		h_cleanup(&h);
		return;
	}
	/* everything below is checked once, at READY=1, without waiting */
	for (int i = 0; i < 3; i++) {
		h_dev_sock(&h, i, p, sizeof(p));
		all = all && accepts(p);
	}
	ok(all, "at READY=1 all 3 device sockets accept");
	snprintf(p, sizeof(p), "%s.ctl", h.sock);
	ok(accepts(p), "and the control socket accepts");
	is(h_log_count(&h, "serving device 2 (8086:0d94"), 1, "and the log names the last device");
	is(h_stop(&h), 0, "SIGTERM: exit 0");
	is(h_ready_wait(&h, VCXL_NOTIFY_STOPPING, 5000), 0, "STOPPING=1 was sent on the way out");
	is(h_log_count(&h, VCXL_NOTIFY_ENV), 0, "no notification problem logged");
	if (tap_failed)
		h_dump_log(&h);
	h_cleanup(&h);
}

static const char *bad_addr;

static void set_bad_notify(void)
{
	setenv(VCXL_NOTIFY_ENV, bad_addr, 1);
}

/* poll the log for needle (the server announces nothing here): true once seen */
static bool log_shows(const struct harness *h, const char *needle)
{
	for (int t = 0; t < H_READY_MS; t += 10) {
		if (h_log_count(h, needle) > 0)
			return true;
		h_sleep_ms(10);
	}
	return false;
}

static void test_unreachable(const char *bin, const char *addr, const char *err)
{
	struct harness h = {0};
	const char *argv[] = {bin, "--socket", h.sock, "--log-level", "info", NULL};
	char want[200];
	struct vcxl_client *c = NULL;
	uint32_t v = 0;

	bad_addr = addr;
	if (h_prepare(&h, bin, "vcxl-rd")) {
		ok(0, "temporary directory");
		return;
	}
	is(h_launch(&h, argv, set_bad_notify, 0), -ETIMEDOUT, "NOTIFY_SOCKET=%s: started", addr);
	snprintf(want, sizeof(want), "%s=%s: %s: readiness is not announced", VCXL_NOTIFY_ENV, addr,
		 err);
	ok(log_shows(&h, want), "the log says \"%s\"", want);
	ok(vcxl_client_connect(h.sock, &c) == 0 && vcxl_client_read32(c, 7, 0, &v) == 0 &&
	       v == 0x0d948086,
	   "the device is served anyway");
	vcxl_client_close(c);
	is(h_stop(&h), 0, "SIGTERM: exit 0");
	if (tap_failed)
		h_dump_log(&h);
	h_cleanup(&h);
}

/* In the server's child before exec: fill $NOTIFY_SOCKET's receive queue
 * (the supervisor never reads it) so that the server's READY=1 finds it full. */
static void fill_notify_queue(void)
{
	const char *addr = getenv(VCXL_NOTIFY_ENV);
	int fd = addr ? vcxl_notify_open(addr) : -1;

	while (fd >= 0 && send(fd, "X=1", 3, MSG_DONTWAIT) == 3)
		;
	if (fd >= 0)
		close(fd);
}

static int64_t now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/* issue 21, item 7: a full $NOTIFY_SOCKET queue neither stops the service
 * nor holds off SIGTERM (before: a blocking send with SIGTERM blocked) */
static void test_full_queue(const char *bin)
{
	struct harness h = {0};
	const char *argv[] = {bin, "--socket", h.sock, "--log-level", "info", NULL};
	struct vcxl_client *c = NULL;
	uint32_t v = 0;
	int64_t t0;

	if (h_prepare(&h, bin, "vcxl-rq")) {
		ok(0, "temporary directory");
		return;
	}
	is(h_launch(&h, argv, fill_notify_queue, 0), -ETIMEDOUT,
	   "started with its $NOTIFY_SOCKET's queue full (never read)");
	ok(log_shows(&h, "serving device 0"), "the server starts");
	ok(vcxl_client_connect(h.sock, &c) == 0 && vcxl_client_read32(c, 7, 0, &v) == 0 &&
	       v == 0x0d948086,
	   "the device is served");
	vcxl_client_close(c);
	ok(log_shows(&h, "READY=1 not sent"), "the log says READY=1 was not sent");
	t0 = now_ms();
	int rc = h_stop(&h);
	int64_t took = now_ms() - t0;
	ok(rc == 0 && took < 5000, "SIGTERM: exit %d after %lld ms (at most 5 s)", rc,
	   (long long)took);
	is(h_log_count(&h, "READY=1 not sent"), 1, "logged once");
	if (tap_failed)
		h_dump_log(&h);
	h_cleanup(&h);
}

/* A test that dies with a server running (an abort, a sanitizer's exit)
 * must not keep meson waiting: the server holds no copy of the test's stdout
 * and dies with it. Here a child plays the test, its stdout a pipe as
 * meson's, and dies without stopping its server. */
static void test_dying_test(const char *bin)
{
	int pfd[2], status = 0;
	pid_t t, server = 0;
	char buf[256], *dir = NULL, cmd[300];
	ssize_t n;
	struct pollfd p;

	if (!ok(pipe(pfd) == 0, "a pipe as meson's"))
		return;
	t = fork();
	if (t == 0) {
		struct harness h = {0};

		close(pfd[0]);
		dup2(pfd[1], 1);
		close(pfd[1]);
		if (h_start(&h, bin, -1, NULL))
			_exit(2);
		printf("%d %s\n", (int)h.pid, h.dir);
		fflush(stdout);
		abort(); /* what a failed assertion under UBSan does */
	}
	close(pfd[1]);
	n = read(pfd[0], buf, sizeof(buf) - 1);
	if (n > 0) {
		buf[n] = 0;
		server = (pid_t)atoi(buf);
		dir = strchr(buf, ' ');
	}
	ok(server > 0, "the dying test started a server (pid %d)", (int)server);
	waitpid(t, &status, 0);
	ok(WIFSIGNALED(status) && WTERMSIG(status) == SIGABRT, "the test died (SIGABRT)");
	p.fd = pfd[0];
	p.events = POLLIN;
	/* EOF on its stdout: nobody holds it */
	ok(poll(&p, 1, 5000) == 1 && read(pfd[0], buf, sizeof(buf)) == 0,
	   "its stdout ends at once: no server holds it");
	close(pfd[0]);
	for (int i = 0; i < 100 && server > 0 && kill(server, 0) == 0; i++)
		usleep(20000);
	ok(server > 0 && kill(server, 0) < 0 && errno == ESRCH, "and its server died with it");
	if (server > 0 && kill(server, 0) == 0)
		kill(server, SIGKILL);
	if (dir && !strncmp(dir + 1, "/tmp/vcxl-it-", 13)) {
		dir[strcspn(dir, "\n")] = 0;
		snprintf(cmd, sizeof(cmd), "rm -rf '%s'", dir + 1);
		if (system(cmd) != 0)
			diag("%s failed", cmd);
	}
}

int main(int argc, char **argv)
{
	const char *bin = h_server_bin(argc, argv);

	test_ready(bin);
	test_unreachable(bin, "/nonexistent/vcxl-notify.sock", "No such file or directory");
	test_unreachable(bin, "vsock:2:1234", "Address family not supported by protocol");
	test_full_queue(bin);
	test_dying_test(bin);
	return tap_done();
}
