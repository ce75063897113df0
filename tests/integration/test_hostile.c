// SPDX-License-Identifier: BSD-3-Clause
/*
 * A hostile client against the real server binary, using the fds the server
 * really sends (docs/security.md, "Attacks and what stops them"). Two model
 * devices, 1 GiB of device memory each, 256 MiB regions: the client of
 * device 0 maps past the region and past every BAR area, writes there,
 * ftruncates and fallocates every fd, adds seals, issues VFIO ioctls on them,
 * and points the job engine outside the region. Afterwards: device memory
 * outside the region is unchanged (read through the server's own device
 * memory file, /proc/PID/fd), the guest's config space and component block
 * read as before, the server lives and device 1 is served.
 *
 * Then --backing: the file holds all device memory, so its fd goes to no
 * client unless the operator passes --trust-client; without it the region
 * is served by messages (one log line says so) and `vcxl memtest` works
 * through them.
 *
 * Server privileges: --socket-mode and --socket-group give the socket its
 * mode and group, --user drops to an unprivileged user once everything is
 * open (as root only: otherwise skipped), and the devices are still served.
 */
#include <dirent.h>
#include <json-c/json.h>
#include <linux/pci_regs.h>
#include <pwd.h>
#include <linux/falloc.h>
#include <linux/vfio.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/un.h>

#include "tap.h"
#include "integration/harness.h"
#include "cxl/cxl_regs.h"
#include "model/model.h"
#include "vfio-cxl/vfio_cxl.h"
#include "../../src/common/sigbus_guard.h"

#define MEM	   (1ull << 30)
#define REGION	   (256ull << 20)
#define CANARY	   0x1000u
#define MAX_DEVMEM 4

static const uint64_t canary_dpa[] = {REGION, 0x10001000ull, MEM - CANARY};

struct devmem {
	int n;
	int fd[MAX_DEVMEM]; /* the server's device memory files, opened here */
};

static uint8_t canary_byte(unsigned i)
{
	return (uint8_t)(0x5a ^ (i * 13));
}

/* The server's device memory (memfd "vcxl-devmem" of 1 GiB), one per device:
 * the oracle for device memory outside the region. */
static void devmem_find(pid_t pid, struct devmem *d)
{
	char dir[64], path[320], link[256];
	ino_t seen[MAX_DEVMEM];
	struct dirent *e;
	DIR *dp;

	d->n = 0;
	snprintf(dir, sizeof(dir), "/proc/%d/fd", (int)pid);
	if (!(dp = opendir(dir)))
		return;
	while ((e = readdir(dp)) && d->n < MAX_DEVMEM) {
		struct stat st;
		ssize_t n;
		bool dup = false;

		snprintf(path, sizeof(path), "%s/%s", dir, e->d_name);
		n = readlink(path, link, sizeof(link) - 1);
		if (n <= 0)
			continue;
		link[n] = 0;
		if (!strstr(link, "memfd:vcxl-devmem"))
			continue;
		int fd = open(path, O_RDWR | O_CLOEXEC);
		if (fd < 0 || fstat(fd, &st) || (uint64_t)st.st_size != MEM) {
			if (fd >= 0)
				close(fd);
			continue;
		}
		for (int i = 0; i < d->n; i++)
			dup |= seen[i] == st.st_ino;
		if (dup) {
			close(fd);
			continue;
		}
		seen[d->n] = st.st_ino;
		d->fd[d->n++] = fd;
	}
	closedir(dp);
}

static void canaries_set(const struct devmem *d)
{
	uint8_t buf[CANARY];

	for (unsigned c = 0; c < sizeof(canary_dpa) / sizeof(canary_dpa[0]); c++) {
		memset(buf, canary_byte(c), sizeof(buf));
		for (int i = 0; i < d->n; i++)
			if (pwrite(d->fd[i], buf, sizeof(buf), (off_t)canary_dpa[c]) != CANARY)
				diag("canary write failed");
	}
}

/* Number of canaries (of all devices) that changed */
static int canaries_bad(const struct devmem *d)
{
	uint8_t buf[CANARY], want[CANARY];
	int bad = 0;

	for (unsigned c = 0; c < sizeof(canary_dpa) / sizeof(canary_dpa[0]); c++) {
		memset(want, canary_byte(c), sizeof(want));
		for (int i = 0; i < d->n; i++)
			if (pread(d->fd[i], buf, sizeof(buf), (off_t)canary_dpa[c]) != CANARY ||
			    memcmp(buf, want, CANARY))
				bad++;
	}
	return bad;
}

static bool server_alive(const struct harness *h)
{
	int st;

	return h->pid > 0 && waitpid(h->pid, &st, WNOHANG) == 0;
}

struct poke {
	volatile uint8_t *p;
	uint8_t v;
};

static void poke_fn(void *arg)
{
	struct poke *k = arg;

	*k->p = k->v;
}

/* Store one byte through a mapping; -EFAULT if the store faulted (SIGBUS). */
static int poke(void *p, uint8_t v)
{
	struct poke k = {.p = p, .v = v};

	return vcxl_sigbus_guarded(poke_fn, &k);
}

/* What a client can do to an fd without the server: every attempt must fail
 * or stay inside what the fd is for. Returns how many attempts did harm
 * (succeeded although they must not). */
