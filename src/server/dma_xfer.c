// SPDX-License-Identifier: BSD-3-Clause
/*
 * The device's DMA into client memory: through mmapped DMA windows
 * (fd-backed guest RAM) or with server->client DMA_READ/DMA_WRITE.
 *
 * Server->client DMA never blocks the loop: the handler that drives the
 * device runs on its connection's coroutine (conn.c), sends the request and
 * yields; the loop serves everyone else and resumes it with the reply, or
 * with -ETIMEDOUT after dma_timeout_ms, -ENOBUFS when the client floods
 * instead of answering, -ECONNRESET when it leaves. The error is the
 * device's operation's alone. mmapped DMA (fd-backed guest RAM) never waits.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "conn.h"

/* One DMA_READ/DMA_WRITE exchange, QEMU 10.x layout {u64 addr; u32 count; data; pad[4]}. */
static int dma_msg_xfer(struct vcxl_conn *c, bool write, uint64_t addr, void *buf, uint32_t count)
{
	uint16_t cmd = write ? VFIO_USER_DMA_WRITE : VFIO_USER_DMA_READ;
	struct vfio_user_hdr h = {
	    .msg_id = c->next_id++, .command = cmd, .flags = VFIO_USER_F_TYPE_CMD};
	struct vfio_user_dma_rw rw = {.addr = addr, .count = count};
	static const uint8_t pad[VFIO_USER_DMA_RW_PAD];
	struct vcxl_msg *m = NULL;
	struct iovec iov[4];
	int n = 0, rc;

	if (c->dead)
		return -EIO;
	if (!coro_running(c->co))
		return -EWOULDBLOCK; /* only a handler on the coroutine may wait */
	h.msg_size = (uint32_t)(sizeof(h) + sizeof(rw) + (write ? count : 0) + sizeof(pad));
	iov[n++] = (struct iovec){.iov_base = &h, .iov_len = sizeof(h)};
	iov[n++] = (struct iovec){.iov_base = &rw, .iov_len = sizeof(rw)};
	if (write)
		iov[n++] = (struct iovec){.iov_base = buf, .iov_len = count};
	iov[n++] = (struct iovec){.iov_base = (void *)pad, .iov_len = sizeof(pad)};

	c->dma_id = h.msg_id;
	c->dma_cmd = cmd;
	c->st.dma_msgs++;
	rc = conn_send(c, iov, n, -1); /* what the socket does not take now is queued */
	if (!rc) {
		m = conn_dma_wait(c);
		if (!m)
			rc = c->dma_err ? c->dma_err : -EIO;
	}
	if (rc) {
		vcxl_log(VCXL_LOG_WARN, "%s: DMA %s 0x%llx+%u: %s", conn_name(c),
			 write ? "write" : "read", (unsigned long long)addr, count, strerror(-rc));
		return rc;
	}
	if (m->hdr.flags & VFIO_USER_F_ERROR) {
		rc = m->hdr.error ? -(int)m->hdr.error : -EIO;
	} else if (!write) {
		struct vfio_user_dma_rw got;

		if (m->len < sizeof(got) + count) {
			rc = -EPROTO;
		} else {
			memcpy(&got, m->data, sizeof(got));
			if (got.addr != addr || got.count != count)
				rc = -EPROTO;
			else
				memcpy(buf, m->data + sizeof(got), count);
		}
	}
	if (rc == -EPROTO)
		proto_err(c, m, "bad DMA_READ reply (%zu bytes)", m->len);
	conn_msg_free(m);
	return rc;
}

static int conn_dma_rw(struct vcxl_conn *c, uint64_t iova, uint8_t *buf, size_t len, bool write)
{
	uint32_t need = write ? VFIO_USER_F_DMA_REGION_WRITE : VFIO_USER_F_DMA_REGION_READ;

	if (!c || c->dead)
		return -ENODEV;
	if (iova + len < iova)
		return -EFAULT;
	while (len) {
		const struct vcxl_dma_map *mp = vcxl_dma_find(&c->dma, iova);
		uint64_t chunk;

		if (!mp)
			return -EFAULT;
		if (!(mp->flags & need))
			return -EPERM;
		chunk = mp->iova + mp->size - iova;
		if (chunk > len)
			chunk = len;
		if (mp->ptr) {
			int rc = write ? vcxl_dma_copy(mp->ptr + (iova - mp->iova), buf, chunk)
				       : vcxl_dma_copy(buf, mp->ptr + (iova - mp->iova), chunk);
			if (rc) {
				vcxl_log(VCXL_LOG_WARN,
					 "%s: DMA window [0x%llx, +0x%llx) no longer backed by the "
					 "client's fd",
					 conn_name(c), (unsigned long long)mp->iova,
					 (unsigned long long)mp->size);
				return rc;
			}
		} else {
			uint64_t done = 0, max = c->client_max_xfer ? c->client_max_xfer : 4096;

			while (done < chunk) {
				uint32_t n = (uint32_t)(chunk - done < max ? chunk - done : max);
				int rc = dma_msg_xfer(c, write, iova + done, buf + done, n);

				if (rc)
					return rc;
				done += n;
			}
		}
		if (write) {
			c->st.dma_write_bytes += chunk;
			conn_mig_log_write(c, iova, chunk);
		} else {
			c->st.dma_read_bytes += chunk;
		}
		iova += chunk;
		buf += chunk;
		len -= chunk;
	}
	return 0;
}

static int conn_dma_read(void *opaque, uint64_t iova, void *buf, size_t len)
{
	return conn_dma_rw(opaque, iova, buf, len, false);
}

static int conn_dma_write(void *opaque, uint64_t iova, const void *buf, size_t len)
{
	return conn_dma_rw(opaque, iova, (uint8_t *)buf, len, true);
}

const struct vcxl_dma_ops conn_dma_ops = {
    .read = conn_dma_read,
    .write = conn_dma_write,
    .run_blocking = conn_run_blocking,
    .pause = conn_pause,
};

static int nodev_dma_read(void *opaque, uint64_t iova, void *buf, size_t len)
{
	return -ENODEV;
}

static int nodev_dma_write(void *opaque, uint64_t iova, const void *buf, size_t len)
{
	return -ENODEV;
}

const struct vcxl_dma_ops conn_nodev_dma_ops = {
    .read = nodev_dma_read,
    .write = nodev_dma_write,
};

/* While a connection closes: no client to DMA to, but the device's reset for
 * the next client may still wait without holding the loop. */
const struct vcxl_dma_ops conn_closing_dma_ops = {
    .read = nodev_dma_read,
    .write = nodev_dma_write,
    .run_blocking = conn_run_blocking,
    .pause = conn_pause,
};
