//! The fake API server playing a vSphere Supervisor (VM Operator's resources), driven through
//! the real `kube` client as the tool's Supervisor client drives a real one: discovery of the
//! preferred version per release, paged lists in every served version, gets, RBAC of a
//! namespace Role (403 bodies and SelfSubjectAccessReviews), and a fake without VM Operator.

mod support;

use k8s_openapi::api::authorization::v1::{
    ResourceAttributes, SelfSubjectAccessReview, SelfSubjectAccessReviewSpec,
};
use k8s_openapi::api::core::v1::Node;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::APIGroup;
use kube::api::{Api, ApiResource, DynamicObject, GroupVersionKind, ListParams, PostParams};
use kube::discovery;
use serde_json::Value;
use support::fake_apiserver::{FakeApiServer, MetricsApi, Rbac, in_process};
use support::vm_operator::{
    CONVERSION_ANNOTATION, GROUP, GuestClusterStory, Release, Resource, Version,
};

const NAMESPACE: &str = GuestClusterStory::NAMESPACE;
const SERVICE_ACCOUNT: &str = GuestClusterStory::SERVICE_ACCOUNT;

fn api_resource(resource: Resource, version: Version) -> ApiResource {
    ApiResource::from_gvk_with_plural(
        &GroupVersionKind::gvk(GROUP, version.name(), resource.kind()),
        resource.plural(),
    )
}

fn namespaced(
    client: &kube::Client,
    resource: Resource,
    version: Version,
    namespace: &str,
) -> Api<DynamicObject> {
    Api::namespaced_with(client.clone(), namespace, &api_resource(resource, version))
}

/// Every object of a list read page by page, `limit` at a time, and how many pages it took.
async fn list_all(api: &Api<DynamicObject>, limit: u32) -> (Vec<DynamicObject>, usize) {
    let mut params = ListParams::default().limit(limit);
    let mut objects = Vec::new();
    let mut pages = 0;
    loop {
        let page = api.list(&params).await.expect("a page");
        pages += 1;
        objects.extend(page.items);
        match page.metadata.continue_ {
            Some(token) if !token.is_empty() => params = params.continue_token(&token),
            _ => return (objects, pages),
        }
    }
}

fn forbidden(error: kube::Error) -> Box<kube::core::Status> {
    match error {
        kube::Error::Api(status) if status.code == 403 => status,
        other => panic!("expected a 403, got {other:?}"),
    }
}

#[tokio::test]
async fn discovery_prefers_each_releases_storage_version_and_lists_every_served_one() {
    let story = GuestClusterStory::new();
    let expected = [
        (Release::V8_0_3, "v1alpha2"),
        (Release::V9_0_0, "v1alpha3"),
        (Release::V9_0_1, "v1alpha4"),
        (Release::V9_1, "v1alpha5"),
    ];
    for (release, preferred) in expected {
        let (client, _) = in_process(story.supervisor(release));
        let group = discovery::group(&client, GROUP).await.expect("the group");
        assert_eq!(group.preferred_version(), Some(preferred), "{release:?}");
        let document: APIGroup = client
            .request(
                axum::http::Request::get(format!("/apis/{GROUP}"))
                    .body(Vec::new())
                    .expect("a request"),
            )
            .await
            .expect("the APIGroup");
        let preferred_version = document.preferred_version.expect("a preferred version");
        assert_eq!(preferred_version.version, preferred, "{release:?}");
        assert_eq!(document.versions[0].version, preferred, "highest first");
        let served: Vec<&str> = release.served_versions().iter().map(|v| v.name()).collect();
        let mut versions: Vec<&str> = group.versions().collect();
        versions.sort();
        assert_eq!(versions, served, "{release:?}");
        for version in group.versions() {
            let resources: Vec<String> = group
                .versioned_resources(version)
                .into_iter()
                .map(|(resource, capabilities)| {
                    assert_eq!(capabilities.scope, discovery::Scope::Namespaced);
                    assert!(capabilities.supports_operation(discovery::verbs::LIST));
                    assert!(
                        capabilities
                            .subresources
                            .iter()
                            .any(|(subresource, _)| subresource.plural == "status"),
                        "{release:?} {version}: {} has its status subresource",
                        resource.plural
                    );
                    resource.plural
                })
                .collect();
            assert_eq!(
                resources,
                ["virtualmachines", "virtualmachinesetresourcepolicies"],
                "{release:?} {version}"
            );
        }
    }
}

