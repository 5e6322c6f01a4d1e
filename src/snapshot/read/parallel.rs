//! The reading layer's one use of threads: converting a list's items on every core, the
//! results in the order of the items whatever the threads.
//!
//! Why: decoding is most of a big `plan`'s time, and a `kubectl get pods -o json` of a
//! 150,000-pod cluster is 120 MB of items that convert independently.

use crate::stack::reader_thread;

/// Below this many items a list is converted on one thread: spawning costs more than it saves.
pub(super) const PARALLEL_ITEMS: usize = 4096;

/// `convert` applied to `items`: on this thread for a short list, else to one chunk per core
/// on threads of their own, the results in the order of the chunks, so that they do not
/// depend on the threads.
pub(super) fn in_chunks<I: Sync, R: Send>(
    items: &[I],
    convert: impl Fn(&[I]) -> R + Sync,
) -> Vec<R> {
    let threads = std::thread::available_parallelism().map_or(1, usize::from);
    if threads < 2 || items.len() < PARALLEL_ITEMS {
        return vec![convert(items)];
    }
    let chunk_size = items.len().div_ceil(threads);
    let convert = &convert;
    std::thread::scope(|scope| {
        let workers: Vec<_> = items
            .chunks(chunk_size)
            .map(|chunk| {
                reader_thread()
                    .spawn_scoped(scope, move || convert(chunk))
                    .expect("a conversion thread starts")
            })
            .collect();
        workers
            .into_iter()
            .map(|worker| worker.join().expect("a conversion thread does not panic"))
            .collect()
    })
}
