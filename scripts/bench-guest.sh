#!/bin/bash
# SPDX-License-Identifier: BSD-3-Clause
# make bench-guest: from one guest run (Debian 6.1 under TCG, the CXL-aware QEMU), sequential
# write and read bandwidth through vcxl's committed CXL window against guest RAM and against a
# QEMU cxl-type3 window in the same VM (tests/e2e/guest/cxlmem-guest.c --bench: 8-byte
# stores/loads, an untimed first pass, then the median of --reps runs). Prints `name value unit ratio` lines and writes
# BUILD/bench-guest.json.
#
#   scripts/bench-guest.sh BUILD [--if-available]
#
# --if-available (what `make bench` passes): run only when the CXL-aware QEMU is there
# without building it ($VCXL_QEMU_CXL, or a scripts/qemu-build.sh cache entry built from
# the current vmm/qemu/ patches); otherwise say so and exit 0.
# Environment: VCXL_BENCH_GUEST_MIB (bytes per run through RAM and the vcxl window, default
# 128 MiB), VCXL_BENCH_GUEST_T3_MIB (through the cxl-type3 window, default 16 MiB: it is
# emulated, about 10-30 MB/s), VCXL_BENCH_GUEST_REPS (default 9; 3 at most through cxl-type3).
set -u
HERE=$(cd "$(dirname "$0")" && pwd)
ROOT=$(cd "$HERE/.." && pwd)
CXLMEM_BUILD=$(cd "${1:-build}" && pwd)
IF_AVAILABLE=0
[ "${2:-}" = --if-available ] && IF_AVAILABLE=1
CXLMEM_LOGDIR="$CXLMEM_BUILD/bench-guest"
mkdir -p "$CXLMEM_LOGDIR"
# shellcheck source=tests/e2e/cxlmem-lib.sh
. "$ROOT/tests/e2e/cxlmem-lib.sh"
# a benchmark times the guest by the host's clock: no -icount here (lib.sh counts guest time
# in instructions, which would make the MB/s figures the instruction rate's)
E2E_TCG_ARGS=(-accel tcg -smp 1)
trap cxlmem_stop EXIT
trap 'cxlmem_stop; exit 130' INT TERM

if [ $IF_AVAILABLE = 1 ] && [ -z "${VCXL_QEMU_CXL:-}" ]; then
	if ! VCXL_QEMU_CXL=$(cxlmem_cached_qemu); then
		echo "# bench-guest: skipped (no CXL-aware QEMU built yet: run 'make qemu', then 'make bench-guest')"
		exit 0
	fi
	export VCXL_QEMU_CXL
fi
if ! cxlmem_qemu; then
	echo "bench-guest: no CXL-aware QEMU: $CXLMEM_WHY" >&2
	exit 1
fi
[ -x "$CXLMEM_BUILD/src/tools/vcxl-server" ] || { echo "bench-guest: build first" >&2; exit 1; }
cxlmem_guest "$CXLMEM_LOGDIR/guest" > "$CXLMEM_LOGDIR/build-guest.log" 2>&1 || {
	cat "$CXLMEM_LOGDIR/build-guest.log" >&2
	echo "bench-guest: building the guest failed" >&2
	exit 1
}
MIB=${VCXL_BENCH_GUEST_MIB:-128}
T3MIB=${VCXL_BENCH_GUEST_T3_MIB:-16}
REPS=${VCXL_BENCH_GUEST_REPS:-9}
echo "# bench-guest: $(nproc) cores, TCG guest (Debian $(cat "${VCXL_E2E_CACHE:-$HOME/.cache/vcxl-e2e}/kver" 2>/dev/null)), QEMU $CXLMEM_QEMU"
cxlmem_start_server bench || { echo "bench-guest: vcxl-server did not start" >&2; exit 1; }
t0=$(date +%s)
cxlmem_boot bench "--bench,--mib,$MIB,--t3-mib,$T3MIB,--reps,$REPS" t3
rc=$?
con="$CXLMEM_LOGDIR/bench.console.log"
echo "# guest run: $(($(date +%s) - t0)) s, QEMU rc=$rc (console: $con)"
if ! grep -a -q '^BENCH vcxl read' "$con"; then
	grep -a -E '^(STEP|BENCH|RESULT)' "$con" >&2
	echo "bench-guest: the guest measured nothing" >&2
	exit 1
fi
tr -d '\r' < "$con" | python3 -c '
import json, re, sys
b, notes = {}, []
for line in sys.stdin:
    m = re.match(r"BENCH (\w+) (write|read) ([0-9.]+) (\d+) min ([0-9.]+) max ([0-9.]+)", line)
    if m:
        b[(m[1], m[2])] = dict(median=float(m[3]), bytes=int(m[4]), min=float(m[5]), max=float(m[6]))
    elif line.startswith("BENCH type3 skip"):
        notes.append(line.strip())
out = []
def row(name, what, op, base=None, goal=""):
    v = b.get((what, op))
    if not v:
        return
    ratio = ""
    if base and b.get((base, op)):
        ratio = "%.3g" % (v["median"] / b[(base, op)]["median"])
    print("%-34s %10.1f MB/s  %-8s (min %.1f, max %.1f, %d MiB/run)%s" % (
        name, v["median"], ratio, v["min"], v["max"], v["bytes"] >> 20, goal))
    out.append(dict(name=name, unit="MB/s", ratio_base=base, ratio=float(ratio) if ratio else None, **v))
for op in ("write", "read"):
    row("guest_ram_seq_%s" % op, "ram", op)
    row("guest_vcxl_window_seq_%s" % op, "vcxl", op, "ram", "  vs guest RAM, goal >= 0.8")
    row("guest_type3_window_seq_%s" % op, "type3", op)
    if b.get(("vcxl", op)) and b.get(("type3", op)):
        r = b[("vcxl", op)]["median"] / b[("type3", op)]["median"]
        print("%-34s %10.1fx %-8s (vcxl window / QEMU cxl-type3 window, expect >= 10x)" % (
            "guest_vcxl_vs_type3_%s" % op, r, ""))
        out.append(dict(name="guest_vcxl_vs_type3_%s" % op, unit="x", ratio=r))
for n in notes:
    print("# " + n)
json.dump(out, open(sys.argv[1], "w"), indent=1)
' "$CXLMEM_BUILD/bench-guest.json"
echo "# written: $CXLMEM_BUILD/bench-guest.json"
