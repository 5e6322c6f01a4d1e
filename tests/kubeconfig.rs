//! Aiming like kubectl (issue 23): `--kubeconfig` over `KUBECONFIG` (several files, merged,
//! the first to name an entry wins) over `~/.kube/config`; `--context` picks the named context.
//! Two fake API servers stand for two clusters; a `run --dry-run` must talk to the chosen one
//! only, say which on stderr before anything else, and name it in the report's `target`.
//!
//! vCenter is unreachable on purpose (a closed port): the run reports that as an error and
//! still reads Kubernetes, which is all these tests look at.
//!
//! Also: an API server whose certificate is refused (a TLS server on 127.0.0.1 that only
//! shakes hands, with certificates made by `openssl`) is told in words naming the kubeconfig
//! field that fixes it, with no library text.

mod support;

use std::path::{Path, PathBuf};
use std::process::Command;

use serde_json::Value;
use support::certificates;
use support::closed_port::ClosedPort;
use support::fake_apiserver::{FakeApiServer, FakeCluster, read_objects};
use vsphere_descheduler::text::MAX_MESSAGE;

/// Two clusters, each a fake API server with the same small story.
struct Clusters {
    a: FakeApiServer,
    b: FakeApiServer,
    dir: tempfile::TempDir,
}

impl Clusters {
    fn start() -> Clusters {
        let story = Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("tests/fixtures/plan/drs-moved-worker/snapshot.yaml");
        let server = || {
            let mut objects = read_objects(&story);
            objects.inventory = None;
            FakeApiServer::start(FakeCluster::new(objects))
        };
        Clusters {
            a: server(),
            b: server(),
            dir: tempfile::tempdir().expect("a temporary directory"),
        }
    }

    /// A kubeconfig file with the given `(context, server)` pairs and current context.
    fn kubeconfig(&self, file: &str, contexts: &[(&str, &str)], current: &str) -> PathBuf {
        let mut text = String::from("apiVersion: v1\nkind: Config\nclusters:\n");
        for (name, server) in contexts {
            text.push_str(&format!(
                "- name: {name}\n  cluster:\n    server: {server}\n"
            ));
        }
        text.push_str("users:\n- name: nobody\n  user: {}\ncontexts:\n");
        for (name, _) in contexts {
            text.push_str(&format!(
                "- name: {name}\n  context:\n    cluster: {name}\n    user: nobody\n"
            ));
        }
        text.push_str(&format!("current-context: {current}\n"));
        let path = self.dir.path().join(file);
        std::fs::write(&path, text).expect("write a kubeconfig");
        path
    }

    /// `run --dry-run --output json` with `args`, a clean environment plus `env`.
    fn run(&self, args: &[&str], env: &[(&str, &Path)]) -> (Value, String) {
        dry_run(self.dir.path(), args, env)
    }

    /// How many requests each server received.
    fn requests(&self) -> (usize, usize) {
        (
            self.a.cluster().requests.len(),
            self.b.cluster().requests.len(),
        )
    }
}

/// `run --dry-run --output json` with `args`, a clean environment with `home` as `HOME` plus
/// `env`: the report and stderr.
fn dry_run(home: &Path, args: &[&str], env: &[(&str, &Path)]) -> (Value, String) {
    let mut command = Command::new(env!("CARGO_BIN_EXE_vsphere-descheduler"));
    command
        .args([
            "--output",
            "json",
            "run",
            "--dry-run",
            "--request-timeout",
            "5",
        ])
        .args(args)
        .env_clear()
        .env("HOME", home)
        .env("VSPHERE_USERNAME", "user")
        .env("VSPHERE_PASSWORD", "pass")
        .env("RUST_LOG", "warn");
    for (name, value) in env {
        command.env(name, value);
    }
    // vCenter is down: its port is held, never listening, until the binary has exited.
    let vcenter = ClosedPort::bind();
    command.env("VSPHERE_SERVER", vcenter.address());
    let output = command.output().expect("run the binary");
    let stdout = String::from_utf8_lossy(&output.stdout);
    let stderr = String::from_utf8_lossy(&output.stderr).into_owned();
    let report = serde_json::from_str(&stdout)
        .unwrap_or_else(|e| panic!("a JSON report ({e}): {stdout}\n{stderr}"));
    (report, stderr)
}

