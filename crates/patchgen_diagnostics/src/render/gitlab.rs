//! The `gitlab` report: GitLab Code Quality (a JSON array of Code Climate
//! issues, `artifacts:reports:codequality`), as ruff's
//! `--output-format gitlab` writes it: one entry per finding with its
//! `description` (`CODE message`), `check_name` (the code), `fingerprint`
//! ([`super::fingerprint`]: stable across edits elsewhere in the file),
//! `severity` (error → `major`, warning → `minor`, note → `info`) and
//! `location` (`path` relative to the report's base, `lines.begin`; `1` for
//! a whole-file finding, `.` as the path of a finding that has no file).

use std::path::Path;

use serde_json::{Value, json};

use super::Sources;
use super::fingerprint::{fingerprints, relative};
use crate::{Diagnostic, Severity};

fn severity(s: Severity) -> &'static str {
    match s {
        Severity::Error => "major",
        Severity::Warning => "minor",
        Severity::Info => "info",
    }
}

/// The Code Quality report of `findings` (pretty JSON ending in a newline).
pub fn gitlab(findings: &[&Diagnostic], base: &Path, sources: &mut Sources) -> String {
    let prints = fingerprints(findings, sources, base);
    let issues: Vec<Value> = findings
        .iter()
        .zip(prints)
        .map(|(d, fingerprint)| {
            let (path, begin, end) = match &d.location {
                Some(loc) => {
                    let begin = loc.line.max(1);
                    let end = loc.end.map_or(begin, |(l, _)| l.max(begin));
                    (relative(&loc.path, base), begin, end)
                }
                None => (".".to_string(), 1, 1),
            };
            let mut description = format!("{} {}", d.code, d.message);
            if let Some(config) = d.config.as_ref().filter(|c| !d.message.contains(c.as_str())) {
                description.push_str(&format!(" [{config}]"));
            }
            let mut lines = json!({ "begin": begin });
            if end > begin {
                lines["end"] = json!(end);
            }
            json!({
                "description": description,
                "check_name": d.code,
                "fingerprint": fingerprint,
                "severity": severity(d.severity),
                "location": { "path": path, "lines": lines },
            })
        })
        .collect();
    let mut text = serde_json::to_string_pretty(&issues).unwrap_or_default();
    text.push('\n');
    text
}
