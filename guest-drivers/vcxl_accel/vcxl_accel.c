// SPDX-License-Identifier: GPL-2.0
/*
 * vcxl_accel: a Linux driver for vcxl's CXL Type-2 accelerator model
 * (8086:0d94) on the kernel's Type-2 API, the way a vendor's driver meets a
 * vfio-cxl device in a VM:
 *
 *   probe   CXL device state (devm_cxl_dev_state_create), component registers
 *           (cxl_pci_setup_regs), Memory_Active, capacity (cxl_dpa_setup on
 *           7.2), then devm_cxl_probe_mem(): memdev, endpoint port, and the
 *           region the VM's firmware committed, returned as an HPA range
 *   jobs    FILL and COPY in device memory through the doorbell in BAR2,
 *           completion by MSI-X; user space drives them through
 *           /dev/vcxl_accelN (vcxl_accel_uapi.h) and maps the region there
 *   reset   an FLR while bound: jobs are held off, one in flight is aborted
 *           (the device drops it), the region stays (CXL r3.1 9.5: an FLR
 *           does not touch the HDM decoders)
 *   remove  devm undoes the rest: the region is detached from the endpoint,
 *           the decoders stay as firmware committed them (locked)
 *
 * See README.md in this directory.
 */
#include <linux/cdev.h>
#include <linux/completion.h>
#include <linux/delay.h>
#include <linux/fs.h>
#include <linux/idr.h>
#include <linux/interrupt.h>
#include <linux/io.h>
#include <linux/io-64-nonatomic-lo-hi.h>
#include <linux/ktime.h>
#include <linux/miscdevice.h>
#include <linux/mm.h>
#include <linux/module.h>
#include <linux/mutex.h>
#include <linux/pci.h>
#include <linux/range.h>
#include <linux/uaccess.h>

#include <cxl/cxl.h>
/* not in include/cxl/ on 7.2: see README.md, "Building" */
#include "cxlmem.h"
#include "cxlpci.h"

#include "vcxl_accel_uapi.h"

#define VCXL_ACCEL_VENDOR 0x8086
#define VCXL_ACCEL_DEVICE 0x0d94

/*
 * The model's job engine in BAR2 (vcxl's src/model/model.h, "Accelerator
 * control registers"): one job at a time; GO latches the JOB_* registers.
 */
#define ACCEL_BAR	      2
#define ACCEL_REG_ID	      0x00
#define ACCEL_ID_VALUE	      0x4c584356u /* "VCXL" */
#define ACCEL_REG_JOB_OP      0x08
#define ACCEL_OP_FILL	      1
#define ACCEL_OP_COPY	      2
#define ACCEL_REG_JOB_FLAGS   0x0c
#define ACCEL_JOBF_IRQ	      BIT(2)
#define ACCEL_REG_JOB_SRC     0x10 /* 64-bit: DPA */
#define ACCEL_REG_JOB_DST     0x18
#define ACCEL_REG_JOB_LEN     0x20
#define ACCEL_REG_JOB_PATTERN 0x28
#define ACCEL_REG_DOORBELL    0x30
#define ACCEL_DOORBELL_GO     BIT(0)
#define ACCEL_REG_STATUS      0x34
#define ACCEL_STATUS_BUSY     BIT(0)
#define ACCEL_STATUS_DONE     BIT(1) /* RW1C */
#define ACCEL_STATUS_ERROR    BIT(2) /* RW1C */
#define ACCEL_REG_JOB_VECTOR  0x38
#define ACCEL_REG_JOBS_DONE   0x3c
/* the engine's DPA window: host-owned, the device memory this function owns */
#define ACCEL_REG_DPA_WIN_BASE 0x40

#define ACCEL_JOB_VECTOR     0
#define ACCEL_JOB_TIMEOUT_MS 60000
/* CXL r3.1 8.1.3.8.2: Memory_Active within the DVSEC's timeout, at most 256 s */
#define ACCEL_ACTIVE_TIMEOUT_MS 256000

