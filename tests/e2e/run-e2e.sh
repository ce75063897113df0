#!/bin/bash
# SPDX-License-Identifier: BSD-3-Clause
# run-e2e.sh BUILDDIR - vcxl end to end: vcxl-server + QEMU vfio-user-pci + a Linux guest.
#
# Boots (each under TCG with shared memfd guest RAM):
#   nodev  the guest alone (proves the guest side: kernel, initramfs, program)
#   plain  q35, vcxl on pcie.0
#   cxl    q35,cxl=on: pxb-cxl, two cxl-rp (one empty), CFMWS window, vcxl on rp0
#   iommu  q35 + intel-iommu; the guest also binds vcxl to vfio-pci (MSI-X eventfd, DMA via IOMMU)
# In the guest, /init runs tests/e2e/guest/cxl-guest-test (one "STEP" line per step).
# On the host it checks every STEP, the device memory the guest's job-engine FILL wrote
# (in the server's --backing file; zeroed after the guest left where the boot runs the
# default --on-disconnect reset), the server log (no "protocol error", host decoder
# untouched) and that no process or socket is left. Output is TAP.
#
# Environment:
#   VCXL_QEMU          QEMU binary (default: see qemu-find.sh)
#   VCXL_E2E_CACHE     kernel/initramfs cache (default ~/.cache/vcxl-e2e)
#   VCXL_E2E_BOOTS     boots to run (default "nodev plain cxl"; "iommu" is extra, see docs/qemu.md)
#   VCXL_E2E_TIMEOUT   hard timeout per QEMU run, seconds (default 300)
#   VCXL_E2E_SILENCE   seconds without console output before a boot is killed and retried
#                      once (default 90; tests/e2e/lib.sh)
#   VCXL_E2E_SERVER_ARGS  extra vcxl-server options
# Logs: BUILDDIR/e2e/<boot>.{console,server,qemu-cmd}.log
set -u
E2E_NAME=e2e
HERE=$(cd "$(dirname "$0")" && pwd)
# shellcheck source=tests/e2e/lib.sh
. "$HERE/lib.sh"
BUILD=$(cd "${1:-build}" && pwd)
LOGDIR="$BUILD/e2e"
SERVER="$BUILD/src/tools/vcxl-server"
[ -x "$SERVER" ] || [ ! -x "$BUILD/src/server/vcxl-server" ] || SERVER="$BUILD/src/server/vcxl-server"
CLI="$BUILD/src/tools/vcxl"
BOOTS=${VCXL_E2E_BOOTS:-nodev plain cxl}
QEMU_TIMEOUT=${VCXL_E2E_TIMEOUT:-300}
MEM_SIZE=$((256 << 20))
GUEST_RAM=1G
mkdir -p "$LOGDIR"

# ---- processes we start; killed by pid on any exit ----
TMP=""
SPID=""
ALL_PIDS=""
ALL_TMPS=""
cleanup() {
	e2e_boot_stop
	[ -n "$SPID" ] && e2e_server_stop "$SPID"
	[ -n "$TMP" ] && rm -rf "$TMP"
	SPID=""
	TMP=""
}
trap cleanup EXIT
trap 'cleanup; exit 130' INT TERM

QEMU=$("$HERE/qemu-find.sh") || skip_all "no QEMU with vfio-user-pci (set VCXL_QEMU)"
echo "# QEMU: $QEMU ($("$QEMU" --version | head -1))"

t0=$(date +%s)
if ! "$HERE/build-guest.sh" "$LOGDIR/guest" > "$LOGDIR/build-guest.log" 2>&1; then
	diag < "$LOGDIR/build-guest.log"
	grep -q -E 'apt-get download|cannot find a kernel' "$LOGDIR/build-guest.log" &&
		skip_all "cannot fetch the guest kernel (apt-get download linux-image)"
	echo "Bail out! building the guest failed (see $LOGDIR/build-guest.log)"
	exit 1
fi
grep '^# build-guest' "$LOGDIR/build-guest.log"
echo "# guest built in $(($(date +%s) - t0)) s"

if [ "$BOOTS" != nodev ] && [ ! -x "$SERVER" ]; then
	echo "Bail out! $SERVER is not built"
	exit 1
fi