#[tokio::test]
async fn full_discovery_still_works_and_lists_the_group_beside_the_built_in_ones() {
    let mut cluster = GuestClusterStory::new().supervisor(Release::V9_0_1);
    cluster.metrics_api = MetricsApi::Serving;
    let (client, _) = in_process(cluster);
    let discovered = discovery::Discovery::new(client)
        .run()
        .await
        .expect("every group's documents");
    for group in [
        "",
        "policy",
        "coordination.k8s.io",
        "events.k8s.io",
        GROUP,
        "metrics.k8s.io",
    ] {
        assert!(discovered.has_group(group), "{group:?} is discovered");
    }
    let vm_operator = discovered.get(GROUP).expect("VM Operator's group");
    assert_eq!(vm_operator.preferred_version(), Some("v1alpha4"));
    let core = discovered.get("").expect("the core group");
    let kinds: Vec<String> = core
        .recommended_resources()
        .into_iter()
        .map(|(resource, _)| resource.kind)
        .collect();
    assert!(kinds.contains(&"Node".to_string()) && kinds.contains(&"Pod".to_string()));
}

#[tokio::test]
async fn aggregated_discovery_lists_the_group_with_the_same_preferred_version_and_subresources() {
    let story = GuestClusterStory::new();
    for release in Release::ALL {
        let (client, _) = in_process(story.supervisor(release));
        let discovered = discovery::Discovery::new(client)
            .run_aggregated()
            .await
            .expect("the aggregated documents");
        let group = discovered.get(GROUP).expect("VM Operator's group");
        let storage = release.storage_version();
        assert_eq!(
            group.preferred_version(),
            Some(storage.name()),
            "{release:?}"
        );
        assert_eq!(group.versions().count(), release.served_versions().len());
        let (resource, capabilities) = group
            .recommended_kind("VirtualMachine")
            .expect("VirtualMachine is served");
        assert_eq!(resource.api_version, storage.api_version());
        assert_eq!(resource.plural, "virtualmachines");
        let subresources: Vec<&str> = capabilities
            .subresources
            .iter()
            .map(|(subresource, _)| subresource.plural.as_str())
            .collect();
        assert_eq!(subresources, ["status"]);
        let pods = discovered
            .get("")
            .and_then(|core| core.recommended_kind("Pod"))
            .expect("the core group's pods");
        assert!(
            pods.1
                .subresources
                .iter()
                .any(|(sub, _)| sub.plural == "eviction")
        );
    }

    let (client, _) = in_process(story.guest());
    let discovered = discovery::Discovery::new(client)
        .run_aggregated()
        .await
        .expect("the aggregated documents");
    assert!(!discovered.has_group(GROUP));
    assert!(discovered.has_group("policy"));
}

