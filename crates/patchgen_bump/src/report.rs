//! What a bump did, per config and per target, and its renderings: text
//! for the terminal, the shared JSON document (`docs/bump.md` gives the
//! fields) and markdown for the pull request and the upgrade notes.

use std::fmt::Write as _;
use std::path::PathBuf;

use serde_json::{Value, json};

use patchgen_config::plan::PatchType;
use patchgen_core::survey::modules::Version;
use patchgen_diagnostics::{Diagnostic, codes};

use crate::fixes::Fix;
use crate::select::{Registration, Role, SelectedConfig};
use crate::splice::{Outcome, Spliced};

/// What became of one target.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Status {
    /// The target's text is the same in both versions.
    Unchanged,
    /// Every upstream change was carried (or was already in the patch).
    Carried,
    /// Some upstream change meets an edit of the patch.
    Conflict,
    /// The target reappeared under another name and the patch follows it (`lint --fix`).
    Retargeted,
    /// Gone from the new upstream.
    Removed,
    /// In neither version: the config adds it.
    AddedByConfig,
    /// Not in the old version, in the new one: the config now replaces upstream code.
    NewUpstream,
    /// The patch function is ported through another config's registration.
    Shared(String),
    /// Not ported: why.
    Skipped(String),
}

impl Status {
    pub fn as_str(&self) -> &'static str {
        match self {
            Status::Unchanged => "unchanged",
            Status::Carried => "carried",
            Status::Conflict => "conflict",
            Status::Retargeted => "retargeted",
            Status::Removed => "removed",
            Status::AddedByConfig => "added_by_config",
            Status::NewUpstream => "new_upstream",
            Status::Shared(_) => "shared",
            Status::Skipped(_) => "skipped",
        }
    }
}

#[derive(Clone, Debug)]
pub struct TargetBump {
    pub target: String,
    pub patch_type: PatchType,
    pub status: Status,
    /// The config line that registers it.
    pub line: usize,
    pub outcome: Outcome,
}

/// Whether a config regenerated against the new upstream.
#[derive(Clone, Debug)]
pub enum Generation {
    Ok,
    Failed(Box<Diagnostic>),
    /// Not tried: why (unresolved conflicts, `--diff`).
    Skipped(String),
}

impl Generation {
    pub fn as_str(&self) -> &'static str {
        match self {
            Generation::Ok => "ok",
            Generation::Failed(_) => "failed",
            Generation::Skipped(_) => "skipped",
        }
    }
}

#[derive(Clone, Debug)]
pub struct ConfigBump {
    pub module: String,
    pub path: PathBuf,
    pub targets: Vec<TargetBump>,
    pub fixes: Vec<Fix>,
    pub generation: Generation,
    /// Lint findings at the new pin.
    pub lint: Vec<Diagnostic>,
    /// Why the config could not be read.
    pub error: Option<Diagnostic>,
}

#[derive(Clone, Debug)]
pub struct BumpReport {
    /// The distribution bumped (`transformers`).
    pub package: String,
    pub from: String,
    pub to: String,
    pub from_location: String,
    pub to_location: String,
    pub configs: Vec<ConfigBump>,
    /// Config files written (or, with `--diff`, that would be).
    pub files: Vec<PathBuf>,
    /// `--diff`: the unified diff of the configs.
    pub diff: Option<String>,
    /// Generated files written by the regeneration.
    pub generated_written: usize,
    /// Reading, merging and writing the configs.
    pub port_seconds: f64,
    pub regenerate_seconds: Option<f64>,
    /// Fixes `lint --fix` made to files that are no config (modules the configs import).
    pub other_fixes: Vec<crate::fixes::Applied>,
}

fn patch_kind(t: PatchType) -> &'static str {
    t.dsl_method()
}

fn status_of(r: &Registration, outcome: &Outcome) -> Status {
    match (&r.old, &r.new) {
        (None, None) => return Status::AddedByConfig,
        (Some(_), None) => return Status::Removed,
        (None, Some(_)) => return Status::NewUpstream,
        _ if !r.changed() => return Status::Unchanged,
        _ => {}
    }
    match &r.role {
        Role::SharedWith(m) => Status::Shared(m.clone()),
        Role::Skipped(why) => Status::Skipped((*why).to_string()),
        Role::Nothing => Status::Unchanged,
        Role::Port => match &outcome.error {
            Some(e) => Status::Skipped(e.clone()),
            None if !outcome.conflicts.is_empty() => Status::Conflict,
            None => Status::Carried,
        },
    }
}

