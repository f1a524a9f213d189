//! Opt-in phase timings for measurements: with `PATCHGEN_TIMINGS=1` in the
//! environment, [`mark`] prints `patchgen: timing: <ms since start> <phase>`
//! on stderr. Off by default and then costs one atomic load per mark;
//! `docs/performance.md` uses it to split a check's wall time.

use std::sync::OnceLock;
use std::time::Instant;

fn start() -> Option<Instant> {
    static START: OnceLock<Option<Instant>> = OnceLock::new();
    *START.get_or_init(|| {
        std::env::var_os("PATCHGEN_TIMINGS").is_some_and(|v| !v.is_empty() && v != "0").then(Instant::now)
    })
}

/// Start the clock (call first thing in `main`), if timings are on.
pub fn begin() {
    start();
}

/// Print how long after [`begin`] `phase` ended, if timings are on.
pub fn mark(phase: &str) {
    if let Some(t0) = start() {
        eprintln!("patchgen: timing: {:8.1} {phase}", t0.elapsed().as_secs_f64() * 1000.0);
    }
}
