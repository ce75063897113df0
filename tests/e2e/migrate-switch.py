#!/usr/bin/env python3
# SPDX-License-Identifier: BSD-3-Clause
"""migrate-switch.py QEMU SERVER LOGDIR - a vcxl device behind a CXL switch migrates with the
switch's ports (TAP).

The topology: pxb-cxl (bus 12) -> cxl-rp rp0 -> cxl-upstream us0 -> cxl-downstream dsp0 ->
vfio-user-pci vcxl0 (a vcxl-server, --firmware-committed), one CXL fixed memory window. QEMU
runs under the qtest accelerator (no guest; this script's qtest writes stand in for the
guest's firmware and driver, as in docs/migration.md's topology round trip): it maps the
ECAM, numbers the buses, opens the bridge windows, places the component register BARs of
rp0, us0 and dsp0, commits an HDM decoder in the upstream port (its registers as Linux
programs a switch decoder), unmasks/masks AER and CXL RAS bits in both switch ports, and
leaves a CDAT DOE request half written in the upstream port's mailbox. Then `migrate
file:...`, a new vcxl-server and a new QEMU with -incoming file:..., and on the destination
the same reads: each port's whole config space (4 KiB) and CXL.cachemem component registers
(4 KiB) must equal the source's, the device must still answer through the switch (its
vendor ID at 15:00.0), the upstream port's decoder must still be committed, and the DOE
request must complete there into a CDAT response. Before vmm/qemu's switch-port vmstate,
the ports came back reset: bus numbers 0, so the device behind them was unreachable, the
decoder gone, the DOE request lost.
Seconds, not minutes: no guest boots. Logs in LOGDIR: src.*, dst.*, srv-*.log.
"""
import json
import os
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from e2e_qmp import server_start  # noqa: E402 (the e2e library)
from e2e_qtest import (CDAT_HDR1, CM, DEV, DSP, DSP_BAR, RP, RP_BAR, SWITCH,  # noqa: E402
                       USP, USP_BAR, Tap, cfg, find_cm_cap, find_ext_cap, qemu_start,
                       switch_on, tap_main)

QEMU, SERVER, LOGDIR = sys.argv[1], sys.argv[2], sys.argv[3]
HDM_BASE, HDM_SIZE = 0x2_0000_0000, 256 << 20  # the decoder's range (nothing checks it)
t = Tap()
procs = []


def start_server(tmp, name):
    sock = os.path.join(tmp, f"{name}.sock")
    p, why = server_start([SERVER, "--socket", sock, "--mem-size", "256M", "--decoders", "2",
                           "--firmware-committed"], os.path.join(LOGDIR, f"srv-{name}.log"))
    procs.append(p)
    if why:
        t.note(f"server {name}: {why}")
    return sock, why is None


def start_qemu(tmp, name, sock, extra):
    dev = {"driver": "vfio-user-pci", "socket": {"type": "unix", "path": sock},
           "id": "vcxl0", "bus": "dsp0"}
    return qemu_start(QEMU, tmp, LOGDIR, name, SWITCH + ["-device", json.dumps(dev)] + extra,
                      procs=procs)


def program(qt):
    """What firmware and the guest's drivers would do (the source only)."""
    switch_on(qt, 0x0146)  # Command: memory, bus master, parity, SERR#
    # AER: mask an uncorrectable error in each switch port (config space)
    for bdf in (USP, DSP):
        aer = find_ext_cap(qt, bdf, 0x0001)
        if aer:
            qt.wr(cfg(bdf, aer + 0x08), 0x00400000)  # Uncorrectable Error Mask: UR
    # CXL RAS (component registers): mask an uncorrectable error
    for bar in (USP_BAR, DSP_BAR):
        ras = find_cm_cap(qt, bar, 2)
        if ras:
            qt.wr(bar + ras + 0x4, 0x00000021)
    # the upstream port's HDM decoder 0, committed (CXL r3.1 8.2.4.20)
    hdm = find_cm_cap(qt, USP_BAR, 5)
    if hdm:
        d0 = USP_BAR + hdm + 0x10
        qt.wr(USP_BAR + hdm + 0x04, 0x2)  # HDM Decoder Enable
        qt.wr(d0 + 0x00, HDM_BASE & 0xF0000000)
        qt.wr(d0 + 0x04, HDM_BASE >> 32)
        qt.wr(d0 + 0x08, HDM_SIZE & 0xF0000000)
        qt.wr(d0 + 0x0C, HDM_SIZE >> 32)
        qt.wr(d0 + 0x14, 0x00000000)  # target list: downstream port 0
        qt.wr(d0 + 0x10, 1 << 9)  # Commit (1 way, 256 B granularity)
    return hdm


def state(qt):
    """Config space and component registers of the three ports (what must migrate)."""
    out = {}
    for name, bdf, bar in (("rp0", RP, RP_BAR), ("us0", USP, USP_BAR), ("dsp0", DSP, DSP_BAR)):
        out[name + " config"] = qt.block(cfg(bdf), 0x1000)
        out[name + " cachemem"] = qt.block(bar + CM, 0x1000)
    return out


