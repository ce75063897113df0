#!/bin/sh
# SPDX-License-Identifier: BSD-3-Clause
# /init of the CXL.mem guest (busybox ash, Debian's 6.1 kernel): runs
# /bin/cxlmem-guest (tests/e2e/guest/cxlmem-guest.c) and powers off. No CXL
# driver is loaded: the program drives the accelerator from userspace and
# reads the CXL fixed memory windows from the ACPI CEDT itself.
# Kernel command line: vcxl.args="..." (words joined with ','), passed on.
# Sections are framed by "=== NAME ===" lines; the host greps them.
export PATH=/bin:/sbin:/usr/bin:/usr/sbin
export LD_LIBRARY_PATH=/lib/x86_64-linux-gnu

mount -t proc proc /proc
# the kernel's boot messages were on the console (the host's boot watchdog counts them as
# progress: tests/e2e/lib.sh); from here on warnings and worse only, as `quiet` was before
echo 4 > /proc/sys/kernel/printk
mount -t sysfs sysfs /sys
mount -t devtmpfs devtmpfs /dev 2>/dev/null
mkdir -p /tmp /run
mount -t tmpfs tmpfs /tmp

sec() { echo "=== $* === (uptime $(cut -d' ' -f1 /proc/uptime)s)"; }
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
