# SPDX-License-Identifier: BSD-3-Clause
"""e2e_qtest.py - QEMU under the qtest accelerator as a CXL switch topology's firmware and
driver (no guest), shared by tests/e2e/switch-doe.py, switch-fw.py and migrate-switch.py:

  Tap()                   TAP output: .ok(cond, desc, diag), .note(text), .end() -> exit code
  QTest(listener)         QEMU's qtest protocol (docs/devel/testing/qtest.rst) once QEMU
                          connected: .cmd(line), .rd(addr, size), .wr(addr, val, size),
                          .wr_many([(addr, val)]) pipelined (thousands of writes a second),
                          .block(addr, length) bytes read a dword at a time
  cfg(bdf, off)           the ECAM address of a config register (q35, ECAM at ECAM)
  ecam_on(qt)             the MCH's PCIEXBAR set to ECAM, as SeaBIOS does
  switch_on(qt, command)  ecam_on, then SWITCH's bus numbers, bridge windows and component
                          register BARs (RP_BAR, USP_BAR, DSP_BAR) as firmware sets them
  find_ext_cap(qt, bdf, id), find_cm_cap(qt, bar, id)
                          a PCIe extended capability / a CXL.cachemem capability
  qemu_start(qemu, tmp, logdir, name, args, qtest_log, procs, ram_fd)
                          QEMU -accel qtest with a QMP socket: (Popen, QTest, QMP); the
                          Popen also appended to the list procs (if given) once started;
                          guest RAM a shared memfd, or with ram_fd=False anonymous memory
                          (no fd: the server reaches it by DMA_READ/DMA_WRITE messages)
  SWITCH                  the pxb-cxl -> cxl-rp -> cxl-upstream -> cxl-downstream arguments
  CDAT_HDR1               a CDAT table access data object's first dword (DOE)
  tap_main(t, run, prefix, procs, errors)
                          run(tmp) in a fresh temporary directory: an exception in errors a
                          failed point, then procs stopped and the directory removed; the
                          exit code
"""
import os
import shutil
import socket
import subprocess
import tempfile
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from e2e_qmp import proc_stop, qmp  # noqa: E402 (the e2e library)

ECAM = 0xB0000000  # q35's PCIEXBAR, as SeaBIOS places it
CM = 0x1000  # CXL.cachemem registers in the component register block (CXL r3.1 8.2.3)
SWITCH = ["-machine", "q35,cxl=on,memory-backend=ram0",
          "-device", "pxb-cxl,bus_nr=12,bus=pcie.0,id=cxl.1",
          "-device", "cxl-rp,port=0,bus=cxl.1,id=rp0,chassis=0,slot=2",
          "-device", "cxl-upstream,bus=rp0,id=us0",
          "-device", "cxl-downstream,port=0,bus=us0,id=dsp0,chassis=0,slot=4",
          "-M", "cxl-fmw.0.targets.0=cxl.1,cxl-fmw.0.size=4G"]
RP, USP, DSP, DEV = (12, 0, 0), (13, 0, 0), (14, 0, 0), (15, 0, 0)
# the 32-bit MMIO switch_on hands out: each port's component register BAR (64 KiB) at the
# bottom of the window of the bus it sits on, each bridge's window [base, WIN_LIMIT] above
# its own BAR (rp0's BAR is on the pxb-cxl root bus, below rp0's window)
RP_BAR, USP_BAR, DSP_BAR = 0xC0000000, 0xC0100000, 0xC0200000
WIN = {RP: 0xC0100000, USP: 0xC0200000, DSP: 0xC0300000}
WIN_LIMIT = 0xC07FFFFF
CDAT_HDR1 = 0x1E98 | (2 << 16)  # CXL vendor ID, data object type 2: table access


class Tap:
    def __init__(self):
        self.n = 0
        self.failed = 0

    def ok(self, cond, desc, diag=None):
        self.n += 1
        print(f"{'ok' if cond else 'not ok'} {self.n} - {desc}", flush=True)
        if not cond:
            self.failed += 1
            self.note(diag or "")
        return bool(cond)

    @staticmethod
    def note(text):
        for line in str(text).splitlines():
            print(f"# {line}", flush=True)

    def end(self):
        print(f"1..{self.n}", flush=True)
        return 1 if self.failed or not self.n else 0


