"""The chart's ValidatingAdmissionPolicy judged as the API server judges it.

The policy and its binding are rendered by Helm (test_chart.py's helpers) and every CEL expression
in them (matchConditions, variables, validations, messageExpressions) is compiled and evaluated by
cel-python, a CEL implementation, on update requests: an old node, a new node and who sends it.
`AdmissionPolicy` below follows the API server's admission plugin
(k8s.io/apiserver/pkg/admission/plugin/policy/validating): the request must match the resource
rules and every match condition; the validations run in order and the first that is not true
denies, with its messageExpression's result when that is a non-empty single line of at most 5 KiB,
else its message; an expression that fails to evaluate denies too (failurePolicy Fail); and the
denial reads as the API server words it.

The policy keeps to standard CEL (has(), macros, size, string concatenation), which both
cel-python and the Kubernetes CEL environment accept, so what passes here is what the API server
evaluates. Run through scripts/chart-test.sh.
"""

from __future__ import annotations

import copy
import json
import subprocess
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable

import celpy
import helm_python as helm
import pytest
import yaml
from celpy import celtypes

from test_chart import (  # noqa: F401 (binary is a fixture)
    API_VERSIONS_WITHOUT_ADMISSION_POLICIES,
    FULLNAME,
    NAMESPACE,
    REPO,
    binary,
    notes,
    objects,
    policy_text,
    write_policy,
)

ACCOUNT = f"system:serviceaccount:{NAMESPACE}:{FULLNAME}"
HOST = "vsphere-descheduler.io/host"
CLUSTER = "vsphere-descheduler.io/cluster"
DATACENTER = "vsphere-descheduler.io/datacenter"
SITE = "vsphere-descheduler.io/site"
WHO = f"vsphere-descheduler may change only the node labels {HOST}, {CLUSTER}"
# The API server's limit on a messageExpression's result (celconfig.MaxEvaluatedMessageExpressionSizeBytes).
MAX_MESSAGE_BYTES = 5 * 1024


# --- the evaluator -----------------------------------------------------------------------------


@dataclass(frozen=True)
class Request:
    """An admission request for a node: what the API server hands the policy as request, object
    and oldObject."""

    old: dict[str, Any]
    new: dict[str, Any]
    username: str = ACCOUNT
    operation: str = "UPDATE"
    sub_resource: str = ""

    def attributes(self) -> dict[str, Any]:
        request = {
            "kind": {"group": "", "version": "v1", "kind": "Node"},
            "resource": {"group": "", "version": "v1", "resource": "nodes"},
            "subResource": self.sub_resource,
            "name": self.new["metadata"]["name"],
            "operation": self.operation,
            "userInfo": {"username": self.username, "groups": ["system:authenticated"]},
            "dryRun": False,
        }
        return {"request": request, "object": self.new, "oldObject": self.old}


@dataclass(frozen=True)
class Decision:
    allowed: bool
    # As the client reads it: the Status message of the refusal.
    message: str = ""
    code: int = 200


@dataclass
class Compiled:
    """One CEL expression, compiled once; `evaluate` returns a CEL value or raises EvaluationError."""

    source: str
    program: Any = field(repr=False)

    def evaluate(self, activation: dict[str, Any]) -> Any:
        try:
            result = self.program.evaluate(activation)
        except celpy.CELEvalError as error:
            raise EvaluationError(f"{self.source}: {error}") from error
        if isinstance(result, celpy.CELEvalError):
            raise EvaluationError(f"{self.source}: {result}")
        return result


class EvaluationError(Exception):
    pass


