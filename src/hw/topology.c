// SPDX-License-Identifier: BSD-3-Clause
/*
 * Where the device sits (sysfs): endpoint -> root port -> host bridge and the
 * host bridge's ACPI companion (_UID, the key into the CEDT), which window
 * serves it, and whether anybody else (a driver) claimed that window.
 */
#include <ctype.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <linux/pci_regs.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "hw_priv.h"

/* "DDDD:BB:DD.F" */
bool hw_is_bdf(const char *s)
{
	unsigned d, b, s2, f;
	char tail;

	return strlen(s) == 12 && sscanf(s, "%4x:%2x:%2x.%1x%c", &d, &b, &s2, &f, &tail) == 4;
}

/* "pciDDDD:BB" */
static bool is_root_bus(const char *s)
{
	unsigned d, b;
	char tail;

	return !strncmp(s, "pci", 3) && sscanf(s + 3, "%4x:%2x%c", &d, &b, &tail) == 2;
}

/* PCIe r6 7.5.3: the root port's PCI Express capability, from its config file */
static int rp_port_number(const char *rpdir, uint8_t *port, char *err, size_t errlen)
{
	char path[PATH_MAX + 8];
	uint8_t cfg[256];

	snprintf(path, sizeof(path), "%s/config", rpdir);
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return hw_err(err, errlen, -errno, "%s: %s", path, strerror(errno));
	ssize_t n = pread(fd, cfg, sizeof(cfg), 0);
	close(fd);
	if (n < 0x40)
		return hw_err(err, errlen, -EIO, "%s: short read (%zd)", path, n);
	unsigned ptr = cfg[PCI_CAPABILITY_LIST] & ~3u;
	for (unsigned guard = 0; ptr >= 0x40 && ptr + 0x10 <= (unsigned)n && guard < 48; guard++) {
		if (cfg[ptr] == PCI_CAP_ID_EXP) {
			unsigned flags =
			    cfg[ptr + PCI_EXP_FLAGS] | (cfg[ptr + PCI_EXP_FLAGS + 1] << 8);
			unsigned type = (flags & PCI_EXP_FLAGS_TYPE) >> 4;
			if (type != PCI_EXP_TYPE_ROOT_PORT)
				return hw_err(err, errlen, -EOPNOTSUPP,
					      "%s: the device's upstream port is not a root port "
					      "(PCIe port type %u)",
					      rpdir, type);
			/* Link Capabilities bits 31:24: Port Number */
			*port = cfg[ptr + PCI_EXP_LNKCAP + 3];
			return 0;
		}
		ptr = cfg[ptr + PCI_CAP_LIST_NEXT] & ~3u;
	}
	return hw_err(err, errlen, -EOPNOTSUPP, "%s: root port without a PCIe capability", rpdir);
}

/* Does a root port directory have a device below it? Returns the first. */
static bool has_child(const char *dir, char *child, size_t len)
{
	DIR *d = opendir(dir);
	struct dirent *e;
	bool found = false;

	if (!d)
		return false;
	while ((e = readdir(d))) {
		if (hw_is_bdf(e->d_name)) {
			snprintf(child, len, "%.15s", e->d_name);
			found = true;
			break;
		}
	}
	closedir(d);
	return found;
}

/* Only one root port of the host bridge may have devices: ours. */
static int check_other_ports(const char *hbdir, const char *rp, char *err, size_t errlen)
{
	DIR *d = opendir(hbdir);
	struct dirent *e;
	int rc = 0;

	if (!d)
		return hw_err(err, errlen, -errno, "%s: %s", hbdir, strerror(errno));
	while ((e = readdir(d)) && !rc) {
		char sub[PATH_MAX + sizeof(e->d_name) + 1], child[64];
		if (!hw_is_bdf(e->d_name) || !strcmp(e->d_name, rp))
			continue;
		snprintf(sub, sizeof(sub), "%s/%s", hbdir, e->d_name);
		if (has_child(sub, child, sizeof(child)))
			rc = hw_err(err, errlen, -EOPNOTSUPP,
				    "host bridge has a second root port in use (%s has %s): "
				    "unsupported",
				    e->d_name, child);
	}
	closedir(d);
	return rc;
}

