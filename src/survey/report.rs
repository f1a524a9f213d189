//! The survey's findings and their three renderings: text grouped by
//! config, a markdown table for a pull-request description, and JSON
//! (schema in `docs/survey.md`).

use std::fmt::Write as _;

use super::compare::{BasesDiff, DecoratorDiff, SignatureDiff};
use crate::config::plan::Loc;

/// What happened to a target between the two versions.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Kind {
    Unchanged,
    SignatureChanged,
    DecoratorsChanged,
    Removed,
    NewUpstream,
    AddedByConfig,
}

impl Kind {
    pub const ALL: [Kind; 6] = [
        Kind::SignatureChanged,
        Kind::DecoratorsChanged,
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
            Kind::Removed => "removed",
            Kind::NewUpstream => "new_upstream",
            Kind::AddedByConfig => "added_by_config",
        }
    }

    /// A change of the target itself (names and attributes aside).
    pub fn is_drift(self) -> bool {
        !matches!(self, Kind::Unchanged | Kind::AddedByConfig)
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
    match (f.kind, &d.from, &d.to) {
        (Kind::Removed, Some(a), None) => out.push(format!("was {} in {from}; not in {to}", a.short())),
        (Kind::NewUpstream, None, Some(b)) => out.push(format!("now defined upstream: {} in {to}", b.short())),
        (_, Some(a), Some(b)) if a.owner != b.owner => out.push(format!("{from}: {}; {to}: {}", a.short(), b.short())),
        _ => {}
    }
    out
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
        }
        let quiet = c.findings.len() - shown.len();
        if quiet > 0 {
            let unchanged = c.findings.iter().filter(|f| !f.drifted() && f.kind == Kind::Unchanged).count();
            let _ = writeln!(out, "  ({unchanged} unchanged, {} added by config)", quiet - unchanged);
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
        out.push_str("| Config | Target | Patch | Kind | Details |\n|---|---|---|---|---|\n");
        for f in drifted {
            let details: Vec<String> = detail_lines(f, from, to, true).iter().map(|l| md_cell(l)).collect();
            let _ = writeln!(
                out,
                "| {} | {} | {} | {} | {} |",
                md_cell(&md_code(f.config.strip_prefix(&prefix).unwrap_or(&f.config))),
                md_cell(&md_code(&f.target)),
                f.patch.as_str(),
                f.kind.as_str(),
                details.join("<br>")
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

/// A JSON value, rendered with stable key order.
enum Json {
    Null,
    Bool(bool),
    Num(usize),
    Str(String),
    Arr(Vec<Json>),
    Obj(Vec<(&'static str, Json)>),
}

impl Json {
    fn str(s: &str) -> Json {
        Json::Str(s.to_string())
    }

    fn strs(v: &[String]) -> Json {
        Json::Arr(v.iter().map(|s| Json::str(s)).collect())
    }

    fn opt(s: Option<&str>) -> Json {
        s.map(Json::str).unwrap_or(Json::Null)
    }

    fn render(&self, indent: usize, out: &mut String) {
        let pad = |n: usize| "  ".repeat(n);
        match self {
            Json::Null => out.push_str("null"),
            Json::Bool(b) => out.push_str(if *b { "true" } else { "false" }),
            Json::Num(n) => {
                let _ = write!(out, "{n}");
            }
            Json::Str(s) => out.push_str(&crate::json::string(s)),
            Json::Arr(items) if items.is_empty() => out.push_str("[]"),
            Json::Obj(items) if items.is_empty() => out.push_str("{}"),
            Json::Arr(items) => {
                out.push_str("[\n");
                for (i, item) in items.iter().enumerate() {
                    out.push_str(&pad(indent + 1));
                    item.render(indent + 1, out);
                    out.push_str(if i + 1 < items.len() { ",\n" } else { "\n" });
                }
                let _ = write!(out, "{}]", pad(indent));
            }
            Json::Obj(items) => {
                out.push_str("{\n");
                for (i, (k, v)) in items.iter().enumerate() {
                    let _ = write!(out, "{}\"{k}\": ", pad(indent + 1));
                    v.render(indent + 1, out);
                    out.push_str(if i + 1 < items.len() { ",\n" } else { "\n" });
                }
                let _ = write!(out, "{}}}", pad(indent));
            }
        }
    }
}

fn site_json(site: &Option<Site>) -> Json {
    match site {
        None => Json::Null,
        Some(s) => {
            let mut o = vec![("file", Json::str(&s.origin)), ("line", Json::Num(s.line))];
            if let Some(owner) = &s.owner {
                o.push(("defined_in", Json::str(owner)));
            }
            Json::Obj(o)
        }
    }
}

fn pairs(v: &[(String, String)]) -> Json {
    Json::Arr(v.iter().map(|(a, b)| Json::Obj(vec![("from", Json::str(a)), ("to", Json::str(b))])).collect())
}

/// `{"name": …, "from": …, "to": …}`.
fn from_to(name: &str, from: Json, to: Json) -> Json {
    Json::Obj(vec![("name", Json::str(name)), ("from", from), ("to", to)])
}

fn signature_json(s: &SignatureDiff) -> Json {
    Json::Obj(vec![
        ("from", Json::Str(s.from.to_string())),
        ("to", Json::Str(s.to.to_string())),
        ("removed", Json::strs(&s.removed)),
        ("added", Json::strs(&s.added)),
        ("renamed", pairs(&s.renamed)),
        (
            "reordered",
            match &s.reordered {
                Some((a, b)) => Json::Obj(vec![("from", Json::strs(a)), ("to", Json::strs(b))]),
                None => Json::Null,
            },
        ),
        (
            "kind_changed",
            Json::Arr(
                s.kind_changed
                    .iter()
                    .map(|(n, a, b)| from_to(n, Json::str(a.as_str()), Json::str(b.as_str())))
                    .collect(),
            ),
        ),
        (
            "default_changed",
            Json::Arr(
                s.default_changed
                    .iter()
                    .map(|(n, a, b)| from_to(n, Json::opt(a.as_deref()), Json::opt(b.as_deref())))
                    .collect(),
            ),
        ),
        ("replacement_stale", Json::strs(&s.replacement_stale)),
    ])
}

fn details_json(d: &Details) -> Json {
    let mut o = vec![("from", site_json(&d.from)), ("to", site_json(&d.to))];
    if let Some(s) = &d.signature {
        o.push(("signature", signature_json(s)));
    }
    if let Some(dec) = &d.decorators {
        o.push((
            "decorators",
            Json::Obj(vec![
                ("removed", Json::strs(&dec.removed)),
                ("added", Json::strs(&dec.added)),
                ("changed", pairs(&dec.changed)),
            ]),
        ));
    }
    if let Some(b) = &d.bases {
        o.push(("bases", Json::Obj(vec![("from", Json::strs(&b.from)), ("to", Json::strs(&b.to))])));
    }
    if !d.missing_names.is_empty() {
        let items = d
            .missing_names
            .iter()
            .map(|n| Json::Obj(vec![("name", Json::str(&n.name)), ("from", site_json(&n.from))]))
            .collect();
        o.push(("missing_names", Json::Arr(items)));
    }
    if !d.missing_attributes.is_empty() {
        let items = d
            .missing_attributes
            .iter()
            .map(|a| {
                Json::Obj(vec![
                    ("name", Json::str(&a.name)),
                    ("defined_in", Json::str(&a.owner)),
                    ("line", Json::Num(a.line)),
                ])
            })
            .collect();
        o.push(("missing_attributes", Json::Arr(items)));
    }
    Json::Obj(o)
}

pub fn json(report: &Report) -> String {
    let label = |v: &VersionLabel| Json::str(&v.version);
    let findings = report
        .findings()
        .map(|f| {
            Json::Obj(vec![
                ("config", Json::str(&f.config)),
                ("target", Json::str(&f.target)),
                ("patch", Json::str(f.patch.as_str())),
                ("kind", Json::str(f.kind.as_str())),
                ("drifted", Json::Bool(f.drifted())),
                (
                    "registered_at",
                    Json::Obj(vec![
                        ("file", Json::Str(f.registered_at.path.to_string_lossy().into_owned())),
                        ("line", Json::Num(f.registered_at.line)),
                    ]),
                ),
                ("details", details_json(&f.details)),
            ])
        })
        .collect();
    let errors =
        report.errors().map(|(m, e)| Json::Obj(vec![("config", Json::str(m)), ("message", Json::str(e))])).collect();
    let doc = Json::Obj(vec![
        ("package", Json::str(&report.package)),
        ("from", label(&report.from)),
        ("to", label(&report.to)),
        ("from_location", Json::str(&report.from.location)),
        ("to_location", Json::str(&report.to.location)),
        ("configs", Json::Arr(report.configs.iter().map(|c| Json::str(&c.module)).collect())),
        ("findings", Json::Arr(findings)),
        ("errors", Json::Arr(errors)),
    ]);
    let mut out = String::new();
    doc.render(0, &mut out);
    out.push('\n');
    out
}
