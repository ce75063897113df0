// SPDX-License-Identifier: BSD-3-Clause
/*
 * The CXL memory device register block (CXL r3.1 8.2.8) and the Type-3
 * mailbox command set (8.2.9). See src/cxl/cxl_mbox.h.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "cxl/cxl_mbox.h"

#define MBOX_VARIABLE UINT32_MAX
#define MBOX_F_LSA    VCXL_BIT(0) /* only with a label storage area */
#define MBOX_F_BG     VCXL_BIT(1) /* runs in the background */

/* Capability header versions [spec] */
#define CAP_VER_STATUS 1
#define CAP_VER_MBOX   1
#define CAP_VER_MEMDEV 1

/* The model scans quickly: Get Scan Media Capabilities estimate, ms */
#define SCAN_ESTIMATE_MS 1

static const uint8_t cel_uuid[CXL_UUID_SIZE] = CXL_CEL_UUID;

/* ---- little-endian payload fields --------------------------------------- */

static void put_le(uint8_t *p, unsigned n, uint64_t v)
{
	for (unsigned i = 0; i < n; i++)
		p[i] = (uint8_t)(v >> (8 * i));
}

static uint64_t get_le(const uint8_t *p, unsigned n)
{
	uint64_t v = 0;
	for (unsigned i = 0; i < n; i++)
		v |= (uint64_t)p[i] << (8 * i);
	return v;
}

static uint32_t mbox_reg(const struct vcxl_memdev *d, uint32_t reg)
{
	return d->base + VCXL_MDEV_MBOX_OFF + reg;
}

static void rf_set64(struct vcxl_regfile *rf, uint32_t off, uint64_t v)
{
	vcxl_rf_set32(rf, off, (uint32_t)v);
	vcxl_rf_set32(rf, off + 4, (uint32_t)(v >> 32));
}

