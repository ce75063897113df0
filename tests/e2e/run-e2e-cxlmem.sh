#!/bin/bash
# SPDX-License-Identifier: BSD-3-Clause
# run-e2e-cxlmem.sh BUILDDIR - the guest's CXL.mem, end to end, with the CXL-aware QEMU
# (vmm/qemu/, built by scripts/qemu-build.sh) and a Debian 6.1 guest under TCG.
#
# vcxl-server serves the built-in Type-2 model (1 GiB, 2 decoders) with device memory in a
# --backing file the host seeded; QEMU attaches it with vfio-user-pci under a CXL root port
# and a 4 GiB CXL fixed memory window. In the guest, tests/e2e/guest/cxlmem-guest.c finds the
# window in the ACPI CEDT and proves through /dev/mem (one STEP line each):
#   commit      decoder 0 at the window base: the window reads the host's seed at its DPA,
#               and what the guest writes is read back (and found on the host, below)
#   decommit    the window no longer reaches device memory (reads, writes)
#   rebase      decoder 0 at another base: the same DPA there, nothing at the old base
#   dpa-skip    decoder 1 after a 256 MiB DPA skip maps DPA 512 MiB, not the skipped range
#   reset-*     guest FLR, CXL reset, a secondary bus reset (QEMU: VFIO_DEVICE_RESET) each
#               leave the mapping exactly as the decoder state they leave
#   outside-window  a base outside every window maps nothing and the VM runs on
# A second boot (cxlmem-guest --fw) with two devices of a --firmware-committed server in the
# default isolation (sealed memfd regions: no --backing, no --trust-client), both under one
# host bridge and window, and a QMP socket:
#   fw-committed    decoder 0 of each device committed and locked by QEMU (the VM's firmware)
#                   at machine start, inside the window, over all of the region
#   fw-locked       the guest can neither decommit nor move it
#   fw-access       each window reaches its device's memory (checked on the host through the
#                   control socket's read-memory)
#   fw-reset        a bus reset (VFIO_DEVICE_RESET): committed and locked again, same base, data
#   overlap-refused device 1, CXL-reset, commits at device 0's base: refused, one log line
#   overlap-retry   device 0 CXL-reset: device 1's decoder is mapped there now, one log line
#   unplug          QMP device_del of device 1 while mapped: the guest sees it go, the mapping
#                   goes (guest and QEMU's memory tree), QEMU runs on and exits cleanly
# On the host: every HOSTCHECK line (a pattern present or absent at a DPA of the backing
# file), no protocol error in the server log, DEVICE_RESET seen, nothing left running.
# Skips visibly (TAP "1..0 # SKIP") when the CXL-aware QEMU cannot be had (see cxlmem-lib.sh
# for VCXL_QEMU_CXL, VCXL_E2E_BUILD_QEMU) or the guest kernel cannot be fetched.
# Logs: BUILDDIR/e2e-cxlmem/.
set -u
E2E_NAME=e2e-cxlmem
HERE=$(cd "$(dirname "$0")" && pwd)
CXLMEM_BUILD=$(cd "${1:-build}" && pwd)
CXLMEM_LOGDIR="$CXLMEM_BUILD/e2e-cxlmem"
mkdir -p "$CXLMEM_LOGDIR"
# shellcheck source=tests/e2e/cxlmem-lib.sh
. "$HERE/cxlmem-lib.sh"

trap cxlmem_stop EXIT
trap 'cxlmem_stop; exit 130' INT TERM

[ -x "$CXLMEM_BUILD/src/tools/vcxl-server" ] || { echo "Bail out! vcxl-server is not built"; exit 1; }
t0=$(date +%s)
cxlmem_qemu || skip_all "no CXL-aware QEMU: $CXLMEM_WHY"
echo "# CXL-aware QEMU: $CXLMEM_QEMU ($(($(date +%s) - t0)) s to find or build)"
if ! cxlmem_guest "$CXLMEM_LOGDIR/guest" > "$CXLMEM_LOGDIR/build-guest.log" 2>&1; then
	diag < "$CXLMEM_LOGDIR/build-guest.log"
	grep -q -E 'apt-get download|cannot find a kernel' "$CXLMEM_LOGDIR/build-guest.log" &&
		skip_all "cannot fetch the guest kernel (apt-get download linux-image)"
	echo "Bail out! building the guest failed (see $CXLMEM_LOGDIR/build-guest.log)"
	exit 1
