// SPDX-License-Identifier: BSD-3-Clause
/*
 * Opening a device bound to vfio-pci: the iommufd/cdev interface where the
 * kernel has it (/dev/iommu + /dev/vfio/devices/vfioX), else the group /
 * container interface (/dev/vfio/N + /dev/vfio/vfio, Type1 IOMMU). Then the
 * device's regions and IRQs (VFIO_DEVICE_GET_REGION_INFO / GET_IRQ_INFO) and
 * its raw config space in sysfs for the extended capabilities vfio-pci hides.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <linux/vfio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <unistd.h>

#include "iommufd_uapi.h"
#include "vfio_priv.h"

struct open_ctx {
	const struct vcxl_hw_vfio_cfg *cfg;
	char devdir[PATH_MAX]; /* /sys/bus/pci/devices/BDF */
	const char *dev_root;
};

/* The driver the device is bound to must be vfio-pci (or a vfio variant). */
static int check_driver(struct open_ctx *o, char *err, size_t errlen)
{
	char link[PATH_MAX + 8], tgt[PATH_MAX];

	snprintf(link, sizeof(link), "%s/driver", o->devdir);
	ssize_t n = readlink(link, tgt, sizeof(tgt) - 1);
	if (n < 0)
		return hw_err(
		    err, errlen, -ENODEV,
		    "%s is bound to no driver: bind it to vfio-pci first (docs/hardware.md)",
		    o->cfg->bdf);
	tgt[n] = 0;
	const char *drv = strrchr(tgt, '/') ? strrchr(tgt, '/') + 1 : tgt;
	if (!strstr(drv, "vfio"))
		return hw_err(err, errlen, -EBUSY, "%s is bound to %s, not vfio-pci", o->cfg->bdf,
			      drv);
	return 0;
}

/* /sys/bus/pci/devices/BDF/vfio-dev/vfioX -> "vfioX" */
static int cdev_name(struct open_ctx *o, char *name, size_t len)
{
	char dir[PATH_MAX + 16];
	struct dirent *e;
	int rc = -ENOENT;

	snprintf(dir, sizeof(dir), "%s/vfio-dev", o->devdir);
	DIR *d = opendir(dir);
	if (!d)
		return -ENOENT;
	while ((e = readdir(d)))
		if (!strncmp(e->d_name, "vfio", 4) && strlen(e->d_name) < len) {
			memcpy(name, e->d_name, strlen(e->d_name) + 1);
			rc = 0;
			break;
		}
	closedir(d);
	return rc;
}

/* iommufd: bind the cdev, allocate an IOAS, attach the device to it */
static int open_iommufd(struct vcxl_hw_vfio *v, struct open_ctx *o, char *err, size_t errlen)
{
	char name[64], path[PATH_MAX + 80];
	int rc = cdev_name(o, name, sizeof(name));

	if (rc)
		return hw_err(err, errlen, -ENOENT, "%s: no VFIO cdev (kernel without iommufd)",
			      v->bdf);
	snprintf(path, sizeof(path), "%s/iommu", o->dev_root);
	v->iommufd = open(path, O_RDWR | O_CLOEXEC);
	if (v->iommufd < 0)
		return hw_err(err, errlen, -errno, "%s: %s", path, strerror(errno));
	snprintf(path, sizeof(path), "%s/vfio/devices/%s", o->dev_root, name);
	v->dev_fd = open(path, O_RDWR | O_CLOEXEC);
	if (v->dev_fd < 0)
		return hw_err(err, errlen, -errno, "%s: %s", path, strerror(errno));
	struct vfio_device_bind_iommufd bind = {.argsz = sizeof(bind), .iommufd = v->iommufd};
	if (ioctl(v->dev_fd, VFIO_DEVICE_BIND_IOMMUFD, &bind))
		return hw_err(err, errlen, -errno, "VFIO_DEVICE_BIND_IOMMUFD: %s", strerror(errno));
	struct iommu_ioas_alloc a = {.size = sizeof(a)};
	if (ioctl(v->iommufd, IOMMU_IOAS_ALLOC, &a))
		return hw_err(err, errlen, -errno, "IOMMU_IOAS_ALLOC: %s", strerror(errno));
	v->ioas_id = a.out_ioas_id;
	struct vfio_device_attach_iommufd_pt at = {.argsz = sizeof(at), .pt_id = v->ioas_id};
	if (ioctl(v->dev_fd, VFIO_DEVICE_ATTACH_IOMMUFD_PT, &at))
		return hw_err(err, errlen, -errno, "VFIO_DEVICE_ATTACH_IOMMUFD_PT: %s",
			      strerror(errno));
	v->iommu_name = "iommufd";
	return 0;
}

