// SPDX-License-Identifier: BSD-3-Clause
/*
 * The control socket (vcxl-server --control PATH): one JSON request per line,
 * one JSON reply per line, in the style of QEMU's QMP:
 *   {"execute": "query-status"}              -> {"return": {...}}
 *   {"execute": "query-status", "arguments": {"device": 0}}
 *   {"execute": "query-devices"}
 *   {"execute": "query-stats"}               -> each device's counters across its
 *                                               clients and the current one's share
 *   {"execute": "query-log-level"}
 *   {"execute": "set-log-level", "arguments": {"level": "debug"}}
 *   {"execute": "read-memory", "arguments": {"device": 0, "offset": 4096, "length": 64}}
 *                                            -> {"return": {..., "data": "<hex>"}}
 * A request that is not JSON, not an object, too long or names an unknown
 * command gets {"error": {"class": ..., "desc": ...}} and the connection stays.
 * Served from the device loop, between device messages, several clients at
 * once, while a VM is attached to the device sockets.
 *
 * One owner of a device at a time: while a device call runs on a worker
 * thread (a reset through run_blocking), nothing here touches that device.
 * query-status answers at once with "busy": true and, for that device, the
 * description of the last query before (nothing read from the device);
 * read-memory waits its turn: the client's requests stay unread, the loop
 * goes on, and a timer looks again every VCXL_CONTROL_RETRY_MS.
 *
 * Who may do what (docs/security.md, "The control socket"): the socket file
 * is root's, mode 0600, unless --control-mode/--control-group widen it; the
 * file decides who connects. Each connection's peer (SO_PEERCRED, taken at
 * accept) is then either
 *   admin:    uid 0 or the server's own (effective) uid: every command;
 *   observer: anyone else the file let in: query-devices, query-log-level
 *             and a redacted query-status (the devices and whether a client
 *             is attached; no client pid/uid/gid, counters, host registers or
 *             guest decoders). query-stats (a tenant's activity),
 *             read-memory and set-log-level are refused
 *             with {"error": {"class": "PermissionDenied"}} in every
 *             configuration, whatever the socket's mode.
 *
 * A client may send requests before it reads the replies (a pipeline of
 * read-memory): the part of a reply the socket does not take waits, and
 * nothing more of that client is read or served until it is sent (EPOLLOUT);
 * one that never reads is closed by the idle timeout.
 *
 * No control client holds the loop: one loop turn serves a client's lines for
 * at most VCXL_CONTROL_TURN_US (at least one line); the rest stay in its
 * buffer, nothing more is read from it, and the next turn (a kick on an
 * eventfd, behind every device fd that is ready) goes on, one line per client
 * in turn. None holds the slots either: a connection with nothing to say for
 * the idle timeout (--control-idle-timeout) is closed, and when all
 * VCXL_CONTROL_CLIENTS slots are taken an administrator's connection takes
 * the longest-idle one (an observer's first); an observer's is refused.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <sys/socket.h>
#include <sys/timerfd.h>
#include <time.h>
#include <unistd.h>

#include "control.h"
#include "vcxl/vfio_user.h"

/* meson passes the project version; a build outside meson (tests/e2e/hw links
 * main.c statically) still compiles */
#ifndef VCXL_VERSION
#define VCXL_VERSION "unknown"
#endif

struct ctl_client {
	int fd;
	char buf[VCXL_CONTROL_LINE_MAX + 1];
	size_t len;
	bool skipping;	 /* inside an overlong line: drop bytes up to its newline */
	bool held;	 /* its next request waits for a busy device (not watched) */
	bool admin;	 /* the peer may run every command (ctl_peer_is_admin) */
	bool backlog;	 /* complete lines wait for the next turn (not watched) */
	char *out;	 /* the part of a reply the socket did not take, watched for */
	size_t out_len;	 /* EPOLLOUT; nothing more is read or served until it is sent */
	int64_t last_ms; /* its last request or bytes: idle since */
	struct vcxl_control *c;
};

struct vcxl_control {
	struct vcxl_loop *loop;
	char *path;
	int lfd;
	int64_t start_ms;
	vcxl_control_describe_fn describe;
	vcxl_control_read_fn read;
	void *opaque;
	struct ctl_client *clients[VCXL_CONTROL_CLIENTS];
	uint64_t requests, errors;
	/* the last description of each device (describe), for a busy device */
	struct json_object **desc;
	unsigned ndesc;
	int tfd; /* held requests are looked at again on this timer */
	bool timer_on;
	int kfd;	 /* eventfd: lines wait for the next turn */
	int ifd;	 /* timerfd: idle connections are looked for */
	int64_t idle_ms; /* a connection idle this long is closed */
	unsigned next;	 /* the backlogged client served first next turn */
};

static int64_t mono_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

static int64_t mono_us(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000000 + ts.tv_nsec / 1000;
}

static const char *const level_names[] = {
    [VCXL_LOG_ERROR] = "error",
    [VCXL_LOG_WARN] = "warn",
    [VCXL_LOG_INFO] = "info",
    [VCXL_LOG_DEBUG] = "debug",
};

