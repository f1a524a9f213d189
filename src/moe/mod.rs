//! `patchgen moe`: an MoE checkpoint's expert layout, read from safetensors
//! headers, and its offline conversion between the per-expert and the
//! transformers-v5 fused layouts.
//!
//! - `header`: one safetensors header, validated (located errors);
//! - `checkpoint`: an index and its shards, or one file;
//! - `config`: the MoE dimensions of `config.json`;
//! - `layout`: expert modules and their family (A/A'/B/C/D/E);
//! - `recipes`: which upstream conversion recipe applies to a `model_type`
//!   (static reading of `transformers/conversion_mapping.py`; shared with
//!   lint rule PG401);
//! - `modeling`: whether a modeling module's classes hold fused expert
//!   parameters (AST; shared with PG401);
//! - `inspect`: the `moe inspect` report; `plan` + `convert`: `moe convert`.
pub mod checkpoint;
pub mod config;
pub mod convert;
pub mod header;
pub mod inspect;
pub mod layout;
pub mod modeling;
pub mod plan;
pub mod recipes;
pub mod report;

use std::path::PathBuf;

use crate::cli::{ExitStatus, Format, Printer};
use crate::diagnostics::{Diagnostic, Location, Severity};

const EXAMPLES: &str = "\
Examples:
  patchgen moe inspect ./Qwen3-30B-A3B                   families, completeness, recipe (headers only)
  patchgen moe inspect ckpt --upstream 5.16.1 --format json
  patchgen moe convert ./ckpt ./ckpt-fused --verify      per-expert/transposed/stacked -> v5 fused
  patchgen moe convert ./fused ./split --to per-expert   the reverse

Exit codes: 0 ok, 1 a problem found (incomplete or malformed checkpoint, refused conversion), 2 usage error.";

/// MoE checkpoints: inspect the expert layout from safetensors headers, convert it offline
#[derive(clap::Args, Debug)]
#[command(after_help = EXAMPLES)]
pub struct MoeArgs {
    #[command(subcommand)]
    pub command: MoeCommand,
}

#[derive(clap::Subcommand, Debug)]
pub enum MoeCommand {
    /// Expert layout family, completeness and the upstream recipe, from safetensors headers only
    Inspect(InspectArgs),
    /// Convert between per-expert and v5 fused expert layouts, streaming
    Convert(ConvertArgs),
}

#[derive(clap::Args, Debug)]
pub struct InspectArgs {
    /// A checkpoint directory (with model.safetensors.index.json or model.safetensors) or one .safetensors file
    pub checkpoint: PathBuf,
    /// The model's config.json (default: the one next to the checkpoint)
    #[arg(long)]
    pub config: Option<PathBuf>,
    /// The transformers whose recipes apply: a directory, a .whl or a version (default: the one on PYTHONPATH / in the virtualenv)
    #[arg(long)]
    pub upstream: Option<String>,
    /// Output format [default: text]
    #[arg(long, value_enum, value_name = "FORMAT")]
    pub format: Option<Format>,
}

#[derive(clap::Args, Debug)]
pub struct ConvertArgs {
    /// The source checkpoint (directory or .safetensors file)
    pub src: PathBuf,
    /// The new checkpoint directory (must not exist, or be empty)
    pub dst: PathBuf,
    /// Target layout
    #[arg(long, value_enum, default_value_t = plan::Target::Fused)]
    pub to: plan::Target,
    /// What square fused tensors are, when their shape cannot tell
    #[arg(long, value_enum)]
    pub source_layout: Option<plan::SourceLayout>,
    /// Maximum shard size (HF's max_shard_size: 5GB, 500MB, 2GiB)
    #[arg(long, default_value = "5GB")]
    pub shard_size: String,
    /// Output shards written in parallel
    #[arg(short = 'j', long)]
    pub jobs: Option<usize>,
    /// Re-read the output and compare every tensor with its sources
    #[arg(long)]
    pub verify: bool,
    /// Output format [default: text]
    #[arg(long, value_enum, value_name = "FORMAT")]
    pub format: Option<Format>,
}

