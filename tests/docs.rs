//! The documentation's relative links resolve: every link in README.md, CONTRIBUTING.md,
//! docs/*.md and the chart's README that is not a URL names a file or folder of the repository, and a `#anchor` names a
//! heading of the Markdown file it points into, as GitHub makes anchors from headings. The README
//! is a front page whose reference lives in docs/, so a moved or renamed section must not leave a
//! link behind.

use std::collections::BTreeSet;
use std::fs;
use std::path::{Path, PathBuf};

fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

/// README.md, CONTRIBUTING.md, the chart's README and every Markdown file of docs/.
fn documents() -> Vec<PathBuf> {
    let mut documents = vec![
        root().join("README.md"),
        root().join("CONTRIBUTING.md"),
        root().join("charts/vsphere-descheduler/README.md"),
    ];
    let mut docs: Vec<PathBuf> = fs::read_dir(root().join("docs"))
        .expect("docs/ is readable")
        .map(|entry| entry.expect("a docs/ entry").path())
        .filter(|path| path.extension().is_some_and(|ext| ext == "md"))
        .collect();
    docs.sort();
    documents.extend(docs);
    documents
}

/// The lines outside fenced code blocks: headings and links there are not Markdown.
fn prose(text: &str) -> Vec<&str> {
    let mut fence: Option<&str> = None;
    let mut lines = Vec::new();
    for line in text.lines() {
        let marker = ["```", "~~~"]
            .into_iter()
            .find(|marker| line.trim_start().starts_with(marker));
        match (fence, marker) {
            (None, Some(marker)) => fence = Some(marker),
            (Some(open), Some(marker)) if open == marker => fence = None,
            (None, None) => lines.push(line),
            _ => {}
        }
    }
    lines
}

/// A paragraph with each code span replaced by `code`: brackets inside code are not links. A
/// run of backticks opens a span closed by the next run of the same length; without one it is
/// literal text, as CommonMark reads it.
fn without_code_spans(paragraph: &str) -> String {
    let mut out = String::new();
    let mut rest = paragraph;
    while let Some(start) = rest.find('`') {
        out.push_str(&rest[..start]);
        let run = rest[start..].len() - rest[start..].trim_start_matches('`').len();
        let after = &rest[start + run..];
        match closing_run(after, run) {
            Some(end) => {
                out.push_str("code");
                rest = &after[end + run..];
            }
            None => {
                out.push_str(&rest[start..start + run]);
                rest = after;
            }
        }
    }
    out.push_str(rest);
    out
}

/// Where the next run of exactly `run` backticks starts in `text`.
fn closing_run(text: &str, run: usize) -> Option<usize> {
    let mut offset = 0;
    while let Some(found) = text[offset..].find('`') {
        let start = offset + found;
        let length = text[start..].len() - text[start..].trim_start_matches('`').len();
        if length == run {
            return Some(start);
        }
        offset = start + length;
    }
    None
}

/// The targets of the inline links and images of a document, in order.
fn link_targets(text: &str) -> Vec<String> {
    let prose = prose(text).join("\n");
    let mut targets = Vec::new();
    for paragraph in prose.split("\n\n") {
        let plain = without_code_spans(paragraph);
        for (at, _) in plain.match_indices("](") {
            let target: String = plain[at + 2..]
                .chars()
                .take_while(|c| *c != ')' && !c.is_whitespace())
                .collect();
            targets.push(target);
        }
    }
    targets
}

/// GitHub's anchor for a heading: the heading's text (a link's text, not its target), lowercase,
/// every character but letters, digits, spaces, `-` and `_` dropped, spaces made `-`.
fn slug(heading: &str) -> String {
    let mut text = String::new();
    let mut rest = heading;
    while let Some(open) = rest.find("](") {
        let close = rest[open..].find(')').map_or(rest.len(), |c| open + c + 1);
        text.push_str(&rest[..open]);
        rest = &rest[close..];
    }
    text.push_str(rest);
    text.trim()
        .to_lowercase()
        .chars()
        .filter(|c| c.is_alphanumeric() || matches!(c, ' ' | '-' | '_'))
        .map(|c| if c == ' ' { '-' } else { c })
        .collect()
}

/// The anchors of a Markdown document: one per heading, a repeated one suffixed `-1`, `-2`, …
fn anchors(text: &str) -> BTreeSet<String> {
    let mut anchors = BTreeSet::new();
    for line in prose(text) {
        let level = line.len() - line.trim_start_matches('#').len();
        let Some(heading) = line[level..].strip_prefix(' ') else {
            continue;
        };
        if !(1..=6).contains(&level) {
            continue;
        }
        let base = slug(heading.trim_end_matches('#'));
        let mut anchor = base.clone();
        let mut repeat = 0;
        while anchors.contains(&anchor) {
            repeat += 1;
            anchor = format!("{base}-{repeat}");
        }
        anchors.insert(anchor);
    }
    anchors
}

