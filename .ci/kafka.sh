#!/usr/bin/env bash
# Apache Kafka's broker jars from Maven Central (the version pinned in sandbox/kafka/pom.xml), copied into
# ~/.cache/smoothscale/kafka-<version>/libs (or $SMOOTHSCALE_CACHE). A warm cache returns at once without
# running Maven; a warm ~/.m2 makes a fresh copy a few seconds. Needs the project's virtual environment.
set -euo pipefail
cd "$(dirname "$0")/.."
python -m smoothscale.sandbox.kafka install
