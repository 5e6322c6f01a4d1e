#!/usr/bin/env bash
# Makes sure Debian's prometheus-pushgateway (the real Pushgateway the metrics tests push to,
# tests/metrics.rs) is installed: installs it with apt when it is missing and root or sudo is
# available. Fails, never skips, when it stays missing. Idempotent.
#
# The package's service is not started (the tests start their own Pushgateway on 127.0.0.1 with a
# free port); where the package's install starts one under systemd, it does not disturb them.
set -euo pipefail

binary="${PUSHGATEWAY_BIN:-prometheus-pushgateway}"
if command -v "$binary" >/dev/null 2>&1; then
    exit 0
fi

hint="install-pushgateway: $binary is missing; install Debian's prometheus-pushgateway (apt-get install -y prometheus-pushgateway)"
sudo=()
if [[ "$(id -u)" != 0 ]]; then
    if ! command -v sudo >/dev/null 2>&1; then
        echo "$hint: need root or sudo" >&2
        exit 1
    fi
    sudo=(sudo)
fi
echo "install-pushgateway: installing prometheus-pushgateway" >&2
"${sudo[@]}" apt-get update -qq
DEBIAN_FRONTEND=noninteractive "${sudo[@]}" apt-get install -y -qq --no-install-recommends \
    prometheus-pushgateway >&2
if ! command -v "$binary" >/dev/null 2>&1; then
    echo "$hint: it is still not on PATH after installing" >&2
    exit 1
fi
