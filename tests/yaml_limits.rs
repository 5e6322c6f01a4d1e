//! What YAML anchors and aliases may cost (issue 42, point 5): a "billion laughs" is refused at
//! a fixed cost per document, however large the file around it, naming the file, the document
//! and the place, with exit 2; and the aliases real tools write still read. Peak memory is
//! that of the child process, as GNU time reports it (the benchmark script's way,
//! scripts/bench): deterministic enough to assert on a loaded machine, where time is not.

// The generator also writes JSON, which these tests do not use.
#[allow(dead_code)]
#[path = "../benches/support/cluster.rs"]
mod cluster;

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

const STORY: &str = "tests/fixtures/plan/anti-affinity-namespace-selector";

/// What an alias bomb may cost beyond the file's own text, in a debug build: the binary itself
/// (about 35 MiB), what the document's aliases may replay and its anchors record (fixed per
/// document, `MAX_REPLAYED_EVENTS`), and room for the allocator. Measured: 81 MiB with no
/// filler, 105 MiB beside 24 MB of comment, 126 MiB with 6 MB of comment inside the bomb's own
/// document; before the limits were per document, 1.05 GiB beside 6 MB.
const BOMB_BYTES: u64 = 160 << 20;

/// A ConfigMap whose ten levels of aliases would expand to ten billion values, `filler` bytes
/// of comment inside it, and the line of its first alias within it (from 1).
fn bomb_document(filler: usize) -> (String, usize) {
    let mut document = String::from(
        "---\napiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: lol\n  namespace: default\n",
    );
    if filler > 0 {
        document.push_str(&format!("# {}\n", "x".repeat(filler)));
    }
    document.push_str("data:\n");
    let first_alias = document.lines().count() + 2;
    document.push_str(&format!("  a0: &a0 [{}]\n", ["\"lol\""; 10].join(", ")));
    for level in 1..10 {
        let aliases = vec![format!("*a{}", level - 1); 10].join(", ");
        document.push_str(&format!("  a{level}: &a{level} [{aliases}]\n"));
    }
    (document, first_alias)
}

/// The story's snapshot, `filler` bytes of comment after it, then the bomb with `inside`
/// bytes of comment of its own, written to `directory`; the lines where the bomb's aliases
/// are (from, to).
fn bomb_file(directory: &Path, filler: usize, inside: usize) -> (PathBuf, (usize, usize)) {
    let mut text = std::fs::read_to_string(Path::new(STORY).join("snapshot.yaml")).expect("story");
    if !text.ends_with('\n') {
        text.push('\n');
    }
    if filler > 0 {
        text.push_str(&format!("# {}\n", "x".repeat(filler)));
    }
    let lines_before = text.lines().count();
    let (bomb, first_alias) = bomb_document(inside);
    text.push_str(&bomb);
    let path = directory.join("bomb.yaml");
    std::fs::write(&path, text).expect("writable");
    let first = lines_before + first_alias;
    (path, (first, first + 8))
}

/// `plan` of the story's policy on `snapshot`, with `extra` arguments.
fn plan(snapshot: &Path, extra: &[&str]) -> Command {
    let mut command = Command::new(env!("CARGO_BIN_EXE_vsphere-descheduler"));
    command
        .arg("plan")
        .args(extra)
        .arg("--snapshot")
        .arg(snapshot)
        .arg("--policy")
        .arg(Path::new(STORY).join("policy.yaml"));
    command
}

/// `command` run under GNU time: its output, and its peak resident memory in bytes.
fn measured(command: &Command, directory: &Path) -> (Output, u64) {
    let time = Path::new("/usr/bin/time");
    assert!(
        time.exists(),
        "GNU time measures the peak memory (apt-get install time)"
    );
    let report = directory.join("peak");
    let output = Command::new(time)
        .arg("-f")
        .arg("%M")
        .arg("-o")
        .arg(&report)
        .arg(command.get_program())
        .args(command.get_args())
        .output()
        .expect("GNU time runs");
    let kib: u64 = std::fs::read_to_string(&report)
        .expect("GNU time's report")
        .lines()
        .last()
        .and_then(|line| line.trim().parse().ok())
        .expect("the peak in KiB");
    (output, kib << 10)
}

/// The line of the position `FILE:LINE:COL: …` the output gives.
fn refused_line(stderr: &str, snapshot: &Path) -> usize {
    let place = format!("{}:", snapshot.display());
    stderr
        .match_indices(&place)
        .find_map(|(at, _)| stderr[at + place.len()..].split(':').next()?.parse().ok())
        .unwrap_or_else(|| panic!("{place}LINE: in {stderr}"))
}

#[test]
fn an_alias_bomb_after_megabytes_of_comment_is_refused_naming_the_file_the_document_and_the_place()
{
    let directory = tempfile::tempdir().expect("a temporary directory");
    let (snapshot, (first, last)) = bomb_file(directory.path(), 4_000_000, 0);
    let output = plan(&snapshot, &[]).output().expect("the binary runs");
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert_eq!(output.status.code(), Some(2), "{stderr}");
    // The story holds eight documents: the bomb is the ninth.
    assert!(
        stderr.contains(
            ": document 9: the document holds more values, lists and mappings than its size allows"
        ),
        "{stderr}"
    );
    let line = refused_line(&stderr, &snapshot);
    assert!(
        (first..=last).contains(&line),
        "line {line} is not among the aliases, lines {first} to {last}: {stderr}"
    );
    assert!(!stderr.contains("panicked"), "{stderr}");
}

