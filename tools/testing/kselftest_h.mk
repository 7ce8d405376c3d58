# SPDX-License-Identifier: GPL-2.0
# kselftest.h, through which kiwi's C test programs write their TAP. A
# kernel tree has it (tools/testing/selftests/kselftest.h); in kiwi's tree
# the same file is unpacked to the same place from Debian's linux-source,
# which scripts/setup.sh installs (it is not kept in git). The including
# Makefile sets KSFT_H to the path its sources include.
KSFT_SRC ?= $(lastword $(sort $(wildcard /usr/src/linux-source-*.tar.xz)))

$(KSFT_H):
	@test -n "$(KSFT_SRC)" || { echo "no $@ and no /usr/src/linux-source-*.tar.xz: run scripts/setup.sh" >&2; exit 1; }
	tar -xJOf $(KSFT_SRC) --wildcards '*/tools/testing/selftests/kselftest.h' >$@.tmp.$$$$ && \
		mv $@.tmp.$$$$ $@
