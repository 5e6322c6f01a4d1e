//! `demo`: the plan of a built-in scenario, so a newcomer sees in seconds what the tool does.
//!
//! Three stories. The seed lab (the default): three ESXi hosts; DRS moved worker-b's VM onto the
//! host of worker-a, where the other replica of a web Deployment runs; a three-replica database
//! keeps to one replica per node, which DRS knows nothing about yet. The guest cluster: a VKS
//! guest cluster whose hosts come from its Supervisor's VM Operator objects, without a vCenter
//! account; DRS moved a worker next to another against their cluster module. The stretched
//! cluster: two sites of three hosts (DRS host groups); DRS moved two of a StatefulSet's three
//! node VMs into the site of the third; its text report ends with `what-if --site-fails` of
//! that site.

use std::io::Write as _;
use std::process::ExitCode;

use chrono::{DateTime, Utc};

use super::Error;
use crate::cli::DemoStory;
use crate::plan::what_if;
use crate::report::what_if::WhatIfReport;
use crate::report::{Mode, OutputFormat, Report};
use crate::{plan, policy, snapshot};

pub const SNAPSHOT: &str = include_str!("demo/snapshot.yaml");
pub const POLICY: &str = include_str!("demo/policy.yaml");
pub const GUEST_SNAPSHOT: &str = include_str!("demo/guest-cluster/snapshot.yaml");
pub const GUEST_POLICY: &str = include_str!("demo/guest-cluster/policy.yaml");
pub const STRETCHED_SNAPSHOT: &str = include_str!("demo/stretched-cluster/snapshot.yaml");
pub const STRETCHED_POLICY: &str = include_str!("demo/stretched-cluster/policy.yaml");

/// The site whose failure the stretched-cluster story asks about: where DRS crowded the
/// StatefulSet.
const STRETCHED_SITE: &str = "site-a-hosts";

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
        DemoStory::StretchedCluster => (
            STRETCHED_SNAPSHOT,
            "demo/stretched-cluster/policy.yaml",
            STRETCHED_POLICY,
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
        std::io::stdout()
            .write_all(intro(chosen).as_bytes())
            .map_err(Error::Output)?;
    }
    report.print(output).map_err(Error::Output)?;
    // The text tells the whole story; JSON and HTML stay one plan document each.
    if chosen == DemoStory::StretchedCluster && output == OutputFormat::Text {
        let answer = site_fails(&snapshot, &policy)?;
        std::io::stdout()
            .write_all(format!("\n$ what-if --site-fails {STRETCHED_SITE}\n\n").as_bytes())
            .map_err(Error::Output)?;
        answer.print(output).map_err(Error::Output)?;
    }
    Ok(ExitCode::SUCCESS)
}

/// The stretched-cluster story's `what-if --site-fails`, on the cluster as it is now.
fn site_fails(
    snapshot: &snapshot::Snapshot,
    policy: &policy::Policy,
) -> Result<WhatIfReport, Error> {
    let scenario = what_if::Scenario::SiteFails(STRETCHED_SITE.to_string());
    let answer = what_if::what_if(snapshot, policy, &scenario).map_err(Error::WhatIf)?;
    Ok(WhatIfReport::new(Mode::Plan, answer))
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
        DemoStory::StretchedCluster => {
            "Demo: a stretched cluster. Two sites of three ESXi hosts, the DRS host groups\n\
             site-a-hosts and site-b-hosts (vsphere.sites), one worker VM a host until DRS moved\n\
             worker-4 and worker-5 from site-b-hosts into site-a-hosts, against their should rule.\n\
             The three pg replicas spread over sites (maxSkew 1 on vsphere-descheduler.io/site):\n\
             all three now run in site-a-hosts, whose loss would take every one. The site label\n\
             follows the VMs and the newest replica moves to site-b-hosts. Then: what if\n\
             site-a-hosts fails?\n\n"
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

    /// The stretched-cluster story is the what-if golden's cluster (its header comment aside).
    #[test]
    fn the_stretched_cluster_story_is_the_site_fails_golden() {
        let golden =
            include_str!("../../tests/fixtures/what-if/site-fails-stretched-cluster/snapshot.yaml");
        let documents = |text: &str| -> String {
            text.lines()
                .filter(|line| !line.starts_with('#'))
                .collect::<Vec<_>>()
                .join("\n")
        };
        assert_eq!(documents(STRETCHED_SNAPSHOT), documents(golden));
        let policy =
            include_str!("../../tests/fixtures/what-if/site-fails-stretched-cluster/policy.yaml");
        assert_eq!(STRETCHED_POLICY, policy);
    }

    #[test]
    fn the_stretched_cluster_story_relabels_the_sites_moves_a_replica_and_answers_the_site() {
        let (snapshot, policy) = story(DemoStory::StretchedCluster).expect("the story reads");
        let plan = plan::plan(&snapshot, &policy);
        let evicted: Vec<&str> = plan.evictions.iter().map(|e| e.pod.as_str()).collect();
        assert_eq!(evicted, ["pg-2"]);
        let site_key = policy
            .vsphere
            .labels
            .site
            .clone()
            .expect("sites set the label");
        let relabelled: Vec<&str> = plan
            .label_changes
            .iter()
            .filter(|change| change.key == site_key)
            .map(|change| change.node.as_str())
            .collect();
        assert_eq!(relabelled, ["worker-4", "worker-5"]);
        let exposure = plan.exposure.expect("an inventory");
        let sites = exposure.sites.expect("sites are configured");
        assert_eq!((sites.before.all, sites.after.majority), (1, 1));
        let answer = site_fails(&snapshot, &policy).expect("site-a-hosts is a site");
        let pg = &answer.answer.as_ref().expect("an answer").workloads[0];
        assert_eq!(pg.outcome.lost, Some(3));
        assert_eq!(
            pg.comes_back
                .map(|fates| (fates.restarted, fates.stay_down)),
            Some((2, 1))
        );
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
