#!/bin/sh
# SPDX-License-Identifier: BSD-3-Clause
# /init of the e2e-type3 guest (busybox ash, Debian's 6.12 kernel or the 7.2 guest
# kernel with everything built in, ndctl's cxl).
# The stock CXL stack drives vcxl's Type-3 personality: cxl_acpi + cxl_pci +
# cxl_mem enumerate it, `cxl create-region -t ram` commits a region through its
# endpoint decoder, `cxl destroy-region` decommits it. One "T3STEP name: ok|FAIL
# detail" line per step, "T3FACT key=value" lines for the host, sections framed
# by "=== NAME ===" lines. kmem is loaded only with vcxl.kmem=1 on the kernel
# command line (run-e2e-type3.sh kmem, with the CXL-aware QEMU of vmm/qemu/, which
# maps the region where the guest committed it): then the region is not destroyed
# but onlined as system RAM through dax kmem, its new NUMA node checked, and
# /bin/numa-guest allocates on that node (mbind) and writes and verifies it.
# shellcheck source=tests/e2e/guest/e2e-init.sh
. /lib/e2e-init.sh

step() { # step NAME ok|FAIL DETAIL
	echo "T3STEP $1: $2 ${3:-}"
}
# wait_for PATH SECONDS: until PATH exists
wait_for() {
	i=0
	while [ ! -e "$1" ] && [ $i -lt $(($2 * 10)) ]; do
		sleep 0.1
		i=$((i + 1))
	done
	[ -e "$1" ]
}
# json_str KEY < JSON: first string value of "KEY"
json_str() { sed -n "s/.*\"$1\":\"\([^\"]*\)\".*/\1/p" | head -1; }
# json_num KEY < JSON: first number value of "KEY"
json_num() { sed -n "s/.*\"$1\":\([0-9x]*\).*/\1/p" | head -1; }

# w VALUE FILE: write a sysfs attribute, say which one failed
w() {
	echo "$1" > "$2" && return 0
	echo "sysfs: writing '$1' to $2 failed" >&2
	return 1
}
# sysfs_ram_region: a ram region over all of mem0 through $EPD under $ROOT; prints
# {"region":"regionN"} on success
sysfs_ram_region() {
	rd=/sys/bus/cxl/devices/$ROOT
	ed=/sys/bus/cxl/devices/$EPD
	sz=$(cat /sys/bus/cxl/devices/mem0/ram/size)
	r=$(cat "$rd/create_ram_region") || return 1
	echo "$r" > "$rd/create_ram_region" || return 1
	R=/sys/bus/cxl/devices/$r
	w "$(cat "$rd/interleave_granularity")" "$R/interleave_granularity" &&
		w 1 "$R/interleave_ways" &&
		w "$sz" "$R/size" &&
		w ram "$ed/mode" &&
		w "$sz" "$ed/dpa_size" &&
		w "$EPD" "$R/target0" &&
		w 1 "$R/commit" &&
		cxl enable-region "$r" || return 1
	echo "{\"region\":\"$r\"}"
}

KMEM=$(tr ' ' '\n' < /proc/cmdline | sed -n 's/^vcxl\.kmem=//p' | tail -1)
# vcxl.dmesg=all: the whole kernel log at the end (with dyndbg="file drivers/cxl/* +p" on
# a kernel with CONFIG_DYNAMIC_DEBUG, the CXL core's decisions), not only its CXL lines
DMESG=$(tr ' ' '\n' < /proc/cmdline | sed -n 's/^vcxl\.dmesg=//p' | tail -1)
# NUMA_MIB: how much of the node numa-guest allocates (most of a 256 MiB region)
NUMA_MIB=$(tr ' ' '\n' < /proc/cmdline | sed -n 's/^vcxl\.numa_mib=//p' | tail -1)

