// SPDX-License-Identifier: BSD-3-Clause
/* The hardware path without hardware: the CEDT parser on synthetic tables,
 * window choice, /proc/iomem claims, topology decisions on a fake sysfs tree,
 * and host bridge HDM decoder programming on fake component registers. */
#include <errno.h>
#include <fcntl.h>
#include <linux/pci_regs.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "tap.h"
#include "cxl/cxl_regs.h"
#include "hw/hw_vfio.h"

#define G VCXL_SZ_256M

/* ---- CEDT builder --------------------------------------------------------- */

struct tb {
	uint8_t b[2048];
	size_t len;
};

static void put(struct tb *t, size_t at, uint64_t v, unsigned n)
{
	for (unsigned i = 0; i < n; i++)
		t->b[at + i] = (uint8_t)(v >> (8 * i));
}

static void tb_init(struct tb *t)
{
	memset(t, 0, sizeof(*t));
	memcpy(t->b, "CEDT", 4);
	t->b[8] = 1; /* revision */
	memcpy(t->b + 10, "VCXLTS", 6);
	t->len = 36;
}

static void tb_fix(struct tb *t)
{
	uint8_t sum = 0;

	put(t, 4, t->len, 4);
	t->b[9] = 0;
	for (size_t i = 0; i < t->len; i++)
		sum = (uint8_t)(sum + t->b[i]);
	t->b[9] = (uint8_t)(0x100 - sum);
}

static size_t tb_chbs(struct tb *t, uint32_t uid, uint32_t ver, uint64_t base, uint64_t len)
{
	size_t at = t->len;

	t->b[at] = 0;
	put(t, at + 2, 32, 2);
	put(t, at + 4, uid, 4);
	put(t, at + 8, ver, 4);
	put(t, at + 16, base, 8);
	put(t, at + 24, len, 8);
	t->len += 32;
	return at;
}

static size_t tb_cfmws(struct tb *t, uint64_t base, uint64_t size, uint8_t eniw, uint16_t restr,
		       const uint32_t *tgt, unsigned ntgt)
{
	size_t at = t->len, len = 36 + 4 * ntgt;

	t->b[at] = 1;
	put(t, at + 2, len, 2);
	put(t, at + 8, base, 8);
	put(t, at + 16, size, 8);
	t->b[at + 24] = eniw;
	put(t, at + 32, restr, 2);
	put(t, at + 34, 7, 2); /* QTG */
	for (unsigned i = 0; i < ntgt; i++)
		put(t, at + 36 + 4 * i, tgt[i], 4);
	t->len += len;
	return at;
}

#define R_ALL (VCXL_CFMWS_R_TYPE2 | VCXL_CFMWS_R_TYPE3 | VCXL_CFMWS_R_VOLATILE | VCXL_CFMWS_R_PMEM)

/* The table QEMU builds for one pxb-cxl (uid 12) plus a 2-way window over 12 and 13 */
static void tb_good(struct tb *t, size_t *bounds, unsigned *nb)
{
	const uint32_t one[1] = {12}, two[2] = {12, 13};

	tb_init(t);
	*nb = 0;
	bounds[(*nb)++] = t->len;
	tb_chbs(t, 12, 1, 0x290000000ull, 0x10000);
	bounds[(*nb)++] = t->len;
	tb_chbs(t, 13, 1, 0x290010000ull, 0x10000);
	bounds[(*nb)++] = t->len;
	tb_cfmws(t, 0x4a0000000ull, 16 * G, CXL_HDM_IW_1, R_ALL, one, 1);
	bounds[(*nb)++] = t->len;
	tb_cfmws(t, 0x5a0000000ull, 16 * G, CXL_HDM_IW_2, R_ALL, two, 2);
	bounds[(*nb)++] = t->len;
	tb_fix(t);
}

