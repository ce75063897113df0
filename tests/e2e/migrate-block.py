#!/usr/bin/env python3
# SPDX-License-Identifier: BSD-3-Clause
"""migrate-block.py QEMU SERVER LOGDIR - a VM whose vcxl server cannot migrate refuses to (TAP).

Two vcxl-servers and two CXL-aware QEMUs (TCG, no guest kernel: SeaBIOS runs and finds
nothing to boot) with the same command line, the device (id vcxl0) under a CXL root port;
the second QEMU waits with -incoming unix:PATH. Each QEMU reaches its server through a relay
in this script that plays a server without migration support, as vcxl-server was before it
had any (and as its hardware backend is): DEVICE_FEATURE and MIG_DATA_READ/WRITE are
answered ENOSYS, every other message passes through with its fds. QMP `migrate` on the
source must be refused with an error that names the device (its id, its socket, vfio-cxl),
no migration may start or complete, the source must run on with its device answering (a
config space read through QEMU's ECAM reaches the server: its REGION_READ count grows and
the vendor ID is read back), and the destination must still wait. Last, a QEMU with
-only-migratable must refuse the device at start. Before vmm/qemu's migration blocker the
migration completed, and the device's state was lost.
Logs in LOGDIR: src.*, dst.*, srv-*.log, only-migratable.log.
"""
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from e2e_qmp import JsonLines, Relay, proc_stop, qmp, server_start  # noqa: E402 (the e2e library)

QEMU, SERVER, LOGDIR = sys.argv[1], sys.argv[2], sys.argv[3]
VCXL_VENDOR = 0x8086
MMCFG_BASE = 0xB0000000  # q35's PCIe ECAM as SeaBIOS programs it (PCIEXBAR)
ID = "vcxl0"

n = 0
failed = 0
procs = []


def tap(ok, desc, diag=None):
    global n, failed
    n += 1
    if ok:
        print(f"ok {n} - {desc}", flush=True)
    else:
        failed += 1
        print(f"not ok {n} - {desc}", flush=True)
    if diag and not ok:
        for line in str(diag).splitlines():
            print(f"# {line}", flush=True)


def note(text):
    for line in str(text).splitlines():
        print(f"# {line}", flush=True)


def wait_path(path, proc, secs=20.0):
    end = time.monotonic() + secs
    while time.monotonic() < end:
        if os.path.exists(path):
            return True
        if proc.poll() is not None:
            return False
        time.sleep(0.05)
    return False


def start_server(tmp, name):
    """vcxl-server as a service manager starts it: ready once it sent READY=1"""
    sock = os.path.join(tmp, f"{name}.sock")
    p, why = server_start([SERVER, "--socket", sock, "--mem-size", "256M", "--decoders", "2",
                           "--log-level", "debug"], os.path.join(LOGDIR, f"srv-{name}.log"))
    procs.append(p)
    if why:
        note(f"server {name}: {why}")
    return p, sock, why is None


def qemu_args(sock, qmp_path, extra):
    dev = {"driver": "vfio-user-pci", "socket": {"type": "unix", "path": sock}, "id": ID,
           "bus": "rp0"}
    return [QEMU, "-L", "/usr/share/seabios", "-L", "/usr/share/qemu", "-nodefaults",
            "-accel", "tcg", "-object", "memory-backend-memfd,id=ram0,size=256M,share=on",
            "-m", "256M", "-smp", "1", "-display", "none", "-monitor", "none",
            "-serial", "none", "-no-reboot", "-nic", "none",
            "-machine", "q35,cxl=on,memory-backend=ram0",
            "-device", "pxb-cxl,bus_nr=12,bus=pcie.0,id=cxl.1",
            "-device", "cxl-rp,port=0,bus=cxl.1,id=rp0,chassis=0,slot=2",
            "-device", json.dumps(dev),
            "-M", "cxl-fmw.0.targets.0=cxl.1,cxl-fmw.0.size=4G",
            "-qmp", f"unix:{qmp_path},server=on,wait=off"] + extra


