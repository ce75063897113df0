/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Integration test harness: start the real vcxl-server binary (path from
 * $VCXL_SERVER or argv[1]) on a temporary socket, wait for its readiness
 * notification ($NOTIFY_SOCKET, "READY=1": sent after every socket listens,
 * the start-up log is written and --user is in effect), stop it with
 * SIGTERM, and inspect its log.
 */
#ifndef VCXL_TESTS_HARNESS_H
#define VCXL_TESTS_HARNESS_H

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <json-c/json.h>

#include "vcxl/client.h"
#include "server/server.h"

struct harness {
	pid_t pid;
	char dir[64];
	char sock[128];
	char log[128];
	char notify[96]; /* the readiness socket ($NOTIFY_SOCKET of the server) */
	int ready_fd;
	const char *bin;
	const char *cli;
};

/* Start-up bound: generous (ASan builds on a loaded machine); a server that
 * exits early is seen at once. */
#define H_READY_MS 60000

/* an eventfd was signalled within ms (and is read empty) */
static inline bool h_eventfd_fired(int efd, int ms)
{
	struct pollfd p = {.fd = efd, .events = POLLIN};
	uint64_t v;

	if (poll(&p, 1, ms) != 1)
		return false;
	return read(efd, &v, 8) == 8 && v >= 1;
}

static inline void h_sleep_ms(int ms)
{
	struct timespec ts = {ms / 1000, (long)(ms % 1000) * 1000000};

	nanosleep(&ts, NULL);
}

/* The fds a process holds (its /proc/PID/fd entries), -1 if unreadable. */
static inline int h_pid_fds(pid_t pid)
{
	char p[64];
	DIR *d;
	int n = 0;

	snprintf(p, sizeof(p), "/proc/%d/fd", (int)pid);
	d = opendir(p);
	if (!d)
		return -1;
	for (struct dirent *e; (e = readdir(d));)
		if (e->d_name[0] != '.')
			n++;
	closedir(d);
	return n;
}

/* The server's fd count once it reaches want (it settles as the server
 * handles what it was sent, or a departed client's disconnect), or what it is
 * after max_ms (want -1: the count after max_ms). */
static inline int h_settle_fds(pid_t pid, int want, int max_ms)
{
	int n = h_pid_fds(pid);

	for (int t = 0; n != want && t < max_ms; t += 10) {
		h_sleep_ms(10);
		n = h_pid_fds(pid);
	}
	return n;
}

/* A neighbour's service: device 1's (the accelerator model's) 4-byte config
 * reads back to back for duration_ms; the worst round trip in ms, -1 if a
 * read failed or read anything but the model's ids. */
static inline double h_neighbour_worst_ms(struct vcxl_client *b, int duration_ms)
{
	struct timespec s, t0, t1;
	double worst = 0;

	clock_gettime(CLOCK_MONOTONIC, &s);
	for (;;) {
		uint32_t v = 0;
		double d;

		clock_gettime(CLOCK_MONOTONIC, &t0);
		if (vcxl_client_read32(b, VFIO_PCI_CONFIG_REGION_INDEX, 0, &v) || v != 0x0d948086)
			return -1;
		clock_gettime(CLOCK_MONOTONIC, &t1);
		d = (double)(t1.tv_sec - t0.tv_sec) * 1e3 + (double)(t1.tv_nsec - t0.tv_nsec) / 1e6;
		if (d > worst)
			worst = d;
		if ((t1.tv_sec - s.tv_sec) * 1000 + (t1.tv_nsec - s.tv_nsec) / 1000000 >=
		    duration_ms)
			return worst;
	}
}

static inline const char *h_server_bin(int argc, char **argv)
{
	const char *e = getenv("VCXL_SERVER");

	if (e && *e)
		return e;
	return argc > 1 ? argv[1] : "./src/tools/vcxl-server";
}

static inline const char *h_cli_bin(int argc, char **argv)
{
	const char *e = getenv("VCXL_CLI");

	if (e && *e)
		return e;
	return argc > 2 ? argv[2] : "./src/tools/vcxl";
}

/* Socket path of device i (PATH.i when the server serves several). */
static inline void h_dev_sock(const struct harness *h, int i, char *buf, size_t len)
{
	if (i < 0)
		snprintf(buf, len, "%s", h->sock);
	else
		snprintf(buf, len, "%s.%d", h->sock, i);
}

