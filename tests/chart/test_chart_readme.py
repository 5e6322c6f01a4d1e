"""The chart's README: its parameter table is what values.yaml's `# --` comments give, and every
value is described there.

scripts/chart-readme.py writes the table (helm-docs' convention, read with PyYAML); these tests
run its --check, hold its reading of the convention to examples, and check the table against
values.yaml and values.schema.json on their own, so that a key the generator missed fails too.
Run through scripts/chart-test.sh.
"""

from __future__ import annotations

import importlib.util
import json
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any, Iterator

import yaml

from test_chart import CHART, REPO

SCRIPT = REPO / "scripts" / "chart-readme.py"


def load_generator():
    spec = importlib.util.spec_from_file_location("chart_readme", SCRIPT)
    module = importlib.util.module_from_spec(spec)
    # Registered before it runs: its dataclasses look their module up by name.
    sys.modules["chart_readme"] = module
    spec.loader.exec_module(module)
    return module


chart_readme = load_generator()


def generate(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, str(SCRIPT), *args], capture_output=True, text=True, timeout=60)


def rows() -> list[Any]:
    return chart_readme.parameter_rows((CHART / "values.yaml").read_text())


def covered(path: str, keys: set[str]) -> bool:
    """Whether `path` has a row, or lies below an object described as a whole."""
    parts = path.split(".")
    return any(".".join(parts[:end]) in keys for end in range(1, len(parts) + 1))


def value_leaves(value: Any, prefix: str = "") -> Iterator[str]:
    """Dotted paths of values.yaml's leaves: scalars, lists and empty objects."""
    for key, child in value.items():
        path = f"{prefix}.{key}" if prefix else key
        if isinstance(child, dict) and child:
            yield from value_leaves(child, path)
        else:
            yield path


def resolved(schema: dict[str, Any], root: dict[str, Any]) -> dict[str, Any]:
    while "$ref" in schema:
        name = schema["$ref"].removeprefix("#/definitions/")
        schema = {**root["definitions"][name], **{k: v for k, v in schema.items() if k != "$ref"}}
    return schema


def schema_properties(schema: dict[str, Any], root: dict[str, Any], prefix: str = "") -> Iterator[tuple[str, dict[str, Any]]]:
    """Dotted paths of the schema's properties, each with its (resolved) schema."""
    for key, child in resolved(schema, root).get("properties", {}).items():
        path = f"{prefix}.{key}" if prefix else key
        child = resolved(child, root)
        yield path, child
        yield from schema_properties(child, root, path)


# helm-docs' type names for JSON schema's.
SCHEMA_TYPES = {"string": "string", "boolean": "bool", "integer": "int", "number": "float", "array": "list", "object": "object"}


def allowed_types(schema: dict[str, Any], root: dict[str, Any]) -> set[str]:
    schema = resolved(schema, root)
    declared = schema.get("type", [])
    types = {SCHEMA_TYPES[t] for t in ([declared] if isinstance(declared, str) else declared) if t != "null"}
    for branch in schema.get("anyOf", []) + schema.get("oneOf", []):
        types |= allowed_types(branch, root)
    return types


# --- the README is current ---------------------------------------------------------------------


def test_the_readme_parameter_table_is_what_values_yaml_gives():
    result = generate("--check")
    assert result.returncode == 0, result.stderr


def test_a_readme_out_of_date_with_values_yaml_fails_the_check_until_it_is_regenerated(tmp_path):
    chart = tmp_path / "chart"
    chart.mkdir()
    shutil.copy(CHART / "README.md", chart / "README.md")
    values = (CHART / "values.yaml").read_text()
    described = "# -- Plan and report, change nothing"
    assert described in values
    (chart / "values.yaml").write_text(values.replace(described, "# -- Only plan and report, change nothing"))
    before = (chart / "README.md").read_text()

    stale = generate("--check", "--chart", str(chart))
    assert stale.returncode == 1
    assert "out of date with values.yaml: run scripts/chart-readme.py" in stale.stderr
    assert (chart / "README.md").read_text() == before

    assert generate("--chart", str(chart)).returncode == 0
    assert "| Only plan and report, change nothing" in (chart / "README.md").read_text()
    assert generate("--check", "--chart", str(chart)).returncode == 0


