//! The `sarif` report: SARIF 2.1.0 (OASIS), what GitHub code scanning
//! uploads (`github/codeql-action/upload-sarif`), built from the same
//! [`Diagnostic`]s as every other format, the way ruff's
//! `--output-format sarif` is.
//!
//! One run: `tool.driver` names patchgen and lists a `reportingDescriptor`
//! for each code that has a result (id, name, the code's one-line summary
//! as `shortDescription`, its documentation as `help`, `helpUri` when the
//! documentation's address is known, the default level); one `result` per
//! finding with its level (`error`, `warning`, `note`), message (with the
//! `help:` line), location (the file as a URI relative to `%SRCROOT%`, the
//! report's base, or an absolute `file://` URI outside it; the region's
//! line and, where known, columns — in UTF-16 code units, SARIF's default
//! `columnKind`, counted on the file's line), related locations, and
//! [`super::fingerprint`]'s fingerprint as a partial fingerprint. A
//! command that could not run reports an unsuccessful invocation with the
//! error as its notification, and no result.

use std::path::Path;

use serde_json::{Value, json};

use super::fingerprint::{fingerprints, relative};
use super::{Source, Sources};
use crate::{Diagnostic, Location, Severity};

/// What the report says about a code (a SARIF `reportingDescriptor`).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct RuleInfo {
    pub code: String,
    pub name: String,
    /// One line: the rule doc's first line (a core code's summary).
    pub summary: String,
    /// The whole documentation, Markdown, when the code has its own page.
    pub doc: Option<String>,
    /// Where the documentation is published, when that is known.
    pub help_uri: Option<String>,
    pub severity: Severity,
}

impl RuleInfo {
    /// What a diagnostic says about its own code, when nothing else is known.
    pub fn of(d: &Diagnostic) -> RuleInfo {
        RuleInfo {
            code: d.code.clone(),
            name: d.name.clone(),
            summary: d.name.replace('-', " "),
            doc: None,
            help_uri: None,
            severity: d.severity,
        }
    }
}

/// The tool that writes the report.
pub struct Tool<'a> {
    pub name: &'a str,
    pub version: &'a str,
}

/// The URI base every relative artifact location is resolved against.
pub const SRCROOT: &str = "%SRCROOT%";

/// The schema address SARIF files name (`$schema`).
pub const SCHEMA: &str = "https://json.schemastore.org/sarif-2.1.0.json";

fn level(s: Severity) -> &'static str {
    match s {
        Severity::Error => "error",
        Severity::Warning => "warning",
        Severity::Info => "note",
    }
}

/// Percent-encode a path for a URI: unreserved characters and `/` stay.
fn encode(path: &str) -> String {
    let mut out = String::with_capacity(path.len());
    for b in path.bytes() {
        if b.is_ascii_alphanumeric() || matches!(b, b'-' | b'.' | b'_' | b'~' | b'/') {
            out.push(b as char);
        } else {
            out.push_str(&format!("%{b:02X}"));
        }
    }
    out
}

/// `file:///…/` of an absolute directory.
fn dir_uri(dir: &Path) -> String {
    let mut s = encode(&dir.to_string_lossy().replace('\\', "/"));
    if !s.starts_with('/') {
        s.insert(0, '/');
    }
    if !s.ends_with('/') {
        s.push('/');
    }
    format!("file://{s}")
}

/// The `artifactLocation` of `path`.
fn artifact(path: &Path, base: &Path) -> Value {
    let rel = relative(path, base);
    if Path::new(&rel).is_absolute() {
        let uri = dir_uri(Path::new(&rel));
        json!({ "uri": uri.trim_end_matches('/') })
    } else {
        json!({ "uri": encode(&rel), "uriBaseId": SRCROOT })
    }
}

/// 1-based character column `column` of `line` in UTF-16 code units.
fn utf16_column(source: Option<&Source>, line: usize, column: usize) -> usize {
    match source.and_then(|s| s.line(line)) {
        Some(text) => text.chars().take(column - 1).map(char::len_utf16).sum::<usize>() + 1,
        None => column,
    }
}

/// The `physicalLocation` of `loc`.
fn physical(loc: &Location, base: &Path, sources: &mut Sources) -> Value {
    let mut p = json!({ "artifactLocation": artifact(&loc.path, base) });
    if loc.line > 0 {
        let source = sources.get(&loc.path);
        let mut region = json!({ "startLine": loc.line });
        if loc.column > 0 {
            region["startColumn"] = json!(utf16_column(source, loc.line, loc.column));
        }
        if let Some((l, c)) = loc.end
            && l >= loc.line
        {
            region["endLine"] = json!(l);
            if c > 0 {
                region["endColumn"] = json!(utf16_column(source, l, c));
            }
        }
        p["region"] = region;
    }
    p
}

