//! The vCenter session: connect and log in, observe the inventory, change DRS rules, log out.
//!
//! A session that expires (or is terminated) between calls is renewed once per call: the call
//! that failed with `NotAuthenticated` is sent again after a new `Login`. Objects that live in a
//! session (the container view, a paging token) die with it, so an observation that saw the
//! session renewed runs once more from the start.

use std::time::{Duration, Instant};

use tokio_util::sync::CancellationToken;

use crate::inventory::{Inventory, RuleKind};

use super::observe::{self, ClusterIndex, Observation};
use super::soap::{
    self, AntiAffinityRule, Fault, MoRef, ObjectContent, PropertySpec, Request, Response,
    RuleOperation, ServiceContent, Value,
};
use super::transport::Transport;
use super::{ConnectionConfig, Credentials, Error};

/// How long [`Client::apply_rule_changes`] waits for vCenter to finish the reconfiguration.
pub const TASK_WAIT_LIMIT: Duration = Duration::from_secs(120);

/// Objects per page asked of the property collector. vCenter may page smaller; it then returns a
/// token to continue with.
const MAX_OBJECTS_PER_PAGE: u32 = 1000;

/// Longest pause between two polls of a running task.
const MAX_POLL_INTERVAL: Duration = Duration::from_secs(2);

/// A change to one VM-VM anti-affinity rule of a cluster. VMs are named as observed; the client
/// resolves them to managed object references from its last observation.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum RuleChange {
    Add {
        name: String,
        vms: Vec<String>,
    },
    /// Replaces the rule with this key. vcsim matches edits by name, so keep the name.
    Edit {
        key: i32,
        name: String,
        vms: Vec<String>,
    },
    Remove {
        key: i32,
    },
}

/// A logged-in vCenter session. Call [`Client::logout`] when done: vCenter limits concurrent
/// sessions and an abandoned one lingers until its idle timeout.
pub struct Client {
    transport: Transport,
    content: ServiceContent,
    credentials: Credentials,
    /// Incremented by every re-login.
    session_generation: u64,
    /// Clusters of the last observation, to address rule changes.
    index: Vec<ClusterIndex>,
    /// Ends waits for tasks when cancelled (the run was asked to stop).
    stop_waiting: CancellationToken,
}

impl std::fmt::Debug for Client {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Client")
            .field("server", &self.transport.server())
            .field("credentials", &self.credentials)
            .field("api_version", &self.content.api_version)
            .finish_non_exhaustive()
    }
}

impl Client {
    /// Reads the service content and logs in.
    pub async fn connect(config: &ConnectionConfig) -> Result<Client, Error> {
        let mut transport = Transport::new(config)?;
        let service_instance = MoRef::new("ServiceInstance", "ServiceInstance");
        let request = soap::retrieve_service_content();
        let method = request.method;
        let response = transport.call(request, &service_instance).await?;
        let content = transport.read(method, &response, soap::service_content)?;
        transport.set_api_version(&content.api_version);

        let mut client = Client {
            transport,
            content,
            credentials: config.credentials.clone(),
            session_generation: 0,
            index: Vec::new(),
            stop_waiting: CancellationToken::new(),
        };
        client.login().await?;
        tracing::info!(
            server = client.transport.server(),
            product = %client.content.full_name,
            api_version = %client.content.api_version,
            user = client.credentials.username(),
            "logged in to vCenter"
        );
        Ok(client)
    }

    async fn login(&mut self) -> Result<(), Error> {
        // A stale cookie would make vCenter refuse the login ("already logged in").
        self.transport.clear_session();
        let session_manager = self.content.session_manager.clone();
        let request = soap::login(
            &session_manager,
            self.credentials.username(),
            self.credentials.password(),
        );
        match self.transport.call(request, &session_manager).await {
            Ok(_) => Ok(()),
            Err(Error::Fault { fault, .. }) => Err(Error::Login {
                server: self.transport.server().to_string(),
                username: self.credentials.username().to_string(),
                fault,
            }),
            Err(error) => Err(error),
        }
    }

