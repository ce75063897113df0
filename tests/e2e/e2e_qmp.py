# SPDX-License-Identifier: BSD-3-Clause
"""e2e_qmp.py - the host-side Python pieces the e2e scripts share (e2e-migrate-block's
migrate-block.py, e2e-migrate's migrate.py, make bench's scripts/bench-migrate.py):

  JsonLines(path)         one JSON object a line over a UNIX socket: QMP (events are kept
                          in .events) and vcxl-server's control socket; .cmd(execute, **args)
  qmp(path)               a QMP connection past its greeting and qmp_capabilities
  Relay(path, upstream, mode)  a vfio-user relay in this process's threads between a QEMU
                          and a vcxl-server, every message passed with its fds, except:
                          mode "nomig": DEVICE_FEATURE and MIG_DATA_READ/WRITE answered
                          ENOSYS (a server without migration, as the hardware backend is);
                          mode "corrupt": one byte of the first MIG_DATA_WRITE's payload
                          flipped (a stream damaged on its way to the destination server);
                          mode "refusewrite": the first MIG_DATA_WRITE answered EIO and not
                          passed on (a server that refuses a write: vmm/qemu 0023 sends it
                          without waiting and must still fail the load);
                          mode "refuserun": the first DEVICE_FEATURE setting the migration
                          state RUNNING answered EIO and not passed on (a device that
                          refuses to run at the VM's start: vmm/qemu 0034 sends it without
                          waiting, then reports it and resets the device);
                          mode "refusestopcopy": the same for the first change into
                          STOP_COPY (a source device that refuses to stop for its save);
                          mode "dmaflood": once .arm() is called, the next REGION_WRITE
                          is kept from the server and, instead of its reply, QEMU gets
                          DMA_READ requests one after another, each sent as QEMU answers
                          the last (.served counts the answers), until QEMU sends another
                          request or 30 s pass (a hostile server that never lets QEMU's
                          waiting thread go: vmm/qemu 0035 serves them while it waits)
  server_start(argv, log, timeout)  vcxl-server started as a service manager does
                          (tests/e2e/lib.sh e2e_server_start): $NOTIFY_SOCKET, returns once it
                          sent READY=1; (Popen, None) or (Popen or None, why)
  hostcheck(ctl, lines)   "HOSTCHECK mem dpa= len= pattern= [step=]" lines of a guest (qword
                          i = pattern + step * i) checked through the control socket's
                          read-memory: a list of (ok, detail)
  rss_kib(pid)            VmRSS, RssAnon, RssFile, RssShmem of a process (KiB)
  proc_stop(p)            SIGTERM, then SIGKILL after 10 s; the exit status
"""
from array import array
import json
import os
import re
import socket
import struct
import subprocess
import threading
import time


class JsonLines:
    """One JSON object a line: QMP (which also sends events) and vcxl's control socket."""

    def __init__(self, path, secs=20.0, timeout=60.0):
        end = time.monotonic() + secs
        while True:
            try:
                self.s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
                self.s.connect(path)
                break
            except OSError:
                self.s.close()
                if time.monotonic() > end:
                    raise
                time.sleep(0.05)
        self.s.settimeout(timeout)
        self.buf = b""
        self.events = []

    def recv(self):
        while b"\n" not in self.buf:
            d = self.s.recv(1 << 20)
            if not d:
                raise EOFError("connection closed")
            self.buf += d
        line, self.buf = self.buf.split(b"\n", 1)
        return json.loads(line)

    def send(self, execute, **args):
        msg = {"execute": execute}
        if args:
            msg["arguments"] = args
        self.s.sendall(json.dumps(msg).encode() + b"\n")

    def reply(self):
        while True:
            r = self.recv()
            if "event" in r:
                self.events.append(r)
                continue
            return r

    def cmd(self, execute, **args):
        self.send(execute, **args)
        return self.reply()

    def hmp(self, line):
        return self.cmd("human-monitor-command", **{"command-line": line}).get("return", "")

    def close(self):
        self.s.close()


def qmp(path, secs=20.0):
    q = JsonLines(path, secs)
    q.recv()  # greeting
    q.cmd("qmp_capabilities")
    return q


