//! `snapshot -o FILE`: records when it was made (a `SnapshotInfo` with `recordedAt`, which
//! `plan` and `what-if` plan at by default), nodes, pods, PodDisruptionBudgets, namespaces and PriorityClasses (each kind a
//! `v1 List` of objects pruned to the fields planning reads, see `snapshot::prune`), the run
//! lock's Lease when it keeps an eviction history (its name and that annotation only), the
//! metrics.k8s.io NodeMetrics and PodMetrics when the policy reads actual usage (as `run` lists
//! them), and the observed `VSphereInventory` into one file that `plan --snapshot` reads. JSON when the file
//! name ends in `.json`, YAML otherwise. The file is written next to its destination and
//! renamed into place, so a failed run leaves no half file.

use std::io::Write;
use std::path::Path;
use std::process::ExitCode;

use serde::Serialize;
use serde_json::json;
use tracing::warn;

use super::Error;
use crate::cli::SnapshotArgs;
use crate::inventory::{self, Inventory};
use crate::kube::{self, RawMetrics, RawObjects};
use crate::live::{self, ClusterApi, Hosts, HostsError, Recording};
use crate::report::{OutputFormat, SnapshotSummary};
use crate::settings::RunConfig;
use crate::snapshot::SnapshotInfo;
use crate::snapshot::prune::Pruned;

pub fn execute(args: &SnapshotArgs, output: OutputFormat) -> Result<ExitCode, Error> {
    let config = RunConfig::snapshot(args).map_err(|e| Error::Config(Box::new(e)))?;
    for warning in &config.warnings {
        warn!("{warning}");
    }
    let runtime = super::runtime()?;
    let recorded = runtime.block_on(async {
        let (kubernetes, endpoint) = kube::Client::connect(&config.kubernetes, config.timeout)
            .await
            .map_err(|e| Error::Kubernetes(Box::new(e)))?;
        let target = config.target(endpoint);
        target.announce();
        let cluster = ClusterApi {
            client: &kubernetes,
            api_server: &target.api_server,
        };
        let read = live::read::<Recording>(&config, cluster, Some(&config.lock)).await;
        // Taken once every list is in: no object recorded is younger than this instant, so a
        // plan at it judges each pod's age as at least zero.
        let info = SnapshotInfo {
            recorded_at: chrono::Utc::now(),
        };
        let hosts = record_hosts(read.hosts).await;
        // Unlike metrics, a history that could not be read is not recorded as missing: a plan
        // of the file would then pace as if nothing had been evicted, and evict what the run
        // (which fails closed) would not. The error names the Lease; `--lock-namespace` points
        // to where the chart runs.
        let history = read
            .history
            .unwrap_or(Ok(Vec::new()))
            .map_err(|error| Error::Kubernetes(Box::new(error)))?;
        let metrics = match read.metrics {
            Ok(metrics) => metrics,
            // Recorded as a run sees it: planning the file then skips as `run` would.
            Err(error @ kube::Error::MetricsUnavailable { .. }) => {
                warn!("{}; the snapshot records no metrics", error.failure());
                Some(RawMetrics::default())
            }
            Err(error) => return Err(Error::Kubernetes(Box::new(error))),
        };
        Ok::<_, Error>((
            info,
            read.objects.map_err(|e| Error::Kubernetes(Box::new(e)))?,
            metrics,
            history,
            hosts?,
            target,
        ))
    })?;
    let (info, objects, metrics, history, (hosts, inventory), target) = recorded;
    let leases: Vec<Pruned> = history;
    let documents = documents(&info, &objects, &leases, metrics.as_ref(), hosts);
    write(&args.output_file, &documents).map_err(|source| Error::WriteSnapshot {
        path: args.output_file.clone(),
        source,
    })?;
    let summary = SnapshotSummary {
        file: args.output_file.display().to_string(),
        nodes: objects.nodes.len(),
        pods: objects.pods.len(),
        pod_disruption_budgets: objects.pdbs.len(),
        namespaces: objects.namespaces.len(),
        priority_classes: objects.priority_classes.len(),
        vsphere_clusters: inventory.as_ref().map_or(0, |i| i.clusters.len()),
        vms: inventory.map_or(0, |i| i.clusters.iter().map(|c| c.vms.len()).sum()),
        node_metrics: metrics.as_ref().map(|m| m.nodes.len()),
        pod_metrics: metrics.as_ref().map(|m| m.pods.len()),
        eviction_history: (!leases.is_empty())
            .then(|| format!("{}/{}", args.lock_namespace, kube::LEASE_NAME)),
        target,
    };
    summary.print(output).map_err(Error::Output)?;
    Ok(ExitCode::SUCCESS)
}

