//! Snapshot files read and assembled into one [`Snapshot`]: objects sorted, duplicates refused
//! (a duplicate positioned in the file it was read from), inventories merged.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use chrono::{DateTime, Utc};

use super::decode::history::{self, History, RecordedHistory};
use super::model::{Metrics, Snapshot};
use super::read::{self, FileSizeLimit, Objects, Position, SnapshotError, locate, read_str};
use crate::hash::{HashMap, HashSet};
use crate::inventory::{self, Inventory};
use crate::vm_operator::documents::{RESOURCE_POLICY, VIRTUAL_MACHINE};
use crate::vm_operator::{self, Findings, ResourcePolicy, VirtualMachine};

/// A snapshot read from files, and what was skipped while reading it.
#[derive(Debug)]
pub struct Loaded {
    pub snapshot: Snapshot,
    /// The latest `recordedAt` the files' `SnapshotInfo` documents give, if any.
    pub recorded_at: Option<DateTime<Utc>>,
    /// Objects of kinds that planning does not use.
    pub ignored: Vec<String>,
    /// When the inventory came from VM Operator's objects: its guest clusters' cluster modules
    /// and the VMs it left out (no host yet), for the report.
    pub supervisor: Option<Findings>,
}

/// [`load_files_within`] with the default limit, [`FileSizeLimit::DEFAULT`].
pub fn load_files(paths: &[PathBuf], now: DateTime<Utc>) -> Result<Loaded, SnapshotError> {
    load_files_within(paths, now, FileSizeLimit::DEFAULT)
}

/// Read and assemble snapshot files of at most `limit` each. `now` is the instant to plan at.
/// Files that hold no Node are refused: there is nothing to plan on, and a plan of nothing
/// would pass a CI gate.
pub fn load_files_within(
    paths: &[PathBuf],
    now: DateTime<Utc>,
    limit: FileSizeLimit,
) -> Result<Loaded, SnapshotError> {
    load_files_at(paths, Some(now), limit, Utc::now)
}

/// [`load_files_within`] planning at `now` when given, else at the files' latest `recordedAt`
/// (the only instant no recorded object is younger than: files recorded at different times
/// are planned as of the last), else at `clock()`.
pub fn load_files_at(
    paths: &[PathBuf],
    now: Option<DateTime<Utc>>,
    limit: FileSizeLimit,
    clock: impl FnOnce() -> DateTime<Utc>,
) -> Result<Loaded, SnapshotError> {
    let mut parts = Vec::with_capacity(paths.len());
    for path in paths {
        parts.push((path.clone(), read::read_file(path, limit)?));
    }
    let now = now
        .or_else(|| latest_recorded(&parts))
        .unwrap_or_else(clock);
    let loaded = assemble(parts, now).map_err(|error| located(error, limit))?;
    if loaded.snapshot.nodes.is_empty() {
        let snapshot = &loaded.snapshot;
        let empty = snapshot.pods.is_empty()
            && snapshot.pdbs.is_empty()
            && snapshot.namespaces.is_empty()
            && snapshot.priority_classes.is_empty()
            && snapshot.inventory.is_none()
            && snapshot.history == History::default()
            && loaded.ignored.is_empty();
        let paths = paths.to_vec();
        return Err(if empty {
            SnapshotError::Empty { paths }
        } else {
            SnapshotError::NoNode { paths }
        });
    }
    Ok(loaded)
}

/// The latest `recordedAt` of the files' `SnapshotInfo` documents.
fn latest_recorded(parts: &[(PathBuf, Objects)]) -> Option<DateTime<Utc>> {
    parts
        .iter()
        .flat_map(|(_, objects)| objects.recorded_at.iter().copied())
        .max()
}

/// Where one of the files holds `kind` `name` (`namespace/name` for namespaced kinds): the
/// last copy in the first file that has one. The files are read again, so this is for the
/// rare message that points at an object, not for every load.
pub fn locate_object(
    paths: &[PathBuf],
    limit: FileSizeLimit,
    kind: &str,
    name: &str,
) -> Option<(PathBuf, Position)> {
    paths.iter().find_map(|path| {
        let text = read::read_text(path, limit).ok()?;
        let text = crate::encoding::without_mark(&text);
        let sought = locate::Sought::Object { kind, name };
        let at = crate::stack::on_reader_stack(|| locate::last(text, sought))?;
        Some((path.clone(), at))
    })
}

/// A duplicate, with where its later copy was written: the file is read again to find it.
pub(super) fn located(error: SnapshotError, limit: FileSizeLimit) -> SnapshotError {
    let in_file =
        |path: &Path, sought, which: fn(&str, locate::Sought) -> Option<read::Position>| {
            // The text as it was read: decoded, without its byte order mark.
            let text = read::read_text(path, limit).ok()?;
            let text = crate::encoding::without_mark(&text);
            crate::stack::on_reader_stack(|| which(text, sought)).map(Box::new)
        };
    let find = |path: &Path, sought| in_file(path, sought, locate::last);
    match error {
        SnapshotError::Duplicate {
            path,
            at: None,
            kind,
            name,
        } => SnapshotError::Duplicate {
            at: find(&path, locate::Sought::Object { kind, name: &name }),
            path,
            kind,
            name,
        },
        SnapshotError::DuplicateCluster {
            path,
            at: None,
            datacenter,
            name,
            id,
        } => SnapshotError::DuplicateCluster {
            at: find(
                &path,
                locate::Sought::Cluster {
                    datacenter: &datacenter,
                    name: &name,
                    id: id.as_deref(),
                },
            ),
            path,
            datacenter,
            name,
            id,
        },
        SnapshotError::DuplicateHistory {
            path,
            at: None,
            first,
            second,
        } => SnapshotError::DuplicateHistory {
            at: {
                let (kind, name) = second.split_once(' ').unwrap_or(("Lease", &second));
                find(&path, locate::Sought::Object { kind, name })
            },
            path,
            first,
            second,
        },
        SnapshotError::TwoHostSources {
            inventory,
            inventory_at: None,
            vm_operator,
            vm_operator_at: None,
            kind,
            name,
        } => SnapshotError::TwoHostSources {
            inventory_at: in_file(
                &inventory,
                locate::Sought::Kind(inventory::KIND),
                locate::first,
            ),
            vm_operator_at: in_file(
                &vm_operator,
                locate::Sought::Object { kind, name: &name },
                locate::first,
            ),
            inventory,
            vm_operator,
            kind,
            name,
        },
        other => other,
    }
}

