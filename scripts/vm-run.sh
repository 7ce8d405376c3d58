#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0
#
# Boot Debian's kernel in QEMU with virtme-ng (software emulation, no KVM),
# run one command inside with the project tree writable, and return its exit
# status: 124 when it ran past the timeout.
#
#   scripts/vm-run.sh [--timeout SECONDS] [--cpus N] [--memory SIZE]
#                     [--kernel KDIR] [--qemu-opts "ARGS"] [--console FILE]
#                     [--append "KERNEL ARGS"] -- CMD...
#
# --kernel boots a kernel build tree instead (the debug kernel of
# scripts/debug-kernel.sh); virtme-ng then serves that tree's modules.
# --qemu-opts adds QEMU arguments, split at spaces (scripts/vm-pair.sh
# adds a NIC and a PID file with it).
# --append adds guest kernel command-line arguments, split at spaces.
# --console keeps the guest kernel's console in FILE (CMD's standard error
# then joins its standard output); when the guest kernel dies (exit 255),
# the console's last lines are printed to standard error, so a panic in a
# test run is shown, not only its exit status.
#
# The guest sees the host's root file system read-only, with writable
# overlays on /etc, /usr and /var that vanish at shutdown, and this tree
# read-write at the same path. The guest's /tmp is not the host's.
set -euo pipefail

root=$(cd "$(dirname "$0")/.." && pwd)
timeout=900
cpus=2
memory=2G
kernel=
qemu_opts=()
console=
append=()

while [ $# -gt 0 ]; do
	case "$1" in
	--timeout) timeout=$2; shift 2 ;;
	--cpus) cpus=$2; shift 2 ;;
	--memory) memory=$2; shift 2 ;;
	--kernel) kernel=$2; shift 2 ;;
	--qemu-opts) read -ra qemu_opts <<<"$2"; shift 2 ;;
	--console) console=$2; shift 2 ;;
	--append) read -ra a <<<"$2"; append+=("${a[@]}"); shift 2 ;;
	--) shift; break ;;
	*) break ;;
	esac
done
[ $# -gt 0 ] || { echo "usage: $0 [--timeout S] [--cpus N] [--memory SIZE] [--kernel KDIR] [--qemu-opts ARGS] [--append ARGS] -- CMD..." >&2; exit 2; }
command -v vng >/dev/null || { echo "vm-run: vng not found; run scripts/setup.sh" >&2; exit 1; }

if [ -z "$kernel" ]; then
	kernel=/boot/vmlinuz-$("$root/scripts/kernel-release.sh")
fi
cmd=$(printf '%q ' "$@")
# virtme-ng hands the command to the guest in base64 on the kernel command
# line, which holds 2048 bytes with its own arguments (about 700): a longer
# one makes the kernel's early string checks panic before anything runs.
if [ $(((${#root} + ${#cmd} + 20) * 4 / 3)) -gt 1300 ]; then
	echo "vm-run: the command (${#cmd} characters) does not fit on the guest kernel's command line; put it in a script" >&2
	exit 2
fi
verbose=()
if [ -n "$console" ]; then
	# With -v, virtme-ng writes the kernel console to its standard error,
	# where the guest command's standard error also lands. Level 4 keeps
	# the console to errors; an oops or panic prints in full regardless.
	verbose=(-v --append loglevel=4)
	cmd="exec 2>&1; $cmd"
	exec 3>&2 2>"$console"
fi
# vng hands them to QEMU through a shell, one --qemu-opts=ARG each (the
# "=" keeps an ARG that starts with "-" an argument).
vng_opts=()
for o in "${qemu_opts[@]}"; do
	vng_opts+=("--qemu-opts=$o")
done
for o in "${append[@]}"; do
	vng_opts+=("--append=$o")
done

rc=0
timeout --kill-after=20 "$timeout" \
	vng -r "$kernel" --disable-kvm --cpus "$cpus" --memory "$memory" \
	    --rwdir="$root=$root" --cwd "$root" "${vng_opts[@]}" "${verbose[@]}" \
	    --exec "cd $(printf '%q' "$root") && $cmd" </dev/null || rc=$?
if [ -n "$console" ]; then
	exec 2>&3 3>&-
	if [ "$rc" = 255 ]; then
		# As TAP comments: test runners pass those on.
		echo "# vm-run: the guest kernel stopped; the end of its console ($console):" >&2
		tail -n 80 "$console" | sed 's/^/# console: /' >&2
	fi
fi
if [ "$rc" = 124 ] || [ "$rc" = 137 ]; then
	echo "vm-run: the VM ran past ${timeout}s and was stopped" >&2
	rc=124
fi
exit "$rc"
