#!/bin/sh
# SPDX-License-Identifier: BSD-3-Clause
# make run: build-and-start vcxl-server on the built-in accelerator model,
# printing how to attach QEMU 10.1+ and how to inspect the device.
# Usage: scripts/run.sh [BUILD_DIR] [vcxl-server options...]
set -eu
BUILD=${1:-build}
[ $# -gt 0 ] && shift
SERVER=""
for p in "$BUILD/src/tools/vcxl-server" "$BUILD/src/server/vcxl-server"; do
	if [ -x "$p" ]; then SERVER=$p; break; fi
done
if [ -z "$SERVER" ]; then
	# No server binary (partial tree): fall back to the self-contained demo.
	exec "$BUILD/src/tools/vcxl-demo" "$@"
fi
CLI=$(dirname "$SERVER")/vcxl
SOCK=""
prev=""
for a in "$@"; do
	case "$prev" in --socket|-s) SOCK=$a ;; esac
	case "$a" in --socket=*) SOCK=${a#--socket=} ;; esac
	prev=$a
done
if [ -z "$SOCK" ]; then
	SOCK="$(pwd)/vcxl.sock"
	set -- --socket "$SOCK" "$@"
fi
case "$SOCK" in /*) ;; *) SOCK="$(pwd)/$SOCK" ;; esac
cat <<MSG
vcxl-server: socket $SOCK
Attach it to QEMU 10.1+ (accelerator model 8086:0d94, CXL Type-2):
  qemu-system-x86_64 -L /usr/share/seabios -L /usr/share/qemu -accel tcg -m 2G \\
    -object memory-backend-memfd,id=mem,size=2G,share=on -machine q35,memory-backend=mem \\
    -device '{"driver":"vfio-user-pci","socket":{"type":"unix","path":"$SOCK"}}'
Inspect it:
  $CLI info $SOCK
Stop with Ctrl-C (SIGINT) or SIGTERM; the socket is removed on exit.
MSG
exec "$SERVER" "$@"
