//! What a run costs the machine, and whether the memory it needs fits the container.
//!
//! A CronJob killed for memory prints no report; so `run` estimates the memory planning the
//! cluster it just listed needs, compares it with the container's cgroup limit, and stops with
//! an error in its report when the limit is too small (docs/design.md §5: a run that cannot plan says
//! why). `plan` and `run` log their own peak memory and CPU time when they finish, which is how
//! the per-pod figures below were measured (BENCHMARKS.md, "Memory as a budget").

use std::path::Path;

/// Memory a run needs before the cluster: the binary, the runtime, the clients, the policy.
pub const BASE_BYTES: u64 = 24 << 20;
/// Memory per listed pod: its planner record and its share of the plan's working state. A run
/// against the lab's generated 150,000 pods on 5,000 nodes peaks at 209–213 MiB since list
/// pages are decoded item by item (263–272 MiB before, 504 MiB before the interned labels, typed
/// resources and slim pod record), 1.0 KiB per pod after the base and the nodes; `plan` grows
/// by 1.21 KiB per pod from 1,500 to 15,000 pods (BENCHMARKS.md, "Memory as a budget" and "A
/// live run at 150,000 pods"). Kept above both with margin: pods richer than the generator's
/// (more labels, containers, affinity terms) take more.
pub const PER_POD_BYTES: u64 = 1792;
/// Memory per listed node (its record, labels and the plan's per-node indexes).
pub const PER_NODE_BYTES: u64 = 8 << 10;

/// The memory a run planning `nodes` and `pods` needs at its peak, by the measured rates.
pub fn estimate(nodes: usize, pods: usize) -> u64 {
    BASE_BYTES + PER_POD_BYTES * pods as u64 + PER_NODE_BYTES * nodes as u64
}

/// A cluster too big for the memory the container may use.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error(
    "planning {nodes} nodes and {pods} pods needs about {} MiB, more than the container's \
     memory limit of {} MiB; raise the limit (the chart's resources.limits.memory) to at \
     least {} MiB",
    mib(*.needed), mib(*.limit), mib(*.needed)
)]
pub struct OverBudget {
    pub nodes: usize,
    pub pods: usize,
    pub needed: u64,
    pub limit: u64,
}

fn mib(bytes: u64) -> u64 {
    bytes.div_ceil(1 << 20)
}

/// `Err` when planning `nodes` and `pods` would need more than `limit` (no limit: `Ok`).
pub fn check(nodes: usize, pods: usize, limit: Option<u64>) -> Result<(), OverBudget> {
    let needed = estimate(nodes, pods);
    match limit {
        Some(limit) if needed > limit => Err(OverBudget {
            nodes,
            pods,
            needed,
            limit,
        }),
        _ => Ok(()),
    }
}

/// The memory limit of this process's cgroup: cgroup v2's `memory.max`, else v1's
/// `memory.limit_in_bytes`. `None` when unlimited or unknown (not Linux, no cgroup mounted).
pub fn memory_limit() -> Option<u64> {
    limit_in(Path::new("/sys/fs/cgroup"))
}

fn limit_in(root: &Path) -> Option<u64> {
    let read = |file: &str| std::fs::read_to_string(root.join(file)).ok();
    let limit = match read("memory.max") {
        Some(text) => text.trim().parse::<u64>().ok()?,
        None => read("memory/memory.limit_in_bytes")?
            .trim()
            .parse::<u64>()
            .ok()?,
    };
    // cgroup v1 writes "no limit" as the largest page-aligned i64.
    (limit < 1 << 62).then_some(limit)
}

/// Peak resident memory and CPU time of this process so far.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Used {
    pub peak_rss_bytes: u64,
    pub cpu_seconds: f64,
}

/// What this process has used, from `/proc/self` (`None` elsewhere).
pub fn used() -> Option<Used> {
    let status = std::fs::read_to_string("/proc/self/status").ok()?;
    let stat = std::fs::read_to_string("/proc/self/stat").ok()?;
    Some(Used {
        peak_rss_bytes: peak_rss(&status)?,
        cpu_seconds: cpu_seconds(&stat)?,
    })
}

