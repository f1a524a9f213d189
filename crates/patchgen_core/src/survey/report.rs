//! The survey's findings and their renderings: text grouped by config, a
//! markdown table for a pull-request description, and the shared JSON
//! document and GitHub annotations (`docs/json.md`; the survey's fields in
//! `docs/survey.md`), where each drifted finding is a `PGS…` diagnostic.

use std::fmt::Write as _;

use serde_json::{Value, json};

use super::body::{BodyChange, BodyDiff};
use super::compare::{BasesDiff, DecoratorDiff, SignatureDiff};
use crate::port::HunkStatus;
use patchgen_config::plan::Loc;
use patchgen_diagnostics::{Diagnostic, Location, codes};

/// What happened to a target between the two versions.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Kind {
    Unchanged,
    SignatureChanged,
    DecoratorsChanged,
    /// The code changed, the contract (parameters, decorators, bases) did not.
    BodyChanged,
    /// Only docstrings or comments changed.
    DocstringChanged,
    Removed,
    NewUpstream,
    AddedByConfig,
}

impl Kind {
    pub const ALL: [Kind; 8] = [
        Kind::SignatureChanged,
        Kind::DecoratorsChanged,
        Kind::BodyChanged,
        Kind::DocstringChanged,
        Kind::Removed,
        Kind::NewUpstream,
        Kind::Unchanged,
        Kind::AddedByConfig,
    ];

    pub fn as_str(self) -> &'static str {
        match self {
            Kind::Unchanged => "unchanged",
            Kind::SignatureChanged => "signature_changed",
            Kind::DecoratorsChanged => "decorators_changed",
            Kind::BodyChanged => "body_changed",
            Kind::DocstringChanged => "docstring_changed",
            Kind::Removed => "removed",
            Kind::NewUpstream => "new_upstream",
            Kind::AddedByConfig => "added_by_config",
        }
    }

    /// A change of the target itself (names and attributes aside).
    pub fn is_drift(self) -> bool {
        !matches!(self, Kind::Unchanged | Kind::AddedByConfig | Kind::DocstringChanged)
    }
}

/// Which part of the config a finding is about.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum PatchKind {
    OverrideMethod,
    ReplaceClass,
    ReplaceFunction,
    /// Config code that is no target (names checks only).
    AddHelper,
    AddHelperAfter,
    AddPostImportBlock,
}

impl PatchKind {
    pub fn as_str(self) -> &'static str {
        match self {
            PatchKind::OverrideMethod => "override_method",
            PatchKind::ReplaceClass => "replace_class",
            PatchKind::ReplaceFunction => "replace_function",
            PatchKind::AddHelper => "add_helper",
            PatchKind::AddHelperAfter => "add_helper_after",
            PatchKind::AddPostImportBlock => "add_post_import_block",
        }
    }
}

/// Where a target (or a name) is in one upstream version.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Site {
    /// The file (`wheel!member` inside a wheel).
    pub origin: String,
    pub line: usize,
    /// For a method the class inherits: the class that defines it.
    pub owner: Option<String>,
}

impl Site {
    /// `modeling_x.py:12` (`in Base`).
    fn short(&self) -> String {
        let file = self.origin.rsplit(['/', '!']).next().unwrap_or(&self.origin);
        match &self.owner {
            Some(o) => format!("{file}:{} (in {o})", self.line),
            None => format!("{file}:{}", self.line),
        }
    }
}

/// A name the config's code uses that the new module no longer binds.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct MissingName {
    pub name: String,
    /// Where the old module bound it (`None`: through the config itself).
    pub from: Option<Site>,
}

/// A `self.<attr>` an override reads that the new class no longer provides.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct MissingAttr {
    pub name: String,
    /// The class of the old version that provided it, and the line.
    pub owner: String,
    pub line: usize,
}

#[derive(Clone, Debug, Default)]
pub struct Details {
    pub from: Option<Site>,
    pub to: Option<Site>,
    /// For `replace_class`: the `__init__`'s.
    pub signature: Option<SignatureDiff>,
    pub decorators: Option<DecoratorDiff>,
    pub bases: Option<BasesDiff>,
    pub missing_names: Vec<MissingName>,
    pub missing_attributes: Vec<MissingAttr>,
    /// The source changed (under any kind: a changed signature changes the code too).
    pub body: Option<BodyDiff>,
}

