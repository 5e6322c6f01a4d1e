//! The hash maps of the readers and the planner: std's maps with foldhash, the hasher that
//! hashbrown (std's map inside) uses by default, instead of std's SipHash. The keys are names,
//! labels and indices from the cluster, hashed millions of times at 150,000 pods (a fifth of
//! `plan()`'s samples were SipHash); resistance to crafted collisions matters little for a job
//! that reads its own cluster, and foldhash keeps a per-process random seed all the same.
//! Nothing decides by a map's order, which was already random from run to run.

pub type HashMap<K, V> = std::collections::HashMap<K, V, foldhash::fast::RandomState>;
pub type HashSet<T> = std::collections::HashSet<T, foldhash::fast::RandomState>;
