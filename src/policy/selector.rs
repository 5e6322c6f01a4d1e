//! Label selectors in both of their Kubernetes spellings: the `labels.Parse` string syntax
//! (`nodeSelector: "node-role.kubernetes.io/worker,env in (prod)"`) and the structured
//! `LabelSelector` mapping (`matchLabels` / `matchExpressions`). Both become a
//! [`kube::core::Selector`], validated as the API server would validate it.

use crate::policy::rule::Rule;
use std::collections::BTreeSet;

use kube::core::{Expression, Selector};
use thiserror::Error;

use super::decode::{Decoder, index};
use super::names::{NameError, check_label_key, check_label_value};
use super::yaml::{Value, YamlNode};
use crate::snapshot::Requirements;

/// Why a `labels.Parse` selector string was refused. Offsets count characters from 0.
#[derive(Clone, Debug, Error, PartialEq, Eq)]
pub enum SelectorParseError {
    #[error("expected {expected} at offset {offset}, found {found}")]
    Unexpected {
        offset: usize,
        expected: &'static str,
        found: String,
    },
    #[error(
        "operator {operator:?} at offset {offset} is not supported (only =, ==, !=, in, notin, \
         exists and !exists)"
    )]
    UnsupportedOperator { offset: usize, operator: String },
    #[error("invalid label key {key:?}")]
    InvalidKey {
        key: String,
        #[source]
        source: NameError,
    },
    #[error("invalid label value {value:?}")]
    InvalidValue {
        value: String,
        #[source]
        source: NameError,
    },
}

/// Parses a selector in Kubernetes `labels.Parse` syntax.
///
/// Requirements are comma-separated: `key=value`, `key==value`, `key!=value`,
/// `key in (a,b)`, `key notin (a)`, `key` (exists) and `!key` (does not exist); whitespace
/// around tokens is ignored. The empty string selects everything. The `<` and `>` operators
/// that `labels.Parse` also knows only make sense for node affinity and are refused here.
pub fn parse_selector(text: &str) -> Result<Selector, SelectorParseError> {
    let tokens = tokenize(text);
    let mut parser = Parser {
        tokens: &tokens,
        next: 0,
        end: text.chars().count(),
    };
    let mut expressions = Vec::new();
    if parser.peek().is_none() {
        return Ok(Selector::default());
    }
    loop {
        expressions.push(parser.requirement()?);
        match parser.take() {
            None => break,
            Some((_, Token::Comma)) => continue,
            Some((offset, token)) => {
                return Err(SelectorParseError::Unexpected {
                    offset,
                    expected: "',' or the end",
                    found: token.describe(),
                });
            }
        }
    }
    Ok(expressions.into_iter().collect())
}

#[derive(Clone, Debug, PartialEq, Eq)]
enum Token {
    Word(String),
    Not,
    Equal,
    DoubleEqual,
    NotEqual,
    Comma,
    Open,
    Close,
    /// `<` or `>`, recognised only to refuse them clearly.
    Compare(char),
}

impl Token {
    fn describe(&self) -> String {
        match self {
            Token::Word(word) => format!("{word:?}"),
            Token::Not => "'!'".to_string(),
            Token::Equal => "'='".to_string(),
            Token::DoubleEqual => "'=='".to_string(),
            Token::NotEqual => "'!='".to_string(),
            Token::Comma => "','".to_string(),
            Token::Open => "'('".to_string(),
            Token::Close => "')'".to_string(),
            Token::Compare(c) => format!("'{c}'"),
        }
    }
}

/// Characters that end a word, as in `labels.Parse`'s lexer.
fn is_special(c: char) -> bool {
    matches!(c, '!' | '=' | ',' | '(' | ')' | '<' | '>')
}

