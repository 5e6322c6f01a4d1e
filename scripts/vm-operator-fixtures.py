#!/usr/bin/env python3
"""Writes the VKS guest-cluster story as a Supervisor and a guest cluster print it.

One story, rendered in every version of VM Operator's API a Supervisor serves: guest cluster
tkc-1 in Supervisor namespace team-a, one control-plane VM and four workers over three ESXi
hosts of one vSphere cluster (zone-a, domain-c10). DRS moved worker 9pnvt onto esxi-01, next to
worker 7xk2p, against the workers' cluster module (soft anti-affinity); worker zt6hw is being
created and has no host yet. Each file is what
`kubectl get vm,virtualmachinesetresourcepolicy -n team-a -o yaml --show-managed-fields` prints
from a Supervisor storing that version: a `v1 List`, keys sorted, with the server's defaults
(v1alpha1: `powerOffMode: hard`; later `TrySoft`, and from v1alpha4 `promoteDisksMode: Online`)
and each version's spelling of the fields (`status.host` up to v1alpha3, `status.nodeName`
after; `poweredOn` in v1alpha1, `PoweredOn` after; `spec.resourcePolicyName` in v1alpha1,
`spec.reserved.resourcePolicyName` after; the policy's `clustermodules[].groupname` in
v1alpha1, `clusterModuleGroups` and `groupName` after).

Writes tests/fixtures/vm-operator/tkc-1/<version>.yaml, tests/fixtures/vm-operator/tkc-1/guest.yaml
(the guest cluster's nodes and pods as `kubectl get nodes,pods -A -o yaml` prints them) and the
planner golden fixture tests/fixtures/plan/vks-guest-cluster-drs-moved/snapshot.yaml (the
guest objects and the v1alpha5 rendering). tests/vm_operator.rs checks that every rendering
plans as the golden does. Run again after changing the story:

    scripts/vm-operator-fixtures.py
"""

import pathlib

import yaml

ROOT = pathlib.Path(__file__).resolve().parent.parent
OUT = ROOT / "tests/fixtures/vm-operator/tkc-1"
GOLDEN = ROOT / "tests/fixtures/plan/vks-guest-cluster-drs-moved/snapshot.yaml"

NAMESPACE = "team-a"
CLUSTER = "tkc-1"
ZONE = "zone-a"
CLUSTER_MOID = "domain-c10"
DEPLOYMENT = "tkc-1-node-pool-1-wh5j2"
CP_GROUP = "tkc-1-control-plane"
WORKER_GROUP = "tkc-1-workers-0"
MODULES = {
    CP_GROUP: "52a1f0c4-3b7e-4d21-9f0a-6c8e2d4b1a01",
    WORKER_GROUP: "52a1f0c4-3b7e-4d21-9f0a-6c8e2d4b1a02",
}
IMAGE = "vmi-7f3c2a9d1e5b4c86"
IMAGE_NAME = "ob-24249396-ubuntu-2204-amd64-vmi-k8s-v1.31.4---vmware.1-fips-vkr.3"

# name, role, host (None: being created), BIOS uuid, managed object id, IP, creation
VMS = [
    ("tkc-1-6fz2k-lq8pm", "controlplane", "esxi-02.lab.example",
     "4210a1f0-6c2e-8d3b-1f4a-5e6b7c8d9e01", "vm-1041", "10.244.0.34", "2026-11-02T08:10:41Z"),
    (f"{DEPLOYMENT}-5b7c9d8f6-7xk2p", "node", "esxi-01.lab.example",
     "4210a1f0-6c2e-8d3b-1f4a-5e6b7c8d9e02", "vm-1043", "10.244.0.35", "2026-11-02T08:21:07Z"),
    (f"{DEPLOYMENT}-5b7c9d8f6-9pnvt", "node", "esxi-01.lab.example",
     "4210a1f0-6c2e-8d3b-1f4a-5e6b7c8d9e03", "vm-1044", "10.244.0.36", "2026-11-02T08:21:07Z"),
    (f"{DEPLOYMENT}-5b7c9d8f6-rc4sd", "node", "esxi-03.lab.example",
     "4210a1f0-6c2e-8d3b-1f4a-5e6b7c8d9e04", "vm-1045", "10.244.0.37", "2026-11-02T08:21:08Z"),
    (f"{DEPLOYMENT}-5b7c9d8f6-zt6hw", "node", None, None, None, None, "2026-11-21T08:58:12Z"),
]
# Where each guest node's host label was written by the last run, before DRS moved 9pnvt.
LABELLED = {
    "tkc-1-6fz2k-lq8pm": "esxi-02.lab.example",
    f"{DEPLOYMENT}-5b7c9d8f6-7xk2p": "esxi-01.lab.example",
    f"{DEPLOYMENT}-5b7c9d8f6-9pnvt": "esxi-02.lab.example",
    f"{DEPLOYMENT}-5b7c9d8f6-rc4sd": "esxi-03.lab.example",
}