/// The documents that record what the hosts' source gave: a `VSphereInventory`, or the VM
/// Operator objects as `v1 List`s (as `kubectl get vm,virtualmachinesetresourcepolicy -o yaml`
/// prints them); and the inventory, counted in the summary. The vCenter session is ended.
async fn record_hosts(
    hosts: Result<Hosts, HostsError>,
) -> Result<(Vec<serde_json::Value>, Option<Inventory>), Error> {
    match hosts {
        Ok(Hosts::Vcenter { session, inventory }) => {
            live::log_out(*session).await;
            let document = json!({
                "apiVersion": inventory::API_VERSION,
                "kind": inventory::KIND,
                "clusters": inventory.clusters,
            });
            Ok((vec![document], Some(inventory)))
        }
        Ok(Hosts::Supervisor(read)) => Ok((
            vec![
                json!(list(&read.objects.virtual_machines)),
                json!(list(&read.objects.resource_policies)),
            ],
            Some(read.topology.inventory),
        )),
        Ok(Hosts::NodeLabel) => Ok((Vec::new(), None)),
        Err(HostsError::Vcenter(error)) => Err(Error::Vsphere(error)),
        Err(HostsError::Supervisor(error)) => Err(Error::Supervisor(Box::new(error))),
    }
}

/// A `v1 List` of already typed objects (each carries its own apiVersion and kind).
#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct List<'a, T> {
    api_version: &'static str,
    kind: &'static str,
    items: &'a [T],
}

fn list<T>(items: &[T]) -> List<'_, T> {
    List {
        api_version: "v1",
        kind: "List",
        items,
    }
}

/// One document of the file, written as it is.
#[derive(Serialize)]
#[serde(untagged)]
enum Document<'a> {
    Value(serde_json::Value),
    List(List<'a, Pruned>),
}

/// The file's documents, one sequence for both formats: when it was recorded, the Kubernetes
/// kinds, the Lease when it holds a history, metrics when they were read, then the hosts.
fn documents<'a>(
    info: &SnapshotInfo,
    objects: &'a RawObjects,
    leases: &'a [Pruned],
    metrics: Option<&'a RawMetrics>,
    hosts: Vec<serde_json::Value>,
) -> Vec<Document<'a>> {
    let mut documents = vec![Document::Value(info.document())];
    documents.extend(
        [
            &objects.nodes,
            &objects.pods,
            &objects.pdbs,
            &objects.namespaces,
            &objects.priority_classes,
        ]
        .map(|items| Document::List(list(items))),
    );
    if !leases.is_empty() {
        documents.push(Document::List(list(leases)));
    }
    if let Some(metrics) = metrics {
        documents.push(Document::List(list(&metrics.nodes)));
        documents.push(Document::List(list(&metrics.pods)));
    }
    documents.extend(hosts.into_iter().map(Document::Value));
    documents
}

fn write(path: &Path, documents: &[Document<'_>]) -> std::io::Result<()> {
    let json = path
        .extension()
        .is_some_and(|extension| extension.eq_ignore_ascii_case("json"));
    let temporary = path.with_file_name(format!(
        ".{}.partial",
        path.file_name()
            .map(|name| name.to_string_lossy().into_owned())
            .unwrap_or_default()
    ));
    let file = std::fs::File::create(&temporary)?;
    let mut out = std::io::BufWriter::new(file);
    let result = (|| {
        if json {
            // Concatenated JSON documents, as `plan --snapshot` reads them.
            for document in documents {
                serde_json::to_writer(&mut out, document)?;
                out.write_all(b"\n")?;
            }
        } else {
            let yaml =
                |error: serde_saphyr::SerializeError| std::io::Error::other(error.to_string());
            out.write_all(b"# Recorded by vsphere-descheduler snapshot\n")?;
            for (index, document) in documents.iter().enumerate() {
                // `---` between documents, none after the last: a trailing one opens an empty
                // document.
                if index > 0 {
                    out.write_all(b"---\n")?;
                }
                serde_saphyr::to_io_writer(&mut out, document).map_err(yaml)?;
            }
        }
        out.flush()?;
        out.get_ref().sync_all()
    })();
    match result {
        Ok(()) => std::fs::rename(&temporary, path),
        Err(error) => {
            let _ = std::fs::remove_file(&temporary);
            Err(error)
        }
    }
}
