//! The forms kubectl reads a snapshot in, each read as the plain form is: every YAML fixture of
//! the project re-encoded (a byte order mark, UTF-16, CR LF, `...` ends, JSON, JSON documents
//! separated by `---`, flow-style YAML) and read as a file, which is how `plan` reads it (JSON
//! through the stream first, anything else whole), must give the same objects, in the same order,
//! as its LF UTF-8 YAML; and so must what real emitters wrote of three of them
//! (`tests/fixtures/emitters/`). Then what YAML writers put in big files: one anchor reused
//! thousands of times, thousands of merge keys, a tag on every scalar.

use std::path::{Path, PathBuf};

use serde_json::Value;

use super::{FileSizeLimit, Objects, read_file, read_str};

/// Every snapshot fixture that reads, with its text.
fn fixtures() -> Vec<(PathBuf, String)> {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures");
    let mut paths: Vec<PathBuf> = std::fs::read_dir(root.join("plan"))
        .expect("the plan fixtures")
        .map(|entry| entry.expect("an entry").path().join("snapshot.yaml"))
        .filter(|path| path.is_file())
        .collect();
    paths.push(root.join("yaml/kubectl-pods.yaml"));
    paths.sort();
    paths
        .into_iter()
        .map(|path| {
            let text = std::fs::read_to_string(&path).expect("a readable fixture");
            (path, text)
        })
        .filter(|(_, text)| read_str(text).is_ok())
        .collect()
}

/// The documents of YAML text, as JSON values.
fn documents(text: &str) -> Vec<Value> {
    serde_saphyr::from_multiple(text).expect("the fixture is YAML")
}

fn utf16(text: &str, little: bool) -> Vec<u8> {
    let mark: [u8; 2] = if little { [0xff, 0xfe] } else { [0xfe, 0xff] };
    let mut bytes = mark.to_vec();
    for unit in text.encode_utf16() {
        bytes.extend(if little {
            unit.to_le_bytes()
        } else {
            unit.to_be_bytes()
        });
    }
    bytes
}

fn marked(text: &str) -> Vec<u8> {
    [&[0xef, 0xbb, 0xbf][..], text.as_bytes()].concat()
}

/// A JSON value as flow-style YAML, `{apiVersion: v1, kind: Node, …}`: keys plain where YAML
/// reads them as the same text, strings double-quoted (JSON's escapes are YAML's).
fn flow_yaml(value: &Value, out: &mut String) {
    match value {
        Value::Object(fields) => {
            out.push('{');
            for (index, (key, value)) in fields.iter().enumerate() {
                if index > 0 {
                    out.push_str(", ");
                }
                if plain_key(key) {
                    out.push_str(key);
                } else {
                    out.push_str(&Value::String(key.clone()).to_string());
                }
                out.push_str(": ");
                flow_yaml(value, out);
            }
            out.push('}');
        }
        Value::Array(items) => {
            out.push('[');
            for (index, item) in items.iter().enumerate() {
                if index > 0 {
                    out.push_str(", ");
                }
                flow_yaml(item, out);
            }
            out.push(']');
        }
        scalar => out.push_str(&scalar.to_string()),
    }
}

/// Whether YAML reads `key` unquoted as that same text: a name, not a word YAML types.
fn plain_key(key: &str) -> bool {
    let words = ["y", "n", "yes", "no", "on", "off", "true", "false", "null"];
    key.starts_with(|c: char| c.is_ascii_alphabetic())
        && key
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '.' | '/'))
        && !words.iter().any(|word| word.eq_ignore_ascii_case(key))
}

/// The forms of one fixture: name and bytes.
fn forms(text: &str) -> Vec<(&'static str, Vec<u8>)> {
    let values = documents(text);
    let json: Vec<String> = values
        .iter()
        .map(|value| serde_json::to_string_pretty(value).expect("JSON"))
        .collect();
    let flow: Vec<String> = values
        .iter()
        .map(|value| {
            let mut out = String::new();
            flow_yaml(value, &mut out);
            out
        })
        .collect();
    let crlf = text.replace('\n', "\r\n");
    let ended: String = text
        .split("\n---\n")
        .map(|document| format!("{}\n...\n", document.trim_end_matches('\n')))
        .collect::<Vec<_>>()
        .join("---\n");
    let stream = json.join("\n");
    vec![
        ("YAML, byte order mark", marked(text)),
        ("YAML, CR LF", crlf.clone().into_bytes()),
        ("YAML, CR LF and a byte order mark", marked(&crlf)),
        ("YAML, UTF-16 LE", utf16(text, true)),
        ("YAML, UTF-16 BE", utf16(text, false)),
        ("YAML, UTF-16 LE, CR LF", utf16(&crlf, true)),
        ("YAML, documents ended by ...", ended.into_bytes()),
        ("JSON", stream.clone().into_bytes()),
        ("JSON, byte order mark", marked(&stream)),
        ("JSON, UTF-16 LE", utf16(&stream, true)),
        ("JSON, CR LF", stream.replace('\n', "\r\n").into_bytes()),
        (
            "JSON documents separated by ---",
            json.join("\n---\n").into_bytes(),
        ),
        ("flow-style YAML", flow.join("\n---\n").into_bytes()),
        ("flow-style YAML, one line per document", {
            let mut lines = flow.join("\n---\n");
            lines.push('\n');
            lines.into_bytes()
        }),
    ]
}

