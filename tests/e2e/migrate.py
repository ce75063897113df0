#!/usr/bin/env python3
# SPDX-License-Identifier: BSD-3-Clause
"""migrate.py CONFIG SRC-QEMU-PID - the host half of e2e-migrate (run-e2e-migrate.sh, whose
header says what is proven). Runs while the source guest boots (lib.sh e2e_boot --during).

CONFIG (JSON, written by run-e2e-migrate.sh): the QEMU binary and its command line with
@SOCK@ (the device's vfio-user socket), @QMP@ and @TTY@ (the guest's command line,
/dev/ttyS1) for placeholders: the same for every QEMU, only those paths differ; the
vcxl-server binary and its options (without --socket); the source's paths; the results
file. Each check is a line "ok DETAIL" or "FAIL DETAIL" in the results file (the script
numbers them as TAP); "# ..." lines on stdout say what happened.

Order: the non-migratable control (its own VM without a guest); then, once the guest says
MIG-READY: migrate_cancel, a destination with another --mem-size, a corrupt stream (each
with a destination of its own; the guest verifies on the source after each), the live
migration (repeated until the source device was found with a job in flight when the VM
stopped), the guest's and the host's verification on the destination, a save to a file, a
restore of it behind a relay refusing the device's STOP -> RUNNING, a restore on a fresh
server and QEMU (behind a relay refusing STOP_COPY), verified again, the guest's FINAL, then
a save of that VM the relay refuses, and the guest's power-off.
"""
import json
import os
import re
import signal
import socket
import subprocess
import sys
import time

sys.dont_write_bytecode = True
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from e2e_qmp import JsonLines, Relay, hostcheck, proc_stop, qmp, rss_kib, server_start  # noqa: E402

CFG = json.load(open(sys.argv[1]))
SRC_QEMU_PID = int(sys.argv[2])
TMP, LOG = CFG["tmp"], CFG["log"]
RESULTS = open(CFG["results"], "w")
ID = "vcxl0"
T0 = time.monotonic()
ATTEMPTS = 12  # migrations tried until one stops the VM with a job in flight
STAT = {}  # figures for the summary
# migrate-guest.c's UNTOUCHED_OFF and UNTOUCHED_LEN: region memory the guest never writes
UNTOUCHED = (448 << 20, 4 << 20)
# the trace of a destination QEMU taking its CXL region as zero (vmm/qemu 0039)
INCOMING_ZERO = re.compile(r"vfio_cxl_region_incoming_zero +\(\S+\) the CXL region holds no data")
# at least this much of the 512 MiB region is never written (the guest's zones end at 324 MiB)
UNTOUCHED_MIN_KIB = 128 << 10
VMS = []  # every VM started here: whatever still runs at the end is stopped


def note(text):
    for line in str(text).splitlines():
        print("# " + line, flush=True)


def res(ok, detail, why=None):
    RESULTS.write(("ok " if ok else "FAIL ") + detail.replace("\n", " ") + "\n")
    RESULTS.flush()
    if why and not ok:
        note(why)
    return ok


def alive(pid):
    try:
        with open("/proc/%d/stat" % pid) as f:
            return f.read().rsplit(")", 1)[1].split()[0] != "Z"
    except (OSError, IndexError):
        return False


def wait_until(pred, secs, step=0.05):
    end = time.monotonic() + secs
    while time.monotonic() < end:
        v = pred()
        if v:
            return v
        time.sleep(step)
    return pred()


class Console:
    """A guest console file (QEMU's stdout): lines waited for from an offset on."""

    def __init__(self, path):
        self.path, self.pos = path, 0

    def text(self):
        try:
            with open(self.path, "rb") as f:
                return f.read().decode(errors="replace").replace("\r", "")
        except OSError:
            return ""

    def wait(self, regex, secs, alive_pid=None):
        """the first line matching regex past the last wait's match, or None"""
        rx = re.compile(regex, re.M)
        end = time.monotonic() + secs
        while True:
            t = self.text()
            m = rx.search(t, self.pos)
            if m:
                self.pos = m.end()
                return m
            if time.monotonic() > end or (alive_pid and not alive(alive_pid)):
                return None
            time.sleep(0.1)


