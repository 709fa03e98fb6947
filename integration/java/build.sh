#!/usr/bin/env bash
# Builds both Java peer jars used by integration/javapeer:
#   target/peer-4.jar  Redisson 4.7.0  (mvn -B -q package)
#   target/peer-3.jar  Redisson 3.52.0 (mvn -B -q package -Predisson3)
# The first run downloads Redisson and the Maven plugins into ~/.m2 (Maven Central).
set -euo pipefail
cd "$(dirname "$0")"
mvn -B -q package
mvn -B -q package -Predisson3
ls -l target/peer-*.jar
