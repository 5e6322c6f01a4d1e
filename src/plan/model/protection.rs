//! Why the evictor may not take a pod: one variant per protection, with the data its sentence
//! names. The report's skip detail joins their texts; decisions and tests match the variants.

use std::fmt;

/// One protection that keeps a pod where it is.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Protection {
    /// Annotated `prefer-no-eviction` under `noEvictionPolicy: Mandatory`.
    PreferNoEviction,
    /// A mirror pod (the kubelet's copy of a static pod).
    Mirror,
    /// A static pod (its config source is not the API server).
    Static,
    Terminating,
    /// Priority at or above `system-cluster-critical`.
    SystemCritical {
        priority: i32,
    },
    AtOrAboveThreshold {
        priority: i32,
        threshold: i32,
    },
    /// The profile's `priorityThreshold` names a class the cluster does not have.
    UnknownPriorityClass {
        class: String,
    },
    /// No owner would recreate it.
    BarePod,
    DaemonSet,
    LocalStorage,
    PersistentVolumeClaims {
        claims: Vec<String>,
    },
    /// Claims while `protectedStorageClasses` is set: their class is not in the snapshot.
    ClaimsOfUnknownClass {
        claims: Vec<String>,
    },
    ResourceClaims,
    NoPodDisruptionBudget,
    LabelSelector,
    NamespaceLabelSelector,
    TooFewReplicas {
        owner_kind: String,
        owner_name: String,
        replicas: usize,
        min_replicas: u32,
    },
    /// `minPodAge` is set and the pod has not started.
    NotStarted,
    TooYoung {
        age_seconds: i64,
        min_age_seconds: u64,
    },
}

impl fmt::Display for Protection {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Protection::PreferNoEviction => {
                f.write_str("annotated prefer-no-eviction (noEvictionPolicy Mandatory)")
            }
            Protection::Mirror => f.write_str("mirror pod"),
            Protection::Static => f.write_str("static pod"),
            Protection::Terminating => f.write_str("terminating"),
            Protection::SystemCritical { priority } => {
                write!(f, "system-critical priority {priority}")
            }
            Protection::AtOrAboveThreshold {
                priority,
                threshold,
            } => write!(
                f,
                "priority {priority} is at or above priorityThreshold {threshold}"
            ),
            Protection::UnknownPriorityClass { class } => write!(
                f,
                "priorityThreshold names PriorityClass {class}, which the cluster does not have"
            ),
            Protection::BarePod => f.write_str("bare pod (no owner would recreate it)"),
            Protection::DaemonSet => f.write_str("owned by a DaemonSet"),
            Protection::LocalStorage => f.write_str("uses local storage (emptyDir or hostPath)"),
            Protection::PersistentVolumeClaims { claims } => {
                write!(f, "uses PersistentVolumeClaim {}", claims.join(", "))
            }
            Protection::ClaimsOfUnknownClass { claims } => write!(
                f,
                "uses PersistentVolumeClaim {} whose storage class is unknown",
                claims.join(", ")
            ),
            Protection::ResourceClaims => f.write_str("uses resource claims"),
            Protection::NoPodDisruptionBudget => f.write_str("no PodDisruptionBudget covers it"),
            Protection::LabelSelector => {
                f.write_str("labels do not match the evictor's labelSelector")
            }
            Protection::NamespaceLabelSelector => {
                f.write_str("namespace labels do not match the evictor's namespaceLabelSelector")
            }
            Protection::TooFewReplicas {
                owner_kind,
                owner_name,
                replicas,
                min_replicas,
            } => write!(
                f,
                "its owner {owner_kind}/{owner_name} has {replicas} pods, fewer than minReplicas \
                 {min_replicas}"
            ),
            Protection::NotStarted => f.write_str("has not started (minPodAge)"),
            Protection::TooYoung {
                age_seconds,
                min_age_seconds,
            } => write!(
                f,
                "started {age_seconds}s ago, younger than minPodAge {min_age_seconds}s"
            ),
        }
    }
}

/// The skip detail for a protected pod: every protection's text, in order, joined by "; ".
pub fn detail(protections: &[Protection]) -> String {
    protections
        .iter()
        .map(Protection::to_string)
        .collect::<Vec<_>>()
        .join("; ")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_detail_joins_each_protection_text_in_order() {
        let protections = [
            Protection::BarePod,
            Protection::TooFewReplicas {
                owner_kind: "ReplicaSet".to_string(),
                owner_name: "web-1".to_string(),
                replicas: 1,
                min_replicas: 2,
            },
            Protection::ClaimsOfUnknownClass {
                claims: vec!["data".to_string(), "logs".to_string()],
            },
        ];
        assert_eq!(
            detail(&protections),
            "bare pod (no owner would recreate it); its owner ReplicaSet/web-1 has 1 pods, fewer \
             than minReplicas 2; uses PersistentVolumeClaim data, logs whose storage class is \
             unknown"
        );
    }
}
