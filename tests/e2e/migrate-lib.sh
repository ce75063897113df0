# SPDX-License-Identifier: BSD-3-Clause
# shellcheck shell=bash disable=SC2034 # MIGRATE_* variables are read by the sourcing scripts
# migrate-lib.sh - sourced (bash, after cxlmem-lib.sh and initramfs.sh) by
# tests/e2e/run-e2e-migrate.sh and scripts/bench-migrate.sh: the migration guest and the
# command line every QEMU of a migration runs.
#
#   migrate_guest OUT KDIR      guest-drivers/vcxl_accel built against the 7.2 kernel's tree
#                               KDIR/build, and OUT/initramfs.cpio.gz: busybox, /init =
#                               init-migrate.sh, /bin/migrate-guest, /lib/vcxl_accel.ko;
#                               returns 1 with MIGRATE_WHY (logs in OUT)
#   migrate_template KDIR INITRD RAM [nodev] [APPEND]
#                               MIGRATE_TEMPLATE: QEMU's arguments (after the binary) with
#                               @SOCK@ (the device's vfio-user socket), @QMP@ and @TTY@ (the
#                               guest's second serial line, its commands) to replace: q35 with
#                               cxl=on, a pxb-cxl host bridge, one cxl-rp, a 4 GiB CXL window,
#                               the device as vfio-user-pci vcxl0 on the root port ("nodev":
#                               the same VM without it), E2E_TCG_ARGS, RAM as a shared memfd,
#                               the trace of a destination taking its CXL region as zero,
#                               up to 4 precopy passes over what the last sync found before
#                               switching over (vmm/qemu 0043, docs/migration.md section 9);
#                               the kernel's command line gets iomem=relaxed (the guest maps
#                               BARs its driver owns) and APPEND
MIGRATE_LIB_DIR=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
MIGRATE_WHY=""
MIGRATE_TEMPLATE=()

migrate_guest() {
	local out=$1 kdir=$2 root ird
	root=$(cd "$MIGRATE_LIB_DIR/../.." && pwd)
	mkdir -p "$out"
	rm -rf "$out/vcxl_accel"
	cp -r "$root/guest-drivers/vcxl_accel" "$out/vcxl_accel"
	if ! make -C "$kdir/build" M="$out/vcxl_accel" modules > "$out/module-build.log" 2>&1 ||
		[ ! -s "$out/vcxl_accel/vcxl_accel.ko" ]; then
		MIGRATE_WHY="guest-drivers/vcxl_accel does not build against $(cat "$kdir/version") ($out/module-build.log)"
		return 1
	fi
	ird="$out/initramfs.staging"
	rm -rf "$ird"
	ird_busybox "$ird"
	if ! ${GUEST_CC:-gcc} -static -O2 -std=gnu11 -Wall -Wextra -Werror -pthread \
		-I"$root/guest-drivers/vcxl_accel" -o "$ird/bin/migrate-guest" \
		"$MIGRATE_LIB_DIR/guest/migrate-guest.c" 2> "$out/migrate-guest.build.log"; then
		MIGRATE_WHY="migrate-guest does not build ($out/migrate-guest.build.log)"
		return 1
	fi
	install -m 0755 "$MIGRATE_LIB_DIR/init-migrate.sh" "$ird/init"
	install -m 0644 "$out/vcxl_accel/vcxl_accel.ko" "$ird/lib/vcxl_accel.ko"
	ird_pack "$ird" "$out/initramfs.cpio.gz"
	rm -rf "$ird"
}

migrate_template() {
	local kdir=$1 initrd=$2 ram=$3 nodev=${4:-} append=${5:-} dev
	dev='{"driver":"vfio-user-pci","socket":{"type":"unix","path":"@SOCK@"},"id":"vcxl0","bus":"rp0","x-cxl":true}'
	# shellcheck disable=SC2054 # commas inside QEMU option values
	MIGRATE_TEMPLATE=("${CXLMEM_FW[@]}" -nodefaults "${E2E_TCG_ARGS[@]}"
		-object "memory-backend-memfd,id=ram0,size=$ram,share=on"
		-m "$ram" -nographic -serial stdio -serial "unix:@TTY@,server=on,wait=off"
		-monitor none -no-reboot -nic none -qmp "unix:@QMP@,server=on,wait=off"
		-trace vfio_cxl_region_incoming_zero
		-global migration.x-switchover-passes=4
		-machine q35,cxl=on,memory-backend=ram0
		-device pxb-cxl,bus_nr=12,bus=pcie.0,id=cxl.1,hdm_for_passthrough=on
		-device cxl-rp,port=0,bus=cxl.1,id=rp0,chassis=0,slot=2)
	[ "$nodev" = nodev ] || MIGRATE_TEMPLATE+=(-device "$dev")
	MIGRATE_TEMPLATE+=(-M "cxl-fmw.0.targets.0=cxl.1,cxl-fmw.0.size=4G"
		-kernel "$kdir/bzImage" -initrd "$initrd"
		-append "$E2E_KERNEL_ARGS iomem=relaxed${append:+ $append}")
}
