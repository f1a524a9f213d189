//! The two words every command shares with its caller: the output
//! [`Format`] (`text`, `json`, `github`, and the CI reports `sarif` and
//! `gitlab`) and how the process ends
//! ([`ExitStatus`]). They live here, below every library, so that a
//! library can say which format a setting resolved to without knowing the
//! command line; with the `clap` feature `Format` is a `clap::ValueEnum`.

use std::str::FromStr;

use serde::Serialize;

/// Output format shared by every command: `text` for people (the
/// familiar lines; diagnostics with a source excerpt), `json` (one
/// document on stdout, `docs/json.md`), `github` (workflow commands:
/// annotations in pull requests), and the code-scanning reports of the
/// commands that report findings: `sarif` (SARIF 2.1.0, GitHub code
/// scanning) and `gitlab` (GitLab Code Quality), `docs/reports.md`.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize)]
#[cfg_attr(feature = "clap", derive(clap::ValueEnum))]
#[serde(rename_all = "lowercase")]
pub enum Format {
    #[default]
    Text,
    Json,
    Github,
    Sarif,
    Gitlab,
}

impl Format {
    /// Every format, in the order `--help` lists them.
    pub const ALL: [Format; 5] = [Format::Text, Format::Json, Format::Github, Format::Sarif, Format::Gitlab];

    pub fn as_str(self) -> &'static str {
        match self {
            Format::Text => "text",
            Format::Json => "json",
            Format::Github => "github",
            Format::Sarif => "sarif",
            Format::Gitlab => "gitlab",
        }
    }

    /// A code-scanning report (`sarif`, `gitlab`): only the commands that
    /// report findings write one.
    pub fn is_findings_report(self) -> bool {
        matches!(self, Format::Sarif | Format::Gitlab)
    }
}

/// `text`, `json`, `github`, `sarif` or `gitlab`, case-insensitively (as clap's `ValueEnum` parses them).
impl FromStr for Format {
    type Err = UnknownFormat;

    fn from_str(s: &str) -> Result<Format, UnknownFormat> {
        Format::ALL.into_iter().find(|f| f.as_str().eq_ignore_ascii_case(s)).ok_or_else(|| UnknownFormat(s.to_string()))
    }
}

/// A format name that is none of [`Format::ALL`].
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("unknown output format `{0}` (expected {EXPECTED})")]
pub struct UnknownFormat(pub String);

/// The format names, as messages list them.
pub const EXPECTED: &str = "text, json, github, sarif or gitlab";

/// How the process ends.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
pub enum ExitStatus {
    /// Everything is fine.
    Success,
    /// Drift, a failed config, or findings: the command did its job and says no.
    Failure,
    /// A usage or project-configuration error: the command could not run.
    Error,
}

impl ExitStatus {
    pub fn code(self) -> i32 {
        match self {
            ExitStatus::Success => 0,
            ExitStatus::Failure => 1,
            ExitStatus::Error => 2,
        }
    }

    /// `Failure` when `failed`, else `Success`.
    pub fn failure_if(failed: bool) -> ExitStatus {
        if failed { ExitStatus::Failure } else { ExitStatus::Success }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_case_insensitively() {
        assert_eq!("JSON".parse::<Format>(), Ok(Format::Json));
        assert_eq!("github".parse::<Format>(), Ok(Format::Github));
        assert_eq!("SARIF".parse::<Format>(), Ok(Format::Sarif));
        assert_eq!("gitlab".parse::<Format>(), Ok(Format::Gitlab));
        assert!("yaml".parse::<Format>().is_err());
    }
}
