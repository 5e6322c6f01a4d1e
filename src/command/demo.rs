//! `demo`: the plan of a built-in scenario, so a newcomer sees in seconds what the tool does.
//!
//! The scenario is the seed lab: three ESXi hosts; DRS moved worker-b's VM onto the host of
//! worker-a, where the other replica of a web Deployment runs; a three-replica database keeps
//! to one replica per node, which DRS knows nothing about yet.

use std::process::ExitCode;

use chrono::{DateTime, Utc};

use super::Error;
use crate::report::{Mode, OutputFormat, Report};
use crate::{plan, policy, snapshot};

pub const SNAPSHOT: &str = include_str!("demo/snapshot.yaml");
pub const POLICY: &str = include_str!("demo/policy.yaml");

/// The demo's fixed "now", so its output never changes.
fn now() -> DateTime<Utc> {
    DateTime::parse_from_rfc3339("2026-11-21T09:00:00Z")
        .expect("a valid timestamp")
        .to_utc()
}

/// The scenario's snapshot and policy, as the command reads them (and tests of what it shows).
pub fn scenario() -> Result<(snapshot::Snapshot, policy::Policy), Error> {
    let policy = policy::load_str("demo/policy.yaml", POLICY)
        .map_err(Error::Policy)?
        .policy;
    let snapshot = snapshot::from_str(SNAPSHOT, now()).map_err(Error::Snapshot)?;
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

pub fn execute(output: OutputFormat) -> Result<ExitCode, Error> {
    let (snapshot, policy) = scenario()?;
    let plan = plan::plan(&snapshot, &policy);
    let mut report = Report::planned(Mode::Plan, plan);
    if output == OutputFormat::Html {
        report.place(&snapshot, &policy);
    }
    if output == OutputFormat::Text {
        use std::io::Write;
        let intro = "Demo: a built-in lab. Three ESXi hosts (esxi-41, esxi-42, esxi-43), one worker VM each,\n\
                     until DRS moved worker-b onto esxi-41, next to worker-a. The two demo-httpd replicas\n\
                     must not share a host; the three pg replicas must not share a node; the three\n\
                     control-plane VMs must stay on distinct hosts (a node group).\n\n";
        std::io::stdout()
            .write_all(intro.as_bytes())
            .map_err(Error::Output)?;
    }
    report.print(output).map_err(Error::Output)?;
    Ok(ExitCode::SUCCESS)
}
