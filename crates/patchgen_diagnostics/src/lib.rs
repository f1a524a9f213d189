//! The diagnostics core every command reports through: a `Diagnostic` is a
//! stable code, a severity, a primary location (path, 1-based line and
//! column, optional end), a message, an optional `help:` line and optional
//! secondary locations (e.g. the generated file and line behind a config
//! line). Commands build these; only the printer renders them (text with a
//! source excerpt, `json`, `github` workflow commands, `sarif` and
//! `gitlab` code-scanning reports).
//!
//! Columns are 1-based and count Unicode scalar values (characters), as
//! ruff and rustc print them; `0` means "the whole line" (no column known).
//! Codes are fixed once published: `docs/` lists them.

// Libraries return what they have to say; the binary prints it.
#![cfg_attr(not(test), deny(clippy::print_stdout, clippy::print_stderr))]

pub mod codes;
pub mod fix;
pub mod format;
pub mod line_index;
pub mod render;
pub mod suggest;

pub use format::{ExitStatus, Format};
pub use line_index::LineIndex;

use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

/// How bad a finding is. Ordered: `Error > Warning > Info`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Severity {
    Info,
    Warning,
    Error,
}

impl Severity {
    pub fn as_str(self) -> &'static str {
        match self {
            Severity::Info => "info",
            Severity::Warning => "warning",
            Severity::Error => "error",
        }
    }
}

/// A place in a file. Lines and columns are 1-based; `column == 0` means no
/// column is known (the whole line); `line == 0` means the whole file.
#[derive(Clone, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct Location {
    pub path: PathBuf,
    pub line: usize,
    pub column: usize,
    /// Where the range ends (inclusive line, exclusive column); `None`: a point.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub end: Option<(usize, usize)>,
}

impl Location {
    /// The whole file.
    pub fn file(path: impl Into<PathBuf>) -> Location {
        Location { path: path.into(), line: 0, column: 0, end: None }
    }

    /// A whole line (no column known).
    pub fn line(path: impl Into<PathBuf>, line: usize) -> Location {
        Location { path: path.into(), line, column: 0, end: None }
    }

    /// A point: line and column, both 1-based.
    pub fn point(path: impl Into<PathBuf>, line: usize, column: usize) -> Location {
        Location { path: path.into(), line, column, end: None }
    }

    /// A range from (line, column) to (end_line, end_column), 1-based, end exclusive.
    pub fn range(path: impl Into<PathBuf>, start: (usize, usize), end: (usize, usize)) -> Location {
        Location { path: path.into(), line: start.0, column: start.1, end: Some(end) }
    }

    /// The range of byte offsets `start..end` in `source` (the file's text).
    pub fn from_offsets(path: impl Into<PathBuf>, source: &str, start: usize, end: usize) -> Location {
        let index = LineIndex::new(source);
        let (l0, c0) = index.line_column(source, start);
        let (l1, c1) = index.line_column(source, end.max(start));
        Location { path: path.into(), line: l0, column: c0, end: Some((l1, c1)) }
    }
}

impl std::fmt::Display for Location {
    /// `path`, `path:line` or `path:line:col`.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}", self.path.display())?;
        if self.line > 0 {
            write!(f, ":{}", self.line)?;
            if self.column > 0 {
                write!(f, ":{}", self.column)?;
            }
        }
        Ok(())
    }
}

/// 1-based (line, column) of byte `offset` in `source`; the column counts
/// characters. Lines break at `\n` (a `\r\n` pair counts once).
pub fn line_column(source: &str, offset: usize) -> (usize, usize) {
    LineIndex::new(source).line_column(source, offset)
}

/// A secondary place that helps explain a diagnostic (e.g. "generated here").
#[derive(Clone, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct Related {
    pub location: Location,
    pub message: String,
}

/// One finding or error, as every command reports it.
#[derive(Clone, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct Diagnostic {
    /// Stable code, e.g. `PG101` (lint rules) or `PGW001` (generation warnings).
    pub code: String,
    /// Kebab-case name of the code, e.g. `dead-patch-target`.
    pub name: String,
    pub severity: Severity,
    pub message: String,
    /// Where the user should look first (the config line to edit, where one exists).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub location: Option<Location>,
    /// What to do about it, one line.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub help: Option<String>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub related: Vec<Related>,
    /// The config module this diagnostic belongs to, when it belongs to one.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub config: Option<String>,
    /// The patch target the finding is about (`Qwen3MLP.forward`), when it
    /// is about one: what tools decide on, never the message text.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub target: Option<String>,
    /// The finding's fix: absent where the command offers none (every
    /// command but `lint`); `Some(None)`, written `null`, for a lint
    /// finding whose rule knows no fix.
    #[serde(default, skip_serializing_if = "Option::is_none", deserialize_with = "present")]
    pub fix: Option<Option<fix::Fix>>,
}

/// A field that is present (`null` included) deserialises to `Some`.
fn present<'de, D: serde::Deserializer<'de>, T: Deserialize<'de>>(d: D) -> Result<Option<T>, D::Error> {
    T::deserialize(d).map(Some)
}

impl Diagnostic {
    pub fn new(code: &str, name: &str, severity: Severity, message: impl Into<String>) -> Diagnostic {
        Diagnostic {
            code: code.to_string(),
            name: name.to_string(),
            severity,
            message: message.into(),
            location: None,
            help: None,
            related: Vec::new(),
            config: None,
            target: None,
            fix: None,
        }
    }

    pub fn at(mut self, location: Location) -> Diagnostic {
        self.location = Some(location);
        self
    }

    pub fn help(mut self, help: impl Into<String>) -> Diagnostic {
        self.help = Some(help.into());
        self
    }

    pub fn related(mut self, location: Location, message: impl Into<String>) -> Diagnostic {
        self.related.push(Related { location, message: message.into() });
        self
    }

    pub fn config(mut self, module: impl Into<String>) -> Diagnostic {
        self.config = Some(module.into());
        self
    }

    /// The patch target the finding is about.
    pub fn target(mut self, target: impl Into<String>) -> Diagnostic {
        self.target = Some(target.into());
        self
    }

    /// Offer `fix` (lint findings: `None` says the rule has none).
    pub fn with_fix(mut self, fix: Option<fix::Fix>) -> Diagnostic {
        self.fix = Some(fix);
        self
    }

    /// The fix, when one is offered.
    pub fn the_fix(&self) -> Option<&fix::Fix> {
        self.fix.as_ref().and_then(Option::as_ref)
    }

    /// An error that points into a file's lines (a failed config with the
    /// place that failed it): text output shows it with its source excerpt.
    pub fn is_located_error(&self) -> bool {
        self.severity == Severity::Error && self.location.as_ref().is_some_and(|l| l.line > 0)
    }

    pub fn path(&self) -> Option<&Path> {
        self.location.as_ref().map(|l| l.path.as_path())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn line_column_counts_characters() {
        let s = "ab\nçd\r\nef";
        assert_eq!(line_column(s, 0), (1, 1));
        assert_eq!(line_column(s, 3), (2, 1));
        // 'ç' is two bytes; 'd' is the second character of line 2.
        assert_eq!(line_column(s, 5), (2, 2));
        assert_eq!(line_column(s, s.len()), (3, 3));
        // Inside a multi-byte character: rounds down to its start.
        assert_eq!(line_column(s, 4), (2, 1));
    }

    #[test]
    fn location_display() {
        assert_eq!(Location::file("a.py").to_string(), "a.py");
        assert_eq!(Location::line("a.py", 3).to_string(), "a.py:3");
        assert_eq!(Location::point("a.py", 3, 7).to_string(), "a.py:3:7");
    }
}