def start_qemu(name, sock, tmp, extra):
    qp = os.path.join(tmp, f"{name}.qmp")
    args = qemu_args(sock, qp, extra)
    with open(os.path.join(LOGDIR, f"{name}.qemu-cmd.log"), "w") as f:
        f.write(" ".join(args) + "\n")
    log = open(os.path.join(LOGDIR, f"{name}.qemu.log"), "w")
    p = subprocess.Popen(args, stdin=subprocess.DEVNULL, stdout=log, stderr=subprocess.STDOUT)
    procs.append(p)
    if not wait_path(qp, p):
        return p, None
    return p, qmp(qp)


def find_dev(pci):
    """(bus, slot, function, vendor_id) of vcxl0 in query-pci's tree, or None."""

    def walk(devs):
        for d in devs:
            if d.get("qdev_id") == ID:
                return d["bus"], d["slot"], d["function"], d["id"]["vendor"]
            br = d.get("pci_bridge")
            if br and br.get("devices"):
                r = walk(br["devices"])
                if r:
                    return r
        return None

    for b in pci.get("return", []):
        r = walk(b.get("devices", []))
        if r:
            return r
    return None


def region_reads(ctl):
    st = ctl.cmd("query-status").get("return", {})
    d = st.get("devices", [{}])[0]
    cl = d.get("client") or {}
    by = (d.get("counters") or {}).get("messages_by_command", {})
    return cl.get("pid"), by.get("REGION_READ", 0)


def config_read_ecam(q, bdf):
    """The device's dword 0 read through the guest's ECAM window (HMP xp: QEMU's own
    physical access, which reaches vfio_pci_read_config and so the server)."""
    bus, slot, fn = bdf
    addr = MMCFG_BASE + (bus << 20) + (slot << 15) + (fn << 12)
    end = time.monotonic() + 10  # SeaBIOS may not have mapped the ECAM yet
    while True:
        r = q.cmd("human-monitor-command", **{"command-line": f"xp /1wx 0x{addr:x}"})
        out = r.get("return", "")
        if "Cannot access memory" not in out or time.monotonic() > end:
            break
        time.sleep(0.1)
    try:
        return int(out.split(":")[1].split()[0], 16), out.strip()
    except (IndexError, ValueError):
        return None, out.strip()


def device_answers(q, ctl, bdf, qpid):
    """The source's device answers: a config read through QEMU reaches the server (whose
    client is the relay in this process, qpid)."""
    pid0, reads0 = region_reads(ctl)
    val, out = config_read_ecam(q, bdf)
    pid1, reads1 = region_reads(ctl)
    ok = (val is not None and (val & 0xFFFF) == VCXL_VENDOR and pid0 == qpid == pid1 and
          reads1 > reads0)
    return ok, f"xp: {out}; server client pid {pid0}->{pid1} (QEMU {qpid}), " \
               f"REGION_READ {reads0}->{reads1}"


def wait_bdf(q, secs=60.0):
    """SeaBIOS numbers the CXL root port's bus; until then the device is not reachable."""
    end = time.monotonic() + secs
    while time.monotonic() < end:
        r = find_dev(q.cmd("query-pci"))
        if r and r[0] != 0:
            return r
        time.sleep(0.2)
    return find_dev(q.cmd("query-pci"))


def main():
    tmp = tempfile.mkdtemp(prefix="vcxl-migblock.")
    t0 = time.monotonic()
    try:
        run(tmp)
    finally:
        for p in reversed(procs):
            proc_stop(p)
        shutil.rmtree(tmp, ignore_errors=True)
    note(f"{time.monotonic() - t0:.1f} s")
    print(f"1..{n}", flush=True)
    return 1 if failed else 0