static int fd_abuse(int fd, uint64_t size, const char *what)
{
	struct stat st = {0};
	int harm = 0;
	struct vfio_device_info info = {.argsz = sizeof(info)};
	struct vfio_irq_set irqs = {.argsz = sizeof(irqs),
				    .flags = VFIO_IRQ_SET_DATA_NONE | VFIO_IRQ_SET_ACTION_TRIGGER,
				    .index = VFIO_PCI_MSIX_IRQ_INDEX};
	uint8_t b = 0xee;

	ok(fstat(fd, &st) == 0 && (uint64_t)st.st_size == size,
	   "%s: the fd is exactly 0x%llx bytes (0x%llx)", what, (unsigned long long)size,
	   (unsigned long long)st.st_size);
	harm += !ok(pwrite(fd, &b, 1, (off_t)size) < 0, "%s: pwrite past its end refused", what);
	harm += !ok(ftruncate(fd, 0) < 0, "%s: ftruncate to 0 refused", what);
	harm += !ok(ftruncate(fd, (off_t)(size + 4096)) < 0, "%s: ftruncate larger refused", what);
	harm += !ok(fallocate(fd, 0, (off_t)size, 4096) < 0, "%s: fallocate past the end refused",
		    what);
	harm += !ok(fcntl(fd, F_ADD_SEALS, F_SEAL_WRITE | F_SEAL_FUTURE_WRITE) < 0,
		    "%s: adding write seals refused", what);
	harm += !ok(ioctl(fd, VFIO_DEVICE_RESET) < 0, "%s: VFIO_DEVICE_RESET refused", what);
	harm += !ok(ioctl(fd, VFIO_DEVICE_GET_INFO, &info) < 0, "%s: VFIO_DEVICE_GET_INFO refused",
		    what);
	harm += !ok(ioctl(fd, VFIO_DEVICE_SET_IRQS, &irqs) < 0, "%s: VFIO_DEVICE_SET_IRQS refused",
		    what);
	/* mapping past the end: the pages past the fd fault in the client, and
	 * writing there reaches nothing */
	long pg = sysconf(_SC_PAGESIZE);
	uint8_t *map =
	    mmap(NULL, size + 4 * (uint64_t)pg, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	if (ok(map != MAP_FAILED, "%s: mapped with 4 pages past its end", what)) {
		harm += !ok(poke(map + size, 0xab) == -EFAULT &&
				poke(map + size + 3 * pg, 1) == -EFAULT,
			    "%s: stores past its end fault in the client", what);
		munmap(map, size + 4 * (uint64_t)pg);
	}
	return harm;
}

/* The crash: truncate the fd, then ask the server for a read of the
 * memory behind it (it used to die of SIGBUS, taking device 1 along). */
static void truncate_then_read(struct harness *h, struct vcxl_client *c, int fd, uint32_t index,
			       uint64_t off, const char *what)
{
	uint8_t buf[8];

	ok(ftruncate(fd, 0) < 0, "%s: ftruncate to 0 refused", what);
	is(vcxl_client_region_read(c, index, off, buf, sizeof(buf)), 0,
	   "%s: an 8-byte REGION_READ at 0x%llx then is served", what, (unsigned long long)off);
	ok(server_alive(h), "%s: the server lives", what);
}

/* ---- The host's physical state, read through the backend ----------------
 * The server's control socket (query-status, host_region.registers) reads the
 * model's own registers: the region's physical HDM decoder, HDM Global
 * Control, the Device DVSEC's Control, Lock and Ranges, the job engine's DPA
 * window. That, not the guest's view, is what no attack may change. */
struct host_state {
	char json[2048]; /* host_region.registers, as the server printed it */
	bool committed;
	uint64_t base, size, win_base, win_size, dvsec_ctrl;
};

static int ctl_query(const char *ctl, unsigned dev, char *out, size_t outlen)
{
	struct sockaddr_un a = {.sun_family = AF_UNIX};
	char req[96];
	size_t got = 0;
	int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0), n;

	if (fd < 0)
		return -errno;
	if (strlen(ctl) >= sizeof(a.sun_path)) {
		close(fd);
		return -ENAMETOOLONG;
	}
	memcpy(a.sun_path, ctl, strlen(ctl) + 1);
	n = snprintf(req, sizeof(req),
		     "{\"execute\":\"query-status\",\"arguments\":{\"device\":%u}}\n", dev);
	if (connect(fd, (struct sockaddr *)&a, sizeof(a)) || write(fd, req, (size_t)n) != n) {
		close(fd);
		return -EIO;
	}
	while (got + 1 < outlen && (got == 0 || out[got - 1] != '\n')) {
		ssize_t r = read(fd, out + got, outlen - 1 - got);
		if (r <= 0)
			break;
		got += (size_t)r;
	}
	out[got] = 0;
	close(fd);
	return got && out[got - 1] == '\n' ? 0 : -EIO;
}

static uint64_t j_get(struct json_object *o, const char *k)
{
	struct json_object *v;

	return o && json_object_object_get_ex(o, k, &v) ? (uint64_t)json_object_get_int64(v)
							: ~0ull;
}

/* 0, or -1 if the control socket did not answer with the registers */
static int host_take(const struct harness *h, unsigned dev, struct host_state *st)
{
	char ctl[sizeof(h->sock) + 8], reply[16384];
	struct json_object *j, *ret, *devs, *d, *hr, *regs, *dec, *win;
	int rc = -1;

	memset(st, 0, sizeof(*st));
	snprintf(ctl, sizeof(ctl), "%s.ctl", h->sock);
	if (ctl_query(ctl, dev, reply, sizeof(reply)) || !(j = json_tokener_parse(reply)))
		return -1;
	if (json_object_object_get_ex(j, "return", &ret) &&
	    json_object_object_get_ex(ret, "devices", &devs) &&
	    (d = json_object_array_get_idx(devs, 0)) &&
	    json_object_object_get_ex(d, "host_region", &hr) &&
	    json_object_object_get_ex(hr, "registers", &regs) &&
	    json_object_is_type(regs, json_type_object) &&
	    json_object_object_get_ex(regs, "decoder", &dec)) {
		struct json_object *c;
		snprintf(st->json, sizeof(st->json), "%s",
			 json_object_to_json_string_ext(regs, JSON_C_TO_STRING_PLAIN));
		st->committed =
		    json_object_object_get_ex(dec, "committed", &c) && json_object_get_boolean(c);
		st->base = j_get(dec, "base");
		st->size = j_get(dec, "size");
		st->dvsec_ctrl = j_get(regs, "dvsec_ctrl");
		if (json_object_object_get_ex(regs, "engine_dpa_window", &win)) {
			st->win_base = j_get(win, "base");
			st->win_size = j_get(win, "size");
		}
		rc = 0;
	}
	json_object_put(j);
	return rc;
}

