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
import shutil
import socket
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from e2e_qmp import qmp, server_start  # noqa: E402 (the e2e library)

QEMU, SERVER, LOGDIR = sys.argv[1], sys.argv[2], sys.argv[3]
ECAM = 0xB0000000  # q35's PCIEXBAR, as SeaBIOS places it
RP, USP, DSP, DEV = (12, 0, 0), (13, 0, 0), (14, 0, 0), (15, 0, 0)
# the 32-bit MMIO this script hands out: each port's component register BAR (64 KiB) at the
# bottom of the window of the bus it sits on, each bridge's window [base, WIN_LIMIT] above
# its own BAR (rp0's BAR is on the pxb-cxl root bus, below rp0's window)
RP_BAR, USP_BAR, DSP_BAR = 0xC0000000, 0xC0100000, 0xC0200000
WIN = {RP: 0xC0100000, USP: 0xC0200000, DSP: 0xC0300000}
WIN_LIMIT = 0xC07FFFFF
CM = 0x1000  # CXL.cachemem registers in the component register block (CXL r3.1 8.2.3)
HDM_BASE, HDM_SIZE = 0x2_0000_0000, 256 << 20  # the decoder's range (nothing checks it)
DOE_CDAT_HDR1 = 0x1E98 | (2 << 16)  # CXL vendor ID, data object type 2: table access

n = 0
failed = 0
procs = []


def tap(ok, desc, diag=None):
    global n, failed
    n += 1
    print(f"{'ok' if ok else 'not ok'} {n} - {desc}", flush=True)
    if not ok:
        failed += 1
        for line in str(diag or "").splitlines():
            print(f"# {line}", flush=True)
    return ok


def note(text):
    for line in str(text).splitlines():
        print(f"# {line}", flush=True)


class QTest:
    """QEMU's qtest protocol (docs/devel/testing/qtest.rst): QEMU connects to our socket."""

    def __init__(self, listener):
        listener.settimeout(20)
        self.s, _ = listener.accept()
        self.s.settimeout(20)
        self.buf = b""

    def cmd(self, line):
        self.s.sendall(line.encode() + b"\n")
        while True:
            while b"\n" not in self.buf:
                chunk = self.s.recv(65536)
                if not chunk:
                    raise RuntimeError("qtest: QEMU closed the connection")
                self.buf += chunk
            reply, self.buf = self.buf.split(b"\n", 1)
            reply = reply.decode()
            if reply.startswith("IRQ"):
                continue  # an interrupt notification, not our reply
            if not reply.startswith("OK"):
                raise RuntimeError(f"qtest: {line!r} -> {reply!r}")
            return reply[3:]

    def rd(self, addr, size=4):
        return int(self.cmd(f"read{'bwlq'[[1, 2, 4, 8].index(size)]} 0x{addr:x}"), 16)

    def wr(self, addr, val, size=4):
        self.cmd(f"write{'bwlq'[[1, 2, 4, 8].index(size)]} 0x{addr:x} 0x{val:x}")

    def block(self, addr, length):
        """length bytes at addr, read a dword at a time (as a guest reads registers)"""
        return b"".join(self.rd(addr + o).to_bytes(4, "little") for o in range(0, length, 4))


def cfg(bdf, off=0):
    bus, dev, fn = bdf
    return ECAM + (bus << 20) + (dev << 15) + (fn << 12) + off


def find_ext_cap(qt, bdf, cap_id):
    off = 0x100
    for _ in range(64):
        hdr = qt.rd(cfg(bdf, off))
        if hdr in (0, 0xFFFFFFFF):
            return None
        if hdr & 0xFFFF == cap_id:
            return off
        off = hdr >> 20
        if not off:
            return None
    return None


def find_cm_cap(qt, bar, cap_id):
    """a CXL.cachemem capability's offset in the block (CXL r3.1 8.2.4: the header array)"""
    hdr = qt.rd(bar + CM)
    for i in range(1, ((hdr >> 24) & 0xFF) + 1):
        ent = qt.rd(bar + CM + 4 * i)
        if ent & 0xFFFF == cap_id:
            return CM + (ent >> 20)
    return None