static void test_parse_good(void)
{
	struct tb t;
	struct vcxl_cedt c;
	char err[160] = "";
	size_t bounds[8];
	unsigned nb;

	tb_good(&t, bounds, &nb);
	is(vcxl_cedt_parse(t.b, t.len, &c, err, sizeof(err)), 0, "good table parses: %s", err);
	is(c.nchbs, 2, "two CHBS");
	is(c.ncfmws, 2, "two CFMWS");
	is(c.chbs[0].uid, 12, "CHBS uid");
	is(c.chbs[0].cxl_version, 1, "CHBS CXL 2.0 host bridge");
	is(c.chbs[0].base, 0x290000000ull, "CHBS base");
	is(c.chbs[0].length, 0x10000, "CHBS length");
	is(c.cfmws[0].base, 0x4a0000000ull, "CFMWS base");
	is(c.cfmws[0].size, 16 * G, "CFMWS size");
	is(c.cfmws[0].ways, 1, "CFMWS 0 is 1-way");
	is(c.cfmws[0].restrictions, R_ALL, "restrictions");
	is(c.cfmws[0].qtg_id, 7, "QTG id");
	is(c.cfmws[1].ways, 2, "CFMWS 1 is 2-way");
	is(c.cfmws[1].target[1], 13, "second target");
	ok(vcxl_cedt_find_chbs(&c, 13) == &c.chbs[1], "find CHBS by uid");
	ok(vcxl_cedt_find_chbs(&c, 14) == NULL, "unknown uid: no CHBS");
	/* the buffer may be longer than the table */
	struct tb big = t;
	big.len += 100;
	is(vcxl_cedt_parse(big.b, big.len, &c, err, sizeof(err)), 0, "trailing bytes ignored");
	/* unknown structure types are skipped by their length */
	struct tb u;
	tb_init(&u);
	u.b[u.len] = 4; /* CSDS */
	put(&u, u.len + 2, 12, 2);
	u.len += 12;
	tb_chbs(&u, 12, 1, 0x290000000ull, 0x10000);
	tb_fix(&u);
	is(vcxl_cedt_parse(u.b, u.len, &c, err, sizeof(err)), 0, "unknown type skipped: %s", err);
	is(c.nother, 1, "one other structure counted");
	is(c.nchbs, 1, "CHBS after it found");
}

static bool is_bound(size_t cut, const size_t *b, unsigned n)
{
	for (unsigned i = 0; i < n; i++)
		if (b[i] == cut)
			return true;
	return false;
}

static void test_parse_truncated(void)
{
	struct tb t;
	struct vcxl_cedt c;
	char err[160];
	size_t bounds[8];
	unsigned nb, bad_ok = 0, good_fail = 0, short_ok = 0, partial = 0;

	tb_good(&t, bounds, &nb);
	/* a buffer shorter than the table length never parses */
	for (size_t cut = 0; cut < t.len; cut++)
		if (vcxl_cedt_parse(t.b, cut, &c, err, sizeof(err)) != -EINVAL)
			short_ok++;
	is(short_ok, 0, "every short buffer is refused");
	/* a table cut anywhere (length and checksum fixed up) parses exactly when
	 * the cut is at a structure boundary */
	for (size_t cut = 36; cut < t.len; cut++) {
		struct tb x = t;
		x.len = cut;
		tb_fix(&x);
		int rc = vcxl_cedt_parse(x.b, x.len, &c, err, sizeof(err));
		if (is_bound(cut, bounds, nb) && rc != 0)
			good_fail++;
		if (!is_bound(cut, bounds, nb) && rc != -EINVAL)
			bad_ok++;
		/* found by fuzz_hw_tables: a structure running past the table
		 * returned the structures before it */
		if (rc && c.nchbs + c.ncfmws + c.nother)
			partial++;
	}
	is(good_fail, 0, "cuts at structure boundaries parse");
	is(bad_ok, 0, "cuts inside a structure are refused");
	is(partial, 0, "a refused table returns no structures");
	ok(vcxl_cedt_parse(NULL, 100, &c, err, sizeof(err)) == -EINVAL, "NULL buffer refused");
}

static void expect_bad(struct tb *t, const char *what, const char *needle)
{
	struct vcxl_cedt c;
	char err[160] = "";

	int rc = vcxl_cedt_parse(t->b, t->len, &c, err, sizeof(err));
	ok(rc == -EINVAL && strstr(err, needle), "%s refused (%d: %s)", what, rc, err);
	is(c.nchbs + c.ncfmws, 0, "%s: nothing returned", what);
}

