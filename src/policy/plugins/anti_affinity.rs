//! `RemovePodsViolatingInterPodAntiAffinity` arguments.

use crate::policy::Namespaces;
use crate::policy::decode::{Decoder, Fields};
use crate::policy::selector::label_selector;
use crate::policy::yaml::Node;

use super::{Strategy, namespaces};

#[derive(Clone, Debug, Default, PartialEq)]
pub struct AntiAffinityArgs {
    pub namespaces: Namespaces,
    pub label_selector: Option<kube::core::Selector>,
}

pub(super) fn decode(d: &mut Decoder, node: &Node, path: &str) -> Strategy {
    let Some(fields) = d.fields(node, path, &["namespaces", "labelSelector"]) else {
        return Strategy::InterPodAntiAffinity(AntiAffinityArgs::default());
    };
    Strategy::InterPodAntiAffinity(AntiAffinityArgs {
        namespaces: namespaces(d, fields.get("namespaces"), &fields.path("namespaces")),
        label_selector: label_selector(
            d,
            fields.get("labelSelector"),
            &fields.path("labelSelector"),
        ),
    })
}

pub(super) const LEGACY_PARAMS: &[&str] = &["labelSelector"];

pub(super) fn from_v1alpha1(
    d: &mut Decoder,
    params: &Fields<'_>,
    namespaces: Namespaces,
) -> Strategy {
    Strategy::InterPodAntiAffinity(AntiAffinityArgs {
        namespaces,
        label_selector: label_selector(
            d,
            params.get("labelSelector"),
            &params.path("labelSelector"),
        ),
    })
}
