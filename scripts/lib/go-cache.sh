# shellcheck shell=bash
# A pinned Go program, built once into a machine-wide cache: what the build scripts under
# scripts/ share. The caller defines `cached` (true when the cache already holds the build it
# wants, stamp included), then:
#   source scripts/lib/go-cache.sh
#   claim_cache "$cache" || { echo "$cache/program"; exit 0; }
#   require_go "program/build" "Go >= 1.22"
#   go_install_pinned "program/build" example.org/cmd/program@v1.2.3 "$cache/program"
#   echo "$version" >"$cache/.version"

# claim_cache CACHE: false when `cached` says the cache is filled; else takes CACHE's lock
# for the rest of the script (one build at a time on this machine: a second caller waits)
# and is true when the cache is still empty once the lock is held.
claim_cache() {
  cached && return 1
  mkdir -p "$1"
  exec 9>"$1/.lock"
  flock 9
  ! cached
}

# require_go WHO NEED: stops the script, saying what it needs, when Go is not installed.
require_go() {
  command -v go >/dev/null || { echo "$1: Go is not installed (need $2)" >&2; exit 1; }
}

# go_install_pinned WHO PACKAGE@VERSION DEST [LDFLAGS]: `go install` of a released module's
# command (the proxy's go.sum check pins it) into DEST.
go_install_pinned() {
  local who=$1 package=$2 dest=$3 ldflags=${4:--s -w} work start=$SECONDS
  work="$(mktemp -d)"
  if ! GOFLAGS= GOBIN="$work" nice -n 10 go install -ldflags "$ldflags" "$package"; then
    rm -rf "$work"
    return 1
  fi
  install -m 0755 "$work/$(basename "${package%@*}")" "$dest"
  rm -rf "$work"
  echo "$who: done in $((SECONDS - start)) s" >&2
}

# go_build_pinned WHO MODULE PACKAGE DEST [LDFLAGS]: builds PACKAGE at the versions MODULE
# (a folder with go.mod and go.sum) pins, in a scratch copy (the build writes nothing into
# the repository), into DEST; for a command `go install pkg@version` cannot take.
go_build_pinned() {
  local who=$1 module=$2 package=$3 dest=$4 ldflags=${5:--s -w} work start=$SECONDS
  work="$(mktemp -d)"
  cp "$module/go.mod" "$module/go.sum" "$work/"
  # -mod=readonly: go.sum must already pin everything; GOTOOLCHAIN=local: never fetch a toolchain.
  if ! (cd "$work" && GOTOOLCHAIN=local GOFLAGS=-mod=readonly CGO_ENABLED=0 nice -n 10 \
    go build -trimpath -ldflags "$ldflags" -o "$work/program" "$package"); then
    rm -rf "$work"
    return 1
  fi
  install -m 0755 "$work/program" "$dest"
  rm -rf "$work"
  echo "$who: done in $((SECONDS - start)) s" >&2
}
