//! The Supervisor's API server, through the Kubernetes adapter: connected with the settings of
//! [`super::access`], it reads VM Operator's objects of one namespace and answers `check`'s
//! access reviews. What it calls is listed in `api_calls.txt` beside this file.

use crate::kube::{self, AccessDecision, ApiCall, VmOperatorObjects};

use super::access::{Access, Settings};
use super::error::Error;
use super::listed::topology_of;
use crate::vm_operator::Topology;

/// Every call made on the Supervisor, as RBAC sees it, in the format of
/// `src/kube/api_calls.txt` (`Role`: in the Supervisor namespace).
pub const SUPERVISOR_CALLS: &str = include_str!("api_calls.txt");

/// What one read of the Supervisor gave: the objects as listed (a snapshot records them) and
/// the topology they make.
pub struct SupervisorRead {
    pub objects: VmOperatorObjects,
    pub topology: Topology,
}

/// Connects with `settings` and reads the topology ([`Supervisor::read_topology`]).
pub async fn observe(settings: &Settings, guest_api_server: &str) -> Result<SupervisorRead, Error> {
    let supervisor = Supervisor::connect(settings).await?;
    supervisor.read_topology(Some(guest_api_server)).await
}

/// A connection to the Supervisor, scoped to one namespace.
pub struct Supervisor {
    client: kube::Client,
    /// The API server's URL, as messages and the report's target name it.
    pub server: String,
    pub namespace: String,
}

impl std::fmt::Debug for Supervisor {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Supervisor")
            .field("server", &self.server)
            .field("namespace", &self.namespace)
            .finish_non_exhaustive()
    }
}

impl Supervisor {
    /// A client of the Supervisor the settings name; the namespace is the settings' or, with a
    /// kubeconfig, its context's.
    pub async fn connect(settings: &Settings) -> Result<Supervisor, Error> {
        let (config, server, context_namespace) = match &settings.access {
            Access::Token(token) => {
                let uri: http::Uri = token
                    .server
                    .as_str()
                    .parse()
                    .expect("a checked URL is a URI");
                let mut config = ::kube::Config::new(uri);
                config.root_cert = token
                    .ca
                    .as_ref()
                    .map(|certificates| certificates.iter().map(|c| c.to_vec()).collect());
                config.auth_info.token = Some(token.token.clone());
                (config, token.server.to_string(), None)
            }
            Access::Kubeconfig(selection) => {
                let (config, endpoint) = kube::load_target(selection)
                    .await
                    .map_err(|source| Error::Connect(kube::Error::Config { source }))?;
                (config, endpoint.api_server, Some(endpoint.namespace))
            }
        };
        let namespace = settings
            .namespace
            .clone()
            .or(context_namespace)
            .ok_or(Error::NoNamespace)?;
        let client = kube::Client::from_config(config, settings.timeout).map_err(Error::Connect)?;
        Ok(Supervisor {
            client,
            server,
            namespace,
        })
    }

    /// The VirtualMachines and VirtualMachineSetResourcePolicies of the namespace, in the
    /// version the Supervisor prefers. `guest_api_server` (the cluster's own API server) tells a
    /// Supervisor address that is in fact the guest cluster's from any other server without VM
    /// Operator.
    pub async fn read(&self, guest_api_server: Option<&str>) -> Result<VmOperatorObjects, Error> {
        let version = match self.client.vm_operator_version().await {
            Ok(version) => version,
            Err(kube::Error::VmOperatorAbsent { .. })
                if guest_api_server.is_some_and(|guest| same_server(guest, &self.server)) =>
            {
                return Err(Error::GuestCluster {
                    server: self.server.clone(),
                });
            }
            Err(error @ kube::Error::VmOperatorAbsent { .. }) => {
                return Err(Error::NotSupervisor {
                    server: self.server.clone(),
                    source: error,
                });
            }
            Err(error) => return Err(self.read_error(error)),
        };
        self.client
            .list_vm_operator(&self.namespace, &version)
            .await
            .map_err(|error| self.read_error(error))
    }

    /// [`Supervisor::read`], and the topology the objects make: what runs, snapshots and
    /// `check` read alike.
    pub async fn read_topology(
        &self,
        guest_api_server: Option<&str>,
    ) -> Result<SupervisorRead, Error> {
        let objects = self.read(guest_api_server).await?;
        let topology = topology_of(&objects)?;
        Ok(SupervisorRead { objects, topology })
    }

    fn read_error(&self, source: kube::Error) -> Error {
        Error::Read {
            server: self.server.clone(),
            namespace: self.namespace.clone(),
            source: Box::new(source),
        }
    }

    /// Whether this identity may make each call of [`SUPERVISOR_CALLS`] in the namespace.
    pub async fn review_access(&self) -> Vec<(ApiCall, Result<AccessDecision, kube::Error>)> {
        let calls =
            kube::parse_call_list(SUPERVISOR_CALLS).expect("the Supervisor's call list parses");
        let mut answers = Vec::with_capacity(calls.len());
        for call in calls {
            let answer = self.client.review_access(&call, &self.namespace).await;
            answers.push((call, answer));
        }
        answers
    }
}

/// Whether two API server URLs name one server (scheme, host and port; a trailing `/` or path
/// aside).
fn same_server(a: &str, b: &str) -> bool {
    let key = |url: &str| {
        reqwest::Url::parse(url).ok().map(|url| {
            (
                url.scheme().to_string(),
                url.host_str().map(str::to_ascii_lowercase),
                url.port_or_known_default(),
            )
        })
    };
    matches!((key(a), key(b)), (Some(x), Some(y)) if x == y)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn one_server_whatever_its_spelling() {
        assert!(same_server(
            "https://10.0.0.10:6443",
            "https://10.0.0.10:6443/"
        ));
        assert!(same_server(
            "https://SV.example.com",
            "https://sv.example.com:443/"
        ));
        assert!(!same_server(
            "https://10.0.0.10:6443",
            "https://10.0.0.11:6443"
        ));
        assert!(!same_server("https://10.0.0.10:6443", "not a url"));
    }

    #[test]
    fn the_call_list_grants_get_and_list_of_both_kinds_in_the_namespace_only() {
        let calls = kube::parse_call_list(SUPERVISOR_CALLS).expect("parses");
        let lines: Vec<String> = calls
            .iter()
            .map(|call| {
                format!(
                    "{} {} {} {:?}",
                    call.group,
                    call.rule_resource(),
                    call.verb,
                    call.grant
                )
            })
            .collect();
        assert_eq!(
            lines,
            [
                "vmoperator.vmware.com virtualmachines get Role",
                "vmoperator.vmware.com virtualmachines list Role",
                "vmoperator.vmware.com virtualmachinesetresourcepolicies get Role",
                "vmoperator.vmware.com virtualmachinesetresourcepolicies list Role",
                "authorization.k8s.io selfsubjectaccessreviews create Everyone",
            ]
        );
    }
}
