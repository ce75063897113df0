#!/bin/sh
# SPDX-License-Identifier: BSD-3-Clause
# make qemu-check: vmm/qemu's series checked the way QEMU's maintainers check a series
# (docs/devel/submitting-a-patch.rst): every patch passes QEMU's scripts/checkpatch.pl,
# the tree builds after each patch in turn, and QEMU's `make check-unit` passes at the end.
#
# One source tree, $CACHE/src (default ~/.cache/vcxl-qemu-check), the pristine source
# (scripts/qemu-config.sh: the same source and configure line as make qemu) committed as
# `base` in a git directory kept beside it ($CACHE/git, so QEMU's build sees no .git),
# and one build directory, $CACHE/build. The tree is reset to `base` and built (ninja,
# every default target, the unit tests and qtests included), then for each patch:
# checkpatch, `git am`, ninja. Only what a step changed is rebuilt: the first run builds
# QEMU once (configure and a full build). A later run starts after the longest prefix of
# the series that is unchanged and built then (those lines say so; checkpatch always
# runs); VCXL_QEMU_CHECK_FULL=1 starts from `base`.
# The patches are copied at the start, so the series may be re-exported meanwhile.
#
# Prints one line per patch (checkpatch errors/warnings, build ok/FAIL, seconds), the
# unit tests' result, which tests/unit tests skip or are not built in this configuration
# and why, and a summary line. Exits 1 if a patch has a checkpatch error, does not
# apply, does not build or adds a compiler warning, or a unit test fails.
# Logs: $CACHE/logs/ (checkpatch output, each step's git am and ninja output, check-unit);
# $CACHE/configure.log.
set -eu

NICE="${VCXL_QEMU_NICE:-10}"
REPO=$(cd "$(dirname "$0")/.." && pwd)
# shellcheck source=scripts/qemu-config.sh
. "$REPO/scripts/qemu-config.sh"
CACHE="${VCXL_QEMU_CHECK_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/vcxl-qemu-check}"

say() { echo "qemu-check: $*" >&2; }
die() {
	echo "qemu-check: error: $*" >&2
	exit 2
}
need() {
	for t in "$@"; do
		command -v "$t" >/dev/null 2>&1 || die "'$t' not found; run 'make deps' (scripts/deps.sh) first"
	done
}
qemu_need_build_deps
need git perl make

mkdir -p "$CACHE"
exec 9>"$CACHE/.lock"
flock -n 9 || {
	say "another qemu-check holds $CACHE/.lock; waiting"
	flock 9
}

qemu_find_source "$REPO" "$CACHE"
qemu_meson "$REPO" "$CACHE"

SRC="$CACHE/src"
BUILD="$CACHE/build"
LOGS="$CACHE/logs"
G() { git -C "$SRC" --git-dir="$CACHE/git" --work-tree="$SRC" -c user.name=qemu-check -c user.email=qemu-check@localhost "$@"; }

