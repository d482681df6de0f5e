#!/usr/bin/env bash
# Builds what the lab's real Kubernetes nodes run (tpcbench lab up --kubernetes) ONCE into a
# machine-wide cache: kubelet, kube-proxy and kubectl (for users of a cluster lab) v1.31.4
# from the control plane's own Go module (scripts/simcluster/build), CoreDNS v1.11.3
# (static), our static pause program
# (images/lab/pause.c), and three images with podman (images/lab/Dockerfile):
# localhost/tpc-bench/pause:3.10, localhost/tpc-bench/coredns:1.11.3 and
# localhost/tpc-bench/postgres:15 (FROM the base images/build.sh makes).
# Fast and idempotent: returns at once when the stamp matches, the binaries are there and the
# three tags still name the images this script built; otherwise rebuilds only what changed.
# Usage: scripts/kubenode/build.sh       cache: $TPCBENCH_KUBENODE_CACHE
#        (default /var/cache/tpc-bench/kubenode, the binaries in bin/); prints the cache.
set -euo pipefail

K8S_VERSION=v1.31.4
COREDNS_VERSION=v1.11.3
PAUSE_VERSION=3.10
POSTGRES_MAJOR=15
BINARIES=(kubelet kube-proxy kubectl coredns pause)

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
repo="$(cd "$here/../.." && pwd)"
kbuild="$repo/scripts/simcluster/build"
lab="$repo/images/lab"
cache="${TPCBENCH_KUBENODE_CACHE:-/var/cache/tpc-bench/kubenode}"
bin="$cache/bin"
stamp="$cache/.version"
export CONTAINERS_CONF="${CONTAINERS_CONF:-$repo/images/containers.conf}"
prefix="${TPCBENCH_IMAGE_PREFIX:-localhost/tpc-bench}"
prefix="${prefix%/}"
BASE=localhost/debian:bookworm
declare -A IMAGES=(
  [pause]="$prefix/pause:$PAUSE_VERSION"
  [coredns]="$prefix/coredns:${COREDNS_VERSION#v}"
  [postgres]="$prefix/postgres:$POSTGRES_MAJOR"
)
TARGETS=(pause coredns postgres)

hash_of() { cat "$@" | sha256sum | cut -c1-16; }
# What each binary is made from; the whole recipe (these, the images' files, this script)
# is in the stamp. The images built are recorded by id in $cache/.images.
kube_want="kubernetes=$K8S_VERSION recipe=$(hash_of "$kbuild/go.mod" "$kbuild/go.sum" "$repo/scripts/simcluster/ldflags.sh")"
declare -A PART_WANT=(
  [kube]="$kube_want"
  [kubectl]="$kube_want"
  [coredns]="coredns=$COREDNS_VERSION"
  [pause]="pause=$PAUSE_VERSION source=$(hash_of "$lab/pause.c")"
)
recipe="$(printf '%s\n' "${PART_WANT[@]}" | cat - "$lab/Dockerfile" "$lab/postgres-entrypoint.sh" "${BASH_SOURCE[0]}" | sha256sum | cut -c1-16)"
want="kubernetes=$K8S_VERSION coredns=$COREDNS_VERSION pause=$PAUSE_VERSION postgres=$POSTGRES_MAJOR recipe=$recipe"

image_ids() { podman image inspect --format '{{.Id}}' "${IMAGES[pause]}" "${IMAGES[coredns]}" "${IMAGES[postgres]}"; }
# (Not a label: podman's layer cache hands back an earlier image, labels and all, when only a
# label would differ.)
images_current() { [ -f "$cache/.images" ] && [ "$(image_ids 2>/dev/null)" = "$(cat "$cache/.images")" ]; }
cached() {
  [ -f "$stamp" ] && [ "$(cat "$stamp")" = "$want" ] || return 1
  for b in "${BINARIES[@]}"; do [ -x "$bin/$b" ] || return 1; done
  images_current
}
part_cached() {  # part binary...: the part's stamp matches and its binaries are there
  local part=$1 b
  shift
  [ -f "$bin/.$part.version" ] && [ "$(cat "$bin/.$part.version")" = "${PART_WANT[$part]}" ] || return 1
  for b in "$@"; do [ -x "$bin/$b" ] || return 1; done
}

if command -v podman >/dev/null && cached; then echo "$cache"; exit 0; fi

[ "$(id -u)" -eq 0 ] || { echo "kubenode/build: run as root (podman's root storage)" >&2; exit 1; }
command -v podman >/dev/null || "$repo/scripts/install-system-deps.sh" images
{ command -v gcc >/dev/null && command -v setcap >/dev/null && gcc -print-file-name=libc.a | grep -q /; } \
  || "$repo/scripts/install-system-deps.sh" kubenode-build
