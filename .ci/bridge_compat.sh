#!/usr/bin/env bash
# Compile smoothscale-streams and run its JUnit tests against every Kafka Streams version of the README's
# compatibility matrix besides the default build's (.ci/bridge.sh, 4.3.1): the parent POM's profiles
# kafka-3.8 ... kafka-4.4, each built in smoothscale-streams/target/compat-kafka-<version>. The first
# builds alone (it fetches the plugins every build shares: Maven 3.8 has no lock between processes), then
# two at a time (separate target folders; most of each build is a JVM waiting on one core). Offline when
# SMOOTHSCALE_MAVEN_OFFLINE=1, as .ci/bridge.sh.
set -euo pipefail
cd "$(dirname "$0")/../bridge"
export SMOOTHSCALE_MAVEN_OFFLINE="${SMOOTHSCALE_MAVEN_OFFLINE:-0}"

one_version() {
  local version=$1 offline=() reports tests=0 log
  if [[ "$SMOOTHSCALE_MAVEN_OFFLINE" == 1 ]]; then offline=(-o); fi
  log=$(mktemp)
  if ! mvn -B -ntp -q "${offline[@]}" -P "kafka-${version}" -pl smoothscale-streams test >"$log" 2>&1; then
    cat "$log"
    echo "Kafka Streams ${version}: FAILED (output above)"
    rm -f "$log"
    return 1
  fi
  rm -f "$log"
  reports="smoothscale-streams/target/compat-kafka-${version}/surefire-reports"
  for count in $(grep -ho 'tests="[0-9]*"' "$reports"/TEST-*.xml | tr -dc '0-9\n'); do tests=$((tests + count)); done
  echo "Kafka Streams ${version}: ${tests} passed, 0 failed"
}
export -f one_version

one_version 3.8
printf '%s\n' 3.9 4.0 4.1 4.2 4.4 | xargs -P 2 -I{} bash -c 'one_version {}'
