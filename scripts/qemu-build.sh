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
# the patches, the source's identity and this script's configuration; a cached
# binary is reused without rebuilding; <cache>/<key>/ also holds the patches and
# build-info (source, hash, configure line), which make qemu-deb packages with it.
# Progress goes to stderr, the build log to <cache>/<key>.log.
set -eu

QEMU_VERSION="1:10.2.2+ds-1"
DSC="qemu_10.2.2+ds-1.dsc"
MESON_DEB="meson_1.7.0-1~bpo12+1_all.deb"
# Installed paths as Debian's own qemu (its debian/rules): prefix /usr, not relocatable,
# helpers (qemu-bridge-helper) in /usr/lib/qemu, and a firmware path that finds Debian's
# qemu-system-data, seabios and ipxe-qemu, so the binary needs no -L wherever it is run
# from (the build cache, or /usr/libexec/vcxl/ from the vcxl-qemu package, make qemu-deb).
# Debian's 10.2.2 drops /usr/lib/ipxe/qemu from its path because trixie's ipxe-qemu also
# links its ROMs into /usr/share/qemu; bookworm's ipxe-qemu has them only there.
FIRMWAREPATH="/usr/share/qemu:/usr/share/seabios:/usr/lib/ipxe/qemu"
CONFIGURE_ARGS="--target-list=x86_64-softmmu --without-default-features --enable-kvm \
--enable-slirp --enable-fdt=system --disable-docs --disable-tools --disable-download \
--disable-install-blobs --prefix=/usr --libexecdir=/usr/lib/qemu --disable-relocatable \
--firmwarepath=$FIRMWAREPATH --with-pkgversion=vcxl"
NICE="${VCXL_QEMU_NICE:-10}"

REPO=$(cd "$(dirname "$0")/.." && pwd)
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
need sha256sum dpkg-source dpkg-deb patch python3 ninja pkg-config flex bison cc flock
for pc in glib-2.0 slirp zlib; do
	pkg-config --exists "$pc" || die "pkg-config cannot find '$pc' (development package missing); run 'make deps'"
done
[ -f /usr/include/libfdt.h ] || die "libfdt.h not found (libfdt-dev); run 'make deps'"
python3 -c 'import venv, ensurepip' 2>/dev/null || die "python3-venv is missing; run 'make deps'"

mkdir -p "$CACHE"
exec 9>"$CACHE/.lock"
flock 9 # one build at a time; a second caller then finds the cached binary

# --- the source --------------------------------------------------------------
# APT_DIR: a private apt configuration (sid deb-src, bookworm-backports deb),
# used only when neither $VCXL_QEMU_SRC nor the shared copy exists.
APT_DIR="$CACHE/apt"
apt_private() {
	need apt-get
	mkdir -p "$APT_DIR/lists/partial" "$APT_DIR/archives/partial"
	cat >"$APT_DIR/sources.list" <<EOF
deb-src http://deb.debian.org/debian sid main
deb http://deb.debian.org/debian bookworm-backports main
EOF
	set -- -o Dir::Etc::SourceList="$APT_DIR/sources.list" -o Dir::Etc::SourceParts=/dev/null \
		-o Dir::State::Lists="$APT_DIR/lists" -o Dir::Cache::Archives="$APT_DIR/archives" \
		-o APT::Sandbox::User=root
	if [ ! -e "$APT_DIR/lists/.updated" ]; then
		say "fetching package lists for the private deb-src/backports lines"
		apt-get "$@" update >&2 || die "apt-get update (private sources in $APT_DIR) failed"
		touch "$APT_DIR/lists/.updated"
	fi
	APT_OPTS="$*"
}

SRC_KIND="" SRC_DIR=""
if [ -n "${VCXL_QEMU_SRC:-}" ]; then
	[ -d "$VCXL_QEMU_SRC" ] || die "VCXL_QEMU_SRC=$VCXL_QEMU_SRC is not a directory"
	SRC_DIR=$(cd "$VCXL_QEMU_SRC" && pwd)
	if [ -f "$SRC_DIR/$DSC" ]; then
		SRC_KIND=dsc
	elif [ -x "$SRC_DIR/configure" ] && [ -f "$SRC_DIR/VERSION" ]; then
		SRC_KIND=tree
	else
		die "VCXL_QEMU_SRC=$SRC_DIR has neither $DSC nor an unpacked QEMU tree"
	fi
