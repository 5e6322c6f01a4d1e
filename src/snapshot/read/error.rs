//! What reading a snapshot file can refuse, and the size limit it refuses a file by.

use std::fmt;
use std::path::{Path, PathBuf};
use std::str::FromStr;

use super::position::{ParseError, Position};
use crate::snapshot::decode::history as eviction_history;
use crate::snapshot::decode::quantity::parse_milli;
use crate::text::shown;

/// Why a snapshot could not be read.
#[derive(Debug, thiserror::Error)]
pub enum SnapshotError {
    #[error("cannot read snapshot file {path}")]
    Read {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    /// A directory where a file was expected: `--snapshot` takes files (a shell's glob picks
    /// the files of a directory).
    #[error(
        "snapshot file {} is a directory: give the files in it, such as {}",
        path.display(),
        path.join("*.yaml").display()
    )]
    Directory { path: PathBuf },
    #[error(
        "snapshot file {path} is larger than {limit} ({} bytes), the most one file may hold; \
         raise the limit with --max-snapshot-size or split the objects over several files",
        limit.bytes()
    )]
    TooLarge { path: PathBuf, limit: FileSizeLimit },
    #[error("{}:{at}: not YAML or JSON text: {problem} at byte {offset}", path.display())]
    NotText {
        path: PathBuf,
        at: Position,
        offset: u64,
        problem: NotText,
    },
    #[error("{}:{error}", path.display())]
    Parse { path: PathBuf, error: ParseError },
    /// Two records of one cluster id, or two of one `datacenter/name` that lack the ids to tell
    /// them apart.
    #[error(
        "{}: {}",
        place(path, at.as_deref()),
        duplicate_cluster(&format!("{datacenter}/{name}"), id.as_deref())
    )]
    DuplicateCluster {
        path: PathBuf,
        /// Where the later record starts, when the file could be read again to find it (boxed:
        /// errors travel in `Result`s).
        at: Option<Box<Position>>,
        datacenter: String,
        name: String,
        /// The id both records carry; `None` when they cannot be told apart.
        id: Option<String>,
    },
    #[error("{}: {kind} {} appears more than once", place(path, at.as_deref()), shown(name))]
    Duplicate {
        path: PathBuf,
        /// Where the later copy starts, when the file could be read again to find it.
        at: Option<Box<Position>>,
        kind: &'static str,
        name: String,
    },
    /// Two Leases or two ConfigMaps carry an eviction history, or a Lease and a ConfigMap of
    /// different namespaces: which one the run keeps its history in cannot be told.
    #[error(
        "{}: the eviction history (annotation {}) appears more than once, in {} and in {}: \
         keep the run lock's only",
        place(path, at.as_deref()),
        eviction_history::ANNOTATION,
        shown(first),
        shown(second)
    )]
    DuplicateHistory {
        path: PathBuf,
        /// Where the later Lease starts, when the file could be read again to find it.
        at: Option<Box<Position>>,
        /// `Lease namespace/name` or `ConfigMap namespace/name` of the object read first.
        first: String,
        /// The same of the object read later.
        second: String,
    },
    /// A `VSphereInventory` and VM Operator's objects: two sources of the ESXi hosts, where a
    /// snapshot takes one.
    #[error(
        "{}: VSphereInventory and {kind} {} ({}) are two sources of ESXi hosts; a snapshot takes \
         one: keep the inventory or VM Operator's objects",
        place(inventory, inventory_at.as_deref()),
        shown(name),
        place(vm_operator, vm_operator_at.as_deref())
    )]
    TwoHostSources {
        /// The file of the first `VSphereInventory`, and where in it, once found.
        inventory: PathBuf,
        inventory_at: Option<Box<Position>>,
        /// The file of the first VM Operator object, and where in it, once found.
        vm_operator: PathBuf,
        vm_operator_at: Option<Box<Position>>,
        /// `VirtualMachine` or `VirtualMachineSetResourcePolicy`.
        kind: &'static str,
        /// `namespace/name` of that object.
        name: String,
    },
    #[error("nothing to plan on: {} no object", holding(.paths))]
    Empty { paths: Vec<PathBuf> },
    #[error(
        "nothing to plan on: {} no Node; record the nodes too (`vsphere-descheduler snapshot -o FILE`, \
         or `kubectl get nodes -o yaml`)",
        holding(.paths)
    )]
    NoNode { paths: Vec<PathBuf> },
}

