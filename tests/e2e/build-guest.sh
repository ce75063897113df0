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
	local S="$CACHE/base.staging"
	rm -rf "$S"
	mkdir -p "$S"/{bin,sbin,usr/bin,usr/sbin,proc,sys,dev,tmp,run,etc,lib64,lib/x86_64-linux-gnu}
	mkdir -p "$S"/usr/share/misc "$S"/usr/share/hwdata "$S"/lib/modules
	cp /bin/busybox "$S/bin/busybox"
	local a
	for a in $(/bin/busybox --list); do
		[ "$a" = busybox ] || ln -sf busybox "$S/bin/$a"
	done
	# pciutils' lspci (it decodes the CXL DVSECs), not busybox's applet
	rm -f "$S/bin/lspci"
	local b lib
	for b in /usr/bin/lspci /usr/bin/setpci; do
		install -m 0755 "$b" "$S/usr/bin/"
		ldd "$b" | awk '/=>/ {print $3} /^\t\/lib64/ {print $1}' | while read -r lib; do
			[ -f "$lib" ] || continue
			case "$lib" in
			/lib64/*) cp -L "$lib" "$S/lib64/" ;;
			*) cp -L "$lib" "$S/lib/x86_64-linux-gnu/" ;;
			esac
		done
	done
	cp /usr/share/misc/pci.ids "$S/usr/share/misc/pci.ids"
	ln -sf ../misc/pci.ids "$S/usr/share/hwdata/pci.ids"
	# CXL and VFIO modules with their dependency closure. -C /dev/null: ignore the
	# host's modprobe.d hooks.
	local mods="cxl_acpi cxl_pci cxl_mem vfio vfio_pci vfio_pci_core vfio_iommu_type1 \
		vfio_virqfd irqbypass"
	local md="lib/modules/$KVER" m ko rel
	depmod -b "$CACHE/kroot" "$KVER"
	mkdir -p "$S/$md"
	for m in $mods; do
		modprobe -C /dev/null -d "$CACHE/kroot" -S "$KVER" --show-depends "$m" 2>/dev/null |
			awk '$1=="insmod"{print $2}'
	done | sort -u | while read -r ko; do
		rel=${ko#"$CACHE/kroot/"}
		mkdir -p "$S/$(dirname "$rel")"
		cp "$ko" "$S/$rel"
	done
	cp "$CACHE/kroot/$md"/modules.{order,builtin,builtin.modinfo} "$S/$md/"
	depmod -b "$S" "$KVER"
	(cd "$S" && find . -print0 | sort -z | /bin/busybox cpio -o -H newc -0 2>/dev/null) |
		gzip -6 > "$BASE.tmp"
	mv "$BASE.tmp" "$BASE"
	rm -rf "$S"
}
if [ ! -s "$BASE" ]; then
	log "building base initramfs for $KVER"
	build_base
fi

# The guest program: static (the initramfs has no libc for it), warnings are errors.
${GUEST_CC:-gcc} -static -O2 -std=gnu11 -Wall -Wextra -Werror -I"$SRCROOT/include" \
	-o "$OUT/cxl-guest-test" "$HERE/guest/cxl-guest-test.c"

O="$OUT/overlay.staging"
rm -rf "$O"
mkdir -p "$O/bin"
install -m 0755 "$HERE/init.sh" "$O/init"
install -m 0755 "$OUT/cxl-guest-test" "$O/bin/cxl-guest-test"
(cd "$O" && find . -print0 | sort -z | /bin/busybox cpio -o -H newc -0 2>/dev/null) |
	gzip -6 > "$OUT/overlay.cpio.gz"
rm -rf "$O"
cat "$BASE" "$OUT/overlay.cpio.gz" > "$OUT/initramfs.cpio.gz"
ln -sf "$CACHE/kroot/boot/vmlinuz-$KVER" "$OUT/vmlinuz"
log "kernel $KVER, initramfs $(stat -c %s "$OUT/initramfs.cpio.gz") bytes"
