#!/bin/sh
# SPDX-License-Identifier: BSD-3-Clause
# make bench: run every benchmark once (each repeated internally), print
# `name value unit ratio` lines and write build/bench.json.
set -eu
BUILD=${1:-build}
[ $# -gt 0 ] && shift
echo "# vcxl bench on $(nproc) cores, $(awk '/MemTotal/ {printf "%.0f GiB", $2/1048576}' /proc/meminfo), $(date -u +%Y-%m-%d)"
SERVER="$BUILD/src/tools/vcxl-server"; [ -x "$SERVER" ] || SERVER="$BUILD/src/server/vcxl-server"
exec "$BUILD/bench/vcxl-bench" "$SERVER" "$BUILD/bench.json" "$@"
