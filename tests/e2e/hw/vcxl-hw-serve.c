// SPDX-License-Identifier: BSD-3-Clause
/*
 * vcxl-hw-serve: the e2e-hw test driver. What `vcxl-server --backend vfio
 * --device BDF` will do once the server has that option: open the device
 * bound to vfio-pci (src/hw/ VFIO backend), set up the host window (CEDT,
 * host bridge decoder), build the vfio-cxl view (vcxl_vdev_create: the host
 * core commits the endpoint decoder through the backend) and serve it over
 * vfio-user with the server library, so the unchanged `vcxl` CLI can talk to
 * it. Prints the physical decoders (endpoint through VFIO BAR0, host bridge
 * through /dev/mem) as "HW ..." lines before serving and after tear-down.
 *
 *   vcxl-hw-serve --device BDF [--socket PATH] [--iommu auto|group|iommufd]
 *                 [--region-size SIZE] [--region-dax /dev/daxX.Y]
 */
#include <errno.h>
#include <getopt.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "host/host_cxl.h"
#include "hw/hw_vfio.h"
#include "server/server.h"
#include "vfio-cxl/vfio_cxl.h"

struct ep_regs {
	struct vcxl_backend *be;
	unsigned bar, count;
	uint64_t hdm; /* HDM capability offset in the BAR */
};

/* Endpoint decoder n straight from the device (no host core state involved) */
static void print_ep(const char *tag, const struct ep_regs *e)
{
	for (unsigned n = 0; n < e->count; n++) {
		uint64_t r[7];
		for (unsigned i = 0; i < 7; i++)
			e->be->ops->bar_read(e->be->dev, e->bar,
					     e->hdm + CXL_HDM_DEC_BASE_LO(n) + 4 * i, 4, &r[i]);
		uint64_t base = (r[1] << 32) | (r[0] & CXL_HDM_DEC_LO_MASK);
		uint64_t size = (r[3] << 32) | (r[2] & CXL_HDM_DEC_LO_MASK);
		uint64_t skip = (r[6] << 32) | (r[5] & CXL_HDM_DEC_LO_MASK);
		printf("HW %s decoder%u base=0x%llx size=0x%llx skip=0x%llx ctrl=0x%08llx "
		       "committed=%d\n",
		       tag, n, (unsigned long long)base, (unsigned long long)size,
		       (unsigned long long)skip, (unsigned long long)r[4],
		       !!(r[4] & CXL_HDM_DEC_CTRL_COMMITTED));
	}
	uint64_t g = 0;
	e->be->ops->bar_read(e->be->dev, e->bar, e->hdm + CXL_HDM_GLOBAL_CTRL, 4, &g);
	printf("HW %s global_ctrl=0x%08llx\n", tag, (unsigned long long)g);
}

static void print_hb(const char *tag, struct vcxl_hw_window *w)
{
	if (!w)
		return;
	if (!w->hb.hdm_off) {
		printf("HW %s passthrough (no HDM decoder capability)\n", tag);
		return;
	}
	for (unsigned n = 0; n < w->hb.hdm_count && n < 2; n++) {
		uint64_t base, size;
		uint32_t ctrl, tl;
		if (vcxl_hw_hb_read_decoder(&w->hb, n, &base, &size, &ctrl, &tl))
			continue;
		printf(
		    "HW %s decoder%u base=0x%llx size=0x%llx ctrl=0x%08x tl=0x%08x committed=%d\n",
		    tag, n, (unsigned long long)base, (unsigned long long)size, ctrl, tl,
		    !!(ctrl & CXL_HDM_DEC_CTRL_COMMITTED));
	}
}

static int usage(void)
{
	fprintf(stderr, "usage: vcxl-hw-serve --device BDF [--socket PATH] [--iommu "
			"auto|group|iommufd] [--region-size SIZE] [--region-dax DEV]\n");
	return 2;
}

