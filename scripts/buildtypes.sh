#!/bin/sh
# SPDX-License-Identifier: BSD-3-Clause
# make buildtypes: every meson build type (plain, debug, debugoptimized,
# release, minsize) with gcc and clang, and gcc with Debian's package flags
# (dpkg-buildflags), each a fresh build of everything (tests too) under werror.
# Prints one line per build and "N of M builds warning-free"; exit 1 if any
# build failed. About 10 full builds: minutes, not for make test (its deb test
# covers the package flags).
# Usage: scripts/buildtypes.sh [WORK_DIR]
set -u
src=$(cd "$(dirname "$0")/.." && pwd)
work=${1:-$src/build-types}
mkdir -p "$work"
total=0
good=0
one() { # name cc buildtype [deb]
	d=$work/$1
	rm -rf "$d"
	total=$((total + 1))
	if [ -n "${4:-}" ]; then
		CFLAGS=$(dpkg-buildflags --get CFLAGS) CPPFLAGS=$(dpkg-buildflags --get CPPFLAGS) \
			LDFLAGS=$(dpkg-buildflags --get LDFLAGS) CC=$2 \
			meson setup "$d" "$src" -Dbuildtype=$3 >"$d.log" 2>&1
	else
		CC=$2 meson setup "$d" "$src" -Dbuildtype=$3 >"$d.log" 2>&1
	fi
	if [ $? -ne 0 ]; then
		echo "$1: meson setup failed (see $d.log)"
		return
	fi
	nice ninja -C "$d" -k 0 >>"$d.log" 2>&1
	rc=$?
	w=$(grep -cE '(warning|error): ' "$d.log")
	if [ $rc -eq 0 ] && [ "$w" -eq 0 ]; then
		good=$((good + 1))
		echo "$1: ok"
		rm -rf "$d" "$d.log"
	else
		echo "$1: FAILED, $w diagnostics (see $d.log)"
		grep -E '(warning|error): ' "$d.log" | sort -u | head -5 | sed 's/^/  /'
	fi
}
for cc in gcc clang; do
	for bt in plain debug debugoptimized release minsize; do
		one "$cc-$bt" $cc $bt
	done
done
command -v dpkg-buildflags >/dev/null && one gcc-debian-flags gcc plain deb
echo "$good of $total builds warning-free"
[ $good -eq $total ]