class AdmissionPolicy:
    """A rendered ValidatingAdmissionPolicy and its binding, every expression compiled up front
    (one the implementation cannot parse fails here, like one the API server would reject)."""

    def __init__(self, policy: dict[str, Any], binding: dict[str, Any]) -> None:
        assert binding["spec"]["policyName"] == policy["metadata"]["name"]
        self.name = policy["metadata"]["name"]
        self.binding = binding["metadata"]["name"]
        self.actions = binding["spec"]["validationActions"]
        self.spec = policy["spec"]
        environment = celpy.Environment()

        def compile_(source: str) -> Compiled:
            return Compiled(source, environment.program(environment.compile(source)))

        self.conditions = [compile_(c["expression"]) for c in self.spec.get("matchConditions", [])]
        self.variables = [(v["name"], compile_(v["expression"])) for v in self.spec.get("variables", [])]
        self.validations = [
            (v, compile_(v["expression"]), compile_(v["messageExpression"]) if "messageExpression" in v else None)
            for v in self.spec["validations"]
        ]

    def matches_rules(self, request: Request) -> bool:
        resource = "nodes" + (f"/{request.sub_resource}" if request.sub_resource else "")
        return any(
            "" in rule["apiGroups"]
            and "v1" in rule["apiVersions"]
            and request.operation in rule["operations"]
            and resource in rule["resources"]
            for rule in self.spec["matchConstraints"]["resourceRules"]
        )

    def admit(self, request: Request) -> Decision:
        if not self.matches_rules(request):
            return Decision(True)
        activation = {name: celpy.json_to_cel(value) for name, value in request.attributes().items()}
        # Any condition false skips the policy; else any that failed to evaluate denies.
        verdicts: list[Any] = []
        for condition in self.conditions:
            try:
                verdicts.append(condition.evaluate(activation) == celtypes.BoolType(True))
            except EvaluationError as error:
                verdicts.append(error)
        if False in verdicts:
            return Decision(True)
        if errors := [verdict for verdict in verdicts if isinstance(verdict, EvaluationError)]:
            return self.deny(request, str(errors[0]))
        # The API server evaluates a variable when an expression first reads it; these are all
        # read, so evaluating them in order up front decides the same.
        try:
            variables: dict[celtypes.StringType, Any] = {}
            activation["variables"] = celtypes.MapType(variables)
            for name, expression in self.variables:
                variables[celtypes.StringType(name)] = expression.evaluate(activation)
                activation["variables"] = celtypes.MapType(variables)
        except EvaluationError as error:
            return self.deny(request, str(error))
        for validation, expression, message_expression in self.validations:
            try:
                verdict = expression.evaluate(activation)
            except EvaluationError as error:
                return self.deny(request, str(error))
            if verdict != celtypes.BoolType(True):
                return self.deny(request, self.message(validation, message_expression, activation))
        return Decision(True)

    @staticmethod
    def message(validation: dict[str, Any], message_expression: Compiled | None, activation: dict[str, Any]) -> str:
        """The API server's choice: the messageExpression's string if usable, else message."""
        if message_expression is not None:
            try:
                result = message_expression.evaluate(activation)
            except EvaluationError:
                result = None
            if isinstance(result, str):
                text = str(result).strip()
                if text and "\n" not in text and len(text.encode()) <= MAX_MESSAGE_BYTES:
                    return text
        if validation.get("message", "").strip():
            return validation["message"].strip()
        return f"failed expression: {validation['expression'].strip()}"

    def deny(self, request: Request, message: str) -> Decision:
        assert self.actions == ["Deny"], "only Deny refuses a request"
        text = f"ValidatingAdmissionPolicy '{self.name}' with binding '{self.binding}' denied request: {message}"
        return Decision(False, f'nodes "{request.new["metadata"]["name"]}" is forbidden: {text}', 403)


def admission_policy(overrides: dict[str, Any] | None = None) -> AdmissionPolicy:
    documents = objects(overrides)
    (policy,) = [doc for doc in documents if doc["kind"] == "ValidatingAdmissionPolicy"]
    (binding,) = [doc for doc in documents if doc["kind"] == "ValidatingAdmissionPolicyBinding"]
    return AdmissionPolicy(policy, binding)


@pytest.fixture(scope="module")
def default_policy() -> AdmissionPolicy:
    return admission_policy()


# --- nodes as the API server hands them over ---------------------------------------------------

NODE = "w1"

