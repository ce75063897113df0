#!/bin/bash
# SPDX-License-Identifier: BSD-3-Clause
# run-e2e-type2.sh BUILDDIR - e2e-type2: a stock Linux 7.2 guest's own Type-2 stack drives
# vcxl's accelerator model.
#
# Host: `vcxl-server --firmware-committed --mem-size 512M` (device memory a sealed memfd: no
# --backing, no --trust-client) and the CXL-aware QEMU (vmm/qemu/: at machine start it
# commits and locks the device's decoder 0 and its host bridge's decoder as the VM's
# firmware) with q35,cxl=on, a pxb-cxl host bridge (hdm_for_passthrough=on: the host bridge
# has HDM decoders although it has one root port), one cxl-rp, a 4 GiB CXL fixed memory
# window and the device as vfio-user-pci on that root port.
# Guest: Linux 7.2 of scripts/guest-kernel.sh (CXL core, cxl_acpi, cxl_port, cxl_mem,
# regions built in), busybox, guest-drivers/vcxl_accel built out of tree against that
# kernel's object tree, and /init = init-type2.sh with tests/e2e/guest/type2-guest.c. The
# guest checks (STEP lines): the module loads and binds; /sys/bus/cxl/devices shows the
# memdev, the endpoint and the committed region; FILL and COPY jobs through the driver,
# stores and loads through the region's mapping that meet the jobs' data, one MSI-X
# interrupt per job; an FLR while a job runs, an unbind (region gone, decoder 0 still
# committed and locked at its base) and a rebind, each leaving everything working.
# Here: the region the guest found is the one QEMU committed (its trace line) and of the
# server's size; the bytes the guest wrote are in device memory (control socket
# read-memory); no protocol error in the server's log; nothing left running.
# Skips visibly (TAP "1..0 # SKIP") when the guest kernel or the CXL-aware QEMU cannot be
# had (guest-kernel-lib.sh: VCXL_E2E_BUILD_KERNEL=0; cxlmem-lib.sh: VCXL_QEMU_CXL,
# VCXL_E2E_BUILD_QEMU=0). VCXL_E2E_T2_APPEND: more for the guest's command line (e.g.
# dyndbg="file drivers/cxl/* +p" for the CXL core's decisions).
# Logs: BUILDDIR/e2e-type2/.
#
# run-e2e-type2.sh BUILDDIR switch (meson test e2e-type2-switch): the same guest and checks
# with the device behind a CXL switch: pxb-cxl (hdm_for_passthrough=on) -> cxl-rp ->
# cxl-upstream -> cxl-downstream -> vfio-user-pci. QEMU (vmm/qemu 0020) commits the host
# bridge's decoder towards the root port and the upstream port's towards the downstream
# port; here the region is also checked against the upstream port's trace line. Logs:
# BUILDDIR/e2e-type2-switch/.
set -u
TOPO=${2:-rp}
case "$TOPO" in
rp) E2E_NAME=e2e-type2 ;;
switch) E2E_NAME=e2e-type2-switch ;;
*) echo "Bail out! topology '$TOPO': rp or switch"; exit 1 ;;
esac
HERE=$(cd "$(dirname "$0")" && pwd)
ROOT=$(cd "$HERE/../.." && pwd)
CXLMEM_BUILD=$(cd "${1:-build}" && pwd)
CXLMEM_LOGDIR="$CXLMEM_BUILD/$E2E_NAME"
LOG=$CXLMEM_LOGDIR
MEM_SIZE=512M
mkdir -p "$LOG"
# shellcheck source=tests/e2e/cxlmem-lib.sh
. "$HERE/cxlmem-lib.sh"
# shellcheck source=tests/e2e/initramfs.sh
. "$HERE/initramfs.sh"
# shellcheck source=tests/e2e/guest-kernel-lib.sh
. "$HERE/guest-kernel-lib.sh"

trap cxlmem_stop EXIT
trap 'cxlmem_stop; exit 130' INT TERM

SERVER=$CXLMEM_BUILD/src/tools/vcxl-server
[ -x "$SERVER" ] || { echo "Bail out! $SERVER is not built"; exit 1; }

# ---- inputs: the 7.2 kernel, the CXL-aware QEMU, the driver, the initramfs ----
e2e_guest_kernel "$LOG/guest-kernel.err" || skip_all "$E2E_GK_WHY"
KDIR=$E2E_GK_DIR
echo "# guest kernel: $KDIR ($(cat "$KDIR/version"))"
cxlmem_qemu || skip_all "no CXL-aware QEMU: $CXLMEM_WHY"
echo "# CXL-aware QEMU: $CXLMEM_QEMU"

