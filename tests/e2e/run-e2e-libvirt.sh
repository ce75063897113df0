#!/bin/bash
# SPDX-License-Identifier: BSD-3-Clause
# run-e2e-libvirt.sh BUILDDIR - e2e-libvirt: docs/libvirt.md run for real, under Debian's
# libvirt (9.0), managed with virsh alone through the libvirt hook (TAP).
#
# The test starts its own virtlogd and libvirtd in a private mount namespace (unshare -m):
# /etc/libvirt, /etc/default, /etc/passwd, /etc/group, /run, /var/lib, /var/log and
# /var/cache are directories of its temp dir there, so the daemons' configuration, sockets,
# state, logs and capability cache are its own, and the paths the docs name
# (/etc/libvirt/hooks/qemu, /etc/default/vcxl, /run/vcxl/dev0/vcxl.sock,
# /var/lib/libvirt/images/..., /var/log/libvirt/qemu/...) are used as written. In it:
#   * /etc/passwd and /etc/group gain the users the docs need when the host lacks them:
#     libvirt-qemu (QEMU's user and group, as on Debian; libvirtd refuses to start a domain
#     without it) and vcxl (the server's user after --user);
#   * qemu.conf: QEMU as libvirt-qemu:libvirt-qemu, cgroup_controllers = [ ] (QEMU stays
#     in this test's cgroup); libvirtd.conf: root-only sockets, no authentication;
#   * /dev/kvm, when the host's is not Debian's 0660 root:kvm, is a node of the namespace's
#     own with that owner and mode, libvirt-qemu in group kvm (below: why);
#   * the hook is docs/examples/libvirt-hook-qemu at /etc/libvirt/hooks/qemu, and
#     /etc/default/vcxl's VCXL_SERVER_CMD runs the build tree's vcxl-server with the
#     server options of docs/libvirt.md (its "dev0.conf" block) plus, for the guest's
#     proof, a seeded --backing file it may hand to QEMU (--trust-client, as e2e-cxlmem);
#   * the domain is docs/libvirt-domain.xml with only the emulator substituted (the
#     CXL-aware QEMU of cxlmem-lib.sh), and type='qemu' for 'kvm' when libvirt reports no
#     KVM for QEMU's user (the docs' TCG variant); its kernel and initrd are e2e-cxlmem's
#     guest with /init = init-libvirt.sh (the CXL.mem proof, then up until destroyed).
# Checked: the daemons start; virsh define; virsh start runs the hook, which starts the
# server (READY=1) as vcxl with the socket mode and group of the docs before QEMU
# connects; vcxl status shows QEMU (libvirt-qemu) attached; the guest's CXL.mem proof
# (one point per STEP line) and its writes found in the backing file; a second domain
# naming dev0 is refused by the hook while cxl-vm runs; virsh destroy runs
# the hook, which stops the server; virsh undefine; a domain whose server cannot start is
# refused with the hook's message and no QEMU; the hook's systemd mode (a stand-in
# systemctl); the daemons stopped by pid; nothing left: no process of the namespace, the
# host's /etc, /run and /var as they were, the temp dir gone.
# Skips visibly (TAP "1..0 # SKIP") when not root, without the libvirt packages (make deps:
# libvirt-daemon, libvirt-daemon-driver-qemu, libvirt-clients), with a libvirtd already
# running, without unshare, or without the CXL-aware QEMU or the guest kernel (as
# e2e-cxlmem). VCXL_E2E_LIBVIRT_ACCEL=kvm runs the KVM variant (default tcg); VCXL_E2E_TIMEOUT (300) and
# VCXL_E2E_SILENCE (150) bound the guest as lib.sh does (one retry on silence or a stall).
# Logs: BUILDDIR/e2e-libvirt/.
set -u
E2E_NAME=e2e-libvirt
HERE=$(cd "$(dirname "$0")" && pwd)
ROOT=$(cd "$HERE/../.." && pwd)
CXLMEM_BUILD=$(cd "${1:-build}" && pwd)
CXLMEM_LOGDIR="$CXLMEM_BUILD/e2e-libvirt"
LOG=$CXLMEM_LOGDIR
DOMXML=$ROOT/docs/libvirt-domain.xml
DOC=$ROOT/docs/libvirt.md
HOOK=$ROOT/docs/examples/libvirt-hook-qemu
SERVER=$CXLMEM_BUILD/src/tools/vcxl-server
VCXL=$CXLMEM_BUILD/src/tools/vcxl
# shellcheck source=tests/e2e/cxlmem-lib.sh
. "$HERE/cxlmem-lib.sh"
# shellcheck source=tests/e2e/initramfs.sh
. "$HERE/initramfs.sh"