static void test_parse_bad(void)
{
	const uint32_t one[1] = {12};
	struct tb t;
	size_t at;

	tb_init(&t);
	tb_chbs(&t, 12, 1, 0x290000000ull, 0x10000);
	tb_fix(&t);
	t.b[9] ^= 1;
	expect_bad(&t, "bad checksum", "checksum");

	tb_init(&t);
	memcpy(t.b, "CEDX", 4);
	tb_fix(&t);
	expect_bad(&t, "bad signature", "signature");

	tb_init(&t);
	at = tb_chbs(&t, 12, 1, 0x290000000ull, 0x10000);
	put(&t, at + 2, 0, 2);
	tb_fix(&t);
	expect_bad(&t, "record length 0", "length 0");

	tb_init(&t);
	at = tb_chbs(&t, 12, 1, 0x290000000ull, 0x10000);
	put(&t, at + 2, 33, 2);
	tb_fix(&t);
	expect_bad(&t, "record past the table", "outside the table");

	tb_init(&t);
	at = tb_chbs(&t, 12, 1, 0x290000000ull, 0x10000);
	put(&t, at + 2, 28, 2);
	t.len -= 4;
	tb_fix(&t);
	expect_bad(&t, "short CHBS", "CHBS");

	tb_init(&t);
	tb_chbs(&t, 12, 7, 0x290000000ull, 0x10000);
	tb_fix(&t);
	expect_bad(&t, "unknown CHBS version", "version");

	tb_init(&t);
	tb_chbs(&t, 12, 1, 0x290000000ull, 0x1000);
	tb_fix(&t);
	expect_bad(&t, "CHBS block < 64 KiB", "64 KiB");

	tb_init(&t);
	tb_chbs(&t, 12, 1, 0x290000000ull, 0x10000);
	tb_chbs(&t, 12, 1, 0x290010000ull, 0x10000);
	tb_fix(&t);
	expect_bad(&t, "duplicate uid", "two CHBS");

	/* a 2-way window whose record only has room for one target */
	const uint32_t two[2] = {12, 13};
	tb_init(&t);
	at = tb_cfmws(&t, 0x4a0000000ull, 16 * G, CXL_HDM_IW_2, R_ALL, two, 2);
	put(&t, at + 2, 40, 2);
	t.len -= 4;
	tb_fix(&t);
	expect_bad(&t, "CFMWS too short for its targets", "targets");

	tb_init(&t);
	tb_cfmws(&t, 0x4a0000000ull, 16 * G, 5, R_ALL, one, 1);
	tb_fix(&t);
	expect_bad(&t, "reserved ENIW", "ENIW");

	tb_init(&t);
	tb_cfmws(&t, 0x4a0001000ull, 16 * G, CXL_HDM_IW_1, R_ALL, one, 1);
	tb_fix(&t);
	expect_bad(&t, "unaligned window", "256 MiB");

	tb_init(&t);
	tb_cfmws(&t, 0xfffffffff0000000ull, 2 * G, CXL_HDM_IW_1, R_ALL, one, 1);
	tb_fix(&t);
	expect_bad(&t, "window wrapping 2^64", "256 MiB");

	tb_init(&t);
	tb_cfmws(&t, 0x4a0000000ull, 16 * G, CXL_HDM_IW_1, R_ALL, one, 1);
	tb_cfmws(&t, 0x4a0000000ull + 15 * G, 2 * G, CXL_HDM_IW_1, R_ALL, one, 1);
	tb_fix(&t);
	expect_bad(&t, "overlapping windows", "overlaps");

	tb_init(&t);
	at = tb_cfmws(&t, 0x4a0000000ull, 16 * G, CXL_HDM_IW_1, R_ALL, one, 1);
	t.b[at + 25] = 9;
	tb_fix(&t);
	expect_bad(&t, "unknown interleave arithmetic", "arithmetic");

	tb_init(&t);
	t.b[t.len] = 1;
	put(&t, t.len + 2, 3, 2);
	t.len += 3;
	tb_fix(&t);
	expect_bad(&t, "structure header cut", "structure");
}

