#!/bin/bash
# SPDX-License-Identifier: BSD-3-Clause
# The vcxl-qemu package (make qemu-deb, scripts/qemu-deb.sh): built from the CXL-aware QEMU
# that make qemu cached (make test's e2e-prep builds it before any test; built here
# otherwise), lintian with no error and no warning, its contents, then extracted with
# dpkg -x into a temporary root and run from there without any -L option: its firmware
# path, a q35 machine with a NIC (SeaBIOS, the iPXE ROM), and the e2e-cxlmem guest's first
# boot (tests/e2e/cxlmem-lib.sh) through vcxl-server: CXL.mem reached in the guest and
# checked on the host. TAP. Skips visibly (1..0 # SKIP) without dpkg-buildpackage, dh or
# lintian, or when the CXL-aware QEMU cannot be built (VCXL_E2E_BUILD_QEMU=0 never builds).
# Usage: test-qemu-deb.sh BUILDDIR   (logs: BUILDDIR/deb-qemu/)
set -u
HERE=$(cd "$(dirname "$0")" && pwd)
SRC=$(cd "$HERE/../.." && pwd)
CXLMEM_BUILD=$(cd "${1:-build}" && pwd)
CXLMEM_LOGDIR=$CXLMEM_BUILD/deb-qemu
mkdir -p "$CXLMEM_LOGDIR"
# shellcheck source=tests/e2e/cxlmem-lib.sh
. "$SRC/tests/e2e/cxlmem-lib.sh"
work=$(mktemp -d /tmp/vcxl-qemu-deb-test.XXXXXX)
trap 'cxlmem_stop; rm -rf "$work"' EXIT
trap 'cxlmem_stop; rm -rf "$work"; exit 130' INT TERM

n=0
fails=0
ok() { # ok RC DESCRIPTION
	n=$((n + 1))
	if [ "$1" -eq 0 ]; then echo "ok $n - $2"; else echo "not ok $n - $2"; fails=$((fails + 1)); fi
}
skip() { n=$((n + 1)); echo "ok $n - $1 # SKIP $2"; }
diag() { sed 's/^/# /'; }
skip_all() {
	echo "SKIP deb-qemu: $1" >&2
	echo "1..0 # SKIP $1"
	exit 0
}
for t in dpkg-buildpackage dh lintian; do
	command -v $t >/dev/null || skip_all "$t not installed (make deps installs it)"
done
[ -x "$CXLMEM_BUILD/src/tools/vcxl-server" ] || { echo "Bail out! vcxl-server is not built"; exit 1; }

# the CXL-aware QEMU as make qemu caches it (cxlmem_qemu: VCXL_E2E_BUILD_QEMU=0 skips;
# VCXL_QEMU_CXL is not used here, the package is made from the cache)
unset VCXL_QEMU_CXL
t0=$(date +%s)
cxlmem_qemu || skip_all "no CXL-aware QEMU: $CXLMEM_WHY"
t1=$(date +%s)
deb=$("$SRC/scripts/qemu-deb.sh" "$work/out" 2>"$CXLMEM_LOGDIR/qemu-deb.log" | tail -n 1)
rc=$?
t2=$(date +%s)
[ $rc -eq 0 ] && [ -f "$deb" ]
ok $? "make qemu-deb built $(basename "${deb:-none}") from the cached build ($((t2 - t1)) s; QEMU found or built in $((t1 - t0)) s)"
if [ ! -f "$deb" ]; then
	diag <"$CXLMEM_LOGDIR/qemu-deb.log"
	echo "1..$n"
	exit 1
fi
cp "$work/out/vcxl-qemu-build.log" "$CXLMEM_LOGDIR/" 2>/dev/null

lint=$(lintian --no-cfg -I "$work"/out/vcxl-qemu_*.changes 2>&1 | grep -v 'root privileges')
nerr=$(echo "$lint" | grep -c '^E: ')
nwarn=$(echo "$lint" | grep -c '^W: ')
[ "$nerr" -eq 0 ] && [ "$nwarn" -eq 0 ]
ok $? "lintian: no errors, no warnings ($nerr errors, $nwarn warnings)"
[ -n "$lint" ] && echo "$lint" | diag

ctl=$(dpkg-deb -f "$deb" Depends)
echo "# Depends: $ctl"
for p in seabios ipxe-qemu qemu-system-data; do
	echo "$ctl" | tr ',' '\n' | grep -q "^ *$p\b"
	ok $? "Depends: $p (firmware)"
done

root=$work/root
dpkg -x "$deb" "$root"
q=$root/usr/bin/vcxl-qemu-system-x86_64
[ -x "$root/usr/libexec/vcxl/qemu-system-x86_64" ] &&
	[ "$(readlink "$q")" = ../libexec/vcxl/qemu-system-x86_64 ]
