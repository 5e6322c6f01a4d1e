//! The limits of every serde-saphyr read of snapshot text: they scale with the text's size, and
//! hold nesting to the depth every reader takes.

use super::structure::MAX_DEPTH;

/// The options of every serde-saphyr read of snapshot documents, `len` bytes of text.
pub(super) fn yaml_options(len: usize) -> serde_saphyr::Options {
    yaml_options_within(len, 0)
}

/// The options of a serde-saphyr read of `len` bytes of snapshot text that sit `enclosed`
/// levels deeper in their document than they do alone, so that they may nest as deep as their
/// document allows and no deeper.
pub(super) fn yaml_options_within(len: usize, enclosed: usize) -> serde_saphyr::Options {
    serde_saphyr::options! {
        budget: serde_saphyr::budget! {
            // Scale with the input: big snapshots are legitimate, amplification is not.
            max_events: len.max(1_000_000),
            max_nodes: len.max(250_000),
            max_documents: len.max(1_024),
            // Tags count as the parser spells them out: `!!str ` (6 bytes) as
            // `tag:yaml.org,2002:str` (21), so a file that tags every scalar, as PyYAML's
            // canonical form does, counts more than its size.
            max_total_scalar_bytes: len.saturating_mul(4).max(1 << 20),
            max_reader_input_bytes: None,
            // An anchor or an alias takes two bytes at least: these never bind before the
            // text's size does.
            max_anchors: len.max(50_000),
            max_aliases: len.max(50_000),
            max_merge_keys: len.max(10_000),
            max_recorded_anchor_events: len.max(1_000_000),
            max_recorded_anchor_bytes: len.max(64 << 20),
            // PyYAML writes an anchor on a mapping a script reuses and an alias at every
            // reuse: one anchor used thousands of times is an ordinary file. What aliases may
            // cost is bounded by the events they replay instead (below).
            enforce_alias_anchor_ratio: false,
            max_depth: MAX_DEPTH - enclosed,
            // The parser reads flow collections (`[[[…`) ahead of the depth count: held to the
            // same limit, so that no form nests deeper.
            flow_nesting_limit: MAX_DEPTH - enclosed,
        },
        // What aliases replay grows with the text, never past it: a "billion laughs" of a few
        // lines is refused.
        alias_limits: serde_saphyr::alias_limits! {
            max_total_replayed_events: len.max(1_000_000),
        },
        // Numbers as kubectl reads them (YAML 1.1): `0777` is octal 511.
        legacy_octal_numbers: true,
    }
}
