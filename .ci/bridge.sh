#!/usr/bin/env bash
# Build and test the Java bridge (bridge/: the smoothscale-streams library, the sample Kafka Streams apps and the
# broker-side streams assignor, bridge/broker-assignor)
# with Maven, and leave the samples' runnable jars in bridge/sample-app/target/sample-app.jar (the code API and
# the plain app adopting by its settings) and bridge/spring-boot-app/target/spring-boot-sample.jar for the
# end-to-end tests. Dependencies come from Maven Central into ~/.m2 once; a warm cache builds offline:
# `SMOOTHSCALE_MAVEN_OFFLINE=1 bash .ci/bridge.sh`.
set -euo pipefail
cd "$(dirname "$0")/../bridge"
offline=()
if [[ "${SMOOTHSCALE_MAVEN_OFFLINE:-0}" == 1 ]]; then offline=(-o); fi
mvn -B -ntp "${offline[@]}" install
# The Spring Boot sample (bridge/spring-boot-app) builds on its own, under Spring Boot's parent (which manages its
# Kafka version), from the smoothscale-streams and orders-topology the reactor just installed.
# `clean`: an up-to-date jar of its own would be kept with the libraries nested in it before (a changed bridge
# would not reach it).
mvn -B -ntp "${offline[@]}" -f spring-boot-app/pom.xml clean package
