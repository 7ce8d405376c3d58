#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0
#
# Debian 13's (trixie) kernel for kiwi's second build and VM run, on a
# Debian 12 machine whose system stays untouched: the image, the headers
# and their kbuild come from the trixie archive through a private apt state
# (as scripts/setup.sh fetches virtme-ng), and are unpacked (dpkg -x) into
# one directory, not installed. Prints that directory, ROOT:
#
#   ROOT/kver                          the release, e.g. 6.12.117+deb13-amd64
#   ROOT/usr/src/linux-headers-KVER    the build tree (KDIR)
#   ROOT/boot/vmlinuz-KVER             the image scripts/vm-run.sh boots
#   ROOT/lib/modules/KVER              its modules (virtme-ng serves them)
#   ROOT/usr/src/linux-source-X.Y.tar.xz  its source (linux-source-X.Y), from
#                                      which scripts/build-smbdirect.sh
#                                      builds ksmbd and cifs
#
# The release is linux-image-amd64's in the trixie index (KIWI_D13_KVER
# pins another). Fetched once; a second call only prints ROOT.
set -euo pipefail

dest=${KIWI_D13_ROOT:-${XDG_CACHE_HOME:-$HOME/.cache}/kiwi/debian13}
die() { echo "debian13-kernel: $*" >&2; exit 1; }

if [ -f "$dest/kver" ] && ls "$dest"/usr/src/linux-source-*.tar.xz >/dev/null 2>&1 &&
   { [ -z "${KIWI_D13_KVER:-}" ] || [ "$(cat "$dest/kver")" = "$KIWI_D13_KVER" ]; }; then
	echo "$dest"
	exit 0
fi

source "$(dirname "$0")/lib-debian-suite.sh"
suite_apt_init trixie || die "no Debian 13 index"

kver=${KIWI_D13_KVER:-}
if [ -z "$kver" ]; then
	# linux-image-amd64 depends on linux-image-KVER (the signed image).
	kver=$(apt-cache "${SUITE_APT[@]}" depends linux-image-amd64 2>/dev/null |
		sed -n 's/^ *Depends: linux-image-\(.*-amd64\)$/\1/p' | head -n1)
	[ -n "$kver" ] || die "linux-image-amd64 not found in the trixie index"
fi
kbuild=linux-kbuild-${kver%-amd64}
src=$(echo "$kver" | sed -E 's/^([0-9]+\.[0-9]+).*/linux-source-\1/')
pkgs=("linux-image-$kver" "linux-headers-$kver" "linux-headers-${kver%-amd64}-common" "$kbuild" "$src")
# Debian 13's C library and what its kbuild tools link, for those tools;
# its pahole, which writes the module's BTF (Debian 12's is too old for the
# options this kernel's configuration asks of it), and its libraries.
libs=(libc6 libelf1t64 zlib1g libzstd1 pahole libbpf1 libdw1t64 liblzma5 libbz2-1.0)

tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
mkdir -p "$tmp/k" "$tmp/l"
(cd "$tmp/k" && apt-get "${SUITE_APT[@]}" download "${pkgs[@]}" >/dev/null 2>&1) ||
	die "could not download ${pkgs[*]} from the trixie archive"
(cd "$tmp/l" && apt-get "${SUITE_APT[@]}" download "${libs[@]}" >/dev/null 2>&1) ||
	die "could not download ${libs[*]} from the trixie archive"
rm -rf "$dest"
mkdir -p "$dest/libc"
for deb in "$tmp"/k/*.deb; do
	dpkg -x "$deb" "$dest"
done
for deb in "$tmp"/l/*.deb; do
	dpkg -x "$deb" "$dest/libc"
done
# Debian 13 ships modules in /usr/lib/modules; virtme-ng looks for lib/modules
# beside boot/.
[ -e "$dest/lib" ] || ln -s usr/lib "$dest/lib"
# The headers' Makefile includes the common part by its installed path.
hdr=$dest/usr/src/linux-headers-$kver
sed -i "s|^include /usr/src/|include $dest/usr/src/|" "$hdr/Makefile"
# Debian 13 builds with gcc-14, which Debian 12 lacks: build with the
# system's gcc, without the one option of the kernel's configuration that
# needs gcc 14 (-fmin-function-alignment; -falign-functions instead). The
# kernel's Makefile reads .kernelvariables before the configuration.
sed -i 's/^CC = .*/override CC := gcc/' "$hdr/.kernelvariables"
echo "override CONFIG_CC_HAS_MIN_FUNCTION_ALIGNMENT :=" >>"$hdr/.kernelvariables"
echo "override PAHOLE := $dest/bin/pahole" >>"$hdr/.kernelvariables"
# Some kbuild tools need Debian 13's C library (GLIBC_2.38): run those
# with its loader and libraries, behind their own names.
ld=$dest/libc/usr/lib64/ld-linux-x86-64.so.2
libdir=$dest/libc/usr/lib/x86_64-linux-gnu
[ -x "$ld" ] || die "no Debian 13 loader in libc6"
mkdir -p "$dest/bin"
printf '#!/bin/sh\nexec %s --library-path %s %s "$@"\n' "$ld" "$libdir" \
	"$dest/libc/usr/bin/pahole" >"$dest/bin/pahole"
chmod +x "$dest/bin/pahole"
find "$dest/usr/lib/$kbuild" -type f -perm -u+x | while read -r f; do
	case $(file -b "$f") in ELF*) ;; *) continue ;; esac
	case $(ldd "$f" 2>&1) in *"not found"*) ;; *) continue ;; esac
	mv "$f" "$f.bin"
	printf '#!/bin/sh\nexec %s --library-path %s "$0.bin" "$@"\n' "$ld" "$libdir" >"$f"
	chmod +x "$f"
done
[ -f "$dest/boot/vmlinuz-$kver" ] || die "no vmlinuz-$kver in linux-image-$kver"
[ -d "$dest/usr/src/linux-headers-$kver" ] || die "no headers for $kver"
echo "$kver" > "$dest/kver"
echo "$dest"
