// SPDX-License-Identifier: BSD-3-Clause
/*
 * A device's counters across its clients (query-stats): the loop adds a
 * leaving client's counters into its device's (vcxl_stats_add) and snapshots
 * the device's reset counters when a client connects (its share is the
 * difference). The request path only increments its connection's counters,
 * as it did before there were device counters.
 */
#include <errno.h>
#include <json-c/json.h>
#include <stdio.h>
#include <string.h>

#include "server/server.h"

void vcxl_stats_add(struct vcxl_conn_stats *t, const struct vcxl_conn_stats *a)
{
	t->msgs += a->msgs;
	t->errors += a->errors;
	t->proto_errors += a->proto_errors;
	t->dma_msgs += a->dma_msgs;
	t->irqs += a->irqs;
	t->dma_read_bytes += a->dma_read_bytes;
	t->dma_write_bytes += a->dma_write_bytes;
	for (unsigned i = 0; i < VCXL_STATS_CMDS; i++)
		t->by_cmd[i] += a->by_cmd[i];
	for (unsigned i = 0; i < VCXL_STATS_ERRNOS; i++)
		t->by_errno[i] += a->by_errno[i];
}

void vcxl_dev_counters_sub(struct vcxl_dev_counters *out, const struct vcxl_dev_counters *now,
			   const struct vcxl_dev_counters *then)
{
	for (unsigned i = 0; i < VCXL_DEV_RESET_KINDS; i++)
		out->resets[i] = now->resets[i] - then->resets[i];
}

const char *vcxl_reset_kind_name(unsigned kind)
{
	static const char *const names[VCXL_DEV_RESET_KINDS] = {
	    [VCXL_DEV_RESET_VFIO] = "device_reset",
	    [VCXL_DEV_RESET_FLR] = "flr",
	    [VCXL_DEV_RESET_CXL] = "cxl_reset",
	    [VCXL_DEV_RESET_DISCONNECT_KEEP] = "disconnect_keep",
	    [VCXL_DEV_RESET_DISCONNECT] = "disconnect_reset",
	};

	return kind < VCXL_DEV_RESET_KINDS ? names[kind] : NULL;
}

static struct json_object *u64(uint64_t v)
{
	return json_object_new_int64((int64_t)v);
}

struct json_object *vcxl_stats_json(const struct vcxl_conn_stats *st,
				    const struct vcxl_dev_counters *dev)
{
	struct json_object *o = json_object_new_object();
	struct json_object *by_cmd = json_object_new_object(), *by_errno = json_object_new_object();
	struct json_object *rs = json_object_new_object();
	char name[32];

	json_object_object_add(o, "requests", u64(st->msgs));
	for (unsigned i = 0; i < VCXL_STATS_CMDS; i++) {
		const char *cmd = vfio_user_command_name(i);

		if (!st->by_cmd[i])
			continue;
		if (!i || !strcmp(cmd, "UNKNOWN")) {
			snprintf(name, sizeof(name), "command-%u", i);
			cmd = i ? name : "other";
		}
		json_object_object_add(by_cmd, cmd, u64(st->by_cmd[i]));
	}
	json_object_object_add(o, "requests_by_command", by_cmd);
	json_object_object_add(o, "errors", u64(st->errors));
	for (unsigned i = 0; i < VCXL_STATS_ERRNOS; i++) {
		const char *n = i ? strerrorname_np((int)i) : "other";

		if (!st->by_errno[i])
			continue;
		if (!n) {
			snprintf(name, sizeof(name), "errno-%u", i);
			n = name;
		}
		json_object_object_add(by_errno, n, u64(st->by_errno[i]));
	}
	json_object_object_add(o, "errors_by_errno", by_errno);
	json_object_object_add(o, "protocol_errors", u64(st->proto_errors));
	json_object_object_add(o, "dma_read_bytes", u64(st->dma_read_bytes));
	json_object_object_add(o, "dma_write_bytes", u64(st->dma_write_bytes));
	json_object_object_add(o, "dma_messages", u64(st->dma_msgs));
	json_object_object_add(o, "interrupts", u64(st->irqs));
	for (unsigned i = 0; i < VCXL_DEV_RESET_KINDS; i++)
		json_object_object_add(rs, vcxl_reset_kind_name(i), u64(dev->resets[i]));
	json_object_object_add(o, "resets", rs);
	return o;
}
