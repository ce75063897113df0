// SPDX-License-Identifier: BSD-3-Clause
/*
 * A device's lifetime counters (src/server/stats.c): a finished client's
 * counters added into the device's, the current client's share of the
 * device's resets, the JSON query-stats serves; and `vcxl stats
 * --prometheus` (src/tools/cmd_stats.c): Prometheus' text exposition format
 * from that JSON, every line a comment or `name{labels} value`, a HELP and a
 * TYPE per metric before its samples, label values escaped.
 */
#include <errno.h>
#include <json-c/json.h>
#include <stdio.h>
#include <string.h>

#include "../src/server/server.h"
#include "../src/tools/cli.h"
#include "tap.h"

static struct vcxl_conn_stats mk(uint64_t base)
{
	struct vcxl_conn_stats s;

	memset(&s, 0, sizeof(s));
	s.msgs = base;
	s.errors = base / 2;
	s.proto_errors = 1;
	s.dma_msgs = 3;
	s.irqs = base + 7;
	s.dma_read_bytes = base * 100;
	s.dma_write_bytes = base * 1000;
	s.by_cmd[VFIO_USER_REGION_READ] = base;
	s.by_errno[EINVAL] = base / 2;
	s.by_errno[0] = 1;
	s.mig.transitions = 5; /* a connection's migration is not the device's history */
	return s;
}

static void test_add(void)
{
	struct vcxl_conn_stats t, a = mk(10), b = mk(4);

	memset(&t, 0, sizeof(t));
	vcxl_stats_add(&t, &a);
	vcxl_stats_add(&t, &b);
	is(t.msgs, 14, "requests: 10 + 4");
	is(t.errors, 7, "errors: 5 + 2");
	is(t.proto_errors, 2, "protocol errors add");
	is(t.dma_msgs, 6, "DMA messages add");
	is(t.irqs, 28, "interrupts: 17 + 11");
	is(t.dma_read_bytes, 1400, "DMA bytes the device read");
	is(t.dma_write_bytes, 14000, "DMA bytes the device wrote");
	is(t.by_cmd[VFIO_USER_REGION_READ], 14, "REGION_READ by command");
	is(t.by_cmd[VFIO_USER_REGION_WRITE], 0, "a command no client sent stays 0");
	is(t.by_errno[EINVAL], 7, "EINVAL by errno");
	is(t.by_errno[0], 2, "errno 'other' adds");
	is(t.mig.transitions, 0, "a connection's migration is not added");
	b.msgs = UINT64_MAX;
	vcxl_stats_add(&t, &b);
	is(t.msgs, 13, "a counter wraps modulo 2^64 (as a Prometheus counter may)");
}

static void test_resets(void)
{
	struct vcxl_dev_counters now = {0}, then = {0}, share;

	now.resets[VCXL_DEV_RESET_FLR] = 5;
	now.resets[VCXL_DEV_RESET_VFIO] = 3;
	now.resets[VCXL_DEV_RESET_DISCONNECT] = 2;
	then.resets[VCXL_DEV_RESET_FLR] = 4;
	then.resets[VCXL_DEV_RESET_DISCONNECT] = 2;
	vcxl_dev_counters_sub(&share, &now, &then);
	is(share.resets[VCXL_DEV_RESET_FLR], 1, "the client's share: 1 FLR since it connected");
	is(share.resets[VCXL_DEV_RESET_VFIO], 3, "3 DEVICE_RESETs");
	is(share.resets[VCXL_DEV_RESET_DISCONNECT], 0, "no on-disconnect reset");
	ok(!strcmp(vcxl_reset_kind_name(VCXL_DEV_RESET_VFIO), "device_reset") &&
	       !strcmp(vcxl_reset_kind_name(VCXL_DEV_RESET_FLR), "flr") &&
	       !strcmp(vcxl_reset_kind_name(VCXL_DEV_RESET_CXL), "cxl_reset") &&
	       !strcmp(vcxl_reset_kind_name(VCXL_DEV_RESET_DISCONNECT_KEEP), "disconnect_keep") &&
	       !strcmp(vcxl_reset_kind_name(VCXL_DEV_RESET_DISCONNECT), "disconnect_reset"),
	   "reset kinds: device_reset, flr, cxl_reset, disconnect_keep, disconnect_reset");
	ok(vcxl_reset_kind_name(VCXL_DEV_RESET_KINDS) == NULL, "no name past the kinds");
}

