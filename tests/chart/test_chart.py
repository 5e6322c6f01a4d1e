"""Tests of the Helm chart in charts/vsphere-descheduler.

The chart is rendered and linted by Helm's own Go engine (helm-python-sdk binds Helm v4's SDK),
every rendered object is validated against Kubernetes' OpenAPI schemas (kubernetes-validate,
strict: unknown fields are errors), and the rendered policy is checked by the binary itself
(`vsphere-descheduler validate`). Run through scripts/chart-test.sh.

In CI (`CI` set to any non-empty value) a missing prerequisite (a Python package,
the binary) fails the run; nothing here is ever skipped.
"""

from __future__ import annotations

import copy
import json
import os
import re
import shutil
import subprocess
from pathlib import Path
from typing import Any

import helm_python as helm
from helm_python import _native as helm_native
import kubernetes_validate
import pytest
import yaml

REPO = Path(__file__).resolve().parents[2]
CHART = REPO / "charts" / "vsphere-descheduler"
DEFAULT_POLICY_FILE = REPO / "policies" / "host-anti-affinity.yaml"


def under_ci(value: str | None) -> bool:
    """Whether a value of `CI` means CI: any non-empty value (GitHub and GitLab set `true`,
    other systems `1` or `yes`), the rule of tests/support/ci.rs."""
    return bool(value)


CI = under_ci(os.environ.get("CI"))

RELEASE = "vsd"
NAMESPACE = "kube-system"
FULLNAME = "vsd-vsphere-descheduler"

# The oldest Kubernetes the chart declares (Chart.yaml kubeVersion) and the newest the
# validator knows: a field that one of them lacks or renamed fails here.
OLDEST_KUBERNETES = "1.27"
NEWEST_KUBERNETES = ".".join(kubernetes_validate.latest_version().split(".")[:2])

# What an API server serves beyond Helm's built-in list, as `helm install` discovers it and
# `helm template --api-versions` names it: Kubernetes 1.30 and later serve ValidatingAdmissionPolicy
# (the chart's admission policy renders only then); 1.27 to 1.29 do not.
CURRENT_API_VERSIONS = (
    "admissionregistration.k8s.io/v1/ValidatingAdmissionPolicy",
    "admissionregistration.k8s.io/v1/ValidatingAdmissionPolicyBinding",
)
API_VERSIONS_WITHOUT_ADMISSION_POLICIES: tuple[str, ...] = ()

# The values without a usable default; everything else is the chart's default.
REQUIRED: dict[str, Any] = {
    "clusterName": "prod-east",
    "vsphere": {
        "server": "vcenter.example.com",
        "credentials": {"existingSecret": "vsphere-credentials"},
    },
}

# One value set that moves every knob away from its default.
NON_DEFAULT: dict[str, Any] = {
    "dryRun": True,
    "output": "text",
    "logFormat": "plain",
    "logLevel": "debug",
    "vsphere": {
        "credentials": {
            "existingSecret": "vcenter-login",
            "usernameKey": "user",
            "passwordKey": "pass",
        },
        "caBundle": {"configMap": "vcenter-ca", "key": "root.pem"},
    },
    "schedule": "*/5 * * * *",
    "timeZone": "Europe/Berlin",
    "suspend": True,
    "startingDeadlineSeconds": 60,
    "successfulJobsHistoryLimit": 5,
    "failedJobsHistoryLimit": 2,
    "activeDeadlineSeconds": 240,
    "backoffLimit": 1,
    "ttlSecondsAfterFinished": 86400,
    "image": {
        "repository": "registry.example.com/platform/vsphere-descheduler",
        "tag": "0.1.0-rc.1",
        "pullPolicy": "Always",
    },
    "imagePullSecrets": [{"name": "regcred"}],
    "serviceAccount": {"name": "descheduler-runner", "annotations": {"team": "platform"}},
    "priorityClassName": "system-cluster-critical",
    "resources": {
        "requests": {"cpu": "200m", "memory": "256Mi"},
        "limits": {"cpu": "1", "memory": "1Gi"},
    },
    "nodeSelector": {"node-role.kubernetes.io/control-plane": ""},
    "tolerations": [
        {"key": "node-role.kubernetes.io/control-plane", "operator": "Exists", "effect": "NoSchedule"}
    ],
    "affinity": {
        "nodeAffinity": {
            "requiredDuringSchedulingIgnoredDuringExecution": {
                "nodeSelectorTerms": [
                    {"matchExpressions": [{"key": "kubernetes.io/os", "operator": "In", "values": ["linux"]}]}
                ]
            }
        }
    },
    "podLabels": {"team": "platform"},
    "podAnnotations": {"example.com/owner": "platform"},
    "extraArgs": ["--some-future-flag=1"],
    "extraEnv": [
        {"name": "HTTPS_PROXY", "value": "http://proxy.example.com:3128"},
        {"name": "NO_PROXY", "value": "10.0.0.0/8"},
    ],
    "extraVolumes": [{"name": "scratch", "emptyDir": {}}],
    "extraVolumeMounts": [{"name": "scratch", "mountPath": "/scratch"}],
    "metrics": {
        "push": {
            "url": "https://pushgateway.monitoring.svc:9091",
            "credentials": {"existingSecret": "pushgateway-login", "type": "basic", "usernameKey": "user", "passwordKey": "pass"},
            "caBundle": {"secret": "pushgateway-ca", "key": "root.pem"},
        },
        "dashboard": {"enabled": True, "namespace": "monitoring", "labels": {"team": "platform"}, "annotations": {"grafana_folder": "Platform"}},
        "alerts": {
            "enabled": True,
            "namespace": "monitoring",
            "labels": {"release": "kube-prometheus-stack"},
            "severity": "critical",
            "failingFor": "30m",
            "noSuccessfulRunIntervals": 3,
            "atRiskIntervals": 4,
        },
    },
}

# Kinds of custom resources: kubernetes-validate knows no CRD, so their structure is checked by
# the tests of their own section, and their metadata as a ConfigMap's.
CUSTOM_RESOURCES = {"PrometheusRule"}

# The topology sources other than vCenter, each with what it needs instead of vCenter's values
# (docs/vks.md). The rendered policies of these two name vsphere.source, which only a binary
# that knows the sources validates.
WITHOUT_VCENTER: dict[str, Any] = {"vsphere": {"server": "", "credentials": {"existingSecret": ""}}}
SUPERVISOR: dict[str, Any] = {
    "vsphere": {
        "source": "supervisor",
        "server": "",
        "credentials": {"existingSecret": ""},
        "supervisor": {"existingSecret": "supervisor-token", "namespace": "tenant-a"},
    }
}
NODE_LABEL: dict[str, Any] = {"vsphere": {"source": "node-label", "server": "", "credentials": {"existingSecret": ""}}}

VALUE_SETS = {"required-only": {}, "non-default": NON_DEFAULT, "supervisor": SUPERVISOR, "node-label": NODE_LABEL}

CLUSTER_SCOPED = {"ClusterRole", "ClusterRoleBinding", "ValidatingAdmissionPolicy", "ValidatingAdmissionPolicyBinding"}


# --- helpers -----------------------------------------------------------------------------------


def merged(*layers: dict[str, Any]) -> dict[str, Any]:
    """Deep-merges value layers, later ones winning, as `helm -f a -f b` does."""
    result: dict[str, Any] = {}
    for layer in layers:
        for key, value in layer.items():
            if isinstance(value, dict) and isinstance(result.get(key), dict):
                result[key] = merged(result[key], value)
            else:
                result[key] = copy.deepcopy(value)
    return result


def values(*overrides: dict[str, Any]) -> dict[str, Any]:
    return merged(REQUIRED, *overrides)


def render(
    overrides: dict[str, Any] | None = None,
    *,
    release: str = RELEASE,
    api_versions: tuple[str, ...] = CURRENT_API_VERSIONS,
) -> dict[str, str]:
    """Renders the chart like `helm template --api-versions …` and returns template path → text.

    helm-python-sdk 0.2.2's Chart.render does not pass on the render options its C library
    accepts, among them api_versions (what `helm template --api-versions` adds to Helm's
    built-in list, which names API groups but no kinds), so the library's render call is made
    directly, with the same errors.
    """
    options = {"name": release, "namespace": NAMESPACE, "is_install": True, "api_versions": list(api_versions)}
    with helm.Chart.load(CHART) as chart:
        rendered = helm_native.call_string("helm_render", chart._raw(), json.dumps(values(overrides or {})), json.dumps(options))
    return json.loads(rendered)


def objects(overrides: dict[str, Any] | None = None, **kwargs: Any) -> list[dict[str, Any]]:
    documents = []
    for path, text in render(overrides, **kwargs).items():
        if path.endswith("NOTES.txt"):
            continue
        documents.extend(doc for doc in yaml.safe_load_all(text) if doc)
    return documents


def notes(overrides: dict[str, Any] | None = None, **kwargs: Any) -> str:
    return render(overrides, **kwargs)["vsphere-descheduler/templates/NOTES.txt"]


def only(documents: list[dict[str, Any]], kind: str) -> dict[str, Any]:
    found = [doc for doc in documents if doc["kind"] == kind]
    assert len(found) == 1, f"expected one {kind}, found {len(found)}"
    return found[0]


def pod_spec(documents: list[dict[str, Any]]) -> dict[str, Any]:
    return only(documents, "CronJob")["spec"]["jobTemplate"]["spec"]["template"]["spec"]


def container(documents: list[dict[str, Any]]) -> dict[str, Any]:
    (single,) = pod_spec(documents)["containers"]
    return single


def flag(args: list[str], name: str) -> str | None:
    """The value of `--name=value` in args, or None."""
    values_found = [arg.split("=", 1)[1] for arg in args if arg.startswith(f"--{name}=")]
    assert len(values_found) <= 1, f"--{name} given {len(values_found)} times"
    return values_found[0] if values_found else None


def mount_path(documents: list[dict[str, Any]], volume: str) -> str:
    (mount,) = [m for m in container(documents)["volumeMounts"] if m["name"] == volume]
    return mount["mountPath"]


def volume(documents: list[dict[str, Any]], name: str) -> dict[str, Any]:
    (found,) = [v for v in pod_spec(documents)["volumes"] if v["name"] == name]
    return found


