"""docs/vks.md's Supervisor recipe, held to the contract it documents.

The recipe's objects are valid Kubernetes and grant exactly the least privilege (get and list of
VM Operator's virtualmachines and virtualmachinesetresourcepolicies in one namespace); the guest
Secret it builds has exactly the keys the chart mounts; its helm commands render with the chart
as written; no token or password goes on a command line. The recipe's commands need a Supervisor
and are not run here. Run through scripts/chart-test.sh.
"""

from __future__ import annotations

import json
import re
import shlex
from pathlib import Path
from typing import Any

import helm_python as helm
from helm_python import _native as helm_native
import kubernetes_validate
import pytest
import yaml

from test_chart import CHART, CURRENT_API_VERSIONS, NEWEST_KUBERNETES, REPO, rbac_rules

PAGE = REPO / "docs" / "vks.md"
NAMESPACE = "tenant-a"

# The files of --supervisor-credentials-dir: the keys of the guest Secret.
SECRET_KEYS = {"server", "ca.crt", "token", "namespace"}

LEAST_PRIVILEGE = {
    ("vmoperator.vmware.com", resource, verb, ())
    for resource in ("virtualmachines", "virtualmachinesetresourcepolicies")
    for verb in ("get", "list")
}


def sh_blocks(text: str) -> list[str]:
    """The page's ```sh blocks, continuation lines joined."""
    blocks = re.findall(r"^```sh\n(.*?)^```$", text, re.MULTILINE | re.DOTALL)
    return [block.replace("\\\n", " ") for block in blocks]


def recipe_objects() -> list[dict[str, Any]]:
    """The objects the recipe applies on the Supervisor: its heredoc, with $NS filled in."""
    (heredoc,) = re.findall(r"apply -f - <<EOF\n(.*?)^EOF$", PAGE.read_text(), re.MULTILINE | re.DOTALL)
    return [doc for doc in yaml.safe_load_all(heredoc.replace("$NS", NAMESPACE)) if doc]


def only(documents: list[dict[str, Any]], kind: str) -> dict[str, Any]:
    (found,) = [doc for doc in documents if doc["kind"] == kind]
    return found


def helm_installs() -> list[list[str]]:
    """The words of each `helm … install` command of the page."""
    commands = []
    for block in sh_blocks(PAGE.read_text()):
        for line in block.splitlines():
            words = shlex.split(line, comments=True)
            if words[:1] == ["helm"] and "install" in words:
                commands.append(words)
    return commands


def values_of(words: list[str]) -> dict[str, Any]:
    """The values a command's --set flags give, nested as Helm nests dotted keys."""
    values: dict[str, Any] = {}
    for flag, argument in zip(words, words[1:]):
        if flag == "--set":
            key, value = argument.split("=", 1)
            *parents, leaf = key.split(".")
            node = values
            for parent in parents:
                node = node.setdefault(parent, {})
            node[leaf] = {"true": True, "false": False}.get(value, value)
    return values


def render_as_written(values: dict[str, Any]) -> list[dict[str, Any]]:
    """The chart rendered with exactly these values, like `helm template` with the same --set."""
    options = {"name": "vsphere-descheduler", "namespace": "vsphere-descheduler", "is_install": True, "api_versions": list(CURRENT_API_VERSIONS)}
    with helm.Chart.load(CHART) as chart:
        rendered = json.loads(helm_native.call_string("helm_render", chart._raw(), json.dumps(values), json.dumps(options)))
    return [doc for path, text in rendered.items() if not path.endswith("NOTES.txt") for doc in yaml.safe_load_all(text) if doc]


def test_the_recipes_objects_are_valid_kubernetes():
    documents = recipe_objects()
    assert sorted(doc["kind"] for doc in documents) == ["Role", "RoleBinding", "Secret", "ServiceAccount"]
    for document in documents:
        assert document["metadata"]["namespace"] == NAMESPACE
        kubernetes_validate.validate(document, NEWEST_KUBERNETES, strict=True)


def test_the_role_grants_get_and_list_of_the_two_vm_operator_resources_and_nothing_else():
    role = only(recipe_objects(), "Role")
    assert rbac_rules(role["rules"]) == LEAST_PRIVILEGE
    assert all(set(rule) == {"apiGroups", "resources", "verbs"} for rule in role["rules"])


def test_the_binding_gives_the_role_to_the_recipes_service_account_only():
    documents = recipe_objects()
    account = only(documents, "ServiceAccount")["metadata"]["name"]
    binding = only(documents, "RoleBinding")
    assert binding["roleRef"] == {"apiGroup": "rbac.authorization.k8s.io", "kind": "Role", "name": only(documents, "Role")["metadata"]["name"]}
    assert binding["subjects"] == [{"kind": "ServiceAccount", "name": account, "namespace": NAMESPACE}]


def test_the_token_secret_is_a_service_account_token_of_that_account():
    documents = recipe_objects()
    secret = only(documents, "Secret")
    assert secret["type"] == "kubernetes.io/service-account-token"
    assert secret["metadata"]["annotations"] == {"kubernetes.io/service-account.name": only(documents, "ServiceAccount")["metadata"]["name"]}
    assert "data" not in secret and "stringData" not in secret, "Kubernetes writes the token, not the recipe"


def test_the_guest_secret_gets_exactly_the_keys_the_chart_mounts():
    (block,) = [block for block in sh_blocks(PAGE.read_text()) if "create secret generic" in block and "mktemp" in block]
    written = set(re.findall(r'>"\$dir/([^"]+)"', block))
    assert written == SECRET_KEYS
    assert re.search(r'--from-file="\$dir"(\s|$)', block), "the directory's files become the Secret's keys"


def test_the_secret_the_recipe_creates_is_the_one_the_install_names():
    text = PAGE.read_text()
    (created,) = set(re.findall(r"create secret generic (\S+)", text))
    supervisor_installs = [words for words in helm_installs() if "vsphere.source=supervisor" in words]
    assert supervisor_installs
    for words in supervisor_installs:
        assert values_of(words)["vsphere"]["supervisor"]["existingSecret"] == created


@pytest.mark.parametrize("source", ["supervisor", "node-label"])
def test_the_pages_helm_install_renders_as_written_and_mounts_what_the_source_needs(source):
    (words,) = [words for words in helm_installs() if f"vsphere.source={source}" in words]
    documents = render_as_written(values_of(words))
    (cronjob,) = [doc for doc in documents if doc["kind"] == "CronJob"]
    spec = cronjob["spec"]["jobTemplate"]["spec"]["template"]["spec"]
    volumes = {volume["name"]: volume for volume in spec["volumes"]}
    args = spec["containers"][0]["args"]
    if source == "supervisor":
        assert volumes["supervisor-credentials"]["secret"]["secretName"] == values_of(words)["vsphere"]["supervisor"]["existingSecret"]
        assert "--supervisor-credentials-dir=/etc/vsphere-descheduler/supervisor" in args
    else:
        assert set(volumes) == {"policy"}
    assert not [arg for arg in args if arg.startswith("--vsphere-")]


def test_no_token_or_password_goes_on_a_command_line():
    for block in sh_blocks(PAGE.read_text()):
        for line in block.splitlines():
            assert not re.search(r"--(token|password)\b|--from-literal=(token|password)|--vsphere-password", line), line