def condition(kind, status="True", reason=None, time="2026-11-02T08:24:51Z"):
    """A metav1.Condition as VM Operator writes it (v1alpha2 on): a true one's reason is True."""
    return {"lastTransitionTime": time, "message": "", "reason": reason or status,
            "status": status, "type": kind}


def condition_v1alpha1(kind, time="2026-11-02T08:24:51Z"):
    """v1alpha1's own Condition type: reason and message optional, omitted when empty."""
    return {"lastTransitionTime": time, "status": "True", "type": kind}


def managed_fields(version, vm, spec_fields, status_fields):
    """What the server records: Cluster API writes the object, VM Operator its status."""
    return [
        {
            "apiVersion": f"vmoperator.vmware.com/{version}",
            "fieldsType": "FieldsV1",
            "fieldsV1": {"f:metadata": {"f:labels": {".": {}, "f:capv.vmware.com/cluster.name": {}}},
                         "f:spec": {f"f:{field}": {} for field in spec_fields}},
            "manager": "manager",
            "operation": "Update",
            "time": vm[6],
        },
        {
            "apiVersion": f"vmoperator.vmware.com/{version}",
            "fieldsType": "FieldsV1",
            "fieldsV1": {"f:status": {f"f:{field}": {} for field in status_fields}},
            "manager": "vmware-system-vmop-controller-manager",
            "operation": "Update",
            "subresource": "status",
            "time": "2026-11-21T08:57:30Z",
        },
    ]


def number(version):
    return int(version.removeprefix("v1alpha"))


def metadata(version, vm, index):
    name, role = vm[0], vm[1]
    labels = {
        "capv.vmware.com/cluster.name": CLUSTER,
        "capv.vmware.com/cluster.role": role,
        "cluster.x-k8s.io/cluster-name": CLUSTER,
        "topology.kubernetes.io/zone": ZONE,
    }
    group = CP_GROUP
    if role == "node":
        labels["cluster.x-k8s.io/deployment-name"] = DEPLOYMENT
        group = WORKER_GROUP
    annotations = {
        "vsphere-cluster-module-group": group,
        "vmoperator.vmware.com/image-supported-check": "disabled",
    }
    if vm[2] is not None:
        # VM Operator writes it once it added the VM to its module.
        annotations["vsphere-cluster-module-group-uuid"] = MODULES[group]
    return {
        "annotations": annotations,
        "creationTimestamp": vm[6],
        "finalizers": ["vmoperator.vmware.com/virtualmachine"],
        "generation": 1 if vm[2] is None else 3,
        "labels": labels,
        "managedFields": managed_fields(
            version, vm, ["className", "imageName", "powerState", "storageClass"],
            ["powerState", "conditions"] if vm[2] is None else ["powerState", "uniqueID", "biosUUID", "zone"]),
        "name": name,
        "namespace": NAMESPACE,
        "ownerReferences": [{
            "apiVersion": "vmware.infrastructure.cluster.x-k8s.io/v1beta1",
            "blockOwnerDeletion": True,
            "controller": True,
            "kind": "VSphereMachine",
            "name": name,
            "uid": f"8d1c5e7a-40b2-4f6e-9a13-2b7c4e6f80{index:02d}",
        }],
        "resourceVersion": str(4_811_200 + index * 37),
        "uid": f"3f9b2d41-7c6a-4e58-b0d2-91a4c7e5f3{index:02d}",
    }