def policy_text(documents: list[dict[str, Any]]) -> str:
    (policy,) = [doc for doc in documents if doc["kind"] == "ConfigMap" and doc["metadata"]["name"] == f"{FULLNAME}-policy"]
    return policy["data"]["policy.yaml"]


def schedule_interval_seconds(schedule: str) -> int:
    """The interval of a `*/N * * * *` schedule; other shapes are not used in these tests."""
    match = re.fullmatch(r"\*/(\d+) \* \* \* \*", schedule)
    assert match, f"unexpected schedule shape {schedule!r}"
    return int(match.group(1)) * 60


def rbac_rules(rules: list[dict[str, Any]]) -> set[tuple[str, str, str, tuple[str, ...]]]:
    """Flattens rules to (apiGroup, resource, verb, resourceNames) so that grouping does not matter."""
    flat = set()
    for rule in rules:
        for group in rule.get("apiGroups", []):
            for resource in rule.get("resources", []):
                for verb in rule.get("verbs", []):
                    flat.add((group, resource, verb, tuple(sorted(rule.get("resourceNames", [])))))
    return flat


def write_policy(tmp_path: Path, text: str, name: str = "policy.yaml") -> Path:
    path = tmp_path / name
    path.write_text(text)
    return path


# --- the binary --------------------------------------------------------------------------------


@pytest.fixture(scope="session")
def binary() -> Path:
    """The vsphere-descheduler binary: VSPHERE_DESCHEDULER_BIN, else target/release.

    Outside CI a missing default binary is built with cargo; in CI it is a failure,
    since CI builds it first and a missing one means the pipeline is broken.
    """
    configured = os.environ.get("VSPHERE_DESCHEDULER_BIN")
    path = Path(configured or "target/release/vsphere-descheduler")
    if not path.is_absolute():
        path = REPO / path
    if path.is_file():
        return path
    if CI or configured:
        pytest.fail(
            f"vsphere-descheduler binary not found at {path}: run `cargo build --release` "
            "or point VSPHERE_DESCHEDULER_BIN at the binary"
        )
    cargo = shutil.which("cargo")
    if cargo is None:
        pytest.fail(f"{path} is missing and cargo is not on PATH to build it")
    subprocess.run([cargo, "build", "--release", "--locked", "--bin", "vsphere-descheduler"], cwd=REPO, check=True)
    target = Path(os.environ.get("CARGO_TARGET_DIR", REPO / "target"))
    built = (target if target.is_absolute() else REPO / target) / "release" / "vsphere-descheduler"
    assert built.is_file(), f"cargo build succeeded but {built} does not exist"
    return built


def validate(binary: Path, policy: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [str(binary), "validate", str(policy)], capture_output=True, text=True, timeout=60
    )


# --- chart metadata and lint -------------------------------------------------------------------


def cargo_package_field(name: str) -> str:
    """A string field of Cargo.toml's [package] table (a regex: tomllib needs Python 3.11)."""
    package = (REPO / "Cargo.toml").read_text().split("\n[", 2)[0]
    match = re.search(rf'^{name} = "([^"]*)"$', package, re.MULTILINE)
    assert match, f"Cargo.toml's [package] has no {name}"
    return match.group(1)


def test_chart_metadata_is_helm_v3_or_later_with_the_binarys_version_and_license():
    with helm.Chart.load(CHART) as chart:
        metadata = chart.metadata
    assert metadata["apiVersion"] == "v2"
    assert metadata["name"] == "vsphere-descheduler"
    assert metadata["appVersion"] == cargo_package_field("version")
    assert metadata["annotations"]["artifacthub.io/license"] == cargo_package_field("license")
    assert metadata["kubeVersion"] == f">={OLDEST_KUBERNETES}.0-0"


@pytest.mark.parametrize("value_set", VALUE_SETS)
def test_lint_is_clean_even_in_strict_mode(value_set):
    report = helm.lint(CHART, values(VALUE_SETS[value_set]), strict=True, namespace=NAMESPACE)
    problems = [m for m in report["messages"] if m["severity"] >= 2]
    assert report["errors"] == [] and problems == [], report


def test_lint_fails_without_the_credentials_secret_name():
    report = helm.lint(CHART, {"clusterName": "prod-east", "vsphere": {"server": "vcenter.example.com"}})
    assert any("existingSecret" in error for error in report["errors"]), report


# --- every object is valid Kubernetes ----------------------------------------------------------


# Each Kubernetes version with what its API server serves.
SCHEMA_VERSIONS = {OLDEST_KUBERNETES: API_VERSIONS_WITHOUT_ADMISSION_POLICIES, NEWEST_KUBERNETES: CURRENT_API_VERSIONS}


@pytest.mark.parametrize("kubernetes", SCHEMA_VERSIONS)
@pytest.mark.parametrize("value_set", VALUE_SETS)
def test_every_rendered_object_matches_the_kubernetes_schema(value_set, kubernetes):
    documents = objects(VALUE_SETS[value_set], api_versions=SCHEMA_VERSIONS[kubernetes])
    assert documents
    for document in documents:
        if document["kind"] in CUSTOM_RESOURCES:
            document = {"apiVersion": "v1", "kind": "ConfigMap", "metadata": document["metadata"]}
        try:
            kubernetes_validate.validate(document, kubernetes, strict=True)
        except kubernetes_validate.ValidationError as error:
            pytest.fail(f"{document['kind']}/{document['metadata']['name']} on {kubernetes}: {error.message}")


def test_the_chart_renders_exactly_these_objects():
    kinds = sorted((doc["kind"], doc["metadata"]["name"]) for doc in objects())
    assert kinds == [
        ("ClusterRole", FULLNAME),
        ("ClusterRoleBinding", FULLNAME),
        ("ConfigMap", f"{FULLNAME}-policy"),
        ("CronJob", FULLNAME),
        ("Pod", f"{FULLNAME}-check"),
        ("Role", f"{FULLNAME}-lease"),
        ("RoleBinding", f"{FULLNAME}-lease"),
        ("ServiceAccount", FULLNAME),
        ("ValidatingAdmissionPolicy", FULLNAME),
        ("ValidatingAdmissionPolicyBinding", FULLNAME),
    ]
    namespaced = [doc for doc in objects() if doc["kind"] not in CLUSTER_SCOPED]
    assert {doc["metadata"]["namespace"] for doc in namespaced} == {NAMESPACE}
    assert not [doc for doc in objects() if doc["kind"] in CLUSTER_SCOPED and "namespace" in doc["metadata"]]


def test_names_stay_short_enough_for_the_jobs_the_cronjob_creates():
    release = "a-release-name-that-is-rather-long-for-a-cluster-tool"
    cronjob = only(objects(release=release), "CronJob")
    # The controller appends an 11-character suffix; Job names are limited to 63.
    assert len(cronjob["metadata"]["name"]) <= 52


# --- the CronJob -------------------------------------------------------------------------------


# --- the Helm test hook ------------------------------------------------------------------------


def check_pod(documents: list[dict[str, Any]]) -> dict[str, Any]:
    (pod,) = [doc for doc in documents if doc["kind"] == "Pod" and doc["metadata"]["name"] == f"{FULLNAME}-check"]
    return pod


@pytest.mark.parametrize("value_set", VALUE_SETS)
def test_helm_test_runs_check_with_exactly_the_cronjobs_pod(value_set):
    documents = objects(VALUE_SETS[value_set])
    pod = check_pod(documents)
    assert pod["metadata"]["annotations"]["helm.sh/hook"] == "test"
    # Kept after the test for `helm test --logs` and kubectl logs; replaced by the next test.
    assert pod["metadata"]["annotations"]["helm.sh/hook-delete-policy"] == "before-hook-creation"
    run_spec = copy.deepcopy(pod_spec(documents))
    check_spec = copy.deepcopy(pod["spec"])
    (run_container,) = run_spec["containers"]
    (check_container,) = check_spec["containers"]
    assert run_container["args"][0] == "run"
    assert check_container["args"][0] == "check"
    # A dry-run install's test passes when only going live misses something (issue 39): the
    # one argument the check has beyond the run's, right after the command.
    if "--dry-run" in run_container["args"]:
        assert check_container["args"].pop(1) == "--accept-missing-for-going-live"
    assert "--accept-missing-for-going-live" not in check_container["args"]
    run_container["args"][0] = check_container["args"][0] = "COMMAND"
    # Same service account, image, arguments, environment, volumes, security and scheduling.
    assert check_spec == run_spec
    template = only(documents, "CronJob")["spec"]["jobTemplate"]["spec"]["template"]
    assert template["metadata"]["labels"].items() <= pod["metadata"]["labels"].items()
    assert template["metadata"].get("annotations", {}).items() <= pod["metadata"]["annotations"].items()


def test_helm_test_can_be_left_out_and_the_notes_say_how_to_run_it():
    assert f"helm test {RELEASE} -n {NAMESPACE} --logs" in notes()
    assert "vCenter login" in notes()
    assert "run helm test again after dryRun=false" in notes({"dryRun": True})
    assert "run helm test again" not in notes({"dryRun": False})
    documents = objects({"helmTest": {"enabled": False}})
    assert not [doc for doc in documents if doc["kind"] == "Pod"]
    assert "helm test" not in notes({"helmTest": {"enabled": False}})


def test_cronjob_runs_every_two_minutes_one_run_at_a_time():
    spec = only(objects(), "CronJob")["spec"]
    job = spec["jobTemplate"]["spec"]
    assert spec["schedule"] == "*/2 * * * *"
    assert spec["concurrencyPolicy"] == "Forbid"
    assert spec["suspend"] is False
    assert "timeZone" not in spec and "startingDeadlineSeconds" not in spec
    assert job["template"]["spec"]["restartPolicy"] == "Never"
    assert job["backoffLimit"] == 0
    assert "ttlSecondsAfterFinished" not in job