T0=$(date +%s)
rm -rf "$CACHE/patches"
mkdir -p "$LOGS" "$CACHE/patches"
set -- "$REPO"/vmm/qemu/*.patch
[ -e "$1" ] || die "no patches in $REPO/vmm/qemu"
cp "$@" "$CACHE/patches/"
set -- "$CACHE"/patches/*.patch

# --- the pristine tree, committed as base ----------------------------------------
if [ "$(cat "$CACHE/source-id" 2>/dev/null)" != "$SRC_ID" ] || [ ! -d "$CACHE/git" ]; then
	say "unpacking $SRC_DIR into $SRC"
	rm -rf "$SRC" "$CACHE/git" "$BUILD" "$CACHE/source-id" "$CACHE/configured"
	qemu_unpack_source "$SRC" "$CACHE/unpack.log" || die "cannot unpack the source (log: $CACHE/unpack.log)"
	git init -q --bare "$CACHE/git"
	G config core.bare false
	G add -A -f .
	G commit -q -m pristine
	G tag base
	echo "$SRC_ID" >"$CACHE/source-id"
fi
# --- where to start: after the longest prefix of the series built ok before ------------
# $CACHE/record has a line per patch that built ok without warnings, in order:
# "N KEY COMMIT SECONDS DATE", KEY hashing the source, the configure line, these scripts
# and patches 1..N. Patches whose KEY is unchanged are not built again: the tree is reset
# to the commit after the last of them (only the files the later patches changed are
# touched), and their lines say when they were built. VCXL_QEMU_CHECK_FULL=1 starts from
# the pristine tree.
RECORD="$CACHE/record"
key=$({
	echo "$SRC_ID"
	echo "$CONFIGURE_ARGS"
	cat "$REPO/scripts/qemu-check.sh" "$REPO/scripts/qemu-config.sh"
} | sha256sum | cut -d' ' -f1)
keys=""
for p in "$@"; do
	# the patch as git am sees it: a "[PATCH 02/15]" counter that changes with the length
	# of the series is not part of it
	key=$({
		echo "$key"
		sed 's/^Subject: \[PATCH[^]]*\] /Subject: /' "$p" | sha256sum
	} | sha256sum | cut -d' ' -f1)
	keys="$keys $key"
done
G am --abort >/dev/null 2>&1 || true
if [ ! -f "$BUILD/build.ninja" ] || [ "$(cat "$CACHE/configured" 2>/dev/null)" != "$SRC_ID $CONFIGURE_ARGS" ] ||
	[ "${VCXL_QEMU_CHECK_FULL:-0}" = 1 ]; then
	rm -f "$RECORD"
fi
j=0 target=base
[ -f "$RECORD" ] || : >"$RECORD"
for k in $keys; do
	line=$(sed -n "$((j + 1))p" "$RECORD")
	[ -n "$line" ] || break
	# shellcheck disable=SC2086
	set -- $line
	if [ "$2" != "$k" ] || ! G cat-file -e "$3^{commit}" 2>/dev/null; then break; fi
	j=$((j + 1)) target=$3
done
set -- "$CACHE"/patches/*.patch
head -n "$j" "$RECORD" >"$RECORD.tmp" && mv "$RECORD.tmp" "$RECORD"
# logs: the build logs of the patches not built again are kept, the rest go
for f in "$LOGS"/*; do
	[ -e "$f" ] || continue
	b=${f##*/}
	case $b in
	[0-9][0-9][0-9][0-9].am.log | [0-9][0-9][0-9][0-9].build.log)
		[ $((1${b%%.*} - 10000)) -le "$j" ] && continue
		;;
	esac
	rm -f "$f"
done
G reset -q --hard "$target"
G clean -q -f -d -x

if [ ! -f "$BUILD/build.ninja" ] || [ "$(cat "$CACHE/configured" 2>/dev/null)" != "$SRC_ID $CONFIGURE_ARGS" ]; then
	rm -rf "$BUILD" "$CACHE/configured" && mkdir -p "$BUILD"
	say "configure: $CONFIGURE_ARGS"
	# shellcheck disable=SC2086
	(cd "$BUILD" && nice -n "$NICE" "$SRC/configure" $CONFIGURE_ARGS) >"$CACHE/configure.log" 2>&1 ||
		die "configure failed (log: $CACHE/configure.log)"
	echo "$SRC_ID $CONFIGURE_ARGS" >"$CACHE/configured"
	say "first run: a full build of the pristine tree (about 6 minutes on 2 idle cores)"
fi

# build LOG: ninja (all default targets), nice'd; its output to LOG
build() {
	nice -n "$NICE" ninja -C "$BUILD" >"$1" 2>&1
}
# compiler warnings in a ninja log
cwarnings() {
	grep -c -E '^[^ ]+:[0-9]+:[0-9]+: warning:' "$1" || true
}

fails=0 cp_errors=0 cp_warnings=0 built=0 cwarn_total=0
warned_patches=""
t=$(date +%s)
if build "$LOGS/00-base.build.log"; then
	bstat=ok
else
	bstat=FAIL
	fails=$((fails + 1))
fi
if [ "$j" = 0 ]; then
	what="pristine $QEMU_VERSION"
else
	what="the tree after patch $(printf '%04d' "$j") (patches up to it unchanged, built before)"
fi
printf '%-4s %-72s %s\n' base "$what" "build $bstat, $(($(date +%s) - t)) s"
[ "$bstat" = ok ] || {
	tail -n 30 "$LOGS/00-base.build.log" >&2
	echo "qemu-check: FAILED: $what does not build (log: $LOGS/00-base.build.log)"
	rm -f "$RECORD"
	exit 1
}