/* The host bridge's ACPI companion: a CXL host bridge (ACPI0016) and its _UID */
static int hb_uid(const char *hbdir, uint32_t *uid, char *err, size_t errlen)
{
	char path[PATH_MAX + sizeof("/firmware_node/hid")], v[64];
	char *end;

	snprintf(path, sizeof(path), "%s/firmware_node/hid", hbdir);
	if (!hw_read_attr(path, v, sizeof(v)) && strcmp(v, "ACPI0016"))
		return hw_err(err, errlen, -EOPNOTSUPP,
			      "host bridge %s is not a CXL host bridge (ACPI _HID %s)",
			      strrchr(hbdir, '/') + 1, v);
	snprintf(path, sizeof(path), "%s/firmware_node/uid", hbdir);
	int rc = hw_read_attr(path, v, sizeof(v));
	if (rc)
		return hw_err(err, errlen, rc, "host bridge %s has no ACPI _UID (%s: %s)",
			      strrchr(hbdir, '/') + 1, path, strerror(-rc));
	errno = 0;
	unsigned long u = strtoul(v, &end, 0);
	if (errno || end == v || *end || u > UINT32_MAX)
		return hw_err(err, errlen, -EINVAL, "%s: unparsable _UID '%s'", path, v);
	*uid = (uint32_t)u;
	return 0;
}

int vcxl_hw_topo_find(const char *sysfs_root, const char *bdf, struct vcxl_hw_topo *t, char *err,
		      size_t errlen)
{
	char link[PATH_MAX], real[PATH_MAX], hbdir[PATH_MAX], rpdir[PATH_MAX];
	char *comp[32];
	unsigned n = 0;
	int rc;

	memset(t, 0, sizeof(*t));
	if (!bdf || !hw_is_bdf(bdf))
		return hw_err(err, errlen, -EINVAL, "'%s' is not a PCI address DDDD:BB:DD.F",
			      bdf ? bdf : "");
	snprintf(t->bdf, sizeof(t->bdf), "%s", bdf);
	snprintf(link, sizeof(link), "%s/bus/pci/devices/%s", hw_or(sysfs_root, "/sys"), bdf);
	if (!realpath(link, real))
		return hw_err(err, errlen, -errno, "%s: %s", link, strerror(errno));
	/* split the path; the components after pciDDDD:BB are the PCI hierarchy */
	for (char *s = strtok(real, "/"); s && n < 32; s = strtok(NULL, "/"))
		comp[n++] = s;
	int root = -1;
	for (unsigned i = 0; i < n; i++)
		if (is_root_bus(comp[i]))
			root = (int)i;
	if (root < 0 || strcmp(comp[n - 1], bdf))
		return hw_err(err, errlen, -ENODEV, "%s: not under a PCI root bus", link);
	unsigned depth = n - (unsigned)root - 1;
	if (depth < 2)
		return hw_err(err, errlen, -EOPNOTSUPP,
			      "%s sits on the root bus (no root port; RCH/RCiEP): unsupported",
			      bdf);
	if (depth > 2)
		return hw_err(err, errlen, -EOPNOTSUPP,
			      "%s is behind a switch (%u levels below root port %s): unsupported",
			      bdf, depth - 2, comp[root + 1]);
	/* rebuild the host bridge and root port directories */
	size_t at = 0;
	hbdir[0] = 0;
	/* both are prefixes of the resolved path, so they fit; checked all the same */
	for (int i = 0; i <= root && at < sizeof(hbdir); i++)
		at += (size_t)snprintf(hbdir + at, sizeof(hbdir) - at, "/%s", comp[i]);
	if (at >= sizeof(hbdir) ||
	    (size_t)snprintf(rpdir, sizeof(rpdir), "%s/%s", hbdir, comp[root + 1]) >= sizeof(rpdir))
		return hw_err(err, errlen, -ENAMETOOLONG, "%s: sysfs path too long", link);
	snprintf(t->hb_name, sizeof(t->hb_name), "%s", comp[root]);
	snprintf(t->rp_bdf, sizeof(t->rp_bdf), "%s", comp[root + 1]);
	if ((rc = rp_port_number(rpdir, &t->rp_port, err, errlen)) ||
	    (rc = check_other_ports(hbdir, t->rp_bdf, err, errlen)) ||
	    (rc = hb_uid(hbdir, &t->hb_uid, err, errlen)))
		return rc;
	return 0;
}