def run(tmp):
    ssrv, ssock, ok1 = start_server(tmp, "src")
    dsrv, dsock, ok2 = start_server(tmp, "dst")
    tap(ok1 and ok2, "two vcxl-servers listen (source, destination)")
    if not (ok1 and ok2):
        return
    mig = os.path.join(tmp, "mig.sock")
    # QEMU talks to the servers through relays that refuse migration
    qssock, qdsock = os.path.join(tmp, "src-nomig.sock"), os.path.join(tmp, "dst-nomig.sock")
    srelay = Relay(qssock, ssock, "nomig")
    Relay(qdsock, dsock, "nomig")
    src, sq = start_qemu("src", qssock, tmp, [])
    dst, dq = start_qemu("dst", qdsock, tmp, ["-incoming", f"unix:{mig}"])
    tap(sq is not None and dq is not None,
        "source QEMU runs and the destination waits (-incoming), both with vcxl0")
    if sq is None or dq is None:
        for name in ("src", "dst"):
            with open(os.path.join(LOGDIR, f"{name}.qemu.log")) as f:
                note(f.read()[-2000:])
        return
    sctl = JsonLines(ssock + ".ctl")
    bdf = wait_bdf(sq)
    st = sq.cmd("query-status").get("return", {})
    tap(st.get("status") == "running" and bdf is not None and bdf[0] != 0,
        f"the source runs and firmware numbered vcxl0's bus ({bdf})", f"query-status {st}")
    if bdf is None:
        return
    bdf = bdf[:3]
    ok, why = device_answers(sq, sctl, bdf, os.getpid())
    tap(ok, "before migrate: a config read through the source QEMU reaches its server", why)
    note(f"the relay answered {srelay.refused} migration requests ENOSYS")

    t = time.monotonic()
    r = sq.cmd("migrate", uri=f"unix:{mig}")
    ms = (time.monotonic() - t) * 1000
    err = r.get("error", {}).get("desc", "")
    note(f"migrate -> {json.dumps(r)} ({ms:.0f} ms)")
    tap("error" in r, "QMP migrate is refused", json.dumps(r))
    for word, what in ((f"'{ID}'", "the device id"), (qssock, "its socket"),
                       ("vfio-cxl", "vfio-cxl"), ("migration", "migration")):
        tap(word in err, f"the error names {what} ({word})", f"error: {err!r}")
    tap("would be lost" in err and "CXL memory" in err and "does not support vfio-user "
        "migration" in err,
        "the error says why: the server cannot migrate, the device state (CXL memory) would "
        "be lost", f"error: {err!r}")

    # what happens without the blocker: the migration runs to its end (recorded, not waited
    # on for long)
    status = None
    end = time.monotonic() + (30 if "error" not in r else 1.5)
    while time.monotonic() < end:
        status = sq.cmd("query-migrate").get("return", {}).get("status")
        if status in ("completed", "failed", "cancelled"):
            break
        time.sleep(0.1)
    mi = sq.cmd("query-migrate").get("return", {})
    note(f"source query-migrate: status {status}, total-time {mi.get('total-time')} ms, "
         f"downtime {mi.get('downtime')} ms")
    tap(status in (None, "none"), "query-migrate: no migration started or completed",
        f"status {status}")
    st = sq.cmd("query-status").get("return", {})
    tap(st.get("status") == "running" and st.get("running") is True,
        "the source VM is still running", f"query-status {st}")
    ok, why = device_answers(sq, sctl, bdf, os.getpid())
    tap(ok, "after migrate: the source's device still answers through its server", why)
    dst_st = dq.cmd("query-status").get("return", {})
    tap(dst_st.get("status") == "inmigrate", "the destination still waits (inmigrate)",
        f"query-status {dst_st}")
    # a second attempt is refused the same way (the blocker stays while the device exists)
    r2 = sq.cmd("migrate", uri=f"unix:{mig}")
    tap("error" in r2 and r2["error"].get("desc") == err, "a second migrate is refused alike",
        json.dumps(r2))
    sctl.close()
    sq.cmd("quit")
    dq.cmd("quit")
    src.wait(20)
    dst.wait(20)
    tap(src.returncode == 0 and dst.returncode == 0,
        "both QEMUs quit cleanly", f"rc {src.returncode} {dst.returncode}")

    # -only-migratable: a device that blocks migration is refused at start
    log = os.path.join(LOGDIR, "only-migratable.log")
    args = qemu_args(qssock, os.path.join(tmp, "om.qmp"), ["-only-migratable", "-S"])
    with open(log, "w") as f:
        p = subprocess.Popen(args, stdin=subprocess.DEVNULL, stdout=f, stderr=subprocess.STDOUT)
        procs.append(p)
        try:
            rc = p.wait(10)
        except subprocess.TimeoutExpired:
            rc = None
    with open(log) as f:
        out = f.read()
    tap(rc not in (None, 0) and "only-migratable" in out and f"'{ID}'" in out,
        "with -only-migratable QEMU refuses vcxl0 at start", f"rc {rc}: {out[-1500:]}")


if __name__ == "__main__":
    sys.exit(main())
