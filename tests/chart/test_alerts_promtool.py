"""The chart's alerts evaluated by Prometheus itself (`promtool check rules`, `promtool test rules`).

The PrometheusRule is rendered by Helm (test_chart.py's helpers), its spec.groups written out as a
Prometheus rule file, and promtool replays series shaped as the Pushgateway serves them: each run
replaces the group job="vsphere-descheduler", cluster="<clusterName>", whose values then stay until
the next run's push (Prometheus scrapes them with honor_labels: true, so the labels are the
pushed ones). A run is modelled once (when it starts, its exit code, its pdb skips, the
workloads at risk of one host failure before and after its plan) and turned into the series of
every family it pushes, so the scenarios say what happened, not sample lists.

Every checkpoint of every scenario checks all four alerts, firing or silent, their labels and
their rendered annotations; a second cluster whose runs always fail, whose pdb skips always grow
and whose workloads are always at risk must never show up. Run through scripts/chart-test.sh, which installs promtool
(scripts/install-prometheus.sh); a missing promtool fails, it is never skipped.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable

import pytest
import yaml

from test_chart import ALERTS, REPO, merged, prometheus_rule, pushed_families

JOB = "vsphere-descheduler"
CLUSTER = "prod-east"

# The rule file tests/metrics.rs loads into a real Prometheus, whose expressions it evaluates
# after three runs against the lab (whose policies name the cluster "lab"): the chart's rules
# with the default values, as this test holds it. UPDATE_FIXTURES=1 rewrites it.
METRICS_TEST_RULES = REPO / "tests" / "fixtures" / "metrics" / "alert-rules.yaml"
METRICS_TEST_RULES_HEADER = """\
# The chart's alert rules (charts/vsphere-descheduler/templates/prometheusrule.yaml) rendered with
# the default values and clusterName "lab", as a Prometheus rule file: tests/metrics.rs evaluates
# their expressions on a real Prometheus after three runs against the lab. Generated and held to
# the chart by tests/chart/test_alerts_promtool.py (UPDATE_FIXTURES=1 rewrites it); do not edit.
"""
OTHER_CLUSTER = "prod-west"
DAY = 24 * 60  # minutes

RUN_FAILING = "VsphereDeschedulerRunFailing"
NO_SUCCESSFUL_RUN = "VsphereDeschedulerNoSuccessfulRun"
PDB_SKIPS_GROWING = "VsphereDeschedulerPdbSkipsGrowing"
WORKLOADS_AT_RISK = "VsphereDeschedulerWorkloadsAtRisk"
ALERT_NAMES = (RUN_FAILING, NO_SUCCESSFUL_RUN, PDB_SKIPS_GROWING, WORKLOADS_AT_RISK)

# Workloads of two or more pods in every run: the classes always add up to this.
WORKLOADS = 40
EXPOSURE_CLASSES = ("all", "majority", "over-budget", "tolerated")


@dataclass(frozen=True)
class Timing:
    """The alert settings of a value set, in minutes."""

    interval: int  # the schedule's */N
    intervals: int  # metrics.alerts.noSuccessfulRunIntervals
    failing_for: int  # metrics.alerts.failingFor
    active_deadline_seconds: int
    at_risk_intervals: int  # metrics.alerts.atRiskIntervals

    @property
    def window(self) -> int:
        return self.interval * self.intervals

    def values(self) -> dict[str, Any]:
        return merged(
            ALERTS,
            {
                "schedule": f"*/{self.interval} * * * *",
                "activeDeadlineSeconds": self.active_deadline_seconds,
                "metrics": {
                    "alerts": {
                        "noSuccessfulRunIntervals": self.intervals,
                        "failingFor": f"{self.failing_for}m",
                        "atRiskIntervals": self.at_risk_intervals,
                    }
                },
            },
        )


# The chart's defaults (*/2, 5 intervals, 10m, 3 intervals at risk) and a slower schedule with its
# own settings.
TIMINGS = {
    "defaults": Timing(interval=2, intervals=5, failing_for=10, active_deadline_seconds=110, at_risk_intervals=3),
    "every-15-minutes": Timing(interval=15, intervals=4, failing_for=30, active_deadline_seconds=600, at_risk_intervals=2),
}


@dataclass(frozen=True)
class Run:
    start: int  # minute
    exit_code: int = 0
    pdb_skips: int = 0
    at_risk_before: int = 0  # workloads at risk of one host failure before the plan
    at_risk_after: int = 0  # and after it
    exposure: bool = True  # False: no inventory (or no plan), no exposure series pushed

    def exposure_workloads(self, exposure_class: str, when: str) -> int | None:
        """vsphere_descheduler_exposure_workloads: every class, zeros too, when assessed. The
        workloads at risk are split between majority and over-budget, so the alert must add up
        the classes."""
        if not self.exposure:
            return None
        at_risk = self.at_risk_before if when == "before" else self.at_risk_after
        majority = at_risk // 2
        counts = {"all": 0, "majority": majority, "over-budget": at_risk - majority, "tolerated": WORKLOADS - at_risk}
        return counts[exposure_class]

    @property
    def pushed(self) -> int:
        """The minute its push is first scraped: runs take less than a minute."""
        return self.start + 1


def runs(
    every: int,
    start: int,
    end: int,
    *,
    exit_code: Callable[[int], int] = lambda _: 0,
    pdb_skips: Callable[[int], int] = lambda _: 0,
    at_risk: Callable[[int], tuple[int, int] | None] = lambda _: (0, 0),
) -> list[Run]:
    """Runs every `every` minutes from start to end (inclusive), their outcome by start minute;
    at_risk gives the workloads at risk before and after the plan, None for no exposure."""
    found = []
    for minute in range(start, end + 1, every):
        exposure = at_risk(minute)
        before, after = exposure or (0, 0)
        found.append(Run(minute, exit_code(minute), pdb_skips(minute), before, after, exposure is not None))
    return found


def last_run(history: list[Run], minute: int) -> Run | None:
    """The run whose values the Pushgateway serves at this minute."""
    pushed = [run for run in history if run.pushed <= minute]
    return pushed[-1] if pushed else None


def series(cluster: str, history: list[Run], minutes: int) -> list[dict[str, str]]:
    """promtool input series of one cluster's pushes, one sample a minute from 0 to minutes.

    A family without a value at a minute (before the first push, or a labelled family the run had
    nothing for: the binary pushes no zero series) has no sample there ('_').
    """
    group = f'job="{JOB}", cluster="{cluster}"'
    strategy = 'strategy="RemovePodsViolatingInterPodAntiAffinity"'
    families: dict[str, Callable[[Run], float | None]] = {
        f"vsphere_descheduler_exit_code{{{group}}}": lambda run: run.exit_code,
        f"vsphere_descheduler_last_run_timestamp_seconds{{{group}}}": lambda run: run.pushed * 60,
        f'vsphere_descheduler_run_pods_skipped{{{group}, {strategy}, reason="pdb"}}': lambda run: run.pdb_skips or None,
        # Skips for another reason grow all the time: only reason="pdb" may count.
        f'vsphere_descheduler_run_pods_skipped{{{group}, {strategy}, reason="no-feasible-node"}}': lambda run: 1 + run.start // 60,
    }
    for exposure_class in EXPOSURE_CLASSES:
        for when in ("before", "after"):
            name = f'vsphere_descheduler_exposure_workloads{{{group}, class="{exposure_class}", when="{when}"}}'
            families[name] = lambda run, c=exposure_class, w=when: run.exposure_workloads(c, w)
    assert {name.split("{")[0] for name in families} <= pushed_families()
    served = served_runs(history, minutes)
    result = []
    for name, value in families.items():
        samples = [value(run) if run else None for run in served]
        result.append({"series": name, "values": " ".join(sample_text(samples, minute) for minute in range(len(samples)))})
    return result


def sample_text(samples: list[float | None], minute: int) -> str:
    """One minute of a series: its value, or none ('_'); where a push dropped the series, the
    staleness marker Prometheus' scrape writes, so the last value is not seen for five more
    minutes (the lookback) as if it were still served."""
    sample = samples[minute]
    if sample is not None:
        return f"{sample:g}"
    return "stale" if minute > 0 and samples[minute - 1] is not None else "_"


def served_runs(history: list[Run], minutes: int) -> list[Run | None]:
    """last_run() of every minute from 0 to minutes, in one pass over the (ordered) history."""
    served, latest, pending = [], None, iter(history)
    upcoming = next(pending, None)
    for minute in range(minutes + 1):
        while upcoming is not None and upcoming.pushed <= minute:
            latest, upcoming = upcoming, next(pending, None)
        served.append(latest)
    return served


def other_cluster(minutes: int) -> list[Run]:
    """Another cluster sharing the Pushgateway: every run fails, pdb skips grow by one an hour,
    workloads are at risk after every plan."""
    return runs(5, 0, minutes, exit_code=lambda _: 1, pdb_skips=lambda minute: 1 + minute // 60, at_risk=lambda _: (6, 6))


@dataclass(frozen=True)
class Scenario:
    name: str
    history: list[Run]  # this cluster's runs
    minutes: int  # how long the series go on
    # Checkpoint minute → the alerts firing then, each with its $value ("" when unused).
    checkpoints: dict[int, dict[str, str]]


def pdb_skips_at(history: list[Run], minute: int) -> int:
    run = last_run(history, minute)
    return run.pdb_skips if run else 0


def run_scenarios(timing: Timing) -> list[Scenario]:
    """Runs failing, succeeding, stopping, missing: what RunFailing and NoSuccessfulRun watch."""
    every, window, failing_for = timing.interval, timing.window, timing.failing_for
    assert failing_for > every, "one failed run must not be enough"
    found = []

    # One failed run among successful ones: its exit code 1 stays for one interval only.
    failed = 2 * every
    end = failed + failing_for + 3 * every
    found.append(
        Scenario(
            "a run failing once then succeeding",
            runs(every, 0, end, exit_code=lambda minute: int(minute == failed)),
            end + 1,
            {minute: {} for minute in (failed + 1, failed + every, failed + every + 1, failed + failing_for + 2, end + 1)},
        )
    )

    # Runs fail from `first` on (the last one with exit code 2), then succeed again from
    # `recovered` on. RunFailing is pending from the first failure's push and fires failingFor
    # later; NoSuccessfulRun's window holds no success from first + window + 1 on, and it fires
    # one interval after that.
    first = 2 * every
    recovered = first + window + 2 * every
    last_failed = recovered - every

    def exit_code(minute: int) -> int:
        if minute < first or minute >= recovered:
            return 0
        return 2 if minute == last_failed else 1

    history = runs(every, 0, recovered + 2 * every, exit_code=exit_code)

    def failing(minute: int) -> dict[str, str]:
        firing = {}
        if first + 1 + failing_for <= minute < recovered + 1:
            firing[RUN_FAILING] = str(last_run(history, minute).exit_code)
        if first + window + 1 + every <= minute < recovered + 1:
            firing[NO_SUCCESSFUL_RUN] = ""
        return firing

    moments = (first + 1, first + failing_for, first + failing_for + 2, first + window + every, first + window + every + 2, last_failed + 2, recovered + 2)
    found.append(Scenario("runs failing for failingFor, then succeeding again", history, recovered + 2 * every, {m: failing(m) for m in moments}))

    # Runs stop (CronJob suspended, pods not starting) after a success: the Pushgateway keeps
    # serving it. Too old once now - its timestamp exceeds the window, firing one interval later.
    stopped = 4 * every
    too_old = stopped + 1 + window + 1
    found.append(
        Scenario(
            "last success too old",
            runs(every, 0, stopped),
            too_old + 3 * every,
            {
                stopped + 2: {},
                too_old - 1: {},
                too_old + every - 1: {},
                too_old + every + 1: {NO_SUCCESSFUL_RUN: ""},
                too_old + 3 * every: {NO_SUCCESSFUL_RUN: ""},
            },
        )
    )

    # Never any run of this cluster (only the other one pushes): absent() from the start.
    found.append(
        Scenario(
            "never any run",
            [],
            3 * every,
            {0: {}, every - 1: {}, every + 1: {NO_SUCCESSFUL_RUN: ""}, 3 * every: {NO_SUCCESSFUL_RUN: ""}},
        )
    )
    return found


def pdb_scenarios(timing: Timing) -> list[Scenario]:
    """Pods held by PodDisruptionBudgets over days, all runs succeeding: PdbSkipsGrowing's."""
    every = timing.interval
    found = []

    # The same count every run for a day is no news.
    end = DAY + 6 * 60
    found.append(
        Scenario(
            "pdb skips flat for a day",
            runs(every, 0, end, pdb_skips=lambda _: 3),
            end,
            {DAY + 2 * 60: {}, end: {}},
        )
    )

    # One more pod every two hours: growing in trend and net. The window's ends are 10m
    # subquery steps, so $value is exactly the difference between them.
    history = runs(every, 0, end, pdb_skips=lambda minute: 1 + minute // 120)
    grown = {m: {PDB_SKIPS_GROWING: str(pdb_skips_at(history, m) - pdb_skips_at(history, m - DAY))} for m in (DAY + 2 * 60, end)}
    found.append(Scenario("pdb skips growing over a day", history, end, grown))

    # Both are needed: more at the day's end than at its start after a day mostly higher (net up,
    # trend down), and a late climb that stays below a brief morning peak (trend up, net down).
    checked = DAY + 2 * 60
    for name, skips in (
        ("pdb skips up in net but down in trend", lambda minute: 2 if minute < 180 else 10 if minute < 1380 else 3),
        ("pdb skips up in trend but down in net", lambda minute: 5 if minute < 180 else min(4, max(0, (minute - 900) // 120))),
    ):
        found.append(Scenario(name, runs(every, 0, checked, pdb_skips=skips), checked, {checked: {}}))

    # None held by a budget for a day (no pdb series at all), then four every run: that rose too,
    # until the whole day holds four.
    end = 2 * DAY + 60
    history = runs(every, 0, end, pdb_skips=lambda minute: 4 if minute >= DAY else 0)
    found.append(
        Scenario(
            "pdb skips appearing after a day without",
            history,
            end,
            {DAY - 60: {}, DAY + 2 * 60: {PDB_SKIPS_GROWING: "4"}, DAY + 6 * 60: {PDB_SKIPS_GROWING: "4"}, end: {}},
        )
    )
    return found


def exposure_scenarios(timing: Timing) -> list[Scenario]:
    """Workloads at risk after each run's plan, all runs succeeding: WorkloadsAtRisk's.

    The first run at risk pushes at `first + 1`; the alert is pending from then and fires
    atRiskIntervals intervals later, if every run since left some at risk after its plan.
    """
    every = timing.interval
    hold = timing.at_risk_intervals * every
    first = 2 * every
    fires = first + 1 + hold
    found = []

    # At risk run after run, then spread at last: fires with the count, then resolves.
    spread = first + (timing.at_risk_intervals + 3) * every
    end = spread + 2 * every
    history = runs(every, 0, end, at_risk=lambda minute: (4, 3) if first <= minute < spread else (4, 0))
    checkpoints = {first: {}, first + 1: {}, fires - 1: {}, fires: {WORKLOADS_AT_RISK: "3"}, spread: {WORKLOADS_AT_RISK: "3"}, spread + 1: {}, end: {}}
    found.append(Scenario("workloads at risk after every plan, then spread", history, end, checkpoints))

    # At risk in atRiskIntervals runs only, one interval short of the hold: silent.
    end = fires + 2 * every
    short = first + timing.at_risk_intervals * every
    history = runs(every, 0, end, at_risk=lambda minute: (3, 3) if first <= minute < short else (3, 0))
    found.append(Scenario("workloads at risk one interval short", history, end, {fires - 1: {}, fires: {}, end: {}}))

    # At risk before every plan, never after: the plans fix them, nothing to say.
    found.append(Scenario("workloads at risk only before the plan", runs(every, 0, end, at_risk=lambda _: (5, 0)), end, {fires: {}, end: {}}))

    # A run without exposure (no inventory, or no plan) in between starts the hold again.
    gap = first + every
    restart = gap + every
    end = restart + 1 + hold + every
    history = runs(every, 0, end, at_risk=lambda minute: None if minute == gap else (2, 2) if minute >= first else (2, 0))
    found.append(
        Scenario(
            "workloads at risk, interrupted by a run without exposure",
            history,
            end,
            {fires: {}, restart + hold: {}, restart + 1 + hold: {WORKLOADS_AT_RISK: "2"}},
        )
    )
    return found


def expected_alert(rule: dict[str, Any], value: str) -> dict[str, Any]:
    """The alert promtool must report: the rule's labels and annotations, $value filled in."""
    annotations = {key: re.sub(r"\{\{ \$value( \| humanize)? \}\}", value, text) for key, text in rule["annotations"].items()}
    return {"exp_labels": {"job": JOB, "cluster": CLUSTER, **rule["labels"]}, "exp_annotations": annotations}


def unit_tests(rules: dict[str, dict[str, Any]], scenarios: list[Scenario]) -> list[dict[str, Any]]:
    tests = []
    for scenario in scenarios:
        checks = []
        for minute, firing in scenario.checkpoints.items():
            assert set(firing) <= set(ALERT_NAMES)
            for name in ALERT_NAMES:
                exp = [expected_alert(rules[name], firing[name])] if name in firing else []
                checks.append({"eval_time": f"{minute}m", "alertname": name, "exp_alerts": exp})
        tests.append(
            {
                "name": scenario.name,
                "interval": "1m",
                "input_series": series(CLUSTER, scenario.history, scenario.minutes) + series(OTHER_CLUSTER, other_cluster(scenario.minutes), scenario.minutes),
                "alert_rule_test": checks,
            }
        )
    return tests


@pytest.fixture(scope="session")
def promtool() -> str:
    path = shutil.which(os.environ.get("PROMTOOL_BIN", "promtool"))
    if path is None:
        pytest.fail("promtool is missing: scripts/install-prometheus.sh installs Debian's prometheus package, which ships it")
    return path


def rule_file(tmp_path: Path, timing: Timing) -> tuple[Path, dict[str, dict[str, Any]]]:
    """Writes the rendered PrometheusRule's groups as a Prometheus rule file."""
    groups = prometheus_rule(timing.values())["spec"]["groups"]
    path = tmp_path / "rules.yaml"
    path.write_text(yaml.safe_dump({"groups": groups}, sort_keys=False))
    return path, {rule["alert"]: rule for group in groups for rule in group["rules"]}


def run_promtool(promtool: str, *args: str, cwd: Path) -> None:
    result = subprocess.run([promtool, *args], cwd=cwd, capture_output=True, text=True, timeout=300, check=False)
    assert result.returncode == 0, f"promtool {' '.join(args)} exited with {result.returncode}:\n{result.stdout}\n{result.stderr}"


def test_the_rules_the_metrics_test_evaluates_are_the_charts():
    groups = prometheus_rule(merged(ALERTS, {"clusterName": "lab"}))["spec"]["groups"]
    if os.environ.get("UPDATE_FIXTURES") == "1":
        rendered = yaml.safe_dump({"groups": groups}, sort_keys=False, width=1 << 30)
        METRICS_TEST_RULES.write_text(METRICS_TEST_RULES_HEADER + rendered)
    held = yaml.safe_load(METRICS_TEST_RULES.read_text())
    assert held == {"groups": groups}, f"{METRICS_TEST_RULES} is not the chart's rules: UPDATE_FIXTURES=1 rewrites it"


@pytest.mark.parametrize("timing", TIMINGS.values(), ids=TIMINGS.keys())
def test_promtool_accepts_the_rendered_rules(promtool, tmp_path, timing):
    path, rules = rule_file(tmp_path, timing)
    assert set(rules) == set(ALERT_NAMES)
    run_promtool(promtool, "check", "rules", path.name, cwd=tmp_path)


def run_promtool_tests(promtool: str, tmp_path: Path, timing: Timing, scenarios: Callable[[Timing], list[Scenario]]) -> None:
    path, rules = rule_file(tmp_path, timing)
    tests = {"rule_files": [path.name], "evaluation_interval": "1m", "tests": unit_tests(rules, scenarios(timing))}
    (tmp_path / "tests.yaml").write_text(yaml.safe_dump(tests, sort_keys=False, width=1 << 30))
    run_promtool(promtool, "test", "rules", "tests.yaml", cwd=tmp_path)


@pytest.mark.parametrize("timing", TIMINGS.values(), ids=TIMINGS.keys())
def test_run_alerts_fire_when_they_should_and_only_then(promtool, tmp_path, timing):
    run_promtool_tests(promtool, tmp_path, timing, run_scenarios)


@pytest.mark.parametrize("timing", TIMINGS.values(), ids=TIMINGS.keys())
def test_exposure_alert_fires_when_workloads_stay_at_risk_and_only_then(promtool, tmp_path, timing):
    run_promtool_tests(promtool, tmp_path, timing, exposure_scenarios)


def test_pdb_alert_fires_when_skips_grow_and_only_then(promtool, tmp_path):
    # Days of series take promtool seconds per scenario; the expression does not depend on the
    # schedule, so one value set is enough.
    run_promtool_tests(promtool, tmp_path, TIMINGS["every-15-minutes"], pdb_scenarios)