impl BumpReport {
    pub fn new(from: &Version, to: &Version, selection: &[SelectedConfig], spliced: &Spliced) -> BumpReport {
        let configs = selection
            .iter()
            .enumerate()
            .map(|(ci, c)| {
                let targets = c
                    .registrations
                    .iter()
                    .enumerate()
                    .map(|(ri, r)| {
                        let outcome = spliced.outcomes.get(&(ci, ri)).cloned().unwrap_or_default();
                        TargetBump {
                            target: r.target.clone(),
                            patch_type: r.patch_type,
                            status: status_of(r, &outcome),
                            line: r.line,
                            outcome,
                        }
                    })
                    .collect();
                ConfigBump {
                    module: c.module.clone(),
                    path: c.path.clone(),
                    targets,
                    fixes: Vec::new(),
                    generation: Generation::Skipped("not regenerated".into()),
                    lint: Vec::new(),
                    error: c.error.clone(),
                }
            })
            .collect();
        BumpReport {
            package: "transformers".into(),
            from: from.upstream.version.clone(),
            to: to.upstream.version.clone(),
            from_location: from.upstream.location.display().to_string(),
            to_location: to.upstream.location.display().to_string(),
            configs,
            files: spliced.files.iter().map(|f| f.path.clone()).collect(),
            diff: None,
            generated_written: 0,
            port_seconds: 0.0,
            regenerate_seconds: None,
            other_fixes: Vec::new(),
        }
    }

    /// Record the fixes `lint --fix` applied: each with the config whose
    /// file it edited; a PG101 fix retargets the removed target registered
    /// at or above its line. Fixes of files that are no config are kept in
    /// `other_fixes`.
    pub fn record_fixes(&mut self, applied: Vec<crate::fixes::Applied>) {
        for a in applied {
            let Some(c) = self.configs.iter_mut().find(|c| crate::fixes::same_file(&c.path, &a.path)) else {
                self.other_fixes.push(a);
                continue;
            };
            if a.fix.code == "PG101" {
                let target = c
                    .targets
                    .iter_mut()
                    .filter(|t| t.line <= a.fix.line && t.status == Status::Removed)
                    .max_by_key(|t| t.line);
                if let Some(t) = target {
                    t.status = Status::Retargeted;
                }
            }
            c.fixes.push(a.fix);
        }
    }

    pub fn targets(&self) -> impl Iterator<Item = &TargetBump> {
        self.configs.iter().flat_map(|c| &c.targets)
    }

    fn count(&self, status: &str) -> usize {
        self.targets().filter(|t| t.status.as_str() == status).count()
    }

    /// 0: everything carried and regenerated cleanly; 1: conflicts or failures remain.
    pub fn exit_code(&self) -> i32 {
        let failed = self.configs.iter().any(|c| {
            c.error.is_some()
                || matches!(c.generation, Generation::Failed(_))
                || c.targets.iter().any(|t| matches!(t.status, Status::Conflict | Status::Skipped(_)))
        });
        i32::from(failed)
    }

    /// `29 config(s), 343 target(s): 40 carried, 12 conflict, …; 120 hunk(s) carried, 15 in conflict; 27 regenerated, 2 failed`.
    pub fn summary(&self) -> String {
        let statuses = [
            "carried",
            "conflict",
            "retargeted",
            "removed",
            "new_upstream",
            "shared",
            "skipped",
            "unchanged",
            "added_by_config",
        ];
        let counts: Vec<String> = statuses
            .iter()
            .filter_map(|s| {
                let n = self.count(s);
                (n > 0).then(|| format!("{n} {s}"))
            })
            .collect();
        let mut s = format!("{} config(s), {} target(s)", self.configs.len(), self.targets().count());
        if !counts.is_empty() {
            let _ = write!(s, ": {}", counts.join(", "));
        }
        let hunks: usize = self.targets().map(|t| t.outcome.upstream_hunks).sum();
        let carried: usize = self.targets().map(|t| t.outcome.carried).sum();
        let already: usize = self.targets().map(|t| t.outcome.already_in_patch).sum();
        let conflicts: usize = self.targets().map(|t| t.outcome.conflicts.len()).sum();
        let _ = write!(
            s,
            "; {hunks} upstream hunk(s): {carried} carried, {already} already in the patch, {conflicts} in conflict"
        );
        let fixes = self.configs.iter().map(|c| c.fixes.len()).sum::<usize>() + self.other_fixes.len();
        if fixes > 0 {
            let _ = write!(s, "; {fixes} fix(es) applied");
        }
        let gen_of = |k: &str| self.configs.iter().filter(|c| c.generation.as_str() == k).count();
        let _ =
            write!(s, "; generation: {} ok, {} failed, {} skipped", gen_of("ok"), gen_of("failed"), gen_of("skipped"));
        s
    }
}

