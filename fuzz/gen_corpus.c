// SPDX-License-Identifier: BSD-3-Clause
/*
 * Seed corpus generator: `gen_corpus DIR` writes DIR/{vfio_user,vdev_regs,
 * version,hw_tables,mig_load}/<seed> in the input formats of the five harnesses (see their
 * headers). The message sequences are the real ones: QEMU 10.2's realize
 * order (VERSION with its JSON, DMA_MAPs first, GET_INFO, GET_REGION_INFO
 * 0-9 with argsz 32 and the argsz retry, GET_IRQ_INFO, REGION_READ of the
 * 4 KiB config space), a guest decoder commit through BAR0 region writes as
 * Linux's cxl core does it, DMA map/unmap and SET_IRQS, device jobs doing
 * DMA through an fd window and through DMA_READ/DMA_WRITE messages (the
 * client's replies are in the stream). Offsets come from a device built like
 * the harnesses' (fuzz_dev.h), so seeds hit the registers they name.
 * hw_tables/ holds what firmware and the kernel hand the hardware backend:
 * QEMU-like CEDTs (good, truncated, bad checksum, interleaved), region info
 * replies with sparse-mmap capabilities, and /proc/iomem snippets.
 * mig_load/ holds device states saved from a real device: idle, a committed
 * locked decoder with BAR0 RAM and a job latched while stopped, a DOE
 * request half written.
 */
#include <errno.h>
#include <sys/stat.h>

#include "fuzz_dev.h"
#include "common/migstream.h"
#include "../src/model/accel.h"
#include "../src/vfio-cxl/vdev_priv.h"
#include "cxl/cxl_spec.h"
#include "hw/hw_vfio.h"

#define SEED_MAX   (256u << 10)
#define MAP_MAX	   32
#define ACCEL_BAR  2
#define GUEST_IOVA 0x100000000ull
#define NOFD_IOVA  0x200000000ull
#define WIN_SIZE   (1u << 20)
#define MEMFD_1M   0x41 /* map byte: 1 memfd of 4 KiB << 2 * 4 */
#define EVENTFD_1  0x09 /* map byte: 1 eventfd */
static const uint32_t RW = VFIO_USER_F_DMA_REGION_READ | VFIO_USER_F_DMA_REGION_WRITE;

/* QEMU 10.2's caps_json() (hw/vfio-user/proxy.c), as it goes on the wire */
static const char qemu_json[] =
    "{\"capabilities\":{\"migration\":{\"pgsize\":4096,\"max_bitmap_size\":268435456},"
    "\"max_msg_fds\":16,\"max_data_xfer_size\":1048576,\"pgsizes\":4096,"
    "\"max_dma_maps\":65535,\"write_multiple\":true}}";

static const char *out_dir;
static struct fz_dev dev;
static unsigned seeds;

/* ---- vfio_user stream builder ---------------------------------------- */

struct stream {
	uint8_t buf[SEED_MAX];
	size_t len;
	uint8_t map[MAP_MAX];
	unsigned nmsg;
	uint16_t id;
};

static void s_msg(struct stream *s, uint16_t cmd, uint32_t flags, const void *p, size_t len,
		  uint8_t fds)
{
	struct vfio_user_hdr h = {.msg_id = s->id++,
				  .command = cmd,
				  .msg_size = (uint32_t)(sizeof(h) + len),
				  .flags = flags};

	if (s->len + sizeof(h) + len > sizeof(s->buf))
		return;
	if (s->nmsg < MAP_MAX)
		s->map[s->nmsg] = fds;
	s->nmsg++;
	memcpy(s->buf + s->len, &h, sizeof(h));
	if (len)
		memcpy(s->buf + s->len + sizeof(h), p, len);
	s->len += sizeof(h) + len;
}

/* A reply the client sends to the server's DMA request number id. */
static void s_reply(struct stream *s, uint16_t id, uint16_t cmd, const void *p, size_t len)
{
	uint16_t save = s->id;

	s->id = id;
	s_msg(s, cmd, VFIO_USER_F_TYPE_REPLY, p, len, 0);
	s->id = save;
}

static void s_version(struct stream *s, const char *json)
{
	uint8_t p[512];
	struct vfio_user_version v = {0, 0};
	size_t n = strlen(json) + 1;

	memcpy(p, &v, sizeof(v));
	memcpy(p + sizeof(v), json, n);
	s_msg(s, VFIO_USER_VERSION, 0, p, sizeof(v) + n, 0);
}

static void s_dma_map(struct stream *s, uint64_t iova, uint64_t size, uint32_t flags, uint64_t off,
		      uint8_t fds)
{
	struct vfio_user_dma_map d = {
	    .argsz = sizeof(d), .flags = flags, .offset = off, .addr = iova, .size = size};

	s_msg(s, VFIO_USER_DMA_MAP, 0, &d, sizeof(d), fds);
}

static void s_dma_unmap(struct stream *s, uint64_t iova, uint64_t size, uint32_t flags)
{
	struct vfio_user_dma_unmap d = {
	    .argsz = sizeof(d), .flags = flags, .addr = iova, .size = size};

	s_msg(s, VFIO_USER_DMA_UNMAP, 0, &d, sizeof(d), 0);
}

static void s_get_info(struct stream *s, uint32_t argsz)
{
	struct vfio_user_device_info d = {.argsz = argsz};

	s_msg(s, VFIO_USER_DEVICE_GET_INFO, 0, &d, VFIO_USER_DEVICE_INFO_MIN, 0);
}

static void s_region_info(struct stream *s, uint32_t index, uint32_t argsz)
{
	struct vfio_region_info r = {.argsz = argsz, .index = index};

	s_msg(s, VFIO_USER_DEVICE_GET_REGION_INFO, 0, &r, sizeof(r), 0);
}

static void s_irq_info(struct stream *s, uint32_t index)
{
	struct vfio_irq_info i = {.argsz = sizeof(i), .index = index};

	s_msg(s, VFIO_USER_DEVICE_GET_IRQ_INFO, 0, &i, sizeof(i), 0);
}

static void s_set_irqs(struct stream *s, uint32_t index, uint32_t flags, uint32_t start,
		       uint32_t count, const uint8_t *bools, uint8_t fds)
{
	uint8_t p[64];
	struct vfio_irq_set i = {
	    .argsz = sizeof(i), .flags = flags, .index = index, .start = start, .count = count};
	size_t n = sizeof(i);

	if (bools) {
		i.argsz += count;
		memcpy(p + n, bools, count);
		n += count;
	}
	memcpy(p, &i, sizeof(i));
	s_msg(s, VFIO_USER_DEVICE_SET_IRQS, 0, p, n, fds);
}