STORED_NODE: dict[str, Any] = {
    "apiVersion": "v1",
    "kind": "Node",
    "metadata": {
        "name": NODE,
        "uid": "4f1c1e9e-2f4e-4b8e-9d7e-1f0a6b3c2d10",
        "resourceVersion": "41200",
        "creationTimestamp": "2026-01-01T00:00:00Z",
        "labels": {
            "kubernetes.io/hostname": NODE,
            "kubernetes.io/os": "linux",
            "node-role.kubernetes.io/worker": "",
            HOST: "esxi-1.example.com",
            CLUSTER: "compute-a",
        },
        "annotations": {
            "node.alpha.kubernetes.io/ttl": "0",
            "volumes.kubernetes.io/controller-managed-attach-detach": "true",
        },
        "managedFields": [
            {
                "manager": "kubelet",
                "operation": "Update",
                "apiVersion": "v1",
                "time": "2026-01-01T00:00:00Z",
                "fieldsType": "FieldsV1",
                "fieldsV1": {"f:metadata": {"f:labels": {"f:kubernetes.io/hostname": {}}}},
            },
            {
                "manager": "vsphere-descheduler",
                "operation": "Apply",
                "apiVersion": "v1",
                "time": "2026-01-01T00:02:00Z",
                "fieldsType": "FieldsV1",
                "fieldsV1": {"f:metadata": {"f:labels": {f"f:{HOST}": {}, f"f:{CLUSTER}": {}}}},
            },
        ],
    },
    "spec": {
        "podCIDR": "10.244.1.0/24",
        "podCIDRs": ["10.244.1.0/24"],
        "providerID": "vsphere://42366ab1-58d7-a5c8-5c2b-1e9b0e8d3b7a",
    },
    "status": {
        "conditions": [
            {
                "type": "Ready",
                "status": "True",
                "reason": "KubeletReady",
                "lastHeartbeatTime": "2026-01-01T00:05:00Z",
                "lastTransitionTime": "2026-01-01T00:00:30Z",
            }
        ],
        "nodeInfo": {"kubeletVersion": "v1.33.1", "systemUUID": "b16a3642-d758-c8a5-5c2b-1e9b0e8d3b7a"},
    },
}


def changed(change: Callable[[dict[str, Any]], None]) -> dict[str, Any]:
    """The stored node after `change`, with what every write does: a new resourceVersion."""
    node = copy.deepcopy(STORED_NODE)
    change(node)
    node["metadata"]["resourceVersion"] = str(int(STORED_NODE["metadata"]["resourceVersion"]) + 1)
    return node


def label(key: str, value: str | None) -> Callable[[dict[str, Any]], None]:
    def change(node: dict[str, Any]) -> None:
        if value is None:
            node["metadata"]["labels"].pop(key)
        else:
            node["metadata"]["labels"][key] = value

    return change


def apply_bookkeeping(node: dict[str, Any]) -> None:
    """What a write changes by itself: our managedFields entry's time (server-side apply) and,
    on kinds whose strategy counts them, the generation (nodes do not; it is compared by no check
    either way)."""
    node["metadata"]["managedFields"][1]["time"] = "2026-01-01T00:04:00Z"
    node["metadata"]["generation"] = 2


def both(*changes: Callable[[dict[str, Any]], None]) -> Callable[[dict[str, Any]], None]:
    def change(node: dict[str, Any]) -> None:
        for one in changes:
            one(node)

    return change


def taint(node: dict[str, Any]) -> None:
    node["spec"]["taints"] = [{"key": "example.com/maintenance", "value": "true", "effect": "NoSchedule"}]


def cordon(node: dict[str, Any]) -> None:
    node["spec"]["unschedulable"] = True


def annotate(node: dict[str, Any]) -> None:
    node["metadata"]["annotations"]["example.com/owner"] = "platform"


def remove_annotations(node: dict[str, Any]) -> None:
    del node["metadata"]["annotations"]


def add_finalizer(node: dict[str, Any]) -> None:
    node["metadata"]["finalizers"] = ["example.com/keep"]


def set_generate_name(node: dict[str, Any]) -> None:
    # A real API server lets an update change it (it is used only on create), unless a policy
    # checks it.
    node["metadata"]["generateName"] = "worker-"


