//! The install scripts' apt wrapper (scripts/lib/apt-install.sh) against a stand-in `apt-get`
//! that answers as apt does while another package manager holds the dpkg lock (issue 39: on a
//! fresh machine busy with boot-time upgrades, `scripts/test` failed at once). The stand-in
//! only prints and counts: nothing is installed and no real lock is taken.

use std::path::Path;
use std::process::Command;

/// A stand-in `apt-get` that refuses with apt's lock message `held` times, then succeeds;
/// it appends each call's arguments to `calls`.
fn fake_apt_get(dir: &Path, held: usize) {
    let script = format!(
        "#!/usr/bin/env bash\n\
         echo \"$*\" >> '{dir}/calls'\n\
         count=$(wc -l < '{dir}/calls')\n\
         if (( count <= {held} )); then\n\
         \x20 echo 'E: Could not get lock /var/lib/dpkg/lock-frontend. It is held by process 812 (apt-get)' >&2\n\
         \x20 exit 100\n\
         fi\n\
         echo 'Reading package lists...'\n",
        dir = dir.display()
    );
    let path = dir.join("apt-get");
    std::fs::write(&path, script).expect("writable");
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o755)).expect("chmod");
}

/// `apt_get test update` with the stand-in first on the PATH; exit code, stderr, the calls.
fn apt_get_with_lock_held(held: usize, timeout: u32) -> (i32, String, Vec<String>) {
    let dir = tempfile::tempdir().expect("a temporary directory");
    fake_apt_get(dir.path(), held);
    let library = Path::new(env!("CARGO_MANIFEST_DIR")).join("scripts/lib/apt-install.sh");
    let path = format!(
        "{}:{}",
        dir.path().display(),
        std::env::var("PATH").unwrap_or_default()
    );
    let output = Command::new("bash")
        .arg("-c")
        .arg(format!(
            "source '{}'; sudo=(); apt_get test update -qq",
            library.display()
        ))
        .env("PATH", path)
        .env("APT_LOCK_TIMEOUT", timeout.to_string())
        // No pause between tries: the bound still counts one a try.
        .env("APT_LOCK_POLL", "0")
        .output()
        .expect("bash runs");
    let calls = std::fs::read_to_string(dir.path().join("calls")).unwrap_or_default();
    (
        output.status.code().expect("exited"),
        String::from_utf8(output.stderr).expect("UTF-8"),
        calls.lines().map(str::to_string).collect(),
    )
}

#[test]
fn apt_waits_for_a_lock_another_package_manager_holds_and_says_so() {
    let (code, stderr, calls) = apt_get_with_lock_held(2, 300);
    assert_eq!(code, 0, "{stderr}");
    assert_eq!(calls.len(), 3, "{calls:?}");
    assert!(
        calls
            .iter()
            .all(|call| call == "-o DPkg::Lock::Timeout=300 update -qq"),
        "{calls:?}"
    );
    assert_eq!(
        stderr
            .matches("test: another package manager holds the apt/dpkg lock")
            .count(),
        2,
        "{stderr}"
    );
    assert!(stderr.contains("waiting, 1s of at most 300s"), "{stderr}");
}

#[test]
fn apt_gives_up_on_a_lock_held_past_the_bound_and_says_why() {
    let (code, stderr, calls) = apt_get_with_lock_held(usize::MAX / 2, 3);
    assert_eq!(code, 100, "apt's own exit code: {stderr}");
    assert_eq!(calls.len(), 4, "the first try and three more: {calls:?}");
    assert!(
        stderr.contains(
            "test: another package manager still holds the apt/dpkg lock after 3s \
             (APT_LOCK_TIMEOUT=3)"
        ),
        "{stderr}"
    );
}

#[test]
fn apt_failing_for_another_reason_is_not_retried() {
    let dir = tempfile::tempdir().expect("a temporary directory");
    let path = dir.path().join("apt-get");
    std::fs::write(
        &path,
        format!(
            "#!/usr/bin/env bash\necho x >> '{}/calls'\necho 'E: Unable to locate package nope' >&2\nexit 100\n",
            dir.path().display()
        ),
    )
    .expect("writable");
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o755)).expect("chmod");
    let library = Path::new(env!("CARGO_MANIFEST_DIR")).join("scripts/lib/apt-install.sh");
    let output = Command::new("bash")
        .arg("-c")
        .arg(format!(
            "source '{}'; sudo=(); apt_get test install nope",
            library.display()
        ))
        .env(
            "PATH",
            format!(
                "{}:{}",
                dir.path().display(),
                std::env::var("PATH").unwrap_or_default()
            ),
        )
        .output()
        .expect("bash runs");
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert_eq!(output.status.code(), Some(100), "{stderr}");
    assert!(stderr.contains("Unable to locate package nope"), "{stderr}");
    let calls = std::fs::read_to_string(dir.path().join("calls")).expect("called");
    assert_eq!(calls.lines().count(), 1);
}
