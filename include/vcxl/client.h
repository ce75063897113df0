/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * vfio-user client library: what QEMU's vfio-user-pci does, as a small
 * synchronous C API. Used by the vcxl CLI, integration tests, benchmarks and
 * fuzz seed generation. Every call returns 0 (or a count) or -errno; a reply
 * with the ERROR flag returns -error.
 *
 * While a call waits for its reply it answers the server's DMA_READ and
 * DMA_WRITE requests from memory registered with vcxl_client_dma_map()
 * (QEMU 10.x layout), so device DMA through fd-less windows works.
 */
#ifndef VCXL_CLIENT_H
#define VCXL_CLIENT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "vcxl/uapi.h"
#include "vcxl/vfio_user.h"

#define VCXL_CLIENT_MAX_SPARSE 16

struct vcxl_client;

struct vcxl_client_caps {
	uint32_t max_msg_fds;
	uint32_t max_data_xfer_size;
	uint64_t pgsizes;
	uint32_t max_dma_maps;
	bool write_multiple;
	bool dirty_in_stop_copy; /* vcxl's: docs/migration.md "DMA logging" */
};

struct vcxl_client_info {
	uint32_t flags;
	uint32_t num_regions;
	uint32_t num_irqs;
	uint32_t argsz; /* size the server reported */
	bool has_cxl;
	struct vfio_device_info_cap_cxl cxl;
};

struct vcxl_client_region {
	uint32_t index, flags, argsz;
	uint64_t size, offset;
	int fd; /* mmap fd (caller owns; -1 if none) */
	unsigned nr_sparse;
	struct {
		uint64_t offset, size;
	} sparse[VCXL_CLIENT_MAX_SPARSE];
	bool has_type;
	uint32_t type, subtype;
	bool has_comp; /* VFIO_REGION_INFO_CAP_CXL_COMP_REGS (the COMP_REGS region) */
	struct vcxl_region_info_cap_cxl_comp_regs comp;
	unsigned tries; /* GET_REGION_INFO messages it took (argsz retry) */
};

/* A raw exchange (tests, fuzz seeds): the reply header and payload. */
struct vcxl_client_reply {
	struct vfio_user_hdr hdr;
	uint8_t *data; /* malloc'd payload (caller frees) */
	size_t len;
	int fds[VCXL_CLIENT_MAX_SPARSE];
	unsigned nfds; /* caller closes */
};

/* Connect and negotiate VERSION (QEMU's capabilities unless json is given). */
int vcxl_client_connect(const char *path, struct vcxl_client **out);
/* Connect without negotiating (for protocol tests). */
int vcxl_client_connect_raw(const char *path, struct vcxl_client **out);
/* VERSION with a JSON capabilities string (NULL = QEMU 10.2's). */
int vcxl_client_negotiate(struct vcxl_client *c, const char *json);
/* Wrap an already connected socket (taken over; not negotiated). */
int vcxl_client_from_fd(int fd, struct vcxl_client **out);
void vcxl_client_close(struct vcxl_client *c);
int vcxl_client_fd(const struct vcxl_client *c);
const struct vcxl_client_caps *vcxl_client_server_caps(const struct vcxl_client *c);
/* Record every message sent/received into a callback (fuzz seeds). */
typedef void (*vcxl_client_trace_fn)(void *opaque, bool sent, const void *msg, size_t len);
void vcxl_client_set_trace(struct vcxl_client *c, vcxl_client_trace_fn fn, void *opaque);

int vcxl_client_get_info(struct vcxl_client *c, struct vcxl_client_info *info);
/* GET_INFO with an explicit argsz (tests of the truncation rule). */
int vcxl_client_get_info_argsz(struct vcxl_client *c, uint32_t argsz,
			       struct vcxl_client_info *info);
int vcxl_client_region_info(struct vcxl_client *c, uint32_t index, struct vcxl_client_region *ri);
int vcxl_client_region_read(struct vcxl_client *c, uint32_t index, uint64_t off, void *buf,
			    size_t len);
int vcxl_client_region_write(struct vcxl_client *c, uint32_t index, uint64_t off, const void *buf,
			     size_t len);
/* Posted write (NO_REPLY): no answer; errors show up only in the server log. */
int vcxl_client_region_write_posted(struct vcxl_client *c, uint32_t index, uint64_t off,
				    const void *buf, size_t len);