def move_provider(node: dict[str, Any]) -> None:
    node["spec"]["providerID"] = "vsphere://00000000-0000-0000-0000-000000000000"


def future_spec_field(node: dict[str, Any]) -> None:
    node["spec"]["someFutureField"] = {"enabled": True}


def not_ready(node: dict[str, Any]) -> None:
    node["status"]["conditions"][0]["status"] = "False"


def update(change: Callable[[dict[str, Any]], None], **request: Any) -> Request:
    return Request(old=copy.deepcopy(STORED_NODE), new=changed(change), **request)


def refused(detail: str, who: str = WHO) -> str:
    return (
        f'nodes "{NODE}" is forbidden: ValidatingAdmissionPolicy \'{FULLNAME}\' with binding '
        f"'{FULLNAME}' denied request: {who}: {detail}"
    )


# --- the runs' own requests ---------------------------------------------------------------------

# (id, change) the runs' account may make.
ALLOWED = [
    ("our-host-label-moved", label(HOST, "esxi-2.example.com")),
    ("our-host-label-moved-as-an-apply-does-it", both(label(HOST, "esxi-2.example.com"), apply_bookkeeping)),
    ("our-host-label-removed", label(HOST, None)),
    ("our-cluster-label-removed", label(CLUSTER, None)),
    ("our-labels-set-on-a-node-without-them", both(label(HOST, None), label(CLUSTER, None))),
    ("only-managed-fields-and-resource-version", apply_bookkeeping),
    ("nothing-at-all", lambda node: None),
]


@pytest.mark.parametrize("change", [case[1] for case in ALLOWED], ids=[case[0] for case in ALLOWED])
def test_the_runs_may_set_move_and_remove_their_own_labels(default_policy, change):
    assert default_policy.admit(update(change)) == Decision(True)


def test_the_runs_may_set_their_labels_on_a_node_that_has_none():
    old = copy.deepcopy(STORED_NODE)
    del old["metadata"]["labels"]
    new = copy.deepcopy(old)
    new["metadata"]["labels"] = {HOST: "esxi-1.example.com"}
    assert admission_policy().admit(Request(old=old, new=new)) == Decision(True)


# (id, change, the refusal's detail) the runs' account may not make.
DENIED = [
    ("another-label-added", label("team", "platform"), "label team was added"),
    ("another-label-changed", label("kubernetes.io/hostname", "w9"), "label kubernetes.io/hostname was changed"),
    ("another-label-removed", label("node-role.kubernetes.io/worker", None), "label node-role.kubernetes.io/worker was removed"),
    (
        "another-label-beside-ours",
        both(label(HOST, "esxi-2.example.com"), label("team", "platform"), apply_bookkeeping),
        "label team was added",
    ),
    (
        "two-other-labels",
        both(label("kubernetes.io/os", None), label("node-role.kubernetes.io/worker", None)),
        "was removed (and 1 more)",
    ),
    ("a-taint-added", taint, "spec.taints was changed"),
    ("the-node-cordoned", cordon, "spec.unschedulable was changed"),
    ("an-annotation-added", annotate, "annotation example.com/owner was added"),
    ("all-annotations-removed", remove_annotations, "was removed (and 1 more)"),
    ("a-finalizer-added", add_finalizer, "metadata.finalizers was changed"),
    ("generate-name-set", set_generate_name, "metadata.generateName was changed"),
    ("the-provider-id-changed", move_provider, "spec.providerID was changed"),
    ("a-spec-field-the-policy-does-not-name", future_spec_field, "the node's spec was changed"),
]


@pytest.mark.parametrize(("change", "detail"), [case[1:] for case in DENIED], ids=[case[0] for case in DENIED])
def test_the_runs_may_change_nothing_else(default_policy, change, detail):
    decision = default_policy.admit(update(change))
    assert not decision.allowed
    assert decision.code == 403
    if detail.startswith("was removed (and"):
        # Which of several keys is named first follows map order, which the API server does not fix.
        assert decision.message.startswith(refused("")) and decision.message.endswith(detail), decision.message
    else:
        assert decision.message == refused(detail)


