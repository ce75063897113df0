/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The CXL memory device register block (Register Locator RBI 3, CXL r3.1
 * 8.2.8) and the mailbox command set of a Type-3 memory device (8.2.9).
 *
 * The block holds the Device Capabilities Array, the Device Status
 * registers, the Primary Mailbox and the Memory Device Status register, laid
 * out in a register file like every other emulated structure. A doorbell
 * write runs the command in the Command register synchronously: the payload
 * is checked against the command's length rules, the handler builds the
 * output, then Return Code, Payload Length and the doorbell are updated in
 * that order, so software that polls the doorbell sees a finished command.
 * One command (Scan Media) runs in the background until the owner calls
 * vcxl_memdev_bg_complete(), to exercise the background status protocol;
 * with facts.bg_irq its completion can signal the mailbox interrupt.
 *
 * Multi-byte payload fields are little endian; UUIDs are in the byte order
 * the spec prints them (as Linux's uuid_t stores them).
 */
#ifndef VCXL_CXL_MBOX_H
#define VCXL_CXL_MBOX_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "cxl/cxl_regs.h"
#include "cxl/cxl_spec.h"
#include "regfile/regfile.h"

/* ---- command opcodes (CXL r3.1 Tables 8-37 and 8-126) ------------------ */
#define CXL_MBOX_OP_IDENTIFY_GENERIC	   0x0001 /* 8.2.9.1.1 */
#define CXL_MBOX_OP_BG_OP_STATUS	   0x0002 /* 8.2.9.1.2 */
#define CXL_MBOX_OP_GET_LOG_CAPS	   0x0402
#define CXL_MBOX_OP_GET_LOGS_SUBLIST	   0x0405
#define CXL_MBOX_OP_GET_SUPPORTED_FEATURES 0x0500
#define CXL_MBOX_OP_GET_FEATURE		   0x0501
#define CXL_MBOX_OP_GET_SHUTDOWN_STATE	   0x4203
#define CXL_MBOX_OP_GET_EVENT_RECORDS	   0x0100
#define CXL_MBOX_OP_CLEAR_EVENT_RECORDS	   0x0101
#define CXL_MBOX_OP_GET_EVT_INT_POLICY	   0x0102
#define CXL_MBOX_OP_SET_EVT_INT_POLICY	   0x0103
#define CXL_MBOX_OP_GET_FW_INFO		   0x0200
#define CXL_MBOX_OP_TRANSFER_FW		   0x0201
#define CXL_MBOX_OP_ACTIVATE_FW		   0x0202
#define CXL_MBOX_OP_GET_TIMESTAMP	   0x0300
#define CXL_MBOX_OP_SET_TIMESTAMP	   0x0301
#define CXL_MBOX_OP_GET_SUPPORTED_LOGS	   0x0400
#define CXL_MBOX_OP_GET_LOG		   0x0401
#define CXL_MBOX_OP_IDENTIFY		   0x4000
#define CXL_MBOX_OP_GET_PARTITION_INFO	   0x4100
#define CXL_MBOX_OP_SET_PARTITION_INFO	   0x4101
#define CXL_MBOX_OP_GET_LSA		   0x4102
#define CXL_MBOX_OP_SET_LSA		   0x4103
#define CXL_MBOX_OP_GET_HEALTH_INFO	   0x4200
#define CXL_MBOX_OP_GET_ALERT_CONFIG	   0x4201
#define CXL_MBOX_OP_SET_ALERT_CONFIG	   0x4202
#define CXL_MBOX_OP_GET_POISON		   0x4300
#define CXL_MBOX_OP_INJECT_POISON	   0x4301
#define CXL_MBOX_OP_CLEAR_POISON	   0x4302
#define CXL_MBOX_OP_GET_SCAN_MEDIA_CAPS	   0x4303
#define CXL_MBOX_OP_SCAN_MEDIA		   0x4304
#define CXL_MBOX_OP_GET_SCAN_MEDIA	   0x4305
#define CXL_MBOX_OP_SANITIZE		   0x4400

/* ---- return codes (CXL r3.1 Table 8-34), numbered as Linux's table ----- */
enum cxl_mbox_rc {
	CXL_MBOX_RC_SUCCESS = 0x0000,
	CXL_MBOX_RC_BACKGROUND = 0x0001, /* background command started */
	CXL_MBOX_RC_INVALID_INPUT = 0x0002,
	CXL_MBOX_RC_UNSUPPORTED = 0x0003,
	CXL_MBOX_RC_INTERNAL = 0x0004,
	CXL_MBOX_RC_RETRY = 0x0005,
	CXL_MBOX_RC_BUSY = 0x0006, /* a background operation is in progress */
	CXL_MBOX_RC_MEDIA_DISABLED = 0x0007,
	CXL_MBOX_RC_FW_IN_PROGRESS = 0x0008,
	CXL_MBOX_RC_FW_OUT_OF_ORDER = 0x0009,
	CXL_MBOX_RC_FW_AUTH_FAILED = 0x000a,
	CXL_MBOX_RC_FW_INVALID_SLOT = 0x000b,
	CXL_MBOX_RC_FW_ROLLED_BACK = 0x000c,
	CXL_MBOX_RC_FW_COLD_RESET = 0x000d,
	CXL_MBOX_RC_INVALID_HANDLE = 0x000e,
	CXL_MBOX_RC_INVALID_PA = 0x000f,
	CXL_MBOX_RC_POISON_LIMIT = 0x0010,
	CXL_MBOX_RC_MEDIA_FAILURE = 0x0011,
	CXL_MBOX_RC_ABORTED = 0x0012,
	CXL_MBOX_RC_INVALID_SECURITY = 0x0013,
	CXL_MBOX_RC_BAD_PASSPHRASE = 0x0014,
	CXL_MBOX_RC_UNSUPPORTED_MBOX = 0x0015,
	CXL_MBOX_RC_INVALID_PAYLOAD_LEN = 0x0016,
	CXL_MBOX_RC_INVALID_LOG = 0x0017,
	/* r3.0/r3.1 additions [spec] */
	CXL_MBOX_RC_INTERRUPTED = 0x0018,
	CXL_MBOX_RC_FEAT_VERSION = 0x0019,
	CXL_MBOX_RC_FEAT_SELECTION = 0x001a,
	CXL_MBOX_RC_FEAT_IN_PROGRESS = 0x001b,
	CXL_MBOX_RC_FEAT_OUT_OF_ORDER = 0x001c,
	CXL_MBOX_RC_RESOURCES_EXHAUSTED = 0x001d,
	CXL_MBOX_RC_INVALID_EXTENT_LIST = 0x001e,
};

/* ---- Command Effects Log (CXL r3.1 8.2.9.5.2.1) ------------------------ */
#define CXL_CEL_UUID                                                                               \
	{                                                                                          \
		0x0d, 0xa9, 0xc0, 0xb5, 0xbf, 0x41, 0x4b, 0x78, 0x8f, 0x79, 0x96, 0xb1, 0x62,      \
		    0x3b, 0x3f, 0x17                                                               \
	}
#define CXL_UUID_SIZE		  16
#define CXL_CEL_ENTRY_SIZE	  4	      /* opcode, effect */
#define CXL_CEL_EFFECT_CFG_COLD	  VCXL_BIT(0) /* config change after cold reset */
#define CXL_CEL_EFFECT_IMM_CONFIG VCXL_BIT(1)
#define CXL_CEL_EFFECT_IMM_DATA	  VCXL_BIT(2)
#define CXL_CEL_EFFECT_IMM_POLICY VCXL_BIT(3)
#define CXL_CEL_EFFECT_IMM_LOG	  VCXL_BIT(4)
#define CXL_CEL_EFFECT_SECURITY	  VCXL_BIT(5)
#define CXL_CEL_EFFECT_BACKGROUND VCXL_BIT(6)

/* ---- payload layouts (offsets and sizes in bytes) ---------------------- */
/* Get Supported Logs output (8.2.9.5.1): count, 6 reserved, entries of UUID + size */
#define CXL_GSL_HDR_SIZE   8
#define CXL_GSL_ENTRY_SIZE 20
/* Get Log input (8.2.9.5.2): UUID, offset, length */
#define CXL_GET_LOG_IN_SIZE   0x18
#define CXL_GET_LOG_IN_OFFSET 0x10
#define CXL_GET_LOG_IN_LENGTH 0x14
/* Identify Memory Device output (8.2.9.9.1.1) */
#define CXL_IDENTIFY_FW_REV	     0x00 /* 16 bytes ASCII */
#define CXL_IDENTIFY_FW_REV_LEN	     16
#define CXL_IDENTIFY_TOTAL_CAP	     0x10 /* 256 MiB units */
#define CXL_IDENTIFY_VOLATILE_CAP    0x18
#define CXL_IDENTIFY_PERSISTENT_CAP  0x20
#define CXL_IDENTIFY_PARTITION_ALIGN 0x28
#define CXL_IDENTIFY_INFO_LOG_SIZE   0x30 /* then warning, failure, fatal: 2 bytes each */
#define CXL_IDENTIFY_LSA_SIZE	     0x38
#define CXL_IDENTIFY_POISON_MAX	     0x3c /* 3 bytes */
#define CXL_IDENTIFY_INJECT_LIMIT    0x3f
#define CXL_IDENTIFY_POISON_CAPS     0x41
#define CXL_IDENTIFY_QOS_CAPS	     0x42
#define CXL_IDENTIFY_DC_LOG_SIZE     0x43 /* r3.0+ [spec] */
#define CXL_IDENTIFY_SIZE_V2	     0x43 /* what Linux requires */
#define CXL_IDENTIFY_SIZE	     0x45
#define CXL_CAPACITY_UNIT	     VCXL_SZ_256M
/* Get Partition Info output (8.2.9.9.2.1): 4 x 8 bytes in 256 MiB units */
#define CXL_PARTITION_INFO_SIZE 0x20
/* Get/Set LSA (8.2.9.9.2.3-4): offset, length | offset, reserved, data */
#define CXL_GET_LSA_IN_SIZE  8
#define CXL_SET_LSA_HDR_SIZE 8
/* Get Health Info output (8.2.9.9.3.1) */
#define CXL_HEALTH_INFO_SIZE   0x12
#define CXL_HEALTH_TEMPERATURE 0x04
/* Get Alert Configuration output (8.2.9.9.3.2) */
#define CXL_ALERT_CONFIG_SIZE 0x10
/* Get FW Info output (8.2.9.3.1) */
#define CXL_FW_INFO_SIZE      0x50
#define CXL_FW_INFO_SLOTS     0x00
#define CXL_FW_INFO_SLOT_INFO 0x01
#define CXL_FW_INFO_SLOT_CUR  VCXL_GENMASK(2, 0)
#define CXL_FW_INFO_SLOT1_REV 0x10
/* Get/Set Timestamp (8.2.9.4): 8 bytes, ns since the epoch */
#define CXL_TIMESTAMP_SIZE 8
/* Event records (8.2.9.2.2-3) */
#define CXL_EVENT_LOG_INFO	  0
#define CXL_EVENT_LOG_WARN	  1
#define CXL_EVENT_LOG_FAIL	  2
#define CXL_EVENT_LOG_FATAL	  3
#define CXL_EVENT_LOG_MAX	  CXL_EVENT_LOG_FATAL
#define CXL_GET_EVENTS_IN_SIZE	  1
#define CXL_GET_EVENTS_HDR_SIZE	  0x20
#define CXL_GET_EVENTS_COUNT	  0x14
#define CXL_CLEAR_EVENTS_HDR_SIZE 6 /* log, flags, count, 3 reserved, then handles */
#define CXL_CLEAR_EVENTS_FLAGS	  1
#define CXL_CLEAR_EVENTS_COUNT	  2
#define CXL_CLEAR_EVENTS_ALL	  VCXL_BIT(0)
/* Event Interrupt Policy (8.2.9.2.4-5): one settings byte per log */
#define CXL_INT_POLICY_SIZE_V2 4 /* info, warn, failure, fatal */
#define CXL_INT_POLICY_SIZE    5 /* + dynamic capacity (r3.0) */
#define CXL_INT_MODE	       VCXL_GENMASK(1, 0)
#define CXL_INT_MSGNUM	       VCXL_GENMASK(7, 4)
#define CXL_INT_NONE	       0
#define CXL_INT_MSI_MSIX       1
#define CXL_INT_FW	       2
/* Get Poison List (8.2.9.9.4.1) and the media scan commands (8.2.9.9.4.4-6) */
#define CXL_POISON_IN_SIZE	  0x10 /* DPA (bits 5:0 reserved), length in 64 B */
#define CXL_POISON_OUT_HDR_SIZE	  0x20
#define CXL_POISON_OUT_FLAGS	  0x00
#define CXL_POISON_OUT_COUNT	  0x0a
#define CXL_POISON_FLAG_SCANNING  VCXL_BIT(2)
#define CXL_POISON_UNIT		  64
#define CXL_SCAN_CAPS_IN_SIZE	  0x10
#define CXL_SCAN_CAPS_OUT_SIZE	  4 /* estimated scan time, ms */
#define CXL_SCAN_MEDIA_IN_SIZE	  0x11
#define CXL_SCAN_RESULTS_HDR_SIZE 0x20
#define CXL_SCAN_RESULTS_COUNT	  0x12

/* ---- the register block ------------------------------------------------- */

/* Where vcxl puts the capabilities inside the block (offsets from its start). */
#define VCXL_MDEV_STATUS_OFF 0x100
#define VCXL_MDEV_MEMDEV_OFF 0x200
#define VCXL_MDEV_MBOX_OFF   0x400
#define VCXL_MDEV_NR_CAPS    3
/* Capability headers a capability array walk reads at most */
#define VCXL_DEVCAP_MAX_WALK 64
#define VCXL_MDEV_EVENT_LOGS (CXL_EVENT_LOG_MAX + 1)

/* What the device is: everything Identify and its friends report. */
struct vcxl_memdev_facts {
	char fw_revision[CXL_IDENTIFY_FW_REV_LEN]; /* ASCII, need not be NUL terminated */
	uint64_t volatile_bytes;		   /* multiple of 256 MiB */
	uint64_t persistent_bytes;		   /* multiple of 256 MiB */
	uint32_t lsa_size;			   /* label storage bytes; 0 = no Get/Set LSA */
	uint8_t *lsa;				   /* lsa_size bytes, owned by the caller */
	uint32_t poison_max;	 /* Poison List Maximum Media Error Records (24 bits) */
	uint16_t event_log_size; /* records each event log can hold */
	uint8_t event_msgnum;	 /* MSI/MSI-X message number for event interrupts */
	bool bg_irq;		 /* Background Command Complete Interrupt Capable */
	uint8_t mbox_msgnum;	 /* Interrupt Message Number of the mailbox (0..15) */
	int16_t temperature_c;	 /* Get Health Info device temperature */
};

struct vcxl_memdev;

struct vcxl_memdev_ops {
	/* Wall clock in ns for the timestamp (NULL = CLOCK_REALTIME). */
	uint64_t (*now_ns)(void *opaque);
	/* Before Memory Device Status is read: refresh media status (may be NULL). */
	void (*refresh)(void *opaque, struct vcxl_memdev *d);
	/* A background command started (may be NULL). */
	void (*bg_started)(void *opaque, struct vcxl_memdev *d, uint16_t opcode);
	/* Signal the mailbox interrupt: MSI/MSI-X message msgnum (may be NULL). */
	void (*irq)(void *opaque, struct vcxl_memdev *d, unsigned msgnum);
};

struct vcxl_memdev {
	struct vcxl_regfile *rf;
	uint32_t base; /* block offset in rf */
	unsigned payload_shift;
	uint32_t payload_size;
	struct vcxl_memdev_facts facts;
	const struct vcxl_memdev_ops *ops;
	void *opaque;
	uint8_t *in, *out; /* payload_size scratch buffers */

	/* device state the commands change */
	uint8_t int_policy[CXL_INT_POLICY_SIZE];
	bool ts_valid;
	uint64_t ts_value, ts_set_at;
	bool bg_running;
	uint16_t bg_opcode;
	bool scan_valid;   /* a scan completed: Get Scan Media Results has something */
	uint64_t commands; /* doorbells served, for diagnostics */
	uint64_t bg_irqs;  /* background completion interrupts signalled */
};

/* One command as the dispatcher sees it. */
struct vcxl_mbox_cmd {
	uint16_t opcode;
	const uint8_t *in;
	size_t in_len;
	uint8_t *out;
	size_t out_cap; /* = the payload size */
	size_t out_len;
};

/* Bytes the block needs for a mailbox of 2^payload_shift payload bytes. */
uint32_t vcxl_memdev_block_size(unsigned payload_shift);
/* CXL r3.1 8.2.8: lay the block out in rf at base (rf must hold
 * vcxl_memdev_block_size() bytes from base). payload_shift 8..20. Media
 * status starts Ready and the mailbox ready. Returns 0 or -errno. */
int vcxl_memdev_layout(struct vcxl_memdev *d, struct vcxl_regfile *rf, uint32_t base,
		       unsigned payload_shift, const struct vcxl_memdev_facts *facts,
		       const struct vcxl_memdev_ops *ops, void *opaque);
void vcxl_memdev_fini(struct vcxl_memdev *d);
/* Mailbox registers back to reset values, a background command aborted
 * (device facts, LSA content, timestamp and interrupt policy are kept). */
void vcxl_memdev_reset(struct vcxl_memdev *d);
/* A new tenant: vcxl_memdev_reset and the state the commands set as a fresh
 * block has it (timestamp never set, interrupt policy all "no interrupts");
 * the facts and the LSA (host-owned: Set LSA is not the guest's) are kept. */
void vcxl_memdev_forget(struct vcxl_memdev *d);
/* Owner updates of the Memory Device Status register. */
void vcxl_memdev_set_media(struct vcxl_memdev *d, unsigned media_status);
void vcxl_memdev_set_mbox_ready(struct vcxl_memdev *d, bool ready);
/* Background command state; complete finishes it with Success at 100 %. */
bool vcxl_memdev_bg_busy(const struct vcxl_memdev *d);
/* With facts.bg_irq and the Background Command Completion Interrupt enabled
 * in Mailbox Control, completion then calls ops->irq(facts.mbox_msgnum). */
void vcxl_memdev_bg_complete(struct vcxl_memdev *d);

/* Run one command (what the doorbell does, without the registers): length
 * checks, then the handler. Returns a CXL_MBOX_RC_*; out_len is 0 on error. */
uint16_t vcxl_mbox_execute(struct vcxl_memdev *d, struct vcxl_mbox_cmd *c);
/* The Command Effects Log: number of entries, and entry i's opcode/effect. */
unsigned vcxl_mbox_cel_count(const struct vcxl_memdev *d);
int vcxl_mbox_cel_entry(const struct vcxl_memdev *d, unsigned i, uint16_t *opcode,
			uint16_t *effect);
const char *vcxl_mbox_opcode_name(uint16_t opcode);
/* The name of a return code as Table 8-34 spells it ("unknown" for others). */
const char *vcxl_mbox_rc_name(uint16_t rc);

/*
 * The commands a guest may send a real memory device's mailbox through vcxl
 * (vfio-cxl): those with no persistent or destructive effect on the device,
 * the way Linux's CXL core keeps its raw interface (drivers/cxl/core/mbox.c,
 * cxl_mem_raw_command_allowed) away from firmware update, partitioning,
 * labels, security and sanitize. Allowed (CXL r3.1 8.2.9 opcodes):
 * Identify 0001h, Background Operation Status 0002h; the event log
 * 0100h-0103h (Get/Clear Event Records, Get/Set Event Interrupt Policy:
 * volatile, Linux's probe uses them); Get FW Info 0200h; Get/Set Timestamp
 * 0300h-0301h (volatile); Get Supported Logs 0400h, Get Log 0401h, Get Log
 * Capabilities 0402h, Get Supported Logs Sub-List 0405h; Get Supported
 * Features 0500h, Get Feature 0501h; Identify Memory Device 4000h, Get
 * Partition Info 4100h, Get LSA 4102h, Get Health Info 4200h, Get Alert
 * Configuration 4201h, Get Shutdown State 4203h, Get Poison List 4300h, Get
 * Scan Media Capabilities 4303h, Scan Media 4304h (reads the media), Get
 * Scan Media Results 4305h. Everything else (Transfer/Activate FW, Clear/
 * Populate Log, Set Feature, Set Partition Info, Set LSA, Set Alert
 * Configuration, Set Shutdown State, Inject/Clear Poison, Sanitize, Secure
 * Erase, security, dynamic capacity, vendor commands, unknown opcodes) is
 * answered Unsupported without reaching the device.
 */
bool vcxl_mbox_guest_allowed(uint16_t opcode);

/* Find capability `id` (CXLDEV_CAP_ID_*) in a device capabilities array
 * (CXL r3.1 8.2.8.1-2); rd reads dwords at offsets from the block start, off
 * and len (may be NULL) are the capability's. -ENODEV if the block has no
 * array, -ENOENT if the capability is not in it, else the reader's error. */
int vcxl_devcap_find(vcxl_cfg_read32_fn rd, void *opaque, uint16_t id, uint32_t *off,
		     uint32_t *len);

#endif /* VCXL_CXL_MBOX_H */
