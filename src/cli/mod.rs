//! The command line: one clap derive tree.
//!
//! `patchgen generate|check|list|survey|completions …`, and the
//! reference's forms, kept as hidden top-level arguments and mapped onto
//! the same commands (`legacy`): `patchgen <module> [-o DIR] [-c NAME]
//! [--diff] [--dry-run] [-v]`, `--all`, `--list`, `--check [--fix]`. A
//! word that is no command and has no dot is a usage error, not a module.
//! Arguments that mean nothing together are a usage error (exit 2) with a
//! one-line reason.
//!
//! Settings (flag > `PATCHGEN_*` > `[tool.patchgen]` > default) are
//! resolved by `crate::settings`; commands return a [`printer::Report`] and
//! [`printer::Printer`] writes it (`text`, `json`, `github`).
//!
//! # Adding a command
//!
//! 1. In your module, a `#[derive(clap::Args)] pub struct FooArgs` (reuse
//!    [`args::FormatArg`], [`args::RunArgs`], [`args::ConfigNameArg`] by
//!    `#[command(flatten)]`) and a doc comment: its first line is the
//!    command's summary in `patchgen --help`; put an `Examples:` block in
//!    `#[command(after_help = …)]`.
//! 2. One variant in [`Command`]: `Foo(crate::foo::FooArgs)`, and one arm
//!    in [`run`] calling your `fn run(args: &FooArgs) -> ExitStatus`. For a
//!    command on the pipeline that is one line:
//!    `Session::run_pipeline("foo", &overrides, None, |ctx, settings| foo(ctx, settings, args))`
//!    ([`run::Session`]: finds the project, resolves the settings — lint
//!    selection, cache dir, … in [`crate::settings::Resolved`] — checks ruff, runs on
//!    the worker pool, prints the report or the [`run::Fatal`] error).
//!    Without a `Context`: `Session::start`, then `session.finish(&report)`.
//! 3. A report type (serde `Serialize` for its JSON fields) implementing
//!    [`printer::Report`]: `command`, `diagnostics`, `json_fields`, `text`
//!    (writes through the printer; never `println!`), `exit_status`.
//! 4. A `--help` snapshot in `tests/cli.rs` and a section in `docs/cli.md`.

pub mod args;
mod check;
mod clean;
pub mod explain;
mod generate;
mod legacy;
mod list;
pub mod output;
pub mod printer;
pub mod run;

use clap::{CommandFactory, Parser, Subcommand};

pub use args::{CheckArgs, GenerateArgs, ListArgs};
pub use legacy::CONFLICTS;
pub use printer::{ExitStatus, Format, Printer, Report};

const EXAMPLES: &str = "\
Examples:
  patchgen generate pkg.models.qwen3.qwen3_gpu_patch_gen_config --diff
  patchgen generate --all --diff        every config found through [tool.patchgen]
  patchgen check                        drift gate: exit 1 if generated files are stale
  patchgen check --fix                  rewrite the files that drifted
  patchgen list                         list the configs
  patchgen clean                        remove the result cache (.patchgen_cache/)
  patchgen survey --from 5.9.0 --to 5.16.1   signature drift of every patch target
  patchgen moe inspect ./checkpoint      MoE expert layout from safetensors headers
  patchgen lint                         the protocol's silent pitfalls as rules (see `patchgen rule --all`)
  patchgen explain                      each .diff hunk with the patch, import or ruff rule behind it
  patchgen reference qwen3 --old 5.9.0 --new 5.16.1   HF sources from the wheels, and their diff
  patchgen new mistral                  a new model's config, __init__.py and toy config
  patchgen completions bash > /etc/bash_completion.d/patchgen

The reference's command lines work unchanged:
  patchgen <patch_module> [-o DIR] [-c NAME] [--diff] [--dry-run] [-v]   = generate <patch_module> …
  patchgen --all [--diff] [--dry-run]                                    = generate --all …
  patchgen --list                                                        = list
  patchgen --check [<patch_module>] [--fix]                              = check …
  (also --strict, -j/--jobs, --ruff, --format, as the commands take them)

Settings: flag, else PATCHGEN_* environment variable, else [tool.patchgen] in the
nearest pyproject.toml (search_root, package_prefix, legacy_patches_prefix,
ruff_extra_ignore, ruff_isolated, ruff, cache-dir, [tool.patchgen.lint]); see docs/cli.md.

Exit codes: 0 ok, 1 drift, a failed config or findings, 2 usage or project-configuration error.";

/// Generate patched HuggingFace modeling files from declarative patch configs, statically and exactly.
#[derive(Parser, Debug)]
#[command(
    name = "patchgen",
    version,
    after_help = EXAMPLES,
    args_conflicts_with_subcommands = true,
    subcommand_value_name = "COMMAND",
    override_usage = "patchgen <COMMAND> [OPTIONS]\n       patchgen <PATCH_MODULE> [-o DIR] [-c NAME] [--diff] [--dry-run] [-v]\n       patchgen --all | --list | --check [--fix]"
)]
pub struct Cli {
    #[command(subcommand)]
    pub command: Option<Command>,
    #[command(flatten)]
    pub legacy: legacy::LegacyArgs,
}

#[derive(Subcommand, Debug)]
pub enum Command {
    Generate(GenerateArgs),
    Check(CheckArgs),
    List(ListArgs),
    Clean(args::CleanArgs),
    Survey(crate::survey::SurveyArgs),
    Moe(crate::moe::MoeArgs),
    Lint(crate::lint::command::LintArgs),
    Explain(explain::ExplainArgs),
    Rule(crate::lint::command::RuleArgs),
    Reference(crate::reference::ReferenceArgs),
    New(crate::scaffold::NewArgs),
    Completions(args::CompletionsArgs),
}

/// Parse `argv` (with the program name first) into a command.
pub fn parse<I, T>(argv: I) -> Result<Command, clap::Error>
where
    I: IntoIterator<Item = T>,
    T: Into<std::ffi::OsString> + Clone,
{
    let cli = Cli::try_parse_from(argv)?;
    match cli.command {
        Some(c) => Ok(c),
        None => {
            cli.legacy.into_command().map_err(|msg| Cli::command().error(clap::error::ErrorKind::ArgumentConflict, msg))
        }
    }
}

/// Run a parsed command; returns how the process ends.
pub fn run(command: Command) -> ExitStatus {
    match command {
        Command::Generate(a) => generate::run(&a),
        Command::Check(a) => check::run(&a),
        Command::List(a) => list::run(&a),
        Command::Clean(a) => clean::run(&a),
        Command::Survey(a) => crate::survey::run(a),
        Command::Moe(a) => crate::moe::run(a),
        Command::Lint(a) => crate::lint::command::run_command(&a),
        Command::Explain(a) => explain::run(&a),
        Command::Rule(a) => crate::lint::command::run_rule(&a),
        Command::Reference(a) => crate::reference::run_command(a),
        Command::New(a) => crate::scaffold::run_command(a),
        Command::Completions(a) => {
            let mut cmd = Cli::command();
            let mut out = std::io::stdout();
            clap_complete::generate(a.shell, &mut cmd, "patchgen", &mut out);
            ExitStatus::Success
        }
    }
}

/// Print a clap error (help and version included); its exit status.
pub fn print_clap_error(e: &clap::Error) -> ExitStatus {
    let _ = e.print();
    if e.use_stderr() { ExitStatus::Error } else { ExitStatus::Success }
}

/// Run the command line; returns the process exit code.
pub fn main() -> i32 {
    match parse(std::env::args_os()) {
        Ok(command) => run(command).code(),
        Err(e) => print_clap_error(&e).code(),
    }
}
