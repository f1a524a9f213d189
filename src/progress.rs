//! The terminal face of the libraries' progress
//! (`patchgen_core::progress::Progress`): a conversion's bytes as an
//! `indicatif` bar on stderr (bytes, throughput, time left) when stderr is
//! a terminal, nothing otherwise; notes about slow steps as one stderr line
//! each, always (pipes and CI logs keep them).

use std::io::IsTerminal;
use std::sync::Mutex;

use indicatif::{ProgressBar, ProgressStyle};
use patchgen_core::progress::Progress;

/// Progress drawn on stderr.
pub struct Terminal {
    /// Draw bars (stderr is a terminal).
    draw: bool,
    /// The bar of the step under way.
    bar: Mutex<Option<ProgressBar>>,
}

impl Terminal {
    /// Bars when stderr is a terminal.
    pub fn on_stderr() -> Terminal {
        Terminal { draw: std::io::stderr().is_terminal(), bar: Mutex::new(None) }
    }

    fn bar(&self) -> std::sync::MutexGuard<'_, Option<ProgressBar>> {
        self.bar.lock().unwrap_or_else(|e| e.into_inner())
    }
}

impl Progress for Terminal {
    fn start(&self, total: u64) {
        let bar = if self.draw { ProgressBar::new(total) } else { ProgressBar::hidden() };
        bar.set_style(
            ProgressStyle::with_template("{bar:40} {bytes}/{total_bytes} {binary_bytes_per_sec} eta {eta}")
                .unwrap_or_else(|_| ProgressStyle::default_bar()),
        );
        *self.bar() = Some(bar);
    }

    fn advance(&self, n: u64) {
        if let Some(bar) = self.bar().as_ref() {
            bar.inc(n);
        }
    }

    fn finish(&self) {
        if let Some(bar) = self.bar().take() {
            bar.finish_and_clear();
        }
    }

    fn note(&self, message: &str) {
        eprintln!("{message}");
    }
}