@pytest.mark.parametrize("value_set", VALUE_SETS)
def test_history_is_bounded_and_a_run_ends_before_the_next_is_due(value_set):
    spec = only(objects(VALUE_SETS[value_set]), "CronJob")["spec"]
    assert 1 <= spec["successfulJobsHistoryLimit"] <= 10
    assert 1 <= spec["failedJobsHistoryLimit"] <= 10
    deadline = spec["jobTemplate"]["spec"]["activeDeadlineSeconds"]
    assert 0 < deadline < schedule_interval_seconds(spec["schedule"])


@pytest.mark.parametrize("value_set", VALUE_SETS)
def test_the_run_reports_before_the_job_deadline_stops_it(value_set):
    values = VALUE_SETS[value_set]
    job = only(objects(values), "CronJob")["spec"]["jobTemplate"]["spec"]
    deadline = flag(container(objects(values))["args"], "deadline")
    margin = values.get("deadlineMarginSeconds", 20)
    assert deadline == f"{job['activeDeadlineSeconds'] - margin}s"


def test_non_default_schedule_settings_reach_the_cronjob():
    spec = only(objects(NON_DEFAULT), "CronJob")["spec"]
    job = spec["jobTemplate"]["spec"]
    assert spec["schedule"] == "*/5 * * * *"
    assert spec["timeZone"] == "Europe/Berlin"
    assert spec["suspend"] is True
    assert spec["startingDeadlineSeconds"] == 60
    assert (spec["successfulJobsHistoryLimit"], spec["failedJobsHistoryLimit"]) == (5, 2)
    assert (job["activeDeadlineSeconds"], job["backoffLimit"], job["ttlSecondsAfterFinished"]) == (240, 1, 86400)


def test_zero_starting_deadline_is_kept_not_dropped_as_empty():
    spec = only(objects({"startingDeadlineSeconds": 0}), "CronJob")["spec"]
    assert spec["startingDeadlineSeconds"] == 0


def test_default_run_arguments():
    documents = objects()
    args = container(documents)["args"]
    assert args[0] == "run"
    assert "--dry-run" not in args
    assert flag(args, "output") == "json"
    assert flag(args, "log-format") == "json"
    assert flag(args, "cluster-name") == "prod-east"
    assert flag(args, "vsphere-server") == "vcenter.example.com"
    assert flag(args, "vsphere-ca-file") is None
    # --policy names the key of the mounted ConfigMap the chart renders.
    assert flag(args, "policy") == mount_path(documents, "policy") + "/policy.yaml"
    assert volume(documents, "policy")["configMap"]["name"] == only(documents, "ConfigMap")["metadata"]["name"]
    assert container(documents)["image"] == "vsphere-descheduler:0.1.0"


def test_non_default_run_arguments_and_pod_settings():
    documents = objects(NON_DEFAULT)
    pod = pod_spec(documents)
    main = container(documents)
    args = main["args"]
    assert "--dry-run" in args
    assert flag(args, "output") == "text"
    assert flag(args, "log-format") == "plain"
    assert args[-1] == "--some-future-flag=1", "extraArgs come last, so they can override"
    assert main["image"] == "registry.example.com/platform/vsphere-descheduler:0.1.0-rc.1"
    assert main["imagePullPolicy"] == "Always"
    assert main["resources"] == NON_DEFAULT["resources"]
    assert pod["imagePullSecrets"] == [{"name": "regcred"}]
    assert pod["tolerations"] == NON_DEFAULT["tolerations"]
    assert pod["nodeSelector"] == NON_DEFAULT["nodeSelector"]
    assert pod["affinity"] == NON_DEFAULT["affinity"]
    assert pod["priorityClassName"] == "system-cluster-critical"
    env = {e["name"]: e for e in main["env"]}
    assert env["RUST_LOG"]["value"] == "vsphere_descheduler=debug"
    assert env["HTTPS_PROXY"]["value"] == "http://proxy.example.com:3128"
    template = only(documents, "CronJob")["spec"]["jobTemplate"]["spec"]["template"]
    assert template["metadata"]["labels"]["team"] == "platform"
    assert template["metadata"]["annotations"] == {"example.com/owner": "platform"}
    assert mount_path(documents, "scratch") == "/scratch"


def test_image_by_digest_wins_over_the_tag():
    digest = "sha256:" + "ab" * 32
    main = container(objects({"image": {"tag": "0.1.0", "digest": digest}}))
    assert main["image"] == f"vsphere-descheduler@{digest}"


def test_pod_namespace_comes_from_the_downward_api():
    env = {e["name"]: e for e in container(objects())["env"]}
    assert env["POD_NAMESPACE"] == {
        "name": "POD_NAMESPACE",
        "valueFrom": {"fieldRef": {"fieldPath": "metadata.namespace"}},
    }
    assert "VSPHERE_INSECURE" not in env


def test_insecure_skip_verify_is_an_environment_switch_and_a_warning():
    env = {e["name"]: e for e in container(objects({"vsphere": {"insecureSkipVerify": True}}))["env"]}
    assert env["VSPHERE_INSECURE"]["value"] == "true"
    assert "not verified" in notes({"vsphere": {"insecureSkipVerify": True}})


# --- security ----------------------------------------------------------------------------------


@pytest.mark.parametrize("value_set", VALUE_SETS)
def test_pod_runs_restricted(value_set):
    documents = objects(VALUE_SETS[value_set])
    pod = pod_spec(documents)["securityContext"]
    assert pod["runAsNonRoot"] is True
    assert pod["runAsUser"] == 65532
    assert pod["seccompProfile"] == {"type": "RuntimeDefault"}
    main = container(documents)["securityContext"]
    assert main["readOnlyRootFilesystem"] is True
    assert main["allowPrivilegeEscalation"] is False
    assert main["capabilities"] == {"drop": ["ALL"]}
    assert main.get("privileged", False) is False
    assert main.get("runAsUser", 65532) == 65532


def test_credentials_come_from_an_existing_secret_mounted_as_files():
    documents = objects(NON_DEFAULT)
    assert not [doc for doc in documents if doc["kind"] == "Secret"], "the chart must never create the Secret"
    secret = volume(documents, "credentials")["secret"]
    assert secret["secretName"] == "vcenter-login"
    assert secret["items"] == [{"key": "user", "path": "username"}, {"key": "pass", "path": "password"}]
    assert secret["defaultMode"] == 0o440
    assert flag(container(documents)["args"], "vsphere-credentials-dir") == mount_path(documents, "credentials")
    mount = [m for m in container(documents)["volumeMounts"] if m["name"] == "credentials"]
    assert mount[0]["readOnly"] is True


@pytest.mark.parametrize("value_set", VALUE_SETS)
def test_no_password_in_any_configmap_or_environment(value_set):
    documents = objects(VALUE_SETS[value_set])
    for configmap in (doc for doc in documents if doc["kind"] == "ConfigMap"):
        for key, text in configmap.get("data", {}).items():
            assert not re.search("password|username", key + text, re.IGNORECASE), (
                f"ConfigMap {configmap['metadata']['name']} key {key} mentions credentials"
            )
    for variable in container(documents)["env"]:
        if variable["name"] in ("VSPHERE_USERNAME", "VSPHERE_PASSWORD"):
            assert "value" not in variable, f"{variable['name']} is a literal"


def test_credentials_may_come_from_extra_env_instead():
    secret_ref = {"secretKeyRef": {"name": "vault-synced", "key": "password"}}
    user_ref = {"secretKeyRef": {"name": "vault-synced", "key": "username"}}
    documents = objects(
        {
            "vsphere": {"credentials": {"enabled": False, "existingSecret": ""}},
            "extraEnv": [
                {"name": "VSPHERE_USERNAME", "valueFrom": user_ref},
                {"name": "VSPHERE_PASSWORD", "valueFrom": secret_ref},
            ],
        }
    )
    assert flag(container(documents)["args"], "vsphere-credentials-dir") is None
    assert "credentials" not in {v["name"] for v in pod_spec(documents)["volumes"]}


@pytest.mark.parametrize(
    ("ca_source", "volume_kind", "name_field"),
    [("configMap", "configMap", "name"), ("secret", "secret", "secretName")],
)
def test_ca_bundle_is_mounted_and_passed_to_the_binary(ca_source, volume_kind, name_field):
    documents = objects({"vsphere": {"caBundle": {ca_source: "vcenter-ca", "key": "root.pem"}}})
    source = volume(documents, "ca-bundle")[volume_kind]
    assert source[name_field] == "vcenter-ca"
    assert source["items"] == [{"key": "root.pem", "path": "ca.pem"}]
    assert flag(container(documents)["args"], "vsphere-ca-file") == mount_path(documents, "ca-bundle") + "/ca.pem"


# --- the topology source -----------------------------------------------------------------------

SOURCES = {"vcenter": {}, "supervisor": SUPERVISOR, "node-label": NODE_LABEL}
SUPERVISOR_DIR = "/etc/vsphere-descheduler/supervisor"


def volume_names(documents: list[dict[str, Any]]) -> set[str]:
    return {v["name"] for v in pod_spec(documents)["volumes"]}


def test_source_vcenter_mounts_the_vcenter_secret_and_nothing_of_the_supervisors():
    documents = objects(SOURCES["vcenter"])
    args = container(documents)["args"]
    assert flag(args, "vsphere-credentials-dir") == mount_path(documents, "credentials")
    assert flag(args, "vsphere-server") == "vcenter.example.com"
    assert flag(args, "supervisor-credentials-dir") is None
    assert "supervisor-credentials" not in volume_names(documents)


@pytest.mark.parametrize("where", ["CronJob", "helm test Pod"])
def test_source_supervisor_mounts_the_supervisor_secret_read_only_and_passes_its_directory(where):
    documents = objects(SUPERVISOR)
    spec = pod_spec(documents) if where == "CronJob" else check_pod(documents)["spec"]
    (main,) = spec["containers"]
    (secret_volume,) = [v for v in spec["volumes"] if v["name"] == "supervisor-credentials"]
    # Whole: the Secret's keys are the directory's file names, namespace among them when present.
    assert secret_volume["secret"] == {"secretName": "supervisor-token", "defaultMode": 0o440}
    (mount,) = [m for m in main["volumeMounts"] if m["name"] == "supervisor-credentials"]
    assert mount == {"name": "supervisor-credentials", "mountPath": SUPERVISOR_DIR, "readOnly": True}
    assert flag(main["args"], "supervisor-credentials-dir") == SUPERVISOR_DIR
    assert "credentials" not in {v["name"] for v in spec["volumes"]}
    assert flag(main["args"], "vsphere-credentials-dir") is None
    assert flag(main["args"], "vsphere-server") is None
    assert not [doc for doc in documents if doc["kind"] == "Secret"], "the chart must never create the Secret"


