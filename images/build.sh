#!/usr/bin/env bash
# make images: the Debian flavour of tpc-bench's four images, built with podman.
#   images/build.sh                 base (once) + xrootd gridftp orchestrator webapp
#   images/build.sh xrootd gridftp  only these (the base is made when missing)
#   images/build.sh --tags          print the image names this checkout builds, build nothing
#   images/build.sh --base-only     only the base (what scripts/kubenode/build.sh starts from)
# The base, localhost/debian:bookworm, comes from debootstrap (no registry needed); its root
# file system is kept in $TPCBENCH_IMAGE_CACHE (/var/cache/tpc-bench/images) so a machine
# whose podman storage was wiped re-imports it in seconds. podman's layer cache makes a
# rebuild of unchanged images take seconds too.
set -euo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
repo="$(dirname "$here")"
export CONTAINERS_CONF="${CONTAINERS_CONF:-$here/containers.conf}"
cache="${TPCBENCH_IMAGE_CACHE:-/var/cache/tpc-bench/images}"
BASE=localhost/debian:bookworm
SUITE=bookworm
REGISTRY_PREFIX="${TPCBENCH_IMAGE_PREFIX:-localhost/tpc-bench}"
ALL_IMAGES=(xrootd gridftp orchestrator webapp)
version="$(sed -n 's/^version = "\(.*\)"$/\1/p' "$repo/pyproject.toml" | head -n 1)"

tag_of() { echo "$REGISTRY_PREFIX/$1:$version"; }

if [ "${1:-}" = "--tags" ]; then
  for image in "${ALL_IMAGES[@]}"; do tag_of "$image"; done
  exit 0
fi
base_only=false
if [ "${1:-}" = "--base-only" ]; then base_only=true; shift; fi
images=("$@")
[ ${#images[@]} -gt 0 ] || images=("${ALL_IMAGES[@]}")
for image in "${images[@]}"; do
  case " ${ALL_IMAGES[*]} " in *" $image "*) ;; *)
    echo "images/build: unknown image '$image' (known: ${ALL_IMAGES[*]})" >&2; exit 2 ;;
  esac
done

command -v podman >/dev/null || "$repo/scripts/install-system-deps.sh" images
[ "$(id -u)" -eq 0 ] || { echo "images/build: run as root (podman's root storage)" >&2; exit 1; }

mkdir -p "$cache"
# One build at a time on this machine; a second caller waits, then finds the work done.
exec 9>"$cache/.lock"
flock 9

debian_mirror() {
  # The host's own Debian mirror (one-line or deb822 sources), else deb.debian.org.
  local uri
  uri=$(grep -hs -E '^(deb |URIs:)' /etc/apt/sources.list /etc/apt/sources.list.d/*.list \
          /etc/apt/sources.list.d/*.sources 2>/dev/null \
        | grep -v -e security -e '\[.*\]' | awk '{print $2}' | grep -E '^https?://' | head -n 1)
  echo "${uri:-http://deb.debian.org/debian}"
}

ensure_base() {
  podman image exists "$BASE" && return 0
  local tarball="$cache/debian-$SUITE-minbase.tar"
  if [ ! -s "$tarball" ]; then
    local mirror rootfs
    mirror="$(debian_mirror)"
    rootfs="$(mktemp -d)"
    echo "images/build: debootstrap $SUITE from $mirror (about 90 s, once per machine)" >&2
    nice -n 10 debootstrap --variant=minbase "$SUITE" "$rootfs" "$mirror" >"$cache/debootstrap.log" 2>&1 \
      || { echo "images/build: debootstrap failed; see $cache/debootstrap.log" >&2; rm -rf "$rootfs"; exit 1; }
    rm -rf "$rootfs"/var/cache/apt/archives/*.deb "$rootfs"/var/lib/apt/lists/*
    tar --numeric-owner -C "$rootfs" -cf "$tarball.partial" .
    mv "$tarball.partial" "$tarball"
    rm -rf "$rootfs"
  fi
  podman import --quiet "$tarball" "$BASE" >/dev/null
  echo "images/build: base $BASE imported from $tarball" >&2
}

# Registries may sit behind a TLS-inspecting proxy whose CA only this machine's bundle holds.
ca_bundle="${PIP_CERT:-/etc/ssl/certs/ca-certificates.crt}"
secret=()
[ -s "$ca_bundle" ] && secret=(--secret "id=ca-bundle,src=$ca_bundle")

ensure_base
if $base_only; then echo "$BASE"; exit 0; fi
for image in "${images[@]}"; do
  start=$SECONDS
  tag="$(tag_of "$image")"
  # --network host: apt and pip reach the package registries from inside the build.
  if ! podman build --quiet --network host --format docker --layers \
      --file "$here/Dockerfile" --target "$image" \
      --build-arg "BASE_IMAGE=$BASE" --build-arg "VERSION=$version" "${secret[@]}" \
      --tag "$tag" "$repo" >"$cache/build-$image.log" 2>&1; then
    tail -n 20 "$cache/build-$image.log" >&2
    echo "images/build: $image failed; the whole log is $cache/build-$image.log" >&2
    exit 1
  fi
  echo "images/build: $tag ($((SECONDS - start)) s)" >&2
done
for image in "${images[@]}"; do tag_of "$image"; done
