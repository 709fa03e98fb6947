# Sourced by scripts/check-deps.sh and scripts/check-install.sh: serves this repository's
# modules, as the working tree holds them, from a local file GOPROXY, so that a module
# requiring another of this repository resolves it without a replace directive or go.work.
#
# LOCALPROXY_ROOT must be the repository's root. localproxy_setup creates a temporary directory and exports, for the go commands that
# follow:
#   GOWORK=off     each module on its own go.mod, as a user gets it;
#   GOPROXY        file://<the local proxy>, then the module download cache of this machine
#                  (read-only, so nothing is downloaded twice), then `go env GOPROXY`;
#   GONOSUMDB      github.com/goredisson: the checksum database cannot know local builds;
#   GOMODCACHE     a temporary one: a version served here holds whatever the tree holds
#                  now, and must not be confused with one cached by an earlier run.
# The caller removes $LOCALPROXY_TMP (localproxy_cleanup) when done.

# The module path prefix of this repository's modules.
readonly LOCALPROXY_PREFIX=github.com/goredisson

localproxy_setup() {
	local fallback cache
	fallback="$(go env GOPROXY)"
	cache="$(go env GOMODCACHE)/cache/download"
	LOCALPROXY_TMP="$(mktemp -d "${TMPDIR:-/tmp}/goredisson-localproxy-XXXXXX")"
	LOCALPROXY_DIR="$LOCALPROXY_TMP/proxy"
	mkdir -p "$LOCALPROXY_DIR" "$LOCALPROXY_TMP/modcache"
	local proxy="file://$LOCALPROXY_DIR"
	[ -d "$cache" ] && proxy="$proxy,file://$cache"
	[ -n "$fallback" ] && [ "$fallback" != off ] && proxy="$proxy,$fallback"
	export GOWORK=off GOPROXY="$proxy" GONOSUMDB="$LOCALPROXY_PREFIX" GOMODCACHE="$LOCALPROXY_TMP/modcache"
	export GOFLAGS="${GOFLAGS:+$GOFLAGS }-modcacherw" # so that the cleanup can remove it
}

localproxy_cleanup() {
	[ -n "${LOCALPROXY_TMP:-}" ] && rm -rf "$LOCALPROXY_TMP"
}

# localproxy_serve VERSION DIR...: serves the modules in DIR... at VERSION.
localproxy_serve() {
	local version="$1"
	shift
	go run "$LOCALPROXY_ROOT/scripts/modproxy.go" -proxy "$LOCALPROXY_DIR" -version "$version" "$@"
}

# localproxy_required MODULE DIR: the version of MODULE that DIR/go.mod requires (empty
# when it requires none).
localproxy_required() {
	awk -v m="$1" '$1 == m { print $2 } $1 == "require" && $2 == m { print $3 }' "$2/go.mod"
}
