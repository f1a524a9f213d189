//! The stable fingerprint of a finding, shared by the `gitlab` report
//! (its `fingerprint`) and `sarif` (`partialFingerprints`): what code
//! review tools use to tell "the same finding as last time" from a new one.
//!
//! Contract: the SHA-256 (first 32 hex digits) of
//! `v1 \0 code \0 path \0 message \0 line text`, where `path` is the
//! finding's file relative to the report's base with `/` separators,
//! `message` has every run of ASCII digits replaced by `#` (messages quote
//! line numbers and counts), and `line text` is the finding's line with
//! its indentation and trailing blanks removed (empty for a whole-file
//! finding or an unreadable file). The line *number* is not part of it, so
//! an edit above a finding keeps its fingerprint. Findings with the same
//! inputs are told apart by their order: the second and later ones add
//! `\0 k` (k = 1, 2, …), the first keeps the plain hash.

use std::collections::HashMap;
use std::path::Path;

use sha2::{Digest, Sha256};

use super::{Sources, shown};
use crate::Diagnostic;

/// `path` relative to `base` (when under it) with `/` separators.
pub(super) fn relative(path: &Path, base: &Path) -> String {
    shown(path, base).to_string_lossy().replace('\\', "/")
}

/// `message` with every run of ASCII digits replaced by `#`.
fn masked(message: &str) -> String {
    let mut out = String::with_capacity(message.len());
    let mut in_digits = false;
    for c in message.chars() {
        if c.is_ascii_digit() {
            if !in_digits {
                out.push('#');
            }
            in_digits = true;
        } else {
            out.push(c);
            in_digits = false;
        }
    }
    out
}

/// The fingerprint of each finding, in order (see the module contract).
pub fn fingerprints(findings: &[&Diagnostic], sources: &mut Sources, base: &Path) -> Vec<String> {
    let mut seen: HashMap<String, usize> = HashMap::new();
    findings
        .iter()
        .map(|d| {
            let (path, text) = match &d.location {
                Some(loc) => {
                    let text = if loc.line > 0 {
                        sources.get(&loc.path).and_then(|s| s.line(loc.line)).unwrap_or("").trim().to_string()
                    } else {
                        String::new()
                    };
                    (relative(&loc.path, base), text)
                }
                None => (String::new(), String::new()),
            };
            let key = format!("v1\0{}\0{path}\0{}\0{text}", d.code, masked(&d.message));
            let n = seen.entry(key.clone()).or_default();
            let input = if *n == 0 { key } else { format!("{key}\0{n}") };
            *n += 1;
            let digest = Sha256::digest(input.as_bytes());
            digest.iter().take(16).map(|b| format!("{b:02x}")).collect()
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{Location, Severity};

    #[test]
    fn masks_digit_runs() {
        assert_eq!(masked("line 120: 3 params"), "line #: # params");
        assert_eq!(masked("PG101"), "PG#");
    }

    #[test]
    fn survives_an_insertion_above_and_tells_twins_apart() {
        let dir = tempfile::tempdir().unwrap();
        let f = dir.path().join("a.py");
        std::fs::write(&f, "x = 1\nbad()\nbad()\n").unwrap();
        let d = |line| Diagnostic::new("PG1", "n", Severity::Error, "bad call").at(Location::line(f.clone(), line));
        let (a, b) = (d(2), d(3));
        let before = fingerprints(&[&a, &b], &mut Sources::default(), dir.path());
        assert_ne!(before[0], before[1]);
        std::fs::write(&f, "# new\nx = 1\nbad()\nbad()\n").unwrap();
        let (a, b) = (d(3), d(4));
        let after = fingerprints(&[&a, &b], &mut Sources::default(), dir.path());
        assert_eq!(before, after);
        assert_eq!(before[0].len(), 32);
    }
}
