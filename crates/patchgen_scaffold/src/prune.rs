//! Phase 6 of `new`: generate from the written configs and prune until
//! the result holds. When ruff rejects the generated file (`fix_rejection`:
//! undefined names imported or their users pruned, a finding in a reused
//! replacement drops the reuse, one in unpatched upstream code overrides it
//! verbatim with `# noqa`) or lint finds a reuse that breaks the upstream
//! contract (`lint_rejected`; `lint_fixes` for upstream code a rule names the
//! fix for), the plan changes, the config is rewritten and generated again,
//! at most `MAX_ROUNDS` times. Writes the configs and generated files it
//! settles on.

use std::path::Path;

use patchgen_config::PatchType;
use patchgen_core::pipeline::Context;
use patchgen_core::project::Project;
use patchgen_core::settings::Env;

use crate::facts::ModelFacts;
use crate::report::{BackendPlan, GenerationResult, Report};
use crate::{lint_fixes, pg301_copy, render, retarget, ruff_findings};

/// Generate every planned config of `report`, pruning each; the last
/// config's lint report (the lint of what was written, for one backend).
pub(crate) fn all(
    project: &Project,
    cwd: &Path,
    env: &Env,
    report: &mut Report,
    template: Option<&ModelFacts>,
    new: &ModelFacts,
    configuration: Option<&patchgen_python::pysource::ParsedFile>,
) -> Option<patchgen_lint::LintReport> {
    let mut last_lint = None;
    for i in 0..report.backends.len() {
        let (result, lint) = generate_pruning(project, cwd, env, &mut report.backends[i], template, new, configuration);
        report.backends[i].retargeted.settle_decisions(&new.prefix);
        report.generation.push(result);
        last_lint = lint;
        // What the pruning rounds said (helpers dropped, overrides written).
        for w in &report.backends[i].retargeted.warnings {
            if !report.warnings.contains(w) {
                report.warnings.push(w.clone());
            }
        }
    }
    last_lint
}

/// The lint report of `modules` with the project's default rules.
pub(crate) fn lint_modules(
    modules: Vec<String>,
    cwd: &Path,
    env: &Env,
) -> Result<patchgen_lint::LintReport, patchgen_core::error::RunError> {
    let opts = patchgen_lint::Options {
        modules,
        no_download: true,
        no_cache: true,
        env: env.clone(),
        ..patchgen_lint::Options::default()
    };
    patchgen_lint::lint(&opts, cwd)
}

