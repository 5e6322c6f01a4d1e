//! The causes of the adapters' errors, built as the adapters build them.

use std::sync::Arc;
use std::time::Duration;

use serde_json::{Value, json};

use crate::cause::*;
use crate::kube::Call;
use crate::{error_chain, kube, vsphere};

/// kube's error for an error body exactly as the API server sends it, as the adapter wraps
/// it for a label apply.
fn answered(body: Value) -> kube::Error {
    let status: ::kube::core::Status = serde_json::from_value(body).expect("a Status body");
    kube::Error::ApplyLabels {
        node: "worker-a".to_string(),
        source: Call::new("PATCH", "/api/v1/nodes/worker-a")
            .failed(::kube::Error::Api(Box::new(status))),
    }
}

fn status(code: u16, reason: &str, message: &str) -> Value {
    json!({"kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Failure",
        "message": message, "reason": reason, "code": code})
}

/// kube's error when the request could not be carried: `source` as the connector gives it.
fn unsent(source: std::io::Error) -> kube::Error {
    kube::Error::ReadLease {
        namespace: "ops".to_string(),
        name: "vsphere-descheduler".to_string(),
        source: Call::new(
            "GET",
            "/apis/coordination.k8s.io/v1/namespaces/ops/leases/x",
        )
        .failed(::kube::Error::Service(Box::new(source))),
    }
}

#[test]
fn each_answer_of_the_api_server_becomes_its_cause() {
    let answers = [
        (
            status(
                403,
                "Forbidden",
                "nodes \"worker-a\" is forbidden: User \"x\" cannot patch resource \"nodes\"",
            ),
            Cause::Forbidden,
        ),
        (
            status(
                409,
                "Conflict",
                "Operation cannot be fulfilled on nodes \"worker-a\": the object has been \
                 modified",
            ),
            Cause::Conflict,
        ),
        (
            status(404, "NotFound", "nodes \"worker-a\" not found"),
            Cause::NotFound,
        ),
        (
            status(
                429,
                "TooManyRequests",
                "too many requests, please try again later",
            ),
            Cause::TooManyRequests,
        ),
        (
            status(500, "InternalError", "Internal error occurred: etcdserver"),
            Cause::ServerError,
        ),
        (
            status(503, "ServiceUnavailable", "the server is currently unable"),
            Cause::ServerError,
        ),
        (
            status(
                504,
                "Timeout",
                "Timeout: request did not complete within 60s",
            ),
            Cause::Timeout,
        ),
        (
            status(401, "Unauthorized", "Unauthorized"),
            Cause::Unauthorized,
        ),
        (
            status(422, "Invalid", "Node \"worker-a\" is invalid"),
            Cause::Invalid,
        ),
    ];
    for (body, cause) in answers {
        let error = answered(body);
        assert_eq!(error.cause(), cause, "{}", error_chain(&error));
        let failure = error.failure();
        assert_eq!(failure.to_string(), error_chain(&error));
    }
}

#[test]
fn the_cause_never_comes_from_the_message() {
    // A 500 whose message speaks of a timeout and a forbidden key is a server error.
    let error = answered(status(
        500,
        "InternalError",
        "request timed out: forbidden: not found: conflict",
    ));
    assert_eq!(error.cause(), Cause::ServerError);
}

#[test]
fn a_timed_out_refused_or_untrusted_connection_becomes_its_cause() {
    let timed_out = unsent(std::io::Error::new(
        std::io::ErrorKind::TimedOut,
        "deadline has elapsed",
    ));
    assert_eq!(timed_out.cause(), Cause::Timeout);
    let refused = unsent(std::io::Error::new(
        std::io::ErrorKind::ConnectionRefused,
        "connection refused",
    ));
    assert_eq!(refused.cause(), Cause::Connection);
    let untrusted = unsent(std::io::Error::other(std::io::Error::new(
        std::io::ErrorKind::InvalidData,
        rustls::Error::InvalidCertificate(rustls::CertificateError::Other(rustls::OtherError(
            Arc::new(webpki::Error::CaUsedAsEndEntity),
        ))),
    )));
    assert_eq!(untrusted.cause(), Cause::Tls);
    let handshake = unsent(std::io::Error::new(
        std::io::ErrorKind::InvalidData,
        rustls::Error::AlertReceived(rustls::AlertDescription::HandshakeFailure),
    ));
    assert_eq!(handshake.cause(), Cause::Tls);
}