#[tokio::test]
async fn a_paged_list_returns_every_vm_once_in_each_served_version_with_its_host_field() {
    let story = GuestClusterStory::new();
    for release in Release::ALL {
        let (client, _) = in_process(story.supervisor(release));
        for version in release.served_versions() {
            let api = namespaced(&client, Resource::VirtualMachines, version, NAMESPACE);
            let (vms, pages) = list_all(&api, 1).await;
            assert_eq!(
                pages,
                story.vms.len(),
                "{release:?} {version:?}: one VM a page"
            );
            let mut names: Vec<String> = vms
                .iter()
                .map(|vm| vm.metadata.name.clone().expect("a name"))
                .collect();
            names.sort();
            let mut expected: Vec<String> = story.vms.iter().map(|vm| vm.name.clone()).collect();
            expected.sort();
            assert_eq!(names, expected, "{release:?} {version:?}");
            let (present, absent) = if version >= Version::V1alpha4 {
                ("nodeName", "host")
            } else {
                ("host", "nodeName")
            };
            for vm in &vms {
                let name = vm.metadata.name.as_deref().expect("a name");
                let status = &vm.data["status"];
                assert_eq!(
                    status[present].as_str(),
                    Some(story.vm(name).host.as_str()),
                    "{release:?} {version:?} {name}: status.{present}"
                );
                assert!(
                    status.get(absent).is_none(),
                    "{release:?} {version:?} {name}: no status.{absent}"
                );
                assert_eq!(
                    vm.types.as_ref().map(|t| t.api_version.as_str()),
                    Some(version.api_version())
                );
            }
        }
    }
}

#[tokio::test]
async fn v1alpha1_spells_power_states_and_policy_groups_its_own_way_and_keeps_the_stored_object() {
    let story = GuestClusterStory::new();
    let (client, _) = in_process(story.supervisor(Release::V9_0_1));
    let worker = story.workers().next().expect("a worker");
    let old = namespaced(
        &client,
        Resource::VirtualMachines,
        Version::V1alpha1,
        NAMESPACE,
    )
    .get(&worker.name)
    .await
    .expect("the VM in v1alpha1");
    assert_eq!(old.data["status"]["powerState"], "poweredOn");
    assert_eq!(old.data["spec"]["powerOffMode"], "trySoft");
    assert_eq!(
        old.data["spec"]["resourcePolicyName"],
        story.cluster.as_str()
    );
    assert!(old.data["spec"].get("promoteDisksMode").is_none());
    let kept: Value = serde_json::from_str(
        old.metadata.annotations.as_ref().expect("annotations")[CONVERSION_ANNOTATION].as_str(),
    )
    .expect("the stored object as JSON");
    assert_eq!(kept["apiVersion"], Version::V1alpha4.api_version());
    assert_eq!(kept["status"]["nodeName"], worker.host.as_str());

    let stored = namespaced(
        &client,
        Resource::VirtualMachines,
        Version::V1alpha4,
        NAMESPACE,
    )
    .get(&worker.name)
    .await
    .expect("the VM in its storage version");
    assert_eq!(stored.data["status"]["powerState"], "PoweredOn");
    assert_eq!(stored.data["spec"]["promoteDisksMode"], "Online");
    assert_eq!(
        stored.data["spec"]["reserved"]["resourcePolicyName"],
        story.cluster.as_str()
    );
    assert!(
        stored
            .metadata
            .annotations
            .as_ref()
            .expect("annotations")
            .get(CONVERSION_ANNOTATION)
            .is_none()
    );

    let policy = namespaced(
        &client,
        Resource::ResourcePolicies,
        Version::V1alpha1,
        NAMESPACE,
    )
    .get(&story.cluster)
    .await
    .expect("the policy in v1alpha1");
    assert_eq!(
        policy.data["spec"]["clustermodules"][1]["groupname"],
        "tkc-1-workers-0"
    );
    assert_eq!(
        policy.data["status"]["clustermodules"][1]["groupname"],
        "tkc-1-workers-0"
    );
    let current = namespaced(
        &client,
        Resource::ResourcePolicies,
        Version::V1alpha4,
        NAMESPACE,
    )
    .get(&story.cluster)
    .await
    .expect("the policy in v1alpha4");
    assert_eq!(
        current.data["spec"]["clusterModuleGroups"][1],
        "tkc-1-workers-0"
    );
    assert_eq!(
        current.data["status"]["clustermodules"][1]["groupName"],
        "tkc-1-workers-0"
    );
}

