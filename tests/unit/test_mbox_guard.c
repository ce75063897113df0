// SPDX-License-Identifier: BSD-3-Clause
/*
 * The memory device's mailboxes as a hostile guest reaches them (CXL r3.1
 * 8.2.8): the vfio-cxl core served by the event loop on a real socket, the
 * client library as the VMM, over the Type-3 model behind a backend that
 * adds what real devices may have and the model has not:
 *  - a Secondary Mailbox (capability 0003h) after the model's block, which
 *    runs every command it is given: the guest's capabilities array does not
 *    list it, its registers are neither mappable nor reachable, and Sanitize,
 *    Set LSA or Transfer FW written there as the hardware lays it out never
 *    reach the device;
 *  - a Primary Mailbox that keeps a command in flight (the doorbell set)
 *    until the test lets it run (a write of RELEASE_VAL at RELEASE_OFF, a
 *    BAR2 offset the model ignores): a forbidden opcode and payload written
 *    meanwhile never reach the device, which runs the allowed command with
 *    its own payload.
 */
#include <errno.h>
#include <linux/vfio.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "tap.h"
#include "vcxl/client.h"
#include "cxl/cxl_mbox.h"
#include "server/server.h"
#include "model/model.h"
#include "vfio-cxl/vfio_cxl.h"

#define BAR2	  VFIO_PCI_BAR2_REGION_INDEX
#define BLK	  VCXL_MODEL_T3_MEMDEV_OFF   /* the device register block in BAR2 */
#define PMB	  (BLK + VCXL_MDEV_MBOX_OFF) /* the model's Primary Mailbox */
#define PMB_LEN	  (CXLDEV_MBOX_PAYLOAD + (1u << VCXL_MODEL_T3_PAYLOAD_SHIFT))
#define SMB_REL	  0x1000 /* the Secondary Mailbox, from the block start */
#define SMB	  (BLK + SMB_REL)
#define SMB_SHIFT 8
#define SMB_LEN	  (CXLDEV_MBOX_PAYLOAD + (1u << SMB_SHIFT))
/* the test's own register: the held command runs when this is written */
#define RELEASE_OFF 0x100
#define RELEASE_VAL 0x52454c45u
/* the header the backend adds after the model's three */
#define HDR_SMB (BLK + CXLDEV_CAP_HDR_FIRST + VCXL_MDEV_NR_CAPS * CXLDEV_CAP_HDR_STRIDE)

static struct {
	struct vcxl_backend *inner;
	struct vcxl_backend_ops ops;
	struct vcxl_backend be;
	int bar2_fd;
	/* the Secondary Mailbox: runs whatever its doorbell finds in Command */
	uint8_t smb[SMB_LEN];
	unsigned smb_runs;
	uint16_t smb_last_op;
	/* the Primary Mailbox holding a command: the doorbell write kept back */
	bool hold, held;
	uint64_t held_val;
	unsigned held_len;
	unsigned late_writes; /* Command/payload writes the device got meanwhile */
} F;

static bool hit(uint64_t a, uint64_t alen, uint64_t b, uint64_t blen)
{
	return a < b + blen && b < a + alen;
}

/* The byte at BAR2 offset a as this device has it, where it differs from
 * the model: true and *b set. */
static bool fake_byte(uint64_t a, uint8_t *b)
{
	if (a >= BLK && a < BLK + 8) { /* Capabilities Count one more */
		uint64_t arr = 0;
		F.inner->ops->bar_read(F.inner->dev, 2, BLK, 8, &arr);
		arr += VCXL_FIELD_PREP(CXLDEV_CAP_ARRAY_COUNT, 1);
		*b = (uint8_t)(arr >> (8 * (a - BLK)));
		return true;
	}
	if (a >= HDR_SMB && a < HDR_SMB + CXLDEV_CAP_HDR_STRIDE) {
		uint32_t hdr[4] = {CXLDEV_CAP_ID_SECONDARY_MBOX |
				       VCXL_FIELD_PREP(CXLDEV_CAP_HDR_VERSION, 1),
				   SMB_REL, SMB_LEN, 0};
		unsigned k = (unsigned)(a - HDR_SMB);
		*b = (uint8_t)(hdr[k / 4] >> (8 * (k % 4)));
		return true;
	}
	if (a >= SMB && a < SMB + SMB_LEN) {
		*b = F.smb[a - SMB];
		return true;
	}
	if (F.held && a >= PMB + CXLDEV_MBOX_CTRL && a < PMB + CXLDEV_MBOX_CTRL + 4) {
		*b = (uint8_t)(F.held_val >> (8 * (a - PMB - CXLDEV_MBOX_CTRL)));
		return true;
	}
	return false;
}

