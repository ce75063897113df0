# SPDX-License-Identifier: BSD-3-Clause
# shellcheck shell=bash disable=SC2034 # CXLMEM_* variables are read by the sourcing scripts
# cxlmem-lib.sh - sourced (bash) by tests/e2e/run-e2e-cxlmem.sh, scripts/bench-guest.sh,
# scripts/bench-migrate.sh and scripts/demo.sh: the CXL.mem guest with the CXL-aware QEMU.
#
#   cxlmem_qemu                 sets CXLMEM_QEMU to the CXL-aware QEMU (and CXLMEM_FW to the
#                               -L options it needs: none with a firmware path), or returns 1 with the
#                               reason in CXLMEM_WHY: $VCXL_QEMU_CXL, else the last line of
#                               scripts/qemu-build.sh (builds once, cached under ~/.cache)
#   cxlmem_cached_qemu          prints the CXL-aware QEMU that scripts/qemu-build.sh cached for
#                               the current vmm/qemu patches (it copies them next to it), or
#                               returns 1: a benchmark's --if-available never builds one
#   cxlmem_noguest_prep PYWHY [noserver]
#                               the start of a suite whose Python script drives the CXL-aware
#                               QEMU with no guest (run-e2e-migrate-block.sh,
#                               run-e2e-migrate-switch.sh, run-e2e-switch.sh): "Bail out!"
#                               without $CXLMEM_BUILD's vcxl-server (unless noserver), skip_all
#                               (E2E_NAME) without python3 ("python3 not found (PYWHY)") or
#                               without the CXL-aware QEMU; else CXLMEM_QEMU set and how long
#                               finding it took said
#   cxlmem_guest OUT            kernel + initramfs with /bin/cxlmem-guest and init-cxlmem.sh
#                               (the Debian 6.1 kernel and base initramfs of build-guest.sh)
#   cxlmem_seed FILE            device memory seeded as cxlmem-guest.c expects (SEED ^ dpa)
#   cxlmem_start_server NAME    vcxl-server on the built-in model, 1 GiB, 2 decoders,
#                               --backing $CXLMEM_TMP/devmem.img (seeded) --trust-client
#                               --on-disconnect keep
#   cxlmem_boot NAME ARGS [t3]  the guest, cxlmem-guest ARGS; t3: also a QEMU cxl-type3 behind
#                               its own host bridge and window; returns QEMU's exit status
#   cxlmem_hostcheck CONSOLE FILE  every HOSTCHECK line of the guest checked in FILE:
#                               one "ok|FAIL <detail>" line each
#   cxlmem_start_server_fw NAME vcxl-server --devices 2 --firmware-committed, 512 MiB each,
#                               the default isolation (sealed memfd regions, no --backing,
#                               no --trust-client), control socket $CXLMEM_TMP/fw.sock.ctl
#   cxlmem_boot_fw NAME         the guest (cxlmem-guest --fw) with both devices under one host
#                               bridge and window, a QMP socket; at the guest's
#                               "UNPLUG-READY" line QMP device_del of vcxl1 (log: NAME.qmp.log,
#                               "RESULT" lines: its mappings before/after, DEVICE_DELETED);
#                               returns QEMU's exit status
#   cxlmem_hostcheck_ctl CONSOLE CTL  every HOSTCHECK line checked through the server's control
#                               socket (read-memory): one "ok|FAIL <detail>" line each
#                               (qword i at dpa= is pattern= + step= * i; step defaults to 1)
#   cxlmem_stop                 QEMU and the server stopped (by pid), temp dir removed
#
# Inputs: CXLMEM_BUILD (meson build dir), CXLMEM_LOGDIR, CXLMEM_QEMU (from cxlmem_qemu).
# Environment: VCXL_QEMU_CXL (a CXL-aware QEMU binary), VCXL_QEMU_BUILD (the build script,
# default <repo>/scripts/qemu-build.sh), VCXL_E2E_BUILD_QEMU=0 (never build QEMU),
# VCXL_E2E_TIMEOUT (seconds per boot, default 300), VCXL_E2E_SILENCE (seconds without console
# output before a boot is killed and retried once, default 150: lib.sh, whose e2e_boot runs
# every boot here), VCXL_E2E_CACHE (guest cache),
# VCXL_CXL_RAM_DEVICE=1 (QEMU maps the region as a RAM device region: x-cxl-ram-device).

