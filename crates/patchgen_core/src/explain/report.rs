//! What `patchgen explain` reports, and its text: typed and serialisable,
//! printed by the command line's printer.

use std::path::Path;

use rayon::prelude::*;
use serde::Serialize;

use super::lines::LineAnswer;
use super::{ExplainedFile, Hunk, Mapped};
use crate::pipeline::{Context, Failure};
use crate::provenance::map::{Kind, Origin};
use patchgen_diagnostics::{Diagnostic, Location, Severity};

/// One line's origin as the JSON document shows it: `rule` only for `ruff-fix`.
#[derive(Clone, Debug, Serialize)]
pub struct LineOrigin {
    pub kind: Kind,
    pub path: Option<std::path::PathBuf>,
    pub line: Option<usize>,
    pub target: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub rule: Option<String>,
    #[serde(rename = "type")]
    pub patch_type: Option<String>,
}

impl From<Origin> for LineOrigin {
    fn from(o: Origin) -> LineOrigin {
        LineOrigin {
            kind: o.kind,
            path: o.path,
            line: o.line,
            target: o.target,
            rule: if o.kind == Kind::RuffFix { Some(o.rule.unwrap_or_default()) } else { None },
            patch_type: o.patch_type,
        }
    }
}

/// `explain FILE:LINE`: one of `origin` (a generated line), `hand_edit`
/// (a line of the checked-in file that the config does not generate) or
/// `hunk` (a line of a `.diff`).
#[derive(Clone, Debug, Serialize)]
pub struct LineReport {
    #[serde(skip_serializing_if = "Option::is_none")]
    pub origin: Option<LineOrigin>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub hand_edit: Option<HandEdit>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub hunk: Option<HunkReport>,
    #[serde(skip)]
    pub text: String,
}

/// A line of a checked-in generated file that its config does not generate.
#[derive(Clone, Debug, Serialize)]
pub struct HandEdit {
    pub line: usize,
    /// The region of the file the edit covers (1-based, inclusive).
    pub start: usize,
    pub end: usize,
    /// 1-based line of what the config generates instead, and those lines.
    pub generated_line: usize,
    pub expected: Vec<String>,
    /// The origin of the generated lines the edit replaces.
    pub responsible: Option<LineOrigin>,
}

/// A hunk of a `.diff`, as `explain FILE.diff:LINE` shows it.
#[derive(Clone, Debug, Serialize)]
pub struct HunkReport {
    pub header: String,
    pub causes: Vec<LineOrigin>,
}

impl LineReport {
    pub fn new(origin: Origin, base: &Path) -> LineReport {
        let text = format!("{}\n", describe(&origin, base));
        LineReport { origin: Some(origin.into()), hand_edit: None, hunk: None, text }
    }

    /// What [`crate::explain::lines::explain_at`] found, as a report.
    pub fn of(answer: LineAnswer, base: &Path) -> LineReport {
        match answer {
            LineAnswer::Origin(o) => LineReport::new(o, base),
            LineAnswer::HandEdit { line, region } => {
                let mut text = format!("hand edit: line {line} is not what the config generates");
                match region.expected.first() {
                    Some(first) => text.push_str(&format!(
                        "; the config generates (line {}): {}{}",
                        region.generated_start,
                        first.trim(),
                        if region.expected.len() > 1 {
                            format!(" (+{} more lines)", region.expected.len() - 1)
                        } else {
                            String::new()
                        }
                    )),
                    None => text.push_str("; the config generates nothing there"),
                }
                if let Some(o) = &region.responsible {
                    text.push_str(&format!("\n  from: {}", describe(o, base)));
                }
                text.push_str("\n  help: edit the config, then run `patchgen check --fix`\n");
                LineReport {
                    origin: None,
                    hand_edit: Some(HandEdit {
                        line,
                        start: region.start,
                        end: region.end(),
                        generated_line: region.generated_start,
                        expected: region.expected,
                        responsible: region.responsible.map(LineOrigin::from),
                    }),
                    hunk: None,
                    text,
                }
            }
            LineAnswer::Hunk(h) => {
                let mut text = format!("{}\n", h.header());
                for c in &h.causes {
                    text.push_str(&format!("    {}\n", cause(c, base)));
                }
                let hunk =
                    HunkReport { header: h.header(), causes: h.causes.into_iter().map(LineOrigin::from).collect() };
                LineReport { origin: None, hand_edit: None, hunk: Some(hunk), text }
            }
        }
    }
}

/// `explain [MODULE...]`.
#[derive(Clone, Debug, Serialize)]
pub struct FilesReport {
    pub files: Vec<ExplainedFile>,
    #[serde(skip)]
    pub diagnostics: Vec<Diagnostic>,
}

