// SPDX-License-Identifier: BSD-3-Clause
/*
 * CXL mailbox commands through a vfio-user client's BAR accesses: what
 * Linux's cxl_pci does to find the Primary Mailbox and send a command
 * (CXL r3.1 8.1.9, 8.2.8), with background commands waited for by polling or
 * on the mailbox's MSI-X vector.
 */
#include <errno.h>
#include <linux/pci_regs.h>
#include <poll.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <time.h>
#include <unistd.h>

#include "../common/errmsg.h"
#include "vcxl/client.h"
#include "cxl/cxl_mbox.h"
#include "cxl/cxl_regs.h"
#include "cxl/cxl_spec.h"

#define CFG_SIZE      4096
#define POLL_SLEEP_US 1000

static int64_t now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

static int cfg_buf_read32(void *opaque, uint32_t off, uint32_t *val)
{
	const uint8_t *cfg = opaque;

	if (off > CFG_SIZE - 4)
		return -EINVAL;
	memcpy(val, cfg + off, 4);
	return 0;
}

/* Dwords of a register block in a BAR, for the spec layer's walkers. */
struct bar_window {
	struct vcxl_client *c;
	unsigned bar;
	uint64_t base;
};

static int bar_window_read32(void *opaque, uint32_t off, uint32_t *val)
{
	const struct bar_window *w = opaque;

	return vcxl_client_read32(w->c, w->bar, w->base + off, val);
}

static int mb_rd32(struct vcxl_client *c, const struct vcxl_client_mbox *m, uint32_t reg,
		   uint32_t *v)
{
	return vcxl_client_read32(c, m->bar, m->mailbox + reg, v);
}

static int mb_wr32(struct vcxl_client *c, const struct vcxl_client_mbox *m, uint32_t reg,
		   uint32_t v)
{
	return vcxl_client_write32(c, m->bar, m->mailbox + reg, v);
}

static int mb_rd64(struct vcxl_client *c, const struct vcxl_client_mbox *m, uint32_t reg,
		   uint64_t *v)
{
	return vcxl_client_read64(c, m->bar, m->mailbox + reg, v);
}

/* CXL r3.1 8.1.9 and 8.2.8.1-2: the Register Locator's memory device block
 * (RBI 3), then the Primary Mailbox in that block's capability array. */
static int find_mailbox(struct vcxl_client *c, uint8_t *cfg, struct vcxl_client_mbox *m, char *err,
			size_t errlen)
{
	struct vcxl_regloc_entry e;
	struct bar_window w;
	uint32_t off = 0, len = 0, shift;
	int rc = vcxl_regloc_find(cfg_buf_read32, cfg, CXL_REGLOC_RBI_MEMDEV, &e);

	if (rc == -ENOENT)
		return vcxl_errf(err, errlen, rc,
				 "no memory device registers: the Register Locator lists no "
				 "block with identifier 3 (not a CXL memory device)");
	if (rc)
		return vcxl_errf(err, errlen, rc, "Register Locator: %s", strerror(-rc));
	if (e.bir >= VFIO_PCI_ROM_REGION_INDEX)
		return vcxl_errf(err, errlen, -EINVAL,
				 "memory device registers: BIR %u is not a BAR", e.bir);
	w = (struct bar_window){c, e.bir, e.offset};
	rc = vcxl_devcap_find(bar_window_read32, &w, CXLDEV_CAP_ID_PRIMARY_MBOX, &off, &len);
	if (rc == -ENODEV)
		return vcxl_errf(err, errlen, rc, "BAR%u + 0x%llx: no device capabilities array",
				 e.bir, (unsigned long long)e.offset);
	if (rc == -ENOENT)
		return vcxl_errf(err, errlen, rc,
				 "BAR%u + 0x%llx: no Primary Mailbox in the device capabilities "
				 "array",
				 e.bir, (unsigned long long)e.offset);
	if (rc)
		return vcxl_errf(err, errlen, rc, "BAR%u + 0x%llx: %s", e.bir,
				 (unsigned long long)e.offset, strerror(-rc));
	if (len < CXLDEV_MBOX_PAYLOAD)
		return vcxl_errf(err, errlen, -EINVAL,
				 "Primary Mailbox capability is %u bytes, less than its registers",
				 len);
	*m = (struct vcxl_client_mbox){.bar = e.bir, .block = e.offset, .mailbox = e.offset + off};
	if (!vcxl_devcap_find(bar_window_read32, &w, CXLDEV_CAP_ID_MEMDEV, &off, NULL))
		m->memdev = e.offset + off;
	rc = mb_rd32(c, m, CXLDEV_MBOX_CAPS, &m->caps);
	if (rc)
		return vcxl_errf(err, errlen, rc, "Mailbox Capabilities read: %s", strerror(-rc));
	/* 8.2.8.4.3: Payload Size is log2 of the bytes, 8 (256 B) to 20 (1 MiB) */
	shift = (uint32_t)VCXL_FIELD_GET(CXLDEV_MBOX_CAP_PAYLOAD_SIZE, m->caps);
	if (shift < CXLDEV_MBOX_PAYLOAD_MIN_SHIFT || shift > CXLDEV_MBOX_PAYLOAD_MAX_SHIFT)
		return vcxl_errf(err, errlen, -EINVAL,
				 "Mailbox Capabilities 0x%08x: payload size 2^%u is out of range",
				 m->caps, shift);
	m->payload = (size_t)1 << shift;
	if (m->payload > len - CXLDEV_MBOX_PAYLOAD)
		m->payload = len - CXLDEV_MBOX_PAYLOAD;
	return 0;
}

