#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# Host test (no VM): make deb builds kiwi-dkms and ibverbs-provider-kiwi
# at dkms.conf's version without touching the tree, each package holds
# what it should (the sources make dkms-source lays out, DKMS's maintainer
# scripts; the provider, its driver file as a conffile, the dependency on
# libibverbs1's private ABI), and lintian reports nothing, informational
# and pedantic tags included. The VM test deb.sh installs and purges them
# (scripts/test-deb.sh). Prints TAP.
root=$(cd "$(dirname "$0")/../../.." && pwd)
source "$root/tools/testing/selftests/drivers/infiniband/kiwi/lib.sh"
tap_begin "make deb"

tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
ver=$(sed -n 's/^PACKAGE_VERSION="\(.*\)"/\1/p' "$root/dkms.conf")
arch=$(dpkg --print-architecture)
multiarch=$(dpkg-architecture -qDEB_HOST_MULTIARCH)
dkms_deb=$root/build/deb/kiwi-dkms_${ver}_all.deb
prov_deb=$root/build/deb/ibverbs-provider-kiwi_${ver}_${arch}.deb
changes=$root/build/deb/kiwi_${ver}_${arch}.changes

# The tree's state (tracked changes and untracked files) before and after:
# make deb works in build/deb only.
tree_state() { git -C "$root" status --porcelain --untracked-files=all; }
before=$(tree_state)
make -s -C "$root" deb >"$tmp/build.log" 2>&1
rc=$?
[ "$rc" = 0 ] || tail -30 "$tmp/build.log" | sed 's/^/# /'
check "make deb succeeds" test "$rc" = 0
check "make deb leaves the tree as it was (no debian/, no build products)" \
	eval '[ "$(tree_state)" = "$before" ] && [ ! -e "$root/debian" ]'
check "both packages are built at dkms.conf's version ($ver)" \
	test -f "$dkms_deb" -a -f "$prov_deb" -a -f "$changes"

# field DEB NAME: a control field of a package.
field() { dpkg-deb -f "$1" "$2" 2>/dev/null; }
# files DEB: the paths a package installs, without the leading ".".
files() { dpkg-deb -c "$1" 2>/dev/null | awk '{ sub(/^\./, "", $6); print $6 }'; }

make -s -C "$root" dkms-source DESTDIR="$tmp/src" >/dev/null 2>&1
check "kiwi-dkms holds the sources make dkms-source lays out, and no more" \
	eval 'diff <(cd "$tmp/src" && find . -type f | sed "s/^\.//" | sort) \
		<(files "$dkms_deb" | grep "^/usr/src/" | grep -v "/$" | sort)'
check "kiwi-dkms is Architecture: all and depends on dkms" \
	eval '[ "$(field "$dkms_deb" Architecture)" = all ] &&
	      [[ "$(field "$dkms_deb" Depends)" == *"dkms ("* ]]'
dpkg-deb -e "$dkms_deb" "$tmp/dkms-ctrl" 2>/dev/null
check "kiwi-dkms's postinst adds and builds kiwi $ver through DKMS" \
	eval 'grep -qx "DKMS_VERSION=$ver" "$tmp/dkms-ctrl/postinst" &&
	      grep -q "common.postinst" "$tmp/dkms-ctrl/postinst"'
check "kiwi-dkms's prerm removes kiwi $ver from DKMS" \
	grep -q 'dkms remove -m $DKMS_NAME -v $DKMS_VERSION --all' "$tmp/dkms-ctrl/prerm"

so=/usr/lib/$multiarch/libibverbs/libkiwi-rdmav34.so
check "the provider package installs $so and /etc/libibverbs.d/kiwi.driver" \
	eval 'diff <(printf "%s\n" /etc/libibverbs.d/kiwi.driver "$so") \
		<(files "$prov_deb" | grep -E "^/(etc|usr/lib)/" | grep -v "/$" | sort)'
dpkg-deb -e "$prov_deb" "$tmp/prov-ctrl" 2>/dev/null
check "kiwi.driver is a conffile (purge removes it, upgrades keep edits)" \
	grep -qx /etc/libibverbs.d/kiwi.driver "$tmp/prov-ctrl/conffiles"
# shlibs gives (>= 34), the private ABI 34's; the layout's range narrows
# it (dpkg keeps the narrower bound).
want=$(make -s --no-print-directory -C "$root/userspace" print-verbs-depends)
check "the provider depends on the releases with the layout it was built for ($want)" \
	eval '[[ "$(field "$prov_deb" Depends)" == *"$want"* ]] &&
	      [[ "$want" == "libibverbs1 (>= 36), libibverbs1 (<< 57)" ]]'
dpkg-deb -x "$prov_deb" "$tmp/prov"
check "the packaged provider binds to IBVERBS_PRIVATE_34" \
	eval 'readelf -W --dyn-syms "$tmp/prov$so" | grep -q "@IBVERBS_PRIVATE_34"'

# Lintian warns when run as root; the packages are world-readable.
lint=(lintian -I -E --pedantic "$changes")
[ "$(id -u)" = 0 ] && lint=(runuser -u nobody -- "${lint[@]}")
out=$("${lint[@]}" 2>&1)
rc=$?
[ -n "$out" ] && sed 's/^/# lintian: /' <<<"$out"
check "lintian -I -E --pedantic reports nothing on the .changes and its packages" \
	test "$rc" = 0 -a -z "$out"
tap_end
