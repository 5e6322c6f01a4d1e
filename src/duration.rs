//! Durations as Go and Kubernetes write them, read by one parser for the policy (`minPodAge`)
//! and the command line (`--deadline`, `--lock-duration`).

use std::str::FromStr;
use std::time::Duration;

/// Longest duration Go represents (int64 nanoseconds, about 292 years).
const MAX_GO_DURATION: Duration = Duration::from_nanos(i64::MAX as u64);

/// A non-negative Go duration (`90s`, `1h30m`, `250ms`, `0`), parsed by `kube::core::Duration`
/// after checking the syntax here: that parser multiplies floats into `std::time::Duration` and
/// would panic on input such as `1e400h` or `nanh`, which no file or flag must be able to cause.
/// The error is the problem as the policy reports it.
pub fn go_duration(text: &str) -> Result<Duration, String> {
    let invalid = || {
        format!(
            "invalid duration {text:?}: expected a Go duration such as \"90s\", \"5m\" or \"1h30m\""
        )
    };
    let unsigned = text.strip_prefix(['-', '+']).unwrap_or(text);
    // Bounds the sum below, so it cannot overflow either.
    if text.len() > 64 || !is_go_duration(unsigned) {
        return Err(invalid());
    }
    let duration = kube::core::Duration::from_str(text).map_err(|_| invalid())?;
    let negative = duration.is_negative();
    let duration = Duration::from(duration);
    if negative && !duration.is_zero() {
        return Err(format!("must not be negative, found {text:?}"));
    }
    if duration > MAX_GO_DURATION {
        return Err(format!("duration {text:?} is longer than Go can represent"));
    }
    Ok(duration)
}

/// `0`, or one or more `<number><unit>` with a decimal number of at most 12 integer digits.
fn is_go_duration(text: &str) -> bool {
    if text == "0" {
        return true;
    }
    let mut rest = text;
    if rest.is_empty() {
        return false;
    }
    while !rest.is_empty() {
        let number_len = rest
            .find(|c: char| !(c.is_ascii_digit() || c == '.'))
            .unwrap_or(rest.len());
        let (number, after) = rest.split_at(number_len);
        let (whole, fraction) = number.split_once('.').unwrap_or((number, ""));
        let digits_ok = (!whole.is_empty() || !fraction.is_empty())
            && whole.len() <= 12
            && !fraction.contains('.');
        let unit_len = after
            .find(|c: char| c.is_ascii_digit() || c == '.')
            .unwrap_or(after.len());
        let (unit, next) = after.split_at(unit_len);
        if !digits_ok
            || !matches!(
                unit,
                "ns" | "us" | "\u{b5}s" | "\u{3bc}s" | "ms" | "s" | "m" | "h"
            )
        {
            return false;
        }
        rest = next;
    }
    true
}

/// Whole seconds as a policy writes them: `10m`, `1h30m`, `90s` → `1m30s`, `0s`.
pub fn show(duration: Duration) -> String {
    let seconds = duration.as_secs();
    let (hours, minutes, seconds) = (seconds / 3600, seconds / 60 % 60, seconds % 60);
    let mut text = String::new();
    for (value, unit) in [(hours, 'h'), (minutes, 'm'), (seconds, 's')] {
        if value > 0 {
            text.push_str(&format!("{value}{unit}"));
        }
    }
    if text.is_empty() {
        text.push_str("0s");
    }
    text
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn durations_are_shown_as_a_policy_writes_them() {
        let show_secs = |seconds| show(Duration::from_secs(seconds));
        assert_eq!(show_secs(600), "10m");
        assert_eq!(show_secs(5400), "1h30m");
        assert_eq!(show_secs(90), "1m30s");
        assert_eq!(show_secs(86400), "24h");
        assert_eq!(show_secs(0), "0s");
        assert_eq!(go_duration(&show_secs(3661)), Ok(Duration::from_secs(3661)));
    }

    #[test]
    fn go_durations_are_parsed() {
        assert_eq!(go_duration("5m"), Ok(Duration::from_secs(300)));
        assert_eq!(go_duration("1h30m"), Ok(Duration::from_secs(5400)));
        assert_eq!(go_duration("1.5s"), Ok(Duration::from_millis(1500)));
        assert_eq!(go_duration("0"), Ok(Duration::ZERO));
        assert_eq!(go_duration("250ms"), Ok(Duration::from_millis(250)));
    }

    #[test]
    fn negative_durations_are_refused() {
        assert_eq!(
            go_duration("-5m"),
            Err("must not be negative, found \"-5m\"".to_string())
        );
    }

    #[test]
    fn durations_that_would_crash_the_parser_are_refused() {
        for text in [
            "1e400h",
            "nanh",
            "infh",
            "",
            "5",
            "m",
            "5 m",
            "1..5s",
            "5d",
            "9999999999999h",
        ] {
            assert!(go_duration(text).is_err(), "{text:?}");
        }
        assert_eq!(
            go_duration("999999999999h"),
            Err("duration \"999999999999h\" is longer than Go can represent".to_string())
        );
    }
}