def test_source_node_label_mounts_no_credentials_and_passes_no_vsphere_flag():
    documents = objects(NODE_LABEL)
    args = container(documents)["args"]
    assert volume_names(documents) == {"policy"}
    assert not [arg for arg in args if arg.startswith(("--vsphere-", "--supervisor-"))], args


@pytest.mark.parametrize("source", SOURCES)
def test_the_source_reaches_the_run_through_the_policy_only(source):
    main = container(objects(SOURCES[source]))
    assert not [arg for arg in main["args"] if "topology-source" in arg or arg == source]
    assert not [e for e in main["env"] if e["name"] == "VSPHERE_DESCHEDULER_TOPOLOGY_SOURCE"]


def test_a_release_upgraded_with_reuse_values_from_a_chart_without_sources_stays_vcenter():
    # `helm upgrade --reuse-values` takes the old chart's values as the defaults, so the source's
    # keys are absent, as a null deletes them here.
    without_sources = {"vsphere": {"source": None, "supervisor": None, "nodeLabel": None}}
    assert render(without_sources) == render()


def test_source_vcenter_leaves_the_policy_as_it_was_before_sources_existed():
    rendered = yaml.safe_load(policy_text(objects()))
    assert not {"source", "supervisor", "nodeLabel"} & rendered["vsphere"].keys()


@pytest.mark.parametrize(
    ("overrides", "written"),
    [
        (SUPERVISOR, {"source": "supervisor", "supervisor": {"namespace": "tenant-a"}}),
        (merged(SUPERVISOR, {"vsphere": {"supervisor": {"namespace": ""}}}), {"source": "supervisor"}),
        (NODE_LABEL, {"source": "node-label"}),
        (
            merged(NODE_LABEL, {"vsphere": {"nodeLabel": {"key": "example.com/esxi-host"}}}),
            {"source": "node-label", "nodeLabel": {"key": "example.com/esxi-host"}},
        ),
    ],
    ids=["supervisor-with-namespace", "supervisor-namespace-from-the-secret", "node-label", "node-label-with-key"],
)
def test_the_sources_values_are_written_into_an_object_policy(overrides, written):
    rendered = yaml.safe_load(policy_text(objects(overrides)))
    default = yaml.safe_load(policy_text(objects()))
    vsphere = rendered["vsphere"]
    assert {key: vsphere[key] for key in ("source", "supervisor", "nodeLabel") if key in vsphere} == written
    # Nothing else of the policy moves, and no vCenter address is written.
    assert "server" not in vsphere
    assert site_independent(rendered) == merged(site_independent(default), {"vsphere": written})


def test_an_object_policy_may_name_the_source_the_values_name():
    documents = objects(merged(SUPERVISOR, {"policy": {"vsphere": {"source": "supervisor"}}}))
    assert yaml.safe_load(policy_text(documents))["vsphere"]["source"] == "supervisor"
    assert flag(container(documents)["args"], "supervisor-credentials-dir") == SUPERVISOR_DIR


SUPERVISOR_POLICY = """\
apiVersion: vsphere-descheduler.io/v1alpha1
kind: DeschedulerPolicy
clusterName: prod-east
# The hosts come from the Supervisor: no vCenter here.
vsphere:
  source: supervisor
  supervisor:
    namespace: tenant-a
profiles:
  - name: host-availability
    pluginConfig:
      - name: RemovePodsViolatingInterPodAntiAffinity
    plugins:
      deschedule:
        enabled: [RemovePodsViolatingInterPodAntiAffinity]
"""


def test_a_string_policy_names_its_source_itself_and_the_chart_mounts_that_sources_secret(binary, tmp_path):
    overrides = merged(SUPERVISOR, {"policy": SUPERVISOR_POLICY, "clusterName": "", "vsphere": {"supervisor": {"namespace": ""}}})
    documents = objects(overrides)
    assert policy_text(documents) == SUPERVISOR_POLICY, "mounted as written, comments too"
    assert flag(container(documents)["args"], "supervisor-credentials-dir") == SUPERVISOR_DIR
    result = validate(binary, write_policy(tmp_path, policy_text(documents)))
    assert result.returncode == 0, result.stdout + result.stderr


def test_the_supervisor_secret_and_not_the_vcenter_one_is_required_with_source_supervisor():
    with pytest.raises(helm.HelmRenderError) as raised:
        render(merged(WITHOUT_VCENTER, {"vsphere": {"source": "supervisor"}}))
    assert "vsphere.supervisor.existingSecret is required with vsphere.source supervisor" in str(raised.value)
    assert "docs/vks.md" in str(raised.value)
    # The vCenter Secret's schema requirement applies to source vcenter only.
    report = helm.lint(CHART, values(SUPERVISOR), strict=True, namespace=NAMESPACE)
    assert report["errors"] == [], report


@pytest.mark.parametrize("source", SOURCES)
def test_the_values_schema_accepts_each_source(source):
    assert helm.lint(CHART, values(SOURCES[source]), namespace=NAMESPACE)["errors"] == []


# --- RBAC --------------------------------------------------------------------------------------

API_CALLS = REPO / "src" / "kube" / "api_calls.txt"


def api_calls() -> list[tuple[str, str, str, str]]:
    """The calls the code makes (src/kube/api_calls.txt): (group, resource, verb, grant)."""
    calls = []
    for line in API_CALLS.read_text().splitlines():
        line = line.strip()
        if not line or line.startswith("#"):
            continue
        group, resource, verb, grant = line.split()
        calls.append(("" if group == "core" else group, resource, verb, grant))
    return calls


def expected_rules(role_kind: str) -> set[tuple[str, str, str, tuple[str, ...]]]:
    """The rules of `role_kind` that the call list asks for, flattened as rbac_rules does."""
    rules = set()
    for group, resource, verb, grant in api_calls():
        kind, _, name = grant.partition("/")
        if kind == role_kind:
            rules.add((group, resource, verb, (name,) if name else ()))
    return rules


def test_the_call_list_names_each_call_once_and_every_grant_is_a_role_a_cluster_role_or_everyones():
    calls = api_calls()
    assert calls, "the call list is empty"
    assert len({call[:3] for call in calls}) == len(calls)
    assert {grant.partition("/")[0] for *_, grant in calls} == {"ClusterRole", "Role", "Everyone"}


@pytest.mark.parametrize("value_set", VALUE_SETS)
def test_what_kubernetes_grants_everyone_gets_no_rule_of_the_chart(value_set):
    everyones = {(group, resource, verb) for group, resource, verb, grant in api_calls() if grant == "Everyone"}
    # check's SelfSubjectAccessReviews: system:basic-user grants them to every authenticated user.
    assert everyones == {("authorization.k8s.io", "selfsubjectaccessreviews", "create")}
    for document in objects(VALUE_SETS[value_set]):
        for group, resource, verb, _names in rbac_rules(document.get("rules", [])):
            assert (group, resource, verb) not in everyones, document["metadata"]["name"]


def test_cluster_role_grants_exactly_what_a_run_calls():
    assert rbac_rules(only(objects(), "ClusterRole")["rules"]) == expected_rules("ClusterRole")


@pytest.mark.parametrize("source", ["supervisor", "node-label"])
def test_the_guest_clusters_rbac_is_the_same_whatever_the_source(source):
    # What the Supervisor grants lives on the Supervisor (docs/vks.md), not in this cluster's RBAC.
    for kind in ("ClusterRole", "Role"):
        assert only(objects(SOURCES[source]), kind)["rules"] == only(objects(), kind)["rules"]


def test_lease_role_grants_only_the_lock_in_the_release_namespace():
    documents = objects()
    role = only(documents, "Role")
    assert role["metadata"]["namespace"] == NAMESPACE
    # Read and renew only the lock by name; create any Lease here (see role.yaml for why).
    assert rbac_rules(role["rules"]) == expected_rules("Role")
    # The lock namespace is POD_NAMESPACE, the pod's own: the CronJob's namespace.
    assert only(documents, "CronJob")["metadata"]["namespace"] == NAMESPACE


@pytest.mark.parametrize("value_set", VALUE_SETS)
def test_no_wildcard_anywhere_in_rbac(value_set):
    for document in objects(VALUE_SETS[value_set]):
        for rule in document.get("rules", []):
            for field in ("apiGroups", "resources", "verbs", "resourceNames", "nonResourceURLs"):
                assert not any("*" in item for item in rule.get(field, [])), (document["kind"], rule)


@pytest.mark.parametrize("value_set", VALUE_SETS)
def test_bindings_tie_the_roles_to_the_pods_service_account(value_set):
    documents = objects(VALUE_SETS[value_set])
    account = pod_spec(documents)["serviceAccountName"]
    assert only(documents, "ServiceAccount")["metadata"]["name"] == account
    for binding_kind, role_kind in (("ClusterRoleBinding", "ClusterRole"), ("RoleBinding", "Role")):
        binding = only(documents, binding_kind)
        assert binding["roleRef"] == {
            "apiGroup": "rbac.authorization.k8s.io",
            "kind": role_kind,
            "name": only(documents, role_kind)["metadata"]["name"],
        }
        assert binding["subjects"] == [{"kind": "ServiceAccount", "name": account, "namespace": NAMESPACE}]


RBAC_FIXTURE = REPO / "tests" / "fixtures" / "rbac" / "chart.yaml"
RBAC_KINDS = ("ClusterRole", "ClusterRoleBinding", "Role", "RoleBinding")
REGENERATE_RBAC_FIXTURE = ".venv/bin/python scripts/rbac-fixture.py"