static void s_read(struct stream *s, uint32_t region, uint64_t off, uint32_t count)
{
	struct vfio_user_region_access a = {.offset = off, .region = region, .count = count};

	s_msg(s, VFIO_USER_REGION_READ, 0, &a, sizeof(a), 0);
}

static void s_write(struct stream *s, uint32_t region, uint64_t off, const void *data,
		    uint32_t count, uint32_t flags)
{
	uint8_t p[64];
	struct vfio_user_region_access a = {.offset = off, .region = region, .count = count};

	memcpy(p, &a, sizeof(a));
	memcpy(p + sizeof(a), data, count);
	s_msg(s, VFIO_USER_REGION_WRITE, flags, p, sizeof(a) + count, 0);
}

static void s_w32(struct stream *s, uint32_t region, uint64_t off, uint32_t v)
{
	s_write(s, region, off, &v, 4, 0);
}

static void s_w64(struct stream *s, uint32_t region, uint64_t off, uint64_t v)
{
	s_write(s, region, off, &v, 8, 0);
}

static void write_file(const char *harness, const char *name, const void *a, size_t alen,
		       const void *b, size_t blen)
{
	char path[4096];
	FILE *f;

	snprintf(path, sizeof(path), "%s/%s", out_dir, harness);
	mkdir(path, 0755);
	snprintf(path, sizeof(path), "%s/%s/%s", out_dir, harness, name);
	f = fopen(path, "wb");
	if (!f || fwrite(a, 1, alen, f) != alen || (blen && fwrite(b, 1, blen, f) != blen)) {
		fprintf(stderr, "gen_corpus: %s: %s\n", path, strerror(errno));
		exit(1);
	}
	fclose(f);
	seeds++;
}

/* level: the harness's transport, 0 (takes everything) to 7 (blocks most) */
static void s_save_level(struct stream *s, const char *name, unsigned level)
{
	uint8_t head[1 + MAP_MAX];
	unsigned n = s->nmsg < MAP_MAX ? s->nmsg : MAP_MAX;

	head[0] = (uint8_t)(n + (MAP_MAX + 1) * level);
	memcpy(head + 1, s->map, n);
	write_file("vfio_user", name, head, 1 + n, s->buf, s->len);
}

static void s_save(struct stream *s, const char *name)
{
	s_save_level(s, name, 0);
}

/* ---- vfio_user seeds ---------------------------------------------------- */

/* QEMU 10.2 realize (notes/vfio-user-protocol.md 9), with memfd guest RAM */
static void seed_qemu_handshake(void)
{
	static struct stream s;

	s_version(&s, qemu_json);
	s_dma_map(&s, 0, 0xc0000, RW, 0, MEMFD_1M);
	s_dma_map(&s, 0xc0000, 0x20000, VFIO_USER_F_DMA_REGION_READ, 0, 0);
	s_dma_map(&s, 0x100000, 0xf00000 - 0x100000 + 0x100000, RW, 0, 0);
	s_get_info(&s, VFIO_USER_DEVICE_INFO_MIN);
	for (uint32_t i = 0; i < VCXL_VDEV_NUM_REGIONS; i++)
		s_region_info(&s, i, sizeof(struct vfio_region_info));
	/* the argsz retry for the regions with capabilities */
	s_region_info(&s, dev.info.cxl.hdm_bar, 256);
	s_region_info(&s, dev.info.cxl.region_index, 256);
	s_get_info(&s, 256);
	s_irq_info(&s, VFIO_PCI_ERR_IRQ_INDEX);
	s_irq_info(&s, VFIO_PCI_MSIX_IRQ_INDEX);
	s_read(&s, VFIO_PCI_CONFIG_REGION_INDEX, 0, VCXL_VDEV_CONFIG_SIZE);
	s_w32(&s, VFIO_PCI_CONFIG_REGION_INDEX, PCI_ROM_ADDRESS, 0xfffff800);
	s_write(&s, VFIO_PCI_CONFIG_REGION_INDEX, PCI_COMMAND,
		&(uint16_t){PCI_COMMAND_MEMORY | PCI_COMMAND_MASTER}, 2, 0);
	s_msg(&s, VFIO_USER_DEVICE_RESET, 0, NULL, 0, 0);
	s_dma_unmap(&s, 0, 0xc0000, 0);
	s_dma_map(&s, 0, 0xc0000, RW, 0, MEMFD_1M);
	s_save(&s, "qemu-handshake");
}

/* DEVICE_FEATURE SET MIG_DEVICE_STATE (vfio-user spec "Migration"): the
 * kernel's vfio_device_feature with vfio_device_feature_mig_state inline */
static void s_mig_state(struct stream *s, uint32_t state)
{
	struct vfio_device_feature_mig_state st = {.device_state = state, .data_fd = -1};
	uint8_t m[sizeof(struct vfio_device_feature) + sizeof(st)];
	struct vfio_device_feature f = {.argsz = sizeof(m),
					.flags = VFIO_DEVICE_FEATURE_SET |
						 VFIO_DEVICE_FEATURE_MIG_DEVICE_STATE};

	memcpy(m, &f, sizeof(f));
	memcpy(m + sizeof(f), &st, sizeof(st));
	s_msg(s, VFIO_USER_DEVICE_FEATURE, 0, m, sizeof(m), 0);
}

static void s_mig_write(struct stream *s, const void *p, uint32_t len)
{
	static uint8_t buf[sizeof(struct vfio_user_mig_data) + (64u << 10)];
	struct vfio_user_mig_data d = {.argsz = (uint32_t)sizeof(d) + len, .size = len};

	if (len > sizeof(buf) - sizeof(d))
		return;
	memcpy(buf, &d, sizeof(d));
	memcpy(buf + sizeof(d), p, len);
	s_msg(s, VFIO_USER_MIG_DATA_WRITE, 0, buf, sizeof(d) + len, 0);
}

/* A RESUMING device given a whole saved state loads it at that write (the
 * server's preload, docs/migration.md section 2); a byte after it undoes
 * the load and RESUMING -> STOP refuses; after DEVICE_RESET the same
 * state loads and the device runs */
