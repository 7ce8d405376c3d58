# SPDX-License-Identifier: GPL-2.0
# Sourced by the entry scripts: re-run the calling script as root (through
# sudo when the caller is not root), since they install packages and boot
# the VM with the module loaded.
if [ "$(id -u)" != 0 ]; then
	if command -v sudo >/dev/null; then
		exec sudo -E "$0" "$@"
	fi
	echo "$(basename "$0"): run as root (it installs Debian packages)" >&2
	exit 1
fi