/* Hex digits only (no sign, 0x prefix or whitespace: strtoull would take
 * those, and skip a newline), at least one, fitting 64 bits. */
static const char *iomem_hex(const char *p, uint64_t *v)
{
	const char *start = p;

	*v = 0;
	for (; isxdigit((unsigned char)*p); p++) {
		unsigned d = isdigit((unsigned char)*p)
				 ? (unsigned)(*p - '0')
				 : (unsigned)(tolower((unsigned char)*p) - 'a' + 10);
		if (*v >> 60)
			return NULL;
		*v = *v << 4 | d;
	}
	return p > start ? p : NULL;
}

/* One /proc/iomem line: "<indent>start-end : name" */
static bool iomem_line(const char *l, uint64_t *s, uint64_t *e, const char **name)
{
	while (*l == ' ')
		l++;
	if (!(l = iomem_hex(l, s)) || *l != '-' || !(l = iomem_hex(l + 1, e)) ||
	    strncmp(l, " : ", 3))
		return false;
	*name = l + 3;
	return *e >= *s;
}

int vcxl_hw_iomem_claimed(const char *iomem, uint64_t base, uint64_t size, char *who, size_t wholen)
{
	uint64_t last = base + size - 1;
	const char *l = iomem;

	if (!iomem || !size || last < base)
		return -EINVAL;
	while (l && *l) {
		const char *nl = strchr(l, '\n'), *name;
		uint64_t s, e;
		if (iomem_line(l, &s, &e, &name) && s <= last && e >= base) {
			bool contains = s <= base && e >= last && (s != base || e != last);
			if (!contains) {
				size_t k = strcspn(name, "\n");
				if (who && wholen) {
					if (k >= wholen)
						k = wholen - 1;
					memcpy(who, name, k);
					who[k] = 0;
				}
				return 1;
			}
		}
		l = nl ? nl + 1 : NULL;
	}
	return 0;
}

int vcxl_hw_pick_window(const struct vcxl_cedt *c, uint32_t uid, uint16_t need,
			const struct vcxl_cedt_cfmws **out, char *err, size_t errlen)
{
	unsigned interleaved = 0, lacking = 0;
	uint16_t lacking_r = 0;

	*out = NULL;
	for (unsigned i = 0; i < c->ncfmws; i++) {
		const struct vcxl_cedt_cfmws *w = &c->cfmws[i];
		bool targets = false;
		for (unsigned k = 0; k < w->ntargets; k++)
			targets |= w->target[k] == uid;
		if (!targets)
			continue;
		if (w->ways != 1) {
			interleaved = w->ways;
			continue;
		}
		if ((w->restrictions & need) != need) {
			lacking++;
			lacking_r = w->restrictions;
			continue;
		}
		*out = w;
		return 0;
	}
	if (lacking)
		return hw_err(err, errlen, -ENOSPC,
			      "the window of host bridge uid %u does not allow this device "
			      "(restrictions 0x%x, need 0x%x)",
			      uid, lacking_r, need);
	if (interleaved)
		return hw_err(err, errlen, -EOPNOTSUPP,
			      "only interleaved windows (%u ways) target host bridge uid %u: "
			      "unsupported",
			      interleaved, uid);
	return hw_err(err, errlen, -ENOENT, "no CEDT window (CFMWS) targets host bridge uid %u",
		      uid);
}
