#!/usr/bin/env python3
# SPDX-License-Identifier: BSD-3-Clause
"""bench-migrate.py CONFIG - make bench's migration case (scripts/bench-migrate.sh writes
CONFIG and says what is measured). Prints `name value unit ratio` lines and writes the
JSON file CONFIG names.

Each VM is moved again and again to a fresh destination (a new QEMU with -incoming defer
and, with the device, a new vcxl-server). The VMs with and without the device run side by
side and are moved in turn, the order alternating from one round to the next, so that the
host's load at any moment (2 cores here, shared) weighs on both alike:
  nodev  the VM without the vcxl device (same machine, host bridge, root port, window;
         the guest idles)
  idle   the VM with the device; the guest set it up (64 MiB of CXL memory written, decoder
         1, registers, BAR0 RAM) and stopped its threads: the device is idle
  jobs   then, alone, the same VM with the guest's threads running: back-to-back 128 MiB FILL jobs in
         device memory (their pages go with RAM: DMA logging reports) and 16 MiB of
         generation stores
Each figure is the median of the RUNS migrations.

The same pair is then moved again with everything on one core (the driver, both QEMUs and
both servers pinned to the first CPU it may use): without cross-core wake-ups, which take
tens of microseconds to milliseconds in VMs like these (docs/migration.md section 10), the
figure is steadier and is the work the device adds (RUNS_ONE_CORE migrations each). The
goal is judged on the first.

The downtime goal is judged at a downtime-limit the idle VMs reach
(downtime_limit_tight, 20 ms), RUNS_DOWNTIME migrations each: at QEMU's default 300 ms,
QEMU may switch over in the middle of its first pass over RAM when the rest fits in 300 ms
at the measured bandwidth, and the VM with the device has ~200 MB more memory in use (the
CXL memory the guest wrote) than the VM without it, so that figure measures how much memory
is in use, not the device. It is printed too (RUNS migrations each, "default limit").

QEMU's downtime figure (query-migrate) is the difference of two millisecond clock readings,
taken where it traces the checkpoints src-downtime-start and src-downtime-end: at 3-4 ms
its quantisation alone (up to 1 ms either way) moves the ratio between 1.0 and 1.33. The
same interval from those two checkpoints' microsecond timestamps (downtime_us) is what the
goal is judged on; QEMU's whole milliseconds are printed beside it.
"""
import json
import os
import re
import socket
import statistics
import subprocess
import sys
import time

sys.dont_write_bytecode = True
CFG = json.load(open(sys.argv[1]))
sys.path.insert(0, CFG["e2e_dir"])
from e2e_qmp import JsonLines, proc_stop, qmp, rss_kib, server_start  # noqa: E402

RUNS = CFG.get("runs", 3)
RUNS_DOWNTIME = CFG.get("runs_downtime", 5)
RUNS_ONE_CORE = CFG.get("runs_one_core", RUNS_DOWNTIME)
DL_TIGHT = CFG.get("downtime_limit_tight", 20)
TMP, LOG = CFG["tmp"], CFG["log"]
JOB_DIRTY = 128 << 20  # migrate-guest.c JOB_LEN: the pages its jobs write
STATE_GOAL = 8 << 20  # issue 23: device state <= 8 MiB plus the pages the device dirtied
DOWNTIME_GOAL = 1.25
seq = [0]
CURRENT = {}  # name -> the VM that runs that guest now


def note(text):
    for line in str(text).splitlines():
        print("# " + line, flush=True)


