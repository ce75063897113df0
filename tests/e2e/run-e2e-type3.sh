#!/bin/bash
# SPDX-License-Identifier: BSD-3-Clause
# run-e2e-type3.sh BUILDDIR - e2e-type3: a stock Linux CXL stack on vcxl's Type-3 model.
#
# Host: `vcxl-server --model type3` (256 MiB, one decoder) and QEMU 10.2 (TCG, shared memfd
# guest RAM) with q35,cxl=on, a pxb-cxl host bridge, two cxl-rp (the second empty), a 4 GiB
# CFMWS window and the vcxl device as vfio-user-pci on rp0. Guest: Debian's 6.12 kernel
# (creates RAM regions; 6.1 does not), busybox, ndctl's `cxl`; /init is init-type3.sh:
# cxl_acpi/cxl_pci/cxl_mem enumerate the memdev, `cxl list -vvv` (kept in the log),
# `cxl create-region -t ram`, `cxl destroy-region`. Here: every guest step passed, the
# server logged the guest's virtual decoder commit with the region's base and size and
# then its decommit, no protocol error, the host decoder unchanged, a clean SIGTERM exit.
# Output is TAP; "SKIP e2e-type3: ..." without QEMU 10.2 or when the kernel or ndctl
# cannot be fetched.
#
# run-e2e-type3.sh BUILDDIR kmem (meson test e2e-type3-mem): the same stack with the
# CXL-aware QEMU (vmm/qemu/, scripts/qemu-build.sh via cxlmem-lib.sh; "SKIP e2e-type3-mem:
# ..." when it cannot be had), a NUMA guest (SRAT, so the CFMWS gets a node of its own) and
# device memory in a --backing file: the region is not destroyed but onlined as system
# RAM through dax kmem (init-type3.sh vcxl.kmem=1), the new node must have the region's
# size, tests/e2e/guest/numa-guest.c allocates 200 MiB on it (mbind), writes and verifies
# it, and here every one of its pages is found in the backing file.
#
# run-e2e-type3.sh BUILDDIR kmem 7.2 (meson test e2e-type3-7.2): e2e-type3-mem on Linux 7.2,
# the e2e suites' one guest kernel (scripts/guest-kernel.sh: Debian sid's linux-source-7.2
# with cxl_acpi, cxl_pci, cxl_port, cxl_mem, regions, dax_cxl, device_dax and kmem built in;
# "SKIP e2e-type3-7.2: ..." when it cannot be had: guest-kernel-lib.sh). Nothing is
# modprobe'd (init-type3.sh skips what the kernel has) and the initramfs has no module tree;
# same steps, same checks. (Without kmem: NAME e2e-type3-7.2-destroy, not a meson test.)
# What the stock stack does differently on 7.2.13 than on Debian's 6.12 (both with ndctl
# 76.1; seen in these tests' console logs, the 7.2 one also with
# VCXL_E2E_T3_APPEND='dyndbg="file drivers/cxl/* +p" vcxl.dmesg=all'):
#  - ports: a host bridge port lists only the dports an endpoint has attached below
#    (`cxl list`: port1 nr_dports 1, 0c:00.0; 6.12: 2, the empty root port 0c:01.0 too):
#    7.2 adds a dport, and maps the port's component registers, when cxl_mem attaches the
#    first endpoint under it, not when cxl_acpi adds the port.
#  - sysfs: regionN has a new `locked` attribute; the memdev's, the endpoint decoder's and
#    the root decoder's attributes are the same (init-type3.sh's "sysfs" section lists them).
#  - region creation: the same requirements and ABI. ndctl 76.1's `cxl create-region -t ram`
#    still says "region type 'ram' not supported yet" (exit 0), so the region is made through
#    sysfs (create_ram_region, interleave_*, size, the decoder's mode and dpa_size, target0,
#    commit) and enabled with `cxl enable-region`; the commit still needs a CPU that can
#    invalidate caches by range (-cpu ...,-hypervisor below: cxl_region_invalidate_memregion).
#  - dax: both kernels bind the region's dax0.0 to kmem by themselves (dax_cxl marks it
#    IORESOURCE_DAX_KMEM); the region's two 128 MiB blocks come up online_movable on node 1.
#  - vcxl's device: 7.2's core, with its debug messages on, reports no disagreement
#    ("Unknown CM cap ID: 4" is the Link capability the core does not use; CEL opcodes
#    "unsupported by driver" are the core's own list; "Failed to retrieve ep perf
#    coordinates" is the platform's: QEMU gives the host bridge no generic port in the SRAT).
#
# Environment: VCXL_QEMU, VCXL_E2E_TIMEOUT (s, default 400), VCXL_E2E_SILENCE (s without
# console output before the boot is killed and retried once, 90: lib.sh), VCXL_E2E_T3_KVER (default:
# the newest linux-image-6.12.*+deb12-amd64-unsigned apt knows), VCXL_E2E_T3_CACHE
# (~/.cache/vcxl-e2e-t3), VCXL_E2E_T3_APPEND (added to the kernel command line),
# VCXL_E2E_BUILD_KERNEL=0 (7.2: use that kernel only if already built).
# Logs: BUILDDIR/NAME/{console,server,qemu-cmd}.log (NAME: e2e-type3, e2e-type3-mem, e2e-type3-7.2).
set -u
HERE=$(cd "$(dirname "$0")" && pwd)
. "$HERE/initramfs.sh"
# shellcheck source=tests/e2e/lib.sh
. "$HERE/lib.sh"
# shellcheck source=tests/e2e/guest-kernel-lib.sh
. "$HERE/guest-kernel-lib.sh"
BUILD=$(cd "${1:-build}" && pwd)
MODE=${2:-}
KERNEL=${3:-6.12}
case "$KERNEL" in 6.12 | 7.2) ;; *) echo "Bail out! kernel '$KERNEL': 6.12 or 7.2"; exit 1 ;; esac
NAME=e2e-type3
[ "$MODE" = kmem ] && NAME=e2e-type3-mem
[ "$KERNEL" = 7.2 ] && NAME=e2e-type3-7.2
[ "$KERNEL" = 7.2 ] && [ "$MODE" != kmem ] && NAME=e2e-type3-7.2-destroy
E2E_NAME=$NAME
NUMA_MIB=200
LOG=$BUILD/$NAME
TMO=${VCXL_E2E_TIMEOUT:-400}
CACHE=${VCXL_E2E_T3_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/vcxl-e2e-t3}
SERVER=$BUILD/src/tools/vcxl-server
mkdir -p "$LOG" "$CACHE/debs"

