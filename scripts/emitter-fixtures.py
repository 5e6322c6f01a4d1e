#!/usr/bin/env python3
"""Writes tests/fixtures/emitters/: snapshot fixtures as real tools write them.

Each source fixture (plain LF UTF-8 YAML) is loaded and written again by the YAML and JSON
emitters people run on Kubernetes objects, in the styles they write, and in the encodings
Windows tools add. src/snapshot/read/forms.rs reads every file written here and checks that it gives
the objects of its source, so the files are committed and CI needs none of these tools. Run
this again after changing a source fixture:

    scripts/emitter-fixtures.py

It needs Python's PyYAML, yq (the jq wrapper over PyYAML), jq, kubectl (run offline, with
--local), Perl's JSON::PP, Node.js and iconv.
"""

import json
import pathlib
import subprocess
import sys

import yaml

ROOT = pathlib.Path(__file__).resolve().parent.parent
OUT = ROOT / "tests/fixtures/emitters"

# name -> source fixture: kubectl's own output (managed fields, wrapped text), a List with
# metrics, PodDisruptionBudgets and a VSphereInventory.
SOURCES = {
    "kubectl-pods": "tests/fixtures/yaml/kubectl-pods.yaml",
    "pdb-stale": "tests/fixtures/plan/pdb-stale/snapshot.yaml",
    "low-node-utilization-metrics": "tests/fixtures/plan/low-node-utilization-metrics/snapshot.yaml",
}


def run(command, text):
    return subprocess.run(command, input=text, capture_output=True, text=True, check=True).stdout


def shared(value, seen):
    """The value with equal mappings and lists made one object, as a script that reuses one
    dict writes them: PyYAML then writes an anchor and aliases."""
    if isinstance(value, dict):
        value = {key: shared(item, seen) for key, item in value.items()}
    elif isinstance(value, list):
        value = [shared(item, seen) for item in value]
    else:
        return value
    if not value:
        return value
    key = json.dumps(value, sort_keys=True)
    return seen.setdefault(key, value)


def json_objects(text):
    """The JSON documents of a stream of concatenated ones."""
    decoder = json.JSONDecoder()
    objects = []
    at = 0
    while True:
        while at < len(text) and text[at].isspace():
            at += 1
        if at == len(text):
            return objects
        value, at = decoder.raw_decode(text, at)
        objects.append(value)


def kubectl(document, output):
    """`document` as kubectl prints it, offline: a List's items come out one by one."""
    command = ["kubectl", "label", "--local", "-f", "-", "-o", output, "none-such-label-"]
    return run(command, json.dumps(document))


def kubectl_yaml(documents):
    """Each object as `kubectl … -o yaml` prints it, one document each (kubectl prints several
    without a `---` between them, so each goes through it alone)."""
    objects = [o for d in documents for o in json_objects(kubectl(d, "json"))]
    return "---\n".join(kubectl(o, "yaml") for o in objects)


def variants(text):
    documents = [d for d in yaml.safe_load_all(text) if d is not None]
    jsons = [json.dumps(d) for d in documents]
    block = yaml.safe_dump_all(documents)
    stream = "\n".join(jsons) + "\n"
    out = {
        # PyYAML as scripts call it: sorted keys, lists not indented, long text folded.
        "pyyaml-block.yaml": block,
        "pyyaml-flow.yaml": yaml.safe_dump_all(documents, default_flow_style=True),
        # Every scalar tagged, every key explicit.
        "pyyaml-canonical.yaml": yaml.safe_dump_all(documents, canonical=True),
        # One anchor for each mapping or list written more than once, aliases at each reuse.
        "pyyaml-aliases.yaml": yaml.dump_all([shared(d, {}) for d in documents]),
        # Windows line ends, `---` and `...` around each document, indented by 4, narrow,
        # non-ASCII escaped.
        "pyyaml-crlf-explicit.yaml": yaml.safe_dump_all(
            documents,
            indent=4,
            width=40,
            explicit_start=True,
            explicit_end=True,
            allow_unicode=False,
            line_break="\r\n",
        ),
        "yq-indentless.yaml": run(["yq", "-y", "--indentless-lists", "."], text),
        "kubectl.yaml": kubectl_yaml(documents),
        # kubectl writes several objects as concatenated JSON documents, indented by 4.
        "kubectl.json": "".join(kubectl(d, "json") for d in documents),
        "jq-pretty.json": run(["jq", "."], stream),
        "jq-compact.json": run(["jq", "-c", "."], stream),
        "jq-tab-sorted.json": run(["jq", "--tab", "-S", "."], stream),
        "perl-json-pp.json": run(
            [
                "perl",
                "-MJSON::PP",
                "-e",
                "my $j = JSON::PP->new->pretty->canonical->relaxed; local $/; "
                "my $t = <STDIN>; while ($t =~ /\\S/) { my ($v, $n) = $j->decode_prefix($t); "
                "print $j->encode($v); $t = substr($t, $n); }",
            ],
            stream,
        ),
        # JSON documents separated by `---`, as YAML tooling joins them.
        "node-dashes.json": run(
            [
                "node",
                "-e",
                "const t=require('fs').readFileSync(0,'utf8').trim().split('\\n');"
                "process.stdout.write(t.map(l=>JSON.stringify(JSON.parse(l),null,4)).join('\\n---\\n')+'\\n')",
            ],
            stream,
        ),
    }
    binary = {
        # What PowerShell's Out-File and Notepad write: UTF-16 LE and UTF-8, each with a mark.
        "utf16le-bom.yaml": subprocess.run(
            ["iconv", "-t", "UTF-16"], input=block.encode(), capture_output=True, check=True
        ).stdout,
        "utf8-bom.json": "\ufeff".encode() + out["jq-pretty.json"].encode(),
    }
    return out, binary


def main():
    for name, source in SOURCES.items():
        text = (ROOT / source).read_text()
        directory = OUT / name
        directory.mkdir(parents=True, exist_ok=True)
        (directory / "source").write_text(source + "\n")
        written, binary = variants(text)
        for file, content in written.items():
            (directory / file).write_bytes(content.encode())
        for file, content in binary.items():
            (directory / file).write_bytes(content)
        print(f"{directory.relative_to(ROOT)}: {len(written) + len(binary)} files", file=sys.stderr)


if __name__ == "__main__":
    main()
