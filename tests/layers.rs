//! The planner's layers keep their order: a module of `src/plan/` names only the layers at or
//! below its own (docs/design.md, the module map). Read from the source text, as a reviewer
//! would: every `crate::plan::<layer>` path, and every `super::` path that climbs to `plan`,
//! outside test modules. A name `plan` re-exports (`crate::plan::Plan`) is the top's, so the
//! layers below the plugins must not use that short way either.

use std::fs;
use std::path::{Path, PathBuf};

#[path = "support/source.rs"]
mod source;
use source::{code, rust_files};

/// Bottom first. A module in a layer may name its own layer and those before it.
const LAYERS: &[&str] = &[
    "model",
    "vsphere",
    "view",
    "judge",
    "exposure",
    "vocabulary",
    "drs",
    "plugins",
    "what_if",
    "phases",
    "testing",
];

/// Builders for tests (`#[cfg(test)]` only): test code at any layer may use them.
const TEST_SUPPORT: &str = "testing";

/// The layers whose modules must not reach the top's re-exports (`crate::plan::Name`): all
/// those below the plugins, which `plan()` composes.
const BELOW_THE_TOP: usize = 7;

fn plan_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("src/plan")
}

/// The file's layer and its depth below `plan/` (`plan/judge.rs` and `plan/judge/budget.rs`
/// are both in `judge`, at depths 1 and 2); `None` for `plan/mod.rs`, which composes them.
fn layer_of(relative: &Path) -> Option<(&'static str, usize)> {
    let parts: Vec<&str> = relative
        .iter()
        .map(|p| p.to_str().expect("UTF-8"))
        .collect();
    let first = parts.first()?.trim_end_matches(".rs");
    if first == "mod" {
        return None;
    }
    let layer = LAYERS.iter().find(|l| **l == first).unwrap_or_else(|| {
        panic!(
            "src/plan/{} is in no layer: add it to LAYERS here and to the module map",
            relative.display()
        )
    });
    let depth = parts.len() - usize::from(parts.last() == Some(&"mod.rs"));
    Some((layer, depth))
}

/// The first segment after each occurrence of `prefix`: `crate::plan::view::index` → `view`;
/// `{` for a group.
fn segments_after<'a>(code: &'a str, prefix: &str) -> Vec<&'a str> {
    code.match_indices(prefix)
        .filter(|(at, _)| {
            // `super::` must not be the tail of a longer `super::super::`.
            !code[..*at].ends_with("::")
        })
        .map(|(at, _)| {
            let rest = &code[at + prefix.len()..];
            let end = rest
                .find(|c: char| !(c.is_alphanumeric() || c == '_'))
                .unwrap_or(rest.len());
            if end == 0 {
                &rest[..1.min(rest.len())]
            } else {
                &rest[..end]
            }
        })
        .collect()
}

#[test]
fn every_module_of_the_planner_names_only_its_own_layer_and_those_below() {
    let root = plan_dir();
    let files = rust_files(&root);
    let mut wrong = Vec::new();
    for file in &files {
        let relative = file.strip_prefix(&root).expect("below plan/");
        let Some((layer, depth)) = layer_of(relative) else {
            continue;
        };
        let rank = LAYERS.iter().position(|l| *l == layer).expect("a layer");
        let code = code(&fs::read_to_string(file).expect("readable"));
        let to_plan = "super::".repeat(depth);
        let mut named = segments_after(&code, "crate::plan::");
        if depth > 0 {
            named.extend(segments_after(&code, &to_plan));
        }
        for name in named {
            let shown = format!("src/plan/{}", relative.display());
            match LAYERS.iter().position(|l| *l == name) {
                Some(_) if name == TEST_SUPPORT => {}
                Some(other) if other > rank => {
                    wrong.push(format!("{shown} ({layer}) names {name}, a layer above it"))
                }
                Some(_) => {}
                None if rank < BELOW_THE_TOP => wrong.push(format!(
                    "{shown} ({layer}) names plan's `{name}`: name the layer that defines it"
                )),
                None => {}
            }
        }
    }
    assert!(wrong.is_empty(), "{}", wrong.join("\n"));
}

#[test]
fn the_layer_check_sees_an_import_that_runs_up() {
    let code = code("use crate::plan::vocabulary::Plan;\nuse super::super::view::View;\n");
    assert_eq!(segments_after(&code, "crate::plan::"), ["vocabulary"]);
    assert_eq!(segments_after(&code, "super::super::"), ["view"]);
    // One level up from plan/judge/budget.rs is judge itself, not plan.
    assert!(segments_after("use super::index::PodIx;", "super::super::").is_empty());
    assert_eq!(layer_of(Path::new("judge/budget.rs")), Some(("judge", 2)));
    assert_eq!(layer_of(Path::new("what_if/mod.rs")), Some(("what_if", 1)));
    assert_eq!(layer_of(Path::new("mod.rs")), None);
}

/// One module style in src/: a module with children is `name.rs` beside its folder `name/`,
/// never `name/mod.rs`, so a file's name says which module it is.
#[test]
fn no_module_of_the_crate_is_a_mod_rs() {
    let files = rust_files(&Path::new(env!("CARGO_MANIFEST_DIR")).join("src"));
    let mod_rs: Vec<_> = files
        .iter()
        .filter(|f| f.file_name().is_some_and(|n| n == "mod.rs"))
        .collect();
    assert!(mod_rs.is_empty(), "move each to <folder>.rs: {mod_rs:?}");
}
