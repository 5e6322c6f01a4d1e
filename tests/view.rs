//! The HTML view (`--output html`, issue 23) in a real browser: headless Chromium renders the
//! demo and two planner fixtures, and the tests read the DOM it built (`--dump-dom`) for the
//! hosts, node VMs, pods, moves and reasons the plan holds. The page must load nothing: it has
//! no http(s) address anywhere, and its Content-Security-Policy, which the browser enforces,
//! refuses a request planted in it (while the same page without the policy makes it, so the
//! check can fail).
//!
//! The host-failure exposure the page leads with is read the same way, and a generated cluster's
//! page is laid out by the browser with a probe planted in a copy of it, which writes into the
//! DOM what the first screen shows and what stays folded.
//!
//! The `what-if` page is read the same way: its verdict first, each workload's class as a badge
//! beside its name, and nothing loaded.
//!
//! Chromium is Debian's `chromium` (`scripts/test` installs it; `CHROMIUM` names another
//! binary). Without it these tests fail in CI (`CI` set to any non-empty value:
//! tests/support/ci.rs) and otherwise say so and pass.

// The benchmarks' generator; this file uses JSON only, not its YAML writer.
#[allow(dead_code)]
#[path = "../benches/support/cluster.rs"]
mod cluster;
// Only the rule for `CI`; the rest of tests/support is not needed here.
#[path = "support/ci.rs"]
mod ci;

use std::io::{Read, Write};
use std::net::TcpListener;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

/// The fixtures' fixed "now".
const NOW: &str = "2026-11-21T09:00:00Z";

/// The browser binary, or `None` (with a note) when it is missing outside CI.
fn chromium() -> Option<PathBuf> {
    let name = std::env::var("CHROMIUM").unwrap_or_else(|_| "chromium".to_string());
    let found = std::env::var_os("PATH").and_then(|paths| {
        std::env::split_paths(&paths)
            .map(|dir| dir.join(&name))
            .find(|path| path.is_file())
    });
    if found.is_none() {
        ci::missing_prerequisite(
            "headless Chromium is missing: install Debian's chromium \
             (scripts/test does) or set CHROMIUM",
        );
    }
    found
}

/// The binary's `--output html` page for `args`.
fn page(args: &[&str]) -> String {
    let output = Command::new(env!("CARGO_BIN_EXE_vsphere-descheduler"))
        .args(["--output", "html"])
        .args(args)
        .env_remove("RUST_LOG")
        .output()
        .expect("run the binary");
    assert!(
        output.status.success(),
        "{}",
        String::from_utf8_lossy(&output.stderr)
    );
    String::from_utf8(output.stdout).expect("UTF-8 HTML")
}

fn fixture_page(case: &str) -> String {
    let folder = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures/plan")
        .join(case);
    let snapshot = folder.join("snapshot.yaml");
    let policy = folder.join("policy.yaml");
    page(&[
        "plan",
        "--snapshot",
        snapshot.to_str().expect("a UTF-8 path"),
        "--policy",
        policy.to_str().expect("a UTF-8 path"),
        "--now",
        NOW,
    ])
}

/// The DOM Chromium builds from `html`, serialised.
fn dump_dom(browser: &Path, html: &str) -> String {
    let dir = tempfile::tempdir().expect("a temporary directory");
    let file = dir.path().join("view.html");
    std::fs::write(&file, html).expect("write the page");
    let profile = dir.path().join("profile");
    let output = Command::new(browser)
        .args([
            "--headless",
            "--no-sandbox",
            "--disable-gpu",
            "--disable-background-networking",
            "--disable-component-update",
            "--disable-sync",
            "--no-first-run",
            // The first screen of the layout probe.
            "--window-size=1280,1000",
        ])
        .arg(format!("--user-data-dir={}", profile.display()))
        .arg("--dump-dom")
        .arg(format!("file://{}", file.display()))
        .output()
        .expect("run chromium");
    assert!(
        output.status.success(),
        "chromium failed: {}",
        String::from_utf8_lossy(&output.stderr)
    );
    let dom = String::from_utf8(output.stdout).expect("a UTF-8 DOM");
    assert!(dom.contains("</html>"), "chromium printed no DOM: {dom}");
    dom
}

