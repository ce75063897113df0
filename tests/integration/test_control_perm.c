// SPDX-License-Identifier: BSD-3-Clause
/*
 * The control socket is the administrator's (issue 21, item 1), tried as a
 * second uid with the real server and sockets. The server runs as root; a
 * forked child becomes nobody with the group `users` (the way an operator
 * lets an unprivileged VMM reach the device sockets: --socket-mode 0660
 * --socket-group users) and plays tenant A's VMM:
 *  - it reaches its device socket but not SOCKET.ctl (EACCES: root's, 0600,
 *    whatever --socket-mode/--socket-group say);
 *  - with --control-mode 0666 it connects, but read-memory of tenant B's
 *    device and set-log-level get PermissionDenied, and query-status shows no
 *    tenant's pid, uid, gid or counters, while root still can do all of it.
 */
#include <grp.h>
#include <json-c/json.h>
#include <pwd.h>
#include <sys/socket.h>
#include <sys/un.h>

#include "harness.h"
#include "tap.h"

static const char secret[] = "tenant B's secret";

/* connect to path: fd, or -errno */
static int ctl_connect(const char *path)
{
	struct sockaddr_un sa = {.sun_family = AF_UNIX};
	int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0), e;

	if (fd < 0)
		return -errno;
	snprintf(sa.sun_path, sizeof(sa.sun_path), "%s", path);
	if (connect(fd, (struct sockaddr *)&sa, sizeof(sa)) < 0) {
		e = errno;
		close(fd);
		return -e;
	}
	return fd;
}

/* One request line, one reply line (NULL if none within 5 s); raw: its text */
static struct json_object *ctl_req(int fd, const char *req, char *raw, size_t rawlen)
{
	static char buf[1 << 16];
	size_t got = 0, len = strlen(req);

	if (send(fd, req, len, MSG_NOSIGNAL) != (ssize_t)len)
		return NULL;
	while (got < sizeof(buf) - 1 && !memchr(buf, '\n', got)) {
		struct pollfd p = {.fd = fd, .events = POLLIN};
		ssize_t n;

		if (poll(&p, 1, 5000) <= 0)
			return NULL;
		n = recv(fd, buf + got, sizeof(buf) - 1 - got, 0);
		if (n <= 0)
			return NULL;
		got += (size_t)n;
	}
	buf[got] = 0;
	if (raw)
		snprintf(raw, rawlen, "%s", buf);
	return json_tokener_parse(buf);
}

/* the string at path, "" if none */
static const char *jstr(struct json_object *o, const char *path)
{
	const char *s = json_object_get_string(h_jget(o, path));

	return s ? s : "";
}

static bool is_error(struct json_object *r, const char *cls)
{
	struct json_object *c = h_jget(r, "error.class");

	return c && !strcmp(json_object_get_string(c), cls);
}

#define READ_B                                                                                     \
	"{\"execute\": \"read-memory\", \"arguments\": {\"device\": 1, \"offset\": 0, "            \
	"\"length\": 17}}\n"
#define SET_DEBUG "{\"execute\": \"set-log-level\", \"arguments\": {\"level\": \"debug\"}}\n"
#define STATUS	  "{\"execute\": \"query-status\"}\n"
#define STATS	  "{\"execute\": \"query-stats\"}\n"

/* What the child (nobody, group users) saw, one bit each */
enum {
	SAW_DEV_OK = 1 << 0,	   /* connected to its device socket */
	SAW_CTL_EACCES = 1 << 1,   /* SOCKET.ctl refused with EACCES */
	SAW_CTL_OK = 1 << 2,	   /* SOCKET.ctl accepted */
	SAW_READ_DENIED = 1 << 3,  /* read-memory: PermissionDenied */
	SAW_SECRET = 1 << 4,	   /* the secret's hex anywhere in a reply */
	SAW_LEVEL_DENIED = 1 << 5, /* set-log-level: PermissionDenied */
	SAW_STATUS = 1 << 6,	   /* query-status answered */
	SAW_TENANT_ID = 1 << 7,	   /* ... with a client pid/uid/gid or counters */
	SAW_OBSERVER = 1 << 8,	   /* ... and says "access": "observer" */
	SAW_STATS_DENIED = 1 << 9, /* query-stats: PermissionDenied */
	SAW_STATS = 1 << 10,	   /* query-stats answered with counters */
};

static void hex(const char *s, char *out)
{
	for (; *s; s++, out += 2)
		sprintf(out, "%02x", (uint8_t)*s);
	*out = 0;
}