CXLMEM_HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
CXLMEM_ROOT=$(cd "$CXLMEM_HERE/../.." && pwd)
# shellcheck source=tests/e2e/lib.sh
. "$CXLMEM_HERE/lib.sh"
CXLMEM_MEM_SIZE=$((1 << 30))
CXLMEM_GUEST_RAM=1G
CXLMEM_WHY=""
CXLMEM_QEMU=""
CXLMEM_TMP=""
CXLMEM_SPID=""
# Seeds: 64 KiB, 4 MiB into each of the first three 256 MiB of DPA (cxlmem-guest.c SEED_*)
CXLMEM_SEED=0x5345454443584c31
CXLMEM_SEED_DPAS="0x400000 0x10400000 0x20400000"
CXLMEM_SEED_LEN=0x10000

cxlmem_has_cxl() { # cxlmem_has_cxl QEMU: vfio-user-pci has the x-cxl property
	"$1" -nodefaults -machine none -device vfio-user-pci,help 2>/dev/null | grep -q 'x-cxl'
}

cxlmem_cached_qemu() {
	local d
	for d in "${VCXL_QEMU_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/vcxl-qemu-build}"/*/; do
		[ -x "$d/qemu-system-x86_64" ] || continue
		if [ "$(cat "$d"/*.patch 2>/dev/null | sha256sum)" = \
			"$(cat "$CXLMEM_ROOT"/vmm/qemu/*.patch 2>/dev/null | sha256sum)" ] &&
			cxlmem_has_cxl "$d/qemu-system-x86_64"; then
			echo "$d/qemu-system-x86_64"
			return 0
		fi
	done
	return 1
}

# CXLMEM_FW: the -L options a QEMU needs to find SeaBIOS: none when its own firmware path
# has it (scripts/qemu-build.sh configures /usr/share/qemu:/usr/share/seabios:/usr/lib/ipxe/qemu,
# as the vcxl-qemu package installs it), else Debian's directories as before.
CXLMEM_FW=(-L /usr/share/seabios -L /usr/share/qemu)
cxlmem_fw_args() { # cxlmem_fw_args QEMU: sets CXLMEM_FW
	local d
	CXLMEM_FW=(-L /usr/share/seabios -L /usr/share/qemu)
	while IFS= read -r d; do
		if [ -r "$d/bios-256k.bin" ]; then
			CXLMEM_FW=()
			return 0
		fi
	done < <("$1" -L help 2>/dev/null)
}

cxlmem_qemu() {
	local script out q log
	if [ -n "${VCXL_QEMU_CXL:-}" ]; then
		if [ -x "$VCXL_QEMU_CXL" ] && cxlmem_has_cxl "$VCXL_QEMU_CXL"; then
			CXLMEM_QEMU=$VCXL_QEMU_CXL
			cxlmem_fw_args "$CXLMEM_QEMU"
			return 0
		fi
		CXLMEM_WHY="VCXL_QEMU_CXL=$VCXL_QEMU_CXL is not a CXL-aware QEMU (no vfio-user-pci x-cxl)"
		return 1
	fi
	script=${VCXL_QEMU_BUILD:-$CXLMEM_ROOT/scripts/qemu-build.sh}
	if [ ! -x "$script" ]; then
		CXLMEM_WHY="no $script (the QEMU patch series, vmm/qemu/, is not in this tree)"
		return 1
	fi
	if [ "${VCXL_E2E_BUILD_QEMU:-1}" = 0 ]; then
		CXLMEM_WHY="VCXL_E2E_BUILD_QEMU=0: not building the CXL-aware QEMU (set VCXL_QEMU_CXL)"
		return 1
	fi
	log=$(mktemp /tmp/vcxl-qemu-build.XXXXXX)
	if ! out=$("$script" 2> "$log"); then
		CXLMEM_WHY="$script failed: $(grep -a 'error' "$log" | tail -1)"
		sed 's/^/# qemu-build: /' "$log" | tail -15 >&2
		rm -f "$log"
		return 1
	fi
	grep -a -E 'cached build|built in' "$log" | sed 's/^/# /' >&2
	rm -f "$log"
	q=$(echo "$out" | tail -n 1)
	if [ ! -x "$q" ] || ! cxlmem_has_cxl "$q"; then
		CXLMEM_WHY="$script gave '$q', which is not a CXL-aware QEMU (no vfio-user-pci x-cxl)"
		return 1
	fi
	CXLMEM_QEMU=$q
	cxlmem_fw_args "$CXLMEM_QEMU"
}

cxlmem_noguest_prep() { # cxlmem_noguest_prep PYWHY [noserver]
	local t0
	[ "${2:-}" = noserver ] || [ -x "$CXLMEM_BUILD/src/tools/vcxl-server" ] ||
		{ echo "Bail out! vcxl-server is not built"; exit 1; }
	command -v python3 > /dev/null || skip_all "python3 not found ($1)"
	t0=$(date +%s)
	cxlmem_qemu || skip_all "no CXL-aware QEMU: $CXLMEM_WHY"
	echo "# CXL-aware QEMU: $CXLMEM_QEMU ($(($(date +%s) - t0)) s to find or build)"
}

cxlmem_guest() { # cxlmem_guest OUT
	local out=$1 cache kver base O
	# shellcheck source=tests/e2e/initramfs.sh
	. "$CXLMEM_HERE/initramfs.sh"
	mkdir -p "$out"
	"$CXLMEM_HERE/build-guest.sh" "$out" > "$out/build-guest.log" 2>&1 || {
		cat "$out/build-guest.log" >&2
		return 1
	}
	cache=${VCXL_E2E_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/vcxl-e2e}
	kver=$(cat "$cache/kver")
	base="$cache/base-$kver.cpio.gz"
	[ -s "$base" ] || { echo "cxlmem_guest: no $base" >&2; return 1; }
	${GUEST_CC:-gcc} -static -O2 -std=gnu11 -Wall -Wextra -Werror -I"$CXLMEM_ROOT/include" -I"$CXLMEM_ROOT/src" \
		-o "$out/cxlmem-guest" "$CXLMEM_HERE/guest/cxlmem-guest.c" || return 1
	O="$out/cxlmem-overlay.staging"
	rm -rf "$O"
	mkdir -p "$O/bin"
	ird_init_lib "$O"
	install -m 0755 "$CXLMEM_HERE/init-cxlmem.sh" "$O/init"
	install -m 0755 "$out/cxlmem-guest" "$O/bin/cxlmem-guest"
	ird_pack "$O" "$out/cxlmem-overlay.cpio.gz"
	rm -rf "$O"
	cat "$base" "$out/cxlmem-overlay.cpio.gz" > "$out/initramfs-cxlmem.cpio.gz"
	echo "# guest: Debian kernel $kver, initramfs $(stat -c %s "$out/initramfs-cxlmem.cpio.gz") bytes"
}

cxlmem_seed() { # cxlmem_seed FILE
	# shellcheck disable=SC2086 # the DPA list is words
	python3 - "$1" "$CXLMEM_MEM_SIZE" "$CXLMEM_SEED" "$CXLMEM_SEED_LEN" $CXLMEM_SEED_DPAS <<'PY'
import struct, sys
path, size, seed, ln = sys.argv[1], int(sys.argv[2]), int(sys.argv[3], 0), int(sys.argv[4], 0)
with open(path, "wb") as f:
    f.truncate(size)
    for d in sys.argv[5:]:
        dpa = int(d, 0)
        f.seek(dpa)
        f.write(b"".join(struct.pack("<Q", seed ^ (dpa + 8 * i)) for i in range(ln // 8)))
PY
}

cxlmem_start_server() { # cxlmem_start_server NAME
	local name=$1 server="$CXLMEM_BUILD/src/tools/vcxl-server"
	CXLMEM_TMP=$(mktemp -d /tmp/vcxl-cxlmem.XXXXXX)
	cxlmem_seed "$CXLMEM_TMP/devmem.img" || return 1
	# --trust-client: the region's fd is then the --backing file itself (what the host
	# checks afterwards); without it the server keeps that file to itself and serves the
	# region by REGION_READ/WRITE only, which QEMU cannot map (docs/security.md). Without
	# --backing the region is a sealed memfd that every client may map.
	# --on-disconnect keep: the host reads what the guest left (the default zeroes it).
	e2e_server_start "$CXLMEM_LOGDIR/$name.server.log" "$server" --socket "$CXLMEM_TMP/vcxl.sock" \
		--mem-size 1G --decoders 2 --backing "$CXLMEM_TMP/devmem.img" --trust-client \
		--on-disconnect keep --log-level debug
	local rc=$?
	CXLMEM_SPID=$E2E_SERVER_PID
	return $rc
}

cxlmem_boot() { # cxlmem_boot NAME GUEST-ARGS [t3]
	local name=$1 gargs=$2 t3=${3:-} dev args fmw
	dev="{\"driver\":\"vfio-user-pci\",\"socket\":{\"type\":\"unix\",\"path\":\"$CXLMEM_TMP/vcxl.sock\"}"
	dev="$dev,\"id\":\"vcxl0\",\"bus\":\"rp0\",\"x-cxl\":true"
	[ "${VCXL_CXL_RAM_DEVICE:-0}" = 1 ] && dev="$dev,\"x-cxl-ram-device\":true"
	dev="$dev}"
	fmw="cxl-fmw.0.targets.0=cxl.1,cxl-fmw.0.size=4G"
	# shellcheck disable=SC2054 # commas inside QEMU option values
	args=("${CXLMEM_FW[@]}" -nodefaults "${E2E_TCG_ARGS[@]}"
		-object "memory-backend-memfd,id=ram0,size=$CXLMEM_GUEST_RAM,share=on"
		-m "$CXLMEM_GUEST_RAM" -nographic -serial stdio -monitor none -no-reboot -nic none
		-machine q35,cxl=on,memory-backend=ram0
		-device pxb-cxl,bus_nr=12,bus=pcie.0,id=cxl.1
		-device cxl-rp,port=0,bus=cxl.1,id=rp0,chassis=0,slot=2
		-device "$dev")
	if [ "$t3" = t3 ]; then
		# shellcheck disable=SC2054
		args+=(-device pxb-cxl,bus_nr=52,bus=pcie.0,id=cxl.2
			-device cxl-rp,port=0,bus=cxl.2,id=rp1,chassis=0,slot=3
			-object memory-backend-ram,id=t3mem,size=256M
			-device cxl-type3,bus=rp1,volatile-memdev=t3mem,id=t3)
		fmw="$fmw,cxl-fmw.1.targets.0=cxl.2,cxl-fmw.1.size=4G"
	fi
	args+=(-M "$fmw"
		-kernel "$CXLMEM_LOGDIR/guest/vmlinuz" -initrd "$CXLMEM_LOGDIR/guest/initramfs-cxlmem.cpio.gz"
		-append "$E2E_KERNEL_ARGS vcxl.args=$gargs")
	printf '%q ' "$CXLMEM_QEMU" "${args[@]}" > "$CXLMEM_LOGDIR/$name.qemu-cmd.log"
	echo >> "$CXLMEM_LOGDIR/$name.qemu-cmd.log"
	e2e_boot "$name" "$CXLMEM_LOGDIR/$name.console.log" "$CXLMEM_QEMU" "${args[@]}"
}

cxlmem_start_server_fw() { # cxlmem_start_server_fw NAME
	local name=$1 server="$CXLMEM_BUILD/src/tools/vcxl-server"
	[ -n "$CXLMEM_TMP" ] || CXLMEM_TMP=$(mktemp -d /tmp/vcxl-cxlmem.XXXXXX)
	e2e_server_start "$CXLMEM_LOGDIR/$name.server.log" "$server" --socket "$CXLMEM_TMP/fw.sock" \
		--devices 2 --mem-size 512M --firmware-committed --on-disconnect keep --log-level debug
	local rc=$?
	CXLMEM_SPID=$E2E_SERVER_PID
	return $rc
}

# QMP on $1: device_del $2 once the console $3 says UNPLUG-READY, then QEMU's view of the
# mappings (info mtree -f lines with $4, the device's "<name> cxl-mem") polled until they are
# gone, and DEVICE_DELETED waited for while the guest runs. Log on stdout, one
# "RESULT <key> <value>" line per finding.
cxlmem_qmp_unplug() {
	python3 - "$1" "$2" "$3" "$4" <<'PY'
import json, socket, sys, time
path, dev, con, match = sys.argv[1:5]
t0 = time.time()
while time.time() - t0 < 240:
    try:
        text = open(con, "rb").read()
        if b"UNPLUG-READY" in text:
            break
        if b"RESULT:" in text or b"VCXL GUEST DONE" in text:
            print("RESULT ready no (the guest finished without asking)"); sys.exit(1)
    except OSError:
        pass
    time.sleep(0.2)
else:
    print("RESULT ready no"); sys.exit(1)
s = socket.socket(socket.AF_UNIX)
s.settimeout(30)
s.connect(path)
f = s.makefile("rw")
events = []
def rd():
    line = f.readline()
    if not line:
        raise EOFError("QMP closed")
    m = json.loads(line)
    if "event" in m:
        print("<- event", m["event"], json.dumps(m.get("data", {})))
    return m
def cmd(c, args=None):
    m = {"execute": c}
    if args:
        m["arguments"] = args
    f.write(json.dumps(m) + "\n"); f.flush()
    while True:
        r = rd()
        if "return" in r or "error" in r:
            return r
        events.append(r)
def mtree():
    r = cmd("human-monitor-command", {"command-line": "info mtree -f"})
    return sorted(set(l.strip() for l in r.get("return", "").splitlines() if match in l))
def deleted():
    return any(e.get("event") == "DEVICE_DELETED" and e.get("data", {}).get("device") == dev
               for e in events)
rd()
cmd("qmp_capabilities")
before = mtree()
print("mappings of %s before device_del: %s" % (dev, before))
print("RESULT mapped-before %d" % len(before))
r = cmd("device_del", {"id": dev})
print("RESULT device_del %s" % ("ok" if "return" in r else json.dumps(r)))
t1 = time.time()
gone_after = None
try:
    while time.time() - t1 < 60:
        now = mtree()
        if not now and gone_after is None:
            gone_after = time.time() - t1
            print("mappings of %s gone %.1f s after device_del" % (dev, gone_after))
            print("RESULT mapped-after 0")
        if gone_after is not None and deleted():
            break
        time.sleep(0.2)
except (EOFError, OSError) as e:
    print("QMP: %s (QEMU exiting)" % e)
if gone_after is None:
    print("RESULT mapped-after still")
print("RESULT device_deleted %s" % ("yes" if deleted() else "no"))
PY
}

cxlmem_boot_fw() { # cxlmem_boot_fw NAME [GUEST-ARGS (default --fw)] [x-cxl (default true)]
	local name=$1 gargs=${2:---fw} xcxl=${3:-true} args d dev
	# shellcheck disable=SC2054 # commas inside QEMU option values
	args=("${CXLMEM_FW[@]}" -nodefaults "${E2E_TCG_ARGS[@]}"
		-object "memory-backend-memfd,id=ram0,size=$CXLMEM_GUEST_RAM,share=on"
		-m "$CXLMEM_GUEST_RAM" -nographic -serial stdio -monitor none -no-reboot -nic none
		-qmp "unix:$CXLMEM_TMP/qmp.sock,server=on,wait=off"
		-machine q35,cxl=on,memory-backend=ram0
		-device pxb-cxl,bus_nr=12,bus=pcie.0,id=cxl.1
		-device cxl-rp,port=0,bus=cxl.1,id=rp0,chassis=0,slot=2
		-device cxl-rp,port=1,bus=cxl.1,id=rp1,chassis=0,slot=3)
	for d in 0 1; do
		dev="{\"driver\":\"vfio-user-pci\",\"socket\":{\"type\":\"unix\",\"path\":\"$CXLMEM_TMP/fw.sock.$d\"}"
		dev="$dev,\"id\":\"vcxl$d\",\"bus\":\"rp$d\""
		[ "$xcxl" = none ] || dev="$dev,\"x-cxl\":$xcxl"
		args+=(-device "$dev}")
	done
	args+=(-M "cxl-fmw.0.targets.0=cxl.1,cxl-fmw.0.size=4G"
		-kernel "$CXLMEM_LOGDIR/guest/vmlinuz" -initrd "$CXLMEM_LOGDIR/guest/initramfs-cxlmem.cpio.gz"
		-append "$E2E_KERNEL_ARGS vcxl.args=$gargs")
	printf '%q ' "$CXLMEM_QEMU" "${args[@]}" > "$CXLMEM_LOGDIR/$name.qemu-cmd.log"
	echo >> "$CXLMEM_LOGDIR/$name.qemu-cmd.log"
	CXLMEM_FW_NAME=$name
	e2e_boot --during cxlmem_fw_unplug "$name" "$CXLMEM_LOGDIR/$name.console.log" "$CXLMEM_QEMU" "${args[@]}"
}

cxlmem_fw_unplug() { # cxlmem_boot_fw's --during: QMP device_del of vcxl1 at "UNPLUG-READY"
	cxlmem_qmp_unplug "$CXLMEM_TMP/qmp.sock" vcxl1 "$CXLMEM_LOGDIR/$CXLMEM_FW_NAME.console.log" \
		"fw.sock.1 cxl-mem" > "$CXLMEM_LOGDIR/$CXLMEM_FW_NAME.qmp.log" 2>&1
}

cxlmem_hostcheck_ctl() { # cxlmem_hostcheck_ctl CONSOLE CTL
	grep -a '^HOSTCHECK mem ' "$1" | tr -d '\r' | python3 -c '
import json, re, socket, struct, sys
s = socket.socket(socket.AF_UNIX)
s.settimeout(10)
s.connect(sys.argv[1])
f = s.makefile("rw")
def read(dev, off, ln):
    out = b""
    while len(out) < ln:
        n = min(4096, ln - len(out))
        f.write(json.dumps({"execute": "read-memory", "arguments":
                            {"device": dev, "offset": off + len(out), "length": n}}) + "\n")
        f.flush()
        r = json.loads(f.readline())
        if "return" not in r:
            raise SystemExit("read-memory: %s" % r)
        out += bytes.fromhex(r["return"]["data"])
    return out
for line in sys.stdin:
    kv = dict(re.findall(r"(\w+)=(\S+)", line))
    dev, dpa, ln, pat = int(kv.get("dev", "0")), int(kv["dpa"], 0), int(kv["len"], 0), int(kv["pattern"], 0)
    step = int(kv.get("step", "1"))  # qword i holds pattern + step * i
    data = read(dev, dpa, ln)
    q = [struct.unpack_from("<Q", data, 8 * i)[0] for i in range(len(data) // 8)]
    hit = sum(1 for i, v in enumerate(q) if v == (pat + step * i) & (2**64 - 1))
    want = kv["expect"]
    good = hit == ln // 8 if want == "present" else hit == 0
    print("%s device %d memory at region offset %#x (control socket read-memory): pattern %#x %s (%d of %d qwords)" % (
        "ok" if good else "FAIL", dev, dpa, pat,
        "present" if want == "present" else "absent", hit, ln // 8))
' "$2"
}

cxlmem_hostcheck() { # cxlmem_hostcheck CONSOLE FILE
	grep -a '^HOSTCHECK mem ' "$1" | tr -d '\r' | python3 -c '
import re, struct, sys
path = sys.argv[1]
with open(path, "rb") as f:
    for line in sys.stdin:
        kv = dict(re.findall(r"(\w+)=(\S+)", line))
        dpa, ln, pat = int(kv["dpa"], 0), int(kv["len"], 0), int(kv["pattern"], 0)
        f.seek(dpa)
        data = f.read(ln)
        q = [struct.unpack_from("<Q", data, 8 * i)[0] for i in range(len(data) // 8)]
        hit = sum(1 for i, v in enumerate(q) if v == (pat + i) & (2**64 - 1))
        want = kv["expect"]
        good = hit == ln // 8 if want == "present" else hit == 0
        print("%s device memory at DPA %#x: pattern %#x %s (%d of %d qwords)" % (
            "ok" if good else "FAIL", dpa, pat,
            "present" if want == "present" else "absent", hit, ln // 8))
' "$2"
}

cxlmem_stop() {
	e2e_boot_stop
	[ -n "$CXLMEM_SPID" ] && e2e_server_stop "$CXLMEM_SPID"
	[ -n "$CXLMEM_TMP" ] && rm -rf "$CXLMEM_TMP"
	CXLMEM_SPID=""
	CXLMEM_TMP=""
}
