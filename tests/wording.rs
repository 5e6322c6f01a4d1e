//! Messages in the user's words: serde's own message for a value of the wrong shape names the
//! Rust type it expected (`expected struct ContainerMetrics`), which docs/snapshots.md promises
//! the user never reads. Every type read from input with serde says in words what it expects
//! (`#[serde(expecting = "…")]`), or is read through another type that does (`from`,
//! `try_from`, `transparent`).

use std::fs;
use std::path::Path;

#[path = "support/source.rs"]
mod source;
use source::rust_files;

/// The items after a `Deserialize` derive whose attributes say nothing of what they expect:
/// `file:line item`.
fn unworded(file: &Path, text: &str) -> Vec<String> {
    let lines: Vec<&str> = text.lines().collect();
    let mut found = Vec::new();
    for (at, line) in lines.iter().enumerate() {
        let line = line.trim();
        if !(line.starts_with("#[derive(") && line.contains("Deserialize")) {
            continue;
        }
        let mut attributes = String::new();
        let item = lines[at + 1..]
            .iter()
            .map(|l| l.trim())
            .find(|l| {
                let is_item = l.contains("struct ") || l.contains("enum ");
                if !is_item {
                    attributes.push_str(l);
                }
                is_item
            })
            .unwrap_or_default();
        let worded = ["expecting", "from = ", "try_from = ", "transparent"]
            .iter()
            .any(|word| attributes.contains(word));
        if !worded {
            found.push(format!("{}:{} {item}", file.display(), at + 1));
        }
    }
    found
}

#[test]
fn every_type_serde_reads_says_in_words_what_it_expects() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let files = rust_files(&root.join("src"));
    let unworded: Vec<String> = files
        .iter()
        .flat_map(|file| {
            let text = fs::read_to_string(file).expect("readable");
            unworded(file.strip_prefix(root).expect("in the repository"), &text)
        })
        .collect();
    assert!(
        unworded.is_empty(),
        "add #[serde(expecting = \"…\")]:\n{}",
        unworded.join("\n")
    );
}

#[test]
fn an_item_without_words_is_found_and_one_with_them_is_not() {
    let text = "#[derive(Deserialize)]\n#[serde(default)]\nstruct Bare {}\n\
                #[derive(Deserialize)]\n#[serde(expecting = \"a mapping\")]\nstruct Worded {}\n";
    assert_eq!(unworded(Path::new("x.rs"), text), ["x.rs:1 struct Bare {}"]);
}
