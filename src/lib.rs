//! The command line: one clap derive tree, one file per command under
//! [`commands`], one printer.
//!
//! `patchgen generate|check|list|clean|survey|lint|rule|moe|reference|new|server|completions …`,
//! and the reference's forms, kept as hidden top-level arguments and mapped
//! onto the same commands (`legacy`): `patchgen <module> [-o DIR] [-c NAME]
//! [--diff] [--dry-run] [-v]`, `--all`, `--list`, `--check [--fix]`. A
//! word that is no command and has no dot is a usage error, not a module.
//! Arguments that mean nothing together are a usage error (exit 2) with a
//! one-line reason.
//!
//! This crate is the top of the workspace: it parses arguments into the
//! libraries' typed options, starts every command through
//! [`session::Session`] (the environment read once, the format, the
//! working directory; for the pipeline commands the project, settings and
//! cache too), and writes what the libraries return
//! through [`printer::Printer`] (`text`, `json`, `github`). No library
//! depends on it. Adding a command: `docs/architecture.md`.

pub mod args;
pub mod commands;
mod interrupt;
mod legacy;
pub mod output;
pub mod printer;
mod progress;
pub mod session;

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
  patchgen server                       language server for patch configs (LSP over stdio; docs/editors.md)
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
    Survey(commands::survey::SurveyArgs),
    Bump(commands::bump::BumpArgs),
    Moe(commands::moe::MoeArgs),
    Lint(commands::lint::LintArgs),
    Explain(commands::explain::ExplainArgs),
    Rule(commands::rule::RuleArgs),
    Reference(commands::reference::ReferenceArgs),
    New(commands::new::NewArgs),
    Server(commands::server::ServerArgs),
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
        Command::Generate(a) => commands::generate::run(&a),
        Command::Check(a) => commands::check::run(&a),
        Command::List(a) => commands::list::run(&a),
        Command::Clean(a) => commands::clean::run(&a),
        Command::Survey(a) => commands::survey::run(a),
        Command::Bump(a) => commands::bump::run(&a),
        Command::Moe(a) => commands::moe::run(a),
        Command::Lint(a) => commands::lint::run(&a),
        Command::Explain(a) => commands::explain::run(&a),
        Command::Rule(a) => commands::rule::run(&a),
        Command::Reference(a) => commands::reference::run(&a),
        Command::New(a) => commands::new::run(&a),
        Command::Server(a) => commands::server::run(&a),
        Command::Completions(a) => commands::completions::run(&a),
    }
}

/// Print a clap error (help and version included); its exit status.
pub fn print_clap_error(e: &clap::Error) -> ExitStatus {
    let _ = e.print();
    if e.use_stderr() { ExitStatus::Error } else { ExitStatus::Success }
}

/// Run a command line (`argv` with the program name first); returns the
/// process exit code.
pub fn run_argv<I, T>(argv: I) -> i32
where
    I: IntoIterator<Item = T>,
    T: Into<std::ffi::OsString> + Clone,
{
    let argv: Vec<std::ffi::OsString> = argv.into_iter().map(Into::into).collect();
    let format = format_flag(&argv);
    match parse(argv) {
        Ok(command) => match std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| run(command))) {
            Ok(status) => status.code(),
            // The panic hook said what happened on stderr; a `--format json`
            // caller still gets its one document.
            Err(_) => {
                let format = patchgen_core::settings::early_format(format, &patchgen_core::settings::Env::capture());
                if format != Format::Text {
                    let fatal = session::Fatal::new("patchgen", "internal error: this is a bug in patchgen");
                    Printer::new(format).print(&fatal);
                }
                3
            }
        },
        Err(e) => print_clap_error(&e).code(),
    }
}

/// `--format F` / `--format=F` as written on the command line (before
/// parsing: the format of the report of a command that panicked).
fn format_flag(argv: &[std::ffi::OsString]) -> Option<Format> {
    let words: Vec<&str> = argv.iter().filter_map(|a| a.to_str()).collect();
    words.iter().enumerate().rev().find_map(|(k, w)| match w.strip_prefix("--format") {
        Some("") => words.get(k + 1).and_then(|v| v.parse().ok()),
        Some(rest) => rest.strip_prefix('=').and_then(|v| v.parse().ok()),
        None => None,
    })
}

/// Run the process's command line; returns the process exit code.
pub fn main() -> i32 {
    run_argv(std::env::args_os())
}