def diff(a, b, limit=6):
    lines = []
    for off in range(0, len(a), 4):
        if a[off:off + 4] != b[off:off + 4]:
            lines.append(f"  +0x{off:03x}: source {int.from_bytes(a[off:off + 4], 'little'):#010x}"
                         f" destination {int.from_bytes(b[off:off + 4], 'little'):#010x}")
    more = f"\n  ... {len(lines) - limit} more dwords differ" if len(lines) > limit else ""
    return f"{len(lines)} dwords differ\n" + "\n".join(lines[:limit]) + more


def wait_migration(q, secs=60):
    end = time.monotonic() + secs
    r = {}
    while time.monotonic() < end:
        r = q.cmd("query-migrate").get("return", {})
        if r.get("status") in ("completed", "failed", "cancelled"):
            break
        time.sleep(0.1)
    return r


def run(tmp):
    ssock, ok = start_server(tmp, "src")
    if not t.ok(ok, "the source vcxl-server listens"):
        return
    src, sqt, sq = start_qemu(tmp, "src", ssock, [])
    hdm = program(sqt)
    t.ok(hdm is not None, "the source: buses, windows, BARs, AER/RAS masks set through qtest; "
         "us0's HDM decoder 0 committed", "no HDM capability in us0's component registers")
    ctrl = sqt.rd(USP_BAR + hdm + 0x20) if hdm else 0
    t.ok(bool(ctrl & (1 << 10)), f"us0's decoder 0 reads Committed on the source (ctrl {ctrl:#x})")
    vid = sqt.rd(cfg(DEV))
    t.ok(vid & 0xFFFF == 0x8086, f"vcxl0 answers through the switch at 15:00.0 ({vid:#010x})")
    doe = find_ext_cap(sqt, USP, 0x002E)
    t.ok(doe is not None, f"us0 has a DOE mailbox (at {doe:#x})" if doe else "us0's DOE mailbox")
    if doe:
        sqt.wr(cfg(USP, doe + 0x10), CDAT_HDR1)  # the request's first dword only
    before = state(sqt)

    path = os.path.join(tmp, "vm.mig")
    t1 = time.monotonic()
    r = sq.cmd("migrate", uri=f"file:{path}")
    mi = wait_migration(sq) if "error" not in r else {}
    t.ok(mi.get("status") == "completed", f"migrate file: completed ({mi.get('total-time')} ms, "
         f"{os.path.getsize(path) if os.path.exists(path) else 0} bytes)",
         json.dumps(r) + " " + json.dumps(mi))
    t.note(f"migrate took {(time.monotonic() - t1) * 1000:.0f} ms")
    sq.cmd("quit")
    src.wait(20)

    dsock, ok = start_server(tmp, "dst")
    if not t.ok(ok, "a new vcxl-server listens for the destination"):
        return
    dst, dqt, dq = start_qemu(tmp, "dst", dsock, ["-incoming", f"file:{path}"])
    dmi = wait_migration(dq)
    st = dq.cmd("query-status").get("return", {})
    t.ok(dmi.get("status") == "completed", f"the destination loaded the file ({st.get('status')})",
         json.dumps(dmi) + " " + json.dumps(st))
    after = state(dqt)
    for key in before:
        t.ok(before[key] == after[key], f"{key}: equal after migration (4 KiB)",
             diff(before[key], after[key]))
    ctrl = dqt.rd(USP_BAR + hdm + 0x20) if hdm else 0
    base = (dqt.rd(USP_BAR + hdm + 0x14) << 32) | dqt.rd(USP_BAR + hdm + 0x10) if hdm else 0
    t.ok(bool(ctrl & (1 << 10)) and base == HDM_BASE,
         f"us0's decoder 0 is still committed at {HDM_BASE:#x} (ctrl {ctrl:#x}, base {base:#x})")
    vid = dqt.rd(cfg(DEV))
    t.ok(vid & 0xFFFF == 0x8086,
         f"vcxl0 answers through the migrated switch at 15:00.0 ({vid:#010x})")
    if doe:
        # finish the request begun on the source: length 3, CDAT entry 0, then Go
        dqt.wr(cfg(USP, doe + 0x10), 3)
        dqt.wr(cfg(USP, doe + 0x10), 0)
        dqt.wr(cfg(USP, doe + 0x08), 1 << 31)
        status = dqt.rd(cfg(USP, doe + 0x0C))
        rsp = dqt.rd(cfg(USP, doe + 0x14)) if status & (1 << 31) else None
        t.ok(status & (1 << 31) and not status & (1 << 2) and rsp == CDAT_HDR1,
             "the DOE request begun on the source completes on the destination (CDAT response)",
             f"status {status:#x}, first response dword {rsp}")
    dq.cmd("quit")
    dst.wait(20)


def main():
    return tap_main(t, run, "vcxl-migswitch.", procs)


if __name__ == "__main__":
    sys.exit(main())
