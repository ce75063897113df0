# SPDX-License-Identifier: BSD-3-Clause
# initramfs.sh - sourced by the e2e scripts: building busybox initramfs images.
#
#   ird_busybox DIR                 the directory tree, busybox and its applet links, and
#                                   /lib/e2e-init.sh (guest/e2e-init.sh: what every /init
#                                   starts with)
#   ird_init_lib DIR                /lib/e2e-init.sh alone (an overlay on a cached base)
#   ird_libs DIR BINARY             BINARY's shared libraries (ldd; LD_LIBRARY_PATH counts)
#   ird_modules DIR KROOT KVER M... modules M... of the kernel extracted at KROOT with
#                                   their dependency closure, and a depmod'ed index
#   ird_pack DIR OUT                DIR as a gzip'd newc cpio at OUT (written whole or not
#                                   at all); the kernel takes several concatenated
#
# The modules come from `modprobe --show-depends` against KROOT (-C /dev/null: the host's
# modprobe.d hooks are ignored), so nothing of the host's own kernel is used.

IRD_HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)

ird_init_lib() { # DIR: /lib/e2e-init.sh (into an overlay on a cached base, too)
	mkdir -p "$1/lib"
	cp "$IRD_HERE/guest/e2e-init.sh" "$1/lib/e2e-init.sh"
}

ird_busybox() {
	local a
	mkdir -p "$1"/{bin,sbin,usr/bin,usr/sbin,proc,sys,dev,tmp,run,etc,lib64,lib/x86_64-linux-gnu,lib/modules}
	cp /bin/busybox "$1/bin/busybox"
	ird_init_lib "$1"
	for a in $(/bin/busybox --list); do
		[ "$a" = busybox ] || ln -sf busybox "$1/bin/$a"
	done
}

ird_libs() {
	local lib
	ldd "$2" | awk '/=>/ {print $3} /^\t\/lib64/ {print $1}' | while read -r lib; do
		[ -f "$lib" ] || continue
		case "$lib" in
		/lib64/*) cp -L "$lib" "$1/lib64/" ;;
		*) cp -L "$lib" "$1/lib/x86_64-linux-gnu/" ;;
		esac
	done
}

ird_modules() {
	local dir=$1 kroot=$2 kver=$3 m ko rel
	shift 3
	depmod -b "$kroot" "$kver"
	mkdir -p "$dir/lib/modules/$kver"
	for m in "$@"; do
		modprobe -C /dev/null -d "$kroot" -S "$kver" --show-depends "$m" 2>/dev/null |
			awk '$1=="insmod"{print $2}'
	done | sort -u | while read -r ko; do
		rel=${ko#"$kroot/"}
		mkdir -p "$dir/$(dirname "$rel")"
		cp "$ko" "$dir/$rel"
	done
	cp "$kroot/lib/modules/$kver"/modules.{order,builtin,builtin.modinfo} "$dir/lib/modules/$kver/"
	depmod -b "$dir" "$kver"
}

ird_pack() {
	(cd "$1" && find . -print0 | sort -z | /bin/busybox cpio -o -H newc -0 2>/dev/null) |
		gzip -6 > "$2.tmp" && mv "$2.tmp" "$2"
}
