//! The reading layer's one use of threads: jobs (chunks of a list's items, batches of a
//! streamed file) converted on every core, the results handed back in the order the jobs were
//! given, so that nothing read depends on the threads.
//!
//! Why it is there: decoding is most of a big `plan`'s time. A `kubectl get pods -o json` of a
//! 150,000-pod cluster is 120 MB of items that convert independently; on one core their
//! conversion would take several times the rest of the plan.

use std::collections::BTreeMap;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::mpsc::{self, Receiver, SyncSender};
use std::sync::{Arc, Mutex};

use crate::stack::reader_thread;

/// Below this many items a list is converted on one thread: spawning costs more than it saves.
pub(super) const PARALLEL_ITEMS: usize = 4096;

/// The cores there are to convert on.
fn cores() -> usize {
    std::thread::available_parallelism().map_or(1, usize::from)
}

/// `convert` applied to `items`: on this thread for a short list, else to one chunk per core
/// on the threads of [`in_order`], the results in the order of the chunks.
pub(super) fn in_chunks<I: Sync, R: Send>(
    items: &[I],
    convert: impl Fn(&[I]) -> R + Sync,
) -> Vec<R> {
    let threads = cores();
    if threads < 2 || items.len() < PARALLEL_ITEMS {
        return vec![convert(items)];
    }
    let chunk_size = items.len().div_ceil(threads);
    let mut results = Vec::with_capacity(threads);
    in_order(
        |chunk: &[I], _: &mut ()| Some(convert(chunk)),
        |jobs| items.chunks(chunk_size).for_each(|chunk| jobs.send(chunk)),
        |result| results.push(result),
    );
    results
}

/// Runs `produce`, which gives jobs to [`Jobs::send`], while a thread per core converts them
/// with `convert` and a state of its own (an interner shared by its jobs). Each result goes to
/// `gather` in the order its job was sent, as soon as those before it are gathered, so that
/// what is converted is not held twice. A job that converts to `None` fails the run: the
/// threads convert nothing more, and the second value returned is `false`.
pub(super) fn in_order<J: Send, R: Send, S: Default, T>(
    convert: impl Fn(J, &mut S) -> Option<R> + Sync,
    produce: impl FnOnce(&mut Jobs<'_, J, R>) -> T,
    gather: impl FnMut(R),
) -> (T, bool) {
    let threads = cores();
    let failed = AtomicBool::new(false);
    let (convert, failed) = (&convert, &failed);
    std::thread::scope(|scope| {
        // At most one job waits per thread: the jobs given but not converted stay a few. The
        // threads alone hold the queue, so that sending fails instead of waiting for ever
        // should they all have stopped.
        let (queue, waiting) = mpsc::sync_channel(threads);
        let waiting = Arc::new(Mutex::new(waiting));
        let (done, converted) = mpsc::channel();
        for _ in 0..threads {
            let (waiting, done) = (Arc::clone(&waiting), done.clone());
            reader_thread()
                .spawn_scoped(scope, move || {
                    let mut state = S::default();
                    loop {
                        let job = waiting.lock().expect("a job queue").recv();
                        let Ok((index, job)) = job else {
                            return;
                        };
                        let result = if failed.load(Ordering::Relaxed) {
                            None
                        } else {
                            convert(job, &mut state)
                        };
                        if result.is_none() {
                            failed.store(true, Ordering::Relaxed);
                        }
                        if done.send((index, result)).is_err() {
                            return;
                        }
                    }
                })
                .expect("a conversion thread starts");
        }
        drop(waiting);
        drop(done);
        let mut jobs = Jobs {
            queue: Some(queue),
            sent: 0,
            converted,
            ordered: Ordered {
                next: 0,
                waiting: BTreeMap::new(),
                failed: false,
                gather: Box::new(gather),
            },
            stopped: failed,
        };
        let produced = produce(&mut jobs);
        // The queue closed: the threads finish the jobs sent and stop.
        jobs.queue = None;
        let Jobs {
            converted,
            mut ordered,
            sent,
            ..
        } = jobs;
        converted.iter().for_each(|result| ordered.add(result));
        let complete = !ordered.failed && ordered.next == sent;
        (produced, complete)
    })
}

/// The jobs given to the threads of [`in_order`], and their results so far.
pub(super) struct Jobs<'a, J, R> {
    queue: Option<SyncSender<(usize, J)>>,
    sent: usize,
    converted: Receiver<(usize, Option<R>)>,
    ordered: Ordered<'a, R>,
    stopped: &'a AtomicBool,
}

impl<J, R> Jobs<'_, J, R> {
    /// Gives a job to the threads (waiting while each has one waiting already).
    pub(super) fn send(&mut self, job: J) {
        let sent = self
            .queue
            .as_ref()
            .is_some_and(|queue| queue.send((self.sent, job)).is_ok());
        if sent {
            self.sent += 1;
        } else {
            self.ordered.failed = true;
        }
    }

    /// Gathers the results done so far; `false` once a job has failed (the rest are not worth
    /// giving).
    pub(super) fn keep_going(&mut self) -> bool {
        self.converted
            .try_iter()
            .for_each(|result| self.ordered.add(result));
        !self.ordered.failed && !self.stopped.load(Ordering::Relaxed)
    }
}

/// Results put back in the order of their jobs as they come in.
struct Ordered<'a, R> {
    next: usize,
    waiting: BTreeMap<usize, R>,
    failed: bool,
    gather: Box<dyn FnMut(R) + 'a>,
}

impl<R> Ordered<'_, R> {
    fn add(&mut self, (index, result): (usize, Option<R>)) {
        let Some(result) = result else {
            self.failed = true;
            return;
        };
        self.waiting.insert(index, result);
        while let Some(result) = self.waiting.remove(&self.next) {
            (self.gather)(result);
            self.next += 1;
        }
    }
}