    /// One call, renewing the session once if it expired.
    async fn call(&mut self, request: Request, this: &MoRef) -> Result<Response, Error> {
        match self.transport.call(request.clone(), this).await {
            Err(error) if error.is_not_authenticated() => {
                tracing::info!(
                    server = self.transport.server(),
                    method = request.method,
                    "vCenter session expired; logging in again"
                );
                self.login().await?;
                self.session_generation += 1;
                self.transport.call(request, this).await
            }
            other => other,
        }
    }

    /// Observes every cluster of the given datacenters and cluster names (empty = all): hosts,
    /// VMs (templates excluded), rules and DRS configuration.
    pub async fn observe(
        &mut self,
        datacenters: &[String],
        clusters: &[String],
    ) -> Result<Inventory, Error> {
        let started = Instant::now();
        let generation = self.session_generation;
        let observation = match self.observe_once(datacenters, clusters).await {
            Err(error) if self.session_generation != generation => {
                tracing::info!(
                    error = %error,
                    "vCenter session was renewed during observation; observing again"
                );
                self.observe_once(datacenters, clusters).await?
            }
            other => other?,
        };
        self.index = observation.index;
        let inventory = observation.inventory;
        tracing::info!(
            clusters = inventory.clusters.len(),
            hosts = inventory
                .clusters
                .iter()
                .map(|c| c.hosts.len())
                .sum::<usize>(),
            vms = inventory
                .clusters
                .iter()
                .map(|c| c.vms.len())
                .sum::<usize>(),
            elapsed_ms = started.elapsed().as_millis() as u64,
            "observed vCenter inventory"
        );
        Ok(inventory)
    }

    async fn observe_once(
        &mut self,
        datacenters: &[String],
        clusters: &[String],
    ) -> Result<Observation, Error> {
        let view_manager = self.content.view_manager.clone();
        let request = soap::create_container_view(
            &view_manager,
            &self.content.root_folder,
            observe::VIEW_KINDS,
        );
        let method = request.method;
        let response = self.call(request, &view_manager).await?;
        let view = self
            .transport
            .read(method, &response, soap::returned_reference)?;

        let objects = self.retrieve_all(&view).await;
        // Views live as long as the session; destroy this one so runs do not pile them up.
        if let Err(error) = self.call(soap::destroy_view(&view), &view).await {
            tracing::debug!(error = %error, view = %view, "failed to destroy container view");
        }
        observe::build(&objects?, datacenters, clusters)
    }

    /// `RetrievePropertiesEx`, then `ContinueRetrievePropertiesEx` while vCenter returns a token.
    async fn retrieve_all(&mut self, view: &MoRef) -> Result<Vec<ObjectContent>, Error> {
        let collector = self.content.property_collector.clone();
        let request = soap::retrieve_properties(
            &collector,
            observe::PROPERTIES,
            view,
            observe::TRAVERSAL,
            Some(MAX_OBJECTS_PER_PAGE),
        );
        let method = request.method;
        let response = self.call(request, &collector).await?;
        let first = self
            .transport
            .read(method, &response, soap::retrieve_result)?;
        let mut objects = first.objects;
        let mut token = first.token;
        let mut pages = 1;
        while let Some(current) = token.take() {
            let request = soap::continue_retrieve_properties(&collector, &current);
            let method = request.method;
            let page = match self.call(request, &collector).await.and_then(|response| {
                self.transport
                    .read(method, &response, soap::retrieve_result)
            }) {
                Ok(page) => page,
                Err(error) => {
                    // Free the server-side result set; the error that matters is the first one.
                    let cancel = soap::cancel_retrieve_properties(&collector, &current);
                    if let Err(cancel_error) = self.transport.call(cancel, &collector).await {
                        tracing::debug!(error = %cancel_error, "failed to cancel paged retrieval");
                    }
                    return Err(error);
                }
            };
            objects.extend(page.objects);
            token = page.token;
            pages += 1;
        }
        tracing::debug!(
            objects = objects.len(),
            pages,
            "retrieved inventory properties"
        );
        Ok(objects)
    }

