// SPDX-License-Identifier: BSD-3-Clause
/*
 * HDM decoders as a driver programs them, through register accessors: the
 * host core programs the physical decoders with these, the hardware backend
 * its host bridge's decoder, and the vcxl CLI the guest-visible (virtual)
 * ones, so all read, commit and decommit the same way.
 */
#include <errno.h>

#include "cxl/cxl_spec.h"

/* CXL r3.1 8.2.4.20.1: Decoder Count encoding */
int vcxl_hdm_io_count(const struct vcxl_hdm_io *io, unsigned *count)
{
	uint32_t cap;
	int rc = io->rd(io->opaque, CXL_HDM_CAP, &cap);
	int n;

	if (rc)
		return rc;
	n = vcxl_hdm_count_decode((unsigned)VCXL_FIELD_GET(CXL_HDM_CAP_DECODER_COUNT, cap));
	if (n < 0)
		return -EINVAL;
	*count = (unsigned)n;
	return 0;
}

static int rd_pair(const struct vcxl_hdm_io *io, uint32_t lo, uint32_t hi, uint64_t *v)
{
	uint32_t l, h;
	int rc = io->rd(io->opaque, lo, &l);

	if (!rc)
		rc = io->rd(io->opaque, hi, &h);
	if (!rc)
		*v = (uint64_t)h << 32 | (l & CXL_HDM_DEC_LO_MASK);
	return rc;
}

/* CXL r3.1 8.2.4.20.5-8.2.4.20.9: base, size, control and DPA skip */
int vcxl_hdm_io_read(const struct vcxl_hdm_io *io, unsigned n, struct vcxl_hdm_decoder *d)
{
	int rc;

	*d = (struct vcxl_hdm_decoder){0};
	if (n >= CXL_HDM_MAX_DECODERS)
		return -EINVAL;
	if ((rc = rd_pair(io, CXL_HDM_DEC_BASE_LO(n), CXL_HDM_DEC_BASE_HI(n), &d->base)) ||
	    (rc = rd_pair(io, CXL_HDM_DEC_SIZE_LO(n), CXL_HDM_DEC_SIZE_HI(n), &d->size)) ||
	    (rc = io->rd(io->opaque, CXL_HDM_DEC_CTRL(n), &d->ctrl)) ||
	    (rc = rd_pair(io, CXL_HDM_DEC_SKIP_LO(n), CXL_HDM_DEC_SKIP_HI(n), &d->skip)))
		return rc;
	d->ways = vcxl_hdm_iw_decode((unsigned)VCXL_FIELD_GET(CXL_HDM_DEC_CTRL_IW, d->ctrl));
	d->granularity = vcxl_hdm_ig_decode((unsigned)VCXL_FIELD_GET(CXL_HDM_DEC_CTRL_IG, d->ctrl));
	d->committed = d->ctrl & CXL_HDM_DEC_CTRL_COMMITTED;
	d->lock_on_commit = d->ctrl & CXL_HDM_DEC_CTRL_LOCK_ON_COMMIT;
	d->hostonly = d->ctrl & CXL_HDM_DEC_CTRL_HOSTONLY;
	return 0;
}

/* CXL r3.1 8.2.4.20.7: IG 0 (256 B), IW 0 (1 way), Target Range Type, Commit */
uint32_t vcxl_hdm_commit_ctrl(uint32_t ctrl_now, bool hostonly)
{
	uint32_t ctrl =
	    ctrl_now & ~(CXL_HDM_DEC_CTRL_IG | CXL_HDM_DEC_CTRL_IW | CXL_HDM_DEC_CTRL_HOSTONLY |
			 CXL_HDM_DEC_CTRL_COMMITTED | CXL_HDM_DEC_CTRL_COMMIT_ERR);

	if (hostonly)
		ctrl |= CXL_HDM_DEC_CTRL_HOSTONLY;
	return ctrl | CXL_HDM_DEC_CTRL_COMMIT;
}

static int wr_pair(const struct vcxl_hdm_io *io, uint32_t lo, uint32_t hi, uint64_t v)
{
	int rc = io->wr(io->opaque, hi, (uint32_t)(v >> 32));

	return rc ? rc : io->wr(io->opaque, lo, (uint32_t)v & CXL_HDM_DEC_LO_MASK);
}

