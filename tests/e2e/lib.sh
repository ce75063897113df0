# SPDX-License-Identifier: BSD-3-Clause
# shellcheck shell=bash disable=SC2034 # E2E_* variables are read by the sourcing scripts
# lib.sh - sourced (bash) by every e2e script that boots a guest (run-e2e.sh,
# run-e2e-type3.sh, cxlmem-lib.sh, hw/run-hw.sh; through cxlmem-lib.sh also
# scripts/bench-guest.sh and scripts/demo.sh): how a TCG guest is run.
#
#   E2E_TCG_ARGS      QEMU's accelerator and CPU arguments for every guest (array):
#                     one vCPU, guest time counted in instructions (below)
#   E2E_KERNEL_ARGS   the kernel command line's start: serial console, reboot on panic,
#                     the kernel's boot messages on the console (the watchdog's progress)
#   e2e_boot [--timeout S] [--silence S] [--during FUNC] NAME CONSOLE QEMU ARG...
#                     runs the guest (stdin /dev/null, stdout+stderr to CONSOLE) under a
#                     console watchdog: a guest that writes no new console byte for
#                     --silence seconds (default $VCXL_E2E_SILENCE, 150), or whose kernel
#                     reports a stall (E2E_STALL_RE: RCU stall, "timer wakeup didn't
#                     happen", soft lockup), is killed and booted again once (the first
#                     attempt's console kept as CONSOLE.attempt1);
#                     --timeout (default $VCXL_E2E_TIMEOUT, 300) bounds each attempt.
#                     FUNC (no arguments) runs in the foreground while the guest runs,
#                     once per attempt. Every kill and retry is a "# guest NAME: ..." TAP
#                     diagnostic line on stdout, and every boot ends with one such line
#                     (status, seconds, longest console silence). Returns QEMU's exit
#                     status, 124 when an attempt ran out of --timeout, 125 when the
#                     retry was silent or stalled too. Sets E2E_BOOT_SECS (the last
#                     attempt's wall seconds), E2E_BOOT_ATTEMPTS, E2E_BOOT_VERDICT
#                     (exit|timeout|silent|stall)
#                     and E2E_BOOT_MAX_SILENCE (s); E2E_BOOT_ALL_PIDS lists every QEMU and
#                     watchdog pid it started (for a script's "nothing left running" check).
#   e2e_boot_stop     kills a running guest and its watchdog (for the scripts' traps)
#
# Why one vCPU and -icount: a TCG guest's clock is the host's clock, so a vCPU thread the
# host does not run for a while (2 cores, meson's parallel tests, other work) sees time
# jump: RCU stalls, "timer wakeup didn't happen", a timer check that panics the boot
# ("timer doesn't work through Interrupt-remapped IO-APIC"). With two vCPUs the kernel
# also finds the TSCs "unsynchronized" and times everything through the HPET's MMIO.
# -icount shift=auto makes guest time follow the instructions the guest ran (its rate
# tuned to stay near real time), so a starved guest runs slower but sees no lost time.
# -icount needs single-threaded TCG, so a second vCPU would only share the same thread.
# README.md ("make test") has the figures.

E2E_LIB_DIR=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
E2E_TCG_ARGS=(-accel tcg -smp 1 -icount shift=auto)
# The silence bound: the longest healthy silence is the firmware + the kernel's XZ
# decompression before its first line, pure guest CPU: 23-30 s with the machine's 2 cores
# shared by other sessions (load 24-27), 89 s with two busy loops in the guest's own session
# on top (README.md); a bound below that kills healthy boots.
E2E_SILENCE_DEFAULT=150
E2E_STALL_RE="detected stalls? on CPU|self-detected stall|timer wakeup didn't happen|BUG: soft lockup"
E2E_KERNEL_ARGS="console=ttyS0 panic=-1"
E2E_BOOT_PID=""
E2E_BOOT_WATCH=""
E2E_BOOT_SECS=0
E2E_BOOT_ATTEMPTS=0
E2E_BOOT_VERDICT=""
E2E_BOOT_MAX_SILENCE=0
E2E_BOOT_ALL_PIDS=""