/* The host's physical state after an attack: as before it, and the region's
 * decoder committed at its HPA with its size, Mem_Enable set, the engine
 * confined to the region. Returns the number of failed checks. */
static int host_check(const struct harness *h, unsigned dev, const struct host_state *ref,
		      const char *after)
{
	struct host_state now;
	int bad = 0;

	if (!ok(host_take(h, dev, &now) == 0, "%s: host registers read (control socket)", after))
		return 1;
	bad += !ok(now.committed && now.base == ref->base && now.size == REGION,
		   "%s: the physical decoder is committed at 0x%llx, 0x%llx bytes", after,
		   (unsigned long long)now.base, (unsigned long long)now.size);
	bad += !ok(now.dvsec_ctrl != ~0ull && (now.dvsec_ctrl & CXL_DVSEC_CTRL_MEM_EN),
		   "%s: the device's DVSEC Mem_Enable is set", after);
	bad += !ok(now.win_base == 0 && now.win_size == REGION,
		   "%s: the device's engine window is the region", after);
	bad += !ok(!strcmp(now.json, ref->json), "%s: every host-owned register unchanged", after);
	if (strcmp(now.json, ref->json))
		diag("before: %s\nafter:  %s", ref->json, now.json);
	return bad;
}

/* Offset of the guest's CXL Device DVSEC in its config space (0 if none) */
static uint32_t guest_dvsec(struct vcxl_client *c)
{
	uint32_t off = PCI_CFG_SPACE_SIZE, hdr = 0, h1 = 0, h2 = 0;

	for (int n = 0; n < 64 && off >= PCI_CFG_SPACE_SIZE; n++) {
		if (vcxl_client_read32(c, VFIO_PCI_CONFIG_REGION_INDEX, off, &hdr) || !hdr)
			return 0;
		if (PCI_EXT_CAP_ID(hdr) == PCI_EXT_CAP_ID_DVSEC &&
		    !vcxl_client_read32(c, VFIO_PCI_CONFIG_REGION_INDEX, off + PCI_DVSEC_HEADER1,
					&h1) &&
		    !vcxl_client_read32(c, VFIO_PCI_CONFIG_REGION_INDEX, off + PCI_DVSEC_HEADER2,
					&h2) &&
		    (h1 & 0xffff) == CXL_VENDOR_ID && (h2 & 0xffff) == CXL_DVSEC_ID_DEVICE)
			return off;
		off = PCI_EXT_CAP_NEXT(hdr);
	}
	return 0;
}

/* Offset of the guest's PCI Express capability (0 if none) */
static uint32_t guest_pcie_cap(struct vcxl_client *c)
{
	uint32_t v = 0, off;

	if (vcxl_client_read32(c, VFIO_PCI_CONFIG_REGION_INDEX, PCI_CAPABILITY_LIST & ~3u, &v))
		return 0;
	off = (v >> (8 * (PCI_CAPABILITY_LIST & 3))) & 0xfc;
	for (int n = 0; n < 48 && off; n++) {
		if (vcxl_client_read32(c, VFIO_PCI_CONFIG_REGION_INDEX, off, &v))
			return 0;
		if ((v & 0xff) == PCI_CAP_ID_EXP)
			return off;
		off = (v >> 8) & 0xfc;
	}
	return 0;
}

static void write16(struct vcxl_client *c, uint32_t index, uint64_t off, uint16_t v)
{
	uint8_t b[2] = {(uint8_t)v, (uint8_t)(v >> 8)};

	vcxl_client_region_write(c, index, off, b, sizeof(b));
}

/* Every path a guest has to host-owned registers, written with values that
 * would undo the host's region: its DVSEC (Control, Lock, Ranges, CXL
 * Reset), its HDM decoders and Global Control through BAR0 and through the
 * COMP_REGS region, and a function reset. */
static void test_host_regs(struct harness *h, struct vcxl_client *c,
			   const struct vcxl_client_info *info, const struct host_state *ref)
{
	const uint32_t cfg = VFIO_PCI_CONFIG_REGION_INDEX;
	uint32_t dv = guest_dvsec(c);
	uint64_t hdm = info->cxl.hdm_offset, comp = info->cxl.comp_offset;

	ok(dv != 0, "the guest's CXL Device DVSEC found at 0x%x", dv);
	if (dv) {
		vcxl_client_write32(c, cfg, dv + CXL_DVSEC_CTRL, 0); /* Mem_Enable off */
		vcxl_client_write32(c, cfg, dv + CXL_DVSEC_LOCK, CXL_DVSEC_LOCK_CONFIG);
		for (unsigned i = 0; i < CXL_DVSEC_RANGE_MAX; i++) {
			vcxl_client_write32(c, cfg, dv + CXL_DVSEC_RANGE_BASE_HI(i), 0xffffffffu);
			vcxl_client_write32(c, cfg, dv + CXL_DVSEC_RANGE_BASE_LO(i), 0xf0000000u);
			vcxl_client_write32(c, cfg, dv + CXL_DVSEC_RANGE_SIZE_LO(i), 0);
		}
	}
	host_check(h, 0, ref, "guest writes to the DVSEC's Control, Lock and Ranges");
	/* the HDM decoder 0 and Global Control, through BAR0 and COMP_REGS */
	for (int path = 0; path < 2; path++) {
		uint32_t idx = path ? VCXL_VDEV_COMP_REGION : info->cxl.hdm_bar;
		uint64_t at = path ? hdm - comp : hdm;
		vcxl_client_write32(c, idx, at + CXL_HDM_DEC_CTRL(0), 0); /* decommit */
		vcxl_client_write32(c, idx, at + CXL_HDM_DEC_BASE_LO(0), 0x10000000u);
		vcxl_client_write32(c, idx, at + CXL_HDM_DEC_BASE_HI(0), 0x1u);
		vcxl_client_write32(c, idx, at + CXL_HDM_DEC_SIZE_LO(0), 0x10000000u);
		vcxl_client_write32(c, idx, at + CXL_HDM_DEC_CTRL(0), CXL_HDM_DEC_CTRL_COMMIT);
		vcxl_client_write32(c, idx, at + CXL_HDM_GLOBAL_CTRL, 0);
		host_check(h, 0, ref,
			   path ? "guest decoder writes through COMP_REGS"
				: "guest decoder writes through BAR0");
	}
	if (dv) {
		write16(c, cfg, dv + CXL_DVSEC_CTRL2, CXL_DVSEC_CTRL2_INIT_RESET);
		host_check(h, 0, ref, "the guest's CXL Reset");
	}
	/* PCIe r6 7.5.3.4: Initiate Function Level Reset */
	uint32_t px = guest_pcie_cap(c);
	if (ok(px != 0, "the guest's PCIe capability found at 0x%x", px)) {
		write16(c, cfg, px + PCI_EXP_DEVCTL, PCI_EXP_DEVCTL_BCR_FLR);
		host_check(h, 0, ref, "the guest's FLR");
	}
	is(vcxl_client_reset(c), 0, "VFIO_DEVICE_RESET");
	host_check(h, 0, ref, "the client's device reset");
}

