//! `vsphere.availability`: the availability gate (`maxUnavailablePerWorkload`) and pacing across
//! runs (`pacing`). Both are on by default, in every format: an upstream file gets the defaults.

use std::time::Duration;

use super::decode::{Decoder, Fields};
use super::yaml::{Value, YamlNode};
use super::{Allowance, Availability, Pacing};
use crate::duration::go_duration;

const FIELDS: [&str; 2] = ["maxUnavailablePerWorkload", "pacing"];
const PACING_FIELDS: [&str; 3] = ["maxEvictionsPerWorkload", "window", "maxEvictionsPerWindow"];

/// The longest pacing window: the history keeps no older evictions.
const MAX_WINDOW: Duration = Duration::from_secs(24 * 60 * 60);

/// `vsphere.availability`, or the defaults where it or a field is absent.
pub(super) fn availability(d: &mut Decoder, node: &YamlNode, path: &str) -> Availability {
    let mut settings = Availability::default();
    let Some(fields) = d.fields(node, path, &FIELDS) else {
        return settings;
    };
    if let Some(node) = fields.get("maxUnavailablePerWorkload") {
        let path = fields.path("maxUnavailablePerWorkload");
        if let Some(allowance) = allowance(d, node, &path) {
            settings.max_unavailable_per_workload = allowance;
        }
    }
    if let Some(node) = fields.get("pacing") {
        settings.pacing = pacing(d, node, &fields.path("pacing"));
    }
    settings
}

/// A number of pods, or a percentage of the workload's pods as `"25%"` (as a Deployment's
/// `maxUnavailable`).
fn allowance(d: &mut Decoder, node: &YamlNode, path: &str) -> Option<Allowance> {
    let Value::Str(text) = &node.value else {
        return d.integer(node, path).map(Allowance::Pods);
    };
    let percent = text
        .strip_suffix('%')
        .filter(|digits| !digits.is_empty() && digits.bytes().all(|b| b.is_ascii_digit()))
        .and_then(|digits| digits.parse::<u32>().ok());
    match percent {
        Some(percent) if percent <= 100 => Some(Allowance::Percent(percent)),
        Some(_) => {
            d.problem_at(node, path, format!("{text:?} is more than 100%"));
            None
        }
        None => {
            d.problem_at(
                node,
                path,
                format!(
                    "expected a number of pods (such as 1) or a percentage of the workload's pods \
                     (such as \"25%\"), found {text:?}"
                ),
            );
            None
        }
    }
}

fn pacing(d: &mut Decoder, node: &YamlNode, path: &str) -> Pacing {
    let mut pacing = Pacing::default();
    let Some(fields) = d.fields(node, path, &PACING_FIELDS) else {
        return pacing;
    };
    if let Some(max) = fields.integer(d, "maxEvictionsPerWorkload") {
        pacing.max_evictions_per_workload = max;
    }
    if let Some(window) = window(d, &fields) {
        pacing.window = window;
    }
    pacing.max_evictions_per_window = per_window(d, &fields);
    pacing
}

/// `maxEvictionsPerWindow`: absent is no cluster-wide limit; 0 is refused rather than read as
/// "none allowed", which `maxEvictionsPerWorkload: 0` would be mistaken for (it turns pacing off).
fn per_window(d: &mut Decoder, fields: &Fields<'_>) -> Option<std::num::NonZeroU32> {
    let node = fields.get("maxEvictionsPerWindow")?;
    let path = fields.path("maxEvictionsPerWindow");
    let max: u32 = d.integer(node, &path)?;
    let max = std::num::NonZeroU32::new(max);
    if max.is_none() {
        d.problem_at(
            node,
            &path,
            "must be at least 1; leave it out for no cluster-wide limit".to_string(),
        );
    }
    max
}

