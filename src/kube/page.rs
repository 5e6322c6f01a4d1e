//! One page of a list, read into a buffer that every page of the list reuses, and decoded item
//! by item: each item is handed to its consumer as soon as it is decoded, so a page never sits in
//! memory as a vector of API objects.
//!
//! Why not kube's `Client::request`: it copies each page's body twice (the collected bytes, then
//! a `String`), and serde grows the page's vector of items by doubling (for 500 slim pods,
//! vectors of 104, 208 and 416 KiB in turn). glibc gives the first such blocks their own mappings,
//! but each one freed raises its mmap threshold to that size, so from then on they come from
//! the heap, between the long-lived objects the items become; freed once per page, they left
//! holes the small objects only partly fill. That fragmentation was 55 MB of a live run's peak
//! at 150,000 pods (BENCHMARKS.md, "A live run at 150,000 pods").

use std::fmt;
use std::marker::PhantomData;

use futures_util::AsyncReadExt;
use kube::api::ListParams;
use kube::core::{ListMeta, Request};
use serde::de::{
    self, DeserializeOwned, DeserializeSeed, IgnoredAny, MapAccess, SeqAccess, Visitor,
};

use super::Error;

/// Reads the page of the list at `path` that `params` asks for into `body` (emptied first, its
/// capacity kept), and gives it back.
pub async fn fetch(
    client: &::kube::Client,
    path: &str,
    params: &ListParams,
    mut body: Vec<u8>,
) -> Result<Vec<u8>, ::kube::Error> {
    let mut request = Request::new(path)
        .list(params)
        .map_err(::kube::Error::BuildRequest)?;
    request.extensions_mut().insert("list");
    let mut answer = client.request_stream(request).await?;
    body.clear();
    answer.read_to_end(&mut body).await.map_err(body_error)?;
    Ok(body)
}

/// kube's own error behind a failed read of a body: `request_stream` wraps it in an
/// `io::Error`, and retries tell transport failures apart by kube's variants.
fn body_error(error: std::io::Error) -> ::kube::Error {
    error
        .downcast::<::kube::Error>()
        .unwrap_or_else(::kube::Error::ReadEvents)
}

/// Why a page gave no metadata.
#[derive(Debug)]
pub enum PageError {
    /// The page is not a list of `K`.
    Decode(serde_json::Error),
    /// An item was decoded, and its consumer refused it.
    Item(Error),
}

/// Decodes the page in `body`, passing each item through `keep` in order and pushing what it
/// returns onto `items`; returns the page's metadata (its `continue` token and count of items
/// after it).
pub fn decode<K, T>(
    body: &[u8],
    items: &mut Vec<T>,
    keep: &mut impl FnMut(K) -> Result<T, Error>,
) -> Result<ListMeta, PageError>
where
    K: DeserializeOwned,
{
    let mut refused = None;
    let seed = PageSeed {
        items: Items {
            items,
            keep,
            refused: &mut refused,
            kind: PhantomData,
        },
    };
    let mut decoder = serde_json::Deserializer::from_slice(body);
    let decoded = seed
        .deserialize(&mut decoder)
        .and_then(|metadata| decoder.end().map(|()| metadata));
    match (decoded, refused) {
        // The consumer's error is why decoding stopped: it is the one to tell.
        (_, Some(error)) => Err(PageError::Item(error)),
        (Ok(metadata), None) => Ok(metadata),
        (Err(error), None) => Err(PageError::Decode(error)),
    }
}

/// A list object (`{"metadata": …, "items": […]}`, other fields ignored) whose items go to
/// [`Items`]. Either field may be missing: no `items` is an empty page, no `metadata` the last.
struct PageSeed<'a, K, T, F> {
    items: Items<'a, K, T, F>,
}

impl<'de, K, T, F> DeserializeSeed<'de> for PageSeed<'_, K, T, F>
where
    K: DeserializeOwned,
    F: FnMut(K) -> Result<T, Error>,
{
    type Value = ListMeta;

    fn deserialize<D: de::Deserializer<'de>>(self, deserializer: D) -> Result<ListMeta, D::Error> {
        deserializer.deserialize_map(self)
    }
}

impl<'de, K, T, F> Visitor<'de> for PageSeed<'_, K, T, F>
where
    K: DeserializeOwned,
    F: FnMut(K) -> Result<T, Error>,
{
    type Value = ListMeta;

    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("a list object")
    }

    fn visit_map<A: MapAccess<'de>>(mut self, mut map: A) -> Result<ListMeta, A::Error> {
        let mut metadata = None;
        let mut items_seen = false;
        while let Some(field) = map.next_key::<Field>()? {
            match field {
                Field::Metadata if metadata.is_some() => {
                    return Err(de::Error::duplicate_field("metadata"));
                }
                Field::Metadata => metadata = Some(map.next_value::<ListMeta>()?),
                Field::Items if items_seen => return Err(de::Error::duplicate_field("items")),
                Field::Items => {
                    items_seen = true;
                    map.next_value_seed(self.items.by_ref())?;
                }
                Field::Other => {
                    map.next_value::<IgnoredAny>()?;
                }
            }
        }
        Ok(metadata.unwrap_or_default())
    }
}

/// A field of a list object.
enum Field {
    Metadata,
    Items,
    Other,
}