/* In the child: become nobody with the supplementary group users, try. */
static int as_tenant(const char *dev, const char *ctl, gid_t users, uid_t nobody)
{
	static char raw[1 << 16];
	char want[2 * sizeof(secret) + 1];
	struct json_object *r;
	int seen = 0, fd;

	if (setgroups(1, &users) || setgid(nobody) || setuid(nobody))
		return -1;
	hex(secret, want);
	fd = vcxl_sock_connect(dev);
	if (fd >= 0) {
		seen |= SAW_DEV_OK;
		close(fd);
	}
	fd = ctl_connect(ctl);
	if (fd == -EACCES)
		seen |= SAW_CTL_EACCES;
	if (fd < 0)
		return seen;
	seen |= SAW_CTL_OK;
	r = ctl_req(fd, READ_B, raw, sizeof(raw));
	if (is_error(r, "PermissionDenied"))
		seen |= SAW_READ_DENIED;
	if (strstr(raw, want))
		seen |= SAW_SECRET;
	json_object_put(r);
	r = ctl_req(fd, SET_DEBUG, NULL, 0);
	if (is_error(r, "PermissionDenied"))
		seen |= SAW_LEVEL_DENIED;
	json_object_put(r);
	r = ctl_req(fd, STATUS, raw, sizeof(raw));
	if (h_jget(r, "return.devices.1"))
		seen |= SAW_STATUS;
	for (int i = 0; i < 2; i++) {
		char p[64];

		snprintf(p, sizeof(p), "return.devices.%d.client", i);
		if (h_jget(r, p))
			seen |= SAW_TENANT_ID;
		snprintf(p, sizeof(p), "return.devices.%d.counters", i);
		if (h_jget(r, p))
			seen |= SAW_TENANT_ID;
	}
	if (strstr(raw, "\"uid\"") || strstr(raw, "\"gid\""))
		seen |= SAW_TENANT_ID;
	if (!strcmp(jstr(r, "return.access"), "observer"))
		seen |= SAW_OBSERVER;
	json_object_put(r);
	/* the devices' counters are a tenant's activity: admin only */
	r = ctl_req(fd, STATS, NULL, 0);
	if (is_error(r, "PermissionDenied"))
		seen |= SAW_STATS_DENIED;
	if (h_jget(r, "return.devices"))
		seen |= SAW_STATS;
	json_object_put(r);
	close(fd);
	return seen;
}

/* Fork a tenant child, return what it saw (or -1) */
static int tenant_try(const char *dev, const char *ctl)
{
	struct group *g = getgrnam("users");
	struct passwd *pw = getpwnam("nobody");
	int p[2], seen = -1, st;
	pid_t pid;

	if (!g || !pw || pipe(p))
		return -1;
	pid = fork();
	if (pid == 0) {
		int s = as_tenant(dev, ctl, g->gr_gid, pw->pw_uid);

		if (write(p[1], &s, sizeof(s)) != sizeof(s))
			_exit(1);
		_exit(0);
	}
	close(p[1]);
	if (pid < 0 || read(p[0], &seen, sizeof(seen)) != sizeof(seen))
		seen = -1;
	close(p[0]);
	if (pid > 0)
		waitpid(pid, &st, 0);
	return seen;
}

/* Tenant B (root here, any uid would do) attaches to device 1 and writes its secret */
static struct vcxl_client *tenant_b(const struct harness *h)
{
	struct vcxl_client *c = NULL;
	struct vcxl_client_info info;
	char path[160];

	h_dev_sock(h, 1, path, sizeof(path));
	if (vcxl_client_connect(path, &c) || vcxl_client_get_info(c, &info) ||
	    vcxl_client_region_write(c, info.cxl.region_index, 0, secret, sizeof(secret) - 1)) {
		vcxl_client_close(c);
		return NULL;
	}
	return c;
}

static void test_default_root_only(const char *bin)
{
	const char *args[] = {"--devices", "2", "--socket-mode", "0660", "--socket-group",
			      "users",	   NULL};
	struct harness h = {0};
	char ctl[200], dev[160];
	struct stat st = {0};
	int seen;

	if (!ok(h_start(&h, bin, 0, args) == 0,
		"server --devices 2 --socket-mode 0660 --socket-group users")) {
		h_dump_log(&h);
		return h_cleanup(&h);
	}
	chmod(h.dir, 0755); /* let nobody reach the sockets' directory */
	snprintf(ctl, sizeof(ctl), "%s.ctl", h.sock);
	h_dev_sock(&h, 0, dev, sizeof(dev));
	int got = stat(ctl, &st);
	ok(got == 0 && st.st_uid == 0 && (st.st_mode & 07777) == 0600,
	   "SOCKET.ctl: owner %u, mode 0%o (want root's, 0600)", (unsigned)st.st_uid,
	   (unsigned)(st.st_mode & 07777));
	seen = tenant_try(dev, ctl);
	ok(seen >= 0 && (seen & SAW_DEV_OK), "nobody (group users) connects to its device socket");
	ok(seen >= 0 && (seen & SAW_CTL_EACCES) && !(seen & SAW_CTL_OK),
	   "nobody (group users) cannot connect to SOCKET.ctl: EACCES (saw 0x%x)", seen);
	int fd = ctl_connect(ctl);
	struct json_object *r = fd >= 0 ? ctl_req(fd, STATUS, NULL, 0) : NULL;
	ok(h_jget(r, "return.devices.1") && !strcmp(jstr(r, "return.access"), "admin"),
	   "root still connects and is the admin");
	json_object_put(r);
	if (fd >= 0)
		close(fd);
	is(h_stop(&h), 0, "server exits cleanly");
	h_cleanup(&h);
}

