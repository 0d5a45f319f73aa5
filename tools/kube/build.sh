#!/usr/bin/env bash
# Builds etcd, kube-apiserver, kube-controller-manager and kubectl from this wrapper module into a user-level
# cache keyed by the pinned Kubernetes release (~/.cache/smoothscale/kube-<release>/bin, or
# $SMOOTHSCALE_KUBE_CACHE). Already-built binaries are kept: a warm machine rebuilds nothing. Go's own module
# and build caches make a rebuild after a version change cheap too. Prints the folder on its last line.
# Arguments name other commands of the module to build instead (tools/node/build.sh builds the kubelet).
set -euo pipefail
cd "$(dirname "$0")"

release=$(awk '$1 == "k8s.io/kubernetes" {print $2}' go.mod)
etcd_release=$(awk '$1 == "go.etcd.io/etcd/server/v3" {print $2}' go.mod)
out="${SMOOTHSCALE_KUBE_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/smoothscale/kube-$release-etcd-$etcd_release}/bin"
commands=(etcd kube-apiserver kube-controller-manager kubectl)
if (($#)); then commands=("$@"); fi

missing=()
for command in "${commands[@]}"; do
	[[ -x "$out/$command" ]] || missing+=("$command")
done
if ((${#missing[@]} == 0)); then
	echo "$out"
	exit 0
fi

mkdir -p "$out"
tmp=$(mktemp -d "$out/.build.XXXXXX")
trap 'rm -rf "$tmp"' EXIT
# The version the API server reports (/version, kubectl version); without it it says v0.0.0-master.
major=${release#v}
major=${major%%.*}
minor=${release#v*.}
minor=${minor%%.*}
version_pkg=k8s.io/component-base/version
ldflags="-s -w -X $version_pkg.gitVersion=$release -X $version_pkg.gitMajor=$major -X $version_pkg.gitMinor=$minor"
ldflags+=" -X $version_pkg.gitTreeState=clean -X $version_pkg.buildDate=1970-01-01T00:00:00Z"
export CGO_ENABLED=0
for command in "${missing[@]}"; do
	start=$SECONDS
	if [[ $command == etcd ]]; then
		package=./cmd/etcd
	else
		package=k8s.io/kubernetes/cmd/$command
	fi
	go build -trimpath -mod=readonly -ldflags "$ldflags" -o "$tmp/$command" "$package"
	mv "$tmp/$command" "$out/$command"
	echo "built $command in $((SECONDS - start)) s" >&2
done
echo "$out"