/// Explain every config of `modules` (in parallel), failures as diagnostics.
pub fn explain_modules(ctx: &Context, modules: &[String], config_name: &str) -> FilesReport {
    let results: Vec<Result<ExplainedFile, Box<(String, Failure)>>> = modules
        .par_iter()
        .map(|m| {
            Mapped::generate(ctx, m, config_name).map(|mapped| mapped.explain()).map_err(|f| Box::new((m.clone(), f)))
        })
        .collect();
    let mut files = Vec::new();
    let mut diagnostics = Vec::new();
    for r in results {
        match r {
            Ok(f) => files.push(f),
            Err(e) => match *e {
                (_, Failure::NotAConfig { .. } | Failure::OptionalSkipped { .. }) => {}
                (m, f) => diagnostics.push(f.diagnostic(&m)),
            },
        }
    }
    FilesReport { files, diagnostics }
}

fn shown(path: &Path, base: &Path) -> String {
    path.strip_prefix(base).unwrap_or(path).display().to_string()
}

/// `path:line`, relative to `base` when under it.
fn place(o: &Origin, base: &Path) -> String {
    match (&o.path, o.line) {
        (Some(p), Some(l)) => format!("{}:{l}", shown(p, base)),
        (Some(p), None) => shown(p, base),
        _ => String::new(),
    }
}

/// One origin as a line of text (`config.py:181 (override_method C.forward)`).
pub fn describe(o: &Origin, base: &Path) -> String {
    let what = match (&o.patch_type, &o.target) {
        (Some(t), Some(target)) => format!(" ({t} {target})"),
        (Some(t), None) => format!(" ({t})"),
        (None, Some(target)) => format!(" ({target})"),
        _ => String::new(),
    };
    let from = if o.path.is_some() { format!(" (from {}{what})", place(o, base)) } else { String::new() };
    match o.kind {
        Kind::Upstream | Kind::Patch | Kind::Import => format!("{}{what}", place(o, base)),
        Kind::Header => format!("header{what} at {}", place(o, base)),
        Kind::RuffFix => format!("ruff {}{from}", o.rule.as_deref().unwrap_or("check --fix")),
        Kind::RuffFormat => format!("ruff-format{from}"),
        Kind::Unexplained => format!("unexplained at {}", place(o, base)),
    }
}

/// One hunk cause as a line of text: `patch Qwen3MLP.forward at config.py:88`, `ruff F401`, ….
pub fn cause(o: &Origin, base: &Path) -> String {
    let at = place(o, base);
    match o.kind {
        Kind::Patch => format!(
            "patch {} at {at}{}",
            o.target.as_deref().unwrap_or(""),
            o.patch_type.as_deref().map(|t| format!(" ({t})")).unwrap_or_default()
        ),
        Kind::Import => match (&o.patch_type, &o.target) {
            (Some(t), Some(target)) => format!("import {target} at {at} ({t})"),
            (Some(t), None) => format!("import at {at} ({t})"),
            _ => format!("import at {at}"),
        },
        Kind::Header => match &o.target {
            Some(t) => format!("header ({t})"),
            None => "header".to_string(),
        },
        Kind::RuffFix => format!("ruff {}", o.rule.as_deref().unwrap_or("check --fix")),
        Kind::RuffFormat => "ruff-format".to_string(),
        Kind::Upstream => format!("upstream {at}"),
        Kind::Unexplained => "unexplained".to_string(),
    }
}

impl FilesReport {
    /// The text form: per file, each hunk header and its causes.
    pub fn text(&self, base: &Path) -> String {
        let mut s = String::new();
        for f in &self.files {
            s.push_str(&format!("{} [{}]\n", shown(&f.path, base), f.config));
            for h in &f.hunks {
                s.push_str(&format!("{}\n", h.header()));
                for c in &h.causes {
                    s.push_str(&format!("    {}\n", cause(c, base)));
                }
            }
        }
        s
    }

    /// One `notice` per hunk, at the generated file's first changed line.
    pub fn notices(&self, base: &Path) -> Vec<Diagnostic> {
        let mut out = Vec::new();
        for f in &self.files {
            for h in &f.hunks {
                out.push(notice(f, h, base));
            }
        }
        out
    }

    /// Hunks per cause kind (a hunk counts once per kind it has).
    pub fn counts(&self) -> std::collections::BTreeMap<&'static str, usize> {
        let mut out = std::collections::BTreeMap::new();
        for h in self.files.iter().flat_map(|f| &f.hunks) {
            let mut kinds: Vec<Kind> = h.causes.iter().map(|c| c.kind).collect();
            kinds.sort();
            kinds.dedup();
            for k in kinds {
                *out.entry(k.as_str()).or_default() += 1;
            }
        }
        out
    }
}

fn notice(f: &ExplainedFile, h: &Hunk, base: &Path) -> Diagnostic {
    let causes: Vec<String> = h.causes.iter().map(|c| cause(c, base)).collect();
    Diagnostic::new("explain", "hunk", Severity::Info, format!("{}: {}", h.header(), causes.join("; ")))
        .at(Location::line(f.path.clone(), h.first_changed))
        .config(f.config.clone())
}
