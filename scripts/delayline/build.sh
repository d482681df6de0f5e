#!/usr/bin/env bash
# Builds the lab's WAN delay program (orchestrator/lab/delayline, Go + golang.org/x/sys from
# the Go module proxy, pinned by its go.mod/go.sum) ONCE into a machine-wide cache.
# Fast and idempotent when the cache holds a build of the same source.
# Usage: scripts/delayline/build.sh     cache: $TPCBENCH_DELAYLINE_CACHE
#        (default /var/cache/tpc-bench/delayline/bin); prints the path of the program.
set -euo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
src="$(cd "$here/../../orchestrator/lab/delayline" && pwd)"
VERSION="$(sed -n 's/^const version = "\(.*\)"$/\1/p' "$src/main.go")"  # part of the stamp
cache="${TPCBENCH_DELAYLINE_CACHE:-/var/cache/tpc-bench/delayline/bin}"
program="$cache/delayline"
stamp="$cache/.version"

GO="$(command -v go || true)"
[ -n "$GO" ] || GO=/usr/local/go/bin/go
# The stamp names the version, a hash of every source file and the Go toolchain, so any
# change of them rebuilds. Go itself is the machine's (>= 1.26, which x/sys v0.49 needs).
sources_hash="$(cd "$src" && cat go.mod go.sum ./*.go | sha256sum | cut -c1-16)"
go_version="$([ -x "$GO" ] && "$GO" env GOVERSION || echo none)"
want="delayline=$VERSION source=$sources_hash go=$go_version"

cached() { [ -f "$stamp" ] && [ "$(cat "$stamp")" = "$want" ] && [ -x "$program" ]; }

if cached; then echo "$program"; exit 0; fi
[ -x "$GO" ] || { echo "delayline/build: Go is not installed (need Go >= 1.26, e.g. /usr/local/go/bin/go)" >&2; exit 1; }
mkdir -p "$cache"
# One build at a time on this machine; a second caller waits, then finds the cache filled.
exec 9>"$cache/.lock"
flock 9
if cached; then echo "$program"; exit 0; fi

echo "delayline/build: building the delay program $VERSION into $cache" >&2
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT
cp "$src"/go.mod "$src"/go.sum "$src"/*.go "$work/"
start=$SECONDS
(
  cd "$work"
  # -mod=readonly: go.sum must already pin x/sys; GOTOOLCHAIN=local: never fetch a toolchain.
  GOTOOLCHAIN=local GOFLAGS=-mod=readonly CGO_ENABLED=0 nice -n 10 \
    "$GO" build -trimpath -ldflags "-s -w" -o "$work/delayline" .
)
install -m 0755 "$work/delayline" "$program"
echo "$want" >"$stamp"
echo "delayline/build: done in $((SECONDS - start)) s" >&2
echo "$program"
