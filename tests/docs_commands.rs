//! The documentation's commands, run as written. Every ```` ```sh ```` block of README.md and
//! docs/*.md carries a marker on the line before it, which a reader does not see (an HTML
//! comment) and this test reads:
//!
//! - `<!-- docs-test: run -->`: each command of the block runs against the built binary, from a
//!   folder that shows the repository's files (so `policies/*.yaml` and
//!   `src/command/demo/snapshot.yaml` resolve, and a `> plan.html` lands outside the
//!   repository). Only `vsphere-descheduler` runs (`cargo run --release --` stands for it). A
//!   command exits 0 unless its trailing comment starts with `exit N`. When the block holds one
//!   command and a ```` ```text ```` block follows it, that block is the first lines of the
//!   command's stdout: a line `…` stands for any lines, a `…` inside a line for any text.
//! - `<!-- docs-test: not run, REASON -->`: the block needs what a test does not have (a
//!   cluster, vCenter, a registry, the user's own files) and says so.
//!
//! A block without a marker fails the test: a new example is either run or skipped on purpose.

use std::fs;
use std::path::{Path, PathBuf};
use std::process::Command;

const RUN: &str = "<!-- docs-test: run -->";
const NOT_RUN: &str = "<!-- docs-test: not run, ";
const BINARY: &str = "vsphere-descheduler";

fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

/// README.md and every Markdown file of docs/.
fn pages() -> Vec<PathBuf> {
    let mut pages: Vec<PathBuf> = fs::read_dir(root().join("docs"))
        .expect("docs/ is readable")
        .map(|entry| entry.expect("a docs/ entry").path())
        .filter(|path| path.extension().is_some_and(|ext| ext == "md"))
        .collect();
    pages.sort();
    pages.insert(0, root().join("README.md"));
    pages
}

/// A fenced block of a page.
#[derive(Debug)]
struct Block {
    /// The line of the opening fence, from 1.
    line: usize,
    /// The info string's first word: `sh`, `text`, or empty.
    language: String,
    /// The block's lines, without the fence's indentation.
    lines: Vec<String>,
    /// The last non-blank line before the fence, trimmed.
    before: String,
    /// Whether only blank lines separate this block from the one before it.
    follows_directly: bool,
}

/// The fenced blocks of a Markdown text, in order.
fn blocks(text: &str) -> Vec<Block> {
    let lines: Vec<&str> = text.lines().collect();
    let mut blocks = Vec::new();
    let mut previous_end: Option<usize> = None;
    let mut index = 0;
    while index < lines.len() {
        let trimmed = lines[index].trim_start();
        let Some(info) = trimmed.strip_prefix("```") else {
            index += 1;
            continue;
        };
        let indent = lines[index].len() - trimmed.len();
        let close = (index + 1..lines.len())
            .find(|&at| lines[at].trim_start().starts_with("```"))
            .unwrap_or(lines.len());
        let before = lines[..index]
            .iter()
            .rev()
            .find(|line| !line.trim().is_empty())
            .map_or(String::new(), |line| line.trim().to_string());
        let follows_directly = previous_end
            .is_some_and(|end| lines[end + 1..index].iter().all(|l| l.trim().is_empty()));
        blocks.push(Block {
            line: index + 1,
            language: info.split_whitespace().next().unwrap_or("").to_string(),
            lines: lines[index + 1..close]
                .iter()
                .map(|line| line.get(indent..).unwrap_or(line.trim_start()).to_string())
                .collect(),
            before,
            follows_directly,
        });
        previous_end = Some(close);
        index = close + 1;
    }
    blocks
}

/// One command of a block: its text and the exit code its comment promises.
#[derive(Debug, PartialEq)]
struct Example {
    command: String,
    exit: i32,
}

/// The commands of a block: continued lines joined, comment lines dropped, each trailing
/// comment read for `exit N`.
fn examples(lines: &[String]) -> Vec<Example> {
    let mut examples = Vec::new();
    let mut pending = String::new();
    for line in lines {
        if pending.is_empty() && line.trim_start().starts_with('#') {
            continue;
        }
        let (code, comment) = split_comment(line);
        match code.trim_end().strip_suffix('\\') {
            Some(continued) => {
                pending.push_str(continued.trim());
                pending.push(' ');
            }
            None => {
                pending.push_str(code.trim());
                let exit = comment.and_then(promised_exit).unwrap_or(0);
                let command = std::mem::take(&mut pending);
                let command = match command.strip_prefix("cargo run --release -- ") {
                    Some(arguments) => format!("{BINARY} {arguments}"),
                    None => command,
                };
                if !command.is_empty() {
                    examples.push(Example { command, exit });
                }
            }
        }
    }
    examples
}

/// A line's code and its trailing comment: a `#` after whitespace, outside quotes.
fn split_comment(line: &str) -> (&str, Option<&str>) {
    let mut quote: Option<char> = None;
    let mut previous = ' ';
    for (at, c) in line.char_indices() {
        match (quote, c) {
            (Some(open), c) if c == open => quote = None,
            (None, '\'' | '"') => quote = Some(c),
            (None, '#') if previous.is_whitespace() => return (&line[..at], Some(&line[at + 1..])),
            _ => {}
        }
        previous = c;
    }
    (line, None)
}