#[tokio::test]
async fn a_moved_vm_is_read_on_its_new_host_with_a_new_resource_version() {
    let story = GuestClusterStory::new();
    let (client, state) = in_process(story.supervisor(Release::V9_0_0));
    let worker = story.workers().next().expect("a worker");
    let api = namespaced(
        &client,
        Resource::VirtualMachines,
        Version::V1alpha3,
        NAMESPACE,
    );
    let before = api.get(&worker.name).await.expect("the VM");
    let new_host = &story.hosts[2];
    assert_ne!(&worker.host, new_host);
    state
        .lock()
        .expect("the fake's state")
        .move_virtual_machine(NAMESPACE, &worker.name, new_host);
    let after = api.get(&worker.name).await.expect("the VM");
    assert_eq!(after.data["status"]["host"], new_host.as_str());
    assert_ne!(
        after.metadata.resource_version,
        before.metadata.resource_version
    );
    assert_eq!(after.metadata.generation, before.metadata.generation);
}

#[tokio::test]
async fn a_missing_vm_is_the_real_not_found() {
    let (client, _) = in_process(GuestClusterStory::new().supervisor(Release::V9_1));
    let error = namespaced(
        &client,
        Resource::VirtualMachines,
        Version::V1alpha5,
        NAMESPACE,
    )
    .get("gone")
    .await
    .expect_err("no such VM");
    let kube::Error::Api(status) = error else {
        panic!("an API error: {error:?}");
    };
    assert_eq!(status.code, 404);
    assert_eq!(status.reason, "NotFound");
    assert_eq!(
        status.message,
        "virtualmachines.vmoperator.vmware.com \"gone\" not found"
    );
    let details = status.details.expect("details");
    assert_eq!(
        (
            details.name.as_str(),
            details.group.as_str(),
            details.kind.as_str()
        ),
        ("gone", GROUP, "virtualmachines")
    );
}

#[tokio::test]
async fn a_namespace_role_reads_both_resources_in_its_namespace() {
    let story = GuestClusterStory::new();
    let (client, _) = in_process(story.supervisor(Release::V9_0_1));
    for resource in Resource::ALL {
        let api = namespaced(&client, resource, Version::V1alpha4, NAMESPACE);
        let (objects, _) = list_all(&api, 2).await;
        assert!(!objects.is_empty(), "{resource:?} listed");
        let name = objects[0].metadata.name.clone().expect("a name");
        api.get(&name).await.expect("a get in the namespace");
    }
}

#[tokio::test]
async fn a_namespace_role_is_refused_elsewhere_with_the_real_bodies() {
    let story = GuestClusterStory::new();
    let (client, _) = in_process(story.supervisor(Release::V9_0_1));
    let user = format!("system:serviceaccount:{NAMESPACE}:{SERVICE_ACCOUNT}");
    let vms = api_resource(Resource::VirtualMachines, Version::V1alpha4);

    let other = Api::<DynamicObject>::namespaced_with(client.clone(), "team-b", &vms);
    let status = forbidden(
        other
            .list(&ListParams::default())
            .await
            .expect_err("another namespace"),
    );
    assert_eq!(status.reason, "Forbidden");
    assert_eq!(
        status.message,
        format!(
            "virtualmachines.vmoperator.vmware.com is forbidden: User \"{user}\" cannot list \
             resource \"virtualmachines\" in API group \"vmoperator.vmware.com\" in the namespace \"team-b\""
        )
    );
    let details = status.details.expect("details");
    assert_eq!(
        (
            details.group.as_str(),
            details.kind.as_str(),
            details.name.as_str()
        ),
        (GROUP, "virtualmachines", "")
    );

    let everywhere = Api::<DynamicObject>::all_with(client.clone(), &vms);
    let status = forbidden(
        everywhere
            .list(&ListParams::default())
            .await
            .expect_err("all namespaces"),
    );
    assert!(
        status
            .message
            .ends_with("in API group \"vmoperator.vmware.com\" at the cluster scope"),
        "{}",
        status.message
    );

    let own = Api::<DynamicObject>::namespaced_with(client.clone(), NAMESPACE, &vms);
    let status = forbidden(
        own.watch(&kube::api::WatchParams::default(), "0")
            .await
            .err()
            .expect("a watch"),
    );
    assert!(
        status
            .message
            .contains("cannot watch resource \"virtualmachines\""),
        "{}",
        status.message
    );

    let pods = Api::<k8s_openapi::api::core::v1::Pod>::namespaced(client.clone(), NAMESPACE);
    let status = forbidden(
        pods.list(&ListParams::default())
            .await
            .expect_err("another resource"),
    );
    assert!(
        status.message.starts_with("pods is forbidden"),
        "{}",
        status.message
    );
}