rm -rf "$LOG/vcxl_accel"
cp -r "$ROOT/guest-drivers/vcxl_accel" "$LOG/vcxl_accel"
if make -C "$KDIR/build" M="$LOG/vcxl_accel" W=1 modules > "$LOG/module-build.log" 2>&1 &&
	[ -s "$LOG/vcxl_accel/vcxl_accel.ko" ] && ! grep -q -i 'warning' "$LOG/module-build.log"; then
	tap OK "guest-drivers/vcxl_accel builds out of tree against $(cat "$KDIR/version") (W=1, no warning)"
else
	tap FAIL "guest-drivers/vcxl_accel builds out of tree against $(cat "$KDIR/version") (W=1, no warning)"
	diag < "$LOG/module-build.log"
	e2e_done
	exit 1
fi

IRD="$LOG/initramfs.staging"
rm -rf "$IRD"
ird_busybox "$IRD"
${GUEST_CC:-gcc} -static -O2 -std=gnu11 -Wall -Wextra -Werror -I"$ROOT/guest-drivers/vcxl_accel" \
	-o "$IRD/bin/type2-guest" "$HERE/guest/type2-guest.c" || { echo "Bail out! type2-guest"; exit 1; }
install -m 0755 "$HERE/init-type2.sh" "$IRD/init"
install -m 0644 "$LOG/vcxl_accel/vcxl_accel.ko" "$IRD/lib/vcxl_accel.ko"
ird_pack "$IRD" "$LOG/initramfs.cpio.gz"
rm -rf "$IRD"

# ---- the server and the guest ----
CXLMEM_TMP=$(mktemp -d /tmp/vcxl-type2.XXXXXX)
SOCK=$CXLMEM_TMP/t2.sock
# --on-disconnect keep: the host reads what the guest left (the default zeroes it)
if e2e_server_start "$LOG/server.log" "$SERVER" --socket "$SOCK" --mem-size "$MEM_SIZE" \
	--firmware-committed --on-disconnect keep --log-level debug; then
	CXLMEM_SPID=$E2E_SERVER_PID
	tap OK "vcxl-server (accelerator model, $MEM_SIZE in a sealed memfd, firmware-committed) is ready (READY=1)"
else
	tap FAIL "vcxl-server (accelerator model, $MEM_SIZE in a sealed memfd, firmware-committed) is ready: $E2E_SERVER_WHY"
	diag < "$LOG/server.log"
	e2e_done
	exit 1
fi

dev="{\"driver\":\"vfio-user-pci\",\"socket\":{\"type\":\"unix\",\"path\":\"$SOCK\"}"
# the device on the root port, or behind the switch on its downstream port
# shellcheck disable=SC2054 # commas inside QEMU option values
topo=(-device cxl-rp,port=0,bus=cxl.1,id=rp0,chassis=0,slot=2)
devbus=rp0
if [ "$TOPO" = switch ]; then
	# shellcheck disable=SC2054 # commas inside QEMU option values
	topo+=(-device cxl-upstream,bus=rp0,id=us0
		-device cxl-downstream,port=0,bus=us0,id=dsp0,chassis=0,slot=4)
	devbus=dsp0
fi
dev="$dev,\"id\":\"vcxl0\",\"bus\":\"$devbus\",\"x-cxl\":true}"
# shellcheck disable=SC2054 # commas inside QEMU option values
args=(-L /usr/share/seabios -L /usr/share/qemu -nodefaults "${E2E_TCG_ARGS[@]}"
	-object "memory-backend-memfd,id=ram0,size=$CXLMEM_GUEST_RAM,share=on"
	-m "$CXLMEM_GUEST_RAM" -nographic -serial stdio -monitor none -no-reboot -nic none
	-machine q35,cxl=on,memory-backend=ram0
	-device pxb-cxl,bus_nr=12,bus=pcie.0,id=cxl.1,hdm_for_passthrough=on
	"${topo[@]}"
	-device "$dev"
	-M "cxl-fmw.0.targets.0=cxl.1,cxl-fmw.0.size=4G"
	-trace "vfio_cxl_firmware_commit*"
	-kernel "$KDIR/bzImage" -initrd "$LOG/initramfs.cpio.gz"
	-append "$E2E_KERNEL_ARGS ${VCXL_E2E_T2_APPEND:-}")
printf '%q ' "$CXLMEM_QEMU" "${args[@]}" > "$LOG/qemu-cmd.log"
echo >> "$LOG/qemu-cmd.log"
con=$LOG/console.log
ts=$(date +%s)
e2e_boot type2 "$con" "$CXLMEM_QEMU" "${args[@]}"
rc=$?
if [ $rc -eq 0 ]; then
	tap OK "QEMU ran the guest and exited cleanly ($(($(date +%s) - ts)) s)"
else
	tap FAIL "QEMU ran the guest and exited cleanly (rc=$rc after $(($(date +%s) - ts)) s)"
	grep -a -i -E 'qemu-system|error|warning|assert|abort' "$con" | head -20 | diag
