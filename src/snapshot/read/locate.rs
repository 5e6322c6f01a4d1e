//! Where an object that assembling found twice was written. Worked out only once that failed
//! (reading a valid snapshot costs nothing more): the file is read again for its objects'
//! headers alone, and the last one that matches is the copy to point at.

use serde::Deserialize;
use serde_json::value::RawValue;

use super::position::{self, Position, at_offset, is_json, offset_in};
use super::yaml_options::yaml_options;

/// The object to find.
#[derive(Clone, Copy, Debug)]
pub enum Sought<'a> {
    /// `name` is `namespace/name` for namespaced kinds.
    Object { kind: &'a str, name: &'a str },
    /// Any object of `kind` (a `VSphereInventory` has no name).
    Kind(&'a str),
    /// A cluster of a `VSphereInventory`, by its managed object id when both copies have one,
    /// else by datacenter and name.
    Cluster {
        datacenter: &'a str,
        name: &'a str,
        id: Option<&'a str>,
    },
}

/// Where the last object of `text` that is `sought` starts; `None` when the text does not read
/// (it did when it was loaded, but it is read again from disk).
pub fn last(text: &str, sought: Sought) -> Option<Position> {
    positions(text, sought).pop().flatten()
}

/// Where the first object of `text` that is `sought` starts, as [`last`].
pub fn first(text: &str, sought: Sought) -> Option<Position> {
    positions(text, sought).into_iter().next().flatten()
}

/// Where each object of `text` that is `sought` starts, in the order they are written; `None`
/// for one whose place the YAML reader did not record.
fn positions(text: &str, sought: Sought) -> Vec<Option<Position>> {
    if is_json(text)
        && let Some(offsets) = json_offsets(text, sought)
    {
        return offsets
            .into_iter()
            .map(|offset| Some(at_offset(text, offset)))
            .collect();
    }
    // YAML, or text that starts like JSON and is read as YAML, as it was loaded.
    yaml_positions(text, sought)
}

#[derive(Deserialize, Default)]
#[serde(default, expecting = "metadata to be a mapping")]
struct Metadata {
    name: Option<String>,
    namespace: Option<String>,
}

#[derive(Deserialize, Default)]
#[serde(
    default,
    expecting = "a Kubernetes object (a mapping with apiVersion and kind)"
)]
struct ClusterHeader {
    name: String,
    datacenter: String,
    id: Option<String>,
}

impl ClusterHeader {
    fn is(&self, sought: Sought) -> bool {
        match sought {
            Sought::Cluster {
                datacenter,
                name,
                id,
            } => match (id, &self.id) {
                (Some(id), Some(own)) => id == own,
                _ => self.datacenter == datacenter && self.name == name,
            },
            Sought::Object { .. } | Sought::Kind(_) => false,
        }
    }
}

fn is_object(kind: Option<&str>, metadata: &Metadata, sought: Sought) -> bool {
    let (sought_kind, name) = match sought {
        Sought::Object { kind, name } => (kind, name),
        Sought::Kind(sought_kind) => return kind == Some(sought_kind),
        Sought::Cluster { .. } => return false,
    };
    let key = match (&metadata.namespace, &metadata.name) {
        (Some(namespace), Some(own)) if !namespace.is_empty() => format!("{namespace}/{own}"),
        (_, Some(own)) => own.clone(),
        _ => return false,
    };
    kind == Some(sought_kind) && key == name
}

/// The kind of a list's items that name none: `PodList` holds `Pod`s.
fn item_kind<'k>(own: Option<&'k str>, list: Option<&'k str>) -> Option<&'k str> {
    own.or_else(|| list.and_then(|list| list.strip_suffix("List")))
}

#[derive(Deserialize)]
#[serde(expecting = "a Kubernetes object (a mapping with apiVersion and kind)")]
struct JsonHeader<'a> {
    #[serde(default)]
    kind: Option<String>,
    #[serde(default)]
    metadata: Metadata,
    #[serde(borrow, default)]
    items: Option<Vec<&'a RawValue>>,
    #[serde(borrow, default)]
    clusters: Option<Vec<&'a RawValue>>,
}

