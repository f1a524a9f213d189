//! The one error type of a command that runs on the library: it either
//! could not start (a usage or project problem, exit 2) or it ran and
//! failed (a bad wheel, a missing model, a write that failed: exit 1).
//! The message is for people; the variant is what code decides on.

use patchgen_diagnostics::ExitStatus;

/// Why a command did not produce its report.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum RunError {
    /// The arguments, the settings or the project are wrong: nothing ran (exit 2).
    #[error("{0}")]
    Usage(String),
    /// The command ran and could not finish (exit 1).
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
    pub fn message(&self) -> &str {
        match self {
            RunError::Usage(m) | RunError::Failed(m) => m,
        }
    }

    /// `true` for a usage or project problem.
    pub fn is_usage(&self) -> bool {
        matches!(self, RunError::Usage(_))
    }

    pub fn exit_status(&self) -> ExitStatus {
        match self {
            RunError::Usage(_) => ExitStatus::Error,
            RunError::Failed(_) => ExitStatus::Failure,
        }
    }

    pub fn exit_code(&self) -> i32 {
        self.exit_status().code()
    }
}
