#!/bin/sh
# SPDX-License-Identifier: BSD-3-Clause
# docs/libvirt.md's domain XML is valid for libvirt (virt-xml-validate against
# libvirt's domain schema) and attaches vcxl the way docs/qemu.md does. TAP.
# Usage: test-libvirt.sh SOURCE_DIR
set -u
doc=$1/docs/libvirt.md
tmp=$(mktemp -d /tmp/vcxl-libvirt.XXXXXX)
trap 'rm -rf "$tmp"' EXIT
if ! command -v virt-xml-validate >/dev/null; then
	echo "1..0 # SKIP virt-xml-validate not installed (libvirt-clients; make deps)"
	exit 0
fi
n=0
fails=0
ok() {
	n=$((n + 1))
	if [ "$1" -eq 0 ]; then echo "ok $n - $2"; else echo "not ok $n - $2"; fails=$((fails + 1)); fi
}
xml=$tmp/cxl-vm.xml
sed -n '/<!-- vcxl-libvirt-domain: begin -->/,/<!-- vcxl-libvirt-domain: end -->/p' "$doc" |
	sed '1,2d;$d' | sed '$d' >"$xml"
head -1 "$xml" | grep -q '^<domain ' && tail -1 "$xml" | grep -q '^</domain>$'
ok $? "the domain XML block is found in docs/libvirt.md ($(wc -l <"$xml") lines)"
out=$(virt-xml-validate "$xml" domain 2>&1)
rc=$?
ok $rc "virt-xml-validate: $out"
# a broken copy must fail: the validation is real
sed 's/<vcpu>2<\/vcpu>/<vcpu>two<\/vcpu>/' "$xml" >"$tmp/bad.xml"
virt-xml-validate "$tmp/bad.xml" domain >/dev/null 2>&1
[ $? -ne 0 ]
ok $? "a broken copy (vcpu 'two') fails validation"
grep -q "<source type='memfd'/>" "$xml" && grep -q "<access mode='shared'/>" "$xml"
ok $? "guest RAM is a shared memfd (vfio-user DMA through its fd)"
grep -q '"driver":"vfio-user-pci","socket":{"type":"unix","path":"/run/vcxl/dev0/vcxl.sock"},"bus":"rp0"' "$xml" &&
	grep -q "id=rp0" "$xml" && grep -q "bus=cxl.1" "$xml" && grep -q "id=cxl.1" "$xml" &&
	grep -q "cxl-fmw.0.targets.0=cxl.1" "$xml" && grep -q "'cxl=on'" "$xml"
ok $? "vfio-user-pci on vcxl-server@dev0's socket under rp0 of pxb-cxl cxl.1, cxl=on, a window on cxl.1"
python3 -c 'import json,re,sys
x=open(sys.argv[1]).read()
for v in re.findall(r"<qemu:arg value=\x27(\{.*\})\x27/>", x): json.loads(v)' "$xml"
ok $? "the JSON -device argument parses"
echo "1..$n"
[ $fails -eq 0 ]
