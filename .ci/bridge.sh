#!/usr/bin/env bash
# Build and test the Java bridge (bridge/: the smoothscale-streams library, the sample Kafka Streams apps and the
# broker-side streams assignor, bridge/broker-assignor)
# with Maven, and leave the samples' runnable jars in bridge/sample-app/target/sample-app.jar (the code API and
# the plain app adopting by its settings), bridge/spring-boot-app/target/spring-boot-sample.jar and
# bridge/quarkus-app/target/quarkus-sample-runner.jar for the end-to-end tests. Dependencies come from Maven Central into ~/.m2 once; a warm cache builds offline:
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
# The Quarkus sample (bridge/quarkus-app) likewise, under Quarkus' BOM (which manages its Kafka version): an uber-jar
# (`java -jar`), built from scratch for the same reason. Quarkus' build (its augmentation) takes 40-100 s here
# whatever changed, so the jar is kept under ~/.cache/smoothscale/quarkus-sample/ (or $SMOOTHSCALE_QUARKUS_CACHE),
# named by a hash of every file it is built from (its own, the bridge's and the topology's sources and POMs): a
# clone with the same sources copies it instead of building it again.
quarkus_jar=quarkus-app/target/quarkus-sample-runner.jar
quarkus_cache="${SMOOTHSCALE_QUARKUS_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/smoothscale/quarkus-sample}"
sources=$(find pom.xml smoothscale-streams/pom.xml smoothscale-streams/src/main orders-topology quarkus-app \
  -type f -not -path '*/target/*' -print0 | sort -z | xargs -0 sha256sum | sha256sum | cut -c1-16)
if [[ -f "$quarkus_cache/$sources.jar" ]]; then
  mkdir -p "$(dirname "$quarkus_jar")"
  cp "$quarkus_cache/$sources.jar" "$quarkus_jar"
else
  mvn -B -ntp "${offline[@]}" -f quarkus-app/pom.xml clean package
  mkdir -p "$quarkus_cache"
  rm -f "$quarkus_cache"/*.jar
  cp "$quarkus_jar" "$quarkus_cache/$sources.jar"
fi