static struct json_object *err_reply(const char *cls, const char *desc)
{
	struct json_object *r = json_object_new_object(), *e = json_object_new_object();

	json_object_object_add(e, "class", json_object_new_string(cls));
	json_object_object_add(e, "desc", json_object_new_string(desc));
	json_object_object_add(r, "error", e);
	return r;
}

static struct json_object *ok_reply(struct json_object *ret)
{
	struct json_object *r = json_object_new_object();

	json_object_object_add(r, "return", ret ? ret : json_object_new_object());
	return r;
}

static struct json_object *counters(const struct vcxl_conn_stats *st)
{
	struct json_object *o = json_object_new_object();
	struct json_object *by_cmd = json_object_new_object(), *by_errno = json_object_new_object();
	char name[32];

	json_object_object_add(o, "messages", json_object_new_int64((int64_t)st->msgs));
	for (unsigned i = 0; i < VCXL_STATS_CMDS; i++) {
		if (!st->by_cmd[i])
			continue;
		const char *cmd = vfio_user_command_name(i);
		if (i && strcmp(cmd, "UNKNOWN"))
			json_object_object_add(by_cmd, cmd,
					       json_object_new_int64((int64_t)st->by_cmd[i]));
		else {
			snprintf(name, sizeof(name), "command-%u", i);
			json_object_object_add(by_cmd, i ? name : "other",
					       json_object_new_int64((int64_t)st->by_cmd[i]));
		}
	}
	json_object_object_add(o, "messages_by_command", by_cmd);
	json_object_object_add(o, "errors", json_object_new_int64((int64_t)st->errors));
	for (unsigned i = 0; i < VCXL_STATS_ERRNOS; i++) {
		const char *n = i ? strerrorname_np((int)i) : "other";

		if (!st->by_errno[i])
			continue;
		if (!n)
			snprintf(name, sizeof(name), "errno-%u", i);
		json_object_object_add(by_errno, n ? n : name,
				       json_object_new_int64((int64_t)st->by_errno[i]));
	}
	json_object_object_add(o, "errors_by_errno", by_errno);
	json_object_object_add(o, "protocol_errors",
			       json_object_new_int64((int64_t)st->proto_errors));
	json_object_object_add(o, "dma_messages", json_object_new_int64((int64_t)st->dma_msgs));
	json_object_object_add(
	    o, "dma_bytes",
	    json_object_new_int64((int64_t)(st->dma_read_bytes + st->dma_write_bytes)));
	json_object_object_add(o, "interrupts", json_object_new_int64((int64_t)st->irqs));
	return o;
}

/* The client's migration (docs/migration.md): state, sizes, progress, timing. */
static struct json_object *migration(const struct vcxl_mig_stats *m, int64_t now)
{
	struct json_object *o = json_object_new_object();

	json_object_object_add(o, "state", json_object_new_string(vcxl_mig_state_name(m->state)));
	json_object_object_add(o, "dma_logging", json_object_new_boolean(m->logging));
	json_object_object_add(o, "device_state_bytes",
			       json_object_new_int64((int64_t)m->state_bytes));
	json_object_object_add(o, "bytes_sent", json_object_new_int64((int64_t)m->bytes_sent));
	json_object_object_add(o, "bytes_received",
			       json_object_new_int64((int64_t)m->bytes_received));
	if (m->stop_copy_since_ms)
		json_object_object_add(o, "stop_copy_elapsed_ms",
				       json_object_new_int64(now - m->stop_copy_since_ms));
	json_object_object_add(o, "stop_copy_ms", json_object_new_int64((int64_t)m->stop_copy_ms));
	json_object_object_add(o, "devmem_pages_reported",
			       json_object_new_int64((int64_t)m->devmem_reported));
	json_object_object_add(o, "transitions", json_object_new_int64((int64_t)m->transitions));
	json_object_object_add(o, "failures", json_object_new_int64((int64_t)m->failures));
	json_object_object_add(o, "last_error", json_object_new_string(m->last_error));
	return o;
}

/* What describe adds for device i: read now, or (the device busy) the last
 * description; NULL if there is none. The cache keeps a reference. */
static struct json_object *describe_dev(struct vcxl_control *c, unsigned i, bool busy)
{
	struct json_object *x;

	if (i >= c->ndesc) {
		struct json_object **n = realloc(c->desc, sizeof(*n) * (i + 1));
		if (!n)
			return NULL;
		memset(n + c->ndesc, 0, sizeof(*n) * (i + 1 - c->ndesc));
		c->desc = n;
		c->ndesc = i + 1;
	}
	if (busy)
		return c->desc[i];
	x = json_object_new_object();
	c->describe(c->opaque, i, true, x);
	json_object_put(c->desc[i]);
	c->desc[i] = x;
	return x;
}

/* Device i's status; an observer's omits everything of the tenant's own (its
 * pid/uid/gid, counters, guest decoders, host registers). */
