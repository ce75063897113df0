#!/bin/sh
# SPDX-License-Identifier: BSD-3-Clause
# Build the CXL-aware QEMU: Debian's qemu 1:10.2.2+ds-1 source with the patch
# series in vmm/qemu/ applied, minimal x86_64 configuration (see
# vmm/qemu/README.md). Prints the binary's absolute path on its last line.
#
# Source, first found:
#   $VCXL_QEMU_SRC           a directory holding qemu_10.2.2+ds-1.dsc and its
#                            tarballs, or an unpacked QEMU 10.2.2 source tree
#   ../shared/tools/qemu/source (relative to the repository)
#   apt-get source qemu=1:10.2.2+ds-1 from a private deb-src line (sid) the
#                            script writes under its cache (system apt untouched)
# meson >= 1.5: the system's if new enough, else bookworm-backports'
# meson_1.7.0-1~bpo12+1_all.deb (next to the source, or fetched the same way),
# unpacked, not installed.
#
# Cached in ${VCXL_QEMU_CACHE:-~/.cache/vcxl-qemu-build}/<key>/ where key hashes
# the patches, the source's identity and the configure line (scripts/qemu-config.sh); a cached
# binary is reused without rebuilding; <cache>/<key>/ also holds the patches and
# build-info (source, hash, configure line), which make qemu-deb packages with it.
# Progress goes to stderr, the build log to <cache>/<key>.log.
set -eu

NICE="${VCXL_QEMU_NICE:-10}"

REPO=$(cd "$(dirname "$0")/.." && pwd)
# QEMU_VERSION, DSC, CONFIGURE_ARGS (shared with make qemu-check) and the source/meson helpers
# shellcheck source=scripts/qemu-config.sh
. "$REPO/scripts/qemu-config.sh"
PATCHES="$REPO/vmm/qemu"
CACHE="${VCXL_QEMU_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/vcxl-qemu-build}"

say() { echo "qemu-build: $*" >&2; }
die() {
	echo "qemu-build: error: $*" >&2
	exit 1
}

need() {
	for t in "$@"; do
		command -v "$t" >/dev/null 2>&1 || die "'$t' not found; run 'make deps' (scripts/deps.sh) first"
	done
}
qemu_need_build_deps

mkdir -p "$CACHE"
exec 9>"$CACHE/.lock"
flock 9 # one build at a time; a second caller then finds the cached binary

# --- the source --------------------------------------------------------------
qemu_find_source "$REPO" "$CACHE"