fi
if grep -a -q '=== VCXL GUEST DONE ===' "$con"; then
	tap OK "guest init completed"
else
	tap FAIL "guest init completed"
	tail -40 "$con" | diag
fi

# ---- the guest's STEP lines ----
e2e_steps_tap "$con"
nsteps=$E2E_NSTEPS
want_steps=20
if [ "$nsteps" -ge "$want_steps" ]; then
	tap OK "the guest reported all its checks ($nsteps STEP lines)"
else
	tap FAIL "the guest reported all its checks ($nsteps STEP lines, want $want_steps)"
	tail -30 "$con" | diag
fi

# ---- the region is the one QEMU committed as firmware, of the server's size ----
fw=$(grep -a -o 'decoder 0 committed at 0x[0-9a-f]* size 0x[0-9a-f]*' "$con" | head -1)
hb=$(grep -a -o 'host bridge decoder [0-9]* committed at 0x[0-9a-f]* size 0x[0-9a-f]* target port [0-9]*' "$con" | head -1)
reg=$(grep -a -o 'STEP sysfs: ok [^ ]*, [^ ]*, region[0-9]* at 0x[0-9a-f]* size 0x[0-9a-f]*' "$con" | head -1)
fwbase=$(echo "$fw" | awk '{print $5}')
fwsize=$(echo "$fw" | awk '{print $7}')
rbase=$(echo "$reg" | awk '{print $8}')
rsize=$(echo "$reg" | awk '{print $10}')
if [ -n "$fwbase" ] && [ "$((fwbase))" = "$((${rbase:-0}))" ] && [ "$((fwsize))" = "$((${rsize:-0}))" ] &&
	[ "$((fwsize))" = "$((512 << 20))" ]; then
	tap OK "the guest's region is the one QEMU committed as firmware ($fw; $hb) and of the server's size ($MEM_SIZE)"
else
	tap FAIL "the guest's region is the one QEMU committed as firmware (QEMU: '$fw'; guest: '$reg')"
fi
if [ "$TOPO" = switch ]; then
	# the switch upstream port's decoder QEMU committed: over the region, towards dsp0 (port 0)
	usp=$(grep -a -o 'switch upstream port [^ ]* decoder [0-9]* committed at 0x[0-9a-f]* size 0x[0-9a-f]* target port [0-9]*' "$con" | head -1)
	ubase=$(echo "$usp" | awk '{print $9}')
	usize=$(echo "$usp" | awk '{print $11}')
	uport=$(echo "$usp" | awk '{print $14}')
	if [ -n "$ubase" ] && [ "$((ubase))" = "$((${rbase:-0}))" ] && [ "$((usize))" = "$((${rsize:-0}))" ] &&
		[ "$uport" = 0 ]; then
		tap OK "the switch upstream port's decoder QEMU committed covers the guest's region, target dsp0 ($usp)"
	else
		tap FAIL "the switch upstream port's decoder QEMU committed covers the guest's region, target dsp0 (QEMU: '$usp'; guest: '$reg')"
	fi
	# the guest's CXL bus (init-type2.sh's listing): the endpoint below a switch port below
	# the host bridge's port, and that switch port's decoder over the region, locked
	ep=$(grep -a -o -m1 'endpoint[0-9]* -> platform/ACPI0017:00/root0/port[0-9]*/port[0-9]*/endpoint[0-9]*' "$con")
	swp=$(echo "$ep" | sed -n 's|.*/root0/port[0-9]*/port\([0-9]*\)/endpoint.*|\1|p')
	swd=""
	[ -n "$swp" ] && swd=$(grep -a -o -m1 "decoder$swp\.[0-9]*: start ${rbase:-none} size ${rsize:-none} locked 1" "$con")
	if [ -n "$swd" ]; then
		tap OK "the guest's endpoint is below the switch (${ep#* -> platform/ACPI0017:00/}), its port$swp's $swd"
	else
		tap FAIL "the guest's endpoint is below the switch and the switch port's decoder is over the region, locked (endpoint: '$ep'; port$swp decoder: '$swd')"
		grep -a -E '^(endpoint|port|decoder)[0-9]' "$con" | head -20 | diag
	fi
fi

# ---- on the host: the guest's bytes in device memory ----
e2e_checks_tap host < <(cxlmem_hostcheck_ctl "$con" "$SOCK.ctl" 2>&1)
[ "$E2E_NCHECKS" -gt 0 ] || tap FAIL "host: no HOSTCHECK lines from the guest"
e2e_no_protocol_error "$LOG/server.log"
cxlmem_stop
left=""
for p in $E2E_BOOT_ALL_PIDS $E2E_SERVER_PIDS; do kill -0 "$p" 2>/dev/null && left="$left $p"; done
if [ -z "$left" ]; then
	tap OK "nothing left running (QEMU, server, watchdogs)"
else
	tap FAIL "nothing left running: still$left"
fi
e2e_done