static struct json_object *device_status(struct vcxl_control *c, unsigned i, int64_t now,
					 bool admin)
{
	struct vcxl_loop_dev_info di;
	struct json_object *d = json_object_new_object();

	vcxl_loop_device_info(c->loop, i, &di);
	json_object_object_add(d, "index", json_object_new_int((int)i));
	json_object_object_add(d, "name", json_object_new_string(di.name));
	json_object_object_add(d, "socket", json_object_new_string(di.path ? di.path : ""));
	json_object_object_add(d, "clients_served", json_object_new_int64(di.clients));
	json_object_object_add(d, "connected", json_object_new_boolean(di.connected));
	if (!admin) {
		/* only what is no tenant's, and nothing read from the device */
		if (c->describe)
			c->describe(c->opaque, i, false, d);
		return d;
	}
	if (di.connected) {
		struct json_object *cl = json_object_new_object();

		json_object_object_add(cl, "pid", json_object_new_int(di.pid));
		json_object_object_add(cl, "uid", json_object_new_int(di.uid));
		json_object_object_add(cl, "gid", json_object_new_int(di.gid));
		json_object_object_add(cl, "connected_ms",
				       json_object_new_int64(now - di.since_ms));
		json_object_object_add(d, "client", cl);
		json_object_object_add(d, "counters", counters(&di.st));
		json_object_object_add(d, "migration", migration(&di.st.mig, now));
	} else {
		json_object_object_add(d, "client", NULL);
	}
	json_object_object_add(d, "busy", json_object_new_boolean(di.busy));
	struct json_object *x = c->describe ? describe_dev(c, i, di.busy) : NULL;
	if (x) {
		json_object_object_foreach(x, key, val)
		    json_object_object_add(d, key, json_object_get(val));
	}
	return d;
}

/* The optional "device" argument of a query: false if it is not a device
 * index; *only stays -1 (every device) without it. */
static bool device_arg(struct json_object *args, unsigned n, int *only)
{
	struct json_object *v;
	int64_t k;

	if (!args || !json_object_object_get_ex(args, "device", &v))
		return true;
	k = json_object_get_int64(v);
	if (!json_object_is_type(v, json_type_int) || k < 0 || k >= (int64_t)n)
		return false;
	*only = (int)k;
	return true;
}

static struct json_object *query_status(struct vcxl_control *c, struct json_object *args,
					bool admin)
{
	struct json_object *r = json_object_new_object(), *devs = json_object_new_array();
	int64_t now = mono_ms();
	unsigned n = vcxl_loop_devices(c->loop);
	int only = -1;

	if (!device_arg(args, n, &only)) {
		json_object_put(r);
		json_object_put(devs);
		return NULL;
	}
	json_object_object_add(r, "version", json_object_new_string(VCXL_VERSION));
	json_object_object_add(r, "pid", json_object_new_int((int)getpid()));
	json_object_object_add(r, "uptime_ms", json_object_new_int64(now - c->start_ms));
	json_object_object_add(r, "log_level",
			       json_object_new_string(level_names[vcxl_log_get_level()]));
	json_object_object_add(r, "access", json_object_new_string(admin ? "admin" : "observer"));
	for (unsigned i = 0; i < n; i++)
		if (only < 0 || (unsigned)only == i)
			json_object_array_add(devs, device_status(c, i, now, admin));
	json_object_object_add(r, "devices", devs);
	return r;
}

/* query-stats: each device's counters across its clients ("total") and the
 * current client's share since it connected ("client.counters"). */
static struct json_object *query_stats(struct vcxl_control *c, struct json_object *args)
{
	struct json_object *r = json_object_new_object(), *devs = json_object_new_array();
	int64_t now = mono_ms();
	unsigned n = vcxl_loop_devices(c->loop);
	int only = -1;

	if (!device_arg(args, n, &only)) {
		json_object_put(r);
		json_object_put(devs);
		return NULL;
	}
	json_object_object_add(r, "version", json_object_new_string(VCXL_VERSION));
	json_object_object_add(r, "uptime_ms", json_object_new_int64(now - c->start_ms));
	for (unsigned i = 0; i < n; i++) {
		struct vcxl_loop_dev_info di;
		struct json_object *d;

		if (only >= 0 && (unsigned)only != i)
			continue;
		vcxl_loop_device_info(c->loop, i, &di);
		d = json_object_new_object();
		json_object_object_add(d, "index", json_object_new_int((int)i));
		json_object_object_add(d, "name", json_object_new_string(di.name));
		json_object_object_add(d, "socket", json_object_new_string(di.path ? di.path : ""));
		json_object_object_add(d, "clients_served", json_object_new_int64(di.clients));
		json_object_object_add(d, "connected", json_object_new_boolean(di.connected));
		json_object_object_add(d, "handovers",
				       json_object_new_int64((int64_t)di.handovers));
		json_object_object_add(d, "handover_failures",
				       json_object_new_int64((int64_t)di.handover_failures));
		json_object_object_add(d, "total", vcxl_stats_json(&di.total, &di.resets));
		if (di.connected) {
			struct json_object *cl = json_object_new_object();

			json_object_object_add(cl, "pid", json_object_new_int(di.pid));
			json_object_object_add(cl, "uid", json_object_new_int(di.uid));
			json_object_object_add(cl, "gid", json_object_new_int(di.gid));
			json_object_object_add(cl, "connected_ms",
					       json_object_new_int64(now - di.since_ms));
			json_object_object_add(cl, "counters",
					       vcxl_stats_json(&di.st, &di.client_resets));
			json_object_object_add(d, "client", cl);
		} else {
			json_object_object_add(d, "client", NULL);
		}
		json_object_array_add(devs, d);
	}
	json_object_object_add(r, "devices", devs);
	return r;
}