async fn review(
    client: &kube::Client,
    verb: &str,
    resource: &str,
    namespace: &str,
) -> (bool, Option<String>) {
    let reviews = Api::<SelfSubjectAccessReview>::all(client.clone());
    let review = SelfSubjectAccessReview {
        spec: SelfSubjectAccessReviewSpec {
            resource_attributes: Some(ResourceAttributes {
                group: Some(GROUP.to_string()),
                resource: Some(resource.to_string()),
                verb: Some(verb.to_string()),
                namespace: Some(namespace.to_string()),
                ..ResourceAttributes::default()
            }),
            ..SelfSubjectAccessReviewSpec::default()
        },
        ..SelfSubjectAccessReview::default()
    };
    let answer = reviews
        .create(&PostParams::default(), &review)
        .await
        .expect("a review");
    let status = answer.status.expect("a status");
    (status.allowed, status.reason)
}

#[tokio::test]
async fn self_subject_access_reviews_answer_as_the_requests_are_authorized() {
    let story = GuestClusterStory::new();
    let (client, _) = in_process(story.supervisor(Release::V8_0_3));
    let binding = format!(
        "RBAC: allowed by RoleBinding \"{SERVICE_ACCOUNT}/{NAMESPACE}\" of Role \"{SERVICE_ACCOUNT}\" \
         to ServiceAccount \"{SERVICE_ACCOUNT}/{NAMESPACE}\""
    );
    for resource in ["virtualmachines", "virtualmachinesetresourcepolicies"] {
        for verb in ["get", "list"] {
            assert_eq!(
                review(&client, verb, resource, NAMESPACE).await,
                (true, Some(binding.clone()))
            );
        }
        for verb in ["watch", "update", "patch"] {
            assert_eq!(
                review(&client, verb, resource, NAMESPACE).await,
                (false, None),
                "{verb} {resource}"
            );
        }
        assert_eq!(
            review(&client, "list", resource, "team-b").await,
            (false, None)
        );
        assert_eq!(review(&client, "list", resource, "").await, (false, None));
    }
}

#[tokio::test]
async fn a_cluster_without_vm_operator_answers_404_under_the_group_and_omits_it_from_discovery() {
    let story = GuestClusterStory::new();
    // Asked by a cluster-admin: the real server authorizes before it routes, so the chart's
    // ServiceAccount, granted nothing in the group, would get 403, not the 404 under test.
    let mut guest = story.guest();
    guest.rbac = Rbac::cluster_admin();
    let (client, _) = in_process(guest);
    let groups = client.list_api_groups().await.expect("the group list");
    assert!(groups.groups.iter().all(|group| group.name != GROUP));
    assert!(groups.groups.iter().any(|group| group.name == "policy"));
    let Err(error) = discovery::group(&client, GROUP).await else {
        panic!("no such group");
    };
    assert!(matches!(error, kube::Error::Discovery(_)), "{error:?}");
    for version in [Version::V1alpha2, Version::V1alpha5] {
        let error = namespaced(&client, Resource::VirtualMachines, version, NAMESPACE)
            .list(&ListParams::default())
            .await
            .expect_err("no such resource");
        let kube::Error::Api(status) = error else {
            panic!("an API error: {error:?}");
        };
        // The last handler's plain text, which kube turns into a Status of its own.
        assert_eq!(status.code, 404);
        assert!(
            status.message.contains("404 page not found"),
            "{}",
            status.message
        );
    }
    let error = client
        .list_api_group_resources(Version::V1alpha2.api_version())
        .await
        .expect_err("no such group version");
    assert!(
        matches!(&error, kube::Error::Api(status) if status.code == 404),
        "{error:?}"
    );
}

