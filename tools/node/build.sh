#!/usr/bin/env bash
# Builds a real node's binaries into a user-level cache keyed by the pinned releases
# (~/.cache/smoothscale/node-containerd-<release>-kube-<release>/bin, or $SMOOTHSCALE_NODE_CACHE):
# containerd 2.x, its runc shim and ctr from this wrapper module (Debian's containerd is 1.6, which a
# Kubernetes 1.36+ kubelet no longer supports), and the kubelet and kube-scheduler (which binds pods to the
# node) from tools/kube's module (the API server's release). runc and the CNI plugins are Debian's
# (tools/image/packages.sh). Already-built binaries are kept: a warm machine rebuilds nothing. Cold, on two
# cores, containerd took about 11 minutes and the kubelet 8; kube-scheduler, after them, 48 s.
# Prints the folder on its last line; smoothscale.sandbox.real_node runs them (docs/real-node.md).
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
bash "$here/../image/packages.sh"
kube=$(bash "$here/../kube/build.sh" kubelet kube-scheduler | tail -n 1)

cd "$here"
release=$(awk 'NF >= 2 && $(NF - 1) == "github.com/containerd/containerd/v2" {print $NF}' go.mod)
kube_release=$(basename "$(dirname "$kube")")
out="${SMOOTHSCALE_NODE_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/smoothscale/node-containerd-$release-$kube_release}/bin"
mkdir -p "$out"
ln -sfn "$kube/kubelet" "$out/kubelet"
ln -sfn "$kube/kube-scheduler" "$out/kube-scheduler"
tmp=$(mktemp -d "$out/.build.XXXXXX")
trap 'rm -rf "$tmp"' EXIT
export CGO_ENABLED=0
for command in containerd containerd-shim-runc-v2 ctr; do
	[[ -x "$out/$command" ]] && continue
	start=$SECONDS
	go build -trimpath -mod=readonly -ldflags "-s -w -X github.com/containerd/containerd/v2/version.Version=$release" \
		-o "$tmp/$command" "github.com/containerd/containerd/v2/cmd/$command"
	mv "$tmp/$command" "$out/$command"
	echo "built $command in $((SECONDS - start)) s" >&2
done
echo "$out"