static inline int h_wait_socket(const char *path, int ms)
{
	for (int t = 0; t < ms; t += 10) {
		int fd = vcxl_sock_connect(path);

		if (fd >= 0) {
			close(fd);
			return 0;
		}
		h_sleep_ms(10);
	}
	return -ETIMEDOUT;
}

/* The temporary directory with the paths of a server's socket, log and
 * readiness socket (h->cli is kept). */
static inline int h_prepare(struct harness *h, const char *bin, const char *prefix)
{
	const char *cli = h->cli;

	memset(h, 0, sizeof(*h));
	h->cli = cli;
	h->bin = bin;
	h->ready_fd = -1;
	snprintf(h->dir, sizeof(h->dir), "/tmp/%s-XXXXXX", prefix);
	if (!mkdtemp(h->dir))
		return -errno;
	snprintf(h->sock, sizeof(h->sock), "%s/dev.sock", h->dir);
	snprintf(h->log, sizeof(h->log), "%s/server.log", h->dir);
	snprintf(h->notify, sizeof(h->notify), "%s/notify.sock", h->dir);
	return 0;
}

/* Bind the readiness socket the server gets as $NOTIFY_SOCKET */
static inline int h_ready_open(struct harness *h)
{
	struct sockaddr_un sa = {.sun_family = AF_UNIX};
	int fd = socket(AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC, 0);

	if (fd < 0)
		return -errno;
	snprintf(sa.sun_path, sizeof(sa.sun_path), "%s", h->notify);
	if (bind(fd, (struct sockaddr *)&sa, sizeof(sa)) < 0) {
		int e = errno;

		close(fd);
		return -e;
	}
	h->ready_fd = fd;
	return 0;
}

/* Wait up to ms for a notification containing the line state (e.g.
 * "READY=1") from the server: 0, -ECHILD when the server exited first,
 * -ETIMEDOUT. Other notifications are read and skipped. */
static inline int h_ready_wait(struct harness *h, const char *state, int ms)
{
	size_t sl = strlen(state);

	for (int t = 0; t < ms; t += 50) {
		struct pollfd p = {.fd = h->ready_fd, .events = POLLIN};
		char buf[512];
		ssize_t n;
		int st;

		if (poll(&p, 1, 50) == 1) {
			n = recv(h->ready_fd, buf, sizeof(buf) - 1, MSG_DONTWAIT);
			if (n < 0)
				continue;
			buf[n] = 0;
			for (char *l = buf, *nl; l; l = nl ? nl + 1 : NULL) {
				nl = strchr(l, '\n');
				if (!strncmp(l, state, sl) && (l[sl] == '\n' || !l[sl]))
					return 0;
			}
			continue;
		}
		if (h->pid > 0 && waitpid(h->pid, &st, WNOHANG) == h->pid) {
			h->pid = 0;
			return -ECHILD;
		}
	}
	return -ETIMEDOUT;
}

/* Fork and exec argv (execvp) with stderr to h->log and $NOTIFY_SOCKET set;
 * child_setup (may be NULL) runs in the child before exec. Returns once the
 * server announced readiness: every socket listens, its start-up log lines
 * are written and --user is in effect (see h_ready_wait for errors). */
static inline int h_launch(struct harness *h, const char *const *argv, void (*child_setup)(void),
			   int wait_ms)
{
	int rc = h_ready_open(h);

	if (rc)
		return rc;
	h->pid = fork();
	if (h->pid < 0)
		return -errno;
	if (h->pid == 0) {
		int fd = open(h->log, O_WRONLY | O_CREAT | O_TRUNC, 0644);

		/* stdout and stderr to the log: a server never holds the test's stdout
		 * (meson's pipe), so a test that dies is reported at once, not at its
		 * timeout; and it dies with the test (cleared by a --user drop) */
		if (fd >= 0) {
			dup2(fd, 1);
			dup2(fd, 2);
			close(fd);
		}
		prctl(PR_SET_PDEATHSIG, SIGKILL);
		setenv("NOTIFY_SOCKET", h->notify, 1);
		if (child_setup)
			child_setup();
		execvp(argv[0], (char *const *)argv);
		_exit(127);
	}
	return h_ready_wait(h, "READY=1", wait_ms);
}