def start_server(tmp, name):
    sock = os.path.join(tmp, f"{name}.sock")
    p, why = server_start([SERVER, "--socket", sock, "--mem-size", "256M", "--decoders", "2",
                           "--firmware-committed"], os.path.join(LOGDIR, f"srv-{name}.log"))
    procs.append(p)
    if why:
        note(f"server {name}: {why}")
    return sock, why is None


def start_qemu(tmp, name, sock, extra):
    qtp, qmpp = os.path.join(tmp, f"{name}.qtest"), os.path.join(tmp, f"{name}.qmp")
    listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    listener.bind(qtp)
    listener.listen(1)
    dev = {"driver": "vfio-user-pci", "socket": {"type": "unix", "path": sock},
           "id": "vcxl0", "bus": "dsp0"}
    args = [QEMU, "-nodefaults", "-accel", "qtest", "-qtest", f"unix:{qtp}",
            "-qtest-log", os.path.join(LOGDIR, f"{name}.qtest.log"),
            "-object", "memory-backend-memfd,id=ram0,size=256M,share=on", "-m", "256M",
            "-display", "none", "-monitor", "none", "-serial", "none", "-nic", "none",
            "-machine", "q35,cxl=on,memory-backend=ram0",
            "-device", "pxb-cxl,bus_nr=12,bus=pcie.0,id=cxl.1",
            "-device", "cxl-rp,port=0,bus=cxl.1,id=rp0,chassis=0,slot=2",
            "-device", "cxl-upstream,bus=rp0,id=us0",
            "-device", "cxl-downstream,port=0,bus=us0,id=dsp0,chassis=0,slot=4",
            "-device", json.dumps(dev),
            "-M", "cxl-fmw.0.targets.0=cxl.1,cxl-fmw.0.size=4G",
            "-qmp", f"unix:{qmpp},server=on,wait=off"] + extra
    with open(os.path.join(LOGDIR, f"{name}.qemu-cmd.log"), "w") as f:
        f.write(" ".join(args) + "\n")
    log = open(os.path.join(LOGDIR, f"{name}.qemu.log"), "w")
    p = subprocess.Popen(args, stdin=subprocess.DEVNULL, stdout=log, stderr=subprocess.STDOUT)
    procs.append(p)
    try:
        qt = QTest(listener)
    finally:
        listener.close()
    end = time.monotonic() + 20
    while not os.path.exists(qmpp):
        if p.poll() is not None or time.monotonic() > end:
            raise RuntimeError(f"{name} QEMU did not start")
        time.sleep(0.05)
    return p, qt, qmp(qmpp)


