#!/usr/bin/env python3
# SPDX-License-Identifier: BSD-3-Clause
"""dma-message.py QEMU SERVER LOGDIR - a job's DMA by message while the driver polls (TAP).

Guest RAM without a file descriptor (QEMU's memory-backend-ram, or plain -m) reaches the
server as DMA windows without an fd: the device's DMA into it goes by VFIO_USER_DMA_READ/
DMA_WRITE messages, which QEMU serves from its main loop. A driver that reads the device
while such a job runs (its STATUS register, as every driver polls) makes QEMU wait for that
read's reply holding the BQL, so QEMU cannot serve the job's DMA_WRITE until the read is
answered: the server must answer the read while the job waits, or both wait for the
server's DMA timeout (5 s) and the job ends in ERROR.

QEMU runs under the qtest accelerator (no guest: qtest stands in for firmware and driver),
the vcxl device behind e2e_qtest's CXL switch, guest RAM anonymous. A FILL job writes 64 KiB
of guest RAM (ACCEL_JOBF_DST_HOST) while qtest polls STATUS; the job must end DONE within a
second with every byte there, by message (the server's dma_messages count grows). A second
job, whose driver waits before it polls, must end the same. Logs in LOGDIR.
"""
import json
import os
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from e2e_qmp import JsonLines, server_start  # noqa: E402 (the e2e library)
from e2e_qtest import (DEV, DSP, SWITCH, WIN, Tap, cfg, qemu_start, switch_on,  # noqa: E402
                       tap_main)

QEMU, SERVER, LOGDIR = sys.argv[1], sys.argv[2], sys.argv[3]
# the device's BARs inside dsp0's window: BAR2 (the job engine, 16 KiB) at its bottom,
# BAR0 (4 MiB: the component block and RAM) 1 MiB above, aligned
BAR2_AT, BAR0_AT = WIN[DSP], WIN[DSP] + 0x100000
# src/model/model.h: the job engine's registers in BAR2
JOB_OP, JOB_FLAGS, JOB_DST, JOB_LEN, JOB_PATTERN = 0x08, 0x0C, 0x18, 0x20, 0x28
DOORBELL, STATUS = 0x30, 0x34
OP_FILL, JOBF_DST_HOST = 1, 1 << 1
ST_BUSY, ST_DONE, ST_ERROR = 1 << 0, 1 << 1, 1 << 2
LEN = 64 << 10
t = Tap()
procs = []


def wr64(qt, addr, val):
    qt.wr(addr, val & 0xFFFFFFFF)
    qt.wr(addr + 4, val >> 32)


def start_job(qt, dst, pattern):
    qt.wr(BAR2_AT + STATUS, ST_DONE | ST_ERROR)
    qt.wr(BAR2_AT + JOB_OP, OP_FILL)
    qt.wr(BAR2_AT + JOB_FLAGS, JOBF_DST_HOST)
    wr64(qt, BAR2_AT + JOB_DST, dst)
    wr64(qt, BAR2_AT + JOB_LEN, LEN)
    wr64(qt, BAR2_AT + JOB_PATTERN, pattern)
    qt.wr(BAR2_AT + DOORBELL, 1)


def poll(qt, secs=10.0):
    """STATUS read until the job is no longer BUSY: (status, seconds)."""
    t0 = time.monotonic()
    st = qt.rd(BAR2_AT + STATUS)
    while st & ST_BUSY and time.monotonic() - t0 < secs:
        st = qt.rd(BAR2_AT + STATUS)
    return st, time.monotonic() - t0


def holds(qt, addr, pattern):
    for off in list(range(0, LEN, 4096)) + [LEN - 8]:
        if qt.rd(addr + off) | (qt.rd(addr + off + 4) << 32) != pattern:
            return False
    return True


def dma_messages(sock):
    c = JsonLines(sock + ".ctl")
    try:
        return c.cmd("query-status")["return"]["devices"][0]["counters"]["dma_messages"]
    finally:
        c.close()


def run(tmp):
    sock = os.path.join(tmp, "dev.sock")
    srv, why = server_start([SERVER, "--socket", sock, "--mem-size", "256M"],
                            os.path.join(LOGDIR, "srv.log"))
    procs.append(srv)
    if not t.ok(why is None, "vcxl-server listens", why):
        return
    dev = {"driver": "vfio-user-pci", "socket": {"type": "unix", "path": sock},
           "id": "vcxl0", "bus": "dsp0"}
    _, qt, q = qemu_start(QEMU, tmp, LOGDIR, "qemu", SWITCH + ["-device", json.dumps(dev)],
                          procs=procs, ram_fd=False)
    switch_on(qt, 0x0006)
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
    q.cmd("quit")


def main():
    return tap_main(t, run, "vcxl-dmamsg.", procs, (OSError, RuntimeError, ValueError, KeyError))


if __name__ == "__main__":
    sys.exit(main())
