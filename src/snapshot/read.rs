//! Reading snapshot files: streams of Kubernetes objects (single objects, `List`s, several
//! YAML documents, or several concatenated JSON documents) and `VSphereInventory` documents.
//!
//! Each document is reduced to the planner's types as soon as it is read, and list items one at
//! a time, so a 150,000-pod `kubectl get pods -o json` never exists as a tree in memory.
//!
//! One module per input form ([`stream`] and [`json_scan`]: the JSON file as a stream; [`json`]:
//! whole JSON text; [`yaml_items`] and [`yaml_json`]: block YAML through JSON; [`yaml`]: YAML by
//! serde-saphyr), over the object sink at the bottom ([`sink`]), the file's text ([`text`]),
//! positions ([`position`]), nesting limits ([`structure`], [`yaml_options`]), a YAML stream
//! cut into its documents ([`yaml_split`]) and the one place threads are used ([`parallel`]).
//! Imports go from the forms down, never back.

mod error;
#[cfg(test)]
mod forms;
mod json;
mod json_scan;
pub(super) mod locate;
mod parallel;
mod position;
mod sink;
mod stream;
mod structure;
mod text;
mod yaml;
pub(super) mod yaml_items;
mod yaml_json;
mod yaml_options;
mod yaml_split;

use std::path::Path;

use crate::encoding::without_mark;
use crate::stack::on_reader_stack;
pub use error::{FileSizeLimit, InvalidFileSize, NotText, SnapshotError};
pub use position::{ParseError, Position};
pub use sink::{METRICS_API_VERSION, Objects};
pub use structure::MAX_DEPTH;
pub(super) use text::read_text;

/// Read one snapshot file of at most `limit` bytes, opened once. A JSON file is read as a
/// stream, its text never held whole; anything the stream does not take (YAML, a problem, a
/// pipe) is read whole, which is also what words every error, on from what the stream read.
pub fn read_file(path: &Path, limit: FileSizeLimit) -> Result<Objects, SnapshotError> {
    read_opened(path, text::open(path, limit)?, limit)
}

/// [`read_file`] of a file already opened.
fn read_opened(
    path: &Path,
    mut opened: text::Opened,
    limit: FileSizeLimit,
) -> Result<Objects, SnapshotError> {
    match stream::read(&mut opened, limit) {
        Ok(objects) => Ok(objects),
        Err(fallback) => {
            tracing::debug!(path = %path.display(), reason = %fallback, "reading the snapshot file whole");
            whole(path, &text::text_of(path, opened, limit)?)
        }
    }
}

/// Read one snapshot file of at most `limit` bytes, holding its text while it is decoded: the
/// reader the stream is compared with.
#[cfg(test)]
pub(super) fn read_whole_file(path: &Path, limit: FileSizeLimit) -> Result<Objects, SnapshotError> {
    whole(path, &read_text(path, limit)?)
}

/// The objects of a file's text.
fn whole(path: &Path, text: &str) -> Result<Objects, SnapshotError> {
    read_str(text).map_err(|error| SnapshotError::Parse {
        path: path.to_path_buf(),
        error,
    })
}

/// Read snapshot text (YAML or JSON, one or more documents), on a thread whose stack holds
/// the deepest document the readers take, whatever the caller's.
pub fn read_str(text: &str) -> Result<Objects, ParseError> {
    // kubectl drops a byte order mark; so do editors, which do not count it as a column.
    let text = without_mark(text);
    on_reader_stack(|| {
        if position::is_json(text) {
            json::read_json(text)
        } else {
            yaml::read_yaml(text)
        }
    })
}

#[cfg(test)]
pub(super) mod tests {
    use std::io::Write;

    use super::parallel::PARALLEL_ITEMS;
    use super::{FileSizeLimit, read_str, read_text};

    fn file_with(bytes: &[u8]) -> tempfile::NamedTempFile {
        let mut file = tempfile::NamedTempFile::new().expect("a temporary file");
        file.write_all(bytes).expect("writable");
        file
    }

    #[test]
    fn a_byte_order_mark_is_not_a_column() {
        let error = read_str("\u{feff}apiVersion: [v1\n").expect_err("unclosed");
        let without = read_str("apiVersion: [v1\n").expect_err("unclosed");
        assert_eq!(error, without);
        let file = file_with(b"\xef\xbb\xbfab\x01");
        let error = read_text(file.path(), FileSizeLimit::DEFAULT).expect_err("a control");
        assert!(
            error.to_string().ends_with(
                ":1:3: document 1: not YAML or JSON text: control character 0x01 at byte 5"
            ),
            "{error}"
        );
    }

