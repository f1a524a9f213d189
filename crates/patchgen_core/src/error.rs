//! The one error type of a command that runs on the library: it either
//! could not start (a usage or project problem, exit 2) or it ran and
//! failed (a bad wheel, a missing model, a write that failed: exit 1).
//! The variant says what failed and carries its parts (the file, the
//! flag, the name asked for); the message is for people, rendered from
//! them. `Usage` and `Failed` hold the messages of the remaining, one-off
//! problems (the scaffold's and `reference`'s).

use std::path::{Path, PathBuf};

use patchgen_diagnostics::{ExitStatus, Location};

use crate::project::ProjectError;
use crate::settings::SettingsError;
use crate::survey::source::SourceError;

/// Why a command did not produce its report.
#[derive(Debug, thiserror::Error)]
pub enum RunError {
    /// The project cannot be found or its `pyproject.toml` read (exit 2).
    #[error(transparent)]
    Project(#[from] ProjectError),
    /// The settings (a `PATCHGEN_*` variable, `[tool.patchgen]`) are wrong (exit 2).
    #[error(transparent)]
    Settings(#[from] SettingsError),
    /// An upstream argument (`--from`, `--to`, `--upstream`) cannot be had (exit 2).
    #[error("--{flag} {source}")]
    Upstream {
        /// The flag, without dashes.
        flag: &'static str,
        #[source]
        source: SourceError,
    },
    /// A config module asked for by name is not in the project (exit 2).
    #[error(
        "{}{module}: no such module under {}\n  help: `patchgen --list` shows the config modules",
        flag.as_ref().map(|f| format!("--{f} ")).unwrap_or_default(),
        package_root.display()
    )]
    NoSuchModule {
        /// The flag it came from (`config`), or `None` for a positional argument.
        flag: Option<String>,
        /// The module, normalised (`<package_prefix>.…`).
        module: String,
        /// Where config modules are looked for.
        package_root: PathBuf,
    },
    /// A rule selector (`--select`, `--ignore`, `PATCHGEN_LINT_*`,
    /// `[tool.patchgen.lint]`) names no rule (exit 2).
    #[error("unknown rule selector `{selector}`\n  help: `patchgen rule --all` lists the rules")]
    UnknownSelector { selector: String },
    /// `patchgen rule CODE`: no such rule (exit 2).
    #[error("unknown rule `{code}`\n  help: `patchgen rule --all` lists the rules")]
    UnknownRule { code: String },
    /// The worker threads cannot be started (exit 2).
    #[error("cannot start worker threads: {reason}")]
    Threads { reason: String },
    /// Another problem with the arguments or the project: nothing ran (exit 2).
    #[error("{0}")]
    Usage(String),
    /// Another failure of a command that ran and could not finish (exit 1).
    #[error("{0}")]
    Failed(String),
}

impl RunError {
    pub fn usage(message: impl Into<String>) -> RunError {
        RunError::Usage(message.into())
    }

    pub fn failed(message: impl Into<String>) -> RunError {
        RunError::Failed(message.into())
    }

    /// The message, whatever the kind.
    pub fn message(&self) -> String {
        self.to_string()
    }

    /// `true` for a usage or project problem.
    pub fn is_usage(&self) -> bool {
        !matches!(self, RunError::Failed(_))
    }

    /// The file (and line) the problem is in, where there is one.
    pub fn location(&self) -> Option<Location> {
        let file = |p: &Path| Some(Location::file(p.to_path_buf()));
        let at = |p: &Path, line: usize| Some(Location::line(p.to_path_buf(), line));
        let settings = |e: &SettingsError| match e {
            SettingsError::UnknownKey { path, line, .. }
            | SettingsError::Toml { path, line, .. }
            | SettingsError::Invalid { path, line, .. } => at(path, *line),
            SettingsError::Env { .. } => None,
        };
        match self {
            RunError::Project(ProjectError::Settings(e)) | RunError::Settings(e) => settings(e),
            RunError::Project(ProjectError::Unreadable { path, .. }) => file(path),
            RunError::Project(
                ProjectError::MissingKey { pyproject, .. } | ProjectError::NoSearchRoot { pyproject, .. },
            ) => file(pyproject),
            _ => None,
        }
    }

    pub fn exit_status(&self) -> ExitStatus {
        if self.is_usage() { ExitStatus::Error } else { ExitStatus::Failure }
    }

    pub fn exit_code(&self) -> i32 {
        self.exit_status().code()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn messages_are_rendered_from_the_parts() {
        let e = RunError::NoSuchModule {
            flag: Some("config".into()),
            module: "pkg.m".into(),
            package_root: "/p/pkg".into(),
        };
        assert_eq!(
            e.to_string(),
            "--config pkg.m: no such module under /p/pkg\n  help: `patchgen --list` shows the config modules"
        );
        let e = RunError::NoSuchModule { flag: None, module: "pkg.m".into(), package_root: "/p/pkg".into() };
        assert!(e.to_string().starts_with("pkg.m: no such module under /p/pkg\n"));
        let e = RunError::Upstream { flag: "to", source: SourceError::NotAWheel { arg: "x".into() } };
        assert_eq!(e.to_string(), "--to x: not a directory or a .whl file");
        assert!(e.is_usage());
        assert_eq!(RunError::failed("f").exit_code(), 1);
        assert_eq!(RunError::UnknownRule { code: "PG9".into() }.exit_code(), 2);
    }

    #[test]
    fn settings_errors_say_where() {
        let e = RunError::Settings(SettingsError::Invalid {
            path: "/p/pyproject.toml".into(),
            line: 7,
            message: "m".into(),
        });
        assert_eq!(e.location(), Some(Location::line(PathBuf::from("/p/pyproject.toml"), 7)));
        assert_eq!(RunError::usage("u").location(), None);
    }
}