/// `exit 3` at the start of a comment.
fn promised_exit(comment: &str) -> Option<i32> {
    let digits: String = comment
        .trim_start()
        .strip_prefix("exit ")?
        .chars()
        .take_while(char::is_ascii_digit)
        .collect();
    digits.parse().ok()
}

/// Whether `actual` begins with the lines `expected` shows: a line `…` stands for any lines
/// (none included), a `…` inside a line for any text.
fn shows(expected: &[String], actual: &[&str]) -> bool {
    match expected.split_first() {
        None => true,
        Some((gap, rest)) if gap.trim() == "…" => {
            (0..=actual.len()).any(|skip| shows(rest, &actual[skip..]))
        }
        Some((line, rest)) => actual
            .split_first()
            .is_some_and(|(first, others)| line_matches(line, first) && shows(rest, others)),
    }
}

/// Whether `actual` is `pattern` with each `…` standing for any text.
fn line_matches(pattern: &str, actual: &str) -> bool {
    let pattern = pattern.trim_end();
    let actual = actual.trim_end();
    let parts: Vec<&str> = pattern.split('…').collect();
    let (first, rest) = parts.split_first().expect("split gives one part at least");
    let Some(mut remaining) = actual.strip_prefix(first) else {
        return false;
    };
    let Some((last, middle)) = rest.split_last() else {
        return remaining.is_empty();
    };
    for part in middle {
        match remaining.find(part) {
            Some(at) => remaining = &remaining[at + part.len()..],
            None => return false,
        }
    }
    remaining.ends_with(last)
}

/// A folder showing the repository's files (not `target/` or `.git`), with a `bin/` holding
/// the built binary: commands run here as a reader runs them from a checkout.
struct Workspace {
    folder: tempfile::TempDir,
}

impl Workspace {
    fn new() -> Workspace {
        let folder = tempfile::tempdir().expect("a temporary folder");
        for entry in fs::read_dir(root()).expect("the repository is readable") {
            let path = entry.expect("an entry").path();
            let name = path.file_name().expect("a name").to_owned();
            if name == "target" || name == ".git" {
                continue;
            }
            std::os::unix::fs::symlink(&path, folder.path().join(&name))
                .expect("a link to the repository's file");
        }
        let bin = folder.path().join(".docs-test-bin");
        fs::create_dir(&bin).expect("a bin folder");
        std::os::unix::fs::symlink(env!("CARGO_BIN_EXE_vsphere-descheduler"), bin.join(BINARY))
            .expect("a link to the built binary");
        Workspace { folder }
    }

    /// Runs one command with `sh`, the binary first on PATH and no setting from the
    /// environment of whoever runs the tests: (exit code, stdout, stderr).
    fn run(&self, command: &str) -> (i32, String, String) {
        let path = format!(
            "{}:{}",
            self.folder.path().join(".docs-test-bin").display(),
            std::env::var("PATH").unwrap_or_default()
        );
        let mut shell = Command::new("sh");
        shell
            .arg("-c")
            .arg(command)
            .current_dir(self.folder.path())
            .env("PATH", path)
            .env("NO_COLOR", "1")
            .env("KUBECONFIG", self.folder.path().join("no-kubeconfig"))
            .env_remove("RUST_LOG");
        for (name, _) in std::env::vars() {
            if name.starts_with("VSPHERE_") {
                shell.env_remove(name);
            }
        }
        let output = shell.output().expect("sh runs");
        (
            output.status.code().unwrap_or(-1),
            String::from_utf8_lossy(&output.stdout).into_owned(),
            String::from_utf8_lossy(&output.stderr).into_owned(),
        )
    }
}

/// What is wrong with the examples of one page: unmarked blocks, markers without a block,
/// commands other than the binary's, exit codes and output that differ from the page.
fn problems_of(page: &Path, workspace: &Workspace, ran: &mut usize) -> Vec<String> {
    let text = fs::read_to_string(page).expect("a page is readable");
    let name = page
        .strip_prefix(root())
        .unwrap_or(page)
        .display()
        .to_string();
    let blocks = blocks(&text);
    let mut problems = Vec::new();
    for (index, block) in blocks.iter().enumerate() {
        let place = format!("{name}:{}", block.line);
        let marked = block.before == RUN || block.before.starts_with(NOT_RUN);
        match (block.language.as_str(), marked) {
            ("sh", false) => problems.push(format!(
                "{place}: no marker: put `{RUN}` or `{NOT_RUN}REASON -->` on the line before"
            )),
            ("sh", true) if block.before == RUN => {
                let examples = examples(&block.lines);
                // Output shown right after a one-command block is that command's.
                let shown = blocks
                    .get(index + 1)
                    .filter(|next| next.language == "text" && next.follows_directly)
                    .filter(|_| examples.len() == 1)
                    .map(|next| next.lines.as_slice());
                for example in &examples {
                    *ran += 1;
                    problems.extend(check(&place, example, shown, workspace));
                }
            }
            ("sh", true) => {}
            (_, true) => {
                problems.push(format!("{place}: a docs-test marker before a non-sh block"))
            }
            (_, false) => {}
        }
    }
    problems
}

