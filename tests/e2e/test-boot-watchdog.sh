#!/bin/bash
# SPDX-License-Identifier: BSD-3-Clause
# test-boot-watchdog.sh - TAP: lib.sh's e2e_boot on fake "guests" (shell commands, no QEMU):
# a guest that prints and then goes silent is killed within the silence bound and booted
# once more, a guest that hangs only once passes on its retry, a guest that keeps printing
# past the bound is left alone unless its kernel reports a stall (then killed and retried),
# a guest still printing at --timeout is killed (not retried),
# --during runs while the guest runs, and e2e_boot_stop ends a running guest.
set -u
HERE=$(cd "$(dirname "$0")" && pwd)
# shellcheck source=tests/e2e/lib.sh
. "$HERE/lib.sh"
T=$(mktemp -d /tmp/vcxl-watchdog.XXXXXX)
trap 'e2e_boot_stop; rm -rf "$T"' EXIT
n=0
nfail=0
ok() { # ok 0|1 DESCRIPTION
	n=$((n + 1))
	if [ "$1" = 1 ]; then echo "ok $n - $2"; else echo "not ok $n - $2"; nfail=$((nfail + 1)); fi
}
SIL=3 # the silence bound here (the e2e default: E2E_SILENCE_DEFAULT)
SLACK=8 # the watchdog polls once a second and waits up to 10 s after TERM (sleep dies at once)

# 1: prints, then silent: killed after ~SIL s, retried once, both attempts silent -> 125
t0=$(date +%s)
e2e_boot --silence $SIL --timeout 60 hang "$T/hang.con" \
	sh -c 'echo "guest: booting"; exec sleep 613' > "$T/hang.out"
rc=$?
el=$(($(date +%s) - t0))
sed 's/^/# | /' "$T/hang.out"
ok "$([ $rc = 125 ] && echo 1 || echo 0)" "a guest silent after its first line: status 125 (got $rc)"
ok "$([ "$E2E_BOOT_ATTEMPTS" = 2 ] && [ "$E2E_BOOT_VERDICT" = silent ] && echo 1 || echo 0)" \
	"... booted twice, both silent (attempts $E2E_BOOT_ATTEMPTS, verdict $E2E_BOOT_VERDICT)"
ok "$([ "$el" -ge $((2 * SIL)) ] && [ "$el" -le $((2 * (SIL + SLACK))) ] && echo 1 || echo 0)" \
	"... each attempt killed within the bound: $el s for both (bound $SIL s each, not the 60 s timeout)"
ok "$(grep -q "^# guest hang: no console output for $SIL s, killed after [0-9]* s; retrying once" "$T/hang.out" &&
	grep -q "^# guest hang: no console output for $SIL s again, killed after [0-9]* s; not retried" "$T/hang.out" &&
	echo 1 || echo 0)" "... named in TAP diagnostics: the kill, the retry, the second kill"
ok "$(grep -q 'guest: booting' "$T/hang.con.attempt1" && grep -q 'guest: booting' "$T/hang.con" &&
	echo 1 || echo 0)" "... the first attempt's console kept as CONSOLE.attempt1, the retry's in CONSOLE"
left=""
for p in $E2E_BOOT_ALL_PIDS; do kill -0 "$p" 2> /dev/null && left="$left $p"; done
ok "$([ -z "$left" ] && echo 1 || echo 0)" "... no guest or watchdog left running (${left:-none})"

# 2: hangs on the first attempt only: the retry runs to the end -> its status (0)
e2e_boot --silence $SIL --timeout 60 once "$T/once.con" \
	sh -c 'echo start; [ -e "$1" ] && { echo "DONE"; exit 0; }; : > "$1"; exec sleep 613' sh "$T/once.mark" \
	> "$T/once.out"
rc=$?
sed 's/^/# | /' "$T/once.out"
ok "$([ $rc = 0 ] && [ "$E2E_BOOT_ATTEMPTS" = 2 ] && [ "$E2E_BOOT_VERDICT" = exit ] && grep -q DONE "$T/once.con" &&
	grep -q '^# guest once: no console output .*retrying once' "$T/once.out" && echo 1 || echo 0)" \
	"a guest that hangs once: retried, the retry's status 0 (got $rc, attempts $E2E_BOOT_ATTEMPTS)"