ok $? "/usr/libexec/vcxl/qemu-system-x86_64 installed, run as /usr/bin/vcxl-qemu-system-x86_64 (a link)"
other=$(cd "$root" && find . ! -type d | grep -E '(^|/)qemu-system-[^/]*$' | grep -v '^./usr/libexec/vcxl/qemu-system-x86_64$')
[ -z "$other" ]
ok $? "nothing named qemu-system-* elsewhere (the distribution's stays in charge)${other:+: $other}"
[ -f "$root/usr/share/man/man1/vcxl-qemu-system-x86_64.1.gz" ]
ok $? "man page vcxl-qemu-system-x86_64(1)"
doc=$root/usr/share/doc/vcxl-qemu
same=0
for p in "$SRC"/vmm/qemu/*.patch; do
	cmp -s "$p" "$doc/patches/$(basename "$p")" || same=1
done
[ "$(find "$doc/patches" -name '*.patch' | wc -l)" -eq "$(find "$SRC/vmm/qemu" -name '*.patch' | wc -l)" ] || same=1
ok $same "the patch series in /usr/share/doc/vcxl-qemu/patches/ ($(find "$doc/patches" -name '*.patch' | wc -l) patches, as vmm/qemu/)"
head -n 1 "$doc/copyright" | grep -q '^Format: https://www.debian.org/doc/packaging-manuals/copyright-format/1.0/' &&
	grep -q '^License: GPL-2$' "$doc/copyright" && grep -q '^Configure: .*--firmwarepath=' "$doc/build-info"
ok $? "copyright (DEP-5, GPL-2) and build-info (source, configure line) in /usr/share/doc/vcxl-qemu"

fw=$("$q" -L help 2>&1)
echo "$fw" | diag
[ "$(echo "$fw" | head -n 3 | tr '\n' :)" = /usr/share/qemu:/usr/share/seabios:/usr/lib/ipxe/qemu: ]
ok $? "the installed QEMU's firmware path: /usr/share/qemu, /usr/share/seabios, /usr/lib/ipxe/qemu"
"$q" -version | head -n 1 | grep -q '^QEMU emulator version .*(vcxl)$'
ok $? "installed QEMU -version: $("$q" -version | head -n 1)"

# SeaBIOS and an iPXE option ROM found without -L: the machine is built (firmware loaded,
# the NIC's ROM read at realize) and quits from the monitor
if [ -r /usr/lib/ipxe/qemu/efi-virtio.rom ] || [ -r /usr/share/qemu/efi-virtio.rom ]; then
	out=$(echo quit | timeout 60 "$q" -nodefaults -machine q35 -accel tcg -display none -S \
		-netdev user,id=n0 -device virtio-net-pci,netdev=n0 -monitor stdio 2>&1)
	rc=$?
	[ $rc -eq 0 ] && ! echo "$out" | grep -q -i -E 'could not|failed|error'
	ok $? "installed QEMU starts q35 with a virtio-net NIC, no -L (bios-256k.bin, efi-virtio.rom; rc=$rc)"
	[ $rc -ne 0 ] && echo "$out" | diag
else
	skip "installed QEMU starts q35 with a virtio-net NIC, no -L" "ipxe-qemu is not installed (make deps)"
fi

# The e2e-cxlmem guest's first boot with the installed binary
export VCXL_QEMU_CXL=$q
cxlmem_qemu
ok $? "the installed QEMU is CXL-aware (vfio-user-pci has x-cxl)${CXLMEM_WHY:+: $CXLMEM_WHY}"
[ ${#CXLMEM_FW[@]} -eq 0 ]
ok $? "the e2e library passes it no -L (${CXLMEM_FW[*]:-none})"
if ! cxlmem_guest "$CXLMEM_LOGDIR/guest" >"$CXLMEM_LOGDIR/build-guest.log" 2>&1; then
	diag <"$CXLMEM_LOGDIR/build-guest.log"
	if grep -q -E 'apt-get download|cannot find a kernel' "$CXLMEM_LOGDIR/build-guest.log"; then
		skip "the e2e guest boots with the installed QEMU" "cannot fetch the guest kernel"
	else
		ok 1 "the e2e guest was built"
	fi
	echo "1..$n"
	[ $fails -eq 0 ]
	exit
fi
name=proof
cxlmem_start_server "$name"
ok $? "vcxl-server (model, 1 GiB seeded --backing, 2 decoders) listens"
ts=$(date +%s)
cxlmem_boot "$name" ""
rc=$?
con=$CXLMEM_LOGDIR/$name.console.log
! grep -q -- ' -L ' "$CXLMEM_LOGDIR/$name.qemu-cmd.log"
ok $? "the guest's QEMU command line has no -L"
grep -a -q '=== VCXL GUEST DONE ===' "$con" && [ $rc -eq 0 ]
ok $? "the installed QEMU booted the e2e guest and exited cleanly ($(($(date +%s) - ts)) s, rc=$rc)"
res=$(grep -a -E '^RESULT: ' "$con" | tr -d '\r')
echo "$res" | grep -q -E '^RESULT: [0-9]+ ok, 0 failed'
ok $? "the guest reached device memory through the CXL window: ${res:-no RESULT line}"
[ $fails -ne 0 ] && grep -a -E '^STEP .*: FAIL' "$con" | diag
nchk=0
nbad=0
while IFS= read -r line; do
	nchk=$((nchk + 1))
	case $line in ok*) ;; *) nbad=$((nbad + 1)) && echo "# host: $line" ;; esac
done < <(cxlmem_hostcheck "$con" "$CXLMEM_TMP/devmem.img")
[ "$nchk" -ge 9 ] && [ "$nbad" -eq 0 ]
ok $? "the host found the guest's writes in device memory ($nchk checks, $nbad failed)"
cxlmem_stop

echo "1..$n"
[ $fails -eq 0 ]