def test_a_status_write_by_the_runs_is_refused(default_policy):
    # RBAC grants no nodes/status; the policy holds even where a broader role was brought along.
    decision = default_policy.admit(update(not_ready, sub_resource="status"))
    assert decision == Decision(False, refused("the node's status was changed"), 403)


def test_every_message_is_one_line_within_the_api_servers_limit(default_policy):
    for _, change, _ in DENIED:
        message = default_policy.admit(update(change)).message
        assert "\n" not in message and len(message.encode()) <= MAX_MESSAGE_BYTES


# --- everyone else ------------------------------------------------------------------------------

OTHER_USERS = [
    "kubernetes-admin",
    "system:node:w1",
    f"system:serviceaccount:default:{FULLNAME}",  # the same account name in another namespace
    f"{ACCOUNT}-other",  # a name that merely starts like ours
]


@pytest.mark.parametrize("username", OTHER_USERS)
@pytest.mark.parametrize("change", [taint, cordon, annotate, label("team", "platform")], ids=["taint", "cordon", "annotation", "label"])
def test_nobody_elses_requests_are_affected(default_policy, username, change):
    assert default_policy.admit(update(change, username=username)) == Decision(True)


def test_the_kubelets_status_updates_are_not_affected(default_policy):
    assert default_policy.admit(update(not_ready, username="system:node:w1", sub_resource="status")) == Decision(True)


def test_only_updates_of_nodes_and_their_status_are_matched(default_policy):
    rules = default_policy.spec["matchConstraints"]["resourceRules"]
    assert rules == [{"apiGroups": [""], "apiVersions": ["v1"], "operations": ["UPDATE"], "resources": ["nodes", "nodes/status"]}]
    assert default_policy.spec["failurePolicy"] == "Fail"
    assert default_policy.actions == ["Deny"]


# --- which keys are ours ------------------------------------------------------------------------


def owned_keys(overrides: dict[str, Any]) -> list[str]:
    policy = admission_policy(overrides)
    (owned,) = [expression for name, expression in policy.variables if name == "ownedKeys"]
    return [str(key) for key in owned.evaluate({})]


@pytest.mark.parametrize(
    ("overrides", "keys"),
    [
        ({}, [HOST, CLUSTER]),
        ({"policy": {"vsphere": {"labels": {"cluster": ""}}}}, [HOST]),
        ({"policy": {"vsphere": {"labels": {"host": "example.com/esxi", "datacenter": DATACENTER}}}}, ["example.com/esxi", CLUSTER, DATACENTER]),
        ({"policy": {"vsphere": {"labels": None}}}, [HOST]),
        ({"policy": {"apiVersion": "descheduler/v1alpha2", "vsphere": None}}, [HOST]),
        ({"policy": "apiVersion: vsphere-descheduler.io/v1alpha1\nkind: DeschedulerPolicy\nvsphere:\n  labels:\n    host: example.com/esxi\n"}, ["example.com/esxi"]),
        ({"policy": {"vsphere": {"sites": {"source": "vsanFaultDomains"}}}}, [HOST, CLUSTER, SITE]),
        ({"policy": {"vsphere": {"sites": {"source": "vsanFaultDomains"}, "labels": {"site": "example.com/room"}}}}, [HOST, CLUSTER, "example.com/room"]),
        ({"policy": {"vsphere": {"sites": None}}}, [HOST, CLUSTER]),
    ],
    ids=["default", "cluster-label-off", "renamed-and-datacenter", "labels-null", "upstream-format", "policy-as-a-string", "sites", "sites-renamed", "sites-null"],
)
def test_the_owned_keys_are_the_ones_the_policy_has_the_runs_write(overrides, keys):
    assert owned_keys(overrides) == keys


def test_a_datacenter_label_becomes_ours_once_the_policy_writes_it():
    policy = admission_policy({"policy": {"vsphere": {"labels": {"datacenter": DATACENTER}}}})
    assert policy.admit(update(label(DATACENTER, "dc-1"))) == Decision(True)
    assert not admission_policy().admit(update(label(DATACENTER, "dc-1"))).allowed