fn message(d: &Diagnostic) -> String {
    let mut text = d.message.clone();
    if let Some(config) = d.config.as_ref().filter(|c| !d.message.contains(c.as_str())) {
        text.push_str(&format!(" [{config}]"));
    }
    if let Some(help) = &d.help {
        text.push_str("\nhelp: ");
        text.push_str(help);
    }
    text
}

fn descriptor(r: &RuleInfo) -> Value {
    let mut v = json!({
        "id": r.code,
        "name": r.name,
        "shortDescription": { "text": r.summary },
        "defaultConfiguration": { "level": level(r.severity) },
    });
    if let Some(doc) = &r.doc {
        v["fullDescription"] = json!({ "text": r.summary });
        v["help"] = json!({ "text": doc, "markdown": doc });
    }
    if let Some(uri) = &r.help_uri {
        v["helpUri"] = json!(uri);
    }
    v
}

/// The SARIF document of `findings` (pretty JSON ending in a newline).
/// `rule` describes a finding's code; `failure` is the error of a command
/// that could not run; paths are made relative to `base`.
pub fn sarif(
    findings: &[&Diagnostic],
    rule: &dyn Fn(&Diagnostic) -> RuleInfo,
    failure: Option<&str>,
    tool: &Tool,
    base: &Path,
    sources: &mut Sources,
) -> String {
    let mut rules: Vec<RuleInfo> = Vec::new();
    for d in findings {
        if !rules.iter().any(|r| r.code == d.code) {
            rules.push(rule(d));
        }
    }
    rules.sort_by(|a, b| a.code.cmp(&b.code));
    let prints = fingerprints(findings, sources, base);
    let results: Vec<Value> = findings
        .iter()
        .zip(prints)
        .map(|(d, print)| {
            let index = rules.iter().position(|r| r.code == d.code).unwrap_or_default();
            let mut r = json!({
                "ruleId": d.code,
                "ruleIndex": index,
                "level": level(d.severity),
                "message": { "text": message(d) },
                "partialFingerprints": { "patchgenFingerprint/v1": print },
            });
            if let Some(loc) = &d.location {
                r["locations"] = json!([{ "physicalLocation": physical(loc, base, sources) }]);
            }
            if !d.related.is_empty() {
                let related: Vec<Value> = d
                    .related
                    .iter()
                    .enumerate()
                    .map(|(i, rel)| {
                        json!({
                            "id": i + 1,
                            "physicalLocation": physical(&rel.location, base, sources),
                            "message": { "text": rel.message },
                        })
                    })
                    .collect();
                r["relatedLocations"] = json!(related);
            }
            r
        })
        .collect();
    let mut invocation = json!({ "executionSuccessful": failure.is_none() });
    if let Some(error) = failure {
        invocation["toolExecutionNotifications"] = json!([{ "level": "error", "message": { "text": error } }]);
    }
    let doc = json!({
        "$schema": SCHEMA,
        "version": "2.1.0",
        "runs": [{
            "tool": { "driver": {
                "name": tool.name,
                "version": tool.version,
                "rules": rules.iter().map(descriptor).collect::<Vec<Value>>(),
            } },
            "invocations": [invocation],
            "originalUriBaseIds": { SRCROOT: { "uri": dir_uri(base) } },
            "results": results,
        }],
    });
    let mut text = serde_json::to_string_pretty(&doc).unwrap_or_default();
    text.push('\n');
    text
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn encodes_paths_as_uris() {
        assert_eq!(encode("pkg/a b/ç.py"), "pkg/a%20b/%C3%A7.py");
        assert_eq!(dir_uri(Path::new("/w/x y")), "file:///w/x%20y/");
        assert_eq!(artifact(Path::new("/w/p/a.py"), Path::new("/w")), json!({"uri": "p/a.py", "uriBaseId": SRCROOT}));
        assert_eq!(artifact(Path::new("/elsewhere/a.py"), Path::new("/w")), json!({"uri": "file:///elsewhere/a.py"}));
    }

    #[test]
    fn columns_count_utf16_units() {
        let s = Source::new("a𝄞b = 1\n".into());
        // `b` is the third character, the fourth UTF-16 unit (𝄞 takes two).
        assert_eq!(utf16_column(Some(&s), 1, 3), 4);
        assert_eq!(utf16_column(None, 1, 3), 3);
    }
}
