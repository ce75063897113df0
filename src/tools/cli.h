/* SPDX-License-Identifier: BSD-3-Clause */
/* The vcxl CLI: what its command files share (cli.c) and their entry points. */
#ifndef VCXL_TOOLS_CLI_H
#define VCXL_TOOLS_CLI_H

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

#include "vcxl/client.h"
#include "cxl/cxl_spec.h"

#define CLI_CFG_SIZE 4096

/* One vfio-user session with the device. */
struct ctx {
	struct vcxl_client *c;
	struct vcxl_client_info info;
};

/* "vcxl: <message>" on stderr; returns 1 (the exit status). */
int fail(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
/* Connect, negotiate and GET_INFO; 0 or 1 (after fail()). */
int ctx_open(struct ctx *x, const char *sock);
/* The whole config space (CLI_CFG_SIZE bytes); 0 or 1 (after fail()). */
int read_config(struct ctx *x, uint8_t *cfg);
/* vcxl_cfg_read32_fn over a config space copy of CLI_CFG_SIZE bytes. */
int cfg_buf_read32(void *opaque, uint32_t off, uint32_t *val);
/* 0 if the device has the vfio-cxl capability, else 1 (after fail()). */
int need_cxl(struct ctx *x);
int64_t now_ms(void);
int64_t now_ns(void);

/* cmd_info.c */
int cmd_info(struct ctx *x, bool json);
int cmd_lspci(struct ctx *x);
/* cmd_hdm.c */
int cmd_hdm(struct ctx *x, bool json);
int cmd_commit(struct ctx *x, unsigned n, uint64_t base, uint64_t size);
int cmd_decommit(struct ctx *x, unsigned n);
/* The decoder count the HDM Decoder Capability announces, at most the
 * vfio-cxl capability's hdm_count when that is non-zero: 0, or -errno. */
int cli_hdm_count(const struct vcxl_hdm_io *io, unsigned cap_count, unsigned *count);
/* cmd_memtest.c */
int cmd_memtest(struct ctx *x, uint64_t size, bool json);
/* cmd_status.c: the control socket (SOCKET.ctl, or control when given) */
int cmd_status(const char *sock, const char *control, bool json);
int cli_control_path(const char *sock, char *out, size_t len);
/* A control socket path's room (sun_path and the ".ctl" that may be added) */
#define CLI_CONTROL_PATH_MAX 120
/* Send req (one JSON line) to the control socket (control, else sock's
 * SOCKET.ctl, its path in path): 0 with the parsed reply in *root (put it)
 * and its "return" in *ret, or 1 after fail(). */
struct json_object;
int cli_control_query(const char *sock, const char *control, const char *req, char *path,
		      size_t pathlen, struct json_object **root, struct json_object **ret);
/* cmd_stats.c: query-stats as text, JSON or Prometheus' text format */
enum cli_stats_format { CLI_STATS_TEXT, CLI_STATS_JSON, CLI_STATS_PROMETHEUS };
int cmd_stats(const char *sock, const char *control, enum cli_stats_format fmt);
/* Prometheus' text exposition format (version 0.0.4) of a query-stats
 * "return" object onto f: 0, or -EINVAL when it is not one */
int cli_stats_prometheus(struct json_object *ret, FILE *f);
/* A label value escaped (\\, \", \n) into out (truncated to len) */
void cli_prom_escape(const char *in, char *out, size_t len);
/* cmd_mbox.c */
int parse_hex(const char *s, uint8_t **out, size_t *len);
int cmd_mbox(struct ctx *x, uint16_t opcode, const uint8_t *in, size_t in_len, bool irq,
	     int timeout_ms, bool json);

#endif /* VCXL_TOOLS_CLI_H */
