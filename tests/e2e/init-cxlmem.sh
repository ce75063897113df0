#!/bin/sh
# SPDX-License-Identifier: BSD-3-Clause
# /init of the CXL.mem guest (busybox ash, Debian's 6.1 kernel): runs
# /bin/cxlmem-guest (tests/e2e/guest/cxlmem-guest.c) and powers off. No CXL
# driver is loaded: the program drives the accelerator from userspace and
# reads the CXL fixed memory windows from the ACPI CEDT itself.
# Kernel command line: vcxl.args="..." (words joined with ','), passed on.
# Sections are framed by "=== NAME ===" lines; the host greps them.
# shellcheck source=tests/e2e/guest/e2e-init.sh
. /lib/e2e-init.sh

ARGS=$(tr ' ' '\n' < /proc/cmdline | sed -n 's/^vcxl\.args=//p' | tail -1 | tr ',' ' ')

sec "VCXL GUEST START"
uname -r
sec "lspci -nn"
lspci -nn
sec "cxlmem-guest $ARGS"
# shellcheck disable=SC2086
/bin/cxlmem-guest $ARGS
echo "cxlmem-guest rc=$?"
sec "dmesg (vcxl-related)"
dmesg | grep -i -E 'vfio|cxl|0d94|0d93|BAR|reset|devmem' | tail -40
sec "VCXL GUEST DONE"
sync
poweroff -f