/* The guest's view of config space and the component block */
struct view {
	uint8_t cfg[VCXL_VDEV_CONFIG_SIZE];
	uint8_t comp[CXL_COMPONENT_BLOCK_SIZE];
};

static int view_take(struct vcxl_client *c, const struct vcxl_client_info *info, struct view *v)
{
	int rc =
	    vcxl_client_region_read(c, VFIO_PCI_CONFIG_REGION_INDEX, 0, v->cfg, sizeof(v->cfg));

	return rc
		   ?: vcxl_client_region_read(c, info->cxl.hdm_bar, info->cxl.comp_offset, v->comp,
					      sizeof(v->comp));
}

static void test_region_fd(struct harness *h, struct vcxl_client *c, const struct devmem *d)
{
	struct vcxl_client_region ri;
	uint8_t buf[8];

	is(vcxl_client_region_info(c, 9, &ri), 0, "CXL region info");
	if (!ok(ri.fd >= 0 && (ri.flags & VFIO_REGION_INFO_FLAG_MMAP),
		"the CXL region comes with an fd to mmap")) {
		if (ri.fd >= 0)
			close(ri.fd);
		return;
	}
	is(ri.offset, 0, "region at fd offset 0");
	is(ri.size, REGION, "region size 256 MiB");
	/* the attack: write at fd offset 0x10001000 (past the region) */
	uint8_t junk[64];
	memset(junk, 0xcc, sizeof(junk));
	ok(pwrite(ri.fd, junk, sizeof(junk), 0x10001000) < 0, "pwrite at 0x10001000 refused");
	is(canaries_bad(d), 0, "device memory outside the region unchanged");
	truncate_then_read(h, c, ri.fd, 9, 0, "region fd");
	if (!server_alive(h)) {
		close(ri.fd);
		return;
	}
	int harm = fd_abuse(ri.fd, REGION, "region fd");
	is(harm, 0, "nothing done to the region fd did harm");
	/* inside the region the client may do as it likes: punch a hole */
	ok(fallocate(ri.fd, FALLOC_FL_PUNCH_HOLE | FALLOC_FL_KEEP_SIZE, 0, 4096) == 0,
	   "punching a hole inside the region is the guest's own business");
	is(vcxl_client_region_read(c, 9, 0, buf, sizeof(buf)), 0,
	   "REGION_READ after all that: served");
	is(vcxl_client_region_read(c, 9, REGION - 8, buf, sizeof(buf)), 0,
	   "REGION_READ of the region's last bytes: served");
	ok(server_alive(h), "the server lives");
	is(canaries_bad(d), 0, "device memory outside the region unchanged");
	close(ri.fd);
}

static void test_bar_fds(struct harness *h, struct vcxl_client *c,
			 const struct vcxl_client_info *info, const struct devmem *d)
{
	struct view before, after;

	is(view_take(c, info, &before), 0, "guest view of config and component block taken");
	for (uint32_t bar = VFIO_PCI_BAR0_REGION_INDEX; bar <= VFIO_PCI_BAR5_REGION_INDEX; bar++) {
		struct vcxl_client_region ri;
		char what[32];

		if (vcxl_client_region_info(c, bar, &ri) || ri.fd < 0)
			continue;
		snprintf(what, sizeof(what), "BAR%u fd", bar);
		ok(ri.flags & VFIO_REGION_INFO_FLAG_MMAP, "%s: mmappable", what);
		/* the last bytes of the BAR: RAM, not the component block (at the start) */
		truncate_then_read(h, c, ri.fd, bar, ri.size - 8, what);
		if (!server_alive(h)) {
			close(ri.fd);
			return;
		}
		is(fd_abuse(ri.fd, ri.size, what), 0, "%s: nothing done to it did harm", what);
		/* past every area: write the trapped pages through the fd */
		uint8_t *map = mmap(NULL, ri.size, PROT_READ | PROT_WRITE, MAP_SHARED, ri.fd,
				    (off_t)ri.offset);
		if (ok(map != MAP_FAILED, "%s: the whole BAR mapped, areas or not", what)) {
			unsigned faults = 0;
			for (uint64_t o = 0; o < ri.size; o += 4096)
				faults += poke(map + o, 0x99) != 0;
			is(faults, 0, "%s: every page written (the trapped ones too)", what);
			munmap(map, ri.size);
		}
		uint32_t v;
		is(vcxl_client_read32(c, bar, 0x1000 < ri.size ? ri.size - 4 : 0, &v), 0,
		   "%s: REGION_READ served afterwards", what);
		close(ri.fd);
	}
	is(view_take(c, info, &after), 0, "guest view taken again");
	ok(!memcmp(before.cfg, after.cfg, sizeof(before.cfg)), "config space unchanged");
	ok(!memcmp(before.comp, after.comp, sizeof(before.comp)),
	   "component block (HDM decoders) unchanged");
	ok(server_alive(h), "the server lives");
	is(canaries_bad(d), 0, "device memory outside the region unchanged");
}

