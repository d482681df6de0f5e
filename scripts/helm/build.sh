#!/usr/bin/env bash
# Builds helm from the Go module proxy ONCE into a machine-wide cache (no release download
# needed). Fast and idempotent when the cache already holds the pinned version.
# Usage: scripts/helm/build.sh     cache: $TPCBENCH_HELM_CACHE (default /var/cache/tpc-bench/helm/bin);
#        prints the path of the helm binary.
set -euo pipefail

HELM_VERSION=v3.16.4
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
cache="${TPCBENCH_HELM_CACHE:-/var/cache/tpc-bench/helm/bin}"
stamp="$cache/.version"
# shellcheck source=../lib/go-cache.sh
source "$here/../lib/go-cache.sh"

cached() { [ -x "$cache/helm" ] && [ -f "$stamp" ] && [ "$(cat "$stamp")" = "$HELM_VERSION" ]; }
claim_cache "$cache" || { echo "$cache/helm"; exit 0; }
require_go helm/build "Go >= 1.22"

echo "helm/build: building helm $HELM_VERSION into $cache (about 2 min of CPU)" >&2
# The version string helm reports (`helm version`) comes from these ldflags.
ldflags="-s -w -X helm.sh/helm/v3/internal/version.version=$HELM_VERSION"
go_install_pinned helm/build "helm.sh/helm/v3/cmd/helm@$HELM_VERSION" "$cache/helm" "$ldflags"
echo "$HELM_VERSION" >"$stamp"
echo "$cache/helm"