static struct json_object *jget(struct json_object *o, const char *path)
{
	char key[64];

	while (o && *path) {
		size_t n = strcspn(path, ".");

		snprintf(key, sizeof(key), "%.*s", (int)n, path);
		if (!json_object_object_get_ex(o, key, &o))
			o = NULL;
		path += n + (path[n] == '.');
	}
	return o;
}

static int64_t jint(struct json_object *o, const char *path)
{
	struct json_object *v = jget(o, path);

	return v ? json_object_get_int64(v) : -1;
}

static void test_json(void)
{
	struct vcxl_conn_stats s = mk(10);
	struct vcxl_dev_counters d = {0};
	struct json_object *j;

	d.resets[VCXL_DEV_RESET_CXL] = 2;
	j = vcxl_stats_json(&s, &d);
	is(jint(j, "requests"), 10, "JSON: requests");
	is(jint(j, "requests_by_command.REGION_READ"), 10, "requests_by_command names commands");
	is(jint(j, "errors"), 5, "JSON: errors");
	is(jint(j, "errors_by_errno.EINVAL"), 5, "errors_by_errno names errnos");
	is(jint(j, "errors_by_errno.other"), 1, "errno 0: 'other'");
	is(jint(j, "protocol_errors"), 1, "JSON: protocol_errors");
	is(jint(j, "dma_read_bytes"), 1000, "JSON: dma_read_bytes");
	is(jint(j, "dma_write_bytes"), 10000, "JSON: dma_write_bytes");
	is(jint(j, "dma_messages"), 3, "JSON: dma_messages");
	is(jint(j, "interrupts"), 17, "JSON: interrupts");
	is(jint(j, "resets.cxl_reset"), 2, "resets.cxl_reset");
	is(jint(j, "resets.flr"), 0, "every reset kind is there, 0 too");
	json_object_put(j);
}

/* A query-stats reply as the server builds it, for the formatter */
static struct json_object *reply(void)
{
	struct vcxl_conn_stats s = mk(10), c = mk(2);
	struct vcxl_dev_counters d = {0}, dc = {0};
	struct json_object *r = json_object_new_object(), *a = json_object_new_array();
	struct json_object *dev = json_object_new_object(), *cl = json_object_new_object();

	d.resets[VCXL_DEV_RESET_FLR] = 4;
	dc.resets[VCXL_DEV_RESET_FLR] = 1;
	json_object_object_add(r, "uptime_ms", json_object_new_int64(12500));
	json_object_object_add(dev, "index", json_object_new_int(0));
	json_object_object_add(dev, "name", json_object_new_string("dev0"));
	json_object_object_add(dev, "socket", json_object_new_string("/run/a \"b\"\\c"));
	json_object_object_add(dev, "clients_served", json_object_new_int64(3));
	json_object_object_add(dev, "connected", json_object_new_boolean(true));
	json_object_object_add(dev, "handovers", json_object_new_int64(2));
	json_object_object_add(dev, "handover_failures", json_object_new_int64(0));
	json_object_object_add(dev, "total", vcxl_stats_json(&s, &d));
	json_object_object_add(cl, "connected_ms", json_object_new_int64(1500));
	json_object_object_add(cl, "counters", vcxl_stats_json(&c, &dc));
	json_object_object_add(dev, "client", cl);
	json_object_array_add(a, dev);
	json_object_object_add(r, "devices", a);
	return r;
}

/* The value of the sample line that starts with prefix, -1 if none */
static double sample(const char *text, const char *prefix)
{
	size_t n = strlen(prefix);

	for (const char *l = text; l && *l; l = strchr(l, '\n') ? strchr(l, '\n') + 1 : NULL)
		if (!strncmp(l, prefix, n) && l[n] == ' ')
			return strtod(l + n + 1, NULL);
	return -1;
}

static bool is_name(const char *s, size_t n)
{
	for (size_t i = 0; i < n; i++)
		if (!((s[i] >= 'a' && s[i] <= 'z') || (s[i] >= 'A' && s[i] <= 'Z') || s[i] == '_' ||
		      s[i] == ':' || (i && s[i] >= '0' && s[i] <= '9')))
			return false;
	return n > 0;
}