static int read_config(struct vcxl_client *c, uint8_t *cfg, char *err, size_t errlen)
{
	int rc = vcxl_client_region_read(c, VFIO_PCI_CONFIG_REGION_INDEX, 0, cfg, CFG_SIZE);

	return rc ? vcxl_errf(err, errlen, rc, "config read: %s", strerror(-rc)) : 0;
}

int vcxl_client_mbox_find(struct vcxl_client *c, struct vcxl_client_mbox *m, char *err,
			  size_t errlen)
{
	uint8_t *cfg = malloc(CFG_SIZE);
	int rc;

	if (!cfg)
		return vcxl_errf(err, errlen, -ENOMEM, "out of memory");
	rc = read_config(c, cfg, err, errlen);
	rc = rc ? rc : find_mailbox(c, cfg, m, err, errlen);
	free(cfg);
	return rc;
}

/* --irq: what was changed to get the completion interrupt, undone in reverse. */
struct mbox_irq {
	int efd;
	unsigned vector;
	uint32_t msix;	   /* MSI-X capability offset */
	uint16_t msix_ctl; /* Message Control as found */
	uint16_t cmd;	   /* Command register as found */
	bool msix_set, armed, ctrl_set, cmd_set;
};

/*
 * Before the command, as a driver does: CXL r3.1 8.2.8.4.3 Background Command
 * Complete Interrupt Capable and the Interrupt Message Number (for MSI-X, the
 * table entry); MSI-X enabled in config space (PCI r3.0 6.8.2.3), the vector's
 * eventfd armed with SET_IRQS (as QEMU's vfio-user-pci does on enable), then
 * 8.2.8.4.4 Background Command Completion Interrupt set in Mailbox Control.
 * An MSI-X message is a memory write by the function, so Bus Master Enable
 * (PCI r3.0 6.2.2) is set too: a real device (and QEMU's) sends nothing
 * without it, even where vcxl's own model does not check.
 */
static int irq_setup(struct vcxl_client *c, const uint8_t *cfg, const struct vcxl_client_mbox *m,
		     struct mbox_irq *q, char *err, size_t errlen)
{
	uint32_t count = 0, flags = 0, ctrl;
	uint16_t ctl;
	unsigned nvec;
	uint64_t junk;
	int rc;