def vm_spec(version, vm):
    role = vm[1]
    bootstrap_secret = f"{vm[0]}"
    v = number(version)
    power = "poweredOn" if v == 1 else "PoweredOn"
    mode = "hard" if v == 1 else "TrySoft"
    spec = {
        "className": "best-effort-medium" if role == "controlplane" else "best-effort-large",
        "imageName": IMAGE,
        "minHardwareVersion": 17,
        "powerOffMode": mode,
        "powerState": power,
        "restartMode": mode,
        "storageClass": "vsan-default-storage-policy",
        "suspendMode": mode,
    }
    if role == "controlplane":
        spec["readinessProbe"] = {"tcpSocket": {"port": 6443}}
    if v == 1:
        spec["resourcePolicyName"] = CLUSTER
        spec["networkInterfaces"] = [{"networkName": f"{CLUSTER}-vnet", "networkType": "nsx-t"}]
        spec["vmMetadata"] = {"secretName": bootstrap_secret, "transport": "CloudInit"}
        return spec
    spec["reserved"] = {"resourcePolicyName": CLUSTER}
    spec["bootstrap"] = {"cloudInit": {"rawCloudConfig": {"key": "user-data", "name": bootstrap_secret}}}
    spec["network"] = {"interfaces": [{"name": "eth0", "network": {
        "apiVersion": "vmware.com/v1alpha1", "kind": "VirtualNetwork", "name": f"{CLUSTER}-vnet"}}]}
    if v >= 3:
        spec["image"] = {"kind": "ClusterVirtualMachineImage", "name": IMAGE}
        spec["guestID"] = "ubuntu64Guest"
        if vm[3] is not None:
            # Defaulted by VM Operator's mutating webhook; the same uuids the VM got.
            spec["biosUUID"] = vm[3]
            spec["instanceUUID"] = "5010" + vm[3][4:]
    if v >= 4:
        spec["promoteDisksMode"] = "Online"
    return spec


def vm_status(version, vm):
    v = number(version)
    if vm[2] is None:
        return {"conditions": [
            condition("VirtualMachineClassReady", time=vm[6]),
            condition("VirtualMachineImageReady", time=vm[6]),
            condition("VirtualMachineCreated", "False", "NotCreated", vm[6]),
        ] if v > 1 else [condition_v1alpha1("VirtualMachinePrereqReady", time=vm[6])],
            "zone": ZONE}
    status = {
        "biosUUID": vm[3],
        "changeBlockTracking": False,
        "hardwareVersion": 19,
        "instanceUUID": "5010" + vm[3][4:],
        "powerState": "poweredOn" if v == 1 else "PoweredOn",
        "uniqueID": vm[4],
        "volumes": [],
        "zone": ZONE,
    }
    status["nodeName" if v >= 4 else "host"] = vm[2]
    if v == 1:
        status["phase"] = "Created"
        status["vmIp"] = vm[5]
        status["conditions"] = [condition_v1alpha1("VirtualMachinePrereqReady")]
        status["networkInterfaces"] = [{"connected": True, "ipAddresses": [f"{vm[5]}/28"],
                                        "macAddress": "04:50:56:00:" + vm[4][-2:] + ":01"}]
        return status
    status["conditions"] = [condition(kind) for kind in (
        "GuestBootstrap", "VirtualMachineClassReady", "VirtualMachineConditionPlacementReady",
        "VirtualMachineCreated", "VirtualMachineImageReady", "VirtualMachineNetworkReady",
        "VirtualMachineTools")]
    status["network"] = {"interfaces": [{"ip": {"addresses": [{"address": f"{vm[5]}/28"}],
                                               "macAddr": "04:50:56:00:" + vm[4][-2:] + ":01"},
                                        "name": "eth0"}],
                         "primaryIP4": vm[5]}
    if v != 4:
        status["class"] = {"apiVersion": f"vmoperator.vmware.com/{version}",
                           "kind": "VirtualMachineClass",
                           "name": "best-effort-medium" if vm[1] == "controlplane" else "best-effort-large"}
    if v == 2:
        status["image"] = {"apiVersion": f"vmoperator.vmware.com/{version}",
                           "kind": "ClusterVirtualMachineImage", "name": IMAGE}
    if v >= 3:
        status["storage"] = {"usage": {"disks": "20Gi", "other": "12Gi", "total": "32Gi"}} if v == 3 \
            else {"total": "32Gi", "requested": {"disks": "20Gi"}, "usage": {"disks": "20Gi", "other": "12Gi"}}
    return status


