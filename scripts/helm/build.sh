#!/usr/bin/env bash
# Builds helm from the Go module proxy ONCE into a machine-wide cache (no release download
# needed). Fast and idempotent when the cache already holds the pinned version.
# Usage: scripts/helm/build.sh     cache: $TPCBENCH_HELM_CACHE (default /var/cache/tpc-bench/helm/bin);
#        prints the path of the helm binary.
set -euo pipefail

HELM_VERSION=v3.16.4
cache="${TPCBENCH_HELM_CACHE:-/var/cache/tpc-bench/helm/bin}"
stamp="$cache/.version"

cached() { [ -x "$cache/helm" ] && [ -f "$stamp" ] && [ "$(cat "$stamp")" = "$HELM_VERSION" ]; }
if cached; then echo "$cache/helm"; exit 0; fi

command -v go >/dev/null || { echo "helm/build: Go is not installed (need Go >= 1.22)" >&2; exit 1; }
mkdir -p "$cache"
exec 9>"$cache/.lock"
flock 9
if cached; then echo "$cache/helm"; exit 0; fi

echo "helm/build: building helm $HELM_VERSION into $cache (about 2 min of CPU)" >&2
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT
start=$SECONDS
# The version string helm reports (`helm version`) comes from these ldflags.
ldflags="-s -w -X helm.sh/helm/v3/internal/version.version=$HELM_VERSION"
GOFLAGS= GOBIN="$work" nice -n 10 go install -ldflags "$ldflags" "helm.sh/helm/v3/cmd/helm@$HELM_VERSION"
install -m 0755 "$work/helm" "$cache/helm"
echo "$HELM_VERSION" >"$stamp"
echo "helm/build: done in $((SECONDS - start)) s" >&2
echo "$cache/helm"
