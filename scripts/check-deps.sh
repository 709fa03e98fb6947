#!/usr/bin/env bash
# Checks the dependencies of this repository's modules (see go.work):
#
#  1. No go.mod has a replace directive: go.work joins the modules for development, and a
#     replace would make `go install …/cmd/goredisson@version` fail.
#  2. Every module is tidy, each on its own go.mod (GOWORK=off). The modules that require
#     another of this repository resolve it from a local file GOPROXY that serves the
#     working tree at the version their go.mod requires (scripts/lib/localproxy.sh). Their
#     go.sum holds no line for this repository's modules: those hashes change with every
#     change of the tree, and a release writes them (scripts/check-install.sh rehearses
#     one).
#  3. What a user of the library gets: a module outside this repository that imports only
#     github.com/goredisson/goredisson/rlock (from the local proxy) has at most MAX_MODULES
#     modules in `go list -m all` and none of the FORBIDDEN ones.
#
# Exits 1, saying what is wrong, when a check fails. With --fix it makes the modules tidy
# instead of checking (go mod tidy in each, through the local proxy), then checks the rest.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
root="$(pwd)"

# The most modules a module importing only rlock may have in its graph, itself included.
# 25 until the OpenTelemetry packages leave the library module (they bring 13); then 12.
readonly MAX_MODULES=12
# Module path prefixes that a module importing only rlock must not get: the command's,
# the benchmarks' and the container tests' dependencies.
readonly FORBIDDEN=(
	github.com/testcontainers
	github.com/moby
	github.com/docker
	github.com/containerd
	github.com/shirou/gopsutil
	github.com/sirupsen/logrus
	github.com/spf13/cobra
	github.com/schollz/progressbar
	gonum.org/v1/plot
	github.com/go-redsync/redsync
	github.com/bsm/redislock
	github.com/redis/go-redis
	github.com/go-redis/redis
	golang.org/x/sync
)
# The modules of this repository, each required only by those after it.
readonly MODULES=(. integration cmd/goredisson bench otel)
readonly LIBRARY=github.com/goredisson/goredisson

fix=false
[ "${1:-}" = --fix ] && fix=true

LOCALPROXY_ROOT="$root"
# shellcheck source=lib/localproxy.sh
. scripts/lib/localproxy.sh
localproxy_setup
trap localproxy_cleanup EXIT
status=0

# 1. No replace directives.
for m in "${MODULES[@]}"; do
	if (cd "$m" && go mod edit -json) | grep -q '"Replace": \['; then
		printf 'check-deps: %s/go.mod has a replace directive; go.work is for development: remove it\n' "$m" >&2
		status=1
	fi
done

# Serve each module of this repository at every version another one requires.
for m in "${MODULES[@]}"; do
	path="$(cd "$m" && go list -m)"
	for user in "${MODULES[@]}"; do
		v="$(localproxy_required "$path" "$user")"
		[ -n "$v" ] && localproxy_serve "$v" "$m"
	done
done

# 2. Tidiness, on a copy of each go.mod and go.sum (-modfile).
work="$LOCALPROXY_TMP/tidy"
for m in "${MODULES[@]}"; do
	mkdir -p "$work/$m"
	cp "$m/go.mod" "$work/$m/go.mod"
	[ -f "$m/go.sum" ] && cp "$m/go.sum" "$work/$m/go.sum"
	if ! out="$(cd "$m" && go mod tidy -modfile="$work/$m/go.mod" 2>&1)"; then
		printf 'check-deps: go mod tidy failed in module %s:\n%s\n' "$m" "$out" >&2
		status=1
		continue
	fi
	touch "$work/$m/go.sum"
	sed -i "\\#^$LOCALPROXY_PREFIX/#d" "$work/$m/go.sum"
	if $fix; then
		cp "$work/$m/go.mod" "$m/go.mod"
		if [ -s "$work/$m/go.sum" ]; then cp "$work/$m/go.sum" "$m/go.sum"; else rm -f "$m/go.sum"; fi
		continue
	fi
	if ! diff="$(diff -u "$m/go.mod" "$work/$m/go.mod" && diff -u "$m/go.sum" "$work/$m/go.sum")"; then
		printf 'check-deps: module %s is not tidy (run `bash scripts/check-deps.sh --fix`):\n%s\n' "$m" "$diff" >&2
		status=1
	fi
done

# 3. What a module importing only rlock gets.
scratch="$LOCALPROXY_TMP/rlockuser"
mkdir -p "$scratch"
cat >"$scratch/go.mod" <<MOD
module example.com/rlockuser

go $(sed -n 's/^go //p' go.mod)

require $LIBRARY $(localproxy_required "$LIBRARY" integration)
MOD
cat >"$scratch/main.go" <<'GO'
// Command rlockuser imports the library's public package and nothing else.
package main

import "github.com/goredisson/goredisson/rlock"

func main() { _ = rlock.Options{} }
GO
(cd "$scratch" && go mod tidy && go build -o /dev/null .)
graph="$(cd "$scratch" && go list -m all)"
count="$(wc -l <<<"$graph")"

found=()
for prefix in "${FORBIDDEN[@]}"; do
	while read -r mod _; do
		[[ "$mod" == "$prefix" || "$mod" == "$prefix"/* ]] && found+=("$mod")
	done <<<"$graph"
done
if [ ${#found[@]} -gt 0 ]; then
	printf 'check-deps: a module importing only rlock gets %s in its module graph:\n%s\n' "${found[*]}" "$graph" >&2
	status=1
fi
if [ "$count" -gt "$MAX_MODULES" ]; then
	printf 'check-deps: a module importing only rlock has %d modules in its graph, more than %d:\n%s\n' \
		"$count" "$MAX_MODULES" "$graph" >&2
	status=1
fi
if [ "$status" -eq 0 ]; then
	printf 'check-deps: no replace; modules tidy (%s); a module importing only rlock has %d modules in its graph (at most %d), none of: %s\n' \
		"${MODULES[*]}" "$count" "$MAX_MODULES" "${FORBIDDEN[*]}" >&2
fi
exit "$status"
