//! The end of a run, after its report is printed: the run lock released and the vCenter session
//! ended, both at once and each within [`RELEASE_LIMIT`], so that at the deadline the report is
//! out first and what follows it is bounded whatever the API server and vCenter do.

use crate::live::log_out;
use crate::settings::RELEASE_LIMIT;
use crate::{kube, vsphere};

/// What a run leaves to do once its report is out: release the run lock and end the vCenter
/// session. Dropped instead, the Lease expires after `--lock-duration` and the session times out
/// on vCenter.
#[derive(Debug, Default)]
pub struct Teardown {
    pub(super) lock: Option<kube::Lock>,
    pub(super) vsphere: Option<vsphere::VcenterClient>,
}

impl Teardown {
    /// Releases the lock and logs out of vCenter, both at once, each within [`RELEASE_LIMIT`]
    /// however slow its server: at most that long in all. A logout that fails is logged here
    /// (the session expires on its own); a release that fails is the caller's to tell.
    pub async fn finish(self) -> Result<(), kube::Error> {
        let release = async {
            match self.lock {
                Some(lock) => release(lock).await,
                None => Ok(()),
            }
        };
        let log_out = async {
            if let Some(client) = self.vsphere {
                log_out(client).await;
            }
        };
        let (released, ()) = tokio::join!(release, log_out);
        released
    }
}

/// Clears the Lease within [`RELEASE_LIMIT`].
async fn release(lock: kube::Lock) -> Result<(), kube::Error> {
    tokio::time::timeout(RELEASE_LIMIT, lock.release())
        .await
        .unwrap_or(Err(kube::Error::ReleaseTimedOut {
            limit: RELEASE_LIMIT,
        }))
}