# e2e_watch QPID CONSOLE SILENCE TIMEOUT STATE: polls CONSOLE's size once a second;
# writes "VERDICT MAX-SILENCE" to STATE (VERDICT: running, silent, stall or timeout) and
# kills QPID (TERM, then KILL after 10 s) on SILENCE seconds without a new byte, on a
# kernel stall report (E2E_STALL_RE) or at TIMEOUT
# e2e_alive PID STARTTIME: PID is still the process that had STARTTIME (field 22 of
# /proc/PID/stat), not a later one the kernel gave the same number once the guest was reaped
e2e_alive() {
	[ "$(e2e_starttime "$1")" = "$2" ]
}
e2e_starttime() {
	local st
	st=$(cat "/proc/$1/stat" 2>/dev/null) || return 1
	st=${st##*) } # past "pid (comm) ": comm may hold spaces
	set -- $st
	echo "${20}"
}

e2e_watch() {
	local qpid=$1 con=$2 silence=$3 tmo=$4 state=$5
	local start now last size prev=-1 quiet max=0 verdict=running i born
	start=$(date +%s)
	last=$start
	born=$(e2e_starttime "$qpid") || return 0
	while e2e_alive "$qpid" "$born"; do
		sleep 1
		now=$(date +%s)
		size=$(stat -c %s "$con" 2>/dev/null || echo 0)
		if [ "$size" != "$prev" ]; then
			last=$now
			prev=$size
			grep -a -q -E "$E2E_STALL_RE" "$con" && verdict=stall
		fi
		quiet=$((now - last))
		[ "$quiet" -gt "$max" ] && max=$quiet
		if [ "$verdict" = stall ]; then
			:
		elif [ "$quiet" -ge "$silence" ]; then
			verdict=silent
		elif [ $((now - start)) -ge "$tmo" ]; then
			verdict=timeout
		fi
		echo "$verdict $max" > "$state"
		[ "$verdict" = running ] && continue
		e2e_alive "$qpid" "$born" && kill -TERM "$qpid" 2>/dev/null
		for i in 1 2 3 4 5 6 7 8 9 10; do
			e2e_alive "$qpid" "$born" || return 0
			sleep 1
		done
		e2e_alive "$qpid" "$born" && kill -KILL "$qpid" 2>/dev/null
		return 0
	done
}

e2e_boot_stop() {
	[ -n "$E2E_BOOT_WATCH" ] && kill "$E2E_BOOT_WATCH" 2>/dev/null && wait "$E2E_BOOT_WATCH" 2>/dev/null
	[ -n "$E2E_BOOT_PID" ] && kill "$E2E_BOOT_PID" 2>/dev/null && wait "$E2E_BOOT_PID" 2>/dev/null
	E2E_BOOT_WATCH=""
	E2E_BOOT_PID=""
}

# e2e_boot_once NAME CONSOLE SILENCE TIMEOUT DURING CMD...: one attempt; sets
# E2E_BOOT_VERDICT, E2E_BOOT_MAX_SILENCE, E2E_BOOT_SECS; returns CMD's status
e2e_boot_once() {
	local name=$1 con=$2 silence=$3 tmo=$4 during=$5 state rc t0 v qpid wpid
	shift 5
	state=$(mktemp)
	echo "running 0" > "$state"
	t0=$(date +%s)
	: > "$con" # there before FUNC looks for it
	"$@" < /dev/null > "$con" 2>&1 &
	qpid=$!
	E2E_BOOT_PID=$qpid
	e2e_watch "$qpid" "$con" "$silence" "$tmo" "$state" &
	wpid=$!
	E2E_BOOT_WATCH=$wpid
	E2E_BOOT_ALL_PIDS="$E2E_BOOT_ALL_PIDS $qpid $wpid"
	[ -n "$during" ] && "$during"
	wait "$qpid"
	rc=$?
	E2E_BOOT_PID=""
	kill "$wpid" 2>/dev/null
	wait "$wpid" 2>/dev/null
	E2E_BOOT_WATCH=""
	E2E_BOOT_SECS=$(($(date +%s) - t0))
	read -r v E2E_BOOT_MAX_SILENCE < "$state"
	rm -f "$state"
	case "$v" in
	silent | stall) E2E_BOOT_VERDICT=$v ;;
	timeout) E2E_BOOT_VERDICT=timeout rc=124 ;;
	*) E2E_BOOT_VERDICT="exit" ;;
	esac
	return "$rc"
}

