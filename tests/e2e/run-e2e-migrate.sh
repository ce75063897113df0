#!/bin/bash
# SPDX-License-Identifier: BSD-3-Clause
# run-e2e-migrate.sh BUILDDIR - e2e-migrate (issue 23's proof): a running VM with a vcxl
# device moves to another QEMU and vcxl-server with its CXL memory, decoders, registers and
# a job in flight, and nothing is lost; every refusal leaves the source running, intact.
#
# Servers: `vcxl-server --mem-size 512M --decoders 2 --firmware-committed` (device memory a
# sealed memfd: no --backing, no --trust-client), one per QEMU, all with the same options.
# QEMUs: the CXL-aware QEMU (vmm/qemu/ 0009-0019), one command line for all of them (q35,
# cxl=on, a pxb-cxl host bridge, one cxl-rp, a 4 GiB CXL window, the device as vfio-user-pci
# vcxl0; a second serial line on a socket for the host's commands); only the socket paths
# differ, and each destination adds -incoming defer (the restore: -incoming file:).
# Guest: Linux 7.2 (scripts/guest-kernel.sh) with guest-drivers/vcxl_accel, /init =
# init-migrate.sh running tests/e2e/guest/migrate-guest.c. Decoder 0 is committed by the
# VM's firmware (--firmware-committed: QEMU commits and locks it at machine start), because
# the 7.2 kernel's Type-2 API attaches a driver only to a region firmware committed; it is
# what gives the guest its jobs, their interrupts and the region's mapping. The guest checks
# that decoder 0 is committed and locked at its region, writes a 64 MiB seeded pattern into
# CXL memory, sets HDM decoder 1, the RAS masks, PCIe Device Control and 16 KiB of BAR0 RAM,
# (BAR0 and BAR2 through sysfs resource mmaps while the driver owns them: the guest boots with
# iomem=relaxed, its kernel has CONFIG_IO_STRICT_DEVMEM), then runs two threads: back-to-back 128 MiB FILL jobs (each with its own pattern, done by
# MSI-X), and a generation counter rewriting 8 MiB of CXL memory and 8 MiB of RAM.
#
# Synchronisation: the guest says MIG-READY on the console; the host's commands reach it on
# its second serial line (/dev/ttyS1: a chardev socket of whichever QEMU runs the VM, so the
# line moves with the VM), and its answers come on the console of that QEMU. The host never
# writes guest memory. "VERIFY TAG" stops both threads (the job in flight completes, the
# generation ends), checks everything, prints HOSTCHECK lines (device memory the host reads
# back through that QEMU's server's control socket), and starts them again. The migration's
# timing is the host's: the source has pause-before-switchover, so at the switch-over the VM
# is stopped with the device in STOP and the migration waits; the host reads the job
# engine's STATUS through QEMU (BUSY: a job in flight, its JOB_PATTERN), continues only
# when a job is in flight (else migrate_cancel and again with a fresh destination, up to 12
# times; about half of the stops find one) and tells the guest which job it was (VERIFY
# migrated inflight=PATTERN: it must have completed, with its interrupt, on the
# destination). The save to a file is retried the same way.
#
# Order (tests/e2e/migrate.py): a VM whose server does not offer migration (its own VM, no
# guest, behind a relay answering ENOSYS) is refused; then, on the guest's VM:
# migrate_cancel during pre-copy; a destination with another --mem-size (refused, the source
# resumes); a corrupt stream (a relay flips a byte of the device state on its way to the
# destination server: refused, the source resumes; return-path on both sides); a refused
# MIG_DATA_WRITE (a relay answers the first one EIO: vmm/qemu 0023 sends it without waiting,
# the destination still fails, the source resumes); after each,
# the guest verifies everything on the source and the host reads device memory back. The
# live migration, verified on the destination by the guest (pattern, generation, decoders,
# registers, BAR0 RAM, every job with its interrupt, the one in flight) and by the host
# through the destination's control socket. Then the destination VM saved to a file (migrate
# file:), its QEMU and server stopped; restored once behind a relay refusing the device's
# STOP -> RUNNING at the VM's start (vmm/qemu 0034 sends it without waiting: QEMU reports
# it, resets the device, the VM runs); restored onto a server whose memory holds data where
# the guest never wrote (a --backing file, --on-disconnect keep, --trust-client: QEMU must
# clear the zero pages it loads there, vmm/qemu 0038-0039; the live destination's fresh
# memfd is taken as zero, and the source sends the region's holes unread, 0041-0042: neither
# QEMU holds the memory nobody wrote), verified by the guest and the host; restored by a fresh server and QEMU -incoming file:,
# verified the same way, a new job; that VM saved once more behind a relay refusing its
# device's STOP_COPY (the save fails, QEMU reports it and resets the device, the VM runs
# on), power off. Expected: no mismatch anywhere.
# VCXL_E2E_MIGRATE_CONTROLS=0 (by hand, while working on it): without the cancel, mem-size,
# corrupt and refused-write controls (about 25 s instead of 60).
# Skips visibly (TAP "1..0 # SKIP") when the guest kernel or the CXL-aware QEMU cannot be had
# (guest-kernel-lib.sh: VCXL_E2E_BUILD_KERNEL=0; cxlmem-lib.sh: VCXL_QEMU_CXL,
# VCXL_E2E_BUILD_QEMU=0). Logs: BUILDDIR/e2e-migrate/ (figures.json: the measured times).
set -u
E2E_NAME=e2e-migrate
HERE=$(cd "$(dirname "$0")" && pwd)
CXLMEM_BUILD=$(cd "${1:-build}" && pwd)
CXLMEM_LOGDIR="$CXLMEM_BUILD/e2e-migrate"
LOG=$CXLMEM_LOGDIR
MEM_SIZE=512M
OTHER_MEM_SIZE=1G
GUEST_RAM=512M
T0=$(date +%s)
rm -rf "$LOG"
mkdir -p "$LOG"
# shellcheck source=tests/e2e/cxlmem-lib.sh
. "$HERE/cxlmem-lib.sh"
# shellcheck source=tests/e2e/initramfs.sh
. "$HERE/initramfs.sh"
# shellcheck source=tests/e2e/guest-kernel-lib.sh
. "$HERE/guest-kernel-lib.sh"
# shellcheck source=tests/e2e/migrate-lib.sh
. "$HERE/migrate-lib.sh"