# ---- one boot ----
qemu_machine() { # qemu_machine BOOT SOCK -> QEMU arguments, one per line
	local sock=$2 dev
	dev="{\"driver\":\"vfio-user-pci\",\"socket\":{\"type\":\"unix\",\"path\":\"$sock\"}"
	case "$1" in
	nodev)
		printf '%s\n' -machine q35,memory-backend=ram0
		;;
	plain)
		printf '%s\n' -machine q35,memory-backend=ram0 -device "$dev,\"id\":\"vcxl0\"}"
		;;
	iommu)
		printf '%s\n' -machine q35,memory-backend=ram0 \
			-device intel-iommu,intremap=on,caching-mode=on -device "$dev,\"id\":\"vcxl0\"}"
		;;
	cxl)
		printf '%s\n' -machine q35,cxl=on,memory-backend=ram0 \
			-device pxb-cxl,bus_nr=12,bus=pcie.0,id=cxl.1 \
			-device cxl-rp,port=0,bus=cxl.1,id=rp0,chassis=0,slot=2 \
			-device cxl-rp,port=1,bus=cxl.1,id=rp1,chassis=0,slot=3 \
			-device "$dev,\"id\":\"vcxl0\",\"bus\":\"rp0\"}" \
			-M cxl-fmw.0.targets.0=cxl.1,cxl-fmw.0.size=4G
		;;
	esac
}

# Device memory check: the bytes the guest's FILL job wrote, read from the backing file.
check_fill() { # check_fill FILE DPA LEN PATTERN
	python3 - "$@" <<'EOF'
import sys
path, dpa, ln, pat = sys.argv[1], int(sys.argv[2], 0), int(sys.argv[3], 0), int(sys.argv[4], 0)
with open(path, "rb") as f:
    f.seek(dpa)
    data = f.read(ln)
want = pat.to_bytes(8, "little") * (ln // 8)
bad = sum(1 for i in range(0, ln, 8) if data[i:i + 8] != want[i:i + 8])
print(f"{path}: dpa {dpa:#x} len {ln:#x}: {bad} of {ln // 8} qwords differ")
sys.exit(1 if bad or len(data) != ln else 0)
EOF
}

# --on-disconnect per boot: plain keeps the device state (the host then reads
# the guest's FILL from device memory and the next client sees the decoders
# the guest left), the others use the default reset (device memory zeroed and
# decoders decommitted for the next client). docs/reset.md.
on_disconnect() { # on_disconnect NAME
	if [ "$1" = plain ]; then echo keep; else echo reset; fi
}

run_boot() { # run_boot NAME
	local name=$1 sock mem con slog cmdlog append rc args=() qargs
	TMP=$(mktemp -d /tmp/vcxl-e2e.XXXXXX)
	ALL_TMPS="$ALL_TMPS $TMP"
	sock="$TMP/vcxl.sock"
	mem="$TMP/devmem.img"
	con="$LOGDIR/$name.console.log"
	slog="$LOGDIR/$name.server.log"
	cmdlog="$LOGDIR/$name.qemu-cmd.log"
	: > "$slog"
	echo "# ---- boot '$name' ----"

	if [ "$name" != nodev ]; then
		truncate -s "$MEM_SIZE" "$mem"
		# --trust-client: the region's fd is then the --backing file, which the CLI's
		# memtest after the guest maps (without it the server serves a --backing
		# region by REGION_READ/WRITE only: docs/security.md)
		# shellcheck disable=SC2086
		e2e_server_start "$slog" "$SERVER" --socket "$sock" --mem-size 256M --decoders 2 \
			--backing "$mem" --trust-client --on-disconnect "$(on_disconnect "$name")" \
			--log-level debug ${VCXL_E2E_SERVER_ARGS:-}
		rc=$?
		SPID=$E2E_SERVER_PID
		ALL_PIDS="$ALL_PIDS $SPID"
		if [ $rc != 0 ]; then
			tap FAIL "$name: vcxl-server is ready (READY=1): $E2E_SERVER_WHY"
			diag < "$slog"
			cleanup
			return
		fi
		tap OK "$name: vcxl-server is ready (READY=1)"
		# the CXL capability as a client sees it before the guest (host region facts)
		[ -x "$CLI" ] && "$CLI" info "$sock" > "$LOGDIR/$name.info-before.log" 2>&1
	fi

	append=$E2E_KERNEL_ARGS
	case "$name" in
	nodev) append="$append vcxl.args=--expect-absent" ;;
	cxl) append="$append vcxl.cxl=1" ;;
	iommu) append="$append intel_iommu=on vcxl.vfio=1 vcxl.args=--vfio" ;;
	esac
	mapfile -t qargs < <(qemu_machine "$name" "$sock")
	args=(-L /usr/share/seabios -L /usr/share/qemu -nodefaults "${E2E_TCG_ARGS[@]}"
		-object "memory-backend-memfd,id=ram0,size=$GUEST_RAM,share=on" -m "$GUEST_RAM"
		-nographic -serial stdio -monitor none -no-reboot -nic none
		"${qargs[@]}"
		-kernel "$LOGDIR/guest/vmlinuz" -initrd "$LOGDIR/guest/initramfs.cpio.gz"
		-append "$append")
	printf '%q ' "$QEMU" "${args[@]}" > "$cmdlog"
	echo >> "$cmdlog"
	e2e_boot --timeout "$QEMU_TIMEOUT" "$name" "$con" "$QEMU" "${args[@]}"
	rc=$?
	local wall=$E2E_BOOT_SECS
	echo "# $name: QEMU exited rc=$rc after ${wall} s"
	if [ $rc -eq 0 ]; then
		tap OK "$name: QEMU ran and exited cleanly (${wall} s)"
	else
		tap FAIL "$name: QEMU ran and exited cleanly (rc=$rc after ${wall} s)"
		grep -a -i -E 'qemu-system|error|warning' "$con" | head -20 | diag
	fi
	if grep -a -q '=== VCXL GUEST DONE ===' "$con"; then
		tap OK "$name: guest init completed"
	else
		tap FAIL "$name: guest init completed"
		tail -30 "$con" | diag
	fi
	if [ "$name" != nodev ]; then
		echo "# lspci -vvv -d 8086:0d94 (guest):"
		sed -n '/^=== lspci -vvv -d 8086:0d94/,/^=== /p' "$con" | grep -a -v '^===' | diag
		local what re
		for what in "Device DVSEC:CXLCap:" "Register Locator:Block[0-9]: BIR: bar" \
			"GPF DVSEC:GPF Phase 2" "Flex Bus DVSEC:FBCap:"; do
			re=${what#*:}
			if sed -n '/^=== lspci -vvv -d 8086:0d94/,/^=== /p' "$con" | grep -a -q -E "$re"; then
				tap OK "$name: guest lspci decodes the ${what%%:*}"
			else
				tap FAIL "$name: guest lspci decodes the ${what%%:*}"
			fi
		done
	fi
	# every STEP line of the guest program is a test point
	e2e_steps_tap "$con" "$name: "
	local nsteps=$E2E_NSTEPS
	if grep -a -q -E '^RESULT: [0-9]+ ok, 0 failed' "$con"; then
		tap OK "$name: guest program finished with no failure ($nsteps steps)"
	else
		tap FAIL "$name: guest program finished with no failure ($nsteps steps)"
	fi

	if [ "$name" != nodev ]; then
		check_host "$name" "$con" "$slog" "$mem"
	fi
	cleanup
}

