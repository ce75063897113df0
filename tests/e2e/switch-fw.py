#!/usr/bin/env python3
# SPDX-License-Identifier: BSD-3-Clause
"""switch-fw.py QEMU SERVER LOGDIR - a firmware-committed vcxl device behind a CXL switch: QEMU,
as the VM's firmware, commits the decoders of every port on the device's path (TAP).

The topology: pxb-cxl (hdm_for_passthrough=on, so the host bridge has HDM decoders) -> cxl-rp
rp0 (Port Number 3) -> cxl-upstream us0 -> cxl-downstream dsp0 (Port Number 5) ->
vfio-user-pci vcxl0 (vcxl-server --firmware-committed, 256 MiB). Linux assembles a committed
region only when every port decodes it towards the device: the host bridge's decoder with
the root port as its target, the upstream port's with the downstream port as its target.
Before vmm/qemu's switch patch QEMU committed only the host bridge's decoder, and with the
Port Number of the device's parent, the downstream port (5, not 3); us0's decoders stayed
uncommitted.

QEMU runs under the qtest accelerator (no guest; qtest writes stand in for firmware's bus
numbering and BAR placement, which only make us0's registers readable): the host bridge's
component registers (at their MMIO address from `info mtree`) and us0's, read after machine
start and after `system_reset`, with us0's decoder 0 decommitted by the "guest" in between.
Seconds: no guest boots. Logs in LOGDIR.
"""
import os
import re
import shutil
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from e2e_qmp import proc_stop, server_start  # noqa: E402 (the e2e library)
from e2e_qtest import (DEV, USP, USP_BAR, Tap, cfg, find_cm_cap,  # noqa: E402
                       qemu_start, switch_on)

QEMU, SERVER, LOGDIR = sys.argv[1], sys.argv[2], sys.argv[3]
RP_PN, DSP_PN = 3, 5
SIZE = 256 << 20
COMMITTED, LOCK_ON_COMMIT = 1 << 10, 1 << 8
t = Tap()


def switch_args(sock, upstream, downstream):
    """QEMU's arguments for the module's topology with the switch's ports of these types,
    vcxl0 (the server at sock) behind the downstream port"""
    dev = ('{"driver":"vfio-user-pci","socket":{"type":"unix","path":"%s"},"id":"vcxl0",'
           '"bus":"dsp0"}' % sock)
    return ["-machine", "q35,cxl=on,memory-backend=ram0",
            "-device", "pxb-cxl,bus_nr=12,bus=pcie.0,id=cxl.1,hdm_for_passthrough=on",
            "-device", f"cxl-rp,port={RP_PN},bus=cxl.1,id=rp0,chassis=0,slot=2",
            "-device", f"{upstream},bus=rp0,id=us0",
            "-device", f"{downstream},port={DSP_PN},bus=us0,id=dsp0,chassis=0,slot=4",
            "-device", dev, "-M", "cxl-fmw.0.targets.0=cxl.1,cxl-fmw.0.size=4G"]


def decoders(qt, comp):
    """(base, size, ctrl, target list entry 0) of every HDM decoder of a component block"""
    hdm = find_cm_cap(qt, comp, 5)
    if hdm is None:
        return None
    cap = qt.rd(comp + hdm)
    count = 1 if cap & 0xF == 0 else (cap & 0xF) * 2
    out = []
    for i in range(min(count, 4)):
        d = comp + hdm + 0x10 + 0x20 * i
        out.append(((qt.rd(d + 4) << 32) | qt.rd(d), (qt.rd(d + 0xC) << 32) | qt.rd(d + 8),
                    qt.rd(d + 0x10), qt.rd(d + 0x14) & 0xFF))
    return out


def check(qt, hb, window, when):
    """the host bridge's and us0's decoder over the device's range, each to the right port"""
    hbd = decoders(qt, hb)
    usd = decoders(qt, USP_BAR)
    for name, decs, pn, pname in (("the host bridge", hbd, RP_PN, "rp0"),
                                  ("us0", usd, DSP_PN, "dsp0")):
        mine = [d for d in decs or [] if d[2] & COMMITTED and d[0] == window and d[1] == SIZE]
        desc = ", ".join(f"{b:#x}+{s:#x} ctrl {c:#x} target {tg}" for b, s, c, tg in decs or [])
        t.ok(len(mine) == 1 and mine[0][3] == pn and mine[0][2] & LOCK_ON_COMMIT,
             f"{when}: {name}'s decoder committed and locked over [{window:#x}, +256 MiB), "
             f"target {pname} (Port Number {pn})", f"decoders: {desc or 'no HDM capability'}")