/// `VmHWM:  123456 kB`: the high-water mark of resident memory.
fn peak_rss(status: &str) -> Option<u64> {
    let line = status.lines().find(|line| line.starts_with("VmHWM:"))?;
    let kib: u64 = line.split_whitespace().nth(1)?.parse().ok()?;
    Some(kib * 1024)
}

/// User and system time (fields 14 and 15, in clock ticks) from `/proc/self/stat`. Ticks are
/// 1/100 s (`USER_HZ`, fixed at 100 in Linux's user ABI on every architecture it runs on).
fn cpu_seconds(stat: &str) -> Option<f64> {
    // The command name (field 2) is in parentheses and may hold spaces: count after it.
    let after_name = &stat[stat.rfind(')')? + 1..];
    let mut fields = after_name.split_whitespace().skip(11);
    let user: u64 = fields.next()?.parse().ok()?;
    let system: u64 = fields.next()?.parse().ok()?;
    Some((user + system) as f64 / 100.0)
}

/// Logs what this process has used, at the end of a command.
pub fn log_used() {
    if let Some(used) = used() {
        tracing::info!(
            peak_rss_bytes = used.peak_rss_bytes,
            peak_rss_mib = mib(used.peak_rss_bytes),
            cpu_seconds = used.cpu_seconds,
            "resources used"
        );
    }
}

/// Leaves what a command read to the end of the process, which hands all of its memory back
/// at once, instead of freeing it one allocation at a time: for the snapshot of 150,000 pods
/// that `plan` reads, freeing took 0.2–0.4 s of 1.7–2.4 s of CPU (measured 2026-11-29, release
/// builds with and without it, alternating). The one place the tool does this; only for what a
/// command holds until it returns to `main`.
pub fn leave_to_exit<T>(read: T) {
    std::mem::forget(read);
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn peak_memory_and_cpu_time_are_read_from_procfs_text() {
        let status = "Name:\tvsphere\nVmPeak:\t 900 kB\nVmHWM:\t  2048 kB\nVmRSS:\t 1024 kB\n";
        assert_eq!(peak_rss(status), Some(2048 * 1024));
        // pid (comm) state ppid pgrp session tty tpgid flags minflt cminflt majflt cmajflt utime stime
        let stat = "42 (a (b) c) R 1 42 42 0 -1 4194304 10 0 0 0 250 50 0 0 20 0";
        assert_eq!(cpu_seconds(stat), Some(3.0));
        assert!(used().is_some_and(|used| used.peak_rss_bytes > 0));
    }

    #[test]
    fn a_limit_is_read_from_cgroup_v2_or_v1_and_unlimited_is_none() {
        let root = tempfile::tempdir().expect("a temporary directory");
        assert_eq!(limit_in(root.path()), None);
        std::fs::create_dir(root.path().join("memory")).expect("a directory");
        std::fs::write(
            root.path().join("memory/memory.limit_in_bytes"),
            "9223372036854771712\n",
        )
        .expect("writable");
        assert_eq!(limit_in(root.path()), None, "v1's unlimited");
        std::fs::write(
            root.path().join("memory/memory.limit_in_bytes"),
            "1048576\n",
        )
        .expect("writable");
        assert_eq!(limit_in(root.path()), Some(1 << 20));
        std::fs::write(root.path().join("memory.max"), "max\n").expect("writable");
        assert_eq!(limit_in(root.path()), None, "v2's unlimited wins over v1");
        std::fs::write(root.path().join("memory.max"), "536870912\n").expect("writable");
        assert_eq!(limit_in(root.path()), Some(512 << 20));
    }

    #[test]
    fn a_cluster_over_the_limit_is_refused_naming_its_size_the_need_and_the_limit() {
        let limit = Some(512 << 20);
        assert_eq!(check(500, 15_000, limit), Ok(()));
        // The chart's default limit holds the size its README and docs/commands.md promise.
        assert_eq!(check(8_200, 245_000, Some(512 << 20)), Ok(()));
        assert_eq!(check(500, 15_000, None), Ok(()));
        let error = check(50_000, 1_000_000, limit).expect_err("too big");
        assert_eq!(error.needed, estimate(50_000, 1_000_000));
        let message = error.to_string();
        for expected in [
            "50000 nodes",
            "1000000 pods",
            "512 MiB",
            "resources.limits.memory",
        ] {
            assert!(message.contains(expected), "{expected:?} in {message}");
        }
    }
}
