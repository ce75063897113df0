#!/bin/sh
# SPDX-License-Identifier: BSD-3-Clause
# /init of the e2e-migrate guest (busybox ash; Linux 7.2 of scripts/guest-kernel.sh, the CXL
# core built in): loads guest-drivers/vcxl_accel (/lib/vcxl_accel.ko), which finds the region
# the VM's firmware committed, and runs /bin/migrate-guest (tests/e2e/guest/migrate-guest.c)
# until the host's FINAL command, whichever QEMU the VM runs on by then. Its commands come
# on the second serial line (/dev/ttyS1); its STEP, HOSTCHECK and *-DONE lines go to the
# console.
# vcxl.mode=idle (make bench's VM without the device): nothing runs; "IDLE-READY", then the
# guest waits for QUIT on /dev/ttyS1.
# shellcheck source=tests/e2e/guest/e2e-init.sh
. /lib/e2e-init.sh
DRV=/sys/bus/pci/drivers/vcxl_accel

sec "VCXL GUEST START"
uname -r
if [ "$(opt mode migrate)" = idle ]; then
	stty -F /dev/ttyS1 raw -echo
	echo "IDLE-READY"
	while read -r line < /dev/ttyS1; do
		[ "$line" = QUIT ] && break
	done
	sec "VCXL GUEST DONE"
	poweroff -f
fi
BDF=$(for d in /sys/bus/pci/devices/*; do
	[ "$(cat "$d/vendor"):$(cat "$d/device")" = "0x8086:0x0d94" ] && basename "$d"
done | head -1)
echo "accelerator: ${BDF:-none}"
if insmod /lib/vcxl_accel.ko && [ -e "$DRV/$BDF" ] && [ -e /dev/vcxl_accel0 ]; then
	echo "STEP module-load: ok vcxl_accel bound $BDF ($(cat "$DRV/$BDF/region"))"
else
	echo "STEP module-load: FAIL vcxl_accel did not bind ${BDF:-the accelerator}"
fi
[ -e /dev/ttyS1 ] || echo "no /dev/ttyS1"

sec "migrate-guest"
/bin/migrate-guest run "$BDF"
echo "migrate-guest exit $?"
grep -E 'vcxl_accel' /proc/interrupts
dmesg | grep -i -E 'vcxl|cxl' | tail -20
sec "VCXL GUEST DONE"
sync
poweroff -f
