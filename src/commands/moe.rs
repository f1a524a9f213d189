//! `patchgen moe inspect|convert`: the arguments, and the reports of
//! `patchgen_moe` printed through the one printer.

use std::path::PathBuf;

use patchgen_core::error::RunError;
use patchgen_core::survey::source::{self, WheelCache};
use patchgen_diagnostics::Diagnostic;
use patchgen_moe::convert::{self, ConvertReport};
use patchgen_moe::inspect::{self, InspectReport};
use patchgen_moe::remote;

use crate::printer::{ExitStatus, Format, Printer, Report, fields};
use crate::session::Session;

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
  patchgen moe inspect hf://deepseek-ai/DeepSeek-V3 -v    on the Hub, by range reads (HF_TOKEN for private repos)

Exit codes: 0 ok, 1 an incomplete or mismatched module (PGM001) or a malformed checkpoint, 2 usage error.";

const CONVERT_EXAMPLES: &str = "\
Examples:
  patchgen moe convert ./ckpt ./ckpt-fused --verify           per-expert, mixtral, stacked, transposed -> v5 fused
  patchgen moe convert ./fused ./split --to per-expert        the reverse (what HF exports)
  patchgen moe convert ./vl ./vl-fused --source-layout transposed   square experts: say what they are
  patchgen moe convert ./ckpt ./out --shard-size 2GB -j 2
  patchgen moe convert s3://models/ckpt s3://models/ckpt-fused --verify   remote to remote, streaming (docs/moe.md)

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
    #[arg(long, value_enum, default_value_t = patchgen_moe::plan::Target::Fused)]
    pub to: patchgen_moe::plan::Target,
    /// What square fused tensors are, when their shape cannot tell
    #[arg(long, value_enum)]
    pub source_layout: Option<patchgen_moe::plan::SourceLayout>,
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
    match args.command {
        MoeCommand::Inspect(a) => {
            let session = match Session::start("moe inspect", a.format) {
                Ok(s) => s,
                Err(status) => return status,
            };
            let outcome = run_inspect(&a, &session);
            session.finish_with(outcome)
        }
        MoeCommand::Convert(a) => {
            let session = match Session::start("moe convert", a.format) {
                Ok(c) => c,
                Err(status) => return status,
            };
            crate::interrupt::install();
            let outcome = run_convert(&a, &session);
            let status = session.finish_with(outcome);
            if let Some(code) = crate::interrupt::exit_code() {
                std::process::exit(code);
            }
            status
        }
    }
}

fn run_inspect(a: &InspectArgs, session: &Session) -> Result<InspectReport, RunError> {
    let (cwd, env) = (session.cwd.as_path(), &session.env);
    let upstream = match &a.upstream {
        None => inspect::UpstreamArg::FromEnv(env.clone()),
        Some(u) => {
            let root = patchgen_core::project::Project::find(cwd).map(|p| p.root).unwrap_or_else(|_| cwd.to_path_buf());
            let cache = WheelCache {
                dir: WheelCache::default_dir(env, &root),
                package: "transformers".into(),
                download: true,
                reporter: session.reporter(),
            };
            let up =
                source::resolve(u, cwd, &cache).map_err(|source| RunError::Upstream { flag: "upstream", source })?;
            inspect::UpstreamArg::Given(up)
        }
    };
    let failed = |e: String| RunError::failed(e);
    usable_address(&a.checkpoint)?;
    let mut report = match remote::locate(&a.checkpoint, a.offline, env).map_err(|e| failed(e.to_string()))? {
        remote::Location::Local(p) => {
            inspect::inspect(&p, a.config.as_deref(), upstream, cwd).map_err(|e| failed(e.to_string()))?
        }
        remote::Location::Remote(r) => {
            remote::inspect(&r, a.config.as_deref(), upstream, cwd).map_err(|e| failed(e.to_string()))?
        }
    };
    if !a.verbose {
        report.transfer_note = None;
    }
    Ok(report)
}

/// A malformed remote address (`..`, an invalid bucket name) is a usage
/// error, found before any request or cache lookup.
fn usable_address(arg: &std::path::Path) -> Result<(), RunError> {
    match arg.to_str().map(remote::RemoteUrl::parse) {
        Some(Err(e)) => Err(RunError::usage(e.to_string())),
        _ => Ok(()),
    }
}

fn run_convert(a: &ConvertArgs, session: &Session) -> Result<ConvertReport, RunError> {
    let shard_size = convert::parse_size(&a.shard_size).map_err(|e| RunError::usage(format!("--shard-size {e}")))?;
    let opts = convert::ConvertOptions {
        to: a.to,
        source_layout: a.source_layout,
        shard_size,
        jobs: a.jobs,
        verify: a.verify,
        progress: session.reporter(),
    };
    let failed = |e: String| RunError::failed(e);
    usable_address(&a.src)?;
    usable_address(&a.dst)?;
    let src = remote::locate(&a.src, a.offline, &session.env).map_err(|e| failed(e.to_string()))?;
    let dst = remote::locate(&a.dst, a.offline, &session.env).map_err(|e| failed(e.to_string()))?;
    match (src, dst) {
        // A request that cannot be carried out as asked (DST inside SRC, a
        // DST in use) is a usage error, exit 2; a bad checkpoint fails, exit 1.
        (remote::Location::Local(s), remote::Location::Local(d)) => convert::convert(&s, &d, &opts).map_err(|e| {
            if e.side() == patchgen_moe::error::Side::Request {
                RunError::usage(e.to_string())
            } else {
                failed(e.to_string())
            }
        }),
        (s, d) => remote::transfer::convert(&s, &d, &a.src, &a.dst, &opts).map_err(|e| match e {
            remote::RemoteError::Request(m) => RunError::usage(m),
            e => failed(e.to_string()),
        }),
    }
}

impl Report for InspectReport {
    fn command(&self) -> &'static str {
        "moe inspect"
    }

    fn diagnostics(&self) -> Vec<&Diagnostic> {
        self.diagnostics.iter().collect()
    }

    fn json_fields(&self) -> serde_json::Map<String, serde_json::Value> {
        fields(self)
    }

    fn text(&self, p: &mut Printer) -> std::io::Result<()> {
        p.out(&patchgen_moe::report::inspect_text(self))
    }

    fn exit_status(&self) -> ExitStatus {
        ExitStatus::failure_if(self.has_problems())
    }
}

impl Report for ConvertReport {
    fn command(&self) -> &'static str {
        "moe convert"
    }

    fn diagnostics(&self) -> Vec<&Diagnostic> {
        Vec::new()
    }

    fn json_fields(&self) -> serde_json::Map<String, serde_json::Value> {
        fields(self)
    }

    fn text(&self, p: &mut Printer) -> std::io::Result<()> {
        p.out(&patchgen_moe::report::convert_text(self))
    }

    fn exit_status(&self) -> ExitStatus {
        ExitStatus::Success
    }
}