/// Carried patches a lint error names (`\`<target>\`` or `\`<target>(`) or
/// points into: their reuse breaks the upstream contract, so they are
/// dropped, whatever the rule. Except an error the template's own config
/// has too (same rule, same place: the reused replacement's file and line):
/// inherited, the reuse stays (the project's pattern), the finding is
/// reported and marked with a `TODO(patchgen new): inherited …` at the reuse
/// — unless it is a PG301 the rule can fix: then the replacement is copied
/// into the config with the fix (`pg301_copy`; `models`: the template's and
/// the new HF model names).
fn lint_rejected(
    plan: &mut BackendPlan,
    report: &patchgen_lint::LintReport,
    template_report: Option<&patchgen_lint::LintReport>,
    root: &Path,
    models: (&str, &str),
    new: &ModelFacts,
) -> bool {
    use patchgen_diagnostics::Severity;
    let mut changed = false;
    let same_place = |a: &patchgen_diagnostics::Diagnostic, b: &patchgen_diagnostics::Diagnostic| {
        a.code == b.code
            && match (&a.location, &b.location) {
                (Some(x), Some(y)) => {
                    x.line == y.line
                        && patchgen_core::project::resolve(&x.path) == patchgen_core::project::resolve(&y.path)
                }
                _ => false,
            }
    };
    // An error is about a carried patch's target (lint's typed target), or
    // points into the reused replacement's definition.
    let hits = |d: &patchgen_diagnostics::Diagnostic, c: &retarget::Carried| {
        d.target.as_deref() == Some(c.target.as_str())
            || match (&c.defined_at, &d.location) {
                (Some((path, start, end)), Some(l)) => {
                    patchgen_core::project::resolve(path) == patchgen_core::project::resolve(&l.path)
                        && (*start..=*end).contains(&l.line)
                }
                _ => false,
            }
    };
    let errors: Vec<&patchgen_diagnostics::Diagnostic> =
        report.diagnostics.iter().filter(|d| d.severity == Severity::Error).collect();
    for &d in &errors {
        // The template's own finding: same rule, same place (a finding
        // located in the template's config, in the reused replacement). One
        // located in the written config (a PG102 at the new call) is ours.
        let theirs = template_report
            .and_then(|t| t.diagnostics.iter().find(|td| td.severity == Severity::Error && same_place(d, td)));
        if let Some(td) = theirs {
            let at = td
                .location
                .as_ref()
                .map(|l| format!("{}:{}", l.path.strip_prefix(root).unwrap_or(&l.path).display(), l.line))
                .unwrap_or_else(|| plan.template_config.clone().unwrap_or_default());
            if d.code == "PG301" {
                // Not when another error hits the same replacement: in a
                // copy it would be the scaffold's own, and drop it.
                let alone = |c: &retarget::Carried| !errors.iter().any(|o| o.code != "PG301" && hits(o, c));
                let mut copied = false;
                for c in plan.retargeted.carried.iter_mut().filter(|c| c.copy.is_none() && hits(d, c) && alone(c)) {
                    let from = match &c.defined_at {
                        Some((path, line, _)) => {
                            format!("{}:{line}", path.strip_prefix(root).unwrap_or(path).display())
                        }
                        None => at.clone(),
                    };
                    if let Some(mut copy) = pg301_copy::copy_fixed(c, &from, models) {
                        // PG303: the parameters the copy keeps beyond the upstream signature.
                        if let Some(params) = crate::port_copy::auto_docstring_params(&new.file, &c.target) {
                            let kept: Vec<String> = crate::port_copy::signature_params(&copy.source)
                                .into_iter()
                                .filter(|n| !params.contains(n))
                                .collect();
                            if let Some(documented) = crate::docstring_args::document_params(&copy.source, &kept) {
                                copy.source = documented.trim_end().to_string();
                            }
                        }
                        let (reused, renamed) =
                            (format!("the reused `{}`", c.import_name), format!("the copied `{}`", copy.name));
                        for t in &mut c.todos {
                            *t = t.replace(&reused, &renamed);
                        }
                        c.copy = Some(copy);
                        // The copy lives in the new config now.
                        c.defined_at = None;
                        copied = true;
                    }
                }
                if copied {
                    changed = true;
                    continue;
                }
            }
            let line = format!("inherited from {at}: {} {} (the template has it too; fix it there)", d.code, d.message);
            if !plan.inherited.contains(&line) {
                plan.inherited.push(line);
            }
            let todo =
                format!("TODO(patchgen new): inherited {} from {at} (the template has it too; fix it there)", d.code);
            for c in plan.retargeted.carried.iter_mut().filter(|c| hits(d, c)) {
                if !c.todos.contains(&todo) {
                    c.todos.push(todo.clone());
                    changed = true;
                }
            }
            continue;
        }
        let (hit, kept): (Vec<_>, Vec<_>) =
            std::mem::take(&mut plan.retargeted.carried).into_iter().partition(|c| hits(d, c));
        plan.retargeted.carried = kept;
        for c in hit {
            plan.retargeted.dropped.push(retarget::Dropped {
                template_target: c.template_target.clone(),
                target: c.target.clone(),
                reason: format!("lint {} on the reuse: {}", d.code, d.message),
                exception: false,
            });
            changed = true;
        }
    }
    changed
}

/// How many times a config is pruned and regenerated at most.
const MAX_ROUNDS: usize = 8;