def virtual_machine(version, vm, index):
    return {
        "apiVersion": f"vmoperator.vmware.com/{version}",
        "kind": "VirtualMachine",
        "metadata": metadata(version, vm, index),
        "spec": vm_spec(version, vm),
        "status": vm_status(version, vm),
    }


def resource_policy(version):
    v = number(version)
    groups = [CP_GROUP, WORKER_GROUP]
    if v == 1:
        spec = {"clustermodules": [{"groupname": group} for group in groups],
                "folder": {"name": CLUSTER},
                "resourcepool": {"limits": {}, "name": CLUSTER, "reservations": {}}}
        key = "groupname"
    else:
        spec = {"clusterModuleGroups": groups, "folder": CLUSTER,
                "resourcePool": {"limits": {}, "name": CLUSTER, "reservations": {}}}
        key = "groupName"
    return {
        "apiVersion": f"vmoperator.vmware.com/{version}",
        "kind": "VirtualMachineSetResourcePolicy",
        "metadata": {
            "creationTimestamp": "2026-11-02T08:09:55Z",
            "finalizers": ["vmoperator.vmware.com/virtualmachinesetresourcepolicy"],
            "generation": 1,
            "managedFields": [{
                "apiVersion": f"vmoperator.vmware.com/{version}",
                "fieldsType": "FieldsV1",
                "fieldsV1": {"f:spec": {".": {}, "f:folder": {}, "f:resourcePool": {}}},
                "manager": "manager",
                "operation": "Update",
                "time": "2026-11-02T08:09:55Z",
            }],
            "name": CLUSTER,
            "namespace": NAMESPACE,
            "ownerReferences": [{
                "apiVersion": "vmware.infrastructure.cluster.x-k8s.io/v1beta1",
                "blockOwnerDeletion": True,
                "controller": True,
                "kind": "VSphereCluster",
                "name": "tkc-1-wh5j2",
                "uid": "c2e4a6b8-1d3f-4a5b-8c7d-9e0f1a2b3c4d",
            }],
            "resourceVersion": "4802211",
            "uid": "a7c9e1f3-5b2d-4e6f-8a0b-1c3d5e7f9a2b",
        },
        "spec": spec,
        "status": {
            "clustermodules": [{"clusterMoID": CLUSTER_MOID, key: group, "moduleUUID": MODULES[group]}
                               for group in groups],
            "resourcePools": [{"childResourcePoolMoID": "resgroup-2041", "clusterMoID": CLUSTER_MOID}],
        },
    }


def supervisor_list(version):
    items = [virtual_machine(version, vm, i) for i, vm in enumerate(VMS, start=1)]
    items.append(resource_policy(version))
    return {"apiVersion": "v1", "items": items, "kind": "List", "metadata": {"resourceVersion": ""}}


