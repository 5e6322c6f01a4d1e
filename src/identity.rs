//! How this tool names itself to the systems it talks to. Its own module because both sides of
//! an edge need the names: the Kubernetes adapter writes with them and snapshot conversion reads
//! them back from the objects it converts, so neither has to import the other for them.

/// The field manager of every write this tool makes; server-side apply tracks our label keys
/// under it, and conversion recognises our own label writes by it.
pub const FIELD_MANAGER: &str = "vsphere-descheduler";

/// The `User-Agent` of every request this tool makes to the API server and the Pushgateway.
pub const USER_AGENT: &str = concat!("vsphere-descheduler/", env!("CARGO_PKG_VERSION"));
