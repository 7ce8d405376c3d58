#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# The Debian packages end to end on the kernel this VM runs: "apt-get
# install ./kiwi-dkms_*.deb ./ibverbs-provider-kiwi_*.deb" with no network
# (their dependencies are installed), DKMS building the module in the
# package's postinst; modprobe loads DKMS's module, libibverbs the
# package's provider, and a kiwi device at each end of a veth pair moves
# verified data (rping -V); "apt-get purge" then leaves nothing of either.
# Not in the default list: scripts/test-deb.sh builds the packages (make
# deb) and runs it on Debian 12's and Debian 13's kernels.
# KIWI_DEB_DIR names the folder of the .deb files (build/deb of this tree
# unless set); KIWI_DKMS_KDIR the kernel's build tree where
# /lib/modules/KVER/build does not (Debian 13's, unpacked by
# scripts/debian13-kernel.sh).
source "$(dirname "$0")/../selftests/drivers/infiniband/kiwi/lib.sh"
tap_begin "deb"

kver=$(uname -r)
ver=$(sed -n 's/^PACKAGE_VERSION="\(.*\)"/\1/p' "$KIWI_ROOT/dkms.conf")
debs=${KIWI_DEB_DIR:-$KIWI_ROOT/build/deb}
dkms_deb=$debs/kiwi-dkms_${ver}_all.deb
prov_deb=$debs/ibverbs-provider-kiwi_${ver}_$(dpkg --print-architecture).deb
multiarch=$(dpkg-architecture -qDEB_HOST_MULTIARCH 2>/dev/null || gcc -print-multiarch)
so=/usr/lib/$multiarch/libibverbs/libkiwi-rdmav34.so
driver=/etc/libibverbs.d/kiwi.driver
pkgs=(kiwi-dkms ibverbs-provider-kiwi)

# kiwi_kos: every kiwi.ko under /lib/modules, compressed or not.
kiwi_kos() { find /lib/modules/ -name 'kiwi.ko*' 2>/dev/null; }
# dkms_ko: the kiwi.ko DKMS installed for this kernel, if any.
dkms_ko() { ls "/lib/modules/$kver/updates/dkms/"kiwi.ko* 2>/dev/null; }
# listed: the packages dpkg -l lists in any state but "not installed"
# (purged ones it no longer knows; removed ones it lists as "rc").
listed() {
	dpkg -l 2>/dev/null | awk '{ sub(/:.*/, "", $2); print $2 }' |
		grep -xE 'kiwi-dkms|ibverbs-provider-kiwi'
}
# apt_log CMD...: CMD's output to $out/apt.log; shown when CMD fails.
apt_log() {
	"$@" >"$out/apt.log" 2>&1 && return 0
	tail -40 "$out/apt.log" | sed 's/^/# /'
	return 1
}

check "both packages are built (make deb)" test -f "$dkms_deb" -a -f "$prov_deb"
kiwi_unload
# Only the packages' copies from here on: drop the module and the provider
# run_vm.sh staged (scripts/vm-install.sh).
rm -f "/lib/modules/$kver/updates/kiwi.ko" "$so" "$driver"
check "no kiwi module, provider or driver file before the install" \
	eval '[ -z "$(kiwi_kos)" ] && [ ! -e "$so" ] && [ ! -e "$driver" ]'
# The headers a machine would have from linux-headers-*: where this
# kernel's are unpacked elsewhere, DKMS's postinst finds them through the
# usual link.
made_build_link=0
if [ -n "${KIWI_DKMS_KDIR:-}" ] && [ ! -e "/lib/modules/$kver/build" ]; then
	ln -s "$KIWI_DKMS_KDIR" "/lib/modules/$kver/build" && made_build_link=1
fi

# The VM has no network: apt installs from the two files alone, and fails
# if it needs to fetch anything. (apt 2.6's --no-download turns the files
# into relative paths it then refuses: "Pathname to install is not
# absolute".)
check "apt-get install ./kiwi-dkms_*.deb ./ibverbs-provider-kiwi_*.deb, offline" \
	apt_log env DEBIAN_FRONTEND=noninteractive apt-get install -y \
	"$dkms_deb" "$prov_deb"
check "dpkg lists both packages as installed" \
	eval '[ "$(dpkg-query -W -f="\${db:Status-Abbrev}\n" "${pkgs[@]}" | tr -d " " | sort -u)" = ii ]'
check "the package's postinst built and installed kiwi $ver for $kver with DKMS" \
	eval 'dkms status -m kiwi -v "$ver" -k "$kver" | grep -q ": installed"'
check "modprobe finds the module DKMS installed (updates/dkms)" \
	eval '[ -n "$(dkms_ko)" ] && [ "$(modinfo -n kiwi)" = "$(dkms_ko)" ]'
check "the module is built for $kver" \
	eval '[ "$(modinfo -F vermagic kiwi | cut -d" " -f1)" = "$kver" ]'
check "the provider and kiwi.driver are the provider package's" \
	eval '[ "$(dpkg -S "$so" "$driver" | cut -d: -f1 | sort -u)" = ibverbs-provider-kiwi ]'

check "the packages' module: two hosts with a kiwi device each" kiwi_two_devs
out_dev=$(ibv_devices 2>&1)
check "ibv_devices lists kiwi0 and kiwi1 through the packaged provider" \
	eval 'has_line "$out_dev" "^[[:space:]]+kiwi0[[:space:]]+[0-9a-f]{16}$" &&
	      has_line "$out_dev" "^[[:space:]]+kiwi1[[:space:]]+[0-9a-f]{16}$"'
# libibverbs names the provider file it opened; only the package's exists.
loaded=$(LD_DEBUG=files ibv_devinfo -d kiwi0 2>&1)
check "ibv_devinfo -d kiwi0 opens the device with the packaged provider" \
	eval 'has_line "$loaded" "file=$so .*generating link map" &&
	      has_line "$loaded" "transport:[[:space:]]+iWARP"'
rping_check "the packages" rping kiwiB 192.0.2.2 kiwiA 20 4000
kiwi_two_devs_del

check "apt-get purge kiwi-dkms ibverbs-provider-kiwi" \
	apt_log env DEBIAN_FRONTEND=noninteractive apt-get purge -y "${pkgs[@]}"
[ "$made_build_link" = 1 ] && rm -f "/lib/modules/$kver/build"
check "dpkg -l lists neither package" eval '[ -z "$(listed)" ]'
check "no /usr/src/kiwi-*, no /var/lib/dkms/kiwi" \
	eval '[ -z "$(ls -d /usr/src/kiwi-* 2>/dev/null)" ] && [ ! -e /var/lib/dkms/kiwi ]'
check "no kiwi.ko under /lib/modules; modprobe no longer finds kiwi" \
	eval '[ -z "$(kiwi_kos)" ] && ! modinfo kiwi >/dev/null 2>&1'
check "no provider, no kiwi.driver" eval '[ ! -e "$so" ] && [ ! -e "$driver" ]'
tap_end