int main(int argc, char **argv)
{
	static const struct option lo[] = {
	    {"device", required_argument, NULL, 'D'},
	    {"socket", required_argument, NULL, 's'},
	    {"iommu", required_argument, NULL, 'i'},
	    {"region-size", required_argument, NULL, 'r'},
	    {"region-dax", required_argument, NULL, 'x'},
	    {NULL, 0, NULL, 0},
	};
	struct vcxl_hw_vfio_cfg hc = {0};
	const char *sock = "/tmp/vcxl.sock";
	uint64_t region_size = 0;
	char err[256] = "";
	int ch, rc;

	while ((ch = getopt_long(argc, argv, "", lo, NULL)) != -1) {
		switch (ch) {
		case 'D':
			hc.bdf = optarg;
			break;
		case 's':
			sock = optarg;
			break;
		case 'i':
			hc.iommu = !strcmp(optarg, "group")	? VCXL_HW_IOMMU_GROUP
				   : !strcmp(optarg, "iommufd") ? VCXL_HW_IOMMU_IOMMUFD
								: VCXL_HW_IOMMU_AUTO;
			break;
		case 'r':
			if (vcxl_parse_size(optarg, &region_size))
				return usage();
			break;
		case 'x':
			hc.region_dax = optarg;
			break;
		default:
			return usage();
		}
	}
	if (!hc.bdf)
		return usage();
	vcxl_log_set_level(VCXL_LOG_INFO);
	sigset_t set;
	sigemptyset(&set);
	sigaddset(&set, SIGTERM);
	sigaddset(&set, SIGINT);
	sigprocmask(SIG_BLOCK, &set, NULL);
	signal(SIGPIPE, SIG_IGN);

	struct vcxl_hw_vfio *v;
	if ((rc = vcxl_hw_vfio_open(&hc, &v, err, sizeof(err)))) {
		printf("HW FAIL open: %s\n", err);
		return 1;
	}
	struct vcxl_backend *be = vcxl_hw_vfio_backend(v);
	printf("HW open %s iommu=%s\n", be->ops->name(be->dev), vcxl_hw_vfio_iommu_name(v));

	struct vcxl_host host;
	struct vcxl_hw_window *win = NULL;
	vcxl_host_init(&host);
	if (!hc.region_dax) {
		if ((rc = vcxl_hw_window_setup(v, NULL, &host, &win, err, sizeof(err)))) {
			printf("HW FAIL window: %s\n", err);
			vcxl_hw_vfio_close(v);
			return 1;
		}
		printf("HW window base=0x%llx size=0x%llx restrictions=0x%x hb=%s uid=%u rp=%s "
		       "port=%u chbs=0x%llx hb_decoders=%u\n",
		       (unsigned long long)win->win.base, (unsigned long long)win->win.size,
		       win->win.restrictions, win->topo.hb_name, win->topo.hb_uid, win->topo.rp_bdf,
		       win->topo.rp_port, (unsigned long long)win->chbs.base, win->hb.hdm_count);
		print_hb("hb-committed", win);
	}

	/* on_disconnect keep: zeroing 256 MiB of emulated CXL memory per disconnect
	 * takes minutes in a TCG guest */
	struct vcxl_vdev_cfg vc = {.region_size = region_size,
				   .host = &host,
				   .prefer_firmware = hc.region_dax != NULL,
				   .on_disconnect = VCXL_ON_DISCONNECT_KEEP};
	struct vcxl_vdev *vdev;
	if ((rc = vcxl_vdev_create(be, &vc, &vdev, err, sizeof(err)))) {
		printf("HW FAIL vdev: %s\n", err);
		vcxl_hw_window_teardown(win);
		vcxl_host_fini(&host);
		vcxl_hw_vfio_close(v);
		return 1;
	}
	struct vcxl_cxl_dev *d = vcxl_vdev_host_dev(vdev);
	const struct vcxl_region *r = vcxl_vdev_region(vdev);
	struct ep_regs ep = {
	    .be = be, .bar = d->comp_bar, .count = d->hdm_count, .hdm = d->comp_off + d->hdm_off};
	printf("HW region hpa=0x%llx size=0x%llx dpa=0x%llx decoder=%u firmware=%d note=%s\n",
	       (unsigned long long)r->hpa, (unsigned long long)r->size, (unsigned long long)r->dpa,
	       r->decoder, r->firmware, d->note);
	print_ep("ep-live", &ep);
	printf("HW verify=%d\n", vcxl_region_verify(r));

	struct vcxl_loop *loop = NULL;
	rc = vcxl_loop_create(&loop);
	if (!rc)
		rc = vcxl_loop_add_device(loop, sock, &vcxl_vdev_ops, vdev, NULL);
	if (rc) {
		printf("HW FAIL serve %s: %s\n", sock, strerror(-rc));
	} else {
		printf("HW READY %s\n", sock);
		fflush(stdout);
		rc = vcxl_loop_run(loop);
	}
	vcxl_loop_destroy(loop);
	print_ep("ep-before-teardown", &ep);
	vcxl_vdev_destroy(vdev);
	print_ep("ep-after", &ep);
	if (win) {
		vcxl_hw_hb_decommit(&win->hb);
		print_hb("hb-after", win);
	}
	vcxl_hw_window_teardown(win);
	vcxl_host_fini(&host);
	vcxl_hw_vfio_close(v);
	printf("HW DONE rc=%d\n", rc);
	return rc ? 1 : 0;
}
