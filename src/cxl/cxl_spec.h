/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The CXL spec layer: lays CXL structures out in register files with their
 * per-field attributes, and implements the behaviour the spec gives them
 * (HDM commit rules, DOE mailbox, CDAT). Used by the device model (the
 * "hardware") and by the vfio-cxl core (the guest's virtual view) alike.
 * Nothing here knows who owns the registers; policy comes in through the
 * callbacks.
 */
#ifndef VCXL_CXL_SPEC_H
#define VCXL_CXL_SPEC_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "cxl/cxl_regs.h"
#include "regfile/regfile.h"

/* ---- PCIe extended capabilities and DVSEC discovery ------------------- */

/* Config-space dword reader used by discovery (owner side, no side effects). */
typedef int (*vcxl_cfg_read32_fn)(void *opaque, uint32_t off, uint32_t *val);

/* Find extended capability `id` (0 = any DVSEC match below) from 0x100.
 * Returns 0 and the offset, -ENOENT, or -ELOOP on a malformed chain. */
int vcxl_pcie_find_ext_cap(vcxl_cfg_read32_fn rd, void *opaque, uint16_t id, uint32_t *off);
/* Find the DVSEC with (vendor, id). Returns 0 and offset/length, or -ENOENT. */
int vcxl_pcie_find_dvsec(vcxl_cfg_read32_fn rd, void *opaque, uint16_t vendor, uint16_t dvsec_id,
			 uint32_t *off, uint32_t *len);

/* Find standard capability `id` through the Capabilities Pointer (PCI r3.0
 * 6.7). Returns 0 and the offset, -ENOENT (no capability list or not in it),
 * or -ELOOP on a malformed list (pointer outside 0x40..0xff, or a cycle). */
int vcxl_pci_find_cap(vcxl_cfg_read32_fn rd, void *opaque, uint8_t id, uint32_t *off);

/* Write an extended capability header + DVSEC headers (all RO). */
int vcxl_dvsec_header_layout(struct vcxl_regfile *rf, uint32_t base, uint32_t next,
			     uint16_t dvsec_id, uint8_t rev, uint16_t len);

/* ---- CXL Device DVSEC (ID 0) ----------------------------------------- */

struct vcxl_dvsec_device_cfg {
	uint16_t cap;  /* CXL_DVSEC_CAP_* (IO_Capable forced on) */
	uint16_t cap2; /* CXL_DVSEC_CAP2_* */
	uint16_t cap3; /* CXL_DVSEC_CAP3_* */
	uint16_t ctrl; /* reset value of Control (IO_Enable forced on) */
	uint64_t range_size[CXL_DVSEC_RANGE_MAX];
	/* Size Low flag bits: media type, class, desired interleave, active timeout.
	 * Info_Valid and Active are owned by the caller (live). */
	uint32_t range_flags[CXL_DVSEC_RANGE_MAX];
};

struct vcxl_dvsec_device;

struct vcxl_dvsec_device_ops {
	/* Control2 trigger bits written as 1 (CXL_DVSEC_CTRL2_INIT_*); they read 0. */
	void (*ctrl2_trigger)(void *opaque, struct vcxl_dvsec_device *d, uint16_t bits);
	/* Before a read of Status2 / Range Size Low: refresh live fields (may be NULL).
	 * dvsec_off is the DVSEC-relative offset of the dword read (CXL_DVSEC_CTRL2 for the
	 * Control2/Status2 dword, CXL_DVSEC_RANGE_SIZE_LO(i)). */
	void (*refresh)(void *opaque, struct vcxl_dvsec_device *d, uint32_t dvsec_off);
};

struct vcxl_dvsec_device {
	struct vcxl_regfile *rf;
	uint32_t base; /* offset of the DVSEC in rf */
	int config_lock_group;
	const struct vcxl_dvsec_device_ops *ops;
	void *opaque;
};

/* CXL r3.1 8.1.3: lay out the Device DVSEC with every field's attribute:
 * Control RWL and Range Base RWL under CONFIG_LOCK (RWO), Status Viral and
 * Status2 Volatile-HDM-Preservation-Error RW1CS, Control2 triggers, the rest
 * RO/HwInit, reserved bits RSVD. Byte and word accesses work everywhere. */
int vcxl_dvsec_device_layout(struct vcxl_dvsec_device *d, struct vcxl_regfile *rf, uint32_t base,
			     uint32_t next, const struct vcxl_dvsec_device_cfg *cfg,
			     const struct vcxl_dvsec_device_ops *ops, void *opaque);

/* CXL r3.1 9.7: what a CXL Reset does to the Device DVSEC. Non-sticky fields
 * go to their reset values: Control and Range Base unless CONFIG_LOCK is set
 * (8.1.3.6: the lock and the fields it locks are not affected by CXL Reset),
 * Control2 but its sticky Desired Volatile HDM State, and Status2 Cache
 * Invalid (it reads 0 with Disable Caching 0, 8.1.3.5). Sticky status (RW1CS)
 * and CONFIG_LOCK are kept. Status2 Reset Complete/Error are the caller's:
 * it sets them when its reset is done. The same rule for a device (the model)
 * and for a virtual DVSEC (the vfio-cxl core). */
void vcxl_dvsec_device_cxl_reset(struct vcxl_dvsec_device *d);

/* ---- Register Locator (ID 8), GPF device (ID 5), Flex Bus (ID 7) ------ */

struct vcxl_regloc_entry {
	uint8_t bir;	 /* BAR index 0..5 */
	uint8_t id;	 /* CXL_REGLOC_RBI_* */
	uint64_t offset; /* 64 KiB aligned */
};

int vcxl_dvsec_regloc_layout(struct vcxl_regfile *rf, uint32_t base, uint32_t next,
			     const struct vcxl_regloc_entry *e, unsigned n);
/* Decode entry k of a Register Locator from its two dwords. */
void vcxl_regloc_decode(uint32_t lo, uint32_t hi, struct vcxl_regloc_entry *e);
/* The first entry with Register Block Identifier rbi (CXL_REGLOC_RBI_*) in the
 * Register Locator DVSEC. Returns 0, -ENOENT (no locator, or no such entry),
 * or the reader's error. */
int vcxl_regloc_find(vcxl_cfg_read32_fn rd, void *opaque, uint8_t rbi, struct vcxl_regloc_entry *e);

int vcxl_dvsec_gpf_device_layout(struct vcxl_regfile *rf, uint32_t base, uint32_t next,
				 uint16_t phase2_duration, uint32_t phase2_power);
int vcxl_dvsec_flexbus_layout(struct vcxl_regfile *rf, uint32_t base, uint32_t next, uint16_t cap);

/* ---- Component block: capability array and HDM decoders --------------- */

struct vcxl_hdm_decoder {
	uint64_t base, size, skip;
	uint32_t ctrl;
	unsigned ways;	      /* decoded IW */
	unsigned granularity; /* decoded IG, bytes */
	bool committed, lock_on_commit, hostonly;
};

/* Why a commit was refused (each sets Error Not Committed). */
enum vcxl_hdm_commit_err {
	VCXL_HDM_OK = 0,
	VCXL_HDM_ERR_DISABLED, /* HDM Decoder Enable clear */
	VCXL_HDM_ERR_ORDER,    /* decoder n-1 not committed */
	VCXL_HDM_ERR_ZERO_SIZE,
	VCXL_HDM_ERR_ALIGN,   /* base/size/skip not 256 MiB granular, size % ways */
	VCXL_HDM_ERR_IW,      /* ways encoding invalid or beyond capability */
	VCXL_HDM_ERR_IG,      /* granularity encoding invalid or beyond capability */
	VCXL_HDM_ERR_OVERLAP, /* HPA range below/overlapping decoder n-1 */
	VCXL_HDM_ERR_DPA,     /* DPA range (skip included) beyond capacity */
	VCXL_HDM_ERR_POLICY,  /* refused by the owner's validate callback */
};

struct vcxl_hdm;

struct vcxl_hdm_ops {
	/* Extra owner check after the spec checks (e.g. guest base/size against the
	 * exposed region). Return VCXL_HDM_OK or VCXL_HDM_ERR_POLICY. May be NULL. */
	enum vcxl_hdm_commit_err (*validate)(void *opaque, struct vcxl_hdm *h, unsigned n,
					     const struct vcxl_hdm_decoder *d);
	/* After decoder n became committed (on=true) or was decommitted. May be NULL. */
	void (*changed)(void *opaque, struct vcxl_hdm *h, unsigned n, bool on);
};

struct vcxl_comp_cfg {
	unsigned hdm_count;	/* 1..CXL_HDM_MAX_DECODERS_DEVICE */
	uint32_t hdm_cap_flags; /* CXL_HDM_CAP_IL_* / IW_* / POISON bits */
	bool ras;		/* include a RAS capability */
	bool link;		/* include a Link capability */
	bool hostonly_reset;	/* Target Range Type reset value (Type-3: 1) */
	uint64_t dpa_capacity;	/* 0 = no DPA check (virtual view) */
};

struct vcxl_hdm {
	struct vcxl_regfile *rf;
	uint32_t off; /* HDM capability offset within rf */
	unsigned count;
	uint32_t cap_flags;
	uint64_t dpa_capacity;
	int committed_group[CXL_HDM_MAX_DECODERS_DEVICE];
	int lock_group[CXL_HDM_MAX_DECODERS_DEVICE];
	enum vcxl_hdm_commit_err last_err[CXL_HDM_MAX_DECODERS_DEVICE];
	const struct vcxl_hdm_ops *ops;
	void *opaque;
};

struct vcxl_comp {
	struct vcxl_regfile *rf;
	uint32_t cm_off;  /* offset of the CM range (component block + 0x1000) in rf */
	uint32_t ras_off; /* offsets within rf, 0 if absent */
	uint32_t link_off;
	struct vcxl_hdm hdm;
};

/* CXL r3.1 8.2.4: lay out the CM capability array (header ID 1, pointers
 * relative to the CM range) with HDM (and RAS/Link when asked) in rf at
 * cm_off; every CM dword is 4/8-byte access only. */
int vcxl_comp_layout(struct vcxl_comp *c, struct vcxl_regfile *rf, uint32_t cm_off,
		     const struct vcxl_comp_cfg *cfg, const struct vcxl_hdm_ops *ops, void *opaque);

/* Decoder count encoding (CXL r3.1 8.2.4.20.1). -1 for an invalid value. */
int vcxl_hdm_count_encode(unsigned count);
int vcxl_hdm_count_decode(unsigned enc);
/* IW/IG encodings. ways/granularity 0 on an invalid encoding. */
unsigned vcxl_hdm_iw_decode(unsigned iw);
int vcxl_hdm_iw_encode(unsigned ways);
unsigned vcxl_hdm_ig_decode(unsigned ig);
int vcxl_hdm_ig_encode(unsigned granularity);

void vcxl_hdm_decoder_get(const struct vcxl_hdm *h, unsigned n, struct vcxl_hdm_decoder *d);
/* Translate an HPA through the committed decoders (QEMU-style DPA walk). */
bool vcxl_hdm_decode(const struct vcxl_hdm *h, uint64_t hpa, uint64_t *dpa);
/* Reset every decoder and Global Control to reset values (clears locks). */
void vcxl_hdm_reset(struct vcxl_hdm *h);
const char *vcxl_hdm_err_str(enum vcxl_hdm_commit_err e);
/* The commit rules (spec checks, then ops->validate) applied to d as decoder n. */
enum vcxl_hdm_commit_err vcxl_hdm_check(struct vcxl_hdm *h, unsigned n,
					const struct vcxl_hdm_decoder *d);
/* Owner ("firmware") programming of decoder n, around the locks: base, size,
 * skip and ctrl's IG/IW/Lock-On-Commit/Target-type from d; with commit, sets
 * Commit and runs the commit rules (Committed or Error Not Committed). A
 * decoder that was committed is decommitted first. */
enum vcxl_hdm_commit_err vcxl_hdm_program(struct vcxl_hdm *h, unsigned n,
					  const struct vcxl_hdm_decoder *d, bool commit);
/* True if [hpa, hpa+len) decodes through one committed decoder to one
 * contiguous DPA range starting at *dpa. */
bool vcxl_hdm_decode_contig(const struct vcxl_hdm *h, uint64_t hpa, uint64_t len, uint64_t *dpa);
/* ---- HDM decoders as a driver programs them (host core, vcxl CLI) ------ */

/* Register writer matching vcxl_cfg_read32_fn. */
typedef int (*vcxl_reg_write32_fn)(void *opaque, uint32_t off, uint32_t val);

/* Dword access to one HDM Decoder Capability structure; offsets are relative
 * to it (CXL_HDM_CAP, CXL_HDM_DEC_CTRL(n), ...). */
struct vcxl_hdm_io {
	vcxl_cfg_read32_fn rd;
	vcxl_reg_write32_fn wr;
	void *opaque;
};

/* Decoders the HDM Decoder Capability register announces (8.2.4.20.1):
 * 0 + count, -EINVAL for a reserved encoding, or the read's -errno. */
int vcxl_hdm_io_count(const struct vcxl_hdm_io *io, unsigned *count);
/* Decoder n's registers, decoded as vcxl_hdm_decoder_get() does. */
int vcxl_hdm_io_read(const struct vcxl_hdm_io *io, unsigned n, struct vcxl_hdm_decoder *d);
/* The Control value that commits one way at 256 B granularity with Target
 * Range Type host-only (HDM-H, Type-3 memory) or device-coherent (Type-2), as
 * Linux's cxld_set_type(); Lock On Commit and the reserved bits as found. */
uint32_t vcxl_hdm_commit_ctrl(uint32_t ctrl_now, bool hostonly);
/* Linux's setup_hw_decoder() order: base, size and skip (high dword first),
 * then Control. */
int vcxl_hdm_io_program(const struct vcxl_hdm_io *io, unsigned n, uint64_t base, uint64_t size,
			uint64_t skip, uint32_t ctrl);
/* The same for a port's decoder (a host bridge's or a switch's): its third
 * register pair is the Target List (8.2.4.20.10-11: the Target Port
 * Identifier of interleave way i in byte i), written as is. */
int vcxl_hdm_io_program_port(const struct vcxl_hdm_io *io, unsigned n, uint64_t base, uint64_t size,
			     uint64_t targets, uint32_t ctrl);
/* A port decoder's Target List, as is. */
int vcxl_hdm_io_read_targets(const struct vcxl_hdm_io *io, unsigned n, uint64_t *targets);
/* Linux's cxl_decoder_reset(): clear Commit, then size, base and skip (or
 * Target List). */
int vcxl_hdm_io_decommit(const struct vcxl_hdm_io *io, unsigned n);
/* Set or clear HDM Decoder Enable (8.2.4.20.2); *changed (may be NULL) says
 * whether the register was written. */
int vcxl_hdm_io_set_enable(const struct vcxl_hdm_io *io, bool on, bool *changed);

/* Find capability `id` in a CM capability array; rd reads dwords at offsets
 * relative to the CM range (component block + 0x1000). *off is CM-relative.
 * -ENODEV if there is no array header, -ENOENT if not present. */
int vcxl_comp_find_cap(vcxl_cfg_read32_fn rd, void *opaque, uint16_t id, uint32_t *off);

/* ---- DOE mailbox with Discovery and CDAT table access ------------------ */

struct vcxl_doe {
	struct vcxl_regfile *rf;
	uint32_t base;
	const uint8_t *cdat; /* whole CDAT table, header first */
	size_t cdat_len;
	uint32_t req[64];
	unsigned req_len;
	uint32_t rsp[1024];
	unsigned rsp_len, rsp_pos;
	bool busy;
	uint64_t objects; /* objects served, for diagnostics */
};

/* Lay out a DOE capability at base with Discovery + CXL table access (CDAT). */
int vcxl_doe_layout(struct vcxl_doe *doe, struct vcxl_regfile *rf, uint32_t base, uint32_t next,
		    const uint8_t *cdat, size_t cdat_len);
void vcxl_doe_reset(struct vcxl_doe *doe);

struct vcxl_cdat_range {
	uint64_t dpa_base, dpa_len;
	uint8_t dsmas_flags; /* CDAT_DSMAS_FLAG_* */
	uint8_t efi_type;    /* CDAT_DSEMTS_EFI_* */
	uint16_t read_lat_ns, write_lat_ns;
	uint16_t read_bw_gbs, write_bw_gbs;
};

/* Build a CDAT table (header, per range DSMAS + 4 DSLBIS + DSEMTS) into buf.
 * Returns the length, or -ENOSPC if it doesn't fit. Checksum is filled in. */
int vcxl_cdat_build(uint8_t *buf, size_t cap, const struct vcxl_cdat_range *r, unsigned n);

#endif /* VCXL_CXL_SPEC_H */