static struct json_object *query_devices(struct vcxl_control *c)
{
	struct json_object *a = json_object_new_array();

	for (unsigned i = 0; i < vcxl_loop_devices(c->loop); i++) {
		struct vcxl_loop_dev_info di;
		struct json_object *d = json_object_new_object();

		vcxl_loop_device_info(c->loop, i, &di);
		json_object_object_add(d, "index", json_object_new_int((int)i));
		json_object_object_add(d, "name", json_object_new_string(di.name));
		json_object_object_add(d, "socket", json_object_new_string(di.path ? di.path : ""));
		json_object_object_add(d, "connected", json_object_new_boolean(di.connected));
		json_object_array_add(a, d);
	}
	return a;
}

/* An integer argument in [0, max]; false if absent or anything else. */
static bool arg_u64(struct json_object *args, const char *key, uint64_t max, uint64_t *out)
{
	struct json_object *v;
	int64_t k;

	if (!args || !json_object_object_get_ex(args, key, &v) ||
	    !json_object_is_type(v, json_type_int))
		return false;
	k = json_object_get_int64(v);
	if (k < 0 || (uint64_t)k > max)
		return false;
	*out = (uint64_t)k;
	return true;
}

/* read-memory: the host's look at device memory (the CXL region a guest maps),
 * for an operator who cannot read it otherwise (the region is a sealed memfd
 * the server keeps). Admin only: the control socket, never a device socket. */
static struct json_object *read_memory(struct vcxl_control *c, struct json_object *args,
				       const char **cls, const char **desc, bool *wait)
{
	static const char hex[] = "0123456789abcdef";
	uint8_t buf[VCXL_CONTROL_READ_MAX];
	char str[2 * VCXL_CONTROL_READ_MAX + 1];
	uint64_t dev, off, len;
	struct json_object *r;
	int rc;

	if (!c->read) {
		*cls = "CommandNotFound";
		*desc = "read-memory is not served here";
		return NULL;
	}
	if (!arg_u64(args, "device", UINT32_MAX, &dev) || dev >= vcxl_loop_devices(c->loop)) {
		*cls = "DeviceNotFound";
		*desc = "\"device\" names no device";
		return NULL;
	}
	if (!arg_u64(args, "offset", INT64_MAX, &off) ||
	    !arg_u64(args, "length", VCXL_CONTROL_READ_MAX, &len) || !len) {
		*cls = "InvalidParameter";
		*desc = "\"offset\" (bytes into the CXL region) and \"length\" (1 to 4096) "
			"must be integers";
		return NULL;
	}
	struct vcxl_loop_dev_info di;
	if (!vcxl_loop_device_info(c->loop, (unsigned)dev, &di) && di.busy) {
		*wait = true; /* its turn comes when the device call returns */
		*cls = "DeviceBusy";
		*desc = "the device is being reset";
		return NULL;
	}
	rc = c->read(c->opaque, (unsigned)dev, off, buf, (size_t)len);
	if (rc) {
		*cls = "InvalidParameter";
		*desc = rc == -EINVAL || rc == -ERANGE ? "the range is outside the CXL region"
						       : "device memory could not be read";
		return NULL;
	}
	for (uint64_t i = 0; i < len; i++) {
		str[2 * i] = hex[buf[i] >> 4];
		str[2 * i + 1] = hex[buf[i] & 0xf];
	}
	str[2 * len] = 0;
	r = json_object_new_object();
	json_object_object_add(r, "device", json_object_new_int64((int64_t)dev));
	json_object_object_add(r, "offset", json_object_new_int64((int64_t)off));
	json_object_object_add(r, "length", json_object_new_int64((int64_t)len));
	json_object_object_add(r, "data", json_object_new_string(str));
	return r;
}

/* Commands an observer may run; everything else is the administrator's. */
static bool observer_may(const char *cmd)
{
	return !strcmp(cmd, "query-status") || !strcmp(cmd, "query-devices") ||
	       !strcmp(cmd, "query-log-level");
}

/* One request (admin false: an observer's); *wait (when the caller can wait)
 * set instead of a reply when it must wait for a busy device. */