def rbac_fixture_text() -> str:
    """The chart's RBAC as the Rust tests' fake API server enforces it (tests/fixtures/rbac/chart.yaml).

    Rendered with the required values only (every other value its default), release RELEASE in
    NAMESPACE: the ClusterRole, Role and their bindings, in that order, keys sorted. Labels are
    left out: they do not take part in authorization and carry the chart's version, which would
    make every release a fixture change.
    """
    documents = []
    for kind in RBAC_KINDS:
        for document in sorted((d for d in objects() if d["kind"] == kind), key=lambda d: d["metadata"]["name"]):
            document = copy.deepcopy(document)
            document["metadata"].pop("labels", None)
            documents.append(document)
    header = (
        "# The chart's RBAC, rendered with default values as release vsd in kube-system (labels left out).\n"
        "# The fake API server of the Rust tests grants exactly this (tests/support/fake_apiserver/\n"
        "# authorization.rs); tests/chart/test_chart.py fails when it differs from a fresh render.\n"
        f"# Generated by scripts/rbac-fixture.py: do not edit, run {REGENERATE_RBAC_FIXTURE}.\n"
    )
    return header + "---\n".join(yaml.safe_dump(document, sort_keys=True) for document in documents)


def test_the_rbac_the_fake_api_server_enforces_is_the_charts_rendered_rbac():
    assert RBAC_FIXTURE.read_text() == rbac_fixture_text(), (
        f"{RBAC_FIXTURE.relative_to(REPO)} differs from the chart's rendered RBAC: regenerate it with "
        f"{REGENERATE_RBAC_FIXTURE} (the Rust tests then run under the new grants)"
    )


def test_custom_service_account_name():
    documents = objects(NON_DEFAULT)
    assert pod_spec(documents)["serviceAccountName"] == "descheduler-runner"
    assert only(documents, "ServiceAccount")["metadata"]["annotations"] == {"team": "platform"}


def test_an_existing_service_account_and_rbac_can_be_brought_along():
    documents = objects({"serviceAccount": {"create": False, "name": "prepared"}, "rbac": {"create": False}})
    # The admission policy stays: it confines whatever the account brought along may do.
    assert sorted(doc["kind"] for doc in documents) == [
        "ConfigMap",
        "CronJob",
        "Pod",
        "ValidatingAdmissionPolicy",
        "ValidatingAdmissionPolicyBinding",
    ]
    assert pod_spec(documents)["serviceAccountName"] == "prepared"


# --- the policy --------------------------------------------------------------------------------


def site_independent(policy: dict[str, Any]) -> dict[str, Any]:
    """A policy without what differs between sites (cluster name, vCenter, cluster filter)."""
    policy = copy.deepcopy(policy)
    policy.pop("clusterName", None)
    for key in ("server", "clusters", "insecureSkipVerify", "caFile"):
        policy.get("vsphere", {}).pop(key, None)
    return policy


def test_default_policy_is_the_host_anti_affinity_example():
    rendered = yaml.safe_load(policy_text(objects()))
    example = yaml.safe_load(DEFAULT_POLICY_FILE.read_text())
    assert site_independent(rendered) == site_independent(example)
    assert rendered["clusterName"] == "prod-east"
    assert rendered["vsphere"]["server"] == "vcenter.example.com"
    assert rendered["vsphere"]["clusters"] == []


@pytest.mark.parametrize("value_set", VALUE_SETS)
def test_rendered_policy_passes_the_binarys_validate(value_set, binary, tmp_path):
    policy = write_policy(tmp_path, policy_text(objects(VALUE_SETS[value_set])))
    result = validate(binary, policy)
    assert result.returncode == 0, result.stdout + result.stderr


def test_policy_given_as_a_string_is_mounted_as_written(binary, tmp_path):
    text = DEFAULT_POLICY_FILE.read_text()
    documents = objects({"policy": text, "clusterName": "prod-east", "vsphere": {"server": ""}})
    assert policy_text(documents) == text, "comments and layout survive"
    assert flag(container(documents)["args"], "cluster-name") == "prod-east"
    assert flag(container(documents)["args"], "vsphere-server") is None, "the policy names the server"
    result = validate(binary, write_policy(tmp_path, policy_text(documents)))
    assert result.returncode == 0, result.stdout + result.stderr


def test_a_policy_the_binary_rejects_fails_this_check(binary, tmp_path):
    # The chart cannot know every policy rule; this is what the validate test above guards.
    documents = objects({"policy": {"maxNoOfPodsToEvictTotal": "five"}})
    result = validate(binary, write_policy(tmp_path, policy_text(documents)))
    assert result.returncode == 1, result.stdout + result.stderr


def test_an_upstream_format_policy_renders_once_the_merged_defaults_are_dropped(binary, tmp_path):
    # maxNoOfPodsToEvictPerNode is in no default: Helm keeps that null, and the chart drops it.
    upstream = {"apiVersion": "descheduler/v1alpha2", "vsphere": None, "maxNoOfPodsToEvictPerNode": None}
    text = policy_text(objects({"policy": upstream}))
    rendered = yaml.safe_load(text)
    assert rendered["apiVersion"] == "descheduler/v1alpha2"
    assert not {"vsphere", "clusterName", "maxNoOfPodsToEvictPerNode"} & rendered.keys()
    assert flag(container(objects({"policy": upstream}))["args"], "cluster-name") == "prod-east"
    result = validate(binary, write_policy(tmp_path, text))
    assert result.returncode == 0, result.stdout + result.stderr


# `validate --values FILE` reads a values file's policy as the chart renders it (issue 39): the
# same verdict and the same problems as `validate` of the rendered policy.yaml.
VALUES_FILES = {
    "defaults": {},
    "object-override": {"policy": {"maxNoOfPodsToEvictTotal": 3, "vsphere": {"clusters": ["wcp-1"]}}},
    "object-invalid": {"policy": {"maxNoOfPodsToEvictTotal": "five"}},
    "string": {"policy": DEFAULT_POLICY_FILE.read_text(), "vsphere": {"server": ""}},
    "upstream-object": {"policy": {"apiVersion": "descheduler/v1alpha2", "vsphere": None, "maxNoOfPodsToEvictPerNode": None}},
}


def validate_json(binary: Path, *args: str) -> list[dict[str, Any]]:
    result = subprocess.run(
        [str(binary), "--output", "json", "validate", *args], capture_output=True, text=True, timeout=60
    )
    assert result.returncode in (0, 1), result.stderr
    return json.loads(result.stdout)


@pytest.mark.parametrize("case", VALUES_FILES)
def test_validate_values_judges_the_policy_the_chart_renders(case, binary, tmp_path):
    overrides = VALUES_FILES[case]
    values_file = tmp_path / "values.yaml"
    values_file.write_text(yaml.safe_dump(values(overrides)))
    rendered = write_policy(tmp_path, policy_text(objects(overrides)))
    (from_values,) = validate_json(binary, "--values", str(values_file))
    (from_rendered,) = validate_json(binary, str(rendered))
    assert from_values["valid"] == from_rendered["valid"], (from_values, from_rendered)
    what = lambda result: [(f["rule"], f["path"], f["message"]) for f in result["findings"]]
    assert what(from_values) == what(from_rendered)
    assert from_values["valid"] == (case != "object-invalid")


# --- values the chart refuses ------------------------------------------------------------------

