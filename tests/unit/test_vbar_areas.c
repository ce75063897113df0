// SPDX-License-Identifier: BSD-3-Clause
/* A backend that maps only parts of a BAR (VFIO sparse mmap): the guest's
 * mmappable areas are the backend's areas minus the trapped ranges. */
#include <linux/vfio.h>
#include <string.h>

#include "tap.h"
#include "model/model.h"
#include "vfio-cxl/vfio_cxl.h"

static struct vcxl_backend *inner;
static struct vcxl_backend_ops ops;
static struct vcxl_backend outer;

/* four small areas spread over BAR0: five gaps, plus the component block */
static const struct vcxl_bar_area four[4] = {
    {.offset = 0x300000, .size = 0x10000},
    {.offset = 0x20000, .size = 0x10000},
    {.offset = 0x200000, .size = 0x20000},
    {.offset = 0x100000, .size = 0x10000},
};
static bool use_four;

/* BAR0 as a kernel with a sparse-mmap cap would report it. */
static int areas_bar_info(void *dev, unsigned bar, struct vcxl_bar_info *bi)
{
	int rc = inner->ops->bar_info(inner->dev, bar, bi);
	if (rc || bar != 0)
		return rc;
	if (use_four) {
		bi->nr_areas = 4;
		bi->area_fd = bi->fd;
		bi->area_fd_offset = bi->fd_offset;
		bi->fd = -1;
		memcpy(bi->area, four, sizeof(four));
		return 0;
	}
	bi->nr_areas = 2;
	bi->area_fd = bi->fd;
	bi->area_fd_offset = bi->fd_offset;
	bi->fd = -1;
	bi->area[0] = (struct vcxl_bar_area){.offset = 0x300000, .size = 0x100000};
	bi->area[1] = (struct vcxl_bar_area){.offset = 0x20000, .size = 0x20000};
	return 0;
}

int main(void)
{
	struct vcxl_model_cfg mc = {.comp_at = VCXL_COMP_AT_START};
	struct vcxl_model *m = NULL;
	struct vcxl_vdev *v = NULL;
	struct vcxl_vdev_cfg vc = {0};
	struct vcxl_vregion_info ri;
	char err[256] = "";

	ok(vcxl_model_create(&mc, &m) == 0, "model");
	inner = vcxl_model_backend(m);
	ops = *inner->ops;
	ops.bar_info = areas_bar_info;
	outer.ops = &ops;
	outer.dev = inner->dev;
	ok(vcxl_vdev_create(&outer, &vc, &v, err, sizeof(err)) == 0, "vdev: %s", err);
	memset(&ri, 0, sizeof(ri));
	ok(vcxl_vdev_ops.region_info(v, VFIO_PCI_BAR0_REGION_INDEX, &ri) == 0, "BAR0 info");
	ok(ri.flags & VFIO_REGION_INFO_FLAG_MMAP, "BAR0 still mmappable through the areas' fd");
	ok(ri.fd >= 0, "an fd is given");
	is(ri.nr_sparse, 2, "two areas");
	is(ri.sparse[0].offset, 0x20000, "first area: the backend's lower area");
	is(ri.sparse[0].size, 0x20000, "... its size");
	is(ri.sparse[1].offset, 0x300000, "second area");
	is(ri.sparse[1].size, 0x100000, "... to the end of the BAR");
	int in_comp = 0;
	for (unsigned i = 0; i < ri.nr_sparse; i++)
		if (ri.sparse[i].offset < 0x10000)
			in_comp = 1;
	ok(!in_comp, "the component block (at the start) is in no area");
	vcxl_vdev_destroy(v);

	/* Five gaps between four areas, and the block: more trapped ranges than
	 * the three vbar.c used to keep (it dropped the rest silently, leaving
	 * ranges the backend cannot map advertised as mappable). Every
	 * advertised area must lie inside one of the backend's areas. */
	use_four = true;
	ok(vcxl_vdev_create(&outer, &vc, &v, err, sizeof(err)) == 0, "vdev (four areas): %s", err);
	memset(&ri, 0, sizeof(ri));
	ok(vcxl_vdev_ops.region_info(v, VFIO_PCI_BAR0_REGION_INDEX, &ri) == 0, "BAR0 info");
	ok(ri.flags & VFIO_REGION_INFO_FLAG_MMAP, "BAR0 mmappable through the areas");
	is(ri.nr_sparse, 4, "four areas advertised");
	unsigned outside = 0;
	for (unsigned i = 0; i < ri.nr_sparse; i++) {
		bool inside = false;
		for (unsigned k = 0; k < 4; k++)
			inside |= ri.sparse[i].offset >= four[k].offset &&
				  ri.sparse[i].offset + ri.sparse[i].size <=
				      four[k].offset + four[k].size;
		outside += !inside;
	}
	is(outside, 0, "every advertised area lies inside one of the backend's areas");
	vcxl_vdev_destroy(v);
	vcxl_model_destroy(m);
	return done();
}
