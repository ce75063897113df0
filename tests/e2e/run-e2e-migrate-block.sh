#!/bin/bash
# SPDX-License-Identifier: BSD-3-Clause
# run-e2e-migrate-block.sh BUILDDIR - a VM whose vcxl server cannot migrate refuses live
# migration (TAP).
#
# vmm/qemu's series migrates a vfio-user-pci device through its server (vfio-user
# migration v2) and registers a migration blocker when the server does not support it (the
# hardware backend, an older server); without one a migration "completes" and the
# destination's device is reset against a fresh server, the guest's decoders and CXL memory
# lost. tests/e2e/migrate-block.py starts two vcxl-servers behind relays that answer the
# migration messages ENOSYS, and two CXL-aware QEMUs (TCG, no guest kernel), the second
# with -incoming, and checks that QMP migrate is refused with an error naming vcxl0, that
# nothing migrates, that the source runs on with its device answering, and that
# -only-migratable refuses the device.
# Seconds, not minutes: no guest boots. Skips visibly (TAP "1..0 # SKIP") when the
# CXL-aware QEMU cannot be had (cxlmem-lib.sh: VCXL_QEMU_CXL, VCXL_E2E_BUILD_QEMU).
# Logs: BUILDDIR/e2e-migrate-block/.
set -u
E2E_NAME=e2e-migrate-block
HERE=$(cd "$(dirname "$0")" && pwd)
CXLMEM_BUILD=$(cd "${1:-build}" && pwd)
CXLMEM_LOGDIR="$CXLMEM_BUILD/$E2E_NAME"
mkdir -p "$CXLMEM_LOGDIR"
# shellcheck source=tests/e2e/cxlmem-lib.sh
. "$HERE/cxlmem-lib.sh"

cxlmem_noguest_prep "the QMP client"
exec python3 "$HERE/migrate-block.py" "$CXLMEM_QEMU" "$CXLMEM_BUILD/src/tools/vcxl-server" \
	"$CXLMEM_LOGDIR"