fn tokenize(text: &str) -> Vec<(usize, Token)> {
    let chars: Vec<char> = text.chars().collect();
    let mut tokens = Vec::new();
    let mut i = 0;
    while i < chars.len() {
        let c = chars[i];
        let start = i;
        let next = chars.get(i + 1).copied();
        let token = match c {
            _ if c.is_whitespace() => {
                i += 1;
                continue;
            }
            '!' if next == Some('=') => Token::NotEqual,
            '!' => Token::Not,
            '=' if next == Some('=') => Token::DoubleEqual,
            '=' => Token::Equal,
            ',' => Token::Comma,
            '(' => Token::Open,
            ')' => Token::Close,
            '<' | '>' => Token::Compare(c),
            _ => {
                while i < chars.len() && !chars[i].is_whitespace() && !is_special(chars[i]) {
                    i += 1;
                }
                tokens.push((start, Token::Word(chars[start..i].iter().collect())));
                continue;
            }
        };
        i += match token {
            Token::NotEqual | Token::DoubleEqual => 2,
            _ => 1,
        };
        tokens.push((start, token));
    }
    tokens
}

struct Parser<'t> {
    tokens: &'t [(usize, Token)],
    next: usize,
    /// Offset reported for "found the end".
    end: usize,
}

impl Parser<'_> {
    fn peek(&self) -> Option<&Token> {
        self.tokens.get(self.next).map(|(_, token)| token)
    }

    fn take(&mut self) -> Option<(usize, Token)> {
        let token = self.tokens.get(self.next).cloned();
        self.next += 1;
        token
    }

    fn unexpected(
        &self,
        token: Option<(usize, Token)>,
        expected: &'static str,
    ) -> SelectorParseError {
        match token {
            Some((offset, token)) => SelectorParseError::Unexpected {
                offset,
                expected,
                found: token.describe(),
            },
            None => SelectorParseError::Unexpected {
                offset: self.end,
                expected,
                found: "the end".to_string(),
            },
        }
    }

    /// `[!] key [op value | in|notin (values)]`
    fn requirement(&mut self) -> Result<Expression, SelectorParseError> {
        if self.peek() == Some(&Token::Not) {
            self.take();
            let key = self.key()?;
            return Ok(Expression::DoesNotExist(key));
        }
        let key = self.key()?;
        match self.peek() {
            None | Some(Token::Comma) => return Ok(Expression::Exists(key)),
            _ => {}
        }
        let token = self.take();
        match token {
            Some((_, Token::Equal | Token::DoubleEqual)) => {
                Ok(Expression::Equal(key, self.value()?))
            }
            Some((_, Token::NotEqual)) => Ok(Expression::NotEqual(key, self.value()?)),
            Some((_, Token::Word(word))) if word == "in" => Ok(Expression::In(key, self.values()?)),
            Some((_, Token::Word(word))) if word == "notin" => {
                Ok(Expression::NotIn(key, self.values()?))
            }
            Some((offset, Token::Compare(c))) => Err(SelectorParseError::UnsupportedOperator {
                offset,
                operator: c.to_string(),
            }),
            other => Err(self.unexpected(other, "an operator (=, ==, !=, in, notin)")),
        }
    }

    fn key(&mut self) -> Result<String, SelectorParseError> {
        match self.take() {
            Some((_, Token::Word(key))) => {
                check_label_key(&key).map_err(|source| SelectorParseError::InvalidKey {
                    key: key.clone(),
                    source,
                })?;
                Ok(key)
            }
            other => Err(self.unexpected(other, "a label key")),
        }
    }

    /// The value after `=`, `==` or `!=`; an immediately following `,` or end means "".
    fn value(&mut self) -> Result<String, SelectorParseError> {
        let value = match self.peek() {
            None | Some(Token::Comma) => String::new(),
            Some(Token::Word(_)) => match self.take() {
                Some((_, Token::Word(word))) => word,
                other => return Err(self.unexpected(other, "a label value")),
            },
            Some(_) => {
                let other = self.take();
                return Err(self.unexpected(other, "a label value"));
            }
        };
        checked_value(value)
    }

    /// `(a, b, …)`; as in `labels.Parse`, `()` and empty items stand for the empty value.
    fn values(&mut self) -> Result<BTreeSet<String>, SelectorParseError> {
        match self.take() {
            Some((_, Token::Open)) => {}
            other => return Err(self.unexpected(other, "'('")),
        }
        let mut values = BTreeSet::new();
        loop {
            let value = match self.peek() {
                Some(Token::Word(_)) => match self.take() {
                    Some((_, Token::Word(word))) => word,
                    other => return Err(self.unexpected(other, "a label value")),
                },
                _ => String::new(),
            };
            values.insert(checked_value(value)?);
            match self.take() {
                Some((_, Token::Comma)) => continue,
                Some((_, Token::Close)) => return Ok(values),
                other => return Err(self.unexpected(other, "',' or ')'")),
            }
        }
    }
}

