//! [`API_CALLS`](super::API_CALLS) read as typed lines: what RBAC sees of each call this tool
//! makes, and which role grants it. `check` asks the API server about each line; the chart
//! tests and the end-to-end tests hold the chart's RBAC and the binary's requests to the same
//! text.

use std::fmt;

use crate::snapshot::METRICS_API_VERSION;

/// Who grants a call.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Grant {
    /// The chart's ClusterRole: any object, cluster-wide.
    ClusterRole,
    /// The chart's Role in the lock namespace, for any name.
    Role,
    /// The chart's Role in the lock namespace, for this one object only.
    RoleNamed(String),
    /// Every authenticated user, through the API server's own ClusterRole `system:basic-user`;
    /// the chart grants nothing for it.
    Everyone,
}

/// One line of the call list: a request as the API server's authorizer sees it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ApiCall {
    /// The API group, `""` for the core group.
    pub group: String,
    pub resource: String,
    /// `eviction` of `pods/eviction`; `None` for the resource itself.
    pub subresource: Option<String>,
    pub verb: String,
    pub grant: Grant,
}

impl ApiCall {
    /// `pods/eviction`: the resource as RBAC rules name it.
    pub fn rule_resource(&self) -> String {
        match &self.subresource {
            Some(subresource) => format!("{}/{subresource}", self.resource),
            None => self.resource.clone(),
        }
    }

    /// Whether only a policy that reads actual usage makes this call (metrics-server's API).
    pub fn needs_metrics(&self) -> bool {
        METRICS_API_VERSION
            .split_once('/')
            .is_some_and(|(group, _)| group == self.group)
    }

    /// The object name the grant is restricted to, if any.
    pub fn name(&self) -> Option<&str> {
        match &self.grant {
            Grant::RoleNamed(name) => Some(name),
            _ => None,
        }
    }

    /// Whether the grant holds in the lock namespace only.
    pub fn is_namespaced(&self) -> bool {
        matches!(self.grant, Grant::Role | Grant::RoleNamed(_))
    }
}

impl fmt::Display for ApiCall {
    /// `create pods/eviction`, `get leases.coordination.k8s.io vsphere-descheduler`.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{} {}", self.verb, self.rule_resource())?;
        if !self.group.is_empty() {
            write!(f, " ({})", self.group)?;
        }
        if let Some(name) = self.name() {
            write!(f, " {name}")?;
        }
        Ok(())
    }
}

/// Why a line of the call list does not read.
#[derive(Debug, thiserror::Error, PartialEq, Eq)]
pub enum CallListError {
    #[error("line {line} of the call list has {columns} columns, not 4")]
    Columns { line: usize, columns: usize },
    #[error("line {line} of the call list names the unknown grant {grant:?}")]
    Grant { line: usize, grant: String },
}

/// The calls of a call list's text (see [`API_CALLS`](super::API_CALLS) for its columns).
pub fn parse(text: &str) -> Result<Vec<ApiCall>, CallListError> {
    let mut calls = Vec::new();
    for (index, line) in text.lines().enumerate() {
        let line_number = index + 1;
        let line = line.trim();
        if line.is_empty() || line.starts_with('#') {
            continue;
        }
        let columns: Vec<&str> = line.split_whitespace().collect();
        let [group, resource, verb, grant] = columns.as_slice() else {
            return Err(CallListError::Columns {
                line: line_number,
                columns: columns.len(),
            });
        };
        let grant = match *grant {
            "ClusterRole" => Grant::ClusterRole,
            "Role" => Grant::Role,
            "Everyone" => Grant::Everyone,
            other => match other.strip_prefix("Role/") {
                Some(name) if !name.is_empty() => Grant::RoleNamed(name.to_string()),
                _ => {
                    return Err(CallListError::Grant {
                        line: line_number,
                        grant: other.to_string(),
                    });
                }
            },
        };
        let (resource, subresource) = match resource.split_once('/') {
            Some((resource, subresource)) => (resource, Some(subresource.to_string())),
            None => (*resource, None),
        };
        calls.push(ApiCall {
            group: if *group == "core" {
                String::new()
            } else {
                group.to_string()
            },
            resource: resource.to_string(),
            subresource,
            verb: verb.to_string(),
            grant,
        });
    }
    Ok(calls)
}

/// The calls of [`API_CALLS`](super::API_CALLS), which is part of the binary.
pub fn api_calls() -> Vec<ApiCall> {
    parse(super::API_CALLS).expect("the call list compiled into the binary reads (unit-tested)")
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::kube::LEASE_NAME;

    #[test]
    fn the_call_list_is_well_formed_and_restricts_only_the_run_lock_and_its_history_by_name() {
        let calls = parse(super::super::API_CALLS).expect("the call list reads");
        assert!(!calls.is_empty());
        for call in &calls {
            assert!(
                matches!(
                    call.verb.as_str(),
                    "get" | "list" | "create" | "update" | "patch"
                ),
                "{call:?}"
            );
            if let Grant::RoleNamed(name) = &call.grant {
                let expected = match call.resource.as_str() {
                    "configmaps" => crate::snapshot::history::config_map_name(LEASE_NAME),
                    _ => LEASE_NAME.to_string(),
                };
                assert_eq!(*name, expected, "{call:?}");
            }
        }
        let unique: std::collections::BTreeSet<_> = calls
            .iter()
            .map(|call| (&call.group, call.rule_resource(), &call.verb))
            .collect();
        assert_eq!(unique.len(), calls.len(), "each call once");
    }

    #[test]
    fn only_the_access_review_itself_is_granted_to_everyone() {
        let everyone: Vec<String> = api_calls()
            .iter()
            .filter(|call| call.grant == Grant::Everyone)
            .map(ToString::to_string)
            .collect();
        assert_eq!(
            everyone,
            ["create selfsubjectaccessreviews (authorization.k8s.io)"]
        );
    }

    #[test]
    fn lines_read_into_groups_subresources_and_grants() {
        let calls = parse(
            "# comment\n\ncore pods/eviction create ClusterRole\n\
             coordination.k8s.io leases get Role/the-lock\n",
        )
        .expect("reads");
        assert_eq!(calls[0].group, "");
        assert_eq!(calls[0].resource, "pods");
        assert_eq!(calls[0].subresource.as_deref(), Some("eviction"));
        assert_eq!(calls[0].to_string(), "create pods/eviction");
        assert!(!calls[0].is_namespaced());
        assert_eq!(calls[1].grant, Grant::RoleNamed("the-lock".into()));
        assert_eq!(
            calls[1].to_string(),
            "get leases (coordination.k8s.io) the-lock"
        );
        assert!(calls[1].is_namespaced());
        assert_eq!(
            parse("core nodes list\n"),
            Err(CallListError::Columns {
                line: 1,
                columns: 3
            })
        );
        assert_eq!(
            parse("core nodes list Role/\n"),
            Err(CallListError::Grant {
                line: 1,
                grant: "Role/".into()
            })
        );
    }

    #[test]
    fn only_metrics_server_calls_wait_for_a_policy_that_reads_usage() {
        let metrics: Vec<String> = api_calls()
            .iter()
            .filter(|call| call.needs_metrics())
            .map(ToString::to_string)
            .collect();
        assert_eq!(
            metrics,
            ["list nodes (metrics.k8s.io)", "list pods (metrics.k8s.io)"]
        );
    }
}