def program(qt):
    """What firmware and the guest's drivers would do (the source only)."""
    qt.cmd("outl 0xcf8 0x80000064")  # MCH PCIEXBAR (q35): ECAM at ECAM, 256 buses
    qt.cmd("outl 0xcfc 0x0")
    qt.cmd("outl 0xcf8 0x80000060")
    qt.cmd(f"outl 0xcfc 0x{ECAM | 1:x}")
    for bdf, bar, sec, sub in ((RP, RP_BAR, 13, 15), (USP, USP_BAR, 14, 15),
                               (DSP, DSP_BAR, 15, 15)):
        win = ((WIN[bdf] >> 16) & 0xFFF0) | (((WIN_LIMIT >> 16) & 0xFFF0) << 16)
        qt.wr(cfg(bdf, 0x18), bdf[0] | (sec << 8) | (sub << 16))
        qt.wr(cfg(bdf, 0x10), bar | 0x4)  # BAR0: 64-bit memory, the component registers
        qt.wr(cfg(bdf, 0x14), 0)
        qt.wr(cfg(bdf, 0x20), win)
        qt.wr(cfg(bdf, 0x24), 0x0000FFF0)  # no prefetchable window
        qt.wr(cfg(bdf, 0x04), 0x0146, 2)  # memory, bus master, parity, SERR#
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
    if not tap(ok, "the source vcxl-server listens"):
        return
    src, sqt, sq = start_qemu(tmp, "src", ssock, [])
    hdm = program(sqt)
    tap(hdm is not None, "the source: buses, windows, BARs, AER/RAS masks set through qtest; "
        "us0's HDM decoder 0 committed", "no HDM capability in us0's component registers")
    ctrl = sqt.rd(USP_BAR + hdm + 0x20) if hdm else 0
    tap(bool(ctrl & (1 << 10)), f"us0's decoder 0 reads Committed on the source (ctrl {ctrl:#x})")
    vid = sqt.rd(cfg(DEV))
    tap(vid & 0xFFFF == 0x8086, f"vcxl0 answers through the switch at 15:00.0 ({vid:#010x})")
    doe = find_ext_cap(sqt, USP, 0x002E)
    tap(doe is not None, f"us0 has a DOE mailbox (at {doe:#x})" if doe else "us0's DOE mailbox")
    if doe:
        sqt.wr(cfg(USP, doe + 0x10), DOE_CDAT_HDR1)  # the request's first dword only
    before = state(sqt)

    path = os.path.join(tmp, "vm.mig")
    t = time.monotonic()
    r = sq.cmd("migrate", uri=f"file:{path}")
    mi = wait_migration(sq) if "error" not in r else {}
    tap(mi.get("status") == "completed", f"migrate file: completed ({mi.get('total-time')} ms, "
        f"{os.path.getsize(path) if os.path.exists(path) else 0} bytes)",
        json.dumps(r) + " " + json.dumps(mi))
    note(f"migrate took {(time.monotonic() - t) * 1000:.0f} ms")
    sq.cmd("quit")
    src.wait(20)

    dsock, ok = start_server(tmp, "dst")
    if not tap(ok, "a new vcxl-server listens for the destination"):
        return
    dst, dqt, dq = start_qemu(tmp, "dst", dsock, ["-incoming", f"file:{path}"])
    dmi = wait_migration(dq)
    st = dq.cmd("query-status").get("return", {})
    tap(dmi.get("status") == "completed", f"the destination loaded the file ({st.get('status')})",
        json.dumps(dmi) + " " + json.dumps(st))
    after = state(dqt)
    for key in before:
        tap(before[key] == after[key], f"{key}: equal after migration (4 KiB)",
            diff(before[key], after[key]))
    ctrl = dqt.rd(USP_BAR + hdm + 0x20) if hdm else 0
    base = (dqt.rd(USP_BAR + hdm + 0x14) << 32) | dqt.rd(USP_BAR + hdm + 0x10) if hdm else 0
    tap(bool(ctrl & (1 << 10)) and base == HDM_BASE,
        f"us0's decoder 0 is still committed at {HDM_BASE:#x} (ctrl {ctrl:#x}, base {base:#x})")
    vid = dqt.rd(cfg(DEV))
    tap(vid & 0xFFFF == 0x8086,
        f"vcxl0 answers through the migrated switch at 15:00.0 ({vid:#010x})")
    if doe:
        # finish the request begun on the source: length 3, CDAT entry 0, then Go
        dqt.wr(cfg(USP, doe + 0x10), 3)
        dqt.wr(cfg(USP, doe + 0x10), 0)
        dqt.wr(cfg(USP, doe + 0x08), 1 << 31)
        status = dqt.rd(cfg(USP, doe + 0x0C))
        rsp = dqt.rd(cfg(USP, doe + 0x14)) if status & (1 << 31) else None
        tap(status & (1 << 31) and not status & (1 << 2) and rsp == DOE_CDAT_HDR1,
            "the DOE request begun on the source completes on the destination (CDAT response)",
            f"status {status:#x}, first response dword {rsp}")
    dq.cmd("quit")
    dst.wait(20)


def main():
    tmp = tempfile.mkdtemp(prefix="vcxl-migswitch.")
    t0 = time.monotonic()
    try:
        run(tmp)
    except (OSError, RuntimeError, ValueError) as e:
        tap(False, "the test ran to its end", repr(e))
    finally:
        for p in reversed(procs):
            if p.poll() is None:
                p.terminate()
                try:
                    p.wait(10)
                except subprocess.TimeoutExpired:
                    p.kill()
                    p.wait()
        shutil.rmtree(tmp, ignore_errors=True)
    note(f"{time.monotonic() - t0:.1f} s")
    print(f"1..{n}", flush=True)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
