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
/* cmd_mbox.c */
int parse_hex(const char *s, uint8_t **out, size_t *len);
int cmd_mbox(struct ctx *x, uint16_t opcode, const uint8_t *in, size_t in_len, bool irq,
	     int timeout_ms, bool json);

#endif /* VCXL_TOOLS_CLI_H */