# --- the cache key ------------------------------------------------------------
set -- "$PATCHES"/*.patch
[ -e "$1" ] || set --
KEY=$({
	echo "$SRC_ID"
	echo "$CONFIGURE_ARGS"
	for p in "$@"; do sha256sum <"$p"; done
} | sha256sum | cut -c1-16)
OUT="$CACHE/$KEY"
BIN="$OUT/qemu-system-x86_64"
# OUT/build-info: what the binary was built from (make qemu-deb ships it): the source,
# its hash, the configure line, each patch's hash
build_info() {
	{
		if [ "$SRC_KIND" = dsc ]; then
			echo "Qemu-Source: qemu $QEMU_VERSION"
			echo "Source-Sha256: $SRC_ID $DSC"
			echo "Built-Using: qemu (= $QEMU_VERSION)"
		else
			echo "Qemu-Source: QEMU $(cat "$SRC_DIR/VERSION") tree $SRC_DIR"
		fi
		echo "Configure: $CONFIGURE_ARGS"
		echo "Cache-Key: $KEY"
		echo "Patches:"
		for p in "$@"; do echo " $(sha256sum <"$p" | cut -d' ' -f1)  $(basename "$p")"; done
	} >"$OUT/build-info.tmp" && mv "$OUT/build-info.tmp" "$OUT/build-info"
}
if [ -x "$BIN" ]; then
	say "cached build $KEY ($# patches)"
	[ -f "$OUT/build-info" ] || build_info "$@"
	echo "$BIN"
	exit 0
fi

# --- meson >= 1.5 ---------------------------------------------------------------
qemu_meson "$REPO" "$CACHE"

# --- unpack, patch, sync into the build tree, configure, build --------------------
# One build tree ($CACHE/tree) is kept between builds: a new patch set is applied
# to a fresh unpack, and only the files whose contents differ are copied into the
# tree, so ninja rebuilds just what the patches changed.
TREE="$CACHE/tree"
WORK="$CACHE/unpack.tmp"
LOG="$OUT.log"
rm -rf "$WORK" && mkdir -p "$WORK"
: >"$LOG"
fail() {
	tail -n 30 "$LOG" >&2
	die "$1 (full log: $LOG)"
}
say "build $KEY: source $SRC_DIR, $# patches, log $LOG"
t0=$(date +%s)
qemu_unpack_source "$WORK/src" "$LOG" || fail "cannot unpack the source ($SRC_DIR)"
for p in "$@"; do
	echo "applying $(basename "$p")" >>"$LOG"
	patch -d "$WORK/src" -p1 --batch --forward <"$p" >>"$LOG" 2>&1 || fail "patch $(basename "$p") does not apply"
done
if [ ! -f "$TREE/build/build.ninja" ] || [ "$(cat "$TREE/configured" 2>/dev/null)" != "$SRC_ID $CONFIGURE_ARGS" ]; then
	rm -rf "$TREE" && mkdir -p "$TREE/build"
	mv "$WORK/src" "$TREE/src"
	say "configure"
	# shellcheck disable=SC2086
	(cd "$TREE/build" && nice -n "$NICE" ../src/configure $CONFIGURE_ARGS) >>"$LOG" 2>&1 || fail "configure failed"
	echo "$SRC_ID $CONFIGURE_ARGS" >"$TREE/configured"
	say "ninja qemu-system-x86_64 (full build: about 6 minutes on 2 idle cores)"
else
	python3 - "$WORK/src" "$TREE/src" >>"$LOG" 2>&1 <<'PY' || fail "cannot update $TREE/src"
import filecmp, os, shutil, sys
new, old = sys.argv[1], sys.argv[2]
changed = 0
for root, dirs, files in os.walk(new):
    rel = os.path.relpath(root, new)
    os.makedirs(os.path.join(old, rel), exist_ok=True)
    for f in files:
        a, b = os.path.join(root, f), os.path.join(old, rel, f)
        if os.path.islink(a) or os.path.islink(b):
            same = os.path.islink(a) and os.path.islink(b) and os.readlink(a) == os.readlink(b)
        else:
            same = os.path.exists(b) and filecmp.cmp(a, b, shallow=False)
        if not same:
            if os.path.lexists(b):
                os.remove(b)
            shutil.copy2(a, b, follow_symlinks=False)
            if not os.path.islink(b):
                os.utime(b)  # newer than the objects built from the old file
            changed += 1
            print("updated", os.path.join(rel, f))
for root, dirs, files in os.walk(old):
    rel = os.path.relpath(root, old)
    for f in files:
        if not os.path.lexists(os.path.join(new, rel, f)):
            os.remove(os.path.join(root, f))
            changed += 1
            print("removed", os.path.join(rel, f))
print(changed, "files changed")
PY
	say "ninja qemu-system-x86_64 (incremental: $(tail -n1 "$LOG"))"
fi
rm -rf "$WORK"
t1=$(date +%s)
nice -n "$NICE" ninja -C "$TREE/build" qemu-system-x86_64 >>"$LOG" 2>&1 || fail "build failed"
t2=$(date +%s)
mkdir -p "$OUT"
cp "$TREE/build/qemu-system-x86_64" "$BIN.tmp"
strip "$BIN.tmp" 2>/dev/null || true
for p in "$@"; do cp "$p" "$OUT/"; done
build_info "$@"
mv "$BIN.tmp" "$BIN"
say "built in $((t2 - t0)) s (unpack+configure $((t1 - t0)) s, ninja $((t2 - t1)) s)"
echo "$BIN"