/// Assemble objects (with the file each came from, for error messages) into a snapshot:
/// sorted, duplicates rejected, inventories merged.
pub fn assemble(
    parts: Vec<(PathBuf, Objects)>,
    now: DateTime<Utc>,
) -> Result<Loaded, SnapshotError> {
    // Sorted once at the end rather than kept in maps: a big snapshot is mostly pods, and
    // sorting their indices compares names in place and moves each object once (kubectl
    // lists come sorted already).
    let mut files = Vec::with_capacity(parts.len());
    let mut nodes = FromFiles::default();
    let mut pods = FromFiles::default();
    let mut pdbs = FromFiles::default();
    let mut namespaces = BTreeMap::new();
    let mut priority_classes = BTreeMap::new();
    let mut inventory: Option<Inventory> = None;
    let mut metrics: Option<Metrics> = None;
    // The objects the history came from (a Lease of the earlier form, the ConfigMap), with the
    // file each is in.
    let mut histories: Vec<(RecordedHistory, PathBuf)> = Vec::new();
    let mut ignored = Vec::new();
    let mut vm_operator = VmOperator::default();
    // The first file that holds a VSphereInventory.
    let mut inventory_file: Option<PathBuf> = None;
    let recorded_at = latest_recorded(&parts);
    for (file, (path, objects)) in parts.into_iter().enumerate() {
        if !objects.inventories.is_empty() && inventory_file.is_none() {
            inventory_file = Some(path.clone());
        }
        vm_operator.add(&path, objects.virtual_machines, objects.resource_policies)?;
        nodes.add(file, objects.nodes);
        pods.add(file, objects.pods);
        pdbs.add(file, objects.pdbs);
        insert_unique(&mut namespaces, objects.namespaces, "Namespace", &path)?;
        insert_unique(
            &mut priority_classes,
            objects.priority_classes,
            "PriorityClass",
            &path,
        )?;
        for part in objects.inventories {
            merge_inventory(
                inventory.get_or_insert_with(Inventory::default),
                part,
                &path,
            )?;
        }
        if let Some(part) = objects.metrics {
            merge_metrics(metrics.get_or_insert_with(Metrics::default), part);
        }
        for recorded in objects.histories {
            if let Some((first, _)) = histories
                .iter()
                .find(|(first, _)| clashes(first, &recorded))
            {
                return Err(SnapshotError::DuplicateHistory {
                    path,
                    at: None,
                    first: first.object(),
                    second: recorded.object(),
                });
            }
            histories.push((recorded, path.clone()));
        }
        ignored.extend(objects.ignored);
        files.push(path);
    }
    let duplicate = |kind, (file, name): (usize, String)| SnapshotError::Duplicate {
        path: files[file].clone(),
        at: None,
        kind,
        name,
    };
    let nodes = nodes
        .sorted_unique(|n| ("", n.name.as_str()))
        .map_err(|(file, node)| duplicate("Node", (file, node.name)))?;
    let pods = pods
        .sorted_unique(|p| (&*p.namespace, p.name.as_str()))
        .map_err(|(file, pod)| duplicate("Pod", (file, pod.key())))?;
    let pdbs = pdbs
        .sorted_unique(|p| (p.namespace.as_str(), p.name.as_str()))
        .map_err(|(file, pdb)| {
            duplicate(
                "PodDisruptionBudget",
                (file, format!("{}/{}", pdb.namespace, pdb.name)),
            )
        })?;
    let supervisor = match (inventory_file, vm_operator.first) {
        (Some(inventory_file), Some((vm_operator_file, kind, name))) => {
            return Err(SnapshotError::TwoHostSources {
                inventory: inventory_file,
                inventory_at: None,
                vm_operator: vm_operator_file,
                vm_operator_at: None,
                kind,
                name,
            });
        }
        (_, Some(_)) => {
            let topology = vm_operator::topology(&vm_operator.vms, &vm_operator.policies);
            inventory = Some(topology.inventory);
            Some(topology.findings)
        }
        (_, None) => None,
    };
    if let Some(inventory) = &mut inventory {
        inventory
            .clusters
            .sort_by(|a, b| (&a.name, &a.datacenter, &a.id).cmp(&(&b.name, &b.datacenter, &b.id)));
    }
    Ok(Loaded {
        snapshot: Snapshot {
            now,
            nodes,
            pods,
            pdbs,
            namespaces,
            priority_classes,
            inventory,
            metrics,
            // A run fills it in from the run lock's Lease and the history ConfigMap; files may
            // record them. Unreadable is not a load failure: planning goes on, pacing fails
            // closed.
            history: history::read(histories.iter().map(|(recorded, path)| {
                (
                    format!("{} in {}", recorded.object(), path.display()),
                    &recorded.stored,
                )
            })),
        },
        recorded_at,
        ignored,
        supervisor,
    })
}