/* The job engine: DPA jobs outside the region end in ERROR and touch nothing;
 * the client cannot move the engine's DPA window. */
static void test_engine(struct harness *h, struct vcxl_client *c, const struct devmem *d,
			const struct host_state *ref)
{
	const uint32_t bar = VCXL_MODEL_CTRL_BAR;
	uint64_t base = 1, size = 1;
	uint32_t st = 0;

	is(vcxl_client_read64(c, bar, ACCEL_REG_DPA_WIN_BASE, &base) |
	       vcxl_client_read64(c, bar, ACCEL_REG_DPA_WIN_SIZE, &size),
	   0, "engine DPA window read");
	ok(base == 0 && size == REGION, "the engine is confined to the region [0x%llx, +0x%llx)",
	   (unsigned long long)base, (unsigned long long)size);
	vcxl_client_write64(c, bar, ACCEL_REG_DPA_WIN_SIZE, MEM);
	vcxl_client_write64(c, bar, ACCEL_REG_DPA_WIN_BASE, REGION);
	vcxl_client_read64(c, bar, ACCEL_REG_DPA_WIN_BASE, &base);
	vcxl_client_read64(c, bar, ACCEL_REG_DPA_WIN_SIZE, &size);
	ok(base == 0 && size == REGION, "the client's writes to the window are dropped");
	host_check(h, 0, ref, "the client's writes to the engine's DPA window");
	for (unsigned k = 0; k < sizeof(canary_dpa) / sizeof(canary_dpa[0]); k++) {
		vcxl_client_write32(c, bar, ACCEL_REG_STATUS,
				    ACCEL_STATUS_DONE | ACCEL_STATUS_ERROR);
		vcxl_client_write32(c, bar, ACCEL_REG_JOB_OP, ACCEL_OP_FILL);
		vcxl_client_write32(c, bar, ACCEL_REG_JOB_FLAGS, 0);
		vcxl_client_write64(c, bar, ACCEL_REG_JOB_DST, canary_dpa[k]);
		vcxl_client_write64(c, bar, ACCEL_REG_JOB_LEN, 0x2000);
		vcxl_client_write64(c, bar, ACCEL_REG_JOB_PATTERN, 0x0123456789abcdefull);
		vcxl_client_write32(c, bar, ACCEL_REG_DOORBELL, ACCEL_DOORBELL_GO);
		vcxl_client_read32(c, bar, ACCEL_REG_STATUS, &st);
		ok(st & ACCEL_STATUS_ERROR, "FILL at DPA 0x%llx (outside the region): ERROR",
		   (unsigned long long)canary_dpa[k]);
	}
	/* a copy from outside into the region, and one straddling its end */
	vcxl_client_write32(c, bar, ACCEL_REG_STATUS, ACCEL_STATUS_DONE | ACCEL_STATUS_ERROR);
	vcxl_client_write32(c, bar, ACCEL_REG_JOB_OP, ACCEL_OP_COPY);
	vcxl_client_write64(c, bar, ACCEL_REG_JOB_SRC, REGION);
	vcxl_client_write64(c, bar, ACCEL_REG_JOB_DST, 0);
	vcxl_client_write64(c, bar, ACCEL_REG_JOB_LEN, 0x1000);
	vcxl_client_write32(c, bar, ACCEL_REG_DOORBELL, ACCEL_DOORBELL_GO);
	vcxl_client_read32(c, bar, ACCEL_REG_STATUS, &st);
	ok(st & ACCEL_STATUS_ERROR, "COPY from outside the region: ERROR");
	vcxl_client_write32(c, bar, ACCEL_REG_STATUS, ACCEL_STATUS_DONE | ACCEL_STATUS_ERROR);
	vcxl_client_write64(c, bar, ACCEL_REG_JOB_SRC, 0);
	vcxl_client_write64(c, bar, ACCEL_REG_JOB_DST, REGION - 0x800);
	vcxl_client_write32(c, bar, ACCEL_REG_DOORBELL, ACCEL_DOORBELL_GO);
	vcxl_client_read32(c, bar, ACCEL_REG_STATUS, &st);
	ok(st & ACCEL_STATUS_ERROR, "COPY straddling the region's end: ERROR");
	/* inside, the engine works */
	vcxl_client_write32(c, bar, ACCEL_REG_STATUS, ACCEL_STATUS_DONE | ACCEL_STATUS_ERROR);
	vcxl_client_write64(c, bar, ACCEL_REG_JOB_DST, REGION - 0x1000);
	vcxl_client_write32(c, bar, ACCEL_REG_DOORBELL, ACCEL_DOORBELL_GO);
	vcxl_client_read32(c, bar, ACCEL_REG_STATUS, &st);
	ok((st & ACCEL_STATUS_DONE) && !(st & ACCEL_STATUS_ERROR), "COPY inside the region: DONE");
	/* a reset does not undo the confinement */
	is(vcxl_client_reset(c), 0, "device reset");
	vcxl_client_read64(c, bar, ACCEL_REG_DPA_WIN_BASE, &base);
	vcxl_client_read64(c, bar, ACCEL_REG_DPA_WIN_SIZE, &size);
	ok(base == 0 && size == REGION, "the window survives the reset");
	ok(server_alive(h), "the server lives");
	is(canaries_bad(d), 0, "device memory outside the region unchanged");
}

