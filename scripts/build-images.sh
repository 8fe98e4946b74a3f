#!/usr/bin/env bash
# Builds the paramserver images: paramserver/{master-service,pserver-service,trainer-agent,serving-service,psctl}
# from docker/Dockerfile, named [PREFIX/]paramserver/<service>:<TAG>.
#
#   scripts/build-images.sh                                # Maven runs inside Docker (needs a registry
#                                                          # for maven:/eclipse-temurin: base images)
#   scripts/build-images.sh --prebuilt                     # copy the jars of `./mvnw package` instead
#   scripts/build-images.sh --local-base --prebuilt        # no registry at all: base images from Debian
#   scripts/build-images.sh --registry registry.example.com/ml --push
#   scripts/build-images.sh --kind-load my-cluster         # then `helm install` with the default values
#
# Options:
#   --tag TAG           image tag (default: the project version in pom.xml)
#   --registry PREFIX   prefix the image names with PREFIX/ (the chart's image.registry value)
#   --push              docker push every image after building it
#   --kind-load NAME    `kind load docker-image` every image into the kind cluster NAME
#   --prebuilt          use the exec jars already in */target (run `./mvnw -B -DskipTests package`
#                       first) instead of running Maven inside the build: much faster
#   --local-base        first build base images from Debian packages (see docker/local-base/Dockerfile):
#                       a `debootstrap --variant=minbase bookworm` root imported with `docker import`,
#                       then JDK, JRE, etcd and Prometheus images installed with apt, all trusting the
#                       host's extra CA certificates. Needs root, debootstrap and a Debian mirror
#                       (DEBIAN_MIRROR, default http://deb.debian.org/debian). Existing base images
#                       are reused; --rebuild-base builds them again.
#   --services "A B"    build only these services (default: all five)
#
# Local base images: paramserver-local/{debian:bookworm,jdk:17,jre:17,etcd:3.4,prometheus:2.42}.
# docker-compose.yml uses them through PARAMSERVER_ETCD_IMAGE / PARAMSERVER_PROMETHEUS_IMAGE.
#
# BuildKit is needed (docker/Dockerfile uses a cache mount): the script runs DOCKER_BUILDKIT=1 with
# a docker CLI that can use it: one with the buildx plugin, or a CLI older than 23 (Debian's docker.io
# 20.10) whose built-in BuildKit client needs no plugin. Set DOCKER to choose the CLI yourself.
set -euo pipefail

ROOT=$(cd "$(dirname "$0")/.." && pwd)
die() { echo "build-images: $*" >&2; exit 2; }

TAG="" REGISTRY="" PUSH=false KIND="" PREBUILT=false LOCAL_BASE=false REBUILD_BASE=false
SERVICES="master-service pserver-service trainer-agent serving-service psctl"
while [ $# -gt 0 ]; do
  case "$1" in
    --tag) TAG=${2:?--tag needs a value}; shift 2 ;;
    --registry) REGISTRY=${2:?--registry needs a value}; shift 2 ;;
    --push) PUSH=true; shift ;;
    --kind-load) KIND=${2:?--kind-load needs a kind cluster name}; shift 2 ;;
    --prebuilt) PREBUILT=true; shift ;;
    --local-base) LOCAL_BASE=true; shift ;;
    --rebuild-base) LOCAL_BASE=true; REBUILD_BASE=true; shift ;;
    --services) SERVICES=${2:?--services needs a list}; shift 2 ;;
    -h | --help) sed -n '2,/^set -euo/p' "$0" | sed '$d; s/^# \{0,1\}//'; exit 0 ;;
    *) die "unknown option '$1' (see --help)" ;;
  esac
done
for s in $SERVICES; do
  case "$s" in master-service | pserver-service | trainer-agent | serving-service | psctl) ;;
    *) die "unknown service '$s' in --services: use master-service, pserver-service, trainer-agent, serving-service or psctl" ;;
  esac
done
if [ -z "$TAG" ]; then
  TAG=$(sed -n '/<artifactId>paramserver-parent<\/artifactId>/,/<\/version>/s:.*<version>\(.*\)</version>.*:\1:p' "$ROOT/pom.xml" | head -1)
  [ -n "$TAG" ] || die "cannot read the project version from pom.xml: pass --tag"
fi