class VM:
    def __init__(self, template, with_server, incoming=None):
        seq[0] += 1
        self.name = "vm%d" % seq[0]
        self.sock = os.path.join(TMP, self.name + ".sock")
        self.qmp_path = os.path.join(TMP, self.name + ".qmp")
        self.tty_path = os.path.join(TMP, self.name + ".tty")
        self.console = os.path.join(LOG, self.name + ".console.log")
        self.server = self.tty = None
        if with_server:
            self.server, why = server_start(
                [CFG["server"], "--socket", self.sock] + CFG["server_args"],
                os.path.join(LOG, self.name + ".server.log"))
            if why:
                raise RuntimeError("vcxl-server: " + why)
        args = [CFG["qemu"]] + [a.replace("@SOCK@", self.sock).replace("@QMP@", self.qmp_path)
                                .replace("@TTY@", self.tty_path) for a in template]
        if incoming:
            args += ["-incoming", incoming]
        with open(self.console, "w") as out:
            self.qemu = subprocess.Popen(args, stdin=subprocess.DEVNULL, stdout=out,
                                         stderr=subprocess.STDOUT)
        end = time.monotonic() + 30
        while not os.path.exists(self.qmp_path):
            if self.qemu.poll() is not None or time.monotonic() > end:
                raise RuntimeError("QEMU exited: " + open(self.console).read()[-800:])
            time.sleep(0.05)
        self.q = qmp(self.qmp_path)

    def wait_line(self, regex, secs=300):
        end = time.monotonic() + secs
        while time.monotonic() < end:
            with open(self.console, "rb") as f:
                m = re.search(regex, f.read().decode(errors="replace").replace("\r", ""),
                              re.M)
            if m:
                return m.group(0)
            if self.qemu.poll() is not None:
                break
            time.sleep(0.2)
        raise RuntimeError("%s: no '%s' on the console" % (self.name, regex))

    def command(self, line):
        if not self.tty:
            self.tty = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
            self.tty.connect(self.tty_path)
        self.tty.sendall(line.encode() + b"\n")

    def stop(self):
        try:
            self.q.cmd("quit")
        except (OSError, EOFError, ValueError):
            pass
        try:
            self.qemu.wait(20)
        except subprocess.TimeoutExpired:
            proc_stop(self.qemu)
        if self.tty:
            self.tty.close()
        proc_stop(self.server)


def server_mig(vm):
    if not vm.server:
        return {}
    c = JsonLines(vm.sock + ".ctl")
    try:
        return c.cmd("query-status")["return"]["devices"][0].get("migration") or {}
    finally:
        c.close()


def migrate_once(src, template, with_server, downtime_limit):
    dst = VM(template, with_server, "defer")
    for q in (src.q, dst.q):
        q.cmd("migrate-set-capabilities",
              capabilities=[{"capability": "return-path", "state": True}])
    src.q.cmd("migrate-set-parameters", **{"downtime-limit": downtime_limit,
                                           "max-bandwidth": CFG["max_bandwidth"]})
    uri = "unix:" + os.path.join(TMP, dst.name + ".mig")
    dst.q.cmd("migrate-incoming", uri=uri)
    r = src.q.cmd("migrate", uri=uri)
    if "error" in r:
        raise RuntimeError("migrate: %s" % r)
    end = time.monotonic() + 180
    while True:
        st = src.q.cmd("query-migrate")["return"]
        if st.get("status") in ("completed", "failed", "cancelled"):
            break
        if time.monotonic() > end:
            src.q.cmd("migrate_cancel")
            raise RuntimeError("no convergence in 180 s: %s" % json.dumps(st)[:500])
        time.sleep(0.02)
    if st["status"] != "completed":
        dst.stop()
        with open(dst.console, "rb") as f:
            why = [ln for ln in f.read().decode(errors="replace").splitlines()
                   if ln.startswith("qemu-system") and "warning" not in ln]
        raise RuntimeError("migration %s: %s; the destination QEMU: %s" % (
            st["status"], st.get("error-desc", ""), " / ".join(why[-2:])))
    sm, dm = server_mig(src), server_mig(dst)
    fig = {"total_ms": st.get("total-time"), "downtime_ms": st.get("downtime"),
           "setup_ms": st.get("setup-time"), "ram_bytes": st.get("ram", {}).get("transferred"),
           "device_state": (st.get("vfio") or {}).get("transferred", 0) if with_server else 0,
           "server_state_bytes": sm.get("device_state_bytes"),
           "stop_copy_ms": sm.get("stop_copy_ms"), "received": dm.get("bytes_received"),
           "devmem_pages_reported": sm.get("devmem_pages_reported")}
    # the device's own share of the downtime: QEMU's vmstate_downtime_* traces of its
    # vfio section (saved on the source, loaded on the destination: the server's load and
    # the decoders' reconcile), microseconds
    for side, vm, what in (("src", src, "save"), ("dst", dst, "load")):
        with open(vm.console, "rb") as f:
            t = f.read().decode(errors="replace")
        fig["vfio_%s_us" % what] = sum(int(m) for m in re.findall(
            r"vmstate_downtime_%s type=\S+ idstr=\S+/vfio instance_id=\d+ downtime=(\d+)" % what,
            t)) if with_server else None
    # where the downtime goes, from the source's checkpoints (microseconds): stopping the
    # VM (the device's STOP included), the iterable sections (RAM's last pass, the device's
    # stop-copy), the rest, then waiting for the destination to load and say so
    with open(src.console, "rb") as f:
        t = f.read().decode(errors="replace")
    cp = {}
    for ts, name in re.findall(r"T\d\d:(\d\d:[\d.]+)Z vmstate_downtime_checkpoint (src-\S+)", t):
        mm, ss = ts.split(":")
        cp[name] = int(round((int(mm) * 60 + float(ss)) * 1e6))
    marks = ["src-downtime-start", "src-vm-stopped", "src-iterable-saved",
             "src-non-iterable-saved", "src-downtime-end"]
    if all(m in cp for m in marks):
        for key, a, b in zip(("ph_stop_us", "ph_iterable_us", "ph_non_iterable_us",
                              "ph_destination_us"), marks, marks[1:]):
            fig[key] = (cp[b] - cp[a]) % (3600 * 10 ** 6)
        # the interval of QEMU's downtime figure, in microseconds
        fig["downtime_us"] = (cp[marks[-1]] - cp[marks[0]]) % (3600 * 10 ** 6)
    for side, vm in (("src", src), ("dst", dst)):
        fig["rss_%s_qemu" % side] = rss_kib(vm.qemu.pid).get("VmRSS", 0)
        fig["rss_%s_server" % side] = rss_kib(vm.server.pid).get("VmRSS", 0) if vm.server else 0
    end = time.monotonic() + 30
    while dst.q.cmd("query-status")["return"].get("status") != "running":
        if time.monotonic() > end:
            raise RuntimeError("the destination does not run")
        time.sleep(0.05)
    src.stop()
    return dst, fig


