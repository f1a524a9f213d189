//! The worker pool configs are evaluated, generated and linted on, the same
//! for every command: `jobs` threads (`None` or 0: one per CPU), each with a
//! stack deep enough for the parser and the evaluator, which recurse on
//! nested input (their depth limits turn runaway input into errors well
//! before the stack is used up).

use crate::error::RunError;

/// Stack of a worker thread.
pub const STACK_SIZE: usize = 256 << 20;

/// A pool of `jobs` workers; an error when the threads cannot be started.
pub fn pool(jobs: Option<usize>) -> Result<rayon::ThreadPool, RunError> {
    let mut b = rayon::ThreadPoolBuilder::new().stack_size(STACK_SIZE);
    if let Some(j) = jobs.filter(|&j| j > 0) {
        b = b.num_threads(j);
    }
    b.build().map_err(|e| RunError::Threads { reason: e.to_string() })
}