static struct json_object *control_handle(struct vcxl_control *c, bool admin, const char *req,
					  size_t len, bool *wait)
{
	struct json_tokener *tok = json_tokener_new();
	struct json_object *j, *ex, *args = NULL, *lv, *ret;
	enum json_tokener_error jerr;
	const char *cmd;

	c->requests++;
	if (!tok)
		return err_reply("GenericError", "out of memory");
	j = json_tokener_parse_ex(tok, req, (int)len);
	jerr = json_tokener_get_error(tok);
	/* one whole JSON text, whitespace after it allowed */
	if (j && jerr == json_tokener_success) {
		for (size_t k = (size_t)json_tokener_get_parse_end(tok); k < len; k++)
			if (!strchr(" \t\r\n", req[k])) {
				jerr = json_tokener_error_parse_unexpected;
				break;
			}
	}
	json_tokener_free(tok);
	if (!j || jerr != json_tokener_success) {
		json_object_put(j);
		c->errors++;
		return err_reply("JSONError", "the request is not one JSON text");
	}
	if (!json_object_is_type(j, json_type_object) ||
	    !json_object_object_get_ex(j, "execute", &ex) ||
	    !json_object_is_type(ex, json_type_string)) {
		json_object_put(j);
		c->errors++;
		return err_reply("GenericError", "expected {\"execute\": COMMAND}");
	}
	if (json_object_object_get_ex(j, "arguments", &args) &&
	    !json_object_is_type(args, json_type_object)) {
		json_object_put(j);
		c->errors++;
		return err_reply("GenericError", "\"arguments\" must be an object");
	}
	cmd = json_object_get_string(ex);
	if (!admin && !observer_may(cmd)) {
		char desc[160];

		snprintf(desc, sizeof(desc),
			 "'%.64s' is the administrator's (uid 0 or the server's uid)", cmd);
		json_object_put(j);
		c->errors++;
		return err_reply("PermissionDenied", desc);
	}
	if (!strcmp(cmd, "query-status")) {
		ret = query_status(c, args, admin);
		if (!ret) {
			json_object_put(j);
			c->errors++;
			return err_reply("DeviceNotFound", "\"device\" names no device");
		}
	} else if (!strcmp(cmd, "query-stats")) {
		ret = query_stats(c, args);
		if (!ret) {
			json_object_put(j);
			c->errors++;
			return err_reply("DeviceNotFound", "\"device\" names no device");
		}
	} else if (!strcmp(cmd, "query-devices")) {
		ret = query_devices(c);
	} else if (!strcmp(cmd, "query-log-level")) {
		ret = json_object_new_object();
		json_object_object_add(ret, "level",
				       json_object_new_string(level_names[vcxl_log_get_level()]));
	} else if (!strcmp(cmd, "set-log-level")) {
		enum vcxl_log_level lvl;

		if (!args || !json_object_object_get_ex(args, "level", &lv) ||
		    !json_object_is_type(lv, json_type_string) ||
		    vcxl_log_parse_level(json_object_get_string(lv), &lvl)) {
			json_object_put(j);
			c->errors++;
			return err_reply("InvalidParameter",
					 "\"level\" must be error, warn, info or debug");
		}
		vcxl_log_set_level(lvl);
		vcxl_log(VCXL_LOG_INFO, "control: log level %s", level_names[lvl]);
		ret = NULL;
	} else if (!strcmp(cmd, "read-memory")) {
		const char *cls = "GenericError", *desc = "";
		bool busy = false;

		ret = read_memory(c, args, &cls, &desc, &busy);
		if (!ret && busy && wait) {
			json_object_put(j);
			c->requests--; /* counted when it is served */
			*wait = true;
			return NULL;
		}
		if (!ret) {
			json_object_put(j);
			c->errors++;
			return err_reply(cls, desc);
		}
	} else {
		char desc[160];

		snprintf(desc, sizeof(desc), "unknown command '%.64s'", cmd);
		json_object_put(j);
		c->errors++;
		return err_reply("CommandNotFound", desc);
	}
	json_object_put(j);
	return ok_reply(ret);
}

struct json_object *vcxl_control_handle(struct vcxl_control *c, bool admin, const char *req,
					size_t len)
{
	return control_handle(c, admin, req, len, NULL);
}

static void client_close(struct ctl_client *k)
{
	struct vcxl_control *c = k->c;

	for (unsigned i = 0; i < VCXL_CONTROL_CLIENTS; i++)
		if (c->clients[i] == k)
			c->clients[i] = NULL;
	vcxl_loop_unwatch(c->loop, k->fd);
	close(k->fd);
	free(k->out);
	free(k);
}

/* Send what the socket takes now of p[*off, n): 0 (all sent), 1 (the rest
 * waits for EPOLLOUT), -EIO. */
static int client_push(struct ctl_client *k, const char *p, size_t n, size_t *off)
{
	while (*off < n) {
		ssize_t w = send(k->fd, p + *off, n - *off, MSG_NOSIGNAL | MSG_DONTWAIT);

		if (w < 0 && errno == EINTR)
			continue;
		if (w < 0 && (errno == EAGAIN || errno == EWOULDBLOCK))
			return 1;
		if (w <= 0)
			return -EIO;
		*off += (size_t)w;
	}
	return 0;
}

/* One reply line. A client that sends requests faster than it reads the
 * replies (a pipeline of read-memory) is not dropped: the part the socket
 * did not take waits in k->out, and nothing more of the client is read or
 * served until it is sent (client_out_event); a client that never reads is
 * closed by the idle timeout. 0, or -EIO: close it. */
