#!/bin/sh
# SPDX-License-Identifier: BSD-3-Clause
# qemu-find.sh - print the path of a qemu-system-x86_64 that has vfio-user-pci.
#   1. $VCXL_QEMU (must have vfio-user-pci)
#   2. qemu-system-x86_64 on PATH, if it has vfio-user-pci (QEMU 10.1+)
#   3. the bundled QEMU 10.2.2: <repo>/../shared/tools/qemu/install.sh, unpacked
#      into $VCXL_QEMU_DIR (default ~/.cache/vcxl-qemu)
#   4. the CXL-aware QEMU of make qemu (scripts/qemu-build.sh), unless VCXL_E2E_BUILD_QEMU=0
# Exit 1 with a reason on stderr if none is usable.
set -u
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../.." && pwd)

has_vfio_user() {
	[ -x "$1" ] || return 1
	"$1" -nodefaults -machine none -device help 2>/dev/null | grep -q '"vfio-user-pci"'
}

if [ -n "${VCXL_QEMU:-}" ]; then
	if has_vfio_user "$VCXL_QEMU"; then
		echo "$VCXL_QEMU"
		exit 0
	fi
	echo "qemu-find: VCXL_QEMU=$VCXL_QEMU has no vfio-user-pci device" >&2
	exit 1
fi

q=$(command -v qemu-system-x86_64 2>/dev/null || true)
if [ -n "$q" ] && has_vfio_user "$q"; then
	echo "$q"
	exit 0
fi

inst="$root/../shared/tools/qemu/install.sh"
if [ -f "$inst" ]; then
	q=$(VCXL_QEMU_DIR=${VCXL_QEMU_DIR:-${XDG_CACHE_HOME:-$HOME/.cache}/vcxl-qemu} \
		sh "$inst" 2>/dev/null | tail -n 1)
	if [ -n "$q" ] && has_vfio_user "$q"; then
		echo "$q"
		exit 0
	fi
	echo "qemu-find: $inst did not give a QEMU with vfio-user-pci" >&2
fi
# 4. the CXL-aware QEMU of make qemu (scripts/qemu-build.sh; 10.2.2 with vmm/qemu's series:
#    a vfio-user-pci that behaves as stock for a device the guest drives itself), when it is
#    already built (make test's e2e-prep builds it first): a machine without the bundled
#    QEMU still runs the stock-QEMU suites
if [ "${VCXL_E2E_BUILD_QEMU:-1}" != 0 ]; then
	q=$("$root/scripts/qemu-build.sh" 2>/dev/null | tail -n 1)
	if [ -n "$q" ] && has_vfio_user "$q"; then
		echo "$q"
		exit 0
	fi
fi
echo "qemu-find: no qemu-system-x86_64 with vfio-user-pci on PATH, no usable $inst and no make qemu build" >&2
exit 1