#[derive(Clone, Debug)]
pub struct Finding {
    /// Dotted module of the config.
    pub config: String,
    /// `Class.method`, `Class`, `function`, a helper's name, or `post-import block N`.
    pub target: String,
    pub patch: PatchKind,
    pub kind: Kind,
    /// Where the config registers the patch (or defines the helper).
    pub registered_at: Loc,
    pub details: Details,
}

impl Finding {
    /// Something a pin bump must look at.
    pub fn drifted(&self) -> bool {
        self.kind.is_drift() || !self.details.missing_names.is_empty() || !self.details.missing_attributes.is_empty()
    }
}

/// One config's outcome.
#[derive(Clone, Debug)]
pub struct ConfigReport {
    pub module: String,
    /// Empty when the config failed to evaluate.
    pub source_module: String,
    pub findings: Vec<Finding>,
    pub error: Option<String>,
    /// The failure as a diagnostic, when the config could not be evaluated.
    pub failure: Option<Diagnostic>,
}

/// One upstream version, for headers.
#[derive(Clone, Debug)]
pub struct VersionLabel {
    pub version: String,
    pub location: String,
}

#[derive(Clone, Debug)]
pub struct Report {
    pub package: String,
    pub from: VersionLabel,
    pub to: VersionLabel,
    pub configs: Vec<ConfigReport>,
}

impl Report {
    pub fn findings(&self) -> impl Iterator<Item = &Finding> {
        self.configs.iter().flat_map(|c| &c.findings)
    }

    pub fn errors(&self) -> impl Iterator<Item = (&str, &str)> {
        self.configs.iter().filter_map(|c| c.error.as_deref().map(|e| (c.module.as_str(), e)))
    }

    /// 0: nothing drifted; 1: something drifted or a config failed.
    pub fn exit_code(&self) -> i32 {
        if self.findings().any(Finding::drifted) || self.errors().next().is_some() { 1 } else { 0 }
    }

    fn count(&self, kind: Kind) -> usize {
        self.findings().filter(|f| f.kind == kind && is_target(f)).count()
    }

    /// `12 signature_changed, 3 removed, …` over targets, non-zero kinds only.
    fn kind_counts(&self) -> String {
        Kind::ALL
            .iter()
            .filter_map(|&k| {
                let n = self.count(k);
                (n > 0).then(|| format!("{n} {}", k.as_str()))
            })
            .collect::<Vec<_>>()
            .join(", ")
    }

    /// `29 config(s), 343 target(s): 25 signature_changed, …; 33 missing
    /// name(s); …; 76 finding(s) drifted`.
    fn summary(&self) -> String {
        let targets = self.findings().filter(|f| is_target(f)).count();
        let mut s = format!("{} config(s), {targets} target(s)", self.configs.len());
        if targets > 0 {
            let _ = write!(s, ": {}", self.kind_counts());
        }
        let names: usize = self.findings().map(|f| f.details.missing_names.len()).sum();
        let attrs: usize = self.findings().map(|f| f.details.missing_attributes.len()).sum();
        if names > 0 {
            let _ = write!(s, "; {names} missing name(s)");
        }
        if attrs > 0 {
            let _ = write!(s, "; {attrs} missing attribute(s)");
        }
        let errors = self.errors().count();
        if errors > 0 {
            let _ = write!(s, "; {errors} config(s) failed");
        }
        let drifted = self.findings().filter(|f| f.drifted()).count();
        let _ = write!(s, "; {drifted} finding(s) drifted");
        s
    }

    fn title(&self) -> String {
        format!("{} {} → {}", self.package, self.from.version, self.to.version)
    }
}

fn is_target(f: &Finding) -> bool {
    matches!(f.patch, PatchKind::OverrideMethod | PatchKind::ReplaceClass | PatchKind::ReplaceFunction)
}