static void seed_mig_preload(void)
{
	static struct stream s;
	struct vcxl_mig_buf b = {0};

	if (vcxl_vdev_ops.mig_save(dev.vdev, &b)) {
		fprintf(stderr, "gen_corpus: mig-preload: save failed\n");
		exit(1);
	}
	s_version(&s, qemu_json);
	s_mig_state(&s, VFIO_DEVICE_STATE_RESUMING);
	s_mig_write(&s, b.data, (uint32_t)b.len);
	s_mig_write(&s, "x", 1);
	s_mig_state(&s, VFIO_DEVICE_STATE_STOP);
	s_msg(&s, VFIO_USER_DEVICE_RESET, 0, NULL, 0, 0);
	s_mig_state(&s, VFIO_DEVICE_STATE_RESUMING);
	s_mig_write(&s, b.data, (uint32_t)b.len);
	s_mig_state(&s, VFIO_DEVICE_STATE_STOP);
	s_mig_state(&s, VFIO_DEVICE_STATE_RUNNING);
	s_save(&s, "mig-preload");
	vcxl_mig_buf_free(&b);
}

/* CXL r3.1 8.2.4.20: Mem_Enable, HDM Decoder Enable, base/size, Commit */
static void seed_decoder_commit(void)
{
	static struct stream s;
	unsigned bar = dev.info.cxl.hdm_bar;
	uint64_t hdm = dev.info.cxl.hdm_offset, base = 0x400000000ull;
	uint16_t ctl = CXL_DVSEC_CTRL_MEM_EN;

	s_version(&s, qemu_json);
	s_get_info(&s, 256);
	s_region_info(&s, bar, 256);
	s_write(&s, VFIO_PCI_CONFIG_REGION_INDEX, dev.d->dvsec + CXL_DVSEC_CTRL, &ctl, 2, 0);
	s_w32(&s, bar, hdm + CXL_HDM_GLOBAL_CTRL, CXL_HDM_GCTRL_ENABLE);
	s_w32(&s, bar, hdm + CXL_HDM_DEC_BASE_HI(0), (uint32_t)(base >> 32));
	s_w32(&s, bar, hdm + CXL_HDM_DEC_BASE_LO(0), (uint32_t)base);
	s_w32(&s, bar, hdm + CXL_HDM_DEC_SIZE_HI(0), (uint32_t)(FZ_REGION_SIZE >> 32));
	s_w32(&s, bar, hdm + CXL_HDM_DEC_SIZE_LO(0), (uint32_t)FZ_REGION_SIZE);
	s_w32(&s, bar, hdm + CXL_HDM_DEC_SKIP_HI(0), 0);
	s_w32(&s, bar, hdm + CXL_HDM_DEC_SKIP_LO(0), 0);
	s_w32(&s, bar, hdm + CXL_HDM_DEC_CTRL(0), CXL_HDM_DEC_CTRL_COMMIT);
	s_read(&s, bar, hdm + CXL_HDM_DEC_CTRL(0), 4);
	s_write(&s, dev.info.cxl.region_index, 0x1000, "guest data", 10, 0);
	s_read(&s, dev.info.cxl.region_index, 0x1000, 16);
	s_w32(&s, bar, hdm + CXL_HDM_DEC_CTRL(0), 0);
	s_w32(&s, bar, hdm + CXL_HDM_DEC_SIZE_HI(0), 0x100);
	s_w32(&s, bar, hdm + CXL_HDM_DEC_CTRL(0),
	      CXL_HDM_DEC_CTRL_COMMIT | CXL_HDM_DEC_CTRL_LOCK_ON_COMMIT);
	s_read(&s, bar, hdm + CXL_HDM_DEC_CTRL(0), 4);
	s_save(&s, "decoder-commit");
}

static void seed_dma_map_unmap(void)
{
	static struct stream s;
	uint8_t mask[2] = {1, 1};

	s_version(&s, qemu_json);
	s_dma_map(&s, GUEST_IOVA, WIN_SIZE, RW, 0, MEMFD_1M);
	s_dma_map(&s, NOFD_IOVA, WIN_SIZE, RW, 0, 0);
	s_dma_map(&s, GUEST_IOVA + 0x1000, 0x1000, RW, 0, 0); /* overlap: EEXIST */
	s_dma_map(&s, 0x300000000ull, 0x1000, 0, 0, 0);	      /* no access: EINVAL */
	s_dma_unmap(&s, NOFD_IOVA, WIN_SIZE, 0);
	s_dma_unmap(&s, NOFD_IOVA, WIN_SIZE, 0); /* again: ENOENT */
	s_set_irqs(&s, VFIO_PCI_MSIX_IRQ_INDEX,
		   VFIO_IRQ_SET_DATA_EVENTFD | VFIO_IRQ_SET_ACTION_TRIGGER, 1, 1, NULL, EVENTFD_1);
	s_set_irqs(&s, VFIO_PCI_MSIX_IRQ_INDEX, VFIO_IRQ_SET_DATA_BOOL | VFIO_IRQ_SET_ACTION_MASK,
		   0, 2, mask, 0);
	s_set_irqs(&s, VFIO_PCI_MSIX_IRQ_INDEX,
		   VFIO_IRQ_SET_DATA_NONE | VFIO_IRQ_SET_ACTION_TRIGGER, 1, 1, NULL, 0);
	s_set_irqs(&s, VFIO_PCI_MSIX_IRQ_INDEX, VFIO_IRQ_SET_DATA_BOOL | VFIO_IRQ_SET_ACTION_UNMASK,
		   0, 2, mask, 0);
	s_set_irqs(&s, VFIO_PCI_MSIX_IRQ_INDEX,
		   VFIO_IRQ_SET_DATA_NONE | VFIO_IRQ_SET_ACTION_TRIGGER, 0, 0, NULL, 0);
	s_dma_unmap(&s, 0, 0, VFIO_DMA_UNMAP_FLAG_ALL);
	s_save(&s, "dma-map-unmap");
}

static void s_job(struct stream *s, uint32_t op, uint32_t flags, uint64_t src, uint64_t dst,
		  uint64_t len, uint32_t vec)
{
	s_w32(s, ACCEL_BAR, ACCEL_REG_STATUS, ACCEL_STATUS_DONE | ACCEL_STATUS_ERROR);
	s_w32(s, ACCEL_BAR, ACCEL_REG_JOB_OP, op);
	s_w32(s, ACCEL_BAR, ACCEL_REG_JOB_FLAGS, flags);
	s_w64(s, ACCEL_BAR, ACCEL_REG_JOB_SRC, src);
	s_w64(s, ACCEL_BAR, ACCEL_REG_JOB_DST, dst);
	s_w64(s, ACCEL_BAR, ACCEL_REG_JOB_LEN, len);
	s_w64(s, ACCEL_BAR, ACCEL_REG_JOB_PATTERN, 0x0123456789abcdefull);
	s_w32(s, ACCEL_BAR, ACCEL_REG_JOB_VECTOR, vec);
	s_w32(s, ACCEL_BAR, ACCEL_REG_DOORBELL, ACCEL_DOORBELL_GO);
}

