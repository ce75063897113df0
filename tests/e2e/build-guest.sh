#!/bin/bash
# SPDX-License-Identifier: BSD-3-Clause
# build-guest.sh - the e2e guest: Debian's stock kernel + a busybox initramfs.
#
#   build-guest.sh OUTDIR
#
# Cached (under $VCXL_E2E_CACHE, default ~/.cache/vcxl-e2e), built once:
#   debs/linux-image-$KVER_*.deb   fetched with `apt-get download` (never installed)
#   kroot/                         the .deb extracted with dpkg-deb -x
#   base-$KVER.cpio.gz             busybox, lspci + pci.ids, CXL and VFIO modules
# Built on every call (cheap), into OUTDIR:
#   cxl-guest-test                 tests/e2e/guest/cxl-guest-test.c, gcc -static -Werror
#   initramfs.cpio.gz              base + an overlay with /init and the guest program
#   vmlinuz                        symlink to the cached kernel
# The kernel takes concatenated gzip'd cpio archives, so the overlay is appended.
set -euo pipefail
HERE=$(cd "$(dirname "$0")" && pwd)
. "$HERE/initramfs.sh"
SRCROOT=$(cd "$HERE/../.." && pwd)
OUT=${1:?usage: build-guest.sh OUTDIR}
CACHE=${VCXL_E2E_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/vcxl-e2e}
mkdir -p "$OUT" "$CACHE"
OUT=$(cd "$OUT" && pwd)
log() { echo "# build-guest: $*"; }

# The kernel: the 6.1 image linux-image-amd64 points at, or $VCXL_E2E_KVER.
KVER=${VCXL_E2E_KVER:-}
if [ -z "$KVER" ] && [ -f "$CACHE/kver" ]; then
	KVER=$(cat "$CACHE/kver")
fi
if [ -z "$KVER" ]; then
	KVER=$(apt-cache depends linux-image-amd64 2>/dev/null |
		sed -n 's/.*Depends: linux-image-\([0-9.]*-[0-9]*-amd64\)$/\1/p' | head -1)
fi
[ -n "$KVER" ] || { echo "build-guest: cannot find a kernel version (apt-cache)" >&2; exit 1; }
echo "$KVER" > "$CACHE/kver"

mkdir -p "$CACHE/debs"
if ! ls "$CACHE"/debs/linux-image-"$KVER"_*.deb >/dev/null 2>&1; then
	log "apt-get download linux-image-$KVER"
	(cd "$CACHE/debs" && apt-get download -q "linux-image-$KVER" >/dev/null)
fi
if [ ! -f "$CACHE/kroot/boot/vmlinuz-$KVER" ]; then
	log "extracting linux-image-$KVER"
	rm -rf "$CACHE/kroot"
	dpkg-deb -x "$CACHE"/debs/linux-image-"$KVER"_*.deb "$CACHE/kroot"
fi

BASE="$CACHE/base-$KVER.cpio.gz"
build_base() {
	local S="$CACHE/base.staging" b
	rm -rf "$S"
	ird_busybox "$S"
	mkdir -p "$S"/usr/share/misc "$S"/usr/share/hwdata
	# pciutils' lspci (it decodes the CXL DVSECs), not busybox's applet
	rm -f "$S/bin/lspci"
	for b in /usr/bin/lspci /usr/bin/setpci; do
		install -m 0755 "$b" "$S/usr/bin/"
		ird_libs "$S" "$b"
	done
	cp /usr/share/misc/pci.ids "$S/usr/share/misc/pci.ids"
	ln -sf ../misc/pci.ids "$S/usr/share/hwdata/pci.ids"
	ird_modules "$S" "$CACHE/kroot" "$KVER" cxl_acpi cxl_pci cxl_mem vfio vfio_pci \
		vfio_pci_core vfio_iommu_type1 vfio_virqfd irqbypass
	ird_pack "$S" "$BASE"
	rm -rf "$S"
}
if [ ! -s "$BASE" ]; then
	log "building base initramfs for $KVER"
	build_base
fi

# The guest program: static (the initramfs has no libc for it), warnings are errors.
${GUEST_CC:-gcc} -static -O2 -std=gnu11 -Wall -Wextra -Werror -I"$SRCROOT/include" -I"$SRCROOT/src" \
	-o "$OUT/cxl-guest-test" "$HERE/guest/cxl-guest-test.c"

O="$OUT/overlay.staging"
rm -rf "$O"
mkdir -p "$O/bin"
ird_init_lib "$O"
install -m 0755 "$HERE/init.sh" "$O/init"
install -m 0755 "$OUT/cxl-guest-test" "$O/bin/cxl-guest-test"
ird_pack "$O" "$OUT/overlay.cpio.gz"
rm -rf "$O"
cat "$BASE" "$OUT/overlay.cpio.gz" > "$OUT/initramfs.cpio.gz"
ln -sf "$CACHE/kroot/boot/vmlinuz-$KVER" "$OUT/vmlinuz"
log "kernel $KVER, initramfs $(stat -c %s "$OUT/initramfs.cpio.gz") bytes"