static int f_bar_read(void *dev, unsigned bar, uint64_t off, unsigned len, uint64_t *val)
{
	int rc = F.inner->ops->bar_read(F.inner->dev, bar, off, len, val);
	uint8_t b;

	if (bar != 2)
		return rc;
	if (rc && hit(off, len, SMB, SMB_LEN)) /* beyond the model's block */
		*val = 0, rc = 0;
	for (unsigned i = 0; !rc && i < len; i++)
		if (fake_byte(off + i, &b))
			*val = (*val & ~(0xffull << (8 * i))) | ((uint64_t)b << (8 * i));
	return rc;
}

static void smb_write(uint64_t off, unsigned len, uint64_t val)
{
	for (unsigned i = 0; i < len; i++)
		if (off + i >= SMB && off + i < SMB + SMB_LEN)
			F.smb[off + i - SMB] = (uint8_t)(val >> (8 * i));
	if (F.smb[CXLDEV_MBOX_CTRL] & CXLDEV_MBOX_CTRL_DOORBELL) {
		F.smb_runs++;
		F.smb_last_op =
		    (uint16_t)(F.smb[CXLDEV_MBOX_CMD] | F.smb[CXLDEV_MBOX_CMD + 1] << 8);
		memset(F.smb + CXLDEV_MBOX_STATUS, 0, 8); /* Success */
		F.smb[CXLDEV_MBOX_CTRL] &= (uint8_t)~CXLDEV_MBOX_CTRL_DOORBELL;
	}
}

static void f_release(void);

static int f_bar_write(void *dev, unsigned bar, uint64_t off, unsigned len, uint64_t val)
{
	if (bar == 2 && off == RELEASE_OFF && val == RELEASE_VAL) {
		f_release();
		return 0;
	}
	if (bar == 2 && hit(off, len, SMB, SMB_LEN)) {
		smb_write(off, len, val);
		return 0;
	}
	if (bar == 2 && F.hold && !F.held && off == PMB + CXLDEV_MBOX_CTRL &&
	    (val & CXLDEV_MBOX_CTRL_DOORBELL)) {
		F.held = true;
		F.held_val = val;
		F.held_len = len;
		return 0;
	}
	if (bar == 2 && F.held &&
	    (hit(off, len, PMB + CXLDEV_MBOX_CMD, 8) ||
	     hit(off, len, PMB + CXLDEV_MBOX_PAYLOAD, PMB_LEN - CXLDEV_MBOX_PAYLOAD)))
		F.late_writes++;
	return F.inner->ops->bar_write(F.inner->dev, bar, off, len, val);
}

/* The device runs the held command now, with what its registers hold. */
static void f_release(void)
{
	F.hold = F.held = false;
	F.inner->ops->bar_write(F.inner->dev, 2, PMB + CXLDEV_MBOX_CTRL, F.held_len, F.held_val);
}

/* BAR2 mappable (a memfd), so the trapped ranges are the guard. */
static int f_bar_info(void *dev, unsigned bar, struct vcxl_bar_info *bi)
{
	int rc = F.inner->ops->bar_info(F.inner->dev, bar, bi);

	if (!rc && bar == 2) {
		bi->fd = F.bar2_fd;
		bi->fd_offset = 0;
	}
	return rc;
}

static const char *f_unshareable(void *dev, int fd, bool *never)
{
	if (fd == F.bar2_fd)
		return NULL;
	return F.inner->ops->fd_unshareable(F.inner->dev, fd, never);
}

/* ---- the guest: a client on the device socket ---------------------------- */

static struct vcxl_client *C;

static uint64_t g_rd(uint64_t off, unsigned len)
{
	uint64_t x = 0;

	vcxl_client_region_read(C, BAR2, off, &x, len);
	return x;
}