/// Whether two recorded histories cannot both be the run's: two of one form, or the earlier
/// form's Lease and the ConfigMap in different namespaces.
fn clashes(first: &RecordedHistory, second: &RecordedHistory) -> bool {
    std::mem::discriminant(&first.stored) == std::mem::discriminant(&second.stored)
        || first.namespace != second.namespace
}

/// VM Operator's objects of all files, each read once.
#[derive(Default)]
struct VmOperator {
    vms: Vec<VirtualMachine>,
    policies: Vec<ResourcePolicy>,
    /// `namespace/name` of each object read, by kind.
    seen: HashSet<(&'static str, String)>,
    /// The file of the first object, its kind and `namespace/name`.
    first: Option<(PathBuf, &'static str, String)>,
}

impl VmOperator {
    /// Adds one file's objects; one already read is a duplicate.
    fn add(
        &mut self,
        path: &Path,
        vms: Vec<VirtualMachine>,
        policies: Vec<ResourcePolicy>,
    ) -> Result<(), SnapshotError> {
        let keys = vms
            .iter()
            .map(|vm| (VIRTUAL_MACHINE, &vm.namespace, &vm.name))
            .chain(
                policies
                    .iter()
                    .map(|policy| (RESOURCE_POLICY, &policy.namespace, &policy.name)),
            );
        for (kind, namespace, name) in keys {
            let name = format!("{namespace}/{name}");
            if self.first.is_none() {
                self.first = Some((path.to_path_buf(), kind, name.clone()));
            }
            if !self.seen.insert((kind, name.clone())) {
                return Err(SnapshotError::Duplicate {
                    path: path.to_path_buf(),
                    at: None,
                    kind,
                    name,
                });
            }
        }
        self.vms.extend(vms);
        self.policies.extend(policies);
        Ok(())
    }
}

/// Adds one file's named objects (namespaces, PriorityClasses) to those of the files before
/// it; a name already there is a duplicate.
fn insert_unique<V>(
    map: &mut BTreeMap<String, V>,
    entries: Vec<(String, V)>,
    kind: &'static str,
    path: &Path,
) -> Result<(), SnapshotError> {
    for (name, value) in entries {
        if map.insert(name.clone(), value).is_some() {
            return Err(SnapshotError::Duplicate {
                path: path.to_path_buf(),
                at: None,
                kind,
                name,
            });
        }
    }
    Ok(())
}

/// Adds one file's usage to that of the files before it. Duplicates (a node or pod recorded
/// twice) are the same measurement twice at most a scrape apart: the later file's wins.
fn merge_metrics(merged: &mut Metrics, part: Metrics) {
    merged.nodes.extend(part.nodes);
    merged.pods.extend(part.pods);
}

/// Adds one inventory's clusters to those read before; a cluster that may be one already
/// there ([`Cluster::may_be`](crate::inventory::Cluster::may_be)) is a duplicate.
fn merge_inventory(
    merged: &mut Inventory,
    part: Inventory,
    path: &Path,
) -> Result<(), SnapshotError> {
    for cluster in part.clusters {
        if let Some(known) = merged.clusters.iter().find(|c| c.may_be(&cluster)) {
            return Err(SnapshotError::DuplicateCluster {
                path: path.to_path_buf(),
                at: None,
                datacenter: cluster.datacenter.clone(),
                name: cluster.name.clone(),
                id: known.id.clone().filter(|_| known.id == cluster.id),
            });
        }
        merged.clusters.push(cluster);
    }
    Ok(())
}

/// Objects of one kind, with the file each came from (for error messages).
struct FromFiles<T> {
    items: Vec<T>,
    files: Vec<usize>,
}

impl<T> Default for FromFiles<T> {
    fn default() -> FromFiles<T> {
        FromFiles {
            items: Vec::new(),
            files: Vec::new(),
        }
    }
}

impl<T> FromFiles<T> {
    fn add(&mut self, file: usize, items: Vec<T>) {
        self.files.extend(std::iter::repeat_n(file, items.len()));
        if self.items.is_empty() {
            self.items = items;
        } else {
            self.items.extend(items);
        }
    }

    /// The objects sorted by key, in place (150,000 pods are not copied); `Err` carries the
    /// second copy of the first key read twice, and the file it came from.
    fn sorted_unique(
        self,
        key: for<'t> fn(&'t T) -> (&'t str, &'t str),
    ) -> Result<Vec<T>, (usize, T)> {
        let FromFiles { mut items, files } = self;
        let order = match sorted_order(&items, key) {
            Ok(order) => order,
            Err(later) => return Err((files[later], items.swap_remove(later))),
        };
        // Position i takes the item at order[i]: follow each cycle of the permutation,
        // swapping each item into place once.
        let mut placed = vec![false; items.len()];
        for start in 0..items.len() {
            let mut current = start;
            while !placed[current] {
                placed[current] = true;
                let next = order[current];
                if next == start {
                    break;
                }
                items.swap(current, next);
                current = next;
            }
        }
        Ok(items)
    }
}

/// The positions of `items` in key order; `Err` has the position of the later copy of the
/// first key read twice. The keys are compared as (rank of the first text, second text,
/// position): a namespace is one of a few hundred and its rank a number, and the keys sit in
/// one vector instead of behind each 330-byte pod, which made sorting 150,000 pods a tenth of
/// reading them. The position last makes the order that of a stable sort: of two copies, the
/// one read first sorts first and the later one is reported.
fn sorted_order<T>(
    items: &[T],
    key: for<'t> fn(&'t T) -> (&'t str, &'t str),
) -> Result<Vec<usize>, usize> {
    let distinct: HashSet<&str> = items.iter().map(|item| key(item).0).collect();
    let mut firsts: Vec<&str> = distinct.into_iter().collect();
    firsts.sort_unstable();
    let ranks: HashMap<&str, u32> = firsts.into_iter().zip(0u32..).collect();
    let mut keyed: Vec<(u32, &str, usize)> = items
        .iter()
        .enumerate()
        .map(|(position, item)| {
            let (first, second) = key(item);
            (ranks[first], second, position)
        })
        .collect();
    keyed.sort_unstable();
    if let Some(pair) = keyed
        .windows(2)
        .find(|pair| (pair[0].0, pair[0].1) == (pair[1].0, pair[1].1))
    {
        return Err(pair[1].2);
    }
    Ok(keyed.into_iter().map(|(_, _, position)| position).collect())
}