class VM:
    """One QEMU (the source: started by the shell's e2e_boot; the others here) and its
    vcxl-server."""

    def __init__(self, name):
        self.name = name
        self.sock = os.path.join(TMP, name + ".sock")
        self.qmp_path = os.path.join(TMP, name + ".qmp")
        self.tty_path = os.path.join(TMP, name + ".tty")
        if name != "src":  # a second attempt (e2e_boot's retry) finds the first's
            for p in (self.sock, self.sock + ".ctl", self.sock + ".relay", self.qmp_path,
                      self.tty_path):
                if os.path.lexists(p):
                    os.unlink(p)
        self.console = Console(os.path.join(LOG, name + ".console.log"))
        self.server_log = os.path.join(LOG, name + ".server.log")
        self.qemu = self.server = self.q = self.tty = self.relay = None
        self.qemu_pid = self.server_pid = None
        VMS.append(self)

    @property
    def ctl(self):
        return self.sock + ".ctl"

    def start_server(self, mem_size=None, extra=()):
        argv = [CFG["server"], "--socket", self.sock] + CFG["server_args"] + list(extra)
        if mem_size:
            argv += ["--mem-size", mem_size]
        self.server, why = server_start(argv, self.server_log)
        self.server_pid = self.server.pid
        return why

    def start_qemu(self, incoming, relay=None, template=None):
        """QEMU of the common command line (or template), -incoming INCOMING unless None"""
        qsock = self.sock
        if relay:
            qsock = self.sock + ".relay"
            self.relay = Relay(qsock, self.sock, relay)
        args = [a.replace("@SOCK@", qsock).replace("@QMP@", self.qmp_path)
                .replace("@TTY@", self.tty_path) for a in (template or CFG["template"])]
        args = [CFG["qemu"]] + args + (["-incoming", incoming] if incoming else [])
        with open(os.path.join(LOG, self.name + ".qemu-cmd.log"), "w") as f:
            f.write(" ".join(args) + "\n")
        out = open(self.console.path, "w")
        self.qemu = subprocess.Popen(args, stdin=subprocess.DEVNULL, stdout=out,
                                     stderr=subprocess.STDOUT)
        out.close()
        self.qemu_pid = self.qemu.pid
        if not wait_until(lambda: os.path.exists(self.qmp_path) or self.qemu.poll() is not None,
                          30) or self.qemu.poll() is not None:
            return "QEMU exited (%s): %s" % (self.qemu.returncode, self.console.text()[-600:])
        self.q = qmp(self.qmp_path)
        return None

    def connect_tty(self):
        self.tty = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        self.tty.connect(self.tty_path)

    def command(self, line):
        self.tty.sendall(line.encode() + b"\n")

    def status(self):
        return self.q.cmd("query-status").get("return", {}).get("status")

    def server_status(self):
        c = JsonLines(self.ctl)
        try:
            return c.cmd("query-status").get("return", {}).get("devices", [{}])[0]
        finally:
            c.close()

    def stop(self):
        """QEMU (quit, else killed) and the server (SIGTERM)"""
        if self.q:
            try:
                self.q.cmd("quit")
            except (OSError, EOFError, ValueError):
                pass
            self.q.close()
            self.q = None
        if self.qemu:
            try:
                self.qemu.wait(15)
            except subprocess.TimeoutExpired:
                proc_stop(self.qemu)
        if self.tty:
            self.tty.close()
            self.tty = None
        if self.relay:
            self.relay.close()
        rc = proc_stop(self.server)
        self.server = None
        return rc

    def exited(self, secs):
        """QEMU's exit status within secs, or None"""
        try:
            return self.qemu.wait(secs)
        except subprocess.TimeoutExpired:
            return None

    def log_has(self, what):
        with open(self.server_log, errors="replace") as f:
            return [line.strip() for line in f if what in line]

    def log_after(self, mark, what):
        """the server's lines with what after its first line with mark"""
        lines = self.log_has("")
        at = next((i for i, ln in enumerate(lines) if mark in ln), len(lines))
        return [ln for ln in lines[at + 1:] if what in ln]


def find_dev(q):
    """query-pci's entry of vcxl0"""
    def walk(devs):
        for d in devs:
            if d.get("qdev_id") == ID:
                return d
            br = d.get("pci_bridge")
            if br and br.get("devices"):
                r = walk(br["devices"])
                if r:
                    return r
        return None

    for b in q.cmd("query-pci").get("return", []):
        r = walk(b.get("devices", []))
        if r:
            return r
    return None


def bar_addr(q, bar):
    d = find_dev(q)
    for r in (d or {}).get("regions", []):
        if r.get("bar") == bar:
            return r.get("address")
    return None


PAGE = 4096