impl<'de> de::Deserialize<'de> for Field {
    fn deserialize<D: de::Deserializer<'de>>(deserializer: D) -> Result<Field, D::Error> {
        struct FieldVisitor;
        impl Visitor<'_> for FieldVisitor {
            type Value = Field;
            fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
                f.write_str("a field name")
            }
            fn visit_str<E: de::Error>(self, name: &str) -> Result<Field, E> {
                Ok(match name {
                    "metadata" => Field::Metadata,
                    "items" => Field::Items,
                    _ => Field::Other,
                })
            }
        }
        deserializer.deserialize_identifier(FieldVisitor)
    }
}

/// The `items` array: each item decoded as `K`, passed through `keep`, pushed onto `items`. The
/// first refusal is kept in `refused` and stops decoding.
struct Items<'a, K, T, F> {
    items: &'a mut Vec<T>,
    keep: &'a mut F,
    refused: &'a mut Option<Error>,
    kind: PhantomData<fn() -> K>,
}

impl<K, T, F> Items<'_, K, T, F> {
    fn by_ref(&mut self) -> Items<'_, K, T, F> {
        Items {
            items: self.items,
            keep: self.keep,
            refused: self.refused,
            kind: PhantomData,
        }
    }
}

impl<'de, K, T, F> DeserializeSeed<'de> for Items<'_, K, T, F>
where
    K: DeserializeOwned,
    F: FnMut(K) -> Result<T, Error>,
{
    type Value = ();

    fn deserialize<D: de::Deserializer<'de>>(self, deserializer: D) -> Result<(), D::Error> {
        deserializer.deserialize_seq(self)
    }
}

impl<'de, K, T, F> Visitor<'de> for Items<'_, K, T, F>
where
    K: DeserializeOwned,
    F: FnMut(K) -> Result<T, Error>,
{
    type Value = ();

    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("a sequence of items")
    }

    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<(), A::Error> {
        while let Some(item) = seq.next_element::<K>()? {
            match (self.keep)(item) {
                Ok(kept) => self.items.push(kept),
                Err(error) => {
                    *self.refused = Some(error);
                    return Err(de::Error::custom("an item was refused"));
                }
            }
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Decodes `body`, keeping each item's `n` and refusing the item whose `n` is `refuse`.
    fn decoded(body: &str, refuse: i64) -> (Vec<i64>, Result<ListMeta, PageError>) {
        let mut items = Vec::new();
        let mut keep = |item: serde_json::Value| {
            let n = item["n"].as_i64().expect("a number");
            if n == refuse {
                return Err(Error::ListExpired {
                    kind: "pods",
                    attempts: 1,
                });
            }
            Ok(n)
        };
        let metadata = decode(body.as_bytes(), &mut items, &mut keep);
        (items, metadata)
    }

    #[test]
    fn items_are_kept_in_order_and_the_metadata_is_read_wherever_it_is() {
        for body in [
            r#"{"kind":"PodList","metadata":{"continue":"next","remainingItemCount":7},
                "items":[{"n":1},{"n":2},{"n":3}]}"#,
            r#"{"items":[{"n":1},{"n":2},{"n":3}],"apiVersion":"v1",
                "metadata":{"continue":"next","remainingItemCount":7}}"#,
        ] {
            let (items, metadata) = decoded(body, 0);
            let metadata = metadata.expect("a page");
            assert_eq!(items, [1, 2, 3]);
            assert_eq!(metadata.continue_.as_deref(), Some("next"));
            assert_eq!(metadata.remaining_item_count, Some(7));
        }
    }

    #[test]
    fn a_page_without_items_or_metadata_is_an_empty_last_page() {
        let (items, metadata) = decoded("{}", 0);
        assert!(items.is_empty());
        assert_eq!(metadata.expect("a page").continue_, None);
    }

    #[test]
    fn a_refused_item_stops_the_page_with_the_consumers_error() {
        let (items, metadata) = decoded(r#"{"items":[{"n":1},{"n":2},{"n":3}]}"#, 2);
        assert_eq!(items, [1], "nothing after the refused item");
        assert!(matches!(
            metadata,
            Err(PageError::Item(Error::ListExpired { kind: "pods", .. }))
        ));
    }

    #[test]
    fn an_answer_that_is_not_a_list_object_is_a_decoding_error() {
        for body in [
            "[1, 2]",
            r#"{"items":{"n":1}}"#,
            r#"{"items":[{"n":1}],"items":[{"n":2}]}"#,
            r#"{"metadata":{},"metadata":{}}"#,
            r#"{"items":[{"n":1}]} trailing"#,
            r#"{"items":[{"n":1}"#,
        ] {
            let (_, metadata) = decoded(body, 0);
            assert!(matches!(metadata, Err(PageError::Decode(_))), "{body}");
        }
    }

    #[test]
    fn a_failed_read_of_the_body_is_kubes_own_error_so_retries_can_tell_it_apart() {
        let broken = std::io::Error::other(::kube::Error::Service("connection reset".into()));
        assert!(matches!(body_error(broken), ::kube::Error::Service(_)));
        let other = std::io::Error::new(std::io::ErrorKind::UnexpectedEof, "cut");
        assert!(matches!(body_error(other), ::kube::Error::ReadEvents(_)));
    }
}
