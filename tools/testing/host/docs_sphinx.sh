#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# Host test (no VM): Documentation/infiniband/kiwi.rst builds with Sphinx
# (Debian's python3-sphinx, scripts/setup.sh installs it) without a
# warning, as a document of its own: a minimal conf.py, HTML, warnings
# made errors. Prints TAP.
root=$(cd "$(dirname "$0")/../../.." && pwd)
source "$root/tools/testing/selftests/drivers/infiniband/kiwi/lib.sh"
doc=$root/Documentation/infiniband/kiwi.rst
tap_begin "kiwi.rst as Sphinx builds it"

if ! command -v sphinx-build >/dev/null; then
	echo "# sphinx-build not found: run scripts/setup.sh (python3-sphinx)"
	not_ok "kiwi.rst builds with Sphinx without a warning"
	tap_end
fi
work=$out
mkdir "$work/src"
cp "$doc" "$work/src/kiwi.rst"
cat >"$work/src/conf.py" <<'EOF'
project = "kiwi"
root_doc = master_doc = "kiwi"
exclude_patterns = []
EOF
ver=$(sphinx-build --version 2>&1 | awk '{ print $NF }')
sphinx() {
	sphinx-build -q -W --keep-going -b html "$work/src" "$work/html" \
		>"$work/log" 2>&1 && [ -s "$work/html/kiwi.html" ] && return 0
	sed 's/^/# /' "$work/log" | head -40
	return 1
}
check "kiwi.rst builds with Sphinx $ver without a warning" sphinx
tap_end