e2e_boot() {
	local tmo=${VCXL_E2E_TIMEOUT:-300} silence=${VCXL_E2E_SILENCE:-$E2E_SILENCE_DEFAULT}
	local during="" name con rc why
	while [ $# -gt 0 ]; do
		case "$1" in
		--timeout) tmo=$2 && shift 2 ;;
		--silence) silence=$2 && shift 2 ;;
		--during) during=$2 && shift 2 ;;
		*) break ;;
		esac
	done
	name=$1 con=$2
	shift 2
	rm -f "$con.attempt1"
	for E2E_BOOT_ATTEMPTS in 1 2; do
		e2e_boot_once "$name" "$con" "$silence" "$tmo" "$during" "$@"
		rc=$?
		case "$E2E_BOOT_VERDICT" in
		silent) why="no console output for $silence s" ;;
		stall) why="the kernel reported a stall ($(grep -a -m1 -o -E "$E2E_STALL_RE" "$con"))" ;;
		*) break ;;
		esac
		if [ "$E2E_BOOT_ATTEMPTS" = 1 ]; then
			echo "# guest $name: $why, killed after $E2E_BOOT_SECS s; retrying once (first console: $con.attempt1)"
			mv "$con" "$con.attempt1"
		else
			echo "# guest $name: $why again, killed after $E2E_BOOT_SECS s; not retried"
			rc=125
		fi
	done
	if [ "$E2E_BOOT_VERDICT" = timeout ]; then
		echo "# guest $name: still writing to the console at the $tmo s timeout, killed"
	fi
	echo "# guest $name: QEMU status $rc after $E2E_BOOT_SECS s (attempt $E2E_BOOT_ATTEMPTS), longest console silence $E2E_BOOT_MAX_SILENCE s (bound $silence s)"
	return "$rc"
}

# ---- TAP output, shared by every e2e script ----
#   tap OK|FAIL|SKIP DESCRIPTION [REASON]  one TAP point (counted in E2E_N, E2E_NFAIL;
#                                   1 and 0 are OK and FAIL too)
#   diag                            stdin as TAP diagnostics ("# ...")
#   skip_all REASON                 the whole test skipped, visibly (stderr and TAP:
#                                   "SKIP $E2E_NAME: REASON"); exits 0
#   e2e_steps_tap CONSOLE [PREFIX [MARK]]  one point per guest "STEP name: ok|FAIL|skip
#                                   detail" line (MARK instead of STEP), named "PREFIXguest
#                                   name: detail"; E2E_NSTEPS counts them, E2E_STEPS_SEEN
#                                   lists their names
#   e2e_done                        the plan ("1..N"); status 1 after a failure
E2E_NCHECKS=0
E2E_NAME=${E2E_NAME:-e2e}
E2E_N=0
E2E_NFAIL=0
E2E_NSTEPS=0
E2E_STEPS_SEEN=""
tap() {
	E2E_N=$((E2E_N + 1))
	case "$1" in
	OK | 1) echo "ok $E2E_N - $2" ;;
	SKIP) echo "ok $E2E_N - $2 # SKIP ${3:-}" ;;
	*) echo "not ok $E2E_N - $2" && E2E_NFAIL=$((E2E_NFAIL + 1)) ;;
	esac
}
diag() { sed 's/^/# /'; }
skip_all() {
	echo "SKIP $E2E_NAME: $1" >&2
	echo "# SKIP $E2E_NAME: $1"
	echo "1..0 # SKIP $1"
	exit 0
}
e2e_steps_tap() {
	local line sname sres sdetail pre=${2:-} mark=${3:-STEP}
	E2E_NSTEPS=0
	E2E_STEPS_SEEN=""
	while IFS= read -r line; do
		line=${line%$'\r'}
		sname=${line#"$mark" }
		sname=${sname%%:*}
		E2E_STEPS_SEEN="$E2E_STEPS_SEEN $sname"
		sres=${line#*: }
		sdetail=${sres#* }
		sres=${sres%% *}
		E2E_NSTEPS=$((E2E_NSTEPS + 1))
		case "$sres" in
		ok) tap OK "${pre}guest $sname: $sdetail" ;;
		skip) tap SKIP "${pre}guest $sname" "$sdetail" ;;
		*) tap FAIL "${pre}guest $sname: $sdetail" ;;
		esac
	done < <(grep -a "^$mark " "$1")
}
e2e_done() {
	echo "1..$E2E_N"
	[ "$E2E_NFAIL" -eq 0 ]
}