# kmem_online REGION: the region's dax device as system RAM (device_dax -> kmem), its
# memory blocks online (memhp_default_state on the command line, or by hand), the node
# checked, numa-guest run on it. Steps: dax-device, kmem, numa-node, numa-guest's own.
kmem_online() {
	dax=""
	i=0
	while [ -z "$dax" ] && [ $i -lt 100 ]; do
		for d in /sys/bus/dax/devices/dax*; do
			[ -e "$d" ] && dax=$(basename "$d") && break
		done
		[ -n "$dax" ] || sleep 0.1
		i=$((i + 1))
	done
	if [ -z "$dax" ]; then
		step dax-device FAIL "no dax device for $1 (dax_cxl)"
		return
	fi
	dsz=$(cat "/sys/bus/dax/devices/$dax/size")
	node=$(cat "/sys/bus/dax/devices/$dax/target_node" 2>/dev/null)
	# the driver the kernel bound it to by itself (device_dax, or kmem for a region whose
	# dax device the kernel marks for system RAM)
	drv0=$(basename "$(readlink "/sys/bus/dax/devices/$dax/driver" 2>/dev/null)" 2>/dev/null)
	step dax-device ok "$dax size $dsz target_node $node, bound to ${drv0:-no driver} (dax_cxl)"
	echo "T3FACT dax=$dax size=$dsz target_node=$node driver=${drv0:-none}"
	echo "$dax" > /sys/bus/dax/drivers/device_dax/unbind 2>/dev/null
	echo "$dax" > /sys/bus/dax/drivers/kmem/new_id 2>/dev/null
	[ -e "/sys/bus/dax/drivers/kmem/$dax" ] || echo "$dax" > /sys/bus/dax/drivers/kmem/bind
	if [ ! -e "/sys/bus/dax/drivers/kmem/$dax" ]; then
		step kmem FAIL "$dax not bound to kmem"
		return
	fi
	# online what auto-online left offline (movable: it is all hot-added)
	for b in /sys/devices/system/node/node"$node"/memory*; do
		[ -e "$b/state" ] || continue
		[ "$(cat "$b/state")" = online ] || echo online_movable > "$b/state" 2>/dev/null
	done
	nblk=0
	non=0
	for b in /sys/devices/system/node/node"$node"/memory*; do
		[ -e "$b/state" ] || continue
		nblk=$((nblk + 1))
		[ "$(cat "$b/state")" = online ] && non=$((non + 1))
	done
	grep -i -E 'System RAM|dax|CXL' /proc/iomem | sed 's/^/  iomem: /'
	if [ "$nblk" -gt 0 ] && [ "$non" = "$nblk" ]; then
		step kmem ok "$dax bound to kmem: $non of $nblk memory blocks of node $node online"
	else
		step kmem FAIL "$dax bound to kmem: $non of $nblk memory blocks of node $node online"
	fi
	ls -d /sys/devices/system/node/node* | sed 's/^/  node: /'
	mt=$(sed -n 's/.*MemTotal: *\([0-9]*\) kB/\1/p' "/sys/devices/system/node/node$node/meminfo")
	echo "T3FACT node=$node memtotal_kb=$mt region_bytes=$dsz"
	if [ -n "$mt" ] && [ "$node" != 0 ] && [ $((mt * 1024)) -eq "$dsz" ]; then
		step numa-node ok "node $node appeared with MemTotal $mt kB = the region's $dsz bytes"
	else
		step numa-node FAIL "node $node MemTotal ${mt:-?} kB, region $dsz bytes"
	fi
	sec "numa-guest $node ${NUMA_MIB:-200}"
	/bin/numa-guest "$node" "${NUMA_MIB:-200}" | sed -e 's/^STEP \([a-z-]*\)/T3STEP numa-\1/'
	grep -E 'MemTotal|MemFree|FilePages' "/sys/devices/system/node/node$node/meminfo" | sed 's/^/  /'
}

