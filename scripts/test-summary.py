#!/usr/bin/env python3
# SPDX-License-Identifier: BSD-3-Clause
"""Sum the TAP results of meson test logs: prints 'N passed, N failed'."""
import json, re, sys

passed = failed = 0
for log in sys.argv[1:]:
    try:
        lines = open(log).read().splitlines()
    except OSError:
        print(f"# no test log {log}")
        failed += 1
        continue
    for line in lines:
        t = json.loads(line)
        out = t.get("stdout", "") or ""
        points_ok = len(re.findall(r"^ok \d+", out, re.M))
        # "not ok ... # TODO": a known bug (TAP), listed but not counted
        todo = re.findall(r"^not ok \d+.*# TODO.*$", out, re.M)
        for line in todo:
            print(f"# known bug ({t.get('name')}): {line}")
        points_bad = len(re.findall(r"^not ok \d+", out, re.M)) - len(todo)
        if t.get("result") not in ("OK", "SKIP", "EXPECTEDFAIL") and points_bad == 0:
            points_bad = 1  # crashed, timed out or bad plan: count the program as a failure
            print(f"# {t.get('name')}: {t.get('result')}")
        passed += points_ok
        failed += points_bad
print(f"{passed} passed, {failed} failed")
sys.exit(1 if failed else 0)