def run(tmp):
    sock = os.path.join(tmp, "srv.sock")
    srv, why = server_start([SERVER, "--socket", sock, "--mem-size", "256M", "--decoders", "2",
                             "--firmware-committed"], os.path.join(LOGDIR, "srv.log"))
    if not t.ok(why is None, "vcxl-server --firmware-committed listens", why):
        return
    args = switch_args(sock, "cxl-upstream", "cxl-downstream") + [
        "-trace", "vfio_cxl_firmware_commit*"]
    p, qt, q = qemu_start(QEMU, tmp, LOGDIR, "fw", args)
    try:
        mtree = q.cmd("human-monitor-command", **{"command-line": "info mtree"})["return"]
        hb = re.search(r"([0-9a-f]{16})-[0-9a-f]{16} \(prio \d+, i/o\): pxb-cxl-host", mtree)
        win = re.search(r"([0-9a-f]{16})-[0-9a-f]{16} \(prio \d+, i/o\): "
                        r"cxl-fixed-memory-region", mtree)
        if not t.ok(hb and win, "the host bridge's registers and the CXL window in info mtree"):
            return
        hb, win = int(hb.group(1), 16), int(win.group(1), 16)
        t.note(f"host bridge registers at {hb:#x}, CXL window at {win:#x}")
        switch_on(qt)  # the ECAM, bus numbers, windows, BARs
        vid = qt.rd(cfg(DEV))
        t.ok(vid & 0xFFFF == 0x8086, f"vcxl0 answers through the switch at 15:00.0 ({vid:#010x})")
        check(qt, hb, win, "at machine start")

        # the guest decommits us0's decoder (QEMU's switch ports do not enforce the lock)
        usd = decoders(qt, USP_BAR) or []
        hdm = find_cm_cap(qt, USP_BAR, 5)
        for i, d in enumerate(usd):
            if d[2] & COMMITTED:
                qt.wr(USP_BAR + hdm + 0x10 + 0x20 * i + 0x10, 0)
        usd = decoders(qt, USP_BAR) or []
        t.ok(usd and not any(d[2] & COMMITTED for d in usd),
             "before the reset: us0's decoders decommitted by the guest")
        r = q.cmd("system_reset")
        t.ok("error" not in r, "QMP system_reset", str(r))
        time.sleep(0.5)
        st = qt.rd(cfg(USP, 0x18))
        t.note(f"us0's bus numbers after the reset: {st:#x} (reprogrammed to read its registers)")
        switch_on(qt)  # the ECAM, bus numbers, windows, BARs
        check(qt, hb, win, "after system_reset")
        q.cmd("quit")
        p.wait(20)
    finally:
        if p.poll() is None:
            p.kill()
            p.wait()
        proc_stop(srv)
    with open(os.path.join(LOGDIR, "fw.qemu.log")) as f:
        t.note("".join(line for line in f if "firmware" in line or "warning" in line))


def run_plain_switch(tmp):
    """the device behind a PCIe switch that is not a CXL one: one warning, nothing committed"""
    sock = os.path.join(tmp, "srv2.sock")
    srv, why = server_start([SERVER, "--socket", sock, "--mem-size", "256M",
                             "--firmware-committed"], os.path.join(LOGDIR, "srv2.log"))
    if not t.ok(why is None, "a second vcxl-server --firmware-committed listens", why):
        return
    args = switch_args(sock, "x3130-upstream", "xio3130-downstream")
    p, qt, q = qemu_start(QEMU, tmp, LOGDIR, "plain", args)
    try:
        q.cmd("system_reset")
        time.sleep(0.5)
        q.cmd("quit")
        p.wait(20)
    finally:
        if p.poll() is None:
            p.kill()
            p.wait()
        proc_stop(srv)
    with open(os.path.join(LOGDIR, "plain.qemu.log")) as f:
        warns = [line for line in f if "decoders on its path are not committed" in line]
    t.ok(len(warns) == 1 and "not a cxl-downstream port" in warns[0],
         "behind a non-CXL switch (x3130-upstream, xio3130-downstream): one warning naming the "
         "device and why, across machine start and a system_reset",
         f"{len(warns)} warnings: {''.join(warns)}")
    t.note("".join(warns))


def main():
    tmp = tempfile.mkdtemp(prefix="vcxl-switchfw.")
    t0 = time.monotonic()
    try:
        run(tmp)
        run_plain_switch(tmp)
    except (OSError, RuntimeError, ValueError, EOFError, KeyError) as e:
        t.ok(False, "the test ran to its end", repr(e))
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    t.note(f"{time.monotonic() - t0:.1f} s")
    return t.end()


if __name__ == "__main__":
    sys.exit(main())