static void g_wr(uint64_t off, unsigned len, uint64_t x)
{
	vcxl_client_region_write(C, BAR2, off, &x, len);
}

static void g_wbuf(uint64_t off, const void *buf, size_t len)
{
	vcxl_client_region_write(C, BAR2, off, buf, len);
}

/* CXL r3.1 8.2.8.4 as cxl_pci sends a command: payload, Command, doorbell;
 * then (unless the device holds it) poll the doorbell and read Status. */
static void g_submit(uint64_t mb, uint16_t op, const void *in, size_t in_len)
{
	if (in_len)
		g_wbuf(mb + CXLDEV_MBOX_PAYLOAD, in, in_len);
	g_wr(mb + CXLDEV_MBOX_CMD, 8,
	     VCXL_FIELD_PREP(CXLDEV_MBOX_CMD_OPCODE, op) |
		 VCXL_FIELD_PREP(CXLDEV_MBOX_CMD_PAYLOAD_LEN, in_len));
	g_wr(mb + CXLDEV_MBOX_CTRL, 4, CXLDEV_MBOX_CTRL_DOORBELL);
}

static int g_result(uint64_t mb, void *out, size_t *out_len)
{
	for (int i = 0; i < 100 && (g_rd(mb + CXLDEV_MBOX_CTRL, 4) & CXLDEV_MBOX_CTRL_DOORBELL);
	     i++)
		;
	if (g_rd(mb + CXLDEV_MBOX_CTRL, 4) & CXLDEV_MBOX_CTRL_DOORBELL)
		return -EBUSY;
	size_t n = VCXL_FIELD_GET(CXLDEV_MBOX_CMD_PAYLOAD_LEN, g_rd(mb + CXLDEV_MBOX_CMD, 8));
	if (n > *out_len)
		n = *out_len;
	if (n)
		vcxl_client_region_read(C, BAR2, mb + CXLDEV_MBOX_PAYLOAD, out, n);
	*out_len = n;
	return (int)VCXL_FIELD_GET(CXLDEV_MBOX_STATUS_RC, g_rd(mb + CXLDEV_MBOX_STATUS, 8));
}

static int g_cmd(uint64_t mb, uint16_t op, const void *in, size_t in_len, void *out,
		 size_t *out_len)
{
	g_submit(mb, op, in, in_len);
	return g_result(mb, out, out_len);
}

/* Get LSA (8.2.9.9.2.3): the first 16 bytes of the label storage area. */
static int get_lsa16(uint8_t out[16])
{
	uint8_t in[CXL_GET_LSA_IN_SIZE] = {0, 0, 0, 0, 16, 0, 0, 0};
	size_t n = 16;
	int rc = g_cmd(PMB, CXL_MBOX_OP_GET_LSA, in, sizeof(in), out, &n);

	return rc || n != 16 ? -1 : 0;
}

