#!/usr/bin/env bash
# podman as the project's image scripts and tests run it: its own image store under the user cache
# (~/.cache/smoothscale/images/, or $SMOOTHSCALE_IMAGE_CACHE), runc (crun, podman's default on Debian,
# refuses this machine's hybrid cgroup v1 layout), cgroupfs (no systemd here), events in a file, and open-file
# and process limits the machine allows (podman's defaults exceed them). Arguments are podman's.
set -euo pipefail
cache="${SMOOTHSCALE_IMAGE_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/smoothscale/images}"
mkdir -p "$cache"
conf="$cache/containers.conf"
if [[ ! -f $conf ]]; then
	cat >"$conf.tmp" <<CONF
[containers]
default_ulimits = ["nofile=20000:20000", "nproc=4096:4096"]
[engine]
cgroup_manager = "cgroupfs"
events_logger = "file"
runtime = "runc"
CONF
	mv "$conf.tmp" "$conf"
fi
export CONTAINERS_CONF="$conf"
exec podman --root "$cache/storage" --runroot "$cache/run" --storage-driver overlay "$@"
