#!/bin/sh
# SPDX-License-Identifier: BSD-3-Clause
# make run: start the server on the built-in accelerator model.
set -eu
BUILD=${1:-build}; shift || true
if [ -x "$BUILD/src/server/vcxl-server" ]; then
	exec "$BUILD/src/server/vcxl-server" "$@"
fi
exec "$BUILD/src/tools/vcxl-demo" "$@"
