// SPDX-License-Identifier: BSD-3-Clause
/* Isolation: the vfio-cxl core hands a client a BAR's or the region's fd only
 * when the backend says it reaches exactly that (backend.h fd_unshareable);
 * otherwise the BAR or region is served by messages, unless the operator
 * trusts the client (vcxl_vdev_cfg.trust_client) and the backend allows even
 * that (*never false). */
#include <linux/vfio.h>
#include <string.h>

#include "tap.h"
#include "model/model.h"
#include "vfio-cxl/vfio_cxl.h"

static struct vcxl_backend *inner;
static struct vcxl_backend_ops ops;
static struct vcxl_backend outer;
static bool says_never;

static const char *refuse_all(void *dev, int fd, bool *never)
{
	*never = says_never;
	return "test backend: every fd reaches too far";
}

/* flags of BAR0 and region 9, and whether each came with an fd */
static void shape(bool trust, uint32_t *bar_flags, int *bar_fd, uint32_t *reg_flags, int *reg_fd)
{
	struct vcxl_vdev_cfg vc = {.trust_client = trust};
	struct vcxl_vregion_info ri;
	struct vcxl_vdev *v = NULL;
	char err[256] = "";

	*bar_flags = *reg_flags = 0;
	*bar_fd = *reg_fd = -1;
	if (!ok(vcxl_vdev_create(&outer, &vc, &v, err, sizeof(err)) == 0, "vdev: %s", err))
		return;
	vcxl_vdev_ops.region_info(v, VFIO_PCI_BAR0_REGION_INDEX, &ri);
	*bar_flags = ri.flags;
	*bar_fd = ri.fd;
	vcxl_vdev_ops.region_info(v, VCXL_VDEV_CXL_REGION, &ri);
	*reg_flags = ri.flags;
	*reg_fd = ri.fd;
	uint8_t buf[16] = "through messages", back[16];
	ok(vcxl_vdev_ops.region_write(v, VCXL_VDEV_CXL_REGION, 0x1000, buf, sizeof(buf)) == 0 &&
	       vcxl_vdev_ops.region_read(v, VCXL_VDEV_CXL_REGION, 0x1000, back, sizeof(back)) ==
		   0 &&
	       !memcmp(buf, back, sizeof(buf)),
	   "the region is served by messages either way");
	vcxl_vdev_destroy(v);
}

int main(void)
{
	struct vcxl_model_cfg mc = {.mem_size = 512ull << 20};
	struct vcxl_model *m = NULL;
	uint32_t bf, rf;
	int bfd, rfd;
	const uint32_t MM = VFIO_REGION_INFO_FLAG_MMAP;

	ok(vcxl_model_create(&mc, &m) == 0, "model");
	inner = vcxl_model_backend(m);
	ops = *inner->ops;
	outer.ops = &ops;
	outer.dev = inner->dev;

	shape(false, &bf, &bfd, &rf, &rfd);
	ok((bf & MM) && bfd >= 0 && (rf & MM) && rfd >= 0,
	   "the model's sealed memfds go out: BAR0 and region mmappable");

	ops.fd_unshareable = refuse_all;
	shape(false, &bf, &bfd, &rf, &rfd);
	ok(!(bf & MM) && bfd < 0, "an fd the backend refuses: BAR0 by messages, no fd");
	ok(!(rf & MM) && rfd < 0 && (rf & VFIO_REGION_INFO_FLAG_READ) &&
	       (rf & VFIO_REGION_INFO_FLAG_WRITE),
	   "... region READ/WRITE only, no fd");
	shape(true, &bf, &bfd, &rf, &rfd);
	ok((bf & MM) && bfd >= 0 && (rf & MM) && rfd >= 0, "--trust-client: handed out anyway");

	says_never = true;
	shape(true, &bf, &bfd, &rf, &rfd);
	ok(!(bf & MM) && bfd < 0 && !(rf & MM) && rfd < 0,
	   "an fd the backend never allows (/dev/mem): not even with --trust-client");

	ops.fd_unshareable = NULL;
	shape(false, &bf, &bfd, &rf, &rfd);
	ok(!(bf & MM) && !(rf & MM), "a backend that does not say: no fd goes out");

	vcxl_model_destroy(m);
	return done();
}