static int client_send(struct ctl_client *k, struct json_object *r)
{
	size_t len, off = 0;
	const char *s = json_object_to_json_string_length(r, JSON_C_TO_STRING_PLAIN, &len);
	char *line = malloc(len + 1);
	int rc;

	if (line) {
		memcpy(line, s, len);
		line[len] = '\n';
	}
	json_object_put(r);
	if (!line)
		return -EIO;
	rc = client_push(k, line, len + 1, &off);
	if (rc == 1) {
		memmove(line, line + off, len + 1 - off);
		k->out = line;
		k->out_len = len + 1 - off;
		return 0;
	}
	free(line);
	return rc;
}

static void timer_arm(struct vcxl_control *c, bool on)
{
	struct itimerspec it = {0};

	if (on == c->timer_on || c->tfd < 0)
		return;
	if (on)
		it.it_interval.tv_nsec = it.it_value.tv_nsec = VCXL_CONTROL_RETRY_MS * 1000000L;
	timerfd_settime(c->tfd, 0, &it, NULL);
	c->timer_on = on;
}

static void control_kick(struct vcxl_control *c)
{
	uint64_t one = 1;

	if (write(c->kfd, &one, sizeof(one)) < 0 && errno != EAGAIN)
		vcxl_log(VCXL_LOG_ERROR, "control: eventfd: %s", strerror(errno));
}

/* Lines are left after this turn: nothing more is read from the client until
 * they are served, on the next turns (kick_event). */
static void client_yield(struct ctl_client *k)
{
	k->backlog = true;
	vcxl_loop_unwatch(k->c->loop, k->fd);
	control_kick(k->c);
}

/* The next request waits for a busy device: nothing more is read from the
 * client until it is served. */
static void client_hold(struct ctl_client *k)
{
	k->held = true;
	vcxl_loop_unwatch(k->c->loop, k->fd);
	timer_arm(k->c, true);
}

static void client_out_event(void *opaque, uint32_t ev);
static void client_event(void *opaque, uint32_t ev);

/* A reply waits in k->out: watch for room to send it, nothing else. */
static int client_wait_out(struct ctl_client *k)
{
	vcxl_loop_unwatch(k->c->loop, k->fd);
	if (vcxl_loop_watch(k->c->loop, k->fd, EPOLLOUT, client_out_event, k)) {
		client_close(k);
		return -1;
	}
	return 3;
}

/* Serve the complete lines received, in order, until end_us (at least one):
 * 0 when none is left, 1 when one waits (client_hold), 2 when lines are left
 * for the next turn, 3 when a reply waits to be sent (client_wait_out), -1
 * when the client was closed. */
static int client_lines(struct ctl_client *k, int64_t end_us)
{
	for (unsigned served = 0;; served++) {
		char *nl = memchr(k->buf, '\n', k->len);
		size_t line;

		if (!nl) {
			if (k->len < sizeof(k->buf) - 1)
				return 0;
			/* no newline in a full buffer: an overlong request */
			if (!k->skipping &&
			    client_send(k, err_reply("GenericError", "request line too long"))) {
				client_close(k);
				return -1;
			}
			k->skipping = true;
			k->len = 0;
			return k->out ? client_wait_out(k) : 0;
		}
		if (served && mono_us() >= end_us)
			return 2;
		k->last_ms = mono_ms();
		line = (size_t)(nl - k->buf);
		if (k->skipping) {
			k->skipping = false;
		} else if (line) {
			bool wait = false;
			struct json_object *r = control_handle(k->c, k->admin, k->buf, line, &wait);

			if (wait) {
				client_hold(k);
				return 1;
			}
			if (client_send(k, r)) {
				client_close(k);
				return -1;
			}
		}
		memmove(k->buf, nl + 1, k->len - line - 1);
		k->len -= line + 1;
		if (k->out)
			return client_wait_out(k);
	}
}

/* Where a client goes after client_lines (not watched for EPOLLIN then). */
static void client_after_lines(struct ctl_client *k, int rc)
{
	if (rc == 2)
		client_yield(k);
	else if (rc == 0 && vcxl_loop_watch(k->c->loop, k->fd, EPOLLIN, client_event, k))
		client_close(k);
}

/* Room on the socket of a client whose reply waits: send it, then serve the
 * lines it sent meanwhile and read it again. */
static void client_out_event(void *opaque, uint32_t ev)
{
	struct ctl_client *k = opaque;
	size_t off = 0;
	int rc = client_push(k, k->out, k->out_len, &off);

	if (rc < 0) {
		client_close(k);
		return;
	}
	k->last_ms = mono_ms();
	memmove(k->out, k->out + off, k->out_len - off);
	k->out_len -= off;
	if (rc == 1)
		return;
	free(k->out);
	k->out = NULL;
	vcxl_loop_unwatch(k->c->loop, k->fd);
	rc = client_lines(k, mono_us() + VCXL_CONTROL_TURN_US);
	if (rc >= 0)
		client_after_lines(k, rc);
}