trap cxlmem_stop EXIT
trap 'cxlmem_stop; exit 130' INT TERM

SERVER=$CXLMEM_BUILD/src/tools/vcxl-server
[ -x "$SERVER" ] || { echo "Bail out! $SERVER is not built"; exit 1; }
command -v python3 > /dev/null || skip_all "python3 not found (the QMP client)"

# ---- inputs: the 7.2 kernel, the CXL-aware QEMU, the driver, the initramfs ----
e2e_guest_kernel "$LOG/guest-kernel.err" || skip_all "$E2E_GK_WHY"
KDIR=$E2E_GK_DIR
echo "# guest kernel: $KDIR ($(cat "$KDIR/version"))"
cxlmem_qemu || skip_all "no CXL-aware QEMU: $CXLMEM_WHY"
echo "# CXL-aware QEMU: $CXLMEM_QEMU"

migrate_guest "$LOG" "$KDIR" || { echo "Bail out! $MIGRATE_WHY"; exit 1; }
echo "# inputs ready after $(($(date +%s) - T0)) s"

# ---- the source's server, and the one command line every QEMU runs ----
CXLMEM_TMP=$(mktemp -d /tmp/vcxl-migrate.XXXXXX)
SERVER_ARGS=(--mem-size "$MEM_SIZE" --decoders 2 --firmware-committed --log-level debug)
if e2e_server_start "$LOG/src.server.log" "$SERVER" --socket "$CXLMEM_TMP/src.sock" "${SERVER_ARGS[@]}"; then
	CXLMEM_SPID=$E2E_SERVER_PID
	tap OK "source vcxl-server ($MEM_SIZE in a sealed memfd, firmware-committed, 2 decoders) is ready (READY=1)"
else
	tap FAIL "source vcxl-server is ready: $E2E_SERVER_WHY"
	diag < "$LOG/src.server.log"
	e2e_done
	exit 1
fi
migrate_template "$KDIR" "$LOG/initramfs.cpio.gz" "$GUEST_RAM"
TEMPLATE=("${MIGRATE_TEMPLATE[@]}")
SRC=("${TEMPLATE[@]//@SOCK@/$CXLMEM_TMP/src.sock}")
SRC=("${SRC[@]//@QMP@/$CXLMEM_TMP/src.qmp}")
SRC=("${SRC[@]//@TTY@/$CXLMEM_TMP/src.tty}")
printf '%q ' "$CXLMEM_QEMU" "${SRC[@]}" > "$LOG/src.qemu-cmd.log"
echo >> "$LOG/src.qemu-cmd.log"
python3 - "$LOG/config.json" "$CXLMEM_QEMU" "$SERVER" "$CXLMEM_TMP" "$LOG" "$MEM_SIZE" \
	"$OTHER_MEM_SIZE" "$CXLMEM_SPID" "${#SERVER_ARGS[@]}" "${SERVER_ARGS[@]}" "${TEMPLATE[@]}" <<'PY'