/// The detail lines of a finding, in the order a reader needs them. For
/// markdown, code is marked up and the full signatures are left out (the
/// itemised changes say it in a table cell).
fn detail_lines(f: &Finding, from: &str, to: &str, markdown: bool) -> Vec<String> {
    let code = |s: &str| if markdown { md_code(s) } else { s.to_string() };
    let list = |v: &[String]| v.iter().map(|s| code(s)).collect::<Vec<_>>().join(", ");
    let d = &f.details;
    let mut out = Vec::new();
    if let Some(s) = &d.signature {
        let what = if f.patch == PatchKind::ReplaceClass { format!("{} ", code("__init__")) } else { String::new() };
        if !markdown {
            out.push(format!("{what}{from}: {}", s.from));
            out.push(format!("{what}{to}: {}", s.to));
        }
        if !s.removed.is_empty() {
            out.push(format!("{what}removed: {}", list(&s.removed)));
        }
        if !s.added.is_empty() {
            out.push(format!("{what}added: {}", list(&s.added)));
        }
        for (a, b) in &s.renamed {
            out.push(format!("{what}renamed: {} → {}", code(a), code(b)));
        }
        if let Some((a, b)) = &s.reordered {
            out.push(format!(
                "{what}reordered: {} → {}",
                code(&format!("({})", a.join(", "))),
                code(&format!("({})", b.join(", ")))
            ));
        }
        for (n, a, b) in &s.kind_changed {
            out.push(format!("{what}kind of {}: {} → {}", code(n), a.as_str(), b.as_str()));
        }
        for (n, a, b) in &s.default_changed {
            let default = |v: &Option<String>| v.as_deref().map(&code).unwrap_or_else(|| "(none)".into());
            out.push(format!("{what}default of {}: {} → {}", code(n), default(a), default(b)));
        }
        if !s.replacement_stale.is_empty() {
            out.push(format!("the replacement still declares: {}", list(&s.replacement_stale)));
        }
    }
    if let Some(b) = &d.bases {
        out.push(format!(
            "bases: {} → {}",
            code(&format!("({})", b.from.join(", "))),
            code(&format!("({})", b.to.join(", ")))
        ));
    }
    if let Some(dec) = &d.decorators {
        for r in &dec.removed {
            out.push(format!("decorator removed: {}", code(&abbreviate(r))));
        }
        for a in &dec.added {
            out.push(format!("decorator added: {}", code(&abbreviate(a))));
        }
        for (a, b) in &dec.changed {
            out.push(format!("decorator changed: {} → {}", code(&abbreviate(a)), code(&abbreviate(b))));
        }
    }
    for n in &d.missing_names {
        match &n.from {
            Some(site) => {
                out.push(format!("name `{}` no longer defined or imported (was {} in {from})", n.name, site.short()))
            }
            None => out.push(format!("name `{}` no longer defined or imported", n.name)),
        }
    }
    for a in &d.missing_attributes {
        out.push(format!(
            "`self.{}` no longer set or defined by the class (was {}, line {} in {from})",
            a.name, a.owner, a.line
        ));
    }
    if let Some(b) = &d.body {
        out.push(body_line(b));
        for h in &b.hunks {
            let place = match &h.config_lines {
                Some(r) if r.is_empty() => format!(", config line {} (insert)", r.start),
                Some(r) if r.len() == 1 => format!(", config line {}", r.start),
                Some(r) => format!(", config lines {}-{}", r.start, r.end - 1),
                None => String::new(),
            };
            out.push(format!(
                "  {from} lines {} → {to} lines {}: {}{place}",
                span(&h.from),
                span(&h.to),
                hunk_status(h.status)
            ));
            if !markdown {
                for l in h.old_lines.iter().take(HUNK_PREVIEW) {
                    out.push(format!("    - {l}"));
                }
                for l in h.new_lines.iter().take(HUNK_PREVIEW) {
                    out.push(format!("    + {l}"));
                }
                if h.old_lines.len().max(h.new_lines.len()) > HUNK_PREVIEW {
                    out.push("    …".to_string());
                }
            }
        }
    }
    match (f.kind, &d.from, &d.to) {
        (Kind::Removed, Some(a), None) => out.push(format!("was {} in {from}; not in {to}", a.short())),
        (Kind::NewUpstream, None, Some(b)) => out.push(format!("now defined upstream: {} in {to}", b.short())),
        (_, Some(a), Some(b)) if a.owner != b.owner => out.push(format!("{from}: {}; {to}: {}", a.short(), b.short())),
        _ => {}
    }
    out
}

