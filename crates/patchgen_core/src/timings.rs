//! Opt-in phase timings for measurements: when the binary calls
//! [`begin`] with `true` (`PATCHGEN_TIMINGS=1`, `crate::settings::timings_enabled`),
//! [`mark`] prints `patchgen: timing: <ms since start> <phase>`
//! on stderr, with the process's resident memory where Linux reports it
//! (`/proc/self/statm`: fresh memory costs the kernel's page zeroing).
//! Off by default and then costs one atomic load per mark;
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
        let ms = t0.elapsed().as_secs_f64() * 1000.0;
        match resident_mib() {
            Some(mib) => eprintln!("patchgen: timing: {ms:8.1} {phase} (resident {mib:.1} MiB)"),
            None => eprintln!("patchgen: timing: {ms:8.1} {phase}"),
        }
    }
}

/// Resident memory in MiB (Linux; `None` elsewhere), assuming 4 KiB pages
/// as `statm` counts them.
fn resident_mib() -> Option<f64> {
    let statm = std::fs::read_to_string("/proc/self/statm").ok()?;
    let pages: f64 = statm.split_whitespace().nth(1)?.parse().ok()?;
    Some(pages * 4096.0 / (1024.0 * 1024.0))
}