static void test_pick(void)
{
	struct tb t;
	struct vcxl_cedt c;
	const struct vcxl_cedt_cfmws *w;
	char err[200] = "";
	size_t bounds[8];
	unsigned nb;

	tb_good(&t, bounds, &nb);
	vcxl_cedt_parse(t.b, t.len, &c, err, sizeof(err));
	is(vcxl_hw_pick_window(&c, 12, VCXL_CFMWS_R_TYPE2 | VCXL_CFMWS_R_VOLATILE, &w, err,
			       sizeof(err)),
	   0, "window for uid 12");
	ok(w == &c.cfmws[0], "the 1-way window, not the interleaved one");
	err[0] = 0;
	is(vcxl_hw_pick_window(&c, 13, 0, &w, err, sizeof(err)), -EOPNOTSUPP,
	   "uid 13 has only an interleaved window: %s", err);
	ok(strstr(err, "interleaved") != NULL, "the reason says interleaved");
	is(vcxl_hw_pick_window(&c, 99, 0, &w, err, sizeof(err)), -ENOENT,
	   "no window for uid 99: %s", err);
	c.cfmws[0].restrictions = VCXL_CFMWS_R_TYPE3 | VCXL_CFMWS_R_VOLATILE;
	is(vcxl_hw_pick_window(&c, 12, VCXL_CFMWS_R_TYPE2, &w, err, sizeof(err)), -ENOSPC,
	   "Type-3-only window refused for a Type-2 device: %s", err);
	ok(w == NULL, "nothing picked");
}

static void test_iomem(void)
{
	static const char io[] = "00000000-00000fff : Reserved\n"
				 "4a0000000-5fffffffff : PCI Bus 0000:00\n"
				 "  4a0000000-49fffffff : bogus reversed\n"
				 "  4a0000000-59fffffff : CXL Window 0\n"
				 "    4a0000000-4afffffff : region0\n"
				 "  900000000-9ffffffff : PCI Bus 0000:0c\n";
	char who[64] = "";

	is(vcxl_hw_iomem_claimed(io, 0x4a0000000ull, 16 * G, who, sizeof(who)), 1,
	   "window equal to CXL Window 0 is claimed");
	ok(!strcmp(who, "CXL Window 0"), "claimant named: '%s'", who);
	is(vcxl_hw_iomem_claimed(io, 0x8a0000000ull, G, who, sizeof(who)), 0,
	   "inside a PCI bus window only: free");
	is(vcxl_hw_iomem_claimed(io, 0x8a0000000ull, 8 * G, who, sizeof(who)), 1,
	   "partly overlapping a bridge window: claimed");
	ok(!strcmp(who, "PCI Bus 0000:0c"), "named: '%s'", who);
	is(vcxl_hw_iomem_claimed(io, 0x6000000000ull, G, who, sizeof(who)), 0,
	   "outside everything: free");
	is(vcxl_hw_iomem_claimed(io, 0x4a0000000ull, 0, who, sizeof(who)), -EINVAL, "size 0");
	is(vcxl_hw_iomem_claimed("garbage\n\n  : x\n", 0x4a0000000ull, G, who, sizeof(who)), 0,
	   "unparsable lines ignored");
	/* found by fuzz_hw_tables: strtoull took a sign ("a--b": end = -b) and
	 * skipped a newline, making one resource of two lines with the name's
	 * length negative (a read past the text) */
	is(vcxl_hw_iomem_claimed("4a0000000--10000000 : x\n", 0x490000000ull, 8 * G, who,
				 sizeof(who)),
	   0, "a signed end is not a number");
	strcpy(who, "unchanged");
	is(vcxl_hw_iomem_claimed("10-\n20 : x", 0x18, 0x10, who, sizeof(who)), 0,
	   "a resource does not span two lines");
	ok(!strcmp(who, "unchanged"), "no claimant written: '%s'", who);
	is(vcxl_hw_iomem_claimed("0x10-0x20 : x\n 10- 20 : y\n", 0x18, 0x10, who, sizeof(who)), 0,
	   "0x prefixes and inner spaces are not /proc/iomem");
	is(vcxl_hw_iomem_claimed("10000000000000010-ffffffffffffffff : x\n", ~0ull - 0xf, 0x10, who,
				 sizeof(who)),
	   0, "a start beyond 64 bits is not a number");
	is(vcxl_hw_iomem_claimed("10-20 : long name\n", 0x18, 0x10, who, 5), 1,
	   "claimed, short name buffer");
	ok(!strcmp(who, "long"), "name truncated to the buffer: '%s'", who);
}

