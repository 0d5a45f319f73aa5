#!/usr/bin/env bash
# Sourced by base.sh and java-app.sh: a Debian root filesystem that mmdebstrap makes from Debian's packages (no
# image registry is reachable here), imported into podman's store as an image labelled with its recipe's hash,
# and made again only when that label differs.
#
#   debian_root IMAGE RECIPE PACKAGES ESSENTIAL_HOOK CHANGE
#
# PACKAGES: mmdebstrap's --include list; ESSENTIAL_HOOK: an --essential-hook command or ""; CHANGE: one more
# `podman import --change` instruction or "". Documentation, manual pages and translations are left out.
# Expects `podman` (an array: the command) from the caller.
debian_root() {
	local image=$1 recipe=$2 packages=$3 hook=$4 change=$5 suite=bookworm label start
	label=$("${podman[@]}" image inspect --format '{{index .Labels "io.smoothscale.base-recipe"}}' "$image" 2>/dev/null || true)
	[[ $label != "$recipe" ]] || return 0
	start=$SECONDS
	tmp=$(mktemp -d)
	trap 'rm -rf "$tmp"' EXIT
	local options=(--quiet --variant=minbase --include="$packages"
		--dpkgopt='path-exclude=/usr/share/doc/*' --dpkgopt='path-exclude=/usr/share/man/*'
		--dpkgopt='path-exclude=/usr/share/locale/*' --dpkgopt='path-exclude=/usr/share/info/*')
	[[ -z $hook ]] || options+=(--essential-hook="$hook")
	mmdebstrap "${options[@]}" "$suite" "$tmp/root.tar" \
		"deb http://deb.debian.org/debian $suite main" \
		"deb http://deb.debian.org/debian $suite-updates main" \
		"deb http://deb.debian.org/debian-security $suite-security main" >&2
	local changes=(--change 'ENV PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin'
		--change 'ENV LANG=C.UTF-8' --change "LABEL io.smoothscale.base-recipe=$recipe")
	[[ -z $change ]] || changes+=(--change "$change")
	"${podman[@]}" import --quiet "${changes[@]}" "$tmp/root.tar" "$image" >/dev/null
	echo "made $image (Debian $suite: $packages) in $((SECONDS - start)) s" >&2
}