now() { date +%s.%N; }
procstate() { # the state letter of /proc/PID/stat (R, S, Z, ...), nothing when PID is gone
	local st
	st=$(cat "/proc/$1/stat" 2> /dev/null) || return 0
	st=${st##*) } # past "pid (comm) ": comm may hold spaces
	echo "${st%% *}"
}
since() { awk -v a="$1" -v b="$(now)" 'BEGIN { printf "%.2f", b - a }'; }

# the docs' block between <!-- NAME: begin --> and <!-- NAME: end --> (fences dropped)
doc_block() {
	sed -n "/<!-- $1: begin -->/,/<!-- $1: end -->/p" "$DOC" | sed '1,2d;$d' | sed '$d'
}

# The host's view of what the test must not touch, for the before/after comparison
host_state() {
	local p
	for p in /etc/libvirt /etc/libvirt/hooks /etc/default/vcxl /etc/vcxl /run/libvirt /run/vcxl \
		/var/lib/libvirt /var/log/libvirt /var/log/vcxl /var/cache/libvirt /root/.cache/libvirt \
		/root/.config/libvirt; do
		if [ -e "$p" ]; then
			echo "$p: $(find "$p" -maxdepth 2 -printf '%p %m %u %s\n' 2>/dev/null | sort | md5sum | cut -c1-12)"
		else
			echo "$p: absent"
		fi
	done
	echo "users: $(getent passwd libvirt-qemu vcxl | cut -d: -f1 | tr '\n' ' ')"
	echo "groups: $(getent group libvirt-qemu vcxl | cut -d: -f1 | tr '\n' ' ')"
}

if [ "${VCXL_E2E_LIBVIRT_INNER:-}" != 1 ]; then
	# ---- outside the namespace: can it run, its inputs, then the run and what it left ----
	if [ ! -x "$SERVER" ] || [ ! -x "$VCXL" ]; then
		echo "Bail out! $SERVER or $VCXL is not built"
		exit 1
	fi
	[ "$(id -u)" = 0 ] || skip_all "needs root (libvirtd's system instance, a private mount namespace)"
	for t in libvirtd virtlogd virsh; do
		command -v "$t" > /dev/null || PATH=$PATH:/usr/sbin:/sbin
		command -v "$t" > /dev/null ||
			skip_all "$t not installed (libvirt-daemon, libvirt-daemon-driver-qemu, libvirt-clients: make deps)"
	done
	for d in libvirtd virtqemud; do
		p=$(pgrep -x "$d" | head -1)
		[ -z "$p" ] || skip_all "a $d is already running on this machine (pid $p): not starting a second libvirt"
	done
	command -v unshare > /dev/null || skip_all "unshare not found (util-linux)"
	unshare -m true 2> /dev/null || skip_all "unshare -m fails: no private mount namespace here"
	command -v python3 > /dev/null || skip_all "python3 not found (the hook, the host checks)"
	mkdir -p "$LOG"
	rm -f "$LOG"/*.log "$LOG"/*.xml
	t0=$(date +%s)
	cxlmem_qemu || skip_all "no CXL-aware QEMU: $CXLMEM_WHY"
	echo "# CXL-aware QEMU: $CXLMEM_QEMU ($(($(date +%s) - t0)) s to find or build)"
	if ! cxlmem_guest "$LOG/guest" > "$LOG/build-guest.log" 2>&1; then
		diag < "$LOG/build-guest.log"
		grep -q -E 'apt-get download|cannot find a kernel' "$LOG/build-guest.log" &&
			skip_all "cannot fetch the guest kernel (apt-get download linux-image)"
		echo "Bail out! building the guest failed (see $LOG/build-guest.log)"
		exit 1
	fi
	grep '^# guest' "$LOG/build-guest.log"
	# the guest: e2e-cxlmem's initramfs with init-libvirt.sh as /init (a later archive wins)
	IRD=$LOG/libvirt-overlay.staging
	rm -rf "$IRD"
	mkdir -p "$IRD"
	ird_init_lib "$IRD"
	install -m 0755 "$HERE/init-libvirt.sh" "$IRD/init"
	ird_pack "$IRD" "$LOG/guest/libvirt-overlay.cpio.gz"
	rm -rf "$IRD"
	cat "$LOG/guest/initramfs-cxlmem.cpio.gz" "$LOG/guest/libvirt-overlay.cpio.gz" > "$LOG/guest/initramfs-libvirt.cpio.gz"

	host_state > "$LOG/host-before.txt"
	state=$(mktemp /tmp/vcxl-libvirt-state.XXXXXX)
	VCXL_E2E_LIBVIRT_INNER=1 VCXL_E2E_LIBVIRT_QEMU=$CXLMEM_QEMU VCXL_E2E_LIBVIRT_STATE=$state \
		unshare --mount --propagation private "$0" "$CXLMEM_BUILD"
	rc=$?
	E2E_N=0 E2E_NFAIL=0 tmp="" mntns="" pids=""
	# shellcheck disable=SC1090 # written by the inner run: E2E_N, E2E_NFAIL, tmp, mntns, pids
	[ -s "$state" ] && . "$state"
	rm -f "$state"
	if [ "$E2E_N" = 0 ]; then
		echo "Bail out! the run in the private namespace reported nothing (status $rc)"
		exit 1
	fi
	[ "$rc" = 0 ] || [ "$E2E_NFAIL" -gt 0 ] || tap FAIL "the run in the private namespace exited with status $rc"
	host_state > "$LOG/host-after.txt"
	if diff "$LOG/host-before.txt" "$LOG/host-after.txt" > "$LOG/host-diff.txt"; then
		tap OK "the host's /etc/libvirt, /etc/default/vcxl, /run, /var/lib, /var/log, /var/cache, users and groups as before"
	else
		tap FAIL "the host's /etc, /run, /var, users and groups as before"
		diag < "$LOG/host-diff.txt"
	fi
	left=""
	# a daemon's zombie waits for whoever adopted it (init, a subreaper): gone, as far as
	# running goes
	running() { [ "$(e2e_starttime "$1")" = "$2" ] && [ "$(procstate "$1")" != Z ]; }
	for p in $pids; do running "${p%:*}" "${p#*:}" && left="$left ${p%:*}"; done
	for p in /proc/[0-9]*; do
		[ "$(readlink "$p/ns/mnt" 2> /dev/null)" = "$mntns" ] && running "${p#/proc/}" "$(e2e_starttime "${p#/proc/}")" &&
			left="$left ${p#/proc/}"
	done
	if [ -n "$mntns" ] && [ -z "$left" ]; then
		tap OK "no process left: libvirtd, virtlogd, QEMU, vcxl-server gone, the namespace empty"
	else
		tap FAIL "no process left: still$left (namespace ${mntns:-unknown})"
		for p in $left; do ps -o pid=,user=,args= -p "$p" | diag; done
	fi
	if [ -n "$tmp" ] && [ ! -e "$tmp" ]; then
		tap OK "the temp dir $tmp removed"
	else
		tap FAIL "the temp dir ${tmp:-?} removed"
	fi
	echo "# logs: $LOG"
	e2e_done
	exit
fi

# ---- inside the private mount namespace ----
QEMU_SRC=$VCXL_E2E_LIBVIRT_QEMU
STATE=$VCXL_E2E_LIBVIRT_STATE
export LIBVIRT_DEFAULT_URI=qemu:///system
CON=/var/log/libvirt/qemu/cxl-vm-console.log
RUNDIR=/run/vcxl/dev0
SOCK=$RUNDIR/vcxl.sock
PIDS=""
T=$(mktemp -d /tmp/vcxl-libvirt.XXXXXX)
chmod 0755 "$T" # QEMU (libvirt-qemu) runs the emulator copied here

# pid:starttime of what this run started, for the outer "nothing left" check
remember() { [ -n "${1:-}" ] && PIDS="$PIDS $1:$(e2e_starttime "$1")"; }
daemon_pid() { cat "/run/$1.pid" 2> /dev/null; }
alive() { [ -n "${1:-}" ] && [ -n "$(procstate "$1")" ] && [ "$(procstate "$1")" != Z ]; }
stop_pid() { # stop_pid PID [SECONDS]: SIGTERM, then SIGKILL after SECONDS (10)
	local p=$1 i=0
	alive "$p" || return 0
	kill -TERM "$p" 2> /dev/null
	while alive "$p" && [ $i -lt $((${2:-10} * 10)) ]; do
		sleep 0.1
		i=$((i + 1))
	done
	alive "$p" && kill -KILL "$p" 2> /dev/null && sleep 0.2
	! alive "$p"
}
# shellcheck disable=SC2317 # save_logs and inner_cleanup run from the EXIT trap
save_logs() {
	cp /var/log/libvirt/libvirtd.log /var/log/libvirt/virtlogd.log "$LOG/" 2> /dev/null
	cp /var/log/libvirt/qemu/*.log "$LOG/" 2> /dev/null
	cp /var/log/vcxl/dev0.log "$LOG/server.log" 2> /dev/null
	cp "$T"/cxl-vm*.xml "$T/systemctl.log" "$LOG/" 2> /dev/null
	true
}
# shellcheck disable=SC2317
inner_cleanup() {
	local p
	if alive "$(daemon_pid libvirtd)"; then
		for d in cxl-vm cxl-vm-2 cxl-vm-bad; do
			virsh -q destroy "$d" > /dev/null 2>&1
			virsh -q undefine "$d" > /dev/null 2>&1
		done
	fi
	stop_pid "$(daemon_pid libvirtd)" 20
	stop_pid "$(daemon_pid virtlogd)" 10
	# a server the hook could not stop, a QEMU libvirt lost
	for p in $PIDS; do stop_pid "${p%:*}" 5; done
	save_logs
	{
		echo "E2E_N=$E2E_N E2E_NFAIL=$E2E_NFAIL tmp=$T"
		echo "mntns=$(readlink /proc/self/ns/mnt)"
		echo "pids='$PIDS'"
	} > "$STATE"
	cd /
	rm -rf "$T"
}
trap inner_cleanup EXIT
trap 'exit 130' INT TERM

# ---- the private tree: /etc/libvirt, /etc/default, /etc/passwd+group, /run, /var/* ----
mkdir -p "$T"/{etc-libvirt/hooks,etc-default,run/vcxl,var-lib/libvirt/images/cxl-vm,var-log,var-cache,vcxl,qemu,home,fakebin}
chmod 0755 "$T"/* "$T/var-lib/libvirt" "$T/var-lib/libvirt/images" "$T/var-lib/libvirt/images/cxl-vm"
cp /etc/passwd "$T/passwd"
cp /etc/group "$T/group"
free_id() { # an id from 64000 up that neither file uses
	local i=64000
	while cut -d: -f3 "$T/passwd" "$T/group" | grep -qx "$i"; do i=$((i + 1)); done
	echo $i
}
for u in libvirt-qemu vcxl; do
	if ! getent passwd "$u" > /dev/null; then
		id=$(free_id)
		echo "$u:x:$id:$id:vcxl e2e-libvirt:/nonexistent:/usr/sbin/nologin" >> "$T/passwd"
		getent group "$u" > /dev/null || echo "$u:x:$id:" >> "$T/group"
		echo "# user $u (uid $id) added in the namespace only"
	fi
done
# /dev/kvm as Debian leaves it for libvirt: 0660 root:kvm (its udev rule) with libvirt-qemu in
# group kvm (libvirt-daemon-system's postinst). A /dev/kvm that the probe's QEMU opens but
# libvirt-qemu may not (0600 root:root here) makes libvirt 9.0 find its capability cache
# stale at every lookup ("KVM was enabled when probing ..., but it is not available now")
# and probe QEMU again: 16 probes, 64 s for the first virsh define. The namespace gets a
# node of its own with Debian's owner and mode, bound over /dev/kvm.
kvmnode=""
if [ -c /dev/kvm ]; then
	if ! grep -q '^kvm:' "$T/group"; then
		echo "kvm:x:$(free_id):libvirt-qemu" >> "$T/group"
	elif ! grep '^kvm:' "$T/group" | cut -d: -f4 | tr ',' '\n' | grep -qx libvirt-qemu; then
		sed -i '/^kvm:/{s/:$/:libvirt-qemu/;t;s/$/,libvirt-qemu/}' "$T/group"
	fi
	kgid=$(grep '^kvm:' "$T/group" | cut -d: -f3)
	if [ "$(stat -c '%a %g' /dev/kvm)" != "660 $kgid" ] && [ "$(stat -c '%a' /dev/kvm)" != 666 ]; then
		mknod -m 0660 "$T/kvm" c "$((0x$(stat -c %t /dev/kvm)))" "$((0x$(stat -c %T /dev/kvm)))" &&
			chgrp "$kgid" "$T/kvm" && kvmnode="$T/kvm:/dev/kvm"
		echo "# /dev/kvm is $(stat -c '%a %U:%G' /dev/kvm); in the namespace 0660 root:kvm (gid $kgid), as Debian's udev rule makes it"
	fi
fi
for m in $kvmnode etc-libvirt:/etc/libvirt etc-default:/etc/default passwd:/etc/passwd group:/etc/group \
	run:/run var-lib:/var/lib var-log:/var/log var-cache:/var/cache; do
	src=${m%%:*}
	[ "${src#/}" = "$src" ] && src=$T/$src
	mount --bind "$src" "${m#*:}" || {
		echo "Bail out! mount --bind $src ${m#*:} in the private namespace failed"
		exit 1
	}
done
export HOME=$T/home
unset XDG_CONFIG_HOME XDG_CACHE_HOME XDG_RUNTIME_DIR

cat > /etc/libvirt/libvirtd.conf << 'EOF'
# e2e-libvirt's private libvirtd: its sockets root's only, no authentication, no TCP
unix_sock_rw_perms = "0700"
unix_sock_ro_perms = "0700"
auth_unix_rw = "none"
auth_unix_ro = "none"
log_outputs = "3:file:/var/log/libvirt/libvirtd.log"
EOF
cat > /etc/libvirt/virtlogd.conf << 'EOF'
log_outputs = "3:file:/var/log/libvirt/virtlogd.log"
EOF
cat > /etc/libvirt/qemu.conf << 'EOF'
# QEMU's user and group as on Debian (its build's defaults, spelled out)
user = "libvirt-qemu"
group = "libvirt-qemu"
# no cgroups of libvirt's: QEMU stays in the caller's (this test's) cgroup
cgroup_controllers = [ ]
EOF
install -m 0755 "$HOOK" /etc/libvirt/hooks/qemu
mkdir -p /var/log/libvirt/qemu
# the server's options: docs/libvirt.md's dev0.conf, then the test's (the command line wins)
doc_block vcxl-libvirt-server-conf > "$T/vcxl/dev0.conf"
cxlmem_seed "$T/vcxl/dev0.img"
case "$SERVER$T" in *[[:space:]]*)
	echo "Bail out! a path with a space: $SERVER $T"
	exit 1
	;;
esac
cat > /etc/default/vcxl << EOF
# e2e-libvirt: the build tree's server, the docs' options, a seeded --backing file that QEMU
# may map (--trust-client: the host checks the guest's writes in it afterwards)
VCXL_SERVER_CMD="$SERVER --config $T/vcxl/%i.conf --backing $T/vcxl/%i.img --trust-client --on-disconnect keep --log-level debug"
VCXL_TIMEOUT_START=30
EOF
# the guest, the disk (an empty qcow2), the emulator where QEMU's user reaches them
cp -L "$LOG/guest/vmlinuz" /var/lib/libvirt/images/cxl-vm/vmlinuz
cp "$LOG/guest/initramfs-libvirt.cpio.gz" /var/lib/libvirt/images/cxl-vm/initrd.img
python3 - /var/lib/libvirt/images/cxl-vm.qcow2 << 'PY'
# an empty 1 GiB qcow2 (version 2, 64 KiB clusters) as qemu-img create makes it: the
# header, a refcount table, one refcount block and the L1 table
import struct, sys
cl, size = 1 << 16, 1 << 30
l1_size = size // (cl * (cl // 8))
hdr = struct.pack(">4sIQIIQIIQQIIQ", b"QFI\xfb", 2, 0, 0, 16, size, 0, l1_size, 3 * cl, cl, 1, 0, 0)
img = bytearray(4 * cl)
img[:len(hdr)] = hdr
struct.pack_into(">Q", img, cl, 2 * cl)  # refcount table -> the block at cluster 2
for i in range(4):
    struct.pack_into(">H", img, 2 * cl + 2 * i, 1)  # clusters 0..3 in use
open(sys.argv[1], "wb").write(img)
PY
install -m 0755 "$QEMU_SRC" "$T/qemu/qemu-system-x86_64"
QEMU=$T/qemu/qemu-system-x86_64

# ---- the daemons ----
ts=$(now)
virtlogd -d -p /run/virtlogd.pid
libvirtd -d -f /etc/libvirt/libvirtd.conf -p /run/libvirtd.pid
i=0
until virsh -q uri > /dev/null 2>&1 || [ $i -ge 300 ]; do
	sleep 0.1
	i=$((i + 1))
done
remember "$(daemon_pid virtlogd)"
remember "$(daemon_pid libvirtd)"
if alive "$(daemon_pid libvirtd)" && alive "$(daemon_pid virtlogd)" && virsh -q uri > /dev/null 2>&1; then
	tap OK "virtlogd and libvirtd $(libvirtd --version | awk '{print $NF}') started with a private configuration, answering in $(since "$ts") s"
else
	tap FAIL "virtlogd and libvirtd started with a private configuration"
	tail -20 /var/log/libvirt/libvirtd.log 2> /dev/null | diag
	exit 1
fi

# ---- the domain: the docs' file, only the emulator (and the TCG variant's type) substituted ----
# TCG unless asked for KVM (VCXL_E2E_LIBVIRT_ACCEL=kvm): every e2e guest runs under TCG, and
# here libvirt offered KVM (domcapabilities) where its QEMU then failed ("Could not access
# KVM kernel module")
accel=${VCXL_E2E_LIBVIRT_ACCEL:-tcg}
ts=$(now)
kvm=$(virsh domcapabilities --virttype kvm --emulatorbin "$QEMU" --arch x86_64 --machine q35 > /dev/null 2>&1 && echo offered || echo none)
echo "# libvirt probed the emulator's capabilities in $(since "$ts") s (virsh domcapabilities); KVM for QEMU's user: $kvm (/dev/kvm: $(stat -c '%A %U:%G' /dev/kvm 2>&1)); running the docs' $accel variant"
sub=(-e "s|<emulator>/usr/bin/vcxl-qemu-system-x86_64</emulator>|<emulator>$QEMU</emulator>|")
[ "$accel" = tcg ] && sub+=(-e "s|^<domain type='kvm' |<domain type='qemu' |")
sed "${sub[@]}" "$DOMXML" > "$T/cxl-vm.xml"
diff "$DOMXML" "$T/cxl-vm.xml" > "$T/subst.diff"
nsub=$(grep -c '^>' "$T/subst.diff")
want=1
[ "$accel" = tcg ] && want=2
if [ "$nsub" = "$want" ] && [ "$(grep -c '^<' "$T/subst.diff")" = "$want" ] &&
	grep -q "^> *<emulator>$QEMU</emulator>" "$T/subst.diff"; then
	tap OK "the domain is docs/libvirt-domain.xml with $nsub line(s) substituted: the emulator$([ "$accel" = tcg ] && echo ", type='qemu' (TCG)")"
else
	tap FAIL "the domain is docs/libvirt-domain.xml with only the emulator (and type) substituted"
	diag < "$T/subst.diff"
fi
if [ "$(doc_block vcxl-libvirt-domain)" = "$(cat "$DOMXML")" ]; then
	tap OK "docs/libvirt.md shows docs/libvirt-domain.xml as it is"
else
	tap FAIL "docs/libvirt.md shows docs/libvirt-domain.xml as it is"
	diff <(doc_block vcxl-libvirt-domain) "$DOMXML" | head -20 | diag
fi

ts=$(now)
if out=$(virsh define "$T/cxl-vm.xml" 2>&1); then
	tap OK "virsh define ($accel): $out ($(since "$ts") s)"
else
	tap FAIL "virsh define ($accel)"
	echo "$out" | diag
	exit 1
fi
if [ ! -e "$SOCK" ] && [ ! -e "$RUNDIR" ]; then
	tap OK "defined, not started: no server yet ($RUNDIR absent)"
else
	tap FAIL "defined, not started: no server yet ($RUNDIR exists)"
fi

# ---- start: the hook starts the server, QEMU attaches ----
boot() { # boot: virsh start, then wait for the guest's DONE line; sets BOOT_* and fails on a stuck guest
	local silence=${VCXL_E2E_SILENCE:-$E2E_SILENCE_DEFAULT} tmo=${VCXL_E2E_TIMEOUT:-300}
	local t0 size prev=-1 last quiet
	BOOT_MAX_SILENCE=0 BOOT_VERDICT=""
	ts=$(now)
	if ! out=$(virsh start cxl-vm 2>&1); then
		BOOT_VERDICT=start
		return 1
	fi
	START_SECS=$(since "$ts")
	QPID=$(cat /run/libvirt/qemu/cxl-vm.pid 2> /dev/null)
	SPID=$(cut -d' ' -f1 "$RUNDIR/server.pid" 2> /dev/null)
	remember "$QPID"
	remember "$SPID"
	t0=$(date +%s)
	last=$t0
	while :; do
		sleep 1
		if grep -a -q '=== VCXL GUEST DONE ===' "$CON" 2> /dev/null; then
			BOOT_VERDICT=finished
			break
		fi
		size=$(stat -c %s "$CON" 2> /dev/null || echo 0)
		if [ "$size" != "$prev" ]; then
			last=$(date +%s)
			prev=$size
			if grep -a -q -E "$E2E_STALL_RE" "$CON"; then
				BOOT_VERDICT=stall
				break
			fi
		fi
		quiet=$(($(date +%s) - last))
		[ $quiet -gt "$BOOT_MAX_SILENCE" ] && BOOT_MAX_SILENCE=$quiet
		if [ "$(virsh domstate cxl-vm 2> /dev/null)" != running ]; then
			BOOT_VERDICT="ended ($(virsh domstate cxl-vm --reason 2> /dev/null))"
			break
		fi
		[ $quiet -ge "$silence" ] && BOOT_VERDICT=silent && break
		[ $(($(date +%s) - t0)) -ge "$tmo" ] && BOOT_VERDICT=timeout && break
	done
	BOOT_SECS=$(($(date +%s) - t0))
	[ "$BOOT_VERDICT" = finished ]
}
attempt=1
boot
brc=$?
if [ $brc -ne 0 ] && { [ "$BOOT_VERDICT" = silent ] || [ "$BOOT_VERDICT" = stall ]; }; then
	echo "# guest: $BOOT_VERDICT after $BOOT_SECS s (longest console silence $BOOT_MAX_SILENCE s); destroyed, started once more"
	cp "$CON" "$LOG/cxl-vm-console.attempt1.log"
	virsh -q destroy cxl-vm > /dev/null 2>&1
	rm -f "$T/vcxl/dev0.img"
	cxlmem_seed "$T/vcxl/dev0.img"
	attempt=2
	boot
	brc=$?
fi
if [ "$BOOT_VERDICT" = start ]; then
	tap FAIL "virsh start cxl-vm"
	echo "$out" | diag
	tail -20 /var/log/vcxl/dev0.log 2> /dev/null | diag
	exit 1
fi
tap OK "virsh start cxl-vm: $START_SECS s (the hook's prepare and QEMU's start; attempt $attempt)"
echo "# guest: $BOOT_VERDICT after $BOOT_SECS s, longest console silence $BOOT_MAX_SILENCE s"

# the server the hook started: READY=1 before QEMU, the docs' user, socket mode and group
grep -a -E 'listening|running as|hook' /var/log/vcxl/dev0.log 2> /dev/null | diag
ready=$(sed -n 's/^--- vcxl hook: pid [0-9]* ready (READY=1) in \([0-9.]*\) s, for domain cxl-vm$/\1/p' /var/log/vcxl/dev0.log 2> /dev/null | tail -1)
if alive "$SPID" && [ "$(ps -o user= -p "$SPID")" = vcxl ] && [ -n "$ready" ]; then
	tap OK "the hook started vcxl-server (pid $SPID, in $RUNDIR), READY=1 in $ready s, running as vcxl (--user)"
else
	tap FAIL "the hook started vcxl-server, running as vcxl (pid '${SPID:-none}', user '$(ps -o user= -p "${SPID:-1}" 2> /dev/null)')"
	tail -20 /var/log/vcxl/dev0.log 2> /dev/null | diag
fi
perm=$(stat -c '%A %U:%G' "$SOCK" 2> /dev/null)
case "$perm" in
srw-rw----\ *:libvirt-qemu) tap OK "$SOCK: $perm (socket-mode 0660, socket-group libvirt-qemu)" ;;
*) tap FAIL "$SOCK: '$perm', want srw-rw---- group libvirt-qemu" ;;
esac
ctl=$(stat -c '%A %U:%G' "$SOCK.ctl" 2> /dev/null)
case "$ctl" in
srw-------\ root:root) tap OK "$SOCK.ctl: $ctl (the control socket stays root's)" ;;
*) tap FAIL "$SOCK.ctl: '$ctl', want srw------- root:root" ;;
esac

# vcxl status: QEMU (as libvirt-qemu) attached
"$VCXL" status "$SOCK" > "$T/status.txt" 2>&1
"$VCXL" status "$SOCK" --json > "$T/status.json" 2>&1
diag < "$T/status.txt"
quid=$(ps -o uid= -p "${QPID:-1}" 2> /dev/null | tr -d ' ')
st=$(python3 -c '
import json, sys
d = json.load(open(sys.argv[1]))["devices"][0]
c = d.get("client") or {}
print(d["connected"], c.get("pid"), c.get("uid"))' "$T/status.json" 2>&1)
if [ "$st" = "True $QPID $quid" ] && [ "$(ps -o user= -p "$QPID")" = libvirt-qemu ]; then
	tap OK "vcxl status: QEMU attached (pid $QPID, uid $quid: libvirt-qemu)"
else
	tap FAIL "vcxl status: QEMU attached (status: '$st'; QEMU pid '${QPID:-}', uid '$quid')"
fi

# ---- the guest's CXL.mem proof ----
if [ "$BOOT_VERDICT" = finished ]; then
	tap OK "guest init completed (attempt $attempt, $BOOT_SECS s)"
else
	tap FAIL "guest init completed ($BOOT_VERDICT after $BOOT_SECS s)"
	tail -30 "$CON" 2> /dev/null | diag
fi
e2e_steps_tap "$CON"
nsteps=$E2E_NSTEPS
if grep -a -q -E '^RESULT: [0-9]+ ok, 0 failed' "$CON" && [ "$nsteps" -ge 10 ]; then
	tap OK "guest program finished with no failure ($nsteps steps)"
else
	tap FAIL "guest program finished with no failure ($nsteps steps)"
fi
e2e_checks_tap host < <(cxlmem_hostcheck "$CON" "$T/vcxl/dev0.img")
nchk=$E2E_NCHECKS
if [ "$nchk" -ge 9 ]; then
	tap OK "host checked $nchk guest accesses in the server's backing file"
else
	tap FAIL "host checked $nchk guest accesses in the server's backing file (want >= 9)"
fi

# ---- a second domain naming dev0 while cxl-vm runs: refused, cxl-vm's server untouched ----
sed "s|<name>cxl-vm</name>|<name>cxl-vm-2</name>|" "$T/cxl-vm.xml" > "$T/cxl-vm-2.xml"
virsh -q define "$T/cxl-vm-2.xml" > /dev/null 2>&1
out=$(virsh start cxl-vm-2 2>&1)
src=$?
if [ $src -ne 0 ] && echo "$out" | grep -q "vcxl hook: domain cxl-vm-2: vcxl-server dev0 already runs for domain cxl-vm (pid $SPID)" &&
	[ "$(virsh domstate cxl-vm-2 2> /dev/null)" = "shut off" ] && alive "$SPID" && alive "$QPID" &&
	[ "$("$VCXL" status "$SOCK" --json 2> /dev/null | python3 -c 'import json,sys; print(json.load(sys.stdin)["devices"][0]["connected"])')" = True ]; then
	tap OK "a second domain naming dev0 is refused by the hook while cxl-vm runs; cxl-vm's server and QEMU untouched"
else
	tap FAIL "a second domain naming dev0 is refused by the hook while cxl-vm runs (virsh status $src)"
fi
echo "$out" | grep -o 'vcxl hook: .*' | diag
virsh -q undefine cxl-vm-2 > /dev/null 2>&1

# ---- destroy: the hook stops the server ----
ts=$(now)
if out=$(virsh destroy cxl-vm 2>&1); then
	tap OK "virsh destroy cxl-vm: $(since "$ts") s"
else
	tap FAIL "virsh destroy cxl-vm"
	echo "$out" | diag
fi
if ! alive "$QPID" && ! alive "$SPID" && [ ! -e "$RUNDIR" ]; then
	tap OK "QEMU gone, and the hook's release stopped the server ($RUNDIR removed)"
else
	tap FAIL "QEMU gone, and the hook's release stopped the server (QEMU $QPID alive: $(alive "$QPID" && echo yes || echo no), server $SPID alive: $(alive "$SPID" && echo yes || echo no), $RUNDIR $([ -e "$RUNDIR" ] && echo exists || echo absent))"
fi
if grep -a -q -i -E 'protocol error' /var/log/vcxl/dev0.log; then
	tap FAIL "no protocol error in the server's log"
	grep -a -i 'protocol error' /var/log/vcxl/dev0.log | head -5 | diag
else
	tap OK "no protocol error in the server's log"
fi
if out=$(virsh undefine cxl-vm 2>&1) && [ -z "$(virsh list --all --name | tr -d '\n')" ]; then
	tap OK "virsh undefine cxl-vm: no domain left"
else
	tap FAIL "virsh undefine cxl-vm: no domain left"
	echo "$out" | diag
fi

# ---- a domain whose server cannot start: refused with the hook's message, no QEMU ----
sed -e "s|<name>cxl-vm</name>|<name>cxl-vm-bad</name>|" -e "s|instance='dev0'|instance='nodev'|" \
	-e "s|/run/vcxl/dev0/|/run/vcxl/nodev/|" "$T/cxl-vm.xml" > "$T/cxl-vm-bad.xml"
virsh -q define "$T/cxl-vm-bad.xml" > /dev/null 2>&1
out=$(virsh start cxl-vm-bad 2>&1)
src=$?
if [ $src -ne 0 ] && echo "$out" | grep -q 'vcxl hook: domain cxl-vm-bad: vcxl-server nodev exited' &&
	[ "$(virsh domstate cxl-vm-bad 2> /dev/null)" = "shut off" ] && [ ! -e /run/vcxl/nodev ]; then
	tap OK "a domain whose server cannot start (no nodev.conf) is refused with the hook's message, no QEMU"
else
	tap FAIL "a domain whose server cannot start is refused with the hook's message (virsh status $src)"
fi
echo "$out" | tr -s ' ' | head -3 | diag
virsh -q undefine cxl-vm-bad > /dev/null 2>&1

# ---- the hook's systemd mode, with a stand-in systemctl that logs its arguments ----
cat > "$T/fakebin/systemctl" << EOF
#!/bin/sh
echo "\$*" >> "$T/systemctl.log"
case "\$1" in is-active) echo "\${FAKE_ACTIVE:-active}"; [ "\${FAKE_ACTIVE:-active}" = active ] ;; esac
EOF
chmod 0755 "$T/fakebin/systemctl"
mkdir -p /run/systemd/system
echo "# no VCXL_SERVER_CMD: systemd's units" > /etc/default/vcxl
runhook() { PATH=$T/fakebin:$PATH /etc/libvirt/hooks/qemu "$@" < "$T/cxl-vm.xml"; }
: > "$T/systemctl.log"
hout=$(runhook cxl-vm prepare begin - 2>&1)
hrc=$?
if [ $hrc = 0 ] && [ -z "$hout" ] && [ "$(cat "$T/systemctl.log")" = "$(printf 'start vcxl-server@dev0.service\nis-active vcxl-server@dev0.service')" ]; then
	tap OK "hook, systemd: prepare runs systemctl start vcxl-server@dev0.service, then is-active"
else
	tap FAIL "hook, systemd: prepare (status $hrc, output '$hout', systemctl: $(tr '\n' ';' < "$T/systemctl.log"))"
fi
: > "$T/systemctl.log"
hout=$(runhook cxl-vm release end - 2>&1)
hrc=$?
if [ $hrc = 0 ] && [ "$(cat "$T/systemctl.log")" = "stop --no-block vcxl-server@dev0.service" ]; then
	tap OK "hook, systemd: release runs systemctl stop --no-block vcxl-server@dev0.service"
else
	tap FAIL "hook, systemd: release (output '$hout', systemctl: $(tr '\n' ';' < "$T/systemctl.log"))"
fi
hout=$(FAKE_ACTIVE=inactive runhook cxl-vm prepare begin - 2>&1)
hrc=$?
if [ $hrc = 1 ] && echo "$hout" | grep -q 'vcxl-server@dev0.service is inactive after systemctl start (is /etc/vcxl/dev0.conf there?)'; then
	tap OK "hook, systemd: a unit that does not come up fails prepare: $hout"
else
	tap FAIL "hook, systemd: a unit that does not come up fails prepare (status $hrc, '$hout')"
fi
: > "$T/systemctl.log"
hout=$(runhook cxl-vm migrate begin - 2>&1)
hrc=$?
hout2=$(echo '<domain><name>plain</name></domain>' | PATH=$T/fakebin:$PATH /etc/libvirt/hooks/qemu plain prepare begin - 2>&1)
hrc2=$?
if [ $hrc = 0 ] && [ -z "$hout" ] && [ $hrc2 = 0 ] && [ -z "$hout2" ] && [ ! -s "$T/systemctl.log" ]; then
	tap OK "hook: other operations (migrate) and domains without vcxl metadata: nothing run, nothing printed"
else
	tap FAIL "hook: other operations and plain domains (migrate: $hrc '$hout'; plain: $hrc2 '$hout2')"
fi
rmdir /run/systemd/system /run/systemd

# ---- the daemons stopped by pid ----
ts=$(now)
lp=$(daemon_pid libvirtd)
vp=$(daemon_pid virtlogd)
stop_pid "$lp" 20
stop_pid "$vp" 10
if ! alive "$lp" && ! alive "$vp"; then
	tap OK "libvirtd (pid $lp) and virtlogd (pid $vp) stopped by pid with SIGTERM ($(since "$ts") s)"
else
	tap FAIL "libvirtd (pid $lp) and virtlogd (pid $vp) stopped by pid"
fi
exit 0