/* --backing FILE with and without --trust-client */
static void test_backing(const char *bin, const char *cli)
{
	char dir[] = "/tmp/vcxl-hb-XXXXXX", file[96], cmd[600], out[2048];
	const char *args[] = {"--backing", file, "--trust-client", NULL};
	struct vcxl_client_region ri;
	struct vcxl_client *c;
	struct harness h = {0};

	if (!ok(mkdtemp(dir) != NULL, "backing: temp dir"))
		return;
	snprintf(file, sizeof(file), "%s/devmem", dir);
	for (int trust = 0; trust < 2; trust++) {
		args[2] = trust ? "--trust-client" : NULL;
		if (!ok(h_start(&h, bin, -1, args) == 0, "backing%s: server up",
			trust ? " --trust-client" : "")) {
			h_cleanup(&h);
			continue;
		}
		is(vcxl_client_connect(h.sock, &c), 0, "client connects");
		is(vcxl_client_region_info(c, 9, &ri), 0, "region info");
		if (trust) {
			ok(ri.fd >= 0 && (ri.flags & VFIO_REGION_INFO_FLAG_MMAP),
			   "--trust-client: the backing file goes out");
		} else {
			ok(ri.fd < 0 && !(ri.flags & VFIO_REGION_INFO_FLAG_MMAP),
			   "no fd for the region: the file holds all device memory");
			is(h_log_count(&h, "CXL region served by REGION_READ/WRITE only"), 1,
			   "one log line says so, and why");
		}
		if (ri.fd >= 0)
			close(ri.fd);
		vcxl_client_close(c);
		snprintf(cmd, sizeof(cmd), "%s memtest %s --size 4M 2>&1", cli, h.sock);
		FILE *f = popen(cmd, "r");
		size_t n = f ? fread(out, 1, sizeof(out) - 1, f) : 0;
		out[n] = 0;
		for (char *q = out; *q; q++)
			*q = *q == '\n' ? ' ' : *q;
		ok(f && pclose(f) == 0 && strstr(out, "OK") &&
		       (trust ? !strstr(out, "messages only") : !!strstr(out, "messages only")),
		   "vcxl memtest passes (%s): %s", trust ? "mmap" : "messages", out);
		is(h_stop(&h), 0, "server exits cleanly");
		h_cleanup(&h);
	}
	unlink(file);
	rmdir(dir);
}

/* Bytes equal to v in [p, p + n) */
static size_t count_byte(const volatile uint8_t *p, size_t n, uint8_t v)
{
	size_t k = 0;

	for (size_t i = 0; i < n; i++)
		k += p[i] == v;
	return k;
}

/* Bytes equal to v in [off, off + PG) of region index, read by REGION_READ
 * (or (size_t)-1 if the read failed) */
static size_t count_read(struct vcxl_client *c, uint32_t index, uint64_t off, uint8_t v)
{
	uint8_t buf[4096];

	if (vcxl_client_region_read(c, index, off, buf, sizeof(buf)))
		return (size_t)-1;
	return count_byte(buf, sizeof(buf), v);
}

/* The job engine copies a page of the region inside device memory (it reads
 * DPA, not any fd): what device memory holds at src shows at dst. */
static int engine_copy(struct vcxl_client *c, uint64_t src, uint64_t dst)
{
	const uint32_t bar = VCXL_MODEL_CTRL_BAR;
	uint32_t st = 0;

	vcxl_client_write32(c, bar, ACCEL_REG_STATUS, ACCEL_STATUS_DONE | ACCEL_STATUS_ERROR);
	vcxl_client_write32(c, bar, ACCEL_REG_JOB_OP, ACCEL_OP_COPY);
	vcxl_client_write32(c, bar, ACCEL_REG_JOB_FLAGS, 0);
	vcxl_client_write64(c, bar, ACCEL_REG_JOB_SRC, src);
	vcxl_client_write64(c, bar, ACCEL_REG_JOB_DST, dst);
	vcxl_client_write64(c, bar, ACCEL_REG_JOB_LEN, 4096);
	vcxl_client_write32(c, bar, ACCEL_REG_DOORBELL, ACCEL_DOORBELL_GO);
	if (vcxl_client_read32(c, bar, ACCEL_REG_STATUS, &st))
		return -EIO;
	return (st & ACCEL_STATUS_DONE) && !(st & ACCEL_STATUS_ERROR) ? 0 : -EIO;
}

/*
 * --on-disconnect reset (the default): a client that leaves but keeps its
 * mappings (and fds) of the region and of BAR0's RAM shares nothing with the
 * next tenant. It does not see what the next guest writes, and what it writes
 * afterwards reaches neither the next guest's view (REGION_READ, its own
 * mapping) nor device memory (the job engine, which reads DPA).
 */