elif [ -f "$REPO/../shared/tools/qemu/source/$DSC" ]; then
	SRC_DIR=$(cd "$REPO/../shared/tools/qemu/source" && pwd)
	SRC_KIND=dsc
else
	SRC_DIR="$CACHE/source"
	if [ ! -f "$SRC_DIR/$DSC" ]; then
		apt_private
		mkdir -p "$SRC_DIR"
		say "apt-get source qemu=$QEMU_VERSION (download only)"
		# shellcheck disable=SC2086
		(cd "$SRC_DIR" && apt-get $APT_OPTS source --download-only "qemu=$QEMU_VERSION" >&2) ||
			die "apt-get source qemu=$QEMU_VERSION failed (network? sid no longer has it?); set VCXL_QEMU_SRC"
	fi
	SRC_KIND=dsc
fi

if [ "$SRC_KIND" = dsc ]; then
	SRC_ID=$(sha256sum "$SRC_DIR/$DSC" | cut -d' ' -f1) # the .dsc pins every tarball's hash
else
	SRC_ID="tree:$SRC_DIR:$(cat "$SRC_DIR/VERSION")"
	[ "$(cat "$SRC_DIR/VERSION")" = "10.2.2" ] || say "warning: $SRC_DIR is QEMU $(cat "$SRC_DIR/VERSION"), the patches are for 10.2.2"
fi

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
MESON_OK=0
if command -v meson >/dev/null 2>&1; then
	mv=$(meson --version)
	major=${mv%%.*} rest=${mv#*.}
	minor=${rest%%.*}
	if [ "$major" -gt 1 ] || { [ "$major" -eq 1 ] && [ "$minor" -ge 5 ]; }; then MESON_OK=1; fi
fi
MESON_DIR="$CACHE/meson-1.7"
if [ "$MESON_OK" = 0 ] && [ ! -x "$MESON_DIR/usr/bin/meson" ]; then
	deb=""
	for d in "$SRC_DIR" "$REPO/../shared/tools/qemu/source" "$APT_DIR/archives"; do
		[ -f "$d/$MESON_DEB" ] && deb="$d/$MESON_DEB" && break
	done
	if [ -z "$deb" ]; then
		apt_private
		say "apt-get download meson/bookworm-backports"
		# shellcheck disable=SC2086
		(cd "$APT_DIR/archives" && apt-get $APT_OPTS download meson/bookworm-backports >&2) ||
			die "meson >= 1.5 is needed (system has $(meson --version 2>/dev/null || echo none)); could not fetch $MESON_DEB"
		deb=$(ls "$APT_DIR"/archives/meson_*_all.deb | tail -n1)
	fi
	rm -rf "$MESON_DIR.tmp" && mkdir -p "$MESON_DIR.tmp"
	dpkg-deb -x "$deb" "$MESON_DIR.tmp" || die "cannot unpack $deb"
	mv "$MESON_DIR.tmp" "$MESON_DIR"
fi
if [ "$MESON_OK" = 0 ]; then
	PATH="$MESON_DIR/usr/bin:$PATH"
	PYTHONPATH="$MESON_DIR/usr/lib/python3/dist-packages${PYTHONPATH:+:$PYTHONPATH}"
	export PATH PYTHONPATH
fi

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
if [ "$SRC_KIND" = dsc ]; then
	dpkg-source -x "$SRC_DIR/$DSC" "$WORK/src" >>"$LOG" 2>&1 || fail "dpkg-source -x $SRC_DIR/$DSC failed"
else
	cp -a "$SRC_DIR" "$WORK/src" || die "cannot copy $SRC_DIR"
fi
rm -rf "$WORK/src/.pc" "$WORK/src/.git"
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
