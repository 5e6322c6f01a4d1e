//! A small element tree read from a SOAP response with namespace resolution.
//!
//! vim25 responses are polymorphic: the real type of a value is in an `xsi:type` attribute, whose
//! prefix differs between servers (`xsi:` on vCenter, `XMLSchema-instance:` on vcsim 0.24,
//! `_XMLSchema-instance:` on newer vcsim). quick-xml's serde layer matches local names only and
//! confuses `xsi:type` with a managed object reference's own `type` attribute, so responses are
//! read with `NsReader` into this tree, where `xsi:type` is found by its namespace URI.

use std::borrow::Cow;

use quick_xml::events::{BytesStart, Event};
use quick_xml::name::ResolveResult;
use quick_xml::{NsReader, XmlVersion};

const XSI_NAMESPACE: &str = "http://www.w3.org/2001/XMLSchema-instance";

/// One XML element: its local name, its `xsi:type` (prefix stripped), its other attributes by
/// local name, its text (only kept for elements without children) and its children.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub(crate) struct Element {
    pub name: String,
    pub xsi_type: Option<String>,
    pub attributes: Vec<(String, String)>,
    pub text: String,
    pub children: Vec<Element>,
}

/// Why a response could not be read.
#[derive(Debug, thiserror::Error)]
pub enum XmlParseError {
    #[error("response is not UTF-8")]
    NotUtf8(#[source] std::str::Utf8Error),
    #[error("response is not well-formed XML")]
    Xml(#[source] quick_xml::Error),
    #[error("attribute of <{element}> is malformed")]
    Attribute {
        element: String,
        #[source]
        source: quick_xml::events::attributes::AttrError,
    },
    #[error("attribute of <{element}> has an undefined entity")]
    AttributeValue {
        element: String,
        #[source]
        source: quick_xml::Error,
    },
    #[error("undefined entity &{0}; in text")]
    UnknownEntity(String),
    #[error("response has no root element")]
    Empty,
    #[error("<{parent}> has no <{child}>")]
    Missing { parent: String, child: String },
    #[error("<{element}> holds {value:?}, not {expected}")]
    Invalid {
        element: String,
        value: String,
        expected: &'static str,
    },
}

impl Element {
    /// The first child with this local name.
    pub fn child(&self, name: &str) -> Option<&Element> {
        self.children.iter().find(|c| c.name == name)
    }

    /// The first child with this local name, or an error naming both elements.
    pub fn required(&self, name: &str) -> Result<&Element, XmlParseError> {
        self.child(name).ok_or_else(|| XmlParseError::Missing {
            parent: self.name.clone(),
            child: name.to_string(),
        })
    }

    /// Every child with this local name, in document order.
    pub fn children_named<'a>(&'a self, name: &'a str) -> impl Iterator<Item = &'a Element> + 'a {
        self.children.iter().filter(move |c| c.name == name)
    }

    /// The text of the first child with this local name.
    pub fn child_text(&self, name: &str) -> Option<&str> {
        self.child(name).map(|c| c.text.as_str())
    }

    /// An attribute (not `xsi:type`) by local name.
    pub fn attribute(&self, name: &str) -> Option<&str> {
        self.attributes
            .iter()
            .find(|(n, _)| n == name)
            .map(|(_, v)| v.as_str())
    }

    /// The text as an `xsd:boolean`.
    pub fn boolean(&self) -> Result<bool, XmlParseError> {
        match self.text.trim() {
            "true" | "1" => Ok(true),
            "false" | "0" => Ok(false),
            _ => Err(self.invalid("a boolean")),
        }
    }

    /// The text as an `xsd:int`.
    pub fn int(&self) -> Result<i32, XmlParseError> {
        self.text
            .trim()
            .parse()
            .map_err(|_| self.invalid("an integer"))
    }

    /// The text as an `xsd:int` that counts something (hosts, percent), so is never negative.
    pub fn count(&self) -> Result<u32, XmlParseError> {
        self.text
            .trim()
            .parse()
            .map_err(|_| self.invalid("a non-negative integer"))
    }

    /// An optional boolean child.
    pub fn child_boolean(&self, name: &str) -> Result<Option<bool>, XmlParseError> {
        self.child(name).map(Element::boolean).transpose()
    }

    pub fn invalid(&self, expected: &'static str) -> XmlParseError {
        XmlParseError::Invalid {
            element: self.name.clone(),
            value: self.text.clone(),
            expected,
        }
    }
}

/// Reads a whole document into its root element.
pub(crate) fn parse(document: &[u8]) -> Result<Element, XmlParseError> {
    let document = std::str::from_utf8(document).map_err(XmlParseError::NotUtf8)?;
    let mut reader = NsReader::from_str(document);
    // Leaf text is kept exactly; whitespace between elements is dropped when the parent closes.
    reader.config_mut().trim_text(false);

    let mut stack: Vec<Element> = Vec::new();
    loop {
        let event = reader.read_event().map_err(XmlParseError::Xml)?;
        match event {
            Event::Start(start) => stack.push(open(&reader, &start)?),
            Event::Empty(start) => {
                let element = open(&reader, &start)?;
                if let Some(root) = close(&mut stack, element) {
                    return Ok(root);
                }
            }
            Event::End(_) => {
                let element = stack.pop().ok_or(XmlParseError::Empty)?;
                if let Some(root) = close(&mut stack, element) {
                    return Ok(root);
                }
            }
            Event::Text(text) => {
                if let Some(current) = stack.last_mut() {
                    current
                        .text
                        .push_str(&text.xml_content(XmlVersion::Implicit1_0));
                }
            }
            Event::CData(data) => {
                if let Some(current) = stack.last_mut() {
                    current
                        .text
                        .push_str(&data.xml_content(XmlVersion::Implicit1_0));
                }
            }
            // Since quick-xml 0.38 `&amp;` and `&#38;` arrive as separate events.
            Event::GeneralRef(reference) => {
                if let Some(current) = stack.last_mut() {
                    match reference.resolve_char_ref() {
                        Ok(Some(c)) => current.text.push(c),
                        _ => {
                            let name = reference.xml_content(XmlVersion::Implicit1_0);
                            let resolved = quick_xml::escape::resolve_predefined_entity(&name)
                                .ok_or_else(|| XmlParseError::UnknownEntity(name.to_string()))?;
                            current.text.push_str(resolved);
                        }
                    }
                }
            }
            Event::Eof => return Err(XmlParseError::Empty),
            Event::Comment(_) | Event::Decl(_) | Event::PI(_) | Event::DocType(_) => {}
        }
    }
}

/// Attaches a finished element to its parent; returns it when it is the root.
fn close(stack: &mut [Element], mut element: Element) -> Option<Element> {
    if !element.children.is_empty() {
        element.text.clear();
    }
    match stack.last_mut() {
        Some(parent) => {
            parent.children.push(element);
            None
        }
        None => Some(element),
    }
}

fn open(reader: &NsReader<&[u8]>, start: &BytesStart<'_>) -> Result<Element, XmlParseError> {
    let name = start.local_name().as_ref().to_string();
    let mut element = Element {
        name,
        ..Element::default()
    };
    for attribute in start.attributes() {
        let attribute = attribute.map_err(|source| XmlParseError::Attribute {
            element: element.name.clone(),
            source,
        })?;
        let key = attribute.key;
        if key.as_namespace_binding().is_some() {
            continue;
        }
        let (namespace, local) = reader.resolver().resolve_attribute(key);
        let value = attribute
            .normalized_value(XmlVersion::Implicit1_0)
            .map_err(|source| XmlParseError::AttributeValue {
                element: element.name.clone(),
                source,
            })?;
        match namespace {
            ResolveResult::Bound(ns) if ns.as_ref() == XSI_NAMESPACE => {
                if local.as_ref() == "type" {
                    element.xsi_type = Some(strip_prefix(value).to_string());
                }
            }
            // Other namespaced attributes carry nothing vim25 clients need.
            ResolveResult::Bound(_) => {}
            ResolveResult::Unbound | ResolveResult::Unknown(_) => {
                element
                    .attributes
                    .push((local.as_ref().to_string(), value.into_owned()));
            }
        }
    }
    Ok(element)
}

/// `xsd:string` → `string`; `ClusterAntiAffinityRuleSpec` stays as it is.
fn strip_prefix(value: Cow<'_, str>) -> Cow<'_, str> {
    match value.split_once(':') {
        Some((_, local)) => Cow::Owned(local.to_string()),
        None => value,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn xsi_type_is_found_by_namespace_whatever_its_prefix() {
        for prefix in ["xsi", "XMLSchema-instance", "_XMLSchema-instance"] {
            let document = format!(
                r#"<val xmlns:{prefix}="http://www.w3.org/2001/XMLSchema-instance" {prefix}:type="ManagedObjectReference" type="HostSystem">host-1</val>"#
            );
            let element = parse(document.as_bytes()).expect("well-formed");
            assert_eq!(element.xsi_type.as_deref(), Some("ManagedObjectReference"));
            assert_eq!(element.attribute("type"), Some("HostSystem"));
            assert_eq!(element.text, "host-1");
        }
    }

    #[test]
    fn a_type_attribute_in_another_namespace_is_not_the_xsi_type() {
        let document = r#"<val xmlns:other="urn:other" other:type="Nope">x</val>"#;
        let element = parse(document.as_bytes()).expect("well-formed");
        assert_eq!(element.xsi_type, None);
        assert_eq!(element.attribute("type"), None);
    }

    #[test]
    fn entity_and_character_references_are_resolved_in_text_and_attributes() {
        let document =
            r#"<name a="x&amp;y">db &amp; cache &lt;&#65;&#x42;&gt; &quot;&apos;</name>"#;
        let element = parse(document.as_bytes()).expect("well-formed");
        assert_eq!(element.text, r#"db & cache <AB> "'"#);
        assert_eq!(element.attribute("a"), Some("x&y"));
    }

    #[test]
    fn whitespace_between_elements_is_not_text() {
        let element = parse(b"<a>\n  <b> kept </b>\n</a>").expect("well-formed");
        assert_eq!(element.text, "");
        assert_eq!(element.child_text("b"), Some(" kept "));
    }

    #[test]
    fn malformed_and_empty_documents_are_errors() {
        assert!(matches!(parse(b"<a><b></a>"), Err(XmlParseError::Xml(_))));
        assert!(matches!(parse(b""), Err(XmlParseError::Empty)));
        assert!(matches!(
            parse(b"<a>&bogus;</a>"),
            Err(XmlParseError::UnknownEntity(_))
        ));
        assert!(matches!(
            parse(&[0xff, 0xfe]),
            Err(XmlParseError::NotUtf8(_))
        ));
    }
}