static void test_departed_tenant(const char *bin)
{
	const char *args[] = {"--mem-size", "1G", "--region-size", "256M", NULL};
	const uint64_t r_seen = 0x100000, r_late = 0x200000, r_copy = 0x300000;
	const size_t pg = 4096;
	struct vcxl_client_region ra, ba, rb;
	struct vcxl_client *a, *b;
	struct harness h = {0};
	uint8_t page[4096];

	if (!ok(h_start(&h, bin, -1, args) == 0,
		"departed tenant: server up (reset on disconnect)"))
		return h_cleanup(&h);
	if (!ok(vcxl_client_connect(h.sock, &a) == 0 && vcxl_client_region_info(a, 9, &ra) == 0 &&
		    vcxl_client_region_info(a, VFIO_PCI_BAR0_REGION_INDEX, &ba) == 0 &&
		    ra.fd >= 0 && ba.fd >= 0,
		"tenant A gets the region's and BAR0's fds")) {
		h_stop(&h);
		return h_cleanup(&h);
	}
	/* BAR0's last pages: RAM in an mmappable area (the component block is at the start) */
	const uint64_t b_seen = ba.size - 2 * pg, b_late = ba.size - pg;
	uint8_t *reg =
	    mmap(NULL, ra.size, PROT_READ | PROT_WRITE, MAP_SHARED, ra.fd, (off_t)ra.offset);
	uint8_t *bar =
	    mmap(NULL, ba.size, PROT_READ | PROT_WRITE, MAP_SHARED, ba.fd, (off_t)ba.offset);
	if (!ok(reg != MAP_FAILED && bar != MAP_FAILED, "tenant A maps both")) {
		vcxl_client_close(a);
		h_stop(&h);
		return h_cleanup(&h);
	}
	memset(reg + r_seen, 0xa1, pg);
	memset(bar + b_seen, 0xa1, pg);
	vcxl_client_close(a); /* gone, mappings and fds kept */

	if (!ok(vcxl_client_connect(h.sock, &b) == 0, "tenant B connects after A left")) {
		h_stop(&h);
		return h_cleanup(&h);
	}
	is(count_read(b, 9, r_seen, 0xa1), 0, "B reads none of A's region bytes (scrubbed)");
	is(count_read(b, VFIO_PCI_BAR0_REGION_INDEX, b_seen, 0xa1), 0,
	   "B reads none of A's BAR0 RAM bytes");
	/* the old objects are emptied off the loop: a client that leaves with
	 * them, tenant after tenant, pins none of the server's memory */
	size_t left_r = pg, left_b = pg;
	for (int t = 0; t < 200 && (left_r || left_b); t++) {
		left_r = count_byte(reg + r_seen, pg, 0xa1);
		left_b = count_byte(bar + b_seen, pg, 0xa1);
		if (left_r || left_b)
			h_sleep_ms(10);
	}
	is(left_r, 0, "the old region object is emptied (A's mapping reads 0 where it wrote)");
	is(left_b, 0, "the old BAR0 object is emptied");
	/* B writes; A must not see it */
	memset(page, 0xb2, sizeof(page));
	is(vcxl_client_region_write(b, 9, r_seen, page, sizeof(page)) |
	       vcxl_client_region_write(b, VFIO_PCI_BAR0_REGION_INDEX, b_seen, page, sizeof(page)),
	   0, "B writes a page of the region and of BAR0 RAM");
	is(count_byte(reg + r_seen, pg, 0xb2), 0,
	   "the departed A does not see B's region write through its mapping");
	is(count_byte(bar + b_seen, pg, 0xb2), 0,
	   "the departed A does not see B's BAR0 write through its mapping");
	/* A writes after B came; B and the device must not see it */
	memset(reg + r_late, 0xa3, pg);
	memset(bar + b_late, 0xa3, pg);
	memset(page, 0xa4, sizeof(page));
	ok(pwrite(ra.fd, page, pg, (off_t)(ra.offset + r_late + pg)) == (ssize_t)pg,
	   "A also writes through its region fd (its own object: allowed)");
	is(count_read(b, 9, r_late, 0xa3), 0, "B's REGION_READ does not see A's late write");
	is(count_read(b, 9, r_late + pg, 0xa4), 0, "nor A's pwrite through the old fd");
	is(count_read(b, VFIO_PCI_BAR0_REGION_INDEX, b_late, 0xa3), 0,
	   "B's BAR0 read does not see A's late write");
	is(engine_copy(b, r_late, r_copy), 0, "B's job copies the page A wrote, by DPA");
	is(count_read(b, 9, r_copy, 0xa3), 0, "device memory does not hold A's late write");
	if (ok(vcxl_client_region_info(b, 9, &rb) == 0 && rb.fd >= 0, "B gets the region's fd")) {
		uint8_t *rm = mmap(NULL, rb.size, PROT_READ | PROT_WRITE, MAP_SHARED, rb.fd,
				   (off_t)rb.offset);
		if (ok(rm != MAP_FAILED, "B maps the region")) {
			is(count_byte(rm + r_late, pg, 0xa3), 0,
			   "B's mapping does not see A's late write");
			is(count_byte(rm + r_seen, pg, 0xb2), pg,
			   "B's mapping shows B's own write");
			munmap(rm, rb.size);
		}
		close(rb.fd);
	}
	munmap(reg, ra.size);
	munmap(bar, ba.size);
	close(ra.fd);
	close(ba.fd);
	vcxl_client_close(b);
	is(h_log_count(&h, "reset for the next client failed"), 0, "no reset failure logged");
	is(h_stop(&h), 0, "server exits cleanly");
	h_cleanup(&h);
}

static unsigned proc_uid(pid_t pid)
{
	char path[64], line[256];
	unsigned uid = ~0u;
	FILE *f;

	snprintf(path, sizeof(path), "/proc/%d/status", (int)pid);
	if (!(f = fopen(path, "r")))
		return uid;
	while (fgets(line, sizeof(line), f))
		if (sscanf(line, "Uid: %u", &uid) == 1)
			break;
	fclose(f);
	return uid;
}

