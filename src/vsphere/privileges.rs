//! The vCenter privileges this client needs, held to the code: [`PRIVILEGES`] is
//! `privileges.txt`, one line per SOAP method, privilege and object, which the tests compare with
//! what the simulator served and the preflight checks against a live account.

use serde::Serialize;

/// `privileges.txt`: lines of SOAP method, privilege id, object kind and what needs it, `#`
/// comments. The vSphere tests hold the methods the client sends to it, both ways.
pub const PRIVILEGES: &str = include_str!("privileges.txt");

/// Where vCenter checks a privilege.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum ObjectKind {
    /// vCenter's root folder, where methods of the service's singletons are checked.
    RootFolder,
    Datacenter,
    /// The host folders between a datacenter and its clusters.
    HostFolder,
    Cluster,
    Host,
    Vm,
}

/// What a privilege is needed for.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum NeededFor {
    /// Every command that reads vCenter, dry runs included.
    Observe,
    /// Only runs that write DRS rules.
    DrsRuleWrites,
    /// Only the preflight check.
    Preflight,
}

/// One line of [`PRIVILEGES`].
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct PrivilegeLine {
    pub method: &'static str,
    pub privilege: &'static str,
    pub object: ObjectKind,
    pub needed_for: NeededFor,
}

/// Why a line of the list cannot be read.
#[derive(Debug, PartialEq, Eq, thiserror::Error)]
#[error("privileges.txt line {line}: {problem}")]
pub struct LineError {
    pub line: usize,
    pub problem: String,
}

/// The lines of [`PRIVILEGES`], in file order.
pub fn privilege_lines() -> Vec<PrivilegeLine> {
    parse(PRIVILEGES).expect("privileges.txt is well-formed, as its unit test checks")
}

fn parse(text: &'static str) -> Result<Vec<PrivilegeLine>, LineError> {
    let mut lines = Vec::new();
    for (index, line) in text.lines().enumerate() {
        let line = line.trim();
        if line.is_empty() || line.starts_with('#') {
            continue;
        }
        let error = |problem: String| LineError {
            line: index + 1,
            problem,
        };
        let columns: Vec<&'static str> = line.split_whitespace().collect();
        let [method, privilege, object, needed_for] = columns[..] else {
            return Err(error(format!(
                "four columns expected, found {}",
                columns.len()
            )));
        };
        lines.push(PrivilegeLine {
            method,
            privilege,
            object: object_kind(object).ok_or_else(|| error(format!("unknown object {object}")))?,
            needed_for: needed_for_value(needed_for)
                .ok_or_else(|| error(format!("unknown needed-for {needed_for}")))?,
        });
    }
    Ok(lines)
}

fn object_kind(text: &str) -> Option<ObjectKind> {
    Some(match text {
        "root-folder" => ObjectKind::RootFolder,
        "datacenter" => ObjectKind::Datacenter,
        "host-folder" => ObjectKind::HostFolder,
        "cluster" => ObjectKind::Cluster,
        "host" => ObjectKind::Host,
        "vm" => ObjectKind::Vm,
        _ => return None,
    })
}

fn needed_for_value(text: &str) -> Option<NeededFor> {
    Some(match text {
        "observe" => NeededFor::Observe,
        "drs-rule-writes" => NeededFor::DrsRuleWrites,
        "preflight" => NeededFor::Preflight,
        _ => return None,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_list_is_well_formed_and_names_each_method_privilege_and_object_once() {
        let lines = parse(PRIVILEGES).expect("well-formed");
        let mut seen = std::collections::BTreeSet::new();
        for line in &lines {
            assert!(
                seen.insert((line.method, line.privilege, line.object, line.needed_for)),
                "listed twice: {line:?}"
            );
            // Privilege ids are dotted names: group, then the privilege (System.Read).
            assert!(
                line.privilege.split('.').count() >= 2
                    && line
                        .privilege
                        .chars()
                        .all(|c| c.is_ascii_alphanumeric() || c == '.'),
                "{line:?}"
            );
        }
        assert!(
            lines
                .iter()
                .any(|l| l.privilege == "Host.Inventory.EditCluster"
                    && l.method == "ReconfigureComputeResource_Task"
                    && l.object == ObjectKind::Cluster
                    && l.needed_for == NeededFor::DrsRuleWrites)
        );
    }

    #[test]
    fn a_malformed_line_is_reported_with_its_number() {
        assert_eq!(
            parse("# comment\nLogin System.Anonymous root-folder\n"),
            Err(LineError {
                line: 2,
                problem: "four columns expected, found 3".to_string()
            })
        );
        assert_eq!(
            parse("Login System.Anonymous everywhere observe\n")
                .expect_err("unknown object")
                .to_string(),
            "privileges.txt line 1: unknown object everywhere"
        );
    }
}
