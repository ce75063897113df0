#!/usr/bin/env python3
# SPDX-License-Identifier: BSD-3-Clause
"""Wait for a server's readiness notification (systemd's sd_notify protocol).

Usage: notify-wait.py PATH SECONDS

Binds a datagram socket at PATH (give it to the server as $NOTIFY_SOCKET; the
socket file exists once it can receive), waits up to SECONDS for a
notification with the line READY=1 and exits 0, or 1 on timeout. PATH is
removed on the way out.
"""
import os
import socket
import sys
import time


def main():
    path, secs = sys.argv[1], float(sys.argv[2])
    s = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
    s.bind(path)
    end = time.monotonic() + secs
    try:
        while True:
            left = end - time.monotonic()
            if left <= 0:
                return 1
            s.settimeout(left)
            try:
                msg = s.recv(4096).decode(errors="replace")
            except socket.timeout:
                return 1
            if "READY=1" in msg.split("\n"):
                return 0
    finally:
        os.unlink(path)


if __name__ == "__main__":
    sys.exit(main())
