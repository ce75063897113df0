// SPDX-License-Identifier: BSD-3-Clause
/*
 * vcxl stats [SOCKET | --control PATH] [--json | --prometheus]: the control
 * socket's query-stats, each device's counters across its clients and the
 * current client's share. --prometheus prints Prometheus' text exposition
 * format (for node_exporter's textfile collector); the metric names are in
 * docs/design.md, "Device counters (query-stats, vcxl stats)".
 */
#include <errno.h>
#include <json-c/json.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"

#define KEY_WIDTH 16

static struct json_object *jpath(struct json_object *o, const char *path)
{
	char key[64];

	while (o && *path) {
		size_t n = strcspn(path, ".");

		snprintf(key, sizeof(key), "%.*s", (int)n, path);
		if (!json_object_is_type(o, json_type_object) ||
		    !json_object_object_get_ex(o, key, &o))
			o = NULL;
		path += n + (path[n] == '.');
	}
	return o;
}

static long long jll(struct json_object *o, const char *path)
{
	struct json_object *v = jpath(o, path);

	return v ? (long long)json_object_get_int64(v) : 0;
}

void cli_prom_escape(const char *in, char *out, size_t len)
{
	size_t at = 0;

	if (!len)
		return;
	for (; *in && at + 1 < len; in++) {
		const char *e = *in == '\\'   ? "\\\\"
				: *in == '"'  ? "\\\""
				: *in == '\n' ? "\\n"
					      : NULL;
		size_t n = e ? 2 : 1;

		if (at + n >= len)
			break;
		if (e)
			memcpy(out + at, e, 2);
		else
			out[at] = *in;
		at += n;
	}
	out[at] = 0;
}

static void header(FILE *f, const char *name, const char *type, const char *help)
{
	fprintf(f, "# HELP %s %s\n# TYPE %s %s\n", name, help, name, type);
}

/* What one per-device metric is: a number at path in the device's object (a
 * client's when client: skipped without one), or with label, one sample per
 * key of the object at path. */
struct prom_metric {
	const char *name, *type, *help;
	const char *path;
	const char *label; /* NULL: one sample */
	bool client;
	double scale; /* 0: the integer as it is; else the value times scale */
};

static const struct prom_metric metrics[] = {
    {"vcxl_clients_served_total", "counter", "Clients accepted on the device's socket.",
     "clients_served", NULL, false, 0},
    {"vcxl_client_connected", "gauge", "1 while a client is attached to the device.", "connected",
     NULL, false, 0},
    {"vcxl_handovers_total", "counter",
     "Clients that left and after whom the device was made ready for the next.", "handovers", NULL,
     false, 0},
    {"vcxl_handover_failures_total", "counter",
     "Hand-overs that could not complete at once (the device refused clients meanwhile).",
     "handover_failures", NULL, false, 0},
    {"vcxl_requests_total", "counter", "vfio-user requests served, by command.",
     "total.requests_by_command", "command", false, 0},
    {"vcxl_errors_total", "counter", "Requests answered with an error, by errno.",
     "total.errors_by_errno", "errno", false, 0},
    {"vcxl_protocol_errors_total", "counter",
     "Client messages rejected as malformed (logged as protocol errors).", "total.protocol_errors",
     NULL, false, 0},
    {"vcxl_dma_bytes_total", "counter",
     "Bytes of the device's DMA: read = the device read guest memory, write = the device "
     "wrote guest memory.",
     "total", "direction", false, 0},
    {"vcxl_dma_messages_total", "counter",
     "DMA_READ and DMA_WRITE messages the server sent to its clients.", "total.dma_messages", NULL,
     false, 0},
    {"vcxl_interrupts_total", "counter", "Interrupts the server delivered to its clients.",
     "total.interrupts", NULL, false, 0},
    {"vcxl_resets_total", "counter", "Resets the device applied, by kind.", "total.resets", "kind",
     false, 0},
    {"vcxl_client_connected_seconds", "gauge", "How long the current client has been attached.",
     "client.connected_ms", NULL, true, 0.001},
    {"vcxl_client_requests_total", "counter", "The current client's requests.",
     "client.counters.requests", NULL, true, 0},
    {"vcxl_client_errors_total", "counter", "The current client's requests answered with an error.",
     "client.counters.errors", NULL, true, 0},
    {"vcxl_client_dma_bytes_total", "counter", "The current client's share of the device's DMA.",
     "client.counters", "direction", true, 0},
    {"vcxl_client_interrupts_total", "counter", "Interrupts delivered to the current client.",
     "client.counters.interrupts", NULL, true, 0},
    {"vcxl_client_resets_total", "counter", "Resets since the current client attached, by kind.",
     "client.counters.resets", "kind", true, 0},
};

static void prom_value(FILE *f, struct json_object *v, double scale)
{
	if (json_object_is_type(v, json_type_boolean))
		fprintf(f, "%d\n", json_object_get_boolean(v) ? 1 : 0);
	else if (scale)
		fprintf(f, "%.3f\n", (double)json_object_get_int64(v) * scale);
	else
		fprintf(f, "%lld\n", (long long)json_object_get_int64(v));
}