/// Convenience for tests and the demo: a snapshot from text.
pub fn from_str(text: &str, now: DateTime<Utc>) -> Result<Snapshot, SnapshotError> {
    let objects = read_str(text).map_err(|error| SnapshotError::Parse {
        path: Path::new("(inline)").to_path_buf(),
        error,
    })?;
    Ok(assemble(vec![(Path::new("(inline)").to_path_buf(), objects)], now)?.snapshot)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::snapshot::{PastEviction, Pod};

    fn pods(names: &[&str]) -> Objects {
        let text: String = names
            .iter()
            .map(|key| {
                let (namespace, name) = key.split_once('/').expect("namespace/name");
                format!(
                    "---\napiVersion: v1\nkind: Pod\nmetadata: {{name: {name}, namespace: {namespace}}}\n\
                     spec: {{containers: [{{name: main, image: app}}]}}\n"
                )
            })
            .collect();
        read_str(&text).expect("valid pods")
    }

    #[test]
    fn objects_of_several_files_come_out_in_namespace_and_name_order() {
        let parts = vec![
            (PathBuf::from("b.yaml"), pods(&["shop/web-2", "db/main"])),
            (PathBuf::from("a.yaml"), pods(&["shop/web-1", "shop/api"])),
        ];
        let loaded = assemble(parts, Utc::now()).expect("no duplicates");
        let keys: Vec<String> = loaded.snapshot.pods.iter().map(Pod::key).collect();
        assert_eq!(keys, ["db/main", "shop/api", "shop/web-1", "shop/web-2"]);
    }

    #[test]
    fn an_object_read_twice_is_refused_naming_the_file_of_the_second_copy() {
        let parts = vec![
            (
                PathBuf::from("first.yaml"),
                pods(&["shop/web-1", "shop/web-2"]),
            ),
            (
                PathBuf::from("second.yaml"),
                pods(&["db/main", "shop/web-2"]),
            ),
        ];
        let error = assemble(parts, Utc::now()).expect_err("a duplicate");
        assert_eq!(
            error.to_string(),
            SnapshotError::Duplicate {
                path: PathBuf::from("second.yaml"),
                at: None,
                kind: "Pod",
                name: "shop/web-2".to_string(),
            }
            .to_string()
        );
    }

    #[test]
    fn a_duplicate_read_from_files_points_at_its_later_copy() {
        let dir = tempfile::tempdir().expect("a temporary directory");
        let first = dir.path().join("first.yaml");
        let second = dir.path().join("second.yaml");
        let node = "apiVersion: v1\nkind: Node\nmetadata: {name: worker-a}\n";
        std::fs::write(&first, node).expect("writable");
        std::fs::write(&second, format!("# again\n---\n{node}")).expect("writable");
        let error = load_files(&[first, second.clone()], Utc::now()).expect_err("a duplicate");
        assert_eq!(
            error.to_string(),
            format!(
                "{}:3:1: document 1: Node worker-a appears more than once",
                second.display()
            )
        );
    }

    #[test]
    fn files_without_a_node_are_nothing_to_plan_on_naming_every_file() {
        let dir = tempfile::tempdir().expect("a temporary directory");
        let pods = dir.path().join("pods.yaml");
        std::fs::write(
            &pods,
            "apiVersion: v1\nkind: Pod\nmetadata: {name: web-1, namespace: shop}\n",
        )
        .expect("writable");
        let empty = dir.path().join("empty.yaml");
        std::fs::write(&empty, "# nothing recorded\n").expect("writable");

        let error = load_files(&[pods.clone(), empty.clone()], Utc::now()).expect_err("no node");
        assert!(matches!(error, SnapshotError::NoNode { .. }), "{error:?}");
        let expected = format!(
            "nothing to plan on: snapshot files {}, {} hold no Node",
            pods.display(),
            empty.display()
        );
        assert!(error.to_string().starts_with(&expected), "{error}");

        let error =
            load_files(std::slice::from_ref(&empty), Utc::now()).expect_err("nothing at all");
        assert!(matches!(error, SnapshotError::Empty { .. }), "{error:?}");
        assert_eq!(
            error.to_string(),
            format!(
                "nothing to plan on: snapshot file {} holds no object",
                empty.display()
            )
        );
    }

    const NODE: &str = "apiVersion: v1\nkind: Node\nmetadata:\n  name: worker-a\n";

    /// The run lock's Lease in block YAML, as `snapshot` writes it, holding `value`.
    fn lease_yaml(namespace: &str, value: &str) -> String {
        format!(
            "apiVersion: coordination.k8s.io/v1\nkind: Lease\nmetadata:\n  name: vsphere-descheduler\n  \
             namespace: {namespace}\n  annotations:\n    {}: '{value}'\n",
            history::ANNOTATION
        )
    }

    fn history_entry() -> PastEviction {
        PastEviction::new(
            DateTime::parse_from_rfc3339("2026-11-28T12:00:00Z")
                .expect("a time")
                .to_utc(),
            "shop/Deployment/web",
            "web-5d8f7c9b6-aaaaa",
            "RemoveDuplicates",
        )
    }

    /// [`history_entry`] in the earlier form's JSON.
    const HISTORY_JSON: &str = "[{\"at\":\"2026-11-28T12:00:00Z\",\"workload\":\"shop/Deployment/web\",\
                                \"pod\":\"web-5d8f7c9b6-aaaaa\",\"plugin\":\"RemoveDuplicates\"}]";

    #[test]
    fn a_lease_history_is_read_by_every_reader_path() {
        let dir = tempfile::tempdir().expect("a temporary directory");
        let value = HISTORY_JSON;
        let yaml = format!("{NODE}---\n{}", lease_yaml("kube-system", value));
        let documents: Vec<serde_json::Value> =
            serde_saphyr::from_multiple(&yaml).expect("valid YAML");
        let json: String = documents
            .iter()
            .map(|document| serde_json::to_string(document).expect("JSON") + "\n")
            .collect();
        let list = serde_json::json!({"apiVersion": "v1", "kind": "List", "items": documents});
        // Flow style is not read through JSON: serde-saphyr reads it.
        let flow = format!(
            "# flow style\n{{apiVersion: v1, kind: Node, metadata: {{name: worker-a}}}}\n---\n\
             {{apiVersion: coordination.k8s.io/v1, kind: Lease, metadata: {{name: \
             vsphere-descheduler, namespace: kube-system, annotations: {{{}: '{value}'}}}}}}\n",
            history::ANNOTATION
        );
        assert!(
            read::yaml_items::read(&yaml).is_ok(),
            "block YAML goes through JSON"
        );
        assert!(read::yaml_items::read(&flow).is_err(), "flow YAML does not");
        for (name, text) in [
            ("block.yaml", yaml),
            ("flow.yaml", flow),
            ("stream.json", json),
            ("list.json", list.to_string()),
        ] {
            let path = dir.path().join(name);
            std::fs::write(&path, &text).expect("writable");
            let loaded = load_files(std::slice::from_ref(&path), Utc::now()).expect(name);
            assert_eq!(
                loaded.snapshot.history,
                History::Recorded(vec![history_entry()]),
                "{name}"
            );
            let whole = read::read_whole_file(&path, FileSizeLimit::DEFAULT).expect(name);
            assert_eq!(whole.histories.len(), 1, "{name} read whole");
        }
    }

    #[test]
    fn a_corrupt_history_in_a_file_is_unreadable_naming_the_lease_and_the_file() {
        let dir = tempfile::tempdir().expect("a temporary directory");
        let path = dir.path().join("snapshot.yaml");
        let text = format!("{NODE}---\n{}", lease_yaml("ops", "{\"web\": 1}"));
        std::fs::write(&path, text).expect("writable");
        let loaded =
            load_files(std::slice::from_ref(&path), Utc::now()).expect("not a load failure");
        let History::Unreadable(unreadable) = loaded.snapshot.history else {
            panic!("{:?}", loaded.snapshot.history);
        };
        assert_eq!(
            unreadable.object,
            format!("Lease ops/vsphere-descheduler in {}", path.display())
        );
        let history::HistoryDefect::Corrupt(problem) = &unreadable.cause else {
            panic!("{:?}", unreadable.cause);
        };
        assert!(
            problem.starts_with("not a JSON list of evictions"),
            "{problem}"
        );
    }

    #[test]
    fn a_lease_without_a_history_is_ignored_and_two_histories_are_refused() {
        let plain = "apiVersion: coordination.k8s.io/v1\nkind: Lease\nmetadata:\n  name: other\n  \
                     namespace: ops\n";
        let loaded = assemble(
            vec![(
                PathBuf::from("a.yaml"),
                read_str(&format!("{NODE}---\n{plain}")).expect("valid"),
            )],
            Utc::now(),
        )
        .expect("read");
        assert_eq!(loaded.snapshot.history, History::default());
        assert_eq!(loaded.ignored, ["coordination.k8s.io/v1 Lease ops/other"]);

        let dir = tempfile::tempdir().expect("a temporary directory");
        let first = dir.path().join("first.yaml");
        let second = dir.path().join("second.yaml");
        std::fs::write(
            &first,
            format!("{NODE}---\n{}", lease_yaml("kube-system", "[]")),
        )
        .expect("writable");
        std::fs::write(
            &second,
            format!("# again\n---\n{}", lease_yaml("ops", "[]")),
        )
        .expect("writable");
        let error = load_files(&[first, second.clone()], Utc::now()).expect_err("two histories");
        assert_eq!(
            error.to_string(),
            format!(
                "{}:3:1: document 1: the eviction history (annotation {}) appears more than once, \
                 in Lease kube-system/vsphere-descheduler and in Lease ops/vsphere-descheduler: \
                 keep the run lock's only",
                second.display(),
                history::ANNOTATION
            )
        );
    }

    fn inventory(text: &str) -> Objects {
        read_str(&format!(
            "apiVersion: vsphere-descheduler.io/v1alpha1\nkind: VSphereInventory\n{text}"
        ))
        .expect("a valid inventory")
    }

    fn clusters(parts: Vec<(&str, Objects)>) -> Result<Vec<String>, SnapshotError> {
        let parts = parts
            .into_iter()
            .map(|(path, objects)| (PathBuf::from(path), objects))
            .collect();
        let loaded = assemble(parts, Utc::now())?;
        let inventory = loaded.snapshot.inventory.expect("an inventory");
        Ok(inventory.cluster_names())
    }

    #[test]
    fn clusters_of_one_name_in_two_datacenters_are_two_clusters() {
        let names = clusters(vec![
            (
                "a.yaml",
                inventory("clusters: [{name: prod, datacenter: east}]"),
            ),
            (
                "b.yaml",
                inventory("clusters: [{name: prod, datacenter: west}]"),
            ),
            (
                "c.yaml",
                inventory("clusters: [{name: edge, datacenter: west}]"),
            ),
        ])
        .expect("distinct clusters");
        assert_eq!(names, ["edge", "east/prod", "west/prod"]);
    }

    #[test]
    fn clusters_of_one_name_in_one_datacenter_need_ids_to_be_told_apart() {
        let names = clusters(vec![(
            "a.yaml",
            inventory(
                "clusters:\n- {name: prod, id: domain-c7, datacenter: east}\n\
                 - {name: prod, id: domain-c9, datacenter: east}",
            ),
        )])
        .expect("told apart by id");
        assert_eq!(names, ["east/prod (domain-c7)", "east/prod (domain-c9)"]);

        let error = clusters(vec![
            (
                "a.yaml",
                inventory("clusters: [{name: prod, id: domain-c7, datacenter: east}]"),
            ),
            (
                "b.yaml",
                inventory("clusters: [{name: prod, datacenter: east}]"),
            ),
        ])
        .expect_err("one record lacks its id");
        assert_eq!(
            error.to_string(),
            "snapshot file b.yaml: vSphere cluster east/prod appears more than once, and without \
             an `id` on each the records cannot be told apart: give each its managed object id, \
             or remove one"
        );

        let error = clusters(vec![
            (
                "a.yaml",
                inventory("clusters: [{name: prod, id: domain-c7, datacenter: east}]"),
            ),
            (
                "b.yaml",
                inventory("clusters: [{name: prod, id: domain-c7, datacenter: east}]"),
            ),
        ])
        .expect_err("one cluster twice");
        assert_eq!(
            error.to_string(),
            "snapshot file b.yaml: vSphere cluster east/prod (domain-c7) appears more than once"
        );
    }

    /// A VM of guest cluster tkc-1 on esxi-1 and its resource policy, as the items of the
    /// `v1 List` `kubectl get vm,virtualmachinesetresourcepolicy -o yaml` prints.
    const VM_OPERATOR_LIST: &str = "apiVersion: v1\nitems:\n\
        - apiVersion: vmoperator.vmware.com/v1alpha2\n  kind: VirtualMachine\n  metadata:\n    \
        annotations:\n      vsphere-cluster-module-group: tkc-1-workers-0\n    labels:\n      \
        capv.vmware.com/cluster.name: tkc-1\n    name: worker-a\n    namespace: team-a\n  \
        spec:\n    powerOffMode: TrySoft\n    reserved:\n      resourcePolicyName: tkc-1\n  \
        status:\n    biosUUID: 4210a1f0-0000-0000-0000-000000000001\n    host: esxi-1\n    \
        powerState: PoweredOn\n    uniqueID: vm-41\n\
        - apiVersion: vmoperator.vmware.com/v1alpha2\n  kind: VirtualMachineSetResourcePolicy\n  \
        metadata:\n    name: tkc-1\n    namespace: team-a\n  spec:\n    clusterModuleGroups:\n    \
        - tkc-1-workers-0\n  status:\n    clustermodules:\n    - clusterMoID: domain-c10\n      \
        groupName: tkc-1-workers-0\n      moduleUUID: module-1\n\
        kind: List\nmetadata:\n  resourceVersion: ''\n";

    #[test]
    fn vm_operator_objects_are_read_by_every_reader_path_into_one_inventory() {
        let dir = tempfile::tempdir().expect("a temporary directory");
        let yaml = format!("{NODE}---\n{VM_OPERATOR_LIST}");
        let documents: Vec<serde_json::Value> =
            serde_saphyr::from_multiple(&yaml).expect("valid YAML");
        let stream: String = documents
            .iter()
            .map(|document| serde_json::to_string(document).expect("JSON") + "\n")
            .collect();
        let list = serde_json::json!({"apiVersion": "v1", "kind": "List", "items": [
            documents[0], documents[1]["items"][0], documents[1]["items"][1]]});
        for (name, text) in [
            ("block.yaml", yaml.clone()),
            ("stream.json", stream),
            ("list.json", list.to_string()),
        ] {
            let path = dir.path().join(name);
            std::fs::write(&path, &text).expect("writable");
            let loaded = load_files(std::slice::from_ref(&path), Utc::now()).expect(name);
            let inventory = loaded.snapshot.inventory.expect("an inventory");
            let [cluster] = inventory.clusters.as_slice() else {
                panic!("{name}: {inventory:?}");
            };
            assert_eq!(
                (&*cluster.name, cluster.id.as_deref()),
                ("team-a", Some("domain-c10")),
                "{name}"
            );
            assert_eq!(cluster.vms[0].host, "esxi-1", "{name}");
            assert_eq!(cluster.rules[0].name, "tkc-1/tkc-1-workers-0", "{name}");
            assert_eq!(cluster.rules[0].vms, ["worker-a"], "{name}");
            let findings = loaded.supervisor.expect("the Supervisor's findings");
            assert_eq!(findings.guest_clusters[0].name, "tkc-1", "{name}");
            let whole = read::read_whole_file(&path, FileSizeLimit::DEFAULT).expect(name);
            assert_eq!(whole.virtual_machines.len(), 1, "{name} read whole");
            assert_eq!(whole.resource_policies.len(), 1, "{name} read whole");
        }
    }

    #[test]
    fn typed_list_items_and_a_v1alpha6_object_are_read_as_vm_operators() {
        // `kubectl get --raw /apis/vmoperator.vmware.com/v1alpha3/namespaces/team-a/virtualmachines`:
        // the items name no apiVersion and kind.
        let raw = r#"{"apiVersion":"vmoperator.vmware.com/v1alpha3","kind":"VirtualMachineList","metadata":{},"items":[{"metadata":{"name":"w1","namespace":"team-a"},"status":{"host":"esxi-1","uniqueID":"vm-1"}}]}
{"apiVersion":"vmoperator.vmware.com/v1alpha6","kind":"VirtualMachine","metadata":{"name":"w2","namespace":"team-a"},"status":{"nodeName":"esxi-2","powerState":"PoweredOff"}}"#;
        let objects = read_str(raw).expect("read");
        let hosts: Vec<(&str, Option<&str>)> = objects
            .virtual_machines
            .iter()
            .map(|vm| (vm.name.as_str(), vm.host.as_deref()))
            .collect();
        assert_eq!(hosts, [("w1", Some("esxi-1")), ("w2", Some("esxi-2"))]);
    }

    #[test]
    fn a_snapshot_without_vm_operator_objects_has_no_supervisor_findings() {
        let loaded = assemble(
            vec![(PathBuf::from("a.yaml"), read_str(NODE).expect("a node"))],
            Utc::now(),
        )
        .expect("read");
        assert_eq!(loaded.supervisor, None);
    }

    #[test]
    fn an_inventory_beside_vm_operator_objects_is_refused_naming_both_places() {
        let dir = tempfile::tempdir().expect("a temporary directory");
        let inventory = dir.path().join("inventory.yaml");
        let supervisor = dir.path().join("supervisor.yaml");
        std::fs::write(
            &inventory,
            format!(
                "{NODE}---\napiVersion: vsphere-descheduler.io/v1alpha1\nkind: VSphereInventory\n\
                 clusters: []\n"
            ),
        )
        .expect("writable");
        std::fs::write(&supervisor, VM_OPERATOR_LIST).expect("writable");
        let error =
            load_files(&[inventory.clone(), supervisor.clone()], Utc::now()).expect_err("two");
        assert_eq!(
            error.to_string(),
            format!(
                "{}:6:1: document 2: VSphereInventory and VirtualMachine team-a/worker-a ({}:3:3: \
                 document 1) are two sources of ESXi hosts; a snapshot takes one: keep the \
                 inventory or VM Operator's objects",
                inventory.display(),
                supervisor.display()
            )
        );
    }

    #[test]
    fn a_virtual_machine_read_twice_is_refused_pointing_at_its_later_copy() {
        let dir = tempfile::tempdir().expect("a temporary directory");
        let first = dir.path().join("first.yaml");
        let second = dir.path().join("second.yaml");
        std::fs::write(&first, format!("{NODE}---\n{VM_OPERATOR_LIST}")).expect("writable");
        let vm = "apiVersion: vmoperator.vmware.com/v1alpha5\nkind: VirtualMachine\nmetadata:\n  \
                  name: worker-a\n  namespace: team-a\n";
        std::fs::write(&second, format!("# again\n---\n{vm}")).expect("writable");
        let error = load_files(&[first, second.clone()], Utc::now()).expect_err("a duplicate");
        assert_eq!(
            error.to_string(),
            format!(
                "{}:3:1: document 1: VirtualMachine team-a/worker-a appears more than once",
                second.display()
            )
        );
    }

    #[test]
    fn other_vm_operator_kinds_are_ignored_and_an_unread_version_is_refused() {
        let class = "apiVersion: vmoperator.vmware.com/v1alpha5\nkind: VirtualMachineClass\n\
                     metadata: {name: best-effort-large, namespace: team-a}\n";
        let objects = read_str(&format!("{NODE}---\n{class}")).expect("read");
        assert_eq!(
            objects.ignored,
            ["vmoperator.vmware.com/v1alpha5 VirtualMachineClass team-a/best-effort-large"]
        );
        let newer = "apiVersion: vmoperator.vmware.com/v1beta1\nkind: VirtualMachine\n\
                     metadata: {name: w1, namespace: team-a}\n";
        let error = read_str(newer).expect_err("an unread version");
        assert_eq!(
            error.to_string(),
            "1:1: document 1: VirtualMachine team-a/w1: invalid apiVersion \
             \"vmoperator.vmware.com/v1beta1 (only vmoperator.vmware.com v1alpha1 to v1alpha6 are \
             read)\""
        );
    }

    #[test]
    fn a_malformed_vm_operator_object_is_refused_at_the_value_naming_the_object() {
        let yaml = VM_OPERATOR_LIST.replace("host: esxi-1", "host: [esxi-1]");
        let error = read_str(&yaml).expect_err("a list is no host");
        assert_eq!(
            error.to_string(),
            "18:11: document 1: VirtualMachine team-a/worker-a: invalid type: sequence, expected \
             a string"
        );
        let documents: Vec<serde_json::Value> =
            serde_saphyr::from_multiple(&yaml).expect("valid YAML");
        let json = serde_json::to_string_pretty(&documents[0]).expect("JSON");
        let error = read_str(&json).expect_err("a list is no host");
        assert!(
            error.to_string().contains(
                "VirtualMachine team-a/worker-a: invalid type: sequence, expected a string"
            ),
            "{error}"
        );
    }

    fn instant(text: &str) -> DateTime<Utc> {
        DateTime::parse_from_rfc3339(text)
            .expect("a valid timestamp")
            .to_utc()
    }

    fn info(recorded_at: &str) -> String {
        format!(
            "apiVersion: vsphere-descheduler.io/v1alpha1\nkind: SnapshotInfo\n\
             recordedAt: {recorded_at}\n"
        )
    }

    /// A pod created at `created`, in a YAML document of its own.
    fn pod_created(name: &str, created: &str) -> String {
        format!(
            "apiVersion: v1\nkind: Pod\nmetadata:\n  name: {name}\n  namespace: shop\n  \
             creationTimestamp: '{created}'\nspec: {{containers: [{{name: main, image: app}}]}}\n"
        )
    }

    fn files(dir: &tempfile::TempDir, texts: &[&str]) -> Vec<PathBuf> {
        texts
            .iter()
            .enumerate()
            .map(|(index, text)| {
                let path = dir.path().join(format!("{index}.yaml"));
                std::fs::write(&path, text).expect("writable");
                path
            })
            .collect()
    }

    #[test]
    fn files_recorded_at_different_times_are_planned_at_the_latest_and_now_wins_over_both() {
        let dir = tempfile::tempdir().expect("a temporary directory");
        let paths = files(
            &dir,
            &[
                &format!("{}---\n{NODE}", info("2026-11-21T09:00:00Z")),
                &info("2026-11-21T10:30:00Z"),
            ],
        );
        let clock = || panic!("the clock is not read when the files say when");
        let loaded = load_files_at(&paths, None, FileSizeLimit::DEFAULT, clock).expect("valid");
        assert_eq!(loaded.snapshot.now, instant("2026-11-21T10:30:00Z"));
        assert_eq!(loaded.recorded_at, Some(instant("2026-11-21T10:30:00Z")));
        let given = instant("2026-11-22T00:00:00Z");
        let loaded =
            load_files_at(&paths, Some(given), FileSizeLimit::DEFAULT, clock).expect("valid");
        assert_eq!(loaded.snapshot.now, given);
    }

    #[test]
    fn files_that_record_no_time_are_planned_at_the_clocks_now() {
        let dir = tempfile::tempdir().expect("a temporary directory");
        let paths = files(&dir, &[NODE]);
        let clock = instant("2027-01-01T00:00:00Z");
        let loaded = load_files_at(&paths, None, FileSizeLimit::DEFAULT, || clock).expect("valid");
        assert_eq!(loaded.snapshot.now, clock);
        assert_eq!(loaded.recorded_at, None);
    }

    #[test]
    fn a_snapshot_info_with_an_unknown_field_or_a_bad_time_is_refused_where_it_is_written() {
        let error = read_str(&format!(
            "{NODE}---\n{}recorded: yesterday\n",
            info("2026-11-21T09:00:00Z")
        ))
        .expect_err("an unknown field");
        assert!(
            error
                .message
                .starts_with("SnapshotInfo: unknown field `recorded`"),
            "{error}"
        );
        assert_eq!(error.at.document, Some(2));
        let error = read_str(&info("yesterday")).expect_err("not a time");
        assert!(error.message.starts_with("SnapshotInfo: "), "{error}");
    }

    #[test]
    fn the_youngest_pod_created_after_now_is_found_and_placed_in_its_file() {
        let dir = tempfile::tempdir().expect("a temporary directory");
        let paths = files(
            &dir,
            &[
                &format!("{NODE}---\n{}", pod_created("old", "2026-11-01T00:00:00Z")),
                &format!(
                    "{}---\n{}",
                    pod_created("new", "2026-11-21T08:00:00Z"),
                    pod_created("newest", "2026-11-21T08:50:00Z")
                ),
            ],
        );
        let now = instant("2026-11-21T07:00:00Z");
        let loaded = load_files_within(&paths, now, FileSizeLimit::DEFAULT).expect("valid");
        let after = loaded
            .snapshot
            .created_after_now()
            .expect("two are younger");
        assert_eq!(
            (after.count, after.youngest.key()),
            (2, "shop/newest".to_string())
        );
        let (file, at) = locate_object(&paths, FileSizeLimit::DEFAULT, "Pod", "shop/newest")
            .expect("found again");
        assert_eq!(file, paths[1]);
        assert_eq!(at, Position::in_document(9, 1, 2));
        let later = instant("2026-11-21T09:00:00Z");
        let loaded = load_files_within(&paths, later, FileSizeLimit::DEFAULT).expect("valid");
        assert!(loaded.snapshot.created_after_now().is_none());
    }
}
