//! Recorded or observed cluster state: Kubernetes objects plus the vSphere inventory, as one
//! typed, sorted [`Snapshot`] that `plan()` reads.

mod convert;
mod load;
mod model;
mod quantity;

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use chrono::{DateTime, Utc};

pub use convert::{ConvertError, namespace, node, pdb, pod, selector};
pub use load::{Objects, SnapshotError, read_str};
pub use model::*;

use crate::inventory::Inventory;

/// A snapshot read from files, and what was skipped while reading it.
#[derive(Debug)]
pub struct Loaded {
    pub snapshot: Snapshot,
    /// Objects of kinds that planning does not use.
    pub ignored: Vec<String>,
}

/// Read and assemble snapshot files. `now` is the instant to plan at.
pub fn load_files(paths: &[PathBuf], now: DateTime<Utc>) -> Result<Loaded, SnapshotError> {
    let mut parts = Vec::with_capacity(paths.len());
    for path in paths {
        parts.push((path.clone(), load::read_file(path)?));
    }
    assemble(parts, now)
}

/// Assemble objects (with the file each came from, for error messages) into a snapshot:
/// sorted, duplicates rejected, inventories merged.
pub fn assemble(
    parts: Vec<(PathBuf, Objects)>,
    now: DateTime<Utc>,
) -> Result<Loaded, SnapshotError> {
    let mut nodes = BTreeMap::new();
    let mut pods = BTreeMap::new();
    let mut pdbs = BTreeMap::new();
    let mut namespaces = BTreeMap::new();
    let mut inventory: Option<Inventory> = None;
    let mut ignored = Vec::new();
    for (path, objects) in parts {
        let duplicate = |kind, name| SnapshotError::Duplicate {
            path: path.clone(),
            kind,
            name,
        };
        for node in objects.nodes {
            if let Some(node) = nodes.insert(node.name.clone(), node) {
                return Err(duplicate("Node", node.name));
            }
        }
        for pod in objects.pods {
            if let Some(pod) = pods.insert((pod.namespace.clone(), pod.name.clone()), pod) {
                return Err(duplicate("Pod", pod.key()));
            }
        }
        for pdb in objects.pdbs {
            if let Some(pdb) = pdbs.insert((pdb.namespace.clone(), pdb.name.clone()), pdb) {
                return Err(duplicate(
                    "PodDisruptionBudget",
                    format!("{}/{}", pdb.namespace, pdb.name),
                ));
            }
        }
        for (name, labels) in objects.namespaces {
            if namespaces.insert(name.clone(), labels).is_some() {
                return Err(duplicate("Namespace", name));
            }
        }
        for part in objects.inventories {
            let merged = inventory.get_or_insert_with(Inventory::default);
            for cluster in part.clusters {
                if merged.clusters.iter().any(|c| c.name == cluster.name) {
                    return Err(SnapshotError::DuplicateCluster {
                        path: path.clone(),
                        cluster: cluster.name,
                    });
                }
                merged.clusters.push(cluster);
            }
        }
        ignored.extend(objects.ignored);
    }
    if let Some(inventory) = &mut inventory {
        inventory.clusters.sort_by(|a, b| a.name.cmp(&b.name));
    }
    Ok(Loaded {
        snapshot: Snapshot {
            now,
            nodes: nodes.into_values().collect(),
            pods: pods.into_values().collect(),
            pdbs: pdbs.into_values().collect(),
            namespaces,
            inventory,
        },
        ignored,
    })
}

/// Convenience for tests and the demo: a snapshot from text.
pub fn from_str(text: &str, now: DateTime<Utc>) -> Result<Snapshot, SnapshotError> {
    let objects = read_str(text).map_err(|message| SnapshotError::Parse {
        path: Path::new("(inline)").to_path_buf(),
        message,
    })?;
    Ok(assemble(vec![(Path::new("(inline)").to_path_buf(), objects)], now)?.snapshot)
}