static void prom_device(FILE *f, const struct prom_metric *m, struct json_object *d)
{
	char dev[32], lv[256];
	struct json_object *v = jpath(d, m->path), *cl;

	snprintf(dev, sizeof(dev), "%lld", jll(d, "index"));
	if (m->client && (!json_object_object_get_ex(d, "client", &cl) || !cl))
		return;
	if (!v)
		return;
	if (!m->label) {
		fprintf(f, "%s{device=\"%s\"} ", m->name, dev);
		prom_value(f, v, m->scale);
		return;
	}
	if (!strcmp(m->label, "direction")) {
		fprintf(f, "%s{device=\"%s\",direction=\"read\"} %lld\n", m->name, dev,
			jll(v, "dma_read_bytes"));
		fprintf(f, "%s{device=\"%s\",direction=\"write\"} %lld\n", m->name, dev,
			jll(v, "dma_write_bytes"));
		return;
	}
	if (!json_object_is_type(v, json_type_object))
		return;
	json_object_object_foreach(v, k, val)
	{
		cli_prom_escape(k, lv, sizeof(lv));
		fprintf(f, "%s{device=\"%s\",%s=\"%s\"} ", m->name, dev, m->label, lv);
		prom_value(f, val, m->scale);
	}
}

int cli_stats_prometheus(struct json_object *ret, FILE *f)
{
	struct json_object *devs;

	if (!ret || !json_object_object_get_ex(ret, "devices", &devs) ||
	    !json_object_is_type(devs, json_type_array))
		return -EINVAL;
	header(f, "vcxl_uptime_seconds", "gauge", "Time since vcxl-server started.");
	fprintf(f, "vcxl_uptime_seconds %.3f\n", (double)jll(ret, "uptime_ms") / 1000);
	/* a metric's samples together, after its HELP and TYPE */
	for (size_t m = 0; m < sizeof(metrics) / sizeof(metrics[0]); m++) {
		header(f, metrics[m].name, metrics[m].type, metrics[m].help);
		for (size_t i = 0; i < json_object_array_length(devs); i++)
			prom_device(f, &metrics[m], json_object_array_get_idx(devs, i));
	}
	return ferror(f) ? -EIO : 0;
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

/* "12 (REGION_READ 10, VERSION 1, ...)" */
static void breakdown(char *buf, size_t len, long long total, struct json_object *by)
{
	size_t at = (size_t)snprintf(buf, len, "%lld", total);
	const char *sep = " (";

	if (by && json_object_is_type(by, json_type_object)) {
		json_object_object_foreach(by, k, v)
		{
			if (at < len)
				at += (size_t)snprintf(buf + at, len - at, "%s%s %lld", sep, k,
						       (long long)json_object_get_int64(v));
			sep = ", ";
		}
	}
	if (*sep == ',' && at < len)
		snprintf(buf + at, len - at, ")");
}

static void print_counters(struct json_object *c)
{
	char buf[1024];

	breakdown(buf, sizeof(buf), jll(c, "requests"), jpath(c, "requests_by_command"));
	kv("  Requests:", "%s", buf);
	breakdown(buf, sizeof(buf), jll(c, "errors"), jpath(c, "errors_by_errno"));
	kv("  Errors:", "%s (protocol errors %lld)", buf, jll(c, "protocol_errors"));
	kv("  DMA:", "device read %lld bytes, wrote %lld bytes (%lld messages)",
	   jll(c, "dma_read_bytes"), jll(c, "dma_write_bytes"), jll(c, "dma_messages"));
	kv("  Interrupts:", "%lld", jll(c, "interrupts"));
	kv("  Resets:",
	   "DEVICE_RESET %lld, FLR %lld, CXL Reset %lld, disconnect %lld keep / %lld reset",
	   jll(c, "resets.device_reset"), jll(c, "resets.flr"), jll(c, "resets.cxl_reset"),
	   jll(c, "resets.disconnect_keep"), jll(c, "resets.disconnect_reset"));
}

static void print_device(struct json_object *d)
{
	struct json_object *cl;

	printf("\n");
	kv("Device:", "%s (%s)", json_object_get_string(jpath(d, "name")),
	   json_object_get_string(jpath(d, "socket")));
	kv("Clients served:", "%lld, hand-overs %lld (failed %lld)", jll(d, "clients_served"),
	   jll(d, "handovers"), jll(d, "handover_failures"));
	printf("Since start:\n");
	print_counters(jpath(d, "total"));
	if (json_object_object_get_ex(d, "client", &cl) && cl) {
		kv("This client:", "pid %lld, uid %lld, attached %lld.%03lld s", jll(cl, "pid"),
		   jll(cl, "uid"), jll(cl, "connected_ms") / 1000, jll(cl, "connected_ms") % 1000);
		print_counters(jpath(cl, "counters"));
	} else {
		kv("This client:", "none attached");
	}
}

int cmd_stats(const char *sock, const char *control, enum cli_stats_format fmt)
{
	char path[CLI_CONTROL_PATH_MAX];
	struct json_object *r, *ret, *devs;
	int rc = 0;

	if (cli_control_query(sock, control, "{\"execute\":\"query-stats\"}", path, sizeof(path),
			      &r, &ret))
		return 1;
	if (fmt == CLI_STATS_JSON) {
		printf("%s\n", json_object_to_json_string_ext(ret, JSON_C_TO_STRING_PRETTY));
	} else if (fmt == CLI_STATS_PROMETHEUS) {
		if (cli_stats_prometheus(ret, stdout))
			rc = fail("%s: the query-stats reply has no devices", path);
	} else {
		kv("Server:", "vcxl-server %s, up %lld s",
		   json_object_get_string(jpath(ret, "version")), jll(ret, "uptime_ms") / 1000);
		if (json_object_object_get_ex(ret, "devices", &devs))
			for (size_t i = 0; i < json_object_array_length(devs); i++)
				print_device(json_object_array_get_idx(devs, i));
	}
	json_object_put(r);
	return rc;
}