/// Every diagnostic of a bump: per config its failure, its conflicts (as
/// `PGE011` at their marker), its generation failure, its lint findings.
pub fn diagnostics(report: &BumpReport) -> Vec<Diagnostic> {
    let mut out = Vec::new();
    for c in &report.configs {
        out.extend(c.error.clone());
        for t in &c.targets {
            for &line in &t.outcome.conflicts {
                out.push(
                    codes::UNRESOLVED_BUMP_CONFLICT
                        .diagnostic(format!(
                            "{} `{}`: upstream changed lines the patch rewrote ({} {} → {})",
                            patch_kind(t.patch_type),
                            t.target,
                            report.package,
                            report.from,
                            report.to
                        ))
                        .at(patchgen_diagnostics::Location::line(c.path.clone(), line))
                        .config(c.module.clone())
                        .help("keep what the patch needs from both sides between `<<<<<<<` and `>>>>>>>`, delete the markers, then run `patchgen --check --fix`"),
                );
            }
            if let Status::Skipped(why) = &t.status {
                out.push(
                    codes::COMMAND_FAILED
                        .diagnostic(format!("{} `{}` was not ported: {why}", patch_kind(t.patch_type), t.target))
                        .at(patchgen_diagnostics::Location::line(c.path.clone(), t.line))
                        .config(c.module.clone()),
                );
            }
        }
        if let Generation::Failed(d) = &c.generation {
            out.push((**d).clone());
        }
        out.extend(c.lint.iter().cloned());
    }
    out
}

fn target_json(t: &TargetBump) -> Value {
    let mut o = json!({
        "target": t.target,
        "kind": patch_kind(t.patch_type),
        "status": t.status.as_str(),
        "line": t.line,
        "upstream_hunks": t.outcome.upstream_hunks,
        "carried": t.outcome.carried,
        "already_in_patch": t.outcome.already_in_patch,
        "conflicts": t.outcome.conflicts.iter().map(|l| json!({"line": l})).collect::<Vec<_>>(),
    });
    match &t.status {
        Status::Shared(m) => o["merged_in"] = json!(m),
        Status::Skipped(why) => o["reason"] = json!(why),
        _ => {}
    }
    o
}

/// The bump's own fields of the JSON document.
pub fn json_fields(report: &BumpReport) -> serde_json::Map<String, Value> {
    let configs: Vec<Value> = report
        .configs
        .iter()
        .map(|c| {
            json!({
                "config": c.module,
                "path": c.path.display().to_string(),
                "targets": c.targets.iter().map(target_json).collect::<Vec<_>>(),
                "fixes": c.fixes.iter().map(|f| json!({"code": f.code, "line": f.line})).collect::<Vec<_>>(),
                "generation": c.generation.as_str(),
                "lint": c.lint.len(),
            })
        })
        .collect();
    let doc = json!({
        "package": report.package,
        "from": report.from,
        "to": report.to,
        "from_location": report.from_location,
        "to_location": report.to_location,
        "configs": configs,
        "files": report.files.iter().map(|p| p.display().to_string()).collect::<Vec<_>>(),
        "diff": report.diff,
    });
    match doc {
        Value::Object(m) => m,
        _ => unreachable!("a JSON object"),
    }
}

/// `PG303 line 40, PG107 line 12`.
fn fixes_list(fixes: &[Fix]) -> String {
    fixes.iter().map(|f| format!("{} line {}", f.code, f.line)).collect::<Vec<_>>().join(", ")
}

fn worth_showing(t: &TargetBump) -> bool {
    !matches!(t.status, Status::Unchanged | Status::AddedByConfig)
}

fn target_line(t: &TargetBump) -> String {
    let o = &t.outcome;
    let mut s = format!("  {:<15} {:<17} {} (line {})", t.status.as_str(), patch_kind(t.patch_type), t.target, t.line);
    if o.upstream_hunks > 0 {
        let _ = write!(s, ": {} upstream hunk(s), {} carried", o.upstream_hunks, o.carried);
        if o.already_in_patch > 0 {
            let _ = write!(s, ", {} already in the patch", o.already_in_patch);
        }
        if !o.conflicts.is_empty() {
            let lines: Vec<String> = o.conflicts.iter().map(|l| l.to_string()).collect();
            let _ = write!(s, ", {} conflict(s) at line {}", o.conflicts.len(), lines.join(", "));
        }
    }
    match &t.status {
        Status::Shared(m) => {
            let _ = write!(s, " (ported in {m})");
        }
        Status::Skipped(why) => {
            let _ = write!(s, " (not ported: {why})");
        }
        _ => {}
    }
    s
}

