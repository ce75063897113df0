#!/bin/bash
# SPDX-License-Identifier: BSD-3-Clause
# run-hw.sh BUILDDIR - e2e-hw: the VFIO backend on QEMU's emulated CXL device.
#
# Outside: QEMU 10.2 (TCG) q35,cxl=on + intel-iommu, a pxb-cxl host bridge with
# root port rp0 holding a volatile cxl-type3 (backed by a file here), optionally
# a second empty root port, and one CFMWS window. Inside: Debian's 6.1 kernel,
# busybox; the guest binds the device to vfio-pci, runs vcxl-hw-serve (the VFIO
# backend + host window + vfio-cxl core + server library) and the vcxl CLI
# (info, lspci, commit, hdm, memtest). Here: every STEP passed, the decoders read
# back as the host core / host bridge code left them (and cleared at the end),
# and the bytes memtest wrote are in the memory-backend file at the DPA the
# decoders map. Output is TAP; "SKIP e2e-hw: ..." when no QEMU 10.2 is found.
#
# Boots: "2rp" (a host bridge with a decoder to program) and "1rp" (a pass-through
# host bridge) on Debian's 6.1, where VFIO has only the group/container interface
# (--iommu auto must end up on "group"); "iommufd" (2rp) on a kernel with VFIO's
# cdev + iommufd, which no Debian 12 kernel has: the e2e suites' one guest kernel,
# Linux 7.2 from Debian sid's linux-source-7.2 (scripts/guest-kernel.sh: built once per
# machine, cached, by `make e2e-prep` before the tests), and both vcxl programs run
# with --iommu iommufd. That kernel has the whole CXL stack built in, so its guest
# unbinds cxl_acpi from ACPI0017 (init.sh) where 6.1's never loads the module: the CFMWS
# window and the host bridge registers are then unclaimed, as docs/hardware.md asks.
#
# Environment: VCXL_QEMU, VCXL_E2E_HW_BOOTS (default "2rp 1rp iommufd dax"),
# VCXL_E2E_IOMMUFD_KERNEL (a bzImage to use instead of the 7.2 guest kernel),
# VCXL_E2E_BUILD_KERNEL=0 (use the 7.2 guest kernel only if it is already built, else skip
# the iommufd boot visibly), VCXL_GUEST_KERNEL_CACHE (guest-kernel.sh's cache,
# ~/.cache/vcxl-guest-kernel), VCXL_E2E_TIMEOUT (s, 400),
# VCXL_E2E_SILENCE (s without console output before a boot is killed and retried once, 90;
# tests/e2e/lib.sh),
# VCXL_E2E_CACHE (kernel cache shared with e2e-qemu, ~/.cache/vcxl-e2e),
# VCXL_E2E_HW_CACHE (~/.cache/vcxl-e2e-hw). Logs: BUILDDIR/e2e-hw/.
set -u
E2E_NAME=e2e-hw
HERE=$(cd "$(dirname "$0")" && pwd)
SRC=$(cd "$HERE/../../.." && pwd)
. "$HERE/../initramfs.sh"
# shellcheck source=tests/e2e/lib.sh
. "$HERE/../lib.sh"
# shellcheck source=tests/e2e/guest-kernel-lib.sh
. "$HERE/../guest-kernel-lib.sh"
BUILD=$(cd "${1:-build}" && pwd)
LOG=$BUILD/e2e-hw
BOOTS=${VCXL_E2E_HW_BOOTS:-2rp 1rp iommufd dax}
TMO=${VCXL_E2E_TIMEOUT:-400}
KCACHE=${VCXL_E2E_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/vcxl-e2e}
CACHE=${VCXL_E2E_HW_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/vcxl-e2e-hw}
mkdir -p "$LOG" "$CACHE"

TMP=""
cleanup() {
	e2e_boot_stop
	[ -n "$TMP" ] && rm -rf "$TMP"
	TMP=""
}
trap cleanup EXIT
trap 'cleanup; exit 130' INT TERM

# ---- QEMU 10.2 (volatile cxl-type3): VCXL_QEMU, PATH, the bundled one, make qemu's ----
qemu_ok() {
	[ -x "$1" ] || return 1
	"$1" --version 2>/dev/null | head -1 | grep -qE 'version (10\.([2-9]|[1-9][0-9])|1[1-9]|[2-9][0-9])\.' &&
		"$1" -nodefaults -machine none -device cxl-type3,help 2>/dev/null | grep -q volatile-memdev
}
QEMU=""
if [ -n "${VCXL_QEMU:-}" ]; then
	qemu_ok "$VCXL_QEMU" && QEMU=$VCXL_QEMU || skip_all "VCXL_QEMU=$VCXL_QEMU is not QEMU >= 10.2 with cxl-type3"