struct vcxl_accel {
	struct cxl_dev_state cxlds; /* first: devm_cxl_dev_state_create() */
	struct pci_dev *pdev;
	void __iomem *regs;
	struct cxl_memdev *cxlmd;
	struct range hpa;
	void *mem; /* the region, mapped write-back */
	u64 engine_dpa;
	int irq;

	struct mutex job_lock; /* one job at a time; held across a reset */
	struct completion job_done;
	bool resetting;
	atomic64_t irqs;
	atomic64_t resets;

	int id;
	char name[24];
	struct miscdevice misc;
};

static DEFINE_IDA(vcxl_accel_ida);

static irqreturn_t vcxl_accel_irq(int irq, void *data)
{
	struct vcxl_accel *a = data;

	atomic64_inc(&a->irqs);
	complete(&a->job_done);
	return IRQ_HANDLED;
}

/*
 * CXL r3.1 8.1.3.8.2: wait for Memory_Info_Valid, then Memory_Active, on
 * DVSEC range 1. The core's cxl_await_media_ready() also reads the memory
 * device status register, which a Type-2 device without a mailbox lacks.
 */
static int vcxl_accel_await_active(struct vcxl_accel *a, u64 *size)
{
	struct pci_dev *pdev = a->pdev;
	int d = a->cxlds.cxl_dvsec;
	unsigned long end = jiffies + msecs_to_jiffies(ACCEL_ACTIVE_TIMEOUT_MS);
	u32 lo, hi;

	for (;;) {
		if (pci_read_config_dword(pdev, d + PCI_DVSEC_CXL_RANGE_SIZE_LOW(0), &lo))
			return -ENXIO;
		if ((lo & PCI_DVSEC_CXL_MEM_INFO_VALID) && (lo & PCI_DVSEC_CXL_MEM_ACTIVE))
			break;
		if (time_after(jiffies, end)) {
			pci_err(pdev, "memory not active (DVSEC range 1 size low %#x)\n", lo);
			return -ETIMEDOUT;
		}
		msleep(20);
	}
	if (pci_read_config_dword(pdev, d + PCI_DVSEC_CXL_RANGE_SIZE_HIGH(0), &hi))
		return -ENXIO;
	*size = ((u64)hi << 32) | (lo & PCI_DVSEC_CXL_MEM_SIZE_LOW);
	return 0;
}

/*
 * The device's capacity as one volatile partition. This is the one place the
 * kernel's API changes: 7.2 has cxl_dpa_setup() and struct cxl_dpa_info
 * (drivers/cxl/cxlmem.h); 7.3 adds cxl_set_capacity() in include/cxl/cxl.h.
 */
static int vcxl_accel_set_capacity(struct vcxl_accel *a, u64 size)
{
	struct cxl_dpa_info info = {
	    .size = size,
	    .part[0] =
		{
		    .range = {.start = 0, .end = size - 1},
		    .mode = CXL_PARTMODE_RAM,
		},
	    .nr_partitions = 1,
	};

	return cxl_dpa_setup(&a->cxlds, &info);
}

static void vcxl_accel_free_vectors(void *pdev)
{
	pci_free_irq_vectors(pdev);
}

static int vcxl_accel_setup_irq(struct vcxl_accel *a)
{
	struct pci_dev *pdev = a->pdev;
	int rc;

	rc = pci_alloc_irq_vectors(pdev, 1, 1, PCI_IRQ_MSIX);
	if (rc < 0)
		return rc;
	rc = devm_add_action_or_reset(&pdev->dev, vcxl_accel_free_vectors, pdev);
	if (rc)
		return rc;
	a->irq = pci_irq_vector(pdev, ACCEL_JOB_VECTOR);
	return devm_request_irq(&pdev->dev, a->irq, vcxl_accel_irq, 0, a->name, a);
}

/* A range of the region, as DPA for the engine. */
static bool vcxl_accel_in_region(struct vcxl_accel *a, u64 off, u64 len)
{
	u64 size = range_len(&a->hpa);

	return len && len <= size && off <= size - len;
}

