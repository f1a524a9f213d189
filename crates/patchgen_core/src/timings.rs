//! Opt-in phase timings for measurements: when the binary calls
//! [`begin`] with a writer (`PATCHGEN_TIMINGS=1`, `crate::settings::timings_enabled`),
//! [`mark`] hands it `patchgen: timing: <ms since start> <phase>` (the
//! binary writes it on stderr), with the process's resident memory where Linux reports it
//! (`/proc/self/statm`: fresh memory costs the kernel's page zeroing).
//! Off by default and then costs one atomic load per mark;
//! `docs/performance.md` uses it to split a check's wall time.

use std::sync::OnceLock;
use std::time::Instant;

/// Where a timing line goes (the binary's stderr).
pub type Writer = fn(&str);

static START: OnceLock<Option<(Instant, Writer)>> = OnceLock::new();

fn start() -> Option<(Instant, Writer)> {
    *START.get_or_init(|| None)
}

/// Start the clock (call first thing in `main`) when `writer` is given:
/// every [`mark`] then hands it one line.
pub fn begin(writer: Option<Writer>) {
    let _ = START.set(writer.map(|w| (Instant::now(), w)));
}

/// Say how long after [`begin`] `phase` ended, if timings are on.
pub fn mark(phase: &str) {
    if let Some((t0, write)) = start() {
        let ms = t0.elapsed().as_secs_f64() * 1000.0;
        match resident_mib() {
            Some(mib) => write(&format!("patchgen: timing: {ms:8.1} {phase} (resident {mib:.1} MiB)")),
            None => write(&format!("patchgen: timing: {ms:8.1} {phase}")),
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