SPID=""
TMP=""
cleanup() {
	e2e_boot_stop
	[ -n "$SPID" ] && e2e_server_stop "$SPID"
	[ -n "$TMP" ] && rm -rf "$TMP"
	SPID=""
	TMP=""
}
trap cleanup EXIT
trap 'cleanup; exit 130' INT TERM

[ -x "$SERVER" ] || { echo "Bail out! $SERVER is not built"; exit 1; }

# ---- QEMU 10.2 with vfio-user-pci (qemu-find.sh), checked for the version ----
if [ "$MODE" = kmem ]; then
	# shellcheck source=tests/e2e/cxlmem-lib.sh
	. "$HERE/cxlmem-lib.sh"
	cxlmem_qemu || skip_all "no CXL-aware QEMU: $CXLMEM_WHY"
	QEMU=$CXLMEM_QEMU
else
	QEMU=$("$HERE/qemu-find.sh" 2>/dev/null) || skip_all "no QEMU with vfio-user-pci (set VCXL_QEMU)"
fi
"$QEMU" --version 2>/dev/null | head -1 |
	grep -qE 'version (10\.([2-9]|[1-9][0-9])|1[1-9]|[2-9][0-9])\.' ||
	skip_all "$QEMU is not QEMU >= 10.2 ($("$QEMU" --version | head -1))"
