#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# The provider/kernel ABI handshake: a provider built for another
# KIWI_ABI_VERSION is refused by libibverbs, and the kernel refuses a user
# context whose request names another version or sets reserved bits.
source "$(dirname "$0")/lib.sh"

# uverbs_dir DEV: the sysfs directory of DEV's uverbs character device.
uverbs_dir() {
	local d
	for d in /sys/class/infiniband_verbs/uverbs*; do
		[ "$(cat "$d/ibdev" 2>/dev/null)" = "$1" ] && { echo "$d"; return 0; }
	done
	return 1
}

tap_begin "provider ABI handshake"

root=$KIWI_ROOT
check "set up kiwi0 on a veth pair" kiwi_veth_dev kiwi0

# The raw checks talk to the uverbs character device directly; on a real
# system rdma-core's units load ib_uverbs, here we do.
modprobe ib_uverbs
check "kiwi0 gets a uverbs character device" wait_for 30 uverbs_dir kiwi0
check "its sysfs abi_version is KIWI_ABI_VERSION (1)" \
	grep -qx 1 "$(uverbs_dir kiwi0)/abi_version"

check "raw GET_CONTEXT with ABI 1 succeeds" \
	test "$("$KIWI_UVERBS" getctx kiwi0 1 0 8)" = "OK abi_version=1"
check "raw GET_CONTEXT with ABI 99 fails with EPROTONOSUPPORT" \
	test "$("$KIWI_UVERBS" getctx kiwi0 99 0 8)" = EPROTONOSUPPORT
check "raw GET_CONTEXT with reserved bits set fails with EINVAL" \
	test "$("$KIWI_UVERBS" getctx kiwi0 1 1 8)" = EINVAL
check "raw GET_CONTEXT without the kiwi request fails with EINVAL" \
	test "$("$KIWI_UVERBS" getctx kiwi0 1 0 0)" = EINVAL

# CREATE_SRQ (kiwi_create_srq_req): the kernel checks what libkiwi sends.
srq() { "$KIWI_UVERBS" srq kiwi0 "$@"; }
check "raw CREATE_SRQ of 8 WRs, a ring of 8 entries, succeeds" \
	test "$(srq 8 8 0 0 16)" = "OK num_rqe=8"
check "raw CREATE_SRQ without the kiwi request fails with EINVAL" \
	test "$(srq 8 8 0 0 0)" = EINVAL
check "raw CREATE_SRQ with reserved bits set fails with EINVAL" \
	test "$(srq 8 8 1 0 16)" = EINVAL
check "raw CREATE_SRQ of a ring of 3 (not a power of two) fails with EINVAL" \
	test "$(srq 2 3 0 0 16)" = EINVAL
check "raw CREATE_SRQ of 16 WRs in a ring of 8 fails with EINVAL" \
	test "$(srq 16 8 0 0 16)" = EINVAL
check "raw CREATE_SRQ of a ring not page-aligned fails with EINVAL" \
	test "$(srq 8 8 0 64 16)" = EINVAL

# Only the mismatched provider is present for these checks (libibverbs
# reads every file in /etc/libibverbs.d, whatever its name).
mv /etc/libibverbs.d/kiwi.driver /etc/kiwi.driver.off
export RDMAV_DRIVERS=$root/userspace/libkiwi-abi99
out=$(ibv_devices 2>&1)
echo "$out" | sed 's/^/# /'
check "libibverbs refuses the ABI-99 provider for kiwi0, saying why" \
	has_line "$out" "does not support the kernel ABI of 1 \(supports 99 to 99\)"
check "kiwi0 is not offered with a mismatched provider" \
	eval '! has_line "$out" "^[[:space:]]+kiwi0[[:space:]]" >/dev/null'
check "ibv_devinfo -d kiwi0 fails with a mismatched provider" \
	eval '! ibv_devinfo -d kiwi0 >/dev/null 2>&1'
unset RDMAV_DRIVERS
mv /etc/kiwi.driver.off /etc/libibverbs.d/kiwi.driver
check "the matching provider opens kiwi0 again" \
	test "$(query_field kiwi0 transport)" = iWARP

kiwi_veth_dev_del kiwi0
tap_end
