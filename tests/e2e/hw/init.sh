#!/bin/sh
# SPDX-License-Identifier: BSD-3-Clause
# /init of the e2e-hw guest: QEMU's emulated cxl-type3 passed through with the
# VFIO backend, the way a user does it on real hardware (docs/hardware.md):
# cxl_pci unbound, cxl_acpi never loaded (the CFMWS window stays unclaimed; on a
# kernel with it built in, the 7.2 guest kernel of the iommufd boot, it is unbound),
# the device bound to vfio-pci, then vcxl serves it and the unchanged vcxl
# CLI talks to it. One "STEP name ok|fail detail" line per step; the driver's
# "HW ..." lines carry the register read-backs the host checks.
# shellcheck source=tests/e2e/guest/e2e-init.sh
. /lib/e2e-init.sh

step() { echo "STEP $1 $2 ${3:-}"; }
finish() {
	echo "=== E2E-HW DONE ==="
	sync
	poweroff -f
}
run() { # run NAME CMD...
	name=$1; shift
	out=$("$@" 2>&1); rc=$?
	echo "$out" | sed "s/^/  $name| /"
	[ $rc = 0 ] && step "$name" ok "rc=0" || step "$name" fail "rc=$rc"
}
echo "=== E2E-HW START === $(uname -r)"
SOCK=/tmp/vcxl.sock
# the IOMMU interface to open the device with, and the one it must end up on
IOMMU=$(sed -n 's/.*vcxl\.iommu=\([a-z]*\).*/\1/p' /proc/cmdline)
WANT=$(sed -n 's/.*vcxl\.want=\([a-z]*\).*/\1/p' /proc/cmdline)
IOMMU=${IOMMU:-auto}