/// Each expected text is in the DOM.
fn assert_shows(dom: &str, expected: &[&str]) {
    let missing: Vec<&&str> = expected
        .iter()
        .filter(|text| !dom.contains(*text))
        .collect();
    assert!(
        missing.is_empty(),
        "missing {missing:?} in the rendered page"
    );
}

/// The text a DOM fragment shows, its tags dropped, one line per line or list item.
fn lines_of(fragment: &str) -> Vec<String> {
    let mut text = String::with_capacity(fragment.len());
    let mut in_tag = false;
    for c in fragment.replace("</li>", "</li>\n").chars() {
        match c {
            '<' => in_tag = true,
            '>' => in_tag = false,
            c if !in_tag => text.push(c),
            _ => {}
        }
    }
    text.lines()
        .map(str::trim)
        .filter(|line| !line.is_empty())
        .map(str::to_string)
        .collect()
}

/// The text a DOM fragment shows, its lines joined by spaces.
fn text_of(fragment: &str) -> String {
    lines_of(fragment).join(" ")
}

/// The DOM from `start` up to the next `end`.
fn part<'a>(dom: &'a str, start: &str, end: &str) -> &'a str {
    dom.split_once(start)
        .and_then(|(_, rest)| rest.split(end).next())
        .unwrap_or_else(|| panic!("the page has no {start}"))
}

/// Nothing in the page points outside it: no http(s) address at all (so none in a `src`,
/// `href` or `url()`), and the policy that forbids loading anything.
fn assert_self_contained(html: &str) {
    let lower = html.to_lowercase();
    assert!(
        !lower.contains("http://") && !lower.contains("https://") && !lower.contains("//cdn"),
        "the page names an address"
    );
    for attribute in ["src=", "href=", "url(", "@import", "<script", "<link"] {
        assert!(!lower.contains(attribute), "the page has {attribute}");
    }
    assert!(html.contains(
        "<meta http-equiv=\"Content-Security-Policy\" content=\"default-src 'none'; \
         style-src 'unsafe-inline'\">"
    ));
}

#[test]
fn the_demo_shows_hosts_vms_the_move_the_eviction_and_the_drs_rules() {
    let Some(browser) = chromium() else { return };
    let html = page(&["demo"]);
    assert_self_contained(&html);
    let dom = dump_dom(&browser, &html);
    assert_shows(
        &dom,
        &[
            // Hosts as columns, with their node VMs.
            "data-host=\"lab-wcp-esxi-41.go-lab.jp\"",
            "data-host=\"lab-wcp-esxi-43.go-lab.jp\"",
            "<b>worker-a</b>",
            "<b>control-plane-2</b>",
            // DRS moved worker-b: was labelled 42, is on 41.
            "was on lab-wcp-esxi-42.go-lab.jp",
            "is on lab-wcp-esxi-41.go-lab.jp",
            // The eviction, its reason and where it fits.
            "<h4>lab-ns-01/Deployment/demo-httpd</h4>",
            "<b>demo-httpd-68979c6d58-dhrpc</b>",
            "shares ESXi host lab-wcp-esxi-41.go-lab.jp",
            "fits on worker-c (lab-wcp-esxi-43.go-lab.jp)",
            "lab-wcp-esxi-41.go-lab.jp: 2 → 1",
            "lab-wcp-esxi-43.go-lab.jp: 0 → 1",
            // The DRS rules as the VM groups they keep apart.
            "vsphere-descheduler:lab:db:StatefulSet/pg",
            "keeps apart 3 VMs: <span class=\"vms\">control-plane-1, control-plane-2, \
             control-plane-3</span>",
        ],
    );
    // The host of worker-b's column is where the VM is now.
    let esxi_41 = dom
        .split("data-host=\"lab-wcp-esxi-41.go-lab.jp\"")
        .nth(1)
        .and_then(|rest| rest.split("data-host=").next())
        .expect("the column of lab-wcp-esxi-41");
    assert!(esxi_41.contains("<b>worker-b</b>"), "{esxi_41}");
}