class Relay:
    """A vfio-user relay at PATH to the server at UPSTREAM (see the module's text)."""
    HDR = struct.Struct("<HHIII")  # id, command, size (with the header), flags, error
    NO_MIGRATION = (16, 17, 18)  # DEVICE_FEATURE, MIG_DATA_READ, MIG_DATA_WRITE
    MIG_DATA_WRITE = 18
    DEVICE_FEATURE = 16
    # VFIO_DEVICE_FEATURE_SET | VFIO_DEVICE_FEATURE_MIG_DEVICE_STATE, then device_state
    # VFIO_DEVICE_STATE_RUNNING (<linux/vfio.h>), after argsz
    SET_MIG_STATE = (1 << 17) | 2
    STATE_RUNNING = 2
    STATE_STOP_COPY = 3
    REFUSED_STATE = {"refuserun": STATE_RUNNING, "refusestopcopy": STATE_STOP_COPY}
    ENOSYS = 38
    EIO = 5
    REGION_WRITE = 10
    DMA_READ = 11
    FLOOD_ID = 0xF000  # the ids of the relay's own DMA_READs: above QEMU's
    FLOOD_SECS = 30.0
    CORRUPT_AT = 200  # a byte of the stream past its 128-byte header: a section's CRC fails

    def __init__(self, path, upstream, mode):
        self.upstream, self.mode = upstream, mode
        self.refused = 0
        self.corrupted = 0
        self.armed = self.flooding = False
        self.served = 0
        self.flood_addr = 0
        self.ls = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        self.ls.bind(path)
        self.ls.listen(4)
        threading.Thread(target=self.accept, daemon=True).start()

    def close(self):
        self.ls.close()

    def arm(self, addr):
        """dmaflood: the next REGION_WRITE starts the flood of DMA_READs of 8 bytes at
        guest address addr"""
        self.flood_addr, self.served, self.armed = addr, 0, True

    def flood_one(self, c, lock):
        body = struct.pack("<QI4x", self.flood_addr, 8)  # QEMU 10.2's DMA_READ layout
        with lock:
            c.sendall(self.HDR.pack(self.FLOOD_ID + self.served % 0x800, self.DMA_READ,
                                    16 + len(body), 0, 0) + body)

    def accept(self):
        while True:
            try:
                c, _ = self.ls.accept()
            except OSError:
                return
            u = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
            u.connect(self.upstream)
            lock = threading.Lock()  # writes to QEMU: relayed replies and our own
            threading.Thread(target=self.pump, args=(c, u, lock, True), daemon=True).start()
            threading.Thread(target=self.pump, args=(u, c, lock, False), daemon=True).start()

    @classmethod
    def recv_msg(cls, s):
        buf, fds = b"", []
        while len(buf) < 16:
            d, anc, _, _ = s.recvmsg(16 - len(buf), socket.CMSG_SPACE(64 * 4))
            if not d:
                return None, fds
            buf += d
            for lvl, typ, data in anc:
                if lvl == socket.SOL_SOCKET and typ == socket.SCM_RIGHTS:
                    fds += list(struct.unpack(f"{len(data) // 4}i", data[:len(data) // 4 * 4]))
        size = cls.HDR.unpack(buf)[2]
        while len(buf) < size:
            d = s.recv(size - len(buf))
            if not d:
                return None, fds
            buf += d
        return buf, fds

    def pump(self, src, dst, lock, from_qemu):
        try:
            while True:
                msg, fds = self.recv_msg(src)
                if msg is None:
                    break
                mid, cmd, size, flags, _ = self.HDR.unpack(msg[:16])
                request = from_qemu and (flags & 0xF) == 0
                if self.mode == "dmaflood" and from_qemu:
                    if cmd == self.DMA_READ and (flags & 0xF) == 1 and mid >= self.FLOOD_ID:
                        if not self.flooding:
                            continue  # answered after the flood: not the server's
                        self.served += 1  # QEMU answered one: the next goes out
                        if time.monotonic() < self.flood_end:
                            self.flood_one(src, lock)
                        else:
                            self.flooding = False
                        continue
                    if self.flooding and request:
                        self.flooding = False  # QEMU gave up waiting and goes on
                    if self.armed and request and cmd == self.REGION_WRITE:
                        self.armed, self.flooding = False, True
                        self.flood_end = time.monotonic() + self.FLOOD_SECS
                        self.flood_one(src, lock)
                        continue
                if self.mode == "nomig" and request and cmd in self.NO_MIGRATION:
                    self.refused += 1
                    with lock:
                        src.sendall(self.HDR.pack(mid, cmd, 16, 0x1 | 0x20, self.ENOSYS))
                    continue
                if (self.mode == "refusewrite" and request and cmd == self.MIG_DATA_WRITE and
                        not self.refused):
                    self.refused += 1
                    with lock:
                        src.sendall(self.HDR.pack(mid, cmd, 16, 0x1 | 0x20, self.EIO))
                    continue
                if (self.mode in self.REFUSED_STATE and request and
                        cmd == self.DEVICE_FEATURE and not self.refused and
                        size >= 16 + 12 and struct.unpack_from("<II", msg, 20) ==
                        (self.SET_MIG_STATE, self.REFUSED_STATE[self.mode])):
                    self.refused += 1
                    with lock:
                        src.sendall(self.HDR.pack(mid, cmd, 16, 0x1 | 0x20, self.EIO))
                    continue
                if (self.mode == "corrupt" and request and cmd == self.MIG_DATA_WRITE and
                        not self.corrupted and size > 16 + 8 + self.CORRUPT_AT):
                    self.corrupted += 1
                    m = bytearray(msg)
                    m[16 + 8 + self.CORRUPT_AT] ^= 0xFF
                    msg = bytes(m)
                anc = [(socket.SOL_SOCKET, socket.SCM_RIGHTS,
                        struct.pack(f"{len(fds)}i", *fds))] if fds else []
                if from_qemu:
                    dst.sendmsg([msg], anc)
                else:
                    with lock:
                        dst.sendmsg([msg], anc)
                for fd in fds:
                    os.close(fd)
        except OSError:
            pass
        for s in (src, dst):
            try:
                s.shutdown(socket.SHUT_RDWR)
            except OSError:
                pass


def _alive(pid):
    try:
        with open("/proc/%d/stat" % pid) as f:
            return f.read().rsplit(")", 1)[1].split()[0] != "Z"
    except (OSError, IndexError):
        return False


def server_start(argv, log, timeout=60.0):
    """vcxl-server with $NOTIFY_SOCKET: (proc, None) once READY=1, else (proc, why)."""
    ns = "/tmp/vcxl-notify.%d.%d" % (os.getpid(), time.monotonic_ns())
    s = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
    s.bind(ns)
    s.settimeout(0.1)
    env = dict(os.environ, NOTIFY_SOCKET=ns)
    out = open(log, "w")
    p = subprocess.Popen(argv, stdin=subprocess.DEVNULL, stdout=out, stderr=subprocess.STDOUT,
                         env=env)
    out.close()
    why = "no READY=1 within %g s" % timeout
    end = time.monotonic() + timeout
    try:
        while time.monotonic() < end:
            try:
                msg = s.recv(4096).decode(errors="replace")
            except socket.timeout:
                if not _alive(p.pid):
                    with open(log) as f:
                        tail = f.read().strip().splitlines()[-1:] or [""]
                    why = "it exited before READY=1: " + tail[0]
                    break
                continue
            if "READY=1" in msg.splitlines():
                why = None
                break
    finally:
        s.close()
        os.unlink(ns)
    return p, why


def proc_stop(p, secs=10.0):
    if p is None:
        return None
    if p.poll() is None:
        p.terminate()
        try:
            p.wait(secs)
        except subprocess.TimeoutExpired:
            p.kill()
            p.wait()
    return p.returncode


def rss_kib(pid):
    out = {}
    try:
        with open("/proc/%d/status" % pid) as f:
            for line in f:
                k, _, v = line.partition(":")
                if k in ("VmRSS", "RssAnon", "RssFile", "RssShmem", "VmHWM"):
                    out[k] = int(v.split()[0])
    except OSError:
        pass
    return out


M64 = (1 << 64) - 1


def arith(first, step, n):
    """array('Q') of first + step * i (mod 2**64), i < n, built in C-sized pieces"""
    if step == 0:
        return array("Q", [first]) * n
    out, v, i = array("Q"), first, 0
    while i < n:
        k = min(n - i, (M64 - v) // step + 1)
        out.extend(range(v, v + k * step, step))
        v, i = (v + k * step) & M64, i + k
    return out


def read_memory(ctl, dev, off, length, chunk=4096, window=8):
    """device memory [off, off + length) through read-memory, `window` requests in flight
    (the server reads a connection's requests into a 4 KiB buffer: a few dozen queued
    requests close it)"""
    out = bytearray()
    todo = [(o, min(chunk, off + length - o)) for o in range(off, off + length, chunk)]
    i = 0
    while i < len(todo):
        batch = todo[i:i + window]
        for o, n in batch:
            ctl.send("read-memory", device=dev, offset=o, length=n)
        for o, n in batch:
            r = ctl.reply()
            if "return" not in r:
                raise RuntimeError("read-memory %#x+%d: %s" % (o, n, r))
            out += bytes.fromhex(r["return"]["data"])
        i += len(batch)
    return bytes(out)


def hostcheck(ctl_path, lines, dev=0):
    """[(ok, detail)] for each HOSTCHECK line, read through the control socket at ctl_path"""
    res = []
    ctl = JsonLines(ctl_path, timeout=30)
    try:
        for line in lines:
            kv = dict(re.findall(r"(\w+)=(\S+)", line))
            dpa, ln = int(kv["dpa"], 0), int(kv["len"], 0)
            t0 = time.monotonic()
            data = read_memory(ctl, dev, dpa, ln)
            n = ln // 8
            got = array("Q", data[:8 * n])
            pat, step = int(kv["pattern"], 0), int(kv.get("step", "1"), 0)
            want = arith(pat, step, n)
            hit = n if got == want else sum(1 for a, b in zip(got, want) if a == b)
            want = "%#x + %#x i" % (pat, step)
            size = "%d MiB" % (ln >> 20) if ln >= 1 << 20 else "%d bytes" % ln
            res.append((hit == n, "device memory at region offset %#x, %s (read-memory, "
                        "%.1f s): qword i = %s, %d of %d qwords found, %d mismatches" % (
                            dpa, size, time.monotonic() - t0, want, hit, n, n - hit)))
    finally:
        ctl.close()
    return res