# (id, overrides, error type, fragment of the message). HelmValuesError: values.schema.json;
# HelmRenderError: a check in templates/_helpers.tpl.
REJECTED = [
    ("schedule-not-a-string", {"schedule": 5}, helm.HelmValuesError, "/schedule"),
    ("schedule-with-tz-prefix", {"schedule": "TZ=UTC */2 * * * *"}, helm.HelmValuesError, "/schedule"),
    ("schedule-with-four-fields", {"schedule": "*/2 * * *"}, helm.HelmValuesError, "/schedule"),
    ("dry-run-not-a-boolean", {"dryRun": "yes"}, helm.HelmValuesError, "/dryRun"),
    ("unknown-output", {"output": "yaml"}, helm.HelmValuesError, "/output"),
    ("unknown-log-format", {"logFormat": "logfmt"}, helm.HelmValuesError, "/logFormat"),
    ("misspelt-top-level-value", {"dryrun": True}, helm.HelmValuesError, "dryrun"),
    ("secret-name-missing", {"vsphere": {"credentials": {"existingSecret": ""}}}, helm.HelmValuesError, "existingSecret"),
    ("secret-name-invalid", {"vsphere": {"credentials": {"existingSecret": "Bad_Name"}}}, helm.HelmValuesError, "existingSecret"),
    ("cluster-name-not-a-dns-label", {"clusterName": "Prod_East"}, helm.HelmValuesError, "/clusterName"),
    ("server-with-credentials", {"vsphere": {"server": "admin@vcenter"}}, helm.HelmValuesError, "/vsphere/server"),
    ("time-zone-with-space", {"timeZone": "Europe/ Berlin"}, helm.HelmValuesError, "/timeZone"),
    ("deadline-as-string", {"activeDeadlineSeconds": "110"}, helm.HelmValuesError, "/activeDeadlineSeconds"),
    ("deadline-zero", {"activeDeadlineSeconds": 0}, helm.HelmValuesError, "/activeDeadlineSeconds"),
    ("negative-history", {"failedJobsHistoryLimit": -1}, helm.HelmValuesError, "/failedJobsHistoryLimit"),
    ("unknown-pull-policy", {"image": {"pullPolicy": "Sometimes"}}, helm.HelmValuesError, "/image/pullPolicy"),
    ("pull-secret-as-string", {"imagePullSecrets": ["regcred"]}, helm.HelmValuesError, "/imagePullSecrets"),
    ("bad-digest", {"image": {"digest": "latest"}}, helm.HelmValuesError, "/image/digest"),
    ("policy-of-another-kind", {"policy": {"kind": "Policy"}}, helm.HelmValuesError, "/policy"),
    ("policy-not-an-object-or-string", {"policy": 3}, helm.HelmValuesError, "/policy"),
    ("suspend-not-a-boolean", {"suspend": "false"}, helm.HelmValuesError, "/suspend"),
    ("deadline-not-below-interval", {"activeDeadlineSeconds": 120}, helm.HelmRenderError, "activeDeadlineSeconds 120 must be shorter"),
    ("margin-below-release-time", {"deadlineMarginSeconds": 5}, helm.HelmValuesError, "/deadlineMarginSeconds"),
    ("no-time-left-to-run", {"activeDeadlineSeconds": 25}, helm.HelmRenderError, "activeDeadlineSeconds 25 leaves the run less than 10 s"),
    ("no-cluster-name", {"clusterName": ""}, helm.HelmRenderError, "clusterName is required"),
    (
        "rule-name-prefix-too-long",
        {"clusterName": "a" * 40},
        helm.HelmRenderError,
        "namePrefix and clusterName together may use at most 60",
    ),
    ("no-server", {"vsphere": {"server": ""}}, helm.HelmRenderError, "vsphere.server is required"),
    (
        "two-cluster-names",
        {"policy": {"clusterName": "prod-west"}},
        helm.HelmRenderError,
        'clusterName "prod-east" and the policy\'s clusterName "prod-west" differ',
    ),
    ("two-ca-sources", {"vsphere": {"caBundle": {"configMap": "a", "secret": "b"}}}, helm.HelmRenderError, "not both"),
    (
        "ca-and-insecure",
        {"vsphere": {"insecureSkipVerify": True, "caBundle": {"secret": "b"}}},
        helm.HelmRenderError,
        "exclude each other",
    ),
    (
        "password-in-the-policy",
        {"policy": {"vsphere": {"password": "hunter2"}}},
        helm.HelmRenderError,
        "credentials never go in the policy",
    ),
    (
        "literal-password-in-extra-env",
        {"extraEnv": [{"name": "VSPHERE_PASSWORD", "value": "hunter2"}]},
        helm.HelmRenderError,
        "VSPHERE_PASSWORD must come from valueFrom.secretKeyRef",
    ),
    (
        "credentials-disabled-without-a-source",
        {"vsphere": {"credentials": {"enabled": False, "existingSecret": ""}}},
        helm.HelmRenderError,
        "vsphere.credentials.enabled is false",
    ),
    (
        "upstream-policy-with-merged-vsphere-defaults",
        {"policy": {"apiVersion": "descheduler/v1alpha2"}},
        helm.HelmRenderError,
        "set policy.vsphere to null",
    ),
    (
        "upstream-policy-with-a-cluster-name",
        {"policy": {"apiVersion": "descheduler/v1alpha2", "vsphere": None, "clusterName": "prod-east"}},
        helm.HelmRenderError,
        "has no clusterName field",
    ),
    ("policy-string-not-yaml", {"policy": "profiles: [unclosed"}, helm.HelmRenderError, "not a YAML document"),
    (
        "push-url-with-credentials",
        {"metrics": {"push": {"url": "http://user:pass@pgw:9091"}}},
        helm.HelmValuesError,
        "/metrics/push/url",
    ),
    ("push-url-not-http", {"metrics": {"push": {"url": "pgw:9091"}}}, helm.HelmValuesError, "/metrics/push/url"),
    (
        "unknown-push-credentials-type",
        {"metrics": {"push": {"credentials": {"type": "digest"}}}},
        helm.HelmValuesError,
        "/metrics/push/credentials/type",
    ),
    (
        "two-push-ca-sources",
        {"metrics": {"push": {"url": "https://pgw", "caBundle": {"configMap": "a", "secret": "b"}}}},
        helm.HelmRenderError,
        "metrics.push.caBundle: set configMap or secret, not both",
    ),
    ("alerts-without-a-push", {"metrics": {"alerts": {"enabled": True}}}, helm.HelmRenderError, "set metrics.push.url"),
    (
        "alerts-without-a-run-interval",
        {"schedule": "0 * * * *", "activeDeadlineSeconds": 110, "metrics": {"push": {"url": "http://pgw:9091"}, "alerts": {"enabled": True}}},
        helm.HelmRenderError,
        "metrics.alerts.runIntervalSeconds",
    ),
    (
        "alert-duration-not-promql",
        {"metrics": {"alerts": {"failingFor": "ten minutes"}}},
        helm.HelmValuesError,
        "/metrics/alerts/failingFor",
    ),
    # The topology source.
    ("unknown-source", {"vsphere": {"source": "vcsim"}}, helm.HelmValuesError, "/vsphere/source"),
    ("source-in-another-spelling", {"vsphere": {"source": "nodeLabel"}}, helm.HelmValuesError, "/vsphere/source"),
    (
        "supervisor-namespace-not-a-dns-label",
        merged(SUPERVISOR, {"vsphere": {"supervisor": {"namespace": "Tenant_A"}}}),
        helm.HelmValuesError,
        "/vsphere/supervisor/namespace",
    ),
    (
        "supervisor-secret-name-invalid",
        merged(SUPERVISOR, {"vsphere": {"supervisor": {"existingSecret": "Bad_Name"}}}),
        helm.HelmValuesError,
        "/vsphere/supervisor/existingSecret",
    ),
    (
        "node-label-key-not-a-label-key",
        merged(NODE_LABEL, {"vsphere": {"nodeLabel": {"key": "esxi host"}}}),
        helm.HelmValuesError,
        "/vsphere/nodeLabel/key",
    ),
    (
        "misspelt-supervisor-value",
        merged(SUPERVISOR, {"vsphere": {"supervisor": {"secret": "supervisor-token"}}}),
        helm.HelmValuesError,
        "secret",
    ),
    (
        "supervisor-without-its-secret",
        merged(SUPERVISOR, {"vsphere": {"supervisor": {"existingSecret": ""}}}),
        helm.HelmRenderError,
        "vsphere.supervisor.existingSecret is required with vsphere.source supervisor",
    ),
    (
        "supervisor-with-a-vcenter-server",
        merged(SUPERVISOR, {"vsphere": {"server": "vcenter.example.com"}}),
        helm.HelmRenderError,
        "vsphere.server is unused with vsphere.source supervisor: the runs never reach vCenter",
    ),
    (
        "supervisor-with-a-policy-vcenter-server",
        merged(SUPERVISOR, {"policy": {"vsphere": {"server": "vcenter.example.com"}}}),
        helm.HelmRenderError,
        "the policy's vsphere.server is unused with vsphere.source supervisor",
    ),
    (
        "node-label-with-the-vcenter-secret",
        merged(NODE_LABEL, {"vsphere": {"credentials": {"existingSecret": "vsphere-credentials"}}}),
        helm.HelmRenderError,
        "vsphere.credentials.existingSecret is unused with vsphere.source node-label",
    ),
    (
        "supervisor-with-a-vcenter-ca",
        merged(SUPERVISOR, {"vsphere": {"caBundle": {"configMap": "vcenter-ca"}}}),
        helm.HelmRenderError,
        "vsphere.caBundle is unused with vsphere.source supervisor",
    ),
    (
        "node-label-with-insecure-vcenter",
        merged(NODE_LABEL, {"vsphere": {"insecureSkipVerify": True}}),
        helm.HelmRenderError,
        "vsphere.insecureSkipVerify is unused with vsphere.source node-label",
    ),
    (
        "vcenter-with-a-supervisor-secret",
        {"vsphere": {"supervisor": {"existingSecret": "supervisor-token"}}},
        helm.HelmRenderError,
        "vsphere.supervisor.existingSecret is unused with vsphere.source vcenter",
    ),
    (
        "node-label-with-a-supervisor-namespace",
        merged(NODE_LABEL, {"vsphere": {"supervisor": {"namespace": "tenant-a"}}}),
        helm.HelmRenderError,
        "vsphere.supervisor.namespace is unused with vsphere.source node-label",
    ),
    (
        "supervisor-with-a-node-label-key",
        merged(SUPERVISOR, {"vsphere": {"nodeLabel": {"key": "example.com/esxi-host"}}}),
        helm.HelmRenderError,
        "vsphere.nodeLabel.key is unused with vsphere.source supervisor",
    ),
    (
        "vcenter-with-a-policy-node-label-key",
        {"policy": {"vsphere": {"nodeLabel": {"key": "example.com/esxi-host"}}}},
        helm.HelmRenderError,
        "vsphere.nodeLabel.key is unused with vsphere.source vcenter",
    ),
    (
        "object-policy-naming-another-source",
        {"policy": {"vsphere": {"source": "supervisor"}}},
        helm.HelmRenderError,
        'vsphere.source "vcenter" and the policy\'s vsphere.source "supervisor" differ',
    ),
    (
        "two-supervisor-namespaces",
        merged(SUPERVISOR, {"policy": {"vsphere": {"supervisor": {"namespace": "tenant-b"}}}}),
        helm.HelmRenderError,
        'vsphere.supervisor.namespace "tenant-a" and the policy\'s vsphere.supervisor.namespace "tenant-b" differ',
    ),
    (
        "two-node-label-keys",
        merged(NODE_LABEL, {"vsphere": {"nodeLabel": {"key": "a.example.com/host"}}, "policy": {"vsphere": {"nodeLabel": {"key": "b.example.com/host"}}}}),
        helm.HelmRenderError,
        'vsphere.nodeLabel.key "a.example.com/host" and the policy\'s vsphere.nodeLabel.key "b.example.com/host" differ',
    ),
    (
        "string-policy-without-the-values-source",
        merged(SUPERVISOR, {"policy": DEFAULT_POLICY_FILE.read_text(), "vsphere": {"supervisor": {"namespace": ""}}}),
        helm.HelmRenderError,
        "vsphere.source is supervisor but the string policy's vsphere.source is vcenter",
    ),
    (
        "string-policy-naming-a-source-the-values-do-not",
        {"policy": SUPERVISOR_POLICY, "clusterName": ""},
        helm.HelmRenderError,
        "vsphere.source is vcenter but the string policy's vsphere.source is supervisor",
    ),
    (
        "string-policy-with-a-supervisor-namespace-value",
        merged(SUPERVISOR, {"policy": SUPERVISOR_POLICY, "clusterName": ""}),
        helm.HelmRenderError,
        "written into an object policy only",
    ),
    (
        "upstream-policy-with-another-source",
        merged(NODE_LABEL, {"policy": {"apiVersion": "descheduler/v1alpha2", "vsphere": None}}),
        helm.HelmRenderError,
        "vsphere.source node-label needs a policy in the vsphere-descheduler.io/v1alpha1 format",
    ),
    (
        "topology-source-in-extra-args",
        {"extraArgs": ["--topology-source=node-label"]},
        helm.HelmRenderError,
        "extraArgs: --topology-source=node-label; set vsphere.source instead",
    ),
    (
        "topology-source-in-extra-env",
        {"extraEnv": [{"name": "VSPHERE_DESCHEDULER_TOPOLOGY_SOURCE", "value": "supervisor"}]},
        helm.HelmRenderError,
        "extraEnv: VSPHERE_DESCHEDULER_TOPOLOGY_SOURCE; set vsphere.source instead",
    ),
    (
        "token-in-the-policy",
        merged(SUPERVISOR, {"policy": {"vsphere": {"supervisor": {"token": "eyJhbGciOi"}}}}),
        helm.HelmRenderError,
        "a Supervisor token never goes in the policy",
    ),
]


