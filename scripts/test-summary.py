#!/usr/bin/env python3
# SPDX-License-Identifier: BSD-3-Clause
"""Sum the TAP results of meson test logs: prints 'N passed, N failed, N skipped'.

A test point is passed ('ok'), failed ('not ok') or skipped (either with a
'# SKIP' directive, TAP 13/14). A program that skipped as a whole (meson
result SKIP, e.g. '1..0 # SKIP no QEMU') counts one skipped. 'not ok ... # TODO'
is a known bug: listed, not counted. A program that crashed, timed out or
broke its plan without a failed point counts one failed. Exit status 1 when
anything failed."""
import json, re, sys

POINT = re.compile(r"^(not ok|ok)\b[^#]*(?:#\s*(\w+)(.*))?$", re.I)


def count(logs):
    passed = failed = skipped = 0
    notes = []
    for log in logs:
        try:
            lines = open(log).read().splitlines()
        except OSError:
            notes.append(f"# no test log {log}")
            failed += 1
            continue
        for line in lines:
            if not line.strip():
                continue
            t = json.loads(line)
            name = t.get("name")
            out = t.get("stdout", "") or ""
            p = f = s = 0
            for pl in out.splitlines():
                m = POINT.match(pl)
                if not m:
                    continue
                good = m.group(1).lower() == "ok"
                directive = (m.group(2) or "").lower()
                if directive == "skip":
                    s += 1
                elif directive == "todo" and not good:
                    notes.append(f"# known bug ({name}): {pl}")
                elif good:
                    p += 1
                else:
                    f += 1
            result = t.get("result")
            if result == "SKIP" and p + f + s == 0:
                s = 1  # the whole program skipped
                notes.append(f"# {name}: skipped")
            elif result not in ("OK", "SKIP", "EXPECTEDFAIL") and f == 0:
                f = 1  # crashed, timed out or bad plan: the program is a failure
                notes.append(f"# {name}: {result}")
            passed += p
            failed += f
            skipped += s
    return passed, failed, skipped, notes


if __name__ == "__main__":
    passed, failed, skipped, notes = count(sys.argv[1:])
    for n in notes:
        print(n)
    print(f"{passed} passed, {failed} failed, {skipped} skipped")
    sys.exit(1 if failed else 0)