/// Generate from the written config; when ruff rejects the generated file
/// or lint finds a reuse that breaks the upstream contract, change the
/// plan (import or prune for undefined names, override rejected upstream
/// code, drop the reuse), rewrite the config and try again. The generated
/// `.py` and `.diff` are written on success, with the last lint report.
fn generate_pruning(
    project: &Project,
    cwd: &Path,
    env: &Env,
    plan: &mut BackendPlan,
    template: Option<&ModelFacts>,
    new: &ModelFacts,
    configuration: Option<&patchgen_python::pysource::ParsedFile>,
) -> (GenerationResult, Option<patchgen_lint::LintReport>) {
    let fail =
        |module: &str, message: String| (GenerationResult { module: module.to_string(), ok: false, message }, None);
    // The template's own lint report, once, when the new config has errors.
    let mut template_lint: Option<Option<patchgen_lint::LintReport>> = None;
    for round in 0..MAX_ROUNDS {
        let ctx = Context::new(project.clone(), cwd, None, env);
        // Round 0: `run` wrote this very text, normalised, already.
        if round > 0 {
            plan.retargeted.fall_back();
            plan.retargeted.prune_helpers();
            let raw = render::config(&plan.head, &plan.retargeted);
            let text = ctx.ruff.normalize(&raw, &plan.path).unwrap_or(raw);
            if let Err(e) = patchgen_core::atomic::write(&plan.path, &text) {
                return fail(&plan.module, format!("{}: cannot write: {e}", plan.path.display()));
            }
        }
        let raw = match ctx.generate_raw(&plan.module, "config", None) {
            Ok(raw) => raw,
            Err(e) => return fail(&plan.module, e.to_string()),
        };
        match ctx.ruff.normalize(&raw.text, &raw.abs_target) {
            Ok(py) => {
                let g = raw.finish(py);
                let written = patchgen_core::atomic::write(&g.py_path, &g.py)
                    .and_then(|_| patchgen_core::atomic::write(&g.diff_path, &g.diff));
                if let Err(e) = written {
                    return fail(&plan.module, format!("{}: cannot write: {e}", g.py_path.display()));
                }
                let lint = lint_modules(vec![plan.module.clone()], cwd, env).ok();
                // Errors in upstream code a rule names the fix for: the
                // scaffold writes that fix (`lint_fixes`); the rest may drop
                // reuses.
                let fixes = lint
                    .as_ref()
                    .map(|r| lint_fixes::fixes(&r.diagnostics, configuration, new, &plan.retargeted))
                    .unwrap_or_default();
                let fixed = !fixes.overrides.is_empty();
                for o in fixes.overrides {
                    plan.retargeted.warnings.push(o.todo.clone());
                    plan.retargeted.upstream_overrides.push(o);
                }
                let rest = lint.as_ref().map(|r| patchgen_lint::LintReport {
                    upstream: r.upstream.clone(),
                    configs: r.configs,
                    rules: r.rules.clone(),
                    diagnostics: r
                        .diagnostics
                        .iter()
                        .enumerate()
                        .filter(|(i, _)| !fixes.handled.contains(i))
                        .map(|(_, d)| d.clone())
                        .collect(),
                    errors: r.errors.clone(),
                    suppressed: r.suppressed,
                    fixed: None,
                    cache_note: None,
                    unsafe_fixes: false,
                });
                let has_errors = rest
                    .as_ref()
                    .is_some_and(|r| r.diagnostics.iter().any(|d| d.severity == patchgen_diagnostics::Severity::Error));
                if has_errors && template_lint.is_none() {
                    template_lint =
                        Some(plan.template_config.clone().and_then(|t| lint_modules(vec![t], cwd, env).ok()));
                }
                let template_report = template_lint.as_ref().and_then(|t| t.as_ref());
                let rejected = template.is_some()
                    && rest.as_ref().is_some_and(|r| {
                        lint_rejected(
                            plan,
                            r,
                            template_report,
                            &project.root,
                            (template.map_or("", |t| t.hf_name.as_str()), new.hf_name.as_str()),
                            new,
                        )
                    });
                if fixed || rejected {
                    continue;
                }
                let message = format!("generated {}", g.py_path.display());
                return (GenerationResult { module: plan.module.clone(), ok: true, message }, lint);
            }
            Err(patchgen_core::normalize::RuffError::Rejected { step: "check", diagnostics, .. }) => {
                if !fix_rejection(&ctx, &raw, plan, template, new) {
                    return fail(
                        &plan.module,
                        format!("{}: ruff rejected the generated file:\n{diagnostics}", raw.job.py_path.display()),
                    );
                }
            }
            Err(error) => {
                return fail(
                    &plan.module,
                    patchgen_core::pipeline::Failure::Ruff { py_path: raw.job.py_path.clone(), error, at: None }
                        .to_string(),
                );
            }
        }
    }
    fail(&plan.module, format!("still failing after {MAX_ROUNDS} rounds of pruning"))
}

