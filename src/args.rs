//! The arguments of the core commands (`generate`, `check`, `list`,
//! `completions`) and the pieces commands share (`--format`, `-j`/`--ruff`,
//! `-c`), as clap derive structs.

use std::path::PathBuf;

use clap::Args;

use crate::printer::Format;

/// `--format`.
#[derive(Args, Debug, Clone, Default, PartialEq, Eq)]
pub struct FormatArg {
    /// Output format [default: text; env: PATCHGEN_OUTPUT_FORMAT]
    #[arg(long, value_enum, value_name = "FORMAT")]
    pub format: Option<Format>,
}

/// `--project`: where the project is looked for.
#[derive(Args, Debug, Clone, Default, PartialEq, Eq)]
pub struct ProjectArg {
    /// Find the project (the nearest pyproject.toml with [tool.patchgen]) from this directory
    /// instead of the working directory
    #[arg(long, value_name = "DIR")]
    pub project: Option<PathBuf>,
}

/// `-j` and `--ruff`: how configs are generated.
#[derive(Args, Debug, Clone, Default, PartialEq, Eq)]
pub struct RunArgs {
    /// Configs processed in parallel [default: one per CPU; env: PATCHGEN_JOBS]
    #[arg(short = 'j', long, value_name = "N")]
    pub jobs: Option<usize>,
    /// The ruff binary [env: PATCHGEN_RUFF; else `ruff` in [tool.patchgen], else `ruff` on PATH]
    #[arg(long, value_name = "PATH")]
    pub ruff: Option<PathBuf>,
    /// Neither read nor write the result cache (.patchgen_cache/) [env: PATCHGEN_NO_CACHE]
    #[arg(long = "no-cache")]
    pub no_cache: bool,
}

impl RunArgs {
    /// What these flags (and `--format`) say about settings.
    pub fn overrides(&self, format: &FormatArg) -> patchgen_core::settings::Overrides {
        patchgen_core::settings::Overrides {
            ruff: self.ruff.clone(),
            jobs: self.jobs,
            format: format.format,
            no_cache: self.no_cache,
        }
    }
}

/// `-c`.
#[derive(Args, Debug, Clone, PartialEq, Eq)]
pub struct ConfigNameArg {
    /// The PatchConfig variable in each config module
    #[arg(short = 'c', long = "config-name", value_name = "NAME", default_value = "config")]
    pub config_name: String,
}

impl Default for ConfigNameArg {
    fn default() -> Self {
        ConfigNameArg { config_name: "config".into() }
    }
}

const GENERATE_EXAMPLES: &str = "\
Examples:
  patchgen generate pkg.models.qwen3.qwen3_gpu_patch_gen_config          write generated/patched_….py
  patchgen generate pkg.models.qwen3.qwen3_gpu_patch_gen_config -o out --diff -v
  patchgen generate --all --diff                                          every config, with its .diff
  patchgen generate --all --dry-run                                       everything but writing";

/// Generate the patched modeling file of one config, or of every config (--all)
#[derive(Args, Debug, Clone, Default, PartialEq, Eq)]
#[command(after_help = GENERATE_EXAMPLES)]
pub struct GenerateArgs {
    /// Dotted patch-config module name (e.g. pkg.models.qwen3.qwen3_gpu_patch_gen_config)
    #[arg(value_name = "PATCH_MODULE", required_unless_present = "all", conflicts_with = "all")]
    pub module: Option<String>,
    /// Every config discovered under [tool.patchgen] search_root
    #[arg(long)]
    pub all: bool,
    /// Output directory [default: generated/ next to the config]
    #[arg(short = 'o', long = "output-dir", value_name = "DIR", conflicts_with = "all")]
    pub output_dir: Option<PathBuf>,
    #[command(flatten)]
    pub config_name: ConfigNameArg,
    /// Also write a unified .diff against the upstream module
    #[arg(long)]
    pub diff: bool,
    /// Do everything (evaluation, generation, ruff) except writing files
    #[arg(long = "dry-run")]
    pub dry_run: bool,
    /// Print the plan and detailed progress
    #[arg(short, long)]
    pub verbose: bool,
    /// Treat warnings (e.g. a patch target missing upstream) as failures
    #[arg(long)]
    pub strict: bool,
    #[command(flatten)]
    pub run: RunArgs,
    #[command(flatten)]
    pub project: ProjectArg,
    #[command(flatten)]
    pub format: FormatArg,
}

