//! A YAML snapshot read through [`yaml_json`]: each document's fields and each list item are
//! rewritten as JSON and converted by the JSON reader's visitors, the items of a big list on
//! every core.
//!
//! Like the JSON stream, this decides nothing about errors: on a document it does not take, an
//! item neither it nor serde-saphyr reads on its own, or an object that does not convert, it
//! gives up, and the text is read whole by serde-saphyr as before, which words the problem
//! exactly as it always has.

use serde::Deserialize;
use serde_json::Value;

use super::parallel::in_chunks;
use super::sink::{Growth, ItemType, Objects, Source, object};
use super::yaml_json;
use super::yaml_options::yaml_options_within;
use super::yaml_split::line_ended;
use crate::snapshot::model::Interner;

/// Why the text is not read this way (logged at debug level; serde-saphyr then reads it).
#[derive(Debug, PartialEq, Eq, thiserror::Error)]
pub(in crate::snapshot) enum YamlFallback {
    #[error("the text has carriage returns alone, a byte order mark, directives or `...`")]
    Form,
    #[error("document {0} is not a block mapping the reader takes")]
    Document(usize),
    #[error("document {0} is empty")]
    Empty(usize),
    #[error("a list item does not read on its own")]
    Item,
    #[error("an object does not convert")]
    Conversion,
}

/// Read YAML snapshot text; `Err` says why it was not read this way.
pub(in crate::snapshot) fn read(text: &str) -> Result<Objects, YamlFallback> {
    let mut objects = Objects::default();
    for (index, document) in documents(text)?.into_iter().enumerate() {
        objects.extend(read_document(document, index + 1)?);
    }
    Ok(objects)
}

/// The documents of the text, split at its `---` lines.
fn documents(text: &str) -> Result<Vec<&str>, YamlFallback> {
    // CR LF ends a line as LF does; a carriage return alone, which YAML reads as a line break
    // too, is left to serde-saphyr.
    let odd = lone_carriage_return(text)
        || text.starts_with(['\u{feff}', '%'])
        || text.starts_with("...")
        || text.contains("\n%")
        || text.contains("\n...");
    if odd {
        return Err(YamlFallback::Form);
    }
    let mut starts = vec![0];
    let mut search = 0;
    while let Some(found) = text[search..].find("---") {
        let at = search + found;
        search = at + 3;
        if at > 0 && text.as_bytes()[at - 1] != b'\n' {
            continue;
        }
        // `--- !tag`, `--- value` and the like are left to serde-saphyr.
        if !matches!(text.as_bytes().get(at + 3), None | Some(b'\n' | b'\r')) {
            return Err(YamlFallback::Form);
        }
        starts.push(at);
    }
    let ends = starts.iter().skip(1).copied().chain([text.len()]);
    let mut documents = Vec::with_capacity(starts.len());
    for (index, (start, end)) in starts.iter().zip(ends).enumerate() {
        let document = text[*start..end]
            .strip_prefix("---")
            .unwrap_or(&text[*start..end]);
        if is_blank(document) {
            // Only what precedes a first `---` may be empty.
            if index == 0 && starts.len() > 1 {
                continue;
            }
            return Err(YamlFallback::Empty(documents.len() + 1));
        }
        documents.push(document);
    }
    Ok(documents)
}

/// Whether the text has a carriage return that is not followed by a line feed.
fn lone_carriage_return(text: &str) -> bool {
    text.match_indices('\r')
        .any(|(at, _)| text.as_bytes().get(at + 1) != Some(&b'\n'))
}

/// Whether a document has nothing but blank lines and comments.
fn is_blank(document: &str) -> bool {
    document.lines().all(|line| {
        let line = line.trim_start_matches(' ');
        line.is_empty() || line.starts_with('#')
    })
}

/// The fields of a document that say what it is; others are skipped.
#[derive(Deserialize)]
#[serde(expecting = "a Kubernetes object (a mapping with apiVersion and kind)")]
struct Header {
    #[serde(default, rename = "apiVersion")]
    api_version: Option<Value>,
    #[serde(default)]
    kind: Option<Value>,
}