def site_label_removal() -> Request:
    """A write that removes the site label from a node that carries one."""
    old = changed(label(SITE, "site-b"))
    new = copy.deepcopy(old)
    new["metadata"]["labels"].pop(SITE)
    return Request(old=old, new=new)


def test_the_site_label_becomes_ours_only_with_sites():
    sites = admission_policy({"policy": {"vsphere": {"sites": {"source": "vsanFaultDomains"}}}})
    assert sites.admit(update(label(SITE, "site-a"))) == Decision(True)
    assert sites.admit(site_label_removal()) == Decision(True)
    assert not admission_policy().admit(update(label(SITE, "site-a"))).allowed
    assert not admission_policy().admit(site_label_removal()).allowed


def test_a_former_site_key_may_be_removed_once_sites_are_dropped():
    policy = admission_policy({"admissionPolicy": {"formerLabelKeys": [SITE]}})
    assert policy.admit(site_label_removal()) == Decision(True)
    assert not policy.admit(update(label(SITE, "site-b"))).allowed


def test_a_former_key_may_be_removed_but_never_set():
    values = {"policy": {"vsphere": {"labels": {"cluster": ""}}}, "admissionPolicy": {"formerLabelKeys": [CLUSTER]}}
    policy = admission_policy(values)
    assert policy.admit(update(label(CLUSTER, None))) == Decision(True)
    who = f"vsphere-descheduler may change only the node labels {HOST}"
    assert policy.admit(update(label(CLUSTER, "compute-b"))) == Decision(False, refused(f"label {CLUSTER} was changed", who), 403)
    # Without the value, the apply that drops the old key is refused.
    assert not admission_policy({"policy": {"vsphere": {"labels": {"cluster": ""}}}}).admit(update(label(CLUSTER, None))).allowed


def test_the_account_is_the_one_the_pod_runs_as():
    policy = admission_policy({"serviceAccount": {"create": False, "name": "prepared"}, "rbac": {"create": False}})
    prepared = f"system:serviceaccount:{NAMESPACE}:prepared"
    assert not policy.admit(update(taint, username=prepared)).allowed
    assert policy.admit(update(taint)) == Decision(True)


# --- what the binary writes passes -------------------------------------------------------------

# DRS moved worker-b's VM: the plan moves its host label and sets the cluster (and datacenter)
# label on every node, which carries none yet.
SNAPSHOT = REPO / "tests" / "fixtures" / "plan" / "drs-moved-worker" / "snapshot.yaml"


# A stretched cluster's sites from DRS host groups: DRS moved worker-c's VM into the other site.
SITES_SNAPSHOT = REPO / "tests" / "fixtures" / "plan" / "sites-host-groups" / "snapshot.yaml"
SITES = {"source": "hostGroups", "hostGroups": ["site-a-hosts", "site-b-hosts"]}