static void test_privileges(const char *bin)
{
	const char *args[] = {"--socket-mode", "0660", "--socket-group", "65534", NULL, NULL, NULL};
	struct harness h = {0};
	struct vcxl_client *c;
	struct stat st;
	uint32_t v = 0;

	if (!ok(h_start(&h, bin, -1, args) == 0,
		"server with --socket-mode 0660 --socket-group 65534"))
		return h_cleanup(&h);
	ok(stat(h.sock, &st) == 0 && S_ISSOCK(st.st_mode) && (st.st_mode & 07777) == 0660,
	   "the socket's mode is 0660 (0%o)", (unsigned)(st.st_mode & 07777));
	is(st.st_gid, 65534, "the socket's group is 65534");
	/* the control socket (default SOCKET.ctl) is the administrator's, never the
	 * device sockets' mode and group (test_control_perm.c tries it as nobody) */
	char ctl[sizeof(h.sock) + 8];
	snprintf(ctl, sizeof(ctl), "%s.ctl", h.sock);
	ok(stat(ctl, &st) == 0 && S_ISSOCK(st.st_mode) && (st.st_mode & 07777) == 0600,
	   "the control socket's mode is 0600, not the devices' (0%o)",
	   (unsigned)(st.st_mode & 07777));
	ok(st.st_gid != 65534 && st.st_uid == geteuid(),
	   "the control socket is the server's uid's, not group 65534");
	is(h_stop(&h), 0, "server exits cleanly");
	h_cleanup(&h);

	const char *bad[][3] = {{"--socket-mode", "0999", NULL},
				{"--socket-mode", "rw", NULL},
				{"--socket-group", "no-such-group-vcxl", NULL},
				{"--user", "no-such-user-vcxl", NULL}};
	for (unsigned i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		char cmd[512], out[512] = "";
		snprintf(cmd, sizeof(cmd), "%s --socket /tmp/vcxl-never.sock %s %s 2>&1", bin,
			 bad[i][0], bad[i][1]);
		FILE *f = popen(cmd, "r");
		size_t n = f ? fread(out, 1, sizeof(out) - 1, f) : 0;
		int ws = f ? pclose(f) : -1;
		out[n] = 0;
		ok(WIFEXITED(ws) && WEXITSTATUS(ws) == 2 && strstr(out, "invalid") &&
		       strchr(out, '\n') == out + n - 1,
		   "%s %s refused in one line (exit 2)", bad[i][0], bad[i][1]);
	}

	if (geteuid() != 0) {
		ok(1, "# SKIP --user needs root");
		return;
	}
	args[4] = "--user";
	args[5] = "nobody";
	if (!ok(h_start(&h, bin, -1, args) == 0, "server with --user nobody"))
		return h_cleanup(&h);
	struct passwd *pw = getpwnam("nobody");
	/* the sockets exist before the drop (they are made as root): wait for it */
	for (int t = 0; t < 200 && !h_log_count(&h, "running as nobody"); t++)
		h_sleep_ms(10);
	is(proc_uid(h.pid), pw ? pw->pw_uid : 65534, "the server runs as nobody");
	ok(h_log_count(&h, "running as nobody") == 1, "and says so");
	ok(vcxl_client_connect(h.sock, &c) == 0 &&
	       vcxl_client_read32(c, VFIO_PCI_CONFIG_REGION_INDEX, 0, &v) == 0 && v == 0x0d948086,
	   "the device is served after the drop");
	struct vcxl_client_region ri;
	ok(vcxl_client_region_info(c, 9, &ri) == 0 && ri.fd >= 0, "the region fd still goes out");
	if (ri.fd >= 0)
		close(ri.fd);
	vcxl_client_close(c);
	is(h_stop(&h), 0, "server exits cleanly");
	h_cleanup(&h);
}

int main(int argc, char **argv)
{
	const char *args[] = {"--devices", "2", "--mem-size", "1G", "--region-size", "256M", NULL};
	struct harness h = {0};
	struct vcxl_client *c0 = NULL, *c1 = NULL;
	struct vcxl_client_info info;
	struct devmem d = {0};
	char s0[160], s1[160];
	uint32_t v = 0;

	if (!ok(h_start(&h, h_server_bin(argc, argv), 0, args) == 0, "server with two devices")) {
		h_dump_log(&h);
		h_cleanup(&h);
		return done();
	}
	h_dev_sock(&h, 0, s0, sizeof(s0));
	h_dev_sock(&h, 1, s1, sizeof(s1));
	is(vcxl_client_connect(s0, &c0), 0, "device 0: the hostile client connects");
	is(vcxl_client_connect(s1, &c1), 0, "device 1: a well-behaved client connects");
	devmem_find(h.pid, &d);
	is(d.n, 2, "the oracle sees both devices' memory (/proc/%d/fd)", (int)h.pid);
	canaries_set(&d);
	is(canaries_bad(&d), 0, "canaries in device memory outside the regions");
	is(vcxl_client_get_info(c0, &info), 0, "device 0 info");

	struct host_state ref0, ref1;
	int took = host_take(&h, 0, &ref0) | host_take(&h, 1, &ref1);
	ok(took == 0 && ref0.committed && ref0.size == REGION,
	   "both devices' host registers read through the backend (control socket): "
	   "decoder committed at 0x%llx, 0x%llx bytes",
	   (unsigned long long)ref0.base, (unsigned long long)ref0.size);

	test_region_fd(&h, c0, &d);
	if (server_alive(&h))
		host_check(&h, 0, &ref0, "region fd attacks");
	if (server_alive(&h))
		test_bar_fds(&h, c0, &info, &d);
	if (server_alive(&h))
		host_check(&h, 0, &ref0, "BAR fd attacks");
	if (server_alive(&h))
		test_engine(&h, c0, &d, &ref0);
	if (server_alive(&h))
		host_check(&h, 0, &ref0, "job engine attacks");
	if (server_alive(&h))
		test_host_regs(&h, c0, &info, &ref0);
	if (server_alive(&h))
		host_check(&h, 1, &ref1, "every attack on device 0: device 1's host registers");
	is(canaries_bad(&d), 0, "device memory outside the regions unchanged after every attack");

	ok(vcxl_client_read32(c1, VFIO_PCI_CONFIG_REGION_INDEX, 0, &v) == 0 && v == 0x0d948086,
	   "device 1 is still served");
	vcxl_client_close(c0);
	vcxl_client_close(c1);
	is(h_stop(&h), 0, "server exits cleanly");
	if (!server_alive(&h) && h.pid > 0)
		h_dump_log(&h);
	for (int i = 0; i < d.n; i++)
		close(d.fd[i]);
	h_cleanup(&h);
	test_departed_tenant(h_server_bin(argc, argv));
	test_backing(h_server_bin(argc, argv), h_cli_bin(argc, argv));
	test_privileges(h_server_bin(argc, argv));
	return done();
}
