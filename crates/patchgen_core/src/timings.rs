//! Opt-in phase timings for measurements: when the binary calls
//! [`begin`] with `true` (`PATCHGEN_TIMINGS=1`, `crate::settings::timings_enabled`),
//! [`mark`] prints `patchgen: timing: <ms since start> <phase>`
//! on stderr. Off by default and then costs one atomic load per mark;
//! `docs/performance.md` uses it to split a check's wall time.

use std::sync::OnceLock;
use std::time::Instant;

static START: OnceLock<Option<Instant>> = OnceLock::new();

fn start() -> Option<Instant> {
    *START.get_or_init(|| None)
}

/// Start the clock (call first thing in `main`) when `enabled`; the only
/// diagnostics output a library writes itself, and only when asked.
pub fn begin(enabled: bool) {
    let _ = START.set(enabled.then(Instant::now));
}

/// Print how long after [`begin`] `phase` ended, if timings are on.
pub fn mark(phase: &str) {
    if let Some(t0) = start() {
        eprintln!("patchgen: timing: {:8.1} {phase}", t0.elapsed().as_secs_f64() * 1000.0);
    }
}
