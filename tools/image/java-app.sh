#!/usr/bin/env bash
# The Java sample Kafka Streams app (bridge/sample-app, its shaded jar built by .ci/bridge.sh) as an image of
# its own, for the real node (docs/real-node.md): a Java 17 runtime on a Debian bookworm root that mmdebstrap
# makes from Debian's packages (no image registry is reachable here; the operator's base is made the same
# way, tools/image/base.sh), the jar on top, run as uid 10001. Saved into a docker-archive for
# `ctr images import` under ~/.cache/smoothscale/images/ (or $SMOOTHSCALE_IMAGE_CACHE), named by the hash of
# its inputs (this script and the jar's contents): a warm machine with the same jar rebuilds and saves nothing. Prints
# the image's name and the archive's path, one a line, last.
#
#   bash tools/image/java-app.sh [JAR]     # JAR: bridge/sample-app/target/sample-app.jar by default
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
root="$(cd "$here/../.." && pwd)"
podman=("$here/podman.sh")
cache="${SMOOTHSCALE_IMAGE_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/smoothscale/images}"
jar="${1:-$root/bridge/sample-app/target/sample-app.jar}"
[[ -f $jar ]] || bash "$root/.ci/bridge.sh" >&2
[[ -f $jar ]] || { echo "$jar is missing after .ci/bridge.sh" >&2; exit 1; }
bash "$here/packages.sh"
# shellcheck source=tools/image/debian-root.sh
source "$here/debian-root.sh"

# The runtime: Debian's OpenJDK 17 (the bridge's release level).
packages=openjdk-17-jre-headless
recipe=$(cat "$here/java-app.sh" "$here/debian-root.sh" | sha256sum | cut -c1-16)
jre=localhost/smoothscale/jre:17
# The jar's contents, not its bytes: Maven stamps every entry with the build's time, so two builds of the same
# sources differ byte for byte; their entries' names and CRC-32s do not.
contents=$(python3 -c 'import sys, zipfile; print(*(f"{i.filename} {i.CRC}" for i in zipfile.ZipFile(sys.argv[1]).infolist()), sep="\n")' "$jar" | sha256sum)
inputs=$( (echo "$recipe"; echo "$contents") | sha256sum | cut -c1-16)
image="localhost/smoothscale/orders-java:$inputs"
archive="$cache/java-app-$inputs.tar"
if [[ -f $archive ]]; then
	echo "$image"
	echo "$archive"
	exit 0
fi

# OpenJDK's postinst links its manual pages into /usr/share/man/man1, which must exist although no manual page
# is installed (without it: "update-alternatives: error creating symbolic link").
debian_root "$jre" "$recipe" "$packages" 'mkdir -p "$1/usr/share/man/man1"' ""

start=$SECONDS
context=$(mktemp -d)
trap 'rm -rf "$context" "${tmp:-}"' EXIT
cp "$jar" "$context/app.jar"
# The JVM as the sandbox runs a pod's (kafka_streams.POD_JAVA): a small heap, the serial collector, C1 only.
cat >"$context/Containerfile" <<EOF
FROM $jre
COPY app.jar /opt/orders/app.jar
USER 10001:10001
ENTRYPOINT ["java", "-Xmx384m", "-XX:+UseSerialGC", "-XX:TieredStopAtLevel=1", "-jar", "/opt/orders/app.jar"]
EOF
"${podman[@]}" build --quiet --pull=never --network=none --tag "$image" "$context" >/dev/null
rm -f "$cache"/java-app-*.tar
for old in $("${podman[@]}" images --format '{{.Repository}}:{{.Tag}}' localhost/smoothscale/orders-java); do
	[[ $old == "$image" ]] || "${podman[@]}" rmi --force "$old" >/dev/null
done
"${podman[@]}" save --quiet --format docker-archive --output "$archive.tmp" "$image"
mv "$archive.tmp" "$archive"
size=$("${podman[@]}" image inspect --format '{{.Size}}' "$image")
echo "built and saved $image in $((SECONDS - start)) s: $((size / 1000000)) MB" >&2
echo "$image"
echo "$archive"
