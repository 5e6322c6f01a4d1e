//! A small YAML tree in which every node and every mapping key remembers where it was written:
//! the policy reader walks it to report every problem at its position, and the snapshot reader
//! builds it for a document only when a value in it is of the wrong type, to say where.

use std::fmt;

use serde::de::{self, Deserialize, Deserializer, MapAccess, SeqAccess, Visitor};
use serde_saphyr::{Location, Spanned};

pub use crate::position::Position;

/// The position of a reader's location in a one-document file; `None` when unknown.
pub(crate) fn position_of(location: Location) -> Option<Position> {
    // serde-saphyr reports line 0 for "unknown"; such positions are dropped, not printed.
    let line = usize::try_from(location.line()).unwrap_or(usize::MAX);
    let column = usize::try_from(location.column()).unwrap_or(usize::MAX);
    (line > 0).then_some(Position::new(line, column))
}

/// A YAML node and where it starts.
#[derive(Clone, Debug, PartialEq)]
pub struct YamlNode {
    pub position: Option<Position>,
    pub value: Value,
}

/// The value of a [`YamlNode`], as YAML 1.2's core schema resolves it.
#[derive(Clone, Debug, PartialEq)]
pub enum Value {
    Null,
    Bool(bool),
    Int(i128),
    Float(f64),
    Str(String),
    Seq(Vec<YamlNode>),
    /// Entries in file order; keys are nodes because YAML allows any node as a key.
    Map(Vec<(YamlNode, YamlNode)>),
}

impl Value {
    /// How a value of this type is named in messages ("expected a list, found a string").
    pub fn kind(&self) -> &'static str {
        match self {
            Value::Null => "null",
            Value::Bool(_) => "a boolean",
            Value::Int(_) => "an integer",
            Value::Float(_) => "a number",
            Value::Str(_) => "a string",
            Value::Seq(_) => "a list",
            Value::Map(_) => "a mapping",
        }
    }
}

impl YamlNode {
    /// The value of the mapping entry whose key is the string `key`.
    pub fn get(&self, key: &str) -> Option<&YamlNode> {
        match &self.value {
            Value::Map(entries) => entries
                .iter()
                .find(|(k, _)| matches!(&k.value, Value::Str(s) if s == key))
                .map(|(_, value)| value),
            _ => None,
        }
    }
}

/// One YAML document as a positioned tree, read under `options`; `None` when it is not one
/// well-formed document.
pub(crate) fn parse_document(text: &str, options: serde_saphyr::Options) -> Option<YamlNode> {
    let document: Option<Spanned<Value>> =
        serde_saphyr::from_str_with_options(text, options).ok()?;
    document.map(node)
}

/// A parsed value as a [`YamlNode`] positioned where it is written (an alias: where it is used).
pub(crate) fn node(spanned: Spanned<Value>) -> YamlNode {
    YamlNode {
        position: position_of(spanned.referenced),
        value: spanned.value,
    }
}

impl<'de> Deserialize<'de> for Value {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        deserializer.deserialize_any(ValueVisitor)
    }
}

struct ValueVisitor;

impl<'de> Visitor<'de> for ValueVisitor {
    type Value = Value;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("any YAML value")
    }

    fn visit_unit<E: de::Error>(self) -> Result<Value, E> {
        Ok(Value::Null)
    }

    fn visit_none<E: de::Error>(self) -> Result<Value, E> {
        Ok(Value::Null)
    }

    fn visit_some<D: Deserializer<'de>>(self, deserializer: D) -> Result<Value, D::Error> {
        Value::deserialize(deserializer)
    }

    fn visit_bool<E: de::Error>(self, value: bool) -> Result<Value, E> {
        Ok(Value::Bool(value))
    }

    fn visit_i64<E: de::Error>(self, value: i64) -> Result<Value, E> {
        Ok(Value::Int(value.into()))
    }

    fn visit_u64<E: de::Error>(self, value: u64) -> Result<Value, E> {
        Ok(Value::Int(value.into()))
    }

    fn visit_i128<E: de::Error>(self, value: i128) -> Result<Value, E> {
        Ok(Value::Int(value))
    }

    fn visit_u128<E: de::Error>(self, value: u128) -> Result<Value, E> {
        // Beyond i128 only a float can hold it; range checks reject it later either way.
        Ok(i128::try_from(value).map_or(Value::Float(value as f64), Value::Int))
    }

    fn visit_f64<E: de::Error>(self, value: f64) -> Result<Value, E> {
        Ok(Value::Float(value))
    }

    fn visit_str<E: de::Error>(self, value: &str) -> Result<Value, E> {
        Ok(Value::Str(value.to_string()))
    }

    fn visit_string<E: de::Error>(self, value: String) -> Result<Value, E> {
        Ok(Value::Str(value))
    }

    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Value, A::Error> {
        let mut items = Vec::new();
        while let Some(item) = seq.next_element::<Spanned<Value>>()? {
            items.push(node(item));
        }
        Ok(Value::Seq(items))
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Value, A::Error> {
        let mut entries = Vec::new();
        while let Some(key) = map.next_key::<Spanned<Value>>()? {
            let value = map.next_value::<Spanned<Value>>()?;
            entries.push((node(key), node(value)));
        }
        Ok(Value::Map(entries))
    }
}
