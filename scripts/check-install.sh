#!/usr/bin/env bash
# Proves that the command installs the way a user installs it once this repository is
# published:
#
#   go install github.com/goredisson/goredisson/cmd/goredisson@VERSION
#
# It rehearses a release of the working tree at VERSION, the pseudo-version of HEAD
# (v0.0.0-<commit time>-<commit>), on a local file GOPROXY (scripts/lib/localproxy.sh):
# the library is served at VERSION; then the integration module and the command, each
# with its go.mod requiring this repository's modules at VERSION and its go.sum resolved
# against the local proxy (go mod tidy), as a release updates them. It then installs the
# command from the proxy into a temporary GOBIN (GOWORK=off, no replace anywhere) and runs
# `goredisson --help`. Other modules come from this machine's module cache or
# `go env GOPROXY`. Exits 1 when the install or the run fails.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
root="$(pwd)"

readonly LIBRARY=github.com/goredisson/goredisson
readonly INTEGRATION=$LIBRARY/integration
readonly COMMAND=$LIBRARY/cmd/goredisson

LOCALPROXY_ROOT="$root"
# shellcheck source=lib/localproxy.sh
. scripts/lib/localproxy.sh
localproxy_setup
trap localproxy_cleanup EXIT

when="$(TZ=UTC git log -1 --format=%cd --date=format-local:%Y%m%d%H%M%S)"
version="v0.0.0-$when-$(git rev-parse --short=12 HEAD)"
echo "check-install: serving the working tree at $version on $LOCALPROXY_DIR" >&2

localproxy_serve "$version" .

# release DIR: serves the module in DIR at $version, with its requirements on this
# repository's modules set to $version and its go.mod and go.sum tidied.
release() {
	local dir="$1" stage="$LOCALPROXY_TMP/release/$1" edits=() m
	mkdir -p "$stage"
	cp "$dir/go.mod" "$stage/go.mod"
	[ -f "$dir/go.sum" ] && cp "$dir/go.sum" "$stage/go.sum"
	for m in "$LIBRARY" "$INTEGRATION"; do
		[ -n "$(localproxy_required "$m" "$dir")" ] && edits+=("-require=$m@$version")
	done
	if ! out="$(cd "$dir" && go mod edit -modfile="$stage/go.mod" "${edits[@]}" 2>&1 &&
		go mod tidy -modfile="$stage/go.mod" 2>&1)"; then
		printf 'check-install: go mod tidy of %s at %s failed:\n%s\n' "$dir" "$version" "$out" >&2
		exit 1
	fi
	localproxy_serve "$version" -gomod "$stage/go.mod" -gosum "$stage/go.sum" "$dir"
}
release integration
release cmd/goredisson

gobin="$LOCALPROXY_TMP/bin"
echo "check-install: GOBIN=$gobin go install $COMMAND@$version" >&2
if ! out="$(cd "$LOCALPROXY_TMP" && GOBIN="$gobin" go install "$COMMAND@$version" 2>&1)"; then
	printf 'check-install: go install failed:\n%s\n' "$out" >&2
	exit 1
fi
if ! help="$("$gobin/goredisson" --help 2>&1)"; then
	printf 'check-install: the installed goredisson --help failed:\n%s\n' "$help" >&2
	exit 1
fi
printf 'check-install: installed %s@%s; goredisson --help says:\n%s\n' "$COMMAND" "$version" "$(head -n 3 <<<"$help")" >&2
