#!/bin/sh
# SPDX-License-Identifier: BSD-3-Clause
# /init of e2e-libvirt's guest (busybox ash, Debian's 6.1 kernel): the CXL.mem proof of
# init-cxlmem.sh (/bin/cxlmem-guest, tests/e2e/guest/cxlmem-guest.c), then it stays up:
# the host ends the VM with `virsh destroy`, the way an operator would, which makes libvirt
# run the hook's release. Kernel command line: vcxl.args="..." (words joined with ','),
# passed on. Sections are framed by "=== NAME ===" lines; the host greps them.
# shellcheck source=tests/e2e/guest/e2e-init.sh
. /lib/e2e-init.sh
ARGS=$(tr ' ' '\n' < /proc/cmdline | sed -n 's/^vcxl\.args=//p' | tail -1 | tr ',' ' ')

sec "VCXL GUEST START"
uname -r
cat /proc/cmdline
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
# up until the host destroys the VM; a line a minute, so that a silent console means a
# stuck guest
while :; do
	sleep 60
	echo "guest: up $(cut -d' ' -f1 /proc/uptime)s, waiting for virsh destroy"
done