def node(vm, index):
    name, role, host, bios = vm[0], vm[1], vm[2], vm[3]
    labels = {
        "beta.kubernetes.io/arch": "amd64",
        "beta.kubernetes.io/instance-type": "vsphere-vm.cpu-4.mem-16gb.os-linux",
        "beta.kubernetes.io/os": "linux",
        "kubernetes.io/arch": "amd64",
        "kubernetes.io/hostname": name,
        "kubernetes.io/os": "linux",
        "node.cluster.x-k8s.io/esxi-host": host,
        "node.kubernetes.io/instance-type": "vsphere-vm.cpu-4.mem-16gb.os-linux",
        "run.tanzu.vmware.com/kubernetesDistributionVersion": "v1.31.4---vmware.1-fips-vkr.3",
        "topology.kubernetes.io/zone": ZONE,
        "vsphere-descheduler.io/host": LABELLED[name],
    }
    spec = {"podCIDR": f"192.168.{index}.0/24", "podCIDRs": [f"192.168.{index}.0/24"],
            "providerID": f"vsphere://{bios}"}
    if role == "controlplane":
        labels["node-role.kubernetes.io/control-plane"] = ""
        spec["taints"] = [{"effect": "NoSchedule", "key": "node-role.kubernetes.io/control-plane"}]
    conditions = [
        {"lastHeartbeatTime": "2026-11-21T08:58:40Z", "lastTransitionTime": "2026-11-02T08:23:10Z",
         "message": message, "reason": reason, "status": status, "type": kind}
        for kind, status, reason, message in (
            ("MemoryPressure", "False", "KubeletHasSufficientMemory", "kubelet has sufficient memory available"),
            ("DiskPressure", "False", "KubeletHasNoDiskPressure", "kubelet has no disk pressure"),
            ("PIDPressure", "False", "KubeletHasSufficientPID", "kubelet has sufficient PID available"),
            ("Ready", "True", "KubeletReady", "kubelet is posting ready status"))
    ]
    return {
        "apiVersion": "v1",
        "kind": "Node",
        "metadata": {
            "annotations": {
                "cluster.x-k8s.io/cluster-name": CLUSTER,
                "cluster.x-k8s.io/cluster-namespace": NAMESPACE,
                "cluster.x-k8s.io/machine": name,
                "cluster.x-k8s.io/owner-kind": "KubeadmControlPlane" if role == "controlplane" else "MachineSet",
                "node.alpha.kubernetes.io/ttl": "0",
                "volumes.kubernetes.io/controller-managed-attach-detach": "true",
            },
            "creationTimestamp": vm[6],
            "labels": labels,
            "name": name,
            "resourceVersion": str(921_400 + index * 11),
            "uid": f"e1d2c3b4-a596-4877-8695-a4b3c2d1e0{index:02d}",
        },
        "spec": spec,
        "status": {
            "addresses": [{"address": vm[5], "type": "InternalIP"}, {"address": name, "type": "Hostname"}],
            "allocatable": {"cpu": "4", "ephemeral-storage": "18945365592", "memory": "16179732Ki", "pods": "110"},
            "capacity": {"cpu": "4", "ephemeral-storage": "20557912Ki", "memory": "16282132Ki", "pods": "110"},
            "conditions": conditions,
            "daemonEndpoints": {"kubeletEndpoint": {"Port": 10250}},
            "nodeInfo": {
                "architecture": "amd64",
                "bootID": f"0b1c2d3e-4f50-4617-a829-3a4b5c6d7e{index:02d}",
                "containerRuntimeVersion": "containerd://1.7.24+vmware.1",
                "kernelVersion": "5.15.0-127-generic",
                "kubeProxyVersion": "v1.31.4+vmware.1-fips",
                "kubeletVersion": "v1.31.4+vmware.1-fips",
                "machineID": f"9a8b7c6d5e4f40312a1b2c3d4e5f60{index:02d}",
                "operatingSystem": "linux",
                "osImage": "Ubuntu 22.04.5 LTS",
                "systemUUID": bios.upper(),
            },
        },
    }


