//! The vCenter session: connect and log in, observe the inventory, change DRS rules, log out.
//!
//! A session that expires (or is terminated) between calls is renewed once per call: the call
//! that failed with `NotAuthenticated` is sent again after a new `Login`. Objects that live in a
//! session (the container view, a paging token) die with it, so an observation that saw the
//! session renewed runs once more from the start.

use std::time::{Duration, Instant};

use secrecy::ExposeSecret;
use tokio_util::sync::CancellationToken;

use crate::inventory::Inventory;
use crate::plan::RuleWrite;

use super::observe;
use super::soap::{
    self, AntiAffinityRule, EntityPrivileges, Fault, MoRef, ObjectContent, PropertySpec,
    PropertyValue, Request, Response, RuleOperation, ServiceContent, UserSession,
};
use super::transport::Transport;
use super::{ConnectionConfig, Credentials, Error};

/// How long [`VcenterClient::apply_rule_changes`] waits for vCenter to finish the
/// reconfiguration.
pub const TASK_WAIT_LIMIT: Duration = Duration::from_secs(120);

/// Objects per page asked of the property collector. vCenter may page smaller; it then returns a
/// token to continue with.
const MAX_OBJECTS_PER_PAGE: u32 = 1000;

/// Longest pause between two polls of a running task.
const MAX_POLL_INTERVAL: Duration = Duration::from_secs(2);

/// A logged-in vCenter session. Call [`VcenterClient::logout`] when done: vCenter limits
/// concurrent sessions and an abandoned one lingers until its idle timeout.
pub struct VcenterClient {
    transport: Transport,
    content: ServiceContent,
    credentials: Credentials,
    /// The session of the last `Login`; `None` before the first.
    session: Option<UserSession>,
    /// Incremented by every re-login.
    session_generation: u64,
    /// Ends waits for tasks when cancelled (the run was asked to stop).
    stop_waiting: CancellationToken,
}

impl std::fmt::Debug for VcenterClient {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Client")
            .field("server", &self.transport.server())
            .field("credentials", &self.credentials)
            .field("api_version", &self.content.api_version)
            .finish_non_exhaustive()
    }
}