echo "# QEMU: $QEMU ($("$QEMU" --version | head -1))"

# ---- the guest kernel: sets KIMG and KVER (a description for the log) ----
# Debian's 6.12: downloaded, extracted, never installed
kernel_612() {
	KVER=${VCXL_E2E_T3_KVER:-}
	[ -n "$KVER" ] || KVER=$(cat "$CACHE/kver" 2>/dev/null || true)
	if [ -z "$KVER" ]; then
		KVER=$(apt-cache search --names-only '^linux-image-6\.12\.[0-9]+\+deb[0-9]+-amd64-unsigned$' \
			2>/dev/null | sed -n 's/^linux-image-\(6\.12\.[^ ]*-amd64\)-unsigned .*/\1/p' |
			sort -V | tail -1)
	fi
	[ -n "$KVER" ] || skip_all "cannot find a 6.12 guest kernel (apt-cache search linux-image-6.12)"
	KPKG=linux-image-$KVER-unsigned
	KROOT=$CACHE/kroot-$KVER
	if [ ! -f "$KROOT/boot/vmlinuz-$KVER" ]; then
		ls "$CACHE"/debs/"$KPKG"_*.deb >/dev/null 2>&1 ||
			(cd "$CACHE/debs" && apt-get download -q "$KPKG" > /dev/null 2>&1) ||
			skip_all "cannot fetch the guest kernel (apt-get download $KPKG)"
		rm -rf "$KROOT"
		dpkg-deb -x "$CACHE"/debs/"$KPKG"_*.deb "$KROOT" || skip_all "dpkg-deb -x $KPKG failed"
	fi
	echo "$KVER" > "$CACHE/kver"
	KIMG=$KROOT/boot/vmlinuz-$KVER
}
# the e2e suites' Linux 7.2 (scripts/guest-kernel.sh, built once per machine by make e2e-prep;
# VCXL_E2E_BUILD_KERNEL=0: only if already built)
kernel_72() {
	e2e_guest_kernel "$LOG/guest-kernel.err" || skip_all "$E2E_GK_WHY"
	KIMG=$E2E_GK_DIR/bzImage
	KVER="$(cat "$E2E_GK_DIR/version" 2>/dev/null) built in $E2E_GK_DIR"
}
if [ "$KERNEL" = 7.2 ]; then kernel_72; else kernel_612; fi
echo "# guest kernel: $KVER"

# ---- ndctl's cxl and its libraries (the .debs, extracted) ----
NDPKGS="ndctl libcxl1 libdaxctl1 libndctl6 libiniparser1 libtraceevent1 libtracefs1"
NDROOT=$CACHE/ndctl-root
if [ ! -x "$NDROOT/usr/bin/cxl" ]; then
	for p in $NDPKGS; do
		ls "$CACHE"/debs/"${p}"_*.deb >/dev/null 2>&1 ||
			(cd "$CACHE/debs" && apt-get download -q "$p" > /dev/null 2>&1) ||
			skip_all "cannot fetch $p (apt-get download)"
	done
	rm -rf "$NDROOT"
	for p in $NDPKGS; do
		dpkg-deb -x "$CACHE"/debs/"${p}"_*.deb "$NDROOT" || skip_all "dpkg-deb -x $p failed"
	done
fi
[ -x "$NDROOT/usr/bin/cxl" ] || skip_all "the ndctl package has no /usr/bin/cxl"

# ---- initramfs: base (busybox, lspci, cxl, modules; cached) + overlay (/init) ----
BASE=$CACHE/base-t3-$KVER.cpio.gz
T3MODS="cxl_acpi cxl_pci cxl_mem dax_cxl device_dax"
if [ "$MODE" = kmem ]; then
	BASE=$CACHE/base-t3mem-$KVER.cpio.gz
	T3MODS="$T3MODS kmem"
