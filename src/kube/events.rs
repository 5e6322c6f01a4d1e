//! `events.k8s.io/v1` Events on the pods this tool acted on, in the descheduler's convention:
//! reason = the strategy, action `Descheduled`, a note naming node, ESXi host and rule.

use k8s_openapi::api::core::v1::ObjectReference;
use k8s_openapi::api::events::v1::Event;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;
use kube::api::{Api, PostParams};

use super::{Call, Client, Error, micro_time};

/// `reportingController` of every Event we write.
pub const REPORTING_CONTROLLER: &str = "vsphere-descheduler.io/vsphere-descheduler";
/// The server's limit on `note`.
const MAX_NOTE: usize = 1024;
/// The server's limit on `reason`, `action` and `reportingInstance`.
const MAX_SHORT: usize = 128;

/// Normal or Warning.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum EventKind {
    Normal,
    Warning,
}

/// An event about one pod.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct EventSpec {
    pub namespace: String,
    pub pod: String,
    pub pod_uid: Option<String>,
    pub kind: EventKind,
    pub reason: String,
    pub action: String,
    pub note: String,
}

impl EventSpec {
    /// The Event object: named `<pod>.<hex nanoseconds>` like client-go's recorder.
    pub fn to_event(&self, now: chrono::DateTime<chrono::Utc>, instance: &str) -> Event {
        let nanos = now.timestamp_nanos_opt().unwrap_or_default();
        let name = event_name(&self.pod, nanos);
        Event {
            metadata: ObjectMeta {
                name: Some(name),
                namespace: Some(self.namespace.clone()),
                ..ObjectMeta::default()
            },
            event_time: Some(micro_time(now)),
            type_: Some(
                match self.kind {
                    EventKind::Normal => "Normal",
                    EventKind::Warning => "Warning",
                }
                .to_string(),
            ),
            reason: Some(truncate(&self.reason, MAX_SHORT)),
            action: Some(truncate(&self.action, MAX_SHORT)),
            note: Some(truncate(&self.note, MAX_NOTE)),
            reporting_controller: Some(REPORTING_CONTROLLER.to_string()),
            reporting_instance: Some(truncate(instance, MAX_SHORT)),
            regarding: Some(ObjectReference {
                api_version: Some("v1".to_string()),
                kind: Some("Pod".to_string()),
                name: Some(self.pod.clone()),
                namespace: Some(self.namespace.clone()),
                uid: self.pod_uid.clone(),
                ..ObjectReference::default()
            }),
            ..Event::default()
        }
    }
}

impl Client {
    /// Records one event. `instance` identifies this run (`reportingInstance`).
    pub async fn publish_event(&self, spec: &EventSpec, instance: &str) -> Result<(), Error> {
        let event = spec.to_event(chrono::Utc::now(), instance);
        let events: Api<Event> = Api::namespaced(self.client.clone(), &spec.namespace);
        let call = Call::new("POST", events.resource_url());
        events
            .create(&PostParams::default(), &event)
            .await
            .map(|_| ())
            .map_err(|error| Error::Event {
                namespace: spec.namespace.clone(),
                name: event.metadata.name.unwrap_or_default(),
                source: call.failed(error),
            })
    }
}

/// At most `limit` bytes, cut at a character boundary, marked with `…` when cut.
/// The longest object name the API server accepts (a DNS subdomain).
const MAX_NAME: usize = 253;

/// `<pod>.<hex nanoseconds>`, the pod's part shortened when the whole would pass [`MAX_NAME`]:
/// pod names may use all 253 characters themselves. The cut keeps the name a DNS subdomain (a
/// pod name is one, so only a trailing `-` or `.` left by the cut needs trimming).
fn event_name(pod: &str, nanos: i64) -> String {
    let suffix = format!(".{nanos:x}");
    let room = MAX_NAME - suffix.len();
    let prefix = if pod.len() <= room {
        pod
    } else {
        pod[..room].trim_end_matches(['-', '.'])
    };
    format!("{prefix}{suffix}")
}

fn truncate(text: &str, limit: usize) -> String {
    if text.len() <= limit {
        return text.to_string();
    }
    let mut cut = limit - '…'.len_utf8();
    while !text.is_char_boundary(cut) {
        cut -= 1;
    }
    format!("{}…", &text[..cut])
}

#[cfg(test)]
mod tests {
    use super::*;

    fn spec(note: String) -> EventSpec {
        EventSpec {
            namespace: "shop".to_string(),
            pod: "web-1".to_string(),
            pod_uid: Some("u-1".to_string()),
            kind: EventKind::Normal,
            reason: "RemovePodsViolatingInterPodAntiAffinity".to_string(),
            action: "Descheduled".to_string(),
            note,
        }
    }

    #[test]
    fn event_names_stay_dns_subdomains_for_the_longest_pod_names() {
        let nanos = 0x1879_3a2b_4c5d_6e7f;
        assert_eq!(event_name("web-1", nanos), "web-1.18793a2b4c5d6e7f");
        // 253 characters, with a `-` where the cut falls.
        let longest = format!("{}-{}", "a".repeat(235), "b".repeat(17));
        let name = event_name(&longest, nanos);
        assert!(name.len() <= MAX_NAME, "{}", name.len());
        assert_eq!(name, format!("{}.18793a2b4c5d6e7f", "a".repeat(235)));
        let dotted = format!("{}.{}", "c".repeat(235), "d".repeat(17));
        assert_eq!(
            event_name(&dotted, nanos),
            format!("{}.18793a2b4c5d6e7f", "c".repeat(235))
        );
    }

    #[test]
    fn the_event_has_every_field_the_server_requires() {
        let now = chrono::DateTime::parse_from_rfc3339("2026-11-21T20:49:09.123456Z")
            .expect("valid")
            .to_utc();
        let event = serde_json::to_value(spec("evicted".to_string()).to_event(now, "job-1"))
            .expect("serialises");
        assert_eq!(event["apiVersion"], "events.k8s.io/v1");
        assert_eq!(event["eventTime"], "2026-11-21T20:49:09.123456Z");
        assert_eq!(event["type"], "Normal");
        assert_eq!(event["action"], "Descheduled");
        assert_eq!(event["reportingController"], REPORTING_CONTROLLER);
        assert_eq!(event["reportingInstance"], "job-1");
        assert_eq!(event["regarding"]["namespace"], "shop");
        assert_eq!(event["metadata"]["namespace"], "shop");
        let name = event["metadata"]["name"].as_str().expect("named");
        assert!(name.starts_with("web-1."), "{name}");
    }

    #[test]
    fn a_long_note_is_cut_to_the_servers_limit() {
        let event = spec("ü".repeat(800)).to_event(chrono::Utc::now(), "job-1");
        let note = event.note.expect("a note");
        assert!(note.len() <= MAX_NOTE, "{}", note.len());
        assert!(note.ends_with('…'));
    }
}
