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
//! - `inspect`: the `moe inspect` report; `plan` + `convert`: `moe convert`;
//! - `remote`: both on `hf://`, `s3://`, `gs://`, `az://`, `http(s)://`.
pub mod checkpoint;
pub mod config;
pub mod convert;
pub mod header;
pub mod inspect;
pub mod layout;
pub mod modeling;
pub mod plan;
pub mod recipes;
pub mod remote;
pub mod report;

use std::path::PathBuf;

use crate::cli::{ExitStatus, Format, Printer};
use crate::diagnostics::codes::Code;
use crate::diagnostics::{Diagnostic, Location, Severity};

/// The codes of `moe inspect`'s findings (`PGM…`; listed in
/// docs/diagnostics.md, a test keeps the two equal).
pub const INCOMPLETE: Code = Code {
    code: "PGM001",
    name: "moe-incomplete",
    severity: Severity::Error,
    summary: "an expert module lacks experts or a projection, or its shapes, dtypes or layers disagree with config.json",
};
pub const AMBIGUOUS_LAYOUT: Code = Code {
    code: "PGM002",
    name: "moe-ambiguous-layout",
    severity: Severity::Warning,
    summary: "a fused expert tensor is square per expert: its layout cannot be told by shape",
};
pub const NOT_LOADED: Code = Code {
    code: "PGM003",
    name: "moe-not-loaded",
    severity: Severity::Warning,
    summary: "the upstream recipe (or a missing converter) would leave these expert keys unloaded: random experts",
};
pub const ALL_CODES: [Code; 3] = [INCOMPLETE, AMBIGUOUS_LAYOUT, NOT_LOADED];

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

const INSPECT_EXAMPLES: &str = "\
Examples:
  patchgen moe inspect ./Qwen3-30B-A3B                    a checkpoint directory (index or model.safetensors)
  patchgen moe inspect ckpt --upstream 5.16.1             the recipe of that transformers version (wheel cache, pip)
  patchgen moe inspect model-00001-of-00016.safetensors --config config.json
  patchgen moe inspect ckpt --format json

Exit codes: 0 ok, 1 an incomplete or mismatched module (PGM001) or a malformed checkpoint, 2 usage error.";

const CONVERT_EXAMPLES: &str = "\
Examples:
  patchgen moe convert ./ckpt ./ckpt-fused --verify           per-expert, mixtral, stacked, transposed -> v5 fused
  patchgen moe convert ./fused ./split --to per-expert        the reverse (what HF exports)
  patchgen moe convert ./vl ./vl-fused --source-layout transposed   square experts: say what they are
  patchgen moe convert ./ckpt ./out --shard-size 2GB -j 2

Exit codes: 0 written, 1 refused or failed (nothing is left at DST), 2 usage error.";

#[derive(clap::Args, Debug)]
#[command(after_help = INSPECT_EXAMPLES)]
pub struct InspectArgs {
    /// A checkpoint directory (with model.safetensors.index.json or model.safetensors), one .safetensors file, or a URL: hf://ORG/REPO[@REV][/DIR], s3://, gs://, az://, http(s)://
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
    /// Touch no network: hf:// resolves to the local Hub cache, other URLs are errors
    #[arg(long)]
    pub offline: bool,
    /// Also print the bytes fetched from a remote checkpoint
    #[arg(short, long)]
    pub verbose: bool,
}

#[derive(clap::Args, Debug)]
#[command(after_help = CONVERT_EXAMPLES)]
pub struct ConvertArgs {
    /// The source checkpoint (directory, .safetensors file, or URL: hf://, s3://, gs://, az://, http(s)://)
    pub src: PathBuf,
    /// The new checkpoint: a directory or a bucket prefix (s3://, gs://, az://); must not exist, or be empty
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
    /// Touch no network: hf:// resolves to the local Hub cache, other URLs are errors
    #[arg(long)]
    pub offline: bool,
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
            let result = match remote::locate(&a.checkpoint, a.offline) {
                Ok(remote::Location::Local(p)) => inspect::inspect(&p, a.config.as_deref(), upstream, &cwd),
                Ok(remote::Location::Remote(r)) => {
                    remote::inspect(&r, a.config.as_deref(), upstream, &cwd).map_err(|e| e.to_string())
                }
                Err(e) => Err(e.to_string()),
            };
            match result {
                Ok(mut r) => {
                    if !a.verbose {
                        r.transfer_note = None;
                    }
                    printer.print(&r)
                }
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
            let ends = remote::locate(&a.src, a.offline).and_then(|s| Ok((s, remote::locate(&a.dst, a.offline)?)));
            let result = match ends {
                Ok((remote::Location::Local(s), remote::Location::Local(d))) => convert::convert(&s, &d, &opts),
                Ok((s, d)) => remote::transfer::convert(&s, &d, &a.src, &a.dst, &opts).map_err(|e| e.to_string()),
                Err(e) => Err(e.to_string()),
            };
            match result {
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
    let mk = |code: Code, msg: String, help: &str| {
        let mut d = code.diagnostic(msg);
        d.location = Some(Location::file(at));
        d.help = Some(help.to_string());
        d
    };
    for g in &r.groups {
        for p in &g.problems {
            out.push(mk(
                INCOMPLETE,
                format!("{}.experts: {p}", g.prefix),
                "a converter cannot fix missing or mismatched experts: fetch the complete checkpoint",
            ));
        }
    }
    for p in &r.layer_problems {
        out.push(mk(INCOMPLETE, p.clone(), "check config.json's dense-layer fields against the checkpoint"));
    }
    for g in &r.groups {
        for a in &g.ambiguous {
            out.push(mk(
                AMBIGUOUS_LAYOUT,
                format!("{}.experts: {a}", g.prefix),
                "converters must be told the layout (`moe convert --source-layout`), never guess",
            ));
        }
    }
    for v in &r.verdict {
        if v.contains("would not load") || v.contains("will not load") || v.contains("random experts") {
            out.push(mk(
                NOT_LOADED,
                v.clone(),
                "convert the checkpoint (`patchgen moe convert`) or register a checkpoint converter",
            ));
        }
    }
    out
}

#[cfg(test)]
mod tests {
    #[test]
    fn every_code_is_documented() {
        let doc = std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/docs/diagnostics.md")).unwrap();
        for c in super::ALL_CODES {
            let sev = c.severity.as_str();
            assert!(
                doc.contains(&format!("| `{}` | `{}` | {sev} |", c.code, c.name)),
                "{} is not in docs/diagnostics.md",
                c.code
            );
        }
    }
}