#[tokio::test]
async fn a_version_newer_than_the_release_is_not_served() {
    let (client, _) = in_process(GuestClusterStory::new().supervisor(Release::V8_0_3));
    let error = namespaced(
        &client,
        Resource::VirtualMachines,
        Version::V1alpha3,
        NAMESPACE,
    )
    .list(&ListParams::default())
    .await
    .expect_err("v1alpha3 is not served by 8.0.3");
    assert!(
        matches!(&error, kube::Error::Api(status) if status.code == 404),
        "{error:?}"
    );
}

#[tokio::test]
async fn a_list_continued_after_a_vm_moved_still_reads_the_snapshot_its_first_page_fixed() {
    let story = GuestClusterStory::new();
    let (client, state) = in_process(story.supervisor(Release::V9_1));
    let api = namespaced(
        &client,
        Resource::VirtualMachines,
        Version::V1alpha5,
        NAMESPACE,
    );
    let first = api
        .list(&ListParams::default().limit(1))
        .await
        .expect("the first page");
    let token = first.metadata.continue_.clone().expect("more to come");
    let last = story.vms.last().expect("a VM");
    state
        .lock()
        .expect("the fake's state")
        .move_virtual_machine(NAMESPACE, &last.name, &story.hosts[2]);
    let rest = api
        .list(&ListParams::default().continue_token(&token))
        .await
        .expect("the rest");
    assert_eq!(
        rest.metadata.resource_version,
        first.metadata.resource_version
    );
    let moved = rest
        .items
        .iter()
        .find(|vm| vm.metadata.name.as_deref() == Some(last.name.as_str()))
        .expect("the moved VM in the rest");
    assert_eq!(moved.data["status"]["nodeName"], last.host.as_str());
    let now = api.get(&last.name).await.expect("the VM now");
    assert_eq!(now.data["status"]["nodeName"], story.hosts[2].as_str());
}

#[test]
fn a_guest_and_its_supervisor_started_from_one_story_agree_on_names_and_bios_uuids() {
    let story = GuestClusterStory::new();
    let guest = FakeApiServer::start(story.guest());
    let supervisor = FakeApiServer::start(story.supervisor(Release::V8_0_3));
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .expect("a runtime");
    let (nodes, vms) = runtime.block_on(async {
        let nodes = Api::<Node>::all(guest.client())
            .list(&ListParams::default())
            .await
            .expect("the guest's nodes");
        let vms = namespaced(
            &supervisor.client(),
            Resource::VirtualMachines,
            Version::V1alpha2,
            NAMESPACE,
        )
        .list(&ListParams::default())
        .await
        .expect("the Supervisor's VMs");
        (nodes, vms)
    });
    assert_eq!(nodes.items.len(), vms.items.len());
    for node in &nodes.items {
        let name = node.metadata.name.as_deref().expect("a name");
        let vm = vms
            .items
            .iter()
            .find(|vm| vm.metadata.name.as_deref() == Some(name))
            .unwrap_or_else(|| panic!("a VM named like node {name}"));
        let bios_uuid = vm.data["status"]["biosUUID"].as_str().expect("a BIOS uuid");
        let spec = node.spec.as_ref().expect("a spec");
        assert_eq!(
            spec.provider_id.as_deref(),
            Some(format!("vsphere://{bios_uuid}").as_str())
        );
        let info = node.status.as_ref().and_then(|s| s.node_info.as_ref());
        assert_eq!(info.map(|i| i.system_uuid.as_str()), Some(bios_uuid));
    }
    let on_first_host = vms
        .items
        .iter()
        .filter(|vm| vm.data["status"]["host"] == story.hosts[0].as_str())
        .count();
    assert_eq!(on_first_host, 2, "two workers share the first host");
}

