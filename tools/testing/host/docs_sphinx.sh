#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# Host test (no VM): Documentation/infiniband/kiwi.rst builds with Sphinx
# (Debian's python3-sphinx, scripts/setup.sh installs it) without a
# warning, as a document of its own: a minimal conf.py, HTML, warnings
# made errors. Prints TAP.
root=$(cd "$(dirname "$0")/../../.." && pwd)
doc=$root/Documentation/infiniband/kiwi.rst

if ! command -v sphinx-build >/dev/null; then
	echo "# sphinx-build not found: run scripts/setup.sh (python3-sphinx)"
	echo "not ok 1 - kiwi.rst builds with Sphinx without a warning"
	exit 1
fi
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
mkdir "$work/src"
cp "$doc" "$work/src/kiwi.rst"
cat >"$work/src/conf.py" <<'EOF'
project = "kiwi"
root_doc = master_doc = "kiwi"
exclude_patterns = []
EOF
ver=$(sphinx-build --version 2>&1 | awk '{ print $NF }')
if sphinx-build -q -W --keep-going -b html "$work/src" "$work/html" \
	>"$work/log" 2>&1 && [ -s "$work/html/kiwi.html" ]; then
	echo "ok 1 - kiwi.rst builds with Sphinx $ver without a warning"
else
	sed 's/^/# /' "$work/log" | head -40
	echo "not ok 1 - kiwi.rst builds with Sphinx $ver without a warning"
	exit 1
fi
echo "1..1"