class QTest:
    """QEMU's qtest protocol: QEMU connects to our socket, one reply line a command."""

    def __init__(self, listener, timeout=float(os.environ.get("QTEST_TIMEOUT", "30"))):
        listener.settimeout(timeout)
        try:
            self.s, _ = listener.accept()
        except socket.timeout:
            raise RuntimeError(f"qtest: QEMU did not connect in {timeout:.0f} s") from None
        self.s.settimeout(timeout)
        self.timeout = timeout
        self.buf = b""

    def _reply(self, line):
        while True:
            while b"\n" not in self.buf:
                try:
                    chunk = self.s.recv(1 << 16)
                except socket.timeout:
                    # which command QEMU did not answer (a wait on the device, a hang)
                    raise RuntimeError(f"qtest: no reply to {line!r} in "
                                       f"{self.timeout:.0f} s") from None
                if not chunk:
                    raise RuntimeError("qtest: QEMU closed the connection")
                self.buf += chunk
            reply, self.buf = self.buf.split(b"\n", 1)
            reply = reply.decode()
            if reply.startswith("IRQ"):
                continue  # an interrupt notification, not a reply
            if not reply.startswith("OK"):
                raise RuntimeError(f"qtest: {line!r} -> {reply!r}")
            return reply[3:]

    def cmd(self, line):
        self.s.sendall(line.encode() + b"\n")
        return self._reply(line)

    def rd(self, addr, size=4):
        return int(self.cmd(f"read{'bwlq'[[1, 2, 4, 8].index(size)]} 0x{addr:x}"), 16)

    def wr(self, addr, val, size=4):
        self.cmd(f"write{'bwlq'[[1, 2, 4, 8].index(size)]} 0x{addr:x} 0x{val:x}")

    def wr_many(self, writes, window=64):
        """dword writes, up to window commands in flight (their replies read behind them)"""
        writes = list(writes)
        sent = done = 0
        while done < len(writes):
            batch = writes[sent:min(len(writes), done + window)]
            if batch:
                self.s.sendall(b"".join(f"writel 0x{a:x} 0x{v:x}\n".encode() for a, v in batch))
                sent += len(batch)
            self._reply("writel")
            done += 1

    def block(self, addr, length):
        """length bytes at addr, read a dword at a time (as a guest reads registers)"""
        return b"".join(self.rd(addr + o).to_bytes(4, "little") for o in range(0, length, 4))


def cfg(bdf, off=0):
    bus, dev, fn = bdf
    return ECAM + (bus << 20) + (dev << 15) + (fn << 12) + off


def ecam_on(qt):
    qt.cmd("outl 0xcf8 0x80000064")  # MCH PCIEXBAR (q35): ECAM at ECAM, 256 buses
    qt.cmd("outl 0xcfc 0x0")
    qt.cmd("outl 0xcf8 0x80000060")
    qt.cmd(f"outl 0xcfc 0x{ECAM | 1:x}")


def switch_on(qt, command=0x0006):
    """ecam_on, then bus numbers, bridge windows and component register BARs of SWITCH's
    ports, as firmware sets them; command: each port's Command register (0x0006: memory,
    bus master)"""
    ecam_on(qt)
    for bdf, bar, sec, sub in ((RP, RP_BAR, 13, 15), (USP, USP_BAR, 14, 15),
                               (DSP, DSP_BAR, 15, 15)):
        qt.wr(cfg(bdf, 0x18), bdf[0] | (sec << 8) | (sub << 16))
        qt.wr(cfg(bdf, 0x10), bar | 0x4)  # BAR0: 64-bit memory, the component registers
        qt.wr(cfg(bdf, 0x14), 0)
        qt.wr(cfg(bdf, 0x20), ((WIN[bdf] >> 16) & 0xFFF0) | (((WIN_LIMIT >> 16) & 0xFFF0) << 16))
        qt.wr(cfg(bdf, 0x24), 0x0000FFF0)  # no prefetchable window
        qt.wr(cfg(bdf, 0x04), command, 2)


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


def qemu_start(qemu, tmp, logdir, name, args, qtest_log=True, procs=None, ram_fd=True):
    qtp, qmpp = os.path.join(tmp, f"{name}.qtest"), os.path.join(tmp, f"{name}.qmp")
    listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    listener.bind(qtp)
    listener.listen(1)
    argv = [qemu, "-nodefaults", "-accel", "qtest", "-qtest", f"unix:{qtp}",
            "-object", ("memory-backend-memfd,id=ram0,size=256M,share=on" if ram_fd
                        else "memory-backend-ram,id=ram0,size=256M"), "-m", "256M",
            "-display", "none", "-monitor", "none", "-serial", "none", "-nic", "none",
            "-qmp", f"unix:{qmpp},server=on,wait=off"] + args
    argv[6:6] = ["-qtest-log",
                 os.path.join(logdir, f"{name}.qtest.log") if qtest_log else "/dev/null"]
    with open(os.path.join(logdir, f"{name}.qemu-cmd.log"), "w") as f:
        f.write(" ".join(argv) + "\n")
    log = open(os.path.join(logdir, f"{name}.qemu.log"), "w")
    p = subprocess.Popen(argv, stdin=subprocess.DEVNULL, stdout=log, stderr=subprocess.STDOUT)
    if procs is not None:
        procs.append(p)  # the caller stops it, even when it never connects
    try:
        qt = QTest(listener)
    except RuntimeError as e:
        # say whether QEMU is gone, and what it printed last
        with open(log.name, errors="replace") as f:
            tail = " | ".join(f.read().splitlines()[-4:])
        state = "running" if p.poll() is None else f"exited with status {p.returncode}"
        raise RuntimeError(f"{name}: {e}; QEMU {state}; its log: {tail or '(empty)'}") from None
    finally:
        listener.close()
    end = time.monotonic() + 20
    while not os.path.exists(qmpp):
        if p.poll() is not None or time.monotonic() > end:
            raise RuntimeError(f"{name} QEMU did not start")
        time.sleep(0.05)
    return p, qt, qmp(qmpp)


def tap_main(t, run, prefix, procs=(), errors=(OSError, RuntimeError, ValueError)):
    tmp = tempfile.mkdtemp(prefix=prefix)
    t0 = time.monotonic()
    try:
        run(tmp)
    except errors as e:
        t.ok(False, "the test ran to its end", repr(e))
    finally:
        for p in reversed(procs):
            proc_stop(p)
        shutil.rmtree(tmp, ignore_errors=True)
    t.note(f"{time.monotonic() - t0:.1f} s")
    return t.end()
