//! Kubernetes name syntax: label keys and values, DNS labels and subdomains.
//!
//! The rules and limits are those of `k8s.io/apimachinery/pkg/util/validation`, so a policy that
//! passes here is not refused later by the API server (or, worse, silently never matches).

use thiserror::Error;

/// Longest label value and name part of a label key.
const MAX_NAME: usize = 63;
/// Longest DNS subdomain (label key prefixes, PriorityClass names).
const MAX_SUBDOMAIN: usize = 253;

/// Why a string is not a valid name of the expected kind.
#[derive(Clone, Debug, Error, PartialEq, Eq)]
pub enum NameError {
    #[error("must not be empty")]
    Empty,
    #[error("must be at most {max} characters")]
    TooLong { max: usize },
    #[error(
        "must consist of alphanumeric characters, '-', '_' or '.', and start and end with an \
         alphanumeric character"
    )]
    NotQualifiedName,
    #[error(
        "must consist of lowercase alphanumeric characters or '-', and start and end with an \
         alphanumeric character"
    )]
    NotDnsLabel,
    #[error(
        "must consist of lowercase alphanumeric characters, '-' or '.', and start and end with an \
         alphanumeric character"
    )]
    NotDnsSubdomain,
    #[error("must contain at most one '/'")]
    TooManySlashes,
    /// The part before `/` of a label key.
    #[error("prefix {prefix:?} {problem}")]
    Prefix {
        prefix: String,
        problem: Box<NameError>,
    },
    /// The part after `/` of a label key (or the whole key when it has no prefix).
    #[error("name {name:?} {problem}")]
    Name {
        name: String,
        problem: Box<NameError>,
    },
}

/// A label key: `[prefix/]name`, prefix a DNS subdomain, name a qualified name.
pub fn check_label_key(key: &str) -> Result<(), NameError> {
    let (prefix, name) = match key.split_once('/') {
        Some((_, name)) if name.contains('/') => return Err(NameError::TooManySlashes),
        Some((prefix, name)) => (Some(prefix), name),
        None => (None, key),
    };
    if let Some(prefix) = prefix {
        check_dns_subdomain(prefix).map_err(|problem| NameError::Prefix {
            prefix: prefix.to_string(),
            problem: Box::new(problem),
        })?;
    }
    check_qualified_name(name).map_err(|problem| {
        if prefix.is_some() {
            NameError::Name {
                name: name.to_string(),
                problem: Box::new(problem),
            }
        } else {
            problem
        }
    })
}

/// A label value: empty, or a qualified name of at most 63 characters.
pub fn check_label_value(value: &str) -> Result<(), NameError> {
    if value.is_empty() {
        Ok(())
    } else {
        check_qualified_name(value)
    }
}

/// The name part of a label key: `([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]`, at most 63.
fn check_qualified_name(name: &str) -> Result<(), NameError> {
    if name.is_empty() {
        return Err(NameError::Empty);
    }
    if name.len() > MAX_NAME {
        return Err(NameError::TooLong { max: MAX_NAME });
    }
    let inner_ok = |c: char| c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '.');
    if !name.chars().all(inner_ok) || !starts_and_ends_alphanumeric(name) {
        return Err(NameError::NotQualifiedName);
    }
    Ok(())
}

/// An RFC 1123 label (namespace names, our cluster name): `[a-z0-9]([-a-z0-9]*[a-z0-9])?`, ≤ 63.
pub fn check_dns_label(name: &str) -> Result<(), NameError> {
    if name.is_empty() {
        return Err(NameError::Empty);
    }
    if name.len() > MAX_NAME {
        return Err(NameError::TooLong { max: MAX_NAME });
    }
    let ok = |c: char| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '-';
    if !name.chars().all(ok) || !starts_and_ends_alphanumeric(name) {
        return Err(NameError::NotDnsLabel);
    }
    Ok(())
}

/// An RFC 1123 subdomain: dot-separated DNS labels, at most 253 characters.
pub fn check_dns_subdomain(name: &str) -> Result<(), NameError> {
    if name.is_empty() {
        return Err(NameError::Empty);
    }
    if name.len() > MAX_SUBDOMAIN {
        return Err(NameError::TooLong { max: MAX_SUBDOMAIN });
    }
    if name.split('.').any(|label| check_dns_label(label).is_err()) {
        return Err(NameError::NotDnsSubdomain);
    }
    Ok(())
}

fn starts_and_ends_alphanumeric(name: &str) -> bool {
    let alphanumeric = |c: Option<char>| c.is_some_and(|c| c.is_ascii_alphanumeric());
    alphanumeric(name.chars().next()) && alphanumeric(name.chars().next_back())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn common_label_keys_are_valid() {
        for key in [
            "app",
            "app.kubernetes.io/name",
            "vsphere-descheduler.io/host",
            "kubernetes.io/hostname",
            "node-role.kubernetes.io/worker",
            "A_b.c-D",
        ] {
            assert_eq!(check_label_key(key), Ok(()), "{key}");
        }
    }

    #[test]
    fn malformed_label_keys_say_which_part_is_wrong() {
        assert_eq!(check_label_key(""), Err(NameError::Empty));
        assert_eq!(check_label_key("a/b/c"), Err(NameError::TooManySlashes));
        assert_eq!(check_label_key("-app"), Err(NameError::NotQualifiedName));
        assert_eq!(
            check_label_key("Example.com/app").map_err(|e| e.to_string()),
            Err(
                "prefix \"Example.com\" must consist of lowercase alphanumeric characters, \
                 '-' or '.', and start and end with an alphanumeric character"
                    .to_string()
            )
        );
        assert_eq!(
            check_label_key("example.com/"),
            Err(NameError::Name {
                name: String::new(),
                problem: Box::new(NameError::Empty)
            })
        );
        assert_eq!(
            check_label_key(&"a".repeat(64)),
            Err(NameError::TooLong { max: 63 })
        );
    }

    #[test]
    fn label_values_may_be_empty_but_not_malformed() {
        assert_eq!(check_label_value(""), Ok(()));
        assert_eq!(check_label_value("esxi-41.lab"), Ok(()));
        assert_eq!(check_label_value("a b"), Err(NameError::NotQualifiedName));
        assert_eq!(check_label_value("x."), Err(NameError::NotQualifiedName));
    }

    #[test]
    fn dns_labels_are_lowercase_and_short() {
        assert_eq!(check_dns_label("prod-east-1"), Ok(()));
        assert_eq!(check_dns_label("Prod"), Err(NameError::NotDnsLabel));
        assert_eq!(check_dns_label("a.b"), Err(NameError::NotDnsLabel));
        assert_eq!(
            check_dns_label(&"a".repeat(64)),
            Err(NameError::TooLong { max: 63 })
        );
        assert_eq!(check_dns_subdomain("system-cluster-critical"), Ok(()));
        assert_eq!(check_dns_subdomain("a..b"), Err(NameError::NotDnsSubdomain));
    }
}