def bar_pages(q):
    """How system memory's flat view (`info mtree -f`) lays out vcxl0's memory BARs: the
    4 KiB pages it splits between regions (QEMU builds each such page again, a subpage,
    in every flat view at every memory transaction: a migration's load runs one per
    device section) and the HDM trap's range. (None, None, why) if not found."""
    d = find_dev(q)
    bars = [(r["address"], r["address"] + r["size"]) for r in (d or {}).get("regions", [])
            if r.get("type") == "memory" and r.get("size")]
    if not bars:
        return None, None, "no memory BAR in query-pci"
    view = [v for v in q.hmp("info mtree -f").split("FlatView #") if ' AS "memory",' in v]
    if not view:
        return None, None, "no flat view of AS memory"
    cover, trap = {}, None
    for line in view[0].splitlines():
        m = re.match(r"\s+([0-9a-f]{16})-([0-9a-f]{16}) \(.*?\): (.*)$", line)
        if not m:
            continue
        lo, hi, name = int(m.group(1), 16), int(m.group(2), 16) + 1, m.group(3)
        if not any(lo < b_hi and b_lo < hi for b_lo, b_hi in bars):
            continue
        if name.startswith("vfio-cxl-hdm-quirk"):
            trap = (lo, hi)
        for page in range(lo // PAGE, (hi + PAGE - 1) // PAGE):
            cover[page] = cover.get(page, 0) + 1
    return sorted(p * PAGE for p, n in cover.items() if n > 1), trap, None


def check_bar_pages(q):
    split, trap, why = bar_pages(q)
    if not res(why is None, "source: vcxl0's BARs found in system memory's flat view", why):
        return
    res(trap is not None and trap[0] % PAGE == 0 and trap[1] % PAGE == 0,
        "the HDM decoders' trap covers whole pages (vmm/qemu 0032): %s" %
        ("[%#x, %#x)" % trap if trap else "none"))
    res(len(split) == 1, "one page of the device's BARs split between regions, the MSI-X "
        "table's and PBA's (the HDM trap's page and a page of its own for the PBA would make "
        "3): %s" % [hex(p) for p in split])


def xp32(q, addr):
    out = q.hmp("xp /1wx %#x" % addr)
    try:
        return int(out.split(":")[1].split()[0], 16)
    except (IndexError, ValueError):
        return None


def job_regs(q, bar2):
    """the job engine's STATUS, JOB_PATTERN and JOBS_DONE (model.h) read through QEMU"""
    st, lo, hi, done = (xp32(q, bar2 + o) for o in (0x34, 0x28, 0x2C, 0x3C))
    if None in (st, lo, hi, done):
        return None
    return {"busy": bool(st & 1), "status": st, "pattern": hi << 32 | lo, "jobs_done": done}


def set_caps(q, **caps):
    r = q.cmd("migrate-set-capabilities", capabilities=[
        {"capability": k.replace("_", "-"), "state": v} for k, v in caps.items()])
    return "error" not in r, r


def query_migrate(q):
    return q.cmd("query-migrate").get("return", {})


def run_migration(src, uri, at_switchover=None, dst=None, secs=180):
    """migrate src to uri (a destination QEMU waiting on it, if dst): the final query-migrate.
    at_switchover(src) is asked at pre-switchover: "continue" or "cancel"."""
    if dst:
        ok, r = set_caps(dst.q, return_path=True)
        if not ok:
            return {"status": "error", "error-desc": "destination caps: %s" % r}
        r = dst.q.cmd("migrate-incoming", uri=uri)
        if "error" in r:
            return {"status": "error", "error-desc": "migrate-incoming: %s" % r}
    r = src.q.cmd("migrate", uri=uri)
    if "error" in r:
        return {"status": "error", "error-desc": r["error"].get("desc", str(r))}
    end = time.monotonic() + secs
    decided = None
    while time.monotonic() < end:
        st = query_migrate(src.q)
        s = st.get("status")
        if s in ("completed", "failed", "cancelled"):
            st["switchover"] = decided
            return st
        if s == "pre-switchover" and decided is None:
            decided = at_switchover(src) if at_switchover else "continue"
            if decided == "cancel":
                src.q.cmd("migrate_cancel")
            else:
                src.q.cmd("migrate-continue", state="pre-switchover")
        time.sleep(0.02)
    src.q.cmd("migrate_cancel")
    st = query_migrate(src.q)
    st["timeout"] = True
    return st


def guest_verify(vm, tag, inflight=None, final=False, host=True, resume=True,
                 before_quit=None):
    """the guest's VERIFY (or FINAL) on vm; then its HOSTCHECK lines through vm's server
    (the guest's threads stopped meanwhile); then RESUME, unless final or not resume;
    before_quit(vm) runs after FINAL's checks, before the guest is told to power off"""
    cmd = ("FINAL " if final else "VERIFY ") + tag
    if inflight is not None:
        cmd += " inflight=%#x" % inflight
    t = time.monotonic()
    vm.command(cmd)
    done = "FINAL-DONE" if final else "VERIFY-DONE"
    m = vm.console.wait(r"^%s %s.*$" % (done, re.escape(tag)), 240, vm.qemu_pid)
    if not res(m is not None, "%s: the guest verified everything (%s; STEP %s-* lines)" % (
            tag, m.group(0) if m else "no %s line" % done, tag),
            vm.console.text()[-1500:]):
        return False
    note("%s: the guest's checks took %.1f s" % (tag, time.monotonic() - t))
    if not host:
        return True
    text = vm.console.text()
    begin = text.rfind("VERIFY-BEGIN %s\n" % tag, 0, m.start())
    lines = [ln for ln in text[begin:m.end()].splitlines() if ln.startswith("HOSTCHECK mem ")]
    t = time.monotonic()
    try:
        checks = hostcheck(vm.ctl, lines)
    except (OSError, EOFError, RuntimeError) as e:
        return res(False, "%s: device memory checked through %s's control socket: %s" % (
            tag, vm.name, e))
    for ok, detail in checks:
        res(ok, "%s: %s's server: %s" % (tag, vm.name, detail))
    note("%s: %d HOSTCHECK ranges read through %s in %.1f s" % (
        tag, len(lines), vm.ctl, time.monotonic() - t))
    ok = res(len(checks) >= 4, "%s: the host checked %d ranges of device memory" % (
        tag, len(checks)))
    if final:
        if before_quit:
            before_quit(vm)
        vm.command("QUIT")
    elif resume:
        vm.command("RESUME")
        ok = res(vm.console.wait(r"^RESUMED$", 60, vm.qemu_pid) is not None,
                 "%s: the guest's job and generation threads run again" % tag) and ok
    return ok


def source_runs_on(src, tag):
    st = src.status()
    return res(st == "running", "%s: the source VM runs on (query-status %s)" % (tag, st))


def source_device_running(src, tag):
    d = src.server_status()
    m = d.get("migration") or {}
    return res(m.get("state") == "running" and not m.get("dma_logging"),
               "%s: the source device is running again, DMA logging off (server: %s)" % (
                   tag, json.dumps({k: m.get(k) for k in (
                       "state", "dma_logging", "failures", "last_error")})))


# ---- the controls ----

def control_nomig():
    """a VM whose server does not offer migration cannot migrate (its own VM, no guest)"""
    vm = VM("nomig")
    why = vm.start_server()
    if why:
        return res(False, "nomig: vcxl-server started: %s" % why)
    # the same VM without the guest kernel (firmware only, paused: nothing to run)
    keep, skip = [], False
    for a in CFG["template"]:
        if skip:
            skip = False
        elif a in ("-kernel", "-initrd", "-append"):
            skip = True
        else:
            keep.append(a)
    why = vm.start_qemu(None, relay="nomig", template=keep + ["-S"])
    if why:
        vm.stop()
        return res(False, "nomig: QEMU started: %s" % why)
    r = vm.q.cmd("migrate", uri="unix:" + os.path.join(TMP, "nomig.mig"))
    err = r.get("error", {}).get("desc", "")
    note("nomig: migrate -> %s" % json.dumps(r))
    res("error" in r and "'%s'" % ID in err and "does not support migration" in err and
        "vfio-cxl" in err,
        "nomig: a VM whose vcxl-server does not offer migration (a relay answers ENOSYS, as "
        "for the hardware backend): migrate refused, naming the device: %s" % (err or r))
    vm.stop()
    return True


def mib(size):
    """MiB of a size as the command lines give it ("512M")"""
    return int(size.rstrip("M"))


def guest_ram_mib():
    """the guest's RAM in MiB, from the common command line's -m"""
    t = CFG["template"]
    return mib(t[t.index("-m") + 1])


def dst_start(name, mem_size=None, relay=None):
    vm = VM(name)
    why = vm.start_server(mem_size)
    if why:
        res(False, "%s: destination vcxl-server started: %s" % (name, why))
        return None
    why = vm.start_qemu("defer", relay)
    if why:
        res(False, "%s: destination QEMU started (-incoming defer): %s" % (name, why))
        vm.stop()
        return None
    return vm


def dst_failed(dst, tag, secs=20):
    """a destination that refused: its QEMU exits non-zero"""
    rc = dst.exited(secs)
    qlog = dst.console.text()
    if rc is None:
        note("%s: the destination QEMU still runs (status %s); stopped" % (tag, dst.status()))
    for line in qlog.splitlines():
        if "qemu-system" in line or "error" in line.lower():
            note("%s: destination QEMU: %s" % (tag, line[:300]))
    return rc, qlog


def control_cancel(src):
    tag = "cancel"
    dst = dst_start("dst-cancel")
    if not dst:
        return
    # slow pre-copy down so that migrate_cancel lands during it
    src.q.cmd("migrate-set-parameters", **{"max-bandwidth": 32 << 20})
    uri = "unix:" + os.path.join(TMP, "mig-cancel.sock")
    set_caps(dst.q, return_path=True)
    dst.q.cmd("migrate-incoming", uri=uri)
    r = src.q.cmd("migrate", uri=uri)
    active = wait_until(lambda: (lambda s: s.get("status") == "active" and
                                 s.get("ram", {}).get("transferred", 0) > (16 << 20) and s)(
                                     query_migrate(src.q)), 30)
    r2 = src.q.cmd("migrate_cancel")
    st = wait_until(lambda: (lambda s: s.get("status") in ("cancelled", "failed", "completed")
                             and s)(query_migrate(src.q)), 30) or query_migrate(src.q)
    src.q.cmd("migrate-set-parameters", **{"max-bandwidth": CFG["max_bandwidth"]})
    res("error" not in r and active and "error" not in r2 and st.get("status") == "cancelled",
        "%s: migrate_cancel during pre-copy (%s MiB sent): the migration ends cancelled (%s)" % (
            tag, (active or {}).get("ram", {}).get("transferred", 0) >> 20, st.get("status")),
        json.dumps([r, r2, st])[:1500])
    source_runs_on(src, tag)
    source_device_running(src, tag)
    rc, _ = dst_failed(dst, tag)
    note("%s: destination QEMU exit status %s" % (tag, rc))
    dst.stop()
    guest_verify(src, tag)


def control_mem_size(src):
    tag = "mem-size"
    other = CFG["other_mem_size"]
    dst = dst_start("dst-mem-size", mem_size=other)
    if not dst:
        return
    st = run_migration(src, "unix:" + os.path.join(TMP, "mig-mem-size.sock"), dst=dst)
    rc, qlog = dst_failed(dst, tag)
    m = re.search(r"^.*Size mismatch.*$", qlog, re.M)
    res(st.get("status") == "failed" and rc not in (None, 0) and m is not None,
        "%s: a destination whose server has --mem-size %s (the source's %s) refuses: the "
        "migration fails (%s: %s), the destination QEMU exits (%s: %s)" % (
            tag, other, CFG["mem_size"], st.get("status"), st.get("error-desc", ""), rc,
            m.group(0).strip() if m else "no 'Size mismatch' line"),
        qlog[-1500:])
    source_runs_on(src, tag)
    source_device_running(src, tag)
    dst.stop()
    guest_verify(src, tag)


def control_relay(src, tag, mode, what, count, said):
    """a destination behind a relay in mode: its refusal fails the migration, the source
    runs on intact. what: the relay's doing; count(relay): times it did it (1 expected);
    said(dst, qlog): the lines saying why it was refused"""
    dst = dst_start("dst-" + mode, relay=mode)
    if not dst:
        return
    st = run_migration(src, "unix:" + os.path.join(TMP, "mig-%s.sock" % mode), dst=dst)
    rc, qlog = dst_failed(dst, tag)
    why = said(dst, qlog)
    res(count(dst.relay) == 1 and why and st.get("status") == "failed" and rc not in (None, 0),
        "%s: %s (%s), the destination QEMU exits (%s), the migration fails (%s: %s)"
        % (tag, what, why[0][:160] if why else "no line says why", rc, st.get("status"),
           st.get("error-desc", "")),
        qlog[-1500:])
    source_runs_on(src, tag)
    source_device_running(src, tag)
    dst.stop()
    guest_verify(src, tag)


def control_corrupt(src):
    control_relay(src, "corrupt", "corrupt",
                  "a byte of the device state flipped on its way to the destination server: "
                  "the server refuses it", lambda r: r.corrupted,
                  lambda dst, qlog: dst.log_has("device state refused"))


def control_refused_write(src):
    control_relay(src, "refused-write", "refusewrite",
                  "the destination's first MIG_DATA_WRITE answered EIO (vmm/qemu 0023 sends "
                  "it without waiting): the destination QEMU reports it", lambda r: r.refused,
                  lambda dst, qlog: [ln for ln in qlog.splitlines()
                                     if "refused its migration data" in ln])


# ---- the live migration, the save and the restore ----

def live(src):
    """src to a fresh destination until the VM stopped with a job in flight: (dst, st, job)"""
    bar2 = bar_addr(src.q, 2)
    note("source BAR2 (job engine) at %s" % (hex(bar2) if bar2 else None))
    for attempt in range(1, ATTEMPTS + 1):
        dst = dst_start("dst%d" % attempt)
        if not dst:
            return None, None, None
        seen = {}

        def at_switchover(vm):
            seen["job"] = job_regs(vm.q, bar2) if bar2 else None
            seen["server"] = vm.server_status().get("migration")
            return "continue" if seen["job"] and seen["job"]["busy"] else "cancel"

        st = run_migration(src, "unix:" + os.path.join(TMP, "mig%d.sock" % attempt),
                           at_switchover, dst=dst)
        job = seen.get("job")
        note("live attempt %d: %s; at the stop the device's job engine: %s" % (
            attempt, st.get("status"), job))
        if st.get("status") == "completed":
            STAT["attempts"] = attempt
            return dst, st, job
        rc, _ = dst_failed(dst, "live attempt %d" % attempt, 10)
        dst.stop()
        if st.get("switchover") != "cancel":
            res(False, "live migration (attempt %d): %s %s" % (
                attempt, st.get("status"), st.get("error-desc", "")), json.dumps(st)[:1500])
            return None, None, None
        if src.status() != "running":
            res(False, "live attempt %d: cancelled at the switch-over, the source runs on (%s)"
                % (attempt, src.status()))
            return None, None, None
    res(False, "live migration: no job was in flight at the stop in %d attempts" % ATTEMPTS)
    return None, None, None


def record_figures(st, src, dst, what):
    STAT[what] = {k: st.get(k) for k in ("total-time", "downtime", "setup-time",
                                           "expected-downtime")}
    STAT[what]["ram_transferred"] = st.get("ram", {}).get("transferred")
    STAT[what]["vfio_transferred"] = (st.get("vfio") or {}).get("transferred")


def main_migration(src):
    dst, st, job = live(src)
    if not dst:
        return None
    srv = src.server_status().get("migration") or {}
    dsrv = dst.server_status().get("migration") or {}
    record_figures(st, src, dst, "live")
    rss = {n: rss_kib(p) for n, p in (("source QEMU", SRC_QEMU_PID),
                                        ("source server", src.server_pid),
                                        ("destination QEMU", dst.qemu_pid),
                                        ("destination server", dst.server_pid))}
    note("live: total %s ms, downtime %s ms, setup %s ms, RAM (guest RAM and CXL memory) %s "
         "bytes, device state %s bytes (vfio); source server: device state %s bytes, "
         "stop-copy %s ms; destination server: %s bytes received" % (
             st.get("total-time"), st.get("downtime"), st.get("setup-time"),
             st.get("ram", {}).get("transferred"), (st.get("vfio") or {}).get("transferred"),
             srv.get("device_state_bytes"), srv.get("stop_copy_ms"),
             dsrv.get("bytes_received")))
    for n, r in rss.items():
        note("live: RSS %s: %s" % (n, r))
    # neither QEMU allocated the CXL memory nobody wrote: the source sends a page in a hole
    # of the region's memfd as zero unread (vmm/qemu 0041-0042), the destination leaves the
    # zero pages of its fresh memfd unread (0038-0039, its trace says so); each holds the
    # guest's RAM and the CXL memory written, not all of both
    src_sh = rss["source QEMU"].get("RssShmem", 0)
    dst_sh = rss["destination QEMU"].get("RssShmem", 0)
    full = (guest_ram_mib() + mib(CFG["mem_size"])) << 10
    res(len(re.findall(INCOMING_ZERO, dst.console.text())) == 1 and
        0 < src_sh <= full - UNTOUCHED_MIN_KIB and 0 < dst_sh <= full - UNTOUCHED_MIN_KIB,
        "live: the destination QEMU took the empty CXL region as zero (trace "
        "vfio_cxl_region_incoming_zero), and neither QEMU allocated the memory nobody wrote: "
        "shared memory %d KiB on the source, %d KiB on the destination, of %d KiB of RAM and "
        "CXL memory" % (src_sh, dst_sh, full))
    STAT["live"].update(device_state_bytes=srv.get("device_state_bytes"),
                        stop_copy_ms=srv.get("stop_copy_ms"), rss=rss)
    res(job is not None and job["busy"],
        "live: the source VM stopped for the switch-over with a job in flight (STATUS %#x "
        "BUSY, JOB_PATTERN %#x, JOBS_DONE %d, read through the stopped QEMU; attempt %d)" % (
            job["status"], job["pattern"], job["jobs_done"], STAT["attempts"]) if job else
        "live: job engine unreadable")
    res(st.get("status") == "completed",
        "live: QMP migrate completed (total %s ms, downtime %s ms, device state %s bytes)" % (
            st.get("total-time"), st.get("downtime"), srv.get("device_state_bytes")))
    res(srv.get("device_state_bytes") == dsrv.get("bytes_received") and
        dsrv.get("state") == "running",
        "live: the destination server received the whole device state (%s of %s bytes) and "
        "runs the device (%s)" % (dsrv.get("bytes_received"), srv.get("device_state_bytes"),
                                  dsrv.get("state")))
    loaded = dst.log_has("migration: device state of")
    note("destination server: %s" % (loaded[-1] if loaded else "no load line"))
    s = src.status()
    res(s == "postmigrate", "live: the source VM is done (%s)" % s)
    ds = wait_until(lambda: dst.status() == "running" and "running", 30)
    res(ds == "running", "live: the destination VM runs (%s)" % dst.status())
    # the source goes: its QEMU quits (the shell's e2e_boot returns), its server stays
    src.q.cmd("quit")
    src.q.close()
    src.q = None
    wait_until(lambda: not alive(SRC_QEMU_PID), 20)
    dst.connect_tty()
    guest_verify(dst, "migrated", inflight=job["pattern"] if job else None)
    return dst


def save_restore(dst):
    tag = "restored"
    state = os.path.join(TMP, "vm.state")
    # a file has no return path; the stop as for the live migration, and its parameters
    # (QEMU's default 300 ms never converges with the job's pages in the device state)
    ok, r = set_caps(dst.q, return_path=False, pause_before_switchover=True)
    r2 = dst.q.cmd("migrate-set-parameters", **{"downtime-limit": CFG["downtime_limit"],
                                                 "max-bandwidth": CFG["max_bandwidth"]})
    if not res(ok and "error" not in r2, "save: pause-before-switchover, no return path, "
               "downtime-limit %d ms" % CFG["downtime_limit"], json.dumps([r, r2])):
        return False
    bar2 = bar_addr(dst.q, 2)
    t = time.monotonic()
    # as the live migration: saved with a job in flight (else cancelled, the VM runs on,
    # and saved again)
    for attempt in range(1, ATTEMPTS + 1):
        seen = {}

        def at_switchover(vm):
            seen["job"] = job_regs(vm.q, bar2) if bar2 else None
            busy = seen["job"] and seen["job"]["busy"]
            return "continue" if busy or attempt == ATTEMPTS else "cancel"

        st = run_migration(dst, "file:" + state, at_switchover)
        job = seen.get("job")
        note("save attempt %d: %s; at the stop the device's job engine: %s" % (
            attempt, st.get("status"), job))
        if st.get("status") != "cancelled" or st.get("switchover") != "cancel":
            break
        if not wait_until(lambda: dst.status() == "running", 20):
            res(False, "save attempt %d: cancelled at the switch-over, the VM runs on (%s)" % (
                attempt, dst.status()))
            return False
        os.unlink(state)
    size = os.path.getsize(state) if os.path.exists(state) else 0
    res(st.get("status") == "completed" and dst.status() == "postmigrate" and size > 0,
        "save: migrate to file: completed (%s ms, downtime %s ms, %d bytes; a job %s when "
        "the VM stopped, attempt %d), the VM is done (%s)" % (
            st.get("total-time"), st.get("downtime"), size,
            "in flight" if job and job["busy"] else "not in flight", attempt, dst.status()),
        json.dumps(st)[:1500])
    STAT["save"] = {"total-time": st.get("total-time"), "downtime": st.get("downtime"),
                    "bytes": size}
    rc = dst.stop()
    note("save: %.1f s; QEMU quit, its server stopped (status %s)" % (time.monotonic() - t, rc))
    restore_refused_run(state)
    restore_onto_data(state, job["pattern"] if job and job["busy"] else None)
    new = VM("restore")
    why = new.start_server()
    if why:
        return res(False, "restore: a fresh vcxl-server: %s" % why)
    why = new.start_qemu("file:" + state, relay="refusestopcopy")
    if why:
        return res(False, "restore: QEMU -incoming file: %s" % why)
    s = wait_until(lambda: new.status() == "running" and "running", 60)
    res(s == "running", "restore: QEMU -incoming file: on a fresh server runs the VM (%s)" %
        new.status())
    loaded = new.log_has("migration: device state of")
    res(bool(loaded), "restore: the fresh server loaded the device state (%s)" % (
        loaded[-1] if loaded else "no load line"))
    new.connect_tty()
    guest_verify(new, tag, inflight=job["pattern"] if job and job["busy"] else None,
                 final=True, before_quit=save_refused_stop_copy)
    rc = new.exited(60)
    res(rc == 0, "restore: the guest powered off, QEMU exited (%s)" % rc)
    new.q = None
    new.stop()
    return True


def save_refused_stop_copy(vm):
    """vm (its guest done) saved to a file behind a relay refusing the device's change into
    STOP_COPY at the VM's stop (vmm/qemu 0034 sends it without waiting when the first
    MIG_DATA_READ goes with it): the save fails, QEMU says so and resets the device, the VM
    runs on"""
    tag = "save, STOP_COPY refused"
    resets = len(vm.log_has("device reset"))
    perrs = len(vm.log_has("protocol error"))
    st = run_migration(vm, "file:" + os.path.join(TMP, "vm-refused.state"))
    s = wait_until(lambda: vm.status() == "running" and "running", 20)
    said = [ln for ln in vm.console.text().splitlines()
            if "refused to enter STOP_COPY" in ln or "Resetting device" in ln]
    reset = wait_until(lambda: vm.log_has("device reset")[resets:], 20)
    m = (vm.server_status().get("migration") or {}) if reset else {}
    # the server never saw the change: at most the read QEMU sent with it finds the device
    # running (run-e2e-migrate.sh allows that protocol error for this server)
    perr = vm.log_has("protocol error")[perrs:]
    res(st.get("status") == "failed" and s == "running" and vm.relay.refused == 1 and said and
        reset and m.get("state") == "running" and len(perr) <= 1 and
        all("MIG_DATA_READ" in ln and "nothing to read" in ln for ln in perr),
        "%s: the save fails (%s: %s), the VM runs on (%s), QEMU reports the refusal (%s), "
        "the device was reset (%s) and runs (server: %s); the server's protocol errors: %s" % (
            tag, st.get("status"), st.get("error-desc", "")[:120], vm.status(),
            said[0][:160] if said else "no line", reset[-1][:100] if reset else "no reset",
            m.get("state"), [ln[-90:] for ln in perr]), vm.console.text()[-1500:])


def restore_onto_data(state, inflight):
    """the saved VM restored onto a server whose device memory holds data where the guest
    never wrote (a --backing file kept as it is, --on-disconnect keep, and --trust-client so
    that QEMU maps that file): QEMU must not take the region as zero (vmm/qemu 0039) and
    clears every zero page it loads; the guest and the host find that memory zero"""
    tag = "ondata"
    path = os.path.join(TMP, "ondata.mem")
    with open(path, "wb") as f:  # sparse: data only in the never-written zone
        f.truncate(mib(CFG["mem_size"]) << 20)
        f.seek(UNTOUCHED[0])
        f.write(b"\x5a" * UNTOUCHED[1])
    vm = VM("restore-ondata")
    why = vm.start_server(extra=["--backing", path, "--trust-client", "--on-disconnect",
                                 "keep"]) or vm.start_qemu("file:" + state)
    if why:
        res(False, "%s: a server with a --backing file holding data and QEMU -incoming file: "
            "(%s)" % (tag, why))
        vm.stop()
        return
    s = wait_until(lambda: vm.status() == "running" and "running", 60)
    said = len(re.findall(INCOMING_ZERO, vm.console.text()))
    res(s == "running" and said == 0,
        "%s: restored onto a server whose memory holds data (%s); QEMU did not take the "
        "region as zero (%d trace lines)" % (tag, vm.status(), said))
    vm.connect_tty()
    guest_verify(vm, tag, inflight=inflight, resume=False)
    vm.stop()
    os.unlink(path)


def restore_refused_run(state):
    """the saved VM restored behind a relay refusing the device's STOP -> RUNNING at the
    VM's start (vmm/qemu 0034 sends it without waiting): QEMU says so, resets the device,
    and the VM runs with the device running (its state lost to the reset, as QEMU does
    when a device refuses RUNNING at the start)"""
    tag = "restore, RUNNING refused"
    vm = VM("restore-refuserun")
    why = vm.start_server() or vm.start_qemu("file:" + state, relay="refuserun")
    if why:
        res(False, "%s: a fresh server and QEMU -incoming file: (%s)" % (tag, why))
        vm.stop()
        return
    s = wait_until(lambda: vm.status() == "running" and "running", 60)
    said = wait_until(lambda: [ln for ln in vm.console.text().splitlines()
                               if "refused to enter RUNNING" in ln], 20)
    # the reset after the load (QEMU's realize resets the device before it too)
    reset = wait_until(lambda: vm.log_after("migration: device state of", "device reset"), 20)
    m = (vm.server_status().get("migration") or {}) if reset else {}
    res(s == "running" and vm.relay.refused == 1 and said and reset and
        m.get("state") == "running",
        "%s: the VM runs (%s), QEMU reports the refusal (%s), the device was reset (%s) and "
        "runs (server: %s)" % (tag, vm.status(), said[0][:160] if said else "no line",
                               reset[-1][:100] if reset else "no reset",
                               m.get("state")), vm.console.text()[-1500:])
    vm.stop()


def main():
    src = VM("src")
    src.sock, src.qmp_path, src.tty_path = CFG["src"]["sock"], CFG["src"]["qmp"], \
        CFG["src"]["tty"]
    src.console = Console(CFG["src"]["console"])
    src.server_pid = CFG["src"]["server_pid"]
    src.qemu_pid = SRC_QEMU_PID
    src.server_log = CFG["src"]["server_log"]
    try:
        control_nomig()
        m = src.console.wait(r"^MIG-READY.*$", 300, SRC_QEMU_PID)
        if not res(m is not None, "the guest set everything up and runs its job and dirtying "
                   "threads (%s)" % (m.group(0) if m else "no MIG-READY"),
                   src.console.text()[-2000:]):
            return
        note("guest ready after %.0f s" % (time.monotonic() - T0))
        src.q = qmp(src.qmp_path)
        ok, r = set_caps(src.q, return_path=True, pause_before_switchover=True)
        r2 = src.q.cmd("migrate-set-parameters", **{"downtime-limit": CFG["downtime_limit"],
                                                     "max-bandwidth": CFG["max_bandwidth"]})
        if not res(ok and "error" not in r2, "source: return-path, pause-before-switchover, "
                   "downtime-limit %d ms" % CFG["downtime_limit"], json.dumps([r, r2])):
            return
        check_bar_pages(src.q)
        src.connect_tty()
        if os.environ.get("VCXL_E2E_MIGRATE_CONTROLS", "1") != "0":
            control_cancel(src)
            control_mem_size(src)
            control_corrupt(src)
            control_refused_write(src)
        else:
            note("VCXL_E2E_MIGRATE_CONTROLS=0: cancel, mem-size, corrupt and refused-write skipped")
        dst = main_migration(src)
        if dst:
            save_restore(dst)
    except (OSError, EOFError, ValueError, KeyError) as e:
        res(False, "the migration run went on to its end: %s: %s" % (type(e).__name__, e))
    finally:
        if alive(SRC_QEMU_PID):  # a failure before the move: the source goes too
            try:
                (src.q or qmp(src.qmp_path, 5)).cmd("quit")
            except (OSError, EOFError, ValueError):
                pass
            if not wait_until(lambda: not alive(SRC_QEMU_PID), 15):
                os.kill(SRC_QEMU_PID, signal.SIGTERM)
        for vm in VMS:  # after a failure: this script's QEMUs and servers (not the source's)
            if vm.name != "src" and ((vm.qemu and vm.qemu.poll() is None) or
                                     (vm.server and vm.server.poll() is None)):
                note("stopping %s, left running by the failure" % vm.name)
                vm.stop()
        STAT["seconds"] = round(time.monotonic() - T0, 1)
        with open(os.path.join(LOG, "figures.json"), "w") as f:
            json.dump(STAT, f, indent=1)
        note("migrate.py: %.0f s" % (time.monotonic() - T0))
        RESULTS.close()


if __name__ == "__main__":
    main()