static int vcxl_accel_run(struct vcxl_accel *a, u32 op, struct vcxl_accel_job *j)
{
	unsigned long tmo = msecs_to_jiffies(j->timeout_ms ?: ACCEL_JOB_TIMEOUT_MS);
	void __iomem *r = a->regs;
	ktime_t t0;
	u32 st;
	int rc;

	if (!vcxl_accel_in_region(a, j->dst, j->len) ||
	    (op == ACCEL_OP_COPY && !vcxl_accel_in_region(a, j->src, j->len)))
		return -EINVAL;

	rc = mutex_lock_interruptible(&a->job_lock);
	if (rc)
		return rc;
	if (a->resetting) {
		rc = -EAGAIN;
		goto out;
	}
	writel(ACCEL_STATUS_DONE | ACCEL_STATUS_ERROR, r + ACCEL_REG_STATUS);
	writel(op, r + ACCEL_REG_JOB_OP);
	writel(ACCEL_JOBF_IRQ, r + ACCEL_REG_JOB_FLAGS);
	lo_hi_writeq(op == ACCEL_OP_COPY ? a->engine_dpa + j->src : 0, r + ACCEL_REG_JOB_SRC);
	lo_hi_writeq(a->engine_dpa + j->dst, r + ACCEL_REG_JOB_DST);
	lo_hi_writeq(j->len, r + ACCEL_REG_JOB_LEN);
	lo_hi_writeq(j->pattern, r + ACCEL_REG_JOB_PATTERN);
	writel(ACCEL_JOB_VECTOR, r + ACCEL_REG_JOB_VECTOR);
	reinit_completion(&a->job_done);
	t0 = ktime_get();
	writel(ACCEL_DOORBELL_GO, r + ACCEL_REG_DOORBELL);

	if (!wait_for_completion_timeout(&a->job_done, tmo)) {
		st = readl(r + ACCEL_REG_STATUS);
		pci_warn(a->pdev, "job %u: no interrupt in %u ms (status %#x)\n", op,
			 jiffies_to_msecs(tmo), st);
		rc = -ETIMEDOUT;
		goto out;
	}
	j->irq_latency_us = ktime_us_delta(ktime_get(), t0);
	if (a->resetting) {
		rc = -EINTR;
		goto out;
	}
	st = readl(r + ACCEL_REG_STATUS);
	if (st & ACCEL_STATUS_ERROR)
		rc = -EIO;
	else if (!(st & ACCEL_STATUS_DONE) || (st & ACCEL_STATUS_BUSY))
		rc = -EPROTO;
	writel(st & (ACCEL_STATUS_DONE | ACCEL_STATUS_ERROR), r + ACCEL_REG_STATUS);
out:
	mutex_unlock(&a->job_lock);
	return rc;
}

static struct vcxl_accel *vcxl_accel_from_file(struct file *f)
{
	return container_of(f->private_data, struct vcxl_accel, misc);
}

static long vcxl_accel_ioctl(struct file *f, unsigned int cmd, unsigned long arg)
{
	struct vcxl_accel *a = vcxl_accel_from_file(f);
	void __user *up = (void __user *)arg;
	struct vcxl_accel_job j;
	int rc;

	switch (cmd) {
	case VCXL_ACCEL_INFO: {
		struct vcxl_accel_info i = {
		    .hpa_start = a->hpa.start,
		    .hpa_size = range_len(&a->hpa),
		    .engine_dpa = a->engine_dpa,
		    .jobs_done = readl(a->regs + ACCEL_REG_JOBS_DONE),
		    .irqs = atomic64_read(&a->irqs),
		    .resets = atomic64_read(&a->resets),
		};
		return copy_to_user(up, &i, sizeof(i)) ? -EFAULT : 0;
	}
	case VCXL_ACCEL_FILL:
	case VCXL_ACCEL_COPY:
		if (copy_from_user(&j, up, sizeof(j)))
			return -EFAULT;
		rc = vcxl_accel_run(a, cmd == VCXL_ACCEL_FILL ? ACCEL_OP_FILL : ACCEL_OP_COPY, &j);
		if (!rc && copy_to_user(up, &j, sizeof(j)))
			return -EFAULT;
		return rc;
	default:
		return -ENOTTY;
	}
}