# ---- a docker CLI that builds with BuildKit ----
pick_docker() {
  local c v
  for c in ${DOCKER:-} docker /usr/bin/docker; do
    command -v "$c" >/dev/null 2>&1 || continue
    if "$c" buildx version >/dev/null 2>&1; then echo "$c"; return 0; fi
    v=$("$c" version --format '{{.Client.Version}}' 2>/dev/null || true)
    if [ -n "$v" ] && [ "${v%%.*}" -lt 23 ] 2>/dev/null; then echo "$c"; return 0; fi
  done
  return 1
}
DOCKER=$(pick_docker) || die "no docker CLI that can build with BuildKit: install the buildx plugin, or Debian's docker.io (apt-get install -y --no-install-recommends docker.io) and set DOCKER=/usr/bin/docker"
export DOCKER_BUILDKIT=1
"$DOCKER" info >/dev/null 2>&1 || die "the Docker engine does not answer ($DOCKER info): start dockerd first"

# ---- base images from Debian packages ----
LOCAL=paramserver-local
BUILD_LOG=$(mktemp)
trap 'rm -f "$BUILD_LOG"' EXIT
# docker build with its output kept aside, shown (last 40 lines) only when the build fails
build() {
  "$DOCKER" build --progress=plain "$@" >"$BUILD_LOG" 2>&1 || { tail -40 "$BUILD_LOG" >&2; die "docker build $* failed"; }
}
have_image() { "$DOCKER" image inspect "$1" >/dev/null 2>&1; }
build_local_base() {
  local mirror=${DEBIAN_MIRROR:-http://deb.debian.org/debian} work
  work=$(mktemp -d)
  # shellcheck disable=SC2064
  trap "rm -rf '$work'" RETURN
  if $REBUILD_BASE || ! have_image "$LOCAL/debian:bookworm"; then
    [ "$(id -u)" = 0 ] || die "--local-base needs root (debootstrap)"
    command -v debootstrap >/dev/null 2>&1 || die "--local-base needs debootstrap: apt-get install -y debootstrap"
    echo "build-images: debootstrap --variant=minbase bookworm from $mirror"
    debootstrap --variant=minbase bookworm "$work/root" "$mirror" >"$work/debootstrap.log" 2>&1 \
      || { tail -20 "$work/debootstrap.log" >&2; die "debootstrap failed"; }
    rm -rf "$work/root/var/cache/apt/archives/"*.deb "$work/root/var/lib/apt/lists/"*
    tar -C "$work/root" -c . | "$DOCKER" import -c 'CMD ["/bin/bash"]' - "$LOCAL/debian:bookworm" >/dev/null
    rm -rf "$work/root"
  fi
  mkdir -p "$work/ctx/ca-certificates"
  # the host's extra CA certificates (possibly none), trusted inside the images
  find /usr/local/share/ca-certificates -name '*.crt' -exec cp {} "$work/ctx/ca-certificates/" \; 2>/dev/null || true
  local t
  for t in jdk:17 jre:17 etcd:3.4 prometheus:2.42; do
    if $REBUILD_BASE || ! have_image "$LOCAL/$t"; then
      echo "build-images: $LOCAL/$t"
      build -f "$ROOT/docker/local-base/Dockerfile" --build-arg "BASE=$LOCAL/debian:bookworm" \
        --target "${t%%:*}" -t "$LOCAL/$t" "$work/ctx"
    fi
  done
}

BUILD_ARGS=()
if $LOCAL_BASE; then
  build_local_base
  BUILD_ARGS+=(--build-arg "MAVEN_IMAGE=$LOCAL/jdk:17" --build-arg "RUNTIME_IMAGE=$LOCAL/jre:17")
fi
if $PREBUILT; then
  for s in $SERVICES; do
    # shellcheck disable=SC2086
    set -- "$ROOT"/$s/target/$s-*-exec.jar
    [ -f "$1" ] || die "--prebuilt: no $s/target/$s-*-exec.jar: run ./mvnw -B -DskipTests package first"
    [ $# = 1 ] || die "--prebuilt: several $s exec jars in $s/target: run ./mvnw clean package"
  done
  BUILD_ARGS+=(--build-arg JARS=prebuilt)
fi

PREFIX=${REGISTRY:+${REGISTRY%/}/}
for s in $SERVICES; do
  image="${PREFIX}paramserver/$s:$TAG"
  echo "build-images: $image"
  build -f "$ROOT/docker/Dockerfile" --build-arg "SERVICE=$s" "${BUILD_ARGS[@]}" -t "$image" "$ROOT"
  if $PUSH; then "$DOCKER" push "$image"; fi
  if [ -n "$KIND" ]; then kind load docker-image "$image" --name "$KIND"; fi
done
echo "build-images: done (tag $TAG)"
