#!/bin/bash
# SPDX-License-Identifier: BSD-3-Clause
# make bench's migration case (issue 23): live migration of a VM with a vcxl device against the
# same VM without it, in one run, each figure the median of 3 migrations (scripts/
# bench-migrate.py): QMP's total time and downtime, the device state's bytes, the source
# server's time in stop-copy, QEMU's RAM stream, VmRSS of QEMU and vcxl-server on both sides.
# Goals (printed with the measured ratio, met or not): downtime <= 1.25x the device-less VM's
# (judged in microseconds, from the checkpoints QEMU's whole-millisecond figure is taken
# between: bench-migrate.py); device state <= 8 MiB plus the pages the device dirtied.
#
#   scripts/bench-migrate.sh BUILD [--if-available]
#
# The VM is e2e-migrate's (tests/e2e/migrate-lib.sh): Linux 7.2 under TCG (one vCPU, no
# -icount: QEMU's times are the host's), 512 MiB of RAM, the device with 512 MiB of device
# memory (--firmware-committed, a sealed memfd), every destination a new QEMU with
# -incoming defer and a new vcxl-server, return-path on, max-bandwidth 1 GiB/s, up to 4
# passes over what the last sync found before the switch-over (migrate-lib.sh); the idle
# VMs with and without the device run side by side and are moved in turn, at downtime-limit
# 20 ms (15 migrations each: the goal; then 7 each with everything on one core), then at
# QEMU's default 300 ms (3 each, printed: bench-migrate.py says why the goal is not judged
# there); then the jobs case alone at the
# default 300 ms too (the pages its jobs write into device memory go with RAM, by DMA logging
# reports). The VM without the device runs the same command line without its -device (and
# vcxl.mode=idle: its guest idles).
# --if-available (what `make bench` passes): only with a CXL-aware QEMU already built
# ($VCXL_QEMU_CXL or a scripts/qemu-build.sh cache entry of the current vmm/qemu/ patches)
# and the 7.2 guest kernel already cached; otherwise say so and exit 0.
# Writes BUILD/bench-migrate.json; logs in BUILD/bench-migrate/.
set -u
HERE=$(cd "$(dirname "$0")" && pwd)
ROOT=$(cd "$HERE/.." && pwd)
CXLMEM_BUILD=$(cd "${1:-build}" && pwd)
IF_AVAILABLE=0
[ "${2:-}" = --if-available ] && IF_AVAILABLE=1
CXLMEM_LOGDIR="$CXLMEM_BUILD/bench-migrate"
LOG=$CXLMEM_LOGDIR
rm -rf "$LOG"
mkdir -p "$LOG"
# shellcheck source=tests/e2e/cxlmem-lib.sh
. "$ROOT/tests/e2e/cxlmem-lib.sh"
# shellcheck source=tests/e2e/initramfs.sh
. "$ROOT/tests/e2e/initramfs.sh"
# shellcheck source=tests/e2e/guest-kernel-lib.sh
. "$ROOT/tests/e2e/guest-kernel-lib.sh"
# shellcheck source=tests/e2e/migrate-lib.sh
. "$ROOT/tests/e2e/migrate-lib.sh"
# a benchmark times by the host's clock (as bench-guest.sh)
E2E_TCG_ARGS=(-accel tcg -smp 1)
TMPD=""
trap '[ -n "$TMPD" ] && rm -rf "$TMPD"' EXIT

if [ $IF_AVAILABLE = 1 ]; then
	if [ -z "${VCXL_QEMU_CXL:-}" ] && ! VCXL_QEMU_CXL=$(cxlmem_cached_qemu); then
		echo "# bench-migrate: skipped (no CXL-aware QEMU built yet: run 'make qemu', then 'make bench')"
		exit 0
	fi
	export VCXL_QEMU_CXL VCXL_E2E_BUILD_KERNEL=0
fi
if ! e2e_guest_kernel "$LOG/guest-kernel.err"; then
	[ $IF_AVAILABLE = 1 ] && echo "# bench-migrate: skipped ($E2E_GK_WHY)" && exit 0
	echo "bench-migrate: $E2E_GK_WHY" >&2
	exit 1
fi
KDIR=$E2E_GK_DIR
cxlmem_qemu || { echo "bench-migrate: no CXL-aware QEMU: $CXLMEM_WHY" >&2; exit 1; }
SERVER=$CXLMEM_BUILD/src/tools/vcxl-server
[ -x "$SERVER" ] || { echo "bench-migrate: build first" >&2; exit 1; }
migrate_guest "$LOG" "$KDIR" || { echo "bench-migrate: $MIGRATE_WHY" >&2; exit 1; }
echo "# bench-migrate: $(nproc) cores, TCG guest (Linux $(cat "$KDIR/version")), QEMU $CXLMEM_QEMU"

TMPD=$(mktemp -d /tmp/vcxl-bench-migrate.XXXXXX)
# QEMU's per-section downtime traces (the device's share of the downtime) and its
# checkpoints (where the downtime goes)
TRACE=(-msg timestamp=on -trace vmstate_downtime_save -trace vmstate_downtime_load
	-trace vmstate_downtime_checkpoint)
migrate_template "$KDIR" "$LOG/initramfs.cpio.gz" 512M
DEV=("${MIGRATE_TEMPLATE[@]}" "${TRACE[@]}")
migrate_template "$KDIR" "$LOG/initramfs.cpio.gz" 512M nodev vcxl.mode=idle
NODEV=("${MIGRATE_TEMPLATE[@]}" "${TRACE[@]}")
python3 - "$LOG/config.json" "$CXLMEM_QEMU" "$SERVER" "$TMPD" "$LOG" "$ROOT/tests/e2e" \
	"$CXLMEM_BUILD/bench-migrate.json" "${#DEV[@]}" "${DEV[@]}" "${NODEV[@]}" <<'PY'
import json, sys
out, qemu, server, tmp, log, e2e, js, n = sys.argv[1:9]
rest = sys.argv[9:]
json.dump({"qemu": qemu, "server": server, "tmp": tmp, "log": log, "e2e_dir": e2e, "json": js,
           "server_args": ["--mem-size", "512M", "--decoders", "2", "--firmware-committed"],
           "template": rest[:int(n)], "template_nodev": rest[int(n):], "runs": 3,
           "runs_downtime": 15, "runs_one_core": 7, "downtime_limit_tight": 20,
           "max_bandwidth": 1 << 30, "downtime_limit_jobs": 300}, open(out, "w"), indent=1)
PY
python3 "$HERE/bench-migrate.py" "$LOG/config.json"