    #[test]
    fn text_that_stops_being_json_is_read_on_as_yaml_and_a_problem_in_either_is_told() {
        let namespace = r#"{"apiVersion":"v1","kind":"Namespace","metadata":{"name":"a"}}"#;
        let flow = "{apiVersion: v1, kind: Namespace, metadata: {name: b}}";
        let names = |text: &str| -> Vec<String> {
            read_str(text)
                .unwrap_or_else(|error| panic!("{text}: {error}"))
                .namespaces
                .into_iter()
                .map(|(name, _)| name)
                .collect()
        };
        assert_eq!(names(flow), ["b"]);
        assert_eq!(names(&format!("{namespace}\n---\n{flow}\n")), ["a", "b"]);
        assert_eq!(
            names(&format!("{namespace} {namespace}\n---\n{flow}\n")),
            ["a", "a", "b"]
        );
        // A problem of an object of the YAML part is its, in the file's documents.
        let wrong = "{apiVersion: v1, kind: Pod, metadata: {name: p, namespace: s}, spec: {priority: high}}";
        let error = read_str(&format!("{namespace}\n---\n{wrong}\n")).expect_err("a string");
        assert_eq!(error.at.line, 3);
        assert_eq!(error.at.document, Some(2));
        assert!(error.message.contains("Pod s/p: invalid type"), "{error}");
        // Broken JSON is not YAML either: JSON's error, where JSON saw it.
        let broken = r#"{"apiVersion": "v1", "kind": "Namespace" "metadata": {}}"#;
        let error = read_str(broken).expect_err("a missing comma");
        assert_eq!((error.at.line, error.at.column), (1, 42), "{error}");
        assert!(error.message.contains("expected `,` or `}`"), "{error}");
    }

    #[test]
    fn integers_are_read_as_kubectl_reads_them_leading_zero_octal_included() {
        // What kubectl 1.32 makes of each as a pod's priority (`kubectl label --local -f … -o
        // json`): YAML 1.1's integers.
        let kubectl = [
            ("0777", 511),
            ("-0777", -511),
            ("012", 10),
            ("0o17", 15),
            ("0x1F", 31),
            ("0b101", 5),
            ("1_000", 1000),
            ("+12", 12),
            ("0", 0),
        ];
        for (written, read) in kubectl {
            let text = format!(
                "apiVersion: v1\nkind: Pod\nmetadata: {{name: p, namespace: ns}}\nspec:\n  \
                 priority: {written}\n  containers: []\n"
            );
            let objects = read_str(&text).unwrap_or_else(|error| panic!("{written}: {error}"));
            assert_eq!(objects.pods[0].priority, read, "{written}");
        }
    }

