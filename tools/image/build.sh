#!/usr/bin/env bash
# Builds the operator image from the repository's Dockerfile, unchanged, with podman (tools/image/podman.sh:
# its own image store under ~/.cache/smoothscale/images/, runc), on the base tools/image/base.sh makes.
#
# The Dockerfile's build stage installs the project with pip. Here pip reads a configuration mounted for the
# build only (nothing of it reaches a layer) that points it at a wheelhouse in the cache instead of PyPI:
# `pip wheel` fills it on the host (the host's pip cache and trust store; this machine reaches PyPI through
# a TLS-inspecting proxy whose CA the base does not carry), so the build itself runs offline
# (--network=none) and a source change, which invalidates the install layer, costs an install from local
# wheels rather than a download. Unchanged sources reuse every layer. Prints the image's size on stderr and
# its name on the last line.
#
#   bash tools/image/build.sh           # prints docker.io/smoothscale/operator:0.1.0
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
root="$(cd "$here/../.." && pwd)"
podman=("$here/podman.sh")
cache="${SMOOTHSCALE_IMAGE_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/smoothscale/images}"
bash "$here/packages.sh"
bash "$here/base.sh" >/dev/null

start=$SECONDS
wheels="$cache/wheels"
# Filled again only when pyproject.toml (the dependencies) changes.
stamp=$(sha256sum "$root/pyproject.toml" | cut -c1-16)
if [[ "$(cat "$wheels/.pyproject" 2>/dev/null || true)" != "$stamp" ]]; then
	mkdir -p "$wheels"
	build_requires=$(python3 -c 'import sys, tomllib; print(*tomllib.load(open(sys.argv[1], "rb"))["build-system"]["requires"], sep="\n")' "$root/pyproject.toml")
	mapfile -t build_requires <<<"$build_requires"
	python3 -m pip wheel --quiet --wheel-dir "$wheels" "${build_requires[@]}" "$root[operator]" >"$cache/pip-wheel.log" 2>&1 ||
		{ tail -50 "$cache/pip-wheel.log" >&2; exit 1; }
	rm -f "$wheels"/smoothscale-*.whl # the image builds the project from its own copy of the sources
	printf '[global]\nno-index = true\nfind-links = /wheels\n' >"$cache/pip.conf"
	echo "$stamp" >"$wheels/.pyproject"
	echo "wheelhouse filled in $((SECONDS - start)) s" >&2
fi

version=$(awk -F'"' '$1 ~ /^appVersion: / {print $2}' "$root/charts/smoothscale/Chart.yaml")
image="docker.io/smoothscale/operator:$version"
build=(build --quiet --pull=never --network=none --layers --volume "$cache/pip.conf:/etc/pip.conf:ro"
	--volume "$wheels:/wheels:ro" --file "$root/Dockerfile")
start=$SECONDS
# The build stage is tagged too, so that its layers stay cached while earlier builds' layers, untagged, are
# pruned (each is some 600 MB).
"${podman[@]}" "${build[@]}" --target build --tag "localhost/smoothscale/operator-build:$version" "$root" >/dev/null
"${podman[@]}" "${build[@]}" --tag "$image" "$root" >/dev/null
"${podman[@]}" image prune --force >/dev/null
size=$("${podman[@]}" image inspect --format '{{.Size}}' "$image")
echo "built $image in $((SECONDS - start)) s: $((size / 1000000)) MB" >&2
echo "$image"