#[test]
fn a_host_in_maintenance_is_marked_and_skips_say_why() {
    let Some(browser) = chromium() else { return };
    let html = fixture_page("target-host-in-maintenance");
    assert_self_contained(&html);
    let dom = dump_dom(&browser, &html);
    assert_shows(
        &dom,
        &[
            "esxi-43.lab.example <span class=\"tag down\">maintenance mode</span>",
            "not evicted: no-feasible-node",
            "<b>web-5d8f7c9b6-aaaaa</b>",
            "1 node on an ESXi host that is disconnected, not responding or in maintenance",
            "cordoned",
            "vsphere-descheduler:lab:web:Deployment/web",
        ],
    );
}

#[test]
fn utilization_shows_each_node_against_its_thresholds() {
    let Some(browser) = chromium() else { return };
    let html = fixture_page("low-node-utilization-host-aware-gated");
    assert_self_contained(&html);
    let dom = dump_dom(&browser, &html);
    assert_shows(
        &dom,
        &[
            "Node utilization against thresholds",
            "above target",
            "underutilized",
            // The availability gate lets web-rs lose one pod per run (upstream format: on).
            "cpu 81% → 75% (low 20%, target 50%)",
            "<h4>shop/ReplicaSet/web-rs</h4>",
            "<b>web-11</b>",
            "fits on worker-2 (esxi-2.lab.example)",
            "not evicted: workload-unavailable",
            "<span class=\"tag evict\">−1 evict</span>",
            "<span class=\"tag arrive\">+1 arrives</span>",
        ],
    );
}

/// Counts connections to a local port, answering each with a 404.
fn counting_server() -> (u16, Arc<AtomicUsize>) {
    let listener = TcpListener::bind("127.0.0.1:0").expect("bind a port");
    let port = listener.local_addr().expect("an address").port();
    let count = Arc::new(AtomicUsize::new(0));
    let seen = Arc::clone(&count);
    std::thread::spawn(move || {
        for stream in listener.incoming() {
            let Ok(mut stream) = stream else { continue };
            seen.fetch_add(1, Ordering::SeqCst);
            let mut request = [0u8; 2048];
            let _ = stream.read(&mut request);
            let _ = stream.write_all(b"HTTP/1.1 404 Not Found\r\nContent-Length: 0\r\n\r\n");
        }
    });
    (port, count)
}

/// The browser, given `html` with an image planted in it, requests nothing: the page's policy
/// blocks it. The control: without the policy the same page makes the request, so the check
/// could see one.
fn assert_the_browser_loads_nothing(browser: &Path, html: &str) {
    let (port, requests) = counting_server();
    let planted = format!("<img alt=\"\" src=\"http://127.0.0.1:{port}/pixel.png\">");
    let with_request = html.replacen("<main>", &format!("<main>{planted}"), 1);
    assert_ne!(
        with_request, html,
        "the page has a <main> to plant the image in"
    );

    dump_dom(browser, &with_request);
    assert_eq!(requests.load(Ordering::SeqCst), 0, "the policy blocks it");

    let policy = "<meta http-equiv=\"Content-Security-Policy\"";
    let without_policy = with_request.replacen(policy, "<meta name=\"removed\"", 1);
    dump_dom(browser, &without_policy);
    assert!(
        requests.load(Ordering::SeqCst) > 0,
        "the control page loads the image"
    );
}