/* The guest walks the capabilities array (8.2.8.2) as cxl_pci does. */
static void test_secondary_hidden(void)
{
	uint64_t arr = g_rd(BLK, 8), pmb = 0;
	unsigned count = (unsigned)VCXL_FIELD_GET(CXLDEV_CAP_ARRAY_COUNT, arr), ids = 0;
	bool smb = false;

	for (unsigned i = 0; i < count && i < 16; i++) {
		uint64_t h = BLK + CXLDEV_CAP_HDR_FIRST + i * CXLDEV_CAP_HDR_STRIDE;
		uint16_t id = (uint16_t)VCXL_FIELD_GET(CXLDEV_CAP_HDR_ID, g_rd(h, 4));
		ids++;
		if (id == CXLDEV_CAP_ID_SECONDARY_MBOX)
			smb = true;
		if (id == CXLDEV_CAP_ID_PRIMARY_MBOX)
			pmb = BLK + g_rd(h + CXLDEV_CAP_HDR_OFFSET, 4);
	}
	ok(!smb && count == VCXL_MDEV_NR_CAPS,
	   "the guest's capabilities array lists no Secondary Mailbox (%u capabilities, the "
	   "device has %u)",
	   count, VCXL_MDEV_NR_CAPS + 1);
	is(pmb, PMB, "... and the Primary Mailbox where the device has it");

	struct vcxl_client_region ri;
	bool clear = true;
	memset(&ri, 0, sizeof(ri));
	vcxl_client_region_info(C, BAR2, &ri);
	if (ri.fd >= 0)
		close(ri.fd);
	ok(ri.flags & VFIO_REGION_INFO_FLAG_MMAP, "BAR2 is mappable (%u areas)", ri.nr_sparse);
	for (unsigned i = 0; i < ri.nr_sparse; i++) {
		uint64_t o = ri.sparse[i].offset, s = ri.sparse[i].size;
		if (hit(o, s, SMB, SMB_LEN) || hit(o, s, PMB, PMB_LEN) ||
		    hit(o, s, BLK, HDR_SMB + CXLDEV_CAP_HDR_STRIDE - BLK)) {
			diag("mappable [%#llx, %#llx)", (unsigned long long)o,
			     (unsigned long long)(o + s));
			clear = false;
		}
	}
	ok(clear && ri.nr_sparse > 0,
	   "no mappable area covers the capabilities array, the Primary Mailbox with its "
	   "payload, or the Secondary Mailbox");

	/* the guest writes the hardware's Secondary Mailbox anyway */
	static const uint16_t ops[] = {CXL_MBOX_OP_SANITIZE, CXL_MBOX_OP_SET_LSA,
				       CXL_MBOX_OP_TRANSFER_FW};
	uint8_t in[CXL_SET_LSA_HDR_SIZE + 16], lsa0[16], lsa1[16];
	memset(in, 0xee, sizeof(in));
	memset(in, 0, CXL_SET_LSA_HDR_SIZE);
	ok(get_lsa16(lsa0) == 0, "Get LSA through the Primary Mailbox");
	for (unsigned i = 0; i < sizeof(ops) / sizeof(ops[0]); i++)
		g_submit(SMB, ops[i], in, sizeof(in));
	ok(F.smb_runs == 0,
	   "Sanitize, Set LSA, Transfer FW written to the Secondary Mailbox: "
	   "the device ran %u (last opcode %#x)",
	   F.smb_runs, F.smb_last_op);
	ok(g_rd(SMB + CXLDEV_MBOX_CAPS, 4) == 0 && g_rd(SMB + CXLDEV_MBOX_CMD, 8) == 0,
	   "its registers read 0 (caps %#llx)", (unsigned long long)g_rd(SMB, 4));
	ok(get_lsa16(lsa1) == 0 && !memcmp(lsa0, lsa1, 16), "the label storage area unchanged");
}

/* A command in flight: the guest rewrites Command and payload meanwhile. */
static void test_inflight(void)
{
	uint8_t lsa0[16], out[16], set[CXL_SET_LSA_HDR_SIZE + 16];
	uint8_t in[CXL_GET_LSA_IN_SIZE] = {0, 0, 0, 0, 16, 0, 0, 0};
	size_t n = sizeof(out);
	uint64_t cmd = 0;

	ok(get_lsa16(lsa0) == 0, "Get LSA (allowed) works");
	F.hold = true;
	g_submit(PMB, CXL_MBOX_OP_GET_LSA, in, sizeof(in));
	ok(F.held && (g_rd(PMB + CXLDEV_MBOX_CTRL, 4) & CXLDEV_MBOX_CTRL_DOORBELL),
	   "Get LSA doorbelled: the device holds it, the doorbell reads set");
	/* the hostile guest: Set LSA and its payload while the doorbell is set */
	memset(set, 0, CXL_SET_LSA_HDR_SIZE);
	memset(set + CXL_SET_LSA_HDR_SIZE, 0xee, 16);
	g_wbuf(PMB + CXLDEV_MBOX_PAYLOAD, set, sizeof(set));
	g_wr(PMB + CXLDEV_MBOX_CMD, 8,
	     VCXL_FIELD_PREP(CXLDEV_MBOX_CMD_OPCODE, CXL_MBOX_OP_SET_LSA) |
		 VCXL_FIELD_PREP(CXLDEV_MBOX_CMD_PAYLOAD_LEN, sizeof(set)));
	g_wr(PMB + CXLDEV_MBOX_CMD, 4, /* and its low dword alone */
	     (uint32_t)(VCXL_FIELD_PREP(CXLDEV_MBOX_CMD_OPCODE, CXL_MBOX_OP_SET_LSA) |
			VCXL_FIELD_PREP(CXLDEV_MBOX_CMD_PAYLOAD_LEN, sizeof(set))));
	is(F.late_writes, 0,
	   "Command and payload writes while the doorbell is set: none reached "
	   "the device");
	F.inner->ops->bar_read(F.inner->dev, 2, PMB + CXLDEV_MBOX_CMD, 8, &cmd);
	is(VCXL_FIELD_GET(CXLDEV_MBOX_CMD_OPCODE, cmd), CXL_MBOX_OP_GET_LSA,
	   "the device's Command register still holds Get LSA");
	g_wr(RELEASE_OFF, 4, RELEASE_VAL); /* the device runs what it holds */
	int rc = g_result(PMB, out, &n);
	ok(rc == CXL_MBOX_RC_SUCCESS && n == 16 && !memcmp(out, lsa0, 16),
	   "the device ran Get LSA with its own payload (rc %d, %zu bytes)", rc, n);
	ok(get_lsa16(out) == 0 && !memcmp(out, lsa0, 16),
	   "the label storage area unchanged (Set LSA never ran)");
	uint8_t id[CXL_IDENTIFY_SIZE];
	n = sizeof(id);
	is(g_cmd(PMB, CXL_MBOX_OP_IDENTIFY, NULL, 0, id, &n), CXL_MBOX_RC_SUCCESS,
	   "the next command (Identify) goes through once the doorbell cleared");
}

