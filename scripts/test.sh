#!/usr/bin/env bash
# The project's test command, for a machine that is already set up (Go, redis-server,
# and for container mode a running Docker engine plus the image that
# scripts/redis-image/build.sh builds). On a fresh machine run `bash .ci/run`, which
# sets all of that up and then runs this script.
#
# It vets and tests each module of the repository on its own go.mod (GOWORK=off: go.work
# is for development), in order: the library (.), the command (cmd/goredisson) and the
# benchmarks (bench):
#
#   go vet ./... && go test -race -count=1 -timeout 40m ./...
#
# Every module runs even when an earlier one fails; the exit code is 1 when any failed.
#
# Tests get Redis through internal/redistest; GOREDISSON_REDIS=container|process|auto
# (default auto) picks how it runs.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."

# testcontainers on these machines: no Ryuk (its image cannot be pulled), and dial
# published ports on loopback (/.dockerenv would make it dial the gateway).
export TESTCONTAINERS_RYUK_DISABLED="${TESTCONTAINERS_RYUK_DISABLED:-true}"
export TESTCONTAINERS_HOST_OVERRIDE="${TESTCONTAINERS_HOST_OVERRIDE:-127.0.0.1}"
export GOWORK=off

failed=()
for m in . cmd/goredisson bench otel; do
	echo "scripts/test.sh: module $m: go vet ./... && go test -race -count=1 -timeout 40m ./..." >&2
	if ! (cd "$m" && go vet ./... && go test -race -count=1 -timeout 40m ./...); then
		failed+=("$m")
	fi
done
if [ ${#failed[@]} -gt 0 ]; then
	echo "scripts/test.sh: FAILED in module(s): ${failed[*]}" >&2
	exit 1
fi
