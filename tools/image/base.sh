#!/usr/bin/env bash
# Makes the base image the Dockerfile's FROM line names, locally (no image registry is reachable here): a
# Debian bookworm root filesystem with Debian's Python 3.11 built by mmdebstrap from Debian's packages,
# imported into podman's store (tools/image/podman.sh) under exactly that name, Docker's reading of it
# (`python:TAG` is `docker.io/library/python:TAG`). The image carries this script's hash as a label: it is
# made again only when this recipe changes. Prints the base's name on the last line.
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
root="$(cd "$here/../.." && pwd)"
podman=("$here/podman.sh")

# `python-is-python3` gives the `python` the Dockerfile calls, `python3-venv` ensurepip's pip, ca-certificates
# a trust store. Documentation, manual pages and translations are left out.
suite=bookworm
packages=python3,python3-venv,python-is-python3,ca-certificates
recipe=$(sha256sum "$here/base.sh" | cut -c1-16)

mapfile -t bases < <(awk 'toupper($1) == "FROM" {print $2}' "$root/Dockerfile" | sort -u)
if ((${#bases[@]} != 1)); then
	echo "the Dockerfile's stages name ${#bases[@]} base images (${bases[*]}); this script makes exactly one" >&2
	exit 1
fi
base="${bases[0]}"
[[ $base == */* ]] || base="library/$base"
[[ ${base%%/*} == *.* ]] || base="docker.io/$base"

label=$("${podman[@]}" image inspect --format '{{index .Labels "io.smoothscale.base-recipe"}}' "$base" 2>/dev/null || true)
if [[ $label != "$recipe" ]]; then
	start=$SECONDS
	tmp=$(mktemp -d)
	trap 'rm -rf "$tmp"' EXIT
	mmdebstrap --quiet --variant=minbase --include="$packages" \
		--dpkgopt='path-exclude=/usr/share/doc/*' --dpkgopt='path-exclude=/usr/share/man/*' \
		--dpkgopt='path-exclude=/usr/share/locale/*' --dpkgopt='path-exclude=/usr/share/info/*' \
		"$suite" "$tmp/root.tar" \
		"deb http://deb.debian.org/debian $suite main" \
		"deb http://deb.debian.org/debian $suite-updates main" \
		"deb http://deb.debian.org/debian-security $suite-security main" >&2
	"${podman[@]}" import --quiet \
		--change 'ENV PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin' \
		--change 'ENV LANG=C.UTF-8' \
		--change "LABEL io.smoothscale.base-recipe=$recipe" \
		--change 'CMD ["python3"]' \
		"$tmp/root.tar" "$base" >/dev/null
	echo "made $base (Debian $suite, $("${podman[@]}" run --rm "$base" python3 --version)) in $((SECONDS - start)) s" >&2
fi
echo "$base"