/// One document, read as serde-saphyr's reader of documents reads it: a list's items, an
/// empty list, or one object.
fn read_document(text: &str, number: usize) -> Result<Objects, YamlFallback> {
    let document = yaml_json::document(text).map_err(|_| YamlFallback::Document(number))?;
    let header: Header =
        serde_json::from_str(&document.fields).map_err(|_| YamlFallback::Document(number))?;
    let api_version = text_of(header.api_version.as_ref());
    let kind = text_of(header.kind.as_ref());
    match document.items {
        Some(items) => convert_items(&items, ItemType::of(api_version, kind)),
        None if kind == "List" || kind.ends_with("List") => Ok(Objects::default()),
        None => object(
            Source::Raw(&document.fields),
            None,
            &mut Interner::default(),
        )
        .map_err(|_| YamlFallback::Conversion),
    }
}

/// A header field's text: empty when absent or not a string, as the reader of documents has it.
fn text_of(value: Option<&Value>) -> &str {
    value.and_then(Value::as_str).unwrap_or("")
}

/// Objects converted from a list's items: those that name their type, then those that are
/// of the list's type (`item_type`), each group in the order of the text.
#[derive(Default)]
struct Converted {
    typed: Objects,
    untyped: Objects,
}

/// Convert a list's items, in parallel chunks on big lists.
fn convert_items(items: &[&str], item_type: Option<ItemType>) -> Result<Objects, YamlFallback> {
    let chunks = in_chunks(items, |chunk| convert_chunk(chunk, item_type));
    let mut typed = Objects::default();
    let mut untyped = Objects::default();
    for chunk in chunks {
        let chunk = chunk?;
        typed.extend(chunk.typed);
        untyped.extend(chunk.untyped);
    }
    typed.extend(untyped);
    Ok(typed)
}

/// Convert items on one thread, sharing label texts through one interner.
fn convert_chunk(items: &[&str], item_type: Option<ItemType>) -> Result<Converted, YamlFallback> {
    let mut converted = Converted::default();
    let mut interner = Interner::default();
    let mut json = String::new();
    for item in items {
        json.clear();
        let typed = match yaml_json::item(item, &mut json) {
            Ok(read) => read.typed,
            Err(yaml_json::Unsupported) => {
                json.clear();
                item_by_serde_saphyr(item, &mut json)?
            }
        };
        let (into, item_type) = if typed {
            (&mut converted.typed, None)
        } else {
            (&mut converted.untyped, item_type)
        };
        let objects = object(Source::Raw(&json), item_type, &mut interner)
            .map_err(|_| YamlFallback::Conversion)?;
        into.extend_growing(objects, Growth::Doubling);
    }
    converted.typed.shrink_to_fit();
    converted.untyped.shrink_to_fit();
    Ok(converted)
}

/// An item `yaml_json` does not take, read by serde-saphyr on its own (a one-entry sequence)
/// and written to `json`; whether it names its own type.
fn item_by_serde_saphyr(item: &str, json: &mut String) -> Result<bool, YamlFallback> {
    // Alone, the item sits in a one-entry list; in its document, in a List's mapping and items.
    let options = yaml_options_within(item.len(), 1);
    // The last item of a file may end without a line break, which kubectl's reader adds.
    let values: Vec<Value> = serde_saphyr::from_str_with_options(&line_ended(item), options)
        .map_err(|_| YamlFallback::Item)?;
    let [value] = values.as_slice() else {
        return Err(YamlFallback::Item);
    };
    json.push_str(&serde_json::to_string(value).map_err(|_| YamlFallback::Item)?);
    Ok(value.get("apiVersion").is_some() || value.get("kind").is_some())
}

#[cfg(test)]
mod tests {
    use std::path::{Path, PathBuf};

    use super::read;
    use crate::snapshot::read::Objects;
    use crate::snapshot::read::tests::variants;
    use crate::snapshot::read::yaml::read_yaml_documents;