/* The region itself, write-back cacheable as the kernel maps it. */
static int vcxl_accel_mmap(struct file *f, struct vm_area_struct *vma)
{
	struct vcxl_accel *a = vcxl_accel_from_file(f);
	u64 size = range_len(&a->hpa);
	u64 len = vma->vm_end - vma->vm_start;
	u64 off = (u64)vma->vm_pgoff << PAGE_SHIFT;

	if (off >= size || len > size - off)
		return -EINVAL;
	vm_flags_set(vma, VM_IO | VM_DONTEXPAND | VM_DONTDUMP);
	return remap_pfn_range(vma, vma->vm_start, PHYS_PFN(a->hpa.start + off), len,
			       vma->vm_page_prot);
}

static const struct file_operations vcxl_accel_fops = {
    .owner = THIS_MODULE,
    .unlocked_ioctl = vcxl_accel_ioctl,
    .mmap = vcxl_accel_mmap,
};

static ssize_t region_show(struct device *dev, struct device_attribute *attr, char *buf)
{
	struct vcxl_accel *a = pci_get_drvdata(to_pci_dev(dev));

	return sysfs_emit(buf, "%#llx %#llx %s\n", a->hpa.start, range_len(&a->hpa),
			  dev_name(&a->cxlmd->dev));
}
static DEVICE_ATTR_RO(region);

static ssize_t irqs_show(struct device *dev, struct device_attribute *attr, char *buf)
{
	struct vcxl_accel *a = pci_get_drvdata(to_pci_dev(dev));

	return sysfs_emit(buf, "%lld\n", atomic64_read(&a->irqs));
}
static DEVICE_ATTR_RO(irqs);

static struct attribute *vcxl_accel_attrs[] = {
    &dev_attr_region.attr,
    &dev_attr_irqs.attr,
    NULL,
};
ATTRIBUTE_GROUPS(vcxl_accel);

static void vcxl_accel_misc_deregister(void *misc)
{
	misc_deregister(misc);
}

static void vcxl_accel_ida_free(void *data)
{
	ida_free(&vcxl_accel_ida, (int)(long)data);
}