/// Lines of each side of a hunk shown in text.
const HUNK_PREVIEW: usize = 6;

fn span(r: &std::ops::Range<usize>) -> String {
    match r.len() {
        0 => format!("{} (none)", r.start),
        1 => r.start.to_string(),
        _ => format!("{}-{}", r.start, r.end - 1),
    }
}

pub fn hunk_status(s: HunkStatus) -> &'static str {
    match s {
        HunkStatus::Carried => "carryable",
        HunkStatus::AlreadyInPatch => "already in the patch",
        HunkStatus::Conflict => "conflict",
    }
}

/// `body changed: 3 upstream hunk(s), 2 carryable, 1 conflict`.
fn body_line(b: &BodyDiff) -> String {
    let what = match b.change {
        BodyChange::Code => "code changed",
        BodyChange::Docstring => "only docstrings or comments changed",
    };
    format!(
        "{what}: {} upstream hunk(s), {} carryable, {} conflict(s), {} already in the patch",
        b.hunks.len(),
        b.count(HunkStatus::Carried),
        b.count(HunkStatus::Conflict),
        b.count(HunkStatus::AlreadyInPatch)
    )
}

/// What to do about a finding, in one sentence a newcomer can act on.
pub fn next_step(f: &Finding, to: &str) -> String {
    let d = &f.details;
    let body = d.body.as_ref().filter(|b| b.change == BodyChange::Code);
    let bump = match body {
        Some(b) if b.count(HunkStatus::Conflict) > 0 => format!(
            " `patchgen bump --to {to}` carries the {} carryable hunk(s) and writes the {} conflict(s) into the config with markers to resolve by hand.",
            b.count(HunkStatus::Carried),
            b.count(HunkStatus::Conflict)
        ),
        Some(b) if b.count(HunkStatus::Carried) > 0 => {
            format!(" `patchgen bump --to {to}` carries its {} hunk(s) into the patch.", b.count(HunkStatus::Carried))
        }
        _ => String::new(),
    };
    let mut s = match f.kind {
        Kind::SignatureChanged => format!(
            "Give the replacement the new parameter list (or keep the old one on purpose and say why in its description); callers in {to} pass the new one.{bump}"
        ),
        Kind::DecoratorsChanged => {
            let added = d.decorators.as_ref().map(|x| x.added.len() + x.changed.len()).unwrap_or(0);
            let lost = if added > 0 {
                "A replacement replaces the decorators too: copy the new decorator onto the patch if its behaviour (kernels, output capture, docstring checks) should apply, or leave it out deliberately and say so in the description."
            } else {
                "A removed decorator no longer wraps upstream's version: drop it from the patch too unless the patch needs it."
            };
            format!("{lost}{bump}")
        }
        Kind::BodyChanged => format!("Upstream changed this code under the patch.{bump}"),
        Kind::DocstringChanged => format!(
            "Nothing to do for behaviour: only docstrings or comments changed (`patchgen bump --to {to}` carries them where the patch kept the old text)."
        ),
        Kind::Removed => "Retarget the patch to the definition that replaced it (see the new module), or drop it: it would patch nothing.".to_string(),
        Kind::NewUpstream => "The config now replaces upstream code instead of adding a method: compare the two and keep what upstream's version does.".to_string(),
        Kind::Unchanged | Kind::AddedByConfig => String::new(),
    };
    if !d.missing_names.is_empty() {
        let names: Vec<String> = d.missing_names.iter().map(|n| format!("`{}`", n.name)).collect();
        s.push_str(&format!(
            " Import {} in the config (`config.add_import(...)`) or write the code without {}; `Optional[X]` becomes `X | None`.",
            names.join(", "),
            if names.len() == 1 { "it" } else { "them" }
        ));
    }
    if !d.missing_attributes.is_empty() {
        let attrs: Vec<String> = d.missing_attributes.iter().map(|a| format!("`self.{}`", a.name)).collect();
        s.push_str(&format!(
            " Read the new class: {} moved or was renamed (a submodule's attribute, another name); rewrite the override to use what the class provides in {to}.",
            attrs.join(", ")
        ));
    }
    if s.is_empty() {
        s.push_str("Nothing to do.");
    }
    s.trim_start().to_string()
}