/* Legacy: container + group + Type1 IOMMU, then the device fd */
static int open_group(struct vcxl_hw_vfio *v, struct open_ctx *o, char *err, size_t errlen)
{
	char link[PATH_MAX + 16], tgt[PATH_MAX], path[PATH_MAX + 80];

	snprintf(link, sizeof(link), "%s/iommu_group", o->devdir);
	ssize_t n = readlink(link, tgt, sizeof(tgt) - 1);
	if (n < 0)
		return hw_err(err, errlen, -ENODEV,
			      "%s has no IOMMU group: enable the IOMMU (intel_iommu=on / "
			      "amd_iommu=on)",
			      v->bdf);
	tgt[n] = 0;
	const char *grp = strrchr(tgt, '/') ? strrchr(tgt, '/') + 1 : tgt;
	snprintf(path, sizeof(path), "%s/vfio/vfio", o->dev_root);
	v->container_fd = open(path, O_RDWR | O_CLOEXEC);
	if (v->container_fd < 0)
		return hw_err(err, errlen, -errno, "%s: %s", path, strerror(errno));
	if (ioctl(v->container_fd, VFIO_GET_API_VERSION) != VFIO_API_VERSION)
		return hw_err(err, errlen, -EPROTO, "VFIO API version mismatch");
	snprintf(path, sizeof(path), "%s/vfio/%s", o->dev_root, grp);
	v->group_fd = open(path, O_RDWR | O_CLOEXEC);
	if (v->group_fd < 0)
		return hw_err(err, errlen, -errno, "%s: %s%s", path, strerror(errno),
			      errno == EBUSY ? " (in use by another process?)" : "");
	struct vfio_group_status st = {.argsz = sizeof(st)};
	if (ioctl(v->group_fd, VFIO_GROUP_GET_STATUS, &st))
		return hw_err(err, errlen, -errno, "VFIO_GROUP_GET_STATUS: %s", strerror(errno));
	if (!(st.flags & VFIO_GROUP_FLAGS_VIABLE))
		return hw_err(err, errlen, -EBUSY,
			      "IOMMU group %s is not viable: bind every device in it to vfio-pci",
			      grp);
	if (ioctl(v->group_fd, VFIO_GROUP_SET_CONTAINER, &v->container_fd))
		return hw_err(err, errlen, -errno, "VFIO_GROUP_SET_CONTAINER: %s", strerror(errno));
	int type = ioctl(v->container_fd, VFIO_CHECK_EXTENSION, VFIO_TYPE1v2_IOMMU) > 0
		       ? VFIO_TYPE1v2_IOMMU
		       : VFIO_TYPE1_IOMMU;
	if (ioctl(v->container_fd, VFIO_SET_IOMMU, type))
		return hw_err(err, errlen, -errno, "VFIO_SET_IOMMU(Type1): %s", strerror(errno));
	v->dev_fd = ioctl(v->group_fd, VFIO_GROUP_GET_DEVICE_FD, v->bdf);
	if (v->dev_fd < 0)
		return hw_err(err, errlen, -errno, "VFIO_GROUP_GET_DEVICE_FD(%s): %s", v->bdf,
			      strerror(errno));
	v->iommu_name = "group";
	return 0;
}

static void close_iommu(struct vcxl_hw_vfio *v)
{
	int *fds[] = {&v->dev_fd, &v->group_fd, &v->container_fd, &v->iommufd};

	for (unsigned i = 0; i < 4; i++) {
		if (*fds[i] >= 0)
			close(*fds[i]);
		*fds[i] = -1;
	}
}

