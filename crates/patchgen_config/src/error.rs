//! What evaluating a config can report: a located error (with an optional
//! `help:` line) that stops the config, and warnings that do not.

use super::plan::Loc;

/// A located evaluation error: what is wrong and what to do.
#[derive(Debug, Clone)]
pub struct EvalError {
    pub loc: Loc,
    pub message: String,
    pub help: Option<Box<str>>,
    /// The keyword argument the error is about (`bind`'s unknown or
    /// repeated keyword): the call site narrows `loc` to that keyword.
    pub keyword: Option<Box<str>>,
    /// The diagnostic code when it is not `PGE001` (`config-error`).
    pub code: Option<patchgen_diagnostics::codes::Code>,
}

impl EvalError {
    pub fn new(loc: Loc, message: impl Into<String>) -> Self {
        EvalError { loc, message: message.into(), help: None, keyword: None, code: None }
    }

    /// The error is about keyword argument `name` of the call at `loc`.
    pub fn about_keyword(mut self, name: &str) -> Self {
        self.keyword = Some(name.into());
        self
    }

    pub fn with_help(mut self, help: impl Into<String>) -> Self {
        self.help = Some(help.into().into_boxed_str());
        self
    }
}

impl std::fmt::Display for EvalError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}: {}", self.loc, self.message)?;
        if let Some(help) = &self.help {
            write!(f, "\n  help: {help}")?;
        }
        Ok(())
    }
}

pub type EResult<T> = Result<T, EvalError>;

/// A non-fatal finding, reported with the config's result.
#[derive(Debug, Clone)]
pub struct Warning {
    pub loc: Loc,
    pub message: String,
}
