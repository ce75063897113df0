// SPDX-License-Identifier: BSD-3-Clause
/*
 * vcxl status [SOCKET | --control PATH] [--json]: asks vcxl-server's control
 * socket (vcxl-server --control, default SOCKET.ctl) instead of the device
 * socket, so it works while a VM is attached. Text like virsh dominfo.
 */
#include <errno.h>
#include <json-c/json.h>
#include <poll.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include "cli.h"
#include "cxl/cxl_regs.h"

#define STATUS_TIMEOUT_MS 5000
#define STATUS_REPLY_MAX  (1 << 20)
#define KEY_WIDTH	  16

/* SOCKET.ctl; for a device socket PATH.N of a multi-device server, PATH.ctl. */
int cli_control_path(const char *sock, char *out, size_t len)
{
	struct stat st;
	const char *dot = strrchr(sock, '.');
	size_t n;

	if ((size_t)snprintf(out, len, "%s.ctl", sock) >= len)
		return -ENAMETOOLONG;
	if (stat(out, &st) == 0 || !dot || !dot[1] ||
	    strspn(dot + 1, "0123456789") != strlen(dot + 1))
		return 0;
	n = (size_t)(dot - sock);
	if ((size_t)snprintf(out, len, "%.*s.ctl", (int)n, sock) >= len)
		return -ENAMETOOLONG;
	return 0;
}

/* One request, one reply line. */
static int control_call(const char *path, const char *req, char **reply)
{
	struct sockaddr_un sa = {.sun_family = AF_UNIX};
	size_t cap = 4096, len = 0;
	char *buf;
	int fd, rc = 0;

	if (strlen(path) >= sizeof(sa.sun_path))
		return -ENAMETOOLONG;
	strcpy(sa.sun_path, path);
	fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (fd < 0)
		return -errno;
	if (connect(fd, (struct sockaddr *)&sa, sizeof(sa)) < 0 ||
	    send(fd, req, strlen(req), MSG_NOSIGNAL) < 0 || send(fd, "\n", 1, MSG_NOSIGNAL) < 0) {
		rc = -errno;
		close(fd);
		return rc;
	}
	buf = malloc(cap);
	while (buf && !rc) {
		struct pollfd p = {.fd = fd, .events = POLLIN};
		ssize_t n;

		if (poll(&p, 1, STATUS_TIMEOUT_MS) <= 0) {
			rc = -ETIMEDOUT;
			break;
		}
		if (len + 1 >= cap) {
			char *nb = cap < STATUS_REPLY_MAX ? realloc(buf, cap * 2) : NULL;

			if (!nb) {
				rc = -E2BIG;
				break;
			}
			buf = nb;
			cap *= 2;
		}
		n = recv(fd, buf + len, cap - 1 - len, 0);
		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0) {
			rc = n < 0 ? -errno : -ECONNRESET;
			break;
		}
		len += (size_t)n;
		if (memchr(buf + len - (size_t)n, '\n', (size_t)n))
			break;
	}
	close(fd);
	if (!buf)
		return -ENOMEM;
	if (rc) {
		free(buf);
		return rc;
	}
	buf[len] = 0;
	*reply = buf;
	return 0;
}

static int64_t jint(struct json_object *o, const char *key)
{
	struct json_object *v;

	return json_object_object_get_ex(o, key, &v) ? json_object_get_int64(v) : 0;
}

static const char *jstr(struct json_object *o, const char *key)
{
	struct json_object *v;

	return json_object_object_get_ex(o, key, &v) && json_object_is_type(v, json_type_string)
		   ? json_object_get_string(v)
		   : "";
}

