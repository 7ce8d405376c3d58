#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0
#
# Install every Debian 12 package that building, testing and demonstrating
# kiwi needs, plus virtme-ng from the Debian 13 archive (Debian 12 lacks it).
# Idempotent: a second run installs nothing and returns quickly.
# The system's apt sources are never modified: the Debian 13 index lives in a
# private apt state directory under /var/cache/kiwi-setup.
set -euo pipefail

die() { echo "setup: error: $*" >&2; exit 1; }

source "$(dirname "$0")/lib-root.sh"
command -v apt-get >/dev/null || die "apt-get not found: kiwi's setup needs Debian 12"

export DEBIAN_FRONTEND=noninteractive

PKGS=(
	# kernel the VM boots, and headers the module builds against
	linux-image-amd64 linux-headers-amd64
	# the upstream siw, built from source as the interop peer and benchmark anchor
	linux-source-6.1 xz-utils
	# build tools
	build-essential pkg-config kmod sparse python3 libclang-rt-14-dev clang
	# the debug kernel (scripts/debug-kernel.sh) builds from linux-source-6.1
	flex bison bc libelf-dev libssl-dev cpio
	# rdma-core: libraries, provider headers, utilities
	rdma-core ibverbs-utils ibverbs-providers libibverbs-dev librdmacm-dev
	rdmacm-utils perftest infiniband-diags qperf
	# libfabric's verbs provider and fabtests (programs.sh)
	libfabric-bin
	# Open MPI over libfabric (mpi.sh): mpirun and mpicc
	openmpi-bin libopenmpi-dev
	# socket programs over rsockets (socket_programs.sh): iperf 2, wget
	iperf wget
	# networking inside the VM
	iproute2 iputils-ping ethtool
	# capture.sh decodes kiwi's wire traffic with Wireshark's iWARP dissectors
	tshark
	# the benchmark (make bench): the TCP reference and the plot
	iperf3 python3-matplotlib
	# Documentation/infiniband/kiwi.rst builds with Sphinx (tools/testing/host/docs_sphinx.sh)
	python3-sphinx
	# storage over kiwi (storage_*.sh, make bench): NVMe-oF, NFS/RDMA, iSER, SMB Direct
	nvme-cli nfs-kernel-server nfs-common targetcli-fb open-iscsi fio ksmbd-tools cifs-utils
	# the VM itself (virtme-ng's own dependencies are pulled in below)
	qemu-system-x86 busybox-static
	# Debian 13's kernel, unpacked by scripts/debian13-kernel.sh
	file
	# the module as a DKMS package (scripts/test-dkms.sh)
	dkms
	# the Debian packages (make deb): debhelper, its DKMS add-on (dh_dkms;
	# Debian 12 ships it as dh-dkms, apart from dkms) and lintian
	debhelper dh-dkms lintian
)

missing=()
for p in "${PKGS[@]}"; do
	dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" ||
		missing+=("$p")
done

if [ ${#missing[@]} -gt 0 ]; then
	echo "setup: installing ${missing[*]}"
	apt-get update -qq || die "apt-get update failed"
	apt-get install -y -qq --no-install-recommends "${missing[@]}" ||
		die "could not install: ${missing[*]}"
fi

# --- virtme-ng from Debian 13 (trixie), without touching the system sources.
if ! command -v vng >/dev/null; then
	source "$(dirname "$0")/lib-debian-suite.sh"
	suite_apt_init trixie update || die "no Debian 13 index for virtme-ng"
	state=$SUITE_STATE
	(cd "$state/archives" && apt-get "${SUITE_APT[@]}" download virtme-ng) ||
		die "could not download virtme-ng from the Debian 13 archive"
	deb=$(ls -t "$state"/archives/virtme-ng_*_all.deb | head -n1)
	[ -n "$deb" ] || die "virtme-ng package not found after download"
	# Dependencies resolve against the system's (Debian 12) sources.
	apt-get install -y -qq --no-install-recommends "$deb" ||
		die "could not install $deb (a dependency is missing on this system)"
fi
command -v vng >/dev/null || die "vng is not on PATH after installing virtme-ng"

# The libibverbs provider ABI the provider is built for.
lib=$(ls /usr/lib/*/libibverbs.so.1 2>/dev/null | head -n1)
[ -n "$lib" ] || die "libibverbs.so.1 not found"
echo "setup: all packages present"