fi
if [ -z "$QEMU" ]; then
	q=$(command -v qemu-system-x86_64 2>/dev/null || true)
	[ -n "$q" ] && qemu_ok "$q" && QEMU=$q
fi
# the bundled 10.2.2, else make qemu's (tests/e2e/qemu-find.sh)
if [ -z "$QEMU" ]; then
	q=$("$HERE/../qemu-find.sh" 2>/dev/null)
	[ -n "$q" ] && qemu_ok "$q" && QEMU=$q
fi
[ -n "$QEMU" ] || skip_all "no QEMU 10.2 (set VCXL_QEMU, ../shared/tools/qemu/install.sh or make qemu)"
echo "# QEMU: $QEMU ($("$QEMU" --version | head -1))"

# ---- guest kernel (shared cache with e2e-qemu, else our own download) ----
KVER=$(cat "$KCACHE/kver" 2>/dev/null || cat "$CACHE/kver" 2>/dev/null || true)
[ -n "$KVER" ] || KVER=$(apt-cache depends linux-image-amd64 2>/dev/null |
	sed -n 's/.*Depends: linux-image-\([0-9.]*-[0-9]*-amd64\)$/\1/p' | head -1)
[ -n "$KVER" ] || skip_all "cannot find a guest kernel version (apt-cache)"
KROOT=$KCACHE/kroot
if [ ! -f "$KROOT/boot/vmlinuz-$KVER" ]; then
	KROOT=$CACHE/kroot
	if [ ! -f "$KROOT/boot/vmlinuz-$KVER" ]; then
		mkdir -p "$CACHE/debs"
		ls "$CACHE"/debs/linux-image-"$KVER"_*.deb >/dev/null 2>&1 ||
			(cd "$CACHE/debs" && apt-get download -q "linux-image-$KVER" >/dev/null 2>&1) ||
			skip_all "cannot fetch the guest kernel (apt-get download linux-image-$KVER)"
		rm -rf "$KROOT"
		dpkg-deb -x "$CACHE"/debs/linux-image-"$KVER"_*.deb "$KROOT" || skip_all "dpkg-deb failed"
	fi
fi
echo "$KVER" > "$CACHE/kver"
echo "# guest kernel: $KVER ($KROOT)"

# ---- initramfs: base (busybox + modules, cached) + overlay (ours, every run) ----
MODS="cxl_pci vfio vfio_pci vfio_pci_core vfio_iommu_type1 vfio_virqfd irqbypass dax_hmem device_dax"
BASE=$CACHE/base-$KVER-$(echo "$MODS" | sha256sum | cut -c1-8).cpio.gz
BASE_NOMOD=$CACHE/base-nomod.cpio.gz # busybox only, for the 7.2 kernel (all built in)
build_base() { # build_base OUT [modules: yes|no]
	local S=$CACHE/base.staging
	rm -rf "$S"
	ird_busybox "$S"
	[ "${2:-yes}" = no ] || ird_modules "$S" "$KROOT" "$KVER" $MODS
	ird_pack "$S" "$1"
	rm -rf "$S"
}
[ -s "$BASE" ] || build_base "$BASE" > "$LOG/build-base.log" 2>&1
[ -s "$BASE" ] || { echo "Bail out! base initramfs (see $LOG/build-base.log)"; exit 1; }
[ -s "$BASE_NOMOD" ] || build_base "$BASE_NOMOD" no >> "$LOG/build-base.log" 2>&1