# Host-side checks after the guest powered off.
check_host() { # check_host NAME CONSOLE SERVERLOG MEMFILE
	local name=$1 con=$2 slog=$3 mem=$4 hc dpa len pat src
	hc=$(grep -a '^HOSTCHECK fill ' "$con" | tail -1 | tr -d '\r')
	if [ -n "$hc" ]; then
		dpa=$(echo "$hc" | sed -n 's/.*dpa=\([^ ]*\).*/\1/p')
		len=$(echo "$hc" | sed -n 's/.*len=\([^ ]*\).*/\1/p')
		pat=$(echo "$hc" | sed -n 's/.*pattern=\([^ ]*\).*/\1/p')
		if [ "$(on_disconnect "$name")" = reset ]; then
			# the guest's client is gone: its data must be too
			if check_fill "$mem" "$dpa" "$len" 0 > "$TMP/fill.out" 2>&1; then
				tap OK "$name: guest's FILL zeroed after it left, --on-disconnect reset ($(cat "$TMP/fill.out"))"
			else
				tap FAIL "$name: guest's FILL zeroed after it left, --on-disconnect reset"
				diag < "$TMP/fill.out"
			fi
		elif check_fill "$mem" "$dpa" "$len" "$pat" > "$TMP/fill.out" 2>&1; then
			tap OK "$name: host sees the guest's FILL in device memory ($(cat "$TMP/fill.out"))"
		else
			tap FAIL "$name: host sees the guest's FILL in device memory"
			diag < "$TMP/fill.out"
		fi
	else
		tap FAIL "$name: host sees the guest's FILL in device memory (no HOSTCHECK line)"
	fi
	check_cli "$name" "$TMP/vcxl.sock"
	# the server must survive the guest and stop cleanly on SIGTERM
	if kill -0 "$SPID" 2>/dev/null; then
		tap OK "$name: vcxl-server still running after the guest powered off"
		e2e_server_stop "$SPID"
		src=$E2E_SERVER_RC
		if [ $src -eq 124 ]; then
			tap FAIL "$name: vcxl-server exits on SIGTERM (within 10 s)"
		elif [ $src -eq 0 ] || [ $src -eq 143 ]; then
			tap OK "$name: vcxl-server exits on SIGTERM (rc=$src)"
		else
			tap FAIL "$name: vcxl-server exits on SIGTERM (rc=$src)"
		fi
		SPID=""
		[ -e "$TMP/vcxl.sock" ] && echo "# note: vcxl-server left its socket file behind on exit"
	else
		wait "$SPID"
		src=$?
		SPID=""
		tap FAIL "$name: vcxl-server still running after the guest powered off (exited rc=$src)"
		tail -20 "$slog" | diag
	fi
	e2e_no_protocol_error "$slog" "$name"
	check_host_decoder "$name" "$slog"
}

