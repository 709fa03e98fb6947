#!/usr/bin/env bash
# The project's test command, for a machine that is already set up (Go, redis-server,
# and for container mode a running Docker engine plus the image that
# scripts/redis-image/build.sh builds). On a fresh machine run `bash .ci/run`, which
# sets all of that up and then runs this script.
#
# Tests get Redis through internal/redistest; GOREDISSON_REDIS=container|process|auto
# (default auto) picks how it runs.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."

# testcontainers on these machines: no Ryuk (its image cannot be pulled), and dial
# published ports on loopback (/.dockerenv would make it dial the gateway).
export TESTCONTAINERS_RYUK_DISABLED="${TESTCONTAINERS_RYUK_DISABLED:-true}"
export TESTCONTAINERS_HOST_OVERRIDE="${TESTCONTAINERS_HOST_OVERRIDE:-127.0.0.1}"

go vet ./... && go test -race -count=1 -timeout 40m ./...
