#!/usr/bin/env python3
# SPDX-License-Identifier: BSD-3-Clause
"""dma-message.py QEMU SERVER LOGDIR - a job's DMA by message while the driver polls (TAP).

Guest RAM without a file descriptor (QEMU's memory-backend-ram, or plain -m) reaches the
server as DMA windows without an fd: the device's DMA into it goes by VFIO_USER_DMA_READ/
DMA_WRITE messages, which QEMU serves from its main loop. A driver that reads the device
while such a job runs (its STATUS register, as every driver polls) makes QEMU wait for that
read's reply holding the BQL, so QEMU cannot serve the job's DMA_WRITE until the read is
answered: the server must answer the read while the job waits, or both wait for the
server's DMA timeout (5 s) and the job ends in ERROR. A write the driver sends meanwhile
(the next job's registers) waits for the job on the server's side, in order: QEMU's thread
that waits for its reply holding the BQL serves the job's DMA requests itself (vmm/qemu
0035), or the same stall follows.

QEMU runs under the qtest accelerator (no guest: qtest stands in for firmware and driver),
the vcxl device behind e2e_qtest's CXL switch, guest RAM anonymous. A FILL job writes 64 KiB
of guest RAM (ACCEL_JOBF_DST_HOST) while qtest polls STATUS; the job must end DONE within a
second with every byte there, by message (the server's dma_messages count grows). A second
job, whose driver waits before it polls, must end the same. A 32 MiB fill, a 1 MiB DMA
message at a time, during which the driver writes the next job's pattern between its polls,
must end DONE within a second with every write there.

Then a hostile server: a relay (e2e_qmp.Relay "dmaflood") keeps a register write from the
server and answers it with DMA_READ requests without end, each as QEMU answers the last.
QEMU (x-msg-timeout 1000) must serve them while it waits and still give up on the write at
its timeout, and the device must answer afterwards.

Last, guest RAM with an fd (a memfd): the first MiB is one DMA window without an fd (vmm/qemu
0040, so that the chipset's PAM switches send no DMA map or unmap requests): a fill at
0x80000 goes by message and lands, one above the first MiB goes through the RAM's fd, and a
fill over the read-only BIOS at 0xf0000 is refused (the job in ERROR) and leaves it as it
was. Logs in LOGDIR.
"""
import json
import os
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from e2e_qmp import JsonLines, Relay, server_start  # noqa: E402 (the e2e library)
from e2e_qtest import (DEV, DSP, SWITCH, WIN, Tap, cfg, qemu_start, switch_on,  # noqa: E402
                       tap_main)

QEMU, SERVER, LOGDIR = sys.argv[1], sys.argv[2], sys.argv[3]
# the device's BARs inside dsp0's window: BAR2 (the job engine, 16 KiB) at its bottom,
# BAR0 (4 MiB: the component block and RAM) 1 MiB above, aligned
BAR2_AT, BAR0_AT = WIN[DSP], WIN[DSP] + 0x100000
# src/model/model.h: the job engine's registers in BAR2
JOB_OP, JOB_FLAGS, JOB_DST, JOB_LEN, JOB_PATTERN = 0x08, 0x0C, 0x18, 0x20, 0x28
DOORBELL, STATUS, ID = 0x30, 0x34, 0x00
ID_VALUE = 0x4C584356  # "VCXL"
OP_FILL, JOBF_DST_HOST = 1, 1 << 1
ST_BUSY, ST_DONE, ST_ERROR = 1 << 0, 1 << 1, 1 << 2
LEN = 64 << 10
t = Tap()
procs = []


def wr64(qt, addr, val):
    qt.wr(addr, val & 0xFFFFFFFF)
    qt.wr(addr + 4, val >> 32)


def start_job(qt, dst, pattern, length=LEN):
    qt.wr(BAR2_AT + STATUS, ST_DONE | ST_ERROR)
    qt.wr(BAR2_AT + JOB_OP, OP_FILL)
    qt.wr(BAR2_AT + JOB_FLAGS, JOBF_DST_HOST)
    wr64(qt, BAR2_AT + JOB_DST, dst)
    wr64(qt, BAR2_AT + JOB_LEN, length)
    wr64(qt, BAR2_AT + JOB_PATTERN, pattern)
    qt.wr(BAR2_AT + DOORBELL, 1)