fi
# 7.2: everything is built in, no module tree in the initramfs
[ "$KERNEL" = 7.2 ] && BASE=$CACHE/base-t3-nomod.cpio.gz T3MODS=""
copy_libs() { # copy_libs STAGING BINARY: its shared libraries, from the ndctl root first
	LD_LIBRARY_PATH="$NDROOT/usr/lib/x86_64-linux-gnu:$NDROOT/lib/x86_64-linux-gnu" ird_libs "$1" "$2"
}
build_base() {
	local S=$CACHE/base-t3.staging
	rm -rf "$S"
	ird_busybox "$S"
	mkdir -p "$S"/usr/share/misc "$S"/usr/share/hwdata
	rm -f "$S/bin/lspci"
	install -m 0755 /usr/bin/lspci "$S/usr/bin/lspci"
	copy_libs "$S" /usr/bin/lspci
	cp /usr/share/misc/pci.ids "$S/usr/share/misc/pci.ids"
	ln -sf ../misc/pci.ids "$S/usr/share/hwdata/pci.ids"
	install -m 0755 "$NDROOT/usr/bin/cxl" "$S/usr/bin/cxl"
	copy_libs "$S" "$NDROOT/usr/bin/cxl"
	# shellcheck disable=SC2086 # a list of module names
	[ -z "$T3MODS" ] || ird_modules "$S" "$KROOT" "$KVER" $T3MODS
	ird_pack "$S" "$BASE"
	rm -rf "$S"
}
[ -s "$BASE" ] || build_base > "$LOG/build-base.log" 2>&1
[ -s "$BASE" ] || { echo "Bail out! base initramfs (see $LOG/build-base.log)"; exit 1; }
O=$LOG/overlay.staging
rm -rf "$O"
mkdir -p "$O"
ird_init_lib "$O"
install -m 0755 "$HERE/init-type3.sh" "$O/init"
if [ "$MODE" = kmem ]; then
	mkdir -p "$O/bin"
	${GUEST_CC:-gcc} -static -O2 -std=gnu11 -Wall -Wextra -Werror -o "$O/bin/numa-guest" \
		"$HERE/guest/numa-guest.c" || { echo "Bail out! numa-guest does not build"; exit 1; }
fi
ird_pack "$O" "$LOG/overlay.cpio.gz"
rm -rf "$O"
cat "$BASE" "$LOG/overlay.cpio.gz" > "$LOG/initramfs.cpio.gz"

# ---- the boot ----
TMP=$(mktemp -d /tmp/vcxl-e2e-t3.XXXXXX)
SOCK=$TMP/vcxl.sock
CON=$LOG/console.log
SLOG=$LOG/server.log
BACKING=()
# --trust-client: the region's fd is the backing file itself (see cxlmem-lib.sh)
# --on-disconnect keep: the host reads what the guest left (the default zeroes it)
[ "$MODE" = kmem ] && BACKING=(--backing "$TMP/devmem.img" --trust-client --on-disconnect keep)
if e2e_server_start "$SLOG" "$SERVER" --model type3 --socket "$SOCK" --mem-size 256M \
	--decoders 1 --log-level debug "${BACKING[@]}"; then
	SPID=$E2E_SERVER_PID
	tap 1 "vcxl-server --model type3 is ready (READY=1)"
else
	SPID=$E2E_SERVER_PID
	tap 0 "vcxl-server --model type3 is ready: $E2E_SERVER_WHY"
	diag < "$SLOG"
	e2e_done
	exit 1