static struct vcxl_loop *loop;

static void *loop_main(void *arg)
{
	(void)arg;
	vcxl_loop_run(loop);
	return NULL;
}

int main(void)
{
	struct vcxl_model_cfg mc = {
	    .mem_size = VCXL_SZ_256M, .decoders = 2, .kind = VCXL_MODEL_TYPE3};
	struct vcxl_model *m = NULL;
	struct vcxl_vdev *v = NULL;
	char err[256] = "", dir[] = "/tmp/vcxl-mbox-XXXXXX", path[64];
	sigset_t set;
	pthread_t th;

	sigemptyset(&set);
	sigaddset(&set, SIGTERM);
	sigaddset(&set, SIGINT);
	sigaddset(&set, SIGUSR1);
	pthread_sigmask(SIG_BLOCK, &set, NULL);
	if (!ok(vcxl_model_create(&mc, &m) == 0, "Type-3 model"))
		return done();
	F.inner = vcxl_model_backend(m);
	F.ops = *F.inner->ops;
	F.ops.bar_read = f_bar_read;
	F.ops.bar_write = f_bar_write;
	F.ops.bar_info = f_bar_info;
	F.ops.fd_unshareable = f_unshareable;
	F.be.ops = &F.ops;
	F.be.dev = F.inner->dev;
	F.bar2_fd = memfd_create("bar2", MFD_CLOEXEC);
	setup_ok(ftruncate(F.bar2_fd, VCXL_MODEL_T3_BAR2_SIZE));
	F.smb[CXLDEV_MBOX_CAPS] = SMB_SHIFT;
	is(vcxl_vdev_create(&F.be, NULL, &v, err, sizeof(err)), 0,
	   "vdev over a Type-3 with a Secondary Mailbox (%s)", err);
	setup_ok(!mkdtemp(dir));
	snprintf(path, sizeof(path), "%s/dev", dir);
	setup_ok(vcxl_loop_create(&loop));
	setup_ok(vcxl_loop_add_device(loop, path, &vcxl_vdev_ops, v, NULL));
	pthread_create(&th, NULL, loop_main, NULL);
	if (ok(v && vcxl_client_connect(path, &C) == 0, "a client on the device socket")) {
		test_secondary_hidden();
		test_inflight();
		vcxl_client_close(C);
	}
	kill(getpid(), SIGTERM);
	pthread_join(th, NULL);
	vcxl_loop_destroy(loop);
	rmdir(dir);
	vcxl_vdev_destroy(v);
	vcxl_model_destroy(m);
	close(F.bar2_fd);
	return done();
}