/* Start the server with extra args (NULL-terminated); first_sock: -1 for PATH,
 * 0 for PATH.0 (every device socket listens once the server is ready) */
static inline int h_start(struct harness *h, const char *bin, int first_sock,
			  const char *const *args)
{
	const char *argv[32];
	char first[160];
	struct stat st;
	int n = 0;
	int rc = h_prepare(h, bin, "vcxl-it");

	if (rc)
		return rc;
	argv[n++] = bin;
	argv[n++] = "--socket";
	argv[n++] = h->sock;
	argv[n++] = "--log-level";
	argv[n++] = "info";
	for (int i = 0; args && args[i] && n < 30; i++)
		argv[n++] = args[i];
	argv[n] = NULL;
	rc = h_launch(h, argv, NULL, H_READY_MS);
	h_dev_sock(h, first_sock, first, sizeof(first));
	if (!rc && (lstat(first, &st) || !S_ISSOCK(st.st_mode)))
		rc = -ENOTSOCK; /* ready without its socket */
	return rc;
}

/* SIGTERM, wait: the exit status (or -1 on timeout/crash) */
static inline int h_stop(struct harness *h)
{
	int st = 0;

	if (h->pid <= 0)
		return -1;
	kill(h->pid, SIGTERM);
	for (int t = 0; t < 10000; t += 10) {
		pid_t r = waitpid(h->pid, &st, WNOHANG);

		if (r == h->pid) {
			h->pid = 0;
			return WIFEXITED(st) ? WEXITSTATUS(st) : -1;
		}
		h_sleep_ms(10);
	}
	kill(h->pid, SIGKILL);
	waitpid(h->pid, &st, 0);
	h->pid = 0;
	return -1;
}

/* Lines of the server log containing needle */
static inline int h_log_count(const struct harness *h, const char *needle)
{
	FILE *f = fopen(h->log, "r");
	char line[2048];
	int n = 0;

	if (!f)
		return -1;
	while (fgets(line, sizeof(line), f))
		if (strstr(line, needle))
			n++;
	fclose(f);
	return n;
}

static inline void h_dump_log(const struct harness *h)
{
	FILE *f = fopen(h->log, "r");
	char line[2048];

	if (!f)
		return;
	while (fgets(line, sizeof(line), f))
		printf("# server: %s", line);
	fclose(f);
}

static inline void h_cleanup(struct harness *h)
{
	char p[200];

	if (h->pid > 0)
		h_stop(h);
	unlink(h->log);
	for (int i = 0; i < 8; i++) {
		h_dev_sock(h, i, p, sizeof(p));
		unlink(p);
	}
	unlink(h->sock);
	if (h->notify[0]) {
		if (h->ready_fd >= 0)
			close(h->ready_fd);
		h->ready_fd = -1;
		unlink(h->notify);
	}
	rmdir(h->dir);
}

/* Run the CLI (or any command) with args, stdout+stderr in out: its exit status or -1 */
static inline int h_run_cli(const char *cli, const char *args, char *out, size_t len)
{
	char cmd[1024];
	FILE *f;
	size_t n;
	int st;

	snprintf(cmd, sizeof(cmd), "'%s' %s 2>&1", cli, args);
	f = popen(cmd, "r");
	if (!f)
		return -1;
	n = fread(out, 1, len - 1, f);
	out[n] = 0;
	st = pclose(f);
	return WIFEXITED(st) ? WEXITSTATUS(st) : -1;
}

/* A JSON member by dotted path ("return.devices.1.client"; numbers index arrays) */
static inline struct json_object *h_jget(struct json_object *o, const char *path)
{
	char key[64];

	while (o && *path) {
		size_t n = strcspn(path, ".");

		snprintf(key, sizeof(key), "%.*s", (int)n, path);
		if (json_object_is_type(o, json_type_array))
			o = json_object_array_get_idx(o, (size_t)atoi(key));
		else if (!json_object_object_get_ex(o, key, &o))
			o = NULL;
		path += n + (path[n] == '.');
	}
	return o;
}

/* ... as an integer, -1 when absent */
static inline int64_t h_jgeti(struct json_object *o, const char *path)
{
	struct json_object *v = h_jget(o, path);

	return v ? json_object_get_int64(v) : -1;
}

#endif