fi
grep '^# guest' "$CXLMEM_LOGDIR/build-guest.log"

name=proof
if cxlmem_start_server "$name"; then
	tap OK "vcxl-server (model, 1 GiB seeded --backing, 2 decoders) listens"
else
	tap FAIL "vcxl-server (model, 1 GiB seeded --backing, 2 decoders) listens"
	diag < "$CXLMEM_LOGDIR/$name.server.log"
	e2e_done
	exit 1
fi
ts=$(date +%s)
cxlmem_boot "$name" ""
rc=$?
con="$CXLMEM_LOGDIR/$name.console.log"
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
	tail -30 "$con" | diag
fi
grep -a -E '^  CFMWS' "$con" | tr -d '\r' | diag
tap_steps() { # tap_steps CONSOLE: one TAP point per STEP line, counted in nsteps
	e2e_steps_tap "$1"
	nsteps=$E2E_NSTEPS
}
tap_steps "$con"
if grep -a -q -E '^RESULT: [0-9]+ ok, 0 failed' "$con" && [ "$nsteps" -ge 10 ]; then
	tap OK "guest program finished with no failure ($nsteps steps)"
else
	tap FAIL "guest program finished with no failure ($nsteps steps)"
fi
# QEMU's own word on what it mapped and refused (trace-free: its warnings)
grep -a -i -E 'cxl' "$con" | grep -a -v -E '^(STEP|HOSTCHECK|  )' | grep -a -i -E 'warn|refus|error' |
	head -10 | diag
# the bad base: refused by QEMU with one log line (the guest's outside-window step names it)
bad=$(grep -a '^STEP outside-window' "$con" | sed -n 's/.*committed at \(0x[0-9a-f]*\) outside.*/\1/p')
nref=0
[ -n "$bad" ] && nref=$(grep -a -c "^qemu-system.*HDM decoder 0 committed at $bad .*not mapped" "$con")
if [ -n "$bad" ] && [ "$nref" -eq 1 ]; then
	tap OK "QEMU refused the decoder at $bad (outside every window) with one log line"
else
	tap FAIL "QEMU refused the decoder at ${bad:-?} (outside every window) with one log line ($nref lines)"
fi

e2e_checks_tap host < <(cxlmem_hostcheck "$con" "$CXLMEM_TMP/devmem.img")
nchk=$E2E_NCHECKS
if [ "$nchk" -ge 9 ]; then
	tap OK "host checked $nchk guest accesses in device memory"
else
	tap FAIL "host checked $nchk guest accesses in device memory (want >= 9 HOSTCHECK lines)"
fi
slog="$CXLMEM_LOGDIR/$name.server.log"
nres=$(grep -a -c 'device reset' "$slog")
if [ "$nres" -ge 2 ]; then
	tap OK "server saw VFIO_USER_DEVICE_RESET $nres times (machine start + the guest's bus reset)"
else
	tap FAIL "server saw VFIO_USER_DEVICE_RESET $nres times (want >= 2: start + bus reset)"
fi
e2e_no_protocol_error "$slog"
e2e_server_alive "$CXLMEM_SPID" "$slog" "the guest powered off"
spid=$CXLMEM_SPID
tmp=$CXLMEM_TMP
cxlmem_stop
if kill -0 "$spid" 2>/dev/null || [ -e "$tmp" ]; then
	tap FAIL "no process, socket or temp dir of ours left behind"
else
	tap OK "no process, socket or temp dir of ours left behind"
fi

# ---- firmware-committed regions, the overlap retry, unplug; the default isolation ----
name=fw
if cxlmem_start_server_fw "$name"; then
	tap OK "vcxl-server --devices 2 --firmware-committed (sealed memfd regions) listens"
else
	tap FAIL "vcxl-server --devices 2 --firmware-committed (sealed memfd regions) listens"
	diag < "$CXLMEM_LOGDIR/$name.server.log"
	e2e_done
	exit 1