@pytest.mark.parametrize(("overrides", "error", "fragment"), [case[1:] for case in REJECTED], ids=[case[0] for case in REJECTED])
def test_bad_values_fail_to_render(overrides, error, fragment):
    with pytest.raises(error) as raised:
        render(overrides)
    assert fragment in str(raised.value)


# --- NOTES -------------------------------------------------------------------------------------


def test_notes_tell_how_to_read_the_last_runs_report():
    text = notes()
    assert f"kubectl -n {NAMESPACE} get jobs -l app.kubernetes.io/instance={RELEASE}" in text
    assert f"kubectl -n {NAMESPACE} logs job/$JOB" in text
    assert f"create job --from=cronjob/{FULLNAME}" in text
    assert "DRY RUN" not in text


def test_notes_say_when_runs_change_nothing():
    assert "DRY RUN" in notes({"dryRun": True})


def test_notes_for_source_vcenter_say_how_to_create_the_vcenter_secret_without_the_password_on_a_command_line():
    text = notes()
    assert "read -rsp 'vCenter password: ' VC_PASSWORD" in text
    assert f"kubectl -n {NAMESPACE} create secret generic vsphere-credentials" in text
    assert "--from-file=password=/dev/stdin" in text
    assert "Supervisor" not in text and "DRS rules need a vCenter account" not in text


def test_notes_for_source_supervisor_name_the_secret_the_recipe_and_what_helm_test_checks():
    text = notes(SUPERVISOR)
    assert f"Secret {NAMESPACE}/supervisor-token (keys server, ca.crt, token, namespace)" in text
    assert "Supervisor namespace tenant-a" in text
    assert "docs/vks.md" in text
    assert "SelfSubjectAccessReview" in text
    assert "DRS rules need a vCenter account" in text
    assert "vCenter credentials come from" not in text
    from_the_secret = merged(SUPERVISOR, {"vsphere": {"supervisor": {"namespace": ""}}})
    assert "namespace named by the Secret's namespace key" in notes(from_the_secret)
    assert "Supervisor namespace tenant-b" in notes(merged(from_the_secret, {"policy": {"vsphere": {"supervisor": {"namespace": "tenant-b"}}}}))


@pytest.mark.parametrize(
    ("overrides", "key"),
    [
        (NODE_LABEL, "node.cluster.x-k8s.io/esxi-host"),
        (merged(NODE_LABEL, {"vsphere": {"nodeLabel": {"key": "example.com/esxi-host"}}}), "example.com/esxi-host"),
        (merged(NODE_LABEL, {"policy": {"vsphere": {"nodeLabel": {"key": "example.com/esxi-host"}}}}), "example.com/esxi-host"),
    ],
    ids=["default-key", "key-from-the-values", "key-from-the-policy"],
)
def test_notes_for_source_node_label_show_the_label_the_runs_read(overrides, key):
    text = notes(overrides)
    assert f"Hosts come from the node label {key}," in text
    assert f"kubectl get nodes -L {key}\n" in text
    assert "no vSphere access is needed" in text
    assert "DRS rules need a vCenter account" in text
    assert "vCenter credentials come from" not in text and "Supervisor" not in text


@pytest.mark.parametrize("source", SOURCES)
def test_notes_never_put_a_password_or_token_on_a_command_line(source):
    text = notes(SOURCES[source])
    assert not re.search(r"--from-literal=\S*(password|token)", text, re.IGNORECASE), text


# --- metrics: the push, the dashboard, the alerts ----------------------------------------------

METRIC_FAMILIES = REPO / "src" / "metrics" / "families.txt"
DASHBOARD_FILE = CHART / "dashboards" / "vsphere-descheduler.json"
PUSH = {"metrics": {"push": {"url": "http://pushgateway.monitoring:9091"}}}
ALERTS = merged(PUSH, {"metrics": {"alerts": {"enabled": True}}})
DASHBOARD = {"metrics": {"dashboard": {"enabled": True}}}

# PromQL words that look like metric names but are not: operators, modifiers, grouping.
PROMQL_KEYWORDS = {"and", "or", "unless", "by", "without", "on", "ignoring", "group_left", "group_right", "bool", "offset", "inf", "nan"}


def metric_families() -> list[tuple[str, str]]:
    """(name, type) of each family the binary pushes (src/metrics/families.txt, the list its code
    reads)."""
    families = []
    for line in METRIC_FAMILIES.read_text().splitlines():
        line = line.strip()
        if line and not line.startswith("#"):
            name, kind = line.split()[:2]
            families.append((name, kind))
    return families


def pushed_families() -> set[str]:
    """The metric names a query can read of what the binary pushes: each family's name, and a
    histogram's _bucket, _sum and _count series."""
    names = set()
    for name, kind in metric_families():
        names.add(name)
        if kind == "histogram":
            names |= {f"{name}_bucket", f"{name}_sum", f"{name}_count"}
    return names


def metric_names(expr: str) -> set[str]:
    """The metric names a PromQL expression (or a Grafana label_values() query) reads."""
    # Grafana's label_values(metric, label): the label is not a metric.
    expr = re.sub(r"label_values\(\s*([^,()]*?)\s*,\s*\w+\s*\)", r"\1", expr)
    expr = re.sub(r'"(?:[^"\\]|\\.)*"', '""', expr)  # strings (label values, Grafana variables)
    expr = re.sub(r"\{[^}]*\}", "", expr)  # label matchers
    expr = re.sub(r"\b(by|without|on|ignoring|group_left|group_right)\s*\([^)]*\)", "", expr)  # label lists
    expr = re.sub(r"\[[^\]]*\]", "", expr)  # ranges and subqueries
    names = set()
    for match in re.finditer(r"(?<![\w.$])[A-Za-z_:][A-Za-z0-9_:]*", expr):
        if expr[match.end():].lstrip().startswith("("):
            continue  # a function
        if match.group(0) not in PROMQL_KEYWORDS:
            names.add(match.group(0))
    return names


def test_metric_names_finds_metrics_and_only_metrics():
    assert metric_names('sum by (strategy, result) (descheduler_pods_evicted_total{cluster=~"$cluster"})') == {
        "descheduler_pods_evicted_total"
    }
    assert metric_names("deriv(sum by (job) (a{x=\"1\"})[1d:10m]) > 0 and b offset 1d or absent(c)") == {"a", "b", "c"}
    assert metric_names("label_values(vsphere_descheduler_run_info, cluster)") == {"vsphere_descheduler_run_info"}
    assert metric_names("time() - max(x == bool 0)") == {"x"}


def test_metric_families_are_listed_once_each_with_type_labels_and_help():
    families = [line.split(None, 3) for line in METRIC_FAMILIES.read_text().splitlines() if line.strip() and not line.startswith("#")]
    names = [family[0] for family in families]
    assert len(names) == len(set(names))
    assert "descheduler_pods_evicted_total" in names, "upstream's name"
    for name, kind, labels, help_text in families:
        assert re.fullmatch(r"(vsphere_)?descheduler_[a-z_]+", name), name
        assert kind in ("counter", "gauge", "histogram"), f"{name}: {kind}"
        assert (kind == "counter") == name.endswith("_total"), f"{name}: counters, and only they, end in _total"
        assert labels == "-" or re.fullmatch(r"[a-z_]+(,[a-z_]+)*", labels), name
        assert help_text.strip(), name


def test_push_is_off_by_default_and_nothing_metrics_related_renders():
    documents = objects()
    args = container(documents)["args"]
    assert not [arg for arg in args if arg.startswith("--metrics-")]
    assert not {"metrics-credentials", "metrics-ca-bundle"} & {v["name"] for v in pod_spec(documents)["volumes"]}


def test_push_url_reaches_the_binary():
    args = container(objects(PUSH))["args"]
    assert flag(args, "metrics-push-url") == "http://pushgateway.monitoring:9091"
    assert flag(args, "metrics-push-credentials-dir") is None
    assert flag(args, "metrics-push-ca-file") is None


@pytest.mark.parametrize(
    ("credentials", "items"),
    [
        ({"existingSecret": "pgw-token"}, [{"key": "token", "path": "token"}]),
        (
            {"existingSecret": "pgw-login", "type": "basic", "usernameKey": "user", "passwordKey": "pass"},
            [{"key": "user", "path": "username"}, {"key": "pass", "path": "password"}],
        ),
    ],
    ids=["bearer", "basic"],
)
def test_push_credentials_come_from_an_existing_secret_mounted_as_files(credentials, items):
    documents = objects(merged(PUSH, {"metrics": {"push": {"credentials": credentials}}}))
    assert not [doc for doc in documents if doc["kind"] == "Secret"]
    secret = volume(documents, "metrics-credentials")["secret"]
    assert secret["secretName"] == credentials["existingSecret"]
    assert secret["items"] == items
    assert secret["defaultMode"] == 0o440
    args = container(documents)["args"]
    assert flag(args, "metrics-push-credentials-dir") == mount_path(documents, "metrics-credentials")


def test_push_ca_bundle_is_mounted_and_passed_to_the_binary():
    documents = objects(NON_DEFAULT)
    source = volume(documents, "metrics-ca-bundle")["secret"]
    assert source["secretName"] == "pushgateway-ca"
    assert source["items"] == [{"key": "root.pem", "path": "ca.pem"}]
    args = container(documents)["args"]
    assert flag(args, "metrics-push-ca-file") == mount_path(documents, "metrics-ca-bundle") + "/ca.pem"
    assert flag(args, "metrics-push-url") == "https://pushgateway.monitoring.svc:9091"