fi
DEV="{\"driver\":\"vfio-user-pci\",\"socket\":{\"type\":\"unix\",\"path\":\"$SOCK\"},"
DEV="$DEV\"id\":\"vcxl0\",\"bus\":\"rp0\"}"
# -hypervisor: Linux commits a CXL region only when it can invalidate CPU caches by
# address range, which x86 assumes it cannot under a hypervisor (CPUID.1:ECX[31]; the
# region's commit then fails with "Failed to synchronize CPU cache state" unless the
# kernel has CONFIG_CXL_REGION_INVALIDATION_TEST, which Debian's has not). Under TCG
# the WBINVD it then issues is harmless.
# kmem: guest RAM as NUMA node 0 (an SRAT), so Linux gives the CFMWS window a node of its own
# shellcheck disable=SC2054
MACHINE=(-machine q35,cxl=on,memory-backend=ram0)
APPEND=""
if [ "$MODE" = kmem ]; then
	# shellcheck disable=SC2054
	MACHINE=(-machine q35,cxl=on -numa node,nodeid=0,memdev=ram0)
	APPEND="vcxl.kmem=1 vcxl.numa_mib=$NUMA_MIB memhp_default_state=online_movable"
fi
# shellcheck disable=SC2054 # commas separate QEMU suboptions
ARGS=(-L /usr/share/seabios -L /usr/share/qemu -nodefaults "${E2E_TCG_ARGS[@]}"
	-object memory-backend-memfd,id=ram0,size=1G,share=on -m 1G
	-cpu qemu64,-hypervisor
	"${MACHINE[@]}"
	-device pxb-cxl,bus_nr=12,bus=pcie.0,id=cxl.1
	-device cxl-rp,port=0,bus=cxl.1,id=rp0,chassis=0,slot=2
	-device cxl-rp,port=1,bus=cxl.1,id=rp1,chassis=0,slot=3
	-device "$DEV"
	-M cxl-fmw.0.targets.0=cxl.1,cxl-fmw.0.size=4G
	-nographic -serial stdio -monitor none -no-reboot -nic none
	-kernel "$KIMG" -initrd "$LOG/initramfs.cpio.gz"
	-append "$E2E_KERNEL_ARGS $APPEND ${VCXL_E2E_T3_APPEND:-}")
printf '%q ' "$QEMU" "${ARGS[@]}" > "$LOG/qemu-cmd.log"
echo >> "$LOG/qemu-cmd.log"
e2e_boot --timeout "$TMO" "$NAME" "$CON" "$QEMU" "${ARGS[@]}"
rc=$?
echo "# QEMU exited rc=$rc after $E2E_BOOT_SECS s"
tap "$([ $rc -eq 0 ] && echo 1 || echo 0)" "QEMU ran and exited cleanly (rc=$rc)"
if grep -a -q '=== VCXL T3 GUEST DONE ===' "$CON"; then
	tap 1 "guest init completed"
else
	tap 0 "guest init completed"
	tail -40 "$CON" | diag
fi

# the guest's `cxl list -vvv`, into the test log
echo "# guest: cxl list -vvv"
sed -n '/^=== cxl list -vvv ===/,/^=== end cxl list -vvv ===/p' "$CON" | tr -d '\r' |
	grep -a -v '^===' | diag
echo "# guest: cxl list -vvv -r REGION (after create-region)"
sed -n '/^=== cxl list -vvv (region) ===/,/^=== end cxl list -vvv (region) ===/p' "$CON" |
	tr -d '\r' | grep -a -v '^===' | diag

# every guest step is a test point; at least these must have run
want="memdev endpoint cxl-list cxl-list-decoders create-region region-committed destroy-region"
[ "$MODE" = kmem ] && want="memdev endpoint cxl-list cxl-list-decoders create-region region-committed
	dax-device kmem numa-node numa-mbind numa-write-verify numa-placement"
e2e_steps_tap "$CON" "" T3STEP
seen=$E2E_STEPS_SEEN
for w in $want; do
	case " $seen " in *" $w "*) ;; *) tap 0 "guest step $w ran" ;; esac
done

