#!/usr/bin/env bash
# Compile smoothscale-streams and run its JUnit tests against every Kafka Streams version of the README's
# compatibility matrix besides the default build's (.ci/bridge.sh, 4.3.1): the parent POM's profiles
# kafka-3.8 ... kafka-4.4, each built in smoothscale-streams/target/compat-kafka-<version>. Offline when
# SMOOTHSCALE_MAVEN_OFFLINE=1, as .ci/bridge.sh.
set -euo pipefail
cd "$(dirname "$0")/../bridge"
offline=()
if [[ "${SMOOTHSCALE_MAVEN_OFFLINE:-0}" == 1 ]]; then offline=(-o); fi
for version in 3.8 3.9 4.0 4.1 4.2 4.4; do
  mvn -B -ntp -q "${offline[@]}" -P "kafka-${version}" -pl smoothscale-streams test
  reports="smoothscale-streams/target/compat-kafka-${version}/surefire-reports"
  tests=0
  for count in $(grep -ho 'tests="[0-9]*"' "$reports"/TEST-*.xml | tr -dc '0-9\n'); do tests=$((tests + count)); done
  echo "Kafka Streams ${version}: ${tests} passed, 0 failed"
done