/* Little helpers for 1/2/4/8-byte register accesses */
int vcxl_client_read32(struct vcxl_client *c, uint32_t index, uint64_t off, uint32_t *v);
int vcxl_client_write32(struct vcxl_client *c, uint32_t index, uint64_t off, uint32_t v);
int vcxl_client_read64(struct vcxl_client *c, uint32_t index, uint64_t off, uint64_t *v);
int vcxl_client_write64(struct vcxl_client *c, uint32_t index, uint64_t off, uint64_t v);

int vcxl_client_irq_info(struct vcxl_client *c, uint32_t index, uint32_t *count, uint32_t *flags);
/* SET_IRQS: fds (DATA_EVENTFD), bools (DATA_BOOL, count bytes) or neither. */
int vcxl_client_set_irqs(struct vcxl_client *c, uint32_t index, uint32_t flags, uint32_t start,
			 uint32_t count, const int *fds, unsigned nfds, const uint8_t *bools);

/* DMA_MAP: fd -1 sends no fd (the server then uses DMA_READ/WRITE). mem, if
 * not NULL, is the client's view of the window, used to answer the server. */
int vcxl_client_dma_map(struct vcxl_client *c, uint64_t iova, uint64_t size, uint32_t flags, int fd,
			uint64_t offset, void *mem);
int vcxl_client_dma_unmap(struct vcxl_client *c, uint64_t iova, uint64_t size, uint32_t flags);
int vcxl_client_reset(struct vcxl_client *c);
/* Answer server requests that arrive within timeout_ms: count handled or -errno. */
int vcxl_client_poll(struct vcxl_client *c, int timeout_ms);
uint64_t vcxl_client_dma_requests(const struct vcxl_client *c);

/* Raw message: payload and fds as given; the reply is returned. */
int vcxl_client_raw(struct vcxl_client *c, uint16_t cmd, uint32_t flags, const void *payload,
		    size_t len, const int *fds, unsigned nfds, struct vcxl_client_reply *rep);
/* Send bytes as they are (malformed headers). */
int vcxl_client_send_bytes(struct vcxl_client *c, const void *buf, size_t len, const int *fds,
			   unsigned nfds);
/* Receive the next reply (after send_bytes). */
int vcxl_client_recv_reply(struct vcxl_client *c, struct vcxl_client_reply *rep, int timeout_ms);
void vcxl_client_reply_free(struct vcxl_client_reply *rep);

/* ---- CXL mailbox commands through BAR accesses (CXL r3.1 8.2.8.4) ------ */

/* Where a memory device's Primary Mailbox is (Register Locator block 3). */
struct vcxl_client_mbox {
	unsigned bar;	  /* BAR index of the memory device registers */
	uint64_t block;	  /* memory device register block, offset in the BAR */
	uint64_t mailbox; /* Primary Mailbox capability, offset in the BAR */
	uint64_t memdev;  /* Memory Device Status capability, offset in the BAR; 0 if absent */
	uint32_t caps;	  /* Mailbox Capabilities register */
	size_t payload;	  /* payload bytes */
};

struct vcxl_client_mbox_cmd {
	uint16_t opcode;
	const void *in;
	size_t in_len;
	bool irq;	/* wait for a background command on its MSI-X vector */
	int timeout_ms; /* the whole command, background part included */
};

struct vcxl_client_mbox_result {
	uint16_t rc;	/* return code of the command */
	size_t out_len; /* output payload length the Command register gives */
	uint8_t *out;	/* out_len bytes (malloc'd; vcxl_client_mbox_result_free) */
	bool bg;	/* a background command was waited for; then: */
	uint16_t bg_opcode, bg_rc;
	unsigned bg_pct;
	unsigned vector; /* MSI-X vector waited on (irq) */
	int64_t bg_ms;	 /* from the doorbell to the completion */
};

/* Find the Primary Mailbox: 0, or -errno with a one-line reason in err. */
int vcxl_client_mbox_find(struct vcxl_client *c, struct vcxl_client_mbox *m, char *err,
			  size_t errlen);
/* Send one command as cxl_pci does and wait for it (and for its background
 * part, polled or by MSI-X when cmd->irq; whatever --irq changed on the device
 * is undone). 0 when the command ran (r->rc / r->bg_rc say how it ended), or
 * -errno with a one-line reason in err. */
int vcxl_client_mbox_exec(struct vcxl_client *c, const struct vcxl_client_mbox *m,
			  const struct vcxl_client_mbox_cmd *cmd, struct vcxl_client_mbox_result *r,
			  char *err, size_t errlen);
void vcxl_client_mbox_result_free(struct vcxl_client_mbox_result *r);

#endif /* VCXL_CLIENT_H */
