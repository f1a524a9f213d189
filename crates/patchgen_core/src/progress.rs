//! What a library says while it works, without printing it: a long step's
//! progress (bytes of a conversion) and one-line notes about slow steps
//! ("fetching transformers==X into DIR (pip download)"). The library calls
//! a [`Progress`] it was given; the binary implements it (a progress bar
//! and stderr lines on a terminal), tests and embedders pass their own or
//! the silent default. Every method may be called from several threads at
//! once.

use std::sync::Arc;

/// Where a library's progress goes. Every method does nothing by default.
pub trait Progress: Send + Sync {
    /// A long step starts: `total` units (bytes) are to be done.
    fn start(&self, _total: u64) {}
    /// `n` more units are done.
    fn advance(&self, _n: u64) {}
    /// The long step is over (the progress display goes away).
    fn finish(&self) {}
    /// A slow step starts, said in one line for the user.
    fn note(&self, _message: &str) {}
}

/// Progress nobody watches.
pub struct Silent;

impl Progress for Silent {}

/// A shared [`Progress`] (cheap to clone; the default is [`Silent`]).
#[derive(Clone)]
pub struct Reporter(Arc<dyn Progress>);

impl Reporter {
    pub fn new(progress: impl Progress + 'static) -> Reporter {
        Reporter(Arc::new(progress))
    }
}

impl Default for Reporter {
    fn default() -> Reporter {
        Reporter::new(Silent)
    }
}

impl std::fmt::Debug for Reporter {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Reporter")
    }
}

impl std::ops::Deref for Reporter {
    type Target = dyn Progress;
    fn deref(&self) -> &(dyn Progress + 'static) {
        &*self.0
    }
}
