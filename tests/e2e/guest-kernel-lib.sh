# SPDX-License-Identifier: BSD-3-Clause
# shellcheck shell=bash disable=SC2034 # E2E_GK_* variables are read by the sourcing scripts
# guest-kernel-lib.sh - sourced (bash) by the e2e scripts that boot the Linux 7.2 guest
# kernel of scripts/guest-kernel.sh (hw/run-hw.sh's iommufd boot, run-e2e-type3.sh 7.2):
#
#   e2e_guest_kernel ERRLOG   sets E2E_GK_DIR (the directory holding bzImage, build/,
#                             version) and returns 0, or sets E2E_GK_WHY (one line) and
#                             returns 1. Builds the kernel when it is not cached
#                             (scripts/guest-kernel.sh, once per machine; its progress
#                             lines go to ERRLOG), unless VCXL_E2E_BUILD_KERNEL=0: then
#                             only a kernel already in the cache is used.
#
# The cache is guest-kernel.sh's: $VCXL_GUEST_KERNEL_CACHE, else ~/.cache/vcxl-guest-kernel.
# `make e2e-prep` (part of `make test`) builds it before any test runs, outside every
# test's timeout.
E2E_GK_DIR=""
E2E_GK_WHY=""
e2e_guest_kernel() {
	local errlog=$1 src cache d
	src=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
	cache=${VCXL_GUEST_KERNEL_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/vcxl-guest-kernel}
	E2E_GK_DIR=""
	E2E_GK_WHY=""
	if [ "${VCXL_E2E_BUILD_KERNEL:-1}" = 0 ]; then
		# the newest finished build (bzImage is the last file a build writes)
		d=$(ls -t "$cache"/linux-7.2*/bzImage 2>/dev/null | head -1)
		[ -s "$d" ] && E2E_GK_DIR=$(dirname "$d") && return 0
		E2E_GK_WHY="VCXL_E2E_BUILD_KERNEL=0 and no 7.2 guest kernel in $cache"
		return 1
	fi
	E2E_GK_DIR=$("$src/scripts/guest-kernel.sh" 2> "$errlog") && [ -s "$E2E_GK_DIR/bzImage" ] && return 0
	E2E_GK_DIR=""
	E2E_GK_WHY="no 7.2 guest kernel: $(tail -1 "$errlog" 2>/dev/null) (scripts/guest-kernel.sh)"
	return 1
}