/// Long decorator texts (docstring arguments) cut to their head.
fn abbreviate(text: &str) -> String {
    const MAX: usize = 100;
    if text.chars().count() <= MAX {
        return text.to_string();
    }
    let head: String = text.chars().take(MAX - 1).collect();
    format!("{head}…")
}

pub fn text(report: &Report, verbose: bool) -> String {
    let (from, to) = (&report.from.version, &report.to.version);
    let mut out = String::new();
    let _ = writeln!(out, "patchgen survey: {}", report.title());
    let _ = writeln!(out, "  from: {}", report.from.location);
    let _ = writeln!(out, "  to:   {}", report.to.location);
    for c in &report.configs {
        let shown: Vec<&Finding> = c.findings.iter().filter(|f| verbose || f.drifted()).collect();
        if shown.is_empty() && c.error.is_none() && !verbose {
            continue;
        }
        let _ = write!(out, "\n{}", c.module);
        if !c.source_module.is_empty() {
            let _ = write!(out, " ({})", c.source_module);
        }
        out.push('\n');
        if let Some(e) = &c.error {
            for (i, line) in e.lines().enumerate() {
                let _ = writeln!(out, "  {}{line}", if i == 0 { "error: " } else { "" });
            }
        }
        for f in &shown {
            let _ = writeln!(out, "  {:<19} {:<17} {}", f.kind.as_str(), f.patch.as_str(), f.target);
            for line in detail_lines(f, from, to, false) {
                let _ = writeln!(out, "      {line}");
            }
            let _ = writeln!(out, "      next: {}", next_step(f, to));
        }
        let quiet = c.findings.len() - shown.len();
        if quiet > 0 {
            let quiet_of = |k: Kind| c.findings.iter().filter(|f| !f.drifted() && f.kind == k).count();
            let (unchanged, docstring) = (quiet_of(Kind::Unchanged), quiet_of(Kind::DocstringChanged));
            let docstring = if docstring > 0 { format!("{docstring} docstring changed, ") } else { String::new() };
            let added = quiet_of(Kind::AddedByConfig);
            let _ = writeln!(out, "  ({unchanged} unchanged, {docstring}{added} added by config)");
        }
    }
    let _ = writeln!(out, "\n{}", report.summary());
    out
}

/// The dotted prefix every config shares (`veomni.models.transformers.`).
fn common_prefix(report: &Report) -> String {
    let mut modules = report.configs.iter().map(|c| c.module.as_str());
    let Some(first) = modules.next() else { return String::new() };
    let mut parts: Vec<&str> = first.split('.').collect();
    parts.pop();
    for m in modules {
        let other: Vec<&str> = m.split('.').collect();
        let n = parts.iter().zip(&other).take_while(|(a, b)| a == b).count().min(other.len().saturating_sub(1));
        parts.truncate(n);
    }
    if parts.is_empty() { String::new() } else { format!("{}.", parts.join(".")) }
}

fn md_cell(s: &str) -> String {
    s.replace('|', "\\|").replace('\n', " ")
}

/// A code span (table cells escape their pipes afterwards).
fn md_code(s: &str) -> String {
    if s.contains('`') { format!("`` {s} ``") } else { format!("`{s}`") }
}

