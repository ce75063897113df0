#!/bin/bash
# SPDX-License-Identifier: BSD-3-Clause
# guest-kernel.sh [CACHEDIR] - build, once, the e2e suites' guest kernel from Debian's
# linux-source-7.2 and print the directory that holds it:
#   DIR/bzImage        the kernel (everything built in; scripts/guest-kernel.config)
#   DIR/build/         the O= object tree, kept so that out-of-tree modules
#                      (guest-drivers/) build against it: make -C DIR/build M=...
#   DIR/src/           the source tree the object tree points at
#   DIR/version        the package version (7.2.13-1, say)
#
# Source: linux-source-7.2 from Debian sid, fetched with a private apt configuration under
# CACHEDIR (the system's apt sources are untouched), `apt-get download`, never installed.
# Config: `make tinyconfig`, scripts/guest-kernel.config merged on top, and every option the
# fragment asks for checked to have survived Kconfig's dependency rules.
# Cache key: the package version and a hash of the fragment and of KEY_RULES below (not of
# this whole file, so that a comment edit does not cost a kernel build).
# Progress goes to stderr, the build's output to CACHEDIR/guest-kernel.log. Exit status 1
# (and nothing on stdout) when it cannot be had. Time: about 13 minutes on 2 idle cores.
set -u
REPO=$(cd "$(dirname "$0")/.." && pwd)
CACHE=${1:-${VCXL_GUEST_KERNEL_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/vcxl-guest-kernel}}
FRAG=$REPO/scripts/guest-kernel.config
PKG=linux-source-7.2
# what the result depends on besides the fragment; change it to force a rebuild
KEY_RULES="tinyconfig+fragment; bzImage modules; O=build; v1"
NICE=${VCXL_KERNEL_NICE:-10}
mkdir -p "$CACHE"
LOG=$CACHE/guest-kernel.log
say() { echo "guest-kernel: $*" >&2; }

APT_DIR=$CACHE/apt
APT_OPTS=(-o Dir::Etc::SourceList="$APT_DIR/sources.list" -o Dir::Etc::SourceParts=/dev/null
	-o Dir::State::Lists="$APT_DIR/lists" -o Dir::Cache::Archives="$APT_DIR/archives"
	-o Dir::Cache="$APT_DIR/cache" -o APT::Sandbox::User=root)
apt_private() {
	mkdir -p "$APT_DIR/lists/partial" "$APT_DIR/archives/partial" "$APT_DIR/cache"
	echo "deb http://deb.debian.org/debian sid main" > "$APT_DIR/sources.list"
	if [ ! -e "$APT_DIR/lists/.updated" ]; then
		say "fetching sid's package list (private apt configuration in $APT_DIR)"
		apt-get "${APT_OPTS[@]}" update >> "$LOG" 2>&1 || return 1
		touch "$APT_DIR/lists/.updated"
	fi
}

# a finished result is found without asking apt anything
HASH=$( (cat "$FRAG"; echo "$KEY_RULES") | sha256sum | cut -c1-12)
for d in "$CACHE"/linux-7.2*-"$HASH"; do
	if [ -s "$d/bzImage" ] && [ -s "$d/build/Module.symvers" ]; then
		echo "$d"
		exit 0
	fi
done

need=""
for p in flex bison libelf-dev libssl-dev bc make gcc xz-utils kmod cpio; do
	dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || need="$need $p"
done
if [ -n "$need" ]; then
	[ "$(id -u)" = 0 ] || { say "missing packages:$need (run as root)"; exit 1; }
	DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends $need >> "$LOG" 2>&1 ||
		{ say "apt-get install$need failed (see $LOG)"; exit 1; }
fi

# One build at a time per cache: wait for the lock, then look for the result again.
exec 9> "$CACHE/build.lock"
flock 9
for d in "$CACHE"/linux-7.2*-"$HASH"; do
	if [ -s "$d/bzImage" ] && [ -s "$d/build/Module.symvers" ]; then
		echo "$d"
		exit 0
	fi
done

apt_private || { say "apt-get update for sid failed (see $LOG)"; exit 1; }
VER=$(apt-cache "${APT_OPTS[@]}" show "$PKG" 2>/dev/null | sed -n 's/^Version: //p' | sort -V | tail -1)
[ -n "$VER" ] || { say "sid's package list has no $PKG"; exit 1; }
OUT=$CACHE/linux-$VER-$HASH
# built in place: the object tree names its source by absolute path. The result counts
# only once DIR/bzImage is there, copied last.
WORK=$OUT
rm -rf "$WORK"
mkdir -p "$WORK"
say "building the guest kernel from $PKG $VER (once; log: $LOG)"
t0=$(date +%s)
(
	set -e
	cd "$WORK"
	apt-get "${APT_OPTS[@]}" download -q "$PKG=$VER"
	dpkg-deb --fsys-tarfile "$PKG"_*.deb | tar -x "./usr/src/$PKG.tar.xz"
	tar -xJf "usr/src/$PKG.tar.xz"
	rm -rf usr "$PKG"_*.deb
	mv "$PKG" src
	mkdir build
	make -s -C src O="$WORK/build" tinyconfig
	src/scripts/kconfig/merge_config.sh -O "$WORK/build" -m "$WORK/build/.config" "$FRAG"
	make -s -C src O="$WORK/build" olddefconfig
	grep '^CONFIG_.*=y$' "$FRAG" | while read -r opt; do
		grep -qx "$opt" build/.config || { echo "Kconfig dropped $opt"; exit 1; }
	done
	echo "guest-kernel: make bzImage modules ($(nproc) jobs)"
	nice -n "$NICE" make -C src O="$WORK/build" -j"$(nproc)" bzImage modules
	cp build/arch/x86/boot/bzImage .
	echo "$VER" > version
) >> "$LOG" 2>&1
rc=$?
if [ $rc != 0 ] || [ ! -s "$WORK/bzImage" ]; then
	rm -rf "$WORK"
	say "build failed (see $LOG)"
	exit 1
fi
say "built $OUT in $(($(date +%s) - t0)) s"
echo "$OUT"
