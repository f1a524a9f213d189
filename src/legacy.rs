//! The reference's command lines, kept as hidden top-level arguments:
//! `patchgen <module> [-o DIR] [-c NAME] [--diff] [--dry-run] [-v]`,
//! `--all`, `--list`, `--check [--fix]` (plus ours: `--strict`, `-j`,
//! `--ruff`, `--format`), mapped onto `generate`, `list` and `check`.
//!
//! Two arguments that mean nothing together are refused with a one-line
//! reason ([`CONFLICTS`]); so is `--fix` without `--check`, and a bare
//! word with no dot that is no command (`patchgen lint`: module names are
//! dotted).

use std::path::PathBuf;

use clap::Args;

use crate::args::{CheckArgs, ConfigNameArg, FormatArg, GenerateArgs, ListArgs, ProjectArg, RunArgs};
use crate::{Command, printer::Format};

#[derive(Args, Debug, Default)]
pub struct LegacyArgs {
    #[arg(hide = true, value_name = "PATCH_MODULE")]
    pub patch_module: Option<String>,
    #[arg(hide = true, short = 'o', long = "output-dir")]
    pub output_dir: Option<PathBuf>,
    #[arg(hide = true, short = 'c', long = "config-name")]
    pub config_name: Option<String>,
    #[arg(hide = true, long)]
    pub list: bool,
    #[arg(hide = true, long)]
    pub all: bool,
    #[arg(hide = true, long = "dry-run")]
    pub dry_run: bool,
    #[arg(hide = true, long)]
    pub diff: bool,
    #[arg(hide = true, short, long)]
    pub verbose: bool,
    #[arg(hide = true, long)]
    pub check: bool,
    #[arg(hide = true, long)]
    pub fix: bool,
    #[arg(hide = true, long)]
    pub strict: bool,
    #[arg(hide = true, short = 'j', long)]
    pub jobs: Option<usize>,
    #[arg(hide = true, long)]
    pub ruff: Option<PathBuf>,
    #[arg(hide = true, long, value_enum)]
    pub format: Option<Format>,
    #[arg(hide = true, long = "no-cache")]
    pub no_cache: bool,
}

/// Pairs of reference-form arguments that mean nothing together, with the
/// reason given (`PATCH_MODULE` is the positional module name).
pub const CONFLICTS: &[(&str, &str, &str)] = &[
    ("--list", "--all", "--list lists the configs, --all generates them"),
    ("--list", "--check", "--list lists the configs, --check checks them"),
    ("--all", "--check", "--check already checks every config"),
    ("--list", "PATCH_MODULE", "--list lists every config"),
    ("--all", "PATCH_MODULE", "--all generates every config; name a module or use --all"),
    ("--list", "--output-dir", "--list writes nothing"),
    ("--all", "--output-dir", "with --all each config writes next to itself"),
    ("--check", "--output-dir", "--check compares the files next to each config"),
    ("--list", "--diff", "--list writes nothing"),
    ("--check", "--diff", "--check always compares the .diff too"),
    ("--list", "--dry-run", "--list writes nothing"),
    ("--check", "--dry-run", "--check writes nothing unless --fix"),
    ("--list", "--strict", "--list generates nothing to be strict about"),
    ("--list", "--ruff", "--list does not run ruff"),
];

impl LegacyArgs {
    /// The arguments given, by the names [`CONFLICTS`] uses.
    fn given(&self) -> Vec<&'static str> {
        let flags = [
            ("PATCH_MODULE", self.patch_module.is_some()),
            ("--output-dir", self.output_dir.is_some()),
            ("--list", self.list),
            ("--all", self.all),
            ("--dry-run", self.dry_run),
            ("--diff", self.diff),
            ("--check", self.check),
            ("--strict", self.strict),
            ("--ruff", self.ruff.is_some()),
        ];
        flags.iter().filter(|(_, on)| *on).map(|(n, _)| *n).collect()
    }

    /// The command these arguments stand for, or the one-line reason they make no sense.
    pub fn into_command(self) -> Result<Command, String> {
        let given = self.given();
        if let Some((a, b, why)) = CONFLICTS.iter().find(|(a, b, _)| given.contains(a) && given.contains(b)) {
            let name = |s: &str| if s == "PATCH_MODULE" { "a patch module".to_string() } else { format!("'{s}'") };
            return Err(format!("{} cannot be used with {}: {why}", name(a), name(b)));
        }
        if self.fix && !self.check {
            return Err("--fix only works with --check".into());
        }
        if let Some(m) = &self.patch_module
            && !m.contains('.')
            && !m.ends_with("_patch_gen_config")
        {
            let cli = <crate::Cli as clap::CommandFactory>::command();
            let commands: Vec<&str> = cli.get_subcommands().map(|c| c.get_name()).filter(|n| *n != "help").collect();
            return Err(format!(
                "unrecognized command or module '{m}': a patch module name is dotted (pkg.x.x_patch_gen_config); commands: {}",
                commands.join(", ")
            ));
        }
        let config_name = ConfigNameArg { config_name: self.config_name.unwrap_or_else(|| "config".into()) };
        let run = RunArgs { jobs: self.jobs, ruff: self.ruff, no_cache: self.no_cache };
        let format = FormatArg { format: self.format };
        Ok(if self.check {
            Command::Check(CheckArgs {
                modules: self.patch_module.into_iter().collect(),
                fix: self.fix,
                strict: self.strict,
                verbose: self.verbose,
                config_name,
                run,
                project: ProjectArg::default(),
                format,
            })
        } else if self.list {
            Command::List(ListArgs {
                verbose: self.verbose,
                config_name,
                jobs: self.jobs,
                project: ProjectArg::default(),
                format,
            })
        } else if self.all || self.patch_module.is_some() {
            Command::Generate(GenerateArgs {
                module: self.patch_module,
                all: self.all,
                output_dir: self.output_dir,
                config_name,
                diff: self.diff,
                dry_run: self.dry_run,
                verbose: self.verbose,
                strict: self.strict,
                run,
                project: ProjectArg::default(),
                format,
            })
        } else {
            return Err(
                "patch_module is required unless using --list, --all or --check (or a command: patchgen --help)".into(),
            );
        })
    }
}