def pin(cpus):
    """moves the driver and every thread of the running VMs and their servers to cpus;
    the QEMUs and servers started later inherit the driver's affinity"""
    os.sched_setaffinity(0, cpus)
    for vm in CURRENT.values():
        for proc in (vm.qemu, vm.server):
            if proc is None:
                continue
            try:
                tids = os.listdir("/proc/%d/task" % proc.pid)
            except OSError:
                continue
            for tid in tids:
                try:
                    os.sched_setaffinity(int(tid), cpus)
                except OSError:
                    pass  # the thread is gone


def boot(name, template, with_server, ready, prepare=None):
    """starts one VM and waits for its guest (then prepare(vm))"""
    vm = CURRENT[name] = VM(template, with_server)
    t = time.monotonic()
    note("%s: %s (boot %.0f s)" % (name, vm.wait_line(ready), time.monotonic() - t))
    if prepare:
        prepare(vm)
    return vm


def interleaved(plan, runs, downtime_limit, label=None):
    """migrates the VMs of plan [(name, template, with_server)] in turn, runs times
    each, the order alternating from one round to the next, so that the host's load
    at any moment weighs on them alike: {name: [figures]}"""
    figs = {name: [] for name, _, _ in plan}
    for i in range(runs):
        for name, template, with_server in (plan if i % 2 == 0 else plan[::-1]):
            CURRENT[name], fig = migrate_once(CURRENT[name], template, with_server,
                                              downtime_limit)
            who = name if not label else label if len(plan) == 1 else name + ", " + label
            note("%s run %d (limit %d ms): %s" % (who, i + 1, downtime_limit,
                                                 json.dumps(fig)))
            figs[name].append(fig)
            time.sleep(1)  # the guest settles on its new QEMU
    return figs


def series(name, label, template, with_server, downtime_limit, prepare=None, runs=RUNS):
    """runs migrations of the running VM name, after prepare(vm): [figures]"""
    if prepare:
        prepare(CURRENT[name])
    return interleaved([(name, template, with_server)], runs, downtime_limit, label)[name]


def cpu_times():
    """this machine's CPU time so far, in clock ticks: (all, steal) from /proc/stat
    (steal: time the hypervisor ran something else while this VM's vCPUs wanted to run)"""
    with open("/proc/stat") as f:
        v = [int(x) for x in f.readline().split()[1:]]
    return sum(v[:8]), v[7] if len(v) > 7 else 0


def quartiles(figs, key):
    v = sorted(f[key] for f in figs if f.get(key) is not None)
    if len(v) < 4:
        return None
    q = statistics.quantiles(v, n=4)
    return q[0], q[2]


def med(figs, key):
    v = [f[key] for f in figs if f.get(key) is not None]
    return statistics.median(v) if v else None


OUT = []


def phase_rows(suffix, nodev, idle, desc):
    """rows of the medians of the source's downtime checkpoints, their sum in ms (desc
    formats the four), the VM with the device against the one without"""
    base = None
    for name, figs in (("nodev", nodev), ("idle", idle)):
        ph = [med(figs, k) for k in ("ph_stop_us", "ph_iterable_us", "ph_non_iterable_us",
                                     "ph_destination_us")]
        if None in ph:
            continue
        row("migrate_downtime_phases_%s%s" % (name, suffix), sum(ph) / 1000.0, "ms",
            sum(ph) / base if base else None, desc=desc % tuple(x / 1000.0 for x in ph))
        base = base or sum(ph)