def web_pod(suffix, node_name, host_ip, created, index):
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {
            "creationTimestamp": created,
            "generateName": "web-6c9f8d7b5d-",
            "labels": {"app": "web", "pod-template-hash": "6c9f8d7b5d"},
            "name": f"web-6c9f8d7b5d-{suffix}",
            "namespace": "shop",
            "ownerReferences": [{"apiVersion": "apps/v1", "blockOwnerDeletion": True, "controller": True,
                                 "kind": "ReplicaSet", "name": "web-6c9f8d7b5d",
                                 "uid": "7b6a5c4d-3e2f-4101-9a8b-c7d6e5f4a3b2"}],
            "resourceVersion": str(930_000 + index),
            "uid": f"5d4c3b2a-1f0e-4d9c-8b7a-6f5e4d3c2b{index:02d}",
        },
        "spec": {
            "affinity": {"podAntiAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": [
                {"labelSelector": {"matchLabels": {"app": "web"}},
                 "topologyKey": "vsphere-descheduler.io/host"}]}},
            "containers": [{"image": "registry.example/web:1.4.2", "imagePullPolicy": "IfNotPresent",
                            "name": "web", "ports": [{"containerPort": 8080, "protocol": "TCP"}],
                            "resources": {"requests": {"cpu": "250m", "memory": "256Mi"}},
                            "terminationMessagePath": "/dev/termination-log",
                            "terminationMessagePolicy": "File"}],
            "dnsPolicy": "ClusterFirst",
            "enableServiceLinks": True,
            "nodeName": node_name,
            "preemptionPolicy": "PreemptLowerPriority",
            "priority": 0,
            "restartPolicy": "Always",
            "schedulerName": "default-scheduler",
            "securityContext": {},
            "serviceAccount": "default",
            "serviceAccountName": "default",
            "terminationGracePeriodSeconds": 30,
            "tolerations": [
                {"effect": "NoExecute", "key": "node.kubernetes.io/not-ready", "operator": "Exists",
                 "tolerationSeconds": 300},
                {"effect": "NoExecute", "key": "node.kubernetes.io/unreachable", "operator": "Exists",
                 "tolerationSeconds": 300}],
        },
        "status": {
            "conditions": [{"lastProbeTime": None, "lastTransitionTime": created, "status": "True", "type": kind}
                           for kind in ("PodReadyToStartContainers", "Initialized", "Ready",
                                        "ContainersReady", "PodScheduled")],
            "containerStatuses": [{"containerID": f"containerd://{index:02d}" + "ab" * 31,
                                   "image": "registry.example/web:1.4.2",
                                   "imageID": "registry.example/web@sha256:" + "cd" * 32,
                                   "lastState": {}, "name": "web", "ready": True, "restartCount": 0,
                                   "started": True, "state": {"running": {"startedAt": created}}}],
            "hostIP": host_ip,
            "phase": "Running",
            "podIP": f"192.168.{index}.14",
            "qosClass": "Burstable",
            "startTime": created,
        },
    }


def guest_list():
    nodes = [node(vm, i) for i, vm in enumerate(VMS, start=1) if vm[2] is not None]
    pods = [
        web_pod("h7x2q", f"{DEPLOYMENT}-5b7c9d8f6-7xk2p", "10.244.0.35", "2026-11-10T14:02:11Z", 1),
        web_pod("m4k9s", f"{DEPLOYMENT}-5b7c9d8f6-9pnvt", "10.244.0.36", "2026-11-10T14:02:12Z", 2),
    ]
    return {"apiVersion": "v1", "items": nodes + pods, "kind": "List", "metadata": {"resourceVersion": ""}}


def dump(document):
    return yaml.safe_dump(document, sort_keys=True, default_flow_style=False, width=100)


STORY = (
    "# vks-guest-cluster-drs-moved: guest cluster tkc-1 (Supervisor namespace team-a) reads its ESXi hosts "
    "from VM Operator's v1alpha5 objects: DRS moved worker 9pnvt onto esxi-01 next to worker 7xk2p, "
    "against the workers' cluster module (soft anti-affinity), so both web replicas share a host; the "
    "label follows the VM and the newer replica moves to the worker on esxi-03.\n"
    "# Written by scripts/vm-operator-fixtures.py; worker zt6hw is being created and has no host yet.\n"
)


def main():
    OUT.mkdir(parents=True, exist_ok=True)
    for version in ("v1alpha1", "v1alpha2", "v1alpha3", "v1alpha4", "v1alpha5"):
        (OUT / f"{version}.yaml").write_text(dump(supervisor_list(version)))
    guest = dump(guest_list())
    (OUT / "guest.yaml").write_text(guest)
    GOLDEN.parent.mkdir(parents=True, exist_ok=True)
    GOLDEN.write_text(STORY + "---\n" + guest + "---\n" + dump(supervisor_list("v1alpha5")))


if __name__ == "__main__":
    main()
