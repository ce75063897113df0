#!/bin/sh
# SPDX-License-Identifier: BSD-3-Clause
# make bench: run every benchmark once (each repeated internally), print
# `name value unit ratio` lines and write build/bench.json.
set -eu
BUILD=${1:-build}
echo "# vcxl bench on $(nproc) cores, $(awk '/MemTotal/ {printf "%.0f GiB", $2/1048576}' /proc/meminfo), $(date -u +%Y-%m-%d)"
exec "$BUILD/bench/vcxl-bench" "$BUILD/src/server/vcxl-server" "$BUILD/bench.json" "$@"