import json, sys
out, qemu, server, tmp, log, mem, other, spid, n = sys.argv[1:10]
rest = sys.argv[10:]
json.dump({"qemu": qemu, "server": server, "tmp": tmp, "log": log, "mem_size": mem,
           "other_mem_size": other, "server_args": rest[:int(n)], "template": rest[int(n):],
           "downtime_limit": 2000, "max_bandwidth": 1 << 30,
           "results": log + "/results.txt",
           "src": {"sock": tmp + "/src.sock", "qmp": tmp + "/src.qmp", "tty": tmp + "/src.tty",
                   "console": log + "/src.console.log", "server_pid": int(spid),
                   "server_log": log + "/src.server.log"}},
          open(out, "w"), indent=1)
PY

# ---- the guest's VM, and everything else while it lives (migrate.py) ----
migrate_run() {
	python3 "$HERE/migrate.py" "$LOG/config.json" "$E2E_BOOT_PID" 2> "$LOG/migrate.py.err"
}
e2e_boot --timeout 900 --during migrate_run src "$LOG/src.console.log" "$CXLMEM_QEMU" "${SRC[@]}"
rc=$?
[ -s "$LOG/migrate.py.err" ] && diag < "$LOG/migrate.py.err"
if [ $rc -eq 0 ]; then
	tap OK "the source QEMU ran the guest until it quit after the migration"
else
	tap FAIL "the source QEMU ran the guest until it quit after the migration (rc=$rc)"
	grep -a -i -E 'qemu-system|error|warning|assert|abort' "$LOG/src.console.log" | head -20 | diag
fi

# ---- what the host found, then the guest's checks on each QEMU that ran it ----
e2e_checks_tap host < "$LOG/results.txt"
[ "$E2E_NCHECKS" -gt 0 ] || tap FAIL "host: no results from migrate.py"
e2e_steps_tap "$LOG/src.console.log" "source: "
nsrc=$E2E_NSTEPS
ndst=0
for c in "$LOG"/dst[0-9]*.console.log "$LOG/restore-ondata.console.log" \
	"$LOG/restore.console.log"; do
	[ -s "$c" ] || continue
	n=$(basename "$c" .console.log)
	e2e_steps_tap "$c" "$n: "
	ndst=$((ndst + E2E_NSTEPS))
done
# setup: 6 (module-load, setup-region/-pattern/-decoders/-registers/-bar0-ram); 9 per
# VERIFY, 10 with a job in flight: cancel, mem-size, corrupt, refused-write on the source;
# migrated (10) on the destination; ondata (9 or 10) and restored (9 or 10, + new-job) after
# the restores
want=$((6 + 4 * 9 + 10 + 9 + 10))
[ "${VCXL_E2E_MIGRATE_CONTROLS:-1}" = 0 ] && want=$((want - 4 * 9))
if [ $((nsrc + ndst)) -ge "$want" ]; then
	tap OK "the guest reported all its checks ($nsrc STEP lines on the source, $ndst after the moves)"
else
	tap FAIL "the guest reported all its checks ($nsrc on the source, $ndst after the moves; want $want)"
fi
for l in "$LOG"/*.server.log; do
	n=$(basename "$l" .server.log)
	# restore: its save behind a relay refusing STOP_COPY (migrate.py's
	# save_refused_stop_copy): the MIG_DATA_READ QEMU sent with that change finds
	# the device running (vmm/qemu 0034)
	allow=""
	[ "$n" = restore ] && allow='MIG_DATA_READ id [0-9]+: device state running: nothing to read'
	e2e_no_protocol_error "$l" "$n" "$allow"
done
tmpd=$CXLMEM_TMP
cxlmem_stop
left=""
for p in $E2E_BOOT_ALL_PIDS $E2E_SERVER_PIDS; do kill -0 "$p" 2>/dev/null && left="$left $p"; done
# migrate.py's QEMUs and servers: their command lines name the initramfs or the temp dir
for p in $(pgrep -f "$LOG/initramfs.cpio.gz|$tmpd/" 2>/dev/null); do left="$left $p"; done
if [ -z "$left" ]; then
	tap OK "nothing left running (QEMUs, servers, watchdogs)"
else
	tap FAIL "nothing left running: still$left"
fi
echo "# e2e-migrate: $(($(date +%s) - T0)) s"
e2e_done
