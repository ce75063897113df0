# SPDX-License-Identifier: BSD-3-Clause
# shellcheck shell=sh
# /lib/e2e-init.sh in every e2e guest's initramfs (tests/e2e/initramfs.sh: ird_busybox puts
# it there): what each /init starts with. Sourced (busybox ash):
#   . /lib/e2e-init.sh      PATH, the library path, /proc /sys /dev /tmp /run mounted; the
#                           kernel's messages turned down to warnings (they were on the
#                           console for the host's boot watchdog, tests/e2e/lib.sh, until
#                           here; from here on as `quiet` would have them), unless
#                           E2E_INIT_PRINTK is set first (a level, or "keep")
#   sec NAME...             a "=== NAME === (uptime Ns)" section line; the host greps them
#   opt NAME DEFAULT        the value of vcxl.NAME= on the kernel command line, or DEFAULT
export PATH=/bin:/sbin:/usr/bin:/usr/sbin
export LD_LIBRARY_PATH=/lib/x86_64-linux-gnu:/usr/lib/x86_64-linux-gnu:/lib64

mount -t proc proc /proc
[ "${E2E_INIT_PRINTK:-4}" = keep ] || echo "${E2E_INIT_PRINTK:-4}" > /proc/sys/kernel/printk
mount -t sysfs sysfs /sys
mount -t devtmpfs devtmpfs /dev 2>/dev/null
mkdir -p /tmp /run
mount -t tmpfs tmpfs /tmp
mount -t tmpfs tmpfs /run

sec() { echo "=== $* === (uptime $(cut -d' ' -f1 /proc/uptime)s)"; }
opt() {
	_v=$(tr ' ' '\n' < /proc/cmdline | sed -n "s/^vcxl\.$1=//p" | tail -1)
	echo "${_v:-$2}"
}
