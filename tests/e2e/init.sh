#!/bin/sh
# SPDX-License-Identifier: BSD-3-Clause
# /init of the e2e guest (busybox ash). Runs the vcxl guest test and powers off.
# Kernel command line knobs:
#   vcxl.test=0|1    run cxl-guest-test (0: only show the PCI devices; default 1)
#   vcxl.cxl=0|1     load the CXL modules (CXL topology boot; default 0)
#   vcxl.vfio=0|1    load vfio-pci (needs intel_iommu=on) for the interrupt step
#   vcxl.args="..."  extra arguments for cxl-guest-test, words joined with ','
# Output sections are framed by "=== NAME ===" lines; the host greps them.
# shellcheck source=tests/e2e/guest/e2e-init.sh
. /lib/e2e-init.sh

TEST=$(opt test 1)
CXL=$(opt cxl 0)
VFIO=$(opt vfio 0)
ARGS=$(opt args "" | tr ',' ' ')

sec "VCXL GUEST START"
uname -r
if [ "$CXL" = 1 ]; then
	for m in cxl_acpi cxl_pci cxl_mem; do
		modprobe "$m" 2>&1 || echo "modprobe $m failed"
	done
fi
if [ "$VFIO" = 1 ]; then
	modprobe vfio_iommu_type1 2>&1
	modprobe vfio-pci 2>&1 || echo "modprobe vfio-pci failed"
fi

sec "lspci -nn"
lspci -nn
sec "lspci -vvv -d 8086:0d94"
lspci -vvv -nn -d 8086:0d94
[ "$CXL" = 1 ] && { sec "cxl windows"; grep -i cxl /proc/iomem; }

if [ "$TEST" = 1 ]; then
	sec "cxl-guest-test"
	# shellcheck disable=SC2086
	/bin/cxl-guest-test $ARGS
	echo "cxl-guest-test rc=$?"
fi
sec "dmesg (vcxl-related)"
dmesg | grep -i -E 'vfio|iommu|dmar|cxl|0d94|BAR|reset' | tail -60
sec "VCXL GUEST DONE"
sync
poweroff -f
