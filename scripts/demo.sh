#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0
#
# kiwi's main job, start to finish on a fresh Debian 12 machine: install
# what is needed, build the module and the provider, boot Debian's kernel in
# a VM, create a kiwi device at each end of a veth pair in two network
# namespaces, and show them to rdma-core.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
source "$root/scripts/lib-root.sh"
cd "$root"

echo "== installing packages (scripts/setup.sh)"
scripts/setup.sh
echo "== building the module and the provider"
make -s
scripts/stage.sh
echo "== booting Debian's kernel in a VM (about a minute under emulation)"
exec scripts/vm-run.sh --timeout 600 -- scripts/demo-vm.sh
