#!/bin/sh
# SPDX-License-Identifier: BSD-3-Clause
# meson install into a temporary root, then use what was installed: the
# binaries (run against each other), the client library through its header and
# pkg-config file, the man pages (groff -ww), bash completion, and the systemd
# template unit (systemd-analyze verify). TAP.
# Usage: test-install.sh BUILD_DIR SOURCE_DIR
set -u
build=$1
src=$2
root=$(mktemp -d /tmp/vcxl-install.XXXXXX)
srv=
cleanup() {
	[ -n "$srv" ] && kill "$srv" 2>/dev/null && wait "$srv" 2>/dev/null
	rm -rf "$root"
}
trap cleanup EXIT
n=0
fails=0
ok() { # cond-rc description
	n=$((n + 1))
	if [ "$1" -eq 0 ]; then echo "ok $n - $2"; else echo "not ok $n - $2"; fails=$((fails + 1)); fi
}

meson install -C "$build" --destdir "$root" --no-rebuild --quiet >"$root.log" 2>&1
ok $? "meson install --destdir"
cat "$root.log" | sed 's/^/# /'
rm -f "$root.log"
prefix=$(meson introspect "$build" --buildoptions | python3 -c \
	'import json,sys; print(next(o["value"] for o in json.load(sys.stdin) if o["name"]=="prefix"))')
libdir=$(meson introspect "$build" --buildoptions | python3 -c \
	'import json,sys; print(next(o["value"] for o in json.load(sys.stdin) if o["name"]=="libdir"))')