	if (!(m->caps & CXLDEV_MBOX_CAP_BG_CMD_IRQ))
		return vcxl_errf(err, errlen, -EOPNOTSUPP,
				 "--irq: the mailbox cannot interrupt on background completion "
				 "(Mailbox Capabilities 0x%08x); leave out --irq to poll",
				 m->caps);
	q->vector = (unsigned)VCXL_FIELD_GET(CXLDEV_MBOX_CAP_IRQ_MSGNUM, m->caps);
	if (vcxl_pci_find_cap(cfg_buf_read32, (void *)cfg, PCI_CAP_ID_MSIX, &q->msix))
		return vcxl_errf(err, errlen, -ENOENT,
				 "--irq: no MSI-X capability in config space");
	memcpy(&ctl, cfg + q->msix + PCI_MSIX_FLAGS, 2);
	nvec = (ctl & PCI_MSIX_FLAGS_QSIZE) + 1u;
	rc = vcxl_client_irq_info(c, VFIO_PCI_MSIX_IRQ_INDEX, &count, &flags);
	if (rc)
		return vcxl_errf(err, errlen, rc, "--irq: IRQ_INFO MSI-X: %s", strerror(-rc));
	if (q->vector >= nvec || q->vector >= count || !(flags & VFIO_IRQ_INFO_EVENTFD))
		return vcxl_errf(err, errlen, -EINVAL,
				 "--irq: interrupt message number %u, but MSI-X has %u vector%s "
				 "(%u with eventfds)",
				 q->vector, nvec, nvec == 1 ? "" : "s",
				 flags & VFIO_IRQ_INFO_EVENTFD ? count : 0);
	q->efd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
	if (q->efd < 0)
		return vcxl_errf(err, errlen, -errno, "eventfd: %s", strerror(errno));
	memcpy(&q->cmd, cfg + PCI_COMMAND, 2);
	if (!(q->cmd & PCI_COMMAND_MASTER)) {
		uint16_t cmd = (uint16_t)(q->cmd | PCI_COMMAND_MASTER);
		rc =
		    vcxl_client_region_write(c, VFIO_PCI_CONFIG_REGION_INDEX, PCI_COMMAND, &cmd, 2);
		if (rc)
			return vcxl_errf(err, errlen, rc, "--irq: Bus Master Enable: %s",
					 strerror(-rc));
		q->cmd_set = true;
	}
	q->msix_ctl = ctl;
	ctl = (uint16_t)((ctl | PCI_MSIX_FLAGS_ENABLE) & ~PCI_MSIX_FLAGS_MASKALL);
	rc = vcxl_client_region_write(c, VFIO_PCI_CONFIG_REGION_INDEX, q->msix + PCI_MSIX_FLAGS,
				      &ctl, 2);
	if (rc)
		return vcxl_errf(err, errlen, rc, "--irq: enabling MSI-X: %s", strerror(-rc));
	q->msix_set = true;
	rc = vcxl_client_set_irqs(c, VFIO_PCI_MSIX_IRQ_INDEX,
				  VFIO_IRQ_SET_DATA_EVENTFD | VFIO_IRQ_SET_ACTION_TRIGGER,
				  q->vector, 1, &q->efd, 1, NULL);
	if (rc)
		return vcxl_errf(err, errlen, rc, "--irq: SET_IRQS MSI-X vector %u: %s", q->vector,
				 strerror(-rc));
	q->armed = true;
	rc = mb_rd32(c, m, CXLDEV_MBOX_CTRL, &ctrl);
	rc = rc ? rc
		: mb_wr32(c, m, CXLDEV_MBOX_CTRL,
			  (ctrl & ~CXLDEV_MBOX_CTRL_DOORBELL) | CXLDEV_MBOX_CTRL_BG_CMD_IRQ);
	if (rc)
		return vcxl_errf(err, errlen, rc, "--irq: Mailbox Control: %s", strerror(-rc));
	q->ctrl_set = true;
	/* whatever was pending before the command is not its completion */
	while (read(q->efd, &junk, sizeof(junk)) == sizeof(junk))
		;
	return 0;
}

/* Leave the device as found: interrupt enable off, eventfd gone, MSI-X and
 * the Command register back. */
static void irq_teardown(struct vcxl_client *c, const struct vcxl_client_mbox *m,
			 struct mbox_irq *q)
{
	uint32_t ctrl;

	if (q->ctrl_set && !mb_rd32(c, m, CXLDEV_MBOX_CTRL, &ctrl))
		mb_wr32(c, m, CXLDEV_MBOX_CTRL,
			ctrl & ~(CXLDEV_MBOX_CTRL_BG_CMD_IRQ | CXLDEV_MBOX_CTRL_DOORBELL));
	if (q->armed)
		vcxl_client_set_irqs(c, VFIO_PCI_MSIX_IRQ_INDEX,
				     VFIO_IRQ_SET_DATA_NONE | VFIO_IRQ_SET_ACTION_TRIGGER, 0, 0,
				     NULL, 0, NULL);
	if (q->msix_set)
		vcxl_client_region_write(c, VFIO_PCI_CONFIG_REGION_INDEX, q->msix + PCI_MSIX_FLAGS,
					 &q->msix_ctl, 2);
	if (q->cmd_set)
		vcxl_client_region_write(c, VFIO_PCI_CONFIG_REGION_INDEX, PCI_COMMAND, &q->cmd, 2);
	if (q->efd >= 0)
		close(q->efd);
	q->efd = -1;
	q->msix_set = q->armed = q->ctrl_set = q->cmd_set = false;
}

