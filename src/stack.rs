//! Threads whose stack holds the deepest input the file readers take. The YAML and JSON decoders
//! recurse once per level of nesting or more, and each reader caps the nesting (snapshots at
//! [`crate::snapshot::MAX_DEPTH`] levels, policies at fewer); reading on such a thread keeps the
//! cap, not the caller's stack, in charge.

/// The stack of every thread that decodes input text. serde-saphyr's decoder takes about
/// 22 KiB a level in a debug build (and the positioned tree of policies about twice that): a
/// snapshot nested [`crate::snapshot::MAX_DEPTH`] levels needs about 2.5 MiB there (measured
/// with `ulimit -s`), more than a spawned thread's default 2 MiB. The stack is address space,
/// not memory: only the pages a read touches are resident.
pub const READER_STACK_BYTES: usize = 16 << 20;

/// A thread that decodes input text: its stack holds the deepest input.
pub fn reader_thread() -> std::thread::Builder {
    std::thread::Builder::new().stack_size(READER_STACK_BYTES)
}

/// `read` on a thread with a stack of [`READER_STACK_BYTES`], whatever the caller's; a panic in
/// it goes on in the caller.
pub fn on_reader_stack<R: Send>(read: impl FnOnce() -> R + Send) -> R {
    std::thread::scope(|scope| {
        reader_thread()
            .spawn_scoped(scope, read)
            .expect("a reader thread starts")
            .join()
            .unwrap_or_else(|panic| std::panic::resume_unwind(panic))
    })
}