n=0 applied=1 chain=1
for p in "$@"; do
	n=$((n + 1))
	num=$(printf '%04d' "$n")
	# shellcheck disable=SC2086
	key=$(set -- $keys && shift $((n - 1)) && echo "$1")
	t=$(date +%s)
	# checkpatch.pl of the tree as it is before the patch (no patch of the series changes it)
	(cd "$SRC" && perl scripts/checkpatch.pl --no-color "$p") >"$LOGS/$num.checkpatch.log" 2>&1 || true
	tot=$(sed -n 's/^total: \([0-9]*\) errors, \([0-9]*\) warnings.*/\1 \2/p' "$LOGS/$num.checkpatch.log" | tail -n 1)
	if [ -z "$tot" ]; then
		ce=1 cw=0 cpres="checkpatch did not finish"
	else
		ce=${tot% *} cw=${tot#* }
		cpres="checkpatch $ce errors, $cw warnings"
	fi
	cp_errors=$((cp_errors + ce))
	cp_warnings=$((cp_warnings + cw))
	[ "$cw" = 0 ] || warned_patches="$warned_patches $num"
	[ "$ce" = 0 ] || fails=$((fails + 1))
	if [ "$n" -le "$j" ]; then
		# shellcheck disable=SC2046
		set -- $(sed -n "${n}p" "$RECORD")
		subj=$(G log -1 --format=%s "$3")
		bres="build ok"
		built=$((built + 1))
		printf '%-4s %-72.72s %s, %s, %s s on %s (unchanged)\n' "$num" "$subj" "$cpres" "$bres" "$4" "$5"
		[ "$ce" = 0 ] || grep -E -A4 '^ERROR' "$LOGS/$num.checkpatch.log" >&2 || true
		continue
	fi
	if [ "$applied" = 1 ] && G am -q "$p" >"$LOGS/$num.am.log" 2>&1; then
		subj=$(G log -1 --format=%s)
		if build "$LOGS/$num.build.log"; then
			w=$(cwarnings "$LOGS/$num.build.log")
			cwarn_total=$((cwarn_total + w))
			if [ "$w" = 0 ]; then
				bres="build ok"
				built=$((built + 1))
			else
				bres="build ok but $w compiler warnings"
				fails=$((fails + 1))
			fi
		else
			bres="build FAIL"
			fails=$((fails + 1))
		fi
	else
		subj=$(sed -n 's/^Subject: \(\[PATCH[^]]*\] \)\{0,1\}//p' "$p" | head -n 1)
		if [ "$applied" = 1 ]; then
			bres="does NOT apply (git am)"
			G am --abort >/dev/null 2>&1 || true
			applied=0
		else
			bres="not applied (an earlier patch failed to)"
		fi
		fails=$((fails + 1))
	fi
	secs=$(($(date +%s) - t))
	if [ "$bres" = "build ok" ] && [ "$chain" = 1 ]; then
		echo "$n $key $(G rev-parse HEAD) $secs $(date +%F)" >>"$RECORD"
	else
		chain=0
	fi
	printf '%-4s %-72.72s %s, %s, %s s\n' "$num" "$subj" "$cpres" "$bres" "$secs"
	case $bres in
	"build ok") ;;
	"build FAIL") grep -E 'error|FAILED' "$LOGS/$num.build.log" | head -n 20 >&2 ;;
	"build ok but"*) grep -E -A3 ': warning:' "$LOGS/$num.build.log" | head -n 20 >&2 ;;
	*) head -n 20 "$LOGS/$num.am.log" >&2 ;;
	esac
	[ "$ce" = 0 ] || grep -E -A4 '^ERROR' "$LOGS/$num.checkpatch.log" >&2 || true
done
npatches=$n

