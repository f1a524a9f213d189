//! `patchgen clean`: remove the project's result cache (`patchgen_cache`).
//! Returns a [`CleanReport`].

use std::io;
use std::path::PathBuf;

use serde::Serialize;

use crate::args::CleanArgs;
use crate::printer::{ExitStatus, Printer, Report, fields};
use crate::session::{Fatal, Session};
use patchgen_core::settings::Overrides;
use patchgen_diagnostics::Diagnostic;

/// What `clean` removed.
#[derive(Debug, Serialize)]
pub struct CleanReport {
    /// The cache directory.
    pub dir: PathBuf,
    /// Entries removed.
    pub entries: usize,
    /// Whether the directory itself is gone (something not ours keeps it).
    pub removed_dir: bool,
}

pub fn run(args: &CleanArgs) -> ExitStatus {
    let overrides = Overrides { format: args.format.format, ..Overrides::default() };
    let session = match Session::start_in_project("clean", &overrides, &args.project) {
        Ok(s) => s,
        Err(status) => return status,
    };
    let dir = session.settings().cache_path(&session.cwd, &session.project().root);
    match patchgen_cache::clean(&dir) {
        Ok(c) => session.finish(&CleanReport { dir: c.dir, entries: c.entries, removed_dir: c.removed_dir }),
        Err(e) => session.finish(&Fatal::new("clean", e.to_string())),
    }
}

impl Report for CleanReport {
    fn command(&self) -> &'static str {
        "clean"
    }

    fn diagnostics(&self) -> Vec<&Diagnostic> {
        Vec::new()
    }

    fn json_fields(&self) -> serde_json::Map<String, serde_json::Value> {
        fields(self)
    }

    fn text(&self, p: &mut Printer) -> io::Result<()> {
        let plural = if self.entries == 1 { "entry" } else { "entries" };
        p.out(&format!("Removed {} cache {plural} from {}\n", self.entries, self.dir.display()))
    }

    fn exit_status(&self) -> ExitStatus {
        ExitStatus::Success
    }
}