/* Device DMA into an mmapped (memfd) window, completion on an eventfd */
static void seed_job_memfd(void)
{
	static struct stream s;

	s_version(&s, qemu_json);
	s_dma_map(&s, GUEST_IOVA, WIN_SIZE, RW, 0, MEMFD_1M);
	s_set_irqs(&s, VFIO_PCI_MSIX_IRQ_INDEX,
		   VFIO_IRQ_SET_DATA_EVENTFD | VFIO_IRQ_SET_ACTION_TRIGGER, 0, 1, NULL, EVENTFD_1);
	s_job(&s, ACCEL_OP_COPY, ACCEL_JOBF_SRC_HOST | ACCEL_JOBF_IRQ, GUEST_IOVA, 0x1000, 0x2000,
	      0);
	s_read(&s, ACCEL_BAR, ACCEL_REG_STATUS, 4);
	s_job(&s, ACCEL_OP_FILL, ACCEL_JOBF_DST_HOST, 0, GUEST_IOVA + 0x8000, 0x1000, 0);
	s_job(&s, ACCEL_OP_COPY, ACCEL_JOBF_DST_HOST, 0x1000, GUEST_IOVA + 0x10000, 0x2000, 0);
	s_read(&s, ACCEL_BAR, ACCEL_REG_JOBS_DONE, 4);
	s_save(&s, "job-memfd");
	s_save_level(&s, "blocking-job-memfd", 6);
}

/* Device DMA through DMA_READ / DMA_WRITE (QEMU 10.x layout); the client's
 * replies to the server's requests 0 and 1 follow the doorbells. */
static void seed_job_nofd(void)
{
	static struct stream s;
	uint8_t rd[VFIO_USER_DMA_RW_HDR + 0x100 + VFIO_USER_DMA_RW_PAD] = {0};
	struct vfio_user_dma_rw rw = {.addr = NOFD_IOVA, .count = 0x100};

	s_version(&s, qemu_json);
	s_dma_map(&s, NOFD_IOVA, WIN_SIZE, RW, 0, 0);
	s_job(&s, ACCEL_OP_COPY, ACCEL_JOBF_SRC_HOST, NOFD_IOVA, 0x1000, 0x100, 0);
	memcpy(rd, &rw, sizeof(rw));
	memset(rd + sizeof(rw), 0x5a, 0x100);
	s_reply(&s, 0, VFIO_USER_DMA_READ, rd, sizeof(rd));
	s_read(&s, ACCEL_BAR, ACCEL_REG_STATUS, 4);
	s_job(&s, ACCEL_OP_FILL, ACCEL_JOBF_DST_HOST, 0, NOFD_IOVA + 0x1000, 0x40, 0);
	s_reply(&s, 1, VFIO_USER_DMA_WRITE, NULL, 0);
	s_read(&s, ACCEL_BAR, ACCEL_REG_STATUS, 4);
	s_save(&s, "job-nofd");
	/* the same through a transport that blocks: partial sends, short reads */
	s_save_level(&s, "blocking-job-nofd", 7);
}

static void seed_write_multi(void)
{
	static struct stream s;
	uint8_t p[8 + 3 * sizeof(struct vfio_user_wr_multi_entry)];
	uint64_t cnt = 3;
	struct vfio_user_wr_multi_entry e[3] = {
	    {.offset = ACCEL_REG_JOB_OP, .region = ACCEL_BAR, .count = 4},
	    {.offset = ACCEL_REG_JOB_LEN, .region = ACCEL_BAR, .count = 8},
	    {.offset = ACCEL_REG_JOB_VECTOR, .region = ACCEL_BAR, .count = 4},
	};

	e[0].data[0] = ACCEL_OP_FILL;
	e[1].data[1] = 0x10;
	e[2].data[0] = 1;
	memcpy(p, &cnt, 8);
	memcpy(p + 8, e, sizeof(e));
	s_version(&s, qemu_json);
	s_msg(&s, VFIO_USER_REGION_WRITE_MULTI, 0, p, sizeof(p), 0);
	s_write(&s, ACCEL_BAR, ACCEL_REG_JOB_PATTERN, &(uint64_t){~0ull}, 8, VFIO_USER_F_NO_REPLY);
	s_read(&s, ACCEL_BAR, ACCEL_REG_JOB_OP, 0x40);
	s_msg(&s, VFIO_USER_DEVICE_RESET, 0, NULL, 0, 0);
	s_save(&s, "write-multi-reset");
}

/* Refused input: every message gets an error reply or closes the stream */
static void seed_errors(void)
{
	static struct stream s;
	struct vfio_user_dma_rw rw = {.addr = 0, .count = 4};

	s_get_info(&s, 16); /* before VERSION */
	s_version(&s, "{\"capabilities\":{\"max_msg_fds\":\"16\"}}");
	s_version(&s, "{}");
	s_version(&s, "{}"); /* twice */
	s_msg(&s, 99, 0, NULL, 0, 0);
	s_msg(&s, VFIO_USER_DMA_READ, 0, &rw, sizeof(rw), 0);
	s_msg(&s, VFIO_USER_DEVICE_GET_INFO, VFIO_USER_F_ERROR, NULL, 0, 0);
	s_read(&s, VFIO_PCI_CONFIG_REGION_INDEX, 0xffc, 8);
	s_read(&s, 42, 0, 4);
	s_read(&s, VFIO_PCI_CONFIG_REGION_INDEX, 0, 2u << 20);
	s_region_info(&s, 200, 32);
	s_irq_info(&s, 17);
	s_dma_map(&s, 0x1000, 0x1000, RW, 0, 0x03); /* three fds */
	s_msg(&s, VFIO_USER_DEVICE_RESET, 0, "x", 1, 0);
	s_save(&s, "errors");
}

/* ---- vdev_regs seeds --------------------------------------------------- */

struct tuples {
	uint8_t buf[12 * 256];
	size_t len;
};

