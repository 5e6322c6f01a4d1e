#!/usr/bin/env bash
# Builds the vCenter simulator the integration tests run (tests/support/vcsim/*.go) into
# target/vcsim/vcsim, with Debian's Go and govmomi 0.24.2 (no Go module downloads).
# Installs golang-go and golang-github-vmware-govmomi-dev when missing. Idempotent: does nothing
# when the binary is newer than its sources.
set -euo pipefail

root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
output="$root/target/vcsim/vcsim"
gopath=/usr/share/gocode
govmomi="$gopath/src/github.com/vmware/govmomi/simulator"

if [[ -x "$output" && -z "$(find "$root/tests/support/vcsim" -name '*.go' -newer "$output")" ]]; then
    exit 0
fi

if ! command -v go >/dev/null 2>&1 || [[ ! -d "$govmomi" ]]; then
    sudo=()
    if [[ "$(id -u)" != 0 ]]; then
        if ! command -v sudo >/dev/null 2>&1; then
            echo "build-vcsim: need root to install golang-go golang-github-vmware-govmomi-dev" >&2
            exit 1
        fi
        sudo=(sudo)
    fi
    echo "build-vcsim: installing golang-go golang-github-vmware-govmomi-dev" >&2
    "${sudo[@]}" apt-get update -qq
    DEBIAN_FRONTEND=noninteractive "${sudo[@]}" apt-get install -y -qq \
        golang-go golang-github-vmware-govmomi-dev >&2
fi

mkdir -p "$(dirname "$output")"
cd "$root"
# GOPATH mode finds govmomi in Debian's source tree; the leading ./ is required in that mode.
# GOFLAGS is cleared so a user's module flags cannot break a GOPATH build; GOCACHE falls back to
# target/ because CI may run without HOME.
GOPATH="$gopath" GO111MODULE=off GOFLAGS= GOCACHE="${GOCACHE:-$root/target/vcsim/go-cache}" \
    go build -o "$output.tmp" ./tests/support/vcsim/
mv "$output.tmp" "$output"
