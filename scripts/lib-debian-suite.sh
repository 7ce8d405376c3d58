# SPDX-License-Identifier: GPL-2.0
#
# Another Debian release's archive (trixie, sid, ...) without touching the
# system's apt sources: a private apt state per suite under
# /var/cache/kiwi-setup/SUITE, whose address is the system's own Debian
# archive. Sourced by scripts/setup.sh (virtme-ng), scripts/debian13-kernel.sh
# (Debian 13's kernel) and scripts/rdma-core-release.sh (rdma-core).

# suite_apt_init SUITE [update]: set SUITE_APT, the apt-get and apt-cache
# options that use SUITE's private state, and SUITE_STATE, its directory,
# reading SUITE's index into it when it has none (or, with "update",
# always). Returns non-zero, with a message, on failure.
suite_apt_init() {
	local suite=$1 uri
	SUITE_STATE=/var/cache/kiwi-setup/$suite
	mkdir -p "$SUITE_STATE/lists/partial" "$SUITE_STATE/archives/partial" \
		"$SUITE_STATE/etc"
	SUITE_APT=(-o Dir::Etc::sourcelist="$SUITE_STATE/etc/sources.list"
		   -o Dir::Etc::sourceparts=-
		   -o Dir::State::Lists="$SUITE_STATE/lists"
		   -o Dir::Cache::Archives="$SUITE_STATE/archives"
		   -o Dir::Cache::pkgcache= -o Dir::Cache::srcpkgcache=
		   -o APT::Get::List-Cleanup=0)
	if [ "${2:-}" != update ] &&
	   ls "$SUITE_STATE"/lists/*"_${suite}_"*Packages* >/dev/null 2>&1; then
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
	echo "deb [signed-by=/usr/share/keyrings/debian-archive-keyring.gpg] $uri $suite main" \
		>"$SUITE_STATE/etc/sources.list"
	apt-get "${SUITE_APT[@]}" update -qq ||
		{ echo "kiwi: could not read Debian's $suite index from $uri" >&2; return 1; }
}
