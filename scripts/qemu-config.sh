# SPDX-License-Identifier: BSD-3-Clause
# shellcheck shell=sh disable=SC2034
# Sourced (not run) by scripts/qemu-build.sh (make qemu) and scripts/qemu-check.sh
# (make qemu-check): the one place that says which QEMU source the series in vmm/qemu/
# is for, how it is configured, where the source and a new enough meson come from.
# The caller defines say, die and need (need CMD...: die unless every CMD is found).

QEMU_VERSION="1:10.2.2+ds-1"
DSC="qemu_10.2.2+ds-1.dsc"
MESON_DEB="meson_1.7.0-1~bpo12+1_all.deb"
# Installed paths as Debian's own qemu (its debian/rules): prefix /usr, not relocatable,
# helpers (qemu-bridge-helper) in /usr/lib/qemu, and a firmware path that finds Debian's
# qemu-system-data, seabios and ipxe-qemu, so the binary needs no -L wherever it is run
# from (the build cache, or /usr/libexec/vcxl/ from the vcxl-qemu package, make qemu-deb).
# Debian's 10.2.2 drops /usr/lib/ipxe/qemu from its path because trixie's ipxe-qemu also
# links its ROMs into /usr/share/qemu; bookworm's ipxe-qemu has them only there.
# (qemu-build.sh's cache key hashes CONFIGURE_ARGS: any change here rebuilds make qemu.)
FIRMWAREPATH="/usr/share/qemu:/usr/share/seabios:/usr/lib/ipxe/qemu"
CONFIGURE_ARGS="--target-list=x86_64-softmmu --without-default-features --enable-kvm \
--enable-slirp --enable-fdt=system --disable-docs --disable-tools --disable-download \
--disable-install-blobs --prefix=/usr --libexecdir=/usr/lib/qemu --disable-relocatable \
--firmwarepath=$FIRMWAREPATH --with-pkgversion=vcxl"

# The build's host requirements (make deps installs them).
qemu_need_build_deps() {
	need sha256sum dpkg-source dpkg-deb patch python3 ninja pkg-config flex bison cc flock
	for pc in glib-2.0 slirp zlib; do
		pkg-config --exists "$pc" || die "pkg-config cannot find '$pc' (development package missing); run 'make deps'"
	done
	[ -f /usr/include/libfdt.h ] || die "libfdt.h not found (libfdt-dev); run 'make deps'"
	python3 -c 'import venv, ensurepip' 2>/dev/null || die "python3-venv is missing; run 'make deps'"
}

# qemu_apt_private CACHE: a private apt configuration under CACHE/apt (sid deb-src,
# bookworm-backports deb), used only when neither $VCXL_QEMU_SRC nor the shared copy
# exists; sets APT_DIR and APT_OPTS.
qemu_apt_private() {
	need apt-get
	APT_DIR="$1/apt"
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

# qemu_find_source REPO CACHE: sets SRC_KIND (dsc or tree), SRC_DIR and SRC_ID (the
# source's identity: the .dsc's hash, which pins every tarball's, or the tree's path
# and version). First found: $VCXL_QEMU_SRC (a directory holding $DSC and its
# tarballs, or an unpacked QEMU 10.2.2 tree), REPO/../shared/tools/qemu/source, else
# apt-get source from the private deb-src line into CACHE/source.
qemu_find_source() {
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
	elif [ -f "$1/../shared/tools/qemu/source/$DSC" ]; then
		SRC_DIR=$(cd "$1/../shared/tools/qemu/source" && pwd)
		SRC_KIND=dsc
	else
		SRC_DIR="$2/source"
		if [ ! -f "$SRC_DIR/$DSC" ]; then
			qemu_apt_private "$2"
			mkdir -p "$SRC_DIR"
			say "apt-get source qemu=$QEMU_VERSION (download only)"
			# shellcheck disable=SC2086
			(cd "$SRC_DIR" && apt-get $APT_OPTS source --download-only "qemu=$QEMU_VERSION" >&2) ||
				die "apt-get source qemu=$QEMU_VERSION failed (network? sid no longer has it?); set VCXL_QEMU_SRC"
		fi
		SRC_KIND=dsc
	fi
	if [ "$SRC_KIND" = dsc ]; then
		SRC_ID=$(sha256sum "$SRC_DIR/$DSC" | cut -d' ' -f1)
	else
		SRC_ID="tree:$SRC_DIR:$(cat "$SRC_DIR/VERSION")"
		[ "$(cat "$SRC_DIR/VERSION")" = "10.2.2" ] || say "warning: $SRC_DIR is QEMU $(cat "$SRC_DIR/VERSION"), the patches are for 10.2.2"
	fi
}

# qemu_unpack_source DEST LOG: the pristine source (no .pc, no .git) into DEST, which
# must not exist; dpkg-source's output goes to LOG. Returns non-zero on failure.
qemu_unpack_source() {
	if [ "$SRC_KIND" = dsc ]; then
		dpkg-source -x "$SRC_DIR/$DSC" "$1" >>"$2" 2>&1 || return 1
	else
		cp -a "$SRC_DIR" "$1" || return 1
	fi
	rm -rf "$1/.pc" "$1/.git"
}

# qemu_meson REPO CACHE: puts a meson >= 1.5 first in PATH: the system's if new enough,
# else bookworm-backports' $MESON_DEB (next to the source, or fetched through the private
# apt line) unpacked, not installed, into CACHE/meson-1.7.
qemu_meson() {
	_ok=0
	if command -v meson >/dev/null 2>&1; then
		_mv=$(meson --version)
		_major=${_mv%%.*} _rest=${_mv#*.}
		_minor=${_rest%%.*}
		if [ "$_major" -gt 1 ] || { [ "$_major" -eq 1 ] && [ "$_minor" -ge 5 ]; }; then _ok=1; fi
	fi
	[ "$_ok" = 1 ] && return 0
	_mdir="$2/meson-1.7"
	if [ ! -x "$_mdir/usr/bin/meson" ]; then
		_deb=""
		for _d in "$SRC_DIR" "$1/../shared/tools/qemu/source" "$2/apt/archives"; do
			[ -f "$_d/$MESON_DEB" ] && _deb="$_d/$MESON_DEB" && break
		done
		if [ -z "$_deb" ]; then
			qemu_apt_private "$2"
			say "apt-get download meson/bookworm-backports"
			# shellcheck disable=SC2086
			(cd "$APT_DIR/archives" && apt-get $APT_OPTS download meson/bookworm-backports >&2) ||
				die "meson >= 1.5 is needed (system has $(meson --version 2>/dev/null || echo none)); could not fetch $MESON_DEB"
			# shellcheck disable=SC2012
			_deb=$(ls "$APT_DIR"/archives/meson_*_all.deb | tail -n1)
		fi
		rm -rf "$_mdir.tmp" && mkdir -p "$_mdir.tmp"
		dpkg-deb -x "$_deb" "$_mdir.tmp" || die "cannot unpack $_deb"
		mv "$_mdir.tmp" "$_mdir"
	fi
	PATH="$_mdir/usr/bin:$PATH"
	PYTHONPATH="$_mdir/usr/lib/python3/dist-packages${PYTHONPATH:+:$PYTHONPATH}"
	export PATH PYTHONPATH
}