/* Wait for the eventfd, answering server requests (DMA) meanwhile. */
static int irq_wait(struct vcxl_client *c, struct mbox_irq *q, int64_t deadline)
{
	struct pollfd p[2] = {{.fd = q->efd, .events = POLLIN},
			      {.fd = vcxl_client_fd(c), .events = POLLIN}};
	uint64_t v;
	int rc = vcxl_client_poll(c, 0);

	if (rc < 0)
		return rc;
	for (;;) {
		int64_t left = deadline - now_ms();

		if (read(q->efd, &v, sizeof(v)) == sizeof(v))
			return 0;
		if (left <= 0)
			return -ETIMEDOUT;
		rc = poll(p, 2, (int)left);
		if (rc < 0 && errno == EINTR)
			continue;
		if (rc < 0)
			return -errno;
		if (p[0].revents & POLLIN)
			continue;
		if (p[1].revents & POLLIN) {
			rc = vcxl_client_poll(c, 0);
			if (rc < 0)
				return rc;
		} else if (p[1].revents & (POLLHUP | POLLERR)) {
			return -ECONNRESET;
		}
	}
}

/* CXL r3.1 8.2.8.4.7: the background command ended when Background Operation
 * clears; Background Command Status then holds its opcode, 100 % and rc. */
static int bg_wait_poll(struct vcxl_client *c, const struct vcxl_client_mbox *m, int64_t deadline)
{
	uint64_t st;
	int rc;

	for (;;) {
		rc = mb_rd64(c, m, CXLDEV_MBOX_STATUS, &st);
		if (rc)
			return rc;
		if (!(st & CXLDEV_MBOX_STATUS_BG_OP))
			return 0;
		if (now_ms() > deadline)
			return -ETIMEDOUT;
		vcxl_client_poll(c, 0);
		usleep(POLL_SLEEP_US);
	}
}

/* CXL r3.1 8.2.8.4.4 steps 1-8, the way cxl_pci sends a command: doorbell
 * clear, payload, Command, doorbell; poll the doorbell, then Status, Command
 * (output length) and the output payload. */
static int mbox_send(struct vcxl_client *c, const struct vcxl_client_mbox *m,
		     const struct vcxl_client_mbox_cmd *k, struct vcxl_client_mbox_result *r,
		     int64_t *t_ring, char *err, size_t errlen)
{
	uint64_t cmd, st;
	uint32_t ctrl;
	int64_t deadline;
	int rc = mb_rd32(c, m, CXLDEV_MBOX_CTRL, &ctrl);

	if (rc)
		return vcxl_errf(err, errlen, rc, "Mailbox Control read: %s", strerror(-rc));
	if (ctrl & CXLDEV_MBOX_CTRL_DOORBELL)
		return vcxl_errf(err, errlen, -EBUSY,
				 "mailbox busy: the doorbell is set (another command in flight)");
	if (k->in_len)
		rc = vcxl_client_region_write(c, m->bar, m->mailbox + CXLDEV_MBOX_PAYLOAD, k->in,
					      k->in_len);
	cmd = VCXL_FIELD_PREP(CXLDEV_MBOX_CMD_OPCODE, k->opcode) |
	      VCXL_FIELD_PREP(CXLDEV_MBOX_CMD_PAYLOAD_LEN, k->in_len);
	rc = rc ? rc : vcxl_client_write64(c, m->bar, m->mailbox + CXLDEV_MBOX_CMD, cmd);
	*t_ring = now_ms();
	rc = rc ? rc : mb_wr32(c, m, CXLDEV_MBOX_CTRL, ctrl | CXLDEV_MBOX_CTRL_DOORBELL);
	if (rc)
		return vcxl_errf(err, errlen, rc, "sending opcode 0x%04x: %s", k->opcode,
				 strerror(-rc));
	deadline = *t_ring + k->timeout_ms;
	for (;;) {
		rc = mb_rd32(c, m, CXLDEV_MBOX_CTRL, &ctrl);
		if (rc)
			return vcxl_errf(err, errlen, rc, "Mailbox Control read: %s",
					 strerror(-rc));
		if (!(ctrl & CXLDEV_MBOX_CTRL_DOORBELL))
			break;
		if (now_ms() > deadline)
			return vcxl_errf(err, errlen, -ETIMEDOUT,
					 "opcode 0x%04x: doorbell still set after %d ms", k->opcode,
					 k->timeout_ms);
		usleep(POLL_SLEEP_US);
	}
	rc = mb_rd64(c, m, CXLDEV_MBOX_STATUS, &st);
	rc = rc ? rc : vcxl_client_read64(c, m->bar, m->mailbox + CXLDEV_MBOX_CMD, &cmd);
	if (rc)
		return vcxl_errf(err, errlen, rc, "Mailbox Status read: %s", strerror(-rc));
	r->rc = (uint16_t)VCXL_FIELD_GET(CXLDEV_MBOX_STATUS_RC, st);
	r->out_len = (size_t)VCXL_FIELD_GET(CXLDEV_MBOX_CMD_PAYLOAD_LEN, cmd);
	if (r->out_len > m->payload)
		return vcxl_errf(err, errlen, -EPROTO,
				 "opcode 0x%04x: output length %zu exceeds the %zu-byte payload",
				 k->opcode, r->out_len, m->payload);
	r->out = calloc(1, r->out_len + 1);
	if (!r->out)
		return vcxl_errf(err, errlen, -ENOMEM, "out of memory");
	if (r->out_len) {
		rc = vcxl_client_region_read(c, m->bar, m->mailbox + CXLDEV_MBOX_PAYLOAD, r->out,
					     r->out_len);
		if (rc)
			return vcxl_errf(err, errlen, rc, "payload read: %s", strerror(-rc));
	}
	return 0;
}