fn json_offsets(text: &str, sought: Sought) -> Option<Vec<usize>> {
    let mut found = Vec::new();
    for document in serde_json::Deserializer::from_str(text).into_iter::<&RawValue>() {
        let raw = document.ok()?.get();
        let header: JsonHeader = serde_json::from_str(raw).ok()?;
        if is_object(header.kind.as_deref(), &header.metadata, sought) {
            found.push(offset_in(text, raw));
        }
        for item in header.items.iter().flatten() {
            let item_header: JsonHeader = serde_json::from_str(item.get()).ok()?;
            let kind = item_kind(item_header.kind.as_deref(), header.kind.as_deref());
            if is_object(kind, &item_header.metadata, sought) {
                found.push(offset_in(text, item.get()));
            }
        }
        for cluster in header.clusters.iter().flatten() {
            let cluster_header: ClusterHeader = serde_json::from_str(cluster.get()).ok()?;
            if cluster_header.is(sought) {
                found.push(offset_in(text, cluster.get()));
            }
        }
    }
    Some(found)
}

#[derive(Deserialize, Default)]
#[serde(
    default,
    expecting = "a Kubernetes object (a mapping with apiVersion and kind)"
)]
struct YamlItem {
    kind: Option<String>,
    metadata: Metadata,
}

#[derive(Deserialize, Default)]
#[serde(
    default,
    expecting = "a Kubernetes object (a mapping with apiVersion and kind)"
)]
struct YamlHeader {
    kind: Option<String>,
    metadata: Metadata,
    items: Vec<serde_saphyr::Spanned<YamlItem>>,
    clusters: Vec<serde_saphyr::Spanned<ClusterHeader>>,
}

fn yaml_positions(text: &str, sought: Sought) -> Vec<Option<Position>> {
    let read: Result<Vec<serde_saphyr::Spanned<YamlHeader>>, _> =
        serde_saphyr::from_str_multiple_with_options(text, yaml_options(text.len()));
    let Ok(documents) = read else {
        return Vec::new();
    };
    let mut found = Vec::new();
    for document in &documents {
        let header = &document.value;
        if is_object(header.kind.as_deref(), &header.metadata, sought) {
            found.push(document.referenced);
        }
        for item in &header.items {
            let kind = item_kind(item.value.kind.as_deref(), header.kind.as_deref());
            if is_object(kind, &item.value.metadata, sought) {
                found.push(item.referenced);
            }
        }
        for cluster in &header.clusters {
            if cluster.value.is(sought) {
                found.push(cluster.referenced);
            }
        }
    }
    found
        .into_iter()
        .map(|location| {
            (location.line() > 0)
                .then(|| position::yaml_position(text, location.line(), location.column()))
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_last_copy_of_a_pod_is_found_in_a_yaml_stream_and_a_list() {
        let text = "apiVersion: v1\nkind: Pod\nmetadata: {name: web-1, namespace: shop}\n---\n\
                    apiVersion: v1\nkind: PodList\nitems:\n- metadata: {name: web-2, namespace: shop}\n\
                    - metadata:\n    name: web-1\n    namespace: shop\n";
        let sought = Sought::Object {
            kind: "Pod",
            name: "shop/web-1",
        };
        let at = last(text, sought).expect("found");
        assert_eq!(at, Position::in_document(9, 3, 2));
    }

    #[test]
    fn the_last_copy_of_a_node_is_found_in_concatenated_json() {
        let text = "{\"apiVersion\": \"v1\", \"kind\": \"Node\", \"metadata\": {\"name\": \"a\"}}\n\
                    {\"apiVersion\": \"v1\", \"kind\": \"List\", \"items\": [\n  {\"kind\": \"Node\", \
                    \"metadata\": {\"name\": \"a\"}}]}\n";
        let at = last(
            text,
            Sought::Object {
                kind: "Node",
                name: "a",
            },
        )
        .expect("found");
        assert_eq!(at, Position::in_document(3, 3, 2));
    }

    #[test]
    fn a_cluster_is_found_by_datacenter_and_name() {
        let text = "apiVersion: vsphere-descheduler.io/v1alpha1\nkind: VSphereInventory\nclusters:\n\
                    - {name: prod, datacenter: east}\n- {name: prod, datacenter: west}\n\
                    - name: prod\n  datacenter: east\n";
        let at = last(
            text,
            Sought::Cluster {
                datacenter: "east",
                name: "prod",
                id: None,
            },
        )
        .expect("found");
        assert_eq!((at.line, at.column), (6, 3));
    }
}
