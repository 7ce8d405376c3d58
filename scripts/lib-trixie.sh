# SPDX-License-Identifier: GPL-2.0
#
# Debian 13's (trixie) archive without touching the system's apt sources:
# a private apt state in /var/cache/kiwi-setup, whose address is the
# system's own Debian archive. Sourced by scripts/setup.sh (virtme-ng) and
# scripts/debian13-kernel.sh (Debian 13's kernel).

# trixie_apt_init: set TRIXIE_APT, the apt-get and apt-cache options that
# use the private state, reading the trixie index into it when it has none
# (or, with "update", always). Returns non-zero, with a message, on failure.
trixie_apt_init() {
	local state=/var/cache/kiwi-setup uri
	mkdir -p "$state/lists/partial" "$state/archives/partial" "$state/etc"
	TRIXIE_APT=(-o Dir::Etc::sourcelist="$state/etc/sources.list"
		    -o Dir::Etc::sourceparts=-
		    -o Dir::State::Lists="$state/lists"
		    -o Dir::Cache::Archives="$state/archives"
		    -o Dir::Cache::pkgcache= -o Dir::Cache::srcpkgcache=
		    -o APT::Get::List-Cleanup=0)
	if [ "${1:-}" != update ] && ls "$state"/lists/*trixie*Packages* >/dev/null 2>&1; then
		return 0
	fi
	uri=$(grep -hE '^URIs:' /etc/apt/sources.list.d/*.sources 2>/dev/null |
		awk '{print $2}' | grep -v security | head -n1 || true)
	if [ -z "$uri" ] && [ -f /etc/apt/sources.list ]; then
		uri=$(awk '$1 == "deb" && $0 !~ /security/ {print $2; exit}' \
			/etc/apt/sources.list)
	fi
	if [ -z "$uri" ]; then
		echo "kiwi: no Debian archive found in the system's apt sources" >&2
		return 1
	fi
	echo "deb [signed-by=/usr/share/keyrings/debian-archive-keyring.gpg] $uri trixie main" \
		>"$state/etc/sources.list"
	apt-get "${TRIXIE_APT[@]}" update -qq ||
		{ echo "kiwi: could not read the Debian 13 (trixie) index from $uri" >&2; return 1; }
}
