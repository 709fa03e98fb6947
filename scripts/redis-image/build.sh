#!/usr/bin/env bash
# Builds the local Redis test image goredisson/redis:7.0.15 FROM scratch out of the
# Debian-installed redis-server and redis-cli, every library ldd lists for them, and a
# static busybox linked as sh, cat, awk, grep and nc (testcontainers' port wait runs
# `cat /proc/net/tcp* | awk | grep` inside the container). Nothing is pulled.
#
# Usage: scripts/redis-image/build.sh [TAG]     (default TAG: goredisson/redis:7.0.15)
#
# Needs: a running Docker engine, redis-server and redis-cli 7.0.x (Debian packages
# redis-server, redis-tools) and busybox-static (if /bin/busybox is missing or not static,
# the .deb is fetched with `apt-get download busybox-static` and unpacked in the temp dir).
# The entrypoint is `redis-server --protected-mode no --save '' --appendonly no`; arguments
# given to `docker run IMAGE ...` (or testcontainers' Cmd) are appended to it. Protected mode
# must be off because Docker's port proxy connects from the bridge gateway.
set -euo pipefail

tag="${1:-goredisson/redis:7.0.15}"
want_version="7.0."

die() { echo "build.sh: $*" >&2; exit 1; }

redis_server="$(command -v redis-server)" || die "redis-server not found: apt-get install -y redis-server"
redis_cli="$(command -v redis-cli)" || die "redis-cli not found: apt-get install -y redis-tools"
command -v docker >/dev/null || die "docker not found: apt-get install -y docker.io"
docker info >/dev/null 2>&1 || die "the Docker engine does not answer (docker info failed): start dockerd first (see .ci/run)"

version="$("$redis_server" --version | sed -n 's/.* v=\([0-9.]*\) .*/\1/p')"
case "$version" in
"$want_version"*) ;;
*) die "redis-server is version '$version', want ${want_version}x for tag $tag" ;;
esac

ctx="$(mktemp -d "${TMPDIR:-/tmp}/goredisson-redis-image.XXXXXX")"
trap 'rm -rf "$ctx"' EXIT
root="$ctx/rootfs"
mkdir -p "$root/usr/bin" "$root/bin" "$root/data" "$root/tmp"
chmod 1777 "$root/tmp"

# copy_with_parents FILE: copies FILE (symlinks resolved) to the same path under $root.
copy_with_parents() {
	local src="$1"
	mkdir -p "$root$(dirname "$src")"
	cp -L "$src" "$root$src"
}

copy_with_parents "$redis_server"
copy_with_parents "$redis_cli"
# Libraries and the dynamic loader, at the paths ldd resolves them to.
for bin in "$redis_server" "$redis_cli"; do
	ldd "$bin" | awk '/=> \//{print $3} /^[[:space:]]*\//{print $1}'
done | sort -u | while read -r lib; do
	copy_with_parents "$lib"
done

# A static busybox: from the installed busybox-static, else from its downloaded .deb.
busybox=/bin/busybox
if ! [ -x "$busybox" ] || ldd "$busybox" >/dev/null 2>&1; then # ldd fails on static binaries
	(cd "$ctx" && apt-get download busybox-static >/dev/null) ||
		die "no static busybox: apt-get install -y busybox-static"
	dpkg -x "$ctx"/busybox-static_*.deb "$ctx/busybox-deb"
	busybox="$ctx/busybox-deb/bin/busybox"
fi
cp -L "$busybox" "$root/bin/busybox"
for applet in sh cat awk grep nc; do
	ln -s busybox "$root/bin/$applet"
done

cat >"$ctx/Dockerfile" <<DOCKERFILE
FROM scratch
COPY rootfs/ /
ENV PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin
WORKDIR /data
EXPOSE 6379
LABEL org.opencontainers.image.title="goredisson test Redis" \\
      org.opencontainers.image.description="Debian redis-server $version FROM scratch, built by scripts/redis-image/build.sh" \\
      org.opencontainers.image.version="$version"
ENTRYPOINT ["/usr/bin/redis-server", "--protected-mode", "no", "--save", "", "--appendonly", "no"]
DOCKERFILE

# The docker CLI may lack the buildx plugin; the engine's classic builder then does the job.
if ! docker buildx version >/dev/null 2>&1; then
	export DOCKER_BUILDKIT=0
fi
echo "build.sh: building $tag from Debian redis-server $version" >&2
if ! out="$(docker build --quiet --tag "$tag" "$ctx" 2>&1)"; then
	echo "$out" >&2
	die "docker build failed"
fi

# Smoke test: the binaries load their libraries and the busybox tools the port wait needs exist.
docker run --rm --network none --entrypoint /usr/bin/redis-server "$tag" --version >/dev/null ||
	die "image $tag is broken: redis-server does not start"
docker run --rm --network none --entrypoint /bin/sh "$tag" -c \
	'cat /proc/net/tcp | awk "NR>0" | grep -q . && command -v nc >/dev/null && redis-cli --version >/dev/null' ||
	die "image $tag is broken: sh/cat/awk/grep/nc or redis-cli missing"
echo "build.sh: built $tag ($(docker image inspect --format '{{.Size}}' "$tag") bytes)" >&2
