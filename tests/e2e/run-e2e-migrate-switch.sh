#!/bin/bash
# SPDX-License-Identifier: BSD-3-Clause
# run-e2e-migrate-switch.sh BUILDDIR - a vcxl device behind a CXL switch (cxl-upstream,
# cxl-downstream) migrates, and the switch's ports arrive with their registers (TAP).
#
# tests/e2e/migrate-switch.py: a vcxl-server and a CXL-aware QEMU under the qtest
# accelerator (no guest kernel: qtest writes program the topology as firmware and a driver
# would), `migrate file:`, a new server and QEMU with -incoming file:, then each port's
# config space and CXL component registers compared, the device read through the switch,
# the upstream port's HDM decoder and a DOE request in flight checked. Before vmm/qemu gave
# the switch ports a vmstate, they came back reset.
# Seconds: no guest boots. Skips visibly (TAP "1..0 # SKIP") when the CXL-aware QEMU cannot
# be had (cxlmem-lib.sh: VCXL_QEMU_CXL, VCXL_E2E_BUILD_QEMU). Logs: BUILDDIR/e2e-migrate-switch/.
set -u
E2E_NAME=e2e-migrate-switch
HERE=$(cd "$(dirname "$0")" && pwd)
CXLMEM_BUILD=$(cd "${1:-build}" && pwd)
CXLMEM_LOGDIR="$CXLMEM_BUILD/$E2E_NAME"
mkdir -p "$CXLMEM_LOGDIR"
# shellcheck source=tests/e2e/cxlmem-lib.sh
. "$HERE/cxlmem-lib.sh"

cxlmem_noguest_prep "the QMP and qtest client"
exec python3 "$HERE/migrate-switch.py" "$CXLMEM_QEMU" "$CXLMEM_BUILD/src/tools/vcxl-server" \
	"$CXLMEM_LOGDIR"