/// The names of the objects `selector` selects, read two a page.
async fn selected(api: &Api<DynamicObject>, selector: &str) -> Vec<String> {
    let mut params = ListParams::default().labels(selector).limit(2);
    let mut names = Vec::new();
    loop {
        let page = api.list(&params).await.expect("a page");
        assert!(page.metadata.remaining_item_count.is_none(), "{selector}");
        names.extend(page.items.into_iter().filter_map(|vm| vm.metadata.name));
        match page.metadata.continue_ {
            Some(token) if !token.is_empty() => params = params.continue_token(&token),
            _ => return names,
        }
    }
}

#[tokio::test]
async fn a_label_selector_keeps_the_selected_objects_on_full_pages() {
    let story = GuestClusterStory::new();
    let (client, _) = in_process(story.supervisor(Release::V9_0_1));
    let api = namespaced(
        &client,
        Resource::VirtualMachines,
        Version::V1alpha4,
        NAMESPACE,
    );
    let workers: Vec<String> = story.workers().map(|vm| vm.name.clone()).collect();
    let control_plane = vec![format!("{}-control-plane-m8v2q", story.cluster)];
    let deployment = format!(
        "cluster.x-k8s.io/deployment-name={}",
        GuestClusterStory::DEPLOYMENT
    );
    assert_eq!(selected(&api, &deployment).await, workers);
    assert_eq!(
        selected(&api, "capv.vmware.com/cluster.role in (controlplane)").await,
        control_plane
    );
    assert_eq!(
        selected(&api, "!cluster.x-k8s.io/deployment-name").await,
        control_plane
    );
    assert_eq!(
        selected(
            &api,
            "capv.vmware.com/cluster.name=tkc-1,capv.vmware.com/cluster.role!=controlplane"
        )
        .await,
        workers
    );
    assert!(
        selected(&api, "capv.vmware.com/cluster.name=tkc-2")
            .await
            .is_empty()
    );

    let nodes = Api::<Node>::all(in_process(story.guest()).0)
        .list(&ListParams::default().labels("node-role.kubernetes.io/control-plane"))
        .await
        .expect("the guest's control plane nodes");
    let names: Vec<String> = nodes
        .items
        .into_iter()
        .filter_map(|n| n.metadata.name)
        .collect();
    assert_eq!(names, control_plane);

    let error = api
        .list(&ListParams::default().labels("cluster name=tkc-1"))
        .await
        .expect_err("not a selector");
    assert!(
        matches!(&error, kube::Error::Api(status) if status.code == 400 && status.reason == "BadRequest"),
        "{error:?}"
    );
}

#[tokio::test]
async fn a_vm_not_placed_yet_has_no_host_field_and_a_deleted_one_is_gone() {
    let mut story = GuestClusterStory::new();
    let placed = story.vms[1].name.clone();
    story.vms[0].host = String::new();
    let unplaced = story.vms[0].name.clone();
    let (client, state) = in_process(story.supervisor(Release::V9_0_0));
    let api = namespaced(
        &client,
        Resource::VirtualMachines,
        Version::V1alpha3,
        NAMESPACE,
    );
    let vm = api.get(&unplaced).await.expect("the VM");
    assert!(vm.data["status"].get("host").is_none());
    assert_eq!(
        vm.data["status"]["biosUUID"],
        story.vms[0].bios_uuid.as_str()
    );

    let before = api.list(&ListParams::default()).await.expect("a list");
    let deleted = state
        .lock()
        .expect("the fake's state")
        .delete_vm_operator_object(Resource::VirtualMachines, NAMESPACE, &placed);
    assert!(deleted);
    let after = api.list(&ListParams::default()).await.expect("a list");
    assert_eq!(after.items.len() + 1, before.items.len());
    assert_ne!(
        after.metadata.resource_version,
        before.metadata.resource_version
    );
    let error = api.get(&placed).await.expect_err("deleted");
    assert!(
        matches!(&error, kube::Error::Api(status) if status.code == 404),
        "{error:?}"
    );
}