#[test]
fn the_browser_enforces_the_page_s_policy_and_loads_nothing() {
    let Some(browser) = chromium() else { return };
    assert_the_browser_loads_nothing(&browser, &page(&["demo"]));
}

#[test]
fn the_demo_shows_each_workload_s_class_and_what_each_host_s_failure_takes() {
    let Some(browser) = chromium() else { return };
    let html = page(&["demo"]);
    assert_self_contained(&html);
    let dom = dump_dom(&browser, &html);

    // The summary the page opens with: before anything else it draws.
    let summary = text_of(part(&dom, "<section id=\"exposure\"", "</section>"));
    assert!(
        dom.find("id=\"exposure\"") < dom.find("id=\"hosts\""),
        "the exposure comes first"
    );
    for expected in [
        "Host-failure exposure: 2 at risk now (1 all, 1 majority), 1 after this plan (1 majority)",
        "all 1 → 0",
        "majority 1 → 1",
        "tolerated 0 → 1",
        "Hosts at risk: 1 now, 1 after this plan",
        "lab-wcp-esxi-41.go-lab.jp: now 1 all, 1 majority; after this plan 1 majority",
    ] {
        assert!(summary.contains(expected), "{expected:?} not in {summary}");
    }

    // Each drawn workload's class, now → after, and the rule that will keep it apart.
    let web = text_of(part(
        &dom,
        "<h4>lab-ns-01/Deployment/demo-httpd</h4>",
        "</article>",
    ));
    assert!(web.contains("all → tolerated"), "{web}");
    let db = text_of(part(&dom, "<h4>db/StatefulSet/pg</h4>", "</article>"));
    assert!(
        db.contains(
            "majority → majority; DRS rule vsphere-descheduler:lab:db:StatefulSet/pg will keep \
             its node VMs apart"
        ),
        "{db}"
    );

    // esxi-41 holds both web replicas and two of the three pg ones: after the plan, still pg's.
    let esxi_41 = lines_of(part(
        &dom,
        "data-host=\"lab-wcp-esxi-41.go-lab.jp\"",
        "data-host=",
    ));
    assert_eq!(
        esxi_41[1..6],
        [
            "if this host fails now:",
            "lab-ns-01/Deployment/demo-httpd loses 2 of 2 (all)",
            "db/StatefulSet/pg loses 2 of 3 (majority)",
            "after this plan:",
            "db/StatefulSet/pg loses 2 of 3 (majority)",
        ],
        "{esxi_41:?}"
    );
    let esxi_42 = text_of(part(
        &dom,
        "data-host=\"lab-wcp-esxi-42.go-lab.jp\"",
        "data-host=",
    ));
    assert!(
        esxi_42.contains("if this host fails: nothing at risk"),
        "{esxi_42}"
    );
    // A small page folds nothing.
    assert!(!dom.contains("<details"), "the demo page folds nothing");
}

/// Planted at the end of a copy of the page (its policy removed, so the script runs): what the
/// browser laid out when it got there, written into the DOM as `name=value;` pairs. The script
/// runs once, as the parser reaches it, so what it reads does not depend on timing.
const LAYOUT_PROBE: &str = r##"<script>
(() => {
  // Not inside a closed <details>, nor otherwise hidden.
  const shown = (element) => element.checkVisibility();
  const lead = document.querySelector("#exposure .lead").getBoundingClientRect();
  const classes = document.querySelector("#exposure .classes").getBoundingClientRect();
  const count = (selector) => document.querySelectorAll(selector).length;
  const visible = (selector) => [...document.querySelectorAll(selector)].filter(shown).length;
  const facts = {
    first: document.querySelector("main section").id,
    leadTop: Math.round(lead.top),
    classesBottom: Math.round(classes.bottom),
    screen: innerHeight,
    folds: count("details"),
    open: count("details[open]"),
    nodes: count(".nodes li"),
    nodesShown: visible(".nodes li"),
    workloads: count("article"),
    workloadsShown: visible("article"),
    hostsAtRiskShown: visible("#exposure .host-list li"),
  };
  document.body.dataset.probe =
    Object.entries(facts).map(([name, value]) => `${name}=${value};`).join("");
})();
</script>"##;

