#!/bin/sh
# SPDX-License-Identifier: BSD-3-Clause
# Run every libFuzzer harness of a fuzz build for SECONDS each, seeded from
# the committed corpus (fuzz/corpus/<harness>, read-only) plus the corpus
# this build dir has grown so far (BUILD/fuzz-work/corpus/<harness>).
#
#   scripts/fuzz.sh BUILD_DIR SECONDS [--testlog FILE]
#
# Crash reproducers land in BUILD/fuzz-work/artifacts/<harness>/; replay one
# with BUILD/fuzz/fuzz_<harness> FILE. With --testlog, FILE gets one line per
# harness in meson's testlog.json format (read by scripts/test-summary.py).
# Exit status: 0 when no harness found a crash, leak or oracle violation.
set -u

if [ $# -lt 2 ]; then
	echo "usage: $0 BUILD_DIR SECONDS [--testlog FILE]" >&2
	exit 2
fi
B=$1
T=$2
LOG=
[ "${3:-}" = "--testlog" ] && LOG=${4:-}
SRC=$(cd "$(dirname "$0")/.." && pwd)
WORK=$B/fuzz-work
# the harnesses fuzz/meson.build builds (its fuzz_harnesses list)
HARNESSES=$(sed -n "s/^fuzz_harnesses = \[\(.*\)\]/\1/p" "$SRC/fuzz/meson.build" | tr -d "',")
if [ -z "$HARNESSES" ]; then
	echo "$0: no fuzz_harnesses list in $SRC/fuzz/meson.build" >&2
	exit 2
fi
status=0
total_execs=0
total_secs=0

max_len() {
	case $1 in
	vfio_user) echo 8192 ;;
	vdev_regs) echo 6145 ;;
	hw_tables) echo 4097 ;;
	mig_load) echo 1048576 ;; # a device state stream: 180 KiB and up
	*) echo 8193 ;;
	esac
}

[ -n "$LOG" ] && : >"$LOG"
for h in $HARNESSES; do
	bin=$B/fuzz/fuzz_$h
	mkdir -p "$WORK/corpus/$h" "$WORK/artifacts/$h"
	out=$WORK/$h.log
	if [ ! -x "$bin" ]; then
		echo "fuzz_$h: not built ($bin)" >&2
		res=FAIL
		line="not ok 1 - fuzz_$h: harness not built"
		status=1
	else
		start=$(date +%s)
		# -detect_leaks is on by default with ASan; -timeout catches hangs
		"$bin" -max_total_time="$T" -timeout=10 -rss_limit_mb=2048 \
			-max_len="$(max_len "$h")" -print_final_stats=1 \
			-artifact_prefix="$WORK/artifacts/$h/" \
			"$WORK/corpus/$h" "$SRC/fuzz/corpus/$h" >"$out" 2>&1
		rc=$?
		secs=$(($(date +%s) - start))
		execs=$(sed -n 's/^stat::number_of_executed_units: *//p' "$out" | tail -n 1)
		cov=$(grep -o 'cov: [0-9]*' "$out" | tail -n 1 | cut -d' ' -f2)
		corp=$(ls "$WORK/corpus/$h" | wc -l)
		execs=${execs:-0}
		total_execs=$((total_execs + execs))
		total_secs=$((total_secs + secs))
		if [ $rc -eq 0 ]; then
			res=OK
			line="ok 1 - fuzz_$h: $execs executions in ${secs} s, coverage ${cov:-?} edges, corpus $corp, no crash, leak or oracle violation"
		else
			res=FAIL
			status=1
			line="not ok 1 - fuzz_$h: exit $rc after $execs executions; see $out and $WORK/artifacts/$h/"
			grep -E 'FUZZ ORACLE VIOLATION|ERROR: |SUMMARY: ' "$out" | head -n 5 >&2
		fi
	fi
	echo "$line" | sed 's/^\(not \)\{0,1\}ok 1 - //'
	if [ -n "$LOG" ]; then
		python3 -c 'import json,sys; print(json.dumps({"name": sys.argv[1], "result": sys.argv[2], "stdout": "1..1\n" + sys.argv[3] + "\n"}))' \
			"fuzz_$h" "$res" "$line" >>"$LOG"
	fi
done
echo "fuzz: $total_execs executions in $total_secs s over $(echo $HARNESSES | wc -w) harnesses"
exit $status