sec "VCXL T3 GUEST START"
uname -r
MODS="cxl_acpi cxl_pci cxl_mem dax_cxl device_dax"
[ "$KMEM" = 1 ] && MODS="$MODS kmem"
# a module the kernel has already (loaded, or built in: /sys/module/NAME) is not
# modprobe'd, nor any on a kernel without a module tree here (the 7.2 guest kernel of
# e2e-type3-7.2 has the whole CXL stack, DAX and kmem built in)
for m in $MODS; do
	if [ -e "/sys/module/$m" ]; then
		echo "module $m: built in or loaded"
	elif [ ! -d "/lib/modules/$(uname -r)" ]; then
		echo "module $m: no module tree for $(uname -r), assumed built in"
	else
		modprobe "$m" 2>&1 || echo "modprobe $m failed"
	fi
done

sec "lspci -vvv -d 8086:0d93"
lspci -vvv -nn -d 8086:0d93

# cxl_pci probes the memdev, cxl_mem adds its endpoint port (and its decoders)
if wait_for /sys/bus/cxl/devices/mem0 20; then
	step memdev ok "mem0 registered by cxl_pci"
else
	step memdev FAIL "no /sys/bus/cxl/devices/mem0 after 20 s"
fi
# the endpoint port whose uport is mem0, once it has its decoders
mem0_endpoint() {
	for e in /sys/bus/cxl/devices/endpoint*; do
		[ -e "$e/uport" ] || continue
		[ "$(basename "$(readlink -f "$e/uport")")" = mem0 ] || continue
		ls -d "$e"/decoder* > /dev/null 2>&1 && echo "$e" && return 0
	done
	return 1
}
EP=""
i=0
while [ $i -lt 200 ]; do
	EP=$(mem0_endpoint) && break
	sleep 0.1
	i=$((i + 1))
done
if [ -n "$EP" ]; then
	EPD=$(basename "$(ls -d "$EP"/decoder* | head -1)")
	step endpoint ok "$(basename "$EP") with decoder $EPD (cxl_mem)"
	echo "T3FACT endpoint_decoder=$EPD"
else
	EPD=""
	step endpoint FAIL "cxl_mem added no endpoint port with decoders"
fi

sec "cxl list -vvv"
cxl list -vvv > /tmp/list.json 2>&1
cat /tmp/list.json
sec "end cxl list -vvv"
MEMJS=$(cxl list -m mem0 2>/dev/null | tr -d ' \n')
if echo "$MEMJS" | grep -q '"memdev":"mem0"'; then
	step cxl-list ok "cxl list shows mem0 ram_size $(echo "$MEMJS" | json_num ram_size)"
else
	step cxl-list FAIL "cxl list -m mem0: $MEMJS"
fi
LISTJS=$(tr -d ' \n' < /tmp/list.json)
EPN=$(basename "${EP:-none}")
if [ -n "$EPD" ] && echo "$LISTJS" | grep -q "\"decoders:$EPN\":\[{\"decoder\":\"$EPD\""; then
	step cxl-list-decoders ok "cxl list -vvv shows mem0's $EPN with decoder $EPD"
else
	step cxl-list-decoders FAIL "cxl list -vvv has no decoders:$EPN with $EPD"
fi

# the root decoder cxl_acpi made of the CFMWS window
ROOT=$(cxl list -D -d root 2>/dev/null | tr -d ' \n' | json_str decoder)
[ -n "$ROOT" ] || ROOT=decoder0.0
echo "T3FACT root_decoder=$ROOT"

sec "cxl create-region"
# -s: ndctl 76 cannot size a ram region by itself ("unable to determine region size")
RAMSZ=$(cat /sys/bus/cxl/devices/mem0/ram/size)
cxl create-region -t ram -d "$ROOT" -m mem0 -s "$RAMSZ" > /tmp/region.json 2> /tmp/region.err
rc=$?
cat /tmp/region.json /tmp/region.err
HOW="cxl create-region -t ram -d $ROOT -m mem0 -s $RAMSZ"
# Debian 12's ndctl (76.1) says "region type 'ram' not supported yet" (and exits 0):
# then do what later ndctl versions do, through the kernel's region ABI
# (Documentation/ABI/testing/sysfs-bus-cxl), and enable it with `cxl enable-region`
if ! grep -q '"region"' /tmp/region.json && grep -q "'ram' not supported" /tmp/region.err; then
	echo "T3FACT create-region=sysfs (ndctl $(cxl --version) cannot create ram regions)"
	HOW="ndctl $(cxl --version) has no -t ram: region ABI in sysfs + cxl enable-region"
	sysfs_ram_region > /tmp/region.json 2> /tmp/region.err
	rc=$?
	cat /tmp/region.json /tmp/region.err
