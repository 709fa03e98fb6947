#!/usr/bin/env bash
# Builds the Java peer once per Redisson version listed in ./versions (or given as arguments):
# target/peer-<version>.jar, for integration/javapeer. The first run downloads Redisson and the
# Maven plugins into ~/.m2 (Maven Central).
set -euo pipefail
cd "$(dirname "$0")"
if [ $# -eq 0 ]; then
	mapfile -t versions < <(grep -v '^[[:space:]]*\(#\|$\)' versions)
	set -- "${versions[@]}"
fi
for v in "$@"; do
	echo "build.sh: Redisson $v -> target/peer-$v.jar" >&2
	mvn -B -q package -DskipTests -Dredisson.version="$v"
done
