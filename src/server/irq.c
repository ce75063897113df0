// SPDX-License-Identifier: BSD-3-Clause
/*
 * IRQ state of a connection: the client's trigger and mask/unmask eventfds
 * per index and vector, masked/pending bits, arming the device's own vectors,
 * and the GET_IRQ_INFO / SET_IRQS commands.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <fcntl.h>
#include <stdio.h>
#include <sys/eventfd.h>
#include <sys/stat.h>
#include <unistd.h>

#include "conn.h"

/* readlink of /proc/self/fd/N for an eventfd */
#define IRQ_EVENTFD_LINK "anon_inode:[eventfd]"

/* vfio-user spec "DEVICE_GET_IRQ_INFO" */
int conn_handle_irq_info(struct vcxl_conn *c, struct vcxl_msg *m, struct reply *r)
{
	struct vfio_irq_info info;
	uint32_t count = 0, flags = 0;
	int rc;

	if (!conn_msg_take(c, m, r, &info, sizeof(info)))
		return r->err;
	if (info.argsz < sizeof(info) || info.index >= c->num_irqs) {
		proto_err(c, m, "argsz %u index %u of %u", info.argsz, info.index, c->num_irqs);
		return reply_error(r, EINVAL);
	}
	rc = c->ops->irq_info(c->dev, info.index, &count, &flags);
	if (rc) {
		proto_err(c, m, "irq index %u: %s", info.index, strerror(-rc));
		return reply_error(r, -rc);
	}
	info.argsz = sizeof(info);
	info.flags = flags;
	info.count = count;
	memcpy(r->small, &info, sizeof(info));
	reply_payload(r, r->small, sizeof(info));
	return 0;
}

void conn_irq_index_free(struct irq_index *q)
{
	for (uint32_t i = 0; i < q->count; i++) {
		if (q->trigger && q->trigger[i] >= 0)
			close(q->trigger[i]);
		if (q->notify && q->notify[i] >= 0)
			close(q->notify[i]);
	}
	free(q->trigger);
	free(q->notify);
	free(q->masked);
	free(q->pending);
	memset(q, 0, sizeof(*q));
}

/* Lazily size an IRQ index from the device's irq_info. */
static int irq_index_get(struct vcxl_conn *c, uint32_t index, struct irq_index **out)
{
	struct irq_index *q;
	uint32_t count = 0, flags = 0;
	int rc;

	if (index >= NUM_IRQ_INDEX || index >= c->num_irqs)
		return -EINVAL;
	q = &c->irqs[index];
	if (!q->trigger) {
		rc = c->ops->irq_info(c->dev, index, &count, &flags);
		if (rc)
			return rc;
		if (count > 4096)
			return -EINVAL;
		q->count = count;
		q->flags = flags;
		q->trigger = malloc(sizeof(int) * (count + 1));
		q->notify = malloc(sizeof(int) * (count + 1));
		q->masked = calloc(count + 1, 1);
		q->pending = calloc(count + 1, 1);
		if (!q->trigger || !q->notify || !q->masked || !q->pending) {
			conn_irq_index_free(q);
			return -ENOMEM;
		}
		for (uint32_t i = 0; i <= count; i++)
			q->trigger[i] = q->notify[i] = -1;
	}
	*out = q;
	return 0;
}

/* /proc/self/fd, opened once: each check then looks up one name in it
 * instead of walking /proc/self/fd/N (in a fresh process here, 9 against
 * 15 us on average); -1 without /proc */
static int proc_fd_dir(void)
{
	static int dir = -2;

	if (dir == -2)
		dir = open("/proc/self/fd", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	return dir;
}

void vcxl_irq_init(void)
{
	proc_fd_dir();
}

/* An fd the client hands over as an eventfd must be one: the server writes
 * to it, and a pipe or socket could block that write. Without /proc, any
 * anonymous inode is taken (their write either signals or fails at once). */
static int irq_check_eventfd(int fd)
{
	char name[16], link[sizeof(IRQ_EVENTFD_LINK) + 1];
	int dir = proc_fd_dir();
	struct stat st;
	ssize_t n = -1;

	errno = ENOENT;
	snprintf(name, sizeof(name), "%d", fd);
	if (dir >= 0)
		n = readlinkat(dir, name, link, sizeof(link) - 1);
	if (n >= 0) {
		link[n] = 0;
		return strcmp(link, IRQ_EVENTFD_LINK) ? -EINVAL : 0;
	}
	if (errno != ENOENT || fstat(fd, &st) < 0)
		return -EINVAL;
	return (st.st_mode & S_IFMT) == 0 ? 0 : -EINVAL;
}

/*
 * The first check in a server process costs the lookups that instantiate
 * /proc/self/fd's entries: 45-58 us in a migration's downtime on these VMs
 * (QEMU's config load sets the MSI-X vectors' eventfds again there).
 * Checking an eventfd of its own first moves part of that out of the
 * downtime (the destination's arc into RESUMING): 35-42 us, and 24-27 with
 * the directory held (proc_fd_dir).
 */
void conn_irq_warm(void)
{
	int fd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);

	if (fd < 0)
		return;
	irq_check_eventfd(fd);
	close(fd);
}