# The checks scripts repeat after a guest ran:
#   e2e_checks_tap PREFIX     one point per stdin line "ok DETAIL" / "FAIL DETAIL" (a host-side
#                             checker's output), named "PREFIX: DETAIL"; E2E_NCHECKS counts them
#   e2e_no_protocol_error LOG [WHAT]   the server's log has no "protocol error" line
#   e2e_server_alive PID LOG WHAT      the server is still running after WHAT
e2e_checks_tap() {
	local line
	E2E_NCHECKS=0
	while IFS= read -r line; do
		E2E_NCHECKS=$((E2E_NCHECKS + 1))
		case "$line" in
		ok*) tap OK "$1: ${line#ok }" ;;
		*) tap FAIL "$1: ${line#FAIL }" ;;
		esac
	done
}
# e2e_no_protocol_error LOG [NAME [ALLOWED]]: ALLOWED, an extended regex, matches the
# protocol errors a test provoked on purpose (each reported, none other allowed)
e2e_no_protocol_error() {
	local errs
	errs=$(grep -a -i 'protocol error' "$1")
	if [ -n "${3:-}" ] && [ -n "$errs" ]; then
		printf '%s\n' "$errs" | grep -a -E -- "$3" | sed 's/^/provoked on purpose: /' | diag
		errs=$(printf '%s\n' "$errs" | grep -a -v -E -- "$3")
	fi
	if [ -n "$errs" ]; then
		tap FAIL "server logged no protocol error${2:+ ($2)}"
		printf '%s\n' "$errs" | head -10 | diag
	else
		tap OK "server logged no protocol error${2:+ ($2)}${3:+, but the ones provoked}"
	fi
}
e2e_server_alive() {
	if [ -n "$1" ] && kill -0 "$1" 2>/dev/null; then
		tap OK "vcxl-server still running after $3"
	else
		tap FAIL "vcxl-server still running after $3"
		tail -20 "$2" | diag
	fi
}

# ---- vcxl-server, started the way a service manager starts it ----
#   e2e_server_start [--timeout S] LOG SERVER ARG...
#                     runs SERVER ARG... in the background (stdout+stderr to LOG) with
#                     $NOTIFY_SOCKET set and returns once it sent READY=1 (sd_notify, what
#                     its systemd unit waits for: every socket listens), never by polling
#                     for a socket file. Sets E2E_SERVER_PID; returns 1 (E2E_SERVER_WHY:
#                     exited first / no READY=1 in S seconds, default 60) otherwise.
#   e2e_server_stop [PID]   SIGTERM, then its exit status (E2E_SERVER_RC; 124: killed
#                     after 10 s); default: E2E_SERVER_PID
E2E_SERVER_PID=""
E2E_SERVER_WHY=""
E2E_SERVER_RC=0
E2E_SERVER_PIDS=""
e2e_server_start() {
	local tmo=60 log ns line
	[ "$1" = --timeout ] && tmo=$2 && shift 2
	log=$1
	shift
	ns=$(mktemp -u "${TMPDIR:-/tmp}/vcxl-notify.XXXXXX")
	E2E_SERVER_PID=""
	E2E_SERVER_WHY=""
	coproc E2E_NW { exec python3 "$E2E_LIB_DIR/notify-wait.py" "$ns" "$tmo"; }
	if ! read -r -t 10 line <&"${E2E_NW[0]}" || [ "$line" != bound ]; then
		E2E_SERVER_WHY="the readiness socket could not be bound"
		return 1
	fi
	NOTIFY_SOCKET=$ns "$@" > "$log" 2>&1 &
	E2E_SERVER_PID=$!
	E2E_SERVER_PIDS="$E2E_SERVER_PIDS $E2E_SERVER_PID"
	echo "$E2E_SERVER_PID" >&"${E2E_NW[1]}"
	line=""
	while read -r line <&"${E2E_NW[0]}"; do
		case "$line" in
		STATUS*) continue ;;
		*) break ;;
		esac
	done
	wait "$E2E_NW_PID" 2>/dev/null
	rm -f "$ns"
	case "$line" in
	READY) return 0 ;;
	EXITED) E2E_SERVER_WHY="it exited before READY=1: $(tail -1 "$log")" ;;
	*) E2E_SERVER_WHY="no READY=1 within $tmo s" ;;
	esac
	return 1
}
e2e_server_stop() {
	local pid=${1:-$E2E_SERVER_PID} i
	E2E_SERVER_RC=0
	[ -n "$pid" ] || return 0
	kill -TERM "$pid" 2>/dev/null
	for i in $(seq 100); do
		kill -0 "$pid" 2>/dev/null || break
		[ "$(awk '{print $3}' "/proc/$pid/stat" 2>/dev/null)" = Z ] && break
		sleep 0.1
	done
	if kill -0 "$pid" 2>/dev/null && [ "$(awk '{print $3}' "/proc/$pid/stat" 2>/dev/null)" != Z ]; then
		kill -KILL "$pid" 2>/dev/null
		wait "$pid" 2>/dev/null
		E2E_SERVER_RC=124
	else
		wait "$pid" 2>/dev/null
		E2E_SERVER_RC=$?
	fi
	[ "$pid" = "$E2E_SERVER_PID" ] && E2E_SERVER_PID=""
	return 0
}