/// Run one `moe` subcommand and print its report.
pub fn run(args: MoeArgs) -> ExitStatus {
    let cwd = std::env::current_dir().unwrap_or_default();
    match args.command {
        MoeCommand::Inspect(a) => {
            let mut printer = Printer::new(a.format.unwrap_or_default());
            let upstream = match &a.upstream {
                None => inspect::UpstreamArg::FromEnv,
                Some(u) => {
                    let root = crate::project::Project::find(&cwd).map(|p| p.root).unwrap_or_else(|_| cwd.clone());
                    let cache = crate::survey::source::WheelCache {
                        dir: crate::survey::source::WheelCache::default_dir(&root),
                        package: "transformers".into(),
                        download: true,
                    };
                    match crate::survey::source::resolve(u, &cwd, &cache) {
                        Ok(up) => inspect::UpstreamArg::Given(up),
                        Err(e) => {
                            let w = printer.err(&format!("patchgen moe inspect: error: --upstream {e}\n"));
                            return printer.finish(w, ExitStatus::Error);
                        }
                    }
                }
            };
            match inspect::inspect(&a.checkpoint, a.config.as_deref(), upstream, &cwd) {
                Ok(r) => printer.print(&r),
                Err(e) => {
                    let w = printer.err(&format!("patchgen moe inspect: error: {e}\n"));
                    printer.finish(w, ExitStatus::Failure)
                }
            }
        }
        MoeCommand::Convert(a) => {
            let mut printer = Printer::new(a.format.unwrap_or_default());
            let shard_size = match convert::parse_size(&a.shard_size) {
                Ok(s) => s,
                Err(e) => {
                    let w = printer.err(&format!("patchgen moe convert: error: --shard-size {e}\n"));
                    return printer.finish(w, ExitStatus::Error);
                }
            };
            let opts = convert::ConvertOptions {
                to: a.to,
                source_layout: a.source_layout,
                shard_size,
                jobs: a.jobs,
                verify: a.verify,
                progress: convert::stderr_is_terminal(),
            };
            match convert::convert(&a.src, &a.dst, &opts) {
                Ok(r) => printer.print(&r),
                Err(e) => {
                    let w = printer.err(&format!("patchgen moe convert: error: {e}\n"));
                    printer.finish(w, ExitStatus::Failure)
                }
            }
        }
    }
}

impl crate::cli::Report for inspect::InspectReport {
    fn command(&self) -> &'static str {
        "moe inspect"
    }

    fn diagnostics(&self) -> Vec<&Diagnostic> {
        self.diagnostics.iter().collect()
    }

    fn json_fields(&self) -> serde_json::Map<String, serde_json::Value> {
        crate::cli::printer::fields(self)
    }

    fn text(&self, p: &mut Printer) -> std::io::Result<()> {
        p.out(&report::inspect_text(self))
    }

    fn exit_status(&self) -> ExitStatus {
        ExitStatus::failure_if(self.has_problems())
    }
}

impl crate::cli::Report for convert::ConvertReport {
    fn command(&self) -> &'static str {
        "moe convert"
    }

    fn diagnostics(&self) -> Vec<&Diagnostic> {
        Vec::new()
    }

    fn json_fields(&self) -> serde_json::Map<String, serde_json::Value> {
        crate::cli::printer::fields(self)
    }

    fn text(&self, p: &mut Printer) -> std::io::Result<()> {
        p.out(&report::convert_text(self))
    }

    fn exit_status(&self) -> ExitStatus {
        ExitStatus::Success
    }
}

/// The findings of an inspect report as diagnostics (`PGM…`,
/// docs/diagnostics.md), located at the checkpoint.
pub fn diagnostics_of(r: &inspect::InspectReport, at: &std::path::Path) -> Vec<Diagnostic> {
    let mut out = Vec::new();
    let mk = |code: &str, name: &str, sev: Severity, msg: String, help: &str| {
        let mut d = Diagnostic::new(code, name, sev, msg);
        d.location = Some(Location::file(at));
        d.help = Some(help.to_string());
        d
    };
    for g in &r.groups {
        for p in &g.problems {
            out.push(mk(
                "PGM001",
                "moe-incomplete",
                Severity::Error,
                format!("{}.experts: {p}", g.prefix),
                "a converter cannot fix missing or mismatched experts: fetch the complete checkpoint",
            ));
        }
    }
    for p in &r.layer_problems {
        out.push(mk(
            "PGM001",
            "moe-incomplete",
            Severity::Error,
            p.clone(),
            "check config.json's dense-layer fields against the checkpoint",
        ));
    }
    for g in &r.groups {
        for a in &g.ambiguous {
            out.push(mk(
                "PGM002",
                "moe-ambiguous-layout",
                Severity::Warning,
                format!("{}.experts: {a}", g.prefix),
                "converters must be told the layout (`moe convert --source-layout`), never guess",
            ));
        }
    }
    for v in &r.verdict {
        if v.contains("would not load") || v.contains("will not load") || v.contains("random experts") {
            out.push(mk(
                "PGM003",
                "moe-not-loaded",
                Severity::Warning,
                v.clone(),
                "convert the checkpoint (`patchgen moe convert`) or register a checkpoint converter",
            ));
        }
    }
    out
}