pub fn markdown(report: &Report) -> String {
    let (from, to) = (&report.from.version, &report.to.version);
    let prefix = common_prefix(report);
    let mut out = String::new();
    let _ = writeln!(out, "### patchgen survey: {}\n", report.title());
    let _ = writeln!(out, "{}\n", report.summary());
    let drifted: Vec<&Finding> = report.findings().filter(|f| f.drifted()).collect();
    if drifted.is_empty() {
        out.push_str("No patch target drifted.\n");
    } else {
        if !prefix.is_empty() {
            let _ = writeln!(out, "Configs are under `{}`.\n", prefix.trim_end_matches('.'));
        }
        out.push_str("| Config | Target | Patch | Kind | Details | Next |\n|---|---|---|---|---|---|\n");
        for f in drifted {
            let details: Vec<String> = detail_lines(f, from, to, true).iter().map(|l| md_cell(l)).collect();
            let _ = writeln!(
                out,
                "| {} | {} | {} | {} | {} | {} |",
                md_cell(&md_code(f.config.strip_prefix(&prefix).unwrap_or(&f.config))),
                md_cell(&md_code(&f.target)),
                f.patch.as_str(),
                f.kind.as_str(),
                details.join("<br>"),
                md_cell(&next_step(f, to))
            );
        }
    }
    let errors: Vec<(&str, &str)> = report.errors().collect();
    if !errors.is_empty() {
        out.push_str("\n**Configs that could not be surveyed**\n\n");
        for (m, e) in errors {
            let _ = writeln!(out, "- {}: {}", md_code(m), e.lines().next().unwrap_or(e));
        }
    }
    out
}

fn site_json(site: &Option<Site>) -> Value {
    match site {
        None => Value::Null,
        Some(s) => {
            let mut o = json!({"file": s.origin, "line": s.line});
            if let Some(owner) = &s.owner {
                o["defined_in"] = json!(owner);
            }
            o
        }
    }
}

fn pairs(v: &[(String, String)]) -> Value {
    v.iter().map(|(a, b)| json!({"from": a, "to": b})).collect()
}

fn signature_json(s: &SignatureDiff) -> Value {
    json!({
        "from": s.from.to_string(),
        "to": s.to.to_string(),
        "removed": s.removed,
        "added": s.added,
        "renamed": pairs(&s.renamed),
        "reordered": s.reordered.as_ref().map(|(a, b)| json!({"from": a, "to": b})),
        "kind_changed": s.kind_changed.iter()
            .map(|(n, a, b)| json!({"name": n, "from": a.as_str(), "to": b.as_str()}))
            .collect::<Vec<_>>(),
        "default_changed": s.default_changed.iter()
            .map(|(n, a, b)| json!({"name": n, "from": a, "to": b}))
            .collect::<Vec<_>>(),
        "replacement_stale": s.replacement_stale,
    })
}

fn details_json(d: &Details) -> Value {
    let mut o = json!({"from": site_json(&d.from), "to": site_json(&d.to)});
    if let Some(s) = &d.signature {
        o["signature"] = signature_json(s);
    }
    if let Some(dec) = &d.decorators {
        o["decorators"] = json!({"removed": dec.removed, "added": dec.added, "changed": pairs(&dec.changed)});
    }
    if let Some(b) = &d.bases {
        o["bases"] = json!({"from": b.from, "to": b.to});
    }
    if !d.missing_names.is_empty() {
        o["missing_names"] =
            d.missing_names.iter().map(|n| json!({"name": n.name, "from": site_json(&n.from)})).collect();
    }
    if let Some(b) = &d.body {
        o["body"] = json!({
            "change": b.change.as_str(),
            "hunks": b.hunks.iter().map(|h| json!({
                "from": {"line": h.from.start, "end": h.from.end, "lines": h.old_lines},
                "to": {"line": h.to.start, "end": h.to.end, "lines": h.new_lines},
                "config_lines": h.config_lines.as_ref().map(|r| json!({"line": r.start, "end": r.end})),
                "status": match h.status {
                    HunkStatus::Carried => "carryable",
                    HunkStatus::AlreadyInPatch => "already_in_patch",
                    HunkStatus::Conflict => "conflict",
                },
            })).collect::<Vec<_>>(),
        });
    }
    if !d.missing_attributes.is_empty() {
        o["missing_attributes"] = d
            .missing_attributes
            .iter()
            .map(|a| json!({"name": a.name, "defined_in": a.owner, "line": a.line}))
            .collect();
    }
    o
}