static void t_acc(struct tuples *t, unsigned win, bool write, unsigned width, uint32_t off,
		  uint64_t val)
{
	unsigned wi = width == 8 ? 3 : width == 4 ? 2 : width == 2 ? 1 : 0;
	uint8_t *p = t->buf + t->len;

	if (t->len + 12 > sizeof(t->buf))
		return;
	p[0] = (uint8_t)(win | (write ? 0x08 : 0) | (wi << 4));
	p[1] = (uint8_t)off;
	p[2] = (uint8_t)(off >> 8);
	p[3] = (uint8_t)(off >> 16);
	memcpy(p + 4, &val, 8);
	t->len += 12;
}

static void t_save(struct tuples *t, const char *name, uint8_t cfg)
{
	write_file("vdev_regs", name, t->buf, t->len, &cfg, 1);
}

enum { W_DVSEC, W_CONFIG, W_DOE, W_HDM, W_COMP, W_COMP_BAR, W_BAR2, W_REGION };

static void t_commit(struct tuples *t, unsigned n, uint64_t base, uint64_t size, uint32_t ctrl)
{
	t_acc(t, W_HDM, true, 4, CXL_HDM_GLOBAL_CTRL, CXL_HDM_GCTRL_ENABLE);
	t_acc(t, W_HDM, true, 8, CXL_HDM_DEC_BASE_LO(n), base);
	t_acc(t, W_HDM, true, 4, CXL_HDM_DEC_SIZE_LO(n), (uint32_t)size);
	t_acc(t, W_HDM, true, 4, CXL_HDM_DEC_SIZE_HI(n), (uint32_t)(size >> 32));
	t_acc(t, W_HDM, true, 4, CXL_HDM_DEC_CTRL(n), ctrl | CXL_HDM_DEC_CTRL_COMMIT);
	t_acc(t, W_HDM, false, 4, CXL_HDM_DEC_CTRL(n), 0);
}

static void seeds_vdev_regs(void)
{
	static struct tuples a, b, c, d, e, f;
	uint32_t pcie = 0;

	/* guest commits: decoder 0, 1 (after 0), lock-on-commit, then decommit attempts */
	t_acc(&a, W_DVSEC, true, 2, CXL_DVSEC_CTRL, CXL_DVSEC_CTRL_MEM_EN);
	t_commit(&a, 0, 0x400000000ull, FZ_REGION_SIZE / 2, 0);
	t_commit(&a, 1, 0x800000000ull, FZ_REGION_SIZE / 2, CXL_HDM_DEC_CTRL_LOCK_ON_COMMIT);
	t_acc(&a, W_HDM, true, 4, CXL_HDM_DEC_CTRL(1), 0);
	t_acc(&a, W_HDM, true, 4, CXL_HDM_DEC_BASE_LO(1), 0);
	t_acc(&a, W_HDM, true, 4, CXL_HDM_DEC_CTRL(0), 0);
	t_acc(&a, W_HDM, true, 2, CXL_HDM_DEC_CTRL(0), 0); /* 2-byte: refused */
	t_save(&a, "hdm-commit", 0);
	t_save(&a, "hdm-commit-middle-1dec", 0x81);

	/* CONFIG_LOCK, then Control / Range Base writes that must not land */
	t_acc(&b, W_DVSEC, true, 4, CXL_DVSEC_RANGE_BASE_HI(0), 0x4);
	t_acc(&b, W_DVSEC, true, 2, CXL_DVSEC_LOCK, CXL_DVSEC_LOCK_CONFIG);
	t_acc(&b, W_DVSEC, true, 2, CXL_DVSEC_CTRL, 0xffff);
	t_acc(&b, W_DVSEC, true, 4, CXL_DVSEC_RANGE_BASE_LO(0), ~0u);
	t_acc(&b, W_DVSEC, true, 2, CXL_DVSEC_LOCK, 0);
	t_acc(&b, W_DVSEC, false, 4, CXL_DVSEC_CTRL, 0);
	t_save(&b, "dvsec-lock", 2);

	/* a committed decoder, then a virtual CXL reset through Control2 */
	t_commit(&c, 0, 0x400000000ull, FZ_REGION_SIZE, 0);
	t_acc(&c, W_DVSEC, true, 2, CXL_DVSEC_CTRL2, CXL_DVSEC_CTRL2_INIT_RESET);
	t_acc(&c, W_DVSEC, false, 4, CXL_DVSEC_CTRL2, 0);
	t_acc(&c, W_HDM, false, 4, CXL_HDM_DEC_CTRL(0), 0);
	t_save(&c, "cxl-reset", 0);

	/* FLR through Device Control */
	vcxl_host_find_cap(dev.be, PCI_CAP_ID_EXP, &pcie);
	t_commit(&d, 0, 0x400000000ull, FZ_REGION_SIZE, 0);
	t_acc(&d, W_CONFIG, true, 2, pcie + PCI_EXP_DEVCTL, PCI_EXP_DEVCTL_BCR_FLR);
	t_acc(&d, W_CONFIG, false, 4, pcie + PCI_EXP_DEVCTL, 0);
	t_save(&d, "flr", 1);

	/* DOE discovery request, then read the response (PCIe r6 6.30.1.1) */
	t_acc(&e, W_DOE, true, 4, PCI_DOE_WRITE,
	      PCI_DOE_VENDOR_PCISIG | (PCI_DOE_TYPE_DISCOVERY << 16));
	t_acc(&e, W_DOE, true, 4, PCI_DOE_WRITE, 3);
	t_acc(&e, W_DOE, true, 4, PCI_DOE_WRITE, 0);
	t_acc(&e, W_DOE, true, 4, PCI_DOE_CTRL, PCI_DOE_CTRL_GO);
	for (int i = 0; i < 3; i++) {
		t_acc(&e, W_DOE, false, 4, PCI_DOE_STATUS, 0);
		t_acc(&e, W_DOE, false, 4, PCI_DOE_READ, 0);
		t_acc(&e, W_DOE, true, 4, PCI_DOE_READ, 0);
	}
	t_acc(&e, W_DOE, true, 4, PCI_DOE_CTRL, PCI_DOE_CTRL_ABORT);
	t_save(&e, "doe-discovery", 0);

	/* the CXL region's last bytes and just past it; BAR0 RAM; BAR2; headers */
	t_acc(&f, W_REGION, true, 8, 0x7ff8, 0x1122334455667788ull);
	t_acc(&f, W_REGION, true, 8, 0x7ffc, ~0ull);
	t_acc(&f, W_REGION, true, 4, 0x8000, ~0ull);
	t_acc(&f, W_REGION, false, 8, 0x7ff8, 0);
	t_acc(&f, W_COMP_BAR, true, 8, 0x200000, ~0ull);
	t_acc(&f, W_COMP, true, 4, 0, ~0ull);
	t_acc(&f, W_COMP, true, 1, CXL_CM_OFFSET, 0xff);
	t_acc(&f, W_BAR2, true, 4, ACCEL_REG_JOB_OP, ACCEL_OP_COPY);
	t_acc(&f, W_CONFIG, true, 4, PCIE_EXT_CAP_START, ~0ull);
	t_acc(&f, W_CONFIG, true, 4, dev.d->regloc + 0xc, ~0ull);
	t_acc(&f, W_CONFIG, true, 4, PCI_INTERRUPT_LINE, ~0ull);
	t_acc(&f, W_CONFIG, false, 4, PCI_INTERRUPT_LINE, 0);
	t_save(&f, "edges", 0);
}

