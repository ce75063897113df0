#!/bin/sh
# SPDX-License-Identifier: BSD-3-Clause
# shellcheck disable=SC3043,SC2012 # busybox ash has local; sysfs names are plain words
# /init of the e2e-type2 guest (busybox ash; Linux 7.2 from scripts/guest-kernel.sh, the CXL
# core, cxl_acpi, cxl_port, cxl_mem and regions built in): loads guest-drivers/vcxl_accel
# (/lib/vcxl_accel.ko), which finds its region through the kernel's Type-2 API, then
# drives it with /bin/type2-guest (tests/e2e/guest/type2-guest.c) and checks what the
# kernel shows in sysfs: before and after an FLR, an unbind and a rebind.
# The region is the first the CXL bus shows once the driver bound; the host compares it
# with what QEMU (the VM's firmware) committed. One "STEP name: ok|FAIL detail" line per
# check.
E2E_INIT_PRINTK=keep
# shellcheck source=tests/e2e/guest/e2e-init.sh
. /lib/e2e-init.sh
# the kernel's messages stay on the console for the watchdog until the driver is up; then
# warnings only (the driver's own lines are in the dmesg section)
step() { # step ok|FAIL NAME DETAIL
	echo "STEP $2: $1 $3"
}
FWBASE=""
SIZE=""
CXL=/sys/bus/cxl/devices
DRV=/sys/bus/pci/drivers/vcxl_accel

# A region of the CXL bus whose resource is [FWBASE, +SIZE): its name, or nothing
region_at() {
	[ -n "$FWBASE" ] || return 1
	for r in "$CXL"/region*; do
		[ -e "$r/resource" ] || continue
		[ "$(($(cat "$r/resource")))" = "$((FWBASE))" ] && [ "$(($(cat "$r/size")))" = "$((SIZE))" ] &&
			basename "$r" && return 0
	done
	return 1
}

# sysfs: memdev, endpoint port and region of the driver's device (NAME: the step's name)
check_sysfs() {
	local mem ep reg
	mem=$(ls -d "$CXL"/mem* 2>/dev/null | head -1)
	ep=$(ls -d "$CXL"/endpoint* 2>/dev/null | head -1)
	reg=$(region_at)
	if [ -n "$mem" ] && [ -n "$ep" ] && [ -n "$reg" ]; then
		step ok "$1" "$(basename "$mem"), $(basename "$ep"), $reg at $(cat "$CXL/$reg/resource") size $(cat "$CXL/$reg/size") (want $FWBASE, $SIZE)"
	else
		step FAIL "$1" "memdev '$mem' endpoint '$ep' region '$reg' (want one at $FWBASE size $SIZE); the bus has: $(ls "$CXL" | tr '\n' ' ')"
	fi
}

sec "VCXL GUEST START"
uname -r
BDF=$(for d in /sys/bus/pci/devices/*; do
	[ "$(cat "$d/vendor"):$(cat "$d/device")" = "0x8086:0x0d94" ] && basename "$d"
done | head -1)
echo "accelerator: ${BDF:-none}"

sec "insmod vcxl_accel"
if insmod /lib/vcxl_accel.ko && [ -e "$DRV/$BDF" ] && [ -e /dev/vcxl_accel0 ]; then
	step ok module-load "vcxl_accel bound $BDF, /dev/vcxl_accel0"
else
	step FAIL module-load "vcxl_accel did not bind ${BDF:-the accelerator}"
fi
echo 4 > /proc/sys/kernel/printk
for r in "$CXL"/region*; do
	[ -e "$r/resource" ] || continue
	FWBASE=$(cat "$r/resource")
	SIZE=$(cat "$r/size")
	break
done
echo "region: ${FWBASE:-none} size ${SIZE:-none}"
sec "CXL bus"
for d in "$CXL"/*; do
	[ -e "$d" ] || continue
	echo "$(basename "$d") -> $(readlink "$d" | sed 's|.*/devices/||')"
done
for d in "$CXL"/decoder*; do
	[ -e "$d/start" ] || continue
	echo "$(basename "$d"): start $(cat "$d/start") size $(cat "$d/size") locked $(cat "$d/locked" 2>/dev/null)" \
		"target_list $(cat "$d/target_list" 2>/dev/null) target_type $(cat "$d/target_type" 2>/dev/null)"
done
check_sysfs sysfs
R=$(region_at)
if [ -n "$R" ]; then
	for f in mode type interleave_ways commit target0; do
		[ -e "$CXL/$R/$f" ] && echo "$R/$f: $(cat "$CXL/$R/$f")"
	done
fi
[ -e "$DRV/$BDF/region" ] && echo "driver: $(cat "$DRV/$BDF/region")"

sec "type2-guest jobs"
/bin/type2-guest jobs "$FWBASE" "$SIZE"
grep -E 'vcxl_accel' /proc/interrupts
n=$(awk '/vcxl_accel0/ { s = 0; for (i = 2; i <= NF; i++) if ($i ~ /^[0-9]+$/) s += $i; else break; print s }' /proc/interrupts)
if [ "${n:-0}" -gt 0 ]; then
	step ok proc-interrupts "vcxl_accel0 took $n interrupt(s) (/proc/interrupts)"
else
	step FAIL proc-interrupts "no vcxl_accel0 interrupts in /proc/interrupts"
fi

sec "FLR while bound, a job in flight"
/bin/type2-guest longjob > /tmp/longjob.out 2>&1 &
lj=$!
# the reset as soon as the job is being submitted
i=0
while ! grep -q 'LONGJOB start' /tmp/longjob.out && [ $i -lt 500 ]; do
	usleep 2000
	i=$((i + 1))
done
if echo 1 > "/sys/bus/pci/devices/$BDF/reset"; then
	wait $lj
	ljrc=$?
	cat /tmp/longjob.out
	if [ $ljrc = 0 ]; then
		step ok flr "sysfs reset while bound, jobs running: $(sed -n 's/^LONGJOB rc=//p' /tmp/longjob.out)"
	else
		step FAIL flr "the job in flight: $(cat /tmp/longjob.out) (exit $ljrc)"
	fi
else
	wait $lj
	step FAIL flr "echo 1 > /sys/bus/pci/devices/$BDF/reset failed"
fi
check_sysfs flr-sysfs
/bin/type2-guest verify flr

sec "unbind"
echo "$BDF" > "$DRV/unbind"
if [ ! -e "$DRV/$BDF" ] && [ -z "$(region_at)" ] && ! ls -d "$CXL"/mem* > /dev/null 2>&1; then
	step ok unbind "driver gone, no memdev, no region on the CXL bus ($(ls "$CXL" | tr '\n' ' '))"
else
	step FAIL unbind "still there: $(ls "$CXL" | tr '\n' ' ')"
fi
/bin/type2-guest hdm "$BDF" "$FWBASE"

sec "rebind"
echo "$BDF" > "$DRV/bind"
if [ -e "$DRV/$BDF" ] && [ -e /dev/vcxl_accel0 ]; then
	step ok rebind "vcxl_accel bound $BDF again"
else
	step FAIL rebind "vcxl_accel did not bind $BDF again"
fi
check_sysfs rebind-sysfs
/bin/type2-guest verify rebind

sec "dmesg (vcxl_accel, cxl)"
dmesg | grep -i -E 'vcxl|cxl|region|0d94' | tail -40
sec "VCXL GUEST DONE"
sync
poweroff -f