/// Change the plan for what ruff's fix left in the generated file: names
/// nothing defines (F821) are imported or their users pruned; a finding in
/// a reused replacement drops the reuse; one in unpatched upstream code
/// overrides the enclosing definition verbatim with `# noqa`
/// (`ruff_findings`). `false` when nothing could be changed.
fn fix_rejection(
    ctx: &Context,
    raw: &patchgen_core::pipeline::Raw,
    plan: &mut BackendPlan,
    template: Option<&ModelFacts>,
    new: &ModelFacts,
) -> bool {
    use ruff_findings::Site;
    let Ok((fixed, json)) = ctx.ruff.check_findings(&raw.text, &raw.abs_target) else {
        return false;
    };
    let findings = ruff_findings::parse(&json);
    let rt = &mut plan.retargeted;
    let mut changed = false;
    let names: Vec<String> = findings
        .iter()
        .filter(|f| f.code == "F821")
        .filter_map(|f| f.message.split('`').nth(1).map(str::to_string))
        .fold(Vec::new(), |mut v, n| {
            if !v.contains(&n) {
                v.push(n);
            }
            v
        });
    if let Some(t) = template
        && !names.is_empty()
    {
        changed |= rt.resolve_missing(&names, t, &new.module);
    }
    let Ok(parsed) = ruff_python_parser::parse_module(&fixed) else {
        return changed;
    };
    let body = &parsed.syntax().body;
    let mut sites: Vec<(Site, Vec<&ruff_findings::Finding>)> = Vec::new();
    for f in findings.iter().filter(|f| f.code != "F821") {
        let site = ruff_findings::site_of(&fixed, body, f.row);
        match sites.iter_mut().find(|(s, _)| *s == site) {
            Some((_, v)) => v.push(f),
            None => sites.push((site, vec![f])),
        }
    }
    for (site, found) in sites {
        let Some(target) = site.target() else { continue };
        let class = match &site {
            Site::Method { class, .. } => Some(class.as_str()),
            _ => None,
        };
        let what: Vec<String> = found.iter().map(|f| format!("{} {}", f.code, f.message)).collect();
        // In a reused replacement: the reuse goes.
        let (hit, kept): (Vec<_>, Vec<_>) = std::mem::take(&mut rt.carried).into_iter().partition(|c| {
            c.target == target || (c.patch_type == PatchType::ClassReplacement && Some(c.target.as_str()) == class)
        });
        rt.carried = kept;
        if !hit.is_empty() {
            for c in hit {
                rt.dropped.push(retarget::Dropped {
                    template_target: c.template_target.clone(),
                    target: c.target.clone(),
                    reason: format!("ruff rejects the reused replacement in the generated file: {}", what.join("; ")),
                    exception: false,
                });
            }
            changed = true;
            continue;
        }
        let upstream = match &site {
            Site::Method { class, method, .. } => new.defines_method(class, method),
            Site::Function { name, .. } => new.has_function(name),
            Site::Other => false,
        };
        if !upstream || rt.upstream_overrides.iter().any(|o| o.target == target) {
            continue;
        }
        if let Some(o) = ruff_findings::override_upstream(&fixed, &site, &found, new) {
            rt.warnings.push(o.todo.clone());
            rt.upstream_overrides.push(o);
            changed = true;
        }
    }
    changed
}