/* Signal without ever blocking: the file description is the client's, so
 * O_NONBLOCK is (re)asserted before each write (the client may have cleared
 * it). A counter at its maximum (EAGAIN) is an interrupt already pending. */
static int irq_eventfd_signal(int fd)
{
	const uint64_t one = 1;
	int fl = fcntl(fd, F_GETFL);

	if (fl < 0)
		return -errno;
	if (!(fl & O_NONBLOCK) && fcntl(fd, F_SETFL, fl | O_NONBLOCK) < 0)
		return -errno;
	if (write(fd, &one, sizeof(one)) == (ssize_t)sizeof(one))
		return 0;
	return errno == EAGAIN ? 0 : -errno;
}

static void irq_signal(struct vcxl_conn *c, struct irq_index *q, uint32_t v)
{
	if (q->masked[v]) {
		q->pending[v] = 1;
		return;
	}
	if (q->trigger[v] >= 0 && irq_eventfd_signal(q->trigger[v]) == 0)
		c->st.irqs++;
	if (q->flags & VFIO_IRQ_INFO_AUTOMASKED)
		q->masked[v] = 1;
}

static void irq_set_fd(struct vcxl_conn *c, int *slot, int fd)
{
	if (*slot >= 0) {
		close(*slot);
		c->irq_fds--;
	}
	*slot = fd;
	if (fd >= 0)
		c->irq_fds++;
}

/* The client's fd budget (cfg.max_fds: its DMA windows' fds and its
 * eventfds) must hold the nfds eventfds that replace vectors start.. of
 * slots: 0 or -EMFILE. */
static int irq_fds_check(const struct vcxl_conn *c, const int *slots, uint32_t start, unsigned nfds)
{
	unsigned held = c->dma.budget.fds + c->irq_fds, freed = 0;

	for (unsigned i = 0; i < nfds; i++)
		if (slots[start + i] >= 0)
			freed++;
	return held - freed + nfds > c->cfg.max_fds ? -EMFILE : 0;
}

/* Tell the device's host side whether vector v of index has a trigger fd;
 * a device that signals eventfds itself gets the fd. 0 or the device's -errno
 * (logged: the client may not be told, e.g. when it is gone). */
static int irq_arm(struct vcxl_conn *c, struct irq_index *q, uint32_t index, uint32_t v, bool armed)
{
	int rc = 0;

	if (c->ops->irq_arm)
		rc = c->ops->irq_arm(c->dev, index, v, armed);
	if (!rc && c->ops->set_irq_eventfd) {
		rc = c->ops->set_irq_eventfd(c->dev, index, v, armed ? q->trigger[v] : -1);
		if (rc == -EOPNOTSUPP) /* the device raises IRQs through the server */
			rc = 0;
	}
	if (rc)
		vcxl_log(VCXL_LOG_WARN, "%s: irq index %u vector %u: device refused to %s it: %s",
			 conn_name(c), index, v, armed ? "arm" : "disarm", strerror(-rc));
	return rc;
}

/* After a device reset the device's own vector masks are back to reset
 * values: arm again every vector the client still has an eventfd on. */
void conn_irq_rearm_all(struct vcxl_conn *c)
{
	for (uint32_t i = 0; i < NUM_IRQ_INDEX; i++)
		for (uint32_t v = 0; c->irqs[i].trigger && v < c->irqs[i].count; v++)
			if (c->irqs[i].trigger[v] >= 0)
				irq_arm(c, &c->irqs[i], i, v, true);
}

static void irq_unmask(struct vcxl_conn *c, struct irq_index *q, uint32_t v)
{
	q->masked[v] = 0;
	if (q->pending[v]) {
		q->pending[v] = 0;
		irq_signal(c, q, v);
	}
}

