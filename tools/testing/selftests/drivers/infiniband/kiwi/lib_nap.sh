# SPDX-License-Identifier: GPL-2.0
#
# nap SECONDS: sleep without a process. Under emulation a fork and exec
# costs a tenth of a second on the stock kernel and half a second on the
# debug one, more than a poll waits between tries; read's timeout on a
# pipe that nobody writes to sleeps in the shell itself. Sourced by lib.sh
# and by the scripts that run outside a test's shell (pair_rsh.sh).
exec {_nap_fd}<> <(:)
nap() {
	read -r -t "$1" -u "$_nap_fd" _ || :
}