def poll(qt, secs=10.0):
    """STATUS read until the job is no longer BUSY: (status, seconds)."""
    t0 = time.monotonic()
    st = qt.rd(BAR2_AT + STATUS)
    while st & ST_BUSY and time.monotonic() - t0 < secs:
        st = qt.rd(BAR2_AT + STATUS)
    return st, time.monotonic() - t0


def holds(qt, addr, pattern, length=LEN):
    step = 4096 if length <= LEN else 256 << 10
    for off in list(range(0, length, step)) + [length - 8]:
        if qt.rd(addr + off) | (qt.rd(addr + off + 4) << 32) != pattern:
            return False
    return True


def dma_messages(sock):
    c = JsonLines(sock + ".ctl")
    try:
        return c.cmd("query-status")["return"]["devices"][0]["counters"]["dma_messages"]
    finally:
        c.close()


def device_vm(tmp, name, ram_fd, what):
    """a vcxl-server and a qtest QEMU with the device behind the switch, guest RAM with an
    fd (a memfd) or without (anonymous): (socket, qtest, QMP), or None if the server does
    not start (a failed check says so)"""
    sock = os.path.join(tmp, name + ".sock")
    srv, why = server_start([SERVER, "--socket", sock, "--mem-size", "256M"],
                            os.path.join(LOGDIR, "srv-%s.log" % name))
    procs.append(srv)
    if not t.ok(why is None, "%svcxl-server listens" % what, why):
        return None
    dev = {"driver": "vfio-user-pci", "socket": {"type": "unix", "path": sock},
           "id": "vcxl0", "bus": "dsp0"}
    _, qt, q = qemu_start(QEMU, tmp, LOGDIR, "qemu-" + name,
                          SWITCH + ["-device", json.dumps(dev)], procs=procs, ram_fd=ram_fd)
    switch_on(qt, 0x0006)
    return sock, qt, q


def run(tmp):
    vm = device_vm(tmp, "dev", False, "")
    if not vm:
        return
    sock, qt, q = vm
    wr64(qt, cfg(DEV, 0x10), BAR0_AT | 0x4)  # BAR0: 64-bit memory
    wr64(qt, cfg(DEV, 0x18), BAR2_AT | 0x4)  # BAR2: 64-bit memory
    qt.wr(cfg(DEV, 0x04), 0x0006, 2)  # memory, bus master
    vid = qt.rd(cfg(DEV))
    t.ok(vid & 0xFFFF == 0x8086, f"the device answers behind the switch ({vid:#010x})")

    m0 = dma_messages(sock)
    start_job(qt, 0x300000, 0x1111222233334444)
    st, secs = poll(qt)
    m1 = dma_messages(sock)
    t.ok(st & ST_DONE and not st & ST_ERROR and secs < 1.0,
         f"a 64 KiB fill into anonymous guest RAM, STATUS polled meanwhile: DONE in "
         f"{secs * 1000:.0f} ms (status {st:#x})")
    t.ok(holds(qt, 0x300000, 0x1111222233334444) and m1 > m0,
         f"every byte there, by message (the server's dma_messages {m0} -> {m1})")

    start_job(qt, 0x400000, 0x5555666677778888)
    time.sleep(0.2)  # the driver waits a while before it looks
    st, secs = poll(qt)
    t.ok(st & ST_DONE and not st & ST_ERROR and holds(qt, 0x400000, 0x5555666677778888),
         f"a second fill, polled only later: DONE (status {st:#x}) and every byte there")

    # writes while the job's DMA waits for QEMU: each must be answered, the job must end
    big, at = 32 << 20, 0x1000000
    start_job(qt, at, 0x9999AAAABBBBCCCC, big)
    t0, writes, st, slowest = time.monotonic(), 0, ST_BUSY, 0.0
    while st & ST_BUSY and time.monotonic() - t0 < 10.0:
        w0 = time.monotonic()
        wr64(qt, BAR2_AT + JOB_PATTERN, 0x0123456700000000 | writes)
        slowest = max(slowest, time.monotonic() - w0)
        writes += 1
        st = qt.rd(BAR2_AT + STATUS)
    secs = time.monotonic() - t0
    last = qt.rd(BAR2_AT + JOB_PATTERN) | (qt.rd(BAR2_AT + JOB_PATTERN + 4) << 32)
    t.ok(st & ST_DONE and not st & ST_ERROR and secs < 1.0 and slowest < 0.5,
         f"a 32 MiB fill by message with {writes} register writes between the polls: DONE "
         f"in {secs * 1000:.0f} ms (status {st:#x}), the slowest write {slowest * 1000:.0f} ms")
    t.ok(holds(qt, at, 0x9999AAAABBBBCCCC, big) and last == 0x0123456700000000 | (writes - 1),
         f"every byte of the fill there, and the last write in the register ({last:#x})")
    q.cmd("quit")
    flood(tmp, sock)
    legacy_window(tmp)