/* vfio-user spec "DEVICE_SET_IRQS" (VFIO_DEVICE_SET_IRQS semantics) */
int conn_handle_set_irqs(struct vcxl_conn *c, struct vcxl_msg *m, struct reply *r)
{
	const uint32_t data_mask = VFIO_IRQ_SET_DATA_TYPE_MASK;
	const uint32_t act_mask = VFIO_IRQ_SET_ACTION_TYPE_MASK;
	struct vfio_irq_set s;
	struct irq_index *q;
	uint32_t data, act;
	const uint8_t *bools = NULL;
	int rc;

	if (m->bad_fds) {
		proto_err(c, m, "too many fds");
		return reply_error(r, EINVAL);
	}
	if (m->len < sizeof(s)) {
		proto_err(c, m, "payload %zu too short", m->len);
		return reply_error(r, EINVAL);
	}
	memcpy(&s, m->data, sizeof(s));
	data = s.flags & data_mask;
	act = s.flags & act_mask;
	if (s.argsz < sizeof(s) || (s.flags & ~(data_mask | act_mask)) ||
	    __builtin_popcount(data) != 1 || __builtin_popcount(act) != 1) {
		proto_err(c, m, "argsz %u flags 0x%x", s.argsz, s.flags);
		return reply_error(r, EINVAL);
	}
	rc = irq_index_get(c, s.index, &q);
	if (rc) {
		proto_err(c, m, "irq index %u: %s", s.index, strerror(-rc));
		return reply_error(r, -rc);
	}
	if (s.count == 0) {
		if (data != VFIO_IRQ_SET_DATA_NONE || act != VFIO_IRQ_SET_ACTION_TRIGGER ||
		    m->nfds) {
			proto_err(c, m, "count 0 with flags 0x%x", s.flags);
			return reply_error(r, EINVAL);
		}
		for (uint32_t i = 0; i < q->count; i++) {
			if (q->trigger[i] >= 0)
				irq_arm(c, q, s.index, i, false);
			irq_set_fd(c, &q->trigger[i], -1);
			q->masked[i] = q->pending[i] = 0;
		}
		return 0;
	}
	if (s.start >= q->count || s.count > q->count - s.start) {
		proto_err(c, m, "vectors %u+%u of %u", s.start, s.count, q->count);
		return reply_error(r, EINVAL);
	}
	if (data == VFIO_IRQ_SET_DATA_EVENTFD) {
		if (m->nfds && m->nfds != s.count) {
			proto_err(c, m, "%u fds for %u vectors", m->nfds, s.count);
			return reply_error(r, EINVAL);
		}
		for (unsigned i = 0; i < m->nfds; i++)
			if (irq_check_eventfd(m->fds[i])) {
				proto_err(c, m, "fd %u is not an eventfd", i);
				return reply_error(r, EINVAL);
			}
		if (irq_fds_check(c, act == VFIO_IRQ_SET_ACTION_TRIGGER ? q->trigger : q->notify,
				  s.start, m->nfds)) {
			proto_err(c, m, "%u eventfds: over the client's budget of %u fds", m->nfds,
				  c->cfg.max_fds);
			return reply_error(r, EMFILE);
		}
	} else if (m->nfds) {
		proto_err(c, m, "fds without DATA_EVENTFD");
		return reply_error(r, EINVAL);
	}
	if (data == VFIO_IRQ_SET_DATA_BOOL) {
		if (m->len < sizeof(s) + s.count) {
			proto_err(c, m, "%u bools missing", s.count);
			return reply_error(r, EINVAL);
		}
		bools = m->data + sizeof(s);
	}
	for (uint32_t i = 0; i < s.count; i++) {
		uint32_t v = s.start + i;

		if (data == VFIO_IRQ_SET_DATA_EVENTFD) {
			int fd = m->nfds ? m->fds[i] : -1;

			if (m->nfds)
				m->fds[i] = -1;
			irq_set_fd(
			    c, act == VFIO_IRQ_SET_ACTION_TRIGGER ? &q->trigger[v] : &q->notify[v],
			    fd);
			if (act == VFIO_IRQ_SET_ACTION_TRIGGER &&
			    irq_arm(c, q, s.index, v, fd >= 0) && fd >= 0) {
				/* the device cannot signal it: the client must not wait on it */
				irq_set_fd(c, &q->trigger[v], -1);
				return reply_error(r, EIO);
			}
			continue;
		}
		if (bools && !bools[i])
			continue;
		if (act == VFIO_IRQ_SET_ACTION_TRIGGER)
			irq_signal(c, q, v);
		else if (act == VFIO_IRQ_SET_ACTION_MASK)
			q->masked[v] = 1;
		else
			irq_unmask(c, q, v);
	}
	return 0;
}

void conn_irq(void *opaque, enum vcxl_irq_type type, unsigned vector)
{
	struct vcxl_conn *c = opaque;
	struct irq_index *q;

	if ((unsigned)type >= NUM_IRQ_INDEX)
		return;
	q = &c->irqs[type];
	if (!q->trigger || vector >= q->count)
		return;
	irq_signal(c, q, vector);
}

void conn_nodev_irq(void *opaque, enum vcxl_irq_type type, unsigned vector)
{
}
