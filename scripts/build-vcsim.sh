#!/usr/bin/env bash
# Builds the vCenter simulator the integration tests run (tests/support/vcsim/*.go) into
# target/vcsim/vcsim, with Debian's Go and govmomi 0.24.2 (no Go module downloads).
# Installs golang-go and golang-github-vmware-govmomi-dev with apt when missing (Debian or Ubuntu;
# waiting, bounded, for a dpkg lock another package manager holds). Idempotent: does nothing
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
    # Debian's packages: the simulator builds on Debian or Ubuntu (apt), not on macOS.
    if ! command -v apt-get >/dev/null 2>&1; then
        echo "build-vcsim: needs Debian's golang-go and golang-github-vmware-govmomi-dev, installed" \
            "with apt-get (Debian or Ubuntu); apt-get is not on this machine" >&2
        exit 1
    fi
    # shellcheck source=lib/apt-install.sh
    source "$root/scripts/lib/apt-install.sh"
    apt_install build-vcsim golang-go golang-github-vmware-govmomi-dev
fi

mkdir -p "$(dirname "$output")"
cd "$root"
# GOPATH mode finds govmomi in Debian's source tree; the leading ./ is required in that mode.
# GOFLAGS is cleared so a user's module flags cannot break a GOPATH build; GOCACHE falls back to
# target/ because CI may run without HOME.
GOPATH="$gopath" GO111MODULE=off GOFLAGS= GOCACHE="${GOCACHE:-$root/target/vcsim/go-cache}" \
    go build -o "$output.tmp" ./tests/support/vcsim/
mv "$output.tmp" "$output"