static void test_wide_mode_still_admin_only(const char *bin)
{
	const char *args[] = {
	    "--devices", "2", "--socket-mode", "0660", "--socket-group", "users", "--control-mode",
	    "0666",	 NULL};
	struct harness h = {0};
	char ctl[200], dev[160], raw[8192], want[2 * sizeof(secret) + 1];
	struct vcxl_client *b;
	struct json_object *r;
	struct stat st = {0};
	int seen, fd;

	if (!ok(h_start(&h, bin, 0, args) == 0, "server with --control-mode 0666")) {
		h_dump_log(&h);
		return h_cleanup(&h);
	}
	chmod(h.dir, 0755);
	snprintf(ctl, sizeof(ctl), "%s.ctl", h.sock);
	h_dev_sock(&h, 0, dev, sizeof(dev));
	int got = stat(ctl, &st);
	ok(got == 0 && (st.st_mode & 07777) == 0666, "SOCKET.ctl: mode 0%o",
	   (unsigned)(st.st_mode & 07777));
	b = tenant_b(&h);
	ok(b != NULL, "tenant B attaches to device 1 and writes its secret");
	seen = tenant_try(dev, ctl);
	ok(seen >= 0 && (seen & SAW_CTL_OK), "nobody connects to the 0666 control socket");
	ok(seen >= 0 && (seen & SAW_READ_DENIED) && !(seen & SAW_SECRET),
	   "nobody's read-memory of device 1: PermissionDenied, no bytes (saw 0x%x)", seen);
	ok(seen >= 0 && (seen & SAW_LEVEL_DENIED), "nobody's set-log-level: PermissionDenied");
	ok(seen >= 0 && (seen & SAW_STATUS) && !(seen & SAW_TENANT_ID) && (seen & SAW_OBSERVER),
	   "nobody's query-status: the devices, no tenant's pid/uid/gid or counters, "
	   "\"access\": \"observer\"");
	ok(seen >= 0 && (seen & SAW_STATS_DENIED) && !(seen & SAW_STATS),
	   "nobody's query-stats: PermissionDenied, no counters (saw 0x%x)", seen);

	fd = ctl_connect(ctl);
	hex(secret, want);
	r = fd >= 0 ? ctl_req(fd, READ_B, raw, sizeof(raw)) : NULL;
	ok(h_jget(r, "return.data") && strstr(raw, want), "root's read-memory of device 1 works");
	json_object_put(r);
	r = fd >= 0 ? ctl_req(fd, STATUS, NULL, 0) : NULL;
	ok(json_object_get_int64(h_jget(r, "return.devices.1.client.pid")) == getpid() &&
	       h_jget(r, "return.devices.1.client.uid"),
	   "root's query-status shows tenant B's pid (%lld) and uid",
	   (long long)json_object_get_int64(h_jget(r, "return.devices.1.client.pid")));
	ok(!strcmp(jstr(r, "return.log_level"), "info"),
	   "the log level is still info after nobody's set-log-level");
	json_object_put(r);
	r = fd >= 0 ? ctl_req(fd, SET_DEBUG, NULL, 0) : NULL;
	ok(h_jget(r, "return") && !h_jget(r, "error"), "root's set-log-level works");
	json_object_put(r);
	if (fd >= 0)
		close(fd);
	vcxl_client_close(b);
	is(h_log_count(&h, "control: log level debug"), 1, "set once, by root");
	is(h_stop(&h), 0, "server exits cleanly");
	if (tap_failed)
		h_dump_log(&h);
	h_cleanup(&h);
}

int main(int argc, char **argv)
{
	const char *bin = h_server_bin(argc, argv);

	if (geteuid() != 0 || !getpwnam("nobody") || !getgrnam("users")) {
		printf("1..0 # SKIP needs root, user nobody and group users\n");
		return 0;
	}
	test_default_root_only(bin);
	test_wide_mode_still_admin_only(bin);
	return done();
}