/// The survey's own fields of the JSON document (`docs/survey.md`).
pub fn json_fields(report: &Report) -> serde_json::Map<String, Value> {
    let findings: Vec<Value> = report
        .configs
        .iter()
        .flat_map(|c| c.findings.iter().map(move |f| (c, f)))
        .map(|(c, f)| {
            json!({
                "config": f.config,
                "source_module": c.source_module,
                "target": f.target,
                "patch": f.patch.as_str(),
                "kind": f.kind.as_str(),
                "drifted": f.drifted(),
                "registered_at": {"file": f.registered_at.path.to_string_lossy(), "line": f.registered_at.line},
                "details": details_json(&f.details),
                "next": next_step(f, &report.to.version),
            })
        })
        .collect();
    let errors: Vec<Value> = report.errors().map(|(m, e)| json!({"config": m, "message": e})).collect();
    let doc = json!({
        "package": report.package,
        "from": report.from.version,
        "to": report.to.version,
        "from_location": report.from.location,
        "to_location": report.to.location,
        "configs": report.configs.iter().map(|c| c.module.as_str()).collect::<Vec<_>>(),
        "findings": findings,
        "errors": errors,
    });
    match doc {
        Value::Object(m) => m,
        _ => unreachable!("a JSON object"),
    }
}

/// A drifted finding as a diagnostic (`PGS…`), at the line that registers
/// the patch: the message names the target and what changed, then the
/// finding's detail lines (as text shows them).
fn finding_diagnostic(f: &Finding, from: &str, to: &str) -> Option<Diagnostic> {
    if !f.drifted() {
        return None;
    }
    let code = match f.kind {
        Kind::SignatureChanged => codes::SURVEY_SIGNATURE_CHANGED,
        Kind::DecoratorsChanged => codes::SURVEY_DECORATORS_CHANGED,
        Kind::Removed => codes::SURVEY_REMOVED,
        Kind::NewUpstream => codes::SURVEY_NEW_UPSTREAM,
        Kind::BodyChanged => codes::SURVEY_BODY_CHANGED,
        Kind::Unchanged | Kind::DocstringChanged | Kind::AddedByConfig if !f.details.missing_names.is_empty() => {
            codes::SURVEY_MISSING_NAME
        }
        Kind::Unchanged | Kind::AddedByConfig | Kind::DocstringChanged => codes::SURVEY_MISSING_ATTRIBUTE,
    };
    let mut message = format!("{} `{}`: {} ({from} → {to})", f.patch.as_str(), f.target, f.kind.as_str());
    for line in detail_lines(f, from, to, false) {
        message.push('\n');
        message.push_str(&line);
    }
    let d = code.diagnostic(message).config(f.config.clone()).help(next_step(f, to));
    Some(if f.registered_at.line > 0 {
        d.at(f.registered_at.location())
    } else {
        d.at(Location::file(&f.registered_at.path))
    })
}

/// Every diagnostic of a survey, in report order: per config its failure,
/// then its drifted findings.
pub fn diagnostics(report: &Report) -> Vec<Diagnostic> {
    let (from, to) = (&report.from.version, &report.to.version);
    let mut out = Vec::new();
    for c in &report.configs {
        if let Some(e) = &c.error {
            out.push(
                c.failure
                    .clone()
                    .unwrap_or_else(|| codes::SURVEY_FAILED.diagnostic(e.clone()).config(c.module.clone())),
            );
        }
        out.extend(c.findings.iter().filter_map(|f| finding_diagnostic(f, from, to)));
    }
    out
}

/// The JSON document of a survey (`docs/json.md`, fields in `docs/survey.md`),
/// as `--format json` prints it.
pub fn json(report: &Report) -> String {
    let diagnostics = diagnostics(report);
    let refs: Vec<&Diagnostic> = diagnostics.iter().collect();
    patchgen_diagnostics::render::json_document("survey", &refs, json_fields(report))
}