# --- the unit tests (QEMU's make check-unit, in the build directory) ----------------
t=$(date +%s)
unit_ok=0
rm -f "$BUILD/meson-logs/testlog.json"
if nice -n "$NICE" make -C "$BUILD" check-unit >"$LOGS/check-unit.log" 2>&1; then unit_ok=1; fi
unit_time=$(($(date +%s) - t))
# counts from meson's test log; every tests/unit test named in its meson.build that this
# configuration does not define, with the reason (the condition that guards it there)
unit=$(python3 - "$BUILD/meson-logs/testlog.json" "$SRC/tests/unit/meson.build" <<'PY'
import json, re, sys
res, skipwhy = {}, {}
try:
    for line in open(sys.argv[1]):
        t = json.loads(line)
        suite, _, name = t["name"].rpartition(" / ")  # "qemu:unit / check-qdict"
        if not suite.endswith(":unit"):
            continue
        res[name] = t["result"]
        if t["result"] == "SKIP":
            out = (t.get("stdout") or "") + (t.get("stderr") or "")
            m = re.search(r"#\s*(?:SKIP|skip)\s+(.*)", out)
            why = m.group(1).strip() if m else "no test case ran (plan 1..0)"
            if name.startswith("test-crypto-"):
                why += " (no crypto library: gnutls, nettle and gcrypt are default features, off)"
            skipwhy[name] = why
except FileNotFoundError:
    pass
ok = sum(1 for r in res.values() if r in ("OK", "EXPECTEDFAIL"))
skip = sum(1 for r in res.values() if r == "SKIP")
bad = sorted(n for n, r in res.items() if r not in ("OK", "EXPECTEDFAIL", "SKIP"))
print("RESULT %d %d %d %d %s" % (len(res), ok, skip, len(bad), " ".join(bad)))
for name, why in sorted(skipwhy.items()):
    print("SKIPPED %s %s" % (name, why))
# tests the meson.build names, with the condition that guards each
why = {
    "seccomp.found()": "libseccomp (seccomp) is a default feature, off",
    "gnutls.found()": "GnuTLS and libtasn1 (gnutls, libtasn1) are default features, off",
    "pam.found()": "PAM (auth-pam) is a default feature, off",
    "CONFIG_REPLICATION": "replication is a default feature, off",
    "have_ga": "the guest agent (guest-agent) is not built: a default feature, off",
    "tsan": "not built under TSan",
}
cond, names = [], {}
for line in open(sys.argv[2]):
    s = line.strip()
    m = re.match(r"^(if|elif)\b(.*)", s)
    if m:
        if m.group(1) == "elif":
            cond.pop()
        cond.append(m.group(2).strip())
        continue
    if s == "endif":
        cond.pop()
        continue
    if s.startswith("foreach"):
        break
    for name in re.findall(r"'([A-Za-z0-9_-]+)'\s*:", s):
        names.setdefault(name, list(cond))
for name, c in names.items():
    if name in res:
        continue
    reason = next((v for k, v in why.items() for x in c if k in x), None)
    print("NOTBUILT %s %s" % (name, reason or "guarded by: " + " and ".join(c)))
PY
) || unit="RESULT 0 0 0 0"
# shellcheck disable=SC2046
set -- $(echo "$unit" | sed -n 's/^RESULT //p')
u_total=$1 u_ok=$2 u_skip=$3 u_bad=$4
shift 4
u_badnames="$*"
if [ "$unit_ok" = 1 ] && [ "$u_bad" = 0 ] && [ "$u_total" -gt 0 ]; then
	ures="$u_ok passed, $u_skip skipped, 0 failed"
else
	ures="FAILED: $u_ok passed, $u_skip skipped, $u_bad failed${u_badnames:+ ($u_badnames)} (log: $LOGS/check-unit.log)"
	fails=$((fails + 1))
	tail -n 30 "$LOGS/check-unit.log" >&2
fi
echo "unit tests (make check-unit: meson test --suite unit, $u_total tests): $ures, $unit_time s"
if [ "$u_skip" -gt 0 ]; then
	echo "skipped by the tests themselves ($u_skip):"
	echo "$unit" | sed -n 's/^SKIPPED \([^ ]*\) \(.*\)/  \1: \2/p'
fi
nb=$(echo "$unit" | grep -c '^NOTBUILT' || true)
if [ "$nb" -gt 0 ]; then
	echo "not built with --without-default-features ($nb):"
	echo "$unit" | sed -n 's/^NOTBUILT \([^ ]*\) \(.*\)/  \1: \2/p'
fi

total=$(($(date +%s) - T0))
sum="$npatches patches: checkpatch $cp_errors errors, $cp_warnings warnings${warned_patches:+ (in$warned_patches)}; built $built/$npatches; compiler warnings $cwarn_total; unit tests $u_ok/$u_total passed; $total s"
if [ "$fails" = 0 ]; then
	echo "qemu-check: OK: $sum"
else
	echo "qemu-check: FAILED ($fails): $sum (logs: $LOGS)"
	exit 1
fi