    /// Applies all `changes` to the rules of `cluster` in one `ReconfigureComputeResource_Task`
    /// and waits for it. Owned rules are always sent enabled, optional (not mandatory) and
    /// user-created. An empty slice makes no call at all.
    pub async fn apply_rule_changes(
        &mut self,
        cluster: &str,
        changes: &[RuleChange],
    ) -> Result<(), Error> {
        if changes.is_empty() {
            return Ok(());
        }
        let index = self.cluster_index(cluster)?;
        let operations = changes
            .iter()
            .map(|change| operation(index, change))
            .collect::<Result<Vec<_>, _>>()?;
        let cluster_ref = index.moref.clone();

        let request = soap::reconfigure_rules(&cluster_ref, &operations);
        let method = request.method;
        let response = self.call(request, &cluster_ref).await?;
        let task = self
            .transport
            .read(method, &response, soap::returned_reference)?;
        self.wait_for_task(&task, method, &cluster_ref).await?;

        let count = |f: fn(&RuleChange) -> bool| changes.iter().filter(|c| f(c)).count();
        tracing::info!(
            cluster,
            added = count(|c| matches!(c, RuleChange::Add { .. })),
            edited = count(|c| matches!(c, RuleChange::Edit { .. })),
            removed = count(|c| matches!(c, RuleChange::Remove { .. })),
            "reconfigured DRS rules"
        );
        // Removed keys are gone: a second removal is refused here rather than by vCenter.
        if let Ok(position) = self.cluster_position(cluster) {
            for change in changes {
                if let RuleChange::Remove { key } = change {
                    self.index[position].rules.remove(key);
                }
            }
        }
        Ok(())
    }

    fn cluster_position(&self, cluster: &str) -> Result<usize, Error> {
        let matches: Vec<usize> = self
            .index
            .iter()
            .enumerate()
            .filter(|(_, c)| c.name == cluster)
            .map(|(i, _)| i)
            .collect();
        match matches.as_slice() {
            [] => Err(Error::UnknownCluster {
                cluster: cluster.to_string(),
            }),
            [only] => Ok(*only),
            several => Err(Error::AmbiguousCluster {
                cluster: cluster.to_string(),
                datacenters: several
                    .iter()
                    .map(|i| self.index[*i].datacenter.clone())
                    .collect(),
            }),
        }
    }

    fn cluster_index(&self, cluster: &str) -> Result<&ClusterIndex, Error> {
        self.cluster_position(cluster).map(|i| &self.index[i])
    }

    /// From now on, waits for vCenter tasks end (with [`Error::TaskNotAwaited`]) when `token` is
    /// cancelled. Requests themselves are bounded by the request timeout.
    pub fn stop_waiting_on(&mut self, token: CancellationToken) {
        self.stop_waiting = token;
    }

    /// Polls `info.state` until the task succeeds or fails, at most [`TASK_WAIT_LIMIT`], or
    /// until the run stops waiting.
    async fn wait_for_task(
        &mut self,
        task: &MoRef,
        method: &'static str,
        object: &MoRef,
    ) -> Result<(), Error> {
        let stop_waiting = self.stop_waiting.clone();
        tokio::select! {
            biased;
            () = stop_waiting.cancelled() => Err(Error::TaskNotAwaited {
                task: task.to_string(),
                method,
                object: object.to_string(),
            }),
            outcome = self.poll_task(task, method, object) => outcome,
        }
    }

