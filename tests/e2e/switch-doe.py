#!/usr/bin/env python3
# SPDX-License-Identifier: BSD-3-Clause
"""switch-doe.py QEMU LOGDIR - a guest cannot overflow the DOE write mailbox of a CXL switch's
upstream port (TAP).

QEMU's DOE mailbox (hw/pci/pcie_doe.c) holds 2^18 dwords, the longest data object there is
(PCIe r6.0 6.30.1). Stock QEMU appended every dword written to the DOE Write Data Mailbox
without a bound: 2^18 + 4096 dwords before Go wrote past the heap buffer (SIGSEGV in 2 runs of
3, at an address made of the dwords written; valgrind: invalid writes just after a
1,048,576-byte block). vmm/qemu's patch drops the dwords past the capacity and refuses the
object with DOE Error, which DOE Abort clears.

QEMU runs under the qtest accelerator (no guest: qtest writes are the guest's), with the
topology of e2e-migrate-switch without the device: pxb-cxl -> cxl-rp -> cxl-upstream ->
cxl-downstream. Checked: a CDAT read through the upstream port's DOE; 2^18 + 4096 dwords
written without Go: QEMU runs on and the status shows DOE Error; Go then gives no response;
Abort clears the status; the same CDAT read returns the same response; a request of exactly
2^18 dwords (Length 0) is still taken and answered. About 10 s (half a million qtest writes).
"""
import os
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from e2e_qtest import (CDAT_HDR1, RP, SWITCH, USP, Tap, cfg,  # noqa: E402 (the e2e library)
                       ecam_on, find_ext_cap, qemu_start, tap_main)

QEMU, LOGDIR = sys.argv[1], sys.argv[2]
DOE_CTRL, DOE_STATUS, DOE_WR, DOE_RD = 0x08, 0x0C, 0x10, 0x14
ABORT, GO = 1 << 0, 1 << 31
ST_BUSY, ST_ERROR, ST_READY = 1 << 0, 1 << 2, 1 << 31
MAX_DW = 1 << 18
t = Tap()


def cdat_read(qt, doe, entry=0):
    """a CDAT table access request for entry, Go, and the whole response (dwords) or None"""
    qt.wr_many([(cfg(USP, doe + DOE_WR), CDAT_HDR1), (cfg(USP, doe + DOE_WR), 3),
                (cfg(USP, doe + DOE_WR), entry << 16)])
    qt.wr(cfg(USP, doe + DOE_CTRL), GO)
    st = qt.rd(cfg(USP, doe + DOE_STATUS))
    if not st & ST_READY or st & ST_ERROR:
        return None, st
    rsp = []
    for _ in range(64):
        if not qt.rd(cfg(USP, doe + DOE_STATUS)) & ST_READY:
            break
        rsp.append(qt.rd(cfg(USP, doe + DOE_RD)))
        qt.wr(cfg(USP, doe + DOE_RD), 0)  # the next dword
    return rsp, st


def run(tmp):
    p, qt, q = qemu_start(QEMU, tmp, LOGDIR, "doe", SWITCH, qtest_log=False)
    try:
        ecam_on(qt)
        qt.wr(cfg(RP, 0x18), RP[0] | (13 << 8) | (15 << 16))  # rp0: buses 13-15
        doe = find_ext_cap(qt, USP, 0x002E)
        if not t.ok(doe is not None, f"us0 has a DOE mailbox (at {doe or 0:#x})"):
            return
        mbox = cfg(USP, doe + DOE_WR)
        first, st = cdat_read(qt, doe)
        t.ok(first and first[0] == CDAT_HDR1 and len(first) == (first[1] & (MAX_DW - 1)),
             f"a CDAT read through us0's DOE: {len(first or [])} dwords", f"status {st:#x}")

        n = MAX_DW + 4096
        t0 = time.monotonic()
        qt.wr_many([(mbox, 0xA5A5A5A5)] * n)
        t.note(f"{n} dwords written in {time.monotonic() - t0:.1f} s")
        alive = p.poll() is None and q.cmd("query-status").get("return", {}).get("running")
        t.ok(alive, "QEMU runs on after 2^18 + 4096 dwords in the write mailbox",
             f"QEMU exit status {p.poll()}")
        st = qt.rd(cfg(USP, doe + DOE_STATUS))
        t.ok(st & ST_ERROR and not st & (ST_READY | ST_BUSY),
             f"the status shows DOE Error and no response ({st:#x})")
        qt.wr(cfg(USP, doe + DOE_CTRL), GO)
        st = qt.rd(cfg(USP, doe + DOE_STATUS))
        t.ok(st & ST_ERROR and not st & ST_READY,
             f"Go on the refused object: still DOE Error, no response ({st:#x})")
        qt.wr(cfg(USP, doe + DOE_CTRL), ABORT)
        st = qt.rd(cfg(USP, doe + DOE_STATUS))
        t.ok(st & (ST_ERROR | ST_READY | ST_BUSY) == 0, f"DOE Abort clears the status ({st:#x})")
        again, st = cdat_read(qt, doe)
        t.ok(again == first, f"the same CDAT read after the Abort: the same "
             f"{len(again or [])} dwords", f"status {st:#x}, {again} != {first}")

        # the largest object there is, Length 0 (2^18 dwords): still taken
        qt.wr_many([(mbox, CDAT_HDR1), (mbox, 0)] + [(mbox, 0)] * (MAX_DW - 2))
        qt.wr(cfg(USP, doe + DOE_CTRL), GO)
        st = qt.rd(cfg(USP, doe + DOE_STATUS))
        rsp0 = qt.rd(cfg(USP, doe + DOE_RD)) if st & ST_READY else None
        t.ok(st & ST_READY and not st & ST_ERROR and rsp0 == CDAT_HDR1,
             f"a request of exactly 2^18 dwords (Length 0) is answered ({st:#x})",
             f"first response dword {rsp0}")
        qt.wr(cfg(USP, doe + DOE_CTRL), ABORT)
        q.cmd("quit")
        p.wait(20)
    finally:
        if p.poll() is None:
            p.kill()
            p.wait()
        t.note(f"QEMU exit status {p.returncode}")


def main():
    return tap_main(t, run, "vcxl-switchdoe.", errors=(OSError, RuntimeError, ValueError, EOFError))


if __name__ == "__main__":
    sys.exit(main())