# the server's view of its virtual decoder: the guest's base and size, committed, then decommitted
fact() { grep -a "^T3FACT $1" "$CON" | tail -1 | tr -d '\r' | tr ' ' '\n' | sed -n "s/^$2=//p"; }
RBASE=$(fact region base)
RSIZE=$(fact region size)
if [ -n "$RBASE" ] && [ -n "$RSIZE" ]; then
	b=$(printf '0x%x' "$RBASE")
	s=$(printf '0x%x' "$RSIZE")
	if grep -a -q "dev0: guest decoder 0 committed base $b size $s " "$SLOG"; then
		tap 1 "server: guest decoder 0 committed base $b size $s (the guest's region)"
	else
		tap 0 "server: guest decoder 0 committed base $b size $s (the guest's region)"
		grep -a 'guest decoder' "$SLOG" | diag
	fi
	if [ "$MODE" = kmem ]; then
		: # the region stays committed: its memory is the guest's system RAM
	elif grep -a -q "dev0: guest decoder 0 decommitted base $b size $s " "$SLOG"; then
		tap 1 "server: guest decoder 0 decommitted after cxl destroy-region"
	else
		tap 0 "server: guest decoder 0 decommitted after cxl destroy-region"
		grep -a 'guest decoder' "$SLOG" | diag
	fi
else
	tap 0 "server: guest decoder commit matches the guest's region (no region facts)"
fi
grep -a 'guest decoder\|host region' "$SLOG" | diag
# kmem: numa-guest's pages are in device memory (the backing file), wherever they landed
if [ "$MODE" = kmem ]; then
	np=$(grep -a '^NUMA pages=' "$CON" | tr -d '\r' | sed -n 's/.*pages=\([0-9]*\).*/\1/p')
	if [ -z "$np" ]; then
		tap 0 "host: numa-guest's pages in device memory (the guest reported none)"
	else
		found=$(python3 - "$TMP/devmem.img" <<'PY'
import struct, sys
TAG, QW = 0x4e554d41434d454d, 512
seen = set()
with open(sys.argv[1], "rb") as f:
    while True:
        page = f.read(4096)
        if len(page) < 4096:
            break
        q = struct.unpack("<512Q", page)
        pg = q[0] ^ TAG
        if pg >= 1 << 32 or pg in seen:
            continue
        if all(q[i] == (TAG + pg * QW + i) & (2**64 - 1) for i in range(1, QW)):
            seen.add(pg)
print(len(seen))
PY
)
		if [ "$found" = "$np" ]; then
			tap 1 "host: all $np pages numa-guest wrote on the CXL node are in the device's memory (--backing file)"
		else
			tap 0 "host: $found of the $np pages numa-guest wrote on the CXL node are in the device's memory"
		fi
	fi
	grep -a -E '^T3FACT (dax|node)' "$CON" | tr -d '\r' | diag
fi
e2e_no_protocol_error "$SLOG"
if [ -n "$SPID" ] && kill -0 "$SPID" 2>/dev/null; then
	e2e_server_stop "$SPID"
	src=$E2E_SERVER_RC
	SPID=""
	tap "$([ $src -eq 0 ] && echo 1 || echo 0)" "vcxl-server exits on SIGTERM (rc=$src)"
else
	SPID=""
	tap 0 "vcxl-server still running after the guest powered off"
fi
if grep -a -q 'host decoder 0 verified unchanged' "$SLOG"; then
	tap 1 "host physical decoder unchanged by the guest"
else
	tap 0 "host physical decoder unchanged by the guest"
	tail -5 "$SLOG" | diag
fi
if [ "$E2E_NFAIL" -ne 0 ]; then
	echo "# guest dmesg (cxl):"
	sed -n '/^=== dmesg (cxl) ===/,/^=== VCXL T3 GUEST DONE/p' "$CON" | tr -d '\r' | diag
fi
cleanup
echo "# logs: $LOG"
e2e_done