/* VFIO_DEVICE_GET_REGION_INFO, with the capability chain when the kernel has one */
static int region_info(struct vcxl_hw_vfio *v, unsigned idx, char *err, size_t errlen)
{
	size_t sz = sizeof(struct vfio_region_info);
	struct vfio_region_info *ri = NULL;

	for (int pass = 0; pass < 2; pass++) {
		struct vfio_region_info *n = realloc(ri, sz);
		if (!n) {
			free(ri);
			return hw_err(err, errlen, -ENOMEM, "out of memory");
		}
		ri = n;
		memset(ri, 0, sz);
		ri->argsz = (uint32_t)sz;
		ri->index = idx;
		if (ioctl(v->dev_fd, VFIO_DEVICE_GET_REGION_INFO, ri)) {
			int e = errno;
			free(ri);
			if (e == EINVAL)
				return 0; /* region does not exist (e.g. VGA) */
			return hw_err(err, errlen, -e, "GET_REGION_INFO %u: %s", idx, strerror(e));
		}
		if (ri->argsz <= sz)
			break;
		sz = ri->argsz;
	}
	int rc = vcxl_hw_region_decode(ri, sz, &v->region[idx]);
	free(ri);
	if (rc)
		return hw_err(err, errlen, rc, "region %u: malformed capability chain", idx);
	return 0;
}

static int device_info(struct vcxl_hw_vfio *v, char *err, size_t errlen)
{
	struct vfio_device_info di = {.argsz = sizeof(di)};
	int rc;

	if (ioctl(v->dev_fd, VFIO_DEVICE_GET_INFO, &di))
		return hw_err(err, errlen, -errno, "VFIO_DEVICE_GET_INFO: %s", strerror(errno));
	if (!(di.flags & VFIO_DEVICE_FLAGS_PCI) || di.num_regions <= VFIO_PCI_CONFIG_REGION_INDEX)
		return hw_err(err, errlen, -ENODEV, "%s is not a VFIO PCI device", v->bdf);
	unsigned nreg = di.num_regions < VCXL_HW_NUM_REGIONS ? di.num_regions : VCXL_HW_NUM_REGIONS;
	for (unsigned i = 0; i < nreg; i++)
		if ((rc = region_info(v, i, err, errlen)))
			return rc;
	for (unsigned i = 0; i < di.num_irqs && i < VCXL_HW_NUM_IRQS; i++) {
		struct vfio_irq_info ii = {.argsz = sizeof(ii), .index = i};
		if (ioctl(v->dev_fd, VFIO_DEVICE_GET_IRQ_INFO, &ii) == 0)
			v->irq_count[i] = ii.count < HW_MAX_VECTORS ? ii.count : HW_MAX_VECTORS;
	}
	return 0;
}

/* The raw config space: root reads all 4 KiB (others only the first 64 bytes) */
static int open_config(struct vcxl_hw_vfio *v, struct open_ctx *o, char *err, size_t errlen)
{
	char path[PATH_MAX + 8];
	uint8_t b[4];

	snprintf(path, sizeof(path), "%s/config", o->devdir);
	v->cfg_fd = open(path, O_RDWR | O_CLOEXEC);
	if (v->cfg_fd < 0)
		return hw_err(err, errlen, -errno,
			      "%s: %s (the CXL capabilities are read from here: run as root)", path,
			      strerror(errno));
	if (pread(v->cfg_fd, b, 4, 0x100) != 4)
		return hw_err(err, errlen, -EACCES,
			      "%s: extended config space unreadable (need CAP_SYS_ADMIN)", path);
	return 0;
}