/// The probe's facts from the DOM Chromium built.
fn probed(dom: &str) -> std::collections::BTreeMap<String, String> {
    let pairs = part(dom, "data-probe=\"", "\"");
    pairs
        .split(';')
        .filter(|pair| !pair.is_empty())
        .map(|pair| {
            let (name, value) = pair.split_once('=').expect("name=value");
            (name.to_string(), value.to_string())
        })
        .collect()
}

#[test]
fn a_large_cluster_s_page_opens_on_the_exposure_summary_with_its_bulk_folded() {
    let Some(browser) = chromium() else { return };
    // 30 node VMs a host, a few hundred workloads: past the folding rule everywhere.
    let shape = cluster::Shape {
        nodes: 300,
        pods: 6_000,
        hosts: 10,
        ..cluster::Shape::default()
    };
    let dir = tempfile::tempdir().expect("a temporary directory");
    let snapshot = dir.path().join("snapshot.json");
    std::fs::write(&snapshot, cluster::text(&shape, cluster::Format::Json))
        .expect("write the snapshot");
    let policy = dir.path().join("policy.yaml");
    std::fs::write(
        &policy,
        "apiVersion: vsphere-descheduler.io/v1alpha1\nkind: DeschedulerPolicy\nclusterName: big\n\
         profiles:\n- name: all\n  plugins:\n    deschedule: {enabled: \
         [RemovePodsViolatingInterPodAntiAffinity]}\n    balance: {enabled: \
         [RemovePodsViolatingTopologySpreadConstraint, RemoveDuplicates]}\n",
    )
    .expect("write the policy");
    let html = page(&[
        "plan",
        "--snapshot",
        snapshot.to_str().expect("a UTF-8 path"),
        "--policy",
        policy.to_str().expect("a UTF-8 path"),
        "--now",
        NOW,
    ]);
    assert_self_contained(&html);
    let policy_tag = "<meta http-equiv=\"Content-Security-Policy\"";
    let probe = html
        .replacen(policy_tag, "<meta name=\"removed\"", 1)
        .replacen("</body>", &format!("{LAYOUT_PROBE}</body>"), 1);
    let facts = probed(&dump_dom(&browser, &probe));
    let fact = |name: &str| -> usize {
        facts[name]
            .parse()
            .unwrap_or_else(|_| panic!("{name} is a number: {facts:?}"))
    };

    // The page opens on the summary: first, and on the first screen with its class counts.
    assert_eq!(facts["first"], "exposure", "{facts:?}");
    assert!(fact("classesBottom") <= fact("screen"), "{facts:?}");
    assert!(fact("leadTop") < fact("classesBottom"), "{facts:?}");
    // Nothing was opened, and the bulk is folded: no node VM card is laid out, and of the
    // hosts and workloads at risk or drawn, only the first ten of each list.
    assert_eq!(fact("open"), 0, "{facts:?}");
    assert!(fact("folds") > shape.hosts, "{facts:?}");
    assert!(fact("nodes") >= shape.nodes, "{facts:?}");
    assert_eq!(fact("nodesShown"), 0, "{facts:?}");
    assert!(fact("workloads") > 20, "{facts:?}");
    assert!(fact("workloadsShown") <= 20, "{facts:?}");
    assert_eq!(fact("hostsAtRiskShown"), 10, "{facts:?}");
}