fn checked_value(value: String) -> Result<String, SelectorParseError> {
    match check_label_value(&value) {
        Ok(()) => Ok(value),
        Err(source) => Err(SelectorParseError::InvalidValue { value, source }),
    }
}

/// Decodes a selector string (`nodeSelector` fields). Absent, null and "" all mean no selector.
pub(super) fn selector_string(
    d: &mut Decoder,
    node: Option<&YamlNode>,
    path: &str,
) -> Option<Requirements> {
    let node = node?;
    let text = d.string(node, path)?;
    match parse_selector(&text) {
        Ok(selector) if selector.selects_all() => None,
        Ok(selector) => Some(Requirements::from(selector)),
        Err(error) => {
            d.refused_at(node, path, "invalid label selector", &error);
            None
        }
    }
}

/// Decodes a `LabelSelector` mapping (`matchLabels`, `matchExpressions`), validated like the
/// API server does: `In`/`NotIn` need values, `Exists`/`DoesNotExist` must have none.
/// Absent or null means no selector; `{}` selects everything. The result is kept as its
/// requirements, which the planner matches against a pod's or node's labels.
pub(super) fn label_selector(
    d: &mut Decoder,
    node: Option<&YamlNode>,
    path: &str,
) -> Option<Requirements> {
    let node = node?;
    let fields = d.fields(node, path, &["matchLabels", "matchExpressions"])?;
    let mut expressions = Vec::new();
    if let Some(labels) = fields.get("matchLabels") {
        for entry in d.entries(labels, &fields.path("matchLabels")) {
            let key_ok = check_key(d, entry.key, &entry.path, entry.name);
            let Some(value) = d.string(entry.value, &entry.path) else {
                continue;
            };
            if let Err(error) = check_label_value(&value) {
                d.problem_at(
                    entry.value,
                    &entry.path,
                    format!("invalid label value {value:?}: {error}"),
                );
            } else if key_ok {
                expressions.push(Expression::Equal(entry.name.to_string(), value));
            }
        }
    }
    let requirements_path = fields.path("matchExpressions");
    for (i, requirement) in fields.list(d, "matchExpressions").iter().enumerate() {
        if let Some(expression) = label_requirement(d, requirement, &index(&requirements_path, i)) {
            expressions.push(expression);
        }
    }
    Some(Requirements::from_iter(expressions))
}

fn label_requirement(d: &mut Decoder, node: &YamlNode, path: &str) -> Option<Expression> {
    const OPERATORS: [&str; 4] = ["In", "NotIn", "Exists", "DoesNotExist"];
    let fields = d.fields(node, path, &["key", "operator", "values"])?;
    let key = match fields.get("key") {
        Some(key_node) => d
            .string(key_node, &fields.path("key"))
            .filter(|key| check_key(d, key_node, &fields.path("key"), key)),
        None => {
            d.problem_as(Rule::MissingField, fields.position, path, "key is required");
            None
        }
    };
    let Some(operator_node) = fields.get("operator") else {
        d.problem_as(
            Rule::MissingField,
            fields.position,
            path,
            "operator is required (In, NotIn, Exists or DoesNotExist)",
        );
        return None;
    };
    let operator = d.choice(
        operator_node,
        &fields.path("operator"),
        "operator",
        &OPERATORS,
    )?;
    let values_node = fields.get("values");
    let values: BTreeSet<String> = fields
        .strings(d, "values", |value| {
            check_label_value(value)
                .err()
                .map(|error| format!("invalid label value {value:?}: {error}"))
        })
        .into_iter()
        .collect();
    // A non-list `values` was reported above; it must not also count as "no values".
    let has_values = values_node
        .is_some_and(|node| !matches!(&node.value, Value::Seq(items) if items.is_empty()));
    match operator.as_str() {
        "In" | "NotIn" if !has_values => {
            d.problem_at(
                operator_node,
                &fields.path("values"),
                format!("operator {operator} needs at least one value"),
            );
            None
        }
        "Exists" | "DoesNotExist" if has_values => {
            d.problem_at(
                values_node.unwrap_or(operator_node),
                &fields.path("values"),
                format!("operator {operator} takes no values"),
            );
            None
        }
        "In" => Some(Expression::In(key?, values)),
        "NotIn" => Some(Expression::NotIn(key?, values)),
        "Exists" => Some(Expression::Exists(key?)),
        _ => Some(Expression::DoesNotExist(key?)),
    }
}