int vcxl_hw_vfio_open(const struct vcxl_hw_vfio_cfg *cfg, struct vcxl_hw_vfio **out, char *err,
		      size_t errlen)
{
	struct open_ctx o = {.cfg = cfg};
	struct stat st;
	char why[256] = "";
	int rc;

	*out = NULL;
	if (!cfg || !cfg->bdf)
		return hw_err(err, errlen, -EINVAL, "no device (--device BDF)");
	if (!hw_is_bdf(cfg->bdf))
		return hw_err(err, errlen, -EINVAL, "'%s' is not a PCI address DDDD:BB:DD.F",
			      cfg->bdf);
	snprintf(o.devdir, sizeof(o.devdir), "%s/bus/pci/devices/%s",
		 hw_or(cfg->sysfs_root, "/sys"), cfg->bdf);
	if (stat(o.devdir, &st))
		return hw_err(err, errlen, -errno, "%s: %s", o.devdir, strerror(errno));
	struct vcxl_hw_vfio *v = calloc(1, sizeof(*v));
	if (!v)
		return hw_err(err, errlen, -ENOMEM, "out of memory");
	v->dev_fd = v->cfg_fd = v->container_fd = v->group_fd = v->iommufd = -1;
	v->mem_fd = v->dax_fd = -1;
	snprintf(v->bdf, sizeof(v->bdf), "%s", cfg->bdf);
	snprintf(v->devmem, sizeof(v->devmem), "%s", hw_or(cfg->devmem, "/dev/mem"));
	o.dev_root = hw_or(cfg->dev_root, "/dev");
	if ((rc = check_driver(&o, err, errlen)))
		goto fail;
	switch (cfg->iommu) {
	case VCXL_HW_IOMMU_IOMMUFD:
		rc = open_iommufd(v, &o, err, errlen);
		break;
	case VCXL_HW_IOMMU_GROUP:
		rc = open_group(v, &o, err, errlen);
		break;
	case VCXL_HW_IOMMU_AUTO:
	default:
		rc = open_iommufd(v, &o, why, sizeof(why));
		if (rc) {
			close_iommu(v);
			rc = open_group(v, &o, err, errlen);
		}
		break;
	}
	if (rc || (rc = device_info(v, err, errlen)) || (rc = open_config(v, &o, err, errlen)))
		goto fail;
	uint64_t id = 0;
	snprintf(v->name, sizeof(v->name), "vfio %s", v->bdf);
	if ((rc = hw_vfio_init(v, err, errlen)))
		goto fail;
	if (!v->be.ops->cfg_read(v, 0, 4, &id))
		snprintf(v->name, sizeof(v->name), "vfio %s %04x:%04x (%s)", v->bdf,
			 (unsigned)(id & 0xffff), (unsigned)(id >> 16), v->iommu_name);
	if (cfg->region_dax && (rc = vcxl_hw_vfio_attach_dax(v, cfg->region_dax, err, errlen)))
		goto fail;
	*out = v;
	return 0;
fail:
	hw_vfio_free(v);
	return rc;
}

void vcxl_hw_vfio_close(struct vcxl_hw_vfio *v)
{
	if (v)
		hw_vfio_free(v);
}

struct vcxl_backend *vcxl_hw_vfio_backend(struct vcxl_hw_vfio *v)
{
	return &v->be;
}

const char *vcxl_hw_vfio_bdf(const struct vcxl_hw_vfio *v)
{
	return v->bdf;
}

const char *vcxl_hw_vfio_iommu_name(const struct vcxl_hw_vfio *v)
{
	return v->iommu_name ? v->iommu_name : "none";
}

void vcxl_hw_vfio_set_window(struct vcxl_hw_vfio *v, uint64_t base, uint64_t size)
{
	v->win_set = size != 0;
	v->win_base = base;
	v->win_size = size;
}

/* Device-DAX: /sys/dev/char/MAJ:MIN/{size,resource} give what it maps */
int vcxl_hw_vfio_attach_dax(struct vcxl_hw_vfio *v, const char *path, char *err, size_t errlen)
{
	char attr[PATH_MAX], val[64], *end;
	struct stat st;
	uint64_t size, base;

	int fd = open(path, O_RDWR | O_CLOEXEC);
	if (fd < 0)
		return hw_err(err, errlen, -errno, "%s: %s", path, strerror(errno));
	if (fstat(fd, &st) || !S_ISCHR(st.st_mode)) {
		close(fd);
		return hw_err(err, errlen, -EINVAL, "%s is not a device-DAX character device",
			      path);
	}
	const char *names[2] = {"size", "resource"};
	uint64_t *vals[2] = {&size, &base};
	for (unsigned i = 0; i < 2; i++) {
		snprintf(attr, sizeof(attr), "/sys/dev/char/%u:%u/%s", major(st.st_rdev),
			 minor(st.st_rdev), names[i]);
		int rc = hw_read_attr(attr, val, sizeof(val));
		errno = 0;
		*vals[i] = rc ? 0 : strtoull(val, &end, 0);
		if (rc || errno || end == val) {
			close(fd);
			return hw_err(err, errlen, rc ? rc : -EINVAL, "%s: cannot read %s", path,
				      attr);
		}
	}
	if (!size) {
		close(fd);
		return hw_err(err, errlen, -EINVAL, "%s has size 0", path);
	}
	if (v->dax_fd >= 0)
		close(v->dax_fd);
	v->dax_fd = fd;
	v->dax_base = base;
	v->dax_size = size;
	return 0;
}