#[test]
fn a_lost_or_expired_lock_is_lock_lost_and_a_held_one_a_conflict() {
    let lost = kube::Error::LockLost {
        namespace: "ops".to_string(),
        name: "vsphere-descheduler".to_string(),
    };
    let expired = kube::Error::LockExpired {
        namespace: "ops".to_string(),
        name: "vsphere-descheduler".to_string(),
        unrenewed_seconds: 30,
    };
    assert_eq!(lost.cause(), Cause::LockLost);
    assert_eq!(expired.cause(), Cause::LockLost);
    let race = kube::Error::LockRace {
        namespace: "ops".to_string(),
        name: "vsphere-descheduler".to_string(),
    };
    assert_eq!(race.cause(), Cause::Conflict);
}

#[test]
fn each_failure_of_vcenter_becomes_its_cause() {
    let task = |fault: vsphere::Fault| vsphere::Error::Task {
        task: "task-7".to_string(),
        method: "ReconfigureComputeResource_Task",
        object: "ClusterComputeResource:domain-c7".to_string(),
        fault,
    };
    let mut no_permission = vsphere::Fault::new(
        "NoPermission",
        "Permission to perform this operation was denied.",
    );
    no_permission.missing_privilege = Some(Box::new(vsphere::MissingPrivilege {
        privilege: "Host.Inventory.EditCluster".to_string(),
        object: "ClusterComputeResource:domain-c7".to_string(),
    }));
    let failures = [
        (task(no_permission), Cause::Forbidden),
        (
            task(vsphere::Fault::new("ManagedObjectNotFound", "gone")),
            Cause::NotFound,
        ),
        (
            task(vsphere::Fault::new("ConcurrentAccess", "busy")),
            Cause::Conflict,
        ),
        (
            task(vsphere::Fault::new(
                "InvalidArgument",
                "A specified parameter was not correct: spec.rulesSpec",
            )),
            Cause::Invalid,
        ),
        (
            task(vsphere::Fault::new("NotAuthenticated", "")),
            Cause::Unauthorized,
        ),
        (task(vsphere::Fault::new("DrsFault", "no")), Cause::Refused),
        (
            vsphere::Error::Status {
                method: "POST",
                server: "vc.example".to_string(),
                status: 503,
            },
            Cause::ServerError,
        ),
        (
            vsphere::Error::Status {
                method: "POST",
                server: "vc.example".to_string(),
                status: 429,
            },
            Cause::TooManyRequests,
        ),
        (
            vsphere::Error::Timeout {
                method: "POST",
                server: "vc.example".to_string(),
                timeout: Duration::from_secs(30),
            },
            Cause::Timeout,
        ),
        (
            vsphere::Error::TaskTimeout {
                task: "task-7".to_string(),
                method: "ReconfigureComputeResource_Task",
                object: "ClusterComputeResource:domain-c7".to_string(),
                waited: Duration::from_secs(300),
            },
            Cause::Timeout,
        ),
        (
            vsphere::Error::TaskNotAwaited {
                task: "task-7".to_string(),
                method: "ReconfigureComputeResource_Task",
                object: "ClusterComputeResource:domain-c7".to_string(),
            },
            Cause::Stopped,
        ),
    ];
    for (error, cause) in failures {
        assert_eq!(error.cause(), cause, "{}", error_chain(&error));
    }
}

#[test]
fn every_cause_has_its_own_name() {
    let names: std::collections::BTreeSet<&str> =
        Cause::ALL.iter().map(|cause| cause.as_str()).collect();
    assert_eq!(names.len(), Cause::ALL.len());
}