/// Records a problem if `key` is not a valid label key; returns whether it is valid.
fn check_key(d: &mut Decoder, node: &YamlNode, path: &str, key: &str) -> bool {
    match check_label_key(key) {
        Ok(()) => true,
        Err(error) => {
            d.problem_at(node, path, format!("invalid label key {key:?}: {error}"));
            false
        }
    }
}

#[cfg(test)]
mod tests {
    use std::collections::BTreeMap;

    use kube::core::SelectorExt;

    use super::*;
    use crate::policy::testing::{OURS, load, problems};

    fn set(values: &[&str]) -> BTreeSet<String> {
        values.iter().map(|v| v.to_string()).collect()
    }

    fn parsed(text: &str) -> Vec<Expression> {
        parse_selector(text)
            .expect("valid selector")
            .into_iter()
            .collect()
    }

    fn policy_with_selector(selector: &str) -> String {
        format!(
            "{OURS}profiles:\n  - name: p\n    pluginConfig:\n      - name: DefaultEvictor\n        \
             args:\n          labelSelector:\n{selector}"
        )
    }

    #[test]
    fn label_selector_mappings_become_selectors() {
        let text = policy_with_selector(
            "            matchLabels: {app: web, tier: \"\"}\n            matchExpressions:\n              \
             - {key: env, operator: NotIn, values: [dev, test]}\n              \
             - {key: canary, operator: DoesNotExist}\n",
        );
        let selector = load(&text).policy.profiles[0]
            .evictor
            .label_selector
            .clone();
        let expected: Requirements = [
            Expression::Equal("app".into(), "web".into()),
            Expression::Equal("tier".into(), String::new()),
            Expression::NotIn("env".into(), set(&["dev", "test"])),
            Expression::DoesNotExist("canary".into()),
        ]
        .into_iter()
        .collect();
        assert_eq!(selector, Some(expected));
    }

    #[test]
    fn label_selector_mappings_are_validated_like_the_api_server_does() {
        let text = policy_with_selector(
            "            matchLabels: {\"bad key\": x, ok: \"bad value\"}\n            matchExpressions:\n              \
             - {key: a, operator: In, values: []}\n              \
             - {key: b, operator: Exists, values: [x]}\n              \
             - {key: c, operator: Equals, values: [x]}\n              \
             - {operator: Exists}\n",
        );
        assert_eq!(
            problems(&text),
            [
                "policy.yaml:10:27: profiles[0].pluginConfig[0].args.labelSelector.matchLabels.bad key: \
                 invalid label key \"bad key\": must consist of alphanumeric characters, '-', '_' \
                 or '.', and start and end with an alphanumeric character",
                "policy.yaml:10:45: profiles[0].pluginConfig[0].args.labelSelector.matchLabels.ok: \
                 invalid label value \"bad value\": must consist of alphanumeric characters, '-', \
                 '_' or '.', and start and end with an alphanumeric character",
                "policy.yaml:12:36: profiles[0].pluginConfig[0].args.labelSelector.matchExpressions[0].values: \
                 operator In needs at least one value",
                "policy.yaml:13:52: profiles[0].pluginConfig[0].args.labelSelector.matchExpressions[1].values: \
                 operator Exists takes no values",
                "policy.yaml:14:36: profiles[0].pluginConfig[0].args.labelSelector.matchExpressions[2].operator: \
                 unknown operator \"Equals\"; valid: In, NotIn, Exists, DoesNotExist",
                "policy.yaml:15:17: profiles[0].pluginConfig[0].args.labelSelector.matchExpressions[3]: \
                 key is required",
            ]
        );
    }