# load MODULE: modprobe it, unless the kernel has it already: loaded or built in
# (/sys/module/MODULE), or a kernel without a module tree here (the 7.2 guest kernel,
# everything built in, booted with a busybox-only initramfs)
load() {
	[ -e "/sys/module/$1" ] && return 0
	[ -d "/lib/modules/$(uname -r)" ] || return 0
	modprobe "$1"
}
load cxl_pci 2>/dev/null
BDF=""
for d in /sys/bus/pci/devices/*; do
	case "$(cat "$d/class")" in 0x0502*) BDF=$(basename "$d"); break ;; esac
done
[ -n "$BDF" ] && step find-device ok "$BDF $(cat /sys/bus/pci/devices/$BDF/vendor):$(cat /sys/bus/pci/devices/$BDF/device)" ||
	{ step find-device fail "no CXL memory device (class 0502)"; finish; }
D=/sys/bus/pci/devices/$BDF

[ -r /sys/firmware/acpi/tables/CEDT ] && step cedt ok "$(wc -c < /sys/firmware/acpi/tables/CEDT) bytes" ||
	step cedt fail "no /sys/firmware/acpi/tables/CEDT"
# cxl_acpi built in (the 7.2 guest kernel) has bound ACPI0017 at boot and claimed the
# window ("CXL Window 0") and the host bridge's registers: unbind it, as a user of such a
# kernel does (docs/hardware.md section 2); its ports and resources go with it
how="not loaded"
CA=/sys/bus/platform/drivers/cxl_acpi
for a in "$CA"/ACPI0017:*; do
	[ -e "$a" ] || continue
	echo "$(basename "$a")" > "$CA/unbind" && how="built in, unbound from $(basename "$a")"
done
if grep -q '^cxl_acpi ' /proc/modules || ls -d "$CA"/ACPI0017:* > /dev/null 2>&1; then
	step no-cxl-acpi fail "cxl_acpi is loaded or bound"
else
	step no-cxl-acpi ok "cxl_acpi $how; iomem CXL entries: $(grep -ci cxl /proc/iomem)"
fi

# --region-dax (boots with vcxl.dax=1): the region is someone else's.
# "Firmware" (vcxl-hw-firmware, before vfio-pci has the device) commits the
# endpoint decoder; the kernel has a device-DAX over its HPA range (memmap= made
# it Soft Reserved, dax_hmem turns that into /dev/dax0.0); vcxl-server attaches
# to the committed decoder with that device-DAX as the region memory and
# programs nothing. vfio-pci resets the device when it is opened, and a reset
# other than FLR clears HDM decoders (QEMU's cxl-type3 has no FLR), so the
# device's reset methods are switched off first, as docs/hardware.md says.
dax_firmware() {
	vcxl-hw-firmware --device "$BDF" > /tmp/fw.out 2>&1
	frc=$?
	cat /tmp/fw.out
	[ $frc = 0 ] && grep -q '^HW fw-LEFT COMMITTED' /tmp/fw.out &&
		step dax-firmware ok "endpoint decoder 0 committed through sysfs, before vfio-pci" ||
		step dax-firmware fail "rc=$frc"
}
dax_session() {
	echo > $D/reset_method 2>/dev/null
	[ -z "$(cat $D/reset_method 2>/dev/null)" ] && step dax-noreset ok "reset_method emptied" ||
		step dax-noreset fail "reset_method is '$(cat $D/reset_method 2>/dev/null)'"
	load dax_hmem 2>/dev/null
	load device_dax 2>/dev/null
	i=0
	while [ ! -c /dev/dax0.0 ] && [ $i -lt 50 ]; do sleep 0.1; i=$((i + 1)); done
	X=/sys/bus/dax/devices/dax0.0
	if [ -c /dev/dax0.0 ]; then
		step dax-dev ok "/dev/dax0.0 resource=$(cat $X/resource 2>/dev/null) size=$(cat $X/size 2>/dev/null) align=$(cat $X/align 2>/dev/null)"
	else
		step dax-dev fail "no /dev/dax0.0 ($(grep -i 'soft reserved' /proc/iomem))"
	fi
	SOCK3=/tmp/vcxl-dax.sock
	vcxl-server --backend vfio --device "$BDF" --iommu $IOMMU --region-dax /dev/dax0.0 \
		--socket $SOCK3 --on-disconnect keep > /tmp/dax.out 2> /tmp/dax.err &
	SPID=$!
	i=0
	while [ ! -S $SOCK3 ] && kill -0 $SPID 2>/dev/null && [ $i -lt 600 ]; do sleep 0.1; i=$((i + 1)); done
	if [ -S $SOCK3 ]; then
		step dax-server ok "vcxl-server --region-dax /dev/dax0.0 (pid $SPID)"
		run dax-info vcxl info $SOCK3
		run dax-memtest vcxl memtest $SOCK3 --size 2M
		kill -TERM $SPID
		wait $SPID
		src=$?
		[ $src = 0 ] && step dax-exit ok "rc=0" || step dax-exit fail "rc=$src"
	else
		step dax-server fail "vcxl-server --region-dax did not come up"
	fi
	sed 's/^/vcxl-server: /' /tmp/dax.err
	# once vfio-pci let go of the BARs they can be read again (a BAR a driver holds
	# cannot be mapped with CONFIG_IO_STRICT_DEVMEM, so not while serving)
	vcxl-hw-firmware --device "$BDF" --show 2>&1 | sed 's/^HW fw-show /HW dax-closed /'
	# the kernel owns the window (hmem.0, Soft Reserved): without --region-dax it is refused
	vcxl-server --backend vfio --device "$BDF" --iommu $IOMMU --socket /tmp/refuse.sock \
		> /dev/null 2> /tmp/refuse.err
	rrc=$?
	sed 's/^/vcxl-server: /' /tmp/refuse.err
	[ $rrc != 0 ] && grep -q 'region-dax' /tmp/refuse.err &&
		step dax-refuse ok "rc=$rrc: $(grep -o 'is claimed.*' /tmp/refuse.err | head -1)" ||
		step dax-refuse fail "rc=$rrc"
}
# unbind from cxl_pci, bind to vfio-pci
drv=$(basename "$(readlink $D/driver 2>/dev/null)" 2>/dev/null)
[ -n "$drv" ] && echo "$BDF" > $D/driver/unbind
grep -q 'vcxl\.dax=1' /proc/cmdline && dax_firmware
load vfio_pci
load vfio_iommu_type1 2>/dev/null
echo vfio-pci > $D/driver_override
echo "$BDF" > /sys/bus/pci/drivers_probe
now=$(basename "$(readlink $D/driver 2>/dev/null)" 2>/dev/null)
[ "$now" = vfio-pci ] && step bind ok "was ${drv:-unbound}, now vfio-pci, group $(basename "$(readlink $D/iommu_group)")" ||
	{ step bind fail "driver is '${now}'"; finish; }

if grep -q 'vcxl\.dax=1' /proc/cmdline; then
	dax_session
	finish
fi

vcxl-hw-serve --device "$BDF" --socket $SOCK --iommu $IOMMU > /tmp/serve.out 2> /tmp/serve.err &
SPID=$!
i=0
while [ $i -lt 600 ]; do
	grep -q '^HW READY' /tmp/serve.out 2>/dev/null && break
	kill -0 $SPID 2>/dev/null || break
	sleep 0.1
	i=$((i + 1))
done
cat /tmp/serve.out
if ! grep -q '^HW READY' /tmp/serve.out; then
	step serve fail "server did not come up"
	sed 's/^/server: /' /tmp/serve.err
	finish
fi
step serve ok "pid $SPID"
got=$(sed -n 's/^HW open .* iommu=//p' /tmp/serve.out)
[ -n "$WANT" ] && [ "$got" = "$WANT" ] &&
	step iommu ok "--iommu $IOMMU opened through '$got' ($(ls /dev/vfio/devices 2>/dev/null | tr '\n' ' ')cdev; /dev/iommu $([ -c /dev/iommu ] && echo present || echo absent))" ||
	step iommu fail "--iommu $IOMMU opened through '$got', want '$WANT'"
: > /tmp/serve.seen
cp /tmp/serve.out /tmp/serve.seen

run info vcxl info $SOCK
run lspci vcxl lspci $SOCK
run commit vcxl commit $SOCK --decoder 0 --base 0x1000000000 --size 256M
run hdm vcxl hdm $SOCK
run memtest vcxl memtest $SOCK --size 1M

kill -TERM $SPID
wait $SPID
src=$?
# the lines printed after READY (tear-down read-backs)
tail -n +$(($(wc -l < /tmp/serve.seen) + 1)) /tmp/serve.out
[ $src = 0 ] && step shutdown ok "server rc=0" || step shutdown fail "server rc=$src"
grep -E 'error|warn' /tmp/serve.err | sed 's/^/server: /'

# --on-disconnect keep for every server here: the default zeroes the region
# when a client goes, 256 MiB through emulated CXL memory in a TCG guest (minutes;
# the next client's connect times out), and the checks read what memtest left.
# The same through the product: vcxl-server --backend vfio (the driver above
# also prints host-bridge read-backs; this proves the server binary itself).
SOCK2=/tmp/vcxl-srv.sock
vcxl-server --backend vfio --device "$BDF" --iommu $IOMMU --socket $SOCK2 --on-disconnect keep > /tmp/srv.out 2> /tmp/srv.err &
SPID=$!
i=0
while [ $i -lt 600 ]; do
	[ -S $SOCK2 ] && break
	kill -0 $SPID 2>/dev/null || break
	sleep 0.1
	i=$((i + 1))
done
if [ -S $SOCK2 ]; then
	step server-vfio ok "vcxl-server --backend vfio --device $BDF --iommu $IOMMU (pid $SPID)"
	run srv-info vcxl info $SOCK2
	run srv-commit vcxl commit $SOCK2 --decoder 0 --base 0x1000000000 --size 256M
	run srv-memtest vcxl memtest $SOCK2 --size 1M
	# by default no fd goes to the client (docs/security.md): BARs and the
	# region are served by messages, said in one line each
	run srv-mmap-none vcxl-hw-mmap $SOCK2 --expect-none
	run srv-dma vcxl-hw-dma $SOCK2 --server-pid $SPID --iova 0x1000000000 --size 16M
	# an interrupt from the device itself: QEMU's cxl-type3 signals its mailbox MSI-X
	# vector when a background command ends; vfio-pci's eventfd is the client's.
	# Scan Media of DPA 0, one 64-byte line (CXL r3.1 8.2.9.9.4.5: DPA u64, length
	# u64 in 64-byte units, flags u8)
	run srv-mbox-irq vcxl mbox $SOCK2 --opcode 0x4304 --in 0000000000000000010000000000000000 --irq
	run srv-mbox vcxl mbox $SOCK2 --opcode 0x4000
	# DEVICE_RESET: VFIO_DEVICE_RESET (a bus reset for a device without FLR), which
	# clears the endpoint decoder; the host core puts its region back
	run srv-reset vcxl reset $SOCK2
	run srv-memtest-reset vcxl memtest $SOCK2 --size 1M
	kill -TERM $SPID
	wait $SPID
	src=$?
	[ $src = 0 ] && step server-vfio-exit ok "rc=0" || step server-vfio-exit fail "rc=$src"
	grep -q 'host decoder [0-9]* verified unchanged' /tmp/srv.err &&
		step server-vfio-host-decoder ok "$(grep -o 'host decoder [0-9]* verified unchanged' /tmp/srv.err)" ||
		step server-vfio-host-decoder fail "no verification line"
	l=$(grep -o "opened through VFIO ([a-z]*)" /tmp/srv.err)
	[ -n "$WANT" ] && [ "$l" = "opened through VFIO ($WANT)" ] &&
		step server-vfio-iommu ok "$l" || step server-vfio-iommu fail "'$l', want ($WANT)"
	grep -q -i 'protocol error' /tmp/srv.err &&
		step server-vfio-protocol fail "$(grep -i -m1 'protocol error' /tmp/srv.err)" ||
		step server-vfio-protocol ok "no protocol error"
	l=$(grep -c 'served by REGION_READ/WRITE only' /tmp/srv.err)
	grep -q 'CXL region served by REGION_READ/WRITE only, not mmap: no device-DAX' /tmp/srv.err &&
		step server-vfio-nofd ok "$l lines: served by messages, no fd" ||
		step server-vfio-nofd fail "no 'served by REGION_READ/WRITE only' line for the region"
else
	step server-vfio fail "vcxl-server --backend vfio did not come up"
fi
sed 's/^/vcxl-server: /' /tmp/srv.err

# --trust-client: the BAR areas go out as the VFIO device fd (the region
# still not: /dev/mem never does); what a VMM then maps is the device itself
SOCK4=/tmp/vcxl-trust.sock
vcxl-server --backend vfio --device "$BDF" --iommu $IOMMU --socket $SOCK4 --trust-client --on-disconnect keep > /tmp/trust.out 2> /tmp/trust.err &
SPID=$!
i=0
while [ $i -lt 600 ]; do
	[ -S $SOCK4 ] && break
	kill -0 $SPID 2>/dev/null || break
	sleep 0.1
	i=$((i + 1))
done
if [ -S $SOCK4 ]; then
	run srv-mmap vcxl-hw-mmap $SOCK4
	kill -TERM $SPID
	wait $SPID
else
	step srv-mmap fail "vcxl-server --trust-client did not come up"
fi
sed 's/^/vcxl-server-trust: /' /tmp/trust.err

finish