mkdir -p "$bin"
# One build at a time on this machine; a second caller waits, then finds the cache filled.
exec 9>"$cache/.lock"
flock 9
if cached; then echo "$cache"; exit 0; fi

work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT
mkdir -p "$work/bin"
total=$SECONDS
go_ready=false
go_build_turn() {  # Go is there, and no control-plane build runs beside ours
  $go_ready && return 0
  command -v go >/dev/null || { echo "kubenode/build: Go is not installed (need Go >= 1.23)" >&2; exit 1; }
  # scripts/simcluster/build.sh shares the Go build cache and the 2 cores: wait until it is
  # done and hold its lock while we compile (it then waits for us).
  local simcluster_cache="${TPCBENCH_SIMCLUSTER_CACHE:-/var/cache/tpc-bench/simcluster/bin}"
  mkdir -p "$simcluster_cache"
  exec 8>"$simcluster_cache/.lock"
  flock 8
  go_ready=true
}

k8s_build() {  # part command...: k8s.io/kubernetes/cmd/<command> from the control plane's module
  local part=$1 c
  shift
  go_build_turn
  # shellcheck source=../simcluster/ldflags.sh
  source "$repo/scripts/simcluster/ldflags.sh"
  ldflags="$(k8s_ldflags "$K8S_VERSION")"
  # A scratch copy of the control plane's module: -mod=mod may record sums, never in the repo.
  mkdir -p "$work/kbuild"
  cp "$kbuild/go.mod" "$kbuild/go.sum" "$kbuild/main.go" "$work/kbuild/"
  for c in "$@"; do
    start=$SECONDS
    echo "kubenode/build: $c $K8S_VERSION" >&2
    (cd "$work/kbuild" && GOFLAGS=-mod=mod nice -n 10 go build -ldflags "$ldflags" -o "$work/bin/$c" "k8s.io/kubernetes/cmd/$c")
    install -m 0755 "$work/bin/$c" "$bin/$c"
    echo "kubenode/build: $c done in $((SECONDS - start)) s" >&2
  done
  echo "${PART_WANT[$part]}" >"$bin/.$part.version"
}

# (if, not ||: errexit does not reach into a function called on the left of || or &&)
if ! part_cached kube kubelet kube-proxy; then k8s_build kube kubelet kube-proxy; fi
# kubectl is no node agent: it is for the cluster lab's users (tpcbench lab kubeconfig).
if ! part_cached kubectl kubectl; then k8s_build kubectl kubectl; fi

if ! part_cached coredns coredns; then
  go_build_turn
  start=$SECONDS
  echo "kubenode/build: coredns $COREDNS_VERSION (static)" >&2
  GOFLAGS= CGO_ENABLED=0 GOBIN="$work/bin" nice -n 10 \
    go install -ldflags "-s -w" "github.com/coredns/coredns@$COREDNS_VERSION"
  install -m 0755 "$work/bin/coredns" "$bin/coredns"
  echo "${PART_WANT[coredns]}" >"$bin/.coredns.version"
  echo "kubenode/build: coredns done in $((SECONDS - start)) s" >&2
fi

exec 8>&-  # the control plane may build again

if ! part_cached pause pause; then
  start=$SECONDS
  nice -n 10 gcc -static -O2 -s -Wall -Wextra -Werror -o "$work/bin/pause" "$lab/pause.c"
  install -m 0755 "$work/bin/pause" "$bin/pause"
  echo "${PART_WANT[pause]}" >"$bin/.pause.version"
  echo "kubenode/build: pause done in $((SECONDS - start)) s" >&2
fi

# The images. The postgres image starts from the Debian base images/build.sh makes.
"$repo/images/build.sh" --base-only >/dev/null
context="$work/context"
mkdir -p "$context"
install -m 0755 "$bin/pause" "$bin/coredns" "$lab/postgres-entrypoint.sh" "$context/"
# Port 53 as uid 65532: the file capability travels in the image layer (and into containerd).
setcap cap_net_bind_service=+ep "$context/coredns"
for target in "${TARGETS[@]}"; do
  start=$SECONDS
  tag="${IMAGES[$target]}"
  # --network host: apt reaches the Debian mirror from inside the build.
  if ! nice -n 10 podman build --quiet --network host --format docker --layers \
      --file "$lab/Dockerfile" --target "$target" \
      --build-arg "BASE_IMAGE=$BASE" \
      --tag "$tag" "$context" >"$cache/build-$target.log" 2>&1; then
    tail -n 20 "$cache/build-$target.log" >&2
    echo "kubenode/build: image $target failed; the whole log is $cache/build-$target.log" >&2
    exit 1
  fi
  echo "kubenode/build: $tag ($((SECONDS - start)) s)" >&2
done
image_ids >"$cache/.images"

echo "$want" >"$stamp"
echo "kubenode/build: done in $((SECONDS - total)) s" >&2
echo "$cache"
