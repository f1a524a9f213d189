//! Cancelling a conversion: the binary's SIGINT/SIGTERM handler calls
//! [`request`] (one atomic store, safe in a signal handler); the copy loops
//! of `convert` and `remote::transfer` poll [`interrupted`] between pieces
//! and return an error, which removes the temporary directory (and aborts a
//! multipart upload) on the way out. The library installs no handler.

use std::sync::atomic::{AtomicI32, Ordering};

static SIGNAL: AtomicI32 = AtomicI32::new(0);

/// Ask the running conversion to stop (`signal`: what the process got).
pub fn request(signal: i32) {
    SIGNAL.store(signal, Ordering::SeqCst);
}

/// The signal a stop was requested for, if one was.
pub fn requested() -> Option<i32> {
    Some(SIGNAL.load(Ordering::SeqCst)).filter(|&s| s != 0)
}

/// An error once a stop was requested.
pub(crate) fn interrupted() -> Result<(), String> {
    match requested() {
        Some(s) => Err(format!("interrupted (signal {s}): the partial output was removed")),
        None => Ok(()),
    }
}