/* ---- version seeds ----------------------------------------------------- */

static void v_save(const char *name, uint8_t mode, const char *json)
{
	write_file("version", name, &mode, 1, json, strlen(json));
}

static void seeds_version(void)
{
	v_save("qemu-10.2", 0, qemu_json);
	v_save("qemu-10.2-then-more", 4, qemu_json);
	v_save("libvfio-user", 0,
	       "{\"capabilities\":{\"max_msg_fds\":8,\"max_data_xfer_size\":1048576,"
	       "\"migration\":{\"pgsize\":4096}}}");
	v_save("empty-object", 0, "{}");
	v_save("no-json", 1, "");
	v_save("few-maps", 4, "{\"capabilities\":{\"max_dma_maps\":3,\"write_multiple\":false}}");
	v_save("bad-pgsizes", 0, "{\"capabilities\":{\"pgsizes\":8192}}");
	v_save("bad-type", 0, "{\"capabilities\":{\"max_data_xfer_size\":1.5}}");
	v_save("caps-not-object", 0, "{\"capabilities\":[1,2]}");
	v_save("not-terminated", 1, "{\"capabilities\":{}}");
	v_save("major-1", 2, qemu_json);
	v_save("array", 4, "[{\"capabilities\":{}}]");
	v_save("huge-number", 0, "{\"capabilities\":{\"max_dma_maps\":18446744073709551615}}");
	v_save("vcxl-qemu", 0,
	       "{\"capabilities\":{\"max_data_xfer_size\":1048576,\"dirty_in_stop_copy\":true}}");
	v_save("dirty-not-bool", 0, "{\"capabilities\":{\"dirty_in_stop_copy\":1}}");
}

/* ---- hw_tables seeds (fuzz_hw_tables.c: [sel] [input]) ------------------ */

enum { HW_CEDT, HW_REGION, HW_IOMEM };
#define HW_CEDT_FIXUP (3 * 5 * 3) /* CEDT, length and checksum fixed up by the harness */

struct cedt {
	uint8_t b[1024];
	size_t len;
};

static void put_le(uint8_t *p, uint64_t v, unsigned n)
{
	for (unsigned i = 0; i < n; i++)
		p[i] = (uint8_t)(v >> (8 * i));
}

/* ACPI 6.5 5.2.6: header with signature, revision 1, OEM id */
static void cedt_init(struct cedt *t)
{
	memset(t, 0, sizeof(*t));
	memcpy(t->b, "CEDT", 4);
	t->b[8] = 1;
	memcpy(t->b + 10, "BOCHS ", 6);
	t->len = 36;
}

/* the length field, then the checksum byte: all bytes sum to 0 */
static void cedt_fix(struct cedt *t)
{
	uint8_t sum = 0;

	put_le(t->b + 4, t->len, 4);
	t->b[9] = 0;
	for (size_t i = 0; i < t->len; i++)
		sum = (uint8_t)(sum + t->b[i]);
	t->b[9] = (uint8_t)(0x100 - sum);
}

/* CXL r3.1 9.18.1.2: CHBS, 32 bytes */
static void cedt_chbs(struct cedt *t, uint32_t uid, uint32_t ver, uint64_t base, uint64_t len)
{
	uint8_t *p = t->b + t->len;

	p[0] = 0;
	put_le(p + 2, 32, 2);
	put_le(p + 4, uid, 4);
	put_le(p + 8, ver, 4);
	put_le(p + 16, base, 8);
	put_le(p + 24, len, 8);
	t->len += 32;
}

/* CXL r3.1 9.18.1.3: CFMWS, 36 bytes + 4 per target */
static void cedt_cfmws(struct cedt *t, uint64_t base, uint64_t size, uint8_t eniw, uint16_t restr,
		       const uint32_t *tgt, unsigned ntgt)
{
	uint8_t *p = t->b + t->len;

	p[0] = 1;
	put_le(p + 2, 36 + 4 * ntgt, 2);
	put_le(p + 8, base, 8);
	put_le(p + 16, size, 8);
	p[24] = eniw;
	put_le(p + 28, 0, 4); /* HBIG 256 bytes */
	put_le(p + 32, restr, 2);
	for (unsigned i = 0; i < ntgt; i++)
		put_le(p + 36 + 4 * i, tgt[i], 4);
	t->len += 36 + 4 * ntgt;
}

static void hw_save(const char *name, uint8_t sel, const void *p, size_t len)
{
	write_file("hw_tables", name, &sel, 1, p, len);
}