#[test]
fn context_picks_the_named_cluster_and_the_report_names_it() {
    let clusters = Clusters::start();
    let file = clusters.kubeconfig(
        "config",
        &[("a", &clusters.a.url), ("b", &clusters.b.url)],
        "a",
    );
    let file_arg = file.to_str().expect("a UTF-8 path");
    let (report, stderr) = clusters.run(&["--kubeconfig", file_arg, "--context", "b"], &[]);

    let (to_a, to_b) = clusters.requests();
    assert_eq!(to_a, 0, "nothing may reach the cluster not chosen");
    assert!(to_b > 0, "the chosen cluster is read");
    let target = &report["target"];
    assert_eq!(target["context"], "b");
    assert_eq!(
        target["apiServer"]
            .as_str()
            .map(|s| s.trim_end_matches('/')),
        Some(clusters.b.url.as_str())
    );
    assert!(
        target["vCenter"]
            .as_str()
            .is_some_and(|v| v.starts_with("127.0.0.1:"))
    );
    let first = stderr.lines().next().unwrap_or_default();
    assert!(
        first.starts_with("target: Kubernetes API server ")
            && first.contains(&clusters.b.url)
            && first.contains("context b"),
        "the first line on stderr names the target: {stderr}"
    );
}

#[test]
fn without_context_the_current_context_of_the_first_kubeconfig_file_wins() {
    let clusters = Clusters::start();
    let first = clusters.kubeconfig("first", &[("shared", &clusters.a.url)], "shared");
    let second = clusters.kubeconfig(
        "second",
        &[("shared", &clusters.b.url), ("only-b", &clusters.b.url)],
        "only-b",
    );
    let list = std::env::join_paths([&first, &second]).expect("a path list");
    let list = PathBuf::from(list);

    let (report, _) = clusters.run(&[], &[("KUBECONFIG", &list)]);
    assert_eq!(report["target"]["context"], "shared");
    assert_eq!(clusters.requests().1, 0, "the first file's entry wins");
    assert!(clusters.requests().0 > 0);

    // The second file's entries are merged in: its own context is there to pick.
    let (report, _) = clusters.run(&["--context", "only-b"], &[("KUBECONFIG", &list)]);
    assert_eq!(report["target"]["context"], "only-b");
    assert!(clusters.requests().1 > 0);
}

#[test]
fn the_kubeconfig_flag_overrides_the_environment_which_overrides_the_home_file() {
    let clusters = Clusters::start();
    std::fs::create_dir_all(clusters.dir.path().join(".kube")).expect("a ~/.kube");
    clusters.kubeconfig(".kube/config", &[("home", &clusters.b.url)], "home");
    let (report, _) = clusters.run(&[], &[]);
    assert_eq!(
        report["target"]["context"], "home",
        "~/.kube/config is the last resort"
    );

    let env = clusters.kubeconfig("env", &[("env", &clusters.a.url)], "env");
    let (report, _) = clusters.run(&[], &[("KUBECONFIG", &env)]);
    assert_eq!(
        report["target"]["context"], "env",
        "KUBECONFIG over ~/.kube/config"
    );

    let flag = clusters.kubeconfig("flag", &[("flag", &clusters.b.url)], "flag");
    let flag_arg = flag.to_str().expect("a UTF-8 path");
    let before = clusters.requests();
    let (report, _) = clusters.run(&["--kubeconfig", flag_arg], &[("KUBECONFIG", &env)]);
    assert_eq!(
        report["target"]["context"], "flag",
        "--kubeconfig over KUBECONFIG"
    );
    let after = clusters.requests();
    assert_eq!(after.0, before.0, "KUBECONFIG's cluster is not asked");
    assert!(after.1 > before.1);
}

