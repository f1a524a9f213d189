//! Normalisation one step at a time, for provenance: the text after
//! `ruff check --fix` as well as after `ruff format`, and the fixes ruff
//! offers on the raw text (rule and rows), so a line ruff changed can be
//! put down to the rule that changed it. Same settings and arguments as
//! [`Ruff::normalize`], so `formatted` is exactly its result.

use std::io::Write;
use std::path::Path;
use std::process::Stdio;

use super::{Ruff, RuffError};

/// One fix ruff offers on the raw text: its rule and the raw rows
/// (1-based, inclusive) its edits touch.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct OfferedFix {
    pub rule: String,
    pub rows: std::ops::RangeInclusive<usize>,
}

/// The texts between ruff's steps.
#[derive(Clone, Debug)]
pub struct Steps {
    /// After `ruff check --fix`.
    pub fixed: String,
    /// After `ruff format`: what [`Ruff::normalize`] returns.
    pub formatted: String,
    /// The safe fixes `ruff check` offers on the raw text.
    pub fixes: Vec<OfferedFix>,
}

#[derive(serde::Deserialize)]
struct Row {
    row: usize,
    column: usize,
}

#[derive(serde::Deserialize)]
struct Edit {
    location: Row,
    end_location: Row,
}

#[derive(serde::Deserialize)]
struct Fix {
    applicability: String,
    edits: Vec<Edit>,
}

#[derive(serde::Deserialize)]
struct Finding {
    code: Option<String>,
    fix: Option<Fix>,
}

/// The safe fixes of ruff's JSON output (anything unreadable: none).
pub fn offered_fixes(json: &str) -> Vec<OfferedFix> {
    let findings: Vec<Finding> = serde_json::from_str(json).unwrap_or_default();
    let mut out = Vec::new();
    for f in findings {
        let (Some(rule), Some(fix)) = (f.code, f.fix) else { continue };
        if fix.applicability != "safe" {
            continue;
        }
        for e in fix.edits {
            // An edit ending at column 1 ends with the line break before it.
            let end = if e.end_location.column == 1 && e.end_location.row > e.location.row {
                e.end_location.row - 1
            } else {
                e.end_location.row
            };
            out.push(OfferedFix { rule: rule.clone(), rows: e.location.row..=end.max(e.location.row) });
        }
    }
    out
}

impl Ruff {
    /// [`Ruff::normalize`] of `raw` step by step, with the fixes offered.
    pub fn steps(&self, raw: &str, target: &Path) -> Result<Steps, RuffError> {
        let offered = std::thread::scope(|scope| {
            let json = scope.spawn(|| self.offered(raw, target));
            let fixed = self.run("check", raw, target, None);
            (json.join().unwrap_or_default(), fixed)
        });
        let (fixes, fixed) = offered;
        let fixed = fixed?;
        let formatted = self.run("format", &fixed, target, None)?;
        Ok(Steps { fixed, formatted, fixes })
    }

    /// `ruff check --no-fix --output-format json`: the fixes it would apply.
    fn offered(&self, raw: &str, target: &Path) -> Vec<OfferedFix> {
        let mut cmd = self.command("check", target, None);
        cmd.arg("--no-fix").arg("--output-format").arg("json");
        cmd.stdin(Stdio::piped()).stdout(Stdio::piped()).stderr(Stdio::piped());
        let Ok(mut child) = cmd.spawn() else { return Vec::new() };
        let Some(mut stdin) = child.stdin.take() else { return Vec::new() };
        let input = raw.to_string();
        let writer = std::thread::spawn(move || stdin.write_all(input.as_bytes()));
        let Ok(output) = child.wait_with_output() else { return Vec::new() };
        let _ = writer.join();
        offered_fixes(&String::from_utf8_lossy(&output.stdout))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rows_of_an_edit_ending_at_column_one_exclude_that_row() {
        let json = r#"[{"code":"F401","fix":{"applicability":"safe","edits":[{"content":"","location":{"row":1,"column":1},"end_location":{"row":2,"column":1}}]}},
            {"code":"X1","fix":{"applicability":"unsafe","edits":[{"content":"","location":{"row":3,"column":1},"end_location":{"row":3,"column":4}}]}},
            {"code":"E501","fix":null}]"#;
        assert_eq!(offered_fixes(json), vec![OfferedFix { rule: "F401".into(), rows: 1..=1 }]);
        assert!(offered_fixes("not json").is_empty());
    }
}