impl VcenterClient {
    /// Reads the service content and logs in.
    pub async fn connect(config: &ConnectionConfig) -> Result<VcenterClient, Error> {
        let mut client = VcenterClient::reach(config).await?;
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

    /// Reads the service content, which needs no session: what vCenter is, and where its
    /// singletons are. [`VcenterClient::login`] makes the client usable.
    pub(super) async fn reach(config: &ConnectionConfig) -> Result<VcenterClient, Error> {
        let mut transport = Transport::new(config)?;
        let service_instance = MoRef::new("ServiceInstance", "ServiceInstance");
        let request = soap::retrieve_service_content();
        let method = request.method;
        let response = transport.call(request, &service_instance).await?;
        let content = transport.read(method, &response, soap::service_content)?;
        transport.set_api_version(&content.api_version);
        Ok(VcenterClient {
            transport,
            content,
            credentials: config.credentials.clone(),
            session: None,
            session_generation: 0,
            stop_waiting: CancellationToken::new(),
        })
    }

    /// The service content read by [`VcenterClient::reach`].
    pub(super) fn content(&self) -> &ServiceContent {
        &self.content
    }

    /// `host[:port]` of vCenter.
    pub(super) fn server(&self) -> &str {
        self.transport.server()
    }

    /// The user name vCenter gave the session (its own spelling, e.g. `VSPHERE.LOCAL\user`,
    /// which permissions name); `None` before logging in.
    pub(super) fn session_user(&self) -> Option<&str> {
        self.session
            .as_ref()
            .map(|session| session.user_name.as_str())
    }

    pub(super) async fn login(&mut self) -> Result<(), Error> {
        // A stale cookie would make vCenter refuse the login ("already logged in").
        self.transport.clear_session();
        let session_manager = self.content.session_manager.clone();
        let request = soap::login(
            &session_manager,
            self.credentials.username(),
            self.credentials.password(),
        );
        let method = request.method;
        match self.transport.call(request, &session_manager).await {
            Ok(response) => {
                self.session = Some(self.transport.read(method, &response, soap::user_session)?);
                Ok(())
            }
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
    /// VMs (templates excluded), rules, and DRS and HA configuration.
    pub async fn observe(
        &mut self,
        datacenters: &[String],
        clusters: &[String],
    ) -> Result<Inventory, Error> {
        let started = Instant::now();
        let generation = self.session_generation;
        let inventory = match self.observe_once(datacenters, clusters).await {
            Err(error) if self.session_generation != generation => {
                tracing::info!(
                    error = %error,
                    "vCenter session was renewed during observation; observing again"
                );
                self.observe_once(datacenters, clusters).await?
            }
            other => other?,
        };
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
    ) -> Result<Inventory, Error> {
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

    /// Applies all `changes` to the rules of the cluster with managed object id `cluster`
    /// (`domain-c7`) in one `ReconfigureComputeResource_Task` and waits for it. Rules are always
    /// sent enabled, optional (not mandatory) and user-created. An empty slice makes no call at
    /// all.
    pub async fn apply_rule_changes(
        &mut self,
        cluster: &str,
        changes: &[RuleWrite],
    ) -> Result<(), Error> {
        if changes.is_empty() {
            return Ok(());
        }
        let operations: Vec<RuleOperation> = changes.iter().map(operation).collect();
        let cluster_ref = MoRef::new("ClusterComputeResource", cluster);

        let request = soap::reconfigure_rules(&cluster_ref, &operations);
        let method = request.method;
        let response = self.call(request, &cluster_ref).await?;
        let task = self
            .transport
            .read(method, &response, soap::returned_reference)?;
        self.wait_for_task(&task, method, &cluster_ref).await?;

        let count = |f: fn(&RuleWrite) -> bool| changes.iter().filter(|c| f(c)).count();
        tracing::info!(
            cluster,
            added = count(|c| matches!(c, RuleWrite::Add { .. })),
            edited = count(|c| matches!(c, RuleWrite::Edit { .. })),
            removed = count(|c| matches!(c, RuleWrite::Remove { .. })),
            "reconfigured DRS rules"
        );
        Ok(())
    }

    /// Whether this session holds each of `privileges` on each of `entities`
    /// (`HasPrivilegeOnEntities`). vCenter checks `System.Read` on every entity asked about.
    pub(super) async fn privileges_on(
        &mut self,
        entities: &[MoRef],
        privileges: &[&str],
    ) -> Result<Vec<EntityPrivileges>, Error> {
        let manager =
            self.content
                .authorization_manager
                .clone()
                .ok_or(Error::NoAuthorizationManager {
                    server: self.transport.server().to_string(),
                })?;
        // The request names the session; a renewed session is a new one, so ask again for it.
        let generation = self.session_generation;
        let mut answers = self.ask_privileges(&manager, entities, privileges).await;
        if self.session_generation != generation {
            answers = self.ask_privileges(&manager, entities, privileges).await;
        }
        answers
    }

    async fn ask_privileges(
        &mut self,
        manager: &MoRef,
        entities: &[MoRef],
        privileges: &[&str],
    ) -> Result<Vec<EntityPrivileges>, Error> {
        let session = self
            .session
            .as_ref()
            .map(|session| session.key.expose_secret())
            .unwrap_or_default();
        let request = soap::has_privilege_on_entities(manager, entities, session, privileges);
        let method = request.method;
        let response = self.call(request, manager).await?;
        self.transport
            .read(method, &response, soap::entity_privileges)
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
                .and_then(PropertyValue::as_str);
            match state {
                Some("success") => return Ok(()),
                Some("error") => {
                    let fault = match info.and_then(|o| o.property("info.error")) {
                        Some(PropertyValue::Fault(fault)) => fault.clone(),
                        _ => Fault::new("MethodFault", ""),
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

/// The wire operation for one change.
fn operation(change: &RuleWrite) -> RuleOperation {
    let rule = |key, name: &str, rule_uuid: &Option<String>, vms: &[String]| {
        // A VM named twice would be one member; vCenter need not see it twice.
        let mut references: Vec<MoRef> = Vec::with_capacity(vms.len());
        for vm in vms {
            let reference = MoRef::new("VirtualMachine", vm);
            if !references.contains(&reference) {
                references.push(reference);
            }
        }
        AntiAffinityRule {
            key,
            name: name.to_string(),
            enabled: true,
            mandatory: false,
            user_created: true,
            rule_uuid: rule_uuid.clone(),
            vms: references,
        }
    };
    match change {
        RuleWrite::Add { name, vms } => RuleOperation::Add(rule(None, name, &None, vms)),
        RuleWrite::Edit {
            key,
            name,
            rule_uuid,
            vms,
        } => RuleOperation::Edit(rule(Some(*key), name, rule_uuid, vms)),
        RuleWrite::Remove { key } => RuleOperation::Remove { key: *key },
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The client is used from a multi-threaded runtime: its futures must be `Send`.
    #[allow(dead_code)]
    fn futures_are_send(client: &mut VcenterClient) {
        fn send<T: Send>(_: T) {}
        send(client.observe(&[], &[]));
        send(client.apply_rule_changes("domain-c1", &[]));
    }

    #[test]
    fn errors_cross_threads() {
        fn send_sync<T: Send + Sync + 'static>() {}
        send_sync::<Error>();
    }

    #[test]
    fn owned_rules_are_sent_enabled_optional_and_user_created_with_their_uuid() {
        let change = RuleWrite::Edit {
            key: 5,
            name: "owned".to_string(),
            rule_uuid: Some("uuid-5".to_string()),
            vms: vec!["vm-2".to_string(), "vm-1".to_string(), "vm-2".to_string()],
        };
        let RuleOperation::Edit(rule) = operation(&change) else {
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
}
