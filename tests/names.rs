//! One name per concept (docs/design.md, the glossary): no two types visible outside their
//! module share a name, so a name read anywhere in src/ means one thing. Read from the source
//! text, as a reviewer would: every `pub`, `pub(crate)`, `pub(super)` struct, enum, union,
//! trait and type alias, outside test modules.
//!
//! Two exceptions, each on purpose:
//! - `Error`, one per fallible module, always written with its module (`kube::Error`).
//! - A `wire` module (`snapshot/decode/wire.rs`, the `mod wire` of `vm_operator/documents.rs`)
//!   spells the API's objects as their JSON does, so its types keep the API's kind names
//!   (`wire::Pod` beside the model's `Pod`). That holds only while they are always written
//!   `wire::Name`: no `use` brings one in bare outside its wire module.

use std::collections::BTreeMap;
use std::fs;
use std::path::Path;

#[path = "support/source.rs"]
mod source;
use source::{code, rust_files, src_dir};

/// Names more than one module may define.
const ALLOWED: &[&str] = &["Error"];

/// The source outside any inline `mod wire { … }`, found by counting braces from its opening.
fn outside_wire_blocks(code: &str) -> String {
    let mut kept = String::new();
    let mut depth: Option<i32> = None;
    for line in code.lines() {
        match depth {
            None if line.trim_start().starts_with("mod wire {") => depth = Some(0),
            None => {
                kept.push_str(line);
                kept.push('\n');
                continue;
            }
            Some(_) => {}
        }
        let opened = line.matches('{').count() as i32 - line.matches('}').count() as i32;
        let now = depth.unwrap_or(0) + opened;
        depth = (now > 0).then_some(now);
    }
    kept
}

/// The names of the types a module's code declares visible beyond itself.
fn visible_types(code: &str) -> Vec<String> {
    let mut names = Vec::new();
    for line in code.lines() {
        let Some(rest) = line.trim_start().strip_prefix("pub") else {
            continue;
        };
        let rest = match rest.strip_prefix('(') {
            Some(scoped) => match scoped.find(')') {
                Some(end) => &scoped[end + 1..],
                None => continue,
            },
            None => rest,
        };
        let mut words = rest.split_whitespace();
        if !matches!(
            words.next(),
            Some("struct" | "enum" | "union" | "trait" | "type")
        ) {
            continue;
        }
        let Some(word) = words.next() else { continue };
        let name: String = word
            .chars()
            .take_while(|c| c.is_alphanumeric() || *c == '_')
            .collect();
        if name.starts_with(|c: char| c.is_ascii_uppercase()) {
            names.push(name);
        }
    }
    names
}

fn is_wire_file(relative: &Path) -> bool {
    relative.file_name().is_some_and(|name| name == "wire.rs")
}

/// `use` lines that bring a wire type in bare (`use super::wire::{Pod};`).
fn bare_wire_imports(code: &str) -> Vec<&str> {
    code.lines()
        .map(str::trim)
        .filter(|line| line.starts_with("use ") || line.starts_with("pub use "))
        .filter(|line| {
            line.match_indices("wire::").any(|(at, _)| {
                line[at + "wire::".len()..].starts_with(|c: char| c == '{' || c.is_uppercase())
            })
        })
        .collect()
}

#[test]
fn no_two_visible_types_share_a_name_outside_error_and_the_wire_modules() {
    let root = src_dir();
    let files = rust_files(&root);
    let mut defined: BTreeMap<String, Vec<String>> = BTreeMap::new();
    for file in &files {
        let relative = file.strip_prefix(&root).expect("below src/");
        if is_wire_file(relative) {
            continue;
        }
        let code = outside_wire_blocks(&code(&fs::read_to_string(file).expect("readable")));
        for name in visible_types(&code) {
            defined
                .entry(name)
                .or_default()
                .push(format!("src/{}", relative.display()));
        }
    }
    let twice: Vec<String> = defined
        .iter()
        .filter(|(name, places)| places.len() > 1 && !ALLOWED.contains(&name.as_str()))
        .map(|(name, places)| format!("`{name}` in {}", places.join(", ")))
        .collect();
    assert!(
        twice.is_empty(),
        "one name per concept: give the more specific type a qualifying name and list it in \
         docs/design.md's glossary\n{}",
        twice.join("\n")
    );
}

#[test]
fn a_wire_type_is_always_written_with_its_module() {
    let root = src_dir();
    let files = rust_files(&root);
    let mut bare = Vec::new();
    for file in &files {
        let relative = file.strip_prefix(&root).expect("below src/");
        if is_wire_file(relative) {
            continue;
        }
        let code = outside_wire_blocks(&code(&fs::read_to_string(file).expect("readable")));
        for line in bare_wire_imports(&code) {
            bare.push(format!("src/{}: {line}", relative.display()));
        }
    }
    assert!(
        bare.is_empty(),
        "write wire types as `wire::Name`: their names repeat the model's\n{}",
        bare.join("\n")
    );
}

#[test]
fn the_name_check_sees_a_repeated_name_and_skips_what_is_exempt() {
    let code = code(
        "pub struct Budget {\n}\npub(crate) enum Outcome<'a> {}\npub(super) type Scope<'a> = \
         u8;\npub trait Position: Copy {}\nstruct Private;\npub fn budget() {}\n\
         #[cfg(test)]\nmod tests {\n    pub struct Fixture;\n}\n",
    );
    assert_eq!(
        visible_types(&code),
        ["Budget", "Outcome", "Scope", "Position"]
    );
    let wire = "pub struct Pod;\nmod wire {\n    use super::*;\n    pub(super) struct Pod {\n        \
                a: u8,\n    }\n}\npub struct Node;\n";
    assert_eq!(visible_types(&outside_wire_blocks(wire)), ["Pod", "Node"]);
    assert_eq!(
        bare_wire_imports("use super::wire::{Node, Pod};\nuse super::wire;\nlet p: wire::Pod;"),
        ["use super::wire::{Node, Pod};"]
    );
    assert!(is_wire_file(Path::new("snapshot/decode/wire.rs")));
}