    /// Every YAML file of the project's fixtures: snapshots, policies and expectations.
    fn yaml_fixtures() -> Vec<(PathBuf, String)> {
        fn walk(directory: &Path, found: &mut Vec<(PathBuf, String)>) {
            let mut entries: Vec<_> = std::fs::read_dir(directory)
                .expect("a fixture directory")
                .map(|entry| entry.expect("an entry").path())
                .collect();
            entries.sort();
            for path in entries {
                if path.is_dir() {
                    walk(&path, found);
                } else if path.extension().is_some_and(|e| e == "yaml" || e == "yml") {
                    // Some fixtures are deliberately not text.
                    let bytes = std::fs::read(&path).expect("a readable fixture");
                    if let Ok(text) = String::from_utf8(bytes) {
                        found.push((path, text));
                    }
                }
            }
        }
        let mut found = Vec::new();
        walk(
            &Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures"),
            &mut found,
        );
        found
    }

    fn outcome<E: std::fmt::Display>(read: Result<Objects, E>) -> String {
        match read {
            Ok(objects) => format!("{objects:?}"),
            Err(error) => format!("error: {error}"),
        }
    }

    #[test]
    fn every_yaml_fixture_reads_through_json_as_serde_saphyr_reads_it() {
        let fixtures = yaml_fixtures();
        // The emitters' fixtures are in every style on purpose, most of them not kubectl's.
        let kubectl_style =
            |path: &Path| !path.components().any(|part| part.as_os_str() == "emitters");
        let (mut taken, mut kubectl_taken) = (0, 0);
        for (path, text) in &fixtures {
            if let Ok(objects) = read(text) {
                taken += 1;
                kubectl_taken += usize::from(kubectl_style(path));
                let expected = outcome(read_yaml_documents(text));
                assert_eq!(format!("{objects:?}"), expected, "{}", path.display());
            }
        }
        let kubectl_fixtures = fixtures
            .iter()
            .filter(|(path, _)| kubectl_style(path))
            .count();
        assert!(kubectl_fixtures > 100, "fixtures found: {kubectl_fixtures}");
        assert!(
            kubectl_taken * 100 >= kubectl_fixtures * 95,
            "most fixtures are read through JSON: {kubectl_taken} of {kubectl_fixtures}"
        );
        assert!(
            taken > kubectl_taken,
            "some emitters' fixtures are read through JSON"
        );
    }

    /// What `kubectl get pods,nodes -o yaml` writes, managed fields, wrapped messages and all,
    /// is read through JSON, every item of it.
    #[test]
    fn kubectl_output_is_read_through_json_as_serde_saphyr_reads_it() {
        let text = include_str!("../../../tests/fixtures/yaml/kubectl-pods.yaml");
        let document = super::yaml_json::document(text).expect("taken");
        let items = document.items.expect("a list");
        let mut json = String::new();
        for item in &items {
            json.clear();
            super::yaml_json::item(item, &mut json).unwrap_or_else(|_| panic!("not taken: {item}"));
        }
        let objects = read(text).expect("read through JSON");
        assert_eq!((objects.pods.len(), objects.nodes.len()), (2, 1));
        assert_eq!(format!("{objects:?}"), outcome(read_yaml_documents(text)));
    }

    #[test]
    fn mutated_yaml_snapshots_read_through_json_only_as_serde_saphyr_reads_them() {
        let fixtures = yaml_fixtures();
        let snapshots = fixtures
            .iter()
            .filter(|(path, _)| path.ends_with("snapshot.yaml"))
            .take(12);
        let (mut taken, mut refused) = (0, 0);
        for (path, text) in snapshots {
            for bytes in variants(text, 150) {
                // What `read_text` lets through: text without control characters but tab,
                // CR and LF.
                let Ok(text) = String::from_utf8(bytes) else {
                    continue;
                };
                if text
                    .chars()
                    .any(|c| c.is_control() && !matches!(c, '\t' | '\n' | '\r'))
                {
                    continue;
                }
                let expected = outcome(read_yaml_documents(&text));
                match read(&text) {
                    Ok(objects) => {
                        taken += 1;
                        assert_eq!(
                            format!("{objects:?}"),
                            expected,
                            "{}:\n{text}",
                            path.display()
                        );
                    }
                    Err(_) => refused += usize::from(expected.starts_with("error: ")),
                }
            }
        }
        assert!(taken > 300, "variants read through JSON: {taken}");
        assert!(
            refused > 300,
            "broken variants left to serde-saphyr: {refused}"
        );
    }
}