static void client_event(void *opaque, uint32_t ev)
{
	struct ctl_client *k = opaque;
	ssize_t n;

	n = recv(k->fd, k->buf + k->len, sizeof(k->buf) - 1 - k->len, MSG_DONTWAIT);
	if (n < 0 && (errno == EAGAIN || errno == EINTR))
		return;
	if (n <= 0) {
		client_close(k);
		return;
	}
	k->len += (size_t)n;
	k->last_ms = mono_ms();
	if (client_lines(k, mono_us() + VCXL_CONTROL_TURN_US) == 2)
		client_yield(k);
}

/* The next turn: one line of each client with lines left, in turn, until the
 * turn's time is used; a client with none left is read again. */
static void kick_event(void *opaque, uint32_t ev)
{
	struct vcxl_control *c = opaque;
	int64_t end = mono_us() + VCXL_CONTROL_TURN_US;
	bool again = false;
	uint64_t v;
	unsigned n;

	if (read(c->kfd, &v, sizeof(v)) < 0 && errno != EAGAIN)
		return;
	for (n = 0; n < VCXL_CONTROL_CLIENTS; n++) {
		unsigned i = (c->next + n) % VCXL_CONTROL_CLIENTS;
		struct ctl_client *k = c->clients[i];
		int rc;

		if (!k || !k->backlog)
			continue;
		if (n && mono_us() >= end) {
			c->next = i;
			again = true;
			break;
		}
		k->backlog = false;
		rc = client_lines(k, 0);
		if (rc == 2) {
			k->backlog = true;
			again = true;
		} else if (rc == 0) {
			client_after_lines(k, rc);
		}
	}
	if (n == VCXL_CONTROL_CLIENTS)
		c->next = (c->next + 1) % VCXL_CONTROL_CLIENTS;
	if (again)
		control_kick(c);
}

/* A held request's turn: served if its device is free, and the client read
 * again once nothing of it waits. */
static void timer_event(void *opaque, uint32_t ev)
{
	struct vcxl_control *c = opaque;
	uint64_t ticks;
	bool held = false;

	if (read(c->tfd, &ticks, sizeof(ticks)) < 0 && errno != EAGAIN)
		return;
	for (unsigned i = 0; i < VCXL_CONTROL_CLIENTS; i++) {
		struct ctl_client *k = c->clients[i];

		if (!k || !k->held)
			continue;
		k->held = false;
		int rc = client_lines(k, mono_us() + VCXL_CONTROL_TURN_US);
		if (rc == 1)
			held = true;
		else if (rc >= 0)
			client_after_lines(k, rc);
	}
	if (!held)
		timer_arm(c, false);
}

/* The peer is the administrator: root, or the uid the server runs as (after
 * --user, that user). A peer whose credentials cannot be read is not. */
static bool ctl_peer_is_admin(int fd)
{
	struct ucred cr;
	socklen_t len = sizeof(cr);

	if (getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &cr, &len) || len != sizeof(cr))
		return false;
	return cr.uid == 0 || cr.uid == geteuid();
}

/* Every slot is taken and an administrator connects: the longest-idle
 * connection gives its slot up (an observer's first). The slot's index. */
static unsigned evict_for_admin(struct vcxl_control *c)
{
	unsigned best = 0;

	for (unsigned i = 1; i < VCXL_CONTROL_CLIENTS; i++) {
		const struct ctl_client *a = c->clients[i], *b = c->clients[best];

		if (a->admin != b->admin ? !a->admin : a->last_ms < b->last_ms)
			best = i;
	}
	vcxl_log(VCXL_LOG_INFO,
		 "control: %u clients already: the longest idle (%s) makes room "
		 "for the administrator",
		 VCXL_CONTROL_CLIENTS,
		 c->clients[best]->admin ? "an administrator's" : "an observer's");
	client_send(c->clients[best],
		    err_reply("GenericError", "closed: the slot went to the administrator"));
	client_close(c->clients[best]);
	return best;
}

/* Look for idle connections every quarter of the timeout (at most 1 s) */
static void idle_timer_arm(struct vcxl_control *c)
{
	int64_t ms = c->idle_ms / 4 < 1000 ? c->idle_ms / 4 : 1000;
	struct itimerspec it = {0};

	if (ms < 10)
		ms = 10;
	it.it_interval.tv_sec = it.it_value.tv_sec = ms / 1000;
	it.it_interval.tv_nsec = it.it_value.tv_nsec = (ms % 1000) * 1000000L;
	timerfd_settime(c->ifd, 0, &it, NULL);
}

/* Close the connections idle for the timeout. A connection whose lines wait
 * (backlog) or that waits for a busy device is not idle. */
static void idle_event(void *opaque, uint32_t ev)
{
	struct vcxl_control *c = opaque;
	int64_t now = mono_ms();
	uint64_t ticks;

	if (read(c->ifd, &ticks, sizeof(ticks)) < 0 && errno != EAGAIN)
		return;
	for (unsigned i = 0; i < VCXL_CONTROL_CLIENTS; i++) {
		struct ctl_client *k = c->clients[i];

		if (!k || k->backlog || k->held || now - k->last_ms < c->idle_ms)
			continue;
		vcxl_log(VCXL_LOG_INFO, "control: a connection idle for %lld ms closed",
			 (long long)(now - k->last_ms));
		client_close(k);
	}
}

