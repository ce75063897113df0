#!/usr/bin/env python3
# SPDX-License-Identifier: BSD-3-Clause
"""bench-proxy.py QEMU SERVER [N [QEMU-ARG...]] - the round trip of a synchronous vfio-user
request through QEMU's vfio-user proxy (hw/vfio-user/proxy.c), outside a migration.

QEMU under the qtest accelerator (no guest), q35, a vfio-user-pci device (x-cxl=off) at
00:05.0 talking to a vcxl-server. Through qtest and the ECAM this script reads the first
dword of the device's config space (vfio-pci forwards it: one VFIO_USER_REGION_READ round
trip from QEMU's main thread) and of the host bridge 00:00.0 (emulated: qtest's own cost),
N of each (default 2000), interleaved so both see the same load, and prints per-read
percentiles of both and of their difference pair by pair; `proxy_roundtrip_us median` is
the round trip as QEMU's main thread sees it. QEMU-ARGs are appended to QEMU's command line
(e.g. -global vfio-user-pci.x-msg-poll-ns=0, or -trace vfio_user_poll_reply -D FILE).
Compare with `make bench`'s region_read_4B_roundtrip (the server alone, its own client).
"""
import json
import os
import shutil
import socket
import statistics
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "tests", "e2e"))
from e2e_qmp import server_start  # noqa: E402

QEMU, SERVER = sys.argv[1], sys.argv[2]
N = int(sys.argv[3]) if len(sys.argv) > 3 else 2000
EXTRA = sys.argv[4:]
ECAM = 0xB0000000


def main():
    tmp = tempfile.mkdtemp(prefix="vcxl-bench-proxy.")
    procs = []
    try:
        sock = os.path.join(tmp, "srv.sock")
        p, why = server_start([SERVER, "--socket", sock, "--mem-size", "256M"],
                              os.path.join(tmp, "srv.log"))
        procs.append(p)
        if why:
            sys.exit(f"server: {why}")
        qtp = os.path.join(tmp, "qtest")
        lis = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        lis.bind(qtp)
        lis.listen(1)
        dev = {"driver": "vfio-user-pci", "socket": {"type": "unix", "path": sock},
               "x-cxl": False, "addr": "05.0", "id": "d0"}
        args = [QEMU, "-nodefaults", "-accel", "qtest", "-qtest", f"unix:{qtp}",
                "-qtest-log", "/dev/null", "-display", "none", "-monitor", "none",
                "-serial", "none", "-nic", "none", "-machine", "q35", "-m", "256M",
                "-device", json.dumps(dev)] + EXTRA
        log = open(os.path.join(tmp, "qemu.log"), "w")
        procs.append(subprocess.Popen(args, stdin=subprocess.DEVNULL, stdout=log,
                                      stderr=subprocess.STDOUT))
        lis.settimeout(20)
        s, _ = lis.accept()
        s.settimeout(20)
        f = s.makefile("rb")

        def cmd(line):
            s.sendall(line.encode() + b"\n")
            while True:
                r = f.readline()
                if not r:
                    with open(os.path.join(tmp, "qemu.log")) as lf:
                        sys.exit("qtest: QEMU closed the connection; " + lf.read())
                if r.startswith(b"OK"):
                    return r[3:].strip()
                if not r.startswith(b"IRQ"):
                    sys.exit(f"qtest: {line} -> {r!r}")

        cmd("outl 0xcf8 0x80000064")
        cmd("outl 0xcfc 0x0")
        cmd("outl 0xcf8 0x80000060")
        cmd(f"outl 0xcfc 0x{ECAM | 1:x}")
        devrd = f"readl 0x{ECAM + (5 << 15):x}"
        hostrd = f"readl 0x{ECAM:x}"
        vid = int(cmd(devrd), 16)
        if vid in (0, 0xFFFFFFFF):
            sys.exit(f"the device does not answer at 00:05.0 ({vid:#x})")
        tdev, thost = [], []
        for _ in range(N):  # interleaved: both see the same load
            for line, acc in ((hostrd, thost), (devrd, tdev)):
                t0 = time.perf_counter_ns()
                cmd(line)
                acc.append(time.perf_counter_ns() - t0)

        def pct(v):
            v = sorted(v)
            return " ".join(f"p{q}={v[len(v) * q // 100] / 1000:.1f}" for q in (10, 25, 50, 90))
        diff = [d - h for d, h in zip(tdev, thost)]
        print(f"# {N} reads each, interleaved, us")
        print(f"host bridge 00:00.0 (emulated)   {pct(thost)}")
        print(f"vfio-user-pci 00:05.0 (forwarded) {pct(tdev)}")
        print(f"difference, pair by pair          {pct(diff)}")
        print(f"proxy_roundtrip_us median {statistics.median(diff) / 1000:.1f} "
              f"p25 {sorted(diff)[len(diff) // 4] / 1000:.1f}")
        s.close()
    except OSError:
        if os.path.exists(os.path.join(tmp, "qemu.log")):
            with open(os.path.join(tmp, "qemu.log")) as lf:
                print(lf.read(), file=sys.stderr)
        raise
    finally:
        for p in reversed(procs):
            p.terminate()
            try:
                p.wait(5)
            except subprocess.TimeoutExpired:
                p.kill()
        shutil.rmtree(tmp, ignore_errors=True)


main()