    async fn poll_task(
        &mut self,
        task: &MoRef,
        method: &'static str,
        object: &MoRef,
    ) -> Result<(), Error> {
        const PATHS: &[PropertySpec<'static>] = &[PropertySpec {
            kind: "Task",
            paths: &["info.state", "info.error"],
        }];
        let collector = self.content.property_collector.clone();
        let started = Instant::now();
        let mut pause = Duration::from_millis(100);
        loop {
            let request = soap::retrieve_properties(&collector, PATHS, task, &[], None);
            let read_method = request.method;
            let response = self.call(request, &collector).await?;
            let result = self
                .transport
                .read(read_method, &response, soap::retrieve_result)?;
            let info = result.objects.first();
            let state = info
                .and_then(|o| o.property("info.state"))
                .and_then(Value::as_str);
            match state {
                Some("success") => return Ok(()),
                Some("error") => {
                    let fault = match info.and_then(|o| o.property("info.error")) {
                        Some(Value::Fault(fault)) => fault.clone(),
                        _ => Fault {
                            name: "MethodFault".to_string(),
                            message: String::new(),
                        },
                    };
                    return Err(Error::Task {
                        task: task.to_string(),
                        method,
                        object: object.to_string(),
                        fault,
                    });
                }
                None => {
                    return Err(Error::MissingProperty {
                        object: task.to_string(),
                        property: "info.state",
                        fault: None,
                    });
                }
                // queued or running
                Some(_) => {}
            }
            let waited = started.elapsed();
            if waited >= TASK_WAIT_LIMIT {
                return Err(Error::TaskTimeout {
                    task: task.to_string(),
                    method,
                    object: object.to_string(),
                    waited,
                });
            }
            tokio::time::sleep(pause.min(TASK_WAIT_LIMIT - waited)).await;
            pause = (pause * 2).min(MAX_POLL_INTERVAL);
        }
    }

    /// Ends the session. Failures are logged, not returned: there is nothing left to do about
    /// them, and the session expires on its own.
    pub async fn logout(mut self) {
        let session_manager = self.content.session_manager.clone();
        match self
            .transport
            .call(soap::logout(&session_manager), &session_manager)
            .await
        {
            Ok(_) => tracing::debug!(server = self.transport.server(), "logged out of vCenter"),
            Err(error) => tracing::warn!(
                server = self.transport.server(),
                error = %error,
                "failed to log out of vCenter"
            ),
        }
        self.transport.clear_session();
    }
}

/// The wire operation for one change, with VMs and rules resolved from the observation.
fn operation(index: &ClusterIndex, change: &RuleChange) -> Result<RuleOperation, Error> {
    let owned_rule = |key, name: &str, vms: &[String], rule_uuid| {
        Ok(AntiAffinityRule {
            key,
            name: name.to_string(),
            enabled: true,
            mandatory: false,
            user_created: true,
            rule_uuid,
            vms: resolve_vms(index, vms)?,
        })
    };
    match change {
        RuleChange::Add { name, vms } => Ok(RuleOperation::Add(owned_rule(None, name, vms, None)?)),
        RuleChange::Edit { key, name, vms } => {
            let known = editable_rule(index, *key)?;
            Ok(RuleOperation::Edit(owned_rule(
                Some(*key),
                name,
                vms,
                known.rule_uuid.clone(),
            )?))
        }
        RuleChange::Remove { key } => {
            editable_rule(index, *key)?;
            Ok(RuleOperation::Remove { key: *key })
        }
    }
}

/// Only user-created VM anti-affinity rules are edited or removed, whatever the caller asks.
fn editable_rule(index: &ClusterIndex, key: i32) -> Result<&observe::KnownRule, Error> {
    let known = index.rules.get(&key).ok_or_else(|| Error::UnknownRule {
        key,
        cluster: index.name.clone(),
    })?;
    if known.kind != RuleKind::AntiAffinity || !known.user_created {
        return Err(Error::ProtectedRule {
            key,
            name: known.name.clone(),
            cluster: index.name.clone(),
        });
    }
    Ok(known)
}

fn resolve_vms(index: &ClusterIndex, names: &[String]) -> Result<Vec<MoRef>, Error> {
    let mut references: Vec<MoRef> = Vec::with_capacity(names.len());
    for name in names {
        let reference = match index.vms.get(name).map(Vec::as_slice) {
            None | Some([]) => {
                return Err(Error::UnknownVm {
                    vm: name.clone(),
                    cluster: index.name.clone(),
                });
            }
            Some([only]) => only,
            Some(several) => {
                return Err(Error::AmbiguousVm {
                    vm: name.clone(),
                    cluster: index.name.clone(),
                    count: several.len(),
                });
            }
        };
        if !references.contains(reference) {
            references.push(reference.clone());
        }
    }
    Ok(references)
}