/* ---- fake sysfs ---------------------------------------------------------- */

static char root[256];

static void mkp(const char *rel)
{
	char p[512], *s;

	snprintf(p, sizeof(p), "%s/%s", root, rel);
	for (s = p + strlen(root) + 1; (s = strchr(s, '/')); s++) {
		*s = 0;
		mkdir(p, 0755);
		*s = '/';
	}
	mkdir(p, 0755);
}

static void wfile(const char *rel, const void *data, size_t len)
{
	char p[512];

	snprintf(p, sizeof(p), "%s/%s", root, rel);
	int fd = open(p, O_WRONLY | O_CREAT | O_TRUNC, 0644);
	if (fd >= 0) {
		if (write(fd, data, len) != (ssize_t)len)
			diag("short write %s", p);
		close(fd);
	}
}

static void wstr(const char *rel, const char *s)
{
	wfile(rel, s, strlen(s));
}

static void lnk(const char *target, const char *rel)
{
	char p[512];

	snprintf(p, sizeof(p), "%s/%s", root, rel);
	unlink(p);
	if (symlink(target, p))
		diag("symlink %s failed", p);
}

/* A root port's config space: PCIe capability at 0x40, type, port number */
static void rp_config(const char *rel, unsigned type, uint8_t port)
{
	uint8_t cfg[256] = {0};

	cfg[PCI_STATUS] = PCI_STATUS_CAP_LIST;
	cfg[PCI_CAPABILITY_LIST] = 0x40;
	cfg[0x40] = PCI_CAP_ID_EXP;
	cfg[0x40 + PCI_EXP_FLAGS] = 2 | (uint8_t)(type << 4);
	cfg[0x40 + PCI_EXP_LNKCAP + 3] = port;
	wfile(rel, cfg, sizeof(cfg));
}

#define HB  "devices/pci0000:0c"
#define RP  HB "/0000:0c:00.0"
#define EP  RP "/0000:0d:00.0"
#define BDF "0000:0d:00.0"

static void fake_tree(void)
{
	char cmd[300];

	snprintf(cmd, sizeof(cmd), "rm -rf %s", root);
	if (system(cmd))
		diag("rm failed");
	mkdir(root, 0755);
	mkp(EP);
	mkp("bus/pci/devices");
	mkp("devices/LNXSYSTM:00/ACPI0016:00");
	wstr("devices/LNXSYSTM:00/ACPI0016:00/uid", "12\n");
	wstr("devices/LNXSYSTM:00/ACPI0016:00/hid", "ACPI0016\n");
	lnk("../LNXSYSTM:00/ACPI0016:00", HB "/firmware_node");
	rp_config(RP "/config", PCI_EXP_TYPE_ROOT_PORT, 5);
	lnk("../../../" EP, "bus/pci/devices/" BDF);
}

static int topo(struct vcxl_hw_topo *t, char *err, size_t errlen)
{
	err[0] = 0;
	return vcxl_hw_topo_find(root, BDF, t, err, errlen);
}

