#!/usr/bin/env bash
# Builds the simulated cluster's binaries (kube-apiserver, kube-controller-manager,
# kube-scheduler, kwok) from the Go module proxy ONCE into a machine-wide cache, and installs
# Debian's etcd. Fast and idempotent when the cache already holds the right versions.
# Usage: scripts/simcluster/build.sh      cache: $TPCBENCH_SIMCLUSTER_CACHE
#        (default /var/cache/tpc-bench/simcluster/bin); prints the cache directory.
set -euo pipefail

K8S_VERSION=v1.31.4
KWOK_VERSION=v0.7.0
BINARIES=(kube-apiserver kube-controller-manager kube-scheduler kwok)

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
cache="${TPCBENCH_SIMCLUSTER_CACHE:-/var/cache/tpc-bench/simcluster/bin}"
stamp="$cache/.version"
# The stamp names the versions and the recipe (go.mod), so a changed pin rebuilds.
want="kubernetes=$K8S_VERSION kwok=$KWOK_VERSION recipe=$(sha256sum <"$here/build/go.mod" | cut -c1-16)"

cached() {
  [ -f "$stamp" ] && [ "$(cat "$stamp")" = "$want" ] || return 1
  for b in "${BINARIES[@]}"; do [ -x "$cache/$b" ] || return 1; done
}

command -v etcd >/dev/null || "$here/../install-system-deps.sh" cluster
# shellcheck source=../lib/go-cache.sh
source "$here/../lib/go-cache.sh"
claim_cache "$cache" || { echo "$cache"; exit 0; }
require_go simcluster/build "Go >= 1.23"

echo "simcluster/build: building Kubernetes $K8S_VERSION and kwok $KWOK_VERSION into $cache (about 10 min of CPU)" >&2
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT
# Build in a scratch copy of the module: -mod=mod may record extra sums, never in the repo.
cp "$here/build/go.mod" "$here/build/main.go" "$work/"
[ -f "$here/build/go.sum" ] && cp "$here/build/go.sum" "$work/"

# shellcheck source=ldflags.sh
source "$here/ldflags.sh"
ldflags="$(k8s_ldflags "$K8S_VERSION")"

start=$SECONDS
(
  cd "$work"
  export GOFLAGS=-mod=mod
  [ -f go.sum ] || nice -n 10 go mod tidy
  for c in kube-apiserver kube-controller-manager kube-scheduler; do
    echo "simcluster/build: $c" >&2
    nice -n 10 go build -ldflags "$ldflags" -o "$work/bin/$c" "k8s.io/kubernetes/cmd/$c"
  done
)
echo "simcluster/build: kwok" >&2
GOFLAGS= GOBIN="$work/bin" nice -n 10 go install -ldflags "-s -w" "sigs.k8s.io/kwok/cmd/kwok@$KWOK_VERSION"

for b in "${BINARIES[@]}"; do install -m 0755 "$work/bin/$b" "$cache/$b"; done
cp "$work/go.sum" "$cache/.go.sum"  # what the build actually used, for refreshing build/go.sum
echo "$want" >"$stamp"
echo "simcluster/build: done in $((SECONDS - start)) s" >&2
echo "$cache"