fi
ts=$(date +%s)
cxlmem_boot_fw "$name"
rc=$?
con="$CXLMEM_LOGDIR/$name.console.log"
qmp="$CXLMEM_LOGDIR/$name.qmp.log"
slog="$CXLMEM_LOGDIR/$name.server.log"
if [ $rc -eq 0 ]; then
	tap OK "QEMU ran the two-device guest, unplugged one, exited cleanly ($(($(date +%s) - ts)) s)"
else
	tap FAIL "QEMU ran the two-device guest, unplugged one, exited cleanly (rc=$rc)"
	grep -a -i -E 'qemu|error|warning|assert|abort' "$con" | head -20 | diag
fi
tap_steps "$con"
if grep -a -q -E '^RESULT: [0-9]+ ok, 0 failed' "$con" && [ "$nsteps" -ge 8 ]; then
	tap OK "guest --fw finished with no failure ($nsteps steps)"
else
	tap FAIL "guest --fw finished with no failure ($nsteps steps, want 8)"
	tail -20 "$con" | diag
fi
grep -a -i 'cxl' "$con" | grep -a -E '^qemu' | grep -a -v 'error recovery' | diag
# the overlap: one warning when refused, one line when mapped after device 0 let go
b0=$(grep -a '^STEP overlap-refused' "$con" | sed -n 's/.*committed at \(0x[0-9a-f]*\) .*/\1/p')
nref=0
nmap=0
if [ -n "$b0" ]; then
	nref=$(grep -a -c "fw.sock.1: CXL HDM decoder 0 committed at $b0 .*not mapped: overlaps" "$con")
	nmap=$(grep -a -c "fw.sock.1: CXL HDM decoder 0 at $b0 .* now mapped" "$con")
fi
if [ -n "$b0" ] && [ "$nref" -eq 1 ] && [ "$nmap" -eq 1 ]; then
	tap OK "QEMU: device 1's decoder at $b0 refused for the overlap (1 line), mapped when it went (1 line)"
else
	tap FAIL "QEMU: device 1's decoder at ${b0:-?}: $nref refusal line(s), $nmap 'now mapped' line(s) (want 1, 1)"
fi
res() { sed -n "s/^RESULT $1 //p" "$qmp" | head -1; }
sed 's/^/qmp: /' "$qmp" | grep -v '^qmp: RESULT' | diag
if [ "$(res mapped-before)" = 1 ] && [ "$(res device_del)" = ok ] && [ "$(res mapped-after)" = 0 ]; then
	tap OK "QMP: device 1 mapped before device_del, its mapping gone from QEMU's memory tree after"
else
	tap FAIL "QMP: mapped before '$(res mapped-before)', device_del '$(res device_del)', after '$(res mapped-after)'"
fi
echo "# QEMU 10.2.2 emits DEVICE_DELETED and closes the vfio-user socket only when the unplugged device is finalized; seen here: DEVICE_DELETED $(res device_deleted)"
e2e_checks_tap host < <(cxlmem_hostcheck_ctl "$con" "$CXLMEM_TMP/fw.sock.ctl" 2>&1)
nchk=$E2E_NCHECKS
if [ "$nchk" -ge 2 ]; then
	tap OK "host checked $nchk guest writes through the control socket (no --backing, no --trust-client)"
else
	tap FAIL "host checked $nchk guest writes through the control socket (want 2)"
fi
if grep -a -q 'dev1: client disconnected' "$slog"; then
	tap OK "server saw device 1's client disconnect"
else
	tap FAIL "server saw device 1's client disconnect"
fi
e2e_no_protocol_error "$slog" "two devices"
e2e_server_alive "$CXLMEM_SPID" "$slog" "the unplug and the guest's power-off"
spid=$CXLMEM_SPID
tmp=$CXLMEM_TMP
cxlmem_stop
if kill -0 "$spid" 2>/dev/null || [ -e "$tmp" ]; then
	tap FAIL "no process, socket or temp dir of ours left behind (fw boot)"
else
	tap OK "no process, socket or temp dir of ours left behind (fw boot)"
fi
echo "# logs: $CXLMEM_LOGDIR"
e2e_done