def planned_label_writes(binary: Path, policy_file: Path, snapshot: Path = SNAPSHOT) -> list[dict[str, Any]]:
    """The label changes `vsphere-descheduler plan` makes on a snapshot with a policy."""
    result = subprocess.run(
        [str(binary), "plan", "--output", "json", "--snapshot", str(snapshot), "--policy", str(policy_file), "--now", "2026-01-01T00:00:00Z"],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert result.returncode == 0, result.stdout + result.stderr
    return json.loads(result.stdout)["labelChanges"]


@pytest.mark.parametrize(
    "overrides",
    [
        {},
        {"policy": {"vsphere": {"labels": {"datacenter": DATACENTER}}}},
        {"policy": {"vsphere": {"labels": {"host": "example.com/esxi", "cluster": ""}}}},
    ],
    ids=["default", "with-datacenter", "renamed-host-only"],
)
def test_every_label_write_the_binary_plans_is_admitted(overrides, binary, tmp_path):
    policy = admission_policy(overrides)
    changes = planned_label_writes(binary, write_policy(tmp_path, policy_text(objects(overrides))))
    # The plan writes every key the admission policy owns, and nothing else.
    assert {change["key"] for change in changes} == set(owned_keys(overrides))
    stored = {node["metadata"]["name"]: node for node in yaml.safe_load_all(SNAPSHOT.read_text()) if node and node["kind"] == "Node"}
    for name in sorted({change["node"] for change in changes}):
        old = stored[name]
        new = copy.deepcopy(old)
        for change in (change for change in changes if change["node"] == name):
            new["metadata"]["labels"][change["key"]] = change["new"]
        assert policy.admit(Request(old=old, new=new)) == Decision(True), name


@pytest.mark.parametrize(
    "labels",
    [{}, {"site": "example.com/room", "cluster": ""}],
    ids=["default-site-key", "renamed-site-key"],
)
def test_every_site_label_write_the_binary_plans_is_admitted(labels, binary, tmp_path):
    overrides = {"policy": {"vsphere": {"sites": SITES, "labels": labels}}}
    policy = admission_policy(overrides)
    changes = planned_label_writes(binary, write_policy(tmp_path, policy_text(objects(overrides))), SITES_SNAPSHOT)
    site_key = labels.get("site", SITE)
    assert site_key in owned_keys(overrides)
    assert any(change["key"] == site_key for change in changes), changes
    assert {change["key"] for change in changes} <= set(owned_keys(overrides))
    stored = {node["metadata"]["name"]: node for node in yaml.safe_load_all(SITES_SNAPSHOT.read_text()) if node and node["kind"] == "Node"}
    for name in sorted({change["node"] for change in changes}):
        old = stored[name]
        new = copy.deepcopy(old)
        for change in (change for change in changes if change["node"] == name):
            new["metadata"]["labels"][change["key"]] = change["new"]
        assert policy.admit(Request(old=old, new=new)) == Decision(True), name


# --- when it is not installed -------------------------------------------------------------------

ADMISSION_KINDS = {"ValidatingAdmissionPolicy", "ValidatingAdmissionPolicyBinding"}


def test_an_api_server_without_admission_policies_gets_none_and_the_notes_say_so():
    kinds = {doc["kind"] for doc in objects(api_versions=API_VERSIONS_WITHOUT_ADMISSION_POLICIES)}
    assert not kinds & ADMISSION_KINDS
    assert "ClusterRole" in kinds
    text = notes(api_versions=API_VERSIONS_WITHOUT_ADMISSION_POLICIES)
    assert f"NOT INSTALLED: ValidatingAdmissionPolicy {FULLNAME}" in text
    assert "Kubernetes 1.30 or later" in text
    assert f"{ACCOUNT} may patch any field of any node" in text


def test_the_value_turns_it_off_and_the_notes_stay_quiet():
    off = {"admissionPolicy": {"enabled": False}}
    assert not {doc["kind"] for doc in objects(off)} & ADMISSION_KINDS
    assert "ValidatingAdmissionPolicy" not in notes(off)
    assert "ValidatingAdmissionPolicy" not in notes(off, api_versions=API_VERSIONS_WITHOUT_ADMISSION_POLICIES)


def test_the_notes_show_how_to_see_it_refuse():
    text = notes()
    assert f"ValidatingAdmissionPolicy {FULLNAME} lets the runs change nothing on a node but the labels {HOST}, {CLUSTER}" in text
    # Server-side apply reaches the policy; kubectl patch reads the node first, which the
    # account may not, and stops at RBAC (what a real API server showed).
    assert f"kubectl apply --server-side --dry-run=server --as={ACCOUNT} --field-manager=probe -f -" in text
    assert "metadata: {name: NODE, labels: {example.com/probe: x}}" in text
    assert "kubectl patch node" not in text


def test_other_objects_do_not_depend_on_it():
    with_policy = [doc for doc in objects() if doc["kind"] not in ADMISSION_KINDS]
    assert with_policy == objects({"admissionPolicy": {"enabled": False}})
    assert with_policy == objects(api_versions=API_VERSIONS_WITHOUT_ADMISSION_POLICIES)


def test_former_keys_must_be_label_keys():
    with pytest.raises(helm.HelmValuesError) as raised:
        objects({"admissionPolicy": {"formerLabelKeys": ["not a key"]}})
    assert "/admissionPolicy/formerLabelKeys" in str(raised.value)