static int vcxl_accel_probe(struct pci_dev *pdev, const struct pci_device_id *id)
{
	struct device *dev = &pdev->dev;
	struct vcxl_accel *a;
	u64 size;
	u16 dvsec;
	int rc;

	rc = pcim_enable_device(pdev);
	if (rc)
		return rc;
	pci_set_master(pdev);

	/* CXL r3.1 8.1.3: the PCIe DVSEC for CXL Devices */
	dvsec = pci_find_dvsec_capability(pdev, PCI_VENDOR_ID_CXL, PCI_DVSEC_CXL_DEVICE);
	if (!dvsec) {
		pci_err(pdev, "no CXL device DVSEC\n");
		return -ENODEV;
	}
	a = devm_cxl_dev_state_create(dev, CXL_DEVTYPE_DEVMEM, pci_get_dsn(pdev), dvsec,
				      struct vcxl_accel, cxlds, false);
	if (IS_ERR(a))
		return PTR_ERR(a);
	a->pdev = pdev;
	mutex_init(&a->job_lock);
	init_completion(&a->job_done);
	pci_set_drvdata(pdev, a);

	a->id = ida_alloc(&vcxl_accel_ida, GFP_KERNEL);
	if (a->id < 0)
		return a->id;
	rc = devm_add_action_or_reset(dev, vcxl_accel_ida_free, (void *)(long)a->id);
	if (rc)
		return rc;
	snprintf(a->name, sizeof(a->name), "vcxl_accel%d", a->id);

	/* The component registers through the CXL core (Register Locator, BIR 0) */
	rc = cxl_pci_setup_regs(pdev, CXL_REGLOC_RBI_COMPONENT, &a->cxlds.reg_map);
	if (rc) {
		pci_err(pdev, "component registers: %d\n", rc);
		return rc;
	}

	a->regs = pcim_iomap_region(pdev, ACCEL_BAR, KBUILD_MODNAME);
	if (IS_ERR(a->regs))
		return PTR_ERR(a->regs);
	if (readl(a->regs + ACCEL_REG_ID) != ACCEL_ID_VALUE) {
		pci_err(pdev, "BAR%d is not the vcxl job engine\n", ACCEL_BAR);
		return -ENODEV;
	}

	rc = vcxl_accel_await_active(a, &size);
	if (rc)
		return rc;
	a->cxlds.media_ready = true;

	rc = vcxl_accel_set_capacity(a, size);
	if (rc) {
		pci_err(pdev, "capacity %#llx: %d\n", size, rc);
		return rc;
	}

	/* memdev, endpoint port, and the region firmware committed */
	a->cxlmd = devm_cxl_probe_mem(&a->cxlds, &a->hpa);
	if (IS_ERR(a->cxlmd)) {
		pci_err(pdev, "no CXL region: %ld (firmware-committed decoders only)\n",
			PTR_ERR(a->cxlmd));
		return PTR_ERR(a->cxlmd);
	}
	if (!range_len(&a->hpa) || a->hpa.end == (u64)-1) {
		pci_err(pdev, "%s: no committed region\n", dev_name(&a->cxlmd->dev));
		return -ENXIO;
	}

	a->mem = devm_memremap(dev, a->hpa.start, range_len(&a->hpa), MEMREMAP_WB);
	if (IS_ERR(a->mem))
		return PTR_ERR(a->mem);
	a->engine_dpa = lo_hi_readq(a->regs + ACCEL_REG_DPA_WIN_BASE);

	rc = vcxl_accel_setup_irq(a);
	if (rc)
		return rc;

	a->misc = (struct miscdevice){
	    .minor = MISC_DYNAMIC_MINOR,
	    .name = a->name,
	    .fops = &vcxl_accel_fops,
	    .parent = dev,
	    .mode = 0600,
	};
	rc = misc_register(&a->misc);
	if (rc)
		return rc;
	rc = devm_add_action_or_reset(dev, vcxl_accel_misc_deregister, &a->misc);
	if (rc)
		return rc;

	pci_info(pdev, "%s: region %pra, engine DPA %#llx, /dev/%s\n", dev_name(&a->cxlmd->dev),
		 &a->hpa, a->engine_dpa, a->name);
	return 0;
}

/*
 * PCIe r6.0 6.6.2: a Function Level Reset while bound (sysfs reset). The
 * device aborts a job in flight without an interrupt; its waiter is woken
 * with -EINTR, and no job starts until the function is back. The CXL state
 * (DVSEC, HDM decoders, so the region) survives an FLR: CXL r3.1 9.5.
 */
static void vcxl_accel_reset_prepare(struct pci_dev *pdev)
{
	struct vcxl_accel *a = pci_get_drvdata(pdev);

	a->resetting = true;
	complete(&a->job_done);
	mutex_lock(&a->job_lock);
}

static void vcxl_accel_reset_done(struct pci_dev *pdev)
{
	struct vcxl_accel *a = pci_get_drvdata(pdev);

	/* the job engine is at its reset values; nothing else to restore */
	a->resetting = false;
	atomic64_inc(&a->resets);
	mutex_unlock(&a->job_lock);
}

static const struct pci_error_handlers vcxl_accel_err_handlers = {
    .reset_prepare = vcxl_accel_reset_prepare,
    .reset_done = vcxl_accel_reset_done,
};

static const struct pci_device_id vcxl_accel_ids[] = {
    {PCI_DEVICE(VCXL_ACCEL_VENDOR, VCXL_ACCEL_DEVICE)}, {}};
MODULE_DEVICE_TABLE(pci, vcxl_accel_ids);

static struct pci_driver vcxl_accel_driver = {
    .name = KBUILD_MODNAME,
    .id_table = vcxl_accel_ids,
    .probe = vcxl_accel_probe,
    .err_handler = &vcxl_accel_err_handlers,
    .dev_groups = vcxl_accel_groups,
};
module_pci_driver(vcxl_accel_driver);

MODULE_DESCRIPTION("vcxl accelerator model: a CXL Type-2 driver on the kernel's Type-2 API");
MODULE_LICENSE("GPL");
MODULE_IMPORT_NS("CXL");