void vcxl_control_set_idle_timeout(struct vcxl_control *c, int64_t ms)
{
	c->idle_ms = ms > 0 ? ms : VCXL_CONTROL_IDLE_MS;
	idle_timer_arm(c);
}

static void listen_event(void *opaque, uint32_t ev)
{
	struct vcxl_control *c = opaque;
	int fd = vcxl_sock_accept(c->lfd);
	unsigned slot = 0;
	struct ctl_client *k;

	bool admin;

	if (fd < 0)
		return;
	admin = ctl_peer_is_admin(fd);
	while (slot < VCXL_CONTROL_CLIENTS && c->clients[slot])
		slot++;
	if (slot == VCXL_CONTROL_CLIENTS && admin)
		slot = evict_for_admin(c);
	k = slot < VCXL_CONTROL_CLIENTS ? calloc(1, sizeof(*k)) : NULL;
	if (!k) {
		vcxl_log(VCXL_LOG_WARN, "control: %u clients already, refusing one",
			 VCXL_CONTROL_CLIENTS);
		close(fd);
		return;
	}
	k->fd = fd;
	k->c = c;
	k->admin = admin;
	k->last_ms = mono_ms();
	idle_timer_arm(c);
	if (vcxl_loop_watch(c->loop, fd, EPOLLIN, client_event, k)) {
		close(fd);
		free(k);
		return;
	}
	c->clients[slot] = k;
}

void vcxl_control_set_reader(struct vcxl_control *c, vcxl_control_read_fn fn)
{
	c->read = fn;
}

static void timer_close(struct vcxl_control *c)
{
	vcxl_loop_unwatch(c->loop, c->tfd);
	close(c->tfd);
	if (c->kfd >= 0) {
		vcxl_loop_unwatch(c->loop, c->kfd);
		close(c->kfd);
	}
	if (c->ifd >= 0) {
		vcxl_loop_unwatch(c->loop, c->ifd);
		close(c->ifd);
	}
}

int vcxl_control_create(struct vcxl_loop *l, const char *path, int mode, gid_t gid,
			vcxl_control_describe_fn fn, void *opaque, struct vcxl_control **out)
{
	struct vcxl_control *c = calloc(1, sizeof(*c));
	int rc;

	if (!c)
		return -ENOMEM;
	c->loop = l;
	c->describe = fn;
	c->opaque = opaque;
	c->start_ms = mono_ms();
	c->idle_ms = VCXL_CONTROL_IDLE_MS;
	c->tfd = timerfd_create(CLOCK_MONOTONIC, TFD_NONBLOCK | TFD_CLOEXEC);
	c->kfd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
	c->ifd = timerfd_create(CLOCK_MONOTONIC, TFD_NONBLOCK | TFD_CLOEXEC);
	if (c->tfd < 0 || c->kfd < 0 || c->ifd < 0 ||
	    vcxl_loop_watch(l, c->tfd, EPOLLIN, timer_event, c) ||
	    vcxl_loop_watch(l, c->kfd, EPOLLIN, kick_event, c) ||
	    vcxl_loop_watch(l, c->ifd, EPOLLIN, idle_event, c)) {
		rc = c->tfd < 0 || c->kfd < 0 || c->ifd < 0 ? -errno : -ENOMEM;
		if (c->tfd >= 0)
			timer_close(c);
		else {
			if (c->kfd >= 0)
				close(c->kfd);
			if (c->ifd >= 0)
				close(c->ifd);
		}
		free(c);
		return rc;
	}
	c->path = strdup(path);
	c->lfd = c->path ? vcxl_sock_listen_perm(path, VCXL_CONTROL_CLIENTS, mode, gid) : -ENOMEM;
	if (c->lfd < 0) {
		rc = c->lfd;
		timer_close(c);
		free(c->path);
		free(c);
		return rc;
	}
	rc = vcxl_loop_watch(l, c->lfd, EPOLLIN, listen_event, c);
	if (rc) {
		close(c->lfd);
		unlink(c->path);
		timer_close(c);
		free(c->path);
		free(c);
		return rc;
	}
	vcxl_log(VCXL_LOG_INFO, "control socket %s (mode 0%o%s)", path, (unsigned)mode,
		 gid != (gid_t)-1 ? ", --control-group" : "");
	*out = c;
	return 0;
}

void vcxl_control_destroy(struct vcxl_control *c)
{
	if (!c)
		return;
	for (unsigned i = 0; i < VCXL_CONTROL_CLIENTS; i++)
		if (c->clients[i])
			client_close(c->clients[i]);
	vcxl_loop_unwatch(c->loop, c->lfd);
	close(c->lfd);
	unlink(c->path);
	timer_close(c);
	for (unsigned i = 0; i < c->ndesc; i++)
		json_object_put(c->desc[i]);
	free(c->desc);
	free(c->path);
	free(c);
}