/// A path as the repository names it.
fn shown(path: &Path) -> String {
    path.strip_prefix(root())
        .unwrap_or(path)
        .display()
        .to_string()
}

fn is_url(target: &str) -> bool {
    target.contains("://") || target.starts_with("mailto:")
}

/// Each relative link of `text`, a document at `path`, that does not resolve, with the reason.
fn broken_links(path: &Path, text: &str) -> Vec<String> {
    let folder = path.parent().expect("a document is in a folder");
    let mut broken = Vec::new();
    for target in link_targets(text).into_iter().filter(|t| !is_url(t)) {
        let (file, anchor) = target.split_once('#').unwrap_or((&target, ""));
        let linked = folder.join(file);
        if !file.is_empty() && !linked.exists() {
            broken.push(format!("{target}: no file {}", shown(&linked)));
            continue;
        }
        if anchor.is_empty() {
            continue;
        }
        let linked_text = if file.is_empty() {
            text.to_string()
        } else if linked.extension().is_some_and(|ext| ext == "md") {
            fs::read_to_string(&linked).expect("a linked Markdown file is readable")
        } else {
            broken.push(format!(
                "{target}: an anchor into a file that is not Markdown"
            ));
            continue;
        };
        if !anchors(&linked_text).contains(anchor) {
            broken.push(format!(
                "{target}: no heading of {} has that anchor",
                shown(&linked)
            ));
        }
    }
    broken
}

#[test]
fn every_relative_link_of_the_documentation_resolves() {
    let mut broken = Vec::new();
    let mut checked = 0;
    for path in documents() {
        let text = fs::read_to_string(&path).expect("a document is readable");
        checked += link_targets(&text).iter().filter(|t| !is_url(t)).count();
        for problem in broken_links(&path, &text) {
            broken.push(format!("{}: {problem}", shown(&path)));
        }
    }
    assert!(
        checked > 50,
        "only {checked} relative links found: is the parser reading them?"
    );
    assert!(broken.is_empty(), "broken links:\n{}", broken.join("\n"));
}