#[cfg(test)]
mod tests {
    use std::collections::BTreeMap;

    use super::*;
    use crate::vsphere::observe::KnownRule;

    /// The client is used from a multi-threaded runtime: its futures must be `Send`.
    #[allow(dead_code)]
    fn futures_are_send(client: &mut Client) {
        fn send<T: Send>(_: T) {}
        send(client.observe(&[], &[]));
        send(client.apply_rule_changes("c", &[]));
    }

    #[test]
    fn errors_cross_threads() {
        fn send_sync<T: Send + Sync + 'static>() {}
        send_sync::<Error>();
    }

    fn index() -> ClusterIndex {
        let vm = |value: &str| MoRef::new("VirtualMachine", value);
        ClusterIndex {
            name: "lab".to_string(),
            datacenter: "dc".to_string(),
            moref: MoRef::new("ClusterComputeResource", "domain-c1"),
            vms: BTreeMap::from([
                ("worker-a".to_string(), vec![vm("vm-1")]),
                ("worker-b".to_string(), vec![vm("vm-2")]),
                ("twin".to_string(), vec![vm("vm-3"), vm("vm-4")]),
            ]),
            rules: BTreeMap::from([
                (
                    5,
                    KnownRule {
                        name: "owned".to_string(),
                        kind: RuleKind::AntiAffinity,
                        user_created: true,
                        rule_uuid: Some("uuid-5".to_string()),
                    },
                ),
                (
                    6,
                    KnownRule {
                        name: "system".to_string(),
                        kind: RuleKind::AntiAffinity,
                        user_created: false,
                        rule_uuid: None,
                    },
                ),
            ]),
        }
    }

    #[test]
    fn owned_rules_are_sent_enabled_optional_and_user_created() {
        let change = RuleChange::Edit {
            key: 5,
            name: "owned".to_string(),
            vms: vec![
                "worker-b".to_string(),
                "worker-a".to_string(),
                "worker-b".to_string(),
            ],
        };
        let RuleOperation::Edit(rule) = operation(&index(), &change).expect("valid") else {
            panic!("an edit");
        };
        assert_eq!(rule.key, Some(5));
        assert!(rule.enabled && !rule.mandatory && rule.user_created);
        assert_eq!(rule.rule_uuid.as_deref(), Some("uuid-5"));
        assert_eq!(
            rule.vms,
            [
                MoRef::new("VirtualMachine", "vm-2"),
                MoRef::new("VirtualMachine", "vm-1")
            ],
            "order kept, duplicates dropped"
        );
    }

    #[test]
    fn ambiguous_and_unknown_vm_names_are_errors_naming_them() {
        let add = |vm: &str| RuleChange::Add {
            name: "r".to_string(),
            vms: vec!["worker-a".to_string(), vm.to_string()],
        };
        let error = operation(&index(), &add("twin")).expect_err("two VMs are named twin");
        assert_eq!(
            error.to_string(),
            "vm name twin is ambiguous in cluster lab: 2 VMs have it"
        );
        let error = operation(&index(), &add("ghost")).expect_err("no such VM");
        assert_eq!(error.to_string(), "vm ghost is not in cluster lab");
    }

    #[test]
    fn system_rules_and_unknown_keys_are_never_edited_or_removed() {
        let error = operation(&index(), &RuleChange::Remove { key: 6 }).expect_err("system");
        assert_eq!(
            error.to_string(),
            r#"rule "system" (key 6) of cluster lab is not a user-created VM anti-affinity rule"#
        );
        let error = operation(&index(), &RuleChange::Remove { key: 9 }).expect_err("unknown");
        assert_eq!(
            error.to_string(),
            "rule key 9 is not a rule of cluster lab in the last observation"
        );
    }
}
