#!/usr/bin/env bash
# Checks what a user of the library gets: a module outside this repository that imports
# only github.com/goredisson/goredisson/rlock (through a replace to this checkout, with
# GOWORK=off) must not have the command's or the benchmarks' dependencies in its module
# graph (`go list -m all`). Exits 1, naming them, when one appears; prints the graph's size
# otherwise. Also fails when a module of this repository is not tidy (`go mod tidy -diff`).
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
root="$(pwd)"

# Module path prefixes that only cmd/goredisson and bench may bring in.
readonly FORBIDDEN=(
	github.com/spf13/cobra
	github.com/schollz/progressbar
	gonum.org/v1/plot
	github.com/go-redsync/redsync
	github.com/bsm/redislock
	github.com/redis/go-redis
	github.com/go-redis/redis
	golang.org/x/sync
)
# The modules of this repository (see go.work).
readonly MODULES=(. cmd/goredisson bench otel)

export GOWORK=off
status=0

for m in "${MODULES[@]}"; do
	if ! diff="$(cd "$m" && go mod tidy -diff 2>&1)"; then
		printf 'check-deps: module %s is not tidy (run `go mod tidy` in it):\n%s\n' "$m" "$diff" >&2
		status=1
	fi
done

scratch="$(mktemp -d "${TMPDIR:-/tmp}/goredisson-check-deps-XXXXXX")"
trap 'rm -rf "$scratch"' EXIT
go_version="$(sed -n 's/^go //p' go.mod)"
cat >"$scratch/go.mod" <<MOD
module example.com/rlockuser

go $go_version

require github.com/goredisson/goredisson v0.0.0-00010101000000-000000000000

replace github.com/goredisson/goredisson => $root
MOD
cat >"$scratch/main.go" <<'GO'
// Command rlockuser imports the library's public package and nothing else.
package main

import "github.com/goredisson/goredisson/rlock"

func main() { _ = rlock.Options{} }
GO
(cd "$scratch" && go mod tidy && go build -o /dev/null .)
graph="$(cd "$scratch" && go list -m all)"

found=()
for prefix in "${FORBIDDEN[@]}"; do
	while read -r mod _; do
		[[ "$mod" == "$prefix" || "$mod" == "$prefix"/* ]] && found+=("$mod")
	done <<<"$graph"
done
if [ ${#found[@]} -gt 0 ]; then
	printf 'check-deps: a module importing only rlock gets %s in its module graph:\n%s\n' "${found[*]}" "$graph" >&2
	status=1
else
	printf 'check-deps: a module importing only rlock has %d modules in its graph, none of: %s\n' \
		"$(wc -l <<<"$graph")" "${FORBIDDEN[*]}" >&2
fi
exit "$status"