static void test_topology(void)
{
	struct vcxl_hw_topo t;
	char err[256];

	snprintf(root, sizeof(root), "/tmp/vcxl-test-sysfs.%d", (int)getpid());
	fake_tree();
	is(topo(&t, err, sizeof(err)), 0, "endpoint -> root port -> host bridge: %s", err);
	is(t.hb_uid, 12, "host bridge _UID from firmware_node/uid");
	is(t.rp_port, 5, "root port number from Link Capabilities");
	ok(!strcmp(t.rp_bdf, "0000:0c:00.0"), "root port %s", t.rp_bdf);
	ok(!strcmp(t.hb_name, "pci0000:0c"), "host bridge %s", t.hb_name);

	/* a second, empty root port is fine (QEMU's pxb-cxl needs one) */
	mkp(HB "/0000:0c:01.0");
	is(topo(&t, err, sizeof(err)), 0, "second empty root port accepted: %s", err);
	mkp(HB "/0000:0c:01.0/0000:0e:00.0");
	is(topo(&t, err, sizeof(err)), -EOPNOTSUPP, "second root port in use refused: %s", err);
	ok(strstr(err, "0000:0c:01.0") && strstr(err, "0000:0e:00.0"), "the reason names both");

	/* a switch between root port and device */
	fake_tree();
	mkp(RP "/0000:0d:00.0/0000:0e:00.0/0000:0f:00.0");
	lnk("../../../" RP "/0000:0d:00.0/0000:0e:00.0/0000:0f:00.0",
	    "bus/pci/devices/0000:0f:00.0");
	is(vcxl_hw_topo_find(root, "0000:0f:00.0", &t, err, sizeof(err)), -EOPNOTSUPP,
	   "device behind a switch refused: %s", err);
	ok(strstr(err, "switch") != NULL, "the reason says switch");

	/* directly on the root bus (no root port) */
	fake_tree();
	mkp(HB "/0000:0c:02.0");
	lnk("../../../" HB "/0000:0c:02.0", "bus/pci/devices/0000:0c:02.0");
	is(vcxl_hw_topo_find(root, "0000:0c:02.0", &t, err, sizeof(err)), -EOPNOTSUPP,
	   "RCiEP refused: %s", err);

	/* the upstream port is not a root port */
	fake_tree();
	rp_config(RP "/config", PCI_EXP_TYPE_DOWNSTREAM, 5);
	is(topo(&t, err, sizeof(err)), -EOPNOTSUPP, "non-root-port parent refused: %s", err);

	/* not a CXL host bridge */
	fake_tree();
	wstr("devices/LNXSYSTM:00/ACPI0016:00/hid", "PNP0A08\n");
	is(topo(&t, err, sizeof(err)), -EOPNOTSUPP, "PNP0A08 host bridge refused: %s", err);

	/* no _UID */
	fake_tree();
	char p[512];
	snprintf(p, sizeof(p), "%s/devices/LNXSYSTM:00/ACPI0016:00/uid", root);
	unlink(p);
	ok(topo(&t, err, sizeof(err)) == -ENOENT && strstr(err, "_UID"), "missing _UID: %s", err);
	wstr("devices/LNXSYSTM:00/ACPI0016:00/uid", "twelve\n");
	is(topo(&t, err, sizeof(err)), -EINVAL, "unparsable _UID: %s", err);

	is(vcxl_hw_topo_find(root, "0000:0d:00", &t, err, sizeof(err)), -EINVAL, "bad BDF: %s",
	   err);
	is(vcxl_hw_topo_find(root, "0000:0d:1f.7", &t, err, sizeof(err)), -ENOENT,
	   "absent device: %s", err);

	char cmd[300];
	snprintf(cmd, sizeof(cmd), "rm -rf %s", root);
	if (system(cmd))
		diag("cleanup failed");
}

/* ---- host bridge HDM on fake registers ------------------------------------- */

#define HDM_AT (CXL_CM_OFFSET + 0x20)

struct fake_hb {
	uint32_t r[0x2000 / 4];
	bool fail_commit, no_commit;
	unsigned writes;
};

static int f_rd(void *o, uint32_t off, uint32_t *v)
{
	struct fake_hb *f = o;

	if (off >= sizeof(f->r) || (off & 3))
		return -EINVAL;
	*v = f->r[off / 4];
	return 0;
}

/* A decoder commits when Commit goes 0 -> 1 and decommits when it clears */
static int f_wr(void *o, uint32_t off, uint32_t v)
{
	struct fake_hb *f = o;

	if (off >= sizeof(f->r) || (off & 3))
		return -EINVAL;
	f->writes++;
	if (off >= HDM_AT + 0x10 && (off - HDM_AT - 0x10) % 0x20 == 0x10) {
		v &= ~(CXL_HDM_DEC_CTRL_COMMITTED | CXL_HDM_DEC_CTRL_COMMIT_ERR);
		if ((v & CXL_HDM_DEC_CTRL_COMMIT) && !f->no_commit)
			v |= f->fail_commit ? CXL_HDM_DEC_CTRL_COMMIT_ERR
					    : CXL_HDM_DEC_CTRL_COMMITTED;
	}
	f->r[off / 4] = v;
	return 0;
}

