// SPDX-License-Identifier: BSD-3-Clause
/*
 * Per-client budgets (docs/security.md, "Per-client budgets"): what one
 * client's DMA windows and eventfds may cost the server, so that no client
 * takes the fds, address space or pinned memory another client, the control
 * socket or a hand-over needs.
 */
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <sys/resource.h>
#include <unistd.h>

#include "budget.h"

/* The soft fd limit raised to the hard one (what a systemd service is
 * expected to do: its soft limit stays 1024 for select()'s sake). */
static uint64_t fd_limit_raise(void)
{
	struct rlimit rl;

	if (getrlimit(RLIMIT_NOFILE, &rl))
		return 1024;
	if (rl.rlim_cur < rl.rlim_max) {
		rlim_t was = rl.rlim_cur;

		rl.rlim_cur = rl.rlim_max;
		if (setrlimit(RLIMIT_NOFILE, &rl))
			rl.rlim_cur = was;
	}
	return rl.rlim_cur == RLIM_INFINITY ? UINT32_MAX : (uint64_t)rl.rlim_cur;
}

/* The user address space: the stack lives at its top (4-level x86-64
 * paging: 128 TiB; 39-bit arm64: 512 GiB). */
static uint64_t va_size(void)
{
	volatile int here = 0;
	uint64_t top = (uint64_t)(uintptr_t)&here, size = 1ull << 30;

	while (size < top && size < (1ull << 62))
		size <<= 1;
	return size;
}

static uint64_t phys_ram(void)
{
	long pages = sysconf(_SC_PHYS_PAGES), page = sysconf(_SC_PAGESIZE);

	return pages > 0 && page > 0 ? (uint64_t)pages * (uint64_t)page : 0;
}

/* Per client: what the fds left after the reserve allow. */
static int fds_budget(const struct vcxl_budget_req *req, unsigned *out)
{
	uint64_t limit = fd_limit_raise();
	uint64_t reserve = VCXL_FD_RESERVE + (uint64_t)req->devices * VCXL_FD_RESERVE_PER_DEV;
	uint64_t each = limit > reserve ? (limit - reserve) / req->devices : 0;

	if (each > UINT32_MAX)
		each = UINT32_MAX;
	if (req->max_client_fds && req->max_client_fds < each)
		each = req->max_client_fds;
	if (each < VCXL_MIN_CLIENT_FDS) {
		fprintf(stderr,
			"vcxl-server: RLIMIT_NOFILE %llu leaves %llu fds per client for %u "
			"devices (at least %u needed; %llu kept for the server)\n",
			(unsigned long long)limit, (unsigned long long)each, req->devices,
			VCXL_MIN_CLIENT_FDS, (unsigned long long)reserve);
		return -EMFILE;
	}
	if (req->max_client_fds > each)
		vcxl_log(VCXL_LOG_WARN,
			 "--max-client-fds %u: RLIMIT_NOFILE %llu allows %llu per client "
			 "(%llu kept for the server)",
			 req->max_client_fds, (unsigned long long)limit, (unsigned long long)each,
			 (unsigned long long)reserve);
	*out = (unsigned)each;
	return 0;
}

/* Per client: its share of the address space, at most VCXL_SRV_MAX_DMA_MAPPED. */
static uint64_t mapped_budget(const struct vcxl_budget_req *req)
{
	uint64_t share = va_size() / 4 * VCXL_VA_SHARE_QUARTERS / req->devices;

	if (req->max_dma_mapped)
		return req->max_dma_mapped;
	share &= ~(VCXL_SRV_PGSIZE - 1);
	return share < VCXL_SRV_MAX_DMA_MAPPED ? share : VCXL_SRV_MAX_DMA_MAPPED;
}

/* Per client: its share of three quarters of the host's RAM, when windows
 * are pinned at all. */
static uint64_t pinned_budget(const struct vcxl_budget_req *req)
{
	uint64_t ram = phys_ram();

	if (req->max_dma_pinned)
		return req->max_dma_pinned;
	if (!req->pins)
		return 0;
	return ram ? ram / 4 * 3 / req->devices : VCXL_SRV_MAX_DMA_MAPPED;
}

int vcxl_budget_plan(const struct vcxl_budget_req *req, struct vcxl_conn_cfg *cfg)
{
	struct vcxl_budget_req r = *req;
	int rc;

	if (!r.devices)
		r.devices = 1;
	memset(cfg, 0, sizeof(*cfg));
	rc = fds_budget(&r, &cfg->max_fds);
	if (rc)
		return rc;
	cfg->max_dma_maps = r.max_dma_windows ? r.max_dma_windows : VCXL_SRV_MAX_DMA_MAPS;
	cfg->max_dma_mapped = mapped_budget(&r);
	cfg->max_dma_pinned = pinned_budget(&r);
	char pinned[48] = "none pinned";

	if (cfg->max_dma_pinned)
		snprintf(pinned, sizeof(pinned), "%llu MiB pinned",
			 (unsigned long long)(cfg->max_dma_pinned >> 20));
	vcxl_log(VCXL_LOG_INFO, "per-client budgets: %u DMA windows, %llu MiB mapped, %s, %u fds",
		 cfg->max_dma_maps, (unsigned long long)(cfg->max_dma_mapped >> 20), pinned,
		 cfg->max_fds);
	return 0;
}