static void test_prometheus(void)
{
	struct json_object *r = reply();
	char *text = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&text, &len);
	int bad = 0, samples = 0;
	char typed[64][64];
	unsigned ntyped = 0;

	is(cli_stats_prometheus(r, f), 0, "the Prometheus text is written");
	fclose(f);
	/* every line: "# HELP name text", "# TYPE name counter|gauge", or a
	 * sample of a metric whose TYPE came before it */
	for (char *l = text, *nl; l && *l; l = nl ? nl + 1 : NULL) {
		nl = strchr(l, '\n');
		size_t ll = nl ? (size_t)(nl - l) : strlen(l);
		char line[512];

		snprintf(line, sizeof(line), "%.*s", (int)ll, l);
		if (!strncmp(line, "# HELP ", 7)) {
			if (!is_name(line + 7, strcspn(line + 7, " ")))
				bad++;
		} else if (!strncmp(line, "# TYPE ", 7)) {
			char *nm = line + 7, *t = strchr(nm, ' ');
			if (!t || (strcmp(t + 1, "counter") && strcmp(t + 1, "gauge")) ||
			    ntyped == 64) {
				bad++;
				continue;
			}
			*t = 0;
			if (!strcmp(t + 1, "counter") &&
			    (strlen(nm) < 6 || strcmp(nm + strlen(nm) - 6, "_total")))
				bad++;
			snprintf(typed[ntyped++], sizeof(typed[0]), "%s", nm);
		} else {
			size_t n = strcspn(line, "{ ");
			bool known = false;

			for (unsigned i = 0; i < ntyped; i++)
				known |= strlen(typed[i]) == n && !strncmp(typed[i], line, n);
			char *sp = strrchr(line, ' ');
			char *end;
			if (!known || !is_name(line, n) || !sp || (strtod(sp + 1, &end), *end))
				bad++;
			if (line[n] == '{' && sp[-1] != '}')
				bad++;
			samples++;
		}
	}
	is(bad, 0,
	   "every line is a HELP, a TYPE (counters end in _total) or a sample of a "
	   "typed metric");
	ok(samples > 20, "%d samples", samples);
	ok(text[len - 1] == '\n', "the text ends with a newline");
	is(sample(text, "vcxl_requests_total{device=\"0\",command=\"REGION_READ\"}"), 10,
	   "vcxl_requests_total{device=\"0\",command=\"REGION_READ\"} 10");
	is(sample(text, "vcxl_errors_total{device=\"0\",errno=\"EINVAL\"}"), 5,
	   "vcxl_errors_total by errno");
	is(sample(text, "vcxl_dma_bytes_total{device=\"0\",direction=\"read\"}"), 1000,
	   "vcxl_dma_bytes_total direction=read");
	is(sample(text, "vcxl_dma_bytes_total{device=\"0\",direction=\"write\"}"), 10000,
	   "vcxl_dma_bytes_total direction=write");
	is(sample(text, "vcxl_interrupts_total{device=\"0\"}"), 17, "vcxl_interrupts_total");
	is(sample(text, "vcxl_resets_total{device=\"0\",kind=\"flr\"}"), 4,
	   "vcxl_resets_total kind=flr");
	is(sample(text, "vcxl_resets_total{device=\"0\",kind=\"cxl_reset\"}"), 0,
	   "vcxl_resets_total kind=cxl_reset 0");
	is(sample(text, "vcxl_handovers_total{device=\"0\"}"), 2, "vcxl_handovers_total");
	is(sample(text, "vcxl_clients_served_total{device=\"0\"}"), 3, "vcxl_clients_served_total");
	is(sample(text, "vcxl_client_connected{device=\"0\"}"), 1, "vcxl_client_connected 1");
	is(sample(text, "vcxl_client_requests_total{device=\"0\"}"), 2,
	   "the current client's share: vcxl_client_requests_total");
	is(sample(text, "vcxl_client_resets_total{device=\"0\",kind=\"flr\"}"), 1,
	   "vcxl_client_resets_total kind=flr");
	ok(sample(text, "vcxl_client_connected_seconds{device=\"0\"}") == 1.5,
	   "vcxl_client_connected_seconds 1.5");
	ok(sample(text, "vcxl_uptime_seconds") == 12.5, "vcxl_uptime_seconds 12.5");
	free(text);
	json_object_put(r);

	/* label escaping: backslash, quote, newline */
	char out[64];
	cli_prom_escape("a\"b\\c\nd", out, sizeof(out));
	ok(!strcmp(out, "a\\\"b\\\\c\\nd"), "label values escaped: %s", out);
}

int main(void)
{
	test_add();
	test_resets();
	test_json();
	test_prometheus();
	return tap_done();
}
