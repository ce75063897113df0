/* SPDX-License-Identifier: BSD-3-Clause */
/* vcxl-server's per-client budgets, sized for the machine at start (budget.c). */
#ifndef VCXL_SERVER_BUDGET_H
#define VCXL_SERVER_BUDGET_H

#include <stdbool.h>
#include <stdint.h>

#include "server/server.h"

/* fds the server keeps for itself whatever its clients hold: stdio, the log,
 * epoll, signalfd, readiness, the control socket and its clients, VFIO and
 * device files... */
#define VCXL_FD_RESERVE 64
/* ...and per device: its listener, its client's socket, the fds of messages
 * being received and of requests queued behind a wait, device memory, the
 * fresh objects of a hand-over, BAR fds */
#define VCXL_FD_RESERVE_PER_DEV (16 + 2 * VCXL_SRV_MAX_MSG_FDS + VCXL_SRV_MAX_QUEUED_FDS)
/* A per-client fd budget below this is a start-up error (raise RLIMIT_NOFILE). */
#define VCXL_MIN_CLIENT_FDS 16
/* Mapped bytes: every client together at most this share (in 1/4) of the
 * process's address space; one client at most VCXL_SRV_MAX_DMA_MAPPED. */
#define VCXL_VA_SHARE_QUARTERS 3

/* What the operator asked for (0: the default). */
struct vcxl_budget_req {
	unsigned devices;
	unsigned max_dma_windows, max_client_fds;
	uint64_t max_dma_mapped, max_dma_pinned;
	bool pins; /* the backend pins DMA windows (--backend vfio) */
};

/*
 * Raise RLIMIT_NOFILE's soft limit to the hard one, then fill cfg with the
 * per-client budgets: the operator's, or defaults that leave every device's
 * client and the server's reserve what they need. One log line says what
 * they are. 0, or -EMFILE when the fd limit leaves a client too few (the
 * message on stderr).
 */
int vcxl_budget_plan(const struct vcxl_budget_req *req, struct vcxl_conn_cfg *cfg);

#endif /* VCXL_SERVER_BUDGET_H */