/// Text: per config, the targets that changed, generation and lint; then the summary.
pub fn text(report: &BumpReport) -> String {
    let mut out = format!("patchgen bump: {} {} → {}\n", report.package, report.from, report.to);
    for c in &report.configs {
        let shown: Vec<&TargetBump> = c.targets.iter().filter(|t| worth_showing(t)).collect();
        let generation_note = !matches!(c.generation, Generation::Ok | Generation::Skipped(_));
        if shown.is_empty() && c.error.is_none() && !generation_note && c.lint.is_empty() && c.fixes.is_empty() {
            continue;
        }
        let _ = writeln!(out, "\n{} ({})", c.module, c.path.display());
        if let Some(e) = &c.error {
            let _ = writeln!(out, "  error: {} {}", e.code, e.message.lines().next().unwrap_or(""));
        }
        for t in shown {
            let _ = writeln!(out, "{}", target_line(t));
        }
        if !c.fixes.is_empty() {
            let _ = writeln!(out, "  fixed: {}", fixes_list(&c.fixes));
        }
        match &c.generation {
            Generation::Ok => {}
            Generation::Failed(d) => {
                let at = d.location.as_ref().map(|l| format!("{}:{}: ", l.path.display(), l.line)).unwrap_or_default();
                let _ = writeln!(out, "  generation failed: {at}{}", d.message.lines().next().unwrap_or(""));
            }
            Generation::Skipped(why) => {
                let _ = writeln!(out, "  generation skipped: {why}");
            }
        }
        if !c.lint.is_empty() {
            let _ = writeln!(out, "  lint at {}: {} finding(s)", report.to, c.lint.len());
            for d in c.lint.iter().take(5) {
                let _ = writeln!(out, "    {} {}", d.code, d.message.lines().next().unwrap_or(""));
            }
        }
    }
    if let Some(diff) = &report.diff {
        out.push('\n');
        out.push_str(diff);
    }
    let _ = writeln!(out, "\n{}", report.summary());
    let _ = write!(out, "configs read and ported in {:.2} s", report.port_seconds);
    if let Some(s) = report.regenerate_seconds {
        let _ = write!(
            out,
            "; regenerated and linted in {s:.2} s ({} generated file(s) written)",
            report.generated_written
        );
    }
    out.push('\n');
    out
}

/// Markdown for the pull request and the upgrade notes: per config, per
/// target, what upstream changed, what was carried and what is left.
pub fn markdown(report: &BumpReport) -> String {
    let mut out =
        format!("## {} {} → {} (`patchgen bump`)\n\n{}\n", report.package, report.from, report.to, report.summary());
    for c in &report.configs {
        let shown: Vec<&TargetBump> = c.targets.iter().filter(|t| worth_showing(t)).collect();
        if shown.is_empty()
            && c.error.is_none()
            && matches!(c.generation, Generation::Ok)
            && c.lint.is_empty()
            && c.fixes.is_empty()
        {
            continue;
        }
        let _ = writeln!(out, "\n### `{}`\n\nGeneration: {}.", c.module, c.generation.as_str());
        if let Some(e) = &c.error {
            let _ = writeln!(out, "\nCould not be read: {}", e.message.lines().next().unwrap_or(""));
        }
        if !shown.is_empty() {
            out.push_str("\n| Target | Patch | Status | Upstream hunks | Carried | Left (config lines) |\n|---|---|---|---:|---:|---|\n");
            for t in shown {
                let left: Vec<String> = t.outcome.conflicts.iter().map(|l| l.to_string()).collect();
                let left = match &t.status {
                    Status::Shared(m) => format!("ported in `{m}`"),
                    Status::Skipped(why) => format!("not ported: {why}"),
                    Status::Removed => "retarget or drop the patch".to_string(),
                    _ if left.is_empty() => "nothing".to_string(),
                    _ => format!("conflicts at {}", left.join(", ")),
                };
                let _ = writeln!(
                    out,
                    "| `{}` | {} | {} | {} | {} | {} |",
                    t.target,
                    patch_kind(t.patch_type),
                    t.status.as_str(),
                    t.outcome.upstream_hunks,
                    t.outcome.carried,
                    left
                );
            }
        }
        if !c.fixes.is_empty() {
            let _ = writeln!(out, "\nFixed by `lint --fix`: {}.", fixes_list(&c.fixes));
        }
        if !c.lint.is_empty() {
            let _ = writeln!(out, "\nLint at {}:\n", report.to);
            for d in &c.lint {
                let line = d.location.as_ref().map(|l| l.line).unwrap_or(0);
                let _ = writeln!(out, "- `{}` line {line}: {}", d.code, d.message.lines().next().unwrap_or(""));
            }
        }
    }
    out
}
