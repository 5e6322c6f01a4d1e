#!/usr/bin/env bash
# Makes sure Debian's prometheus package is installed: its promtool evaluates the chart's alerts
# (`promtool test rules`, tests/chart/test_alerts_promtool.py) and lints what a run pushes
# (`promtool check metrics`, tests/metrics.rs), and its server scrapes the test's Pushgateway and
# answers the dashboard's and alerts' queries (tests/metrics.rs). Installs it with apt when
# either binary is missing and root or sudo is available. Fails, never skips, when one stays
# missing. Idempotent.
#
# The tests start their own server on 127.0.0.1 with a free port: where the package's install
# enables and starts the Prometheus service under systemd or init.d, this disables and stops it
# again, so it is not part of what the machine starts.
set -euo pipefail

promtool="${PROMTOOL_BIN:-promtool}"
server="${PROMETHEUS_BIN:-prometheus}"
if command -v "$promtool" >/dev/null 2>&1 && command -v "$server" >/dev/null 2>&1; then
    exit 0
fi

# shellcheck source=lib/apt-install.sh
source "$(dirname "${BASH_SOURCE[0]}")/lib/apt-install.sh"
apt_install install-prometheus prometheus

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

require_on_path install-prometheus "$promtool" prometheus
require_on_path install-prometheus "$server" prometheus
