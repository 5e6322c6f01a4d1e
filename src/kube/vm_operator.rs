//! VM Operator's objects on a Supervisor (VKS): the group's preferred version as discovery
//! says it, and the VirtualMachines and VirtualMachineSetResourcePolicies of one namespace, as
//! the API returns them (a snapshot records them so; the inventory is read from them).
//!
//! The preferred version is the one the objects are stored in on a real Supervisor, whose
//! conversion webhook serves the others; reading it keeps the host field of that release
//! (`status.host` up to v1alpha3, `status.nodeName` from v1alpha4).

use k8s_openapi::apimachinery::pkg::apis::meta::v1::APIGroup;
use serde_json::Value;

use super::error::{Call, Error, api_status};
use super::list::list_all;
use super::{Client, retry};

/// VM Operator's API group.
pub const VM_OPERATOR_GROUP: &str = "vmoperator.vmware.com";

/// The VM Operator objects of one Supervisor namespace, as listed.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct VmOperatorObjects {
    /// The version they were read in (`v1alpha5`).
    pub version: String,
    pub virtual_machines: Vec<Value>,
    pub resource_policies: Vec<Value>,
}

/// Discovery's request for VM Operator's group, `GET /apis/vmoperator.vmware.com`: built by
/// hand, as kube's `Request::get` wants an object's name and refuses the group path's empty one.
fn group_request() -> http::Request<Vec<u8>> {
    http::Request::get(format!("/apis/{VM_OPERATOR_GROUP}"))
        .body(Vec::new())
        .expect("the constant group path is a URI")
}

impl Client {
    /// The version of VM Operator's group the server prefers; [`Error::VmOperatorAbsent`] where
    /// the server does not serve the group (no VM Operator: not a Supervisor).
    pub async fn vm_operator_version(&self) -> Result<String, Error> {
        let path = format!("/apis/{VM_OPERATOR_GROUP}");
        let call = Call::new("GET", path.as_str());
        let answer = retry::idempotent("API group", || async {
            self.client.request::<APIGroup>(group_request()).await
        })
        .await;
        match answer {
            Ok(group) => group
                .preferred_version
                .map(|version| version.version)
                .or_else(|| group.versions.first().map(|v| v.version.clone()))
                .ok_or(Error::VmOperatorAbsent {
                    code: 200,
                    source: None,
                }),
            Err(error) => match api_status(&error).map(|status| status.code) {
                Some(code @ 404) => Err(Error::VmOperatorAbsent {
                    code,
                    source: Some(call.failed(error)),
                }),
                _ => Err(Error::Discovery {
                    group: VM_OPERATOR_GROUP,
                    source: call.failed(error),
                }),
            },
        }
    }

    /// Every VirtualMachine and VirtualMachineSetResourcePolicy of `namespace` in `version`,
    /// page by page, each item with its `apiVersion` and `kind`.
    pub async fn list_vm_operator(
        &self,
        namespace: &str,
        version: &str,
    ) -> Result<VmOperatorObjects, Error> {
        let api_version = format!("{VM_OPERATOR_GROUP}/{version}");
        let path = |plural: &str| format!("/apis/{api_version}/namespaces/{namespace}/{plural}");
        let typed = |kind: &'static str| {
            let api_version = api_version.clone();
            move |mut item: Value| {
                if let Some(object) = item.as_object_mut() {
                    object
                        .entry("apiVersion")
                        .or_insert_with(|| Value::from(api_version.as_str()));
                    object.entry("kind").or_insert_with(|| Value::from(kind));
                }
                Ok(item)
            }
        };
        let virtual_machines = list_all(
            &self.client,
            path("virtualmachines"),
            "VirtualMachines",
            typed("VirtualMachine"),
        )
        .await?;
        let resource_policies = list_all(
            &self.client,
            path("virtualmachinesetresourcepolicies"),
            "VirtualMachineSetResourcePolicies",
            typed("VirtualMachineSetResourcePolicy"),
        )
        .await?;
        Ok(VmOperatorObjects {
            version: version.to_string(),
            virtual_machines,
            resource_policies,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn discovery_of_the_group_is_a_get_of_its_path_without_a_name() {
        let request = group_request();
        assert_eq!(request.method(), http::Method::GET);
        assert_eq!(request.uri().path(), "/apis/vmoperator.vmware.com");
        assert_eq!(request.uri().query(), None);
        assert!(request.body().is_empty());
    }
}
