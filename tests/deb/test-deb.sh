#!/bin/sh
# SPDX-License-Identifier: BSD-3-Clause
# The Debian package: dpkg-buildpackage -us -uc -b on a copy of the source tree
# (Debian's build flags, werror on: the package build's warning check),
# lintian with no error, then the binary packages extracted with dpkg -x into
# a temporary root and run from there: vcxl-server --version, vcxl --help, and
# vcxl info against the installed server. TAP.
# Usage: test-deb.sh SOURCE_DIR
set -u
src=$1
work=$(mktemp -d /tmp/vcxl-deb.XXXXXX)
srv=
cleanup() {
	[ -n "$srv" ] && kill "$srv" 2>/dev/null && wait "$srv" 2>/dev/null
	rm -rf "$work"
}
trap cleanup EXIT
n=0
fails=0
ok() { # rc description
	n=$((n + 1))
	if [ "$1" -eq 0 ]; then echo "ok $n - $2"; else echo "not ok $n - $2"; fails=$((fails + 1)); fi
}
for t in dpkg-buildpackage dh lintian; do
	if ! command -v $t >/dev/null; then
		echo "1..0 # SKIP $t not installed (make deps installs it)"
		exit 0
	fi
done

version=$(dpkg-parsechangelog -l "$src/debian/changelog" -S Version)
tree=$work/vcxl-$version
mkdir -p "$tree"
if git -C "$src" rev-parse --git-dir >/dev/null 2>&1; then
	(cd "$src" && git ls-files -co --exclude-standard) | (cd "$src" && tar -cf - -T -) |
		tar -x -C "$tree"
else
	(cd "$src" && tar -cf - --exclude='./build*' --exclude='./obj-*' .) | tar -x -C "$tree"
fi
(cd "$tree" && DEB_BUILD_OPTIONS="nocheck parallel=2" dpkg-buildpackage -us -uc -b) \
	>"$work/build.log" 2>&1
rc=$?
ok $rc "dpkg-buildpackage -us -uc -b"
[ $rc -ne 0 ] && grep -E 'error|warning' "$work/build.log" | head -20 | sed 's/^/# /'
warnings=$(grep -cE '(warning|error): ' "$work/build.log")
[ "$warnings" -eq 0 ]
ok $? "the package build is warning-free with Debian's flags ($warnings compiler diagnostics)"

arch=$(dpkg --print-architecture)
for p in vcxl libvcxl-client0 libvcxl-client-dev; do
	[ -f "$work/${p}_${version}_$arch.deb" ]
	ok $? "binary package $p built"
done

lint=$(lintian --no-cfg "$work/vcxl_${version}_$arch.changes" 2>&1 | grep -v 'root privileges')
echo "$lint" | grep -q '^E: '
[ $? -ne 0 ]
ok $? "lintian: no errors ($(echo "$lint" | grep -c '^W: ') warnings)"
[ -n "$lint" ] && echo "$lint" | sed 's/^/# /'

root=$work/root
for d in "$work"/*_"$version"_"$arch".deb; do
	case $d in *-dbgsym_*) continue ;; esac
	dpkg -x "$d" "$root"
done
export LD_LIBRARY_PATH="$root/usr/lib/$(dpkg-architecture -qDEB_HOST_MULTIARCH)"
v=$("$root/usr/bin/vcxl-server" --version 2>&1)
[ "$v" = "vcxl-server $version" ]
ok $? "installed vcxl-server --version: $v"
"$root/usr/bin/vcxl" --help | grep -q '^Usage: vcxl'
ok $? "installed vcxl --help"
ldd "$root/usr/bin/vcxl" | grep -q "libvcxl-client.so.0 => $root"
ok $? "installed vcxl uses the packaged libvcxl-client.so.0"
sock=$work/vcxl.sock
# readiness: READY=1 on $NOTIFY_SOCKET once the server's sockets listen (a
# socket file alone may not listen yet); the receiver's file exists once bound
python3 "$src/tests/scripts/notify-wait.py" "$work/notify.sock" 60 &
rdy=$!
i=0
while [ ! -S "$work/notify.sock" ] && [ $i -lt 1200 ]; do sleep 0.05; i=$((i + 1)); done
NOTIFY_SOCKET=$work/notify.sock "$root/usr/bin/vcxl-server" --socket "$sock" --log-level warn \
	2>"$work/server.log" &
srv=$!
wait "$rdy"
ok $? "installed vcxl-server announced readiness (READY=1 on \$NOTIFY_SOCKET)"
out=$("$root/usr/bin/vcxl" info "$sock" 2>&1)
echo "$out" | grep -q '^flags: .*cxl' && echo "$out" | grep -q '(CXL region)'
ok $? "installed vcxl info against the installed vcxl-server: a CXL device and its region"
[ $fails -ne 0 ] && echo "$out" | sed 's/^/# /'
kill "$srv"
wait "$srv"
ok $? "installed server exits 0 on SIGTERM"
srv=
echo "1..$n"
[ $fails -eq 0 ]