    fn namespace_list(count: usize, bad_at: Option<usize>) -> String {
        let items: Vec<String> = (0..count)
            .map(|i| {
                if Some(i) == bad_at {
                    r#"{"apiVersion":"v1","kind":"Node","metadata":{"name":"n"},"status":{"allocatable":{"cpu":"lots"}}}"#.to_string()
                } else {
                    format!(r#"{{"apiVersion":"v1","kind":"Namespace","metadata":{{"name":"ns-{i:05}"}}}}"#)
                }
            })
            .collect();
        format!(
            r#"{{"apiVersion":"v1","kind":"List","items":[{}]}}"#,
            items.join(",")
        )
    }

    const NODE_YAML: &str = "apiVersion: v1\nkind: Node\nmetadata:\n  name: worker-a\n";

    fn node_names(objects: &super::Objects) -> Vec<&str> {
        objects
            .nodes
            .iter()
            .map(|node| node.name.as_str())
            .collect()
    }

    #[test]
    fn a_named_pipe_written_once_is_read_the_stream_handing_it_on_unread() {
        let directory = tempfile::tempdir().expect("a temporary directory");
        let pipe = directory.path().join("snapshot.yaml");
        let made = std::process::Command::new("mkfifo")
            .arg(&pipe)
            .status()
            .expect("mkfifo runs");
        assert!(made.success(), "mkfifo: {made}");
        let writer = {
            let pipe = pipe.clone();
            // Opening blocks until the reader opens: the text goes to the first open only.
            std::thread::spawn(move || std::fs::write(pipe, NODE_YAML))
        };
        // A second open of the pipe would wait for a writer for ever: the read is given a
        // thread, and the test a bound, so that such a reader fails instead of hanging.
        let (done, result) = std::sync::mpsc::channel();
        std::thread::spawn(move || {
            let _ = done.send(super::read_file(&pipe, FileSizeLimit::DEFAULT));
        });
        let read = result
            .recv_timeout(std::time::Duration::from_secs(120))
            .expect("the pipe is read without being opened twice")
            .expect("a snapshot");
        assert_eq!(node_names(&read), ["worker-a"]);
        writer.join().expect("the writer ends").expect("written");
    }

    /// The bytes this thread has read from files so far, as Linux counts them (reading the
    /// count adds its own few hundred bytes).
    fn bytes_read_by_this_thread() -> u64 {
        let io = std::fs::read_to_string("/proc/thread-self/io").expect("Linux's I/O counts");
        io.lines()
            .find_map(|line| line.strip_prefix("rchar: "))
            .and_then(|count| count.parse().ok())
            .expect("a count of bytes read")
    }

    #[test]
    fn a_yaml_file_is_read_from_disk_once_the_stream_handing_on_the_bytes_it_read() {
        let namespaces: String = (0..4000)
            .map(|i| {
                format!("---\napiVersion: v1\nkind: Namespace\nmetadata:\n  name: ns-{i:05}\n")
            })
            .collect();
        let text = format!("{NODE_YAML}{namespaces}");
        let file = file_with(text.as_bytes());
        let before = bytes_read_by_this_thread();
        let read = super::read_file(file.path(), FileSizeLimit::DEFAULT).expect("YAML");
        let read_bytes = bytes_read_by_this_thread() - before;
        assert!(
            read_bytes < text.len() as u64 + 4096,
            "{read_bytes} bytes read for a file of {}",
            text.len()
        );
        assert_eq!(node_names(&read), ["worker-a"]);
        assert_eq!(read.namespaces.len(), 4000);
    }

    #[test]
    fn a_file_removed_once_opened_loads_whether_the_stream_gives_up_early_or_late() {
        // YAML: the stream gives up in its first block and hands over the bytes it read.
        // A JSON List of more than a block followed by YAML: it gives up later, the blocks
        // dropped, and the file is read again from its start through the same handle.
        let late = format!("{}\n---\n{NODE_YAML}", namespace_list(20_000, None));
        assert!(
            late.len() as u64 > super::text::CHUNK_BYTES,
            "{}",
            late.len()
        );
        for (name, text) in [("early.yaml", NODE_YAML.to_string()), ("late.json", late)] {
            let file = file_with(text.as_bytes());
            let opened = super::text::open(file.path(), FileSizeLimit::DEFAULT).expect(name);
            let path = file.path().to_path_buf();
            file.close().expect("removed");
            assert!(!path.exists(), "{name}");
            let read = super::read_opened(&path, opened, FileSizeLimit::DEFAULT).expect(name);
            assert_eq!(node_names(&read), ["worker-a"], "{name}");
        }
    }

    #[test]
    fn a_big_json_list_is_converted_whole_and_in_order_whatever_the_threads() {
        let count = PARALLEL_ITEMS * 2 + 3;
        let objects = read_str(&namespace_list(count, None)).expect("valid");
        let names: Vec<&str> = objects
            .namespaces
            .iter()
            .map(|(name, _)| name.as_str())
            .collect();
        assert_eq!(names.len(), count);
        assert!(
            names.windows(2).all(|pair| pair[0] < pair[1]),
            "items kept their order"
        );
    }

    #[test]
    fn a_bad_item_late_in_a_big_list_is_reported_by_name() {
        let error = read_str(&namespace_list(
            PARALLEL_ITEMS * 2,
            Some(PARALLEL_ITEMS * 2 - 1),
        ))
        .expect_err("the bad quantity")
        .to_string();
        assert!(
            error.contains("Node n: invalid quantity \"lots\""),
            "{error}"
        );
    }

    /// The error of reading `text`, as `LINE:COLUMN: document N: MESSAGE`.
    fn yaml_error(text: &str) -> String {
        read_str(text)
            .expect_err("a value of the wrong type")
            .to_string()
    }

    #[test]
    fn a_yaml_value_of_the_wrong_type_is_positioned_at_the_value_not_the_object() {
        let in_a_list = "apiVersion: v1\nkind: List\nitems:\n- apiVersion: v1\n  kind: Pod\n  \
                         metadata: {name: a, namespace: ns}\n  spec:\n    nodeName: w1\n    \
                         priority: high\n    containers: []\n";
        assert_eq!(
            yaml_error(in_a_list),
            "9:15: document 1: Pod ns/a: invalid type: string \"high\", expected an integer"
        );
        let a_document = "apiVersion: v1\nkind: Namespace\nmetadata: {name: x}\n---\n\
                          apiVersion: v1\nkind: Pod\nmetadata: {name: b, namespace: ns}\nspec:\n  \
                          containers:\n  - name: c\n    resources:\n      requests:\n        \
                          cpu: [1]\n";
        assert!(
            yaml_error(a_document)
                .starts_with("13:14: document 2: Pod ns/b: invalid type: sequence"),
            "{}",
            yaml_error(a_document)
        );
        let flow_items = "kind: PodList\napiVersion: v1\nitems:\n  - {apiVersion: v1, kind: Pod, \
                          metadata: {name: ok, namespace: ns}, spec: {containers: []}}\n  - \
                          apiVersion: v1\n    kind: Pod\n    metadata: {name: c, namespace: ns}\n    \
                          spec: {priority: \"x\", containers: []}\n";
        assert_eq!(
            yaml_error(flow_items),
            "8:22: document 1: Pod ns/c: invalid type: string \"x\", expected an integer"
        );
    }

    #[test]
    fn a_yaml_problem_found_after_decoding_keeps_the_objects_position() {
        // A quantity is checked when the pod is converted, with no path to follow.
        let text = "apiVersion: v1\nkind: List\nitems:\n- apiVersion: v1\n  kind: Pod\n  \
                    metadata: {name: a, namespace: ns}\n  spec:\n    containers:\n    - name: c\n      \
                    resources: {requests: {cpu: lots}}\n";
        assert!(
            yaml_error(text).starts_with("4:3: document 1: Pod ns/a: "),
            "{}",
            yaml_error(text)
        );
    }

    #[test]
    fn yaml_and_json_streams_read_the_same_objects() {
        let yaml = "apiVersion: v1\nkind: Namespace\nmetadata: {name: a}\n---\napiVersion: v1\nkind: List\nitems:\n- {apiVersion: v1, kind: Namespace, metadata: {name: b}}\n";
        let json = r#"{"apiVersion":"v1","kind":"Namespace","metadata":{"name":"a"}} {"apiVersion":"v1","kind":"List","items":[{"apiVersion":"v1","kind":"Namespace","metadata":{"name":"b"}}]}"#;
        let names = |text: &str| -> Vec<String> {
            read_str(text)
                .expect("valid")
                .namespaces
                .into_iter()
                .map(|(name, _)| name)
                .collect()
        };
        assert_eq!(names(yaml), ["a", "b"]);
        assert_eq!(names(json), ["a", "b"]);
    }

    const FIXTURE: &str = include_str!("../../tests/fixtures/plan/drs-moved-worker/snapshot.yaml");

    /// The fixture as JSON: concatenated documents, and one `List` of them all.
    pub(crate) fn json_fixtures() -> [String; 2] {
        let documents: Vec<serde_json::Value> =
            serde_saphyr::from_str_multiple(FIXTURE).expect("the fixture is YAML");
        let stream: Vec<String> = documents
            .iter()
            .map(|document| serde_json::to_string_pretty(document).expect("JSON"))
            .collect();
        let list = serde_json::json!({"apiVersion": "v1", "kind": "List", "items": documents});
        [
            stream.join("\n"),
            serde_json::to_string_pretty(&list).expect("JSON"),
        ]
    }

    /// A generator with a fixed seed (a 64-bit LCG's top 31 bits), so that every run breaks
    /// the same places.
    pub(crate) fn seeded() -> impl FnMut() -> usize {
        let mut state: u64 = 0x5eed;
        move || {
            state = state
                .wrapping_mul(6_364_136_223_846_793_005)
                .wrapping_add(1_442_695_040_888_963_407);
            usize::try_from(state >> 33).expect("31 bits")
        }
    }

    /// Deterministic variants of `text`: cut short, a byte replaced by one that often breaks
    /// YAML or JSON, or a bit flipped, at places drawn from a fixed-seed generator.
    pub(crate) fn variants(text: &str, count: usize) -> Vec<Vec<u8>> {
        const BREAKING: &[u8] = b"\"{}[]:,-\n #&*!|>'\x01\xff\xc3";
        let bytes = text.as_bytes();
        let mut next = seeded();
        (0..count)
            .map(|i| {
                let mut variant = bytes.to_vec();
                let at = next() % bytes.len();
                match i % 3 {
                    0 => variant.truncate(at),
                    1 => variant[at] = BREAKING[next() % BREAKING.len()],
                    _ => variant[at] ^= 1 << (next() % 8),
                }
                variant
            })
            .collect()
    }

    /// `FILE:LINE:COLUMN: document N: ` with each number from 1, the line within the file.
    fn assert_positioned(message: &str, path: &str, lines: usize) {
        let rest = message
            .strip_prefix(&format!("{path}:"))
            .unwrap_or_else(|| panic!("names the file: {message}"));
        let mut parts = rest.splitn(4, ':');
        let number = |part: Option<&str>| -> usize {
            part.and_then(|part| part.trim().parse().ok())
                .filter(|number| *number >= 1)
                .unwrap_or_else(|| panic!("a position: {message}"))
        };
        let line = number(parts.next());
        number(parts.next());
        let document = parts
            .next()
            .and_then(|part| part.strip_prefix(" document "));
        number(document);
        assert!(line <= lines + 1, "line {line} of {lines}: {message}");
        for internal in [
            "struct",
            "enum ",
            "HeaderMetadata",
            "ListHeader",
            "Misplaced",
            "RawValue",
            "DrsConfig",
            "RuleKind",
        ] {
            assert!(!message.contains(internal), "{internal:?} in {message}");
        }
    }

    #[test]
    fn every_error_of_a_mutated_snapshot_names_the_file_a_position_and_no_internal_type() {
        let directory = tempfile::tempdir().expect("a temporary directory");
        let [stream, list] = json_fixtures();
        let mut errors = 0;
        for (name, text) in [
            ("snapshot.yaml", FIXTURE),
            ("stream.json", &stream),
            ("list.json", &list),
        ] {
            let path = directory.path().join(name);
            for variant in variants(text, 200) {
                std::fs::write(&path, &variant).expect("writable");
                if let Err(error) = super::read_file(&path, FileSizeLimit::DEFAULT) {
                    errors += 1;
                    let lines = variant.iter().filter(|&&byte| byte == b'\n').count() + 1;
                    assert_positioned(&error.to_string(), &path.display().to_string(), lines);
                }
            }
        }
        assert!(
            errors > 200,
            "the variants break the files: {errors} errors"
        );
    }

    #[test]
    fn typed_list_items_without_a_kind_are_of_the_lists_kind_and_v1_list_items_need_theirs() {
        // As `kubectl get --raw /apis/metrics.k8s.io/v1beta1/nodes` prints them.
        let json = r#"{"kind":"NodeMetricsList","apiVersion":"metrics.k8s.io/v1beta1","metadata":{},"items":[{"metadata":{"name":"w1"},"timestamp":"2026-11-21T08:59:45Z","window":"20s","usage":{"cpu":"1500m","memory":"1Gi"}}]}
{"kind":"PodMetricsList","apiVersion":"metrics.k8s.io/v1beta1","metadata":{},"items":[{"metadata":{"name":"web-0","namespace":"shop"},"containers":[{"name":"a","usage":{"cpu":"250m","memory":"1Mi"}},{"name":"b","usage":{"cpu":"50m","memory":"1Mi"}}]}]}"#;
        // YAML prints keys sorted: the items come before the list's kind.
        let yaml = "apiVersion: metrics.k8s.io/v1beta1\nitems:\n- metadata: {name: w1}\n  usage: {cpu: 1500m, memory: 1Gi}\nkind: NodeMetricsList\n---\napiVersion: metrics.k8s.io/v1beta1\nitems:\n- metadata: {name: web-0, namespace: shop}\n  containers:\n  - {name: a, usage: {cpu: 250m, memory: 1Mi}}\n  - {name: b, usage: {cpu: 50m, memory: 1Mi}}\nkind: PodMetricsList\n";
        for text in [json, yaml] {
            let metrics = read_str(text).expect("readable").metrics.expect("metrics");
            assert_eq!(
                metrics.nodes["w1"].get(&crate::snapshot::ResourceName::Cpu),
                1500,
                "{text}"
            );
            let pod = &metrics.pods[&("shop".to_string(), "web-0".to_string())];
            assert_eq!(pod.get(&crate::snapshot::ResourceName::Cpu), 300, "{text}");
        }
        let untyped_in_v1_list = [
            r#"{"apiVersion":"v1","kind":"List","items":[{"metadata":{"name":"w1"}}]}"#,
            "apiVersion: v1\nitems:\n- metadata: {name: w1}\nkind: List\n",
        ];
        for text in untyped_in_v1_list {
            let error = read_str(text).expect_err("an item of no kind");
            assert!(
                error
                    .message
                    .contains("object w1 has no apiVersion and no kind"),
                "{error:?}"
            );
        }
    }
}
