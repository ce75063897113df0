#!/bin/bash
# SPDX-License-Identifier: BSD-3-Clause
# make demo: the guest's CXL.mem, shown. Starts vcxl-server on the built-in Type-2 model
# (device memory in a --backing file), builds or reuses the CXL-aware QEMU
# (scripts/qemu-build.sh) and the guest (Debian 6.1 kernel + busybox initramfs), boots it, and
# shows from inside the guest the device found, its CXL window, HDM decoder 0 committed and
# memory written and read through the window; then the host's look at device memory.
# A few minutes once QEMU and the guest kernel are cached; the first run builds QEMU (6 to 15
# minutes on 2 cores). Says what is missing when something cannot be built.
#
#   scripts/demo.sh BUILD
set -u
HERE=$(cd "$(dirname "$0")" && pwd)
ROOT=$(cd "$HERE/.." && pwd)
CXLMEM_BUILD=$(cd "${1:-build}" && pwd)
CXLMEM_LOGDIR="$CXLMEM_BUILD/demo"
mkdir -p "$CXLMEM_LOGDIR"
# shellcheck source=tests/e2e/cxlmem-lib.sh
. "$ROOT/tests/e2e/cxlmem-lib.sh"
trap cxlmem_stop EXIT
trap 'cxlmem_stop; exit 130' INT TERM

say() { printf '\n\033[1m== %s\033[0m\n' "$*"; }
missing() {
	printf '\nmake demo: cannot run: %s\n' "$1" >&2
	[ -n "${2:-}" ] && printf '%s\n' "$2" >&2
	exit 1
}

[ -x "$CXLMEM_BUILD/src/tools/vcxl-server" ] ||
	missing "vcxl-server is not built in $CXLMEM_BUILD" "Run 'make' first."

say "1/5 the CXL-aware QEMU (vmm/qemu/ patches on Debian's QEMU 10.2.2)"
echo "building it if it is not cached (scripts/qemu-build.sh; 6 to 15 minutes the first time)..."
t0=$(date +%s)
cxlmem_qemu || missing "no CXL-aware QEMU: $CXLMEM_WHY" \
	"It is built by 'make qemu' (needs 'make deps' and the QEMU source: see docs/qemu.md), or set VCXL_QEMU_CXL=/path/to/qemu-system-x86_64."
echo "QEMU: $CXLMEM_QEMU ($(($(date +%s) - t0)) s)"

say "2/5 the guest: Debian's 6.1 kernel, a busybox initramfs, cxlmem-guest"
cxlmem_guest "$CXLMEM_LOGDIR/guest" > "$CXLMEM_LOGDIR/build-guest.log" 2>&1 ||
	missing "building the guest failed (log: $CXLMEM_LOGDIR/build-guest.log)" \
		"$(grep -a -E 'apt-get|error|cannot' "$CXLMEM_LOGDIR/build-guest.log" | tail -3)
The guest kernel comes from 'apt-get download linux-image-amd64' (network) and the initramfs needs busybox, pciutils and gcc's static libc ('make deps')."
grep -a '^# guest' "$CXLMEM_LOGDIR/build-guest.log" | sed 's/^# //'

say "3/5 vcxl-server on the built-in accelerator model (1 GiB device memory, 2 HDM decoders)"
cxlmem_start_server demo || missing "vcxl-server did not start (log: $CXLMEM_LOGDIR/demo.server.log)"
echo "device memory: $CXLMEM_TMP/devmem.img (the host wrote a known pattern at DPA 0x400000)"
"$CXLMEM_BUILD/src/tools/vcxl" info "$CXLMEM_TMP/vcxl.sock" 2>&1 | grep -E '^(flags|cxl|region (9|10))' | sed 's/^/  /'

say "4/5 the guest (QEMU TCG, the device under a CXL root port, a 4 GiB CXL window)"
cxlmem_boot demo "--demo" &
bootpid=$!
con="$CXLMEM_LOGDIR/demo.console.log"
while [ ! -e "$con" ] && kill -0 "$bootpid" 2>/dev/null; do sleep 0.2; done
tail -n +1 -f --pid="$bootpid" "$con" 2>/dev/null | tr -d '\r' |
	grep --line-buffered -a -E '^(=== (VCXL GUEST START|cxlmem-guest)|STEP|  CFMWS|RESULT|[0-9a-f]{2}:[0-9a-f]{2}\.[0-9] .*0d94)' |
	sed -u -e 's/^STEP \([a-z-]*\): ok /  [guest] \1: /' -e 's/^STEP \([a-z-]*\): FAIL /  [guest] \1 FAILED: /' \
		-e 's/^  CFMWS/  [guest] ACPI CEDT CFMWS/' -e 's/^=== \(.*\) ===.*/  [guest] \1/' \
		-e 's/^\([0-9a-f][0-9a-f]:\)/  [guest] lspci: \1/'
wait "$bootpid"
rc=$?
[ $rc -eq 0 ] || echo "QEMU exited with status $rc (console: $con)"

say "5/5 the host: device memory in $CXLMEM_TMP/devmem.img"
dpa=$(grep -a '^HOSTCHECK mem ' "$con" | head -1 | sed -n 's/.*dpa=\([^ ]*\).*/\1/p')
if [ -n "$dpa" ]; then
	echo "what the guest wrote through its window, read by the host at DPA $dpa:"
	od -A x -t x8 -j "$((dpa))" -N 64 "$CXLMEM_TMP/devmem.img" | sed 's/^/  /'
fi
ok=1
while IFS= read -r line; do
	echo "  $line"
	case "$line" in ok*) ;; *) ok=0 ;; esac
done < <(cxlmem_hostcheck "$con" "$CXLMEM_TMP/devmem.img")
if [ $ok = 1 ] && [ -n "$dpa" ] && grep -a -q '^RESULT: [0-9]* ok, 0 failed' "$con"; then
	say "done: the guest's loads and stores at its committed window are the device's memory"
	exit 0
fi
say "the demo did not go through (console: $con, server: $CXLMEM_LOGDIR/demo.server.log)"
exit 1
