#!/usr/bin/env bash
# The images a real node runs, saved into one archive for `ctr images import` (no image registry is
# reachable here, so a node's images are loaded, never pulled): the operator image (tools/image/build.sh)
# and the pod sandbox ("pause") image, the base image with `sleep infinity` as its process (it holds the
# pod's namespaces; it shares all its layers with the base). The archive is kept under
# ~/.cache/smoothscale/images/ and saved again only when an image changes. Prints the operator image's
# name, the sandbox image's name and the archive's path, one a line, last.
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
podman=("$here/../image/podman.sh")
cache="${SMOOTHSCALE_IMAGE_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/smoothscale/images}"
image=$(bash "$here/../image/build.sh" | tail -n 1)
base=$(bash "$here/../image/base.sh" | tail -n 1)
pause=localhost/smoothscale/pause:1
context=$(mktemp -d)
trap 'rm -rf "$context"' EXIT
printf 'FROM %s\nENTRYPOINT ["sleep", "infinity"]\n' "$base" >"$context/Containerfile"
"${podman[@]}" build --quiet --pull=never --network=none --tag "$pause" "$context" >/dev/null
ids=$("${podman[@]}" image inspect --format '{{.Id}}' "$image" "$pause" | cut -c1-12 | paste -sd-)
archive="$cache/node-images-$ids.tar"
if [[ ! -f $archive ]]; then
	start=$SECONDS
	rm -f "$cache"/node-images-*.tar
	"${podman[@]}" save --quiet --multi-image-archive --format docker-archive --output "$archive.tmp" "$image" "$pause"
	mv "$archive.tmp" "$archive"
	echo "saved $image and $pause in $((SECONDS - start)) s: $(($(stat -c %s "$archive") / 1000000)) MB" >&2
fi
echo "$image"
echo "$pause"
echo "$archive"