int vcxl_client_mbox_exec(struct vcxl_client *c, const struct vcxl_client_mbox *m,
			  const struct vcxl_client_mbox_cmd *k, struct vcxl_client_mbox_result *r,
			  char *err, size_t errlen)
{
	struct mbox_irq q = {.efd = -1};
	uint8_t *cfg = NULL;
	int64_t t_ring = 0, deadline;
	uint64_t v = 0;
	int rc;

	*r = (struct vcxl_client_mbox_result){0};
	if (k->timeout_ms <= 0)
		return vcxl_errf(err, errlen, -EINVAL, "timeout %d ms", k->timeout_ms);
	/* CXL r3.1 8.2.8.5.1.1: Mailbox Interface Ready */
	if (m->memdev && !vcxl_client_read64(c, m->bar, m->memdev + CXLMDEV_STATUS, &v) &&
	    !(v & CXLMDEV_STATUS_MBOX_READY))
		return vcxl_errf(err, errlen, -EAGAIN,
				 "mailbox interface not ready (Memory Device Status 0x%016llx)",
				 (unsigned long long)v);
	if (k->in_len > m->payload)
		return vcxl_errf(err, errlen, -EMSGSIZE,
				 "--in: %zu bytes, the mailbox payload holds %zu", k->in_len,
				 m->payload);
	if (k->irq) {
		cfg = malloc(CFG_SIZE);
		if (!cfg)
			return vcxl_errf(err, errlen, -ENOMEM, "out of memory");
		rc = read_config(c, cfg, err, errlen);
		rc = rc ? rc : irq_setup(c, cfg, m, &q, err, errlen);
		free(cfg);
		if (rc) {
			irq_teardown(c, m, &q);
			return rc;
		}
		r->vector = q.vector;
	}
	rc = mbox_send(c, m, k, r, &t_ring, err, errlen);
	if (!rc && r->rc == CXL_MBOX_RC_BACKGROUND) {
		deadline = t_ring + k->timeout_ms;
		rc = k->irq ? irq_wait(c, &q, deadline) : bg_wait_poll(c, m, deadline);
		r->bg_ms = now_ms() - t_ring;
		rc = rc ? rc : mb_rd64(c, m, CXLDEV_MBOX_BG_STATUS, &v);
		if (rc == -ETIMEDOUT)
			rc = vcxl_errf(err, errlen, rc,
				       "background command 0x%04x: no completion %s within %d ms",
				       k->opcode,
				       k->irq ? "interrupt" : "(Background Operation still set)",
				       k->timeout_ms);
		else if (rc)
			rc = vcxl_errf(err, errlen, rc, "background command 0x%04x: %s", k->opcode,
				       strerror(-rc));
		else {
			r->bg = true;
			r->bg_opcode = (uint16_t)VCXL_FIELD_GET(CXLDEV_MBOX_BG_OPCODE, v);
			r->bg_pct = (unsigned)VCXL_FIELD_GET(CXLDEV_MBOX_BG_PCT, v);
			r->bg_rc = (uint16_t)VCXL_FIELD_GET(CXLDEV_MBOX_BG_RC, v);
			if (k->irq && !mb_rd64(c, m, CXLDEV_MBOX_STATUS, &v) &&
			    (v & CXLDEV_MBOX_STATUS_BG_OP))
				rc = vcxl_errf(err, errlen, -EPROTO,
					       "background command 0x%04x: interrupt fired but "
					       "Background Operation is still set",
					       k->opcode);
		}
	}
	if (k->irq)
		irq_teardown(c, m, &q);
	if (rc)
		vcxl_client_mbox_result_free(r);
	return rc;
}

void vcxl_client_mbox_result_free(struct vcxl_client_mbox_result *r)
{
	free(r->out);
	r->out = NULL;
}