/// The demo's `what-if --host-fails esxi-41` page, which exits 3: workloads at risk.
fn demo_what_if_page() -> String {
    let demo = Path::new(env!("CARGO_MANIFEST_DIR")).join("src/command/demo");
    let output = Command::new(env!("CARGO_BIN_EXE_vsphere-descheduler"))
        .args(["--output", "html", "what-if", "--snapshot"])
        .arg(demo.join("snapshot.yaml"))
        .arg("--policy")
        .arg(demo.join("policy.yaml"))
        .args(["--now", NOW, "--host-fails", "esxi-41"])
        .env_remove("RUST_LOG")
        .output()
        .expect("run the binary");
    assert_eq!(
        output.status.code(),
        Some(3),
        "{}",
        String::from_utf8_lossy(&output.stderr)
    );
    String::from_utf8(output.stdout).expect("UTF-8 HTML")
}

/// The cells of the row of the `#workloads` table naming `workload`, as text, and the row.
fn workload_row<'a>(dom: &'a str, workload: &str) -> (Vec<String>, &'a str) {
    let table = part(dom, "<table id=\"workloads\">", "</table>");
    let row = table
        .split("<tr>")
        .find(|row| row.contains(&format!("<b>{workload}</b>")))
        .unwrap_or_else(|| panic!("no row for {workload} in {table}"));
    let cells = row
        .split("<td>")
        .skip(1)
        .map(|cell| text_of(cell.split("</td>").next().unwrap_or_default()))
        .collect();
    (cells, row)
}

#[test]
fn the_demo_s_what_if_page_leads_with_the_verdict_and_marks_each_workload_s_class() {
    let Some(browser) = chromium() else { return };
    let html = demo_what_if_page();
    assert_self_contained(&html);
    let dom = dump_dom(&browser, &html);

    // The question, then the verdict, before any section.
    let main = part(&dom, "<main>", "</main>");
    let verdict = main.find("id=\"verdict\"").expect("a verdict");
    let first_section = main.find("<h2>").expect("sections");
    assert!(verdict < first_section, "the verdict comes first");
    assert!(main.find("<h1>") < Some(verdict), "after the question");
    assert_eq!(
        text_of(part(main, "<h1>", "</h1>")),
        "What if lab-wcp-esxi-41.go-lab.jp fails (offline: nothing was changed)"
    );
    let verdict = part(main, "id=\"verdict\"", "</p>");
    assert!(
        text_of(verdict)
            .ends_with("Verdict: 2 workload(s) or node group(s) would be at risk (exit 3)"),
        "{verdict}"
    );
    assert!(
        main.contains("<p class=\"verdict risk\" id=\"verdict\">"),
        "drawn as a risk"
    );

    // Each workload's class as a badge beside its name, in words and in its colour's class.
    let (web, row) = workload_row(&dom, "lab-ns-01/Deployment/demo-httpd");
    assert!(row.contains("<span class=\"tag all\">all</span>"), "{row}");
    assert_eq!(
        web,
        [
            "all",
            "lab-ns-01/Deployment/demo-httpd",
            "loses 2 of 2 pod(s)",
            "no PodDisruptionBudget",
        ]
    );
    let (pg, row) = workload_row(&dom, "db/StatefulSet/pg");
    assert!(
        row.contains("<span class=\"tag majority\">majority</span>"),
        "{row}"
    );
    assert_eq!(
        pg,
        [
            "majority",
            "db/StatefulSet/pg",
            "loses 2 of 3 pod(s)",
            "PodDisruptionBudget db/pg lets 1 go at once",
        ]
    );
    // Worst first.
    assert!(dom.find("demo-httpd</b>") < dom.find("StatefulSet/pg</b>"));

    assert_the_browser_loads_nothing(&browser, &html);
}

/// The rule these tests skip by: GitHub Actions and GitLab CI set `CI=true`, other systems
/// `CI=1` or `yes`; any non-empty value is CI, only unset or empty is not.
#[test]
fn any_non_empty_ci_value_is_ci() {
    for value in ["true", "1", "yes", "github", " ", "0", "false"] {
        assert!(ci::is_ci(Some(value)), "CI={value:?} is CI");
    }
    for value in [None, Some("")] {
        assert!(!ci::is_ci(value), "CI={value:?} is not CI");
    }
}
