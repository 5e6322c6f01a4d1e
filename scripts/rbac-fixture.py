#!/usr/bin/env python3
"""Writes tests/fixtures/rbac/chart.yaml: the chart's RBAC the Rust tests' fake API server enforces.

The ClusterRole, Role and their bindings the chart renders with default values as release vsd in
kube-system, rendered by Helm's own engine exactly as tests/chart/test_chart.py renders the chart
(its `rbac_fixture_text`), which fails while the committed file differs from a fresh render. Run
it after changing the chart's RBAC, with the chart tests' virtualenv (scripts/chart-test.sh
creates .venv):

    .venv/bin/python scripts/rbac-fixture.py
"""

import pathlib
import sys

ROOT = pathlib.Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "tests" / "chart"))

import test_chart  # noqa: E402  (the chart tests' renderer, found through the path above)


def main() -> None:
    test_chart.RBAC_FIXTURE.parent.mkdir(parents=True, exist_ok=True)
    test_chart.RBAC_FIXTURE.write_text(test_chart.rbac_fixture_text())
    print(f"wrote {test_chart.RBAC_FIXTURE.relative_to(ROOT)}")


if __name__ == "__main__":
    main()
