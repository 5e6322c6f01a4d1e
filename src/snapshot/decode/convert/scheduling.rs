//! The scheduling terms nodes and pods carry (taints and tolerations, node selector terms,
//! affinity terms, spread constraints), shared by the node and pod conversions.

use k8s_openapi::api::core::v1 as core;
use kube::core::Expression;

use crate::snapshot::model::{
    AffinityTerm, Labels, NodeOperator, NodeRequirement, NodeSelectorTerm, Requirements,
    SpreadConstraint, TaintEffect, Toleration, WeightedAffinityTerm, WhenUnsatisfiable,
};

use super::{ConvertError, selector};

pub(super) fn taint_effect(effect: &str, field: &str) -> Result<TaintEffect, ConvertError> {
    match effect {
        "NoSchedule" => Ok(TaintEffect::NoSchedule),
        "PreferNoSchedule" => Ok(TaintEffect::PreferNoSchedule),
        "NoExecute" => Ok(TaintEffect::NoExecute),
        other => Err(ConvertError::Enum {
            field: field.to_string(),
            value: other.to_string(),
        }),
    }
}

pub(super) fn toleration(t: core::Toleration) -> Result<Toleration, ConvertError> {
    let effect = match t.effect.as_deref() {
        None | Some("") => None,
        Some(effect) => Some(taint_effect(effect, "spec.tolerations[].effect")?),
    };
    let exists = match t.operator.as_deref() {
        None | Some("") | Some("Equal") => false,
        Some("Exists") => true,
        Some(other) => {
            return Err(ConvertError::Enum {
                field: "spec.tolerations[].operator".to_string(),
                value: other.to_string(),
            });
        }
    };
    Ok(Toleration {
        key: t.key.filter(|k| !k.is_empty()),
        exists,
        value: t.value.unwrap_or_default(),
        effect,
    })
}

pub(super) fn node_selector_term(
    term: core::NodeSelectorTerm,
) -> Result<NodeSelectorTerm, ConvertError> {
    let requirements = |list: Option<Vec<core::NodeSelectorRequirement>>| {
        list.unwrap_or_default()
            .into_iter()
            .map(|r| {
                let operator = match r.operator.as_str() {
                    "In" => NodeOperator::In,
                    "NotIn" => NodeOperator::NotIn,
                    "Exists" => NodeOperator::Exists,
                    "DoesNotExist" => NodeOperator::DoesNotExist,
                    "Gt" => NodeOperator::Gt,
                    "Lt" => NodeOperator::Lt,
                    other => {
                        return Err(ConvertError::Enum {
                            field: "nodeSelectorTerms[].operator".to_string(),
                            value: other.to_string(),
                        });
                    }
                };
                Ok(NodeRequirement {
                    key: r.key,
                    operator,
                    values: r.values.unwrap_or_default(),
                })
            })
            .collect::<Result<Vec<_>, _>>()
    };
    Ok(NodeSelectorTerm {
        expressions: requirements(term.match_expressions)?,
        fields: requirements(term.match_fields)?,
    })
}

/// Fold `matchLabelKeys` (and `mismatchLabelKeys`) into the selector with the owning pod's
/// values, as the scheduler does; keys the pod lacks are ignored.
pub(super) fn with_label_keys(
    selector: Option<Requirements>,
    labels: &Labels,
    match_keys: Option<Vec<String>>,
    mismatch_keys: Option<Vec<String>>,
) -> Option<Requirements> {
    let mut selector = selector?;
    for key in match_keys.unwrap_or_default() {
        if let Some(value) = labels.get(&key) {
            selector.push(Expression::In(key, [value.to_string()].into()));
        }
    }
    for key in mismatch_keys.unwrap_or_default() {
        if let Some(value) = labels.get(&key) {
            selector.push(Expression::NotIn(key, [value.to_string()].into()));
        }
    }
    Some(selector)
}

pub(super) fn affinity_term(
    term: core::PodAffinityTerm,
    labels: &Labels,
    field: &str,
) -> Result<AffinityTerm, ConvertError> {
    let label_selector = term
        .label_selector
        .map(|s| selector(s, field))
        .transpose()?;
    Ok(AffinityTerm {
        selector: with_label_keys(
            label_selector,
            labels,
            term.match_label_keys,
            term.mismatch_label_keys,
        ),
        namespaces: term.namespaces.unwrap_or_default(),
        namespace_selector: term
            .namespace_selector
            .map(|s| selector(s, field))
            .transpose()?,
        topology_key: term.topology_key,
    })
}

pub(super) fn weighted_terms(
    terms: Option<Vec<core::WeightedPodAffinityTerm>>,
    labels: &Labels,
    field: &str,
) -> Result<Vec<WeightedAffinityTerm>, ConvertError> {
    terms
        .unwrap_or_default()
        .into_iter()
        .map(|weighted| {
            Ok(WeightedAffinityTerm {
                weight: weighted.weight,
                term: affinity_term(weighted.pod_affinity_term, labels, field)?,
            })
        })
        .collect()
}

pub(super) fn spread_constraint(
    c: core::TopologySpreadConstraint,
    labels: &Labels,
) -> Result<SpreadConstraint, ConvertError> {
    let field = "spec.topologySpreadConstraints";
    let policy = |value: Option<String>, default_honor: bool, name: &str| match value.as_deref() {
        None | Some("") => Ok(default_honor),
        Some("Honor") => Ok(true),
        Some("Ignore") => Ok(false),
        Some(other) => Err(ConvertError::Enum {
            field: format!("{field}[].{name}"),
            value: other.to_string(),
        }),
    };
    let label_selector = c.label_selector.map(|s| selector(s, field)).transpose()?;
    Ok(SpreadConstraint {
        max_skew: c.max_skew,
        when_unsatisfiable: match c.when_unsatisfiable.as_str() {
            "DoNotSchedule" => WhenUnsatisfiable::DoNotSchedule,
            "ScheduleAnyway" => WhenUnsatisfiable::ScheduleAnyway,
            other => {
                return Err(ConvertError::Enum {
                    field: format!("{field}[].whenUnsatisfiable"),
                    value: other.to_string(),
                });
            }
        },
        selector: with_label_keys(label_selector, labels, c.match_label_keys, None),
        min_domains: c.min_domains,
        honor_node_affinity: policy(c.node_affinity_policy, true, "nodeAffinityPolicy")?,
        honor_node_taints: policy(c.node_taints_policy, false, "nodeTaintsPolicy")?,
        topology_key: c.topology_key,
    })
}
