#!/bin/sh
# SPDX-License-Identifier: BSD-3-Clause
# make qemu-deb: the CXL-aware QEMU of make qemu as the Debian binary package vcxl-qemu.
#
# The binary is the one scripts/qemu-build.sh built and cached (it builds it first if
# needed); nothing is compiled again. vmm/qemu-deb/debian/ (GPL-2.0-or-later) is copied
# into a staging tree with that binary, the patch series it was built from and its
# build-info, a changelog entry is written, and dpkg-buildpackage -us -uc -b builds the
# package there, as Linux's `make bindeb-pkg` packages an already built kernel.
#
# Usage: qemu-deb.sh [OUTDIR]   (default: build/qemu-deb in the repository)
# Writes vcxl-qemu_VERSION_ARCH.deb, .changes and .buildinfo into OUTDIR (older
# vcxl-qemu files there are removed) and prints the .deb's absolute path on its last line.
# Progress goes to stderr; the package build's log is OUTDIR/vcxl-qemu-build.log.
#
# Version: Debian's qemu version without its epoch, +vcxlN, N the number of commits
# that changed the series, its configuration or its packaging (vmm/qemu, vmm/qemu-deb,
# scripts/qemu-build.sh, scripts/qemu-config.sh),
# so a later series sorts later: 10.2.2+ds-1+vcxl12.
set -eu
REPO=$(cd "$(dirname "$0")/.." && pwd)
OUTDIR=${1:-$REPO/build/qemu-deb}

say() { echo "qemu-deb: $*" >&2; }
die() {
	echo "qemu-deb: error: $*" >&2
	exit 1
}
for t in dpkg-buildpackage dh dpkg-parsechangelog; do
	command -v "$t" >/dev/null 2>&1 || die "'$t' not found (packages dpkg-dev, debhelper); run 'make deps'"
done

out=$("$REPO/scripts/qemu-build.sh") || die "scripts/qemu-build.sh failed"
bin=$(echo "$out" | tail -n 1)
[ -x "$bin" ] || die "scripts/qemu-build.sh gave '$bin', not an executable"
dir=$(dirname "$bin")
[ -f "$dir/build-info" ] || die "$dir has no build-info (a build by an older qemu-build.sh)"
# the firmware path that makes -L unnecessary, from qemu-build.sh's configure line
"$bin" -L help | grep -qx /usr/share/seabios ||
	die "$bin has no firmware path (-L help: $("$bin" -L help | tr '\n' ' ')); rebuild with make qemu"

qemu_src=$(sed -n 's/^Qemu-Source: //p' "$dir/build-info")
upstream=$("$bin" -version | sed -n '1s/^QEMU emulator version \([0-9.]*\).*/\1/p')
[ -n "$upstream" ] || die "cannot read the version of $bin"
case $qemu_src in
qemu\ *) # Debian's version without its epoch
	base=${qemu_src#qemu }
	base=${base#*:}
	;;
*) base=$upstream-0 ;;                              # an unpacked tree: no Debian revision
esac
n=0
date=""
if git -C "$REPO" rev-parse --git-dir >/dev/null 2>&1; then
	n=$(git -C "$REPO" rev-list --count HEAD -- vmm/qemu vmm/qemu-deb scripts/qemu-build.sh scripts/qemu-config.sh)
	date=$(git -C "$REPO" log -1 --format=%aD -- vmm/qemu vmm/qemu-deb scripts/qemu-build.sh scripts/qemu-config.sh)
fi
[ -n "$date" ] || date=$(date -R)
version=$base+vcxl$n
maint=$(sed -n 's/^Maintainer: //p' "$REPO/vmm/qemu-deb/debian/control")
key=$(basename "$dir")
set -- "$dir"/*.patch
[ -e "$1" ] || set --

work=$(mktemp -d /tmp/vcxl-qemu-deb.XXXXXX)
trap 'rm -rf "$work"' EXIT
tree=$work/vcxl-qemu-$version
mkdir -p "$tree/patches"
cp -r "$REPO/vmm/qemu-deb/debian" "$tree/debian"
cp "$bin" "$tree/qemu-system-x86_64"
cp "$dir/build-info" "$tree/build-info"
[ $# -eq 0 ] || cp "$@" "$tree/patches/"
cp "$REPO/vmm/qemu/README.md" "$tree/patches/README.md"
cat >"$tree/debian/changelog" <<EOF
vcxl-qemu ($version) unstable; urgency=medium

  * QEMU $upstream ($qemu_src) with vcxl's patch series
    vmm/qemu/ ($# patches).
  * Built by make qemu, cache key $key.
  * Packaged by make qemu-deb.

 -- $maint  $date
EOF

say "dpkg-buildpackage -b: vcxl-qemu $version from $bin"
mkdir -p "$OUTDIR"
OUTDIR=$(cd "$OUTDIR" && pwd)
log=$OUTDIR/vcxl-qemu-build.log
if ! (cd "$tree" && dpkg-buildpackage -us -uc -b) >"$log" 2>&1; then
	tail -n 20 "$log" >&2
	die "dpkg-buildpackage failed (log: $log)"
fi
rm -f "$OUTDIR"/vcxl-qemu_*
mv "$work"/vcxl-qemu_* "$OUTDIR/"
arch=$(dpkg --print-architecture)
deb=$OUTDIR/vcxl-qemu_${version}_$arch.deb
[ -f "$deb" ] || die "no $deb after the build (log: $log)"
say "built $(basename "$deb") ($(du -k "$deb" | cut -f1) KiB)"
echo "$deb"
