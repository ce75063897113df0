#!/bin/sh
# SPDX-License-Identifier: BSD-3-Clause
# Install the Debian 12 packages vcxl needs to build and test, if missing.
# As root: apt-get install them. Otherwise print the exact command and fail.
set -eu
PKGS="meson ninja-build pkg-config gcc clang libclang-rt-14-dev libjson-c-dev valgrind python3 util-linux"
# QEMU 10.2 run-time packages for the end-to-end tests (tests/e2e)
PKGS="$PKGS libfdt1 libslirp0 libglib2.0-0 zlib1g seabios qemu-system-data xz-utils cpio busybox-static pciutils kmod"
# the CXL-aware QEMU's firmware path finds the iPXE option ROMs there (make qemu-deb's package
# depends on it; tests/deb starts a machine with a NIC)
PKGS="$PKGS ipxe-qemu"
# building the e2e guest kernel from Debian sid's linux-source-7.2 (scripts/guest-kernel.sh:
# e2e-hw's iommufd boot, e2e-type3-7.2, e2e-type2 and its out-of-tree guest drivers)
PKGS="$PKGS flex bison libelf-dev libssl-dev bc make gcc xz-utils kmod cpio"
# building the CXL-aware QEMU (make qemu, scripts/qemu-build.sh, vmm/qemu/)
PKGS="$PKGS libglib2.0-dev libfdt-dev libslirp-dev zlib1g-dev python3-venv dpkg-dev"
# make qemu-check (scripts/qemu-check.sh): QEMU's checkpatch.pl (perl), its series in git,
# and socat, which QEMU's test-io-channel-command needs (it skips without)
PKGS="$PKGS perl git socat"
# install and package tests (tests/install, tests/deb): systemd-analyze, groff for the man
# pages, bash-completion, and the Debian package build with lintian
PKGS="$PKGS systemd groff-base bash-completion dpkg-dev debhelper lintian"
# virt-xml-validate for docs/libvirt.md (tests/docs)
PKGS="$PKGS libvirt-clients"
# e2e-libvirt: Debian's libvirtd, virtlogd and QEMU driver (started by the test itself, in a
# private mount namespace; not the libvirt-daemon-system services)
PKGS="$PKGS libvirt-daemon libvirt-daemon-driver-qemu"
missing=""
for p in $PKGS; do
	if ! dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed"; then
		missing="$missing $p"
	fi
done
if [ -z "$missing" ]; then
	echo "deps: all present"
	exit 0
fi
if [ "$(id -u)" = 0 ]; then
	echo "deps: installing$missing"
	export DEBIAN_FRONTEND=noninteractive
	apt-get install -y --no-install-recommends $missing >/dev/null || {
		apt-get update >/dev/null && apt-get install -y --no-install-recommends $missing >/dev/null
	}
	echo "deps: done"
else
	echo "deps: missing packages; run as root:" >&2
	echo "  apt-get install -y --no-install-recommends$missing" >&2
	exit 1
fi