def flood(tmp, sock):
    """a server that answers a write with DMA_READs without end"""
    relay = Relay(os.path.join(tmp, "relay.sock"), sock, "dmaflood")
    dev = {"driver": "vfio-user-pci", "socket": {"type": "unix", "path": relay.ls.getsockname()},
           "id": "vcxl0", "bus": "dsp0", "x-msg-timeout": 1000}
    try:
        _, qt, q = qemu_start(QEMU, tmp, LOGDIR, "qemu-flood",
                              SWITCH + ["-device", json.dumps(dev)], procs=procs, ram_fd=False)
        switch_on(qt, 0x0006)
        wr64(qt, cfg(DEV, 0x18), BAR2_AT | 0x4)
        qt.wr(cfg(DEV, 0x04), 0x0006, 2)
        relay.arm(0x300000)
        t0 = time.monotonic()
        qt.wr(BAR2_AT + JOB_PATTERN, 0x1234)
        secs = time.monotonic() - t0
        t.ok(relay.served > 0 and 0.9 <= secs < 4.0,
             f"a server answering a register write with DMA_READs without end: QEMU served "
             f"{relay.served} while it waited and gave up at its 1 s timeout "
             f"({secs * 1000:.0f} ms)")
        idv = qt.rd(BAR2_AT + ID)
        t.ok(idv == ID_VALUE, f"the device answers afterwards (ID {idv:#x})")
        q.cmd("quit")
    finally:
        relay.close()


def legacy_window(tmp):
    """guest RAM with an fd (a memfd): the first MiB goes to the server as one DMA window
    without an fd (vmm/qemu 0040), so the device's DMA there is by message, through the
    device's view of memory at that moment; above it, through the RAM's fd"""
    vm = device_vm(tmp, "legacy", True, "legacy window: ")
    if not vm:
        return
    sock, qt, q = vm
    wr64(qt, cfg(DEV, 0x18), BAR2_AT | 0x4)
    qt.wr(cfg(DEV, 0x04), 0x0006, 2)
    m0 = dma_messages(sock)
    start_job(qt, 0x300000, 0x0101010102020202)
    st, _ = poll(qt)
    m1 = dma_messages(sock)
    t.ok(st & ST_DONE and holds(qt, 0x300000, 0x0101010102020202) and m1 == m0,
         f"memfd RAM above the first MiB: a fill DONE (status {st:#x}), every byte there, "
         f"through the RAM's fd (the server's dma_messages {m0} -> {m1})")
    # conventional memory, below 640 KiB
    start_job(qt, 0x80000, 0x0303030304040404)
    st, secs = poll(qt)
    m2 = dma_messages(sock)
    t.ok(st & ST_DONE and not st & ST_ERROR and secs < 1.0 and
         holds(qt, 0x80000, 0x0303030304040404) and m2 > m1,
         f"a fill at 0x80000, in the first MiB: DONE in {secs * 1000:.0f} ms (status {st:#x}), "
         f"every byte there, by message (dma_messages {m1} -> {m2})")
    # the BIOS at 0xf0000, read-only in the device's view (no firmware opened the PAM
    # registers): QEMU refuses the device's writes there, as the read-only mapping did
    before = [qt.rd(0xF0000 + off) for off in range(0, LEN, 4096)]
    start_job(qt, 0xF0000, 0x0505050506060606)
    st, secs = poll(qt)
    after = [qt.rd(0xF0000 + off) for off in range(0, LEN, 4096)]
    t.ok(st & ST_ERROR and not st & ST_BUSY and after == before and 0x06060606 not in after,
         f"a fill over the read-only BIOS at 0xf0000: refused, the job in ERROR (status "
         f"{st:#x}, {secs * 1000:.0f} ms), and the BIOS reads as before ({len(after)} words)")
    q.cmd("quit")


def main():
    return tap_main(t, run, "vcxl-dmamsg.", procs, (OSError, RuntimeError, ValueError, KeyError))


if __name__ == "__main__":
    sys.exit(main())