fn read_bytes(path: &Path, bytes: &[u8]) -> Result<Objects, String> {
    std::fs::write(path, bytes).expect("writable");
    read_file(path, FileSizeLimit::DEFAULT).map_err(|error| error.to_string())
}

#[test]
fn every_form_kubectl_reads_gives_the_objects_of_the_plain_yaml() {
    let directory = tempfile::tempdir().expect("a temporary directory");
    let fixtures = fixtures();
    assert!(fixtures.len() > 40, "fixtures: {}", fixtures.len());
    let mut read = 0;
    for (path, text) in &fixtures {
        let expected = format!("{:?}", read_str(text).expect("read above"));
        for (form, bytes) in forms(text) {
            let file = directory.path().join("snapshot");
            let objects = read_bytes(&file, &bytes)
                .unwrap_or_else(|error| panic!("{}, {form}: {error}", path.display()));
            assert_eq!(
                format!("{objects:?}"),
                expected,
                "{}, {form}",
                path.display()
            );
            read += 1;
        }
    }
    assert!(read > 500, "forms read: {read}");
}

/// What real tools write: `tests/fixtures/emitters/<name>/` holds a source fixture's objects as
/// PyYAML (block, flow, canonical, with aliases, CR LF with `---` and `...`), yq, kubectl, jq,
/// Perl's JSON::PP and Node.js wrote them, and in UTF-16 and with a byte order mark
/// (`scripts/emitter-fixtures.py` writes them). Each must give the source's objects.
#[test]
fn what_every_emitter_wrote_gives_the_objects_of_its_source() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let mut directories: Vec<PathBuf> = std::fs::read_dir(root.join("tests/fixtures/emitters"))
        .expect("the emitters' fixtures")
        .map(|entry| entry.expect("an entry").path())
        .filter(|path| path.is_dir())
        .collect();
    directories.sort();
    assert!(directories.len() >= 3, "{directories:?}");
    let mut read = 0;
    for directory in directories {
        let source = std::fs::read_to_string(directory.join("source")).expect("its source");
        let source = std::fs::read_to_string(root.join(source.trim())).expect("the source");
        let expected = format!("{:?}", read_str(&source).expect("the source reads"));
        let mut files: Vec<PathBuf> = std::fs::read_dir(&directory)
            .expect("a directory")
            .map(|entry| entry.expect("an entry").path())
            .filter(|path| path.file_name().is_some_and(|name| name != "source"))
            .collect();
        files.sort();
        for file in files {
            let objects = read_file(&file, FileSizeLimit::DEFAULT)
                .unwrap_or_else(|error| panic!("{}: {error}", file.display()));
            assert_eq!(format!("{objects:?}"), expected, "{}", file.display());
            read += 1;
        }
    }
    assert!(read >= 40, "files read: {read}");
}

/// `count` pods of one Deployment, as a List, in plain block YAML.
fn pods(count: usize, labels: &str, extra: &str) -> String {
    let mut text = String::from(
        "apiVersion: v1\nkind: List\nitems:\n- apiVersion: v1\n  kind: Node\n  metadata:\n    \
         name: w1\n  status:\n    allocatable: {cpu: '4', memory: 8Gi, pods: '110'}\n",
    );
    for i in 0..count {
        text.push_str(&format!(
            "- apiVersion: v1\n  kind: Pod\n  metadata:\n    name: web-{i}\n    namespace: \
             shop\n    labels: {labels}\n  spec:\n    nodeName: w1\n    containers:\n    - \
             name: c\n{extra}"
        ));
    }
    text
}

fn objects(text: &str) -> String {
    match read_str(text) {
        Ok(objects) => format!("{objects:?}"),
        Err(error) => format!("error: {error}"),
    }
}

#[test]
fn one_anchor_reused_thousands_of_times_reads_as_the_mapping_written_out() {
    // What PyYAML writes when a script puts one dict in every pod.
    let plain = pods(3000, "{app: web, tier: front}", "");
    let aliased = pods(3000, "*labels", "").replacen(
        "labels: *labels",
        "labels: &labels {app: web, tier: front}",
        1,
    );
    assert_eq!(aliased.matches("*labels").count(), 2999);
    assert!(!objects(&plain).starts_with("error"));
    assert_eq!(objects(&aliased), objects(&plain));
}

#[test]
fn thousands_of_merge_keys_and_a_tag_on_every_scalar_read_as_written_out() {
    let requests = |requests: &str| format!("    resources: {{requests: {requests}}}\n");
    let plain = pods(11_000, "{app: web}", &requests("{cpu: 100m}"));
    let expected = objects(&plain);
    assert!(!expected.starts_with("error"), "{expected}");
    // The List's own fields are not read: one of them holds the anchor.
    let merged = pods(11_000, "{app: web}", &requests("{<<: *requests}")).replacen(
        "kind: List\n",
        "kind: List\nanchors: &requests {cpu: 100m}\n",
        1,
    );
    assert_eq!(merged.matches("<<: *requests").count(), 11_000);
    assert_eq!(objects(&merged), expected);
    let tagged = plain.replace(": ", ": !!str ").replace("!!str {", "{");
    assert!(tagged.matches("!!str").count() > 50_000);
    assert_eq!(objects(&tagged), expected);
}
