//! The command line: the reference's flags (`patchgen <module> [-o DIR]
//! [-c NAME] [--dry-run] [--diff] [-v]`, `--all`, `--list`, `--check
//! [--fix]`) plus ours (`--jobs`, `--ruff`, `--strict`, `--format`).
//! Arguments are parsed once into `Settings`; nothing else sees clap.

mod output;
mod run;

use std::path::PathBuf;

use clap::{Parser, ValueEnum};

const EXAMPLES: &str = "\
Examples:
  patchgen <patch_module>                 generate one config's patched file
  patchgen <patch_module> -o DIR --diff   ... into DIR, with its .diff
  patchgen <patch_module> --dry-run       everything but writing
  patchgen --all --diff                   every config found through [tool.patchgen]
  patchgen --list                         list the configs
  patchgen --check                        drift gate: exit 1 if generated files are stale
  patchgen --check --fix                  rewrite the files that drifted
  patchgen survey --from 5.9.0 --to 5.16.1   signature drift of every patch target (see `patchgen survey --help`)

Settings come from [tool.patchgen] in the nearest pyproject.toml:
  search_root, package_prefix, legacy_patches_prefix, ruff_extra_ignore, ruff_isolated, ruff

Exit codes: 0 ok, 1 drift or a failed config, 2 usage or project-configuration error.";

#[derive(Parser, Debug)]
#[command(
    name = "patchgen",
    version,
    about = "Generate patched HuggingFace modeling files from declarative patch configs, statically and exactly.",
    after_help = EXAMPLES
)]
struct Args {
    /// Dotted patch-config module name (e.g. 'pkg.models.qwen3.qwen3_gpu_patch_gen_config')
    patch_module: Option<String>,
    /// Output directory (default: sibling generated/ next to the patch module)
    #[arg(short = 'o', long = "output-dir")]
    output_dir: Option<PathBuf>,
    /// Config variable name in the patch module
    #[arg(short = 'c', long = "config-name", default_value = "config")]
    config_name: String,
    /// List available patch configurations
    #[arg(long)]
    list: bool,
    /// Regenerate all discovered patch configs
    #[arg(long)]
    all: bool,
    /// Do everything (evaluation, generation, ruff) except writing files
    #[arg(long = "dry-run")]
    dry_run: bool,
    /// Also write a unified .diff against the upstream module
    #[arg(long)]
    diff: bool,
    /// Print detailed progress
    #[arg(short, long)]
    verbose: bool,
    /// Drift gate: compare checked-in files with what the configs produce
    #[arg(long)]
    check: bool,
    /// With --check: rewrite the files that drifted
    #[arg(long)]
    fix: bool,
    /// Treat warnings (e.g. a patch target missing upstream) as failures
    #[arg(long)]
    strict: bool,
    /// Configs processed in parallel (default: number of CPUs)
    #[arg(short = 'j', long)]
    jobs: Option<usize>,
    /// The ruff binary (default: `ruff` in [tool.patchgen], else `ruff` on PATH)
    #[arg(long)]
    ruff: Option<PathBuf>,
    /// Output format for --list and --check
    #[arg(long, value_enum, default_value_t = Format::Text)]
    format: Format,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
pub enum Format {
    Text,
    Json,
}

/// What to do.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Command {
    List,
    All,
    One(String),
    Check { modules: Vec<String>, fix: bool },
}

/// The parsed command line.
#[derive(Debug, Clone)]
pub struct Settings {
    pub command: Command,
    pub output_dir: Option<PathBuf>,
    pub config_name: String,
    pub dry_run: bool,
    pub diff: bool,
    pub verbose: bool,
    pub strict: bool,
    pub jobs: Option<usize>,
    pub ruff: Option<PathBuf>,
    pub format: Format,
}

fn settings(args: Args) -> Result<Settings, String> {
    if args.fix && !args.check {
        return Err("--fix only works with --check".into());
    }
    let command = if args.check {
        Command::Check { modules: args.patch_module.clone().into_iter().collect(), fix: args.fix }
    } else if args.list {
        Command::List
    } else if args.all {
        Command::All
    } else {
        match &args.patch_module {
            Some(m) => Command::One(m.clone()),
            None => return Err("patch_module is required unless using --list, --all or --check".into()),
        }
    };
    Ok(Settings {
        command,
        output_dir: args.output_dir,
        config_name: args.config_name,
        dry_run: args.dry_run,
        diff: args.diff,
        verbose: args.verbose,
        strict: args.strict,
        jobs: args.jobs,
        ruff: args.ruff,
        format: args.format,
    })
}

/// Commands that are words (never a dotted module name).
fn subcommand(args: &[std::ffi::OsString]) -> Option<i32> {
    match args.get(1)?.to_str()? {
        "survey" => Some(crate::survey::run_cli(&args[2..])),
        "lint" => Some(crate::lint::command::run_lint_cli(&args[2..])),
        "rule" => Some(crate::lint::command::run_rule_cli(&args[2..])),
        _ => None,
    }
}

/// Run the command line; returns the process exit code.
pub fn main() -> i32 {
    let argv: Vec<std::ffi::OsString> = std::env::args_os().collect();
    if let Some(code) = subcommand(&argv) {
        return code;
    }
    let args = match Args::try_parse_from(&argv) {
        Ok(a) => a,
        Err(e) => {
            let code = if e.use_stderr() { 2 } else { 0 };
            let _ = e.print();
            return code;
        }
    };
    match settings(args) {
        Ok(s) => run::run(&s),
        Err(msg) => {
            eprintln!("patchgen: error: {msg}\n\nFor more information, try '--help'.");
            2
        }
    }
}