static uint64_t now_ns(const struct vcxl_memdev *d)
{
	struct timespec ts;

	if (d->ops && d->ops->now_ns)
		return d->ops->now_ns(d->opaque);
	clock_gettime(CLOCK_REALTIME, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

static uint64_t total_bytes(const struct vcxl_memdev *d)
{
	return d->facts.volatile_bytes + d->facts.persistent_bytes;
}

/* A DPA range in 64-byte units must lie inside the device (8.2.9.9.4.1). */
static uint16_t check_dpa_range(const struct vcxl_memdev *d, const uint8_t *in)
{
	uint64_t dpa = get_le(in, 8) & ~(uint64_t)(CXL_POISON_UNIT - 1);
	uint64_t units = get_le(in + 8, 8), len, end;

	if (units == 0)
		return CXL_MBOX_RC_INVALID_INPUT; /* [spec] */
	if (__builtin_mul_overflow(units, (uint64_t)CXL_POISON_UNIT, &len) ||
	    __builtin_add_overflow(dpa, len, &end) || end > total_bytes(d))
		return CXL_MBOX_RC_INVALID_PA;
	return CXL_MBOX_RC_SUCCESS;
}

/* ---- events (8.2.9.2) ----------------------------------------------------- */

/* 8.2.9.2.2: the logs are always empty: a header with no records. */
static uint16_t cmd_get_events(struct vcxl_memdev *d, struct vcxl_mbox_cmd *c)
{
	if (c->in[0] > CXL_EVENT_LOG_MAX)
		return CXL_MBOX_RC_INVALID_INPUT;
	memset(c->out, 0, CXL_GET_EVENTS_HDR_SIZE);
	c->out_len = CXL_GET_EVENTS_HDR_SIZE;
	return CXL_MBOX_RC_SUCCESS;
}

/* 8.2.9.2.3: no record exists, so any handle given is invalid. */
static uint16_t cmd_clear_events(struct vcxl_memdev *d, struct vcxl_mbox_cmd *c)
{
	uint8_t flags = c->in[CXL_CLEAR_EVENTS_FLAGS], nr = c->in[CXL_CLEAR_EVENTS_COUNT];

	if (c->in_len < CXL_CLEAR_EVENTS_HDR_SIZE + 2u * nr)
		return CXL_MBOX_RC_INVALID_PAYLOAD_LEN;
	if (c->in[0] > CXL_EVENT_LOG_MAX || ((flags & CXL_CLEAR_EVENTS_ALL) && nr))
		return CXL_MBOX_RC_INVALID_INPUT;
	return nr ? CXL_MBOX_RC_INVALID_HANDLE : CXL_MBOX_RC_SUCCESS;
}

static uint16_t cmd_get_int_policy(struct vcxl_memdev *d, struct vcxl_mbox_cmd *c)
{
	memcpy(c->out, d->int_policy, CXL_INT_POLICY_SIZE);
	c->out_len = CXL_INT_POLICY_SIZE;
	return CXL_MBOX_RC_SUCCESS;
}

/* 8.2.9.2.5: the message number is the device's; firmware-first signalling is
 * not offered (there is no firmware to signal), and there is no dynamic
 * capacity log, so its byte (r3.0) must say "no interrupts". */
static uint16_t cmd_set_int_policy(struct vcxl_memdev *d, struct vcxl_mbox_cmd *c)
{
	for (size_t i = 0; i < c->in_len; i++) {
		unsigned mode = (unsigned)VCXL_FIELD_GET(CXL_INT_MODE, c->in[i]);
		if (mode != CXL_INT_NONE && (mode != CXL_INT_MSI_MSIX || i >= VCXL_MDEV_EVENT_LOGS))
			return CXL_MBOX_RC_INVALID_INPUT;
	}
	for (size_t i = 0; i < c->in_len; i++) {
		unsigned mode = (unsigned)VCXL_FIELD_GET(CXL_INT_MODE, c->in[i]);
		d->int_policy[i] =
		    (uint8_t)(mode == CXL_INT_MSI_MSIX
				  ? mode | VCXL_FIELD_PREP(CXL_INT_MSGNUM, d->facts.event_msgnum)
				  : CXL_INT_NONE);
	}
	return CXL_MBOX_RC_SUCCESS;
}

/* ---- firmware, timestamp, logs (8.2.9.3-5) ---------------------------- */

/* 8.2.9.3.1: one slot, active, holding the running revision. */
static uint16_t cmd_get_fw_info(struct vcxl_memdev *d, struct vcxl_mbox_cmd *c)
{
	memset(c->out, 0, CXL_FW_INFO_SIZE);
	c->out[CXL_FW_INFO_SLOTS] = 1;
	c->out[CXL_FW_INFO_SLOT_INFO] = (uint8_t)VCXL_FIELD_PREP(CXL_FW_INFO_SLOT_CUR, 1);
	memcpy(c->out + CXL_FW_INFO_SLOT1_REV, d->facts.fw_revision, CXL_IDENTIFY_FW_REV_LEN);
	c->out_len = CXL_FW_INFO_SIZE;
	return CXL_MBOX_RC_SUCCESS;
}

/* 8.2.9.4.1: the set value plus the time elapsed since; 0 if never set [spec]. */
static uint16_t cmd_get_timestamp(struct vcxl_memdev *d, struct vcxl_mbox_cmd *c)
{
	uint64_t ts = d->ts_valid ? d->ts_value + (now_ns(d) - d->ts_set_at) : 0;

	put_le(c->out, CXL_TIMESTAMP_SIZE, ts);
	c->out_len = CXL_TIMESTAMP_SIZE;
	return CXL_MBOX_RC_SUCCESS;
}

static uint16_t cmd_set_timestamp(struct vcxl_memdev *d, struct vcxl_mbox_cmd *c)
{
	d->ts_value = get_le(c->in, CXL_TIMESTAMP_SIZE);
	d->ts_set_at = now_ns(d);
	d->ts_valid = true;
	return CXL_MBOX_RC_SUCCESS;
}

/* 8.2.9.5.1: one log, the CEL. */
static uint16_t cmd_get_supported_logs(struct vcxl_memdev *d, struct vcxl_mbox_cmd *c)
{
	uint8_t *e = c->out + CXL_GSL_HDR_SIZE;

	memset(c->out, 0, CXL_GSL_HDR_SIZE + CXL_GSL_ENTRY_SIZE);
	put_le(c->out, 2, 1);
	memcpy(e, cel_uuid, CXL_UUID_SIZE);
	put_le(e + CXL_UUID_SIZE, 4, (uint64_t)vcxl_mbox_cel_count(d) * CXL_CEL_ENTRY_SIZE);
	c->out_len = CXL_GSL_HDR_SIZE + CXL_GSL_ENTRY_SIZE;
	return CXL_MBOX_RC_SUCCESS;
}

/* 8.2.9.5.2: bytes [offset, offset + length) of the CEL. */
static uint16_t cmd_get_log(struct vcxl_memdev *d, struct vcxl_mbox_cmd *c)
{
	uint64_t off = get_le(c->in + CXL_GET_LOG_IN_OFFSET, 4);
	uint64_t len = get_le(c->in + CXL_GET_LOG_IN_LENGTH, 4);
	uint64_t size = (uint64_t)vcxl_mbox_cel_count(d) * CXL_CEL_ENTRY_SIZE;

	if (memcmp(c->in, cel_uuid, CXL_UUID_SIZE))
		return CXL_MBOX_RC_INVALID_LOG;
	if (len > c->out_cap || off > size || len > size - off)
		return CXL_MBOX_RC_INVALID_INPUT;
	for (uint64_t b = off; b < off + len; b++) {
		uint16_t op = 0, eff = 0;
		vcxl_mbox_cel_entry(d, (unsigned)(b / CXL_CEL_ENTRY_SIZE), &op, &eff);
		uint32_t entry = op | ((uint32_t)eff << 16);
		c->out[b - off] = (uint8_t)(entry >> (8 * (b % CXL_CEL_ENTRY_SIZE)));
	}
	c->out_len = (size_t)len;
	return CXL_MBOX_RC_SUCCESS;
}

/* ---- memory device commands (8.2.9.9) ------------------------------------ */

/* 8.2.9.9.1.1: capacities in 256 MiB units; not partitionable (alignment 0). */
static uint16_t cmd_identify(struct vcxl_memdev *d, struct vcxl_mbox_cmd *c)
{
	const struct vcxl_memdev_facts *f = &d->facts;
	uint8_t *o = c->out;

	memset(o, 0, CXL_IDENTIFY_SIZE);
	memcpy(o + CXL_IDENTIFY_FW_REV, f->fw_revision, CXL_IDENTIFY_FW_REV_LEN);
	put_le(o + CXL_IDENTIFY_TOTAL_CAP, 8, total_bytes(d) / CXL_CAPACITY_UNIT);
	put_le(o + CXL_IDENTIFY_VOLATILE_CAP, 8, f->volatile_bytes / CXL_CAPACITY_UNIT);
	put_le(o + CXL_IDENTIFY_PERSISTENT_CAP, 8, f->persistent_bytes / CXL_CAPACITY_UNIT);
	for (unsigned l = 0; l < VCXL_MDEV_EVENT_LOGS; l++)
		put_le(o + CXL_IDENTIFY_INFO_LOG_SIZE + 2 * l, 2, f->event_log_size);
	put_le(o + CXL_IDENTIFY_LSA_SIZE, 4, f->lsa_size);
	put_le(o + CXL_IDENTIFY_POISON_MAX, 3, f->poison_max);
	c->out_len = CXL_IDENTIFY_SIZE;
	return CXL_MBOX_RC_SUCCESS;
}

/* 8.2.9.9.2.1: active = all capacity as identified, nothing pending. */
static uint16_t cmd_get_partition_info(struct vcxl_memdev *d, struct vcxl_mbox_cmd *c)
{
	memset(c->out, 0, CXL_PARTITION_INFO_SIZE);
	put_le(c->out, 8, d->facts.volatile_bytes / CXL_CAPACITY_UNIT);
	put_le(c->out + 8, 8, d->facts.persistent_bytes / CXL_CAPACITY_UNIT);
	c->out_len = CXL_PARTITION_INFO_SIZE;
	return CXL_MBOX_RC_SUCCESS;
}

static bool lsa_range_ok(const struct vcxl_memdev *d, uint64_t off, uint64_t len)
{
	return off <= d->facts.lsa_size && len <= d->facts.lsa_size - off;
}

/* 8.2.9.9.2.3 */
static uint16_t cmd_get_lsa(struct vcxl_memdev *d, struct vcxl_mbox_cmd *c)
{
	uint64_t off = get_le(c->in, 4), len = get_le(c->in + 4, 4);

	if (len > c->out_cap || !lsa_range_ok(d, off, len))
		return CXL_MBOX_RC_INVALID_INPUT;
	memcpy(c->out, d->facts.lsa + off, (size_t)len);
	c->out_len = (size_t)len;
	return CXL_MBOX_RC_SUCCESS;
}

/* 8.2.9.9.2.4 */
static uint16_t cmd_set_lsa(struct vcxl_memdev *d, struct vcxl_mbox_cmd *c)
{
	uint64_t off = get_le(c->in, 4), len = c->in_len - CXL_SET_LSA_HDR_SIZE;

	if (!lsa_range_ok(d, off, len))
		return CXL_MBOX_RC_INVALID_INPUT;
	memcpy(d->facts.lsa + off, c->in + CXL_SET_LSA_HDR_SIZE, (size_t)len);
	return CXL_MBOX_RC_SUCCESS;
}

/* 8.2.9.9.3.1: healthy, media normal, nothing used up, no errors counted. */
static uint16_t cmd_get_health_info(struct vcxl_memdev *d, struct vcxl_mbox_cmd *c)
{
	memset(c->out, 0, CXL_HEALTH_INFO_SIZE);
	put_le(c->out + CXL_HEALTH_TEMPERATURE, 2, (uint16_t)d->facts.temperature_c);
	c->out_len = CXL_HEALTH_INFO_SIZE;
	return CXL_MBOX_RC_SUCCESS;
}

/* 8.2.9.9.3.2: no alert is valid or programmable. */
static uint16_t cmd_get_alert_config(struct vcxl_memdev *d, struct vcxl_mbox_cmd *c)
{
	memset(c->out, 0, CXL_ALERT_CONFIG_SIZE);
	c->out_len = CXL_ALERT_CONFIG_SIZE;
	return CXL_MBOX_RC_SUCCESS;
}

/* 8.2.9.9.4.1: the media has no poison; a running scan is flagged. */
static uint16_t cmd_get_poison(struct vcxl_memdev *d, struct vcxl_mbox_cmd *c)
{
	uint16_t rc = check_dpa_range(d, c->in);

	if (rc)
		return rc;
	memset(c->out, 0, CXL_POISON_OUT_HDR_SIZE);
	if (d->bg_running && d->bg_opcode == CXL_MBOX_OP_SCAN_MEDIA)
		c->out[CXL_POISON_OUT_FLAGS] = CXL_POISON_FLAG_SCANNING;
	c->out_len = CXL_POISON_OUT_HDR_SIZE;
	return CXL_MBOX_RC_SUCCESS;
}

/* 8.2.9.9.4.4 */
static uint16_t cmd_get_scan_caps(struct vcxl_memdev *d, struct vcxl_mbox_cmd *c)
{
	uint16_t rc = check_dpa_range(d, c->in);

	if (rc)
		return rc;
	put_le(c->out, CXL_SCAN_CAPS_OUT_SIZE, SCAN_ESTIMATE_MS);
	c->out_len = CXL_SCAN_CAPS_OUT_SIZE;
	return CXL_MBOX_RC_SUCCESS;
}

/* 8.2.9.9.4.5: a background command; it ends at vcxl_memdev_bg_complete(). */
static uint16_t cmd_scan_media(struct vcxl_memdev *d, struct vcxl_mbox_cmd *c)
{
	uint16_t rc = check_dpa_range(d, c->in);

	if (rc)
		return rc;
	d->bg_running = true;
	d->bg_opcode = c->opcode;
	d->scan_valid = false;
	rf_set64(d->rf, mbox_reg(d, CXLDEV_MBOX_BG_STATUS),
		 VCXL_FIELD_PREP(CXLDEV_MBOX_BG_OPCODE, c->opcode));
	vcxl_rf_update32(d->rf, mbox_reg(d, CXLDEV_MBOX_STATUS), (uint32_t)CXLDEV_MBOX_STATUS_BG_OP,
			 (uint32_t)CXLDEV_MBOX_STATUS_BG_OP);
	if (d->ops && d->ops->bg_started)
		d->ops->bg_started(d->opaque, d, c->opcode);
	return CXL_MBOX_RC_BACKGROUND;
}

/* 8.2.9.9.4.6: results of the last completed scan: no errors found. */
static uint16_t cmd_get_scan_results(struct vcxl_memdev *d, struct vcxl_mbox_cmd *c)
{
	if (d->bg_running && d->bg_opcode == CXL_MBOX_OP_SCAN_MEDIA)
		return CXL_MBOX_RC_BUSY;
	if (!d->scan_valid)
		return CXL_MBOX_RC_INVALID_INPUT; /* no scan since reset [spec] */
	memset(c->out, 0, CXL_SCAN_RESULTS_HDR_SIZE);
	c->out_len = CXL_SCAN_RESULTS_HDR_SIZE;
	return CXL_MBOX_RC_SUCCESS;
}

/* ---- the command set ------------------------------------------------------ */

struct mbox_cmd_desc {
	uint16_t opcode;
	uint16_t effect; /* CXL_CEL_EFFECT_* */
	uint32_t in_min, in_max;
	uint8_t flags; /* MBOX_F_* */
	uint16_t (*fn)(struct vcxl_memdev *d, struct vcxl_mbox_cmd *c);
	const char *name;
};

static const struct mbox_cmd_desc mbox_cmds[] = {
    {CXL_MBOX_OP_GET_EVENT_RECORDS, 0, CXL_GET_EVENTS_IN_SIZE, CXL_GET_EVENTS_IN_SIZE, 0,
     cmd_get_events, "Get Event Records"},
    {CXL_MBOX_OP_CLEAR_EVENT_RECORDS, CXL_CEL_EFFECT_IMM_LOG, CXL_CLEAR_EVENTS_HDR_SIZE,
     MBOX_VARIABLE, 0, cmd_clear_events, "Clear Event Records"},
    {CXL_MBOX_OP_GET_EVT_INT_POLICY, 0, 0, 0, 0, cmd_get_int_policy, "Get Event Interrupt Policy"},
    {CXL_MBOX_OP_SET_EVT_INT_POLICY, CXL_CEL_EFFECT_IMM_CONFIG, CXL_INT_POLICY_SIZE_V2,
     CXL_INT_POLICY_SIZE, 0, cmd_set_int_policy, "Set Event Interrupt Policy"},
    {CXL_MBOX_OP_GET_FW_INFO, 0, 0, 0, 0, cmd_get_fw_info, "Get FW Info"},
    {CXL_MBOX_OP_GET_TIMESTAMP, 0, 0, 0, 0, cmd_get_timestamp, "Get Timestamp"},
    {CXL_MBOX_OP_SET_TIMESTAMP, CXL_CEL_EFFECT_IMM_POLICY, CXL_TIMESTAMP_SIZE, CXL_TIMESTAMP_SIZE,
     0, cmd_set_timestamp, "Set Timestamp"},
    {CXL_MBOX_OP_GET_SUPPORTED_LOGS, 0, 0, 0, 0, cmd_get_supported_logs, "Get Supported Logs"},
    {CXL_MBOX_OP_GET_LOG, 0, CXL_GET_LOG_IN_SIZE, CXL_GET_LOG_IN_SIZE, 0, cmd_get_log, "Get Log"},
    {CXL_MBOX_OP_IDENTIFY, 0, 0, 0, 0, cmd_identify, "Identify Memory Device"},
    {CXL_MBOX_OP_GET_PARTITION_INFO, 0, 0, 0, 0, cmd_get_partition_info, "Get Partition Info"},
    {CXL_MBOX_OP_GET_LSA, 0, CXL_GET_LSA_IN_SIZE, CXL_GET_LSA_IN_SIZE, MBOX_F_LSA, cmd_get_lsa,
     "Get LSA"},
    {CXL_MBOX_OP_SET_LSA, CXL_CEL_EFFECT_IMM_CONFIG | CXL_CEL_EFFECT_IMM_DATA, CXL_SET_LSA_HDR_SIZE,
     MBOX_VARIABLE, MBOX_F_LSA, cmd_set_lsa, "Set LSA"},
    {CXL_MBOX_OP_GET_HEALTH_INFO, 0, 0, 0, 0, cmd_get_health_info, "Get Health Info"},
    {CXL_MBOX_OP_GET_ALERT_CONFIG, 0, 0, 0, 0, cmd_get_alert_config, "Get Alert Configuration"},
    {CXL_MBOX_OP_GET_POISON, 0, CXL_POISON_IN_SIZE, CXL_POISON_IN_SIZE, 0, cmd_get_poison,
     "Get Poison List"},
    {CXL_MBOX_OP_GET_SCAN_MEDIA_CAPS, 0, CXL_SCAN_CAPS_IN_SIZE, CXL_SCAN_CAPS_IN_SIZE, 0,
     cmd_get_scan_caps, "Get Scan Media Capabilities"},
    {CXL_MBOX_OP_SCAN_MEDIA, CXL_CEL_EFFECT_BACKGROUND, CXL_SCAN_MEDIA_IN_SIZE,
     CXL_SCAN_MEDIA_IN_SIZE, MBOX_F_BG, cmd_scan_media, "Scan Media"},
    {CXL_MBOX_OP_GET_SCAN_MEDIA, 0, 0, 0, 0, cmd_get_scan_results, "Get Scan Media Results"},
};

#define MBOX_NR_CMDS (sizeof(mbox_cmds) / sizeof(mbox_cmds[0]))

static bool cmd_available(const struct vcxl_memdev *d, const struct mbox_cmd_desc *c)
{
	return !(c->flags & MBOX_F_LSA) || (d->facts.lsa_size && d->facts.lsa);
}

static const struct mbox_cmd_desc *cmd_find(const struct vcxl_memdev *d, uint16_t opcode)
{
	for (unsigned i = 0; i < MBOX_NR_CMDS; i++)
		if (mbox_cmds[i].opcode == opcode)
			return cmd_available(d, &mbox_cmds[i]) ? &mbox_cmds[i] : NULL;
	return NULL;
}

unsigned vcxl_mbox_cel_count(const struct vcxl_memdev *d)
{
	unsigned n = 0;
	for (unsigned i = 0; i < MBOX_NR_CMDS; i++)
		n += cmd_available(d, &mbox_cmds[i]);
	return n;
}

int vcxl_mbox_cel_entry(const struct vcxl_memdev *d, unsigned i, uint16_t *opcode, uint16_t *effect)
{
	for (unsigned k = 0; k < MBOX_NR_CMDS; k++) {
		if (!cmd_available(d, &mbox_cmds[k]))
			continue;
		if (i-- == 0) {
			*opcode = mbox_cmds[k].opcode;
			*effect = mbox_cmds[k].effect;
			return 0;
		}
	}
	return -ENOENT;
}

const char *vcxl_mbox_opcode_name(uint16_t opcode)
{
	for (unsigned i = 0; i < MBOX_NR_CMDS; i++)
		if (mbox_cmds[i].opcode == opcode)
			return mbox_cmds[i].name;
	return "unknown";
}

/* CXL r3.1 Table 8-34: Command Return Codes */
const char *vcxl_mbox_rc_name(uint16_t rc)
{
	static const char *const names[] = {
	    [CXL_MBOX_RC_SUCCESS] = "Success",
	    [CXL_MBOX_RC_BACKGROUND] = "Background Command Started",
	    [CXL_MBOX_RC_INVALID_INPUT] = "Invalid Input",
	    [CXL_MBOX_RC_UNSUPPORTED] = "Unsupported",
	    [CXL_MBOX_RC_INTERNAL] = "Internal Error",
	    [CXL_MBOX_RC_RETRY] = "Retry Required",
	    [CXL_MBOX_RC_BUSY] = "Busy",
	    [CXL_MBOX_RC_MEDIA_DISABLED] = "Media Disabled",
	    [CXL_MBOX_RC_FW_IN_PROGRESS] = "FW Transfer in Progress",
	    [CXL_MBOX_RC_FW_OUT_OF_ORDER] = "FW Transfer Out of Order",
	    [CXL_MBOX_RC_FW_AUTH_FAILED] = "FW Verification Failed",
	    [CXL_MBOX_RC_FW_INVALID_SLOT] = "Invalid Slot",
	    [CXL_MBOX_RC_FW_ROLLED_BACK] = "Activation Failed, FW Rolled Back",
	    [CXL_MBOX_RC_FW_COLD_RESET] = "Activation Failed, Cold Reset Required",
	    [CXL_MBOX_RC_INVALID_HANDLE] = "Invalid Handle",
	    [CXL_MBOX_RC_INVALID_PA] = "Invalid Physical Address",
	    [CXL_MBOX_RC_POISON_LIMIT] = "Inject Poison Limit Reached",
	    [CXL_MBOX_RC_MEDIA_FAILURE] = "Permanent Media Failure",
	    [CXL_MBOX_RC_ABORTED] = "Aborted",
	    [CXL_MBOX_RC_INVALID_SECURITY] = "Invalid Security State",
	    [CXL_MBOX_RC_BAD_PASSPHRASE] = "Incorrect Passphrase",
	    [CXL_MBOX_RC_UNSUPPORTED_MBOX] = "Unsupported Mailbox or CCI",
	    [CXL_MBOX_RC_INVALID_PAYLOAD_LEN] = "Invalid Payload Length",
	    [CXL_MBOX_RC_INVALID_LOG] = "Invalid Log",
	    [CXL_MBOX_RC_INTERRUPTED] = "Interrupted",
	    [CXL_MBOX_RC_FEAT_VERSION] = "Unsupported Feature Version",
	    [CXL_MBOX_RC_FEAT_SELECTION] = "Unsupported Feature Selection Value",
	    [CXL_MBOX_RC_FEAT_IN_PROGRESS] = "Feature Transfer in Progress",
	    [CXL_MBOX_RC_FEAT_OUT_OF_ORDER] = "Feature Transfer Out of Order",
	    [CXL_MBOX_RC_RESOURCES_EXHAUSTED] = "Resources Exhausted",
	    [CXL_MBOX_RC_INVALID_EXTENT_LIST] = "Invalid Extent List",
	};

	return rc < sizeof(names) / sizeof(names[0]) && names[rc] ? names[rc] : "unknown";
}

/* CXL r3.1 8.2.8.4.5: dispatch, with the payload length rules of each command. */
uint16_t vcxl_mbox_execute(struct vcxl_memdev *d, struct vcxl_mbox_cmd *c)
{
	const struct mbox_cmd_desc *desc = cmd_find(d, c->opcode);
	uint16_t rc;

	c->out_len = 0;
	if (!desc)
		return CXL_MBOX_RC_UNSUPPORTED;
	if (c->in_len > d->payload_size || c->in_len < desc->in_min || c->in_len > desc->in_max)
		return CXL_MBOX_RC_INVALID_PAYLOAD_LEN;
	if ((desc->flags & MBOX_F_BG) && d->bg_running)
		return CXL_MBOX_RC_BUSY;
	rc = desc->fn(d, c);
	if ((rc != CXL_MBOX_RC_SUCCESS && rc != CXL_MBOX_RC_BACKGROUND) || c->out_len > c->out_cap)
		c->out_len = 0;
	return rc;
}

/* ---- the registers -------------------------------------------------------- */

/*
 * CXL r3.1 8.2.8.4.4 steps 4-7: the doorbell was rung. Read the command and its
 * input, run it, then publish output, Payload Length and Return Code; the
 * caller clears the doorbell last. A length beyond the payload registers is
 * refused before anything is read.
 */
static void mbox_run(struct vcxl_memdev *d)
{
	uint64_t cmd = vcxl_rf_get64(d->rf, mbox_reg(d, CXLDEV_MBOX_CMD));
	uint32_t pl = mbox_reg(d, CXLDEV_MBOX_PAYLOAD);
	struct vcxl_mbox_cmd c = {
	    .opcode = (uint16_t)VCXL_FIELD_GET(CXLDEV_MBOX_CMD_OPCODE, cmd),
	    .in = d->in,
	    .in_len = (size_t)VCXL_FIELD_GET(CXLDEV_MBOX_CMD_PAYLOAD_LEN, cmd),
	    .out = d->out,
	    .out_cap = d->payload_size,
	};
	uint16_t rc;

	if (c.in_len > d->payload_size) {
		rc = CXL_MBOX_RC_INVALID_PAYLOAD_LEN;
	} else {
		for (size_t i = 0; i < c.in_len; i++)
			d->in[i] = vcxl_rf_get8(d->rf, pl + (uint32_t)i);
		rc = vcxl_mbox_execute(d, &c);
	}
	for (size_t i = 0; i < c.out_len; i++)
		vcxl_rf_set8(d->rf, pl + (uint32_t)i, d->out[i]);
	cmd = (cmd & CXLDEV_MBOX_CMD_OPCODE) |
	      VCXL_FIELD_PREP(CXLDEV_MBOX_CMD_PAYLOAD_LEN, c.out_len);
	rf_set64(d->rf, mbox_reg(d, CXLDEV_MBOX_CMD), cmd);
	uint64_t st = vcxl_rf_get64(d->rf, mbox_reg(d, CXLDEV_MBOX_STATUS));
	st = (st & CXLDEV_MBOX_STATUS_BG_OP) | VCXL_FIELD_PREP(CXLDEV_MBOX_STATUS_RC, rc);
	rf_set64(d->rf, mbox_reg(d, CXLDEV_MBOX_STATUS), st);
	d->commands++;
}

/* 8.2.8.4.4: writing 1 to Doorbell hands the command to the device; it reads
 * 1 until the device is done, which here is before the write returns. */
static void mbox_ctrl_write(void *opaque, struct vcxl_regfile *rf, uint32_t dw_off, uint32_t old,
			    uint32_t val)
{
	struct vcxl_memdev *d = opaque;

	if (!(val & CXLDEV_MBOX_CTRL_DOORBELL) || (old & CXLDEV_MBOX_CTRL_DOORBELL))
		return;
	mbox_run(d);
	vcxl_rf_update32(rf, dw_off, CXLDEV_MBOX_CTRL_DOORBELL, 0);
}

static void memdev_status_read(void *opaque, struct vcxl_regfile *rf, uint32_t dw_off)
{
	struct vcxl_memdev *d = opaque;

	if (d->ops && d->ops->refresh)
		d->ops->refresh(d->opaque, d);
}

/* 8.2.8.1-2: the Capabilities Array Register (ID, count), then 16-byte
 * headers (ID, offset from the block start, length). */
int vcxl_devcap_find(vcxl_cfg_read32_fn rd, void *opaque, uint16_t id, uint32_t *off, uint32_t *len)
{
	uint32_t lo, hi, hid;
	uint64_t arr;
	unsigned count;
	int rc;

	if (!rd || !off)
		return -EINVAL;
	if ((rc = rd(opaque, 0, &lo)) || (rc = rd(opaque, 4, &hi)))
		return rc;
	arr = (uint64_t)hi << 32 | lo;
	if (VCXL_FIELD_GET(CXLDEV_CAP_ARRAY_ID, arr) != CXLDEV_CAP_ARRAY_CAP_ID)
		return -ENODEV;
	count = (unsigned)VCXL_FIELD_GET(CXLDEV_CAP_ARRAY_COUNT, arr);
	for (unsigned i = 0; i < count && i < VCXL_DEVCAP_MAX_WALK; i++) {
		uint32_t h = CXLDEV_CAP_HDR_FIRST + i * CXLDEV_CAP_HDR_STRIDE;

		if ((rc = rd(opaque, h, &hid)))
			return rc;
		if (VCXL_FIELD_GET(CXLDEV_CAP_HDR_ID, hid) != id)
			continue;
		if ((rc = rd(opaque, h + CXLDEV_CAP_HDR_OFFSET, off)))
			return rc;
		if (len && (rc = rd(opaque, h + CXLDEV_CAP_HDR_LENGTH, len)))
			return rc;
		return 0;
	}
	return -ENOENT;
}

uint32_t vcxl_memdev_block_size(unsigned payload_shift)
{
	uint64_t end = VCXL_MDEV_MBOX_OFF + CXLDEV_MBOX_PAYLOAD + (1ull << payload_shift);

	return (uint32_t)((end + VCXL_SZ_4K - 1) & ~(VCXL_SZ_4K - 1));
}

/* 8.2.8.1-2: the Capabilities Array Register and one header per capability. */
static int memdev_cap_array(struct vcxl_memdev *d)
{
	static const struct {
		uint16_t id;
		uint8_t ver;
		uint32_t off;
	} caps[VCXL_MDEV_NR_CAPS] = {
	    {CXLDEV_CAP_ID_DEVICE_STATUS, CAP_VER_STATUS, VCXL_MDEV_STATUS_OFF},
	    {CXLDEV_CAP_ID_PRIMARY_MBOX, CAP_VER_MBOX, VCXL_MDEV_MBOX_OFF},
	    {CXLDEV_CAP_ID_MEMDEV, CAP_VER_MEMDEV, VCXL_MDEV_MEMDEV_OFF},
	};
	uint32_t len[VCXL_MDEV_NR_CAPS] = {
	    CXLDEV_EVENT_STATUS_SIZE, CXLDEV_MBOX_PAYLOAD + d->payload_size, CXLMDEV_STATUS_SIZE};
	uint64_t arr = VCXL_FIELD_PREP(CXLDEV_CAP_ARRAY_ID, CXLDEV_CAP_ARRAY_CAP_ID) |
		       VCXL_FIELD_PREP(CXLDEV_CAP_ARRAY_VERSION, CXLDEV_CAP_ARRAY_VER) |
		       VCXL_FIELD_PREP(CXLDEV_CAP_ARRAY_TYPE, CXLDEV_CAP_ARRAY_TYPE_MEMDEV) |
		       VCXL_FIELD_PREP(CXLDEV_CAP_ARRAY_COUNT, VCXL_MDEV_NR_CAPS);
	int rc = vcxl_rf_init_val(d->rf, d->base, 8, arr);

	for (unsigned i = 0; i < VCXL_MDEV_NR_CAPS && !rc; i++) {
		uint32_t h = d->base + CXLDEV_CAP_HDR_FIRST + i * CXLDEV_CAP_HDR_STRIDE;
		rc = vcxl_rf_init_val(d->rf, h, 4,
				      VCXL_FIELD_PREP(CXLDEV_CAP_HDR_ID, caps[i].id) |
					  VCXL_FIELD_PREP(CXLDEV_CAP_HDR_VERSION, caps[i].ver));
		rc = rc ?: vcxl_rf_init_val(d->rf, h + CXLDEV_CAP_HDR_OFFSET, 4, caps[i].off);
		rc = rc ?: vcxl_rf_init_val(d->rf, h + CXLDEV_CAP_HDR_LENGTH, 4, len[i]);
	}
	return rc;
}

/* 8.2.8.4.3-8: Capabilities RO (no doorbell interrupt; the background
 * completion interrupt with facts.bg_irq), Control's Doorbell (and Background
 * Command Completion Interrupt when capable, reserved otherwise [spec]),
 * Command opcode and length RW, Status and Background Status RO, payload RW. */
static int memdev_mailbox(struct vcxl_memdev *d)
{
	struct vcxl_regfile *rf = d->rf;
	uint32_t caps = (uint32_t)VCXL_FIELD_PREP(CXLDEV_MBOX_CAP_PAYLOAD_SIZE, d->payload_shift);
	uint32_t ctrl_rw = CXLDEV_MBOX_CTRL_DOORBELL;
	int rc;

	if (d->facts.bg_irq) {
		caps |= CXLDEV_MBOX_CAP_BG_CMD_IRQ |
			(uint32_t)VCXL_FIELD_PREP(CXLDEV_MBOX_CAP_IRQ_MSGNUM, d->facts.mbox_msgnum);
		ctrl_rw |= CXLDEV_MBOX_CTRL_BG_CMD_IRQ;
	}
	rc = vcxl_rf_init_val(rf, mbox_reg(d, CXLDEV_MBOX_CAPS), 4, caps);
	rc = rc ?: vcxl_rf_define(rf, mbox_reg(d, CXLDEV_MBOX_CTRL), 4, ctrl_rw, VCXL_RF_RW);
	rc = rc ?: vcxl_rf_define(rf, mbox_reg(d, CXLDEV_MBOX_CTRL), 4, ~ctrl_rw, VCXL_RF_RSVD);
	rc =
	    rc
		?: vcxl_rf_define(rf, mbox_reg(d, CXLDEV_MBOX_CMD), 8,
				  CXLDEV_MBOX_CMD_OPCODE | CXLDEV_MBOX_CMD_PAYLOAD_LEN, VCXL_RF_RW);
	rc = rc
		 ?: vcxl_rf_define(rf, mbox_reg(d, CXLDEV_MBOX_CMD), 8,
				   ~(CXLDEV_MBOX_CMD_OPCODE | CXLDEV_MBOX_CMD_PAYLOAD_LEN),
				   VCXL_RF_RSVD);
	for (uint32_t o = 0; o < d->payload_size && !rc; o += 8)
		rc = vcxl_rf_define(rf, mbox_reg(d, CXLDEV_MBOX_PAYLOAD) + o, 8, ~0ull, VCXL_RF_RW);
	rc = rc ?: vcxl_rf_hook(rf, mbox_reg(d, CXLDEV_MBOX_CTRL), 4, NULL, mbox_ctrl_write, d);
	return rc;
}

int vcxl_memdev_layout(struct vcxl_memdev *d, struct vcxl_regfile *rf, uint32_t base,
		       unsigned payload_shift, const struct vcxl_memdev_facts *facts,
		       const struct vcxl_memdev_ops *ops, void *opaque)
{
	uint32_t ms;
	int rc;

	if (!d || !rf || !facts || (base & 7) || payload_shift < CXLDEV_MBOX_PAYLOAD_MIN_SHIFT ||
	    payload_shift > CXLDEV_MBOX_PAYLOAD_MAX_SHIFT || base > rf->size ||
	    vcxl_memdev_block_size(payload_shift) > rf->size - base ||
	    (facts->lsa_size && !facts->lsa) ||
	    facts->mbox_msgnum > VCXL_FIELD_GET(CXLDEV_MBOX_CAP_IRQ_MSGNUM, ~0u) ||
	    (facts->volatile_bytes | facts->persistent_bytes) % CXL_CAPACITY_UNIT)
		return -EINVAL;
	*d = (struct vcxl_memdev){
	    .rf = rf,
	    .base = base,
	    .payload_shift = payload_shift,
	    .payload_size = 1u << payload_shift,
	    .facts = *facts,
	    .ops = ops,
	    .opaque = opaque,
	};
	d->in = calloc(1, d->payload_size);
	d->out = calloc(1, d->payload_size);
	if (!d->in || !d->out) {
		vcxl_memdev_fini(d);
		return -ENOMEM;
	}
	ms = (uint32_t)(VCXL_FIELD_PREP(CXLMDEV_STATUS_MEDIA, CXLMDEV_MEDIA_READY) |
			CXLMDEV_STATUS_MBOX_READY);
	rc = memdev_cap_array(d);
	/* 8.2.8.3.1: Event Status RO (the logs stay empty) */
	rc = rc ?: vcxl_rf_init_val(rf, base + VCXL_MDEV_STATUS_OFF + CXLDEV_EVENT_STATUS, 8, 0);
	rc = rc ?: memdev_mailbox(d);
	/* 8.2.8.5.1.1: Memory Device Status RO, owned by the device */
	rc = rc ?: vcxl_rf_init_val(rf, base + VCXL_MDEV_MEMDEV_OFF + CXLMDEV_STATUS, 8, ms);
	rc = rc
		 ?: vcxl_rf_hook(rf, base + VCXL_MDEV_MEMDEV_OFF + CXLMDEV_STATUS, 4,
				 memdev_status_read, NULL, d);
	if (rc)
		vcxl_memdev_fini(d);
	return rc;
}

void vcxl_memdev_fini(struct vcxl_memdev *d)
{
	if (!d)
		return;
	free(d->in);
	free(d->out);
	d->in = d->out = NULL;
}

void vcxl_memdev_reset(struct vcxl_memdev *d)
{
	vcxl_rf_reset_range(d->rf, mbox_reg(d, CXLDEV_MBOX_CTRL),
			    CXLDEV_MBOX_PAYLOAD + d->payload_size - CXLDEV_MBOX_CTRL);
	d->bg_running = false;
	d->bg_opcode = 0;
	d->scan_valid = false;
}

/* CXL r3.1 8.2.9.2.5, 8.2.9.4.2: the policy and the timestamp a guest set are
 * kept across resets by the device; a fresh block has none of either. */
void vcxl_memdev_forget(struct vcxl_memdev *d)
{
	vcxl_memdev_reset(d);
	memset(d->int_policy, 0, sizeof(d->int_policy));
	d->ts_valid = false;
	d->ts_value = d->ts_set_at = 0;
}

void vcxl_memdev_set_media(struct vcxl_memdev *d, unsigned media_status)
{
	vcxl_rf_update32(d->rf, d->base + VCXL_MDEV_MEMDEV_OFF + CXLMDEV_STATUS,
			 CXLMDEV_STATUS_MEDIA,
			 (uint32_t)VCXL_FIELD_PREP(CXLMDEV_STATUS_MEDIA, media_status));
}

void vcxl_memdev_set_mbox_ready(struct vcxl_memdev *d, bool ready)
{
	vcxl_rf_update32(d->rf, d->base + VCXL_MDEV_MEMDEV_OFF + CXLMDEV_STATUS,
			 CXLMDEV_STATUS_MBOX_READY, ready ? CXLMDEV_STATUS_MBOX_READY : 0);
}

bool vcxl_memdev_bg_busy(const struct vcxl_memdev *d)
{
	return d->bg_running;
}

/* 8.2.8.4.7: the background command finished: 100 %, its return code, and
 * Background Operation clear in the Status register. */
void vcxl_memdev_bg_complete(struct vcxl_memdev *d)
{
	if (!d->bg_running)
		return;
	rf_set64(d->rf, mbox_reg(d, CXLDEV_MBOX_BG_STATUS),
		 VCXL_FIELD_PREP(CXLDEV_MBOX_BG_OPCODE, d->bg_opcode) |
		     VCXL_FIELD_PREP(CXLDEV_MBOX_BG_PCT, 100) |
		     VCXL_FIELD_PREP(CXLDEV_MBOX_BG_RC, CXL_MBOX_RC_SUCCESS));
	vcxl_rf_update32(d->rf, mbox_reg(d, CXLDEV_MBOX_STATUS), (uint32_t)CXLDEV_MBOX_STATUS_BG_OP,
			 0);
	if (d->bg_opcode == CXL_MBOX_OP_SCAN_MEDIA)
		d->scan_valid = true;
	d->bg_running = false;
	/* 8.2.8.4.4: with Background Command Completion Interrupt set, completion
	 * signals the Interrupt Message Number of Mailbox Capabilities (8.2.8.4.3);
	 * with it clear, nothing is signalled (software polls). */
	if (d->facts.bg_irq &&
	    (vcxl_rf_get32(d->rf, mbox_reg(d, CXLDEV_MBOX_CTRL)) & CXLDEV_MBOX_CTRL_BG_CMD_IRQ)) {
		d->bg_irqs++;
		if (d->ops && d->ops->irq)
			d->ops->irq(d->opaque, d, d->facts.mbox_msgnum);
	}
}

/* The allow-list of cxl_mbox.h vcxl_mbox_guest_allowed (CXL r3.1 8.2.9). */
bool vcxl_mbox_guest_allowed(uint16_t opcode)
{
	static const uint16_t allowed[] = {
	    CXL_MBOX_OP_IDENTIFY_GENERIC,
	    CXL_MBOX_OP_BG_OP_STATUS,
	    CXL_MBOX_OP_GET_EVENT_RECORDS,
	    CXL_MBOX_OP_CLEAR_EVENT_RECORDS,
	    CXL_MBOX_OP_GET_EVT_INT_POLICY,
	    CXL_MBOX_OP_SET_EVT_INT_POLICY,
	    CXL_MBOX_OP_GET_FW_INFO,
	    CXL_MBOX_OP_GET_TIMESTAMP,
	    CXL_MBOX_OP_SET_TIMESTAMP,
	    CXL_MBOX_OP_GET_SUPPORTED_LOGS,
	    CXL_MBOX_OP_GET_LOG,
	    CXL_MBOX_OP_GET_LOG_CAPS,
	    CXL_MBOX_OP_GET_LOGS_SUBLIST,
	    CXL_MBOX_OP_GET_SUPPORTED_FEATURES,
	    CXL_MBOX_OP_GET_FEATURE,
	    CXL_MBOX_OP_IDENTIFY,
	    CXL_MBOX_OP_GET_PARTITION_INFO,
	    CXL_MBOX_OP_GET_LSA,
	    CXL_MBOX_OP_GET_HEALTH_INFO,
	    CXL_MBOX_OP_GET_ALERT_CONFIG,
	    CXL_MBOX_OP_GET_SHUTDOWN_STATE,
	    CXL_MBOX_OP_GET_POISON,
	    CXL_MBOX_OP_GET_SCAN_MEDIA_CAPS,
	    CXL_MBOX_OP_SCAN_MEDIA,
	    CXL_MBOX_OP_GET_SCAN_MEDIA,
	};

	for (size_t i = 0; i < sizeof(allowed) / sizeof(allowed[0]); i++)
		if (allowed[i] == opcode)
			return true;
	return false;
}
