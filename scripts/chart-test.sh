#!/usr/bin/env bash
# Tests the Helm chart in charts/vsphere-descheduler: renders it with Helm's own engine, lints it,
# validates every object against Kubernetes' schemas and the policy with the binary.
#
#   scripts/chart-test.sh [pytest args…]     e.g. scripts/chart-test.sh -k rbac -x
#
# Creates the virtualenv .venv when it is missing and installs tests/chart/requirements.txt
# (pinned) when that file changed since the last install; otherwise it goes straight to pytest.
# promtool (the alerts are evaluated with `promtool test rules`) is installed with
# scripts/install-prometheus.sh when missing; PROMTOOL_BIN names another one.
# The binary: VSPHERE_DESCHEDULER_BIN, default target/release/vsphere-descheduler. Outside CI
# a missing default binary is built; in CI (`CI` set to any non-empty value) it
# is a failure, as is any other missing prerequisite.
set -euo pipefail

root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$root"

venv="${CHART_TEST_VENV:-$root/.venv}"
requirements="tests/chart/requirements.txt"
python="${PYTHON:-python3}"

if [[ ! -x "$venv/bin/python" ]]; then
    if ! "$python" -c 'import sys; sys.exit(sys.version_info < (3, 10))' 2>/dev/null; then
        echo "chart-test: Python 3.10 or newer is needed as $python (set PYTHON=…)" >&2
        exit 1
    fi
    echo "chart-test: creating $venv" >&2
    "$python" -m venv "$venv"
fi

stamp="$venv/.chart-test-requirements.sha256"
wanted="$(sha256sum "$requirements" | cut -d' ' -f1)"
if [[ "$(cat "$stamp" 2>/dev/null || true)" != "$wanted" ]]; then
    echo "chart-test: installing $requirements" >&2
    "$venv/bin/python" -m pip install --quiet --disable-pip-version-check -r "$requirements"
    echo "$wanted" >"$stamp"
fi

scripts/install-prometheus.sh

# No cache directory in the work tree; pytest's exit code 5 (no tests ran) is a failure here.
status=0
"$venv/bin/python" -m pytest -p no:cacheprovider tests/chart "$@" || status=$?
if [[ $status -eq 5 ]]; then
    echo "chart-test: pytest ran no tests" >&2
    exit 1
fi
exit "$status"