#[test]
fn an_unknown_context_is_refused_before_any_request() {
    let clusters = Clusters::start();
    let file = clusters.kubeconfig("config", &[("a", &clusters.a.url)], "a");
    let file_arg = file.to_str().expect("a UTF-8 path");
    let (report, _) = clusters.run(&["--kubeconfig", file_arg, "--context", "nope"], &[]);
    assert_eq!(clusters.requests(), (0, 0));
    assert!(report["target"].is_null(), "no target was reached");
    let errors = report["errors"].to_string();
    assert!(errors.contains("context nope"), "{errors}");
}

#[test]
fn a_dry_run_draws_its_html_page_naming_the_target() {
    let clusters = Clusters::start();
    let file = clusters.kubeconfig("config", &[("b", &clusters.b.url)], "b");
    // vCenter is down: its port is held, never listening, until the binary has exited.
    let vcenter = ClosedPort::bind();
    let output = Command::new(env!("CARGO_BIN_EXE_vsphere-descheduler"))
        .args([
            "--output",
            "html",
            "run",
            "--dry-run",
            "--request-timeout",
            "5",
        ])
        .arg("--kubeconfig")
        .arg(&file)
        .env_clear()
        .env("HOME", clusters.dir.path())
        .env("VSPHERE_SERVER", vcenter.address())
        .env("VSPHERE_USERNAME", "user")
        .env("VSPHERE_PASSWORD", "pass")
        .output()
        .expect("run the binary");
    let page = String::from_utf8(output.stdout).expect("UTF-8 HTML");
    assert!(page.starts_with("<!DOCTYPE html>"), "{page}");
    assert!(page.contains("dry run (nothing was changed)"));
    assert!(
        page.contains(&format!("Kubernetes API server <b>{}", clusters.b.url)),
        "{page}"
    );
    assert!(page.contains("context <b>b</b>"));
    // vCenter is down: no hosts, the nodes are drawn on no known host, the error is shown.
    assert!(page.contains("Nodes on no known host"));
    assert!(page.contains("<b>worker-a</b>"));
    assert!(page.contains("vCenter could not be observed"));
}

/// A kubeconfig `config` in `dir` for one cluster at `server`, trusting the PEM file `ca` (as
/// `certificate-authority-data`) when given.
fn tls_kubeconfig(dir: &Path, server: &str, ca: Option<&Path>) -> PathBuf {
    use base64::Engine as _;
    let mut cluster = format!("    server: {server}\n");
    if let Some(ca) = ca {
        let pem = std::fs::read(ca).expect("the CA file");
        let data = base64::engine::general_purpose::STANDARD.encode(pem);
        cluster.push_str(&format!("    certificate-authority-data: {data}\n"));
    }
    let text = format!(
        "apiVersion: v1\nkind: Config\nclusters:\n- name: lab\n  cluster:\n{cluster}\
         users:\n- name: nobody\n  user: {{}}\ncontexts:\n- name: lab\n  context:\n    \
         cluster: lab\n    user: nobody\ncurrent-context: lab\n"
    );
    let path = dir.join("config");
    std::fs::write(&path, text).expect("write a kubeconfig");
    path
}

/// The report's errors, one string; each must fit a line of the text report whole.
fn errors(report: &Value) -> String {
    for error in report["errors"].as_array().expect("errors") {
        let error = error.as_str().unwrap_or_default();
        assert!(error.chars().count() <= MAX_MESSAGE, "cut in text: {error}");
    }
    report["errors"].to_string()
}

/// Issue 31: an API server presenting its CA's certificate as its own ended the run with
/// `Other(OtherError(CaUsedAsEndEntity))`.
#[test]
fn an_api_server_certificate_that_is_a_ca_is_refused_in_words_naming_the_kubeconfig_fix() {
    let dir = tempfile::tempdir().expect("a temporary directory");
    let certificates = certificates::ca_as_server_certificate(dir.path());
    let port = certificates::serve_tls(&certificates);
    let server = format!("https://127.0.0.1:{port}");
    let kubeconfig = tls_kubeconfig(dir.path(), &server, Some(&certificates.ca));
    let (report, stderr) = dry_run(dir.path(), &[], &[("KUBECONFIG", &kubeconfig)]);
    let errors = errors(&report);
    assert!(
        errors.contains(
            "the API server's TLS certificate was refused: it is a CA certificate \
             (basicConstraints CA:TRUE), which cannot identify a server: the API server needs a \
             certificate issued by a CA, named in the kubeconfig cluster's \
             certificate-authority-data or certificate-authority (chosen with --kubeconfig and \
             --context)"
        ),
        "{errors}\n{stderr}"
    );
    for library_text in ["CaUsedAsEndEntity", "OtherError", "InvalidCertificate"] {
        assert!(!errors.contains(library_text), "{errors}");
        assert!(!stderr.contains(library_text), "{stderr}");
    }
}