static void fake_hb_init(struct fake_hb *f, bool with_hdm)
{
	memset(f, 0, sizeof(*f));
	/* CXL r3.1 8.2.4: array header (ID 1, 1 entry), HDM at CM + 0x20 */
	f->r[CXL_CM_OFFSET / 4] = CXL_CM_CAP_ID_ARRAY | (1u << 16) | (1u << 20) | (1u << 24);
	if (with_hdm) {
		f->r[CXL_CM_OFFSET / 4 + 1] = CXL_CM_CAP_ID_HDM | (3u << 16) | (0x20u << 20);
		f->r[HDM_AT / 4] = 1 | (1u << 4); /* 2 decoders, 1 target */
	}
}

#define DREG(f, reg) ((f)->r[(HDM_AT + (reg)) / 4])

static void test_hostbridge(void)
{
	struct fake_hb f;
	struct vcxl_hw_hb hb;
	struct vcxl_hw_regs regs = {.read32 = f_rd, .write32 = f_wr, .opaque = &f};
	char err[200] = "";
	const uint64_t base = 0x4a0000000ull, size = 16 * G;

	fake_hb_init(&f, true);
	is(vcxl_hw_hb_init(&hb, &regs, err, sizeof(err)), 0, "HDM capability found: %s", err);
	is(hb.hdm_off, HDM_AT, "at CM + 0x20");
	is(hb.hdm_count, 2, "two decoders");
	is(vcxl_hw_hb_commit(&hb, base, size, 5, false, err, sizeof(err)), 0, "commit: %s", err);
	is(hb.decoder, 0, "decoder 0 used");
	is(DREG(&f, CXL_HDM_DEC_BASE_LO(0)), (uint32_t)base, "base low");
	is(DREG(&f, CXL_HDM_DEC_BASE_HI(0)), base >> 32, "base high");
	is(DREG(&f, CXL_HDM_DEC_SIZE_HI(0)), size >> 32, "size high");
	is(DREG(&f, CXL_HDM_DEC_TL_LO(0)), 5, "target list: root port 5");
	uint32_t ctrl = DREG(&f, CXL_HDM_DEC_CTRL(0));
	ok(ctrl & CXL_HDM_DEC_CTRL_COMMITTED, "Committed");
	is(VCXL_FIELD_GET(CXL_HDM_DEC_CTRL_IW, ctrl), 0, "1 way");
	ok(!(ctrl & CXL_HDM_DEC_CTRL_HOSTONLY), "device-coherent target type");
	ok(f.r[(HDM_AT + CXL_HDM_GLOBAL_CTRL) / 4] & CXL_HDM_GCTRL_ENABLE, "HDM Decoder Enable");
	uint64_t b, s;
	uint32_t c, tl;
	is(vcxl_hw_hb_read_decoder(&hb, 0, &b, &s, &c, &tl), 0, "read back");
	ok(b == base && s == size && tl == 5, "read back matches");
	is(vcxl_hw_hb_commit(&hb, base, size, 5, false, err, sizeof(err)), -EBUSY,
	   "second commit refused");
	vcxl_hw_hb_decommit(&hb);
	ok(!(DREG(&f, CXL_HDM_DEC_CTRL(0)) & CXL_HDM_DEC_CTRL_COMMITTED), "decommitted");
	is(DREG(&f, CXL_HDM_DEC_SIZE_HI(0)) | DREG(&f, CXL_HDM_DEC_BASE_LO(0)), 0,
	   "base and size cleared");
	ok(!(f.r[(HDM_AT + CXL_HDM_GLOBAL_CTRL) / 4] & CXL_HDM_GCTRL_ENABLE),
	   "enable restored off");

	/* Error Not Committed: reported, everything undone */
	fake_hb_init(&f, true);
	f.fail_commit = true;
	vcxl_hw_hb_init(&hb, &regs, err, sizeof(err));
	is(vcxl_hw_hb_commit(&hb, base, size, 5, true, err, sizeof(err)), -EIO, "commit error: %s",
	   err);
	ok(hb.decoder < 0 && !(f.r[(HDM_AT + CXL_HDM_GLOBAL_CTRL) / 4] & CXL_HDM_GCTRL_ENABLE) &&
	       !DREG(&f, CXL_HDM_DEC_BASE_LO(0)),
	   "nothing left behind");
	f.fail_commit = false;
	f.no_commit = true;
	is(vcxl_hw_hb_commit(&hb, base, size, 5, true, err, sizeof(err)), -ETIMEDOUT,
	   "no answer: timeout: %s", err);

	/* firmware already committed exactly this: used as is, never decommitted */
	fake_hb_init(&f, true);
	f.r[(HDM_AT + CXL_HDM_DEC_BASE_LO(0)) / 4] = (uint32_t)base;
	f.r[(HDM_AT + CXL_HDM_DEC_BASE_HI(0)) / 4] = base >> 32;
	f.r[(HDM_AT + CXL_HDM_DEC_SIZE_HI(0)) / 4] = size >> 32;
	f.r[(HDM_AT + CXL_HDM_DEC_TL_LO(0)) / 4] = 5;
	f.r[(HDM_AT + CXL_HDM_DEC_CTRL(0)) / 4] = CXL_HDM_DEC_CTRL_COMMITTED;
	vcxl_hw_hb_init(&hb, &regs, err, sizeof(err));
	unsigned w0 = f.writes;
	is(vcxl_hw_hb_commit(&hb, base, size, 5, false, err, sizeof(err)), 0,
	   "firmware decoder reused");
	is(f.writes, w0, "no register written");
	vcxl_hw_hb_decommit(&hb);
	ok(f.r[(HDM_AT + CXL_HDM_DEC_CTRL(0)) / 4] & CXL_HDM_DEC_CTRL_COMMITTED,
	   "firmware decoder left committed");
	/* ... but a firmware decoder over part of the range is a conflict */
	is(vcxl_hw_hb_commit(&hb, base + G, G, 5, false, err, sizeof(err)), -EBUSY,
	   "overlap with a committed decoder: %s", err);

	/* Lock On Commit found set is not kept (the decoder is ours to decommit);
	 * a port number with bit 7 set lands whole in the Target List */
	fake_hb_init(&f, true);
	f.r[(HDM_AT + CXL_HDM_DEC_CTRL(0)) / 4] = CXL_HDM_DEC_CTRL_LOCK_ON_COMMIT;
	vcxl_hw_hb_init(&hb, &regs, err, sizeof(err));
	is(vcxl_hw_hb_commit(&hb, base, size, 0x85, false, err, sizeof(err)), 0, "commit: %s", err);
	is(DREG(&f, CXL_HDM_DEC_TL_LO(0)), 0x85, "target list: port 0x85 as is");
	ok(!(DREG(&f, CXL_HDM_DEC_CTRL(0)) & CXL_HDM_DEC_CTRL_LOCK_ON_COMMIT),
	   "Lock On Commit not set");
	vcxl_hw_hb_decommit(&hb);
	is(DREG(&f, CXL_HDM_DEC_TL_LO(0)) | DREG(&f, CXL_HDM_DEC_CTRL(0)), 0,
	   "decommit clears Control and the target list");

	/* a reserved decoder-count encoding is refused */
	fake_hb_init(&f, true);
	f.r[HDM_AT / 4] = 0xf;
	is(vcxl_hw_hb_init(&hb, &regs, err, sizeof(err)), -ENODEV, "bad decoder count: %s", err);
	is(hb.hdm_off, 0, "no HDM capability kept");

	/* pass-through host bridge: no HDM capability, nothing to program */
	fake_hb_init(&f, false);
	is(vcxl_hw_hb_init(&hb, &regs, err, sizeof(err)), 0, "no HDM capability is fine");
	is(hb.hdm_off, 0, "pass-through");
	w0 = f.writes;
	is(vcxl_hw_hb_commit(&hb, base, size, 5, false, err, sizeof(err)), 0, "commit: no-op");
	is(f.writes, w0, "no register written");

	/* no capability array at all */
	memset(&f, 0, sizeof(f));
	ok(vcxl_hw_hb_init(&hb, &regs, err, sizeof(err)) < 0, "no array header refused: %s", err);
}

int main(void)
{
	test_parse_good();
	test_parse_truncated();
	test_parse_bad();
	test_pick();
	test_iomem();
	test_topology();
	test_hostbridge();
	return tap_done();
}
