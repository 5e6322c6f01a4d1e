#!/usr/bin/env bash
# Makes sure a headless browser is installed for the HTML view tests (tests/view.rs): Debian's
# chromium, installed with apt when it is missing and root or sudo is available. Fails, never
# skips, when it stays missing. Idempotent. CHROMIUM names another binary.
set -euo pipefail

binary="${CHROMIUM:-chromium}"
if command -v "$binary" >/dev/null 2>&1; then
    exit 0
fi

# shellcheck source=lib/apt-install.sh
source "$(dirname "${BASH_SOURCE[0]}")/lib/apt-install.sh"
apt_install install-chromium chromium
require_on_path install-chromium "$binary" chromium
