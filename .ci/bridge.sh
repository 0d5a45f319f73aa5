#!/usr/bin/env bash
# Build and test the Java bridge (bridge/: the smoothscale-streams library, the sample Kafka Streams app and the
# broker-side streams assignor, bridge/broker-assignor)
# with Maven, and leave the sample app's runnable jar in bridge/sample-app/target/sample-app.jar for the
# end-to-end tests. Dependencies come from Maven Central into ~/.m2 once; a warm cache builds offline:
# `SMOOTHSCALE_MAVEN_OFFLINE=1 bash .ci/bridge.sh`.
set -euo pipefail
cd "$(dirname "$0")/../bridge"
offline=()
if [[ "${SMOOTHSCALE_MAVEN_OFFLINE:-0}" == 1 ]]; then offline=(-o); fi
mvn -B -ntp "${offline[@]}" install