fn window(d: &mut Decoder, fields: &Fields<'_>) -> Option<Duration> {
    let node = fields.get("window")?;
    let path = fields.path("window");
    let text = d.string(node, &path)?;
    let problem = match go_duration(&text) {
        Ok(window) if window.is_zero() => {
            "must be longer than 0; set maxEvictionsPerWorkload: 0 to turn pacing off".to_string()
        }
        Ok(window) if window > MAX_WINDOW => {
            format!("{text:?} is longer than 24h, the longest the eviction history is kept")
        }
        Ok(window) => return Some(window),
        Err(message) => message,
    };
    d.problem_at(node, &path, problem);
    None
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use crate::policy::testing::{load, problem};
    use crate::policy::{Allowance, Availability, Pacing};

    const HEADER: &str = "apiVersion: vsphere-descheduler.io/v1alpha1\nkind: DeschedulerPolicy\n\
                          vsphere:\n  drsRules: {enabled: false}\n";

    fn availability(section: &str) -> Availability {
        load(&format!("{HEADER}  availability:\n{section}"))
            .policy
            .vsphere
            .availability
    }

    #[test]
    fn both_are_on_by_default_in_every_format() {
        let defaults = Availability {
            max_unavailable_per_workload: Allowance::Pods(0),
            pacing: Pacing {
                max_evictions_per_workload: 1,
                window: Duration::from_secs(600),
                max_evictions_per_window: None,
            },
        };
        assert_eq!(load(HEADER).policy.vsphere.availability, defaults);
        let upstream = "apiVersion: descheduler/v1alpha2\nkind: DeschedulerPolicy\n";
        assert_eq!(load(upstream).policy.vsphere.availability, defaults);
    }

    #[test]
    fn the_allowance_is_a_number_or_a_percentage() {
        let read = |value: &str| {
            availability(&format!("    maxUnavailablePerWorkload: {value}\n"))
                .max_unavailable_per_workload
        };
        assert_eq!(read("2"), Allowance::Pods(2));
        assert_eq!(read("\"25%\""), Allowance::Percent(25));
        assert_eq!(read("100%"), Allowance::Percent(100));
    }

    #[test]
    fn a_bad_allowance_is_a_problem_at_its_position() {
        let text = format!("{HEADER}  availability:\n    maxUnavailablePerWorkload: 150%\n");
        assert_eq!(
            problem(&text),
            "policy.yaml:6:32: vsphere.availability.maxUnavailablePerWorkload: \"150%\" is more \
             than 100%"
        );
        let text = format!("{HEADER}  availability:\n    maxUnavailablePerWorkload: half\n");
        assert!(
            problem(&text).contains("expected a number of pods (such as 1) or a percentage"),
            "{}",
            problem(&text)
        );
        let text = format!("{HEADER}  availability:\n    maxUnavailablePerWorkload: -1\n");
        assert!(
            problem(&text).contains("must not be negative"),
            "{}",
            problem(&text)
        );
    }

    #[test]
    fn pacing_reads_its_window_and_zero_turns_it_off() {
        let pacing =
            availability("    pacing:\n      maxEvictionsPerWorkload: 2\n      window: 1h\n")
                .pacing;
        assert_eq!(
            pacing,
            Pacing {
                max_evictions_per_workload: 2,
                window: Duration::from_secs(3600),
                max_evictions_per_window: None,
            }
        );
        let off = availability("    pacing: {maxEvictionsPerWorkload: 0}\n").pacing;
        assert_eq!(off.max_evictions_per_workload, 0);
        assert!(!off.is_on());
    }

    #[test]
    fn a_window_is_positive_and_at_most_a_day() {
        let text = format!("{HEADER}  availability:\n    pacing:\n      window: 25h\n");
        assert_eq!(
            problem(&text),
            "policy.yaml:7:15: vsphere.availability.pacing.window: \"25h\" is longer than 24h, \
             the longest the eviction history is kept"
        );
        let text = format!("{HEADER}  availability:\n    pacing:\n      window: 0s\n");
        assert!(problem(&text).contains("set maxEvictionsPerWorkload: 0 to turn pacing off"));
        let text = format!("{HEADER}  availability:\n    pacing:\n      windw: 5m\n");
        assert!(
            problem(&text).contains("did you mean \"window\""),
            "{}",
            problem(&text)
        );
    }

    #[test]
    fn a_cluster_wide_rate_is_read_when_set_and_at_least_one() {
        let pacing = availability("    pacing:\n      maxEvictionsPerWindow: 500\n").pacing;
        assert_eq!(
            pacing.max_evictions_per_window,
            std::num::NonZeroU32::new(500)
        );
        for (value, wanted) in [
            (
                "0",
                "policy.yaml:7:30: vsphere.availability.pacing.maxEvictionsPerWindow: must be at \
                 least 1; leave it out for no cluster-wide limit",
            ),
            (
                "-5",
                "policy.yaml:7:30: vsphere.availability.pacing.maxEvictionsPerWindow: ",
            ),
        ] {
            let text = format!(
                "{HEADER}  availability:\n    pacing:\n      maxEvictionsPerWindow: {value}\n"
            );
            assert!(problem(&text).starts_with(wanted), "{}", problem(&text));
        }
    }
}