# 3: keeps printing for 1.5 x SIL s, each line well inside the bound: not killed, one attempt
e2e_boot --silence $SIL --timeout 60 alive "$T/alive.con" \
	sh -c "i=0; while [ \$i -lt $((SIL * 5)) ]; do echo line \$i; sleep 0.3; i=\$((i + 1)); done; exit 7" \
	> "$T/alive.out"
rc=$?
sed 's/^/# | /' "$T/alive.out"
ok "$([ $rc = 7 ] && [ "$E2E_BOOT_ATTEMPTS" = 1 ] && [ "$E2E_BOOT_VERDICT" = exit ] &&
	[ "$(grep -c '^line' "$T/alive.con")" = $((SIL * 5)) ] && echo 1 || echo 0)" \
	"a guest that keeps printing past the bound runs to its end: its status 7 (got $rc), one attempt"
ok "$([ "$E2E_BOOT_MAX_SILENCE" -lt $SIL ] && grep -q "^# guest alive: QEMU status 7 after [0-9]* s (attempt 1), longest console silence $E2E_BOOT_MAX_SILENCE s (bound $SIL s)" \
	"$T/alive.out" && echo 1 || echo 0)" "... its longest silence reported ($E2E_BOOT_MAX_SILENCE s)"
ok "$([ ! -e "$T/alive.con.attempt1" ] && echo 1 || echo 0)" "... and no retry console"

# 3b: keeps printing, but the kernel reports an RCU stall: killed at once, retried once
e2e_boot --silence 60 --timeout 60 stall "$T/stall.con" \
	sh -c "echo booting; echo 'rcu: INFO: rcu_preempt detected stalls on CPUs/tasks:'; while :; do echo tick; sleep 0.3; done" \
	> "$T/stall.out"
rc=$?
sed 's/^/# | /' "$T/stall.out"
ok "$([ $rc = 125 ] && [ "$E2E_BOOT_ATTEMPTS" = 2 ] && [ "$E2E_BOOT_VERDICT" = stall ] &&
	grep -q '^# guest stall: the kernel reported a stall (detected stalls on CPU), killed after [0-9]* s; retrying once' "$T/stall.out" &&
	echo 1 || echo 0)" "a guest whose kernel reports an RCU stall: killed and retried although it still prints (got $rc, attempts $E2E_BOOT_ATTEMPTS)"

# 4: still printing at --timeout: killed, 124, not retried
t0=$(date +%s)
e2e_boot --silence $SIL --timeout 4 chatty "$T/chatty.con" \
	sh -c 'while :; do echo tick; sleep 0.2; done' > "$T/chatty.out"
rc=$?
el=$(($(date +%s) - t0))
sed 's/^/# | /' "$T/chatty.out"
ok "$([ $rc = 124 ] && [ "$E2E_BOOT_ATTEMPTS" = 1 ] && [ "$el" -le $((4 + SLACK)) ] &&
	grep -q '^# guest chatty: still writing to the console at the 4 s timeout, killed' "$T/chatty.out" &&
	echo 1 || echo 0)" "a guest still printing at --timeout: killed after $el s, status 124 (got $rc), not retried"

# 5: --during runs in the foreground while the guest runs
during_probe() { kill -0 "$E2E_BOOT_PID" 2>/dev/null && echo "guest running" > "$T/during.out"; }
e2e_boot --silence $SIL --timeout 60 --during during_probe during "$T/during.con" \
	sh -c 'echo hi; sleep 1' > /dev/null
rc=$?
ok "$([ $rc = 0 ] && grep -q 'guest running' "$T/during.out" 2>/dev/null && echo 1 || echo 0)" \
	"--during FUNC runs while the guest runs (status $rc)"

# 6: e2e_boot_stop (the scripts' traps) ends a running guest and its watchdog
stop_now() { e2e_boot_stop; }
t0=$(date +%s)
e2e_boot --silence 60 --timeout 60 --during stop_now stopped "$T/stop.con" sh -c 'echo hi; exec sleep 613' > /dev/null
el=$(($(date +%s) - t0))
ok "$([ "$el" -le 5 ] && [ -z "$E2E_BOOT_PID" ] && [ -z "$E2E_BOOT_WATCH" ] && echo 1 || echo 0)" \
	"e2e_boot_stop ends a running guest and its watchdog ($el s)"

echo "1..$n"
[ "$nfail" = 0 ]
