#!/usr/bin/env bash
# Builds helm-values-schema-json (the generator of charts/tpc-bench/values.schema.json, the
# `helm schema` plugin's program) from the Go module proxy ONCE into a machine-wide cache; its
# version and every dependency's are pinned by build/go.mod and build/go.sum. Fast and
# idempotent when the cache holds a build of the same recipe.
# Usage: scripts/helm-values-schema/build.sh    cache: $TPCBENCH_HELM_VALUES_SCHEMA_CACHE
#        (default /var/cache/tpc-bench/helm-values-schema/bin); prints the program's path.
set -euo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
MODULE=github.com/losisin/helm-values-schema-json/v2
VERSION="$(sed -n "s#^[[:space:]]*$MODULE \(v[^ ]*\).*#\1#p" "$here/build/go.mod")"
cache="${TPCBENCH_HELM_VALUES_SCHEMA_CACHE:-/var/cache/tpc-bench/helm-values-schema/bin}"
program="$cache/helm-values-schema"
stamp="$cache/.version"
# The stamp names the version and the recipe, so a changed pin rebuilds.
want="helm-values-schema-json=$VERSION recipe=$(cat "$here/build/go.mod" "$here/build/go.sum" | sha256sum | cut -c1-16)"
# shellcheck source=../lib/go-cache.sh
source "$here/../lib/go-cache.sh"

cached() { [ -x "$program" ] && [ -f "$stamp" ] && [ "$(cat "$stamp")" = "$want" ]; }
claim_cache "$cache" || { echo "$program"; exit 0; }
require_go helm-values-schema/build "Go >= 1.24"

echo "helm-values-schema/build: building helm-values-schema-json $VERSION into $cache (under a minute)" >&2
go_build_pinned helm-values-schema/build "$here/build" "$MODULE" "$program"
echo "$want" >"$stamp"
echo "$program"
