#!/usr/bin/env bash
# Makes sure promtool is installed (the chart tests evaluate the alerts' PromQL with
# `promtool test rules`, tests/chart/test_chart.py): installs Debian's prometheus package, which
# ships it, with apt when it is missing and root or sudo is available. Fails, never skips, when it
# stays missing. Idempotent.
#
# Only promtool is wanted: where the package's install enables and starts the Prometheus server
# under systemd or init.d, this disables and stops it again, so it is not part of what the
# machine starts.
set -euo pipefail

binary="${PROMTOOL_BIN:-promtool}"
if command -v "$binary" >/dev/null 2>&1; then
    exit 0
fi

# shellcheck source=lib/apt-install.sh
source "$(dirname "${BASH_SOURCE[0]}")/lib/apt-install.sh"
apt_install install-promtool prometheus

# systemctl disables the unit (and its init.d links) whether or not systemd is running.
if command -v systemctl >/dev/null 2>&1; then
    "${sudo[@]}" systemctl disable prometheus.service >&2 || true
    if [[ -d /run/systemd/system ]]; then
        "${sudo[@]}" systemctl stop prometheus.service >&2 || true
    fi
elif [[ -x /etc/init.d/prometheus ]]; then
    "${sudo[@]}" update-rc.d prometheus disable >&2 || true
    "${sudo[@]}" invoke-rc.d prometheus stop >&2 || true
fi

require_on_path install-promtool "$binary" prometheus
