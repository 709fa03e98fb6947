#!/usr/bin/env bash
# The project's test command, for a machine that is already set up (Go, redis-server,
# and for container mode a running Docker engine plus the image that
# scripts/redis-image/build.sh builds). On a fresh machine run `bash .ci/run`, which
# sets all of that up and then runs this script.
#
# It vets and tests each module of the repository, in order: the library (.), the
# integration tests (integration), the command (cmd/goredisson) and the benchmarks
# (bench):
#
#   go vet ./... && go test -race -count=1 -timeout 40m ./...
#
# The library runs on its own go.mod (GOWORK=off): it needs no other module of the
# repository. The others require the library (and the integration module) at a version
# that is not published, so they run in workspace mode: go.work points them at this tree.
#
# Every module runs even when an earlier one fails; the exit code is 1 when any failed.
#
# Tests get Redis through internal/redistest; GOREDISSON_REDIS=container|process|auto
# (default auto) picks how it runs. The library's own tests always run redis-server
# processes (its module has no container backend: container mode fails there); the
# other modules' tests install integration/rediscontainer, so auto means a container
# when a Docker engine and the image are there.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."

# testcontainers on these machines: no Ryuk (its image cannot be pulled), and dial
# published ports on loopback (/.dockerenv would make it dial the gateway).
export TESTCONTAINERS_RYUK_DISABLED="${TESTCONTAINERS_RYUK_DISABLED:-true}"
export TESTCONTAINERS_HOST_OVERRIDE="${TESTCONTAINERS_HOST_OVERRIDE:-127.0.0.1}"

failed=()
for m in . integration cmd/goredisson bench otel; do
	work="$(pwd)/go.work"
	[ "$m" = . ] && work=off
	echo "scripts/test.sh: module $m (GOWORK=$work): go vet ./... && go test -race -count=1 -timeout 40m ./..." >&2
	if ! (cd "$m" && export GOWORK="$work" && go vet ./... && go test -race -count=1 -timeout 40m ./...); then
		failed+=("$m")
	fi
done
if [ ${#failed[@]} -gt 0 ]; then
	echo "scripts/test.sh: FAILED in module(s): ${failed[*]}" >&2
	exit 1
fi
