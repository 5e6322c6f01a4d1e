//! Pod annotations the planner reads; every other annotation is ignored (and not recorded).
//! Decoding ([`super::wire`]) filters by them, conversion and pruning read them: their own
//! module, so the decoder and the converter need not import each other for them.

pub(super) const MIRROR_ANNOTATION: &str = "kubernetes.io/config.mirror";
pub(super) const CONFIG_SOURCE_ANNOTATION: &str = "kubernetes.io/config.source";
pub(super) const EVICT_ANNOTATION: &str = "descheduler.alpha.kubernetes.io/evict";
pub(super) const PREFER_NO_EVICTION_ANNOTATION: &str =
    "descheduler.alpha.kubernetes.io/prefer-no-eviction";
