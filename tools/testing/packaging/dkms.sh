#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# DKMS end to end on the kernel this VM runs: the source tree installed as
# the package installs it (make dkms-source), "dkms add", "dkms build" and
# "dkms install"; the module DKMS installed loads and a kiwi device at
# each end of a veth pair moves verified data (rping -V); "dkms remove"
# then takes away everything DKMS put there. Not in the default list:
# scripts/test-dkms.sh runs it on Debian 12's and Debian 13's kernels.
# KIWI_DKMS_KDIR names the kernel's build tree where /lib/modules/KVER/build
# does not (Debian 13's, unpacked by scripts/debian13-kernel.sh).
source "$(dirname "$0")/../selftests/drivers/infiniband/kiwi/lib.sh"
tap_begin "dkms"

kver=$(uname -r)
ver=$(sed -n 's/^PACKAGE_VERSION="\(.*\)"/\1/p' "$KIWI_ROOT/dkms.conf")
kopt=(-k "$kver")
[ -n "${KIWI_DKMS_KDIR:-}" ] && kopt+=(--kernelsourcedir "$KIWI_DKMS_KDIR")

# dkms_installed_ko: the kiwi.ko DKMS installed for this kernel, if any.
dkms_installed_ko() { ls "/lib/modules/$kver/updates/dkms/"kiwi.ko* 2>/dev/null; }

check "dkms is installed" command -v dkms
kiwi_unload
# Only DKMS's module from here on: drop the one run_vm.sh staged.
rm -f "/lib/modules/$kver/updates/kiwi.ko"
check "make dkms-source installs /usr/src/kiwi-$ver" \
	make -s -C "$KIWI_ROOT" dkms-source
check "dkms add -m kiwi -v $ver" dkms add -m kiwi -v "$ver"
check "dkms build for $kver" dkms build -m kiwi -v "$ver" "${kopt[@]}"
check "dkms install for $kver" dkms install -m kiwi -v "$ver" "${kopt[@]}"
check "dkms status says installed for $kver" \
	eval 'dkms status -m kiwi -v "$ver" -k "$kver" | grep -q ": installed"'
check "modprobe finds the module DKMS installed" \
	eval '[ -n "$(dkms_installed_ko)" ] && [ "$(modinfo -n kiwi)" = "$(dkms_installed_ko)" ]'
check "the module is built for $kver" \
	eval '[ "$(modinfo -F vermagic kiwi | cut -d" " -f1)" = "$kver" ]'
# Where the kernel's kbuild has sign-file where DKMS looks (Debian 12's),
# DKMS signs with its own key, the one to enroll for Secure Boot.
if [ -x "/usr/lib/linux-kbuild-${kver%.*}/scripts/sign-file" ]; then
	check "DKMS signed the module with its key (/var/lib/dkms/mok.pub)" \
		eval '[ "$(modinfo -F signer kiwi)" = "DKMS module signing key" ] &&
		      [ -f /var/lib/dkms/mok.pub ]'
fi
check "DKMS's module: two hosts with a kiwi device each" kiwi_two_devs
rping_check "DKMS's module" rping kiwiB 192.0.2.2 kiwiA 20 4000
kiwi_two_devs_del
check "dkms remove -m kiwi -v $ver --all" dkms remove -m kiwi -v "$ver" --all
check "DKMS keeps nothing of kiwi" \
	eval '[ ! -e /var/lib/dkms/kiwi ] && [ -z "$(dkms_installed_ko)" ]'
check "modprobe no longer finds kiwi" eval '! modinfo kiwi >/dev/null 2>&1'
rm -rf "/usr/src/kiwi-$ver"
tap_end