/* The table QEMU builds for one pxb-cxl host bridge (uid 12) and one window */
static void seeds_cedt(void)
{
	static const uint32_t one[] = {12}, two[] = {12, 13};
	const uint16_t all =
	    VCXL_CFMWS_R_TYPE2 | VCXL_CFMWS_R_TYPE3 | VCXL_CFMWS_R_VOLATILE | VCXL_CFMWS_R_PMEM;
	struct cedt t;

	cedt_init(&t);
	cedt_chbs(&t, 12, 1, 0x290000000ull, 0x10000);
	cedt_cfmws(&t, 0x4a0000000ull, 16 * VCXL_SZ_256M, CXL_HDM_IW_1, all, one, 1);
	cedt_fix(&t);
	hw_save("cedt-qemu", HW_CEDT, t.b, t.len);
	hw_save("cedt-truncated", HW_CEDT + 3, t.b, t.len - 8);
	t.b[9] ^= 0x01;
	hw_save("cedt-bad-checksum", HW_CEDT + 6, t.b, t.len);

	/* two host bridges, a 1-way and a 2-way window, a structure of another type */
	cedt_init(&t);
	cedt_chbs(&t, 12, 1, 0x290000000ull, 0x10000);
	cedt_chbs(&t, 13, 1, 0x290010000ull, 0x10000);
	cedt_cfmws(&t, 0x4a0000000ull, 16 * VCXL_SZ_256M, CXL_HDM_IW_1, all, one, 1);
	cedt_cfmws(&t, 0x5a0000000ull, 16 * VCXL_SZ_256M, CXL_HDM_IW_2, all, two, 2);
	t.b[t.len] = 2; /* CXIMS, skipped */
	put_le(t.b + t.len + 2, 16, 2);
	t.len += 16;
	cedt_fix(&t);
	hw_save("cedt-interleaved", HW_CEDT_FIXUP, t.b, t.len);

	/* one host bridge more than the parser keeps: -ENOSPC */
	cedt_init(&t);
	for (uint32_t i = 0; i <= VCXL_CEDT_MAX_CHBS; i++)
		cedt_chbs(&t, i, 1, 0x290000000ull + 0x10000ull * i, 0x10000);
	cedt_fix(&t);
	hw_save("cedt-too-many-chbs", HW_CEDT_FIXUP, t.b, t.len);

	/* adjacent windows, the higher one first: both kept */
	cedt_init(&t);
	cedt_chbs(&t, 12, 1, 0x290000000ull, 0x10000);
	cedt_cfmws(&t, 0x5a0000000ull, 16 * VCXL_SZ_256M, CXL_HDM_IW_1, all, one, 1);
	cedt_cfmws(&t, 0x4a0000000ull, 16 * VCXL_SZ_256M, CXL_HDM_IW_1, all, one, 1);
	cedt_fix(&t);
	hw_save("cedt-adjacent", HW_CEDT, t.b, t.len);

	/* the second window overlaps the first: refused */
	cedt_init(&t);
	cedt_chbs(&t, 12, 1, 0x290000000ull, 0x10000);
	cedt_cfmws(&t, 0x4a0000000ull, 16 * VCXL_SZ_256M, CXL_HDM_IW_1, all, one, 1);
	cedt_cfmws(&t, 0x590000000ull, 2 * VCXL_SZ_256M, CXL_HDM_IW_1, all, one, 1);
	cedt_fix(&t);
	hw_save("cedt-overlap", HW_CEDT, t.b, t.len);
}

/* linux/vfio.h: a reply with the capability chain the kernel builds */
static size_t region_reply(uint8_t *b, size_t cap, uint64_t size, bool msix_cap,
			   const struct vfio_region_sparse_mmap_area *areas, unsigned n)
{
	struct vfio_region_info ri = {.flags =
					  VFIO_REGION_INFO_FLAG_READ | VFIO_REGION_INFO_FLAG_WRITE |
					  VFIO_REGION_INFO_FLAG_MMAP | VFIO_REGION_INFO_FLAG_CAPS,
				      .index = 0,
				      .cap_offset = sizeof(ri),
				      .size = size,
				      .offset = 0};
	struct vfio_info_cap_header msix = {.id = VFIO_REGION_INFO_CAP_MSIX_MAPPABLE, .version = 1};
	struct vfio_region_info_cap_sparse_mmap sm = {
	    .header = {.id = VFIO_REGION_INFO_CAP_SPARSE_MMAP, .version = 1}, .nr_areas = n};
	size_t at = sizeof(ri);

	if (sizeof(ri) + sizeof(msix) + sizeof(sm) + n * sizeof(areas[0]) > cap)
		return 0;
	memset(b, 0, cap);
	if (msix_cap) {
		msix.next = (uint32_t)(at + sizeof(msix));
		memcpy(b + at, &msix, sizeof(msix));
		at += sizeof(msix);
	}
	memcpy(b + at, &sm, sizeof(sm));
	memcpy(b + at + sizeof(sm), areas, n * sizeof(areas[0]));
	at += sizeof(sm) + n * sizeof(areas[0]);
	ri.argsz = (uint32_t)at;
	memcpy(b, &ri, sizeof(ri));
	return at;
}

static void seeds_region(void)
{
	/* a 64 KiB BAR with the MSI-X table page at 0x2000 carved out */
	static const struct vfio_region_sparse_mmap_area two[] = {{0, 0x2000}, {0x3000, 0xd000}};
	static const struct vfio_region_sparse_mmap_area six[] = {
	    {0, 0x1000},      {0x2000, 0x1000}, {0x4000, 0x1000},
	    {0x6000, 0x1000}, {0x8000, 0x1000}, {0xa000, 0x6000}};
	uint8_t b[512];
	struct vfio_region_info ri = {.argsz = sizeof(ri),
				      .flags =
					  VFIO_REGION_INFO_FLAG_READ | VFIO_REGION_INFO_FLAG_WRITE,
				      .index = VFIO_PCI_CONFIG_REGION_INDEX,
				      .size = 0x1000,
				      .offset = 0x70000000000ull};

	hw_save("region-sparse2", HW_REGION, b, region_reply(b, sizeof(b), 0x10000, false, two, 2));
	hw_save("region-msix-sparse2", HW_REGION, b,
		region_reply(b, sizeof(b), 0x10000, true, two, 2));
	hw_save("region-sparse0", HW_REGION, b, region_reply(b, sizeof(b), 0x10000, false, two, 0));
	/* more areas than VCXL_BAR_MAX_AREAS: kept 4, overflow noted */
	hw_save("region-sparse6", HW_REGION, b, region_reply(b, sizeof(b), 0x10000, false, six, 6));
	hw_save("region-config", HW_REGION, &ri, sizeof(ri));
}

/* [base 8] [size 8] text */
static void iomem_save(const char *name, uint64_t base, uint64_t size, const char *text)
{
	uint8_t b[1024];
	size_t n = strlen(text);

	b[0] = HW_IOMEM;
	put_le(b + 1, base, 8);
	put_le(b + 9, size, 8);
	memcpy(b + 17, text, n);
	write_file("hw_tables", name, b, 17 + n, NULL, 0);
}