    #[test]
    fn the_empty_string_selects_everything() {
        assert!(parse_selector("").expect("valid").selects_all());
        assert!(parse_selector("   ").expect("valid").selects_all());
    }

    #[test]
    fn equality_operators_are_parsed() {
        assert_eq!(
            parsed("a=b, c==d ,e!=f"),
            [
                Expression::Equal("a".into(), "b".into()),
                Expression::Equal("c".into(), "d".into()),
                Expression::NotEqual("e".into(), "f".into()),
            ]
        );
    }

    #[test]
    fn set_operators_are_parsed_with_whitespace_anywhere() {
        assert_eq!(
            parsed("env in ( prod , staging ),tier notin (db)"),
            [
                Expression::In("env".into(), set(&["prod", "staging"])),
                Expression::NotIn("tier".into(), set(&["db"])),
            ]
        );
    }

    #[test]
    fn existence_and_absence_are_parsed() {
        assert_eq!(
            parsed("node-role.kubernetes.io/worker, !node-role.kubernetes.io/control-plane"),
            [
                Expression::Exists("node-role.kubernetes.io/worker".into()),
                Expression::DoesNotExist("node-role.kubernetes.io/control-plane".into()),
            ]
        );
    }

    #[test]
    fn an_equality_without_value_means_the_empty_value() {
        assert_eq!(
            parsed("a=,b"),
            [
                Expression::Equal("a".into(), String::new()),
                Expression::Exists("b".into())
            ]
        );
        assert_eq!(parsed("a in ()"), [Expression::In("a".into(), set(&[""]))]);
    }

    #[test]
    fn parsed_selectors_match_labels() {
        let selector = parse_selector("app=web,env in (prod),!canary").expect("valid");
        let labels = |pairs: &[(&str, &str)]| -> BTreeMap<String, String> {
            pairs
                .iter()
                .map(|(k, v)| (k.to_string(), v.to_string()))
                .collect()
        };
        assert!(selector.matches(&labels(&[("app", "web"), ("env", "prod")])));
        assert!(!selector.matches(&labels(&[("app", "web"), ("env", "prod"), ("canary", "")])));
        assert!(!selector.matches(&labels(&[("app", "web")])));
    }

    #[test]
    fn malformed_selectors_say_where() {
        assert_eq!(
            parse_selector("a in b"),
            Err(SelectorParseError::Unexpected {
                offset: 5,
                expected: "'('",
                found: "\"b\"".into()
            })
        );
        assert_eq!(
            parse_selector("a=b c"),
            Err(SelectorParseError::Unexpected {
                offset: 4,
                expected: "',' or the end",
                found: "\"c\"".into()
            })
        );
        assert_eq!(
            parse_selector("a,"),
            Err(SelectorParseError::Unexpected {
                offset: 2,
                expected: "a label key",
                found: "the end".into()
            })
        );
        assert_eq!(
            parse_selector("a in (x"),
            Err(SelectorParseError::Unexpected {
                offset: 7,
                expected: "',' or ')'",
                found: "the end".into()
            })
        );
        assert_eq!(
            parse_selector("a = = b"),
            Err(SelectorParseError::Unexpected {
                offset: 4,
                expected: "a label value",
                found: "'='".into()
            })
        );
    }

    #[test]
    fn numeric_comparisons_are_refused() {
        assert_eq!(
            parse_selector("gpu > 1"),
            Err(SelectorParseError::UnsupportedOperator {
                offset: 4,
                operator: ">".into()
            })
        );
    }

    #[test]
    fn invalid_keys_and_values_are_refused() {
        assert!(matches!(
            parse_selector("-a=b"),
            Err(SelectorParseError::InvalidKey { .. })
        ));
        assert!(matches!(
            parse_selector("a=b/c"),
            Err(SelectorParseError::InvalidValue { .. })
        ));
        assert!(matches!(
            parse_selector(&format!("a={}", "x".repeat(64))),
            Err(SelectorParseError::InvalidValue {
                source: NameError::TooLong { max: 63 },
                ..
            })
        ));
    }
}
