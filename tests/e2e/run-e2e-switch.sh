#!/bin/bash
# SPDX-License-Identifier: BSD-3-Clause
# run-e2e-switch.sh BUILDDIR doe|fw|dma - the CXL-aware QEMU's CXL switch ports under the qtest
# accelerator, no guest kernel (TAP; seconds once that QEMU is built):
#   doe  tests/e2e/switch-doe.py: a guest writing more than the 2^18 dwords of the upstream
#        port's DOE write mailbox gets DOE Error (stock QEMU wrote past the heap buffer and
#        could crash); Abort clears it and a CDAT read works again (e2e-doe-overflow)
#   fw   tests/e2e/switch-fw.py: a --firmware-committed vcxl device behind a CXL switch: the
#        host bridge's decoder targets the root port, the upstream port's decoder the
#        downstream port, at machine start and after system_reset (e2e-switch-fw)
#   dma  tests/e2e/dma-message.py: a vcxl device behind the switch, guest RAM without an fd:
#        a job's DMA by message while the driver polls, or writes the next job's registers,
#        ends DONE at once; a server flooding DMA_READs is given up at QEMU's timeout
#        (e2e-dma-message)
# Skips visibly (TAP "1..0 # SKIP") when the CXL-aware QEMU cannot be had (cxlmem-lib.sh:
# VCXL_QEMU_CXL, VCXL_E2E_BUILD_QEMU). Logs: BUILDDIR/e2e-switch-MODE/.
set -u
HERE=$(cd "$(dirname "$0")" && pwd)
MODE=${2:-}
case "$MODE" in
doe) E2E_NAME=e2e-doe-overflow NOSERVER=noserver ;; # switch-doe.py runs no vcxl-server
fw) E2E_NAME=e2e-switch-fw NOSERVER="" ;;
dma) E2E_NAME=e2e-dma-message NOSERVER="" ;;
*) echo "Bail out! usage: $0 BUILDDIR doe|fw|dma"; exit 1 ;;
esac
CXLMEM_BUILD=$(cd "${1:-build}" && pwd)
CXLMEM_LOGDIR="$CXLMEM_BUILD/e2e-switch-$MODE"
mkdir -p "$CXLMEM_LOGDIR"
# shellcheck source=tests/e2e/cxlmem-lib.sh
. "$HERE/cxlmem-lib.sh"

cxlmem_noguest_prep "the QMP and qtest client" "$NOSERVER"
if [ "$MODE" = doe ]; then
	exec python3 "$HERE/switch-doe.py" "$CXLMEM_QEMU" "$CXLMEM_LOGDIR"
fi
SCRIPT=switch-fw.py
[ "$MODE" = dma ] && SCRIPT=dma-message.py
exec python3 "$HERE/$SCRIPT" "$CXLMEM_QEMU" "$CXLMEM_BUILD/src/tools/vcxl-server" \
	"$CXLMEM_LOGDIR"