/* /proc/iomem on a QEMU q35 guest with a cxl-type3 behind pxb-cxl 12 */
static void seeds_iomem(void)
{
	static const char io[] = "00000000-00000fff : Reserved\n"
				 "00001000-0009fbff : System RAM\n"
				 "290000000-29000ffff : PNP0A08:00\n"
				 "4a0000000-59fffffff : CXL Window 0\n"
				 "  4a0000000-4afffffff : region0\n"
				 "5a0000000-6ffffffff : PCI Bus 0000:00\n"
				 "  600000000-6000fffff : PCI Bus 0000:0c\n";

	iomem_save("iomem-cxl-window", 0x4a0000000ull, 16 * VCXL_SZ_256M, io);
	iomem_save("iomem-free", 0x610000000ull, VCXL_SZ_256M, io);
	iomem_save("iomem-bridge-overlap", 0x5f0000000ull, 2 * VCXL_SZ_256M, io);
}

/* ---- mig_load seeds: real saved device states --------------------------- */

static void mig_save_seed(struct fz_dev *f, const char *name)
{
	struct vcxl_mig_buf b = {0};

	if (vcxl_vdev_ops.mig_save(f->vdev, &b)) {
		fprintf(stderr, "gen_corpus: %s: save failed\n", name);
		exit(1);
	}
	write_file("mig_load", name, b.data, b.len, NULL, 0);
	vcxl_mig_buf_free(&b);
}

/* The server's tail: a DMAPAGES section of two pages in FZ_DMA_WIN */
static void dma_pages_tail(struct vcxl_mig_buf *b, void *opaque)
{
	uint8_t page[VCXL_MIG_PAGE];

	(void)opaque;
	memset(page, 0xa5, sizeof(page));
	vcxl_mig_sec_begin(b, VCXL_MIG_SEC_DMAPAGES, 0);
	vcxl_mig_put_u64(b, VCXL_MIG_PAGE);
	vcxl_mig_put_u64(b, 2);
	vcxl_mig_put_u64(b, FZ_DMA_WIN + 0x3000);
	vcxl_mig_put_u64(b, FZ_DMA_WIN_LEN + FZ_DMA_WIN - VCXL_MIG_PAGE);
	vcxl_mig_put(b, page, sizeof(page));
	vcxl_mig_put(b, page, sizeof(page));
	vcxl_mig_sec_end(b);
}

static void mig_w(struct fz_dev *f, uint32_t region, uint64_t off, unsigned len, uint64_t v)
{
	vcxl_vdev_ops.region_write(f->vdev, region, off, &v, len);
}

static void seeds_mig_load(void)
{
	struct fz_dev f;
	uint64_t hdm;

	if (fz_dev_open(&f, VCXL_COMP_AT_START, 0)) {
		fprintf(stderr, "gen_corpus: mig device setup failed\n");
		exit(1);
	}
	hdm = f.info.cxl.hdm_offset;
	mig_save_seed(&f, "idle");
	{
		struct vcxl_mig_buf b = {.tail = dma_pages_tail};

		if (vcxl_vdev_ops.mig_save(f.vdev, &b)) {
			fprintf(stderr, "gen_corpus: idle-dma-pages: save failed\n");
			exit(1);
		}
		write_file("mig_load", "idle-dma-pages", b.data, b.len, NULL, 0);
		vcxl_mig_buf_free(&b);
	}
	/* a committed, locked decoder, BAR0 RAM, a job latched while stopped */
	mig_w(&f, 0, hdm + CXL_HDM_GLOBAL_CTRL, 4, CXL_HDM_GCTRL_ENABLE);
	mig_w(&f, 0, hdm + CXL_HDM_DEC_BASE_HI(0), 4, 0x4);
	mig_w(&f, 0, hdm + CXL_HDM_DEC_SIZE_LO(0), 4, (uint32_t)FZ_REGION_SIZE);
	mig_w(&f, 0, hdm + CXL_HDM_DEC_CTRL(0), 4,
	      CXL_HDM_DEC_CTRL_COMMIT | CXL_HDM_DEC_CTRL_LOCK_ON_COMMIT);
	mig_w(&f, 0, 0x200000, 8, 0x0123456789abcdefull);
	vcxl_vdev_ops.mig_quiesce(f.vdev, true);
	mig_w(&f, VCXL_MODEL_CTRL_BAR, ACCEL_REG_JOB_OP, 4, ACCEL_OP_FILL);
	mig_w(&f, VCXL_MODEL_CTRL_BAR, ACCEL_REG_JOB_FLAGS, 4, ACCEL_JOBF_IRQ);
	mig_w(&f, VCXL_MODEL_CTRL_BAR, ACCEL_REG_JOB_VECTOR, 4, 2);
	mig_w(&f, VCXL_MODEL_CTRL_BAR, ACCEL_REG_JOB_DST, 8, f.r->dpa + 0x100000);
	mig_w(&f, VCXL_MODEL_CTRL_BAR, ACCEL_REG_JOB_LEN, 8, 16u << 20);
	mig_w(&f, VCXL_MODEL_CTRL_BAR, ACCEL_REG_JOB_PATTERN, 8, 0x5a5a5a5a5a5a5a5aull);
	mig_w(&f, VCXL_MODEL_CTRL_BAR, ACCEL_REG_DOORBELL, 4, ACCEL_DOORBELL_GO);
	mig_save_seed(&f, "committed-job-in-flight");
	/* a DOE request half written */
	if (f.vdev->has_doe) {
		mig_w(&f, VFIO_PCI_CONFIG_REGION_INDEX, f.vdev->doe.base + PCI_DOE_WRITE, 4,
		      0x00020001);
		mig_w(&f, VFIO_PCI_CONFIG_REGION_INDEX, f.vdev->doe.base + PCI_DOE_WRITE, 4, 3);
		mig_save_seed(&f, "doe-in-flight");
	}
	fz_dev_close(&f);
}

static void seeds_hw_tables(void)
{
	seeds_cedt();
	seeds_region();
	seeds_iomem();
}

int main(int argc, char **argv)
{
	if (argc != 2) {
		fprintf(stderr, "usage: gen_corpus DIR\n");
		return 2;
	}
	out_dir = argv[1];
	mkdir(out_dir, 0755);
	if (fz_dev_open(&dev, VCXL_COMP_AT_START, 0)) {
		fprintf(stderr, "gen_corpus: device setup failed\n");
		return 1;
	}
	seed_qemu_handshake();
	seed_decoder_commit();
	seed_dma_map_unmap();
	seed_job_memfd();
	seed_job_nofd();
	seed_write_multi();
	seed_errors();
	seed_mig_preload();
	seeds_vdev_regs();
	seeds_version();
	seeds_hw_tables();
	seeds_mig_load();
	fz_dev_close(&dev);
	printf("gen_corpus: %u seeds in %s\n", seeds, out_dir);
	return 0;
}
