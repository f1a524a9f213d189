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

use std::ffi::OsString;
use std::path::PathBuf;

use clap::{Parser, Subcommand, ValueEnum};

/// Output format.
#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
pub enum Format {
    Text,
    Json,
}

const EXAMPLES: &str = "\
Examples:
  patchgen moe inspect ./Qwen3-30B-A3B                   families, completeness, recipe (headers only)
  patchgen moe inspect ckpt --upstream 5.16.1 --format json
  patchgen moe convert ./ckpt ./ckpt-fused --verify      per-expert/transposed/stacked -> v5 fused
  patchgen moe convert ./fused ./split --to per-expert   the reverse

Exit codes: 0 ok, 1 a problem found (incomplete or malformed checkpoint, refused conversion), 2 usage error.";

#[derive(Parser, Debug)]
#[command(name = "patchgen moe", about = "MoE checkpoints: inspect the expert layout from headers, convert it offline", after_help = EXAMPLES)]
struct Cli {
    #[command(subcommand)]
    command: MoeCommand,
}

#[derive(Subcommand, Debug)]
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
    #[arg(long, value_enum, default_value_t = Format::Text)]
    pub format: Format,
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
    #[arg(long, value_enum, default_value_t = Format::Text)]
    pub format: Format,
}

/// `patchgen moe ...`; returns the exit code.
pub fn run_cli(args: &[OsString]) -> i32 {
    let argv = std::iter::once(OsString::from("patchgen moe")).chain(args.iter().cloned());
    let cli = match Cli::try_parse_from(argv) {
        Ok(c) => c,
        Err(e) => {
            let code = if e.use_stderr() { 2 } else { 0 };
            let _ = e.print();
            return code;
        }
    };
    run(cli.command)
}

/// Run one `moe` subcommand and print its report; returns the exit code.
pub fn run(command: MoeCommand) -> i32 {
    let cwd = std::env::current_dir().unwrap_or_default();
    match command {
        MoeCommand::Inspect(a) => {
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
                            eprintln!("patchgen moe inspect: error: --upstream {e}");
                            return 2;
                        }
                    }
                }
            };
            match inspect::inspect(&a.checkpoint, a.config.as_deref(), upstream, &cwd) {
                Ok(r) => {
                    match a.format {
                        Format::Text => print!("{}", report::inspect_text(&r)),
                        Format::Json => println!("{}", serde_json::to_string_pretty(&r).unwrap_or_default()),
                    }
                    i32::from(r.has_problems())
                }
                Err(e) => {
                    eprintln!("patchgen moe inspect: error: {e}");
                    1
                }
            }
        }
        MoeCommand::Convert(a) => {
            let shard_size = match convert::parse_size(&a.shard_size) {
                Ok(s) => s,
                Err(e) => {
                    eprintln!("patchgen moe convert: error: --shard-size {e}");
                    return 2;
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
                Ok(r) => {
                    match a.format {
                        Format::Text => print!("{}", report::convert_text(&r)),
                        Format::Json => println!("{}", serde_json::to_string_pretty(&r).unwrap_or_default()),
                    }
                    0
                }
                Err(e) => {
                    eprintln!("patchgen moe convert: error: {e}");
                    1
                }
            }
        }
    }
}
