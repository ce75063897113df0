// SPDX-License-Identifier: BSD-3-Clause
/* The device's MSI-X table is host-owned: guest writes dropped, vectors armed by the host
 * (again after a config-space FLR). */
#include <linux/pci_regs.h>
#include <string.h>

#include "irq_log.h"
#include "tap.h"
#include "model/model.h"
#include "vfio-cxl/vfio_cxl.h"
#include "vdev_util.h"

static uint32_t dev_vctrl(struct vcxl_backend *be, unsigned n)
{
	uint64_t x = 0;
	be->ops->bar_read(
	    be->dev, 2,
	    VCXL_MODEL_MSIX_TABLE + n * PCI_MSIX_ENTRY_SIZE + PCI_MSIX_ENTRY_VECTOR_CTRL, 4, &x);
	return (uint32_t)x;
}

static void run_fill_job(struct vcxl_vdev *v, unsigned vector)
{
	g_wr(v, 2, ACCEL_REG_JOB_OP, 4, ACCEL_OP_FILL);
	g_wr(v, 2, ACCEL_REG_JOB_FLAGS, 4, ACCEL_JOBF_IRQ);
	g_wr(v, 2, ACCEL_REG_JOB_DST, 8, 0);
	g_wr(v, 2, ACCEL_REG_JOB_LEN, 8, 4096);
	g_wr(v, 2, ACCEL_REG_JOB_PATTERN, 8, 0x1122334455667788ull);
	g_wr(v, 2, ACCEL_REG_JOB_VECTOR, 4, vector);
	g_wr(v, 2, ACCEL_REG_DOORBELL, 4, ACCEL_DOORBELL_GO);
}

int main(void)
{
	struct vcxl_model_cfg mc = {0};
	struct vcxl_model *m = NULL;
	struct vcxl_vdev *v = NULL;
	struct vcxl_vdev_cfg vc = {0};
	struct irq_log log = {0};
	char err[256] = "";

	ok(vcxl_model_create(&mc, &m) == 0, "model");
	struct vcxl_backend *be = vcxl_model_backend(m);
	ok(vcxl_vdev_create(be, &vc, &v, err, sizeof(err)) == 0, "vdev: %s", err);
	vcxl_vdev_ops.set_irq_handler(v, on_irq, &log);

	/* MSI-X enable through the guest's config space, as QEMU forwards it */
	uint32_t cap = gcfg(v, PCI_CAPABILITY_LIST, 1), msix = 0;
	for (int i = 0; cap && i < 48; i++, cap = gcfg(v, cap + 1, 1))
		if (gcfg(v, cap, 1) == PCI_CAP_ID_MSIX) {
			msix = cap;
			break;
		}
	ok(msix != 0, "guest finds the MSI-X capability");
	gcfg_w(v, msix + PCI_MSIX_FLAGS, 2, PCI_MSIX_FLAGS_ENABLE);

	ok(dev_vctrl(be, 1) & PCI_MSIX_ENTRY_CTRL_MASKBIT, "device vector 1 starts masked");
	g_wr(v, 2, VCXL_MODEL_MSIX_TABLE + PCI_MSIX_ENTRY_SIZE + PCI_MSIX_ENTRY_VECTOR_CTRL, 4, 0);
	ok(dev_vctrl(be, 1) & PCI_MSIX_ENTRY_CTRL_MASKBIT,
	   "a guest write to the device's MSI-X table is dropped");
	g_wr(v, 2, VCXL_MODEL_MSIX_TABLE + PCI_MSIX_ENTRY_SIZE + PCI_MSIX_ENTRY_LOWER_ADDR, 4,
	     0xfee00000u);
	uint64_t addr = 0;
	be->ops->bar_read(be->dev, 2, VCXL_MODEL_MSIX_TABLE + PCI_MSIX_ENTRY_SIZE, 4, &addr);
	is(addr, 0, "... and so is a write to the message address");

	run_fill_job(v, 1);
	is(log.count, 0, "job on a masked vector: no interrupt yet");
	ok(vcxl_vdev_ops.irq_arm(v, VFIO_PCI_MSIX_IRQ_INDEX, 1, true) == 0, "host arms vector 1");
	ok(!(dev_vctrl(be, 1) & PCI_MSIX_ENTRY_CTRL_MASKBIT), "device vector 1 unmasked");
	is(log.count, 1, "the pending interrupt is delivered on arm");
	is(log.last, 1, "on vector 1");
	run_fill_job(v, 1);
	is(log.count, 2, "an armed vector delivers at once");
	ok(vcxl_vdev_ops.irq_arm(v, VFIO_PCI_MSIX_IRQ_INDEX, 1, false) == 0,
	   "host disarms vector 1");
	ok(dev_vctrl(be, 1) & PCI_MSIX_ENTRY_CTRL_MASKBIT, "device vector 1 masked again");
	ok(vcxl_vdev_ops.irq_arm(v, VFIO_PCI_MSIX_IRQ_INDEX, VCXL_MODEL_MSIX_VECTORS, true) != 0,
	   "arming a vector beyond the table is refused");
	ok(vcxl_vdev_ops.irq_arm(v, VFIO_PCI_INTX_IRQ_INDEX, 0, true) != 0, "INTx cannot be armed");
	/* a config-space FLR masks the device's table; the client's eventfd (VMM
	 * state) is still there, so the vector must work after MSI-X re-enable */
	ok(vcxl_vdev_ops.irq_arm(v, VFIO_PCI_MSIX_IRQ_INDEX, 1, true) == 0,
	   "host arms vector 1 again");
	uint32_t pcie = 0;
	cap = gcfg(v, PCI_CAPABILITY_LIST, 1);
	for (int i = 0; cap && i < 48; i++, cap = gcfg(v, cap + 1, 1))
		if (gcfg(v, cap, 1) == PCI_CAP_ID_EXP) {
			pcie = cap;
			break;
		}
	ok(pcie != 0, "guest finds the PCIe capability");
	gcfg_w(v, pcie + PCI_EXP_DEVCTL, 2,
	       gcfg(v, pcie + PCI_EXP_DEVCTL, 2) | PCI_EXP_DEVCTL_BCR_FLR);
	is(gcfg(v, msix + PCI_MSIX_FLAGS, 2) & PCI_MSIX_FLAGS_ENABLE, 0, "FLR disabled MSI-X");
	gcfg_w(v, msix + PCI_MSIX_FLAGS, 2, PCI_MSIX_FLAGS_ENABLE);
	ok(!(dev_vctrl(be, 1) & PCI_MSIX_ENTRY_CTRL_MASKBIT), "vector 1 armed again after the FLR");
	unsigned before = log.count;
	run_fill_job(v, 1);
	is(log.count, before + 1, "the job interrupt fires after FLR + MSI-X re-enable");
	vcxl_vdev_ops.irq_arm(v, VFIO_PCI_MSIX_IRQ_INDEX, 1, false);

	vcxl_vdev_ops.irq_arm(v, VFIO_PCI_MSIX_IRQ_INDEX, 2, true);
	vcxl_vdev_ops.client_gone(v);
	ok(dev_vctrl(be, 2) & PCI_MSIX_ENTRY_CTRL_MASKBIT, "client gone masks every vector");

	vcxl_vdev_destroy(v);
	vcxl_model_destroy(m);
	return done();
}