O=$LOG/overlay.staging
rm -rf "$O"
mkdir -p "$O/bin" "$O/usr/bin" "$O/lib/x86_64-linux-gnu" "$O/lib64"
ird_init_lib "$O"
# static programs against this build's libvcxl: the driver (backend + server library,
# with register read-backs), the real server for the --backend vfio session, the DMA
# check client and the --region-dax test's "firmware"
build_static() { # NAME SOURCE
	${CC:-cc} -static -O2 -std=gnu11 -D_GNU_SOURCE -Wall -Wextra -Werror -Wno-unused-parameter \
		-I"$SRC/include" -I"$SRC/src" -o "$O/bin/$1" "$2" "$BUILD/libvcxl.a" \
		-ljson-c -lz -lpthread -lm > "$LOG/build-$1.log" 2>&1 && return 0
	sed 's/^/# /' "$LOG/build-$1.log"
	echo "Bail out! building a static $1 failed"
	exit 1
}
build_static vcxl-hw-serve "$HERE/vcxl-hw-serve.c"
build_static vcxl-server "$SRC/src/server/main.c"
build_static vcxl-hw-dma "$HERE/vcxl-hw-dma.c"
build_static vcxl-hw-firmware "$HERE/vcxl-hw-firmware.c"
build_static vcxl-hw-mmap "$HERE/vcxl-hw-mmap.c"
# the unchanged CLI with its shared libraries
CLI=$BUILD/src/tools/vcxl
[ -x "$CLI" ] || { echo "Bail out! no $CLI (build the tree first)"; exit 1; }
install -m 0755 "$CLI" "$O/usr/bin/vcxl"
ird_libs "$O" "$CLI"
install -m 0755 "$HERE/init.sh" "$O/init"
ird_pack "$O" "$LOG/overlay.cpio.gz"
rm -rf "$O"
cat "$BASE" "$LOG/overlay.cpio.gz" > "$LOG/initramfs.cpio.gz"
cat "$BASE_NOMOD" "$LOG/overlay.cpio.gz" > "$LOG/initramfs-nomod.cpio.gz"

# ---- the iommufd kernel (the 7.2 guest kernel), when a boot wants it ----
IKERNEL=""
iommufd_kernel() { # sets IKERNEL, or WHY and returns 1
	if [ -n "${VCXL_E2E_IOMMUFD_KERNEL:-}" ]; then
		[ -s "$VCXL_E2E_IOMMUFD_KERNEL" ] && IKERNEL=$VCXL_E2E_IOMMUFD_KERNEL && return 0
		WHY="VCXL_E2E_IOMMUFD_KERNEL=$VCXL_E2E_IOMMUFD_KERNEL is not a file"
		return 1
	fi
	e2e_guest_kernel "$LOG/guest-kernel.err" && IKERNEL=$E2E_GK_DIR/bzImage && return 0
	WHY=$E2E_GK_WHY
	return 1
}
WHY=""
case " $BOOTS " in *" iommufd "*) iommufd_kernel ;; esac

# ---- checks on a finished boot ----
field() { # field LINE KEY -> value of KEY=... in LINE
	echo "$1" | tr ' ' '\n' | sed -n "s/^$2=//p" | head -1
}
pattern_check() { # FILE OFFSET LEN: vcxl memtest's pattern (src/tools/vcxl.c)
	python3 - "$1" "$2" "$3" <<'EOF'
import struct, sys
path, off, ln = sys.argv[1], int(sys.argv[2], 0), int(sys.argv[3], 0)
M = (1 << 64) - 1
with open(path, 'rb') as f:
    f.seek(off)
    data = f.read(ln)
bad = 0
for i in range(0, ln, 8):
    (v,) = struct.unpack_from('<Q', data, i)
    if v != ((i * 0x9e3779b97f4a7c15) & M) ^ 0xc3a5c85c97cb3127:
        bad += 1
print(bad)
EOF
}

iotlb_hits() { # TRACE IOVA SIZE: page invalidations (vtd_inv_desc_iotlb_pages) overlapping it
	python3 - "$1" "$2" "$3" <<'EOF'
import re, sys
path, iova, size = sys.argv[1], int(sys.argv[2], 0), int(sys.argv[3], 0)
pat = re.compile(r'iotlb invalidate (?:pages )?domain 0x([0-9a-f]+) addr 0x([0-9a-f]+) mask 0x([0-9a-f]+)')
hits = 0
try:
    for line in open(path, errors='replace'):
        m = pat.search(line)
        if m:
            a, k = int(m.group(2), 16), int(m.group(3), 16)
            if a < iova + size and iova < a + (4096 << k):
                hits += 1
except OSError:
    pass
print(hits)
EOF
}

