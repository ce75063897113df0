#!/usr/bin/env python3
# SPDX-License-Identifier: BSD-3-Clause
"""TAP test of scripts/test-summary.py on synthetic meson test logs: passed,
failed and skipped points, whole skipped programs, known bugs and crashes
each land in the right figure of 'N passed, N failed, N skipped'."""
import json, os, subprocess, sys, tempfile

script = sys.argv[1]
n = 0
bad = 0


def ok(cond, what):
    global n, bad
    n += 1
    print(f"{'ok' if cond else 'not ok'} {n} - {what}")
    if not cond:
        bad += 1


def run(records):
    with tempfile.TemporaryDirectory() as d:
        p = os.path.join(d, "testlog.json")
        with open(p, "w") as f:
            for r in records:
                f.write(json.dumps(r) + "\n")
        r = subprocess.run([sys.executable, script, p], capture_output=True, text=True)
        last = r.stdout.strip().splitlines()[-1] if r.stdout.strip() else ""
        return r.returncode, last


cases = [
    ("plain passes", [{"name": "a", "result": "OK", "stdout": "ok 1 - x\nok 2 - y\n1..2\n"}],
     0, "2 passed, 0 failed, 0 skipped"),
    ("skip points are skipped, not passed",
     [{"name": "a", "result": "OK",
       "stdout": "ok 1 - x\nok 2 - y # SKIP no kernel\nok 3 - z # skip\n1..3\n"}],
     0, "1 passed, 0 failed, 2 skipped"),
    ("a whole skipped program counts one skipped",
     [{"name": "e2e", "result": "SKIP", "stdout": "# SKIP e2e: no QEMU\n1..0 # SKIP no QEMU\n"},
      {"name": "a", "result": "OK", "stdout": "ok 1 - x\n1..1\n"}],
     0, "1 passed, 0 failed, 1 skipped"),
    ("failures and known bugs",
     [{"name": "a", "result": "FAIL",
       "stdout": "ok 1 - x\nnot ok 2 - y\nnot ok 3 - z # TODO known\n1..3\n"}],
     1, "1 passed, 1 failed, 0 skipped"),
    ("a crash without a failed point counts one failed",
     [{"name": "a", "result": "ERROR", "stdout": "ok 1 - x\n"}],
     1, "1 passed, 1 failed, 0 skipped"),
]
for name, recs, rc, line in cases:
    got_rc, got = run(recs)
    ok(got == line and got_rc == rc, f"{name}: '{line}' (got '{got}', exit {got_rc})")
print(f"1..{n}")
sys.exit(1 if bad else 0)
