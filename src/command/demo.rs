//! `demo`: the plan of a built-in scenario, so a newcomer sees in seconds what the tool does.
//!
//! Two stories. The seed lab (the default): three ESXi hosts; DRS moved worker-b's VM onto the
//! host of worker-a, where the other replica of a web Deployment runs; a three-replica database
//! keeps to one replica per node, which DRS knows nothing about yet. The guest cluster: a VKS
//! guest cluster whose hosts come from its Supervisor's VM Operator objects, without a vCenter
//! account; DRS moved a worker next to another against their cluster module.

use std::process::ExitCode;

use chrono::{DateTime, Utc};

use super::Error;
use crate::cli::DemoStory;
use crate::report::{Mode, OutputFormat, Report};
use crate::{plan, policy, snapshot};

pub const SNAPSHOT: &str = include_str!("demo/snapshot.yaml");
pub const POLICY: &str = include_str!("demo/policy.yaml");
pub const GUEST_SNAPSHOT: &str = include_str!("demo/guest-cluster/snapshot.yaml");
pub const GUEST_POLICY: &str = include_str!("demo/guest-cluster/policy.yaml");

/// The demo's fixed "now", so its output never changes.
fn now() -> DateTime<Utc> {
    DateTime::parse_from_rfc3339("2026-11-21T09:00:00Z")
        .expect("a valid timestamp")
        .to_utc()
}

/// The seed lab's snapshot and policy, as the command reads them, for tests of what it shows.
#[cfg(test)]
pub fn scenario() -> Result<(snapshot::Snapshot, policy::Policy), Error> {
    story(DemoStory::SeedLab)
}

/// A story's snapshot and policy.
pub fn story(story: DemoStory) -> Result<(snapshot::Snapshot, policy::Policy), Error> {
    let (snapshot_text, policy_name, policy_text) = match story {
        DemoStory::SeedLab => (SNAPSHOT, "demo/policy.yaml", POLICY),
        DemoStory::GuestCluster => (
            GUEST_SNAPSHOT,
            "demo/guest-cluster/policy.yaml",
            GUEST_POLICY,
        ),
    };
    let policy = policy::load_str(policy_name, policy_text)
        .map_err(Error::Policy)?
        .policy;
    let snapshot = snapshot::from_str(snapshot_text, now()).map_err(Error::Snapshot)?;
    Ok((snapshot, policy))
}

/// The demo's report, placed for the HTML view, as `demo --output html` prints it.
#[cfg(test)]
pub fn placed_report() -> Report {
    let (snapshot, policy) = scenario().expect("the demo scenario reads");
    let mut report = Report::planned(Mode::Plan, plan::plan(&snapshot, &policy));
    report.place(&snapshot, &policy);
    report
}

pub fn execute(chosen: DemoStory, output: OutputFormat) -> Result<ExitCode, Error> {
    let (snapshot, policy) = story(chosen)?;
    let plan = plan::plan(&snapshot, &policy);
    let mut report = Report::planned(Mode::Plan, plan);
    if output == OutputFormat::Html {
        report.place(&snapshot, &policy);
    }
    if output == OutputFormat::Text {
        use std::io::Write;
        std::io::stdout()
            .write_all(intro(chosen).as_bytes())
            .map_err(Error::Output)?;
    }
    report.print(output).map_err(Error::Output)?;
    Ok(ExitCode::SUCCESS)
}

/// What the text report of a story opens with.
fn intro(story: DemoStory) -> &'static str {
    match story {
        DemoStory::SeedLab => {
            "Demo: a built-in lab. Three ESXi hosts (esxi-41, esxi-42, esxi-43), one worker VM each,\n\
             until DRS moved worker-b onto esxi-41, next to worker-a. The two demo-httpd replicas\n\
             must not share a host; the three pg replicas must not share a node; the three\n\
             control-plane VMs must stay on distinct hosts (a node group).\n\n"
        }
        DemoStory::GuestCluster => {
            "Demo: a VKS guest cluster, tkc-1, without a vCenter account. Its ESXi hosts come from\n\
             VM Operator's VirtualMachines in Supervisor namespace team-a (vsphere.source:\n\
             supervisor). DRS moved worker 9pnvt onto esxi-01, next to worker 7xk2p, although their\n\
             cluster module asks it to keep them apart (soft anti-affinity): both web replicas now\n\
             share a host. The host label follows the VM and the newer replica moves; no DRS rule\n\
             is written without a vCenter account (a run would name any it wanted).\n\n"
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The guest-cluster story is the planner golden's: the same objects (the golden's header
    /// comments aside).
    #[test]
    fn the_guest_cluster_story_is_the_vks_golden() {
        let golden =
            include_str!("../../tests/fixtures/plan/vks-guest-cluster-drs-moved/snapshot.yaml");
        let documents = |text: &str| -> String {
            text.lines()
                .filter(|line| !line.starts_with('#'))
                .collect::<Vec<_>>()
                .join("\n")
        };
        assert_eq!(documents(GUEST_SNAPSHOT), documents(golden));
    }

    #[test]
    fn the_guest_cluster_story_relabels_and_moves_the_newer_web_replica() {
        let (snapshot, policy) = story(DemoStory::GuestCluster).expect("the story reads");
        let plan = plan::plan(&snapshot, &policy);
        let evicted: Vec<String> = plan
            .evictions
            .iter()
            .map(|e| format!("{}/{}", e.namespace, e.pod))
            .collect();
        assert_eq!(evicted.len(), 1, "{evicted:?}");
        assert!(evicted[0].contains("web"), "{evicted:?}");
        assert!(
            plan.label_changes
                .iter()
                .any(|change| change.key == policy::DEFAULT_HOST_LABEL),
            "{:?}",
            plan.label_changes
        );
        // One replica is left where the other was: no rule is wanted, and none could be written.
        assert!(plan.drs_batches.iter().all(|batch| batch.writes.is_none()));
    }
}