P=$root$prefix
case $libdir in /*) L=$root$libdir ;; *) L=$P/$libdir ;; esac

for f in bin/vcxl bin/vcxl-server; do
	[ -x "$P/$f" ]
	ok $? "$f installed, executable"
done
for f in bin/vcxl bin/vcxl-server; do
	readelf -d "$P/$f" 2>/dev/null | grep -Eq 'FLAGS.*BIND_NOW|FLAGS_1.* NOW' &&
		readelf -lW "$P/$f" 2>/dev/null | grep -q GNU_RELRO
	ok $? "$f linked with full RELRO (RELRO, BIND_NOW)"
done
soname=$(objdump -p "$L/libvcxl-client.so.0" 2>/dev/null | awk '/SONAME/ {print $2}')
[ "$soname" = libvcxl-client.so.0 ]
ok $? "libvcxl-client.so.0 installed, SONAME $soname"
[ -L "$L/libvcxl-client.so" ]
ok $? "libvcxl-client.so development link"
exported=$(nm -D --defined-only "$L/libvcxl-client.so.0" | awk '$2 == "T" {print $3}')
echo "$exported" | grep -qv '^vcxl_client_'
[ $? -ne 0 ] && [ -n "$exported" ]
ok $? "only vcxl_client_* exported ($(echo "$exported" | wc -l) functions)"
ls "$P/include/vcxl" | tr '\n' ' ' | grep -qx 'client.h uapi.h vfio_user.h '
ok $? "public headers: client.h uapi.h vfio_user.h only"

export PKG_CONFIG_PATH="$L/pkgconfig" PKG_CONFIG_SYSROOT_DIR="$root"
flags=$(pkg-config --cflags --libs vcxl-client 2>&1)
ok $? "pkg-config vcxl-client: $flags"
${CC:-cc} -std=gnu11 -Wall -Wextra -Werror -o "$root/client_link" "$src/tests/install/client_link.c" \
	$flags 2>&1 | sed 's/^/# /'
[ -x "$root/client_link" ]
ok $? "a client program builds against the installed header and library"

export LD_LIBRARY_PATH="$L"
v=$("$P/bin/vcxl-server" --version)
echo "$v" | grep -q '^vcxl-server [0-9]'
ok $? "installed vcxl-server --version: $v"
"$P/bin/vcxl" --help | grep -q '^Usage: vcxl'
ok $? "installed vcxl --help"
sock=$root/vcxl.sock
# readiness: READY=1 on $NOTIFY_SOCKET once the server's sockets listen (a
# socket file alone may not listen yet); the receiver's file exists once bound
python3 "$src/tests/scripts/notify-wait.py" "$root/notify.sock" 60 &
rdy=$!
i=0
while [ ! -S "$root/notify.sock" ] && [ $i -lt 1200 ]; do sleep 0.05; i=$((i + 1)); done
NOTIFY_SOCKET=$root/notify.sock "$P/bin/vcxl-server" --socket "$sock" --log-level warn \
	2>"$root/server.log" &
srv=$!
wait "$rdy"
ok $? "installed vcxl-server announced readiness (READY=1 on \$NOTIFY_SOCKET)"
out=$("$P/bin/vcxl" info "$sock" --json 2>&1)
echo "$out" | python3 -c 'import json,sys; j=json.load(sys.stdin); sys.exit(0 if "cxl" in j["flags"] and j["cxl"]["region_size"] > 0 else 1)'
ok $? "installed vcxl info --json against the installed server: a CXL device with a region"
out=$("$root/client_link" "$sock" 2>&1)
echo "$out" | grep -q 'cxl 1'
ok $? "the client program through libvcxl-client: $out"
kill "$srv"
wait "$srv"
ok $? "server exits 0 on SIGTERM"
srv=

for m in man1/vcxl.1 man8/vcxl-server.8; do
	w=$(groff -man -Tutf8 -ww -z "$P/share/man/$m" 2>&1)
	[ -z "$w" ]
	ok $? "$m renders without groff warnings"
done

comp=$(find "$root" -path '*bash-completion/completions/vcxl' | head -1)
bc=/usr/share/bash-completion/bash_completion
if [ -r "$bc" ] && [ -n "$comp" ]; then
	r=$(bash -c ". $bc; . '$comp'; COMP_WORDS=(vcxl co); COMP_CWORD=1; COMP_LINE='vcxl co'; COMP_POINT=7;
		_vcxl; echo \"\${COMPREPLY[*]}\"" 2>&1)
	[ "$r" = "commit" ]
	ok $? "bash completion: 'vcxl co<TAB>' -> $r"
	r=$(bash -c ". $bc; . '$comp'; COMP_WORDS=(vcxl mbox s --ir); COMP_CWORD=3; COMP_LINE='vcxl mbox s --ir';
		COMP_POINT=16; _vcxl; echo \"\${COMPREPLY[*]}\"" 2>&1)
	[ "$r" = "--irq" ]
	ok $? "bash completion: 'vcxl mbox s --ir<TAB>' -> $r"
else
	echo "ok $((n + 1)) # SKIP bash-completion not installed"
	n=$((n + 1))
fi

unit=$(find "$root" -name 'vcxl-server@.service' | head -1)
if command -v systemd-analyze >/dev/null && [ -n "$unit" ]; then
	grep -q "^ExecStart=$prefix/bin/vcxl-server --config " "$unit"
	ok $? "unit runs $prefix/bin/vcxl-server --config <sysconfdir>/vcxl/%i.conf"
	# verify an instance, with ExecStart pointing into the temporary root
	mkdir -p "$root/units"
	sed "s#^ExecStart=$prefix#ExecStart=$P#" "$unit" >"$root/units/vcxl-server@test.service"
	w=$(cd "$root/units" && systemd-analyze verify --man=no ./vcxl-server@test.service 2>&1)
	rc=$?
	[ $rc -eq 0 ] && [ -z "$w" ]
	ok $? "systemd-analyze verify vcxl-server@test.service: clean"
	[ -n "$w" ] && echo "$w" | sed 's/^/# /'
else
	echo "ok $((n + 1)) # SKIP systemd-analyze not found"
	n=$((n + 1))
fi
echo "1..$n"
[ $fails -eq 0 ]