/* CXL r3.1 8.2.4.20.12: program every register, Control (with Commit) last.
 * The third pair is DPA Skip (endpoint, bits 31:28 of its low dword) or the
 * Target List (port, every bit). */
static int program(const struct vcxl_hdm_io *io, unsigned n, uint64_t base, uint64_t size,
		   uint64_t third, uint32_t third_lo_mask, uint32_t ctrl)
{
	int rc;

	if (n >= CXL_HDM_MAX_DECODERS)
		return -EINVAL;
	if ((rc = wr_pair(io, CXL_HDM_DEC_BASE_LO(n), CXL_HDM_DEC_BASE_HI(n), base)) ||
	    (rc = wr_pair(io, CXL_HDM_DEC_SIZE_LO(n), CXL_HDM_DEC_SIZE_HI(n), size)) ||
	    (rc = io->wr(io->opaque, CXL_HDM_DEC_SKIP_HI(n), (uint32_t)(third >> 32))) ||
	    (rc = io->wr(io->opaque, CXL_HDM_DEC_SKIP_LO(n), (uint32_t)third & third_lo_mask)))
		return rc;
	return io->wr(io->opaque, CXL_HDM_DEC_CTRL(n), ctrl);
}

int vcxl_hdm_io_program(const struct vcxl_hdm_io *io, unsigned n, uint64_t base, uint64_t size,
			uint64_t skip, uint32_t ctrl)
{
	return program(io, n, base, size, skip, CXL_HDM_DEC_LO_MASK, ctrl);
}

/* CXL r3.1 8.2.4.20.10-11: Target List Low/High of a port's decoder */
int vcxl_hdm_io_program_port(const struct vcxl_hdm_io *io, unsigned n, uint64_t base, uint64_t size,
			     uint64_t targets, uint32_t ctrl)
{
	return program(io, n, base, size, targets, UINT32_MAX, ctrl);
}

int vcxl_hdm_io_read_targets(const struct vcxl_hdm_io *io, unsigned n, uint64_t *targets)
{
	uint32_t lo, hi;
	int rc;

	if (n >= CXL_HDM_MAX_DECODERS)
		return -EINVAL;
	if ((rc = io->rd(io->opaque, CXL_HDM_DEC_TL_LO(n), &lo)) ||
	    (rc = io->rd(io->opaque, CXL_HDM_DEC_TL_HI(n), &hi)))
		return rc;
	*targets = (uint64_t)hi << 32 | lo;
	return 0;
}

/* CXL r3.1 8.2.4.20.2: HDM Decoder Enable in Global Control */
int vcxl_hdm_io_set_enable(const struct vcxl_hdm_io *io, bool on, bool *changed)
{
	uint32_t g;
	int rc = io->rd(io->opaque, CXL_HDM_GLOBAL_CTRL, &g);

	if (changed)
		*changed = false;
	if (rc || !(g & CXL_HDM_GCTRL_ENABLE) == !on)
		return rc;
	rc = io->wr(io->opaque, CXL_HDM_GLOBAL_CTRL,
		    on ? g | CXL_HDM_GCTRL_ENABLE : g & ~CXL_HDM_GCTRL_ENABLE);
	if (!rc && changed)
		*changed = true;
	return rc;
}

/* CXL r3.1 8.2.4.20.12: clearing Commit decommits; then the range goes */
int vcxl_hdm_io_decommit(const struct vcxl_hdm_io *io, unsigned n)
{
	uint32_t ctrl;
	int rc;

	if (n >= CXL_HDM_MAX_DECODERS)
		return -EINVAL;
	if ((rc = io->rd(io->opaque, CXL_HDM_DEC_CTRL(n), &ctrl)) ||
	    (rc = io->wr(io->opaque, CXL_HDM_DEC_CTRL(n), ctrl & ~CXL_HDM_DEC_CTRL_COMMIT)) ||
	    (rc = wr_pair(io, CXL_HDM_DEC_SIZE_LO(n), CXL_HDM_DEC_SIZE_HI(n), 0)) ||
	    (rc = wr_pair(io, CXL_HDM_DEC_BASE_LO(n), CXL_HDM_DEC_BASE_HI(n), 0)))
		return rc;
	return wr_pair(io, CXL_HDM_DEC_SKIP_LO(n), CXL_HDM_DEC_SKIP_HI(n), 0);
}
