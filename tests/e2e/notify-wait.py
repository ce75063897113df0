#!/usr/bin/env python3
# SPDX-License-Identifier: BSD-3-Clause
"""notify-wait.py SOCKET TIMEOUT - the service manager's end of sd_notify for the e2e
scripts (tests/e2e/lib.sh: e2e_server_start): binds the datagram socket a server gets as
$NOTIFY_SOCKET, says "bound" on stdout, reads the server's pid on stdin, then waits for a
datagram with a READY=1 line. Prints one line and exits: "READY" (0), "EXITED" when the
server died first (1), "TIMEOUT" after TIMEOUT seconds (1). STATUS= lines the server sends
before READY=1 are passed on as "STATUS <text>" lines."""
import os
import socket
import sys


def alive(pid):
    """pid runs (an exited child its parent has not reaped yet is a zombie: not alive)"""
    try:
        with open("/proc/%d/stat" % pid) as f:
            return f.read().rsplit(")", 1)[1].split()[0] != "Z"
    except (OSError, IndexError):
        return False


def main():
    path, tmo = sys.argv[1], float(sys.argv[2])
    try:
        os.unlink(path)
    except FileNotFoundError:
        pass
    s = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
    s.bind(path)
    print("bound", flush=True)
    pid = int(sys.stdin.readline().strip() or "0")
    s.settimeout(0.1)
    waited = 0.0
    while waited < tmo:
        try:
            msg = s.recv(4096).decode(errors="replace")
        except socket.timeout:
            waited += 0.1
            if not alive(pid):
                print("EXITED", flush=True)
                return 1
            continue
        for line in msg.splitlines():
            if line == "READY=1":
                print("READY", flush=True)
                return 0
            if line.startswith("STATUS="):
                print("STATUS " + line[7:], flush=True)
    print("TIMEOUT", flush=True)
    return 1


if __name__ == "__main__":
    sys.exit(main())