# After the guest: a second client (the vcxl CLI) sees the same CXL region, virtual decoders
# back at their reset state, and a working CXL region (memtest: mmap + REGION_READ agree).
check_cli() { # check_cli NAME SOCK
	local name=$1 sock=$2 before after
	if [ ! -x "$CLI" ]; then
		tap SKIP "$name: vcxl CLI checks after the guest" "$CLI not built"
		return
	fi
	"$CLI" info "$sock" > "$LOGDIR/$name.info-after.log" 2>&1
	before=$(grep '^cxl:' "$LOGDIR/$name.info-before.log" 2>/dev/null)
	after=$(grep '^cxl:' "$LOGDIR/$name.info-after.log")
	if [ -n "$after" ] && [ "$before" = "$after" ]; then
		tap OK "$name: CXL capability unchanged by the guest ($after)"
	else
		tap FAIL "$name: CXL capability unchanged by the guest"
		printf 'before: %s\nafter:  %s\n' "$before" "$after" | diag
	fi
	if [ "$(on_disconnect "$name")" = keep ]; then
		# the guest ends with decoder 0 committed (its FLR step keeps it)
		if "$CLI" hdm "$sock" > "$LOGDIR/$name.hdm-after.log" 2>&1 &&
			grep -q 'Committed+' "$LOGDIR/$name.hdm-after.log"; then
			tap OK "$name: next client sees the decoder the guest left committed (--on-disconnect keep)"
		else
			tap FAIL "$name: next client sees the decoder the guest left committed (--on-disconnect keep)"
		fi
	elif "$CLI" hdm "$sock" > "$LOGDIR/$name.hdm-after.log" 2>&1 &&
		! grep -q 'Committed+' "$LOGDIR/$name.hdm-after.log"; then
		tap OK "$name: next client sees the virtual decoders reset"
	else
		tap FAIL "$name: next client sees the virtual decoders reset"
	fi
	diag < "$LOGDIR/$name.hdm-after.log"
	if "$CLI" memtest "$sock" --size 16M > "$LOGDIR/$name.memtest.log" 2>&1; then
		tap OK "$name: CXL region memtest after the guest ($(tail -1 "$LOGDIR/$name.memtest.log"))"
	else
		tap FAIL "$name: CXL region memtest after the guest"
		diag < "$LOGDIR/$name.memtest.log"
	fi
}

# The host's physical decoder (the CXL region the server committed) must not change
# whatever the guest does to its virtual decoders.
check_host_decoder() { # check_host_decoder NAME SERVERLOG
	local name=$1 slog=$2 made verdict
	# the server logs the region it committed at start and re-reads the
	# physical decoder at exit (vcxl_region_verify)
	made=$(grep -a -m1 'host region:' "$slog" | sed 's/^.*host region: //' || true)
	verdict=$(grep -a 'host decoder [0-9]* ' "$slog" | tail -1 | sed 's/^.*host decoder/decoder/' || true)
	if [ -n "$made" ] && echo "$verdict" | grep -q 'verified unchanged'; then
		tap OK "$name: host physical decoder unchanged ($made; at exit: $verdict)"
	else
		tap FAIL "$name: host physical decoder unchanged"
		printf 'start: %s\nexit:  %s\n' "$made" "$verdict" | diag
	fi
}

for b in $BOOTS; do
	run_boot "$b"
done

# nothing we started may survive: processes (by pid), sockets and temp dirs
left=""
for p in $ALL_PIDS $E2E_BOOT_ALL_PIDS; do
	kill -0 "$p" 2>/dev/null && left="$left pid:$p"
done
for d in $ALL_TMPS; do
	[ -e "$d" ] && left="$left $d"
done
if [ -z "$left" ]; then
	tap OK "no process, socket or temp dir of ours left behind"
else
	tap FAIL "no process, socket or temp dir of ours left behind:$left"
fi
echo "# logs: $LOGDIR"
e2e_done
