#!/usr/bin/env bash
# Installs the Debian packages the image build and the real node need, if any is missing (CI's machine is
# fresh and runs as root): mmdebstrap (the base image's root filesystem), podman (builds the Dockerfile;
# buildah is its library), runc (the OCI runtime: crun refuses this machine's hybrid cgroup v1 layout),
# containernetworking-plugins (the CNI bridge, host-local and loopback plugins of the real node's pods),
# iptables (the bridge plugin's masquerade and port rules) and uidmap.
set -euo pipefail
packages=(mmdebstrap podman runc containernetworking-plugins iptables uidmap)
missing=()
for package in "${packages[@]}"; do
	dpkg-query --show --showformat='${db:Status-Status}' "$package" 2>/dev/null | grep -qx installed || missing+=("$package")
done
if ((${#missing[@]})); then
	echo "installing ${missing[*]}" >&2
	apt-get -o DPkg::Lock::Timeout=600 update -q >&2
	DEBIAN_FRONTEND=noninteractive apt-get -o DPkg::Lock::Timeout=600 install -y -q --no-install-recommends \
		"${missing[@]}" >&2
fi
