//! Label selectors on lists, in the grammar of the `labelSelector` query parameter as the
//! server parses it: requirements joined by `,`, each `key`, `!key`, `key=value`,
//! `key==value`, `key!=value`, `key in (a,b)`, `key notin (a,b)`, `key>N` or `key<N`.
//! `!=` and `notin` also match objects without the key; `>` and `<` only integer values.
//! Keys and values are checked against the label syntax (a qualified name, a label value);
//! a selector that does not parse is `400 BadRequest` (the message says what failed, not in the
//! server's exact words).

/// One requirement on one label.
#[derive(Clone, Debug, PartialEq, Eq)]
enum Requirement {
    Exists(String),
    DoesNotExist(String),
    In(String, Vec<String>),
    NotIn(String, Vec<String>),
    GreaterThan(String, i64),
    LessThan(String, i64),
}

/// A parsed `labelSelector`: every requirement must hold.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct LabelSelector(Vec<Requirement>);

impl LabelSelector {
    /// The selector `text` writes; `Err` with why not when it does not parse.
    pub fn parse(text: &str) -> Result<LabelSelector, String> {
        split_requirements(text)
            .into_iter()
            .filter(|part| !part.trim().is_empty())
            .map(|part| requirement(part.trim()))
            .collect::<Result<Vec<_>, _>>()
            .map(LabelSelector)
    }

    /// Whether an object whose labels `label` looks up is selected.
    pub fn matches<'a>(&self, label: impl Fn(&str) -> Option<&'a str>) -> bool {
        self.0.iter().all(|requirement| match requirement {
            Requirement::Exists(key) => label(key).is_some(),
            Requirement::DoesNotExist(key) => label(key).is_none(),
            Requirement::In(key, values) => {
                label(key).is_some_and(|v| values.iter().any(|w| w == v))
            }
            Requirement::NotIn(key, values) => {
                label(key).is_none_or(|v| values.iter().all(|w| w != v))
            }
            Requirement::GreaterThan(key, bound) => label(key)
                .and_then(|v| v.parse::<i64>().ok())
                .is_some_and(|v| v > *bound),
            Requirement::LessThan(key, bound) => label(key)
                .and_then(|v| v.parse::<i64>().ok())
                .is_some_and(|v| v < *bound),
        })
    }
}

/// The requirements of `text`: split at commas outside parentheses.
fn split_requirements(text: &str) -> Vec<&str> {
    let mut parts = Vec::new();
    let (mut depth, mut start) = (0usize, 0usize);
    for (index, character) in text.char_indices() {
        match character {
            '(' => depth += 1,
            ')' => depth = depth.saturating_sub(1),
            ',' if depth == 0 => {
                parts.push(&text[start..index]);
                start = index + 1;
            }
            _ => {}
        }
    }
    parts.push(&text[start..]);
    parts
}

fn requirement(text: &str) -> Result<Requirement, String> {
    if let Some(key) = text.strip_prefix('!') {
        return Ok(Requirement::DoesNotExist(key_of(key.trim())?));
    }
    for (operator, build) in [
        (
            "!=",
            Requirement::NotIn as fn(String, Vec<String>) -> Requirement,
        ),
        ("==", Requirement::In),
        ("=", Requirement::In),
    ] {
        if let Some((key, value)) = text.split_once(operator) {
            return Ok(build(key_of(key.trim())?, vec![value_of(value.trim())?]));
        }
    }
    for (operator, build) in [
        (
            ">",
            Requirement::GreaterThan as fn(String, i64) -> Requirement,
        ),
        ("<", Requirement::LessThan),
    ] {
        if let Some((key, bound)) = text.split_once(operator) {
            let bound = bound
                .trim()
                .parse::<i64>()
                .map_err(|_| format!("for '{operator}', the value must be an integer: {text}"))?;
            return Ok(build(key_of(key.trim())?, bound));
        }
    }
    let words: Vec<&str> = text.splitn(2, char::is_whitespace).collect();
    match words.as_slice() {
        [key] => Ok(Requirement::Exists(key_of(key)?)),
        [key, rest] => {
            let rest = rest.trim_start();
            let (operator, list) = if let Some(list) = rest.strip_prefix("notin") {
                ("notin", list)
            } else if let Some(list) = rest.strip_prefix("in") {
                ("in", list)
            } else {
                return Err(format!(
                    "found '{rest}', expected: in, notin, =, ==, !=, gt, lt"
                ));
            };
            let values = list
                .trim()
                .strip_prefix('(')
                .and_then(|list| list.strip_suffix(')'))
                .ok_or_else(|| format!("found '{list}', expected: '('"))?
                .split(',')
                .map(|value| value_of(value.trim()))
                .collect::<Result<Vec<_>, _>>()?;
            let key = key_of(key)?;
            Ok(match operator {
                "in" => Requirement::In(key, values),
                _ => Requirement::NotIn(key, values),
            })
        }
        _ => Err(format!("found '{text}', expected: identifier")),
    }
}

/// A label key: an optional DNS-subdomain prefix and `/`, then a name of at most 63
/// characters, alphanumeric at both ends, with `-`, `_` and `.` inside.
fn key_of(key: &str) -> Result<String, String> {
    let (prefix, name) = match key.rsplit_once('/') {
        Some((prefix, name)) => (Some(prefix), name),
        None => (None, key),
    };
    let prefix_ok = prefix.is_none_or(|prefix| {
        !prefix.is_empty()
            && prefix.len() <= 253
            && prefix.split('.').all(|part| {
                !part.is_empty()
                    && part
                        .bytes()
                        .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'-')
            })
    });
    if prefix_ok && !name.is_empty() && is_label_text(name) {
        Ok(key.to_string())
    } else {
        Err(format!(
            "invalid label key \"{key}\": name part must consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character"
        ))
    }
}

/// A label value: empty, or as a key's name part.
fn value_of(value: &str) -> Result<String, String> {
    if value.is_empty() || is_label_text(value) {
        Ok(value.to_string())
    } else {
        Err(format!(
            "invalid label value \"{value}\": a valid label must be an empty string or consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character"
        ))
    }
}

fn is_label_text(text: &str) -> bool {
    let bytes = text.as_bytes();
    text.len() <= 63
        && bytes.first().is_some_and(u8::is_ascii_alphanumeric)
        && bytes.last().is_some_and(u8::is_ascii_alphanumeric)
        && bytes
            .iter()
            .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'-' | b'_' | b'.'))
}
