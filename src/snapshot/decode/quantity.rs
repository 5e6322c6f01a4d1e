//! Kubernetes resource quantities (`100m`, `16Gi`, `1.5`, `2e3`) as integer thousandths.

/// Parse a quantity into thousandths of its base unit (`"100m"` → 100, `"2"` → 2000,
/// `"1Ki"` → 1_024_000). `None` for malformed input or values that do not fit.
pub fn parse_milli(text: &str) -> Option<i64> {
    let text = text.trim();
    let (number, suffix) = split_suffix(text);
    let (negative, digits) = match number.strip_prefix('-') {
        Some(rest) => (true, rest),
        None => (false, number.strip_prefix('+').unwrap_or(number)),
    };
    let (whole, fraction) = digits.split_once('.').unwrap_or((digits, ""));
    if whole.is_empty() && fraction.is_empty() {
        return None;
    }
    if !whole
        .chars()
        .chain(fraction.chars())
        .all(|c| c.is_ascii_digit())
    {
        return None;
    }
    // Exact decimal: mantissa / 10^scale, times the suffix's multiplier, times 1000.
    let mantissa: i128 = format!("{whole}{fraction}").parse().ok()?;
    let mut scale = fraction.len() as i32;
    let (binary, decimal_exponent) = multiplier(suffix)?;
    scale -= decimal_exponent + 3;
    let mut value = mantissa.checked_mul(binary)?;
    if scale > 0 {
        let divisor = 10i128.checked_pow(scale as u32)?;
        // Kubernetes rounds fractional thousandths up.
        value = (value + divisor - 1) / divisor;
    } else {
        value = value.checked_mul(10i128.checked_pow((-scale) as u32)?)?;
    }
    let value = if negative { -value } else { value };
    i64::try_from(value).ok()
}

fn split_suffix(text: &str) -> (&str, &str) {
    // A decimal exponent (`1e3`, `2E-1`) is a suffix too.
    if let Some(at) = text.find(['e', 'E'])
        && text[at + 1..]
            .trim_start_matches(['+', '-'])
            .chars()
            .all(|c| c.is_ascii_digit())
        && at + 1 < text.len()
    {
        return (&text[..at], &text[at..]);
    }
    let at = text
        .find(|c: char| c.is_ascii_alphabetic())
        .unwrap_or(text.len());
    (&text[..at], &text[at..])
}

/// `(binary multiplier, decimal exponent)` of a suffix.
fn multiplier(suffix: &str) -> Option<(i128, i32)> {
    let binary = |power: u32| Some((1i128 << (10 * power), 0));
    match suffix {
        "" => Some((1, 0)),
        "n" => Some((1, -9)),
        "u" => Some((1, -6)),
        "m" => Some((1, -3)),
        "k" => Some((1, 3)),
        "M" => Some((1, 6)),
        "G" => Some((1, 9)),
        "T" => Some((1, 12)),
        "P" => Some((1, 15)),
        "E" => Some((1, 18)),
        "Ki" => binary(1),
        "Mi" => binary(2),
        "Gi" => binary(3),
        "Ti" => binary(4),
        "Pi" => binary(5),
        "Ei" => binary(6),
        exponent if exponent.starts_with(['e', 'E']) => Some((1, exponent[1..].parse().ok()?)),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::parse_milli;

    #[test]
    fn decimal_and_binary_suffixes_are_exact() {
        assert_eq!(parse_milli("100m"), Some(100));
        assert_eq!(parse_milli("4"), Some(4000));
        assert_eq!(parse_milli("1.5"), Some(1500));
        assert_eq!(parse_milli("128Mi"), Some(128 * 1024 * 1024 * 1000));
        assert_eq!(parse_milli("16Gi"), Some(16 * 1024 * 1024 * 1024 * 1000));
        assert_eq!(parse_milli("1k"), Some(1_000_000));
        assert_eq!(parse_milli("500M"), Some(500_000_000_000));
        assert_eq!(parse_milli("129e6"), Some(129_000_000_000));
        assert_eq!(parse_milli("1E3"), Some(1_000_000));
    }

    #[test]
    fn sub_milli_fractions_round_up() {
        assert_eq!(parse_milli("0.0001"), Some(1));
        assert_eq!(parse_milli("1u"), Some(1));
    }

    #[test]
    fn malformed_quantities_are_rejected() {
        for bad in ["", "abc", "1.2.3", "1Zi", "--1", "1e", "."] {
            assert_eq!(parse_milli(bad), None, "{bad}");
        }
    }
}