/// `FILE:LINE:COL: document N` where that is known, else `snapshot file FILE`.
fn place(path: &Path, at: Option<&Position>) -> String {
    match at {
        Some(at) => format!("{}:{at}", path.display()),
        None => format!("snapshot file {}", path.display()),
    }
}

fn duplicate_cluster(cluster: &str, id: Option<&str>) -> String {
    let cluster = shown(cluster);
    match id {
        Some(id) => format!("vSphere cluster {cluster} ({id}) appears more than once"),
        None => format!(
            "vSphere cluster {cluster} appears more than once, and without an `id` on each the \
             records cannot be told apart: give each its managed object id, or remove one"
        ),
    }
}

/// "snapshot file a holds" or "snapshot files a, b hold".
fn holding(paths: &[PathBuf]) -> String {
    let names: Vec<String> = paths.iter().map(|p| p.display().to_string()).collect();
    match names.as_slice() {
        [one] => format!("snapshot file {one} holds"),
        many => format!("snapshot files {} hold", many.join(", ")),
    }
}

/// Why the bytes of a file are not snapshot text.
#[derive(Clone, Copy, Debug, PartialEq, Eq, thiserror::Error)]
pub enum NotText {
    #[error("invalid UTF-8")]
    InvalidUtf8,
    /// Neither YAML nor JSON allows a raw control character other than tab, CR and LF.
    #[error("control character {0:#04x}")]
    ControlCharacter(u8),
    /// Half of a UTF-16 surrogate pair alone, in a file a byte order mark says is UTF-16.
    #[error("invalid UTF-16")]
    InvalidUtf16,
}

/// The most bytes one snapshot file may hold, so a wrong path (a disk image, a device, a pipe
/// that never ends) fails at a known size instead of exhausting memory.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct FileSizeLimit {
    bytes: u64,
}

impl FileSizeLimit {
    /// 1 GiB: four times the generated 300,000-pod benchmark cluster as YAML
    /// (docs/snapshots.md, "What a snapshot contains", has the measurements).
    pub const DEFAULT: FileSizeLimit = FileSizeLimit { bytes: 1 << 30 };

    pub fn bytes(self) -> u64 {
        self.bytes
    }
}

impl Default for FileSizeLimit {
    fn default() -> FileSizeLimit {
        FileSizeLimit::DEFAULT
    }
}

/// A size that is not a positive whole number of bytes.
#[derive(Debug, thiserror::Error)]
#[error(
    "invalid size {0:?}: expected a positive Kubernetes quantity of bytes such as 512Mi or 2Gi"
)]
pub struct InvalidFileSize(String);

impl FromStr for FileSizeLimit {
    type Err = InvalidFileSize;

    /// A Kubernetes quantity (`512Mi`, `2Gi`, `1500000000`), as resource sizes are written.
    fn from_str(text: &str) -> Result<FileSizeLimit, InvalidFileSize> {
        parse_milli(text)
            .filter(|milli| *milli > 0 && milli % 1000 == 0)
            .and_then(|milli| u64::try_from(milli / 1000).ok())
            .map(|bytes| FileSizeLimit { bytes })
            .ok_or_else(|| InvalidFileSize(text.to_string()))
    }
}

impl fmt::Display for FileSizeLimit {
    fn fmt(&self, f: &mut fmt::Formatter) -> fmt::Result {
        let unit = [("Gi", 1 << 30), ("Mi", 1 << 20), ("Ki", 1 << 10)]
            .into_iter()
            .find(|(_, size)| self.bytes.is_multiple_of(*size));
        match unit {
            Some((suffix, size)) => write!(f, "{}{suffix}", self.bytes / size),
            None => write!(f, "{}", self.bytes),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::FileSizeLimit;

    #[test]
    fn a_size_limit_is_a_kubernetes_quantity_of_whole_bytes() {
        let limit = |text: &str| text.parse::<FileSizeLimit>().map(FileSizeLimit::bytes).ok();
        assert_eq!(limit("512Mi"), Some(512 << 20));
        assert_eq!(limit("2G"), Some(2_000_000_000));
        assert_eq!(limit("1500"), Some(1500));
        for invalid in ["0", "-1Gi", "1.5", "lots", ""] {
            assert_eq!(limit(invalid), None, "{invalid:?}");
        }
        for shown in ["1Gi", "512Mi", "3Ki", "1500"] {
            let parsed: FileSizeLimit = shown.parse().expect("valid");
            assert_eq!(parsed.to_string(), shown);
        }
        assert_eq!(FileSizeLimit::DEFAULT.to_string(), "1Gi");
    }
}
