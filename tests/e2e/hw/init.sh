#!/bin/sh
# SPDX-License-Identifier: BSD-3-Clause
# /init of the e2e-hw guest: QEMU's emulated cxl-type3 passed through with the
# VFIO backend, the way a user does it on real hardware (docs/hardware.md):
# cxl_pci unbound, cxl_acpi never loaded (the CFMWS window stays unclaimed),
# the device bound to vfio-pci, then vcxl serves it and the unchanged vcxl
# CLI talks to it. One "STEP name ok|fail detail" line per step; the driver's
# "HW ..." lines carry the register read-backs the host checks.
export PATH=/bin:/sbin:/usr/bin:/usr/sbin
export LD_LIBRARY_PATH=/lib/x86_64-linux-gnu:/usr/lib/x86_64-linux-gnu:/lib64

mount -t proc proc /proc
mount -t sysfs sysfs /sys
mount -t devtmpfs devtmpfs /dev 2>/dev/null
mkdir -p /tmp /run
mount -t tmpfs tmpfs /tmp
mount -t tmpfs tmpfs /run

step() { echo "STEP $1 $2 ${3:-}"; }
finish() {
	echo "=== E2E-HW DONE ==="
	sync
	poweroff -f
}
echo "=== E2E-HW START === $(uname -r)"
SOCK=/tmp/vcxl.sock
# the IOMMU interface to open the device with, and the one it must end up on
IOMMU=$(sed -n 's/.*vcxl\.iommu=\([a-z]*\).*/\1/p' /proc/cmdline)
WANT=$(sed -n 's/.*vcxl\.want=\([a-z]*\).*/\1/p' /proc/cmdline)
IOMMU=${IOMMU:-auto}

modprobe cxl_pci 2>/dev/null
BDF=""
for d in /sys/bus/pci/devices/*; do
	case "$(cat "$d/class")" in 0x0502*) BDF=$(basename "$d"); break ;; esac
done
[ -n "$BDF" ] && step find-device ok "$BDF $(cat /sys/bus/pci/devices/$BDF/vendor):$(cat /sys/bus/pci/devices/$BDF/device)" ||
	{ step find-device fail "no CXL memory device (class 0502)"; finish; }
D=/sys/bus/pci/devices/$BDF

[ -r /sys/firmware/acpi/tables/CEDT ] && step cedt ok "$(wc -c < /sys/firmware/acpi/tables/CEDT) bytes" ||
	step cedt fail "no /sys/firmware/acpi/tables/CEDT"
if grep -q '^cxl_acpi ' /proc/modules; then
	step no-cxl-acpi fail "cxl_acpi is loaded"
else
	step no-cxl-acpi ok "cxl_acpi not loaded; iomem CXL entries: $(grep -ci cxl /proc/iomem)"
fi

# unbind from cxl_pci, bind to vfio-pci
drv=$(basename "$(readlink $D/driver 2>/dev/null)" 2>/dev/null)
[ -n "$drv" ] && echo "$BDF" > $D/driver/unbind
modprobe vfio-pci
modprobe vfio_iommu_type1 2>/dev/null
echo vfio-pci > $D/driver_override
echo "$BDF" > /sys/bus/pci/drivers_probe
now=$(basename "$(readlink $D/driver 2>/dev/null)" 2>/dev/null)
[ "$now" = vfio-pci ] && step bind ok "was ${drv:-unbound}, now vfio-pci, group $(basename "$(readlink $D/iommu_group)")" ||
	{ step bind fail "driver is '${now}'"; finish; }

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

run() { # run NAME CMD...
	name=$1; shift
	out=$("$@" 2>&1); rc=$?
	echo "$out" | sed "s/^/  $name| /"
	[ $rc = 0 ] && step "$name" ok "rc=0" || step "$name" fail "rc=$rc"
}
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

# The same through the product: vcxl-server --backend vfio (the driver above
# also prints host-bridge read-backs; this proves the server binary itself).
SOCK2=/tmp/vcxl-srv.sock
vcxl-server --backend vfio --device "$BDF" --iommu $IOMMU --socket $SOCK2 > /tmp/srv.out 2> /tmp/srv.err &
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
	run srv-dma vcxl-hw-dma $SOCK2 --server-pid $SPID --iova 0x1000000000 --size 16M
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
else
	step server-vfio fail "vcxl-server --backend vfio did not come up"
fi
sed 's/^/vcxl-server: /' /tmp/srv.err
finish
