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

# shellcheck source=lib/apt-install.sh
source "$(dirname "${BASH_SOURCE[0]}")/lib/apt-install.sh"
apt_install install-pushgateway prometheus-pushgateway
require_on_path install-pushgateway "$binary" prometheus-pushgateway
