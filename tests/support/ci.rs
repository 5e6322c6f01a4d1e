//! Whether the tests run in CI, by one rule for every prerequisite check: in CI a missing
//! prerequisite (the simulator, the Pushgateway, Prometheus, Chromium; Helm in the chart tests)
//! fails the test; elsewhere only Chromium's tests may say so and pass.
//!
//! CI systems set `CI` to different values (GitHub Actions and GitLab CI `true`, others `1`
//! or `yes`), so any non-empty value counts, whatever it says: a run that must not fail on a
//! missing prerequisite leaves `CI` unset. tests/chart/test_chart.py reads `CI` by the same rule.

/// Whether a value of `CI` (unset: `None`) means the tests run in CI.
pub fn is_ci(value: Option<&str>) -> bool {
    value.is_some_and(|value| !value.is_empty())
}

/// Whether this process runs in CI, by its `CI` variable (one that is not UTF-8 counts, being
/// non-empty).
pub fn in_ci() -> bool {
    match std::env::var_os("CI") {
        None => false,
        Some(value) => is_ci(Some(value.to_str().unwrap_or("non-UTF-8"))),
    }
}

/// A prerequisite is missing: a failure in CI; elsewhere the test says so on stderr and the
/// caller skips what needs it.
pub fn missing_prerequisite(hint: &str) {
    assert!(!in_ci(), "{hint}");
    #[allow(clippy::print_stderr)]
    {
        eprintln!("skipped: {hint}");
    }
}