#[test]
fn an_api_server_certificate_from_a_ca_not_given_is_refused_naming_where_to_give_it() {
    let dir = tempfile::tempdir().expect("a temporary directory");
    let certificates = certificates::private_ca_and_server_certificate(dir.path());
    let port = certificates::serve_tls(&certificates);
    let kubeconfig = tls_kubeconfig(dir.path(), &format!("https://127.0.0.1:{port}"), None);
    let (report, stderr) = dry_run(dir.path(), &[], &[("KUBECONFIG", &kubeconfig)]);
    let errors = errors(&report);
    assert!(
        errors.contains(
            "the API server's TLS certificate was refused: it was issued by a CA this tool does \
             not trust: give that CA's certificate in the kubeconfig cluster's \
             certificate-authority-data or certificate-authority, chosen with --kubeconfig and \
             --context"
        ),
        "{errors}\n{stderr}"
    );
    assert!(errors.contains("insecure-skip-tls-verify"), "{errors}");
    assert!(!errors.contains("UnknownIssuer"), "{errors}");
}

/// Issue 42: a refused certificate filled stderr with a dozen bare library lines
/// (`ERROR kube_client::client::builder: failed with error client error (Connect)`). Without
/// `RUST_LOG` or `-v` only the tool's own lines are written; `-v` lets the libraries' warnings
/// and errors through.
#[test]
fn a_refused_certificate_is_logged_in_the_tool_s_words_alone_unless_asked() {
    let dir = tempfile::tempdir().expect("a temporary directory");
    let certificates = certificates::private_ca_and_server_certificate(dir.path());
    let port = certificates::serve_tls(&certificates);
    let kubeconfig = tls_kubeconfig(dir.path(), &format!("https://127.0.0.1:{port}"), None);
    let stderr = |verbose: &[&str]| {
        let output = Command::new(env!("CARGO_BIN_EXE_vsphere-descheduler"))
            .args(verbose)
            .args([
                "--log-format",
                "plain",
                "--output",
                "json",
                "run",
                "--dry-run",
            ])
            .args(["--request-timeout", "5"])
            .env_clear()
            .env("HOME", dir.path())
            .env("KUBECONFIG", &kubeconfig)
            .env("VSPHERE_SERVER", "127.0.0.1:1")
            .env("VSPHERE_USERNAME", "user")
            .env("VSPHERE_PASSWORD", "pass")
            .output()
            .expect("run the binary");
        assert_eq!(output.status.code(), Some(1), "the run failed");
        String::from_utf8(output.stderr).expect("UTF-8")
    };
    let quiet = stderr(&[]);
    assert!(
        quiet.contains("the API server's TLS certificate was refused"),
        "the tool's own line: {quiet}"
    );
    // A log line is `<time> <LEVEL> <target>: …`; the one unlogged line names the target.
    let foreign: Vec<&str> = quiet
        .lines()
        .filter(|line| {
            let mut words = line.split_whitespace();
            let level = words.nth(1).unwrap_or_default();
            ["ERROR", "WARN", "INFO", "DEBUG", "TRACE"].contains(&level)
                && !words
                    .next()
                    .is_some_and(|t| t.starts_with("vsphere_descheduler"))
        })
        .collect();
    assert!(foreign.is_empty(), "lines of other crates: {foreign:#?}");
    let verbose = stderr(&["-v"]);
    assert!(
        verbose.contains(" kube_client"),
        "-v lets the libraries' errors through: {verbose}"
    );
}