def test_dashboard_and_alerts_are_opt_in():
    kinds = {doc["kind"] for doc in objects(PUSH)}
    assert "PrometheusRule" not in kinds
    assert not [doc for doc in objects(PUSH) if doc["metadata"]["name"].endswith("-dashboard")]


def dashboard_configmap(overrides: dict[str, Any]) -> dict[str, Any]:
    (configmap,) = [doc for doc in objects(overrides) if doc["metadata"]["name"] == f"{FULLNAME}-dashboard"]
    return configmap


def test_dashboard_is_a_configmap_the_grafana_sidecar_picks_up():
    configmap = dashboard_configmap(DASHBOARD)
    assert configmap["kind"] == "ConfigMap"
    assert configmap["metadata"]["labels"]["grafana_dashboard"] == "1"
    assert configmap["metadata"]["namespace"] == NAMESPACE
    (key,) = configmap["data"]
    assert key.endswith(".json")
    assert json.loads(configmap["data"][key]) == json.loads(DASHBOARD_FILE.read_text())

    moved = dashboard_configmap(NON_DEFAULT)
    assert moved["metadata"]["namespace"] == "monitoring"
    assert moved["metadata"]["labels"]["team"] == "platform"
    assert moved["metadata"]["annotations"] == {"grafana_folder": "Platform"}


def dashboard_queries(dashboard: dict[str, Any]) -> list[tuple[str, str]]:
    """(where, query) of every panel target and query variable, rows' nested panels included."""
    queries = []
    panels = list(dashboard.get("panels", []))
    while panels:
        panel = panels.pop()
        panels.extend(panel.get("panels", []))
        for target in panel.get("targets", []):
            queries.append((f"panel {panel['title']!r} target {target['refId']}", target["expr"]))
    for variable in dashboard["templating"]["list"]:
        if variable["type"] == "query":
            query = variable["query"]
            queries.append((f"variable {variable['name']}", query["query"] if isinstance(query, dict) else query))
    return queries


def test_every_dashboard_query_names_only_metrics_the_binary_pushes():
    dashboard = json.loads(DASHBOARD_FILE.read_text())
    queries = dashboard_queries(dashboard)
    assert queries
    pushed = pushed_families()
    used = set()
    for where, query in queries:
        names = metric_names(query)
        assert names, f"{where} reads no metric: {query}"
        assert names <= pushed, f"{where} reads {sorted(names - pushed)}, which the binary does not push"
        used |= names
    # The panels the issues ask for: evictions by strategy, skips by reason, label and DRS rule
    # changes, run duration, failed runs; host-failure exposure after the plan; and every counter
    # counted over a window, upstream's eviction counter among them.
    assert {
        "vsphere_descheduler_run_evictions",
        "vsphere_descheduler_run_pods_skipped",
        "vsphere_descheduler_run_node_label_changes",
        "vsphere_descheduler_run_drs_rule_changes",
        "vsphere_descheduler_run_duration_seconds",
        "vsphere_descheduler_exit_code",
        "vsphere_descheduler_exposure_workloads",
        "vsphere_descheduler_exposure_node_groups",
        "descheduler_loop_duration_seconds_count",
    } <= used
    counters = {name for name, kind in metric_families() if kind == "counter"}
    assert counters <= used, f"counters no panel counts: {sorted(counters - used)}"


def test_dashboard_is_well_formed_for_grafana():
    dashboard = json.loads(DASHBOARD_FILE.read_text())
    assert dashboard["uid"] == "vsphere-descheduler" and dashboard["title"]
    assert isinstance(dashboard["schemaVersion"], int)
    ids = [panel["id"] for panel in dashboard["panels"]]
    assert len(ids) == len(set(ids)), "panel ids are unique"
    variables = {variable["name"] for variable in dashboard["templating"]["list"]}
    for panel in dashboard["panels"]:
        assert set(panel["gridPos"]) == {"x", "y", "w", "h"} and panel["gridPos"]["x"] + panel["gridPos"]["w"] <= 24
        assert panel["datasource"]["uid"] == "${datasource}"
        for target in panel["targets"]:
            for variable in re.findall(r"\$\{?(\w+)", target["expr"]):
                assert variable in variables, f"panel {panel['title']!r} uses undefined ${variable}"


def prometheus_rule(overrides: dict[str, Any]) -> dict[str, Any]:
    return only(objects(overrides), "PrometheusRule")


PROMETHEUS_DURATION = r"([0-9]+(ms|s|m|h|d|w|y))+"


@pytest.mark.parametrize("overrides", [ALERTS, NON_DEFAULT], ids=["defaults", "non-default"])
def test_prometheus_rule_has_the_operators_structure(overrides):
    rule = prometheus_rule(overrides)
    assert rule["apiVersion"] == "monitoring.coreos.com/v1"
    assert set(rule) == {"apiVersion", "kind", "metadata", "spec"}
    assert set(rule["spec"]) == {"groups"}
    names = []
    for group in rule["spec"]["groups"]:
        assert set(group) <= {"name", "interval", "rules", "limit", "partial_response_strategy"}
        assert isinstance(group["name"], str) and group["name"]
        assert group["rules"]
        for alert in group["rules"]:
            assert set(alert) <= {"alert", "record", "expr", "for", "keep_firing_for", "labels", "annotations"}
            assert re.fullmatch(r"[A-Za-z_][A-Za-z0-9_]*", alert["alert"])
            assert isinstance(alert["expr"], str) and alert["expr"].strip()
            assert re.fullmatch(PROMETHEUS_DURATION, alert["for"]), alert["for"]
            assert all(isinstance(v, str) for v in alert["labels"].values())
            assert {"summary", "description"} <= alert["annotations"].keys()
            names.append(alert["alert"])
    assert len(names) == len(set(names))


def test_alerts_watch_this_clusters_failures_successes_pdb_skips_and_exposure():
    rule = prometheus_rule(ALERTS)
    assert rule["metadata"]["namespace"] == NAMESPACE
    alerts = {alert["alert"]: alert for group in rule["spec"]["groups"] for alert in group["rules"]}
    assert set(alerts) == {
        "VsphereDeschedulerRunFailing",
        "VsphereDeschedulerNoSuccessfulRun",
        "VsphereDeschedulerPdbSkipsGrowing",
        "VsphereDeschedulerWorkloadsAtRisk",
    }
    pushed = pushed_families()
    for name, alert in alerts.items():
        expr = alert["expr"]
        assert metric_names(expr) and metric_names(expr) <= pushed, f"{name}: {expr}"
        # Every selector names this release's group, so two clusters' alerts never mix.
        for selector in re.findall(r"\{[^}]*\}", expr):
            assert 'job="vsphere-descheduler"' in selector and 'cluster="prod-east"' in selector, f"{name}: {selector}"
        assert alert["labels"]["severity"] == "warning"
    assert alerts["VsphereDeschedulerRunFailing"]["for"] == "10m"
    # Five intervals of the default */2 schedule.
    assert "[600s:" in alerts["VsphereDeschedulerNoSuccessfulRun"]["expr"]
    assert "> 600" in alerts["VsphereDeschedulerNoSuccessfulRun"]["expr"]
    assert 'reason="pdb"' in alerts["VsphereDeschedulerPdbSkipsGrowing"]["expr"]
    assert "[1d:" in alerts["VsphereDeschedulerPdbSkipsGrowing"]["expr"]
    # Only after the plan, and only the classes at risk; three intervals of the default */2.
    at_risk = alerts["VsphereDeschedulerWorkloadsAtRisk"]
    assert 'when="after"' in at_risk["expr"] and 'class!="tolerated"' in at_risk["expr"]
    assert at_risk["for"] == "360s"
    assert "{{ $value }}" in at_risk["annotations"]["description"]
    # Prometheus fills in {{ $value }}; Helm must have left it alone.
    assert "{{ $value }}" in alerts["VsphereDeschedulerRunFailing"]["annotations"]["description"]


def test_alert_settings_reach_the_rule():
    rule = prometheus_rule(NON_DEFAULT)
    assert rule["metadata"]["namespace"] == "monitoring"
    assert rule["metadata"]["labels"]["release"] == "kube-prometheus-stack"
    alerts = {alert["alert"]: alert for group in rule["spec"]["groups"] for alert in group["rules"]}
    assert alerts["VsphereDeschedulerRunFailing"]["for"] == "30m"
    assert {alert["labels"]["severity"] for alert in alerts.values()} == {"critical"}
    # Three intervals of */5, and four for the workloads at risk.
    assert "[900s:" in alerts["VsphereDeschedulerNoSuccessfulRun"]["expr"]
    assert alerts["VsphereDeschedulerWorkloadsAtRisk"]["for"] == "1200s"
    explicit = prometheus_rule(merged(ALERTS, {"schedule": "0 * * * *", "activeDeadlineSeconds": 600, "metrics": {"alerts": {"runIntervalSeconds": 3600}}}))
    alerts = {alert["alert"]: alert for group in explicit["spec"]["groups"] for alert in group["rules"]}
    assert "[18000s:" in alerts["VsphereDeschedulerNoSuccessfulRun"]["expr"]


def test_alerts_take_the_cluster_name_from_the_policy_too():
    rule = prometheus_rule(merged(ALERTS, {"clusterName": "", "policy": {"clusterName": "prod-west"}}))
    expr = rule["spec"]["groups"][0]["rules"][0]["expr"]
    assert 'cluster="prod-west"' in expr


def test_notes_say_where_the_metrics_go():
    assert "Pushgateway" not in notes()
    text = notes(merged(ALERTS, DASHBOARD))
    assert "pushes its metrics to the Pushgateway http://pushgateway.monitoring:9091" in text
    assert 'cluster="prod-east"' in text and "honor_labels: true" in text
    assert f"ConfigMap {NAMESPACE}/{FULLNAME}-dashboard" in text
    assert f"PrometheusRule {NAMESPACE}/{FULLNAME}" in text


@pytest.mark.parametrize(
    ("value", "expected"),
    [(None, False), ("", False), ("true", True), ("1", True), ("yes", True), ("0", True),
     ("false", True)],
)
def test_any_non_empty_ci_value_is_ci(value, expected):
    assert under_ci(value) is expected