def row(name, value, unit, ratio=None, desc="", goal=None, met=None, extra=None):
    r = "" if ratio is None else "%.3f" % ratio
    g = "" if goal is None else "  goal %s: %s" % (goal, "met" if met else "NOT met")
    print("%-36s %12s %-6s %8s%s%s" % (name, "%.1f" % value if isinstance(value, float)
                                       else value, unit, r, g, ("  (%s)" % desc) if desc else ""))
    OUT.append(dict(name=name, value=value, unit=unit, ratio=ratio, ratio_is=desc, goal=goal,
                    goal_met=met, **(extra or {})))


def main():
    t0 = time.monotonic()
    jobs = []
    plan = [("nodev", CFG["template_nodev"], False), ("idle", CFG["template"], True)]
    try:
        def pause(v):  # the guest stops its threads (VERIFY leaves them stopped)
            v.command("VERIFY bench")
            note("idle: " + v.wait_line(r"^VERIFY-DONE bench.*$"))

        # both VMs run side by side and are moved in turn (interleaved())
        boot("nodev", CFG["template_nodev"], False, r"^IDLE-READY")
        boot("idle", CFG["template"], True, r"^MIG-READY.*$", pause)
        st0 = cpu_times()
        f = interleaved(plan, RUNS_DOWNTIME, DL_TIGHT)
        st1 = cpu_times()
        nodev, idle = f["nodev"], f["idle"]
        cpus = os.sched_getaffinity(0)
        pin({min(cpus)})
        try:
            f = interleaved(plan, RUNS_ONE_CORE, DL_TIGHT, "one core")
        finally:
            pin(cpus)
        nodev_1c, idle_1c = f["nodev"], f["idle"]
        f = interleaved(plan, RUNS, 300)
        nodev_dflt, idle_dflt = f["nodev"], f["idle"]
        CURRENT["nodev"].command("QUIT")
        CURRENT.pop("nodev").stop()

        def resume(v):
            v.command("RESUME")
            v.wait_line(r"^RESUMED$")
            time.sleep(2)  # jobs and generations under way

        try:
            jobs = series("idle", "jobs", CFG["template"], True, CFG["downtime_limit_jobs"],
                          resume)
        except RuntimeError as e:
            note("jobs: %s" % e)
        CURRENT["idle"].command("QUIT")
        CURRENT.pop("idle").stop()
    except (RuntimeError, OSError, EOFError) as e:
        note("bench-migrate: %s" % e)
        for vm in CURRENT.values():
            vm.stop()
        print("bench-migrate: failed: %s" % e, file=sys.stderr)
        return 1

    print("%-36s %12s %-6s %8s" % ("# name", "value", "unit", "ratio"))
    def device_part(name, figs):
        if figs and med(figs, "vfio_save_us") is not None:
            sv, ld = med(figs, "vfio_save_us") / 1000.0, med(figs, "vfio_load_us") / 1000.0
            row("migrate_downtime_device_part_%s" % name, sv + ld, "ms",
                desc="of it, QEMU's vfio section: saved %.1f ms on the source, loaded %.1f ms "
                "on the destination (vmstate_downtime traces)" % (sv, ld))

    for key, unit, what in (("total_ms", "ms", "total"), ("downtime_ms", "ms", "downtime")):
        base = med(nodev, key)
        row("migrate_%s_nodev" % what, base, unit,
            desc="the VM without the device, downtime-limit %d ms, median of %d"
            % (DL_TIGHT, RUNS_DOWNTIME))
        v = med(idle, key)
        row("migrate_%s_vcxl_idle" % what, v, unit, v / base if base else None,
            "with an idle vcxl device / without it, downtime-limit %d ms%s" % (
                DL_TIGHT, "; QEMU's whole milliseconds (two ms clock readings: up to 1 ms "
                "off either way)" if what == "downtime" else ""))
        if what == "downtime" and med(nodev, "downtime_us") and med(idle, "downtime_us"):
            b_us, v_us = med(nodev, "downtime_us"), med(idle, "downtime_us")
            qb, qv = quartiles(nodev, "downtime_us"), quartiles(idle, "downtime_us")
            row("migrate_downtime_us_nodev", int(b_us), "us",
                desc="the same interval from QEMU's checkpoints src-downtime-start and "
                "src-downtime-end (microseconds), the VM without the device, median of %d%s"
                % (RUNS_DOWNTIME, "; quartiles %d-%d us" % qb if qb else ""))
            row("migrate_downtime_us_vcxl_idle", int(v_us), "us", v_us / b_us,
                "with an idle vcxl device / without it, the same interval in microseconds%s"
                % ("; quartiles %d-%d us" % qv if qv else ""),
                "<= %.2fx" % DOWNTIME_GOAL, v_us <= DOWNTIME_GOAL * b_us)
            if st1[0] > st0[0]:
                row("migrate_host_steal_pct", round(100.0 * (st1[1] - st0[1]) /
                                                    (st1[0] - st0[0]), 2), "%",
                    desc="this machine's CPU time stolen by its hypervisor during those "
                    "migrations (/proc/stat): the host's load, which the ratio cannot remove")
        if what == "downtime":
            device_part("idle", idle)
            phase_rows("", nodev, idle, "source checkpoints, medians: stop %.1f, iterable "
                       "(RAM's last pass, device stop-copy) %.1f, the rest %.1f, the "
                       "destination's load %.1f ms")
            b, v = med(nodev_1c, key), med(idle_1c, key)
            row("migrate_downtime_nodev_one_core", b, unit,
                desc="the VM without the device, everything on one core, downtime-limit "
                "%d ms, median of %d" % (DL_TIGHT, RUNS_ONE_CORE))
            row("migrate_downtime_vcxl_idle_one_core", v, unit, v / b if b else None,
                "with an idle vcxl device / without it, everything on one core: the "
                "device's work without cross-core wake-ups")
            phase_rows("_one_core", nodev_1c, idle_1c, "the same checkpoints, one core: "
                       "%.1f, %.1f, %.1f, %.1f ms")
            b, v = med(nodev_dflt, key), med(idle_dflt, key)
            row("migrate_downtime_nodev_default_limit", b, unit,
                desc="the VM without the device, QEMU's default downtime-limit (300 ms)")
            row("migrate_downtime_vcxl_idle_default_limit", v, unit, v / b if b else None,
                "with an idle vcxl device / without it, 300 ms: QEMU may switch over "
                "mid-pass with the CXL memory's pages left (see the docstring)")
        if jobs:
            v = med(jobs, key)
            row("migrate_%s_vcxl_jobs" % what, v, unit, v / base if base else None,
                "with jobs running in device memory / idle VM without the device "
                "(downtime-limit %d ms)" % CFG["downtime_limit_jobs"])
            if what == "downtime":
                device_part("jobs", jobs)
    for name, figs, dirtied in (("idle", idle, 0), ("jobs", jobs, JOB_DIRTY)):
        if not figs:
            continue
        st = med(figs, "device_state")
        bound = STATE_GOAL + dirtied
        row("migrate_device_state_%s" % name, int(st), "bytes", st / bound,
            "device state / (8 MiB + %d MiB the device's jobs dirtied)" % (dirtied >> 20)
            if dirtied else "device state / 8 MiB", "<= 1", st <= bound)
        row("migrate_stop_copy_server_%s" % name, med(figs, "stop_copy_ms"), "ms",
            desc="the source server's time in stop-copy")
        if med(figs, "devmem_pages_reported") is not None:
            row("migrate_devmem_pages_reported_%s" % name, int(med(figs, "devmem_pages_reported")),
                "pages", desc="device memory pages the device wrote, sent with RAM in "
                "pre-copy (DMA logging reports), not in the device state")
        row("migrate_ram_bytes_%s" % name, int(med(figs, "ram_bytes")), "bytes",
            desc="QEMU's RAM stream: guest RAM and the CXL memory")
    for side in ("src", "dst"):
        for part in ("qemu", "server"):
            key = "rss_%s_%s" % (side, part)
            base = med(nodev, key) if part == "qemu" else None
            for name, figs in (("nodev", nodev), ("idle", idle), ("jobs", jobs)):
                if not figs or (part == "server" and name == "nodev"):
                    continue
                v = med(figs, key) / 1024.0
                row("migrate_%s_%s_%s" % (key, "mib", name), v, "MiB",
                    v * 1024 / base if base and name != "nodev" else None,
                    "VmRSS just after the switch-over" + (", / without the device" if base and
                                                           name != "nodev" else ""))
    json.dump({"runs": {"nodev": nodev, "idle": idle, "jobs": jobs, "nodev_one_core": nodev_1c,
                        "idle_one_core": idle_1c,
                        "nodev_default_limit": nodev_dflt, "idle_default_limit": idle_dflt},
               "rows": OUT},
              open(CFG["json"], "w"), indent=1)
    note("bench-migrate: %.0f s; written: %s" % (time.monotonic() - t0, CFG["json"]))
    return 0


if __name__ == "__main__":
    sys.exit(main())