check_boot() { # check_boot NAME CONSOLE MEMFILE RP2 QEMU-TRACE
	local name=$1 con=$2 mem=$3 rp2=$4 trace=$5 s l
	if [ "$name" = dax ]; then
		for s in find-device cedt no-cxl-acpi bind; do
			l=$(grep -a "^STEP $s " "$con" | head -1)
			tap "$(echo "$l" | grep -q "^STEP $s ok" && echo 1 || echo 0)" "$name: $s ${l#STEP $s }"
		done
		check_dax "$con" "$mem"
		return
	fi
	for s in find-device cedt no-cxl-acpi bind serve iommu info lspci commit hdm memtest shutdown server-vfio srv-info srv-commit srv-memtest srv-mmap-none srv-mmap srv-dma srv-mbox-irq srv-mbox srv-reset srv-memtest-reset server-vfio-exit server-vfio-host-decoder server-vfio-iommu server-vfio-protocol server-vfio-nofd; do
		l=$(grep -a "^STEP $s " "$con" | head -1)
		tap "$(echo "$l" | grep -q "^STEP $s ok" && echo 1 || echo 0)" "$name: $s ${l#STEP $s }"
	done
	local w r ep hb epa hba
	w=$(grep -a '^HW window ' "$con" | head -1)
	r=$(grep -a '^HW region ' "$con" | head -1)
	ep=$(grep -a '^HW ep-live decoder0 ' "$con" | head -1)
	epa=$(grep -a '^HW ep-after decoder0 ' "$con" | head -1)
	local wb ws port hpa rs dpa
	wb=$(field "$w" base); ws=$(field "$w" size); port=$(field "$w" port)
	hpa=$(field "$r" hpa); rs=$(field "$r" size); dpa=$(field "$r" dpa)
	tap "$([ -n "$wb" ] && [ "$(field "$w" restrictions)" != "" ] && echo 1 || echo 0)" \
		"$name: window from the CEDT: base=$wb size=$ws port=$port"
	tap "$([ -n "$hpa" ] && [ "$((hpa))" -ge "$((wb))" ] && [ "$((hpa + rs))" -le "$((wb + ws))" ] && echo 1 || echo 0)" \
		"$name: region HPA $hpa+$rs inside the window"
	tap "$([ "$(field "$ep" base)" = "$hpa" ] && [ "$(field "$ep" size)" = "$rs" ] &&
		[ "$(field "$ep" committed)" = 1 ] && echo 1 || echo 0)" \
		"$name: endpoint decoder 0 committed at the region (${ep#HW ep-live })"
	tap "$(grep -aq '^HW verify=0' "$con" && echo 1 || echo 0)" "$name: vcxl_region_verify while serving"
	tap "$([ "$(field "$epa" committed)" = 0 ] && [ "$(field "$epa" base)" = 0x0 ] &&
		[ "$(field "$epa" size)" = 0x0 ] && echo 1 || echo 0)" \
		"$name: endpoint decoder 0 cleared after shutdown (${epa#HW ep-after })"
	if [ "$rp2" = 1 ]; then
		hb=$(grep -a '^HW hb-committed decoder0 ' "$con" | head -1)
		hba=$(grep -a '^HW hb-after decoder0 ' "$con" | head -1)
		tap "$([ "$(field "$hb" base)" = "$wb" ] && [ "$(field "$hb" size)" = "$ws" ] &&
			[ "$(field "$hb" committed)" = 1 ] && [ "$(($(field "$hb" tl) & 0xff))" = "$port" ] &&
			echo 1 || echo 0)" "$name: host bridge decoder 0 committed over the window to port $port"
		tap "$([ "$(field "$hba" committed)" = 0 ] && echo 1 || echo 0)" \
			"$name: host bridge decoder 0 decommitted after shutdown"
	else
		tap "$(grep -aq '^HW hb-committed passthrough' "$con" && echo 1 || echo 0)" \
			"$name: pass-through host bridge (one root port): nothing to program"
	fi
	# the DMA window the client mapped reached the (emulated) IOMMU: the guest
	# kernel invalidated the IOTLB for it (intel-iommu caching mode), seen by QEMU
	local d diova dsize inv
	d=$(grep -a -o 'HW dma .*' "$con" | head -1)
	diova=$(field "$d" iova); dsize=$(field "$d" size)
	inv=$(iotlb_hits "$trace" "${diova:-0}" "${dsize:-0}")
	local pb pm
	pb=$(field "$d" before); pm=$(field "$d" mapped)
	tap "$([ "$(field "$d" ok)" = 1 ] && [ $((${pm:-0} - ${pb:-0})) = $((${dsize:-0} >> 10)) ] && echo 1 || echo 0)" \
		"$name: DMA_MAP pinned $((${pm:-0} - ${pb:-0})) KiB in the server for the IOMMU; released on DMA_UNMAP and on disconnect (${d#HW dma })"
	tap "$([ -n "$diova" ] && [ "${inv:-0}" -gt 0 ] && echo 1 || echo 0)" \
		"$name: IOTLB invalidations over the DMA window ${diova:-?}+${dsize:-?} seen by QEMU's intel-iommu: ${inv:-0}"
	l=$(grep -a -o 'HW mmap-summary .*' "$con" | head -1)
	tap "$([ "$(field "$l" mismatches)" = 0 ] && [ "$(field "$l" comp_exposed)" = 0 ] &&
		[ "$(field "$l" mbox_exposed)" = 0 ] && [ "${l:-}" != "" ] && echo 1 || echo 0)" \
		"$name: with --trust-client, the BAR areas a VMM mmaps are the device's own (same words as REGION_READ), neither the component block nor the mailbox registers in any (QEMU's cxl-type3: none left) (${l#HW mmap-summary })"
	l=$(grep -a -o 'host decoder [0-9]* \[.*) was cleared by the reset: programmed and committed again' "$con" | head -1)
	tap "$([ -n "$l" ] && grep -aq '^STEP srv-memtest-reset ok' "$con" && echo 1 || echo 0)" \
		"$name: DEVICE_RESET (vfio-pci bus reset) cleared the endpoint decoder; the host core put the region back (${l:-no restore logged})"
	l=$(grep -a -o 'srv-mbox-irq| background command .*' "$con" | head -1)
	tap "$(echo "$l" | grep -q 'complete: rc=0x0000 .*MSI-X vector [0-9]* fired' && echo 1 || echo 0)" \
		"$name: the device's own MSI-X reached the client's eventfd through VFIO_DEVICE_SET_IRQS (${l#srv-mbox-irq| })"
	local bad
	bad=$(pattern_check "$mem" "${dpa:-0}" $((1 << 20)) 2>&1)
	tap "$([ "$bad" = 0 ] && echo 1 || echo 0)" \
		"$name: memtest's 1 MiB is in the memory-backend file at DPA ${dpa:-?} ($bad bad words)"
}

check_dax() { # CONSOLE MEMFILE: the --region-dax session
	local con=$1 mem=$2 s l fr dev cl bad
	for s in dax-firmware dax-noreset dax-dev dax-server dax-info dax-memtest dax-exit dax-refuse; do
		l=$(grep -a "^STEP $s " "$con" | head -1)
		tap "$(echo "$l" | grep -q "^STEP $s ok" && echo 1 || echo 0)" "dax: $s ${l#STEP $s }"
	done
	fr=$(grep -a '^HW fw-region ' "$con" | head -1)
	dev=$(grep -a '^STEP dax-dev ' "$con" | head -1)
	cl=$(grep -a '^HW dax-closed decoder0 ' "$con" | head -1)
	tap "$([ "$(field "$fr" hpa)" = "$(field "$fr" window | cut -d+ -f1)" ] && [ "$(field "$fr" hpa)" = "$DAX_HPA" ] &&
		grep -aq '^HW fw-verify=0' "$con" && echo 1 || echo 0)" \
		"dax: \"firmware\" committed decoder 0 at the window base $DAX_HPA, where memmap= put the Soft Reserved range (${fr#HW fw-region })"
	tap "$([ -n "$(field "$dev" resource)" ] && [ "$(($(field "$dev" resource)))" = "$(($(field "$fr" hpa)))" ] &&
		[ "$(($(field "$dev" size)))" = "$(($(field "$fr" size)))" ] && echo 1 || echo 0)" \
		"dax: the kernel's device-DAX covers exactly the committed range (${dev#STEP dax-dev ok })"
	tap "$(grep -aq '  dax-info| .*firmware' "$con" && echo 1 || echo 0)" \
		"dax: the server advertises a firmware-committed region ($(grep -a -o '  dax-info| .*firmware.*' "$con" | head -1 | sed 's/^  dax-info| //'))"
	l="decoder 0 HPA \\[$(field "$fr" hpa), +$(field "$fr" size)) DPA $(field "$fr" dpa) (firmware-committed, attached)"
	tap "$(grep -aq "vcxl-server: .*info: dev0: host region: $l" "$con" &&
		grep -aq 'vcxl-server: .*dev0: host decoder 0 verified unchanged' "$con" && echo 1 || echo 0)" \
		"dax: the server attached to firmware's decoder and found it unchanged at shutdown"
	echo "# dax: after the server closed the device: ${cl#HW dax-closed } (vfio-pci bus-resets on release a device it could not function-reset, and QEMU clears HDM decoders on reset)"
	bad=$(pattern_check "$mem" "$(field "$fr" dpa)" $((2 << 20)) 2>&1)
	tap "$([ "$bad" = 0 ] && echo 1 || echo 0)" \
		"dax: memtest's 2 MiB through the device-DAX is in the memory-backend file ($bad bad words)"
}