#[test]
fn an_alias_bomb_beside_filler_up_to_the_size_limit_stays_within_a_fixed_cost() {
    let directory = tempfile::tempdir().expect("a temporary directory");
    // A lowered limit keeps the test quick; what it shows, a cost that does not grow with the
    // file, holds at any limit.
    let limit = "48Mi";
    for (filler, inside) in [(0, 0), (4_000_000, 0), (48_000_000, 0), (0, 4_000_000)] {
        let (snapshot, _) = bomb_file(directory.path(), filler, inside);
        let size = std::fs::metadata(&snapshot).expect("written").len();
        let (output, peak) = measured(
            &plan(&snapshot, &["--max-snapshot-size", limit]),
            directory.path(),
        );
        let stderr = String::from_utf8_lossy(&output.stderr);
        assert!(size <= 48 << 20, "{size} bytes: under the limit");
        assert_eq!(output.status.code(), Some(2), "{stderr}");
        assert!(
            stderr.contains("caused by:") && stderr.contains(": document 9: "),
            "{filler} + {inside} bytes of comment: {stderr}"
        );
        assert!(
            peak <= size + BOMB_BYTES,
            "{filler} bytes of comment beside the bomb, {inside} in it: {} MiB at the peak, over \
             the file's {} MiB and {} MiB",
            peak >> 20,
            size >> 20,
            BOMB_BYTES >> 20
        );
    }
}

/// The generated cluster as YAML, every pod's annotations one mapping that PyYAML would write
/// once with an anchor and then as an alias wherever a script reused it.
fn aliased_cluster(pods: usize) -> (String, String) {
    let shape = cluster::Shape {
        nodes: 100,
        pods,
        hosts: 5,
        ..cluster::Shape::default()
    };
    let text = cluster::text(&shape, cluster::Format::Yaml);
    let pod = "  kind: \"Pod\"\n  metadata:\n";
    let shared = "    annotations: &shared\n      team: \"storefront\"\n      \
                  tier: \"web\"\n      owner: \"platform@example.com\"\n";
    let mut aliased = String::with_capacity(text.len() + pods * 32);
    let mut written = 0;
    for (index, (at, _)) in text.match_indices(pod).enumerate() {
        let end = at + pod.len();
        aliased.push_str(&text[written..end]);
        aliased.push_str(if index == 0 {
            shared
        } else {
            "    annotations: *shared\n"
        });
        written = end;
    }
    aliased.push_str(&text[written..]);
    let annotated = text.replace(pod, &format!("{pod}{}", shared.replace(" &shared", "")));
    (aliased, annotated)
}

#[test]
fn an_anchor_reused_by_every_pod_of_a_big_list_reads_as_the_same_list_written_out() {
    let directory = tempfile::tempdir().expect("a temporary directory");
    let pods = 5_000;
    let (aliased, annotated) = aliased_cluster(pods);
    assert_eq!(aliased.matches("*shared").count(), pods - 1);
    let mut reports = Vec::new();
    for (name, text) in [("aliased.yaml", aliased), ("annotated.yaml", annotated)] {
        let path = directory.path().join(name);
        std::fs::write(&path, text).expect("writable");
        let output = plan(&path, &["--output", "json"])
            .output()
            .expect("the binary runs");
        let stderr = String::from_utf8_lossy(&output.stderr);
        assert!(output.status.success(), "{name}: {stderr}");
        reports.push(output.stdout);
    }
    assert!(!reports[0].is_empty());
    assert_eq!(
        String::from_utf8_lossy(&reports[0]),
        String::from_utf8_lossy(&reports[1])
    );
}

#[test]
fn a_policy_alias_bomb_after_megabytes_of_comment_is_refused_where_it_is() {
    let directory = tempfile::tempdir().expect("a temporary directory");
    let mut policy = format!(
        "apiVersion: vsphere-descheduler.io/v1alpha1\nkind: DeschedulerPolicy\n\
         clusterName: bench\n# {}\nprofiles: []\nbomb:\n",
        "x".repeat(3_000_000)
    );
    let first = policy.lines().count() + 1;
    let (bomb, _) = bomb_document(0);
    policy.push_str(bomb.split("\ndata:\n").nth(1).expect("the bomb's data"));
    let path = directory.path().join("policy-bomb.yaml");
    std::fs::write(&path, policy).expect("writable");
    let (output, peak) = measured(
        Command::new(env!("CARGO_BIN_EXE_vsphere-descheduler"))
            .arg("validate")
            .arg(&path),
        directory.path(),
    );
    let stdout = String::from_utf8_lossy(&output.stdout);
    // `validate` exits 1 for a policy with problems (docs/commands.md), `plan` 2.
    assert_eq!(output.status.code(), Some(1), "{stdout}");
    let line = refused_line(&stdout, &path);
    assert!((first..first + 10).contains(&line), "{stdout}");
    assert!(stdout.contains("cannot multiply itself"), "{stdout}");
    assert!(peak <= BOMB_BYTES, "{} MiB at the peak", peak >> 20);
    let snapshot = Path::new(STORY).join("snapshot.yaml");
    let output = Command::new(env!("CARGO_BIN_EXE_vsphere-descheduler"))
        .arg("plan")
        .arg("--snapshot")
        .arg(&snapshot)
        .arg("--policy")
        .arg(&path)
        .output()
        .expect("the binary runs");
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert_eq!(output.status.code(), Some(2), "{stderr}");
    assert_eq!(refused_line(&stderr, &path), line, "{stderr}");
}
