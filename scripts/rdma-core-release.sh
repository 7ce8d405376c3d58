#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0
#
# Another Debian release's rdma-core, to build and run libkiwi against it on
# a Debian 12 machine whose system stays untouched: libibverbs, librdmacm,
# their -dev headers, the utilities (ibv_devinfo, rping), the other
# providers (perftest links libmlx5 and libefa) and the C library they
# need come from SUITE's archive through a private apt state
# (lib-debian-suite.sh) and are unpacked (dpkg -x), not installed. Prints
# the directory, ROOT:
#
#   ROOT/version   the release, e.g. 65.0-1.1
#   ROOT/run       runs a program with this rdma-core and its C library:
#                  ROOT/run /usr/bin/ib_write_bw ... or ROOT/run rping ...
#                  (a bare name is looked for in ROOT/usr/bin first)
#   ROOT/usr/...   what libkiwi builds against (make VERBS_ROOT=ROOT)
#
#   scripts/rdma-core-release.sh trixie    Debian 13's (rdma-core 56)
#   scripts/rdma-core-release.sh sid       the newest in Debian (unstable)
#
# Fetched once per suite; a second call only prints ROOT (remove it to
# fetch a newer release).
set -euo pipefail

suite=${1:?usage: $0 SUITE}
dest=${XDG_CACHE_HOME:-$HOME/.cache}/kiwi/rdma-core-$suite
die() { echo "rdma-core-release: $*" >&2; exit 1; }

if [ -f "$dest/version" ]; then
	echo "$dest"
	exit 0
fi

source "$(dirname "$0")/lib-debian-suite.sh"
suite_apt_init "$suite" update >&2 || die "no $suite index"
pkgs=(libibverbs1 libibverbs-dev librdmacm1t64 ibverbs-utils rdmacm-utils
      ibverbs-providers libnl-3-200 libnl-route-3-200 libc6)
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
(cd "$tmp" && apt-get "${SUITE_APT[@]}" download "${pkgs[@]}" >/dev/null 2>&1) ||
	die "could not download ${pkgs[*]} from $suite"
rm -rf "$dest"
mkdir -p "$dest"
for deb in "$tmp"/*.deb; do
	dpkg -x "$deb" "$dest"
done
ld=$dest/usr/lib64/ld-linux-x86-64.so.2
[ -x "$ld" ] || die "no loader in $suite's libc6"
# The programs run under this release's loader, which takes its own
# libraries first and the system's (libpci, libudev, ...) after them.
libs=$dest/usr/lib/x86_64-linux-gnu:/usr/lib/x86_64-linux-gnu
cat >"$dest/run" <<RUN
#!/bin/sh
# Runs a program with $suite's rdma-core ($(basename "$tmp"/libibverbs1_*.deb)).
p=\$1
shift
case \$p in
*/*) ;;
*) if [ -x "$dest/usr/bin/\$p" ]; then p=$dest/usr/bin/\$p; else p=\$(command -v "\$p"); fi ;;
esac
exec "$ld" --library-path "$libs" "\$p" "\$@"
RUN
chmod +x "$dest/run"
dpkg-deb -f "$tmp"/libibverbs1_*.deb Version >"$dest/version"
echo "$dest"