fi
RJS=$(tr -d ' \n' < /tmp/region.json)
REGION=$(echo "$RJS" | json_str region)
if [ $rc -eq 0 ] && [ -n "$REGION" ]; then
	step create-region ok "$REGION ($HOW)"
else
	step create-region FAIL "rc=$rc $(tr '\n' ' ' < /tmp/region.err)"
fi
if [ -n "$REGION" ]; then
	R=/sys/bus/cxl/devices/$REGION
	RBASE=$(cat "$R/resource" 2>/dev/null)
	RSIZE=$(cat "$R/size" 2>/dev/null)
	RCOMMIT=$(cat "$R/commit" 2>/dev/null)
	RMODE=$(cat "$R/mode" 2>/dev/null)
	echo "T3FACT region=$REGION base=$RBASE size=$RSIZE commit=$RCOMMIT mode=$RMODE"
	D=/sys/bus/cxl/devices/$EPD
	ESTART=$(cat "$D/start" 2>/dev/null)
	ESIZE=$(cat "$D/size" 2>/dev/null)
	ETYPE=$(cat "$D/target_type" 2>/dev/null)
	ERGN=$(cat "$D/region" 2>/dev/null)
	echo "T3FACT epdecoder=$EPD start=$ESTART size=$ESIZE target_type=$ETYPE region=$ERGN"
	if [ "$RCOMMIT" = 1 ] && [ "$ERGN" = "$REGION" ] && [ "$ESTART" = "$RBASE" ]; then
		step region-committed ok "$REGION committed: $EPD at $ESTART size $ESIZE ($ETYPE)"
	else
		step region-committed FAIL "commit=$RCOMMIT $EPD region=$ERGN start=$ESTART"
	fi
	sec "cxl list -vvv (region)"
	cxl list -vvv -r "$REGION" 2>&1
	sec "end cxl list -vvv (region)"
	ls /sys/bus/dax/devices/ 2>/dev/null | sed 's/^/dax device: /'
fi
if [ -n "$REGION" ] && [ "$KMEM" = 1 ]; then
	sec "kmem"
	kmem_online "$REGION"
elif [ -n "$REGION" ]; then
	sec "cxl destroy-region"
	cxl destroy-region -f "$REGION" 2>&1
	rc=$?
	if [ $rc -eq 0 ] && [ ! -e "$R" ]; then
		step destroy-region ok "cxl destroy-region $REGION"
	else
		step destroy-region FAIL "rc=$rc, $R $( [ -e "$R" ] && echo still exists)"
	fi
	ESIZE2=$(cat "$D/size" 2>/dev/null)
	ERGN2=$(cat "$D/region" 2>/dev/null)
	echo "T3FACT after-destroy epdecoder=$EPD size=$ESIZE2 region=$ERGN2"
fi

# the attributes the stock stack shows, for comparing kernels (run-e2e-type3.sh's header)
sec "sysfs"
for d in mem0 "$EPD" "$ROOT" "${REGION:-none}"; do
	[ -d "/sys/bus/cxl/devices/$d" ] || continue
	echo "$d: $(cd "/sys/bus/cxl/devices/$d" && ls | tr '\n' ' ')"
done
sec "dmesg (cxl)"
if [ "$DMESG" = all ]; then
	dmesg
else
	dmesg | grep -i -E 'cxl|0d93|dax|mailbox|decoder' | tail -80
fi
sec "VCXL T3 GUEST DONE"
sync
poweroff -f
