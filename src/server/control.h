/* SPDX-License-Identifier: BSD-3-Clause */
/* vcxl-server --control PATH: JSON requests about the running server (control.c). */
#ifndef VCXL_SERVER_CONTROL_H
#define VCXL_SERVER_CONTROL_H

#include <json-c/json.h>

#include "server/server.h"

/* The longest request line; a longer one gets an error and is skipped. */
#define VCXL_CONTROL_LINE_MAX 4096
/* Control clients served at once; more wait in the listen backlog. When all
 * are taken, an administrator's connection takes the longest-idle one's slot. */
#define VCXL_CONTROL_CLIENTS 8
/* One loop turn serves a control client's lines for at most this long (at
 * least one line); the rest wait for the next turns. */
#define VCXL_CONTROL_TURN_US 1000
/* A control connection with nothing to say for this long is closed (the
 * default of --control-idle-timeout, in seconds there). */
#define VCXL_CONTROL_IDLE_MS 60000
/* How often a request that waits for a busy device (read-memory during a
 * reset) looks again, in ms. */
#define VCXL_CONTROL_RETRY_MS 5

struct vcxl_control;

/* What only the server's main knows of device index (model, host region,
 * the guest's committed decoders, resets), added to its status object; with
 * admin false (an observer asks) only what is no tenant's: the backend and
 * model. */
typedef void (*vcxl_control_describe_fn)(void *opaque, unsigned index, bool admin,
					 struct json_object *dev);

/* read-memory: bytes [off, off + len) of device index's CXL region (the memory
 * the guest maps), len <= VCXL_CONTROL_READ_MAX. 0 or -errno. */
typedef int (*vcxl_control_read_fn)(void *opaque, unsigned index, uint64_t off, void *buf,
				    size_t len);
/* The most bytes one read-memory request returns (hex: twice that in the reply). */
#define VCXL_CONTROL_READ_MAX 4096

/* The control socket's mode unless --control-mode says otherwise: the
 * administrator's alone (the socket is made by root, before --user). */
#define VCXL_CONTROL_MODE 0600

/* Listen on path (a stale socket there is replaced, anything else refused)
 * with mode and group gid ((gid_t)-1: the process's) and serve requests from
 * the loop; see control.c for who may run what. 0 or -errno. */
int vcxl_control_create(struct vcxl_loop *l, const char *path, int mode, gid_t gid,
			vcxl_control_describe_fn fn, void *opaque, struct vcxl_control **out);
/* Serve read-memory through fn (with the describe function's opaque); without
 * it the command is refused. */
void vcxl_control_set_reader(struct vcxl_control *c, vcxl_control_read_fn fn);
/* Close connections idle for ms (<= 0: VCXL_CONTROL_IDLE_MS). */
void vcxl_control_set_idle_timeout(struct vcxl_control *c, int64_t ms);
/* Close every control connection, remove the socket. */
void vcxl_control_destroy(struct vcxl_control *c);
/* One request (a JSON text) answered as one JSON object (caller puts it);
 * admin false: an observer's request (control.c's policy). */
struct json_object *vcxl_control_handle(struct vcxl_control *c, bool admin, const char *req,
					size_t len);

#endif /* VCXL_SERVER_CONTROL_H */