static void kv(const char *key, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void kv(const char *key, const char *fmt, ...)
{
	va_list ap;

	printf("%-*s", KEY_WIDTH, key);
	va_start(ap, fmt);
	vprintf(fmt, ap);
	va_end(ap);
	printf("\n");
}

static void duration(char *buf, size_t len, int64_t ms)
{
	int64_t s = ms / 1000;

	if (s >= 3600)
		snprintf(buf, len, "%lldh %lldm %llds", (long long)(s / 3600),
			 (long long)(s / 60 % 60), (long long)(s % 60));
	else if (s >= 60)
		snprintf(buf, len, "%lldm %llds", (long long)(s / 60), (long long)(s % 60));
	else
		snprintf(buf, len, "%lld.%03llds", (long long)s, (long long)(ms % 1000));
}

/* "12 (REGION_READ 10, VERSION 1, ...)" */
static void breakdown(char *buf, size_t len, int64_t total, struct json_object *by)
{
	size_t at = (size_t)snprintf(buf, len, "%lld", (long long)total);
	const char *sep = " (";

	if (!by)
		return;
	json_object_object_foreach(by, k, v)
	{
		if (at < len)
			at += (size_t)snprintf(buf + at, len - at, "%s%s %lld", sep, k,
					       (long long)json_object_get_int64(v));
		sep = ", ";
	}
	if (*sep == ',' && at < len)
		snprintf(buf + at, len - at, ")");
}

static void print_device(struct json_object *d)
{
	struct json_object *cl, *cnt, *h, *g, *rs, *by, *mg;
	char buf[1024], t[64];

	printf("\n");
	kv("Device:", "%s", jstr(d, "name"));
	kv("Socket:", "%s", jstr(d, "socket"));
	if (!strcmp(jstr(d, "backend"), "vfio"))
		kv("Backend:", "vfio %s", jstr(d, "device"));
	else
		kv("Model:", "%s %s, %lld MiB", jstr(d, "model"), jstr(d, "id"),
		   (long long)(jint(d, "mem_size") >> 20));
	if (json_object_object_get_ex(d, "client", &cl) && cl) {
		duration(t, sizeof(t), jint(cl, "connected_ms"));
		kv("Client:", "pid %lld, uid %lld, gid %lld, attached %s",
		   (long long)jint(cl, "pid"), (long long)jint(cl, "uid"),
		   (long long)jint(cl, "gid"), t);
	} else if (json_object_object_get_ex(d, "connected", &cl) && json_object_get_boolean(cl)) {
		/* an observer's view (not root, not the server's uid): no details */
		kv("Client:", "attached (details are the administrator's)");
	} else {
		kv("Client:", "none (%lld served)", (long long)jint(d, "clients_served"));
	}
	if (json_object_object_get_ex(d, "host_region", &h))
		kv("Host region:", "decoder %lld, HPA 0x%llx-0x%llx (%lld MiB), DPA 0x%llx%s",
		   (long long)jint(h, "decoder"), (unsigned long long)jint(h, "hpa"),
		   (unsigned long long)(jint(h, "hpa") + jint(h, "size") - 1),
		   (long long)(jint(h, "size") >> 20), (unsigned long long)jint(h, "dpa"),
		   json_object_object_get_ex(h, "firmware", &by) && json_object_get_boolean(by)
		       ? ", firmware-committed"
		       : "");
	/* the physical state, read through the backend by the server */
	struct json_object *regs, *dec, *win;
	if (json_object_object_get_ex(d, "host_region", &h) &&
	    json_object_object_get_ex(h, "registers", &regs) && regs &&
	    json_object_object_get_ex(regs, "decoder", &dec)) {
		char w[96] = "";
		if (json_object_object_get_ex(regs, "engine_dpa_window", &win))
			snprintf(w, sizeof(w), ", engine DPA window 0x%llx+0x%llx",
				 (unsigned long long)jint(win, "base"),
				 (unsigned long long)jint(win, "size"));
		kv("Host registers:", "decoder %s at 0x%llx (%lld MiB), Mem_Enable %s%s",
		   json_object_object_get_ex(dec, "committed", &by) && json_object_get_boolean(by)
		       ? "committed"
		       : "NOT committed",
		   (unsigned long long)jint(dec, "base"), (long long)(jint(dec, "size") >> 20),
		   jint(regs, "dvsec_ctrl") & CXL_DVSEC_CTRL_MEM_EN ? "on" : "OFF", w);
	}
	if (json_object_object_get_ex(d, "guest_decoders", &g)) {
		size_t n = json_object_array_length(g);

		if (!n)
			kv("Guest decoders:", "none committed");
		for (size_t i = 0; i < n; i++) {
			struct json_object *e = json_object_array_get_idx(g, i);

			kv(i ? "" : "Guest decoders:",
			   "%lld: GPA 0x%llx-0x%llx -> region offset 0x%llx (%lld MiB)",
			   (long long)jint(e, "decoder"), (unsigned long long)jint(e, "gpa"),
			   (unsigned long long)(jint(e, "gpa") + jint(e, "size") - 1),
			   (unsigned long long)jint(e, "region_offset"),
			   (long long)(jint(e, "size") >> 20));
		}
	}
	if (json_object_object_get_ex(d, "counters", &cnt)) {
		json_object_object_get_ex(cnt, "messages_by_command", &by);
		breakdown(buf, sizeof(buf), jint(cnt, "messages"), by);
		kv("Messages:", "%s", buf);
		json_object_object_get_ex(cnt, "errors_by_errno", &by);
		breakdown(buf, sizeof(buf), jint(cnt, "errors"), by);
		kv("Errors:", "%s (protocol errors %lld)", buf,
		   (long long)jint(cnt, "protocol_errors"));
		kv("DMA:", "%lld bytes, %lld messages", (long long)jint(cnt, "dma_bytes"),
		   (long long)jint(cnt, "dma_messages"));
		kv("Interrupts:", "%lld", (long long)jint(cnt, "interrupts"));
	}
	if (json_object_object_get_ex(d, "migration", &mg)) {
		const char *st = jstr(mg, "state"), *why = jstr(mg, "last_error");
		long long size = (long long)jint(mg, "device_state_bytes");
		long long sent = (long long)jint(mg, "bytes_sent");
		long long recv = (long long)jint(mg, "bytes_received");
		struct json_object *el;

		if (!strcmp(st, "stop-copy"))
			kv("Migration:",
			   "stop-copy, %lld of %lld bytes sent (%lld%%), %lld ms so far", sent,
			   size, size ? sent * 100 / size : 100,
			   json_object_object_get_ex(mg, "stop_copy_elapsed_ms", &el)
			       ? (long long)json_object_get_int64(el)
			       : 0);
		else if (!strcmp(st, "resuming"))
			kv("Migration:", "resuming, %lld bytes received", recv);
		else
			kv("Migration:",
			   "%s%s; last device state %lld bytes, sent %lld, received "
			   "%lld, stop-copy %lld ms",
			   st,
			   json_object_object_get_ex(mg, "dma_logging", &el) &&
				   json_object_get_boolean(el)
			       ? ", DMA logging on"
			       : "",
			   size, sent, recv, (long long)jint(mg, "stop_copy_ms"));
		if (why && *why)
			kv("", "last failure (%lld): %s", (long long)jint(mg, "failures"), why);
	}
	if (json_object_object_get_ex(d, "resets", &rs))
		kv("Resets:",
		   "FLR %lld, CXL Reset %lld, DEVICE_RESET %lld, disconnect %lld (device %lld, "
		   "host "
		   "region restored %lld)",
		   (long long)jint(rs, "flr"), (long long)jint(rs, "cxl_reset"),
		   (long long)jint(rs, "device_reset"), (long long)jint(rs, "disconnect"),
		   (long long)jint(rs, "device"), (long long)jint(rs, "region_restores"));
}

int cli_control_query(const char *sock, const char *control, const char *req, char *path,
		      size_t pathlen, struct json_object **root, struct json_object **ret)
{
	struct json_object *r, *err;
	char *reply = NULL;
	int rc;

	if (control)
		snprintf(path, pathlen, "%s", control);
	else if (cli_control_path(sock, path, pathlen))
		return fail("%s: path too long", sock);
	rc = control_call(path, req, &reply);
	if (rc)
		return fail("%s: %s%s", path, strerror(-rc),
			    rc == -ENOENT ? " (is vcxl-server running with its control socket?)"
					  : "");
	r = json_tokener_parse(reply);
	free(reply);
	if (!r)
		return fail("%s: the reply is not JSON", path);
	if (json_object_object_get_ex(r, "error", &err)) {
		rc = fail("%s: %s", path, jstr(err, "desc"));
		json_object_put(r);
		return rc;
	}
	if (!json_object_object_get_ex(r, "return", ret)) {
		json_object_put(r);
		return fail("%s: no \"return\" in the reply", path);
	}
	*root = r;
	return 0;
}

int cmd_status(const char *sock, const char *control, bool json)
{
	char path[CLI_CONTROL_PATH_MAX], t[64];
	struct json_object *r, *ret, *devs;

	if (cli_control_query(sock, control, "{\"execute\":\"query-status\"}", path, sizeof(path),
			      &r, &ret))
		return 1;
	if (json) {
		printf("%s\n", json_object_to_json_string_ext(ret, JSON_C_TO_STRING_PRETTY));
		json_object_put(r);
		return 0;
	}
	duration(t, sizeof(t), jint(ret, "uptime_ms"));
	kv("Server:", "vcxl-server %s, pid %lld", jstr(ret, "version"),
	   (long long)jint(ret, "pid"));
	kv("Control:", "%s", path);
	kv("Uptime:", "%s", t);
	kv("Log level:", "%s", jstr(ret, "log_level"));
	if (json_object_object_get_ex(ret, "devices", &devs)) {
		kv("Devices:", "%zu", json_object_array_length(devs));
		for (size_t i = 0; i < json_object_array_length(devs); i++)
			print_device(json_object_array_get_idx(devs, i));
	}
	json_object_put(r);
	return 0;
}
