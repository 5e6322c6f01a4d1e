//! The limits of every serde-saphyr read of snapshot text. What the text itself holds (values,
//! events, text, anchors) scales with the size of the text read, which is one document at a
//! time (the reader cuts a stream into its documents, `yaml_split`), never the whole file;
//! what aliases multiply that into is a fixed amount per document, whatever its size, so that
//! padding a file (or a document) does not let a "billion laughs" grow with it. Nesting is held
//! to the depth every reader takes.

use super::structure::MAX_DEPTH;

/// The most events the aliases of one document may replay. What they replay is built into the
/// document's values before the document is converted, so this bounds the memory an alias
/// bomb takes: about 90 MiB at this size (docs/snapshots.md, "Anchors and aliases: memory").
/// No generator of snapshots comes near it: kubectl and the tool's own `snapshot` write no
/// aliases at all, and PyYAML writes one where a script reused an object, such as one dict of
/// tolerations shared by every pod: ten thousand reuses of a twenty-event mapping replay
/// 200,000 events. serde-saphyr counts it per document.
const MAX_REPLAYED_EVENTS: usize = 500_000;

/// The most event copies the anchors of one document may record. An anchor records its node
/// once, but an alias inside an anchored node is recorded as everything it replays, which grows
/// geometrically in an alias bomb: this is the other half of what one costs. PyYAML's anchors
/// record each shared object once, a few dozen events each.
const MAX_RECORDED_ANCHOR_EVENTS: usize = 500_000;

/// The most bytes of text the anchors of one document may record (text the parser had to copy:
/// escaped or folded values; text borrowed from the input costs nothing). Shared objects are a
/// few hundred bytes each.
const MAX_RECORDED_ANCHOR_BYTES: usize = 16 << 20;

/// The options of every serde-saphyr read of a snapshot document (or a part of one, such as a
/// list item) of `len` bytes of text.
pub(super) fn yaml_options(len: usize) -> serde_saphyr::Options {
    yaml_options_within(len, 0)
}

/// The options of a serde-saphyr read of `len` bytes of snapshot text that sit `enclosed`
/// levels deeper in their document than they do alone, so that they may nest as deep as their
/// document allows and no deeper.
pub(super) fn yaml_options_within(len: usize, enclosed: usize) -> serde_saphyr::Options {
    serde_saphyr::options! {
        budget: serde_saphyr::budget! {
            // Scale with the text: a big document is legitimate. Replayed events count here
            // too, so a small document's aliases stop at the floors.
            max_events: len.max(1_000_000),
            max_nodes: len.max(250_000),
            max_documents: len.max(1_024),
            // Tags count as the parser spells them out: `!!str ` (6 bytes) as
            // `tag:yaml.org,2002:str` (21), so a file that tags every scalar, as PyYAML's
            // canonical form does, counts more than its size. Text an alias replays counts
            // too: at most three times the document's own.
            max_total_scalar_bytes: len.saturating_mul(4).max(1 << 20),
            max_reader_input_bytes: None,
            // An anchor or an alias takes two bytes at least: these never bind before the
            // text's size does.
            max_anchors: len.max(50_000),
            max_aliases: len.max(50_000),
            max_merge_keys: len.max(10_000),
            max_recorded_anchor_events: MAX_RECORDED_ANCHOR_EVENTS,
            max_recorded_anchor_bytes: MAX_RECORDED_ANCHOR_BYTES,
            // PyYAML writes an anchor on a mapping a script reuses and an alias at every
            // reuse: one anchor used thousands of times is an ordinary file. What aliases may
            // cost is bounded by the events they replay instead (below).
            enforce_alias_anchor_ratio: false,
            max_depth: MAX_DEPTH - enclosed,
            // The parser reads flow collections (`[[[…`) ahead of the depth count: held to the
            // same limit, so that no form nests deeper.
            flow_nesting_limit: MAX_DEPTH - enclosed,
        },
        alias_limits: serde_saphyr::alias_limits! {
            max_total_replayed_events: MAX_REPLAYED_EVENTS,
        },
        // Numbers as kubectl reads them (YAML 1.1): `0777` is octal 511.
        legacy_octal_numbers: true,
    }
}