def test_a_readme_without_its_markers_is_refused_not_rewritten(tmp_path):
    chart = tmp_path / "chart"
    chart.mkdir()
    shutil.copy(CHART / "values.yaml", chart / "values.yaml")
    (chart / "README.md").write_text("# A chart\n\nNo table here.\n")
    result = generate("--chart", str(chart))
    assert result.returncode == 1
    assert "the README needs the line" in result.stderr
    assert (chart / "README.md").read_text() == "# A chart\n\nNo table here.\n"


# --- every value is described ------------------------------------------------------------------


def test_every_row_has_a_description():
    undescribed = [row.key for row in rows() if not row.description]
    assert undescribed == [], f"add a `# --` comment above these keys in values.yaml: {undescribed}"


def test_every_leaf_of_values_yaml_has_a_row_or_lies_below_an_object_described_whole():
    keys = {row.key for row in rows()}
    leaves = list(value_leaves(yaml.safe_load((CHART / "values.yaml").read_text())))
    assert len(leaves) > 50
    assert [leaf for leaf in leaves if not covered(leaf, keys)] == []


def test_every_property_of_the_schema_has_a_row():
    root = json.loads((CHART / "values.schema.json").read_text())
    keys = {row.key for row in rows()}
    # Helm adds `global` to every chart's values (for values shared with subcharts); the schema
    # allows it, and this chart neither sets nor reads it.
    leaves = [path for path, schema in schema_properties(root, root) if "properties" not in schema and path != "global"]
    assert len(leaves) > 50
    assert [path for path in leaves if not covered(path, keys)] == []


def test_each_rows_type_is_one_the_schema_allows():
    root = json.loads((CHART / "values.schema.json").read_text())
    schemas = dict(schema_properties(root, root))
    wrong = []
    for row in rows():
        if row.key not in schemas:
            wrong.append(f"{row.key}: not a property of the schema")
            continue
        allowed = allowed_types(schemas[row.key], root)
        named = set(row.type.split(" or "))
        if not allowed or not named <= allowed:
            wrong.append(f"{row.key}: {row.type}, the schema allows {sorted(allowed)}")
    assert wrong == []


# --- the convention as the generator reads it --------------------------------------------------

SAMPLE = """\
# A note for readers of values.yaml only.
# -- The replica count,
# continued on the next line.
replicas: 2

# -- Above a blank line, so it describes nothing.

plain: x
image:
  # -- Where from | which registry, e.g. `a|b` or <registry>.
  repository: r
  tag: ""
# -- (int) Seconds; null: none.
timeout: null
# -- Passed on whole.
# @default -- the chart's own
resources:
  limits: {memory: 1Gi}
  # -- Described even below an object described whole.
  requests: {}
labels:
  example.com/x: "y"
"""


def test_the_generator_reads_helm_docs_comments_as_helm_docs_does():
    found = [(row.key, row.type, row.default, row.description) for row in chart_readme.parameter_rows(SAMPLE)]
    assert found == [
        ("replicas", "int", "`2`", "The replica count, continued on the next line."),
        ("plain", "string", '`"x"`', ""),
        ("image.repository", "string", '`"r"`', "Where from | which registry, e.g. `a|b` or <registry>."),
        ("image.tag", "string", '`""`', ""),
        ("timeout", "int", "`null`", "Seconds; null: none."),
        ("resources", "object", "the chart's own", "Passed on whole."),
        ("resources.requests", "object", "`{}`", "Described even below an object described whole."),
        ('labels."example.com/x"', "string", '`"y"`', ""),
    ]


def test_table_cells_escape_pipes_everywhere_and_angle_brackets_outside_code():
    lines = chart_readme.table(chart_readme.parameter_rows(SAMPLE)).splitlines()
    (repository,) = [line for line in lines if line.startswith("| `image.repository` ")]
    assert repository == (
        '| `image.repository` | string | `"r"` | Where from \\| which registry, e.g. `a\\|b` or &lt;registry>. |'
    )
