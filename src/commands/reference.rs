//! `patchgen reference <m>`: the arguments, and `patchgen_core::reference`'s
//! report printed through the one printer.

use patchgen_core::reference::{self, Options, Report as ReferenceReport, Request};

use crate::args::{FormatArg, ProjectArg};
use crate::printer::{ExitStatus, PlainReport};
use crate::session::Session;

/// Write a model's upstream sources from the pinned wheel, RECORD-verified
///
/// Files go to `<reference-dir>/<m>/v<PIN>/` (default `.agents_workspace/hf_reference`);
/// `--old A --new B` writes both versions, a unified diff and a per-symbol summary.
#[derive(clap::Args, Debug, Clone)]
#[command(after_help = "\
Examples:
  patchgen reference qwen3                   modeling_qwen3.py of the pinned version
  patchgen reference qwen2_5vl               a project model directory (its config's source_module decides)
  patchgen reference qwen3_vl --pin 5.16.1   another version
  patchgen reference qwen3 --old 5.9.0 --new 5.16.1   both, a .diff between them and a summary
  patchgen reference llama --also configuration,modular

Files come from the version's wheel (cached in ${PATCHGEN_CACHE:-<project root>/.cache}/wheels,
fetched with pip when missing) and are checked against the wheel's RECORD.")]
pub struct ReferenceArgs {
    /// The HF module name (qwen2_5_vl), a project model directory (qwen2_5vl) or a config module.
    pub model: String,
    /// The upstream version (default: the project's pin).
    #[arg(long, value_name = "V", conflicts_with_all = ["old", "new"])]
    pub pin: Option<String>,
    /// With --new: the version to compare from.
    #[arg(long, value_name = "V", requires = "new")]
    pub old: Option<String>,
    /// With --old: the version to compare to.
    #[arg(long, value_name = "V", requires = "old")]
    pub new: Option<String>,
    /// More files of the model's directory, by kind: configuration, processing, image_processing,
    /// video_processing, modular, … (comma-separated).
    #[arg(long, value_name = "KINDS", value_delimiter = ',')]
    pub also: Vec<String>,
    /// Never run pip: versions must already be in the wheel cache.
    #[arg(long)]
    pub no_download: bool,
    /// The distribution a version number names.
    #[arg(long, value_name = "NAME", default_value = "transformers")]
    pub package: String,
    #[command(flatten)]
    pub project: ProjectArg,
    #[command(flatten)]
    pub format: FormatArg,
}

impl ReferenceArgs {
    pub fn request(&self) -> Request {
        Request {
            model: self.model.clone(),
            pin: self.pin.clone(),
            old: self.old.clone(),
            new: self.new.clone(),
            also: self.also.clone(),
            no_download: self.no_download,
            package: self.package.clone(),
        }
    }
}

/// `patchgen reference`: run it and print the report.
pub fn run(args: &ReferenceArgs) -> ExitStatus {
    let session = match Session::start("reference", args.format.format) {
        Ok(s) => s,
        Err(status) => return status,
    };
    let opts = Options {
        args: args.request(),
        cwd: args.project.project.as_ref().map_or_else(|| session.cwd.clone(), |d| session.cwd.join(d)),
        cache_dir: None,
        env: session.env.clone(),
        reporter: session.reporter(),
    };
    session.finish_with(reference::run(&opts))
}

impl PlainReport for ReferenceReport {
    const COMMAND: &'static str = "reference";
    fn render(&self) -> String {
        reference::render_text(self)
    }
}
