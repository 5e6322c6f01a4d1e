"""The binary's findings in the forms CI systems read, checked by the tools' own rules.

`validate --output sarif` and `plan --output sarif` are validated against SARIF 2.1.0's JSON
schema (tests/fixtures/sarif/sarif-schema-2.1.0.json: the OASIS 2.1.0 schema, errata rtm.5, as
Microsoft's @microsoft/jest-sarif npm package 1.0.0-beta.0 ships it, MIT) with a JSON Schema
implementation; `--output github` lines are parsed as the Actions runner parses workflow
commands. It lives beside the chart tests because those already run the real binary with the
Python tools installed (scripts/chart-test.sh).
"""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import jsonschema
import pytest

from test_chart import (  # noqa: F401 (binary is a fixture)
    REPO,
    binary,
)

SCHEMA = json.loads((REPO / "tests/fixtures/sarif/sarif-schema-2.1.0.json").read_text())

# A policy with one of each kind of finding a CI job meets: an unknown field (a typo), a
# duplicate, a conflict, and a warning.
BROKEN = """\
apiVersion: descheduler/v1alpha2
kind: DeschedulerPolicy
profiles:
- name: p
  pluginConfig:
  - name: DefaultEvictor
    args:
      nodeFitt: true
      evictLocalStoragePods: true
  - name: PodLifeTime
    args:
      maxPodLifeTimeSeconds: 60
      namespaces: {include: [a], exclude: [b]}
  plugins:
    deschedule:
      enabled: [PodLifeTime, PodLifeTime]
"""

VALID_WITH_WARNING = """\
apiVersion: descheduler/v1alpha2
kind: DeschedulerPolicy
profiles:
- name: p
  pluginConfig:
  - name: DefaultEvictor
    args:
      evictLocalStoragePods: true
  - name: PodLifeTime
    args:
      maxPodLifeTimeSeconds: 60
  plugins:
    deschedule:
      enabled: [PodLifeTime]
"""


def run(binary: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([str(binary), *args], capture_output=True, text=True, timeout=60)


def validated(text: str) -> dict:
    log = json.loads(text)
    jsonschema.Draft4Validator(SCHEMA).validate(log)
    return log


def test_validate_sarif_is_valid_sarif_naming_file_line_column_and_rule(binary, tmp_path):
    broken = tmp_path / "broken policy.yaml"
    broken.write_text(BROKEN)
    fine = tmp_path / "fine.yaml"
    fine.write_text(VALID_WITH_WARNING)
    result = run(binary, "--output", "sarif", "validate", str(broken), str(fine))
    assert result.returncode == 1, result.stderr
    log = validated(result.stdout)
    run_ = log["runs"][0]
    rule_ids = [rule["id"] for rule in run_["tool"]["driver"]["rules"]]
    assert len(rule_ids) == len(set(rule_ids))
    by_rule = {}
    for item in run_["results"]:
        assert item["ruleId"] in rule_ids
        by_rule.setdefault(item["ruleId"], []).append(item)
    typo = by_rule["unknown-field"][0]
    assert typo["level"] == "error"
    location = typo["locations"][0]
    assert location["physicalLocation"]["artifactLocation"]["uri"].endswith("broken%20policy.yaml")
    assert location["physicalLocation"]["region"] == {"startLine": 8, "startColumn": 7}
    assert location["logicalLocations"][0]["fullyQualifiedName"] == (
        "profiles[0].pluginConfig[0].args.nodeFitt"
    )
    assert "duplicate" in by_rule and "conflict" in by_rule, sorted(by_rule)
    deprecated = by_rule["deprecated"][0]
    assert deprecated["level"] == "warning"
    assert deprecated["locations"][0]["physicalLocation"]["artifactLocation"]["uri"].endswith("fine.yaml")


def test_a_valid_policy_gives_a_valid_log_without_errors(binary, tmp_path):
    fine = tmp_path / "fine.yaml"
    fine.write_text(VALID_WITH_WARNING.replace("      evictLocalStoragePods: true\n", ""))
    result = run(binary, "--output", "sarif", "validate", str(fine))
    assert result.returncode == 0, result.stderr
    assert validated(result.stdout)["runs"][0]["results"] == []


def test_plan_sarif_reports_the_policys_problems_and_exits_as_plan_does(binary, tmp_path):
    broken = tmp_path / "policy.yaml"
    broken.write_text(BROKEN)
    snapshot = REPO / "tests/fixtures/e2e/several-violations/snapshot.yaml"
    result = run(binary, "--output", "sarif", "plan", "--snapshot", str(snapshot), "--policy", str(broken))
    assert result.returncode == 2, result.stderr
    results = validated(result.stdout)["runs"][0]["results"]
    assert {r["ruleId"] for r in results} >= {"unknown-field", "duplicate", "conflict"}
    assert "invalid policy" in result.stderr

    fine = REPO / "tests/fixtures/e2e/several-violations/policy.yaml"
    result = run(
        binary, "--output", "sarif", "plan", "--snapshot", str(snapshot), "--policy", str(fine),
        "--max-evictions", "0",
    )
    assert result.returncode == 3, result.stderr
    results = validated(result.stdout)["runs"][0]["results"]
    assert [r["ruleId"] for r in results] == ["max-evictions"]


def parse_command(line: str) -> tuple[str, dict[str, str], str]:
    """A workflow command as the runner reads it: `::name k=v,k=v::message`, unescaped."""
    assert line.startswith("::"), line
    head, message = line[2:].split("::", 1)
    name, _, props = head.partition(" ")

    def unescape(text: str, property_value: bool) -> str:
        text = text.replace("%0D", "\r").replace("%0A", "\n")
        if property_value:
            text = text.replace("%3A", ":").replace("%2C", ",")
        return text.replace("%25", "%")

    properties = {}
    for pair in filter(None, props.split(",")):
        key, value = pair.split("=", 1)
        properties[key] = unescape(value, True)
    return name, properties, unescape(message, False)


def test_github_annotations_name_file_line_column_and_rule(binary, tmp_path):
    broken = tmp_path / "a,b.yaml"
    broken.write_text(BROKEN)
    fine = tmp_path / "fine.yaml"
    fine.write_text(VALID_WITH_WARNING)
    result = run(binary, "--output", "github", "validate", str(broken), str(fine))
    assert result.returncode == 1, result.stderr
    commands = [parse_command(line) for line in result.stdout.splitlines()]
    assert commands, result.stdout
    name, properties, message = commands[0]
    assert name == "error"
    assert properties["file"] == str(broken)
    assert (properties["line"], properties["col"]) == ("8", "7")
    assert properties["title"] == "vsphere-descheduler unknown-field"
    assert message.startswith("profiles[0].pluginConfig[0].args.nodeFitt: unknown field")
    warnings = [c for c in commands if c[0] == "warning"]
    assert warnings and warnings[0][1]["title"] == "vsphere-descheduler deprecated"


@pytest.mark.parametrize("command", [["run", "--dry-run"], ["demo"]])
def test_other_commands_refuse_the_findings_formats(binary, command):
    result = run(binary, "--output", "sarif", *command)
    assert result.returncode == 2
    assert "--output sarif is for validate, plan, not for" in result.stderr