/// Runs one example, and says how it differs from the page: a command other than the binary,
/// another exit code, other first lines on stdout.
fn check(
    place: &str,
    example: &Example,
    shown: Option<&[String]>,
    workspace: &Workspace,
) -> Vec<String> {
    if !example.command.starts_with(&format!("{BINARY} ")) {
        return vec![format!(
            "{place}: `{}`: a run block runs only {BINARY}",
            example.command
        )];
    }
    let (code, stdout, stderr) = workspace.run(&example.command);
    let mut problems = Vec::new();
    if code != example.exit {
        problems.push(format!(
            "{place}: `{}` exited {code}, the page says {}\nstderr:\n{stderr}",
            example.command, example.exit
        ));
    }
    if let Some(expected) = shown {
        let actual: Vec<&str> = stdout.lines().collect();
        if !shows(expected, &actual) {
            problems.push(format!(
                "{place}: `{}` printed\n{stdout}\nthe page shows\n{}",
                example.command,
                expected.join("\n")
            ));
        }
    }
    problems
}

#[test]
fn every_documented_command_is_run_as_written_or_marked_as_needing_more() {
    let workspace = Workspace::new();
    let mut ran = 0;
    let mut problems = Vec::new();
    for page in pages() {
        problems.extend(problems_of(&page, &workspace, &mut ran));
    }
    assert!(ran >= 10, "only {ran} documented commands ran");
    assert!(problems.is_empty(), "{}", problems.join("\n\n"));
}

#[test]
fn commands_are_joined_across_lines_and_read_their_promised_exit_code() {
    let lines = [
        "# a comment line",
        "vsphere-descheduler plan --snapshot a.yaml \\",
        "  --max-evictions 0   # exit 3: one eviction, more than 0",
        "cargo run --release -- demo     # the plan for a built-in lab",
        "vsphere-descheduler validate 'a # b.yaml'",
    ]
    .map(String::from);
    assert_eq!(
        examples(&lines),
        [
            Example {
                command: "vsphere-descheduler plan --snapshot a.yaml --max-evictions 0".into(),
                exit: 3
            },
            Example {
                command: "vsphere-descheduler demo".into(),
                exit: 0
            },
            Example {
                command: "vsphere-descheduler validate 'a # b.yaml'".into(),
                exit: 0
            },
        ]
    );
}

#[test]
fn shown_output_matches_the_first_lines_with_gaps_and_elided_text() {
    let expected = ["Plan: 1 eviction", "…", "Verdict: … at risk (exit 3)"].map(String::from);
    let actual = [
        "Plan: 1 eviction",
        "a line",
        "another",
        "Verdict: 2 workload(s) at risk (exit 3)",
        "after",
    ];
    assert!(shows(&expected, &actual));
    assert!(
        !shows(&expected, &actual[1..]),
        "the first line is anchored"
    );
    assert!(!shows(&expected, &actual[..3]), "a shown line is missing");
    assert!(line_matches("valid: …", "valid: a, b"));
    assert!(
        !line_matches("valid", "valid: a, b"),
        "a line without … is whole"
    );
}

#[test]
fn markers_and_following_output_blocks_are_read_from_a_page() {
    let page = "\
Intro.

<!-- docs-test: run -->
```sh
vsphere-descheduler demo
```

```text
Plan
```

- item

  <!-- docs-test: not run, needs a cluster -->
  ```sh
  kubectl get nodes
  ```
";
    let found = blocks(page);
    assert_eq!(found.len(), 3);
    assert_eq!(found[0].before, RUN);
    assert_eq!(found[1].language, "text");
    assert!(found[1].follows_directly);
    assert!(found[2].before.starts_with(NOT_RUN));
    assert_eq!(found[2].lines, ["kubectl get nodes"]);
    assert!(!found[2].follows_directly);
}

#[test]
fn an_unmarked_block_a_misplaced_marker_and_a_foreign_command_are_each_reported() {
    let folder = tempfile::tempdir().expect("a temporary folder");
    let page = folder.path().join("page.md");
    fs::write(
        &page,
        "\
```sh
vsphere-descheduler demo
```

<!-- docs-test: run -->
```sh
kubectl get nodes
```

<!-- docs-test: run -->
```text
output
```

<!-- docs-test: not run, needs a cluster -->
```sh
kubectl get nodes
```
",
    )
    .expect("the page is written");
    let mut ran = 0;
    let problems = problems_of(&page, &Workspace::new(), &mut ran);
    assert_eq!(problems.len(), 3, "{problems:#?}");
    assert!(problems[0].ends_with(":1: no marker: put `<!-- docs-test: run -->` or `<!-- docs-test: not run, REASON -->` on the line before"));
    assert!(problems[1].contains("a run block runs only vsphere-descheduler"));
    assert!(problems[2].contains("a docs-test marker before a non-sh block"));
}
