//! vsphere-descheduler: keeps Kubernetes workloads spread across the ESXi hosts under their node
//! VMs, by labelling nodes with their host, evicting pods that break host-level anti-affinity or
//! topology spread, and writing DRS anti-affinity rules so vSphere keeps the node VMs apart.

pub mod cause;
pub mod check;
pub mod cli;
pub mod command;
pub mod connection;
pub mod duration;
pub mod encoding;
pub mod finding;
pub mod footprint;
pub mod hash;
pub mod identity;
pub mod inventory;
pub mod kube;
pub mod live;
pub mod logging;
pub mod metrics;
pub mod outcome;
pub mod plan;
pub mod policy;
pub mod position;
pub mod report;
pub mod run;
pub mod settings;
pub mod sites;
pub mod snapshot;
pub mod stack;
pub mod supervisor;
pub mod text;
pub mod topology;
pub mod vm_operator;
pub mod vsphere;
mod yaml_error;
mod yaml_tree;

/// An error and its causes on one line (`error: cause: cause`). Errors keep their sources typed
/// until a line is written, and the chain is flattened in three places only: a failure with its
/// kind (`cause::Failure::of`, which reports, check items, the preflight and log lines carry), a
/// file that failed as a whole (`report::findings::Finding::failed`), and a policy value a check
/// refused (`policy::decode::Decoder::refused_at`). `main` prints its own chain, one cause per
/// line.
pub fn error_chain(error: &dyn std::error::Error) -> String {
    let mut text = error.to_string();
    let mut source = error.source();
    while let Some(cause) = source {
        text.push_str(": ");
        text.push_str(&cause.to_string());
        source = cause.source();
    }
    text
}