#[test]
fn a_missing_file_or_anchor_is_reported_and_code_is_not_read() {
    let document = root().join("docs").join("example.md");
    let text = "\
# Example

[a section](#example), [the run command](commands.md#run), [a folder](../policies/),
[gone](commands.md#no-such-heading) and [a missing file](missing.md#run),
[into a non-Markdown file](../Cargo.toml#package), [nowhere](#elsewhere).

`[in code](missing.md)` is no link, nor is

```md
[in a block](missing.md)
```
";
    assert_eq!(
        broken_links(&document, text).len(),
        4,
        "{:#?}",
        broken_links(&document, text)
    );
}

#[test]
fn anchors_follow_github_slugs() {
    assert_eq!(
        slug("The HTML view (`--output html`)"),
        "the-html-view---output-html"
    );
    assert_eq!(
        slug("Run lifecycle: the lock, the deadline, signals"),
        "run-lifecycle-the-lock-the-deadline-signals"
    );
    assert_eq!(
        slug("3. In CI: validate policies and gate on the plan"),
        "3-in-ci-validate-policies-and-gate-on-the-plan"
    );
    assert_eq!(
        slug("snake_case and Ünïcode — kept"),
        "snake_case-and-ünïcode--kept"
    );
    assert_eq!(slug("[Linked](elsewhere.md) heading"), "linked-heading");
    let repeated = anchors("# Notes\n\n## Notes\n\n```sh\n# not a heading\n```\n### Notes\n");
    assert_eq!(
        repeated.into_iter().collect::<Vec<_>>(),
        ["notes", "notes-1", "notes-2"]
    );
}

/// docs/vcenter-role.md answers "which privileges, on which objects?" for the code as it is:
/// every privilege and every SOAP method of src/vsphere/privileges.txt is named there.
#[test]
fn every_privilege_and_method_the_client_needs_is_named_on_the_vcenter_account_page() {
    let page = fs::read_to_string(root().join("docs/vcenter-role.md"))
        .expect("docs/vcenter-role.md is readable");
    let lines = vsphere_descheduler::vsphere::privilege_lines();
    assert!(lines.len() > 10, "privileges.txt is read: {lines:?}");
    let mut unnamed = BTreeSet::new();
    for line in &lines {
        for name in [line.privilege, line.method] {
            if !page.contains(&format!("`{name}`")) {
                unnamed.insert(name);
            }
        }
    }
    assert!(
        unnamed.is_empty(),
        "in src/vsphere/privileges.txt but not in docs/vcenter-role.md: {unnamed:?}"
    );
}

/// Every file of the repository's own text: code, scripts, the chart, the documentation (test
/// fixtures are data, not text that cites anything).
fn own_text_files() -> Vec<PathBuf> {
    fn walk(dir: &Path, out: &mut Vec<PathBuf>) {
        for entry in fs::read_dir(dir).expect("a readable directory") {
            let path = entry.expect("a directory entry").path();
            if path.is_dir() {
                if !path.ends_with("fixtures") && !path.ends_with("snapshots") {
                    walk(&path, out);
                }
            } else if path.extension().is_some_and(|ext| {
                ["rs", "md", "sh", "py", "go", "yaml", "tpl", "txt"]
                    .iter()
                    .any(|known| ext == *known)
            }) {
                out.push(path);
            }
        }
    }
    let mut files = Vec::new();
    for dir in ["src", "tests", "scripts", "charts", "docs", "examples"] {
        if root().join(dir).is_dir() {
            walk(&root().join(dir), &mut files);
        }
    }
    files.extend(["README.md", "CONTRIBUTING.md", "BENCHMARKS.md"].map(|f| root().join(f)));
    files.retain(|path| path.is_file());
    files.sort();
    files
}

/// The project stands alone: no comment or page cites a design or reference document the
/// repository does not have, and every `docs/design.md §N` cited is a section of that page.
#[test]
fn every_cited_document_is_in_the_repository() {
    let design = fs::read_to_string(root().join("docs/design.md")).expect("docs/design.md");
    let sections: BTreeSet<String> = design
        .lines()
        .filter_map(|line| line.strip_prefix("## "))
        .filter_map(|heading| heading.split('.').next())
        .map(str::to_string)
        .collect();
    let outside = [
        "DESIGN §",
        "DESIGN.md",
        "kube-semantics",
        "shared/reference",
        "../shared/",
    ];
    let mut problems = Vec::new();
    for path in own_text_files() {
        if path.ends_with("tests/docs.rs") {
            continue;
        }
        let text = fs::read_to_string(&path).unwrap_or_default();
        for (number, line) in text.lines().enumerate() {
            let place = format!("{}:{}", shown(&path), number + 1);
            for cited in outside.iter().filter(|cited| line.contains(*cited)) {
                problems.push(format!(
                    "{place}: cites {cited}, which is outside the repository"
                ));
            }
            for (at, _) in line.match_indices("docs/design.md §") {
                let section: String = line[at + "docs/design.md §".len()..]
                    .chars()
                    .take_while(char::is_ascii_digit)
                    .collect();
                if !sections.contains(&section) {
                    problems.push(format!("{place}: docs/design.md has no section {section}"));
                }
            }
        }
    }
    assert!(problems.is_empty(), "{}", problems.join("\n"));
}

/// Every flag of every command and every environment variable the command line reads are in
/// docs/commands.md (issue 39: `--request-timeout`, the Pushgateway's credentials and CA,
/// `--vsphere-insecure` and most variables were in no page). Read from clap's own command, so a
/// flag added later fails here until it is documented.
#[test]
fn every_flag_and_environment_variable_is_documented_in_commands_md() {
    use clap::CommandFactory;
    let commands = fs::read_to_string(root().join("docs/commands.md")).expect("docs/commands.md");
    let mut missing = BTreeSet::new();
    let top = vsphere_descheduler::cli::Args::command();
    let all = std::iter::once(&top).chain(top.get_subcommands());
    for command in all {
        for arg in command.get_arguments() {
            let documented = |text: &str| {
                // A whole name: `--output` is not `--output-file`.
                commands.match_indices(text).any(|(at, _)| {
                    let next = commands[at + text.len()..].chars().next();
                    !next.is_some_and(|c| c.is_ascii_alphanumeric() || c == '-' || c == '_')
                })
            };
            if let Some(long) = arg.get_long() {
                let flag = format!("--{long}");
                if !matches!(long, "help" | "version") && !documented(&flag) {
                    missing.insert(format!("{} {flag}", command.get_name()));
                }
            }
            if let Some(env) = arg.get_env() {
                let env = env.to_string_lossy().into_owned();
                if !documented(&format!("`{env}")) {
                    missing.insert(format!("{} {env}", command.get_name()));
                }
            }
        }
    }
    assert!(
        missing.is_empty(),
        "not in docs/commands.md: {}",
        missing.into_iter().collect::<Vec<_>>().join(", ")
    );
}
