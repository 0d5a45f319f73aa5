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

# shellcheck source=tools/image/debian-root.sh
source "$here/debian-root.sh"

# `python-is-python3` gives the `python` the Dockerfile calls, `python3-venv` ensurepip's pip, ca-certificates
# a trust store.
packages=python3,python3-venv,python-is-python3,ca-certificates
recipe=$(cat "$here/base.sh" "$here/debian-root.sh" | sha256sum | cut -c1-16)

mapfile -t bases < <(awk 'toupper($1) == "FROM" {print $2}' "$root/Dockerfile" | sort -u)
if ((${#bases[@]} != 1)); then
	echo "the Dockerfile's stages name ${#bases[@]} base images (${bases[*]}); this script makes exactly one" >&2
	exit 1
fi
base="${bases[0]}"
[[ $base == */* ]] || base="library/$base"
[[ ${base%%/*} == *.* ]] || base="docker.io/$base"

debian_root "$base" "$recipe" "$packages" "" 'CMD ["python3"]'
echo "$base"
