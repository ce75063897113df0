#!/bin/bash
# SPDX-License-Identifier: BSD-3-Clause
# build-kernel.sh CACHEDIR - print the path of an x86_64 bzImage with VFIO's iommufd/cdev
# interface, building it once if CACHEDIR does not hold one yet.
#
# No Debian 12 kernel has CONFIG_IOMMUFD (6.1, and 6.12 in all three flavours), so the
# e2e-hw "iommufd" boot runs a kernel built from Debian's own linux-source-6.12 package
# (apt-get download, never installed): `make tinyconfig`, then iommufd-kernel.config
# merged on top, everything built in, bzImage only (no modules). Build packages (flex,
# bison, libelf-dev, bc) are installed with apt-get when missing and we are root.
# The result is CACHEDIR/iommufd-<version>-<config hash>/bzImage; the log of the build is
# CACHEDIR/build-kernel.log. Exit status 1 (and nothing on stdout) when it cannot be had.
set -u
HERE=$(cd "$(dirname "$0")" && pwd)
CACHE=${1:?usage: build-kernel.sh CACHEDIR}
FRAG=$HERE/iommufd-kernel.config
mkdir -p "$CACHE"
LOG=$CACHE/build-kernel.log
say() { echo "build-kernel: $*" >&2; }

VER=$(apt-cache show linux-source-6.12 2>/dev/null | sed -n 's/^Version: //p' | sort -V | tail -1)
[ -n "$VER" ] || { say "apt knows no linux-source-6.12"; exit 1; }
HASH=$(cat "$FRAG" "$0" | sha256sum | cut -c1-12)
OUT=$CACHE/iommufd-$VER-$HASH
if [ -s "$OUT/bzImage" ]; then
	echo "$OUT/bzImage"
	exit 0
fi

need=""
for p in flex bison libelf-dev bc make gcc xz-utils; do
	dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || need="$need $p"
done
if [ -n "$need" ]; then
	[ "$(id -u)" = 0 ] || { say "missing packages:$need (run as root)"; exit 1; }
	DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends $need > "$LOG" 2>&1 ||
		{ say "apt-get install$need failed (see $LOG)"; exit 1; }
fi

# One build at a time per cache (two e2e-hw runs on one machine removed each
# other's staging tree): wait for the lock, then look for the result again.
exec 9>"$CACHE/build.lock"
flock 9
if [ -s "$OUT/bzImage" ]; then
	echo "$OUT/bzImage"
	exit 0
fi

WORK=$CACHE/build.staging
rm -rf "$WORK"
mkdir -p "$WORK"
say "building an iommufd kernel from linux-source-6.12 $VER (once; log: $LOG)"
t0=$(date +%s)
(
	set -e
	cd "$WORK"
	apt-get download -q "linux-source-6.12=$VER"
	dpkg-deb --fsys-tarfile linux-source-6.12_*.deb | tar -x ./usr/src/linux-source-6.12.tar.xz
	tar -xJf usr/src/linux-source-6.12.tar.xz
	rm -rf usr linux-source-6.12_*.deb
	cd linux-source-6.12
	make -s tinyconfig
	./scripts/kconfig/merge_config.sh -m .config "$FRAG"
	make -s olddefconfig
	# every option the fragment asks for must have survived Kconfig's dependency rules
	grep '^CONFIG_.*=y$' "$FRAG" | while read -r opt; do
		grep -qx "$opt" .config || { echo "Kconfig dropped $opt"; exit 1; }
	done
	make -j"$(nproc)" bzImage
	mkdir -p "$OUT"
	cp arch/x86/boot/bzImage .config "$OUT/"
) >> "$LOG" 2>&1
rc=$?
rm -rf "$WORK"
[ $rc = 0 ] && [ -s "$OUT/bzImage" ] || { say "build failed (see $LOG)"; exit 1; }
say "built $OUT/bzImage in $(($(date +%s) - t0)) s"
echo "$OUT/bzImage"