DAX_HPA=0x2d0000000
E820_SOFT_RESERVED=0xefffffff # E820_TYPE_SOFT_RESERVED (arch/x86/include/asm/e820/types.h)
for boot in $BOOTS; do
	rp2=0
	[ "$boot" != 1rp ] && [ "$boot" != dax ] && rp2=1 # dax: one root port, as firmware set it up
	KIMG=$KROOT/boot/vmlinuz-$KVER
	INITRD=$LOG/initramfs.cpio.gz
	IOMMU_ARGS="vcxl.iommu=auto vcxl.want=group"
	# dax: the window's first 256 MiB (QEMU puts the CFMWS window at DAX_HPA for this
	# machine; check_dax fails if not) become Soft Reserved, which dax_hmem exposes
	[ "$boot" = dax ] && IOMMU_ARGS="$IOMMU_ARGS vcxl.dax=1 memmap=256M%$DAX_HPA+$E820_SOFT_RESERVED"
	if [ "$boot" = iommufd ]; then
		if [ -z "$IKERNEL" ]; then
			echo "SKIP e2e-hw iommufd boot: $WHY" >&2
			echo "ok $((n + 1)) - iommufd: # SKIP $WHY"
			n=$((n + 1))
			continue
		fi
		echo "# iommufd: kernel $IKERNEL ($(cat "$(dirname "$IKERNEL")/version" 2>/dev/null || echo "given"))"
		KIMG=$IKERNEL
		INITRD=$LOG/initramfs-nomod.cpio.gz
		IOMMU_ARGS="vcxl.iommu=iommufd vcxl.want=iommufd"
	fi
	TMP=$(mktemp -d)
	truncate -s 256M "$TMP/cxl-vmem.raw"
	RP2_DEV=()
	[ "$rp2" = 1 ] && RP2_DEV=(-device cxl-rp,port=1,bus=cxl.1,id=rp1,chassis=0,slot=3)
	CMD=("$QEMU" -L /usr/share/seabios -L /usr/share/qemu
		-machine q35,cxl=on "${E2E_TCG_ARGS[@]}" -m 1G,maxmem=4G,slots=4
		-nodefaults -nographic -serial stdio -monitor none -no-reboot -nic none
		-kernel "$KIMG" -initrd "$INITRD"
		-append "$E2E_KERNEL_ARGS intel_iommu=on $IOMMU_ARGS"
		-device intel-iommu,intremap=on,caching-mode=on
		-object memory-backend-file,id=cxl-mem0,share=on,mem-path=$TMP/cxl-vmem.raw,size=256M
		-device pxb-cxl,bus_nr=12,bus=pcie.0,id=cxl.1
		-device cxl-rp,port=0,bus=cxl.1,id=rp0,chassis=0,slot=2
		-device cxl-type3,bus=rp0,volatile-memdev=cxl-mem0,id=cxl-vmem0
		"${RP2_DEV[@]}"
		-M cxl-fmw.0.targets.0=cxl.1,cxl-fmw.0.size=4G
		-trace vtd_inv_desc_iotlb_pages -D "$LOG/$boot.qemu-trace.log")
	rm -f "$LOG/$boot.qemu-trace.log"
	printf '%q ' "${CMD[@]}" > "$LOG/$boot.qemu-cmd.log"
	e2e_boot --timeout "$TMO" "$boot" "$LOG/$boot.console.log" "${CMD[@]}"
	qrc=$?
	echo "# $boot: QEMU rc=$qrc, $E2E_BOOT_SECS s (console: $LOG/$boot.console.log)"
	tap "$(grep -aq '=== E2E-HW DONE ===' "$LOG/$boot.console.log" && echo 1 || echo 0)" \
		"$boot: guest ran to the end (QEMU rc=$qrc, $E2E_BOOT_SECS s, attempt $E2E_BOOT_ATTEMPTS)"
	tr -d '\r' < "$LOG/$boot.console.log" > "$LOG/$boot.console.txt"
	grep -a -E '^(STEP|HW) ' "$LOG/$boot.console.txt" | sed 's/^/# /'
	check_boot "$boot" "$LOG/$boot.console.txt" "$TMP/cxl-vmem.raw" "$rp2" "$LOG/$boot.qemu-trace.log"
	cleanup
done
e2e_done