const CHECK_EXAMPLES: &str = "\
Examples:
  patchgen check                                        every config; exit 1 on drift
  patchgen check --fix                                  rewrite exactly the files that drifted
  patchgen check pkg.models.qwen3.qwen3_gpu_patch_gen_config
  patchgen check --format github                        annotations in a GitHub pull request";

/// Drift gate: compare the checked-in generated files with what the configs produce
#[derive(Args, Debug, Clone, Default, PartialEq, Eq)]
#[command(after_help = CHECK_EXAMPLES)]
pub struct CheckArgs {
    /// Check only these config modules [default: every discovered config]
    #[arg(value_name = "PATCH_MODULE")]
    pub modules: Vec<String>,
    /// Rewrite the files that drifted
    #[arg(long)]
    pub fix: bool,
    /// Treat warnings (e.g. a patch target missing upstream) as failures
    #[arg(long)]
    pub strict: bool,
    /// Also show notes (methods injected rather than overridden)
    #[arg(short, long)]
    pub verbose: bool,
    #[command(flatten)]
    pub config_name: ConfigNameArg,
    #[command(flatten)]
    pub run: RunArgs,
    #[command(flatten)]
    pub project: ProjectArg,
    #[command(flatten)]
    pub format: FormatArg,
}

const LIST_EXAMPLES: &str = "\
Examples:
  patchgen list
  patchgen list --format json       module, path, source module and patch count of each config";

/// List the patch configs discovered under [tool.patchgen] search_root
#[derive(Args, Debug, Clone, Default, PartialEq, Eq)]
#[command(after_help = LIST_EXAMPLES)]
pub struct ListArgs {
    /// Also name the modules skipped (no PatchConfig)
    #[arg(short, long)]
    pub verbose: bool,
    #[command(flatten)]
    pub config_name: ConfigNameArg,
    /// Configs evaluated in parallel [default: one per CPU; env: PATCHGEN_JOBS]
    #[arg(short = 'j', long, value_name = "N")]
    pub jobs: Option<usize>,
    #[command(flatten)]
    pub project: ProjectArg,
    #[command(flatten)]
    pub format: FormatArg,
}

const CLEAN_EXAMPLES: &str = "\
Examples:
  patchgen clean                      remove .patchgen_cache/ (entries, .gitignore, CACHEDIR.TAG)
  PATCHGEN_CACHE_DIR=/tmp/pg patchgen clean

Only what the cache wrote is removed; a directory that is not a patchgen cache is left alone.";

/// Remove the result cache (.patchgen_cache/, or where PATCHGEN_CACHE_DIR / cache-dir put it)
#[derive(Args, Debug, Clone, Default, PartialEq, Eq)]
#[command(after_help = CLEAN_EXAMPLES)]
pub struct CleanArgs {
    #[command(flatten)]
    pub project: ProjectArg,
    #[command(flatten)]
    pub format: FormatArg,
}

const COMPLETIONS_EXAMPLES: &str = "\
Examples:
  patchgen completions bash > ~/.local/share/bash-completion/completions/patchgen
  patchgen completions zsh > ~/.zfunc/_patchgen
  patchgen completions fish > ~/.config/fish/completions/patchgen.fish";

/// Print a shell completion script
#[derive(Args, Debug, Clone, PartialEq, Eq)]
#[command(after_help = COMPLETIONS_EXAMPLES)]
pub struct CompletionsArgs {
    /// The shell
    #[arg(value_enum)]
    pub shell: clap_complete::Shell,
}
